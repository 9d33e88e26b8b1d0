//! Deterministic randomized test: no Ingress parser panics on arbitrary annotation maps
//! (fastrand with a fixed seed keeps failures reproducible), and errors always say why.

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
    "listener-attributes.HTTPS-443",
    "listener-attributes.",
    "transforms.t",
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
    "\u{0}",
];

#[test]
fn parsers_never_panic() {
    let mut r = fastrand::Rng::with_seed(0x1a9e_55);
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
                let s = apply_params(&s, None);
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
