//! Every annotation parser: arbitrary values under every known key never panic, and every
//! rejection names an annotation the object carries and says what would be accepted.

use lbc_model::annotations::AnnotationErrors;
use proptest::prelude::*;
use serde_json::Value;
use std::collections::BTreeMap;

/// The annotation keys a `keys.rs` declares: `pub const NAME: &str = "suffix";` under its
/// `PREFIX`, so a key added there is fuzzed without touching this file. Suffixes ending in `.`
/// or `-` are families (`actions.<name>`); full keys (with a `/`) are taken as they are.
fn keys_of(source: &str) -> Vec<String> {
    let consts: Vec<(&str, &str)> = source
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub const "))
        .filter_map(|l| l.split_once(": &str = \""))
        .filter_map(|(name, rest)| Some((name, rest.split_once('"')?.0)))
        .collect();
    let prefix = consts.iter().find(|(n, _)| *n == "PREFIX").expect("keys.rs declares PREFIX").1;
    consts
        .iter()
        .filter(|(n, _)| *n != "PREFIX")
        .map(|(_, v)| if v.contains('/') { v.to_string() } else { format!("{prefix}/{v}") })
        .collect()
}

fn key(keys: Vec<String>) -> impl Strategy<Value = String> {
    let family_suffix = prop_oneof![
        Just("rule-1"),
        Just("HTTP-80"),
        Just("TCP-443"),
        Just("80"),
        Just("scheme"),
        Just(""),
        Just("x.y")
    ];
    (proptest::sample::select(keys), family_suffix)
        .prop_map(|(k, s)| if k.ends_with('.') || k.ends_with('-') { format!("{k}{s}") } else { k })
}

const TOKENS: &[&str] = &[
    "true",
    "false",
    "True",
    "1",
    "0",
    "yes",
    "",
    " ",
    "80",
    "443",
    "-1",
    "65536",
    "99999999999",
    "1.5",
    "HTTP",
    "HTTPS",
    "TCP",
    "UDP",
    "TLS",
    "http",
    "ip",
    "instance",
    "internal",
    "internet-facing",
    "dualstack",
    "ipv4",
    "10.0.0.0/8",
    "::/0",
    "10.0.0.1",
    "sg-0123",
    "subnet-1",
    "pl-1",
    "k=v",
    "a=",
    "=b",
    "200-299",
    "200",
    "/health",
    "arn:aws:acm:us-east-1:123456789012:certificate/x",
    "traffic-port",
    "forward",
    "redirect",
    "oidc",
    "cognito",
    "deletion_protection.enabled",
    "HTTP1Only",
    "ELBSecurityPolicy-2016-08",
    "[",
    "]",
    "{",
    "}",
    ":",
    "\"",
    "\\",
    "é",
    "\u{0}",
    "🦀",
];

/// Field names the JSON annotations (actions, conditions, listen-ports, auth) read.
const JSON_KEYS: &[&str] = &[
    "type",
    "forwardConfig",
    "targetGroups",
    "serviceName",
    "servicePort",
    "weight",
    "targetGroupArn",
    "targetGroupName",
    "targetGroupStickinessConfig",
    "enabled",
    "durationSeconds",
    "redirectConfig",
    "protocol",
    "port",
    "host",
    "path",
    "query",
    "statusCode",
    "fixedResponseConfig",
    "contentType",
    "messageBody",
    "field",
    "values",
    "hostHeaderConfig",
    "pathPatternConfig",
    "httpHeaderConfig",
    "httpHeaderName",
    "queryStringConfig",
    "key",
    "value",
    "sourceIpConfig",
    "httpRequestMethodConfig",
    "regexValues",
    "HTTP",
    "HTTPS",
    "issuer",
    "authorizationEndpoint",
    "tokenEndpoint",
    "userInfoEndpoint",
    "secretName",
    "userPoolARN",
    "userPoolClientID",
    "userPoolDomain",
];

pub fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-100i64..70_000).prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        proptest::sample::select(TOKENS).prop_map(Value::from),
        "[a-zA-Z0-9 ./:*?-]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        let key = prop_oneof![3 => proptest::sample::select(JSON_KEYS).prop_map(str::to_string), 1 => "[a-z]{1,6}"];
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(key, inner, 0..5).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

pub fn value() -> impl Strategy<Value = String> {
    let sep = prop_oneof![Just(","), Just(", "), Just("="), Just(" "), Just(":"), Just(";"), Just("")];
    prop_oneof![
        2 => any::<String>(),
        4 => proptest::collection::vec((proptest::sample::select(TOKENS), sep), 0..6)
            .prop_map(|parts| parts.into_iter().flat_map(|(t, s)| [t, s]).collect::<String>()),
        3 => json().prop_map(|v| v.to_string()),
        1 => json().prop_map(|v| v.to_string()).prop_flat_map(|s| {
            let n = s.len();
            (Just(s), 0..=n).prop_map(|(s, cut)| s.get(..cut).unwrap_or(&s).to_string())
        }),
    ]
}

fn annotations(keys: Vec<String>) -> impl Strategy<Value = BTreeMap<String, String>> {
    let other = prop_oneof![Just("example.com/owner".to_string()), "[a-z./-]{1,20}"];
    let k = prop_oneof![8 => key(keys), 1 => other];
    proptest::collection::btree_map(k, value(), 0..8)
}

fn check<T>(parsed: Result<T, AnnotationErrors>, given: &BTreeMap<String, String>) -> Result<(), TestCaseError> {
    let Err(errors) = parsed else { return Ok(()) };
    prop_assert!(!errors.0.is_empty(), "an error without a single annotation error");
    for e in &errors.0 {
        prop_assert!(given.contains_key(&e.key), "error names {:?}, which the object does not carry: {}", e.key, e);
        prop_assert!(!e.expected.trim().is_empty(), "no hint for {:?}", e.key);
        prop_assert!(errors.to_string().contains(&e.key));
    }
    Ok(())
}

/// `keys_of` must find the keys (checked here, where every property gets them).
fn read_keys(source: &str, count: usize, one: &str) -> Vec<String> {
    let keys = keys_of(source);
    assert!(keys.len() > count && keys.iter().any(|k| k == one), "keys.rs not read: {keys:?}");
    keys
}

fn service_keys() -> Vec<String> {
    read_keys(include_str!("../../src/service/keys.rs"), 40, "service.beta.kubernetes.io/aws-load-balancer-type")
}

fn ingress_keys() -> Vec<String> {
    read_keys(include_str!("../../src/ingress/keys.rs"), 50, "alb.ingress.kubernetes.io/listen-ports")
}

proptest! {
    #[test]
    fn service_annotations(a in annotations(service_keys())) {
        check(lbc_model::service::annotations::parse_annotations(&a), &a)?;
    }

    #[test]
    fn ingress_annotations(a in annotations(ingress_keys()), ns in "[a-z]{1,8}") {
        check(lbc_model::ingress::parse_annotations(&a, &ns), &a)?;
    }

    #[test]
    fn ingress_backend_service_annotations(a in annotations(ingress_keys())) {
        check(lbc_model::ingress::parse_service_annotations(&a), &a)?;
    }
}
