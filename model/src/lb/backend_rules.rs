//! Security-group rules on the targets' ENIs that let load balancers reach pods: the
//! TargetGroupBinding `spec.networking` rules, with ALBC's semantics
//! (`pkg/targetgroupbinding/networking_manager.go`, `pkg/networking/security_group_reconciler.go`):
//!
//! - **Which SG of an ENI.** An ENI with one security group gets the rules on it. With several,
//!   exactly one must carry the tag key `kubernetes.io/cluster/<cluster>` (any value) and every
//!   `--service-target-eni-security-group-tags` key=value; anything else is an error naming the
//!   ENI, its groups and their tags ([`endpoint_security_group`]).
//! - **Desired rules per SG** = the union, over every binding with `spec.networking` whose
//!   endpoints sit on ENIs using that SG, of `from × ports`: protocol TCP unless `UDP`; `port`
//!   absent = 0–65535; `ports` empty = all TCP ports (the CRD's documented default; ALBC's code
//!   drops that case through a shadowed variable); a named port resolves through the container
//!   ports of that binding's pods on that SG, possibly to several numbers. Every rule carries the
//!   description [`RULE_DESCRIPTION`]. A binding without `spec.networking` contributes nothing.
//! - **Restricted rules** (ALBC's default; `--disable-restricted-sg-rules` turns it off): per SG,
//!   the rules from one source security group and protocol collapse into one rule spanning the
//!   lowest to the highest port, to save rule quota. CIDR-sourced rules stay exact.
//! - **Diff.** A rule is ours when its description holds the label
//!   `elbv2.k8s.aws/targetGroupBinding=shared` (parsed as comma-separated `key=value` pairs, as
//!   ALBC does). Authorize desired rules missing from the SG (compared without descriptions, so a
//!   foreign rule granting the same access satisfies ours); revoke our rules no longer desired;
//!   never touch other rules. Security groups given as observed but receiving no rules are
//!   garbage-collected: all our rules on them are revoked.
//! - **Never act on incomplete knowledge.** Revokes (diff and GC) happen only when the caller
//!   says it saw every binding and every endpoint, and every endpoint's ENI and SG resolved;
//!   otherwise only authorizations go out (ALBC's `WithAuthorizeOnly(!computedForAllTGBs)`).
//!
//! Rules are shared across bindings and the GC revokes every rule carrying our label, so two
//! controllers (ALBC and this one, or two of ours) must never manage the same cluster (ALBC #2185).

use super::{IngressRule, NetworkInterface, Observed, RuleSource, SecurityGroup, Tags};
use crate::crd::{NetworkingPeer, NetworkingProtocol, TargetGroupBindingNetworking};
use ipnet::IpNet;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::LazyLock;

mod endpoint_sg;
pub use endpoint_sg::{EniSgError, endpoint_security_group};

/// Label (in the rule description) marking rules this controller manages, shared with ALBC.
pub const RULE_LABEL_KEY: &str = "elbv2.k8s.aws/targetGroupBinding";
pub const RULE_LABEL_VALUE: &str = "shared";
/// The description of every rule this module creates.
pub const RULE_DESCRIPTION: &str = "elbv2.k8s.aws/targetGroupBinding=shared";

/// Whether an observed rule is one of ours (its description carries our label).
pub fn is_managed_rule(rule: &IngressRule) -> bool {
    static PAIR: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"([^\s,=]+)=([^\s,=]+)(?:,|$)").unwrap());
    let description = rule.description.as_deref().unwrap_or("");
    PAIR.captures_iter(description).any(|c| &c[1] == RULE_LABEL_KEY && &c[2] == RULE_LABEL_VALUE)
}

/// One endpoint of a binding and the ENI its IP sits on.
#[derive(Clone, Debug)]
pub struct EndpointEni<'a> {
    pub ip: IpAddr,
    /// `None`: the ENI is not known (yet); knowledge is incomplete.
    pub eni: Option<&'a NetworkInterface>,
    /// The pod's container ports by name, to resolve named ports in `spec.networking`.
    pub named_ports: BTreeMap<String, u16>,
}

/// A TargetGroupBinding as far as backend rules care.
#[derive(Clone, Debug)]
pub struct BindingRules<'a> {
    /// `namespace/name`.
    pub key: String,
    pub networking: Option<&'a TargetGroupBindingNetworking>,
    pub endpoints: Vec<EndpointEni<'a>>,
}

