//! `tenancy`: what the tenancy policy does not cover (docs/security.md). In the compatible mode
//! each is an exposure the controller allows as the upstream does: named here so the admin can
//! grant it or tighten it before switching to the strict mode. In the strict mode each is a
//! refusal: the object does not work until it is granted or changed.
//!
//! Covered: TargetGroupBindings' `spec.iamRoleArnToAssume` and `spec.networking` sources with
//! numeric or absent ports ([`crate::admission::tenancy_violations`]), their target groups
//! without our ownership tags (when doctor could read the tags: [`crate::tg_ownership`]), and
//! Ingresses' group membership, group-wide settings and legacy class annotation
//! ([`crate::ingress::tenancy::verdicts`]).

use super::Verdict;
use crate::admission::tenancy_violations;
use crate::crd::{TargetGroupBinding, TargetGroupBindingSpec};
use crate::ingress::IngressSettings;
use crate::ingress::tenancy::{OwnChoices, verdicts as ingress_verdicts};
use crate::lb::Tags;
use crate::tenancy::{self as policy, Tenancy, TenancyMode};
use crate::tg_ownership::target_group_access;
use std::collections::BTreeMap;

pub const CHECK: &str = "tenancy";

/// A binding as this check reads it.
#[derive(Clone, Debug)]
pub struct BindingInfo {
    pub namespace: String,
    pub name: String,
    pub spec: TargetGroupBindingSpec,
}

/// An Ingress of ours as this check reads it: what it chose itself.
#[derive(Clone, Debug)]
pub struct IngressInfo {
    pub namespace: String,
    pub name: String,
    /// Selected by `kubernetes.io/ingress.class`.
    pub via_class_annotation: bool,
    /// Its own annotations, parsed (an Ingress whose annotations do not parse is not judged here:
    /// the controller reports it).
    pub settings: IngressSettings,
    /// Its IngressClassParams set `spec.group`.
    pub group_from_params: bool,
}

/// What the check judges. `target_group_tags`: tags by ARN of the bindings' target groups read
/// with the controller's own identity; `None` when they could not be read (then only the bindings'
/// specs are judged, and a line says so).
pub struct Inputs<'a> {
    pub cluster: &'a str,
    pub bindings: &'a [BindingInfo],
    pub ingresses: &'a [IngressInfo],
    pub target_group_tags: Option<&'a BTreeMap<String, Tags>>,
}

/// One verdict per object and refusal, or one `ok` line.
pub fn check(tenancy: &Tenancy, inputs: &Inputs<'_>) -> Vec<Verdict> {
    let strict = tenancy.as_strict();
    let mut out = Vec::new();
    for b in inputs.bindings {
        let object = format!("TargetGroupBinding {}/{}", b.namespace, b.name);
        for v in tenancy_violations(&strict, &b.namespace, &b.name, &b.spec) {
            let expected = format!("{} within the tenancy policy's grants to namespace {}", v.field, b.namespace);
            out.push(verdict(tenancy.mode(), &object, &v.message, expected));
        }
        // Cross-account groups are read as the binding's role, which doctor does not assume.
        if b.spec.iam_role_arn_to_assume.is_some() {
            continue;
        }
        let Some(arn) = b.spec.target_group_arn.as_deref() else { continue };
        if let Some(tags) = inputs.target_group_tags.and_then(|t| t.get(arn)) {
            let mut tgb = TargetGroupBinding::new(&b.name, b.spec.clone());
            tgb.metadata.namespace = Some(b.namespace.clone());
            // A group another owner's tags keep from the binding is the controller's refusal in
            // both modes (TargetGroupNotOwned), not a tenancy question.
            let detail = match target_group_access(inputs.cluster, &strict, &tgb, arn, tags) {
                Err(policy_refusal) if policy_refusal.reason() == "TargetGroupNotGranted" => {
                    Some(policy_refusal.to_string())
                }
                _ => None,
            };
            if let Some(d) = detail {
                let expected =
                    format!("target group {arn} granted to namespace {} by tenancy.policy.targetGroups", b.namespace);
                out.push(verdict(tenancy.mode(), &object, &d, expected));
            }
        }
    }
    for i in inputs.ingresses {
        let object = format!("Ingress {}/{}", i.namespace, i.name);
        let choices = OwnChoices {
            namespace: &i.namespace,
            name: &i.name,
            via_class_annotation: i.via_class_annotation,
            own: &i.settings,
            group_from_params: i.group_from_params,
        };
        for v in ingress_verdicts(&strict, &choices) {
            if let policy::Verdict::Refused(r) = v {
                let expected = format!("{} within the tenancy policy's grants to namespace {}", r.kind, i.namespace);
                out.push(verdict(tenancy.mode(), &object, &r.detail, expected));
            }
        }
    }
    if inputs.target_group_tags.is_none() && inputs.bindings.iter().any(|b| b.spec.iam_role_arn_to_assume.is_none()) {
        out.push(Verdict::warn(
            CHECK,
            "target groups of TargetGroupBindings",
            "their tags could not be read (see the AWS checks), so target groups without our ownership tags are \
             not judged",
            "the tags of every bound target group",
            "fix what the AWS checks report (credentials, elasticloadbalancing:DescribeTags) and run doctor again",
        ));
    }
    if out.is_empty() {
        out.push(Verdict::ok(
            CHECK,
            "TargetGroupBindings and Ingresses",
            format!(
                "{} binding(s), {} Ingress(es): every role, spec.networking source, untagged target group and \
                 IngressGroup choice within the tenancy policy ({} mode)",
                inputs.bindings.len(),
                inputs.ingresses.len(),
                tenancy.mode()
            ),
        ));
    }
    out
}

