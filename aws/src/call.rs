//! The one path every AWS call takes: client-side throttle → attempt → metrics → bounded retry
//! with jittered exponential backoff for throttling and transient errors. SDK retries are
//! disabled (see [`crate::config`]) so that every attempt is throttled, counted and timed here.

use crate::error::AwsError;
use crate::metrics::{AwsMetrics, CallLabels, OpLabels};
use crate::throttle::{Permit, Throttler};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// An AWS service as throttle rules and metrics name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    Elbv2,
    Ec2,
    Acm,
    Wafv2,
}

impl Service {
    /// Service ID as `--aws-api-throttle` spells it.
    pub fn id(self) -> &'static str {
        match self {
            Self::Elbv2 => lbc_model::throttle::ELBV2_SERVICE,
            Self::Ec2 => lbc_model::throttle::EC2_SERVICE,
            Self::Acm => lbc_model::throttle::ACM_SERVICE,
            Self::Wafv2 => lbc_model::throttle::WAFV2_SERVICE,
        }
    }

    /// Short label used in metrics, errors and IAM actions.
    pub fn label(self) -> &'static str {
        match self {
            Self::Elbv2 => "elasticloadbalancing",
            Self::Ec2 => "ec2",
            Self::Acm => "acm",
            Self::Wafv2 => "wafv2",
        }
    }
}

/// Shared by all adapters of one controller.
pub struct CallRunner {
    pub throttler: Throttler,
    pub metrics: AwsMetrics,
    /// Retries after the first attempt, for retryable errors only.
    pub max_retries: u32,
    /// Upper bound of one backoff sleep.
    pub max_backoff: Duration,
}

impl CallRunner {
    pub fn new(throttler: Throttler, metrics: AwsMetrics, max_retries: u32) -> Arc<Self> {
        Arc::new(Self { throttler, metrics, max_retries, max_backoff: Duration::from_secs(5) })
    }

