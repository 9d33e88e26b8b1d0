//! Lease-based leader election (`coordination.k8s.io/v1` Lease, the same object ALBC uses).
//!
//! Only the leader writes. Fencing: leadership lasts `renew_deadline` (⅔ of the lease) from the
//! *start* of the last successful renewal, on this process's monotonic clock. Every renewal races
//! that deadline: a renewal that has not completed by then (API server unreachable, a half-open
//! connection) is abandoned and the `leader` flag drops at once, which closes the write gates
//! (`lbc_aws::call::WriteGate`, `crate::kube_gate`). Another replica takes the lease only after
//! seeing the record unchanged for the whole lease duration on *its* clock (decisions in
//! `lbc_model::lease`), so at least `lease − renew_deadline` (5 s at the defaults) separates our
//! last write from its first one, whatever the wall clocks say. A write in flight is abandoned
//! half-way through that gap ([`WriteWindow`], [`lbc_model::lease::writes_end_for`]), however long
//! the AWS attempt timeout. Written here (~150 lines) rather
//! than with a lease crate because that local guarantee is the point.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::PostParams;
use kube::{Api, Client};
use lbc_model::lease::{LeaseDecision, LeaseRecord, LeaseTimings, decide, leading_for, writes_end_for};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

#[derive(Clone, Debug)]
pub struct LeaderConfig {
    pub namespace: String,
    pub name: String,
    pub identity: String,
    pub timings: LeaseTimings,
}

/// Until when the writes of this replica's current leadership may run (the AWS write gate gives
/// each write attempt at most the time left). `None`: no end known, as when leader election is
/// off and this replica always leads.
#[derive(Debug, Default)]
pub struct WriteWindow(std::sync::Mutex<Option<Instant>>);

impl WriteWindow {
    /// Time left for a write sent now; `Duration::MAX` without an end.
    pub fn left(&self) -> Duration {
        match *self.0.lock().expect("write window") {
            Some(end) => end.saturating_duration_since(Instant::now()),
            None => Duration::MAX,
        }
    }

    fn set(&self, end: Option<Instant>) {
        *self.0.lock().expect("write window") = end;
    }
}

/// The record last seen and since when it has not changed (our clock).
struct Observed {
    record: LeaseRecord,
    since: Instant,
}

/// Runs the election until `shutdown` fires; then releases the lease if held.
pub async fn run(
    client: Client,
    cfg: LeaderConfig,
    tx: watch::Sender<bool>,
    window: std::sync::Arc<WriteWindow>,
    mut shutdown: watch::Receiver<bool>,
) {
    let api: Api<Lease> = Api::namespaced(client, &cfg.namespace);
    let t = cfg.timings;
    let mut valid_until: Option<Instant> = None;
    let mut observed: Option<Observed> = None;
    loop {
        let started = Instant::now();
        // A follower's attempt may take up to a retry period; a leader's must end before its
        // leadership does.
        let deadline = valid_until.unwrap_or(started + t.renew_deadline);
        let attempt = tokio::select! {
            r = try_acquire(&api, &cfg, &mut observed) => Some(r),
            _ = tokio::time::sleep_until(deadline) => None,
            _ = shutdown.changed() => return step_down(&api, &cfg, &tx, valid_until.is_some()).await,
        };
        match attempt {
            Some(Ok(true)) => {
                valid_until = Some(started + leading_for(&t));
                window.set(Some(started + writes_end_for(&t)));
                if tx.send_if_modified(|v| !std::mem::replace(v, true)) {
                    tracing::info!(identity = %cfg.identity, lease = %cfg.name, "became leader");
                }
            }
            Some(Ok(false)) => {
                valid_until = None;
                if tx.send_if_modified(|v| std::mem::replace(v, false)) {
                    tracing::warn!(identity = %cfg.identity, "lost leadership to another replica; no further writes");
                }
            }
            Some(Err(e)) => {
                tracing::warn!(error = %e, lease = %cfg.name, "leader election: cannot reach the Lease; keeping the current role until it would expire")
            }
            None => {
                tracing::warn!(lease = %cfg.name, timeout = ?(deadline - started), "leader election: no answer from the API server in time")
            }
        }
        if valid_until.is_some_and(|v| Instant::now() >= v) {
            valid_until = None;
            tx.send_if_modified(|v| std::mem::replace(v, false));
            tracing::error!(identity = %cfg.identity, deadline = ?t.renew_deadline, "leader lease not renewed in time; stopped all writes");
        }
        let next = started + t.retry_period;
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            _ = tokio::time::sleep_until(valid_until.unwrap_or(next)) => {}
            _ = shutdown.changed() => return step_down(&api, &cfg, &tx, valid_until.is_some()).await,
        }
    }
}

