use super::*;
use std::collections::BTreeMap;

/// The decision for every refused annotation, written out: adding, removing or reclassifying a
/// refusal changes this list too, so it is a decision someone made, never a default.
#[test]
fn every_refusal_has_its_decision() {
    let ingress: Vec<(&str, bool, Refusal)> = INGRESS.iter().map(|r| (r.suffix, r.family, r.refusal)).collect();
    assert_eq!(ingress, vec![], "every Ingress annotation is implemented");
    let service: Vec<(&str, bool, Refusal)> = SERVICE.iter().map(|r| (r.suffix, r.family, r.refusal)).collect();
    assert_eq!(service, vec![("aws-load-balancer-quic-enabled-containers", false, Degrade)]);
}

/// The rule itself: whatever reads like authentication, mutual TLS, JWT, WAF, Shield, source
/// ranges or TLS policy fails closed.
#[test]
fn security_relevant_refusals_fail_closed() {
    const SECURITY: &[&str] = &["auth", "jwt", "waf", "acl", "shield", "source-range", "ssl", "tls-policy", "cognito"];
    for row in INGRESS.iter().chain(SERVICE) {
        let security = SECURITY.iter().any(|w| row.suffix.contains(w));
        assert_eq!(row.refusal == FailClosed, security, "{}: {:?}", row.suffix, row.refusal);
    }
}

/// No annotation is refused as fail-closed today (WAF Classic and Shield Advanced are implemented):
/// the machinery is tested on a table of its own, shaped as such rows would be.
const SECURITY_TABLE: &[Refused] = &[
    exact("waf-acl-id", FailClosed, "WAF Classic is not supported"),
    Refused {
        asks_nothing: &["0", "f", "F", "false", "FALSE", "False"],
        ..exact("shield-advanced-protection", FailClosed, "Shield Advanced is not supported")
    },
    family("frontend-nlb-", Degrade, "frontend-nlb-* annotations are not implemented yet"),
];

fn refused_in(pairs: &[(&str, &str)], prefix: &'static str, table: &[Refused]) -> Vec<Unsupported> {
    let a: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let mut r = Reader::new(&a, prefix);
    let mut out = Vec::new();
    note_refused(&mut r, &mut out, table);
    assert!(r.unknown(|_| true).iter().all(|k| !out.iter().any(|u| &u.key == k)), "refused keys count as read");
    out
}

#[test]
fn only_present_annotations_of_the_prefix_are_refused_exact_or_by_family() {
    let got = refused_in(
        &[
            ("alb.ingress.kubernetes.io/waf-acl-id", "acl-1"),
            ("alb.ingress.kubernetes.io/frontend-nlb-scheme", "internal"),
            ("alb.ingress.kubernetes.io/waf-acl-id-extra", "x"),
            ("alb.ingress.kubernetes.io/scheme", "internal"),
            ("example.com/waf-acl-id", "acl-1"),
        ],
        "alb.ingress.kubernetes.io",
        SECURITY_TABLE,
    );
    let keys: Vec<(&str, Refusal)> = got.iter().map(|u| (u.key.as_str(), u.refusal)).collect();
    assert_eq!(
        keys,
        vec![
            ("alb.ingress.kubernetes.io/waf-acl-id", FailClosed),
            ("alb.ingress.kubernetes.io/frontend-nlb-scheme", Degrade)
        ]
    );
    let notes = fail_closed_notes(&got);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("alb.ingress.kubernetes.io/waf-acl-id") && notes[0].contains("remove it"), "{notes:?}");
}

/// `shield-advanced-protection: "false"` asks for no protection: nothing to fail closed on.
#[test]
fn a_value_that_asks_for_nothing_only_degrades() {
    let key = "alb.ingress.kubernetes.io/shield-advanced-protection";
    for (value, refusal) in [("true", FailClosed), ("false", Degrade), ("0", Degrade), ("yes", FailClosed)] {
        let got = refused_in(&[(key, value)], "alb.ingress.kubernetes.io", SECURITY_TABLE);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].refusal, refusal, "{value}");
    }
}
