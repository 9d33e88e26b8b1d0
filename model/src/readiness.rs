//! Target health → the pod readiness-gate condition `target-health.elbv2.k8s.aws/<binding>`,
//! and how often health is worth polling.

use crate::target::{HealthState, MESSAGE_REGISTRATION_IN_PROGRESS, REASON_REGISTRATION_IN_PROGRESS, TargetHealth};
use std::time::Duration;

/// The condition a gated pod should carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateCondition {
    /// "True", "False" or "Unknown".
    pub status: &'static str,
    pub reason: Option<String>,
    pub message: Option<String>,
}

/// Reason and message on pods whose binding was deleted: their gate is released.
pub const REASON_BINDING_DELETED: &str = "TargetGroupBindingDeleted";
pub const MESSAGE_BINDING_DELETED: &str = "Target Group Binding is deleted";

impl GateCondition {
    /// Condition for a target AWS reported on. `True` only when AWS says healthy.
    pub fn from_health(h: &TargetHealth) -> Self {
        Self {
            status: if h.state == HealthState::Healthy { "True" } else { "False" },
            reason: h.reason.clone(),
            message: h.description.clone(),
        }
    }

    /// Condition for a target whose registration was just sent and not yet described.
    pub fn registering() -> Self {
        Self {
            status: "False",
            reason: Some(REASON_REGISTRATION_IN_PROGRESS.into()),
            message: Some(MESSAGE_REGISTRATION_IN_PROGRESS.into()),
        }
    }

    /// Condition for a target with no health information at all.
    pub fn unknown() -> Self {
        Self { status: "Unknown", reason: None, message: None }
    }

    /// Condition releasing the gate of a deleted binding.
    pub fn binding_deleted() -> Self {
        Self {
            status: "True",
            reason: Some(REASON_BINDING_DELETED.into()),
            message: Some(MESSAGE_BINDING_DELETED.into()),
        }
    }

    /// Whether a pod whose current condition is `(status, reason, message)` needs a patch.
    /// Patches are only sent on a real change, so healthy steady state costs no API calls.
    pub fn differs_from(&self, current: Option<(&str, Option<&str>, Option<&str>)>) -> bool {
        match current {
            None => true,
            Some((s, r, m)) => {
                s != self.status
                    || r.filter(|x| !x.is_empty()) != self.reason.as_deref().filter(|x| !x.is_empty())
                    || m.filter(|x| !x.is_empty()) != self.message.as_deref().filter(|x| !x.is_empty())
            }
        }
    }
}

/// How often to poll DescribeTargetHealth for a target group with gates still pending: half the
/// group's health-check interval (a target turns healthy only at a check), never more often than
/// `floor` nor less often than `ceiling`. ALBC uses a fixed 15 s.
pub fn health_poll_interval(health_check_interval_secs: Option<i32>, floor: Duration, ceiling: Duration) -> Duration {
    let half =
        health_check_interval_secs.filter(|s| *s > 0).map(|s| Duration::from_millis(s as u64 * 500)).unwrap_or(ceiling);
    half.clamp(floor, ceiling.max(floor))
}

/// How long until the next DescribeTargetHealth for pending readiness gates is worth making.
///
/// Each pending target is worth looking at one `interval` after it was last seen: at the last
/// poll, or at its registration by this process if that came later (`registered_ago`; `None`:
/// registered before this process, seen only by polls). So a target registered just before a
/// due poll gets its own interval instead of being polled while surely still initial, and pods
/// added later wait as long as the first ones. Never sooner than `floor` after the last poll;
/// due at once for a target no poll has seen and whose registration is unknown.
pub fn health_poll_due(
    since_last_poll: Option<Duration>,
    pending_registered_ago: impl IntoIterator<Item = Option<Duration>>,
    interval: Duration,
    floor: Duration,
) -> Duration {
    let soonest = pending_registered_ago
        .into_iter()
        .map(|reg| {
            let seen_ago = match (reg, since_last_poll) {
                (Some(r), Some(p)) => r.min(p),
                (r, p) => r.or(p).unwrap_or(interval),
            };
            interval.saturating_sub(seen_ago)
        })
        .min()
        .unwrap_or(interval);
    soonest.max(since_last_poll.map_or(Duration::ZERO, |p| floor.saturating_sub(p)))
}

/// How long the AWS keys must still last, when they can no longer be refreshed, for a readiness
/// gate to turn True.
pub const GATE_KEYS_MARGIN: Duration = Duration::from_secs(30);

