//! Everything a reconcile needs, shared by all reconciles (`Arc<Context>`).

use crate::metrics::Metrics;
use crate::stores::{Stores, Triggers};
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::reflector::ObjectRef;
use lbc_aws::assume_role::ElbV2ByRole;
use lbc_aws::ec2::Ec2;
use lbc_aws::elbv2::{ElbV2, TargetGroupInfo};
use lbc_model::crd::TargetGroupBinding;
use lbc_model::net::VpcCidrs;
use lbc_model::target::{Target, TargetHealth};
use lbc_model::tenancy::Verdict;
use lbc_model::text::{EVENT_NOTE_MAX, truncate};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OnceCell, watch};
use tokio::time::Instant;

/// Tunables of the TargetGroupBinding reconciler (from flags).
#[derive(Clone, Debug)]
pub struct TgbConfig {
    /// `--cluster-name`: target groups tagged for another cluster are not written to.
    pub cluster_name: String,
    pub cluster_vpc_id: String,
    pub batch_size: usize,
    pub allow_outside_vpc: bool,
    /// Upper bound of the health-poll interval while gates are pending.
    pub health_poll_ceiling: Duration,
    pub health_poll_floor: Duration,
    /// How often a binding is verified against AWS even when nothing changed.
    pub sync_period: Duration,
    pub max_backoff: Duration,
    /// `--tenancy-mode` and the policy: which roles a namespace's bindings may assume.
    pub tenancy: Arc<lbc_model::tenancy::Tenancy>,
}

/// What this process knows about one binding between reconciles. Lost on restart on purpose:
/// the checkpoint annotation is what survives.
#[derive(Default)]
pub struct BindingState {
    /// The target group's registrations as last read or written by us; `None` = unknown.
    pub registered: Option<BTreeMap<Target, TargetHealth>>,
    /// When each target was registered by this process (latency metrics).
    pub registered_at: HashMap<Target, Instant>,
    /// When the next verification against AWS is due even if nothing changed.
    pub verify_due: Option<Instant>,
    pub last_health_poll: Option<Instant>,
    pub failures: u32,
    /// The checkpoint annotation as this process last wrote it (`Some(None)` = cleared); `None`
    /// = not written yet, trust the cached object. The cache can lag our own patches.
    pub checkpoint_written: Option<Option<String>>,
    /// Since when a counts-only status change has been left to follow-up syncs (see
    /// `lbc_model::checkpoint::write_back`); `None` = the status is current.
    pub status_deferred_since: Option<Instant>,
    /// Instance mode: the targets last found in (or written to) the target group, while they
    /// are what the nodes ask for no AWS call is made until `verify_due`.
    pub instance_targets: Option<std::collections::BTreeSet<lbc_model::nodes::InstanceTarget>>,
    /// Instance mode: the unresolved nodes last reported (a Warning only when this changes).
    pub unresolved_reported: Vec<String>,
    /// Instance mode: the nodes whose instance failed the cross-check, last reported (as
    /// `node/instance`; a Warning only when this changes).
    pub mismatch_reported: Vec<String>,
    /// When this binding last sent a target write (pacing, `lbc_model::pacing`).
    pub last_write: Option<Instant>,
    /// `status.ownedTargets` as this process last wrote it; `None` = trust the cached object
    /// (the cache can lag our own patches).
    pub owned_written: Option<Vec<String>>,
}

