//! In-memory [`LoadBalancers`] for controller unit tests: ARNs like AWS's (`net/` and `app/`),
//! tags, attributes, not-found and duplicate errors, listeners that keep their target groups from
//! being deleted, a call log and injectable faults. Optionally mirrors target groups into a
//! [`FakeElbV2`] so target sync sees what the load balancer path created.

use crate::elbv2::{ElbV2, TargetGroupInfo};
use crate::error::{AwsError, ErrorKind};
use crate::fake::FakeElbV2;
use crate::lb::{FoundLoadBalancer, LoadBalancers, require_target_group_arns, tags_match};
use async_trait::async_trait;
use lbc_model::lb::{
    Action, Attributes, HealthCheck, LbIpAddressType, LbType, Listener, LoadBalancer, LoadBalancerStatus, MtlsMode,
    Observed, Protocol, Rule, SubnetMapping, Tags, TargetGroup, TargetGroupRef,
};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

const PREFIX: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012";
const SVC: &str = "elasticloadbalancing";

#[derive(Default)]
struct State {
    seq: u64,
    lbs: BTreeMap<String, FoundLoadBalancer>,
    tgs: BTreeMap<String, TargetGroup>,
    /// listener ARN → (load balancer ARN, listener). `certificates`: the default first, then
    /// the non-default ones (as attached).
    listeners: BTreeMap<String, (String, Listener)>,
    /// rule ARN → (listener ARN, rule)
    rules: BTreeMap<String, (String, Rule)>,
    /// load balancer ARN → reserved capacity units.
    capacity: BTreeMap<String, u32>,
    /// trust store name → ARN.
    trust_stores: BTreeMap<String, String>,
    calls: Vec<(&'static str, String)>,
    faults: VecDeque<(&'static str, ErrorKind)>,
}

/// In-memory ELBv2 load balancers, listeners and target groups.
#[derive(Default)]
pub struct FakeLoadBalancers {
    state: Mutex<State>,
    elbv2: Option<Arc<FakeElbV2>>,
}

fn error(kind: ErrorKind, op: &'static str, code: &str, message: String) -> AwsError {
    AwsError { kind, service: SVC, operation: op, code: Some(code.into()), message, status: None }
}

fn lb_missing(op: &'static str) -> AwsError {
    error(ErrorKind::NotFound, op, "LoadBalancerNotFound", "The specified load balancer does not exist.".into())
}

fn tg_missing(op: &'static str) -> AwsError {
    error(ErrorKind::NotFound, op, "TargetGroupNotFound", "One or more target groups not found".into())
}

fn listener_missing(op: &'static str) -> AwsError {
    error(ErrorKind::NotFound, op, "ListenerNotFound", "The specified listener does not exist.".into())
}

mod rules;

fn forwarded_arns(actions: &[Action]) -> impl Iterator<Item = &str> {
    actions.iter().flat_map(|a| match a {
        Action::Forward { target_groups, .. } => target_groups
            .iter()
            .filter_map(|t| match &t.target_group {
                TargetGroupRef::Arn(a) => Some(a.as_str()),
                TargetGroupRef::Name(_) => None,
            })
            .collect::<Vec<_>>(),
        _ => Vec::new(),
    })
}

impl FakeLoadBalancers {
    /// Target groups created here also appear in (and are removed from) `elbv2`.
    pub fn with_elbv2(elbv2: Arc<FakeElbV2>) -> Self {
        Self { state: Mutex::default(), elbv2: Some(elbv2) }
    }

    /// Operations called so far, with the ARN or name they were about.
    pub fn calls(&self) -> Vec<(&'static str, String)> {
        self.state.lock().unwrap().calls.clone()
    }

    pub fn clear_calls(&self) {
        self.state.lock().unwrap().calls.clear();
    }

    /// The next call of `operation` fails with `kind`.
    pub fn inject_fault(&self, operation: &'static str, kind: ErrorKind) {
        self.state.lock().unwrap().faults.push_back((operation, kind));
    }

    /// Adds a trust store (in AWS made from a CA bundle in S3); returns its ARN.
    pub fn add_trust_store(&self, name: &str) -> String {
        let mut s = self.state.lock().unwrap();
        let arn =
            format!("arn:aws:elasticloadbalancing:us-east-1:123456789012:truststore/{name}/{}", Self::next_id(&mut s));
        s.trust_stores.insert(name.to_string(), arn.clone());
        arn
    }

    /// Sets a load balancer's state (`provisioning`, `active`, `failed`).
    pub fn set_state(&self, arn: &str, state: &str) {
        if let Some(lb) = self.state.lock().unwrap().lbs.get_mut(arn) {
            lb.status.state = state.into();
        }
    }

    pub fn load_balancer_count(&self) -> usize {
        self.state.lock().unwrap().lbs.len()
    }

    pub fn target_group_count(&self) -> usize {
        self.state.lock().unwrap().tgs.len()
    }

    pub fn listener_count(&self) -> usize {
        self.state.lock().unwrap().listeners.len()
    }

    fn enter(&self, op: &'static str, about: &str) -> Result<MutexGuard<'_, State>, AwsError> {
        let mut s = self.state.lock().unwrap();
        s.calls.push((op, about.to_string()));
        if let Some(pos) = s.faults.iter().position(|(o, _)| *o == op) {
            let (_, kind) = s.faults.remove(pos).unwrap();
            return Err(AwsError::new(kind, SVC, op, "injected by FakeLoadBalancers"));
        }
        Ok(s)
    }

    fn next_id(s: &mut State) -> String {
        s.seq += 1;
        format!("{:016x}", 0x5eed_0000_0000_0000u64 + s.seq)
    }

    /// AWS: mutual TLS on TLS/HTTPS listeners only; `verify` names an existing trust store.
    fn check_mtls(s: &State, op: &'static str, l: &Listener) -> Result<(), AwsError> {
        let Some(m) = &l.mutual_authentication else { return Ok(()) };
        if !matches!(l.protocol, Protocol::Https | Protocol::Tls) && m.mode != MtlsMode::Off {
            return Err(error(
                ErrorKind::Invalid,
                op,
                "InvalidConfigurationRequest",
                "mutual authentication needs an HTTPS or TLS listener".into(),
            ));
        }
        match (&m.trust_store_arn, m.mode) {
            (Some(arn), MtlsMode::Verify) if !s.trust_stores.values().any(|a| a == arn) => {
                Err(error(ErrorKind::Invalid, op, "TrustStoreNotFound", format!("Trust store '{arn}' not found")))
            }
            (None, MtlsMode::Verify) => {
                Err(error(ErrorKind::Invalid, op, "ValidationError", "verify needs a TrustStoreArn".into()))
            }
            _ => Ok(()),
        }
    }

    fn check_forwards(s: &State, op: &'static str, l: &Listener) -> Result<(), AwsError> {
        require_target_group_arns(&l.default_actions).map_err(|m| AwsError::new(ErrorKind::Invalid, SVC, op, m))?;
        rules::check_jwt(op, l.protocol, &l.default_actions)?;
        match forwarded_arns(&l.default_actions).find(|a| !s.tgs.contains_key(*a)) {
            Some(_) => Err(tg_missing(op)),
            None => Ok(()),
        }
    }

    fn tags_mut<'a>(s: &'a mut State, arn: &str, op: &'static str) -> Result<&'a mut Tags, AwsError> {
        if let Some(lb) = s.lbs.get_mut(arn) {
            return Ok(&mut lb.lb.spec.tags);
        }
        if let Some(tg) = s.tgs.get_mut(arn) {
            return Ok(&mut tg.tags);
        }
        if let Some((_, r)) = s.rules.get_mut(arn) {
            return Ok(&mut r.tags);
        }
        match s.listeners.get_mut(arn) {
            Some((_, l)) => Ok(&mut l.tags),
            None => Err(lb_missing(op)),
        }
    }
}

fn without_attributes<T: Clone>(id: &str, spec: &T, clear: impl Fn(&mut T)) -> Observed<T> {
    let mut spec = spec.clone();
    clear(&mut spec);
    Observed { id: id.to_string(), spec }
}

fn found(f: &FoundLoadBalancer) -> FoundLoadBalancer {
    let mut f = f.clone();
    f.lb.spec.attributes.clear();
    f
}

fn merge(into: &mut Attributes, from: &Attributes) {
    into.extend(from.iter().map(|(k, v)| (k.clone(), v.clone())));
}

#[async_trait]
impl LoadBalancers for FakeLoadBalancers {
    async fn find_load_balancers(&self, tags: &Tags) -> Result<Vec<FoundLoadBalancer>, AwsError> {
        let s = self.enter("DescribeLoadBalancers", "")?;
        Ok(s.lbs.values().filter(|f| tags_match(&f.lb.spec.tags, tags)).map(found).collect())
    }

    async fn find_target_groups(&self, tags: &Tags) -> Result<Vec<Observed<TargetGroup>>, AwsError> {
        let s = self.enter("DescribeTargetGroups", "")?;
        Ok(s.tgs
            .iter()
            .filter(|(_, t)| tags_match(&t.tags, tags))
            .map(|(a, t)| without_attributes(a, t, |t| t.attributes.clear()))
            .collect())
    }

    async fn load_balancer(&self, arn: &str) -> Result<Option<FoundLoadBalancer>, AwsError> {
        let s = self.enter("DescribeLoadBalancers", arn)?;
        Ok(s.lbs.get(arn).map(found))
    }

    async fn load_balancer_by_name(&self, name: &str) -> Result<Option<FoundLoadBalancer>, AwsError> {
        let s = self.enter("DescribeLoadBalancers", name)?;
        Ok(s.lbs.values().find(|f| f.lb.spec.name == name).map(found))
    }

    async fn target_group_by_name(&self, name: &str) -> Result<Option<Observed<TargetGroup>>, AwsError> {
        let s = self.enter("DescribeTargetGroups", name)?;
        Ok(s.tgs.iter().find(|(_, t)| t.name == name).map(|(a, t)| without_attributes(a, t, |t| t.attributes.clear())))
    }

    async fn listeners(&self, load_balancer_arn: &str) -> Result<Vec<Observed<Listener>>, AwsError> {
        let s = self.enter("DescribeListeners", load_balancer_arn)?;
        if !s.lbs.contains_key(load_balancer_arn) {
            return Err(lb_missing("DescribeListeners"));
        }
        Ok(s.listeners
            .iter()
            .filter(|(_, (lb, _))| lb == load_balancer_arn)
            .map(|(a, (_, l))| {
                without_attributes(a, l, |l| {
                    l.attributes.clear();
                    l.tags.clear();
                    l.rules.clear();
                    if let Some((_, extra)) = l.certificates.split_first_mut() {
                        extra.sort();
                    }
                })
            })
            .collect())
    }

    async fn describe_tags(&self, arns: &[String]) -> Result<BTreeMap<String, Tags>, AwsError> {
        let mut s = self.enter("DescribeTags", &arns.join(","))?;
        Ok(arns
            .iter()
            .filter_map(|a| Some((a.clone(), Self::tags_mut(&mut s, a, "DescribeTags").ok()?.clone())))
            .collect())
    }

    async fn load_balancer_attributes(&self, arn: &str) -> Result<Attributes, AwsError> {
        let s = self.enter("DescribeLoadBalancerAttributes", arn)?;
        s.lbs.get(arn).map(|f| f.lb.spec.attributes.clone()).ok_or_else(|| lb_missing("DescribeLoadBalancerAttributes"))
    }

    async fn target_group_attributes(&self, arn: &str) -> Result<Attributes, AwsError> {
        let s = self.enter("DescribeTargetGroupAttributes", arn)?;
        s.tgs.get(arn).map(|t| t.attributes.clone()).ok_or_else(|| tg_missing("DescribeTargetGroupAttributes"))
    }

    async fn trust_store_arns(&self, names: &[String]) -> Result<BTreeMap<String, String>, AwsError> {
        let mut out = BTreeMap::new();
        for name in names {
            let s = self.enter("DescribeTrustStores", name)?;
            if let Some(arn) = s.trust_stores.get(name) {
                out.insert(name.clone(), arn.clone());
            }
        }
        Ok(out)
    }

    async fn listener_attributes(&self, arn: &str) -> Result<Attributes, AwsError> {
        let s = self.enter("DescribeListenerAttributes", arn)?;
        s.listeners
            .get(arn)
            .map(|(_, l)| l.attributes.clone())
            .ok_or_else(|| listener_missing("DescribeListenerAttributes"))
    }

    async fn create_load_balancer(&self, lb: &LoadBalancer) -> Result<FoundLoadBalancer, AwsError> {
        const OP: &str = "CreateLoadBalancer";
        let mut s = self.enter(OP, &lb.name)?;
        let mut spec = lb.clone();
        spec.attributes.clear();
        spec.subnets.sort();
        spec.security_groups.sort();
        if let Some(existing) = s.lbs.values().find(|f| f.lb.spec.name == lb.name) {
            // AWS: idempotent with the same settings, an error otherwise.
            let same = existing.lb.spec.lb_type == spec.lb_type
                && existing.lb.spec.scheme == spec.scheme
                && existing.lb.spec.subnets == spec.subnets;
            if same {
                return Ok(found(existing));
            }
            let msg = "A load balancer with the same name already exists".to_string();
            return Err(error(ErrorKind::AlreadyExists, OP, "DuplicateLoadBalancerName", msg));
        }
        if spec.subnets.is_empty() {
            return Err(error(ErrorKind::Invalid, OP, "SubnetNotFound", "at least one subnet is required".into()));
        }
        if lb.lb_type == LbType::Network && (lb.customer_owned_ipv4_pool.is_some() || lb.ipv4_ipam_pool.is_some()) {
            let msg = "customer-owned and IPAM pools are for Application Load Balancers only".into();
            return Err(error(ErrorKind::Invalid, OP, "ValidationError", msg));
        }
        source_nat_problem(lb.lb_type, lb.ip_address_type, lb.ipv6_source_nat, &spec.subnets)
            .map_or(Ok(()), |msg| Err(error(ErrorKind::Invalid, OP, "ValidationError", msg)))?;
        spec.subnets = picked_prefixes(&spec.subnets);
        if spec.lb_type == LbType::Network {
            spec.ipv6_source_nat = Some(spec.ipv6_source_nat.unwrap_or(false));
        }
        let id = Self::next_id(&mut s);
        let kind = if lb.lb_type == LbType::Network { "net" } else { "app" };
        let arn = format!("{PREFIX}:loadbalancer/{kind}/{}/{id}", lb.name);
        let status = LoadBalancerStatus {
            dns_name: format!("{}-{}.elb.us-east-1.amazonaws.com", lb.name, &id[8..]),
            vpc_id: "vpc-fake".into(),
            state: "active".into(),
            enforce_inbound_rules_on_private_link: (!spec.security_groups.is_empty()).then_some(true),
        };
        let f = FoundLoadBalancer { lb: Observed { id: arn.clone(), spec }, status };
        s.lbs.insert(arn, f.clone());
        Ok(f)
    }

    async fn delete_load_balancer(&self, arn: &str) -> Result<(), AwsError> {
        let mut s = self.enter("DeleteLoadBalancer", arn)?;
        if s.lbs.remove(arn).is_some() {
            s.listeners.retain(|_, (lb, _)| lb != arn); // AWS deletes the listeners with it
            let State { listeners, rules, .. } = &mut *s;
            rules.retain(|_, (l, _)| listeners.contains_key(l));
        }
        Ok(())
    }

    async fn modify_load_balancer_attributes(&self, arn: &str, attributes: &Attributes) -> Result<(), AwsError> {
        let mut s = self.enter("ModifyLoadBalancerAttributes", arn)?;
        let f = s.lbs.get_mut(arn).ok_or_else(|| lb_missing("ModifyLoadBalancerAttributes"))?;
        merge(&mut f.lb.spec.attributes, attributes);
        Ok(())
    }

    async fn set_subnets(
        &self,
        arn: &str,
        subnets: &[SubnetMapping],
        ipv6_source_nat: Option<bool>,
    ) -> Result<(), AwsError> {
        let mut s = self.enter("SetSubnets", arn)?;
        let f = s.lbs.get_mut(arn).ok_or_else(|| lb_missing("SetSubnets"))?;
        let on = ipv6_source_nat.or(f.lb.spec.ipv6_source_nat);
        source_nat_problem(f.lb.spec.lb_type, f.lb.spec.ip_address_type, on, subnets)
            .map_or(Ok(()), |msg| Err(error(ErrorKind::Invalid, "SetSubnets", "ValidationError", msg)))?;
        f.lb.spec.subnets = picked_prefixes(subnets);
        f.lb.spec.subnets.sort();
        f.lb.spec.ipv6_source_nat = on;
        Ok(())
    }

    async fn set_security_groups(&self, arn: &str, security_groups: &[String]) -> Result<(), AwsError> {
        let mut s = self.enter("SetSecurityGroups", arn)?;
        let f = s.lbs.get_mut(arn).ok_or_else(|| lb_missing("SetSecurityGroups"))?;
        f.lb.spec.security_groups = security_groups.to_vec();
        f.lb.spec.security_groups.sort();
        Ok(())
    }

    async fn set_private_link_enforcement(
        &self,
        arn: &str,
        security_groups: &[String],
        on: bool,
    ) -> Result<(), AwsError> {
        const OP: &str = "SetSecurityGroups";
        let mut s = self.enter(OP, arn)?;
        let f = s.lbs.get_mut(arn).ok_or_else(|| lb_missing(OP))?;
        f.lb.spec.security_groups = security_groups.to_vec();
        f.lb.spec.security_groups.sort();
        f.status.enforce_inbound_rules_on_private_link = Some(on);
        Ok(())
    }

    async fn minimum_capacity(&self, arn: &str) -> Result<Option<u32>, AwsError> {
        const OP: &str = "DescribeCapacityReservation";
        let s = self.enter(OP, arn)?;
        s.lbs.get(arn).ok_or_else(|| lb_missing(OP))?;
        Ok(s.capacity.get(arn).copied())
    }

    async fn set_minimum_capacity(&self, arn: &str, units: Option<u32>) -> Result<(), AwsError> {
        const OP: &str = "ModifyCapacityReservation";
        let mut s = self.enter(OP, arn)?;
        s.lbs.get(arn).ok_or_else(|| lb_missing(OP))?;
        match units {
            Some(n) => s.capacity.insert(arn.to_string(), n),
            None => s.capacity.remove(arn),
        };
        Ok(())
    }

    async fn set_ip_address_type(&self, arn: &str, ip_address_type: LbIpAddressType) -> Result<(), AwsError> {
        let mut s = self.enter("SetIpAddressType", arn)?;
        let f = s.lbs.get_mut(arn).ok_or_else(|| lb_missing("SetIpAddressType"))?;
        f.lb.spec.ip_address_type = ip_address_type;
        Ok(())
    }

    async fn modify_ip_pools(&self, arn: &str, ipv4_ipam_pool: Option<&str>) -> Result<(), AwsError> {
        let mut s = self.enter("ModifyIpPools", arn)?;
        let f = s.lbs.get_mut(arn).ok_or_else(|| lb_missing("ModifyIpPools"))?;
        if f.lb.spec.lb_type != LbType::Application {
            let msg = "IPAM pools are supported for Application Load Balancers only";
            return Err(AwsError::new(ErrorKind::Invalid, SVC, "ModifyIpPools", msg));
        }
        f.lb.spec.ipv4_ipam_pool = ipv4_ipam_pool.map(str::to_string);
        Ok(())
    }

    async fn create_target_group(&self, tg: &TargetGroup) -> Result<Observed<TargetGroup>, AwsError> {
        const OP: &str = "CreateTargetGroup";
        let mut s = self.enter(OP, &tg.name)?;
        if s.tgs.values().any(|t| t.name == tg.name) {
            let msg = "A target group with the same name already exists".to_string();
            return Err(error(ErrorKind::AlreadyExists, OP, "DuplicateTargetGroupName", msg));
        }
        let arn = format!("{PREFIX}:targetgroup/{}/{}", tg.name, Self::next_id(&mut s));
        let mut spec = tg.clone();
        spec.attributes.clear();
        s.tgs.insert(arn.clone(), spec.clone());
        drop(s);
        if let Some(e) = &self.elbv2 {
            e.add_target_group(TargetGroupInfo::created(&arn, tg));
        }
        Ok(Observed { id: arn, spec })
    }

    async fn modify_target_group_health_check(&self, arn: &str, health_check: &HealthCheck) -> Result<(), AwsError> {
        let mut s = self.enter("ModifyTargetGroup", arn)?;
        let t = s.tgs.get_mut(arn).ok_or_else(|| tg_missing("ModifyTargetGroup"))?;
        t.health_check = health_check.clone();
        Ok(())
    }

    async fn modify_target_group_attributes(&self, arn: &str, attributes: &Attributes) -> Result<(), AwsError> {
        let mut s = self.enter("ModifyTargetGroupAttributes", arn)?;
        let t = s.tgs.get_mut(arn).ok_or_else(|| tg_missing("ModifyTargetGroupAttributes"))?;
        merge(&mut t.attributes, attributes);
        Ok(())
    }

    async fn delete_target_group(&self, arn: &str) -> Result<(), AwsError> {
        const OP: &str = "DeleteTargetGroup";
        let mut s = self.enter(OP, arn)?;
        let rule_actions = s.rules.values().flat_map(|(_, r)| forwarded_arns(&r.actions).collect::<Vec<_>>());
        if s.listeners
            .values()
            .flat_map(|(_, l)| forwarded_arns(&l.default_actions))
            .chain(rule_actions)
            .any(|a| a == arn)
        {
            let msg = format!("Target group '{arn}' is currently in use by a listener or a rule");
            return Err(error(ErrorKind::InUse, OP, "ResourceInUse", msg));
        }
        s.tgs.remove(arn);
        drop(s);
        if let Some(e) = &self.elbv2 {
            e.remove_target_group(arn);
        }
        Ok(())
    }

    async fn id_targets(&self, target_group_arn: &str) -> Result<Vec<(String, u16)>, AwsError> {
        let e = self.elbv2.as_ref().ok_or_else(|| tg_missing("DescribeTargetHealth"))?;
        let found = e.describe_instance_targets(target_group_arn).await?;
        Ok(found.into_iter().map(|(t, _)| (t.id, t.port)).collect())
    }

    async fn write_id_targets(
        &self,
        target_group_arn: &str,
        targets: &[(String, u16)],
        register: bool,
    ) -> Result<(), AwsError> {
        const OP: &str = "RegisterTargets";
        if register {
            // AWS: an `alb` target is a load balancer with a listener on the target's port.
            let s = self.enter(OP, target_group_arn)?;
            for (id, port) in targets.iter().filter(|(id, _)| id.starts_with("arn:")) {
                let listening = s.listeners.values().any(|(lb, l)| lb == id && l.port == *port);
                if !s.lbs.contains_key(id) || !listening {
                    let msg = format!("load balancer {id} has no listener on port {port}");
                    return Err(error(ErrorKind::Invalid, OP, "InvalidTarget", msg));
                }
            }
        }
        let e = self.elbv2.as_ref().ok_or_else(|| tg_missing(OP))?;
        let list: Vec<_> = targets.iter().map(|(id, port)| lbc_model::nodes::InstanceTarget::new(id, *port)).collect();
        e.write_instance_targets(target_group_arn, &list, register).await
    }

    async fn create_listener(
        &self,
        load_balancer_arn: &str,
        listener: &Listener,
    ) -> Result<Observed<Listener>, AwsError> {
        const OP: &str = "CreateListener";
        let mut s = self.enter(OP, load_balancer_arn)?;
        Self::check_forwards(&s, OP, listener)?;
        Self::check_mtls(&s, OP, listener)?;
        if !s.lbs.contains_key(load_balancer_arn) {
            return Err(lb_missing(OP));
        }
        if s.listeners.values().any(|(lb, l)| lb == load_balancer_arn && l.port == listener.port) {
            return Err(error(
                ErrorKind::AlreadyExists,
                OP,
                "DuplicateListener",
                "A listener with the specified port already exists.".into(),
            ));
        }
        let arn = format!("{}/{}", load_balancer_arn.replace(":loadbalancer/", ":listener/"), Self::next_id(&mut s));
        let mut spec = listener.clone();
        spec.attributes.clear();
        spec.rules.clear();
        spec.certificates.truncate(1); // AWS: exactly one, the default; others via AddListenerCertificates
        s.listeners.insert(arn.clone(), (load_balancer_arn.to_string(), spec.clone()));
        Ok(Observed { id: arn, spec })
    }

    async fn modify_listener(&self, arn: &str, listener: &Listener) -> Result<(), AwsError> {
        const OP: &str = "ModifyListener";
        let mut s = self.enter(OP, arn)?;
        Self::check_forwards(&s, OP, listener)?;
        Self::check_mtls(&s, OP, listener)?;
        let (_, l) = s.listeners.get_mut(arn).ok_or_else(|| listener_missing(OP))?;
        let (attributes, tags) = (std::mem::take(&mut l.attributes), std::mem::take(&mut l.tags));
        // Not sent: AWS keeps the listener's mutual TLS.
        let mutual_authentication = listener.mutual_authentication.clone().or(l.mutual_authentication.take());
        // The certificate given replaces the default one; attached SNI certificates stay.
        let mut certificates = std::mem::take(&mut l.certificates);
        match (listener.certificates.first(), certificates.is_empty()) {
            (Some(c), true) => certificates.push(c.clone()),
            (Some(c), false) => certificates[0] = c.clone(),
            (None, _) => {}
        }
        *l = Listener { attributes, tags, certificates, mutual_authentication, rules: Vec::new(), ..listener.clone() };
        Ok(())
    }

    async fn modify_listener_attributes(&self, arn: &str, attributes: &Attributes) -> Result<(), AwsError> {
        let mut s = self.enter("ModifyListenerAttributes", arn)?;
        let (_, l) = s.listeners.get_mut(arn).ok_or_else(|| listener_missing("ModifyListenerAttributes"))?;
        merge(&mut l.attributes, attributes);
        Ok(())
    }

    async fn delete_listener(&self, arn: &str) -> Result<(), AwsError> {
        let mut s = self.enter("DeleteListener", arn)?;
        s.listeners.remove(arn);
        s.rules.retain(|_, (l, _)| l != arn);
        Ok(())
    }

    async fn add_listener_certificates(&self, listener_arn: &str, certificates: &[String]) -> Result<(), AwsError> {
        self.change_certificates("AddListenerCertificates", listener_arn, certificates, true)
    }

    async fn remove_listener_certificates(&self, listener_arn: &str, certificates: &[String]) -> Result<(), AwsError> {
        self.change_certificates("RemoveListenerCertificates", listener_arn, certificates, false)
    }

    async fn rules(&self, listener_arn: &str) -> Result<Vec<Observed<Rule>>, AwsError> {
        self.list_rules(listener_arn)
    }

    async fn create_rule(&self, listener_arn: &str, rule: &Rule) -> Result<Observed<Rule>, AwsError> {
        self.add_rule(listener_arn, rule)
    }

    async fn modify_rule(&self, arn: &str, rule: &Rule) -> Result<(), AwsError> {
        self.change_rule(arn, rule)
    }

    async fn set_rule_priorities(&self, priorities: &[(String, u32)]) -> Result<(), AwsError> {
        self.move_rules(priorities)
    }

    async fn delete_rule(&self, arn: &str) -> Result<(), AwsError> {
        self.enter("DeleteRule", arn)?.rules.remove(arn);
        Ok(())
    }

    async fn add_tags(&self, arn: &str, tags: &Tags) -> Result<(), AwsError> {
        let mut s = self.enter("AddTags", arn)?;
        merge(Self::tags_mut(&mut s, arn, "AddTags")?, tags);
        Ok(())
    }

    async fn remove_tags(&self, arn: &str, keys: &[String]) -> Result<(), AwsError> {
        let mut s = self.enter("RemoveTags", arn)?;
        let t = Self::tags_mut(&mut s, arn, "RemoveTags")?;
        keys.iter().for_each(|k| {
            t.remove(k);
        });
        Ok(())
    }
}

/// ELBv2's checks of IPv6 source NAT: NLB only, dualstack, prefixes only when it is on.
fn source_nat_problem(
    lb_type: LbType,
    ip_type: lbc_model::lb::LbIpAddressType,
    on: Option<bool>,
    subnets: &[SubnetMapping],
) -> Option<String> {
    let prefixes = subnets.iter().any(|m| m.source_nat_ipv6_prefix.is_some());
    if (on.is_some() || prefixes) && lb_type != LbType::Network {
        return Some("EnablePrefixForIpv6SourceNat is for Network Load Balancers only".into());
    }
    if on == Some(true) && ip_type == lbc_model::lb::LbIpAddressType::Ipv4 {
        return Some("EnablePrefixForIpv6SourceNat needs the dualstack IP address type".into());
    }
    (prefixes && on != Some(true)).then(|| "a SourceNatIpv6Prefix needs EnablePrefixForIpv6SourceNat on".into())
}

/// AWS answers `auto_assigned` with a prefix of its choice.
fn picked_prefixes(subnets: &[SubnetMapping]) -> Vec<SubnetMapping> {
    subnets
        .iter()
        .enumerate()
        .map(|(i, m)| SubnetMapping {
            source_nat_ipv6_prefix: match m.source_nat_ipv6_prefix.as_deref() {
                Some(lbc_model::lb::SOURCE_NAT_AUTO_ASSIGNED) => Some(format!("2600:1f18:0:{i:x}:a::/80")),
                other => other.map(str::to_string),
            },
            ..m.clone()
        })
        .collect()
}
