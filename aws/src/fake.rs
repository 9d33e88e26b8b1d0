//! In-memory ELBv2/EC2 for unit tests of the controller: target groups, registrations with a
//! settable health state, a call log and injectable errors. Integration and e2e tests use the
//! moto-based emulator instead (e2e/emulator).

use crate::ec2::Ec2;
use crate::elbv2::{ElbV2, RegisteredTarget, TargetGroupInfo};
use crate::error::{AwsError, ErrorKind};
use async_trait::async_trait;
use lbc_model::nodes::InstanceTarget;
use lbc_model::target::{HealthState, Target, TargetHealth};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;

/// One recorded call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeCall {
    pub operation: &'static str,
    pub target_group_arn: String,
    pub targets: usize,
}

#[derive(Default)]
struct State {
    groups: HashMap<String, TargetGroupInfo>,
    tags: HashMap<String, BTreeMap<String, String>>,
    targets: HashMap<String, BTreeMap<Target, TargetHealth>>,
    /// Instance registrations per target group.
    instance_targets: HashMap<String, BTreeMap<InstanceTarget, TargetHealth>>,
    calls: Vec<FakeCall>,
    /// (operation, error kind) queued failures, consumed in order.
    faults: VecDeque<(&'static str, ErrorKind)>,
    /// State newly registered targets start in.
    initial_state: Option<HealthState>,
}

/// In-memory ELBv2.
#[derive(Default)]
pub struct FakeElbV2 {
    state: Mutex<State>,
}

impl FakeElbV2 {
    pub fn add_target_group(&self, info: TargetGroupInfo) {
        let mut s = self.state.lock().unwrap();
        s.targets.entry(info.arn.clone()).or_default();
        s.groups.insert(info.arn.clone(), info);
    }

    /// Sets a target group's tags (as DescribeTags returns them).
    pub fn set_tags(&self, arn: &str, tags: &[(&str, &str)]) {
        let tags = tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        self.state.lock().unwrap().tags.insert(arn.to_string(), tags);
    }

    pub fn remove_target_group(&self, arn: &str) {
        let mut s = self.state.lock().unwrap();
        s.groups.remove(arn);
        s.targets.remove(arn);
    }

    /// Sets the health of a registered target.
    pub fn set_health(&self, arn: &str, t: Target, state: HealthState) {
        let mut s = self.state.lock().unwrap();
        if let Some(h) = s.targets.get_mut(arn).and_then(|m| m.get_mut(&t)) {
            *h = TargetHealth::new(state);
        }
    }

    /// New registrations start in this state (default `healthy`).
    pub fn set_initial_state(&self, state: HealthState) {
        self.state.lock().unwrap().initial_state = Some(state);
    }

    /// Removes a registration behind the controller's back (drift).
    pub fn remove_out_of_band(&self, arn: &str, t: Target) {
        self.state.lock().unwrap().targets.get_mut(arn).map(|m| m.remove(&t));
    }

    pub fn inject_fault(&self, operation: &'static str, kind: ErrorKind) {
        self.state.lock().unwrap().faults.push_back((operation, kind));
    }

    pub fn registered(&self, arn: &str) -> Vec<Target> {
        self.state.lock().unwrap().targets.get(arn).map(|m| m.keys().copied().collect()).unwrap_or_default()
    }

    /// The instance targets registered in a group, sorted.
    pub fn registered_instances(&self, arn: &str) -> Vec<InstanceTarget> {
        self.state.lock().unwrap().instance_targets.get(arn).map(|m| m.keys().cloned().collect()).unwrap_or_default()
    }

    pub fn calls(&self) -> Vec<FakeCall> {
        self.state.lock().unwrap().calls.clone()
    }

    pub fn clear_calls(&self) {
        self.state.lock().unwrap().calls.clear();
    }

    fn enter(
        &self,
        operation: &'static str,
        arn: &str,
        targets: usize,
    ) -> Result<std::sync::MutexGuard<'_, State>, AwsError> {
        let mut s = self.state.lock().unwrap();
        s.calls.push(FakeCall { operation, target_group_arn: arn.to_string(), targets });
        if let Some(pos) = s.faults.iter().position(|(op, _)| *op == operation) {
            let (_, kind) = s.faults.remove(pos).unwrap();
            return Err(AwsError::new(kind, "elasticloadbalancing", operation, "injected by FakeElbV2"));
        }
        Ok(s)
    }

    fn not_found(operation: &'static str, arn: &str) -> AwsError {
        AwsError {
            kind: ErrorKind::NotFound,
            service: "elasticloadbalancing",
            operation,
            code: Some("TargetGroupNotFound".into()),
            message: format!("One or more target groups not found: {arn}"),
            status: None,
        }
    }
}

