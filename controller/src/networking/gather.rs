//! Glue between the caches and `lbc_model::lb::backend_rules`: which bindings take part, their
//! endpoint IPs (pod IPs; for instance-mode bindings the eligible nodes' InternalIPs) and whether
//! those are all known, and which problems to report on which binding (without repeating them).

use crate::stores::Stores;
use kube::ResourceExt;
use lbc_model::crd::TargetGroupBinding;
use lbc_model::crd::TargetType;
use lbc_model::endpoints::{EndpointInputs, desired_targets, resolve_service_port};
use lbc_model::lb::backend_rules::RuleProblem;
use lbc_model::names::readiness_gate_condition;
use lbc_model::nodes::{NodeFacts, eligible_locators};
use lbc_model::pod::NodeReadiness;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A binding with `spec.networking`, the pod IPs it registers and each pod's named container
/// ports (empty when the endpoint names no pod).
pub struct BindingTargets {
    pub tgb: Arc<TargetGroupBinding>,
    /// `namespace/name`.
    pub key: String,
    pub endpoints: BTreeMap<IpAddr, BTreeMap<String, u16>>,
    /// False when some endpoints could not be listed (Service missing, port not resolved, a node
    /// without an address): the binding keeps its earlier rules (`EndpointsKnown` in the model).
    pub endpoints_known: bool,
}

/// Every binding with `spec.networking`, and whether each one's endpoints are fully known.
#[derive(Default)]
pub struct Gathered {
    pub bindings: Vec<BindingTargets>,
    /// Why a binding's endpoints are not all known (it keeps its rules): `namespace/name: reason`.
    pub incomplete: Vec<String>,
}

pub fn binding_key(tgb: &TargetGroupBinding) -> String {
    format!("{}/{}", tgb.namespace().unwrap_or_default(), tgb.name_any())
}

/// Bindings being deleted take no part: their rules go once no other binding needs them.
pub fn takes_part(tgb: &TargetGroupBinding) -> bool {
    tgb.metadata.deletion_timestamp.is_none() && tgb.spec.networking.as_ref().is_some_and(|n| !n.ingress.is_empty())
}

/// Endpoint IPs of every participating binding, computed as the target sync does
/// (`endpoints::desired_targets`: ready endpoints plus those held back only by our gates).
pub fn gather(stores: &Stores) -> Gathered {
    let mut out = Gathered::default();
    let mut tgbs: Vec<Arc<TargetGroupBinding>> = stores.tgbs.state().into_iter().filter(|t| takes_part(t)).collect();
    tgbs.sort_by_key(|t| binding_key(t));
    for tgb in tgbs {
        let key = binding_key(&tgb);
        let ns = tgb.namespace().unwrap_or_default();
        let unknown = |tgb, key| BindingTargets { tgb, key, endpoints: BTreeMap::new(), endpoints_known: false };
        let Some(svc) = stores.service(&ns, &tgb.spec.service_ref.name) else {
            out.incomplete.push(format!("{key}: Service {} not found", tgb.spec.service_ref.name));
            out.bindings.push(unknown(tgb, key));
            continue;
        };
        if tgb.spec.effective_target_type() == TargetType::Instance {
            out.bindings.push(node_targets(stores, tgb, key, &mut out.incomplete));
            continue;
        }
        let svc_port = match resolve_service_port(&svc, &tgb.spec.service_ref.port) {
            Ok(p) => p.clone(),
            Err(e) => {
                out.incomplete.push(format!("{key}: {e}"));
                out.bindings.push(unknown(tgb, key));
                continue;
            }
        };
        let gate = readiness_gate_condition(&tgb.name_any());
        let slices = stores.slices_of(&ns, &svc.name_any());
        let input = EndpointInputs {
            service_port: &svc_port,
            family: tgb.spec.ip_family(),
            gate: &gate,
            pod: |name: &str| stores.pod(&ns, name),
            node: |name: &str| stores.node(name).map(|n| NodeReadiness::of(&n)),
            // Rules open ports to addresses: a QUIC target's server ID does not matter here.
            quic: false,
        };
        let desired = desired_targets(slices.iter().map(Arc::as_ref), &input);
        let mut endpoints: BTreeMap<IpAddr, BTreeMap<String, u16>> = BTreeMap::new();
        for (target, pod) in &desired.targets {
            let ports = pod.as_ref().and_then(|p| stores.pod(&ns, &p.name)).map(|p| p.named_container_ports());
            endpoints.entry(target.ip).or_default().extend(ports.unwrap_or_default());
        }
        out.bindings.push(BindingTargets { tgb, key, endpoints, endpoints_known: true });
    }
    out
}

