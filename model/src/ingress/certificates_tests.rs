use super::*;

fn cert(arn: &str, names: &[&str]) -> AcmCertificate {
    AcmCertificate { arn: arn.into(), names: names.iter().map(|n| n.to_string()).collect() }
}

fn hosts(h: &[&str]) -> Vec<String> {
    h.iter().map(|h| h.to_string()).collect()
}

#[test]
fn name_covers_host_table() {
    let cases: &[(&str, &str, bool, &str)] = &[
        ("example.com", "example.com", true, "exact"),
        ("a.example.com", "a.example.com", true, "exact subdomain"),
        ("a.example.com", "b.example.com", false, "other subdomain"),
        ("example.com", "a.example.com", false, "apex does not cover subdomains"),
        ("a.example.com", "example.com", false, "subdomain does not cover the apex"),
        ("*.example.com", "a.example.com", true, "wildcard, one label"),
        ("*.example.com", "api-v2.example.com", true, "wildcard, label with a dash"),
        ("*.example.com", "example.com", false, "wildcard does not cover the apex"),
        ("*.example.com", "a.b.example.com", false, "wildcard covers one label only"),
        ("*.example.com", ".example.com", false, "empty label"),
        ("*.example.com", "a.example.org", false, "other parent"),
        ("*.example.com", "a.notexample.com", false, "parent is compared by labels, not suffix"),
        ("*.b.example.com", "a.b.example.com", true, "deeper wildcard"),
        ("*.b.example.com", "a.c.example.com", false, "deeper wildcard, other parent"),
        ("*.example.com", "*.example.com", true, "wildcard host, same wildcard name"),
        ("a.example.com", "*.example.com", false, "wildcard host, plain name"),
        ("*.example.com", "*.a.example.com", false, "wildcard host one level down"),
        ("*.com", "example.com", true, "wildcard over a TLD (ACM refuses these; the rule still applies)"),
        ("*", "example", false, "a bare * is not a wildcard"),
        ("a*.example.com", "ab.example.com", false, "partial wildcards are literal"),
        ("Example.COM", "example.com", true, "case-insensitive"),
        ("*.Example.com", "API.example.com", true, "case-insensitive wildcard"),
        ("example.com.", "example.com", true, "trailing dot on the name"),
        ("example.com", "example.com.", true, "trailing dot on the host"),
        ("", "example.com", false, "empty name"),
        ("example.com", "", false, "empty host"),
        ("*.", "a.", false, "wildcard of nothing"),
    ];
    for (name, host, want, why) in cases {
        assert_eq!(name_covers_host(name, host), *want, "{why}: name {name:?} host {host:?}");
    }
}

#[test]
fn discover_table() {
    let wild = cert("arn:aws:acm:r:1:certificate/c-wild", &["*.example.test"]);
    let apex = cert("arn:aws:acm:r:1:certificate/b-apex", &["example.test", "www.example.test"]);
    let api = cert("arn:aws:acm:r:1:certificate/a-api", &["api.other.test"]);
    let multi = cert("arn:aws:acm:r:1:certificate/d-multi", &["shop.example.test", "*.shop.example.test"]);
    let all = vec![wild.clone(), apex.clone(), api.clone(), multi.clone()];
    type Case<'a> = (&'a str, Vec<String>, Vec<AcmCertificate>, Result<Vec<&'a str>, Vec<&'a str>>);
    let cases: Vec<Case> = vec![
        ("no hosts: nothing to find", hosts(&[]), all.clone(), Ok(vec![])),
        ("empty host ignored", hosts(&[""]), all.clone(), Ok(vec![])),
        ("exact SAN", hosts(&["api.other.test"]), all.clone(), Ok(vec![&api.arn])),
        ("domain name", hosts(&["example.test"]), all.clone(), Ok(vec![&apex.arn])),
        ("wildcard", hosts(&["foo.example.test"]), all.clone(), Ok(vec![&wild.arn])),
        ("exact and wildcard both cover: both, sorted", hosts(&["www.example.test"]), all.clone(), {
            Ok(vec![&apex.arn, &wild.arn])
        }),
        ("two hosts, two certificates, sorted by ARN", hosts(&["foo.example.test", "api.other.test"]), all.clone(), {
            Ok(vec![&api.arn, &wild.arn])
        }),
        ("one certificate for two hosts appears once", hosts(&["a.example.test", "b.example.test"]), all.clone(), {
            Ok(vec![&wild.arn])
        }),
        ("wildcard under a SAN", hosts(&["eu.shop.example.test"]), all.clone(), Ok(vec![&multi.arn])),
        ("shop: exact SAN plus parent wildcard", hosts(&["shop.example.test"]), all.clone(), {
            Ok(vec![&wild.arn, &multi.arn])
        }),
        ("uncovered host", hosts(&["api.example.org"]), all.clone(), Err(vec!["api.example.org"])),
        ("two levels below the wildcard", hosts(&["a.b.c.example.test"]), all.clone(), Err(vec!["a.b.c.example.test"])),
        ("every uncovered host, sorted, once", hosts(&["z.org", "api.other.test", "a.org", "z.org"]), all.clone(), {
            Err(vec!["a.org", "z.org"])
        }),
        ("no certificates at all", hosts(&["api.other.test"]), vec![], Err(vec!["api.other.test"])),
        ("wildcard host needs a wildcard name", hosts(&["*.other.test"]), all.clone(), Err(vec!["*.other.test"])),
        ("wildcard host, same wildcard", hosts(&["*.example.test"]), all.clone(), Ok(vec![&wild.arn])),
        ("order of certificates does not matter", hosts(&["www.example.test"]), vec![wild.clone(), apex.clone()], {
            Ok(vec![&apex.arn, &wild.arn])
        }),
        ("same ARN listed twice", hosts(&["api.other.test"]), vec![api.clone(), api.clone()], Ok(vec![&api.arn])),
    ];
    for (why, h, certs, want) in cases {
        let got = discover(&h, &certs);
        match want {
            Ok(arns) => assert_eq!(got, Ok(arns.iter().map(|a| a.to_string()).collect()), "{why}"),
            Err(missing) => {
                let e = got.expect_err(why);
                assert_eq!(e.hosts, missing, "{why}");
                assert_eq!(e.examined, certs.len(), "{why}");
            }
        }
    }
}

