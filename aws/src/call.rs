//! The one path every AWS call takes: client-side throttle → attempt → metrics → bounded retry
//! with jittered exponential backoff for throttling and transient errors. SDK retries are
//! disabled (see [`crate::config`]) so that every attempt is throttled, counted and timed here.

use crate::backoff::Backoff;
use crate::error::{AwsError, ErrorKind};
use crate::metrics::{AwsMetrics, OpLabels};
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
    /// WAF Classic web ACL associations.
    WafRegional,
    Shield,
    /// The DNS validation records of ACM certificates the controller requests.
    Route53,
    /// `GetCallerIdentity` (`aws-lb-controller doctor`) and `AssumeRole` (TargetGroupBinding
    /// `spec.iamRoleArnToAssume`).
    Sts,
}

impl Service {
    /// Service ID as `--aws-api-throttle` spells it.
    pub fn id(self) -> &'static str {
        match self {
            Self::Elbv2 => lbc_model::throttle::ELBV2_SERVICE,
            Self::Ec2 => lbc_model::throttle::EC2_SERVICE,
            Self::Acm => lbc_model::throttle::ACM_SERVICE,
            Self::Wafv2 => lbc_model::throttle::WAFV2_SERVICE,
            Self::WafRegional => lbc_model::throttle::WAF_REGIONAL_SERVICE,
            Self::Shield => lbc_model::throttle::SHIELD_SERVICE,
            Self::Route53 => lbc_model::throttle::ROUTE53_SERVICE,
            Self::Sts => "STS",
        }
    }

    /// Short label used in metrics, errors and IAM actions.
    pub fn label(self) -> &'static str {
        match self {
            Self::Elbv2 => "elasticloadbalancing",
            Self::Ec2 => "ec2",
            Self::Acm => "acm",
            Self::Wafv2 => "wafv2",
            Self::WafRegional => "waf-regional",
            Self::Shield => "shield",
            Self::Route53 => "route53",
            Self::Sts => "sts",
        }
    }
}

/// The leader fence: how long a write sent now may take, `None` (or zero) when this process may
/// not write at all. Asked right before every attempt of a mutating operation, after any
/// client-side throttle wait, so a replica that lost its lease while queued never sends the write;
/// the attempt is abandoned when the time given runs out (before another replica may start
/// writing), even when that is sooner than the attempt timeout.
pub type WriteGate = Arc<dyn Fn() -> Option<Duration> + Send + Sync>;

/// Whether `operation` changes something in AWS. Every read of the APIs we call is named
/// Describe*, List* or Get*; `DryRun*` labels an EC2 write sent with `DryRun=true` (doctor's
/// permission probes), which AWS checks and never performs; anything else is treated as a write
/// (fails safe for new operations).
pub fn is_mutating(operation: &str) -> bool {
    // sts:AssumeRole changes nothing of ours: it yields keys that every replica's webhook needs
    // to read a cross-account target group, leader or not.
    !["Describe", "List", "Get", "DryRun", "AssumeRole"].iter().any(|p| operation.starts_with(p))
}

/// Limits of one call (flags `--aws-api-attempt-timeout`, `--aws-api-operation-timeout`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallTimeouts {
    /// One attempt without an answer for this long is abandoned and counts as a transient error.
    pub attempt: Duration,
    /// Attempts and backoff sleeps of one call together (client-side throttle waits excluded:
    /// they are our own queue, not AWS being slow); no retry starts past it.
    pub operation: Duration,
}

impl Default for CallTimeouts {
    fn default() -> Self {
        Self { attempt: Duration::from_secs(10), operation: Duration::from_secs(60) }
    }
}

/// The pause before the first retry of a call (100–200 ms with jitter); it doubles per retry up
/// to [`CallRunner::max_backoff`].
pub const RETRY_MIN: Duration = Duration::from_millis(100);

/// Shared by all adapters of one controller.
pub struct CallRunner {
    pub throttler: Throttler,
    pub metrics: AwsMetrics,
    /// Retries after the first attempt, for retryable errors only.
    pub max_retries: u32,
    /// Upper bound of one backoff sleep.
    pub max_backoff: Duration,
    pub timeouts: CallTimeouts,
    /// `None`: every write allowed (tests, one-shot tools); the controller always sets one.
    pub write_gate: Option<WriteGate>,
}

