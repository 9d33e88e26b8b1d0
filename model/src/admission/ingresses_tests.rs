use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{IngressClass, IngressClassParametersReference, IngressClassSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};

use super::*;
use crate::crd::IngressClassParams;
use crate::crd::ingress_class_params::{IngressGroupRef, ParamsListener, ParamsSubnets};

const ALB: &str = "ingress.k8s.aws/alb";

fn ing(ns: &str, class: Option<&str>, ann: &[(&str, &str)]) -> Ingress {
    let annotations: BTreeMap<_, _> = ann.iter().copied().collect();
    let spec = class.map_or(serde_json::json!({}), |c| serde_json::json!({"ingressClassName": c}));
    serde_json::from_value(serde_json::json!({
        "metadata": {"namespace": ns, "name": "web", "annotations": annotations},
        "spec": spec,
    }))
    .expect("an Ingress")
}

fn class(controller: &str, params: Option<&str>) -> IngressClass {
    IngressClass {
        spec: Some(IngressClassSpec {
            controller: Some(controller.into()),
            parameters: params.map(|name| IngressClassParametersReference {
                api_group: Some("elbv2.k8s.aws".into()),
                kind: "IngressClassParams".into(),
                name: name.into(),
                ..Default::default()
            }),
        }),
        ..Default::default()
    }
}

struct World {
    classes: BTreeMap<String, IngressClass>,
    params: BTreeMap<String, IngressClassParams>,
    namespaces: BTreeMap<String, BTreeMap<String, String>>,
}

impl World {
    /// `alb` (no params), `team` (params selecting namespaces labelled team=a), `nginx` (foreign).
    fn new() -> Self {
        let selector =
            LabelSelector { match_labels: Some([("team".to_string(), "a".to_string())].into()), ..Default::default() };
        let p = IngressClassParams::new(
            "team-params",
            IngressClassParamsSpec { namespace_selector: Some(selector), ..Default::default() },
        );
        Self {
            classes: [
                ("alb".to_string(), class(ALB, None)),
                ("team".to_string(), class(ALB, Some("team-params"))),
                ("nginx".to_string(), class("k8s.io/ingress-nginx", None)),
            ]
            .into(),
            params: [("team-params".to_string(), p)].into(),
            namespaces: [
                ("a".to_string(), [("team".to_string(), "a".to_string())].into()),
                ("b".to_string(), BTreeMap::new()),
            ]
            .into(),
        }
    }

    fn view(&self) -> ClassView<'_> {
        ClassView { classes: &self.classes, params: &self.params, namespace_labels: &self.namespaces }
    }
}

fn check(new: &Ingress, old: Option<&Ingress>, cfg: &SelectConfig) -> Verdict {
    let w = World::new();
    let op = if old.is_some() { AdmissionOp::Update } else { AdmissionOp::Create };
    validate_ingress(op, new, old, &w.view(), cfg, &Tenancy::default())
}

fn messages(v: &Verdict) -> Vec<&str> {
    v.violations.iter().map(|x| x.message.as_str()).collect()
}

#[test]
fn valid_ingress_of_ours_is_admitted() {
    let v = check(
        &ing("a", Some("alb"), &[("alb.ingress.kubernetes.io/scheme", "internet-facing")]),
        None,
        &Default::default(),
    );
    assert_eq!(v, Verdict::default());
}

#[test]
fn foreign_ingresses_are_admitted_whatever_their_annotations() {
    let bad = [("alb.ingress.kubernetes.io/scheme", "sideways")];
    for i in [
        ing("b", Some("nginx"), &bad),
        ing("b", None, &bad),
        ing("b", None, &[("kubernetes.io/ingress.class", "nginx"), bad[0]]),
    ] {
        assert_eq!(check(&i, None, &Default::default()), Verdict::default(), "{:?}", i.spec);
    }
}

#[test]
fn invalid_annotation_is_denied_naming_annotation_value_and_accepted_values() {
    let v =
        check(&ing("a", Some("alb"), &[("alb.ingress.kubernetes.io/scheme", "sideways")]), None, &Default::default());
    let m = messages(&v);
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(m[0].contains("alb.ingress.kubernetes.io/scheme") && m[0].contains("sideways"), "{}", m[0]);
    assert!(m[0].contains("internet-facing") && m[0].contains("internal"), "{}", m[0]);
    assert_eq!(v.violations[0].category, "invalid_annotation");
}