/// Stops writing, then gives the lease up (if held) so the next leader need not wait for it.
async fn step_down(api: &Api<Lease>, cfg: &LeaderConfig, tx: &watch::Sender<bool>, held: bool) {
    tx.send_if_modified(|v| std::mem::replace(v, false));
    if !held {
        return;
    }
    match tokio::time::timeout(cfg.timings.retry_period.max(Duration::from_secs(2)), release(api, cfg)).await {
        Ok(Ok(())) => tracing::info!("released the leader lease"),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "could not release the leader lease; the next leader waits for it to expire")
        }
        Err(_) => tracing::warn!("releasing the leader lease timed out; the next leader waits for it to expire"),
    }
}

fn now() -> MicroTime {
    MicroTime(jiff::Timestamp::now())
}

fn record_of(spec: &LeaseSpec) -> LeaseRecord {
    LeaseRecord {
        holder: spec.holder_identity.clone(),
        renew_time: spec.renew_time.as_ref().map(|t| t.0.to_string()),
        transitions: spec.lease_transitions.unwrap_or(0),
    }
}

/// One attempt to take or renew the lease. `Ok(true)`: we hold it now.
async fn try_acquire(
    api: &Api<Lease>,
    cfg: &LeaderConfig,
    observed: &mut Option<Observed>,
) -> Result<bool, kube::Error> {
    let secs = cfg.timings.lease.as_secs().max(1) as i32;
    let Some(lease) = api.get_opt(&cfg.name).await? else {
        let lease = Lease {
            metadata: ObjectMeta { name: Some(cfg.name.clone()), ..Default::default() },
            spec: Some(LeaseSpec {
                holder_identity: Some(cfg.identity.clone()),
                lease_duration_seconds: Some(secs),
                acquire_time: Some(now()),
                renew_time: Some(now()),
                lease_transitions: Some(0),
                ..Default::default()
            }),
        };
        return match api.create(&PostParams::default(), &lease).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        };
    };
    let spec = lease.spec.clone().unwrap_or_default();
    let record = record_of(&spec);
    let unchanged_for = match observed {
        Some(o) if o.record == record => Some(o.since.elapsed()),
        _ => {
            *observed = Some(Observed { record: record.clone(), since: Instant::now() });
            None
        }
    };
    let transitions = match decide(&record, &cfg.identity, unchanged_for, &cfg.timings) {
        LeaseDecision::Busy { holder, expires_in } => {
            tracing::debug!(%holder, ?expires_in, "lease held by another replica");
            return Ok(false);
        }
        LeaseDecision::Renew => record.transitions,
        LeaseDecision::Acquire { transitions } => transitions,
    };
    let ours = record.holder.as_deref() == Some(cfg.identity.as_str());
    let mut next = lease;
    next.metadata.managed_fields = None;
    next.spec = Some(LeaseSpec {
        holder_identity: Some(cfg.identity.clone()),
        lease_duration_seconds: Some(secs),
        acquire_time: if ours { spec.acquire_time.clone() } else { Some(now()) },
        renew_time: Some(now()),
        lease_transitions: Some(transitions),
        ..spec
    });
    // The resourceVersion in `next` makes this a compare-and-swap: a replica that took the lease
    // meanwhile makes it fail with 409.
    match api.replace(&cfg.name, &PostParams::default(), &next).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}

/// Gives the lease up so the next leader need not wait for it to expire.
async fn release(api: &Api<Lease>, cfg: &LeaderConfig) -> Result<(), kube::Error> {
    let Some(mut lease) = api.get_opt(&cfg.name).await? else {
        return Ok(());
    };
    let Some(spec) = lease.spec.as_mut() else {
        return Ok(());
    };
    if spec.holder_identity.as_deref() != Some(cfg.identity.as_str()) {
        return Ok(());
    }
    spec.holder_identity = None;
    spec.renew_time = None;
    lease.metadata.managed_fields = None;
    api.replace(&cfg.name, &PostParams::default(), &lease).await.map(|_| ())
}

#[cfg(test)]
#[path = "leader_tests.rs"]
mod tests;
