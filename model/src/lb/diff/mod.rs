//! Desired [`Stack`] vs what exists in AWS → the ordered writes that close the gap.
//!
//! The controller lists the AWS resources carrying this stack's ownership tags into an
//! [`ObservedStack`], calls [`plan`] (or [`plan_delete`] when the Service/Ingress goes away) and
//! executes the returned [`Step`]s in order, stopping at the first failure and re-planning on the
//! next reconcile. Steps are plain data: each names the resource by ARN/ID when it already exists,
//! and by name when an earlier step of the same plan creates it ([`TargetGroupRef::Name`],
//! [`SecurityGroupRef::ManagedFrontend`]); the controller resolves those as it goes.
//!
//! Order (ALBC's deployer runs security group → target groups → load balancer → listeners, then
//! removes leftovers):
//!
//! 1. frontend security group: create, tag, authorize new rules (before anything uses it);
//! 2. [`Step::ReplaceLoadBalancer`] when an immutable property changed (announce, then delete);
//! 3. target groups: create, modify health check / attributes / tags;
//! 4. load balancer: create, or set security groups, subnets, address type, attributes, tags;
//! 5. listeners: delete ports no longer wanted, create or modify the others;
//! 6. delete target groups nothing references any more (the controller runs these after the
//!    stack's bindings are synced, and only for groups no binding names: [`hold_bound`]);
//! 7. revoke stale security group rules; delete a security group no longer attached
//!    (retried until the load balancer's network interfaces are gone).
//!
//! What is compared, and why:
//! - Attributes: only the keys the desired side sets, like ALBC
//!   (`load_balancer_attributes_reconciler.go` sends the desired keys whose value differs). A key
//!   AWS reports but we do not set is AWS's business (its default, or a console change we do not
//!   own); so a Stack builder that wants a default restored must set it explicitly.
//! - Tags: fully reconciled like ALBC (`tagging_manager.go`: add/update the desired, remove the
//!   rest), except keys starting with `aws:` (reserved, AWS refuses to change them) and the
//!   `--external-managed-tags` keys ([`PlanOptions::external_managed_tags`]).
//! - Security group rules: by protocol, port range and source; a description-only difference is
//!   not worth a revoke/authorize gap in traffic and is left alone.
//! - Target groups: by name. Names are deterministic hashes of the immutable properties, so a
//!   changed protocol/port/target type/VPC/address type arrives under a new name: the new group is
//!   created, listeners switch to it, then the old one is deleted. The same name with different
//!   immutable properties is refused ([`PlanError::TargetGroupConflict`]).
//! - Listeners: by port.
//! - Listener certificates: the first is the default (ModifyListener); the others are a set
//!   (Add/RemoveListenerCertificates), compared only on TLS/HTTPS listeners.
//! - Listener rules: see [`rules`](self#listener-rules) below.
//!
//! # Listener rules
//!
//! Rules are planned only for listeners whose rules were observed ([`ObservedStack::rules`] has
//! the listener's ARN): the Service → NLB path never reads them (NLBs have none) and its
//! listeners want none, so nothing is planned. On a listener of ours every rule is ours, like
//! ALBC: a rule nobody wants is deleted, tagged or not, and a matching untagged rule is adopted
//! (tagged). Desired rules are matched to observed ones first by content (normalized conditions
//! and actions, see [`crate::lb::Rule::normalized`]), so reordering rules only moves priorities
//! ([`Step::SetRulePriorities`]) instead of deleting and re-creating them; the rest are matched by
//! priority and modified in place; what is left is created or deleted. Per listener the order is
//! delete → move → modify → create, which never asks AWS for a priority another rule holds (a
//! swap parks the moving rules on free priorities first). Rules are created after the target
//! groups they forward to and deleted before target groups are.

mod bound;
mod plan;
mod rules;

pub use bound::{HeldDeletion, defer_target_group_deletions, hold_bound};
pub use plan::{deletion_protected, plan, plan_delete};

