//! The real node of the local environment (`LBC_E2E_NODE=1 e2e/up`, `e2e/node/lib.sh`): a kubelet on
//! containerd + runc with a CNI bridge, kube-scheduler, and forwarders from the pod network to the API server
//! and the AWS emulator. A Deployment of two real containers (busybox httpd and kubectl, the probe image) is
//! scheduled there and becomes Ready through its readiness probe, running as uid 65532 on a read-only root
//! with a projected ServiceAccount token of a custom audience; the API server reaches each pod on its IP
//! (the pods proxy), and each pod reaches the API server (kubectl's in-cluster client) and the emulator (whose
//! call log names the pod in `forwarded_for`) through the forwarders.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authentication::v1::TokenReview;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, PostParams};
use kube::{Client, ResourceExt};
use lbc_e2e::emulator::Emulator;
use lbc_e2e::{Env, eventually, kube_util, unique};
use serde_json::{Value, json};
use std::net::IpAddr;

const AUDIENCE: &str = "lbc-e2e-probe";
const PORT: u16 = 8080;

/// The environment with its real node, or `None` (skipped) without one; a precise failure under
/// `LBC_E2E_REQUIRED=1` (e2e/test-all), so the suite cannot pass by skipping.
fn node_env(test: &str) -> Option<Env> {
    let env = Env::require(test)?;
    if env.vars().contains_key("LBC_NODE_NAME") {
        return Some(env);
    }
    let why = "e2e/.run/env has no LBC_NODE_NAME: the environment runs without its real node \
               (start it with LBC_E2E_NODE=1 e2e/up; e2e/test-all sets LBC_E2E_NODE=1)";
    if std::env::var("LBC_E2E_REQUIRED").as_deref() == Ok("1") {
        panic!("{test}: LBC_E2E_REQUIRED=1 but {why}");
    }
    eprintln!("SKIPPED {test}: {why}");
    None
}

/// GET through the API server's pods proxy (`/api/v1/namespaces/NS/pods/POD:PORT/proxy/PATH`): the API
/// server dials the pod IP itself. Returns (HTTP status, body).
async fn via_pod_proxy(env: &Env, ns: &str, pod: &str, path: &str) -> (u16, String) {
    let ca = std::fs::read(env.get("LBC_KUBE_CA_FILE")).expect("e2e CA file");
    let http = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&ca).expect("CA pem"))
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .expect("https client");
    let url = format!("{}/api/v1/namespaces/{ns}/pods/{pod}:{PORT}/proxy/{path}", env.get("LBC_KUBE_SERVER"));
    let r = http
        .get(&url)
        .bearer_auth(env.get("LBC_ADMIN_TOKEN"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let status = r.status().as_u16();
    (status, r.text().await.unwrap_or_default())
}

fn probe_deployment(env: &Env, ns: &str) -> Deployment {
    let api_port = env.get("LBC_NODE_API_URL").rsplit(':').next().expect("port in LBC_NODE_API_URL").to_string();
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "probe", "namespace": ns},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "probe"}},
            "template": {
                "metadata": {"labels": {"app": "probe"}},
                "spec": {
                    "serviceAccountName": "probe",
                    "securityContext": {"runAsUser": 65532, "runAsGroup": 65532, "runAsNonRoot": true,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [{
                        "name": "probe",
                        "image": env.get("LBC_NODE_PROBE_IMAGE"),
                        "imagePullPolicy": "Never",
                        // The pod's own values win over the kubelet's service variables (10.96.0.1:443, a
                        // ClusterIP nothing routes: no kube-proxy): the API server's forwarder instead.
                        "env": [
                            {"name": "KUBERNETES_SERVICE_HOST", "value": env.get("LBC_NODE_HOST_IP")},
                            {"name": "KUBERNETES_SERVICE_PORT", "value": api_port},
                            {"name": "LBC_AWS_URL", "value": env.get("LBC_NODE_AWS_URL")},
                        ],
                        "ports": [{"name": "http", "containerPort": PORT}],
                        "readinessProbe": {"httpGet": {"path": "/healthz", "port": PORT}, "periodSeconds": 2},
                        "securityContext": {"readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false,
                                            "capabilities": {"drop": ["ALL"]}},
                        "volumeMounts": [
                            {"name": "tmp", "mountPath": "/tmp"},
                            {"name": "token", "mountPath": "/var/run/secrets/lbc-e2e", "readOnly": true},
                        ],
                    }],
                    "volumes": [
                        {"name": "tmp", "emptyDir": {}},
                        {"name": "token", "projected": {"sources": [{"serviceAccountToken":
                            {"audience": AUDIENCE, "expirationSeconds": 600, "path": "token"}}]}},
                    ],
                },
            },
        },
    }))
    .expect("deployment manifest")
}

