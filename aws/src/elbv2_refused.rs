//! An [`ElbV2`] that never calls AWS: every operation fails with the reason it was refused. Given to
//! a binding whose access was refused before any call (the strict tenancy mode refusing the role its
//! `spec.iamRoleArnToAssume` names), so the binding's usual error path reports the refusal on it and
//! no credentials of that role are ever requested.

use crate::elbv2::{ElbV2, RegisteredTarget, TargetGroupInfo};
use crate::error::{AwsError, ErrorKind, REFUSED_BY_TENANCY_POLICY};
use async_trait::async_trait;
use lbc_model::nodes::InstanceTarget;
use lbc_model::target::{Target, TargetHealth};
use std::collections::BTreeMap;

const SERVICE: &str = "Elastic Load Balancing v2";

pub struct RefusedElbV2 {
    reason: String,
}

impl RefusedElbV2 {
    pub fn new(reason: impl Into<String>) -> Self {
        Self { reason: reason.into() }
    }

    fn refuse<T>(&self, operation: &'static str) -> Result<T, AwsError> {
        let mut e = AwsError::new(ErrorKind::AccessDenied, SERVICE, operation, self.reason.clone());
        e.code = Some(REFUSED_BY_TENANCY_POLICY.into());
        Err(e)
    }
}

#[async_trait]
impl ElbV2 for RefusedElbV2 {
    async fn describe_target_group(&self, _arn: &str) -> Result<Option<TargetGroupInfo>, AwsError> {
        self.refuse("DescribeTargetGroups")
    }

    async fn target_group_tags(&self, _arn: &str) -> Result<Option<BTreeMap<String, String>>, AwsError> {
        self.refuse("DescribeTags")
    }

    async fn describe_target_group_by_name(&self, _name: &str) -> Result<Option<TargetGroupInfo>, AwsError> {
        self.refuse("DescribeTargetGroups")
    }

    async fn describe_target_health(
        &self,
        _arn: &str,
        _targets: Option<&[Target]>,
    ) -> Result<Vec<RegisteredTarget>, AwsError> {
        self.refuse("DescribeTargetHealth")
    }

    async fn register_targets(
        &self,
        _arn: &str,
        _targets: &[Target],
        _availability_zone: Option<&str>,
    ) -> Result<(), AwsError> {
        self.refuse("RegisterTargets")
    }

    async fn deregister_targets(&self, _arn: &str, _targets: &[Target]) -> Result<(), AwsError> {
        self.refuse("DeregisterTargets")
    }

    async fn describe_instance_targets(&self, _arn: &str) -> Result<Vec<(InstanceTarget, TargetHealth)>, AwsError> {
        self.refuse("DescribeTargetHealth")
    }

    async fn write_instance_targets(
        &self,
        _arn: &str,
        _targets: &[InstanceTarget],
        register: bool,
    ) -> Result<(), AwsError> {
        self.refuse(if register { "RegisterTargets" } else { "DeregisterTargets" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_operation_fails_with_the_reason_and_no_retry() {
        let r = RefusedElbV2::new("TargetGroupBinding a/b sets spec.iamRoleArnToAssume=x, not granted");
        let arn = "arn:aws:elasticloadbalancing:us-east-1:111122223333:targetgroup/t/1";
        let errors = [
            r.describe_target_group(arn).await.unwrap_err(),
            r.describe_target_groups(&[arn.into()]).await.unwrap_err(),
            r.target_group_tags(arn).await.unwrap_err(),
            r.target_groups_tags(&[arn.into()]).await.unwrap_err(),
            r.describe_target_group_by_name("t").await.unwrap_err(),
            r.describe_target_health(arn, None).await.unwrap_err(),
            r.register_targets(arn, &[], None).await.unwrap_err(),
            r.deregister_targets(arn, &[]).await.unwrap_err(),
            r.describe_instance_targets(arn).await.unwrap_err(),
            r.write_instance_targets(arn, &[], true).await.unwrap_err(),
        ];
        for e in errors {
            assert!(e.message.contains("not granted"), "{e}");
            assert!(!e.to_string().contains("IAM policy"), "not blamed on the IAM policy: {e}");
            assert!(e.to_string().contains("(RefusedByTenancyPolicy)"), "{e}");
            assert!(!e.kind.is_retryable(), "a refusal is not retried at once: {e:?}");
        }
    }
}
