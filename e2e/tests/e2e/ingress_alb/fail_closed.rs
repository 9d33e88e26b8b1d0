//! Security annotations that cannot be applied fail closed (`lbc_model::annotations::refusals`):
//! no ALB is built without the protection asked for, an existing one is left exactly as it is, and
//! deleting the Ingress still cleans up.

use super::*;

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn a_protection_that_cannot_be_applied_holds_the_alb_as_it_is() {
    let _serial = SERIAL.lock().await;
    let Some(f) = setup("ingress_alb_fail_closed").await else { return };
    let ns = ns_name("ing_closed");
    f.namespace_with_backends(&ns, &[("svc-a", "a"), ("svc-b", "b")]).await;
    let ctl = ControllerProc::start(&f.env, &ns, "lbc-e2e-ing", &["--enable-service-controller=false"]);
    let stack = format!("{ns}/web");
    let held = |key: &'static str| {
        let ns = ns.clone();
        let f = &f;
        async move {
            eventually(&format!("FailedBuildModel naming {key}"), 60, || async {
                notes(f, &ns, "FailedBuildModel", "web").await.into_iter().find(|n| n.contains(&format!("{ALB}/{key}")))
            })
            .await
        }
    };

    // New: a WAF Classic ACL asked for, not supported: no ALB at all.
    let mark = f.emu.mark().await;
    let ing = ingress("web", vec![path("/a", "svc-a")], &[("waf-acl-id", "0123abcd-web-acl")]);
    f.ingresses(&ns).create(&PostParams::default(), &ing).await.expect("create ingress");
    let note = held("waf-acl-id").await;
    assert!(note.contains("nothing is created or changed in AWS") && note.contains("remove it"), "{note}");
    f.settled(&ctl, &ns, "web", "the FailedBuildModel Warning").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "no load balancer without its WAF ACL");
    assert_eq!(f.stack_arns(&stack).await, (vec![], vec![]));
    assert_eq!(f.hostname(&ns, "web").await, None);

    // Removed: deployed.
    let set = |k: &str, v: Option<&str>| {
        let patch = json!({"metadata": {"annotations": {format!("{ALB}/{k}"): v}}});
        let api = f.ingresses(&ns);
        async move { api.patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap() }
    };
    set("waf-acl-id", None).await;
    eventually("hostname", 90, || f.hostname(&ns, "web")).await;
    let (lbs, tgs) = f.stack_arns(&stack).await;
    let before = f.rules(&lbs[0]).await;
    assert_eq!(before.len(), 1, "{before:?}");
    // The binding's registration is part of the deployment: done before the mark below.
    eventually("svc-a's pods registered", 60, || async {
        (aws::registered(&f.elb, &tgs[0]).await.len() == 2).then_some(())
    })
    .await;

    // Existing: Shield Advanced asked for together with a second path. Neither is applied: the
    // rules stay as they were, not one write.
    let mark = f.emu.mark().await;
    let mut changed =
        ingress("web", vec![path("/a", "svc-a"), path("/b", "svc-b")], &[("shield-advanced-protection", "true")]);
    let current = f.ingresses(&ns).get("web").await.unwrap();
    changed.metadata.resource_version = current.metadata.resource_version.clone();
    changed.metadata.finalizers = current.metadata.finalizers.clone();
    f.ingresses(&ns).replace("web", &PostParams::default(), &changed).await.expect("replace ingress");
    held("shield-advanced-protection").await;
    f.settled(&ctl, &ns, "web", "the shield-advanced-protection Warning").await;
    let (calls, _) = f.emu.calls(mark, None).await;
    assert_eq!(
        emulator::writes(&calls, &ctl.access_key),
        Vec::<String>::new(),
        "the ALB is left exactly as it was: {:#?}",
        emulator::write_details(&calls, &ctl.access_key)
    );
    assert_eq!(f.rules(&lbs[0]).await, before, "no rule for /b without its protection");

    // Deleting the Ingress is never held: the ALB goes.
    f.ingresses(&ns).delete("web", &DeleteParams::default()).await.unwrap();
    eventually("Ingress gone", 120, || async { f.ingresses(&ns).get_opt("web").await.ok()?.is_none().then_some(()) })
        .await;
    eventually("ALB deleted", 60, || async { f.stack_arns(&stack).await.0.is_empty().then_some(()) }).await;
    drop(ctl);
    kube_util::delete_namespace(&f.client, &ns).await;
}
