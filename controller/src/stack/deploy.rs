//! Carries out a plan (`lbc_model::lb::diff::Step`s) in order, resolving the names of resources
//! created earlier in the same plan to their ARNs/IDs. Stops at the first failure; the next
//! reconcile observes again and re-plans from what actually exists.

use super::StackIo;
use crate::error::{Error, Result};
use lbc_model::lb::diff::{ResourceKind, SecurityGroupRef, Step};
use lbc_model::lb::{Action, Listener, Rule, TargetGroupRef};
use std::collections::BTreeMap;

/// ARNs/IDs known while a plan runs: from what was observed, then from what the plan creates.
#[derive(Default, Debug)]
pub struct Resolved {
    pub load_balancer_arn: Option<String>,
    pub dns_name: Option<String>,
    pub frontend_security_group: Option<String>,
    /// Target group name → ARN.
    pub target_groups: BTreeMap<String, String>,
    /// Listener port → ARN (rules are created on a listener by port).
    pub listeners: BTreeMap<u16, String>,
}

impl Resolved {
    fn sg(&self, r: &SecurityGroupRef) -> Result<String> {
        match r {
            SecurityGroupRef::Id(id) => Ok(id.clone()),
            SecurityGroupRef::ManagedFrontend => self.frontend_security_group.clone().ok_or_else(|| {
                Error::Internal("the plan refers to the managed frontend security group before it exists".into())
            }),
        }
    }

    fn tg(&self, r: &TargetGroupRef) -> Result<TargetGroupRef> {
        match r {
            TargetGroupRef::Arn(_) => Ok(r.clone()),
            TargetGroupRef::Name(n) => {
                self.target_groups.get(n).map(|a| TargetGroupRef::Arn(a.clone())).ok_or_else(|| {
                    Error::Internal(format!("target group {n} has no ARN yet (not created by this plan)"))
                })
            }
        }
    }

    /// The actions with every target group named by ARN.
    fn actions(&self, actions: &[Action]) -> Result<Vec<Action>> {
        let mut out = actions.to_vec();
        for a in &mut out {
            if let Action::Forward { target_groups, .. } = a {
                for t in target_groups.iter_mut() {
                    t.target_group = self.tg(&t.target_group)?;
                }
            }
        }
        Ok(out)
    }

    fn listener(&self, l: &Listener) -> Result<Listener> {
        Ok(Listener { default_actions: self.actions(&l.default_actions)?, ..l.clone() })
    }

    fn rule(&self, r: &Rule) -> Result<Rule> {
        Ok(Rule { actions: self.actions(&r.actions)?, ..r.clone() })
    }

    fn listener_arn(&self, port: u16) -> Result<String> {
        self.listeners.get(&port).cloned().ok_or_else(|| {
            Error::Internal(format!("the plan adds a rule to listener {port}, which neither exists nor was created"))
        })
    }
}

/// Runs `steps` for stack `stack_id`; `listeners` (the desired ones) supply whole listeners for
/// modifications.
pub async fn execute(
    io: &StackIo,
    stack_id: &str,
    steps: &[Step],
    listeners: &[Listener],
    r: &mut Resolved,
) -> Result<()> {
    for step in steps {
        io.base.ensure_leader()?;
        tracing::info!(stack = %stack_id, step = %step.summary(), "deploying");
        run(io, step, listeners, r).await?;
    }
    Ok(())
}

