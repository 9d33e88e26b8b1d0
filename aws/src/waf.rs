//! WAFv2 web ACL associations of load balancers (`alb.ingress.kubernetes.io/wafv2-acl-arn` /
//! `wafv2-acl-name`). Only the REGIONAL scope applies to load balancers.

use crate::call::{CallRunner, Service};
use crate::error::AwsError;
use async_trait::async_trait;
use aws_sdk_wafv2 as wafv2;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use std::sync::Arc;

/// The web ACL side of one load balancer.
#[async_trait]
pub trait WebAcls: Send + Sync {
    /// ARN of the web ACL associated with `resource_arn`, if any.
    async fn web_acl_for(&self, resource_arn: &str) -> Result<Option<String>, AwsError>;
    /// Associates (or replaces the association of) `resource_arn` with `web_acl_arn`.
    async fn associate(&self, web_acl_arn: &str, resource_arn: &str) -> Result<(), AwsError>;
    async fn disassociate(&self, resource_arn: &str) -> Result<(), AwsError>;
    /// Every REGIONAL web ACL as `(name, arn)`.
    async fn list(&self) -> Result<Vec<(String, String)>, AwsError>;
}

const SVC: Service = Service::Wafv2;

fn err<E, R>(op: &'static str) -> impl FnOnce(SdkError<E, R>) -> AwsError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug + crate::error::HttpStatus,
{
    move |e| AwsError::from_sdk(SVC.label(), op, e)
}

/// [`WebAcls`] over the AWS SDK; every call goes through [`CallRunner`].
pub struct SdkWebAcls {
    client: wafv2::Client,
    runner: Arc<CallRunner>,
}

impl SdkWebAcls {
    pub fn new(client: wafv2::Client, runner: Arc<CallRunner>) -> Self {
        Self { client, runner }
    }
}

#[async_trait]
impl WebAcls for SdkWebAcls {
    async fn web_acl_for(&self, resource_arn: &str) -> Result<Option<String>, AwsError> {
        const OP: &str = "GetWebACLForResource";
        let out = self
            .runner
            .run(SVC, OP, || async {
                self.client.get_web_acl_for_resource().resource_arn(resource_arn).send().await.map_err(err(OP))
            })
            .await?;
        Ok(out.web_acl().map(|a| a.arn().to_string()))
    }

    async fn associate(&self, web_acl_arn: &str, resource_arn: &str) -> Result<(), AwsError> {
        const OP: &str = "AssociateWebACL";
        self.runner
            .run(SVC, OP, || async {
                let req = self.client.associate_web_acl().web_acl_arn(web_acl_arn);
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

    async fn list(&self) -> Result<Vec<(String, String)>, AwsError> {
        const OP: &str = "ListWebACLs";
        let mut out = Vec::new();
        let mut marker: Option<String> = None;
        loop {
            let page = self
                .runner
                .run(SVC, OP, || async {
                    let req = self.client.list_web_acls().scope(wafv2::types::Scope::Regional).limit(100);
                    req.set_next_marker(marker.clone()).send().await.map_err(err(OP))
                })
                .await?;
            out.extend(page.web_acls().iter().filter_map(|a| Some((a.name()?.to_string(), a.arn()?.to_string()))));
            // WAFv2 returns a marker even on the last page; an empty page ends the walk.
            match page.next_marker() {
                Some(m) if !m.is_empty() && !page.web_acls().is_empty() => marker = Some(m.to_string()),
                _ => return Ok(out),
            }
        }
    }
}
