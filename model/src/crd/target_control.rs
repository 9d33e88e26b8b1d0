//! `elbv2.k8s.aws/v1beta1` ALBTargetControlConfig (namespaced): how the ALB target control agent
//! sidecar is run in the pods that ask for it (gate `ALBTargetControlAgent`). The object is
//! looked up by one well-known name ([`TARGET_CONTROL_CONFIG_NAME`]) in the pod's namespace, then
//! in the controller's; field names, JSON spellings and schema limits follow the upstream's CRD so
//! its objects apply unchanged. What a pod gets is decided in `crate::admission::target_control`.

use k8s_openapi::api::core::v1::ResourceRequirements;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The one name an ALBTargetControlConfig is looked up by, as in the upstream controller.
pub const TARGET_CONTROL_CONFIG_NAME: &str = "aws-load-balancer-controller-alb-target-control-agent-config";

/// The agent's image, its addresses and limits, for every pod of the namespace that asks for it.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "elbv2.k8s.aws",
    version = "v1beta1",
    kind = "ALBTargetControlConfig",
    plural = "albtargetcontrolconfigs",
    singular = "albtargetcontrolconfig",
    namespaced,
    derive = "PartialEq",
    printcolumn = r#"{"name":"IMAGE","type":"string","description":"The ALB target control agent sidecar image","jsonPath":".spec.image"}"#,
    printcolumn = r#"{"name":"DESTINATION","type":"string","description":"Application destination address","jsonPath":".spec.destinationAddress"}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ALBTargetControlConfigSpec {
    /// The agent's container image.
    pub image: String,
    /// `IP:port` the agent receives the load balancer's traffic on (the pod's target port).
    #[schemars(regex(pattern = r"^.+:[0-9]+$"))]
    pub data_address: String,
    /// `IP:port` the load balancer exchanges management traffic with the agent on (the target
    /// group's target control port).
    #[schemars(regex(pattern = r"^.+:[0-9]+$"))]
    pub control_address: String,
    /// `IP:port` of the application the agent forwards to.
    #[schemars(regex(pattern = r"^.+:[0-9]+$"))]
    pub destination_address: String,
    /// Requests the agent forwards at once (0 to 1000; 1 when unset).
    #[serde(default = "default_max_concurrency")]
    #[schemars(range(min = 0, max = 1000))]
    pub max_concurrency: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_cert_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_key_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_security_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<AgentProtocolVersion>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rust_log: Option<AgentLogLevel>,
    /// The agent container's CPU and memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
}

fn default_max_concurrency() -> i32 {
    1
}

/// The protocol between the agent and the application.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum AgentProtocolVersion {
    HTTP1,
    HTTP2,
    GRPC,
}

/// The agent's `RUST_LOG`.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AgentLogLevel {
    Debug,
    Info,
    Error,
}

impl AgentProtocolVersion {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentProtocolVersion::HTTP1 => "HTTP1",
            AgentProtocolVersion::HTTP2 => "HTTP2",
            AgentProtocolVersion::GRPC => "GRPC",
        }
    }
}

impl AgentLogLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentLogLevel::Debug => "debug",
            AgentLogLevel::Info => "info",
            AgentLogLevel::Error => "error",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::CustomResourceExt;

    #[test]
    fn upstream_objects_deserialize_with_the_upstream_default() {
        let spec: ALBTargetControlConfigSpec = serde_json::from_value(serde_json::json!({
            "image": "agent:1", "dataAddress": "0.0.0.0:80", "controlAddress": "0.0.0.0:3000",
            "destinationAddress": "127.0.0.1:8080", "protocolVersion": "HTTP2", "rustLog": "info",
            "resources": {"limits": {"cpu": "200m"}}
        }))
        .unwrap();
        assert_eq!(spec.max_concurrency, 1);
        assert_eq!(spec.protocol_version, Some(AgentProtocolVersion::HTTP2));
        assert_eq!(spec.rust_log, Some(AgentLogLevel::Info));
    }

    #[test]
    fn the_schema_carries_the_upstream_limits() {
        let crd = ALBTargetControlConfig::crd();
        assert_eq!(crd.spec.scope, "Namespaced");
        let schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap();
        let spec = &schema["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(spec["properties"]["maxConcurrency"]["maximum"].as_f64(), Some(1000.0));
        assert_eq!(spec["properties"]["maxConcurrency"]["minimum"].as_f64(), Some(0.0));
        assert_eq!(spec["properties"]["dataAddress"]["pattern"], "^.+:[0-9]+$");
        // An optional enum also admits null (schemars), as `nullable: true` says.
        assert_eq!(spec["properties"]["rustLog"]["enum"], serde_json::json!(["debug", "info", "error", null]));
        let mut required: Vec<&str> =
            spec["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        required.sort();
        assert_eq!(required, ["controlAddress", "dataAddress", "destinationAddress", "image"]);
    }
}
