//! ACM certificate discovery for the Ingress groups: the ISSUED certificates of the region and
//! their names, read through [`Acm`] and shared by every group, cached briefly; the matching is
//! `lbc_model::ingress::certificates::discover`.
//!
//! Caching, as ALBC (`cert_discovery.go`): the list is reused for [`LIST_TTL`] (one minute), so
//! a certificate issued or imported now is found by the first pass after that; names fetched with
//! DescribeCertificate (only for certificates whose listing lacks some) are kept 5 minutes for
//! imported certificates (re-importing can change them) and 10 hours for the others. A pass that
//! needs no discovery makes no ACM call.
//!
//! `--allowed-certificate-authority-arns` (ALBC's filter): only private certificates of those CAs
//! are discovered. The issuing CA is known only from DescribeCertificate, so each private
//! certificate is described once (kept as its names are); certificates of another kind are left
//! out without a call.

use crate::context::jittered;
use crate::error::{Error, Retry};
use crate::stack::FAILED_BUILD;
use lbc_aws::acm::Acm;
use lbc_aws::error::{AwsError, ErrorKind};
use lbc_model::ingress::AcmCertificate;
use lbc_model::ingress::certificates::{discover, issuer_allowed};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How long a certificate list is reused.
pub const LIST_TTL: Duration = Duration::from_secs(60);
const IMPORTED_NAMES_TTL: Duration = Duration::from_secs(5 * 60);
const ISSUED_NAMES_TTL: Duration = Duration::from_secs(10 * 3600);

#[derive(Default)]
struct State {
    listed: Option<(Instant, Arc<Vec<AcmCertificate>>)>,
    /// ARN → (expiry, names, issuing CA) from DescribeCertificate.
    described: HashMap<String, (Instant, Vec<String>, Option<String>)>,
}

/// The region's ISSUED ACM certificates, cached.
pub struct CertificateCatalog {
    acm: Arc<dyn Acm>,
    /// `--allowed-certificate-authority-arns` (empty: every certificate).
    allowed_authorities: Vec<String>,
    state: tokio::sync::Mutex<State>,
}

impl CertificateCatalog {
    pub fn new(acm: Arc<dyn Acm>, allowed_authorities: Vec<String>) -> Self {
        Self { acm, allowed_authorities, state: Default::default() }
    }

    /// Every ISSUED certificate with all its names (one listing at a time; callers meanwhile wait
    /// and share it).
    pub async fn certificates(&self) -> Result<Arc<Vec<AcmCertificate>>, AwsError> {
        let mut s = self.state.lock().await;
        let now = Instant::now();
        if let Some((at, certs)) = &s.listed
            && now.duration_since(*at) < LIST_TTL
        {
            return Ok(certs.clone());
        }
        let listed = self.acm.issued_certificates().await?;
        s.described.retain(|_, (expiry, _, _)| *expiry > now);
        let mut out = Vec::with_capacity(listed.len());
        let filtering = !self.allowed_authorities.is_empty();
        for c in listed {
            // No issuing CA: never allowed by a filter, and known without a call.
            if filtering && !c.kind.is_empty() && c.kind != "PRIVATE" {
                continue;
            }
            let (names, issuer) = if c.complete && !filtering {
                (c.names, None)
            } else if let Some((_, names, issuer)) = s.described.get(&c.arn) {
                (names.clone(), issuer.clone())
            } else {
                match self.acm.describe_certificate(&c.arn).await {
                    Ok(d) => {
                        let ttl = if d.kind == "IMPORTED" { IMPORTED_NAMES_TTL } else { ISSUED_NAMES_TTL };
                        s.described.insert(c.arn.clone(), (now + ttl, d.names.clone(), d.issuer.clone()));
                        (d.names, d.issuer)
                    }
                    // Deleted since it was listed.
                    Err(e) if e.kind == ErrorKind::NotFound => continue,
                    Err(e) => return Err(e),
                }
            };
            if issuer_allowed(&self.allowed_authorities, issuer.as_deref()) {
                out.push(AcmCertificate { arn: c.arn, names });
            }
        }
        let out = Arc::new(out);
        s.listed = Some((now, out.clone()));
        Ok(out)
    }

