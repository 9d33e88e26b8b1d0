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
//!   says it saw every binding ([`BackendRulesInput::complete`]); otherwise only authorizations go
//!   out (ALBC's `WithAuthorizeOnly(!computedForAllTGBs)`).
//! - **Fault isolation, per binding** (ALBC differs: there one bad binding fails or freezes the
//!   whole pass). Each binding is judged on its own ([`BindingState`]):
//!   - *Bad*: its spec is wrong (a named port one of its pods lacks, a port outside 0–65535, a
//!     CIDR that does not parse, a peer with neither ipBlock nor securityGroup, a peer group the
//!     caller knows does not exist, [`BackendRulesInput::missing_peers`]). Its rules are left out
//!     (nothing of it is authorized), the problem names that binding, and the rules it had are
//!     **kept**: a typo must not cut the traffic that worked before it. "The rules it had" are the
//!     caller's memory of its last good pass ([`BindingRules::kept`]); on the first pass of a
//!     process there is no memory, so every rule of ours on the binding's groups whose source is
//!     one of its own peers is kept instead ([`BackendRulesInput::first_pass`]), and remembered.
//!   - *Partial*: its spec is fine but some of its endpoints' groups are unknown (an endpoint
//!     without a known ENI, an ENI whose group is ambiguous, or its endpoints unknown altogether,
//!     [`BindingRules::endpoints_known`]). What is known is authorized; what it had is kept.
//!   - *Good*: everything else; its rules are what it wants now.
//!
//!   Revokes then remove our rules no Good or Partial binding wants, except those a Bad or Partial
//!   binding keeps (same protocol and source, overlapping ports). Nobody else waits: the other
//!   bindings' rules are authorized and revoked as if the bad one did not exist.
//! - **Tenancy** ([`BackendRulesInput::tenancy`], `crate::tenancy`): each rule a binding wants
//!   (source, ports) is checked against the namespace's `networking` grants. The strict mode leaves
//!   a rule it refuses out of what is wanted (so one applied before the grant was withdrawn is
//!   revoked), reports it on that binding ([`RuleProblem::NotGranted`]), and applies the binding's
//!   granted rules; the compatible mode applies it and lists the exposure
//!   ([`BackendRulesPlan::exposures`]).
//! - **Owners.** Every desired rule lists the bindings that want it ([`BackendRulesPlan::owners`]),
//!   so the caller can attribute a rule AWS refuses to those bindings only, and count each
//!   namespace's share of a shared group's rule quota ([`BackendRulesPlan::rules_by_namespace`]).
//!
//! Rules are shared across bindings and the GC revokes every rule carrying our label, so two
//! controllers (ALBC and this one, or two of ours) must never manage the same cluster (ALBC #2185).

use super::{IngressRule, NetworkInterface, Observed, RuleSource, SecurityGroup, Tags};
use crate::crd::{NetworkingPeer, NetworkingProtocol, TargetGroupBindingNetworking};
use crate::tenancy::{Exposure, NetworkSource, Tenancy, Verdict};
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

/// Rules per security group: what a binding wants or keeps.
pub type KeptRules = BTreeMap<String, BTreeSet<IngressRule>>;

/// A TargetGroupBinding as far as backend rules care.
#[derive(Clone, Debug)]
pub struct BindingRules<'a> {
    /// `namespace/name`.
    pub key: String,
    pub networking: Option<&'a TargetGroupBindingNetworking>,
    pub endpoints: Vec<EndpointEni<'a>>,
    /// False when the caller could not list the binding's endpoints at all (its Service is
    /// missing, its port does not resolve, an eligible node has no address): the binding is
    /// Partial and keeps its rules.
    pub endpoints_known: bool,
    /// The rules this binding wanted at its last pass as a Good binding (the caller's memory,
    /// [`BindingOutcome::remember`] of earlier passes); kept while it is Bad or Partial.
    pub kept: Option<&'a KeptRules>,
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
    /// (stores synced). Revokes happen only when this holds.
    pub complete: bool,
    /// Peer security groups known not to exist (EC2 said so and no describe found them since):
    /// a binding naming one is Bad.
    pub missing_peers: &'a BTreeSet<String>,
    /// The caller has no memory yet (first pass of the process): a Bad or Partial binding without
    /// [`BindingRules::kept`] keeps our rules on its groups whose source is one of its peers.
    pub first_pass: bool,
    /// `--tenancy-mode` and the policy's `networking` grants.
    pub tenancy: &'a Tenancy,
}

