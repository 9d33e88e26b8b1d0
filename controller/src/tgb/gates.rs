//! Pod readiness gates: poll target health while gates are pending, and patch
//! `target-health.elbv2.k8s.aws/<binding>` conditions on change. Targets we registered are also
//! polled, gated or not, until AWS reports them out of `initial` (the targets-by-state gauges and
//! the registered-to-healthy latency would otherwise show them `initial` until the next
//! verification, hours later). Only those targets, at the health-check cadence.

use crate::context::Context;
use crate::error::Result;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use lbc_aws::elbv2::TargetGroupInfo;
use lbc_model::binding::{GatePatch, gate_condition, gate_patch, pending_gates, settling_targets};
use lbc_model::crd::TargetGroupBinding;
use lbc_model::endpoints::DesiredTargets;
use lbc_model::readiness::{GateCondition, gate_may_open, health_poll_due, health_poll_interval};
use lbc_model::target::{HealthState, Target};
use serde_json::json;
use std::collections::HashSet;
use std::time::Duration;
use tokio::time::Instant;

pub(super) struct GateOutcome {
    /// Gated pods whose condition is still not True.
    pub pending: usize,
    /// Registered targets still `initial` as last seen (a poll is due at `poll_in`).
    pub settling: usize,
    /// When the next health poll is due.
    pub poll_in: Duration,
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn update(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    key: &ObjectRef<TargetGroupBinding>,
    arn: &str,
    tg: &TargetGroupInfo,
    desired: &DesiredTargets,
    gate: &str,
    just_registered: &[Target],
) -> Result<GateOutcome> {
    let ns = tgb.namespace().unwrap_or_default();
    let pending = pending_gates(desired);
    let interval =
        health_poll_interval(tg.health_check_interval_seconds, ctx.cfg.health_poll_floor, ctx.cfg.health_poll_ceiling);
    let gated: HashSet<Target> = pending.iter().map(|(t, _)| *t).collect();
    let settling = |s: &crate::context::BindingState| settling_targets(s.registered.as_ref(), &gated);
    let settling_now = ctx.with_state(key, |s| settling(s));
    if pending.is_empty() && settling_now.is_empty() {
        return Ok(GateOutcome { pending: 0, settling: 0, poll_in: interval });
    }

    let fresh: HashSet<Target> = just_registered.iter().copied().collect();
    let now = Instant::now();
    let wait = |s: &crate::context::BindingState| {
        let watched = pending.iter().map(|(t, _)| *t).chain(settling(s));
        let registered_ago = watched.map(|t| s.registered_at.get(&t).map(|at| now.duration_since(*at)));
        let since_poll = s.last_health_poll.map(|l| now.duration_since(l));
        health_poll_due(since_poll, registered_ago, interval, ctx.cfg.health_poll_floor)
    };
    let due = ctx.with_state(key, |s| wait(s)).is_zero();
    let to_poll: Vec<Target> =
        pending.iter().map(|(t, _)| *t).chain(settling_now).filter(|t| !fresh.contains(t)).collect();
    // Targets AWS reports not registered although we believed them registered (deregistered out
    // of band): their gates stay False and they are dropped from what we believe registered, so
    // the next pass (due at once) registers them again.
    let mut lost = Vec::new();
    if due && !to_poll.is_empty() {
        let health = ctx.elb_for(tgb).describe_target_health(arn, Some(&to_poll)).await?;
        ctx.with_state(key, |s| {
            s.last_health_poll = Some(now);
            let reg = s.registered.get_or_insert_with(Default::default);
            for r in health {
                if r.health.is_not_registered() {
                    reg.remove(&r.target);
                    lost.push((r.target, r.health));
                } else {
                    reg.insert(r.target, r.health);
                }
            }
        });
        // Ungated targets settled healthy: their registration-to-healthy latency (gated ones
        // are measured when their gate turns True, below).
        let settled: Vec<f64> = ctx.with_state(key, |s| {
            let healthy: Vec<Target> = to_poll
                .iter()
                .filter(|t| !gated.contains(t))
                .filter(|t| {
                    s.registered.as_ref().and_then(|r| r.get(t)).is_some_and(|h| h.state == HealthState::Healthy)
                })
                .copied()
                .collect();
            healthy.iter().filter_map(|t| s.registered_at.remove(t)).map(|at| at.elapsed().as_secs_f64()).collect()
        });
        for secs in settled {
            ctx.metrics.registered_to_healthy.observe(secs);
        }
    }
    if !lost.is_empty() {
        let shown: Vec<String> = lost.iter().take(5).map(|(t, h)| format!("{t} ({})", h.state.as_str())).collect();
        tracing::warn!(binding = %key, target_group = arn, targets = ?shown, "targets not registered in AWS although expected (deregistered out of band?); registering them again");
    }

    let mut still_pending = 0;
    let keys_left = ctx.unrefreshable_keys_left();
    let mut held = 0;
    for (t, pod_name) in &pending {
        let health = ctx.with_state(key, |s| s.registered.as_ref().and_then(|r| r.get(t).cloned()));
        let unregistered = lost.iter().find(|(l, _)| l == t).map(|(_, h)| h);
        let cond = gate_condition(unregistered, health.as_ref(), fresh.contains(t));
        if cond.status == "True" && !gate_may_open(keys_left) {
            // Left as it is: the old pod this gate would let the rollout delete could not be
            // deregistered once the keys run out.
            held += 1;
            still_pending += 1;
            continue;
        }
        if cond.status != "True" {
            still_pending += 1;
        }
        // A pod in `pending` carried the gate when the targets were computed; one recreated
        // since under the same name without our gates (no UID kept) is left alone.
        let Some((pod, uid)) = ctx.stores.pod(&ns, pod_name).and_then(|p| Some((p.clone(), p.uid()?.to_string())))
        else {
            continue;
        };
        let Some(patch) = gate_patch(&cond, pod.gate(gate).and_then(|g| g.current.as_ref())) else {
            continue;
        };
        patch_condition(ctx, (&ns, pod_name, &uid), gate, &cond, patch).await?;
        if cond.status == "True"
            && let Some(at) = ctx.with_state(key, |s| s.registered_at.remove(t))
        {
            let secs = at.elapsed().as_secs_f64();
            ctx.metrics.readiness_gate_ready(&ns, &key.name, secs);
            ctx.metrics.registered_to_healthy.observe(secs);
        }
    }
    if held > 0 {
        tracing::warn!(
            binding = %key,
            gates = held,
            keys_left = ?keys_left,
            "readiness gates held: the AWS credentials cannot be refreshed and expire within {:?}, so a pod the \
             rollout would remove could not be deregistered; the rollout waits until the credentials recover \
             (see /readyz and aws_credentials_expiry_timestamp_seconds)",
            lbc_model::readiness::GATE_KEYS_MARGIN
        );
    }
    let poll_in = if lost.is_empty() { ctx.with_state(key, |s| wait(s)) } else { Duration::ZERO };
    let settling = ctx.with_state(key, |s| settling(s).len());
    Ok(GateOutcome { pending: still_pending, settling, poll_in })
}

/// Patches one readiness-gate condition of the pod (namespace, name, UID), as
/// [`lbc_model::binding::gate_patch`] decided. The UID is part of the patch: a pod deleted and recreated under the same name is not touched (the API server
/// answers 409).
pub(super) async fn patch_condition(
    ctx: &Context,
    (ns, name, uid): (&str, &str, &str),
    gate: &str,
    cond: &GateCondition,
    patch: GatePatch,
) -> Result<()> {
    ctx.ensure_leader()?;
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), ns);
    let transition = patch
        .keep_transition
        .unwrap_or_else(|| k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now()));
    let body = json!({
        "metadata": { "uid": uid },
        "status": { "conditions": [{
            "type": gate,
            "status": cond.status,
            "reason": cond.reason,
            "message": cond.message,
            "lastProbeTime": null,
            "lastTransitionTime": transition,
        }]}
    });
    let write = lbc_model::pod::GateWrite {
        condition_type: gate.to_string(),
        status: cond.status.to_string(),
        reason: cond.reason.clone(),
        message: cond.message.clone(),
    };
    ctx.triggers.expect_gate_write(ns, name, write);
    let res = api.patch_status(name, &PatchParams::default(), &Patch::Strategic(body)).await;
    if res.is_err() {
        ctx.triggers.forget_gate_write(ns, name, gate);
    }
    match res {
        Ok(_) => {
            ctx.metrics.pod_condition_patches.inc();
            Ok(())
        }
        // The pod is gone or was replaced: nothing to do, the next pass sees the new one.
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}