#[test]
fn no_certificate_message_names_hosts_and_fixes() {
    let e = discover(&hosts(&["a.example.org", "b.example.org"]), &[cert("arn:x", &["c.example.org"])]).unwrap_err();
    let m = e.to_string();
    for part in [
        "a.example.org, b.example.org",
        "looked at 1 ISSUED certificate",
        "request or import a certificate",
        "alb.ingress.kubernetes.io/certificate-arn",
        "IngressClassParams spec.certificateArn",
    ] {
        assert!(m.contains(part), "{part:?} missing from {m}");
    }
}

#[test]
fn result_is_deterministic_whatever_the_listing_order() {
    let certs =
        vec![cert("arn:3", &["*.a.test"]), cert("arn:1", &["x.a.test"]), cert("arn:2", &["x.a.test", "y.a.test"])];
    let h = hosts(&["y.a.test", "x.a.test"]);
    let want = Ok(vec!["arn:1".to_string(), "arn:2".to_string(), "arn:3".to_string()]);
    let mut rev = certs.clone();
    rev.reverse();
    assert_eq!(discover(&h, &certs), want);
    assert_eq!(discover(&h, &rev), want);
}

#[test]
fn allowed_authorities_keep_only_their_private_certificates() {
    let ca = "arn:aws:acm-pca:us-east-1:123456789012:certificate-authority/11111111-2222";
    assert!(issuer_allowed(&[], None), "no list: every certificate");
    assert!(issuer_allowed(&[], Some(ca)));
    let allowed = vec![ca.to_string()];
    assert!(issuer_allowed(&allowed, Some(ca)));
    assert!(!issuer_allowed(&allowed, Some("arn:aws:acm-pca:us-east-1:123456789012:certificate-authority/other")));
    assert!(!issuer_allowed(&allowed, None), "imported and Amazon-issued certificates have no issuing CA");
}

#[test]
fn allowed_authorities_parse_as_albcs_string_slice() {
    let a = "arn:aws:acm-pca:us-east-1:123456789012:certificate-authority/a";
    let b = "arn:aws-us-gov:acm-pca:us-gov-west-1:123456789012:certificate-authority/b";
    assert_eq!(parse_allowed_authorities(""), Ok(vec![]));
    assert_eq!(parse_allowed_authorities(&format!(" {a} ,{b},{a},")), Ok(vec![a.to_string(), b.to_string()]));
    for bad in
        ["[]", "arn:aws:acm:us-east-1:123456789012:certificate/x", "arn:aws:acm-pca:us-east-1:1:certificate-authority/"]
    {
        let e = parse_allowed_authorities(bad).unwrap_err();
        assert!(e.contains(&format!("{bad:?}")) && e.contains("certificate-authority/<id>"), "{e}");
    }
}
