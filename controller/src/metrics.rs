//! Controller metrics (every name is documented in docs/metrics.md). One registry, served on
//! `--metrics-bind-addr` at `/metrics`.

mod albc;
mod process;

pub use albc::AlbcMetrics;
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

/// Ours (10 ms .. ~20 min) and ALBC's (10 s .. 10 min) boundaries together, so a query written
/// for either one's `le` values finds its bucket.
fn readiness_buckets() -> Histogram {
    let mut b: Vec<f64> = exponential_buckets(0.01, 2.0, 18)
        .chain([10.0, 30.0, 60.0, 120.0, 180.0, 240.0, 300.0, 360.0, 420.0, 480.0, 540.0, 600.0])
        .collect();
    b.sort_by(f64::total_cmp);
    Histogram::new(b)
}

/// How one reconcile ended, in controller-runtime's terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReconcileResult {
    /// Done; next time on a change.
    Success,
    /// Done; again after a delay.
    RequeueAfter,
    /// Failed (retried with backoff).
    Error,
}

impl ReconcileResult {
    /// controller-runtime's `result` label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::RequeueAfter => "requeue_after",
            Self::Error => "error",
        }
    }

    /// The result of a kube-runtime reconcile.
    pub fn of<E>(res: &Result<kube::runtime::controller::Action, E>) -> Self {
        match res {
            Ok(a) if *a == kube::runtime::controller::Action::await_change() => Self::Success,
            Ok(_) => Self::RequeueAfter,
            Err(_) => Self::Error,
        }
    }
}

/// One reconcile in progress (counted in `controller_runtime_active_workers` until dropped).
pub struct ReconcileTimer<'a> {
    metrics: &'a Metrics,
    controller: &'static str,
    start: std::time::Instant,
}

impl ReconcileTimer<'_> {
    /// Records the reconcile's duration and result in our and ALBC's families.
    pub fn done(self, result: ReconcileResult) {
        let secs = self.start.elapsed().as_secs_f64();
        self.metrics.reconcile_duration.get_or_create(&ControllerLabel { controller: self.controller }).observe(secs);
        let Some(name) = albc::controller_name(self.controller) else { return };
        let a = &self.metrics.albc;
        let c = albc::ControllerLabel { controller: name };
        a.reconcile_time.get_or_create(&c).observe(secs);
        a.reconcile_total.get_or_create(&albc::ResultLabels { controller: name, result: result.label() }).inc();
        if result == ReconcileResult::Error {
            a.cr_reconcile_errors.get_or_create(&c).inc();
        }
        let q = albc::QueueLabels { name, controller: name };
        a.work_duration.get_or_create(&q).observe(secs);
        if result != ReconcileResult::Success {
            a.queue_retries.get_or_create(&q).inc();
        }
    }
}

impl Drop for ReconcileTimer<'_> {
    fn drop(&mut self) {
        if let Some(name) = albc::controller_name(self.controller) {
            self.metrics.albc.active_workers.get_or_create(&albc::ControllerLabel { controller: name }).dec();
        }
    }
}

/// All controller metrics; cheap to clone.
#[derive(Clone)]
pub struct Metrics {
    pub reconcile_duration: H,
    pub reconcile_errors: Family<ErrorLabels, Counter>,
    pub endpoint_to_register: Histogram,
    pub terminating_to_deregister: Histogram,
    pub registered_to_healthy: Histogram,
    /// ALBC's family and labels (`namespace`, `name` of the binding).
    pub readiness_gate_ready: Family<TgbLabels, Histogram, fn() -> Histogram>,
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
    /// ALBC's families not shared with ours; fed only through the methods below.
    pub albc: AlbcMetrics,
    registry: Arc<std::sync::Mutex<Option<Registry>>>,
}

