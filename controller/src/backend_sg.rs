//! The cluster's shared backend security group in AWS (decisions in
//! `lbc_model::lb::backend_sg`): found by its ownership tags, created on first need, deleted once
//! no Service holds our finalizer. One instance per process; calls are serialised so two Services
//! reconciled at once never create two groups.

use crate::error::{Error, Result};
use backon::{ConstantBuilder, Retryable};
use lbc_aws::error::ErrorKind;
use lbc_aws::net::{Networking, SecurityGroupQuery};
use lbc_model::lb::Tags;
use lbc_model::lb::backend_sg::{BackendSgMode, desired, lookup_tags};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::{Mutex, Notify};

/// Deleting waits for AWS to let go of the group (load balancer ENIs disappear minutes after
/// DeleteLoadBalancer); give up after this long; the next Service deletion tries again. A fixed
/// re-check, not a backoff: nothing failed, AWS releases the group on its own schedule.
const RELEASE_ATTEMPTS: usize = 30;
const RELEASE_INTERVAL: Duration = Duration::from_secs(10);

pub struct BackendSecurityGroup {
    mode: BackendSgMode,
    net: Arc<dyn Networking>,
    cluster: String,
    vpc_id: String,
    default_tags: Tags,
    /// The Auto group's ID once known. Cleared when this process deletes it.
    known: Mutex<Option<String>>,
    releasing: AtomicBool,
    rules_pass: Option<RulesPass>,
}

/// The backend-rules reconciler (`crate::networking`), when it runs: it revokes the rules that
/// name the group as their source, without which EC2 refuses to delete it (DependencyViolation).
#[derive(Clone)]
pub struct RulesPass {
    /// Asks for a pass.
    pub wake: Arc<Notify>,
    /// Notified (to waiters only) after every pass that succeeded, or found nothing to do.
    pub done: Arc<Notify>,
}

impl RulesPass {
    /// Waits for a pass to finish, or for `at_most`; `ask`: asks for one first.
    async fn next(&self, at_most: Duration, ask: bool) {
        let done = self.done.notified();
        tokio::pin!(done);
        done.as_mut().enable();
        if ask {
            self.wake.notify_one();
        }
        let _ = tokio::time::timeout(at_most, done).await;
    }
}

impl BackendSecurityGroup {
    pub fn new(mode: BackendSgMode, net: Arc<dyn Networking>, cluster: &str, vpc_id: &str, default_tags: Tags) -> Self {
        Self {
            mode,
            net,
            cluster: cluster.into(),
            vpc_id: vpc_id.into(),
            default_tags,
            known: Mutex::new(None),
            releasing: AtomicBool::new(false),
            rules_pass: None,
        }
    }

    /// Each release attempt first waits for the backend-rules pass to revoke what names the group.
    pub fn with_rules_pass(mut self, pass: RulesPass) -> Self {
        self.rules_pass = Some(pass);
        self
    }

    pub fn mode(&self) -> &BackendSgMode {
        &self.mode
    }

    /// The group's ID if it exists; never creates it.
    pub async fn existing(&self) -> Result<Option<String>> {
        match &self.mode {
            BackendSgMode::Disabled => Ok(None),
            BackendSgMode::Given(id) => Ok(Some(id.clone())),
            BackendSgMode::Auto => {
                let mut known = self.known.lock().await;
                if known.is_none() {
                    *known = self.find().await?;
                }
                Ok(known.clone())
            }
        }
    }

