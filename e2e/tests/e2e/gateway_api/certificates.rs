//! HTTPS listeners of an ALB Gateway with their certificates from Secrets (issue 34 item 5): the
//! real controller with `--enable-gateway-certificate-secrets`, a `kubernetes.io/tls` Secret, the
//! emulator's ACM and ELBv2. The Secret is imported once (tagged as the Gateway's), the listener
//! uses it, a resync writes nothing, a rotated Secret is imported again under the same ARN, an
//! HTTPS listener dropped deletes its import, and the Gateway's deletion leaves no import behind.

use super::alb::{CONTROLLER, Scene, condition, scene};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use lbc_e2e::controller::ControllerProc;
use lbc_e2e::emulator::{self, Emulator};
use lbc_e2e::{Env, aws, eventually, kube_util, unique};
use serde_json::json;

const STACK_TAG: &str = "gateway.k8s.aws.alb/stack";

fn tls_secret(ns: &str, host: &str) -> Secret {
    use base64::Engine as _;
    let key = rcgen::KeyPair::generate().expect("key pair");
    let mut params = rcgen::CertificateParams::new(vec![host.to_string()]).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, host);
    let cert = params.self_signed(&key).unwrap();
    let b64 = |s: String| base64::engine::general_purpose::STANDARD.encode(s);
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": "cert", "namespace": ns},
        "data": {"tls.crt": b64(cert.pem()), "tls.key": b64(key.serialize_pem())}
    }))
    .unwrap()
}

