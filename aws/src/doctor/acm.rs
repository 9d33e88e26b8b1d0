//! Read-only probes of ACM. One file per SDK crate: the IAM policy test
//! (charts/tests/test_iam_policy.py) pairs each operation with its crate by file.

use super::{ProbeTarget, Probes, outcome};
use crate::call::Service;
use lbc_model::doctor::permissions::Outcome;

impl Probes {
    pub(super) async fn acm(&self, op: &str, t: &ProbeTarget) -> Outcome {
        let c: &aws_sdk_acm::Client = &self.clients.acm;
        let cert = format!("arn:aws:acm:{}:{}:certificate/00000000-0000-0000-0000-000000000000", t.region, t.account);
        match op {
            "ListCertificates" => {
                outcome(run!(self, Service::Acm, "ListCertificates", c.list_certificates().max_items(1).send()), false)
            }
            "DescribeCertificate" => outcome(
                run!(self, Service::Acm, "DescribeCertificate", c.describe_certificate().certificate_arn(&cert).send()),
                false,
            ),
            "ListTagsForCertificate" => outcome(
                run!(
                    self,
                    Service::Acm,
                    "ListTagsForCertificate",
                    c.list_tags_for_certificate().certificate_arn(&cert).send()
                ),
                false,
            ),
            _ => Outcome::Unverifiable("ACM has no DryRun".into()),
        }
    }
}
