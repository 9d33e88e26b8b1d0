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
//!   (garbage collection) → `plan_backend_rules` → authorize on every group, then revoke, with
//!   the leader check before each write.
//! - fault isolation: each binding is judged on its own (`lbc_model::lb::backend_rules`): a
//!   binding whose spec is wrong gets nothing new and keeps what it had (remembered here, per
//!   binding, from its last good pass); the others proceed. When EC2 refuses a batch because of
//!   some of its rules (a peer group that does not exist, a malformed rule, the group's rule
//!   quota), the rest of the batch is sent without them ([`BackendRules::authorize`]): a healthy
//!   pass makes one AuthorizeSecurityGroupIngress per group with new rules, as before. A peer
//!   group EC2 called missing is remembered, so the next passes leave its bindings out without
//!   asking EC2 to refuse again, and looked for until it exists (one more DescribeSecurityGroups
//!   with a `group-id` filter per pass, only while some are missing; forgotten once no binding
//!   names it). A binding whose new rules were refused keeps its old
//!   ones in that pass's revokes.
//! - problems become Warning events on the bindings concerned (repeated at most once per sync
//!   period) and, for a binding whose spec is at fault, the status condition
//!   `BackendSecurityGroupRules` ([`status`]); nobody else's status changes.
//! - `awslbc_backend_sg_rules{namespace}` counts the rules each namespace's bindings want, to see
//!   who fills a shared group's rule quota.

mod cilium;
mod gather;
pub mod status;
#[cfg(test)]
mod tests;

pub use cilium::CiliumNodes;

