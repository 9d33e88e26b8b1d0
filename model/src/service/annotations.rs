//! Service annotations → typed [`NlbSettings`], with ALBC's semantics (see
//! `docs/shared/reference/albc-reference.md` §1.1). Defaults that depend on the Service spec or on
//! the controller's configuration (scheme of an existing load balancer, `--default-ssl-policy`,
//! health-check defaults) are applied by [`super::build`]; here an absent annotation is `None`.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

use super::keys::{self as k, PREFIX};
use super::parse::{AnnotationErrors, Reader, full_key, parse_go_bool};
use crate::lb::tags::{SERVICE_TAG_PREFIX, reserved_tag_keys};
use crate::lb::{Attributes, LbIpAddressType, Protocol, Scheme, Tags};

/// A subnet named by the `subnets` annotation: an ID (`subnet-…`) or the value of its `Name` tag.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SubnetSelector {
    Id(String),
    Name(String),
}

/// A security group named by the `security-groups` annotation: an ID (`sg-…`) or its `Name` tag.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SecurityGroupSelector {
    Id(String),
    Name(String),
}

/// Where health checks go, as the annotation says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HealthCheckPortSetting {
    TrafficPort,
    Port(u16),
    /// A Service port name, resolved to that port's numeric targetPort (ip targets).
    Named(String),
}

/// The `healthcheck-*` annotations; `None` = ALBC's default (applied when building).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HealthCheckSettings {
    /// TCP, HTTP or HTTPS.
    pub protocol: Option<Protocol>,
    pub port: Option<HealthCheckPortSetting>,
    pub path: Option<String>,
    pub interval_seconds: Option<u32>,
    pub timeout_seconds: Option<u32>,
    pub healthy_threshold: Option<u32>,
    pub unhealthy_threshold: Option<u32>,
    pub success_codes: Option<String>,
}

/// Protocol between the load balancer and the targets behind a TLS listener.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendProtocol {
    /// TLS is terminated at the load balancer (ALBC's default).
    #[default]
    Tcp,
    /// TLS again to the targets (`backend-protocol: ssl`).
    Ssl,
}

/// A known annotation (or value) the controller does not act on yet; reported as a warning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported {
    pub key: String,
    pub reason: String,
}

