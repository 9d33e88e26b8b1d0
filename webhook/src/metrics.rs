//! Per-webhook metrics. Names follow ALBC's where one exists (`awslbc_webhook_*_failure_total`
//! with `webhook_name`/`error_category`), so existing alerts keep a meaning; the families
//! controller-runtime's webhook server exports for ALBC (`controller_runtime_webhook_*`, labelled by
//! the webhook's path) are fed by the same requests, so ALBC's dashboards keep working.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::LazyLock;
use std::time::Duration;

/// `certwatcher_read_certificate_total` and `certwatcher_read_certificate_errors_total`: reads of
/// the webhook's serving pair (the files every `CERT_RELOAD_INTERVAL`, or the controller-managed
/// Secret on each change) and those that gave no usable pair. Process-wide, as controller-runtime
/// keeps them, because the managed pair is read before the server and its metrics exist.
static CERT_READS: LazyLock<(Counter, Counter)> = LazyLock::new(Default::default);

/// Counts one read of the serving pair; `ok`: it gave a usable pair.
pub fn count_certificate_read(ok: bool) {
    CERT_READS.0.inc();
    if !ok {
        CERT_READS.1.inc();
    }
}

/// Labels of the request counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// Webhook name as in the webhook configuration (`mpod.elbv2.k8s.aws`, …).
    pub webhook_name: &'static str,
    /// `allowed`, `patched`, `denied` or `error`.
    pub outcome: &'static str,
}

/// Labels of the latency histogram.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WebhookLabel {
    pub webhook_name: &'static str,
}

/// Labels of the failure counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FailureLabels {
    pub webhook_name: &'static str,
    /// Why: a [`lbc_model::admission::Violation`] category, `malformed_request`, `aws_error`, …
    pub error_category: &'static str,
}

/// controller-runtime's label of its webhook families: the webhook's path (`/mutate-v1-pod`, …).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PathLabel {
    pub webhook: &'static str,
}

/// controller-runtime's request counter labels: the HTTP status code sent and the path.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CodeLabels {
    pub code: &'static str,
    pub webhook: &'static str,
}

/// Labels of the refusal counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefusalLabels {
    /// Which limit refused (see [`crate::limits`]): `body_too_large`, `decode_too_large`,
    /// `overloaded`, `decode_budget`, `deadline`, `too_many_connections`, `client_certificate`.
    pub reason: &'static str,
}

/// client_golang's default buckets, which controller-runtime's latency histogram uses.
fn default_buckets() -> Histogram {
    Histogram::new([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0])
}

fn latency() -> Histogram {
    // 0.5 ms .. ~16 s: cache-only webhooks answer in well under a millisecond, the
    // TargetGroupBinding ones wait on AWS.
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

/// Webhook metrics; cheap to clone (clones share the same series).
#[derive(Clone)]
pub struct WebhookMetrics {
    /// `awslbc_webhook_requests_total{webhook_name,outcome}`
    pub requests: Family<RequestLabels, Counter>,
    /// `awslbc_webhook_request_duration_seconds{webhook_name}`
    pub duration: Family<WebhookLabel, Histogram, fn() -> Histogram>,
    /// `awslbc_webhook_mutation_failure_total{webhook_name,error_category}`: mutating webhooks
    /// that refused or could not decide.
    pub mutation_failures: Family<FailureLabels, Counter>,
    /// `awslbc_webhook_validation_failure_total{webhook_name,error_category}`: validating
    /// webhooks that refused or could not decide.
    pub validation_failures: Family<FailureLabels, Counter>,
    /// `awslbc_webhook_refused_total{reason}`: requests and connections refused by a limit of the
    /// server before any handler saw them.
    pub refused: Family<RefusalLabels, Counter>,
    /// `awslbc_webhook_requests_in_flight`: requests admitted by the limits and not yet answered.
    pub in_flight: Gauge,
    /// `awslbc_webhook_role_clients`: ELBv2 clients of assumed roles the webhook holds.
    pub role_clients: Gauge,
    /// `controller_runtime_webhook_requests_total{code,webhook}`
    pub cr_requests: Family<CodeLabels, Counter>,
    /// `controller_runtime_webhook_latency_seconds{webhook}`
    pub cr_latency: Family<PathLabel, Histogram, fn() -> Histogram>,
    /// `controller_runtime_webhook_requests_in_flight{webhook}`
    pub cr_in_flight: Family<PathLabel, Gauge>,
    /// `controller_runtime_webhook_panics_total`: handlers that panicked (answered with an error).
    pub panics: Counter,
}

impl std::fmt::Debug for WebhookMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookMetrics").field("in_flight", &self.in_flight.get()).finish_non_exhaustive()
    }
}

