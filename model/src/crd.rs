//! `elbv2.k8s.aws/v1beta1` TargetGroupBinding and IngressClassParams
//! ([`ingress_class_params`]): the same fields and meaning as the upstream AWS Load Balancer
//! Controller's CRDs, so existing manifests apply unchanged. The CRD YAML in `charts/` is
//! generated from [`all`] (`aws-lb-controller crd`) and checked for drift in CI.

pub mod ingress_class_params;
pub mod target_control;
pub mod v1alpha1;

pub use ingress_class_params::{IngressClassParams, IngressClassParamsSpec};
pub use target_control::{
    ALBTargetControlConfig, ALBTargetControlConfigSpec, AgentLogLevel, AgentProtocolVersion, TARGET_CONTROL_CONFIG_NAME,
};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Binds a Service's endpoints to an AWS target group.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "elbv2.k8s.aws",
    version = "v1beta1",
    kind = "TargetGroupBinding",
    plural = "targetgroupbindings",
    singular = "targetgroupbinding",
    namespaced,
    status = "TargetGroupBindingStatus",
    printcolumn = r#"{"name":"SERVICE-NAME","type":"string","description":"The Kubernetes Service's name","jsonPath":".spec.serviceRef.name"}"#,
    printcolumn = r#"{"name":"SERVICE-PORT","type":"string","description":"The Kubernetes Service's port","jsonPath":".spec.serviceRef.port"}"#,
    printcolumn = r#"{"name":"TARGET-TYPE","type":"string","description":"The AWS TargetGroup's TargetType","jsonPath":".spec.targetType"}"#,
    printcolumn = r#"{"name":"READY","type":"string","description":"Whether the target group holds the Service's endpoints","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"ARN","type":"string","description":"The AWS TargetGroup's Amazon Resource Name","jsonPath":".spec.targetGroupARN","priority":1}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct TargetGroupBindingSpec {
    /// ARN of the target group. Immutable. Either this or targetGroupName is required.
    #[serde(rename = "targetGroupARN", default, skip_serializing_if = "Option::is_none")]
    pub target_group_arn: Option<String>,
    /// Name of the target group; resolved to an ARN by the mutating webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_group_name: Option<String>,
    /// Share the target group with other clusters: only targets this binding registered are
    /// ever deregistered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multi_cluster_target_group: Option<bool>,
    /// How targets are registered: `ip` (pod IPs) or `instance` (node instances). Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_type: Option<TargetType>,
    /// Protocol of the target group (defaulted from AWS by the webhook).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_group_protocol: Option<TargetGroupProtocol>,
    /// The Service whose endpoints are registered.
    pub service_ref: ServiceReference,
    /// Security-group rules the controller maintains so the load balancer can reach targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub networking: Option<TargetGroupBindingNetworking>,
    /// Which nodes are instance targets (instance mode only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<LabelSelector>,
    /// IP family of the targets; selects the EndpointSlice address type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_address_type: Option<TargetGroupIpAddressType>,
    /// VPC of the target group (defaulted from AWS by the webhook).
    #[serde(rename = "vpcID", default, skip_serializing_if = "Option::is_none")]
    pub vpc_id: Option<String>,
    /// IAM role to assume to manage a target group in another account (ip targets only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iam_role_arn_to_assume: Option<String>,
    /// External ID for the role assumption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assume_role_external_id: Option<String>,
}

/// Target type of a binding.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TargetType {
    Instance,
    Ip,
}

/// Target group protocol as AWS names it.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum TargetGroupProtocol {
    HTTP,
    HTTPS,
    TCP,
    TLS,
    UDP,
    #[serde(rename = "TCP_UDP")]
    TcpUdp,
    GENEVE,
    QUIC,
    #[serde(rename = "TCP_QUIC")]
    TcpQuic,
}

/// IP family of a target group.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TargetGroupIpAddressType {
    #[default]
    Ipv4,
    Ipv6,
}

