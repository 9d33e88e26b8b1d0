//! What a namespace may bind, open, assume and join: the tenancy policy of a shared cluster.
//!
//! Two modes, one switch (`--tenancy-mode`):
//! - [`TenancyMode::Compatible`] (default): every manifest that works with the upstream controller
//!   works. What the strict mode would refuse is allowed but named as an [`Exposure`], which the
//!   controller logs once and `doctor` lists, so a platform team sees what moving to strict breaks.
//! - [`TenancyMode::Strict`]: the same decisions refuse ([`Refusal`]) unless the admin's
//!   [`TenancyPolicy`] grants them to the namespace.
//!
//! The policy is written by the cluster admin (a chart value rendered into a ConfigMap in the
//! controller's namespace, read at start): tenants cannot change it. Each grant names the
//! namespaces it applies to (`"*"` for every namespace, `"team-*"` for a prefix).

use ipnet::IpNet;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

/// `--tenancy-mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TenancyMode {
    #[default]
    Compatible,
    Strict,
}

impl FromStr for TenancyMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "compatible" => Ok(Self::Compatible),
            "strict" => Ok(Self::Strict),
            other => Err(format!(
                "--tenancy-mode={other:?} is not a mode: expected \"compatible\" (every manifest the upstream \
                 controller accepts works; exposures are reported) or \"strict\" (only what the tenancy policy grants)"
            )),
        }
    }
}

impl fmt::Display for TenancyMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Compatible => "compatible",
            Self::Strict => "strict",
        })
    }
}

/// The admin's grants. Unknown fields are errors: a misspelt grant must not silently grant nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TenancyPolicy {
    /// Target groups without our ownership tags (made by Terraform, the console…) a namespace may
    /// bind.
    #[serde(default)]
    pub target_groups: Vec<TargetGroupGrant>,
    /// Sources a namespace's `spec.networking` may open on the shared node/ENI security groups.
    #[serde(default)]
    pub networking: Vec<NetworkingGrant>,
    /// Roles a namespace's bindings may name in `spec.iamRoleArnToAssume`.
    #[serde(default)]
    pub assume_roles: Vec<AssumeRoleGrant>,
    /// Which namespaces may join an IngressGroup, and which one sets its group-wide settings.
    #[serde(default)]
    pub ingress_groups: Vec<IngressGroupGrant>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TargetGroupGrant {
    pub namespaces: Vec<String>,
    /// Exact target group ARNs.
    #[serde(default)]
    pub arns: Vec<String>,
    /// Target group names (the ARN's `targetgroup/<name>/` part).
    #[serde(default)]
    pub names: Vec<String>,
    /// Every one of these tags, with these values, on the target group.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NetworkingGrant {
    pub namespaces: Vec<String>,
    /// `spec.networking` ipBlocks must lie inside one of these.
    #[serde(default)]
    pub cidrs: Vec<String>,
    /// `spec.networking` securityGroup peers must be one of these IDs.
    #[serde(default)]
    pub security_groups: Vec<String>,
    /// Port ranges (`"8080"`, `"8000-8100"`) the rules may open; empty: any port the other fields allow.
    #[serde(default)]
    pub ports: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AssumeRoleGrant {
    pub namespaces: Vec<String>,
    /// Exact role ARNs, or a prefix ending in `*` (`arn:aws:iam::111122223333:role/lbc/team-a/*`).
    pub role_arns: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IngressGroupGrant {
    /// The `group.name`.
    pub group: String,
    /// Namespaces whose Ingresses may join it.
    pub namespaces: Vec<String>,
    /// The only namespace whose members may set group-wide settings (security groups, access logs,
    /// WAF, load balancer attributes); none: no member may set them in strict mode.
    #[serde(default)]
    pub owner: Option<String>,
}

/// A policy file that cannot be used: the controller refuses to start rather than guess.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "tenancy policy {source_name}: {problems}. Fix the chart value `tenancy.policy` (or the file given to --tenancy-policy-file) and restart"
)]
pub struct PolicyError {
    pub source_name: String,
    pub problems: String,
}

/// The policy, checked and compiled for lookups.
#[derive(Clone, Debug, Default)]
pub struct Tenancy {
    mode: TenancyMode,
    policy: TenancyPolicy,
    networking: Vec<CompiledNetworking>,
}