use super::{
    Action, Attributes, HealthCheck, IngressRule, LbIpAddressType, LbType, Listener, LoadBalancer, LoadBalancerStatus,
    MutualAuthentication, Observed, Protocol, Rule, Scheme, SecurityGroup, SubnetMapping, Tags, TargetGroup,
};
#[cfg(doc)]
use super::{Stack, TargetGroupRef};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Written in a desired `LoadBalancer::security_groups` to mean "the managed frontend security
/// group" (whose ID does not exist before it is created). The desired group's name works too.
pub const MANAGED_FRONTEND_SG: &str = "managed:frontend";

/// The load balancer attribute that blocks deletion.
pub const DELETION_PROTECTION: &str = "deletion_protection.enabled";

/// What exists in AWS for one stack. Every resource here carries this stack's ownership tags
/// (the controller filters); look-alikes without them go in `foreign`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObservedStack {
    pub load_balancer: Option<(Observed<LoadBalancer>, LoadBalancerStatus)>,
    pub target_groups: Vec<Observed<TargetGroup>>,
    /// The load balancer's listeners (empty when there is no load balancer).
    pub listeners: Vec<Observed<Listener>>,
    /// Non-default rules by listener ARN, for the listeners whose rules were read. A listener
    /// missing here gets no rule steps (see the module docs); its desired rules make [`plan`] fail.
    pub rules: BTreeMap<String, Vec<Observed<Rule>>>,
    pub frontend_security_group: Option<Observed<SecurityGroup>>,
    /// Resources with a name the desired stack uses but without our ownership tags: never
    /// modified or deleted; any entry makes [`plan`] refuse.
    pub foreign: Vec<ForeignResource>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResourceKind {
    LoadBalancer,
    TargetGroup,
    Listener,
    Rule,
    SecurityGroup,
}

impl fmt::Display for ResourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ResourceKind::LoadBalancer => "load balancer",
            ResourceKind::TargetGroup => "target group",
            ResourceKind::Listener => "listener",
            ResourceKind::Rule => "listener rule",
            ResourceKind::SecurityGroup => "security group",
        })
    }
}

/// A resource found under a name we want, without our ownership tags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignResource {
    pub kind: ResourceKind,
    pub name: String,
    /// ARN or ID.
    pub id: String,
    pub tags: Tags,
}

/// Knobs that come from controller flags.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlanOptions {
    /// `--external-managed-tags`: tag keys someone else manages; never added, changed or removed.
    pub external_managed_tags: BTreeSet<String>,
    /// ALBC's gate `EnhancedDefaultBehavior`: a listener whose Service or Ingress no longer asks for
    /// an ALPN policy or mutual TLS is set back to none / off. Off (ALBC's default): what the
    /// listener has is left as it is.
    pub enhanced_defaults: bool,
}

/// A security group as a step refers to it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SecurityGroupRef {
    Id(String),
    /// The managed frontend group: created by an earlier step of this plan, or already existing.
    ManagedFrontend,
}

/// Why the load balancer must be deleted and created again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplaceReason {
    Scheme {
        from: Scheme,
        to: Scheme,
    },
    Type {
        from: LbType,
        to: LbType,
    },
    Name {
        from: String,
        to: String,
    },
    /// An NLB created without security groups can never get any (AWS `SetSecurityGroups`).
    NlbSecurityGroups,
}

impl fmt::Display for ReplaceReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplaceReason::Scheme { from, to } => {
                write!(f, "scheme changes from {} to {} (AWS cannot change it in place)", from.as_aws(), to.as_aws())
            }
            ReplaceReason::Type { from, to } => {
                write!(f, "type changes from {from:?} to {to:?} (AWS cannot change it in place)")
            }
            ReplaceReason::Name { from, to } => write!(f, "name changes from {from} to {to} (AWS cannot rename)"),
            ReplaceReason::NlbSecurityGroups => f.write_str(
                "security groups are wanted but the NLB was created without any, and AWS cannot add them later",
            ),
        }
    }
}

