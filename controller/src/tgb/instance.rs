//! Instance mode (`targetType: instance`): the binding's target group holds the EC2 instances
//! of the eligible nodes on the Service port's NodePort. Which nodes, and how a node maps to
//! its instance, are decided in `lbc_model::nodes`; nodes without a usable `providerID` are
//! resolved by their InternalIP through [`lbc_aws::instances::InstanceIdCache`].
//!
//! Not (yet) here: readiness gates (ALBC has none for instance targets either), multi-cluster
//! target groups. Security-group rules for the nodes (`spec.networking`) are the backend-rules
//! pass's (`crate::networking`, which takes the eligible nodes' InternalIPs as the endpoints).

use super::{status, sync};
use crate::context::{Context, jittered};
use crate::error::Result;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use lbc_aws::error::ErrorKind;
use lbc_aws::instances::{NodeIp, PRIVATE_IP_FILTER, VPC_FILTER};
use lbc_model::crd::TargetGroupBinding;
use lbc_model::nodes::{
    InstanceTarget, Locator, NodeFacts, desired_instance_targets, eligible_locators, instance_plan, node_port,
};
use lbc_model::target::HealthState;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use tokio::time::Instant;

pub(super) async fn sync(tgb: &Arc<TargetGroupBinding>, ctx: &Context) -> Result<Action> {
    let key = ObjectRef::from_obj(tgb.as_ref());
    let _ = ctx.triggers.take_dirty_since(&key);
    let (ns, name) = (tgb.namespace().unwrap_or_default(), tgb.name_any());
    if tgb.spec.is_multi_cluster() {
        let msg = format!(
            "TargetGroupBinding {ns}/{name} has targetType: instance and multiClusterTargetGroup: true; this controller \
             does not yet register instance targets in a shared target group. Set multiClusterTargetGroup: false, \
             or use targetType: ip"
        );
        status::set_not_ready(ctx, tgb, "InstanceTargetsMultiClusterUnsupported", &msg).await?;
        return Ok(Action::await_change());
    }
    let Some(arn) = sync::resolve_arn(tgb, ctx).await? else {
        return Ok(Action::requeue(jittered(ctx.cfg.sync_period)));
    };
    let (svc, port) = match sync::service_and_port(ctx, tgb).await? {
        Ok(found) => found,
        Err(action) => return Ok(action),
    };
    let Some(np) = node_port(&port) else {
        let msg = format!(
            "Service {ns}/{} port {} (spec.serviceRef.port of TargetGroupBinding {ns}/{name}) has no nodePort; instance \
             targets are registered on the NodePort. Fix: make the Service type NodePort (or LoadBalancer with node \
             ports allocated), or use targetType: ip",
            svc.name_any(),
            port.port
        );
        status::set_not_ready(ctx, tgb, "ServiceNodePortMissing", &msg).await?;
        return Ok(Action::await_change());
    };
    let Some(tg) = sync::target_group(ctx, tgb, &arn).await? else {
        return Ok(Action::requeue(jittered(ctx.cfg.sync_period)));
    };
    if !sync::usable_target_group(ctx, tgb, &arn, &tg, "instance").await? {
        return Ok(Action::await_change());
    }
    let vpc_id = sync::binding_vpc_id(ctx, tgb, &tg);

    // Nodes → instances.
    let nodes: Vec<NodeFacts> = ctx.stores.nodes.state().iter().map(|n| NodeFacts::of(n)).collect();
    let live: BTreeSet<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    ctx.instances.retain_nodes(|n| live.contains(n));
    let locators = eligible_locators(&nodes, tgb.spec.node_selector.as_ref());
    let by_ip: Vec<NodeIp> = locators
        .iter()
        .filter_map(|(node, l)| match l {
            Locator::PrivateIp(ip) => Some(NodeIp { node: node.clone(), ip: *ip }),
            _ => None,
        })
        .collect();
    let resolved = if by_ip.is_empty() || vpc_id.is_empty() {
        BTreeMap::new()
    } else {
        ctx.instances.resolve(&vpc_id, &by_ip).await?
    };
    let (desired, unresolved) = desired_instance_targets(&locators, &resolved, np);
    report_unresolved(ctx, tgb, &key, &locators, &unresolved, &vpc_id).await;

    // Unchanged since the last sync and not due for verification: no AWS call.
    let now = Instant::now();
    let due =
        ctx.with_state(&key, |s| (s.instance_targets.as_ref() == Some(&desired)).then_some(s.verify_due).flatten());
    if let Some(due) = due.filter(|d| now < *d) {
        ctx.metrics.reconcile_skipped_checkpoint.inc();
        return Ok(Action::requeue(due - now));
    }

    let elb = ctx.elb_for(tgb);
    let current = elb.describe_instance_targets(&arn).await?;
    let states: Vec<(InstanceTarget, HealthState)> = current.iter().map(|(t, h)| (t.clone(), h.state)).collect();
    let plan = instance_plan(&desired, &states);
    for b in plan.deregister.chunks(ctx.cfg.batch_size) {
        ctx.ensure_leader()?;
        elb.write_instance_targets(&arn, b, false).await?;
    }
    for b in plan.register.chunks(ctx.cfg.batch_size) {
        ctx.ensure_leader()?;
        elb.write_instance_targets(&arn, b, true).await?;
    }
    if !plan.is_empty() {
        tracing::info!(
            binding = %key, target_group = %arn, node_port = np,
            registered = plan.register.len(), deregistered = plan.deregister.len(),
            "instance targets updated"
        );
    }
    let verify_in = jittered(ctx.cfg.sync_period);
    ctx.with_state(&key, |s| {
        s.instance_targets = Some(desired.clone());
        s.verify_due = Some(now + verify_in);
    });

    let healthy = current.iter().filter(|(t, h)| h.state == HealthState::Healthy && desired.contains(t)).count();
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let mut msg = format!("{} instance target(s) registered on NodePort {np}", desired.len());
    if !unresolved.is_empty() {
        msg.push_str(&format!(
            "; {} eligible node(s) not resolved to an instance: {}",
            unresolved.len(),
            unresolved.join(", ")
        ));
    }
    status::set_synced(ctx, tgb, &msg, (count(desired.len()), count(healthy))).await?;
    Ok(Action::requeue(verify_in))
}

