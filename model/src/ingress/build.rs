//! An IngressGroup's [`GroupPlan`] + [`BuildContext`] → the desired ALB stack ([`IngressStack`]),
//! following ALBC's ingress model builder (`pkg/ingress/model_build_load_balancer.go`,
//! `model_build_managed_sg.go`, `model_build_listener.go`, `model_build_listener_rules.go`,
//! `model_build_target_group.go`). Shares its context, bindings, errors, security-group modes
//! and tag precedence with the Service builder (`lb::build`).
//!
//! - Load balancer: `application`; name from `load-balancer-name`, else ALBC's group name
//!   ([`naming::ingress_load_balancer_name`]); scheme `internal` unless set (an existing ALB's
//!   scheme is not kept, as in ALBC); `ipv4` unless set; the caller's subnets (two AZs at least);
//!   attributes of `load-balancer-attributes`; tags `elbv2.k8s.aws/cluster`,
//!   `ingress.k8s.aws/stack` (group name or `namespace/name`), `ingress.k8s.aws/resource`, then
//!   `--default-tags`, then every member's `tags` (a key with two values fails the group).
//! - Managed frontend SG (no `security-groups`): ALBC's group name, TCP on every listener port
//!   from the port's IPv4 CIDRs and prefix lists, and its IPv6 CIDRs on dualstack ALBs only.
//! - Listeners: one per planned port, certificates (default first) and SSL policy on HTTPS;
//!   rules with resource ID `<port>:<priority>` tagged with their Ingress's `tags`.
//! - Target groups: one per planned backend, named by [`naming::ingress_target_group_name`],
//!   port = the Service port's numeric targetPort (1 for a named one) for `ip` targets, its
//!   NodePort for `instance` targets (ALBC's default; a port without one is a problem naming the
//!   fix), ALB health-check defaults (protocol = backend protocol, traffic port, `/` or
//!   `/AWS.ALB/healthcheck` for gRPC, 15 s / 5 s / 2 / 2, codes `200` or gRPC `12`); a named
//!   health-check port is that port's targetPort (ip) or NodePort (instance).
//! - TargetGroupBindings: named like their target group, in the Service's namespace, admitting
//!   TCP from the backend SG (or the managed frontend SG without one) to the targetPort (named
//!   ports allowed; the NodePort for instance targets, whose `nodeSelector` comes from
//!   `target-node-labels`) and to a separate health-check port, one rule per port (ALBC).
//!
//! - Regex host/path conditions: AWS's limits (128 characters, 3 values per condition, visible
//!   ASCII, no lookaround/backreferences/Unicode classes) are checked here, before any AWS call.
//! - OIDC: the client ID and secret come from `BuildContext::oidc_credentials` (the controller
//!   reads the Secrets); rules and listeners that use them carry `OIDC_SECRET_DIGEST_TAG`.
//! - Extras (`lb::extras`, applied by the controller after the stack): WAFv2 web ACL (ARN wins
//!   over name; `none` disassociates; absent leaves AWS alone) and minimum capacity.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::actions::{ForwardTarget, RuleAction, ServicePort};
use super::group::GroupId;
use super::keys::{self as k, full_key};
use super::merge::{IngressKey, Member};
use super::plan::{GroupPlan, TargetGroupBackend, TargetGroupKey};
use crate::annotations::fields::HealthCheckPortSetting;
use crate::crd::{
    NetworkingIngressRule, NetworkingPort, NetworkingProtocol, ServiceReference, TargetGroupBindingNetworking,
    TargetGroupBindingSpec, TargetGroupIpAddressType, TargetType,
};
use crate::lb::build::{
    BuildContext, BuildError, CustomGroups, FRONTEND_SG_DESCRIPTION, SgMode, Tagger, TargetGroupBindingTemplate,
    external_tag_problems, load_balancer_security_groups, managed_or_custom, security_group_peer,
    uses_backend_security_group,
};
use crate::lb::extras::{WafClassicWanted, WantedExtras, WebAclWanted};
use crate::lb::naming::{self, IngressTargetGroupNameInputs};
use crate::lb::tags::{INGRESS_TAG_PREFIX, RESOURCE_LOAD_BALANCER, RESOURCE_MANAGED_SECURITY_GROUP};
use crate::lb::{
    Action, AuthenticateCognito, AuthenticateOidc, Condition, HealthCheck, HealthCheckPort, IngressRule,
    LbIpAddressType, LbType, Listener, LoadBalancer, OIDC_SECRET_DIGEST_TAG, Protocol, Rule, RuleSource, SecurityGroup,
    Stack, SubnetMapping, Tags, TargetGroup, TargetGroupRef, TgIpAddressType, VALUES_PER_CONDITION_MAX,
    WeightedTargetGroup, oidc_secret_digest, regex_value_problem,
};

