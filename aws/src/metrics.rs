//! Metrics of every AWS call (names documented in docs/metrics.md). Every family ALBC exports
//! about AWS calls is here with ALBC's name, type and labels (the `service` label carries the
//! SDK service ID as ALBC's does: `Elastic Load Balancing v2`, `EC2`, `ACM`, `WAFV2`, `STS`), so
//! its dashboards and alerts keep working; ours sit beside them. [`crate::call::CallRunner`]
//! records all of them from the same attempt and call results.

use crate::error::{AwsError, ErrorKind};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CallLabels {
    pub service: &'static str,
    pub operation: &'static str,
    /// `ok` or an [`crate::error::ErrorKind`] label.
    pub outcome: &'static str,
    /// AWS error code, empty on success.
    pub error_code: String,
    /// HTTP status of the answer (`200` on success), empty when none came.
    pub status_code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OpLabels {
    pub service: &'static str,
    pub operation: &'static str,
}

/// ALBC's labels of its per-request and per-error-class counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StatusLabels {
    pub service: &'static str,
    pub operation: &'static str,
    pub status_code: String,
    pub error_code: String,
}

fn latency_histogram() -> Histogram {
    // 5 ms .. ~20 s
    Histogram::new(exponential_buckets(0.005, 2.0, 13))
}

/// ALBC's buckets of `aws_api_call_retries`: 0 .. 10 retries.
fn retries_histogram() -> Histogram {
    Histogram::new((0..=10).map(f64::from))
}

/// AWS call metrics.
#[derive(Clone)]
pub struct AwsMetrics {
    /// `aws_api_calls_total`: every attempt (ALBC counts calls; see docs/metrics.md).
    pub calls: Family<CallLabels, Counter>,
    /// `aws_api_call_duration_seconds`: one attempt.
    pub duration: Family<OpLabels, Histogram, fn() -> Histogram>,
    /// `aws_api_call_retries` (ALBC's histogram): retries of one call; its `_sum` counts every
    /// retry attempt.
    pub retries: Family<OpLabels, Histogram, fn() -> Histogram>,
    pub throttled: Family<OpLabels, Counter>,
    pub throttle_wait: Family<OpLabels, Histogram, fn() -> Histogram>,
    /// `aws_api_requests_total` (ALBC): attempts that got an HTTP answer.
    pub requests: Family<StatusLabels, Counter>,
    /// `aws_api_request_duration_seconds` (ALBC): attempts that got an HTTP answer.
    pub request_duration: Family<OpLabels, Histogram, fn() -> Histogram>,
    /// ALBC's `aws_api_call_{permission,service_limit_exceeded,throttled,validation}_errors_total`:
    /// calls whose final answer was such an error.
    pub permission_errors: Family<StatusLabels, Counter>,
    pub limit_exceeded_errors: Family<StatusLabels, Counter>,
    pub throttled_errors: Family<StatusLabels, Counter>,
    pub validation_errors: Family<StatusLabels, Counter>,
}

impl Default for AwsMetrics {
    fn default() -> Self {
        Self {
            calls: Family::default(),
            duration: Family::new_with_constructor(latency_histogram),
            retries: Family::new_with_constructor(retries_histogram),
            throttled: Family::default(),
            throttle_wait: Family::new_with_constructor(latency_histogram),
            requests: Family::default(),
            request_duration: Family::new_with_constructor(latency_histogram),
            permission_errors: Family::default(),
            limit_exceeded_errors: Family::default(),
            throttled_errors: Family::default(),
            validation_errors: Family::default(),
        }
    }
}

/// Which of ALBC's error-class counters a call's final error belongs to, by ALBC's rules in its
/// order: HTTP 401/403 or an access-denied code is a permission error; a code containing
/// `LimitExceeded` a service-limit error; then throttling; then `ValidationError`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorClass {
    Permission,
    LimitExceeded,
    Throttled,
    Validation,
}

impl ErrorClass {
    pub fn of(err: &AwsError) -> Option<Self> {
        let code = err.code.as_deref().unwrap_or("");
        if matches!(err.status, Some(401 | 403)) || matches!(code, "AccessDeniedException" | "AuthFailure") {
            Some(Self::Permission)
        } else if code.contains("LimitExceeded") {
            Some(Self::LimitExceeded)
        } else if err.kind == ErrorKind::Throttled {
            Some(Self::Throttled)
        } else if code == "ValidationError" {
            Some(Self::Validation)
        } else {
            None
        }
    }
}

