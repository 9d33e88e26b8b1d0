//! Read-only probes of WAFv2. One file per SDK crate: the IAM policy test
//! (charts/tests/test_iam_policy.py) pairs each operation with its crate by file.

use super::{ProbeTarget, Probes, outcome};
use crate::call::Service;
use lbc_model::doctor::permissions::Outcome;

impl Probes {
    pub(super) async fn wafv2(&self, op: &str, t: &ProbeTarget) -> Outcome {
        let c: &aws_sdk_wafv2::Client = &self.clients.wafv2;
        let lb = format!(
            "arn:aws:elasticloadbalancing:{}:{}:loadbalancer/app/lbc-doctor-probe/0123456789abcdef",
            t.region, t.account
        );
        match op {
            "ListWebACLs" => outcome(
                run!(
                    self,
                    Service::Wafv2,
                    "ListWebACLs",
                    c.list_web_acls().scope(aws_sdk_wafv2::types::Scope::Regional).limit(1).send()
                ),
                false,
            ),
            "GetWebACLForResource" => {
                let r = run!(
                    self,
                    Service::Wafv2,
                    "GetWebACLForResource",
                    c.get_web_acl_for_resource().resource_arn(&lb).send()
                );
                // WAFv2 answers a load balancer it does not know with WAFNonexistentItemException.
                match r {
                    Err(err) if err.code.as_deref() == Some("WAFNonexistentItemException") => Outcome::Allowed,
                    r => outcome(r, false),
                }
            }
            _ => Outcome::Unverifiable("WAFv2 has no DryRun".into()),
        }
    }
}
