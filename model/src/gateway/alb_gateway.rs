//! One Gateway of class `gateway.k8s.aws/alb`, from a snapshot of the cluster to the ALB stack
//! and the status of everything involved.
//!
//! [`plan`] decides what does not depend on AWS: which listeners are accepted, which HTTPRoutes
//! attach where (with each route's `status.parents` entry for this Gateway), which backends
//! resolve, the target groups (one per route, Service and port, named as ALBC names them) and
//! the rules of every listener port. [`build`] (in `alb_build.rs`) turns the plan and what AWS
//! told the caller (subnets, the backend security group) into the stack the shared pipeline
//! deploys. [`gateway_status`] gives the Gateway's status once the load balancer's state is known.
//!
//! HTTPS listeners take their certificates from the Secrets of `tls.certificateRefs`
//! ([`super::certificates`]: the controller imports them into ACM before the build). Not here yet
//! (issue 34): ACM certificate discovery and ARNs for Gateways, LoadBalancerConfiguration,
//! TargetGroupConfiguration, ListenerRuleConfiguration and GRPCRoute on the ALB. A listener with
//! attached routes that cannot be built (its certificates do not resolve) refuses the whole Gateway
//! with the reason (its `Programmed` says it too): building the rest would take that listener off
//! an ALB that has it.

use super::alb_rules::{self, AlbRules, RouteIn, RouteRuleIn};
use super::api::{GRPCRoute, Gateway, HTTPRoute, ParametersReference, ParentReference, listener_views, parent_refs};
use super::attach::{AttachListener, Attachment, GatewayView, RouteView, attach};
use super::certificates::{
    ImportableCertificate, REASON_INVALID_CERTIFICATE_REF, SecretData, listener_certificates, secrets_not_read,
};
use super::conditions::*;
use super::http_route;
use super::listeners::{GatewayVerdict, assess};
use super::refs::{Grant, ServiceBackend, Unresolved, resolve_backend, resolved_refs};
use super::route_status::parent_conditions;
use super::status::{LbState, gateway_addresses, gateway_programmed, listener_programmed};
use super::{Flavor, RouteKind};
use crate::crd::TargetType;
use crate::ingress::ServiceView;
use crate::lb::Protocol;
use crate::lb::naming::{self, GatewayTargetGroupNameInputs};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::{BTreeMap, BTreeSet};

/// Tag (and TargetGroupBinding label) prefix of ALB Gateway stacks (ALBC `ALBGatewayTagPrefix`).
pub const ALB_GATEWAY_TAG_PREFIX: &str = "gateway.k8s.aws.alb";
/// Finalizer on the Gateways whose ALB this controller made (ALBC `ALBGatewayFinalizer`).
pub const ALB_GATEWAY_FINALIZER: &str = "gateway.k8s.aws/alb";
/// AWS's quota of rules per ALB listener (the default rule not counted).
pub const RULES_PER_LISTENER_MAX: usize = 100;

pub(super) const KIND: &str = "HTTPRoute";

/// What [`plan`] reads of the cluster.
pub struct Snapshot<'a> {
    pub gateway: &'a Gateway,
    /// The GatewayClass's `parametersRef`, if any.
    pub class_parameters: Option<&'a ParametersReference>,
    /// HTTPRoutes that may name the Gateway (others are skipped).
    pub routes: Vec<&'a HTTPRoute>,
    /// GRPCRoutes that may name the Gateway: not built on the ALB yet, so one naming it refuses it.
    pub grpc_routes: Vec<&'a GRPCRoute>,
    pub grants: &'a [Grant],
    /// Services by (namespace, name).
    pub services: &'a BTreeMap<(String, String), ServiceView>,
    /// The Secrets the Gateway's listeners name, by (namespace, name), as far as they exist;
    /// `None`: the controller does not read Secrets (`--enable-gateway-certificate-secrets`).
    pub secrets: Option<&'a BTreeMap<(String, String), SecretData>>,
    /// A namespace's labels (`None`: not known), for listeners selecting namespaces by label.
    pub namespace_labels: &'a dyn Fn(&str) -> Option<BTreeMap<String, String>>,
}

