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
