//! The one backoff of the workspace: after a failure wait `min`, then twice that after the next
//! failure in a row, … up to `max`; every delay jittered upwards (up to +100 %, backon's jitter)
//! but never past `max`. Built on backon's `ExponentialBuilder` (the crate kube-runtime already
//! uses for its watchers).
//!
//! Users count their own failures in a row and reset the count on success:
//! - AWS call retries ([`crate::call`]): `100 ms … --aws max backoff`, reset per call;
//! - credential refreshes ([`crate::credentials::Timing::backoff`]): `1 s … 30 s`, reset on a
//!   successful refresh;
//! - the controller's reconcile errors, watch loops and per-object sequences
//!   (`controller/src/backoff.rs`, which re-exports this type).

use backon::{BackoffBuilder, ExponentialBuilder};
use std::time::Duration;

/// Capped exponential backoff (doubling from `min` to `max`), jittered unless
/// [`Backoff::without_jitter`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    jitter: bool,
}

impl Backoff {
    /// `max` below `min` is raised to `min` (a cap of 0 still waits `min`).
    pub const fn new(min: Duration, max: Duration) -> Self {
        Self { min, max: if max.as_nanos() < min.as_nanos() { min } else { max }, jitter: true }
    }

    /// Exactly `min × 2^(failures-1)` capped at `max` (tests that count retries on a real clock).
    pub const fn without_jitter(self) -> Self {
        Self { jitter: false, ..self }
    }

    pub fn min(&self) -> Duration {
        self.min
    }

    pub fn max(&self) -> Duration {
        self.max
    }

    fn builder(&self) -> ExponentialBuilder {
        let b = ExponentialBuilder::default()
            .with_min_delay(self.min)
            .with_max_delay(self.max)
            .with_factor(2.0)
            .without_max_times();
        if self.jitter { b.with_jitter() } else { b }
    }

    /// The delay after `failures` failures in a row (1 = the first): `min × 2^(failures-1)`
    /// capped at `max`, plus jitter (up to as much again), never past `max`. 0 is treated as 1.
    pub fn delay(&self, failures: u32) -> Duration {
        // Past 64 doublings every Duration is at the cap; do not walk further.
        let step = failures.clamp(1, 64) as usize;
        self.builder().build().nth(step - 1).unwrap_or(self.max).min(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;

    const S: fn(u64) -> Duration = Duration::from_secs;
    const MS: fn(u64) -> Duration = Duration::from_millis;

    /// Each delay lies in [base, min(2 × base, max)].
    fn assert_within(d: Duration, base: Duration, max: Duration, what: &str) {
        let hi = (base * 2).min(max);
        assert!(d >= base.min(max) && d <= hi, "{what}: waited {d:?}, expected between {base:?} and {hi:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn grows_doubling_with_jitter_then_stops_at_the_cap() {
        let b = Backoff::new(MS(100), MS(1000));
        for (n, base) in [100, 200, 400, 800, 1000, 1000].into_iter().enumerate() {
            let d = b.delay(n as u32 + 1);
            // Paused time: the wait is measured on tokio's clock, not slept for real.
            let t0 = Instant::now();
            tokio::time::sleep(d).await;
            let e = t0.elapsed();
            assert!(e >= d && e <= d + MS(1), "failure {}: slept {e:?} for a delay of {d:?}", n + 1);
            assert_within(d, MS(base), MS(1000), &format!("failure {}", n + 1));
        }
        // At the cap there is no room above it: exactly the cap.
        assert_eq!(b.delay(5), MS(1000));
    }

    #[test]
    fn jitter_spreads_delays_but_stays_within_bounds() {
        let b = Backoff::new(S(1), S(120));
        let third: Vec<Duration> = (0..200).map(|_| b.delay(3)).collect();
        for d in &third {
            assert_within(*d, S(4), S(120), "third failure");
        }
        let distinct: std::collections::BTreeSet<_> = third.iter().collect();
        assert!(distinct.len() > 100, "jitter: 200 draws gave only {} distinct delays", distinct.len());
    }

    #[test]
    fn without_jitter_is_exact() {
        let b = Backoff::new(S(1), S(30)).without_jitter();
        let got: Vec<Duration> = (1..=7).map(|n| b.delay(n)).collect();
        assert_eq!(got, [1, 2, 4, 8, 16, 30, 30].map(S));
    }

    #[test]
    fn a_cap_below_the_minimum_waits_the_minimum_and_huge_counts_stay_capped() {
        assert_eq!(Backoff::new(S(1), Duration::ZERO).delay(1), S(1));
        assert_eq!(Backoff::new(S(1), Duration::ZERO).delay(7), S(1));
        assert_eq!(Backoff::new(S(1), S(120)).delay(u32::MAX), S(120));
        assert_within(Backoff::new(S(1), S(120)).delay(0), S(1), S(120), "zero failures counts as one");
    }
}
