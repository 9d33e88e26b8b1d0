use super::*;
use crate::gateway::api::{ListenerTls, SecretObjectReference};
use crate::gateway::refs::{GrantFrom, GrantTo};

fn self_signed(host: &str) -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec![host.to_string()]).unwrap().self_signed(&key).unwrap();
    (cert.pem(), key.serialize_pem())
}

fn secret(crt: &str, key: &str) -> SecretData {
    SecretData { type_: TLS_SECRET_TYPE.into(), crt: Some(crt.as_bytes().to_vec()), key: Some(key.as_bytes().to_vec()) }
}

fn https(refs: Vec<SecretObjectReference>) -> Listener {
    Listener {
        name: "https".into(),
        port: 443,
        protocol: "HTTPS".into(),
        tls: Some(ListenerTls { mode: None, certificate_refs: refs }),
        ..Default::default()
    }
}

fn secret_ref(ns: Option<&str>, name: &str) -> SecretObjectReference {
    SecretObjectReference {
        group: Some(String::new()),
        kind: Some("Secret".into()),
        name: name.into(),
        namespace: ns.map(str::to_string),
    }
}

#[test]
fn a_leaf_with_its_chain_splits_into_certificate_and_chain_and_the_key_stays_out_of_debug() {
    let (leaf, key) = self_signed("a.example.com");
    let (ca, _) = self_signed("ca.example.com");
    let c = parse("infra", "tls", &secret(&format!("{leaf}{ca}"), &key)).unwrap();
    assert_eq!(c.certificate.trim(), leaf.trim());
    assert_eq!(c.chain.as_deref().map(str::trim), Some(ca.trim()));
    assert_eq!(c.private_key.trim(), key.trim());
    assert_eq!(c.digest.len(), 64);
    assert!(!format!("{c:?}").contains("PRIVATE"), "{c:?}");
    let only_leaf = parse("infra", "tls", &secret(&leaf, &key)).unwrap();
    assert_eq!(only_leaf.chain, None);
    assert_ne!(only_leaf.digest, c.digest, "the digest follows tls.crt");
}

#[test]
fn a_malformed_secret_is_refused_with_what_is_wrong() {
    let (leaf, key) = self_signed("a.example.com");
    // The suite's malformed Secret: base64 of "Hello world" in both keys.
    let e = parse("infra", "bad", &secret("Hello world\n", "Hello world\n")).unwrap_err();
    assert!(e.contains("Secret infra/bad tls.crt holds no PEM block"), "{e}");
    let e = parse("infra", "bad", &secret(&leaf, &leaf)).unwrap_err();
    assert!(e.contains("tls.key is \"CERTIFICATE\""), "{e}");
    let e = parse("infra", "bad", &secret(&key, &key)).unwrap_err();
    assert!(e.contains("tls.crt block 1 is \"PRIVATE KEY\""), "{e}");
    let garbled = leaf.replace("MI", "AA");
    let e = parse("infra", "bad", &secret(&garbled, &key)).unwrap_err();
    assert!(e.contains("not an X.509 certificate"), "{e}");
    let encrypted = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n";
    let e = parse("infra", "bad", &secret(&leaf, encrypted)).unwrap_err();
    assert!(e.contains("encrypted"), "{e}");
    let e = parse("infra", "bad", &secret(&leaf, &format!("{key}{key}"))).unwrap_err();
    assert!(e.contains("holds 2 PEM blocks"), "{e}");
    let opaque = SecretData { type_: "Opaque".into(), ..secret(&leaf, &key) };
    assert!(parse("infra", "o", &opaque).unwrap_err().contains("type \"Opaque\""));
    let missing = SecretData { key: None, ..secret(&leaf, &key) };
    assert!(parse("infra", "m", &missing).unwrap_err().contains("lacks tls.crt or tls.key"));
}

#[test]
fn a_key_larger_than_acm_imports_is_refused() {
    let (leaf, _) = self_signed("a.example.com");
    let big = format!("-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n", "A".repeat(6000));
    let e = parse("infra", "big", &secret(&leaf, &big)).unwrap_err();
    assert!(e.contains("ACM imports at most 5120"), "{e}");
}

