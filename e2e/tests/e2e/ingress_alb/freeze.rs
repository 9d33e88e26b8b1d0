//! Issue 14 items 1 and 5 end to end: a two-namespace IngressGroup survives the deletion of its
//! IngressClass (frozen, then resumed with the same ALB), and a member of another namespace
//! cannot replace the group's ALB by setting `scheme`.

use super::*;
use k8s_openapi::api::networking::v1::IngressClassParametersReference;

/// An Ingress of `class` in IngressGroup `group`, without the legacy class annotation.
fn member(name: &str, p: HTTPIngressPath, group: &str, class: &str, scheme: Option<&str>) -> Ingress {
    let mut ing = ingress(name, vec![p], &[("group.name", group)]);
    let ann = ing.metadata.annotations.as_mut().expect("annotations");
    ann.remove("kubernetes.io/ingress.class");
    match scheme {
        Some(s) => ann.insert(format!("{ALB}/scheme"), s.to_string()),
        None => ann.remove(&format!("{ALB}/scheme")),
    };
    ing.spec.as_mut().expect("spec").ingress_class_name = Some(class.to_string());
    ing
}

fn ingress_class(name: &str) -> IngressClass {
    IngressClass {
        metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
        spec: Some(IngressClassSpec { controller: Some("ingress.k8s.aws/alb".into()), parameters: None }),
    }
}

/// Load balancer ARNs, target group ARNs and the hostname of every member, once all agree.
async fn healthy_group(
    f: &Fixture,
    group: &str,
    members: &[(&str, &str)],
    tgs: usize,
) -> (Vec<String>, Vec<String>, String) {
    let mut host = None;
    for (ns, name) in members {
        let h = eventually(&format!("hostname of {ns}/{name}"), 90, || f.hostname(ns, name)).await;
        assert!(host.as_ref().is_none_or(|x| *x == h), "one ALB for the group: {host:?} vs {h}");
        host = Some(h);
    }
    let (lbs, tgs) = eventually("the group's ALB and target groups", 60, || async {
        let (l, t) = f.stack_arns(group).await;
        (l.len() == 1 && t.len() == tgs).then_some((l, t))
    })
    .await;
    for tg in &tgs {
        eventually("pods registered", 60, || async { (aws::registered(&f.elb, tg).await.len() == 2).then_some(()) })
            .await;
    }
    (lbs, tgs, host.expect("members"))
}

async fn scheme_of(f: &Fixture, lb: &str) -> String {
    let out = f.elb.describe_load_balancers().load_balancer_arns(lb).send().await.expect("describe lb");
    out.load_balancers()[0].scheme().map(|s| s.as_str().to_string()).unwrap_or_default()
}

async fn tear_down(f: &Fixture, members: &[(&str, &str)], group: &str, class: &str) {
    for (ns, name) in members {
        let _ = f.ingresses(ns).delete(name, &DeleteParams::default()).await;
    }
    for (ns, name) in members {
        eventually(&format!("{ns}/{name} gone"), 120, || async {
            f.ingresses(ns).get_opt(name).await.ok()?.is_none().then_some(())
        })
        .await;
    }
    let (lbs, tgs) = f.stack_arns(group).await;
    assert!(lbs.is_empty() && tgs.is_empty(), "left behind: {lbs:?} {tgs:?}");
    let _ = Api::<IngressClass>::all(f.client.clone()).delete(class, &DeleteParams::default()).await;
    for (ns, _) in members {
        kube_util::delete_namespace(&f.client, ns).await;
    }
}

/// Two namespaces with a backend each (`svc-a`, `svc-b`), an IngressClass of ours named like
/// the group, and a controller watching every namespace.
async fn two_namespaces_and_a_class(f: &Fixture, test: &str) -> (String, String, String, ControllerProc) {
    let (ns1, ns2, group) = two_namespaces_and_a_class_alone(f, test).await;
    let ctl = group_controller(f, test, &[]);
    (ns1, ns2, group, ctl)
}

