//! The one backoff of the controller: after a failure, wait `min`, then twice that after the
//! next failure in a row, … up to `max`; every delay jittered upwards (up to +100 %, backon's
//! jitter) but never past `max`; a success starts over. The delays are [`Backoff`], shared with
//! the AWS call retries and credential refreshes (`lbc_aws::backoff`, on backon).
//!
//! - [`Backoff::delay`]: the delay after `n` failures in a row, for callers that already count
//!   their failures (a binding's state).
//! - [`Failures`]: failures in a row of one thing (a watch loop, a cluster-wide pass), reset on success.
//! - [`PerKey`]: one sequence per object (Service, IngressGroup), reset on its success.
//! - [`watch`]: the backoff of kube's watchers (reflectors), reset by kube on every event.
//!
//! Fixed periodic re-checks ("unresolved, look again in 30 s") are schedules, not backoffs: they
//! stay named constants next to the code that schedules them.

use backon::ExponentialBuilder;
pub use lbc_aws::backoff::Backoff;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Duration;

/// Reconcile errors of bindings, Services and IngressGroups start here; their cap is
/// `--targetgroupbinding-max-exponential-backoff-delay`.
pub const RECONCILE_MIN: Duration = Duration::from_secs(1);

/// Reconcile errors: 1 s, 2 s, 4 s … up to `max` (the flag).
pub fn reconcile(max: Duration) -> Backoff {
    Backoff::new(RECONCILE_MIN, max)
}

/// Failures in a row of one thing (a watch loop, a cluster-wide pass) and the delay they call for.
#[derive(Clone, Debug)]
pub struct Failures {
    backoff: Backoff,
    failures: u32,
}

impl Failures {
    pub fn new(backoff: Backoff) -> Self {
        Self { backoff, failures: 0 }
    }

    /// Counts a failure; the delay before the next attempt.
    pub fn failed(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        self.backoff.delay(self.failures)
    }

    /// Counts a failure and sleeps (tokio time) for the delay it calls for.
    pub async fn failed_wait(&mut self) -> Duration {
        let d = self.failed();
        tokio::time::sleep(d).await;
        d
    }

    /// A success: the next failure waits `min` again.
    pub fn succeeded(&mut self) {
        self.failures = 0;
    }

    pub fn count(&self) -> u32 {
        self.failures
    }
}

/// Failures in a row per key (Service, IngressGroup); a key that succeeds starts over.
pub struct PerKey<K> {
    backoff: Backoff,
    failures: Mutex<HashMap<K, u32>>,
}

impl<K: Hash + Eq + Clone> PerKey<K> {
    pub fn new(backoff: Backoff) -> Self {
        Self { backoff, failures: Mutex::default() }
    }

    /// Counts a failure of `k`: (failures in a row, delay before its next attempt).
    pub fn failed(&self, k: &K) -> (u32, Duration) {
        let failures = {
            let mut m = self.failures.lock().expect("backoff");
            let f = m.entry(k.clone()).or_default();
            *f = f.saturating_add(1);
            *f
        };
        (failures, self.backoff.delay(failures))
    }

    pub fn succeeded(&self, k: &K) {
        self.failures.lock().expect("backoff").remove(k);
    }
}

/// Backoff between failed watch/list attempts of the reflectors: short (250 ms … 4 s), because
/// every second blind is a second of pod changes not acted on (kube's default grows to 30 s),
/// jittered so replicas do not relist in step. kube resets it on every event.
pub fn watch() -> kube::runtime::watcher::ExponentialBackoff {
    ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(250))
        .with_max_delay(Duration::from_secs(4))
        .with_jitter()
        .without_max_times()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;

    const S: fn(u64) -> Duration = Duration::from_secs;

    /// Each delay lies in [base, min(2 × base, max)].
    fn assert_within(d: Duration, base: Duration, max: Duration, what: &str) {
        let hi = (base * 2).min(max);
        assert!(d >= base.min(max) && d <= hi, "{what}: waited {d:?}, expected between {base:?} and {hi:?}");
    }

    /// tokio's timer has millisecond ticks: the paused clock lands on the tick at or after `d`.
    fn assert_slept(t0: Instant, d: Duration, what: &str) {
        let e = t0.elapsed();
        assert!(e >= d && e <= d + Duration::from_millis(1), "{what}: slept {e:?} for a delay of {d:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn grows_doubling_with_jitter_then_stops_at_the_cap() {
        let b = Backoff::new(S(1), S(20));
        let mut r = Failures::new(b);
        // Paused time: each wait is measured on tokio's clock, not slept for real.
        for (n, base) in [1, 2, 4, 8, 16, 20, 20, 20].into_iter().enumerate() {
            let t0 = Instant::now();
            let d = r.failed_wait().await;
            assert_slept(t0, d, &format!("failure {}", n + 1));
            assert_within(d, S(base), S(20), &format!("failure {}", n + 1));
        }
        assert_eq!(r.count(), 8);
        // At the cap there is no room above it: exactly the cap.
        assert_eq!(r.failed(), S(20));
    }

    #[tokio::test(start_paused = true)]
    async fn a_success_starts_over_at_the_minimum() {
        let mut r = Failures::new(Backoff::new(S(10), S(300)));
        for _ in 0..5 {
            r.failed();
        }
        assert!(r.failed() >= S(160), "six failures in a row: at least 10 s × 2^5");
        r.succeeded();
        assert_eq!(r.count(), 0);
        let t0 = Instant::now();
        let d = r.failed_wait().await;
        assert_within(d, S(10), S(300), "first failure after a success");
        assert_slept(t0, d, "first failure after a success");
    }

    #[test]
    fn each_key_backs_off_on_its_own_and_resets_on_success() {
        let p: PerKey<&str> = PerKey::new(reconcile(S(60)));
        for n in 1..=4 {
            let (f, d) = p.failed(&"a");
            assert_eq!(f, n);
            assert_within(d, S(1 << (n - 1)), S(60), "key a");
        }
        let (f, d) = p.failed(&"b");
        assert_eq!(f, 1, "another key's failures do not count");
        assert_within(d, S(1), S(60), "key b");
        p.succeeded(&"a");
        assert_eq!(p.failed(&"a").0, 1, "success resets");
    }
}
