//! The ACM certificates imported from the Secrets of Gateway listeners (decisions in
//! `lbc_model::gateway::certificates`): before a Gateway is deployed, each Secret its HTTPS
//! listeners use is imported (tagged as the Gateway stack's) or imported again in place when its
//! content changed; after a deploy, the imports of the stack that no listener uses any more are
//! deleted, and all of them after the Gateway's ALB is gone.
//!
//! Reads through [`AcmInventory`]: one ListCertificates per minute at most for every Gateway, one
//! ListTagsForCertificate per imported certificate, kept. A Gateway whose certificates are in ACM as
//! its Secrets hold them costs no call beyond that; with `--enable-gateway-certificate-secrets` off
//! none of this runs (imports made while it was on stay until it is on again).

use crate::acm_inventory::AcmInventory;
use crate::context::Context;
use crate::error::{Error, Result, Retry};
use crate::stack::FAILED_BUILD;
use lbc_aws::acm_requests::CertificateImport;
use lbc_aws::error::ErrorKind;
use lbc_model::gateway::alb_gateway::ALB_GATEWAY_TAG_PREFIX;
use lbc_model::gateway::certificates::{ImportableCertificate, OwnedImport, decide, digest_tag_key, tags};
use lbc_model::lb::Tags;
use std::collections::BTreeMap;
use std::sync::Arc;

const PREFIX: &str = ALB_GATEWAY_TAG_PREFIX;
const IMPORTED: &str = "IMPORTED";

/// ImportCertificate's request for `c`: new (`arn` None, with `tags`) or again in place.
fn import_of(c: &ImportableCertificate, arn: Option<&String>, tags: Tags) -> CertificateImport {
    CertificateImport {
        arn: arn.cloned(),
        certificate: c.certificate.clone(),
        chain: c.chain.clone(),
        private_key: c.private_key.clone(),
        tags,
    }
}

/// Imported listener certificates of every Gateway.
pub struct ImportedCertificates {
    inventory: Arc<AcmInventory>,
}

impl ImportedCertificates {
    pub fn new(inventory: Arc<AcmInventory>) -> Self {
        Self { inventory }
    }

    /// The imports carrying the stack's tags.
    async fn owned(&self, cluster: &str, stack_id: &str) -> Result<Vec<OwnedImport>> {
        Ok(self
            .inventory
            .tagged_where(|c| c.kind == IMPORTED)
            .await?
            .into_iter()
            .filter_map(|(c, t)| OwnedImport::from_tags(PREFIX, cluster, stack_id, &c.arn, &t))
            .collect())
    }

    /// The ARN of each wanted Secret (`namespace/name`), importing what is missing or changed.
    pub async fn ensure(
        &self,
        base: &Context,
        cluster: &str,
        stack_id: &str,
        wanted: &[ImportableCertificate],
    ) -> Result<BTreeMap<String, String>> {
        if wanted.is_empty() {
            return Ok(BTreeMap::new());
        }
        let d = decide(wanted, &self.owned(cluster, stack_id).await?);
        let mut ready = d.ready;
        for c in &d.import {
            base.ensure_leader()?;
            let arn = self.import(stack_id, c, &import_of(c, None, tags(PREFIX, cluster, stack_id, c))).await?;
            tracing::info!(certificate = %arn, secret = %c.secret(), gateway = %stack_id, "imported the Secret into ACM");
            ready.insert(c.secret(), arn);
        }
        for (arn, c) in &d.reimport {
            base.ensure_leader()?;
            self.import(stack_id, c, &import_of(c, Some(arn), Tags::new())).await?;
            // ACM takes no tags with a re-import: the digest follows it. Interrupted between the
            // two, the next pass imports the same content again, which is harmless.
            let digest = Tags::from([(digest_tag_key(PREFIX), c.digest.clone())]);
            self.inventory.acm().tag_certificate(arn, &digest).await?;
            self.inventory.forget(Some(arn)).await;
            tracing::info!(certificate = %arn, secret = %c.secret(), gateway = %stack_id, "imported the changed Secret again into ACM");
        }
        Ok(ready)
    }

    async fn import(&self, stack_id: &str, c: &ImportableCertificate, i: &CertificateImport) -> Result<String> {
        let r = self.inventory.acm().import_certificate(i).await;
        self.inventory.forget(i.arn.as_deref()).await;
        match r {
            Ok(arn) => Ok(arn),
            // The Secret's content: changing it wakes the Gateway (its watch), so no timed retry.
            Err(e) if e.kind == ErrorKind::Invalid => Err(Error::Blocked {
                event: FAILED_BUILD,
                reason: format!(
                    "Gateway {stack_id}: ACM refused the certificate of Secret {} ({e}); put a certificate and its \
                     unencrypted private key that ACM imports in the Secret",
                    c.secret()
                ),
                retry: Retry::SyncPeriod,
            }),
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes the stack's imports no wanted Secret uses (all of them with `wanted` empty): the
    /// ARNs deleted, and the ones ACM still reports in use (deleted on a later pass).
    pub async fn delete_leftovers(
        &self,
        base: &Context,
        cluster: &str,
        stack_id: &str,
        wanted: &[ImportableCertificate],
    ) -> Result<(Vec<String>, Vec<String>)> {
        let d = decide(wanted, &self.owned(cluster, stack_id).await?);
        let (mut deleted, mut in_use) = (Vec::new(), Vec::new());
        for arn in d.leftovers {
            base.ensure_leader()?;
            let r = self.inventory.acm().delete_certificate(&arn).await;
            self.inventory.forget(Some(&arn)).await;
            match r {
                Ok(()) => {
                    tracing::info!(certificate = %arn, gateway = %stack_id, "deleted an imported certificate no listener uses");
                    deleted.push(arn);
                }
                Err(e) if e.kind == ErrorKind::InUse => {
                    tracing::info!(certificate = %arn, error = %e, "imported certificate still in use; deleted on a later pass");
                    in_use.push(arn);
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok((deleted, in_use))
    }
}
