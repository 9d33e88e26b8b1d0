//! In-memory [`InstanceLookup`]: instances by (VPC, private IP), a call log and an injectable
//! failure. The emulator (e2e) runs the real DescribeInstances filters.

use crate::error::{AwsError, ErrorKind};
use crate::instances::InstanceLookup;
use async_trait::async_trait;
use lbc_model::nodes::Instance;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::Mutex;

#[derive(Default)]
struct State {
    by_ip: HashMap<(String, IpAddr), Instance>,
    /// (VPC id, number of IPs asked) per call.
    calls: Vec<(String, usize)>,
    fail_next: bool,
}

#[derive(Default)]
pub struct FakeInstances {
    state: Mutex<State>,
}

impl FakeInstances {
    /// An instance in `vpc_id` owning private IP `ip` (zone and private DNS name unknown).
    pub fn add(&self, vpc_id: &str, ip: &str, instance: &str) {
        self.add_instance(vpc_id, ip, Instance::new(instance));
    }

    /// An instance in `vpc_id` owning private IP `ip`, described as `instance`.
    pub fn add_instance(&self, vpc_id: &str, ip: &str, instance: Instance) {
        let ip = ip.parse().expect("fake instance IP");
        self.state.lock().unwrap().by_ip.insert((vpc_id.to_string(), ip), instance);
    }

    /// The next lookup fails (as a throttled or refused DescribeInstances would).
    pub fn fail_next(&self) {
        self.state.lock().unwrap().fail_next = true;
    }

    /// (VPC id, IPs asked) per call, in order.
    pub fn calls(&self) -> Vec<(String, usize)> {
        self.state.lock().unwrap().calls.clone()
    }

    pub fn clear_calls(&self) {
        self.state.lock().unwrap().calls.clear();
    }
}

#[async_trait]
impl InstanceLookup for FakeInstances {
    async fn instances_by_private_ip(
        &self,
        vpc_id: &str,
        ips: &[IpAddr],
    ) -> Result<BTreeMap<IpAddr, Instance>, AwsError> {
        let mut s = self.state.lock().unwrap();
        s.calls.push((vpc_id.to_string(), ips.len()));
        if std::mem::take(&mut s.fail_next) {
            return Err(AwsError::new(ErrorKind::Throttled, "ec2", "DescribeInstances", "injected by FakeInstances"));
        }
        Ok(ips.iter().filter_map(|ip| s.by_ip.get(&(vpc_id.to_string(), *ip)).map(|id| (*ip, id.clone()))).collect())
    }
}
