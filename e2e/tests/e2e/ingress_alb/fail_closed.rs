//! Protections the load balancer asks for: Shield Advanced and WAF Classic, applied against the
//! emulator's Shield and WAF Regional. A protection that cannot be applied fails closed: without an
//! active Shield Advanced subscription no ALB is built, an existing one is left exactly as it is
//! (ALBC builds it unprotected), and deleting the Ingress still cleans up.

use super::*;

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn shield_fails_closed_without_a_subscription_and_protects_with_one() {
    let _serial = SERIAL.lock().await;
    let Some(f) = setup("ingress_alb_fail_closed").await else { return };
    let ns = ns_name("ing_closed");
    f.namespace_with_backends(&ns, &[("svc-a", "a"), ("svc-b", "b")]).await;
    // The account-wide subscription is the emulator's: this module runs one test at a time.
    aws::shield_call(&f.env, "DeleteSubscription", json!({})).await;
    let ctl = ControllerProc::start(&f.env, &ns, "lbc-e2e-ing", &["--enable-service-controller=false"]);
    let stack = format!("{ns}/web");
    let held = || {
        let ns = ns.clone();
        let f = &f;
        async move {
            eventually("FailedBuildModel naming shield-advanced-protection", 60, || async {
                notes(f, &ns, "FailedBuildModel", "web")
                    .await
                    .into_iter()
                    .find(|n| n.contains(&format!("{ALB}/shield-advanced-protection")))
            })
            .await
        }
    };

    // New, not subscribed: no ALB at all.
    let mark = f.emu.mark().await;
    let ing = ingress("web", vec![path("/a", "svc-a")], &[("shield-advanced-protection", "true")]);
    f.ingresses(&ns).create(&PostParams::default(), &ing).await.expect("create ingress");
    let note = held().await;
    assert!(note.contains("INACTIVE") && note.contains("nothing changed in AWS"), "{note}");
    f.settled(&ctl, &ns, "web", "the FailedBuildModel Warning").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "no load balancer without its protection");
    assert_eq!(f.stack_arns(&stack).await, (vec![], vec![]));
    assert_eq!(f.hostname(&ns, "web").await, None);

    // Subscribed: deployed and protected by a protection named as ALBC names it (the controller
    // looks again on its own: subscribing happens outside the cluster). Poked by an edit here.
    aws::shield_call(&f.env, "CreateSubscription", json!({})).await;
    let set = |k: &str, v: Option<&str>| {
        let patch = json!({"metadata": {"annotations": {format!("{ALB}/{k}"): v}}});
        let api = f.ingresses(&ns);
        async move { api.patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap() }
    };
    set("group.order", Some("1")).await;
    eventually("hostname", 90, || f.hostname(&ns, "web")).await;
    let (lbs, tgs) = f.stack_arns(&stack).await;
    let protection = eventually("protected", 30, || aws::shield_protection_of(&f.env, &lbs[0])).await;
    assert_eq!(protection.1, "managed by aws-load-balancer-controller");
    let before = f.rules(&lbs[0]).await;
    eventually("svc-a's pods registered", 60, || async {
        (aws::registered(&f.elb, &tgs[0]).await.len() == 2).then_some(())
    })
    .await;

    // Existing, the subscription gone, a second path asked for: not applied, not one write.
    aws::shield_call(&f.env, "DeleteSubscription", json!({})).await;
    let mark = f.emu.mark().await;
    let mut changed =
        ingress("web", vec![path("/a", "svc-a"), path("/b", "svc-b")], &[("shield-advanced-protection", "true")]);
    let current = f.ingresses(&ns).get("web").await.unwrap();
    changed.metadata.resource_version = current.metadata.resource_version.clone();
    changed.metadata.finalizers = current.metadata.finalizers.clone();
    f.ingresses(&ns).replace("web", &PostParams::default(), &changed).await.expect("replace ingress");
    held().await;
    f.settled(&ctl, &ns, "web", "the shield-advanced-protection Warning").await;
    let (calls, _) = f.emu.calls(mark, None).await;
    assert_eq!(
        emulator::writes(&calls, &ctl.access_key),
        Vec::<String>::new(),
        "the ALB is left exactly as it was: {:#?}",
        emulator::write_details(&calls, &ctl.access_key)
    );
    assert_eq!(f.rules(&lbs[0]).await, before, "no rule for /b without its protection");

    // "false": our protection deleted (one write), the held path applied.
    aws::shield_call(&f.env, "CreateSubscription", json!({})).await;
    set("shield-advanced-protection", Some("false")).await;
    eventually("unprotected", 30, || async {
        aws::shield_protection_of(&f.env, &lbs[0]).await.is_none().then_some(())
    })
    .await;
    eventually("the /b rule", 60, || async { (f.rules(&lbs[0]).await.len() == 2).then_some(()) }).await;

    // Deleting the Ingress is never held: the ALB goes.
    f.ingresses(&ns).delete("web", &DeleteParams::default()).await.unwrap();
    eventually("Ingress gone", 120, || async { f.ingresses(&ns).get_opt("web").await.ok()?.is_none().then_some(()) })
        .await;
    eventually("ALB deleted", 60, || async { f.stack_arns(&stack).await.0.is_empty().then_some(()) }).await;
    drop(ctl);
    aws::shield_call(&f.env, "DeleteSubscription", json!({})).await;
    kube_util::delete_namespace(&f.client, &ns).await;
}