    /// The group's ID, creating it in Auto mode when it does not exist. `None` when disabled.
    pub async fn ensure(&self) -> Result<Option<String>> {
        if self.mode != BackendSgMode::Auto {
            return self.existing().await;
        }
        let mut known = self.known.lock().await;
        if let Some(id) = known.as_ref() {
            return Ok(Some(id.clone()));
        }
        if let Some(id) = self.find().await? {
            *known = Some(id.clone());
            return Ok(Some(id));
        }
        let sg = desired(&self.cluster, &self.vpc_id, &self.default_tags);
        let id = match self.net.create_security_group(&sg).await {
            Ok(id) => id,
            // Same name: ours created by another process meanwhile, or someone else's look-alike.
            Err(e) if e.kind == ErrorKind::AlreadyExists => self.find().await?.ok_or_else(|| {
                Error::Refused(format!(
                    "security group {} already exists in VPC {} without the tags {:?} that make it this cluster's \
                     backend security group; tag it with them to adopt it, delete it, or set \
                     --backend-security-group to the ID of the group to use",
                    sg.name,
                    self.vpc_id,
                    lookup_tags(&self.cluster)
                ))
            })?,
            Err(e) => return Err(e.into()),
        };
        tracing::info!(group = %id, name = %sg.name, vpc = %self.vpc_id, "created the shared backend security group");
        *known = Some(id.clone());
        Ok(Some(id))
    }

