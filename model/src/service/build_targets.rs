//! Listeners, target groups and TargetGroupBindings of a Service's NLB (ALBC
//! `model_build_listener.go`, `model_build_target_group.go`).
//!
//! One listener per Service port number. Two ports sharing a number (TCP + UDP) become one
//! `TCP_UDP` listener when `enable-tcp-udp-listener` (or the controller default) allows it, else
//! the Service is rejected with the fix. A TCP port becomes TLS when certificates are set and
//! `ssl-ports` is empty or names it (by name or number); its target group is TLS only with
//! `backend-protocol: ssl`. Target groups use the numeric targetPort as their port (1 for a named
//! targetPort: the binding registers the real port per pod), ALBC's health-check defaults (TCP on
//! the traffic port, interval 10 s, timeout 10 s, thresholds 3/3; path `/` and codes `200-399` for
//! HTTP(S)).
//!
//! Instance targets (ALBC's default; `nlb-target-type: instance`): the target group's port is the
//! Service port's NodePort (a port without one, e.g. `allocateLoadBalancerNodePorts: false`, is a
//! problem naming the fix), target type `instance`, `preserve_client_ip` on unless the attributes
//! say otherwise (AWS's and ALBC's default for instance targets), the binding's `nodeSelector` from
//! `target-node-labels`, and the security-group rules open the NodePort (and the health-check port)
//! on the nodes. With `externalTrafficPolicy: Local` the health-check defaults become ALBC's
//! instance-mode-Local ones: HTTP on `spec.healthCheckNodePort`, path `/healthz`, interval 10 s,
//! timeout 6 s, thresholds 2/2 — kube-proxy answers 200 there only on nodes with a local endpoint,
//! so every eligible node is registered and the health check decides (as ALBC does). A named
//! health-check port means that port's NodePort.

use std::collections::{BTreeMap, BTreeSet};

use ipnet::IpNet;
use k8s_openapi::api::core::v1::ServicePort;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::actions::ForwardBackend;
use super::annotations::{BackendProtocol, HealthCheckPortSetting};
use super::build::{Ctx, SgMode, TargetGroupBindingTemplate};
use super::keys::{self as k, full_key};
use crate::crd::{
    IpBlock, NetworkingIngressRule, NetworkingPeer, NetworkingPort, NetworkingProtocol, SecurityGroupRef,
    ServiceReference, TargetGroupBindingNetworking, TargetGroupBindingSpec, TargetGroupIpAddressType, TargetType,
};
use crate::lb::naming::{self, TargetGroupNameInputs};
use crate::lb::tags::service_target_group_resource_id;
use crate::lb::{
    Action, Attributes, HealthCheck, HealthCheckPort, LbIpAddressType, Listener, Protocol, Scheme, TargetGroup,
    TargetGroupRef, TgIpAddressType, WeightedTargetGroup,
};

const PROXY_PROTOCOL_V2: &str = "proxy_protocol_v2.enabled";
const PRESERVE_CLIENT_IP: &str = "preserve_client_ip.enabled";

pub(crate) struct Targets {
    pub listeners: Vec<Listener>,
    pub target_groups: Vec<TargetGroup>,
    pub bindings: Vec<TargetGroupBindingTemplate>,
}

impl Targets {
    /// Adds a target group and its binding unless one of that name is there (two listeners may
    /// forward to the same Service port); returns the name.
    fn add(&mut self, tg: TargetGroup, binding: TargetGroupBindingTemplate) -> String {
        let name = tg.name.clone();
        if !self.target_groups.iter().any(|x| x.name == name) {
            self.target_groups.push(tg);
            self.bindings.push(binding);
        }
        name
    }
}

