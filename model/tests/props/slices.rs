//! Generators: a Service's EndpointSlices with the pods and nodes behind them, drawn from small
//! pools so that addresses, pod names and port names collide often.

use k8s_openapi::api::core::v1::{ObjectReference, ServicePort};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use lbc_model::crd::TargetGroupIpAddressType;
use lbc_model::pod::{CurrentCondition, GateState, GatedPod, NodeReadiness, PodInfo};
use lbc_model::target::Target;
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

pub const GATE: &str = "target-health.elbv2.k8s.aws/web";
const PODS: usize = 8;
const NODES: usize = 3;

/// Port names a Service port or a slice port may carry (`None` and `""` mean the same).
fn port_name() -> impl Strategy<Value = Option<String>> {
    prop_oneof![Just(None), Just(Some(String::new())), Just(Some("http".into())), Just(Some("admin".into()))]
}

/// In the VPC (10.0.0.0/16), outside it, IPv6 in and out of the VPC's block, and junk.
pub fn address() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (0u8..2, 0u8..12).prop_map(|(a, b)| format!("10.0.{a}.{b}")),
        1 => (0u8..3).prop_map(|b| format!("100.64.0.{b}")),
        2 => (0u16..6).prop_map(|b| format!("2600:1f18::{b:x}")),
        1 => (0u16..2).prop_map(|b| format!("2a05:d018::{b:x}")),
        1 => prop_oneof![Just(String::new()), Just("not-an-ip".to_string()), Just("10.0.0.300".to_string())],
    ]
}

fn endpoint() -> impl Strategy<Value = Endpoint> {
    let conditions = proptest::option::weighted(
        0.9,
        (any::<Option<bool>>(), any::<Option<bool>>(), any::<Option<bool>>())
            .prop_map(|(ready, serving, terminating)| EndpointConditions { ready, serving, terminating }),
    );
    let target_ref = proptest::option::weighted(
        0.9,
        (0..PODS + 2, prop_oneof![4 => Just(Some("Pod")), 1 => Just(None), 1 => Just(Some("Node"))]).prop_map(
            |(i, kind)| ObjectReference {
                kind: kind.map(str::to_string),
                name: Some(format!("pod-{i}")),
                ..Default::default()
            },
        ),
    );
    let node = proptest::option::of((0..NODES + 1).prop_map(|i| format!("node-{i}")));
    (proptest::collection::vec(address(), 0..3), conditions, target_ref, node).prop_map(
        |(addresses, conditions, target_ref, node_name)| Endpoint {
            addresses,
            conditions,
            target_ref,
            node_name,
            ..Default::default()
        },
    )
}

fn slice() -> impl Strategy<Value = EndpointSlice> {
    let family = prop_oneof![4 => Just("IPv4"), 2 => Just("IPv6"), 1 => Just("FQDN")];
    let port_number = prop_oneof![
        4 => Just(Some(8080)),
        2 => Just(Some(9090)),
        1 => Just(None),
        1 => prop_oneof![Just(Some(0)), Just(Some(-1)), Just(Some(70_000))],
    ];
    let ports = proptest::option::weighted(
        0.95,
        proptest::collection::vec(
            (port_name(), port_number).prop_map(|(name, port)| EndpointPort { name, port, ..Default::default() }),
            0..3,
        ),
    );
    (family, ports, proptest::collection::vec(endpoint(), 0..6)).prop_map(|(family, ports, endpoints)| EndpointSlice {
        address_type: family.into(),
        ports,
        endpoints,
        ..Default::default()
    })
}

