//! Client-side token buckets, one per throttle rule (see `lbc_model::throttle`), with adaptive
//! slow-down: a `Throttling` answer halves the bucket's refill rate (down to 1/16 of the
//! configured rate) and each success wins back 5% of it, so the controller backs off the shared
//! per-account AWS bucket instead of hammering it.
//!
//! A caller can take a token ahead of the call ([`Throttler::wait_for_capacity`]): it waits its
//! turn, then decides what to send from data read *after* the wait, and spends the [`Permit`] on
//! that call without waiting again. A permit dropped unspent puts its token back.
//!
//! Written by hand rather than with a rate-limiter crate because the refill rate must change at
//! run time, waits must be reported per call and tokens can be reserved ahead; it is ~150 lines.

use lbc_model::throttle::{ThrottleRule, rule_for};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

struct Bucket {
    base_rate: f64,
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + dt * self.rate).min(self.burst);
        self.last = now;
    }

    /// Takes a token now (tokens may go negative, so waiters are served in order) and returns
    /// how long until it is due.
    fn take(&mut self, now: Instant) -> Duration {
        self.refill(now);
        self.tokens -= 1.0;
        if self.tokens >= 0.0 { Duration::ZERO } else { Duration::from_secs_f64(-self.tokens / self.rate) }
    }
}

/// One token of one bucket, taken ahead of the call that spends it (see
/// [`Throttler::wait_for_capacity`]). Dropping it unspent returns the token to its bucket, so a
/// caller that ends up sending nothing costs the others nothing.
#[must_use = "a permit dropped unspent gives its token back"]
pub struct Permit {
    /// The bucket (rule index) the token came from; `None` for calls no rule limits.
    slot: Option<(usize, Arc<Mutex<Bucket>>)>,
    /// When the token is due.
    due: Instant,
    /// How long the holder already waited for it.
    waited: Duration,
}

impl Permit {
    /// A permit for a call no client-side rule limits (e.g. an adapter without a throttle).
    pub fn unlimited() -> Self {
        Self { slot: None, due: Instant::now(), waited: Duration::ZERO }
    }

    /// How long the holder has waited for this permit so far.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// Waits until the token is due; returns how long this call slept.
    async fn ready(&mut self) -> Duration {
        let wait = self.due.saturating_duration_since(Instant::now());
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
            self.waited += wait;
        }
        wait
    }

    /// Marks the token as used: no refund on drop.
    fn spend(mut self) {
        self.slot = None;
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some((_, bucket)) = self.slot.take() {
            let mut b = bucket.lock().expect("throttle bucket lock");
            b.refill(Instant::now());
            b.tokens = (b.tokens + 1.0).min(b.burst);
        }
    }
}

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permit").field("rule", &self.slot.as_ref().map(|s| s.0)).field("waited", &self.waited).finish()
    }
}

/// Token buckets for every configured rule.
pub struct Throttler {
    rules: Vec<ThrottleRule>,
    buckets: Vec<Arc<Mutex<Bucket>>>,
}

impl Throttler {
    pub fn new(rules: Vec<ThrottleRule>) -> Self {
        let now = Instant::now();
        let buckets = rules
            .iter()
            .map(|r| {
                Arc::new(Mutex::new(Bucket {
                    base_rate: r.rate,
                    rate: r.rate,
                    burst: r.burst as f64,
                    tokens: r.burst as f64,
                    last: now,
                }))
            })
            .collect();
        Self { rules, buckets }
    }

    /// Takes a token of the rule matching `service`/`operation` (first match only) without
    /// waiting; the permit says when it is due. Calls that match no rule get an unlimited permit.
    pub fn reserve(&self, service: &str, operation: &str) -> Permit {
        let Some(i) = rule_for(&self.rules, service, operation) else {
            return Permit::unlimited();
        };
        let now = Instant::now();
        let wait = self.buckets[i].lock().expect("throttle bucket lock").take(now);
        Permit { slot: Some((i, self.buckets[i].clone())), due: now + wait, waited: Duration::ZERO }
    }

    /// Waits for a token and hands it to the caller instead of spending it: the caller can read
    /// fresh data after the wait and then make the call with [`Throttler::spend`], which does not
    /// wait again. Cancelling the wait (dropping the future) returns the token.
    pub async fn wait_for_capacity(&self, service: &str, operation: &str) -> Permit {
        let mut permit = self.reserve(service, operation);
        permit.ready().await;
        permit
    }

