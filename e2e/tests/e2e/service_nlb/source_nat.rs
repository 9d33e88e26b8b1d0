//! IPv6 source NAT of a dual-stack NLB (`aws-load-balancer-enable-prefix-for-ipv6-source-nat`,
//! `aws-load-balancer-source-nat-ipv6-prefixes`): created with the flag and one /80 per subnet
//! (`auto_assigned` left to AWS), a changed prefix is one SetSubnets, AWS's own pick is never
//! "corrected", and a prefix outside its subnet builds nothing and says why.

use super::*;

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn source_nat_prefixes_follow_the_annotations_on_a_dualstack_nlb() {
    let Some(f) = setup("svc_nlb_source_nat", 1).await else { return };
    let vpc: serde_json::Value =
        serde_json::from_str(&f.env.python_script("untagged_vpc.py", &[&unique("snat"), "--ipv6"]))
            .expect("untagged_vpc.py JSON");
    let vpc_id = vpc["vpc_id"].as_str().expect("vpc_id").to_string();
    // The prefixes go in the order of the subnet IDs (as ALBC's).
    let mut subnets: Vec<String> =
        vpc["private"].as_array().expect("private").iter().map(|v| v.as_str().unwrap().to_string()).collect();
    subnets.sort();
    let cidr = |id: &str| vpc["ipv6"][id].as_str().expect("a /64 per subnet").to_string();
    // The n-th /80 of a subnet's /64.
    let prefix = |id: &str, n: u128| {
        let block: ipnet::Ipv6Net = cidr(id).parse().expect("an IPv6 CIDR");
        let addr = std::net::Ipv6Addr::from(u128::from(block.network()) + (n << 48));
        ipnet::Ipv6Net::new(addr, 80).expect("a /80").to_string()
    };
    let ctl = f.controller(&[&format!("--aws-vpc-id={vpc_id}")]);

    let first = prefix(&subnets[0], 5);
    let nat = [
        ("aws-load-balancer-scheme", "internal"),
        ("aws-load-balancer-ip-address-type", "dualstack"),
        ("aws-load-balancer-subnets", &subnets.join(",")),
        ("aws-load-balancer-enable-prefix-for-ipv6-source-nat", "on"),
        ("aws-load-balancer-source-nat-ipv6-prefixes", &format!("{first},auto_assigned")),
    ];
    f.services().create(&PostParams::default(), &nlb_service("web", &nat)).await.expect("create service");
    eventually("status.loadBalancer hostname", 90, || f.hostname("web")).await;
    let (lbs, tgs) = f.stack_arns("web").await;
    let arn = lbs[0].clone();
    let described = || async {
        let d = f.elb.describe_load_balancers().load_balancer_arns(&arn).send().await.expect("describe");
        let lb = d.load_balancers()[0].clone();
        let zones: BTreeMap<String, Vec<String>> = lb
            .availability_zones()
            .iter()
            .map(|z| (z.subnet_id().unwrap_or_default().to_string(), z.source_nat_ipv6_prefixes().to_vec()))
            .collect();
        (lb.enable_prefix_for_ipv6_source_nat().map(|e| e.as_str().to_string()), zones)
    };
    let (flag, zones) = described().await;
    assert_eq!(flag.as_deref(), Some("on"));
    assert_eq!(zones[&subnets[0]], std::slice::from_ref(&first), "the given prefix");
    let picked = zones[&subnets[1]].first().expect("AWS picked a prefix for auto_assigned").clone();
    let (block, pick): (ipnet::Ipv6Net, ipnet::Ipv6Net) = (cidr(&subnets[1]).parse().unwrap(), picked.parse().unwrap());
    assert!(pick.prefix_len() == 80 && block.contains(&pick), "{picked} is a /80 of {block}");
    f.wait_registered(&tgs[0]).await;

    // In sync, AWS's pick included: no write.
    let mark = f.emu.mark().await;
    f.settled(&ctl, "web", "the pods registered").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "auto_assigned is met by AWS's pick");

    // Another prefix for the first subnet: one SetSubnets, the pick of the second kept.
    let mark = f.emu.mark().await;
    let second = prefix(&subnets[0], 6);
    let key = format!("{ANN}/aws-load-balancer-source-nat-ipv6-prefixes");
    let patch = json!({"metadata": {"annotations": {key.clone(): format!("{second},auto_assigned")}}});
    f.services().patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    eventually("the new prefix", 30, || async { (described().await.1[&subnets[0]] == [second.clone()]).then_some(()) })
        .await;
    f.settled(&ctl, "web", "the prefix changed").await;
    assert_eq!(f.writes_since(mark, &ctl).await, ["SetSubnets"]);

    // A prefix of another subnet: nothing is written, the Warning names the prefix and the subnet.
    let mark = f.emu.mark().await;
    let wrong = prefix(&subnets[1], 7);
    let patch = json!({"metadata": {"annotations": {key: format!("{wrong},auto_assigned")}}});
    f.services().patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    let note = eventually("FailedBuildModel event", 60, || async {
        f.warnings("FailedBuildModel").await.into_iter().find(|n| n.contains(&wrong))
    })
    .await;
    assert!(note.contains(&format!("is not inside subnet {}", subnets[0])), "{note}");
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "a bad prefix writes nothing");
    assert_eq!(described().await.1[&subnets[0]], [second]);

    f.services().delete("web", &DeleteParams::default()).await.unwrap();
    eventually("Service gone", 120, || async { f.services().get_opt("web").await.ok()?.is_none().then_some(()) }).await;
    drop(ctl);
    kube_util::delete_namespace(&f.client, &f.ns).await;
}