pub(crate) fn build(b: &mut Ctx<'_>, sg: &SgMode) -> Targets {
    let mut out = Targets { listeners: Vec::new(), target_groups: Vec::new(), bindings: Vec::new() };
    let ports: Vec<ServicePort> = b.svc.spec.as_ref().and_then(|s| s.ports.clone()).unwrap_or_default();
    if ports.is_empty() {
        b.problems.push("Service has no ports".into());
    }
    let mut by_number: BTreeMap<i32, Vec<&ServicePort>> = BTreeMap::new();
    for p in &ports {
        by_number.entry(p.port).or_default().push(p);
    }
    for tls_port in &b.s.ssl_ports {
        if !ports.iter().any(|p| p.name.as_deref() == Some(tls_port) || p.port.to_string() == *tls_port) {
            b.problems.push(format!(
                "annotation aws-load-balancer-ssl-ports names port {tls_port:?}, which the Service does not have"
            ));
        }
    }
    for quic_port in &b.s.quic_ports {
        if !ports.iter().any(|p| p.name.as_deref() == Some(quic_port) || p.port.to_string() == *quic_port) {
            b.problems.push(format!(
                "annotation {} names port {quic_port:?}, which the Service does not have",
                full_key(k::QUIC_ENABLED_PORTS)
            ));
        }
    }
    let tcp_udp = b.s.enable_tcp_udp_listener.unwrap_or(b.c.enable_tcp_udp_listener);
    let mut used_listener_keys = BTreeSet::new();
    let mut used_forward_keys = BTreeSet::new();
    for (number, group) in by_number {
        let Ok(port) = u16::try_from(number).map_err(|_| ()).and_then(|p| if p == 0 { Err(()) } else { Ok(p) }) else {
            b.problems.push(format!("Service port {number} is not a port from 1 to 65535"));
            continue;
        };
        let Some(base) = group_protocol(b, port, &group, tcp_udp) else { continue };
        let primary = group[0];
        let Some(base) = quic_upgrade(b, port, &group, base) else { continue };
        let tls = !matches!(base, Protocol::Udp | Protocol::TcpUdp | Protocol::Quic | Protocol::TcpQuic)
            && !b.s.ssl_certificates.is_empty()
            && (b.s.ssl_ports.is_empty()
                || b.s.ssl_ports.iter().any(|t| primary.name.as_deref() == Some(t) || *t == port.to_string()));
        let listener_protocol = if tls { Protocol::Tls } else { base };
        let tg_protocol = if tls && b.s.backend_protocol == BackendProtocol::Ssl { Protocol::Tls } else { base };
        let Some((tg, binding)) = target_group(b, primary, &group, port, tg_protocol, sg) else { continue };
        used_listener_keys.insert((listener_protocol, port));
        let own = TargetGroupRef::Name(out.add(tg, binding));
        let mut forward = vec![WeightedTargetGroup { target_group: own, weight: None }];
        let mut stickiness_seconds = None;
        if let Some(f) = b.s.forwards.get(&(listener_protocol, port)) {
            used_forward_keys.insert((listener_protocol, port));
            forward[0].weight = f.base_weight;
            // NLB stickiness has no duration: enabled is `Some(0)`.
            stickiness_seconds = (f.stickiness == Some(true)).then_some(0);
            let key = format!("{}{}-{port}", full_key(k::ACTIONS_PREFIX), listener_protocol.as_aws());
            for t in &f.targets {
                let target_group = match &t.backend {
                    ForwardBackend::Arn(arn) => TargetGroupRef::Arn(arn.clone()),
                    ForwardBackend::Service { name, port: svc_port } => {
                        let protocol = if listener_protocol == Protocol::Tls && t.decrypt {
                            Protocol::Tcp
                        } else {
                            listener_protocol
                        };
                        let Some((btg, bbinding)) = backend_target_group(b, &key, name, svc_port, protocol, sg) else {
                            continue;
                        };
                        TargetGroupRef::Name(out.add(btg, bbinding))
                    }
                };
                forward.push(WeightedTargetGroup { target_group, weight: t.weight });
            }
        }
        out.listeners.push(Listener {
            port,
            protocol: listener_protocol,
            certificates: if tls { b.s.ssl_certificates.clone() } else { Vec::new() },
            ssl_policy: tls
                .then(|| b.s.ssl_negotiation_policy.clone().unwrap_or_else(|| b.c.default_ssl_policy.clone())),
            alpn_policy: if tls { b.s.alpn_policy.clone() } else { None },
            mutual_authentication: None,
            default_actions: vec![Action::Forward { target_groups: forward, stickiness_seconds }],
            attributes: b.s.listener_attributes.get(&(listener_protocol, port)).cloned().unwrap_or_default(),
            tags: b.tags(&port.to_string()),
            rules: Vec::new(),
        });
    }
    for (proto, port) in b.s.forwards.keys().filter(|k| !used_forward_keys.contains(*k)) {
        b.warnings.push(format!(
            "annotation {}{}-{port} matches no listener of this Service and is ignored",
            full_key(k::ACTIONS_PREFIX),
            proto.as_aws()
        ));
    }
    for (proto, port) in b.s.listener_attributes.keys().filter(|k| !used_listener_keys.contains(*k)) {
        b.warnings.push(format!(
            "annotation aws-load-balancer-listener-attributes.{}-{port} matches no listener and is ignored",
            proto.as_aws()
        ));
    }
    out
}

