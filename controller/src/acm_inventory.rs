//! The region's ACM certificates with their tags, read for ownership: one ListCertificates per
//! [`LIST_TTL`] and one ListTagsForCertificate per certificate, kept (the ownership tags of a
//! certificate do not change; the digest tag of an import changes only by our own write, after
//! which [`AcmInventory::forget`] drops what was kept of it). Shared by the certificates Ingresses
//! request and the ones Gateways import.

use crate::error::Result;
use lbc_aws::acm_requests::{AcmRequests, ListedCertificate};
use lbc_aws::error::ErrorKind;
use lbc_model::lb::Tags;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How long the certificate list is reused between writes.
pub const LIST_TTL: Duration = Duration::from_secs(60);

#[derive(Default)]
struct State {
    listed: Option<(Instant, Vec<ListedCertificate>)>,
    /// ARN → tags.
    tags: HashMap<String, Tags>,
}

/// ACM's certificates and their tags, as last read.
pub struct AcmInventory {
    acm: Arc<dyn AcmRequests>,
    state: tokio::sync::Mutex<State>,
}

impl AcmInventory {
    pub fn new(acm: Arc<dyn AcmRequests>) -> Self {
        Self { acm, state: Default::default() }
    }

    /// The adapter, for the writes of the callers.
    pub fn acm(&self) -> &Arc<dyn AcmRequests> {
        &self.acm
    }

    /// Every certificate with its tags (listed at most once per [`LIST_TTL`]).
    pub async fn tagged(&self) -> Result<Vec<(ListedCertificate, Tags)>> {
        self.tagged_where(|_| true).await
    }

    /// The certificates `keep` selects from the listing, with their tags: tags are read (once) for
    /// those only, so an account's other certificates cost no ListTagsForCertificate.
    pub async fn tagged_where(
        &self,
        keep: impl Fn(&ListedCertificate) -> bool,
    ) -> Result<Vec<(ListedCertificate, Tags)>> {
        let mut s = self.state.lock().await;
        let fresh = s.listed.as_ref().is_some_and(|(at, _)| at.elapsed() < LIST_TTL);
        if !fresh {
            let listed = self.acm.all_certificates().await?;
            s.listed = Some((Instant::now(), listed));
        }
        let listed = s.listed.as_ref().map(|(_, l)| l.clone()).unwrap_or_default();
        let mut out = Vec::with_capacity(listed.len());
        for c in listed.into_iter().filter(|c| keep(c)) {
            let tags = match s.tags.get(&c.arn) {
                Some(t) => t.clone(),
                None => match self.acm.certificate_tags(&c.arn).await {
                    Ok(t) => {
                        s.tags.insert(c.arn.clone(), t.clone());
                        t
                    }
                    Err(e) if e.kind == ErrorKind::NotFound => continue,
                    Err(e) => return Err(e.into()),
                },
            };
            out.push((c, tags));
        }
        // Forget only certificates gone from the listing (another caller may keep others' tags).
        let listed_arns: std::collections::HashSet<&str> =
            s.listed.as_ref().map(|(_, l)| l.iter().map(|c| c.arn.as_str()).collect()).unwrap_or_default();
        let gone: Vec<String> = s.tags.keys().filter(|a| !listed_arns.contains(a.as_str())).cloned().collect();
        for arn in gone {
            s.tags.remove(&arn);
        }
        Ok(out)
    }

    /// After a write: the next read lists again; `arn`'s tags are read again too.
    pub async fn forget(&self, arn: Option<&str>) {
        let mut s = self.state.lock().await;
        s.listed = None;
        if let Some(arn) = arn {
            s.tags.remove(arn);
        }
    }
}
