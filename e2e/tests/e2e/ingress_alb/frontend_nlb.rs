//! `enable-frontend-nlb`: an NLB in front of the group's ALB, each NLB listener forwarding to a
//! target group of type `alb` whose one target is the ALB on its listener port (the emulator
//! refuses an ALB without a listener there, as AWS documents). The Ingress status lists the ALB,
//! then the NLB; a resync writes nothing; dropping the annotation deletes the NLB and its target
//! groups and keeps the ALB; deleting the Ingress deletes everything, the NLB first.

use super::*;

/// The stack's load balancers by type, and its target groups of type `alb` with their targets;
/// `None` while the stack changes under the look (a resource listed by its tags was deleted before
/// it was described), so waiting callers look again.
async fn parts(f: &Fixture, stack: &str) -> Option<(BTreeMap<String, String>, BTreeMap<String, BTreeSet<String>>)> {
    let (lbs, tgs) = f.stack_arns(stack).await;
    let mut by_type = BTreeMap::new();
    if !lbs.is_empty() {
        let out = f.elb.describe_load_balancers().set_load_balancer_arns(Some(lbs)).send().await.ok()?;
        for lb in out.load_balancers() {
            let kind = lb.r#type().map(|t| t.as_str().to_string()).unwrap_or_default();
            by_type.insert(kind, lb.load_balancer_arn().unwrap_or_default().to_string());
        }
    }
    let mut alb_groups = BTreeMap::new();
    if !tgs.is_empty() {
        let out = f.elb.describe_target_groups().set_target_group_arns(Some(tgs)).send().await.ok()?;
        for tg in out.target_groups().iter().filter(|t| t.target_type().map(|x| x.as_str()) == Some("alb")) {
            let arn = tg.target_group_arn().unwrap_or_default().to_string();
            let targets = aws::try_registered(&f.elb, &arn).await.ok()?;
            alb_groups.insert(arn, targets);
        }
    }
    Some((by_type, alb_groups))
}