use crate::backoff::{Backoff, Failures};
use crate::context::{Context, jittered};
use crate::error::Result;
use gather::{EventMemory, gather, notes_by_binding};
use kube::Resource;
use lbc_aws::error::RuleRejection;
use lbc_aws::net::{Networking, SecurityGroupQuery};
use lbc_model::cilium::EniIndex;
use lbc_model::lb::backend_rules::{
    BackendRulesInput, BindingRules, EndpointEni, KeptRules, Rejection, RuleProblem, describe_rule, plan_backend_rules,
    spare_kept,
};
use lbc_model::lb::eni_lookup::{EniCache, plan_eni_lookups, resolve};
use lbc_model::lb::subnets::cluster_tag;
use lbc_model::lb::{IngressRule, NetworkInterface, Observed, RuleSource, SecurityGroup, Tags};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
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
    /// Rules EC2 refused (their bindings were told; the other rules were applied).
    pub refused: usize,
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
    /// Per binding (`namespace/name`), the rules it had at its last good pass: kept while it is
    /// bad (`lbc_model::lb::backend_rules`, "Fault isolation").
    memory: Mutex<BTreeMap<String, KeptRules>>,
    /// Whether `memory` has been filled by a pass (else the first pass seeds it from AWS).
    remembered: AtomicBool,
    /// Peer groups EC2 said do not exist; described again every pass until they do.
    missing_peers: Mutex<BTreeSet<String>>,
    /// Namespaces with a `awslbc_backend_sg_rules` series.
    namespaces_counted: Mutex<BTreeSet<String>>,
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
            memory: Mutex::default(),
            remembered: AtomicBool::new(false),
            missing_peers: Mutex::default(),
            namespaces_counted: Mutex::default(),
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

        // Forget missing peer groups no binding names any more (deleted or fixed bindings).
        let named: BTreeSet<String> = gathered
            .bindings
            .iter()
            .filter_map(|b| b.tgb.spec.networking.as_ref())
            .flat_map(|n| n.ingress.iter().flat_map(|r| &r.from))
            .filter_map(|p| p.security_group.as_ref().map(|g| g.group_id.trim().to_string()))
            .collect();
        self.missing_peers.lock().expect("missing peers").retain(|g| named.contains(g));
        let groups = self.security_groups(enis.values()).await?;
        let memory = self.memory.lock().expect("memory").clone();
        let missing_peers = self.missing_peers.lock().expect("missing peers").clone();

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
                endpoints_known: b.endpoints_known,
                kept: memory.get(&b.key),
            })
            .collect();
        for reason in &gathered.incomplete {
            tracing::debug!(
                reason,
                "backend security-group rules: a binding's endpoints are unknown; it keeps its rules"
            );
        }
        let input = BackendRulesInput {
            cluster_name: &self.cfg.cluster_name,
            required_tags: &self.cfg.required_tags,
            restricted: self.cfg.restricted,
            bindings: &bindings,
            security_groups: &groups,
            complete: true,
            missing_peers: &missing_peers,
            first_pass: !self.remembered.load(Ordering::Relaxed),
            tenancy: &self.ctx.cfg.tenancy,
        };
        let plan = plan_backend_rules(&input);
        for e in &plan.exposures {
            // The compatible mode's upstream trust model, allowed as in the upstream: debug only.
            tracing::debug!(kind = e.kind, detail = %e.detail, "tenancy exposure");
        }
        let mut summary = PassSummary {
            bindings: bindings.len(),
            withheld_revokes: plan.withheld_revokes,
            unresolved: plan.problems.iter().any(|p| matches!(p, RuleProblem::UnresolvedEndpoints { .. })),
            ..Default::default()
        };
        self.count_by_namespace(&plan.rules_by_namespace);

        // Authorize everywhere first, splitting around rules EC2 refuses; then revoke, sparing
        // what a binding whose new rules were refused had before.
        let mut problems = plan.problems.clone();
        let mut refused_bindings = BTreeSet::new();
        let mut first_error = None;
        for (sg, changes) in plan.changes.iter().filter(|(_, c)| !c.authorize.is_empty()) {
            match self.authorize(sg, &changes.authorize).await {
                Ok(outcome) => {
                    summary.authorized += outcome.landed;
                    for refusal in outcome.refused {
                        let owners =
                            plan.owners.get(sg).and_then(|o| o.get(&refusal.rule)).cloned().unwrap_or_default();
                        tracing::warn!(security_group = %sg, rule = %describe_rule(&refusal.rule), ?owners, error = %refusal.error, "EC2 refused a backend ingress rule; the others were applied");
                        summary.refused += 1;
                        if let RuleRejection::SourceGroupNotFound(g) = &refusal.why {
                            self.missing_peers.lock().expect("missing peers").insert(g.clone());
                        }
                        for binding in owners {
                            problems.push(refusal.problem(&binding, sg));
                            refused_bindings.insert(binding);
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(security_group = %sg, error = %e, "could not authorize backend security-group rules");
                    first_error.get_or_insert(e);
                }
            }
        }
        let kept: Vec<&KeptRules> = refused_bindings.iter().filter_map(|b| memory.get(b)).collect();
        for (sg, changes) in plan.changes.iter().filter(|(_, c)| !c.revoke.is_empty()) {
            if first_error.as_ref().is_some_and(|e: &crate::error::Error| e.is_not_leader()) {
                break;
            }
            let revoke = spare_kept(sg, &changes.revoke, &kept);
            summary.withheld_revokes += changes.revoke.len() - revoke.len();
            if let Err(e) = self.revoke(sg, &revoke, &mut summary).await {
                tracing::warn!(security_group = %sg, error = %e, "could not revoke backend security-group rules");
                first_error.get_or_insert(e);
            }
        }

        // Remember what each binding had: a binding refused this pass keeps its old memory (none:
        // what it asked for, of which only rules EC2 took can exist).
        {
            let mut m = self.memory.lock().expect("memory");
            let mut next = BTreeMap::new();
            for (key, outcome) in plan.bindings {
                let rules = match (refused_bindings.contains(&key), memory.get(&key)) {
                    (true, Some(old)) => old.clone(),
                    _ => outcome.remember,
                };
                if !rules.is_empty() {
                    next.insert(key, rules);
                }
            }
            *m = next;
        }
        self.remembered.store(true, Ordering::Relaxed);

        summary.problems = problems.len();
        self.report(&gathered.bindings, &problems).await;
        match first_error {
            Some(e) => Err(e),
            None => Ok(summary),
        }
    }

    /// The ENIs' groups plus every group of the VPC with the cluster tag (so rules on groups no
    /// binding uses any more are garbage-collected). Peer groups EC2 said do not exist are looked
    /// for with one more call (only while there are any): those found are forgotten as missing,
    /// and their bindings' rules go out again.
    async fn security_groups<'a>(
        &self,
        enis: impl Iterator<Item = &'a NetworkInterface>,
    ) -> Result<Vec<Observed<SecurityGroup>>> {
        let query =
            SecurityGroupQuery::TagKey { vpc_id: self.cfg.vpc_id.clone(), key: cluster_tag(&self.cfg.cluster_name) };
        let mut by_id: BTreeMap<String, Observed<SecurityGroup>> =
            self.net.security_groups(&query).await?.into_iter().map(|g| (g.id.clone(), g)).collect();
        let peers: Vec<String> = self.missing_peers.lock().expect("missing peers").iter().cloned().collect();
        if !peers.is_empty() {
            let found = self.net.security_groups(&SecurityGroupQuery::Existing(peers)).await?;
            let mut missing = self.missing_peers.lock().expect("missing peers");
            for g in found {
                missing.remove(&g.id);
            }
        }
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

    /// Authorizes `rules` on `sg`: one call when EC2 takes them all (the healthy case). When EC2
    /// refuses the batch because of some rules ([`lbc_aws::error::AwsError::rule_rejection`]), the
    /// rest is sent without them: the rules from a source group EC2 says does not exist are set
    /// aside at once (one more call per missing group), any other refusal is narrowed down by
    /// halving the batch (about 2·log2(n) more calls per refused rule). Anything else (throttling,
    /// the group itself gone, access denied) stops and fails the pass, as before.
    async fn authorize(&self, sg: &str, rules: &[IngressRule]) -> Result<Authorized> {
        let mut out = Authorized::default();
        let mut todo = vec![rules.to_vec()];
        while let Some(batch) = todo.pop() {
            if batch.is_empty() {
                continue;
            }
            self.ctx.ensure_leader()?;
            let error = match self.net.authorize_ingress(sg, &batch).await {
                Ok(()) => {
                    tracing::info!(security_group = sg, rules = ?batch, "authorized backend ingress rules");
                    self.count("authorize", batch.len());
                    out.landed += batch.len();
                    continue;
                }
                Err(e) => e,
            };
            let Some(why) = error.rule_rejection(sg) else { return Err(error.into()) };
            let culprits: Vec<IngressRule> = match &why {
                RuleRejection::SourceGroupNotFound(g) => batch
                    .iter()
                    .filter(|r| matches!(&r.source, RuleSource::SecurityGroup(s) if s == g))
                    .cloned()
                    .collect(),
                _ => Vec::new(),
            };
            if !culprits.is_empty() {
                todo.push(batch.into_iter().filter(|r| !culprits.contains(r)).collect());
                out.refused.extend(culprits.into_iter().map(|rule| Refusal {
                    rule,
                    why: why.clone(),
                    error: error.clone(),
                }));
            } else if batch.len() > 1 {
                let (head, tail) = batch.split_at(batch.len() / 2);
                todo.push(tail.to_vec());
                todo.push(head.to_vec());
            } else {
                out.refused.push(Refusal { rule: batch[0].clone(), why, error });
            }
        }
        Ok(out)
    }

    async fn revoke(&self, sg: &str, revoke: &[IngressRule], summary: &mut PassSummary) -> Result<()> {
        if revoke.is_empty() {
            return Ok(());
        }
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
        Ok(())
    }

    fn count(&self, action: &'static str, n: usize) {
        let labels = crate::metrics::RuleChangeLabels { action };
        self.ctx.metrics.backend_rule_changes.get_or_create(&labels).inc_by(n as u64);
    }

    /// `awslbc_backend_sg_rules{namespace}`: each namespace's share of the rules; namespaces
    /// whose bindings left are removed.
    fn count_by_namespace(&self, counts: &BTreeMap<String, usize>) {
        let family = &self.ctx.metrics.backend_rules_by_namespace;
        let mut seen = self.namespaces_counted.lock().expect("namespaces");
        for gone in seen.difference(&counts.keys().cloned().collect()) {
            family.remove(&crate::metrics::NamespaceLabels { namespace: gone.clone() });
        }
        for (namespace, n) in counts {
            family.get_or_create(&crate::metrics::NamespaceLabels { namespace: namespace.clone() }).set(*n as i64);
        }
        *seen = counts.keys().cloned().collect();
    }

    /// Problems → gauge, logs, Warning events on the bindings concerned, and the status
    /// condition of bindings whose spec is at fault (or was, and is fixed).
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
                self.ctx.event(&b.tgb.object_ref(&()), true, status::CONDITION, note).await;
            }
        }
        if self.ctx.ensure_leader().is_err() {
            return;
        }
        let faults = spec_faults(problems);
        for b in bindings {
            let fault = faults.get(&b.key).map(|(reason, message)| (*reason, message.as_str()));
            status::write(&self.ctx, &b.tgb, fault).await;
        }
    }
}