    /// Deletes the Auto group in the background once `still_needed` says no and AWS lets go of it
    /// (`DependencyViolation` while load balancers or their ENIs, or rules of other groups, still
    /// use it). At most one release runs at a time; `still_needed` is asked again before every
    /// attempt. With the backend-rules reconciler running, the first attempt asks for a pass and
    /// every attempt waits for the next one (at most [`RELEASE_INTERVAL`]), so the group goes
    /// right after the rules naming it.
    pub fn release_when_unused(self: &Arc<Self>, still_needed: impl Fn() -> bool + Send + 'static) {
        if self.mode != BackendSgMode::Auto || self.releasing.swap(true, Ordering::SeqCst) {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            let pass = this.rules_pass.clone();
            // The first attempt comes after a pass that revoked what names the group; later ones
            // (a load balancer's ENIs linger for minutes) ask for no pass of their own.
            if let Some(p) = &pass {
                p.next(RELEASE_INTERVAL, true).await;
            }
            let group = this.clone();
            let attempt = move || {
                let (this, needed) = (group.clone(), still_needed());
                async move { if needed { Ok(()) } else { this.delete().await } }
            };
            let released = attempt
                .retry(ConstantBuilder::default().with_delay(RELEASE_INTERVAL).with_max_times(RELEASE_ATTEMPTS - 1))
                .sleep(move |d| {
                    let pass = pass.clone();
                    async move {
                        match pass {
                            Some(p) => p.next(d, false).await,
                            None => tokio::time::sleep(d).await,
                        }
                    }
                })
                .when(|e| matches!(e, Error::Aws(e) if e.kind == ErrorKind::InUse))
                .notify(|e, _| tracing::debug!(error = %e, "backend security group still in use; retrying"))
                .await;
            if let Err(e) = released {
                tracing::warn!(error = %e, "could not delete the shared backend security group; \
                                            the next Service deletion tries again");
            }
            this.releasing.store(false, Ordering::SeqCst);
        });
    }

    async fn delete(&self) -> Result<()> {
        let mut known = self.known.lock().await;
        let id = match known.clone() {
            Some(id) => id,
            None => match self.find().await? {
                Some(id) => id,
                None => return Ok(()),
            },
        };
        self.net.delete_security_group(&id).await?;
        tracing::info!(group = %id, "deleted the shared backend security group: no Service uses it any more");
        *known = None;
        Ok(())
    }

    /// The group carrying this cluster's backend-SG tags in the VPC. Several (someone copied the
    /// tags): the one with ALBC's name, else the lowest ID, so every pass picks the same.
    async fn find(&self) -> Result<Option<String>> {
        let q = SecurityGroupQuery::Tags { vpc_id: Some(self.vpc_id.clone()), tags: lookup_tags(&self.cluster) };
        let mut found = self.net.security_groups(&q).await?;
        if found.len() > 1 {
            let ids: Vec<&str> = found.iter().map(|g| g.id.as_str()).collect();
            tracing::warn!(groups = ?ids, "several security groups carry this cluster's backend-SG tags");
        }
        let name = desired(&self.cluster, &self.vpc_id, &Tags::new()).name;
        found.sort_by(|a, b| (a.spec.name != name, &a.id).cmp(&(b.spec.name != name, &b.id)));
        Ok(found.into_iter().next().map(|g| g.id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lbc_aws::fake_net::FakeNetworking;

    fn auto(net: &Arc<FakeNetworking>) -> BackendSecurityGroup {
        BackendSecurityGroup::new(BackendSgMode::Auto, net.clone(), "prod", "vpc-1", Tags::new())
    }

    #[tokio::test]
    async fn auto_group_is_created_once_then_found_by_tags() {
        let net = Arc::new(FakeNetworking::default());
        let sg = auto(&net);
        assert_eq!(sg.existing().await.unwrap(), None);
        let id = sg.ensure().await.unwrap().expect("created");
        assert_eq!(sg.ensure().await.unwrap(), Some(id.clone()));
        // A second process finds the same group instead of creating another.
        assert_eq!(auto(&net).ensure().await.unwrap(), Some(id.clone()));
        let groups = net.security_groups(&SecurityGroupQuery::Ids(vec![id.clone()])).await.unwrap();
        assert_eq!(groups[0].spec.name, "k8s-traffic-prod-6754af9632");
    }

    #[tokio::test]
    async fn a_same_named_group_without_our_tags_is_refused_not_adopted() {
        let net = Arc::new(FakeNetworking::default());
        let mut foreign = desired("prod", "vpc-1", &Tags::new());
        foreign.tags = Tags::new();
        net.create_security_group(&foreign).await.unwrap();
        let e = auto(&net).ensure().await.unwrap_err().to_string();
        assert!(e.contains("k8s-traffic-prod-6754af9632") && e.contains("--backend-security-group"), "{e}");
    }

    #[tokio::test]
    async fn given_and_disabled_modes_never_create() {
        let net = Arc::new(FakeNetworking::default());
        let given = BackendSecurityGroup::new(BackendSgMode::Given("sg-9".into()), net.clone(), "p", "v", Tags::new());
        assert_eq!(given.ensure().await.unwrap(), Some("sg-9".into()));
        let off = BackendSecurityGroup::new(BackendSgMode::Disabled, net.clone(), "p", "v", Tags::new());
        assert_eq!(off.ensure().await.unwrap(), None);
        let all = SecurityGroupQuery::Tags { vpc_id: None, tags: Tags::new() };
        assert!(net.security_groups(&all).await.unwrap().is_empty());
    }

    /// The Auto group, created, and an ENI (a load balancer's, say) still using it.
    async fn group_in_use() -> (Arc<FakeNetworking>, Arc<BackendSecurityGroup>, String) {
        let net = Arc::new(FakeNetworking::default());
        let sg = Arc::new(auto(&net));
        let id = sg.ensure().await.unwrap().expect("created");
        let eni = lbc_model::lb::NetworkInterface {
            id: "eni-lb".into(),
            subnet_id: "subnet-1".into(),
            private_ips: vec![],
            security_groups: vec![id.clone()],
        };
        net.add_network_interface(eni);
        (net, sg, id)
    }

    fn deletes(net: &FakeNetworking) -> usize {
        net.calls().iter().filter(|(op, _)| *op == "DeleteSecurityGroup").count()
    }

    /// Paused time: the release's 10 s re-checks pass at once.
    #[tokio::test(start_paused = true)]
    async fn release_looks_again_every_interval_until_aws_lets_go() {
        let (net, sg, id) = group_in_use().await;
        sg.release_when_unused(|| false);
        // Attempts at 0, 10, 20 and 30 s, each refused (DependencyViolation).
        tokio::time::sleep(RELEASE_INTERVAL * 3 + Duration::from_millis(1)).await;
        assert_eq!(deletes(&net), 4);
        assert!(net.group(&id).is_some());
        net.remove_network_interface("eni-lb");
        tokio::time::sleep(RELEASE_INTERVAL).await;
        assert_eq!(deletes(&net), 5);
        assert!(net.group(&id).is_none(), "deleted once AWS let go of it");
        tokio::time::sleep(RELEASE_INTERVAL * 10).await;
        assert_eq!(deletes(&net), 5, "nothing more after the deletion");
    }

    /// A stand-in for the backend-rules reconciler: each wake is a pass of 1 s, counted.
    fn rules_pass() -> (RulesPass, Arc<std::sync::atomic::AtomicUsize>) {
        let pass = RulesPass { wake: Arc::new(Notify::new()), done: Arc::new(Notify::new()) };
        let passes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (p, n) = (pass.clone(), passes.clone());
        tokio::spawn(async move {
            loop {
                p.wake.notified().await;
                tokio::time::sleep(Duration::from_secs(1)).await;
                n.fetch_add(1, Ordering::SeqCst);
                p.done.notify_waiters();
            }
        });
        (pass, passes)
    }

    #[tokio::test(start_paused = true)]
    async fn with_the_rules_pass_the_first_attempt_waits_for_it_and_the_group_goes_right_after() {
        let (net, sg, id) = group_in_use().await;
        let (pass, passes) = rules_pass();
        let sg = Arc::new(Arc::into_inner(sg).unwrap().with_rules_pass(pass));
        // What the pass revokes (here: the ENI standing for a rule that names the group).
        let n = net.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(900)).await;
            n.remove_network_interface("eni-lb");
        });
        sg.release_when_unused(|| false);
        tokio::time::sleep(Duration::from_millis(999)).await;
        assert_eq!(deletes(&net), 0, "no attempt before the pass finished");
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert_eq!((passes.load(Ordering::SeqCst), deletes(&net)), (1, 1), "one attempt, right after the pass");
        assert!(net.group(&id).is_none(), "and it succeeded: no DependencyViolation on the way");
    }

    #[tokio::test(start_paused = true)]
    async fn retries_wait_for_a_pass_or_the_interval_without_asking_for_passes() {
        let (net, sg, id) = group_in_use().await;
        let (pass, passes) = rules_pass();
        let sg = Arc::new(Arc::into_inner(sg).unwrap().with_rules_pass(pass));
        // The load balancer's ENI lingers: attempts at 1, 11 and 21 s are refused.
        sg.release_when_unused(|| false);
        tokio::time::sleep(Duration::from_secs(25)).await;
        assert_eq!(deletes(&net), 3);
        assert_eq!(passes.load(Ordering::SeqCst), 1, "only the first attempt asked for a pass");
        net.remove_network_interface("eni-lb");
        tokio::time::sleep(RELEASE_INTERVAL).await;
        assert!(net.group(&id).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn release_gives_up_after_its_budget_and_stops_when_the_group_is_needed_again() {
        let (net, sg, id) = group_in_use().await;
        sg.release_when_unused(|| false);
        tokio::time::sleep(RELEASE_INTERVAL * (RELEASE_ATTEMPTS as u32 + 10)).await;
        assert_eq!(deletes(&net), RELEASE_ATTEMPTS, "gives up after {RELEASE_ATTEMPTS} attempts");
        assert!(net.group(&id).is_some());

        // A later release may start again; a Service that needs the group stops it before the
        // next attempt.
        let needed = Arc::new(AtomicBool::new(false));
        let flag = needed.clone();
        sg.release_when_unused(move || flag.load(Ordering::SeqCst));
        tokio::time::sleep(RELEASE_INTERVAL + Duration::from_millis(1)).await;
        assert_eq!(deletes(&net), RELEASE_ATTEMPTS + 2);
        needed.store(true, Ordering::SeqCst);
        tokio::time::sleep(RELEASE_INTERVAL * 10).await;
        assert_eq!(deletes(&net), RELEASE_ATTEMPTS + 2, "no attempt once the group is needed again");
        assert!(net.group(&id).is_some());
    }
}
