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
    assert_eq!(f.hostname.as_deref(), Some("n1"));
    let mut unknown = n.clone();
    unknown.status.as_mut().unwrap().conditions.as_mut().unwrap()[1].status = "Unknown".into();
    assert!(!NodeFacts::of(&unknown).ready);
}

#[test]
fn desired_targets_unresolved_and_mismatched() {
    let ip = |s: &str| Some(s.parse().unwrap());
    let zoned = |name: &str, addr: &str, zone: &str| NodeFacts {
        internal_ip: ip(addr),
        ..labelled(name, &[(ZONE_LABEL, zone)])
    };
    let nodes = vec![
        NodeFacts {
            provider_id: Some("aws:///eu-west-1a/i-0aaaaaaaaaaaaaaaa".into()),
            ..labelled("a", &[(ZONE_LABEL, "eu-west-1c")])
        },
        zoned("b", "10.0.1.11", "eu-west-1a"),
        NodeFacts { internal_ip: ip("10.0.1.12"), ..node("c") },
        NodeFacts { ready: false, ..node("d") },
        NodeFacts { internal_ip: None, ..node("e") },
        zoned("f", "10.0.1.15", "eu-west-1b"),
    ];
    let locs = eligible_locators(&nodes, None);
    assert_eq!(locs.keys().collect::<Vec<_>>(), ["a", "b", "c", "e", "f"]);
    let in_zone = |id: &str, zone: &str| Instance { zone: Some(zone.into()), ..Instance::new(id) };
    let resolved = BTreeMap::from([
        ("b".to_string(), in_zone("i-0bbbbbbbbbbbbbbbb", "eu-west-1a")),
        ("f".to_string(), in_zone("i-0fffffffffffffff0", "eu-west-1a")),
    ]);
    let got = desired_instance_targets(&nodes, &locs, &resolved, 30080);
    assert_eq!(
        got.targets.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["i-0aaaaaaaaaaaaaaaa:30080", "i-0bbbbbbbbbbbbbbbb:30080"],
        "a: named by providerID, not cross-checked (its zone label is not compared); b: zones agree"
    );
    assert_eq!(got.unresolved, ["c", "e"]);
    assert_eq!(
        got.mismatched,
        [NodeMismatch {
            node: "f".into(),
            ip: "10.0.1.15".parse().unwrap(),
            instance: "i-0fffffffffffffff0".into(),
            mismatch: Mismatch::Zone { seen: "eu-west-1b".into(), expected: "eu-west-1a".into() },
        }]
    );
}

#[test]
fn ec2_host_names() {
    let cases = [
        ("ip-10-0-1-10", Some("ip-10-0-1-10")),
        ("ip-10-0-1-10.ec2.internal", Some("ip-10-0-1-10")),
        ("ip-10-0-1-10.eu-west-1.compute.internal", Some("ip-10-0-1-10")),
        ("IP-10-0-1-10.EU-WEST-1.COMPUTE.INTERNAL", Some("IP-10-0-1-10")),
        ("ip-10-0-1-256", None),
        ("ip-10-0-1", None),
        ("ip-10-0-1-10-5", None),
        ("ip-10-0-1-", None),
        ("ip-10-0-1-10.corp.example.com", None),
        ("ip-10-0-1-10.a.b.compute.internal", None),
        ("ip-10-0-1-10..compute.internal", None),
        ("i-0123456789abcdef0.eu-west-1.compute.internal", None),
        ("worker-1", None),
        ("rke2-agent-ip-10-0-1-10", None),
        ("", None),
    ];
    for (name, want) in cases {
        assert_eq!(ec2_host_label(name), want, "name {name:?}");
    }
}

