//! Controller metrics (every name is documented in docs/metrics.md). One registry, served on
//! `--metrics-bind-addr` at `/metrics`.

mod albc;
mod process;

pub use albc::{AlbcMetrics, RestLabels};
use lbc_aws::metrics::AwsMetrics;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::exemplar::HistogramWithExemplars;
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
pub struct NamespaceLabels {
    pub namespace: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResourceLabel {
    pub resource: &'static str,
}

/// `aws_lb_controller_build_info`'s labels: what this binary is ([`crate::build_info`]).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BuildInfoLabels {
    pub version: &'static str,
    pub revision: &'static str,
    pub tree_state: &'static str,
    pub rustc: &'static str,
}

impl BuildInfoLabels {
    fn of_this_binary() -> Self {
        use crate::build_info::{REVISION, RUSTC, TREE_STATE, VERSION};
        Self { version: VERSION, revision: REVISION, tree_state: TREE_STATE, rustc: RUSTC }
    }
}

/// Exemplar of a histogram bucket: the trace of the observation (`--otlp-endpoint` set and the
/// trace sampled), so Grafana links a slow bucket to its trace in Tempo.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TraceExemplar {
    pub trace_id: String,
}

impl TraceExemplar {
    /// The trace `span` belongs to, when it is exported.
    pub fn of(span: &tracing::Span) -> Option<Self> {
        crate::telemetry::sampled_trace_id(span).map(|trace_id| Self { trace_id })
    }
}

/// A histogram whose buckets carry [`TraceExemplar`]s.
pub type TracedHistogram = HistogramWithExemplars<TraceExemplar>;

type H = Family<ControllerLabel, TracedHistogram, fn() -> TracedHistogram>;

fn reconcile_buckets() -> TracedHistogram {
    TracedHistogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// Seconds-scale latencies: 10 ms .. ~20 min.
fn latency_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.01, 2.0, 18))
}

/// [`latency_buckets`] with exemplars.
fn traced_latency_buckets() -> TracedHistogram {
    TracedHistogram::new(exponential_buckets(0.01, 2.0, 18))
}

/// ALBC's boundaries (10 s .. 10 min), so its queries' `le` values find their buckets, with a few
/// below 10 s for gates that turn in seconds. Per binding, like ALBC's: kept short.
fn readiness_buckets() -> Histogram {
    Histogram::new([
        0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 180.0, 240.0, 300.0, 360.0, 420.0, 480.0, 540.0, 600.0,
    ])
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

impl Metrics {
    /// Runs one reconcile pass; a panic in it becomes [`crate::error::Error::Internal`] (so the
    /// object is retried with backoff) and is counted in
    /// `controller_runtime_reconcile_panics_total{controller}`, as controller-runtime recovers a
    /// reconciler's panic: one object's bug never stops its controller's other objects.
    pub async fn recover_panics<T>(
        &self,
        controller: &'static str,
        pass: impl std::future::Future<Output = crate::error::Result<T>>,
    ) -> crate::error::Result<T> {
        use futures::FutureExt;
        match std::panic::AssertUnwindSafe(pass).catch_unwind().await {
            Ok(res) => res,
            Err(panic) => {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic without a message".into());
                tracing::error!(controller, panic = %message, "reconcile panicked; the object is retried with backoff");
                if let Some(name) = albc::controller_name(controller) {
                    self.albc.reconcile_panics.get_or_create(&albc::ControllerLabel { controller: name }).inc();
                }
                Err(crate::error::Error::Internal(format!("reconcile panicked (a bug in the controller): {message}")))
            }
        }
    }
}

/// One reconcile in progress (counted in `controller_runtime_active_workers` until dropped), and
/// its trace span.
pub struct ReconcileTimer<'a> {
    metrics: &'a Metrics,
    controller: &'static str,
    start: std::time::Instant,
    id: u64,
    span: tracing::Span,
}

