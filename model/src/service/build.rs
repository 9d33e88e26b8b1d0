//! Service + [`NlbSettings`] + [`BuildContext`] → the desired NLB stack ([`ServiceStack`]), following
//! ALBC's model builder (`pkg/service/model_build_*.go`). Listeners, target groups and bindings are
//! in [`super::build_targets`]; this file holds the types, the load balancer and its security groups.
//!
//! Security-group modes (ALBC `buildLoadBalancerSecurityGroups`):
//! - **managed** (default): a frontend SG per NLB ([`Stack::frontend_security_group`], allowing the
//!   source ranges / prefix lists to the listener ports) plus the cluster's backend SG; targets
//!   admit traffic from the backend SG. The frontend SG's ID is not known before it exists, so
//!   `LoadBalancer::security_groups` lists only the other groups: the deployer adds the frontend
//!   SG's ID. Without a backend SG the frontend SG is the source of target rules, written as
//!   [`FRONTEND_SG_PLACEHOLDER`] until [`ServiceStack::resolve_frontend_security_group`] runs.
//! - **custom** (`security-groups` annotation): those groups; the backend SG only when
//!   `manage-backend-security-group-rules: "true"`.
//! - **none** (`disable-nlb-sg`, the controller may not manage SGs, or the existing NLB was created
//!   without SGs — AWS cannot add them later): targets admit the client / subnet CIDRs directly.

use std::collections::BTreeSet;
use std::fmt;

use ipnet::IpNet;
use k8s_openapi::api::core::v1::Service;

use super::annotations::{NlbSettings, SecurityGroupSelector};
use crate::crd::TargetGroupBindingSpec;
use crate::lb::naming;
use crate::lb::tags::{self, RESOURCE_LOAD_BALANCER, RESOURCE_MANAGED_SECURITY_GROUP, SERVICE_TAG_PREFIX, Tracking};
use crate::lb::{
    IngressRule, LbIpAddressType, LbType, LoadBalancer, RuleSource, Scheme, SecurityGroup, Stack, Subnet,
    SubnetMapping, Tags,
};

/// ALBC's `--default-ssl-policy`.
pub const DEFAULT_SSL_POLICY: &str = "ELBSecurityPolicy-2016-08";
/// Stand-in for the managed frontend SG's ID in target rules, until it exists.
pub const FRONTEND_SG_PLACEHOLDER: &str = "<managed-frontend-security-group>";
const FRONTEND_SG_DESCRIPTION: &str = "[k8s] Managed SecurityGroup for LoadBalancer";

/// What the caller found out before building (subnets, existing load balancer) and controller
/// configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildContext {
    /// `--cluster-name`.
    pub cluster_name: String,
    pub vpc_id: String,
    /// The VPC's CIDR blocks: default client ranges of an internal NLB without security groups.
    pub vpc_cidrs: Vec<String>,
    /// Resolved subnets (annotation or discovery), one per AZ.
    pub subnets: Vec<Subnet>,
    /// `--default-tags`.
    pub default_tags: Tags,
    /// `--external-managed-tags`: keys users may not set through annotations.
    pub external_managed_tags: BTreeSet<String>,
    /// The cluster's shared backend SG (`--backend-security-group` or the auto-created one).
    pub backend_security_group: Option<String>,
    /// ALBC feature gate `NLBSecurityGroup`: may NLBs get security groups at all.
    pub manage_frontend_security_groups: bool,
    /// The VPC has IPv6 (dualstack NLBs and IPv6 target groups need it).
    pub ipv6_available: bool,
    /// `--default-ssl-policy`.
    pub default_ssl_policy: String,
    /// ALBC feature gate `EnableTCPUDPListener` (off): merge TCP+UDP on one port.
    pub enable_tcp_udp_listener: bool,
    /// The load balancer this stack already has, if any.
    pub existing: Option<ExistingLoadBalancer>,
    /// IDs of the groups named (by Name tag) in the `security-groups` annotation, resolved by the
    /// caller; unused when the annotation lists IDs only.
    pub custom_security_group_ids: Vec<String>,
}

