//! Watch payloads decoded only as far as the caches need.
//!
//! A k8s-openapi `Pod` costs kilobytes in memory even after trimming (every optional field of the
//! spec and status is inline), and a list page of 500 of them is decoded whole before the first is
//! trimmed. These types read the same JSON but keep only the fields decisions use; serde skips the
//! rest without allocating it. They implement k8s-openapi's `Resource`/`Metadata` so kube's `Api`
//! and watcher treat them as the real kind.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The pod annotation (the upstream's key) naming the containers the pod webhook gives a QUIC
/// server ID; a pod without it has none.
pub const QUIC_ENABLED_CONTAINERS: &str = "service.beta.kubernetes.io/aws-load-balancer-quic-enabled-containers";
/// The environment variable holding a container's QUIC server ID, unless
/// `--quic-environment-variable-name` names another (the upstream's default).
pub const DEFAULT_QUIC_ENV: &str = "AWS_LBC_QUIC_SERVER_ID";

static QUIC_ENV: OnceLock<Box<str>> = OnceLock::new();

/// Sets the QUIC server-ID variable the pod decoder keeps, once, before any pod is decoded
/// (the decoder runs inside kube's watcher and cannot be handed it). An empty name, or a second
/// different name, is refused.
pub fn set_quic_env_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("--quic-environment-variable-name is empty; give an environment variable name".into());
    }
    let set = QUIC_ENV.get_or_init(|| name.into());
    if **set != *name {
        return Err(format!("the QUIC server-ID variable is already {set:?}, not {name:?}"));
    }
    Ok(())
}

/// The QUIC server-ID variable name in force.
pub fn quic_env_name() -> &'static str {
    QUIC_ENV.get().map_or(DEFAULT_QUIC_ENV, |s| s)
}

/// The metadata fields the caches and the watcher (resource versions) read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetaWire {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    deletion_timestamp: Option<Time>,
    labels: Option<BTreeMap<String, String>>,
    /// Only [`QUIC_ENABLED_CONTAINERS`]: other annotations (`last-applied-configuration`, …) can
    /// be kilobytes and nothing reads them.
    #[serde(default, deserialize_with = "quic_annotation")]
    annotations: Option<BTreeMap<String, String>>,
}

fn quic_annotation<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<BTreeMap<String, String>>, D::Error> {
    struct Keep;
    impl<'de> Visitor<'de> for Keep {
        type Value = Option<BTreeMap<String, String>>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a map of annotations")
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D2: serde::Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_map(self)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = None;
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if key == QUIC_ENABLED_CONTAINERS {
                    out = Some(BTreeMap::from([(key.into_owned(), map.next_value::<String>()?)]));
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(out)
        }
    }
    d.deserialize_option(Keep)
}

fn meta<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    let m = MetaWire::deserialize(d)?;
    Ok(ObjectMeta {
        name: m.name,
        namespace: m.namespace,
        uid: m.uid,
        resource_version: m.resource_version,
        deletion_timestamp: m.deletion_timestamp,
        labels: m.labels,
        annotations: m.annotations,
        ..Default::default()
    })
}