/// Everything the annotations of one Service ask for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NlbSettings {
    /// `aws-load-balancer-type` (`external`, `nlb-ip`), as written.
    pub load_balancer_type: Option<String>,
    /// `aws-load-balancer-nlb-target-type` (`ip`, `instance`), as written.
    pub target_type: Option<String>,
    /// Custom load balancer name (validated: ≤32 chars, letters, digits and inner hyphens).
    pub name: Option<String>,
    /// Explicit scheme (`scheme`, or the deprecated `internal`); `None` = keep the existing load
    /// balancer's scheme, else internal.
    pub scheme: Option<Scheme>,
    pub ip_address_type: Option<LbIpAddressType>,
    pub subnets: Option<Vec<SubnetSelector>>,
    pub eip_allocations: Option<Vec<String>>,
    pub private_ipv4_addresses: Option<Vec<Ipv4Addr>>,
    pub ipv6_addresses: Option<Vec<Ipv6Addr>>,
    /// `attributes` merged with the deprecated access-log / cross-zone annotations, which win
    /// (ALBC's precedence).
    pub load_balancer_attributes: Attributes,
    pub target_group_attributes: Attributes,
    /// `target-group-attributes.<port>`: per Service port; non-empty values override.
    pub target_group_attributes_by_port: BTreeMap<u16, Attributes>,
    /// `proxy-protocol: "*"`: proxy protocol v2 on every target group (wins over everything).
    pub proxy_protocol_all: bool,
    /// `proxy-protocol-per-target-group`: these Service ports get PPv2, all others not.
    pub proxy_protocol_ports: Option<BTreeSet<u16>>,
    /// `additional-resource-tags`, minus keys the controller owns (reported in `unsupported`).
    pub additional_tags: Tags,
    pub health_check: HealthCheckSettings,
    /// ACM certificate ARNs; the first is the listener's default certificate.
    pub ssl_certificates: Vec<String>,
    /// Port names or numbers that get TLS listeners; empty = every TCP port.
    pub ssl_ports: Vec<String>,
    pub ssl_negotiation_policy: Option<String>,
    pub backend_protocol: BackendProtocol,
    pub alpn_policy: Option<String>,
    pub security_groups: Option<Vec<SecurityGroupSelector>>,
    pub manage_backend_security_group_rules: Option<bool>,
    pub disable_nlb_security_group: bool,
    /// `inbound-sg-rules-on-private-link-traffic`: `on` = true, `off` = false.
    pub inbound_sg_rules_on_private_link: Option<bool>,
    pub security_group_prefix_lists: Option<Vec<String>>,
    /// The `load-balancer-source-ranges` annotation (`spec.loadBalancerSourceRanges` wins).
    pub source_ranges: Option<Vec<IpNet>>,
    /// `listener-attributes.${PROTOCOL}-${PORT}`.
    pub listener_attributes: BTreeMap<(Protocol, u16), Attributes>,
    pub multi_cluster_target_group: bool,
    /// `None` = the controller's default (ALBC feature gate `EnableTCPUDPListener`, off).
    pub enable_tcp_udp_listener: Option<bool>,
    pub enable_icmp_for_path_mtu_discovery: bool,
    /// `minimum-load-balancer-capacity: CapacityUnits=N`.
    pub minimum_capacity_units: Option<u32>,
    /// Known annotations we do not act on (yet).
    pub unsupported: Vec<Unsupported>,
    /// `service.beta.kubernetes.io/aws-load-balancer-*` keys no controller knows (typos?).
    pub unknown: Vec<String>,
}

impl NlbSettings {
    /// One operator-ready sentence per ignored annotation, for Warning events.
    pub fn warnings(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .unsupported
            .iter()
            .map(|u| format!("annotation {} is not supported by this controller and is ignored: {}", u.key, u.reason))
            .collect();
        out.extend(self.unknown.iter().map(|key| {
            format!("unknown annotation {key}: not an AWS Load Balancer Controller Service annotation (typo?); ignored")
        }));
        out
    }
}

const NOT_YET: &str = "not implemented yet";
const ALPN_POLICIES: &[&str] = &["None", "HTTP1Only", "HTTP2Only", "HTTP2Optional", "HTTP2Preferred"];
const DNS_POLICY_KEY: &str = "dns_record.client_routing_policy";
const DNS_POLICIES: &[&str] =
    &["availability_zone_affinity", "partial_availability_zone_affinity", "any_availability_zone"];

