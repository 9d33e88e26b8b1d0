//! The stop of a replica that is still being called.
//!
//! The API server calls Service webhooks over HTTP/1.1 (it turns HTTP/2 off for them) and keeps
//! its connections open between requests, pooled by the Service's name: a connection made to a
//! replica before it began to terminate is used again for as long as it stays open, whatever the
//! Service's endpoints say by then. Closing such an idle connection races with the API server
//! writing its next request on it, and a POST that meets a closed connection is not retried: the
//! request fails with `EOF` (and for the pod mutator, `failurePolicy: Ignore`, the pod is admitted
//! without its readiness gate).
//!
//! So after the stop signal the server keeps answering, and every HTTP/1.1 answer carries
//! `Connection: close`: each pooled connection is closed by us right after a response, which the
//! client reads and so never uses that connection again. The API server's next request then dials,
//! and a dial only reaches a replica that is still an endpoint. When [`lbc_model::drain::drained`]
//! says the traffic has stopped (the configured delay, then a quiet spell, within a bound), the
//! server stops; connections still idle then are the only ones closed without a response.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Version, header};
use axum::middleware::Next;
use axum::response::Response;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::time::Instant;
use tracing::info;

/// How often the drain checks whether the traffic has stopped.
const CHECK_EVERY: Duration = Duration::from_millis(250);

/// Whether the server is stopping, and when the last request arrived. Clones share both.
#[derive(Clone, Debug, Default)]
pub(crate) struct Drain(Arc<Mutex<DrainState>>);

#[derive(Debug, Default)]
struct DrainState {
    stopping_since: Option<Instant>,
    last_request: Option<Instant>,
}

impl Drain {
    fn lock(&self) -> std::sync::MutexGuard<'_, DrainState> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn stopping(&self) -> bool {
        self.lock().stopping_since.is_some()
    }

    /// Marks the stop, then waits until the traffic has stopped (`min` zero: returns at once).
    pub(crate) async fn run(&self, min: Duration) {
        let since = Instant::now();
        self.lock().stopping_since = Some(since);
        if !min.is_zero() {
            info!(delay = ?min, "shutdown: the webhook server keeps answering (each connection closed after its answer) while the API server still calls it");
        }
        loop {
            let since_request = self.lock().last_request.map(|t| t.elapsed());
            if lbc_model::drain::drained(since.elapsed(), since_request, min) {
                break;
            }
            tokio::time::sleep(CHECK_EVERY).await;
        }
        if !min.is_zero() {
            info!(after = ?since.elapsed(), "shutdown: webhook drain over");
        }
    }
}

/// The middleware in front of everything: notes the request's arrival and, once the server is
/// stopping, closes an HTTP/1.x connection after its answer (HTTP/2 connections get GOAWAY when the
/// server stops, which its clients handle without losing a request).
pub(crate) async fn mark(State(drain): State<Drain>, req: Request, next: Next) -> Response {
    drain.lock().last_request = Some(Instant::now());
    let http1 = req.version() <= Version::HTTP_11;
    let mut resp = next.run(req).await;
    if http1 && drain.stopping() {
        resp.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    resp
}
