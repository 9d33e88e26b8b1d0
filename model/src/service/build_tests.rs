use super::*;
use crate::crd::{NetworkingProtocol, TargetType};
use crate::lb::{Action, HealthCheckPort, Protocol, RuleSource, TargetGroupRef, TgIpAddressType};
use crate::service::keys as k;
use crate::service::keys::full_key;
use crate::service::parse_annotations;
use k8s_openapi::api::core::v1::{ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

const UID: &str = "3f1b7c2e-0000-4000-8000-000000000001";

fn port(name: &str, port: i32, protocol: &str, target: IntOrString) -> ServicePort {
    ServicePort {
        name: (!name.is_empty()).then(|| name.to_string()),
        port,
        protocol: Some(protocol.into()),
        target_port: Some(target),
        ..Default::default()
    }
}

fn svc(ports: Vec<ServicePort>, ann: &[(&str, &str)]) -> Service {
    let mut s = Service::default();
    s.metadata.namespace = Some("default".into());
    s.metadata.name = Some("echo".into());
    s.metadata.uid = Some(UID.into());
    s.metadata.annotations = Some(ann.iter().map(|(k, v)| (full_key(k), v.to_string())).collect());
    s.spec = Some(ServiceSpec { type_: Some("LoadBalancer".into()), ports: Some(ports), ..Default::default() });
    s
}

fn subnet(id: &str, cidr: &str, v6: Option<&str>) -> Subnet {
    Subnet {
        id: id.into(),
        vpc_id: "vpc-1".into(),
        availability_zone: format!("az-{id}"),
        cidr: cidr.into(),
        ipv6_cidrs: v6.into_iter().map(String::from).collect(),
        available_ips: 100,
        tags: Tags::new(),
    }
}

fn ctx() -> BuildContext {
    let mut c = BuildContext::new("prod", "vpc-1");
    // As the resolver hands them over (by subnet ID when discovered).
    c.subnets = vec![
        subnet("subnet-a", "10.0.1.0/24", Some("2600:1f18:0:1::/64")),
        subnet("subnet-b", "10.0.2.0/24", Some("2600:1f18:0:2::/64")),
    ];
    c.vpc_cidrs = vec!["10.0.0.0/16".into()];
    c.backend_security_group = Some("sg-backend".into());
    c.default_tags = Tags::from([("owner".into(), "platform".into())]);
    c.default_target_type = TargetType::Ip;
    c
}

fn build(s: &Service, c: &BuildContext) -> Result<ServiceStack, BuildError> {
    let settings = parse_annotations(s.metadata.annotations.as_ref().unwrap()).expect("valid annotations");
    build_stack(s, &settings, c)
}

fn tcp80() -> Vec<ServicePort> {
    vec![port("http", 80, "TCP", IntOrString::Int(8080))]
}

#[test]
fn plain_tcp_service() {
    let st = build(&svc(tcp80(), &[]), &ctx()).unwrap();
    let lb = &st.stack.load_balancer;
    assert_eq!(st.stack.id, "default/echo");
    assert_eq!(lb.name, "k8s-default-echo-731d9390f7", "ALBC name: internal scheme by default");
    assert_eq!(lb.scheme, Scheme::Internal);
    assert_eq!(lb.subnets.iter().map(|m| m.subnet_id.as_str()).collect::<Vec<_>>(), ["subnet-a", "subnet-b"]);
    assert_eq!(lb.security_groups, ["managed:frontend", "sg-backend"], "frontend SG named for the plan to resolve");
    assert_eq!(lb.tags["service.k8s.aws/resource"], "LoadBalancer");
    assert_eq!(lb.tags["service.k8s.aws/stack"], "default/echo");
    assert_eq!(lb.tags["elbv2.k8s.aws/cluster"], "prod");
    assert_eq!(lb.tags["owner"], "platform");
    let [tg] = st.stack.target_groups.as_slice() else { panic!() };
    assert_eq!(tg.name, "k8s-default-echo-e7096d4508", "ALBC TG name");
    assert_eq!((tg.protocol, tg.port, tg.target_type.as_str()), (Protocol::Tcp, 8080, "ip"));
    assert_eq!(tg.health_check.protocol, Protocol::Tcp);
    assert_eq!(tg.health_check.port, HealthCheckPort::TrafficPort);
    assert_eq!((tg.health_check.interval_seconds, tg.health_check.timeout_seconds), (10, 10));
    assert_eq!((tg.health_check.healthy_threshold, tg.health_check.unhealthy_threshold), (3, 3));
    assert_eq!(tg.health_check.path, None);
    assert_eq!(tg.attributes["proxy_protocol_v2.enabled"], "false");
    assert_eq!(tg.tags["service.k8s.aws/resource"], "default/echo:80");
    let [l] = st.stack.listeners.as_slice() else { panic!() };
    assert_eq!((l.port, l.protocol), (80, Protocol::Tcp));
    assert!(l.certificates.is_empty() && l.ssl_policy.is_none());
    assert_eq!(l.tags["service.k8s.aws/resource"], "80");
    let Action::Forward { target_groups, .. } = &l.default_actions[0] else { panic!() };
    assert_eq!(target_groups[0].target_group, crate::lb::TargetGroupRef::Name(tg.name.clone()));
    let sg = st.stack.frontend_security_group.as_ref().unwrap();
    assert_eq!(sg.name, "k8s-default-echo-940fba9c7a");
    assert_eq!(sg.tags["service.k8s.aws/resource"], "ManagedLBSecurityGroup");
    assert_eq!(sg.ingress.len(), 1);
    assert_eq!((sg.ingress[0].protocol.as_str(), sg.ingress[0].from_port), ("tcp", 80));
    assert_eq!(sg.ingress[0].source, RuleSource::Cidr("0.0.0.0/0".into()));
    let [tgb] = st.bindings.as_slice() else { panic!() };
    assert_eq!((tgb.name.as_str(), tgb.namespace.as_str()), (tg.name.as_str(), "default"));
    assert_eq!(tgb.spec.target_group_name.as_deref(), Some(tg.name.as_str()));
    assert_eq!(tgb.spec.target_type, Some(TargetType::Ip));
    assert_eq!(tgb.spec.service_ref.port, IntOrString::Int(80));
    assert_eq!(tgb.spec.vpc_id.as_deref(), Some("vpc-1"));
    assert_eq!(tgb.spec.multi_cluster_target_group, None);
    let rule = &tgb.spec.networking.as_ref().unwrap().ingress[0];
    assert_eq!(rule.from[0].security_group.as_ref().unwrap().group_id, "sg-backend");
    assert_eq!(rule.ports.len(), 1);
    assert_eq!(rule.ports[0].protocol, Some(NetworkingProtocol::TCP));
    assert_eq!(rule.ports[0].port, Some(IntOrString::Int(8080)));
    assert!(st.backend_security_group_used);
    assert!(st.warnings.is_empty());
}

#[test]
fn udp_service_opens_udp_and_tcp_health_checks() {
    let st = build(&svc(vec![port("dns", 53, "UDP", IntOrString::Int(5353))], &[]), &ctx()).unwrap();
    assert_eq!(st.stack.listeners[0].protocol, Protocol::Udp);
    assert_eq!(st.stack.target_groups[0].protocol, Protocol::Udp);
    assert_eq!(st.stack.frontend_security_group.as_ref().unwrap().ingress[0].protocol, "udp");
    let ports = &st.bindings[0].spec.networking.as_ref().unwrap().ingress[0].ports;
    let protos: Vec<_> = ports.iter().map(|p| p.protocol.unwrap()).collect();
    assert_eq!(protos, [NetworkingProtocol::TCP, NetworkingProtocol::UDP], "health checks are TCP on the traffic port");
}

#[test]
fn tcp_and_udp_on_one_port() {
    let ports =
        vec![port("dns-tcp", 53, "TCP", IntOrString::Int(53)), port("dns-udp", 53, "UDP", IntOrString::Int(53))];
    let err = build(&svc(ports.clone(), &[]), &ctx()).unwrap_err();
    assert!(err.to_string().contains("enable-tcp-udp-listener: \"true\""), "{err}");
    let st = build(&svc(ports.clone(), &[(k::ENABLE_TCP_UDP_LISTENER, "true")]), &ctx()).unwrap();
    assert_eq!(st.stack.listeners.len(), 1);
    assert_eq!(st.stack.listeners[0].protocol, Protocol::TcpUdp);
    assert_eq!(st.stack.target_groups[0].protocol, Protocol::TcpUdp);
    let sg_protocols: Vec<_> =
        st.stack.frontend_security_group.unwrap().ingress.iter().map(|r| r.protocol.clone()).collect();
    assert_eq!(sg_protocols, ["tcp", "udp"]);
    let mut c = ctx();
    c.enable_tcp_udp_listener = true;
    assert!(build(&svc(ports.clone(), &[]), &c).is_ok(), "controller-wide default");
    assert!(build(&svc(ports, &[(k::ENABLE_TCP_UDP_LISTENER, "false")]), &c).is_err(), "annotation wins");
}

#[test]
fn quic_enabled_ports_upgrade_udp_to_quic_and_tcp_udp_to_tcp_quic() {
    use crate::crd::TargetGroupProtocol;
    let ports = vec![
        port("h3", 443, "UDP", IntOrString::Int(8443)),
        port("web-tcp", 8443, "TCP", IntOrString::Int(8443)),
        port("web-udp", 8443, "UDP", IntOrString::Int(8443)),
        port("dns", 53, "UDP", IntOrString::Int(53)),
    ];
    let ann = [(k::QUIC_ENABLED_PORTS, "h3, 8443"), (k::ENABLE_TCP_UDP_LISTENER, "true")];
    let st = build(&svc(ports.clone(), &ann), &ctx()).unwrap();
    let listeners: Vec<_> = st.stack.listeners.iter().map(|l| (l.port, l.protocol)).collect();
    assert_eq!(listeners, [(53, Protocol::Udp), (443, Protocol::Quic), (8443, Protocol::TcpQuic)]);
    let tgs: Vec<_> = st.stack.target_groups.iter().map(|t| t.protocol).collect();
    assert_eq!(tgs, [Protocol::Udp, Protocol::Quic, Protocol::TcpQuic]);
    let bound: Vec<_> = st.bindings.iter().map(|b| b.spec.target_group_protocol).collect();
    assert_eq!(bound, [None, Some(TargetGroupProtocol::QUIC), Some(TargetGroupProtocol::TcpQuic)]);
    let quic_ports = &st.bindings[1].spec.networking.as_ref().unwrap().ingress[0].ports;
    let protos: Vec<_> = quic_ports.iter().map(|p| p.protocol.unwrap()).collect();
    assert_eq!(protos, [NetworkingProtocol::TCP, NetworkingProtocol::UDP], "QUIC is UDP, health checks TCP");
    // A new target group name: the protocol is part of it, so turning QUIC on replaces the group.
    let plain = build(&svc(ports.clone(), &[(k::ENABLE_TCP_UDP_LISTENER, "true")]), &ctx()).unwrap();
    assert_ne!(plain.stack.target_groups[1].name, st.stack.target_groups[1].name);
    // QUIC over TCP, an unknown port, instance targets: refused with the fix.
    let tcp = vec![port("web", 443, "TCP", IntOrString::Int(8443))];
    let err = build(&svc(tcp, &[(k::QUIC_ENABLED_PORTS, "443")]), &ctx()).unwrap_err().to_string();
    assert!(err.contains("which is TCP; QUIC runs over UDP"), "{err}");
    let err = build(&svc(ports.clone(), &[(k::QUIC_ENABLED_PORTS, "h4")]), &ctx()).unwrap_err().to_string();
    assert!(err.contains("names port \"h4\", which the Service does not have"), "{err}");
    let udp = vec![port("h3", 443, "UDP", IntOrString::Int(8443))];
    let inst = [(k::QUIC_ENABLED_PORTS, "443"), (k::TARGET_TYPE, "instance")];
    let err = build(&svc(udp, &inst), &ctx()).unwrap_err().to_string();
    assert!(err.contains("QUIC targets must be pod IPs"), "{err}");
}

#[test]
fn tls_by_port_name_and_number() {
    let ports = vec![
        port("http", 80, "TCP", IntOrString::Int(8080)),
        port("https", 443, "TCP", IntOrString::Int(8080)),
        port("alt", 8443, "TCP", IntOrString::Int(8080)),
    ];
    let ann = [(k::SSL_CERT, "arn:cert1,arn:cert2"), (k::SSL_PORTS, "https, 8443"), (k::ALPN_POLICY, "HTTP2Preferred")];
    let st = build(&svc(ports.clone(), &ann), &ctx()).unwrap();
    let protos: Vec<_> = st.stack.listeners.iter().map(|l| (l.port, l.protocol)).collect();
    assert_eq!(protos, [(80, Protocol::Tcp), (443, Protocol::Tls), (8443, Protocol::Tls)]);
    let tls = &st.stack.listeners[1];
    assert_eq!(tls.certificates, ["arn:cert1", "arn:cert2"]);
    assert_eq!(tls.ssl_policy.as_deref(), Some(DEFAULT_SSL_POLICY));
    assert_eq!(tls.alpn_policy.as_deref(), Some("HTTP2Preferred"));
    assert_eq!(st.stack.listeners[0].alpn_policy, None);
    assert!(st.stack.target_groups.iter().all(|tg| tg.protocol == Protocol::Tcp), "TLS terminates at the NLB");
    // backend-protocol ssl → TLS target groups; no ssl-ports → every TCP port.
    let st = build(&svc(ports.clone(), &[(k::SSL_CERT, "arn:c"), (k::BACKEND_PROTOCOL, "ssl")]), &ctx()).unwrap();
    assert!(st.stack.listeners.iter().all(|l| l.protocol == Protocol::Tls));
    assert!(st.stack.target_groups.iter().all(|tg| tg.protocol == Protocol::Tls));
    // A port ssl-ports names that does not exist.
    let err = build(&svc(ports, &[(k::SSL_CERT, "arn:c"), (k::SSL_PORTS, "htps")]), &ctx()).unwrap_err();
    assert!(err.to_string().contains("\"htps\""), "{err}");
}

#[test]
fn dualstack_and_ipv6_target_groups() {
    let mut s =
        svc(tcp80(), &[(k::IP_ADDRESS_TYPE, "dualstack"), (k::IPV6_ADDRESSES, "2600:1f18:0:1::10, 2600:1f18:0:2::10")]);
    s.spec.as_mut().unwrap().ip_families = Some(vec!["IPv6".into()]);
    assert!(build(&s, &ctx()).unwrap_err().to_string().contains("needs a VPC with IPv6"));
    let mut c = ctx();
    c.ipv6_available = true;
    let st = build(&s, &c).unwrap();
    assert_eq!(st.stack.load_balancer.ip_address_type, LbIpAddressType::Dualstack);
    assert_eq!(st.stack.load_balancer.subnets[0].ipv6, Some("2600:1f18:0:1::10".parse().unwrap()));
    assert_eq!(st.stack.target_groups[0].ip_address_type, TgIpAddressType::Ipv6);
    let sources: Vec<_> = st.stack.frontend_security_group.unwrap().ingress.into_iter().map(|r| r.source).collect();
    assert!(sources.contains(&RuleSource::Ipv6Cidr("::/0".into())));
    // IPv6 Service behind an IPv4 NLB.
    let mut v4 = svc(tcp80(), &[]);
    v4.spec.as_mut().unwrap().ip_families = Some(vec!["IPv6".into()]);
    assert!(build(&v4, &c).unwrap_err().to_string().contains("ipFamilies include IPv6"));
}

/// ALBC `ValidateEnablePrefixForIpv6SourceNat` / `ValidateSourceNatPrefixes`: dualstack only, every
/// subnet with an IPv6 CIDR, one prefix per subnet (in the subnets' order) inside it, or auto_assigned.
#[test]
fn ipv6_source_nat_prefixes_follow_the_subnets_and_are_checked() {
    let mut c = ctx();
    c.ipv6_available = true;
    let on = (k::ENABLE_PREFIX_FOR_IPV6_SOURCE_NAT, "on");
    let ds = (k::IP_ADDRESS_TYPE, "dualstack");
    let prefixes = (k::SOURCE_NAT_IPV6_PREFIXES, "2600:1f18:0:1:5::/80, auto_assigned");
    let st = build(&svc(tcp80(), &[ds, on, prefixes]), &c).unwrap();
    let lb = &st.stack.load_balancer;
    assert_eq!(lb.ipv6_source_nat, Some(true));
    let got: Vec<_> = lb.subnets.iter().map(|m| (m.subnet_id.as_str(), m.source_nat_ipv6_prefix.as_deref())).collect();
    assert_eq!(got, [("subnet-a", Some("2600:1f18:0:1:5::/80")), ("subnet-b", Some("auto_assigned"))]);
    // On without prefixes: AWS picks them; off is passed on as off.
    let st = build(&svc(tcp80(), &[ds, on]), &c).unwrap();
    assert!(st.stack.load_balancer.subnets.iter().all(|m| m.source_nat_ipv6_prefix.is_none()));
    let off = build(&svc(tcp80(), &[(k::ENABLE_PREFIX_FOR_IPV6_SOURCE_NAT, "off")]), &c).unwrap();
    assert_eq!(off.stack.load_balancer.ipv6_source_nat, Some(false));
    assert_eq!(build(&svc(tcp80(), &[]), &c).unwrap().stack.load_balancer.ipv6_source_nat, None);

    let err = |ann: &[(&str, &str)], c: &BuildContext| build(&svc(tcp80(), ann), c).unwrap_err().to_string();
    let e = err(&[on], &c);
    assert!(e.contains("is \"on\" but ip-address-type is ipv4") && e.contains("needs a dualstack"), "{e}");
    let e = err(&[ds, prefixes], &c);
    assert!(e.contains("is set but") && e.contains("enable-prefix-for-ipv6-source-nat is not \"on\""), "{e}");
    let e = err(&[prefixes], &c);
    assert!(e.contains("needs ip-address-type dualstack, not ipv4"), "{e}");
    let e = err(&[ds, on, (k::SOURCE_NAT_IPV6_PREFIXES, "auto_assigned")], &c);
    assert!(e.contains("1 source NAT prefixes are configured for 2 subnets"), "{e}");
    let e = err(&[ds, on, (k::SOURCE_NAT_IPV6_PREFIXES, "auto_assigned, 2600:1f18:0:1:5::/80")], &c);
    assert!(
        e.contains("prefix 2600:1f18:0:1:5::/80 is not inside subnet subnet-b (IPv6 CIDR blocks: 2600:1f18:0:2::/64)"),
        "{e}"
    );
    let mut no_v6 = c.clone();
    no_v6.subnets[0].ipv6_cidrs.clear();
    let e = err(&[ds, on], &no_v6);
    assert!(e.contains("subnets subnet-a have no IPv6 CIDR block"), "{e}");
}

#[test]
fn eip_allocations_follow_the_subnets_order_and_scheme() {
    let ann = [(k::SCHEME, "internet-facing"), (k::EIP_ALLOCATIONS, "eipalloc-a,eipalloc-b")];
    let st = build(&svc(tcp80(), &ann), &ctx()).unwrap();
    let m = &st.stack.load_balancer.subnets;
    assert_eq!((m[0].subnet_id.as_str(), m[0].allocation_id.as_deref()), ("subnet-a", Some("eipalloc-a")));
    assert_eq!((m[1].subnet_id.as_str(), m[1].allocation_id.as_deref()), ("subnet-b", Some("eipalloc-b")));
    let err = build(&svc(tcp80(), &[(k::SCHEME, "internet-facing"), (k::EIP_ALLOCATIONS, "eipalloc-a")]), &ctx())
        .unwrap_err();
    assert!(err.to_string().contains("1 EIP allocations are configured for 2 subnets"), "{err}");
    let err = build(&svc(tcp80(), &[(k::EIP_ALLOCATIONS, "eipalloc-a,eipalloc-b")]), &ctx()).unwrap_err();
    assert!(err.to_string().contains("only be set for internet-facing"), "{err}");
    // Subnets named "subnet-b,subnet-a": the EIPs pair in that order, as ALBC v3.5 pairs them.
    let mut named = ctx();
    named.subnets.reverse();
    let st = build(&svc(tcp80(), &ann), &named).unwrap();
    let m = &st.stack.load_balancer.subnets;
    assert_eq!((m[0].subnet_id.as_str(), m[0].allocation_id.as_deref()), ("subnet-a", Some("eipalloc-b")));
    assert_eq!((m[1].subnet_id.as_str(), m[1].allocation_id.as_deref()), ("subnet-b", Some("eipalloc-a")));
}

#[test]
fn private_ipv4_addresses_must_sit_in_their_subnets() {
    let st = build(&svc(tcp80(), &[(k::PRIVATE_IPV4_ADDRESSES, "10.0.2.9, 10.0.1.9")]), &ctx()).unwrap();
    let ips: Vec<_> = st.stack.load_balancer.subnets.iter().map(|m| m.private_ipv4.unwrap().to_string()).collect();
    assert_eq!(ips, ["10.0.1.9", "10.0.2.9"], "matched by CIDR, not by position");
    let err = build(&svc(tcp80(), &[(k::PRIVATE_IPV4_ADDRESSES, "10.0.1.9, 10.0.9.9")]), &ctx()).unwrap_err();
    assert!(err.to_string().contains("inside subnet subnet-b (10.0.2.0/24), found 0"), "{err}");
    let ann = [(k::SCHEME, "internet-facing"), (k::PRIVATE_IPV4_ADDRESSES, "10.0.1.9,10.0.2.9")];
    assert!(build(&svc(tcp80(), &ann), &ctx()).unwrap_err().to_string().contains("only be set for internal"));
}

#[test]
fn local_traffic_policy_keeps_ip_mode_defaults() {
    let mut s = svc(tcp80(), &[]);
    let spec = s.spec.as_mut().unwrap();
    spec.external_traffic_policy = Some("Local".into());
    spec.health_check_node_port = Some(32000);
    let hc = build(&s, &ctx()).unwrap().stack.target_groups[0].health_check.clone();
    assert_eq!((hc.protocol, hc.port, hc.path), (Protocol::Tcp, HealthCheckPort::TrafficPort, None));
}

#[test]
fn http_health_check_and_named_port() {
    let ports =
        vec![port("http", 80, "TCP", IntOrString::Int(8080)), port("metrics", 9090, "TCP", IntOrString::Int(10254))];
    let ann = [(k::HC_PROTOCOL, "http"), (k::HC_PORT, "metrics"), (k::HC_INTERVAL, "30")];
    let st = build(&svc(ports, &ann), &ctx()).unwrap();
    let tg = &st.stack.target_groups[0];
    assert_eq!(tg.health_check.port, HealthCheckPort::Port(10254));
    assert_eq!(tg.health_check.path.as_deref(), Some("/"));
    assert_eq!(tg.health_check.success_codes.as_deref(), Some("200-399"));
    assert_ne!(tg.name, "k8s-default-echo-e7096d4508", "health-check protocol and interval are hashed");
    let ports = &st.bindings[0].spec.networking.as_ref().unwrap().ingress[0].ports;
    assert_eq!(ports.last().unwrap().port, Some(IntOrString::Int(10254)), "health-check port opened");
    let named = vec![port("http", 80, "TCP", IntOrString::String("web".into()))];
    let st = build(&svc(named.clone(), &[]), &ctx()).unwrap();
    assert_eq!(st.stack.target_groups[0].port, 1, "named targetPort: placeholder port");
    let err = build(&svc(named, &[(k::HC_PORT, "http")]), &ctx()).unwrap_err();
    assert!(err.to_string().contains("targetPort is not a number"), "{err}");
}

/// ALBC's gate NLBSecurityGroup off: a new NLB gets no security group at all (as with
/// `disable-nlb-sg`), its targets admit the NLB's subnets by CIDR.
#[test]
fn without_the_nlb_security_group_gate_an_nlb_gets_no_frontend_group() {
    let mut c = ctx();
    c.manage_frontend_security_groups = false;
    let st = build(&svc(tcp80(), &[]), &c).unwrap();
    assert!(st.stack.load_balancer.security_groups.is_empty(), "{:?}", st.stack.load_balancer.security_groups);
    assert!(st.stack.frontend_security_group.is_none());
    let from = &st.bindings[0].spec.networking.as_ref().unwrap().ingress[0].from;
    assert!(from.iter().all(|p| p.ip_block.is_some()), "CIDR sources, no security group: {from:?}");
}

#[test]
fn custom_security_groups_and_no_security_groups() {
    let st = build(&svc(tcp80(), &[(k::SECURITY_GROUPS, "sg-1, sg-2")]), &ctx()).unwrap();
    assert_eq!(st.stack.load_balancer.security_groups, ["sg-1", "sg-2"]);
    assert!(st.stack.frontend_security_group.is_none());
    assert!(st.bindings[0].spec.networking.is_none(), "backend rules default off with custom SGs");
    let ann = [(k::SECURITY_GROUPS, "sg-1"), (k::MANAGE_BACKEND_SG_RULES, "true")];
    let st = build(&svc(tcp80(), &ann), &ctx()).unwrap();
    assert_eq!(st.stack.load_balancer.security_groups, ["sg-1", "sg-backend"]);
    assert!(st.bindings[0].spec.networking.is_some());
    let err = build(&svc(tcp80(), &[(k::SECURITY_GROUPS, "web-sg")]), &ctx()).unwrap_err();
    assert!(err.to_string().contains("not resolved"), "{err}");
    // disable-nlb-sg: CIDR rules; ip targets without client-IP preservation admit the NLB subnets.
    let st = build(&svc(tcp80(), &[(k::DISABLE_NLB_SG, "true")]), &ctx()).unwrap();
    assert!(st.stack.load_balancer.security_groups.is_empty() && st.stack.frontend_security_group.is_none());
    let from = &st.bindings[0].spec.networking.as_ref().unwrap().ingress[0].from;
    let cidrs: Vec<_> = from.iter().map(|p| p.ip_block.as_ref().unwrap().cidr.as_str()).collect();
    assert_eq!(cidrs, ["10.0.1.0/24", "10.0.2.0/24"]);
    // Existing NLB without SGs stays without.
    let mut c = ctx();
    c.existing = Some(ExistingLoadBalancer {
        scheme: Scheme::InternetFacing,
        has_security_groups: false,
        customer_owned_ipv4_pool: None,
    });
    let st = build(&svc(tcp80(), &[]), &c).unwrap();
    assert!(st.stack.frontend_security_group.is_none());
    assert_eq!(st.stack.load_balancer.scheme, Scheme::InternetFacing, "existing scheme kept");
    // No backend SG: the frontend SG is the source until resolved.
    let mut c = ctx();
    c.backend_security_group = None;
    let mut st = build(&svc(tcp80(), &[]), &c).unwrap();
    assert_eq!(st.stack.load_balancer.security_groups, ["managed:frontend"]);
    st.resolve_frontend_security_group("sg-front");
    let peer = &st.bindings[0].spec.networking.as_ref().unwrap().ingress[0].from[0];
    assert_eq!(peer.security_group.as_ref().unwrap().group_id, "sg-front");
}

#[test]
fn source_ranges_prefix_lists_and_pmtud() {
    let mut s = svc(
        tcp80(),
        &[(k::SOURCE_RANGES, "192.168.0.0/16"), (k::SECURITY_GROUP_PREFIX_LISTS, "pl-1"), (k::ENABLE_ICMP_PMTUD, "on")],
    );
    s.spec.as_mut().unwrap().load_balancer_source_ranges = Some(vec!["203.0.113.0/24".into()]);
    let sg = build(&s, &ctx()).unwrap().stack.frontend_security_group.unwrap();
    let rules: Vec<_> =
        sg.ingress.iter().map(|r| (r.protocol.as_str(), r.from_port, r.to_port, r.source.clone())).collect();
    assert!(rules.contains(&("tcp", 80, 80, RuleSource::Cidr("203.0.113.0/24".into()))), "spec wins over annotation");
    assert!(!rules.iter().any(|r| r.3 == RuleSource::Cidr("192.168.0.0/16".into())));
    assert!(rules.contains(&("tcp", 80, 80, RuleSource::PrefixList("pl-1".into()))));
    assert!(rules.contains(&("icmp", 3, 4, RuleSource::Cidr("203.0.113.0/24".into()))));
    // Prefix lists alone: no 0.0.0.0/0 default.
    let sg = build(&svc(tcp80(), &[(k::SECURITY_GROUP_PREFIX_LISTS, "pl-1")]), &ctx())
        .unwrap()
        .stack
        .frontend_security_group
        .unwrap();
    assert_eq!(sg.ingress.len(), 1);
    let err = build(&svc(tcp80(), &[(k::SOURCE_RANGES, "2001:db8::/32")]), &ctx()).unwrap_err();
    assert!(err.to_string().contains("needs ip-address-type \"dualstack\""), "{err}");
}

#[test]
fn proxy_protocol_and_attributes() {
    let ports = vec![port("a", 80, "TCP", IntOrString::Int(80)), port("b", 443, "TCP", IntOrString::Int(443))];
    let ann = [
        (k::PROXY_PROTOCOL_PER_TARGET_GROUP, "443"),
        (k::TARGET_GROUP_ATTRIBUTES, "deregistration_delay.timeout_seconds=30,preserve_client_ip.enabled=true"),
        ("aws-load-balancer-target-group-attributes.80", "deregistration_delay.timeout_seconds=5"),
    ];
    let st = build(&svc(ports.clone(), &ann), &ctx()).unwrap();
    let a80 = &st.stack.target_groups[0].attributes;
    let a443 = &st.stack.target_groups[1].attributes;
    assert_eq!(
        (a80["proxy_protocol_v2.enabled"].as_str(), a443["proxy_protocol_v2.enabled"].as_str()),
        ("false", "true")
    );
    assert_eq!(
        (a80["deregistration_delay.timeout_seconds"].as_str(), a443["deregistration_delay.timeout_seconds"].as_str()),
        ("5", "30")
    );
    let st =
        build(&svc(ports, &[(k::PROXY_PROTOCOL, "*"), (k::PROXY_PROTOCOL_PER_TARGET_GROUP, "443")]), &ctx()).unwrap();
    assert!(st.stack.target_groups.iter().all(|tg| tg.attributes["proxy_protocol_v2.enabled"] == "true"), "* wins");
}

#[test]
fn multi_cluster_listener_attributes_and_extras() {
    let ann = [
        (k::MULTI_CLUSTER_TARGET_GROUP, "true"),
        ("aws-load-balancer-listener-attributes.TCP-80", "tcp.idle_timeout.seconds=600"),
        ("aws-load-balancer-listener-attributes.UDP-80", "a=b"),
        (k::MINIMUM_CAPACITY, "CapacityUnits=100"),
        (k::INBOUND_SG_RULES_ON_PRIVATE_LINK, "on"),
        (k::NAME, "custom-nlb"),
        (k::ADDITIONAL_TAGS, "owner=shop,cost=1"),
    ];
    let st = build(&svc(tcp80(), &ann), &ctx()).unwrap();
    assert_eq!(st.bindings[0].spec.multi_cluster_target_group, Some(true));
    assert_eq!(st.stack.listeners[0].attributes["tcp.idle_timeout.seconds"], "600");
    assert!(st.warnings.iter().any(|w| w.contains("UDP-80 matches no listener")), "{:?}", st.warnings);
    assert_eq!(
        st.extras,
        WantedExtras {
            enforce_inbound_rules_on_private_link: Some(true),
            minimum_capacity_units: Some(100),
            ..WantedExtras::default()
        }
    );
    assert_eq!(st.stack.load_balancer.name, "custom-nlb");
    assert_eq!(st.stack.load_balancer.tags["owner"], "platform", "--default-tags beat annotation tags");
    assert_eq!(st.stack.load_balancer.tags["cost"], "1");
    // ALBC's gate EnableDefaultTagsLowPriority: the annotation's tags win, on every resource.
    let mut low = ctx();
    low.default_tags_low_priority = true;
    let st = build(&svc(tcp80(), &ann), &low).unwrap();
    assert_eq!(st.stack.load_balancer.tags["owner"], "shop");
    assert!(st.stack.target_groups.iter().all(|tg| tg.tags["owner"] == "shop"));
    let mut c = ctx();
    c.external_managed_tags.insert("cost".into());
    assert!(build(&svc(tcp80(), &ann), &c).unwrap_err().to_string().contains("--external-managed-tags"));
}

#[test]
fn all_build_problems_are_reported_together() {
    let mut c = ctx();
    c.subnets.clear();
    let s = svc(vec![port("x", 80, "SCTP", IntOrString::Int(80))], &[(k::EIP_ALLOCATIONS, "eipalloc-1")]);
    let err = build(&s, &c).unwrap_err();
    assert!(err.problems.len() >= 3, "{err}");
    assert!(err.to_string().contains("no subnets"));
    assert!(err.to_string().contains("SCTP"));
}

#[test]
fn default_scheme_applies_only_where_nothing_else_decides() {
    let mut c = ctx();
    c.default_scheme = Scheme::InternetFacing;
    let plain = build(&svc(tcp80(), &[]), &c).unwrap();
    assert_eq!(plain.stack.load_balancer.scheme, Scheme::InternetFacing, "--default-load-balancer-scheme");
    let named = build(&svc(tcp80(), &[(k::SCHEME, "internal")]), &c).unwrap();
    assert_eq!(named.stack.load_balancer.scheme, Scheme::Internal, "the annotation wins");
    c.existing = Some(crate::lb::build::ExistingLoadBalancer {
        scheme: Scheme::Internal,
        has_security_groups: true,
        customer_owned_ipv4_pool: None,
    });
    let existing = build(&svc(tcp80(), &[]), &c).unwrap();
    assert_eq!(existing.stack.load_balancer.scheme, Scheme::Internal, "an existing load balancer keeps its scheme");
}

#[test]
fn context_needs_follow_annotation_then_existing_then_default() {
    use crate::lb::subnets::SubnetSelector;
    let existing =
        |scheme| Some(ExistingLoadBalancer { scheme, has_security_groups: true, customer_owned_ipv4_pool: None });
    // (annotations, existing load balancer) → (subnets, scheme, names to look up)
    type Case = (
        &'static str,
        Vec<(&'static str, &'static str)>,
        Option<ExistingLoadBalancer>,
        SubnetSelector,
        Scheme,
        Vec<&'static str>,
    );
    let cases: Vec<Case> = vec![
        (
            "nothing set: discovery with the default scheme",
            vec![],
            None,
            SubnetSelector::Discover,
            Scheme::Internal,
            vec![],
        ),
        (
            "an existing load balancer keeps its scheme",
            vec![],
            existing(Scheme::InternetFacing),
            SubnetSelector::Discover,
            Scheme::InternetFacing,
            vec![],
        ),
        (
            "the annotation beats the existing scheme",
            vec![(k::SCHEME, "internal")],
            existing(Scheme::InternetFacing),
            SubnetSelector::Discover,
            Scheme::Internal,
            vec![],
        ),
        (
            "named subnets, IDs and Name tags",
            vec![(k::SUBNETS, "subnet-1, public-a")],
            None,
            SubnetSelector::Explicit(vec!["subnet-1".into(), "public-a".into()]),
            Scheme::Internal,
            vec![],
        ),
        (
            "groups named by Name are looked up, IDs are not",
            vec![(k::SECURITY_GROUPS, "sg-1, front,edge")],
            None,
            SubnetSelector::Discover,
            Scheme::Internal,
            vec!["front", "edge"],
        ),
    ];
    for (name, ann, existing, subnets, scheme, names) in cases {
        let s = svc(vec![port("", 80, "TCP", IntOrString::Int(8080))], &ann);
        let settings = parse_annotations(s.metadata.annotations.as_ref().unwrap()).expect("valid annotations");
        let n = context_needs(&s, &settings, existing, Scheme::Internal);
        assert_eq!(n.subnets, subnets, "{name}");
        assert_eq!(n.scheme, scheme, "{name}");
        assert_eq!(n.min_azs, 1, "{name}: an NLB needs one AZ");
        assert_eq!(n.security_group_names, names, "{name}");
        assert_eq!(n.subnets_annotation, "service.beta.kubernetes.io/aws-load-balancer-subnets", "{name}");
    }
}

#[test]
fn the_backend_group_is_a_stand_in_only_while_auto_mode_has_none() {
    use crate::lb::backend_sg::BackendSgMode;
    use crate::lb::build::{BACKEND_SG_PENDING, backend_security_group_for_build};
    let pending = Some(BACKEND_SG_PENDING.to_string());
    // (existing group, mode) → group of the first build
    let cases = [
        (None, BackendSgMode::Auto, pending.clone()),
        (Some("sg-found".to_string()), BackendSgMode::Auto, Some("sg-found".to_string())),
        (Some("sg-given".to_string()), BackendSgMode::Given("sg-given".into()), Some("sg-given".to_string())),
        (None, BackendSgMode::Disabled, None),
    ];
    for (existing, mode, want) in cases {
        assert_eq!(backend_security_group_for_build(existing.clone(), &mode), want, "{existing:?} {mode:?}");
    }
    // Built with the stand-in and using it: built again once the group exists.
    let mut c = ctx();
    c.backend_security_group = pending;
    let built = build(&svc(vec![port("", 80, "TCP", IntOrString::Int(8080))], &[]), &c).expect("builds");
    assert!(built.needs_backend_security_group(&c));
    c.backend_security_group = Some("sg-real".into());
    assert!(!built.needs_backend_security_group(&c), "the real ID needs no second build");
}

/// A Service in instance mode: port 80 → targetPort 8080, NodePort 30080.
fn instance_svc(ann: &[(&str, &str)], spec: impl FnOnce(&mut ServiceSpec)) -> Service {
    let mut p = port("http", 80, "TCP", IntOrString::Int(8080));
    p.node_port = Some(30080);
    let mut s = svc(vec![p], ann);
    spec(s.spec.as_mut().unwrap());
    s
}

fn instance_parts(st: &ServiceStack) -> (&crate::lb::TargetGroup, &TargetGroupBindingTemplate) {
    let ([tg], [b]) = (st.stack.target_groups.as_slice(), st.bindings.as_slice()) else {
        panic!("one TG, one binding")
    };
    (tg, b)
}

fn rule_ports(b: &TargetGroupBindingTemplate) -> Vec<(NetworkingProtocol, IntOrString)> {
    b.spec
        .networking
        .iter()
        .flat_map(|n| &n.ingress)
        .flat_map(|r| &r.ports)
        .map(|p| (p.protocol.unwrap(), p.port.clone().unwrap()))
        .collect()
}

#[test]
fn instance_targets_table() {
    use crate::crd::TargetType::{Instance, Ip};
    let tt = [(k::TARGET_TYPE, "instance")];
    let plain = ctx();
    let mut default_instance = ctx();
    default_instance.default_target_type = Instance;
    // (case, Service, context, target type, TG port, health check (protocol, port, path, interval, timeout, thresholds))
    type Hc = (Protocol, HealthCheckPort, Option<&'static str>, u32, u32, u32, u32);
    let tcp = (Protocol::Tcp, HealthCheckPort::TrafficPort, None, 10, 10, 3, 3);
    let local = (Protocol::Http, HealthCheckPort::Port(31999), Some("/healthz"), 10, 6, 2, 2);
    let cases: Vec<(&str, Service, &BuildContext, TargetType, u16, Hc)> = vec![
        ("annotation instance", instance_svc(&tt, |_| {}), &plain, Instance, 30080, tcp),
        ("default instance", instance_svc(&[], |_| {}), &default_instance, Instance, 30080, tcp),
        ("annotation ip wins", instance_svc(&[(k::TARGET_TYPE, "ip")], |_| {}), &default_instance, Ip, 8080, tcp),
        ("nlb-ip wins", instance_svc(&[(k::LOAD_BALANCER_TYPE, "nlb-ip")], |_| {}), &default_instance, Ip, 8080, tcp),
        (
            "Local: healthCheckNodePort, /healthz",
            instance_svc(&tt, |s| {
                s.external_traffic_policy = Some("Local".into());
                s.health_check_node_port = Some(31999);
            }),
            &plain,
            Instance,
            30080,
            local,
        ),
        (
            "Local on a NodePort Service: the plain defaults, as ALBC (no healthCheckNodePort)",
            instance_svc(&tt, |s| {
                s.external_traffic_policy = Some("Local".into());
                s.type_ = Some("NodePort".into());
            }),
            &plain,
            Instance,
            30080,
            tcp,
        ),
        (
            "Local, annotations win",
            instance_svc(&[tt[0], (k::HC_PATH, "/ready"), (k::HC_TIMEOUT, "4"), (k::HC_HEALTHY_THRESHOLD, "5")], |s| {
                s.external_traffic_policy = Some("Local".into());
                s.health_check_node_port = Some(31999);
            }),
            &plain,
            Instance,
            30080,
            (Protocol::Http, HealthCheckPort::Port(31999), Some("/ready"), 10, 4, 5, 2),
        ),
        (
            "Local with ip targets: unchanged defaults",
            instance_svc(&[(k::TARGET_TYPE, "ip")], |s| {
                s.external_traffic_policy = Some("Local".into());
                s.health_check_node_port = Some(31999);
            }),
            &plain,
            Ip,
            8080,
            tcp,
        ),
        (
            "named health-check port = its NodePort",
            instance_svc(&[tt[0], (k::HC_PORT, "http")], |_| {}),
            &plain,
            Instance,
            30080,
            (Protocol::Tcp, HealthCheckPort::Port(30080), None, 10, 10, 3, 3),
        ),
    ];
    for (name, s, c, want_type, want_port, hc) in cases {
        let st = build(&s, c).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let (tg, b) = instance_parts(&st);
        let type_name = if want_type == Instance { "instance" } else { "ip" };
        assert_eq!((tg.target_type.as_str(), tg.port), (type_name, want_port), "{name}");
        assert_eq!(b.spec.target_type, Some(want_type), "{name}");
        let h = &tg.health_check;
        let got = (
            h.protocol,
            h.port,
            h.path.as_deref(),
            h.interval_seconds,
            h.timeout_seconds,
            h.healthy_threshold,
            h.unhealthy_threshold,
        );
        assert_eq!(got, hc, "{name}");
        // The backend rule opens the target group's port (and a separate health-check port) to the backend SG.
        let mut want_rules = vec![(NetworkingProtocol::TCP, IntOrString::Int(i32::from(want_port)))];
        if let HealthCheckPort::Port(p) = hc.1
            && p != want_port
        {
            want_rules.push((NetworkingProtocol::TCP, IntOrString::Int(i32::from(p))));
        }
        assert_eq!(rule_ports(b), want_rules, "{name}");
    }
}

#[test]
fn instance_target_group_name_differs_from_ip_and_node_labels_select_nodes() {
    let ip = build(&instance_svc(&[(k::TARGET_TYPE, "ip")], |_| {}), &ctx()).unwrap();
    let labels = [(k::TARGET_TYPE, "instance"), (k::TARGET_NODE_LABELS, "role=edge,tier=front")];
    let inst = build(&instance_svc(&labels, |_| {}), &ctx()).unwrap();
    let ((ip_tg, _), (tg, b)) = (instance_parts(&ip), instance_parts(&inst));
    assert_ne!(ip_tg.name, tg.name, "the target type is part of ALBC's TG name: switching replaces the group");
    assert_eq!(b.name, tg.name);
    let sel = b.spec.node_selector.as_ref().expect("nodeSelector from target-node-labels");
    let want = BTreeMap::from([("role".to_string(), "edge".to_string()), ("tier".to_string(), "front".to_string())]);
    assert_eq!(sel.match_labels.as_ref(), Some(&want));
    assert!(sel.match_expressions.is_none());
    assert_eq!(b.spec.service_ref.port, IntOrString::Int(80), "the binding names the Service port, not the NodePort");
    let ip_labels = [(k::TARGET_TYPE, "ip"), (k::TARGET_NODE_LABELS, "role=edge")];
    let ip_with_labels = build(&instance_svc(&ip_labels, |_| {}), &ctx()).unwrap();
    assert!(instance_parts(&ip_with_labels).1.spec.node_selector.is_none(), "ALBC ignores it for ip targets");
}

#[test]
fn instance_targets_without_node_ports_are_refused_with_the_fix() {
    let tt = [(k::TARGET_TYPE, "instance")];
    let mut s = svc(tcp80(), &tt);
    s.spec.as_mut().unwrap().allocate_load_balancer_node_ports = Some(false);
    let e = build(&s, &ctx()).unwrap_err();
    let [p] = e.problems.as_slice() else { panic!("{e:?}") };
    assert!(p.contains("Service port 80 has no nodePort because spec.allocateLoadBalancerNodePorts is false"), "{p}");
    assert!(p.contains("aws-load-balancer-nlb-target-type: \"ip\""), "{p}");
    let local = instance_svc(&tt, |s| s.external_traffic_policy = Some("Local".into()));
    let e = build(&local, &ctx()).unwrap_err();
    assert!(
        e.problems.iter().any(|p| p.contains("externalTrafficPolicy: Local but no spec.healthCheckNodePort")),
        "{e:?}"
    );
}

#[test]
fn instance_targets_without_security_groups_admit_clients_on_the_node_port() {
    // ALBC: instance targets preserve the client IP by default, so the NodePort admits the
    // client ranges: for an internal NLB without source ranges the VPC, which also covers the
    // health checks (no second rule). ip targets admit the NLB subnets instead.
    let s = instance_svc(&[(k::TARGET_TYPE, "instance"), (k::DISABLE_NLB_SG, "true")], |_| {});
    let st = build(&s, &ctx()).unwrap();
    let (_, b) = instance_parts(&st);
    let ingress = &b.spec.networking.as_ref().expect("legacy rules").ingress;
    let cidrs = |i: usize| -> Vec<String> {
        ingress[i].from.iter().map(|p| p.ip_block.as_ref().unwrap().cidr.clone()).collect()
    };
    assert_eq!(ingress.len(), 1, "{ingress:?}");
    assert_eq!(cidrs(0), ["10.0.0.0/16"], "clients: the VPC");
    assert_eq!(rule_ports(b), [(NetworkingProtocol::TCP, IntOrString::Int(30080))]);
    // A source range narrower than the VPC: the subnets get their own health-check rule.
    let ranged = [(k::TARGET_TYPE, "instance"), (k::DISABLE_NLB_SG, "true"), (k::SOURCE_RANGES, "192.168.0.0/16")];
    let st = build(&instance_svc(&ranged, |_| {}), &ctx()).unwrap();
    let ingress = &instance_parts(&st).1.spec.networking.as_ref().unwrap().ingress;
    let cidrs: Vec<Vec<&str>> =
        ingress.iter().map(|r| r.from.iter().map(|p| p.ip_block.as_ref().unwrap().cidr.as_str()).collect()).collect();
    assert_eq!(cidrs, [vec!["192.168.0.0/16"], vec!["10.0.1.0/24", "10.0.2.0/24"]]);
}

#[test]
fn instance_tcp_udp_needs_one_node_port() {
    let ann = [(k::TARGET_TYPE, "instance"), (k::ENABLE_TCP_UDP_LISTENER, "true")];
    let ports = |udp_node_port: i32| {
        let mut tcp = port("dns-tcp", 53, "TCP", IntOrString::Int(5353));
        tcp.node_port = Some(30053);
        let mut udp = port("dns-udp", 53, "UDP", IntOrString::Int(5353));
        udp.node_port = Some(udp_node_port);
        vec![tcp, udp]
    };
    let st = build(&svc(ports(30053), &ann), &ctx()).unwrap();
    let (tg, _) = instance_parts(&st);
    assert_eq!((tg.protocol, tg.port), (Protocol::TcpUdp, 30053));
    let e = build(&svc(ports(30054), &ann), &ctx()).unwrap_err();
    assert!(e.problems.iter().any(|p| p.contains("nodePorts 30053 and 30054")), "{e:?}");
}

/// ALBC `actions.${protocol}-${port}`: the listener forwards by weight to this Service's target
/// group, another Service's (its ports and targets, this Service's annotations, a name hashed
/// with this Service's UID) and a target group by ARN; stickiness enabled has no duration.
#[test]
fn weighted_forward_to_another_service_and_an_arn() {
    let forward = r#"{"type": "forward", "forwardConfig": {"baseServiceWeight": 10, "targetGroups": [
        {"serviceName": "canary", "servicePort": "web", "weight": 20},
        {"targetGroupARN": "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/ext/1", "weight": 5}],
        "targetGroupStickinessConfig": {"enabled": true}}}"#;
    let ann = [(k::TARGET_TYPE, "ip"), ("actions.TCP-80", forward)];
    let mut canary = svc(vec![port("web", 81, "TCP", IntOrString::Int(8081))], &[]);
    canary.metadata.name = Some("canary".into());
    canary.metadata.uid = Some("9a2c0000-0000-4000-8000-000000000002".into());
    let mut c = ctx();
    c.backend_services.insert("canary".into(), canary);
    let st = build(&svc(tcp80(), &ann), &c).unwrap();
    let tgs = &st.stack.target_groups;
    assert_eq!(tgs.len(), 2, "{tgs:#?}");
    let other = &tgs[1];
    let want_name = crate::lb::naming::target_group_name(&crate::lb::naming::TargetGroupNameInputs {
        cluster: "prod",
        namespace: "default",
        name: "canary",
        uid: "9a2c0000-0000-4000-8000-000000000002",
        base_uid: Some(UID),
        target_group_port: 8081,
        service_port: 81,
        target_type: "ip",
        protocol: "TCP",
        health_check_protocol: "TCP",
        health_check_interval_seconds: 10,
    });
    assert_eq!((other.name.as_str(), other.port), (want_name.as_str(), 8081));
    assert_eq!(other.tags["service.k8s.aws/resource"], "default/canary:81");
    assert_eq!(other.tags["service.k8s.aws/stack"], "default/echo", "the stack is the NLB's Service");
    let binding = &st.bindings[1];
    assert_eq!(
        (binding.spec.service_ref.name.as_str(), &binding.spec.service_ref.port),
        ("canary", &IntOrString::Int(81))
    );
    let Action::Forward { target_groups, stickiness_seconds } = &st.stack.listeners[0].default_actions[0] else {
        panic!("a forward")
    };
    let got: Vec<(String, Option<u32>)> = target_groups
        .iter()
        .map(|t| match &t.target_group {
            TargetGroupRef::Name(n) | TargetGroupRef::Arn(n) => (n.clone(), t.weight),
        })
        .collect();
    assert_eq!(
        got,
        [
            (tgs[0].name.clone(), Some(10)),
            (want_name, Some(20)),
            ("arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/ext/1".into(), Some(5)),
        ]
    );
    assert_eq!(*stickiness_seconds, Some(0));

    let err = |ann: &[(&str, &str)], c: &BuildContext| build(&svc(tcp80(), ann), c).unwrap_err().to_string();
    let one = |name: &str, port: &str| {
        format!(
            r#"{{"type": "forward", "forwardConfig": {{"targetGroups": [{{"serviceName": "{name}", "servicePort": {port}}}]}}}}"#
        )
    };
    let e = err(&[("actions.TCP-80", &one("gone", "81"))], &c);
    assert!(
        e.contains(
            "annotation service.beta.kubernetes.io/actions.TCP-80 names Service default/gone, which does not exist"
        ),
        "{e}"
    );
    let e = err(&[("actions.TCP-80", &one("canary", "82"))], &c);
    assert!(e.contains("names port 82 of Service default/canary, which has ports [web (81)]"), "{e}");
    let e = err(&[("actions.TCP-80", &one("echo", "80"))], &c);
    assert!(e.contains("names this Service itself"), "{e}");
    let st = build(&svc(tcp80(), &[("actions.TCP-81", &one("canary", "81"))]), &c).unwrap();
    assert!(st.warnings.iter().any(|w| w.contains("actions.TCP-81 matches no listener")), "{:?}", st.warnings);
    assert_eq!(st.stack.target_groups.len(), 1);
}