/// [`two_namespaces_and_a_class`] without the controller.
async fn two_namespaces_and_a_class_alone(f: &Fixture, test: &str) -> (String, String, String) {
    let (ns1, ns2) = (ns_name(&format!("{test}_one")), ns_name(&format!("{test}_two")));
    f.namespace_with_backends(&ns1, &[("svc-a", "a")]).await;
    f.namespace_with_backends(&ns2, &[("svc-b", "b")]).await;
    let group = unique(&format!("e2e-{test}"));
    let classes: Api<IngressClass> = Api::all(f.client.clone());
    classes.create(&PostParams::default(), &ingress_class(&group)).await.expect("create IngressClass");
    (ns1, ns2, group)
}

/// A controller for every namespace, Ingresses only, with `extra` flags.
fn group_controller(f: &Fixture, test: &str, extra: &[&str]) -> ControllerProc {
    let lease = format!("lbc-e2e-{test}");
    let flags: Vec<&str> = ["--enable-service-controller=false"].into_iter().chain(extra.iter().copied()).collect();
    ControllerProc::start(&f.env, "", &lease, &flags)
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn deleting_the_class_of_a_two_namespace_group_freezes_it_and_recreating_it_resumes() {
    let _serial = SERIAL.lock().await;
    let Some(f) = setup("ingress_alb_freeze").await else { return };
    let (ns1, ns2, group, ctl) = two_namespaces_and_a_class(&f, "freeze").await;
    let classes: Api<IngressClass> = Api::all(f.client.clone());
    let scheme = Some("internet-facing");
    let one = member("one", path("/one", "svc-a"), &group, &group, scheme);
    let two = member("two", path("/two", "svc-b"), &group, &group, scheme);
    f.ingresses(&ns1).create(&PostParams::default(), &one).await.expect("create one");
    f.ingresses(&ns2).create(&PostParams::default(), &two).await.expect("create two");
    let members = [(ns1.as_str(), "one"), (ns2.as_str(), "two")];
    let (lbs, tgs, host) = healthy_group(&f, &group, &members, 2).await;

    // The class goes (an ArgoCD prune): both members are warned, and that proves the pass ran.
    let mark = f.emu.mark().await;
    classes.delete(&group, &DeleteParams::default()).await.expect("delete IngressClass");
    for (ns, name) in members {
        let note = eventually(&format!("GroupFrozen on {ns}/{name}"), 60, || async {
            notes(&f, ns, "GroupFrozen", name).await.into_iter().next()
        })
        .await;
        for want in [format!("IngressClass {group} does not exist"), format!("IngressGroup {group} is frozen")] {
            assert!(note.contains(&want), "{want}: {note}");
        }
    }
    eprintln!("frozen: Warnings on both members");
    // The pass that warned, and one more after it (poked): no AWS write at all.
    f.settled(&ctl, ns1.as_str(), "one", "the GroupFrozen Warnings").await;
    let written = f.writes_since(mark, &ctl).await;
    assert_eq!(written, Vec::<String>::new(), "a frozen group is not written to");
    let written = f.writes_since(mark, &ctl).await;
    assert!(
        !written.iter().any(|w| ["DeleteLoadBalancer", "DeleteTargetGroup", "DeregisterTargets"].contains(&w.as_str())),
        "{written:?}"
    );
    assert_eq!(written, Vec::<String>::new(), "no write while frozen");
    eprintln!("frozen: {}", summarize(&f.calls_since(mark, &ctl).await));
    assert_eq!(f.stack_arns(&group).await, (lbs.clone(), tgs.clone()), "the ALB and target groups stay");
    for (ns, name) in members {
        assert_eq!(f.hostname(ns, name).await.as_deref(), Some(host.as_str()), "status kept on {ns}/{name}");
        let ing = f.ingresses(ns).get(name).await.unwrap();
        assert!(ing.metadata.finalizers.unwrap_or_default().contains(&format!("group.ingress.k8s.aws/{group}")));
    }
    for tg in &tgs {
        assert_eq!(aws::registered(&f.elb, tg).await.len(), 2, "targets stay registered in {tg}");
    }

    // Back, but naming IngressClassParams that do not exist: still frozen, the class is warned too.
    let mut with_params = ingress_class(&group);
    with_params.spec.as_mut().expect("spec").parameters = Some(IngressClassParametersReference {
        api_group: Some("elbv2.k8s.aws".into()),
        kind: "IngressClassParams".into(),
        name: format!("{group}-missing"),
        ..Default::default()
    });
    classes.create(&PostParams::default(), &with_params).await.expect("create IngressClass with params");
    let note = eventually("GroupFrozen on the IngressClass", 60, || async {
        notes(&f, "default", "GroupFrozen", &group).await.into_iter().next()
    })
    .await;
    let want = format!("IngressClassParams {group}-missing of IngressClass {group} does not exist");
    assert!(note.contains(&want), "{want}: {note}");
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "still frozen, still no write");
    classes.delete(&group, &DeleteParams::default()).await.expect("delete IngressClass");
    eventually("IngressClass gone", 30, || async { classes.get_opt(&group).await.ok()?.is_none().then_some(()) }).await;

    // The class is back as it was (the Helm upgrade finishes): the group resumes, nothing to change.
    let mark = f.emu.mark().await;
    classes.create(&PostParams::default(), &ingress_class(&group)).await.expect("recreate IngressClass");
    for (ns, name) in members {
        eventually(&format!("GroupResumed on {ns}/{name}"), 60, || async {
            notes(&f, ns, "GroupResumed", name).await.into_iter().next()
        })
        .await;
    }
    eprintln!("resumed: {}", summarize(&f.calls_since(mark, &ctl).await));
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "resuming writes nothing");
    assert_eq!(f.stack_arns(&group).await, (lbs, tgs), "same ARNs");
    for (ns, name) in members {
        assert_eq!(f.hostname(ns, name).await.as_deref(), Some(host.as_str()), "hostname kept on {ns}/{name}");
    }
    tear_down(&f, &members, &group, &group).await;
    drop(ctl);
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn a_member_of_another_namespace_cannot_replace_the_shared_alb() {
    let _serial = SERIAL.lock().await;
    let Some(f) = setup("ingress_alb_no_replace").await else { return };
    let (ns1, ns2, group, ctl) = two_namespaces_and_a_class(&f, "noreplace").await;
    // The first team leaves the scheme unset: an internal ALB.
    let base = member("base", path("/base", "svc-a"), &group, &group, None);
    f.ingresses(&ns1).create(&PostParams::default(), &base).await.expect("create base");
    let (lbs, tgs, host) = healthy_group(&f, &group, &[(ns1.as_str(), "base")], 1).await;
    assert_eq!(scheme_of(&f, &lbs[0]).await, "internal");

    // Another namespace joins asking for internet-facing: refused, nothing written.
    let mark = f.emu.mark().await;
    let intruder = member("intruder", path("/intruder", "svc-b"), &group, &group, Some("internet-facing"));
    f.ingresses(&ns2).create(&PostParams::default(), &intruder).await.expect("create intruder");
    for (ns, name) in [(&ns1, "base"), (&ns2, "intruder")] {
        let note = eventually(&format!("ReplacementRefused on {ns}/{name}"), 60, || async {
            notes(&f, ns, "ReplacementRefused", name).await.into_iter().next()
        })
        .await;
        for want in [
            "alb.ingress.kubernetes.io/scheme internet-facing".to_string(),
            format!("Ingress {ns1}/base of another namespace leaves it unset"),
            format!("remove alb.ingress.kubernetes.io/scheme from {ns2}/intruder"),
        ] {
            assert!(note.contains(&want), "{want}: {note}");
        }
    }
    f.settled(&ctl, &ns2, "intruder", "the ReplacementRefused Warnings").await;
    eprintln!("refused: {}", summarize(&f.calls_since(mark, &ctl).await));
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "no replacement, no write");
    assert_eq!(f.stack_arns(&group).await, (lbs.clone(), tgs), "same ALB, no new target group");
    assert_eq!(scheme_of(&f, &lbs[0]).await, "internal");
    assert_eq!(f.hostname(&ns1, "base").await.as_deref(), Some(host.as_str()));

    // The intruder drops the setting: it joins the same internal ALB.
    let mark = f.emu.mark().await;
    let patch = json!({"metadata": {"annotations": {format!("{ALB}/scheme"): null}}});
    f.ingresses(&ns2).patch("intruder", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    let members = [(ns1.as_str(), "base"), (ns2.as_str(), "intruder")];
    let (lbs_after, _, host_after) = healthy_group(&f, &group, &members, 2).await;
    assert_eq!((lbs_after, host_after), (lbs.clone(), host), "joined the same ALB");
    let written = f.writes_since(mark, &ctl).await;
    assert!(!written.iter().any(|w| w == "DeleteLoadBalancer" || w == "CreateLoadBalancer"), "{written:?}");
    assert_eq!(scheme_of(&f, &lbs[0]).await, "internal");
    tear_down(&f, &members, &group, &group).await;
    drop(ctl);
}