/// Listener fields to change; `None` leaves the field as it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListenerChange {
    pub protocol: Option<Protocol>,
    pub default_certificate: Option<String>,
    pub ssl_policy: Option<String>,
    pub alpn_policy: Option<String>,
    pub mutual_authentication: Option<MutualAuthentication>,
    pub default_actions: Option<Vec<Action>>,
}

impl ListenerChange {
    pub fn is_empty(&self) -> bool {
        *self == ListenerChange::default()
    }
}

/// One AWS write. Executed in order; see the module docs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Create the managed frontend group with `group.tags`. Rules follow in [`Step::AuthorizeIngress`].
    CreateSecurityGroup {
        group: SecurityGroup,
    },
    AuthorizeIngress {
        group: SecurityGroupRef,
        rules: Vec<IngressRule>,
    },
    RevokeIngress {
        group_id: String,
        rules: Vec<IngressRule>,
    },
    /// Announce (event) and delete the load balancer; its listeners go with it. A
    /// [`Step::CreateLoadBalancer`] follows.
    ReplaceLoadBalancer {
        arn: String,
        name: String,
        reason: ReplaceReason,
    },
    /// Create with `target_group.tags`, then set `target_group.attributes` (the create call takes none).
    CreateTargetGroup {
        target_group: TargetGroup,
    },
    ModifyTargetGroupHealthCheck {
        arn: String,
        name: String,
        health_check: HealthCheck,
    },
    /// Only the keys to change.
    ModifyTargetGroupAttributes {
        arn: String,
        name: String,
        attributes: Attributes,
    },
    /// Create with `load_balancer.tags` and `security_groups` (not `load_balancer.security_groups`),
    /// then set `load_balancer.attributes` (the create call takes none).
    CreateLoadBalancer {
        load_balancer: LoadBalancer,
        security_groups: Vec<SecurityGroupRef>,
    },
    SetSecurityGroups {
        arn: String,
        security_groups: Vec<SecurityGroupRef>,
    },
    /// `ipv6_source_nat`: NLB `EnablePrefixForIpv6SourceNat`, sent when `Some`.
    SetSubnets {
        arn: String,
        subnets: Vec<SubnetMapping>,
        ipv6_source_nat: Option<bool>,
    },
    SetIpAddressType {
        arn: String,
        ip_address_type: LbIpAddressType,
    },
    /// `ModifyIpPools`: the IPv4 IPAM pool set (`Some`) or removed (`None`). A removal comes before
    /// any change of subnets or address type, a new pool after them (as AWS requires).
    ModifyIpPools {
        arn: String,
        ipv4_ipam_pool: Option<String>,
    },
    /// Only the keys to change.
    ModifyLoadBalancerAttributes {
        arn: String,
        attributes: Attributes,
    },
    /// Create on this stack's load balancer with `listener.tags` and the default certificate,
    /// then add the other certificates (AWS's CreateListener takes exactly one), then set
    /// `listener.attributes`. `listener.rules` are not part of it: [`Step::CreateRule`]s follow.
    /// Target groups in the actions are ARNs, or names of groups created earlier in this plan.
    CreateListener {
        listener: Listener,
    },
    ModifyListener {
        arn: String,
        port: u16,
        change: ListenerChange,
    },
    /// Non-default certificates to attach. (A listener created by [`Step::CreateListener`] gets
    /// its non-default certificates as part of that step.)
    AddListenerCertificates {
        arn: String,
        port: u16,
        certificates: Vec<String>,
    },
    /// Non-default certificates to detach.
    RemoveListenerCertificates {
        arn: String,
        port: u16,
        certificates: Vec<String>,
    },
    /// Only the keys to change.
    ModifyListenerAttributes {
        arn: String,
        port: u16,
        attributes: Attributes,
    },
    DeleteListener {
        arn: String,
        port: u16,
    },
    /// Create `rule` (with its tags) on the listener on `port`, which exists or was created
    /// earlier in this plan. Target groups as in [`Step::CreateListener`].
    CreateRule {
        port: u16,
        rule: Rule,
    },
    /// Set the conditions and actions of an existing rule (its priority and tags stay). An OIDC
    /// action without a client secret keeps the secret AWS has (`UseExistingClientSecret`).
    ModifyRule {
        arn: String,
        port: u16,
        rule: Rule,
    },
    /// Move existing rules of the listener on `port` to new priorities in one call. No priority
    /// in the list is held by another rule when the step runs.
    SetRulePriorities {
        port: u16,
        priorities: Vec<(String, u32)>,
    },
    DeleteRule {
        arn: String,
        port: u16,
    },
    DeleteLoadBalancer {
        arn: String,
        name: String,
    },
    DeleteTargetGroup {
        arn: String,
        name: String,
    },
    /// When `retry_on_dependency_violation`, `DependencyViolation` means "the load balancer's
    /// network interfaces are not gone yet": retry with backoff (minutes) before giving up.
    DeleteSecurityGroup {
        id: String,
        name: String,
        retry_on_dependency_violation: bool,
    },
    /// Add or overwrite tags (EC2 `CreateTags` for a security group, ELBv2 `AddTags` otherwise).
    AddTags {
        kind: ResourceKind,
        id: String,
        tags: Tags,
    },
    RemoveTags {
        kind: ResourceKind,
        id: String,
        keys: Vec<String>,
    },
}