/// The deprecated `aws-load-balancer-internal` decides the scheme (and so ALBC's name, which hashes
/// it, the subnets looked up and whether EIPs may be given) unless `aws-load-balancer-scheme` is set.
#[test]
fn deprecated_internal_annotation_decides_the_scheme() {
    let mut public = ctx();
    public.default_scheme = Scheme::InternetFacing;
    let lb = |ann: &[(&str, &str)], c: &BuildContext| build(&svc(tcp80(), ann), c).unwrap().stack.load_balancer;
    let (facing, internal) = (lb(&[], &public), lb(&[], &ctx()));
    assert_eq!((facing.scheme, internal.scheme), (Scheme::InternetFacing, Scheme::Internal), "the defaults");
    assert_ne!(facing.name, internal.name, "ALBC's name hashes the scheme");
    let yes = lb(&[(k::INTERNAL, "true")], &public);
    assert_eq!((yes.scheme, yes.name.as_str()), (Scheme::Internal, internal.name.as_str()));
    let no = lb(&[(k::INTERNAL, "false")], &ctx());
    assert_eq!((no.scheme, no.name.as_str()), (Scheme::InternetFacing, facing.name.as_str()));
    // The scheme annotation wins.
    assert_eq!(lb(&[(k::INTERNAL, "true"), (k::SCHEME, "internet-facing")], &ctx()).scheme, Scheme::InternetFacing);
    assert_eq!(lb(&[(k::INTERNAL, "false"), (k::SCHEME, "internal")], &public).scheme, Scheme::Internal);
    // The subnets looked up are those of the scheme it asks for.
    let s = svc(tcp80(), &[(k::INTERNAL, "false")]);
    let settings = parse_annotations(s.metadata.annotations.as_ref().unwrap()).expect("valid annotations");
    assert_eq!(context_needs(&s, &settings, None, Scheme::Internal).scheme, Scheme::InternetFacing);
    // Internet-facing: EIP allocations are accepted and mapped to the subnets.
    let eips = [(k::INTERNAL, "false"), (k::EIP_ALLOCATIONS, "eipalloc-a,eipalloc-b")];
    let mapped: Vec<_> = lb(&eips, &ctx()).subnets.into_iter().map(|m| m.allocation_id).collect();
    assert_eq!(mapped, [Some("eipalloc-a".to_string()), Some("eipalloc-b".to_string())]);
    let err = build(&svc(tcp80(), &[(k::INTERNAL, "true"), eips[1]]), &public).unwrap_err();
    assert!(err.to_string().contains("only be set for internet-facing"), "{err}");
}

