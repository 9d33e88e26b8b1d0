//! Status, conditions, the checkpoint annotation and the record of the targets a binding
//! registered (`status.ownedTargets`, mirrored to ALBC's multi-cluster ConfigMap).
//! Every write happens only on a real change, so a healthy steady state costs no API calls.

use crate::context::Context;
use crate::error::Result;
use crate::metrics::{TargetStateLabels, TgbLabels};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use lbc_model::binding::{
    READY, ReadyStatus, is_ready, owned_targets_value, parse_owned_targets, ready_transition, status_change,
    synced_status,
};
use lbc_model::checkpoint::{StatusChange, WriteBackInput, write_back as write_back_decision};
use lbc_model::crd::TargetGroupBinding;
use lbc_model::endpoints::DesiredTargets;
use lbc_model::names::{CHECKPOINT_ANNOTATION, CHECKPOINT_TIMESTAMP_ANNOTATION, multicluster_configmap_name};
use lbc_model::nodes::{InstanceTarget, owned_instance_targets_value, parse_owned_instance_targets};
use lbc_model::plan::Plan;
use lbc_model::target::{Target, TargetHealth};
use lbc_model::tg_ownership::adopt_upstream_record;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

fn api(ctx: &Context, tgb: &TargetGroupBinding) -> Api<TargetGroupBinding> {
    Api::namespaced(ctx.client.clone(), &tgb.namespace().unwrap_or_default())
}

