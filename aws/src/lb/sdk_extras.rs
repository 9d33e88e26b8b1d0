//! [`SdkLoadBalancers`]' settings with their own calls: PrivateLink inbound-rule enforcement and
//! the minimum capacity reservation (the trait methods in `sdk.rs` call these).

use super::sdk::{SVC, SdkLoadBalancers, err};
use crate::error::AwsError;
use aws_sdk_elasticloadbalancingv2::types as sdk;

impl SdkLoadBalancers {
    pub(super) async fn private_link_enforcement(
        &self,
        arn: &str,
        security_groups: &[String],
        on: bool,
    ) -> Result<(), AwsError> {
        const OP: &str = "SetSecurityGroups";
        let flag = if on {
            sdk::EnforceSecurityGroupInboundRulesOnPrivateLinkTrafficEnum::On
        } else {
            sdk::EnforceSecurityGroupInboundRulesOnPrivateLinkTrafficEnum::Off
        };
        self.runner
            .run(SVC, OP, || async {
                let req = self.client.set_security_groups().load_balancer_arn(arn);
                let req = req.set_security_groups(Some(security_groups.to_vec()));
                req.enforce_security_group_inbound_rules_on_private_link_traffic(flag.clone())
                    .send()
                    .await
                    .map_err(err(OP))
            })
            .await
            .map(|_| ())
    }

    pub(super) async fn capacity_reservation(&self, arn: &str) -> Result<Option<u32>, AwsError> {
        const OP: &str = "DescribeCapacityReservation";
        let out = self
            .runner
            .run(SVC, OP, || async {
                self.client.describe_capacity_reservation().load_balancer_arn(arn).send().await.map_err(err(OP))
            })
            .await?;
        let units = out.minimum_load_balancer_capacity().and_then(|m| m.capacity_units());
        Ok(units.and_then(|n| u32::try_from(n).ok()).filter(|n| *n > 0))
    }

    pub(super) async fn modify_capacity_reservation(&self, arn: &str, units: Option<u32>) -> Result<(), AwsError> {
        const OP: &str = "ModifyCapacityReservation";
        self.runner
            .run(SVC, OP, || async {
                let req = self.client.modify_capacity_reservation().load_balancer_arn(arn);
                let req = match units {
                    Some(n) => req.minimum_load_balancer_capacity(
                        sdk::MinimumLoadBalancerCapacity::builder()
                            .capacity_units(n.min(i32::MAX as u32) as i32)
                            .build(),
                    ),
                    None => req.reset_capacity_reservation(true),
                };
                req.send().await.map_err(err(OP))
            })
            .await
            .map(|_| ())
    }
}
