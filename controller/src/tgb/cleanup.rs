//! Deletion of a binding: deregister its targets, release its pods' gates, drop the finalizer.
//! A target group that no longer exists does not block deletion.

use super::{gates, status};
use crate::context::Context;
use crate::error::Result;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use lbc_aws::error::ErrorKind;
use lbc_model::binding::{deletion_targets, gate_patch};
use lbc_model::crd::TargetGroupBinding;
use lbc_model::names::readiness_gate_condition;
use lbc_model::plan::batches;
use lbc_model::readiness::GateCondition;
use std::sync::Arc;

pub(super) async fn cleanup(tgb: Arc<TargetGroupBinding>, ctx: &Context) -> Result<Action> {
    let key = ObjectRef::from_obj(tgb.as_ref());
    let ns = tgb.namespace().unwrap_or_default();
    if let Some(arn) = tgb.spec.target_group_arn.as_deref().filter(|a| !a.is_empty())
        && !super::sync::foreign_on_delete(ctx, &tgb, arn).await?
    {
        let elb = ctx.elb_for(&tgb);
        // Instance mode deregisters its targets itself; the listing below is of IP targets.
        let instance_mode = tgb.spec.effective_target_type() == lbc_model::crd::TargetType::Instance;
        let listed = if instance_mode {
            match super::instance::deregister_all(ctx, &tgb, arn).await {
                Ok(()) => Ok(Vec::new()),
                Err(crate::error::Error::Aws(e)) => Err(e),
                Err(other) => return Err(other),
            }
        } else {
            elb.describe_target_health(arn, None).await
        };
        match listed {
            Ok(_) if instance_mode => {}
            Ok(all) => {
                let owned = if super::sync::records_own_targets(ctx, &tgb, arn) {
                    Some(deletable_record(ctx, &tgb, &key, &status::IP_RECORD).await)
                } else {
                    None
                };
                let ours = deletion_targets(all.iter().map(|r| (r.target, r.health.state)), owned.as_ref());
                for b in batches(&ours, ctx.cfg.batch_size) {
                    match elb.deregister_targets(arn, b).await {
                        Err(e) if e.kind == ErrorKind::NotFound => break,
                        r => r?,
                    }
                }
                tracing::info!(binding = %key, target_group = arn, deregistered = ours.len(), "binding deleted: targets deregistered");
            }
            Err(e) if e.kind == ErrorKind::NotFound => {
                ctx.event(
                    &kube::Resource::object_ref(tgb.as_ref(), &()),
                    false,
                    "TargetGroupNotFound",
                    format!("target group {arn} no longer exists; nothing to deregister, deletion continues"),
                )
                .await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    if tgb.spec.is_multi_cluster() {
        status::delete_owned_targets(ctx, &tgb).await?;
    }
    // Release the gates so rollouts of pods that still carry them are not blocked forever.
    let gate = readiness_gate_condition(&tgb.name_any());
    let released = GateCondition::binding_deleted();
    for (name, pod) in ctx.stores.pods_with_gate(&ns, &gate) {
        if let (Some(patch), Some(uid)) =
            (gate_patch(&released, pod.gate(&gate).and_then(|g| g.current.as_ref())), pod.uid())
        {
            gates::patch_condition(ctx, (&ns, &name, uid), &gate, &released, patch).await?;
        }
    }
    ctx.metrics.forget_binding(&crate::metrics::TgbLabels { namespace: ns.clone(), name: tgb.name_any() });
    ctx.forget(&key);
    Ok(Action::await_change())
}

/// On deletion, the targets a binding that may deregister only its own registered: its record,
/// or none at all (after a Warning) when it never made one, as ALBC does without its ConfigMap.
pub(super) async fn deletable_record<T>(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    key: &ObjectRef<TargetGroupBinding>,
    codec: &status::RecordCodec<T>,
) -> std::collections::BTreeSet<T> {
    if let Some(owned) = status::recorded_targets(ctx, tgb, key, codec) {
        return owned;
    }
    let msg = format!(
        "TargetGroupBinding {}/{} has no record of the targets it registered (status.ownedTargets), so its deletion \
         deregisters nothing from target group {}: it may deregister only its own targets. Deregister leftovers by \
         hand if there are any",
        tgb.namespace().unwrap_or_default(),
        tgb.name_any(),
        tgb.spec.target_group_arn.as_deref().unwrap_or_default()
    );
    ctx.event(&kube::Resource::object_ref(tgb, &()), true, "NoTargetRecord", msg).await;
    Default::default()
}
