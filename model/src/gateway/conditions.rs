//! Status conditions as Gateway API defines them: one per type, with the reasons of
//! `apis/v1/{gateway,shared}_types.go` (the conformance suite compares type, status and reason).

/// A condition's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CondStatus {
    True,
    False,
    Unknown,
}

impl CondStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CondStatus::True => "True",
            CondStatus::False => "False",
            CondStatus::Unknown => "Unknown",
        }
    }
}

impl From<bool> for CondStatus {
    fn from(b: bool) -> Self {
        if b { CondStatus::True } else { CondStatus::False }
    }
}

/// One condition to write (the writer adds `observedGeneration` and the transition time).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cond {
    pub type_: &'static str,
    pub status: CondStatus,
    pub reason: &'static str,
    pub message: String,
}

impl Cond {
    pub fn new(
        type_: &'static str,
        status: impl Into<CondStatus>,
        reason: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Self { type_, status: status.into(), reason, message: message.into() }
    }
}

/// The condition of `type_` in `conds`.
pub fn find<'a>(conds: &'a [Cond], type_: &str) -> Option<&'a Cond> {
    conds.iter().find(|c| c.type_ == type_)
}

// Condition types.
pub const ACCEPTED: &str = "Accepted";
pub const CONFLICTED: &str = "Conflicted";
pub const RESOLVED_REFS: &str = "ResolvedRefs";
pub const PROGRAMMED: &str = "Programmed";

// Listener reasons.
pub const REASON_ACCEPTED: &str = "Accepted";
pub const REASON_PORT_UNAVAILABLE: &str = "PortUnavailable";
pub const REASON_UNSUPPORTED_PROTOCOL: &str = "UnsupportedProtocol";
pub const REASON_HOSTNAME_CONFLICT: &str = "HostnameConflict";
pub const REASON_PROTOCOL_CONFLICT: &str = "ProtocolConflict";
pub const REASON_NO_CONFLICTS: &str = "NoConflicts";
pub const REASON_RESOLVED_REFS: &str = "ResolvedRefs";
pub const REASON_INVALID_ROUTE_KINDS: &str = "InvalidRouteKinds";

// Gateway reasons.
pub const REASON_LISTENERS_NOT_VALID: &str = "ListenersNotValid";

// Route reasons.
pub const REASON_NOT_ALLOWED_BY_LISTENERS: &str = "NotAllowedByListeners";
pub const REASON_NO_MATCHING_LISTENER_HOSTNAME: &str = "NoMatchingListenerHostname";
pub const REASON_NO_MATCHING_PARENT: &str = "NoMatchingParent";
pub const REASON_REF_NOT_PERMITTED: &str = "RefNotPermitted";
pub const REASON_INVALID_KIND: &str = "InvalidKind";
pub const REASON_BACKEND_NOT_FOUND: &str = "BackendNotFound";
pub const REASON_UNSUPPORTED_VALUE: &str = "UnsupportedValue";

/// `conds` as Kubernetes conditions of an object at `generation`: a condition whose status is
/// the one in `previous` keeps its `lastTransitionTime`, any other gets `now`.
pub fn to_k8s(
    conds: &[Cond],
    generation: Option<i64>,
    now: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
    previous: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
) -> Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    conds
        .iter()
        .map(|c| {
            let kept = previous.iter().find(|p| p.type_ == c.type_ && p.status == c.status.as_str());
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
                type_: c.type_.to_string(),
                status: c.status.as_str().to_string(),
                reason: c.reason.to_string(),
                message: c.message.clone(),
                observed_generation: generation,
                last_transition_time: kept.map_or_else(|| now.clone(), |p| p.last_transition_time.clone()),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    #[test]
    fn a_condition_keeps_its_transition_time_while_its_status_holds() {
        let then = Time("2026-01-01T00:00:00Z".parse().unwrap());
        let now = Time("2026-02-01T00:00:00Z".parse().unwrap());
        let first = to_k8s(&[Cond::new(ACCEPTED, true, REASON_ACCEPTED, "")], Some(1), &then, &[]);
        assert_eq!((first[0].observed_generation, &first[0].last_transition_time), (Some(1), &then));
        // Same status, new message and generation: the time stays.
        let same = to_k8s(&[Cond::new(ACCEPTED, true, REASON_ACCEPTED, "again")], Some(2), &now, &first);
        assert_eq!(
            (same[0].observed_generation, &same[0].last_transition_time, same[0].message.as_str()),
            (Some(2), &then, "again")
        );
        let flipped = to_k8s(&[Cond::new(ACCEPTED, false, REASON_NO_MATCHING_PARENT, "x")], Some(2), &now, &first);
        assert_eq!(flipped[0].last_transition_time, now);
    }
}
