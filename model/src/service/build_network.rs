//! The load balancer's network side: security-group mode, subnet mappings (EIPs, fixed
//! addresses) and the managed frontend security group (ALBC `model_build_load_balancer.go`,
//! `model_build_managed_sg.go`).

use std::collections::BTreeSet;
use std::net::IpAddr;

use ipnet::IpNet;

use super::annotations::SecurityGroupSelector;
use super::build::{Ctx, SgMode};
use super::keys::{self as k, full_key};
use crate::lb::build::{CustomGroups, FRONTEND_SG_DESCRIPTION, managed_or_custom};
use crate::lb::naming;
use crate::lb::tags::RESOURCE_MANAGED_SECURITY_GROUP;
use crate::lb::{
    IngressRule, LbIpAddressType, RuleSource, SOURCE_NAT_AUTO_ASSIGNED, Scheme, SecurityGroup, Subnet, SubnetMapping,
};

pub(super) fn security_group_mode(b: &mut Ctx<'_>) -> SgMode {
    let (s, c) = (b.s, b.c);
    if c.existing.as_ref().is_some_and(|e| !e.has_security_groups) {
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
        if c.existing.as_ref().is_some_and(|e| e.has_security_groups) {
            b.problems.push(
                "the existing load balancer has security groups, which AWS cannot remove; \
                 remove aws-load-balancer-disable-nlb-sg or recreate the Service"
                    .into(),
            );
        }
        return SgMode::None;
    }
    let custom = s.security_groups.as_ref().filter(|sel| !sel.is_empty()).map(|sel| CustomGroups {
        ids: sel
            .iter()
            .map(|x| match x {
                SecurityGroupSelector::Id(id) | SecurityGroupSelector::Name(id) => id.clone(),
            })
            .collect(),
        all_ids: sel.iter().all(|x| matches!(x, SecurityGroupSelector::Id(_))),
        annotation: super::keys::full_key(super::keys::SECURITY_GROUPS),
        manage_backend_annotation: super::keys::full_key(super::keys::MANAGE_BACKEND_SG_RULES),
    });
    managed_or_custom(custom, s.manage_backend_security_group_rules.unwrap_or(false), c, &mut b.problems)
}

pub(super) fn subnet_mappings(b: &mut Ctx<'_>) -> Vec<SubnetMapping> {
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
    let dualstack = b.ip_address_type == LbIpAddressType::Dualstack;
    let source_nat = s.ipv6_source_nat == Some(true);
    if source_nat && !dualstack {
        b.problems.push(format!(
            "{} is \"on\" but ip-address-type is {}: IPv6 source NAT needs a dualstack load balancer (set {} to \
             dualstack, or the source NAT annotation to off)",
            full_key(k::ENABLE_PREFIX_FOR_IPV6_SOURCE_NAT),
            b.ip_address_type.as_aws(),
            full_key(k::IP_ADDRESS_TYPE),
        ));
    }
    if source_nat && dualstack {
        let without: Vec<&str> = b.subnets.iter().filter(|x| x.ipv6_cidrs.is_empty()).map(|x| x.id.as_str()).collect();
        if !without.is_empty() {
            b.problems.push(format!(
                "{} is \"on\" but subnets {} have no IPv6 CIDR block: every subnet of the load balancer needs one",
                full_key(k::ENABLE_PREFIX_FOR_IPV6_SOURCE_NAT),
                without.join(", "),
            ));
        }
    }
    if let Some(p) = &s.source_nat_ipv6_prefixes {
        let key = full_key(k::SOURCE_NAT_IPV6_PREFIXES);
        if !dualstack {
            b.problems.push(format!("{key} needs ip-address-type dualstack, not {}", b.ip_address_type.as_aws()));
        } else if !source_nat {
            b.problems.push(format!(
                "{key} is set but {} is not \"on\": the prefixes apply only with IPv6 source NAT on",
                full_key(k::ENABLE_PREFIX_FOR_IPV6_SOURCE_NAT)
            ));
        } else if p.len() != n {
            b.problems.push(format!(
                "{} source NAT prefixes are configured for {n} subnets; give exactly one per subnet, in the order \
                 of the subnets annotation (by subnet ID when the subnets are discovered)",
                p.len()
            ));
        }
    }
    let mut out = Vec::new();
    // EIPs and source-NAT prefixes pair with the subnets by position in the resolver's order: the
    // subnets annotation's, as ALBC v3.5 keeps it (by subnet ID when discovered).
    for (i, subnet) in b.c.subnets.iter().enumerate() {
        let mut m = SubnetMapping::plain(&subnet.id);
        if b.scheme == Scheme::InternetFacing {
            m.allocation_id = s.eip_allocations.as_ref().and_then(|e| e.get(i).cloned());
        }
        if let Some(ips) = s.private_ipv4_addresses.as_ref().filter(|_| b.scheme == Scheme::Internal) {
            let cidrs: Vec<IpNet> = subnet.cidr.parse().into_iter().collect();
            m.private_ipv4 = one_inside(b, ips, &cidrs, subnet, "private IPv4");
        }
        if let Some(ips) = s.ipv6_addresses.as_ref().filter(|_| b.ip_address_type == LbIpAddressType::Dualstack) {
            let cidrs: Vec<IpNet> = subnet.ipv6_cidrs.iter().filter_map(|c| c.parse().ok()).collect();
            m.ipv6 = one_inside(b, ips, &cidrs, subnet, "IPv6");
        }
        if let Some(prefix) = s.source_nat_ipv6_prefixes.as_ref().filter(|p| p.len() == n).map(|p| p[i].clone())
            && dualstack
            && source_nat
        {
            if let Ok(net) = prefix.parse::<IpNet>() {
                let cidrs: Vec<IpNet> = subnet.ipv6_cidrs.iter().filter_map(|c| c.parse().ok()).collect();
                if !cidrs.iter().any(|c| c.contains(&net.addr())) {
                    b.problems.push(format!(
                        "source NAT prefix {prefix} is not inside subnet {} (IPv6 CIDR blocks: {}); the prefixes go \
                         one per subnet, in the order of the subnets annotation",
                        subnet.id,
                        if cidrs.is_empty() { "none".to_string() } else { subnet.ipv6_cidrs.join(", ") },
                    ));
                }
            }
            m.source_nat_ipv6_prefix = Some(prefix);
        }
        out.push(m);
    }
    out.sort_by(|a, b| a.subnet_id.cmp(&b.subnet_id));
    out
}

/// The single configured address inside a subnet's CIDRs, or a problem.
fn one_inside<T: Copy + Into<IpAddr>>(
    b: &mut Ctx<'_>,
    ips: &[T],
    cidrs: &[IpNet],
    subnet: &Subnet,
    what: &str,
) -> Option<T> {
    let inside: Vec<T> = ips.iter().copied().filter(|ip| cidrs.iter().any(|c| c.contains(&(*ip).into()))).collect();
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

pub(super) fn frontend_security_group(b: &mut Ctx<'_>) -> SecurityGroup {
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

/// One `source-nat-ipv6-prefixes` item: `auto_assigned`, or an IPv6 prefix of length 80 (AWS's
/// only length for source NAT), normalized.
pub(super) fn source_nat_prefix(raw: &str) -> Option<String> {
    if raw == SOURCE_NAT_AUTO_ASSIGNED {
        return Some(raw.to_string());
    }
    match raw.parse::<IpNet>().ok()? {
        IpNet::V6(net) if net.prefix_len() == 80 => Some(net.to_string()),
        _ => None,
    }
}