/// Counts one request in flight until dropped.
pub(crate) struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl Default for WebhookMetrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            duration: Family::new_with_constructor(latency),
            mutation_failures: Family::default(),
            validation_failures: Family::default(),
            refused: Family::default(),
            in_flight: Gauge::default(),
            role_clients: Gauge::default(),
            cr_requests: Family::default(),
            cr_latency: Family::new_with_constructor(default_buckets),
            cr_in_flight: Family::default(),
            panics: Counter::default(),
        }
    }
}

impl WebhookMetrics {
    /// Registers every series under `awslbc_webhook_` in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "certwatcher_read_certificate",
            "Reads of the webhook serving certificate (controller-runtime's family)",
            CERT_READS.0.clone(),
        );
        registry.register(
            "certwatcher_read_certificate_errors",
            "Reads of the webhook serving certificate that gave no usable pair (controller-runtime's family)",
            CERT_READS.1.clone(),
        );
        registry.register(
            "controller_runtime_webhook_requests",
            "Admission requests answered, by HTTP status code and webhook path (controller-runtime's family)",
            self.cr_requests.clone(),
        );
        registry.register(
            "controller_runtime_webhook_latency_seconds",
            "Time to answer one admission request, by webhook path (controller-runtime's family)",
            self.cr_latency.clone(),
        );
        registry.register(
            "controller_runtime_webhook_requests_in_flight",
            "Admission requests being answered, by webhook path (controller-runtime's family)",
            self.cr_in_flight.clone(),
        );
        registry.register(
            "controller_runtime_webhook_panics",
            "Admission handlers that panicked; each was answered with an error (controller-runtime's family)",
            self.panics.clone(),
        );
        let r = registry.sub_registry_with_prefix("awslbc_webhook");
        r.register("requests", "Admission requests by webhook and outcome", self.requests.clone());
        r.register("request_duration_seconds", "Time to answer one admission request", self.duration.clone());
        r.register(
            "mutation_failure",
            "Mutating webhook requests refused or failed, by reason",
            self.mutation_failures.clone(),
        );
        r.register(
            "validation_failure",
            "Validating webhook requests refused or failed, by reason",
            self.validation_failures.clone(),
        );
        r.register(
            "refused",
            "Requests and connections refused by a limit of the webhook server, by reason",
            self.refused.clone(),
        );
        r.register("requests_in_flight", "Webhook requests being answered", self.in_flight.clone());
        r.register(
            "role_clients",
            "AWS clients of assumed roles (spec.iamRoleArnToAssume) the webhook holds",
            self.role_clients.clone(),
        );
    }

    /// One refusal by the limit named `reason`.
    pub fn refused(&self, reason: &'static str) {
        self.refused.get_or_create(&RefusalLabels { reason }).inc();
    }

    pub(crate) fn in_flight_guard(&self) -> InFlight {
        self.in_flight.inc();
        InFlight(self.in_flight.clone())
    }

    /// One request of the webhook at `path` in flight until dropped.
    pub(crate) fn path_in_flight(&self, path: &'static str) -> InFlight {
        let g = self.cr_in_flight.get_or_create(&PathLabel { webhook: path }).clone();
        g.inc();
        InFlight(g)
    }

    /// One answered request of `webhook_name` (served at `path`, always HTTP 200: a refusal or an
    /// error is in the AdmissionReview, as controller-runtime answers).
    pub(crate) fn observe(
        &self,
        webhook_name: &'static str,
        path: &'static str,
        mutating: bool,
        outcome: &'static str,
        failure: Option<&'static str>,
        took: Duration,
    ) {
        self.cr_requests.get_or_create(&CodeLabels { code: "200", webhook: path }).inc();
        self.cr_latency.get_or_create(&PathLabel { webhook: path }).observe(took.as_secs_f64());
        self.requests.get_or_create(&RequestLabels { webhook_name, outcome }).inc();
        self.duration.get_or_create(&WebhookLabel { webhook_name }).observe(took.as_secs_f64());
        if let Some(error_category) = failure {
            let f = if mutating { &self.mutation_failures } else { &self.validation_failures };
            f.get_or_create(&FailureLabels { webhook_name, error_category }).inc();
        }
    }
}