/// Controller settings [`plan`] needs.
#[derive(Clone, Debug)]
pub struct PlanConfig {
    pub cluster_name: String,
    /// `--default-target-type`.
    pub default_target_type: TargetType,
}

/// A target group the Gateway needs: one per (route, Service, port).
#[derive(Clone, Debug, PartialEq)]
pub struct WantedTargetGroup {
    pub name: String,
    /// ALBC's `resource` tag value (`buildTargetGroupResourceID`).
    pub resource_id: String,
    pub service_namespace: String,
    pub service_name: String,
    pub service_port: i32,
    pub target_type: TargetType,
    pub view: ServiceView,
}

/// A route's `status.parents` entries for this Gateway.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteOutcome {
    /// `HTTPRoute` or `GRPCRoute`.
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    pub generation: Option<i64>,
    /// Each parentRef naming this Gateway, as written, with its conditions.
    pub parents: Vec<(ParentReference, Vec<Cond>)>,
}

/// Everything decided about the Gateway before AWS is asked.
#[derive(Clone, Debug)]
pub struct GatewayPlan {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub listeners: Vec<AttachListener>,
    pub verdict: GatewayVerdict,
    /// `attachedRoutes` per listener name.
    pub attached: BTreeMap<String, i32>,
    pub routes: Vec<RouteOutcome>,
    pub target_groups: Vec<WantedTargetGroup>,
    pub rules: AlbRules,
    /// The ELB listeners to build: ports with attached routes, with their protocol.
    pub ports: BTreeMap<u16, Protocol>,
    /// The certificates of each HTTPS port in `ports`, the default one first.
    pub certificates: BTreeMap<u16, Vec<ImportableCertificate>>,
    /// Listeners with routes the load balancer cannot serve, with why: the Gateway waits.
    pub not_programmed: BTreeMap<String, String>,
    /// HTTPS listeners whose certificates do not resolve, with why (their `Programmed` is False).
    pub certificates_refused: BTreeMap<String, String>,
    /// Why the Gateway's spec cannot be read at all (the listeners are then refused).
    pub invalid: Option<String>,
    /// What the Gateway uses that is not built yet: the whole Gateway waits, each says why.
    pub unsupported: Vec<String>,
}

impl GatewayPlan {
    /// The `<prefix>/stack` tag value: `namespace/name`.
    pub fn stack_id(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Every certificate the listeners to build need, once each.
    pub fn wanted_certificates(&self) -> Vec<ImportableCertificate> {
        let mut out: Vec<ImportableCertificate> = Vec::new();
        for c in self.certificates.values().flatten() {
            if !out.iter().any(|o| o.secret() == c.secret()) {
                out.push(c.clone());
            }
        }
        out
    }
}

/// One route's parents, rules and backends, before the rules of all routes are put together.
struct RouteWork<'a> {
    route: &'a HTTPRoute,
    namespace: String,
    name: String,
    /// Each parentRef to this Gateway, as written, with its attachment.
    parents: Vec<(ParentReference, Attachment)>,
    rules: Result<Vec<http_route::RuleSpec>, String>,
    backends: Vec<Vec<Result<ServiceBackend, Unresolved>>>,
}

fn meta(route: &HTTPRoute) -> (String, String) {
    (route.metadata.namespace.clone().unwrap_or_default(), route.metadata.name.clone().unwrap_or_default())
}

/// A resolved backend whose Service lacks the port is not found either.
fn with_port(
    r: Result<ServiceBackend, Unresolved>,
    services: &BTreeMap<(String, String), ServiceView>,
) -> Result<ServiceBackend, Unresolved> {
    let b = r?;
    let view = &services[&(b.namespace.clone(), b.name.clone())];
    if view.ports.iter().any(|(_, p)| *p == b.port) {
        return Ok(b);
    }
    let have: Vec<String> = view.ports.iter().map(|(_, p)| p.to_string()).collect();
    Err(Unresolved {
        reason: REASON_BACKEND_NOT_FOUND,
        message: format!("Service {}/{} has no port {}; its ports: {}", b.namespace, b.name, b.port, have.join(", ")),
    })
}

