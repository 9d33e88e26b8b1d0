//! EC2 subnets, security groups and network interfaces for load balancers, behind
//! [`Networking`]. Values are [`lbc_model::lb`] types.

mod sdk;

pub use sdk::SdkNetworking;

use crate::error::AwsError;
use async_trait::async_trait;
use lbc_model::lb::subnets::RouteTable;
use lbc_model::lb::{IngressRule, NetworkInterface, Observed, SecurityGroup, Subnet, Tags};
use std::net::IpAddr;

/// DescribeNetworkInterfaces accepts 200 filter values per call in total; the `vpc-id` filter
/// takes one, which leaves 199 addresses (ALBC chunks the same way).
pub const ENI_IP_CHUNK: usize = 199;

/// Which subnets to describe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubnetQuery {
    /// Every subnet of a VPC (subnet discovery filters the result by tags and AZ).
    Vpc(String),
    /// These subnet IDs (an annotation's list); an unknown ID fails with `NotFound`.
    Ids(Vec<String>),
    /// Subnets of a VPC whose `Name` tag is one of these.
    NameTags { vpc_id: String, names: Vec<String> },
}

/// Which security groups to describe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecurityGroupQuery {
    /// These group IDs; an unknown ID fails with `NotFound`.
    Ids(Vec<String>),
    /// Those of these group IDs that exist (EC2 filter `group-id`): an unknown ID is left out, so
    /// one call answers for any number of IDs that may be missing.
    Existing(Vec<String>),
    /// Groups of a VPC whose `Name` tag *or* group name is one of these (ALBC accepts both).
    Names { vpc_id: String, names: Vec<String> },
    /// Groups carrying all of these tags, optionally within one VPC.
    Tags { vpc_id: Option<String>, tags: Tags },
    /// Groups of a VPC carrying this tag key, whatever its value (EC2 filter `tag-key`).
    TagKey { vpc_id: String, key: String },
}

/// EC2 networking used by load balancer reconciliation.
///
/// Conventions: deletes are idempotent; rule changes are idempotent (authorizing a rule that
/// exists or revoking one that does not is success); `DependencyViolation` (a group still used
/// by an ENI, e.g. of a load balancer being deleted) is `ErrorKind::InUse`: retry later.
#[async_trait]
pub trait Networking: Send + Sync {
    async fn subnets(&self, query: &SubnetQuery) -> Result<Vec<Subnet>, AwsError>;
    /// Route tables of a VPC (subnet discovery by reachability).
    async fn route_tables(&self, vpc_id: &str) -> Result<Vec<RouteTable>, AwsError>;
    /// Security groups with ingress rules flattened (one [`IngressRule`] per CIDR, IPv6 CIDR,
    /// prefix list or source group), sorted.
    async fn security_groups(&self, query: &SecurityGroupQuery) -> Result<Vec<Observed<SecurityGroup>>, AwsError>;
    /// Creates a group with its tags; returns its ID. `sg.ingress` is not applied (call
    /// [`Self::authorize_ingress`]): AWS adds an allow-all egress rule by itself.
    async fn create_security_group(&self, sg: &SecurityGroup) -> Result<String, AwsError>;
    async fn delete_security_group(&self, id: &str) -> Result<(), AwsError>;
    async fn authorize_ingress(&self, group_id: &str, rules: &[IngressRule]) -> Result<(), AwsError>;
    async fn revoke_ingress(&self, group_id: &str, rules: &[IngressRule]) -> Result<(), AwsError>;
    /// Tags EC2 resources (security groups, subnets, ...).
    async fn create_tags(&self, resource_ids: &[String], tags: &Tags) -> Result<(), AwsError>;
    async fn delete_tags(&self, resource_ids: &[String], keys: &[String]) -> Result<(), AwsError>;
    /// ENIs of a VPC holding any of these private addresses (chunks of [`ENI_IP_CHUNK`]).
    async fn network_interfaces_by_ip(&self, vpc_id: &str, ips: &[IpAddr]) -> Result<Vec<NetworkInterface>, AwsError>;
    /// ENIs by ID; unknown IDs fail with `NotFound`.
    async fn network_interfaces(&self, ids: &[String]) -> Result<Vec<NetworkInterface>, AwsError>;
}
