//! The few facts about pods and nodes that target decisions need.
//!
//! The controller caches trimmed pods ([`trim_pod`]) so memory stays proportional to what we
//! read, not to the size of pod specs.

use crate::names::{CONTAINERS_READY, READINESS_GATE_PREFIX, READY};
use k8s_openapi::api::core::v1::{Container, Node, Pod, PodCondition, PodSpec, PodStatus};
use std::collections::BTreeMap;

/// What target decisions need to know about a pod.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodInfo {
    pub uid: String,
    pub node_name: Option<String>,
    pub containers_ready: bool,
    pub ready: bool,
    pub terminating: bool,
    /// Readiness gates of the pod with the status of their condition (`None` when absent).
    pub gates: Vec<(String, Option<String>)>,
}

impl PodInfo {
    pub fn from_pod(pod: &Pod) -> Self {
        let conditions: &[PodCondition] = pod.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or_default();
        let is_true = |t: &str| conditions.iter().any(|c| c.type_ == t && c.status == "True");
        let gates = pod
            .spec
            .as_ref()
            .and_then(|s| s.readiness_gates.as_ref())
            .map(|gs| {
                gs.iter()
                    .map(|g| {
                        let status = conditions.iter().find(|c| c.type_ == g.condition_type).map(|c| c.status.clone());
                        (g.condition_type.clone(), status)
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self {
            uid: pod.metadata.uid.clone().unwrap_or_default(),
            node_name: pod.spec.as_ref().and_then(|s| s.node_name.clone()),
            containers_ready: is_true(CONTAINERS_READY),
            ready: is_true(READY),
            terminating: pod.metadata.deletion_timestamp.is_some(),
            gates,
        }
    }

    /// Whether the pod carries the readiness gate `condition_type`.
    pub fn has_gate(&self, condition_type: &str) -> bool {
        self.gates.iter().any(|(g, _)| g == condition_type)
    }

    /// Nothing but our target-health gates can hold the pod back from Ready: containers are
    /// ready and every gate that is not True is one of ours. Such a pod must be registered, or
    /// the gate can never turn True (the deadlock ALBC documents). This includes the moment
    /// after our gates turned True and before the kubelet flips Ready: dropping the target then
    /// would deregister a healthy pod and register it again a second later.
    pub fn only_waiting_on_our_gates(&self) -> bool {
        self.containers_ready
            && !self.terminating
            && self
                .gates
                .iter()
                .filter(|(_, s)| s.as_deref() != Some("True"))
                .all(|(g, _)| g.starts_with(READINESS_GATE_PREFIX))
    }
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

/// Drops what the controller never reads from a pod before it is cached: container specs,
/// volumes, most status, managed fields and annotations. Kept: labels (Service selectors and
/// the webhook), node name, readiness gates, conditions, IPs, deletion timestamp, uid, and the
/// named container ports (`spec.networking` of a binding may name one) in [`NAMED_PORTS_KEY`].
pub fn trim_pod(pod: &mut Pod) {
    pod.metadata.managed_fields = None;
    pod.metadata.annotations = pod.spec.as_ref().and_then(|s| encode_named_ports(&s.containers));
    pod.metadata.owner_references = None;
    if let Some(spec) = pod.spec.take() {
        pod.spec = Some(PodSpec {
            node_name: spec.node_name,
            readiness_gates: spec.readiness_gates,
            containers: Vec::new(),
            ..Default::default()
        });
    }
    if let Some(status) = pod.status.take() {
        pod.status = Some(PodStatus {
            conditions: status.conditions.map(|cs| {
                cs.into_iter()
                    .filter(|c| {
                        c.type_ == READY || c.type_ == CONTAINERS_READY || c.type_.starts_with(READINESS_GATE_PREFIX)
                    })
                    .map(|c| PodCondition { last_probe_time: None, ..c })
                    .collect()
            }),
            pod_ip: status.pod_ip,
            pod_ips: status.pod_ips,
            phase: status.phase,
            ..Default::default()
        });
    }
}

/// Where a trimmed pod keeps its named container ports, as `name=port,…`. A k8s-openapi
/// `Container` costs ~2 KB even when empty (probes, lifecycle and security context are inline),
/// i.e. ~20 MiB for 10k pods; this string costs a few dozen bytes. It exists only in the
/// controller's cache and is never written to the API server.
pub const NAMED_PORTS_KEY: &str = "aws-lb-controller.internal/named-ports";

fn encode_named_ports(containers: &[Container]) -> Option<BTreeMap<String, String>> {
    let pairs: Vec<String> = containers
        .iter()
        .flat_map(|c| c.ports.iter().flatten())
        .filter_map(|p| p.name.as_ref().map(|n| format!("{n}={}", p.container_port)))
        .collect();
    (!pairs.is_empty()).then(|| [(NAMED_PORTS_KEY.to_string(), pairs.join(","))].into())
}

/// The pod's named container ports (name → number), for named ports in `spec.networking`. A name
/// two containers both use (invalid in Kubernetes) resolves to the first.
pub fn named_container_ports(pod: &Pod) -> BTreeMap<String, u16> {
    let mut out = BTreeMap::new();
    if let Some(encoded) = pod.metadata.annotations.as_ref().and_then(|a| a.get(NAMED_PORTS_KEY)) {
        for (name, port) in encoded.split(',').filter_map(|pair| pair.split_once('=')) {
            if let Ok(port) = port.parse::<u16>() {
                out.entry(name.to_string()).or_insert(port);
            }
        }
    }
    let ports = pod.spec.iter().flat_map(|s| &s.containers).flat_map(|c| c.ports.iter().flatten());
    for p in ports {
        if let (Some(name), Ok(port)) = (&p.name, u16::try_from(p.container_port)) {
            out.entry(name.clone()).or_insert(port);
        }
    }
    out
}

/// Drops what the controller never reads from a node: everything but labels and the Ready
/// condition.
pub fn trim_node(node: &mut Node) {
    node.metadata.managed_fields = None;
    node.metadata.annotations = None;
    node.spec = None;
    if let Some(status) = node.status.take() {
        node.status = Some(k8s_openapi::api::core::v1::NodeStatus {
            conditions: status.conditions.map(|cs| cs.into_iter().filter(|c| c.type_ == READY).collect()),
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
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    const G: &str = "target-health.elbv2.k8s.aws/web";
    const G2: &str = "target-health.elbv2.k8s.aws/api";

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
            ("no gates at all (readiness is the kubelet's call)", &[("ContainersReady", "True")], &[], true),
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
    fn trim_keeps_what_decisions_need() {
        let mut p = pod("p", &[("ContainersReady", "True"), ("PodScheduled", "True"), (G, "False")], &[G]);
        p.metadata.annotations = Some([("big".to_string(), "x".repeat(1000))].into());
        let before = PodInfo::from_pod(&p);
        trim_pod(&mut p);
        assert_eq!(PodInfo::from_pod(&p), before);
        assert!(p.metadata.annotations.is_none());
        let conds = p.status.unwrap().conditions.unwrap();
        assert!(conds.iter().all(|c| c.type_ != "PodScheduled"));
    }

    #[test]
    fn trim_keeps_only_named_container_ports() {
        use k8s_openapi::api::core::v1::ContainerPort;
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
        assert_eq!(named_container_ports(&p), want);
        trim_pod(&mut p);
        assert_eq!(named_container_ports(&p), want, "trimming keeps what named ports need");
        assert!(p.spec.as_ref().unwrap().containers.is_empty(), "no container structs kept");
        assert_eq!(p.metadata.annotations.as_ref().map(|a| a.len()), Some(1), "only the encoded ports");
        let mut plain = pod("p", &[], &[]);
        trim_pod(&mut plain);
        assert!(plain.metadata.annotations.is_none(), "nothing kept for a pod without named ports");
    }
}
