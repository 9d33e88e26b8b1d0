//! Route 53 for the DNS validation records of the ACM certificates the controller requests, behind
//! [`DnsRecords`]: the hosted zones (ListHostedZones, every page) and one record created or deleted
//! (ChangeResourceRecordSets, TTL 60 as ALBC). Every call goes through [`CallRunner`].

use crate::acm_requests::ValidationRecord;
use crate::call::{CallRunner, Service, all_pages};
use crate::error::{AwsError, ErrorKind};
use async_trait::async_trait;
use aws_sdk_route53 as route53;
use route53::types::{Change, ChangeAction, ChangeBatch, ResourceRecord, ResourceRecordSet, RrType};
use std::sync::Arc;

const SVC: Service = Service::Route53;
/// ALBC's TTL of validation records.
pub const VALIDATION_RECORD_TTL: i64 = 60;

/// A hosted zone: `id` as Route 53 gives it (`/hostedzone/Z…`), `name` with its trailing dot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostedZone {
    pub id: String,
    pub name: String,
}

/// Whether a record change creates or deletes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordChange {
    Create,
    Delete,
}

#[async_trait]
pub trait DnsRecords: Send + Sync {
    async fn hosted_zones(&self) -> Result<Vec<HostedZone>, AwsError>;
    /// `AlreadyExists` when creating a record that exists; `NotFound` when deleting one that
    /// does not (or holds another value).
    async fn change_record(&self, zone_id: &str, change: RecordChange, r: &ValidationRecord) -> Result<(), AwsError>;
}

/// [`DnsRecords`] over the AWS SDK.
pub struct SdkDnsRecords {
    client: route53::Client,
    runner: Arc<CallRunner>,
}

impl SdkDnsRecords {
    pub fn new(client: route53::Client, runner: Arc<CallRunner>) -> Self {
        Self { client, runner }
    }
}

fn invalid(op: &'static str, message: String) -> AwsError {
    AwsError::new(ErrorKind::Invalid, SVC.label(), op, message)
}

#[async_trait]
impl DnsRecords for SdkDnsRecords {
    async fn hosted_zones(&self) -> Result<Vec<HostedZone>, AwsError> {
        const OP: &str = "ListHostedZones";
        all_pages(|marker| async move {
            let out = self
                .runner
                .run(SVC, OP, || async {
                    let call = self.client.list_hosted_zones().set_marker(marker.clone());
                    call.send().await.map_err(|e| AwsError::from_sdk(SVC.label(), OP, e))
                })
                .await?;
            let zones = out
                .hosted_zones()
                .iter()
                .map(|z| HostedZone { id: z.id().to_string(), name: z.name().to_string() })
                .collect();
            let next = if out.is_truncated() { out.next_marker().map(str::to_string) } else { None };
            Ok((zones, next))
        })
        .await
    }

    async fn change_record(&self, zone_id: &str, change: RecordChange, r: &ValidationRecord) -> Result<(), AwsError> {
        const OP: &str = "ChangeResourceRecordSets";
        let record = ResourceRecord::builder().value(&r.value).build().map_err(|e| invalid(OP, e.to_string()))?;
        let set = ResourceRecordSet::builder()
            .name(&r.name)
            .r#type(RrType::from(r.record_type.as_str()))
            .ttl(VALIDATION_RECORD_TTL)
            .resource_records(record)
            .build()
            .map_err(|e| invalid(OP, e.to_string()))?;
        let action = match change {
            RecordChange::Create => ChangeAction::Create,
            RecordChange::Delete => ChangeAction::Delete,
        };
        let change = Change::builder()
            .action(action)
            .resource_record_set(set)
            .build()
            .map_err(|e| invalid(OP, e.to_string()))?;
        let batch = ChangeBatch::builder().changes(change).build().map_err(|e| invalid(OP, e.to_string()))?;
        let r = self
            .runner
            .run(SVC, OP, || async {
                let call =
                    self.client.change_resource_record_sets().hosted_zone_id(zone_id).change_batch(batch.clone());
                call.send().await.map_err(|e| AwsError::from_sdk(SVC.label(), OP, e))
            })
            .await;
        match r {
            Ok(_) => Ok(()),
            // Route 53 answers both "already exists" and "not found" with InvalidChangeBatch.
            Err(mut e) if e.code.as_deref() == Some("InvalidChangeBatch") => {
                let m = e.message.to_ascii_lowercase();
                if m.contains("already exists") {
                    e.kind = ErrorKind::AlreadyExists;
                } else if m.contains("not found") || m.contains("do not match") {
                    e.kind = ErrorKind::NotFound;
                }
                Err(e)
            }
            Err(e) => Err(e),
        }
    }
}
