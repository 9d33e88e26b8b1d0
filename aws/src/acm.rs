//! ACM reads for Ingress certificate discovery, behind [`Acm`].
//!
//! Which calls: ListCertificates with `CertificateStatuses=[ISSUED]` and every key type
//! (ListCertificates returns only RSA_1024 and RSA_2048 certificates unless `Includes.keyTypes`
//! names the others; ALBC missed ECDSA certificates for that reason), paginated. Its summaries
//! carry the first 100 subject alternative names of each certificate, which is enough for nearly
//! every certificate, so discovery costs one call per 1,000 certificates instead of ALBC's one
//! DescribeCertificate per certificate. DescribeCertificate is called only for a certificate
//! whose summary says it has more names (`HasAdditionalSubjectAlternativeNames`) or carries no
//! name summary at all (older emulators). Every call goes through [`CallRunner`].

use crate::call::{CallRunner, Service, all_pages};
use crate::error::{AwsError, ErrorKind};
use acm::types::{CertificateStatus, Filters, KeyAlgorithm};
use async_trait::async_trait;
use aws_sdk_acm as acm;
use std::sync::Arc;

const SVC: Service = Service::Acm;
/// ListCertificates' largest page.
const PAGE_SIZE: i32 = 1000;

/// One certificate as ACM reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AcmCertificateInfo {
    pub arn: String,
    /// Domain name first, then the subject alternative names known so far, unique.
    pub names: Vec<String>,
    /// `false`: ListCertificates did not give every name; [`Acm::describe_certificate`] does.
    pub complete: bool,
    /// `IMPORTED`, `AMAZON_ISSUED` or `PRIVATE` (empty when not reported).
    pub kind: String,
    /// The private CA that issued it (`CertificateAuthorityArn`): only DescribeCertificate says;
    /// `None` from a listing.
    pub issuer: Option<String>,
}

/// ACM operations used by certificate discovery.
#[async_trait]
pub trait Acm: Send + Sync {
    /// Every ISSUED certificate of the region, all key types, every page.
    async fn issued_certificates(&self) -> Result<Vec<AcmCertificateInfo>, AwsError>;
    /// One certificate with all its names (`complete` is true); `NotFound` when it is gone.
    async fn describe_certificate(&self, arn: &str) -> Result<AcmCertificateInfo, AwsError>;
}

/// [`Acm`] over the AWS SDK.
pub struct SdkAcm {
    client: acm::Client,
    runner: Arc<CallRunner>,
}

impl SdkAcm {
    pub fn new(client: acm::Client, runner: Arc<CallRunner>) -> Self {
        Self { client, runner }
    }
}

fn names(domain: Option<&str>, sans: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in domain.into_iter().chain(sans.iter().map(String::as_str)) {
        if !n.is_empty() && !out.iter().any(|o| o == n) {
            out.push(n.to_string());
        }
    }
    out
}

/// Every key type: ListCertificates lists only RSA_1024 and RSA_2048 certificates otherwise.
pub(crate) fn all_key_types() -> Filters {
    [
        KeyAlgorithm::Rsa1024,
        KeyAlgorithm::Rsa2048,
        KeyAlgorithm::Rsa3072,
        KeyAlgorithm::Rsa4096,
        KeyAlgorithm::EcPrime256v1,
        KeyAlgorithm::EcSecp384r1,
        KeyAlgorithm::EcSecp521r1,
    ]
    .into_iter()
    .fold(Filters::builder(), |b, k| b.key_types(k))
    .build()
}

#[async_trait]
impl Acm for SdkAcm {
    async fn issued_certificates(&self) -> Result<Vec<AcmCertificateInfo>, AwsError> {
        const OP: &str = "ListCertificates";
        all_pages(|token| async move {
            let out = self
                .runner
                .run(SVC, OP, || async {
                    self.client
                        .list_certificates()
                        .certificate_statuses(CertificateStatus::Issued)
                        .includes(all_key_types())
                        .max_items(PAGE_SIZE)
                        .set_next_token(token.clone())
                        .send()
                        .await
                        .map_err(|e| AwsError::from_sdk(SVC.label(), OP, e))
                })
                .await?;
            let items = out
                .certificate_summary_list()
                .iter()
                .filter_map(|s| {
                    let arn = s.certificate_arn()?.to_string();
                    let complete = s.subject_alternative_name_summaries.is_some()
                        && !s.has_additional_subject_alternative_names().unwrap_or(false);
                    Some(AcmCertificateInfo {
                        arn,
                        names: names(s.domain_name(), s.subject_alternative_name_summaries()),
                        complete,
                        kind: s.r#type().map(|t| t.as_str().to_string()).unwrap_or_default(),
                        issuer: None,
                    })
                })
                .collect();
            Ok((items, out.next_token().map(str::to_string)))
        })
        .await
    }

    async fn describe_certificate(&self, arn: &str) -> Result<AcmCertificateInfo, AwsError> {
        const OP: &str = "DescribeCertificate";
        let out = self
            .runner
            .run(SVC, OP, || async {
                self.client
                    .describe_certificate()
                    .certificate_arn(arn)
                    .send()
                    .await
                    .map_err(|e| AwsError::from_sdk(SVC.label(), OP, e))
            })
            .await?;
        let c = out.certificate().ok_or_else(|| {
            AwsError::new(ErrorKind::NotFound, SVC.label(), OP, format!("certificate {arn} not in the answer"))
        })?;
        Ok(AcmCertificateInfo {
            arn: arn.to_string(),
            names: names(c.domain_name(), c.subject_alternative_names()),
            complete: true,
            kind: c.r#type().map(|t| t.as_str().to_string()).unwrap_or_default(),
            issuer: c.certificate_authority_arn().map(str::to_string),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_put_the_domain_first_and_drop_duplicates() {
        let sans = vec!["a.test".to_string(), "*.a.test".to_string(), "a.test".to_string(), String::new()];
        assert_eq!(names(Some("a.test"), &sans), ["a.test", "*.a.test"]);
        assert_eq!(names(None, &[]), Vec::<String>::new());
    }

    #[test]
    fn every_key_type_is_asked_for() {
        assert_eq!(all_key_types().key_types().len(), 7);
    }
}
