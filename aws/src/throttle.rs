//! Client-side token buckets, one per throttle rule (see `lbc_model::throttle`), with adaptive
//! slow-down: a `Throttling` answer halves the bucket's refill rate (down to 1/16 of the
//! configured rate) and each success wins back 5% of it, so the controller backs off the shared
//! per-account AWS bucket instead of hammering it.
//!
//! Written by hand rather than with a rate-limiter crate because the refill rate must change at
//! run time and waits must be reported per call; it is ~80 lines.

use lbc_model::throttle::{ThrottleRule, rule_for};
use std::sync::Mutex;
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
}

/// Token buckets for every configured rule.
pub struct Throttler {
    rules: Vec<ThrottleRule>,
    buckets: Vec<Mutex<Bucket>>,
}

impl Throttler {
    pub fn new(rules: Vec<ThrottleRule>) -> Self {
        let now = Instant::now();
        let buckets = rules
            .iter()
            .map(|r| {
                Mutex::new(Bucket {
                    base_rate: r.rate,
                    rate: r.rate,
                    burst: r.burst as f64,
                    tokens: r.burst as f64,
                    last: now,
                })
            })
            .collect();
        Self { rules, buckets }
    }

    /// Waits for a token of the rule matching `service`/`operation` (first match only) and
    /// returns how long it waited. Calls that match no rule pass at once.
    pub async fn acquire(&self, service: &str, operation: &str) -> Duration {
        let Some(i) = rule_for(&self.rules, service, operation) else {
            return Duration::ZERO;
        };
        let wait = {
            let mut b = self.buckets[i].lock().expect("throttle bucket lock");
            b.refill(Instant::now());
            // Reserve the token now (tokens may go negative) so waiters are served in order.
            b.tokens -= 1.0;
            if b.tokens >= 0.0 { Duration::ZERO } else { Duration::from_secs_f64(-b.tokens / b.rate) }
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        wait
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
}
