//! `target-control-port.<service>.<port>` (ALB target optimizer): the backend's target group is
//! created with the port (the emulator keeps it, `e2e/emulator/lb_extras_patches.py`), a resync
//! writes nothing, and a new port is a new target group (AWS cannot change it) that the rule moves
//! to before the old one is deleted.

use super::*;

/// The stack's target groups and their control ports; `None` while a group listed by its tags is
/// deleted before it could be described (the controller replacing the group between the two reads).
async fn control_ports(f: &Fixture, stack: &str) -> Option<BTreeMap<String, Option<i32>>> {
    let (_, tgs) = f.stack_arns(stack).await;
    if tgs.is_empty() {
        return Some(BTreeMap::new());
    }
    let out = match f.elb.describe_target_groups().set_target_group_arns(Some(tgs)).send().await {
        Ok(out) => out,
        Err(e) if e.as_service_error().is_some_and(|s| s.is_target_group_not_found_exception()) => return None,
        Err(e) => panic!("target groups: {e:?}"),
    };
    Some(
        out.target_groups()
            .iter()
            .map(|t| (t.target_group_arn().unwrap_or_default().to_string(), t.target_control_port()))
            .collect(),
    )
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn a_target_control_port_is_created_with_its_group_and_a_new_one_replaces_the_group() {
    let _serial = SERIAL.lock().await;
    let Some(f) = setup("ingress_alb_target_control").await else { return };
    let ns = ns_name("ing_tctl");
    f.namespace_with_backends(&ns, &[("svc-a", "a")]).await;
    let ctl = ControllerProc::start(&f.env, &ns, "lbc-e2e-ing-tctl", &["--enable-service-controller=false"]);
    let stack = format!("{ns}/web");
    let with = |port: &str| ingress("web", vec![path("/a", "svc-a")], &[("target-control-port.svc-a.80", port)]);

    f.ingresses(&ns).create(&PostParams::default(), &with("3000")).await.expect("create ingress");
    eventually("hostname", 90, || f.hostname(&ns, "web")).await;
    let first = control_ports(&f, &stack).await.expect("the stack's target groups, not changing");
    let [(old_arn, port)] = first.iter().collect::<Vec<_>>()[..] else { panic!("one target group: {first:?}") };
    assert_eq!(*port, Some(3000));
    f.deployed_and_quiet(&ctl, &ns, "web", old_arn, 2).await;

    // Another port: a new target group with it; the old one goes once nothing forwards to it.
    f.replace_ingress(&ns, with("3001")).await;
    let now = eventually("one target group, with port 3001", 90, || async {
        let now = control_ports(&f, &stack).await?;
        (now.len() == 1 && now.values().all(|p| *p == Some(3001))).then_some(now)
    })
    .await;
    let new_arn = now.keys().next().expect("the new group").clone();
    assert_ne!(&new_arn, old_arn);
    f.deployed_and_quiet(&ctl, &ns, "web", &new_arn, 2).await;

    f.ingresses(&ns).delete("web", &DeleteParams::default()).await.expect("delete ingress");
    eventually("Ingress gone", 120, || async { f.ingresses(&ns).get_opt("web").await.ok()?.is_none().then_some(()) })
        .await;
    assert_eq!(f.stack_arns(&stack).await, (vec![], vec![]));
    drop(ctl);
    kube_util::delete_namespace(&f.client, &ns).await;
}
