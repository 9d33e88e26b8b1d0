//! Per-webhook metrics. Names follow ALBC's where one exists (`awslbc_webhook_*_failure_total`
//! with `webhook_name`/`error_category`), so existing alerts keep a meaning.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::time::Duration;

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

/// Labels of the refusal counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefusalLabels {
    /// Which limit refused (see [`crate::limits`]): `body_too_large`, `decode_too_large`,
    /// `overloaded`, `decode_budget`, `deadline`, `too_many_connections`, `client_certificate`.
    pub reason: &'static str,
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
        }
    }
}

impl WebhookMetrics {
    /// Registers every series under `awslbc_webhook_` in `registry`.
    pub fn register(&self, registry: &mut Registry) {
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

    pub(crate) fn observe(
        &self,
        webhook_name: &'static str,
        mutating: bool,
        outcome: &'static str,
        failure: Option<&'static str>,
        took: Duration,
    ) {
        self.requests.get_or_create(&RequestLabels { webhook_name, outcome }).inc();
        self.duration.get_or_create(&WebhookLabel { webhook_name }).observe(took.as_secs_f64());
        if let Some(error_category) = failure {
            let f = if mutating { &self.mutation_failures } else { &self.validation_failures };
            f.get_or_create(&FailureLabels { webhook_name, error_category }).inc();
        }
    }
}
