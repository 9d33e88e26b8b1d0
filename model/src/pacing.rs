//! Pacing of target writes against the shared write bucket.
//!
//! Every RegisterTargets/DeregisterTargets call names one target group and every group draws on
//! one client-side bucket (4 calls/s, burst 20 by default). Sending each binding's change at once
//! spends the burst on calls of one or two targets while pods are still turning ready; once it is
//! empty each group waits a whole round of the bucket (groups / rate). With few groups writing, a
//! binding that wrote a moment ago waits a little before its next write: not at all while the
//! bucket is full, up to its share of a round of the bucket as it drains, so the burst lasts longer
//! and each call carries more targets.
//! With many groups writing (more than half the burst) every group gets one token per round
//! whatever the policy, and holding back only adds latency: no pacing then.
//! A change that takes targets out (a terminating endpoint) is never held: a terminating pod must
//! stop receiving new connections as soon as possible, and at 10k pods holding deregistrations
//! made scale-down 3× slower for a third fewer calls (docs/history/benchmarks.md, session 13).
//!
//! The model behind the numbers is `bench/harness/bucket_sim.py` (policy `adaptive`): at 10 groups
//! and a 0.9 s burst of 100 new targets, p99 2.40 → 1.58 s and calls 33 → 29; unchanged at 50
//! groups (docs/benchmarks.md, "Scale-up against the shared write bucket").

use std::time::Duration;

/// The bucket's burst is spread over this long.
pub const HORIZON: Duration = Duration::from_secs(2);

/// The write bucket as a call would find it now.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BucketLevel {
    /// Tokens left (negative: reserved ahead by waiting callers).
    pub tokens: f64,
    /// Refill rate, tokens per second (lowered after Throttling answers).
    pub rate: f64,
    pub burst: f64,
}

/// How long a binding waits before its next write.
///
/// `since_last_write`: time since this binding's last write (`None`: none within [`HORIZON`]);
/// `active`: bindings that wrote within [`HORIZON`], this one included; `removal`: the pending
/// change takes targets out.
pub fn write_hold(since_last_write: Option<Duration>, active: usize, level: BucketLevel, removal: bool) -> Duration {
    let Some(since) = since_last_write.filter(|_| !removal) else { return Duration::ZERO };
    let active = active.max(1);
    if 2.0 * active as f64 > level.burst || level.rate <= 0.0 {
        return Duration::ZERO;
    }
    // One binding's share of what the bucket can give over the horizon, scaled by how far the
    // bucket has drained: nothing while it is full, a whole share when it is empty.
    let tokens = level.tokens.clamp(0.0, level.burst);
    let per_second = level.rate + tokens / HORIZON.as_secs_f64();
    let drained = 1.0 - tokens / level.burst;
    let interval = Duration::from_secs_f64(active as f64 / per_second * drained);
    interval.saturating_sub(since)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: BucketLevel = BucketLevel { tokens: 20.0, rate: 4.0, burst: 20.0 };
    const EMPTY: BucketLevel = BucketLevel { tokens: 0.0, rate: 4.0, burst: 20.0 };

    fn ms(d: Duration) -> u128 {
        d.as_millis()
    }

    #[test]
    fn a_binding_that_has_not_written_lately_goes_at_once() {
        assert_eq!(write_hold(None, 10, EMPTY, false), Duration::ZERO);
        assert_eq!(write_hold(Some(Duration::ZERO), 1, EMPTY, true), Duration::ZERO, "a removal is never held");
    }

    #[test]
    fn the_hold_grows_as_the_bucket_drains_and_with_the_groups_writing() {
        // Full bucket: send at once.
        assert_eq!(write_hold(Some(Duration::ZERO), 1, FULL, false), Duration::ZERO);
        assert_eq!(write_hold(Some(Duration::ZERO), 10, FULL, false), Duration::ZERO);
        // Half full, 10 groups: 10 / (4 + 5) s, half of it.
        assert_eq!(ms(write_hold(Some(Duration::ZERO), 10, BucketLevel { tokens: 10.0, ..FULL }, false)), 555);
        // Empty bucket, one group: 1 / 4 s.
        assert_eq!(ms(write_hold(Some(Duration::ZERO), 1, EMPTY, false)), 250);
        // Empty bucket, 10 groups: one round of the bucket, 10 / 4 s.
        assert_eq!(ms(write_hold(Some(Duration::ZERO), 10, EMPTY, false)), 2500);
        // Reserved ahead counts as empty.
        assert_eq!(
            write_hold(Some(Duration::ZERO), 10, BucketLevel { tokens: -3.0, ..EMPTY }, false),
            Duration::from_millis(2500)
        );
        // Time since the last write counts.
        assert_eq!(ms(write_hold(Some(Duration::from_millis(2000)), 10, EMPTY, false)), 500);
        assert_eq!(write_hold(Some(Duration::from_secs(3)), 10, EMPTY, false), Duration::ZERO);
    }

    #[test]
    fn many_groups_writing_are_not_held() {
        // More than half the burst: each group gets one token per round anyway.
        assert_eq!(write_hold(Some(Duration::ZERO), 11, EMPTY, false), Duration::ZERO);
        assert_eq!(write_hold(Some(Duration::ZERO), 50, FULL, false), Duration::ZERO);
        // A zero-burst or stopped bucket: nothing to spread.
        assert_eq!(write_hold(Some(Duration::ZERO), 1, BucketLevel { burst: 0.0, ..FULL }, false), Duration::ZERO);
        assert_eq!(write_hold(Some(Duration::ZERO), 1, BucketLevel { rate: 0.0, ..FULL }, false), Duration::ZERO);
    }

    #[test]
    fn the_hold_never_exceeds_one_round_of_the_bucket() {
        for active in 1..=10 {
            for tokens in [-5.0, 0.0, 1.0, 7.5, 20.0] {
                for since in [0, 100, 1000, 5000] {
                    let level = BucketLevel { tokens, ..FULL };
                    let hold = write_hold(Some(Duration::from_millis(since)), active, level, false);
                    assert!(hold.as_secs_f64() <= active as f64 / level.rate + 1e-9, "{active} {tokens} {since}");
                }
            }
        }
    }
}