/// TokenReview of `token` for `audience`: (authenticated, username, pod name of a bound token).
async fn review(client: &Client, token: &str, audience: &str) -> (bool, String, Option<String>) {
    let tr: TokenReview = serde_json::from_value(json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
        "spec": {"token": token, "audiences": [audience]},
    }))
    .expect("token review");
    let out = Api::<TokenReview>::all(client.clone()).create(&PostParams::default(), &tr).await.expect("TokenReview");
    let status = out.status.unwrap_or_default();
    let user = status.user.unwrap_or_default();
    let pod = user.extra.as_ref().and_then(|e| e.get("authentication.kubernetes.io/pod-name")?.first().cloned());
    (status.authenticated == Some(true), user.username.unwrap_or_default(), pod)
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment with its real node (LBC_E2E_NODE=1 e2e/up); e2e/test-all runs it"]
async fn real_node_runs_a_deployment_that_reaches_the_api_server_and_aws() {
    let Some(env) = node_env("real_node_runs_a_deployment_that_reaches_the_api_server_and_aws") else {
        return;
    };
    let client = kube_util::client(&env).await;
    let node_name = env.get("LBC_NODE_NAME").to_string();
    let host_ip = env.get("LBC_NODE_HOST_IP").to_string();
    let pod_cidr: ipnet::IpNet = env.get("LBC_NODE_POD_CIDR").parse().expect("LBC_NODE_POD_CIDR");

    // The node: Ready, labelled, its InternalIP the gateway of the pod network.
    let node = Api::<Node>::all(client.clone()).get(&node_name).await.expect("the real node's Node object");
    let status = node.status.clone().unwrap_or_default();
    let ready = status.conditions.iter().flatten().find(|c| c.type_ == "Ready").map(|c| c.status.clone());
    assert_eq!(ready.as_deref(), Some("True"), "node {node_name} is not Ready: {:?}", status.conditions);
    let (label, value) = env.get("LBC_NODE_LABEL").split_once('=').expect("LBC_NODE_LABEL is key=value");
    assert_eq!(
        node.labels().get(label).map(String::as_str),
        Some(value),
        "node {node_name} labels: {:?}",
        node.labels()
    );
    let internal = status.addresses.iter().flatten().find(|a| a.type_ == "InternalIP").map(|a| a.address.clone());
    assert_eq!(internal.as_deref(), Some(host_ip.as_str()), "node {node_name} addresses: {:?}", status.addresses);

    let ns = unique("real-node");
    kube_util::namespace(&client, &ns, &[]).await;
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "probe", "namespace": ns}});
    Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &serde_json::from_value(sa).unwrap())
        .await
        .expect("create ServiceAccount probe");

    // Two replicas, placed by kube-scheduler (no nodeName), Running and Ready through the readiness probe.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    deployments.create(&PostParams::default(), &probe_deployment(&env, &ns)).await.expect("create Deployment");
    let pods_api: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let pods: Vec<Pod> = eventually("2 probe pods Running and Ready on the real node", 120, || async {
        let pods = pods_api.list(&ListParams::default().labels("app=probe")).await.ok()?.items;
        let ready = |p: &Pod| {
            let s = p.status.as_ref();
            s.and_then(|s| s.phase.as_deref()) == Some("Running")
                && s.and_then(|s| s.conditions.as_ref())
                    .into_iter()
                    .flatten()
                    .any(|c| c.type_ == "Ready" && c.status == "True")
        };
        (pods.len() == 2 && pods.iter().all(ready)).then_some(pods)
    })
    .await;
    // The Deployment's status follows its pods' (the deployment controller writes it after them).
    eventually("Deployment probe: readyReplicas 2", 60, || async {
        let dep = deployments.get("probe").await.ok()?;
        (dep.status.and_then(|s| s.ready_replicas) == Some(2)).then_some(())
    })
    .await;

    for pod in &pods {
        let name = pod.name_any();
        let spec = pod.spec.as_ref().expect("pod spec");
        let status = pod.status.as_ref().expect("pod status");
        assert_eq!(spec.node_name.as_deref(), Some(node_name.as_str()), "pod {name} scheduled elsewhere");
        assert_eq!(status.host_ip.as_deref(), Some(host_ip.as_str()), "pod {name}: hostIP");
        let ip: IpAddr = status.pod_ip.as_deref().expect("podIP").parse().expect("podIP is an IP");
        assert!(pod_cidr.contains(&ip), "pod {name}: IP {ip} outside the node's pod network {pod_cidr}");

        // The API server reaches the pod IP (its pods proxy dials it): the readiness endpoint and the user.
        let (code, body) = via_pod_proxy(&env, &ns, &name, "healthz").await;
        assert_eq!((code, body.trim()), (200, "ok"), "GET /healthz of pod {name} through the API server");
        let (code, body) = via_pod_proxy(&env, &ns, &name, "cgi-bin/id").await;
        assert_eq!(code, 200, "GET /cgi-bin/id of pod {name}: {body}");
        assert!(body.contains("uid=65532 gid=65532"), "pod {name} runs as: {body}");
        assert!(body.contains("rootfs=read-only"), "pod {name}'s root filesystem took a write: {body}");

        // The projected token with the custom audience, read by the container's user: the API server says it
        // is this pod's (a bound token) and valid for that audience only.
        let (code, token) = via_pod_proxy(&env, &ns, &name, "cgi-bin/token").await;
        assert_eq!(code, 200, "GET /cgi-bin/token of pod {name}: {token}");
        let (ok, user, bound_pod) = review(&client, token.trim(), AUDIENCE).await;
        assert!(ok, "the token pod {name} read is not valid for audience {AUDIENCE}");
        assert_eq!(user, format!("system:serviceaccount:{ns}:probe"), "token of pod {name}");
        assert_eq!(bound_pod.as_deref(), Some(name.as_str()), "the token is bound to another pod");
        let (ok, _, _) = review(&client, token.trim(), "vault").await;
        assert!(!ok, "the token of audience {AUDIENCE} must not be accepted for audience vault");
    }

    // From a pod to the API server: kubectl's in-cluster client (KUBERNETES_SERVICE_HOST/PORT from the pod's
    // env, its ServiceAccount token and CA bundle; TLS checks the gateway address in the API server's
    // certificate). Its connection is logged by the forwarder with the pod's IP.
    let pod = &pods[0];
    let name = pod.name_any();
    let pod_ip = pod.status.as_ref().and_then(|s| s.pod_ip.clone()).expect("podIP");
    let (code, body) = via_pod_proxy(&env, &ns, &name, "cgi-bin/whoami").await;
    assert_eq!(code, 200, "GET /cgi-bin/whoami of pod {name}: {body}");
    let review: Value =
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("pod {name}'s kubectl said: {body} ({e})"));
    let info = &review["status"]["userInfo"];
    assert_eq!(
        info["username"],
        format!("system:serviceaccount:{ns}:probe"),
        "SelfSubjectReview from pod {name}: {review}"
    );
    assert_eq!(info["extra"]["authentication.kubernetes.io/pod-name"][0], name.as_str(), "{review}");
    let api_port = env.get("LBC_KUBE_SERVER").rsplit(':').next().expect("port").to_string();
    let log_path = format!("{}/logs/node-forward.log", env.get("LBC_E2E_ROOT"));
    let log = std::fs::read_to_string(&log_path).unwrap_or_else(|e| panic!("{log_path}: {e}"));
    let accepted = format!("accept tcp {pod_ip}:");
    assert!(
        log.lines().any(|l| l.contains(&accepted) && l.ends_with(&format!("-> 127.0.0.1:{api_port}"))),
        "no connection from pod {name} ({pod_ip}) to the API server in {log_path}"
    );

    // From a pod to the AWS emulator through the HTTP forwarder: the call log names the pod.
    let emu = Emulator::new(env.aws_endpoint());
    let mark = emu.mark().await;
    let (code, body) = via_pod_proxy(&env, &ns, &name, "cgi-bin/aws").await;
    assert_eq!(code, 200, "GET /cgi-bin/aws of pod {name}: {body}");
    let vpc = env.get("LBC_VPC_ID");
    assert!(body.contains("<DescribeVpcsResponse") && body.contains(vpc), "pod {name}'s DescribeVpcs answer: {body}");
    let (calls, _) = emu.calls(mark, None).await;
    let from_pod: Vec<_> = calls.iter().filter(|c| c.operation == "DescribeVpcs").collect();
    assert_eq!(from_pod.len(), 1, "DescribeVpcs calls since the pod's: {calls:?}");
    assert_eq!(from_pod[0].forwarded_for.as_deref(), Some(pod_ip.as_str()), "the emulator's record: {:?}", from_pod[0]);

    kube_util::delete_namespace(&client, &ns).await;
}

