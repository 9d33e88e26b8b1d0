//! ELBv2 load balancers, listeners and target groups (the Service → NLB and Ingress → ALB paths),
//! behind [`LoadBalancers`]. Kept apart from [`crate::elbv2::ElbV2`], the lean target-sync trait
//! TargetGroupBindings use on the hot path.
//!
//! Everything is read and written as [`lbc_model::lb`] values. What AWS identifies by ARN comes
//! back as [`Observed`] with the ARN as `id`. A stack's resources are found by tags: the cluster
//! tag ([`CLUSTER_TAG`]) plus a stack tag the caller chooses ([`stack_tags`]).

mod convert;
#[cfg(test)]
mod convert_props;
mod convert_rules;
mod sdk;
mod sdk_extras;
mod sdk_rules;
mod tag_cache;

pub use sdk::SdkLoadBalancers;

use crate::error::AwsError;
use async_trait::async_trait;
use lbc_model::lb::{
    Action, Attributes, HealthCheck, LbIpAddressType, Listener, LoadBalancer, LoadBalancerStatus, Observed, Rule,
    SubnetMapping, Tags, TargetGroup, TargetGroupRef,
};
use std::collections::BTreeMap;

/// Tag every resource the controller creates carries: the cluster name.
pub const CLUSTER_TAG: &str = "elbv2.k8s.aws/cluster";
/// DescribeTags takes at most 20 resource ARNs per call.
pub const DESCRIBE_TAGS_CHUNK: usize = 20;

/// The tags a resource of one stack carries: `elbv2.k8s.aws/cluster=<cluster>` and
/// `<stack_key>=<stack_value>` (e.g. `service.k8s.aws/stack=ns/name`, `ingress.k8s.aws/stack=group`).
pub fn stack_tags(cluster: &str, stack_key: &str, stack_value: &str) -> Tags {
    Tags::from([(CLUSTER_TAG.to_string(), cluster.to_string()), (stack_key.to_string(), stack_value.to_string())])
}

/// True when `have` carries every key of `want` with the same value.
pub fn tags_match(have: &Tags, want: &Tags) -> bool {
    want.iter().all(|(k, v)| have.get(k) == Some(v))
}

/// A load balancer as found in AWS: its spec (ARN as id) and what AWS reports beyond it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundLoadBalancer {
    pub lb: Observed<LoadBalancer>,
    pub status: LoadBalancerStatus,
}

