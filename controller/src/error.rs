//! Reconcile errors, each with a category (metric label and Event reason) and a message that
//! names the object, the value seen, the value expected and the fix.

use lbc_aws::AwsError;
use lbc_aws::error::ErrorKind;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Aws(AwsError),
    #[error("Kubernetes API: {0}")]
    Kube(kube::Error),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Refused(String),
    #[error("finalizer: {0}")]
    Finalizer(String),
    /// This replica does not lead (any more): a write was refused by the fence. Nobody's fault,
    /// never a Warning event nor a backoff step: the leader does the work.
    #[error("not the leader: {0}")]
    NotLeader(String),
    /// One of our own invariants broke (a bug in the controller, not the user's input): counted
    /// as `internal`, never as `invalid_spec`.
    #[error("{0}")]
    Internal(String),
    /// The object cannot be deployed as it stands (its settings, a missing Secret, a refused
    /// replacement, deletion protection): nothing was written in AWS. Not a failure: reported
    /// once as a Warning `event` on the objects concerned and looked at again as `retry` says,
    /// all in one place (`crate::stack::settle`).
    #[error("{reason}")]
    Blocked { event: &'static str, reason: String, retry: Retry },
}

/// When a blocked object is looked at again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// On its next change only (the fix is an edit of the object).
    OnChange,
    /// At the controller's jittered sync period (the fix may be outside Kubernetes, e.g. in AWS).
    SyncPeriod,
    /// After this long (the fix is in an object that is not watched).
    After(Duration),
}

impl Retry {
    /// The delay before the next pass, `None`: only on change.
    pub fn delay(self, sync_period: Duration) -> Option<Duration> {
        match self {
            Self::OnChange => None,
            Self::SyncPeriod => Some(crate::context::jittered(sync_period)),
            Self::After(d) => Some(d),
        }
    }
}

/// `Ok(None)` instead of an error when the object is gone (HTTP 404 / AWS `NotFound`): the
/// answer to "make it so" for something that no longer exists.
pub trait OkIfGone<T> {
    fn ok_if_gone(self) -> Result<Option<T>>;
}

impl<T> OkIfGone<T> for std::result::Result<T, kube::Error> {
    fn ok_if_gone(self) -> Result<Option<T>> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

impl<T> OkIfGone<T> for std::result::Result<T, AwsError> {
    fn ok_if_gone(self) -> Result<Option<T>> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.kind == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

impl From<AwsError> for Error {
    fn from(e: AwsError) -> Self {
        if e.kind == ErrorKind::NotLeader { Self::NotLeader(e.to_string()) } else { Self::Aws(e) }
    }
}

impl From<kube::Error> for Error {
    fn from(e: kube::Error) -> Self {
        if crate::kube_gate::is_not_leader(&e) { Self::NotLeader(e.to_string()) } else { Self::Kube(e) }
    }
}

impl Error {
    /// Every category [`Error::category`] can return for a failed reconcile (not `not_leader`:
    /// a replica that does not lead has not failed).
    pub fn categories() -> impl Iterator<Item = &'static str> {
        lbc_aws::error::ErrorKind::ALL
            .iter()
            .filter(|k| **k != lbc_aws::error::ErrorKind::NotLeader)
            .map(|k| k.as_str())
            .chain(["kubernetes", "invalid_spec", "refused", "finalizer", "internal"])
    }

    pub fn category(&self) -> &'static str {
        match self {
            Self::Aws(e) => e.kind.as_str(),
            Self::Kube(_) => "kubernetes",
            Self::Invalid(_) => "invalid_spec",
            Self::Refused(_) => "refused",
            Self::Finalizer(_) => "finalizer",
            Self::NotLeader(_) => "not_leader",
            Self::Internal(_) => "internal",
            // Never counted (`crate::stack::settle` turns it into a retry); the user's to fix.
            Self::Blocked { .. } => "invalid_spec",
        }
    }

    /// A blocked pass's reason rewritten by `f` (e.g. to name the stack); other errors as they are.
    pub fn map_blocked(self, f: impl FnOnce(String) -> String) -> Self {
        match self {
            Self::Blocked { event, reason, retry } => Self::Blocked { event, reason: f(reason), retry },
            e => e,
        }
    }

    pub fn is_not_leader(&self) -> bool {
        matches!(self, Self::NotLeader(_))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16) -> kube::Error {
        kube::Error::Api(kube::core::Status::failure(&format!("HTTP {code}"), "").with_code(code).boxed())
    }

    #[test]
    fn gone_is_fine_anything_else_is_an_error() {
        assert_eq!(Ok::<_, kube::Error>(1).ok_if_gone().unwrap(), Some(1));
        assert_eq!(Err::<u8, _>(api_error(404)).ok_if_gone().unwrap(), None);
        let conflict = Err::<u8, _>(api_error(409)).ok_if_gone().unwrap_err();
        assert_eq!(conflict.category(), "kubernetes", "{conflict}");
    }

    #[test]
    fn internal_failures_are_not_blamed_on_the_spec() {
        let e = Error::Internal("listener 443 planned before its load balancer exists".into());
        assert_eq!(e.category(), "internal");
        assert!(Error::categories().any(|c| c == "internal"), "internal must be a listed category");
        let r = Retry::After(Duration::from_secs(60));
        assert_eq!(r.delay(Duration::from_secs(3600)), Some(Duration::from_secs(60)));
        assert_eq!(Retry::OnChange.delay(Duration::from_secs(3600)), None);
    }
}