#[derive(Clone, Debug)]
struct CompiledNetworking {
    namespaces: Vec<String>,
    cidrs: Vec<IpNet>,
    security_groups: BTreeSet<String>,
    ports: Vec<(u16, u16)>,
}

/// Something the strict mode refuses, allowed in compatible mode: named so it can be reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exposure {
    /// Short kebab-case kind, the `doctor` and metric label: `untagged-target-group`, `assume-role`,
    /// `networking-source`, `ingress-group-member`, `ingress-group-settings`.
    pub kind: &'static str,
    /// What a strict mode refusal would say.
    pub detail: String,
}

/// The strict mode's refusal: names the object, the value, what the policy grants, and the fix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct Refusal {
    pub kind: &'static str,
    pub detail: String,
}

/// A tenancy decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Granted by the policy (or not a tenancy question at all).
    Allowed,
    /// Compatible mode: allowed, but the strict mode would refuse it.
    Exposed(Exposure),
    /// Strict mode: refused.
    Refused(Refusal),
}

impl Verdict {
    pub fn is_refused(&self) -> bool {
        matches!(self, Self::Refused(_))
    }
}

impl Tenancy {
    /// Checks every grant; all problems are reported together.
    pub fn new(mode: TenancyMode, policy: TenancyPolicy, source_name: &str) -> Result<Self, PolicyError> {
        let mut problems = Vec::new();
        let mut networking = Vec::new();
        for (i, g) in policy.target_groups.iter().enumerate() {
            let at = format!("targetGroups[{i}]");
            check_namespaces(&at, &g.namespaces, &mut problems);
            if g.arns.is_empty() && g.names.is_empty() && g.tags.is_empty() {
                problems.push(format!("{at} grants nothing: give arns, names or tags"));
            }
            for arn in &g.arns {
                if !is_target_group_arn(arn) {
                    problems.push(format!(
                        "{at}.arns: {arn:?} is not a target group ARN \
                         (arn:<partition>:elasticloadbalancing:<region>:<account>:targetgroup/<name>/<id>)"
                    ));
                }
            }
            for name in &g.names {
                if name.is_empty() || name.len() > 32 || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                    problems.push(format!("{at}.names: {name:?} is not a target group name (1-32 of [A-Za-z0-9-])"));
                }
            }
        }
        for (i, g) in policy.networking.iter().enumerate() {
            let at = format!("networking[{i}]");
            check_namespaces(&at, &g.namespaces, &mut problems);
            if g.cidrs.is_empty() && g.security_groups.is_empty() {
                problems.push(format!("{at} grants nothing: give cidrs or securityGroups"));
            }
            let cidrs: Vec<IpNet> = g
                .cidrs
                .iter()
                .filter_map(|c| {
                    c.parse::<IpNet>()
                        .map(|n| n.trunc())
                        .map_err(|_| {
                            problems.push(format!("{at}.cidrs: {c:?} is not a CIDR (10.0.0.0/16, 2001:db8::/32)"))
                        })
                        .ok()
                })
                .collect();
            for sg in &g.security_groups {
                if !is_security_group_id(sg) {
                    problems.push(format!("{at}.securityGroups: {sg:?} is not a security group ID (sg-<hex>)"));
                }
            }
            let ports = g
                .ports
                .iter()
                .filter_map(|p| parse_port_range(p).map_err(|e| problems.push(format!("{at}.ports: {e}"))).ok())
                .collect();
            networking.push(CompiledNetworking {
                namespaces: g.namespaces.clone(),
                cidrs,
                security_groups: g.security_groups.iter().cloned().collect(),
                ports,
            });
        }
        for (i, g) in policy.assume_roles.iter().enumerate() {
            let at = format!("assumeRoles[{i}]");
            check_namespaces(&at, &g.namespaces, &mut problems);
            if g.role_arns.is_empty() {
                problems.push(format!("{at} grants nothing: give roleArns"));
            }
            for role in &g.role_arns {
                if !is_role_arn_pattern(role) {
                    problems.push(format!(
                        "{at}.roleArns: {role:?} is not a role ARN (arn:<partition>:iam::<12-digit account>:role/<path/name>, \
                         or a prefix of one ending in *)"
                    ));
                }
            }
        }
        let mut groups = BTreeSet::new();
        for (i, g) in policy.ingress_groups.iter().enumerate() {
            let at = format!("ingressGroups[{i}]");
            check_namespaces(&at, &g.namespaces, &mut problems);
            if g.group.is_empty() {
                problems.push(format!("{at}.group is empty: name the IngressGroup (group.name)"));
            } else if !groups.insert(g.group.as_str()) {
                problems.push(format!("{at}: group {:?} is listed twice; merge the two grants", g.group));
            }
            if let Some(owner) = &g.owner
                && !namespace_listed(&g.namespaces, owner)
            {
                problems.push(format!("{at}.owner {owner:?} is not among its namespaces {:?}", g.namespaces));
            }
        }
        if !problems.is_empty() {
            return Err(PolicyError { source_name: source_name.into(), problems: problems.join("; ") });
        }
        Ok(Self { mode, policy, networking })
    }

    /// Parses the policy file's JSON (the chart renders the value with `toJson`; an empty file is
    /// an empty policy).
    pub fn parse(mode: TenancyMode, text: &str, source_name: &str) -> Result<Self, PolicyError> {
        let policy = if text.trim().is_empty() {
            TenancyPolicy::default()
        } else {
            serde_json::from_str(text)
                .map_err(|e| PolicyError { source_name: source_name.into(), problems: e.to_string() })?
        };
        Self::new(mode, policy, source_name)
    }

    /// The same policy in the strict mode: what it would refuse (doctor's exposures).
    pub fn as_strict(&self) -> Tenancy {
        Tenancy { mode: TenancyMode::Strict, ..self.clone() }
    }

    pub fn mode(&self) -> TenancyMode {
        self.mode
    }

    pub fn policy(&self) -> &TenancyPolicy {
        &self.policy
    }

    /// May a binding in `namespace` write to target group `arn` (`name`, `tags`) that our ownership
    /// tags do not give it (none at all, or another owner's group shared through
    /// `spec.multiClusterTargetGroup`)? Tag-owned groups are decided by `tg_ownership`, not here.
    pub fn untagged_target_group(
        &self,
        namespace: &str,
        binding: &str,
        arn: &str,
        tags: &BTreeMap<String, String>,
    ) -> Verdict {
        let name = target_group_name(arn).unwrap_or_default();
        let granted = self.policy.target_groups.iter().any(|g| {
            namespace_listed(&g.namespaces, namespace)
                && (g.arns.iter().any(|a| a == arn)
                    || g.names.iter().any(|n| n == name)
                    || (!g.tags.is_empty() && g.tags.iter().all(|(k, v)| tags.get(k) == Some(v))))
        });
        if granted {
            return Verdict::Allowed;
        }
        self.deny(
            "untagged-target-group",
            format!(
                "TargetGroupBinding {namespace}/{binding} names target group {arn}, which no ownership tag of this \
                 controller gives to the binding (the group carries none, or spec.multiClusterTargetGroup shares \
                 another owner's group) and which the tenancy policy does not grant to namespace {namespace}. Fix: \
                 the cluster admin adds it to tenancy.policy.targetGroups (by arn, name or tags) for {namespace}, or \
                 the binding names a target group made for it"
            ),
        )
    }

    /// May a binding in `namespace` assume `role_arn`?
    pub fn assume_role(&self, namespace: &str, binding: &str, role_arn: &str) -> Verdict {
        let granted = self.policy.assume_roles.iter().any(|g| {
            namespace_listed(&g.namespaces, namespace) && g.role_arns.iter().any(|p| arn_matches(p, role_arn))
        });
        if granted {
            return Verdict::Allowed;
        }
        let listed: Vec<&str> = self
            .policy
            .assume_roles
            .iter()
            .filter(|g| namespace_listed(&g.namespaces, namespace))
            .flat_map(|g| g.role_arns.iter().map(String::as_str))
            .collect();
        self.deny(
            "assume-role",
            format!(
                "TargetGroupBinding {namespace}/{binding} sets spec.iamRoleArnToAssume={role_arn:?}, which the \
                 tenancy policy does not grant to namespace {namespace} (granted: {listed:?}). Fix: the cluster admin \
                 adds it to tenancy.policy.assumeRoles for {namespace}"
            ),
        )
    }

    /// May a binding in `namespace` open `source` (an ipBlock CIDR or a security group ID) on
    /// ports `from..=to` of the shared node/ENI security groups?
    pub fn networking_source(
        &self,
        namespace: &str,
        binding: &str,
        source: &NetworkSource,
        from: u16,
        to: u16,
    ) -> Verdict {
        let granted = self.networking.iter().any(|g| {
            namespace_listed(&g.namespaces, namespace)
                && match source {
                    NetworkSource::Cidr(net) => g.cidrs.iter().any(|allowed| allowed.contains(net)),
                    NetworkSource::SecurityGroup(id) => g.security_groups.contains(id),
                }
                && (g.ports.is_empty() || g.ports.iter().any(|(lo, hi)| *lo <= from && to <= *hi))
        });
        if granted {
            return Verdict::Allowed;
        }
        self.deny(
            "networking-source",
            format!(
                "TargetGroupBinding {namespace}/{binding} asks spec.networking to open ports {from}-{to} to {source} \
                 on the node security groups every tenant shares, which the tenancy policy does not grant to \
                 namespace {namespace}. Fix: the cluster admin adds the source and ports to tenancy.policy.networking \
                 for {namespace}, or the binding asks for a granted source"
            ),
        )
    }

    /// May an Ingress of `namespace` join IngressGroup `group`?
    pub fn ingress_group_member(&self, namespace: &str, ingress: &str, group: &str) -> Verdict {
        match self.policy.ingress_groups.iter().find(|g| g.group == group) {
            Some(g) if namespace_listed(&g.namespaces, namespace) => Verdict::Allowed,
            found => self.deny(
                "ingress-group-member",
                format!(
                    "Ingress {namespace}/{ingress} joins IngressGroup {group:?}, {}. Fix: the cluster admin adds \
                     {namespace} to the group's grant in tenancy.policy.ingressGroups, or the Ingress uses a group of \
                     its own namespace",
                    match found {
                        Some(g) => format!("which the tenancy policy grants only to {:?}", g.namespaces),
                        None => "which the tenancy policy does not list".into(),
                    }
                ),
            ),
        }
    }

    /// May an Ingress of `namespace` set `setting`, which applies to the whole IngressGroup `group`?
    pub fn ingress_group_setting(&self, namespace: &str, ingress: &str, group: &str, setting: &str) -> Verdict {
        let owner = self.policy.ingress_groups.iter().find(|g| g.group == group).and_then(|g| g.owner.as_deref());
        if owner == Some(namespace) {
            return Verdict::Allowed;
        }
        self.deny(
            "ingress-group-settings",
            format!(
                "Ingress {namespace}/{ingress} sets {setting}, which applies to every member of IngressGroup {group:?}; \
                 {}. Fix: set it on an Ingress of the owner namespace, or the cluster admin names {namespace} the \
                 group's owner in tenancy.policy.ingressGroups",
                match owner {
                    Some(o) => format!("only namespace {o} (the group's owner) may set group-wide settings"),
                    None => "the tenancy policy names no owner for this group".into(),
                }
            ),
        )
    }

    /// May `object` (an Ingress or Service of `namespace`) forward traffic to a target group it
    /// names itself (`actions.*` by ARN or by name), rather than to one made for its backends? A
    /// listener attached to a target group takes it: an NLB's group can then be attached to no
    /// other load balancer, and whatever the group holds receives the tenant's traffic. Only
    /// grants by `arns` or `names` count here (the decision is made before any AWS read, so tag
    /// grants, which need the group's tags, are not consulted).
    pub fn forward_target_group(&self, namespace: &str, object: &str, key: &str, target_group: &str) -> Verdict {
        let by_arn = target_group.starts_with("arn:");
        let name = if by_arn { target_group_name(target_group).unwrap_or_default() } else { target_group };
        let granted = self.policy.target_groups.iter().any(|g| {
            namespace_listed(&g.namespaces, namespace)
                && ((by_arn && g.arns.iter().any(|a| a == target_group)) || g.names.iter().any(|n| n == name))
        });
        if granted {
            return Verdict::Allowed;
        }
        self.deny(
            "forward-target-group",
            format!(
                "{object} forwards to target group {target_group} (annotation {key}), which the tenancy policy does \
                 not grant to namespace {namespace}; nothing of this change is applied. Fix: the cluster admin adds it \
                 to tenancy.policy.targetGroups for {namespace} by arn or name (tag grants are not read for \
                 forwards), or the forward names a Service (serviceName/servicePort) instead"
            ),
        )
    }

    /// May an Ingress of `namespace` be ours through the legacy `kubernetes.io/ingress.class`
    /// annotation? It names no IngressClass, so no IngressClassParams (the admin's
    /// namespaceSelector, scheme, group) apply to it.
    pub fn legacy_class_annotation(&self, namespace: &str, ingress: &str) -> Verdict {
        self.deny(
            "ingress-class-annotation",
            format!(
                "Ingress {namespace}/{ingress} is selected by the kubernetes.io/ingress.class annotation, which bypasses \
                 the IngressClassParams (namespaceSelector, scheme, group) the cluster admin set on the IngressClass. \
                 Fix: remove the annotation and set spec.ingressClassName"
            ),
        )
    }

    fn deny(&self, kind: &'static str, detail: String) -> Verdict {
        match self.mode {
            TenancyMode::Compatible => Verdict::Exposed(Exposure { kind, detail }),
            TenancyMode::Strict => Verdict::Refused(Refusal { kind, detail }),
        }
    }
}

