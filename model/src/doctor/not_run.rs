//! Every check appears in every report. A check that could not run (no Kubernetes client, no AWS
//! keys, no VPC) is reported as failed, naming what stopped it, so a report can never look
//! healthier than the cluster because a check was silently left out.

use super::{Status, Verdict};

/// The checks of the issue, in report order.
pub const CHECKS: [&str; 11] = [
    super::cluster_tag::CHECK,
    super::subnets::CHECK,
    super::pod_ips::CHECK,
    super::credentials::CHECK,
    super::permissions::CHECK,
    super::conflicts::CHECK,
    super::nodes::CHECK,
    super::webhooks::CHECK,
    super::crds::CHECK,
    super::throttle::CHECK,
    super::tenancy::CHECK,
];

/// The checks that need AWS keys.
const NEEDS_KEYS: &[&str] =
    &[super::cluster_tag::CHECK, super::subnets::CHECK, super::pod_ips::CHECK, super::permissions::CHECK];
/// The checks that read the cluster.
const NEEDS_KUBE: &[&str] = &[
    super::pod_ips::CHECK,
    super::conflicts::CHECK,
    super::nodes::CHECK,
    super::webhooks::CHECK,
    super::crds::CHECK,
    super::throttle::CHECK,
    super::tenancy::CHECK,
];

/// Something doctor could not get, the checks that need it, and what to do about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocker {
    /// Why, e.g. `credentials failed: Vault at … is sealed`.
    pub reason: String,
    pub fix: String,
    pub checks: &'static [&'static str],
}

impl Blocker {
    /// No Kubernetes client: every cluster-side check.
    pub fn kubernetes(error: impl std::fmt::Display) -> Self {
        Self {
            reason: format!("no Kubernetes client: {error}"),
            fix: "fix the kubernetes line of this report (kubeconfig, API server address), then run doctor again"
                .into(),
            checks: NEEDS_KUBE,
        }
    }

    /// The AWS flags are unusable (no region, a malformed endpoint or throttle list, a credential
    /// source missing its settings): no AWS call can be made.
    pub fn aws_setup(flag: &str, error: impl std::fmt::Display) -> Self {
        Self {
            reason: format!("AWS not configured: {flag}: {error}"),
            fix: format!("fix {flag} (the credentials line of this report), then run doctor again"),
            checks: NEEDS_KEYS,
        }
    }

    /// The credential source gave no keys, or STS refused them.
    pub fn credentials(error: impl std::fmt::Display) -> Self {
        Self {
            reason: format!("credentials failed: {error}"),
            fix: "fix the credentials failure (the credentials line of this report), then run doctor again".into(),
            checks: NEEDS_KEYS,
        }
    }

    /// The VPC is not known (no flag names it, or the tags match none or several): no subnets to
    /// look at, no VPC to try the DryRuns in.
    /// No VPC: neither flag names one, or the tags match none or several (`why` says which).
    pub fn no_vpc_id(why: &str) -> Self {
        Self {
            reason: format!("the VPC is not known: {why}"),
            fix: "pass --aws-vpc-id=vpc-… (Helm value vpcId) or tags naming one VPC (vpcTags), then run doctor again"
                .into(),
            checks: NEEDS_KEYS,
        }
    }

    /// The VPC's CIDRs are unknown: pod IPs cannot be compared with them.
    pub fn vpc_cidrs(vpc_id: &str, error: impl std::fmt::Display) -> Self {
        Self {
            reason: format!("the CIDRs of VPC {vpc_id} are unknown: {error}"),
            fix: "fix the cluster-tag line about the VPC (--aws-vpc-id, --aws-region), then run doctor again".into(),
            checks: &[super::pod_ips::CHECK],
        }
    }

    /// The VPC's subnets could not be read.
    pub fn subnets(vpc_id: &str, error: impl std::fmt::Display) -> Self {
        Self {
            reason: format!("the subnets of VPC {vpc_id} could not be read: {error}"),
            fix: "allow ec2:DescribeSubnets (docs/iam-policy.json), then run doctor again".into(),
            checks: &[super::cluster_tag::CHECK, super::subnets::CHECK],
        }
    }