/// Instance mode: the targets are the eligible nodes, and their primary ENI is the one holding
/// the node's InternalIP (the address the instance lookup uses too), so the rules open the
/// NodePort on the security groups of those ENIs. A node without an InternalIP makes the
/// binding's endpoints incomplete (it keeps its rules).
fn node_targets(
    stores: &Stores,
    tgb: Arc<TargetGroupBinding>,
    key: String,
    incomplete: &mut Vec<String>,
) -> BindingTargets {
    let nodes: Vec<NodeFacts> = stores.nodes.state().iter().map(|n| NodeFacts::of(n)).collect();
    let by_name: BTreeMap<&str, &NodeFacts> = nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let mut endpoints: BTreeMap<IpAddr, BTreeMap<String, u16>> = BTreeMap::new();
    let mut endpoints_known = true;
    for name in eligible_locators(&nodes, tgb.spec.node_selector.as_ref()).keys() {
        match by_name.get(name.as_str()).and_then(|n| n.internal_ip) {
            Some(ip) => {
                endpoints.entry(ip).or_default();
            }
            None => {
                incomplete.push(format!("{key}: node {name} has no InternalIP address"));
                endpoints_known = false;
            }
        }
    }
    BindingTargets { tgb, key, endpoints, endpoints_known }
}

/// The binding a problem is about (`None`: about a security group, not one binding).
pub fn problem_binding(p: &RuleProblem) -> Option<&str> {
    p.binding()
}

/// The Warning note per binding: every problem of that binding, one per line.
pub fn notes_by_binding(problems: &[RuleProblem]) -> BTreeMap<String, String> {
    let mut by: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in problems {
        if let Some(b) = problem_binding(p) {
            by.entry(b.to_string()).or_default().push(p.to_string());
        }
    }
    by.into_iter().map(|(b, notes)| (b, notes.join("\n"))).collect()
}

/// Remembers the last Warning per binding so an unchanged problem is re-announced only once per
/// `repeat` (every pass would otherwise add an event).
#[derive(Default)]
pub struct EventMemory {
    last: BTreeMap<String, (String, Instant)>,
}

impl EventMemory {
    /// The notes to publish now; forgets bindings whose problems are gone.
    pub fn due(&mut self, notes: BTreeMap<String, String>, now: Instant, repeat: Duration) -> Vec<(String, String)> {
        self.last.retain(|b, _| notes.contains_key(b));
        let mut out = Vec::new();
        for (binding, note) in notes {
            let fresh = match self.last.get(&binding) {
                Some((last, at)) => last != &note || now.saturating_duration_since(*at) >= repeat,
                None => true,
            };
            if fresh {
                self.last.insert(binding.clone(), (note.clone(), now));
                out.push((binding, note));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unresolved(b: &str) -> RuleProblem {
        RuleProblem::UnresolvedEndpoints { binding: b.into(), count: 1, first: "10.0.0.1".parse().unwrap() }
    }

    #[test]
    fn notes_group_problems_per_binding_and_skip_group_problems() {
        let problems = vec![
            unresolved("a/x"),
            RuleProblem::InvalidPort { binding: "a/x".into(), port: 70000 },
            RuleProblem::UndescribedSecurityGroup { sg: "sg-1".into() },
            RuleProblem::EmptyPeer { binding: "b/y".into() },
        ];
        let notes = notes_by_binding(&problems);
        assert_eq!(notes.len(), 2);
        assert_eq!(notes["a/x"].lines().count(), 2);
        assert!(notes["a/x"].contains("70000"));
        assert!(notes["b/y"].contains("neither ipBlock nor securityGroup"));
    }

    #[test]
    fn event_memory_repeats_only_on_change_or_after_the_period() {
        let mut m = EventMemory::default();
        let t0 = Instant::now();
        let repeat = Duration::from_secs(600);
        let notes = |n: &str| BTreeMap::from([("a/x".to_string(), n.to_string())]);
        assert_eq!(m.due(notes("one"), t0, repeat).len(), 1);
        assert!(m.due(notes("one"), t0 + Duration::from_secs(5), repeat).is_empty());
        assert_eq!(m.due(notes("two"), t0 + Duration::from_secs(6), repeat), vec![("a/x".into(), "two".into())]);
        assert_eq!(m.due(notes("two"), t0 + Duration::from_secs(700), repeat).len(), 1);
        // Solved, then back: announced again at once.
        assert!(m.due(BTreeMap::new(), t0 + Duration::from_secs(701), repeat).is_empty());
        assert_eq!(m.due(notes("two"), t0 + Duration::from_secs(702), repeat).len(), 1);
    }

    #[test]
    fn bindings_being_deleted_or_without_ingress_take_no_part() {
        use lbc_model::crd::{NetworkingIngressRule, TargetGroupBindingNetworking};
        let mut tgb: TargetGroupBinding = serde_json::from_value(serde_json::json!({
            "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
            "metadata": {"name": "x", "namespace": "a"},
            "spec": {"serviceRef": {"name": "s", "port": 80}, "targetGroupARN": "arn"}
        }))
        .unwrap();
        assert!(!takes_part(&tgb));
        tgb.spec.networking = Some(TargetGroupBindingNetworking { ingress: vec![] });
        assert!(!takes_part(&tgb));
        tgb.spec.networking =
            Some(TargetGroupBindingNetworking { ingress: vec![NetworkingIngressRule { from: vec![], ports: vec![] }] });
        assert!(takes_part(&tgb));
        tgb.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH));
        assert!(!takes_part(&tgb));
        assert_eq!(binding_key(&tgb), "a/x");
    }
}