/// Target groups must be referenced by ARN at this layer: the caller resolves desired names to
/// the ARNs it created or found. A name is rejected before any call is made.
pub fn require_target_group_arns(actions: &[Action]) -> Result<(), String> {
    for a in actions {
        if let Action::Forward { target_groups, .. } = a {
            if target_groups.is_empty() {
                return Err("a forward action needs at least one target group".into());
            }
            for tg in target_groups {
                if let TargetGroupRef::Name(n) = &tg.target_group {
                    return Err(format!(
                        "target group {n:?} is referenced by name; resolve it to its ARN before creating or modifying the listener"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// ELBv2 load balancer, listener and target group management.
///
/// Conventions: read results carry tags (fetched with DescribeTags) but no attributes (one more
/// call each: `*_attributes`); listeners carry neither. Deletes are idempotent (a resource already
/// gone is success). Lookups of one resource return `None` when AWS says it does not exist.
/// Errors are classified ([`crate::error::ErrorKind`]): `AlreadyExists` for duplicate names and
/// listener ports, `InUse` for a target group a listener still forwards to, `Invalid` for
/// validation errors and bad references (subnets, security groups, certificates).
#[async_trait]
pub trait LoadBalancers: Send + Sync {
    /// Load balancers carrying all of `tags` (see [`stack_tags`]).
    async fn find_load_balancers(&self, tags: &Tags) -> Result<Vec<FoundLoadBalancer>, AwsError>;
    /// Target groups carrying all of `tags`.
    async fn find_target_groups(&self, tags: &Tags) -> Result<Vec<Observed<TargetGroup>>, AwsError>;
    async fn load_balancer(&self, arn: &str) -> Result<Option<FoundLoadBalancer>, AwsError>;
    async fn load_balancer_by_name(&self, name: &str) -> Result<Option<FoundLoadBalancer>, AwsError>;
    async fn target_group_by_name(&self, name: &str) -> Result<Option<Observed<TargetGroup>>, AwsError>;
    /// Listeners of a load balancer. TLS/HTTPS listeners carry all their certificates: the
    /// default first, then the others sorted (one DescribeListenerCertificates each).
    async fn listeners(&self, load_balancer_arn: &str) -> Result<Vec<Observed<Listener>>, AwsError>;
    /// Tags of any ELBv2 resources (load balancers, target groups, listeners), in chunks of
    /// [`DESCRIBE_TAGS_CHUNK`]. ARNs that no longer exist are left out.
    async fn describe_tags(&self, arns: &[String]) -> Result<BTreeMap<String, Tags>, AwsError>;
    async fn load_balancer_attributes(&self, arn: &str) -> Result<Attributes, AwsError>;
    async fn target_group_attributes(&self, arn: &str) -> Result<Attributes, AwsError>;
    async fn listener_attributes(&self, arn: &str) -> Result<Attributes, AwsError>;
    /// Trust store name → ARN for the `names` that exist (one DescribeTrustStores each: AWS fails
    /// the whole call when one name is unknown); unknown names are left out.
    async fn trust_store_arns(&self, names: &[String]) -> Result<BTreeMap<String, String>, AwsError>;

    /// Creates a load balancer with its subnets, security groups and tags; attributes are not
    /// applied (call [`Self::modify_load_balancer_attributes`]).
    async fn create_load_balancer(&self, lb: &LoadBalancer) -> Result<FoundLoadBalancer, AwsError>;
    async fn delete_load_balancer(&self, arn: &str) -> Result<(), AwsError>;
    async fn modify_load_balancer_attributes(&self, arn: &str, attributes: &Attributes) -> Result<(), AwsError>;
    /// `ipv6_source_nat`: NLB `EnablePrefixForIpv6SourceNat`, sent only when `Some`.
    async fn set_subnets(
        &self,
        arn: &str,
        subnets: &[SubnetMapping],
        ipv6_source_nat: Option<bool>,
    ) -> Result<(), AwsError>;
    async fn set_security_groups(&self, arn: &str, security_groups: &[String]) -> Result<(), AwsError>;
    async fn set_ip_address_type(&self, arn: &str, ip_address_type: LbIpAddressType) -> Result<(), AwsError>;
    /// ModifyIpPools: the IPv4 IPAM pool set, or removed (`None`).
    async fn modify_ip_pools(&self, arn: &str, ipv4_ipam_pool: Option<&str>) -> Result<(), AwsError>;
    /// SetSecurityGroups with the load balancer's groups and
    /// `EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic` (NLBs with security groups).
    async fn set_private_link_enforcement(
        &self,
        arn: &str,
        security_groups: &[String],
        on: bool,
    ) -> Result<(), AwsError>;
    /// The reserved minimum capacity (DescribeCapacityReservation); `None`: no reservation.
    async fn minimum_capacity(&self, arn: &str) -> Result<Option<u32>, AwsError>;
    /// ModifyCapacityReservation; `None` resets the reservation.
    async fn set_minimum_capacity(&self, arn: &str, units: Option<u32>) -> Result<(), AwsError>;

    /// Creates a target group with its health check and tags; attributes are not applied.
    async fn create_target_group(&self, tg: &TargetGroup) -> Result<Observed<TargetGroup>, AwsError>;
    async fn modify_target_group_health_check(&self, arn: &str, health_check: &HealthCheck) -> Result<(), AwsError>;
    async fn modify_target_group_attributes(&self, arn: &str, attributes: &Attributes) -> Result<(), AwsError>;
    /// Fails with `InUse` while a listener or rule forwards to it.
    async fn delete_target_group(&self, arn: &str) -> Result<(), AwsError>;
    /// The targets of a target group registered by ID (an `alb` group's load balancer ARN), as
    /// `(id, port)`; IP registrations are left out (DescribeTargetHealth).
    async fn id_targets(&self, target_group_arn: &str) -> Result<Vec<(String, u16)>, AwsError>;
    /// Registers (`register`) or deregisters targets by ID, one call.
    async fn write_id_targets(
        &self,
        target_group_arn: &str,
        targets: &[(String, u16)],
        register: bool,
    ) -> Result<(), AwsError>;

    /// Creates a listener with its tags; attributes are not applied. Target groups in actions
    /// must be [`TargetGroupRef::Arn`].
    async fn create_listener(
        &self,
        load_balancer_arn: &str,
        listener: &Listener,
    ) -> Result<Observed<Listener>, AwsError>;
    /// Sets port, protocol, certificates, SSL and ALPN policies and default actions.
    async fn modify_listener(&self, arn: &str, listener: &Listener) -> Result<(), AwsError>;
    async fn modify_listener_attributes(&self, arn: &str, attributes: &Attributes) -> Result<(), AwsError>;
    async fn delete_listener(&self, arn: &str) -> Result<(), AwsError>;
    /// Attaches non-default (SNI) certificates.
    async fn add_listener_certificates(&self, listener_arn: &str, certificates: &[String]) -> Result<(), AwsError>;
    /// Detaches non-default certificates; ones not attached are no error.
    async fn remove_listener_certificates(&self, listener_arn: &str, certificates: &[String]) -> Result<(), AwsError>;

    /// Non-default rules of a listener, with their tags.
    async fn rules(&self, listener_arn: &str) -> Result<Vec<Observed<Rule>>, AwsError>;
    /// Creates a rule with its tags. Target groups in actions must be [`TargetGroupRef::Arn`].
    async fn create_rule(&self, listener_arn: &str, rule: &Rule) -> Result<Observed<Rule>, AwsError>;
    /// Sets conditions and actions (not priority, not tags). An OIDC action without a client
    /// secret keeps the one AWS has.
    async fn modify_rule(&self, arn: &str, rule: &Rule) -> Result<(), AwsError>;
    /// Moves rules in one call; fails (`AlreadyExists`) when a priority is taken.
    async fn set_rule_priorities(&self, priorities: &[(String, u32)]) -> Result<(), AwsError>;
    async fn delete_rule(&self, arn: &str) -> Result<(), AwsError>;

    async fn add_tags(&self, arn: &str, tags: &Tags) -> Result<(), AwsError>;
    async fn remove_tags(&self, arn: &str, keys: &[String]) -> Result<(), AwsError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use lbc_model::lb::WeightedTargetGroup;

    #[test]
    fn stack_tags_select_all_pairs() {
        let want = stack_tags("c1", "service.k8s.aws/stack", "ns/web");
        let mut have = want.clone();
        have.insert("extra".into(), "x".into());
        assert!(tags_match(&have, &want));
        have.insert(CLUSTER_TAG.into(), "c2".into());
        assert!(!tags_match(&have, &want));
    }

    #[test]
    fn names_are_rejected_in_actions() {
        let fwd = |r: TargetGroupRef| Action::Forward {
            target_groups: vec![WeightedTargetGroup { target_group: r, weight: None }],
            stickiness_seconds: None,
        };
        assert!(require_target_group_arns(&[fwd(TargetGroupRef::Arn("arn:x".into()))]).is_ok());
        let e = require_target_group_arns(&[fwd(TargetGroupRef::Name("web".into()))]).unwrap_err();
        assert!(e.contains("\"web\"") && e.contains("ARN"), "{e}");
        let empty = Action::Forward { target_groups: vec![], stickiness_seconds: None };
        assert!(require_target_group_arns(&[empty]).is_err());
    }
}
