use super::*;
use crate::ingress::backends::Services;
use crate::ingress::merge::MergeConfig;
use crate::ingress::plan::{GroupPlan, plan_group};
use crate::ingress::test_fixtures::{P, member, path, rule, services, spec};
use std::collections::BTreeMap;

fn svcs() -> Services {
    services(&[("shop/echo", &[("http", 80)])])
}

fn web(key: &str, ann: &[(&str, &str)]) -> Member {
    member(key, ann, spec(vec![rule("", vec![path("/", "Prefix", "echo", P::N(80))])]))
}

fn group(members: &[Member]) -> Result<GroupPlan, Vec<String>> {
    plan_group(members, &svcs(), &MergeConfig::default()).map_err(|e| e.iter().map(ToString::to_string).collect())
}

fn fe(members: &[Member]) -> FrontendNlbPlan {
    group(members).expect("valid group").frontend_nlb.expect("a frontend NLB")
}

fn subnet(id: &str) -> Subnet {
    Subnet {
        id: id.into(),
        vpc_id: "vpc-1".into(),
        availability_zone: format!("az-{id}"),
        cidr: "10.0.0.0/24".into(),
        ipv6_cidrs: vec![],
        available_ips: 100,
        tags: Tags::new(),
    }
}

fn ctx() -> BuildContext {
    let mut c = BuildContext::new("prod", "vpc-1");
    c.default_tags = Tags::from([("owner".into(), "platform".into())]);
    c
}

const ALB_TAGS: [(&str, &str); 1] = [("team", "shop")];

fn alb_facts<'a>(groups: &'a [String], tags: &'a Tags) -> AlbFacts<'a> {
    AlbFacts {
        name: "k8s-shop-web-0123456789abcdef012345",
        ip_address_type: LbIpAddressType::Ipv4,
        security_groups: groups,
        user_tags: tags,
    }
}

#[test]
fn every_annotation_is_read() {
    let m = web(
        "shop/web",
        &[
            ("enable-frontend-nlb", "true"),
            ("frontend-nlb-scheme", "internet-facing"),
            ("frontend-nlb-subnets", "subnet-a, subnet-b"),
            ("frontend-nlb-security-groups", "sg-1,web-sg"),
            ("frontend-nlb-listener-port-mapping", "8443=443, 80=80"),
            ("frontend-nlb-eip-allocations", "eipalloc-1,eipalloc-2"),
            ("frontend-nlb-healthcheck-port", "8080"),
            ("frontend-nlb-healthcheck-protocol", "HTTPS"),
            ("frontend-nlb-healthcheck-path", "/ping"),
            ("frontend-nlb-healthcheck-interval-seconds", "10"),
            ("frontend-nlb-healthcheck-timeout-seconds", "4"),
            ("frontend-nlb-healthcheck-healthy-threshold-count", "3"),
            ("frontend-nlb-healthcheck-unhealthy-threshold-count", "4"),
            ("frontend-nlb-healthcheck-success-codes", "200-399"),
            ("frontend-nlb-attributes", "load_balancing.cross_zone.enabled=true"),
            ("frontend-nlb-tags", "tier=edge"),
        ],
    );
    let s = &m.settings.frontend_nlb;
    assert!(m.settings.unsupported.is_empty() && m.settings.unknown.is_empty(), "{:?}", m.settings);
    assert_eq!(s.enable, Some(true));
    assert_eq!(s.scheme, Some(Scheme::InternetFacing));
    assert_eq!(s.subnets.as_deref(), Some(&["subnet-a".to_string(), "subnet-b".into()][..]));
    assert_eq!(s.security_groups.as_deref(), Some(&["sg-1".to_string(), "web-sg".into()][..]));
    assert_eq!(s.port_mapping, Some(BTreeMap::from([(8443, 443), (80, 80)])));
    assert_eq!(s.eip_allocations.as_ref().map(Vec::len), Some(2));
    let hc = &s.health_check;
    assert_eq!(hc.port, Some(HealthCheckPortSetting::Port(8080)));
    assert_eq!(hc.protocol, Some(Protocol::Https));
    assert_eq!(hc.path.as_deref(), Some("/ping"));
    assert_eq!(
        (hc.interval_seconds, hc.timeout_seconds, hc.healthy_threshold, hc.unhealthy_threshold),
        (Some(10), Some(4), Some(3), Some(4))
    );
    assert_eq!(hc.success_codes.as_deref(), Some("200-399"));
    assert_eq!(s.attributes.as_ref().unwrap()["load_balancing.cross_zone.enabled"], "true");
    assert_eq!(s.tags, Some(Tags::from([("tier".into(), "edge".into())])));
}