/// The deprecated access-log and cross-zone annotations become load balancer attributes, winning
/// over the same keys of `aws-load-balancer-attributes`; as ALBC, the bucket and prefix count only
/// while access logs are enabled, and "false" asks for nothing.
#[test]
fn access_log_and_cross_zone_annotations_become_load_balancer_attributes() {
    let attrs = |ann: &[(&str, &str)]| build(&svc(tcp80(), ann), &ctx()).unwrap().stack.load_balancer.attributes;
    let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    };
    assert_eq!(attrs(&[]), map(&[]), "nothing asked: AWS's defaults stay");
    let bucket = (k::ACCESS_LOG_S3_BUCKET_NAME, "shop-logs");
    let prefix = (k::ACCESS_LOG_S3_BUCKET_PREFIX, "nlb/echo");
    let ann = [(k::ACCESS_LOG_ENABLED, "true"), bucket, prefix, (k::CROSS_ZONE_ENABLED, "true")];
    let want = [
        ("access_logs.s3.enabled", "true"),
        ("access_logs.s3.bucket", "shop-logs"),
        ("access_logs.s3.prefix", "nlb/echo"),
        ("load_balancing.cross_zone.enabled", "true"),
    ];
    assert_eq!(attrs(&ann), map(&want));
    let over = [
        (
            k::ATTRIBUTES,
            "access_logs.s3.bucket=old,load_balancing.cross_zone.enabled=true,deletion_protection.enabled=true",
        ),
        (k::ACCESS_LOG_ENABLED, "true"),
        bucket,
        (k::CROSS_ZONE_ENABLED, "false"),
    ];
    let want = [
        ("access_logs.s3.enabled", "true"),
        ("access_logs.s3.bucket", "shop-logs"),
        ("load_balancing.cross_zone.enabled", "false"),
        ("deletion_protection.enabled", "true"),
    ];
    assert_eq!(attrs(&over), map(&want), "the deprecated annotations win; other keys stay");
    assert_eq!(attrs(&[(k::ACCESS_LOG_ENABLED, "false"), bucket, prefix]), map(&[]));
    assert_eq!(attrs(&[bucket, prefix]), map(&[]));
    assert_eq!(attrs(&[(k::CROSS_ZONE_ENABLED, "false")]), map(&[("load_balancing.cross_zone.enabled", "false")]));
}