/// Everything one IngressGroup wants in AWS and in Kubernetes.
pub type IngressStack = crate::lb::build::BuiltStack;

/// ALB health-check defaults (ALBC `--default-*` ingress values).
pub(super) const HC_INTERVAL: u32 = 15;
pub(super) const HC_TIMEOUT: u32 = 5;
pub(super) const HC_HEALTHY: u32 = 2;
pub(super) const HC_UNHEALTHY: u32 = 2;
pub(super) const HC_PATH: &str = "/";
const HC_PATH_GRPC: &str = "/AWS.ALB/healthcheck";
pub(super) const HC_CODES: &str = "200";
const HC_CODES_GRPC: &str = "12";
const GRPC: &str = "GRPC";

/// The first value members set for a group-wide (exclusive) setting; a problem per disagreement.
fn exclusive<T: PartialEq + Clone + std::fmt::Debug>(
    members: &[Member],
    key: &str,
    get: impl Fn(&Member) -> Option<T>,
    problems: &mut Vec<String>,
) -> Option<T> {
    let mut first: Option<(&IngressKey, T)> = None;
    for m in members {
        let Some(v) = get(m) else { continue };
        match &first {
            None => first = Some((&m.key, v)),
            Some((who, f)) if *f != v => problems.push(format!(
                "conflicting {}: Ingress {who} has {f:?}, Ingress {} has {v:?}; make them equal or move one Ingress to another group",
                full_key(key),
                m.key
            )),
            Some(_) => {}
        }
    }
    first.map(|(_, v)| v)
}

/// The members' `load-balancer-attributes`, merged key by key as ALBC merges them: one
/// attribute with two values is a problem naming both Ingresses (the IngressClassParams' value is
/// already in every member's map, so it never conflicts).
fn merged_attributes(members: &[Member], problems: &mut Vec<String>) -> crate::lb::Attributes {
    let mut out = crate::lb::Attributes::new();
    let mut from: std::collections::BTreeMap<String, &IngressKey> = Default::default();
    for m in members {
        for (key, value) in m.settings.load_balancer_attributes.iter().flatten() {
            match out.get(key) {
                Some(have) if have != value => problems.push(format!(
                    "conflicting {} attribute {key}: Ingress {} has {have:?}, Ingress {} has {value:?}; make them \
                     equal, set it in the IngressClassParams, or move one Ingress to another group",
                    full_key(k::LOAD_BALANCER_ATTRIBUTES),
                    from[key],
                    m.key
                )),
                Some(_) => {}
                None => {
                    out.insert(key.clone(), value.clone());
                    from.insert(key.clone(), &m.key);
                }
            }
        }
    }
    out
}

/// Shared state of one build.
struct Build<'a> {
    ctx: &'a BuildContext,
    members: &'a [Member],
    stack_id: String,
    group_tags: Tags,
    ip_address_type: LbIpAddressType,
    problems: Vec<String>,
    warnings: Vec<String>,
}

impl Build<'_> {
    fn tagger(&self) -> Tagger<'_> {
        Tagger {
            prefix: INGRESS_TAG_PREFIX,
            cluster: &self.ctx.cluster_name,
            stack_id: &self.stack_id,
            default_tags: &self.ctx.default_tags,
            defaults_low: self.ctx.default_tags_low_priority,
        }
    }

    fn member_tags(&self, key: &IngressKey) -> Tags {
        self.members.iter().find(|m| m.key == *key).map(|m| m.settings.backend.tags.clone()).unwrap_or_default()
    }
}