impl Metrics {
    /// Starts timing one reconcile of `controller`; [`ReconcileTimer::done`] records it.
    pub fn reconcile_started(&self, controller: &'static str) -> ReconcileTimer<'_> {
        if let Some(name) = albc::controller_name(controller) {
            self.albc.active_workers.get_or_create(&albc::ControllerLabel { controller: name }).inc();
        }
        ReconcileTimer { metrics: self, controller, start: std::time::Instant::now() }
    }

    /// A failed reconcile of `controller` (ours: `awslbc_reconcile_errors_total`; ALBC's:
    /// `awslbc_controller_reconcile_errors_total`, with our error category as `error_category`).
    pub fn reconcile_failed(&self, controller: &'static str, category: &'static str) {
        self.reconcile_errors.get_or_create(&ErrorLabels { controller, category }).inc();
        if let Some(name) = albc::controller_name(controller) {
            self.albc
                .reconcile_errors
                .get_or_create(&albc::ErrorLabels { controller: name, error_category: category })
                .inc();
        }
    }

    /// Duration of one stage of a reconcile, named as ALBC names its stages.
    pub fn reconcile_stage(&self, controller: &'static str, stage: &'static str, start: std::time::Instant) {
        if let Some(name) = albc::controller_name(controller) {
            self.albc
                .stage_duration
                .get_or_create(&albc::StageLabels { controller: name, reconcile_stage: stage })
                .observe(start.elapsed().as_secs_f64());
        }
    }

    /// A controller starts with `workers` reconcile workers. Like controller-runtime, its
    /// per-controller series start at 0 here, so alerts on them see a value, not an absence.
    pub fn set_concurrency(&self, controller: &'static str, workers: u16) {
        let Some(name) = albc::controller_name(controller) else { return };
        let a = &self.albc;
        let c = albc::ControllerLabel { controller: name };
        a.max_concurrent.get_or_create(&c).set(i64::from(workers));
        let _ = a.active_workers.get_or_create(&c);
        let _ = a.cr_reconcile_errors.get_or_create(&c);
        for result in ["success", "error", "requeue", "requeue_after"] {
            let _ = a.reconcile_total.get_or_create(&albc::ResultLabels { controller: name, result });
        }
        let _ = a.queue_retries.get_or_create(&albc::QueueLabels { name, controller: name });
    }

    /// Whether this replica leads; `lease`: the lease's name when leaders are elected.
    pub fn set_leader(&self, lease: Option<&str>, leading: bool) {
        self.leader.set(i64::from(leading));
        if let Some(name) = lease {
            self.albc.leader.get_or_create(&albc::NameLabel { name: name.to_string() }).set(i64::from(leading));
        }
    }

    /// Objects in the watch cache of `resource` (ours: plural resource names).
    pub fn set_cache_objects(&self, resource: &'static str, objects: usize) {
        self.cache_objects.get_or_create(&ResourceLabel { resource }).set(objects as i64);
        if let Some(r) = albc::cache_resource(resource) {
            self.albc.cache_objects.get_or_create(&albc::ResourceLabel { resource: r }).set(objects as i64);
        }
    }

    /// TargetGroupBindings with endpoint changes not yet reconciled (the binding queue's depth).
    pub fn set_pending_reconciles(&self, pending: usize) {
        self.pending_reconciles.set(pending as i64);
        let name = "targetGroupBinding";
        self.albc
            .queue_depth
            .get_or_create(&albc::QueueDepthLabels { name, controller: name, priority: "0" })
            .set(pending as i64);
    }

    /// From a target's registration to its pod's readiness gate turning True, for binding
    /// `namespace/name`.
    pub fn readiness_gate_ready(&self, namespace: &str, name: &str, secs: f64) {
        self.readiness_gate_ready
            .get_or_create(&TgbLabels { namespace: namespace.to_string(), name: name.to_string() })
            .observe(secs);
    }

    /// A TargetGroupBinding of a Service or Ingress of ours exists (`true`) or was deleted, with
    /// its Service and target group ARN (ALBC's `aws_target_group_info`).
    pub fn target_group_binding(&self, namespace: &str, service: &str, arn: &str, exists: bool) {
        let labels = albc::TargetGroupInfoLabels {
            namespace: namespace.to_string(),
            service: service.to_string(),
            target_group: albc::target_group_dimension(arn).to_string(),
        };
        if exists {
            self.albc.target_group_info.get_or_create(&labels).set(1);
        } else {
            self.albc.target_group_info.remove(&labels);
        }
    }

    pub fn new() -> Self {
        let m = Self {
            reconcile_duration: Family::new_with_constructor(reconcile_buckets),
            reconcile_errors: Family::default(),
            endpoint_to_register: latency_buckets(),
            terminating_to_deregister: latency_buckets(),
            registered_to_healthy: latency_buckets(),
            readiness_gate_ready: Family::new_with_constructor(readiness_buckets),
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
            albc: AlbcMetrics::default(),
            registry: Default::default(),
        };
        let mut r = Registry::default();
        m.aws.register(&mut r);
        m.albc.register(&mut r);
        r.register_collector(Box::new(process::ProcessCollector));
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