/// Parses every Service annotation; all invalid values are reported together.
pub fn parse_annotations(annotations: &BTreeMap<String, String>) -> Result<NlbSettings, AnnotationErrors> {
    let mut r = Reader::new(annotations);
    let mut s = NlbSettings {
        load_balancer_type: r.string(k::LOAD_BALANCER_TYPE),
        target_type: r.string(k::TARGET_TYPE),
        name: r.raw(k::NAME).and_then(|n| valid_name(&mut r, n)),
        ..Default::default()
    };
    let scheme = r.one_of(k::SCHEME, &["internal", "internet-facing"]);
    let internal = r.bool(k::INTERNAL); // deprecated; the scheme annotation wins when both are set
    s.scheme = match scheme {
        Some("internet-facing") => Some(Scheme::InternetFacing),
        Some(_) => Some(Scheme::Internal),
        None => internal.map(|i| if i { Scheme::Internal } else { Scheme::InternetFacing }),
    };
    s.ip_address_type = r.one_of(k::IP_ADDRESS_TYPE, &["ipv4", "dualstack"]).map(|v| match v {
        "dualstack" => LbIpAddressType::Dualstack,
        _ => LbIpAddressType::Ipv4,
    });
    s.subnets = r.list(k::SUBNETS).map(|l| {
        l.into_iter()
            .map(|x| if x.starts_with("subnet-") { SubnetSelector::Id(x) } else { SubnetSelector::Name(x) })
            .collect()
    });
    s.eip_allocations =
        r.checked_list(k::EIP_ALLOCATIONS, "Elastic IP allocation IDs like eipalloc-0123456789abcdef0", |x| {
            x.starts_with("eipalloc-").then(|| x.to_string())
        });
    s.private_ipv4_addresses = r.checked_list(k::PRIVATE_IPV4_ADDRESSES, "IPv4 addresses", |x| x.parse().ok());
    s.ipv6_addresses = r.checked_list(k::IPV6_ADDRESSES, "IPv6 addresses", |x| x.parse().ok());
    s.load_balancer_attributes = load_balancer_attributes(&mut r);
    s.target_group_attributes = tg_attributes(&mut r, &full_key(k::TARGET_GROUP_ATTRIBUTES));
    s.proxy_protocol_all = r.one_of(k::PROXY_PROTOCOL, &["*"]).is_some();
    s.proxy_protocol_ports = r
        .checked_list(k::PROXY_PROTOCOL_PER_TARGET_GROUP, "Service port numbers", |x| x.parse::<u16>().ok())
        .map(|v| v.into_iter().collect());
    s.additional_tags = additional_tags(&mut r, &mut s.unsupported);
    s.health_check = health_check(&mut r);
    s.ssl_certificates = r.list(k::SSL_CERT).unwrap_or_default();
    s.ssl_ports = r.list(k::SSL_PORTS).unwrap_or_default();
    s.ssl_negotiation_policy = r.string(k::SSL_NEGOTIATION_POLICY).filter(|p| !p.is_empty());
    s.backend_protocol = backend_protocol(&mut r, &mut s.unsupported);
    s.alpn_policy = r.one_of(k::ALPN_POLICY, ALPN_POLICIES).map(str::to_string);
    s.security_groups = r.list(k::SECURITY_GROUPS).map(|l| {
        l.into_iter()
            .map(|x| if x.starts_with("sg-") { SecurityGroupSelector::Id(x) } else { SecurityGroupSelector::Name(x) })
            .collect()
    });
    s.manage_backend_security_group_rules = r.bool(k::MANAGE_BACKEND_SG_RULES);
    s.disable_nlb_security_group = r.bool(k::DISABLE_NLB_SG).unwrap_or(false);
    s.inbound_sg_rules_on_private_link =
        r.one_of(k::INBOUND_SG_RULES_ON_PRIVATE_LINK, &["on", "off"]).map(|v| v == "on");
    s.security_group_prefix_lists =
        r.checked_list(k::SECURITY_GROUP_PREFIX_LISTS, "prefix list IDs like pl-0123", |x| {
            x.starts_with("pl-").then(|| x.to_string())
        });
    s.source_ranges = r.checked_list(k::SOURCE_RANGES, "CIDR blocks like 10.0.0.0/16", |x| x.parse::<IpNet>().ok());
    s.multi_cluster_target_group = r.bool(k::MULTI_CLUSTER_TARGET_GROUP).unwrap_or(false);
    s.enable_tcp_udp_listener = r.bool(k::ENABLE_TCP_UDP_LISTENER);
    s.enable_icmp_for_path_mtu_discovery = r.one_of(k::ENABLE_ICMP_PMTUD, &["on", "off"]) == Some("on");
    s.minimum_capacity_units = minimum_capacity(&mut r);
    prefixed_annotations(&mut r, annotations, &mut s);
    unsupported_annotations(&mut r, &mut s.unsupported);
    s.unsupported.extend(action_annotations(annotations));
    s.unknown = annotations
        .keys()
        .filter(|key| key.strip_prefix(&format!("{PREFIX}/")).is_some_and(|sfx| sfx.starts_with(k::AWS_LB_FAMILY)))
        .filter(|key| !r.seen.contains(*key))
        .cloned()
        .collect();
    if r.errors.is_empty() { Ok(s) } else { Err(AnnotationErrors(r.errors)) }
}