#[test]
fn invalid_values_are_refused_with_the_key() {
    let cases: &[(&str, &str, &str)] = &[
        ("frontend-nlb-listener-port-mapping", "http=80", "<NLB port>=<ALB listener port>"),
        ("frontend-nlb-listener-port-mapping", "80=0", "<NLB port>=<ALB listener port>"),
        ("frontend-nlb-healthcheck-port", "http", "\"traffic-port\" or a port"),
        ("frontend-nlb-healthcheck-protocol", "TCP", "\"http\" or \"https\""),
        ("frontend-nlb-healthcheck-success-codes", "600", "200 to 599"),
        ("frontend-nlb-scheme", "public", "internal"),
        ("frontend-nlb-attributes", "dns_record.client_routing_policy=nearest", "any_availability_zone"),
        ("enable-frontend-nlb", "yes please", "true"),
    ];
    for (key, value, want) in cases {
        let map = BTreeMap::from([(full_key(key), value.to_string())]);
        let e = crate::ingress::parse_annotations(&map, "shop").expect_err(key).to_string();
        assert!(e.contains(&full_key(key)) && e.contains(want), "{key}={value}: {e}");
    }
}

#[test]
fn no_frontend_nlb_unless_a_member_enables_it() {
    assert_eq!(group(&[web("shop/web", &[])]).unwrap().frontend_nlb, None);
    assert_eq!(group(&[web("shop/web", &[("enable-frontend-nlb", "false")])]).unwrap().frontend_nlb, None);
    // Other frontend-nlb-* annotations alone ask for nothing (as ALBC).
    assert_eq!(group(&[web("shop/web", &[("frontend-nlb-scheme", "internal")])]).unwrap().frontend_nlb, None);
}

#[test]
fn defaults_follow_albc() {
    let p = fe(&[web("shop/web", &[("enable-frontend-nlb", "true")])]);
    assert_eq!(p.scheme, Scheme::Internal, "--default-load-balancer-scheme, not the ALB's");
    assert_eq!((p.subnets.clone(), p.security_groups.clone(), p.tags.clone()), (None, None, None));
    assert_eq!(p.listeners.len(), 1);
    let l = &p.listeners[0];
    assert_eq!((l.port, l.alb_port), (80, 80));
    assert_eq!(
        l.health_check,
        HealthCheck {
            protocol: Protocol::Http,
            port: HealthCheckPort::TrafficPort,
            path: Some("/".into()),
            success_codes: Some("200".into()),
            interval_seconds: 15,
            timeout_seconds: 5,
            healthy_threshold: 2,
            unhealthy_threshold: 2,
        }
    );
    let cfg = MergeConfig { default_scheme: Scheme::InternetFacing, ..Default::default() };
    let g = plan_group(&[web("shop/web", &[("enable-frontend-nlb", "true")])], &svcs(), &cfg).unwrap();
    assert_eq!(g.frontend_nlb.unwrap().scheme, Scheme::InternetFacing);
}