/// A Warning naming each eligible node that could not be mapped to an instance, its IP and what
/// was searched; published when the set of such nodes changes.
async fn report_unresolved(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    key: &ObjectRef<TargetGroupBinding>,
    locators: &BTreeMap<String, Locator>,
    unresolved: &[String],
    vpc_id: &str,
) {
    let changed = ctx.with_state(key, |s| {
        let changed = s.unresolved_reported != unresolved;
        s.unresolved_reported = unresolved.to_vec();
        changed
    });
    if !changed || unresolved.is_empty() {
        return;
    }
    let what: Vec<String> = unresolved
        .iter()
        .take(10)
        .map(|node| match locators.get(node) {
            Some(Locator::PrivateIp(ip)) if vpc_id.is_empty() => {
                format!("node {node} (InternalIP {ip}: no VPC known to search; set spec.vpcID or --aws-vpc-id)")
            }
            Some(Locator::PrivateIp(ip)) => format!(
                "node {node} (InternalIP {ip}: no EC2 instance found by DescribeInstances with filters \
                 {PRIVATE_IP_FILTER}={ip}, {VPC_FILTER}={vpc_id})"
            ),
            _ => format!("node {node} (no spec.providerID of the form aws:///<zone>/i-... and no InternalIP address)"),
        })
        .collect();
    let more = if unresolved.len() > 10 { format!(" and {} more", unresolved.len() - 10) } else { String::new() };
    let msg = format!(
        "{}{more} could not be mapped to an EC2 instance and are NOT registered in TargetGroupBinding {}/{}'s target \
         group; the other nodes are. Fix: set the node's spec.providerID (aws:///<zone>/<instance-id>), or make its \
         InternalIP the private IP of an instance in VPC {vpc_id}",
        what.join("; "),
        tgb.namespace().unwrap_or_default(),
        tgb.name_any()
    );
    ctx.event(&tgb.object_ref(&()), true, "NodeInstanceNotFound", msg).await;
}

/// On deletion: every instance target of the group deregistered (a vanished group is `Err`
/// with `NotFound`, for the caller to report).
pub(super) async fn deregister_all(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    arn: &str,
) -> Result<(), lbc_aws::AwsError> {
    let elb = ctx.elb_for(tgb);
    let ours: Vec<InstanceTarget> = elb
        .describe_instance_targets(arn)
        .await?
        .into_iter()
        .filter(|(_, h)| !h.state.is_draining())
        .map(|(t, _)| t)
        .collect();
    for b in ours.chunks(ctx.cfg.batch_size) {
        match elb.write_instance_targets(arn, b, false).await {
            Err(e) if e.kind == ErrorKind::NotFound => break,
            r => r?,
        }
    }
    tracing::info!(
        binding = %ObjectRef::from_obj(tgb), target_group = arn, deregistered = ours.len(),
        "binding deleted: instance targets deregistered"
    );
    Ok(())
}
