//! The families ALBC exports (its own `awslbc_controller_*`, `aws_target_group_info`, and what
//! controller-runtime and client-go export for it: `controller_runtime_*`, `workqueue_*`,
//! `leader_election_master_status`) with ALBC's names, types, label names and label values, so
//! dashboards and alerts written for ALBC keep working after the swap. They are not a second
//! bookkeeping: [`super::Metrics`]'s recording methods feed them from the same events as ours.
//! docs/metrics.md maps each; e2e/tests/e2e/albc_metrics.rs checks them against a scrape of ALBC.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// ALBC's name of one of our controllers (the name its controller-runtime controller is
/// registered under, used as `controller` and workqueue `name`); `None` for ours ALBC lacks.
pub fn controller_name(ours: &str) -> Option<&'static str> {
    match ours {
        "targetgroupbinding" => Some("targetGroupBinding"),
        "service" => Some("service"),
        "ingress" => Some("ingress"),
        // ALBC names its ALB Gateway controller after the GatewayClass controllerName.
        "gateway-alb" => Some("gateway.k8s.aws/alb"),
        _ => None,
    }
}

/// ALBC's `resource` value of one of our watch caches; `None` for caches it does not report.
pub fn cache_resource(ours: &str) -> Option<&'static str> {
    match ours {
        "targetgroupbindings" => Some("targetgroupbinding"),
        "services" => Some("service"),
        "ingresses" => Some("ingress"),
        _ => None,
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabel {
    pub controller: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    pub controller: &'static str,
    /// `success`, `error`, `requeue`, `requeue_after` (controller-runtime's values; we never
    /// requeue without a delay, so `requeue` stays at 0).
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    pub controller: &'static str,
    pub error_category: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StageLabels {
    pub controller: &'static str,
    pub reconcile_stage: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResourceLabel {
    pub resource: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TargetGroupInfoLabels {
    pub namespace: String,
    pub service: String,
    /// The ARN after its last `:` (`targetgroup/<name>/<id>`), CloudWatch's TargetGroup dimension.
    pub target_group: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabels {
    pub name: &'static str,
    pub controller: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueDepthLabels {
    pub name: &'static str,
    pub controller: &'static str,
    /// `0`: our queues have one priority (ALBC's queues report `0` too).
    pub priority: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NameLabel {
    pub name: String,
}

/// client-go's REST client labels: the HTTP status (`<error>` without an answer), the API
/// server's `host:port`, the HTTP method.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RestLabels {
    pub code: String,
    pub host: String,
    pub method: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// client_golang's default buckets (ALBC's stage durations).
fn default_buckets() -> Histogram {
    Histogram::new([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0])
}

/// controller-runtime's reconcile-time buckets.
fn reconcile_time_buckets() -> Histogram {
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5,
        1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
    ])
}

/// client-go's workqueue buckets: 10 ns × 10^n.
fn workqueue_buckets() -> Histogram {
    Histogram::new(exponential_buckets(10e-9, 10.0, 12))
}

/// A counter Go names without `_total` (client_golang adds no suffix; prometheus-client does): the
/// same TYPE and sample name as the upstream's.
#[derive(Clone, Debug, Default)]
pub struct UnsuffixedCounter(Counter);

impl UnsuffixedCounter {
    pub fn inc_by(&self, n: u64) {
        self.0.inc_by(n);
    }
}

impl prometheus_client::encoding::EncodeMetric for UnsuffixedCounter {
    fn encode(&self, mut encoder: prometheus_client::encoding::MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_gauge(&self.0.get())
    }

    fn metric_type(&self) -> prometheus_client::metrics::MetricType {
        prometheus_client::metrics::MetricType::Counter
    }
}

impl prometheus_client::metrics::TypedMetric for UnsuffixedCounter {
    const TYPE: prometheus_client::metrics::MetricType = prometheus_client::metrics::MetricType::Counter;
}

#[derive(Clone)]
pub struct AlbcMetrics {
    /// `awslbc_quic_target_missing_server_id{namespace,name}`: targets of a QUIC group left out
    /// for want of a server ID, per binding (counted each pass, as the upstream counts).
    pub quic_missing_server_id: Family<crate::metrics::TgbLabels, UnsuffixedCounter>,
    /// `awslbc_controller_reconcile_errors_total{controller,error_category}`
    pub reconcile_errors: Family<ErrorLabels, Counter>,
    /// `awslbc_controller_reconcile_stage_duration{controller,reconcile_stage}`
    pub stage_duration: HistogramFamily<StageLabels>,
    /// `awslbc_controller_cache_object_total{resource}` (a gauge, despite the name)
    pub cache_objects: Family<ResourceLabel, Gauge>,
    /// `aws_target_group_info{namespace,service,target_group}`: 1 per binding a Service or
    /// Ingress of ours made.
    pub target_group_info: Family<TargetGroupInfoLabels, Gauge>,
    /// `controller_runtime_reconcile_total{controller,result}`
    pub reconcile_total: Family<ResultLabels, Counter>,
    /// `controller_runtime_reconcile_errors_total{controller}`
    pub cr_reconcile_errors: Family<ControllerLabel, Counter>,
    /// `controller_runtime_reconcile_panics_total{controller}`: passes that panicked
    /// (`Metrics::recover_panics`).
    pub reconcile_panics: Family<ControllerLabel, Counter>,
    /// `controller_runtime_terminal_reconcile_errors_total{controller}`: always 0, every failed
    /// pass is retried (ALBC returns no terminal error either).
    pub terminal_reconcile_errors: Family<ControllerLabel, Counter>,
    /// `controller_runtime_reconcile_timeouts_total{controller}`: always 0, a pass has no overall
    /// deadline (ALBC configures none; our AWS and API calls have theirs).
    pub reconcile_timeouts: Family<ControllerLabel, Counter>,
    /// `controller_runtime_conversion_webhook_panics_total`: always 0, no conversion webhook is
    /// served (ALBC serves none either).
    pub conversion_webhook_panics: Counter,
    /// `controller_runtime_reconcile_time_seconds{controller}`
    pub reconcile_time: HistogramFamily<ControllerLabel>,
    /// `controller_runtime_max_concurrent_reconciles{controller}`
    pub max_concurrent: Family<ControllerLabel, Gauge>,
    /// `controller_runtime_active_workers{controller}`
    pub active_workers: Family<ControllerLabel, Gauge>,
    /// `workqueue_depth{name,controller,priority}`
    pub queue_depth: Family<QueueDepthLabels, Gauge>,
    /// `workqueue_work_duration_seconds{name,controller}`
    pub work_duration: HistogramFamily<QueueLabels>,
    /// `workqueue_retries_total{name,controller}`: reconciles that ended in a delayed requeue.
    pub queue_retries: Family<QueueLabels, Counter>,
    /// `workqueue_adds_total{name,controller}`: objects that started waiting (a trigger for one
    /// already waiting adds nothing, as client-go's dirty set).
    pub queue_adds: Family<QueueLabels, Counter>,
    /// `workqueue_queue_duration_seconds{name,controller}`: from the trigger to the reconcile's start.
    pub queue_duration: HistogramFamily<QueueLabels>,
    /// `leader_election_master_status{name}`
    pub leader: Family<NameLabel, Gauge>,
    /// `rest_client_requests_total{code,host,method}`: every request to the API server, both
    /// clients (`crate::kube_gate`), refused writes of a follower not included (never sent).
    pub rest_requests: Family<RestLabels, Counter>,
    /// `awslbc_controller_top_talkers{controller,namespace,name}`
    pub top_talkers: Family<TopTalkerLabels, Gauge>,
    pub activity: std::sync::Arc<std::sync::Mutex<Activity>>,
}

impl Default for AlbcMetrics {
    fn default() -> Self {
        Self {
            quic_missing_server_id: Family::default(),
            reconcile_errors: Family::default(),
            stage_duration: Family::new_with_constructor(default_buckets),
            cache_objects: Family::default(),
            target_group_info: Family::default(),
            reconcile_total: Family::default(),
            cr_reconcile_errors: Family::default(),
            reconcile_panics: Family::default(),
            terminal_reconcile_errors: Family::default(),
            reconcile_timeouts: Family::default(),
            conversion_webhook_panics: Counter::default(),
            reconcile_time: Family::new_with_constructor(reconcile_time_buckets),
            max_concurrent: Family::default(),
            active_workers: Family::default(),
            queue_depth: Family::default(),
            work_duration: Family::new_with_constructor(workqueue_buckets),
            queue_retries: Family::default(),
            queue_adds: Family::default(),
            queue_duration: Family::new_with_constructor(workqueue_buckets),
            leader: Family::default(),
            rest_requests: Family::default(),
            top_talkers: Family::default(),
            activity: Default::default(),
        }
    }
}

impl AlbcMetrics {
    pub fn register(&self, r: &mut Registry) {
        r.register(
            "awslbc_quic_target_missing_server_id",
            "QUIC targets attempted to be registered without a server ID (ALBC's family)",
            self.quic_missing_server_id.clone(),
        );
        r.register(
            "awslbc_controller_reconcile_errors",
            "Failed reconciles by controller and error category (ALBC's family)",
            self.reconcile_errors.clone(),
        );
        r.register(
            "awslbc_controller_reconcile_stage_duration",
            "Duration of a reconcile stage (ALBC's family)",
            self.stage_duration.clone(),
        );
        r.register(
            "awslbc_controller_cache_object_total",
            "Objects in the watch caches of Services, Ingresses and TargetGroupBindings (ALBC's family)",
            self.cache_objects.clone(),
        );
        r.register(
            "aws_target_group_info",
            "1 per TargetGroupBinding made for a Service or Ingress: its namespace, Service and target group",
            self.target_group_info.clone(),
        );
        r.register(
            "controller_runtime_reconcile",
            "Reconciles per controller by result (controller-runtime's family)",
            self.reconcile_total.clone(),
        );
        r.register(
            "controller_runtime_reconcile_errors",
            "Reconciles that failed, per controller (controller-runtime's family)",
            self.cr_reconcile_errors.clone(),
        );
        r.register(
            "controller_runtime_reconcile_panics",
            "Reconciles that panicked, per controller; each is retried with backoff (controller-runtime's family)",
            self.reconcile_panics.clone(),
        );
        r.register(
            "controller_runtime_terminal_reconcile_errors",
            "Reconciles that failed without retry, per controller: none, every failure is retried (controller-runtime's family)",
            self.terminal_reconcile_errors.clone(),
        );
        r.register(
            "controller_runtime_reconcile_timeouts",
            "Reconciles cut by a reconcile deadline, per controller: none, passes have no overall deadline (controller-runtime's family)",
            self.reconcile_timeouts.clone(),
        );
        r.register(
            "controller_runtime_conversion_webhook_panics",
            "Conversion webhook panics: none, no conversion webhook is served (controller-runtime's family)",
            self.conversion_webhook_panics.clone(),
        );
        r.register(
            "controller_runtime_reconcile_time_seconds",
            "Duration of one reconcile per controller (controller-runtime's family)",
            self.reconcile_time.clone(),
        );
        r.register(
            "controller_runtime_max_concurrent_reconciles",
            "Reconcile workers per controller (controller-runtime's family)",
            self.max_concurrent.clone(),
        );
        r.register(
            "controller_runtime_active_workers",
            "Reconciles running now per controller (controller-runtime's family)",
            self.active_workers.clone(),
        );
        r.register(
            "workqueue_depth",
            "Objects waiting to be reconciled (client-go's family)",
            self.queue_depth.clone(),
        );
        r.register(
            "workqueue_work_duration_seconds",
            "Duration of processing one queued object (client-go's family)",
            self.work_duration.clone(),
        );
        r.register(
            "workqueue_retries",
            "Reconciles that ended with a delayed requeue (client-go's family)",
            self.queue_retries.clone(),
        );
        r.register(
            "workqueue_adds",
            "Objects that started waiting for a reconcile (client-go's family)",
            self.queue_adds.clone(),
        );
        r.register(
            "workqueue_queue_duration_seconds",
            "Time from an object's trigger to the start of its reconcile (client-go's family)",
            self.queue_duration.clone(),
        );
        r.register(
            "awslbc_controller_top_talkers",
            "Reconciles of the objects reconciled most in the last 3 minutes, 3 per controller (ALBC's family)",
            self.top_talkers.clone(),
        );
        r.register_collector(Box::new(ActivityCollector(self.activity.clone())));
        r.register(
            "rest_client_requests",
            "Requests to the Kubernetes API server by status code, host and method (client-go's family)",
            self.rest_requests.clone(),
        );
        r.register(
            "leader_election_master_status",
            "1 while this replica holds the named leader lease (client-go's family)",
            self.leader.clone(),
        );
    }
}

/// The CloudWatch TargetGroup dimension of a target group ARN: everything after its last `:`.
pub fn target_group_dimension(arn: &str) -> &str {
    arn.rsplit_once(':').map_or(arn, |(_, tail)| tail)
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TopTalkerLabels {
    /// Our controller names, which are ALBC's here: `targetgroupbinding`, `service`, `ingress`.
    pub controller: &'static str,
    pub namespace: String,
    pub name: String,
}

/// How many top talkers per controller ALBC reports, and how often it picks them.
pub const TOP_TALKERS: usize = 3;
pub const TOP_TALKERS_EVERY: std::time::Duration = std::time::Duration::from_secs(180);

/// Reconciles in progress and reconciles per object since the last top-talker pick, kept by
/// [`super::Metrics::reconcile_started`] and its timer.
#[derive(Debug, Default)]
pub struct Activity {
    next_id: u64,
    /// Reconcile id → (ALBC's controller name, start).
    running: std::collections::HashMap<u64, (&'static str, std::time::Instant)>,
    /// ALBC's names of the controllers started so far (their gauges read 0 when idle).
    pub known: std::collections::BTreeSet<&'static str>,
    /// (our controller, namespace, name) → reconciles since the last pick.
    counts: std::collections::HashMap<(&'static str, String, String), u64>,
    /// (ALBC's controller name, namespace, name) → when it started waiting for a reconcile.
    waiting: std::collections::HashMap<(&'static str, String, String), std::time::Instant>,
}

/// Waiting objects kept at most (triggers for objects that are never reconciled, deleted before
/// their turn, are dropped once this many wait and they are older than [`WAITING_FORGET`]).
const WAITING_MAX: usize = 100_000;
const WAITING_FORGET: std::time::Duration = std::time::Duration::from_secs(600);

impl Activity {
    pub fn start(&mut self, albc: Option<&'static str>, ours: &'static str, namespace: &str, name: &str) -> u64 {
        self.next_id += 1;
        if let Some(c) = albc {
            self.running.insert(self.next_id, (c, std::time::Instant::now()));
            *self.counts.entry((ours, namespace.to_string(), name.to_string())).or_default() += 1;
        }
        self.next_id
    }

    pub fn end(&mut self, id: u64) {
        self.running.remove(&id);
    }

    /// `namespace/name` of `controller` starts waiting, unless it already waits; whether it did.
    pub fn queued(&mut self, controller: &'static str, namespace: &str, name: &str) -> bool {
        let key = (controller, namespace.to_string(), name.to_string());
        if self.waiting.contains_key(&key) {
            return false;
        }
        if self.waiting.len() >= WAITING_MAX {
            self.waiting.retain(|_, at| at.elapsed() < WAITING_FORGET);
        }
        self.waiting.insert(key, std::time::Instant::now());
        true
    }

    /// How long `namespace/name` of `controller` waited; `None` when no trigger was seen (a
    /// requeue kube-runtime scheduled after a delay, which becomes due as it starts).
    pub fn dequeued(&mut self, controller: &'static str, namespace: &str, name: &str) -> Option<std::time::Duration> {
        let key = (controller, namespace.to_string(), name.to_string());
        self.waiting.remove(&key).map(|at| at.elapsed())
    }

    /// The objects reconciled most since the last pick, per controller; counts start over.
    pub fn pick_top_talkers(&mut self) -> Vec<(TopTalkerLabels, u64)> {
        let mut all: Vec<_> = self.counts.drain().collect();
        all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let mut per: std::collections::HashMap<&'static str, usize> = Default::default();
        all.into_iter()
            .filter(|((c, _, _), _)| {
                let n = per.entry(c).or_default();
                *n += 1;
                *n <= TOP_TALKERS
            })
            .map(|((controller, namespace, name), n)| (TopTalkerLabels { controller, namespace, name }, n))
            .collect()
    }
}

/// `workqueue_unfinished_work_seconds` and `workqueue_longest_running_processor_seconds`,
/// computed from the reconciles in progress at each scrape.
#[derive(Debug)]
pub struct ActivityCollector(pub std::sync::Arc<std::sync::Mutex<Activity>>);

impl prometheus_client::collector::Collector for ActivityCollector {
    fn encode(&self, mut encoder: prometheus_client::encoding::DescriptorEncoder) -> Result<(), std::fmt::Error> {
        use prometheus_client::encoding::EncodeMetric;
        use prometheus_client::metrics::MetricType;
        use prometheus_client::metrics::gauge::ConstGauge;
        let rows: Vec<(&'static str, f64, f64)> = {
            let a = self.0.lock().expect("activity lock");
            a.known
                .iter()
                .map(|c| {
                    let ages = a.running.values().filter(|(k, _)| k == c).map(|(_, t)| t.elapsed().as_secs_f64());
                    let (sum, max) = ages.fold((0.0, 0.0), |(s, m): (f64, f64), x| (s + x, m.max(x)));
                    (*c, sum, max)
                })
                .collect()
        };
        let families = [
            (
                "workqueue_unfinished_work_seconds",
                "Seconds of work done by reconciles still in progress (client-go's family)",
                false,
            ),
            (
                "workqueue_longest_running_processor_seconds",
                "Seconds the longest reconcile in progress has been running (client-go's family)",
                true,
            ),
        ];
        for (name, help, longest) in families {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (c, sum, max) in &rows {
                let labels = QueueLabels { name: c, controller: c };
                ConstGauge::new(if longest { *max } else { *sum }).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}
