//! The model's other parsers of user or cluster input: `--aws-api-throttle`, VPC CIDRs,
//! CiliumNode ENI status, and the IngressGroup name rule.

use super::annotations::{json, value};
use lbc_model::cilium::parse_cilium_node;
use lbc_model::ingress::valid_group_name;
use lbc_model::net::VpcCidrs;
use lbc_model::throttle::{default_rules, parse_rules};
use proptest::prelude::*;
use serde_json::{Value, json};

fn throttle_flag() -> impl Strategy<Value = String> {
    let part = prop_oneof![
        Just("Elastic Load Balancing v2"),
        Just("EC2"),
        Just(":"),
        Just("="),
        Just(","),
        Just("4"),
        Just("20"),
        Just("0"),
        Just("-1"),
        Just("NaN"),
        Just("inf"),
        Just("1e400"),
        Just("^Describe"),
        Just("RegisterTargets|DeregisterTargets"),
        Just("("),
        Just("*"),
        Just(" "),
    ];
    prop_oneof![proptest::collection::vec(part, 0..12).prop_map(|p| p.concat()), value()]
}

fn ip_net() -> impl Strategy<Value = ipnet::IpNet> {
    prop_oneof![
        (any::<[u8; 4]>(), 0u8..=32).prop_map(|(a, l)| ipnet::Ipv4Net::new(a.into(), l).unwrap().into()),
        (any::<[u8; 16]>(), 0u8..=128).prop_map(|(a, l)| ipnet::Ipv6Net::new(a.into(), l).unwrap().into()),
    ]
}

/// A CiliumNode-shaped object whose every part may be replaced by arbitrary JSON.
fn cilium_node() -> impl Strategy<Value = Value> {
    let ip = prop_oneof![
        Just(json!("10.0.1.5")),
        Just(json!("10.0.1.6")),
        Just(json!("2600:1f18::5")),
        Just(json!("nope")),
        json()
    ];
    let eni_id =
        prop_oneof![Just("eni-a".to_string()), Just("eni-b".to_string()), Just(" ".to_string()), "[a-z-]{0,6}"].boxed();
    let eni = (eni_id.clone(), ip.clone(), proptest::collection::vec(ip.clone(), 0..3), json())
        .prop_map(|(id, ip, addresses, junk)| {
            json!({"id": id, "ip": ip, "addresses": addresses, "prefixes": ["10.0.8.0/28", "10.0.9.1/28", junk],
                   "security-groups": ["sg-1", " ", "sg-2"], "subnet": {"id": "subnet-1"}})
        })
        .boxed();
    let enis = prop_oneof![
        proptest::collection::btree_map(eni_id.clone(), eni.clone(), 0..3).prop_map(|m| json!(m)),
        proptest::collection::vec(eni, 0..3).prop_map(Value::from),
        json(),
    ];
    let used = proptest::collection::btree_map(
        prop_oneof![Just("10.0.1.5".to_string()), Just("10.0.1.7".to_string()), "[0-9.:a-f]{0,10}"],
        (eni_id, json()).prop_map(|(r, owner)| json!({"resource": r, "owner": owner})),
        0..4,
    );
    (enis, used, json(), any::<bool>()).prop_map(|(enis, used, junk, junk_status)| {
        let status = if junk_status { junk } else { json!({"eni": {"enis": enis}, "ipam": {"used": used}}) };
        json!({"metadata": {"name": "node-a"}, "status": status})
    })
}

proptest! {
    #[test]
    fn throttle_flags_parse_or_name_the_bad_entry(flag in throttle_flag()) {
        match parse_rules(&flag) {
            Ok(rules) => {
                prop_assert!(rules.len() >= default_rules().len());
                prop_assert!(rules.iter().all(|r| r.rate > 0.0 && r.rate.is_finite() && r.burst > 0));
            }
            Err(e) => {
                prop_assert!(!e.entry.is_empty() && !e.why.is_empty());
                prop_assert!(flag.contains(&e.entry) && e.to_string().contains(&e.why));
            }
        }
    }

    #[test]
    fn vpc_cidrs_round_trip(blocks in proptest::collection::vec(ip_net(), 0..4), junk in value()) {
        let text: Vec<String> = blocks.iter().map(ToString::to_string).collect();
        let parsed = VpcCidrs::parse(&text).unwrap();
        prop_assert_eq!(VpcCidrs::parse(parsed.to_strings()).unwrap(), parsed.clone());
        for b in &blocks {
            prop_assert!(parsed.contains(&b.addr()));
        }
        if let Err(e) = VpcCidrs::parse([junk.as_str()]) {
            prop_assert_eq!(e.value, junk.trim());
        }
    }

    #[test]
    fn cilium_nodes_never_fail(node in cilium_node()) {
        let enis = parse_cilium_node(&node);
        let ids: Vec<&str> = enis.interfaces.iter().map(|i| i.id.as_str()).collect();
        prop_assert!(ids.windows(2).all(|w| w[0] < w[1]), "not sorted and unique: {:?}", ids);
        prop_assert!(ids.iter().all(|id| !id.is_empty() && id.trim() == *id));
        for i in &enis.interfaces {
            prop_assert!(i.private_ips.windows(2).all(|w| w[0] < w[1]));
        }
        prop_assert!(enis.ipam.iter().all(|(_, eni)| ids.contains(&eni.as_str())));
    }

    #[test]
    fn group_names_follow_albc_rule(name in prop_oneof!["[a-z0-9.-]{0,70}", any::<String>()]) {
        let albc = regex::Regex::new(r"^([a-z0-9][-a-z0-9.]*)?[a-z0-9]$").unwrap();
        prop_assert_eq!(valid_group_name(&name), albc.is_match(&name) && name.len() <= 63);
    }
}
