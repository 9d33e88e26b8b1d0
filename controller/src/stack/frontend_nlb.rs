//! The frontend NLB of an IngressGroup, deployed after its ALB (`lbc_model::ingress::frontend_nlb`
//! decides): subnets and named security groups looked up, the NLB stack planned against its own
//! part of the observed stack and executed, then the ALB registered as the one target of each of
//! its target groups. Without a frontend NLB wanted, whatever exists of one is deleted.

use super::deploy::{self, Resolved};
use super::{FAILED_BUILD, FAILED_DEPLOY, StackIo, SubnetNeed, observe};
use crate::error::{Error, Result, Retry};
use lbc_model::ingress::frontend_nlb::{AlbFacts, AlbTargetChange, FrontendNlbPlan, alb_target_changes, build};
use lbc_model::ingress::keys::{self as k, full_key};
use lbc_model::lb::build::BuildContext;
use lbc_model::lb::diff::{ObservedStack, PlanOptions, Step, plan, plan_delete};
use lbc_model::lb::subnets::SubnetSelector;
use lbc_model::lb::tags::{resource_tag_key, stack_tag_key};
use lbc_model::lb::{LoadBalancer, Tags};
use lbc_model::names::CLUSTER_TAG;

/// What the group asks of its frontend NLB.
pub struct Wanted<'a> {
    pub plan: &'a FrontendNlbPlan,
    /// A named group (`group.name`).
    pub explicit: bool,
}

/// The ALB as deployed: what the NLB is built from.
pub struct DeployedAlb<'a> {
    pub spec: &'a LoadBalancer,
    pub arn: &'a str,
    /// Its security group IDs (the managed one resolved).
    pub security_groups: Vec<String>,
}

/// What the frontend stage did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The NLB's DNS name, when there is one.
    pub dns_name: Option<String>,
    /// One summary per AWS write.
    pub done: Vec<String>,
}

fn blocked(event: &'static str, reason: String) -> Error {
    Error::Blocked { event, reason, retry: Retry::SyncPeriod }
}

/// Deploys (or deletes) the frontend NLB of `stack_id`; `observed` is its part of the stack.
pub async fn sync(
    io: &StackIo,
    stack_id: &str,
    wanted: Option<Wanted<'_>>,
    alb: &DeployedAlb<'_>,
    c: &BuildContext,
    mut observed: ObservedStack,
    opts: &PlanOptions,
) -> Result<Outcome> {
    let Some(w) = wanted else {
        let steps = plan_delete(&observed);
        deploy::execute(io, stack_id, &steps, &[], &mut Resolved::default()).await?;
        return Ok(Outcome { dns_name: None, done: steps.iter().map(Step::summary).collect() });
    };
    let selector = match &w.plan.subnets {
        Some(list) => SubnetSelector::Explicit(list.clone()),
        None => SubnetSelector::Discover,
    };
    let annotation = full_key(k::FRONTEND_NLB_SUBNETS);
    let need = SubnetNeed { scheme: w.plan.scheme, min_azs: 1, annotation: &annotation };
    let subnets = super::subnets(io, &selector, &need).await?;
    let security_groups = match &w.plan.security_groups {
        None => None,
        Some(list) => Some(resolve_groups(io, list).await?),
    };
    let user_tags = user_tags(io, &alb.spec.tags);
    let facts = AlbFacts {
        name: &alb.spec.name,
        ip_address_type: alb.spec.ip_address_type,
        security_groups: &alb.security_groups,
        user_tags: &user_tags,
    };
    let built = build(w.plan, &facts, stack_id, w.explicit, c, &subnets, security_groups)
        .map_err(|e| blocked(FAILED_BUILD, format!("frontend NLB: {}", e.problems.join("; "))))?;
    observed.foreign = observe::foreign(io, &built.stack, &observed).await?;
    let steps = plan(&built.stack, &observed, opts)
        .map_err(|e| blocked(FAILED_DEPLOY, format!("frontend NLB {}: {e}", built.stack.load_balancer.name)))?;
    let mut resolved = super::pipeline::resolved_from(&observed);
    deploy::execute(io, stack_id, &steps, &built.stack.listeners, &mut resolved).await?;
    let mut done: Vec<String> = steps.iter().map(Step::summary).collect();
    for t in &built.targets {
        let arn = resolved.target_groups.get(&t.target_group).ok_or_else(|| {
            Error::Internal(format!("frontend target group {} has no ARN after its plan ran", t.target_group))
        })?;
        let registered = io.lbs.id_targets(arn).await?;
        for change in alb_target_changes(arn, alb.arn, t.port, &registered) {
            io.base.ensure_leader()?;
            match &change {
                AlbTargetChange::Register { target_group_arn, id, port } => {
                    io.lbs.write_id_targets(target_group_arn, &[(id.clone(), *port)], true).await?;
                    done.push(format!("registered ALB {id}:{port} in frontend target group {}", t.target_group));
                }
                AlbTargetChange::Deregister { target_group_arn, id, port } => {
                    io.lbs.write_id_targets(target_group_arn, &[(id.clone(), *port)], false).await?;
                    done.push(format!("deregistered {id}:{port} from frontend target group {}", t.target_group));
                }
            }
        }
    }
    Ok(Outcome { dns_name: resolved.dns_name, done })
}

/// The ALB's tags without the tracking ones: what the NLB carries unless `frontend-nlb-tags`.
fn user_tags(io: &StackIo, tags: &Tags) -> Tags {
    let tracking = [CLUSTER_TAG.to_string(), stack_tag_key(io.tag_prefix), resource_tag_key(io.tag_prefix)];
    tags.iter().filter(|(key, _)| !tracking.contains(key)).map(|(key, v)| (key.clone(), v.clone())).collect()
}

/// `frontend-nlb-security-groups` as IDs, in the annotation's order (names looked up by `Name`).
async fn resolve_groups(io: &StackIo, list: &[String]) -> Result<Vec<String>> {
    let names: Vec<String> = list.iter().filter(|g| !g.starts_with("sg-")).cloned().collect();
    if names.is_empty() {
        return Ok(list.to_vec());
    }
    let q = lbc_aws::net::SecurityGroupQuery::Names { vpc_id: io.vpc_id.clone(), names: names.clone() };
    let found = io.net.security_groups(&q).await?;
    let mut out = Vec::new();
    for g in list {
        if g.starts_with("sg-") {
            out.push(g.clone());
            continue;
        }
        match found.iter().find(|f| &f.spec.name == g || f.spec.tags.get("Name") == Some(g)) {
            Some(f) => out.push(f.id.clone()),
            None => {
                return Err(Error::Blocked {
                    event: FAILED_BUILD,
                    reason: format!(
                        "security group {g:?} (annotation {}) does not exist in VPC {}; use its ID (sg-…) or fix the name",
                        full_key(k::FRONTEND_NLB_SECURITY_GROUPS),
                        io.vpc_id
                    ),
                    retry: Retry::SyncPeriod,
                });
            }
        }
    }
    Ok(out)
}