/// Compatible mode: a warning (allowed now, refused in the strict mode); strict: a failure.
fn verdict(mode: TenancyMode, object: &str, message: &str, expected: String) -> Verdict {
    match mode {
        TenancyMode::Compatible => Verdict::warn(
            CHECK,
            object.to_string(),
            format!("allowed in the compatible mode, refused in the strict mode: {message}"),
            expected,
            "grant it in tenancy.policy if the namespace may use it, or change the object, before switching to \
             tenancy.mode=strict (docs/security.md)",
        ),
        TenancyMode::Strict => Verdict::fail(
            CHECK,
            object.to_string(),
            format!("refused: {message}"),
            expected,
            "the cluster admin grants it in tenancy.policy, or the object's owner changes it",
        ),
    }
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

    fn inputs(bindings: &[BindingInfo]) -> Inputs<'_> {
        static NO_TAGS: std::sync::LazyLock<BTreeMap<String, Tags>> = std::sync::LazyLock::new(BTreeMap::new);
        Inputs { cluster: "c", bindings, ingresses: &[], target_group_tags: Some(&NO_TAGS) }
    }

    #[test]
    fn exposures_warn_in_compatible_mode_and_refusals_fail_in_strict_mode() {
        let bindings =
            [binding("team-a", "10.1.0.0/16"), binding("team-a", "0.0.0.0/0"), binding("team-b", "10.1.0.0/16")];
        for (mode, status, word) in [
            (TenancyMode::Compatible, Status::Warn, "allowed in the compatible mode"),
            (TenancyMode::Strict, Status::Fail, "refused"),
        ] {
            let v = check(&Tenancy::parse(mode, POLICY, "test").unwrap(), &inputs(&bindings));
            let objects: Vec<(&str, Status)> = v.iter().map(|v| (v.object.as_str(), v.status)).collect();
            assert_eq!(objects, [("TargetGroupBinding team-a/web", status), ("TargetGroupBinding team-b/web", status)]);
            assert!(v[0].found.starts_with(word) && v[0].found.contains("ipBlock 0.0.0.0/0"), "{}", v[0].found);
            assert!(v[1].found.contains("namespace team-b"), "{}", v[1].found);
            assert!(!v[0].fix.is_empty() && v[0].expected.contains("spec.networking"), "{:?}", v[0]);
        }
        let v = check(&Tenancy::parse(TenancyMode::Strict, POLICY, "test").unwrap(), &inputs(&bindings[..1]));
        assert_eq!((v.len(), v[0].status), (1, Status::Ok), "{v:?}");
        assert!(v[0].found.contains("1 binding(s)") && v[0].found.contains("strict mode"), "{}", v[0].found);
    }

    /// Target groups without our tags and IngressGroup choices are judged too; a group another
    /// cluster's tags keep from the binding is not a tenancy question (the controller refuses it).
    #[test]
    fn untagged_target_groups_and_ingress_choices_are_named() {
        const ARN: &str = "arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/tf-web/0123456789abcdef";
        const OTHER: &str = "arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/k8s-x/0123456789abcdef";
        let policy = r#"{"targetGroups": [{"namespaces": ["team-a"], "arns": ["ARN"]}],
            "ingressGroups": [{"group": "shared", "namespaces": ["team-a"], "owner": "team-a"}]}"#
            .replace("ARN", ARN);
        let bind = |ns: &str, arn: &str| BindingInfo {
            namespace: ns.into(),
            name: "web".into(),
            spec: serde_json::from_value(json!({"serviceRef": {"name": "web", "port": 80}, "targetGroupARN": arn}))
                .unwrap(),
        };
        let bindings = [bind("team-a", ARN), bind("team-b", ARN), bind("team-b", OTHER)];
        let tags: BTreeMap<String, Tags> = [
            (ARN.to_string(), Tags::new()),
            (OTHER.to_string(), Tags::from([("elbv2.k8s.aws/cluster".to_string(), "another".to_string())])),
        ]
        .into();
        let ing = |ns: &str, group: &str, annotation: bool| IngressInfo {
            namespace: ns.into(),
            name: "shop".into(),
            via_class_annotation: annotation,
            settings: IngressSettings { group_name: Some(group.into()), ..Default::default() },
            group_from_params: false,
        };
        let ingresses = [ing("team-a", "shared", false), ing("team-b", "shared", false), ing("team-a", "shared", true)];
        for (mode, status) in [(TenancyMode::Compatible, Status::Warn), (TenancyMode::Strict, Status::Fail)] {
            let t = Tenancy::parse(mode, &policy, "test").unwrap();
            let v = check(
                &t,
                &Inputs { cluster: "c", bindings: &bindings, ingresses: &ingresses, target_group_tags: Some(&tags) },
            );
            let objects: Vec<(&str, Status)> = v.iter().map(|v| (v.object.as_str(), v.status)).collect();
            assert_eq!(
                objects,
                [
                    ("TargetGroupBinding team-b/web", status),
                    ("Ingress team-b/shop", status),
                    ("Ingress team-a/shop", status)
                ],
                "{v:#?}"
            );
            assert!(v[0].found.contains("tf-web") && v[0].expected.contains("targetGroups"), "{:?}", v[0]);
            assert!(v[2].found.contains("kubernetes.io/ingress.class"), "{:?}", v[2]);
        }
        // Tags unread: said, not silently passed.
        let t = Tenancy::parse(TenancyMode::Strict, &policy, "test").unwrap();
        let v = check(&t, &Inputs { cluster: "c", bindings: &bindings[..1], ingresses: &[], target_group_tags: None });
        assert_eq!((v.len(), v[0].status), (1, Status::Warn), "{v:?}");
        assert!(v[0].found.contains("could not be read"), "{:?}", v[0]);
    }
}
