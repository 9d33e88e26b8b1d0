use super::*;
use k8s_openapi::api::networking::v1::{IngressClassParametersReference, IngressClassSpec, IngressSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelectorRequirement, ObjectMeta};

use crate::crd::IngressClassParamsSpec;

fn ing(ns: &str, class: Option<&str>, ann: &[(&str, &str)]) -> Ingress {
    Ingress {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some("web".into()),
            annotations: Some(ann.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
            ..Default::default()
        },
        spec: Some(IngressSpec { ingress_class_name: class.map(Into::into), ..Default::default() }),
        ..Default::default()
    }
}

fn class(controller: &str, params: Option<(&str, &str, &str)>, default: bool) -> IngressClass {
    let mut c = IngressClass::default();
    if default {
        c.metadata.annotations = Some([(k::DEFAULT_CLASS_ANNOTATION.to_string(), "true".to_string())].into());
    }
    c.spec = Some(IngressClassSpec {
        controller: Some(controller.into()),
        parameters: params.map(|(group, kind, name)| IngressClassParametersReference {
            api_group: Some(group.into()),
            kind: kind.into(),
            name: name.into(),
            ..Default::default()
        }),
    });
    c
}

fn params(selector: Option<LabelSelector>) -> IngressClassParams {
    IngressClassParams::new("p", IngressClassParamsSpec { namespace_selector: selector, ..Default::default() })
}

fn team(t: &str) -> LabelSelector {
    LabelSelector { match_labels: Some([("team".to_string(), t.to_string())].into()), ..Default::default() }
}

struct World {
    classes: BTreeMap<String, IngressClass>,
    params: BTreeMap<String, IngressClassParams>,
    ns: BTreeMap<String, BTreeMap<String, String>>,
}

fn world() -> World {
    let classes = BTreeMap::from([
        ("alb".to_string(), class(k::CONTROLLER, None, false)),
        ("alb-p".to_string(), class(k::CONTROLLER, Some((ELBV2_GROUP, "IngressClassParams", "p")), false)),
        ("alb-shop".to_string(), class(k::CONTROLLER, Some((ELBV2_GROUP, "IngressClassParams", "shop")), false)),
        ("alb-missing".to_string(), class(k::CONTROLLER, Some((ELBV2_GROUP, "IngressClassParams", "nope")), false)),
        ("alb-foreign".to_string(), class(k::CONTROLLER, Some(("example.com", "Config", "p")), false)),
        ("nginx".to_string(), class("k8s.io/ingress-nginx", None, true)),
    ]);
    let mut shop = params(Some(team("shop")));
    shop.metadata.name = Some("shop".into());
    let params = BTreeMap::from([("p".to_string(), params(None)), ("shop".to_string(), shop)]);
    let ns = BTreeMap::from([
        ("shop".to_string(), BTreeMap::from([("team".to_string(), "shop".to_string())])),
        ("blog".to_string(), BTreeMap::new()),
    ]);
    World { classes, params, ns }
}

#[test]
fn albc_selection_table() {
    let w = world();
    let view = ClassView { classes: &w.classes, params: &w.params, namespace_labels: &w.ns };
    let a = k::INGRESS_CLASS_ANNOTATION;
    type Check = fn(&Selection) -> bool;
    let cases: Vec<(&str, Ingress, Check)> = vec![
        (
            "class, no params",
            ing("blog", Some("alb"), &[]),
            |s| matches!(s, Selection::Ours { class: Some(c), params: None } if c == "alb"),
        ),
        (
            "class with params",
            ing("blog", Some("alb-p"), &[]),
            |s| matches!(s, Selection::Ours { params: Some(p), .. } if p.metadata.name.as_deref() == Some("p")),
        ),
        ("namespace selected", ing("shop", Some("alb-shop"), &[]), |s| matches!(s, Selection::Ours { .. })),
        (
            "namespace not selected",
            ing("blog", Some("alb-shop"), &[]),
            |s| matches!(s, Selection::Misconfigured { reason } if reason.contains("namespace blog")),
        ),
        ("unknown namespace", ing("gone", Some("alb-shop"), &[]), |s| matches!(s, Selection::Misconfigured { .. })),
        (
            "class missing",
            ing("blog", Some("ghost"), &[]),
            |s| matches!(s, Selection::Misconfigured { reason } if reason.contains("ghost does not exist")),
        ),
        (
            "params missing",
            ing("blog", Some("alb-missing"), &[]),
            |s| matches!(s, Selection::Misconfigured { reason } if reason.contains("nope")),
        ),
        (
            "params of another kind",
            ing("blog", Some("alb-foreign"), &[]),
            |s| matches!(s, Selection::Misconfigured { reason } if reason.contains("example.com/Config")),
        ),
        ("other controller", ing("blog", Some("nginx"), &[]), |s| matches!(s, Selection::NotOurs { .. })),
        ("annotation alb", ing("blog", None, &[(a, "alb")]), |s| {
            matches!(s, Selection::Ours { class: None, params: None })
        }),
        ("annotation wins over class", ing("blog", Some("nginx"), &[(a, "alb")]), |s| {
            matches!(s, Selection::Ours { .. })
        }),
        ("annotation other", ing("blog", Some("alb"), &[(a, "nginx")]), |s| matches!(s, Selection::NotOurs { .. })),
        ("annotation case", ing("blog", None, &[(a, "ALB")]), |s| matches!(s, Selection::NotOurs { .. })),
        (
            "no class",
            ing("blog", None, &[]),
            |s| matches!(s, Selection::NotOurs { reason } if !reason.contains("default")),
        ),
    ];
    for (name, i, ok) in cases {
        let got = select(&i, &view, &SelectConfig::default());
        assert!(ok(&got), "{name}: {got:?}");
    }
}

