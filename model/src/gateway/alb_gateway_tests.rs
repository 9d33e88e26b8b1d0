use super::*;
use crate::gateway::api::{
    AllowedRoutes, GatewaySpec, HTTPBackendRef, HTTPPathMatch, HTTPRouteMatch, HTTPRouteRule, HTTPRouteSpec,
    Listener as GwListener, RouteNamespaces,
};
use crate::gateway::certificates::SecretData;
use crate::gateway::refs::{GrantFrom, GrantTo};
use crate::lb::build::BuildContext;
use crate::lb::{Action, Condition, Subnet, TargetGroupRef, TgIpAddressType};
use crate::lb::{Protocol, Tags};
use serde_json::json;

fn listener(name: &str, port: i32, protocol: &str, from: &str) -> GwListener {
    GwListener {
        name: name.into(),
        port,
        protocol: protocol.into(),
        allowed_routes: Some(AllowedRoutes {
            namespaces: Some(RouteNamespaces { from: Some(from.into()), selector: None }),
            kinds: vec![],
        }),
        ..Default::default()
    }
}

fn gateway(listeners: Vec<GwListener>) -> Gateway {
    let mut g = Gateway::new("gw", GatewaySpec { gateway_class_name: "alb".into(), listeners, infrastructure: None });
    g.metadata.namespace = Some("infra".into());
    g.metadata.uid = Some("uid-1".into());
    g
}

fn backend(ns: Option<&str>, name: &str, port: i32) -> HTTPBackendRef {
    HTTPBackendRef { name: name.into(), namespace: ns.map(Into::into), port: Some(port), ..Default::default() }
}

fn route(ns: &str, name: &str, rules: Vec<HTTPRouteRule>) -> HTTPRoute {
    let mut r = HTTPRoute::new(
        name,
        HTTPRouteSpec {
            parent_refs: vec![ParentReference {
                name: "gw".into(),
                namespace: Some("infra".into()),
                ..Default::default()
            }],
            hostnames: vec![],
            rules,
        },
    );
    r.metadata.namespace = Some(ns.into());
    r.metadata.generation = Some(3);
    r
}

fn prefix_rule(path: &str, backends: Vec<HTTPBackendRef>) -> HTTPRouteRule {
    HTTPRouteRule {
        matches: vec![HTTPRouteMatch {
            path: Some(HTTPPathMatch { type_: Some("PathPrefix".into()), value: Some(path.into()) }),
            ..Default::default()
        }],
        backend_refs: backends,
        ..Default::default()
    }
}

fn services() -> BTreeMap<(String, String), ServiceView> {
    let view = |uid: &str| ServiceView {
        ports: vec![(Some("http".into()), 8080)],
        uid: uid.into(),
        target_ports: BTreeMap::from([(8080, IntOrString::Int(3000))]),
        ..Default::default()
    };
    BTreeMap::from([(("infra".into(), "web".into()), view("svc-1")), (("apps".into(), "api".into()), view("svc-2"))])
}

fn cfg() -> PlanConfig {
    PlanConfig { cluster_name: "prod".into(), default_target_type: TargetType::Ip }
}

fn ctx() -> BuildContext {
    let mut c = BuildContext::new("prod", "vpc-1");
    c.subnets = ["a", "b"]
        .iter()
        .map(|z| Subnet {
            id: format!("subnet-{z}"),
            vpc_id: "vpc-1".into(),
            availability_zone: format!("eu-west-1{z}"),
            cidr: "10.0.0.0/24".into(),
            ipv6_cidrs: vec![],
            available_ips: 200,
            tags: Tags::new(),
        })
        .collect();
    c.backend_security_group = Some("sg-backend".into());
    c
}

fn run(gw: &Gateway, routes: &[HTTPRoute], grants: &[Grant]) -> GatewayPlan {
    plan_with(gw, routes, grants, &services(), &cfg())
}

fn plan_with(
    gw: &Gateway,
    routes: &[HTTPRoute],
    grants: &[Grant],
    services: &BTreeMap<(String, String), ServiceView>,
    config: &PlanConfig,
) -> GatewayPlan {
    plan_with_secrets(gw, routes, grants, services, config, &BTreeMap::new())
}