/// The certificate ARNs of the Gateway's port-443 listener (default first), if it has one.
async fn listener_certificates(elb: &aws_sdk_elasticloadbalancingv2::Client, lb: &str) -> Option<Vec<String>> {
    let ls = elb.describe_listeners().load_balancer_arn(lb).send().await.ok()?;
    let l = ls.listeners().iter().find(|l| l.port() == Some(443))?;
    Some(l.certificates().iter().filter_map(|c| c.certificate_arn().map(String::from)).collect())
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn an_https_listener_takes_its_certificate_from_a_secret_imported_into_acm() {
    let Some(env) = Env::require("alb_gateway_certificates") else { return };
    let client = kube_util::client(&env).await;
    let elb = aws::elbv2(&env).await;
    let emu = Emulator::new(env.aws_endpoint());
    let ns = unique("gw-tls");
    kube_util::namespace(&client, &ns, &[]).await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    secrets.create(&PostParams::default(), &tls_secret(&ns, "a.example.com")).await.expect("create Secret");
    let Scene { class_name, classes, gateways, .. } = scene(&env, &client, &ns).await;
    let https = json!({"spec": {"listeners": [
        {"name": "http", "port": 80, "protocol": "HTTP"},
        {"name": "https", "port": 443, "protocol": "HTTPS", "tls": {"certificateRefs": [{"name": "cert"}]}}
    ]}});
    gateways.patch("gw", &PatchParams::default(), &Patch::Merge(https)).await.expect("add the HTTPS listener");

    let mark = emu.mark().await;
    let ctl = ControllerProc::start(
        &env,
        &ns,
        "lbc-e2e-gw-tls",
        &[
            "--feature-gates=ALBGatewayAPI=true",
            "--enable-gateway-certificate-secrets=true",
            "--default-target-type=ip",
            "--enable-service-controller=false",
        ],
    );
    let stack = format!("{ns}/gw");
    let lb = eventually("the ALB with its HTTPS listener", 120, || async {
        let (lbs, _) = aws::stack_arns(&elb, STACK_TAG, &stack).await;
        let lb = lbs.first()?.clone();
        let certs = listener_certificates(&elb, &lb).await?;
        (certs.len() == 1).then_some(lb)
    })
    .await;
    let arn = listener_certificates(&elb, &lb).await.unwrap().remove(0);
    let tags = aws::acm_tags(&env, &arn).await;
    assert_eq!(tags.get(STACK_TAG), Some(&stack), "{tags:?}");
    assert_eq!(tags.get("gateway.k8s.aws.alb/resource").map(String::as_str), Some(&*format!("Secret/{ns}/cert")));
    let digest = tags.get("gateway.k8s.aws.alb/secret-sha256").cloned().expect("digest tag");
    let described = aws::acm_describe(&env, &arn).await.expect("the import");
    assert_eq!(described["DomainName"], "a.example.com");
    assert_eq!(described["Type"], "IMPORTED");
    let writes = emulator::writes(&emu.calls(mark, None).await.0, &ctl.access_key);
    assert_eq!(writes.iter().filter(|w| *w == "ImportCertificate").count(), 1, "{writes:?}");
    eventually("the https listener Programmed", 60, || async {
        let s = gateways.get("gw").await.ok()?.status?;
        let l = s.listeners.iter().find(|l| l.name == "https")?;
        (condition(&l.conditions, "Programmed")?.0 == "True" && l.attached_routes == 1).then_some(())
    })
    .await;

    // Steady state: a pass with everything in place writes nothing.
    let poke = || kube_util::poke(&gateways, "gw");
    ctl.settled(CONTROLLER, "the HTTPS listener in place", poke).await;
    let quiet = emu.mark().await;
    ctl.settled(CONTROLLER, "a resync", poke).await;
    assert_eq!(emulator::writes(&emu.calls(quiet, None).await.0, &ctl.access_key), Vec::<String>::new());

    // The Secret rotates: imported again under the same ARN, its digest tag follows, the listener keeps it.
    let mark = emu.mark().await;
    let mut rotated = tls_secret(&ns, "b.example.com");
    rotated.metadata.resource_version = secrets.get("cert").await.unwrap().metadata.resource_version;
    secrets.replace("cert", &PostParams::default(), &rotated).await.expect("rotate the Secret");
    eventually("the import renewed", 60, || async {
        let d = aws::acm_describe(&env, &arn).await?;
        let t = aws::acm_tags(&env, &arn).await;
        (d["DomainName"] == "b.example.com" && t.get("gateway.k8s.aws.alb/secret-sha256") != Some(&digest))
            .then_some(())
    })
    .await;
    ctl.settled(CONTROLLER, "the rotation", poke).await;
    let writes = emulator::writes(&emu.calls(mark, None).await.0, &ctl.access_key);
    assert_eq!(writes, vec!["ImportCertificate", "AddTagsToCertificate"], "re-import in place, nothing else");
    assert_eq!(listener_certificates(&elb, &lb).await, Some(vec![arn.clone()]));

    // The HTTPS listener goes: so does its import, once the listener no longer uses it.
    let http_only = json!({"spec": {"listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}});
    gateways.patch("gw", &PatchParams::default(), &Patch::Merge(http_only)).await.expect("drop HTTPS");
    eventually("the import deleted", 90, || async { aws::acm_describe(&env, &arn).await.is_none().then_some(()) })
        .await;
    assert_eq!(listener_certificates(&elb, &lb).await, None, "no 443 listener");

    // Back with HTTPS, then the Gateway deleted: nothing of it is left in ELB nor in ACM.
    let https = json!({"spec": {"listeners": [
        {"name": "http", "port": 80, "protocol": "HTTP"},
        {"name": "https", "port": 443, "protocol": "HTTPS", "tls": {"certificateRefs": [{"name": "cert"}]}}
    ]}});
    gateways.patch("gw", &PatchParams::default(), &Patch::Merge(https)).await.expect("HTTPS again");
    let again = eventually("a new import on the listener", 120, || async {
        listener_certificates(&elb, &lb).await?.first().filter(|a| **a != arn).cloned()
    })
    .await;
    gateways.delete("gw", &DeleteParams::default()).await.expect("delete Gateway");
    eventually("the Gateway gone", 180, || async { gateways.get_opt("gw").await.ok()?.is_none().then_some(()) }).await;
    assert_eq!(aws::stack_arns(&elb, STACK_TAG, &stack).await, (vec![], vec![]), "nothing of the stack left");
    assert!(aws::acm_describe(&env, &again).await.is_none(), "the import is deleted with the Gateway");

    drop(ctl);
    kube_util::delete_namespace(&client, &ns).await;
    let _ = classes.delete(&class_name, &DeleteParams::default()).await;
}
