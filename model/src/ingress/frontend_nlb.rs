//! The frontend NLB of an IngressGroup: `enable-frontend-nlb` puts a Network Load Balancer in
//! front of the group's ALB (static IPs, PrivateLink), each NLB listener forwarding TCP to a
//! target group of type `alb` whose one target is the ALB itself on one of its listener ports.
//! ALBC's `pkg/ingress/model_build_frontend_nlb.go`, whose names, tags and conflict rules we keep so
//! either controller adopts the other's NLB:
//!
//! - Per Ingress ([`parse`]): the 16 `frontend-nlb-*` annotations and `enable-frontend-nlb`.
//! - Per group ([`plan`], before any AWS call; a conflict fails the whole group): members that set
//!   `enable-frontend-nlb`, `frontend-nlb-scheme`, `-security-groups`, `-attributes` or `-tags`
//!   must agree (subnets and EIP allocations as sets); scheme `--default-load-balancer-scheme`
//!   unless set (not the ALB's, as ALBC); EIPs on internet-facing NLBs only. Listeners: per
//!   member, `frontend-nlb-listener-port-mapping` (`<nlb port>=<alb port>`, only ALB ports that
//!   member listens on), else each of its ALB ports on the same NLB port; members sharing an NLB
//!   port must map it to the same ALB port, and health-check values set explicitly must agree.
//! - Built ([`build`]) once the ALB stack is known: name = the ALB's name cut to 28 characters +
//!   `-nlb`; the ALB's IP address type; the ALB's security groups unless
//!   `frontend-nlb-security-groups`; tags `frontend-nlb-tags`, else the ALB's user tags; resource
//!   IDs `FrontendNlb`, `FrontendNlb-ls-TCP-<port>`, `FrontendNlb-tg-TCP-<port>`; target groups
//!   TCP on the NLB port, named by [`naming::ingress_frontend_nlb_target_group_name`], health
//!   check HTTP on the traffic port, `/`, `200`, 15 s / 5 s / 2 / 2 unless set.
//! - [`alb_target_changes`]: the ALB as the one target of each group (registered on the mapped
//!   ALB port), anything else there deregistered.
//!
//! Where we differ: ALBC compares one member's missing `frontend-nlb-attributes` with another's
//! map depending on their order; here only members that set it are compared.

use std::collections::{BTreeMap, BTreeSet};

// The ALB's health-check defaults are ALBC's frontend NLB defaults too.
use super::build::{HC_CODES, HC_HEALTHY, HC_INTERVAL, HC_PATH, HC_TIMEOUT, HC_UNHEALTHY};
use super::keys::{self as k, full_key};
use super::merge::{ListenerConfig, Member};
use crate::annotations::fields::{HealthCheckKeys, HealthCheckPortSetting, HealthCheckSettings, health_check};
use crate::annotations::{Reader, Unsupported};
use crate::lb::build::{BuildContext, BuildError, Tagger};
use crate::lb::naming;
use crate::lb::tags::INGRESS_TAG_PREFIX;
use crate::lb::{
    Action, Attributes, HealthCheck, HealthCheckPort, LbIpAddressType, LbType, Listener, LoadBalancer, Protocol,
    Scheme, Stack, Subnet, SubnetMapping, Tags, TargetGroup, TargetGroupRef, TgIpAddressType, WeightedTargetGroup,
};
use crate::service::annotation_fields::{DNS_POLICIES, DNS_POLICY_KEY};

/// `ingress.k8s.aws/resource` of the NLB; its listeners and target groups start with it.
pub const RESOURCE_FRONTEND_NLB: &str = "FrontendNlb";
/// The target type of the NLB's target groups.
pub const TARGET_TYPE_ALB: &str = "alb";

/// Whether an `ingress.k8s.aws/resource` value is part of the frontend NLB.
pub fn is_frontend_resource(resource_id: &str) -> bool {
    resource_id.starts_with(RESOURCE_FRONTEND_NLB)
}

/// The frontend-NLB annotations of one Ingress; `None` is absent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrontendNlbSettings {
    pub enable: Option<bool>,
    pub scheme: Option<Scheme>,
    pub subnets: Option<Vec<String>>,
    pub security_groups: Option<Vec<String>>,
    /// NLB listener port → ALB listener port.
    pub port_mapping: Option<BTreeMap<u16, u16>>,
    pub eip_allocations: Option<Vec<String>>,
    pub health_check: HealthCheckSettings,
    pub attributes: Option<Attributes>,
    pub tags: Option<Tags>,
}

