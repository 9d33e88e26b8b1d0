//! Admission webhooks for tests: a self-signed serving certificate and `url`-based webhook entries
//! (the apiserver cannot reach Service-based webhooks here: no kube-proxy).

use base64::Engine;
use serde_json::json;
use std::path::Path;

/// Writes a fresh self-signed serving certificate for 127.0.0.1; returns its PEM (the CA bundle).
pub fn write_cert(dir: &Path) -> String {
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
    std::fs::create_dir_all(dir).unwrap();
    let pem = ck.cert.pem();
    // Key first, then cert: the server reloads when both parse as a pair.
    std::fs::write(dir.join("tls.key"), ck.signing_key.serialize_pem()).unwrap();
    std::fs::write(dir.join("tls.crt"), &pem).unwrap();
    pem
}

pub fn webhook(
    name: &str,
    port: u16,
    path: &str,
    ca: &str,
    test_label: &str,
    failure: &str,
    resource: (&str, &str, &str),
) -> serde_json::Value {
    json!({
        "name": name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": failure,
        "timeoutSeconds": 10,
        "clientConfig": {"url": format!("https://127.0.0.1:{port}{path}"),
                         "caBundle": base64::engine::general_purpose::STANDARD.encode(ca)},
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [resource.0], "apiVersions": [resource.1], "resources": [resource.2]}],
        // Only this test's namespaces: other tests never go through this test's webhook.
        "namespaceSelector": {"matchLabels": {"lbc-e2e/webhook-test": test_label}},
    })
}

/// A dry-run admission probe for the TargetGroupBinding webhooks (mutating + validating): a binding of Service
/// `web` port 80 to `tg_arn`.
pub fn probe_binding(ns: &str, name: &str, tg_arn: &str) -> lbc_model::crd::TargetGroupBinding {
    serde_json::from_value(json!({
        "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"targetGroupARN": tg_arn, "serviceRef": {"name": "web", "port": 80}},
    }))
    .expect("probe binding")
}

/// A dry-run admission probe for the pod webhook: a pod of `app: web` (in an opted-in namespace its readiness
/// gate must be injected), on `node` when given.
pub fn probe_pod(ns: &str, name: &str, node: Option<&str>) -> k8s_openapi::api::core::v1::Pod {
    let mut spec = json!({"containers": [{"name": "c", "image": "probe"}]});
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": "web"}},
        "spec": spec,
    }))
    .expect("probe pod")
}

/// Whether the pod webhook injected the readiness gate of Service `web` ([`crate::fixture::GATE`]).
pub fn gate_injected(pod: &k8s_openapi::api::core::v1::Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.readiness_gates.as_ref())
        .is_some_and(|g| g.iter().any(|g| g.condition_type == crate::fixture::GATE))
}
