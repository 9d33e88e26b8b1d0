//! Kubernetes helpers: a client for the e2e apiserver, per-test namespaces, bindings.

use crate::Env;
use k8s_openapi::api::core::v1::{Namespace, Pod, Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, ResourceExt};
use lbc_model::crd::{ServiceReference, TargetGroupBinding, TargetGroupBindingSpec, TargetType};
use std::collections::BTreeMap;

pub async fn client(env: &Env) -> Client {
    let kc = Kubeconfig::read_from(env.get("KUBECONFIG")).expect("kubeconfig");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await.expect("kube config");
    Client::try_from(cfg).expect("kube client")
}

/// Creates a namespace with the given labels.
pub async fn namespace(client: &Client, name: &str, labels: &[(&str, &str)]) {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.expect("create namespace");
}

pub async fn delete_namespace(client: &Client, name: &str) {
    let _ = Api::<Namespace>::all(client.clone()).delete(name, &DeleteParams::default()).await;
}

/// Creates an ip-type binding of `service:port` to `arn`.
pub async fn create_binding(
    client: &Client,
    ns: &str,
    name: &str,
    service: &str,
    port: i32,
    arn: &str,
) -> TargetGroupBinding {
    let tgb = TargetGroupBinding {
        metadata: ObjectMeta { name: Some(name.into()), namespace: Some(ns.into()), ..Default::default() },
        spec: TargetGroupBindingSpec {
            target_group_arn: Some(arn.into()),
            target_type: Some(TargetType::Ip),
            service_ref: ServiceReference { name: service.into(), port: IntOrString::Int(port) },
            ..Default::default()
        },
        status: None,
    };
    Api::<TargetGroupBinding>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &tgb)
        .await
        .expect("create binding")
}

/// Status of the readiness-gate condition `gate` on every pod of a set, by pod name.
pub async fn gate_status(client: &Client, ns: &str, set: &str, gate: &str) -> Vec<(String, Option<String>)> {
    let pods = Api::<Pod>::namespaced(client.clone(), ns)
        .list(&kube::api::ListParams::default().labels(&format!("lbc-e2e/set={set}")))
        .await
        .expect("list pods");
    pods.items
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(|p| {
            let s = p
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|cs| cs.iter().find(|c| c.type_ == gate))
                .map(|c| c.status.clone());
            (p.name_any(), s)
        })
        .collect()
}

/// Sets annotation `lbc-e2e/poke` of `name` to a fresh value: a change every watch sees and no
/// decision reads, so the controller reconciles the object now (`ControllerProc::settled`'s poke).
pub async fn poke<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    let patch = serde_json::json!({"metadata": {"annotations": {"lbc-e2e/poke": crate::unique("p")}}});
    api.patch(name, &kube::api::PatchParams::default(), &kube::api::Patch::Merge(patch))
        .await
        .unwrap_or_else(|e| panic!("poke {name}: {e}"));
}

/// Service `name` selecting the pods of `set` (`lbc-e2e/set`, as `e2e/pods` labels them), port
/// `http` 80 → 8080/TCP; `type_` e.g. `LoadBalancer` (`None`: ClusterIP).
pub fn backend_service(name: &str, set: &str, type_: Option<&str>, annotations: BTreeMap<String, String>) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some(name.into()),
            annotations: (!annotations.is_empty()).then_some(annotations),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            type_: type_.map(str::to_string),
            selector: Some(BTreeMap::from([("lbc-e2e/set".to_string(), set.to_string())])),
            ports: Some(vec![ServicePort {
                name: Some("http".into()),
                port: 80,
                target_port: Some(IntOrString::Int(8080)),
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        status: None,
    }
}

/// A selector-less Service `web` (port `http` 80 → 8080/TCP) and the EndpointSlice `web-manual`
/// holding `ips` as ready endpoints: endpoints nothing else rewrites (no pods, no EndpointSlice
/// controller involved).
pub async fn manual_endpoints(client: &Client, ns: &str, ips: &[&str]) {
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    let svc = serde_json::json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}});
    services.create(&PostParams::default(), &serde_json::from_value(svc).unwrap()).await.expect("create Service web");
    let endpoints: Vec<serde_json::Value> =
        ips.iter().map(|ip| serde_json::json!({"addresses": [ip], "conditions": {"ready": true}})).collect();
    let slice = serde_json::json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-manual", "labels": {"kubernetes.io/service-name": "web",
                                                      "endpointslice.kubernetes.io/managed-by": "lbc-e2e"}},
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": endpoints,
    });
    let slices: Api<k8s_openapi::api::discovery::v1::EndpointSlice> = Api::namespaced(client.clone(), ns);
    slices.create(&PostParams::default(), &serde_json::from_value(slice).unwrap()).await.expect("create EndpointSlice");
}