/// Builds the stack of `group` from its ordered `members` and their `plan`; all problems together.
pub fn build_group_stack(
    group: &GroupId,
    members: &[Member],
    plan: &GroupPlan,
    ctx: &BuildContext,
) -> Result<IngressStack, BuildError> {
    let stack_id = group.stack_id();
    let explicit = matches!(group, GroupId::Explicit(_));
    let mut problems = Vec::new();
    if members.is_empty() {
        problems.push(format!("IngressGroup {stack_id} has no members; nothing to build"));
    }
    let name = exclusive(members, k::LOAD_BALANCER_NAME, |m| m.settings.load_balancer_name.clone(), &mut problems);
    let scheme = exclusive(members, k::SCHEME, |m| m.settings.scheme, &mut problems).unwrap_or(ctx.default_scheme);
    let ip_address_type = exclusive(members, k::IP_ADDRESS_TYPE, |m| m.settings.ip_address_type, &mut problems)
        .unwrap_or(LbIpAddressType::Ipv4);
    let custom_sgs = exclusive(
        members,
        k::SECURITY_GROUPS,
        |m| m.settings.security_groups.clone().filter(|v| !v.is_empty()),
        &mut problems,
    );
    // As ALBC: read (and compared) only with custom security groups, the only case it decides.
    let manage_backend = match custom_sgs {
        Some(_) => exclusive(
            members,
            k::MANAGE_BACKEND_SG_RULES,
            |m| m.settings.manage_backend_security_group_rules,
            &mut problems,
        ),
        None => None,
    };
    let attributes = merged_attributes(members, &mut problems);
    let mut warnings = plan.warnings.clone();
    let customer_owned_ipv4_pool =
        exclusive(members, k::CUSTOMER_OWNED_IPV4_POOL, |m| m.settings.customer_owned_ipv4_pool.clone(), &mut problems);
    let ipv4_ipam_pool = exclusive(members, k::IPAM_IPV4_POOL_ID, |m| m.settings.ipv4_ipam_pool.clone(), &mut problems);
    if let Some(have) = &ctx.existing
        && have.customer_owned_ipv4_pool != customer_owned_ipv4_pool
    {
        let shown = |p: &Option<String>| p.as_deref().map_or("none".to_string(), |x| format!("{x:?}"));
        warnings.push(format!(
            "IngressGroup {stack_id}: {} asks for pool {} but the existing load balancer was created with {}; AWS \
             cannot change the customer-owned pool of a load balancer, so it keeps {}. To move it, delete the \
             group's Ingresses and create them again (the load balancer and its DNS name are replaced)",
            full_key(k::CUSTOMER_OWNED_IPV4_POOL),
            shown(&customer_owned_ipv4_pool),
            shown(&have.customer_owned_ipv4_pool),
            shown(&have.customer_owned_ipv4_pool),
        ));
    }
    // As ALBC: a name (on any member) wins, and the ARNs are then not compared.
    let acl_name = exclusive(members, k::WAFV2_ACL_NAME, |m| m.settings.wafv2_acl_name.clone(), &mut problems);
    let acl_arn = match acl_name {
        Some(_) => members.iter().find_map(|m| m.settings.wafv2_acl_arn.clone()),
        None => exclusive(members, k::WAFV2_ACL_ARN, |m| m.settings.wafv2_acl_arn.clone(), &mut problems),
    };
    if acl_arn.is_some() && acl_name.is_some() {
        warnings.push(format!(
            "IngressGroup {stack_id}: both {} and {} are set; the name is used, the ARN ignored (as ALBC)",
            full_key(k::WAFV2_ACL_ARN),
            full_key(k::WAFV2_ACL_NAME)
        ));
    }
    let extras = WantedExtras {
        enforce_inbound_rules_on_private_link: None,
        minimum_capacity_units: exclusive(
            members,
            k::MINIMUM_CAPACITY,
            |m| m.settings.minimum_capacity_units,
            &mut problems,
        ),
        // ALBC: a name (annotation or IngressClassParams) wins over any ARN.
        web_acl: acl_name
            .as_deref()
            .map(WebAclWanted::from_name)
            .or_else(|| acl_arn.as_deref().map(WebAclWanted::from_arn)),
        waf_classic_acl: exclusive(members, k::WAF_ACL_ID, |m| m.settings.waf_classic_acl_id.clone(), &mut problems)
            .as_deref()
            .map(WafClassicWanted::from_id),
        shield_protection: exclusive(
            members,
            k::SHIELD_ADVANCED_PROTECTION,
            |m| m.settings.shield_advanced_protection,
            &mut problems,
        ),
    };
    // Group tags: every member's `tags`, one value per key.
    let mut group_tags = Tags::new();
    let mut tag_owner: BTreeMap<String, &IngressKey> = BTreeMap::new();
    for m in members {
        problems.extend(external_tag_problems(
            &m.settings.backend.tags,
            ctx,
            &full_key(k::TAGS),
            &format!("Ingress {}", m.key),
        ));
        for (key, v) in &m.settings.backend.tags {
            match group_tags.get(key) {
                Some(prev) if prev != v => problems.push(format!(
                    "conflicting tag {key} in {}: Ingress {} has {prev:?}, Ingress {} has {v:?}; make them equal",
                    full_key(k::TAGS),
                    tag_owner[key],
                    m.key
                )),
                Some(_) => {}
                None => {
                    group_tags.insert(key.clone(), v.clone());
                    tag_owner.insert(key.clone(), &m.key);
                }
            }
        }
    }
    let mut b = Build { ctx, members, stack_id, group_tags, ip_address_type, problems, warnings };

    // Subnets: ALBs need two Availability Zones.
    let mut subnets: Vec<_> = ctx.subnets.iter().collect();
    subnets.sort_by(|x, y| x.id.cmp(&y.id));
    let zones: BTreeSet<&str> = subnets.iter().map(|s| s.availability_zone.as_str()).collect();
    if zones.len() < 2 {
        b.problems.push(format!(
            "an ALB needs subnets in at least two Availability Zones, found {} ({}); set {} or tag more subnets for discovery",
            zones.len(),
            if subnets.is_empty() {
                "no subnets".to_string()
            } else {
                subnets.iter().map(|s| format!("{} in {}", s.id, s.availability_zone)).collect::<Vec<_>>().join(", ")
            },
            full_key(k::SUBNETS)
        ));
    }
    let dualstack = matches!(ip_address_type, LbIpAddressType::Dualstack | LbIpAddressType::DualstackWithoutPublicIpv4);
    if dualstack && !ctx.ipv6_available {
        b.problems.push(format!(
            "{} {:?} needs a VPC with IPv6 CIDR blocks",
            full_key(k::IP_ADDRESS_TYPE),
            ip_address_type.as_aws()
        ));
    }

    // Security groups.
    let custom = custom_sgs.map(|ids| CustomGroups {
        all_ids: ids.iter().all(|x| x.starts_with("sg-")),
        ids,
        annotation: full_key(k::SECURITY_GROUPS),
        manage_backend_annotation: full_key(k::MANAGE_BACKEND_SG_RULES),
    });
    let sg_mode = managed_or_custom(custom, manage_backend.unwrap_or(false), ctx, &mut b.problems);
    let frontend_security_group = match sg_mode {
        SgMode::Managed { .. } => Some(frontend_security_group(&b, plan, explicit, dualstack)),
        _ => None,
    };
    let security_groups = load_balancer_security_groups(&sg_mode, ctx);
    let backend_security_group_used = uses_backend_security_group(&security_groups, ctx);

    // Target groups first: rules refer to them by name.
    let mut target_groups = Vec::new();
    let mut bindings = Vec::new();
    let mut tg_names: BTreeMap<&TargetGroupKey, String> = BTreeMap::new();
    for backend in &plan.target_groups {
        if let Some((tg, binding)) = target_group(&mut b, backend, sg_mode.source()) {
            tg_names.insert(&backend.key, tg.name.clone());
            target_groups.push(tg);
            bindings.push(binding);
        }
    }
    let listeners = listeners(&mut b, plan, &tg_names);

    let lb_name = match name {
        Some(n) if naming::valid_custom_name(&n) => n,
        Some(n) => {
            b.problems.push(format!(
                "{} {n:?} is not a valid load balancer name: {}",
                full_key(k::LOAD_BALANCER_NAME),
                naming::CUSTOM_NAME_HINT
            ));
            n
        }
        None => naming::ingress_load_balancer_name(&ctx.cluster_name, explicit, &b.stack_id, scheme.as_aws()),
    };
    if !b.problems.is_empty() {
        let mut seen = BTreeSet::new();
        let problems = b.problems.into_iter().filter(|p| seen.insert(p.clone())).collect();
        return Err(BuildError { problems });
    }
    let load_balancer = LoadBalancer {
        name: lb_name,
        lb_type: LbType::Application,
        scheme,
        ip_address_type,
        subnets: subnets.iter().map(|s| SubnetMapping::plain(&s.id)).collect(),
        security_groups,
        attributes,
        tags: b.tagger().tags(RESOURCE_LOAD_BALANCER, &b.group_tags),
        customer_owned_ipv4_pool,
        ipv4_ipam_pool,
        ipv6_source_nat: None,
    };
    Ok(IngressStack {
        stack: Stack { id: b.stack_id.clone(), load_balancer, frontend_security_group, target_groups, listeners },
        bindings,
        backend_security_group_used,
        extras,
        warnings: b.warnings,
    })
}

