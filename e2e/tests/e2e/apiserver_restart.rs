//! The kube-apiserver of the local environment is stopped and started again (etcd keeps its
//! data) while pods go and come: the controller's watches must relist (410 Gone: the new API
//! server's watch cache starts after their resourceVersion), act on deletions it never saw as
//! events, and converge without waiting for the sync period.
//!
//! Its own test binary, one test: nothing else may run while the API server is down.

use lbc_e2e::fixture::TgbScene;
use lbc_e2e::{aws, eventually};
use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant};

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn bindings_converge_after_an_api_server_restart_and_act_on_deletions_made_meanwhile() {
    let Some(f) = TgbScene::setup("apiserver_restart", 4, false).await else { return };
    // A lease long enough to survive the restart: convergence must come from the relist, not
    // from a new leadership term reconciling everything.
    let ctl = f.controller(&["--leader-election-lease-duration=45", "--sync-period=10m"]);
    f.wait_targets("4 pods registered", &f.expected("web")).await;
    let before = f.expected("web");

    let port: u32 = f.env.get("LBC_KUBE_SERVER").rsplit(':').next().unwrap().parse().unwrap();
    let out = Command::new(f.env.repo.join("e2e/up"))
        .args(["--restart-apiserver", "4"])
        .envs(f.env.vars())
        .env("LBC_E2E_PORT_OFFSET", (port - 16443).to_string())
        .output()
        .expect("e2e/up --restart-apiserver");
    assert!(out.status.success(), "restart failed: {}", String::from_utf8_lossy(&out.stderr));
    let back = Instant::now();

    // Right away, before the controller's watches are back: two pods go, two others come.
    f.env.pods(&["scale", &f.ns, "web", "--replicas", "2", "--no-wait"]);
    f.env.pods(&["create", &f.ns, "web-b", "--replicas", "2", "--port", "8080", "--labels", "app=web"]);
    let want: BTreeSet<String> = f.expected("web").union(&f.expected("web-b")).cloned().collect();
    assert_ne!(want, before);
    eventually("converged after the restart", 30, || async {
        (aws::registered(&f.elb, &f.arn).await == want).then_some(())
    })
    .await;
    let converged = back.elapsed();
    let relists = ctl
        .metrics()
        .await
        .lines()
        .filter(|l| l.starts_with("awslbc_cache_relists_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>();
    println!("apiserver restart: converged {converged:.1?} after the API server's return; {relists} cache relists");
    assert!(relists >= 1.0, "the watches relisted (else this test did not exercise a 410)");
    assert_eq!(ctl.metric("awslbc_leader ").await, Some(1.0), "leadership held through the restart");
    assert!(converged < Duration::from_secs(30));
    f.cleanup().await;
}
