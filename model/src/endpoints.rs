//! Desired targets of a binding: EndpointSlices + pods + nodes → the (ip, port) pairs that must
//! be registered.
//!
//! Rules (ALBC-compatible, with the deadlock and the late-deregistration fixed):
//! - only slices of the binding's IP family, only the port whose name matches the Service port
//!   the binding names (by number or by name);
//! - a ready endpoint (or one whose readiness is unknown) is a target, whether or not its pod is
//!   cached yet;
//! - a not-ready endpoint is a target when its pod is held back only by our target-health
//!   readiness gates (containers ready, node not NotReady, not terminating): the gate can only
//!   turn True once the target is registered and healthy;
//! - a terminating endpoint is never a target: deregistration starts the moment Kubernetes marks
//!   it terminating, not when the pod object finally disappears.
//!
//! For the refuse-to-wipe guard, live endpoints are counted across ALL of the Service's slices,
//! whatever their port names or address family: a renamed Service port (slices still carrying
//! the old name) must not look like a Service without backends.

use crate::crd::TargetGroupIpAddressType;
use crate::names::SERVICE_NAME_LABEL;
use crate::pod::{NodeReadiness, PodInfo, QuicIdMissing};
use crate::target::Target;
use crate::wire::EndpointSliceWire;
use k8s_openapi::api::core::v1::{Service, ServicePort};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

/// The pod behind a target, for readiness-gate updates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodRef {
    pub name: String,
    /// Whether the pod carries this binding's readiness gate.
    pub gated: bool,
    /// Status of this binding's gate condition on the pod, if present.
    pub gate_status: Option<String>,
}

/// Why endpoints were or were not turned into targets: logged, exported as metrics and used by
/// the refuse-to-wipe guard.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Endpoints of the binding's family that carry the bound port.
    pub seen: usize,
    pub ready: usize,
    /// Not ready, but registered because only our readiness gates hold the pod back.
    pub gated: usize,
    pub not_ready: usize,
    pub terminating: usize,
    /// Not-ready endpoints whose pod is not cached yet (registered on a later pass).
    pub pod_unknown: usize,
    /// Slices skipped because they do not carry the bound port.
    pub slices_without_port: usize,
    /// Non-terminating endpoints in every slice of the Service, whatever their ports or family.
    pub live_any: usize,
    /// The Service port the binding looks for, as shown to users (`80 ("http")`).
    pub wanted_port: String,
    /// The ports the slices carry (`8080 ("web")`), all families, sorted, deduplicated.
    pub slice_ports: Vec<String>,
}

impl EndpointStats {
    /// Endpoints that are not terminating, in any slice of the Service: evidence that the
    /// Service still has backends, so an empty desired set is suspicious rather than a
    /// scale-to-zero.
    pub fn live(&self) -> usize {
        self.live_any
    }
}

/// What target decisions need of an EndpointSlice, and nothing else: one is cached per slice, so
/// its size is paid per endpoint of every watched Service.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SliceInfo {
    /// The `kubernetes.io/service-name` label.
    pub service: Option<Box<str>>,
    /// `IPv4`, `IPv6` or `FQDN`.
    pub address_type: Box<str>,
    pub ports: Box<[SlicePort]>,
    pub endpoints: Box<[EndpointInfo]>,
}

/// A slice port: (name, number).
pub type SlicePort = (Option<Box<str>>, Option<i32>);

/// One endpoint of a slice.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointInfo {
    /// The addresses that are IPs (an FQDN slice's names are never targets).
    pub addresses: Box<[IpAddr]>,
    /// `None`: unknown, which Kubernetes says to read as ready.
    pub ready: Option<bool>,
    pub terminating: bool,
    /// The endpoint's node, kept only when the endpoint is not ready (`ready: Some(false)`): the
    /// only case [`desired_targets`] looks at it (a gated pod on a NotReady node is not
    /// registered early). Ready endpoints are most of them and share a few hundred node names.
    pub node_name: Option<Box<str>>,
    /// The pod behind it (a target reference of kind Pod, or of no kind).
    pub pod: Option<Box<str>>,
}