/// A `spec.networking` peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetworkSource {
    Cidr(IpNet),
    SecurityGroup(String),
}

impl fmt::Display for NetworkSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cidr(net) => write!(f, "ipBlock {net}"),
            Self::SecurityGroup(id) => write!(f, "security group {id}"),
        }
    }
}

fn check_namespaces(at: &str, namespaces: &[String], problems: &mut Vec<String>) {
    if namespaces.is_empty() {
        problems.push(format!("{at}.namespaces is empty: name the namespaces it grants to (\"*\" for all)"));
    }
    for ns in namespaces {
        let name = ns.strip_suffix('*').unwrap_or(ns);
        let valid = name.len() <= 63
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && (ns.ends_with('*') || (!name.is_empty() && !name.starts_with('-') && !name.ends_with('-')));
        if !valid {
            problems
                .push(format!("{at}.namespaces: {ns:?} is neither a namespace name, a prefix ending in *, nor \"*\""));
        }
    }
}

/// `"*"` matches every namespace, `"team-*"` every namespace starting with `team-`.
fn namespace_listed(patterns: &[String], namespace: &str) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => namespace.starts_with(prefix),
        None => p == namespace,
    })
}

fn arn_matches(pattern: &str, arn: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => arn.starts_with(prefix),
        None => pattern == arn,
    }
}