/// The API server calls a webhook named by a Service on an endpoint of that Service (its EndpointSlices), not
/// on its ClusterIP (`--enable-aggregator-routing`; nothing routes ClusterIPs here). The Service's only endpoint
/// is the node's forwarder to the API server itself: the call reaches a TLS server whose certificate does not
/// name the Service, so it fails with that certificate's names (a ClusterIP call would time out instead).
#[tokio::test]
#[ignore = "end-to-end: needs the local environment with its real node (LBC_E2E_NODE=1 e2e/up); e2e/test-all runs it"]
async fn service_webhooks_are_called_on_their_endpoints() {
    use base64::Engine as _;
    use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
    use k8s_openapi::api::core::v1::{ConfigMap, Service};
    use k8s_openapi::api::discovery::v1::EndpointSlice;

    let Some(env) = node_env("service_webhooks_are_called_on_their_endpoints") else {
        return;
    };
    let client = kube_util::client(&env).await;
    let ns = unique("node-hook");
    kube_util::namespace(&client, &ns, &[]).await;
    let api_port: i32 = env.get("LBC_NODE_API_URL").rsplit(':').next().and_then(|p| p.parse().ok()).expect("port");
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hook", "namespace": ns},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": api_port}]}});
    Api::<Service>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &serde_json::from_value(svc).unwrap())
        .await
        .expect("create Service hook");
    let slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "hook-1", "namespace": ns, "labels": {"kubernetes.io/service-name": "hook"}},
        "addressType": "IPv4", "ports": [{"name": "https", "port": api_port, "protocol": "TCP"}],
        "endpoints": [{"addresses": [env.get("LBC_NODE_HOST_IP")], "conditions": {"ready": true}}]});
    Api::<EndpointSlice>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &serde_json::from_value(slice).unwrap())
        .await
        .expect("create EndpointSlice hook-1");
    let ca = std::fs::read(env.get("LBC_KUBE_CA_FILE")).expect("CA");
    let hook = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": ns},
        "webhooks": [{"name": "probe.lbc-e2e.local",
            "clientConfig": {"service": {"namespace": ns, "name": "hook", "port": 443, "path": "/lbc-e2e-webhook"},
                             "caBundle": base64::engine::general_purpose::STANDARD.encode(&ca)},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
            "failurePolicy": "Fail", "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 5}]});
    let hooks: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    hooks.create(&PostParams::default(), &serde_json::from_value(hook).unwrap()).await.expect("create webhook");

    // The configuration reaches the API server's webhook cache within a moment: until then creates pass.
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let mut n = 0;
    let err = eventually("a ConfigMap create refused by the webhook", 30, || {
        n += 1;
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": format!("c{n}")}})).unwrap();
        let configmaps = configmaps.clone();
        async move { configmaps.create(&PostParams::default(), &cm).await.err().map(|e| e.to_string()) }
    })
    .await;
    let _ = hooks.delete(&ns, &Default::default()).await;
    kube_util::delete_namespace(&client, &ns).await;
    assert!(err.contains("failed calling webhook \"probe.lbc-e2e.local\""), "{err}");
    assert!(
        err.contains("x509: certificate is valid for") && err.contains(&format!("not hook.{ns}.svc")),
        "the webhook call did not reach the Service's endpoint (the API server's own certificate): {err}"
    );
}
