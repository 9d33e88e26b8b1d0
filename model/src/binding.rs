//! The TargetGroupBinding reconciler's decisions around the plan ([`crate::plan`]): which
//! readiness-gate condition each gated pod gets and whether it needs a patch, what Ready status a
//! sync writes and whether it differs from the binding's, which targets a deleted binding
//! deregisters, the multi-cluster owned-target set, when to sync again, and which bindings a
//! watch event wakes. The controller reads its caches and AWS, asks these functions, and carries
//! out the answer.

use crate::checkpoint::StatusChange;
use crate::crd::TargetGroupBinding;
use crate::endpoints::DesiredTargets;
use crate::names::tgb_of_readiness_gate;
use crate::plan::Plan;
use crate::pod::CurrentCondition;
use crate::readiness::GateCondition;
use crate::target::{HealthState, Target, TargetHealth};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::Duration;

/// The binding condition type this controller owns.
pub const READY: &str = "Ready";

// ---------------------------------------------------------------------------------------------
// Readiness gates

/// Gated pods whose gate condition is not True yet, with their targets.
pub fn pending_gates(desired: &DesiredTargets) -> Vec<(Target, &str)> {
    desired
        .targets
        .iter()
        .filter_map(|(t, p)| {
            p.as_ref().filter(|p| p.gated && p.gate_status.as_deref() != Some("True")).map(|p| (*t, p.name.as_str()))
        })
        .collect()
}

/// Targets we registered that AWS last showed `initial` and that no pending gate watches: polled
/// until they settle, for the targets-by-state gauges and the registered-to-healthy latency.
pub fn settling_targets(registered: Option<&BTreeMap<Target, TargetHealth>>, gated: &HashSet<Target>) -> Vec<Target> {
    registered
        .into_iter()
        .flatten()
        .filter(|(t, h)| h.state == HealthState::Initial && !gated.contains(t))
        .map(|(t, _)| *t)
        .collect()
}

/// The condition a pending gated pod gets.
///
/// `not_registered`: AWS's answer when this pass's health poll found the target not registered
/// (deregistered out of band); `known`: the health we hold for it; `just_registered`: this
/// pass registered it. AWS's own answer wins; a target just registered, or never described,
/// shows "registration in progress".
pub fn gate_condition(
    not_registered: Option<&TargetHealth>,
    known: Option<&TargetHealth>,
    just_registered: bool,
) -> GateCondition {
    match (not_registered, known, just_registered) {
        (Some(h), _, _) => GateCondition::from_health(h),
        (None, _, true) | (None, None, false) => GateCondition::registering(),
        (None, Some(h), false) => GateCondition::from_health(h),
    }
}

/// A pod condition patch to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatePatch {
    /// The condition's status changes (a new `lastTransitionTime`).
    pub status_changed: bool,
    /// The `lastTransitionTime` to keep (`None`: now).
    pub keep_transition: Option<Time>,
}

/// Whether a pod whose gate currently reads `current` needs a patch to show `want`; `None` when it
/// already shows it (a healthy steady state sends no patch).
pub fn gate_patch(want: &GateCondition, current: Option<&CurrentCondition>) -> Option<GatePatch> {
    if !want.differs_from(current.map(CurrentCondition::parts)) {
        return None;
    }
    let status_changed = current.map(|c| &*c.status) != Some(want.status);
    let keep_transition = if status_changed { None } else { current.and_then(|c| c.last_transition_time.clone()) };
    Some(GatePatch { status_changed, keep_transition })
}

// ---------------------------------------------------------------------------------------------
// Binding status

/// The Ready condition (and counts) a sync wants the binding to show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadyStatus {
    pub ready: bool,
    pub reason: String,
    pub message: String,
    /// (registered, healthy) targets; `None`: leave the counts as they are.
    pub counts: Option<(i32, i32)>,
}

impl ReadyStatus {
    /// Ready=False for a problem that stops the sync; counts untouched.
    pub fn not_ready(reason: &str, message: &str) -> Self {
        Self { ready: false, reason: reason.to_string(), message: message.to_string(), counts: None }
    }

    pub fn status(&self) -> &'static str {
        if self.ready { "True" } else { "False" }
    }
}

