use super::*;
use crate::ingress::backends::{ServiceView, Services};
use crate::ingress::merge::MergeConfig;
use crate::ingress::plan::plan_group;
use crate::ingress::test_fixtures::{P, member, path, rule, spec};
use crate::lb::Scheme;
use crate::lb::Subnet;
use crate::lb::build::FRONTEND_SG_PLACEHOLDER;

const UID: &str = "3f1b7c2e-0000-4000-8000-000000000002";

fn subnet(id: &str, az: &str) -> Subnet {
    Subnet {
        id: id.into(),
        vpc_id: "vpc-1".into(),
        availability_zone: az.into(),
        cidr: "10.0.0.0/24".into(),
        ipv6_cidrs: vec![],
        available_ips: 100,
        tags: Tags::new(),
    }
}

fn ctx() -> BuildContext {
    let mut c = BuildContext::new("prod", "vpc-1");
    c.subnets = vec![subnet("subnet-b", "az-b"), subnet("subnet-a", "az-a")];
    c.backend_security_group = Some("sg-backend".into());
    c.default_tags = Tags::from([("owner".into(), "platform".into())]);
    c.default_target_type = TargetType::Ip;
    c
}

/// (name, port, targetPort).
type PortSpec<'a> = (&'a str, i32, IntOrString);