impl Step {
    /// A short description for logs and events.
    pub fn summary(&self) -> String {
        match self {
            Step::CreateSecurityGroup { group } => format!("create security group {}", group.name),
            Step::AuthorizeIngress { rules, .. } => format!("authorize {} ingress rule(s)", rules.len()),
            Step::RevokeIngress { group_id, rules } => format!("revoke {} ingress rule(s) on {group_id}", rules.len()),
            Step::ReplaceLoadBalancer { name, reason, .. } => format!("replace load balancer {name}: {reason}"),
            Step::CreateTargetGroup { target_group } => format!("create target group {}", target_group.name),
            Step::ModifyTargetGroupHealthCheck { name, .. } => format!("modify health check of target group {name}"),
            Step::ModifyTargetGroupAttributes { name, attributes, .. } => {
                format!("set target group {name} attributes {}", keys(attributes))
            }
            Step::CreateLoadBalancer { load_balancer, .. } => format!("create load balancer {}", load_balancer.name),
            Step::SetSecurityGroups { .. } => "set load balancer security groups".into(),
            Step::SetSubnets { subnets, ipv6_source_nat, .. } => {
                let nat = match ipv6_source_nat {
                    Some(true) => ", IPv6 source NAT on",
                    Some(false) => ", IPv6 source NAT off",
                    None => "",
                };
                format!("set load balancer subnets ({}){nat}", subnets.len())
            }
            Step::SetIpAddressType { ip_address_type, .. } => {
                format!("set load balancer address type {}", ip_address_type.as_aws())
            }
            Step::ModifyLoadBalancerAttributes { attributes, .. } => {
                format!("set load balancer attributes {}", keys(attributes))
            }
            Step::ModifyIpPools { ipv4_ipam_pool: Some(pool), .. } => format!("set load balancer IPAM pool {pool}"),
            Step::ModifyIpPools { ipv4_ipam_pool: None, .. } => "remove load balancer IPAM pool".into(),
            Step::CreateListener { listener } => format!("create listener {}", listener.port),
            Step::ModifyListener { port, .. } => format!("modify listener {port}"),
            Step::AddListenerCertificates { port, certificates, .. } => {
                format!("add {} certificate(s) to listener {port}", certificates.len())
            }
            Step::RemoveListenerCertificates { port, certificates, .. } => {
                format!("remove {} certificate(s) from listener {port}", certificates.len())
            }
            Step::ModifyListenerAttributes { port, attributes, .. } => {
                format!("set listener {port} attributes {}", keys(attributes))
            }
            Step::DeleteListener { port, .. } => format!("delete listener {port}"),
            Step::CreateRule { port, rule } => format!("create rule {} on listener {port}", rule.priority),
            Step::ModifyRule { port, rule, .. } => format!("modify rule {} on listener {port}", rule.priority),
            Step::SetRulePriorities { port, priorities } => {
                let moves: Vec<String> = priorities.iter().map(|(_, p)| p.to_string()).collect();
                format!("move {} rule(s) of listener {port} to priorities {}", priorities.len(), moves.join(", "))
            }
            Step::DeleteRule { port, arn } => format!("delete rule {arn} of listener {port}"),
            Step::DeleteLoadBalancer { name, .. } => format!("delete load balancer {name}"),
            Step::DeleteTargetGroup { name, .. } => format!("delete target group {name}"),
            Step::DeleteSecurityGroup { name, .. } => format!("delete security group {name}"),
            Step::AddTags { kind, id, tags } => format!("tag {kind} {id} with {}", keys(tags)),
            Step::RemoveTags { kind, id, keys } => format!("untag {kind} {id}: {}", keys.join(", ")),
        }
    }
}

