use super::*;
use serde_json::json;

const CLUSTER: &str = "dev-meta";

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn tags(pairs: &[(&str, &str)]) -> Tags {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn eni(id: &str, sgs: &[&str]) -> NetworkInterface {
    NetworkInterface {
        id: id.into(),
        subnet_id: "subnet-1".into(),
        private_ips: vec![],
        security_groups: sgs.iter().map(|s| s.to_string()).collect(),
    }
}

fn sg(id: &str, t: &[(&str, &str)], ingress: Vec<IngressRule>) -> Observed<SecurityGroup> {
    Observed {
        id: id.into(),
        spec: SecurityGroup {
            name: id.into(),
            description: String::new(),
            vpc_id: "vpc-1".into(),
            ingress,
            tags: tags(t),
        },
    }
}

fn net(v: serde_json::Value) -> TargetGroupBindingNetworking {
    serde_json::from_value(v).unwrap()
}

/// `tcp` rule from a security group.
fn from_sg(src: &str, from: i32, to: i32) -> IngressRule {
    IngressRule {
        protocol: "tcp".into(),
        from_port: from,
        to_port: to,
        source: RuleSource::SecurityGroup(src.into()),
        description: Some(RULE_DESCRIPTION.into()),
    }
}

fn from_cidr(proto: &str, cidr: &str, from: i32, to: i32) -> IngressRule {
    let source = if cidr.contains(':') { RuleSource::Ipv6Cidr(cidr.into()) } else { RuleSource::Cidr(cidr.into()) };
    IngressRule {
        protocol: proto.into(),
        from_port: from,
        to_port: to,
        source,
        description: Some(RULE_DESCRIPTION.into()),
    }
}

fn foreign(mut r: IngressRule, description: Option<&str>) -> IngressRule {
    r.description = description.map(str::to_string);
    r
}

fn ep<'a>(addr: &str, eni: Option<&'a NetworkInterface>, ports: &[(&str, u16)]) -> EndpointEni<'a> {
    EndpointEni { ip: ip(addr), eni, named_ports: ports.iter().map(|(n, p)| (n.to_string(), *p)).collect() }
}

fn binding<'a>(key: &str, n: Option<&'a TargetGroupBindingNetworking>, eps: Vec<EndpointEni<'a>>) -> BindingRules<'a> {
    BindingRules { key: key.into(), networking: n, endpoints: eps, endpoints_known: true, kept: None }
}

const NO_MISSING: &BTreeSet<String> = &BTreeSet::new();