/// Everything the plan is computed from.
#[derive(Clone, Debug)]
pub struct BackendRulesInput<'a> {
    /// `--cluster-name`.
    pub cluster_name: &'a str,
    /// `--service-target-eni-security-group-tags`.
    pub required_tags: &'a Tags,
    /// Collapse SG-sourced rules into port ranges (ALBC default; false = `--disable-restricted-sg-rules`).
    pub restricted: bool,
    /// Every binding of the cluster (those without `spec.networking` are ignored).
    pub bindings: &'a [BindingRules<'a>],
    /// The ENIs' security groups plus every group whose stale rules should be garbage-collected
    /// (ALBC: groups tagged `kubernetes.io/cluster/<cluster>` in the VPC, and groups it touched).
    pub security_groups: &'a [Observed<SecurityGroup>],
    /// The caller vouches that `bindings` is every binding and each lists every endpoint
    /// (stores synced). Revokes happen only when this holds and nothing below failed.
    pub complete: bool,
}

/// What stopped part of the computation; any of these withholds revokes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuleProblem {
    #[error("TargetGroupBinding {binding}: {error}")]
    EniSecurityGroup { binding: String, error: Box<EniSgError> },
    #[error(
        "TargetGroupBinding {binding}: {count} endpoint(s) have no known ENI (first: {first}); expected an ENI for \
         every endpoint IP, so security-group rules are only added, never removed, until then. Fix: pods need VPC \
         addresses on ENIs (Cilium in ENI mode; its CiliumNode status lists them) and the controller's role \
         ec2:DescribeNetworkInterfaces (docs/iam-policy.json)"
    )]
    UnresolvedEndpoints { binding: String, count: usize, first: IpAddr },
    #[error(
        "TargetGroupBinding {binding}: spec.networking port {port:?} is not a named containerPort of pod {ip}; use a port number or a containerPort name every pod has"
    )]
    NamedPort { binding: String, port: String, ip: IpAddr },
    #[error(
        "TargetGroupBinding {binding}: spec.networking port {port} is outside 0-65535; set a port number within \
         0-65535 or a containerPort name"
    )]
    InvalidPort { binding: String, port: i32 },
    #[error(
        "TargetGroupBinding {binding}: spec.networking ipBlock {cidr:?} is not a CIDR like 10.0.0.0/16 or 2600:1f18::/56"
    )]
    InvalidCidr { binding: String, cidr: String },
    #[error(
        "TargetGroupBinding {binding}: a spec.networking peer sets neither ipBlock nor securityGroup; expected one of \
         them: set ipBlock.cidr or securityGroup.groupID on the peer"
    )]
    EmptyPeer { binding: String },
    #[error(
        "security group {sg} should receive rules but was not described (deleted, or not fetched); expected it in \
         the VPC: recreate it or fix the binding or ENI tags that name it, and allow ec2:DescribeSecurityGroups \
         (docs/iam-policy.json)"
    )]
    UndescribedSecurityGroup { sg: String },
}

/// Changes for one security group. Authorize before revoking: a widened range (80 → 80–8080)
/// then never leaves a gap. (ALBC revokes first, which frees rule quota; on
/// `RulesPerSecurityGroupLimitExceeded` the caller may retry in that order.)
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SgRuleChanges {
    pub authorize: Vec<IngressRule>,
    pub revoke: Vec<IngressRule>,
}

/// The result: what to call, and why not more.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackendRulesPlan {
    /// Security-group ID → changes; only groups with something to do.
    pub changes: BTreeMap<String, SgRuleChanges>,
    /// Security-group ID → every rule we want there (for logs and status).
    pub desired: BTreeMap<String, Vec<IngressRule>>,
    pub problems: Vec<RuleProblem>,
    /// Whether revokes were planned (knowledge complete).
    pub revokes_allowed: bool,
    /// Revokes left out because knowledge was incomplete.
    pub withheld_revokes: usize,
}

/// (protocol, from, to, source): a rule without its description.
type Key = (String, i32, i32, RuleSource);

