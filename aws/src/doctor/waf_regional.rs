//! Read-only probes of WAF Classic (WAF Regional). One file per SDK crate: the IAM policy test
//! (charts/tests/test_iam_policy.py) pairs each operation with its crate by file.

use super::{ProbeTarget, Probes, outcome};
use crate::call::Service;
use lbc_model::doctor::permissions::Outcome;

impl Probes {
    pub(super) async fn waf_regional(&self, op: &str, t: &ProbeTarget) -> Outcome {
        let c: &aws_sdk_wafregional::Client = &self.clients.waf_regional;
        match op {
            "GetWebACLForResource" => {
                let lb = format!(
                    "arn:aws:elasticloadbalancing:{}:{}:loadbalancer/app/lbc-doctor-probe/0123456789abcdef",
                    t.region, t.account
                );
                let r = run!(
                    self,
                    Service::WafRegional,
                    "GetWebACLForResource",
                    c.get_web_acl_for_resource().resource_arn(&lb).send()
                );
                // WAF Regional answers a load balancer it does not know with WAFNonexistentItemException.
                match r {
                    Err(err) if err.code.as_deref() == Some("WAFNonexistentItemException") => Outcome::Allowed,
                    r => outcome(r, false),
                }
            }
            _ => Outcome::Unverifiable("WAF Regional has no DryRun".into()),
        }
    }
}
