//! Backend security-group rules: TargetGroupBinding `spec.networking` applied as ingress rules on
//! the security groups of the targets' ENIs (decisions: `lbc_model::lb::backend_rules`).
//!
//! ALBC aggregates the permissions of *all* bindings per security group and garbage-collects our
//! rules from groups no binding needs, so this is one cluster-wide pass, not a per-binding
//! reconcile. It runs as a single task while this replica leads:
//! - triggered (debounced [`DEBOUNCE`]) by every change that reaches a binding (the binding itself,
//!   its Service, its EndpointSlices, pods with its gate; see `Triggers::send`) and by CiliumNode
//!   changes; and periodically every jittered `--sync-period` (drift), sooner while endpoints'
//!   ENIs are unknown or the last pass failed;
//! - one pass: bindings with `spec.networking` and their endpoint IPs from the caches → ENIs
//!   (CiliumNode cache, then `DescribeNetworkInterfaces` by IP through the [`EniCache`]) → the
//!   ENIs' security groups plus every group of the VPC tagged `kubernetes.io/cluster/<cluster>`
//!   (garbage collection) → `plan_backend_rules` → authorize, then revoke, per group, with the
//!   leader check before each write. Revokes only happen when every binding and endpoint resolved.
//! - problems (an ENI with several security groups none of which is tagged, unknown ENIs, bad
//!   ports) become Warning events on the bindings concerned, repeated at most once per sync period.

mod cilium;
mod gather;
#[cfg(test)]
mod tests;

pub use cilium::CiliumNodes;

use crate::backoff::{Backoff, Failures};
use crate::context::{Context, jittered};
use crate::error::Result;
use gather::{EventMemory, gather, notes_by_binding};
use kube::Resource;
use lbc_aws::net::{Networking, SecurityGroupQuery};
use lbc_model::cilium::EniIndex;
use lbc_model::lb::backend_rules::{BackendRulesInput, BindingRules, EndpointEni, RuleProblem, plan_backend_rules};
use lbc_model::lb::eni_lookup::{EniCache, plan_eni_lookups, resolve};
use lbc_model::lb::subnets::cluster_tag;
use lbc_model::lb::{NetworkInterface, Observed, SecurityGroup, Tags};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// Changes arriving within this window share one pass.
pub const DEBOUNCE: Duration = Duration::from_secs(1);
/// Next pass while some endpoint's ENI is unknown (a new pod's ENI may show up shortly). A
/// schedule, not a backoff: nothing failed, the answer is just not there yet.
const RETRY_UNRESOLVED: Duration = Duration::from_secs(30);
/// First retry after a failed pass; further failures in a row double it up to
/// `--targetgroupbinding-max-exponential-backoff-delay` ([`crate::backoff`]).
const RETRY_FAILED: Duration = Duration::from_secs(10);

/// Flags of the backend-rules reconciler.
#[derive(Clone, Debug)]
pub struct BackendRulesConfig {
    pub cluster_name: String,
    pub vpc_id: String,
    /// `--service-target-eni-security-group-tags`.
    pub required_tags: Tags,
    /// Collapse SG-sourced rules into one port range (false = `--disable-restricted-sg-rules`).
    pub restricted: bool,
    pub sync_period: Duration,
}

/// What one pass did, for logs and tests.
#[derive(Debug, Default)]
pub struct PassSummary {
    pub bindings: usize,
    pub authorized: usize,
    pub revoked: usize,
    pub withheld_revokes: usize,
    pub problems: usize,
    pub unresolved: bool,
}

pub struct BackendRules {
    ctx: Arc<Context>,
    net: Arc<dyn Networking>,
    cfg: BackendRulesConfig,
    cilium: Option<CiliumNodes>,
    /// Woken by binding-related watch events.
    trigger: Arc<Notify>,
    /// Notified to its waiters after every pass that succeeded, and when a wake finds nothing
    /// to do (the shared backend group's release waits for the revokes,
    /// `crate::backend_sg::RulesPass`).
    done: Arc<Notify>,
    eni_cache: Mutex<EniCache>,
    events: Mutex<EventMemory>,
    /// Failed passes in a row.
    failures: Mutex<Failures>,
}