/// Shared reconcile context.
pub struct Context {
    pub client: Client,
    pub stores: Stores,
    pub triggers: Triggers,
    /// The controller's own identity; bindings read and write their target group through
    /// [`Context::elb_for`].
    pub elb: Arc<dyn ElbV2>,
    pub elb_roles: Arc<dyn ElbV2ByRole>,
    pub ec2: Arc<dyn Ec2>,
    pub recorder: Recorder,
    pub metrics: Metrics,
    pub cfg: TgbConfig,
    pub leader: watch::Receiver<bool>,
    pub bindings: Mutex<HashMap<ObjectRef<TargetGroupBinding>, BindingState>>,
    pub target_groups: Mutex<HashMap<String, TargetGroupInfo>>,
    /// Held while target groups missing from `target_groups` (or their tags, missing from
    /// `target_group_tags`) are fetched, so the concurrent first reconciles of a cold start wait
    /// for one batched DescribeTargetGroups (and DescribeTags) instead of each making their own.
    pub target_group_fetch: tokio::sync::Mutex<()>,
    /// Tags per target group ARN, read once per process (single flight): who owns the group.
    pub target_group_tags: Mutex<HashMap<String, Arc<OnceCell<lbc_model::lb::Tags>>>>,
    /// VPC CIDRs per VPC ID, fetched once: concurrent first lookups wait for the one in flight.
    pub vpcs: Mutex<HashMap<String, Arc<OnceCell<VpcCidrs>>>>,
    /// Node → EC2 instance by private IP, for instance targets of nodes without a providerID.
    pub instances: Arc<lbc_aws::instances::InstanceIdCache>,
    /// The refreshing credential source (Vault, file), when one is configured: readiness gates
    /// wait while its keys cannot be refreshed and are about to expire
    /// ([`lbc_model::readiness::gate_may_open`]).
    pub credentials: Option<lbc_aws::credentials::CredentialStatus>,
}

impl Context {
    /// How long the AWS keys last when the last refresh failed (zero: expired); `None` while they
    /// refresh normally or no refreshing source is configured.
    pub fn unrefreshable_keys_left(&self) -> Option<std::time::Duration> {
        use lbc_aws::credentials::Health;
        let state = self.credentials.as_ref()?.state();
        match state.health {
            Health::Expired => Some(std::time::Duration::ZERO),
            // Keys without a known expiry (a credentials file without one) never run out.
            Health::Degraded => {
                state.expires_at.map(|t| t.duration_since(std::time::SystemTime::now()).unwrap_or_default())
            }
            Health::Healthy | Health::Initializing => None,
        }
    }

    /// The ELBv2 client of a binding's target group: as the role of `spec.iamRoleArnToAssume`
    /// when set (a target group of another account), else the controller's own. A role the strict
    /// tenancy mode refuses to the binding's namespace gets a client that never calls AWS and
    /// fails every operation with the refusal, which the binding's error path reports on it.
    pub fn elb_for(&self, tgb: &TargetGroupBinding) -> Arc<dyn ElbV2> {
        let Some(role) = tgb.spec.role_to_assume() else { return self.elb.clone() };
        let (ns, name) = (tgb.metadata.namespace.as_deref().unwrap_or_default(), tgb.metadata.name.as_deref());
        match self.cfg.tenancy.assume_role(ns, name.unwrap_or_default(), &role.role_arn) {
            Verdict::Refused(r) => Arc::new(lbc_aws::elbv2_refused::RefusedElbV2::new(r.detail)),
            Verdict::Exposed(e) => {
                tracing::debug!(kind = e.kind, detail = %e.detail, "tenancy exposure");
                self.elb_roles.client(Some(&role))
            }
            Verdict::Allowed => self.elb_roles.client(Some(&role)),
        }
    }

    /// A VPC's CIDRs, fetched once per VPC and process: concurrent first lookups wait for the call
    /// in flight, a failed one is tried again by the next caller. (A CIDR block associated later is
    /// seen after a restart.)
    pub async fn vpc_cidrs(&self, vpc_id: &str) -> crate::error::Result<VpcCidrs> {
        let cell = self.vpcs.lock().expect("vpc cache").entry(vpc_id.to_string()).or_default().clone();
        let v = cell
            .get_or_try_init(|| async {
                let cidrs = self.ec2.vpc_cidrs(vpc_id).await?;
                VpcCidrs::parse(&cidrs).map_err(|e| crate::error::Error::Invalid(format!("VPC {vpc_id}: {e}")))
            })
            .await?;
        Ok(v.clone())
    }

    pub fn is_leader(&self) -> bool {
        *self.leader.borrow()
    }