/// `aws-load-balancer-ssl-negotiation-policy` is the TLS listeners' policy, over
/// `--default-ssl-policy`; TCP listeners have none.
#[test]
fn ssl_negotiation_policy_annotation_sets_the_tls_listeners_policy() {
    let ports =
        vec![port("http", 80, "TCP", IntOrString::Int(8080)), port("https", 443, "TCP", IntOrString::Int(8080))];
    let policies = |ann: &[(&str, &str)], c: &BuildContext| -> Vec<Option<String>> {
        build(&svc(ports.clone(), ann), c).unwrap().stack.listeners.iter().map(|l| l.ssl_policy.clone()).collect()
    };
    let tls = [(k::SSL_CERT, "arn:c"), (k::SSL_PORTS, "https")];
    let policy = "ELBSecurityPolicy-TLS13-1-2-2021-06";
    let mut ann = tls.to_vec();
    ann.push((k::SSL_NEGOTIATION_POLICY, policy));
    assert_eq!(policies(&tls, &ctx()), [None, Some(DEFAULT_SSL_POLICY.to_string())]);
    assert_eq!(policies(&ann, &ctx()), [None, Some(policy.to_string())]);
    let mut c = ctx();
    c.default_ssl_policy = "ELBSecurityPolicy-TLS-1-2-2017-01".into();
    assert_eq!(policies(&tls, &c), [None, Some("ELBSecurityPolicy-TLS-1-2-2017-01".to_string())]);
    assert_eq!(policies(&ann, &c), [None, Some(policy.to_string())], "the annotation wins over the flag");
    assert_eq!(policies(&[(k::SSL_NEGOTIATION_POLICY, policy)], &ctx()), [None, None], "no TLS listener");
}

