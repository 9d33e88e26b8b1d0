//! ACM certificates the controller requests for Ingresses (`create-acm-cert`, gate
//! `EnableCertificateManagement`), behind [`AcmRequests`]: every certificate of the region with its
//! status (ListCertificates, all statuses and key types), a certificate's tags
//! (ListTagsForCertificate: ownership is by tag, as for load balancers), its DNS validation records
//! (DescribeCertificate), RequestCertificate and DeleteCertificate. Every call goes through
//! [`CallRunner`].

use crate::call::{CallRunner, Service, all_pages};
use crate::error::{AwsError, ErrorKind};
use acm::types::{Tag, ValidationMethod};
use async_trait::async_trait;
use aws_sdk_acm as acm;
use lbc_model::lb::Tags;
use std::sync::Arc;

const SVC: Service = Service::Acm;

/// One certificate as ListCertificates summarises it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListedCertificate {
    pub arn: String,
    /// `ISSUED`, `PENDING_VALIDATION`, `FAILED`, …
    pub status: String,
    /// Domain name first, then the subject alternative names (the first 100).
    pub names: Vec<String>,
    /// `AMAZON_ISSUED`, `PRIVATE` or `IMPORTED`.
    pub kind: String,
    /// Seconds since the epoch.
    pub created_unix: Option<i64>,
}

/// A DNS record ACM checks before issuing a certificate for `domain`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ValidationRecord {
    pub domain: String,
    pub name: String,
    pub record_type: String,
    pub value: String,
}

/// What a certificate request asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateRequest {
    pub domain: String,
    /// Every name, the domain included.
    pub names: Vec<String>,
    /// A private CA (AWS Private CA): no DNS validation.
    pub private_ca_arn: Option<String>,
    pub tags: Tags,
}

/// A certificate to import (ImportCertificate), new or again in place of `arn`. Debug leaves the
/// key out.
#[derive(Clone, PartialEq, Eq)]
pub struct CertificateImport {
    /// `Some`: import again under this ARN (ACM takes no tags then).
    pub arn: Option<String>,
    pub certificate: String,
    pub chain: Option<String>,
    pub private_key: String,
    /// Set with a new import only.
    pub tags: Tags,
}

impl std::fmt::Debug for CertificateImport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateImport").field("arn", &self.arn).field("tags", &self.tags).finish()
    }
}

/// ACM operations of requested and imported certificates.
#[async_trait]
pub trait AcmRequests: Send + Sync {
    /// Every certificate of the region, any status and key type, every page.
    async fn all_certificates(&self) -> Result<Vec<ListedCertificate>, AwsError>;
    /// `NotFound` when the certificate is gone.
    async fn certificate_tags(&self, arn: &str) -> Result<Tags, AwsError>;
    /// The DNS validation records ACM has published so far (none yet right after the request).
    async fn validation_records(&self, arn: &str) -> Result<Vec<ValidationRecord>, AwsError>;
    /// RequestCertificate (DNS validation unless a private CA issues it); the new ARN.
    async fn request_certificate(&self, r: &CertificateRequest) -> Result<String, AwsError>;
    /// `InUse` while a load balancer uses it; a certificate already gone is no error.
    async fn delete_certificate(&self, arn: &str) -> Result<(), AwsError>;
    /// ImportCertificate; the certificate's ARN (the same one when imported again).
    async fn import_certificate(&self, i: &CertificateImport) -> Result<String, AwsError>;
    /// AddTagsToCertificate: sets `tags` (others are kept).
    async fn tag_certificate(&self, arn: &str, tags: &Tags) -> Result<(), AwsError>;
}

fn acm_tags(tags: &Tags) -> Vec<Tag> {
    tags.iter().filter_map(|(k, v)| Tag::builder().key(k).value(v).build().ok()).collect()
}

/// [`AcmRequests`] over the AWS SDK.
pub struct SdkAcmRequests {
    client: acm::Client,
    runner: Arc<CallRunner>,
}

impl SdkAcmRequests {
    pub fn new(client: acm::Client, runner: Arc<CallRunner>) -> Self {
        Self { client, runner }
    }
}