    /// The certificates covering `hosts` (sorted ARNs); no host: no ACM call. [`Error::Blocked`]
    /// (looked at again once the list has expired) when a host has no certificate, or when ACM
    /// refuses in a way retrying will not fix (e.g. access denied); [`Error::Aws`] when a retry
    /// may help (throttling, 5xx).
    /// `exclude`: ARNs never chosen (the certificates a controller requested, with
    /// `EnableCertificateManagement`).
    pub async fn discover(
        &self,
        hosts: &[String],
        exclude: Option<&std::collections::HashSet<String>>,
    ) -> Result<Vec<String>, Error> {
        if hosts.iter().all(String::is_empty) {
            return Ok(Vec::new());
        }
        let blocked = |reason: String| Error::Blocked {
            event: FAILED_BUILD,
            reason,
            // A certificate is found within a minute of being issued: look again then.
            retry: Retry::After(jittered(LIST_TTL)),
        };
        match self.certificates().await {
            Ok(certs) => {
                let kept: Vec<AcmCertificate> = match exclude {
                    Some(x) => certs.iter().filter(|c| !x.contains(&c.arn)).cloned().collect(),
                    None => certs.to_vec(),
                };
                discover(hosts, &kept).map_err(|missing| blocked(missing.to_string()))
            }
            Err(e) if e.kind.retry_later() => Err(e.into()),
            Err(e) => Err(blocked(format!("its ACM certificates cannot be discovered: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lbc_aws::fake_acm::FakeAcm;

    // Paused tokio time: the production TTLs, with no real waiting.
    fn catalog(fake: &Arc<FakeAcm>) -> CertificateCatalog {
        CertificateCatalog::new(fake.clone(), Vec::new())
    }

    /// The reason of a blocked discovery; panics on anything else.
    fn blocked(r: Result<Vec<String>, Error>) -> String {
        match r {
            Err(Error::Blocked { event, reason, retry: Retry::After(d) }) => {
                assert_eq!(event, FAILED_BUILD);
                assert!(d >= LIST_TTL && d <= LIST_TTL * 3 / 2, "looked at again after the list expires, not {d:?}");
                reason
            }
            other => panic!("expected a blocked discovery, got {other:?}"),
        }
    }

    fn hosts(h: &[&str]) -> Vec<String> {
        h.iter().map(|h| h.to_string()).collect()
    }

    fn calls(fake: &FakeAcm) -> Vec<(&'static str, String)> {
        fake.log.lock().unwrap().calls().to_vec()
    }

    fn ops(fake: &FakeAcm) -> Vec<&'static str> {
        calls(fake).into_iter().map(|(op, _)| op).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn one_listing_per_minute_whatever_the_number_of_lookups() {
        let fake = Arc::new(FakeAcm::default());
        fake.add("arn:wild", &["*.example.test"], "IMPORTED");
        fake.add("arn:api", &["api.other.test"], "AMAZON_ISSUED");
        let cat = catalog(&fake);
        for _ in 0..5 {
            let got = cat.discover(&hosts(&["api.other.test", "a.example.test"]), None).await.unwrap();
            assert_eq!(got, ["arn:api", "arn:wild"]);
        }
        assert_eq!(ops(&fake), ["ListCertificates"]);
        // A certificate issued now is found once the list has expired (a minute in production).
        fake.add("arn:new", &["new.test"], "AMAZON_ISSUED");
        let reason = blocked(cat.discover(&hosts(&["new.test"]), None).await);
        assert!(reason.contains("new.test"), "{reason}");
        tokio::time::sleep(LIST_TTL - Duration::from_secs(1)).await;
        blocked(cat.discover(&hosts(&["new.test"]), None).await);
        assert_eq!(ops(&fake), ["ListCertificates"], "the list is reused for a minute");
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(cat.discover(&hosts(&["new.test"]), None).await.unwrap(), ["arn:new"]);
        assert_eq!(ops(&fake), ["ListCertificates", "ListCertificates"]);
    }

    /// `--allowed-certificate-authority-arns`: only private certificates of a listed CA are chosen;
    /// each private certificate is described once for its CA, the others never.
    #[tokio::test(start_paused = true)]
    async fn allowed_authorities_keep_only_their_certificates() {
        let ca = "arn:aws:acm-pca:us-east-1:123456789012:certificate-authority/ours";
        let fake = Arc::new(FakeAcm::default());
        fake.add_private("arn:ours", &["a.test"], ca);
        fake.add_private("arn:theirs", &["a.test", "b.test"], "arn:aws:acm-pca:us-east-1:1:certificate-authority/x");
        fake.add("arn:imported", &["a.test", "c.test"], "IMPORTED");
        let cat = CertificateCatalog::new(fake.clone(), vec![ca.to_string()]);
        assert_eq!(cat.discover(&hosts(&["a.test"]), None).await.unwrap(), ["arn:ours"]);
        let reason = blocked(cat.discover(&hosts(&["b.test", "c.test"]), None).await);
        assert!(reason.contains("b.test") && reason.contains("c.test"), "{reason}");
        let described: Vec<String> =
            calls(&fake).into_iter().filter(|(op, _)| *op == "DescribeCertificate").map(|(_, arn)| arn).collect();
        assert_eq!(described, ["arn:ours", "arn:theirs"], "private ones only, once each");
        tokio::time::sleep(LIST_TTL).await;
        cat.discover(&hosts(&["a.test"]), None).await.unwrap();
        assert_eq!(ops(&fake).iter().filter(|op| **op == "DescribeCertificate").count(), 2, "their CA is kept");
    }

    /// With EnableCertificateManagement, certificates a controller requested are never discovered.
    #[tokio::test(start_paused = true)]
    async fn excluded_certificates_are_not_chosen() {
        let fake = Arc::new(FakeAcm::default());
        fake.add("arn:made", &["a.test"], "AMAZON_ISSUED");
        fake.add("arn:mine", &["a.test"], "IMPORTED");
        let cat = catalog(&fake);
        let made = std::collections::HashSet::from(["arn:made".to_string()]);
        assert_eq!(cat.discover(&hosts(&["a.test"]), Some(&made)).await.unwrap(), ["arn:mine"]);
        fake.remove("arn:mine");
        tokio::time::sleep(LIST_TTL).await;
        assert!(blocked(cat.discover(&hosts(&["a.test"]), Some(&made)).await).contains("a.test"));
    }

    #[tokio::test(start_paused = true)]
    async fn no_hosts_no_call_and_pending_certificates_are_not_used() {
        let fake = Arc::new(FakeAcm::default());
        fake.add_pending("arn:pending", &["p.test"]);
        let cat = catalog(&fake);
        assert_eq!(cat.discover(&[], None).await.unwrap(), Vec::<String>::new());
        assert_eq!(cat.discover(&hosts(&[""]), None).await.unwrap(), Vec::<String>::new());
        assert!(calls(&fake).is_empty());
        let want = lbc_model::ingress::NoCertificate { hosts: hosts(&["p.test"]), examined: 0 };
        assert_eq!(blocked(cat.discover(&hosts(&["p.test"]), None).await), want.to_string());
    }

    #[tokio::test(start_paused = true)]
    async fn incomplete_listings_are_described_once_and_cached_by_type() {
        let fake = Arc::new(FakeAcm::default());
        fake.add_long("arn:gone", &["gone.test", "x.test"], "AMAZON_ISSUED");
        fake.add_long("arn:imported", &["first.test", "deep.test"], "IMPORTED");
        fake.add_long("arn:issued", &["one.test", "two.test"], "AMAZON_ISSUED");
        let cat = catalog(&fake);
        // The first one described (arn:gone) was deleted since the listing: skipped, not an error.
        fake.log.lock().unwrap().fail_next("DescribeCertificate", ErrorKind::NotFound);
        let got = cat.discover(&hosts(&["deep.test", "two.test"]), None).await.unwrap();
        assert_eq!(got, ["arn:imported", "arn:issued"]);
        let described = |f: &FakeAcm| calls(f).iter().filter(|(op, _)| *op == "DescribeCertificate").count();
        assert_eq!(described(&fake), 3);
        fake.log.lock().unwrap().clear();
        // Later: listed again; the imported certificate's names have expired, the
        // amazon-issued one's have not (the failed one is asked again).
        tokio::time::sleep(IMPORTED_NAMES_TTL).await;
        cat.discover(&hosts(&["deep.test"]), None).await.unwrap();
        let mut asked: Vec<String> =
            calls(&fake).into_iter().filter(|(op, _)| *op == "DescribeCertificate").map(|(_, a)| a).collect();
        asked.sort();
        assert_eq!(asked, ["arn:gone", "arn:imported"]);
    }

    #[tokio::test(start_paused = true)]
    async fn errors_are_returned_and_not_cached() {
        let fake = Arc::new(FakeAcm::default());
        fake.add("arn:a", &["a.test"], "IMPORTED");
        let cat = catalog(&fake);
        // Retrying will not fix it: blocked, the message names the AWS error.
        fake.log.lock().unwrap().fail_next("ListCertificates", ErrorKind::AccessDenied);
        let reason = blocked(cat.discover(&hosts(&["a.test"]), None).await);
        assert!(reason.starts_with("its ACM certificates cannot be discovered: "), "{reason}");
        assert!(reason.contains("AccessDenied") || reason.contains("iam-policy"), "{reason}");
        // A retry may fix it: the AWS error itself, for the reconcile's backoff.
        fake.log.lock().unwrap().fail_next("ListCertificates", ErrorKind::Throttled);
        match cat.discover(&hosts(&["a.test"]), None).await {
            Err(Error::Aws(e)) => assert_eq!(e.kind, ErrorKind::Throttled),
            other => panic!("expected the throttling error, got {other:?}"),
        }
        assert_eq!(cat.discover(&hosts(&["a.test"]), None).await.unwrap(), ["arn:a"]);
        assert_eq!(ops(&fake), ["ListCertificates", "ListCertificates", "ListCertificates"]);
    }
}
