use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
use proptest::prelude::*;

fn node(name: &str) -> NodeFacts {
    NodeFacts { name: name.into(), ready: true, internal_ip: Some("10.0.1.10".parse().unwrap()), ..Default::default() }
}

fn labelled(name: &str, labels: &[(&str, &str)]) -> NodeFacts {
    NodeFacts { labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(), ..node(name) }
}

fn sel(pairs: &[(&str, &str)]) -> LabelSelector {
    LabelSelector {
        match_labels: Some(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
        ..Default::default()
    }
}

/// (name, node, selector, expected answer)
type Case<'a> = (&'static str, NodeFacts, Option<&'a LabelSelector>, Result<(), Ineligible>);

#[test]
fn eligibility_table() {
    let pool = sel(&[("pool", "web")]);
    let not_in = LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "pool".into(),
            operator: "NotIn".into(),
            values: Some(vec!["batch".into()]),
        }]),
        ..Default::default()
    };
    let cases: Vec<Case> = vec![
        ("ready node, no selector", node("a"), None, Ok(())),
        ("not ready", NodeFacts { ready: false, ..node("a") }, None, Err(Ineligible::NotReady)),
        ("being deleted", NodeFacts { deleting: true, ..node("a") }, None, Err(Ineligible::Deleting)),
        (
            "deleted wins over not ready",
            NodeFacts { deleting: true, ready: false, ..node("a") },
            None,
            Err(Ineligible::Deleting),
        ),
        (
            "exclude label, empty value",
            labelled("a", &[("node.kubernetes.io/exclude-from-external-load-balancers", "")]),
            None,
            Err(Ineligible::ExcludedByLabel("node.kubernetes.io/exclude-from-external-load-balancers")),
        ),
        (
            "exclude label, value false still excludes (presence, as ALBC)",
            labelled("a", &[("node.kubernetes.io/exclude-from-external-load-balancers", "false")]),
            None,
            Err(Ineligible::ExcludedByLabel("node.kubernetes.io/exclude-from-external-load-balancers")),
        ),
        (
            "legacy exclude-balancer label",
            labelled("a", &[("alpha.service-controller.kubernetes.io/exclude-balancer", "true")]),
            None,
            Err(Ineligible::ExcludedByLabel("alpha.service-controller.kubernetes.io/exclude-balancer")),
        ),
        ("fargate", labelled("a", &[("eks.amazonaws.com/compute-type", "fargate")]), None, Err(Ineligible::Fargate)),
        ("ec2 compute type", labelled("a", &[("eks.amazonaws.com/compute-type", "ec2")]), None, Ok(())),
        (
            "master role is kept (documented difference)",
            labelled("a", &[("node-role.kubernetes.io/master", "true")]),
            None,
            Ok(()),
        ),
        ("selector matches", labelled("a", &[("pool", "web")]), Some(&pool), Ok(())),
        ("selector mismatch", labelled("a", &[("pool", "batch")]), Some(&pool), Err(Ineligible::SelectorMismatch)),
        ("selector, label missing", node("a"), Some(&pool), Err(Ineligible::SelectorMismatch)),
        ("NotIn, label missing", node("a"), Some(&not_in), Ok(())),
        (
            "NotIn, excluded value",
            labelled("a", &[("pool", "batch")]),
            Some(&not_in),
            Err(Ineligible::SelectorMismatch),
        ),
    ];
    for (name, n, s, want) in cases {
        assert_eq!(eligibility(&n, s), want, "case {name:?}");
    }
}

#[test]
fn provider_id_parsing() {
    let cases = [
        ("aws:///eu-west-1a/i-0123456789abcdef0", Some("i-0123456789abcdef0")),
        ("aws:///i-0123456789abcdef0", Some("i-0123456789abcdef0")),
        ("aws:///us-east-1b/i-12345678", Some("i-12345678")),
        ("aws://eu-west-1a/i-0123456789abcdef0", Some("i-0123456789abcdef0")),
        ("", None),
        ("rke2://ip-10-0-1-10", None),
        ("k3s://node-1", None),
        ("aws:///eu-west-1a/", None),
        ("aws:///eu-west-1a/i-0123", None),
        ("aws:///eu-west-1a/i-0123456789ABCDEF0", None),
        ("aws:///eu-west-1a/fargate-ip-10-0-1-10", None),
        ("gce://project/zone/i-0123456789abcdef0", None),
    ];
    for (p, want) in cases {
        assert_eq!(instance_id_from_provider_id(p), want, "providerID {p:?}");
    }
}

#[test]
fn locate_prefers_provider_id_then_ip() {
    let with_id = NodeFacts { provider_id: Some("aws:///eu-west-1a/i-0123456789abcdef0".into()), ..node("a") };
    assert_eq!(locate(&with_id), Locator::Instance("i-0123456789abcdef0".into()));
    let rke2 = NodeFacts { provider_id: Some("rke2://a".into()), ..node("a") };
    assert_eq!(locate(&rke2), Locator::PrivateIp("10.0.1.10".parse().unwrap()));
    assert_eq!(locate(&NodeFacts { internal_ip: None, ..node("a") }), Locator::Unlocatable);
}

