//! In-memory [`Networking`] for controller unit tests: subnets and ENIs the test adds, security
//! groups with idempotent rule changes, `DependencyViolation` while an ENI or another group's rule
//! uses a group (as EC2), a call log and injectable faults.

use crate::error::{AwsError, ErrorKind};
use crate::net::{Networking, SecurityGroupQuery, SubnetQuery};
use async_trait::async_trait;
use lbc_model::lb::{IngressRule, NetworkInterface, Observed, RuleSource, SecurityGroup, Subnet, Tags};
use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Mutex, MutexGuard};

const SVC: &str = "ec2";

#[derive(Default)]
struct State {
    seq: u64,
    subnets: Vec<Subnet>,
    route_tables: Vec<lbc_model::lb::subnets::RouteTable>,
    groups: BTreeMap<String, SecurityGroup>,
    enis: Vec<NetworkInterface>,
    calls: Vec<(&'static str, String)>,
    faults: VecDeque<(&'static str, ErrorKind)>,
    /// Refuse rules naming a source group that does not exist, as EC2 does (off by default: some
    /// tests plant rules from groups long gone).
    check_sources: bool,
    /// Rules per group before `RulesPerSecurityGroupLimitExceeded` (`None`: no limit).
    rule_quota: Option<usize>,
}

/// In-memory EC2 networking.
#[derive(Default)]
pub struct FakeNetworking {
    state: Mutex<State>,
}

fn error(kind: ErrorKind, op: &'static str, code: &str, message: String) -> AwsError {
    AwsError { kind, service: SVC, operation: op, code: Some(code.into()), message, status: None }
}

fn group_missing(op: &'static str, id: &str) -> AwsError {
    error(ErrorKind::NotFound, op, "InvalidGroup.NotFound", format!("The security group '{id}' does not exist"))
}

impl FakeNetworking {
    pub fn add_subnet(&self, subnet: Subnet) {
        self.state.lock().unwrap().subnets.push(subnet);
    }

    /// A route table of the subnets' VPC (reachability discovery reads them all).
    pub fn add_route_table(&self, table: lbc_model::lb::subnets::RouteTable) {
        self.state.lock().unwrap().route_tables.push(table);
    }

    pub fn add_network_interface(&self, eni: NetworkInterface) {
        self.state.lock().unwrap().enis.push(eni);
    }

    pub fn remove_network_interface(&self, id: &str) {
        self.state.lock().unwrap().enis.retain(|e| e.id != id);
    }

    /// The group as stored (ingress included), for assertions.
    pub fn group(&self, id: &str) -> Option<SecurityGroup> {
        self.state.lock().unwrap().groups.get(id).cloned()
    }

    pub fn calls(&self) -> Vec<(&'static str, String)> {
        self.state.lock().unwrap().calls.clone()
    }

    /// From now on, AuthorizeSecurityGroupIngress refuses the whole batch with
    /// `InvalidGroup.NotFound` naming the first source group that does not exist, as EC2 does.
    pub fn reject_unknown_sources(&self) {
        self.state.lock().unwrap().check_sources = true;
    }

    /// From now on, a group holds at most `n` ingress rules; a batch that would exceed it is
    /// refused whole with `RulesPerSecurityGroupLimitExceeded`.
    pub fn set_rule_quota(&self, n: usize) {
        self.state.lock().unwrap().rule_quota = Some(n);
    }

    pub fn inject_fault(&self, operation: &'static str, kind: ErrorKind) {
        self.state.lock().unwrap().faults.push_back((operation, kind));
    }

    fn enter(&self, op: &'static str, about: &str) -> Result<MutexGuard<'_, State>, AwsError> {
        let mut s = self.state.lock().unwrap();
        s.calls.push((op, about.to_string()));
        if let Some(pos) = s.faults.iter().position(|(o, _)| *o == op) {
            let (_, kind) = s.faults.remove(pos).unwrap();
            return Err(AwsError::new(kind, SVC, op, "injected by FakeNetworking"));
        }
        Ok(s)
    }
}

#[async_trait]
impl Networking for FakeNetworking {
    async fn route_tables(&self, vpc_id: &str) -> Result<Vec<lbc_model::lb::subnets::RouteTable>, AwsError> {
        // Every table the test added belongs to the one VPC the test's subnets are in.
        Ok(self.enter("DescribeRouteTables", vpc_id)?.route_tables.clone())
    }

    async fn subnets(&self, query: &SubnetQuery) -> Result<Vec<Subnet>, AwsError> {
        const OP: &str = "DescribeSubnets";
        let s = self.enter(OP, &format!("{query:?}"))?;
        match query {
            SubnetQuery::Vpc(vpc) => Ok(s.subnets.iter().filter(|n| &n.vpc_id == vpc).cloned().collect()),
            SubnetQuery::Ids(ids) => ids
                .iter()
                .map(|id| {
                    s.subnets.iter().find(|n| &n.id == id).cloned().ok_or_else(|| {
                        let msg = format!("The subnet ID '{id}' does not exist");
                        error(ErrorKind::NotFound, OP, "InvalidSubnetID.NotFound", msg)
                    })
                })
                .collect(),
            SubnetQuery::NameTags { vpc_id, names } => Ok(s
                .subnets
                .iter()
                .filter(|n| &n.vpc_id == vpc_id && n.tags.get("Name").is_some_and(|v| names.contains(v)))
                .cloned()
                .collect()),
        }
    }

    async fn security_groups(&self, query: &SecurityGroupQuery) -> Result<Vec<Observed<SecurityGroup>>, AwsError> {
        const OP: &str = "DescribeSecurityGroups";
        let s = self.enter(OP, &format!("{query:?}"))?;
        let obs = |(id, g): (&String, &SecurityGroup)| Observed { id: id.clone(), spec: g.clone() };
        match query {
            SecurityGroupQuery::Ids(ids) => {
                ids.iter().map(|id| s.groups.get_key_value(id).map(obs).ok_or_else(|| group_missing(OP, id))).collect()
            }
            SecurityGroupQuery::Existing(ids) => {
                Ok(ids.iter().filter_map(|id| s.groups.get_key_value(id).map(obs)).collect())
            }
            SecurityGroupQuery::Names { vpc_id, names } => Ok(s
                .groups
                .iter()
                .filter(|(_, g)| {
                    &g.vpc_id == vpc_id
                        && (names.contains(&g.name) || g.tags.get("Name").is_some_and(|v| names.contains(v)))
                })
                .map(obs)
                .collect()),
            SecurityGroupQuery::Tags { vpc_id, tags } => Ok(s
                .groups
                .iter()
                .filter(|(_, g)| vpc_id.as_ref().is_none_or(|v| v == &g.vpc_id))
                .filter(|(_, g)| tags.iter().all(|(k, v)| g.tags.get(k) == Some(v)))
                .map(obs)
                .collect()),
            SecurityGroupQuery::TagKey { vpc_id, key } => {
                Ok(s.groups.iter().filter(|(_, g)| &g.vpc_id == vpc_id && g.tags.contains_key(key)).map(obs).collect())
            }
        }
    }

    async fn create_security_group(&self, sg: &SecurityGroup) -> Result<String, AwsError> {
        const OP: &str = "CreateSecurityGroup";
        let mut s = self.enter(OP, &sg.name)?;
        if s.groups.values().any(|g| g.vpc_id == sg.vpc_id && g.name == sg.name) {
            let msg = format!("The security group '{}' already exists for VPC '{}'", sg.name, sg.vpc_id);
            return Err(error(ErrorKind::AlreadyExists, OP, "InvalidGroup.Duplicate", msg));
        }
        s.seq += 1;
        let id = format!("sg-{:017x}", s.seq);
        s.groups.insert(id.clone(), SecurityGroup { ingress: Vec::new(), ..sg.clone() });
        Ok(id)
    }

    async fn delete_security_group(&self, id: &str) -> Result<(), AwsError> {
        const OP: &str = "DeleteSecurityGroup";
        let mut s = self.enter(OP, id)?;
        let named_by_a_rule = s.groups.iter().any(|(gid, g)| {
            gid != id && g.ingress.iter().any(|r| matches!(&r.source, RuleSource::SecurityGroup(src) if src == id))
        });
        if named_by_a_rule || s.enis.iter().any(|e| e.security_groups.iter().any(|g| g == id)) {
            let msg = format!("resource {id} has a dependent object");
            return Err(error(ErrorKind::InUse, OP, "DependencyViolation", msg));
        }
        s.groups.remove(id);
        Ok(())
    }

    async fn authorize_ingress(&self, group_id: &str, rules: &[IngressRule]) -> Result<(), AwsError> {
        const OP: &str = "AuthorizeSecurityGroupIngress";
        let mut s = self.enter(OP, group_id)?;
        if !s.groups.contains_key(group_id) {
            return Err(group_missing(OP, group_id));
        }
        if s.check_sources {
            let unknown = rules.iter().find_map(|r| match &r.source {
                RuleSource::SecurityGroup(src) if !s.groups.contains_key(src) => Some(src.clone()),
                _ => None,
            });
            if let Some(src) = unknown {
                return Err(group_missing(OP, &src));
            }
        }
        let quota = s.rule_quota;
        let g = s.groups.get_mut(group_id).expect("checked above");
        // Same permission (description aside) = already there.
        let same = |x: &IngressRule, r: &IngressRule| {
            x.protocol == r.protocol && x.from_port == r.from_port && x.to_port == r.to_port && x.source == r.source
        };
        let new: Vec<&IngressRule> = rules.iter().filter(|r| !g.ingress.iter().any(|x| same(x, r))).collect();
        if quota.is_some_and(|q| g.ingress.len() + new.len() > q) {
            let msg = "The maximum number of rules per security group has been reached.".to_string();
            return Err(error(ErrorKind::Invalid, OP, "RulesPerSecurityGroupLimitExceeded", msg));
        }
        g.ingress.extend(new.into_iter().cloned());
        g.ingress.sort();
        Ok(())
    }

    async fn revoke_ingress(&self, group_id: &str, rules: &[IngressRule]) -> Result<(), AwsError> {
        const OP: &str = "RevokeSecurityGroupIngress";
        let mut s = self.enter(OP, group_id)?;
        let g = s.groups.get_mut(group_id).ok_or_else(|| group_missing(OP, group_id))?;
        g.ingress.retain(|x| {
            !rules.iter().any(|r| {
                x.protocol == r.protocol && x.from_port == r.from_port && x.to_port == r.to_port && x.source == r.source
            })
        });
        Ok(())
    }

    async fn create_tags(&self, resource_ids: &[String], tags: &Tags) -> Result<(), AwsError> {
        let mut s = self.enter("CreateTags", &resource_ids.join(","))?;
        for id in resource_ids {
            if let Some(g) = s.groups.get_mut(id) {
                g.tags.extend(tags.clone());
            } else if let Some(n) = s.subnets.iter_mut().find(|n| &n.id == id) {
                n.tags.extend(tags.clone());
            }
        }
        Ok(())
    }

    async fn delete_tags(&self, resource_ids: &[String], keys: &[String]) -> Result<(), AwsError> {
        let mut s = self.enter("DeleteTags", &resource_ids.join(","))?;
        for id in resource_ids {
            let tags = match s.groups.get_mut(id) {
                Some(g) => Some(&mut g.tags),
                None => s.subnets.iter_mut().find(|n| &n.id == id).map(|n| &mut n.tags),
            };
            if let Some(t) = tags {
                t.retain(|k, _| !keys.contains(k));
            }
        }
        Ok(())
    }

    async fn network_interfaces_by_ip(&self, _vpc_id: &str, ips: &[IpAddr]) -> Result<Vec<NetworkInterface>, AwsError> {
        let s = self.enter("DescribeNetworkInterfaces", &format!("{} IPs", ips.len()))?;
        Ok(s.enis.iter().filter(|e| e.private_ips.iter().any(|ip| ips.contains(ip))).cloned().collect())
    }

    async fn network_interfaces(&self, ids: &[String]) -> Result<Vec<NetworkInterface>, AwsError> {
        const OP: &str = "DescribeNetworkInterfaces";
        let s = self.enter(OP, &ids.join(","))?;
        ids.iter()
            .map(|id| {
                s.enis.iter().find(|e| &e.id == id).cloned().ok_or_else(|| {
                    let msg = format!("The networkInterface ID '{id}' does not exist");
                    error(ErrorKind::NotFound, OP, "InvalidNetworkInterfaceID.NotFound", msg)
                })
            })
            .collect()
    }
}
