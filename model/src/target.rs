//! A target as AWS keys it, and the health AWS reports for it.

use std::fmt;
use std::net::IpAddr;

/// An IP target: AWS keys registrations by (Id, Port), so the same pod IP on two ports is two
/// targets. A target of a QUIC or TCP_QUIC group also carries its QUIC server ID, part of its
/// identity as in the upstream controller: a new pod at a reused address (a new server ID) is
/// registered afresh, so QUIC packets routed by server ID reach the pod that minted it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Target {
    pub ip: IpAddr,
    pub port: u16,
    pub quic: Option<QuicServerId>,
}

impl Target {
    pub fn new(ip: IpAddr, port: u16) -> Self {
        Self { ip, port, quic: None }
    }

    pub fn with_quic(self, id: QuicServerId) -> Self {
        Self { quic: Some(id), ..self }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ip {
            IpAddr::V4(ip) => write!(f, "{ip}:{}", self.port)?,
            IpAddr::V6(ip) => write!(f, "[{ip}]:{}", self.port)?,
        }
        match self.quic {
            Some(id) => write!(f, " (QUIC server ID {id})"),
            None => Ok(()),
        }
    }
}

/// A QUIC server ID: the 8 bytes a QUIC load balancer reads from a connection ID to route a
/// packet to its target. AWS writes it `0x` followed by 16 lowercase hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QuicServerId(pub [u8; 8]);

impl QuicServerId {
    /// AWS's form (`0x0123456789abcdef`); anything else is refused with the reason.
    pub fn parse_aws(s: &str) -> Result<Self, String> {
        let hex = s.strip_prefix("0x").ok_or_else(|| format!("QUIC server ID {s:?} does not start with 0x"))?;
        if hex.len() != 16 || !hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return Err(format!("QUIC server ID {s:?} is not 0x followed by 16 lowercase hex digits"));
        }
        let n = u64::from_str_radix(hex, 16).map_err(|e| format!("QUIC server ID {s:?}: {e}"))?;
        Ok(Self(n.to_be_bytes()))
    }

    /// The form the upstream's pod webhook injects into containers: the 8 bytes in standard
    /// base64 (`ASNFZ4mrze8=`).
    pub fn parse_env(s: &str) -> Result<Self, String> {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(s.trim())
            .map_err(|e| format!("{s:?} is not base64 ({e})"))?;
        let arr: [u8; 8] = bytes
            .as_slice()
            .try_into()
            .map_err(|_| format!("{s:?} decodes to {} bytes; a QUIC server ID is 8 bytes", bytes.len()))?;
        Ok(Self(arr))
    }

    /// The base64 form injected into containers.
    pub fn to_env(self) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(self.0)
    }
}

impl fmt::Display for QuicServerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:016x}", u64::from_be_bytes(self.0))
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
        let id = QuicServerId::parse_aws("0x0123456789abcdef").unwrap();
        assert_eq!(
            Target::new("10.0.1.5".parse().unwrap(), 443).with_quic(id).to_string(),
            "10.0.1.5:443 (QUIC server ID 0x0123456789abcdef)"
        );
    }

    #[test]
    fn quic_server_ids_round_trip_between_the_pod_and_the_aws_forms() {
        let id = QuicServerId::parse_env("ASNFZ4mrze8=").unwrap();
        assert_eq!(id.to_string(), "0x0123456789abcdef");
        assert_eq!(QuicServerId::parse_aws(&id.to_string()).unwrap(), id);
        assert_eq!(id.to_env(), "ASNFZ4mrze8=");
        for bad in ["0123456789abcdef", "0x0123456789ABCDEF", "0x0123", "0x0123456789abcdefab", "0xg123456789abcdef"] {
            assert!(QuicServerId::parse_aws(bad).is_err(), "{bad}");
        }
        let e = QuicServerId::parse_env("AQID").unwrap_err();
        assert!(e.contains("decodes to 3 bytes"), "{e}");
        assert!(QuicServerId::parse_env("not base64!").unwrap_err().contains("not base64"));
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