/// Another Service's target group and binding for a weighted forward (ALBC
/// `buildTargetGroupTuples`): that Service's port, targets and name, this Service's annotations,
/// and a name hashed with this Service's UID.
fn backend_target_group(
    b: &mut Ctx<'_>,
    key: &str,
    name: &str,
    svc_port: &IntOrString,
    protocol: Protocol,
    sg: &SgMode,
) -> Option<(TargetGroup, TargetGroupBindingTemplate)> {
    let ns = b.namespace;
    if name == b.name {
        b.problems.push(format!(
            "annotation {key} names this Service itself; its own target group is already in the forward, \
             weighted by baseServiceWeight"
        ));
        return None;
    }
    let c = b.c;
    let Some(svc) = c.backend_services.get(name) else {
        b.problems.push(format!("annotation {key} names Service {ns}/{name}, which does not exist"));
        return None;
    };
    let Some(uid) = svc.metadata.uid.as_deref() else {
        b.problems.push(format!("Service {ns}/{name} (annotation {key}) has no UID"));
        return None;
    };
    let ports = svc.spec.iter().flat_map(|s| s.ports.iter().flatten());
    let found = ports.clone().find(|p| match svc_port {
        IntOrString::Int(n) => p.port == *n,
        IntOrString::String(s) => p.name.as_deref() == Some(s.as_str()),
    });
    let Some(port_spec) = found else {
        let have: Vec<String> =
            ports.map(|p| p.name.clone().map_or(p.port.to_string(), |n| format!("{n} ({})", p.port))).collect();
        let want = match svc_port {
            IntOrString::Int(n) => n.to_string(),
            IntOrString::String(s) => format!("{s:?}"),
        };
        b.problems.push(format!(
            "annotation {key} names port {want} of Service {ns}/{name}, which has ports [{}]",
            have.join(", ")
        ));
        return None;
    };
    let Some(port) = u16::try_from(port_spec.port).ok().filter(|p| *p > 0) else {
        b.problems.push(format!("Service {ns}/{name} port {} is not a port from 1 to 65535", port_spec.port));
        return None;
    };
    let mut sub = Ctx {
        svc,
        s: b.s,
        c,
        namespace: ns,
        name,
        uid,
        base_uid: Some(b.uid),
        stack_id: b.stack_id.clone(),
        scheme: b.scheme,
        ip_address_type: b.ip_address_type,
        target_type: b.target_type,
        subnets: b.subnets.clone(),
        problems: Vec::new(),
        warnings: Vec::new(),
    };
    let built = target_group(&mut sub, port_spec, &[port_spec], port, protocol, sg);
    b.problems.extend(sub.problems.into_iter().map(|p| format!("{key} → Service {ns}/{name}: {p}")));
    b.warnings.extend(sub.warnings);
    built
}

/// TCP, UDP, or TCP_UDP for two ports sharing a number.
fn group_protocol(b: &mut Ctx<'_>, port: u16, group: &[&ServicePort], tcp_udp: bool) -> Option<Protocol> {
    let mut protocols = Vec::new();
    for p in group {
        match p.protocol.as_deref().unwrap_or("TCP") {
            "TCP" => protocols.push(Protocol::Tcp),
            "UDP" => protocols.push(Protocol::Udp),
            other => {
                b.problems.push(format!("Service port {port} uses protocol {other}; an NLB supports TCP and UDP"));
                return None;
            }
        }
    }
    match protocols.as_slice() {
        [one] => Some(*one),
        [a, b2] if a != b2 && tcp_udp => Some(Protocol::TcpUdp),
        [a, b2] if a != b2 => {
            b.problems.push(format!(
                "Service port {port} is listed for both TCP and UDP; set annotation \
                 service.beta.kubernetes.io/aws-load-balancer-enable-tcp-udp-listener: \"true\" for one TCP_UDP listener"
            ));
            None
        }
        _ => {
            b.problems.push(format!("Service port {port} is listed more than once with the same protocol"));
            None
        }
    }
}