/// Whether a readiness gate may turn True now. `unrefreshable_keys_left`: `None` while the
/// credentials refresh normally (or never expire); `Some(left)` when the last refresh failed and
/// the keys in hand expire in `left`.
///
/// A gate turning True lets the rollout delete an old pod, whose target must then be
/// deregistered before the pod stops serving: an AWS write. Keys about to expire with no refresh
/// possible (Vault sealed or unreachable) would let the rollout delete a pod the controller can
/// no longer deregister, and its traffic would fail. So the gate waits: the rollout stalls
/// (safely: the old pods keep serving) until the credentials recover.
pub fn gate_may_open(unrefreshable_keys_left: Option<Duration>) -> bool {
    unrefreshable_keys_left.is_none_or(|left| left >= GATE_KEYS_MARGIN)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_gate_waits_while_unrefreshable_keys_are_about_to_expire() {
        use super::{Duration, GATE_KEYS_MARGIN, gate_may_open};
        assert!(gate_may_open(None), "refreshing normally");
        assert!(gate_may_open(Some(Duration::from_secs(3600))), "an outage with an hour of keys left");
        assert!(gate_may_open(Some(GATE_KEYS_MARGIN)));
        assert!(!gate_may_open(Some(GATE_KEYS_MARGIN - Duration::from_millis(1))));
        assert!(!gate_may_open(Some(Duration::ZERO)), "expired");
    }

    use super::*;

    fn th(state: HealthState, reason: Option<&str>, desc: Option<&str>) -> TargetHealth {
        TargetHealth { state, reason: reason.map(str::to_string), description: desc.map(str::to_string) }
    }

    #[test]
    fn condition_from_health_table() {
        use HealthState::*;
        let cases = [
            (th(Healthy, None, None), "True"),
            (th(Initial, Some("Elb.InitialHealthChecking"), Some("Initial health checks in progress")), "False"),
            (th(Unhealthy, Some("Target.FailedHealthChecks"), Some("Health checks failed")), "False"),
            (th(Draining, Some("Target.DeregistrationInProgress"), None), "False"),
            (th(Unavailable, None, None), "False"),
        ];
        for (h, want) in cases {
            let c = GateCondition::from_health(&h);
            assert_eq!(c.status, want, "{h:?}");
            assert_eq!(c.reason, h.reason);
            assert_eq!(c.message, h.description);
        }
        assert_eq!(GateCondition::registering().reason.as_deref(), Some("Elb.RegistrationInProgress"));
        assert_eq!(GateCondition::unknown().status, "Unknown");
        assert_eq!(GateCondition::binding_deleted().status, "True");
    }

    #[test]
    fn patch_only_on_change() {
        let c = GateCondition::from_health(&th(HealthState::Initial, Some("Elb.InitialHealthChecking"), Some("x")));
        assert!(c.differs_from(None));
        assert!(!c.differs_from(Some(("False", Some("Elb.InitialHealthChecking"), Some("x")))));
        assert!(c.differs_from(Some(("True", Some("Elb.InitialHealthChecking"), Some("x")))));
        assert!(c.differs_from(Some(("False", Some("Elb.RegistrationInProgress"), Some("x")))));
        let healthy = GateCondition::from_health(&th(HealthState::Healthy, None, None));
        assert!(!healthy.differs_from(Some(("True", Some(""), Some("")))), "empty and absent are the same");
    }

    #[test]
    fn poll_interval_follows_health_check_interval() {
        let (floor, ceil) = (Duration::from_secs(1), Duration::from_secs(5));
        assert_eq!(health_poll_interval(Some(10), floor, ceil), Duration::from_secs(5));
        assert_eq!(health_poll_interval(Some(5), floor, ceil), Duration::from_millis(2500));
        assert_eq!(health_poll_interval(Some(30), floor, ceil), ceil);
        assert_eq!(health_poll_interval(Some(1), floor, ceil), floor);
        assert_eq!(health_poll_interval(None, floor, ceil), ceil);
        assert_eq!(health_poll_interval(Some(0), floor, ceil), ceil);
        assert_eq!(
            health_poll_interval(Some(10), Duration::from_secs(9), Duration::from_secs(2)),
            Duration::from_secs(9)
        );
    }

    #[test]
    fn health_poll_due_table() {
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        let (interval, floor) = (s(2), s(1));
        #[allow(clippy::type_complexity)] // a table of cases reads best as tuples
        let cases: &[(&str, Option<Duration>, &[Option<Duration>], Duration)] = &[
            ("no poll yet, registered by an earlier process: now", None, &[None], s(0)),
            ("just registered, no poll yet: one interval", None, &[Some(s(0))], s(2)),
            ("registered 1.5 s ago, no poll yet", None, &[Some(ms(1500))], ms(500)),
            ("old target, last poll 0.5 s ago", Some(ms(500)), &[None], ms(1500)),
            ("old target, last poll long ago: now", Some(s(9)), &[None], s(0)),
            ("registered after an old poll: its own interval, not at once", Some(s(9)), &[Some(ms(200))], ms(1800)),
            ("registered before the last poll: the poll's clock", Some(ms(500)), &[Some(s(3))], ms(1500)),
            ("the soonest target decides", Some(s(9)), &[Some(ms(200)), Some(s(3)), None], s(0)),
            ("nothing pending: one interval", Some(s(9)), &[], s(2)),
        ];
        for (what, last, regs, want) in cases {
            assert_eq!(health_poll_due(*last, regs.iter().copied(), interval, floor), *want, "{what}");
        }
        let tight = health_poll_due(Some(ms(300)), [None], s(2), s(3));
        assert_eq!(tight, ms(2700), "a floor above the interval still applies");
    }
}
