//! Admin HTTP endpoints: `/metrics` on `--metrics-bind-addr`; `/healthz` and `/readyz` on
//! `--health-probe-bind-addr`. Ready means every watch cache has synced.

use crate::metrics::Metrics;
use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Readiness inputs, flipped by the runtime.
#[derive(Clone, Default)]
pub struct Health {
    pub caches_synced: Arc<AtomicBool>,
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
                if h.caches_synced.load(Ordering::Acquire) {
                    (StatusCode::OK, "ok").into_response()
                } else {
                    (StatusCode::SERVICE_UNAVAILABLE, "watch caches not synced yet").into_response()
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(%addr, "health probe server listening");
    axum::serve(listener, app).await
}
