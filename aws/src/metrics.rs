//! Metrics of every AWS call (names documented in docs/metrics.md). Names follow ALBC's
//! `aws_api_*` where one exists, so existing dashboards keep a meaning.

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
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OpLabels {
    pub service: &'static str,
    pub operation: &'static str,
}

fn latency_histogram() -> Histogram {
    // 5 ms .. ~20 s
    Histogram::new(exponential_buckets(0.005, 2.0, 13))
}

/// AWS call metrics.
#[derive(Clone)]
pub struct AwsMetrics {
    pub calls: Family<CallLabels, Counter>,
    pub duration: Family<OpLabels, Histogram, fn() -> Histogram>,
    pub retries: Family<OpLabels, Counter>,
    pub throttled: Family<OpLabels, Counter>,
    pub throttle_wait: Family<OpLabels, Histogram, fn() -> Histogram>,
}

impl Default for AwsMetrics {
    fn default() -> Self {
        Self {
            calls: Family::default(),
            duration: Family::new_with_constructor(latency_histogram),
            retries: Family::default(),
            throttled: Family::default(),
            throttle_wait: Family::new_with_constructor(latency_histogram),
        }
    }
}

impl AwsMetrics {
    pub fn register(&self, registry: &mut Registry) {
        registry.register("aws_api_calls", "AWS API call attempts by outcome and error code", self.calls.clone());
        registry.register(
            "aws_api_call_duration_seconds",
            "Duration of one AWS API call attempt",
            self.duration.clone(),
        );
        registry.register("aws_api_call_retries", "AWS API call attempts that were retries", self.retries.clone());
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
    }
}