#[test]
fn facts_from_a_node_object() {
    let n: Node = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "n1", "labels": {"pool": "web"}},
        "spec": {"providerID": ""},
        "status": {
            "conditions": [{"type": "MemoryPressure", "status": "True"}, {"type": "Ready", "status": "True"}],
            "addresses": [{"type": "Hostname", "address": "n1"}, {"type": "ExternalIP", "address": "52.1.2.3"},
                          {"type": "InternalIP", "address": "10.0.1.11"}],
        },
    }))
    .unwrap();
    let f = NodeFacts::of(&n);
    assert_eq!(f.name, "n1");
    assert!(f.ready);
    assert!(!f.deleting);
    assert_eq!(f.provider_id, None, "an empty providerID is no providerID");
    assert_eq!(f.internal_ip, Some("10.0.1.11".parse().unwrap()));
    let mut unknown = n.clone();
    unknown.status.as_mut().unwrap().conditions.as_mut().unwrap()[1].status = "Unknown".into();
    assert!(!NodeFacts::of(&unknown).ready);
}

#[test]
fn desired_targets_and_unresolved() {
    let nodes = vec![
        NodeFacts { provider_id: Some("aws:///eu-west-1a/i-0aaaaaaaaaaaaaaaa".into()), ..node("a") },
        NodeFacts { internal_ip: Some("10.0.1.11".parse().unwrap()), ..node("b") },
        NodeFacts { internal_ip: Some("10.0.1.12".parse().unwrap()), ..node("c") },
        NodeFacts { ready: false, ..node("d") },
        NodeFacts { internal_ip: None, ..node("e") },
    ];
    let locs = eligible_locators(&nodes, None);
    assert_eq!(locs.keys().collect::<Vec<_>>(), ["a", "b", "c", "e"]);
    let resolved = BTreeMap::from([("b".to_string(), "i-0bbbbbbbbbbbbbbbb".to_string())]);
    let (targets, unresolved) = desired_instance_targets(&locs, &resolved, 30080);
    assert_eq!(
        targets.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["i-0aaaaaaaaaaaaaaaa:30080", "i-0bbbbbbbbbbbbbbbb:30080"]
    );
    assert_eq!(unresolved, ["c", "e"]);
}

#[test]
fn node_port_of_a_service_port() {
    let p = |np: Option<i32>| k8s_openapi::api::core::v1::ServicePort { port: 80, node_port: np, ..Default::default() };
    assert_eq!(node_port(&p(Some(30080))), Some(30080));
    assert_eq!(node_port(&p(None)), None);
    assert_eq!(node_port(&p(Some(0))), None);
}

#[test]
fn plan_table() {
    let t = |id: &str| InstanceTarget::new(id, 30080);
    let desired: BTreeSet<_> = [t("i-1"), t("i-2")].into();
    let p = instance_plan(&desired, &[(t("i-2"), HealthState::Healthy), (t("i-3"), HealthState::Unhealthy)]);
    assert_eq!(p, InstancePlan { register: vec![t("i-1")], deregister: vec![t("i-3")] });
    let p = instance_plan(&desired, &[(t("i-1"), HealthState::Draining), (t("i-2"), HealthState::Initial)]);
    assert_eq!(p, InstancePlan { register: vec![t("i-1")], deregister: vec![] }, "draining one comes back");
    let p = instance_plan(&BTreeSet::new(), &[(t("i-9"), HealthState::UnhealthyDraining)]);
    assert!(p.is_empty(), "a draining target is not deregistered again");
    // The same instance on another port (the NodePort changed) is another target.
    let p = instance_plan(
        &desired,
        &[(InstanceTarget::new("i-1", 30081), HealthState::Healthy), (t("i-2"), HealthState::Healthy)],
    );
    assert_eq!(p.register, vec![t("i-1")]);
    assert_eq!(p.deregister, vec![InstanceTarget::new("i-1", 30081)]);
}

fn arb_target() -> impl Strategy<Value = InstanceTarget> {
    (0u8..6, prop_oneof![Just(30080u16), Just(30081u16)]).prop_map(|(i, p)| InstanceTarget::new(format!("i-{i}"), p))
}

proptest! {
    /// Applying the plan to the live registrations yields exactly the desired set.
    #[test]
    fn plan_converges(
        desired in prop::collection::btree_set(arb_target(), 0..8),
        current in prop::collection::vec((arb_target(), prop::sample::select(HealthState::ALL.to_vec())), 0..10),
    ) {
        let p = instance_plan(&desired, &current);
        let mut live: BTreeSet<InstanceTarget> =
            current.iter().filter(|(_, h)| !h.is_draining()).map(|(t, _)| t.clone()).collect();
        for t in &p.deregister {
            prop_assert!(live.remove(t), "deregisters only live targets: {t}");
        }
        for t in &p.register {
            prop_assert!(live.insert(t.clone()), "registers only missing targets: {t}");
        }
        prop_assert_eq!(live, desired);
    }
}
