//! The AWS adapters (`lbc-aws`) against the emulator: request shapes the real SDK sends, (Id, Port)
//! keyed registrations, health states, error classification, throttling with bounded retries and
//! the per-call metrics.

use lbc_aws::call::CallRunner;
use lbc_aws::config::{ClientSettings, Endpoints, build_clients};
use lbc_aws::ec2::{Ec2, SdkEc2};
use lbc_aws::elbv2::{ElbV2, SdkElbV2};
use lbc_aws::error::ErrorKind;
use lbc_aws::metrics::{AwsMetrics, OpLabels};
use lbc_aws::throttle::Throttler;
use lbc_e2e::emulator::Emulator;
use lbc_e2e::{Env, aws, unique};
use lbc_model::target::{HealthState, Target};
use serde_json::json;
use std::sync::Arc;

async fn adapters(env: &Env, max_retries: u32) -> (SdkElbV2, SdkEc2, Arc<CallRunner>) {
    let runner =
        CallRunner::new(Throttler::new(lbc_model::throttle::default_rules()), AwsMetrics::default(), max_retries);
    let clients = build_clients(&ClientSettings {
        region: env.get("AWS_REGION").into(),
        endpoints: Endpoints::all(env.aws_endpoint()),
        credentials: Some(aws_credential_types::provider::SharedCredentialsProvider::new(
            aws_credential_types::Credentials::new("testing", "testing", None, None, "e2e"),
        )),
    })
    .await;
    (SdkElbV2::new(clients.elbv2, runner.clone()), SdkEc2::new(clients.ec2, runner.clone()), runner)
}

fn t(ip: &str, port: u16) -> Target {
    Target::new(ip.parse().unwrap(), port)
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn register_describe_deregister_round_trip() {
    let Some(env) = Env::require("register_describe_deregister_round_trip") else { return };
    let (elb, ec2, _) = adapters(&env, 0).await;
    let sdk = aws::elbv2(&env).await;
    let arn = aws::create_ip_target_group(&env, &sdk, &unique("ad-tg"), 8080).await;
    Emulator::new(env.aws_endpoint()).tg_health(&arn, 30.0, "healthy").await;

    let info = elb.describe_target_group(&arn).await.unwrap().expect("exists");
    assert_eq!((info.target_type.as_str(), info.health_check_interval_seconds), ("ip", Some(5)));
    assert_eq!(info.vpc_id.as_deref(), Some(env.get("LBC_VPC_ID")));
    let by_name = elb.describe_target_group_by_name(&info.name).await.unwrap().expect("by name");
    assert_eq!(by_name.arn, arn);

    // The same IP on two ports is two targets.
    let targets = [t("10.0.100.5", 8080), t("10.0.100.5", 9090), t("10.0.100.6", 8080)];
    elb.register_targets(&arn, &targets, None).await.unwrap();
    let mut got = elb.describe_target_health(&arn, None).await.unwrap();
    got.sort_by_key(|r| r.target);
    assert_eq!(got.iter().map(|r| r.target).collect::<Vec<_>>(), targets);
    assert!(got.iter().all(|r| r.health.state == HealthState::Initial), "{got:?}");
    assert_eq!(got[0].health.reason.as_deref(), Some("Elb.RegistrationInProgress"));

    elb.deregister_targets(&arn, &targets[1..2]).await.unwrap();
    let left: Vec<Target> = elb
        .describe_target_health(&arn, None)
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.health.state.is_registered())
        .map(|r| r.target)
        .collect();
    assert_eq!(left.len(), 2);
    assert!(!left.contains(&targets[1]));

    // Only the asked-for targets when a list is given.
    let one = elb.describe_target_health(&arn, Some(&targets[..1])).await.unwrap();
    assert_eq!(one.len(), 1);

    let cidrs = ec2.vpc_cidrs(env.get("LBC_VPC_ID")).await.unwrap();
    assert_eq!(cidrs, vec![env.get("LBC_VPC_CIDR").to_string()]);
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn errors_are_classified() {
    let Some(env) = Env::require("errors_are_classified") else { return };
    let (elb, ec2, _) = adapters(&env, 0).await;
    let missing = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/nope/0123456789abcdef";
    assert_eq!(elb.describe_target_group(missing).await.unwrap(), None, "missing target group is None, not an error");
    let e = elb.describe_target_health(missing, None).await.unwrap_err();
    assert_eq!((e.kind, e.code.as_deref()), (ErrorKind::NotFound, Some("TargetGroupNotFound")));
    assert!(e.to_string().contains("DescribeTargetHealth failed (TargetGroupNotFound)"), "{e}");
    let e = ec2.vpc_cidrs("vpc-00000000000000000").await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound, "{e}");
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn throttling_is_retried_within_bounds_and_counted() {
    let Some(env) = Env::require("throttling_is_retried_within_bounds_and_counted") else { return };
    let emu = Emulator::new(env.aws_endpoint());
    let sdk = aws::elbv2(&env).await;
    let arn = aws::create_ip_target_group(&env, &sdk, &unique("ad-thr"), 8080).await;
    let (elb, _, runner) = adapters(&env, 3).await;
    let op = OpLabels { service: "Elastic Load Balancing v2", operation: "RegisterTargets" };

    // Two throttles, then success: retried, counted, and the bucket slowed down.
    emu.fault(json!({"service": "elasticloadbalancing", "operation": "RegisterTargets", "target_group_arn": arn,
                     "code": "Throttling", "count": 2}))
        .await;
    elb.register_targets(&arn, &[t("10.0.100.9", 8080)], None).await.expect("succeeds after retries");
    assert_eq!(runner.metrics.throttled.get_or_create(&op).get(), 2);
    assert_eq!(runner.metrics.retries_sum(&op), 2.0, "one call retried twice");
    assert!(runner.throttler.current_rate("Elastic Load Balancing v2", "RegisterTargets").unwrap() < 4.0);

    // A storm longer than the retry budget fails with a classified error instead of hanging.
    let id = emu
        .fault(json!({"service": "elasticloadbalancing", "operation": "RegisterTargets", "target_group_arn": arn,
                      "code": "Throttling", "rate": 1.0}))
        .await;
    let e = elb.register_targets(&arn, &[t("10.0.100.10", 8080)], None).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Throttled);
    assert_eq!(runner.metrics.throttled.get_or_create(&op).get(), 2 + 4, "1 attempt + 3 retries");
    emu.clear_fault(&id).await;
}