/// Writes the Ready condition (and counts) when anything differs
/// ([`lbc_model::binding::status_change`]); returns whether it wrote.
async fn write_status(ctx: &Context, tgb: &TargetGroupBinding, want: &ReadyStatus) -> Result<bool> {
    if status_change(tgb, want) == StatusChange::None {
        return Ok(false);
    }
    let generation = tgb.metadata.generation;
    let transition = ready_transition(tgb, want).unwrap_or_else(|| Time(jiff::Timestamp::now()));
    // A merge patch replaces the whole list: the conditions other writers own (the networking pass's
    // `BackendSecurityGroupRules`) go back as they are.
    let mut conditions: Vec<serde_json::Value> = tgb
        .status
        .iter()
        .flat_map(|s| s.conditions.iter())
        .filter(|c| c.type_ != READY)
        .filter_map(|c| serde_json::to_value(c).ok())
        .collect();
    conditions.push(json!({
        "type": READY, "status": want.status(), "reason": want.reason, "message": want.message,
        "lastTransitionTime": transition, "observedGeneration": generation,
    }));
    let mut body = json!({"status": {"observedGeneration": generation, "conditions": conditions}});
    if let Some((r, h)) = want.counts {
        body["status"]["registeredTargets"] = json!(r);
        body["status"]["healthyTargets"] = json!(h);
    }
    match api(ctx, tgb).patch_status(&tgb.name_any(), &PatchParams::default(), &Patch::Merge(body)).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Reports a problem that stops the sync: Ready=False plus a Warning event (once per change).
pub(super) async fn set_not_ready(ctx: &Context, tgb: &TargetGroupBinding, reason: &str, message: &str) -> Result<()> {
    if write_status(ctx, tgb, &ReadyStatus::not_ready(reason, message)).await? {
        ctx.event(&tgb.object_ref(&()), true, reason, message.to_string()).await;
    }
    Ok(())
}

/// Ready=True after a successful instance-mode sync, with the counts; an event when it turns
/// Ready.
pub(super) async fn set_synced(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    message: &str,
    counts: (i32, i32),
) -> Result<()> {
    let want = ReadyStatus { ready: true, reason: "Synced".into(), message: message.to_string(), counts: Some(counts) };
    let was_ready = is_ready(tgb);
    if write_status(ctx, tgb, &want).await? && !was_ready {
        ctx.event(&tgb.object_ref(&()), false, "SuccessfullyReconciled", format!("target group in sync: {message}"))
            .await;
    }
    Ok(())
}

/// The target group does not exist: reported, and the binding's cached AWS state dropped.
pub(super) async fn set_target_group_missing(ctx: &Context, tgb: &TargetGroupBinding, message: &str) -> Result<()> {
    if let Some(arn) = &tgb.spec.target_group_arn {
        ctx.target_groups.lock().expect("tg cache").remove(arn);
        ctx.target_group_tags.lock().expect("tag cache").remove(arn);
    }
    ctx.forget(&kube::runtime::reflector::ObjectRef::from_obj(tgb));
    set_not_ready(ctx, tgb, "TargetGroupNotFound", message).await
}

/// After a successful sync: the Ready condition with the counts, then the checkpoint (only when
/// `complete`: everything desired registered, no gate pending). While the binding is changing,
/// counts-only status changes and the checkpoint are held back for a sync shortly after
/// (`lbc_model::checkpoint::write_back`; returns when), so a scale-up arriving a few endpoints
/// at a time costs one checkpoint clear, one status and one checkpoint write, not three writes
/// per AWS call.
#[allow(clippy::too_many_arguments)]
pub(super) async fn write_back(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    key: &ObjectRef<TargetGroupBinding>,
    registered: &BTreeMap<Target, TargetHealth>,
    plan: &Plan,
    desired: &DesiredTargets,
    cp: &str,
    complete: bool,
) -> Result<Option<std::time::Duration>> {
    let want = synced_status(registered, desired, plan);
    let now = tokio::time::Instant::now();
    let change = status_change(tgb, &want);
    let decision = write_back_decision(&WriteBackInput {
        status: change,
        wrote_targets: !plan.is_empty(),
        follow_up_queued: ctx.triggers.is_dirty(key),
        status_deferred_for: ctx.with_state(key, |s| s.status_deferred_since.map(|t| now.duration_since(t))),
        complete,
    });
    if decision.status {
        let wrote = write_status(ctx, tgb, &want).await?;
        if wrote && !is_ready(tgb) && want.ready {
            let note = format!("target group in sync: {}", want.message);
            ctx.event(&tgb.object_ref(&()), false, "SuccessfullyReconciled", note).await;
        }
        ctx.with_state(key, |s| s.status_deferred_since = None);
    } else if change == StatusChange::None {
        ctx.with_state(key, |s| s.status_deferred_since = None);
    } else {
        ctx.metrics.status_writes_deferred.inc();
        ctx.with_state(key, |s| {
            s.status_deferred_since.get_or_insert(now);
        });
    }
    if decision.checkpoint {
        write_checkpoint(ctx, tgb, key, cp).await?;
    }
    Ok(decision.again_in)
}

pub(super) fn record_target_gauges(ctx: &Context, labels: &TgbLabels, registered: &BTreeMap<Target, TargetHealth>) {
    for state in crate::metrics::TARGET_STATES {
        let n = registered.values().filter(|h| h.state == state).count();
        ctx.metrics
            .targets
            .get_or_create(&TargetStateLabels {
                namespace: labels.namespace.clone(),
                name: labels.name.clone(),
                state: state.as_str(),
            })
            .set(n as i64);
    }
}

/// The checkpoint the live object carries as far as we know. Our own last write wins until the
/// cache shows it (the cache lags our patches); after that the cache is trusted again, so a
/// checkpoint removed by hand still forces a full pass.
pub(super) fn live_checkpoint(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    key: &ObjectRef<TargetGroupBinding>,
) -> Option<String> {
    let cached = tgb.annotations().get(CHECKPOINT_ANNOTATION).cloned();
    ctx.with_state(key, |s| match s.checkpoint_written.take() {
        Some(written) if written != cached => {
            s.checkpoint_written = Some(written.clone());
            written
        }
        _ => cached,
    })
}

pub(super) async fn write_checkpoint(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    key: &ObjectRef<TargetGroupBinding>,
    cp: &str,
) -> Result<()> {
    if live_checkpoint(ctx, tgb, key).as_deref() == Some(cp) {
        return Ok(());
    }
    let body = json!({"metadata": {"annotations": {
        CHECKPOINT_ANNOTATION: cp,
        CHECKPOINT_TIMESTAMP_ANNOTATION: jiff::Timestamp::now().to_string(),
    }}});
    ignore_not_found(api(ctx, tgb).patch(&tgb.name_any(), &PatchParams::default(), &Patch::Merge(body)).await)?;
    ctx.with_state(key, |s| s.checkpoint_written = Some(Some(cp.to_string())));
    Ok(())
}

/// Drops the checkpoint before any AWS write, so a crash mid-change forces a full pass later.
pub(super) async fn clear_checkpoint(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    key: &ObjectRef<TargetGroupBinding>,
) -> Result<()> {
    if live_checkpoint(ctx, tgb, key).is_none() {
        return Ok(());
    }
    let body =
        json!({"metadata": {"annotations": {CHECKPOINT_ANNOTATION: null, CHECKPOINT_TIMESTAMP_ANNOTATION: null}}});
    ignore_not_found(api(ctx, tgb).patch(&tgb.name_any(), &PatchParams::default(), &Patch::Merge(body)).await)?;
    ctx.with_state(key, |s| s.checkpoint_written = Some(None));
    Ok(())
}

fn ignore_not_found<T>(r: Result<T, kube::Error>) -> Result<()> {
    match r {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// How one kind of target reads from and writes to a record (comma-separated, as ALBC keeps its
/// ConfigMap): `ip:port` in ip mode, `instance-id:port` in instance mode.
pub(super) struct RecordCodec<T> {
    pub parse: fn(&str) -> BTreeSet<T>,
    pub value: fn(&BTreeSet<T>) -> String,
}

pub(super) const IP_RECORD: RecordCodec<Target> =
    RecordCodec { parse: parse_owned_targets, value: owned_targets_value };
pub(super) const INSTANCE_RECORD: RecordCodec<InstanceTarget> =
    RecordCodec { parse: parse_owned_instance_targets, value: owned_instance_targets_value };

/// `status.ownedTargets` as far as we know: our own last write until the cache shows it, then
/// the cached object. `None`: the binding has no record of ours yet.
fn recorded_entries(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    key: &ObjectRef<TargetGroupBinding>,
) -> Option<Vec<String>> {
    let cached = tgb.status.as_ref().and_then(|s| s.owned_targets.clone());
    ctx.with_state(key, |s| match s.owned_written.take() {
        Some(written) if Some(&written) != cached.as_ref() => {
            s.owned_written = Some(written.clone());
            Some(written)
        }
        _ => cached,
    })
}

/// The targets this binding registered, from its record (`status.ownedTargets`, which only the
/// controller can write); `None` when it has none yet.
pub(super) fn recorded_targets<T>(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    key: &ObjectRef<TargetGroupBinding>,
    codec: &RecordCodec<T>,
) -> Option<BTreeSet<T>> {
    recorded_entries(ctx, tgb, key).map(|e| (codec.parse)(&e.join(",")))
}

/// The targets this binding may deregister: its record, or, when it has none yet, what it takes
/// over from the upstream controller's ConfigMap (read this once;
/// [`lbc_model::tg_ownership::adopt_upstream_record`]: only entries that are registered and
/// are this binding's endpoints now), recorded at once. `registered` and `endpoints` are the
/// target group's registrations and the binding's desired targets now.
pub(super) async fn owned_targets<T: Ord + Clone + std::fmt::Display>(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    key: &ObjectRef<TargetGroupBinding>,
    codec: &RecordCodec<T>,
    registered: &BTreeSet<T>,
    endpoints: &BTreeSet<T>,
) -> Result<BTreeSet<T>> {
    if let Some(owned) = recorded_targets(ctx, tgb, key, codec) {
        return Ok(owned);
    }
    // ALBC keeps a record (its ConfigMap) for multi-cluster bindings only; a binding on an
    // untagged target group starts from its own endpoints that are registered.
    let multi = tgb.spec.is_multi_cluster();
    let recorded = if multi { (codec.parse)(&read_upstream_record(ctx, tgb).await?) } else { registered.clone() };
    let adoption = adopt_upstream_record(&recorded, registered, endpoints);
    let shown: Vec<String> = adoption.left_alone.iter().take(10).map(ToString::to_string).collect();
    let more = adoption.left_alone.len().saturating_sub(10);
    let more = if more > 0 { format!(" (and {more} more)") } else { String::new() };
    if !multi && !adoption.left_alone.is_empty() {
        let msg = format!(
            "target group {} of TargetGroupBinding {}/{} carries no ownership tags and already holds target(s) {}{more} \
             that are not this binding's endpoints: foreign targets present. This binding never deregisters them (it \
             deregisters only the targets it registers itself, recorded in its status.ownedTargets). If they are \
             leftovers of this binding, deregister them by hand; if they are another owner's, bind a target group of \
             your own",
            tgb.spec.target_group_arn.as_deref().unwrap_or_default(),
            tgb.namespace().unwrap_or_default(),
            tgb.name_any(),
            shown.join(", ")
        );
        ctx.event(&tgb.object_ref(&()), true, "ForeignTargetsPresent", msg).await;
    } else if !adoption.left_alone.is_empty() {
        let msg = format!(
            "ConfigMap {}/{} lists target(s) {}{more} that are registered in the target group but are not endpoints              of TargetGroupBinding {}/{} now: they were NOT taken over, so this binding never deregisters them.              The ConfigMap is writable by the namespace, so only its entries that are this binding's own endpoints              are trusted. If they are leftovers of this binding, deregister them by hand",
            tgb.namespace().unwrap_or_default(),
            multicluster_configmap_name(&tgb.name_any()),
            shown.join(", "),
            tgb.namespace().unwrap_or_default(),
            tgb.name_any()
        );
        ctx.event(&tgb.object_ref(&()), true, "RecordEntriesNotAdopted", msg).await;
    }
    write_record(ctx, tgb, key, &(codec.value)(&adoption.owned)).await?;
    Ok(adoption.owned)
}

/// The upstream controller's record: ConfigMap `aws-lbc-targets-<name>`, key `targets`.
async fn read_upstream_record(ctx: &Context, tgb: &TargetGroupBinding) -> Result<String> {
    let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &tgb.namespace().unwrap_or_default());
    let Some(cm) = cms.get_opt(&multicluster_configmap_name(&tgb.name_any())).await? else {
        return Ok(String::new());
    };
    Ok(cm.data.and_then(|mut d| d.remove("targets")).unwrap_or_default())
}

/// Records `targets` as this binding's own: `status.ownedTargets`, and for a multi-cluster
/// binding also ALBC's ConfigMap, so the upstream controller finds it after a rollback.
pub(super) async fn write_owned<T>(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    key: &ObjectRef<TargetGroupBinding>,
    codec: &RecordCodec<T>,
    targets: &BTreeSet<T>,
) -> Result<()> {
    let value = (codec.value)(targets);
    write_record(ctx, tgb, key, &value).await?;
    if tgb.spec.is_multi_cluster() {
        write_owned_raw(ctx, tgb, value).await?;
    }
    Ok(())
}

async fn write_record(
    ctx: &Context,
    tgb: &TargetGroupBinding,
    key: &ObjectRef<TargetGroupBinding>,
    value: &str,
) -> Result<()> {
    let entries: Vec<String> = value.split(',').filter(|e| !e.is_empty()).map(str::to_string).collect();
    if recorded_entries(ctx, tgb, key).as_ref() == Some(&entries) {
        return Ok(());
    }
    let body = json!({"status": {"ownedTargets": entries}});
    ignore_not_found(api(ctx, tgb).patch_status(&tgb.name_any(), &PatchParams::default(), &Patch::Merge(body)).await)?;
    ctx.with_state(key, |s| s.owned_written = Some(entries));
    Ok(())
}

async fn write_owned_raw(ctx: &Context, tgb: &TargetGroupBinding, value: String) -> Result<()> {
    let ns = tgb.namespace().unwrap_or_default();
    let name = multicluster_configmap_name(&tgb.name_any());
    let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ns);
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(ns),
            owner_references: tgb.controller_owner_ref(&()).map(|r| vec![r]),
            ..Default::default()
        },
        data: Some([("targets".to_string(), value)].into()),
        ..Default::default()
    };
    match cms.replace(&name, &PostParams::default(), &cm).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => {
            cms.create(&PostParams::default(), &cm).await.map(|_| ()).map_err(Into::into)
        }
        Err(e) => Err(e.into()),
    }
}

pub(super) async fn delete_owned_targets(ctx: &Context, tgb: &TargetGroupBinding) -> Result<()> {
    let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &tgb.namespace().unwrap_or_default());
    ignore_not_found(cms.delete(&multicluster_configmap_name(&tgb.name_any()), &Default::default()).await)
}
