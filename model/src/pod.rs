//! The few facts about pods and nodes that target decisions need.
//!
//! The controller caches one compact [`PodInfo`] per pod, decoded straight from the watch
//! ([`crate::wire::PodWire`]), so memory stays proportional to what decisions read, not to the
//! size of pod specs.

use crate::names::{CONTAINERS_READY, READINESS_GATE_PREFIX, READY};
use crate::target::QuicServerId;
use crate::wire::{PodWire, QUIC_ENABLED_CONTAINERS};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// What target decisions and readiness-gate updates need to know about a pod.
///
/// Most pods carry none of our readiness gates, and for those decisions read only that the pod
/// exists and its named ports: a not-ready endpoint of such a pod is never registered whatever
/// its facts (`crate::endpoints::desired_targets` looks at readiness and node only for the
/// binding's own gate), nothing patches its conditions and no binding is woken by it. So the
/// facts below are kept only for pods with one of our gates ([`GatedPod`]); readiness gates are
/// immutable in a pod's spec, so a pod never moves between the two kinds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodInfo {
    /// Named container ports (name → number), for named ports in `spec.networking`; a name two
    /// containers use (invalid in Kubernetes) keeps the first. Shared between the pods whose lists
    /// are equal when decoded through one [`NamedPortsInterner`] (every pod of a Deployment).
    pub named_ports: NamedPorts,
    /// `None`: the pod carries none of our target-health readiness gates.
    pub gated: Option<Box<GatedPod>>,
    /// The addresses the pod holds (`status.podIPs`): an EndpointSlice endpoint naming the pod is
    /// registered only at one of them.
    pub ips: PodIps,
    /// `None`: the pod lacks the QUIC annotation (most pods).
    pub quic: Option<Box<QuicIds>>,
}

/// The QUIC server IDs of a pod carrying [`crate::wire::QUIC_ENABLED_CONTAINERS`], read from its
/// containers' server-ID variable as the upstream reads them: a port a container declares takes
/// that container's ID, any other port the first container's that has one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuicIds {
    /// Per container with the variable, in spec order.
    pub containers: Box<[QuicContainer]>,
}

/// A container's declared ports and its QUIC server ID (or why its value is no ID).
pub type QuicContainer = (Box<[u16]>, Result<QuicServerId, Box<str>>);

/// Why a target of a QUIC group has no server ID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuicIdMissing {
    /// The pod lacks the annotation naming its QUIC containers.
    NoAnnotation,
    /// The annotation is there but no container has the variable: the pod was created without
    /// the controller's pod webhook (or with a container name the annotation does not list).
    NoVariable,
    /// The variable's value is no server ID.
    Invalid(Box<str>),
}

impl std::fmt::Display for QuicIdMissing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let var = crate::wire::quic_env_name();
        let key = crate::wire::QUIC_ENABLED_CONTAINERS;
        match self {
            Self::NoAnnotation => write!(
                f,
                "the pod lacks the annotation {key}; add it to the pod template, listing the containers serving QUIC"
            ),
            Self::NoVariable => write!(
                f,
                "no container has {var}; the pod was created before the controller's pod webhook \
                 (/mutate-v1-pod-server-id) was in place, or the annotation {key} does not list the serving \
                 container: fix the annotation, then restart the pods"
            ),
            Self::Invalid(why) => write!(f, "{var} is {why}; remove it to let the webhook mint one"),
        }
    }
}

impl QuicIds {
    /// The server ID for `port`.
    pub fn for_port(&self, port: u16) -> Result<QuicServerId, QuicIdMissing> {
        let pick = self.containers.iter().find(|(ports, _)| ports.contains(&port)).or(self.containers.first());
        match pick {
            None => Err(QuicIdMissing::NoVariable),
            Some((_, Ok(id))) => Ok(*id),
            Some((_, Err(why))) => Err(QuicIdMissing::Invalid(why.clone())),
        }
    }
}

/// A pod's addresses: at most one of each family (Kubernetes allows no more), kept small since
/// every pod of the cluster has a record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodIps {
    v4: Option<std::net::Ipv4Addr>,
    v6: Option<Box<std::net::Ipv6Addr>>,
}

