//! What the Service (NLB) and Ingress (ALB) stack builders share: the caller's context, the
//! TargetGroupBinding template, the error type, the security-group mode and the tag helper.
//!
//! Security-group modes (ALBC `buildLoadBalancerSecurityGroups`, the same for both kinds):
//! - **managed** (default): a frontend SG per load balancer (allowing the client sources to the
//!   listener ports) plus the cluster's backend SG; targets admit traffic from the backend SG. The
//!   frontend SG's ID is not known before it exists, so `LoadBalancer::security_groups` names it
//!   [`super::diff::MANAGED_FRONTEND_SG`], which the plan turns into a reference the deployer
//!   resolves. Without a backend SG the frontend SG is the source of target rules, written as
//!   [`FRONTEND_SG_PLACEHOLDER`] until [`resolve_frontend_security_group`] runs.
//! - **custom** (`security-groups` annotation): those groups; the backend SG (and target rules
//!   from it) only with `manage-backend-security-group-rules: "true"`.
//! - **none** (NLB only: `disable-nlb-sg`, or an NLB created without SGs).

use std::collections::BTreeSet;
use std::fmt;

use super::tags::{self, Tracking};
use super::{Scheme, Subnet, Tags};
use crate::crd::{NetworkingPeer, SecurityGroupRef, TargetGroupBindingSpec, TargetType};

/// ALBC's `--default-ssl-policy`.
pub const DEFAULT_SSL_POLICY: &str = "ELBSecurityPolicy-2016-08";
/// Stand-in for the managed frontend SG's ID in target rules, until it exists.
pub const FRONTEND_SG_PLACEHOLDER: &str = "<managed-frontend-security-group>";
/// Description ALBC gives every managed frontend security group.
pub const FRONTEND_SG_DESCRIPTION: &str = "[k8s] Managed SecurityGroup for LoadBalancer";

/// What the caller found out before building (subnets, existing load balancer) and controller
/// configuration.
#[derive(Clone, Debug, PartialEq)]
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
    /// ALBC gate `EnableDefaultTagsLowPriority` (off): annotation and IngressClassParams tags win
    /// over `default_tags`.
    pub default_tags_low_priority: bool,
    /// `--external-managed-tags`: keys users may not set through annotations.
    pub external_managed_tags: BTreeSet<String>,
    /// The cluster's shared backend SG (`--backend-security-group` or the auto-created one).
    pub backend_security_group: Option<String>,
    /// ALBC feature gate `NLBSecurityGroup`: may NLBs get security groups at all.
    pub manage_frontend_security_groups: bool,
    /// The VPC has IPv6 (dualstack load balancers and IPv6 target groups need it).
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
    /// OIDC client credentials by (namespace, Secret name), read by the caller from the Secrets
    /// the `auth-idp-oidc` annotations name (keys `clientID`, `clientSecret`).
    pub oidc_credentials: std::collections::BTreeMap<(String, String), OidcCredentials>,
    /// Services of the stack's namespace that a Service's `actions.*` annotations name, by name
    /// (read by the caller; one missing is a build problem).
    pub backend_services: std::collections::BTreeMap<String, k8s_openapi::api::core::v1::Service>,
    /// `--default-target-type` (ALBC: `instance`): Ingress backends without `target-type`.
    pub default_target_type: TargetType,
    /// `--default-load-balancer-scheme` (ALBC: `internal`): load balancers whose Service or
    /// Ingress names no scheme and that do not exist yet.
    pub default_scheme: Scheme,
}

/// The client ID and secret of an OIDC identity provider, and the digest that tells the next
/// pass whether they changed ([`crate::lb::OIDC_SECRET_DIGEST_TAG`]).
#[derive(Clone, PartialEq, Eq)]
pub struct OidcCredentials {
    pub client_id: String,
    pub client_secret: String,
    /// [`crate::ingress::oidc::credentials_digest`] of the two, keyed by the Secret's UID.
    pub digest: String,
}

impl fmt::Debug for OidcCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OidcCredentials").field("client_id", &self.client_id).finish_non_exhaustive()
    }
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
            default_tags_low_priority: false,
            external_managed_tags: BTreeSet::new(),
            backend_security_group: None,
            manage_frontend_security_groups: true,
            ipv6_available: false,
            default_ssl_policy: DEFAULT_SSL_POLICY.to_string(),
            enable_tcp_udp_listener: false,
            existing: None,
            custom_security_group_ids: Vec::new(),
            oidc_credentials: Default::default(),
            backend_services: Default::default(),
            default_target_type: TargetType::Instance,
            default_scheme: Scheme::Internal,
        }
    }
}

