//! IngressClassParams fields the controller honours or refuses, never ignores (issues 17, 33):
//! `spec.subnets.tags` chooses the ALB's subnets; `spec.ipamConfiguration` sets the ALB's IPv4
//! IPAM pool (ModifyIpPools) over the Ingress's `ipam-ipv4-pool-id`, and removing it removes the
//! pool; `customer-owned-ipv4-pool` goes into CreateLoadBalancer.

use super::*;
use k8s_openapi::api::networking::v1::IngressClassParametersReference;
use lbc_aws::net::Networking;
use lbc_model::crd::IngressClassParams;
use lbc_model::lb::Tags;

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn params_subnet_tags_choose_the_subnets_and_ipam_configuration_sets_the_pool() {
    let _serial = SERIAL.lock().await;
    let Some(f) = setup("ingress_alb_params").await else { return };
    let ns = ns_name("ing_params");
    let class = ns.clone();
    f.namespace_with_backends(&ns, &[("svc-a", "a")]).await;

    // Two public subnets carry a tag of this test only; role-tag discovery for the default
    // (internal) scheme would pick the private subnets instead, so the test can tell.
    let net = aws::networking(&f.env).await;
    let public: Vec<String> = f.env.get("LBC_PUBLIC_SUBNET_IDS").split(',').map(str::to_string).collect();
    let mut chosen: Vec<String> = public.iter().take(2).cloned().collect();
    chosen.sort();
    assert_eq!(chosen.len(), 2, "the seed has two public subnets at least: {public:?}");
    let tag_key = "lbc-e2e-tier".to_string();
    let tags: Tags = [(tag_key.clone(), class.clone())].into();
    net.create_tags(&chosen, &tags).await.expect("tag the chosen subnets");

    let params_api: Api<IngressClassParams> = Api::all(f.client.clone());
    let params: IngressClassParams = serde_json::from_value(json!({
        "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "IngressClassParams",
        "metadata": {"name": class},
        "spec": {"subnets": {"tags": {tag_key.clone(): [class.clone()]}}},
    }))
    .expect("params");
    params_api.create(&PostParams::default(), &params).await.expect("create IngressClassParams");
    let classes: Api<IngressClass> = Api::all(f.client.clone());
    let ic = IngressClass {
        metadata: ObjectMeta { name: Some(class.clone()), ..Default::default() },
        spec: Some(IngressClassSpec {
            controller: Some("ingress.k8s.aws/alb".into()),
            parameters: Some(IngressClassParametersReference {
                api_group: Some("elbv2.k8s.aws".into()),
                kind: "IngressClassParams".into(),
                name: class.clone(),
                ..Default::default()
            }),
        }),
    };
    classes.create(&PostParams::default(), &ic).await.expect("create IngressClass");

    let ctl = ControllerProc::start(&f.env, &ns, "lbc-e2e-ing-params", &["--enable-service-controller=false"]);
    let pools = [("customer-owned-ipv4-pool", "ipv4pool-coip-0e2e"), ("ipam-ipv4-pool-id", "ipam-pool-0ann")];
    let mut ing = ingress("web", vec![path("/a", "svc-a")], &pools);
    ing.metadata.annotations.as_mut().expect("annotations").remove("kubernetes.io/ingress.class");
    ing.spec.as_mut().expect("spec").ingress_class_name = Some(class.clone());
    f.ingresses(&ns).create(&PostParams::default(), &ing).await.expect("create ingress");

    eventually("status.loadBalancer hostname", 90, || f.hostname(&ns, "web")).await;
    let (lbs, tgs) = f.stack_arns(&format!("{ns}/web")).await;
    assert_eq!((lbs.len(), tgs.len()), (1, 1), "one ALB, one target group: {lbs:?} {tgs:?}");
    // Targets follow pods whatever the group's state: wait for them before counting writes.
    let want: BTreeSet<String> = f.env.pod_ips(&ns, "a").into_iter().map(|ip| format!("{ip}:8080")).collect();
    eventually("pods of a registered", 60, || async { (aws::registered(&f.elb, &tgs[0]).await == want).then_some(()) })
        .await;
    let out = f.elb.describe_load_balancers().load_balancer_arns(&lbs[0]).send().await.expect("describe");
    let mut subnets: Vec<String> =
        out.load_balancers()[0].availability_zones().iter().filter_map(|z| z.subnet_id().map(str::to_string)).collect();
    subnets.sort();
    assert_eq!(subnets, chosen, "the ALB is in exactly the subnets tagged {tag_key}={class}");

    // Created with the Ingress's pools (the customer-owned one only ever at creation).
    let described = || async {
        let out = f.elb.describe_load_balancers().load_balancer_arns(&lbs[0]).send().await.expect("describe");
        let lb = out.load_balancers()[0].clone();
        (
            lb.customer_owned_ipv4_pool().map(str::to_string),
            lb.ipam_pools().and_then(|p| p.ipv4_ipam_pool_id()).map(str::to_string),
        )
    };
    assert_eq!(described().await, (Some("ipv4pool-coip-0e2e".into()), Some("ipam-pool-0ann".into())));

    // The class's ipamConfiguration wins over the annotation: one ModifyIpPools, nothing else.
    let mark = f.emu.mark().await;
    let patch = json!({"spec": {"ipamConfiguration": {"ipv4IPAMPoolId": "ipam-pool-0e2e"}}});
    params_api.patch(&class, &PatchParams::default(), &Patch::Merge(patch)).await.expect("patch params");
    eventually("the class's IPAM pool on the ALB", 60, || async {
        (described().await.1.as_deref() == Some("ipam-pool-0e2e")).then_some(())
    })
    .await;
    f.settled(&ctl, &ns, "web", "the class's pool set").await;
    assert_eq!(f.writes_since(mark, &ctl).await, ["ModifyIpPools"], "only the pool changed");

    // The annotation dropped: the class's pool still wins, so nothing is written.
    let mark = f.emu.mark().await;
    let patch = json!({"metadata": {"annotations": {format!("{ALB}/ipam-ipv4-pool-id"): null}}});
    f.ingresses(&ns).patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.expect("drop the annotation");
    f.settled(&ctl, &ns, "web", "the annotation dropped").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "the class's pool still wins");
    assert_eq!(described().await.1.as_deref(), Some("ipam-pool-0e2e"));

    // The class's pool removed too: one ModifyIpPools releases it.
    let mark = f.emu.mark().await;
    let patch = json!({"spec": {"ipamConfiguration": null}});
    params_api.patch(&class, &PatchParams::default(), &Patch::Merge(patch)).await.expect("patch params");
    eventually("no IPAM pool on the ALB", 60, || async { described().await.1.is_none().then_some(()) }).await;
    f.settled(&ctl, &ns, "web", "the pool removed").await;
    assert_eq!(f.writes_since(mark, &ctl).await, ["ModifyIpPools"], "only the pool changed");
    assert_eq!(described().await.0.as_deref(), Some("ipv4pool-coip-0e2e"), "the customer-owned pool stays");

    // The Ingress is deleted and everything of ours goes.
    f.ingresses(&ns).delete("web", &DeleteParams::default()).await.expect("delete ingress");
    eventually("Ingress gone", 120, || async { f.ingresses(&ns).get_opt("web").await.ok()?.is_none().then_some(()) })
        .await;
    let (lbs, tgs) = f.stack_arns(&format!("{ns}/web")).await;
    assert!(lbs.is_empty() && tgs.is_empty(), "left behind: {lbs:?} {tgs:?}");
    drop(ctl);
    net.delete_tags(&chosen, std::slice::from_ref(&tag_key)).await.expect("untag the subnets");
    classes.delete(&class, &DeleteParams::default()).await.expect("delete IngressClass");
    params_api.delete(&class, &DeleteParams::default()).await.expect("delete IngressClassParams");
    kube_util::delete_namespace(&f.client, &ns).await;
}
