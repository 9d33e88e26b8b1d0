//! Reconcile errors, each with a category (metric label and Event reason) and a message that
//! names the object, the value seen, the value expected and the fix.

use lbc_aws::AwsError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Aws(#[from] AwsError),
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Refused(String),
    #[error("finalizer: {0}")]
    Finalizer(String),
}

impl Error {
    pub fn category(&self) -> &'static str {
        match self {
            Self::Aws(e) => e.kind.as_str(),
            Self::Kube(_) => "kubernetes",
            Self::Invalid(_) => "invalid_spec",
            Self::Refused(_) => "refused",
            Self::Finalizer(_) => "finalizer",
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
