//! Subnet discovery by reachability (ALBC's gate `SubnetDiscoveryByReachability`, on by default):
//! in a VPC where no subnet carries a role tag, an internet-facing NLB goes into the subnets whose
//! route table reaches an internet gateway and an internal one into the others; with the gate off
//! neither is built and the Warning says which tag is missing.

use super::*;

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn untagged_subnets_are_chosen_by_their_route_table() {
    let Some(f) = setup("svc_nlb_reachability", 1).await else { return };
    let vpc: serde_json::Value = serde_json::from_str(&f.env.python_script("untagged_vpc.py", &[&unique("reach")]))
        .expect("untagged_vpc.py JSON");
    let vpc_id = vpc["vpc_id"].as_str().expect("vpc_id").to_string();
    let ids = |kind: &str| -> BTreeSet<String> {
        vpc[kind].as_array().expect(kind).iter().map(|v| v.as_str().unwrap().to_string()).collect()
    };
    let vpc_flag = format!("--aws-vpc-id={vpc_id}");
    let ctl = f.controller(&[&vpc_flag]);
    let mark = f.emu.mark().await;
    for (name, scheme) in [("public", "internet-facing"), ("private", "internal")] {
        let svc = nlb_service(name, &[("aws-load-balancer-scheme", scheme)]);
        f.services().create(&PostParams::default(), &svc).await.expect("create service");
    }
    for (name, want) in [("public", ids("public")), ("private", ids("private"))] {
        eventually(&format!("{name} NLB hostname"), 90, || f.hostname(name)).await;
        let (lbs, _) = f.stack_arns(name).await;
        let lb = f.elb.describe_load_balancers().load_balancer_arns(&lbs[0]).send().await.expect("describe");
        let got: BTreeSet<String> = lb.load_balancers()[0]
            .availability_zones()
            .iter()
            .filter_map(|z| z.subnet_id().map(String::from))
            .collect();
        assert_eq!(got, want, "{name}: the {name} subnets of {vpc_id}");
    }
    let (calls, _) = f.emu.calls(mark, None).await;
    let reads = calls
        .iter()
        .filter(|c| c.operation == "DescribeRouteTables" && c.access_key.as_deref() == Some(&ctl.access_key));
    assert!(reads.count() >= 1, "the route tables were read");
    drop(ctl);

    // Gate off: tags only, so nothing is built; the Warning names the missing role tag.
    let off = f.controller(&[&vpc_flag, "--feature-gates=SubnetDiscoveryByReachability=false"]);
    let svc = nlb_service("tags-only", &[("aws-load-balancer-scheme", "internet-facing")]);
    f.services().create(&PostParams::default(), &svc).await.expect("create service");
    let note = eventually("FailedBuildModel event", 60, || async {
        f.warnings("FailedBuildModel").await.into_iter().find(|n| n.contains("kubernetes.io/role/elb"))
    })
    .await;
    assert!(note.contains("no kubernetes.io/role/elb tag"), "{note}");
    assert_eq!(f.stack_arns("tags-only").await, (vec![], vec![]));

    for name in ["public", "private", "tags-only"] {
        f.services().delete(name, &DeleteParams::default()).await.expect("delete service");
    }
    drop(off);
    let ctl = f.controller(&[&vpc_flag]);
    for name in ["public", "private", "tags-only"] {
        eventually(&format!("{name} gone"), 120, || async {
            f.services().get_opt(name).await.ok()?.is_none().then_some(())
        })
        .await;
    }
    drop(ctl);
    kube_util::delete_namespace(&f.client, &f.ns).await;
}
