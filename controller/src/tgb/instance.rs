//! Instance mode (`targetType: instance`): the binding's target group holds the EC2 instances
//! of the eligible nodes on the Service port's NodePort. Which nodes, and how a node maps to
//! its instance, are decided in `lbc_model::nodes`; nodes without a usable `providerID` are
//! resolved by their InternalIP through [`lbc_aws::instances::InstanceIdCache`].
//!
//! Multi-cluster target groups (`multiClusterTargetGroup: true`) work as in ip mode: the
//! instance targets this cluster registered are recorded in the binding's ConfigMap before they
//! are written, and only those are ever deregistered. Not here: readiness gates (ALBC has none
//! for instance targets either). Security-group rules for the nodes (`spec.networking`) are the backend-rules
//! pass's (`crate::networking`, which takes the eligible nodes' InternalIPs as the endpoints).

use super::{status, sync};
use crate::context::{Context, jittered};
use crate::error::Result;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use lbc_aws::error::ErrorKind;
use lbc_aws::instances::{NodeIp, PRIVATE_IP_FILTER, VPC_FILTER};
use lbc_model::binding::is_ready;
use lbc_model::checkpoint::instance_checkpoint;
use lbc_model::crd::TargetGroupBinding;
use lbc_model::nodes::{
    InstanceTarget, InstanceTargets, Locator, NodeFacts, NodeMismatch, desired_instance_targets, eligible_locators,
    instance_plan, node_port,
};
use lbc_model::target::HealthState;
use lbc_model::text::listed;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use tokio::time::Instant;

