use super::*;
use crate::service::keys as k;

fn parse(kv: &[(&str, &str)]) -> Result<NlbSettings, AnnotationErrors> {
    parse_annotations(&kv.iter().map(|(key, v)| (full_key(key), v.to_string())).collect())
}

fn ok(kv: &[(&str, &str)]) -> NlbSettings {
    parse(kv).unwrap_or_else(|e| panic!("{kv:?}: {e}"))
}

#[test]
fn defaults_when_no_annotations() {
    let s = ok(&[]);
    assert_eq!(s, NlbSettings::default());
    assert_eq!(s.scheme, None, "internal is applied by build (after the existing LB's scheme)");
    assert_eq!(s.backend_protocol, BackendProtocol::Tcp);
    assert!(s.warnings().is_empty());
}

/// (annotation, value, check) for every valid form.
#[test]
fn valid_values_table() {
    type Check = fn(&NlbSettings) -> bool;
    let cases: &[(&str, &str, Check)] = &[
        (k::NAME, "my-nlb-1", |s| s.name.as_deref() == Some("my-nlb-1")),
        (k::SCHEME, "internet-facing", |s| s.scheme == Some(Scheme::InternetFacing)),
        (k::SCHEME, "internal", |s| s.scheme == Some(Scheme::Internal)),
        (k::INTERNAL, "false", |s| s.scheme == Some(Scheme::InternetFacing)),
        (k::INTERNAL, "True", |s| s.scheme == Some(Scheme::Internal)),
        (k::IP_ADDRESS_TYPE, "dualstack", |s| s.ip_address_type == Some(LbIpAddressType::Dualstack)),
        (k::IP_ADDRESS_TYPE, "ipv4", |s| s.ip_address_type == Some(LbIpAddressType::Ipv4)),
        (k::SUBNETS, "subnet-1, public-a", |s| {
            s.subnets == Some(vec![SubnetSelector::Id("subnet-1".into()), SubnetSelector::Name("public-a".into())])
        }),
        (k::EIP_ALLOCATIONS, "eipalloc-1,eipalloc-2", |s| s.eip_allocations.as_ref().is_some_and(|e| e.len() == 2)),
        (k::PRIVATE_IPV4_ADDRESSES, "10.0.1.5, 10.0.2.5", |s| {
            s.private_ipv4_addresses == Some(vec!["10.0.1.5".parse().unwrap(), "10.0.2.5".parse().unwrap()])
        }),
        (k::IPV6_ADDRESSES, "2600:1f18::5", |s| s.ipv6_addresses.as_ref().is_some_and(|v| v.len() == 1)),
        (
            k::ATTRIBUTES,
            "deletion_protection.enabled=true,dns_record.client_routing_policy=any_availability_zone",
            |s| s.load_balancer_attributes["deletion_protection.enabled"] == "true",
        ),
        (k::TARGET_GROUP_ATTRIBUTES, "preserve_client_ip.enabled=true,deregistration_delay.timeout_seconds=30", |s| {
            s.target_group_attributes.len() == 2
        }),
        ("aws-load-balancer-target-group-attributes.443", "deregistration_delay.timeout_seconds=5", |s| {
            s.target_group_attributes_by_port[&443]["deregistration_delay.timeout_seconds"] == "5"
        }),
        (k::PROXY_PROTOCOL, "*", |s| s.proxy_protocol_all),
        (k::PROXY_PROTOCOL_PER_TARGET_GROUP, "80, 443", |s| s.proxy_protocol_ports == Some(BTreeSet::from([80, 443]))),
        (k::ADDITIONAL_TAGS, "team=shop, env=", |s| {
            s.additional_tags.len() == 2 && s.additional_tags["env"].is_empty()
        }),
        (k::HC_PROTOCOL, "http", |s| s.health_check.protocol == Some(Protocol::Http)),
        (k::HC_PROTOCOL, "HTTPS", |s| s.health_check.protocol == Some(Protocol::Https)),
        (k::HC_PORT, "traffic-port", |s| s.health_check.port == Some(HealthCheckPortSetting::TrafficPort)),
        (k::HC_PORT, "10254", |s| s.health_check.port == Some(HealthCheckPortSetting::Port(10254))),
        (k::HC_PORT, "metrics", |s| s.health_check.port == Some(HealthCheckPortSetting::Named("metrics".into()))),
        (k::HC_PATH, "/healthz", |s| s.health_check.path.as_deref() == Some("/healthz")),
        (k::HC_INTERVAL, "30", |s| s.health_check.interval_seconds == Some(30)),
        (k::HC_TIMEOUT, "5", |s| s.health_check.timeout_seconds == Some(5)),
        (k::HC_HEALTHY_THRESHOLD, "2", |s| s.health_check.healthy_threshold == Some(2)),
        (k::HC_UNHEALTHY_THRESHOLD, "10", |s| s.health_check.unhealthy_threshold == Some(10)),
        (k::HC_SUCCESS_CODES, "200-399,404", |s| s.health_check.success_codes.as_deref() == Some("200-399,404")),
        (k::SSL_CERT, "arn:a, arn:b", |s| s.ssl_certificates == ["arn:a", "arn:b"]),
        (k::SSL_PORTS, "https, 8443", |s| s.ssl_ports == ["https", "8443"]),
        (k::SSL_NEGOTIATION_POLICY, "ELBSecurityPolicy-TLS13-1-2-2021-06", |s| s.ssl_negotiation_policy.is_some()),
        (k::BACKEND_PROTOCOL, "ssl", |s| s.backend_protocol == BackendProtocol::Ssl),
        (k::BACKEND_PROTOCOL, "tcp", |s| s.backend_protocol == BackendProtocol::Tcp),
        (k::ALPN_POLICY, "HTTP2Preferred", |s| s.alpn_policy.as_deref() == Some("HTTP2Preferred")),
        (k::SECURITY_GROUPS, "sg-1,web", |s| {
            s.security_groups
                == Some(vec![SecurityGroupSelector::Id("sg-1".into()), SecurityGroupSelector::Name("web".into())])
        }),
        (k::MANAGE_BACKEND_SG_RULES, "false", |s| s.manage_backend_security_group_rules == Some(false)),
        (k::DISABLE_NLB_SG, "true", |s| s.disable_nlb_security_group),
        (k::INBOUND_SG_RULES_ON_PRIVATE_LINK, "off", |s| s.inbound_sg_rules_on_private_link == Some(false)),
        (k::SECURITY_GROUP_PREFIX_LISTS, "pl-1", |s| s.security_group_prefix_lists == Some(vec!["pl-1".into()])),
        (k::SOURCE_RANGES, "10.0.0.0/8, 2001:db8::/32", |s| s.source_ranges.as_ref().is_some_and(|r| r.len() == 2)),
        ("aws-load-balancer-listener-attributes.TCP-80", "tcp.idle_timeout.seconds=400", |s| {
            s.listener_attributes[&(Protocol::Tcp, 80)]["tcp.idle_timeout.seconds"] == "400"
        }),
        ("aws-load-balancer-listener-attributes.TCP_UDP-53", "", |s| {
            s.listener_attributes.contains_key(&(Protocol::TcpUdp, 53))
        }),
        (k::MULTI_CLUSTER_TARGET_GROUP, "true", |s| s.multi_cluster_target_group),
        (k::ENABLE_TCP_UDP_LISTENER, "true", |s| s.enable_tcp_udp_listener == Some(true)),
        (k::ENABLE_ICMP_PMTUD, "on", |s| s.enable_icmp_for_path_mtu_discovery),
        (k::ENABLE_ICMP_PMTUD, "off", |s| !s.enable_icmp_for_path_mtu_discovery),
        (k::MINIMUM_CAPACITY, "CapacityUnits=1500", |s| s.minimum_capacity_units == Some(1500)),
        (k::CROSS_ZONE_ENABLED, "true", |s| s.load_balancer_attributes["load_balancing.cross_zone.enabled"] == "true"),
        (k::LOAD_BALANCER_TYPE, "external", |s| s.load_balancer_type.as_deref() == Some("external")),
        (k::TARGET_TYPE, "ip", |s| s.target_type.as_deref() == Some("ip")),
        (k::TARGET_NODE_LABELS, "role=edge,zone=a", |s| {
            s.target_node_labels == Some(BTreeMap::from([("role".into(), "edge".into()), ("zone".into(), "a".into())]))
                && s.unsupported.is_empty()
        }),
        (k::ENABLE_PREFIX_FOR_IPV6_SOURCE_NAT, "off", |s| s.unsupported.is_empty() && s.ipv6_source_nat == Some(false)),
        (k::ENABLE_PREFIX_FOR_IPV6_SOURCE_NAT, "on", |s| s.ipv6_source_nat == Some(true)),
        (k::SOURCE_NAT_IPV6_PREFIXES, "auto_assigned, 2600:1F18:0:1:2::/80", |s| {
            s.source_nat_ipv6_prefixes == Some(vec!["auto_assigned".into(), "2600:1f18:0:1:2::/80".into()])
        }),
    ];
    for (key, value, check) in cases {
        let s = ok(&[(key, value)]);
        assert!(check(&s), "{key}={value:?}: {s:#?}");
        assert!(s.unknown.is_empty(), "{key} reported unknown");
    }
}