/// What stopped part of the computation, attributed to the binding concerned where there is one
/// (see the module docs for what each does to that binding's rules).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuleProblem {
    #[error("TargetGroupBinding {binding}: {error}")]
    EniSecurityGroup { binding: String, error: Box<EniSgError> },
    #[error(
        "TargetGroupBinding {binding}: {count} endpoint(s) have no known ENI (first: {first}); expected an ENI for \
         every endpoint IP, so this binding's rules are only added, never removed, until then. Fix: pods need VPC \
         addresses on ENIs (Cilium in ENI mode; its CiliumNode status lists them) and the controller's role \
         ec2:DescribeNetworkInterfaces (docs/iam-policy.json)"
    )]
    UnresolvedEndpoints { binding: String, count: usize, first: IpAddr },
    #[error(
        "TargetGroupBinding {binding}: spec.networking port {port:?} is not a named containerPort of pod {ip} \
         (its named ports: {known}); expected a port number or a containerPort name every pod of the Service has. \
         Fix: correct the port in spec.networking. Until then this binding's rules are left out and the rules it \
         had are kept"
    )]
    NamedPort { binding: String, port: String, ip: IpAddr, known: String },
    #[error(
        "TargetGroupBinding {binding}: spec.networking port {port} is outside 0-65535; set a port number within \
         0-65535 or a containerPort name. Until then this binding's rules are left out and the rules it had are kept"
    )]
    InvalidPort { binding: String, port: i32 },
    #[error(
        "TargetGroupBinding {binding}: spec.networking ipBlock {cidr:?} is not a CIDR like 10.0.0.0/16 or \
         2600:1f18::/56; fix the cidr. Until then this binding's rules are left out and the rules it had are kept"
    )]
    InvalidCidr { binding: String, cidr: String },
    #[error(
        "TargetGroupBinding {binding}: a spec.networking peer sets neither ipBlock nor securityGroup; expected one of \
         them: set ipBlock.cidr or securityGroup.groupID on the peer"
    )]
    EmptyPeer { binding: String },
    #[error(
        "TargetGroupBinding {binding}: spec.networking peer securityGroup.groupID {group:?} does not exist (EC2: \
         InvalidGroup.NotFound); expected the ID of an existing security group of the VPC. Fix: correct the \
         groupID or create the group. Until then this binding's rules are left out and the rules it had are kept"
    )]
    PeerNotFound { binding: String, group: String },
    #[error("TargetGroupBinding {binding}: {rejection}")]
    Rejected { binding: String, rejection: Box<Rejection> },
    /// The strict tenancy mode refuses one of the binding's rules (its other rules apply).
    #[error("{detail}. Until then that rule is left out (revoked if it was applied); the binding's other rules apply")]
    NotGranted { binding: String, detail: String },
    #[error(
        "security group {sg} should receive rules but was not described (deleted, or not fetched); expected it in \
         the VPC: recreate it or fix the binding or ENI tags that name it, and allow ec2:DescribeSecurityGroups \
         (docs/iam-policy.json)"
    )]
    UndescribedSecurityGroup { sg: String },
}

impl RuleProblem {
    /// The binding (`namespace/name`) the problem is about; `None` for a security group's.
    pub fn binding(&self) -> Option<&str> {
        match self {
            Self::EniSecurityGroup { binding, .. }
            | Self::UnresolvedEndpoints { binding, .. }
            | Self::NamedPort { binding, .. }
            | Self::InvalidPort { binding, .. }
            | Self::InvalidCidr { binding, .. }
            | Self::EmptyPeer { binding }
            | Self::PeerNotFound { binding, .. }
            | Self::Rejected { binding, .. }
            | Self::NotGranted { binding, .. } => Some(binding),
            Self::UndescribedSecurityGroup { .. } => None,
        }
    }