    /// Runs `attempt` until it succeeds, fails for good, or retries run out.
    pub async fn run<T, F, Fut>(&self, service: Service, operation: &'static str, attempt: F) -> Result<T, AwsError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, AwsError>>,
    {
        self.run_with(None, service, operation, attempt).await
    }

    /// Waits until the client-side throttle admits one `operation` call and returns that
    /// capacity as a [`Permit`] for [`CallRunner::run_with`] (see [`Throttler::wait_for_capacity`]).
    pub async fn wait_for_capacity(&self, service: Service, operation: &'static str) -> Permit {
        self.throttler.wait_for_capacity(service.id(), operation).await
    }

    /// [`CallRunner::run`] whose first attempt spends `permit` (taken earlier with
    /// [`CallRunner::wait_for_capacity`]) instead of waiting for a token; retries wait as usual.
    pub async fn run_with<T, F, Fut>(
        &self,
        mut permit: Option<Permit>,
        service: Service,
        operation: &'static str,
        mut attempt: F,
    ) -> Result<T, AwsError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, AwsError>>,
    {
        let op = OpLabels { service: service.label(), operation };
        let mut n = 0u32;
        loop {
            let waited = match permit.take() {
                Some(p) => self.throttler.spend(p, service.id(), operation).await,
                None => self.throttler.acquire(service.id(), operation).await,
            };
            self.metrics.throttle_wait.get_or_create(&op).observe(waited.as_secs_f64());
            let start = Instant::now();
            let result = attempt().await;
            self.metrics.duration.get_or_create(&op).observe(start.elapsed().as_secs_f64());
            let err = match result {
                Ok(v) => {
                    self.throttler.on_success(service.id(), operation);
                    self.count(&op, "ok", "");
                    return Ok(v);
                }
                Err(e) => e,
            };
            self.count(&op, err.kind.as_str(), err.code.as_deref().unwrap_or(""));
            if err.kind == crate::error::ErrorKind::Throttled {
                self.metrics.throttled.get_or_create(&op).inc();
                self.throttler.on_throttled(service.id(), operation);
            }
            if !err.kind.is_retryable() || n >= self.max_retries {
                return Err(err);
            }
            n += 1;
            self.metrics.retries.get_or_create(&op).inc();
            tracing::debug!(service = service.label(), operation, attempt = n, error = %err, "retrying AWS call");
            tokio::time::sleep(self.backoff(n)).await;
        }
    }

    fn count(&self, op: &OpLabels, outcome: &'static str, code: &str) {
        self.metrics
            .calls
            .get_or_create(&CallLabels {
                service: op.service,
                operation: op.operation,
                outcome,
                error_code: code.to_string(),
            })
            .inc();
    }

    /// Full-jitter exponential backoff: uniform in [0, min(max, 100 ms × 2^n)].
    fn backoff(&self, n: u32) -> Duration {
        let cap = Duration::from_millis(100u64.saturating_mul(1 << n.min(16))).min(self.max_backoff);
        cap.mul_f64(fastrand::f64())
    }
}

/// Every page of a paged describe (EC2 `NextToken`, ELBv2 `Marker`): `page(token)` fetches one
/// page and returns its items and the next token; an empty or missing token ends the walk.
pub(crate) async fn all_pages<T, F, Fut>(mut page: F) -> Result<Vec<T>, AwsError>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: std::future::Future<Output = Result<(Vec<T>, Option<String>), AwsError>>,
{
    let (mut out, mut token) = (Vec::new(), None);
    loop {
        let (items, next) = page(token.take()).await?;
        out.extend(items);
        match next.filter(|t| !t.is_empty()) {
            Some(t) => token = Some(t),
            None => return Ok(out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use lbc_model::throttle::default_rules;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn runner(max_retries: u32) -> Arc<CallRunner> {
        CallRunner::new(Throttler::new(default_rules()), AwsMetrics::default(), max_retries)
    }

    fn err(kind: ErrorKind, code: &str) -> AwsError {
        AwsError {
            kind,
            service: "elasticloadbalancing",
            operation: "RegisterTargets",
            code: Some(code.into()),
            message: "x".into(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn retries_throttling_then_succeeds_and_counts_every_attempt() {
        let r = runner(5);
        let n = AtomicU32::new(0);
        let out = r
            .run(Service::Elbv2, "RegisterTargets", || async {
                if n.fetch_add(1, Ordering::SeqCst) < 2 { Err(err(ErrorKind::Throttled, "Throttling")) } else { Ok(7) }
            })
            .await;
        assert_eq!(out, Ok(7));
        assert_eq!(n.load(Ordering::SeqCst), 3);
        let op = OpLabels { service: "elasticloadbalancing", operation: "RegisterTargets" };
        assert_eq!(r.metrics.retries.get_or_create(&op).get(), 2);
        assert_eq!(r.metrics.throttled.get_or_create(&op).get(), 2);
        let ok = CallLabels {
            service: "elasticloadbalancing",
            operation: "RegisterTargets",
            outcome: "ok",
            error_code: String::new(),
        };
        assert_eq!(r.metrics.calls.get_or_create(&ok).get(), 1);
        assert!(r.throttler.current_rate(Service::Elbv2.id(), "RegisterTargets").unwrap() < 4.0, "slowed down");
    }

    #[tokio::test(start_paused = true)]
    async fn non_retryable_fails_at_once_and_retries_are_bounded() {
        let r = runner(3);
        let n = AtomicU32::new(0);
        let out: Result<(), _> = r
            .run(Service::Elbv2, "RegisterTargets", || async {
                n.fetch_add(1, Ordering::SeqCst);
                Err(err(ErrorKind::Invalid, "InvalidTarget"))
            })
            .await;
        assert_eq!(out.unwrap_err().kind, ErrorKind::Invalid);
        assert_eq!(n.load(Ordering::SeqCst), 1);

        let n = AtomicU32::new(0);
        let out: Result<(), _> = r
            .run(Service::Elbv2, "DescribeTargetHealth", || async {
                n.fetch_add(1, Ordering::SeqCst);
                Err(err(ErrorKind::Transient, "ServiceUnavailable"))
            })
            .await;
        assert_eq!(out.unwrap_err().kind, ErrorKind::Transient);
        assert_eq!(n.load(Ordering::SeqCst), 4, "1 attempt + 3 retries");
    }

    #[tokio::test(start_paused = true)]
    async fn permit_covers_the_first_attempt_only() {
        let r = CallRunner::new(
            Throttler::new(lbc_model::throttle::parse_rules("Elastic Load Balancing v2:RegisterTargets=1:1").unwrap()),
            AwsMetrics::default(),
            2,
        );
        let permit = r.wait_for_capacity(Service::Elbv2, "RegisterTargets").await;
        let start = Instant::now();
        let n = AtomicU32::new(0);
        let out = r
            .run_with(Some(permit), Service::Elbv2, "RegisterTargets", || async {
                if n.fetch_add(1, Ordering::SeqCst) < 1 {
                    Err(err(ErrorKind::Transient, "ServiceUnavailable"))
                } else {
                    Ok(())
                }
            })
            .await;
        assert_eq!(out, Ok(()));
        // The first attempt went at once on the permit; the retry waited for a fresh token
        // (1/s; the backoff sleep counts towards it).
        assert!(start.elapsed() >= Duration::from_secs(1), "{:?}", start.elapsed());
        assert!(start.elapsed() < Duration::from_millis(1200), "{:?}", start.elapsed());
    }
}
