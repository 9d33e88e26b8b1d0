//! TargetGroupBinding end to end: the real controller binary against the real kube-apiserver
//! (EndpointSlices from kube-controller-manager, pods from kwok) and the AWS emulator.

use aws_sdk_elasticloadbalancingv2 as elbv2;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use lbc_e2e::controller::ControllerProc;
use lbc_e2e::fixture::{GATE, TgbScene};
use lbc_e2e::{aws, eventually, kube_util, unique};
use lbc_model::crd::TargetGroupBinding;
use serde_json::json;
use std::collections::BTreeSet;
use std::time::Duration;

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn registers_pods_follows_scaling_and_cleans_up_on_delete() {
    let Some(f) = TgbScene::setup("tgb_scale", 3, false).await else { return };
    let ctl = f.controller(&[]);
    f.wait_targets("3 pods registered", &f.expected("web")).await;

    f.env.pods(&["scale", &f.ns, "web", "--replicas", "6"]);
    f.wait_targets("scaled up to 6", &f.expected("web")).await;
    f.env.pods(&["scale", &f.ns, "web", "--replicas", "2"]);
    f.wait_targets("scaled down to 2", &f.expected("web")).await;

    // Status reports the sync (counts may be left to the follow-up sync of the last endpoint
    // change, so they can trail the AWS call a little); the registration latency metric saw the changes.
    let tgbs: Api<TargetGroupBinding> = Api::namespaced(f.client.clone(), &f.ns);
    eventually("status counts the 2 targets", 15, || async {
        let st = tgbs.get("web").await.ok()?.status?;
        (st.registered_targets == Some(2) && st.conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            .then_some(())
    })
    .await;
    assert!(ctl.metric("awslbc_endpoint_to_register_seconds_count").await.unwrap_or(0.0) >= 1.0);

    // Deleting the binding deregisters its targets, then the finalizer lets go.
    tgbs.delete("web", &DeleteParams::default()).await.unwrap();
    eventually("binding deleted", 60, || async { tgbs.get_opt("web").await.ok()?.is_none().then_some(()) }).await;
    assert!(aws::registered(&f.elb, &f.arn).await.is_empty(), "targets left behind after deletion");
    f.cleanup().await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn terminating_pods_are_deregistered_before_they_are_gone() {
    let Some(f) = TgbScene::setup("tgb_terminating", 3, false).await else { return };
    let _ctl = f.controller(&[]);
    f.wait_targets("3 pods registered", &f.expected("web")).await;
    let pods: Api<Pod> = Api::namespaced(f.client.clone(), &f.ns);
    let victim = pods.get("web-0").await.unwrap();
    let ip = victim.status.and_then(|s| s.pod_ip).unwrap();
    pods.delete("web-0", &DeleteParams::default()).await.unwrap();
    // kwok keeps the pod terminating for 5 s; the target must leave while the pod still exists.
    eventually("target of the terminating pod deregistered", 10, || async {
        (!aws::registered(&f.elb, &f.arn).await.contains(&format!("{ip}:8080"))).then_some(())
    })
    .await;
    let still_there = pods.get_opt("web-0").await.unwrap();
    assert!(
        still_there.is_some_and(|p| p.metadata.deletion_timestamp.is_some()),
        "deregistration must start when the endpoint turns terminating, not when the pod is gone"
    );
    f.cleanup().await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn rolling_update_with_readiness_gates() {
    let Some(f) = TgbScene::setup("tgb_roll", 2, true).await else { return };
    // Targets stay `initial` for 3 s: gates must not flip before AWS says healthy.
    f.emu.tg_health(&f.arn, 3.0, "healthy").await;
    let _ctl = f.controller(&[]);
    f.wait_targets("gated pods registered (not Ready yet, only their gate pending)", &f.expected("web")).await;
    let early = kube_util::gate_status(&f.client, &f.ns, "web", GATE).await;
    assert!(early.iter().all(|(_, s)| s.as_deref() != Some("True")), "gate True while AWS said initial: {early:?}");
    eventually("gates True once healthy", 30, || async {
        let g = kube_util::gate_status(&f.client, &f.ns, "web", GATE).await;
        g.iter().all(|(_, s)| s.as_deref() == Some("True")).then_some(())
    })
    .await;

    // A rolling replacement (maxSurge 1, maxUnavailable 0) waits for each new pod's gate.
    f.emu.tg_health(&f.arn, 1.0, "healthy").await;
    f.env.pods(&["roll", &f.ns, "web"]);
    f.wait_targets("only the new pods registered after the roll", &f.expected("web")).await;
    f.cleanup().await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn throttled_target_group_does_not_delay_others() {
    let Some(a) = TgbScene::setup("tgb_throttle_a", 2, false).await else { return };
    // Second binding in the same namespace, its own service and target group.
    let arn_b = a.add_binding("api").await;
    let fault = a
        .emu
        .fault(json!({"service": "elasticloadbalancing", "operation": "RegisterTargets", "target_group_arn": a.arn,
                      "code": "Throttling", "rate": 1.0}))
        .await;
    let ctl = a.controller(&[]);
    let want_b = a.expected("api");
    eventually("binding api synced while web is throttled", 30, || async {
        (aws::registered(&a.elb, &arn_b).await == want_b).then_some(())
    })
    .await;
    assert!(aws::registered(&a.elb, &a.arn).await.is_empty(), "web's registrations are all throttled");
    // Summed over operations: every called operation has its series (at 0 until throttled).
    let throttled = lbc_e2e::albc::sum_lines(&ctl.metrics().await, "aws_api_call_throttled_total{");
    assert!(throttled >= 1.0, "throttles are counted: {throttled}");
    a.emu.clear_fault(&fault).await;
    a.wait_targets("web converges once throttling stops (backoff capped low)", &a.expected("web")).await;
    a.cleanup().await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn restart_mid_change_loses_nothing_and_warm_restart_is_free() {
    let Some(f) = TgbScene::setup("tgb_restart", 3, false).await else { return };
    let ctl = f.controller(&[]);
    f.wait_targets("initial sync", &f.expected("web")).await;
    // Change and crash immediately, possibly mid-change.
    f.env.pods(&["scale", &f.ns, "web", "--replicas", "5", "--no-wait"]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    ctl.kill();
    f.env.pods(&["scale", &f.ns, "web", "--replicas", "1"]);
    let ctl = f.controller(&[]);
    f.wait_targets("converged after restart: no target lost or left behind", &f.expected("web")).await;
    // The checkpoint is written once the targets are in place; then restart again with nothing changed.
    eventually("checkpoint annotation on the binding", 30, || async {
        let tgbs: Api<TargetGroupBinding> = Api::namespaced(f.client.clone(), &f.ns);
        let b = tgbs.get("web").await.ok()?;
        b.metadata.annotations?.contains_key(lbc_model::names::CHECKPOINT_ANNOTATION).then_some(())
    })
    .await;
    ctl.terminate();
    let mark = f.emu.mark().await;
    let ctl = f.controller(&[]);
    eventually("controller ready", 30, || async { ctl.ready().await.then_some(()) }).await;
    // Proof the binding was looked at: a reconcile skipped on the checkpoint, and one more after it.
    eventually("a reconcile skipped on the checkpoint", 30, || async {
        (ctl.metric("awslbc_reconcile_skipped_checkpoint_total").await.unwrap_or(0.0) >= 1.0).then_some(())
    })
    .await;
    let tgbs: Api<TargetGroupBinding> = Api::namespaced(f.client.clone(), &f.ns);
    ctl.settled("targetGroupBinding", "the skipped reconcile", || kube_util::poke(&tgbs, "web")).await;
    let (calls, _) = f.emu.calls(mark, Some(&f.arn)).await;
    assert!(calls.is_empty(), "a warm restart with nothing changed must make no AWS call for the group, saw {calls:?}");
    f.cleanup().await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn leader_handover_between_two_controllers() {
    let Some(f) = TgbScene::setup("tgb_leader", 2, false).await else { return };
    let first = f.controller(&[]);
    f.wait_targets("leader synced", &f.expected("web")).await;
    let second = f.controller(&[]);
    eventually("second replica ready (caches warm)", 30, || async { second.ready().await.then_some(()) }).await;
    assert_eq!(second.metric("awslbc_leader").await, Some(0.0), "only one leader");
    assert_eq!(first.metric("awslbc_leader").await, Some(1.0));
    first.kill();
    f.env.pods(&["scale", &f.ns, "web", "--replicas", "4"]);
    f.wait_targets("the new leader registers new pods", &f.expected("web")).await;
    assert_eq!(second.metric("awslbc_leader").await, Some(1.0));
    f.cleanup().await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn drift_is_repaired_and_deleted_target_group_is_reported() {
    let Some(f) = TgbScene::setup("tgb_drift", 2, false).await else { return };
    let _ctl = f.controller(&["--sync-period=2s"]);
    let want = f.expected("web");
    f.wait_targets("initial sync", &want).await;
    // Someone deregisters a target behind our back: the periodic verification puts it back.
    let victim = want.iter().next().unwrap().clone();
    let (ip, port) = victim.split_once(':').unwrap();
    let t = elbv2::types::TargetDescription::builder().id(ip).port(port.parse().unwrap()).build();
    f.elb.deregister_targets().target_group_arn(&f.arn).targets(t).send().await.unwrap();
    f.wait_targets("out-of-band removal repaired", &want).await;

    // The target group is deleted out of band: a condition, not a stuck object.
    f.elb.delete_target_group().target_group_arn(&f.arn).send().await.unwrap();
    let tgbs: Api<TargetGroupBinding> = Api::namespaced(f.client.clone(), &f.ns);
    eventually("Ready=False TargetGroupNotFound", 30, || async {
        let t = tgbs.get("web").await.ok()?;
        t.status?.conditions.iter().any(|c| c.reason == "TargetGroupNotFound").then_some(())
    })
    .await;
    tgbs.delete("web", &DeleteParams::default()).await.unwrap();
    eventually("deletion completes without the target group", 30, || async {
        tgbs.get_opt("web").await.ok()?.is_none().then_some(())
    })
    .await;
    f.cleanup().await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn overlay_pod_ips_are_reported_not_registered() {
    let Some(f) = TgbScene::setup("tgb_overlay", 1, false).await else { return };
    // An endpoint with a Canal/Flannel overlay address (outside the VPC's 10.0.0.0/16).
    let slices: Api<k8s_openapi::api::discovery::v1::EndpointSlice> = Api::namespaced(f.client.clone(), &f.ns);
    let slice = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-overlay", "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": [{"addresses": ["10.42.7.9"], "conditions": {"ready": true}}],
    });
    slices.patch("web-overlay", &PatchParams::apply("e2e").force(), &Patch::Apply(slice)).await.unwrap();
    let ctl = f.controller(&[]);
    f.wait_targets("VPC pod registered, overlay IP not", &f.expected("web")).await;
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(f.client.clone(), &f.ns);
    let note = eventually("PodIPsOutsideVPC warning event", 30, || async {
        let list = events.list(&Default::default()).await.ok()?;
        list.items.into_iter().find(|e| e.reason.as_deref() == Some("PodIPsOutsideVPC")).and_then(|e| e.note)
    })
    .await;
    assert!(note.contains("10.42.7.9") && note.contains("10.0.0.0/16") && note.contains("Cilium"), "{note}");
    assert_eq!(ctl.metric("awslbc_targets_outside_vpc{").await, Some(1.0));
    f.cleanup().await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn multi_cluster_target_group_only_touches_own_targets() {
    // Two "clusters" (two namespaces, each with its own controller) share one target group.
    let Some(a) = TgbScene::setup("tgb_multi_a", 2, false).await else { return };
    let tgbs_a: Api<TargetGroupBinding> = Api::namespaced(a.client.clone(), &a.ns);
    tgbs_a
        .patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"multiClusterTargetGroup": true}})))
        .await
        .unwrap();
    let ns_b = unique("tgb-multi-b");
    a.env.pods(&["create", &ns_b, "web", "--replicas", "2", "--port", "8080"]);
    a.env.pods(&["service", &ns_b, "web", "--port", "80", "--target-port", "8080"]);
    let b = kube_util::create_binding(&a.client, &ns_b, "web", "web", 80, &a.arn).await;
    let tgbs_b: Api<TargetGroupBinding> = Api::namespaced(a.client.clone(), &ns_b);
    tgbs_b
        .patch(
            &b.metadata.name.unwrap(),
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"multiClusterTargetGroup": true}})),
        )
        .await
        .unwrap();
    let ctl_a = a.controller(&[]);
    let _ctl_b = ControllerProc::start(&a.env, &ns_b, "lbc-e2e-leader", &[]);
    let ips_b: BTreeSet<String> = a.env.pod_ips(&ns_b, "web").into_iter().map(|ip| format!("{ip}:8080")).collect();
    let both: BTreeSet<String> = a.expected("web").union(&ips_b).cloned().collect();
    a.wait_targets("both clusters' pods registered in the shared group", &both).await;

    // Cluster A scales to zero: only A's targets leave; B's stay.
    a.env.pods(&["scale", &a.ns, "web", "--replicas", "0"]);
    a.wait_targets("only cluster B's targets remain", &ips_b).await;
    // A's reconciles running now finish, and one after them (its binding poked).
    let tgbs_a: Api<TargetGroupBinding> = Api::namespaced(a.client.clone(), &a.ns);
    ctl_a.settled("targetGroupBinding", "only B's targets left", || kube_util::poke(&tgbs_a, "web")).await;
    assert_eq!(aws::registered(&a.elb, &a.arn).await, ips_b, "cluster B's targets must survive A's changes");
    kube_util::delete_namespace(&a.client, &ns_b).await;
    a.cleanup().await;
}