#[async_trait]
impl ElbV2 for FakeElbV2 {
    async fn describe_target_group(&self, arn: &str) -> Result<Option<TargetGroupInfo>, AwsError> {
        let s = self.enter("DescribeTargetGroups", arn, 0)?;
        Ok(s.groups.get(arn).cloned())
    }

    /// As AWS: one call, and an unknown ARN fails all of it.
    async fn describe_target_groups(&self, arns: &[String]) -> Result<Vec<TargetGroupInfo>, AwsError> {
        let s = self.enter("DescribeTargetGroups", &arns.join(","), 0)?;
        arns.iter()
            .map(|a| s.groups.get(a).cloned().ok_or_else(|| Self::not_found("DescribeTargetGroups", a)))
            .collect()
    }

    async fn target_group_tags(&self, arn: &str) -> Result<Option<BTreeMap<String, String>>, AwsError> {
        let s = self.enter("DescribeTags", arn, 0)?;
        Ok(s.groups.contains_key(arn).then(|| s.tags.get(arn).cloned().unwrap_or_default()))
    }

    /// As AWS: one call, and an unknown ARN fails all of it.
    async fn target_groups_tags(
        &self,
        arns: &[String],
    ) -> Result<BTreeMap<String, BTreeMap<String, String>>, AwsError> {
        let s = self.enter("DescribeTags", &arns.join(","), 0)?;
        arns.iter()
            .map(|a| match s.groups.contains_key(a) {
                true => Ok((a.clone(), s.tags.get(a).cloned().unwrap_or_default())),
                false => Err(Self::not_found("DescribeTags", a)),
            })
            .collect()
    }

    async fn describe_target_group_by_name(&self, name: &str) -> Result<Option<TargetGroupInfo>, AwsError> {
        let s = self.enter("DescribeTargetGroups", name, 0)?;
        Ok(s.groups.values().find(|g| g.name == name).cloned())
    }

    async fn describe_target_health(
        &self,
        arn: &str,
        targets: Option<&[Target]>,
    ) -> Result<Vec<RegisteredTarget>, AwsError> {
        let s = self.enter("DescribeTargetHealth", arn, targets.map_or(0, <[Target]>::len))?;
        let m = s.targets.get(arn).ok_or_else(|| Self::not_found("DescribeTargetHealth", arn))?;
        let out = match targets {
            None => m.iter().map(|(t, h)| RegisteredTarget { target: *t, health: h.clone() }).collect(),
            Some(ts) => ts
                .iter()
                .map(|t| RegisteredTarget {
                    target: *t,
                    health: m.get(t).cloned().unwrap_or(TargetHealth {
                        state: HealthState::Unused,
                        reason: Some("Target.NotRegistered".into()),
                        description: None,
                    }),
                })
                .collect(),
        };
        Ok(out)
    }

    async fn register_targets(&self, arn: &str, targets: &[Target], _az: Option<&str>) -> Result<(), AwsError> {
        let mut s = self.enter("RegisterTargets", arn, targets.len())?;
        let initial = s.initial_state.unwrap_or(HealthState::Healthy);
        let protocol = s.groups.get(arn).and_then(|g| g.protocol.clone()).unwrap_or_default();
        let quic = protocol == "QUIC" || protocol == "TCP_QUIC";
        // As AWS: a QUIC group's targets need a server ID, and no other group's may have one.
        if let Some(t) = targets.iter().find(|t| t.quic.is_some() != quic) {
            return Err(AwsError {
                kind: ErrorKind::Invalid,
                service: "elasticloadbalancing",
                operation: "RegisterTargets",
                code: Some("ValidationError".into()),
                message: match quic {
                    true => format!("target {t} of {protocol} target group {arn} needs a QuicServerId"),
                    false => format!("QuicServerId is only valid for QUIC and TCP_QUIC target groups ({t})"),
                },
                status: None,
            });
        }
        let m = s.targets.get_mut(arn).ok_or_else(|| Self::not_found("RegisterTargets", arn))?;
        // AWS keys registrations by (Id, Port) and cannot change a registered target's server ID.
        if let Some(t) = targets.iter().find(|t| m.keys().any(|r| (r.ip, r.port) == (t.ip, t.port) && r != *t)) {
            return Err(AwsError {
                kind: ErrorKind::Invalid,
                service: "elasticloadbalancing",
                operation: "RegisterTargets",
                code: Some("ValidationError".into()),
                message: format!("target {t} is registered with another server ID; deregister it first"),
                status: None,
            });
        }
        for t in targets {
            m.insert(*t, TargetHealth::new(initial));
        }
        Ok(())
    }