#[test]
fn listener_references_resolve_as_the_spec_and_the_suite_expect() {
    let (leaf, key) = self_signed("a.example.com");
    let mut secrets = BTreeMap::new();
    secrets.insert(("infra".to_string(), "tls".to_string()), secret(&leaf, &key));
    secrets.insert(("web".to_string(), "certificate".to_string()), secret(&leaf, &key));
    secrets.insert(("infra".to_string(), "malformed".to_string()), secret("Hello world\n", "Hello world\n"));
    let reason = |l: &Listener, grants: &[Grant]| listener_certificates("infra", l, &secrets, grants).map_err(|e| e.0);

    let ok = listener_certificates("infra", &https(vec![secret_ref(None, "tls")]), &secrets, &[]).unwrap();
    assert_eq!(ok.len(), 1);
    assert_eq!(ok[0].secret(), "infra/tls");
    assert_eq!(ok[0].resource_id(), "Secret/infra/tls");
    // The same Secret twice is one certificate.
    let twice = https(vec![secret_ref(None, "tls"), secret_ref(Some("infra"), "tls")]);
    assert_eq!(listener_certificates("infra", &twice, &secrets, &[]).unwrap().len(), 1);

    // GatewayInvalidTLSConfiguration: nonexistent, wrong group, wrong kind, malformed.
    assert_eq!(reason(&https(vec![secret_ref(None, "nonexistent")]), &[]), Err(REASON_INVALID_CERTIFICATE_REF));
    let mut wrong_group = secret_ref(None, "tls");
    wrong_group.group = Some("wrong.group.company.io".into());
    assert_eq!(reason(&https(vec![wrong_group]), &[]), Err(REASON_INVALID_CERTIFICATE_REF));
    let mut wrong_kind = secret_ref(None, "tls");
    wrong_kind.kind = Some("WrongKind".into());
    assert_eq!(reason(&https(vec![wrong_kind]), &[]), Err(REASON_INVALID_CERTIFICATE_REF));
    assert_eq!(reason(&https(vec![secret_ref(None, "malformed")]), &[]), Err(REASON_INVALID_CERTIFICATE_REF));
    // One bad reference among good ones fails the listener.
    let mixed = https(vec![secret_ref(None, "tls"), secret_ref(None, "nonexistent")]);
    assert_eq!(reason(&mixed, &[]), Err(REASON_INVALID_CERTIFICATE_REF));
    let no_tls = Listener { tls: None, ..https(vec![]) };
    assert_eq!(reason(&no_tls, &[]), Err(REASON_INVALID_CERTIFICATE_REF));
    assert_eq!(reason(&https(vec![]), &[]), Err(REASON_INVALID_CERTIFICATE_REF));
    let passthrough = Listener {
        tls: Some(ListenerTls { mode: Some("Passthrough".into()), certificate_refs: vec![secret_ref(None, "tls")] }),
        ..https(vec![])
    };
    assert_eq!(reason(&passthrough, &[]), Err(REASON_INVALID_CERTIFICATE_REF));

    // GatewaySecretMissingReferenceGrant / InvalidReferenceGrant / ReferenceGrantSpecific / AllInNamespace.
    let cross = https(vec![secret_ref(Some("web"), "certificate")]);
    assert_eq!(reason(&cross, &[]), Err(REASON_REF_NOT_PERMITTED));
    let grant = |from_ns: &str, from_kind: &str, to_kind: &str, name: Option<&str>, at: &str| Grant {
        namespace: at.into(),
        from: vec![GrantFrom {
            group: crate::gateway::GROUP.into(),
            kind: from_kind.into(),
            namespace: from_ns.into(),
        }],
        to: vec![GrantTo { group: String::new(), kind: to_kind.into(), name: name.map(str::to_string) }],
    };
    let wrong = [
        grant("infra", "Gateway", "Secret", Some("certificate"), "app"),
        grant("infra", "HTTPRoute", "Secret", Some("certificate"), "web"),
        grant("elsewhere", "Gateway", "Secret", Some("certificate"), "web"),
        grant("infra", "Gateway", "Service", Some("certificate"), "web"),
        grant("infra", "Gateway", "Secret", Some("other"), "web"),
    ];
    assert_eq!(reason(&cross, &wrong), Err(REASON_REF_NOT_PERMITTED));
    assert!(reason(&cross, &[grant("infra", "Gateway", "Secret", Some("certificate"), "web")]).is_ok());
    assert!(reason(&cross, &[grant("infra", "Gateway", "Secret", None, "web")]).is_ok());
    // A missing Secret in another namespace is not revealed without a grant.
    let hidden = https(vec![secret_ref(Some("web"), "absent")]);
    assert_eq!(reason(&hidden, &[]), Err(REASON_REF_NOT_PERMITTED));
}