const HEALTH_CHECK_KEYS: HealthCheckKeys = HealthCheckKeys {
    protocol: k::FRONTEND_NLB_HC_PROTOCOL,
    port: k::FRONTEND_NLB_HC_PORT,
    path: k::FRONTEND_NLB_HC_PATH,
    interval: k::FRONTEND_NLB_HC_INTERVAL,
    timeout: k::FRONTEND_NLB_HC_TIMEOUT,
    healthy_threshold: k::FRONTEND_NLB_HC_HEALTHY_THRESHOLD,
    unhealthy_threshold: k::FRONTEND_NLB_HC_UNHEALTHY_THRESHOLD,
    success_codes: k::FRONTEND_NLB_HC_SUCCESS_CODES,
    protocols: &[Protocol::Http, Protocol::Https],
    code_ranges: &[(200, 599)],
    codes_hint: "HTTP codes from 200 to 599, e.g. \"200\", \"200-399\" or \"200,302\"",
};

fn port(raw: &str) -> Option<u16> {
    raw.trim().parse::<u16>().ok().filter(|p| *p > 0)
}

/// Reads the frontend-NLB annotations; every invalid value is reported.
pub(super) fn parse(r: &mut Reader<'_>, unsupported: &mut Vec<Unsupported>) -> FrontendNlbSettings {
    let scheme = r
        .one_of(k::FRONTEND_NLB_SCHEME, &["internal", "internet-facing"])
        .map(|v| if v == "internal" { Scheme::Internal } else { Scheme::InternetFacing });
    let port_mapping = r.map(k::FRONTEND_NLB_LISTENER_PORT_MAPPING).and_then(|m| {
        let mut out = BTreeMap::new();
        for (nlb, alb) in &m {
            match (port(nlb), port(alb)) {
                (Some(n), Some(a)) => {
                    out.insert(n, a);
                }
                _ => {
                    let key = r.key(k::FRONTEND_NLB_LISTENER_PORT_MAPPING);
                    r.fail(key, format!("{nlb}={alb}"), "<NLB port>=<ALB listener port> pairs, ports from 1 to 65535");
                    return None;
                }
            }
        }
        Some(out)
    });
    let mut health_check = health_check(r, &HEALTH_CHECK_KEYS);
    if let Some(HealthCheckPortSetting::Named(name)) = &health_check.port {
        // The target is the ALB: there is no Service port to resolve a name against.
        let key = r.key(k::FRONTEND_NLB_HC_PORT);
        r.fail(key, name.clone(), "\"traffic-port\" or a port from 1 to 65535");
        health_check.port = None;
    }
    let attributes = r.map(k::FRONTEND_NLB_ATTRIBUTES);
    if let Some(p) =
        attributes.as_ref().and_then(|a| a.get(DNS_POLICY_KEY)).filter(|p| !DNS_POLICIES.contains(&p.as_str()))
    {
        let raw = format!("{DNS_POLICY_KEY}={p}");
        let key = r.key(k::FRONTEND_NLB_ATTRIBUTES);
        r.fail(key, raw, format!("{DNS_POLICY_KEY} one of {}", DNS_POLICIES.join(", ")));
    }
    let tags = r
        .raw(k::FRONTEND_NLB_TAGS)
        .is_some()
        .then(|| crate::annotations::fields::user_tags(r, k::FRONTEND_NLB_TAGS, unsupported));
    FrontendNlbSettings {
        enable: r.bool(k::ENABLE_FRONTEND_NLB),
        scheme,
        subnets: r.list(k::FRONTEND_NLB_SUBNETS),
        security_groups: r.list(k::FRONTEND_NLB_SECURITY_GROUPS),
        port_mapping,
        eip_allocations: r.list(k::FRONTEND_NLB_EIP_ALLOCATIONS),
        health_check,
        attributes,
        tags,
    }
}

/// One listener of the frontend NLB.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrontendListener {
    pub port: u16,
    /// The ALB listener port its target group sends to.
    pub alb_port: u16,
    pub health_check: HealthCheck,
}