/// `healthcheck-unhealthy-threshold` and `healthcheck-success-codes` reach the target group's
/// health check; success codes only for HTTP(S) checks (AWS takes none for TCP).
#[test]
fn health_check_unhealthy_threshold_and_success_codes_reach_the_target_group() {
    let hc =
        |ann: &[(&str, &str)]| build(&svc(tcp80(), ann), &ctx()).unwrap().stack.target_groups[0].health_check.clone();
    let http = (k::HC_PROTOCOL, "http");
    let set = [(k::HC_UNHEALTHY_THRESHOLD, "7"), (k::HC_SUCCESS_CODES, "200,302")];
    let plain = hc(&[http]);
    assert_eq!((plain.unhealthy_threshold, plain.success_codes.as_deref()), (3, Some("200-399")), "the defaults");
    let got = hc(&[http, set[0], set[1]]);
    assert_eq!((got.unhealthy_threshold, got.success_codes.as_deref()), (7, Some("200,302")));
    assert_eq!(
        (got.protocol, got.healthy_threshold, got.interval_seconds, got.timeout_seconds),
        (plain.protocol, plain.healthy_threshold, plain.interval_seconds, plain.timeout_seconds),
        "nothing else changes"
    );
    assert_eq!(hc(&[]).unhealthy_threshold, 3);
    let tcp = hc(&set);
    assert_eq!((tcp.protocol, tcp.unhealthy_threshold, tcp.success_codes), (Protocol::Tcp, 7, None));
}