    /// Checked right before every write: a replica that lost the lease mid-reconcile stops at once.
    pub fn ensure_leader(&self) -> crate::error::Result<()> {
        if self.is_leader() {
            Ok(())
        } else {
            Err(crate::error::Error::NotLeader("this replica is no longer the leader; write skipped".into()))
        }
    }

    /// Runs `f` on the binding's state.
    pub fn with_state<R>(&self, key: &ObjectRef<TargetGroupBinding>, f: impl FnOnce(&mut BindingState) -> R) -> R {
        let mut m = self.bindings.lock().expect("bindings lock");
        f(m.entry(key.clone()).or_default())
    }

    /// Records that the binding is sending a target write now (pacing).
    pub fn wrote_targets(&self, key: &ObjectRef<TargetGroupBinding>) {
        self.with_state(key, |s| s.last_write = Some(Instant::now()));
    }

    /// How long the binding's next reconcile waits before it may write
    /// ([`lbc_model::pacing::write_hold`]): `level` is the write bucket as it is now (`None`: no
    /// client-side throttle, no pacing); the bindings that wrote within the horizon are counted
    /// from the per-binding state.
    pub fn write_hold(
        &self,
        key: &ObjectRef<TargetGroupBinding>,
        level: Option<lbc_model::pacing::BucketLevel>,
        removal: bool,
    ) -> Duration {
        use lbc_model::pacing::{HORIZON, write_hold};
        let Some(level) = level else { return Duration::ZERO };
        let now = Instant::now();
        let m = self.bindings.lock().expect("bindings lock");
        let recent = |s: &BindingState| s.last_write.filter(|t| now.duration_since(*t) < HORIZON);
        let mine = m.get(key).and_then(recent);
        let active = m.values().filter(|s| recent(s).is_some()).count() + usize::from(mine.is_none());
        write_hold(mine.map(|t| now.duration_since(t)), active, level, removal)
    }

    pub fn forget(&self, key: &ObjectRef<TargetGroupBinding>) {
        self.bindings.lock().expect("bindings lock").remove(key);
    }

    /// A target group this process just created, with the tags it was created with: the binding
    /// the stack applies next for it then reads neither the group nor its tags back.
    pub fn learn_created_target_group(&self, info: TargetGroupInfo, tags: &lbc_model::lb::Tags) {
        let cell = self.target_group_tags.lock().expect("tag cache").entry(info.arn.clone()).or_default().clone();
        // A value already there was read from AWS: keep it.
        let _ = cell.set(tags.clone());
        self.target_groups.lock().expect("tg cache").insert(info.arn.clone(), info);
    }

    /// Drops everything learnt of AWS per binding and target group (a new leadership term): while
    /// another replica led, a target group may have been deleted and its ARN's tags (who owns it)
    /// changed with a new group of the same name.
    pub fn forget_all(&self) {
        self.bindings.lock().expect("bindings lock").clear();
        self.target_groups.lock().expect("tg cache").clear();
        self.target_group_tags.lock().expect("tag cache").clear();
    }

    /// Publishes an Event; failures to publish are logged, never fatal.
    /// Publishes an Event; whether the API server took it (a failure is logged: callers that
    /// report a problem once must report it again later, not remember it as told).
    pub async fn event(
        &self,
        regarding: &k8s_openapi::api::core::v1::ObjectReference,
        warning: bool,
        reason: &str,
        note: String,
    ) -> bool {
        if warning {
            tracing::warn!(object = ?regarding.name, namespace = ?regarding.namespace, reason, "{note}");
        } else {
            tracing::info!(object = ?regarding.name, namespace = ?regarding.namespace, reason, "{note}");
        }
        // kube's Recorder folds events with the same object, type, reason and action into one
        // series and keeps the first note: a second, different problem (same reason) would only
        // bump a count. The note's hash in the action keeps distinct notes distinct events while
        // identical ones still count up in one series.
        let note = truncate(note, EVENT_NOTE_MAX);
        let mut h = std::hash::DefaultHasher::new();
        std::hash::Hash::hash(&note, &mut h);
        let ev = Event {
            type_: if warning { EventType::Warning } else { EventType::Normal },
            reason: reason.to_string(),
            action: format!("Reconcile-{:08x}", std::hash::Hasher::finish(&h) as u32),
            note: Some(note),
            secondary: None,
        };
        match self.recorder.publish(&ev, regarding).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, reason, "could not publish event; it is sent again on a later pass");
                false
            }
        }
    }
}

