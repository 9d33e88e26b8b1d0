//! The ACM certificates `create-acm-cert` requests (gate `EnableCertificateManagement`; decisions
//! in `lbc_model::ingress::created_certificates`): before a group is planned, each member that asks
//! gets its certificate's ARN as its `certificate-arn`, once ACM has issued it; until then the group
//! waits (nothing changes in AWS) and is looked at again every [`PENDING_RETRY`]. For an Amazon-issued
//! certificate the DNS validation records are written to the hosted zones first checked to exist.
//! After a deploy, the group's certificates nobody wants any more are deleted with their records.
//!
//! Reads: through [`AcmInventory`] (one ListCertificates per minute for every group, one
//! ListTagsForCertificate per certificate, kept); the list is read again after any write of ours.

use crate::acm_inventory::AcmInventory;
use crate::context::jittered;
use crate::error::{Error, Result, Retry};
use crate::stack::FAILED_BUILD;
use lbc_aws::acm_requests::{AcmRequests, CertificateRequest, ValidationRecord};
use lbc_aws::error::ErrorKind;
use lbc_aws::route53::{DnsRecords, RecordChange};
use lbc_model::ingress::IngressKey;
use lbc_model::ingress::created_certificates::{
    Decision, OwnedCertificate, WantedCertificate, Zone, decide, made_by_a_controller, owned_resource_id, zone_for,
};
use lbc_model::lb::Tags;
use lbc_model::lb::tags::stack_tag_key;
use lbc_model::names::CLUSTER_TAG;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

/// How soon a group waiting for its certificate looks again.
pub const PENDING_RETRY: Duration = Duration::from_secs(10);

#[derive(Default)]
struct State {
    /// Certificates whose validation records were written by this process.
    records_written: HashSet<String>,
}

/// Requested certificates: the ACM and Route 53 adapters and what was read of them.
pub struct CreatedCertificates {
    acm: Arc<dyn AcmRequests>,
    inventory: Arc<AcmInventory>,
    dns: Arc<dyn DnsRecords>,
    state: tokio::sync::Mutex<State>,
}

fn blocked(reason: String, retry: Retry) -> Error {
    Error::Blocked { event: FAILED_BUILD, reason, retry }
}

impl CreatedCertificates {
    pub fn new(inventory: Arc<AcmInventory>, dns: Arc<dyn DnsRecords>) -> Self {
        Self { acm: inventory.acm().clone(), inventory, dns, state: Default::default() }
    }

    async fn tagged(&self) -> Result<Vec<(lbc_aws::acm_requests::ListedCertificate, Tags)>> {
        self.inventory.tagged().await
    }

    async fn forget_list(&self) {
        self.inventory.forget(None).await;
    }

    /// The certificates carrying the stack's tags.
    async fn owned(&self, cluster: &str, stack_id: &str) -> Result<Vec<OwnedCertificate>> {
        let stack_key = stack_tag_key(lbc_model::lb::tags::INGRESS_TAG_PREFIX);
        Ok(self
            .tagged()
            .await?
            .into_iter()
            .filter(|(_, t)| {
                t.get(CLUSTER_TAG).map(String::as_str) == Some(cluster)
                    && t.get(&stack_key).map(String::as_str) == Some(stack_id)
            })
            .map(|(c, t)| OwnedCertificate {
                arn: c.arn,
                resource_id: owned_resource_id(&t),
                status: c.status,
                names: c.names,
                created_unix: c.created_unix,
            })
            .collect())
    }

    /// ARNs of the certificates a controller requested (for any stack): discovery leaves them out.
    pub async fn controller_made(&self) -> Result<HashSet<String>> {
        Ok(self.tagged().await?.into_iter().filter(|(_, t)| made_by_a_controller(t)).map(|(c, _)| c.arn).collect())
    }