#[test]
fn listeners_come_from_each_members_ports_and_mapping() {
    let a = web(
        "shop/a",
        &[("group.name", "g"), ("enable-frontend-nlb", "true"), ("listen-ports", r#"[{"HTTP":80},{"HTTP":8080}]"#)],
    );
    // b maps NLB 9000 to ALB 8081, a port b does not listen on: skipped, as ALBC.
    let b = web(
        "shop/b",
        &[
            ("group.name", "g"),
            ("listen-ports", r#"[{"HTTP":81}]"#),
            ("frontend-nlb-listener-port-mapping", "1081=81,9000=8081"),
        ],
    );
    let p = fe(&[a, b]);
    let ports: Vec<(u16, u16)> = p.listeners.iter().map(|l| (l.port, l.alb_port)).collect();
    assert_eq!(ports, [(80, 80), (1081, 81), (8080, 8080)]);
}

#[test]
fn conflicts_fail_the_group_naming_both_ingresses() {
    fn g(ann: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
        let mut all = vec![("group.name", "g")];
        all.extend_from_slice(ann);
        all
    }
    type Annotations = Vec<(&'static str, &'static str)>;
    let cases: Vec<(Annotations, Annotations, &str)> = vec![
        (g(&[("enable-frontend-nlb", "true")]), g(&[("enable-frontend-nlb", "false")]), "enable-frontend-nlb"),
        (
            g(&[("enable-frontend-nlb", "true"), ("frontend-nlb-scheme", "internal")]),
            g(&[("frontend-nlb-scheme", "internet-facing")]),
            "frontend-nlb-scheme",
        ),
        (
            g(&[("enable-frontend-nlb", "true"), ("frontend-nlb-security-groups", "sg-1,sg-2")]),
            g(&[("frontend-nlb-security-groups", "sg-2,sg-1")]),
            "frontend-nlb-security-groups",
        ),
        (
            g(&[("enable-frontend-nlb", "true"), ("frontend-nlb-tags", "a=1")]),
            g(&[("frontend-nlb-tags", "a=2")]),
            "frontend-nlb-tags",
        ),
        (
            g(&[("enable-frontend-nlb", "true"), ("frontend-nlb-healthcheck-path", "/a")]),
            g(&[("frontend-nlb-healthcheck-path", "/b")]),
            "conflicting health check path",
        ),
        (
            g(&[("enable-frontend-nlb", "true"), ("listen-ports", r#"[{"HTTP":80},{"HTTP":81}]"#)]),
            g(&[("listen-ports", r#"[{"HTTP":81}]"#), ("frontend-nlb-listener-port-mapping", "80=81")]),
            "frontend NLB port 80",
        ),
    ];
    for (a, b, want) in cases {
        let e = group(&[web("shop/a", &a), web("shop/b", &b)]).expect_err(want).join("; ");
        assert!(e.contains(want) && e.contains("shop/a") && e.contains("shop/b"), "{want}: {e}");
    }
}

#[test]
fn sets_agree_in_any_order_and_unset_values_never_conflict() {
    let a = web(
        "shop/a",
        &[
            ("group.name", "g"),
            ("enable-frontend-nlb", "true"),
            ("frontend-nlb-subnets", "subnet-a,subnet-b"),
            ("frontend-nlb-scheme", "internet-facing"),
            ("frontend-nlb-eip-allocations", "eipalloc-1,eipalloc-2"),
        ],
    );
    let b = web(
        "shop/b",
        &[
            ("group.name", "g"),
            ("frontend-nlb-subnets", "subnet-b,subnet-a"),
            ("frontend-nlb-healthcheck-interval-seconds", "30"),
        ],
    );
    let p = fe(&[a, b]);
    assert_eq!(p.subnets.as_deref(), Some(&["subnet-a".to_string(), "subnet-b".into()][..]));
    // a sets no interval: b's explicit value wins over a's default.
    assert_eq!(p.listeners[0].health_check.interval_seconds, 30);
}

#[test]
fn elastic_ips_need_an_internet_facing_nlb_and_one_per_subnet() {
    let e =
        group(&[web("shop/web", &[("enable-frontend-nlb", "true"), ("frontend-nlb-eip-allocations", "eipalloc-1")])])
            .expect_err("internal");
    assert!(e[0].contains("internet-facing"), "{e:?}");
    let e = group(&[web(
        "shop/web",
        &[
            ("enable-frontend-nlb", "true"),
            ("frontend-nlb-scheme", "internet-facing"),
            ("frontend-nlb-subnets", "subnet-a,subnet-b"),
            ("frontend-nlb-eip-allocations", "eipalloc-1"),
        ],
    )])
    .expect_err("count");
    assert!(e[0].contains("1 allocations for 2 subnets"), "{e:?}");
}

#[test]
fn built_stack_has_albc_names_tags_and_targets() {
    let p = fe(&[web("shop/web", &[("enable-frontend-nlb", "true")])]);
    let groups = vec!["sg-frontend".to_string(), "sg-backend".into()];
    let tags = Tags::from(ALB_TAGS.map(|(k, v)| (k.to_string(), v.to_string())));
    let subnets = [subnet("subnet-a"), subnet("subnet-b")];
    let nlb = build(&p, &alb_facts(&groups, &tags), "shop/web", false, &ctx(), &subnets, None).unwrap();
    let lb = &nlb.stack.load_balancer;
    assert_eq!(lb.name, "k8s-shop-web-0123456789abcde-nlb", "the ALB's name cut to 28 + -nlb");
    assert_eq!((lb.lb_type, lb.scheme), (LbType::Network, Scheme::Internal));
    assert_eq!(lb.security_groups, groups, "the ALB's security groups");
    assert_eq!(lb.subnets, [SubnetMapping::plain("subnet-a"), SubnetMapping::plain("subnet-b")]);
    assert_eq!(lb.tags["ingress.k8s.aws/resource"], "FrontendNlb");
    assert_eq!(lb.tags["ingress.k8s.aws/stack"], "shop/web");
    assert_eq!((lb.tags["team"].as_str(), lb.tags["owner"].as_str()), ("shop", "platform"));
    // Golden: sha256("prod" "shop/web" "80" "alb" "TCP" "traffic-port" "HTTP"), by hand in Python.
    let tg = &nlb.stack.target_groups[0];
    assert_eq!(tg.name, "k8s-shop-web-7499b5a7dc");
    assert_eq!((tg.protocol, tg.port, tg.target_type.as_str()), (Protocol::Tcp, 80, "alb"));
    assert_eq!(tg.tags["ingress.k8s.aws/resource"], "FrontendNlb-tg-TCP-80");
    let l = &nlb.stack.listeners[0];
    assert_eq!((l.port, l.protocol), (80, Protocol::Tcp));
    assert_eq!(l.tags["ingress.k8s.aws/resource"], "FrontendNlb-ls-TCP-80");
    assert!(matches!(&l.default_actions[0], Action::Forward { target_groups, .. }
        if target_groups[0].target_group == TargetGroupRef::Name(tg.name.clone())));
    assert_eq!(nlb.targets, [AlbTarget { target_group: tg.name.clone(), port: 80 }]);
    assert!(is_frontend_resource(&tg.tags["ingress.k8s.aws/resource"]) && !is_frontend_resource("LoadBalancer"));
}

#[test]
fn explicit_settings_replace_the_albs() {
    let p = fe(&[web(
        "shop/web",
        &[
            ("group.name", "team-a"),
            ("enable-frontend-nlb", "true"),
            ("listen-ports", r#"[{"HTTPS":443}]"#),
            ("certificate-arn", "arn:aws:acm:us-east-1:1:certificate/x"),
            ("frontend-nlb-scheme", "internet-facing"),
            ("frontend-nlb-eip-allocations", "eipalloc-1,eipalloc-2"),
            ("frontend-nlb-healthcheck-port", "8080"),
            ("frontend-nlb-healthcheck-protocol", "HTTPS"),
            ("frontend-nlb-tags", "tier=edge"),
            ("frontend-nlb-attributes", "load_balancing.cross_zone.enabled=true"),
        ],
    )]);
    let groups = vec!["sg-frontend".to_string()];
    let tags = Tags::from(ALB_TAGS.map(|(k, v)| (k.to_string(), v.to_string())));
    let subnets = [subnet("subnet-b"), subnet("subnet-a")];
    let nlb =
        build(&p, &alb_facts(&groups, &tags), "team-a", true, &ctx(), &subnets, Some(vec!["sg-nlb".into()])).unwrap();
    let lb = &nlb.stack.load_balancer;
    assert_eq!(lb.security_groups, ["sg-nlb"]);
    assert_eq!(lb.scheme, Scheme::InternetFacing);
    let eips: Vec<_> = lb.subnets.iter().map(|s| (s.subnet_id.as_str(), s.allocation_id.as_deref())).collect();
    assert_eq!(eips, [("subnet-b", Some("eipalloc-1")), ("subnet-a", Some("eipalloc-2"))], "paired in subnet order");
    assert_eq!(lb.tags.get("team"), None, "frontend-nlb-tags replace the ALB's");
    assert_eq!(lb.tags["tier"], "edge");
    assert_eq!(lb.attributes["load_balancing.cross_zone.enabled"], "true");
    // Golden: sha256("prod" "team-a" "443" "alb" "TCP" "8080" "HTTPS").
    assert_eq!(nlb.stack.target_groups[0].name, "k8s-teama-ea48a158ec");
    assert_eq!(nlb.stack.target_groups[0].health_check.port, HealthCheckPort::Port(8080));
    assert_eq!(nlb.stack.target_groups[0].tags["tier"], "edge");
    let e = build(&p, &alb_facts(&groups, &tags), "team-a", true, &ctx(), &[], None).expect_err("no subnets");
    assert!(e.problems[0].contains("frontend-nlb-subnets"), "{e:?}");
    let e = build(&p, &alb_facts(&groups, &tags), "team-a", true, &ctx(), &subnets[..1], None).expect_err("count");
    assert!(e.problems[0].contains("2 allocations for the 1 subnets"), "{e:?}");
}

#[test]
fn the_alb_is_the_one_target() {
    let alb = "arn:alb/new";
    assert_eq!(alb_target_changes("tg", alb, 80, &[(alb.into(), 80)]), []);
    assert_eq!(
        alb_target_changes("tg", alb, 80, &[]),
        [AlbTargetChange::Register { target_group_arn: "tg".into(), id: alb.into(), port: 80 }]
    );
    // A replaced ALB, or a changed port: the old one leaves first (one ALB per target group).
    assert_eq!(
        alb_target_changes("tg", alb, 80, &[("arn:alb/old".into(), 80), (alb.into(), 81)]),
        [
            AlbTargetChange::Deregister { target_group_arn: "tg".into(), id: "arn:alb/old".into(), port: 80 },
            AlbTargetChange::Deregister { target_group_arn: "tg".into(), id: alb.into(), port: 81 },
            AlbTargetChange::Register { target_group_arn: "tg".into(), id: alb.into(), port: 80 },
        ]
    );
}

#[test]
fn health_check_annotations_shape_the_target_group() {
    let p = fe(&[web(
        "shop/web",
        &[
            ("enable-frontend-nlb", "true"),
            ("frontend-nlb-healthcheck-port", "8080"),
            ("frontend-nlb-healthcheck-protocol", "HTTPS"),
            ("frontend-nlb-healthcheck-path", "/ping"),
            ("frontend-nlb-healthcheck-interval-seconds", "10"),
            ("frontend-nlb-healthcheck-timeout-seconds", "4"),
            ("frontend-nlb-healthcheck-healthy-threshold-count", "3"),
            ("frontend-nlb-healthcheck-unhealthy-threshold-count", "5"),
            ("frontend-nlb-healthcheck-success-codes", "200-399"),
        ],
    )]);
    let (groups, tags) = (vec!["sg-1".to_string()], Tags::new());
    let nlb = build(&p, &alb_facts(&groups, &tags), "shop/web", false, &ctx(), &[subnet("subnet-a")], None).unwrap();
    assert_eq!(
        nlb.stack.target_groups[0].health_check,
        HealthCheck {
            protocol: Protocol::Https,
            port: HealthCheckPort::Port(8080),
            path: Some("/ping".into()),
            success_codes: Some("200-399".into()),
            interval_seconds: 10,
            timeout_seconds: 4,
            healthy_threshold: 3,
            unhealthy_threshold: 5,
        }
    );
}