    /// Whether the binding's own spec (or a rule made from it) is at fault: its rules are left
    /// out, and it is told so in a status condition. The others are about the cluster's
    /// infrastructure (ENIs, groups) and reported by events only.
    pub fn is_spec_fault(&self) -> bool {
        matches!(
            self,
            Self::NamedPort { .. }
                | Self::InvalidPort { .. }
                | Self::InvalidCidr { .. }
                | Self::EmptyPeer { .. }
                | Self::PeerNotFound { .. }
                | Self::Rejected { .. }
                | Self::NotGranted { .. }
        )
    }

    /// A short CamelCase reason (status condition reason).
    pub fn reason(&self) -> &'static str {
        match self {
            Self::EniSecurityGroup { .. } => "AmbiguousEniSecurityGroup",
            Self::UnresolvedEndpoints { .. } => "UnresolvedEndpoints",
            Self::NamedPort { .. } => "NamedPortNotFound",
            Self::InvalidPort { .. } => "InvalidPort",
            Self::InvalidCidr { .. } => "InvalidCIDR",
            Self::EmptyPeer { .. } => "EmptyPeer",
            Self::PeerNotFound { .. } => "PeerSecurityGroupNotFound",
            Self::Rejected { .. } => "RuleRejected",
            Self::NotGranted { .. } => "NotGrantedByTenancyPolicy",
            Self::UndescribedSecurityGroup { .. } => "SecurityGroupNotDescribed",
        }
    }
}

/// A rule EC2 refused, and what to do about it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "EC2 refused its rule {rule} on security group {sg} ({code}: {message}); expected a rule EC2 accepts. Fix: \
     {fix}. The other bindings' rules were applied; this binding's earlier rules are kept"
)]
pub struct Rejection {
    pub sg: String,
    /// [`describe_rule`].
    pub rule: String,
    pub code: String,
    pub message: String,
    pub fix: String,
}

/// A rule as people read it: `tcp 8080 from sg-0abc`, `udp 0-65535 from 10.0.0.0/16`.
pub fn describe_rule(rule: &IngressRule) -> String {
    let ports = match (rule.from_port, rule.to_port) {
        (-1, _) => "all ports".to_string(),
        (a, b) if a == b => a.to_string(),
        (a, b) => format!("{a}-{b}"),
    };
    let source = match &rule.source {
        RuleSource::Cidr(s) | RuleSource::Ipv6Cidr(s) | RuleSource::PrefixList(s) | RuleSource::SecurityGroup(s) => s,
    };
    format!("{} {ports} from {source}", rule.protocol)
}

/// How a binding fared in a pass (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindingState {
    Good,
    Partial,
    Bad,
}

