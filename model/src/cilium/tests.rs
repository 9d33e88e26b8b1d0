use super::*;
use serde_json::json;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// Shaped like `kubectl get ciliumnode -o json` on an ENI-mode cluster (Cilium 1.14+).
fn node(name: &str, eni: &str, primary: &str, secondary: &[&str], prefixes: &[&str]) -> Value {
    json!({
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNode",
        "metadata": {"name": name},
        "spec": {
            "eni": {"instance-type": "m5.large", "first-interface-index": 0},
            "ipam": {"pool": {"10.0.1.99": {"resource": eni}, "10.0.1.98": {"resource": "eni-elsewhere"}}}
        },
        "status": {
            "eni": {"enis": {eni: {
                "id": eni,
                "ip": primary,
                "mac": "0a:1b:2c:3d:4e:5f",
                "number": 0,
                "availability-zone": "eu-west-1a",
                "addresses": secondary,
                "prefixes": prefixes,
                "security-groups": ["sg-b", "sg-a"],
                "subnet": {"id": "subnet-1", "cidr": "10.0.0.0/20"},
                "vpc": {"id": "vpc-1", "primary-cidr": "10.0.0.0/16", "cidrs": ["10.0.0.0/16"]},
                "tags": {"cilium-managed": "true"}
            }}},
            "ipam": {"used": {"10.0.1.5": {"owner": "shop/web-1", "resource": eni}}}
        }
    })
}

#[test]
fn parses_enis_with_primary_secondary_and_prefixes() {
    let n = parse_cilium_node(&node("node-a", "eni-1", "10.0.1.4", &["10.0.1.5", "10.0.1.6"], &["10.0.2.16/28"]));
    assert_eq!(n.node, "node-a");
    assert_eq!(n.interfaces.len(), 1);
    let eni = &n.interfaces[0];
    assert_eq!(eni.id, "eni-1");
    assert_eq!(eni.subnet_id, "subnet-1");
    assert_eq!(eni.private_ips, vec![ip("10.0.1.4"), ip("10.0.1.5"), ip("10.0.1.6")]);
    assert_eq!(eni.security_groups, vec!["sg-a", "sg-b"]);
    assert_eq!(n.prefixes, vec![("eni-1".to_string(), "10.0.2.16/28".parse().unwrap())]);
    // The pool entry naming another node's ENI is dropped.
    assert_eq!(n.ipam, vec![(ip("10.0.1.5"), "eni-1".to_string()), (ip("10.0.1.99"), "eni-1".to_string())]);
}

#[test]
fn ip_in_delegated_prefix_matches() {
    let index = EniIndex::build([&node("a", "eni-1", "10.0.1.4", &[], &["10.0.2.16/28", "10.0.2.48/28"])], []);
    for hit in ["10.0.2.16", "10.0.2.23", "10.0.2.31", "10.0.2.50"] {
        assert_eq!(index.eni_of(ip(hit)).map(|e| e.id.as_str()), Some("eni-1"), "{hit}");
        assert!(matches!(index.lookup(ip(hit)), EniLookup::Found(_, EniSource::CiliumPrefix)));
    }
    for miss in ["10.0.2.15", "10.0.2.32", "10.0.2.64", "fd00::1"] {
        assert_eq!(index.eni_of(ip(miss)), None, "{miss}");
    }
}

#[test]
fn ipam_entry_resolves_ip_not_listed_on_the_eni() {
    let index = EniIndex::build([&node("a", "eni-1", "10.0.1.4", &[], &[])], []);
    assert!(matches!(index.lookup(ip("10.0.1.99")), EniLookup::Found(e, EniSource::CiliumIpam) if e.id == "eni-1"));
}

#[test]
fn ec2_results_fill_gaps_and_decide_conflicts() {
    let stale = node("old", "eni-old", "10.0.9.9", &["10.0.1.5"], &[]);
    let live = node("new", "eni-new", "10.0.1.4", &["10.0.1.5"], &[]);
    let mut index = EniIndex::build([&stale, &live], []);
    assert_eq!(index.lookup(ip("10.0.1.5")), EniLookup::Ambiguous);
    assert_eq!(index.lookup(ip("10.0.3.3")), EniLookup::Unknown);
    let ec2 = NetworkInterface {
        id: "eni-new".into(),
        subnet_id: "subnet-1".into(),
        private_ips: vec![ip("10.0.1.5"), ip("10.0.3.3")],
        security_groups: vec!["sg-z".into()],
    };
    index.add_ec2(&ec2);
    assert!(
        matches!(index.lookup(ip("10.0.1.5")), EniLookup::Found(e, EniSource::Ec2) if e.security_groups == ["sg-z"])
    );
    assert_eq!(index.eni_of(ip("10.0.3.3")).unwrap().id, "eni-new");
    // A CiliumNode address that only one ENI claims wins over EC2 (it is live).
    assert_eq!(index.eni_of(ip("10.0.1.4")).unwrap().id, "eni-new");
    assert_eq!(index.interfaces().count(), 2);
}

