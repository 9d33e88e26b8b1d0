//! The ALB target control agent (gate `ALBTargetControlAgent`): ALBC's two pod webhooks with the
//! chart's selectors, called by the real kube-apiserver. A pod of a namespace labelled
//! `elbv2.k8s.aws/alb-target-control-agent-injection=enabled` gets the sidecar from that
//! namespace's ALBTargetControlConfig unless it says `false`; elsewhere a pod labelled `true` gets
//! it; a bad annotation refuses the pod with our message; a pod created before any configuration
//! is admitted without the agent and told why.

use super::*;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use lbc_model::crd::{ALBTargetControlConfig, TARGET_CONTROL_CONFIG_NAME};

const INJECTION: &str = "elbv2.k8s.aws/alb-target-control-agent-injection";
const INJECT: &str = "elbv2.k8s.aws/alb-target-control-agent-inject";

/// One of the chart's two webhooks, limited to this test's namespaces.
fn agent_webhook(kind: &str, port: u16, ca: &str, id: &str) -> serde_json::Value {
    let (namespace_rule, object_rule) = match kind {
        "namespace" => (
            json!({"key": INJECTION, "operator": "In", "values": ["enabled"]}),
            json!({"key": INJECT, "operator": "NotIn", "values": ["false"]}),
        ),
        _ => (
            json!({"key": INJECTION, "operator": "DoesNotExist"}),
            json!({"key": INJECT, "operator": "In", "values": ["true"]}),
        ),
    };
    let mut w = webhook(
        &format!("alb-target-control.{kind}.elbv2.k8s.aws"),
        port,
        &format!("/mutate-alb-target-control-{kind}-v1-pod"),
        ca,
        id,
        "Fail",
        ("", "v1", "pods"),
    );
    w["rules"][0]["operations"] = json!(["CREATE"]);
    w["namespaceSelector"] = json!({"matchLabels": {"lbc-e2e/webhook-test": id}, "matchExpressions": [namespace_rule]});
    w["objectSelector"] = json!({"matchExpressions": [object_rule]});
    w
}

fn pod(name: &str, labels: serde_json::Value, annotations: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {"containers": [{"name": "app", "image": "app:1", "ports": [{"containerPort": 8080}]}]},
    }))
    .unwrap()
}

fn agent(p: &Pod) -> Option<k8s_openapi::api::core::v1::Container> {
    p.spec.as_ref()?.containers.iter().find(|c| c.name == "alb-target-control-agent").cloned()
}