impl AwsMetrics {
    /// One attempt that got an answer (`Ok`: HTTP 200) or failed (`Err`), `took` long.
    pub fn attempt(&self, op: &OpLabels, result: Result<(), &AwsError>, took: std::time::Duration) {
        let (outcome, error_code, status) = match result {
            Ok(()) => ("ok", String::new(), Some(200)),
            Err(e) => (e.kind.as_str(), e.code.clone().unwrap_or_default(), e.status),
        };
        let status_code = status.map(|s| s.to_string()).unwrap_or_default();
        self.calls
            .get_or_create(&CallLabels {
                service: op.service,
                operation: op.operation,
                outcome,
                error_code: error_code.clone(),
                status_code: status_code.clone(),
            })
            .inc();
        // ALBC counts only requests that got an HTTP response.
        if status.is_some() {
            let labels = StatusLabels { service: op.service, operation: op.operation, status_code, error_code };
            self.requests.get_or_create(&labels).inc();
            self.request_duration.get_or_create(op).observe(took.as_secs_f64());
        }
    }

    /// A call of `op` starts: its throttled counter and retries histogram exist from its first call
    /// at 0, so the first throttled answer or retry is an increase Prometheus sees.
    pub fn call_started(&self, op: &OpLabels) {
        let _ = self.throttled.get_or_create(op);
        let _ = self.retries.get_or_create(op);
    }

    /// The end of one call after `retries` retries; `Err` is its final error.
    pub fn call_done(&self, op: &OpLabels, retries: u32, result: Result<(), &AwsError>) {
        self.retries.get_or_create(op).observe(f64::from(retries));
        let Err(e) = result else { return };
        let (Some(status), Some(class)) = (e.status, ErrorClass::of(e)) else { return };
        let labels = StatusLabels {
            service: op.service,
            operation: op.operation,
            status_code: status.to_string(),
            error_code: e.code.clone().unwrap_or_default(),
        };
        let family = match class {
            ErrorClass::Permission => &self.permission_errors,
            ErrorClass::LimitExceeded => &self.limit_exceeded_errors,
            ErrorClass::Throttled => &self.throttled_errors,
            ErrorClass::Validation => &self.validation_errors,
        };
        family.get_or_create(&labels).inc();
    }

    /// These families alone in the text exposition (tests read histograms through it).
    pub fn encode(&self) -> String {
        let mut r = Registry::default();
        self.register(&mut r);
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &r);
        out
    }

    /// The `_sum` of `aws_api_call_retries` for `op` (retry attempts of finished calls).
    pub fn retries_sum(&self, op: &OpLabels) -> f64 {
        let want = format!("aws_api_call_retries_sum{{service=\"{}\",operation=\"{}\"}} ", op.service, op.operation);
        self.encode().lines().find_map(|l| l.strip_prefix(&want)?.parse().ok()).unwrap_or(0.0)
    }

    pub fn register(&self, registry: &mut Registry) {
        registry.register("aws_api_calls", "AWS API call attempts by outcome and error code", self.calls.clone());
        registry.register(
            "aws_api_call_duration_seconds",
            "Duration of one AWS API call attempt",
            self.duration.clone(),
        );
        registry.register(
            "aws_api_call_retries",
            "Retries of one AWS API call (its sum counts every retry attempt)",
            self.retries.clone(),
        );
        registry.register(
            "aws_api_call_throttled",
            "AWS API call attempts AWS answered with a throttling error",
            self.throttled.clone(),
        );
        registry.register(
            "aws_api_client_throttle_wait_seconds",
            "Time a call waited on the controller's own client-side rate limit before being sent",
            self.throttle_wait.clone(),
        );
        registry.register(
            "aws_api_requests",
            "AWS API requests that got an HTTP answer, by status and error code",
            self.requests.clone(),
        );
        registry.register(
            "aws_api_request_duration_seconds",
            "Duration of one AWS API request that got an HTTP answer",
            self.request_duration.clone(),
        );
        registry.register(
            "aws_api_call_permission_errors",
            "AWS API calls that failed for good on authentication or authorization (HTTP 401/403, access denied)",
            self.permission_errors.clone(),
        );
        registry.register(
            "aws_api_call_service_limit_exceeded_errors",
            "AWS API calls that failed for good on a service limit (error code containing LimitExceeded)",
            self.limit_exceeded_errors.clone(),
        );
        registry.register(
            "aws_api_call_throttled_errors",
            "AWS API calls that failed for good on throttling",
            self.throttled_errors.clone(),
        );
        registry.register(
            "aws_api_call_validation_errors",
            "AWS API calls that failed for good on a ValidationError",
            self.validation_errors.clone(),
        );
    }
}