/// One binding's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindingOutcome {
    pub state: BindingState,
    /// What the caller should pass back as [`BindingRules::kept`] next time: a Good binding's
    /// rules now, a Partial one's kept rules plus what it wants now, a Bad one's kept rules.
    pub remember: KeptRules,
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
    /// Security-group ID → desired rule → the bindings (`namespace/name`) that want it.
    pub owners: BTreeMap<String, BTreeMap<IngressRule, BTreeSet<String>>>,
    /// Namespace → how many (security group, rule) pairs its bindings want; a rule shared by two
    /// namespaces counts for both. Every namespace with a binding taking part is listed.
    pub rules_by_namespace: BTreeMap<String, usize>,
    /// Every binding with `spec.networking`, by `namespace/name`.
    pub bindings: BTreeMap<String, BindingOutcome>,
    pub problems: Vec<RuleProblem>,
    /// Whether revokes were planned (the caller saw every binding).
    pub revokes_allowed: bool,
    /// Revokes left out: knowledge incomplete, or a Bad or Partial binding keeps the rule.
    pub withheld_revokes: usize,
    /// Compatible tenancy mode: rules applied that the strict mode would refuse, one per binding,
    /// source and port range.
    pub exposures: Vec<Exposure>,
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
    // sg → wanted key → owners.
    let mut desired: BTreeMap<String, BTreeMap<Key, BTreeSet<String>>> = BTreeMap::new();
    // sg → rules kept for Bad or Partial bindings.
    let mut kept: BTreeMap<String, Vec<Key>> = BTreeMap::new();
    for binding in input.bindings {
        let Some(networking) = binding.networking else { continue };
        let judged = judge_binding(input, &tags, binding, networking);
        plan.rules_by_namespace.entry(namespace_of(&binding.key).to_string()).or_default();
        let mut remember: KeptRules = BTreeMap::new();
        if judged.state != BindingState::Bad {
            for (sg, keys) in &judged.rules {
                for k in keys {
                    desired.entry(sg.clone()).or_default().entry(k.clone()).or_default().insert(binding.key.clone());
                }
                remember.entry(sg.clone()).or_default().extend(keys.iter().map(rule_of));
            }
        }
        if judged.state != BindingState::Good {
            let had = match binding.kept {
                Some(k) => k.clone(),
                None if input.first_pass => own_source_rules(&observed, &judged),
                None => KeptRules::new(),
            };
            for (sg, rules) in &had {
                // A rule the policy refuses is never kept, whatever the binding had.
                let granted =
                    rules.iter().filter(|r| !tenancy_verdict(input.tenancy, &binding.key, &key_of(r)).is_refused());
                for rule in granted {
                    kept.entry(sg.clone()).or_default().push(key_of(rule));
                    remember.entry(sg.clone()).or_default().insert(rule.clone());
                }
            }
        }
        remember.retain(|_, rules| !rules.is_empty());
        plan.problems.extend(judged.problems);
        plan.exposures.extend(judged.exposures);
        plan.bindings.insert(binding.key.clone(), BindingOutcome { state: judged.state, remember });
    }
    if input.restricted {
        desired = desired.into_iter().map(|(sg, keys)| (sg, collapse_group_sources(keys))).collect();
    }
    for sg in desired.keys() {
        if !observed.contains_key(sg.as_str()) {
            plan.problems.push(RuleProblem::UndescribedSecurityGroup { sg: sg.clone() });
        }
    }
    plan.revokes_allowed = input.complete;
    let (empty, no_keep) = (BTreeMap::new(), Vec::new());
    for (sg_id, sg) in &observed {
        let want = desired.get(*sg_id).unwrap_or(&empty);
        let keep = kept.get(*sg_id).unwrap_or(&no_keep);
        let have: BTreeSet<Key> = sg.ingress.iter().map(key_of).collect();
        let authorize: Vec<IngressRule> = want.keys().filter(|k| !have.contains(*k)).map(rule_of).collect();
        let mut revoke: Vec<IngressRule> =
            sg.ingress.iter().filter(|r| is_managed_rule(r) && !want.contains_key(&key_of(r))).cloned().collect();
        revoke.sort();
        revoke.dedup();
        let before = revoke.len();
        revoke.retain(|r| !keep.iter().any(|k| overlaps(k, &key_of(r))));
        plan.withheld_revokes += before - revoke.len();
        if !plan.revokes_allowed {
            plan.withheld_revokes += revoke.len();
            revoke.clear();
        }
        if !authorize.is_empty() || !revoke.is_empty() {
            plan.changes.insert(sg_id.to_string(), SgRuleChanges { authorize, revoke });
        }
    }
    for (sg, keys) in desired {
        let mut owners = BTreeMap::new();
        for (key, bindings) in keys {
            let namespaces: BTreeSet<&str> = bindings.iter().map(|b| namespace_of(b)).collect();
            for ns in namespaces {
                *plan.rules_by_namespace.entry(ns.to_string()).or_default() += 1;
            }
            owners.insert(rule_of(&key), bindings);
        }
        plan.desired.insert(sg.clone(), owners.keys().cloned().collect());
        plan.owners.insert(sg, owners);
    }
    plan
}

/// Of the revokes planned for `sg`, those none of `kept` overlaps (rules remembered for bindings
/// whose new rules AWS just refused: such a binding keeps its old ones).
pub fn spare_kept(sg: &str, revoke: &[IngressRule], kept: &[&KeptRules]) -> Vec<IngressRule> {
    let keep: Vec<Key> = kept.iter().filter_map(|k| k.get(sg)).flatten().map(key_of).collect();
    revoke.iter().filter(|r| !keep.iter().any(|k| overlaps(k, &key_of(r)))).cloned().collect()
}