#[test]
fn namespace_outside_the_params_selector_is_denied() {
    let v = check(&ing("b", Some("team"), &[]), None, &Default::default());
    let m = messages(&v);
    assert_eq!(m.len(), 1);
    assert!(m[0].contains("namespace b") && m[0].contains("team-params"), "{}", m[0]);
    assert!(check(&ing("a", Some("team"), &[]).clone(), None, &Default::default()).violations.is_empty());
}

#[test]
fn missing_class_is_a_warning_missing_params_a_denial() {
    let v = check(&ing("a", Some("later"), &[]), None, &Default::default());
    assert!(v.violations.is_empty());
    assert!(v.warnings[0].contains("IngressClass later does not exist"), "{:?}", v.warnings);

    let mut w = World::new();
    w.params.clear();
    let v = validate_ingress(
        AdmissionOp::Create,
        &ing("a", Some("team"), &[]),
        None,
        &w.view(),
        &Default::default(),
        &Tenancy::default(),
    );
    assert!(messages(&v)[0].contains("IngressClassParams team-params of IngressClass team does not exist"));
}

#[test]
fn disabled_class_annotation_only_blocks_new_usage() {
    let cfg = SelectConfig { disable_ingress_class_annotation: true, ..Default::default() };
    let legacy = ing("b", None, &[("kubernetes.io/ingress.class", "alb")]);
    let v = check(&legacy, None, &cfg);
    assert!(messages(&v)[0].contains("kubernetes.io/ingress.class is disabled"), "{v:?}");
    // An Ingress that already had it may still change.
    let mut changed = legacy.clone();
    changed.metadata.annotations.as_mut().unwrap().insert("alb.ingress.kubernetes.io/scheme".into(), "internal".into());
    assert_eq!(check(&changed, Some(&legacy), &cfg), Verdict::default());
    // Not disabled: fine.
    assert!(check(&legacy, None, &Default::default()).violations.is_empty());
}

#[test]
fn disabled_group_name_blocks_new_or_changed_values() {
    let cfg = SelectConfig { disable_group_name_annotation: true, ..Default::default() };
    let g = |name| ing("a", Some("alb"), &[("alb.ingress.kubernetes.io/group.name", name)]);
    assert!(messages(&check(&g("shop"), None, &cfg))[0].contains("group.name is disabled"));
    assert!(!check(&g("other"), Some(&g("shop")), &cfg).violations.is_empty());
    let mut same = g("shop");
    same.spec.as_mut().unwrap().default_backend = Some(Default::default());
    assert!(check(&same, Some(&g("shop")), &cfg).violations.is_empty());
}

#[test]
fn metadata_only_updates_and_deletions_are_never_blocked() {
    let bad = ing("b", Some("team"), &[("alb.ingress.kubernetes.io/scheme", "sideways")]);
    let mut finalized = bad.clone();
    finalized.metadata.finalizers = Some(vec!["ingress.k8s.aws/resources".into()]);
    assert_eq!(check(&finalized, Some(&bad), &Default::default()), Verdict::default());
    let mut deleting = bad.clone();
    deleting.metadata.deletion_timestamp = Some(Time(Default::default()));
    assert_eq!(check(&deleting, None, &Default::default()), Verdict::default());
    // A real change to such an Ingress is checked.
    let mut changed = bad.clone();
    changed.metadata.annotations.as_mut().unwrap().insert("x".into(), "y".into());
    assert!(!check(&changed, Some(&bad), &Default::default()).violations.is_empty());
}

#[test]
fn unknown_and_unsupported_annotations_are_warnings() {
    let v =
        check(&ing("a", Some("alb"), &[("alb.ingress.kubernetes.io/shceme", "internal")]), None, &Default::default());
    assert!(v.violations.is_empty());
    assert!(v.warnings.iter().any(|w| w.contains("alb.ingress.kubernetes.io/shceme")), "{:?}", v.warnings);
}

/// WAF Classic, Shield Advanced and requested certificates are applied: admitted without a word
/// (no Ingress annotation is refused any more); ALBC's plan annotation (its own output) too.
#[test]
fn waf_classic_shield_certificates_and_the_plan_annotation_are_admitted() {
    let ann = [
        ("alb.ingress.kubernetes.io/waf-acl-id", "acl-1"),
        ("alb.ingress.kubernetes.io/shield-advanced-protection", "true"),
        ("alb.ingress.kubernetes.io/create-acm-cert", "true"),
        ("alb.ingress.kubernetes.io/dry-run-plan", "{}"),
    ];
    let v = check(&ing("a", Some("alb"), &ann), None, &Default::default());
    assert!(v.violations.is_empty(), "{:?}", v.violations);
    assert!(v.warnings.is_empty(), "the plan annotation is ALBC's output, not refused: {:?}", v.warnings);
    let bad = [("alb.ingress.kubernetes.io/shield-advanced-protection", "yes")];
    let v = check(&ing("a", Some("alb"), &bad), None, &Default::default());
    assert!(format!("{:?}", v.violations).contains("shield-advanced-protection"), "{:?}", v.violations);
}

