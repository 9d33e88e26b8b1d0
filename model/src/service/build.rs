//! Service + [`NlbSettings`] + [`BuildContext`] → the desired NLB stack ([`ServiceStack`]), following
//! ALBC's model builder (`pkg/service/model_build_*.go`). Listeners, target groups and bindings are
//! in `build_targets.rs`, subnet mappings and the frontend security group in `build_network.rs`;
//! this file holds the types and assembles the load balancer.
//!
//! Security-group modes (ALBC `buildLoadBalancerSecurityGroups`):
//! - **managed** (default): a frontend SG per NLB ([`Stack::frontend_security_group`], allowing the
//!   source ranges / prefix lists to the listener ports) plus the cluster's backend SG; targets
//!   admit traffic from the backend SG. The frontend SG's ID is not known before it exists, so
//!   `LoadBalancer::security_groups` names it [`crate::lb::diff::MANAGED_FRONTEND_SG`], which the
//!   plan turns into a reference the deployer resolves. Without a backend SG the frontend SG is the source of target rules, written as
//!   [`FRONTEND_SG_PLACEHOLDER`] until [`ServiceStack::resolve_frontend_security_group`] runs.
//! - **custom** (`security-groups` annotation): those groups; the backend SG only when
//!   `manage-backend-security-group-rules: "true"`.
//! - **none** (`disable-nlb-sg`, the controller may not manage SGs, or the existing NLB was created
//!   without SGs — AWS cannot add them later): targets admit the client / subnet CIDRs directly.

use std::collections::BTreeSet;
use std::fmt;

use ipnet::IpNet;
use k8s_openapi::api::core::v1::Service;

use super::annotations::NlbSettings;
use crate::crd::TargetGroupBindingSpec;
use crate::lb::naming;
use crate::lb::tags::{self, RESOURCE_LOAD_BALANCER, SERVICE_TAG_PREFIX, Tracking};
use crate::lb::{LbIpAddressType, LbType, LoadBalancer, Scheme, Stack, Subnet, Tags};

/// ALBC's `--default-ssl-policy`.
pub const DEFAULT_SSL_POLICY: &str = "ELBSecurityPolicy-2016-08";
/// Stand-in for the managed frontend SG's ID in target rules, until it exists.
pub const FRONTEND_SG_PLACEHOLDER: &str = "<managed-frontend-security-group>";

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
            super::keys::full_key(super::keys::ADDITIONAL_TAGS)
        ));
    }
    if b.subnets.is_empty() {
        b.problems.push("no subnets: set annotation service.beta.kubernetes.io/aws-load-balancer-subnets or tag subnets for discovery".into());
    }
    if b.ip_address_type == LbIpAddressType::Dualstack && !ctx.ipv6_available {
        b.problems.push("ip-address-type \"dualstack\" needs a VPC with IPv6 CIDR blocks".into());
    }
    let sg_mode = super::build_network::security_group_mode(&mut b);
    let subnet_mappings = super::build_network::subnet_mappings(&mut b);
    let frontend_security_group = match sg_mode {
        SgMode::Managed { .. } => Some(super::build_network::frontend_security_group(&mut b)),
        _ => None,
    };
    let targets = super::build_targets::build(&mut b, &sg_mode);
    let mut security_groups: Vec<String> = match &sg_mode {
        SgMode::None => Vec::new(),
        SgMode::Managed { source } => ctx
            .backend_security_group
            .iter()
            .filter(|id| *id == source)
            .cloned()
            .chain([crate::lb::diff::MANAGED_FRONTEND_SG.to_string()])
            .collect(),
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

#[cfg(test)]
#[path = "build_tests.rs"]
mod tests;
