//! Drop-in for Gateways, proven with the real ALBC: ALBC (gate ALBGatewayAPI) builds the ALB of a
//! Gateway and its HTTPRoute, with the TargetGroupBinding and the targets; it stops, and our
//! controller takes the Gateway over without one mutating AWS call, keeping every ARN and target;
//! then it deletes what ALBC built when the Gateway goes. Both controllers watch the test's
//! namespace only and never run at the same time.

use super::alb::condition;
use kube::api::DeleteParams;
use lbc_e2e::albc::{AlbcProc, require_albc};
use lbc_e2e::controller::ControllerProc;
use lbc_e2e::emulator::{self, Emulator};
use lbc_e2e::{Env, aws, eventually, kube_util, unique};

const STACK_TAG: &str = "gateway.k8s.aws.alb/stack";

/// ALBC's own CRDs (LoadBalancerConfiguration, TargetGroupConfiguration, ListenerRuleConfiguration):
/// its Gateway controller does not start without them. From the source build-albc.sh unpacked.
fn install_albc_gateway_crds(env: &Env, albc: &std::path::Path) -> bool {
    let crds = albc.parent().map(|d| d.join("src/config/crd/gateway/gateway-crds.yaml"));
    let Some(crds) = crds.filter(|p| p.is_file()) else {
        let why = "ALBC's gateway.k8s.aws CRDs are not next to its binary (src/config/crd/gateway)";
        assert!(std::env::var("LBC_ALBC_REQUIRED").as_deref() != Ok("1"), "{why} (LBC_ALBC_REQUIRED=1)");
        eprintln!("SKIPPED {why}");
        return false;
    };
    let kubectl = std::path::Path::new(&env.get("LBC_BIN_DIR")).join("kubectl");
    let out = std::process::Command::new(kubectl)
        .args(["apply", "--server-side", "--force-conflicts", "-f"])
        .arg(&crds)
        .envs(env.vars())
        .output()
        .expect("kubectl apply");
    assert!(out.status.success(), "applying {}: {}", crds.display(), String::from_utf8_lossy(&out.stderr));
    true
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up) and the ALBC binary; e2e/test-all runs it"]
async fn a_gateway_albc_built_is_adopted_without_one_aws_write() {
    let test = "gateway_adoption";
    let Some(env) = Env::require(test) else { return };
    let Some(albc_bin) = require_albc(test) else { return };
    if !install_albc_gateway_crds(&env, &albc_bin) {
        return;
    }
    let client = kube_util::client(&env).await;
    let elb = aws::elbv2(&env).await;
    let emu = Emulator::new(env.aws_endpoint());
    let ns = unique("gw-adopt");
    kube_util::namespace(&client, &ns, &[]).await;
    let super::alb::Scene { class_name, classes, gateways, routes: _ } = super::alb::scene(&env, &client, &ns).await;

    // ALBC builds it.
    let albc_mark = emu.mark().await;
    let albc = AlbcProc::start(
        &env,
        &albc_bin,
        &ns,
        "albc-gw",
        &[
            &format!("--watch-namespace={ns}"),
            "--feature-gates=ALBGatewayAPI=true,NLBGatewayAPI=false,GatewayListenerSet=false",
            "--default-target-type=ip",
            // As ours runs in the e2e environment (`lbc_e2e::controller::flags`).
            "--enable-backend-security-group=false",
        ],
    );
    let stack = format!("{ns}/gw");
    let want: std::collections::BTreeSet<String> =
        env.pod_ips(&ns, "web").into_iter().map(|ip| format!("{ip}:8080")).collect();
    let programmed = || async {
        let s = gateways.get("gw").await.ok()?.status?;
        (condition(&s.conditions, "Programmed")?.0 == "True").then_some(())
    };
    let albc_built = eventually("ALBC: Gateway Programmed and the pods registered", 180, || async {
        programmed().await?;
        let (lbs, tgs) = aws::stack_arns(&elb, STACK_TAG, &stack).await;
        let one = lbs.len() == 1 && tgs.len() == 1 && aws::registered(&elb, &tgs[0]).await == want;
        one.then_some((lbs, tgs))
    })
    .await;
    let before = aws::stack_snapshot(&elb, STACK_TAG, &stack).await;
    let albc_writes = emulator::writes(&emu.calls(albc_mark, None).await.0, &albc.access_key);
    eprintln!("ALBC's writes to build the Gateway: {} {albc_writes:?}", albc_writes.len());
    albc.terminate();
    // ALBC's resource tag of the target group names the targetPort (its identifier port), as ours.
    let tags = elb.describe_tags().resource_arns(&albc_built.1[0]).send().await.expect("describe tags");
    let resource = tags.tag_descriptions()[0]
        .tags()
        .iter()
        .find(|t| t.key() == Some("gateway.k8s.aws.alb/resource"))
        .and_then(|t| t.value().map(String::from));
    assert_eq!(resource, Some(format!("{ns}/gw:{ns}-web:HTTPRoute-{ns}-web:8080")));

    // Ours takes over: a full pass of the Gateway and of its binding, and no AWS write.
    let mark = emu.mark().await;
    let ctl = ControllerProc::start(
        &env,
        &ns,
        "lbc-e2e-gw-adopt",
        &["--feature-gates=ALBGatewayAPI=true", "--default-target-type=ip", "--enable-service-controller=false"],
    );
    let poke = || kube_util::poke(&gateways, "gw");
    ctl.settled(super::alb::CONTROLLER, "the adoption", poke).await;
    ctl.settled(super::alb::CONTROLLER, "a resync", poke).await;
    let writes = emulator::writes(&emu.calls(mark, None).await.0, &ctl.access_key);
    if !writes.is_empty() {
        eprintln!("before: {before:#?}\nafter: {:#?}", aws::stack_snapshot(&elb, STACK_TAG, &stack).await);
    }
    assert_eq!(writes, Vec::<String>::new(), "adopting ALBC's Gateway stack writes nothing");
    assert_eq!(aws::stack_snapshot(&elb, STACK_TAG, &stack).await, before, "same ARNs, rules and targets");
    assert_eq!(aws::stack_arns(&elb, STACK_TAG, &stack).await, albc_built);
    programmed().await.expect("still Programmed under our controller");

    // Deleting the Gateway deletes what ALBC built.
    gateways.delete("gw", &DeleteParams::default()).await.expect("delete Gateway");
    eventually("the Gateway gone", 120, || async { gateways.get_opt("gw").await.ok()?.is_none().then_some(()) }).await;
    assert_eq!(aws::stack_arns(&elb, STACK_TAG, &stack).await, (vec![], vec![]));
    drop(ctl);
    kube_util::delete_namespace(&client, &ns).await;
    let _ = classes.delete(&class_name, &DeleteParams::default()).await;
}