impl SliceInfo {
    pub fn from_wire(s: EndpointSliceWire) -> Self {
        let service = s.metadata.labels.and_then(|mut l| l.remove(SERVICE_NAME_LABEL)).map(String::into_boxed_str);
        let ports = s.ports.unwrap_or_default().into_iter().map(|p| (p.name.map(String::into_boxed_str), p.port));
        let endpoints = s.endpoints.unwrap_or_default().into_iter().map(|ep| {
            let conditions = ep.conditions.unwrap_or_default();
            EndpointInfo {
                addresses: ep.addresses.iter().filter_map(|a| a.parse().ok()).collect(),
                ready: conditions.ready,
                terminating: conditions.terminating == Some(true),
                node_name: ep.node_name.filter(|_| conditions.ready == Some(false)).map(String::into_boxed_str),
                pod: ep
                    .target_ref
                    .filter(|r| r.kind.as_deref().unwrap_or("Pod") == "Pod")
                    .and_then(|r| r.name)
                    .map(String::into_boxed_str),
            }
        });
        SliceInfo {
            service,
            address_type: s.address_type.into_boxed_str(),
            ports: ports.collect(),
            endpoints: endpoints.collect(),
        }
    }

    /// The record of a full object (tests and tools; the caches decode the wire form directly).
    pub fn of(s: &k8s_openapi::api::discovery::v1::EndpointSlice) -> Self {
        let json = serde_json::to_value(s).expect("an EndpointSlice serialises");
        Self::from_wire(serde_json::from_value(json).expect("an EndpointSlice decodes as its wire form"))
    }
}

/// `port ("name")`, or the bare number when unnamed.
fn show_port(name: Option<&str>, port: Option<i32>) -> String {
    let port = port.map_or_else(|| "?".to_string(), |p| p.to_string());
    match name {
        Some(n) if !n.is_empty() => format!("{port} ({n:?})"),
        _ => port,
    }
}

/// Desired targets with the pod behind each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DesiredTargets {
    pub targets: BTreeMap<Target, Option<PodRef>>,
    pub stats: EndpointStats,
    /// Targets of a QUIC group left out for want of a server ID (AWS refuses a QUIC target
    /// without one): the target without its ID, the pod behind it (if any) and why.
    pub quic_missing: Vec<(Target, Option<String>, Option<QuicIdMissing>)>,
}

/// A Service port the binding names that the Service does not have.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "Service {namespace}/{service} has no port {wanted}; it has {available}. \
     Fix spec.serviceRef.port of the TargetGroupBinding to one of these (a port number or a port name)"
)]
pub struct ServicePortNotFound {
    pub namespace: String,
    pub service: String,
    pub wanted: String,
    pub available: String,
}

