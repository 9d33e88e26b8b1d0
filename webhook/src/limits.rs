//! What one caller of the webhook port can cost the process, and the fast refusals when a
//! request would cost more.
//!
//! Any pod that reaches the webhook Service can send requests, so nothing a request asks for is
//! granted unbounded:
//!
//! | limit | refused with | `awslbc_webhook_refused_total{reason}` |
//! |---|---|---|
//! | body above [`Limits::max_body_bytes`] (`Content-Length`, or counted while reading) | 413 | `body_too_large` |
//! | decoding would need more than [`Limits::decode_budget_bytes`] | 413 | `decode_too_large` |
//! | [`Limits::max_concurrent_requests`] requests in flight | 503 at once, `Retry-After: 1` | `overloaded` |
//! | the requests in flight already hold the decode budget | 503 at once, `Retry-After: 1` | `decode_budget` |
//! | no answer within [`Limits::request_timeout`] (body read included) | 504 | `deadline` |
//! | [`Limits::max_connections`] connections open | connection closed at accept | `too_many_connections` |
//! | `--webhook-client-ca-file` set and no valid client certificate | TLS handshake refused | `client_certificate` |
//!
//! Nothing waits in a queue: a refusal is immediate, and the API server then applies the
//! webhook's `failurePolicy` (our message is in its error).
//!
//! The decode budget exists because the handlers parse the body into a `serde_json::Value` before
//! reading it as an AdmissionReview, and a `Value` can be ~100 times the size of its JSON (measured:
//! 1 MiB of `[{"":0},…]` takes 98 MiB). [`decode_cost`] bounds that size from the body's bytes
//! without allocating, and the requests being decoded share one budget, so the memory of all
//! decodes together is bounded whatever the number of cores.

use crate::metrics::WebhookMetrics;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Default of `--webhook-max-body-bytes`: 3 MiB, the API server's own limit on one request
/// body. A stored object is at most 1.5 MiB in etcd (a Pod review is well below), but its JSON
/// can be larger than its stored form and an UPDATE review carries the old object too, so 3 MiB
/// leaves room for every review the API server can build from an object it accepted.
pub const DEFAULT_MAX_BODY_BYTES: usize = 3 * 1024 * 1024;
/// Default of `--webhook-max-concurrent-requests`. Cache-only webhooks answer in well under a
/// millisecond; the TargetGroupBinding ones wait on AWS (at most 5 s), so 32 leaves room for a
/// burst of binding changes while bounding memory (32 × 3 MiB of bodies).
pub const DEFAULT_MAX_CONCURRENT_REQUESTS: usize = 32;
/// Default of `--webhook-request-timeout`: below the 10 s `timeoutSeconds` the chart renders, so
/// the API server gets our answer rather than its own timeout.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(8);
/// Bytes that all decodes in flight may need together (see [`decode_cost`]): 192 MiB, so the
/// bodies (32 × 3 MiB), their decodes and the controller's caches stay below the chart's 512 MiB
/// memory limit. A 1.5 MiB Pod of ordinary JSON (25,000 environment variables) needs about 55 MiB.
pub const DEFAULT_DECODE_BUDGET_BYTES: usize = 192 * 1024 * 1024;
/// Connections open at most. The API server calls Service webhooks over HTTP/1.1 and pools its
/// connections (one per concurrent request, up to 25 kept idle); each costs tens of KiB of TLS and
/// HTTP buffers.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// The bounds of the webhook server (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `--webhook-max-body-bytes`.
    pub max_body_bytes: usize,
    /// `--webhook-max-concurrent-requests`.
    pub max_concurrent_requests: usize,
    /// `--webhook-request-timeout`.
    pub request_timeout: Duration,
    /// Memory all decodes in flight may need together.
    pub decode_budget_bytes: usize,
    /// Connections open at most.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_concurrent_requests: DEFAULT_MAX_CONCURRENT_REQUESTS,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            decode_budget_bytes: DEFAULT_DECODE_BUDGET_BYTES,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// Decode budget accounting unit: semaphore permits are KiB.
const UNIT: usize = 1024;

/// An upper bound of the memory the handlers need to decode `body` (a `serde_json::Value`, then
/// the typed AdmissionReview made from it), counted from the JSON's structure alone: per value 64
/// bytes (its slot, with the container's growth), per array 128, per object 640 (a map node),
/// per member 128 (key and slot), plus the body's bytes (strings), all doubled for the typed copy.
/// Calibrated against measured peaks: 1 MiB of one-member objects, of empty arrays, of numbers
/// and of one large object all stay below it.
pub fn decode_cost(body: &[u8]) -> usize {
    let (mut values, mut arrays, mut objects, mut members) = (1usize, 0usize, 0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &b in body {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => objects += 1,
            b'[' => arrays += 1,
            b',' => values += 1,
            b':' => members += 1,
            _ => {}
        }
    }
    // Every value is the first of its container or follows a comma.
    values += objects + arrays;
    2 * (64 * values + 128 * arrays + 640 * objects + 128 * members + body.len())
}