#[test]
fn flags_and_default_class() {
    let mut w = world();
    let view = ClassView { classes: &w.classes, params: &w.params, namespace_labels: &w.ns };
    let bare = ing("blog", None, &[]);
    let all = SelectConfig { manage_ingresses_without_class: true, ..Default::default() };
    assert!(matches!(select(&bare, &view, &all), Selection::Ours { .. }));
    let custom = SelectConfig { ingress_class: "corp".into(), ..Default::default() };
    let corp = ing("blog", None, &[(k::INGRESS_CLASS_ANNOTATION, "corp")]);
    assert!(matches!(select(&corp, &view, &custom), Selection::Ours { .. }));
    let alb = ing("blog", None, &[(k::INGRESS_CLASS_ANNOTATION, "alb")]);
    assert!(matches!(select(&alb, &view, &custom), Selection::NotOurs { .. }));
    let empty = SelectConfig { ingress_class: String::new(), ..Default::default() };
    assert!(matches!(select(&alb, &view, &empty), Selection::Ours { .. }));

    w.classes.insert("alb".into(), class(k::CONTROLLER, None, true));
    let view = ClassView { classes: &w.classes, params: &w.params, namespace_labels: &w.ns };
    assert_eq!(default_class(&w.classes), Some("alb"));
    let Selection::NotOurs { reason } = select(&bare, &view, &SelectConfig::default()) else { panic!() };
    assert!(reason.contains("set spec.ingressClassName: alb"), "{reason}");
    w.classes.insert("alb-p".into(), class(k::CONTROLLER, None, true));
    assert_eq!(default_class(&w.classes), None, "two defaults: none is the default");
}

#[test]
fn label_selector_semantics() {
    let labels = BTreeMap::from([("team".to_string(), "shop".to_string()), ("env".to_string(), "prod".to_string())]);
    let expr = |key: &str, op: &str, values: &[&str]| LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }]),
        ..Default::default()
    };
    let cases = [
        (LabelSelector::default(), true),
        (team("shop"), true),
        (team("blog"), false),
        (expr("env", "In", &["prod", "dev"]), true),
        (expr("env", "In", &["dev"]), false),
        (expr("env", "NotIn", &["dev"]), true),
        (expr("tier", "NotIn", &["x"]), true),
        (expr("env", "Exists", &[]), true),
        (expr("tier", "Exists", &[]), false),
        (expr("tier", "DoesNotExist", &[]), true),
        (expr("env", "Gt", &["1"]), false),
    ];
    for (i, (sel, want)) in cases.into_iter().enumerate() {
        assert_eq!(selector_matches(&sel, &labels), want, "case {i}: {sel:?}");
    }
}

#[test]
fn disabled_annotations_are_denied_only_when_introduced() {
    let cfg = SelectConfig {
        disable_ingress_class_annotation: true,
        disable_group_name_annotation: true,
        ..Default::default()
    };
    let a = k::INGRESS_CLASS_ANNOTATION;
    let g = full_key(k::GROUP_NAME);
    let with = ing("blog", None, &[(a, "alb")]);
    let grouped = ing("blog", Some("alb"), &[(g.as_str(), "team")]);
    let plain = ing("blog", Some("alb"), &[]);
    assert!(disabled_annotation_use(&with, None, &cfg).unwrap().contains("spec.ingressClassName"));
    assert!(disabled_annotation_use(&with, Some(&plain), &cfg).is_some());
    assert_eq!(disabled_annotation_use(&with, Some(&with), &cfg), None, "unchanged: allowed");
    assert!(disabled_annotation_use(&grouped, None, &cfg).unwrap().contains("spec.group"));
    assert_eq!(disabled_annotation_use(&plain, None, &cfg), None);
    assert_eq!(disabled_annotation_use(&with, None, &SelectConfig::default()), None);
}
