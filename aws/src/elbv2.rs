//! ELBv2 operations the target-sync path needs, behind a trait so the controller can be tested
//! against [`crate::fake`]. The SDK implementation sends every call through [`CallRunner`].

use crate::call::{CallRunner, Service};
use crate::error::AwsError;
use crate::throttle::Permit;
use async_trait::async_trait;
use aws_sdk_elasticloadbalancingv2 as elbv2;
use elbv2::types::TargetDescription;
use lbc_model::nodes::InstanceTarget;
use lbc_model::target::{HealthState, Target, TargetHealth};
use std::collections::BTreeMap;
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

impl TargetGroupInfo {
    /// The target group `arn` that CreateTargetGroup just made from `tg` (no load balancer yet).
    pub fn created(arn: &str, tg: &lbc_model::lb::TargetGroup) -> Self {
        Self {
            arn: arn.to_string(),
            name: tg.name.clone(),
            target_type: tg.target_type.clone(),
            protocol: Some(tg.protocol.as_aws().to_string()),
            port: Some(i32::from(tg.port)),
            vpc_id: Some(tg.vpc_id.clone()),
            ip_address_type: Some(
                if tg.ip_address_type == lbc_model::lb::TgIpAddressType::Ipv6 { "ipv6" } else { "ipv4" }.into(),
            ),
            health_check_interval_seconds: i32::try_from(tg.health_check.interval_seconds).ok(),
            load_balancer_arns: Vec::new(),
        }
    }
}

/// A registration as DescribeTargetHealth reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisteredTarget {
    pub target: Target,
    pub health: TargetHealth,
}

/// The target writes; one client-side bucket limits both by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetWrite {
    Register,
    Deregister,
}

impl TargetWrite {
    /// The ELBv2 operation name.
    pub fn operation(self) -> &'static str {
        match self {
            Self::Register => "RegisterTargets",
            Self::Deregister => "DeregisterTargets",
        }
    }
}

/// Most ARNs one DescribeTargetGroups call takes.
pub const DESCRIBE_TARGET_GROUPS_MAX_ARNS: usize = 20;
/// Most resource ARNs one DescribeTags call takes.
pub const DESCRIBE_TAGS_MAX_ARNS: usize = 20;

/// ELBv2 operations used by the controller.
#[async_trait]
pub trait ElbV2: Send + Sync {
    /// The target group with this ARN, or `None` if AWS says it does not exist.
    async fn describe_target_group(&self, arn: &str) -> Result<Option<TargetGroupInfo>, AwsError>;
    /// Several target groups at once (one call per [`DESCRIBE_TARGET_GROUPS_MAX_ARNS`] ARNs).
    /// AWS fails the whole call with `NotFound` when one ARN does not exist; callers fall back
    /// to [`ElbV2::describe_target_group`] for the ARN they need. The default asks one by one.
    async fn describe_target_groups(&self, arns: &[String]) -> Result<Vec<TargetGroupInfo>, AwsError> {
        let mut out = Vec::new();
        for arn in arns {
            out.extend(self.describe_target_group(arn).await?);
        }
        Ok(out)
    }
    /// The target group's tags (one DescribeTags call); `None` when AWS says it does not exist.
    /// Used to tell target groups of another cluster or stack from ours or a user's.
    async fn target_group_tags(&self, arn: &str) -> Result<Option<BTreeMap<String, String>>, AwsError>;
    /// The tags of several target groups (one DescribeTags call per [`DESCRIBE_TAGS_MAX_ARNS`]
    /// ARNs). As with [`ElbV2::describe_target_groups`], AWS fails the whole call with `NotFound`
    /// when one ARN does not exist; callers fall back to [`ElbV2::target_group_tags`] for the ARN
    /// they need. The default asks one by one.
    async fn target_groups_tags(
        &self,
        arns: &[String],
    ) -> Result<BTreeMap<String, BTreeMap<String, String>>, AwsError> {
        let mut out = BTreeMap::new();
        for arn in arns {
            if let Some(tags) = self.target_group_tags(arn).await? {
                out.insert(arn.clone(), tags);
            }
        }
        Ok(out)
    }
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