fn valid_name(r: &mut Reader<'_>, n: &str) -> Option<String> {
    let ok = !n.is_empty()
        && n.len() <= crate::lb::naming::MAX_NAME_LEN
        && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !n.starts_with('-')
        && !n.ends_with('-')
        && !n.starts_with("internal-");
    if !ok {
        r.fail(
            full_key(k::NAME),
            n,
            "1 to 32 letters, digits or hyphens, not starting or ending with a hyphen nor starting with \"internal-\"",
        );
    }
    ok.then(|| n.to_string())
}

fn load_balancer_attributes(r: &mut Reader<'_>) -> Attributes {
    let mut attrs = r.map(k::ATTRIBUTES).unwrap_or_default();
    if let Some(p) = attrs.get(DNS_POLICY_KEY).filter(|p| !DNS_POLICIES.contains(&p.as_str())) {
        let raw = format!("{DNS_POLICY_KEY}={p}");
        r.fail(full_key(k::ATTRIBUTES), raw, format!("{DNS_POLICY_KEY} one of {}", DNS_POLICIES.join(", ")));
    }
    // Deprecated annotations override `attributes` (ALBC merges them first).
    if r.bool(k::ACCESS_LOG_ENABLED) == Some(true) {
        attrs.insert("access_logs.s3.enabled".into(), "true".into());
        if let Some(b) = r.string(k::ACCESS_LOG_S3_BUCKET_NAME) {
            attrs.insert("access_logs.s3.bucket".into(), b);
        }
        if let Some(p) = r.string(k::ACCESS_LOG_S3_BUCKET_PREFIX) {
            attrs.insert("access_logs.s3.prefix".into(), p);
        }
    } else {
        // Read (so they are not reported as unknown) but, as in ALBC, without effect.
        r.raw(k::ACCESS_LOG_S3_BUCKET_NAME);
        r.raw(k::ACCESS_LOG_S3_BUCKET_PREFIX);
    }
    if let Some(c) = r.bool(k::CROSS_ZONE_ENABLED) {
        attrs.insert("load_balancing.cross_zone.enabled".into(), c.to_string());
    }
    attrs
}

fn tg_attributes(r: &mut Reader<'_>, key: &str) -> Attributes {
    let attrs = r.map_key(key).unwrap_or_default();
    for name in ["preserve_client_ip.enabled", "proxy_protocol_v2.enabled"] {
        if let Some(v) = attrs.get(name).filter(|v| !v.is_empty() && parse_go_bool(v).is_none()) {
            let raw = format!("{name}={v}");
            r.fail(key, raw, format!("{name}=true or {name}=false"));
        }
    }
    attrs
}

fn additional_tags(r: &mut Reader<'_>, unsupported: &mut Vec<Unsupported>) -> Tags {
    let mut tags = r.map(k::ADDITIONAL_TAGS).unwrap_or_default();
    for key in reserved_tag_keys(SERVICE_TAG_PREFIX) {
        if tags.remove(&key).is_some() {
            unsupported.push(Unsupported {
                key: full_key(k::ADDITIONAL_TAGS),
                reason: format!("tag {key} is set by the controller and cannot be overridden"),
            });
        }
    }
    tags
}