fn frontend_security_group(b: &Build<'_>, plan: &GroupPlan, explicit: bool, dualstack: bool) -> SecurityGroup {
    let mut ingress = BTreeSet::new();
    for l in &plan.listeners {
        let port = i32::from(l.port);
        let rule =
            |source| IngressRule { protocol: "tcp".into(), from_port: port, to_port: port, source, description: None };
        ingress.extend(l.inbound_cidrs_v4.iter().map(|c| rule(RuleSource::Cidr(c.to_string()))));
        if dualstack {
            ingress.extend(l.inbound_cidrs_v6.iter().map(|c| rule(RuleSource::Ipv6Cidr(c.to_string()))));
        }
        ingress.extend(l.prefix_lists.iter().map(|p| rule(RuleSource::PrefixList(p.clone()))));
    }
    SecurityGroup {
        name: naming::ingress_frontend_security_group_name(&b.ctx.cluster_name, explicit, &b.stack_id),
        description: FRONTEND_SG_DESCRIPTION.to_string(),
        vpc_id: b.ctx.vpc_id.clone(),
        ingress: ingress.into_iter().collect(),
        tags: b.tagger().tags(RESOURCE_MANAGED_SECURITY_GROUP, &b.group_tags),
    }
}

fn port_text(p: &ServicePort) -> String {
    match p {
        ServicePort::Number(n) => n.to_string(),
        ServicePort::Name(s) => s.clone(),
    }
}

