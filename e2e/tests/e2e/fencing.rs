//! Safety on the controller's worst days (issue: one writer, never stuck, never blind): a
//! partitioned leader stops writing before the next one starts, a hung AWS call does not stall
//! other bindings, and AWS's word on registration beats what the controller remembers.

use aws_sdk_elasticloadbalancingv2 as elbv2;
use kube::api::Api;
use lbc_e2e::emulator::Call;
use lbc_e2e::fixture::{GATE, TgbScene};
use lbc_e2e::proxy::FreezableProxy;
use lbc_e2e::{eventually, kube_util};
use serde_json::json;
use std::time::{Duration, Instant};

/// A kubeconfig like the environment's, whose server is `server` (e.g. a proxy).
fn kubeconfig_via(f: &TgbScene, server: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(f.env.get("KUBECONFIG")).expect("kubeconfig");
    let path = f.env.run_dir().join(format!("kubeconfig-{}", f.ns));
    std::fs::write(&path, text.replace(f.env.get("LBC_KUBE_SERVER"), server)).expect("write kubeconfig");
    path
}

fn deregister(elb: &elbv2::Client, arn: &str, target: &str) -> impl std::future::Future<Output = ()> + use<> {
    let (ip, port) = target.split_once(':').expect("ip:port");
    let t = elbv2::types::TargetDescription::builder().id(ip).port(port.parse().unwrap()).build();
    let call = elb.deregister_targets().target_group_arn(arn).targets(t);
    async move {
        let _ = call.send().await;
    }
}

