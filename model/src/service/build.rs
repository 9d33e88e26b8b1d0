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
//!   [`FRONTEND_SG_PLACEHOLDER`] until [`crate::lb::build::BuiltStack::resolve_frontend_security_group`] runs.
//! - **custom** (`security-groups` annotation): those groups; the backend SG only when
//!   `manage-backend-security-group-rules: "true"`.
//! - **none** (`disable-nlb-sg`, the controller may not manage SGs, or the existing NLB was created
//!   without SGs — AWS cannot add them later): targets admit the client / subnet CIDRs directly.

use ipnet::IpNet;
use k8s_openapi::api::core::v1::Service;

use super::annotations::NlbSettings;
use crate::crd::TargetType;
use crate::lb::build::Tagger;
pub use crate::lb::extras::WantedExtras;
use crate::lb::naming;
use crate::lb::tags::{RESOURCE_LOAD_BALANCER, SERVICE_TAG_PREFIX};
use crate::lb::{LbIpAddressType, LbType, LoadBalancer, Scheme, Stack, Subnet, Tags};

pub(crate) use crate::lb::build::SgMode;
pub use crate::lb::build::{
    BuildContext, BuildError, DEFAULT_SSL_POLICY, ExistingLoadBalancer, FRONTEND_SG_PLACEHOLDER,
    TargetGroupBindingTemplate,
};

/// Everything one Service wants in AWS and in Kubernetes.
pub type ServiceStack = crate::lb::build::BuiltStack;

/// Intermediate state shared by the builders.
pub(crate) struct Ctx<'a> {
    pub svc: &'a Service,
    pub s: &'a NlbSettings,
    pub c: &'a BuildContext,
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
    /// Building another Service's target group for a weighted forward: the UID of the Service
    /// that owns the load balancer (`svc`, `name` and `uid` are then the other Service's).
    pub base_uid: Option<&'a str>,
    pub stack_id: String,
    pub scheme: Scheme,
    pub ip_address_type: LbIpAddressType,
    /// `ip` or `instance` ([`target_type`]).
    pub target_type: TargetType,
    pub subnets: Vec<&'a Subnet>,
    pub problems: Vec<String>,
    pub warnings: Vec<String>,
}

impl Ctx<'_> {
    pub(crate) fn tags(&self, resource_id: &str) -> Tags {
        let t = Tagger {
            prefix: SERVICE_TAG_PREFIX,
            cluster: &self.c.cluster_name,
            stack_id: &self.stack_id,
            default_tags: &self.c.default_tags,
            defaults_low: self.c.default_tags_low_priority,
        };
        t.tags(resource_id, &self.s.additional_tags)
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

/// ALBC `buildTargetType`: `nlb-ip` or `nlb-target-type: ip` is ip, `nlb-target-type: instance` is
/// instance, no annotation is `--default-target-type` ([`BuildContext::default_target_type`]).
/// Other values never get here (`super::select` refuses them).
pub fn target_type(settings: &NlbSettings, ctx: &BuildContext) -> TargetType {
    match (settings.load_balancer_type.as_deref(), settings.target_type.as_deref()) {
        (Some("nlb-ip"), _) | (_, Some("ip")) => TargetType::Ip,
        (_, Some(_)) => TargetType::Instance,
        (_, None) => ctx.default_target_type,
    }
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
        base_uid: None,
        stack_id: format!("{namespace}/{name}"),
        scheme: settings.scheme.or(ctx.existing.as_ref().map(|e| e.scheme)).unwrap_or(ctx.default_scheme),
        ip_address_type: settings.ip_address_type.unwrap_or(LbIpAddressType::Ipv4),
        target_type: target_type(settings, ctx),
        subnets,
        problems: Vec::new(),
        warnings: settings.warnings(),
    };
    b.problems.extend(crate::lb::build::external_tag_problems(
        &settings.additional_tags,
        ctx,
        &super::keys::full_key(super::keys::ADDITIONAL_TAGS),
        &format!("Service {namespace}/{name}"),
    ));
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
    let security_groups = crate::lb::build::load_balancer_security_groups(&sg_mode, ctx);
    let backend_security_group_used = crate::lb::build::uses_backend_security_group(&security_groups, ctx);
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
        customer_owned_ipv4_pool: None,
        ipv4_ipam_pool: None,
        ipv6_source_nat: settings.ipv6_source_nat,
    };
    Ok(ServiceStack {
        stack: Stack {
            id: b.stack_id.clone(),
            load_balancer,
            frontend_security_group,
            target_groups: targets.target_groups,
            listeners: targets.listeners,
        },
        extras: WantedExtras {
            enforce_inbound_rules_on_private_link: settings.inbound_sg_rules_on_private_link,
            minimum_capacity_units: settings.minimum_capacity_units,
            ..WantedExtras::default()
        },
        bindings: targets.bindings,
        backend_security_group_used,
        warnings: b.warnings,
    })
}

#[cfg(test)]
#[path = "build_tests.rs"]
mod tests;

/// What to look up in AWS before [`build_stack`]: subnets for the scheme the Service gets (its
/// annotation, else the existing load balancer's, else `default_scheme`; one AZ is enough for an
/// NLB) and the security groups its annotation names by `Name`.
pub fn context_needs(
    svc: &Service,
    settings: &NlbSettings,
    existing: Option<ExistingLoadBalancer>,
    default_scheme: Scheme,
) -> crate::lb::build::ContextNeeds {
    use super::annotations::SecurityGroupSelector;
    let subnets_annotation = super::keys::full_key(super::keys::SUBNETS);
    let raw = svc.metadata.annotations.as_ref().and_then(|a| a.get(&subnets_annotation));
    crate::lb::build::ContextNeeds {
        subnets: crate::lb::subnets::SubnetSelector::from_annotation(raw.map(String::as_str)),
        scheme: settings.scheme.or(existing.map(|e| e.scheme)).unwrap_or(default_scheme),
        min_azs: 1,
        subnets_annotation,
        security_group_names: settings
            .security_groups
            .iter()
            .flatten()
            .filter_map(|g| match g {
                SecurityGroupSelector::Name(n) => Some(n.clone()),
                SecurityGroupSelector::Id(_) => None,
            })
            .collect(),
        security_groups_annotation: super::keys::full_key(super::keys::SECURITY_GROUPS),
    }
}
