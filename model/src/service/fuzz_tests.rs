//! Deterministic randomized test: no parser or builder panics on arbitrary annotation maps and
//! Service specs (proptest is not in this workspace's dependency set; fastrand with a fixed seed
//! keeps failures reproducible).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::keys as k;
use super::{BuildContext, SelectConfig, build_stack, classify_changes, parse_annotations, select};
use crate::lb::Subnet;

const KEYS: &[&str] = &[
    k::SOURCE_RANGES,
    k::LOAD_BALANCER_TYPE,
    k::TARGET_TYPE,
    k::NAME,
    k::SCHEME,
    k::INTERNAL,
    k::PROXY_PROTOCOL,
    k::PROXY_PROTOCOL_PER_TARGET_GROUP,
    k::IP_ADDRESS_TYPE,
    k::ACCESS_LOG_ENABLED,
    k::ACCESS_LOG_S3_BUCKET_NAME,
    k::CROSS_ZONE_ENABLED,
    k::SSL_CERT,
    k::SSL_PORTS,
    k::SSL_NEGOTIATION_POLICY,
    k::BACKEND_PROTOCOL,
    k::ADDITIONAL_TAGS,
    k::HC_HEALTHY_THRESHOLD,
    k::HC_UNHEALTHY_THRESHOLD,
    k::HC_TIMEOUT,
    k::HC_INTERVAL,
    k::HC_PROTOCOL,
    k::HC_PORT,
    k::HC_PATH,
    k::HC_SUCCESS_CODES,
    k::TARGET_GROUP_ATTRIBUTES,
    k::SUBNETS,
    k::EIP_ALLOCATIONS,
    k::PRIVATE_IPV4_ADDRESSES,
    k::IPV6_ADDRESSES,
    k::ALPN_POLICY,
    k::ATTRIBUTES,
    k::SECURITY_GROUPS,
    k::MANAGE_BACKEND_SG_RULES,
    k::INBOUND_SG_RULES_ON_PRIVATE_LINK,
    k::SECURITY_GROUP_PREFIX_LISTS,
    k::MULTI_CLUSTER_TARGET_GROUP,
    k::ENABLE_PREFIX_FOR_IPV6_SOURCE_NAT,
    k::MINIMUM_CAPACITY,
    k::ENABLE_ICMP_PMTUD,
    k::ENABLE_TCP_UDP_LISTENER,
    k::DISABLE_NLB_SG,
    k::QUIC_ENABLED_PORTS,
    "aws-load-balancer-listener-attributes.TCP-80",
    "aws-load-balancer-listener-attributes.",
    "aws-load-balancer-target-group-attributes.80",
    "aws-load-balancer-target-group-attributes.",
    "aws-load-balancer-typo",
    "actions.TCP-80",
];
const VALUES: &[&str] = &[
    "",
    " ",
    ",",
    "=",
    "true",
    "false",
    "on",
    "off",
    "*",
    "ip",
    "instance",
    "external",
    "nlb-ip",
    "internal",
    "internet-facing",
    "dualstack",
    "ipv4",
    "http",
    "HTTPS",
    "ssl",
    "traffic-port",
    "80",
    "0",
    "-1",
    "65536",
    "99999999999",
    "http",
    "/",
    "200-399",
    "a=b,c=d",
    "k=",
    "=v",
    "subnet-a,subnet-b",
    "eipalloc-1",
    "10.0.1.5,10.0.2.5",
    "2600:1f18:0:1::5",
    "10.0.0.0/33",
    "pl-1",
    "sg-1,named",
    "CapacityUnits=5",
    "HTTP2Preferred",
    "ünïcödé",
    "\u{0}",
    "a,b,,c",
    "preserve_client_ip.enabled=maybe",
    "dns_record.client_routing_policy=x",
];

pub(crate) fn pick<'a>(r: &mut fastrand::Rng, xs: &[&'a str]) -> &'a str {
    xs[r.usize(..xs.len())]
}

pub(crate) fn junk(r: &mut fastrand::Rng) -> String {
    (0..r.usize(..12)).map(|_| r.char('\u{0}'..='\u{2FF}')).collect()
}