/// Same protocol and source, and port ranges that overlap (`-1` = every port).
fn overlaps(a: &Key, b: &Key) -> bool {
    let range = |k: &Key| if k.1 == -1 { (0, 65535) } else { (k.1, k.2) };
    let ((af, at), (bf, bt)) = (range(a), range(b));
    a.0 == b.0 && a.3 == b.3 && af <= bt && bf <= at
}

/// The namespace of a `namespace/name` key.
pub fn namespace_of(key: &str) -> &str {
    key.split_once('/').map_or(key, |(ns, _)| ns)
}

/// One binding judged: its state, problems, the rules it wants per group (empty when Bad), the
/// groups its known endpoints sit on and the sources its peers name.
struct Judged {
    state: BindingState,
    problems: Vec<RuleProblem>,
    rules: BTreeMap<String, BTreeSet<Key>>,
    groups: BTreeSet<String>,
    /// Whether every endpoint's group is known (else every group may be the binding's).
    groups_known: bool,
    sources: BTreeSet<RuleSource>,
    exposures: Vec<Exposure>,
}

/// First pass without memory: our rules on the binding's groups whose source is one of its peers.
fn own_source_rules(observed: &BTreeMap<&str, &SecurityGroup>, judged: &Judged) -> KeptRules {
    let mut out = KeptRules::new();
    for (id, sg) in observed {
        if judged.groups_known && !judged.groups.contains(*id) {
            continue;
        }
        let own = sg.ingress.iter().filter(|r| is_managed_rule(r) && judged.sources.contains(&key_of(r).3));
        let rules: BTreeSet<IngressRule> = own.map(|r| rule_of(&key_of(r))).collect();
        if !rules.is_empty() {
            out.insert(id.to_string(), rules);
        }
    }
    out
}

/// Judges one binding: the rules it wants per security group and what is wrong with it.
/// Endpoints whose ENI or group is unknown are skipped (the binding is Partial); a spec error
/// makes it Bad and leaves every rule of it out.
fn judge_binding(
    input: &BackendRulesInput<'_>,
    tags: &BTreeMap<String, Tags>,
    binding: &BindingRules<'_>,
    networking: &TargetGroupBindingNetworking,
) -> Judged {
    let key = &binding.key;
    let mut problems = Vec::new();
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
    let groups_known = binding.endpoints_known && unresolved.is_empty() && eni_errors.is_empty();
    problems.extend(
        eni_errors
            .into_values()
            .map(|error| RuleProblem::EniSecurityGroup { binding: key.clone(), error: Box::new(error) }),
    );
    let sources = peer_sources(networking);
    let mut spec_fault = peer_problem(key, networking, input.missing_peers);
    let mut rules = BTreeMap::new();
    if spec_fault.is_none() {
        for (sg, endpoints) in &by_sg {
            match rules_for(key, networking, endpoints) {
                Ok(keys) => {
                    rules.insert(sg.clone(), keys);
                }
                Err(problem) => {
                    spec_fault = Some(problem);
                    break;
                }
            }
        }
    }
    let state = match (&spec_fault, groups_known) {
        (Some(_), _) => BindingState::Bad,
        (None, false) => BindingState::Partial,
        (None, true) => BindingState::Good,
    };
    if let Some(p) = spec_fault {
        problems.push(p);
        rules.clear();
    }
    let (refused, exposures) = apply_tenancy(input.tenancy, key, &mut rules);
    problems.extend(refused);
    Judged { state, problems, rules, groups: by_sg.into_keys().collect(), groups_known, sources, exposures }
}