/// Issue 32 (IngressGroups): a tenant switching its own member Ingress to a class that does not
/// exist used to freeze the whole group, so the other team's changes stopped deploying and its
/// deletion waited. Now the tenant's Ingress leaves the group (its rule goes, a Warning says why)
/// and the other member keeps deploying. The tenant acts through its own ServiceAccount token.
#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn a_member_switching_itself_to_a_missing_class_leaves_without_freezing_the_others() {
    let _serial = SERIAL.lock().await;
    let Some(f) = setup("ingress_alb_self_switch").await else { return };
    let (ns1, ns2, group, ctl) = two_namespaces_and_a_class(&f, "selfswitch").await;
    let tenant = lbc_e2e::tenant::Tenant::join(&f.client, &f.env, &ns2).await;
    let theirs: Api<Ingress> = Api::namespaced(tenant.client.clone(), &ns2);
    let scheme = Some("internet-facing");
    let one = member("one", path("/one", "svc-a"), &group, &group, scheme);
    f.ingresses(&ns1).create(&PostParams::default(), &one).await.expect("create one");
    let two = member("two", path("/two", "svc-b"), &group, &group, scheme);
    theirs.create(&PostParams::default(), &two).await.expect("the tenant creates its member");
    let members = [(ns1.as_str(), "one"), (ns2.as_str(), "two")];
    let (lbs, _, _) = healthy_group(&f, &group, &members, 2).await;
    eventually("two rules", 60, || async { (f.rules(&lbs[0]).await.len() == 2).then_some(()) }).await;

    // The tenant names a class that does not exist on its own Ingress.
    let mut switched = theirs.get("two").await.expect("the tenant reads its Ingress");
    switched.spec.as_mut().expect("spec").ingress_class_name = Some(format!("{group}-missing"));
    theirs.replace("two", &PostParams::default(), &switched).await.expect("the tenant switches its class");
    let note = eventually("InvalidIngressClass on the tenant's Ingress", 60, || async {
        notes(&f, &ns2, "InvalidIngressClass", "two").await.into_iter().next()
    })
    .await;
    assert!(note.contains("own change") && note.contains(&format!("IngressClass {group}-missing")), "{note}");
    let left = eventually("the tenant's rule gone", 60, || async {
        let r = f.rules(&lbs[0]).await;
        (r.len() == 1).then_some(r)
    })
    .await;
    assert!(left[0].paths.contains(&"/one".to_string()), "{left:?}");
    assert!(notes(&f, &ns1, "GroupFrozen", "one").await.is_empty(), "the other member is not frozen");

    // The other team's change still deploys.
    let more = member("one", path("/one-more", "svc-a"), &group, &group, scheme);
    f.replace_ingress(&ns1, more).await;
    eventually("the other member's new path deployed", 60, || async {
        f.rules(&lbs[0]).await.iter().any(|r| r.paths.contains(&"/one-more".to_string())).then_some(())
    })
    .await;
    tear_down(&f, &members, &group, &group).await;
    drop(ctl);
}