fn plan(bindings: &[BindingRules<'_>], sgs: &[Observed<SecurityGroup>], complete: bool) -> BackendRulesPlan {
    plan_with(bindings, sgs, complete, true, &Tags::new())
}

fn plan_with(
    bindings: &[BindingRules<'_>],
    sgs: &[Observed<SecurityGroup>],
    complete: bool,
    restricted: bool,
    required_tags: &Tags,
) -> BackendRulesPlan {
    plan_backend_rules(&BackendRulesInput {
        cluster_name: CLUSTER,
        required_tags,
        restricted,
        bindings,
        security_groups: sgs,
        complete,
        missing_peers: NO_MISSING,
        first_pass: false,
        tenancy: &Tenancy::default(),
    })
}

/// Complete, restricted: with peers known missing, and whether this is the process's first pass.
fn plan_isolated(
    bindings: &[BindingRules<'_>],
    sgs: &[Observed<SecurityGroup>],
    missing_peers: &BTreeSet<String>,
    first_pass: bool,
) -> BackendRulesPlan {
    plan_complete(bindings, sgs, missing_peers, first_pass, &Tenancy::default())
}

/// Complete, restricted, under this tenancy.
fn plan_tenancy(bindings: &[BindingRules<'_>], sgs: &[Observed<SecurityGroup>], tenancy: &Tenancy) -> BackendRulesPlan {
    plan_complete(bindings, sgs, NO_MISSING, false, tenancy)
}

fn plan_complete(
    bindings: &[BindingRules<'_>],
    sgs: &[Observed<SecurityGroup>],
    missing_peers: &BTreeSet<String>,
    first_pass: bool,
    tenancy: &Tenancy,
) -> BackendRulesPlan {
    plan_backend_rules(&BackendRulesInput {
        cluster_name: CLUSTER,
        required_tags: &Tags::new(),
        restricted: true,
        bindings,
        security_groups: sgs,
        complete: true,
        missing_peers,
        first_pass,
        tenancy,
    })
}

fn lb_sg_rule(port: serde_json::Value) -> TargetGroupBindingNetworking {
    net(
        json!({"ingress": [{"from": [{"securityGroup": {"groupID": "sg-lb"}}], "ports": [{"protocol": "TCP", "port": port}]}]}),
    )
}

#[test]
fn single_sg_eni_gets_the_rule() {
    let (e, n) = (eni("eni-1", &["sg-node"]), lb_sg_rule(json!(8080)));
    let b = [binding("shop/web", Some(&n), vec![ep("10.0.1.5", Some(&e), &[])])];
    let p = plan(&b, &[sg("sg-node", &[], vec![])], true);
    assert_eq!(p.problems, vec![]);
    assert_eq!(p.changes["sg-node"], SgRuleChanges { authorize: vec![from_sg("sg-lb", 8080, 8080)], revoke: vec![] });
    // Applied: nothing left to do.
    let p = plan(&b, &[sg("sg-node", &[], vec![from_sg("sg-lb", 8080, 8080)])], true);
    assert!(p.changes.is_empty() && p.revokes_allowed);
}

#[test]
fn which_sg_of_a_multi_sg_eni() {
    let tagged = ("kubernetes.io/cluster/dev-meta", "owned");
    let other_cluster = ("kubernetes.io/cluster/meta-dev", "owned");
    let team = ("team", "web");
    let e = eni("eni-7", &["sg-a", "sg-b"]);
    let no_extra = Tags::new();
    let need_team = tags(&[team]);
    // (tags of sg-a, tags of sg-b, required tags, expected SG or error fragments)
    type Case<'a> = (Vec<(&'a str, &'a str)>, Vec<(&'a str, &'a str)>, &'a Tags, Result<&'a str, Vec<&'a str>>);
    let cases: Vec<Case<'_>> = vec![
        (vec![tagged], vec![], &no_extra, Ok("sg-a")),
        (vec![], vec![("kubernetes.io/cluster/dev-meta", "")], &no_extra, Ok("sg-b")),
        (vec![tagged], vec![tagged, team], &need_team, Ok("sg-b")),
        (
            vec![other_cluster, ("Name", "nodes")],
            vec![],
            &no_extra,
            Err(vec![
                "ENI eni-7",
                "sg-a [Name=nodes, kubernetes.io/cluster/meta-dev=owned]",
                "sg-b [no cluster tag]",
                "found 0",
                "kubernetes.io/cluster/dev-meta=owned",
                "tagged for cluster meta-dev but the controller runs as dev-meta",
            ]),
        ),
        (vec![tagged], vec![tagged], &no_extra, Err(vec!["found 2 (sg-a, sg-b)", "keep the tags on only one"])),
        (vec![tagged], vec![], &need_team, Err(vec!["and tags team=web", "found 0", "give it team=web"])),
    ];
    for (a, b, required, want) in cases {
        let described: BTreeMap<String, Tags> = [("sg-a".to_string(), tags(&a)), ("sg-b".to_string(), tags(&b))].into();
        let got = endpoint_security_group(&e, &described, CLUSTER, required);
        match (want, got) {
            (Ok(w), Ok(g)) => assert_eq!(g, w),
            (Err(fragments), Err(err)) => {
                let msg = err.to_string();
                for f in fragments {
                    assert!(msg.contains(f), "{f:?} not in {msg}");
                }
            }
            (w, g) => panic!("want {w:?}, got {g:?}"),
        }
    }
    let undescribed = endpoint_security_group(&e, &BTreeMap::new(), CLUSTER, &no_extra).unwrap_err();
    assert!(matches!(undescribed, EniSgError::Undescribed { ref missing, .. } if missing == &["sg-a", "sg-b"]));
    assert!(endpoint_security_group(&eni("eni-0", &[]), &BTreeMap::new(), CLUSTER, &no_extra).is_err());
}

#[test]
fn eni_sg_error_keeps_that_bindings_rules_and_other_endpoints_still_get_rules() {
    let (good, bad) = (eni("eni-1", &["sg-node"]), eni("eni-2", &["sg-x", "sg-y"]));
    let n = lb_sg_rule(json!(80));
    let had = from_sg("sg-lb", 9000, 9000);
    let stale = from_sg("sg-old", 9000, 9000);
    let sgs = [sg("sg-node", &[], vec![had.clone(), stale.clone()]), sg("sg-x", &[], vec![]), sg("sg-y", &[], vec![])];
    let memory: KeptRules = [("sg-node".to_string(), BTreeSet::from([had.clone()]))].into();
    let mut b =
        [binding("shop/web", Some(&n), vec![ep("10.0.1.5", Some(&good), &[]), ep("10.0.2.5", Some(&bad), &[])])];
    b[0].kept = Some(&memory);
    let p = plan(&b, &sgs, true);
    assert!(matches!(&p.problems[..], [RuleProblem::EniSecurityGroup { binding, .. }] if binding == "shop/web"));
    assert!(p.revokes_allowed);
    assert_eq!(p.bindings["shop/web"].state, BindingState::Partial);
    // What it had is kept; a rule nobody keeps or wants goes; the known endpoint gets its rule.
    assert_eq!(p.withheld_revokes, 1);
    assert_eq!(p.changes["sg-node"], SgRuleChanges { authorize: vec![from_sg("sg-lb", 80, 80)], revoke: vec![stale] });
    // Remembered for next time: what it had plus what it wants now.
    assert_eq!(p.bindings["shop/web"].remember["sg-node"], BTreeSet::from([from_sg("sg-lb", 80, 80), had]));
}

#[test]
fn bindings_sharing_an_sg_get_the_union_and_removal_keeps_the_other() {
    let e = eni("eni-1", &["sg-node"]);
    let web = net(json!({"ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/16"}}], "ports": [{"port": 80}]}]}));
    let api = net(json!({"ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/16"}}], "ports": [{"port": 443}]}]}));
    let both = [
        binding("shop/web", Some(&web), vec![ep("10.0.1.5", Some(&e), &[])]),
        binding("shop/api", Some(&api), vec![ep("10.0.1.6", Some(&e), &[])]),
    ];
    let p = plan(&both, &[sg("sg-node", &[], vec![])], true);
    let r80 = from_cidr("tcp", "10.0.0.0/16", 80, 80);
    let r443 = from_cidr("tcp", "10.0.0.0/16", 443, 443);
    assert_eq!(p.changes["sg-node"].authorize, vec![r80.clone(), r443.clone()]);
    // shop/web deleted: its rule goes, shop/api's stays.
    let p = plan(&both[1..], &[sg("sg-node", &[], vec![r80.clone(), r443.clone()])], true);
    assert_eq!(p.changes["sg-node"], SgRuleChanges { authorize: vec![], revoke: vec![r80] });
}

