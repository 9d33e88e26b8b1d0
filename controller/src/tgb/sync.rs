//! One sync of a binding's target group with its Service's endpoints.

use super::{gates, status};
use crate::context::{Context, jittered};
use crate::error::{Error, Result};
use k8s_openapi::api::core::v1::{Service, ServicePort};
use kube::Resource;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use lbc_aws::AwsError;
use lbc_aws::elbv2::{DESCRIBE_TARGET_GROUPS_MAX_ARNS, ElbV2, TargetGroupInfo, TargetWrite};
use lbc_aws::throttle::Permit;
use lbc_model::binding::{NextSync, is_ready, next_sync, owned_after, pending_gates};
use lbc_model::checkpoint::checkpoint;
use lbc_model::crd::{TargetGroupBinding, TargetGroupProtocol, TargetType};
use lbc_model::endpoints::{DesiredTargets, EndpointInputs, desired_targets, resolve_service_port, without_pods};
use lbc_model::names::readiness_gate_condition;
use lbc_model::net::VpcCidrs;
use lbc_model::plan::{PlanInput, batches, plan};
use lbc_model::pod::NodeReadiness;
use lbc_model::poison::{Isolation, Rejected, is_poison};
use lbc_model::target::{HealthState, Target, TargetHealth};
use lbc_model::tenancy::TenancyMode;
use lbc_model::tg_ownership::{NotOurs, target_group_access};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use tokio::time::Instant;

