//! Which differences between the stack that exists and the one wanted cannot be applied in place,
//! so the controller can announce them (Event) before acting.
//!
//! ALBC replaces a load balancer only when its type or scheme changes
//! (`isSDKLoadBalancerRequiresReplacement`); a changed `aws-load-balancer-name` is not applied
//! (AWS cannot rename; ALBC finds the load balancer by tags and keeps its name). A target group
//! whose name changes (port, protocol, target type or health-check protocol/interval changed)
//! is replaced: a new group is created, the listener moves to it, the old one is deleted.
//! Changing fixed subnet addresses (EIPs, private IPs) or adding/removing security groups on an
//! existing NLB is rejected by AWS; those are reported as not applicable.

use std::collections::BTreeMap;
use std::fmt;

use crate::lb::tags::{SERVICE_TAG_PREFIX, resource_tag_key};
use crate::lb::{Stack, TargetGroup};

/// How a change lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChangeKind {
    /// The load balancer is deleted and created again: new DNS name, connections dropped.
    ReplacesLoadBalancer,
    /// A target group is created anew and the listener switched to it; the old one is deleted.
    ReplacesTargetGroup,
    /// AWS cannot apply it to the existing load balancer; it is ignored (recreate the Service).
    NotApplied,
}

/// One change that deserves an announcement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub kind: ChangeKind,
    /// What changes, e.g. "scheme".
    pub what: String,
    pub from: String,
    pub to: String,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, from, to) = (&self.what, &self.from, &self.to);
        match self.kind {
            ChangeKind::ReplacesLoadBalancer => write!(
                f,
                "{what} changes from {from} to {to}: the load balancer will be deleted and recreated (new DNS name, open connections dropped)"
            ),
            ChangeKind::ReplacesTargetGroup => {
                write!(f, "{what} changes from {from} to {to}: the target group will be replaced")
            }
            ChangeKind::NotApplied => write!(
                f,
                "{what} changes from {from} to {to}, which AWS cannot apply to an existing load balancer; \
                 the change is ignored (delete and recreate the Service to apply it)"
            ),
        }
    }
}

fn change(kind: ChangeKind, what: impl Into<String>, from: impl fmt::Display, to: impl fmt::Display) -> Change {
    Change { kind, what: what.into(), from: from.to_string(), to: to.to_string() }
}

/// Changes from `current` (what exists, as last built or observed) to `desired` that replace
/// something or cannot be applied; empty when everything applies in place.
pub fn classify_changes(current: &Stack, desired: &Stack) -> Vec<Change> {
    let (cur, want) = (&current.load_balancer, &desired.load_balancer);
    let mut out = Vec::new();
    if cur.lb_type != want.lb_type {
        out.push(change(
            ChangeKind::ReplacesLoadBalancer,
            "load balancer type",
            format!("{:?}", cur.lb_type),
            format!("{:?}", want.lb_type),
        ));
    }
    if cur.scheme != want.scheme {
        out.push(change(ChangeKind::ReplacesLoadBalancer, "scheme", cur.scheme.as_aws(), want.scheme.as_aws()));
    } else if cur.name != want.name {
        out.push(change(ChangeKind::NotApplied, "load balancer name", &cur.name, &want.name));
    }
    if cur.scheme == want.scheme {
        let cur_has_sg = !cur.security_groups.is_empty() || current.frontend_security_group.is_some();
        let want_has_sg = !want.security_groups.is_empty() || desired.frontend_security_group.is_some();
        if cur_has_sg != want_has_sg {
            let show = |b: bool| if b { "with security groups" } else { "without security groups" };
            out.push(change(ChangeKind::NotApplied, "security groups", show(cur_has_sg), show(want_has_sg)));
        }
        let cur_maps: BTreeMap<&str, _> = cur.subnets.iter().map(|m| (m.subnet_id.as_str(), m)).collect();
        for m in &want.subnets {
            if let Some(c) = cur_maps.get(m.subnet_id.as_str()) {
                let fixed = |m: &crate::lb::SubnetMapping| (m.allocation_id.clone(), m.private_ipv4, m.ipv6);
                if fixed(c) != fixed(m) {
                    out.push(change(
                        ChangeKind::NotApplied,
                        format!("fixed addresses of subnet {}", m.subnet_id),
                        describe(c),
                        describe(m),
                    ));
                }
            }
        }
    }
    let key = resource_tag_key(SERVICE_TAG_PREFIX);
    let by_resource = |tgs: &[TargetGroup]| -> BTreeMap<String, TargetGroup> {
        tgs.iter().filter_map(|tg| tg.tags.get(&key).map(|id| (id.clone(), tg.clone()))).collect()
    };
    let cur_tgs = by_resource(&current.target_groups);
    for (id, tg) in by_resource(&desired.target_groups) {
        if let Some(c) = cur_tgs.get(&id).filter(|c| c.name != tg.name) {
            let summary = |t: &TargetGroup| {
                format!(
                    "{} {}:{} (health check {} every {}s)",
                    t.name,
                    t.protocol.as_aws(),
                    t.port,
                    t.health_check.protocol.as_aws(),
                    t.health_check.interval_seconds
                )
            };
            out.push(change(ChangeKind::ReplacesTargetGroup, format!("target group {id}"), summary(c), summary(&tg)));
        }
    }
    out
}