/// WAF Classic by `web-acl-id` (the older name) then `waf-acl-id`, left alone without the
/// annotation, removed by `none`: each change exactly one WAF Regional write, resyncs none.
#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn waf_classic_web_acl_follows_the_annotations() {
    let _serial = SERIAL.lock().await;
    let Some(f) = setup("ingress_alb_waf_classic").await else { return };
    let ns = ns_name("ing_wafc");
    f.namespace_with_backends(&ns, &[("svc-a", "a")]).await;
    let acl_a = aws::waf_classic_web_acl(&f.env, &unique("classic-a")).await;
    let acl_b = aws::waf_classic_web_acl(&f.env, &unique("classic-b")).await;
    let ctl = ControllerProc::start(&f.env, &ns, "lbc-e2e-ing", &["--enable-service-controller=false"]);
    let ing = ingress("web", vec![path("/a", "svc-a")], &[("web-acl-id", &acl_a)]);
    f.ingresses(&ns).create(&PostParams::default(), &ing).await.expect("create ingress");
    eventually("hostname", 90, || f.hostname(&ns, "web")).await;
    let (lbs, tgs) = f.stack_arns(&format!("{ns}/web")).await;
    let lb = lbs[0].clone();
    let acl_of = || aws::waf_classic_web_acl_of(&f.env, &lb);
    eventually("web ACL a associated", 30, || async {
        (acl_of().await.as_deref() == Some(acl_a.as_str())).then_some(())
    })
    .await;
    let want: BTreeSet<String> = f.env.pod_ips(&ns, "a").into_iter().map(|ip| format!("{ip}:8080")).collect();
    eventually("pods registered", 60, || async { (aws::registered(&f.elb, &tgs[0]).await == want).then_some(()) })
        .await;
    let mark = f.emu.mark().await;
    f.settled(&ctl, &ns, "web", "the pods registered").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "no write without a change");

    let set = |k: &str, v: Option<&str>| {
        let patch = json!({"metadata": {"annotations": {format!("{ALB}/{k}"): v}}});
        let api = f.ingresses(&ns);
        async move { api.patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap() }
    };
    // `waf-acl-id` wins over `web-acl-id`: replaced with one AssociateWebACL.
    let mark = f.emu.mark().await;
    set("waf-acl-id", Some(&acl_b)).await;
    eventually("web ACL b", 30, || async { (acl_of().await.as_deref() == Some(acl_b.as_str())).then_some(()) }).await;
    f.settled(&ctl, &ns, "web", "web ACL b associated").await;
    assert_eq!(f.writes_since(mark, &ctl).await, ["AssociateWebACL"], "one association change");

    // Both annotations removed at once: the association stays (ALBC: remove with `none`).
    let mark = f.emu.mark().await;
    let both =
        json!({"metadata": {"annotations": {format!("{ALB}/waf-acl-id"): null, format!("{ALB}/web-acl-id"): null}}});
    f.ingresses(&ns).patch("web", &PatchParams::default(), &Patch::Merge(both)).await.unwrap();
    f.settled(&ctl, &ns, "web", "the annotations removed").await;
    assert_eq!(acl_of().await.as_deref(), Some(acl_b.as_str()), "left alone without the annotation");
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new());

    // `none`: one DisassociateWebACL.
    let mark = f.emu.mark().await;
    set("waf-acl-id", Some("none")).await;
    eventually("web ACL removed", 30, || async { acl_of().await.is_none().then_some(()) }).await;
    f.settled(&ctl, &ns, "web", "web ACL removed").await;
    assert_eq!(f.writes_since(mark, &ctl).await, ["DisassociateWebACL"]);

    f.ingresses(&ns).delete("web", &DeleteParams::default()).await.unwrap();
    eventually("Ingress gone", 120, || async { f.ingresses(&ns).get_opt("web").await.ok()?.is_none().then_some(()) })
        .await;
    drop(ctl);
    kube_util::delete_namespace(&f.client, &ns).await;
}