#[test]
fn foreign_rules_are_never_touched() {
    let e = eni("eni-1", &["sg-node"]);
    let n = lb_sg_rule(json!(80));
    let b = [binding("shop/web", Some(&n), vec![ep("10.0.1.5", Some(&e), &[])])];
    let observed = vec![
        // Same access granted by someone else: satisfies ours, no duplicate authorize.
        foreign(from_sg("sg-lb", 80, 80), Some("added by hand")),
        foreign(from_sg("sg-ssh", 22, 22), None),
        foreign(from_sg("sg-x", 1, 1), Some("elbv2.k8s.aws/targetGroupBinding=shared extra")),
        foreign(from_sg("sg-y", 2, 2), Some("elbv2.k8s.aws/targetGroupBinding=sharedX")),
        // Ours, recognised inside a longer label list: revoked.
        foreign(from_sg("sg-z", 3, 3), Some("owner=lbc,elbv2.k8s.aws/targetGroupBinding=shared")),
    ];
    let p = plan(&b, &[sg("sg-node", &[], observed)], true);
    let ch = &p.changes["sg-node"];
    assert!(ch.authorize.is_empty());
    assert_eq!(ch.revoke.len(), 1);
    assert_eq!(ch.revoke[0].source, RuleSource::SecurityGroup("sg-z".into()));
}

#[test]
fn incomplete_knowledge_never_revokes() {
    let e = eni("eni-1", &["sg-node"]);
    let n = lb_sg_rule(json!(80));
    let stale = from_sg("sg-lb", 81, 81);
    let sgs = [sg("sg-node", &[], vec![stale.clone()]), sg("sg-gc", &[], vec![from_sg("sg-lb", 80, 80)])];
    // Caller not sure it saw every binding: nothing revoked anywhere.
    let b = [binding("shop/web", Some(&n), vec![ep("10.0.1.5", Some(&e), &[])])];
    let p = plan(&b, &sgs, false);
    assert_eq!((p.revokes_allowed, p.withheld_revokes), (false, 2));
    assert_eq!(p.changes["sg-node"].authorize, vec![from_sg("sg-lb", 80, 80)]);
    assert!(p.changes.values().all(|c| c.revoke.is_empty()));
    // An endpoint whose ENI is unknown: that binding keeps what it had (its source's rules on the
    // first pass), the rest proceeds.
    let mut b = [binding("shop/web", Some(&n), vec![ep("10.0.1.5", Some(&e), &[]), ep("10.0.9.9", None, &[])])];
    let first = plan_isolated(&b, &sgs, NO_MISSING, true);
    assert!(matches!(&first.problems[..], [RuleProblem::UnresolvedEndpoints { count: 1, .. }]));
    assert!(first.revokes_allowed && first.changes.values().all(|c| c.revoke.is_empty()), "{:?}", first.changes);
    assert_eq!(first.withheld_revokes, 2);
    let memory = first.bindings["shop/web"].remember.clone();
    assert_eq!(memory["sg-gc"], BTreeSet::from([from_sg("sg-lb", 80, 80)]), "an unknown ENI may sit on any group");
    b[0].kept = Some(&memory);
    assert_eq!(plan(&b, &sgs, true).changes, first.changes, "memory carries it over");
    // Complete: stale rule revoked, and the SG no longer used is garbage-collected.
    let b = [binding("shop/web", Some(&n), vec![ep("10.0.1.5", Some(&e), &[])])];
    let p = plan(&b, &sgs, true);
    assert_eq!(p.changes["sg-node"].revoke, vec![stale]);
    assert_eq!(p.changes["sg-gc"].revoke, vec![from_sg("sg-lb", 80, 80)]);
    assert_eq!(p.bindings["shop/web"].state, BindingState::Good);
}

#[test]
fn bindings_without_networking_contribute_nothing() {
    let e = eni("eni-1", &["sg-node"]);
    let b = [binding("shop/web", None, vec![ep("10.0.1.5", Some(&e), &[]), ep("10.0.9.9", None, &[])])];
    let p = plan(&b, &[sg("sg-node", &[], vec![])], true);
    assert_eq!(p, BackendRulesPlan { revokes_allowed: true, ..Default::default() });
}

