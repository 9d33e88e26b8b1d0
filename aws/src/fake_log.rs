//! The call log and queued faults of an in-memory fake (used by [`crate::fake_acm`]).

use crate::error::ErrorKind;
use std::collections::VecDeque;

/// Calls as (operation, what it was about), and faults waiting for their operation.
#[derive(Debug, Default)]
pub struct FakeLog {
    calls: Vec<(&'static str, String)>,
    faults: VecDeque<(&'static str, ErrorKind)>,
}

impl FakeLog {
    /// Logs one call; the fault queued for `op`, if any, is taken and returned.
    pub fn record(&mut self, op: &'static str, about: &str) -> Option<ErrorKind> {
        self.calls.push((op, about.to_string()));
        let queued = self.faults.iter().position(|(o, _)| *o == op)?;
        self.faults.remove(queued).map(|(_, kind)| kind)
    }

    /// The calls so far, oldest first.
    pub fn calls(&self) -> &[(&'static str, String)] {
        &self.calls
    }

    pub fn clear(&mut self) {
        self.calls.clear();
    }

    /// The next call of `op` fails with `kind`.
    pub fn fail_next(&mut self, op: &'static str, kind: ErrorKind) {
        self.faults.push_back((op, kind));
    }
}