/// Every invalid form: the error names the key, the value and what is accepted.
#[test]
fn invalid_values_table() {
    let cases: &[(&str, &str, &str)] = &[
        (k::NAME, "this-name-is-far-too-long-for-aws-nlb", "1 to 32"),
        (k::NAME, "-lead", "hyphen"),
        (k::NAME, "under_score", "letters, digits"),
        (k::NAME, "internal-x", "internal-"),
        (k::SCHEME, "public", "\"internet-facing\""),
        (k::SCHEME, "Internal", "\"internal\""),
        (k::INTERNAL, "yes", "\"true\" or \"false\""),
        (k::IP_ADDRESS_TYPE, "dualstack-without-public-ipv4", "\"dualstack\""),
        (k::EIP_ALLOCATIONS, "eipalloc-1, 1.2.3.4", "invalid: 1.2.3.4"),
        (k::PRIVATE_IPV4_ADDRESSES, "10.0.0.300", "IPv4"),
        (k::PRIVATE_IPV4_ADDRESSES, "2600::1", "IPv4"),
        (k::IPV6_ADDRESSES, "10.0.0.1", "IPv6"),
        (k::ATTRIBUTES, "deletion_protection.enabled", "key=value"),
        (k::ATTRIBUTES, "dns_record.client_routing_policy=nearest", "any_availability_zone"),
        (k::TARGET_GROUP_ATTRIBUTES, "preserve_client_ip.enabled=maybe", "preserve_client_ip.enabled=true"),
        (k::TARGET_GROUP_ATTRIBUTES, "=x", "non-empty keys"),
        (k::TARGET_NODE_LABELS, "role", "key=value"),
        ("aws-load-balancer-target-group-attributes.http", "a=b", "<service port number>"),
        (k::PROXY_PROTOCOL, "all", "\"*\""),
        (k::PROXY_PROTOCOL_PER_TARGET_GROUP, "80,https", "invalid: https"),
        (k::ADDITIONAL_TAGS, "team", "key=value"),
        (k::HC_PROTOCOL, "udp", "\"tcp\", \"http\" or \"https\""),
        (k::HC_PORT, "70000", "1 to 65535"),
        (k::HC_PORT, "0", "1 to 65535"),
        (k::HC_PORT, "-1", "traffic-port"),
        (k::HC_PATH, "healthz", "starting with \"/\""),
        (k::HC_INTERVAL, "1", "from 5 to 300"),
        (k::HC_INTERVAL, "ten", "from 5 to 300"),
        (k::HC_TIMEOUT, "121", "from 2 to 120"),
        (k::HC_HEALTHY_THRESHOLD, "1", "from 2 to 10"),
        (k::HC_UNHEALTHY_THRESHOLD, "11", "from 2 to 10"),
        (k::HC_SUCCESS_CODES, "2xx", "200 to 599"),
        (k::HC_SUCCESS_CODES, "399-200", "200 to 599"),
        (k::BACKEND_PROTOCOL, "tls", "\"tcp\" or \"ssl\""),
        (k::ALPN_POLICY, "h2", "HTTP2Preferred"),
        (k::MANAGE_BACKEND_SG_RULES, "sure", "\"true\""),
        (k::DISABLE_NLB_SG, "1x", "\"true\""),
        (k::INBOUND_SG_RULES_ON_PRIVATE_LINK, "true", "\"on\", \"off\""),
        (k::SECURITY_GROUP_PREFIX_LISTS, "10.0.0.0/8", "pl-"),
        (k::SOURCE_RANGES, "10.0.0.0/33", "CIDR"),
        ("aws-load-balancer-listener-attributes.tcp-80", "a=b", "TCP-80"),
        ("aws-load-balancer-listener-attributes.TCP-x", "a=b", "<port>"),
        (k::MULTI_CLUSTER_TARGET_GROUP, "on", "\"true\""),
        (k::ENABLE_TCP_UDP_LISTENER, "enabled", "\"true\""),
        (k::ENABLE_ICMP_PMTUD, "true", "\"on\""),
        (k::MINIMUM_CAPACITY, "LCU=5", "CapacityUnits=N"),
        (k::MINIMUM_CAPACITY, "CapacityUnits=-1", "CapacityUnits=N"),
        (k::ACCESS_LOG_ENABLED, "y", "\"true\""),
        (k::CROSS_ZONE_ENABLED, "n", "\"true\""),
        (k::ENABLE_PREFIX_FOR_IPV6_SOURCE_NAT, "yes", "one of \"on\", \"off\""),
        (k::SOURCE_NAT_IPV6_PREFIXES, "2600:1f18::/64", "(invalid: 2600:1f18::/64)"),
        (k::SOURCE_NAT_IPV6_PREFIXES, "10.0.0.0/80", "IPv6 /80 prefixes"),
        (k::SOURCE_NAT_IPV6_PREFIXES, "auto", "or auto_assigned (invalid: auto)"),
    ];
    for (key, value, expected_fragment) in cases {
        let errs = parse(&[(key, value)]).expect_err(&format!("{key}={value:?} should fail"));
        assert_eq!(errs.0.len(), 1, "{key}={value:?}: {errs}");
        let e = &errs.0[0];
        assert_eq!(e.key, full_key(key));
        assert_eq!(e.value, *value);
        let text = e.to_string();
        assert!(text.contains(&full_key(key)) && text.contains(&format!("{value:?}")), "{text}");
        assert!(text.contains(expected_fragment), "{key}={value:?}: {text:?} lacks {expected_fragment:?}");
    }
}