fn health_check(r: &mut Reader<'_>) -> HealthCheckSettings {
    let protocol = r.raw(k::HC_PROTOCOL).and_then(|raw| match raw.to_ascii_uppercase().as_str() {
        "TCP" => Some(Protocol::Tcp),
        "HTTP" => Some(Protocol::Http),
        "HTTPS" => Some(Protocol::Https),
        _ => {
            r.fail(full_key(k::HC_PROTOCOL), raw, "\"tcp\", \"http\" or \"https\"");
            None
        }
    });
    let port = r.raw(k::HC_PORT).and_then(|raw| {
        if raw == "traffic-port" {
            Some(HealthCheckPortSetting::TrafficPort)
        } else if raw.bytes().all(|b| b.is_ascii_digit()) && !raw.is_empty() {
            match raw.parse::<u16>() {
                Ok(p) if p > 0 => Some(HealthCheckPortSetting::Port(p)),
                _ => {
                    r.fail(
                        full_key(k::HC_PORT),
                        raw,
                        "\"traffic-port\", a port from 1 to 65535 or a Service port name",
                    );
                    None
                }
            }
        } else if !raw.is_empty() && !raw.starts_with('-') {
            Some(HealthCheckPortSetting::Named(raw.to_string()))
        } else {
            r.fail(full_key(k::HC_PORT), raw, "\"traffic-port\", a port from 1 to 65535 or a Service port name");
            None
        }
    });
    let path = r.raw(k::HC_PATH).and_then(|raw| {
        if raw.starts_with('/') && raw.len() <= 1024 {
            Some(raw.to_string())
        } else {
            r.fail(full_key(k::HC_PATH), raw, "an absolute path starting with \"/\" (at most 1024 characters)");
            None
        }
    });
    let success_codes = r.raw(k::HC_SUCCESS_CODES).and_then(|raw| {
        if valid_success_codes(raw) {
            Some(raw.to_string())
        } else {
            r.fail(
                full_key(k::HC_SUCCESS_CODES),
                raw,
                "HTTP codes from 200 to 599, e.g. \"200\", \"200-399\" or \"200,302\"",
            );
            None
        }
    });
    HealthCheckSettings {
        protocol,
        port,
        path,
        interval_seconds: r.int(k::HC_INTERVAL, 5, 300),
        timeout_seconds: r.int(k::HC_TIMEOUT, 2, 120),
        healthy_threshold: r.int(k::HC_HEALTHY_THRESHOLD, 2, 10),
        unhealthy_threshold: r.int(k::HC_UNHEALTHY_THRESHOLD, 2, 10),
        success_codes,
    }
}

fn valid_success_codes(raw: &str) -> bool {
    let code = |s: &str| s.len() == 3 && s.parse::<u16>().is_ok_and(|c| (200..=599).contains(&c));
    !raw.is_empty()
        && raw.split(',').all(|part| match part.split_once('-') {
            Some((a, b)) => code(a) && code(b) && a <= b,
            None => code(part),
        })
}

fn backend_protocol(r: &mut Reader<'_>, unsupported: &mut Vec<Unsupported>) -> BackendProtocol {
    match r.raw(k::BACKEND_PROTOCOL) {
        None | Some("tcp") => BackendProtocol::Tcp,
        Some("ssl") => BackendProtocol::Ssl,
        Some(v @ ("http" | "https")) => {
            unsupported.push(Unsupported {
                key: full_key(k::BACKEND_PROTOCOL),
                reason: format!(
                    "{v:?} only applies to Classic Load Balancers; the NLB uses tcp (use \"ssl\" for TLS to targets)"
                ),
            });
            BackendProtocol::Tcp
        }
        Some(v) => {
            r.fail(full_key(k::BACKEND_PROTOCOL), v, "\"tcp\" or \"ssl\"");
            BackendProtocol::Tcp
        }
    }
}

fn minimum_capacity(r: &mut Reader<'_>) -> Option<u32> {
    let m = r.map(k::MINIMUM_CAPACITY)?;
    let raw = r.raw(k::MINIMUM_CAPACITY).unwrap_or_default();
    match (m.len(), m.get("CapacityUnits").map(|v| v.parse::<u32>())) {
        (1, Some(Ok(n))) => Some(n),
        _ => {
            r.fail(full_key(k::MINIMUM_CAPACITY), raw, "\"CapacityUnits=N\" with N a whole number (0 resets)");
            None
        }
    }
}

