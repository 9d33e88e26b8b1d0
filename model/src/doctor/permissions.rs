//! Check 5: every action of docs/iam-policy.json, tried without writing anything. Reads are
//! called (a made-up ARN answering "not found" proves the action is allowed: IAM is evaluated
//! before the resource is looked up); EC2 writes are sent with `DryRun=true` (`DryRunOperation`
//! = allowed, `UnauthorizedOperation` = denied). ELBv2 and WAFv2 have no DryRun: their writes
//! cannot be checked read-only, and the report says so.

use super::{Verdict, list};

pub const CHECK: &str = "permissions";
/// The policy the chart documents for the controller's role.
pub const POLICY: &str = include_str!("../../../docs/iam-policy.json");

/// How an action can be tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// Describe/List/Get: call it.
    Read,
    /// An EC2 write: call it with `DryRun=true`.
    DryRun,
    /// A write of an API without DryRun.
    NotReadOnly,
}

pub fn probe_for(action: &str) -> Probe {
    let (service, op) = action.split_once(':').unwrap_or(("", action));
    if ["Describe", "List", "Get"].iter().any(|p| op.starts_with(p)) {
        Probe::Read
    } else if service == "ec2" {
        Probe::DryRun
    } else {
        Probe::NotReadOnly
    }
}

/// The distinct actions of an IAM policy document, in order of first appearance.
pub fn actions(policy: &str) -> Result<Vec<String>, String> {
    let v: serde_json::Value = serde_json::from_str(policy).map_err(|e| format!("IAM policy: {e}"))?;
    let mut out: Vec<String> = Vec::new();
    for st in v["Statement"].as_array().ok_or("IAM policy: no Statement array")? {
        let list: Vec<&str> = match &st["Action"] {
            serde_json::Value::String(s) => vec![s.as_str()],
            serde_json::Value::Array(a) => a.iter().filter_map(|x| x.as_str()).collect(),
            _ => vec![],
        };
        for a in list {
            if !out.iter().any(|o| o == a) {
                out.push(a.to_string());
            }
        }
    }
    Ok(out)
}

/// The outcome of one probe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Allowed,
    Denied(String),
    /// Could not be tried read-only (no DryRun in the API, or no resource of ours to try it on).
    Unverifiable(String),
    /// The probe failed for another reason (network, an API the endpoint lacks).
    Error(String),
}

pub fn check(results: &[(String, Outcome)]) -> Vec<Verdict> {
    let mut out = Vec::new();
    for (action, o) in results {
        match o {
            Outcome::Denied(msg) => out.push(Verdict::fail(
                CHECK,
                format!("IAM action {action}"),
                format!("denied: {msg}"),
                "allowed for the controller's role",
                "add the action to the role's policy (docs/iam-policy.json holds the complete policy)",
            )),
            Outcome::Error(msg) => out.push(Verdict::warn(
                CHECK,
                format!("IAM action {action}"),
                format!("could not be tried: {msg}"),
                "an answer from AWS",
                "check the endpoint (--aws-api-endpoints) and network path, then run doctor again",
            )),
            _ => {}
        }
    }
    let allowed: Vec<&str> = results.iter().filter(|(_, o)| *o == Outcome::Allowed).map(|(a, _)| a.as_str()).collect();
    let dry = allowed.iter().filter(|a| probe_for(a) == Probe::DryRun).count();
    // Not checkable, grouped by why: `reason: Op, Op, ...`.
    let mut skipped: Vec<(&str, Vec<&str>)> = Vec::new();
    for (a, o) in results {
        if let Outcome::Unverifiable(why) = o {
            let op = a.split_once(':').map_or(a.as_str(), |(_, op)| op);
            match skipped.iter_mut().find(|(w, _)| w == why) {
                Some((_, ops)) => ops.push(op),
                None => skipped.push((why, vec![op])),
            }
        }
    }
    let mut found = format!(
        "{} of {} actions allowed ({} reads called, {dry} EC2 writes by DryRun)",
        allowed.len(),
        results.len(),
        allowed.len() - dry
    );
    if !skipped.is_empty() {
        let n: usize = skipped.iter().map(|(_, ops)| ops.len()).sum();
        let groups: Vec<String> = skipped.iter().map(|(why, ops)| format!("{why}: {}", list(ops, 6))).collect();
        found.push_str(&format!("; {n} not checkable read-only ({})", groups.join("; ")));
    }
    out.push(Verdict::ok(CHECK, "docs/iam-policy.json", found));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Status;

    #[test]
    fn policy_actions_and_probes() {
        let acts = actions(POLICY).unwrap();
        assert!(acts.len() > 30, "{acts:?}");
        let distinct: std::collections::BTreeSet<&String> = acts.iter().collect();
        assert_eq!(distinct.len(), acts.len(), "duplicates removed");
        for (a, p) in [
            ("elasticloadbalancing:DescribeTargetHealth", Probe::Read),
            ("ec2:DescribeSubnets", Probe::Read),
            ("acm:ListCertificates", Probe::Read),
            ("wafv2:GetWebACLForResource", Probe::Read),
            ("ec2:CreateSecurityGroup", Probe::DryRun),
            ("ec2:AuthorizeSecurityGroupIngress", Probe::DryRun),
            ("elasticloadbalancing:RegisterTargets", Probe::NotReadOnly),
            ("wafv2:AssociateWebACL", Probe::NotReadOnly),
        ] {
            assert_eq!(probe_for(a), p, "{a}");
            assert!(acts.iter().any(|x| x == a), "{a} in the policy");
        }
        assert!(actions("{}").is_err() && actions("nope").is_err());
        assert_eq!(actions(r#"{"Statement":[{"Action":"ec2:DescribeVpcs"}]}"#).unwrap(), ["ec2:DescribeVpcs"]);
    }

    #[test]
    fn verdicts() {
        let r = |a: &str, o: Outcome| (a.to_string(), o);
        let results = vec![
            r("ec2:DescribeVpcs", Outcome::Allowed),
            r("ec2:CreateSecurityGroup", Outcome::Allowed),
            r("ec2:DeleteSecurityGroup", Outcome::Denied("UnauthorizedOperation: not authorized".into())),
            r("elasticloadbalancing:RegisterTargets", Outcome::Unverifiable("ELBv2 has no DryRun".into())),
            r("acm:ListCertificates", Outcome::Error("connection refused".into())),
        ];
        let v = check(&results);
        assert_eq!(v.iter().map(|v| v.status).collect::<Vec<_>>(), [Status::Fail, Status::Warn, Status::Ok]);
        assert_eq!(v[0].object, "IAM action ec2:DeleteSecurityGroup");
        assert!(v[0].found.contains("UnauthorizedOperation") && v[0].fix.contains("docs/iam-policy.json"));
        assert!(v[2].found.starts_with("2 of 5 actions allowed (1 reads called, 1 EC2 writes by DryRun)"), "{v:?}");
        assert!(v[2].found.ends_with("; 1 not checkable read-only (ELBv2 has no DryRun: RegisterTargets)"), "{v:?}");
        let all_ok = check(&[r("ec2:DescribeVpcs", Outcome::Allowed)]);
        assert_eq!(super::super::exit_code(&all_ok), 0);
    }
}
