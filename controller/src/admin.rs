//! Admin HTTP endpoints: `/metrics` on `--metrics-bind-addr`; `/healthz` and `/readyz` on
//! `--health-probe-bind-addr`.
//!
//! Ready means "I can serve admission and reconcile": every watch cache has synced. It does NOT
//! depend on AWS credentials: a Vault outage turning every replica NotReady would empty the
//! webhook Service, and the pod mutator (failurePolicy Ignore) would then admit pods without
//! readiness gates exactly when targets cannot be registered. Credential trouble shows in the
//! `/readyz` body, the credential metrics and alert, and Warning events on the objects it blocks.
//! Live means no supervised task (watch caches, controllers) has died; else the kubelet restarts us.

use crate::metrics::Metrics;
use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use lbc_aws::credentials::CredentialStatus;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Readiness and liveness inputs, flipped by the runtime.
#[derive(Clone, Default)]
pub struct Health {
    pub caches_synced: Arc<AtomicBool>,
    /// SIGTERM received: not ready any more, so the pod's endpoints stop being `serving` and the API
    /// server stops routing admission requests here while the webhook server drains.
    pub stopping: Arc<AtomicBool>,
    /// `None`: the SDK default chain, whose state is not observable.
    pub credentials: Option<CredentialStatus>,
    /// The webhook pair in service, in the controller-managed mode (`--webhook-cert-mode=controller`):
    /// not ready without a valid one, so the webhook Service only routes to replicas that can serve.
    pub webhook_cert: Option<lbc_webhook::ServingCert>,
    /// Supervised tasks that ended although they should run for the life of the process.
    dead: Arc<Mutex<Vec<String>>>,
}

impl Health {
    pub fn new(credentials: Option<CredentialStatus>) -> Self {
        Self { credentials, ..Self::default() }
    }

    /// `Err(reason)` when not ready; `Ok(note)` otherwise, the note being the probe's body.
    pub fn check(&self) -> Result<String, String> {
        if self.stopping.load(Ordering::Acquire) {
            return Err("shutting down: draining webhook requests".into());
        }
        if !self.caches_synced.load(Ordering::Acquire) {
            return Err("watch caches not synced yet".into());
        }
        if let Some(cert) = &self.webhook_cert {
            cert.check(jiff::Timestamp::now()).map_err(|e| format!("not serving webhooks: {e}"))?;
        }
        match &self.credentials {
            Some(c) if !c.is_ready() => Ok(format!(
                "ok (serving admission and reconciling; AWS calls fail until credentials recover: {})",
                c.state().public_summary()
            )),
            _ => Ok("ok".into()),
        }
    }

    /// `Err(reason)` once a supervised task has died.
    pub fn live(&self) -> Result<(), String> {
        let dead = self.dead.lock().expect("health lock");
        if dead.is_empty() { Ok(()) } else { Err(format!("stopped: {}", dead.join("; "))) }
    }

    /// Records that `what` stopped for good (`/healthz` fails from now on).
    pub fn mark_dead(&self, what: String) {
        tracing::error!(task = %what, "a task that must run for the life of the process stopped; /healthz now fails");
        self.dead.lock().expect("health lock").push(what);
    }

    /// Watches a task that must never end: when it does (returned or panicked), `/healthz` fails.
    pub fn supervise(&self, name: &'static str, task: tokio::task::JoinHandle<()>) {
        let h = self.clone();
        tokio::spawn(async move {
            let how = match task.await {
                Ok(()) => "ended".to_string(),
                Err(e) if e.is_panic() => "panicked".to_string(),
                Err(e) => e.to_string(),
            };
            h.mark_dead(format!("{name} {how}"));
        });
    }
}

pub async fn serve_metrics(addr: SocketAddr, metrics: Metrics) -> std::io::Result<()> {
    let app = Router::new().route(
        "/metrics",
        get(move || {
            let m = metrics.clone();
            async move {
                ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], m.encode())
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(%addr, "metrics server listening");
    axum::serve(listener, app).await
}

pub async fn serve_health(addr: SocketAddr, health: Health) -> std::io::Result<()> {
    let live = health.clone();
    let app = Router::new()
        .route(
            "/healthz",
            get(move || {
                let h = live.clone();
                async move {
                    match h.live() {
                        Ok(()) => (StatusCode::OK, "ok".to_string()).into_response(),
                        Err(why) => (StatusCode::INTERNAL_SERVER_ERROR, why).into_response(),
                    }
                }
            }),
        )
        .route(
            "/readyz",
            get(move || {
                let h = health.clone();
                async move {
                    match h.check() {
                        Ok(note) => (StatusCode::OK, note).into_response(),
                        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, why).into_response(),
                    }
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(%addr, "health probe server listening");
    axum::serve(listener, app).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use lbc_aws::credentials::{CredentialMetrics, FileConfig, file};

    #[tokio::test]
    async fn readiness_needs_synced_caches_not_credentials() {
        let dir = std::env::temp_dir().join(format!("lbc-admin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("credentials");
        let mut cfg = FileConfig::new(&path);
        cfg.poll_interval = std::time::Duration::from_millis(20);
        let source = file::start(cfg, CredentialMetrics::default());
        let h = Health::new(Some(source.status()));
        assert_eq!(h.check().unwrap_err(), "watch caches not synced yet");
        h.caches_synced.store(true, Ordering::Release);
        // Ready without credentials (webhooks must keep answering), the body says what is wrong.
        let note = h.check().expect("ready without credentials");
        assert!(note.contains("file"), "names the source: {note}");

        std::fs::write(&path, "[default]\naws_access_key_id = AKIDTEST\naws_secret_access_key = s3cr3t\n").unwrap();
        source.wait_ready(std::time::Duration::from_secs(5)).await.expect("keys read");
        assert_eq!(h.check(), Ok("ok".to_string()));
        assert!(!format!("{:?}", h.check()).contains("s3cr3t"));
        // SIGTERM: not ready, whatever else holds, so the endpoints stop routing here.
        h.stopping.store(true, Ordering::Release);
        assert_eq!(h.check().unwrap_err(), "shutting down: draining webhook requests");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test(start_paused = true)]
    async fn a_supervised_task_that_dies_fails_liveness() {
        let h = Health::default();
        assert_eq!(h.live(), Ok(()));
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        h.supervise(
            "pods cache",
            tokio::spawn(async move {
                let _ = wait.await;
                panic!("boom")
            }),
        );
        // Alive while the task runs, however long (paused time: an hour passes at once).
        tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
        assert_eq!(h.live(), Ok(()));
        go.send(()).unwrap();
        // The supervisor notices within a few scheduler turns; no wall-clock wait.
        for _ in 0..100 {
            if h.live().is_err() {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(h.live().unwrap_err(), "stopped: pods cache panicked");
    }
}
