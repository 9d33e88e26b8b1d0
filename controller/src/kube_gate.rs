//! The Kubernetes half of the write fence: a tower layer on the client the reconcilers use.
//! Every mutating request (POST, PUT, PATCH, DELETE: status and condition patches, finalizers,
//! bindings, Events) is refused before it is sent unless this replica leads, so no call site can
//! forget the check. It also bounds every request that is not a watch (`--kube-api-request-timeout`):
//! a half-open connection must not pin a reconcile forever.
//!
//! Every write that is sent is also one `tracing` span (`kube.write`; an OpenTelemetry client
//! span named e.g. `PATCH pods/status` when the controller traces), a child of the reconcile that
//! made it (tower's buffer in the kube client carries the caller's span to this layer).
//!
//! Leader election and the watch caches use a client whose layer lets every write through (the
//! election must write its Lease while not yet leading; caches only read). Both clients count what
//! they send in client-go's `rest_client_requests_total`.

use futures::future::BoxFuture;
use http::{Method, Request, Response};
use kube::client::Body;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::watch;
use tower::{BoxError, Layer, Service};
use tracing::Instrument;

use crate::metrics::RestLabels;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

/// A write refused because this replica does not lead (see [`is_not_leader`]).
#[derive(Debug, thiserror::Error)]
#[error("{method} {path} not sent: this replica does not hold the leader lease")]
pub struct NotLeader {
    pub method: Method,
    pub path: String,
}

/// A request that got no answer in time.
#[derive(Debug, thiserror::Error)]
#[error("{method} {path}: no answer from the Kubernetes API server within {limit:?} (--kube-api-request-timeout)")]
pub struct RequestTimedOut {
    pub method: Method,
    pub path: String,
    pub limit: Duration,
}

/// Whether a kube error is [`NotLeader`] (it arrives wrapped as `kube::Error::Service`).
pub fn is_not_leader(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Service(inner) if inner.downcast_ref::<NotLeader>().is_some())
}

#[derive(Clone)]
pub struct KubeGate {
    leader: watch::Receiver<bool>,
    request_timeout: Duration,
    /// `rest_client_requests_total` and the API server's `host:port` for its label.
    requests: Option<(Family<RestLabels, Counter>, String)>,
}

impl KubeGate {
    pub fn new(leader: watch::Receiver<bool>, request_timeout: Duration) -> Self {
        Self { leader, request_timeout, requests: None }
    }

    /// Counts every request sent in `counter`, labelled with `host` (client-go's family).
    pub fn counting(mut self, counter: Family<RestLabels, Counter>, host: String) -> Self {
        self.requests = Some((counter, host));
        self
    }
}

impl<S> Layer<S> for KubeGate {
    type Service = Gated<S>;
    fn layer(&self, inner: S) -> Gated<S> {
        Gated { inner, gate: self.clone() }
    }
}

#[derive(Clone)]
pub struct Gated<S> {
    inner: S,
    gate: KubeGate,
}

fn is_write(m: &Method) -> bool {
    !matches!(*m, Method::GET | Method::HEAD | Method::OPTIONS)
}

fn is_watch(req: &Request<Body>) -> bool {
    req.uri().query().is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"))
}

impl<S, B> Service<Request<Body>> for Gated<S>
where
    S: Service<Request<Body>, Response = Response<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Response<B>, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let (method, path) = (req.method().clone(), req.uri().path().to_string());
        let write = is_write(&method);
        if write && !*self.gate.leader.borrow() {
            return Box::pin(async move { Err(Box::new(NotLeader { method, path }) as BoxError) });
        }
        let watch = is_watch(&req);
        let limit = self.gate.request_timeout;
        let count = self.gate.requests.clone().map(|(family, host)| (family, host, method.to_string()));
        let span = if write { write_span(&method, &path) } else { tracing::Span::none() };
        let fut = span.in_scope(|| self.inner.call(req));
        let fut = async move {
            if watch {
                return fut.await.map_err(Into::into);
            }
            match tokio::time::timeout(limit, fut).await {
                Ok(r) => r.map_err(Into::into),
                Err(_) => Err(Box::new(RequestTimedOut { method, path, limit }) as BoxError),
            }
        };
        Box::pin(async move {
            let res = fut.instrument(span.clone()).await;
            if let Some((family, host, method)) = count {
                let code = res.as_ref().map_or_else(|_| "<error>".to_string(), |r| r.status().as_u16().to_string());
                family.get_or_create(&RestLabels { code, host, method }).inc();
            }
            match &res {
                Ok(r) => {
                    let status = r.status();
                    span.record("http.response.status_code", status.as_u16());
                    if status.is_client_error() || status.is_server_error() {
                        span.record("otel.status_code", "ERROR");
                    }
                }
                Err(_) => {
                    span.record("otel.status_code", "ERROR");
                }
            }
            res
        })
    }
}

/// The span of one Kubernetes write: named by method and resource (`PATCH pods/status`), with
/// the full path as an attribute (object names would make too many span names).
fn write_span(method: &Method, path: &str) -> tracing::Span {
    let name = format!("{method} {}", resource_of(path));
    tracing::info_span!(
        "kube.write",
        otel.name = name.as_str(),
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        http.request.method = method.as_str(),
        url.path = path,
        http.response.status_code = tracing::field::Empty,
    )
}