impl BackendRules {
    pub fn new(
        ctx: Arc<Context>,
        net: Arc<dyn Networking>,
        cfg: BackendRulesConfig,
        cilium: Option<CiliumNodes>,
        trigger: Arc<Notify>,
    ) -> Self {
        let failures = Mutex::new(Failures::new(Backoff::new(RETRY_FAILED, ctx.cfg.max_backoff)));
        Self {
            ctx,
            net,
            cfg,
            cilium,
            trigger,
            done: Arc::new(Notify::new()),
            eni_cache: Mutex::new(EniCache::default()),
            events: Mutex::new(EventMemory::default()),
            failures,
        }
    }

    /// Who wakes a pass and who hears that one finished.
    pub fn pass_signals(&self) -> crate::backend_sg::RulesPass {
        crate::backend_sg::RulesPass { wake: self.trigger.clone(), done: self.done.clone() }
    }

    /// Runs passes until `shutdown` resolves (or the future is dropped on leadership loss).
    pub async fn run(self: Arc<Self>, shutdown: impl std::future::Future<Output = ()>) {
        if self.cfg.vpc_id.is_empty() {
            tracing::warn!(
                "backend security-group rules off: --aws-vpc-id is empty (needed to find the pods' ENIs); \
                 TargetGroupBinding spec.networking is not applied"
            );
            return;
        }
        tracing::info!("backend security-group rules reconciler started");
        // One key (the pass is cluster-wide) on the shared scheduler: a watch event asks for a
        // pass `DEBOUNCE` from now (the earliest request wins, so changes within that window share
        // one pass), each pass schedules the next (drift, or sooner after a failure).
        let wakes = futures::stream::unfold(self.trigger.clone(), |n| async move {
            n.notified().await;
            Some((crate::schedule::request((), DEBOUNCE), n))
        });
        let requests =
            futures::stream::select(futures::stream::iter([crate::schedule::request((), Duration::ZERO)]), wakes);
        // The last pass saw no binding with spec.networking and left none of our rules behind:
        // until a binding takes part again, a watch event cannot change anything in AWS. Then the
        // next pass stays where the last one put it.
        let idle_until: Mutex<Option<Instant>> = Mutex::default();
        crate::schedule::run(requests, 1, shutdown, |()| async {
            if let Some(due) = *idle_until.lock().expect("idle") {
                let g = gather(&self.ctx.stores);
                let now = Instant::now();
                if g.bindings.is_empty() && g.incomplete.is_empty() && due > now {
                    // Nothing of ours to revoke: as good as a pass for who waits on one.
                    self.done.notify_waiters();
                    return Some(due - now);
                }
            }
            let next = self.logged_pass().await;
            *idle_until.lock().expect("idle") = next.1.then(|| Instant::now() + next.0);
            Some(next.0)
        })
        .await;
    }

    /// One pass, logged and counted; the delay before the next one and whether it found nothing
    /// to do (no binding takes part, nothing withheld, nothing unresolved).
    async fn logged_pass(&self) -> (Duration, bool) {
        let started = Instant::now();
        match self.pass().await {
            Ok(s) => {
                tracing::debug!(
                    bindings = s.bindings,
                    authorized = s.authorized,
                    revoked = s.revoked,
                    withheld_revokes = s.withheld_revokes,
                    problems = s.problems,
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "backend security-group rules pass"
                );
                self.failures.lock().expect("failures").succeeded();
                self.done.notify_waiters();
                let idle = s.bindings == 0 && s.withheld_revokes == 0 && !s.unresolved;
                (if s.unresolved { RETRY_UNRESOLVED } else { jittered(self.cfg.sync_period) }, idle)
            }
            Err(e) if e.is_not_leader() => {
                // Lost the lease mid-pass: the new leader owns the rules now. Like the other
                // reconcilers, neither counted as a failure nor a backoff step.
                tracing::debug!(error = %e, "backend security-group rules pass stopped: not the leader");
                (RETRY_UNRESOLVED, false)
            }
            Err(e) => {
                let mut failures = self.failures.lock().expect("failures");
                let delay = failures.failed();
                tracing::warn!(error = %e, failures = failures.count(), retry_in = ?delay, "backend security-group rules pass failed");
                self.ctx.metrics.reconcile_failed("backend-rules", e.category());
                (delay, false)
            }
        }
    }