fn plan_with_secrets(
    gw: &Gateway,
    routes: &[HTTPRoute],
    grants: &[Grant],
    services: &BTreeMap<(String, String), ServiceView>,
    config: &PlanConfig,
    secrets: &BTreeMap<(String, String), SecretData>,
) -> GatewayPlan {
    let labels = |_: &str| Some(BTreeMap::new());
    let s = Snapshot {
        gateway: gw,
        class_parameters: None,
        routes: routes.iter().collect(),
        grpc_routes: vec![],
        grants,
        services,
        secrets: Some(secrets),
        namespace_labels: &labels,
    };
    plan(&s, config)
}

fn cond<'a>(p: &'a GatewayPlan, route: &str, type_: &str) -> &'a Cond {
    let r = p.routes.iter().find(|r| r.name == route).expect("route outcome");
    find(&r.parents[0].1, type_).expect("condition")
}

#[test]
fn one_route_builds_one_listener_rule_and_target_group_named_as_albc_names_them() {
    let gw = gateway(vec![listener("http", 80, "HTTP", "Same")]);
    let p = run(&gw, &[route("infra", "r", vec![prefix_rule("/api", vec![backend(None, "web", 8080)])])], &[]);
    assert_eq!(cond(&p, "r", ACCEPTED).status, CondStatus::True);
    assert_eq!(cond(&p, "r", RESOLVED_REFS).status, CondStatus::True);
    assert_eq!(p.attached["http"], 1);
    assert_eq!(p.ports, BTreeMap::from([(80, Protocol::Http)]));
    let built = build(&p, &ctx(), &BTreeMap::new()).expect("builds");
    let lb = &built.stack.load_balancer;
    // ALBC: sha256(cluster, UID, scheme) for the ALB; (cluster, name, namespace, UID) for its group.
    assert_eq!(lb.name, "k8s-infra-gw-08a1ef1b79");
    assert_eq!(built.stack.frontend_security_group.as_ref().unwrap().name, "k8s-infra-gw-f6032c4c2e");
    assert_eq!(lb.tags["gateway.k8s.aws.alb/stack"], "infra/gw");
    assert_eq!(lb.tags["elbv2.k8s.aws/cluster"], "prod");
    let l = &built.stack.listeners[0];
    assert_eq!((l.port, l.default_actions.clone()), (80, vec![crate::gateway::actions::listener_default()]));
    assert_eq!(l.tags["gateway.k8s.aws.alb/resource"], "80");
    let tg = &built.stack.target_groups[0];
    assert_eq!(tg.port, 3000, "the Service port's targetPort, for ip targets");
    // ALBC hashes the targetPort (its identifier port), not the Service port.
    let want = naming::gateway_target_group_name(&GatewayTargetGroupNameInputs {
        cluster: "prod",
        gateway_namespace: "infra",
        gateway_name: "gw",
        route_namespace: "infra",
        route_name: "r",
        route_kind: "HTTPRoute",
        service_namespace: "infra",
        service_name: "web",
        port: "3000",
        target_type: "ip",
        protocol: "HTTP",
        protocol_version: Some("HTTP1"),
        target_control_port: None,
    });
    assert_eq!(tg.name, want);
    assert_eq!(tg.tags["gateway.k8s.aws.alb/resource"], "infra/gw:infra-r:HTTPRoute-infra-web:3000");
    assert_eq!((tg.health_check.healthy_threshold, tg.health_check.success_codes.as_deref()), (3, Some("200-399")));
    let rule = &l.rules[0];
    assert_eq!(rule.priority, 1);
    assert_eq!(rule.tags["gateway.k8s.aws.alb/resource"], "80:1");
    assert_eq!(rule.conditions, vec![Condition::PathPattern(vec!["/api".into(), "/api/*".into()])]);
    match &rule.actions[0] {
        Action::Forward { target_groups, .. } => {
            assert_eq!(target_groups[0].target_group, TargetGroupRef::Name(tg.name.clone()))
        }
        other => panic!("forward expected, got {other:?}"),
    }
    let b = &built.bindings[0];
    assert_eq!((b.namespace.as_str(), b.name.as_str()), ("infra", tg.name.as_str()));
    assert_eq!(b.spec.service_ref.port, IntOrString::Int(8080));
    assert_eq!(
        built.stack.frontend_security_group.unwrap().ingress.iter().map(|r| r.from_port).collect::<Vec<_>>(),
        vec![80]
    );
    let status = gateway_status(&p, &LbState::Active { arn: "arn:lb".into(), dns_name: "K8s-Infra.elb".into() });
    assert_eq!(status.addresses, vec![("Hostname", "k8s-infra.elb".to_string())]);
    let prog = find(&status.listeners[0].conditions, PROGRAMMED).unwrap();
    assert_eq!((prog.status, status.listeners[0].attached_routes), (CondStatus::True, 1));
}

