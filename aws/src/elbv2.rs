//! ELBv2 operations the target-sync path needs, behind a trait so the controller can be tested
//! against [`crate::fake`]. The SDK implementation sends every call through [`CallRunner`].

use crate::call::{CallRunner, Service};
use crate::error::AwsError;
use async_trait::async_trait;
use aws_sdk_elasticloadbalancingv2 as elbv2;
use elbv2::types::TargetDescription;
use lbc_model::target::{HealthState, Target, TargetHealth};
use std::sync::Arc;

/// What the controller needs to know about a target group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TargetGroupInfo {
    pub arn: String,
    pub name: String,
    /// `ip`, `instance`, `lambda` or `alb`.
    pub target_type: String,
    pub protocol: Option<String>,
    pub port: Option<i32>,
    pub vpc_id: Option<String>,
    /// `ipv4` or `ipv6`.
    pub ip_address_type: Option<String>,
    pub health_check_interval_seconds: Option<i32>,
    pub load_balancer_arns: Vec<String>,
}

/// A registration as DescribeTargetHealth reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisteredTarget {
    pub target: Target,
    pub health: TargetHealth,
}

/// ELBv2 operations used by the controller.
#[async_trait]
pub trait ElbV2: Send + Sync {
    /// The target group with this ARN, or `None` if AWS says it does not exist.
    async fn describe_target_group(&self, arn: &str) -> Result<Option<TargetGroupInfo>, AwsError>;
    /// The target group with this name, or `None`.
    async fn describe_target_group_by_name(&self, name: &str) -> Result<Option<TargetGroupInfo>, AwsError>;
    /// Health of the given targets, or of every registered target when `targets` is `None`.
    async fn describe_target_health(
        &self,
        arn: &str,
        targets: Option<&[Target]>,
    ) -> Result<Vec<RegisteredTarget>, AwsError>;
    /// Registers targets; `availability_zone` is `Some("all")` only for IPs outside the VPC.
    async fn register_targets(
        &self,
        arn: &str,
        targets: &[Target],
        availability_zone: Option<&str>,
    ) -> Result<(), AwsError>;
    async fn deregister_targets(&self, arn: &str, targets: &[Target]) -> Result<(), AwsError>;
}

/// [`ElbV2`] over the AWS SDK.
pub struct SdkElbV2 {
    client: elbv2::Client,
    runner: Arc<CallRunner>,
}

impl SdkElbV2 {
    pub fn new(client: elbv2::Client, runner: Arc<CallRunner>) -> Self {
        Self { client, runner }
    }
}

const SVC: Service = Service::Elbv2;

fn sdk_err<E, R>(op: &'static str) -> impl FnOnce(aws_smithy_runtime_api::client::result::SdkError<E, R>) -> AwsError
where
    E: aws_smithy_types::error::metadata::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug + crate::error::HttpStatus,
{
    move |e| AwsError::from_sdk(SVC.label(), op, e)
}

fn to_info(tg: &elbv2::types::TargetGroup) -> TargetGroupInfo {
    TargetGroupInfo {
        arn: tg.target_group_arn().unwrap_or_default().to_string(),
        name: tg.target_group_name().unwrap_or_default().to_string(),
        target_type: tg.target_type().map(|t| t.as_str().to_string()).unwrap_or_default(),
        protocol: tg.protocol().map(|p| p.as_str().to_string()),
        port: tg.port(),
        vpc_id: tg.vpc_id().map(str::to_string),
        ip_address_type: tg.ip_address_type().map(|t| t.as_str().to_string()),
        health_check_interval_seconds: tg.health_check_interval_seconds(),
        load_balancer_arns: tg.load_balancer_arns().to_vec(),
    }
}

fn describe(t: &Target, az: Option<&str>) -> TargetDescription {
    TargetDescription::builder()
        .id(t.ip.to_string())
        .port(i32::from(t.port))
        .set_availability_zone(az.map(str::to_string))
        .build()
}

#[async_trait]
impl ElbV2 for SdkElbV2 {
    async fn describe_target_group(&self, arn: &str) -> Result<Option<TargetGroupInfo>, AwsError> {
        const OP: &str = "DescribeTargetGroups";
        let out = self
            .runner
            .run(SVC, OP, || async {
                self.client.describe_target_groups().target_group_arns(arn).send().await.map_err(sdk_err(OP))
            })
            .await;
        match out {
            Ok(o) => Ok(o.target_groups().first().map(to_info)),
            Err(e) if e.kind == crate::error::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn describe_target_group_by_name(&self, name: &str) -> Result<Option<TargetGroupInfo>, AwsError> {
        const OP: &str = "DescribeTargetGroups";
        let out = self
            .runner
            .run(SVC, OP, || async {
                self.client.describe_target_groups().names(name).send().await.map_err(sdk_err(OP))
            })
            .await;
        match out {
            Ok(o) => Ok(o.target_groups().first().map(to_info)),
            Err(e) if e.kind == crate::error::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn describe_target_health(
        &self,
        arn: &str,
        targets: Option<&[Target]>,
    ) -> Result<Vec<RegisteredTarget>, AwsError> {
        const OP: &str = "DescribeTargetHealth";
        let descs: Option<Vec<TargetDescription>> = targets.map(|ts| ts.iter().map(|t| describe(t, None)).collect());
        let out = self
            .runner
            .run(SVC, OP, || async {
                self.client
                    .describe_target_health()
                    .target_group_arn(arn)
                    .set_targets(descs.clone())
                    .send()
                    .await
                    .map_err(sdk_err(OP))
            })
            .await?;
        let mut res = Vec::new();
        for d in out.target_health_descriptions() {
            let Some(t) = d.target() else { continue };
            let (Some(id), Some(port)) = (t.id(), t.port()) else {
                continue;
            };
            // Instance or Lambda targets are not ours to manage in IP mode; skip what is not an IP.
            let (Ok(ip), Ok(port)) = (id.parse(), u16::try_from(port)) else {
                continue;
            };
            let h = d.target_health();
            res.push(RegisteredTarget {
                target: Target::new(ip, port),
                health: TargetHealth {
                    state: HealthState::from_aws(
                        h.and_then(|h| h.state()).map(|s| s.as_str()).unwrap_or("unavailable"),
                    ),
                    reason: h.and_then(|h| h.reason()).map(|r| r.as_str().to_string()),
                    description: h.and_then(|h| h.description()).map(str::to_string),
                },
            });
        }
        Ok(res)
    }

    async fn register_targets(
        &self,
        arn: &str,
        targets: &[Target],
        availability_zone: Option<&str>,
    ) -> Result<(), AwsError> {
        const OP: &str = "RegisterTargets";
        let descs: Vec<TargetDescription> = targets.iter().map(|t| describe(t, availability_zone)).collect();
        self.runner
            .run(SVC, OP, || async {
                self.client
                    .register_targets()
                    .target_group_arn(arn)
                    .set_targets(Some(descs.clone()))
                    .send()
                    .await
                    .map_err(sdk_err(OP))
            })
            .await
            .map(|_| ())
    }

    async fn deregister_targets(&self, arn: &str, targets: &[Target]) -> Result<(), AwsError> {
        const OP: &str = "DeregisterTargets";
        let descs: Vec<TargetDescription> = targets.iter().map(|t| describe(t, None)).collect();
        self.runner
            .run(SVC, OP, || async {
                self.client
                    .deregister_targets()
                    .target_group_arn(arn)
                    .set_targets(Some(descs.clone()))
                    .send()
                    .await
                    .map_err(sdk_err(OP))
            })
            .await
            .map(|_| ())
    }
}
