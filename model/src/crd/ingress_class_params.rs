//! `elbv2.k8s.aws/v1beta1` IngressClassParams (cluster-scoped): the configuration an IngressClass
//! points at through `spec.parameters`. Field names and JSON spellings follow ALBC's CRD so
//! existing objects deserialize unchanged, including the legacy capitalised `PrefixListsIDs`
//! next to `prefixListsIDs`, and `sslRedirectPort` as a string. Which field overrides which
//! annotation is decided in `crate::ingress::params`.
//!
//! Deviation: ALBC's `authenticationConfiguration` is not modelled yet (unknown fields are
//! ignored by serde, so objects carrying it still load).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::TargetType;

/// Settings shared by every Ingress of the IngressClasses that reference this object.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "elbv2.k8s.aws",
    version = "v1beta1",
    kind = "IngressClassParams",
    plural = "ingressclassparams",
    singular = "ingressclassparams",
    derive = "PartialEq",
    printcolumn = r#"{"name":"GROUP-NAME","type":"string","description":"The Ingress Group name","jsonPath":".spec.group.name"}"#,
    printcolumn = r#"{"name":"SCHEME","type":"string","description":"The AWS Load Balancer scheme","jsonPath":".spec.scheme"}"#,
    printcolumn = r#"{"name":"IP-ADDRESS-TYPE","type":"string","description":"The AWS Load Balancer ipAddressType","jsonPath":".spec.ipAddressType"}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct IngressClassParamsSpec {
    /// Name of the load balancer (≤32 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer_name: Option<String>,
    /// Namespaces whose Ingresses may use the class; absent or empty selects all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// The IngressGroup of every Ingress of the class (wins over `group.name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<IngressGroupRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<ParamsScheme>,
    /// CIDRs allowed to reach the load balancer.
    #[serde(rename = "inboundCIDRs", default, skip_serializing_if = "Vec::is_empty")]
    pub inbound_cidrs: Vec<String>,
    /// ACM certificate ARNs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub certificate_arn: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl_policy: Option<String>,
    /// HTTPS port every HTTP listener redirects to (a decimal string, as in ALBC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl_redirect_port: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnets: Option<ParamsSubnets>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_address_type: Option<ParamsIpAddressType>,
    /// Tags on every AWS resource (win over the `tags` annotation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<KeyValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_type: Option<TargetType>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load_balancer_attributes: Vec<KeyValue>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listeners: Vec<ParamsListener>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum_load_balancer_capacity: Option<MinimumCapacity>,
    #[serde(rename = "ipamConfiguration", default, skip_serializing_if = "Option::is_none")]
    pub ipam_configuration: Option<IpamConfiguration>,
    /// Security-group prefix lists allowed to reach the load balancer.
    #[serde(rename = "prefixListsIDs", default, skip_serializing_if = "Vec::is_empty")]
    pub prefix_lists_ids: Vec<String>,
    /// Legacy spelling of `prefixListsIDs`, still read.
    #[serde(rename = "PrefixListsIDs", default, skip_serializing_if = "Vec::is_empty")]
    pub prefix_lists_ids_legacy: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wafv2_acl_arn: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wafv2_acl_name: Option<String>,
}

/// `spec.group`.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct IngressGroupRef {
    pub name: String,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ParamsScheme {
    #[serde(rename = "internal")]
    Internal,
    #[serde(rename = "internet-facing")]
    InternetFacing,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ParamsIpAddressType {
    #[serde(rename = "ipv4")]
    Ipv4,
    #[serde(rename = "dualstack")]
    Dualstack,
    #[serde(rename = "dualstack-without-public-ipv4")]
    DualstackWithoutPublicIpv4,
}

/// `spec.subnets`: exactly one of `ids` or `tags`.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ParamsSubnets {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
    /// Tag key → accepted values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, Vec<String>>,
}

/// A tag or attribute.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct KeyValue {
    pub key: String,
    pub value: String,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ParamsListenerProtocol {
    HTTP,
    HTTPS,
}