#[test]
fn ports_protocols_and_ranges() {
    let e = eni("eni-1", &["sg-node"]);
    let cidr = |ports: serde_json::Value| {
        net(json!({"ingress": [{"from": [{"ipBlock": {"cidr": "10.1.0.0/16"}}], "ports": ports}]}))
    };
    let named = [("http", 8080u16)];
    let other = [("http", 9090u16)];
    // (ports, expected (protocol, from, to))
    type Case = (serde_json::Value, Vec<(&'static str, i32, i32)>);
    let cases: Vec<Case> = vec![
        (json!([]), vec![("tcp", 0, 65535)]),
        (json!([{"protocol": "UDP"}]), vec![("udp", 0, 65535)]),
        (json!([{"port": 53, "protocol": "UDP"}, {"port": 53}]), vec![("tcp", 53, 53), ("udp", 53, 53)]),
        (json!([{"port": "http"}]), vec![("tcp", 8080, 8080), ("tcp", 9090, 9090)]),
    ];
    for (ports, want) in cases {
        let n = cidr(ports.clone());
        let b = [binding("ns/b", Some(&n), vec![ep("10.0.1.5", Some(&e), &named), ep("10.0.1.6", Some(&e), &other)])];
        let p = plan(&b, &[sg("sg-node", &[], vec![])], true);
        let got: Vec<(&str, i32, i32)> =
            p.changes["sg-node"].authorize.iter().map(|r| (r.protocol.as_str(), r.from_port, r.to_port)).collect();
        assert_eq!(got, want, "{ports}");
    }
    // A named port a pod lacks, and an impossible number.
    for (ports, fragment) in [(json!([{"port": "grpc"}]), "\"grpc\""), (json!([{"port": 70000}]), "70000")] {
        let n = cidr(ports);
        let had = from_cidr("tcp", "10.1.0.0/16", 1, 1);
        let memory: KeptRules = [("sg-node".to_string(), BTreeSet::from([had.clone()]))].into();
        let mut b = [binding("ns/b", Some(&n), vec![ep("10.0.1.5", Some(&e), &named)])];
        b[0].kept = Some(&memory);
        let p = plan(&b, &[sg("sg-node", &[], vec![had.clone()])], true);
        assert!(p.problems[0].to_string().contains(fragment), "{}", p.problems[0]);
        assert!(p.problems[0].is_spec_fault());
        assert!(p.changes.is_empty(), "its rule is kept: {:?}", p.changes);
        assert_eq!((p.withheld_revokes, p.bindings["ns/b"].state), (1, BindingState::Bad));
        assert_eq!(p.bindings["ns/b"].remember, memory, "remembered as it was");
    }
}

#[test]
fn restricted_mode_collapses_group_sources_only() {
    let e = eni("eni-1", &["sg-node"]);
    let n = net(json!({"ingress": [
        {"from": [{"securityGroup": {"groupID": "sg-lb"}}, {"ipBlock": {"cidr": "10.0.0.0/16"}}],
         "ports": [{"port": 80}, {"port": 8080}, {"port": 53, "protocol": "UDP"}]}]}));
    let b = [binding("ns/b", Some(&n), vec![ep("10.0.1.5", Some(&e), &[])])];
    let udp_sg = IngressRule { protocol: "udp".into(), ..from_sg("sg-lb", 53, 53) };
    let restricted = plan_with(&b, &[sg("sg-node", &[], vec![])], true, true, &Tags::new());
    let mut want = vec![
        from_cidr("tcp", "10.0.0.0/16", 80, 80),
        from_cidr("tcp", "10.0.0.0/16", 8080, 8080),
        from_cidr("udp", "10.0.0.0/16", 53, 53),
        from_sg("sg-lb", 80, 8080),
        udp_sg.clone(),
    ];
    want.sort();
    assert_eq!(restricted.changes["sg-node"].authorize, want);
    let exact = plan_with(&b, &[sg("sg-node", &[], vec![])], true, false, &Tags::new());
    assert_eq!(exact.changes["sg-node"].authorize.len(), 6);
    assert!(exact.changes["sg-node"].authorize.contains(&from_sg("sg-lb", 8080, 8080)));
}

#[test]
fn cidrs_ipv6_and_normalisation() {
    let e = eni("eni-1", &["sg-node"]);
    let n = net(
        json!({"ingress": [{"from": [{"ipBlock": {"cidr": "2600:1F18:0:0::/56"}}, {"ipBlock": {"cidr": "10.0.3.7/16"}}],
        "ports": [{"port": 443}]}]}),
    );
    let b = [binding("ns/b", Some(&n), vec![ep("10.0.1.5", Some(&e), &[])])];
    let p = plan(&b, &[sg("sg-node", &[], vec![])], true);
    assert_eq!(
        p.changes["sg-node"].authorize,
        vec![from_cidr("tcp", "10.0.0.0/16", 443, 443), from_cidr("tcp", "2600:1f18::/56", 443, 443)]
    );
    // AWS spelling the same blocks differently still counts as present.
    let have = vec![from_cidr("TCP", "10.0.0.0/16", 443, 443), from_cidr("tcp", "2600:1f18:0::/56", 443, 443)];
    assert!(plan(&b, &[sg("sg-node", &[], have)], true).changes.is_empty());
    for bad in [json!({"ipBlock": {"cidr": "10.0.0.0/33"}}), json!({})] {
        let n = net(json!({"ingress": [{"from": [bad], "ports": [{"port": 1}]}]}));
        let b = [binding("ns/b", Some(&n), vec![ep("10.0.1.5", Some(&e), &[])])];
        let p = plan(&b, &[sg("sg-node", &[], vec![])], true);
        assert_eq!(p.problems.len(), 1, "{:?}", p.problems);
        assert!(p.changes.is_empty());
    }
}

#[test]
fn target_sg_not_described_is_reported() {
    let e = eni("eni-1", &["sg-gone"]);
    let n = lb_sg_rule(json!(80));
    let b = [binding("ns/b", Some(&n), vec![ep("10.0.1.5", Some(&e), &[])])];
    let p = plan(&b, &[sg("sg-other", &[], vec![from_sg("sg-lb", 80, 80)])], true);
    assert_eq!(p.problems, vec![RuleProblem::UndescribedSecurityGroup { sg: "sg-gone".into() }]);
    // A group that could not be read stops nothing elsewhere: sg-other's rule no binding wants goes.
    assert_eq!(p.changes["sg-other"], SgRuleChanges { authorize: vec![], revoke: vec![from_sg("sg-lb", 80, 80)] });
    assert_eq!(p.withheld_revokes, 0);
}

fn random_networking(rng: &mut fastrand::Rng) -> TargetGroupBindingNetworking {
    const PEERS: &[&str] = &["sg-lb", "sg-lb2", "10.0.0.0/16", "10.9.8.7/24", "2600:1f18::/56", "bad"];
    let peer = |p: &str| match p {
        p if p.starts_with("sg-") => json!({"securityGroup": {"groupID": p}}),
        "bad" => json!({}),
        p => json!({"ipBlock": {"cidr": p}}),
    };
    let port = |rng: &mut fastrand::Rng| match rng.u32(0..5) {
        0 => json!({}),
        1 => json!({"protocol": "UDP", "port": rng.i32(50..60)}),
        2 => json!({"port": "http"}),
        _ => json!({"port": rng.i32(79..83)}),
    };
    let rules: Vec<serde_json::Value> = (0..rng.usize(0..3))
        .map(|_| {
            let from: Vec<_> = (0..rng.usize(1..3)).map(|_| peer(PEERS[rng.usize(..PEERS.len())])).collect();
            let ports: Vec<_> = (0..rng.usize(0..3)).map(|_| port(rng)).collect();
            json!({"from": from, "ports": ports})
        })
        .collect();
    net(json!({ "ingress": rules }))
}

#[test]
fn random_plans_converge_and_spare_foreign_rules() {
    let mut rng = fastrand::Rng::with_seed(0xbac_4e7d);
    let cluster = ("kubernetes.io/cluster/dev-meta", "owned");
    let (mut authorized, mut revoked, mut withheld) = (0, 0, 0);
    for round in 0..400 {
        let enis: Vec<NetworkInterface> = (0..3)
            .map(|i| {
                let sgs: Vec<&str> = ["sg-1", "sg-2", "sg-3"].into_iter().filter(|_| rng.bool()).collect();
                eni(&format!("eni-{i}"), &sgs)
            })
            .collect();
        let nets: Vec<TargetGroupBindingNetworking> = (0..3).map(|_| random_networking(&mut rng)).collect();
        let bindings: Vec<BindingRules<'_>> = nets
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let eps = (0..rng.usize(0..4))
                    .map(|j| {
                        let e = if rng.u32(0..10) == 0 { None } else { Some(&enis[rng.usize(..enis.len())]) };
                        let ports: &[(&str, u16)] = if rng.bool() { &[("http", 8080)] } else { &[] };
                        ep(&format!("10.0.{i}.{j}"), e, ports)
                    })
                    .collect();
                binding(&format!("ns/b{i}"), if rng.u32(0..4) == 0 { None } else { Some(n) }, eps)
            })
            .collect();
        let tagged = [cluster];
        let mut sgs = Vec::new();
        for id in ["sg-1", "sg-2", "sg-3", "sg-4"] {
            if rng.u32(0..6) == 0 {
                continue;
            }
            let rules = (0..rng.usize(0..4))
                .map(|_| {
                    let desc = [Some(RULE_DESCRIPTION), None, Some("hand made")][rng.usize(..3)];
                    foreign(from_sg("sg-lb", 80, rng.i32(80..83)), desc)
                })
                .collect();
            sgs.push(sg(id, if rng.bool() { &tagged[..] } else { &[] }, rules));
        }
        let complete = rng.u32(0..4) != 0;
        let restricted = rng.bool();
        let first = plan_with(&bindings, &sgs, complete, restricted, &Tags::new());
        withheld += first.withheld_revokes;
        for (id, ch) in &first.changes {
            authorized += ch.authorize.len();
            revoked += ch.revoke.len();
            assert!(ch.revoke.iter().all(is_managed_rule), "round {round}: foreign rule revoked on {id}");
            assert!(first.revokes_allowed || ch.revoke.is_empty(), "round {round}");
        }
        for o in &mut sgs {
            if let Some(ch) = first.changes.get(&o.id) {
                o.spec.ingress.retain(|r| !ch.revoke.contains(r));
                o.spec.ingress.extend(ch.authorize.iter().cloned());
            }
        }
        let again = plan_with(&bindings, &sgs, complete, restricted, &Tags::new());
        assert!(again.changes.values().all(|c| c.authorize.is_empty()), "round {round}: {:?}", again.changes);
        if again.revokes_allowed {
            assert!(again.changes.is_empty(), "round {round}: {:?}", again.changes);
        }
        assert_eq!(first.problems, again.problems, "round {round}");
    }
    // The generator reaches every branch that matters.
    assert!(authorized > 100 && revoked > 20 && withheld > 20, "{authorized} {revoked} {withheld}");
}

