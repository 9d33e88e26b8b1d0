//! In-memory [`WebAcls`] for controller unit tests: web ACLs the test adds, associations per
//! load balancer, a call log and injectable faults ([`FakeWebAcls::log`]).

use crate::error::{AwsError, ErrorKind};
use crate::fake_log::FakeLog;
use crate::waf::WebAcls;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::Mutex;

const SVC: &str = "wafv2";

#[derive(Default)]
struct State {
    /// name → ARN
    acls: BTreeMap<String, String>,
    /// load balancer ARN → web ACL ARN
    associations: BTreeMap<String, String>,
}

/// In-memory WAFv2 (REGIONAL scope).
#[derive(Default)]
pub struct FakeWebAcls {
    state: Mutex<State>,
    /// Calls as (operation, resource or web ACL ARN); faults to inject.
    pub log: Mutex<FakeLog>,
}

impl FakeWebAcls {
    pub fn add(&self, name: &str, arn: &str) {
        self.state.lock().unwrap().acls.insert(name.into(), arn.into());
    }

    /// The web ACL associated with `resource_arn`, for assertions.
    pub fn associated(&self, resource_arn: &str) -> Option<String> {
        self.state.lock().unwrap().associations.get(resource_arn).cloned()
    }

    fn enter(&self, op: &'static str, about: &str) -> Result<std::sync::MutexGuard<'_, State>, AwsError> {
        if let Some(kind) = self.log.lock().unwrap().record(op, about) {
            return Err(AwsError::new(kind, SVC, op, "injected by FakeWebAcls"));
        }
        Ok(self.state.lock().unwrap())
    }
}

#[async_trait]
impl WebAcls for FakeWebAcls {
    async fn web_acl_for(&self, resource_arn: &str) -> Result<Option<String>, AwsError> {
        Ok(self.enter("GetWebACLForResource", resource_arn)?.associations.get(resource_arn).cloned())
    }

    async fn associate(&self, web_acl_arn: &str, resource_arn: &str) -> Result<(), AwsError> {
        const OP: &str = "AssociateWebACL";
        let mut s = self.enter(OP, web_acl_arn)?;
        if !s.acls.values().any(|a| a == web_acl_arn) {
            let msg = format!("web ACL {web_acl_arn} does not exist");
            return Err(AwsError::new(ErrorKind::NotFound, SVC, OP, msg));
        }
        s.associations.insert(resource_arn.into(), web_acl_arn.into());
        Ok(())
    }

    async fn disassociate(&self, resource_arn: &str) -> Result<(), AwsError> {
        self.enter("DisassociateWebACL", resource_arn)?.associations.remove(resource_arn);
        Ok(())
    }

    async fn list(&self) -> Result<Vec<(String, String)>, AwsError> {
        let s = self.enter("ListWebACLs", "")?;
        Ok(s.acls.iter().map(|(n, a)| (n.clone(), a.clone())).collect())
    }
}

/// In-memory WAF Classic (WAF Regional): web ACL IDs the test adds, associations per load balancer.
#[derive(Default)]
pub struct FakeClassicWebAcls {
    /// web ACL IDs that exist; load balancer ARN → web ACL ID.
    state: Mutex<(std::collections::BTreeSet<String>, BTreeMap<String, String>)>,
    pub log: Mutex<FakeLog>,
}

impl FakeClassicWebAcls {
    pub fn add(&self, id: &str) {
        self.state.lock().unwrap().0.insert(id.into());
    }

    /// The web ACL ID associated with `resource_arn`, for assertions.
    pub fn associated(&self, resource_arn: &str) -> Option<String> {
        self.state.lock().unwrap().1.get(resource_arn).cloned()
    }

    #[allow(clippy::type_complexity)]
    fn enter(
        &self,
        op: &'static str,
        about: &str,
    ) -> Result<std::sync::MutexGuard<'_, (std::collections::BTreeSet<String>, BTreeMap<String, String>)>, AwsError>
    {
        if let Some(kind) = self.log.lock().unwrap().record(op, about) {
            return Err(AwsError::new(kind, "waf-regional", op, "injected by FakeClassicWebAcls"));
        }
        Ok(self.state.lock().unwrap())
    }
}

#[async_trait]
impl crate::waf_classic::ClassicWebAcls for FakeClassicWebAcls {
    async fn web_acl_for(&self, resource_arn: &str) -> Result<Option<String>, AwsError> {
        Ok(self.enter("GetWebACLForResource", resource_arn)?.1.get(resource_arn).cloned())
    }

    async fn associate(&self, web_acl_id: &str, resource_arn: &str) -> Result<(), AwsError> {
        const OP: &str = "AssociateWebACL";
        let mut s = self.enter(OP, web_acl_id)?;
        if !s.0.contains(web_acl_id) {
            let msg = format!("web ACL {web_acl_id} does not exist");
            return Err(AwsError::new(ErrorKind::NotFound, "waf-regional", OP, msg));
        }
        s.1.insert(resource_arn.into(), web_acl_id.into());
        Ok(())
    }

    async fn disassociate(&self, resource_arn: &str) -> Result<(), AwsError> {
        self.enter("DisassociateWebACL", resource_arn)?.1.remove(resource_arn);
        Ok(())
    }
}