/// `d` plus up to +50% jitter, so periodic work spreads out instead of arriving in one wave.
pub fn jittered(d: Duration) -> Duration {
    d + d.mul_f64(fastrand::f64() * 0.5)
}

#[cfg(test)]
mod tenancy_tests {
    use super::*;
    use crate::stack::test_world::World;
    use lbc_aws::fake::{FakeAccounts, FakeElbV2};
    use lbc_model::tenancy::{Tenancy, TenancyMode};

    const ARN: &str = "arn:aws:elasticloadbalancing:eu-west-1:444455556666:targetgroup/web/0123456789abcdef";
    const ROLE: &str = "arn:aws:iam::444455556666:role/lbc/team-a/registrar";

    fn binding(ns: &str) -> TargetGroupBinding {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {"targetGroupARN": ARN, "serviceRef": {"name": "web", "port": 80}, "iamRoleArnToAssume": ROLE},
        }))
        .unwrap()
    }

    /// The world's context with this tenancy and role accounts the test can inspect.
    fn world(mode: TenancyMode) -> (World, Arc<FakeAccounts>) {
        let mut w = World::new();
        let policy = format!(r#"{{"assumeRoles": [{{"namespaces": ["team-a"], "roleArns": ["{ROLE}"]}}]}}"#);
        let accounts = Arc::new(FakeAccounts::new(Arc::new(FakeElbV2::default())));
        let ctx = Arc::get_mut(&mut w.base).expect("the test world's context is not shared yet");
        ctx.cfg.tenancy = Arc::new(Tenancy::parse(mode, &policy, "test").unwrap());
        ctx.elb_roles = accounts.clone();
        (w, accounts)
    }

    #[tokio::test]
    async fn strict_mode_never_assumes_a_role_the_namespace_is_not_granted() {
        let (w, accounts) = world(TenancyMode::Strict);
        let e = w.base.elb_for(&binding("team-b")).describe_target_group(ARN).await.unwrap_err();
        assert!(e.message.contains("team-b/web") && e.message.contains(ROLE), "{e}");
        assert!(e.message.contains("tenancy.policy.assumeRoles"), "names the fix: {e}");
        assert!(accounts.asked().is_empty(), "no client (no credentials) asked for the refused role");
        // The granted namespace gets the role's client.
        let _ = w.base.elb_for(&binding("team-a")).describe_target_group(ARN).await;
        assert_eq!(accounts.asked().len(), 1);
    }

    #[tokio::test]
    async fn a_new_leadership_term_forgets_who_owns_each_target_group() {
        let (w, _) = world(TenancyMode::Compatible);
        let info = TargetGroupInfo { arn: ARN.into(), ..Default::default() };
        let tags = lbc_model::lb::Tags::from([("elbv2.k8s.aws/cluster".to_string(), "c".to_string())]);
        w.base.learn_created_target_group(info, &tags);
        assert!(w.base.target_group_tags.lock().unwrap().contains_key(ARN));
        w.base.forget_all();
        assert!(w.base.target_group_tags.lock().unwrap().is_empty(), "tags are read again by the new term");
        assert!(w.base.target_groups.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn compatible_mode_assumes_any_role_as_the_upstream_does() {
        let (w, accounts) = world(TenancyMode::Compatible);
        let _ = w.base.elb_for(&binding("team-b")).describe_target_group(ARN).await;
        assert_eq!(accounts.asked().len(), 1, "the upstream's trust model in compatible mode");
    }
}