impl CallRunner {
    pub fn new(throttler: Throttler, metrics: AwsMetrics, max_retries: u32) -> Arc<Self> {
        Self::with(throttler, metrics, max_retries, CallTimeouts::default(), None)
    }

    /// A runner with explicit timeouts and a write gate (the controller's).
    pub fn with(
        throttler: Throttler,
        metrics: AwsMetrics,
        max_retries: u32,
        timeouts: CallTimeouts,
        write_gate: Option<WriteGate>,
    ) -> Arc<Self> {
        Arc::new(Self { throttler, metrics, max_retries, max_backoff: Duration::from_secs(5), timeouts, write_gate })
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
    ///
    /// Each call is one `tracing` span (`aws.call`; exported as an OpenTelemetry client span named
    /// after the operation when the controller traces), a child of the reconcile that made it:
    /// throttle waits, attempts and backoff sleeps are inside it, and it ends with `outcome`
    /// (`ok` or the error class, as in the error metrics) and the number of attempts.
    pub async fn run_with<T, F, Fut>(
        &self,
        permit: Option<Permit>,
        service: Service,
        operation: &'static str,
        attempt: F,
    ) -> Result<T, AwsError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, AwsError>>,
    {
        use tracing::Instrument;
        use tracing::field::Empty;
        let span = tracing::info_span!(
            "aws.call",
            otel.name = operation,
            otel.kind = "client",
            otel.status_code = Empty,
            rpc.system = "aws-api",
            rpc.service = service.id(),
            rpc.method = operation,
            outcome = Empty,
            attempts = Empty,
            aws.error_code = Empty,
        );
        let mut attempts = 0u32;
        let res = self.attempts(permit, service, operation, attempt, &mut attempts).instrument(span.clone()).await;
        span.record("attempts", attempts);
        match &res {
            Ok(_) => {
                span.record("outcome", "ok");
            }
            Err(e) => {
                span.record("outcome", e.kind.as_str());
                span.record("otel.status_code", "ERROR");
                if let Some(code) = &e.code {
                    span.record("aws.error_code", code.as_str());
                }
            }
        }
        res
    }

    /// [`CallRunner::run_with`] without its span; `attempts`: attempts sent so far.
    async fn attempts<T, F, Fut>(
        &self,
        mut permit: Option<Permit>,
        service: Service,
        operation: &'static str,
        mut attempt: F,
        attempts: &mut u32,
    ) -> Result<T, AwsError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, AwsError>>,
    {
        // Metrics name services by SDK service ID, as ALBC's do.
        let op = OpLabels { service: service.id(), operation };
        self.metrics.call_started(&op);
        let mut n = 0u32;
        // Time spent on attempts and backoff sleeps (not on the client-side throttle queue).
        let mut spent = Duration::ZERO;
        loop {
            let waited = match permit.take() {
                Some(p) => self.throttler.spend(p, service.id(), operation).await,
                None => self.throttler.acquire(service.id(), operation).await,
            };
            self.metrics.throttle_wait.get_or_create(&op).observe(waited.as_secs_f64());
            let mut limit = self.timeouts.attempt.min(self.timeouts.operation.saturating_sub(spent));
            if let Some(may_write) = self.write_gate.as_ref().filter(|_| is_mutating(operation)) {
                match may_write().filter(|left| !left.is_zero()) {
                    Some(left) => limit = limit.min(left),
                    None => {
                        let err = AwsError::not_leader(service.label(), operation);
                        self.metrics.attempt(&op, Err(&err), Duration::ZERO);
                        if n > 0 {
                            self.metrics.call_done(&op, n, Err(&err));
                        }
                        return Err(err);
                    }
                }
            }
            *attempts += 1;
            let start = Instant::now();
            let result = match tokio::time::timeout(limit, attempt()).await {
                Ok(r) => r,
                Err(_) => Err(AwsError::timed_out(service.label(), operation, limit)),
            };
            let took = start.elapsed();
            spent += took;
            self.metrics.duration.get_or_create(&op).observe(took.as_secs_f64());
            let err = match result {
                Ok(v) => {
                    self.throttler.on_success(service.id(), operation);
                    self.metrics.attempt(&op, Ok(()), took);
                    self.metrics.call_done(&op, n, Ok(()));
                    return Ok(v);
                }
                Err(e) => e,
            };
            self.metrics.attempt(&op, Err(&err), took);
            if err.kind == ErrorKind::Throttled {
                self.metrics.throttled.get_or_create(&op).inc();
                self.throttler.on_throttled(service.id(), operation);
            }
            if !err.kind.is_retryable() || n >= self.max_retries {
                self.metrics.call_done(&op, n, Err(&err));
                return Err(err);
            }
            let pause = self.backoff(n + 1);
            if spent + pause >= self.timeouts.operation {
                self.metrics.call_done(&op, n, Err(&err));
                return Err(err.gave_up_after(spent));
            }
            n += 1;
            tracing::debug!(service = service.label(), operation, attempt = n, error = %err, "retrying AWS call");
            tokio::time::sleep(pause).await;
            spent += pause;
        }
    }

    /// The pause before retry `n` (1 = the first): [`RETRY_MIN`] doubling per retry, jittered up
    /// to twice that, never past `max_backoff` ([`Backoff`]). Each call starts over.
    fn backoff(&self, n: u32) -> Duration {
        Backoff::new(RETRY_MIN, self.max_backoff).delay(n)
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
    use crate::metrics::{CallLabels, StatusLabels};
    use lbc_model::throttle::default_rules;
    use std::sync::Mutex;
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
            status: Some(400),
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
        let op = OpLabels { service: "Elastic Load Balancing v2", operation: "RegisterTargets" };
        assert_eq!(r.metrics.retries_sum(&op), 2.0, "one call, 2 retries");
        assert_eq!(r.metrics.throttled.get_or_create(&op).get(), 2);
        let ok = CallLabels {
            service: "Elastic Load Balancing v2",
            operation: "RegisterTargets",
            outcome: "ok",
            error_code: String::new(),
            status_code: "200".into(),
        };
        assert_eq!(r.metrics.calls.get_or_create(&ok).get(), 1);
        let throttled = StatusLabels {
            service: "Elastic Load Balancing v2",
            operation: "RegisterTargets",
            status_code: "400".into(),
            error_code: "Throttling".into(),
        };
        assert_eq!(r.metrics.requests.get_or_create(&throttled).get(), 2, "ALBC's per-request counter");
        assert_eq!(r.metrics.throttled_errors.get_or_create(&throttled).get(), 0, "the call succeeded in the end");
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

    /// ALBC's error-class counters count calls by their final error, in ALBC's order of rules.
    #[tokio::test(start_paused = true)]
    async fn final_errors_are_counted_in_albcs_error_classes() {
        let r = runner(0);
        let cases: [(ErrorKind, &str, u16, &'static str); 5] = [
            (ErrorKind::AccessDenied, "AccessDenied", 403, "aws_api_call_permission_errors_total"),
            (ErrorKind::Invalid, "TooManyTargets", 400, ""),
            (ErrorKind::Throttled, "RequestLimitExceeded", 503, "aws_api_call_service_limit_exceeded_errors_total"),
            (ErrorKind::Throttled, "Throttling", 400, "aws_api_call_throttled_errors_total"),
            (ErrorKind::Invalid, "ValidationError", 400, "aws_api_call_validation_errors_total"),
        ];
        for (kind, code, status, _) in cases {
            let _: Result<(), _> = r
                .run(Service::Elbv2, "DescribeTargetHealth", || async {
                    let mut e = err(kind, code);
                    e.status = Some(status);
                    Err(e)
                })
                .await;
        }
        let text = r.metrics.encode();
        for (_, code, status, family) in cases.iter().filter(|c| !c.3.is_empty()) {
            let line = format!(
                "{family}{{service=\"Elastic Load Balancing v2\",operation=\"DescribeTargetHealth\",\
                 status_code=\"{status}\",error_code=\"{code}\"}} 1"
            );
            assert!(text.contains(&line), "want `{line}` in\n{text}");
        }
        for family in cases.iter().map(|c| c.3).filter(|f| !f.is_empty()) {
            let n = text.lines().filter(|l| l.starts_with(family)).count();
            assert_eq!(n, 1, "{family}: one call of its class, no other error counted in it:\n{text}");
        }
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

    #[tokio::test(start_paused = true)]
    async fn the_write_gate_refuses_writes_before_sending_and_lets_reads_through() {
        let leader = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let l = leader.clone();
        let gate: WriteGate = Arc::new(move || l.load(Ordering::SeqCst).then_some(Duration::from_secs(10)));
        let r = CallRunner::with(
            Throttler::new(default_rules()),
            AwsMetrics::default(),
            3,
            CallTimeouts::default(),
            Some(gate),
        );
        let sent = AtomicU32::new(0);
        let write = || async {
            sent.fetch_add(1, Ordering::SeqCst);
            Ok::<_, AwsError>(())
        };
        let e = r.run(Service::Elbv2, "RegisterTargets", write).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::NotLeader);
        assert!(!e.kind.is_retryable() && !e.kind.retry_later());
        assert_eq!(sent.load(Ordering::SeqCst), 0, "a refused write is never sent");
        r.run(Service::Elbv2, "DescribeTargetHealth", write).await.unwrap();
        assert_eq!(sent.load(Ordering::SeqCst), 1, "reads pass the gate");
        leader.store(true, Ordering::SeqCst);
        r.run(Service::Elbv2, "RegisterTargets", write).await.unwrap();
        assert_eq!(sent.load(Ordering::SeqCst), 2);
    }

    /// A write sent near the end of the leadership is abandoned when the fence says, not at the
    /// attempt timeout: another replica may be writing by then. Its retry is refused unsent.
    #[tokio::test(start_paused = true)]
    async fn a_write_is_abandoned_when_the_leadership_it_started_under_may_have_passed() {
        let ends = Instant::now() + Duration::from_secs(3);
        let gate: WriteGate = Arc::new(move || Some(ends.saturating_duration_since(Instant::now())));
        let r = CallRunner::with(
            Throttler::new(default_rules()),
            AwsMetrics::default(),
            3,
            CallTimeouts::default(),
            Some(gate),
        );
        let sent = AtomicU32::new(0);
        let start = Instant::now();
        let out: Result<(), _> = r
            .run(Service::Elbv2, "RegisterTargets", || async {
                sent.fetch_add(1, Ordering::SeqCst);
                futures::future::pending().await
            })
            .await;
        let e = out.unwrap_err();
        assert_eq!(e.kind, ErrorKind::NotLeader, "{e}");
        assert_eq!(sent.load(Ordering::SeqCst), 1, "the retry after the fence is never sent");
        let took = start.elapsed();
        assert!(
            took >= Duration::from_secs(3) && took < Duration::from_secs(4),
            "{took:?}, not the 10 s attempt timeout"
        );
    }

    #[test]
    fn reads_and_writes_are_told_apart_by_name() {
        for op in [
            "DescribeTargetHealth",
            "ListCertificates",
            "GetWebACLForResource",
            "DescribeCapacityReservation",
            "DryRunCreateSecurityGroup",
            "AssumeRole",
        ] {
            assert!(!is_mutating(op), "{op}");
        }
        for op in [
            "RegisterTargets",
            "DeregisterTargets",
            "DeleteLoadBalancer",
            "ModifyRule",
            "AddTags",
            "SetRulePriorities",
            "AuthorizeSecurityGroupIngress",
            "AssociateWebACL",
            "ModifyCapacityReservation",
        ] {
            assert!(is_mutating(op), "{op}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_hung_attempt_is_abandoned_at_the_attempt_timeout_and_retried_as_transient() {
        let timeouts = CallTimeouts { attempt: Duration::from_secs(10), operation: Duration::from_secs(60) };
        let r = CallRunner::with(Throttler::new(default_rules()), AwsMetrics::default(), 1, timeouts, None);
        let n = AtomicU32::new(0);
        let start = Instant::now();
        let out = r
            .run(Service::Elbv2, "DescribeTargetHealth", || async {
                if n.fetch_add(1, Ordering::SeqCst) == 0 {
                    futures::future::pending::<()>().await;
                }
                Ok(5)
            })
            .await;
        assert_eq!(out, Ok(5), "the second attempt answers");
        let took = start.elapsed();
        assert!(took >= Duration::from_secs(10) && took < Duration::from_secs(11), "{took:?}");

        let n = AtomicU32::new(0);
        let out: Result<(), _> = r
            .run(Service::Elbv2, "RegisterTargets", || async {
                n.fetch_add(1, Ordering::SeqCst);
                futures::future::pending().await
            })
            .await;
        let e = out.unwrap_err();
        assert_eq!((e.kind, e.code.as_deref()), (ErrorKind::Transient, Some("ClientTimeout")));
        assert_eq!(n.load(Ordering::SeqCst), 2, "1 attempt + 1 retry");
    }

    /// Pauses between attempts (paused clock: attempts take no time, a pause exactly its delay up
    /// to tokio's 1 ms tick): retry k waits [100 ms × 2^(k-1), 100 ms × 2^k], never past
    /// `max_backoff`; the next call starts over at 100–200 ms.
    #[tokio::test(start_paused = true)]
    async fn retry_pauses_double_with_jitter_stop_at_the_cap_and_restart_per_call() {
        let mut runner =
            CallRunner::with(Throttler::new(default_rules()), AwsMetrics::default(), 6, CallTimeouts::default(), None);
        Arc::get_mut(&mut runner).unwrap().max_backoff = Duration::from_millis(1000);
        let r = runner;
        let times = Mutex::new(Vec::<Instant>::new());
        // Transient errors: not throttling, so the client-side throttle never adds a wait
        // (DescribeTargetHealth's burst is 40).
        let failing = |fails: usize| {
            let times = &times;
            move || async move {
                let mut t = times.lock().unwrap();
                t.push(Instant::now());
                if t.len() <= fails { Err(err(ErrorKind::Transient, "ServiceUnavailable")) } else { Ok(()) }
            }
        };
        let pauses = |times: &Mutex<Vec<Instant>>| -> Vec<Duration> {
            let mut t = times.lock().unwrap();
            let p = t.windows(2).map(|w| w[1] - w[0]).collect();
            t.clear();
            p
        };
        let ms = Duration::from_millis;
        r.run(Service::Elbv2, "DescribeTargetHealth", failing(6)).await.unwrap();
        let got = pauses(&times);
        assert_eq!(got.len(), 6, "6 failures, 6 pauses: {got:?}");
        for (k, (d, (lo, hi))) in
            got.iter().zip([(100, 200), (200, 400), (400, 800), (800, 1000), (1000, 1000), (1000, 1000)]).enumerate()
        {
            assert!(
                *d >= ms(lo) && *d <= ms(hi + 1),
                "retry {}: paused {d:?}, expected {lo}–{hi} ms (100 ms doubling, jitter up to 2×, cap 1 s): {got:?}",
                k + 1
            );
        }
        r.run(Service::Elbv2, "DescribeTargetHealth", failing(1)).await.unwrap();
        let got = pauses(&times);
        assert!(
            got.len() == 1 && got[0] >= ms(100) && got[0] <= ms(201),
            "a new call starts over at 100–200 ms: {got:?}"
        );
        // Jitter: the first pause of 100 calls spreads over its range (the paused clock keeps
        // whole milliseconds, so up to 101 values).
        let mut firsts = std::collections::BTreeSet::new();
        for _ in 0..100 {
            r.run(Service::Elbv2, "DescribeTargetHealth", failing(1)).await.unwrap();
            firsts.insert(pauses(&times)[0]);
        }
        assert!(firsts.len() > 20, "jitter: 100 first pauses took only {} distinct values", firsts.len());
    }

    #[tokio::test(start_paused = true)]
    async fn retries_stop_at_the_operation_timeout() {
        let timeouts = CallTimeouts { attempt: Duration::from_secs(10), operation: Duration::from_secs(25) };
        let r = CallRunner::with(Throttler::new(default_rules()), AwsMetrics::default(), 100, timeouts, None);
        let n = AtomicU32::new(0);
        let start = Instant::now();
        let out: Result<(), _> = r
            .run(Service::Elbv2, "DescribeTargetHealth", || async {
                n.fetch_add(1, Ordering::SeqCst);
                futures::future::pending().await
            })
            .await;
        let e = out.unwrap_err();
        assert_eq!(e.code.as_deref(), Some("ClientTimeout"));
        assert!(start.elapsed() <= Duration::from_secs(26), "{:?}", start.elapsed());
        assert!((2..=3).contains(&n.load(Ordering::SeqCst)), "{}", n.load(Ordering::SeqCst));
        assert!(e.message.contains("operation-timeout"), "{}", e.message);
    }
}