#[test]
fn a_route_the_listeners_do_not_allow_builds_nothing() {
    let gw = gateway(vec![listener("http", 80, "HTTP", "Same")]);
    let p = run(&gw, &[route("apps", "r", vec![prefix_rule("/", vec![backend(None, "api", 8080)])])], &[]);
    assert_eq!(cond(&p, "r", ACCEPTED).reason, REASON_NOT_ALLOWED_BY_LISTENERS);
    assert_eq!(p.attached["http"], 0);
    assert!(p.ports.is_empty() && p.target_groups.is_empty());
    let built = build(&p, &ctx(), &BTreeMap::new()).unwrap();
    assert!(built.stack.listeners.is_empty(), "no ELB listener without attached routes (ALBC)");
    // The frontend group still opens the Gateway's listener ports.
    assert_eq!(built.stack.frontend_security_group.unwrap().ingress.len(), 1);
}

#[test]
fn routes_of_other_namespaces_are_ignored_unless_they_name_the_gateway() {
    let gw = gateway(vec![listener("http", 80, "HTTP", "All")]);
    let mut other = route("apps", "elsewhere", vec![prefix_rule("/", vec![backend(None, "api", 8080)])]);
    other.spec.parent_refs[0].name = "another".into();
    let p = run(&gw, &[other], &[]);
    assert!(p.routes.is_empty());
}

#[test]
fn a_backend_across_namespaces_needs_a_grant_and_answers_500_without_one() {
    let gw = gateway(vec![listener("http", 80, "HTTP", "Same")]);
    let r = route("infra", "r", vec![prefix_rule("/", vec![backend(Some("apps"), "api", 8080)])]);
    let p = run(&gw, std::slice::from_ref(&r), &[]);
    assert_eq!(cond(&p, "r", ACCEPTED).status, CondStatus::True, "the route stays accepted");
    assert_eq!(cond(&p, "r", RESOLVED_REFS).reason, REASON_REF_NOT_PERMITTED);
    assert!(p.target_groups.is_empty());
    let built = build(&p, &ctx(), &BTreeMap::new()).unwrap();
    assert_eq!(built.stack.listeners[0].rules[0].actions, vec![crate::gateway::actions::no_backend()]);
    let grant = Grant {
        namespace: "apps".into(),
        from: vec![GrantFrom {
            group: crate::gateway::GROUP.into(),
            kind: "HTTPRoute".into(),
            namespace: "infra".into(),
        }],
        to: vec![GrantTo { group: String::new(), kind: "Service".into(), name: None }],
    };
    let p = run(&gw, &[r], &[grant]);
    assert_eq!(cond(&p, "r", RESOLVED_REFS).status, CondStatus::True);
    let built = build(&p, &ctx(), &BTreeMap::new()).unwrap();
    assert_eq!(built.bindings[0].namespace, "apps", "the binding lives with its Service");
}

#[test]
fn a_missing_service_or_port_is_backend_not_found() {
    let gw = gateway(vec![listener("http", 80, "HTTP", "Same")]);
    let p = run(&gw, &[route("infra", "r", vec![prefix_rule("/", vec![backend(None, "web", 9999)])])], &[]);
    let c = cond(&p, "r", RESOLVED_REFS);
    assert_eq!(c.reason, REASON_BACKEND_NOT_FOUND);
    assert!(c.message.contains("no port 9999; its ports: 8080"), "{}", c.message);
    let p = run(&gw, &[route("infra", "r", vec![prefix_rule("/", vec![backend(None, "gone", 80)])])], &[]);
    assert_eq!(cond(&p, "r", RESOLVED_REFS).reason, REASON_BACKEND_NOT_FOUND);
}