fn pod() -> impl Strategy<Value = PodInfo> {
    let gate = (
        prop_oneof![Just(GATE), Just("target-health.elbv2.k8s.aws/other"), Just("example.com/feature")],
        prop_oneof![Just(None), Just(Some("True".to_string())), Just(Some("False".to_string()))],
    );
    (
        proptest::option::of((0..NODES + 1).prop_map(|i| format!("node-{i}"))),
        any::<(bool, bool, bool)>(),
        proptest::collection::vec(gate, 0..3),
    )
        .prop_map(|(node_name, (containers_ready, ready, terminating), gates)| {
            let ours = |g: &str| g.starts_with("target-health.elbv2.k8s.aws/");
            let our_gates: Box<[GateState]> = gates
                .iter()
                .filter(|(g, _)| ours(g))
                .map(|(g, s)| GateState {
                    condition_type: (*g).into(),
                    current: s.as_ref().map(|s| CurrentCondition { status: s.as_str().into(), ..Default::default() }),
                })
                .collect();
            // As the decoder keeps them: the facts only for pods with one of our gates.
            let gated = (!our_gates.is_empty()).then(|| {
                Box::new(GatedPod {
                    node_name: node_name.map(Into::into),
                    containers_ready,
                    ready,
                    terminating,
                    foreign_gate_pending: gates.iter().any(|(g, s)| !ours(g) && s.as_deref() != Some("True")),
                    gates: our_gates,
                    ..Default::default()
                })
            });
            PodInfo { gated, ..Default::default() }
        })
}

/// One Service's slices, the binding's port and family, and the pod and node caches.
#[derive(Clone, Debug)]
pub struct World {
    pub slices: Vec<EndpointSlice>,
    pub service_port: ServicePort,
    pub family: TargetGroupIpAddressType,
    pub pods: BTreeMap<String, PodInfo>,
    pub nodes: BTreeMap<String, NodeReadiness>,
}

pub fn world() -> impl Strategy<Value = World> {
    let pods = proptest::collection::btree_map((0..PODS).prop_map(|i| format!("pod-{i}")), pod(), 0..PODS);
    let node_state =
        prop_oneof![Just(NodeReadiness::Ready), Just(NodeReadiness::NotReady), Just(NodeReadiness::Unknown)];
    let nodes = proptest::collection::btree_map((0..NODES).prop_map(|i| format!("node-{i}")), node_state, 0..NODES);
    let family = prop_oneof![3 => Just(TargetGroupIpAddressType::Ipv4), 1 => Just(TargetGroupIpAddressType::Ipv6)];
    (proptest::collection::vec(slice(), 0..4), port_name(), family, pods, nodes).prop_map(
        |(slices, name, family, pods, nodes)| World {
            slices,
            service_port: ServicePort { name, port: 80, ..Default::default() },
            family,
            pods,
            nodes,
        },
    )
}

/// What the invariants are stated over, computed straight from the slices.
#[derive(Debug, Default)]
pub struct Expected {
    /// Targets of ready (or readiness-unknown), non-terminating endpoints of the bound port.
    pub ready: BTreeSet<Target>,
    /// Targets of any non-terminating endpoint of the bound port.
    pub non_terminating: BTreeSet<Target>,
    /// Targets of terminating endpoints of the bound port.
    pub terminating: BTreeSet<Target>,
    /// Non-terminating endpoints in all of the Service's slices, whatever their port or family.
    pub live_anywhere: usize,
}

impl World {
    pub fn expected(&self) -> Expected {
        let family = match self.family {
            TargetGroupIpAddressType::Ipv4 => "IPv4",
            TargetGroupIpAddressType::Ipv6 => "IPv6",
        };
        let wanted = self.service_port.name.clone().unwrap_or_default();
        let mut e = Expected::default();
        for s in &self.slices {
            let terminating = |ep: &Endpoint| ep.conditions.as_ref().and_then(|c| c.terminating) == Some(true);
            e.live_anywhere += s.endpoints.iter().filter(|ep| !terminating(ep)).count();
            // The slice port is the first one named like the Service port.
            let port = s
                .ports
                .iter()
                .flatten()
                .find(|p| p.name.clone().unwrap_or_default() == wanted)
                .and_then(|p| p.port)
                .and_then(|p| u16::try_from(p).ok());
            let Some(port) = port.filter(|_| s.address_type == family) else { continue };
            for ep in &s.endpoints {
                let ready = ep.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true);
                for ip in ep.addresses.iter().filter_map(|a| a.parse::<IpAddr>().ok()) {
                    let t = Target::new(ip, port);
                    if terminating(ep) {
                        e.terminating.insert(t);
                    } else {
                        e.non_terminating.insert(t);
                        if ready {
                            e.ready.insert(t);
                        }
                    }
                }
            }
        }
        e
    }
}
