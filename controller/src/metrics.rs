//! Controller metrics (every name is documented in docs/metrics.md). One registry, served on
//! `--metrics-bind-addr` at `/metrics`.

use lbc_aws::metrics::AwsMetrics;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::Arc;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabel {
    pub controller: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    pub controller: &'static str,
    pub category: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TgbLabels {
    pub namespace: String,
    pub name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TargetStateLabels {
    pub namespace: String,
    pub name: String,
    pub state: &'static str,
}

/// `authorize` or `revoke`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RuleChangeLabels {
    pub action: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResourceLabel {
    pub resource: &'static str,
}

type H = Family<ControllerLabel, Histogram, fn() -> Histogram>;

fn reconcile_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// Seconds-scale latencies: 10 ms .. ~20 min.
fn latency_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.01, 2.0, 18))
}

/// All controller metrics; cheap to clone.
#[derive(Clone)]
pub struct Metrics {
    pub reconcile_duration: H,
    pub reconcile_errors: Family<ErrorLabels, Counter>,
    pub endpoint_to_register: Histogram,
    pub terminating_to_deregister: Histogram,
    pub registered_to_healthy: Histogram,
    pub readiness_gate_ready: Histogram,
    pub targets: Family<TargetStateLabels, Gauge>,
    pub deregister_all_refused: Family<TgbLabels, Counter>,
    pub targets_outside_vpc: Family<TgbLabels, Gauge>,
    pub pod_condition_patches: Counter,
    pub reconcile_skipped_checkpoint: Counter,
    pub status_writes_deferred: Counter,
    pub leader: Gauge,
    pub pending_reconciles: Gauge,
    pub cache_objects: Family<ResourceLabel, Gauge>,
    pub cache_relists: Family<ResourceLabel, Counter>,
    pub backend_rule_changes: Family<RuleChangeLabels, Counter>,
    pub backend_rule_problems: Gauge,
    pub aws: AwsMetrics,
    registry: Arc<std::sync::Mutex<Option<Registry>>>,
}

impl Metrics {
    /// Records one reconcile of `controller` that began at `start`.
    pub fn observe_reconcile(&self, controller: &'static str, start: std::time::Instant) {
        self.reconcile_duration.get_or_create(&ControllerLabel { controller }).observe(start.elapsed().as_secs_f64());
    }

    pub fn new() -> Self {
        let m = Self {
            reconcile_duration: Family::new_with_constructor(reconcile_buckets),
            reconcile_errors: Family::default(),
            endpoint_to_register: latency_buckets(),
            terminating_to_deregister: latency_buckets(),
            registered_to_healthy: latency_buckets(),
            readiness_gate_ready: latency_buckets(),
            targets: Family::default(),
            deregister_all_refused: Family::default(),
            targets_outside_vpc: Family::default(),
            pod_condition_patches: Counter::default(),
            reconcile_skipped_checkpoint: Counter::default(),
            status_writes_deferred: Counter::default(),
            leader: Gauge::default(),
            pending_reconciles: Gauge::default(),
            cache_objects: Family::default(),
            cache_relists: Family::default(),
            backend_rule_changes: Family::default(),
            backend_rule_problems: Gauge::default(),
            aws: AwsMetrics::default(),
            registry: Default::default(),
        };
        let mut r = Registry::default();
        m.aws.register(&mut r);
        let a = r.sub_registry_with_prefix("awslbc");
        a.register("reconcile_duration_seconds", "Duration of one reconcile", m.reconcile_duration.clone());
        a.register("reconcile_errors", "Failed reconciles by error category", m.reconcile_errors.clone());
        a.register(
            "endpoint_to_register_seconds",
            "From the first EndpointSlice change seen for a binding to the RegisterTargets call that follows",
            m.endpoint_to_register.clone(),
        );
        a.register(
            "terminating_to_deregister_seconds",
            "From the first EndpointSlice change seen for a binding to the DeregisterTargets call that follows",
            m.terminating_to_deregister.clone(),
        );
        a.register(
            "registered_to_healthy_seconds",
            "From RegisterTargets to the first health read that reports the target healthy",
            m.registered_to_healthy.clone(),
        );
        a.register(
            "readiness_gate_ready_seconds",
            "From a target's registration to its pod's readiness gate turning True",
            m.readiness_gate_ready.clone(),
        );
        a.register("targets", "Targets per binding by AWS health state", m.targets.clone());
        a.register(
            "deregister_all_refused",
            "Plans refused because they would deregister every target while endpoints still exist",
            m.deregister_all_refused.clone(),
        );
        a.register(
            "targets_outside_vpc",
            "Pod IPs outside the VPC CIDRs (overlay addresses), not registered",
            m.targets_outside_vpc.clone(),
        );
        a.register("pod_condition_patches", "Readiness-gate condition patches sent", m.pod_condition_patches.clone());
        a.register(
            "reconcile_skipped_checkpoint",
            "Reconciles that made no AWS call because the checkpoint showed the target group in sync",
            m.reconcile_skipped_checkpoint.clone(),
        );
        a.register(
            "status_writes_deferred",
            "Counts-only TargetGroupBinding status writes left to an already queued follow-up sync",
            m.status_writes_deferred.clone(),
        );
        a.register("leader", "1 while this replica holds the leader lease", m.leader.clone());
        a.register(
            "pending_reconciles",
            "Bindings with endpoint changes not yet reconciled",
            m.pending_reconciles.clone(),
        );
        a.register("cache_objects", "Objects held in each watch cache", m.cache_objects.clone());
        a.register(
            "cache_relists",
            "Full relists of a watch cache after its watch could not resume (410 Gone, API server restart)",
            m.cache_relists.clone(),
        );
        a.register(
            "backend_sg_rule_changes",
            "Backend security-group ingress rules (TargetGroupBinding spec.networking) authorized or revoked",
            m.backend_rule_changes.clone(),
        );
        a.register(
            "backend_sg_rule_problems",
            "Problems of the last backend security-group rules pass (unknown ENIs, ambiguous ENI groups, bad ports)",
            m.backend_rule_problems.clone(),
        );
        *m.registry.lock().expect("registry lock") = Some(r);
        m
    }

    /// Renders the OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if let Some(r) = self.registry.lock().expect("registry lock").as_ref() {
            let _ = prometheus_client::encoding::text::encode(&mut out, r);
        }
        out
    }

    /// Registers more metrics (e.g. the webhook's) in the shared registry.
    pub fn with_registry(&self, f: impl FnOnce(&mut Registry)) {
        if let Some(r) = self.registry.lock().expect("registry lock").as_mut() {
            f(r);
        }
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