fn is_target_group_arn(arn: &str) -> bool {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    parts.len() == 6
        && parts[0] == "arn"
        && parts[1].starts_with("aws")
        && parts[2] == "elasticloadbalancing"
        && parts[4].len() == 12
        && parts[4].chars().all(|c| c.is_ascii_digit())
        && target_group_name(arn).is_some()
}

/// The `<name>` of `...:targetgroup/<name>/<id>`.
pub fn target_group_name(arn: &str) -> Option<&str> {
    let rest = arn.split_once(":targetgroup/")?.1;
    let (name, id) = rest.split_once('/')?;
    (!name.is_empty() && !id.is_empty()).then_some(name)
}

fn is_role_arn_pattern(pattern: &str) -> bool {
    let exact = pattern.strip_suffix('*').unwrap_or(pattern);
    let parts: Vec<&str> = exact.splitn(6, ':').collect();
    parts.len() == 6
        && parts[0] == "arn"
        && parts[1].starts_with("aws")
        && parts[2] == "iam"
        && parts[3].is_empty()
        && parts[4].len() == 12
        && parts[4].chars().all(|c| c.is_ascii_digit())
        && parts[5].starts_with("role/")
        && (pattern.ends_with('*') || parts[5].len() > "role/".len())
}

fn is_security_group_id(id: &str) -> bool {
    id.strip_prefix("sg-").is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
}

/// `"8080"` or `"8000-8100"`.
fn parse_port_range(s: &str) -> Result<(u16, u16), String> {
    let port = |p: &str| p.trim().parse::<u16>().ok().filter(|p| *p > 0);
    let (lo, hi) = match s.split_once('-') {
        Some((a, b)) => (port(a), port(b)),
        None => (port(s), port(s)),
    };
    match (lo, hi) {
        (Some(lo), Some(hi)) if lo <= hi => Ok((lo, hi)),
        _ => Err(format!("{s:?} is not a port or a range of ports (\"8080\", \"8000-8100\", within 1-65535)")),
    }
}

#[cfg(test)]
mod tests;