/// Issue 32 (IngressGroups), strict mode: a tenant joins another namespace's group with
/// `group.order: -1000`, a catch-all path and a group-wide attribute, through its own
/// ServiceAccount token. The policy grants the group to the owner's namespace only: the tenant's
/// Ingress is refused (TenancyRefused), as is one selected by the legacy class annotation, and
/// nothing at all is written to AWS: not the owner's rules, not its load balancer, not a target
/// group or load balancer for the tenant.
#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn strict_mode_keeps_a_tenant_out_of_another_namespaces_group() {
    let _serial = SERIAL.lock().await;
    let Some(f) = setup("ingress_alb_strict_group").await else { return };
    let (ns1, ns2, group) = two_namespaces_and_a_class_alone(&f, "strictgrp").await;
    let policy = lbc_e2e::tenant::PolicyFile::new(
        &ns1,
        &serde_json::json!({"ingressGroups": [{"group": &group, "namespaces": [&ns1], "owner": &ns1}]}),
    );
    let ctl = group_controller(&f, "strictgrp", &["--tenancy-mode=strict", &policy.flag()]);
    let scheme = Some("internet-facing");
    let one = member("one", path("/one", "svc-a"), &group, &group, scheme);
    f.ingresses(&ns1).create(&PostParams::default(), &one).await.expect("create one");
    let (lbs, tgs, _) = healthy_group(&f, &group, &[(ns1.as_str(), "one")], 1).await;
    let before = eventually("the owner's rule", 60, || async {
        let r = f.rules(&lbs[0]).await;
        (r.len() == 1).then_some(r)
    })
    .await;
    f.settled(&ctl, &ns1, "one", "the owner's group deployed").await;

    let tenant = lbc_e2e::tenant::Tenant::join(&f.client, &f.env, &ns2).await;
    let mark = f.emu.mark().await;
    let mut hijack = member("hijack", path("/", "svc-b"), &group, &group, scheme);
    let ann = hijack.metadata.annotations.as_mut().expect("annotations");
    ann.insert(format!("{ALB}/group.order"), "-1000".into());
    ann.insert(format!("{ALB}/load-balancer-attributes"), "idle_timeout.timeout_seconds=1".into());
    let theirs: Api<Ingress> = Api::namespaced(tenant.client.clone(), &ns2);
    theirs.create(&PostParams::default(), &hijack).await.expect("the tenant creates its Ingress");
    // And one selected by the legacy annotation, which would bypass the class's IngressClassParams.
    let legacy = ingress("legacy", vec![path("/legacy", "svc-b")], &[]);
    theirs.create(&PostParams::default(), &legacy).await.expect("the tenant creates its legacy Ingress");
    let note = eventually("TenancyRefused on the tenant's Ingress", 60, || async {
        notes(&f, &ns2, "TenancyRefused", "hijack").await.into_iter().next()
    })
    .await;
    assert!(note.contains(&group) && note.contains("ingressGroups"), "{note}");
    let note = eventually("TenancyRefused on the legacy Ingress", 60, || async {
        notes(&f, &ns2, "TenancyRefused", "legacy").await.into_iter().next()
    })
    .await;
    assert!(note.contains("kubernetes.io/ingress.class") && note.contains("spec.ingressClassName"), "{note}");
    f.settled(&ctl, &ns1, "one", "the tenant's refusal").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "no write at all for the tenant's Ingress");
    assert_eq!(f.rules(&lbs[0]).await, before, "the owner's rules as they were");
    assert_eq!(f.stack_arns(&group).await, (lbs, tgs), "no target group for the tenant");
    let theirs = f.ingresses(&ns2).get("hijack").await.expect("the tenant's Ingress");
    assert!(theirs.metadata.finalizers.unwrap_or_default().is_empty(), "not taken into the group");
    for name in ["hijack", "legacy"] {
        f.ingresses(&ns2).delete(name, &DeleteParams::default()).await.expect("delete the tenant's Ingress");
    }
    tear_down(&f, &[(ns1.as_str(), "one")], &group, &group).await;
    kube_util::delete_namespace(&f.client, &ns2).await;
    drop(ctl);
}
