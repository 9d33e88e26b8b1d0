//! Names shared with the upstream AWS Load Balancer Controller, so existing manifests,
//! namespaces and AWS resources keep working when users swap controllers.

/// API group of the TargetGroupBinding and IngressClassParams CRDs.
pub const ELBV2_GROUP: &str = "elbv2.k8s.aws";

/// Prefix of the pod readiness-gate condition type; the suffix is the TargetGroupBinding name.
pub const READINESS_GATE_PREFIX: &str = "target-health.elbv2.k8s.aws/";

/// Namespace label that turns readiness-gate injection on.
pub const READINESS_GATE_INJECT_LABEL: &str = "elbv2.k8s.aws/pod-readiness-gate-inject";

/// Finalizer on TargetGroupBindings: cleanup deregisters our targets before the object goes.
pub const TGB_FINALIZER: &str = "elbv2.k8s.aws/resources";

/// Annotation holding the reconcile checkpoint (see [`crate::checkpoint`]).
pub const CHECKPOINT_ANNOTATION: &str = "elbv2.k8s.aws/checkpoint";
/// When the checkpoint was written (RFC 3339).
pub const CHECKPOINT_TIMESTAMP_ANNOTATION: &str = "elbv2.k8s.aws/checkpoint-timestamp";

/// Label EndpointSlices carry to name their Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// AWS tag naming the cluster that owns a resource.
pub const CLUSTER_TAG: &str = "elbv2.k8s.aws/cluster";

/// Pod condition set by the kubelet when all containers pass readiness.
pub const CONTAINERS_READY: &str = "ContainersReady";
/// Pod/Node condition `Ready`.
pub const READY: &str = "Ready";

/// Readiness-gate condition type for a TargetGroupBinding.
pub fn readiness_gate_condition(tgb_name: &str) -> String {
    format!("{READINESS_GATE_PREFIX}{tgb_name}")
}

/// The TargetGroupBinding name of a readiness-gate condition type, if it is one of ours.
pub fn tgb_of_readiness_gate(condition_type: &str) -> Option<&str> {
    condition_type.strip_prefix(READINESS_GATE_PREFIX).filter(|s| !s.is_empty())
}

/// ConfigMap in which a multi-cluster TargetGroupBinding records the targets it registered.
pub fn multicluster_configmap_name(tgb_name: &str) -> String {
    format!("aws-lbc-targets-{tgb_name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_round_trip() {
        let c = readiness_gate_condition("web");
        assert_eq!(c, "target-health.elbv2.k8s.aws/web");
        assert_eq!(tgb_of_readiness_gate(&c), Some("web"));
        assert_eq!(tgb_of_readiness_gate("target-health.elbv2.k8s.aws/"), None);
        assert_eq!(tgb_of_readiness_gate("example.com/ready"), None);
    }
}