    /// Each wanted certificate's ARN by Ingress once all are issued; meanwhile requests, replaces and
    /// validates them and answers [`Error::Blocked`] (looked at again after [`PENDING_RETRY`]).
    pub async fn ensure(
        &self,
        base: &crate::context::Context,
        cluster: &str,
        stack_id: &str,
        wanted: &[WantedCertificate],
    ) -> Result<BTreeMap<IngressKey, String>> {
        let owned = self.owned(cluster, stack_id).await?;
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64);
        let d: Decision = decide(wanted, &owned, now.unwrap_or_default());
        if d.all_ready() {
            return Ok(d.ready);
        }
        let mut waiting = Vec::new();
        let wrote = !d.request.is_empty() || !d.replace.is_empty();
        for (arn, w) in &d.replace {
            base.ensure_leader()?;
            tracing::info!(certificate = %arn, resource = %w.resource_id, "requesting again a certificate not issued in time or with other names");
            self.delete_with_records(arn).await?;
        }
        for w in d.request.iter().chain(d.replace.iter().map(|(_, w)| w)) {
            base.ensure_leader()?;
            let zones = self.zones_for(w).await?;
            let request = CertificateRequest {
                domain: w.domain.clone(),
                names: w.names.clone(),
                private_ca_arn: w.private_ca_arn.clone(),
                tags: w.tags.clone(),
            };
            let arn = self.acm.request_certificate(&request).await?;
            tracing::info!(certificate = %arn, resource = %w.resource_id, names = ?w.names, "requested ACM certificate");
            if w.private_ca_arn.is_none() {
                self.write_records(&arn, &zones).await?;
            }
            waiting.push(format!("{} ({}) for Ingress {}: requested", arn, w.domain, w.ingress));
        }
        for (arn, w, status) in &d.pending {
            if w.private_ca_arn.is_none() && !self.state.lock().await.records_written.contains(arn) {
                base.ensure_leader()?;
                let zones = self.zones_for(w).await?;
                self.write_records(arn, &zones).await?;
            }
            waiting.push(format!("{arn} ({}) for Ingress {}: {status}", w.domain, w.ingress));
        }
        if wrote {
            self.forget_list().await;
        }
        Err(blocked(
            format!(
                "waiting for ACM to issue {}; the group is deployed once it has (create-acm-cert)",
                waiting.join("; ")
            ),
            Retry::After(jittered(PENDING_RETRY)),
        ))
    }

    /// Every hosted zone of the account (ListHostedZones).
    async fn zones(&self) -> Result<Vec<Zone>> {
        Ok(self.dns.hosted_zones().await?.into_iter().map(|z| Zone { id: z.id, name: z.name }).collect())
    }

    /// The hosted zone of each name of an Amazon-issued certificate, checked before the request so
    /// that no certificate waits for records nobody can write.
    async fn zones_for(&self, w: &WantedCertificate) -> Result<BTreeMap<String, Zone>> {
        if w.private_ca_arn.is_some() {
            return Ok(BTreeMap::new());
        }
        let zones = self.zones().await?;
        let mut out = BTreeMap::new();
        for name in &w.names {
            match zone_for(name, &zones) {
                Some(z) => {
                    out.insert(name.clone(), z.clone());
                }
                None => {
                    return Err(blocked(
                        format!(
                            "Ingress {}: no Route 53 hosted zone holds {name:?}, so ACM could not validate a \
                             certificate for it; create the zone, name a certificate with certificate-arn, or \
                             set acm-pca-arn for a private one",
                            w.ingress
                        ),
                        Retry::SyncPeriod,
                    ));
                }
            }
        }
        Ok(out)
    }

    /// Writes the validation records ACM has published (none yet right after the request: the next
    /// pass writes them).
    async fn write_records(&self, arn: &str, zones: &BTreeMap<String, Zone>) -> Result<()> {
        let records = self.acm.validation_records(arn).await?;
        if records.is_empty() {
            return Ok(());
        }
        for r in &records {
            let Some(zone) = zones.get(&r.domain) else { continue };
            match self.dns.change_record(&zone.id, RecordChange::Create, r).await {
                Ok(()) => {
                    tracing::info!(certificate = %arn, record = %r.name, zone = %zone.id, "wrote validation record")
                }
                // The same name validates every certificate of that domain in the account.
                Err(e) if e.kind == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.state.lock().await.records_written.insert(arn.to_string());
        Ok(())
    }

    /// Deletes a certificate, then its validation records (records another certificate still uses,
    /// or gone already, are left). A certificate still in use (`InUse`) keeps its records.
    async fn delete_with_records(&self, arn: &str) -> Result<()> {
        let records = match self.acm.validation_records(arn).await {
            Ok(r) => r,
            Err(e) if e.kind == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        self.acm.delete_certificate(arn).await?;
        if !records.is_empty() {
            let zones = self.zones().await?;
            let in_use = self.records_of_others(arn).await?;
            for r in records.iter().filter(|r| !in_use.contains(&(r.name.clone(), r.value.clone()))) {
                let Some(zone) = zone_for(&r.domain, &zones) else { continue };
                match self.dns.change_record(&zone.id, RecordChange::Delete, r).await {
                    Ok(()) | Err(lbc_aws::error::AwsError { kind: ErrorKind::NotFound, .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        self.state.lock().await.records_written.remove(arn);
        self.forget_list().await;
        tracing::info!(certificate = %arn, "deleted ACM certificate");
        Ok(())
    }

    /// Validation records of the other certificates requested by a controller: ACM gives every
    /// certificate of a domain the same record, so one still needed stays.
    async fn records_of_others(&self, arn: &str) -> Result<HashSet<(String, String)>> {
        let mut out = HashSet::new();
        for other in self.controller_made().await?.into_iter().filter(|a| a != arn) {
            match self.acm.validation_records(&other).await {
                Ok(rs) => out.extend(rs.into_iter().map(|r: ValidationRecord| (r.name, r.value))),
                Err(e) if e.kind == ErrorKind::NotFound => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(out)
    }

    /// Deletes the stack's certificates nobody wants (after the listeners stopped using them); one
    /// still in use waits for the next pass.
    pub async fn delete_leftovers(
        &self,
        base: &crate::context::Context,
        cluster: &str,
        stack_id: &str,
        wanted: &[WantedCertificate],
    ) -> Result<Vec<String>> {
        let owned = self.owned(cluster, stack_id).await?;
        let d = decide(wanted, &owned, i64::MAX);
        let mut done = Vec::new();
        for arn in &d.leftovers {
            base.ensure_leader()?;
            match self.delete_with_records(arn).await {
                Ok(()) => done.push(format!("deleted ACM certificate {arn}")),
                Err(Error::Aws(e)) if e.kind == ErrorKind::InUse => {
                    tracing::info!(certificate = %arn, error = %e, "certificate still in use; deleted on a later pass");
                }
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }
}