/// `spec.listeners[]`: attributes of the listener on this protocol and port.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ParamsListener {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<ParamsListenerProtocol>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listener_attributes: Vec<KeyValue>,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MinimumCapacity {
    pub capacity_units: i32,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct IpamConfiguration {
    #[serde(rename = "ipv4IPAMPoolId", default, skip_serializing_if = "Option::is_none")]
    pub ipv4_ipam_pool_id: Option<String>,
}

impl IngressClassParamsSpec {
    /// Prefix lists from both spellings, de-duplicated, in order.
    pub fn prefix_lists(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in self.prefix_lists_ids.iter().chain(&self.prefix_lists_ids_legacy) {
            if !out.contains(p) {
                out.push(p.clone());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::CustomResourceExt;

    #[test]
    fn albc_object_deserializes_unchanged() {
        let json = r#"{
            "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "IngressClassParams",
            "metadata": {"name": "public"},
            "spec": {
                "loadBalancerName": "shop", "group": {"name": "shop"}, "scheme": "internet-facing",
                "namespaceSelector": {"matchLabels": {"team": "shop"}},
                "inboundCIDRs": ["10.0.0.0/8"], "certificateArn": ["arn:c1"], "sslPolicy": "P",
                "sslRedirectPort": "443", "subnets": {"tags": {"tier": ["public"]}},
                "ipAddressType": "dualstack-without-public-ipv4", "tags": [{"key": "t", "value": "v"}],
                "targetType": "ip", "loadBalancerAttributes": [{"key": "idle_timeout.timeout_seconds", "value": "60"}],
                "listeners": [{"protocol": "HTTPS", "port": 443, "listenerAttributes": [{"key": "a", "value": "b"}]}],
                "minimumLoadBalancerCapacity": {"capacityUnits": 100},
                "ipamConfiguration": {"ipv4IPAMPoolId": "ipam-pool-1"},
                "prefixListsIDs": ["pl-1"], "PrefixListsIDs": ["pl-1", "pl-2"],
                "wafv2AclArn": "arn:waf", "wafv2AclName": "acl",
                "authenticationConfiguration": {"type": "none"}
            }
        }"#;
        let icp: IngressClassParams = serde_json::from_str(json).unwrap();
        let s = &icp.spec;
        assert_eq!(s.scheme, Some(ParamsScheme::InternetFacing));
        assert_eq!(s.ip_address_type, Some(ParamsIpAddressType::DualstackWithoutPublicIpv4));
        assert_eq!(s.ssl_redirect_port.as_deref(), Some("443"));
        assert_eq!(s.target_type, Some(TargetType::Ip));
        assert_eq!(s.listeners[0].protocol, Some(ParamsListenerProtocol::HTTPS));
        assert_eq!(s.minimum_load_balancer_capacity, Some(MinimumCapacity { capacity_units: 100 }));
        assert_eq!(s.prefix_lists(), ["pl-1", "pl-2"]);
        assert_eq!(s.subnets.as_ref().unwrap().tags["tier"], ["public"]);
        let back = serde_json::to_value(&icp).unwrap();
        assert_eq!(back["spec"]["inboundCIDRs"][0], "10.0.0.0/8");
        assert_eq!(back["spec"]["ipamConfiguration"]["ipv4IPAMPoolId"], "ipam-pool-1");
        assert_eq!(back["spec"]["PrefixListsIDs"][1], "pl-2");
        assert_eq!(back["spec"]["wafv2AclArn"], "arn:waf");
    }

    #[test]
    fn crd_is_cluster_scoped_with_albc_names() {
        let crd = IngressClassParams::crd();
        assert_eq!(crd.metadata.name.as_deref(), Some("ingressclassparams.elbv2.k8s.aws"));
        assert_eq!(crd.spec.scope, "Cluster");
        let v = &crd.spec.versions[0];
        let cols: Vec<_> = v.additional_printer_columns.as_ref().unwrap().iter().map(|c| c.name.as_str()).collect();
        assert_eq!(cols, ["GROUP-NAME", "SCHEME", "IP-ADDRESS-TYPE", "AGE"]);
    }
}
