//! Admin HTTP endpoints: `/metrics` on `--metrics-bind-addr`; `/healthz` and `/readyz` on
//! `--health-probe-bind-addr`. Ready means every watch cache has synced and, with a refreshing
//! credential source, valid AWS keys are at hand.

use crate::metrics::Metrics;
use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use lbc_aws::credentials::CredentialStatus;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Readiness inputs, flipped by the runtime.
#[derive(Clone, Default)]
pub struct Health {
    pub caches_synced: Arc<AtomicBool>,
    /// `None`: the SDK default chain, whose state is not observable.
    pub credentials: Option<CredentialStatus>,
}

impl Health {
    /// `Err(reason)` when not ready; the reason is the probe's response body.
    pub fn check(&self) -> Result<(), String> {
        if !self.caches_synced.load(Ordering::Acquire) {
            return Err("watch caches not synced yet".into());
        }
        match &self.credentials {
            Some(c) if !c.is_ready() => Err(c.state().summary()),
            _ => Ok(()),
        }
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
    let app = Router::new().route("/healthz", get(|| async { "ok" })).route(
        "/readyz",
        get(move || {
            let h = health.clone();
            async move {
                match h.check() {
                    Ok(()) => (StatusCode::OK, "ok".to_string()).into_response(),
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
    async fn readiness_needs_synced_caches_and_valid_credentials() {
        let dir = std::env::temp_dir().join(format!("lbc-admin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("credentials");
        let mut cfg = FileConfig::new(&path);
        cfg.poll_interval = std::time::Duration::from_millis(20);
        let source = file::start(cfg, CredentialMetrics::default());
        let h = Health { caches_synced: Arc::default(), credentials: Some(source.status()) };
        assert_eq!(h.check().unwrap_err(), "watch caches not synced yet");
        h.caches_synced.store(true, Ordering::Release);
        let why = h.check().unwrap_err();
        assert!(why.contains("file"), "names the source: {why}");

        std::fs::write(&path, "[default]\naws_access_key_id = AKIDTEST\naws_secret_access_key = s3cr3t\n").unwrap();
        source.wait_ready(std::time::Duration::from_secs(5)).await.expect("keys read");
        assert_eq!(h.check(), Ok(()));
        assert!(!format!("{:?}", h.check()).contains("s3cr3t"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