/// `quic-enabled-ports` (ALBC `buildListenerSpec`): a UDP port named there becomes QUIC, a
/// TCP_UDP one TCP_QUIC (listener and target group); any other protocol is a problem, since QUIC
/// runs over UDP.
fn quic_upgrade(b: &mut Ctx<'_>, port: u16, group: &[&ServicePort], base: Protocol) -> Option<Protocol> {
    let named = |p: &&ServicePort| {
        b.s.quic_ports.iter().any(|q| p.name.as_deref() == Some(q.as_str()) || *q == p.port.to_string())
    };
    if !group.iter().any(named) {
        return Some(base);
    }
    if b.target_type == TargetType::Instance {
        b.problems.push(format!(
            "annotation {} names Service port {port}, but QUIC targets must be pod IPs (AWS routes QUIC by a server \
             ID each pod holds). Fix: set annotation {}: \"ip\", or take the port out of the annotation",
            full_key(k::QUIC_ENABLED_PORTS),
            full_key(k::TARGET_TYPE)
        ));
        return None;
    }
    match base {
        Protocol::Udp => Some(Protocol::Quic),
        Protocol::TcpUdp => Some(Protocol::TcpQuic),
        other => {
            b.problems.push(format!(
                "annotation {} names Service port {port}, which is {}; QUIC runs over UDP. Fix: make the port UDP \
                 (or TCP and UDP, for TCP_QUIC), or take it out of the annotation",
                full_key(k::QUIC_ENABLED_PORTS),
                other.as_aws()
            ));
            None
        }
    }
}

fn target_group(
    b: &mut Ctx<'_>,
    primary: &ServicePort,
    group: &[&ServicePort],
    port: u16,
    protocol: Protocol,
    sg: &SgMode,
) -> Option<(TargetGroup, TargetGroupBindingTemplate)> {
    let instance = b.target_type == TargetType::Instance;
    let target_port = if instance {
        let np = required_node_port(b, primary, port)?;
        let others: Vec<Option<u16>> = group.iter().skip(1).map(|p| crate::nodes::node_port(p)).collect();
        if others.iter().any(|o| *o != Some(np)) {
            let all: Vec<String> =
                std::iter::once(Some(np)).chain(others).map(|o| o.map_or("none".into(), |p| p.to_string())).collect();
            b.problems.push(format!(
                "Service port {port} is TCP and UDP with nodePorts {}; its one TCP_UDP target group of instance \
                 targets has one port. Fix: give both entries the same nodePort",
                all.join(" and ")
            ));
            return None;
        }
        IntOrString::Int(i32::from(np))
    } else {
        primary.target_port.clone().unwrap_or(IntOrString::Int(i32::from(port)))
    };
    let tg_port = match &target_port {
        IntOrString::Int(p) => match u16::try_from(*p) {
            Ok(p) if p > 0 => p,
            _ => {
                b.problems.push(format!("Service port {port} has targetPort {p}, not a port from 1 to 65535"));
                return None;
            }
        },
        IntOrString::String(_) => 1,
    };
    let health_check = health_check(b, port)?;
    let attributes = tg_attributes(b, port);
    let preserve_client_ip =
        attributes.get(PRESERVE_CLIENT_IP).and_then(|v| crate::annotations::parse_go_bool(v)).unwrap_or(instance);
    let ipv6 = b.svc.spec.iter().flat_map(|s| s.ip_families.iter().flatten()).any(|f| f == "IPv6");
    if ipv6 && b.ip_address_type != LbIpAddressType::Dualstack {
        b.problems.push("the Service's ipFamilies include IPv6, which needs ip-address-type \"dualstack\"".into());
    }
    let name = naming::target_group_name(&TargetGroupNameInputs {
        cluster: &b.c.cluster_name,
        namespace: b.namespace,
        name: b.name,
        uid: b.uid,
        base_uid: b.base_uid,
        target_group_port: tg_port,
        service_port: port,
        target_type: target_type_name(b.target_type),
        protocol: protocol.as_aws(),
        health_check_protocol: health_check.protocol.as_aws(),
        health_check_interval_seconds: health_check.interval_seconds,
    });
    let ip_type = if ipv6 { TgIpAddressType::Ipv6 } else { TgIpAddressType::Ipv4 };
    let networking = networking(b, sg, group, &target_port, &health_check.port, ip_type, preserve_client_ip);
    let binding = TargetGroupBindingTemplate {
        namespace: b.namespace.to_string(),
        name: name.clone(),
        spec: TargetGroupBindingSpec {
            target_group_name: Some(name.clone()),
            target_type: Some(b.target_type),
            node_selector: instance.then(|| node_selector(b)).flatten(),
            service_ref: ServiceReference { name: b.name.to_string(), port: IntOrString::Int(i32::from(port)) },
            networking,
            ip_address_type: Some(if ipv6 { TargetGroupIpAddressType::Ipv6 } else { TargetGroupIpAddressType::Ipv4 }),
            target_group_protocol: quic_binding_protocol(protocol),
            vpc_id: Some(b.c.vpc_id.clone()),
            multi_cluster_target_group: b.s.multi_cluster_target_group.then_some(true),
            ..Default::default()
        },
    };
    let tg = TargetGroup {
        name,
        protocol,
        protocol_version: None,
        port: tg_port,
        target_type: target_type_name(b.target_type).into(),
        ip_address_type: ip_type,
        vpc_id: b.c.vpc_id.clone(),
        health_check,
        attributes,
        tags: b.tags(&service_target_group_resource_id(b.namespace, b.name, port)),
        target_control_port: None,
    };
    Some((tg, binding))
}