/// The parts of an existing load balancer that decide how a stack is built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExistingLoadBalancer {
    /// Kept when no scheme annotation is set (ALBC, Services only).
    pub scheme: Scheme,
    /// An NLB created without security groups can never get any.
    pub has_security_groups: bool,
    /// Its customer-owned IPv4 pool, which AWS cannot change.
    pub customer_owned_ipv4_pool: Option<String>,
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

/// Everything one stack owner (a Service, an IngressGroup) wants in AWS and in Kubernetes.
#[derive(Clone, Debug, PartialEq)]
pub struct BuiltStack {
    pub stack: super::Stack,
    /// Settings with their own AWS calls (`lb::extras`).
    pub extras: super::extras::WantedExtras,
    pub bindings: Vec<TargetGroupBindingTemplate>,
    /// The stack uses the cluster's backend SG (it must exist and must not be released).
    pub backend_security_group_used: bool,
    /// Things the user should know (Warning events); the stack is still valid.
    pub warnings: Vec<String>,
}

impl BuiltStack {
    /// Replaces [`FRONTEND_SG_PLACEHOLDER`] in the bindings' rules by the created group's ID.
    pub fn resolve_frontend_security_group(&mut self, group_id: &str) {
        resolve_frontend_security_group(&mut self.bindings, group_id);
    }

    /// Built with [`BACKEND_SG_PENDING`] and using it: the backend group must be created and the
    /// stack built again with its real ID.
    pub fn needs_backend_security_group(&self, ctx: &BuildContext) -> bool {
        self.backend_security_group_used && ctx.backend_security_group.as_deref() == Some(BACKEND_SG_PENDING)
    }
}

/// Stand-in for the shared backend group's ID while it does not exist yet: the group is created
/// only when a stack uses it, so a stack is built once with this, then again with the real ID
/// ([`BuiltStack::needs_backend_security_group`]).
pub const BACKEND_SG_PENDING: &str = "<backend-security-group-to-create>";

/// The backend group a first build uses: the existing one, or [`BACKEND_SG_PENDING`] when the
/// controller creates it on demand and it does not exist yet.
pub fn backend_security_group_for_build(
    existing: Option<String>,
    mode: &super::backend_sg::BackendSgMode,
) -> Option<String> {
    match (existing, mode) {
        (None, super::backend_sg::BackendSgMode::Auto) => Some(BACKEND_SG_PENDING.to_string()),
        (id, _) => id,
    }
}

/// What the caller must find out in AWS before building a stack, decided from the owner's
/// settings: the subnets (and for which scheme and how many AZs), and the security groups the
/// `security-groups` annotation names by `Name` rather than ID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContextNeeds {
    pub subnets: super::subnets::SubnetSelector,
    pub scheme: Scheme,
    /// 1 for an NLB (or an ALB with gate `ALBSingleSubnet`), 2 for an ALB.
    pub min_azs: usize,
    /// The full subnets annotation key, for messages.
    pub subnets_annotation: String,
    /// Groups to look up by `Name` (tag or group name); IDs are used as they are.
    pub security_group_names: Vec<String>,
    /// The full security-groups annotation key, for messages.
    pub security_groups_annotation: String,
}

/// Replaces [`FRONTEND_SG_PLACEHOLDER`] in the bindings' rules by the created group's ID.
pub fn resolve_frontend_security_group(bindings: &mut [TargetGroupBindingTemplate], group_id: &str) {
    for b in bindings {
        for rule in b.spec.networking.iter_mut().flat_map(|n| n.ingress.iter_mut()) {
            for peer in rule.from.iter_mut().filter_map(|p| p.security_group.as_mut()) {
                if peer.group_id == FRONTEND_SG_PLACEHOLDER {
                    peer.group_id = group_id.to_string();
                }
            }
        }
    }
}

/// Why an object cannot be turned into a stack; every problem found, each a full sentence.
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

/// Security-group mode of the load balancer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SgMode {
    /// No SGs on the load balancer (NLB only); target rules from CIDRs.
    None,
    /// Managed frontend SG; target rules from `source` (backend SG or the frontend placeholder).
    Managed { source: String },
    /// User SGs; target rules from the backend SG when managed.
    Custom { ids: Vec<String>, source: Option<String> },
}

