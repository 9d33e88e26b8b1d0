//! The cross-check of an instance found by a node's private IP (issue 21, item 1): the IP says
//! which instance, the node's zone label and EC2-style hostname say it again. When they
//! disagree the IP found the wrong instance (a stale node object whose address was reused, a
//! node in another VPC reporting an overlapping IP) and registering it would send the node's
//! traffic to someone else's machine, so the node is left out and warned about.
//!
//! Compared, when both sides are known:
//! - the node's `topology.kubernetes.io/zone` label against the instance's
//!   `Placement.AvailabilityZone`;
//! - the node's hostname (its `Hostname` address, else its name) against the instance's
//!   `PrivateDnsName`, only when both are EC2 IP names (`ip-a-b-c-d`, bare or followed by
//!   `.ec2.internal` / `.<region>.compute.internal`), by that `ip-a-b-c-d` label. Custom
//!   hostnames (RKE2 lets the operator name nodes freely) and resource-name instance DNS names
//!   (`i-….<region>.compute.internal`) say nothing about the IP and are not compared.

use super::NodeFacts;
use std::fmt;
use std::net::IpAddr;

/// The zone label the kubelet or cloud provider sets (and RKE2 operators set by hand).
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// The EC2 instance owning a node's private IP, as DescribeInstances describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Instance {
    pub id: String,
    /// `Placement.AvailabilityZone`.
    pub zone: Option<String>,
    /// `PrivateDnsName`, e.g. `ip-10-0-1-10.eu-west-1.compute.internal`.
    pub private_dns_name: Option<String>,
}

impl Instance {
    pub fn new(id: impl Into<String>) -> Self {
        Self { id: id.into(), ..Default::default() }
    }
}

/// What disagreed: the node's value (`seen`) and the instance's (`expected`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mismatch {
    Zone { seen: String, expected: String },
    Hostname { seen: String, expected: String },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Zone { seen, expected } => {
                write!(f, "label {ZONE_LABEL}={seen}, but the instance is in availability zone {expected}")
            }
            Mismatch::Hostname { seen, expected } => {
                write!(f, "hostname {seen}, but the instance's private DNS name is {expected}")
            }
        }
    }
}

/// A node whose IP found an instance that failed the cross-check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeMismatch {
    pub node: String,
    pub ip: IpAddr,
    pub instance: String,
    pub mismatch: Mismatch,
}

/// The `ip-a-b-c-d` label of an EC2 IP name (`ip-10-0-1-10`, `ip-10-0-1-10.ec2.internal`,
/// `ip-10-0-1-10.eu-west-1.compute.internal`); `None` for any other name.
pub fn ec2_host_label(name: &str) -> Option<&str> {
    let (label, rest) = match name.split_once('.') {
        Some((l, r)) => (l, Some(r)),
        None => (name, None),
    };
    let domain_ok = match rest {
        None => true,
        Some(r) => {
            r.eq_ignore_ascii_case("ec2.internal")
                || r.len() > ".compute.internal".len()
                    && r.to_ascii_lowercase().ends_with(".compute.internal")
                    && !r[..r.len() - ".compute.internal".len()].contains('.')
        }
    };
    let octets = label.get(..3).filter(|p| p.eq_ignore_ascii_case("ip-")).map(|_| &label[3..])?;
    let parts: Vec<&str> = octets.split('-').collect();
    let ip_ok = parts.len() == 4
        && parts.iter().all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()))
        && parts.iter().all(|p| p.parse::<u16>().is_ok_and(|v| v <= 255));
    (domain_ok && ip_ok).then_some(label)
}

/// Whether `inst` (found by `node`'s InternalIP) is the node's instance as far as the node's
/// zone label and hostname tell (rules: module docs). `Err` names the first disagreement.
pub fn cross_check(node: &NodeFacts, inst: &Instance) -> Result<(), Mismatch> {
    if let (Some(seen), Some(expected)) = (node.zone(), inst.zone.as_deref().filter(|z| !z.is_empty()))
        && seen != expected
    {
        return Err(Mismatch::Zone { seen: seen.to_string(), expected: expected.to_string() });
    }
    let host = [node.hostname.as_deref(), Some(node.name.as_str())]
        .into_iter()
        .flatten()
        .find_map(|h| ec2_host_label(h).map(|l| (h, l)));
    let dns = inst.private_dns_name.as_deref().and_then(|d| ec2_host_label(d).map(|l| (d, l)));
    if let (Some((seen, a)), Some((expected, b))) = (host, dns)
        && !a.eq_ignore_ascii_case(b)
    {
        return Err(Mismatch::Hostname { seen: seen.to_string(), expected: expected.to_string() });
    }
    Ok(())
}