/// `resource[/subresource]` of an API path: `/api/v1/namespaces/ns/pods/p/status` →
/// `pods/status`, `/apis/elbv2.k8s.aws/v1beta1/namespaces/ns/targetgroupbindings` →
/// `targetgroupbindings`, `/api/v1/namespaces/ns` → `namespaces`.
fn resource_of(path: &str) -> String {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let rest = match parts.as_slice() {
        ["api", _, rest @ ..] | ["apis", _, _, rest @ ..] => rest,
        _ => return path.to_string(),
    };
    let rest = match rest {
        ["namespaces", _ns, rest @ ..] if !rest.is_empty() => rest,
        other => other,
    };
    match rest {
        [resource] | [resource, _] => (*resource).to_string(),
        [resource, _, sub, ..] => format!("{resource}/{sub}"),
        [] => path.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_spans_are_named_by_resource_not_object() {
        for (path, want) in [
            ("/api/v1/namespaces/ns/pods/p/status", "pods/status"),
            ("/api/v1/namespaces/ns/events", "events"),
            ("/apis/elbv2.k8s.aws/v1beta1/namespaces/ns/targetgroupbindings/b", "targetgroupbindings"),
            ("/apis/elbv2.k8s.aws/v1beta1/namespaces/ns/targetgroupbindings/b/status", "targetgroupbindings/status"),
            ("/api/v1/namespaces/ns", "namespaces"),
            ("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l", "leases"),
            ("/version", "/version"),
        ] {
            assert_eq!(resource_of(path), want, "{path}");
        }
    }
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, Patch, PatchParams};
    use tower_test::mock;

    fn gated(leader: bool) -> (kube::Client, mock::Handle<Request<Body>, Response<Body>>, watch::Sender<bool>) {
        let (svc, handle) = mock::pair::<Request<Body>, Response<Body>>();
        let (tx, rx) = watch::channel(leader);
        let client = kube::client::ClientBuilder::new(svc, "default")
            .with_layer(&KubeGate::new(rx, Duration::from_secs(30)))
            .build();
        (client, handle, tx)
    }

    fn patch(client: &kube::Client) -> impl std::future::Future<Output = Result<Pod, kube::Error>> + use<> {
        let api: Api<Pod> = Api::namespaced(client.clone(), "ns");
        async move { api.patch_status("p", &PatchParams::default(), &Patch::Merge(serde_json::json!({"status": {}}))).await }
    }

    #[tokio::test(start_paused = true)]
    async fn writes_are_refused_unsent_when_not_leading_reads_pass() {
        let (client, mut handle, leader) = gated(false);
        let e = patch(&client).await.unwrap_err();
        assert!(is_not_leader(&e), "{e:?}");
        assert!(e.to_string().contains("does not hold the leader lease"), "{e}");

        // A read goes out (and is answered).
        let api: Api<Pod> = Api::namespaced(client.clone(), "ns");
        let read = tokio::spawn(async move { api.get_opt("p").await });
        let (req, tx) = handle.next_request().await.unwrap();
        assert_eq!(req.method(), Method::GET, "the refused PATCH never reached the server");
        tx.send_response(
            Response::builder()
                .status(404)
                .body(Body::from(
                    br#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}"#
                        .to_vec(),
                ))
                .unwrap(),
        );
        assert!(read.await.unwrap().unwrap().is_none());

        // Leading: the same write is sent.
        leader.send(true).unwrap();
        let w = tokio::spawn(patch(&client));
        let (req, _tx) = handle.next_request().await.unwrap();
        assert_eq!(req.method(), Method::PATCH);
        drop(w);
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_without_answer_times_out() {
        let (client, mut handle, _leader) = gated(true);
        let w = tokio::spawn(patch(&client));
        let (_req, _hold) = handle.next_request().await.unwrap();
        let t0 = tokio::time::Instant::now();
        let e = w.await.unwrap().unwrap_err();
        assert_eq!(t0.elapsed(), Duration::from_secs(30));
        assert!(e.to_string().contains("--kube-api-request-timeout"), "{e}");
    }

    /// client-go's `rest_client_requests_total`: what was sent, by answer; a refused write is not.
    #[tokio::test(start_paused = true)]
    async fn requests_sent_are_counted_by_code_host_and_method() {
        let (svc, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
        let (_tx, rx) = watch::channel(false);
        let family: Family<RestLabels, Counter> = Family::default();
        let gate = KubeGate::new(rx, Duration::from_secs(30)).counting(family.clone(), "10.0.0.1:6443".into());
        let client = kube::client::ClientBuilder::new(svc, "default").with_layer(&gate).build();
        assert!(is_not_leader(&patch(&client).await.unwrap_err()));
        let api: Api<Pod> = Api::namespaced(client.clone(), "ns");
        let read = tokio::spawn(async move { api.get_opt("p").await });
        let (_req, tx) = handle.next_request().await.unwrap();
        let gone = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}"#;
        tx.send_response(Response::builder().status(404).body(Body::from(gone.to_vec())).unwrap());
        assert!(read.await.unwrap().unwrap().is_none());
        let label = |code: &str, method: &str| RestLabels {
            code: code.into(),
            host: "10.0.0.1:6443".into(),
            method: method.into(),
        };
        assert_eq!(family.get_or_create(&label("404", "GET")).get(), 1);
        assert_eq!(family.get_or_create(&label("<error>", "PATCH")).get(), 0, "the refused write was never sent");
    }
}