impl BuildContext {
    /// ALBC's defaults for everything but the cluster and VPC.
    pub fn new(cluster_name: impl Into<String>, vpc_id: impl Into<String>) -> Self {
        Self {
            cluster_name: cluster_name.into(),
            vpc_id: vpc_id.into(),
            vpc_cidrs: Vec::new(),
            subnets: Vec::new(),
            default_tags: Tags::new(),
            external_managed_tags: BTreeSet::new(),
            backend_security_group: None,
            manage_frontend_security_groups: true,
            ipv6_available: false,
            default_ssl_policy: DEFAULT_SSL_POLICY.to_string(),
            enable_tcp_udp_listener: false,
            existing: None,
            custom_security_group_ids: Vec::new(),
        }
    }
}

/// The parts of an existing load balancer that decide how a stack is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExistingLoadBalancer {
    /// Kept when no scheme annotation is set (ALBC).
    pub scheme: Scheme,
    /// An NLB created without security groups can never get any.
    pub has_security_groups: bool,
}

/// Load balancer settings outside [`LoadBalancer`] (set through their own AWS calls).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadBalancerExtras {
    /// `EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic` (`None` = leave as is).
    pub enforce_inbound_rules_on_private_link: Option<bool>,
    /// `MinimumLoadBalancerCapacity.CapacityUnits` (`Some(0)` resets).
    pub minimum_capacity_units: Option<u32>,
}

/// A TargetGroupBinding the controller creates for one target group.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetGroupBindingTemplate {
    pub namespace: String,
    /// Same as the target group's name (ALBC).
    pub name: String,
    /// `target_group_name` is set; the deployer sets `target_group_arn` once the group exists.
    pub spec: TargetGroupBindingSpec,
}

/// Everything one Service wants in AWS and in Kubernetes.
#[derive(Clone, Debug, PartialEq)]
pub struct ServiceStack {
    pub stack: Stack,
    pub extras: LoadBalancerExtras,
    pub bindings: Vec<TargetGroupBindingTemplate>,
    /// The stack uses the cluster's backend SG (it must exist and must not be released).
    pub backend_security_group_used: bool,
    /// Things the user should know (Warning events); the stack is still valid.
    pub warnings: Vec<String>,
}

impl ServiceStack {
    /// Replaces [`FRONTEND_SG_PLACEHOLDER`] in the bindings' rules by the created group's ID.
    pub fn resolve_frontend_security_group(&mut self, group_id: &str) {
        for b in &mut self.bindings {
            for rule in b.spec.networking.iter_mut().flat_map(|n| n.ingress.iter_mut()) {
                for peer in rule.from.iter_mut().filter_map(|p| p.security_group.as_mut()) {
                    if peer.group_id == FRONTEND_SG_PLACEHOLDER {
                        peer.group_id = group_id.to_string();
                    }
                }
            }
        }
    }
}

/// Why a Service cannot be turned into a stack; every problem found, each a full sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildError {
    pub problems: Vec<String>,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.problems.join("; "))
    }
}

impl std::error::Error for BuildError {}

/// Intermediate state shared by the builders.
pub(crate) struct Ctx<'a> {
    pub svc: &'a Service,
    pub s: &'a NlbSettings,
    pub c: &'a BuildContext,
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
    pub stack_id: String,
    pub scheme: Scheme,
    pub ip_address_type: LbIpAddressType,
    pub subnets: Vec<&'a Subnet>,
    pub problems: Vec<String>,
    pub warnings: Vec<String>,
}

impl Ctx<'_> {
    pub(crate) fn tags(&self, resource_id: &str) -> Tags {
        let t = Tracking {
            prefix: SERVICE_TAG_PREFIX,
            cluster: &self.c.cluster_name,
            stack_id: &self.stack_id,
            resource_id,
        };
        tags::resource_tags(&t, &self.c.default_tags, &self.s.additional_tags)
    }

    /// Client CIDRs: `spec.loadBalancerSourceRanges`, else the annotation.
    pub(crate) fn source_ranges(&mut self) -> Vec<IpNet> {
        let spec = self.svc.spec.as_ref().and_then(|s| s.load_balancer_source_ranges.clone()).unwrap_or_default();
        let mut out = Vec::new();
        for raw in spec.iter().map(|r| r.trim()).filter(|r| !r.is_empty()) {
            match raw.parse::<IpNet>() {
                Ok(n) => out.push(n),
                Err(_) => self.problems.push(format!(
                    "spec.loadBalancerSourceRanges entry {raw:?} is not a CIDR block (expected e.g. 10.0.0.0/16)"
                )),
            }
        }
        if out.is_empty() && spec.is_empty() {
            out = self.s.source_ranges.clone().unwrap_or_default();
        }
        out
    }
}

