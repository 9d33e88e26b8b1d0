//! The local environment itself: real EndpointSlices from kube-controller-manager with the pods'
//! VPC IPs, and the AWS emulator's target-health timeline, throttling and call log.

use aws_sdk_elasticloadbalancingv2 as elbv2;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams};
use lbc_e2e::emulator::Emulator;
use lbc_e2e::{Env, aws, eventually, kube_util, unique};
use serde_json::json;

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn endpoint_slice_controller_publishes_pod_vpc_ips() {
    let Some(env) = Env::require("endpoint_slice_controller_publishes_pod_vpc_ips") else {
        return;
    };
    let client = kube_util::client(&env).await;
    let emu = Emulator::new(env.aws_endpoint());
    let ns = unique("env-eps");
    let mark = emu.mark().await;

    env.pods(&["create", &ns, "web", "--replicas", "3", "--port", "8080"]);
    env.pods(&["service", &ns, "web", "--port", "80", "--target-port", "8080"]);
    let ips = env.pod_ips(&ns, "web");
    assert_eq!(ips.len(), 3);
    let vpc = lbc_model::net::VpcCidrs::parse([env.get("LBC_VPC_CIDR")]).unwrap();
    for ip in &ips {
        assert!(vpc.contains(&ip.parse().unwrap()), "pod IP {ip} must be a VPC address (Cilium ENI mode)");
    }

    // kube-controller-manager's EndpointSlice controller publishes exactly those IPs, ready.
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), &ns);
    let published = eventually("EndpointSlice with 3 ready endpoints", 60, || async {
        let list = slices.list(&ListParams::default().labels("kubernetes.io/service-name=web")).await.ok()?;
        let mut got: Vec<String> = list
            .items
            .iter()
            .flat_map(|s| s.endpoints.iter())
            .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(true))
            .flat_map(|e| e.addresses.clone())
            .collect();
        got.sort();
        (got.len() == 3).then_some(got)
    })
    .await;
    assert_eq!(published, ips);

    // The pod helper created one ENI per pod IP in the emulator; the call log shows it.
    let (calls, _) = emu.calls(mark, None).await;
    let enis = calls.iter().filter(|c| c.operation == "CreateNetworkInterface" && c.outcome == "ok").count();
    assert!(enis >= 3, "expected the 3 ENIs in the emulator call log, saw {enis}: {calls:?}");
    kube_util::delete_namespace(&client, &ns).await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn emulator_health_timeline_and_throttling() {
    let Some(env) = Env::require("emulator_health_timeline_and_throttling") else {
        return;
    };
    let elb = aws::elbv2(&env).await;
    let emu = Emulator::new(env.aws_endpoint());
    let name = unique("env-tg");
    let arn = aws::create_ip_target_group(&env, &elb, &name, 8080).await;
    emu.tg_health(&arn, 1.5, "healthy").await;

    let target = elbv2::types::TargetDescription::builder().id("10.0.100.77").port(8080).build();
    elb.register_targets().target_group_arn(&arn).targets(target.clone()).send().await.expect("RegisterTargets");
    let state = |out: elbv2::operation::describe_target_health::DescribeTargetHealthOutput| {
        out.target_health_descriptions()[0].target_health().and_then(|h| h.state()).map(|s| s.as_str().to_string())
    };
    let first = state(elb.describe_target_health().target_group_arn(&arn).send().await.unwrap());
    assert_eq!(first.as_deref(), Some("initial"), "a new target starts in `initial`, as on AWS");
    eventually("target healthy", 15, || async {
        let s = state(elb.describe_target_health().target_group_arn(&arn).send().await.ok()?);
        (s.as_deref() == Some("healthy")).then_some(())
    })
    .await;

    // Throttling on demand, for this target group only.
    let mark = emu.mark().await;
    emu.fault(json!({"service": "elasticloadbalancing", "operation": "RegisterTargets", "target_group_arn": arn,
                     "code": "Throttling", "count": 1}))
        .await;
    let err = elb.register_targets().target_group_arn(&arn).targets(target).send().await.expect_err("throttled");
    let code = elbv2::error::ProvideErrorMetadata::code(&err).map(str::to_string);
    assert_eq!(code.as_deref(), Some("Throttling"));
    let (calls, _) = emu.calls(mark, Some(&arn)).await;
    let c = calls.iter().find(|c| c.operation == "RegisterTargets").expect("logged");
    assert_eq!((c.outcome.as_str(), c.error_code.as_deref(), c.targets), ("error", Some("Throttling"), Some(1)));
}
