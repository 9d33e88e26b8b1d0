//! One sync of a binding's target group with its Service's endpoints.

use super::{gates, status};
use crate::context::{Context, jittered};
use crate::error::{Error, Result};
use k8s_openapi::api::core::v1::Service;
use kube::Resource;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use lbc_aws::elbv2::TargetGroupInfo;
use lbc_model::checkpoint::checkpoint;
use lbc_model::crd::{TargetGroupBinding, TargetType};
use lbc_model::endpoints::{DesiredTargets, EndpointInputs, desired_targets, resolve_service_port};
use lbc_model::names::readiness_gate_condition;
use lbc_model::net::VpcCidrs;
use lbc_model::plan::{PlanInput, batches, plan};
use lbc_model::pod::{NodeReadiness, PodInfo};
use lbc_model::target::{HealthState, Target, TargetHealth};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use tokio::time::Instant;

pub(super) async fn apply(tgb: Arc<TargetGroupBinding>, ctx: &Context) -> Result<Action> {
    match sync(&tgb, ctx).await {
        // The target group vanished between reads (deleted out of band): report, do not retry hot.
        Err(Error::Aws(e))
            if e.kind == lbc_aws::error::ErrorKind::NotFound && e.code.as_deref() == Some("TargetGroupNotFound") =>
        {
            let msg = format!(
                "target group {} of TargetGroupBinding {}/{} does not exist (deleted out of band?); \
                 recreate it and update spec.targetGroupARN, or delete the binding",
                tgb.spec.target_group_arn.as_deref().unwrap_or_default(),
                tgb.namespace().unwrap_or_default(),
                tgb.name_any()
            );
            status::set_target_group_missing(ctx, &tgb, &msg).await?;
            Ok(Action::requeue(jittered(ctx.cfg.sync_period)))
        }
        other => other,
    }
}

