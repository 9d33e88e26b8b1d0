//! ALBC's command line, where this controller has no one-to-one equivalent: Go-style flag values,
//! ALBC's `--feature-gates`, and the ALBC flags we accept so that an ALBC Deployment's arguments
//! start this controller unchanged. Each one is either honoured, reported once at start-up with
//! what happens instead ([`Finding::Warning`]), or — where carrying on would be unsafe — refused
//! with the fix ([`Finding::Fatal`]). Nothing is accepted and then silently ignored.

mod flags;
mod gates;
mod go;
/// Every ALBC annotation and IngressClassParams field, its status here and the tests that show it.
pub mod parity;
/// The command-line flags' part of the parity table.
pub mod parity_flags;
/// The feature gates' part of the parity table.
pub mod parity_gates;

pub use flags::{ALBC_ONLY_FLAGS, AlbcFlag, GivenFlag, Treatment, assess_flags};
pub use gates::{FeatureGates, GATES, Gate, Here, assess_gates};
pub use go::{parse_go_bool, parse_key_bools};

/// What start-up does about one ALBC setting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finding {
    /// Start, and log this once.
    Warning(String),
    /// Do not start: the message says why and what to change.
    Fatal(String),
}

impl Finding {
    pub fn message(&self) -> &str {
        match self {
            Finding::Warning(m) | Finding::Fatal(m) => m,
        }
    }
}