/// Reference to a Service port in the binding's namespace.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ServiceReference {
    /// Name of the Service.
    pub name: String,
    /// Service port, by number or by name.
    pub port: IntOrString,
}

/// Networking rules for the binding.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct TargetGroupBindingNetworking {
    /// Ingress rules the controller keeps on the targets' security groups.
    #[serde(default)]
    pub ingress: Vec<NetworkingIngressRule>,
}

/// One ingress rule: traffic from these peers to these ports.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct NetworkingIngressRule {
    pub from: Vec<NetworkingPeer>,
    pub ports: Vec<NetworkingPort>,
}

/// A traffic source: a CIDR block or a security group.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkingPeer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_block: Option<IpBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_group: Option<SecurityGroupRef>,
}

/// CIDR peer.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct IpBlock {
    pub cidr: String,
}

/// Security-group peer.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct SecurityGroupRef {
    #[serde(rename = "groupID")]
    pub group_id: String,
}

/// Port (and protocol) of a rule; all ports when `port` is absent.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct NetworkingPort {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<NetworkingProtocol>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<IntOrString>,
}

/// Protocol of a networking rule.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum NetworkingProtocol {
    TCP,
    UDP,
}

/// Observed state of a binding.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetGroupBindingStatus {
    /// The generation last reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready` (target group in sync with the Service's endpoints) and `TargetGroupFound`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Targets registered by the last successful sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registered_targets: Option<i32>,
    /// Of those, how many AWS reported healthy at the last health read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthy_targets: Option<i32>,
    /// The targets this binding registered (`ip:port`, or `instance-id:port` in instance mode),
    /// kept for bindings that may deregister only their own targets (`multiClusterTargetGroup:
    /// true`). Written by the controller only: tenants with the built-in `admin` or `edit` roles
    /// cannot write the status subresource. Absent: no record yet (the upstream controller's
    /// `aws-lbc-targets-<binding>` ConfigMap is then read once, to adopt what it tracked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owned_targets: Option<Vec<String>>,
}

/// Annotations every CRD carries so that removing the chart never removes the CRDs, which would
/// delete every TargetGroupBinding and, through their finalizers, deregister every target: Helm
/// keeps a resource with `helm.sh/resource-policy: keep` (and never deletes `crds/` anyway);
/// ArgoCD renders the CRDs as ordinary resources, so it is told not to delete them with the
/// Application (`Delete=false`) nor prune them when they leave the rendered manifests
/// (`Prune=false`).
pub const KEEP_ANNOTATIONS: [(&str, &str); 2] =
    [("helm.sh/resource-policy", "keep"), ("argocd.argoproj.io/sync-options", "Delete=false,Prune=false")];

/// Every CRD this controller serves, in the order the chart lists them, with [`KEEP_ANNOTATIONS`].
pub fn all() -> Vec<CustomResourceDefinition> {
    use kube::CustomResourceExt;
    // v1beta1 stored; v1alpha1 served as ALBC does (see [`v1alpha1`]).
    let mut tgb =
        kube::core::crd::merge_crds(vec![v1alpha1::TargetGroupBinding::crd(), TargetGroupBinding::crd()], "v1beta1")
            .expect("both TargetGroupBinding versions share group, kind and names");
    tgb.spec.versions.sort_by(|a, b| a.name.cmp(&b.name));
    let mut crds = vec![ALBTargetControlConfig::crd(), IngressClassParams::crd(), tgb];
    for crd in &mut crds {
        let annotations = crd.metadata.annotations.get_or_insert_with(Default::default);
        annotations.extend(KEEP_ANNOTATIONS.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    }
    crds
}

/// The IAM role a binding's target-group calls are made as (`spec.iamRoleArnToAssume`, for a
/// target group in another account), with its external ID.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RoleToAssume {
    pub role_arn: String,
    pub external_id: Option<String>,
}