/// A QUIC group's binding names its protocol, so the binding registers every target with its
/// server ID from the first pass (the webhook fills the protocol of the others from AWS).
fn quic_binding_protocol(p: Protocol) -> Option<crate::crd::TargetGroupProtocol> {
    match p {
        Protocol::Quic => Some(crate::crd::TargetGroupProtocol::QUIC),
        Protocol::TcpQuic => Some(crate::crd::TargetGroupProtocol::TcpQuic),
        _ => None,
    }
}

fn target_type_name(t: TargetType) -> &'static str {
    match t {
        TargetType::Instance => "instance",
        TargetType::Ip => "ip",
    }
}

/// The NodePort instance targets are registered on, or a problem naming the fix.
fn required_node_port(b: &mut Ctx<'_>, p: &ServicePort, port: u16) -> Option<u16> {
    if let Some(np) = crate::nodes::node_port(p) {
        return Some(np);
    }
    let no_allocation = b.svc.spec.as_ref().and_then(|s| s.allocate_load_balancer_node_ports) == Some(false);
    b.problems.push(format!(
        "Service port {port} has no nodePort{}; instance targets are registered on each node's NodePort. Fix: {}, or \
         set annotation {}: \"ip\"",
        if no_allocation { " because spec.allocateLoadBalancerNodePorts is false" } else { "" },
        if no_allocation {
            "remove spec.allocateLoadBalancerNodePorts: false (or set it to true) so Kubernetes allocates node ports"
        } else {
            "give the port a nodePort"
        },
        super::keys::full_key(super::keys::TARGET_TYPE)
    ));
    None
}

/// `target-node-labels` as the binding's `nodeSelector` (every label must match).
fn node_selector(b: &Ctx<'_>) -> Option<LabelSelector> {
    let labels = b.s.target_node_labels.clone().filter(|l| !l.is_empty())?;
    Some(LabelSelector { match_labels: Some(labels), match_expressions: None })
}