    /// A cluster read a check depends on failed (RBAC, API error).
    pub fn kube_read(what: &str, error: impl std::fmt::Display, checks: &'static [&'static str]) -> Self {
        Self {
            reason: format!("reading {what} failed: {error}"),
            fix: format!(
                "grant doctor get/list on {what} (the chart's test ServiceAccount has them), then run doctor again"
            ),
            checks,
        }
    }
}

/// What a check looks at, for its line when it could not run.
fn subject(check: &str) -> &'static str {
    match check {
        "cluster-tag" => "kubernetes.io/cluster/<name> tags of the VPC's subnets",
        "subnet-roles" => "kubernetes.io/role/elb and internal-elb subnets",
        "pod-ips" => "pod IPs of this controller's Services",
        "credentials" => "--aws-credentials-source",
        "permissions" => "docs/iam-policy.json",
        "conflicts" => "other load-balancer controllers",
        "nodes" => "Nodes",
        "webhooks" => "webhook configurations and readiness gates",
        "crds" => "CustomResourceDefinitions",
        "throttle" => "Elastic Load Balancing v2 RegisterTargets bucket",
        "tenancy" => "TargetGroupBindings against the tenancy policy",
        _ => "unknown check",
    }
}

/// One failing verdict for every check of [`CHECKS`] that has no verdict in `present`, naming the
/// blockers that stopped it (a check missing with no blocker is a doctor bug, reported as such).
pub fn not_run(present: &[Verdict], blockers: &[Blocker]) -> Vec<Verdict> {
    CHECKS
        .iter()
        .filter(|c| !present.iter().any(|v| v.check == **c))
        .map(|check| {
            let why: Vec<&Blocker> = blockers.iter().filter(|b| b.checks.contains(check)).collect();
            let (found, fix) = if why.is_empty() {
                (
                    "not run: no verdict and no reason (a doctor bug)".to_string(),
                    "report it with this output; the other lines still hold".to_string(),
                )
            } else {
                (
                    format!("not run: {}", why.iter().map(|b| b.reason.as_str()).collect::<Vec<_>>().join("; ")),
                    why.iter().map(|b| b.fix.as_str()).collect::<Vec<_>>().join("; "),
                )
            };
            Verdict::new(check, Status::Fail, subject(check), found, "the check runs and reports", fix)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::exit_code;

    fn ok(check: &'static str) -> Verdict {
        Verdict::ok(check, "o", "f")
    }

    fn checks_of(v: &[Verdict]) -> Vec<&str> {
        v.iter().map(|v| v.check).collect()
    }

    #[test]
    fn failed_credentials_report_every_aws_check_with_the_reason() {
        // What doctor gathers when the source gives no keys: the credentials line and the cluster side.
        let sealed = "Vault at http://127.0.0.1:8200 is sealed";
        let mut present =
            vec![Verdict::fail("credentials", "--aws-credentials-source=vault", sealed, "keys", "unseal")];
        present.extend(["conflicts", "nodes", "webhooks", "crds", "throttle", "tenancy"].map(ok));
        let added = not_run(&present, &[Blocker::credentials(sealed)]);
        assert_eq!(checks_of(&added), ["cluster-tag", "subnet-roles", "pod-ips", "permissions"]);
        for v in &added {
            assert_eq!(v.status, Status::Fail, "{v:?}");
            assert_eq!(v.found, format!("not run: credentials failed: {sealed}"), "{v:?}");
            assert!(v.fix.contains("the credentials line"), "{v:?}");
        }
        assert_eq!(added[3].object, "docs/iam-policy.json");
        present.extend(added);
        assert_eq!(exit_code(&present), 1);
        let mut all = checks_of(&present);
        all.sort();
        let mut want = CHECKS.to_vec();
        want.sort();
        assert_eq!(all, want, "every check appears once");
    }

    #[test]
    fn each_blocker_names_only_the_checks_it_stops() {
        let cases: Vec<(&str, Vec<Blocker>, Vec<&str>, &str)> = vec![
            ("healthy", vec![], vec![], ""),
            (
                "no kube client",
                vec![Blocker::kubernetes("no kubeconfig")],
                vec!["pod-ips", "conflicts", "nodes", "webhooks", "crds", "throttle"],
                "not run: no Kubernetes client: no kubeconfig",
            ),
            (
                "no region",
                vec![Blocker::aws_setup("--aws-region", "empty")],
                vec!["cluster-tag", "subnet-roles", "pod-ips", "permissions"],
                "not run: AWS not configured: --aws-region: empty",
            ),
            (
                "sts refuses",
                vec![Blocker::credentials("sts:GetCallerIdentity failed: InvalidClientTokenId")],
                vec!["cluster-tag", "subnet-roles", "pod-ips", "permissions"],
                "not run: credentials failed: sts:GetCallerIdentity failed: InvalidClientTokenId",
            ),
            (
                "no vpc id",
                vec![Blocker::no_vpc_id("--aws-vpc-id is required")],
                vec!["cluster-tag", "subnet-roles", "pod-ips", "permissions"],
                "not run: the VPC is not known: --aws-vpc-id is required",
            ),
            (
                "vpc unknown",
                vec![Blocker::vpc_cidrs("vpc-1", "InvalidVpcID.NotFound")],
                vec!["pod-ips"],
                "not run: the CIDRs of VPC vpc-1 are unknown: InvalidVpcID.NotFound",
            ),
            (
                "subnets unreadable",
                vec![Blocker::subnets("vpc-1", "UnauthorizedOperation")],
                vec!["cluster-tag", "subnet-roles"],
                "not run: the subnets of VPC vpc-1 could not be read: UnauthorizedOperation",
            ),
            (
                "nodes forbidden",
                vec![Blocker::kube_read("Nodes", "403 forbidden", &["nodes"])],
                vec!["nodes"],
                "not run: reading Nodes failed: 403 forbidden",
            ),
        ];
        for (name, blockers, stopped, found) in cases {
            // Doctor leaves out exactly the checks its blockers stop.
            let present: Vec<Verdict> = CHECKS.iter().filter(|c| !stopped.contains(*c)).map(|c| ok(c)).collect();
            let added = not_run(&present, &blockers);
            assert_eq!(checks_of(&added), stopped, "{name}");
            for v in &added {
                assert!(v.status == Status::Fail && v.found.starts_with(found) && !v.fix.is_empty(), "{name}: {v:?}");
            }
        }
    }

    #[test]
    fn two_blockers_of_one_check_are_both_named() {
        let present: Vec<Verdict> = CHECKS.iter().filter(|c| **c != "pod-ips").map(|c| ok(c)).collect();
        let added = not_run(
            &present,
            &[
                Blocker::kubernetes("unreachable"),
                Blocker::credentials("sealed"),
                Blocker::no_vpc_id("no VPC carries env=x"),
            ],
        );
        assert_eq!(added.len(), 1);
        assert_eq!(
            added[0].found,
            "not run: no Kubernetes client: unreachable; credentials failed: sealed; the VPC is not known: no VPC carries env=x"
        );
        assert_eq!(added[0].fix.matches("then run doctor again").count(), 3, "{:?}", added[0]);
    }

    #[test]
    fn a_check_missing_without_a_reason_is_a_bug_not_a_pass() {
        let present: Vec<Verdict> = CHECKS.iter().filter(|c| **c != "crds").map(|c| ok(c)).collect();
        let added = not_run(&present, &[Blocker::credentials("x")]);
        assert_eq!(checks_of(&added), ["crds"]);
        assert!(added[0].found.contains("a doctor bug") && added[0].status == Status::Fail, "{added:?}");
        assert_eq!(added[0].object, "CustomResourceDefinitions");
    }
}
