//! The decisions of `aws-lb-controller doctor`: plain observed data in, one [`Verdict`] per
//! finding out. Gathering (kube reads, AWS read calls, TLS handshakes) lives in the controller;
//! every rule about what is fine, suspicious or broken lives here, with table tests.
//!
//! A verdict names the object, the value found, the value expected and the fix, like every
//! error of this controller.

pub mod cluster_tag;
pub mod conflicts;
pub mod crds;
pub mod credentials;
pub mod nodes;
pub mod not_run;
pub mod permissions;
pub mod pod_ips;
pub mod subnets;
pub mod tenancy;
pub mod throttle;
pub mod webhooks;

use serde::Serialize;
use std::fmt;

/// How bad a finding is. `Fail` makes the command exit non-zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Fail,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "fail",
        })
    }
}

/// One line of the report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Which check, e.g. `cluster-tag`.
    pub check: &'static str,
    pub status: Status,
    /// The Kubernetes or AWS object the finding is about.
    pub object: String,
    pub found: String,
    pub expected: String,
    /// Empty when nothing needs doing.
    pub fix: String,
}

impl Verdict {
    pub fn ok(check: &'static str, object: impl Into<String>, found: impl Into<String>) -> Self {
        Self::new(check, Status::Ok, object, found, "", "")
    }

    pub fn new(
        check: &'static str,
        status: Status,
        object: impl Into<String>,
        found: impl Into<String>,
        expected: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self { check, status, object: object.into(), found: found.into(), expected: expected.into(), fix: fix.into() }
    }

    pub fn warn(
        check: &'static str,
        object: impl Into<String>,
        found: impl Into<String>,
        expected: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self::new(check, Status::Warn, object, found, expected, fix)
    }

    pub fn fail(
        check: &'static str,
        object: impl Into<String>,
        found: impl Into<String>,
        expected: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self::new(check, Status::Fail, object, found, expected, fix)
    }
}

/// The process exit code for a report: 1 when any check failed, else 0 (warnings do not fail).
pub fn exit_code(verdicts: &[Verdict]) -> i32 {
    i32::from(verdicts.iter().any(|v| v.status == Status::Fail))
}

/// `a, b, c` with at most `max` items and `(+N more)` after them.
pub fn list<S: AsRef<str>>(items: &[S], max: usize) -> String {
    let mut s = items.iter().take(max).map(AsRef::as_ref).collect::<Vec<_>>().join(", ");
    if items.len() > max {
        s.push_str(&format!(" (+{} more)", items.len() - max));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_code_fails_only_on_fail() {
        let ok = Verdict::ok("x", "o", "f");
        let warn = Verdict::warn("x", "o", "f", "e", "fix");
        let fail = Verdict::fail("x", "o", "f", "e", "fix");
        for (vs, want) in [
            (vec![], 0),
            (vec![ok.clone()], 0),
            (vec![ok.clone(), warn.clone()], 0),
            (vec![ok, warn, fail.clone()], 1),
            (vec![fail], 1),
        ] {
            assert_eq!(exit_code(&vs), want, "{vs:?}");
        }
    }

    #[test]
    fn lists_are_capped() {
        assert_eq!(list(&["a", "b", "c"], 2), "a, b (+1 more)");
        assert_eq!(list(&["a"], 2), "a");
        assert_eq!(list::<&str>(&[], 2), "");
    }

    #[test]
    fn status_serializes_lowercase() {
        let v = Verdict::fail("crds", "o", "f", "e", "x");
        let j = serde_json::to_value(&v).unwrap();
        assert_eq!(j["status"], "fail");
        assert_eq!(j["check"], "crds");
    }
}