/// (case, node, instance, expected)
type CheckCase = (&'static str, NodeFacts, Instance, Result<(), Mismatch>);

#[test]
fn cross_check_table() {
    let dns = "ip-10-0-1-10.eu-west-1.compute.internal";
    let inst = Instance {
        id: "i-0aaaaaaaaaaaaaaaa".into(),
        zone: Some("eu-west-1a".into()),
        private_dns_name: Some(dns.into()),
    };
    let host = |name: &str, hostname: Option<&str>| NodeFacts { hostname: hostname.map(Into::into), ..node(name) };
    let zone = |z: &str| labelled("worker-1", &[(ZONE_LABEL, z)]);
    let zone_mismatch = |seen: &str| Err(Mismatch::Zone { seen: seen.into(), expected: "eu-west-1a".into() });
    let host_mismatch = |seen: &str| Err(Mismatch::Hostname { seen: seen.into(), expected: dns.into() });
    let cases: Vec<CheckCase> = vec![
        ("nothing to compare (custom name, no zone label)", host("worker-1", Some("worker-1")), inst.clone(), Ok(())),
        ("zone agrees", zone("eu-west-1a"), inst.clone(), Ok(())),
        ("zone differs", zone("eu-west-1b"), inst.clone(), zone_mismatch("eu-west-1b")),
        ("empty zone label: not compared", zone(""), inst.clone(), Ok(())),
        ("instance zone unknown", zone("eu-west-1b"), Instance { zone: None, ..inst.clone() }, Ok(())),
        ("EC2 hostname agrees (short)", host("ip-10-0-1-10", None), inst.clone(), Ok(())),
        ("EC2 hostname agrees (full)", host("n1", Some(dns)), inst.clone(), Ok(())),
        ("EC2 hostname differs", host("n1", Some("ip-10-0-1-11")), inst.clone(), host_mismatch("ip-10-0-1-11")),
        (
            "EC2 node name differs",
            host("ip-10-0-9-9.eu-west-1.compute.internal", Some("worker-1")),
            inst.clone(),
            host_mismatch("ip-10-0-9-9.eu-west-1.compute.internal"),
        ),
        ("the Hostname address wins over the name", host("ip-10-0-9-9", Some("ip-10-0-1-10")), inst.clone(), Ok(())),
        ("RKE2 custom hostname: not compared", host("rke2-agent-1", Some("rke2-agent-1")), inst.clone(), Ok(())),
        (
            "resource-name instance DNS: not compared",
            host("ip-10-0-9-9", None),
            Instance {
                private_dns_name: Some("i-0aaaaaaaaaaaaaaaa.eu-west-1.compute.internal".into()),
                ..inst.clone()
            },
            Ok(()),
        ),
        (
            "instance DNS unknown",
            host("ip-10-0-9-9", None),
            Instance { private_dns_name: None, ..inst.clone() },
            Ok(()),
        ),
        (
            "zone is reported first",
            NodeFacts { hostname: Some("ip-10-0-9-9".into()), ..zone("eu-west-1b") },
            inst.clone(),
            zone_mismatch("eu-west-1b"),
        ),
    ];
    for (name, n, i, want) in cases {
        assert_eq!(cross_check(&n, &i), want, "case {name:?}");
    }
    let shown = Mismatch::Zone { seen: "eu-west-1b".into(), expected: "eu-west-1a".into() }.to_string();
    assert_eq!(
        shown,
        "label topology.kubernetes.io/zone=eu-west-1b, but the instance is in availability zone eu-west-1a"
    );
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
    let p = instance_plan(&desired, &[(t("i-2"), HealthState::Healthy), (t("i-3"), HealthState::Unhealthy)], None);
    assert_eq!(p, InstancePlan { register: vec![t("i-1")], deregister: vec![t("i-3")] });
    let p = instance_plan(&desired, &[(t("i-1"), HealthState::Draining), (t("i-2"), HealthState::Initial)], None);
    assert_eq!(p, InstancePlan { register: vec![t("i-1")], deregister: vec![] }, "draining one comes back");
    let p = instance_plan(&BTreeSet::new(), &[(t("i-9"), HealthState::UnhealthyDraining)], None);
    assert!(p.is_empty(), "a draining target is not deregistered again");
    // The same instance on another port (the NodePort changed) is another target.
    let moved = [(InstanceTarget::new("i-1", 30081), HealthState::Healthy), (t("i-2"), HealthState::Healthy)];
    let p = instance_plan(&desired, &moved, None);
    assert_eq!(p.register, vec![t("i-1")]);
    assert_eq!(p.deregister, vec![InstanceTarget::new("i-1", 30081)]);
}

#[test]
fn multi_cluster_plan_deregisters_only_owned_targets() {
    let t = |id: &str| InstanceTarget::new(id, 30080);
    let desired: BTreeSet<_> = [t("i-1")].into();
    let current = [(t("i-2"), HealthState::Healthy), (t("i-9"), HealthState::Healthy)];
    let owned: BTreeSet<_> = [t("i-2")].into();
    let p = instance_plan(&desired, &current, Some(&owned));
    assert_eq!(p, InstancePlan { register: vec![t("i-1")], deregister: vec![t("i-2")] }, "i-9 is another cluster's");
    let p = instance_plan(&desired, &current, None);
    assert_eq!(p.deregister, vec![t("i-2"), t("i-9")], "a group of our own: everything not desired goes");
}

#[test]
fn owned_instance_targets_round_trip() {
    let raw = "i-0aaaaaaaaaaaaaaaa:30080, i-0bbbbbbbbbbbbbbbb:30081,10.0.1.1:8080,i-:1,i-0c:notaport,,garbage";
    let got = parse_owned_instance_targets(raw);
    assert_eq!(
        got.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["i-0aaaaaaaaaaaaaaaa:30080", "i-0bbbbbbbbbbbbbbbb:30081"],
        "IP targets and malformed entries are skipped"
    );
    assert_eq!(owned_instance_targets_value(&got), "i-0aaaaaaaaaaaaaaaa:30080,i-0bbbbbbbbbbbbbbbb:30081");
    assert_eq!(parse_owned_instance_targets(&owned_instance_targets_value(&got)), got);
    assert!(parse_owned_instance_targets("").is_empty());
}

#[test]
fn node_digests_change_only_with_the_facts() {
    let mut d: crate::digest::Digests = crate::digest::Digests::default();
    fn record(d: &mut crate::digest::Digests, f: &NodeFacts) -> bool {
        d.record(&f.name, f.digest())
    }
    assert!(record(&mut d, &node("a")), "a new node is a change");
    assert!(!record(&mut d, &node("a")), "the same facts again are not");
    let changes: Vec<(&str, NodeFacts)> = vec![
        ("not ready", NodeFacts { ready: false, ..node("a") }),
        ("being deleted", NodeFacts { deleting: true, ..node("a") }),
        ("a label", labelled("a", &[("pool", "web")])),
        ("an exclusion label", labelled("a", &[(EXCLUDE_LABELS[0], "")])),
        ("a zone label", labelled("a", &[(ZONE_LABEL, "eu-west-1a")])),
        ("a providerID", NodeFacts { provider_id: Some("aws:///eu-west-1a/i-0123456789abcdef0".into()), ..node("a") }),
        ("another InternalIP", NodeFacts { internal_ip: Some("10.0.1.99".parse().unwrap()), ..node("a") }),
        ("a hostname", NodeFacts { hostname: Some("ip-10-0-1-10".into()), ..node("a") }),
    ];
    for (what, facts) in changes {
        assert!(record(&mut d, &facts), "{what} is a change");
        assert!(!record(&mut d, &facts), "{what}, seen again, is not");
        assert!(record(&mut d, &node("a")), "back from {what} is a change");
    }
    assert!(record(&mut d, &node("b")), "another node is tracked on its own");
    assert_eq!(d.len(), 2);
    d.deleted("a");
    assert!(record(&mut d, &node("a")), "a forgotten node is new again");
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
        let p = instance_plan(&desired, &current, None);
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
