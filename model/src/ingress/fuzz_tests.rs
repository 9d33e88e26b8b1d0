//! Deterministic randomized tests (fastrand with a fixed seed keeps failures reproducible): no
//! Ingress parser panics on arbitrary annotation maps and errors always say why; the group merge,
//! rule builder and plan never panic on arbitrary members and Services, and give the same answer
//! twice.

use std::collections::BTreeMap;

use super::keys::{self as k, full_key};
use super::{Candidate, apply_params, conflicts, members, parse_annotations, parse_service_annotations};
use crate::service::fuzz_tests::{junk, pick};

const KEYS: &[&str] = &[
    k::GROUP_NAME,
    k::GROUP_ORDER,
    k::LOAD_BALANCER_NAME,
    k::SCHEME,
    k::IP_ADDRESS_TYPE,
    k::SUBNETS,
    k::LISTEN_PORTS,
    k::SSL_REDIRECT,
    k::INBOUND_CIDRS,
    k::CERTIFICATE_ARN,
    k::TARGET_TYPE,
    k::SUCCESS_CODES,
    k::HC_PORT,
    k::AUTH_IDP_OIDC,
    k::AUTH_IDP_COGNITO,
    k::MINIMUM_CAPACITY,
    k::TAGS,
    "actions.a",
    "conditions.a",
    "actions.s",
    "conditions.s",
    k::SSL_POLICY,
    k::SSL_REDIRECT,
    k::AUTH_TYPE,
    k::USE_REGEX_PATH_MATCH,
    k::SECURITY_GROUP_PREFIX_LISTS,
    "listener-attributes.HTTP-80",
    "listener-attributes.HTTPS-443",
    "listener-attributes.",
    "transforms.t",
    "transforms.s",
    k::JWT_VALIDATION,
    "frontend-nlb-scheme",
    "typo",
];
const VALUES: &[&str] = &[
    "",
    " ",
    ",",
    "=",
    "true",
    "0",
    "-1000",
    "1001",
    "80",
    "internal",
    "ip",
    "team.a",
    "[]",
    "{}",
    "[{}]",
    r#"[{"HTTP":80},{"HTTPS":443}]"#,
    r#"[{"HTTP":-1}]"#,
    r#"{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":"s","servicePort":80}]}}"#,
    r#"{"type":"redirect","redirectConfig":{"statusCode":1}}"#,
    r#"[{"field":"query-string","queryStringConfig":{"values":[1,{"key":null}]}}]"#,
    r#"{"issuer":[],"secretName":{}}"#,
    "CapacityUnits=9999999999",
    "a=b,c",
    "10.0.0.0/8",
    "200-299,0",
    "ünï",
    "443",
    "oidc",
    "pl-1",
    "a=1",
    r#"{"type":"redirect","redirectConfig":{"protocol":"HTTPS","port":"443","statusCode":"HTTP_301"}}"#,
    r#"{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":"s","servicePort":"http"},{"serviceName":"t","servicePort":1}]}}"#,
    r#"[{"field":"host-header","hostHeaderConfig":{"regexValues":["^a"]}}]"#,
    r#"[{"field":"http-header","httpHeaderConfig":{"httpHeaderName":"X","regexValues":["^a"]}}]"#,
    r#"[{"type":"url-rewrite","urlRewriteConfig":{"rewrites":[{"regex":"^/a/(.*)$","replace":"/$1"}]}}]"#,
    r#"{"jwksEndpoint":"https://idp/jwks","issuer":"https://idp"}"#,
    r#"[{"field":"path-pattern","pathPatternConfig":{"values":["/x"]}}]"#,
    "\u{0}",
];

#[test]
fn parsers_never_panic() {
    let mut r = fastrand::Rng::with_seed(0x001a_9e55);
    let mut candidates = Vec::new();
    for i in 0..3000 {
        let mut ann = BTreeMap::new();
        for _ in 0..r.usize(..8) {
            let key = if r.u8(..10) == 0 { junk(&mut r) } else { pick(&mut r, KEYS).to_string() };
            let value = pick(&mut r, VALUES).to_string();
            ann.insert(full_key(&key), value);
        }
        match parse_annotations(&ann, "ns") {
            Ok(s) => {
                let s = apply_params(&s, None, "none").unwrap();
                candidates.push(Candidate {
                    namespace: "ns".into(),
                    name: format!("i{i}"),
                    deleting: r.bool(),
                    settings: s,
                });
            }
            Err(e) => assert!(!e.0.is_empty() && e.0.iter().all(|x| !x.expected.is_empty())),
        }
        let _ = parse_service_annotations(&ann);
    }
    assert!(candidates.len() > 100, "the generator also produces valid Ingresses ({})", candidates.len());
    for c in &candidates {
        if let Some(id) = super::group_of(c) {
            let _ = conflicts(&members(&id, &candidates));
        }
    }
}