fn health_check(b: &mut Ctx<'_>, port: u16) -> Option<HealthCheck> {
    let hc = &b.s.health_check;
    let spec = b.svc.spec.as_ref();
    let instance = b.target_type == TargetType::Instance;
    // ALBC: only a `type: LoadBalancer` Service has a healthCheckNodePort to check (a NodePort
    // Service with the NLB annotations gets the plain defaults).
    let local = instance
        && spec.and_then(|s| s.external_traffic_policy.as_deref()) == Some("Local")
        && spec.and_then(|s| s.type_.as_deref()) == Some("LoadBalancer");
    let protocol = hc.protocol.unwrap_or(if local { Protocol::Http } else { Protocol::Tcp });
    let http = protocol != Protocol::Tcp;
    let hc_port = match &hc.port {
        None if local => match spec.and_then(|s| s.health_check_node_port).and_then(|p| u16::try_from(p).ok()) {
            Some(p) if p > 0 => HealthCheckPort::Port(p),
            _ => {
                b.problems.push(format!(
                    "Service has externalTrafficPolicy: Local but no spec.healthCheckNodePort; instance targets are \
                     health-checked there (port {port}). Fix: let Kubernetes allocate it, or set annotation {}",
                    super::keys::full_key(super::keys::HC_PORT)
                ));
                return None;
            }
        },
        None | Some(HealthCheckPortSetting::TrafficPort) => HealthCheckPort::TrafficPort,
        Some(HealthCheckPortSetting::Port(p)) => HealthCheckPort::Port(*p),
        Some(HealthCheckPortSetting::Named(n)) => {
            let found = spec.iter().flat_map(|s| s.ports.iter().flatten()).find(|p| p.name.as_deref() == Some(n));
            let resolved = match found {
                Some(p) if instance => crate::nodes::node_port(p).map(|np| IntOrString::Int(i32::from(np))),
                Some(p) => Some(p.target_port.clone().unwrap_or(IntOrString::Int(p.port))),
                None => {
                    b.problems.push(format!("health-check port {n:?} is not the name of a port of this Service"));
                    return None;
                }
            };
            match resolved {
                Some(IntOrString::Int(t)) if (1..=65535).contains(&t) => HealthCheckPort::Port(t as u16),
                _ if instance => {
                    b.problems.push(format!(
                        "health-check port {n:?} names a Service port without a nodePort; instance targets are \
                         health-checked on node ports (port {port})"
                    ));
                    return None;
                }
                _ => {
                    b.problems.push(format!(
                        "health-check port {n:?} names a Service port whose targetPort is not a number; \
                         ip targets need a numeric health-check port (port {port})"
                    ));
                    return None;
                }
            }
        }
    };
    let default_path = if local { "/healthz" } else { "/" };
    Some(HealthCheck {
        protocol,
        port: hc_port,
        path: http.then(|| hc.path.clone().unwrap_or_else(|| default_path.into())),
        success_codes: http.then(|| hc.success_codes.clone().unwrap_or_else(|| "200-399".into())),
        interval_seconds: hc.interval_seconds.unwrap_or(10),
        timeout_seconds: hc.timeout_seconds.unwrap_or(if local { 6 } else { 10 }),
        healthy_threshold: hc.healthy_threshold.unwrap_or(if local { 2 } else { 3 }),
        unhealthy_threshold: hc.unhealthy_threshold.unwrap_or(if local { 2 } else { 3 }),
    })
}

fn tg_attributes(b: &Ctx<'_>, port: u16) -> Attributes {
    let mut a = Attributes::from([(PROXY_PROTOCOL_V2.to_string(), "false".to_string())]);
    a.extend(b.s.target_group_attributes.clone());
    if let Some(per_port) = b.s.target_group_attributes_by_port.get(&port) {
        a.extend(per_port.iter().filter(|(_, v)| !v.is_empty()).map(|(k, v)| (k.clone(), v.clone())));
    }
    if let Some(ports) = &b.s.proxy_protocol_ports {
        a.insert(PROXY_PROTOCOL_V2.into(), ports.contains(&port).to_string());
    }
    if b.s.proxy_protocol_all {
        a.insert(PROXY_PROTOCOL_V2.into(), "true".into());
    }
    if a.get(PROXY_PROTOCOL_V2).is_some_and(|v| v.is_empty()) {
        a.remove(PROXY_PROTOCOL_V2);
    }
    a
}

fn net_port(protocol: NetworkingProtocol, port: &IntOrString) -> NetworkingPort {
    NetworkingPort { protocol: Some(protocol), port: Some(port.clone()) }
}