    /// Waits until the client-side throttle admits one `write` call and keeps that capacity for
    /// the caller, who can then decide what to send from data read after the wait: the
    /// `*_with` call spending the permit does not wait again, and a permit dropped unspent
    /// gives its capacity back. The default (no client-side throttle) returns at once.
    async fn wait_for_write_capacity(&self, write: TargetWrite) -> Permit {
        let _ = write;
        Permit::unlimited()
    }

    /// The client-side bucket `write` draws on, as it is now (`None`: no client-side throttle).
    fn write_bucket(&self, write: TargetWrite) -> Option<lbc_model::pacing::BucketLevel> {
        let _ = write;
        None
    }

    /// [`ElbV2::register_targets`] on capacity from [`ElbV2::wait_for_write_capacity`].
    async fn register_targets_with(
        &self,
        permit: Permit,
        arn: &str,
        targets: &[Target],
        availability_zone: Option<&str>,
    ) -> Result<(), AwsError> {
        drop(permit);
        self.register_targets(arn, targets, availability_zone).await
    }

    /// [`ElbV2::deregister_targets`] on capacity from [`ElbV2::wait_for_write_capacity`].
    async fn deregister_targets_with(&self, permit: Permit, arn: &str, targets: &[Target]) -> Result<(), AwsError> {
        drop(permit);
        self.deregister_targets(arn, targets).await
    }

    /// Every instance target of an `instance` target group, with its health (IP registrations
    /// are skipped). The default: this client cannot (a role's client; instance targets are
    /// refused with a role by the webhook).
    async fn describe_instance_targets(&self, arn: &str) -> Result<Vec<(InstanceTarget, TargetHealth)>, AwsError> {
        Err(instance_unsupported("DescribeTargetHealth", arn))
    }
    /// Registers (`register`) or deregisters instance targets, one call.
    async fn write_instance_targets(
        &self,
        arn: &str,
        targets: &[InstanceTarget],
        register: bool,
    ) -> Result<(), AwsError> {
        let _ = (targets, register);
        Err(instance_unsupported("RegisterTargets", arn))
    }
}

