//! Read-only probes of Shield. One file per SDK crate: the IAM policy test
//! (charts/tests/test_iam_policy.py) pairs each operation with its crate by file.

use super::{ProbeTarget, Probes, outcome};
use crate::call::Service;
use lbc_model::doctor::permissions::Outcome;

impl Probes {
    pub(super) async fn shield(&self, op: &str, t: &ProbeTarget) -> Outcome {
        let c: &aws_sdk_shield::Client = &self.clients.shield;
        match op {
            "GetSubscriptionState" => {
                outcome(run!(self, Service::Shield, "GetSubscriptionState", c.get_subscription_state().send()), false)
            }
            "DescribeProtection" => {
                let lb = format!(
                    "arn:aws:elasticloadbalancing:{}:{}:loadbalancer/app/lbc-doctor-probe/0123456789abcdef",
                    t.region, t.account
                );
                let r =
                    run!(self, Service::Shield, "DescribeProtection", c.describe_protection().resource_arn(&lb).send());
                // A load balancer without protection is ResourceNotFoundException: the action was allowed.
                match r {
                    Err(err) if err.code.as_deref() == Some("ResourceNotFoundException") => Outcome::Allowed,
                    r => outcome(r, false),
                }
            }
            _ => Outcome::Unverifiable("Shield has no DryRun".into()),
        }
    }
}