fn target_group(
    b: &mut Build<'_>,
    backend: &TargetGroupBackend,
    sg_source: Option<&str>,
) -> Option<(TargetGroup, TargetGroupBindingTemplate)> {
    let key = &backend.key;
    let s = &backend.settings;
    let svc_key = format!("{}/{}", key.backend.namespace, key.backend.service);
    let at = format!("Ingress {}, backend Service {svc_key} port {}", key.ingress, port_text(&key.backend.port));
    let Some(view) = &backend.service else {
        b.problems.push(format!("{at}: the Service does not exist; create it or change the backend"));
        return None;
    };
    let Some(number) = view.port_number(&key.backend.port) else {
        b.problems.push(format!("{at}: the Service has no such port"));
        return None;
    };
    let target_type = s.target_type.unwrap_or(b.ctx.default_target_type);
    let instance = target_type == TargetType::Instance;
    let protocol = s.backend_protocol.unwrap_or(Protocol::Http);
    let version = s.backend_protocol_version.clone().unwrap_or_else(|| "HTTP1".into());
    let grpc = version == GRPC;
    // Instance targets: every eligible node on the Service port's NodePort (ALBC).
    let target_port = if instance {
        match view.node_ports.get(&number) {
            Some(np) => IntOrString::Int(i32::from(*np)),
            None => {
                b.problems.push(format!(
                    "{at}: the port has no nodePort, and target type instance registers the nodes on it. Fix: make \
                     the Service type NodePort (or LoadBalancer with node ports allocated), or set annotation {}: ip",
                    full_key(k::TARGET_TYPE)
                ));
                return None;
            }
        }
    } else {
        view.target_port(number)
    };
    let tg_port = match &target_port {
        IntOrString::Int(p) => match u16::try_from(*p) {
            Ok(p) if p > 0 => p,
            _ => {
                b.problems.push(format!("{at}: targetPort {p} is not a port from 1 to 65535"));
                return None;
            }
        },
        IntOrString::String(_) => 1,
    };
    if view.ipv6
        && !matches!(b.ip_address_type, LbIpAddressType::Dualstack | LbIpAddressType::DualstackWithoutPublicIpv4)
    {
        b.problems.push(format!(
            "{at}: the Service's ipFamilies include IPv6, which needs {}: dualstack",
            full_key(k::IP_ADDRESS_TYPE)
        ));
    }
    let hc = &s.health_check;
    let hc_port = match &hc.port {
        None | Some(HealthCheckPortSetting::TrafficPort) => HealthCheckPort::TrafficPort,
        Some(HealthCheckPortSetting::Port(p)) => HealthCheckPort::Port(*p),
        Some(HealthCheckPortSetting::Named(n)) => {
            let found = view.port_number(&ServicePort::Name(n.clone())).map(|p| match instance {
                true => view.node_ports.get(&p).map_or(IntOrString::Int(0), |np| IntOrString::Int(i32::from(*np))),
                false => view.target_port(p),
            });
            match found {
                Some(IntOrString::Int(t)) if (1..=65535).contains(&t) => HealthCheckPort::Port(t as u16),
                Some(_) if instance => {
                    b.problems.push(format!(
                        "{at}: {} {n:?} names a Service port without a nodePort; instance targets are health-checked on node ports",
                        full_key(k::HC_PORT)
                    ));
                    return None;
                }
                Some(_) => {
                    b.problems.push(format!(
                        "{at}: {} {n:?} names a Service port whose targetPort is not a number; ip targets need a numeric health-check port",
                        full_key(k::HC_PORT)
                    ));
                    return None;
                }
                None => {
                    b.problems.push(format!(
                        "{at}: {} {n:?} is not the name of a port of Service {svc_key}",
                        full_key(k::HC_PORT)
                    ));
                    return None;
                }
            }
        }
    };
    let health_check = HealthCheck {
        protocol: hc.protocol.unwrap_or(protocol),
        port: hc_port,
        path: Some(hc.path.clone().unwrap_or_else(|| if grpc { HC_PATH_GRPC } else { HC_PATH }.to_string())),
        success_codes: Some(
            hc.success_codes.clone().unwrap_or_else(|| if grpc { HC_CODES_GRPC } else { HC_CODES }.to_string()),
        ),
        interval_seconds: hc.interval_seconds.unwrap_or(HC_INTERVAL),
        timeout_seconds: hc.timeout_seconds.unwrap_or(HC_TIMEOUT),
        healthy_threshold: hc.healthy_threshold.unwrap_or(HC_HEALTHY),
        unhealthy_threshold: hc.unhealthy_threshold.unwrap_or(HC_UNHEALTHY),
    };
    let port_as_written = port_text(&key.backend.port);
    let control_port = s.target_control_ports.get(&(key.backend.service.clone(), port_as_written.clone())).copied();
    let name = naming::ingress_target_group_name(&IngressTargetGroupNameInputs {
        cluster: &b.ctx.cluster_name,
        group_id: &b.stack_id,
        ingress_namespace: &key.ingress.namespace,
        ingress_name: &key.ingress.name,
        service_namespace: &key.backend.namespace,
        service_name: &key.backend.service,
        service_uid: &view.uid,
        service_port: &port_as_written,
        target_group_port: tg_port,
        target_type: if instance { "instance" } else { "ip" },
        protocol: protocol.as_aws(),
        protocol_version: &version,
        target_control_port: control_port,
    });
    b.problems.extend(external_tag_problems(&s.tags, b.ctx, &full_key(k::TAGS), &at));
    let ip_type = if view.ipv6 { TgIpAddressType::Ipv6 } else { TgIpAddressType::Ipv4 };
    let networking = sg_source.map(|source| {
        let tcp = |port: IntOrString| NetworkingIngressRule {
            from: vec![security_group_peer(source)],
            ports: vec![NetworkingPort { protocol: Some(NetworkingProtocol::TCP), port: Some(port) }],
        };
        let mut ingress = vec![tcp(target_port.clone())];
        if let HealthCheckPort::Port(p) = hc_port {
            ingress.push(tcp(IntOrString::Int(i32::from(p))));
        }
        // The target optimizer's agent in the pod takes the ALB's control traffic there.
        if let Some(p) = control_port {
            ingress.push(tcp(IntOrString::Int(i32::from(p))));
        }
        TargetGroupBindingNetworking { ingress }
    });
    let binding = TargetGroupBindingTemplate {
        namespace: key.backend.namespace.clone(),
        name: name.clone(),
        spec: TargetGroupBindingSpec {
            target_group_name: Some(name.clone()),
            target_type: Some(target_type),
            node_selector: s
                .target_node_labels
                .clone()
                .filter(|l| instance && !l.is_empty())
                .map(|labels| LabelSelector { match_labels: Some(labels), match_expressions: None }),
            service_ref: ServiceReference {
                name: key.backend.service.clone(),
                port: match &key.backend.port {
                    ServicePort::Number(n) => IntOrString::Int(*n),
                    ServicePort::Name(s) => IntOrString::String(s.clone()),
                },
            },
            networking,
            ip_address_type: Some(if view.ipv6 {
                TargetGroupIpAddressType::Ipv6
            } else {
                TargetGroupIpAddressType::Ipv4
            }),
            vpc_id: Some(b.ctx.vpc_id.clone()),
            multi_cluster_target_group: s.multi_cluster_target_group.filter(|x| *x),
            ..Default::default()
        },
    };
    let tg = TargetGroup {
        name,
        protocol,
        protocol_version: Some(version),
        port: tg_port,
        target_type: if instance { "instance" } else { "ip" }.into(),
        ip_address_type: ip_type,
        vpc_id: b.ctx.vpc_id.clone(),
        health_check,
        attributes: s.target_group_attributes.clone().unwrap_or_default(),
        tags: b.tagger().tags(&key.resource_id(), &s.tags),
        target_control_port: control_port,
    };
    Some((tg, binding))
}