impl SgMode {
    /// The group the targets admit load-balancer traffic from, if any.
    pub(crate) fn source(&self) -> Option<&str> {
        match self {
            SgMode::Managed { source } | SgMode::Custom { source: Some(source), .. } => Some(source),
            _ => None,
        }
    }
}

/// The user's `security-groups` annotation, as the builders hand it over.
pub(crate) struct CustomGroups {
    /// The listed IDs (when `all_ids`).
    pub ids: Vec<String>,
    /// Every entry is an `sg-…` ID; otherwise the caller resolved them into
    /// [`BuildContext::custom_security_group_ids`].
    pub all_ids: bool,
    /// Full annotation key, for messages.
    pub annotation: String,
    /// Full key of `manage-backend-security-group-rules`, for messages.
    pub manage_backend_annotation: String,
}

/// Managed (no custom groups) or custom mode; problems when a name was not resolved or the
/// backend SG is needed but absent.
pub(crate) fn managed_or_custom(
    custom: Option<CustomGroups>,
    manage_backend_rules: bool,
    ctx: &BuildContext,
    problems: &mut Vec<String>,
) -> SgMode {
    let Some(c) = custom else {
        return SgMode::Managed {
            source: ctx.backend_security_group.clone().unwrap_or_else(|| FRONTEND_SG_PLACEHOLDER.to_string()),
        };
    };
    let ids = if c.all_ids {
        c.ids
    } else {
        if ctx.custom_security_group_ids.is_empty() {
            problems.push(format!(
                "security groups named by Name tag in annotation {} were not resolved to IDs; check that they exist in VPC {}",
                c.annotation, ctx.vpc_id
            ));
        }
        ctx.custom_security_group_ids.clone()
    };
    let source = if manage_backend_rules {
        if ctx.backend_security_group.is_none() {
            problems.push(format!(
                "annotation {} needs the shared backend security group (--enable-backend-security-group or \
                 --backend-security-group) when custom security groups are set in {}",
                c.manage_backend_annotation, c.annotation
            ));
        }
        ctx.backend_security_group.clone()
    } else {
        None
    };
    SgMode::Custom { ids, source }
}

/// `LoadBalancer::security_groups` for a mode (sorted, unique).
pub(crate) fn load_balancer_security_groups(mode: &SgMode, ctx: &BuildContext) -> Vec<String> {
    let mut out: Vec<String> = match mode {
        SgMode::None => Vec::new(),
        SgMode::Managed { source } => ctx
            .backend_security_group
            .iter()
            .filter(|id| *id == source)
            .cloned()
            .chain([super::diff::MANAGED_FRONTEND_SG.to_string()])
            .collect(),
        SgMode::Custom { ids, source } => ids.iter().chain(source).cloned().collect(),
    };
    out.sort();
    out.dedup();
    out
}

/// Whether the load balancer's groups include the cluster's backend SG.
pub(crate) fn uses_backend_security_group(security_groups: &[String], ctx: &BuildContext) -> bool {
    ctx.backend_security_group.as_ref().is_some_and(|id| security_groups.contains(id))
}

/// A `spec.networking` peer naming a security group.
pub(crate) fn security_group_peer(group_id: &str) -> NetworkingPeer {
    NetworkingPeer { security_group: Some(SecurityGroupRef { group_id: group_id.to_string() }), ip_block: None }
}

/// Tags of one stack's resources (see [`super::tags`] for the precedence).
pub(crate) struct Tagger<'a> {
    pub prefix: &'a str,
    pub cluster: &'a str,
    pub stack_id: &'a str,
    pub default_tags: &'a Tags,
    /// `EnableDefaultTagsLowPriority`: the user's tags win over `default_tags`.
    pub defaults_low: bool,
}

impl Tagger<'_> {
    pub(crate) fn tags(&self, resource_id: &str, additional: &Tags) -> Tags {
        let t = Tracking { prefix: self.prefix, cluster: self.cluster, stack_id: self.stack_id, resource_id };
        tags::resource_tags(&t, self.default_tags, additional, self.defaults_low)
    }
}

/// One problem per user tag key that `--external-managed-tags` reserves.
pub(crate) fn external_tag_problems(
    additional: &Tags,
    ctx: &BuildContext,
    annotation: &str,
    owner: &str,
) -> Vec<String> {
    additional
        .keys()
        .filter(|k| ctx.external_managed_tags.contains(*k))
        .map(|key| {
            format!(
                "tag {key} in annotation {annotation} of {owner} is managed outside the controller \
                 (--external-managed-tags); remove it from the annotation"
            )
        })
        .collect()
}
