//! Read-only probes of ELBv2. One file per SDK crate: the IAM policy test
//! (charts/tests/test_iam_policy.py) pairs each operation with its crate by file.

use super::{ProbeTarget, Probes, outcome};
use crate::call::Service;
use lbc_model::doctor::permissions::Outcome;

impl Probes {
    pub(super) async fn elbv2(&self, op: &str, t: &ProbeTarget) -> Outcome {
        let c: &aws_sdk_elasticloadbalancingv2::Client = &self.clients.elbv2;
        let arn = |kind: &str| format!("arn:aws:elasticloadbalancing:{}:{}:{kind}", t.region, t.account);
        let tg = arn("targetgroup/lbc-doctor-probe/0123456789abcdef");
        let lb = arn("loadbalancer/net/lbc-doctor-probe/0123456789abcdef");
        let listener = arn("listener/net/lbc-doctor-probe/0123456789abcdef/0123456789abcdef");
        macro_rules! read {
            ($name:literal, $call:expr) => {
                outcome(run!(self, Service::Elbv2, $name, $call), false)
            };
        }
        match op {
            "DescribeTargetGroups" => read!("DescribeTargetGroups", c.describe_target_groups().page_size(1).send()),
            "DescribeTargetHealth" => {
                read!("DescribeTargetHealth", c.describe_target_health().target_group_arn(&tg).send())
            }
            "DescribeLoadBalancers" => read!("DescribeLoadBalancers", c.describe_load_balancers().page_size(1).send()),
            "DescribeLoadBalancerAttributes" => {
                read!(
                    "DescribeLoadBalancerAttributes",
                    c.describe_load_balancer_attributes().load_balancer_arn(&lb).send()
                )
            }
            "DescribeTargetGroupAttributes" => {
                read!(
                    "DescribeTargetGroupAttributes",
                    c.describe_target_group_attributes().target_group_arn(&tg).send()
                )
            }
            "DescribeListeners" => read!("DescribeListeners", c.describe_listeners().load_balancer_arn(&lb).send()),
            "DescribeListenerAttributes" => {
                read!("DescribeListenerAttributes", c.describe_listener_attributes().listener_arn(&listener).send())
            }
            "DescribeListenerCertificates" => {
                read!("DescribeListenerCertificates", c.describe_listener_certificates().listener_arn(&listener).send())
            }
            "DescribeRules" => read!("DescribeRules", c.describe_rules().listener_arn(&listener).send()),
            "DescribeTags" => read!("DescribeTags", c.describe_tags().resource_arns(&tg).send()),
            "DescribeCapacityReservation" => {
                read!("DescribeCapacityReservation", c.describe_capacity_reservation().load_balancer_arn(&lb).send())
            }
            _ => Outcome::Unverifiable("ELBv2 has no DryRun".into()),
        }
    }
}
