//! What AWS holds for one stack: resources carrying its ownership tags, plus look-alikes under
//! the names the stack wants but without those tags (never touched).

use super::StackIo;
use crate::error::Result;
use lbc_aws::lb::FoundLoadBalancer;
use lbc_aws::net::SecurityGroupQuery;
use lbc_model::ingress::frontend_nlb::is_frontend_resource;
use lbc_model::lb::diff::{ForeignResource, ObservedStack, ResourceKind};
use lbc_model::lb::tags::{RESOURCE_MANAGED_SECURITY_GROUP, resource_tag_key, stack_tags};
use lbc_model::lb::{LbType, Stack, Tags};

/// What AWS holds of one stack: the load balancer's part and, for an IngressGroup, the frontend
/// NLB's (`lbc_model::ingress::frontend_nlb`), told apart by the `<prefix>/resource` tag so neither
/// plan sees, nor deletes, the other's resources.
#[derive(Debug, Default)]
pub struct Parts {
    pub main: ObservedStack,
    /// Empty unless a frontend NLB or one of its target groups exists.
    pub frontend: ObservedStack,
}

/// Reads the stack `stack_id` from AWS: load balancer (with attributes), its listeners (with
/// attributes; an ALB's listeners with their rules), target groups (with attributes) and the
/// managed frontend security group.
/// `desired`, when given, picks among several load balancers (one is kept, see the log).
pub async fn observe(io: &StackIo, stack_id: &str, desired: Option<&Stack>) -> Result<Parts> {
    read(io, stack_id, desired, Depth::Full).await
}

/// What deleting the stack needs (`model::lb::diff::plan_delete`): the load balancer with its
/// attributes (deletion protection), the target groups and the security group; not the
/// listeners and rules, which AWS deletes with the load balancer, nor the target groups'
/// attributes.
pub async fn for_deletion(io: &StackIo, stack_id: &str) -> Result<Parts> {
    read(io, stack_id, None, Depth::ForDeletion).await
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Depth {
    Full,
    ForDeletion,
}

fn is_frontend(io: &StackIo, tags: &Tags) -> bool {
    tags.get(&resource_tag_key(io.tag_prefix)).is_some_and(|r| is_frontend_resource(r))
}

async fn read(io: &StackIo, stack_id: &str, desired: Option<&Stack>, depth: Depth) -> Result<Parts> {
    let tags = stack_tags(io.tag_prefix, &io.cluster_name, stack_id);
    let mut out = Parts::default();
    let (fronts, mut lbs): (Vec<_>, Vec<_>) =
        io.lbs.find_load_balancers(&tags).await?.into_iter().partition(|f| is_frontend(io, &f.lb.spec.tags));
    if lbs.len() > 1 {
        // Two load balancers for one stack: keep the one the desired stack names, report the rest.
        tracing::warn!(stack = stack_id, count = lbs.len(), "several load balancers carry this stack's tags");
        if let Some(d) = desired {
            lbs.sort_by_key(|f| f.lb.spec.name != d.load_balancer.name);
        }
    }
    if fronts.len() > 1 {
        tracing::warn!(stack = stack_id, count = fronts.len(), "several frontend NLBs carry this stack's tags");
    }
    for (found, part) in [(lbs.into_iter().next(), &mut out.main), (fronts.into_iter().next(), &mut out.frontend)] {
        if let Some(found) = found {
            read_load_balancer(io, found, part, depth).await?;
        }
    }
    let (fronts, main): (Vec<_>, Vec<_>) =
        io.lbs.find_target_groups(&tags).await?.into_iter().partition(|t| is_frontend(io, &t.spec.tags));
    for (mut tgs, part) in [(main, &mut out.main), (fronts, &mut out.frontend)] {
        for tg in tgs.iter_mut().filter(|_| depth == Depth::Full) {
            tg.spec.attributes = io.lbs.target_group_attributes(&tg.id).await?;
        }
        part.target_groups = tgs;
    }

    let mut sg_tags: Tags = tags.clone();
    sg_tags.insert(resource_tag_key(io.tag_prefix), RESOURCE_MANAGED_SECURITY_GROUP.into());
    let query = SecurityGroupQuery::Tags { vpc_id: Some(io.vpc_id.clone()), tags: sg_tags };
    out.main.frontend_security_group = io.net.security_groups(&query).await?.into_iter().next();

    Ok(out)
}

/// The load balancer with its attributes and, at full depth, its listeners (with attributes and
/// tags; an ALB's with their rules).
async fn read_load_balancer(
    io: &StackIo,
    mut found: FoundLoadBalancer,
    out: &mut ObservedStack,
    depth: Depth,
) -> Result<()> {
    found.lb.spec.attributes = io.lbs.load_balancer_attributes(&found.lb.id).await?;
    if depth == Depth::Full {
        let mut listeners = io.lbs.listeners(&found.lb.id).await?;
        for l in &mut listeners {
            l.spec.attributes = io.lbs.listener_attributes(&l.id).await?;
        }
        let arns: Vec<String> = listeners.iter().map(|l| l.id.clone()).collect();
        let listener_tags = io.lbs.describe_tags(&arns).await?;
        for l in &mut listeners {
            l.spec.tags = listener_tags.get(&l.id).cloned().unwrap_or_default();
        }
        if found.lb.spec.lb_type == LbType::Application {
            for l in &listeners {
                out.rules.insert(l.id.clone(), io.lbs.rules(&l.id).await?);
            }
        }
        out.listeners = listeners;
    }
    out.load_balancer = Some((found.lb, found.status));
    Ok(())
}

/// Resources named like the desired ones that we did not find by tags.
pub async fn foreign(io: &StackIo, d: &Stack, seen: &ObservedStack) -> Result<Vec<ForeignResource>> {
    let mut out = Vec::new();
    let have_lb = seen.load_balancer.as_ref().is_some_and(|(o, _)| o.spec.name == d.load_balancer.name);
    if !have_lb && let Some(f) = io.lbs.load_balancer_by_name(&d.load_balancer.name).await? {
        out.push(ForeignResource {
            kind: ResourceKind::LoadBalancer,
            name: f.lb.spec.name.clone(),
            id: f.lb.id.clone(),
            tags: f.lb.spec.tags.clone(),
        });
    }
    for tg in &d.target_groups {
        if seen.target_groups.iter().any(|o| o.spec.name == tg.name) {
            continue;
        }
        if let Some(f) = io.lbs.target_group_by_name(&tg.name).await? {
            out.push(ForeignResource {
                kind: ResourceKind::TargetGroup,
                name: f.spec.name.clone(),
                id: f.id.clone(),
                tags: f.spec.tags.clone(),
            });
        }
    }
    if let Some(sg) = &d.frontend_security_group
        && seen.frontend_security_group.as_ref().is_none_or(|o| o.spec.name != sg.name)
    {
        let q = SecurityGroupQuery::Names { vpc_id: io.vpc_id.clone(), names: vec![sg.name.clone()] };
        for f in io.net.security_groups(&q).await? {
            if seen.frontend_security_group.as_ref().is_some_and(|o| o.id == f.id) {
                continue;
            }
            out.push(ForeignResource {
                kind: ResourceKind::SecurityGroup,
                name: f.spec.name.clone(),
                id: f.id.clone(),
                tags: f.spec.tags.clone(),
            });
        }
    }
    Ok(out)
}