fn listeners(b: &mut Build<'_>, plan: &GroupPlan, tg_names: &BTreeMap<&TargetGroupKey, String>) -> Vec<Listener> {
    let mut out = Vec::new();
    for (cfg, lr) in plan.listeners.iter().zip(&plan.rules) {
        let https = cfg.protocol == Protocol::Https;
        if https && cfg.certificates.is_empty() {
            let who: Vec<String> =
                cfg.members.iter().filter_map(|&i| b.members.get(i)).map(|m| m.key.to_string()).collect();
            b.problems.push(format!(
                "HTTPS listener port {} (Ingress {}) has no certificate: set {} or add TLS hosts with ACM certificates",
                cfg.port,
                who.join(", "),
                full_key(k::CERTIFICATE_ARN)
            ));
        }
        let default_actions = match &lr.default_from {
            Some(who) => actions(b, &lr.default_actions, who, tg_names),
            None => actions(b, &lr.default_actions, &IngressKey::default(), tg_names),
        };
        let mut rules = Vec::new();
        for r in &lr.rules {
            let conditions = conditions(b, &r.conditions, &r.ingress, cfg.port);
            let actions = actions(b, &r.actions, &r.ingress, tg_names);
            let mut tags = b.tagger().tags(&format!("{}:{}", cfg.port, r.priority), &b.member_tags(&r.ingress));
            tag_oidc_digest(&mut tags, &actions);
            rules.push(Rule { priority: r.priority, conditions, actions, transforms: r.transforms.clone(), tags });
        }
        let mut tags = b.tagger().tags(&cfg.port.to_string(), &b.group_tags);
        tag_oidc_digest(&mut tags, &default_actions);
        out.push(Listener {
            port: cfg.port,
            protocol: cfg.protocol,
            certificates: if https { cfg.certificates.clone() } else { Vec::new() },
            ssl_policy: if https { cfg.ssl_policy.clone().or(Some(b.ctx.default_ssl_policy.clone())) } else { None },
            alpn_policy: None,
            mutual_authentication: if https { cfg.mutual_authentication.clone() } else { None },
            default_actions,
            attributes: cfg.attributes.clone(),
            tags,
            rules,
        });
    }
    out
}