#[test]
fn an_unsupported_filter_refuses_the_route_and_builds_none_of_it() {
    let gw = gateway(vec![listener("http", 80, "HTTP", "Same")]);
    let mut rule = prefix_rule("/", vec![backend(None, "web", 8080)]);
    rule.filters = vec![json!({"type": "RequestMirror", "requestMirror": {}})];
    let p = run(&gw, &[route("infra", "r", vec![rule])], &[]);
    let c = cond(&p, "r", ACCEPTED);
    assert_eq!((c.status, c.reason), (CondStatus::False, REASON_UNSUPPORTED_VALUE));
    assert!(c.message.contains("RequestMirror"));
    assert!(p.target_groups.is_empty() && p.ports.is_empty());
    assert_eq!(p.attached["http"], 0, "a refused route is not attached");
}

fn https_listener(name: &str, secret: Option<&str>) -> GwListener {
    let tls = secret.map(|n| crate::gateway::api::ListenerTls {
        mode: None,
        certificate_refs: vec![crate::gateway::api::SecretObjectReference {
            group: Some(String::new()),
            kind: Some("Secret".into()),
            name: n.into(),
            namespace: None,
        }],
    });
    GwListener { tls, ..listener(name, 443, "HTTPS", "Same") }
}

fn tls_secrets() -> BTreeMap<(String, String), SecretData> {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["a.example.com".to_string()]).unwrap().self_signed(&key).unwrap();
    let data = SecretData {
        type_: crate::gateway::certificates::TLS_SECRET_TYPE.into(),
        crt: Some(cert.pem().into_bytes()),
        key: Some(key.serialize_pem().into_bytes()),
    };
    BTreeMap::from([(("infra".to_string(), "tls".to_string()), data)])
}

#[test]
fn an_https_listener_with_routes_and_no_usable_certificate_refuses_the_whole_gateway() {
    let gw = gateway(vec![listener("http", 80, "HTTP", "Same"), https_listener("https", Some("absent"))]);
    let p = run(&gw, &[route("infra", "r", vec![prefix_rule("/", vec![backend(None, "web", 8080)])])], &[]);
    assert_eq!(p.ports.keys().copied().collect::<Vec<_>>(), vec![80]);
    assert!(p.not_programmed["https"].contains("Secret infra/absent not found"), "{:?}", p.not_programmed);
    let err = build(&p, &ctx(), &BTreeMap::new()).unwrap_err();
    assert!(err.problems[0].contains("nothing of the Gateway is changed in AWS"), "{err}");
    let status = gateway_status(&p, &LbState::Active { arn: "a".into(), dns_name: "d".into() });
    let https = status.listeners.iter().find(|l| l.name == "https").unwrap();
    assert_eq!(find(&https.conditions, PROGRAMMED).unwrap().status, CondStatus::False);
    let refs = find(&https.conditions, RESOLVED_REFS).unwrap();
    assert_eq!((refs.status, refs.reason), (CondStatus::False, "InvalidCertificateRef"));
}

#[test]
fn an_https_listener_without_routes_and_a_bad_certificate_is_not_programmed_and_blocks_nothing() {
    let gw = gateway(vec![listener("http", 80, "HTTP", "Same"), https_listener("https", None)]);
    let p = run(&gw, &[], &[]);
    assert!(p.not_programmed.is_empty());
    assert!(p.certificates_refused["https"].contains("without tls.certificateRefs"));
    assert!(build(&p, &ctx(), &BTreeMap::new()).is_ok());
    let status = gateway_status(&p, &LbState::Active { arn: "a".into(), dns_name: "d".into() });
    let https = status.listeners.iter().find(|l| l.name == "https").unwrap();
    assert_eq!(find(&https.conditions, PROGRAMMED).unwrap().status, CondStatus::False);
    assert_eq!(find(&https.conditions, RESOLVED_REFS).unwrap().status, CondStatus::False);
}

