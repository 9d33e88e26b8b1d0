//! Read-only probes of Route 53 (the validation records of requested ACM certificates). One file
//! per SDK crate: the IAM policy test (charts/tests/test_iam_policy.py) pairs each operation with
//! its crate by file.

use super::{Probes, outcome};
use crate::call::Service;
use lbc_model::doctor::permissions::Outcome;

impl Probes {
    pub(super) async fn route53(&self, op: &str) -> Outcome {
        let c: &aws_sdk_route53::Client = &self.clients.route53;
        match op {
            "ListHostedZones" => outcome(
                run!(self, Service::Route53, "ListHostedZones", c.list_hosted_zones().max_items(1).send()),
                false,
            ),
            _ => Outcome::Unverifiable("Route 53 has no DryRun".into()),
        }
    }
}
