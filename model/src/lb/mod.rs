//! Load balancers as plain data: what the controller wants in AWS and what it found there.
//!
//! The same types describe both sides so a diff is a comparison of values. Service → NLB and
//! Ingress → ALB both build a [`Stack`]; the `aws` crate reads and writes these types; nothing
//! here knows how (no SDK types). Identifiers (ARNs, IDs) appear only on the observed side
//! ([`Observed`]); desired objects refer to each other by name.

pub mod build;
pub mod diff;
mod jwt;
mod mtls;
pub mod subnets;

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

pub mod naming;
mod rule;
pub mod tags;
mod transform;

pub use jwt::{JWT_CLAIMS_MAX, JWT_DEFAULT_CLAIMS, JWT_FIELD_MAX_LEN, JwtClaim, JwtClaimFormat, JwtValidation};
pub use mtls::{MtlsMode, MutualAuthentication};
pub use rule::{
    AuthenticateCognito, AuthenticateOidc, Condition, OIDC_SECRET_DIGEST_TAG, QueryStringPair, REGEX_VALUE_MAX_LEN,
    RULE_PRIORITIES, Rule, VALUES_PER_CONDITION_MAX, oidc_secret_digest, regex_value_problem,
};
pub use transform::{REWRITE_MAX_LEN, Rewrite, Transform, TransformKind, transform_problems};

/// AWS resource tags (key → value), sorted so comparisons and hashes are stable.
pub type Tags = BTreeMap<String, String>;
/// Load balancer, target group or listener attributes (`key` → `value`, as AWS spells them).
pub type Attributes = BTreeMap<String, String>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LbType {
    Network,
    Application,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scheme {
    Internal,
    InternetFacing,
}

impl Scheme {
    pub fn as_aws(self) -> &'static str {
        match self {
            Scheme::Internal => "internal",
            Scheme::InternetFacing => "internet-facing",
        }
    }
}

/// Load balancer address type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LbIpAddressType {
    Ipv4,
    Dualstack,
    DualstackWithoutPublicIpv4,
}

impl LbIpAddressType {
    pub fn as_aws(self) -> &'static str {
        match self {
            LbIpAddressType::Ipv4 => "ipv4",
            LbIpAddressType::Dualstack => "dualstack",
            LbIpAddressType::DualstackWithoutPublicIpv4 => "dualstack-without-public-ipv4",
        }
    }
}

/// One subnet of a load balancer, with the optional fixed addresses NLBs accept.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubnetMapping {
    pub subnet_id: String,
    /// Elastic IP allocation (internet-facing NLB).
    pub allocation_id: Option<String>,
    /// Fixed private address (internal NLB).
    pub private_ipv4: Option<Ipv4Addr>,
    pub ipv6: Option<Ipv6Addr>,
    /// Dual-stack NLB with source NAT prefixes: the subnet's /80 prefix, or
    /// [`SOURCE_NAT_AUTO_ASSIGNED`] for one AWS picks (which the observed side then names).
    pub source_nat_ipv6_prefix: Option<String>,
}

impl SubnetMapping {
    /// A subnet with no fixed address and no source NAT prefix.
    pub fn plain(subnet_id: impl Into<String>) -> Self {
        SubnetMapping {
            subnet_id: subnet_id.into(),
            allocation_id: None,
            private_ipv4: None,
            ipv6: None,
            source_nat_ipv6_prefix: None,
        }
    }
}

/// `SourceNatIpv6Prefix` value asking AWS to pick the subnet's prefix.
pub const SOURCE_NAT_AUTO_ASSIGNED: &str = "auto_assigned";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadBalancer {
    pub name: String,
    pub lb_type: LbType,
    pub scheme: Scheme,
    pub ip_address_type: LbIpAddressType,
    /// Sorted by subnet ID.
    pub subnets: Vec<SubnetMapping>,
    /// Security group IDs (sorted); empty = none (NLB without security groups).
    pub security_groups: Vec<String>,
    pub attributes: Attributes,
    pub tags: Tags,
    /// ALB on an Outpost: its customer-owned IPv4 pool (`customer-owned-ipv4-pool`). Sent at
    /// creation only: AWS has no call to change it on an existing load balancer.
    pub customer_owned_ipv4_pool: Option<String>,
    /// The IPAM pool the ALB's IPv4 addresses come from (`ipam-ipv4-pool-id`, IngressClassParams
    /// `ipamConfiguration`); changed in place with `ModifyIpPools`.
    pub ipv4_ipam_pool: Option<String>,
    /// NLB `EnablePrefixForIpv6SourceNat` (`enable-prefix-for-ipv6-source-nat`): `None` leaves
    /// whatever the load balancer has (AWS's default is off).
    pub ipv6_source_nat: Option<bool>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    Tcp,
    Udp,
    TcpUdp,
    Tls,
    Http,
    Https,
    /// UDP carrying QUIC, targets routed by QUIC server ID (`quic-enabled-ports`).
    Quic,
    /// TCP and QUIC on one port.
    TcpQuic,
}

impl Protocol {
    pub fn as_aws(self) -> &'static str {
        match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
            Protocol::TcpUdp => "TCP_UDP",
            Protocol::Tls => "TLS",
            Protocol::Http => "HTTP",
            Protocol::Https => "HTTPS",
            Protocol::Quic => "QUIC",
            Protocol::TcpQuic => "TCP_QUIC",
        }
    }

    pub fn from_aws(s: &str) -> Option<Self> {
        Some(match s.to_ascii_uppercase().as_str() {
            "TCP" => Protocol::Tcp,
            "UDP" => Protocol::Udp,
            "TCP_UDP" => Protocol::TcpUdp,
            "TLS" => Protocol::Tls,
            "HTTP" => Protocol::Http,
            "HTTPS" => Protocol::Https,
            "QUIC" => Protocol::Quic,
            "TCP_QUIC" => Protocol::TcpQuic,
            _ => return None,
        })
    }
}