#[test]
fn an_https_listener_with_a_secret_is_built_with_its_imported_certificate() {
    let gw = gateway(vec![listener("http", 80, "HTTP", "Same"), https_listener("https", Some("tls"))]);
    let routes = [route("infra", "r", vec![prefix_rule("/", vec![backend(None, "web", 8080)])])];
    let p = plan_with_secrets(&gw, &routes, &[], &services(), &cfg(), &tls_secrets());
    assert_eq!(p.ports, BTreeMap::from([(80, Protocol::Http), (443, Protocol::Https)]));
    assert_eq!(p.wanted_certificates().iter().map(|c| c.secret()).collect::<Vec<_>>(), vec!["infra/tls"]);
    assert_eq!(p.attached["https"], 1);
    // Not imported yet: the build says so rather than making a listener without its certificate.
    let err = build(&p, &ctx(), &BTreeMap::new()).unwrap_err();
    assert!(err.problems[0].contains("Secret infra/tls is not in ACM yet"), "{err}");
    let arns = BTreeMap::from([("infra/tls".to_string(), "arn:aws:acm:us-west-2:1:certificate/x".to_string())]);
    let built = build(&p, &ctx(), &arns).unwrap();
    let l443 = built.stack.listeners.iter().find(|l| l.port == 443).unwrap();
    assert_eq!(l443.certificates, vec!["arn:aws:acm:us-west-2:1:certificate/x".to_string()]);
    assert_eq!(l443.ssl_policy.as_deref(), Some(crate::lb::build::DEFAULT_SSL_POLICY));
    assert_eq!(l443.rules.len(), built.stack.listeners.iter().find(|l| l.port == 80).unwrap().rules.len());
    let l80 = built.stack.listeners.iter().find(|l| l.port == 80).unwrap();
    assert!(l80.certificates.is_empty() && l80.ssl_policy.is_none());
}

#[test]
fn problems_block_the_build_with_every_reason() {
    let gw = gateway(vec![listener("http", 80, "HTTP", "Same")]);
    let p = run(&gw, &[route("infra", "r", vec![prefix_rule("/", vec![backend(None, "web", 8080)])])], &[]);
    let mut one_zone = ctx();
    one_zone.subnets.truncate(1);
    let err = build(&p, &one_zone, &BTreeMap::new()).unwrap_err();
    assert!(err.problems[0].contains("two Availability Zones"), "{err}");
    // Instance targets need a nodePort.
    let instance = PlanConfig { default_target_type: TargetType::Instance, ..cfg() };
    let routes = [route("infra", "r", vec![prefix_rule("/", vec![backend(None, "web", 8080)])])];
    let err = build(&plan_with(&gw, &routes, &[], &services(), &instance), &ctx(), &BTreeMap::new()).unwrap_err();
    assert!(err.problems[0].contains("nodePort"), "{err}");
}

#[test]
fn more_rules_than_an_alb_listener_takes_is_refused() {
    let gw = gateway(vec![listener("http", 80, "HTTP", "Same")]);
    let rules: Vec<HTTPRouteRule> = (0..=RULES_PER_LISTENER_MAX)
        .map(|i| prefix_rule(&format!("/p{i}"), vec![backend(None, "web", 8080)]))
        .collect();
    let p = run(&gw, &[route("infra", "r", rules)], &[]);
    let err = build(&p, &ctx(), &BTreeMap::new()).unwrap_err();
    assert!(err.problems[0].contains("101 rules"), "{err}");
}

#[test]
fn an_unreadable_listener_spec_refuses_the_gateway() {
    let gw = gateway(vec![listener("http", 80, "HTTP", "Elsewhere")]);
    let p = run(&gw, &[], &[]);
    assert_eq!(p.verdict.accepted.reason, REASON_LISTENERS_NOT_VALID);
    assert!(build(&p, &ctx(), &BTreeMap::new()).unwrap_err().problems[0].contains("Elsewhere"));
}

