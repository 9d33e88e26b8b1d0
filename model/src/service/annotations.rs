//! Service annotations → typed [`NlbSettings`], with ALBC's semantics (its
//! `docs/guide/service/annotations.md` and `pkg/annotations`). Defaults that depend on the Service
//! spec or on the controller's configuration (scheme of an existing load balancer, `--default-ssl-policy`,
//! health-check defaults) are applied by [`super::build`]; here an absent annotation is `None`.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

use super::annotation_fields::{
    ALPN_POLICIES, HEALTH_CHECK_KEYS, backend_protocol, load_balancer_attributes, prefixed_annotations, tg_attributes,
    unsupported_annotations, valid_name,
};
use super::keys::{self as k, PREFIX, full_key};
pub use crate::annotations::Unsupported;
pub use crate::annotations::fields::{HealthCheckPortSetting, HealthCheckSettings};
use crate::annotations::fields::{health_check, minimum_capacity, user_tags};
use crate::annotations::{AnnotationErrors, Reader};
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

/// Protocol between the load balancer and the targets behind a TLS listener.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendProtocol {
    /// TLS is terminated at the load balancer (ALBC's default).
    #[default]
    Tcp,
    /// TLS again to the targets (`backend-protocol: ssl`).
    Ssl,
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
    /// `actions.<PROTOCOL>-<port>`: weighted forwards, by listener.
    pub forwards: BTreeMap<(Protocol, u16), super::actions::NlbForward>,
    /// `enable-prefix-for-ipv6-source-nat`: on/off.
    pub ipv6_source_nat: Option<bool>,
    /// `source-nat-ipv6-prefixes`: one per subnet, a /80 or `auto_assigned` (checked against the
    /// subnets when the stack is built).
    pub source_nat_ipv6_prefixes: Option<Vec<String>>,
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
    /// `quic-enabled-ports`: Service ports (names or numbers) whose UDP listener speaks QUIC.
    pub quic_ports: Vec<String>,
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
    /// `target-node-labels`: instance targets are the nodes carrying all these labels (the
    /// bindings' `nodeSelector`); ignored for ip targets, as in ALBC.
    pub target_node_labels: Option<BTreeMap<String, String>>,
    /// Known annotations we do not act on (yet).
    pub unsupported: Vec<Unsupported>,
    /// `service.beta.kubernetes.io/aws-load-balancer-*` keys no controller knows (typos?).
    pub unknown: Vec<String>,
}

impl NlbSettings {
    /// One operator-ready sentence per ignored annotation, for Warning events: every one of annotations not applied, except those that fail closed ([`Self::fail_closed`]).
    pub fn warnings(&self) -> Vec<String> {
        let mut out: Vec<String> =
            self.unsupported.iter().filter(|u| !u.fails_closed()).map(Unsupported::note).collect();
        out.extend(self.unknown.iter().map(|key| {
            format!("unknown annotation {key}: not an AWS Load Balancer Controller Service annotation (typo?); ignored")
        }));
        out
    }

    /// Why the stack must stay as it is: the refused annotations that protect it
    /// ([`crate::annotations::refusals`]), one Warning text each; empty when it may be deployed.
    pub fn fail_closed(&self) -> Vec<String> {
        crate::annotations::refusals::fail_closed_notes(&self.unsupported)
    }
}

/// Parses every Service annotation; all invalid values are reported together.
pub fn parse_annotations(annotations: &BTreeMap<String, String>) -> Result<NlbSettings, AnnotationErrors> {
    let mut r = Reader::new(annotations, PREFIX);
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
    s.ipv6_source_nat = r.one_of(k::ENABLE_PREFIX_FOR_IPV6_SOURCE_NAT, &["on", "off"]).map(|v| v == "on");
    s.source_nat_ipv6_prefixes = r.checked_list(
        k::SOURCE_NAT_IPV6_PREFIXES,
        "IPv6 /80 prefixes like 2600:1f18:0:1:2::/80, or auto_assigned",
        super::build_network::source_nat_prefix,
    );
    s.load_balancer_attributes = load_balancer_attributes(&mut r);
    s.target_group_attributes = tg_attributes(&mut r, &full_key(k::TARGET_GROUP_ATTRIBUTES));
    s.proxy_protocol_all = r.one_of(k::PROXY_PROTOCOL, &["*"]).is_some();
    s.proxy_protocol_ports = r
        .checked_list(k::PROXY_PROTOCOL_PER_TARGET_GROUP, "Service port numbers", |x| x.parse::<u16>().ok())
        .map(|v| v.into_iter().collect());
    s.additional_tags = user_tags(&mut r, k::ADDITIONAL_TAGS, &mut s.unsupported);
    s.health_check = health_check(&mut r, &HEALTH_CHECK_KEYS);
    s.ssl_certificates = r.list(k::SSL_CERT).unwrap_or_default();
    s.ssl_ports = r.list(k::SSL_PORTS).unwrap_or_default();
    s.quic_ports = r.list(k::QUIC_ENABLED_PORTS).unwrap_or_default();
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
    s.minimum_capacity_units = minimum_capacity(&mut r, k::MINIMUM_CAPACITY);
    s.target_node_labels = r.map(k::TARGET_NODE_LABELS);
    prefixed_annotations(&mut r, annotations, &mut s);
    unsupported_annotations(&mut r, &mut s.unsupported);
    s.unknown = r.unknown(|suffix| suffix.starts_with(k::AWS_LB_FAMILY));
    r.finish(s)
}

#[cfg(test)]
#[path = "annotations_tests.rs"]
mod tests;
