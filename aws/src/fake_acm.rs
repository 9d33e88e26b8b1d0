//! In-memory [`Acm`] for controller unit tests: certificates the test adds (ISSUED or not), a
//! call log and injectable faults ([`FakeAcm::log`]). A certificate added with [`FakeAcm::add_long`] is listed with
//! `complete: false`, as ListCertificates does for more than 100 names.

use crate::acm::{Acm, AcmCertificateInfo};
use crate::error::{AwsError, ErrorKind};
use crate::fake_log::FakeLog;
use async_trait::async_trait;
use std::sync::Mutex;

const SVC: &str = "acm";

#[derive(Default)]
struct State {
    /// (certificate, issued, listed with every name)
    certificates: Vec<(AcmCertificateInfo, bool, bool)>,
}

/// In-memory ACM.
#[derive(Default)]
pub struct FakeAcm {
    state: Mutex<State>,
    /// Calls as (operation, certificate ARN or ""); faults to inject.
    pub log: Mutex<FakeLog>,
}

impl FakeAcm {
    fn insert(&self, arn: &str, names: &[&str], kind: &str, issued: bool, listed_complete: bool) {
        let c = AcmCertificateInfo {
            arn: arn.into(),
            names: names.iter().map(|n| n.to_string()).collect(),
            complete: true,
            kind: kind.into(),
            issuer: None,
        };
        let mut s = self.state.lock().unwrap();
        s.certificates.retain(|(o, _, _)| o.arn != arn);
        s.certificates.push((c, issued, listed_complete));
    }

    /// An ISSUED certificate whose listing has every name.
    pub fn add(&self, arn: &str, names: &[&str], kind: &str) {
        self.insert(arn, names, kind, true, true);
    }

    /// An ISSUED certificate listed with its domain name only (`complete: false`).
    pub fn add_long(&self, arn: &str, names: &[&str], kind: &str) {
        self.insert(arn, names, kind, true, false);
    }

    /// An ISSUED private certificate of CA `issuer` (which only DescribeCertificate reports).
    pub fn add_private(&self, arn: &str, names: &[&str], issuer: &str) {
        self.insert(arn, names, "PRIVATE", true, true);
        let mut s = self.state.lock().unwrap();
        if let Some((c, _, _)) = s.certificates.iter_mut().find(|(c, _, _)| c.arn == arn) {
            c.issuer = Some(issuer.into());
        }
    }

    /// A certificate waiting for validation: never listed as ISSUED.
    pub fn add_pending(&self, arn: &str, names: &[&str]) {
        self.insert(arn, names, "AMAZON_ISSUED", false, true);
    }

    pub fn remove(&self, arn: &str) {
        self.state.lock().unwrap().certificates.retain(|(c, _, _)| c.arn != arn);
    }

    /// A call: the fault queued for it, or the state.
    fn enter(&self, op: &'static str, about: &str) -> Result<std::sync::MutexGuard<'_, State>, AwsError> {
        if let Some(kind) = self.log.lock().unwrap().record(op, about) {
            return Err(AwsError::new(kind, SVC, op, "injected by FakeAcm"));
        }
        Ok(self.state.lock().unwrap())
    }
}

#[async_trait]
impl Acm for FakeAcm {
    async fn issued_certificates(&self) -> Result<Vec<AcmCertificateInfo>, AwsError> {
        let s = self.enter("ListCertificates", "")?;
        Ok(s.certificates
            .iter()
            .filter(|(_, issued, _)| *issued)
            .map(|(c, _, listed_complete)| {
                let mut c = c.clone();
                c.issuer = None;
                if !listed_complete {
                    c.names.truncate(1);
                    c.complete = false;
                }
                c
            })
            .collect())
    }

    async fn describe_certificate(&self, arn: &str) -> Result<AcmCertificateInfo, AwsError> {
        let s = self.enter("DescribeCertificate", arn)?;
        s.certificates.iter().find(|(c, _, _)| c.arn == arn).map(|(c, _, _)| c.clone()).ok_or_else(|| AwsError {
            kind: ErrorKind::NotFound,
            service: SVC,
            operation: "DescribeCertificate",
            code: Some("ResourceNotFoundException".into()),
            message: format!("Could not find certificate {arn}."),
            status: None,
        })
    }
}