fn instance_unsupported(op: &'static str, arn: &str) -> AwsError {
    AwsError::new(
        crate::error::ErrorKind::Invalid,
        "elasticloadbalancing",
        op,
        format!("this ELBv2 client does not write instance targets (target group {arn})"),
    )
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

pub(crate) fn sdk_err<E, R>(
    op: &'static str,
) -> impl FnOnce(aws_smithy_runtime_api::client::result::SdkError<E, R>) -> AwsError
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

/// The health of one DescribeTargetHealth entry (no state reported: `unavailable`).
pub(crate) fn health_of(d: &elbv2::types::TargetHealthDescription) -> TargetHealth {
    let h = d.target_health();
    TargetHealth {
        state: HealthState::from_aws(h.and_then(|h| h.state()).map(|s| s.as_str()).unwrap_or("unavailable")),
        reason: h.and_then(|h| h.reason()).map(|r| r.as_str().to_string()),
        description: h.and_then(|h| h.description()).map(str::to_string),
    }
}

fn descriptions(targets: &[Target], az: Option<&str>) -> Vec<TargetDescription> {
    targets.iter().map(|t| describe(t, az)).collect()
}

fn describe(t: &Target, az: Option<&str>) -> TargetDescription {
    TargetDescription::builder()
        .id(t.ip.to_string())
        .port(i32::from(t.port))
        .set_availability_zone(az.map(str::to_string))
        .set_quic_server_id(t.quic.map(|id| id.to_string()))
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

    async fn describe_target_groups(&self, arns: &[String]) -> Result<Vec<TargetGroupInfo>, AwsError> {
        const OP: &str = "DescribeTargetGroups";
        let mut out = Vec::with_capacity(arns.len());
        for chunk in arns.chunks(DESCRIBE_TARGET_GROUPS_MAX_ARNS) {
            let page = self
                .runner
                .run(SVC, OP, || async {
                    self.client
                        .describe_target_groups()
                        .set_target_group_arns(Some(chunk.to_vec()))
                        .send()
                        .await
                        .map_err(sdk_err(OP))
                })
                .await?;
            out.extend(page.target_groups().iter().map(to_info));
        }
        Ok(out)
    }

    async fn target_group_tags(&self, arn: &str) -> Result<Option<BTreeMap<String, String>>, AwsError> {
        const OP: &str = "DescribeTags";
        let out = self
            .runner
            .run(SVC, OP, || async { self.client.describe_tags().resource_arns(arn).send().await.map_err(sdk_err(OP)) })
            .await;
        match out {
            Ok(o) => Ok(Some(
                o.tag_descriptions()
                    .iter()
                    .filter(|d| d.resource_arn() == Some(arn))
                    .flat_map(|d| d.tags())
                    .filter_map(|t| Some((t.key()?.to_string(), t.value().unwrap_or_default().to_string())))
                    .collect(),
            )),
            Err(e) if e.kind == crate::error::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn target_groups_tags(
        &self,
        arns: &[String],
    ) -> Result<BTreeMap<String, BTreeMap<String, String>>, AwsError> {
        const OP: &str = "DescribeTags";
        let mut out = BTreeMap::new();
        for chunk in arns.chunks(DESCRIBE_TAGS_MAX_ARNS) {
            let page = self
                .runner
                .run(SVC, OP, || async {
                    self.client
                        .describe_tags()
                        .set_resource_arns(Some(chunk.to_vec()))
                        .send()
                        .await
                        .map_err(sdk_err(OP))
                })
                .await?;
            for d in page.tag_descriptions() {
                let Some(arn) = d.resource_arn() else { continue };
                let tags = d
                    .tags()
                    .iter()
                    .filter_map(|t| Some((t.key()?.to_string(), t.value().unwrap_or_default().to_string())));
                out.insert(arn.to_string(), tags.collect());
            }
        }
        Ok(out)
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
            // A QUIC target's server ID is part of its identity (`Target::quic`).
            let quic = t.quic_server_id().and_then(|q| lbc_model::target::QuicServerId::parse_aws(q).ok());
            res.push(RegisteredTarget { target: Target { ip, port, quic }, health: health_of(d) });
        }
        Ok(res)
    }

    async fn register_targets(
        &self,
        arn: &str,
        targets: &[Target],
        availability_zone: Option<&str>,
    ) -> Result<(), AwsError> {
        self.register(None, arn, descriptions(targets, availability_zone)).await
    }

    async fn deregister_targets(&self, arn: &str, targets: &[Target]) -> Result<(), AwsError> {
        self.deregister(None, arn, descriptions(targets, None)).await
    }

    async fn wait_for_write_capacity(&self, write: TargetWrite) -> Permit {
        self.runner.wait_for_capacity(SVC, write.operation()).await
    }

    fn write_bucket(&self, write: TargetWrite) -> Option<lbc_model::pacing::BucketLevel> {
        self.runner.throttler.level(SVC.id(), write.operation())
    }

    async fn register_targets_with(
        &self,
        permit: Permit,
        arn: &str,
        targets: &[Target],
        availability_zone: Option<&str>,
    ) -> Result<(), AwsError> {
        self.register(Some(permit), arn, descriptions(targets, availability_zone)).await
    }

    async fn deregister_targets_with(&self, permit: Permit, arn: &str, targets: &[Target]) -> Result<(), AwsError> {
        self.deregister(Some(permit), arn, descriptions(targets, None)).await
    }

    async fn describe_instance_targets(&self, arn: &str) -> Result<Vec<(InstanceTarget, TargetHealth)>, AwsError> {
        crate::instances::describe_instance_targets(&self.client, &self.runner, arn).await
    }

    async fn write_instance_targets(
        &self,
        arn: &str,
        targets: &[InstanceTarget],
        register: bool,
    ) -> Result<(), AwsError> {
        let descs = targets.iter().map(crate::instances::description).collect();
        if register { self.register(None, arn, descs).await } else { self.deregister(None, arn, descs).await }
    }
}

impl SdkElbV2 {
    async fn register(&self, permit: Option<Permit>, arn: &str, descs: Vec<TargetDescription>) -> Result<(), AwsError> {
        const OP: &str = "RegisterTargets";
        self.runner
            .run_with(permit, SVC, OP, || async {
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

    async fn deregister(
        &self,
        permit: Option<Permit>,
        arn: &str,
        descs: Vec<TargetDescription>,
    ) -> Result<(), AwsError> {
        const OP: &str = "DeregisterTargets";
        self.runner
            .run_with(permit, SVC, OP, || async {
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

#[cfg(test)]
#[path = "elbv2_props.rs"]
mod props;
