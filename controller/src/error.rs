//! Reconcile errors, each with a category (metric label and Event reason) and a message that
//! names the object, the value seen, the value expected and the fix.

use lbc_aws::AwsError;
use lbc_aws::error::ErrorKind;

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
            .chain(["kubernetes", "invalid_spec", "refused", "finalizer"])
    }

    pub fn category(&self) -> &'static str {
        match self {
            Self::Aws(e) => e.kind.as_str(),
            Self::Kube(_) => "kubernetes",
            Self::Invalid(_) => "invalid_spec",
            Self::Refused(_) => "refused",
            Self::Finalizer(_) => "finalizer",
            Self::NotLeader(_) => "not_leader",
        }
    }

    pub fn is_not_leader(&self) -> bool {
        matches!(self, Self::NotLeader(_))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
