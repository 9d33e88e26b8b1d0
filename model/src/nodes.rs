//! Instance targets: which nodes a binding in `targetType: instance` registers, how a node is
//! mapped to its EC2 instance, and the register/deregister diff against the target group.
//!
//! Node eligibility follows these of ALBC's rules for instance targets:
//! - the node's `Ready` condition is `True` (Unknown or False: not a target);
//! - the node is not being deleted (no `metadata.deletionTimestamp`);
//! - the node carries none of the exclusion labels
//!   `node.kubernetes.io/exclude-from-external-load-balancers` and
//!   `alpha.service-controller.kubernetes.io/exclude-balancer` (any value, as ALBC: presence
//!   excludes), and is not a Fargate node (`eks.amazonaws.com/compute-type: fargate`);
//! - the binding's `spec.nodeSelector`, when set, matches the node's labels.
//!
//! Not followed: ALBC also drops nodes labelled `node-role.kubernetes.io/master`. Kubernetes'
//! own service controller stopped doing so, and RKE2 servers carry that label while running
//! workloads; excluding them would empty small clusters' target groups.
//!
//! Node → instance: `spec.providerID` of the form `aws:///<zone>/i-<hex>` (or `aws:///i-<hex>`)
//! names the instance; anything else (empty, `rke2://<host>`, `k3s://…`) falls back to the
//! node's first `InternalIP` address, resolved to the instance owning that private IP in the
//! target group's VPC (see `lbc_aws::instances`). An instance found by IP is cross-checked
//! against the node's zone label and EC2-style hostname before it is registered
//! ([`cross_check`], in `nodes_check.rs`).

use crate::ingress::select::selector_matches;
use crate::target::HealthState;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::IpAddr;

/// Labels whose presence keeps a node out of every instance target group (ALBC's defaults).
pub const EXCLUDE_LABELS: [&str; 2] = [
    "node.kubernetes.io/exclude-from-external-load-balancers",
    "alpha.service-controller.kubernetes.io/exclude-balancer",
];
/// Label (and value) of an EKS Fargate node: no instance behind it.
pub const FARGATE_LABEL: (&str, &str) = ("eks.amazonaws.com/compute-type", "fargate");

/// An instance target as AWS keys it: (instance id, port).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InstanceTarget {
    pub id: String,
    pub port: u16,
}

impl InstanceTarget {
    pub fn new(id: impl Into<String>, port: u16) -> Self {
        Self { id: id.into(), port }
    }
}

impl fmt::Display for InstanceTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.id, self.port)
    }
}

/// What the decisions need of a node (the controller's node cache keeps only this much).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct NodeFacts {
    pub name: String,
    /// `Ready` condition status: `Some(true)` only for `True`.
    pub ready: bool,
    pub deleting: bool,
    pub labels: BTreeMap<String, String>,
    pub provider_id: Option<String>,
    /// The first `InternalIP` in `status.addresses`.
    pub internal_ip: Option<IpAddr>,
    /// The first `Hostname` in `status.addresses`.
    pub hostname: Option<String>,
}

impl NodeFacts {
    pub fn of(node: &Node) -> Self {
        let status = node.status.as_ref();
        let ready = status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        let addresses = || status.and_then(|s| s.addresses.as_ref()).into_iter().flatten();
        let internal_ip = addresses().filter(|a| a.type_ == "InternalIP").find_map(|a| a.address.parse().ok());
        let hostname = addresses().find(|a| a.type_ == "Hostname" && !a.address.is_empty()).map(|a| a.address.clone());
        Self {
            name: node.metadata.name.clone().unwrap_or_default(),
            ready,
            deleting: node.metadata.deletion_timestamp.is_some(),
            labels: node.metadata.labels.clone().unwrap_or_default(),
            provider_id: node.spec.as_ref().and_then(|s| s.provider_id.clone()).filter(|p| !p.is_empty()),
            internal_ip,
            hostname,
        }
    }