    /// Spends `permit` on a call of `service`/`operation`, waiting only for what is left of its
    /// wait; returns the call's whole throttle wait (the permit's included). A permit of another
    /// bucket is given back and a token of the right one acquired.
    pub async fn spend(&self, mut permit: Permit, service: &str, operation: &str) -> Duration {
        let rule = rule_for(&self.rules, service, operation);
        if permit.slot.as_ref().map(|s| s.0) != rule {
            let waited = permit.waited;
            drop(permit);
            return waited + self.acquire(service, operation).await;
        }
        permit.ready().await;
        let waited = permit.waited;
        permit.spend();
        waited
    }

    /// Waits for a token of the rule matching `service`/`operation` (first match only), spends
    /// it, and returns how long it waited. Calls that match no rule pass at once.
    pub async fn acquire(&self, service: &str, operation: &str) -> Duration {
        let mut permit = self.reserve(service, operation);
        let waited = permit.ready().await;
        permit.spend();
        waited
    }

    /// AWS said `Throttling`: halve the refill rate of the matching bucket.
    pub fn on_throttled(&self, service: &str, operation: &str) {
        if let Some(i) = rule_for(&self.rules, service, operation) {
            let mut b = self.buckets[i].lock().expect("throttle bucket lock");
            b.refill(Instant::now());
            b.rate = (b.rate / 2.0).max(b.base_rate / 16.0);
        }
    }

    /// A call succeeded: recover 5% of the configured rate.
    pub fn on_success(&self, service: &str, operation: &str) {
        if let Some(i) = rule_for(&self.rules, service, operation) {
            let mut b = self.buckets[i].lock().expect("throttle bucket lock");
            if b.rate < b.base_rate {
                b.refill(Instant::now());
                b.rate = (b.rate + b.base_rate * 0.05).min(b.base_rate);
            }
        }
    }

    /// Current refill rate of the bucket a call would use (for tests and metrics).
    pub fn current_rate(&self, service: &str, operation: &str) -> Option<f64> {
        rule_for(&self.rules, service, operation).map(|i| self.buckets[i].lock().expect("throttle bucket lock").rate)
    }

    /// The bucket a call would use, as it is now: for pacing writes.
    pub fn level(&self, service: &str, operation: &str) -> Option<lbc_model::pacing::BucketLevel> {
        rule_for(&self.rules, service, operation).map(|i| {
            let mut b = self.buckets[i].lock().expect("throttle bucket lock");
            b.refill(Instant::now());
            lbc_model::pacing::BucketLevel { tokens: b.tokens, rate: b.rate, burst: b.burst }
        })
    }

