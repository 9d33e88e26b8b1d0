//! Leader election decisions over a `coordination.k8s.io/v1` Lease: when to take it, when a held
//! lease counts as abandoned, and how long our own leadership lasts after a renewal.
//!
//! Expiry of another replica's lease is judged the way client-go judges it: by how long *this*
//! process has seen the lease record unchanged on its own monotonic clock, never by comparing
//! the `renewTime` written by another machine with our wall clock. So replicas' wall clocks may
//! disagree by any amount; what is assumed is only that their clocks *run* at nearly the same
//! rate (within `(lease − renew deadline) / lease`, i.e. 33 % at the defaults).

use std::time::Duration;

/// Timings derived from the lease duration (`--leader-election-lease-duration`), in client-go's
/// proportions (15 s lease → 10 s renew deadline, 2 s retry period).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseTimings {
    /// How long others wait, seeing the record unchanged, before taking the lease.
    pub lease: Duration,
    /// How long after the start of our last successful renewal we stop writing. A renewal that
    /// has not completed by then is abandoned and leadership dropped at once.
    pub renew_deadline: Duration,
    /// Pause between attempts (renewing while leading, acquiring while following).
    pub retry_period: Duration,
}

impl LeaseTimings {
    pub fn from_lease(lease: Duration) -> Self {
        let lease = lease.max(Duration::from_secs(3));
        Self { lease, renew_deadline: lease * 2 / 3, retry_period: (lease * 2 / 15).max(Duration::from_millis(200)) }
    }

    /// Time between our last write and the earliest moment another replica can take over: what
    /// absorbs in-flight writes and clock-rate differences.
    pub fn fence_margin(&self) -> Duration {
        self.lease - self.renew_deadline
    }
}

/// The parts of a Lease record that election looks at.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaseRecord {
    /// `spec.holderIdentity`; empty or absent = released.
    pub holder: Option<String>,
    /// `spec.renewTime` as written (only compared for change, never with a clock).
    pub renew_time: Option<String>,
    pub transitions: i32,
}

impl LeaseRecord {
    fn held_by(&self) -> Option<&str> {
        self.holder.as_deref().filter(|h| !h.is_empty())
    }
}

/// What to do with the Lease now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseDecision {
    /// It is ours: renew it (same transitions count).
    Renew,
    /// Free or abandoned: take it (transitions + 1 when it changes hands).
    Acquire { transitions: i32 },
    /// Another replica holds it; look again after the retry period.
    Busy { holder: String, expires_in: Duration },
}

/// Decides for `record` as seen now. `unchanged_for`: how long this process has seen exactly this
/// record (holder and renewTime); `None` when it just changed or was never seen before.
pub fn decide(
    record: &LeaseRecord,
    identity: &str,
    unchanged_for: Option<Duration>,
    t: &LeaseTimings,
) -> LeaseDecision {
    match record.held_by() {
        Some(h) if h == identity => LeaseDecision::Renew,
        None => LeaseDecision::Acquire { transitions: record.transitions + 1 },
        Some(h) => {
            let seen = unchanged_for.unwrap_or_default();
            if seen >= t.lease {
                LeaseDecision::Acquire { transitions: record.transitions + 1 }
            } else {
                LeaseDecision::Busy { holder: h.to_string(), expires_in: t.lease - seen }
            }
        }
    }
}

/// Until when (as an offset from the start of the renewal request) our leadership holds after a
/// successful renewal or acquisition.
pub fn leading_for(t: &LeaseTimings) -> Duration {
    t.renew_deadline
}

/// Until when (as an offset from the start of the renewal request) a write sent during our
/// leadership may still be waited for: half the fence margin past the leadership's end. The other
/// half is left to clock-rate differences, so no write of ours is outstanding when another
/// replica may start writing.
pub fn writes_end_for(t: &LeaseTimings) -> Duration {
    leading_for(t) + t.fence_margin() / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(holder: Option<&str>) -> LeaseRecord {
        LeaseRecord { holder: holder.map(str::to_string), renew_time: Some("t1".into()), transitions: 4 }
    }

    #[test]
    fn timings_follow_client_go_proportions() {
        let t = LeaseTimings::from_lease(Duration::from_secs(15));
        assert_eq!(t.renew_deadline, Duration::from_secs(10));
        assert_eq!(t.retry_period, Duration::from_secs(2));
        assert_eq!(t.fence_margin(), Duration::from_secs(5));
        assert!(leading_for(&t) < t.lease, "a leader stops before anyone may take over");
        assert_eq!(writes_end_for(&t), Duration::from_millis(12_500));
        assert!(writes_end_for(&t) < t.lease, "no write outstanding when anyone may take over");
        let small = LeaseTimings::from_lease(Duration::from_secs(1));
        assert_eq!(small.lease, Duration::from_secs(3), "floor");
    }

    #[test]
    fn decisions() {
        let t = LeaseTimings::from_lease(Duration::from_secs(15));
        let s = |n| Some(Duration::from_secs(n));
        let cases: Vec<(LeaseRecord, Option<Duration>, LeaseDecision)> = vec![
            (rec(Some("me")), None, LeaseDecision::Renew),
            (rec(Some("me")), s(100), LeaseDecision::Renew),
            (rec(None), None, LeaseDecision::Acquire { transitions: 5 }),
            (rec(Some("")), None, LeaseDecision::Acquire { transitions: 5 }),
            (rec(Some("b")), None, LeaseDecision::Busy { holder: "b".into(), expires_in: Duration::from_secs(15) }),
            (rec(Some("b")), s(14), LeaseDecision::Busy { holder: "b".into(), expires_in: Duration::from_secs(1) }),
            (rec(Some("b")), s(15), LeaseDecision::Acquire { transitions: 5 }),
            (rec(Some("b")), s(60), LeaseDecision::Acquire { transitions: 5 }),
        ];
        for (r, seen, want) in cases {
            assert_eq!(decide(&r, "me", seen, &t), want, "{r:?} seen unchanged {seen:?}");
        }
    }
}