impl TargetGroupBindingSpec {
    /// The role to assume for this binding's target group; `None` (empty or unset role): the
    /// controller's own identity. An external ID without a role means nothing, as in ALBC.
    pub fn role_to_assume(&self) -> Option<RoleToAssume> {
        let role_arn = self.iam_role_arn_to_assume.as_deref().map(str::trim).filter(|r| !r.is_empty())?;
        let external_id = self.assume_role_external_id.as_deref().map(str::trim).filter(|e| !e.is_empty());
        Some(RoleToAssume { role_arn: role_arn.to_string(), external_id: external_id.map(str::to_string) })
    }

    /// Target type with ALBC's default applied (the webhook fills it from AWS; `ip` otherwise,
    /// since IP mode is the only one this controller registers today).
    pub fn effective_target_type(&self) -> TargetType {
        self.target_type.unwrap_or(TargetType::Ip)
    }

    /// Whether this binding shares its target group with other clusters.
    pub fn is_multi_cluster(&self) -> bool {
        self.multi_cluster_target_group.unwrap_or(false)
    }

    /// IP family with the default applied.
    pub fn ip_family(&self) -> TargetGroupIpAddressType {
        self.ip_address_type.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::CustomResourceExt;

    #[test]
    fn role_to_assume_needs_a_role_and_drops_empty_external_ids() {
        let spec = |role: Option<&str>, ext: Option<&str>| {
            let mut s: TargetGroupBindingSpec =
                serde_json::from_value(serde_json::json!({"serviceRef": {"name": "web", "port": 80}})).unwrap();
            s.iam_role_arn_to_assume = role.map(str::to_string);
            s.assume_role_external_id = ext.map(str::to_string);
            s
        };
        let role = "arn:aws:iam::222222222222:role/tg";
        let r = |ext: Option<&str>| Some(RoleToAssume { role_arn: role.into(), external_id: ext.map(str::to_string) });
        let cases: [(Option<&str>, Option<&str>, Option<RoleToAssume>); 7] = [
            (None, None, None),
            (None, Some("x"), None),
            (Some(""), Some("x"), None),
            (Some("  "), None, None),
            (Some(role), None, r(None)),
            (Some(role), Some(" "), r(None)),
            (Some(&format!(" {role} ")), Some(" ext-1 "), r(Some("ext-1"))),
        ];
        for (role_in, ext_in, want) in cases {
            assert_eq!(spec(role_in, ext_in).role_to_assume(), want, "{role_in:?} {ext_in:?}");
        }
    }

    #[test]
    fn albc_manifest_deserializes_unchanged() {
        let yaml = r#"{
            "apiVersion": "elbv2.k8s.aws/v1beta1",
            "kind": "TargetGroupBinding",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {
                "serviceRef": {"name": "web", "port": 80},
                "targetGroupARN": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/web/0123456789abcdef",
                "targetType": "ip",
                "ipAddressType": "ipv4",
                "vpcID": "vpc-0abc",
                "multiClusterTargetGroup": true,
                "targetGroupProtocol": "TCP_UDP",
                "networking": {"ingress": [{"from": [{"securityGroup": {"groupID": "sg-1"}}, {"ipBlock": {"cidr": "10.0.0.0/16"}}],
                                             "ports": [{"protocol": "TCP", "port": "http"}]}]}
            }
        }"#;
        let tgb: TargetGroupBinding = serde_json::from_str(yaml).unwrap();
        assert_eq!(tgb.spec.service_ref.port, IntOrString::Int(80));
        assert_eq!(tgb.spec.effective_target_type(), TargetType::Ip);
        assert!(tgb.spec.is_multi_cluster());
        assert_eq!(tgb.spec.target_group_protocol, Some(TargetGroupProtocol::TcpUdp));
        assert_eq!(tgb.spec.vpc_id.as_deref(), Some("vpc-0abc"));
        let back = serde_json::to_value(&tgb).unwrap();
        assert_eq!(back["spec"]["targetGroupARN"], tgb.spec.target_group_arn.clone().unwrap().as_str());
        assert_eq!(back["spec"]["networking"]["ingress"][0]["from"][0]["securityGroup"]["groupID"], "sg-1");
    }