impl PodIps {
    /// The addresses of `status.podIPs` and `status.podIP`; text that is no address is left out.
    pub fn parse<'a>(texts: impl IntoIterator<Item = &'a str>) -> Self {
        let mut ips = Self::default();
        for t in texts {
            match t.parse::<std::net::IpAddr>() {
                Ok(std::net::IpAddr::V4(a)) => ips.v4 = ips.v4.or(Some(a)),
                Ok(std::net::IpAddr::V6(a)) => ips.v6 = ips.v6.take().or(Some(Box::new(a))),
                Err(_) => {}
            }
        }
        ips
    }

    pub fn contains(&self, ip: std::net::IpAddr) -> bool {
        match ip {
            std::net::IpAddr::V4(a) => self.v4 == Some(a),
            std::net::IpAddr::V6(a) => self.v6.as_deref() == Some(&a),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.v4.is_none() && self.v6.is_none()
    }
}

impl std::fmt::Display for PodIps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.v4, self.v6.as_deref()) {
            (None, None) => f.write_str("none yet"),
            (Some(a), None) => write!(f, "{a}"),
            (None, Some(b)) => write!(f, "{b}"),
            (Some(a), Some(b)) => write!(f, "{a}, {b}"),
        }
    }
}

/// A pod's named container ports.
pub type NamedPorts = Arc<[(Box<str>, u16)]>;

/// Hands out one shared [`NamedPorts`] per distinct list, so the pods of a Deployment hold one
/// copy. Lists no pod holds any more are dropped when the set has doubled since the last sweep.
#[derive(Debug, Default)]
pub struct NamedPortsInterner {
    lists: HashSet<NamedPorts>,
    sweep_at: usize,
}

impl NamedPortsInterner {
    pub fn intern(&mut self, ports: Vec<(Box<str>, u16)>) -> NamedPorts {
        if let Some(shared) = self.lists.get(ports.as_slice()) {
            return shared.clone();
        }
        if self.lists.len() >= self.sweep_at {
            self.lists.retain(|l| Arc::strong_count(l) > 1);
            self.sweep_at = (2 * self.lists.len()).max(64);
        }
        let shared: NamedPorts = ports.into();
        self.lists.insert(shared.clone());
        shared
    }

    /// Distinct lists held (tests).
    pub fn len(&self) -> usize {
        self.lists.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lists.is_empty()
    }
}

/// The facts readiness-gate decisions read, for a pod with at least one of our gates.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GatedPod {
    /// Precondition of every condition patch.
    pub uid: Box<str>,
    pub node_name: Option<Box<str>>,
    pub containers_ready: bool,
    pub ready: bool,
    pub terminating: bool,
    /// A readiness gate that is not ours is not True: the pod is held back by someone else.
    pub foreign_gate_pending: bool,
    /// Our target-health readiness gates (never empty), with their conditions.
    pub gates: Box<[GateState]>,
}

/// One of our readiness gates on a pod.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GateState {
    pub condition_type: Box<str>,
    /// The pod's condition of that type, when it has one.
    pub current: Option<CurrentCondition>,
}

/// A pod condition as the API server holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CurrentCondition {
    pub status: Box<str>,
    pub reason: Option<Box<str>>,
    pub message: Option<Box<str>>,
    pub last_transition_time: Option<Time>,
}

impl CurrentCondition {
    /// (status, reason, message), as [`crate::readiness::GateCondition::differs_from`] compares them.
    pub fn parts(&self) -> (&str, Option<&str>, Option<&str>) {
        (&self.status, self.reason.as_deref(), self.message.as_deref())
    }
}

impl PodInfo {
    /// The record of a decoded pod, its named ports not shared with other records (tests,
    /// tools; the watch uses [`PodInfo::from_wire_shared`]).
    pub fn from_wire(pod: PodWire) -> Self {
        Self::from_wire_shared(pod, &mut NamedPortsInterner::default())
    }

