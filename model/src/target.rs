//! A target as AWS keys it, and the health AWS reports for it.

use std::fmt;
use std::net::IpAddr;

/// An IP target: AWS keys registrations by (Id, Port), so the same pod IP on two ports is two
/// targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Target {
    pub ip: IpAddr,
    pub port: u16,
}

impl Target {
    pub fn new(ip: IpAddr, port: u16) -> Self {
        Self { ip, port }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ip {
            IpAddr::V4(ip) => write!(f, "{ip}:{}", self.port),
            IpAddr::V6(ip) => write!(f, "[{ip}]:{}", self.port),
        }
    }
}

/// Target health state as ELBv2 reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HealthState {
    Initial,
    Healthy,
    Unhealthy,
    UnhealthyDraining,
    Unused,
    Draining,
    Unavailable,
}

impl HealthState {
    /// Every state, in AWS's documentation order (for exhaustive tests).
    pub const ALL: [HealthState; 7] = [
        HealthState::Initial,
        HealthState::Healthy,
        HealthState::Unhealthy,
        HealthState::UnhealthyDraining,
        HealthState::Unused,
        HealthState::Draining,
        HealthState::Unavailable,
    ];

    /// Parses AWS's wire value; unknown values are treated as `Unavailable` (never healthy).
    pub fn from_aws(s: &str) -> Self {
        match s {
            "initial" => Self::Initial,
            "healthy" => Self::Healthy,
            "unhealthy" => Self::Unhealthy,
            "unhealthy.draining" => Self::UnhealthyDraining,
            "unused" => Self::Unused,
            "draining" => Self::Draining,
            _ => Self::Unavailable,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Initial => "initial",
            Self::Healthy => "healthy",
            Self::Unhealthy => "unhealthy",
            Self::UnhealthyDraining => "unhealthy.draining",
            Self::Unused => "unused",
            Self::Draining => "draining",
            Self::Unavailable => "unavailable",
        }
    }

    /// Draining targets are on their way out: they do not count as registered, so an endpoint
    /// that comes back is registered again instead of being matched to a leaving target.
    pub fn is_draining(self) -> bool {
        matches!(self, Self::Draining | Self::UnhealthyDraining)
    }

    /// Whether the target is registered and not leaving.
    pub fn is_registered(self) -> bool {
        matches!(self, Self::Initial | Self::Healthy | Self::Unhealthy | Self::Unavailable)
    }
}

/// AWS's reason for an `unused` target that is not registered at all.
pub const REASON_NOT_REGISTERED: &str = "Target.NotRegistered";

/// Health of one target as read from DescribeTargetHealth.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetHealth {
    pub state: HealthState,
    /// AWS reason code, e.g. `Elb.InitialHealthChecking`.
    pub reason: Option<String>,
    pub description: Option<String>,
}

impl TargetHealth {
    /// AWS says the target is not (or no longer) registered: `unused` because
    /// `Target.NotRegistered`, or draining after a deregistration. Such a target must never turn
    /// a readiness gate True, and a target we want is registered again. (`unused` for other
    /// reasons, e.g. `Target.NotInUse` before a listener routes to the group, is registered.)
    pub fn is_not_registered(&self) -> bool {
        self.state.is_draining()
            || (self.state == HealthState::Unused && self.reason.as_deref() == Some(REASON_NOT_REGISTERED))
    }

    pub fn new(state: HealthState) -> Self {
        Self { state, reason: None, description: None }
    }
}

/// Reason AWS gives, and we give, for a target whose registration has just been sent.
pub const REASON_REGISTRATION_IN_PROGRESS: &str = "Elb.RegistrationInProgress";
pub const MESSAGE_REGISTRATION_IN_PROGRESS: &str = "Target registration is in progress";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_formats_v4_and_v6() {
        assert_eq!(Target::new("10.0.1.5".parse().unwrap(), 80).to_string(), "10.0.1.5:80");
        assert_eq!(Target::new("fd00::5".parse().unwrap(), 443).to_string(), "[fd00::5]:443");
    }

    #[test]
    fn states_round_trip_and_classify() {
        for s in ["initial", "healthy", "unhealthy", "unhealthy.draining", "unused", "draining", "unavailable"] {
            assert_eq!(HealthState::from_aws(s).as_str(), s);
        }
        assert_eq!(HealthState::from_aws("something-new"), HealthState::Unavailable);
        assert!(HealthState::Draining.is_draining());
        assert!(HealthState::UnhealthyDraining.is_draining());
        assert!(!HealthState::Healthy.is_draining());
        assert!(HealthState::Initial.is_registered());
        assert!(!HealthState::Draining.is_registered());
        assert!(!HealthState::Unused.is_registered());
    }

    #[test]
    fn not_registered_answers() {
        let h =
            |state, reason: Option<&str>| TargetHealth { state, reason: reason.map(str::to_string), description: None };
        assert!(h(HealthState::Unused, Some(REASON_NOT_REGISTERED)).is_not_registered());
        assert!(h(HealthState::Draining, Some("Target.DeregistrationInProgress")).is_not_registered());
        assert!(h(HealthState::UnhealthyDraining, None).is_not_registered());
        assert!(!h(HealthState::Unused, Some("Target.NotInUse")).is_not_registered(), "registered, not routed yet");
        assert!(!h(HealthState::Healthy, None).is_not_registered());
        assert!(!h(HealthState::Initial, Some("Elb.RegistrationInProgress")).is_not_registered());
    }
}