async fn config(client: &kube::Client, ns: &str, image: &str) {
    let api: Api<ALBTargetControlConfig> = Api::namespaced(client.clone(), ns);
    let c = json!({"apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "ALBTargetControlConfig",
                   "metadata": {"name": TARGET_CONTROL_CONFIG_NAME},
                   "spec": {"image": image, "dataAddress": "0.0.0.0:80", "controlAddress": "0.0.0.0:3000",
                            "destinationAddress": "127.0.0.1:8080", "rustLog": "info"}});
    api.create(&PostParams::default(), &serde_json::from_value(c).unwrap())
        .await
        .expect("create ALBTargetControlConfig");
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn target_control_agents_follow_the_labels_and_the_namespaces_config() {
    let Some(env) = Env::require("webhooks_target_control") else { return };
    let client = kube_util::client(&env).await;
    let id = unique("tca");
    let (opted, plain) = (format!("{id}-on"), format!("{id}-off"));
    kube_util::namespace(&client, &opted, &[(INJECTION, "enabled"), ("lbc-e2e/webhook-test", &id)]).await;
    kube_util::namespace(&client, &plain, &[("lbc-e2e/webhook-test", &id)]).await;
    let cert_dir = env.run_dir().join(format!("{id}-certs"));
    let ca = write_cert(&cert_dir);
    let ctl = ControllerProc::start(
        &env,
        &opted,
        &format!("{id}-leader"),
        &[&format!("--webhook-cert-dir={}", cert_dir.display()), "--feature-gates=ALBTargetControlAgent=true"],
    );
    eventually("controller ready", 30, || async { ctl.ready().await.then_some(()) }).await;
    let mwcs: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let mwc_name = format!("{id}-target-control");
    let mwc = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
                     "metadata": {"name": mwc_name},
                     "webhooks": [agent_webhook("namespace", ctl.webhook_port, &ca, &id),
                                  agent_webhook("object", ctl.webhook_port, &ca, &id)]});
    mwcs.patch(&mwc_name, &PatchParams::apply("e2e").force(), &Patch::Apply(mwc)).await.expect("webhook config");

    // No configuration yet: admitted without the agent (the API server passes our warning on).
    let on: Api<Pod> = Api::namespaced(client.clone(), &opted);
    let early = eventually("a pod through the webhook", 30, || async {
        on.create(&PostParams::default(), &pod("early", json!({}), json!({}))).await.ok()
    })
    .await;
    assert!(agent(&early).is_none(), "no ALBTargetControlConfig: no agent");

    config(&client, &opted, "agent:on").await;
    config(&client, &plain, "agent:off").await;
    // The configuration reaches the webhook's cache through its watch: wait until a pod gets it.
    let web = eventually("a pod of the opted-in namespace with the agent", 30, || async {
        let name = unique("web");
        let p = on.create(&PostParams::default(), &pod(&name, json!({}), json!({}))).await.ok()?;
        agent(&p).is_some().then_some(p)
    })
    .await;
    let a = agent(&web).unwrap();
    assert_eq!(a.image.as_deref(), Some("agent:on"));
    let env_of = |c: &k8s_openapi::api::core::v1::Container| -> Vec<String> {
        c.env.iter().flatten().map(|e| format!("{}={}", e.name, e.value.clone().unwrap_or_default())).collect()
    };
    assert_eq!(
        env_of(&a),
        [
            "TARGET_CONTROL_DATA_ADDRESS=0.0.0.0:80",
            "TARGET_CONTROL_CONTROL_ADDRESS=0.0.0.0:3000",
            "TARGET_CONTROL_DESTINATION_ADDRESS=127.0.0.1:8080",
            "TARGET_CONTROL_MAX_CONCURRENCY=1",
            "RUST_LOG=info"
        ]
    );
    let annotations = web.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(annotations.get("elbv2.k8s.aws/alb-target-control-agent-injected").map(String::as_str), Some("true"));

    // The pod's own label wins over the namespace; annotations override the configuration.
    let out = on.create(&PostParams::default(), &pod("opted-out", json!({INJECT: "false"}), json!({}))).await.unwrap();
    assert!(agent(&out).is_none());
    let tuned = pod(
        "tuned",
        json!({}),
        json!({"elbv2.k8s.aws/alb-target-control-agent-image": "agent:2",
                                              "elbv2.k8s.aws/alb-target-control-agent-memory-limit": "64Mi"}),
    );
    let tuned = on.create(&PostParams::default(), &tuned).await.unwrap();
    let a = agent(&tuned).unwrap();
    assert_eq!(a.image.as_deref(), Some("agent:2"));
    assert_eq!(a.resources.unwrap().limits.unwrap()["memory"].0, "64Mi");
    // A bad value is refused by the API server with our message, and nothing is created.
    let bad = pod("bad", json!({}), json!({"elbv2.k8s.aws/alb-target-control-agent-data-address": "web:80"}));
    let err = on.create(&PostParams::default(), &bad).await.unwrap_err().to_string();
    assert!(err.contains("denied the request") && err.contains("\"web\" is not an IP address"), "{err}");
    assert!(on.get_opt("bad").await.unwrap().is_none());

    // Elsewhere only a pod labelled true gets it, from its own namespace's configuration.
    let off: Api<Pod> = Api::namespaced(client.clone(), &plain);
    let asked = off.create(&PostParams::default(), &pod("asked", json!({INJECT: "true"}), json!({}))).await.unwrap();
    assert_eq!(agent(&asked).and_then(|a| a.image).as_deref(), Some("agent:off"));
    let quiet = off.create(&PostParams::default(), &pod("quiet", json!({}), json!({}))).await.unwrap();
    assert!(agent(&quiet).is_none());
    assert_eq!(off.list(&ListParams::default()).await.unwrap().items.len(), 2);

    mwcs.delete(&mwc_name, &DeleteParams::default()).await.ok();
    drop(ctl);
    kube_util::delete_namespace(&client, &opted).await;
    kube_util::delete_namespace(&client, &plain).await;
}