/// Where health checks go: the traffic port or a fixed port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HealthCheckPort {
    TrafficPort,
    Port(u16),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthCheck {
    pub protocol: Protocol,
    pub port: HealthCheckPort,
    /// HTTP(S) only.
    pub path: Option<String>,
    /// HTTP(S) success codes, e.g. "200-399" (`Matcher.HttpCode`).
    pub success_codes: Option<String>,
    pub interval_seconds: u32,
    pub timeout_seconds: u32,
    pub healthy_threshold: u32,
    pub unhealthy_threshold: u32,
}

/// Target group address type (the targets', not the load balancer's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TgIpAddressType {
    Ipv4,
    Ipv6,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetGroup {
    /// AWS name (≤32 chars), deterministic so an existing group is found again.
    pub name: String,
    pub protocol: Protocol,
    /// HTTP1 | HTTP2 | GRPC (ALB only).
    pub protocol_version: Option<String>,
    pub port: u16,
    /// "ip" (pod IPs) or "instance".
    pub target_type: String,
    pub ip_address_type: TgIpAddressType,
    pub vpc_id: String,
    pub health_check: HealthCheck,
    pub attributes: Attributes,
    pub tags: Tags,
    /// ALB target optimizer: the port its agent in the pod and the ALB talk on
    /// (`target-control-port.*`). Fixed at creation: part of an Ingress target group's name, so a
    /// change makes a new group.
    pub target_control_port: Option<u16>,
}

/// A target group as a desired listener or rule refers to it: by name in a desired stack
/// (the ARN is not known before creation), by ARN when observed or user-supplied.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TargetGroupRef {
    Name(String),
    Arn(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightedTargetGroup {
    pub target_group: TargetGroupRef,
    pub weight: Option<u32>,
}

/// A listener or rule action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Forward {
        target_groups: Vec<WeightedTargetGroup>,
        /// Target-group stickiness duration (seconds), when enabled; `Some(0)`: enabled with no
        /// duration (NLBs, whose stickiness has none).
        stickiness_seconds: Option<u32>,
    },
    Redirect {
        protocol: Option<String>,
        host: Option<String>,
        port: Option<String>,
        path: Option<String>,
        query: Option<String>,
        status_code: String,
    },
    FixedResponse {
        status_code: String,
        content_type: Option<String>,
        message_body: Option<String>,
    },
    /// ALB only; comes before the action it guards.
    AuthenticateOidc(AuthenticateOidc),
    AuthenticateCognito(AuthenticateCognito),
    /// ALB HTTPS listeners only; comes before the action it guards.
    JwtValidation(JwtValidation),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listener {
    pub port: u16,
    pub protocol: Protocol,
    /// Certificate ARNs; the first is the default certificate.
    pub certificates: Vec<String>,
    pub ssl_policy: Option<String>,
    pub alpn_policy: Option<String>,
    /// HTTPS listeners of an ALB. Desired `None`: left as it is (ALBC's default, so a listener
    /// adopted with mutual TLS set outside the controller keeps it); observed `None`: off.
    pub mutual_authentication: Option<MutualAuthentication>,
    pub default_actions: Vec<Action>,
    pub attributes: Attributes,
    pub tags: Tags,
    /// Non-default rules (ALB), desired side only: observed rules are in
    /// [`diff::ObservedStack::rules`] with their ARNs. NLB listeners have none.
    pub rules: Vec<Rule>,
}

/// A subnet as EC2 describes it (input to discovery).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subnet {
    pub id: String,
    pub vpc_id: String,
    pub availability_zone: String,
    pub cidr: String,
    pub ipv6_cidrs: Vec<String>,
    pub available_ips: u32,
    pub tags: Tags,
}

/// One ingress permission of a security group.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IngressRule {
    /// "tcp", "udp", "icmp", "-1" (all).
    pub protocol: String,
    pub from_port: i32,
    pub to_port: i32,
    pub source: RuleSource,
    pub description: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RuleSource {
    Cidr(String),
    Ipv6Cidr(String),
    PrefixList(String),
    SecurityGroup(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecurityGroup {
    pub name: String,
    pub description: String,
    pub vpc_id: String,
    pub ingress: Vec<IngressRule>,
    pub tags: Tags,
}

/// A network interface (to find the security groups of a pod IP's ENI).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkInterface {
    pub id: String,
    pub subnet_id: String,
    pub private_ips: Vec<std::net::IpAddr>,
    pub security_groups: Vec<String>,
}

/// Something that exists in AWS: its identifier (ARN or ID) and what it looks like.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed<T> {
    pub id: String,
    pub spec: T,
}

/// What AWS reports about a load balancer beyond its spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadBalancerStatus {
    pub dns_name: String,
    pub vpc_id: String,
    /// "provisioning" | "active" | "failed" | …
    pub state: String,
    /// `EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic` (NLBs with security groups).
    pub enforce_inbound_rules_on_private_link: Option<bool>,
}

/// The AWS resources one Service (or one IngressGroup) wants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stack {
    /// `namespace/name` of the Service, or the IngressGroup name: the `*.k8s.aws/stack` tag.
    pub id: String,
    pub load_balancer: LoadBalancer,
    /// Managed frontend security group, when the controller owns one for this load balancer.
    pub frontend_security_group: Option<SecurityGroup>,
    pub target_groups: Vec<TargetGroup>,
    pub listeners: Vec<Listener>,
}
pub mod backend_rules;
pub mod backend_sg;
pub mod eni_lookup;
pub mod extras;