/// The binding's Ready condition, as cached.
pub fn current_ready(tgb: &TargetGroupBinding) -> Option<&Condition> {
    tgb.status.as_ref().and_then(|s| s.conditions.iter().find(|c| c.type_ == READY))
}

/// Whether the binding's Ready condition (as cached) is True.
pub fn is_ready(tgb: &TargetGroupBinding) -> bool {
    current_ready(tgb).is_some_and(|c| c.status == "True")
}

/// How `want` differs from the binding's status: its condition (status, reason, observed
/// generation), only its counts (and the message quoting them), or not at all.
pub fn status_change(tgb: &TargetGroupBinding, want: &ReadyStatus) -> StatusChange {
    let cur = current_ready(tgb);
    let st = tgb.status.as_ref();
    let condition_same = cur.is_some_and(|c| c.status == want.status() && c.reason == want.reason)
        && st.and_then(|s| s.observed_generation) == tgb.metadata.generation;
    if !condition_same {
        return StatusChange::Condition;
    }
    let counts_same = cur.is_some_and(|c| c.message == want.message)
        && want.counts.is_none_or(|(r, h)| {
            st.and_then(|s| s.registered_targets) == Some(r) && st.and_then(|s| s.healthy_targets) == Some(h)
        });
    if counts_same { StatusChange::None } else { StatusChange::Counts }
}

/// The `lastTransitionTime` the Ready condition keeps when `want` is written (`None`: now).
pub fn ready_transition(tgb: &TargetGroupBinding, want: &ReadyStatus) -> Option<Time> {
    current_ready(tgb).filter(|c| c.status == want.status()).map(|c| c.last_transition_time.clone())
}

/// The status after a successful sync: counts from what is registered, Ready unless pod IPs
/// outside the VPC were left out.
pub fn synced_status(
    registered: &BTreeMap<Target, TargetHealth>,
    desired: &DesiredTargets,
    plan: &Plan,
) -> ReadyStatus {
    let total = registered.values().filter(|h| h.state.is_registered()).count() as i32;
    let healthy = registered.values().filter(|h| h.state == HealthState::Healthy).count() as i32;
    let mut message = format!("{total} targets registered for {} endpoints", desired.targets.len());
    if desired.stats.not_ready > 0 {
        message.push_str(&format!("; {} endpoints not ready", desired.stats.not_ready));
    }
    if !plan.outside_vpc.is_empty() {
        message.push_str(&format!("; {} pod IPs outside the VPC not registered", plan.outside_vpc.len()));
    }
    let ready = plan.outside_vpc.is_empty();
    let reason = if ready { "Synced" } else { "SyncedWithOverlayIPs" };
    ReadyStatus { ready, reason: reason.to_string(), message, counts: Some((total, healthy)) }
}

// ---------------------------------------------------------------------------------------------
// Deletion and multi-cluster ownership

/// What a deleted binding deregisters: every target of the group not already draining; with
/// `owned` (multi-cluster), only the targets this cluster recorded as its own.
pub fn deletion_targets(
    registered: impl IntoIterator<Item = (Target, HealthState)>,
    owned: Option<&BTreeSet<Target>>,
) -> Vec<Target> {
    registered
        .into_iter()
        .filter(|(t, s)| !s.is_draining() && owned.is_none_or(|o| o.contains(t)))
        .map(|(t, _)| t)
        .collect()
}

/// The multi-cluster owned set after adding and removing targets. Recorded with the planned
/// registrations added before they are written (a crash in between leaves no target that no
/// cluster claims), and with what was written afterwards.
pub fn owned_after<'a>(
    owned: &BTreeSet<Target>,
    added: impl IntoIterator<Item = &'a Target>,
    removed: impl IntoIterator<Item = &'a Target>,
) -> BTreeSet<Target> {
    let mut next = owned.clone();
    next.extend(added);
    for t in removed {
        next.remove(t);
    }
    next
}

/// The owned-target ConfigMap value (`targets` key: comma-separated `ip:port`, and
/// `ip:port:0x<server ID>` for QUIC targets, as ALBC keeps it); entries that are not a target are
/// skipped.
pub fn parse_owned_targets(raw: &str) -> BTreeSet<Target> {
    raw.split(',').filter_map(|s| parse_target(s.trim())).collect()
}