async fn run(io: &StackIo, step: &Step, listeners: &[Listener], r: &mut Resolved) -> Result<()> {
    let lbs = &io.lbs;
    match step {
        Step::CreateSecurityGroup { group } => {
            r.frontend_security_group = Some(io.net.create_security_group(group).await?);
        }
        Step::AuthorizeIngress { group, rules } => io.net.authorize_ingress(&r.sg(group)?, rules).await?,
        Step::RevokeIngress { group_id, rules } => io.net.revoke_ingress(group_id, rules).await?,
        Step::ReplaceLoadBalancer { arn, name, reason } => {
            // The reconciler published the event before the plan ran.
            tracing::warn!(load_balancer = %name, %reason, "replacing load balancer");
            lbs.delete_load_balancer(arn).await?;
            r.load_balancer_arn = None;
            r.listeners.clear();
        }
        Step::CreateTargetGroup { target_group } => {
            let created = lbs.create_target_group(target_group).await?;
            let info = lbc_aws::elbv2::TargetGroupInfo::created(&created.id, &created.spec);
            io.base.learn_created_target_group(info, &created.spec.tags);
            if !target_group.attributes.is_empty() {
                lbs.modify_target_group_attributes(&created.id, &target_group.attributes).await?;
            }
            r.target_groups.insert(target_group.name.clone(), created.id);
        }
        Step::ModifyTargetGroupHealthCheck { arn, health_check, .. } => {
            lbs.modify_target_group_health_check(arn, health_check).await?
        }
        Step::ModifyTargetGroupAttributes { arn, attributes, .. } => {
            lbs.modify_target_group_attributes(arn, attributes).await?
        }
        Step::CreateLoadBalancer { load_balancer, security_groups } => {
            let mut lb = load_balancer.clone();
            lb.security_groups = security_groups.iter().map(|g| r.sg(g)).collect::<Result<_>>()?;
            let created = lbs.create_load_balancer(&lb).await?;
            if !lb.attributes.is_empty() {
                lbs.modify_load_balancer_attributes(&created.lb.id, &lb.attributes).await?;
            }
            r.dns_name = Some(created.status.dns_name.clone());
            r.load_balancer_arn = Some(created.lb.id);
        }
        Step::SetSecurityGroups { arn, security_groups } => {
            let ids: Vec<String> = security_groups.iter().map(|g| r.sg(g)).collect::<Result<_>>()?;
            lbs.set_security_groups(arn, &ids).await?
        }
        Step::SetSubnets { arn, subnets, ipv6_source_nat } => lbs.set_subnets(arn, subnets, *ipv6_source_nat).await?,
        Step::SetIpAddressType { arn, ip_address_type } => lbs.set_ip_address_type(arn, *ip_address_type).await?,
        Step::ModifyIpPools { arn, ipv4_ipam_pool } => lbs.modify_ip_pools(arn, ipv4_ipam_pool.as_deref()).await?,
        Step::ModifyLoadBalancerAttributes { arn, attributes } => {
            lbs.modify_load_balancer_attributes(arn, attributes).await?
        }
        Step::CreateListener { listener } => {
            let lb = r.load_balancer_arn.clone().ok_or_else(|| {
                Error::Internal(format!("listener {} planned before its load balancer exists", listener.port))
            })?;
            let l = r.listener(listener)?;
            let created = lbs.create_listener(&lb, &l).await?;
            r.listeners.insert(l.port, created.id.clone());
            // CreateListener takes the default certificate only (see Step::CreateListener).
            if let Some((_, extra)) = l.certificates.split_first()
                && !extra.is_empty()
            {
                lbs.add_listener_certificates(&created.id, extra).await?;
            }
            if !l.attributes.is_empty() {
                lbs.modify_listener_attributes(&created.id, &l.attributes).await?;
            }
        }
        Step::ModifyListener { arn, port, .. } => {
            // The adapter sets every field; the desired listener is the whole truth for this port.
            let want = listeners.iter().find(|l| l.port == *port).ok_or_else(|| {
                Error::Internal(format!("plan modifies listener {port}, which the desired stack does not have"))
            })?;
            lbs.modify_listener(arn, &r.listener(want)?).await?
        }
        Step::AddListenerCertificates { arn, certificates, .. } => {
            lbs.add_listener_certificates(arn, certificates).await?
        }
        Step::RemoveListenerCertificates { arn, certificates, .. } => {
            lbs.remove_listener_certificates(arn, certificates).await?
        }
        Step::ModifyListenerAttributes { arn, attributes, .. } => {
            lbs.modify_listener_attributes(arn, attributes).await?
        }
        Step::DeleteListener { arn, port } => {
            lbs.delete_listener(arn).await?;
            r.listeners.remove(port);
        }
        Step::CreateRule { port, rule } => {
            lbs.create_rule(&r.listener_arn(*port)?, &r.rule(rule)?).await?;
        }
        Step::ModifyRule { arn, rule, .. } => lbs.modify_rule(arn, &r.rule(rule)?).await?,
        Step::SetRulePriorities { priorities, .. } => lbs.set_rule_priorities(priorities).await?,
        Step::DeleteRule { arn, .. } => lbs.delete_rule(arn).await?,
        Step::DeleteLoadBalancer { arn, .. } => {
            lbs.delete_load_balancer(arn).await?;
            r.load_balancer_arn = None;
            r.listeners.clear();
        }
        Step::DeleteTargetGroup { arn, .. } => lbs.delete_target_group(arn).await?,
        Step::DeleteSecurityGroup { id, .. } => io.net.delete_security_group(id).await?,
        Step::AddTags { kind: ResourceKind::SecurityGroup, id, tags } => {
            io.net.create_tags(std::slice::from_ref(id), tags).await?
        }
        Step::AddTags { id, tags, .. } => lbs.add_tags(id, tags).await?,
        Step::RemoveTags { kind: ResourceKind::SecurityGroup, id, keys } => {
            io.net.delete_tags(std::slice::from_ref(id), keys).await?
        }
        Step::RemoveTags { id, keys, .. } => lbs.remove_tags(id, keys).await?,
    }
    Ok(())
}