async fn sync(tgb: &Arc<TargetGroupBinding>, ctx: &Context) -> Result<Action> {
    let tgb = tgb.clone();
    let key = ObjectRef::from_obj(tgb.as_ref());
    let ns = tgb.namespace().unwrap_or_default();
    let dirty_since = ctx.triggers.take_dirty_since(&key);

    if tgb.spec.effective_target_type() == TargetType::Instance {
        let msg = format!(
            "TargetGroupBinding {ns}/{} has targetType: instance; this controller registers pod IPs only (targetType: ip). \
             Use an IP-type target group, or keep this binding on a controller that supports instance targets",
            tgb.name_any()
        );
        status::set_not_ready(ctx, &tgb, "InstanceTargetsUnsupported", &msg).await?;
        return Ok(Action::await_change());
    }

    let Some(arn) = resolve_arn(&tgb, ctx).await? else {
        return Ok(Action::requeue(jittered(ctx.cfg.sync_period)));
    };

    // Service and port: from the cache; a missing Service is reported, never acted on.
    let Some(svc) = ctx.stores.service(&ns, &tgb.spec.service_ref.name) else {
        let msg = format!(
            "Service {ns}/{} named in spec.serviceRef does not exist; no targets are changed until it does",
            tgb.spec.service_ref.name
        );
        status::set_not_ready(ctx, &tgb, "ServiceNotFound", &msg).await?;
        return Ok(Action::requeue(jittered(ctx.cfg.sync_period)));
    };
    let svc_port = match resolve_service_port(&svc, &tgb.spec.service_ref.port) {
        Ok(p) => p.clone(),
        Err(e) => {
            status::set_not_ready(ctx, &tgb, "ServicePortNotFound", &e.to_string()).await?;
            return Ok(Action::await_change());
        }
    };

    let gate = readiness_gate_condition(&tgb.name_any());
    let desired = compute_desired(ctx, &ns, &svc, &svc_port, &tgb, &gate);
    let cp = checkpoint(&arn, tgb.metadata.generation.unwrap_or(0), desired.targets.keys());
    let pending_gates = desired.targets.values().flatten().any(|p| p.gated && p.gate_status.as_deref() != Some("True"));
    let now = Instant::now();

    // Nothing changed since the last successful sync (maybe by a previous process): no AWS call.
    let in_sync = status::live_checkpoint(ctx, &tgb, &key).as_deref() == Some(cp.as_str()) && !pending_gates;
    if in_sync {
        let due = ctx.with_state(&key, |s| *s.verify_due.get_or_insert_with(|| now + jittered(ctx.cfg.sync_period)));
        if now < due {
            ctx.metrics.reconcile_skipped_checkpoint.inc();
            return Ok(Action::requeue(due - now));
        }
    }

    let Some(tg) = target_group(ctx, &tgb, &arn).await? else {
        return Ok(Action::requeue(jittered(ctx.cfg.sync_period)));
    };
    if tg.target_type != "ip" && !tg.target_type.is_empty() {
        let msg = format!(
            "target group {arn} has target type {:?} but TargetGroupBinding {ns}/{} registers pod IPs (targetType: ip). \
             Bind an IP-type target group instead",
            tg.target_type,
            tgb.name_any()
        );
        status::set_not_ready(ctx, &tgb, "TargetTypeMismatch", &msg).await?;
        return Ok(Action::await_change());
    }
    let vpc = vpc_cidrs(ctx, &tgb, &tg).await?;

    // Registered targets: our cache, or one DescribeTargetHealth when unknown or due for
    // verification (drift: targets added or removed out of band).
    let verify = in_sync || ctx.with_state(&key, |s| s.registered.is_none() || s.verify_due.is_some_and(|d| now >= d));
    let registered = if verify {
        let all = ctx.elb.describe_target_health(&arn, None).await?;
        let map: BTreeMap<Target, TargetHealth> = all.into_iter().map(|r| (r.target, r.health)).collect();
        ctx.with_state(&key, |s| {
            s.registered = Some(map.clone());
            s.verify_due = Some(now + jittered(ctx.cfg.sync_period));
        });
        map
    } else {
        ctx.with_state(&key, |s| s.registered.clone().unwrap_or_default())
    };
    let states: BTreeMap<Target, HealthState> = registered.iter().map(|(t, h)| (*t, h.state)).collect();

    let owned = if tgb.spec.is_multi_cluster() { Some(status::read_owned_targets(ctx, &tgb).await?) } else { None };
    let desired_set: BTreeSet<Target> = desired.targets.keys().copied().collect();
    let input = PlanInput {
        desired: desired_set,
        registered: &states,
        owned: owned.as_ref(),
        vpc: &vpc,
        allow_outside_vpc: ctx.cfg.allow_outside_vpc,
        live_endpoints: desired.stats.live(),
    };
    let labels = crate::metrics::TgbLabels { namespace: ns.clone(), name: tgb.name_any() };
    let plan = match plan(&input) {
        Ok(p) => p,
        Err(refusal) => {
            ctx.metrics.deregister_all_refused.get_or_create(&labels).inc();
            let msg = format!("TargetGroupBinding {ns}/{} (target group {arn}): {refusal}", tgb.name_any());
            status::set_not_ready(ctx, &tgb, "DeregisterAllRefused", &msg).await?;
            return Ok(Action::requeue(jittered(ctx.cfg.sync_period)));
        }
    };
    ctx.metrics.targets_outside_vpc.get_or_create(&labels).set(plan.outside_vpc.len() as i64);
    if !plan.outside_vpc.is_empty() {
        report_overlay_ips(ctx, &tgb, &svc, &plan.outside_vpc, &vpc).await;
    }

    if !plan.is_empty() {
        status::clear_checkpoint(ctx, &tgb, &key).await?;
        execute(ctx, &tgb, &key, &arn, &plan, owned.as_ref(), dirty_since).await?;
    }

    // Readiness gates: condition patches and a health poll while any gate is pending.
    let outcome = gates::update(ctx, &tgb, &key, &arn, &tg, &desired, &gate, &plan.register).await?;

    let registered_now = ctx.with_state(&key, |s| s.registered.clone().unwrap_or_default());
    status::record_target_gauges(ctx, &labels, &registered_now);
    status::set_synced(ctx, &tgb, &registered_now, &plan, &desired).await?;
    if outcome.pending == 0 && plan.outside_vpc.is_empty() {
        status::write_checkpoint(ctx, &tgb, &key, &cp).await?;
    }
    let next = if outcome.pending > 0 {
        outcome.poll_in
    } else {
        ctx.with_state(&key, |s| s.verify_due.map(|d| d.saturating_duration_since(Instant::now())))
            .unwrap_or(ctx.cfg.sync_period)
    };
    Ok(Action::requeue(next.max(std::time::Duration::from_millis(200))))
}