impl ReconcileTimer<'_> {
    /// The reconcile's span (`reconcile`, the root of its trace): run the reconcile in it
    /// (`.instrument(timer.span())`) so its AWS calls, Kubernetes writes and log lines are its children.
    pub fn span(&self) -> tracing::Span {
        self.span.clone()
    }

    /// Records the reconcile's duration and result in our and ALBC's families, and its outcome
    /// on its span.
    pub fn done(self, result: ReconcileResult) {
        let secs = self.start.elapsed().as_secs_f64();
        self.span.record("outcome", result.label());
        if result == ReconcileResult::Error {
            self.span.record("otel.status_code", "ERROR");
        }
        self.metrics.reconcile_duration.get_or_create(&ControllerLabel { controller: self.controller }).observe(
            secs,
            TraceExemplar::of(&self.span),
            Some(std::time::SystemTime::now()),
        );
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
        self.metrics.albc.activity.lock().expect("activity lock").end(self.id);
        if let Some(name) = albc::controller_name(self.controller) {
            self.metrics.albc.active_workers.get_or_create(&albc::ControllerLabel { controller: name }).dec();
        }
    }
}

/// The states `awslbc_targets` reports (AWS's others count as the nearest of these).
pub const TARGET_STATES: [lbc_model::target::HealthState; 5] = {
    use lbc_model::target::HealthState::*;
    [Initial, Healthy, Unhealthy, Draining, Unavailable]
};

/// All controller metrics; cheap to clone.
#[derive(Clone)]
pub struct Metrics {
    pub reconcile_duration: H,
    pub reconcile_errors: Family<ErrorLabels, Counter>,
    pub endpoint_to_register: TracedHistogram,
    pub terminating_to_deregister: Histogram,
    /// How long a binding's reconcile was held back so its next write carries more targets.
    pub write_pacing: Histogram,
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
    /// Backend security-group rules each namespace's bindings want (its share of the quota).
    pub backend_rules_by_namespace: Family<NamespaceLabels, Gauge>,
    pub aws: AwsMetrics,
    /// ALBC's families not shared with ours; fed only through the methods below.
    pub albc: AlbcMetrics,
    registry: Arc<std::sync::Mutex<Option<Registry>>>,
}

