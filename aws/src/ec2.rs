//! EC2 lookups the controller needs, behind a trait.

use crate::call::{CallRunner, Service, all_pages};
use crate::error::{AwsError, ErrorKind};
use async_trait::async_trait;
use aws_sdk_ec2 as ec2;
use std::collections::BTreeMap;
use std::sync::Arc;

/// EC2 operations used by the controller.
#[async_trait]
pub trait Ec2: Send + Sync {
    /// All CIDR blocks (IPv4 and IPv6, primary and secondary) of a VPC.
    async fn vpc_cidrs(&self, vpc_id: &str) -> Result<Vec<String>, AwsError>;

    /// The IDs of the VPCs carrying every tag of `tags` (key → value), sorted.
    async fn vpcs_with_tags(&self, tags: &BTreeMap<String, String>) -> Result<Vec<String>, AwsError>;
}

/// [`Ec2`] over the AWS SDK.
pub struct SdkEc2 {
    client: ec2::Client,
    runner: Arc<CallRunner>,
}

impl SdkEc2 {
    pub fn new(client: ec2::Client, runner: Arc<CallRunner>) -> Self {
        Self { client, runner }
    }
}

#[async_trait]
impl Ec2 for SdkEc2 {
    async fn vpc_cidrs(&self, vpc_id: &str) -> Result<Vec<String>, AwsError> {
        const OP: &str = "DescribeVpcs";
        let out = self
            .runner
            .run(Service::Ec2, OP, || async {
                self.client
                    .describe_vpcs()
                    .vpc_ids(vpc_id)
                    .send()
                    .await
                    .map_err(|e| AwsError::from_sdk(Service::Ec2.label(), OP, e))
            })
            .await?;
        let vpc = out.vpcs().first().ok_or_else(|| {
            AwsError::new(
                ErrorKind::NotFound,
                Service::Ec2.label(),
                OP,
                format!("VPC {vpc_id} not found; check --aws-vpc-id and --aws-region"),
            )
        })?;
        let mut cidrs: Vec<String> = vpc
            .cidr_block_association_set()
            .iter()
            .filter(|a| a.cidr_block_state().and_then(|s| s.state()).map(|s| s.as_str()) != Some("disassociated"))
            .filter_map(|a| a.cidr_block().map(str::to_string))
            .collect();
        if cidrs.is_empty() {
            cidrs.extend(vpc.cidr_block().map(str::to_string));
        }
        cidrs.extend(
            vpc.ipv6_cidr_block_association_set().iter().filter_map(|a| a.ipv6_cidr_block().map(str::to_string)),
        );
        Ok(cidrs)
    }

    async fn vpcs_with_tags(&self, tags: &BTreeMap<String, String>) -> Result<Vec<String>, AwsError> {
        const OP: &str = "DescribeVpcs";
        let filters: Vec<ec2::types::Filter> = tags
            .iter()
            .map(|(k, v)| ec2::types::Filter::builder().name(format!("tag:{k}")).values(v).build())
            .collect();
        let filters = &filters;
        let mut ids = all_pages(|token| async move {
            let page = self
                .runner
                .run(Service::Ec2, OP, || async {
                    self.client
                        .describe_vpcs()
                        .set_filters(Some(filters.clone()))
                        .set_next_token(token.clone())
                        .send()
                        .await
                        .map_err(|e| AwsError::from_sdk(Service::Ec2.label(), OP, e))
                })
                .await?;
            let ids = page.vpcs().iter().filter_map(|v| v.vpc_id().map(str::to_string)).collect();
            Ok((ids, page.next_token().map(str::to_string)))
        })
        .await?;
        ids.sort();
        ids.dedup();
        Ok(ids)
    }
}
