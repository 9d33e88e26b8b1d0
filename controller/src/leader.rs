//! Lease-based leader election (`coordination.k8s.io/v1` Lease, the same object ALBC uses).
//!
//! Only the leader writes to AWS and to pod status. Leadership is held for at most
//! `lease_duration` minus a safety margin after the *start* of the last successful renewal, by
//! this process's monotonic clock: if the API server becomes unreachable, leadership is dropped
//! locally before any other replica can take the lease over. That local guarantee is why this
//! is written here (~150 lines) instead of using a lease crate that only reports what it has
//! observed on the API.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::PostParams;
use kube::{Api, Client};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

#[derive(Clone, Debug)]
pub struct LeaderConfig {
    pub namespace: String,
    pub name: String,
    pub identity: String,
    pub lease_duration: Duration,
}

impl LeaderConfig {
    fn renew_every(&self) -> Duration {
        self.lease_duration / 3
    }
    fn retry_every(&self) -> Duration {
        (self.lease_duration / 5).max(Duration::from_millis(500))
    }
    /// Leadership ends this much before the lease could expire for others (clock skew, latency).
    fn margin(&self) -> Duration {
        self.lease_duration / 5
    }
}

/// Runs the election until `shutdown` fires; then releases the lease if held.
pub async fn run(client: Client, cfg: LeaderConfig, tx: watch::Sender<bool>, mut shutdown: watch::Receiver<bool>) {
    let api: Api<Lease> = Api::namespaced(client, &cfg.namespace);
    let mut valid_until: Option<Instant> = None;
    loop {
        let started = Instant::now();
        match try_acquire(&api, &cfg).await {
            Ok(true) => {
                valid_until = Some(started + cfg.lease_duration - cfg.margin());
                if !*tx.borrow() {
                    tracing::info!(identity = %cfg.identity, lease = %cfg.name, "became leader");
                }
                tx.send_if_modified(|v| !std::mem::replace(v, true));
            }
            Ok(false) => {
                valid_until = None;
                if tx.send_if_modified(|v| std::mem::replace(v, false)) {
                    tracing::warn!(identity = %cfg.identity, "lost leadership to another replica");
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, lease = %cfg.name, "leader election: cannot reach the Lease; keeping the current role until it would expire")
            }
        }
        let next = if valid_until.is_some() { cfg.renew_every() } else { cfg.retry_every() };
        let expiry = valid_until.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            _ = tokio::time::sleep(next) => {}
            _ = tokio::time::sleep_until(expiry) => {
                valid_until = None;
                tracing::error!(identity = %cfg.identity, "leader lease not renewed in time; stopping all writes");
                tx.send_if_modified(|v| std::mem::replace(v, false));
            }
            _ = shutdown.changed() => {
                if valid_until.is_some() {
                    tx.send_if_modified(|v| std::mem::replace(v, false));
                    if let Err(e) = release(&api, &cfg).await {
                        tracing::warn!(error = %e, "could not release the leader lease; the next leader waits for it to expire");
                    } else {
                        tracing::info!("released the leader lease");
                    }
                }
                return;
            }
        }
    }
}

fn now() -> MicroTime {
    MicroTime(jiff::Timestamp::now())
}

/// One attempt to take or renew the lease. `Ok(true)`: we hold it now.
async fn try_acquire(api: &Api<Lease>, cfg: &LeaderConfig) -> Result<bool, kube::Error> {
    let secs = cfg.lease_duration.as_secs().max(1) as i32;
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
    let holder = spec.holder_identity.clone().unwrap_or_default();
    let ours = holder == cfg.identity;
    let duration = spec.lease_duration_seconds.unwrap_or(secs).max(1) as i64;
    let expired = match &spec.renew_time {
        Some(t) => t.0.as_second() + duration < jiff::Timestamp::now().as_second(),
        None => true,
    };
    if !(ours || holder.is_empty() || expired) {
        return Ok(false);
    }
    let mut next = lease;
    next.metadata.managed_fields = None;
    next.spec = Some(LeaseSpec {
        holder_identity: Some(cfg.identity.clone()),
        lease_duration_seconds: Some(secs),
        acquire_time: if ours { spec.acquire_time } else { Some(now()) },
        renew_time: Some(now()),
        lease_transitions: Some(spec.lease_transitions.unwrap_or(0) + i32::from(!ours)),
        ..spec
    });
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
