//! QUIC on an NLB (`quic-enabled-ports`): the UDP listener and its target group become QUIC; the
//! pod webhook (`/mutate-v1-pod-server-id`, called by the real kube-apiserver) gives each pod's
//! named container a server ID; each pod's target is registered with its own ID (the emulator
//! refuses a QUIC target without one, as AWS does); a pod created without an ID is left out and
//! named in a Warning.

use super::*;
use base64::Engine as _;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Pod;
use lbc_e2e::webhook::{webhook, write_cert};

const QUIC_CONTAINERS: &str = "service.beta.kubernetes.io/aws-load-balancer-quic-enabled-containers";
const SERVER_ID_VAR: &str = "AWS_LBC_QUIC_SERVER_ID";

/// The server ID the webhook put in pod `name`'s container, in AWS's form (`0x` + 16 hex digits).
async fn server_id(pods: &Api<Pod>, name: &str) -> Option<String> {
    let pod = pods.get(name).await.ok()?;
    let env = pod.spec?.containers.into_iter().next()?.env?;
    let value = env.into_iter().find(|e| e.name == SERVER_ID_VAR)?.value?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(value).ok()?;
    Some(format!("0x{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()))
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn quic_ports_get_quic_listeners_and_each_pod_is_registered_with_its_server_id() {
    let Some(env) = Env::require("svc_nlb_quic") else { return };
    let client = kube_util::client(&env).await;
    let elb = aws::elbv2(&env).await;
    let id = unique("quic");
    let ns = id.clone();
    kube_util::namespace(
        &client,
        &ns,
        &[("elbv2.k8s.aws/quic-server-id-inject", "enabled"), ("lbc-e2e/webhook-test", &id)],
    )
    .await;
    let cert_dir = env.run_dir().join(format!("{id}-certs"));
    let ca = write_cert(&cert_dir);
    let ctl = ControllerProc::start(
        &env,
        &ns,
        &format!("{id}-leader"),
        &[&format!("--webhook-cert-dir={}", cert_dir.display())],
    );
    eventually("controller ready", 30, || async { ctl.ready().await.then_some(()) }).await;
    let mwcs: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let mwc_name = format!("{id}-quicid");
    let mwc = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
                     "metadata": {"name": mwc_name},
                     "webhooks": [webhook("quicid.elbv2.k8s.aws", ctl.webhook_port, "/mutate-v1-pod-server-id", &ca,
                                          &id, "Fail", ("", "v1", "pods"))]});
    mwcs.patch(&mwc_name, &PatchParams::apply("e2e").force(), &Patch::Apply(mwc)).await.expect("webhook config");

    // Two pods through the webhook; one more of the same Service without the annotation (no ID).
    let annotation = format!("{QUIC_CONTAINERS}=app");
    let quic_pods =
        ["create", &ns, "web", "--replicas", "2", "--port", "8443", "--port-name", "h3", "--protocol", "UDP"];
    env.pods(&[&quic_pods[..], &["--annotations", &annotation, "--terminate-seconds", "2"]].concat());
    env.pods(&[
        "create",
        &ns,
        "plain",
        "--replicas",
        "1",
        "--port",
        "8443",
        "--port-name",
        "h3",
        "--protocol",
        "UDP",
        "--labels",
        "app=web",
        "--terminate-seconds",
        "2",
    ]);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let (id0, id1) = (server_id(&pods, "web-0").await, server_id(&pods, "web-1").await);
    let (id0, id1) = (id0.expect("web-0 got a server ID"), id1.expect("web-1 got a server ID"));
    assert_ne!(id0, id1, "every pod its own server ID");
    assert_eq!(server_id(&pods, "plain-0").await, None, "no annotation, no ID");
    // One worker ID for this process, claimed from ALBC's counter, which now names the next one.
    let worker = |sid: &str| (u64::from_str_radix(&sid[2..], 16).expect("hex") >> 7) & 0x1ffff;
    assert_eq!(worker(&id0), worker(&id1));
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(client.clone(), "kube-system");
    let cm = cms.get("quic-server-id-worker-tracker").await.expect("the worker counter");
    let next: u64 = cm.data.expect("data")["nextWorkerId"].parse().expect("a number");
    assert_eq!(next, (worker(&id0) + 1) % 0x1ffff, "the counter moved past the worker ID claimed");

    let svc: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "h3", "annotations": {
            format!("{ANN}/aws-load-balancer-type"): "external",
            format!("{ANN}/aws-load-balancer-nlb-target-type"): "ip",
            format!("{ANN}/aws-load-balancer-quic-enabled-ports"): "443"}},
        "spec": {"type": "LoadBalancer", "selector": {"app": "web"},
                 "ports": [{"name": "h3", "port": 443, "targetPort": 8443, "protocol": "UDP"}]},
    }))
    .unwrap();
    let services: Api<Service> = Api::namespaced(client.clone(), &ns);
    services.create(&PostParams::default(), &svc).await.expect("create Service");
    eventually("status.loadBalancer hostname", 90, || async {
        let s = services.get_opt("h3").await.ok()??;
        s.status?.load_balancer?.ingress?.first()?.hostname.clone()
    })
    .await;
    let (lbs, tgs) = aws::stack_arns(&elb, "service.k8s.aws/stack", &format!("{ns}/h3")).await;
    let tg = elb.describe_target_groups().set_target_group_arns(Some(tgs.clone())).send().await.expect("tgs");
    assert_eq!(tg.target_groups()[0].protocol().map(|p| p.as_str()), Some("QUIC"));
    let listeners = elb.describe_listeners().load_balancer_arn(&lbs[0]).send().await.expect("listeners");
    let l = &listeners.listeners()[0];
    assert_eq!((l.port(), l.protocol().map(|p| p.as_str())), (Some(443), Some("QUIC")));

    // Each pod's target with its own server ID, as AWS reports them; the pod without one is left out.
    let mut want = BTreeSet::new();
    for (pod, sid) in [("web-0", &id0), ("web-1", &id1)] {
        let ip = pods.get(pod).await.ok().and_then(|p| p.status?.pod_ip).expect("the pod's IP");
        want.insert(format!("{ip}:8443 {sid}"));
    }
    let registered = || async {
        let out = elb.describe_target_health().target_group_arn(&tgs[0]).send().await.expect("health");
        let got: BTreeSet<String> = out
            .target_health_descriptions()
            .iter()
            .filter_map(|d| d.target())
            .map(|t| {
                format!(
                    "{}:{} {}",
                    t.id().unwrap_or_default(),
                    t.port().unwrap_or_default(),
                    t.quic_server_id().unwrap_or("none")
                )
            })
            .collect();
        got
    };
    eventually("each pod registered with its server ID", 60, || async { (registered().await == want).then_some(()) })
        .await;
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), &ns);
    let warned = eventually("the pod without a server ID named", 30, || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items.into_iter().filter(|e| e.reason.as_deref() == Some("QUICServerIDMissing")).find_map(|e| e.note)
    })
    .await;
    assert!(warned.contains("plain-0") && warned.contains(QUIC_CONTAINERS), "{warned}");

    services.delete("h3", &DeleteParams::default()).await.expect("delete Service");
    eventually("stack deleted", 90, || async {
        aws::stack_arns(&elb, "service.k8s.aws/stack", &format!("{ns}/h3")).await.0.is_empty().then_some(())
    })
    .await;
    mwcs.delete(&mwc_name, &DeleteParams::default()).await.expect("delete webhook config");
    drop(ctl);
}