    /// One cluster-wide pass.
    pub async fn pass(&self) -> Result<PassSummary> {
        let gathered = gather(&self.ctx.stores);
        let all_ips: BTreeSet<IpAddr> = gathered.bindings.iter().flat_map(|b| b.endpoints.keys().copied()).collect();

        // ENIs: CiliumNode cache first, then EC2 for the rest (cached 10 min, misses 1 min).
        let objects = self.cilium.as_ref().map(CiliumNodes::objects).unwrap_or_default();
        let index = EniIndex::build(objects.iter(), std::iter::empty());
        let now = std::time::Instant::now();
        let calls = {
            let mut cache = self.eni_cache.lock().expect("eni cache");
            cache.expire(now);
            plan_eni_lookups(all_ips.iter().copied(), &index, &cache, now).calls
        };
        for call in calls {
            let found = self.net.network_interfaces_by_ip(&self.cfg.vpc_id, &call.ips).await?;
            self.eni_cache.lock().expect("eni cache").record(&call.ips, &found, std::time::Instant::now());
        }
        let enis: BTreeMap<IpAddr, NetworkInterface> = {
            let cache = self.eni_cache.lock().expect("eni cache");
            all_ips.iter().filter_map(|ip| resolve(*ip, &index, &cache, now).map(|e| (*ip, e.clone()))).collect()
        };

        let groups = self.security_groups(enis.values()).await?;

        let bindings: Vec<BindingRules<'_>> = gathered
            .bindings
            .iter()
            .map(|b| BindingRules {
                key: b.key.clone(),
                networking: b.tgb.spec.networking.as_ref(),
                endpoints: b
                    .endpoints
                    .iter()
                    .map(|(ip, ports)| EndpointEni { ip: *ip, eni: enis.get(ip), named_ports: ports.clone() })
                    .collect(),
                endpoints_known: true,
                kept: None,
            })
            .collect();
        for reason in &gathered.incomplete {
            tracing::debug!(
                reason,
                "backend security-group rules: a binding's endpoints are unknown; revokes withheld"
            );
        }
        let input = BackendRulesInput {
            cluster_name: &self.cfg.cluster_name,
            required_tags: &self.cfg.required_tags,
            restricted: self.cfg.restricted,
            bindings: &bindings,
            security_groups: &groups,
            complete: gathered.incomplete.is_empty(),
            missing_peers: &BTreeSet::new(),
            first_pass: false,
        };
        let plan = plan_backend_rules(&input);
        let mut summary = PassSummary {
            bindings: bindings.len(),
            withheld_revokes: plan.withheld_revokes,
            problems: plan.problems.len(),
            unresolved: plan.problems.iter().any(|p| matches!(p, RuleProblem::UnresolvedEndpoints { .. })),
            ..Default::default()
        };
        self.report(&gathered.bindings, &plan.problems).await;

        let mut first_error = None;
        for (sg, changes) in &plan.changes {
            let result = self.apply(sg, &changes.authorize, &changes.revoke, &mut summary).await;
            if let Err(e) = result {
                tracing::warn!(security_group = %sg, error = %e, "could not change backend security-group rules");
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(summary),
        }
    }

    /// The ENIs' groups plus every group of the VPC with the cluster tag (so rules on groups no
    /// binding uses any more are garbage-collected).
    async fn security_groups<'a>(
        &self,
        enis: impl Iterator<Item = &'a NetworkInterface>,
    ) -> Result<Vec<Observed<SecurityGroup>>> {
        let query =
            SecurityGroupQuery::TagKey { vpc_id: self.cfg.vpc_id.clone(), key: cluster_tag(&self.cfg.cluster_name) };
        let mut by_id: BTreeMap<String, Observed<SecurityGroup>> =
            self.net.security_groups(&query).await?.into_iter().map(|g| (g.id.clone(), g)).collect();
        let missing: Vec<String> = enis
            .flat_map(|e| e.security_groups.iter().cloned())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .filter(|id| !by_id.contains_key(id))
            .collect();
        if missing.is_empty() {
            return Ok(by_id.into_values().collect());
        }
        match self.net.security_groups(&SecurityGroupQuery::Ids(missing.clone())).await {
            Ok(found) => by_id.extend(found.into_iter().map(|g| (g.id.clone(), g))),
            // One deleted group fails the whole call: describe one by one, skip the missing ones
            // (the plan reports them).
            Err(e) if e.kind == lbc_aws::error::ErrorKind::NotFound => {
                for id in missing {
                    match self.net.security_groups(&SecurityGroupQuery::Ids(vec![id])).await {
                        Ok(found) => by_id.extend(found.into_iter().map(|g| (g.id.clone(), g))),
                        Err(e) if e.kind == lbc_aws::error::ErrorKind::NotFound => {}
                        Err(e) => return Err(e.into()),
                    }
                }
            }
            Err(e) => return Err(e.into()),
        }
        Ok(by_id.into_values().collect())
    }