fn owned(arn: &str, secret: &str, digest: &str) -> OwnedImport {
    OwnedImport { arn: arn.into(), resource_id: Some(format!("Secret/{secret}")), digest: Some(digest.into()) }
}

#[test]
fn imports_are_matched_by_secret_and_reimported_when_the_content_changed() {
    let (leaf, key) = self_signed("a.example.com");
    let a = parse("infra", "a", &secret(&leaf, &key)).unwrap();
    let b = parse("infra", "b", &secret(&leaf, &key)).unwrap();
    let d = decide(&[a.clone(), b.clone()], &[owned("arn:1", "infra/a", &a.digest), owned("arn:2", "infra/gone", "x")]);
    assert_eq!(d.ready.get("infra/a").map(String::as_str), Some("arn:1"));
    assert_eq!(d.import, vec![b.clone()]);
    assert!(d.reimport.is_empty());
    assert_eq!(d.leftovers, vec!["arn:2".to_string()]);

    let d = decide(std::slice::from_ref(&a), &[owned("arn:1", "infra/a", "old")]);
    assert_eq!(d.reimport, vec![("arn:1".to_string(), a.clone())]);
    assert_eq!(d.ready.get("infra/a").map(String::as_str), Some("arn:1"), "re-imported in place");

    // Two owned for one Secret: the lowest ARN is kept, the other goes.
    let d =
        decide(std::slice::from_ref(&a), &[owned("arn:9", "infra/a", &a.digest), owned("arn:3", "infra/a", &a.digest)]);
    assert_eq!(d.ready.get("infra/a").map(String::as_str), Some("arn:3"));
    assert_eq!(d.leftovers, vec!["arn:9".to_string()]);
}

#[test]
fn ownership_needs_cluster_stack_and_a_secret_resource() {
    let (leaf, key) = self_signed("a.example.com");
    let a = parse("infra", "a", &secret(&leaf, &key)).unwrap();
    let p = "gateway.k8s.aws.alb";
    let t = tags(p, "c1", "infra/gw", &a);
    assert_eq!(t.get("elbv2.k8s.aws/cluster").map(String::as_str), Some("c1"));
    assert_eq!(t.get("gateway.k8s.aws.alb/resource").map(String::as_str), Some("Secret/infra/a"));
    assert_eq!(t.get("gateway.k8s.aws.alb/secret-sha256"), Some(&a.digest));
    assert!(OwnedImport::from_tags(p, "c1", "infra/gw", "arn", &t).is_some());
    assert!(OwnedImport::from_tags(p, "c2", "infra/gw", "arn", &t).is_none());
    assert!(OwnedImport::from_tags(p, "c1", "infra/other", "arn", &t).is_none());
    let mut not_secret = t.clone();
    not_secret.insert("gateway.k8s.aws.alb/resource".into(), "LoadBalancer".into());
    assert!(OwnedImport::from_tags(p, "c1", "infra/gw", "arn", &not_secret).is_none());
}

#[test]
fn secret_refs_lists_the_secrets_a_listener_names() {
    let mut other = secret_ref(None, "x");
    other.kind = Some("ConfigMap".into());
    let l = https(vec![secret_ref(None, "a"), secret_ref(Some("web"), "b"), other]);
    assert_eq!(secret_refs("infra", &l), vec![("infra".into(), "a".into()), ("web".into(), "b".into())]);
}