/// Per binding, the reason of its first spec problem and every spec problem's text.
fn spec_faults(problems: &[RuleProblem]) -> BTreeMap<String, (&'static str, String)> {
    let mut out: BTreeMap<String, (&'static str, String)> = BTreeMap::new();
    for p in problems.iter().filter(|p| p.is_spec_fault()) {
        let Some(binding) = p.binding() else { continue };
        match out.get_mut(binding) {
            Some((_, message)) => {
                message.push('\n');
                message.push_str(&p.to_string());
            }
            None => {
                out.insert(binding.to_string(), (p.reason(), p.to_string()));
            }
        }
    }
    out
}

/// What [`BackendRules::authorize`] did on one group.
#[derive(Default)]
struct Authorized {
    landed: usize,
    refused: Vec<Refusal>,
}

/// A rule EC2 refused, and why.
struct Refusal {
    rule: IngressRule,
    why: RuleRejection,
    error: lbc_aws::error::AwsError,
}

impl Refusal {
    /// The problem reported on `binding`, one of the rule's owners.
    fn problem(&self, binding: &str, sg: &str) -> RuleProblem {
        match &self.why {
            RuleRejection::SourceGroupNotFound(group) => {
                RuleProblem::PeerNotFound { binding: binding.to_string(), group: group.clone() }
            }
            why => RuleProblem::Rejected {
                binding: binding.to_string(),
                rejection: Box::new(Rejection {
                    sg: sg.to_string(),
                    rule: describe_rule(&self.rule),
                    code: self.error.code.clone().unwrap_or_default(),
                    message: self.error.message.clone(),
                    fix: why.fix().to_string(),
                }),
            },
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