/// Security-group mode of the load balancer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SgMode {
    /// No SGs on the NLB; target rules from CIDRs.
    None,
    /// Managed frontend SG; target rules from `source` (backend SG or the frontend placeholder).
    Managed { source: String },
    /// User SGs; target rules from the backend SG when managed.
    Custom { ids: Vec<String>, source: Option<String> },
}

/// Builds the stack; all problems are reported together.
pub fn build_stack(svc: &Service, settings: &NlbSettings, ctx: &BuildContext) -> Result<ServiceStack, BuildError> {
    let meta = &svc.metadata;
    let (Some(namespace), Some(name), Some(uid)) =
        (meta.namespace.as_deref(), meta.name.as_deref(), meta.uid.as_deref())
    else {
        return Err(BuildError { problems: vec!["Service has no namespace, name or UID".into()] });
    };
    let mut subnets: Vec<&Subnet> = ctx.subnets.iter().collect();
    subnets.sort_by(|a, b| a.id.cmp(&b.id));
    let mut b = Ctx {
        svc,
        s: settings,
        c: ctx,
        namespace,
        name,
        uid,
        stack_id: format!("{namespace}/{name}"),
        scheme: settings.scheme.or(ctx.existing.map(|e| e.scheme)).unwrap_or(Scheme::Internal),
        ip_address_type: settings.ip_address_type.unwrap_or(LbIpAddressType::Ipv4),
        subnets,
        problems: Vec::new(),
        warnings: settings.warnings(),
    };
    for key in settings.additional_tags.keys().filter(|k| ctx.external_managed_tags.contains(*k)) {
        b.problems.push(format!(
            "tag {key} in annotation {} is managed outside the controller (--external-managed-tags) and cannot be set on a Service",
            super::parse::full_key(super::keys::ADDITIONAL_TAGS)
        ));
    }
    if b.subnets.is_empty() {
        b.problems.push("no subnets: set annotation service.beta.kubernetes.io/aws-load-balancer-subnets or tag subnets for discovery".into());
    }
    if b.ip_address_type == LbIpAddressType::Dualstack && !ctx.ipv6_available {
        b.problems.push("ip-address-type \"dualstack\" needs a VPC with IPv6 CIDR blocks".into());
    }
    let sg_mode = security_group_mode(&mut b);
    let subnet_mappings = subnet_mappings(&mut b);
    let frontend_security_group = match sg_mode {
        SgMode::Managed { .. } => Some(frontend_security_group(&mut b)),
        _ => None,
    };
    let targets = super::build_targets::build(&mut b, &sg_mode);
    let mut security_groups: Vec<String> = match &sg_mode {
        SgMode::None => Vec::new(),
        SgMode::Managed { source } => ctx.backend_security_group.iter().filter(|id| *id == source).cloned().collect(),
        SgMode::Custom { ids, source } => ids.iter().chain(source).cloned().collect(),
    };
    security_groups.sort();
    security_groups.dedup();
    let backend_security_group_used =
        ctx.backend_security_group.as_ref().is_some_and(|id| security_groups.contains(id));
    if !b.problems.is_empty() {
        return Err(BuildError { problems: b.problems });
    }
    let lb_name = settings
        .name
        .clone()
        .unwrap_or_else(|| naming::load_balancer_name(&ctx.cluster_name, namespace, name, uid, b.scheme.as_aws()));
    let load_balancer = LoadBalancer {
        name: lb_name,
        lb_type: LbType::Network,
        scheme: b.scheme,
        ip_address_type: b.ip_address_type,
        subnets: subnet_mappings,
        security_groups,
        attributes: settings.load_balancer_attributes.clone(),
        tags: b.tags(RESOURCE_LOAD_BALANCER),
    };
    Ok(ServiceStack {
        stack: Stack {
            id: b.stack_id.clone(),
            load_balancer,
            frontend_security_group,
            target_groups: targets.target_groups,
            listeners: targets.listeners,
        },
        extras: LoadBalancerExtras {
            enforce_inbound_rules_on_private_link: settings.inbound_sg_rules_on_private_link,
            minimum_capacity_units: settings.minimum_capacity_units,
        },
        bindings: targets.bindings,
        backend_security_group_used,
        warnings: b.warnings,
    })
}

