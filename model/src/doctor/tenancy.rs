//! `tenancy`: the TargetGroupBindings the tenancy policy does not cover (docs/security.md). In the
//! compatible mode each is an exposure the controller allows as the upstream does: named here so
//! the admin can grant it or tighten it before switching to the strict mode. In the strict mode
//! each is a refusal: the binding does not work until it is granted or changed.
//!
//! Covered: `spec.iamRoleArnToAssume` and `spec.networking` sources with numeric or absent ports
//! ([`crate::admission::tenancy_violations`]). Target groups without our ownership tags need their
//! AWS tags and Ingress groups need the group walk: the controller reports those (conditions,
//! Warnings), this check does not.

use super::Verdict;
use crate::admission::tenancy_violations;
use crate::crd::TargetGroupBindingSpec;
use crate::tenancy::{Tenancy, TenancyMode};

pub const CHECK: &str = "tenancy";

/// A binding as this check reads it.
#[derive(Clone, Debug)]
pub struct BindingInfo {
    pub namespace: String,
    pub name: String,
    pub spec: TargetGroupBindingSpec,
}

/// One verdict per binding and refusal, or one `ok` line.
pub fn check(tenancy: &Tenancy, bindings: &[BindingInfo]) -> Vec<Verdict> {
    let strict = tenancy.as_strict();
    let mut out = Vec::new();
    for b in bindings {
        let object = format!("TargetGroupBinding {}/{}", b.namespace, b.name);
        for v in tenancy_violations(&strict, &b.namespace, &b.name, &b.spec) {
            let expected = format!("{} within the tenancy policy's grants to namespace {}", v.field, b.namespace);
            out.push(match tenancy.mode() {
                TenancyMode::Compatible => Verdict::warn(
                    CHECK,
                    object.clone(),
                    format!("allowed in the compatible mode, refused in the strict mode: {}", v.message),
                    expected,
                    "grant it in tenancy.policy if the namespace may use it, or change the binding, before \
                     switching to tenancy.mode=strict (docs/security.md)",
                ),
                TenancyMode::Strict => Verdict::fail(
                    CHECK,
                    object.clone(),
                    format!("refused: {}", v.message),
                    expected,
                    "the cluster admin grants it in tenancy.policy, or the binding's owner changes the binding",
                ),
            });
        }
    }
    if out.is_empty() {
        out.push(Verdict::ok(
            CHECK,
            "TargetGroupBindings",
            format!(
                "{} binding(s): every role and spec.networking source within the tenancy policy ({} mode)",
                bindings.len(),
                tenancy.mode()
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Status;
    use serde_json::json;

    const POLICY: &str = r#"{"networking": [{"namespaces": ["team-a"], "cidrs": ["10.0.0.0/8"]}]}"#;

    fn binding(ns: &str, cidr: &str) -> BindingInfo {
        let spec = json!({"serviceRef": {"name": "web", "port": 80},
            "networking": {"ingress": [{"from": [{"ipBlock": {"cidr": cidr}}], "ports": [{"port": 80}]}]}});
        BindingInfo { namespace: ns.into(), name: "web".into(), spec: serde_json::from_value(spec).unwrap() }
    }

    #[test]
    fn exposures_warn_in_compatible_mode_and_refusals_fail_in_strict_mode() {
        let bindings =
            [binding("team-a", "10.1.0.0/16"), binding("team-a", "0.0.0.0/0"), binding("team-b", "10.1.0.0/16")];
        for (mode, status, word) in [
            (TenancyMode::Compatible, Status::Warn, "allowed in the compatible mode"),
            (TenancyMode::Strict, Status::Fail, "refused"),
        ] {
            let v = check(&Tenancy::parse(mode, POLICY, "test").unwrap(), &bindings);
            let objects: Vec<(&str, Status)> = v.iter().map(|v| (v.object.as_str(), v.status)).collect();
            assert_eq!(objects, [("TargetGroupBinding team-a/web", status), ("TargetGroupBinding team-b/web", status)]);
            assert!(v[0].found.starts_with(word) && v[0].found.contains("ipBlock 0.0.0.0/0"), "{}", v[0].found);
            assert!(v[1].found.contains("namespace team-b"), "{}", v[1].found);
            assert!(!v[0].fix.is_empty() && v[0].expected.contains("spec.networking"), "{:?}", v[0]);
        }
        let v = check(&Tenancy::parse(TenancyMode::Strict, POLICY, "test").unwrap(), &bindings[..1]);
        assert_eq!((v.len(), v[0].status), (1, Status::Ok), "{v:?}");
        assert!(v[0].found.contains("1 binding(s)") && v[0].found.contains("strict mode"), "{}", v[0].found);
    }
}