/// Decides everything about the Gateway that AWS does not answer.
pub fn plan(s: &Snapshot<'_>, cfg: &PlanConfig) -> GatewayPlan {
    let gw = s.gateway;
    let namespace = gw.metadata.namespace.clone().unwrap_or_default();
    let name = gw.metadata.name.clone().unwrap_or_default();
    let (listeners, invalid) = match listener_views(gw) {
        Ok(l) => (l, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    let mut unsupported: Vec<String> = Vec::new();
    let gw_params = gw.spec.infrastructure.as_ref().and_then(|i| i.parameters_ref.as_ref());
    for (whose, p) in [("Gateway infrastructure", gw_params), ("GatewayClass", s.class_parameters)] {
        if let Some(p) = p {
            unsupported.push(format!(
                "the {whose} parametersRef names {} {}: LoadBalancerConfiguration is not read by this controller yet, \
                 and building without it would change the load balancer it configures",
                p.kind, p.name
            ));
        }
    }
    let mut verdict = assess(Flavor::Alb, &listeners.iter().map(|l| l.spec.clone()).collect::<Vec<_>>());
    if let Some(why) = &invalid {
        verdict.accepted = Cond::new(ACCEPTED, false, REASON_LISTENERS_NOT_VALID, why.clone());
    }
    // Each usable HTTPS listener's certificates, or why not (its `ResolvedRefs`).
    let mut listener_certs: BTreeMap<String, Result<Vec<ImportableCertificate>, String>> = BTreeMap::new();
    let https: Vec<_> = gw.spec.listeners.iter().filter(|l| l.protocol == "HTTPS" && verdict.usable(&l.name)).collect();
    for l in https {
        let got = match s.secrets {
            Some(secrets) => listener_certificates(&namespace, l, secrets, s.grants),
            None => Err((REASON_INVALID_CERTIFICATE_REF, secrets_not_read(&l.name))),
        };
        if let Err((reason, msg)) = &got
            && let Some(v) = verdict.listeners.iter_mut().find(|v| v.name == l.name)
            && let Some(c) = v.conditions.iter_mut().find(|c| c.type_ == RESOLVED_REFS)
            && c.status == CondStatus::True
        {
            *c = Cond::new(RESOLVED_REFS, false, reason, msg.clone());
        }
        listener_certs.insert(l.name.clone(), got.map_err(|e| e.1));
    }
    let view = GatewayView { namespace: &namespace, name: &name, listeners: &listeners, verdict: &verdict };
    let port_of: BTreeMap<&str, u16> = listeners
        .iter()
        .filter(|l| verdict.usable(&l.spec.name))
        .filter_map(|l| Some((l.spec.name.as_str(), u16::try_from(l.spec.port).ok()?)))
        .collect();

    // Each route's attachments, rules and backends.
    let mut work: Vec<RouteWork<'_>> = Vec::new();
    let mut routes: Vec<&HTTPRoute> = s.routes.clone();
    routes.sort_by_key(|r| meta(r));
    for route in routes {
        let (rns, rname) = meta(route);
        let parents: Vec<(ParentReference, Attachment)> = route
            .spec
            .parent_refs
            .iter()
            .zip(parent_refs(&rns, &route.spec.parent_refs))
            .filter(|(_, p)| p.is_gateway(&namespace, &name))
            .map(|(written, p)| {
                let rv = RouteView { kind: KIND, namespace: &rns, name: &rname, hostnames: &route.spec.hostnames };
                (written.clone(), attach(&view, &p, &rv, s.namespace_labels))
            })
            .collect();
        if parents.is_empty() {
            continue;
        }
        let rules = http_route::rules(route);
        let exists = |ns: &str, n: &str| s.services.contains_key(&(ns.to_string(), n.to_string()));
        let backends = match &rules {
            Ok(rules) => rules
                .iter()
                .map(|r| {
                    r.backends
                        .iter()
                        .map(|b| with_port(resolve_backend(KIND, &rns, &rname, b, s.grants, &exists), s.services))
                        .collect()
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        work.push(RouteWork { route, namespace: rns, name: rname, parents, rules, backends });
    }

    let mut grpc_outcomes = Vec::new();
    for g in &s.grpc_routes {
        let (gns, gname) =
            (g.metadata.namespace.clone().unwrap_or_default(), g.metadata.name.clone().unwrap_or_default());
        let parents: Vec<(ParentReference, Vec<Cond>)> = g
            .spec
            .parent_refs
            .iter()
            .zip(parent_refs(&gns, &g.spec.parent_refs))
            .filter(|(_, p)| p.is_gateway(&namespace, &name))
            .map(|(written, _)| {
                let why = "GRPCRoute is not built on an ALB by this controller yet; the Gateway is left unchanged";
                (written.clone(), vec![Cond::new(ACCEPTED, false, REASON_UNSUPPORTED_VALUE, why)])
            })
            .collect();
        if !parents.is_empty() {
            unsupported.push(format!(
                "GRPCRoute {gns}/{gname} names the Gateway, and GRPCRoute is not built on an ALB by this controller \
                 yet; building without it would delete the rules it has on an ALB that ALBC built"
            ));
            grpc_outcomes.push(RouteOutcome {
                kind: "GRPCRoute",
                namespace: gns,
                name: gname,
                generation: g.metadata.generation,
                parents,
            });
        }
    }

    // Target groups and the rules' input, for routes accepted somewhere.
    let mut target_groups: BTreeMap<String, WantedTargetGroup> = BTreeMap::new();
    let mut route_ins = Vec::new();
    for w in &work {
        let Ok(rules) = &w.rules else { continue };
        let mut hostnames_by_port: BTreeMap<u16, Option<Vec<String>>> = BTreeMap::new();
        for (_, a) in w.parents.iter().filter(|(_, a)| a.accepted.status == CondStatus::True) {
            for (listener, hosts) in &a.listeners {
                let Some(port) = port_of.get(listener.as_str()) else { continue };
                // Empty: every host, which covers any hostname another listener adds.
                let entry = hostnames_by_port.entry(*port).or_insert_with(|| Some(Vec::new()));
                match (entry.as_mut(), hosts.is_empty()) {
                    (Some(_), true) => *entry = None,
                    (Some(v), false) => v.extend(hosts.iter().cloned()),
                    (None, _) => {}
                }
            }
        }
        if hostnames_by_port.is_empty() {
            continue;
        }
        let mut rule_ins = Vec::new();
        for (rule, backends) in rules.iter().zip(&w.backends) {
            let mut tgs = Vec::new();
            for b in backends.iter().flatten() {
                let tg = target_group(cfg, &namespace, &name, w, b, s.services);
                tgs.push((tg.name.clone(), u32::try_from(b.weight.max(0)).unwrap_or(0)));
                target_groups.entry(tg.name.clone()).or_insert(tg);
            }
            rule_ins.push(RouteRuleIn {
                matches: rule.matches.clone(),
                redirect: rule.redirect.clone(),
                rewrite: rule.rewrite.clone(),
                target_groups: tgs,
            });
        }
        let created = w.route.metadata.creation_timestamp.as_ref().map_or(0, |t| t.0.as_second());
        route_ins.push(RouteIn {
            namespace: w.namespace.clone(),
            name: w.name.clone(),
            created,
            hostnames_by_port: hostnames_by_port
                .into_iter()
                .map(|(p, h)| {
                    let mut h = h.unwrap_or_default();
                    h.sort();
                    h.dedup();
                    (p, h)
                })
                .collect(),
            rules: rule_ins,
        });
    }
    // AWS RedirectActionConfig: "You can't redirect HTTPS to HTTP": a route asking for it on an
    // HTTPS listener is refused rather than given a rule the ALB will not follow.
    let https_ports: BTreeSet<u16> = listeners
        .iter()
        .filter(|l| l.spec.protocol == "HTTPS")
        .filter_map(|l| port_of.get(l.spec.name.as_str()).copied())
        .collect();
    let mut refused_early = BTreeMap::new();
    route_ins.retain(|r| {
        let to_http = r.rules.iter().any(|x| {
            x.redirect.as_ref().and_then(|d| d.scheme.as_deref()).is_some_and(|s| s.eq_ignore_ascii_case("http"))
        });
        let on_https: Vec<u16> = r.hostnames_by_port.keys().filter(|p| https_ports.contains(p)).copied().collect();
        let refuse = to_http && !on_https.is_empty();
        if refuse {
            refused_early.insert(
                format!("{}/{}", r.namespace, r.name),
                format!(
                    "a RequestRedirect to scheme http on HTTPS listener port {on_https:?}: an ALB cannot redirect \
                     HTTPS to HTTP; attach the route to HTTP listeners only (sectionName) or redirect to https"
                ),
            );
        }
        !refuse
    });
    let mut rules = alb_rules::build(&route_ins);
    rules.refused.extend(refused_early);
    // A refused route's target groups are not wanted.
    let used: BTreeSet<&str> = route_ins
        .iter()
        .filter(|r| !rules.refused.contains_key(&format!("{}/{}", r.namespace, r.name)))
        .flat_map(|r| r.rules.iter().flat_map(|x| x.target_groups.iter().map(|(n, _)| n.as_str())))
        .collect();
    target_groups.retain(|n, _| used.contains(n.as_str()));

    // Route statuses, then what attached where.
    let mut outcomes = Vec::new();
    let mut attachments: Vec<(String, Attachment)> = Vec::new();
    for w in &work {
        let id = format!("{}/{}", w.namespace, w.name);
        let refused = match &w.rules {
            Err(e) => Some(e.clone()),
            Ok(_) => rules.refused.get(&id).cloned(),
        };
        let all: Vec<Result<ServiceBackend, Unresolved>> = w.backends.iter().flatten().cloned().collect();
        let refs = resolved_refs(&all);
        let parents: Vec<(ParentReference, Vec<Cond>)> = w
            .parents
            .iter()
            .map(|(p, a)| (p.clone(), parent_conditions(a, refs.clone(), refused.as_deref())))
            .collect();
        if refused.is_none() {
            attachments.extend(w.parents.iter().map(|(_, a)| (id.clone(), a.clone())));
        }
        outcomes.push(RouteOutcome {
            kind: KIND,
            namespace: w.namespace.clone(),
            name: w.name.clone(),
            generation: w.route.metadata.generation,
            parents,
        });
    }
    let attached = super::attach::attached_routes(&listeners, attachments.iter().map(|(id, a)| (id.as_str(), a)));
    outcomes.extend(grpc_outcomes);

    let mut ports = BTreeMap::new();
    let mut certificates: BTreeMap<u16, Vec<ImportableCertificate>> = BTreeMap::new();
    let mut not_programmed = BTreeMap::new();
    let certificates_refused: BTreeMap<String, String> =
        listener_certs.iter().filter_map(|(n, r)| Some((n.clone(), r.as_ref().err()?.clone()))).collect();
    for l in listeners.iter().filter(|l| verdict.usable(&l.spec.name)) {
        let Some(port) = port_of.get(l.spec.name.as_str()).copied() else { continue };
        if attached.get(&l.spec.name).copied().unwrap_or(0) == 0 {
            continue;
        }
        match (l.spec.protocol.as_str(), listener_certs.get(&l.spec.name)) {
            ("HTTPS", Some(Ok(certs))) => {
                ports.insert(port, Protocol::Https);
                let on_port = certificates.entry(port).or_default();
                for c in certs {
                    if !on_port.iter().any(|o| o.secret() == c.secret()) {
                        on_port.push(c.clone());
                    }
                }
            }
            ("HTTPS", Some(Err(why))) => {
                not_programmed.insert(
                    l.spec.name.clone(),
                    format!(
                        "{why}; the listener has routes, so nothing of the Gateway is changed in AWS until its \
                         certificates resolve or its routes are detached"
                    ),
                );
            }
            _ => {
                ports.insert(port, Protocol::Http);
            }
        }
    }
    GatewayPlan {
        namespace,
        name,
        uid: gw.metadata.uid.clone().unwrap_or_default(),
        listeners,
        verdict,
        attached,
        routes: outcomes,
        target_groups: target_groups.into_values().collect(),
        rules,
        ports,
        certificates,
        not_programmed,
        certificates_refused,
        invalid,
        unsupported,
    }
}

fn target_group(
    cfg: &PlanConfig,
    gw_ns: &str,
    gw_name: &str,
    w: &RouteWork<'_>,
    b: &ServiceBackend,
    services: &BTreeMap<(String, String), ServiceView>,
) -> WantedTargetGroup {
    let view = services[&(b.namespace.clone(), b.name.clone())].clone();
    let target_type = cfg.default_target_type;
    let instance = target_type == TargetType::Instance;
    // ALBC hashes the Service port's targetPort as written (a number or a name) for ip targets
    // (`GetIdentifierPort`), the NodePort for instance targets.
    let identifier = match view.target_port(b.port) {
        IntOrString::Int(p) => p.to_string(),
        IntOrString::String(name) => name,
    };
    let port = match instance {
        true => view.node_ports.get(&b.port).map_or(0, |p| i32::from(*p)).to_string(),
        false => identifier.clone(),
    };
    let name = naming::gateway_target_group_name(&GatewayTargetGroupNameInputs {
        cluster: &cfg.cluster_name,
        gateway_namespace: gw_ns,
        gateway_name: gw_name,
        route_namespace: &w.namespace,
        route_name: &w.name,
        route_kind: KIND,
        service_namespace: &b.namespace,
        service_name: &b.name,
        port: &port,
        target_type: if instance { "instance" } else { "ip" },
        protocol: "HTTP",
        protocol_version: Some(super::alb_build::HTTP1),
        target_control_port: None,
    });
    WantedTargetGroup {
        name,
        // ALBC's `buildTargetGroupResourceID`, with the same identifier port as the name.
        resource_id: format!(
            "{gw_ns}/{gw_name}:{}-{}:{KIND}-{}-{}:{identifier}",
            w.namespace, w.name, b.namespace, b.name
        ),
        service_namespace: b.namespace.clone(),
        service_name: b.name.clone(),
        service_port: b.port,
        target_type,
        view,
    }
}

/// One listener's status: its name, supported kinds, attached routes and conditions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenerOutcome {
    pub name: String,
    pub supported_kinds: Vec<RouteKind>,
    pub attached_routes: i32,
    pub conditions: Vec<Cond>,
}

/// The Gateway's status as a plan and its load balancer's state make it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatewayOutcome {
    /// `Accepted`, `Programmed`.
    pub conditions: Vec<Cond>,
    /// (type, value).
    pub addresses: Vec<(&'static str, String)>,
    pub listeners: Vec<ListenerOutcome>,
}

/// The Gateway's status: `Accepted` from its listeners, `Programmed` and addresses from the load
/// balancer, and per listener its verdict, attached routes and `Programmed`.
pub fn gateway_status(plan: &GatewayPlan, lb: &LbState) -> GatewayOutcome {
    let listeners = plan
        .verdict
        .listeners
        .iter()
        .map(|v| {
            let mut conditions = v.conditions.clone();
            conditions.push(match plan.not_programmed.get(&v.name).or(plan.certificates_refused.get(&v.name)) {
                Some(why) => Cond::new(PROGRAMMED, false, super::status::REASON_INVALID, why.clone()),
                None => listener_programmed(v, lb),
            });
            ListenerOutcome {
                name: v.name.clone(),
                supported_kinds: v.supported_kinds.clone(),
                attached_routes: plan.attached.get(&v.name).copied().unwrap_or(0),
                conditions,
            }
        })
        .collect();
    GatewayOutcome {
        conditions: vec![plan.verdict.accepted.clone(), gateway_programmed(lb)],
        addresses: gateway_addresses(lb),
        listeners,
    }
}

pub use super::alb_build::{build, context_needs};

#[cfg(test)]
#[path = "alb_gateway_tests.rs"]
mod tests;