/// Every problem a binding's Warning event shows names the binding (or group), the value seen,
/// the value expected and the fix.
#[test]
fn problem_messages_name_object_value_expectation_and_fix() {
    let cases: Vec<(RuleProblem, &[&str])> = vec![
        (
            RuleProblem::UnresolvedEndpoints { binding: "a/web".into(), count: 2, first: "10.0.1.5".parse().unwrap() },
            &["TargetGroupBinding a/web", "2 endpoint(s)", "10.0.1.5", "expected an ENI", "Fix:", "ENI mode"],
        ),
        (
            RuleProblem::InvalidPort { binding: "a/web".into(), port: 70000 },
            &["TargetGroupBinding a/web", "70000", "outside 0-65535", "set a port number"],
        ),
        (
            RuleProblem::EmptyPeer { binding: "a/web".into() },
            &["TargetGroupBinding a/web", "neither ipBlock nor securityGroup", "expected one", "set ipBlock.cidr"],
        ),
        (
            RuleProblem::UndescribedSecurityGroup { sg: "sg-gone".into() },
            &["security group sg-gone", "not described", "expected it in the VPC", "recreate it"],
        ),
        (
            RuleProblem::PeerNotFound { binding: "a/web".into(), group: "sg-0typo".into() },
            &["TargetGroupBinding a/web", "\"sg-0typo\"", "does not exist", "expected the ID of an existing", "Fix:"],
        ),
        (
            RuleProblem::NamedPort {
                binding: "a/web".into(),
                port: "htp".into(),
                ip: "10.0.1.5".parse().unwrap(),
                known: "http, metrics".into(),
            },
            &["TargetGroupBinding a/web", "\"htp\"", "10.0.1.5", "http, metrics", "expected a port number", "Fix:"],
        ),
        (
            RuleProblem::Rejected {
                binding: "a/web".into(),
                rejection: Box::new(Rejection {
                    sg: "sg-node".into(),
                    rule: "tcp 80 from 10.0.0.0/8".into(),
                    code: "RulesPerSecurityGroupLimitExceeded".into(),
                    message: "The maximum number of rules per security group has been reached.".into(),
                    fix: "free rules".into(),
                }),
            },
            &[
                "TargetGroupBinding a/web",
                "tcp 80 from 10.0.0.0/8",
                "sg-node",
                "RulesPerSecurityGroupLimitExceeded",
                "Fix: free rules",
            ],
        ),
        (
            RuleProblem::InvalidCidr { binding: "a/web".into(), cidr: "10.0.0/8".into() },
            &["TargetGroupBinding a/web", "\"10.0.0/8\"", "not a CIDR like 10.0.0.0/16"],
        ),
    ];
    for (p, parts) in cases {
        let msg = p.to_string();
        for part in parts {
            assert!(msg.contains(part), "{part:?} missing from: {msg}");
        }
    }
}