/// JWT validation is applied: a valid value is admitted without a word, an invalid one is denied
/// with what AWS would refuse.
#[test]
fn jwt_validation_is_admitted_when_valid_and_denied_with_the_reason_when_not() {
    let key = "alb.ingress.kubernetes.io/jwt-validation";
    let good = r#"{"jwksEndpoint":"https://idp.example.com/jwks","issuer":"https://idp.example.com"}"#;
    let v = check(&ing("a", Some("alb"), &[(key, good)]), None, &Default::default());
    assert!(v.violations.is_empty() && v.warnings.is_empty(), "{:?} {:?}", v.violations, v.warnings);
    let bad = r#"{"jwksEndpoint":"http://idp.example.com/jwks","issuer":"https://idp.example.com"}"#;
    let v = check(&ing("a", Some("alb"), &[(key, bad)]), None, &Default::default());
    let text = format!("{:?}", v.violations);
    assert!(v.violations.len() == 1 && text.contains(key) && text.contains("not a full https:// URL"), "{text}");
}

#[test]
fn class_params_cidrs_are_checked_with_hints() {
    let spec = IngressClassParamsSpec {
        inbound_cidrs: vec![
            "10.0.0.0/8".into(),
            "10.1.2.3".into(),
            "10.1.2.3/16".into(),
            "2001:db8::1".into(),
            "nope".into(),
        ],
        ..Default::default()
    };
    let m: Vec<_> = validate_ingress_class_params(&spec).into_iter().map(|v| v.message).collect();
    assert_eq!(m.len(), 4, "{m:?}");
    assert!(m[0].contains("[1]") && m[0].contains("10.1.2.3/32"), "{}", m[0]);
    assert!(m[1].contains("10.1.0.0/16"), "{}", m[1]);
    assert!(m[2].contains("2001:db8::1/64"), "{}", m[2]);
    assert!(m[3].contains("\"nope\" is not a CIDR"), "{}", m[3]);
}

#[test]
fn class_params_subnets_ids_xor_tags_without_duplicates() {
    let with = |ids: &[&str], tags: &[(&str, &[&str])]| IngressClassParamsSpec {
        subnets: Some(ParamsSubnets {
            ids: ids.iter().map(|s| s.to_string()).collect(),
            tags: tags.iter().map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect())).collect(),
        }),
        ..Default::default()
    };
    let msgs = |s| validate_ingress_class_params(&s).into_iter().map(|v| v.message).collect::<Vec<_>>();
    assert!(msgs(with(&[], &[]))[0].contains("set either ids"));
    assert!(msgs(with(&["subnet-1"], &[("k", &["v"])]))[0].contains("mutually exclusive"));
    assert!(msgs(with(&["subnet-1", "subnet-1"], &[]))[0].contains("ids[1]"));
    assert!(msgs(with(&[], &[("k", &["v", "v"])]))[0].contains("tags[k][1]"));
    assert!(msgs(with(&["subnet-1", "subnet-2"], &[])).is_empty());
    assert!(msgs(with(&[], &[("kubernetes.io/role/elb", &["1"])])).is_empty());
}

#[test]
fn class_params_names_and_ports() {
    let spec = IngressClassParamsSpec {
        group: Some(IngressGroupRef { name: "Shop".into() }),
        load_balancer_name: Some("x".repeat(33)),
        ssl_redirect_port: Some("https".into()),
        listeners: vec![ParamsListener { protocol: None, port: Some(0), listener_attributes: vec![] }],
        ..Default::default()
    };
    let fields: Vec<_> = validate_ingress_class_params(&spec).into_iter().map(|v| v.field).collect();
    assert_eq!(fields, ["spec.group.name", "spec.loadBalancerName", "spec.sslRedirectPort", "spec.listeners"]);
    assert!(validate_ingress_class_params(&IngressClassParamsSpec::default()).is_empty());
}