    /// What instance mode reads of the node (readiness, deletion, labels, providerID, InternalIP,
    /// hostname), as a digest for `crate::digest::Digests`: a kubelet's status report that only
    /// moves `lastHeartbeatTime` or the node's capacity leaves it unchanged.
    pub fn digest(&self) -> u64 {
        crate::digest::digest_of(self)
    }

    /// The node's `topology.kubernetes.io/zone` label, when set and not empty.
    pub fn zone(&self) -> Option<&str> {
        self.labels.get(ZONE_LABEL).map(String::as_str).filter(|z| !z.is_empty())
    }
}

/// Why a node is not an instance target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ineligible {
    NotReady,
    Deleting,
    ExcludedByLabel(&'static str),
    Fargate,
    SelectorMismatch,
}

/// Whether `node` is an instance target of a binding with `selector` (rules: module docs).
pub fn eligibility(node: &NodeFacts, selector: Option<&LabelSelector>) -> Result<(), Ineligible> {
    if node.deleting {
        return Err(Ineligible::Deleting);
    }
    if !node.ready {
        return Err(Ineligible::NotReady);
    }
    if let Some(l) = EXCLUDE_LABELS.iter().find(|l| node.labels.contains_key(**l)) {
        return Err(Ineligible::ExcludedByLabel(l));
    }
    if node.labels.get(FARGATE_LABEL.0).map(String::as_str) == Some(FARGATE_LABEL.1) {
        return Err(Ineligible::Fargate);
    }
    if let Some(sel) = selector
        && !selector_matches(sel, &node.labels)
    {
        return Err(Ineligible::SelectorMismatch);
    }
    Ok(())
}

/// The instance id in an AWS `providerID`: `aws:///<zone>/i-<hex>` or `aws:///i-<hex>`, where
/// `<hex>` is 8 or 17 lowercase hex digits. Anything else is `None` (resolve by IP instead).
pub fn instance_id_from_provider_id(provider_id: &str) -> Option<&str> {
    let rest = provider_id.strip_prefix("aws://")?;
    let id = rest.rsplit('/').next()?;
    let hex = id.strip_prefix("i-")?;
    let ok = matches!(hex.len(), 8 | 17) && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    ok.then_some(id)
}

/// How a node's instance is found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Locator {
    /// From `spec.providerID`.
    Instance(String),
    /// No usable providerID: the instance owning this private IP.
    PrivateIp(IpAddr),
    /// Neither a usable providerID nor an InternalIP.
    Unlocatable,
}

pub fn locate(node: &NodeFacts) -> Locator {
    if let Some(id) = node.provider_id.as_deref().and_then(instance_id_from_provider_id) {
        return Locator::Instance(id.to_string());
    }
    match node.internal_ip {
        Some(ip) => Locator::PrivateIp(ip),
        None => Locator::Unlocatable,
    }
}

/// The eligible nodes and how to find each one's instance, by node name.
pub fn eligible_locators(nodes: &[NodeFacts], selector: Option<&LabelSelector>) -> BTreeMap<String, Locator> {
    nodes.iter().filter(|n| eligibility(n, selector).is_ok()).map(|n| (n.name.clone(), locate(n))).collect()
}

/// The desired targets and the eligible nodes left out of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstanceTargets {
    pub targets: BTreeSet<InstanceTarget>,
    /// Nodes no instance was found for (by name).
    pub unresolved: Vec<String>,
    /// Nodes whose instance, found by IP, failed the [`cross_check`].
    pub mismatched: Vec<NodeMismatch>,
}