/// Rules and listeners authenticating with OIDC carry the digest of their client credentials.
fn tag_oidc_digest(tags: &mut Tags, actions: &[Action]) {
    if let Some(d) = oidc_secret_digest(actions) {
        tags.insert(OIDC_SECRET_DIGEST_TAG.to_string(), d);
    }
}

/// The rule's conditions, with their regex values checked against AWS's limits.
fn conditions(b: &mut Build<'_>, cs: &[Condition], who: &IngressKey, port: u16) -> Vec<Condition> {
    for c in cs {
        match c {
            Condition::HostHeaderRegex(v) => check_regex_values(b, who, port, "host-header", v),
            Condition::PathPatternRegex(v) => check_regex_values(b, who, port, "path-pattern", v),
            Condition::HttpHeaderRegex { name, values } => {
                check_regex_values(b, who, port, &format!("http-header {name}"), values)
            }
            _ => {}
        }
    }
    cs.to_vec()
}

/// AWS's limits on regex values, checked before any AWS call (an invalid regex would otherwise
/// fail CreateRule halfway through a deployment).
fn check_regex_values(b: &mut Build<'_>, who: &IngressKey, port: u16, field: &str, values: &[String]) {
    let at = format!("Ingress {who}, listener port {port}, {field} regex condition");
    let source = format!(
        "{} or regexValues in {}",
        full_key(k::USE_REGEX_PATH_MATCH),
        full_key(&format!("{}<name>", k::CONDITIONS_PREFIX))
    );
    if values.len() > VALUES_PER_CONDITION_MAX {
        b.problems.push(format!(
            "{at}: {} regex values {values:?}, AWS accepts at most {VALUES_PER_CONDITION_MAX} per condition; split them \
             over several rules ({source})",
            values.len()
        ));
    }
    for v in values {
        if let Some(problem) = regex_value_problem(v) {
            b.problems.push(format!("{at}: regex {v:?} {problem}; fix it in {source}"));
        }
    }
}

