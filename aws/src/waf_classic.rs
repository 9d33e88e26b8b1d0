//! WAF Classic (WAF Regional) web ACL associations of load balancers
//! (`alb.ingress.kubernetes.io/waf-acl-id`, formerly `web-acl-id`).

use crate::call::{CallRunner, Service};
use crate::error::AwsError;
use async_trait::async_trait;
use aws_sdk_wafregional as wafregional;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use std::sync::Arc;

/// The WAF Classic side of one load balancer.
#[async_trait]
pub trait ClassicWebAcls: Send + Sync {
    /// ID of the WAF Classic web ACL associated with `resource_arn`, if any.
    async fn web_acl_for(&self, resource_arn: &str) -> Result<Option<String>, AwsError>;
    /// Associates (or replaces the association of) `resource_arn` with web ACL `web_acl_id`.
    async fn associate(&self, web_acl_id: &str, resource_arn: &str) -> Result<(), AwsError>;
    async fn disassociate(&self, resource_arn: &str) -> Result<(), AwsError>;
}

const SVC: Service = Service::WafRegional;

fn err<E, R>(op: &'static str) -> impl FnOnce(SdkError<E, R>) -> AwsError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug + crate::error::HttpStatus,
{
    move |e| AwsError::from_sdk(SVC.label(), op, e)
}

/// [`ClassicWebAcls`] over the AWS SDK; every call goes through [`CallRunner`].
pub struct SdkClassicWebAcls {
    client: wafregional::Client,
    runner: Arc<CallRunner>,
}

impl SdkClassicWebAcls {
    pub fn new(client: wafregional::Client, runner: Arc<CallRunner>) -> Self {
        Self { client, runner }
    }
}

#[async_trait]
impl ClassicWebAcls for SdkClassicWebAcls {
    async fn web_acl_for(&self, resource_arn: &str) -> Result<Option<String>, AwsError> {
        const OP: &str = "GetWebACLForResource";
        let out = self
            .runner
            .run(SVC, OP, || async {
                self.client.get_web_acl_for_resource().resource_arn(resource_arn).send().await.map_err(err(OP))
            })
            .await?;
        Ok(out.web_acl_summary().map(|s| s.web_acl_id().to_string()).filter(|id| !id.is_empty()))
    }

    async fn associate(&self, web_acl_id: &str, resource_arn: &str) -> Result<(), AwsError> {
        const OP: &str = "AssociateWebACL";
        self.runner
            .run(SVC, OP, || async {
                let req = self.client.associate_web_acl().web_acl_id(web_acl_id);
                req.resource_arn(resource_arn).send().await.map_err(err(OP))
            })
            .await
            .map(|_| ())
    }

    async fn disassociate(&self, resource_arn: &str) -> Result<(), AwsError> {
        const OP: &str = "DisassociateWebACL";
        self.runner
            .run(SVC, OP, || async {
                self.client.disassociate_web_acl().resource_arn(resource_arn).send().await.map_err(err(OP))
            })
            .await
            .map(|_| ())
    }
}