fn security_group_mode(b: &mut Ctx<'_>) -> SgMode {
    let (s, c) = (b.s, b.c);
    if c.existing.is_some_and(|e| !e.has_security_groups) {
        if s.security_groups.is_some() {
            b.warnings.push(
                "the existing load balancer was created without security groups and AWS cannot add them; \
                 annotation aws-load-balancer-security-groups is ignored (recreate the Service to apply it)"
                    .into(),
            );
        }
        return SgMode::None;
    }
    if !c.manage_frontend_security_groups || s.disable_nlb_security_group {
        if c.existing.is_some_and(|e| e.has_security_groups) {
            b.problems.push(
                "the existing load balancer has security groups, which AWS cannot remove; \
                 remove aws-load-balancer-disable-nlb-sg or recreate the Service"
                    .into(),
            );
        }
        return SgMode::None;
    }
    match &s.security_groups {
        Some(sel) if !sel.is_empty() => {
            let ids: Vec<String> = if sel.iter().all(|x| matches!(x, SecurityGroupSelector::Id(_))) {
                sel.iter()
                    .map(|x| match x {
                        SecurityGroupSelector::Id(id) | SecurityGroupSelector::Name(id) => id.clone(),
                    })
                    .collect()
            } else {
                if c.custom_security_group_ids.is_empty() {
                    b.problems.push("security groups named by Name tag in aws-load-balancer-security-groups were not resolved to IDs".into());
                }
                c.custom_security_group_ids.clone()
            };
            let source = if s.manage_backend_security_group_rules.unwrap_or(false) {
                if c.backend_security_group.is_none() {
                    b.problems.push(
                        "manage-backend-security-group-rules needs the shared backend security group \
                         (--enable-backend-security-group or --backend-security-group) when custom security groups are set"
                            .into(),
                    );
                }
                c.backend_security_group.clone()
            } else {
                None
            };
            SgMode::Custom { ids, source }
        }
        _ => SgMode::Managed {
            source: c.backend_security_group.clone().unwrap_or_else(|| FRONTEND_SG_PLACEHOLDER.to_string()),
        },
    }
}

fn subnet_mappings(b: &mut Ctx<'_>) -> Vec<SubnetMapping> {
    let (s, n) = (b.s, b.subnets.len());
    let mut check = |what: &str, count: usize, allowed: bool, needs: &str| {
        if !allowed {
            b.problems.push(format!("{what} can only be set for {needs} load balancers"));
        } else if count != n {
            b.problems.push(format!("{count} {what} are configured for {n} subnets; give exactly one per subnet"));
        }
    };
    if let Some(e) = &s.eip_allocations {
        check("EIP allocations", e.len(), b.scheme == Scheme::InternetFacing, "internet-facing");
    }
    if let Some(p) = &s.private_ipv4_addresses {
        check("private IPv4 addresses", p.len(), b.scheme == Scheme::Internal, "internal");
    }
    if let Some(p) = &s.ipv6_addresses {
        check("IPv6 addresses", p.len(), b.ip_address_type == LbIpAddressType::Dualstack, "dualstack");
    }
    let mut out = Vec::new();
    for (i, subnet) in b.subnets.clone().into_iter().enumerate() {
        let mut m = SubnetMapping { subnet_id: subnet.id.clone(), allocation_id: None, private_ipv4: None, ipv6: None };
        if b.scheme == Scheme::InternetFacing {
            m.allocation_id = s.eip_allocations.as_ref().and_then(|e| e.get(i).cloned());
        }
        if let Some(ips) = s.private_ipv4_addresses.as_ref().filter(|_| b.scheme == Scheme::Internal) {
            let cidrs: Vec<IpNet> = subnet.cidr.parse().into_iter().collect();
            m.private_ipv4 =
                one_inside(b, ips.iter().map(|ip| std::net::IpAddr::V4(*ip)), &cidrs, subnet, "private IPv4").map(
                    |ip| match ip {
                        std::net::IpAddr::V4(v4) => v4,
                        std::net::IpAddr::V6(_) => unreachable!(),
                    },
                );
        }
        if let Some(ips) = s.ipv6_addresses.as_ref().filter(|_| b.ip_address_type == LbIpAddressType::Dualstack) {
            let cidrs: Vec<IpNet> = subnet.ipv6_cidrs.iter().filter_map(|c| c.parse().ok()).collect();
            m.ipv6 =
                one_inside(b, ips.iter().map(|ip| std::net::IpAddr::V6(*ip)), &cidrs, subnet, "IPv6").map(
                    |ip| match ip {
                        std::net::IpAddr::V6(v6) => v6,
                        std::net::IpAddr::V4(_) => unreachable!(),
                    },
                );
        }
        out.push(m);
    }
    out
}