fn compute_desired(
    ctx: &Context,
    ns: &str,
    svc: &Service,
    svc_port: &k8s_openapi::api::core::v1::ServicePort,
    tgb: &TargetGroupBinding,
    gate: &str,
) -> DesiredTargets {
    let slices = ctx.stores.slices_of(ns, &svc.name_any());
    let input = EndpointInputs {
        service_port: svc_port,
        family: tgb.spec.ip_family(),
        gate,
        pod: |name: &str| ctx.stores.pod(ns, name).map(|p| PodInfo::from_pod(&p)),
        node: |name: &str| ctx.stores.node(name).map(|n| NodeReadiness::of(&n)),
    };
    desired_targets(slices.iter().map(Arc::as_ref), &input)
}

async fn resolve_arn(tgb: &TargetGroupBinding, ctx: &Context) -> Result<Option<String>> {
    if let Some(arn) = tgb.spec.target_group_arn.as_deref().filter(|a| !a.is_empty()) {
        return Ok(Some(arn.to_string()));
    }
    let ns = tgb.namespace().unwrap_or_default();
    let Some(name) = tgb.spec.target_group_name.as_deref().filter(|n| !n.is_empty()) else {
        let msg = format!(
            "TargetGroupBinding {ns}/{} has neither spec.targetGroupARN nor spec.targetGroupName; set one of them",
            tgb.name_any()
        );
        status::set_not_ready(ctx, tgb, "TargetGroupNotSpecified", &msg).await?;
        return Ok(None);
    };
    match ctx.elb.describe_target_group_by_name(name).await? {
        Some(tg) => {
            let arn = tg.arn.clone();
            ctx.target_groups.lock().expect("tg cache").insert(arn.clone(), tg);
            Ok(Some(arn))
        }
        None => {
            let msg = format!(
                "target group named {name:?} (spec.targetGroupName of TargetGroupBinding {ns}/{}) does not exist in region; \
                 create it or fix the name",
                tgb.name_any()
            );
            status::set_target_group_missing(ctx, tgb, &msg).await?;
            Ok(None)
        }
    }
}

/// Target group details, cached per ARN; `None` (with a condition and an event) when AWS says
/// the group does not exist, e.g. deleted out of band.
async fn target_group(ctx: &Context, tgb: &TargetGroupBinding, arn: &str) -> Result<Option<TargetGroupInfo>> {
    if let Some(tg) = ctx.target_groups.lock().expect("tg cache").get(arn).cloned() {
        return Ok(Some(tg));
    }
    match ctx.elb.describe_target_group(arn).await? {
        Some(tg) => {
            ctx.target_groups.lock().expect("tg cache").insert(arn.to_string(), tg.clone());
            Ok(Some(tg))
        }
        None => {
            let msg = format!(
                "target group {arn} of TargetGroupBinding {}/{} does not exist (deleted out of band?); \
                 recreate it and update spec.targetGroupARN, or delete the binding",
                tgb.namespace().unwrap_or_default(),
                tgb.name_any()
            );
            status::set_target_group_missing(ctx, tgb, &msg).await?;
            Ok(None)
        }
    }
}

async fn vpc_cidrs(ctx: &Context, tgb: &TargetGroupBinding, tg: &TargetGroupInfo) -> Result<VpcCidrs> {
    let vpc_id = tgb
        .spec
        .vpc_id
        .clone()
        .or_else(|| tg.vpc_id.clone())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| ctx.cfg.cluster_vpc_id.clone());
    if vpc_id.is_empty() {
        return Ok(VpcCidrs::default());
    }
    if let Some(v) = ctx.vpcs.lock().expect("vpc cache").get(&vpc_id).cloned() {
        return Ok(v);
    }
    let cidrs = ctx.ec2.vpc_cidrs(&vpc_id).await?;
    let v = VpcCidrs::parse(&cidrs).map_err(|e| Error::Invalid(format!("VPC {vpc_id}: {e}")))?;
    ctx.vpcs.lock().expect("vpc cache").insert(vpc_id, v.clone());
    Ok(v)
}