const PATHS: &[&str] = &["", "/", "/a", "/a/", "/a*", "/b?", "a", "/ü", "//"];
const PATH_TYPES: &[&str] = &["Exact", "Prefix", "ImplementationSpecific", "", "Other"];
const SERVICES: &[&str] = &["s", "t", "a", "missing"];

fn random_backend(r: &mut fastrand::Rng) -> k8s_openapi::api::networking::v1::IngressBackend {
    use super::test_fixtures::{P, backend};
    let svc = pick(r, SERVICES);
    match r.u8(..5) {
        0 => backend(svc, P::S("use-annotation")),
        1 => backend(svc, P::S("http")),
        2 => k8s_openapi::api::networking::v1::IngressBackend::default(),
        _ => backend(svc, P::N(r.i32(0..3))),
    }
}

#[test]
fn group_plan_never_panics_and_is_deterministic() {
    use k8s_openapi::api::networking::v1::{HTTPIngressPath, HTTPIngressRuleValue, IngressRule, IngressSpec};

    use super::backends::ServiceView;
    use super::merge::{IngressKey, Member, MergeConfig};
    use super::plan_group;

    let mut r = fastrand::Rng::with_seed(0x9a0_0009);
    let mut services = super::Services::new();
    services
        .insert(("ns".into(), "s".into()), ServiceView { ports: vec![(Some("http".into()), 1)], ..Default::default() });
    services.insert(("ns".into(), "t".into()), ServiceView { ports: vec![(None, 1), (None, 2)], ..Default::default() });
    for v in services.values_mut() {
        v.uid = "uid-1".into();
    }
    let mut ctx = crate::lb::build::BuildContext::new("prod", "vpc-1");
    ctx.subnets = ["a", "b"]
        .iter()
        .map(|z| crate::lb::Subnet {
            id: format!("subnet-{z}"),
            vpc_id: "vpc-1".into(),
            availability_zone: format!("az-{z}"),
            cidr: "10.0.0.0/24".into(),
            ipv6_cidrs: vec![],
            available_ips: 10,
            tags: Default::default(),
        })
        .collect();
    ctx.default_target_type = crate::crd::TargetType::Ip;
    let (mut built, mut failed, mut stacks) = (0, 0, 0);
    for round in 0..1500 {
        let mut members = Vec::new();
        for i in 0..r.usize(1..4) {
            let mut ann = BTreeMap::new();
            for _ in 0..r.usize(..5) {
                ann.insert(full_key(pick(&mut r, KEYS)), pick(&mut r, VALUES).to_string());
            }
            let Ok(settings) = parse_annotations(&ann, "ns") else { continue };
            let rules = (0..r.usize(..3))
                .map(|_| IngressRule {
                    host: r.bool().then(|| "h.example.com".to_string()),
                    http: r.u8(..5).ne(&0).then(|| HTTPIngressRuleValue {
                        paths: (0..r.usize(..4))
                            .map(|_| HTTPIngressPath {
                                path: Some(pick(&mut r, PATHS).to_string()),
                                path_type: pick(&mut r, PATH_TYPES).to_string(),
                                backend: random_backend(&mut r),
                            })
                            .collect(),
                    }),
                })
                .collect();
            let default_backend = (r.u8(..4) == 0).then(|| random_backend(&mut r));
            let spec = IngressSpec { rules: Some(rules), default_backend, ..Default::default() };
            let key = IngressKey { namespace: "ns".into(), name: format!("i{round}-{i}") };
            let discovered_certificates = if r.bool() { vec!["arn:d".into()] } else { vec![] };
            members.push(Member { key, settings, spec, discovered_certificates });
        }
        let first = plan_group(&members, &services, &MergeConfig::default());
        assert_eq!(first, plan_group(&members, &services, &MergeConfig::default()), "deterministic");
        match first {
            Ok(p) => {
                built += 1;
                for l in &p.rules {
                    let prios: Vec<u32> = l.rules.iter().map(|x| x.priority).collect();
                    assert_eq!(prios, (1..=prios.len() as u32).collect::<Vec<_>>());
                    assert!(!l.default_actions.is_empty());
                }
                // The stack builder never panics either, and explains every refusal.
                let group = super::GroupId::Explicit(format!("g{round}"));
                match super::build_group_stack(&group, &members, &p, &ctx) {
                    Ok(st) => {
                        stacks += 1;
                        assert_eq!(st.stack.listeners.len(), p.listeners.len());
                        assert_eq!(st.bindings.len(), st.stack.target_groups.len());
                    }
                    Err(e) => assert!(!e.problems.is_empty() && e.problems.iter().all(|x| !x.is_empty())),
                }
            }
            Err(e) => {
                failed += 1;
                assert!(!e.is_empty() && e.iter().all(|x| !x.to_string().is_empty()));
            }
        }
    }
    assert!(built > 100 && failed > 100, "both outcomes are exercised ({built} built, {failed} failed)");
    assert!(stacks > 50, "stacks are built ({stacks} of {built})");
}