#[test]
fn ipv6_addresses_and_prefixes() {
    let n = json!({"status": {"eni": {"enis": {"eni-6": {
        "ip": "2600:1f18::10", "addresses": ["2600:1f18::11"], "prefixes": ["2600:1f18:0:1::/80"],
        "security-groups": ["sg-6"]}}}}});
    let index = EniIndex::build([&n], []);
    assert_eq!(index.eni_of(ip("2600:1f18::11")).unwrap().id, "eni-6");
    assert_eq!(index.eni_of(ip("2600:1f18:0:1::abcd")).unwrap().id, "eni-6");
    assert_eq!(index.eni_of(ip("2600:1f18:0:2::1")), None);
}

#[test]
fn missing_and_odd_fields_are_skipped() {
    for v in [
        json!(null),
        json!({}),
        json!({"status": {"eni": {"enis": []}}}),
        json!({"status": {"eni": {"enis": "x"}}}),
        json!({"status": {"eni": {"enis": {"": {"ip": "10.0.0.1"}}}}}),
        json!({"metadata": {"name": 7}, "status": {"eni": {"enis": {"eni-1": null}}}}),
    ] {
        let n = parse_cilium_node(&v);
        assert!(n.interfaces.iter().all(|e| e.private_ips.is_empty()), "{v}");
    }
    let n = parse_cilium_node(&json!({"status": {"eni": {"enis": {"eni-1": {
        "ip": "not-an-ip", "addresses": ["10.0.0.7", 5, null, " 10.0.0.8 "], "prefixes": ["10.0.0.300/28", "10.0.5.20/28"],
        "security-groups": "sg-1", "subnet": "subnet-x"}}}}}));
    let eni = &n.interfaces[0];
    assert_eq!(eni.id, "eni-1");
    assert_eq!(eni.private_ips, vec![ip("10.0.0.7"), ip("10.0.0.8")]);
    assert!(eni.security_groups.is_empty() && eni.subnet_id.is_empty());
    // A prefix written with host bits is normalised to its network.
    assert_eq!(n.prefixes, vec![("eni-1".to_string(), "10.0.5.16/28".parse().unwrap())]);
}

fn random_value(rng: &mut fastrand::Rng, depth: u32) -> Value {
    const KEYS: &[&str] = &[
        "metadata",
        "name",
        "spec",
        "status",
        "eni",
        "enis",
        "ipam",
        "pool",
        "used",
        "id",
        "ip",
        "addresses",
        "prefixes",
        "security-groups",
        "subnet",
        "resource",
        "eni-1",
        "10.0.0.1",
    ];
    const STRS: &[&str] = &["", "10.0.0.1", "10.0.0.16/28", "::1", "fe80::/80", "eni-1", "sg-1", "x/99", "1.2.3.4/33"];
    match if depth == 0 { rng.u32(0..4) } else { rng.u32(0..6) } {
        0 => Value::Null,
        1 => json!(rng.bool()),
        2 => json!(rng.i64(..)),
        3 => json!(STRS[rng.usize(..STRS.len())]),
        4 => Value::Array((0..rng.usize(0..4)).map(|_| random_value(rng, depth - 1)).collect()),
        _ => Value::Object(
            (0..rng.usize(0..5))
                .map(|_| (KEYS[rng.usize(..KEYS.len())].to_string(), random_value(rng, depth - 1)))
                .collect(),
        ),
    }
}

#[test]
fn random_shapes_never_panic() {
    let mut rng = fastrand::Rng::with_seed(0x5eed_c111);
    let probes: Vec<IpAddr> = ["10.0.0.1", "10.0.0.17", "::1", "fe80::1"].iter().map(|s| ip(s)).collect();
    for _ in 0..3000 {
        let mut v = random_value(&mut rng, 6);
        // Graft random data into a plausible skeleton so deep paths are reached too.
        if rng.bool() {
            v = json!({"metadata": {"name": "n"}, "spec": {"ipam": {"pool": random_value(&mut rng, 3)}},
                "status": {"eni": {"enis": {"eni-1": random_value(&mut rng, 3), "eni-2": {"ip": "10.0.0.1",
                "prefixes": random_value(&mut rng, 2)}}}, "ipam": {"used": random_value(&mut rng, 3)}}});
        }
        let parsed = parse_cilium_node(&v);
        let mut index = EniIndex::new();
        index.add_cilium_node(&parsed);
        for eni in &parsed.interfaces {
            index.add_ec2(eni);
        }
        for p in &probes {
            let _ = index.lookup(*p);
        }
    }
}