/// Finds the Service port a binding refers to, by number or by name.
pub fn resolve_service_port<'a>(
    svc: &'a Service,
    wanted: &IntOrString,
) -> Result<&'a ServicePort, ServicePortNotFound> {
    let ports: &[ServicePort] = svc.spec.as_ref().and_then(|s| s.ports.as_deref()).unwrap_or_default();
    let found = ports.iter().find(|p| match wanted {
        IntOrString::Int(n) => p.port == *n,
        IntOrString::String(name) => p.name.as_deref() == Some(name.as_str()),
    });
    found.ok_or_else(|| ServicePortNotFound {
        namespace: svc.metadata.namespace.clone().unwrap_or_default(),
        service: svc.metadata.name.clone().unwrap_or_default(),
        wanted: match wanted {
            IntOrString::Int(n) => n.to_string(),
            IntOrString::String(s) => format!("{s:?}"),
        },
        available: if ports.is_empty() {
            "no ports".to_string()
        } else {
            ports
                .iter()
                .map(|p| match &p.name {
                    Some(n) if !n.is_empty() => format!("{} ({n:?})", p.port),
                    _ => p.port.to_string(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        },
    })
}

/// Inputs of [`desired_targets`].
pub struct EndpointInputs<'a, P, N>
where
    P: Fn(&str) -> Option<Arc<PodInfo>>,
    N: Fn(&str) -> Option<NodeReadiness>,
{
    /// The Service port the binding names (see [`resolve_service_port`]).
    pub service_port: &'a ServicePort,
    pub family: TargetGroupIpAddressType,
    /// This binding's readiness-gate condition type.
    pub gate: &'a str,
    /// Pod lookup by name in the binding's namespace.
    pub pod: P,
    /// Node readiness lookup by node name.
    pub node: N,
    /// The target group speaks QUIC or TCP_QUIC: every target needs its pod's QUIC server ID.
    pub quic: bool,
}

/// Computes the desired targets from the Service's EndpointSlices.
pub fn desired_targets<'s, P, N>(
    slices: impl IntoIterator<Item = &'s SliceInfo>,
    input: &EndpointInputs<'_, P, N>,
) -> DesiredTargets
where
    P: Fn(&str) -> Option<Arc<PodInfo>>,
    N: Fn(&str) -> Option<NodeReadiness>,
{
    let want_type = match input.family {
        TargetGroupIpAddressType::Ipv4 => "IPv4",
        TargetGroupIpAddressType::Ipv6 => "IPv6",
    };
    let port_name = input.service_port.name.as_deref().unwrap_or("");
    let mut out = DesiredTargets::default();
    out.stats.wanted_port = show_port(Some(port_name), Some(input.service_port.port));
    let mut slice_ports = std::collections::BTreeSet::new();

    for slice in slices {
        for (name, port) in &slice.ports {
            slice_ports.insert(show_port(name.as_deref(), *port));
        }
        out.stats.live_any += slice.endpoints.iter().filter(|ep| !ep.terminating).count();
        if &*slice.address_type != want_type {
            continue;
        }
        let port = slice
            .ports
            .iter()
            .find(|(name, _)| name.as_deref().unwrap_or("") == port_name)
            .and_then(|(_, p)| *p)
            .and_then(|p| u16::try_from(p).ok());
        let Some(port) = port else {
            out.stats.slices_without_port += 1;
            continue;
        };

        for ep in &slice.endpoints {
            out.stats.seen += 1;
            if ep.terminating {
                out.stats.terminating += 1;
                continue;
            }
            let pod_name = ep.pod.as_deref();
            let pod = pod_name.and_then(|n| (input.pod)(n));
            // Kubernetes: a nil `ready` means unknown and must be read as ready.
            let ready = ep.ready.unwrap_or(true);
            if ready {
                out.stats.ready += 1;
            } else {
                let Some(info) = pod.as_ref() else {
                    out.stats.pod_unknown += 1;
                    continue;
                };
                let node = ep.node_name.as_deref().or(info.node_name());
                let node_not_ready = node.and_then(|n| (input.node)(n)) == Some(NodeReadiness::NotReady);
                if !info.has_gate(input.gate) || !info.only_waiting_on_our_gates() || node_not_ready {
                    out.stats.not_ready += 1;
                    continue;
                }
                out.stats.gated += 1;
            }
            let pod_ref = pod_name.map(|name| PodRef {
                name: name.to_string(),
                gated: pod.as_ref().is_some_and(|p| p.has_gate(input.gate)),
                gate_status: pod.as_ref().and_then(|p| p.gate_status(input.gate).map(String::from)),
            });
            let quic = match (input.quic, pod.as_ref()) {
                (false, _) => None,
                (true, Some(info)) => match info.quic_server_id(port) {
                    Ok(id) => Some(Ok(id)),
                    Err(why) => Some(Err(Some(why))),
                },
                (true, None) => Some(Err(None)),
            };
            for ip in &ep.addresses {
                let target = Target::new(*ip, port);
                match &quic {
                    None => drop(out.targets.insert(target, pod_ref.clone())),
                    Some(Ok(id)) => drop(out.targets.insert(target.with_quic(*id), pod_ref.clone())),
                    Some(Err(why)) => {
                        out.quic_missing.push((target, pod_name.map(str::to_string), why.clone()));
                    }
                }
            }
        }
    }
    out.stats.slice_ports = slice_ports.into_iter().collect();
    out
}

/// Takes out of `desired` the targets no known pod stands behind: an endpoint without a Pod
/// target reference, naming a pod `holds` (by name, in the binding's namespace) does not know, or
/// at an address that pod does not hold (`holds(name, address)`). Returned sorted, for the Warning
/// that names them.
///
/// As the upstream controller: an EndpointSlice is writable by anyone who may write slices in the
/// namespace, and an endpoint there may name any address (another team's pod, a database), so only
/// endpoints at the address of a pod of the binding's namespace become targets. Not applied to a
/// Service without a selector, whose slices are the Service owner's own list of addresses (the
/// documented way to put other addresses behind a load balancer).
pub fn without_pods(desired: &mut DesiredTargets, holds: impl Fn(&str, IpAddr) -> bool) -> Vec<Target> {
    let mut out = Vec::new();
    desired.targets.retain(|t, pod| {
        let keep = pod.as_ref().is_some_and(|p| holds(&p.name, t.ip));
        if !keep {
            out.push(*t);
        }
        keep
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod::fixtures::{pod, terminating};
    use k8s_openapi::api::core::v1::{ObjectReference, ServiceSpec};
    use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use std::collections::HashMap;

    const GATE: &str = "target-health.elbv2.k8s.aws/web";

    fn svc(ports: &[(Option<&str>, i32)]) -> Service {
        Service {
            metadata: ObjectMeta { name: Some("web".into()), namespace: Some("shop".into()), ..Default::default() },
            spec: Some(ServiceSpec {
                ports: Some(
                    ports
                        .iter()
                        .map(|(n, p)| ServicePort { name: n.map(str::to_string), port: *p, ..Default::default() })
                        .collect(),
                ),
                ..Default::default()
            }),
            status: None,
        }
    }

    /// (ip, pod name, ready, terminating)
    type Ep<'a> = (&'a str, &'a str, Option<bool>, Option<bool>);

    fn slice(family: &str, ports: &[(Option<&str>, i32)], eps: &[Ep]) -> EndpointSlice {
        EndpointSlice {
            metadata: ObjectMeta::default(),
            address_type: family.into(),
            ports: Some(
                ports
                    .iter()
                    .map(|(n, p)| EndpointPort { name: n.map(str::to_string), port: Some(*p), ..Default::default() })
                    .collect(),
            ),
            endpoints: eps
                .iter()
                .map(|(ip, name, ready, term)| Endpoint {
                    addresses: vec![ip.to_string()],
                    conditions: Some(EndpointConditions { ready: *ready, serving: *ready, terminating: *term }),
                    target_ref: Some(ObjectReference {
                        kind: Some("Pod".into()),
                        name: Some(name.to_string()),
                        ..Default::default()
                    }),
                    node_name: Some("node-a".into()),
                    ..Default::default()
                })
                .collect(),
        }
    }

    fn run(
        service_port: &ServicePort,
        family: TargetGroupIpAddressType,
        slices: &[EndpointSlice],
        pods: &HashMap<&str, PodInfo>,
        node: NodeReadiness,
    ) -> DesiredTargets {
        let input = EndpointInputs {
            service_port,
            family,
            gate: GATE,
            pod: |n: &str| pods.get(n).cloned().map(Arc::new),
            node: move |_: &str| Some(node),
            quic: false,
        };
        let infos: Vec<SliceInfo> = slices.iter().map(SliceInfo::of).collect();
        desired_targets(&infos, &input)
    }

    fn ips(d: &DesiredTargets) -> Vec<String> {
        d.targets.keys().map(|t| t.to_string()).collect()
    }

    #[test]
    fn service_port_by_number_and_name() {
        let s = svc(&[(Some("http"), 80), (Some("admin"), 9000)]);
        assert_eq!(resolve_service_port(&s, &IntOrString::Int(9000)).unwrap().name.as_deref(), Some("admin"));
        assert_eq!(resolve_service_port(&s, &IntOrString::String("http".into())).unwrap().port, 80);
        let e = resolve_service_port(&s, &IntOrString::Int(8080)).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("shop/web has no port 8080"), "{msg}");
        assert!(msg.contains("80 (\"http\"), 9000 (\"admin\")"), "{msg}");
        assert!(resolve_service_port(&svc(&[]), &IntOrString::Int(80)).unwrap_err().to_string().contains("no ports"));
    }

    #[test]
    fn endpoint_readiness_table() {
        let ready_pod = PodInfo::from_pod(&pod("p", &[("ContainersReady", "True"), ("Ready", "True")], &[GATE]));
        let gated_pod = PodInfo::from_pod(&pod("p", &[("ContainersReady", "True"), ("Ready", "False")], &[GATE]));
        let gate_true_pod =
            PodInfo::from_pod(&pod("p", &[("ContainersReady", "True"), ("Ready", "False"), (GATE, "True")], &[GATE]));
        let ungated_unready = PodInfo::from_pod(&pod("p", &[("ContainersReady", "True"), ("Ready", "False")], &[]));
        let crashing = PodInfo::from_pod(&pod("p", &[("ContainersReady", "False")], &[GATE]));
        let other_gate =
            PodInfo::from_pod(&pod("p", &[("ContainersReady", "True")], &["target-health.elbv2.k8s.aws/other"]));
        let term_pod = PodInfo::from_pod(&terminating(pod("p", &[("ContainersReady", "True")], &[GATE])));

        // (case, endpoint ready, endpoint terminating, pod, node, registered?)
        #[allow(clippy::type_complexity)] // a table of cases reads best as tuples
        let cases: Vec<(&str, Option<bool>, Option<bool>, Option<PodInfo>, NodeReadiness, bool)> = vec![
            ("ready endpoint", Some(true), Some(false), Some(ready_pod.clone()), NodeReadiness::Ready, true),
            ("ready unknown (nil) counts as ready", None, None, Some(ready_pod.clone()), NodeReadiness::Ready, true),
            ("ready, pod not cached yet", Some(true), None, None, NodeReadiness::Ready, true),
            (
                "not ready, only our gate pending",
                Some(false),
                Some(false),
                Some(gated_pod.clone()),
                NodeReadiness::Ready,
                true,
            ),
            (
                "not ready, our gate just turned True",
                Some(false),
                None,
                Some(gate_true_pod),
                NodeReadiness::Ready,
                true,
            ),
            (
                "not ready, gated, node unknown",
                Some(false),
                None,
                Some(gated_pod.clone()),
                NodeReadiness::Unknown,
                true,
            ),
            (
                "not ready, gated, node NotReady",
                Some(false),
                None,
                Some(gated_pod.clone()),
                NodeReadiness::NotReady,
                false,
            ),
            ("not ready, no gate", Some(false), None, Some(ungated_unready), NodeReadiness::Ready, false),
            ("not ready, containers not ready", Some(false), None, Some(crashing), NodeReadiness::Ready, false),
            (
                "not ready, gate of another binding only",
                Some(false),
                None,
                Some(other_gate),
                NodeReadiness::Ready,
                false,
            ),
            ("not ready, pod not cached", Some(false), None, None, NodeReadiness::Ready, false),
            ("terminating ready endpoint", Some(true), Some(true), Some(ready_pod), NodeReadiness::Ready, false),
            ("terminating gated", Some(false), Some(true), Some(term_pod), NodeReadiness::Ready, false),
        ];
        let sp = ServicePort { name: Some("http".into()), port: 80, ..Default::default() };
        for (what, ready, term, pod, node, want) in cases {
            let pods: HashMap<&str, PodInfo> = pod.into_iter().map(|p| ("p", p)).collect();
            let s = slice("IPv4", &[(Some("http"), 8080)], &[("10.0.1.5", "p", ready, term)]);
            let d = run(&sp, TargetGroupIpAddressType::Ipv4, &[s], &pods, node);
            assert_eq!(!d.targets.is_empty(), want, "{what}");
            if want {
                assert_eq!(ips(&d), ["10.0.1.5:8080"], "{what}: target port from the slice");
            }
        }
    }

    #[test]
    fn pod_ref_records_gate_state() {
        let gated = PodInfo::from_pod(&pod("p", &[("ContainersReady", "True"), (GATE, "False")], &[GATE]));
        let pods: HashMap<&str, PodInfo> = [("p", gated)].into();
        let sp = ServicePort { name: None, port: 80, ..Default::default() };
        let s = slice("IPv4", &[(None, 8080)], &[("10.0.1.5", "p", Some(false), None)]);
        let d = run(&sp, TargetGroupIpAddressType::Ipv4, &[s], &pods, NodeReadiness::Ready);
        let r = d.targets.values().next().unwrap().as_ref().unwrap();
        assert_eq!(r, &PodRef { name: "p".into(), gated: true, gate_status: Some("False".into()) });
        assert_eq!(d.stats.gated, 1);
    }

    #[test]
    fn a_quic_group_registers_each_target_with_its_pods_server_id_and_names_the_ones_without() {
        use crate::pod::fixtures::quic;
        let pods: HashMap<&str, PodInfo> = [
            ("ok", PodInfo::from_pod(&quic(pod("ok", &[], &[]), &[(8443, Some("ASNFZ4mrze8="))]))),
            ("novar", PodInfo::from_pod(&quic(pod("novar", &[], &[]), &[(8443, None)]))),
            ("plain", PodInfo::from_pod(&pod("plain", &[], &[]))),
        ]
        .into();
        let sp = ServicePort { name: None, port: 443, ..Default::default() };
        let eps = [
            ("10.0.1.1", "ok", Some(true), None),
            ("10.0.1.2", "novar", Some(true), None),
            ("10.0.1.3", "plain", Some(true), None),
            ("10.0.1.4", "gone", Some(true), None),
        ];
        let s = slice("IPv4", &[(None, 8443)], &eps);
        let slices: Vec<SliceInfo> = [&s].into_iter().map(SliceInfo::of).collect();
        let input = EndpointInputs {
            service_port: &sp,
            family: TargetGroupIpAddressType::Ipv4,
            gate: GATE,
            pod: |n: &str| pods.get(n).cloned().map(Arc::new),
            node: |_: &str| Some(NodeReadiness::Ready),
            quic: true,
        };
        let d = desired_targets(&slices, &input);
        assert_eq!(ips(&d), ["10.0.1.1:8443 (QUIC server ID 0x0123456789abcdef)"]);
        let missing: Vec<(String, Option<&str>, Option<QuicIdMissing>)> =
            d.quic_missing.iter().map(|(t, p, w)| (t.to_string(), p.as_deref(), w.clone())).collect();
        assert_eq!(
            missing,
            [
                ("10.0.1.2:8443".into(), Some("novar"), Some(QuicIdMissing::NoVariable)),
                ("10.0.1.3:8443".into(), Some("plain"), Some(QuicIdMissing::NoAnnotation)),
                ("10.0.1.4:8443".into(), Some("gone"), None),
            ]
        );
        // The same slices for a group that is not QUIC: every target, none with an ID.
        let plain = run(&sp, TargetGroupIpAddressType::Ipv4, &[s], &pods, NodeReadiness::Ready);
        assert_eq!(plain.targets.len(), 4);
        assert!(plain.targets.keys().all(|t| t.quic.is_none()) && plain.quic_missing.is_empty());
    }

    /// A pod without our gates is cached without facts (`PodInfo::gated` is `None`): its
    /// endpoints still count as before, known pod (not `pod_unknown`) whatever its readiness.
    #[test]
    fn pods_without_our_gates_count_as_known_pods() {
        let sp = ServicePort { name: None, port: 80, ..Default::default() };
        for gates in [&[][..], &["example.com/warm"][..], &["target-health.elbv2.k8s.aws/other"][..]] {
            let p = PodInfo::from_pod(&pod("p", &[("ContainersReady", "True"), ("Ready", "False")], gates));
            assert_eq!(p.gated.is_some(), !gates.is_empty() && gates[0].starts_with("target-health"), "{gates:?}");
            let pods: HashMap<&str, PodInfo> = [("p", p)].into();
            let s = slice("IPv4", &[(None, 8080)], &[("10.0.1.5", "p", Some(false), None)]);
            let d = run(&sp, TargetGroupIpAddressType::Ipv4, &[s], &pods, NodeReadiness::Ready);
            assert!(d.targets.is_empty(), "{gates:?}");
            assert_eq!((d.stats.not_ready, d.stats.pod_unknown), (1, 0), "{gates:?}");
            let s = slice("IPv4", &[(None, 8080)], &[("10.0.1.5", "p", Some(true), None)]);
            let d = run(&sp, TargetGroupIpAddressType::Ipv4, &[s], &pods, NodeReadiness::Ready);
            let r = d.targets.values().next().unwrap().as_ref().unwrap();
            assert_eq!(r, &PodRef { name: "p".into(), gated: false, gate_status: None }, "{gates:?}");
        }
    }

    /// The endpoint's node is read only for endpoints that are not ready, and kept only there.
    #[test]
    fn endpoint_node_kept_only_when_not_ready() {
        let s = slice(
            "IPv4",
            &[(None, 8080)],
            &[("10.0.1.5", "a", Some(true), None), ("10.0.1.6", "b", None, None), ("10.0.1.7", "c", Some(false), None)],
        );
        let info = SliceInfo::of(&s);
        let nodes: Vec<Option<&str>> = info.endpoints.iter().map(|e| e.node_name.as_deref()).collect();
        assert_eq!(nodes, [None, None, Some("node-a")]);
    }

    #[test]
    fn port_matching_by_name_unnamed_and_missing() {
        let pods = HashMap::new();
        let eps: &[Ep] = &[("10.0.1.5", "a", Some(true), None), ("10.0.1.6", "b", Some(true), None)];
        // Named service port picks the slice port of the same name.
        let sp = ServicePort { name: Some("admin".into()), port: 9000, ..Default::default() };
        let s = slice("IPv4", &[(Some("http"), 8080), (Some("admin"), 9090)], eps);
        assert_eq!(
            ips(&run(&sp, TargetGroupIpAddressType::Ipv4, &[s], &pods, NodeReadiness::Ready)),
            ["10.0.1.5:9090", "10.0.1.6:9090"]
        );
        // Unnamed single-port Service.
        let sp = ServicePort { name: None, port: 80, ..Default::default() };
        let s = slice("IPv4", &[(None, 8080)], eps);
        assert_eq!(run(&sp, TargetGroupIpAddressType::Ipv4, &[s], &pods, NodeReadiness::Ready).targets.len(), 2);
        // Slice without the port: counted, nothing registered.
        let sp = ServicePort { name: Some("grpc".into()), port: 50051, ..Default::default() };
        let s = slice("IPv4", &[(Some("http"), 8080)], eps);
        let d = run(&sp, TargetGroupIpAddressType::Ipv4, &[s], &pods, NodeReadiness::Ready);
        assert!(d.targets.is_empty());
        assert_eq!(d.stats.slices_without_port, 1);
    }

    #[test]
    fn ip_families_are_separate() {
        let pods = HashMap::new();
        let sp = ServicePort { name: None, port: 80, ..Default::default() };
        let v4 = slice("IPv4", &[(None, 8080)], &[("10.0.1.5", "a", Some(true), None)]);
        let v6 = slice("IPv6", &[(None, 8080)], &[("fd00::5", "a", Some(true), None)]);
        let fqdn = slice("FQDN", &[(None, 8080)], &[("db.example.com", "a", Some(true), None)]);
        let all = [v4, v6, fqdn];
        assert_eq!(
            ips(&run(&sp, TargetGroupIpAddressType::Ipv4, &all, &pods, NodeReadiness::Ready)),
            ["10.0.1.5:8080"]
        );
        assert_eq!(
            ips(&run(&sp, TargetGroupIpAddressType::Ipv6, &all, &pods, NodeReadiness::Ready)),
            ["[fd00::5]:8080"]
        );
    }

    #[test]
    fn duplicates_across_slices_collapse_and_stats_add_up() {
        let pods = HashMap::new();
        let sp = ServicePort { name: None, port: 80, ..Default::default() };
        let a = slice(
            "IPv4",
            &[(None, 8080)],
            &[("10.0.1.5", "a", Some(true), None), ("10.0.1.7", "c", Some(true), Some(true))],
        );
        let b = slice(
            "IPv4",
            &[(None, 8080)],
            &[("10.0.1.5", "a", Some(true), None), ("10.0.1.6", "b", Some(false), None)],
        );
        let d = run(&sp, TargetGroupIpAddressType::Ipv4, &[a, b], &pods, NodeReadiness::Ready);
        assert_eq!(ips(&d), ["10.0.1.5:8080"]);
        assert_eq!(d.stats.seen, 4);
        assert_eq!(d.stats.terminating, 1);
        assert_eq!(d.stats.pod_unknown, 1);
        assert_eq!(d.stats.live(), 3);
    }

    /// The wipe guard end to end in the model: slices → desired → plan. A renamed Service port
    /// (slices still carrying the old name) must never deregister everything.
    #[test]
    fn wipe_guard_counts_every_slice_table() {
        use crate::net::VpcCidrs;
        use crate::plan::{PlanInput, Refusal, plan};
        use crate::target::HealthState;
        use std::collections::{BTreeMap, BTreeSet};
        let pods = HashMap::new();
        let registered: BTreeMap<Target, HealthState> = [("10.0.1.5", 8080), ("10.0.1.6", 8080)]
            .iter()
            .map(|(ip, p)| (Target::new(ip.parse().unwrap(), *p), HealthState::Healthy))
            .collect();
        let vpc = VpcCidrs::default();
        let up: &[Ep] = &[("10.0.1.5", "a", Some(true), Some(false)), ("10.0.1.6", "b", Some(true), None)];
        let starting: &[Ep] = &[("10.0.1.5", "a", Some(false), None)];
        let leaving: &[Ep] = &[("10.0.1.5", "a", Some(false), Some(true)), ("10.0.1.6", "b", Some(true), Some(true))];
        // (case, Service port name, slices (family, port name, endpoints), refused?, deregistered)
        #[allow(clippy::type_complexity)] // a table of cases reads best as tuples
        let cases: Vec<(&str, Option<&str>, Vec<(&str, Option<&str>, &[Ep])>, bool, usize)> = vec![
            ("port renamed, slices carry the old name", Some("web"), vec![("IPv4", Some("http"), up)], true, 0),
            ("port named, slices unnamed", Some("web"), vec![("IPv4", None, up)], true, 0),
            ("port unnamed now, slices named", None, vec![("IPv4", Some("http"), up)], true, 0),
            (
                "only the other family's slices are live",
                Some("http"),
                vec![("IPv6", Some("http"), &[("fd00::5", "a", Some(true), None)])],
                true,
                0,
            ),
            ("endpoints not ready yet (no gate)", Some("http"), vec![("IPv4", Some("http"), starting)], true, 0),
            (
                "every endpoint terminating: the wipe goes ahead",
                Some("web"),
                vec![("IPv4", Some("http"), leaving)],
                false,
                2,
            ),
            ("no slices at all: scaled to zero", Some("http"), vec![], false, 2),
            ("empty slice", Some("http"), vec![("IPv4", Some("http"), &[])], false, 2),
            ("names match: nothing to do", Some("http"), vec![("IPv4", Some("http"), up)], false, 0),
        ];
        for (what, name, slices, refused, dereg) in cases {
            let sp = ServicePort { name: name.map(str::to_string), port: 80, ..Default::default() };
            let slices: Vec<EndpointSlice> = slices.iter().map(|(f, n, eps)| slice(f, &[(*n, 8080)], eps)).collect();
            let d = run(&sp, TargetGroupIpAddressType::Ipv4, &slices, &pods, NodeReadiness::Ready);
            let input = PlanInput {
                desired: d.targets.keys().copied().collect::<BTreeSet<_>>(),
                registered: &registered,
                owned: None,
                vpc: &vpc,
                allow_outside_vpc: false,
                live_endpoints: d.stats.live(),
                wanted_port: &d.stats.wanted_port,
                slice_ports: &d.stats.slice_ports,
            };
            match plan(&input) {
                Err(e @ Refusal::WouldDeregisterAll { .. }) => {
                    assert!(refused, "{what}: refused unexpectedly: {e}");
                    let msg = e.to_string();
                    let wanted = match name {
                        Some(n) => format!("Service port 80 ({n:?})"),
                        None => "Service port 80 ".to_string(),
                    };
                    assert!(msg.contains(&wanted), "{what}: {msg}");
                    assert!(msg.contains("the slices carry ports 8080"), "{what}: {msg}");
                    assert!(msg.contains("renamed"), "{what}: the fix is named: {msg}");
                }
                Err(e) => panic!("{what}: unexpected refusal {e}"),
                Ok(p) => {
                    assert!(!refused, "{what}: not refused, plan {p:?}");
                    assert_eq!(p.deregister.len(), dereg, "{what}");
                }
            }
        }
    }

    #[test]
    fn live_count_and_ports_cover_all_slices() {
        let pods = HashMap::new();
        let sp = ServicePort { name: Some("web".into()), port: 80, ..Default::default() };
        let a = slice("IPv4", &[(Some("http"), 8080), (Some("admin"), 9000)], &[("10.0.1.5", "a", Some(true), None)]);
        let b = slice(
            "IPv6",
            &[(Some("http"), 8080)],
            &[("fd00::5", "a", Some(false), None), ("fd00::6", "b", None, Some(true))],
        );
        let d = run(&sp, TargetGroupIpAddressType::Ipv4, &[a, b], &pods, NodeReadiness::Ready);
        assert!(d.targets.is_empty());
        assert_eq!(d.stats.live(), 2, "one IPv4 + one not-terminating IPv6 endpoint");
        assert_eq!(d.stats.seen, 0, "no slice of the family carries the port");
        assert_eq!(d.stats.wanted_port, "80 (\"web\")");
        assert_eq!(d.stats.slice_ports, ["8080 (\"http\")", "9000 (\"admin\")"]);
    }

    #[test]
    fn endpoints_without_a_known_pod_are_taken_out() {
        let port = ServicePort { name: Some("http".into()), port: 80, ..Default::default() };
        let mut forged = slice("IPv4", &[(Some("http"), 8080)], &[]);
        forged.endpoints = vec![
            // No target reference at all (a hand-written slice).
            Endpoint { addresses: vec!["10.0.9.9".into()], ..Default::default() },
            // A reference of another kind.
            Endpoint {
                addresses: vec!["10.0.9.8".into()],
                target_ref: Some(ObjectReference {
                    kind: Some("Node".into()),
                    name: Some("n".into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
        ];
        let real = slice(
            "IPv4",
            &[(Some("http"), 8080)],
            &[
                ("10.0.1.1", "a", Some(true), None),
                ("10.0.1.2", "ghost", Some(true), None),
                // Pod a's name at another address (another team's pod, a database).
                ("10.0.9.7", "a", Some(true), None),
            ],
        );
        let mut a = pod("a", &[("ContainersReady", "True"), ("Ready", "True")], &[]);
        a.status.as_mut().unwrap().pod_ip = Some("10.0.1.1".into());
        let pods: HashMap<&str, PodInfo> = [("a", PodInfo::from_pod(&a))].into();
        let mut d = run(&port, TargetGroupIpAddressType::Ipv4, &[forged, real], &pods, NodeReadiness::Ready);
        assert_eq!(
            ips(&d),
            ["10.0.1.1:8080", "10.0.1.2:8080", "10.0.9.7:8080", "10.0.9.8:8080", "10.0.9.9:8080"],
            "before"
        );
        let out = without_pods(&mut d, |n, ip| pods.get(n).is_some_and(|p| p.ips.contains(ip)));
        assert_eq!(ips(&d), ["10.0.1.1:8080"], "only the endpoint at a known pod's address stays");
        let out: Vec<String> = out.iter().map(Target::to_string).collect();
        assert_eq!(out, ["10.0.1.2:8080", "10.0.9.7:8080", "10.0.9.8:8080", "10.0.9.9:8080"], "the others are named");
        assert_eq!(d.stats.live(), 5, "they still count as live endpoints for the refuse-to-wipe guard");
    }
}