/// What the group asks of its frontend NLB, decided before any AWS call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrontendNlbPlan {
    pub scheme: Scheme,
    /// Subnet IDs or `Name` tags; `None`: discovered for the scheme.
    pub subnets: Option<Vec<String>>,
    /// Paired with the subnets in their order (internet-facing only).
    pub eip_allocations: Vec<String>,
    /// IDs or names; `None`: the ALB's security groups.
    pub security_groups: Option<Vec<String>>,
    pub attributes: Attributes,
    /// `None`: the ALB's user tags.
    pub tags: Option<Tags>,
    /// By port.
    pub listeners: Vec<FrontendListener>,
}

/// The value members agree on (compared by `same`), a problem per disagreement.
fn agreed<T: Clone + std::fmt::Debug>(
    members: &[Member],
    key: &str,
    get: impl Fn(&Member) -> Option<T>,
    same: impl Fn(&T, &T) -> bool,
    problems: &mut Vec<String>,
) -> Option<T> {
    let mut first: Option<(&Member, T)> = None;
    for m in members {
        let Some(v) = get(m) else { continue };
        match &first {
            None => first = Some((m, v)),
            Some((who, f)) if !same(f, &v) => problems.push(format!(
                "conflicting {}: Ingress {} has {f:?}, Ingress {} has {v:?}; make them equal or move one Ingress to \
                 another group",
                full_key(key),
                who.key,
                m.key
            )),
            Some(_) => {}
        }
    }
    first.map(|(_, v)| v)
}

fn as_set(v: &[String]) -> BTreeSet<&String> {
    v.iter().collect()
}

/// One member's health check of an NLB port, with which fields it set.
struct MemberCheck {
    check: HealthCheck,
    explicit: BTreeSet<&'static str>,
}

fn member_check(s: &HealthCheckSettings) -> MemberCheck {
    let mut explicit = BTreeSet::new();
    let mut mark = |set: bool, name: &'static str| {
        if set {
            explicit.insert(name);
        }
    };
    mark(s.port.is_some(), "port");
    mark(s.protocol.is_some(), "protocol");
    mark(s.path.is_some(), "path");
    mark(s.success_codes.is_some(), "success codes");
    mark(s.interval_seconds.is_some(), "interval");
    mark(s.timeout_seconds.is_some(), "timeout");
    mark(s.healthy_threshold.is_some(), "healthy threshold");
    mark(s.unhealthy_threshold.is_some(), "unhealthy threshold");
    let port = match &s.port {
        Some(HealthCheckPortSetting::Port(p)) => HealthCheckPort::Port(*p),
        _ => HealthCheckPort::TrafficPort,
    };
    MemberCheck {
        check: HealthCheck {
            protocol: s.protocol.unwrap_or(Protocol::Http),
            port,
            path: Some(s.path.clone().unwrap_or_else(|| HC_PATH.into())),
            success_codes: Some(s.success_codes.clone().unwrap_or_else(|| HC_CODES.into())),
            interval_seconds: s.interval_seconds.unwrap_or(HC_INTERVAL),
            timeout_seconds: s.timeout_seconds.unwrap_or(HC_TIMEOUT),
            healthy_threshold: s.healthy_threshold.unwrap_or(HC_HEALTHY),
            unhealthy_threshold: s.unhealthy_threshold.unwrap_or(HC_UNHEALTHY),
        },
        explicit,
    }
}

fn field(h: &HealthCheck, name: &str) -> String {
    match name {
        "port" => format!("{:?}", h.port),
        "protocol" => h.protocol.as_aws().to_string(),
        "path" => format!("{:?}", h.path),
        "success codes" => format!("{:?}", h.success_codes),
        "interval" => h.interval_seconds.to_string(),
        "timeout" => h.timeout_seconds.to_string(),
        "healthy threshold" => h.healthy_threshold.to_string(),
        _ => h.unhealthy_threshold.to_string(),
    }
}

