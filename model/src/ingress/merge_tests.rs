use super::*;
use crate::ingress::test_fixtures::{P, member, path, rule, spec, with_tls};

fn simple() -> IngressSpec {
    spec(vec![rule("", vec![path("/", "Prefix", "web", P::N(80))])])
}

fn ok(members: &[Member]) -> Merged {
    merge(members, &MergeConfig::default()).unwrap_or_else(|e| panic!("{e:?}"))
}

fn err_text(members: &[Member]) -> String {
    let e = merge(members, &MergeConfig::default()).expect_err("a conflict");
    e.iter().map(ToString::to_string).collect::<Vec<_>>().join(" | ")
}

type Annotations<'a> = &'a [(&'a str, &'a str)];

#[test]
fn listen_ports_defaults_table() {
    let cases: &[(Annotations, &[(Protocol, u16)])] = &[
        (&[], &[(Protocol::Http, 80)]),
        (&[("certificate-arn", "arn:c")], &[(Protocol::Https, 443)]),
        (&[("listen-ports", r#"[{"HTTP":8080}]"#), ("certificate-arn", "arn:c")], &[(Protocol::Http, 8080)]),
        (&[("listen-ports", r#"[{"HTTP":80},{"HTTPS":443}]"#)], &[(Protocol::Http, 80), (Protocol::Https, 443)]),
    ];
    for (ann, want) in cases {
        assert_eq!(listen_ports(&member("a/x", ann, simple()).settings), *want, "{ann:?}");
    }
    let tls_only = member("a/x", &[], with_tls(simple(), &["a.example.com"]));
    assert_eq!(listen_ports(&tls_only.settings), [(Protocol::Http, 80)], "TLS hosts alone keep HTTP:80");
}

#[test]
fn discovery_hosts_only_for_https_without_certificates() {
    let s = with_tls(spec(vec![rule("b.example.com", vec![]), rule("", vec![])]), &["a.example.com", "b.example.com"]);
    let https = member("a/x", &[("listen-ports", r#"[{"HTTPS":443}]"#)], s.clone());
    assert_eq!(
        certificate_discovery_hosts(&https.settings, &https.spec),
        Some(vec!["a.example.com".to_string(), "b.example.com".to_string()])
    );
    let named = member("a/x", &[("listen-ports", r#"[{"HTTPS":443}]"#), ("certificate-arn", "arn:c")], s.clone());
    assert_eq!(certificate_discovery_hosts(&named.settings, &named.spec), None);
    let http = member("a/x", &[], s);
    assert_eq!(certificate_discovery_hosts(&http.settings, &http.spec), None);
}

#[test]
fn single_ingress_defaults() {
    let m = ok(&[member("a/x", &[], simple())]);
    assert_eq!(m.ssl_redirect, None);
    let l = &m.listeners[0];
    assert_eq!((l.port, l.protocol, l.ssl_policy.clone(), l.certificates.len()), (80, Protocol::Http, None, 0));
    assert_eq!(l.inbound_cidrs_v4, ["0.0.0.0/0".parse::<IpNet>().unwrap()]);
    assert_eq!(l.inbound_cidrs_v6, ["::/0".parse::<IpNet>().unwrap()]);
    let m = ok(&[member("a/x", &[("certificate-arn", "arn:c")], simple())]);
    let l = &m.listeners[0];
    assert_eq!((l.port, l.protocol), (443, Protocol::Https));
    assert_eq!(l.ssl_policy.as_deref(), Some(DEFAULT_SSL_POLICY));
    assert_eq!(l.certificates, ["arn:c"]);
    let custom = MergeConfig { default_ssl_policy: "ELBSecurityPolicy-TLS13-1-2-2021-06".into(), ..Default::default() };
    let m = merge(&[member("a/x", &[("certificate-arn", "arn:c")], simple())], &custom).unwrap();
    assert_eq!(m.listeners[0].ssl_policy.as_deref(), Some("ELBSecurityPolicy-TLS13-1-2-2021-06"));
}

#[test]
fn certificates_merge_default_first_in_group_order() {
    let both = r#"[{"HTTP":80},{"HTTPS":443}]"#;
    let a = member("a/x", &[("listen-ports", both)], simple()); // no certificates at all
    let b = member("b/y", &[("listen-ports", both), ("certificate-arn", "c1,c2")], simple());
    let c = member("c/z", &[("listen-ports", both), ("certificate-arn", "c3,c1")], simple());
    let mut d = member("d/w", &[("listen-ports", r#"[{"HTTPS":443}]"#)], simple());
    d.discovered_certificates = vec!["acm-d".into(), "c2".into()];
    let m = ok(&[a, b, c, d]);
    let https = m.listeners.iter().find(|l| l.port == 443).unwrap();
    // Default c1 (first of the first member with certificates), then everything once; c1 may
    // repeat as an SNI certificate, as in ALBC.
    assert_eq!(https.certificates, ["c1", "c2", "c3", "c1", "acm-d"]);
    assert_eq!(https.members, [0, 1, 2, 3]);
    let http = m.listeners.iter().find(|l| l.port == 80).unwrap();
    assert!(http.certificates.is_empty() && http.ssl_policy.is_none());
    assert_eq!(http.members, [0, 1, 2]);
}

#[test]
fn conflicts_name_port_ingresses_and_values() {
    let https = r#"[{"HTTPS":443}]"#;
    let cases: Vec<(Vec<Member>, &[&str])> = vec![
        (
            vec![
                member("a/x", &[("listen-ports", r#"[{"HTTP":8080}]"#)], simple()),
                member("b/y", &[("listen-ports", r#"[{"HTTPS":8080}]"#)], simple()),
            ],
            &["port 8080", "protocol", "a/x has HTTP", "b/y has HTTPS"],
        ),
        (
            vec![
                member("a/x", &[("listen-ports", https), ("ssl-policy", "P1")], simple()),
                member("b/y", &[("listen-ports", https)], simple()),
                member("c/z", &[("listen-ports", https), ("ssl-policy", "P2")], simple()),
            ],
            &["port 443", "ssl-policy", "a/x has P1", "c/z has P2"],
        ),
        (
            vec![
                member("a/x", &[("inbound-cidrs", "10.0.0.0/8, 192.168.0.0/16")], simple()),
                member("b/y", &[], simple()),
                member("c/z", &[("inbound-cidrs", "10.0.0.0/8")], simple()),
            ],
            &["port 80", "inbound-cidrs", "a/x has [10.0.0.0/8, 192.168.0.0/16]", "c/z has [10.0.0.0/8]"],
        ),
        (
            vec![
                member("a/x", &[("security-group-prefix-lists", "pl-1")], simple()),
                member("b/y", &[("security-group-prefix-lists", "pl-2")], simple()),
            ],
            &["security-group-prefix-lists", "[pl-1]", "[pl-2]"],
        ),
        (
            vec![
                member(
                    "a/x",
                    &[("listener-attributes.HTTP-80", "routing.http.response.server.enabled=true")],
                    simple(),
                ),
                member(
                    "b/y",
                    &[("listener-attributes.HTTP-80", "routing.http.response.server.enabled=false")],
                    simple(),
                ),
            ],
            &["routing.http.response.server.enabled", "a/x has true", "b/y has false"],
        ),
        (
            vec![member("a/x", &[("ssl-redirect", "443")], simple())],
            &["ssl-redirect port 443", "a/x", "not a listener port", r#"{"HTTPS": 443}"#],
        ),
        (vec![member("a/x", &[("ssl-redirect", "80")], simple())], &["ssl-redirect port 80", "HTTP listener"]),
    ];
    for (members, want) in cases {
        let text = err_text(&members);
        for w in want {
            assert!(text.contains(w), "missing {w:?} in {text}");
        }
    }
}

#[test]
fn agreeing_or_partial_settings_merge() {
    let both = r#"[{"HTTP":80},{"HTTPS":443}]"#;
    let a = member(
        "a/x",
        &[
            ("listen-ports", both),
            ("ssl-policy", "P1"),
            ("inbound-cidrs", "10.0.0.0/8,2001:db8::/32"),
            ("listener-attributes.HTTPS-443", "a=1"),
            ("listener-attributes.HTTP-443", "ignored=1"),
            ("ssl-redirect", "443"),
        ],
        simple(),
    );
    let b = member(
        "b/y",
        &[
            ("listen-ports", both),
            ("inbound-cidrs", "2001:db8::/32, 10.0.0.0/8"),
            ("listener-attributes.HTTPS-443", "a=1,b=2"),
        ],
        simple(),
    );
    // ssl-policy on an HTTP-only member does not count.
    let c = member("c/z", &[("ssl-policy", "P9"), ("security-group-prefix-lists", "pl-1")], simple());
    let m = ok(&[a, b, c]);
    assert_eq!(m.ssl_redirect, Some(443));
    let https = &m.listeners[1];
    assert_eq!(https.ssl_policy.as_deref(), Some("P1"));
    assert_eq!(https.inbound_cidrs_v4, ["10.0.0.0/8".parse::<IpNet>().unwrap()]);
    assert_eq!(https.inbound_cidrs_v6, ["2001:db8::/32".parse::<IpNet>().unwrap()]);
    assert!(https.prefix_lists.is_empty());
    assert_eq!(https.attributes.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(), ["a=1", "b=2"]);
    let http = &m.listeners[0];
    assert_eq!(http.prefix_lists, ["pl-1"]);
    assert_eq!(http.inbound_cidrs_v4.len(), 1, "CIDRs and prefix lists together");
    let only_lists = ok(&[member("a/x", &[("security-group-prefix-lists", "pl-1")], simple())]);
    assert!(only_lists.listeners[0].inbound_cidrs_v4.is_empty(), "prefix lists alone: no 0.0.0.0/0");
    assert!(ok(&[]).listeners.is_empty());
}

#[test]
fn mutual_tls_merges_per_https_port_after_names_resolve() {
    let ports = r#"[{"HTTP":80},{"HTTPS":443}]"#;
    let by_name = r#"[{"port": 443, "mode": "verify", "trustStore": "ts"}]"#;
    let by_arn = r#"[{"port": 443, "mode": "verify", "trustStore": "arn:ts/1"}]"#;
    let cfg =
        MergeConfig { trust_store_arns: BTreeMap::from([("ts".into(), "arn:ts/1".into())]), ..Default::default() };
    let a = member(
        "a/x",
        &[("listen-ports", ports), ("certificate-arn", "arn:c"), ("mutual-authentication", by_name)],
        simple(),
    );
    let b = member("a/y", &[("listen-ports", ports), ("mutual-authentication", by_arn)], simple());
    let quiet = member("a/z", &[("listen-ports", ports)], simple());
    let m = merge(&[a.clone(), b, quiet.clone()], &cfg).unwrap_or_else(|e| panic!("{e:?}"));
    let https = m.listeners.iter().find(|l| l.port == 443).unwrap();
    let want = MutualAuthentication {
        mode: crate::lb::MtlsMode::Verify,
        trust_store_arn: Some("arn:ts/1".into()),
        ignore_client_certificate_expiry: Some(false),
        advertise_trust_store_ca_names: None,
    };
    assert_eq!(https.mutual_authentication, Some(want), "a name and its ARN agree");
    assert_eq!(m.listeners.iter().find(|l| l.port == 80).unwrap().mutual_authentication, None, "HTTP ports have none");
    // No member asks: the listener's own is left as it is.
    let m = merge(std::slice::from_ref(&quiet), &cfg).unwrap();
    assert!(m.listeners.iter().all(|l| l.mutual_authentication.is_none()));

    // Different settings on one port conflict, naming both Ingresses and values.
    let pass = member(
        "a/p",
        &[("listen-ports", ports), ("mutual-authentication", r#"[{"port": 443, "mode": "passthrough"}]"#)],
        simple(),
    );
    let e = merge(&[a.clone(), pass], &cfg).expect_err("conflict");
    let text = e.iter().map(ToString::to_string).collect::<Vec<_>>().join(" | ");
    assert!(
        text.contains("alb.ingress.kubernetes.io/mutual-authentication")
            && text.contains("a/x has verify with trust store arn:ts/1")
            && text.contains("a/p has passthrough"),
        "{text}"
    );
    // A name DescribeTrustStores did not find: the group is not built.
    let e = merge(&[a], &MergeConfig::default()).expect_err("unresolved");
    assert!(e.iter().any(|e| e.to_string().contains("trust store \"ts\" was not found")), "{e:?}");
}