/// The binding's `spec.networking`: what the targets' security groups must admit.
fn networking(
    b: &mut Ctx<'_>,
    sg: &SgMode,
    group: &[&ServicePort],
    tg_port: &IntOrString,
    hc_port: &HealthCheckPort,
    ip_type: TgIpAddressType,
    preserve_client_ip: bool,
) -> Option<TargetGroupBindingNetworking> {
    let has_udp = group.iter().any(|p| p.protocol.as_deref() == Some("UDP"));
    let has_tcp = group.iter().any(|p| p.protocol.as_deref().unwrap_or("TCP") == "TCP");
    let hc_on_traffic_port = match hc_port {
        HealthCheckPort::TrafficPort => true,
        HealthCheckPort::Port(p) => *tg_port == IntOrString::Int(i32::from(*p)),
    };
    let source = match sg {
        SgMode::Managed { source } | SgMode::Custom { source: Some(source), .. } => source.clone(),
        SgMode::Custom { source: None, .. } => return None,
        SgMode::None => {
            return legacy_networking(
                b,
                has_tcp,
                has_udp,
                tg_port,
                hc_port,
                hc_on_traffic_port,
                ip_type,
                preserve_client_ip,
            );
        }
    };
    let mut ports = Vec::new();
    if has_tcp || (has_udp && hc_on_traffic_port) {
        ports.push(net_port(NetworkingProtocol::TCP, tg_port));
    }
    if has_udp {
        ports.push(net_port(NetworkingProtocol::UDP, tg_port));
    }
    if let (HealthCheckPort::Port(p), false) = (hc_port, hc_on_traffic_port) {
        ports.push(net_port(NetworkingProtocol::TCP, &IntOrString::Int(i32::from(*p))));
    }
    let peer = NetworkingPeer { security_group: Some(SecurityGroupRef { group_id: source }), ip_block: None };
    Some(TargetGroupBindingNetworking { ingress: vec![NetworkingIngressRule { from: vec![peer], ports }] })
}

/// ALBC `buildTargetGroupBindingNetworkingLegacy`: NLB without security groups.
#[allow(clippy::too_many_arguments)]
fn legacy_networking(
    b: &mut Ctx<'_>,
    has_tcp: bool,
    has_udp: bool,
    tg_port: &IntOrString,
    hc_port: &HealthCheckPort,
    hc_on_traffic_port: bool,
    ip_type: TgIpAddressType,
    preserve_client_ip: bool,
) -> Option<TargetGroupBindingNetworking> {
    if !b.s.manage_backend_security_group_rules.unwrap_or(true) {
        return None;
    }
    let v6 = ip_type == TgIpAddressType::Ipv6;
    let subnet_cidrs: Vec<String> =
        b.subnets.iter().flat_map(|s| if v6 { s.ipv6_cidrs.clone() } else { vec![s.cidr.clone()] }).collect();
    let mut traffic = subnet_cidrs.clone();
    let mut default_used = false;
    if has_udp || preserve_client_ip {
        traffic = b.source_ranges().iter().map(IpNet::to_string).collect();
        if traffic.is_empty() {
            default_used = true;
            traffic = if b.scheme == Scheme::Internal {
                let vpc: Vec<String> = b.c.vpc_cidrs.iter().filter(|c| c.contains(':') == v6).cloned().collect();
                if vpc.is_empty() {
                    b.problems.push("the VPC's CIDR blocks are unknown; they are the default client ranges of an internal NLB without security groups".into());
                }
                vpc
            } else {
                vec![if v6 { "::/0" } else { "0.0.0.0/0" }.to_string()]
            };
        }
    }
    let peers = |cidrs: &[String]| -> Vec<NetworkingPeer> {
        cidrs
            .iter()
            .map(|c| NetworkingPeer { ip_block: Some(IpBlock { cidr: c.clone() }), security_group: None })
            .collect()
    };
    let mut ports = Vec::new();
    if has_tcp {
        ports.push(net_port(NetworkingProtocol::TCP, tg_port));
    }
    if has_udp {
        ports.push(net_port(NetworkingProtocol::UDP, tg_port));
    }
    let mut ingress = vec![NetworkingIngressRule { from: peers(&traffic), ports }];
    let hc_sources = if !has_udp && hc_on_traffic_port {
        let wildcard = traffic.iter().any(|c| c == "0.0.0.0/0" || c == "::/0");
        if !preserve_client_ip || default_used || wildcard { Vec::new() } else { subnet_cidrs }
    } else {
        subnet_cidrs
    };
    if !hc_sources.is_empty() {
        let hc = match hc_port {
            HealthCheckPort::TrafficPort => tg_port.clone(),
            HealthCheckPort::Port(p) => IntOrString::Int(i32::from(*p)),
        };
        ingress.push(NetworkingIngressRule {
            from: peers(&hc_sources),
            ports: vec![net_port(NetworkingProtocol::TCP, &hc)],
        });
    }
    Some(TargetGroupBindingNetworking { ingress })
}