fn set_field(h: &mut HealthCheck, from: &HealthCheck, name: &str) {
    match name {
        "port" => h.port = from.port,
        "protocol" => h.protocol = from.protocol,
        "path" => h.path = from.path.clone(),
        "success codes" => h.success_codes = from.success_codes.clone(),
        "interval" => h.interval_seconds = from.interval_seconds,
        "timeout" => h.timeout_seconds = from.timeout_seconds,
        "healthy threshold" => h.healthy_threshold = from.healthy_threshold,
        _ => h.unhealthy_threshold = from.unhealthy_threshold,
    }
}

/// The group's frontend NLB, `None` when no member enables it; all problems together.
pub fn plan(
    members: &[Member],
    listeners: &[ListenerConfig],
    default_scheme: Scheme,
) -> Result<Option<FrontendNlbPlan>, Vec<String>> {
    let mut problems = Vec::new();
    let fe = |m: &Member| m.settings.frontend_nlb.clone();
    let enable = agreed(members, k::ENABLE_FRONTEND_NLB, |m| fe(m).enable, |a, b| a == b, &mut problems);
    if enable != Some(true) {
        return if problems.is_empty() { Ok(None) } else { Err(problems) };
    }
    let scheme = agreed(members, k::FRONTEND_NLB_SCHEME, |m| fe(m).scheme, |a, b| a == b, &mut problems)
        .unwrap_or(default_scheme);
    let subnets =
        agreed(members, k::FRONTEND_NLB_SUBNETS, |m| fe(m).subnets, |a, b| as_set(a) == as_set(b), &mut problems);
    let eips = agreed(
        members,
        k::FRONTEND_NLB_EIP_ALLOCATIONS,
        |m| fe(m).eip_allocations,
        |a, b| as_set(a) == as_set(b),
        &mut problems,
    )
    .unwrap_or_default();
    if !eips.is_empty() && scheme != Scheme::InternetFacing {
        problems.push(format!(
            "{} needs an internet-facing frontend NLB, the scheme is {}; set {}: internet-facing or remove the \
             allocations",
            full_key(k::FRONTEND_NLB_EIP_ALLOCATIONS),
            scheme.as_aws(),
            full_key(k::FRONTEND_NLB_SCHEME)
        ));
    }
    if let Some(s) = subnets.as_ref().filter(|s| !eips.is_empty() && s.len() != eips.len()) {
        problems.push(format!(
            "{} has {} allocations for {} subnets in {}; give one per subnet",
            full_key(k::FRONTEND_NLB_EIP_ALLOCATIONS),
            eips.len(),
            s.len(),
            full_key(k::FRONTEND_NLB_SUBNETS)
        ));
    }
    let security_groups = agreed(
        members,
        k::FRONTEND_NLB_SECURITY_GROUPS,
        |m| fe(m).security_groups.filter(|v| !v.is_empty()),
        |a, b| a == b,
        &mut problems,
    );
    let attributes = agreed(members, k::FRONTEND_NLB_ATTRIBUTES, |m| fe(m).attributes, |a, b| a == b, &mut problems)
        .unwrap_or_default();
    let tags = agreed(members, k::FRONTEND_NLB_TAGS, |m| fe(m).tags, |a, b| a == b, &mut problems);

    // Listeners: each member's ALB ports, mapped, then merged by NLB port.
    struct Entry<'a> {
        member: &'a Member,
        alb_port: u16,
        check: MemberCheck,
    }
    let mut by_port: BTreeMap<u16, Vec<Entry<'_>>> = BTreeMap::new();
    for (i, m) in members.iter().enumerate() {
        let alb_ports: BTreeSet<u16> = listeners.iter().filter(|l| l.members.contains(&i)).map(|l| l.port).collect();
        let s = &m.settings.frontend_nlb;
        let pairs: Vec<(u16, u16)> = match &s.port_mapping {
            // Ports the member does not listen on are skipped, as ALBC.
            Some(map) => map.iter().filter(|(_, alb)| alb_ports.contains(alb)).map(|(n, a)| (*n, *a)).collect(),
            None => alb_ports.iter().map(|p| (*p, *p)).collect(),
        };
        for (nlb, alb) in pairs {
            by_port.entry(nlb).or_default().push(Entry {
                member: m,
                alb_port: alb,
                check: member_check(&s.health_check),
            });
        }
    }
    let mut out = Vec::new();
    for (port, entries) in &by_port {
        let first = &entries[0];
        let mut check = first.check.check.clone();
        let mut set_by: BTreeMap<&'static str, &Member> = BTreeMap::new();
        for e in entries {
            if e.alb_port != first.alb_port {
                problems.push(format!(
                    "frontend NLB port {port}: Ingress {} sends it to ALB port {}, Ingress {} to ALB port {}; one NLB \
                     port reaches one ALB port: fix {}",
                    first.member.key,
                    first.alb_port,
                    e.member.key,
                    e.alb_port,
                    full_key(k::FRONTEND_NLB_LISTENER_PORT_MAPPING)
                ));
            }
            for name in &e.check.explicit {
                match set_by.get(name) {
                    Some(who) if field(&check, name) != field(&e.check.check, name) => problems.push(format!(
                        "frontend NLB port {port}: conflicting health check {name}: Ingress {} has {}, Ingress {} has \
                         {}; make the frontend-nlb-healthcheck-* annotations equal",
                        who.key,
                        field(&check, name),
                        e.member.key,
                        field(&e.check.check, name)
                    )),
                    Some(_) => {}
                    None => {
                        set_field(&mut check, &e.check.check, name);
                        set_by.insert(name, e.member);
                    }
                }
            }
        }
        out.push(FrontendListener { port: *port, alb_port: first.alb_port, health_check: check });
    }
    if out.is_empty() {
        problems.push(format!(
            "{} is true but no ALB listener port is mapped to the NLB; fix {} so it names ports the group's ALB \
             listens on",
            full_key(k::ENABLE_FRONTEND_NLB),
            full_key(k::FRONTEND_NLB_LISTENER_PORT_MAPPING)
        ));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Some(FrontendNlbPlan {
        scheme,
        subnets,
        eip_allocations: eips,
        security_groups,
        attributes,
        tags,
        listeners: out,
    }))
}