    /// Tokens left in the bucket a call would use (negative: reserved ahead); for tests.
    pub fn tokens(&self, service: &str, operation: &str) -> Option<f64> {
        rule_for(&self.rules, service, operation).map(|i| {
            let mut b = self.buckets[i].lock().expect("throttle bucket lock");
            b.refill(Instant::now());
            b.tokens
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lbc_model::throttle::{ELBV2_SERVICE, parse_rules};

    fn throttler() -> Throttler {
        Throttler::new(parse_rules("Elastic Load Balancing v2:RegisterTargets=2:3").unwrap())
    }

    #[tokio::test(start_paused = true)]
    async fn burst_then_rate() {
        let t = throttler();
        for _ in 0..3 {
            assert_eq!(t.acquire(ELBV2_SERVICE, "RegisterTargets").await, Duration::ZERO);
        }
        // Bucket empty: the 4th waits 1/rate = 0.5 s, the 5th another 0.5 s after it.
        assert_eq!(t.acquire(ELBV2_SERVICE, "RegisterTargets").await, Duration::from_millis(500));
        assert_eq!(t.acquire(ELBV2_SERVICE, "RegisterTargets").await, Duration::from_millis(500));
        // Unmatched operations (no rule) pass at once.
        assert_eq!(t.acquire("STS", "AssumeRole").await, Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn adaptive_slow_down_and_recovery() {
        let t = throttler();
        t.on_throttled(ELBV2_SERVICE, "RegisterTargets");
        assert_eq!(t.current_rate(ELBV2_SERVICE, "RegisterTargets"), Some(1.0));
        for _ in 0..10 {
            t.on_throttled(ELBV2_SERVICE, "RegisterTargets");
        }
        assert_eq!(t.current_rate(ELBV2_SERVICE, "RegisterTargets"), Some(2.0 / 16.0), "floor at 1/16");
        for _ in 0..100 {
            t.on_success(ELBV2_SERVICE, "RegisterTargets");
        }
        assert_eq!(t.current_rate(ELBV2_SERVICE, "RegisterTargets"), Some(2.0), "recovers to the configured rate");
    }

    #[tokio::test(start_paused = true)]
    async fn permit_waits_once_and_is_spent_without_waiting_again() {
        let t = throttler();
        for _ in 0..3 {
            t.acquire(ELBV2_SERVICE, "RegisterTargets").await;
        }
        let start = Instant::now();
        let p = t.wait_for_capacity(ELBV2_SERVICE, "RegisterTargets").await;
        assert_eq!(start.elapsed(), Duration::from_millis(500), "waited its turn");
        assert_eq!(p.waited(), Duration::from_millis(500));
        // Spending it later costs no further wait; the call reports the permit's wait.
        let start = Instant::now();
        assert_eq!(t.spend(p, ELBV2_SERVICE, "RegisterTargets").await, Duration::from_millis(500));
        assert_eq!(start.elapsed(), Duration::ZERO);
        // The token is gone: the next caller waits a full interval.
        assert_eq!(t.acquire(ELBV2_SERVICE, "RegisterTargets").await, Duration::from_millis(500));
    }

    #[tokio::test(start_paused = true)]
    async fn unspent_permit_gives_its_token_back() {
        let t = throttler();
        let p = t.wait_for_capacity(ELBV2_SERVICE, "RegisterTargets").await;
        assert_eq!(t.tokens(ELBV2_SERVICE, "RegisterTargets"), Some(2.0));
        drop(p);
        assert_eq!(t.tokens(ELBV2_SERVICE, "RegisterTargets"), Some(3.0), "refunded, capped at burst");
        // A reservation ahead of time moves later callers back; giving it back moves them forward.
        for _ in 0..3 {
            t.acquire(ELBV2_SERVICE, "RegisterTargets").await;
        }
        let ahead = t.reserve(ELBV2_SERVICE, "RegisterTargets");
        drop(ahead);
        assert_eq!(t.acquire(ELBV2_SERVICE, "RegisterTargets").await, Duration::from_millis(500));
    }

    #[tokio::test(start_paused = true)]
    async fn cancelled_wait_returns_the_token() {
        let t = throttler();
        for _ in 0..3 {
            t.acquire(ELBV2_SERVICE, "RegisterTargets").await;
        }
        let waiting =
            tokio::time::timeout(Duration::from_millis(100), t.wait_for_capacity(ELBV2_SERVICE, "RegisterTargets"));
        assert!(waiting.await.is_err(), "gave up before the token was due");
        // 0.1 s of refill at 2/s = 0.2 tokens; the cancelled reservation did not keep one.
        let left = t.tokens(ELBV2_SERVICE, "RegisterTargets").unwrap();
        assert!((left - 0.2).abs() < 1e-9, "{left}");
    }

    #[tokio::test(start_paused = true)]
    async fn permits_of_another_bucket_or_no_rule() {
        let t = throttler();
        // No rule: unlimited, nothing to give back.
        let p = t.wait_for_capacity("STS", "AssumeRole").await;
        assert_eq!(t.spend(p, "STS", "AssumeRole").await, Duration::ZERO);
        // Spent on an operation of another bucket: returned, and a token of the right bucket taken.
        let p = t.reserve(ELBV2_SERVICE, "RegisterTargets");
        assert_eq!(t.spend(p, "STS", "AssumeRole").await, Duration::ZERO);
        assert_eq!(t.tokens(ELBV2_SERVICE, "RegisterTargets"), Some(3.0));
        let p = Permit::unlimited();
        assert_eq!(t.spend(p, ELBV2_SERVICE, "RegisterTargets").await, Duration::ZERO);
        assert_eq!(t.tokens(ELBV2_SERVICE, "RegisterTargets"), Some(2.0));
    }
}