fn describe(m: &crate::lb::SubnetMapping) -> String {
    let mut parts = Vec::new();
    if let Some(a) = &m.allocation_id {
        parts.push(a.clone());
    }
    if let Some(ip) = m.private_ipv4 {
        parts.push(ip.to_string());
    }
    if let Some(ip) = m.ipv6 {
        parts.push(ip.to_string());
    }
    if parts.is_empty() { "none".into() } else { parts.join(" ") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lb::{LbIpAddressType, LbType, LoadBalancer, Scheme, SubnetMapping, Tags};

    fn stack(scheme: Scheme, name: &str) -> Stack {
        Stack {
            id: "default/echo".into(),
            load_balancer: LoadBalancer {
                name: name.into(),
                lb_type: LbType::Network,
                scheme,
                ip_address_type: LbIpAddressType::Ipv4,
                subnets: vec![SubnetMapping {
                    subnet_id: "subnet-a".into(),
                    allocation_id: None,
                    private_ipv4: None,
                    ipv6: None,
                    source_nat_ipv6_prefix: None,
                }],
                security_groups: vec!["sg-b".into()],
                attributes: Default::default(),
                tags: Tags::new(),
                customer_owned_ipv4_pool: None,
                ipv4_ipam_pool: None,
                ipv6_source_nat: None,
            },
            frontend_security_group: None,
            target_groups: Vec::new(),
            listeners: Vec::new(),
        }
    }

    #[test]
    fn scheme_replaces_name_is_not_applied() {
        let cur = stack(Scheme::Internal, "k8s-a");
        assert!(classify_changes(&cur, &cur).is_empty());
        let c = classify_changes(&cur, &stack(Scheme::InternetFacing, "k8s-b"));
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].kind, ChangeKind::ReplacesLoadBalancer);
        assert!(c[0].to_string().contains("from internal to internet-facing"));
        let c = classify_changes(&cur, &stack(Scheme::Internal, "custom"));
        assert_eq!((c[0].kind, c[0].what.as_str()), (ChangeKind::NotApplied, "load balancer name"));
    }

    #[test]
    fn fixed_addresses_and_security_groups_are_not_applied() {
        let cur = stack(Scheme::InternetFacing, "n");
        let mut want = cur.clone();
        want.load_balancer.subnets[0].allocation_id = Some("eipalloc-1".into());
        want.load_balancer.security_groups.clear();
        let kinds: Vec<_> = classify_changes(&cur, &want).into_iter().map(|c| (c.kind, c.what)).collect();
        assert!(kinds.contains(&(ChangeKind::NotApplied, "fixed addresses of subnet subnet-a".into())));
        assert!(kinds.contains(&(ChangeKind::NotApplied, "security groups".into())));
    }

    #[test]
    fn renamed_target_group_is_replaced() {
        use crate::lb::{HealthCheck, HealthCheckPort, Protocol, TgIpAddressType};
        let tg = |name: &str, protocol| TargetGroup {
            name: name.into(),
            protocol,
            protocol_version: None,
            port: 80,
            target_type: "ip".into(),
            ip_address_type: TgIpAddressType::Ipv4,
            vpc_id: "vpc".into(),
            health_check: HealthCheck {
                protocol: Protocol::Tcp,
                port: HealthCheckPort::TrafficPort,
                path: None,
                success_codes: None,
                interval_seconds: 10,
                timeout_seconds: 10,
                healthy_threshold: 3,
                unhealthy_threshold: 3,
            },
            attributes: Default::default(),
            tags: Tags::from([(resource_tag_key(SERVICE_TAG_PREFIX), "default/echo:80".into())]),
            target_control_port: None,
        };
        let mut cur = stack(Scheme::Internal, "n");
        cur.target_groups = vec![tg("k8s-old", Protocol::Tcp)];
        let mut want = cur.clone();
        want.target_groups = vec![tg("k8s-new", Protocol::Tls)];
        let c = classify_changes(&cur, &want);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].kind, ChangeKind::ReplacesTargetGroup);
        assert!(c[0].to_string().contains("k8s-old TCP:80") && c[0].to_string().contains("k8s-new TLS:80"), "{}", c[0]);
    }
}