pub(super) async fn apply(tgb: Arc<TargetGroupBinding>, ctx: &Context) -> Result<Action> {
    let synced = if tgb.spec.effective_target_type() == TargetType::Instance {
        super::instance::sync(&tgb, ctx).await
    } else {
        sync(&tgb, ctx).await
    };
    match synced {
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

/// One sync. Write capacity comes before the final plan: when the client-side throttle makes a
/// write wait, the plan is made again from the caches after the wait, so endpoints that turned
/// ready meanwhile go out in the same call instead of waiting for another token.
async fn sync(tgb: &Arc<TargetGroupBinding>, ctx: &Context) -> Result<Action> {
    let key = ObjectRef::from_obj(tgb.as_ref());
    let mut dirty_since = ctx.triggers.take_dirty_since(&key);
    let mut pass = match prepare(tgb.clone(), ctx, &key, Pass::First).await? {
        Prepared::Done(action) => return Ok(action),
        Prepared::Plan(p) => p,
    };
    let mut permits = WritePermits::default();
    if !pass.plan.is_empty() {
        permits = WritePermits::wait(ctx.elb_for(tgb).as_ref(), &pass.plan).await;
        if !permits.waited().is_zero() {
            ctx.ensure_leader()?;
            // The binding as the cache holds it now; gone or being deleted: the change that
            // did it triggers the next reconcile (cleanup), the permits go back unused.
            let Some(fresh) = ctx.stores.tgbs.get(&key) else {
                return Ok(Action::await_change());
            };
            if fresh.meta().deletion_timestamp.is_some() {
                return Ok(Action::await_change());
            }
            let later = ctx.triggers.take_dirty_since(&key);
            dirty_since = match (dirty_since, later) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            pass = match prepare(fresh, ctx, &key, Pass::AfterWait).await? {
                Prepared::Done(action) => return Ok(action),
                Prepared::Plan(p) => p,
            };
        }
    }
    finish(ctx, &key, pass, permits, dirty_since).await
}

/// Which preparation of a sync this is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    First,
    /// Again after waiting for write capacity: the checkpoint decision and any AWS verification
    /// were made by the first pass; only the desired targets (and the binding) are read again.
    AfterWait,
}

enum Prepared {
    /// Nothing (more) to do in this reconcile.
    Done(Action),
    Plan(Box<Planned>),
}

/// Everything a sync decided before its writes.
struct Planned {
    tgb: Arc<TargetGroupBinding>,
    arn: String,
    svc: Arc<Service>,
    tg: TargetGroupInfo,
    vpc: VpcCidrs,
    gate: String,
    desired: DesiredTargets,
    cp: String,
    owned: Option<BTreeSet<Target>>,
    plan: lbc_model::plan::Plan,
    labels: crate::metrics::TgbLabels,
}

/// When a pass that held QUIC targets back (`Plan::deferred`) runs again.
const DEFERRED_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// Reads the caches (and AWS where the cache does not know) and plans.
async fn prepare(
    tgb: Arc<TargetGroupBinding>,
    ctx: &Context,
    key: &ObjectRef<TargetGroupBinding>,
    pass: Pass,
) -> Result<Prepared> {
    let ns = tgb.namespace().unwrap_or_default();

    let Some(arn) = resolve_arn(&tgb, ctx).await? else {
        return Ok(Prepared::Done(Action::requeue(jittered(ctx.cfg.sync_period))));
    };
    let (svc, svc_port) = match service_and_port(ctx, &tgb).await? {
        Ok(found) => found,
        Err(action) => return Ok(Prepared::Done(action)),
    };

    let gate = readiness_gate_condition(&tgb.name_any());
    let quic = speaks_quic(tgb.spec.target_group_protocol, cached_target_group(ctx, &arn).as_ref());
    let mut desired = compute_desired(ctx, &ns, &svc, &svc_port, &tgb, &gate, quic);
    let has_selector = svc.spec.as_ref().and_then(|s| s.selector.as_ref()).is_some_and(|s| !s.is_empty());
    let without_pod = if has_selector {
        let holds = |name: &str, ip| ctx.stores.pod(&ns, name).is_some_and(|p| p.ips.contains(ip));
        // Endpoints naming a pod the cache does not hold yet, or not yet with that address (the
        // pods watch can lag the slices): the pod's next event wakes this binding.
        let unseen: Vec<String> = desired
            .targets
            .iter()
            .filter_map(|(t, p)| p.as_ref().filter(|p| !holds(&p.name, t.ip)))
            .map(|p| p.name.clone())
            .collect();
        if !unseen.is_empty() {
            ctx.triggers.wait_for_pods(key, &ns, &unseen);
            // A pod that arrived between the look above and the wait woke nobody: look again.
            if desired
                .targets
                .iter()
                .any(|(t, p)| p.as_ref().is_some_and(|p| unseen.contains(&p.name) && holds(&p.name, t.ip)))
            {
                ctx.triggers.send(key.clone());
            }
        }
        without_pods(&mut desired, holds)
    } else {
        Vec::new()
    };
    let cp = checkpoint(&arn, tgb.metadata.generation.unwrap_or(0), desired.targets.keys());
    let pending_gates = !pending_gates(&desired).is_empty();
    let now = Instant::now();

    // Nothing changed since the last successful sync (maybe by a previous process): no AWS call.
    // Not while Ready=False: a refusal (say, a wipe refused) leaves the old checkpoint in place,
    // and the endpoints coming back to it must still clear the condition.
    // Nor while targets we registered are still `initial`: their health poll is due.
    let settling = ctx.with_state(key, |s| s.registered.iter().flatten().any(|(_, h)| h.state == HealthState::Initial));
    let in_sync = pass == Pass::First
        && status::live_checkpoint(ctx, &tgb, key).as_deref() == Some(cp.as_str())
        && is_ready(&tgb)
        && !pending_gates
        && !settling;
    if in_sync {
        let due = ctx.with_state(key, |s| *s.verify_due.get_or_insert_with(|| now + jittered(ctx.cfg.sync_period)));
        if now < due {
            ctx.metrics.reconcile_skipped_checkpoint.inc();
            return Ok(Prepared::Done(Action::requeue(due - now)));
        }
    }

    let Some(tg) = target_group(ctx, &tgb, &arn).await? else {
        return Ok(Prepared::Done(Action::requeue(jittered(ctx.cfg.sync_period))));
    };
    if !usable_target_group(ctx, &tgb, &arn, &tg, "ip").await? {
        return Ok(Prepared::Done(Action::await_change()));
    }
    if speaks_quic(tgb.spec.target_group_protocol, Some(&tg)) != quic {
        // A binding without spec.targetGroupProtocol, its group's protocol learnt just now: plan
        // again with it (the group is cached from here on).
        return Ok(Prepared::Done(Action::requeue(lbc_model::binding::MIN_RESYNC)));
    }
    if !desired.quic_missing.is_empty() && pass == Pass::First {
        report_quic_without_server_id(ctx, &tgb, &arn, &desired.quic_missing).await;
    }
    let vpc = vpc_cidrs(ctx, &tgb, &tg).await?;
    if !without_pod.is_empty() && pass == Pass::First {
        report_endpoints_without_pods(ctx, &tgb, &svc, &arn, &without_pod).await;
    }

    // Registered targets: our cache, or one DescribeTargetHealth when unknown or due for
    // verification (drift: targets added or removed out of band).
    let verify = in_sync
        || ctx.with_state(key, |s| {
            s.registered.is_none() || (pass == Pass::First && s.verify_due.is_some_and(|d| now >= d))
        });
    let registered = if verify {
        let all = ctx.elb_for(&tgb).describe_target_health(&arn, None).await?;
        let map: BTreeMap<Target, TargetHealth> = all.into_iter().map(|r| (r.target, r.health)).collect();
        ctx.with_state(key, |s| {
            s.registered = Some(map.clone());
            s.verify_due = Some(now + jittered(ctx.cfg.sync_period));
        });
        map
    } else {
        ctx.with_state(key, |s| s.registered.clone().unwrap_or_default())
    };
    let states: BTreeMap<Target, HealthState> = registered.iter().map(|(t, h)| (*t, h.state)).collect();

    let desired_set: BTreeSet<Target> = desired.targets.keys().copied().collect();
    let owned = if records_own_targets(ctx, &tgb, &arn) {
        let current: BTreeSet<Target> = states.iter().filter(|(_, s)| !s.is_draining()).map(|(t, _)| *t).collect();
        Some(status::owned_targets(ctx, &tgb, key, &status::IP_RECORD, &current, &desired_set).await?)
    } else {
        None
    };
    let input = PlanInput {
        desired: desired_set,
        registered: &states,
        owned: owned.as_ref(),
        vpc: &vpc,
        allow_outside_vpc: ctx.cfg.allow_outside_vpc,
        live_endpoints: desired.stats.live(),
        wanted_port: &desired.stats.wanted_port,
        slice_ports: &desired.stats.slice_ports,
    };
    let labels = crate::metrics::TgbLabels { namespace: ns.clone(), name: tgb.name_any() };
    ctx.metrics.binding_seen(&labels);
    let plan = match plan(&input) {
        Ok(mut p) => {
            // Never registered either way; still reported as outside the VPC (never silently).
            let outside = without_pod.iter().map(|t| t.ip).filter(|ip| !vpc.is_empty() && !vpc.contains(ip));
            p.outside_vpc.extend(outside);
            p.outside_vpc.sort();
            p.outside_vpc.dedup();
            p
        }
        Err(refusal) => {
            ctx.metrics.deregister_all_refused.get_or_create(&labels).inc();
            let msg = format!("TargetGroupBinding {ns}/{} (target group {arn}): {refusal}", tgb.name_any());
            status::set_not_ready(ctx, &tgb, "DeregisterAllRefused", &msg).await?;
            return Ok(Prepared::Done(Action::requeue(jittered(ctx.cfg.sync_period))));
        }
    };
    Ok(Prepared::Plan(Box::new(Planned { tgb, arn, svc, tg, vpc, gate, desired, cp, owned, plan, labels })))
}

/// The binding's Service and port, from the cache. A missing Service or port is reported
/// (Ready=False) and never acted on: `Err` holds when to look again.
pub(super) async fn service_and_port(
    ctx: &Context,
    tgb: &TargetGroupBinding,
) -> Result<Result<(Arc<Service>, ServicePort), Action>> {
    let ns = tgb.namespace().unwrap_or_default();
    let Some(svc) = ctx.stores.service(&ns, &tgb.spec.service_ref.name) else {
        let msg = format!(
            "Service {ns}/{svc} named in spec.serviceRef.name of TargetGroupBinding {ns}/{} does not exist; expected a \
             Service {svc:?} in namespace {ns}. Fix: create the Service, or correct spec.serviceRef.name; no targets \
             are changed until then",
            tgb.name_any(),
            svc = tgb.spec.service_ref.name
        );
        status::set_not_ready(ctx, tgb, "ServiceNotFound", &msg).await?;
        return Ok(Err(Action::requeue(jittered(ctx.cfg.sync_period))));
    };
    match resolve_service_port(&svc, &tgb.spec.service_ref.port) {
        Ok(p) => {
            let p = p.clone();
            Ok(Ok((svc, p)))
        }
        Err(e) => {
            status::set_not_ready(ctx, tgb, "ServicePortNotFound", &e.to_string()).await?;
            Ok(Err(Action::await_change()))
        }
    }
}

/// Whether the binding may write the target group: of the binding's target type (`want`:
/// `ip` or `instance`) and not another cluster's or stack's. `false` after reporting why.
/// The tags are read once per process, so only a change of the binding brings a foreign group
/// back.
pub(super) async fn usable_target_group(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    arn: &str,
    tg: &TargetGroupInfo,
    want: &str,
) -> Result<bool> {
    if tg.target_type != want && !tg.target_type.is_empty() {
        let msg = format!(
            "target group {arn} has target type {:?} but TargetGroupBinding {}/{} has targetType: {want}. Bind a \
             target group of type {want:?} instead",
            tg.target_type,
            tgb.namespace().unwrap_or_default(),
            tgb.name_any()
        );
        status::set_not_ready(ctx, tgb, "TargetTypeMismatch", &msg).await?;
        return Ok(false);
    }
    // Another cluster's or stack's target group: no write, not even a registration read.
    if let Some(not_ours) = foreign_owner(ctx, tgb, arn).await? {
        status::set_not_ready(ctx, tgb, not_ours.reason(), &not_ours.to_string()).await?;
        return Ok(false);
    }
    Ok(true)
}

/// Capacity for the first register and the first deregister call of a plan, taken before the
/// final plan is made (see [`lbc_aws::elbv2::ElbV2::wait_for_write_capacity`]). A permit the
/// final plan does not use goes back to the bucket when dropped.
#[derive(Default)]
struct WritePermits {
    register: Option<Permit>,
    deregister: Option<Permit>,
}

impl WritePermits {
    async fn wait(elb: &dyn ElbV2, plan: &lbc_model::plan::Plan) -> Self {
        let registers = !plan.register.is_empty() || !plan.register_any_az.is_empty();
        let register =
            async { if registers { Some(elb.wait_for_write_capacity(TargetWrite::Register).await) } else { None } };
        let deregister = async {
            if plan.deregister.is_empty() {
                None
            } else {
                Some(elb.wait_for_write_capacity(TargetWrite::Deregister).await)
            }
        };
        let (register, deregister) = futures::join!(register, deregister);
        Self { register, deregister }
    }

    /// The longest wait either permit took.
    fn waited(&self) -> std::time::Duration {
        self.register.iter().chain(&self.deregister).map(Permit::waited).max().unwrap_or_default()
    }
}

/// Carries out the plan and writes back: AWS calls, readiness gates, status, checkpoint.
async fn finish(
    ctx: &Context,
    key: &ObjectRef<TargetGroupBinding>,
    pass: Box<Planned>,
    permits: WritePermits,
    dirty_since: Option<std::time::Instant>,
) -> Result<Action> {
    let Planned { tgb, arn, svc, tg, vpc, gate, desired, cp, owned, plan, labels } = *pass;
    ctx.metrics.targets_outside_vpc.get_or_create(&labels).set(plan.outside_vpc.len() as i64);
    if !plan.outside_vpc.is_empty() {
        report_overlay_ips(ctx, &tgb, &svc, &plan.outside_vpc, &vpc).await;
    }

    let mut rejected = Vec::new();
    if !plan.is_empty() {
        status::clear_checkpoint(ctx, &tgb, key).await?;
        rejected = execute(ctx, &tgb, key, &arn, &plan, owned.as_ref(), permits, dirty_since).await?;
    }
    let refused: BTreeSet<Target> = rejected.iter().map(|(_, r)| r.target).collect();
    let registered_ok: Vec<Target> = plan.register.iter().filter(|t| !refused.contains(t)).copied().collect();

    // Readiness gates: condition patches and a health poll while any gate is pending.
    let outcome = gates::update(ctx, &tgb, key, &arn, &tg, &desired, &gate, &registered_ok).await?;

    let registered_now = ctx.with_state(key, |s| s.registered.clone().unwrap_or_default());
    status::record_target_gauges(ctx, &labels, &registered_now);
    if !rejected.is_empty() {
        // Not hot: the error makes the binding's backoff schedule the retry.
        status::set_not_ready(ctx, &tgb, "TargetRejected", &rejected_message(&tgb, &arn, &rejected)).await?;
        return Err(Error::Refused(format!(
            "{} target(s) of TargetGroupBinding {}/{} refused by AWS (see its Ready condition); retrying with backoff",
            rejected.len(),
            tgb.namespace().unwrap_or_default(),
            tgb.name_any()
        )));
    }
    let complete = outcome.pending == 0 && plan.outside_vpc.is_empty() && plan.deferred.is_empty();
    let mut again_in = status::write_back(ctx, &tgb, key, &registered_now, &plan, &desired, &cp, complete).await?;
    if !plan.deferred.is_empty() {
        // QUIC targets wait for their address's old registration to go: register them next pass.
        again_in = Some(again_in.map_or(DEFERRED_RETRY, |d| d.min(DEFERRED_RETRY)));
    }
    Ok(Action::requeue(next_sync(&NextSync {
        gates_pending: outcome.pending,
        settling: outcome.settling,
        poll_in: outcome.poll_in,
        verify_in: ctx.with_state(key, |s| s.verify_due.map(|d| d.saturating_duration_since(Instant::now()))),
        sync_period: ctx.cfg.sync_period,
        write_back_in: again_in,
    })))
}

/// Whether the binding's group is QUIC or TCP_QUIC: its spec says so, or (no protocol in the
/// spec) AWS does.
fn speaks_quic(spec: Option<TargetGroupProtocol>, tg: Option<&TargetGroupInfo>) -> bool {
    match spec {
        Some(p) => matches!(p, TargetGroupProtocol::QUIC | TargetGroupProtocol::TcpQuic),
        None => tg.and_then(|t| t.protocol.as_deref()).is_some_and(|p| p == "QUIC" || p == "TCP_QUIC"),
    }
}

fn compute_desired(
    ctx: &Context,
    ns: &str,
    svc: &Service,
    svc_port: &k8s_openapi::api::core::v1::ServicePort,
    tgb: &TargetGroupBinding,
    gate: &str,
    quic: bool,
) -> DesiredTargets {
    let slices = ctx.stores.slices_of(ns, &svc.name_any());
    let input = EndpointInputs {
        service_port: svc_port,
        family: tgb.spec.ip_family(),
        gate,
        pod: |name: &str| ctx.stores.pod(ns, name),
        node: |name: &str| ctx.stores.node(name).map(|n| NodeReadiness::of(&n)),
        quic,
    };
    desired_targets(slices.iter().map(Arc::as_ref), &input)
}

pub(super) async fn resolve_arn(tgb: &TargetGroupBinding, ctx: &Context) -> Result<Option<String>> {
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
    match ctx.elb_for(tgb).describe_target_group_by_name(name).await? {
        Some(tg) => {
            let arn = tg.arn.clone();
            ctx.target_groups.lock().expect("tg cache").insert(arn.clone(), tg);
            Ok(Some(arn))
        }
        None => {
            let msg = format!(
                "target group named {name:?} (spec.targetGroupName of TargetGroupBinding {ns}/{}) does not exist in \
                 the controller's account and region (--aws-region); expected an existing target group of that name. \
                 Fix: create it, or correct spec.targetGroupName (or set spec.targetGroupARN)",
                tgb.name_any()
            );
            status::set_target_group_missing(ctx, tgb, &msg).await?;
            Ok(None)
        }
    }
}

/// Target group details, cached per ARN; `None` (with a condition and an event) when AWS says
/// the group does not exist, e.g. deleted out of band.
pub(super) async fn target_group(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    arn: &str,
) -> Result<Option<TargetGroupInfo>> {
    if let Some(tg) = cached_target_group(ctx, arn) {
        return Ok(Some(tg));
    }
    // Single flight: the first reconcile that misses fetches, the others wait and find the cache
    // filled. It fetches every group the bindings name that is not cached yet (a cold start's
    // worth), up to one DescribeTargetGroups call's ARNs, this one first.
    let _fetching = ctx.target_group_fetch.lock().await;
    if let Some(tg) = cached_target_group(ctx, arn) {
        return Ok(Some(tg));
    }
    let elb = ctx.elb_for(tgb);
    let arns = uncached_target_group_arns(ctx, tgb, arn);
    if arns.len() > 1 {
        match elb.describe_target_groups(&arns).await {
            Ok(found) => {
                let mut cache = ctx.target_groups.lock().expect("tg cache");
                for tg in found {
                    cache.insert(tg.arn.clone(), tg);
                }
            }
            // One of them does not exist, which fails the whole call: ask for ours alone.
            Err(e) if e.kind == lbc_aws::error::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        if let Some(tg) = cached_target_group(ctx, arn) {
            return Ok(Some(tg));
        }
    }
    match elb.describe_target_group(arn).await? {
        Some(tg) => {
            ctx.target_groups.lock().expect("tg cache").insert(arn.to_string(), tg.clone());
            Ok(Some(tg))
        }
        None => {
            let account = match tgb.spec.role_to_assume() {
                None => String::new(),
                Some(r) => format!(" in the account of role {} (spec.iamRoleArnToAssume)", r.role_arn),
            };
            let msg = format!(
                "target group {arn} of TargetGroupBinding {}/{} does not exist{account} (deleted out of band?); \
                 recreate it and update spec.targetGroupARN, or delete the binding",
                tgb.namespace().unwrap_or_default(),
                tgb.name_any()
            );
            status::set_target_group_missing(ctx, tgb, &msg).await?;
            Ok(None)
        }
    }
}

/// Whether the target group belongs to another cluster or stack, or is one the strict tenancy
/// mode does not grant ([`lbc_model::tg_ownership::target_group_access`]). Its tags are read once
/// per ARN and
/// process; concurrent first reads wait for the one in flight. The first read also fetches the
/// tags of the other groups the bindings name that are not known yet, up to one DescribeTags
/// call's ARNs (a cold start or a failover reads 10 groups' tags in one call, not 10).
pub(super) async fn foreign_owner(ctx: &Context, tgb: &TargetGroupBinding, arn: &str) -> Result<Option<NotOurs>> {
    // The upstream's trust: a multi-cluster binding writes whatever the group's tags say (no
    // read); the strict mode reads them, for the policy to grant the group.
    if tgb.spec.is_multi_cluster() && ctx.cfg.tenancy.mode() == TenancyMode::Compatible {
        return Ok(None);
    }
    let cell = tag_cell(ctx, arn);
    if let Some(tags) = cell.get() {
        return Ok(access(ctx, tgb, arn, tags));
    }
    // Single flight across groups: the concurrent first syncs of a cold start wait for one
    // batched read instead of each reading every group's tags.
    let _fetching = ctx.target_group_fetch.lock().await;
    let tags = cell
        .get_or_try_init(|| async {
            let elb = ctx.elb_for(tgb);
            let others = uncached_tag_arns(ctx, tgb, arn);
            if !others.is_empty() {
                let arns: Vec<String> = std::iter::once(arn.to_string()).chain(others).collect();
                match elb.target_groups_tags(&arns).await {
                    Ok(mut found) => {
                        if let Some(mine) = found.remove(arn) {
                            for (other, tags) in found {
                                // Already filled or being filled by its own read: keep that one.
                                let _ = tag_cell(ctx, &other).set(tags);
                            }
                            return Ok(mine);
                        }
                    }
                    // One of them does not exist, which fails the whole call: ask for ours alone.
                    Err(e) if e.kind == lbc_aws::error::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
            }
            elb.target_group_tags(arn).await?.ok_or_else(|| AwsError {
                kind: lbc_aws::error::ErrorKind::NotFound,
                service: "elasticloadbalancing",
                operation: "DescribeTags",
                code: Some("TargetGroupNotFound".into()),
                message: format!("target group {arn} not found"),
                status: None,
            })
        })
        .await?;
    Ok(access(ctx, tgb, arn, tags))
}

fn access(ctx: &Context, tgb: &TargetGroupBinding, arn: &str, tags: &lbc_model::lb::Tags) -> Option<NotOurs> {
    match target_group_access(&ctx.cfg.cluster_name, &ctx.cfg.tenancy, tgb, arn, tags) {
        Ok(None) => None,
        Ok(Some(e)) => {
            // The compatible mode's upstream trust model, allowed as in the upstream: debug only.
            tracing::debug!(kind = e.kind, detail = %e.detail, "tenancy exposure");
            None
        }
        Err(not_ours) => Some(not_ours),
    }
}

/// Whether the binding may deregister only the targets it registered (its record): a
/// multi-cluster binding, or one on a target group without ownership tags
/// ([`lbc_model::tg_ownership::untagged`]; its tags as [`foreign_owner`] read them).
pub(super) fn records_own_targets(ctx: &Context, tgb: &TargetGroupBinding, arn: &str) -> bool {
    if tgb.spec.is_multi_cluster() {
        return true;
    }
    let known = ctx.target_group_tags.lock().expect("tag cache").get(arn).cloned();
    known.and_then(|c| c.get().map(lbc_model::tg_ownership::untagged)).unwrap_or(false)
}

fn tag_cell(ctx: &Context, arn: &str) -> Arc<tokio::sync::OnceCell<lbc_model::lb::Tags>> {
    ctx.target_group_tags.lock().expect("tag cache").entry(arn.to_string()).or_default().clone()
}

/// The other ARNs the cached bindings name whose tags are not known, read as the same role and
/// checked for ownership (not multi-cluster, unless strict), at most one DescribeTags call's worth
/// with `arn`.
fn uncached_tag_arns(ctx: &Context, tgb: &TargetGroupBinding, arn: &str) -> Vec<String> {
    let strict = ctx.cfg.tenancy.mode() == TenancyMode::Strict;
    let named = other_named_arns(ctx, tgb, arn, |t| strict || !t.spec.is_multi_cluster());
    let known = ctx.target_group_tags.lock().expect("tag cache");
    named
        .into_iter()
        .filter(|a| known.get(a).is_none_or(|c| !c.initialized()))
        .take(lbc_aws::elbv2::DESCRIBE_TAGS_MAX_ARNS - 1)
        .collect()
}

/// The target group ARNs that cached bindings other than `arn`'s name, read as the same role as
/// `tgb` (one call is signed by one identity), not being deleted, and kept by `keep`.
fn other_named_arns(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    arn: &str,
    keep: impl Fn(&TargetGroupBinding) -> bool,
) -> BTreeSet<String> {
    let role = tgb.spec.role_to_assume();
    ctx.stores
        .tgbs
        .state()
        .iter()
        .filter(|t| t.meta().deletion_timestamp.is_none() && t.spec.role_to_assume() == role && keep(t))
        .filter_map(|t| t.spec.target_group_arn.clone())
        .filter(|a| !a.is_empty() && a != arn)
        .collect()
}

/// On deletion: `true` (after an Event) when the target group is another cluster's or stack's
/// (or not granted by the strict tenancy mode), whose targets a deleted binding must not
/// deregister either. A vanished group is not foreign.
pub(super) async fn foreign_on_delete(ctx: &Context, tgb: &TargetGroupBinding, arn: &str) -> Result<bool> {
    let foreign = match foreign_owner(ctx, tgb, arn).await {
        Err(Error::Aws(e)) if e.kind == lbc_aws::error::ErrorKind::NotFound => None,
        other => other?,
    };
    let Some(foreign) = foreign else { return Ok(false) };
    let msg = format!("{foreign}. The binding is deleted without deregistering anything");
    ctx.event(&tgb.object_ref(&()), true, foreign.reason(), msg).await;
    Ok(true)
}

fn cached_target_group(ctx: &Context, arn: &str) -> Option<TargetGroupInfo> {
    ctx.target_groups.lock().expect("tg cache").get(arn).cloned()
}

/// `arn` followed by the other ARNs the cached bindings name that are not cached yet, at most
/// one DescribeTargetGroups call's worth.
fn uncached_target_group_arns(ctx: &Context, tgb: &TargetGroupBinding, arn: &str) -> Vec<String> {
    let named = other_named_arns(ctx, tgb, arn, |_| true);
    let cache = ctx.target_groups.lock().expect("tg cache");
    std::iter::once(arn.to_string())
        .chain(named.into_iter().filter(|a| !cache.contains_key(a)))
        .take(DESCRIBE_TARGET_GROUPS_MAX_ARNS)
        .collect()
}

/// The binding's VPC: its own, the target group's, or the cluster's (empty: none known).
pub(super) fn binding_vpc_id(ctx: &Context, tgb: &TargetGroupBinding, tg: &TargetGroupInfo) -> String {
    // A target group read as another account's role reports that account's view of its VPC;
    // the controller's own EC2 calls know the cluster's (a shared VPC), as in ALBC.
    let tg_vpc = if tgb.spec.role_to_assume().is_some() { None } else { tg.vpc_id.clone() };
    tgb.spec.vpc_id.clone().or(tg_vpc).filter(|v| !v.is_empty()).unwrap_or_else(|| ctx.cfg.cluster_vpc_id.clone())
}

/// The CIDRs of the binding's VPC (its own, the target group's, or the cluster's).
async fn vpc_cidrs(ctx: &Context, tgb: &TargetGroupBinding, tg: &TargetGroupInfo) -> Result<VpcCidrs> {
    let vpc_id = binding_vpc_id(ctx, tgb, tg);
    if vpc_id.is_empty() {
        return Ok(VpcCidrs::default());
    }
    ctx.vpc_cidrs(&vpc_id).await
}

/// Endpoints of the Service's EndpointSlices that no known pod of the namespace stands behind,
/// left out of the target group ([`lbc_model::endpoints::without_pods`]).
async fn report_endpoints_without_pods(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    svc: &Service,
    arn: &str,
    targets: &[Target],
) {
    let shown: Vec<String> = targets.iter().take(10).map(Target::to_string).collect();
    let more = if targets.len() > 10 { format!(" (and {} more)", targets.len() - 10) } else { String::new() };
    let ns = svc.namespace().unwrap_or_default();
    let msg = format!(
        "endpoint(s) {}{more} in the EndpointSlices of Service {ns}/{} were NOT registered in target group {arn}: no \
         pod of namespace {ns} stands behind them (no Pod targetRef, a pod this controller does not know, or an \
         address the pod named does not hold). Only the endpoints at the addresses of the namespace's own pods are \
         registered, as the upstream controller does: EndpointSlices \
         are writable by anyone who may write them in the namespace. To put other addresses behind a load balancer, \
         use a Service without a selector and list them in its EndpointSlices",
        shown.join(", "),
        svc.name_any()
    );
    ctx.event(&tgb.object_ref(&()), true, "EndpointsWithoutPod", msg).await;
}

/// Targets of a QUIC group left out for want of a QUIC server ID (AWS refuses them without one):
/// counted in `awslbc_quic_target_missing_server_id` and said once per pass in an Event naming the
/// pods and the fix.
async fn report_quic_without_server_id(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    arn: &str,
    missing: &[(Target, Option<String>, Option<lbc_model::pod::QuicIdMissing>)],
) {
    let ns = tgb.namespace().unwrap_or_default();
    ctx.metrics.quic_target_missing_server_id(&ns, &tgb.name_any(), missing.len());
    let shown: Vec<String> = missing
        .iter()
        .take(5)
        .map(|(t, pod, why)| match (pod, why) {
            (Some(p), Some(w)) => format!("{t} (pod {p}: {w})"),
            (Some(p), None) => format!("{t} (pod {p}, not known to this controller yet)"),
            (None, _) => format!("{t} (no pod behind it)"),
        })
        .collect();
    let more = if missing.len() > 5 { format!("; and {} more", missing.len() - 5) } else { String::new() };
    let msg = format!(
        "{} target(s) were NOT registered in QUIC target group {arn}: AWS routes QUIC by a server ID each target \
         carries, and these have none: {}{more}",
        missing.len(),
        shown.join("; ")
    );
    ctx.event(&tgb.object_ref(&()), true, "QUICServerIDMissing", msg).await;
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
/// side so a rolling update's new pods are not queued behind the old ones' removal. A batch AWS
/// refuses because of one target is split until that target is alone (`lbc_model::poison`);
/// the targets refused on their own are returned, everything else was written.
#[allow(clippy::too_many_arguments)]
async fn execute(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    key: &ObjectRef<TargetGroupBinding>,
    arn: &str,
    plan: &lbc_model::plan::Plan,
    owned: Option<&BTreeSet<Target>>,
    permits: WritePermits,
    dirty_since: Option<std::time::Instant>,
) -> Result<Vec<(TargetWrite, Rejected)>> {
    let WritePermits { register: mut register_permit, deregister: mut deregister_permit } = permits;
    if !plan.is_empty() {
        ctx.wrote_targets(key);
    }
    let batch = ctx.cfg.batch_size;
    let elb = ctx.elb_for(tgb);
    let elb = elb.as_ref();
    if let Some(owned) = owned {
        // Multi-cluster: record what we are about to register before registering it, so a crash
        // in between can never leave targets no cluster claims.
        let next = owned_after(owned, plan.register.iter().chain(&plan.register_any_az), []);
        status::write_owned(ctx, tgb, key, &status::IP_RECORD, &next).await?;
    }
    let register = async {
        if let (Some(since), false) = (dirty_since, plan.register.is_empty() && plan.register_any_az.is_empty()) {
            ctx.metrics.endpoint_to_register.observe(
                since.elapsed().as_secs_f64(),
                crate::metrics::TraceExemplar::of(&tracing::Span::current()),
                Some(std::time::SystemTime::now()),
            );
        }
        let calls = batches(&plan.register, batch)
            .map(|b| (b, None))
            .chain(batches(&plan.register_any_az, batch).map(|b| (b, Some("all"))));
        let mut out = Written::default();
        for (b, az) in calls {
            write_isolating(ctx, elb, arn, TargetWrite::Register, az, &mut register_permit, b, &mut out).await?;
        }
        drop(register_permit);
        Ok::<_, Error>(out)
    };
    let deregister = async {
        if let (Some(since), false) = (dirty_since, plan.deregister.is_empty()) {
            ctx.metrics.terminating_to_deregister.observe(since.elapsed().as_secs_f64());
        }
        let mut out = Written::default();
        for b in batches(&plan.deregister, batch) {
            write_isolating(ctx, elb, arn, TargetWrite::Deregister, None, &mut deregister_permit, b, &mut out).await?;
        }
        drop(deregister_permit);
        Ok::<_, Error>(out)
    };
    let (r, d) = futures::join!(register, deregister);
    let (registered, deregistered) = (r?, d?);
    let now = Instant::now();
    ctx.with_state(key, |s| {
        let reg = s.registered.get_or_insert_with(BTreeMap::new);
        for t in &registered.done {
            reg.insert(*t, TargetHealth::new(HealthState::Initial));
            s.registered_at.insert(*t, now);
        }
        for t in &deregistered.done {
            reg.remove(t);
            s.registered_at.remove(t);
        }
    });
    if let Some(owned) = owned {
        // What was planned stays recorded, registered or refused: a refused target is not
        // registered, so it is never deregistered on the record's account, and a record that
        // does not flip between retries costs no status write per retry.
        let planned = owned_after(owned, plan.register.iter().chain(&plan.register_any_az), []);
        let next = owned_after(&planned, [], &deregistered.done);
        status::write_owned(ctx, tgb, key, &status::IP_RECORD, &next).await?;
    }
    tracing::info!(
        binding = %key, target_group = arn,
        registered = registered.done.len(), deregistered = deregistered.done.len(),
        rejected = registered.rejected.len() + deregistered.rejected.len(),
        calls = plan.call_floor(batch),
        "target group updated"
    );
    let rejected = registered.rejected.into_iter().map(|r| (TargetWrite::Register, r));
    Ok(rejected.chain(deregistered.rejected.into_iter().map(|r| (TargetWrite::Deregister, r))).collect())
}

/// What the calls of one kind of write did.
#[derive(Default)]
struct Written {
    done: Vec<Target>,
    rejected: Vec<Rejected>,
}

/// One batch; when AWS refuses it because of a target (`InvalidTarget`), halves it until the bad
/// targets are alone. Any other failure, or more bad targets than an isolation may chase, fails
/// the reconcile as before (retried with the binding's backoff).
#[allow(clippy::too_many_arguments)]
async fn write_isolating(
    ctx: &Context,
    elb: &dyn ElbV2,
    arn: &str,
    write: TargetWrite,
    az: Option<&str>,
    permit: &mut Option<Permit>,
    batch: &[Target],
    out: &mut Written,
) -> Result<()> {
    ctx.ensure_leader()?;
    let first = match write_once(elb, arn, write, az, permit.take(), batch).await {
        Ok(()) => {
            out.done.extend_from_slice(batch);
            return Ok(());
        }
        Err(e) if is_poison(e.code.as_deref()) => e,
        Err(e) => return Err(e.into()),
    };
    let mut iso = Isolation::new(batch, &aws_reason(&first));
    while let Some(group) = iso.next_group() {
        ctx.ensure_leader()?;
        match write_once(elb, arn, write, az, None, &group).await {
            Ok(()) => iso.record(&group, Ok(())),
            Err(e) if is_poison(e.code.as_deref()) => iso.record(&group, Err(&aws_reason(&e))),
            Err(e) => return Err(e.into()),
        }
    }
    if !iso.untried().is_empty() {
        return Err(first.into());
    }
    tracing::warn!(
        target_group = arn,
        operation = write.operation(),
        batch = batch.len(),
        rejected = iso.rejected.len(),
        "batch refused because of single targets: isolated them, wrote the rest"
    );
    out.done.extend(iso.done);
    out.rejected.extend(iso.rejected);
    Ok(())
}

async fn write_once(
    elb: &dyn ElbV2,
    arn: &str,
    write: TargetWrite,
    az: Option<&str>,
    permit: Option<Permit>,
    targets: &[Target],
) -> Result<(), AwsError> {
    match (write, permit) {
        (TargetWrite::Register, Some(p)) => elb.register_targets_with(p, arn, targets, az).await,
        (TargetWrite::Register, None) => elb.register_targets(arn, targets, az).await,
        (TargetWrite::Deregister, Some(p)) => elb.deregister_targets_with(p, arn, targets).await,
        (TargetWrite::Deregister, None) => elb.deregister_targets(arn, targets).await,
    }
}

fn aws_reason(e: &AwsError) -> String {
    format!("{}: {}", e.code.as_deref().unwrap_or("error"), e.message)
}

/// The Ready condition (and Warning) for targets AWS refused on their own.
fn rejected_message(tgb: &TargetGroupBinding, arn: &str, rejected: &[(TargetWrite, Rejected)]) -> String {
    let list: Vec<String> = rejected
        .iter()
        .take(5)
        .map(|(w, r)| format!("{} ({} refused: {})", r.target, w.operation(), r.reason))
        .collect();
    let more = if rejected.len() > 5 { format!(" and {} more", rejected.len() - 5) } else { String::new() };
    format!(
        "AWS refused target {}{more} of TargetGroupBinding {}/{} (target group {arn}); the other targets of the plan \
         were written. The refused ones are retried with the binding's backoff. Fix what AWS names: a pod IP \
         outside the target group's VPC subnets, a port the target group cannot use, or a target registered in too \
         many target groups",
        list.join(", "),
        tgb.namespace().unwrap_or_default(),
        tgb.name_any()
    )
}