fn random_service(r: &mut fastrand::Rng) -> Service {
    let mut ann = BTreeMap::new();
    for _ in 0..r.usize(..8) {
        let key = if r.u8(..10) == 0 { junk(r) } else { pick(r, KEYS).to_string() };
        let value = if r.u8(..5) == 0 { junk(r) } else { pick(r, VALUES).to_string() };
        ann.insert(format!("service.beta.kubernetes.io/{key}"), value);
    }
    let ports = (0..r.usize(..4))
        .map(|_| ServicePort {
            name: r.bool().then(|| pick(r, &["http", "https", "dns", "80", ""]).to_string()),
            port: *r.choice(&[0, 53, 80, 443, 65535, 70000, -5]).unwrap(),
            protocol: r.bool().then(|| pick(r, &["TCP", "UDP", "SCTP", "tcp"]).to_string()),
            target_port: match r.u8(..3) {
                0 => None,
                1 => Some(IntOrString::Int(*r.choice(&[0, 8080, -1, 100000]).unwrap())),
                _ => Some(IntOrString::String(pick(r, &["http", "", "web"]).into())),
            },
            ..Default::default()
        })
        .collect();
    let mut s = Service::default();
    s.metadata.namespace = r.bool().then(|| "default".into()).or(Some(junk(r)));
    s.metadata.name = Some(pick(r, &["echo", "a-very-long-service-name-indeed", ""]).into());
    s.metadata.uid = r.u8(..10).ne(&0).then(|| "uid".into());
    s.metadata.annotations = Some(ann);
    s.spec = Some(ServiceSpec {
        type_: Some(pick(r, &["LoadBalancer", "ClusterIP"]).into()),
        load_balancer_class: r.bool().then(|| pick(r, &["service.k8s.aws/nlb", "other"]).into()),
        ports: r.u8(..10).ne(&0).then_some(ports),
        ip_families: r.bool().then(|| vec![pick(r, &["IPv4", "IPv6", "x"]).into()]),
        load_balancer_source_ranges: r.bool().then(|| vec![pick(r, &["10.0.0.0/8", "::/0", "bad", ""]).into()]),
        external_traffic_policy: r.bool().then(|| "Local".into()),
        ..Default::default()
    });
    s
}

fn random_ctx(r: &mut fastrand::Rng) -> BuildContext {
    let mut c = BuildContext::new("prod", "vpc-1");
    c.subnets = (0..r.usize(..4))
        .map(|i| Subnet {
            id: format!("subnet-{i}"),
            vpc_id: "vpc-1".into(),
            availability_zone: format!("az{i}"),
            cidr: pick(r, &["10.0.1.0/24", "10.0.2.0/24", "garbage"]).into(),
            ipv6_cidrs: vec![pick(r, &["2600:1f18:0:1::/64", "nope"]).into()],
            available_ips: 10,
            tags: Default::default(),
        })
        .collect();
    c.backend_security_group = r.bool().then(|| "sg-backend".into());
    c.ipv6_available = r.bool();
    c.manage_frontend_security_groups = r.bool();
    c.enable_tcp_udp_listener = r.bool();
    c.default_target_type = if r.bool() { crate::crd::TargetType::Ip } else { crate::crd::TargetType::Instance };
    c
}

#[test]
fn parsers_and_builder_never_panic() {
    let mut r = fastrand::Rng::with_seed(0x005e_ed1b);
    let mut built = Vec::new();
    for _ in 0..3000 {
        let svc = random_service(&mut r);
        let ctx = random_ctx(&mut r);
        let _ = select(&svc, &SelectConfig::default());
        let ann = svc.metadata.annotations.clone().unwrap_or_default();
        let settings = match parse_annotations(&ann) {
            Ok(s) => {
                let _ = s.warnings();
                s
            }
            Err(e) => {
                assert!(!e.0.is_empty() && !e.to_string().is_empty());
                Default::default()
            }
        };
        match build_stack(&svc, &settings, &ctx) {
            Ok(st) => built.push(st.stack),
            Err(e) => assert!(!e.problems.is_empty(), "an error always says why"),
        }
    }
    assert!(built.len() > 50, "the generator also produces valid Services ({} built)", built.len());
    for pair in built.windows(2) {
        let _ = classify_changes(&pair[0], &pair[1]);
    }
}