async fn report_overlay_ips(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    svc: &Service,
    ips: &[std::net::IpAddr],
    vpc: &VpcCidrs,
) {
    let shown: Vec<String> = ips.iter().take(10).map(|i| i.to_string()).collect();
    let more = if ips.len() > 10 { format!(" (and {} more)", ips.len() - 10) } else { String::new() };
    let msg = format!(
        "pod IPs {}{more} of Service {}/{} are outside the VPC CIDRs [{vpc}] and were NOT registered: the load balancer \
         cannot route to them. These look like overlay addresses (Canal/Flannel); run Cilium in ENI mode so pods get VPC IPs, \
         or start the controller with --allow-targets-outside-vpc=true if the VPC really routes them",
        shown.join(", "),
        svc.namespace().unwrap_or_default(),
        svc.name_any()
    );
    ctx.event(&tgb.object_ref(&()), true, "PodIPsOutsideVPC", msg.clone()).await;
    ctx.event(&svc.object_ref(&()), true, "PodIPsOutsideVPC", msg).await;
}

/// Carries out a plan: deregistrations and registrations in batches, the two running side by
/// side so a rolling update's new pods are not queued behind the old ones' removal.
async fn execute(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    key: &ObjectRef<TargetGroupBinding>,
    arn: &str,
    plan: &lbc_model::plan::Plan,
    owned: Option<&BTreeSet<Target>>,
    dirty_since: Option<std::time::Instant>,
) -> Result<()> {
    let batch = ctx.cfg.batch_size;
    if let Some(owned) = owned {
        // Multi-cluster: record what we are about to register before registering it, so a crash
        // in between can never leave targets no cluster claims.
        let mut next: BTreeSet<Target> = owned.clone();
        next.extend(plan.register.iter().chain(&plan.register_any_az));
        status::write_owned_targets(ctx, tgb, &next).await?;
    }
    let register = async {
        if let (Some(since), false) = (dirty_since, plan.register.is_empty() && plan.register_any_az.is_empty()) {
            ctx.metrics.endpoint_to_register.observe(since.elapsed().as_secs_f64());
        }
        for b in batches(&plan.register, batch) {
            ctx.ensure_leader()?;
            ctx.elb.register_targets(arn, b, None).await?;
        }
        for b in batches(&plan.register_any_az, batch) {
            ctx.ensure_leader()?;
            ctx.elb.register_targets(arn, b, Some("all")).await?;
        }
        Ok::<_, Error>(())
    };
    let deregister = async {
        if let (Some(since), false) = (dirty_since, plan.deregister.is_empty()) {
            ctx.metrics.terminating_to_deregister.observe(since.elapsed().as_secs_f64());
        }
        for b in batches(&plan.deregister, batch) {
            ctx.ensure_leader()?;
            ctx.elb.deregister_targets(arn, b).await?;
        }
        Ok::<_, Error>(())
    };
    let (r, d) = futures::join!(register, deregister);
    r?;
    d?;
    let now = Instant::now();
    ctx.with_state(key, |s| {
        let reg = s.registered.get_or_insert_with(BTreeMap::new);
        for t in plan.register.iter().chain(&plan.register_any_az) {
            reg.insert(*t, TargetHealth::new(HealthState::Initial));
            s.registered_at.insert(*t, now);
        }
        for t in &plan.deregister {
            reg.remove(t);
            s.registered_at.remove(t);
        }
    });
    if let Some(owned) = owned {
        let mut next: BTreeSet<Target> = owned.clone();
        next.extend(plan.register.iter().chain(&plan.register_any_az));
        for t in &plan.deregister {
            next.remove(t);
        }
        status::write_owned_targets(ctx, tgb, &next).await?;
    }
    tracing::info!(
        binding = %key, target_group = arn,
        registered = plan.register.len() + plan.register_any_az.len(), deregistered = plan.deregister.len(),
        calls = plan.call_floor(batch),
        "target group updated"
    );
    Ok(())
}