fn writes_by<'a>(calls: &'a [Call], key: &'a str) -> impl Iterator<Item = &'a Call> + 'a {
    calls.iter().filter(move |c| {
        c.access_key.as_deref() == Some(key) && !["Describe", "List", "Get"].iter().any(|r| c.operation.starts_with(r))
    })
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn a_partitioned_leader_stops_writing_before_the_new_leader_starts() {
    let Some(f) = TgbScene::setup("fence_partition", 3, true).await else { return };
    // Gates stay pending (targets `initial` for an hour), so the checkpoint is never written and
    // the leader repairs registrations from AWS's answers alone: a write path with no
    // Kubernetes write before it, the one a partition from the API server leaves open.
    f.emu.tg_health(&f.arn, 3600.0, "healthy").await;
    let upstream: std::net::SocketAddr =
        f.env.get("LBC_KUBE_SERVER").trim_start_matches("https://").parse().expect("apiserver address");
    let proxy = FreezableProxy::start(upstream).await;
    let kc = kubeconfig_via(&f, &format!("https://{}", proxy.addr));
    // A 15 s lease (ALBC's default): A may write for up to 10 s after its last renewal.
    let common = ["--leader-election-lease-duration=15", "--kube-api-request-timeout=2s"];
    let a = f.controller(&[&format!("--kubeconfig={}", kc.display()), common[0], common[1]]);
    eventually("A leads", 30, || async { (a.metric("awslbc_leader ").await == Some(1.0)).then_some(()) }).await;
    let want = f.expected("web");
    f.wait_targets("A registered the pods", &want).await;
    let b = f.controller(&common);
    eventually("B ready as a follower", 30, || async {
        (b.ready().await && b.metric("awslbc_leader ").await == Some(0.0)).then_some(())
    })
    .await;

    // Partition A from the API server, then keep removing one target behind the controllers'
    // backs: whoever leads puts it back.
    let victim = want.iter().next().unwrap().clone();
    let mark = f.emu.mark().await;
    let frozen_at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    proxy.freeze();
    let t0 = Instant::now();
    let mut b_first: Option<f64> = None;
    while t0.elapsed() < Duration::from_secs(45) {
        deregister(&f.elb, &f.arn, &victim).await;
        tokio::time::sleep(Duration::from_millis(700)).await;
        let (calls, _) = f.emu.calls(mark, Some(&f.arn)).await;
        if b_first.is_none() {
            b_first = writes_by(&calls, &b.access_key).map(|c| c.received).reduce(f64::min);
        }
        if b_first.is_some_and(|t| calls.iter().any(|c| c.received > t + 5.0)) {
            break;
        }
    }
    let (calls, _) = f.emu.calls(mark, Some(&f.arn)).await;
    let b_first = b_first.expect("B never wrote after A was partitioned");
    let a_writes: Vec<f64> = writes_by(&calls, &a.access_key).map(|c| c.received).collect();
    let a_last = a_writes.iter().copied().reduce(f64::max);
    println!(
        "partition: A wrote {} time(s) after the freeze, last at +{:.2}s; B's first write at +{:.2}s",
        a_writes.len(),
        a_last.map_or(f64::NAN, |t| t - frozen_at),
        b_first - frozen_at
    );
    assert!(!a_writes.is_empty(), "A kept writing while it still held the lease (else the fence was never tested)");
    assert!(a_last.unwrap() < b_first, "A wrote at {a_last:?} after B's first write at {b_first}");
    assert_eq!(b.metric("awslbc_leader ").await, Some(1.0));

    // A rejoins as a follower when the partition heals, and writes nothing.
    let mark = f.emu.mark().await;
    proxy.thaw();
    eventually("A sees B's lease and follows", 30, || async {
        (a.ready().await && a.metric("awslbc_leader ").await == Some(0.0)).then_some(())
    })
    .await;
    deregister(&f.elb, &f.arn, &victim).await;
    f.wait_targets("B repairs the registration", &want).await;
    let (calls, _) = f.emu.calls(mark, Some(&f.arn)).await;
    assert_eq!(writes_by(&calls, &a.access_key).count(), 0, "A wrote after the thaw: {calls:?}");
    assert!(writes_by(&calls, &b.access_key).count() >= 1, "B's repair is in the log, so the window saw writes");
    f.cleanup().await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn a_hung_aws_call_times_out_and_other_bindings_keep_converging() {
    let Some(f) = TgbScene::setup("fence_hung", 2, false).await else { return };
    let arn_api = f.add_binding("api").await;
    // Every DescribeTargetHealth of `web`'s group hangs for three minutes.
    let fault = f
        .emu
        .fault(json!({"service": "elasticloadbalancing", "operation": "DescribeTargetHealth",
                      "target_group_arn": f.arn, "latency_ms": 180000}))
        .await;
    let started = Instant::now();
    let ctl = f.controller(&["--aws-api-attempt-timeout=2s", "--aws-api-operation-timeout=5s"]);
    let want_api = f.expected("api");
    f.wait_targets_of(&arn_api, "api converges while web's reads hang", &want_api, 20).await;
    let api_converged = started.elapsed();

    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(f.client.clone(), &f.ns);
    let note = eventually("web reports a transient timeout", 30, || async {
        let list = events.list(&Default::default()).await.ok()?;
        list.items
            .into_iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("web"))
            .find(|e| e.reason.as_deref() == Some("FailedReconcileTransient"))
            .and_then(|e| e.note)
    })
    .await;
    let reported = started.elapsed();
    println!("hung call: api converged after {api_converged:.1?}; web's timeout reported after {reported:.1?}");
    assert!(note.contains("ClientTimeout") && note.contains("DescribeTargetHealth"), "{note}");
    let timeouts = ctl
        .metrics()
        .await
        .lines()
        .filter(|l| l.starts_with("aws_api_calls_total") && l.contains("ClientTimeout"))
        .count();
    assert!(timeouts >= 1, "timed-out attempts are counted");

    // The hang ends: web converges (its backoff is capped low).
    f.emu.clear_fault(&fault).await;
    f.wait_targets("web converges once AWS answers again", &f.expected("web")).await;
    f.cleanup().await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn a_target_deregistered_out_of_band_turns_its_pending_gate_false_and_is_registered_again() {
    let Some(f) = TgbScene::setup("fence_gate", 2, true).await else { return };
    // Gates stay pending: targets are `initial` for an hour.
    f.emu.tg_health(&f.arn, 3600.0, "healthy").await;
    let _ctl = f.controller(&["--sync-period=10m"]);
    let want = f.expected("web");
    f.wait_targets("gated pods registered", &want).await;
    let victim = want.iter().next().unwrap().clone();
    let victim_ip = victim.split_once(':').unwrap().0.to_string();
    let mark = f.emu.mark().await;
    deregister(&f.elb, &f.arn, &victim).await;
    let removed = Instant::now();
    // The next health poll (≤ 1 s here) sees `draining`, not what the controller registered.
    f.wait_targets_of(&f.arn, "the victim registered again, long before the 10 min verification", &want, 15).await;
    let back_after = removed.elapsed();
    let (calls, _) = f.emu.calls(mark, Some(&f.arn)).await;
    assert!(calls.iter().any(|c| c.operation == "RegisterTargets"), "{calls:?}");
    println!("gate authority: re-registered {back_after:.1?} after the out-of-band deregistration");
    let pods = kube_util::gate_status(&f.client, &f.ns, "web", GATE).await;
    assert!(pods.iter().all(|(_, s)| s.as_deref() != Some("True")), "no gate turned True: {pods:?} ({victim_ip})");
    f.cleanup().await;
}