fn err<E, R>(op: &'static str) -> impl Fn(aws_smithy_runtime_api::client::result::SdkError<E, R>) -> AwsError
where
    E: aws_smithy_types::error::metadata::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug + crate::error::HttpStatus,
{
    move |e| AwsError::from_sdk(SVC.label(), op, e)
}

#[async_trait]
impl AcmRequests for SdkAcmRequests {
    async fn all_certificates(&self) -> Result<Vec<ListedCertificate>, AwsError> {
        const OP: &str = "ListCertificates";
        all_pages(|token| async move {
            let out = self
                .runner
                .run(SVC, OP, || async {
                    let call = self.client.list_certificates().includes(crate::acm::all_key_types()).max_items(1000);
                    call.set_next_token(token.clone()).send().await.map_err(err(OP))
                })
                .await?;
            let items = out
                .certificate_summary_list()
                .iter()
                .filter_map(|s| {
                    let mut names: Vec<String> = s.domain_name().map(str::to_string).into_iter().collect();
                    for n in s.subject_alternative_name_summaries() {
                        if !names.contains(n) {
                            names.push(n.clone());
                        }
                    }
                    Some(ListedCertificate {
                        arn: s.certificate_arn()?.to_string(),
                        status: s.status().map(|x| x.as_str().to_string()).unwrap_or_default(),
                        names,
                        kind: s.r#type().map(|t| t.as_str().to_string()).unwrap_or_default(),
                        created_unix: s.created_at().map(|t| t.secs()),
                    })
                })
                .collect();
            Ok((items, out.next_token().map(str::to_string)))
        })
        .await
    }

    async fn certificate_tags(&self, arn: &str) -> Result<Tags, AwsError> {
        const OP: &str = "ListTagsForCertificate";
        let out = self
            .runner
            .run(SVC, OP, || async {
                self.client.list_tags_for_certificate().certificate_arn(arn).send().await.map_err(err(OP))
            })
            .await?;
        Ok(out.tags().iter().map(|t| (t.key().to_string(), t.value().unwrap_or_default().to_string())).collect())
    }

    async fn validation_records(&self, arn: &str) -> Result<Vec<ValidationRecord>, AwsError> {
        const OP: &str = "DescribeCertificate";
        let out = self
            .runner
            .run(SVC, OP, || async {
                self.client.describe_certificate().certificate_arn(arn).send().await.map_err(err(OP))
            })
            .await?;
        let options = out.certificate().map(|c| c.domain_validation_options()).unwrap_or_default();
        Ok(options
            .iter()
            .filter(|o| o.validation_method() == Some(&ValidationMethod::Dns))
            .filter_map(|o| {
                let r = o.resource_record()?;
                Some(ValidationRecord {
                    domain: o.domain_name().to_string(),
                    name: r.name().to_string(),
                    record_type: r.r#type().as_str().to_string(),
                    value: r.value().to_string(),
                })
            })
            .collect())
    }

    async fn request_certificate(&self, r: &CertificateRequest) -> Result<String, AwsError> {
        const OP: &str = "RequestCertificate";
        let tags = acm_tags(&r.tags);
        let out = self
            .runner
            .run(SVC, OP, || async {
                let mut call = self
                    .client
                    .request_certificate()
                    .domain_name(&r.domain)
                    .set_subject_alternative_names(Some(r.names.clone()))
                    .set_tags(Some(tags.clone()));
                call = match &r.private_ca_arn {
                    Some(ca) => call.certificate_authority_arn(ca),
                    None => call.validation_method(ValidationMethod::Dns),
                };
                call.send().await.map_err(err(OP))
            })
            .await?;
        out.certificate_arn().map(str::to_string).ok_or_else(|| {
            AwsError::new(ErrorKind::Invalid, SVC.label(), OP, format!("no certificate ARN for {}", r.domain))
        })
    }

    async fn delete_certificate(&self, arn: &str) -> Result<(), AwsError> {
        const OP: &str = "DeleteCertificate";
        let r = self
            .runner
            .run(SVC, OP, || async {
                self.client.delete_certificate().certificate_arn(arn).send().await.map_err(err(OP))
            })
            .await;
        match r {
            Ok(_) => Ok(()),
            Err(e) if e.kind == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn import_certificate(&self, i: &CertificateImport) -> Result<String, AwsError> {
        const OP: &str = "ImportCertificate";
        let blob = |s: &str| aws_smithy_types::Blob::new(s.as_bytes().to_vec());
        let out = self
            .runner
            .run(SVC, OP, || async {
                let call = self
                    .client
                    .import_certificate()
                    .certificate(blob(&i.certificate))
                    .private_key(blob(&i.private_key))
                    .set_certificate_chain(i.chain.as_deref().map(blob))
                    .set_certificate_arn(i.arn.clone());
                let call = match &i.arn {
                    Some(_) => call,
                    None => call.set_tags(Some(acm_tags(&i.tags))),
                };
                call.send().await.map_err(err(OP))
            })
            .await?;
        out.certificate_arn().map(str::to_string).ok_or_else(|| {
            AwsError::new(
                ErrorKind::Invalid,
                SVC.label(),
                OP,
                "ImportCertificate answered no certificate ARN".to_string(),
            )
        })
    }

    async fn tag_certificate(&self, arn: &str, tags: &Tags) -> Result<(), AwsError> {
        const OP: &str = "AddTagsToCertificate";
        let tags = acm_tags(tags);
        self.runner
            .run(SVC, OP, || async {
                let call = self.client.add_tags_to_certificate().certificate_arn(arn).set_tags(Some(tags.clone()));
                call.send().await.map_err(err(OP))
            })
            .await?;
        Ok(())
    }
}