/// The isolation table: a victim's good binding and one bad binding on the shared node group.
/// Whatever is wrong with the bad one, the victim's new rule is authorized, the victim's rules
/// are never revoked, a stale rule nobody keeps is still revoked, the bad binding's own earlier
/// rule is kept, and the problem names the bad binding only.
#[test]
fn one_bad_binding_leaves_the_others_alone() {
    let e = eni("eni-1", &["sg-node"]);
    let victim = net(
        json!({"ingress": [{"from": [{"securityGroup": {"groupID": "sg-victim-lb"}}], "ports": [{"port": 8080}]}]}),
    );
    let had = from_cidr("tcp", "10.50.0.0/16", 9090, 9090);
    let victims_old = from_sg("sg-victim-lb", 8080, 8080);
    let stale = from_sg("sg-gone", 7070, 7070);
    let missing: BTreeSet<String> = ["sg-doesnotexist".to_string()].into();
    // (spec of the bad binding, words its problem must contain)
    let cases: Vec<(serde_json::Value, &[&str])> = vec![
        (
            json!([{"from": [{"securityGroup": {"groupID": "sg-doesnotexist"}}], "ports": [{"port": 9090}]}]),
            &["attacker/bad", "\"sg-doesnotexist\"", "does not exist", "Fix: correct the groupID"],
        ),
        (
            json!([{"from": [{"ipBlock": {"cidr": "10.50.0.0/16"}}], "ports": [{"port": "htp"}]}]),
            &["attacker/bad", "\"htp\"", "10.0.1.9", "its named ports: http", "Fix: correct the port"],
        ),
        (
            json!([{"from": [{"ipBlock": {"cidr": "10.50.0.0/166"}}], "ports": [{"port": 9090}]}]),
            &["attacker/bad", "\"10.50.0.0/166\"", "not a CIDR like", "fix the cidr"],
        ),
        (
            json!([{"from": [{"ipBlock": {"cidr": "10.50.0.0/16"}}], "ports": [{"port": 99999}]}]),
            &["attacker/bad", "99999", "outside 0-65535"],
        ),
        (json!([{"from": [{}], "ports": [{"port": 9090}]}]), &["attacker/bad", "neither ipBlock nor securityGroup"]),
    ];
    for (spec, words) in cases {
        let bad_net = net(json!({ "ingress": spec }));
        let memory: KeptRules = [("sg-node".to_string(), BTreeSet::from([had.clone()]))].into();
        let mut bindings = vec![
            binding("victim/web", Some(&victim), vec![ep("10.0.1.5", Some(&e), &[])]),
            binding("victim/new", Some(&victim), vec![ep("10.0.1.6", Some(&e), &[])]),
            binding("attacker/bad", Some(&bad_net), vec![ep("10.0.1.9", Some(&e), &[("http", 8080)])]),
        ];
        bindings[2].kept = Some(&memory);
        let victim_new =
            net(json!({"ingress": [{"from": [{"ipBlock": {"cidr": "192.0.2.0/24"}}], "ports": [{"port": 443}]}]}));
        bindings[1].networking = Some(&victim_new);
        let sgs = [sg("sg-node", &[], vec![victims_old.clone(), had.clone(), stale.clone()])];
        let p = plan_isolated(&bindings, &sgs, &missing, false);
        let ch = &p.changes["sg-node"];
        assert_eq!(
            ch.authorize,
            vec![from_cidr("tcp", "192.0.2.0/24", 443, 443)],
            "{spec}: the victim's new rule lands"
        );
        assert_eq!(
            ch.revoke,
            vec![stale.clone()],
            "{spec}: only the stale rule goes; the victim's and the bad one's stay"
        );
        assert_eq!(p.problems.len(), 1, "{spec}: {:?}", p.problems);
        let msg = p.problems[0].to_string();
        assert_eq!(p.problems[0].binding(), Some("attacker/bad"));
        for w in words {
            assert!(msg.contains(w), "{spec}: {w:?} missing from: {msg}");
        }
        assert_eq!(p.bindings["attacker/bad"].state, BindingState::Bad);
        assert_eq!(p.bindings["victim/web"].state, BindingState::Good);
        assert_eq!(p.rules_by_namespace, BTreeMap::from([("attacker".into(), 0), ("victim".into(), 2)]));
    }
}

#[test]
fn owners_and_namespace_counts_follow_the_collapsed_rules() {
    let e = eni("eni-1", &["sg-node"]);
    let (a, b) = (lb_sg_rule(json!(80)), lb_sg_rule(json!(8080)));
    let c = net(json!({"ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": [{"port": 22}]}]}));
    let bindings = [
        binding("team-a/web", Some(&a), vec![ep("10.0.1.5", Some(&e), &[])]),
        binding("team-b/api", Some(&b), vec![ep("10.0.1.6", Some(&e), &[])]),
        binding("team-b/ssh", Some(&c), vec![ep("10.0.1.7", Some(&e), &[])]),
    ];
    let p = plan(&bindings, &[sg("sg-node", &[], vec![])], true);
    let owners = &p.owners["sg-node"];
    assert_eq!(owners[&from_sg("sg-lb", 80, 8080)], BTreeSet::from(["team-a/web".into(), "team-b/api".into()]));
    assert_eq!(owners[&from_cidr("tcp", "10.0.0.0/8", 22, 22)], BTreeSet::from(["team-b/ssh".into()]));
    assert_eq!(p.rules_by_namespace, BTreeMap::from([("team-a".into(), 1), ("team-b".into(), 2)]));
    // Exact rules: one each.
    let p = plan_with(&bindings, &[sg("sg-node", &[], vec![])], true, false, &Tags::new());
    assert_eq!(p.rules_by_namespace, BTreeMap::from([("team-a".into(), 1), ("team-b".into(), 2)]));
    assert_eq!(p.owners["sg-node"].len(), 3);
}