fn key_of(rule: &IngressRule) -> Key {
    let source = match &rule.source {
        RuleSource::Cidr(c) | RuleSource::Ipv6Cidr(c) => normalize_cidr(c).unwrap_or_else(|| rule.source.clone()),
        other => other.clone(),
    };
    (rule.protocol.to_ascii_lowercase(), rule.from_port, rule.to_port, source)
}

fn normalize_cidr(cidr: &str) -> Option<RuleSource> {
    let net = cidr.trim().parse::<IpNet>().ok()?.trunc();
    Some(match net {
        IpNet::V4(_) => RuleSource::Cidr(net.to_string()),
        IpNet::V6(_) => RuleSource::Ipv6Cidr(net.to_string()),
    })
}

/// Computes the rule changes for every security group involved.
pub fn plan_backend_rules(input: &BackendRulesInput<'_>) -> BackendRulesPlan {
    let mut plan = BackendRulesPlan::default();
    let observed: BTreeMap<&str, &SecurityGroup> =
        input.security_groups.iter().map(|o| (o.id.as_str(), &o.spec)).collect();
    let tags: BTreeMap<String, Tags> = observed.iter().map(|(id, sg)| (id.to_string(), sg.tags.clone())).collect();
    let mut desired: BTreeMap<String, BTreeSet<Key>> = BTreeMap::new();
    for binding in input.bindings {
        if let Some(networking) = binding.networking {
            for (sg, rules) in binding_rules(input, &tags, binding, networking, &mut plan.problems) {
                desired.entry(sg).or_default().extend(rules);
            }
        }
    }
    if input.restricted {
        desired = desired.into_iter().map(|(sg, keys)| (sg, collapse_group_sources(keys))).collect();
    }
    for sg in desired.keys() {
        if !observed.contains_key(sg.as_str()) {
            plan.problems.push(RuleProblem::UndescribedSecurityGroup { sg: sg.clone() });
        }
    }
    plan.revokes_allowed = input.complete && plan.problems.is_empty();
    let empty = BTreeSet::new();
    for (sg_id, sg) in &observed {
        let want = desired.get(*sg_id).unwrap_or(&empty);
        let have: BTreeSet<Key> = sg.ingress.iter().map(key_of).collect();
        let authorize: Vec<IngressRule> = want.difference(&have).map(rule_of).collect();
        let mut revoke: Vec<IngressRule> =
            sg.ingress.iter().filter(|r| is_managed_rule(r) && !want.contains(&key_of(r))).cloned().collect();
        revoke.sort();
        revoke.dedup();
        if !plan.revokes_allowed {
            plan.withheld_revokes += revoke.len();
            revoke.clear();
        }
        if !authorize.is_empty() || !revoke.is_empty() {
            plan.changes.insert(sg_id.to_string(), SgRuleChanges { authorize, revoke });
        }
    }
    plan.desired = desired.into_iter().map(|(sg, keys)| (sg, keys.iter().map(rule_of).collect())).collect();
    plan
}

/// The rules one binding wants, per security group; problems are appended to `problems`.
/// Endpoints whose ENI or security group is unknown are skipped (their problem withholds
/// revokes); a configuration error drops the whole binding.
fn binding_rules(
    input: &BackendRulesInput<'_>,
    tags: &BTreeMap<String, Tags>,
    binding: &BindingRules<'_>,
    networking: &TargetGroupBindingNetworking,
    problems: &mut Vec<RuleProblem>,
) -> BTreeMap<String, BTreeSet<Key>> {
    let key = &binding.key;
    let mut by_sg: BTreeMap<String, Vec<&EndpointEni<'_>>> = BTreeMap::new();
    let mut unresolved = Vec::new();
    let mut eni_errors = BTreeMap::new();
    for ep in &binding.endpoints {
        let Some(eni) = ep.eni else {
            unresolved.push(ep.ip);
            continue;
        };
        match endpoint_security_group(eni, tags, input.cluster_name, input.required_tags) {
            Ok(sg) => by_sg.entry(sg).or_default().push(ep),
            Err(error) => {
                eni_errors.entry(eni.id.clone()).or_insert(error);
            }
        }
    }
    if let Some(first) = unresolved.iter().min() {
        problems.push(RuleProblem::UnresolvedEndpoints {
            binding: key.clone(),
            count: unresolved.len(),
            first: *first,
        });
    }
    problems.extend(
        eni_errors
            .into_values()
            .map(|error| RuleProblem::EniSecurityGroup { binding: key.clone(), error: Box::new(error) }),
    );
    let mut computed = BTreeMap::new();
    for (sg, endpoints) in by_sg {
        match rules_for(key, networking, &endpoints) {
            Ok(rules) => {
                computed.insert(sg, rules);
            }
            Err(problem) => {
                problems.push(problem);
                return BTreeMap::new();
            }
        }
    }
    computed
}

