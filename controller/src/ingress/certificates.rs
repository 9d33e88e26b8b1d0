//! ACM certificate discovery for the Ingress groups: the ISSUED certificates of the region and
//! their names, read through [`Acm`] and shared by every group, cached briefly; the matching is
//! `lbc_model::ingress::certificates::discover`.
//!
//! Caching, as ALBC (`cert_discovery.go`): the list is reused for [`LIST_TTL`] (one minute), so
//! a certificate issued or imported now is found by the first pass after that; names fetched with
//! DescribeCertificate (only for certificates whose listing lacks some) are kept 5 minutes for
//! imported certificates (re-importing can change them) and 10 hours for the others. A pass that
//! needs no discovery makes no ACM call.

use lbc_aws::acm::Acm;
use lbc_aws::error::{AwsError, ErrorKind};
use lbc_model::ingress::certificates::discover;
use lbc_model::ingress::{AcmCertificate, NoCertificate};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How long a certificate list is reused.
pub const LIST_TTL: Duration = Duration::from_secs(60);
const IMPORTED_NAMES_TTL: Duration = Duration::from_secs(5 * 60);
const ISSUED_NAMES_TTL: Duration = Duration::from_secs(10 * 3600);

/// How long listings and described names are reused.
#[derive(Clone, Copy, Debug)]
struct Ttl {
    list: Duration,
    imported_names: Duration,
    issued_names: Duration,
}

const TTL: Ttl = Ttl { list: LIST_TTL, imported_names: IMPORTED_NAMES_TTL, issued_names: ISSUED_NAMES_TTL };

#[derive(Default)]
struct State {
    listed: Option<(Instant, Arc<Vec<AcmCertificate>>)>,
    /// ARN → (expiry, names) from DescribeCertificate.
    described: HashMap<String, (Instant, Vec<String>)>,
}

/// The region's ISSUED ACM certificates, cached.
pub struct CertificateCatalog {
    acm: Arc<dyn Acm>,
    ttl: Ttl,
    state: tokio::sync::Mutex<State>,
}

impl CertificateCatalog {
    pub fn new(acm: Arc<dyn Acm>) -> Self {
        Self { acm, ttl: TTL, state: Default::default() }
    }

    /// Every ISSUED certificate with all its names (one listing at a time; callers meanwhile wait
    /// and share it).
    pub async fn certificates(&self) -> Result<Arc<Vec<AcmCertificate>>, AwsError> {
        let mut s = self.state.lock().await;
        let now = Instant::now();
        if let Some((at, certs)) = &s.listed
            && now.duration_since(*at) < self.ttl.list
        {
            return Ok(certs.clone());
        }
        let listed = self.acm.issued_certificates().await?;
        s.described.retain(|_, (expiry, _)| *expiry > now);
        let mut out = Vec::with_capacity(listed.len());
        for c in listed {
            let names = if c.complete {
                c.names
            } else if let Some((_, names)) = s.described.get(&c.arn) {
                names.clone()
            } else {
                match self.acm.describe_certificate(&c.arn).await {
                    Ok(d) => {
                        let ttl = if d.kind == "IMPORTED" { self.ttl.imported_names } else { self.ttl.issued_names };
                        s.described.insert(c.arn.clone(), (now + ttl, d.names.clone()));
                        d.names
                    }
                    // Deleted since it was listed.
                    Err(e) if e.kind == ErrorKind::NotFound => continue,
                    Err(e) => return Err(e),
                }
            };
            out.push(AcmCertificate { arn: c.arn, names });
        }
        let out = Arc::new(out);
        s.listed = Some((now, out.clone()));
        Ok(out)
    }