/// The desired targets: every node's instance on `node_port`. `resolved` maps the node names
/// whose IP was resolved to their instance; nodes located by IP and missing from it are
/// unresolved, and those whose instance fails [`cross_check`] against `nodes` are mismatched
/// (both left out of the targets). A node located by providerID is not cross-checked: no
/// instance was looked up, and its providerID already names the zone the cloud provider set.
pub fn desired_instance_targets(
    nodes: &[NodeFacts],
    locators: &BTreeMap<String, Locator>,
    resolved: &BTreeMap<String, Instance>,
    node_port: u16,
) -> InstanceTargets {
    let by_name: BTreeMap<&str, &NodeFacts> = nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let mut out = InstanceTargets::default();
    for (name, loc) in locators {
        let id = match loc {
            Locator::Instance(id) => id,
            Locator::PrivateIp(ip) => match (resolved.get(name), by_name.get(name.as_str())) {
                (Some(inst), Some(node)) => match cross_check(node, inst) {
                    Ok(()) => &inst.id,
                    Err(mismatch) => {
                        let instance = inst.id.clone();
                        out.mismatched.push(NodeMismatch { node: name.clone(), ip: *ip, instance, mismatch });
                        continue;
                    }
                },
                (Some(inst), None) => &inst.id,
                (None, _) => {
                    out.unresolved.push(name.clone());
                    continue;
                }
            },
            Locator::Unlocatable => {
                out.unresolved.push(name.clone());
                continue;
            }
        };
        out.targets.insert(InstanceTarget::new(id.as_str(), node_port));
    }
    out
}

/// The port instance targets are registered on: the NodePort of the binding's Service port
/// (as ALBC; the target group's own port is not used). `None` when the Service allocated none
/// (a ClusterIP Service, or `allocateLoadBalancerNodePorts: false`).
pub fn node_port(port: &k8s_openapi::api::core::v1::ServicePort) -> Option<u16> {
    port.node_port.and_then(|p| u16::try_from(p).ok()).filter(|p| *p != 0)
}

/// Register/deregister for instance targets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstancePlan {
    pub register: Vec<InstanceTarget>,
    pub deregister: Vec<InstanceTarget>,
}

impl InstancePlan {
    pub fn is_empty(&self) -> bool {
        self.register.is_empty() && self.deregister.is_empty()
    }
}

/// The diff of `desired` against what the target group holds. Draining targets are on their
/// way out: not counted as registered (a wanted one is registered again) and not deregistered
/// again. `owned` (multi-cluster target groups): only targets this cluster recorded as its own
/// are deregistered; the others are another cluster's and left alone.
pub fn instance_plan(
    desired: &BTreeSet<InstanceTarget>,
    current: &[(InstanceTarget, HealthState)],
    owned: Option<&BTreeSet<InstanceTarget>>,
) -> InstancePlan {
    let live: BTreeSet<&InstanceTarget> = current.iter().filter(|(_, h)| !h.is_draining()).map(|(t, _)| t).collect();
    InstancePlan {
        register: desired.iter().filter(|t| !live.contains(t)).cloned().collect(),
        deregister: live
            .into_iter()
            .filter(|t| !desired.contains(*t) && owned.is_none_or(|o| o.contains(*t)))
            .cloned()
            .collect(),
    }
}

/// The multi-cluster owned set of an instance-mode binding, from its ConfigMap value (the
/// `targets` key: comma-separated `<instance id>:<port>`, the form ALBC keeps for instance
/// targets). Entries that are not an instance target (an IP target recorded in ip mode) are
/// skipped.
pub fn parse_owned_instance_targets(raw: &str) -> BTreeSet<InstanceTarget> {
    raw.split(',')
        .filter_map(|e| {
            let (id, port) = e.trim().rsplit_once(':')?;
            (id.starts_with("i-") && id.len() > 2).then(|| Some(InstanceTarget::new(id, port.parse().ok()?)))?
        })
        .collect()
}

/// The ConfigMap value of an owned set ([`parse_owned_instance_targets`] reads it back).
pub fn owned_instance_targets_value(targets: &BTreeSet<InstanceTarget>) -> String {
    targets.iter().map(InstanceTarget::to_string).collect::<Vec<_>>().join(",")
}

#[path = "nodes_check.rs"]
mod check;
pub use check::{Instance, Mismatch, NodeMismatch, ZONE_LABEL, cross_check, ec2_host_label};

#[cfg(test)]
#[path = "nodes_tests.rs"]
mod tests;
