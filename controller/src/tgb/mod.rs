//! The TargetGroupBinding reconciler: the hot path from an EndpointSlice change to AWS calls to
//! pod readiness-gate conditions.
//!
//! One pass: stores → `model::endpoints::desired_targets` → checkpoint check → AWS read (cached)
//! → `model::plan::plan` (with its refuse-to-wipe guard) → Register/DeregisterTargets in batches
//! → health poll for pending gates → pod conditions → status and checkpoint.

mod cleanup;
mod gates;
mod instance;
mod status;
mod sync;
#[cfg(test)]
mod tests;
mod turns;

use crate::backoff;
use crate::context::Context;
use crate::error::{Error, Result};
use futures::StreamExt;
use kube::api::Api;
use kube::runtime::controller::{Action, Config, Controller};
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use lbc_aws::elbv2::TargetWrite;
use lbc_model::crd::TargetGroupBinding;
use lbc_model::names::TGB_FINALIZER;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tracing::Instrument;

pub const CONTROLLER: &str = "targetgroupbinding";

/// `triggers` with each one counted as it reaches `controller`'s queue (`Metrics::queued`:
/// `workqueue_adds_total`, and the wait `workqueue_queue_duration_seconds` measures).
pub(crate) fn queued<K: Resource>(
    triggers: impl futures::Stream<Item = ObjectRef<K>>,
    base: Arc<Context>,
    controller: &'static str,
) -> impl futures::Stream<Item = ObjectRef<K>> {
    triggers.inspect(move |r| base.metrics.queued(controller, r.namespace.as_deref().unwrap_or_default(), &r.name))
}

/// Runs the controller until `stop` resolves. Every binding is reconciled once at start
/// (cheaply: bindings whose checkpoint matches make no AWS call), then on every relevant change.
pub async fn run(
    ctx: Arc<Context>,
    concurrency: u16,
    debounce: Duration,
    stop: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    ctx.metrics.set_concurrency(CONTROLLER, concurrency);
    // kube-runtime runs every due binding (still never one binding twice at once); `turns` bounds
    // how many work at once, in arrival order (see `turns`).
    let turns = turns::Turns::new(concurrency);
    let (tx, rx) = mpsc::unbounded_channel();
    for t in ctx.stores.tgbs.state() {
        let _ = tx.send(ObjectRef::from_obj(t.as_ref()));
    }
    ctx.triggers.set_sender(Some(tx));
    let controller = Controller::for_shared_stream(futures::stream::pending(), ctx.stores.tgbs.clone())
        .with_config(Config::default().concurrency(0).debounce(debounce))
        .reconcile_on(queued(UnboundedReceiverStream::new(rx), ctx.clone(), CONTROLLER))
        .graceful_shutdown_on(stop)
        .run(
            move |tgb, ctx| {
                let turns = turns.clone();
                async move {
                    // A binding whose endpoints changed again just after it wrote waits a little
                    // while the write bucket drains, so its next call carries more targets
                    // (`lbc_model::pacing`). Not a scheduled pass (health poll, drift check), a
                    // deletion nor a change taking targets out. Before taking a turn: a held
                    // binding keeps no other from working.
                    let key = ObjectRef::from_obj(tgb.as_ref());
                    if tgb.meta().deletion_timestamp.is_none() && ctx.triggers.is_dirty(&key) {
                        let bucket = ctx.elb_for(&tgb).write_bucket(TargetWrite::Register);
                        let hold = ctx.write_hold(&key, bucket, ctx.triggers.is_removing(&key));
                        if !hold.is_zero() {
                            ctx.metrics.write_pacing.observe(hold.as_secs_f64());
                            tokio::time::sleep(hold).await;
                        }
                    }
                    let _turn = turns.wait().await;
                    // The binding as the cache holds it now: the wait may have been long.
                    let fresh = ctx.stores.tgbs.get(&key).unwrap_or(tgb);
                    reconcile(fresh, ctx).await
                }
            },
            error_policy,
            ctx.clone(),
        )
        .for_each(|res| {
            match res {
                Ok(_) => {}
                Err(kube::runtime::controller::Error::ObjectNotFound(r)) => {
                    tracing::debug!(object = %r, "binding gone before reconcile")
                }
                Err(e) => tracing::debug!(error = %e, "reconcile failed"),
            }
            futures::future::ready(())
        });
    controller.await;
    ctx.triggers.set_sender(None);
}

