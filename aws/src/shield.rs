//! Shield Advanced protections of load balancers (`alb.ingress.kubernetes.io/shield-advanced-protection`).

use crate::call::{CallRunner, Service};
use crate::error::{AwsError, ErrorKind};
use async_trait::async_trait;
use aws_sdk_shield as shield;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use lbc_model::lb::extras::ShieldProtection;
use std::sync::Arc;

/// The Shield side of load balancers.
#[async_trait]
pub trait Protections: Send + Sync {
    /// The account's Shield Advanced subscription state as AWS spells it (`ACTIVE`, `INACTIVE`).
    async fn subscription_state(&self) -> Result<String, AwsError>;
    /// The protection of `resource_arn`, if any.
    async fn protection_for(&self, resource_arn: &str) -> Result<Option<ShieldProtection>, AwsError>;
    /// Creates a protection named `name` for `resource_arn`; returns its ID.
    async fn create(&self, resource_arn: &str, name: &str) -> Result<String, AwsError>;
    async fn delete(&self, protection_id: &str) -> Result<(), AwsError>;
}

const SVC: Service = Service::Shield;

fn err<E, R>(op: &'static str) -> impl FnOnce(SdkError<E, R>) -> AwsError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug + crate::error::HttpStatus,
{
    move |e| AwsError::from_sdk(SVC.label(), op, e)
}

/// [`Protections`] over the AWS SDK; every call goes through [`CallRunner`].
pub struct SdkProtections {
    client: shield::Client,
    runner: Arc<CallRunner>,
}

impl SdkProtections {
    pub fn new(client: shield::Client, runner: Arc<CallRunner>) -> Self {
        Self { client, runner }
    }
}

#[async_trait]
impl Protections for SdkProtections {
    async fn subscription_state(&self) -> Result<String, AwsError> {
        const OP: &str = "GetSubscriptionState";
        let out = self
            .runner
            .run(SVC, OP, || async { self.client.get_subscription_state().send().await.map_err(err(OP)) })
            .await?;
        Ok(out.subscription_state().as_str().to_string())
    }

    async fn protection_for(&self, resource_arn: &str) -> Result<Option<ShieldProtection>, AwsError> {
        const OP: &str = "DescribeProtection";
        let out = self
            .runner
            .run(SVC, OP, || async {
                self.client.describe_protection().resource_arn(resource_arn).send().await.map_err(err(OP))
            })
            .await;
        let out = match out {
            Ok(out) => out,
            // Shield answers ResourceNotFoundException for a resource without protection.
            Err(e) if e.kind == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(out.protection().and_then(|p| {
            Some(ShieldProtection { id: p.id()?.to_string(), name: p.name().unwrap_or_default().to_string() })
        }))
    }

    async fn create(&self, resource_arn: &str, name: &str) -> Result<String, AwsError> {
        const OP: &str = "CreateProtection";
        let out = self
            .runner
            .run(SVC, OP, || async {
                self.client.create_protection().name(name).resource_arn(resource_arn).send().await.map_err(err(OP))
            })
            .await?;
        Ok(out.protection_id().unwrap_or_default().to_string())
    }

    async fn delete(&self, protection_id: &str) -> Result<(), AwsError> {
        const OP: &str = "DeleteProtection";
        self.runner
            .run(SVC, OP, || async {
                self.client.delete_protection().protection_id(protection_id).send().await.map_err(err(OP))
            })
            .await
            .map(|_| ())
    }
}