    /// The certificates covering `hosts` (sorted ARNs), or the hosts none covers. No host: no
    /// ACM call.
    pub async fn discover(&self, hosts: &[String]) -> Result<Result<Vec<String>, NoCertificate>, AwsError> {
        if hosts.iter().all(String::is_empty) {
            return Ok(Ok(Vec::new()));
        }
        Ok(discover(hosts, &self.certificates().await?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lbc_aws::fake_acm::FakeAcm;

    /// Short TTLs (the controller's tokio has no paused clock): list 50 ms, imported names 100 ms.
    const SHORT: Ttl = Ttl {
        list: Duration::from_millis(50),
        imported_names: Duration::from_millis(100),
        issued_names: ISSUED_NAMES_TTL,
    };

    fn catalog(fake: &Arc<FakeAcm>) -> CertificateCatalog {
        CertificateCatalog { ttl: SHORT, ..CertificateCatalog::new(fake.clone()) }
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

    #[tokio::test]
    async fn one_listing_per_minute_whatever_the_number_of_lookups() {
        let fake = Arc::new(FakeAcm::default());
        fake.add("arn:wild", &["*.example.test"], "IMPORTED");
        fake.add("arn:api", &["api.other.test"], "AMAZON_ISSUED");
        let cat = catalog(&fake);
        for _ in 0..5 {
            let got = cat.discover(&hosts(&["api.other.test", "a.example.test"])).await.unwrap();
            assert_eq!(got, Ok(vec!["arn:api".to_string(), "arn:wild".to_string()]));
        }
        assert_eq!(ops(&fake), ["ListCertificates"]);
        // A certificate issued now is found once the list has expired (a minute in production).
        fake.add("arn:new", &["new.test"], "AMAZON_ISSUED");
        assert!(cat.discover(&hosts(&["new.test"])).await.unwrap().is_err());
        tokio::time::sleep(SHORT.list).await;
        assert_eq!(cat.discover(&hosts(&["new.test"])).await.unwrap(), Ok(vec!["arn:new".to_string()]));
        assert_eq!(ops(&fake), ["ListCertificates", "ListCertificates"]);
    }

    #[tokio::test]
    async fn no_hosts_no_call_and_pending_certificates_are_not_used() {
        let fake = Arc::new(FakeAcm::default());
        fake.add_pending("arn:pending", &["p.test"]);
        let cat = catalog(&fake);
        assert_eq!(cat.discover(&[]).await.unwrap(), Ok(vec![]));
        assert_eq!(cat.discover(&hosts(&[""])).await.unwrap(), Ok(vec![]));
        assert!(calls(&fake).is_empty());
        let e = cat.discover(&hosts(&["p.test"])).await.unwrap().unwrap_err();
        assert_eq!((e.hosts, e.examined), (hosts(&["p.test"]), 0));
    }

    #[tokio::test]
    async fn incomplete_listings_are_described_once_and_cached_by_type() {
        let fake = Arc::new(FakeAcm::default());
        fake.add_long("arn:gone", &["gone.test", "x.test"], "AMAZON_ISSUED");
        fake.add_long("arn:imported", &["first.test", "deep.test"], "IMPORTED");
        fake.add_long("arn:issued", &["one.test", "two.test"], "AMAZON_ISSUED");
        let cat = catalog(&fake);
        // The first one described (arn:gone) was deleted since the listing: skipped, not an error.
        fake.log.lock().unwrap().fail_next("DescribeCertificate", ErrorKind::NotFound);
        let got = cat.discover(&hosts(&["deep.test", "two.test"])).await.unwrap();
        assert_eq!(got, Ok(vec!["arn:imported".to_string(), "arn:issued".to_string()]));
        let described = |f: &FakeAcm| calls(f).iter().filter(|(op, _)| *op == "DescribeCertificate").count();
        assert_eq!(described(&fake), 3);
        fake.log.lock().unwrap().clear();
        // Later: listed again; the imported certificate's names have expired, the
        // amazon-issued one's have not (the failed one is asked again).
        tokio::time::sleep(SHORT.imported_names).await;
        cat.discover(&hosts(&["deep.test"])).await.unwrap().unwrap();
        let mut asked: Vec<String> =
            calls(&fake).into_iter().filter(|(op, _)| *op == "DescribeCertificate").map(|(_, a)| a).collect();
        asked.sort();
        assert_eq!(asked, ["arn:gone", "arn:imported"]);
    }

    #[tokio::test]
    async fn errors_are_returned_and_not_cached() {
        let fake = Arc::new(FakeAcm::default());
        fake.add("arn:a", &["a.test"], "IMPORTED");
        let cat = catalog(&fake);
        fake.log.lock().unwrap().fail_next("ListCertificates", ErrorKind::AccessDenied);
        let e = cat.discover(&hosts(&["a.test"])).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::AccessDenied);
        assert_eq!(cat.discover(&hosts(&["a.test"])).await.unwrap(), Ok(vec!["arn:a".to_string()]));
        assert_eq!(ops(&fake), ["ListCertificates", "ListCertificates"]);
    }
}
