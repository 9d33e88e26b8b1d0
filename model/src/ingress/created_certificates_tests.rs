use super::*;
use crate::ingress::test_fixtures::{P, member, path, rule, spec, with_tls};

fn key(s: &str) -> IngressKey {
    let (namespace, name) = s.split_once('/').unwrap();
    IngressKey { namespace: namespace.into(), name: name.into() }
}

fn web(ann: &[(&str, &str)], hosts: &[&str], tls: &[&str]) -> Member {
    let rules = hosts.iter().map(|h| rule(h, vec![path("/", "Prefix", "echo", P::N(80))])).collect();
    member("shop/web", ann, with_tls(spec(rules), tls))
}

fn settings<'a>(default_tags: &'a Tags, pca: &'a str) -> Settings<'a> {
    Settings {
        cluster: "prod",
        stack_id: "shop/web",
        default_tags,
        default_tags_low_priority: false,
        default_pca_arn: pca,
    }
}

#[test]
fn resource_ids_follow_albc() {
    // Golden: sha256("shop/web")[:8], by hand in Python.
    assert_eq!(resource_id(false, "*.shop.example", &key("shop/web")), "amazon_issued/wildcard.shop.example-97375646");
    assert_eq!(resource_id(true, "a.example", &key("shop/web")), "private/a.example-97375646");
}

#[test]
fn a_member_asking_gets_its_hosts_sorted_and_its_issuer() {
    let tags = Tags::from([("owner".to_string(), "platform".to_string())]);
    let m = web(
        &[("create-acm-cert", "true"), ("tags", "team=shop")],
        &["b.example", "a.example"],
        &["c.example", "a.example"],
    );
    let w = wanted(std::slice::from_ref(&m), &settings(&tags, "")).unwrap();
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].domain, "a.example");
    assert_eq!(w[0].names, ["a.example", "b.example", "c.example"]);
    assert_eq!(w[0].private_ca_arn, None, "Amazon-issued without a CA");
    assert_eq!(w[0].resource_id, "amazon_issued/a.example-97375646");
    assert_eq!(w[0].tags["ingress.k8s.aws/resource"], w[0].resource_id);
    assert_eq!(w[0].tags["ingress.k8s.aws/stack"], "shop/web");
    assert_eq!((w[0].tags["owner"].as_str(), w[0].tags["team"].as_str()), ("platform", "shop"));
    // --default-pca-arn makes it private; acm-pca-arn wins over it.
    let w = wanted(&[m], &settings(&tags, "arn:pca/default")).unwrap();
    assert_eq!(w[0].private_ca_arn.as_deref(), Some("arn:pca/default"));
    assert!(w[0].resource_id.starts_with("private/"));
    let m = web(&[("create-acm-cert", "true"), ("acm-pca-arn", "arn:pca/mine")], &["a.example"], &[]);
    assert_eq!(
        wanted(&[m], &settings(&tags, "arn:pca/default")).unwrap()[0].private_ca_arn.as_deref(),
        Some("arn:pca/mine")
    );
}

#[test]
fn named_certificates_win_and_no_host_is_a_problem() {
    let tags = Tags::new();
    let named = web(&[("create-acm-cert", "true"), ("certificate-arn", "arn:cert/x")], &["a.example"], &[]);
    let off = web(&[("create-acm-cert", "false")], &["a.example"], &[]);
    assert_eq!(wanted(&[named, off], &settings(&tags, "")).unwrap(), []);
    let e = wanted(&[web(&[("create-acm-cert", "true")], &[""], &[])], &settings(&tags, "")).unwrap_err();
    assert!(e[0].contains("shop/web") && e[0].contains("no host"), "{e:?}");
}

fn owned(arn: &str, rid: &str, status: &str, names: &[&str], created: i64) -> OwnedCertificate {
    OwnedCertificate {
        arn: arn.into(),
        resource_id: Some(rid.into()),
        status: status.into(),
        names: names.iter().map(|n| n.to_string()).collect(),
        created_unix: Some(created),
    }
}