#[test]
fn all_errors_are_collected() {
    let errs = parse(&[(k::SCHEME, "public"), (k::HC_INTERVAL, "1"), (k::ALPN_POLICY, "h2")]).unwrap_err();
    assert_eq!(errs.0.len(), 3, "{errs}");
    assert!(errs.to_string().starts_with("3 invalid annotations"));
}

#[test]
fn scheme_annotation_beats_deprecated_internal() {
    let s = ok(&[(k::SCHEME, "internet-facing"), (k::INTERNAL, "true")]);
    assert_eq!(s.scheme, Some(Scheme::InternetFacing));
}

#[test]
fn deprecated_attributes_win_over_attributes_annotation() {
    let s = ok(&[
        (k::ATTRIBUTES, "load_balancing.cross_zone.enabled=false,access_logs.s3.bucket=new"),
        (k::CROSS_ZONE_ENABLED, "true"),
        (k::ACCESS_LOG_ENABLED, "true"),
        (k::ACCESS_LOG_S3_BUCKET_NAME, "old"),
        (k::ACCESS_LOG_S3_BUCKET_PREFIX, "p"),
    ]);
    let a = &s.load_balancer_attributes;
    assert_eq!(a["load_balancing.cross_zone.enabled"], "true");
    assert_eq!(a["access_logs.s3.bucket"], "old");
    assert_eq!(a["access_logs.s3.prefix"], "p");
    assert_eq!(a["access_logs.s3.enabled"], "true");
    // Disabled access logs contribute nothing, and the bucket annotations are not "unknown".
    let off = ok(&[(k::ACCESS_LOG_ENABLED, "false"), (k::ACCESS_LOG_S3_BUCKET_NAME, "b")]);
    assert!(off.load_balancer_attributes.is_empty());
    assert!(off.unknown.is_empty());
}