fn rule_of(key: &Key) -> IngressRule {
    let (protocol, from_port, to_port, source) = key.clone();
    IngressRule { protocol, from_port, to_port, source, description: Some(RULE_DESCRIPTION.to_string()) }
}

/// The rules one binding wants on one security group, given its endpoints there.
fn rules_for(
    binding: &str,
    networking: &TargetGroupBindingNetworking,
    endpoints: &[&EndpointEni<'_>],
) -> Result<BTreeSet<Key>, RuleProblem> {
    let mut keys = BTreeSet::new();
    for rule in &networking.ingress {
        // Empty `ports` = all TCP ports (the CRD's documented default).
        let all_tcp = [crate::crd::NetworkingPort { protocol: Some(NetworkingProtocol::TCP), port: None }];
        let ports = if rule.ports.is_empty() { &all_tcp[..] } else { &rule.ports[..] };
        for peer in &rule.from {
            let source = source_of(binding, peer)?;
            for port in ports {
                let protocol = match port.protocol {
                    Some(NetworkingProtocol::UDP) => "udp",
                    _ => "tcp",
                };
                for (from, to) in port_ranges(binding, port.port.as_ref(), endpoints)? {
                    keys.insert((protocol.to_string(), from, to, source.clone()));
                }
            }
        }
    }
    Ok(keys)
}

fn source_of(binding: &str, peer: &NetworkingPeer) -> Result<RuleSource, RuleProblem> {
    if let Some(sg) = &peer.security_group {
        return Ok(RuleSource::SecurityGroup(sg.group_id.trim().to_string()));
    }
    let Some(block) = &peer.ip_block else { return Err(RuleProblem::EmptyPeer { binding: binding.to_string() }) };
    normalize_cidr(&block.cidr)
        .ok_or_else(|| RuleProblem::InvalidCidr { binding: binding.to_string(), cidr: block.cidr.clone() })
}

fn port_ranges(
    binding: &str,
    port: Option<&IntOrString>,
    endpoints: &[&EndpointEni<'_>],
) -> Result<BTreeSet<(i32, i32)>, RuleProblem> {
    match port {
        None => Ok([(0, 65535)].into()),
        Some(IntOrString::Int(n)) if (0..=65535).contains(n) => Ok([(*n, *n)].into()),
        Some(IntOrString::Int(n)) => Err(RuleProblem::InvalidPort { binding: binding.to_string(), port: *n }),
        Some(IntOrString::String(name)) => endpoints
            .iter()
            .map(|ep| match ep.named_ports.get(name) {
                Some(n) => Ok((i32::from(*n), i32::from(*n))),
                None => Err(RuleProblem::NamedPort { binding: binding.to_string(), port: name.clone(), ip: ep.ip }),
            })
            .collect(),
    }
}

/// ALBC's restricted mode: per (protocol, source group), one rule from the lowest to the highest
/// port (a 0–0 rule counts as every port). CIDR-sourced rules are kept as they are.
fn collapse_group_sources(keys: BTreeSet<Key>) -> BTreeSet<Key> {
    let mut ranges: BTreeMap<(String, RuleSource), (i32, i32)> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for (protocol, from, to, source) in keys {
        if !matches!(source, RuleSource::SecurityGroup(_)) {
            out.insert((protocol, from, to, source));
            continue;
        }
        let (from, to) = if from == 0 && to == 0 { (0, 65535) } else { (from, to) };
        let range = ranges.entry((protocol, source)).or_insert((from, to));
        *range = (range.0.min(from), range.1.max(to));
    }
    out.extend(ranges.into_iter().map(|((protocol, source), (from, to))| (protocol, from, to, source)));
    out
}

#[cfg(test)]
mod tests;