/// The ALB's side of the frontend NLB, known once the ALB stack is built (and deployed: the
/// security groups are IDs).
pub struct AlbFacts<'a> {
    pub name: &'a str,
    pub ip_address_type: LbIpAddressType,
    /// The ALB's security group IDs.
    pub security_groups: &'a [String],
    /// The ALB's user tags (without the tracking tags).
    pub user_tags: &'a Tags,
}

/// The ALB as the one target of a frontend target group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlbTarget {
    pub target_group: String,
    pub port: u16,
}

/// The frontend NLB's stack and the ALB targets of its target groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrontendNlb {
    pub stack: Stack,
    pub targets: Vec<AlbTarget>,
}

/// ALBC's frontend NLB name: the ALB's cut to 28 characters, then `-nlb`.
pub fn frontend_nlb_name(alb_name: &str) -> String {
    format!("{}-nlb", &alb_name[..alb_name.len().min(28)])
}

/// Builds the frontend NLB of `stack_id` (`explicit`: a named group). `subnets` are the resolved
/// ones (named, in the annotation's order, or discovered); `security_groups` the resolved
/// `frontend-nlb-security-groups`, `None` for the ALB's.
pub fn build(
    plan: &FrontendNlbPlan,
    alb: &AlbFacts<'_>,
    stack_id: &str,
    explicit: bool,
    ctx: &BuildContext,
    subnets: &[Subnet],
    security_groups: Option<Vec<String>>,
) -> Result<FrontendNlb, BuildError> {
    if subnets.is_empty() {
        return Err(BuildError {
            problems: vec![format!(
                "the frontend NLB has no subnets; set {} or tag subnets for {} load balancers",
                full_key(k::FRONTEND_NLB_SUBNETS),
                plan.scheme.as_aws()
            )],
        });
    }
    if !plan.eip_allocations.is_empty() && plan.eip_allocations.len() != subnets.len() {
        return Err(BuildError {
            problems: vec![format!(
                "{} has {} allocations for the {} subnets of the frontend NLB; give one per subnet",
                full_key(k::FRONTEND_NLB_EIP_ALLOCATIONS),
                plan.eip_allocations.len(),
                subnets.len()
            )],
        });
    }
    let tagger = Tagger {
        prefix: INGRESS_TAG_PREFIX,
        cluster: &ctx.cluster_name,
        stack_id,
        default_tags: &ctx.default_tags,
        defaults_low: ctx.default_tags_low_priority,
    };
    let user_tags = plan.tags.clone().unwrap_or_else(|| alb.user_tags.clone());
    let mut target_groups = Vec::new();
    let mut listeners = Vec::new();
    let mut targets = Vec::new();
    for l in &plan.listeners {
        let hc_port = match &l.health_check.port {
            HealthCheckPort::TrafficPort => "traffic-port".to_string(),
            HealthCheckPort::Port(p) => p.to_string(),
        };
        let name = naming::ingress_frontend_nlb_target_group_name(&naming::FrontendNlbTargetGroupNameInputs {
            cluster: &ctx.cluster_name,
            explicit,
            group_id: stack_id,
            port: l.port,
            health_check_port: &hc_port,
            health_check_protocol: l.health_check.protocol.as_aws(),
        });
        target_groups.push(TargetGroup {
            name: name.clone(),
            protocol: Protocol::Tcp,
            protocol_version: None,
            port: l.port,
            target_type: TARGET_TYPE_ALB.into(),
            ip_address_type: TgIpAddressType::Ipv4,
            vpc_id: ctx.vpc_id.clone(),
            health_check: l.health_check.clone(),
            attributes: Attributes::new(),
            tags: tagger.tags(&format!("{RESOURCE_FRONTEND_NLB}-tg-TCP-{}", l.port), &user_tags),
            target_control_port: None,
        });
        listeners.push(Listener {
            port: l.port,
            protocol: Protocol::Tcp,
            certificates: Vec::new(),
            ssl_policy: None,
            alpn_policy: None,
            mutual_authentication: None,
            default_actions: vec![Action::Forward {
                target_groups: vec![WeightedTargetGroup {
                    target_group: TargetGroupRef::Name(name.clone()),
                    weight: None,
                }],
                stickiness_seconds: None,
            }],
            attributes: Attributes::new(),
            tags: tagger.tags(&format!("{RESOURCE_FRONTEND_NLB}-ls-TCP-{}", l.port), &user_tags),
            rules: Vec::new(),
        });
        targets.push(AlbTarget { target_group: name, port: l.alb_port });
    }
    let subnet_mappings = subnets
        .iter()
        .enumerate()
        .map(|(i, s)| SubnetMapping {
            allocation_id: plan.eip_allocations.get(i).cloned(),
            ..SubnetMapping::plain(&s.id)
        })
        .collect();
    let load_balancer = LoadBalancer {
        name: frontend_nlb_name(alb.name),
        lb_type: LbType::Network,
        scheme: plan.scheme,
        ip_address_type: alb.ip_address_type,
        subnets: subnet_mappings,
        security_groups: security_groups.unwrap_or_else(|| alb.security_groups.to_vec()),
        attributes: plan.attributes.clone(),
        tags: tagger.tags(RESOURCE_FRONTEND_NLB, &user_tags),
        customer_owned_ipv4_pool: None,
        ipv4_ipam_pool: None,
        ipv6_source_nat: None,
    };
    Ok(FrontendNlb {
        stack: Stack {
            id: stack_id.to_string(),
            load_balancer,
            frontend_security_group: None,
            target_groups,
            listeners,
        },
        targets,
    })
}

/// One change to the targets of a frontend target group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AlbTargetChange {
    Register { target_group_arn: String, id: String, port: u16 },
    Deregister { target_group_arn: String, id: String, port: u16 },
}

/// What makes the target group `arn` hold just the ALB `alb_arn` on `port`, given what is
/// registered there (`(id, port)`). Deregistrations first: a target group of type `alb` holds one
/// load balancer, so a replaced ALB (or a changed port) must leave before the new one comes.
pub fn alb_target_changes(arn: &str, alb_arn: &str, port: u16, registered: &[(String, u16)]) -> Vec<AlbTargetChange> {
    let want = (alb_arn.to_string(), port);
    let mut out: Vec<AlbTargetChange> = registered
        .iter()
        .filter(|r| **r != want)
        .map(|(id, p)| AlbTargetChange::Deregister { target_group_arn: arn.into(), id: id.clone(), port: *p })
        .collect();
    if !registered.contains(&want) {
        out.push(AlbTargetChange::Register { target_group_arn: arn.into(), id: want.0, port });
    }
    out
}

#[cfg(test)]
#[path = "frontend_nlb_tests.rs"]
mod tests;