fn keys(m: &std::collections::BTreeMap<String, String>) -> String {
    m.keys().cloned().collect::<Vec<_>>().join(", ")
}

/// A plan the controller must not carry out.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("{}", foreign_message(.stack, .resources))]
    Foreign { stack: String, resources: Vec<ForeignResource> },
    #[error(
        "target group {name} exists with {field} {observed} but the stack wants {desired}; AWS cannot change it and \
         target group names are derived from it, so this is a naming bug or a manual edit: delete the target group \
         (it carries our tags) to let the controller create it again"
    )]
    TargetGroupConflict { name: String, field: &'static str, observed: String, desired: String },
    #[error(
        "load balancer {name} must be replaced ({reason}) but its deletion_protection.enabled attribute is true in the \
         desired configuration; set it to false to let the controller delete and re-create it (its DNS name will change)"
    )]
    ReplacementBlocked { name: String, reason: ReplaceReason },
    #[error(
        "listener {port} forwards to target group {name}, which is neither in the stack nor in AWS (stack builder bug)"
    )]
    UnknownTargetGroup { port: u16, name: String },
    #[error(
        "listener {port} wants {count} rule(s) but its existing rules were not read (ObservedStack::rules has no \
         entry for {arn}); planning would guess at priorities, so nothing is done: read the listener's rules before \
         planning (controller bug)"
    )]
    RulesNotObserved { port: u16, arn: String, count: usize },
    #[error(
        "listener {port} has {problem}; priorities must be unique per listener and within {min}..={max}: fix the \
         priorities the rules are built with (stack builder bug or conflicting configuration)",
        min = crate::lb::RULE_PRIORITIES.start(),
        max = crate::lb::RULE_PRIORITIES.end()
    )]
    BadRulePriority { port: u16, problem: String },
}

fn foreign_message(stack: &str, resources: &[ForeignResource]) -> String {
    let mut out = format!(
        "refusing to reconcile stack {stack}: {} AWS resource(s) use the names this stack wants but do not carry its \
         ownership tags, so they belong to someone else and will not be modified or deleted:",
        resources.len()
    );
    for r in resources.iter().take(10) {
        let tags: Vec<String> = r.tags.iter().take(8).map(|(k, v)| format!("{k}={v}")).collect();
        let more = if r.tags.len() > 8 { format!(", … {} more", r.tags.len() - 8) } else { String::new() };
        out.push_str(&format!("\n  {} {} ({}) tags: [{}{}]", r.kind, r.name, r.id, tags.join(", "), more));
    }
    if resources.len() > 10 {
        out.push_str(&format!("\n  … and {} more", resources.len() - 10));
    }
    out.push_str(
        "\nfix: choose another name (e.g. the load-balancer-name annotation), or delete/rename the existing resource; \
         if it was created by this controller before, restore its ownership tags",
    );
    out
}

#[cfg(test)]
mod listener_tests;
#[cfg(test)]
mod random_tests;
#[cfg(test)]
mod testkit;
#[cfg(test)]
mod tests;