#[test]
fn unsupported_and_unknown_are_reported_not_ignored() {
    let s = ok(&[
        (k::QUIC_ENABLED_CONTAINERS, "app"),
        (k::BACKEND_PROTOCOL, "http"),
        (k::ADDITIONAL_TAGS, "elbv2.k8s.aws/cluster=other,team=a,ingress.k8s.aws/stack=victim,service.k8s.aws/x=y"),
        ("aws-load-balancer-helthcheck-path", "/x"),
        ("aws-load-balancer-connection-idle-timeout", "60"),
    ]);
    let keys: Vec<&str> = s.unsupported.iter().map(|u| u.key.as_str()).collect();
    assert!(keys.contains(&full_key(k::QUIC_ENABLED_CONTAINERS).as_str()), "{keys:?}");
    assert!(keys.contains(&full_key(k::BACKEND_PROTOCOL).as_str()));
    assert_eq!(s.additional_tags, Tags::from([("team".into(), "a".into())]), "controller tag dropped");
    assert_eq!(
        s.unknown,
        [full_key("aws-load-balancer-connection-idle-timeout"), full_key("aws-load-balancer-helthcheck-path")]
    );
    let w = s.warnings();
    assert!(
        w.iter()
            .any(|m| m.starts_with("unknown annotation service.beta.kubernetes.io/aws-load-balancer-helthcheck-path"))
    );
    // Every ownership prefix, ours and the upstream's of any stack kind, is refused in user tags,
    // each key named with its prefix.
    let refused = w.iter().find(|m| m.contains("uses a prefix that marks")).expect("the refused tags named");
    for (key, prefix) in [
        ("elbv2.k8s.aws/cluster", "elbv2.k8s.aws/"),
        ("ingress.k8s.aws/stack", "ingress.k8s.aws/"),
        ("service.k8s.aws/x", "service.k8s.aws/"),
    ] {
        assert!(refused.contains(&format!("{key:?} (prefix {prefix:?})")), "{key}: {refused}");
    }
    assert!(refused.contains("The tag is not applied, the other tags are") && !refused.contains("\"team\""));
    // Other prefixes are not ours to judge.
    assert!(ok(&[]).unknown.is_empty());
    let foreign = parse_annotations(&BTreeMap::from([("example.com/x".to_string(), "y".to_string())])).unwrap();
    assert!(foreign.unknown.is_empty() && foreign.unsupported.is_empty());
}