async fn hostnames(f: &Fixture, ns: &str) -> Vec<String> {
    let Ok(Some(i)) = f.ingresses(ns).get_opt("web").await else { return vec![] };
    let list = i.status.and_then(|s| s.load_balancer).and_then(|l| l.ingress).unwrap_or_default();
    list.into_iter().filter_map(|x| x.hostname).collect()
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn frontend_nlb_fronts_the_alb_and_leaves_with_it() {
    let _serial = SERIAL.lock().await;
    let Some(f) = setup("ingress_alb_frontend_nlb").await else { return };
    let ns = ns_name("ing_fenlb");
    f.namespace_with_backends(&ns, &[("svc-a", "a")]).await;
    let ctl = ControllerProc::start(&f.env, &ns, "lbc-e2e-ing-fenlb", &["--enable-service-controller=false"]);
    let stack = format!("{ns}/web");
    let annotations = [
        ("enable-frontend-nlb", "true"),
        ("listen-ports", r#"[{"HTTP":80},{"HTTP":8080}]"#),
        ("frontend-nlb-listener-port-mapping", "80=80,9090=8080"),
        ("frontend-nlb-scheme", "internet-facing"),
        ("frontend-nlb-healthcheck-path", "/healthz"),
        ("frontend-nlb-tags", "tier=edge"),
    ];
    let ing = ingress("web", vec![path("/a", "svc-a")], &annotations);
    f.ingresses(&ns).create(&PostParams::default(), &ing).await.expect("create ingress");

    let names = eventually("the ALB's and the NLB's hostnames", 120, || async {
        let h = hostnames(&f, &ns).await;
        (h.len() == 2).then_some(h)
    })
    .await;
    let (lbs, groups) = eventually("the ALB registered in both frontend target groups", 60, || async {
        let (lbs, groups) = parts(&f, &stack).await?;
        (lbs.len() == 2 && groups.len() == 2 && groups.values().all(|t| t.len() == 1)).then_some((lbs, groups))
    })
    .await;
    let (alb, nlb) = (&lbs["application"], &lbs["network"]);
    let described =
        f.elb.describe_load_balancers().load_balancer_arns(alb).load_balancer_arns(nlb).send().await.unwrap();
    let dns = |arn: &str| {
        let lb = described.load_balancers().iter().find(|l| l.load_balancer_arn() == Some(arn)).unwrap();
        (
            lb.dns_name().unwrap_or_default().to_string(),
            lb.load_balancer_name().unwrap_or_default().to_string(),
            lb.scheme().map(|s| s.as_str().to_string()),
        )
    };
    let (alb_dns, alb_name, _) = dns(alb);
    let (nlb_dns, nlb_name, nlb_scheme) = dns(nlb);
    assert_eq!(names, [alb_dns, nlb_dns], "status: the ALB, then the NLB");
    assert_eq!(nlb_name, format!("{}-nlb", &alb_name[..alb_name.len().min(28)]));
    assert_eq!(nlb_scheme.as_deref(), Some("internet-facing"));
    let targets: BTreeSet<String> = groups.values().flatten().cloned().collect();
    assert_eq!(targets, BTreeSet::from([format!("{alb}:80"), format!("{alb}:8080")]), "the ALB on each mapped port");
    let listeners = f.elb.describe_listeners().load_balancer_arn(nlb).send().await.unwrap();
    let mut ports: Vec<(i32, String)> = listeners
        .listeners()
        .iter()
        .map(|l| (l.port().unwrap_or_default(), l.protocol().map(|p| p.as_str().to_string()).unwrap_or_default()))
        .collect();
    ports.sort();
    assert_eq!(ports, [(80, "TCP".to_string()), (9090, "TCP".to_string())]);
    let tg_arns: Vec<String> = groups.keys().cloned().collect();
    let described = f.elb.describe_target_groups().set_target_group_arns(Some(tg_arns.clone())).send().await.unwrap();
    for tg in described.target_groups() {
        assert_eq!(tg.health_check_path(), Some("/healthz"), "{tg:?}");
        assert_eq!(tg.protocol().map(|p| p.as_str()), Some("TCP"));
    }
    let tags = f.elb.describe_tags().resource_arns(nlb).send().await.unwrap();
    let tags: BTreeMap<String, String> = tags.tag_descriptions()[0]
        .tags()
        .iter()
        .map(|t| (t.key().unwrap_or_default().to_string(), t.value().unwrap_or_default().to_string()))
        .collect();
    assert_eq!(tags.get("ingress.k8s.aws/resource").map(String::as_str), Some("FrontendNlb"));
    assert_eq!(tags.get("tier").map(String::as_str), Some("edge"));

    // Steady state: a resync writes nothing.
    let tg_a = f.target_group_of_service(&f.stack_arns(&stack).await.1, &ns, "svc-a").await;
    f.deployed_and_quiet(&ctl, &ns, "web", &tg_a, 2).await;

    // Without the annotation: the NLB and its target groups go, the ALB stays.
    let patch = json!({"metadata": {"annotations": {format!("{ALB}/enable-frontend-nlb"): null}}});
    f.ingresses(&ns).patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    eventually("the NLB gone, the ALB kept", 90, || async {
        let (lbs, groups) = parts(&f, &stack).await?;
        (lbs.len() == 1 && lbs.contains_key("application") && groups.is_empty()).then_some(())
    })
    .await;
    eventually("the ALB's hostname alone", 60, || async { (hostnames(&f, &ns).await.len() == 1).then_some(()) }).await;

    // Back on, then the Ingress deleted: nothing of the stack is left.
    let patch = json!({"metadata": {"annotations": {format!("{ALB}/enable-frontend-nlb"): "true"}}});
    f.ingresses(&ns).patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    eventually("the NLB again", 90, || async { (parts(&f, &stack).await?.0.len() == 2).then_some(()) }).await;
    f.ingresses(&ns).delete("web", &DeleteParams::default()).await.expect("delete ingress");
    eventually("Ingress gone", 120, || async { f.ingresses(&ns).get_opt("web").await.ok()?.is_none().then_some(()) })
        .await;
    assert_eq!(f.stack_arns(&stack).await, (vec![], vec![]));
    drop(ctl);
    kube_util::delete_namespace(&f.client, &ns).await;
}