/// `target-group-attributes.<port>` and `listener-attributes.<PROTOCOL>-<port>`.
fn prefixed_annotations(r: &mut Reader<'_>, annotations: &BTreeMap<String, String>, s: &mut NlbSettings) {
    let tg_prefix = format!("{}.", full_key(k::TARGET_GROUP_ATTRIBUTES));
    let ls_prefix = format!("{}.", full_key(k::LISTENER_ATTRIBUTES));
    for (key, raw) in annotations {
        if let Some(port) = key.strip_prefix(&tg_prefix) {
            let attrs = tg_attributes(r, key);
            match port.parse::<u16>() {
                Ok(p) if p > 0 => {
                    s.target_group_attributes_by_port.insert(p, attrs);
                }
                _ => r.fail(key.as_str(), raw.as_str(), format!("a key of the form {tg_prefix}<service port number>")),
            }
        } else if let Some(suffix) = key.strip_prefix(&ls_prefix) {
            let attrs = r.map_key(key).unwrap_or_default();
            let parsed = suffix.rsplit_once('-').and_then(|(proto, port)| {
                let p = match proto {
                    "TCP" => Protocol::Tcp,
                    "UDP" => Protocol::Udp,
                    "TLS" => Protocol::Tls,
                    "TCP_UDP" => Protocol::TcpUdp,
                    _ => return None,
                };
                port.parse::<u16>().ok().filter(|p| *p > 0).map(|port| (p, port))
            });
            match parsed {
                Some(lk) => {
                    s.listener_attributes.insert(lk, attrs);
                }
                None => r.fail(
                    key.as_str(),
                    raw.as_str(),
                    format!("a key of the form {ls_prefix}<TCP|UDP|TLS|TCP_UDP>-<port>, e.g. {ls_prefix}TCP-80"),
                ),
            }
        }
    }
}

/// Known annotations this controller does not act on (yet).
fn unsupported_annotations(r: &mut Reader<'_>, unsupported: &mut Vec<Unsupported>) {
    let mut note = |r: &mut Reader<'_>, suffix: &str, reason: &str| {
        if r.raw(suffix).is_some() {
            unsupported.push(Unsupported { key: full_key(suffix), reason: reason.to_string() });
        }
    };
    note(r, k::QUIC_ENABLED_PORTS, "QUIC listeners are not implemented yet");
    note(r, k::SOURCE_NAT_IPV6_PREFIXES, "IPv6 source-NAT prefixes are not implemented yet");
    note(r, k::EIP_ALLOCATIONS_DISCOVERY_TAGS, "Elastic IP discovery by tags is not implemented yet");
    note(r, k::TARGET_NODE_LABELS, "applies to instance targets only; this controller registers pod IPs");
    note(r, k::QUIC_ENABLED_CONTAINERS, "a pod annotation; it has no effect on a Service");
    if let Some(v) = r.raw(k::ENABLE_PREFIX_FOR_IPV6_SOURCE_NAT) {
        if v == "on" {
            unsupported.push(Unsupported {
                key: full_key(k::ENABLE_PREFIX_FOR_IPV6_SOURCE_NAT),
                reason: format!("IPv6 source-NAT prefixes are {NOT_YET}"),
            });
        } else if v != "off" {
            r.fail(full_key(k::ENABLE_PREFIX_FOR_IPV6_SOURCE_NAT), v, "\"on\" or \"off\"");
        }
    }
}

/// `service.beta.kubernetes.io/actions.*` keys (custom listener actions): not implemented yet.
fn action_annotations(annotations: &BTreeMap<String, String>) -> Vec<Unsupported> {
    let prefix = full_key(k::ACTIONS_PREFIX);
    annotations
        .keys()
        .filter(|key| key.starts_with(&prefix))
        .map(|key| Unsupported {
            key: key.clone(),
            reason: "custom listener actions (weighted forwarding to other Services) are not implemented yet; \
                     the listener forwards to this Service's own target group"
                .into(),
        })
        .collect()
}

#[cfg(test)]
#[path = "annotations_tests.rs"]
mod tests;