#[test]
fn what_is_not_built_yet_refuses_the_gateway_rather_than_dropping_it() {
    use crate::gateway::api::{GRPCRouteSpec, GatewayInfrastructure};
    let gw = gateway(vec![listener("http", 80, "HTTP", "Same")]);
    let routes = [route("infra", "r", vec![prefix_rule("/", vec![backend(None, "web", 8080)])])];
    let mut grpc =
        GRPCRoute::new("g", GRPCRouteSpec { parent_refs: routes[0].spec.parent_refs.clone(), ..Default::default() });
    grpc.metadata.namespace = Some("infra".into());
    let services = services();
    let labels = |_: &str| Some(BTreeMap::new());
    let s = Snapshot {
        gateway: &gw,
        class_parameters: None,
        routes: routes.iter().collect(),
        grpc_routes: vec![&grpc],
        grants: &[],
        services: &services,
        secrets: None,
        namespace_labels: &labels,
    };
    let p = plan(&s, &cfg());
    assert_eq!(cond(&p, "g", ACCEPTED).reason, REASON_UNSUPPORTED_VALUE);
    assert!(build(&p, &ctx(), &BTreeMap::new()).unwrap_err().problems.iter().any(|e| e.contains("GRPCRoute infra/g")));
    let mut gw = gw.clone();
    gw.spec.infrastructure = Some(GatewayInfrastructure {
        parameters_ref: Some(ParametersReference {
            group: "gateway.k8s.aws".into(),
            kind: "LoadBalancerConfiguration".into(),
            name: "lbc".into(),
            namespace: None,
        }),
    });
    let s = Snapshot { gateway: &gw, grpc_routes: vec![], ..s };
    let err = build(&plan(&s, &cfg()), &ctx(), &BTreeMap::new()).unwrap_err();
    assert!(err.problems[0].contains("LoadBalancerConfiguration lbc"), "{err}");
}

/// The API server gives a headless Service without a selector `ipFamilies: [IPv4, IPv6]` even on a single-stack
/// cluster (the suite's HTTPRouteServiceTypes): its target group is IPv4 on our IPv4 ALB; IPv6 only is refused.
#[test]
fn a_dual_stack_service_gets_an_ipv4_group_and_an_ipv6_only_one_is_refused() {
    let gw = gateway(vec![listener("http", 80, "HTTP", "Same")]);
    let routes = [route("infra", "r", vec![prefix_rule("/api", vec![backend(None, "web", 8080)])])];
    let mut services = services();
    let web = services.get_mut(&("infra".to_string(), "web".to_string())).unwrap();
    web.ipv6 = true;
    let labels = |_: &str| Some(BTreeMap::new());
    let outcome = |services: &BTreeMap<(String, String), ServiceView>| {
        let s = Snapshot {
            gateway: &gw,
            class_parameters: None,
            routes: routes.iter().collect(),
            grpc_routes: vec![],
            grants: &[],
            services,
            secrets: None,
            namespace_labels: &labels,
        };
        build(&plan(&s, &cfg()), &ctx(), &BTreeMap::new())
            .map(|b| b.stack.target_groups.iter().map(|t| t.ip_address_type).collect::<Vec<_>>())
    };
    assert_eq!(outcome(&services).expect("dual stack builds"), vec![TgIpAddressType::Ipv4]);

    services.get_mut(&("infra".to_string(), "web".to_string())).unwrap().ipv6_only = true;
    let problems = outcome(&services).expect_err("IPv6 only is refused");
    let text = problems.to_string();
    assert!(text.contains("IPv6 only") && text.contains("add IPv4"), "{text}");
}

#[test]
fn a_redirect_to_http_on_an_https_listener_refuses_the_route() {
    let gw = gateway(vec![listener("http", 80, "HTTP", "Same"), https_listener("https", Some("tls"))]);
    let mut rule = prefix_rule("/old", vec![]);
    rule.filters = vec![json!({"type": "RequestRedirect", "requestRedirect": {"scheme": "http"}})];
    let to_http = route("infra", "to-http", vec![rule]);
    let mut on_80 = to_http.clone();
    on_80.metadata.name = Some("to-http-80".into());
    on_80.spec.parent_refs[0].section_name = Some("http".into());
    let p = plan_with_secrets(&gw, &[to_http, on_80], &[], &services(), &cfg(), &tls_secrets());
    let refused = cond(&p, "to-http", ACCEPTED);
    assert_eq!((refused.status, refused.reason), (CondStatus::False, REASON_UNSUPPORTED_VALUE));
    assert!(refused.message.contains("cannot redirect HTTPS to HTTP"), "{}", refused.message);
    // The same redirect on the HTTP listener alone is built.
    assert_eq!(cond(&p, "to-http-80", ACCEPTED).status, CondStatus::True);
    assert_eq!(p.rules.by_port.get(&80).map(Vec::len), Some(1));
    assert!(!p.rules.by_port.contains_key(&443));
}