fn actions(
    b: &mut Build<'_>,
    actions: &[RuleAction],
    who: &IngressKey,
    tg_names: &BTreeMap<&TargetGroupKey, String>,
) -> Vec<Action> {
    let mut out = Vec::new();
    for a in actions {
        out.push(match a {
            RuleAction::Forward { target_groups, stickiness_seconds } => {
                let mut tgs = Vec::new();
                for t in target_groups {
                    let target_group = match &t.target {
                        ForwardTarget::Arn(arn) => TargetGroupRef::Arn(arn.clone()),
                        ForwardTarget::Name(n) => TargetGroupRef::Name(n.clone()),
                        ForwardTarget::Service(backend) => {
                            let key = TargetGroupKey { ingress: who.clone(), backend: backend.clone() };
                            match tg_names.get(&key) {
                                Some(n) => TargetGroupRef::Name(n.clone()),
                                // The target group failed to build; its problem is already listed.
                                None => continue,
                            }
                        }
                    };
                    tgs.push(WeightedTargetGroup { target_group, weight: t.weight });
                }
                Action::Forward { target_groups: tgs, stickiness_seconds: *stickiness_seconds }
            }
            RuleAction::Redirect { protocol, host, port, path, query, status_code } => Action::Redirect {
                protocol: protocol.clone(),
                host: host.clone(),
                port: port.clone(),
                path: path.clone(),
                query: query.clone(),
                status_code: status_code.clone(),
            },
            RuleAction::FixedResponse { status_code, content_type, message_body } => Action::FixedResponse {
                status_code: status_code.clone(),
                content_type: content_type.clone(),
                message_body: message_body.clone(),
            },
            RuleAction::AuthenticateOidc(auth) => {
                let secret = (who.namespace.clone(), auth.idp.secret_name.clone());
                let Some(cred) = b.ctx.oidc_credentials.get(&secret) else {
                    b.problems.push(format!(
                        "Ingress {who}: Secret {}/{} named in {} is missing or lacks clientID / clientSecret",
                        secret.0,
                        secret.1,
                        full_key(k::AUTH_IDP_OIDC)
                    ));
                    continue;
                };
                Action::AuthenticateOidc(AuthenticateOidc {
                    issuer: auth.idp.issuer.clone(),
                    authorization_endpoint: auth.idp.authorization_endpoint.clone(),
                    token_endpoint: auth.idp.token_endpoint.clone(),
                    user_info_endpoint: auth.idp.user_info_endpoint.clone(),
                    client_id: cred.client_id.clone(),
                    client_secret: Some(cred.client_secret.clone()),
                    client_secret_digest: Some(cred.digest.clone()),
                    scope: Some(auth.scope.clone()),
                    session_cookie_name: Some(auth.session_cookie.clone()),
                    session_timeout_seconds: Some(auth.session_timeout_seconds),
                    on_unauthenticated_request: Some(auth.on_unauthenticated_request.clone()),
                    extra_params: auth.idp.extra_params.clone(),
                })
            }
            RuleAction::JwtValidation(jwt) => Action::JwtValidation(jwt.clone()),
            RuleAction::AuthenticateCognito(auth) => Action::AuthenticateCognito(AuthenticateCognito {
                user_pool_arn: auth.idp.user_pool_arn.clone(),
                user_pool_client_id: auth.idp.user_pool_client_id.clone(),
                user_pool_domain: auth.idp.user_pool_domain.clone(),
                scope: Some(auth.scope.clone()),
                session_cookie_name: Some(auth.session_cookie.clone()),
                session_timeout_seconds: Some(auth.session_timeout_seconds),
                on_unauthenticated_request: Some(auth.on_unauthenticated_request.clone()),
                extra_params: auth.idp.extra_params.clone(),
            }),
        });
    }
    out
}

#[cfg(test)]
#[path = "build_tests.rs"]
mod tests;

/// What to look up in AWS before [`build_group_stack`]. Exclusive settings: members agree
/// (checked by `conflicts`), the first that sets one wins. Subnets: the IngressClassParams tags,
/// else the annotation, else discovery, for the members' scheme (else `default_scheme`; unlike a
/// Service, an existing load balancer's scheme is not consulted), in two AZs unless gate
/// `ALBSingleSubnet`.
pub fn context_needs(
    members: &[Member],
    default_scheme: crate::lb::Scheme,
    alb_single_subnet: bool,
) -> crate::lb::build::ContextNeeds {
    use crate::lb::subnets::SubnetSelector;
    let subnets = members.iter().find_map(|m| m.settings.subnets.clone());
    let selector = match members.iter().find_map(|m| m.settings.subnet_tags.clone()) {
        Some(tags) => SubnetSelector::Tags(tags),
        None => SubnetSelector::from_annotation(subnets.map(|s| s.join(",")).as_deref()),
    };
    crate::lb::build::ContextNeeds {
        subnets: selector,
        scheme: members.iter().find_map(|m| m.settings.scheme).unwrap_or(default_scheme),
        min_azs: if alb_single_subnet { 1 } else { 2 },
        subnets_annotation: full_key(k::SUBNETS),
        security_group_names: members
            .iter()
            .find_map(|m| m.settings.security_groups.clone())
            .into_iter()
            .flatten()
            .filter(|g| !g.starts_with("sg-"))
            .collect(),
        security_groups_annotation: full_key(k::SECURITY_GROUPS),
    }
}