#[test]
fn decisions_by_resource_id_names_status_and_age() {
    let tags = Tags::new();
    let w = wanted(&[web(&[("create-acm-cert", "true")], &["a.example"], &[])], &settings(&tags, "")).unwrap();
    let rid = w[0].resource_id.clone();
    let now = 10_000;
    // Nothing owned: request.
    let d = decide(&w, &[], now);
    assert_eq!((d.request.len(), d.all_ready()), (1, false));
    // Issued with the same names: ready.
    let d = decide(&w, &[owned("arn:1", &rid, "ISSUED", &["a.example"], 0)], now);
    assert_eq!(d.ready[&key("shop/web")], "arn:1");
    assert!(d.all_ready() && d.leftovers.is_empty());
    // Pending, young: wait; old: request again.
    let young = decide(&w, &[owned("arn:1", &rid, "PENDING_VALIDATION", &["a.example"], now - 60)], now);
    assert_eq!(young.pending.len(), 1);
    let old = decide(&w, &[owned("arn:1", &rid, "PENDING_VALIDATION", &["a.example"], now - 300)], now);
    assert_eq!(old.replace.len(), 1);
    let failed = decide(&w, &[owned("arn:1", &rid, "FAILED", &["a.example"], now - 600)], now);
    assert_eq!(failed.replace[0].0, "arn:1");
    // Other names: a new one requested; the old one, maybe in use, leaves after the listeners moved.
    let moved = decide(&w, &[owned("arn:1", &rid, "ISSUED", &["a.example", "b.example"], 0)], now);
    assert_eq!((moved.request.len(), moved.replace.len(), moved.leftovers.clone()), (1, 0, vec!["arn:1".to_string()]));
    // Once the new one exists it is used, even listed after the old one.
    let both = decide(
        &w,
        &[
            owned("arn:1", &rid, "ISSUED", &["a.example", "b.example"], 0),
            owned("arn:2", &rid, "ISSUED", &["a.example"], 5),
        ],
        now,
    );
    assert_eq!((both.ready[&key("shop/web")].as_str(), both.leftovers.clone()), ("arn:2", vec!["arn:1".to_string()]));
    // Ours, wanted by nobody (another resource ID, or a duplicate): leftovers.
    let d = decide(
        &w,
        &[
            owned("arn:1", &rid, "ISSUED", &["a.example"], 0),
            owned("arn:2", &rid, "ISSUED", &["a.example"], 0),
            owned("arn:3", "x", "ISSUED", &[], 0),
        ],
        now,
    );
    assert_eq!(d.leftovers, ["arn:2", "arn:3"]);
    assert_eq!(decide(&[], &[owned("arn:9", &rid, "ISSUED", &[], 0)], now).leftovers, ["arn:9"]);
}

#[test]
fn the_longest_zone_suffix_holds_the_records() {
    let zones = vec![
        Zone { id: "/hostedzone/Z1".into(), name: "example.com.".into() },
        Zone { id: "/hostedzone/Z2".into(), name: "shop.example.com.".into() },
        Zone { id: "/hostedzone/Z3".into(), name: "ample.com.".into() },
    ];
    let id = |d: &str| zone_for(d, &zones).map(|z| z.id.clone());
    assert_eq!(id("a.shop.example.com").as_deref(), Some("/hostedzone/Z2"));
    assert_eq!(id("*.shop.example.com").as_deref(), Some("/hostedzone/Z2"));
    assert_eq!(id("www.example.com.").as_deref(), Some("/hostedzone/Z1"));
    assert_eq!(id("example.com").as_deref(), Some("/hostedzone/Z1"));
    assert_eq!(id("other.org"), None);
}

#[test]
fn controller_made_certificates_are_told_by_their_tags() {
    let mine = Tags::from([
        ("elbv2.k8s.aws/cluster".to_string(), "prod".to_string()),
        ("ingress.k8s.aws/stack".to_string(), "shop/web".to_string()),
        ("ingress.k8s.aws/resource".to_string(), "amazon_issued/a-1".to_string()),
    ]);
    assert!(made_by_a_controller(&mine));
    assert_eq!(owned_resource_id(&mine).as_deref(), Some("amazon_issued/a-1"));
    assert!(!made_by_a_controller(&Tags::from([("team".to_string(), "x".to_string())])));
    let imported_for_a_gateway = Tags::from([
        ("elbv2.k8s.aws/cluster".to_string(), "prod".to_string()),
        ("gateway.k8s.aws.alb/stack".to_string(), "infra/gw".to_string()),
    ]);
    assert!(made_by_a_controller(&imported_for_a_gateway));
}