/// The single configured address inside a subnet's CIDRs, or a problem.
fn one_inside(
    b: &mut Ctx<'_>,
    ips: impl Iterator<Item = std::net::IpAddr>,
    cidrs: &[IpNet],
    subnet: &Subnet,
    what: &str,
) -> Option<std::net::IpAddr> {
    let inside: Vec<_> = ips.filter(|ip| cidrs.iter().any(|c| c.contains(ip))).collect();
    if inside.len() == 1 {
        return Some(inside[0]);
    }
    let ranges: Vec<String> = cidrs.iter().map(|c| c.to_string()).collect();
    b.problems.push(format!(
        "expected exactly one configured {what} address inside subnet {} ({}), found {}",
        subnet.id,
        if ranges.is_empty() { "no CIDR".to_string() } else { ranges.join(", ") },
        inside.len()
    ));
    None
}

fn frontend_security_group(b: &mut Ctx<'_>) -> SecurityGroup {
    let dualstack = b.ip_address_type == LbIpAddressType::Dualstack;
    let prefix_lists = b.s.security_group_prefix_lists.clone().unwrap_or_default();
    let mut cidrs = b.source_ranges();
    for c in cidrs.iter().filter(|c| matches!(c, IpNet::V6(_)) && !dualstack) {
        b.problems.push(format!("IPv6 source range {c} needs ip-address-type \"dualstack\""));
    }
    if cidrs.is_empty() && b.s.security_group_prefix_lists.is_none() {
        cidrs.push("0.0.0.0/0".parse().expect("valid"));
        if dualstack {
            cidrs.push("::/0".parse().expect("valid"));
        }
    }
    let source = |c: &IpNet| match c {
        IpNet::V4(_) => RuleSource::Cidr(c.to_string()),
        IpNet::V6(_) => RuleSource::Ipv6Cidr(c.to_string()),
    };
    let mut ingress = BTreeSet::new();
    for p in b.svc.spec.iter().flat_map(|s| s.ports.iter().flatten()) {
        let protocol = p.protocol.as_deref().unwrap_or("TCP").to_ascii_lowercase();
        let port = p.port;
        let rule = |source| IngressRule {
            protocol: protocol.clone(),
            from_port: port,
            to_port: port,
            source,
            description: None,
        };
        ingress.extend(cidrs.iter().map(|c| rule(source(c))));
        ingress.extend(prefix_lists.iter().map(|pl| rule(RuleSource::PrefixList(pl.clone()))));
    }
    if b.s.enable_icmp_for_path_mtu_discovery {
        for c in &cidrs {
            // Fragmentation needed (ICMP type 3 code 4) / Packet too big (ICMPv6 type 2 code 0).
            let (protocol, from_port, to_port) = match c {
                IpNet::V4(_) => ("icmp", 3, 4),
                IpNet::V6(_) => ("icmpv6", 2, 0),
            };
            ingress.insert(IngressRule {
                protocol: protocol.into(),
                from_port,
                to_port,
                source: source(c),
                description: None,
            });
        }
    }
    SecurityGroup {
        name: naming::frontend_security_group_name(&b.c.cluster_name, b.namespace, b.name, b.uid),
        description: FRONTEND_SG_DESCRIPTION.to_string(),
        vpc_id: b.c.vpc_id.clone(),
        ingress: ingress.into_iter().collect(),
        tags: b.tags(RESOURCE_MANAGED_SECURITY_GROUP),
    }
}

#[cfg(test)]
#[path = "build_tests.rs"]
mod tests;
