//! Check 7: nodes. A missing `spec.providerID` is fine: IP targets never need it and instance
//! targets resolve such nodes by their InternalIP (`crate::nodes`, issue 21); the `node.cloudprovider.kubernetes.io/uninitialized` taint
//! means a cloud-controller-manager was expected and never initialised the node (the CCM deadlock
//! when the CCM itself cannot schedule).

use super::{Verdict, list};

pub const CHECK: &str = "nodes";
pub const UNINITIALIZED_TAINT: &str = "node.cloudprovider.kubernetes.io/uninitialized";

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeInfo {
    pub name: String,
    pub provider_id: Option<String>,
    /// `Ready` condition is `True`.
    pub ready: bool,
    pub taint_keys: Vec<String>,
}

/// `instance_targets`: some Service or Ingress asks for instance targets (nodes without providerID
/// are then resolved by their InternalIP, which needs `ec2:DescribeInstances`: said, not failed).
pub fn check(nodes: &[NodeInfo], instance_targets: bool) -> Vec<Verdict> {
    let mut out = Vec::new();
    let tainted: Vec<&str> = nodes
        .iter()
        .filter(|n| n.taint_keys.iter().any(|t| t == UNINITIALIZED_TAINT))
        .map(|n| n.name.as_str())
        .collect();
    if !tainted.is_empty() {
        out.push(Verdict::fail(
            CHECK,
            format!("nodes {}", list(&tainted, 5)),
            format!("taint {UNINITIALIZED_TAINT} (kubelet started with --cloud-provider=external)"),
            "no uninitialized taint: the cloud-controller-manager initialises each node and removes it",
            "make sure the AWS cloud-controller-manager runs and tolerates this taint (deploy it from RKE2's static \
             manifests), or start kubelets without --cloud-provider=external",
        ));
    }
    let not_ready: Vec<&str> = nodes.iter().filter(|n| !n.ready).map(|n| n.name.as_str()).collect();
    if !not_ready.is_empty() {
        out.push(Verdict::warn(
            CHECK,
            format!("nodes {}", list(&not_ready, 5)),
            "Ready condition is not True",
            "Ready nodes",
            "kubectl describe node <name>: pods on these nodes leave the target groups",
        ));
    }
    let no_id: Vec<&str> =
        nodes.iter().filter(|n| n.provider_id.as_deref().unwrap_or("").is_empty()).map(|n| n.name.as_str()).collect();
    if out.is_empty() {
        let ids = if no_id.is_empty() {
            "all with providerID".to_string()
        } else if instance_targets {
            format!(
                "{} without providerID (fine: instance targets resolve them by InternalIP, which needs \
                 ec2:DescribeInstances)",
                no_id.len()
            )
        } else {
            format!("{} without providerID (fine: only IP targets are in use)", no_id.len())
        };
        out.push(Verdict::ok(CHECK, format!("{} nodes", nodes.len()), format!("all Ready, none uninitialized; {ids}")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Status;

    fn node(name: &str, id: Option<&str>, ready: bool, taints: &[&str]) -> NodeInfo {
        NodeInfo {
            name: name.into(),
            provider_id: id.map(str::to_string),
            ready,
            taint_keys: taints.iter().map(|t| t.to_string()).collect(),
        }
    }

    #[test]
    fn table() {
        let good = node("a", Some("aws:///us-east-1a/i-1"), true, &[]);
        let no_id = node("b", None, true, &[]);
        let stuck = node("c", None, false, &[UNINITIALIZED_TAINT]);
        #[allow(clippy::type_complexity)] // a table of cases reads best as tuples
        let cases: Vec<(&str, Vec<NodeInfo>, bool, Vec<Status>, &str)> = vec![
            ("healthy", vec![good.clone()], true, vec![Status::Ok], "all with providerID"),
            ("no id, ip targets", vec![good.clone(), no_id.clone()], false, vec![Status::Ok], "1 without providerID"),
            ("no id, instance targets", vec![no_id.clone()], true, vec![Status::Ok], "resolve them by InternalIP"),
            (
                "ccm deadlock",
                vec![good.clone(), stuck.clone()],
                false,
                vec![Status::Fail, Status::Warn],
                UNINITIALIZED_TAINT,
            ),
            ("not ready", vec![node("d", Some("x"), false, &["other"])], false, vec![Status::Warn], "not True"),
        ];
        for (name, nodes, instance, want, text) in cases {
            let v = check(&nodes, instance);
            assert_eq!(v.iter().map(|v| v.status).collect::<Vec<_>>(), want, "{name}: {v:?}");
            assert!(v.iter().any(|v| v.found.contains(text) || v.object.contains(text)), "{name}: {v:?}");
        }
    }
}
