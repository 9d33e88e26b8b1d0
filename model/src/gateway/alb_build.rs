//! The ALB stack of a [`GatewayPlan`], as ALBC's gateway model builder makes it
//! (`pkg/gateway/model`): the ALB named from the cluster, the Gateway's UID and scheme; a managed
//! frontend security group open on every listener port; an ELB listener only for ports with
//! attached routes, its default action a fixed 404; target groups at ALBC's gateway health-check
//! defaults with one TargetGroupBinding each; ALBC's tags under `gateway.k8s.aws.alb`. Whatever
//! the plan says cannot be built yet refuses the whole stack.

use super::Flavor;
use super::alb_gateway::{ALB_GATEWAY_TAG_PREFIX, GatewayPlan, RULES_PER_LISTENER_MAX, WantedTargetGroup};
use crate::crd::{
    NetworkingIngressRule, NetworkingPort, NetworkingProtocol, ServiceReference, TargetGroupBindingNetworking,
    TargetGroupBindingSpec, TargetGroupIpAddressType, TargetType,
};
use crate::lb::build::{
    BuildContext, BuildError, BuiltStack, ContextNeeds, FRONTEND_SG_DESCRIPTION, Tagger, TargetGroupBindingTemplate,
    load_balancer_security_groups, managed_or_custom, security_group_peer, uses_backend_security_group,
};
use crate::lb::extras::WantedExtras;
use crate::lb::naming;
use crate::lb::subnets::SubnetSelector;
use crate::lb::tags::{RESOURCE_LOAD_BALANCER, RESOURCE_MANAGED_SECURITY_GROUP};
use crate::lb::{
    HealthCheck, HealthCheckPort, IngressRule, LbIpAddressType, LbType, Listener, LoadBalancer, Protocol, RuleSource,
    SecurityGroup, Stack, SubnetMapping, Tags, TargetGroup, TgIpAddressType,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::{BTreeMap, BTreeSet};

// ALBC's gateway target-group health-check defaults (`newTargetGroupBuilder`).
const HC_INTERVAL: u32 = 15;
const HC_TIMEOUT: u32 = 5;
const HC_HEALTHY: u32 = 3;
const HC_UNHEALTHY: u32 = 3;
const HC_PATH: &str = "/";
const HC_CODES: &str = "200-399";
pub(super) const HTTP1: &str = "HTTP1";
/// AWS's quota of certificates per ALB (the default certificates of listeners not counted).
const CERTIFICATES_PER_LISTENER_MAX: usize = 25;

/// What the caller looks up in AWS first: discovered subnets in two Availability Zones for the
/// default scheme (LoadBalancerConfiguration is not read yet).
pub fn context_needs(default_scheme: crate::lb::Scheme) -> ContextNeeds {
    ContextNeeds {
        subnets: SubnetSelector::Discover,
        scheme: default_scheme,
        min_azs: 2,
        subnets_annotation: "LoadBalancerConfiguration loadBalancerSubnets (not read yet: subnets are discovered)"
            .into(),
        security_group_names: Vec::new(),
        security_groups_annotation: String::new(),
    }
}

/// The ALB stack of `plan`; `certificate_arns`: the ACM ARN of each Secret (`namespace/name`) the
/// HTTPS listeners use, imported by the caller.
pub fn build(
    plan: &GatewayPlan,
    ctx: &BuildContext,
    certificate_arns: &BTreeMap<String, String>,
) -> Result<BuiltStack, BuildError> {
    let stack_id = plan.stack_id();
    let tagger = Tagger {
        prefix: ALB_GATEWAY_TAG_PREFIX,
        cluster: &ctx.cluster_name,
        stack_id: &stack_id,
        default_tags: &ctx.default_tags,
        defaults_low: ctx.default_tags_low_priority,
    };
    let none = Tags::new();
    let mut problems = Vec::new();
    if let Some(why) = &plan.invalid {
        problems.push(why.clone());
    }
    // A listener with routes that cannot be built refuses the whole Gateway: building the rest
    // would delete that listener from an ALB ALBC built with it.
    problems.extend(plan.not_programmed.values().cloned());
    problems.extend(plan.unsupported.iter().map(|u| format!("Gateway {stack_id}: {u}")));
    let mut subnets: Vec<_> = ctx.subnets.iter().collect();
    subnets.sort_by(|x, y| x.id.cmp(&y.id));
    let zones: BTreeSet<&str> = subnets.iter().map(|s| s.availability_zone.as_str()).collect();
    if zones.len() < 2 {
        problems.push(format!(
            "Gateway {stack_id}: an ALB needs subnets in at least two Availability Zones, found {}; tag subnets for \
             discovery (kubernetes.io/role/internal-elb or kubernetes.io/role/elb, and kubernetes.io/cluster/{})",
            zones.len(),
            ctx.cluster_name
        ));
    }
    for (port, rules) in &plan.rules.by_port {
        for r in rules {
            for p in crate::lb::transform_problems(&r.transforms) {
                problems.push(format!("Gateway {stack_id}: listener port {port} rule {}: {p}", r.priority));
            }
        }
        if rules.len() > RULES_PER_LISTENER_MAX {
            problems.push(format!(
                "Gateway {stack_id}: listener port {port} needs {} rules and an ALB listener takes at most \
                 {RULES_PER_LISTENER_MAX}; split the routes over more Gateways or fewer matches and hostnames",
                rules.len()
            ));
        }
    }
    let sg_mode = managed_or_custom(None, false, ctx, &mut problems);
    let security_groups = load_balancer_security_groups(&sg_mode, ctx);

    let mut target_groups = Vec::new();
    let mut bindings = Vec::new();
    for w in &plan.target_groups {
        if let Some((tg, b)) = target_group_and_binding(w, ctx, &tagger, sg_mode.source(), &mut problems) {
            target_groups.push(tg);
            bindings.push(b);
        }
    }
    let mut listener_certificates: BTreeMap<u16, Vec<String>> = BTreeMap::new();
    for (port, certs) in &plan.certificates {
        for c in certs {
            match certificate_arns.get(&c.secret()) {
                Some(arn) => listener_certificates.entry(*port).or_default().push(arn.clone()),
                None => problems.push(format!(
                    "Gateway {stack_id}: the certificate of Secret {} is not in ACM yet (port {port})",
                    c.secret()
                )),
            }
        }
        // ALB quota "Certificates per Application Load Balancer": 25, the default ones not counted.
        if certs.len() > CERTIFICATES_PER_LISTENER_MAX + 1 {
            problems.push(format!(
                "Gateway {stack_id}: HTTPS port {port} needs {} certificates and an ALB listener takes the default \
                 one and {CERTIFICATES_PER_LISTENER_MAX} more; spread the hostnames over more Gateways",
                certs.len()
            ));
        }
    }
    let listeners = plan
        .ports
        .iter()
        .map(|(port, protocol)| Listener {
            port: *port,
            protocol: *protocol,
            certificates: listener_certificates.get(port).cloned().unwrap_or_default(),
            ssl_policy: (*protocol == Protocol::Https).then(|| ctx.default_ssl_policy.clone()),
            alpn_policy: None,
            mutual_authentication: None,
            default_actions: vec![super::actions::listener_default()],
            attributes: Default::default(),
            tags: tagger.tags(&port.to_string(), &none),
            rules: plan
                .rules
                .by_port
                .get(port)
                .into_iter()
                .flatten()
                .map(|r| {
                    let mut r = r.clone();
                    r.tags = tagger.tags(&format!("{port}:{}", r.priority), &none);
                    r
                })
                .collect(),
        })
        .collect();
    if !problems.is_empty() {
        return Err(BuildError { problems });
    }
    let scheme = ctx.default_scheme;
    let (ns, name, uid) = (&plan.namespace, &plan.name, &plan.uid);
    let frontend_security_group = SecurityGroup {
        name: naming::gateway_security_group_name(&ctx.cluster_name, ns, name, uid),
        description: FRONTEND_SG_DESCRIPTION.to_string(),
        vpc_id: ctx.vpc_id.clone(),
        ingress: frontend_rules(plan),
        tags: tagger.tags(RESOURCE_MANAGED_SECURITY_GROUP, &none),
    };
    let backend_security_group_used = uses_backend_security_group(&security_groups, ctx);
    let load_balancer = LoadBalancer {
        name: naming::load_balancer_name(&ctx.cluster_name, ns, name, uid, scheme.as_aws()),
        lb_type: LbType::Application,
        scheme,
        ip_address_type: LbIpAddressType::Ipv4,
        subnets: subnets.iter().map(|s| SubnetMapping::plain(&s.id)).collect(),
        security_groups,
        attributes: Default::default(),
        tags: tagger.tags(RESOURCE_LOAD_BALANCER, &none),
        customer_owned_ipv4_pool: None,
        ipv4_ipam_pool: None,
        ipv6_source_nat: None,
    };
    Ok(BuiltStack {
        stack: Stack {
            id: stack_id,
            load_balancer,
            frontend_security_group: Some(frontend_security_group),
            target_groups,
            listeners,
        },
        extras: WantedExtras::default(),
        bindings,
        backend_security_group_used,
        warnings: Vec::new(),
    })
}

/// TCP from anywhere on every HTTP and HTTPS listener port of the Gateway (ALBC's default
/// `sourceRanges`; IPv6 only on dualstack ALBs, which are not built yet).
fn frontend_rules(plan: &GatewayPlan) -> Vec<IngressRule> {
    let ports: BTreeSet<i32> = plan
        .listeners
        .iter()
        .filter(|l| Flavor::Alb.protocols().contains(&l.spec.protocol.as_str()))
        .map(|l| l.spec.port)
        .collect();
    ports
        .into_iter()
        .map(|port| IngressRule {
            protocol: "tcp".into(),
            from_port: port,
            to_port: port,
            source: RuleSource::Cidr("0.0.0.0/0".into()),
            description: None,
        })
        .collect()
}

fn target_group_and_binding(
    w: &WantedTargetGroup,
    ctx: &BuildContext,
    tagger: &Tagger<'_>,
    sg_source: Option<&str>,
    problems: &mut Vec<String>,
) -> Option<(TargetGroup, TargetGroupBindingTemplate)> {
    let at = format!("Service {}/{} port {}", w.service_namespace, w.service_name, w.service_port);
    let instance = w.target_type == TargetType::Instance;
    let target_port = match instance {
        true => match w.view.node_ports.get(&w.service_port) {
            Some(np) => IntOrString::Int(i32::from(*np)),
            None => {
                problems.push(format!(
                    "{at}: target type instance registers the nodes on the port's nodePort and it has none; make the \
                     Service type NodePort, or run the controller with --default-target-type=ip"
                ));
                return None;
            }
        },
        false => w.view.target_port(w.service_port),
    };
    let tg_port = match &target_port {
        IntOrString::Int(p) => match u16::try_from(*p) {
            Ok(p) if p > 0 => p,
            _ => {
                problems.push(format!("{at}: targetPort {p} is not a port from 1 to 65535"));
                return None;
            }
        },
        IntOrString::String(_) => 1,
    };
    // The ALB is IPv4 (dualstack Gateways are not built yet), so the target group is IPv4 whenever the Service has
    // IPv4 endpoints. ALBC makes an IPv6 group as soon as `ipFamilies` lists IPv6, which the API server does for
    // every headless Service without a selector ([IPv4, IPv6], RequireDualStack) even on single-stack clusters, and
    // the IPv4 ALB then refuses it (the suite's HTTPRouteServiceTypes, skipped in ALBC's report).
    let ip_type = TgIpAddressType::Ipv4;
    if w.view.ipv6_only {
        problems.push(format!(
            "{at}: the Service's ipFamilies are IPv6 only, which needs a dualstack ALB (not built for Gateways yet); \
             add IPv4 to spec.ipFamilies"
        ));
        return None;
    }
    let networking = sg_source.map(|source| TargetGroupBindingNetworking {
        ingress: vec![NetworkingIngressRule {
            from: vec![security_group_peer(source)],
            ports: vec![NetworkingPort { protocol: Some(NetworkingProtocol::TCP), port: Some(target_port.clone()) }],
        }],
    });
    let binding = TargetGroupBindingTemplate {
        namespace: w.service_namespace.clone(),
        name: w.name.clone(),
        spec: TargetGroupBindingSpec {
            target_group_name: Some(w.name.clone()),
            target_type: Some(w.target_type),
            service_ref: ServiceReference { name: w.service_name.clone(), port: IntOrString::Int(w.service_port) },
            networking,
            ip_address_type: Some(TargetGroupIpAddressType::Ipv4),
            vpc_id: Some(ctx.vpc_id.clone()),
            ..Default::default()
        },
    };
    let tg = TargetGroup {
        name: w.name.clone(),
        protocol: Protocol::Http,
        protocol_version: Some(HTTP1.into()),
        port: tg_port,
        target_type: if instance { "instance" } else { "ip" }.into(),
        ip_address_type: ip_type,
        vpc_id: ctx.vpc_id.clone(),
        health_check: HealthCheck {
            protocol: Protocol::Http,
            port: HealthCheckPort::TrafficPort,
            path: Some(HC_PATH.into()),
            success_codes: Some(HC_CODES.into()),
            interval_seconds: HC_INTERVAL,
            timeout_seconds: HC_TIMEOUT,
            healthy_threshold: HC_HEALTHY,
            unhealthy_threshold: HC_UNHEALTHY,
        },
        attributes: Default::default(),
        tags: tagger.tags(&w.resource_id, &Tags::new()),
        target_control_port: None,
    };
    Some((tg, binding))
}