    async fn deregister_targets(&self, arn: &str, targets: &[Target]) -> Result<(), AwsError> {
        let mut s = self.enter("DeregisterTargets", arn, targets.len())?;
        let m = s.targets.get_mut(arn).ok_or_else(|| Self::not_found("DeregisterTargets", arn))?;
        for t in targets {
            m.remove(t);
        }
        Ok(())
    }

    async fn describe_instance_targets(&self, arn: &str) -> Result<Vec<(InstanceTarget, TargetHealth)>, AwsError> {
        let s = self.enter("DescribeTargetHealth", arn, 0)?;
        if !s.groups.contains_key(arn) {
            return Err(Self::not_found("DescribeTargetHealth", arn));
        }
        Ok(s.instance_targets.get(arn).into_iter().flatten().map(|(t, h)| (t.clone(), h.clone())).collect())
    }

    async fn write_instance_targets(
        &self,
        arn: &str,
        targets: &[InstanceTarget],
        register: bool,
    ) -> Result<(), AwsError> {
        let op = if register { "RegisterTargets" } else { "DeregisterTargets" };
        let mut s = self.enter(op, arn, targets.len())?;
        if !s.groups.contains_key(arn) {
            return Err(Self::not_found(op, arn));
        }
        let initial = s.initial_state.unwrap_or(HealthState::Healthy);
        let m = s.instance_targets.entry(arn.to_string()).or_default();
        for t in targets {
            if register {
                m.insert(t.clone(), TargetHealth::new(initial));
            } else {
                m.remove(t);
            }
        }
        Ok(())
    }
}

/// In-memory EC2 with fixed VPC CIDRs and tags.
#[derive(Default)]
pub struct FakeEc2 {
    pub vpcs: Mutex<HashMap<String, Vec<String>>>,
    pub vpc_tags: Mutex<HashMap<String, lbc_model::lb::Tags>>,
}

#[async_trait]
impl Ec2 for FakeEc2 {
    async fn vpcs_with_tags(&self, tags: &std::collections::BTreeMap<String, String>) -> Result<Vec<String>, AwsError> {
        let have = self.vpc_tags.lock().unwrap();
        let mut ids: Vec<String> = self
            .vpcs
            .lock()
            .unwrap()
            .keys()
            .filter(|id| have.get(*id).is_some_and(|t| tags.iter().all(|(k, v)| t.get(k) == Some(v))))
            .cloned()
            .collect();
        ids.sort();
        Ok(ids)
    }

    async fn vpc_cidrs(&self, vpc_id: &str) -> Result<Vec<String>, AwsError> {
        self.vpcs
            .lock()
            .unwrap()
            .get(vpc_id)
            .cloned()
            .ok_or_else(|| AwsError::new(ErrorKind::NotFound, "ec2", "DescribeVpcs", format!("VPC {vpc_id} not found")))
    }
}

/// [`crate::assume_role::ElbV2ByRole`] over fakes: one [`FakeElbV2`] per account. The
/// controller's own account answers without a role; a role not added sees an empty account,
/// as a real role of an account holding none of the test's target groups would.
pub struct FakeAccounts {
    own: std::sync::Arc<dyn ElbV2>,
    roles: Mutex<HashMap<lbc_model::crd::RoleToAssume, std::sync::Arc<FakeElbV2>>>,
    asked: Mutex<Vec<Option<lbc_model::crd::RoleToAssume>>>,
}

impl FakeAccounts {
    pub fn new(own: std::sync::Arc<dyn ElbV2>) -> Self {
        Self { own, roles: Mutex::default(), asked: Mutex::default() }
    }

    /// The account `role` leads to.
    pub fn add_role(&self, role: lbc_model::crd::RoleToAssume, account: std::sync::Arc<FakeElbV2>) {
        self.roles.lock().unwrap().insert(role, account);
    }

    /// Every role clients were asked for, in order (`None`: the controller's own identity).
    pub fn asked(&self) -> Vec<Option<lbc_model::crd::RoleToAssume>> {
        self.asked.lock().unwrap().clone()
    }
}

impl crate::assume_role::ElbV2ByRole for FakeAccounts {
    fn client(&self, role: Option<&lbc_model::crd::RoleToAssume>) -> std::sync::Arc<dyn ElbV2> {
        self.asked.lock().unwrap().push(role.cloned());
        match role {
            None => self.own.clone(),
            Some(r) => self.roles.lock().unwrap().entry(r.clone()).or_default().clone(),
        }
    }
}