/// Issue 32: IngressClassParams tags may not carry an ownership prefix (ours or the upstream's).
#[test]
fn ingress_class_params_tags_with_an_ownership_prefix_are_denied() {
    use crate::crd::ingress_class_params::KeyValue;
    let kv = |k: &str| KeyValue { key: k.into(), value: "v".into() };
    let spec = IngressClassParamsSpec { tags: vec![kv("team"), kv("service.k8s.aws/stack")], ..Default::default() };
    let v = validate_ingress_class_params(&spec);
    assert_eq!(v.iter().map(|v| v.field).collect::<Vec<_>>(), ["spec.tags"]);
    assert!(v[0].message.contains("\"service.k8s.aws/stack\" (prefix \"service.k8s.aws/\") in spec.tags"), "{}", v[0]);
    let fine = IngressClassParamsSpec { tags: vec![kv("team"), kv("kubernetes.io/owner")], ..Default::default() };
    assert!(validate_ingress_class_params(&fine).is_empty());
}

const FORWARD_BY_ARN: &str = r#"{"type": "forward", "targetGroupARN":
    "arn:aws:elasticloadbalancing:us-east-1:111122223333:targetgroup/payments/0123456789abcdef"}"#;

#[test]
fn strict_tenancy_refuses_at_admission_what_the_policy_does_not_grant() {
    use crate::tenancy::TenancyMode;
    let policy = r#"{"ingressGroups": [{"group": "shared", "namespaces": ["a", "b"], "owner": "a"}]}"#;
    let strict = Tenancy::parse(TenancyMode::Strict, policy, "test").unwrap();
    let compatible = Tenancy::parse(TenancyMode::Compatible, policy, "test").unwrap();
    let w = World::new();
    let run =
        |t: &Tenancy, i: &Ingress| validate_ingress(AdmissionOp::Create, i, None, &w.view(), &Default::default(), t);
    let group = "alb.ingress.kubernetes.io/group.name";
    let scheme = "alb.ingress.kubernetes.io/scheme";
    // (Ingress, words of each refusal in strict mode)
    let rows: Vec<(Ingress, Vec<&str>)> = vec![
        (ing("b", Some("alb"), &[(group, "shared")]), vec![]),
        (ing("a", Some("alb"), &[(group, "shared"), (scheme, "internet-facing")]), vec![]),
        (ing("b", Some("alb"), &[(group, "shared"), (scheme, "internet-facing")]), vec!["b/web", scheme, "owner"]),
        (ing("c", Some("alb"), &[(group, "shared")]), vec!["c/web", "\"shared\"", "tenancy.policy.ingressGroups"]),
        (ing("c", Some("alb"), &[(group, "other")]), vec!["c/web", "\"other\"", "does not list"]),
        (ing("b", None, &[("kubernetes.io/ingress.class", "alb")]), vec!["b/web", "spec.ingressClassName"]),
        (
            ing("a", Some("alb"), &[("alb.ingress.kubernetes.io/actions.pay", FORWARD_BY_ARN)]),
            vec!["a/web", "actions.pay", "targetgroup/payments/", "tenancy.policy.targetGroups"],
        ),
    ];
    for (i, (ingress, words)) in rows.iter().enumerate() {
        let v = run(&strict, ingress);
        assert_eq!(v.violations.is_empty(), words.is_empty(), "row {i}: {:?}", v.violations);
        let msg = messages(&v).join(" | ");
        for w in words {
            assert!(msg.contains(w), "row {i}: {w:?} missing from {msg}");
        }
        assert!(v.violations.iter().all(|x| x.category == "tenancy_refused"), "row {i}: {:?}", v.violations);
        assert!(run(&compatible, ingress).violations.is_empty(), "row {i}: compatible mode refuses nothing");
    }
}

/// The admission webhook refuses a `mutual-authentication` value ALBC would refuse at reconcile,
/// with the reason, before anything reaches AWS.
#[test]
fn mutual_tls_values_are_checked_at_admission() {
    let key = "alb.ingress.kubernetes.io/mutual-authentication";
    let ok = [(key, r#"[{"port": 443, "mode": "verify", "trustStore": "partners"}]"#)];
    let v = check(&ing("a", Some("alb"), &ok), None, &Default::default());
    assert!(v.violations.is_empty() && v.warnings.is_empty(), "{v:?}");
    let bad = [(key, r#"[{"port": 443, "mode": "verify"}]"#)];
    let v = check(&ing("a", Some("alb"), &bad), None, &Default::default());
    let msgs: Vec<String> = v.violations.iter().map(|v| v.to_string()).collect();
    assert!(msgs.iter().any(|m| m.contains(key) && m.contains("needs a trustStore")), "{msgs:?}");
}