/// Shared state of [`admit`].
#[derive(Clone)]
pub(crate) struct Guard {
    limits: Limits,
    requests: Arc<Semaphore>,
    decode: Arc<Semaphore>,
    metrics: WebhookMetrics,
}

impl Guard {
    pub(crate) fn new(limits: Limits, metrics: WebhookMetrics) -> Self {
        let units = (limits.decode_budget_bytes / UNIT).clamp(1, Semaphore::MAX_PERMITS);
        Self {
            limits,
            requests: Arc::new(Semaphore::new(limits.max_concurrent_requests.max(1))),
            decode: Arc::new(Semaphore::new(units)),
            metrics,
        }
    }

    fn refuse(&self, reason: &'static str, status: StatusCode, message: String) -> Response {
        self.metrics.refused(reason);
        tracing::debug!(reason, %status, %message, "webhook request refused");
        let mut r = (status, message).into_response();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        r
    }
}

/// The middleware in front of every webhook route: a request slot, the body read within its
/// limit, a share of the decode budget, and the deadline over all of it.
pub(crate) async fn admit(State(guard): State<Guard>, req: Request, next: Next) -> Response {
    let limits = guard.limits;
    let Ok(_slot) = guard.requests.clone().try_acquire_owned() else {
        return guard.refuse(
            "overloaded",
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the webhook server is answering {} requests already (--webhook-max-concurrent-requests); try again",
                limits.max_concurrent_requests
            ),
        );
    };
    let declared = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if let Some(len) = declared.filter(|l| *l > limits.max_body_bytes as u64) {
        return guard.refuse("body_too_large", StatusCode::PAYLOAD_TOO_LARGE, too_large(len, limits.max_body_bytes));
    }
    let _in_flight = guard.metrics.in_flight_guard();
    let work = async {
        let (parts, body) = req.into_parts();
        let bytes = match axum::body::to_bytes(body, limits.max_body_bytes).await {
            Ok(b) => b,
            Err(e) => {
                // The limit is the only error that is not the client going away.
                let over = std::error::Error::source(&e).is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
                return if over {
                    let msg = format!(
                        "the request body is larger than {} bytes (--webhook-max-body-bytes); an AdmissionReview of \
                         any object the API server accepts is smaller",
                        limits.max_body_bytes
                    );
                    guard.refuse("body_too_large", StatusCode::PAYLOAD_TOO_LARGE, msg)
                } else {
                    (StatusCode::BAD_REQUEST, format!("cannot read the request body: {e}")).into_response()
                };
            }
        };
        let cost = decode_cost(&bytes);
        if cost > limits.decode_budget_bytes {
            let msg = format!(
                "decoding this {} byte body would need up to {} MiB, more than the webhook's decode budget of {} MiB: \
                 its JSON is made of unusually many small values",
                bytes.len(),
                cost.div_ceil(1 << 20),
                limits.decode_budget_bytes >> 20
            );
            return guard.refuse("decode_too_large", StatusCode::PAYLOAD_TOO_LARGE, msg);
        }
        let units = u32::try_from(cost.div_ceil(UNIT).max(1)).unwrap_or(u32::MAX);
        let Ok(_decode) = guard.decode.clone().try_acquire_many_owned(units) else {
            return guard.refuse(
                "decode_budget",
                StatusCode::SERVICE_UNAVAILABLE,
                "the requests in flight hold the webhook's decode memory budget; try again".to_string(),
            );
        };
        let _decode: OwnedSemaphorePermit = _decode;
        next.run(Request::from_parts(parts, Body::from(bytes))).await
    };
    match tokio::time::timeout(limits.request_timeout, work).await {
        Ok(r) => r,
        Err(_) => guard.refuse(
            "deadline",
            StatusCode::GATEWAY_TIMEOUT,
            format!(
                "no answer within {:?} (--webhook-request-timeout): the request was abandoned (a slow client, or AWS \
                 slower than the deadline)",
                limits.request_timeout
            ),
        ),
    }
}

fn too_large(len: u64, max: usize) -> String {
    format!(
        "the request body is {len} bytes, more than {max} (--webhook-max-body-bytes); an AdmissionReview of any object \
         the API server accepts is smaller"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_grows_with_structure_not_only_bytes() {
        let flat = format!("{{\"a\":\"{}\"}}", "x".repeat(10_000));
        let dense = format!("[{}]", vec!["{\"\":0}"; 1_400].join(","));
        assert!(dense.len() < flat.len());
        assert!(decode_cost(dense.as_bytes()) > 20 * decode_cost(flat.as_bytes()));
        // Brackets, commas and colons inside strings are text.
        assert_eq!(decode_cost(br#""[{,:}]""#), decode_cost(br#""aaaaaa""#));
        assert_eq!(decode_cost(br#""\"[""#), decode_cost(br#""\"a""#));
    }
}