/// `namespace/name` → ports.
fn services(list: &[(&str, &[PortSpec<'_>])]) -> Services {
    let mut out = Services::new();
    for (key, ports) in list {
        let (ns, name) = key.split_once('/').unwrap();
        let view = ServiceView {
            ports: ports.iter().map(|(n, p, _)| ((!n.is_empty()).then(|| n.to_string()), *p)).collect(),
            target_ports: ports.iter().map(|(_, p, t)| (*p, t.clone())).collect(),
            uid: UID.into(),
            ..Default::default()
        };
        out.insert((ns.into(), name.into()), view);
    }
    out
}

fn echo() -> Services {
    services(&[("shop/echo-server", &[("http", 80, IntOrString::Int(8080))])])
}

fn build(group: &GroupId, members: &[Member], svcs: &Services, c: &BuildContext) -> Result<IngressStack, BuildError> {
    let plan = plan_group(members, svcs, &MergeConfig::default()).expect("valid group");
    build_group_stack(group, members, &plan, c)
}

fn implicit(ns: &str, name: &str) -> GroupId {
    GroupId::Implicit { namespace: ns.into(), name: name.into() }
}

#[test]
fn single_http_ingress() {
    let m = member("shop/web", &[], spec(vec![rule("", vec![path("/", "Prefix", "echo-server", P::N(80))])]));
    let st = build(&implicit("shop", "web"), &[m], &echo(), &ctx()).unwrap();
    let lb = &st.stack.load_balancer;
    assert_eq!(st.stack.id, "shop/web");
    assert_eq!(lb.lb_type, LbType::Application);
    assert_eq!(lb.name, naming::ingress_load_balancer_name("prod", false, "shop/web", "internal"));
    assert_eq!(lb.scheme, Scheme::Internal);
    assert_eq!(lb.security_groups, ["managed:frontend", "sg-backend"]);
    assert_eq!(lb.subnets.iter().map(|s| s.subnet_id.as_str()).collect::<Vec<_>>(), ["subnet-a", "subnet-b"]);
    assert_eq!(lb.tags["ingress.k8s.aws/stack"], "shop/web");
    assert_eq!(lb.tags["ingress.k8s.aws/resource"], "LoadBalancer");
    assert_eq!(lb.tags["elbv2.k8s.aws/cluster"], "prod");
    assert_eq!(lb.tags["owner"], "platform");
    let [tg] = st.stack.target_groups.as_slice() else { panic!("{:?}", st.stack.target_groups) };
    assert_eq!((tg.protocol, tg.port, tg.target_type.as_str()), (Protocol::Http, 8080, "ip"));
    assert_eq!(tg.protocol_version.as_deref(), Some("HTTP1"));
    assert_eq!(tg.tags["ingress.k8s.aws/resource"], "shop/web-echo-server:80");
    let hc = &tg.health_check;
    assert_eq!(
        (hc.protocol, hc.port, hc.path.as_deref(), hc.success_codes.as_deref()),
        (Protocol::Http, HealthCheckPort::TrafficPort, Some("/"), Some("200"))
    );
    assert_eq!((hc.interval_seconds, hc.timeout_seconds, hc.healthy_threshold, hc.unhealthy_threshold), (15, 5, 2, 2));
    let [l] = st.stack.listeners.as_slice() else { panic!() };
    assert_eq!((l.port, l.protocol), (80, Protocol::Http));
    assert_eq!(l.tags["ingress.k8s.aws/resource"], "80");
    let [r] = l.rules.as_slice() else { panic!("{:?}", l.rules) };
    assert_eq!(r.priority, 1);
    assert_eq!(r.conditions, [Condition::PathPattern(vec!["/*".into()])]);
    assert_eq!(
        r.actions,
        [Action::Forward {
            target_groups: vec![WeightedTargetGroup {
                target_group: TargetGroupRef::Name(tg.name.clone()),
                weight: None
            }],
            stickiness_seconds: None
        }]
    );
    assert_eq!(r.tags["ingress.k8s.aws/resource"], "80:1");
    let [bnd] = st.bindings.as_slice() else { panic!() };
    assert_eq!((bnd.namespace.as_str(), bnd.name.as_str()), ("shop", tg.name.as_str()));
    assert_eq!(bnd.spec.service_ref.port, IntOrString::Int(80));
    let net = bnd.spec.networking.as_ref().unwrap();
    assert_eq!(net.ingress[0].from[0].security_group.as_ref().unwrap().group_id, "sg-backend");
    assert_eq!(net.ingress[0].ports[0].port, Some(IntOrString::Int(8080)));
    assert!(st.backend_security_group_used);
    let sg = st.stack.frontend_security_group.as_ref().unwrap();
    assert_eq!(sg.name, naming::ingress_frontend_security_group_name("prod", false, "shop/web"));
    assert_eq!(sg.tags["ingress.k8s.aws/resource"], "ManagedLBSecurityGroup");
    assert_eq!(sg.ingress.len(), 1, "IPv4 only on an ipv4 ALB: {:?}", sg.ingress);
}

fn web(ann: &[(&str, &str)]) -> Member {
    member("shop/web", ann, spec(vec![rule("shop.example.com", vec![path("/api", "Prefix", "echo-server", P::N(80))])]))
}

const IP: (&str, &str) = ("target-type", "ip");

#[test]
fn https_with_certificates_and_ssl_redirect() {
    let ann = [
        ("listen-ports", r#"[{"HTTP":80},{"HTTPS":443}]"#),
        ("certificate-arn", "arn:c1,arn:c2"),
        ("ssl-redirect", "443"),
        ("backend-protocol-version", "GRPC"),
        ("backend-protocol", "HTTPS"),
    ];
    let st = build(&implicit("shop", "web"), &[web(&ann)], &echo(), &ctx()).unwrap();
    let [http, https] = st.stack.listeners.as_slice() else { panic!("{:?}", st.stack.listeners) };
    assert_eq!((http.port, http.protocol, https.port, https.protocol), (80, Protocol::Http, 443, Protocol::Https));
    assert!(http.rules.is_empty() && http.certificates.is_empty() && http.ssl_policy.is_none());
    assert!(
        matches!(&http.default_actions[..], [Action::Redirect { port: Some(p), status_code, .. }] if p == "443" && status_code == "HTTP_301")
    );
    assert_eq!(https.certificates, ["arn:c1", "arn:c2"], "default certificate first");
    assert_eq!(https.ssl_policy.as_deref(), Some("ELBSecurityPolicy-2016-08"));
    assert_eq!(
        https.rules[0].conditions,
        [
            Condition::HostHeader(vec!["shop.example.com".into()]),
            Condition::PathPattern(vec!["/api".into(), "/api/*".into()])
        ]
    );
    assert!(matches!(&https.default_actions[..], [Action::FixedResponse { status_code, .. }] if status_code == "404"));
    let tg = &st.stack.target_groups[0];
    assert_eq!((tg.protocol, tg.protocol_version.as_deref()), (Protocol::Https, Some("GRPC")));
    let hc = &tg.health_check;
    assert_eq!(
        (hc.protocol, hc.path.as_deref(), hc.success_codes.as_deref()),
        (Protocol::Https, Some("/AWS.ALB/healthcheck"), Some("12"))
    );
    let sg = st.stack.frontend_security_group.unwrap();
    let ports: BTreeSet<i32> = sg.ingress.iter().map(|r| r.from_port).collect();
    assert_eq!(ports, BTreeSet::from([80, 443]));
}

#[test]
fn group_across_namespaces_names_and_tags() {
    let svcs = services(&[
        ("shop/echo-server", &[("http", 80, IntOrString::Int(8080))]),
        ("blog/site", &[("web", 8000, IntOrString::String("http".into()))]),
    ]);
    let a = member(
        "shop/web",
        &[("group.name", "team-a"), ("tags", "team=shop,cost=1")],
        spec(vec![rule("", vec![path("/shop", "Prefix", "echo-server", P::N(80))])]),
    );
    let b = member(
        "blog/site",
        &[("group.name", "team-a"), ("group.order", "10"), ("tags", "blog=yes,cost=1")],
        spec(vec![rule("", vec![path("/blog", "Exact", "site", P::S("web"))])]),
    );
    let g = GroupId::Explicit("team-a".into());
    let st = build(&g, &[a, b], &svcs, &ctx()).unwrap();
    let lb = &st.stack.load_balancer;
    assert_eq!(lb.name, "k8s-teama-e4e1d3825c", "golden: sha256(prod + team-a + internal)");
    assert_eq!(st.stack.frontend_security_group.as_ref().unwrap().name, "k8s-teama-f2fac9541f");
    assert_eq!(lb.tags["ingress.k8s.aws/stack"], "team-a");
    assert_eq!((lb.tags["team"].as_str(), lb.tags["blog"].as_str()), ("shop", "yes"), "members' tags merged");
    let names: Vec<(&str, &str)> = st.bindings.iter().map(|b| (b.namespace.as_str(), b.name.as_str())).collect();
    assert_eq!(names.len(), 2);
    let blog =
        st.stack.target_groups.iter().find(|t| t.tags["ingress.k8s.aws/resource"] == "blog/site-site:web").unwrap();
    assert_eq!(blog.port, 1, "named targetPort: the binding registers the real port");
    assert!(blog.name.starts_with("k8s-blog-site-"), "{}", blog.name);
    assert!(!blog.tags.contains_key("team"), "a target group has its own Ingress's tags");
    let bb = st.bindings.iter().find(|b| b.name == blog.name).unwrap();
    assert_eq!(bb.namespace, "blog");
    assert_eq!(bb.spec.service_ref.port, IntOrString::String("web".into()));
    assert_eq!(bb.spec.networking.as_ref().unwrap().ingress[0].ports[0].port, Some(IntOrString::String("http".into())));
    let rules = &st.stack.listeners[0].rules;
    assert_eq!(rules.len(), 2);
    assert_eq!(rules[0].tags["team"], "shop");
    assert_eq!(rules[1].tags["blog"], "yes");
    assert!(!rules[1].tags.contains_key("team"), "rule tags are its Ingress's");
}

#[test]
fn security_group_modes() {
    // (annotations, backend SG, LB groups, frontend SG built, binding source, backend used)
    type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>, &'a [&'a str], bool, Option<&'a str>, bool);
    let cases: &[Case<'_>] = &[
        (&[], Some("sg-backend"), &["managed:frontend", "sg-backend"], true, Some("sg-backend"), true),
        (&[], None, &["managed:frontend"], true, Some(FRONTEND_SG_PLACEHOLDER), false),
        (&[("security-groups", "sg-2,sg-1")], Some("sg-backend"), &["sg-1", "sg-2"], false, None, false),
        (
            &[("security-groups", "sg-1"), ("manage-backend-security-group-rules", "true")],
            Some("sg-backend"),
            &["sg-1", "sg-backend"],
            false,
            Some("sg-backend"),
            true,
        ),
    ];
    for (i, (ann, backend, groups, frontend, source, used)) in cases.iter().enumerate() {
        let mut c = ctx();
        c.backend_security_group = backend.map(String::from);
        let st = build(&implicit("shop", "web"), &[web(ann)], &echo(), &c).unwrap();
        assert_eq!(st.stack.load_balancer.security_groups, *groups, "case {i}");
        assert_eq!(st.stack.frontend_security_group.is_some(), *frontend, "case {i}");
        let got = st.bindings[0]
            .spec
            .networking
            .as_ref()
            .map(|n| n.ingress[0].from[0].security_group.clone().unwrap().group_id);
        assert_eq!(got.as_deref(), *source, "case {i}");
        assert_eq!(st.backend_security_group_used, *used, "case {i}");
    }
    // Without a backend SG the frontend SG becomes the source once created.
    let mut c = ctx();
    c.backend_security_group = None;
    let mut st = build(&implicit("shop", "web"), &[web(&[])], &echo(), &c).unwrap();
    st.resolve_frontend_security_group("sg-front");
    let n = st.bindings[0].spec.networking.as_ref().unwrap();
    assert_eq!(n.ingress[0].from[0].security_group.as_ref().unwrap().group_id, "sg-front");
    // Names need resolving; the backend SG must exist for manage-backend-security-group-rules.
    c.custom_security_group_ids = vec![];
    let ann = [("security-groups", "my-sg"), ("manage-backend-security-group-rules", "true")];
    let err = build(&implicit("shop", "web"), &[web(&ann)], &echo(), &c).unwrap_err();
    assert_eq!(err.problems.len(), 2, "{err}");
    c.custom_security_group_ids = vec!["sg-9".into()];
    c.backend_security_group = Some("sg-backend".into());
    let st = build(&implicit("shop", "web"), &[web(&ann)], &echo(), &c).unwrap();
    assert_eq!(st.stack.load_balancer.security_groups, ["sg-9", "sg-backend"]);
}

#[test]
fn dualstack_opens_ipv6_sources() {
    let mut c = ctx();
    c.ipv6_available = true;
    let st = build(&implicit("shop", "web"), &[web(&[("ip-address-type", "dualstack")])], &echo(), &c).unwrap();
    assert_eq!(st.stack.load_balancer.ip_address_type, LbIpAddressType::Dualstack);
    let sources: Vec<&RuleSource> =
        st.stack.frontend_security_group.as_ref().unwrap().ingress.iter().map(|r| &r.source).collect();
    assert_eq!(sources, [&RuleSource::Cidr("0.0.0.0/0".into()), &RuleSource::Ipv6Cidr("::/0".into())]);
    // An IPv6 Service needs a dualstack ALB; a dualstack ALB needs an IPv6 VPC.
    let mut svcs = echo();
    svcs.values_mut().for_each(|v| v.ipv6 = true);
    let st = build(&implicit("shop", "web"), &[web(&[("ip-address-type", "dualstack")])], &svcs, &c).unwrap();
    assert_eq!(st.stack.target_groups[0].ip_address_type, TgIpAddressType::Ipv6);
    assert_eq!(st.bindings[0].spec.ip_address_type, Some(TargetGroupIpAddressType::Ipv6));
    let err = build(&implicit("shop", "web"), &[web(&[])], &svcs, &c).unwrap_err();
    assert!(err.to_string().contains("ipFamilies include IPv6"), "{err}");
    c.ipv6_available = false;
    let err = build(&implicit("shop", "web"), &[web(&[("ip-address-type", "dualstack")])], &echo(), &c).unwrap_err();
    assert!(err.to_string().contains("IPv6 CIDR"), "{err}");
}

#[test]
fn every_problem_is_reported() {
    let mut c = ctx();
    c.default_target_type = TargetType::Instance;
    c.subnets.truncate(1);
    c.external_managed_tags.insert("cost".into());
    let ann = [("tags", "cost=1"), ("listen-ports", r#"[{"HTTPS":443}]"#)];
    let mut m = web(&ann);
    // IngressClassParams `loadBalancerName` is not checked by the annotation parser.
    m.settings.load_balancer_name = Some("-bad-".into());
    let err = build(&implicit("shop", "web"), &[m], &echo(), &c).unwrap_err();
    let text = err.to_string();
    for want in [
        "the port has no nodePort, and target type instance registers the nodes on it",
        "shop/web",
        "alb.ingress.kubernetes.io/target-type: ip",
        "two Availability Zones",
        "\"-bad-\" is not a valid load balancer name",
        "--external-managed-tags",
        "HTTPS listener port 443",
    ] {
        assert!(text.contains(want), "missing {want:?} in {text}");
    }
    // ip from the Ingress annotation wins over the default.
    let st = build(&implicit("shop", "web"), &[web(&[IP])], &echo(), &ctx());
    assert!(st.is_ok());
}

#[test]
fn a_member_change_touches_only_its_rules_and_target_groups() {
    let svcs = services(&[
        ("shop/echo-server", &[("http", 80, IntOrString::Int(8080))]),
        ("shop/other", &[("http", 80, IntOrString::Int(9090))]),
    ]);
    let a = member(
        "shop/a",
        &[("group.name", "g")],
        spec(vec![rule("", vec![path("/a", "Exact", "echo-server", P::N(80))])]),
    );
    let b1 = member(
        "shop/b",
        &[("group.name", "g"), ("group.order", "5")],
        spec(vec![rule("", vec![path("/b", "Exact", "echo-server", P::N(80))])]),
    );
    let b2 = member(
        "shop/b",
        &[("group.name", "g"), ("group.order", "5"), ("healthcheck-path", "/healthz")],
        spec(vec![rule("", vec![path("/b2", "Exact", "other", P::N(80))])]),
    );
    let g = GroupId::Explicit("g".into());
    let before = build(&g, &[a.clone(), b1], &svcs, &ctx()).unwrap();
    let after = build(&g, &[a, b2], &svcs, &ctx()).unwrap();
    assert_eq!(before.stack.load_balancer, after.stack.load_balancer);
    assert_eq!(before.stack.frontend_security_group, after.stack.frontend_security_group);
    let (r0, r1) = (&before.stack.listeners[0].rules, &after.stack.listeners[0].rules);
    assert_eq!(r0[0], r1[0], "member a's rule is unchanged");
    assert_ne!(r0[1], r1[1]);
    let a_tg = |s: &IngressStack| {
        s.stack.target_groups.iter().find(|t| t.tags["ingress.k8s.aws/resource"].starts_with("shop/a-")).cloned()
    };
    assert_eq!(a_tg(&before), a_tg(&after), "member a's target group is unchanged");
    assert_eq!(before.stack.target_groups.len(), 2);
    assert_eq!(after.stack.target_groups.len(), 2);
}

#[test]
fn builds_into_an_ordered_plan() {
    use crate::lb::diff::{ObservedStack, PlanOptions, Step, plan};
    let ann = [("listen-ports", r#"[{"HTTP":80},{"HTTPS":443}]"#), ("certificate-arn", "arn:c1")];
    let st = build(&implicit("shop", "web"), &[web(&ann)], &echo(), &ctx()).unwrap();
    let steps = plan(&st.stack, &ObservedStack::default(), &PlanOptions::default()).expect("plans");
    let first = |f: fn(&Step) -> bool| steps.iter().position(f).unwrap_or_else(|| panic!("{steps:#?}"));
    let sg = first(|s| matches!(s, Step::CreateSecurityGroup { .. }));
    let tg = first(|s| matches!(s, Step::CreateTargetGroup { .. }));
    let lb = first(|s| matches!(s, Step::CreateLoadBalancer { .. }));
    let ls = first(|s| matches!(s, Step::CreateListener { .. }));
    let rule = first(|s| matches!(s, Step::CreateRule { .. }));
    assert!(sg < lb && tg < ls && lb < ls && ls < rule, "{steps:#?}");
    assert_eq!(steps.iter().filter(|s| matches!(s, Step::CreateListener { .. })).count(), 2);
    assert_eq!(steps.iter().filter(|s| matches!(s, Step::CreateRule { .. })).count(), 2);
}

#[test]
fn web_acl_and_minimum_capacity_become_extras() {
    let g = implicit("shop", "web");
    let extras = |ann: &[(&str, &str)]| build(&g, &[web(ann)], &echo(), &ctx()).unwrap().extras;
    assert_eq!(extras(&[]), WantedExtras::default(), "nothing asked: AWS left alone");
    let arn = "arn:aws:wafv2:us-east-1:1:regional/webacl/w/1";
    assert_eq!(extras(&[("wafv2-acl-arn", arn)]).web_acl, Some(WebAclWanted::Arn(arn.into())));
    assert_eq!(extras(&[("wafv2-acl-arn", "none")]).web_acl, Some(WebAclWanted::Disassociate));
    assert_eq!(extras(&[("wafv2-acl-name", "shop-acl")]).web_acl, Some(WebAclWanted::Name("shop-acl".into())));
    let both = build(&g, &[web(&[("wafv2-acl-arn", arn), ("wafv2-acl-name", "x")])], &echo(), &ctx()).unwrap();
    assert_eq!(both.extras.web_acl, Some(WebAclWanted::Name("x".into())), "ALBC: the name wins");
    assert!(both.warnings.iter().any(|w| w.contains("the name is used, the ARN ignored")), "{:?}", both.warnings);
    let cap = extras(&[("minimum-load-balancer-capacity", "CapacityUnits=100")]);
    assert_eq!(cap.minimum_capacity_units, Some(100));
}

fn regex_member(ann: &[(&str, &str)], paths: Vec<(&str, &str)>) -> Member {
    let paths = paths.into_iter().map(|(p, t)| path(p, t, "echo-server", P::N(80))).collect();
    member("shop/web", ann, spec(vec![rule("", paths)]))
}

#[test]
fn regex_conditions_are_built_and_checked_before_any_aws_call() {
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, Vec<(&'a str, &'a str)>, Result<Vec<Condition>, &'a str>);
    let on = ("use-regex-path-match", "true");
    let long = format!("/{}", "a".repeat(129));
    let cases: Vec<Case> = vec![
        (
            "ImplementationSpecific paths become regexes without their leading slash",
            vec![on],
            vec![("/v[0-9]+/orders", "ImplementationSpecific")],
            Ok(vec![Condition::PathPatternRegex(vec!["v[0-9]+/orders".into()])]),
        ),
        (
            "Prefix and Exact paths stay wildcard paths",
            vec![on],
            vec![("/api", "Prefix")],
            Ok(vec![Condition::PathPattern(vec!["/api".into(), "/api/*".into()])]),
        ),
        (
            "without the annotation ImplementationSpecific is a wildcard path",
            vec![],
            vec![("/v[0-9]+", "ImplementationSpecific")],
            Ok(vec![Condition::PathPattern(vec!["/v[0-9]+".into()])]),
        ),
        ("a lookahead is refused", vec![on], vec![("/(?=x)y", "ImplementationSpecific")], Err("(?=x)y")),
        ("an unbalanced group is refused", vec![on], vec![("/(v", "ImplementationSpecific")], Err("not a valid")),
        ("too long is refused", vec![on], vec![(&long, "ImplementationSpecific")], Err("more than the 128")),
    ];
    for (name, ann, paths, want) in cases {
        let mut ann = ann;
        ann.push(IP);
        let got = build(&implicit("shop", "web"), &[regex_member(&ann, paths)], &echo(), &ctx());
        match (got, want) {
            (Ok(st), Ok(conds)) => assert_eq!(st.stack.listeners[0].rules[0].conditions, conds, "{name}"),
            (Err(e), Err(part)) => {
                let text = e.to_string();
                assert!(text.contains(part) && text.contains("use-regex-path-match"), "{name}: {text}");
            }
            (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
        }
    }
    // regexValues in conditions.<name>: more than three per condition is refused.
    let four = r#"[{"field":"host-header","hostHeaderConfig":{"regexValues":["^a$","^b$","^c$","^d$"]}}]"#;
    let ann = [IP, ("conditions.echo-server", four)];
    let err = build(&implicit("shop", "web"), &[regex_member(&ann, vec![("/x", "Exact")])], &echo(), &ctx())
        .unwrap_err()
        .to_string();
    assert!(err.contains("4 regex values") && err.contains("at most 3"), "{err}");
    // A header regex is checked like the others, and names its header.
    let header = |re: &str| {
        format!(
            r#"[{{"field":"http-header","httpHeaderConfig":{{"httpHeaderName":"User-Agent","regexValues":["{re}"]}}}}]"#
        )
    };
    let bad = header("^(?=curl)");
    let ann = [IP, ("conditions.echo-server", bad.as_str())];
    let err = build(&implicit("shop", "web"), &[regex_member(&ann, vec![("/x", "Exact")])], &echo(), &ctx())
        .unwrap_err()
        .to_string();
    assert!(err.contains("http-header User-Agent regex condition") && err.contains("(?=curl)"), "{err}");
    let good = header("^curl/[0-9.]+$");
    let ann = [IP, ("conditions.echo-server", good.as_str())];
    let st = build(&implicit("shop", "web"), &[regex_member(&ann, vec![("/x", "Exact")])], &echo(), &ctx()).unwrap();
    let want = Condition::HttpHeaderRegex { name: "User-Agent".into(), values: vec!["^curl/[0-9.]+$".into()] };
    assert!(st.stack.listeners[0].rules[0].conditions.contains(&want), "{:?}", st.stack.listeners[0].rules[0]);
}

#[test]
fn oidc_uses_the_credentials_of_its_secret_and_tags_their_digest() {
    let oidc = r#"{"issuer":"https://idp.example","authorizationEndpoint":"https://idp.example/auth",
        "tokenEndpoint":"https://idp.example/token","userInfoEndpoint":"https://idp.example/userinfo",
        "secretName":"oidc"}"#;
    let ann = [
        IP,
        ("listen-ports", r#"[{"HTTPS":443}]"#),
        ("certificate-arn", "arn:c1"),
        ("auth-type", "oidc"),
        ("auth-idp-oidc", oidc),
    ];
    let err = build(&implicit("shop", "web"), &[web(&ann)], &echo(), &ctx()).unwrap_err().to_string();
    assert!(err.contains("Secret shop/oidc") && err.contains("auth-idp-oidc"), "{err}");
    let mut c = ctx();
    let cred = |s: &str| crate::lb::build::OidcCredentials {
        client_id: "app".into(),
        client_secret: s.into(),
        digest: crate::ingress::oidc::credentials_digest("uid", "app", s),
    };
    c.oidc_credentials.insert(("shop".into(), "oidc".into()), cred("s3cret"));
    let st = build(&implicit("shop", "web"), &[web(&ann)], &echo(), &c).unwrap();
    let r = &st.stack.listeners[0].rules[0];
    let Action::AuthenticateOidc(o) = &r.actions[0] else { panic!("{:?}", r.actions) };
    assert_eq!((o.client_id.as_str(), o.client_secret.as_deref()), ("app", Some("s3cret")));
    assert!(matches!(r.actions[1], Action::Forward { .. }));
    let digest = r.tags[OIDC_SECRET_DIGEST_TAG].clone();
    assert!(!st.stack.listeners[0].tags.contains_key(OIDC_SECRET_DIGEST_TAG), "the default 404 does not authenticate");
    c.oidc_credentials.insert(("shop".into(), "oidc".into()), cred("r0tated"));
    let st = build(&implicit("shop", "web"), &[web(&ann)], &echo(), &c).unwrap();
    assert_ne!(st.stack.listeners[0].rules[0].tags[OIDC_SECRET_DIGEST_TAG], digest);
}

#[test]
fn only_secrets_of_authenticating_listeners_are_needed() {
    let oidc =
        r#"{"issuer":"i","authorizationEndpoint":"a","tokenEndpoint":"t","userInfoEndpoint":"u","secretName":"oidc"}"#;
    let auth = [IP, ("auth-type", "oidc"), ("auth-idp-oidc", oidc), ("certificate-arn", "arn:c1")];
    let needed = |ports: &str| {
        let mut ann = auth.to_vec();
        ann.push(("listen-ports", ports));
        let plan = plan_group(&[web(&ann)], &echo(), &MergeConfig::default()).unwrap();
        crate::ingress::oidc::secrets_needed(&plan)
    };
    let https = needed(r#"[{"HTTP":80},{"HTTPS":443}]"#);
    assert_eq!(https.len(), 1);
    let users = &https[&("shop".to_string(), "oidc".to_string())];
    assert_eq!(users.iter().map(ToString::to_string).collect::<Vec<_>>(), ["shop/web"]);
    assert!(needed(r#"[{"HTTP":80}]"#).is_empty(), "ALBC authenticates on HTTPS listeners only");
}

#[test]
fn cognito_needs_no_secret() {
    let cognito = r#"{"userPoolARN":"arn:aws:cognito-idp:us-east-1:123456789012:userpool/us-east-1_x",
        "userPoolClientID":"app","userPoolDomain":"auth.example.com"}"#;
    let ann = [
        IP,
        ("listen-ports", r#"[{"HTTPS":443}]"#),
        ("certificate-arn", "arn:c1"),
        ("auth-type", "cognito"),
        ("auth-idp-cognito", cognito),
    ];
    let plan = plan_group(&[web(&ann)], &echo(), &MergeConfig::default()).unwrap();
    assert!(crate::ingress::oidc::secrets_needed(&plan).is_empty());
    let st = build(&implicit("shop", "web"), &[web(&ann)], &echo(), &ctx()).unwrap();
    let r = &st.stack.listeners[0].rules[0];
    let Action::AuthenticateCognito(c) = &r.actions[0] else { panic!("{:?}", r.actions) };
    assert_eq!((c.user_pool_client_id.as_str(), c.user_pool_domain.as_str()), ("app", "auth.example.com"));
    assert!(!r.tags.contains_key(OIDC_SECRET_DIGEST_TAG));
}

#[test]
fn default_scheme_applies_when_no_member_names_one() {
    let m = member("shop/web", &[], spec(vec![rule("", vec![path("/", "Prefix", "echo-server", P::N(80))])]));
    let mut c = ctx();
    c.default_scheme = Scheme::InternetFacing;
    let st = build(&implicit("shop", "web"), &[m], &echo(), &c).unwrap();
    assert_eq!(st.stack.load_balancer.scheme, Scheme::InternetFacing, "--default-load-balancer-scheme");
    assert_eq!(
        st.stack.load_balancer.name,
        naming::ingress_load_balancer_name("prod", false, "shop/web", "internet-facing"),
        "the name hashes the scheme, as ALBC's does"
    );
}

#[test]
fn context_needs_follow_the_first_member_that_sets_each_setting() {
    use crate::lb::subnets::SubnetSelector;
    let tagged = || {
        let mut m = web(&[]);
        m.settings.subnet_tags = Some(BTreeMap::from([("tier".to_string(), vec!["web".to_string()])]));
        m
    };
    // (members' annotations, params' subnet tags on the first, single subnet gate) →
    // (subnets, scheme, min AZs, names to look up)
    type Case = (&'static str, Vec<Member>, bool, SubnetSelector, Scheme, usize, Vec<&'static str>);
    let cases: Vec<Case> = vec![
        (
            "nothing set: discovery, default scheme, two AZs",
            vec![web(&[])],
            false,
            SubnetSelector::Discover,
            Scheme::Internal,
            2,
            vec![],
        ),
        ("gate ALBSingleSubnet: one AZ", vec![web(&[])], true, SubnetSelector::Discover, Scheme::Internal, 1, vec![]),
        (
            "the first member that names subnets and a scheme wins",
            vec![web(&[]), web(&[("subnets", "subnet-1, web-a"), ("scheme", "internet-facing")])],
            false,
            SubnetSelector::Explicit(vec!["subnet-1".into(), "web-a".into()]),
            Scheme::InternetFacing,
            2,
            vec![],
        ),
        (
            "params' subnet tags beat the annotation",
            vec![tagged(), web(&[("subnets", "subnet-1")])],
            false,
            SubnetSelector::Tags(BTreeMap::from([("tier".to_string(), vec!["web".to_string()])])),
            Scheme::Internal,
            2,
            vec![],
        ),
        (
            "groups named by Name are looked up, IDs are not",
            vec![web(&[("security-groups", "sg-1,web-front,edge")])],
            false,
            SubnetSelector::Discover,
            Scheme::Internal,
            2,
            vec!["web-front", "edge"],
        ),
    ];
    for (name, members, single, subnets, scheme, min_azs, names) in cases {
        let n = context_needs(&members, Scheme::Internal, single);
        assert_eq!(n.subnets, subnets, "{name}");
        assert_eq!(n.scheme, scheme, "{name}");
        assert_eq!(n.min_azs, min_azs, "{name}");
        assert_eq!(n.security_group_names, names, "{name}");
        assert_eq!(n.subnets_annotation, "alb.ingress.kubernetes.io/subnets", "{name}");
        assert_eq!(n.security_groups_annotation, "alb.ingress.kubernetes.io/security-groups", "{name}");
    }
}

/// `echo()` with NodePort 30080 on port 80 (as the API server allocates for type NodePort).
fn echo_with_node_port() -> Services {
    let mut s = echo();
    s.values_mut().for_each(|v| {
        v.node_ports.insert(80, 30080);
    });
    s
}

#[test]
fn instance_targets_use_the_node_port_and_node_labels() {
    let g = implicit("shop", "web");
    let mut default_instance = ctx();
    default_instance.default_target_type = TargetType::Instance;
    let labels = ("target-node-labels", "role=edge");
    // (case, annotations, context, target type, TG port)
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a BuildContext, &'a str, u16);
    let cases: [Case<'_>; 4] = [
        ("annotation", vec![("target-type", "instance"), labels], &ctx(), "instance", 30080),
        ("default", vec![labels], &default_instance, "instance", 30080),
        ("ip wins", vec![IP, labels], &default_instance, "ip", 8080),
        (
            "named health-check port",
            vec![("target-type", "instance"), ("healthcheck-port", "http")],
            &ctx(),
            "instance",
            30080,
        ),
    ];
    for (name, ann, c, want_type, want_port) in cases {
        let st = build(&g, &[web(&ann)], &echo_with_node_port(), c).unwrap_or_else(|e| panic!("{name}: {e}"));
        let ([tg], [b]) = (st.stack.target_groups.as_slice(), st.bindings.as_slice()) else { panic!("{name}") };
        assert_eq!((tg.target_type.as_str(), tg.port), (want_type, want_port), "{name}");
        let instance = want_type == "instance";
        assert_eq!(b.spec.target_type, Some(if instance { TargetType::Instance } else { TargetType::Ip }), "{name}");
        let ports: Vec<IntOrString> = b
            .spec
            .networking
            .iter()
            .flat_map(|n| &n.ingress)
            .flat_map(|r| &r.ports)
            .filter_map(|p| p.port.clone())
            .collect();
        // (A numeric health-check port gets its own rule even when it equals the traffic port, as before.)
        assert!(
            !ports.is_empty() && ports.iter().all(|p| *p == IntOrString::Int(i32::from(want_port))),
            "{name}: the rules open the target group's port: {ports:?}"
        );
        let labelled = ann.contains(&labels) && instance;
        let want_sel = labelled.then(|| BTreeMap::from([("role".to_string(), "edge".to_string())]));
        assert_eq!(b.spec.node_selector.as_ref().and_then(|s| s.match_labels.clone()), want_sel, "{name}");
        assert_eq!(b.spec.service_ref.port, IntOrString::Int(80), "{name}");
        if name == "named health-check port" {
            assert_eq!(tg.health_check.port, HealthCheckPort::Port(30080), "{name}: the named port's NodePort");
        } else {
            assert_eq!(tg.health_check.port, HealthCheckPort::TrafficPort, "{name}");
        }
    }
    let ip = build(&g, &[web(&[IP])], &echo_with_node_port(), &ctx()).unwrap();
    let inst = build(&g, &[web(&[("target-type", "instance")])], &echo_with_node_port(), &ctx()).unwrap();
    assert_ne!(ip.stack.target_groups[0].name, inst.stack.target_groups[0].name, "target type is part of the name");
}

/// `customer-owned-ipv4-pool` and `ipam-ipv4-pool-id`: group-wide (members must agree), on the
/// load balancer; an existing load balancer with another customer-owned pool keeps it (AWS cannot
/// change it) and a warning says so; an empty customer-owned pool is refused.
#[test]
fn outpost_and_ipam_pools_are_group_wide_and_a_pool_aws_cannot_change_is_warned_about() {
    let coip = ("customer-owned-ipv4-pool", "ipv4pool-coip-0123");
    let ipam = ("ipam-ipv4-pool-id", "ipam-pool-0abc");
    let st = build(&implicit("shop", "web"), &[web(&[IP, coip, ipam])], &echo(), &ctx()).unwrap();
    let lb = &st.stack.load_balancer;
    assert_eq!(lb.customer_owned_ipv4_pool.as_deref(), Some("ipv4pool-coip-0123"));
    assert_eq!(lb.ipv4_ipam_pool.as_deref(), Some("ipam-pool-0abc"));
    assert!(st.warnings.is_empty(), "{:?}", st.warnings);

    let mut c = ctx();
    c.existing = Some(crate::lb::build::ExistingLoadBalancer {
        scheme: crate::lb::Scheme::Internal,
        has_security_groups: true,
        customer_owned_ipv4_pool: Some("ipv4pool-coip-old".into()),
    });
    let st = build(&implicit("shop", "web"), &[web(&[IP, coip])], &echo(), &c).unwrap();
    let w = st.warnings.iter().find(|w| w.contains("customer-owned-ipv4-pool")).expect("a warning");
    assert!(
        w.contains("\"ipv4pool-coip-0123\"") && w.contains("\"ipv4pool-coip-old\"") && w.contains("cannot change"),
        "{w}"
    );

    let empty: BTreeMap<String, String> = [(full_key("customer-owned-ipv4-pool"), String::new())].into_iter().collect();
    let err = crate::ingress::parse_annotations(&empty, "shop").unwrap_err().to_string();
    assert!(err.contains("customer-owned-ipv4-pool") && err.contains("ipv4pool-coip-"), "{err}");
    // As ALBC: an empty IPAM pool sets none.
    let st = build(&implicit("shop", "web"), &[web(&[IP, ("ipam-ipv4-pool-id", "")])], &echo(), &ctx()).unwrap();
    assert_eq!(st.stack.load_balancer.ipv4_ipam_pool, None);

    let svcs = echo();
    let one = |name: &str, pool: &str| {
        member(
            name,
            &[IP, ("group.name", "g"), ("ipam-ipv4-pool-id", pool)],
            spec(vec![rule("", vec![path(&format!("/{name}"), "Prefix", "echo-server", P::N(80))])]),
        )
    };
    let g = GroupId::Explicit("g".into());
    let err = build(&g, &[one("shop/a", "ipam-pool-1"), one("shop/b", "ipam-pool-2")], &svcs, &ctx()).unwrap_err();
    assert!(err.to_string().contains("conflicting alb.ingress.kubernetes.io/ipam-ipv4-pool-id"), "{err}");
}

/// ALBC `target-control-port.${serviceName}.${servicePort}`: the backend's target group carries
/// the port (hashed into its name, so a change is a new group) and the binding opens it to the
/// ALB's security group; another backend is untouched.
#[test]
fn a_target_control_port_is_set_on_its_backends_group_and_opened_to_the_alb() {
    let plain = build(&implicit("shop", "web"), &[web(&[IP])], &echo(), &ctx()).unwrap();
    let control = ("target-control-port.echo-server.80", "3000");
    let st = build(&implicit("shop", "web"), &[web(&[IP, control])], &echo(), &ctx()).unwrap();
    let [tg] = st.stack.target_groups.as_slice() else { panic!() };
    assert_eq!(tg.target_control_port, Some(3000));
    assert_ne!(tg.name, plain.stack.target_groups[0].name, "a new group: AWS cannot change the port");
    let ports: Vec<_> =
        st.bindings[0].spec.networking.as_ref().unwrap().ingress.iter().map(|r| r.ports[0].port.clone()).collect();
    assert_eq!(ports, [Some(IntOrString::Int(8080)), Some(IntOrString::Int(3000))]);
    // Another Service's (or port's) key does not apply here.
    let other =
        build(&implicit("shop", "web"), &[web(&[IP, ("target-control-port.other.80", "3000")])], &echo(), &ctx());
    assert_eq!(other.unwrap().stack.target_groups[0], plain.stack.target_groups[0]);
}

/// `web(ann)` with IngressClassParams `p` applied, as the controller does before planning.
fn web_with_params(ann: &[(&str, &str)], p: &crate::crd::IngressClassParamsSpec) -> Member {
    let mut m = web(ann);
    m.settings = crate::ingress::apply_params(&m.settings, Some(p), "class-a").expect("the params apply");
    m
}

fn kv(key: &str, value: &str) -> crate::crd::ingress_class_params::KeyValue {
    crate::crd::ingress_class_params::KeyValue { key: key.into(), value: value.into() }
}

fn attributes(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// `load-balancer-name` and IngressClassParams `loadBalancerName` (which wins) name the ALB instead
/// of ALBC's generated name; members of a group must agree.
#[test]
fn load_balancer_name_annotation_and_class_params_name_the_alb() {
    use crate::crd::IngressClassParamsSpec;
    let g = implicit("shop", "web");
    let name = |m: Member| build(&g, &[m], &echo(), &ctx()).unwrap().stack.load_balancer.name;
    let named = ("load-balancer-name", "shop-alb");
    assert_eq!(name(web(&[IP])), naming::ingress_load_balancer_name("prod", false, "shop/web", "internal"));
    assert_eq!(name(web(&[IP, named])), "shop-alb");
    let p = IngressClassParamsSpec { load_balancer_name: Some("class-alb".into()), ..Default::default() };
    assert_eq!(name(web_with_params(&[IP], &p)), "class-alb");
    assert_eq!(name(web_with_params(&[IP, named], &p)), "class-alb", "the params win");
    let one = |key: &str, n: &str| {
        let p = format!("/{key}");
        member(
            key,
            &[IP, ("group.name", "g"), ("load-balancer-name", n)],
            spec(vec![rule("", vec![path(&p, "Prefix", "echo-server", P::N(80))])]),
        )
    };
    let err = build(&GroupId::Explicit("g".into()), &[one("shop/a", "alb-a"), one("shop/b", "alb-b")], &echo(), &ctx())
        .unwrap_err()
        .to_string();
    assert!(err.contains("conflicting alb.ingress.kubernetes.io/load-balancer-name"), "{err}");
}

/// `load-balancer-attributes` and IngressClassParams `loadBalancerAttributes` become the ALB's
/// attributes; the params' value wins for the keys it sets.
#[test]
fn load_balancer_attributes_annotation_and_class_params_reach_the_alb() {
    use crate::crd::IngressClassParamsSpec;
    let g = implicit("shop", "web");
    let attrs = |m: Member| build(&g, &[m], &echo(), &ctx()).unwrap().stack.load_balancer.attributes;
    assert_eq!(attrs(web(&[IP])), attributes(&[]), "nothing asked: AWS's defaults stay");
    let ann = ("load-balancer-attributes", "idle_timeout.timeout_seconds=120,routing.http2.enabled=false");
    let want = attributes(&[("idle_timeout.timeout_seconds", "120"), ("routing.http2.enabled", "false")]);
    assert_eq!(attrs(web(&[IP, ann])), want);
    let p = IngressClassParamsSpec {
        load_balancer_attributes: vec![
            kv("idle_timeout.timeout_seconds", "300"),
            kv("deletion_protection.enabled", "true"),
        ],
        ..Default::default()
    };
    let want = attributes(&[("idle_timeout.timeout_seconds", "300"), ("deletion_protection.enabled", "true")]);
    assert_eq!(attrs(web_with_params(&[IP], &p)), want);
    let both = attrs(web_with_params(&[IP, ann], &p));
    assert_eq!(
        (both["idle_timeout.timeout_seconds"].as_str(), both["deletion_protection.enabled"].as_str()),
        ("300", "true"),
        "the params win"
    );
    assert_eq!(both["routing.http2.enabled"], "false", "merged, as in ALBC: the annotation's other keys stay");
}

/// `target-group-attributes` becomes the target group's attributes; the Service's annotation wins
/// over the Ingress's, whole.
#[test]
fn target_group_attributes_annotation_reaches_the_target_group() {
    let g = implicit("shop", "web");
    let tg_attrs = |ann: &[(&str, &str)], svcs: &Services| {
        let st = build(&g, &[web(ann)], svcs, &ctx()).unwrap();
        let [tg] = st.stack.target_groups.as_slice() else { panic!("{:?}", st.stack.target_groups) };
        tg.attributes.clone()
    };
    assert_eq!(tg_attrs(&[IP], &echo()), attributes(&[]), "nothing asked: AWS's defaults stay");
    let ann = (
        "target-group-attributes",
        "deregistration_delay.timeout_seconds=30,stickiness.enabled=true,stickiness.type=lb_cookie",
    );
    let want = attributes(&[
        ("deregistration_delay.timeout_seconds", "30"),
        ("stickiness.enabled", "true"),
        ("stickiness.type", "lb_cookie"),
    ]);
    assert_eq!(tg_attrs(&[IP, ann], &echo()), want);
    let mut svcs = echo();
    let on_service = attributes(&[("deregistration_delay.timeout_seconds", "5")]);
    svcs.values_mut().for_each(|v| v.settings.target_group_attributes = Some(on_service.clone()));
    assert_eq!(tg_attrs(&[IP, ann], &svcs), on_service, "the Service's annotation wins");
}

/// IngressClassParams `sslPolicy` replaces `ssl-policy` on the HTTPS listeners; `listeners`
/// sets the attributes of the listener with that protocol and port, replacing
/// `listener-attributes.<PROTOCOL>-<port>`.
#[test]
fn class_params_ssl_policy_and_listener_attributes_reach_the_listeners() {
    use crate::crd::IngressClassParamsSpec;
    use crate::crd::ingress_class_params::{ParamsListener, ParamsListenerProtocol};
    let g = implicit("shop", "web");
    let listeners = |m: Member| {
        let st = build(&g, &[m], &echo(), &ctx()).unwrap();
        st.stack.listeners.iter().map(|l| (l.port, l.ssl_policy.clone(), l.attributes.clone())).collect::<Vec<_>>()
    };
    let https = [IP, ("listen-ports", r#"[{"HTTP":80},{"HTTPS":443}]"#), ("certificate-arn", "arn:c1")];
    let default_policy = Some(ctx().default_ssl_policy);
    let none = attributes(&[]);
    assert_eq!(listeners(web(&https)), [(80, None, none.clone()), (443, default_policy, none.clone())]);
    let mut ann = https.to_vec();
    ann.push(("ssl-policy", "ELBSecurityPolicy-TLS13-1-2-2021-06"));
    ann.push(("listener-attributes.HTTPS-443", "routing.http.response.server.enabled=true"));
    let own = attributes(&[("routing.http.response.server.enabled", "true")]);
    let by_annotation = Some("ELBSecurityPolicy-TLS13-1-2-2021-06".to_string());
    assert_eq!(listeners(web(&ann)), [(80, None, none.clone()), (443, by_annotation, own)]);
    let listener = |protocol, port, attrs: &[(&str, &str)]| ParamsListener {
        protocol: Some(protocol),
        port: Some(port),
        listener_attributes: attrs.iter().map(|(k, v)| kv(k, v)).collect(),
    };
    let p = IngressClassParamsSpec {
        ssl_policy: Some("ELBSecurityPolicy-TLS13-1-2-Res-2021-06".into()),
        listeners: vec![
            listener(ParamsListenerProtocol::HTTPS, 443, &[("routing.http.response.server.enabled", "false")]),
            listener(
                ParamsListenerProtocol::HTTP,
                80,
                &[("routing.http.response.x_frame_options.header_value", "DENY")],
            ),
            // Another protocol on the port: not this listener.
            listener(ParamsListenerProtocol::HTTP, 443, &[("routing.http.response.server.enabled", "true")]),
        ],
        ..Default::default()
    };
    let by_params = Some("ELBSecurityPolicy-TLS13-1-2-Res-2021-06".to_string());
    assert_eq!(
        listeners(web_with_params(&ann, &p)),
        [
            (80, None, attributes(&[("routing.http.response.x_frame_options.header_value", "DENY")])),
            (443, by_params, attributes(&[("routing.http.response.server.enabled", "false")])),
        ],
        "the params win"
    );
}

/// IngressClassParams `ipAddressType` replaces `ip-address-type`: the ALB's address type, and a
/// dualstack ALB's frontend security group admits IPv6 too.
#[test]
fn class_params_ip_address_type_sets_the_alb_and_its_frontend_rules() {
    use crate::crd::IngressClassParamsSpec;
    use crate::crd::ingress_class_params::ParamsIpAddressType;
    let g = implicit("shop", "web");
    let mut c = ctx();
    c.ipv6_available = true;
    let built = |m: Member| {
        let st = build(&g, &[m], &echo(), &c).unwrap();
        let sources: Vec<RuleSource> =
            st.stack.frontend_security_group.as_ref().unwrap().ingress.iter().map(|r| r.source.clone()).collect();
        (st.stack.load_balancer.ip_address_type, sources)
    };
    let with = |t| IngressClassParamsSpec { ip_address_type: Some(t), ..Default::default() };
    let v4 = (LbIpAddressType::Ipv4, vec![RuleSource::Cidr("0.0.0.0/0".into())]);
    let dual =
        (LbIpAddressType::Dualstack, vec![RuleSource::Cidr("0.0.0.0/0".into()), RuleSource::Ipv6Cidr("::/0".into())]);
    assert_eq!(built(web(&[IP])), v4, "the default");
    assert_eq!(built(web_with_params(&[IP], &with(ParamsIpAddressType::Dualstack))), dual);
    let ann = [IP, ("ip-address-type", "dualstack")];
    assert_eq!(built(web(&ann)), dual);
    assert_eq!(built(web_with_params(&ann, &with(ParamsIpAddressType::Ipv4))), v4, "the params win");
    let err = build(&g, &[web_with_params(&[IP], &with(ParamsIpAddressType::Dualstack))], &echo(), &ctx())
        .unwrap_err()
        .to_string();
    assert!(err.contains("IPv6 CIDR"), "{err}");
}

/// IngressClassParams `prefixListsIDs` (and its legacy spelling `PrefixListsIDs`) replaces
/// `security-group-prefix-lists`: the frontend security group admits those prefix lists on the
/// listener ports instead of everyone.
#[test]
fn class_params_prefix_lists_become_the_frontend_rules() {
    use crate::crd::IngressClassParamsSpec;
    let g = implicit("shop", "web");
    let rules = |m: Member| -> Vec<(i32, RuleSource)> {
        let st = build(&g, &[m], &echo(), &ctx()).unwrap();
        st.stack.frontend_security_group.unwrap().ingress.into_iter().map(|r| (r.from_port, r.source)).collect()
    };
    let list = |id: &str| RuleSource::PrefixList(id.into());
    assert_eq!(rules(web(&[IP])), [(80, RuleSource::Cidr("0.0.0.0/0".into()))], "the default: everyone");
    let ann = [IP, ("security-group-prefix-lists", "pl-ann")];
    assert_eq!(rules(web(&ann)), [(80, list("pl-ann"))]);
    let p = IngressClassParamsSpec { prefix_lists_ids: vec!["pl-1".into()], ..Default::default() };
    assert_eq!(rules(web_with_params(&[IP], &p)), [(80, list("pl-1"))]);
    assert_eq!(rules(web_with_params(&ann, &p)), [(80, list("pl-1"))], "the params win");
    let both = IngressClassParamsSpec {
        prefix_lists_ids: vec!["pl-1".into()],
        prefix_lists_ids_legacy: vec!["pl-2".into(), "pl-1".into()],
        ..Default::default()
    };
    assert_eq!(rules(web_with_params(&[IP], &both)), [(80, list("pl-1")), (80, list("pl-2"))]);
}

/// IngressClassParams `minimumLoadBalancerCapacity` and `wafv2AclName` replace their annotations
/// in what is asked of AWS besides the stack; the name wins over an ARN, as ALBC.
#[test]
fn class_params_capacity_and_web_acl_name_become_extras() {
    use crate::crd::IngressClassParamsSpec;
    use crate::crd::ingress_class_params::MinimumCapacity;
    let g = implicit("shop", "web");
    let extras = |m: Member| build(&g, &[m], &echo(), &ctx()).unwrap().extras;
    assert_eq!(extras(web(&[IP])), WantedExtras::default(), "nothing asked: AWS left alone");
    let p = IngressClassParamsSpec {
        minimum_load_balancer_capacity: Some(MinimumCapacity { capacity_units: 200 }),
        wafv2_acl_name: Some("class-acl".into()),
        ..Default::default()
    };
    let want = WantedExtras {
        minimum_capacity_units: Some(200),
        web_acl: Some(WebAclWanted::Name("class-acl".into())),
        ..WantedExtras::default()
    };
    assert_eq!(extras(web_with_params(&[IP], &p)), want);
    let ann = [IP, ("minimum-load-balancer-capacity", "CapacityUnits=100"), ("wafv2-acl-name", "shop-acl")];
    let by_annotation = extras(web(&ann));
    assert_eq!(
        (by_annotation.minimum_capacity_units, by_annotation.web_acl),
        (Some(100), Some(WebAclWanted::Name("shop-acl".into())))
    );
    assert_eq!(extras(web_with_params(&ann, &p)), want, "the params win");
    let arn = ("wafv2-acl-arn", "arn:aws:wafv2:us-east-1:1:regional/webacl/w/1");
    let st = build(&g, &[web_with_params(&[IP, arn], &p)], &echo(), &ctx()).unwrap();
    assert_eq!(st.extras.web_acl, Some(WebAclWanted::Name("class-acl".into())), "the name wins over the ARN");
    assert!(st.warnings.iter().any(|w| w.contains("the name is used, the ARN ignored")), "{:?}", st.warnings);
}

// Health-check counts, auth session settings and multi-cluster target groups: what reaches AWS.

#[test]
fn ingress_health_check_annotations_reach_the_target_group() {
    let hc = |ann: &[(&str, &str)]| {
        let st = build(&implicit("shop", "web"), &[web(&[&[IP], ann].concat())], &echo(), &ctx()).expect("builds");
        let [tg] = st.stack.target_groups.as_slice() else { panic!("{:?}", st.stack.target_groups) };
        let h = tg.health_check.clone();
        (
            h.protocol,
            h.port,
            h.path,
            h.success_codes,
            h.interval_seconds,
            h.timeout_seconds,
            h.healthy_threshold,
            h.unhealthy_threshold,
        )
    };
    let defaults = (Protocol::Http, HealthCheckPort::TrafficPort, Some("/".into()), Some("200".into()), 15, 5, 2, 2);
    assert_eq!(hc(&[]), defaults);
    let ann = [
        ("healthcheck-protocol", "HTTPS"),
        ("healthcheck-path", "/ready"),
        ("healthcheck-interval-seconds", "20"),
        ("healthcheck-timeout-seconds", "7"),
        ("healthy-threshold-count", "4"),
        ("unhealthy-threshold-count", "6"),
        ("success-codes", "200-299"),
    ];
    let want =
        (Protocol::Https, HealthCheckPort::TrafficPort, Some("/ready".into()), Some("200-299".into()), 20, 7, 4, 6);
    assert_eq!(hc(&ann), want);
}

#[test]
fn ingress_auth_session_annotations_reach_the_authenticate_action() {
    let cognito = r#"{"userPoolARN":"arn:aws:cognito-idp:us-east-1:123456789012:userpool/us-east-1_x",
        "userPoolClientID":"app","userPoolDomain":"auth.example.com"}"#;
    let base = [
        ("listen-ports", r#"[{"HTTPS":443}]"#),
        ("certificate-arn", "arn:c1"),
        ("auth-type", "cognito"),
        ("auth-idp-cognito", cognito),
    ];
    let session = |ann: &[(&str, &str)]| {
        let st = build(&implicit("shop", "web"), &[web(&[&[IP], ann].concat())], &echo(), &ctx()).expect("builds");
        let r = &st.stack.listeners[0].rules[0];
        let Action::AuthenticateCognito(c) = &r.actions[0] else { panic!("{:?}", r.actions) };
        (
            c.scope.clone(),
            c.session_cookie_name.clone(),
            c.session_timeout_seconds,
            c.on_unauthenticated_request.clone(),
        )
    };
    let defaults = session(&base);
    let mut ann = base.to_vec();
    ann.extend([
        ("auth-scope", "email openid"),
        ("auth-session-cookie", "shop-session"),
        ("auth-session-timeout", "3600"),
        ("auth-on-unauthenticated-request", "deny"),
    ]);
    let want = (Some("email openid".into()), Some("shop-session".into()), Some(3600), Some("deny".into()));
    assert_eq!(session(&ann), want);
    assert_ne!(defaults.0, want.0);
    assert_ne!(defaults.1, want.1);
    assert_ne!(defaults.2, want.2);
    assert_ne!(defaults.3, want.3);
}

#[test]
fn ingress_multi_cluster_target_group_marks_the_binding() {
    let marked = |ann: &[(&str, &str)]| {
        let st = build(&implicit("shop", "web"), &[web(&[&[IP], ann].concat())], &echo(), &ctx()).expect("builds");
        let [b] = st.bindings.as_slice() else { panic!("{:?}", st.bindings) };
        b.spec.multi_cluster_target_group
    };
    assert_eq!(marked(&[]), None);
    assert_eq!(marked(&[("multi-cluster-target-group", "true")]), Some(true));
    assert_eq!(marked(&[("multi-cluster-target-group", "false")]), None);
}