impl Metrics {
    /// Starts timing one reconcile of `controller` for object `namespace/name` (an IngressGroup:
    /// its namespace, empty for an explicit group, and name); [`ReconcileTimer::done`] records it.
    pub fn reconcile_started(&self, controller: &'static str, namespace: &str, name: &str) -> ReconcileTimer<'_> {
        let albc_name = albc::controller_name(controller);
        if let Some(name) = albc_name {
            self.albc.active_workers.get_or_create(&albc::ControllerLabel { controller: name }).inc();
        }
        let id = {
            let mut activity = self.albc.activity.lock().expect("activity lock");
            if let Some(albc) = albc_name {
                let q = albc::QueueLabels { name: albc, controller: albc };
                match activity.dequeued(albc, namespace, name) {
                    Some(waited) => self.albc.queue_duration.get_or_create(&q).observe(waited.as_secs_f64()),
                    // A requeue after a delay: client-go adds it when it is due, which is now.
                    None => {
                        self.albc.queue_adds.get_or_create(&q).inc();
                        self.albc.queue_duration.get_or_create(&q).observe(0.0);
                    }
                }
            }
            activity.start(albc_name, controller, namespace, name)
        };
        let object = if namespace.is_empty() { name.to_string() } else { format!("{namespace}/{name}") };
        // A root: each reconcile is its own trace, whatever span the caller runs in.
        let span_name = format!("reconcile {controller}");
        let span = tracing::info_span!(
            parent: None,
            "reconcile",
            otel.name = span_name.as_str(),
            otel.status_code = tracing::field::Empty,
            controller,
            object = object.as_str(),
            outcome = tracing::field::Empty,
        );
        ReconcileTimer { metrics: self, controller, start: std::time::Instant::now(), id, span }
    }

    /// A trigger for `namespace/name` of `controller` reached its queue (`workqueue_adds_total`
    /// unless it already waits; its wait ends at [`Metrics::reconcile_started`]).
    pub fn queued(&self, controller: &'static str, namespace: &str, name: &str) {
        let Some(albc) = albc::controller_name(controller) else { return };
        if self.albc.activity.lock().expect("activity lock").queued(albc, namespace, name) {
            self.albc.queue_adds.get_or_create(&albc::QueueLabels { name: albc, controller: albc }).inc();
        }
    }

    /// Every [`albc::TOP_TALKERS_EVERY`], like ALBC: the objects reconciled most since the last
    /// pick become `awslbc_controller_top_talkers` (replacing the previous pick).
    pub async fn pick_top_talkers_forever(&self) {
        let mut tick = tokio::time::interval(albc::TOP_TALKERS_EVERY);
        tick.tick().await;
        loop {
            tick.tick().await;
            self.pick_top_talkers();
        }
    }

    pub fn pick_top_talkers(&self) {
        let top = self.albc.activity.lock().expect("activity lock").pick_top_talkers();
        self.albc.top_talkers.clear();
        for (labels, n) in top {
            self.albc.top_talkers.get_or_create(&labels).set(n as i64);
        }
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
        // Every failure category at 0 (NotLeader is never counted as a failure).
        for category in crate::error::Error::categories() {
            let _ = self.reconcile_errors.get_or_create(&ErrorLabels { controller, category });
        }
        let Some(name) = albc::controller_name(controller) else { return };
        for category in crate::error::Error::categories() {
            let _ = self
                .albc
                .reconcile_errors
                .get_or_create(&albc::ErrorLabels { controller: name, error_category: category });
        }
        let a = &self.albc;
        a.activity.lock().expect("activity lock").known.insert(name);
        let c = albc::ControllerLabel { controller: name };
        a.max_concurrent.get_or_create(&c).set(i64::from(workers));
        let _ = a.active_workers.get_or_create(&c);
        let _ = a.cr_reconcile_errors.get_or_create(&c);
        let _ = a.reconcile_panics.get_or_create(&c);
        let _ = a.terminal_reconcile_errors.get_or_create(&c);
        let _ = a.reconcile_timeouts.get_or_create(&c);
        for result in ["success", "error", "requeue", "requeue_after"] {
            let _ = a.reconcile_total.get_or_create(&albc::ResultLabels { controller: name, result });
        }
        let q = albc::QueueLabels { name, controller: name };
        let _ = a.queue_retries.get_or_create(&q);
        let _ = a.queue_adds.get_or_create(&q);
        let _ = a.queue_duration.get_or_create(&q);
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

    /// A binding is being reconciled: its per-binding counters exist from now on at 0, so the first
    /// event is an increase Prometheus sees (a series born at 1 shows no `increase()`, and the
    /// deregister-all alert would miss the first refusal).
    pub fn binding_seen(&self, labels: &TgbLabels) {
        let _ = self.deregister_all_refused.get_or_create(labels);
        let _ = self.targets_outside_vpc.get_or_create(labels);
    }

    /// `n` targets of QUIC binding `namespace/name` left out for want of a server ID.
    pub fn quic_target_missing_server_id(&self, namespace: &str, name: &str, n: usize) {
        let labels = TgbLabels { namespace: namespace.to_string(), name: name.to_string() };
        self.albc.quic_missing_server_id.get_or_create(&labels).inc_by(n as u64);
    }

    /// A binding is gone: its per-binding series go too (else every deleted binding's series stays
    /// exported until the process restarts).
    pub fn forget_binding(&self, labels: &TgbLabels) {
        self.deregister_all_refused.remove(labels);
        self.targets_outside_vpc.remove(labels);
        self.readiness_gate_ready.remove(labels);
        self.albc.quic_missing_server_id.remove(labels);
        for state in TARGET_STATES {
            self.targets.remove(&TargetStateLabels {
                namespace: labels.namespace.clone(),
                name: labels.name.clone(),
                state: state.as_str(),
            });
        }
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
            endpoint_to_register: traced_latency_buckets(),
            terminating_to_deregister: latency_buckets(),
            write_pacing: latency_buckets(),
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
            backend_rules_by_namespace: Family::default(),
            aws: AwsMetrics::default(),
            albc: AlbcMetrics::default(),
            registry: Default::default(),
        };
        let mut r = Registry::default();
        m.aws.register(&mut r);
        m.albc.register(&mut r);
        r.register_collector(Box::new(process::ProcessCollector));
        let build_info = Family::<BuildInfoLabels, Gauge>::default();
        build_info.get_or_create(&BuildInfoLabels::of_this_binary()).set(1);
        r.register(
            "aws_lb_controller_build_info",
            "Always 1; the labels say which build this process runs",
            build_info,
        );
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
            "write_pacing_seconds",
            "How long a binding that wrote targets a moment ago waited before its next reconcile while the \
             shared RegisterTargets/DeregisterTargets bucket drains, so its next call carries more targets",
            m.write_pacing.clone(),
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
        a.register(
            "backend_sg_rules",
            "Backend security-group rules (security group, rule) the namespace's TargetGroupBindings want; a rule \
             several namespaces want counts for each: who fills a shared group's rule quota",
            m.backend_rules_by_namespace.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(text: &str, prefix: &str) -> Option<f64> {
        text.lines().find_map(|l| l.strip_prefix(prefix)?.trim().parse().ok())
    }

    #[tokio::test]
    async fn a_panicking_pass_is_an_internal_error_counted_as_controller_runtime_counts_it() {
        let m = Metrics::new();
        m.set_concurrency("service", 2);
        let ok = m.recover_panics("service", async { Ok::<_, crate::error::Error>(7) }).await;
        assert_eq!(ok.unwrap(), 7);
        let boom = m.recover_panics("service", async { panic!("index out of bounds at web") }).await;
        let err: Result<(), _> = boom;
        let err = err.unwrap_err();
        assert_eq!(err.category(), "internal");
        assert!(err.to_string().contains("index out of bounds at web"), "{err}");
        let text = m.encode();
        assert_eq!(sample(&text, "controller_runtime_reconcile_panics_total{controller=\"service\"}"), Some(1.0));
        for zero in
            ["controller_runtime_terminal_reconcile_errors_total", "controller_runtime_reconcile_timeouts_total"]
        {
            assert_eq!(sample(&text, &format!("{zero}{{controller=\"service\"}}")), Some(0.0), "{text}");
        }
        assert_eq!(sample(&text, "controller_runtime_conversion_webhook_panics_total"), Some(0.0), "{text}");
    }

    #[test]
    fn reconciles_feed_ours_and_albcs_families_alike() {
        let m = Metrics::new();
        m.set_concurrency("targetgroupbinding", 4);
        let t = m.reconcile_started("targetgroupbinding", "ns", "web");
        let text = m.encode();
        assert_eq!(sample(&text, "controller_runtime_active_workers{controller=\"targetGroupBinding\"}"), Some(1.0));
        let key = "{name=\"targetGroupBinding\",controller=\"targetGroupBinding\"}";
        let running = sample(&text, &format!("workqueue_longest_running_processor_seconds{key}"));
        assert!(running.is_some_and(|s| s >= 0.0), "a reconcile in progress is reported:\n{text}");
        t.done(ReconcileResult::Error);
        m.reconcile_failed("targetgroupbinding", "access_denied");
        let text = m.encode();
        let want = [
            ("controller_runtime_active_workers{controller=\"targetGroupBinding\"}", 0.0),
            ("controller_runtime_max_concurrent_reconciles{controller=\"targetGroupBinding\"}", 4.0),
            ("controller_runtime_reconcile_total{controller=\"targetGroupBinding\",result=\"error\"}", 1.0),
            ("controller_runtime_reconcile_total{controller=\"targetGroupBinding\",result=\"success\"}", 0.0),
            ("controller_runtime_reconcile_errors_total{controller=\"targetGroupBinding\"}", 1.0),
            ("controller_runtime_reconcile_time_seconds_count{controller=\"targetGroupBinding\"}", 1.0),
            ("awslbc_reconcile_duration_seconds_count{controller=\"targetgroupbinding\"}", 1.0),
            ("awslbc_reconcile_errors_total{controller=\"targetgroupbinding\",category=\"access_denied\"}", 1.0),
            (
                "awslbc_controller_reconcile_errors_total{controller=\"targetGroupBinding\",error_category=\"access_denied\"}",
                1.0,
            ),
            ("workqueue_retries_total{name=\"targetGroupBinding\",controller=\"targetGroupBinding\"}", 1.0),
            (
                "workqueue_longest_running_processor_seconds{name=\"targetGroupBinding\",controller=\"targetGroupBinding\"}",
                0.0,
            ),
        ];
        for (prefix, value) in want {
            assert_eq!(sample(&text, prefix), Some(value), "{prefix} in\n{text}");
        }
        // A controller ALBC lacks feeds only ours.
        m.reconcile_failed("backend-rules", "other");
        assert!(!m.encode().contains("awslbc_controller_reconcile_errors_total{controller=\"backend-rules\""));
    }

    /// client-go's queue families: an add per object that starts waiting (not per trigger), the
    /// wait from its first trigger to its reconcile; a delayed requeue is added when it runs.
    #[test]
    fn queue_adds_and_waits_follow_client_go() {
        let m = Metrics::new();
        m.set_concurrency("targetgroupbinding", 2);
        let q = "{name=\"targetGroupBinding\",controller=\"targetGroupBinding\"}";
        let adds = |m: &Metrics| sample(&m.encode(), &format!("workqueue_adds_total{q}"));
        let waits = |m: &Metrics| sample(&m.encode(), &format!("workqueue_queue_duration_seconds_count{q}"));
        assert_eq!((adds(&m), waits(&m)), (Some(0.0), Some(0.0)), "at 0 from the start");
        m.queued("targetgroupbinding", "ns", "a");
        m.queued("targetgroupbinding", "ns", "a");
        m.queued("targetgroupbinding", "ns", "b");
        assert_eq!(adds(&m), Some(2.0), "a second trigger for a waiting object adds nothing");
        m.reconcile_started("targetgroupbinding", "ns", "a").done(ReconcileResult::Success);
        assert_eq!(waits(&m), Some(1.0));
        m.queued("targetgroupbinding", "ns", "a");
        assert_eq!(adds(&m), Some(3.0), "waiting again once its reconcile started");
        // A requeue after a delay (kube-runtime's own schedule): added as it runs, no wait.
        m.reconcile_started("targetgroupbinding", "ns", "c").done(ReconcileResult::Success);
        assert_eq!((adds(&m), waits(&m)), (Some(4.0), Some(2.0)));
        // A controller ALBC lacks counts nothing.
        m.queued("backend-rules", "", "x");
        assert!(!m.encode().contains("controller=\"backend-rules\""));
    }

    #[test]
    fn build_info_is_one_series_naming_this_build() {
        use crate::build_info::{REVISION, RUSTC, TREE_STATE, VERSION};
        let text = Metrics::new().encode();
        let series: Vec<_> = text.lines().filter(|l| l.starts_with("aws_lb_controller_build_info")).collect();
        let want = format!(
            "aws_lb_controller_build_info{{version=\"{VERSION}\",revision=\"{REVISION}\",tree_state=\"{TREE_STATE}\",\
             rustc=\"{RUSTC}\"}} 1"
        );
        assert_eq!(series, [want.as_str()], "in\n{text}");
        assert!(text.contains("# TYPE aws_lb_controller_build_info gauge"), "{text}");
    }

    #[test]
    fn top_talkers_are_the_three_objects_reconciled_most_per_controller_then_start_over() {
        let m = Metrics::new();
        for (name, n) in [("a", 5), ("b", 2), ("c", 1), ("d", 1)] {
            for _ in 0..n {
                m.reconcile_started("targetgroupbinding", "ns", name).done(ReconcileResult::Success);
            }
        }
        m.reconcile_started("service", "ns", "svc").done(ReconcileResult::Success);
        m.pick_top_talkers();
        let text = m.encode();
        let talker = |c: &str, n: &str| {
            sample(&text, &format!("awslbc_controller_top_talkers{{controller=\"{c}\",namespace=\"ns\",name=\"{n}\"}}"))
        };
        assert_eq!((talker("targetgroupbinding", "a"), talker("targetgroupbinding", "b")), (Some(5.0), Some(2.0)));
        assert_eq!(
            (talker("targetgroupbinding", "c"), talker("targetgroupbinding", "d")),
            (Some(1.0), None),
            "3 per controller"
        );
        assert_eq!(talker("service", "svc"), Some(1.0));
        m.reconcile_started("targetgroupbinding", "ns", "d").done(ReconcileResult::Success);
        m.pick_top_talkers();
        let text = m.encode();
        let talkers: Vec<_> = text.lines().filter(|l| l.starts_with("awslbc_controller_top_talkers{")).collect();
        assert_eq!(
            talkers,
            ["awslbc_controller_top_talkers{controller=\"targetgroupbinding\",namespace=\"ns\",name=\"d\"} 1"]
        );
    }

    #[test]
    fn quic_targets_without_a_server_id_are_counted_under_albcs_exact_name_and_type() {
        let m = Metrics::new();
        m.quic_target_missing_server_id("ns", "h3", 2);
        m.quic_target_missing_server_id("ns", "h3", 1);
        let text = m.encode();
        assert!(text.contains("# TYPE awslbc_quic_target_missing_server_id counter\n"), "{text}");
        assert_eq!(sample(&text, "awslbc_quic_target_missing_server_id{namespace=\"ns\",name=\"h3\"}"), Some(3.0));
        assert!(!text.contains("awslbc_quic_target_missing_server_id_total"), "client_golang adds no suffix");
        m.forget_binding(&TgbLabels { namespace: "ns".into(), name: "h3".into() });
        assert!(!m.encode().contains("awslbc_quic_target_missing_server_id{"), "series gone with the binding");
    }

    #[test]
    fn leader_cache_and_binding_info_in_albcs_terms() {
        let m = Metrics::new();
        m.set_leader(Some("aws-load-balancer-controller-leader"), true);
        m.set_cache_objects("targetgroupbindings", 7);
        m.set_cache_objects("pods", 9);
        let arn = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/k8s-web/0123456789abcdef";
        m.target_group_binding("ns", "web", arn, true);
        let text = m.encode();
        assert_eq!(
            sample(&text, "leader_election_master_status{name=\"aws-load-balancer-controller-leader\"}"),
            Some(1.0)
        );
        assert_eq!(sample(&text, "awslbc_controller_cache_object_total{resource=\"targetgroupbinding\"}"), Some(7.0));
        assert!(!text.contains("awslbc_controller_cache_object_total{resource=\"pod"), "ALBC reports no pod cache");
        let info = "aws_target_group_info{namespace=\"ns\",service=\"web\",target_group=\"targetgroup/k8s-web/0123456789abcdef\"}";
        assert_eq!(sample(&text, info), Some(1.0));
        m.target_group_binding("ns", "web", arn, false);
        assert_eq!(sample(&m.encode(), info), None, "gone with its binding");
    }
}