async fn reconcile(tgb: Arc<TargetGroupBinding>, ctx: Arc<Context>) -> Result<Action> {
    if !ctx.is_leader() {
        // Leadership was lost while this was queued: write nothing.
        return Ok(Action::await_change());
    }
    let ns = tgb.namespace().unwrap_or_default();
    let timer = ctx.metrics.reconcile_started(CONTROLLER, &ns, &tgb.name_any());
    let key = ObjectRef::from_obj(tgb.as_ref());
    let api: Api<TargetGroupBinding> = Api::namespaced(ctx.client.clone(), &ns);
    let pass = async {
        finalizer(&api, TGB_FINALIZER, tgb, |ev| async {
            match ev {
                FinalizerEvent::Apply(t) => {
                    // ALBC's stage of the same work: targets, health, gates and the status write.
                    let stage = std::time::Instant::now();
                    let r = sync::apply(t, &ctx).await;
                    ctx.metrics.reconcile_stage(CONTROLLER, "reconcile_targetgroupbinding", stage);
                    r
                }
                FinalizerEvent::Cleanup(t) => cleanup::cleanup(t, &ctx).await,
            }
        })
        .instrument(timer.span())
        .await
        .map_err(|e| match e {
            kube::runtime::finalizer::Error::ApplyFailed(e) | kube::runtime::finalizer::Error::CleanupFailed(e) => e,
            kube::runtime::finalizer::Error::AddFinalizer(e) | kube::runtime::finalizer::Error::RemoveFinalizer(e)
                if crate::kube_gate::is_not_leader(&e) =>
            {
                Error::NotLeader(e.to_string())
            }
            other => Error::Finalizer(other.to_string()),
        })
    };
    let res = ctx.metrics.recover_panics(CONTROLLER, pass).await;
    // A write refused by the leader fence is no reconcile in ALBC's terms: not counted there.
    if !res.as_ref().is_err_and(Error::is_not_leader) {
        timer.done(crate::metrics::ReconcileResult::of(&res));
    }
    ctx.metrics.set_pending_reconciles(ctx.triggers.pending());
    if res.is_ok() {
        ctx.with_state(&key, |s| s.failures = 0);
    }
    res
}

/// Per-binding exponential backoff ([`backoff::reconcile`]), capped low (ALBC's 16m40s cap is a
/// known pain): 1 s, 2 s, 4 s … (jittered) up to `--targetgroupbinding-max-exponential-backoff-delay`. A failing binding never
/// delays the others: each has its own schedule and reconciles run concurrently.
fn error_policy(tgb: Arc<TargetGroupBinding>, err: &Error, ctx: Arc<Context>) -> Action {
    let key = ObjectRef::from_obj(tgb.as_ref());
    if err.is_not_leader() {
        // Lost the lease mid-reconcile: the new leader takes over; no Warning, no backoff step.
        // What we cached of AWS may be stale by the time we lead again.
        tracing::debug!(binding = %key, error = %err, "write refused: not the leader");
        ctx.forget(&key);
        return Action::await_change();
    }
    let failures = ctx.with_state(&key, |s| {
        s.failures += 1;
        // Unknown AWS state after a failed write: read it again next time.
        s.registered = None;
        s.failures
    });
    ctx.metrics.reconcile_failed(CONTROLLER, err.category());
    let delay = backoff::reconcile(ctx.cfg.max_backoff).delay(failures);
    tracing::warn!(
        binding = %key, error = %err, category = err.category(), failures, retry_in = ?delay,
        "TargetGroupBinding reconcile failed"
    );
    let reference = tgb.object_ref(&());
    let note = err.to_string();
    let reason = format!("FailedReconcile{}", camel(err.category()));
    tokio::spawn(async move { ctx.event(&reference, true, &reason, note).await });
    Action::requeue(delay)
}

fn camel(s: &str) -> String {
    s.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect()
}