pub(super) async fn sync(tgb: &Arc<TargetGroupBinding>, ctx: &Context) -> Result<Action> {
    let key = ObjectRef::from_obj(tgb.as_ref());
    let _ = ctx.triggers.take_dirty_since(&key);
    let (ns, name) = (tgb.namespace().unwrap_or_default(), tgb.name_any());
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
    // The group itself is read (batched with the other bindings' groups) for its VPC; whether it
    // is usable (type, owner tags) is checked only when it is written, below.
    let Some(tg) = sync::target_group(ctx, tgb, &arn).await? else {
        return Ok(Action::requeue(jittered(ctx.cfg.sync_period)));
    };
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
    let InstanceTargets { targets: desired, unresolved, mismatched } =
        desired_instance_targets(&nodes, &locators, &resolved, np);
    report_unresolved(ctx, tgb, &key, &locators, &unresolved, &vpc_id).await;
    report_mismatched(ctx, tgb, &key, &mismatched).await;

    // Unchanged since the last sync and not due for verification: no AWS call. After a restart
    // (nothing in memory) the checkpoint annotation stands for the last sync: it matches when the
    // previous process registered exactly this set, and the binding is still Ready.
    let now = Instant::now();
    let cp = instance_checkpoint(&arn, tgb.metadata.generation.unwrap_or(0), &desired);
    let warm = ctx.with_state(&key, |s| s.instance_targets.is_none())
        && is_ready(tgb)
        && status::live_checkpoint(ctx, tgb, &key).as_deref() == Some(cp.as_str());
    if warm {
        let verify_in = jittered(ctx.cfg.sync_period);
        ctx.with_state(&key, |s| {
            s.instance_targets = Some(desired.clone());
            s.verify_due = Some(now + verify_in);
        });
    }
    let due =
        ctx.with_state(&key, |s| (s.instance_targets.as_ref() == Some(&desired)).then_some(s.verify_due).flatten());
    if let Some(due) = due.filter(|d| now < *d) {
        ctx.metrics.reconcile_skipped_checkpoint.inc();
        return Ok(Action::requeue(due - now));
    }
    if !sync::usable_target_group(ctx, tgb, &arn, &tg, "instance").await? {
        return Ok(Action::await_change());
    }

    let elb = ctx.elb_for(tgb);
    let current = elb.describe_instance_targets(&arn).await?;
    let states: Vec<(InstanceTarget, HealthState)> = current.iter().map(|(t, h)| (t.clone(), h.state)).collect();
    // A multi-cluster binding, or one on a target group without ownership tags: only what it
    // registered itself is its to deregister (as in ip mode).
    let owned = if sync::records_own_targets(ctx, tgb, &arn) {
        let current: BTreeSet<InstanceTarget> =
            states.iter().filter(|(_, s)| !s.is_draining()).map(|(t, _)| t.clone()).collect();
        Some(status::owned_targets(ctx, tgb, &key, &status::INSTANCE_RECORD, &current, &desired).await?)
    } else {
        None
    };
    let plan = instance_plan(&desired, &states, owned.as_ref());
    if !plan.is_empty() {
        // A crash mid-change must not leave a checkpoint claiming the old set is in place.
        status::clear_checkpoint(ctx, tgb, &key).await?;
        ctx.wrote_targets(&key);
    }
    if let Some(owned) = owned.as_ref().filter(|_| !plan.register.is_empty()) {
        // Recorded before it is registered: a crash in between leaves no target no cluster claims.
        ctx.ensure_leader()?;
        let next = owned.iter().chain(&plan.register).cloned().collect();
        status::write_owned(ctx, tgb, &key, &status::INSTANCE_RECORD, &next).await?;
    }
    for b in plan.deregister.chunks(ctx.cfg.batch_size) {
        ctx.ensure_leader()?;
        elb.write_instance_targets(&arn, b, false).await?;
    }
    for b in plan.register.chunks(ctx.cfg.batch_size) {
        ctx.ensure_leader()?;
        elb.write_instance_targets(&arn, b, true).await?;
    }
    if let Some(owned) = owned.as_ref().filter(|_| !plan.is_empty()) {
        let mut next: BTreeSet<InstanceTarget> = owned.iter().chain(&plan.register).cloned().collect();
        for t in &plan.deregister {
            next.remove(t);
        }
        status::write_owned(ctx, tgb, &key, &status::INSTANCE_RECORD, &next).await?;
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
    if !mismatched.is_empty() {
        let names: Vec<&str> = mismatched.iter().map(|m| m.node.as_str()).collect();
        msg.push_str(&format!(
            "; {} eligible node(s) left out because their instance failed the zone/hostname cross-check: {}",
            names.len(),
            names.join(", ")
        ));
    }
    status::set_synced(ctx, tgb, &msg, (count(desired.len()), count(healthy))).await?;
    status::write_checkpoint(ctx, tgb, &key, &cp).await?;
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
    if unresolved.is_empty() {
        ctx.with_state(key, |s| s.unresolved_reported.clear());
        return;
    }
    if ctx.with_state(key, |s| s.unresolved_reported == unresolved) {
        return;
    }
    let what: Vec<String> = unresolved
        .iter()
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
    let msg = format!(
        "{} could not be mapped to an EC2 instance and are NOT registered in TargetGroupBinding {}/{}'s target \
         group; the other nodes are. Fix: set the node's spec.providerID (aws:///<zone>/<instance-id>), or make its \
         InternalIP the private IP of an instance in VPC {vpc_id}",
        listed(&what, 10),
        tgb.namespace().unwrap_or_default(),
        tgb.name_any()
    );
    // Remembered as told only once the API server has it: a lost Warning is sent on the next pass.
    if ctx.event(&tgb.object_ref(&()), true, "NodeInstanceNotFound", msg).await {
        ctx.with_state(key, |s| s.unresolved_reported = unresolved.to_vec());
    }
}

/// A Warning naming each node whose instance (found by its InternalIP) disagrees with the
/// node's zone label or EC2 hostname (`lbc_model::nodes::cross_check`): the node, its IP, the
/// instance, the value seen and the value expected, and the fix. Published when the set changes.
async fn report_mismatched(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    key: &ObjectRef<TargetGroupBinding>,
    mismatched: &[NodeMismatch],
) {
    let now: Vec<String> = mismatched.iter().map(|m| format!("{}/{}", m.node, m.instance)).collect();
    if now.is_empty() {
        ctx.with_state(key, |s| s.mismatch_reported.clear());
        return;
    }
    if ctx.with_state(key, |s| s.mismatch_reported == now) {
        return;
    }
    let what: Vec<String> = mismatched
        .iter()
        .map(|m| {
            format!(
                "node {} (InternalIP {}) resolved to instance {}, but the node has {}",
                m.node, m.ip, m.instance, m.mismatch
            )
        })
        .collect();
    let msg = format!(
        "{}. These nodes are NOT registered in TargetGroupBinding {}/{}'s target group (the IP may belong to \
         another machine); the other nodes are. Fix: correct the node's {} label or hostname if they are wrong; if \
         the InternalIP is wrong (a stale Node object whose address was reused), delete the Node object; or set \
         spec.providerID (aws:///<zone>/<instance-id>) to name the instance",
        listed(&what, 10),
        tgb.namespace().unwrap_or_default(),
        tgb.name_any(),
        lbc_model::nodes::ZONE_LABEL,
    );
    if ctx.event(&tgb.object_ref(&()), true, "NodeInstanceMismatch", msg).await {
        ctx.with_state(key, |s| s.mismatch_reported = now);
    }
}

/// On deletion: every instance target of the group deregistered, or in a multi-cluster group
/// only those this cluster recorded as its own (a vanished group is `Err` with `NotFound`, for
/// the caller to report).
pub(super) async fn deregister_all(ctx: &Context, tgb: &TargetGroupBinding, arn: &str) -> Result<()> {
    let elb = ctx.elb_for(tgb);
    let owned = if super::sync::records_own_targets(ctx, tgb, arn) {
        Some(super::cleanup::deletable_record(ctx, tgb, &ObjectRef::from_obj(tgb), &status::INSTANCE_RECORD).await)
    } else {
        None
    };
    let ours: Vec<InstanceTarget> = elb
        .describe_instance_targets(arn)
        .await?
        .into_iter()
        .filter(|(t, h)| !h.state.is_draining() && owned.as_ref().is_none_or(|o| o.contains(t)))
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
