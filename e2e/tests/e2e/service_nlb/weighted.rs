//! `actions.TCP-80` weighted forwards (ALBC's NLB "default action"): the listener splits between
//! the Service's own target group and another Service's, which gets its own target group (named
//! with the NLB Service's UID, as ALBC names it, so an ALBC-made split is adopted as it is) and
//! binding; a change of that other Service wakes the NLB Service at once; deleting the NLB
//! Service removes both target groups.

use super::*;
use lbc_model::lb::naming::{TargetGroupNameInputs, target_group_name};

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn a_weighted_forward_splits_between_two_services() {
    let Some(f) = setup("svc_nlb_weighted", 2).await else { return };
    f.env.pods(&["create", &f.ns, "canary", "--replicas", "1", "--port", "8080", "--terminate-seconds", "2"]);
    let canary = kube_util::backend_service("canary", "canary", None, BTreeMap::new());
    let canary = f.services().create(&PostParams::default(), &canary).await.expect("create canary");
    let ctl = f.controller(&[]);
    let forward = r#"{"type": "forward", "forwardConfig": {"baseServiceWeight": 80,
        "targetGroups": [{"serviceName": "canary", "servicePort": "http", "weight": 20}],
        "targetGroupStickinessConfig": {"enabled": true}}}"#;
    let web = f.services().create(&PostParams::default(), &nlb_service("web", &[("actions.TCP-80", forward)])).await;
    let web = web.expect("create web");
    eventually("status.loadBalancer hostname", 90, || f.hostname("web")).await;

    let (lbs, tgs) = f.stack_arns("web").await;
    assert_eq!(tgs.len(), 2, "the Service's own target group and canary's: {tgs:?}");
    let uid = |s: &Service| s.metadata.uid.clone().expect("uid");
    let canary_tg_name = target_group_name(&TargetGroupNameInputs {
        cluster: f.env.get("LBC_CLUSTER_NAME"),
        namespace: &f.ns,
        name: "canary",
        uid: &uid(&canary),
        base_uid: Some(&uid(&web)),
        target_group_port: 8080,
        service_port: 80,
        target_type: "ip",
        protocol: "TCP",
        health_check_protocol: "TCP",
        health_check_interval_seconds: 10,
    });
    let names = f.elb.describe_target_groups().set_target_group_arns(Some(tgs.clone())).send().await.expect("tgs");
    let by_name: BTreeMap<String, String> = names
        .target_groups()
        .iter()
        .map(|t| {
            (
                t.target_group_name().unwrap_or_default().to_string(),
                t.target_group_arn().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let canary_arn = by_name.get(&canary_tg_name).unwrap_or_else(|| panic!("{canary_tg_name} in {by_name:?}")).clone();
    let web_arn = tgs.iter().find(|a| **a != canary_arn).expect("web's target group").clone();

    // The listener's split as AWS reports it.
    let listeners = f.elb.describe_listeners().load_balancer_arn(&lbs[0]).send().await.expect("listeners");
    let fc = listeners.listeners()[0].default_actions()[0].forward_config().expect("a forward config").clone();
    let split: BTreeMap<String, i32> = fc
        .target_groups()
        .iter()
        .map(|t| (t.target_group_arn().unwrap_or_default().to_string(), t.weight().unwrap_or_default()))
        .collect();
    assert_eq!(split, BTreeMap::from([(web_arn.clone(), 80), (canary_arn.clone(), 20)]));
    assert_eq!(fc.target_group_stickiness_config().and_then(|s| s.enabled()), Some(true));

    // Each target group holds its own Service's pods.
    f.wait_registered(&web_arn).await;
    let canary_ips: BTreeSet<String> =
        f.env.pod_ips(&f.ns, "canary").into_iter().map(|ip| format!("{ip}:8080")).collect();
    eventually("canary pods registered", 60, || async {
        (aws::registered(&f.elb, &canary_arn).await == canary_ips).then_some(())
    })
    .await;

    // In sync: a pass writes nothing.
    let mark = f.emu.mark().await;
    f.settled(&ctl, "web", "both target groups registered").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "no write without a change");

    // canary goes away: web's stack hears of it at once (no resync), says why and changes nothing.
    let mark = f.emu.mark().await;
    f.services().delete("canary", &DeleteParams::default()).await.expect("delete canary");
    let note = eventually("FailedBuildModel naming canary", 30, || async {
        f.warnings("FailedBuildModel").await.into_iter().find(|n| n.contains("canary"))
    })
    .await;
    assert!(note.contains(&format!("names Service {}/canary, which does not exist", f.ns)), "{note}");
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "a missing backend deletes nothing");

    // Deleting web takes both target groups.
    f.services().delete("web", &DeleteParams::default()).await.expect("delete web");
    eventually("Service gone", 120, || async { f.services().get_opt("web").await.ok()?.is_none().then_some(()) }).await;
    assert_eq!(f.stack_arns("web").await, (vec![], vec![]));
    drop(ctl);
    kube_util::delete_namespace(&f.client, &f.ns).await;
}