#[test]
fn a_fresh_bad_binding_keeps_nothing_after_the_first_pass() {
    // A new binding naming the everybody's load-balancer group with a bad port must not freeze
    // that group's rules: without memory (it was never good) it keeps nothing.
    let e = eni("eni-1", &["sg-node"]);
    let bad = lb_sg_rule(json!("nope"));
    let b = [binding("attacker/bad", Some(&bad), vec![ep("10.0.1.9", Some(&e), &[])])];
    let stale = from_sg("sg-lb", 8080, 8080);
    let p = plan(&b, &[sg("sg-node", &[], vec![stale.clone()])], true);
    assert_eq!(p.changes["sg-node"].revoke, vec![stale.clone()]);
    assert!(p.bindings["attacker/bad"].remember.is_empty());
    // First pass of a process: it keeps the rules from its own peers on its own groups.
    let p = plan_isolated(
        &b,
        &[sg("sg-node", &[], vec![stale.clone()]), sg("sg-else", &[], vec![stale.clone()])],
        NO_MISSING,
        true,
    );
    assert_eq!(p.changes["sg-else"].revoke, vec![stale.clone()], "not its group");
    assert!(!p.changes.contains_key("sg-node"));
    assert_eq!(p.bindings["attacker/bad"].remember, KeptRules::from([("sg-node".into(), BTreeSet::from([stale]))]));
}

#[test]
fn spare_kept_drops_revokes_overlapping_what_a_refused_binding_had() {
    let had: KeptRules = [("sg-node".to_string(), BTreeSet::from([from_sg("sg-lb", 8080, 8080)]))].into();
    let revoke = vec![from_sg("sg-lb", 80, 9000), from_sg("sg-lb", 9001, 9002), from_sg("sg-other", 8080, 8080)];
    assert_eq!(spare_kept("sg-node", &revoke, &[&had]), revoke[1..].to_vec());
    assert_eq!(spare_kept("sg-x", &revoke, &[&had]), revoke);
    let mut all_ports = from_sg("sg-lb", -1, -1);
    all_ports.protocol = "tcp".into();
    assert!(spare_kept("sg-node", &[all_ports], &[&had]).is_empty());
}

/// Property: adding Bad bindings to any set of bindings never changes what the others get
/// authorized, and only spares revokes (never adds one); every spared rule overlaps what a Bad
/// binding keeps; no revoke ever removes a rule a Good or Partial binding wants.
#[test]
fn random_bad_bindings_never_change_the_others_plan() {
    let mut rng = fastrand::Rng::with_seed(0x15_01a7e);
    let e = [eni("eni-1", &["sg-1"]), eni("eni-2", &["sg-2"])];
    let bad_specs = [
        json!([{"from": [{"securityGroup": {"groupID": "sg-missing"}}], "ports": [{"port": 80}]}]),
        json!([{"from": [{"securityGroup": {"groupID": "sg-lb"}}], "ports": [{"port": "nope"}]}]),
        json!([{"from": [{"ipBlock": {"cidr": "10.0.0.0/99"}}], "ports": []}]),
        json!([{"from": [{"securityGroup": {"groupID": "sg-lb"}}], "ports": [{"port": -4}]}]),
    ];
    let bad_nets: Vec<TargetGroupBindingNetworking> = bad_specs.iter().map(|s| net(json!({ "ingress": s }))).collect();
    let missing: BTreeSet<String> = ["sg-missing".to_string()].into();
    let (mut spared, mut checked) = (0, 0);
    for round in 0..300 {
        let nets: Vec<TargetGroupBindingNetworking> = (0..3).map(|_| random_networking(&mut rng)).collect();
        let mut good: Vec<BindingRules<'_>> = nets
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let eps = (0..rng.usize(1..3))
                    .map(|j| ep(&format!("10.0.{i}.{j}"), Some(&e[rng.usize(..2)]), &[("http", 8080)]))
                    .collect();
                binding(&format!("ns{i}/b"), Some(n), eps)
            })
            .collect();
        let memories: Vec<KeptRules> = (0..2)
            .map(|_| {
                let rules = (0..rng.usize(0..3)).map(|_| from_sg("sg-lb", 80, rng.i32(80..83))).collect();
                [(format!("sg-{}", rng.u32(1..3)), rules)].into()
            })
            .collect();
        let sgs: Vec<Observed<SecurityGroup>> = ["sg-1", "sg-2"]
            .iter()
            .map(|id| {
                let rules = (0..rng.usize(0..5))
                    .map(|_| {
                        foreign(from_sg("sg-lb", 80, rng.i32(80..84)), [Some(RULE_DESCRIPTION), None][rng.usize(..2)])
                    })
                    .collect();
                sg(id, &[], rules)
            })
            .collect();
        let input = |bindings: &[BindingRules<'_>]| plan_isolated(bindings, &sgs, &missing, false);
        // Bindings that are Bad by spec in the random set too are fine: compare with and without
        // the extra bad ones only.
        let without = input(&good);
        for (k, m) in memories.iter().enumerate() {
            let mut b = binding(&format!("bad{k}/b"), Some(&bad_nets[rng.usize(..bad_nets.len())]), vec![]);
            b.endpoints = vec![ep(&format!("10.9.{k}.1"), Some(&e[rng.usize(..2)]), &[])];
            b.kept = Some(m);
            good.push(b);
        }
        let with = input(&good);
        for id in ["sg-1", "sg-2"] {
            let (w, wo) = (
                with.changes.get(id).cloned().unwrap_or_default(),
                without.changes.get(id).cloned().unwrap_or_default(),
            );
            assert_eq!(w.authorize, wo.authorize, "round {round}: authorizations changed on {id}");
            assert!(w.revoke.iter().all(|r| wo.revoke.contains(r)), "round {round}: a revoke was added on {id}");
            for r in wo.revoke.iter().filter(|r| !w.revoke.contains(r)) {
                spared += 1;
                assert!(
                    memories.iter().any(|m| spare_kept(id, std::slice::from_ref(r), &[m]).is_empty()),
                    "round {round}"
                );
            }
            let wanted = with.desired.get(id).cloned().unwrap_or_default();
            for r in &w.revoke {
                checked += 1;
                assert!(!wanted.iter().any(|d| key_of(d) == key_of(r)), "round {round}: revoked a wanted rule");
            }
        }
        for k in 0..memories.len() {
            assert_eq!(with.bindings[&format!("bad{k}/b")].state, BindingState::Bad, "round {round}");
        }
    }
    assert!(spared > 20 && checked > 20, "{spared} {checked}");
}