    /// The record of a decoded pod, its named ports shared through `ports`.
    pub fn from_wire_shared(pod: PodWire, ports: &mut NamedPortsInterner) -> Self {
        let mut conditions = pod.status.conditions;
        let is_true = |t: &str| conditions.iter().any(|c| c.type_ == t && c.status == "True");
        let (containers_ready, ready) = (is_true(CONTAINERS_READY), is_true(READY));
        let mut gates = Vec::new();
        let mut foreign_gate_pending = false;
        for g in pod.spec.readiness_gates {
            let at = conditions.iter().position(|c| c.type_ == g.condition_type);
            if !g.condition_type.starts_with(READINESS_GATE_PREFIX) {
                foreign_gate_pending |= at.is_none_or(|i| conditions[i].status != "True");
                continue;
            }
            let current = at.map(|i| {
                let c = conditions.swap_remove(i);
                CurrentCondition {
                    status: c.status.into(),
                    reason: c.reason.map(Into::into),
                    message: c.message.map(Into::into),
                    last_transition_time: c.last_transition_time,
                }
            });
            gates.push(GateState { condition_type: g.condition_type.into(), current });
        }
        let quic_annotated = pod.metadata.annotations.is_some_and(|a| a.contains_key(QUIC_ENABLED_CONTAINERS));
        let mut quic = Vec::new();
        let mut named_ports: Vec<(Box<str>, u16)> = Vec::new();
        let sidecars = pod.spec.init_containers.into_iter().filter(|c| c.restart_policy.as_deref() == Some("Always"));
        for c in pod.spec.containers.into_iter().chain(sidecars) {
            if quic_annotated && let Some(value) = c.env.into_iter().find_map(|e| e.value) {
                let ports = c.ports.iter().filter_map(|p| u16::try_from(p.container_port).ok()).collect();
                quic.push((ports, QuicServerId::parse_env(&value).map_err(Into::into)));
            }
            for p in c.ports {
                if let (Some(name), Ok(port)) = (p.name, u16::try_from(p.container_port))
                    && !named_ports.iter().any(|(n, _)| **n == *name)
                {
                    named_ports.push((name.into(), port));
                }
            }
        }
        let quic = quic_annotated.then(|| Box::new(QuicIds { containers: quic.into() }));
        let gated = (!gates.is_empty()).then(|| {
            Box::new(GatedPod {
                uid: pod.metadata.uid.unwrap_or_default().into(),
                node_name: pod.spec.node_name.map(Into::into),
                containers_ready,
                ready,
                terminating: pod.metadata.deletion_timestamp.is_some(),
                foreign_gate_pending,
                gates: gates.into(),
            })
        });
        let ips = PodIps::parse(pod.status.pod_ips.iter().map(|p| p.ip.as_str()).chain(pod.status.pod_ip.as_deref()));
        Self { named_ports: ports.intern(named_ports), gated, ips, quic }
    }

    /// The QUIC server ID of this pod's target at `port`.
    pub fn quic_server_id(&self, port: u16) -> Result<QuicServerId, QuicIdMissing> {
        self.quic.as_ref().ok_or(QuicIdMissing::NoAnnotation)?.for_port(port)
    }

    /// The record of a full `Pod` object, through the same decoding as the watch (tests, tools).
    pub fn from_pod(pod: &Pod) -> Self {
        let json = serde_json::to_value(pod).expect("a Pod serialises");
        Self::from_wire(serde_json::from_value(json).expect("a Pod's JSON decodes as PodWire"))
    }

    /// Our target-health readiness gates (empty for most pods).
    pub fn gates(&self) -> &[GateState] {
        self.gated.as_ref().map_or(&[], |g| &g.gates)
    }

    /// The pod's UID, kept only for pods with one of our gates (the only pods whose conditions
    /// are patched).
    pub fn uid(&self) -> Option<&str> {
        self.gated.as_ref().map(|g| &*g.uid)
    }

    /// The pod's node, kept only for pods with one of our gates (the only pods whose node's
    /// readiness decides anything).
    pub fn node_name(&self) -> Option<&str> {
        self.gated.as_ref().and_then(|g| g.node_name.as_deref())
    }

    /// Our readiness gate `condition_type`, when the pod carries it.
    pub fn gate(&self, condition_type: &str) -> Option<&GateState> {
        self.gates().iter().find(|g| &*g.condition_type == condition_type)
    }

    /// Whether the pod carries the readiness gate `condition_type`.
    pub fn has_gate(&self, condition_type: &str) -> bool {
        self.gate(condition_type).is_some()
    }

    /// Status of our gate `condition_type` (`None`: no such gate or no condition yet).
    pub fn gate_status(&self, condition_type: &str) -> Option<&str> {
        self.gate(condition_type).and_then(|g| g.current.as_ref()).map(|c| &*c.status)
    }