/// The ConfigMap value for an owned set ([`parse_owned_targets`] reads it back).
pub fn owned_targets_value(targets: &BTreeSet<Target>) -> String {
    let one = |t: &Target| {
        let plain = Target { quic: None, ..*t }.to_string();
        match t.quic {
            Some(id) => format!("{plain}:{id}"),
            None => plain,
        }
    };
    targets.iter().map(one).collect::<Vec<_>>().join(",")
}

fn parse_target(s: &str) -> Option<Target> {
    let (rest, last) = s.rsplit_once(':')?;
    let (s, quic) = match last.starts_with("0x") {
        true => (rest, Some(crate::target::QuicServerId::parse_aws(last).ok()?)),
        false => (s, None),
    };
    let (ip, port) = s.rsplit_once(':')?;
    let ip = ip.trim_start_matches('[').trim_end_matches(']');
    Some(Target { ip: ip.parse().ok()?, port: port.parse().ok()?, quic })
}

// ---------------------------------------------------------------------------------------------
// Scheduling

/// Never sync again sooner than this after a sync (a hot loop guard).
pub const MIN_RESYNC: Duration = Duration::from_millis(200);

/// What a finished sync knows about when to run again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextSync {
    /// Gated pods whose condition is still not True.
    pub gates_pending: usize,
    /// Registered targets still `initial`.
    pub settling: usize,
    /// When the next health poll is due.
    pub poll_in: Duration,
    /// When the next verification against AWS is due (`None`: not scheduled).
    pub verify_in: Option<Duration>,
    pub sync_period: Duration,
    /// A write-back held back for a sync this soon ([`crate::checkpoint::write_back`]).
    pub write_back_in: Option<Duration>,
}

/// When to sync again: at the health poll while gates are pending or targets settle, else at
/// the verification; sooner for a held-back write-back; never sooner than [`MIN_RESYNC`].
pub fn next_sync(n: &NextSync) -> Duration {
    let next = if n.gates_pending > 0 || n.settling > 0 { n.poll_in } else { n.verify_in.unwrap_or(n.sync_period) };
    n.write_back_in.map_or(next, |d| next.min(d)).max(MIN_RESYNC)
}

// ---------------------------------------------------------------------------------------------
// Which bindings a watch event wakes

/// Whether `tgb` binds Service `ns/svc` (a Service or EndpointSlice change there wakes it).
pub fn binds_service(tgb: &TargetGroupBinding, ns: &str, svc: &str) -> bool {
    tgb.metadata.namespace.as_deref() == Some(ns) && tgb.spec.service_ref.name == svc
}

/// Bindings (names, in the pod's namespace) whose readiness gates a pod carries: a change of
/// the pod wakes them.
pub fn bindings_gating<'a>(gate_condition_types: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    gate_condition_types.into_iter().filter_map(tgb_of_readiness_gate).collect()
}

/// Services (in the binding's namespace) that own `tgb`: a change of the binding wakes their
/// controller.
pub fn owner_services(tgb: &TargetGroupBinding) -> Vec<&str> {
    let owners = tgb.metadata.owner_references.iter().flatten();
    owners.filter(|r| r.kind == "Service").map(|r| r.name.as_str()).collect()
}

/// The ALBC Ingress stack labels of `tgb` (`ingress.k8s.aws/stack*`): when any, a change of the
/// binding wakes the IngressGroups carrying them.
pub fn ingress_stack_labels(tgb: &TargetGroupBinding) -> BTreeMap<String, String> {
    let labels = tgb.metadata.labels.iter().flatten();
    labels.filter(|(k, _)| k.starts_with("ingress.k8s.aws/stack")).map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// The ALB Gateway (namespace, name) whose stack labels a binding carries
/// (`gateway.k8s.aws.alb/stack-namespace` and `-name`), if it carries both.
pub fn gateway_stack(tgb: &TargetGroupBinding) -> Option<(String, String)> {
    let labels = tgb.metadata.labels.as_ref()?;
    let prefix = crate::gateway::alb_gateway::ALB_GATEWAY_TAG_PREFIX;
    let get = |k: &str| labels.get(&format!("{prefix}/{k}")).cloned();
    Some((get("stack-namespace")?, get("stack-name")?))
}

#[cfg(test)]
mod tests;
