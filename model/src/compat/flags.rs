//! ALBC flags without an equivalent here. They parse (an ALBC Deployment's arguments start this
//! controller unchanged); each one given on the command line is assessed once at start-up.

use super::{Finding, parse_go_bool};

/// What an explicitly given ALBC-only flag means here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Treatment {
    /// Reported with what happens instead, whatever the value.
    Warn(&'static str),
    /// Matches this controller's behaviour at this value (booleans compared as Go reads them);
    /// any other value is reported with what happens instead.
    WarnUnless(&'static str, &'static str),
}

/// One ALBC flag this controller accepts without implementing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlbcFlag {
    pub name: &'static str,
    /// ALBC's default, as its `--help` prints it.
    pub albc_default: &'static str,
    pub treatment: Treatment,
}

const NO_NLB_GATEWAY: &str = "NLB Gateways (class gateway.k8s.aws/nlb) are not reconciled by this controller";
const ONE_CLASS_PASS: &str =
    "GatewayClass status is written by the ALB Gateway controller's workers (--alb-gateway-max-concurrent-reconciles)";
const NO_GA: &str = "GlobalAccelerator objects are not reconciled by this controller";

const fn flag(name: &'static str, albc_default: &'static str, treatment: Treatment) -> AlbcFlag {
    AlbcFlag { name, albc_default, treatment }
}

/// Every ALBC v3.5 flag that has no equivalent here (the others are this controller's own flags
/// under the same names and meanings).
pub const ALBC_ONLY_FLAGS: &[AlbcFlag] = &[
    flag("nlb-gateway-max-concurrent-reconciles", "3", Treatment::Warn(NO_NLB_GATEWAY)),
    flag("gateway-class-max-concurrent-reconciles", "3", Treatment::Warn(ONE_CLASS_PASS)),
    flag("globalaccelerator-max-concurrent-reconciles", "1", Treatment::Warn(NO_GA)),
    flag("globalaccelerator-max-exponential-backoff-delay", "16m40s", Treatment::Warn(NO_GA)),
    flag(
        "lb-stabilization-monitor-interval",
        "2m0s",
        Treatment::Warn("not used: a reconcile does not poll a new load balancer until it is active"),
    ),
    flag(
        "max-targets-per-target-group",
        "0",
        Treatment::WarnUnless(
            "0",
            "targets are not capped per target group: beyond AWS's quota RegisterTargets fails and the \
             TargetGroupBinding reports the error",
        ),
    ),
    flag("enable-endpoint-slices", "true", Treatment::WarnUnless("true", "EndpointSlices are always used")),
    flag(
        "enable-manage-backend-security-group-rules",
        "false",
        Treatment::WarnUnless(
            "false",
            "backend security-group rules follow --enable-backend-security-group-rules (default true) and \
             --enable-backend-security-group",
        ),
    ),
    flag(
        "aws-vpc-tag-key",
        "Name",
        Treatment::Warn("deprecated in ALBC; every tag of --aws-vpc-tags is used for the VPC lookup"),
    ),
];

impl AlbcFlag {
    /// A Go boolean flag (`--flag` alone means true).
    pub fn is_bool(&self) -> bool {
        matches!(self.albc_default, "true" | "false")
    }
}

/// An ALBC-only flag as given on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GivenFlag {
    pub name: String,
    pub value: String,
}

fn same_value(default_like: &str, given: &str) -> bool {
    match (parse_go_bool(default_like), parse_go_bool(given)) {
        (Ok(a), Ok(b)) => a == b,
        _ => default_like == given.trim(),
    }
}

/// One finding per given flag whose value this controller does not honour.
pub fn assess_flags(given: &[GivenFlag]) -> Vec<Finding> {
    let mut out = Vec::new();
    for g in given {
        let Some(f) = ALBC_ONLY_FLAGS.iter().find(|f| f.name == g.name) else {
            out.push(Finding::Fatal(format!("--{}: not an ALBC flag this controller knows", g.name)));
            continue;
        };
        let (name, value) = (f.name, g.value.as_str());
        match f.treatment {
            Treatment::Warn(what) => out.push(Finding::Warning(format!("--{name}={value} has no effect: {what}"))),
            Treatment::WarnUnless(ok, _) if same_value(ok, value) => {}
            Treatment::WarnUnless(_, what) => {
                out.push(Finding::Warning(format!("--{name}={value} is not supported: {what}")))
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(name: &str, value: &str) -> GivenFlag {
        GivenFlag { name: name.into(), value: value.into() }
    }

    #[test]
    fn names_are_unique_and_albc_defaults_never_warn_unless_the_behaviour_differs() {
        let mut names: Vec<_> = ALBC_ONLY_FLAGS.iter().map(|f| f.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ALBC_ONLY_FLAGS.len());
        for f in ALBC_ONLY_FLAGS {
            let found = assess_flags(&[given(f.name, f.albc_default)]);
            match f.treatment {
                Treatment::Warn(_) => assert_eq!(found.len(), 1, "{}", f.name),
                Treatment::WarnUnless(ok, _) => {
                    assert_eq!(found.is_empty(), same_value(ok, f.albc_default), "{}", f.name)
                }
            }
        }
    }

    #[test]
    fn table() {
        type Check = fn(&[Finding]) -> bool;
        let cases: &[(&str, &str, Check)] = &[
            ("enable-endpoint-slices", "true", |f| f.is_empty()),
            ("enable-endpoint-slices", "T", |f| f.is_empty()),
            (
                "enable-endpoint-slices",
                "false",
                |f| matches!(f, [Finding::Warning(m)] if m.contains("=false is not supported") && m.contains("always")),
            ),
            ("max-targets-per-target-group", "0", |f| f.is_empty()),
            ("max-targets-per-target-group", "500", |f| f.len() == 1),
            ("aws-vpc-tag-key", "Name", |f| matches!(f, [Finding::Warning(m)] if m.contains("--aws-vpc-tags"))),
            (
                "nlb-gateway-max-concurrent-reconciles",
                "3",
                |f| matches!(f, [Finding::Warning(m)] if m.contains("has no effect") && m.contains("NLB Gateways")),
            ),
            ("no-such-flag", "1", |f| matches!(f, [Finding::Fatal(_)])),
        ];
        for (name, value, check) in cases {
            let found = assess_flags(&[given(name, value)]);
            assert!(check(&found), "--{name}={value}: {found:?}");
        }
    }
}
