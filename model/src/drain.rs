//! When a terminating replica may stop serving webhooks. After SIGTERM the pod leaves the webhook
//! Service's endpoints, but the API server learns it through the endpoints controller and its own
//! watch, which lag under load: a replica that stops while requests still arrive makes them fail
//! (or fail open, for the pod mutator). So it answers for at least the configured delay, then for as
//! long as requests keep coming, and stops after a quiet spell, never later than a bound below the
//! pod's termination grace period.

use std::time::Duration;

/// Quiet spell after which the API server is taken to have stopped routing here.
pub const QUIET: Duration = Duration::from_secs(2);
/// Longest the drain runs past the configured delay.
pub const EXTENSION: Duration = Duration::from_secs(10);

/// `since_stop`: time since SIGTERM; `since_request`: time since the last request arrived (`None`:
/// none since start); `min`: `--webhook-shutdown-delay` (zero: no drain at all, for a process that is
/// not behind a Service).
pub fn drained(since_stop: Duration, since_request: Option<Duration>, min: Duration) -> bool {
    if min.is_zero() {
        return true;
    }
    if since_stop < min {
        return false;
    }
    if since_stop >= min + EXTENSION {
        return true;
    }
    since_request.is_none_or(|r| r >= QUIET)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn waits_the_delay_then_for_quiet_within_a_bound() {
        let rows: &[(u64, Option<u64>, u64, bool)] = &[
            // since stop, since last request, min delay, drained
            (0, None, 5, false),
            (4, Some(10), 5, false), // the delay always runs
            (5, None, 5, true),      // no request ever: the delay is enough
            (5, Some(3), 5, true),   // quiet for 3 s
            (5, Some(1), 5, false),  // still routed here
            (12, Some(0), 5, false),
            (14, Some(0), 5, false),
            (15, Some(0), 5, true), // the bound: 5 + 10 s
            (0, None, 0, true),     // --webhook-shutdown-delay=0: no drain
            (0, Some(0), 0, true),
        ];
        for (stop, req, min, want) in rows {
            assert_eq!(drained(S(*stop), req.map(S), S(*min)), *want, "{stop} {req:?} {min}");
        }
    }
}