/// A Pod as far as [`crate::pod::PodInfo`] needs it.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct PodWire {
    #[serde(deserialize_with = "meta", default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: PodSpecWire,
    #[serde(default)]
    pub status: PodStatusWire,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpecWire {
    pub node_name: Option<String>,
    #[serde(default)]
    pub readiness_gates: Vec<GateWire>,
    #[serde(default)]
    pub containers: Vec<ContainerWire>,
    /// Read for sidecars (`restartPolicy: Always`), whose ports serve like a container's.
    #[serde(default)]
    pub init_containers: Vec<ContainerWire>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GateWire {
    pub condition_type: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerWire {
    #[serde(default)]
    pub ports: Vec<PortWire>,
    pub restart_policy: Option<String>,
    /// Only the QUIC server-ID variable ([`quic_env_name`]), when it has a literal value.
    #[serde(default, deserialize_with = "quic_env")]
    pub env: Vec<EnvWire>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct EnvWire {
    pub name: String,
    pub value: Option<String>,
}

fn quic_env<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<EnvWire>, D::Error> {
    struct Keep;
    impl<'de> Visitor<'de> for Keep {
        type Value = Vec<EnvWire>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of environment variables")
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_some<D2: serde::Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_seq(self)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let want = quic_env_name();
            let mut out = Vec::new();
            while let Some(v) = seq.next_element::<EnvWire>()? {
                if v.name == want {
                    out.push(v);
                }
            }
            Ok(out)
        }
    }
    d.deserialize_option(Keep)
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PortWire {
    pub name: Option<String>,
    pub container_port: i32,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct PodStatusWire {
    #[serde(default)]
    pub conditions: Vec<ConditionWire>,
    /// The pod's first address (the API server mirrors it into `podIPs`; both read, either may lag).
    #[serde(rename = "podIP")]
    pub pod_ip: Option<String>,
    #[serde(default, rename = "podIPs")]
    pub pod_ips: Vec<PodIpWire>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct PodIpWire {
    #[serde(default)]
    pub ip: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConditionWire {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: Option<String>,
    pub message: Option<String>,
    pub last_transition_time: Option<Time>,
}

impl k8s_openapi::Resource for PodWire {
    const API_VERSION: &'static str = "v1";
    const GROUP: &'static str = "";
    const KIND: &'static str = "Pod";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "pods";
    type Scope = k8s_openapi::NamespaceResourceScope;
}

impl k8s_openapi::Metadata for PodWire {
    type Ty = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// An EndpointSlice as far as [`crate::endpoints::SliceInfo`] needs it: the Service it belongs
/// to (label), its family, ports, and per endpoint the addresses, conditions, node and pod.
/// Hints, zones, hostnames and the rest of the target reference are skipped while decoding.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointSliceWire {
    #[serde(deserialize_with = "meta", default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub address_type: String,
    /// `null` when the slice has no endpoints (Go's nil slice).
    #[serde(default)]
    pub endpoints: Option<Vec<EndpointWire>>,
    #[serde(default)]
    pub ports: Option<Vec<SlicePortWire>>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointWire {
    #[serde(default)]
    pub addresses: Vec<String>,
    pub conditions: Option<EndpointConditionsWire>,
    pub node_name: Option<String>,
    pub target_ref: Option<TargetRefWire>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct EndpointConditionsWire {
    pub ready: Option<bool>,
    pub terminating: Option<bool>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct TargetRefWire {
    pub kind: Option<String>,
    pub name: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct SlicePortWire {
    pub name: Option<String>,
    pub port: Option<i32>,
}

impl k8s_openapi::Resource for EndpointSliceWire {
    const API_VERSION: &'static str = "discovery.k8s.io/v1";
    const GROUP: &'static str = "discovery.k8s.io";
    const KIND: &'static str = "EndpointSlice";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "endpointslices";
    type Scope = k8s_openapi::NamespaceResourceScope;
}

impl k8s_openapi::Metadata for EndpointSliceWire {
    type Ty = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_a_full_pod_keeping_only_what_is_read() {
        let json = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-1", "namespace": "shop", "uid": "u-1", "resourceVersion": "42",
                         "labels": {"app": "web"}, "annotations": {"big": "x"},
                         "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "r"}]},
            "spec": {"nodeName": "n1", "readinessGates": [{"conditionType": "target-health.elbv2.k8s.aws/web"}],
                     "containers": [{"name": "app", "image": "app:1", "ports": [{"name": "http", "containerPort": 8080}],
                                     "env": [{"name": "A", "value": "b"}], "resources": {"limits": {"cpu": "1"}}}],
                     "volumes": [{"name": "v", "emptyDir": {}}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1",
                       "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                       "containerStatuses": [{"name": "app", "ready": true, "restartCount": 0, "image": "app:1", "imageID": ""}]}
        });
        let p: PodWire = serde_json::from_value(json).unwrap();
        assert_eq!(p.metadata.name.as_deref(), Some("web-1"));
        assert_eq!(p.metadata.namespace.as_deref(), Some("shop"));
        assert_eq!(p.metadata.resource_version.as_deref(), Some("42"), "the watcher resumes from it");
        assert!(p.metadata.annotations.is_none() && p.metadata.managed_fields.is_none());
        assert!(p.spec.containers[0].env.is_empty(), "only the QUIC server-ID variable is kept");
        assert_eq!(p.spec.node_name.as_deref(), Some("n1"));
        assert_eq!(p.spec.readiness_gates[0].condition_type, "target-health.elbv2.k8s.aws/web");
        assert_eq!(p.spec.containers[0].ports[0].name.as_deref(), Some("http"));
        assert_eq!(p.status.conditions[0].type_, "Ready");
        assert!(p.status.conditions[0].last_transition_time.is_some());
    }

    #[test]
    fn decodes_an_endpoint_slice_keeping_only_what_is_read() {
        let json = serde_json::json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web-abc", "namespace": "shop", "resourceVersion": "7",
                         "labels": {"kubernetes.io/service-name": "web"},
                         "managedFields": [{"manager": "kcm"}],
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "web", "uid": "s"}]},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true, "serving": true, "terminating": false},
                           "nodeName": "n1", "zone": "a", "hints": {"forZones": [{"name": "a"}]},
                           "targetRef": {"kind": "Pod", "name": "web-1", "namespace": "shop", "uid": "u"}}],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]
        });
        let s: EndpointSliceWire = serde_json::from_value(json).unwrap();
        assert_eq!(s.metadata.labels.unwrap()["kubernetes.io/service-name"], "web");
        assert_eq!(s.metadata.resource_version.as_deref(), Some("7"), "the watcher resumes from it");
        assert_eq!(s.address_type, "IPv4");
        let ep = &s.endpoints.unwrap()[0];
        assert_eq!(ep.addresses, ["10.0.0.1"]);
        assert_eq!(ep.conditions.as_ref().unwrap().ready, Some(true));
        assert_eq!(ep.target_ref.as_ref().unwrap().name.as_deref(), Some("web-1"));
        assert_eq!(s.ports.unwrap()[0].port, Some(8080));
        let empty: EndpointSliceWire = serde_json::from_value(
            serde_json::json!({"metadata": {"name": "e"}, "addressType": "IPv4", "endpoints": null}),
        )
        .unwrap();
        assert!(empty.endpoints.is_none() && empty.ports.is_none());
    }

    #[test]
    fn keeps_only_the_quic_annotation_and_variable() {
        let json = serde_json::json!({
            "metadata": {"name": "q", "annotations": {"big": "x", QUIC_ENABLED_CONTAINERS: "app", "n": null}},
            "spec": {"containers": [{"name": "app", "env": [{"name": "A", "value": "b"},
                                                         {"name": DEFAULT_QUIC_ENV, "value": "ASNFZ4mrze8="},
                                                         {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]}],
                     "initContainers": [{"name": "side", "restartPolicy": "Always", "env": null,
                                         "ports": [{"containerPort": 9000}]}]}
        });
        let p: PodWire = serde_json::from_value(json).unwrap();
        assert_eq!(p.metadata.annotations.unwrap().into_keys().collect::<Vec<_>>(), [QUIC_ENABLED_CONTAINERS]);
        let env = &p.spec.containers[0].env;
        assert_eq!(env.len(), 1);
        assert_eq!(env[0].value.as_deref(), Some("ASNFZ4mrze8="));
        assert_eq!(p.spec.init_containers[0].restart_policy.as_deref(), Some("Always"));
        let plain: PodWire =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "p", "annotations": null}})).unwrap();
        assert!(plain.metadata.annotations.is_none());
        assert!(set_quic_env_name("").is_err());
    }

    #[test]
    fn decodes_a_pod_with_nothing_but_metadata() {
        let p: PodWire = serde_json::from_value(serde_json::json!({"metadata": {"name": "p"}})).unwrap();
        assert!(p.spec.readiness_gates.is_empty() && p.status.conditions.is_empty());
    }
}