    /// Nothing but our target-health gates can hold the pod back from Ready: containers are
    /// ready and every gate that is not True is one of ours. Such a pod must be registered, or
    /// the gate can never turn True (the deadlock ALBC documents). This includes the moment
    /// after our gates turned True and before the kubelet flips Ready: dropping the target then
    /// would deregister a healthy pod and register it again a second later. A pod without any
    /// of our gates is never held back by them: false (its readiness is the kubelet's call).
    pub fn only_waiting_on_our_gates(&self) -> bool {
        self.gated.as_ref().is_some_and(|g| g.containers_ready && !g.terminating && !g.foreign_gate_pending)
    }

    /// The pod's named container ports (name → number).
    pub fn named_container_ports(&self) -> BTreeMap<String, u16> {
        self.named_ports.iter().map(|(n, p)| (n.to_string(), *p)).collect()
    }
}

/// A readiness-gate condition this controller wrote on a pod: what the pod's next watch event
/// shows if nothing else changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateWrite {
    pub condition_type: String,
    pub status: String,
    pub reason: Option<String>,
    pub message: Option<String>,
}

/// Whether the change from `old` to `new` is nothing but our own condition writes `ours`: then no
/// binding needs to look at the pod again (the pass that wrote them already decided with them),
/// and waking the binding would only cost a reconcile. Any other change (readiness, addresses,
/// another writer's condition, a different value than ours) is a real change.
pub fn only_our_gate_writes(old: &PodInfo, new: &PodInfo, ours: &[GateWrite]) -> bool {
    let (Some(o), Some(n)) = (old.gated.as_deref(), new.gated.as_deref()) else { return false };
    if ours.is_empty() || o.gates.len() != n.gates.len() {
        return false;
    }
    let mut expected = o.clone();
    for g in expected.gates.iter_mut() {
        let Some(w) = ours.iter().find(|w| *w.condition_type == *g.condition_type) else { continue };
        let Some(seen) = n.gates.iter().find(|x| x.condition_type == g.condition_type) else { return false };
        let Some(seen) = seen.current.as_ref() else { return false };
        if seen.parts() != (w.status.as_str(), w.reason.as_deref(), w.message.as_deref()) {
            return false;
        }
        // The API server's transition time is whatever the write carried: not compared.
        g.current = Some(seen.clone());
    }
    expected == *n && old.ips == new.ips && old.named_ports == new.named_ports && old.quic == new.quic
}

/// Node readiness as far as target decisions care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeReadiness {
    Ready,
    NotReady,
    Unknown,
}

impl NodeReadiness {
    pub fn of(node: &Node) -> Self {
        let cond = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == READY));
        match cond.map(|c| c.status.as_str()) {
            Some("True") => Self::Ready,
            Some("False") => Self::NotReady,
            _ => Self::Unknown,
        }
    }
}