    async fn apply(
        &self,
        sg: &str,
        authorize: &[lbc_model::lb::IngressRule],
        revoke: &[lbc_model::lb::IngressRule],
        summary: &mut PassSummary,
    ) -> Result<()> {
        if !authorize.is_empty() {
            self.ctx.ensure_leader()?;
            self.net.authorize_ingress(sg, authorize).await?;
            tracing::info!(security_group = sg, rules = ?authorize, "authorized backend ingress rules");
            self.count("authorize", authorize.len());
            summary.authorized += authorize.len();
        }
        if !revoke.is_empty() {
            self.ctx.ensure_leader()?;
            let mut stale = 0;
            match self.net.revoke_ingress(sg, revoke).await {
                Ok(()) => {}
                // A rule whose source group was deleted fails the whole call: revoke one by one
                // and skip those AWS no longer knows.
                Err(e) if e.kind == lbc_aws::error::ErrorKind::NotFound && revoke.len() > 1 => {
                    for rule in revoke {
                        self.ctx.ensure_leader()?;
                        match self.net.revoke_ingress(sg, std::slice::from_ref(rule)).await {
                            Err(e) if e.kind == lbc_aws::error::ErrorKind::NotFound => {
                                stale += usize::from(not_revoked(sg, std::slice::from_ref(rule), &e))
                            }
                            other => other?,
                        }
                    }
                }
                Err(e) if e.kind == lbc_aws::error::ErrorKind::NotFound => {
                    stale += usize::from(not_revoked(sg, revoke, &e))
                }
                Err(e) => return Err(e.into()),
            }
            if stale < revoke.len() {
                tracing::info!(security_group = sg, rules = ?revoke, "revoked backend ingress rules no binding needs");
            }
            self.count("revoke", revoke.len() - stale);
            summary.revoked += revoke.len() - stale;
        }
        Ok(())
    }

    fn count(&self, action: &'static str, n: usize) {
        let labels = crate::metrics::RuleChangeLabels { action };
        self.ctx.metrics.backend_rule_changes.get_or_create(&labels).inc_by(n as u64);
    }

    /// Problems → gauge, logs and Warning events on the bindings concerned.
    async fn report(&self, bindings: &[gather::BindingTargets], problems: &[RuleProblem]) {
        self.ctx.metrics.backend_rule_problems.set(problems.len() as i64);
        for p in problems.iter().filter(|p| gather::problem_binding(p).is_none()) {
            tracing::warn!("backend security-group rules: {p}");
        }
        let due = self.events.lock().expect("event memory").due(
            notes_by_binding(problems),
            std::time::Instant::now(),
            self.cfg.sync_period,
        );
        for (key, note) in due {
            if let Some(b) = bindings.iter().find(|b| b.key == key) {
                self.ctx.event(&b.tgb.object_ref(&()), true, "BackendSecurityGroupRules", note).await;
            }
        }
    }
}

/// A revoke answered NotFound: the rule or the group is already gone (nothing to do), or the rule
/// names a source group that no longer exists. EC2 refuses to delete a group that a rule in its
/// VPC names, so the last case means someone deleted it another way (another VPC, a peering); the
/// rule stays until removed by its rule ID, and saying "already gone" would hide it.
/// True for the stale case.
fn not_revoked(sg: &str, rules: &[lbc_model::lb::IngressRule], e: &lbc_aws::error::AwsError) -> bool {
    let stale_source = rules.iter().find_map(|r| match &r.source {
        lbc_model::lb::RuleSource::SecurityGroup(src) if src != sg && e.message.contains(src.as_str()) => Some(src),
        _ => None,
    });
    match stale_source {
        Some(src) => {
            tracing::warn!(
            security_group = sg,
            ?rules,
            error = %e,
            "cannot revoke a rule whose source group {src} no longer exists; it stays on {sg} as a stale rule: \
             remove it by its security-group rule ID (DescribeSecurityGroupRules, RevokeSecurityGroupIngress \
             --security-group-rule-ids)"
            );
            true
        }
        None => {
            tracing::debug!(security_group = sg, ?rules, error = %e, "rule already gone");
            false
        }
    }
}
