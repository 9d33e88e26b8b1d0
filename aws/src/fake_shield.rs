//! In-memory Shield Advanced for controller unit tests: a subscription state, protections per
//! resource, a call log and injectable faults ([`FakeProtections::log`]).

use crate::error::{AwsError, ErrorKind};
use crate::fake_log::FakeLog;
use crate::shield::Protections;
use async_trait::async_trait;
use lbc_model::lb::extras::ShieldProtection;
use std::collections::BTreeMap;
use std::sync::Mutex;

const SVC: &str = "shield";

struct State {
    subscription: String,
    /// resource ARN → protection
    protections: BTreeMap<String, ShieldProtection>,
    next_id: u32,
}

/// In-memory Shield; subscribed (`ACTIVE`) unless the test says otherwise.
pub struct FakeProtections {
    state: Mutex<State>,
    pub log: Mutex<FakeLog>,
}

impl Default for FakeProtections {
    fn default() -> Self {
        let state = State { subscription: "ACTIVE".into(), protections: BTreeMap::new(), next_id: 1 };
        Self { state: Mutex::new(state), log: Mutex::default() }
    }
}

impl FakeProtections {
    pub fn set_subscription(&self, state: &str) {
        self.state.lock().unwrap().subscription = state.into();
    }

    /// A protection made outside the controller (by hand, another tool).
    pub fn add(&self, resource_arn: &str, name: &str) -> String {
        let mut s = self.state.lock().unwrap();
        let id = format!("prot-{}", s.next_id);
        s.next_id += 1;
        s.protections.insert(resource_arn.into(), ShieldProtection { id: id.clone(), name: name.into() });
        id
    }

    /// The protection of `resource_arn`, for assertions.
    pub fn protection(&self, resource_arn: &str) -> Option<ShieldProtection> {
        self.state.lock().unwrap().protections.get(resource_arn).cloned()
    }

    fn enter(&self, op: &'static str, about: &str) -> Result<std::sync::MutexGuard<'_, State>, AwsError> {
        if let Some(kind) = self.log.lock().unwrap().record(op, about) {
            return Err(AwsError::new(kind, SVC, op, "injected by FakeProtections"));
        }
        Ok(self.state.lock().unwrap())
    }
}

#[async_trait]
impl Protections for FakeProtections {
    async fn subscription_state(&self) -> Result<String, AwsError> {
        Ok(self.enter("GetSubscriptionState", "")?.subscription.clone())
    }

    async fn protection_for(&self, resource_arn: &str) -> Result<Option<ShieldProtection>, AwsError> {
        Ok(self.enter("DescribeProtection", resource_arn)?.protections.get(resource_arn).cloned())
    }

    async fn create(&self, resource_arn: &str, name: &str) -> Result<String, AwsError> {
        const OP: &str = "CreateProtection";
        let mut s = self.enter(OP, resource_arn)?;
        if s.subscription != "ACTIVE" {
            return Err(AwsError::new(ErrorKind::Invalid, SVC, OP, "the account is not subscribed to Shield Advanced"));
        }
        if s.protections.contains_key(resource_arn) {
            let msg = format!("{resource_arn} is already protected");
            return Err(AwsError::new(ErrorKind::Invalid, SVC, OP, msg));
        }
        let id = format!("prot-{}", s.next_id);
        s.next_id += 1;
        s.protections.insert(resource_arn.into(), ShieldProtection { id: id.clone(), name: name.into() });
        Ok(id)
    }

    async fn delete(&self, protection_id: &str) -> Result<(), AwsError> {
        const OP: &str = "DeleteProtection";
        let mut s = self.enter(OP, protection_id)?;
        let Some(arn) = s.protections.iter().find(|(_, p)| p.id == protection_id).map(|(a, _)| a.clone()) else {
            return Err(AwsError::new(ErrorKind::NotFound, SVC, OP, format!("no protection {protection_id}")));
        };
        s.protections.remove(&arn);
        Ok(())
    }
}