    #[test]
    fn every_crd_survives_helm_uninstall_and_argocd_deletes() {
        for crd in all() {
            let annotations = crd.metadata.annotations.clone().unwrap_or_default();
            let name = crd.metadata.name.clone().unwrap_or_default();
            assert_eq!(annotations.get("helm.sh/resource-policy").map(String::as_str), Some("keep"), "{name}");
            let options = annotations.get("argocd.argoproj.io/sync-options").map(String::as_str).unwrap_or_default();
            let options: Vec<&str> = options.split(',').map(str::trim).collect();
            assert!(options.contains(&"Delete=false") && options.contains(&"Prune=false"), "{name}: {options:?}");
        }
    }

    #[test]
    fn crd_has_albc_names_and_status_subresource() {
        let crd = TargetGroupBinding::crd();
        assert_eq!(crd.metadata.name.as_deref(), Some("targetgroupbindings.elbv2.k8s.aws"));
        let v = &crd.spec.versions[0];
        assert_eq!(v.name, "v1beta1");
        assert!(v.subresources.as_ref().unwrap().status.is_some());
        let cols: Vec<_> = v.additional_printer_columns.as_ref().unwrap().iter().map(|c| c.name.as_str()).collect();
        assert_eq!(cols, ["SERVICE-NAME", "SERVICE-PORT", "TARGET-TYPE", "READY", "ARN", "AGE"]);
        let names: Vec<_> = all().into_iter().filter_map(|c| c.metadata.name).collect();
        assert_eq!(
            names,
            [
                "albtargetcontrolconfigs.elbv2.k8s.aws",
                "ingressclassparams.elbv2.k8s.aws",
                "targetgroupbindings.elbv2.k8s.aws"
            ]
        );
    }

    /// As ALBC: v1alpha1 served, v1beta1 served and stored, no conversion webhook.
    #[test]
    fn tgb_crd_serves_v1alpha1_and_stores_v1beta1() {
        let tgb = all().into_iter().find(|c| c.spec.names.kind == "TargetGroupBinding").unwrap();
        let versions: Vec<_> = tgb.spec.versions.iter().map(|v| (v.name.as_str(), v.served, v.storage)).collect();
        assert_eq!(versions, [("v1alpha1", true, false), ("v1beta1", true, true)]);
        assert!(tgb.spec.conversion.as_ref().is_none_or(|c| c.strategy == "None"));
        // Every v1alpha1 field exists in v1beta1 under the same name (conversion is a relabel).
        let props = |v: &str| -> Vec<String> {
            let ver = tgb.spec.versions.iter().find(|x| x.name == v).unwrap();
            let spec =
                &ver.schema.as_ref().unwrap().open_api_v3_schema.as_ref().unwrap().properties.as_ref().unwrap()["spec"];
            spec.properties.as_ref().unwrap().keys().cloned().collect()
        };
        let beta = props("v1beta1");
        for f in props("v1alpha1") {
            assert!(beta.contains(&f), "v1alpha1 field {f} missing from v1beta1");
        }
        let alpha: v1alpha1::TargetGroupBinding = serde_json::from_str(
            r#"{"apiVersion":"elbv2.k8s.aws/v1alpha1","kind":"TargetGroupBinding","metadata":{"name":"web"},
                "spec":{"serviceRef":{"name":"web","port":80},"targetGroupARN":"arn:tg","targetType":"ip"}}"#,
        )
        .unwrap();
        let as_beta: TargetGroupBindingSpec =
            serde_json::from_value(serde_json::to_value(&alpha.spec).unwrap()).unwrap();
        assert_eq!(as_beta.target_group_arn.as_deref(), Some("arn:tg"));
    }
}