/// Checks each wanted rule (source, ports) against the tenancy policy: a refused one is dropped
/// from `rules` and reported once per source and port range, an exposed one is kept and listed.
fn apply_tenancy(
    tenancy: &Tenancy,
    binding: &str,
    rules: &mut BTreeMap<String, BTreeSet<Key>>,
) -> (Vec<RuleProblem>, Vec<Exposure>) {
    let mut refused = BTreeMap::new();
    let mut exposed = BTreeMap::new();
    for keys in rules.values_mut() {
        keys.retain(|key| match tenancy_verdict(tenancy, binding, key) {
            Verdict::Allowed => true,
            Verdict::Exposed(e) => {
                exposed.entry((key.1, key.2, key.3.clone())).or_insert(e);
                true
            }
            Verdict::Refused(r) => {
                refused.entry((key.1, key.2, key.3.clone())).or_insert(r.detail);
                false
            }
        });
    }
    let problems =
        refused.into_values().map(|detail| RuleProblem::NotGranted { binding: binding.to_string(), detail }).collect();
    (problems, exposed.into_values().collect())
}

/// What the tenancy policy says of `binding` (`namespace/name`) wanting the rule `key`.
fn tenancy_verdict(tenancy: &Tenancy, binding: &str, (_, from, to, source): &Key) -> Verdict {
    let Some(peer) = network_source(source) else { return Verdict::Allowed };
    let (namespace, name) = binding.split_once('/').unwrap_or(("", binding));
    let ports = (u16::try_from(*from).unwrap_or(0), u16::try_from(*to).unwrap_or(u16::MAX));
    tenancy.networking_source(namespace, name, &peer, ports.0, ports.1)
}

/// A rule's source as the tenancy policy names it (`None`: not a source a binding can ask for).
fn network_source(source: &RuleSource) -> Option<NetworkSource> {
    match source {
        RuleSource::Cidr(c) | RuleSource::Ipv6Cidr(c) => c.parse::<IpNet>().ok().map(NetworkSource::Cidr),
        RuleSource::SecurityGroup(id) => Some(NetworkSource::SecurityGroup(id.clone())),
        RuleSource::PrefixList(_) => None,
    }
}

/// The sources of the binding's peers that parse.
fn peer_sources(networking: &TargetGroupBindingNetworking) -> BTreeSet<RuleSource> {
    networking.ingress.iter().flat_map(|r| &r.from).filter_map(|peer| source_of("", peer).ok()).collect()
}

/// The first peer that is wrong whatever the endpoints: unparsable, empty, or a missing group.
fn peer_problem(
    binding: &str,
    networking: &TargetGroupBindingNetworking,
    missing: &BTreeSet<String>,
) -> Option<RuleProblem> {
    networking.ingress.iter().flat_map(|r| &r.from).find_map(|peer| match source_of(binding, peer) {
        Err(p) => Some(p),
        Ok(RuleSource::SecurityGroup(g)) if missing.contains(&g) => {
            Some(RuleProblem::PeerNotFound { binding: binding.to_string(), group: g })
        }
        Ok(_) => None,
    })
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
                None => Err(RuleProblem::NamedPort {
                    binding: binding.to_string(),
                    port: name.clone(),
                    ip: ep.ip,
                    known: match ep.named_ports.keys().map(String::as_str).collect::<Vec<_>>() {
                        names if names.is_empty() => "none".to_string(),
                        names => names.join(", "),
                    },
                }),
            })
            .collect(),
    }
}

/// ALBC's restricted mode: per (protocol, source group), one rule from the lowest to the highest
/// port (a 0–0 rule counts as every port), wanted by every binding that wanted a part of it.
/// CIDR-sourced rules are kept as they are.
fn collapse_group_sources(keys: BTreeMap<Key, BTreeSet<String>>) -> BTreeMap<Key, BTreeSet<String>> {
    type Range = ((i32, i32), BTreeSet<String>);
    let mut ranges: BTreeMap<(String, RuleSource), Range> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for ((protocol, from, to, source), owners) in keys {
        if !matches!(source, RuleSource::SecurityGroup(_)) {
            out.insert((protocol, from, to, source), owners);
            continue;
        }
        let (from, to) = if from == 0 && to == 0 { (0, 65535) } else { (from, to) };
        let (range, all) = ranges.entry((protocol, source)).or_insert(((from, to), BTreeSet::new()));
        *range = (range.0.min(from), range.1.max(to));
        all.extend(owners);
    }
    let merged =
        ranges.into_iter().map(|((protocol, source), ((from, to), owners))| ((protocol, from, to, source), owners));
    out.extend(merged);
    out
}

#[cfg(test)]
mod tests;