/// team-a may open 10.0.0.0/8 on 80-8080 and sg-0aaa on any port; nothing else.
const NETWORKING_POLICY: &str = r#"{"networking": [
    {"namespaces": ["team-a"], "cidrs": ["10.0.0.0/8"], "ports": ["80-8080"]},
    {"namespaces": ["team-a"], "securityGroups": ["sg-0aaa"]}
]}"#;

#[test]
fn strict_tenancy_leaves_out_only_the_refused_rules_and_revokes_them_if_applied() {
    use crate::tenancy::TenancyMode;
    let e = eni("eni-1", &["sg-node"]);
    let asks = net(json!({"ingress": [
        {"from": [{"ipBlock": {"cidr": "10.1.0.0/16"}}, {"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"port": 80}]},
        {"from": [{"securityGroup": {"groupID": "sg-0aaa"}}, {"securityGroup": {"groupID": "sg-0bbb"}}], "ports": [{"port": 8443}]},
        {"from": [{"ipBlock": {"cidr": "10.2.0.0/16"}}], "ports": []}
    ]}));
    let other = lb_sg_rule(json!(9090));
    let applied_before = from_cidr("tcp", "0.0.0.0/0", 80, 80);
    let sgs = [sg("sg-node", &[], vec![applied_before.clone()])];
    let b = [
        binding("team-a/web", Some(&asks), vec![ep("10.0.1.5", Some(&e), &[])]),
        binding("team-b/api", Some(&other), vec![ep("10.0.1.6", Some(&e), &[])]),
    ];

    let strict = Tenancy::parse(TenancyMode::Strict, NETWORKING_POLICY, "test").unwrap();
    let p = plan_tenancy(&b, &sgs, &strict);
    let ch = &p.changes["sg-node"];
    assert_eq!(
        ch.authorize,
        vec![from_cidr("tcp", "10.1.0.0/16", 80, 80), from_sg("sg-0aaa", 8443, 8443)],
        "only team-a's granted rules; team-b (nothing granted) gets none"
    );
    assert_eq!(ch.revoke, vec![applied_before], "a refused rule applied before is revoked");
    let refused: Vec<String> = p.problems.iter().map(ToString::to_string).collect();
    assert_eq!(refused.len(), 4, "0.0.0.0/0, sg-0bbb, 10.2.0.0/16 on all ports, team-b's sg-lb: {refused:#?}");
    for (words, binding) in [
        (["team-a/web", "ipBlock 0.0.0.0/0", "ports 80-80"], "team-a/web"),
        (["team-a/web", "security group sg-0bbb", "ports 8443-8443"], "team-a/web"),
        (["team-a/web", "ipBlock 10.2.0.0/16", "ports 0-65535"], "team-a/web"),
        (["team-b/api", "security group sg-lb", "ports 9090-9090"], "team-b/api"),
    ] {
        let p = p.problems.iter().find(|p| words.iter().all(|w| p.to_string().contains(w)));
        let p = p.unwrap_or_else(|| panic!("no refusal with {words:?} in {refused:#?}"));
        assert_eq!((p.binding(), p.reason(), p.is_spec_fault()), (Some(binding), "NotGrantedByTenancyPolicy", true));
        assert!(p.to_string().contains("Fix: the cluster admin adds"), "{p}");
    }
    assert_eq!(p.bindings["team-a/web"].state, BindingState::Good, "its granted rules apply");
    assert!(p.exposures.is_empty());

    // The compatible mode applies everything and lists what the strict mode would refuse.
    let compatible = Tenancy::parse(TenancyMode::Compatible, NETWORKING_POLICY, "test").unwrap();
    let p = plan_tenancy(&b, &sgs, &compatible);
    assert!(p.problems.is_empty(), "{:?}", p.problems);
    assert_eq!(p.changes["sg-node"].authorize.len(), 5);
    assert_eq!(p.exposures.len(), 4, "{:#?}", p.exposures);
    assert!(p.exposures.iter().all(|e| e.kind == "networking-source"));
}

#[test]
fn strict_tenancy_never_keeps_a_refused_rule_for_a_bad_binding() {
    use crate::tenancy::TenancyMode;
    let e = eni("eni-1", &["sg-node"]);
    // Bad now (a named port its pod lacks); it had a granted and a refused rule.
    let bad = net(json!({"ingress": [{"from": [{"ipBlock": {"cidr": "10.1.0.0/16"}}], "ports": [{"port": "htp"}]}]}));
    let (granted, refused) = (from_cidr("tcp", "10.1.0.0/16", 80, 80), from_cidr("tcp", "0.0.0.0/0", 80, 80));
    let memory: KeptRules = [("sg-node".to_string(), BTreeSet::from([granted.clone(), refused.clone()]))].into();
    let mut b = [binding("team-a/web", Some(&bad), vec![ep("10.0.1.5", Some(&e), &[("http", 80)])])];
    b[0].kept = Some(&memory);
    let sgs = [sg("sg-node", &[], vec![granted.clone(), refused.clone()])];
    let strict = Tenancy::parse(TenancyMode::Strict, NETWORKING_POLICY, "test").unwrap();
    let p = plan_tenancy(&b, &sgs, &strict);
    assert_eq!(p.bindings["team-a/web"].state, BindingState::Bad);
    assert_eq!(p.changes["sg-node"], SgRuleChanges { authorize: vec![], revoke: vec![refused] });
    assert_eq!(p.bindings["team-a/web"].remember["sg-node"], BTreeSet::from([granted]));
}