/// Drops what the controller never reads from a node: everything but labels, the Ready
/// condition, `spec.providerID` and the `InternalIP` and `Hostname` addresses (instance
/// targets and their cross-check, [`crate::nodes`]).
pub fn trim_node(node: &mut Node) {
    node.metadata.managed_fields = None;
    node.metadata.annotations = None;
    let provider_id = node.spec.take().and_then(|s| s.provider_id);
    node.spec =
        provider_id.map(|p| k8s_openapi::api::core::v1::NodeSpec { provider_id: Some(p), ..Default::default() });
    if let Some(status) = node.status.take() {
        node.status = Some(k8s_openapi::api::core::v1::NodeStatus {
            conditions: status.conditions.map(|cs| cs.into_iter().filter(|c| c.type_ == READY).collect()),
            addresses: status
                .addresses
                .map(|a| a.into_iter().filter(|a| a.type_ == "InternalIP" || a.type_ == "Hostname").collect()),
            ..Default::default()
        });
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    use k8s_openapi::api::core::v1::{Pod, PodCondition, PodReadinessGate, PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    /// A pod with the given conditions (type, status) and readiness gates.
    pub fn pod(name: &str, conditions: &[(&str, &str)], gates: &[&str]) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                uid: Some(format!("uid-{name}")),
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: Some("node-a".into()),
                readiness_gates: Some(
                    gates.iter().map(|g| PodReadinessGate { condition_type: g.to_string() }).collect(),
                ),
                ..Default::default()
            }),
            status: Some(PodStatus {
                conditions: Some(
                    conditions
                        .iter()
                        .map(|(t, s)| PodCondition {
                            type_: t.to_string(),
                            status: s.to_string(),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
        }
    }

    pub fn terminating(mut p: Pod) -> Pod {
        p.metadata.deletion_timestamp = Some(Time(Default::default()));
        p
    }

    /// `p` with the QUIC annotation and, per (container port, server-ID variable value), one
    /// container (the value `None`: the container lacks the variable).
    pub fn quic(mut p: Pod, containers: &[(i32, Option<&str>)]) -> Pod {
        use k8s_openapi::api::core::v1::{Container, ContainerPort, EnvVar};
        p.metadata.annotations = Some([(crate::wire::QUIC_ENABLED_CONTAINERS.to_string(), "app".to_string())].into());
        let spec = p.spec.get_or_insert_with(Default::default);
        spec.containers = containers
            .iter()
            .enumerate()
            .map(|(i, (port, id))| Container {
                name: format!("c{i}"),
                ports: Some(vec![ContainerPort { container_port: *port, ..Default::default() }]),
                env: id.map(|v| {
                    vec![EnvVar {
                        name: crate::wire::DEFAULT_QUIC_ENV.into(),
                        value: Some(v.into()),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            })
            .collect();
        p
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    const G: &str = "target-health.elbv2.k8s.aws/web";
    const G2: &str = "target-health.elbv2.k8s.aws/api";

    #[test]
    fn quic_server_ids_are_read_per_declared_port_as_the_upstream_reads_them() {
        let (a, b) = ("ASNFZ4mrze8=", "AAAAAAAAAAE=");
        let info = PodInfo::from_pod(&quic(pod("q", &[], &[]), &[(443, None), (8443, Some(a)), (9443, Some(b))]));
        let id = |p| info.quic_server_id(p).map(|i| i.to_string());
        assert_eq!(id(8443).unwrap(), "0x0123456789abcdef");
        assert_eq!(id(9443).unwrap(), "0x0000000000000001");
        assert_eq!(id(443).unwrap(), "0x0123456789abcdef", "an undeclared port takes the first container's ID");
        let none = PodInfo::from_pod(&quic(pod("n", &[], &[]), &[(443, None)]));
        assert_eq!(none.quic_server_id(443), Err(QuicIdMissing::NoVariable));
        let bad = PodInfo::from_pod(&quic(pod("b", &[], &[]), &[(443, Some("AQID"))]));
        assert!(matches!(bad.quic_server_id(443), Err(QuicIdMissing::Invalid(w)) if w.contains("3 bytes")));
        let plain = PodInfo::from_pod(&pod("p", &[], &[]));
        assert_eq!(plain.quic_server_id(443), Err(QuicIdMissing::NoAnnotation));
        assert!(plain.quic.is_none());
        assert!(QuicIdMissing::NoVariable.to_string().contains("/mutate-v1-pod-server-id"));
    }

    #[test]
    fn our_own_gate_write_is_told_from_every_other_change() {
        let before = PodInfo::from_pod(&pod("a", &[("ContainersReady", "True"), (G, "False")], &[G, G2]));
        let write = |status: &str, reason: Option<&str>| GateWrite {
            condition_type: G.into(),
            status: status.into(),
            reason: reason.map(Into::into),
            message: None,
        };
        let with = |conds: &[(&str, &str)]| PodInfo::from_pod(&pod("a", conds, &[G, G2]));
        let after = with(&[("ContainersReady", "True"), (G, "True")]);
        assert!(only_our_gate_writes(&before, &after, &[write("True", None)]));
        assert!(!only_our_gate_writes(&before, &after, &[]), "no write of ours expected");
        assert!(!only_our_gate_writes(&before, &after, &[write("False", Some("Elb.RegistrationInProgress"))]));
        // Our write plus the kubelet's Ready, or another gate's condition: real changes.
        let and_ready = with(&[("ContainersReady", "True"), (G, "True"), ("Ready", "True")]);
        assert!(!only_our_gate_writes(&before, &and_ready, &[write("True", None)]));
        let and_other = with(&[("ContainersReady", "True"), (G, "True"), (G2, "True")]);
        assert!(!only_our_gate_writes(&before, &and_other, &[write("True", None)]));
        // A pod without our gates is never filtered.
        let plain = PodInfo::from_pod(&pod("a", &[], &[]));
        assert!(!only_our_gate_writes(&plain, &plain, &[write("True", None)]));
    }

    #[test]
    fn a_pod_record_keeps_its_addresses_of_each_family() {
        let mut p = pod("a", &[], &[]);
        let st = p.status.as_mut().unwrap();
        st.pod_ip = Some("10.0.1.5".into());
        st.pod_ips = Some(
            ["10.0.1.5", "fd00::5"].iter().map(|ip| k8s_openapi::api::core::v1::PodIP { ip: ip.to_string() }).collect(),
        );
        let ips = PodInfo::from_pod(&p).ips;
        for (ip, held) in [("10.0.1.5", true), ("fd00::5", true), ("10.0.1.6", false), ("fd00::6", false)] {
            assert_eq!(ips.contains(ip.parse().unwrap()), held, "{ip}");
        }
        assert_eq!(ips.to_string(), "10.0.1.5, fd00::5");
        // Only podIP (an older writer): still known. Nothing yet: none.
        assert!(PodIps::parse(["10.0.1.7"]).contains("10.0.1.7".parse().unwrap()));
        assert!(PodInfo::from_pod(&pod("b", &[], &[])).ips.is_empty());
        assert!(PodIps::parse(["not-an-ip", ""]).is_empty());
        // The record stays small: every pod of the cluster has one.
        assert!(std::mem::size_of::<PodIps>() <= 16, "{}", std::mem::size_of::<PodIps>());
    }

    #[test]
    fn waiting_on_our_gates_table() {
        #[allow(clippy::type_complexity)] // a table of cases reads best as tuples
        let cases: &[(&str, &[(&str, &str)], &[&str], bool)] = &[
            ("containers ready, our gate absent", &[("ContainersReady", "True")], &[G], true),
            ("containers ready, our gate False", &[("ContainersReady", "True"), (G, "False")], &[G], true),
            (
                "gate just turned True, Ready not flipped yet",
                &[("ContainersReady", "True"), (G, "True"), ("Ready", "False")],
                &[G],
                true,
            ),
            ("containers not ready", &[("ContainersReady", "False")], &[G], false),
            ("no gates at all (readiness is the kubelet's call)", &[("ContainersReady", "True")], &[], false),
            ("only foreign gates, pending", &[("ContainersReady", "True")], &["example.com/warm"], false),
            ("foreign gate pending", &[("ContainersReady", "True")], &[G, "example.com/warm"], false),
            ("two of our gates pending", &[("ContainersReady", "True")], &[G, G2], true),
            ("one of ours True, other pending", &[("ContainersReady", "True"), (G2, "True")], &[G, G2], true),
        ];
        for (what, conds, gates, want) in cases {
            let info = PodInfo::from_pod(&pod("p", conds, gates));
            assert_eq!(info.only_waiting_on_our_gates(), *want, "{what}");
        }
        let t = PodInfo::from_pod(&terminating(pod("p", &[("ContainersReady", "True")], &[G])));
        assert!(!t.only_waiting_on_our_gates(), "terminating pods are never registered");
    }

    #[test]
    fn record_keeps_what_decisions_need() {
        let mut p = pod("p", &[("ContainersReady", "True"), ("PodScheduled", "True"), (G, "False")], &[G, "x.io/warm"]);
        p.metadata.annotations = Some([("big".to_string(), "x".repeat(1000))].into());
        let info = PodInfo::from_pod(&p);
        assert_eq!(info.uid(), Some("uid-p"));
        assert_eq!(info.node_name(), Some("node-a"));
        let g = info.gated.as_deref().unwrap();
        assert!(g.containers_ready && !g.ready && !g.terminating);
        assert!(g.foreign_gate_pending, "x.io/warm has no condition yet");
        assert_eq!(info.gates().len(), 1, "only our gates are kept");
        assert_eq!(info.gate_status(G), Some("False"));
        assert!(info.has_gate(G) && !info.has_gate(G2));
        assert_eq!(info.gate(G).unwrap().current.as_ref().unwrap().parts(), ("False", None, None));
    }

    #[test]
    fn a_pod_without_our_gates_keeps_only_its_named_ports() {
        for gates in [&[][..], &["x.io/warm"][..]] {
            let mut p = pod("p", &[("ContainersReady", "True"), ("Ready", "True")], gates);
            p.spec.as_mut().unwrap().containers = vec![k8s_openapi::api::core::v1::Container {
                ports: Some(vec![k8s_openapi::api::core::v1::ContainerPort {
                    name: Some("http".into()),
                    container_port: 8080,
                    ..Default::default()
                }]),
                ..Default::default()
            }];
            let info = PodInfo::from_pod(&p);
            assert_eq!(info.gated, None, "gates {gates:?}");
            assert_eq!((info.uid(), info.node_name(), info.gates().len()), (None, None, 0));
            assert_eq!(info.named_container_ports(), [("http".to_string(), 8080)].into());
            assert!(!info.has_gate(G) && info.gate_status(G).is_none() && !info.only_waiting_on_our_gates());
        }
    }

    #[test]
    fn equal_named_port_lists_are_shared_and_unused_ones_dropped() {
        let with_ports = |ports: &[(&str, i32)]| {
            let mut p = pod("p", &[], &[]);
            p.spec.as_mut().unwrap().containers = vec![k8s_openapi::api::core::v1::Container {
                ports: Some(
                    ports
                        .iter()
                        .map(|(n, c)| k8s_openapi::api::core::v1::ContainerPort {
                            name: Some(n.to_string()),
                            container_port: *c,
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }];
            let json = serde_json::to_value(&p).unwrap();
            serde_json::from_value::<PodWire>(json).unwrap()
        };
        let mut interner = NamedPortsInterner::default();
        let a = PodInfo::from_wire_shared(with_ports(&[("http", 8080)]), &mut interner);
        let b = PodInfo::from_wire_shared(with_ports(&[("http", 8080)]), &mut interner);
        let c = PodInfo::from_wire_shared(with_ports(&[("http", 9090)]), &mut interner);
        assert!(Arc::ptr_eq(&a.named_ports, &b.named_ports), "equal lists share one allocation");
        assert_eq!(a.named_container_ports(), [("http".to_string(), 8080)].into());
        assert_eq!(c.named_container_ports(), [("http".to_string(), 9090)].into());
        assert_eq!(interner.len(), 2);
        drop((a, b, c));
        // Lists nobody holds are swept once the set has grown past the sweep mark.
        let held: Vec<PodInfo> =
            (0..200).map(|i| PodInfo::from_wire_shared(with_ports(&[("p", 1000 + i)]), &mut interner)).collect();
        assert!(interner.len() <= 200 + 2 && interner.len() >= 200, "{}", interner.len());
        assert!(held.iter().all(|p| Arc::strong_count(&p.named_ports) == 2), "held lists are kept");
        drop(held);
        let _ = PodInfo::from_wire_shared(with_ports(&[("x", 1)]), &mut interner);
        let _ = (0..300).map(|i| PodInfo::from_wire_shared(with_ports(&[("y", i)]), &mut interner)).count();
        assert!(interner.len() < 500, "unused lists are dropped: {}", interner.len());
    }

    #[test]
    fn record_keeps_only_named_container_ports() {
        use k8s_openapi::api::core::v1::{Container, ContainerPort};
        let port = |name: Option<&str>, n: i32| ContainerPort {
            name: name.map(String::from),
            container_port: n,
            protocol: Some("TCP".into()),
            ..Default::default()
        };
        let container = |name: &str, ports: Vec<ContainerPort>| Container {
            name: name.into(),
            image: Some("registry.example/app:1".into()),
            ports: Some(ports),
            ..Default::default()
        };
        let mut p = pod("p", &[], &[]);
        p.spec.as_mut().unwrap().containers = vec![
            container("app", vec![port(Some("http"), 8080), port(None, 9000)]),
            container("sidecar", vec![port(None, 15000)]),
            container("metrics", vec![port(Some("metrics"), 9090), port(Some("http"), 1)]),
        ];
        let want: BTreeMap<String, u16> = [("http".to_string(), 8080), ("metrics".to_string(), 9090)].into();
        assert_eq!(PodInfo::from_pod(&p).named_container_ports(), want);
        assert!(PodInfo::from_pod(&pod("p", &[], &[])).named_ports.is_empty());
    }
}
