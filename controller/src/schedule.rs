//! The one scheduling mechanism for work that is not one Kubernetes object (IngressGroups, the
//! cluster-wide backend-rules pass): kube-runtime's scheduler, the same one its `Controller`
//! runs on. Requests for a key coalesce (the earliest wins), a key is never worked on twice at
//! once (a request while it runs makes it run once more afterwards), and the work's answer
//! schedules its next run.

use futures::stream::FuturesUnordered;
use futures::{Stream, StreamExt};
use kube::runtime::scheduler::{ScheduleRequest, scheduler};
use std::collections::HashSet;
use std::future::Future;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::UnboundedReceiverStream;

/// A request to work on `key` now (`after` zero) or after a while.
pub fn request<K>(key: K, after: Duration) -> ScheduleRequest<K> {
    ScheduleRequest { message: key, run_at: Instant::now() + after }
}

/// Works on the keys `requests` ask for, at most `concurrency` at once, until `stop` resolves
/// (or `requests` ends); the runs in flight then finish. `work` returns when to run the key
/// again (`None`: only when requested).
pub async fn run<K, W, F>(
    requests: impl Stream<Item = ScheduleRequest<K>> + Send,
    concurrency: u16,
    stop: impl Future<Output = ()>,
    work: W,
) where
    K: Clone + Eq + Hash + Send,
    W: Fn(K) -> F,
    F: Future<Output = Option<Duration>>,
{
    let (again_tx, again_rx) = mpsc::unbounded_channel();
    let requests = futures::stream::select(requests, UnboundedReceiverStream::new(again_rx));
    let mut scheduled = std::pin::pin!(scheduler(requests));
    let running: Mutex<HashSet<K>> = Mutex::default();
    let mut in_flight = FuturesUnordered::new();
    let mut stop = std::pin::pin!(stop);
    let limit = usize::from(concurrency.max(1));
    loop {
        let free = in_flight.len() < limit;
        tokio::select! {
            biased;
            _ = &mut stop => break,
            Some((k, next)) = in_flight.next(), if !in_flight.is_empty() => {
                running.lock().expect("running keys").remove(&k);
                if let Some(d) = next {
                    let _ = again_tx.send(request(k, d));
                }
            }
            k = futures::future::poll_fn(|cx| {
                let idle = |k: &K| !running.lock().expect("running keys").contains(k);
                scheduled.as_mut().hold_unless(idle).poll_next_unpin(cx)
            }), if free => {
                let Some(k) = k else { break };
                running.lock().expect("running keys").insert(k.clone());
                let run = work(k.clone());
                in_flight.push(async move { (k, run.await) });
            }
        }
    }
    while in_flight.next().await.is_some() {}
}

/// One pass of `controller` over a key named `what` (namespace, name, for metrics and logs): timed
/// and panic-safe, its failures counted and backed off per key. Returns the delay before the next
/// pass (`None`: on change only). A pass that loses the lease midway is not retried here: the new
/// leader takes over.
pub async fn timed_pass<K: Hash + Eq + Clone>(
    metrics: &crate::metrics::Metrics,
    backoff: &crate::backoff::PerKey<K>,
    controller: &'static str,
    key: &K,
    what: (&str, &str),
    pass: impl Future<Output = crate::error::Result<Option<Duration>>>,
) -> Option<Duration> {
    use crate::metrics::ReconcileResult;
    use tracing::Instrument;
    let timer = metrics.reconcile_started(controller, what.0, what.1);
    let res = metrics.recover_panics(controller, pass.instrument(timer.span())).await;
    match &res {
        Ok(None) => timer.done(ReconcileResult::Success),
        Ok(Some(_)) => timer.done(ReconcileResult::RequeueAfter),
        Err(e) if e.is_not_leader() => {}
        Err(_) => timer.done(ReconcileResult::Error),
    }
    match res {
        Ok(next) => {
            backoff.succeeded(key);
            next
        }
        Err(e) if e.is_not_leader() => None,
        Err(e) => {
            metrics.reconcile_failed(controller, e.category());
            let (failures, delay) = backoff.failed(key);
            tracing::warn!(
                controller,
                namespace = what.0,
                name = what.1,
                error = %e,
                category = e.category(),
                failures,
                retry_in = ?delay,
                "reconcile failed"
            );
            Some(delay)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Requests `a`, `a`, `b` at once, `a` again while it runs; a run of `a` takes 10 s.
    #[tokio::test(start_paused = true)]
    async fn coalesces_never_runs_a_key_twice_at_once_and_reruns_it_once_after() {
        let (tx, rx) = mpsc::unbounded_channel();
        let log = Arc::new(Mutex::new(Vec::<(&str, &str, u64)>::new()));
        let t0 = Instant::now();
        for k in ["a", "a", "b"] {
            tx.send(request(k, Duration::ZERO)).unwrap();
        }
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let work = {
            let log = log.clone();
            move |k: &'static str| {
                let log = log.clone();
                async move {
                    log.lock().unwrap().push((k, "start", t0.elapsed().as_secs()));
                    tokio::time::sleep(Duration::from_secs(if k == "a" { 10 } else { 1 })).await;
                    log.lock().unwrap().push((k, "end", t0.elapsed().as_secs()));
                    None
                }
            }
        };
        let runner =
            tokio::spawn(run(UnboundedReceiverStream::new(rx), 4, async { stop_rx.await.unwrap_or(()) }, work));
        tokio::time::sleep(Duration::from_secs(5)).await;
        tx.send(request("a", Duration::ZERO)).unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
        stop_tx.send(()).unwrap();
        runner.await.unwrap();
        let log = log.lock().unwrap().clone();
        let a: Vec<_> = log.iter().filter(|(k, _, _)| *k == "a").map(|(_, e, t)| (*e, *t)).collect();
        assert_eq!(a, [("start", 0), ("end", 10), ("start", 10), ("end", 20)], "{log:?}");
        assert_eq!(log.iter().filter(|(k, e, _)| *k == "b" && *e == "start").count(), 1, "{log:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn the_work_schedules_its_next_run_and_an_earlier_request_wins() {
        let (tx, rx) = mpsc::unbounded_channel();
        tx.send(request("g", Duration::ZERO)).unwrap();
        let runs = Arc::new(Mutex::new(Vec::new()));
        let t0 = Instant::now();
        let work = {
            let runs = runs.clone();
            move |_: &'static str| {
                runs.lock().unwrap().push(t0.elapsed().as_secs());
                async { Some(Duration::from_secs(60)) }
            }
        };
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let runner =
            tokio::spawn(run(UnboundedReceiverStream::new(rx), 1, async { stop_rx.await.unwrap_or(()) }, work));
        tokio::time::sleep(Duration::from_secs(90)).await;
        // Before the drift requeue at 120 s: a change comes in at 90 s.
        tx.send(request("g", Duration::ZERO)).unwrap();
        tokio::time::sleep(Duration::from_secs(100)).await;
        stop_tx.send(()).unwrap();
        runner.await.unwrap();
        assert_eq!(*runs.lock().unwrap(), [0, 60, 90, 150], "requeued after each run, the change ran at once");
    }
}
