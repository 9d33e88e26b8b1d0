//! `mutual-authentication` against the emulator (trust stores and listener mutual TLS are ours
//! there, `e2e/emulator/mtls_patches.py`): a trust store named by name is waited for, then the
//! HTTPS listener verifies against it; mode changes are one ModifyListener each.

use super::*;

/// The HTTPS:443 listener's `MutualAuthentication` as DescribeListeners reports it: (mode, trust
/// store ARN, ignore expiry).
async fn listener_mtls(f: &Fixture, lb: &str) -> (String, Option<String>, Option<bool>) {
    let ls = f.elb.describe_listeners().load_balancer_arn(lb).send().await.expect("listeners");
    let l = ls.listeners().iter().find(|l| l.port() == Some(443)).expect("HTTPS listener on 443");
    let m = l.mutual_authentication().expect("an HTTPS listener reports its mutual TLS");
    (
        m.mode().unwrap_or_default().to_string(),
        m.trust_store_arn().map(str::to_string),
        m.ignore_client_certificate_expiry(),
    )
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn verify_waits_for_its_trust_store_and_modes_change_in_place() {
    let _serial = SERIAL.lock().await;
    let Some(f) = setup("ingress_alb_mtls").await else { return };
    let ns = ns_name("ing_mtls");
    f.namespace_with_backends(&ns, &[("svc-a", "a")]).await;
    let cert = aws::acm_import_certificate(&f.env, &[&format!("{}.example.test", unique("mtls"))]).await;
    // A short sync period: a missing trust store is looked for again at min(60 s, sync period).
    let ctl = ControllerProc::start(
        &f.env,
        &ns,
        "lbc-e2e-ing-mtls",
        &["--enable-service-controller=false", "--sync-period=5s"],
    );
    let stack = format!("{ns}/web");
    let store = unique("partners");
    let with_mtls = |mtls: Option<String>| {
        let mut ann = vec![("listen-ports", r#"[{"HTTPS":443}]"#.to_string()), ("certificate-arn", cert.clone())];
        ann.extend(mtls.map(|m| ("mutual-authentication", m)));
        let ann: Vec<(&str, &str)> = ann.iter().map(|(k, v)| (*k, v.as_str())).collect();
        ingress("web", vec![path("/", "svc-a")], &ann)
    };
    let replace = |ing: Ingress| f.replace_ingress(&ns, ing);

    // Verify against a trust store that does not exist yet: a Warning naming it, no ALB.
    let mark = f.emu.mark().await;
    let verify = format!(r#"[{{"port": 443, "mode": "verify", "trustStore": "{store}"}}]"#);
    f.ingresses(&ns).create(&PostParams::default(), &with_mtls(Some(verify))).await.expect("create ingress");
    let note = eventually("FailedBuildModel naming the trust store", 60, || async {
        notes(&f, &ns, "FailedBuildModel", "web").await.into_iter().find(|n| n.contains(&format!("{store:?}")))
    })
    .await;
    assert!(note.contains(&format!("{ALB}/mutual-authentication")) && note.contains("not found"), "{note}");
    f.settled(&ctl, &ns, "web", "the missing trust store's Warning").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "no ALB without its mutual TLS");

    // The store is created in AWS (not watched): found at the next look, the ALB is built with it.
    let arn = f.env.trust_store(&store);
    eventually("hostname", 90, || f.hostname(&ns, "web")).await;
    let (lbs, _) = f.stack_arns(&stack).await;
    assert_eq!(listener_mtls(&f, &lbs[0]).await, ("verify".into(), Some(arn.clone()), Some(false)));
    f.settled(&ctl, &ns, "web", "the ALB with mutual TLS").await;
    let mark = f.emu.mark().await;
    f.settled(&ctl, &ns, "web", "a resync").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "no write without a change");

    // Passthrough: one ModifyListener, the trust store no longer attached.
    let mark = f.emu.mark().await;
    replace(with_mtls(Some(r#"[{"port": 443, "mode": "passthrough"}]"#.into()))).await;
    eventually("passthrough", 60, || async {
        (listener_mtls(&f, &lbs[0]).await == ("passthrough".into(), None, None)).then_some(())
    })
    .await;
    f.settled(&ctl, &ns, "web", "passthrough").await;
    assert_eq!(f.writes_since(mark, &ctl).await, ["ModifyListener"]);

    // The annotation removed: left as it is (ALBC's default); mode off turns it off.
    let mark = f.emu.mark().await;
    replace(with_mtls(None)).await;
    f.settled(&ctl, &ns, "web", "the annotation removed").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "no annotation leaves the listener's as it is");
    assert_eq!(listener_mtls(&f, &lbs[0]).await.0, "passthrough");
    replace(with_mtls(Some(r#"[{"port": 443, "mode": "off"}]"#.into()))).await;
    eventually("off", 60, || async { (listener_mtls(&f, &lbs[0]).await.0 == "off").then_some(()) }).await;

    f.ingresses(&ns).delete("web", &DeleteParams::default()).await.unwrap();
    eventually("ALB deleted", 120, || async { f.stack_arns(&stack).await.0.is_empty().then_some(()) }).await;
    drop(ctl);
    kube_util::delete_namespace(&f.client, &ns).await;
}
