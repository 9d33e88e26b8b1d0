//! `elbv2.k8s.aws/v1alpha1` TargetGroupBinding: ALBC still serves it (not stored), and clusters
//! that once ran ALBC ≤ 2.1 list it in the CRD's `status.storedVersions`; a CRD without it is
//! refused there. Served with conversion `None`: its fields are a subset of v1beta1's under the
//! same names, so the apiserver converts by relabelling alone. The controller reads v1beta1 only.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ServiceReference, TargetGroupBindingNetworking, TargetType};

/// Binds a Service's endpoints to an AWS target group (v1alpha1 fields).
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "elbv2.k8s.aws",
    version = "v1alpha1",
    kind = "TargetGroupBinding",
    plural = "targetgroupbindings",
    singular = "targetgroupbinding",
    namespaced,
    status = "TargetGroupBindingStatus",
    printcolumn = r#"{"name":"SERVICE-NAME","type":"string","description":"The Kubernetes Service's name","jsonPath":".spec.serviceRef.name"}"#,
    printcolumn = r#"{"name":"SERVICE-PORT","type":"string","description":"The Kubernetes Service's port","jsonPath":".spec.serviceRef.port"}"#,
    printcolumn = r#"{"name":"TARGET-TYPE","type":"string","description":"The AWS TargetGroup's TargetType","jsonPath":".spec.targetType"}"#,
    printcolumn = r#"{"name":"ARN","type":"string","description":"The AWS TargetGroup's Amazon Resource Name","jsonPath":".spec.targetGroupARN","priority":1}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct TargetGroupBindingSpec {
    /// ARN of the target group.
    #[serde(rename = "targetGroupARN", default, skip_serializing_if = "Option::is_none")]
    pub target_group_arn: Option<String>,
    /// Name of the target group; resolved to an ARN by the mutating webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_group_name: Option<String>,
    /// Share the target group with other clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multi_cluster_target_group: Option<bool>,
    /// `ip` or `instance`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_type: Option<TargetType>,
    /// The Service whose endpoints are registered.
    pub service_ref: ServiceReference,
    /// Security-group rules the controller maintains so the load balancer can reach targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub networking: Option<TargetGroupBindingNetworking>,
    /// IAM role to assume for this binding's AWS calls (cross-account target groups).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iam_role_arn_to_assume: Option<String>,
    /// External ID for that role assumption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assume_role_external_id: Option<String>,
}

/// Observed state (v1alpha1 has the generation only).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetGroupBindingStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
