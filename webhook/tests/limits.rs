//! The webhook server's limits, each against the real server and router over TLS: bodies above
//! the limit (declared or streamed) get 413 before any parsing, JSON that would decode into too
//! much memory gets 413, requests beyond the concurrency limit get 503 at once, a request that
//! outlives its deadline gets 504, connections beyond the cap are closed, and with a client CA
//! only clients with a certificate it signed get in. Every refusal is counted by reason.

use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use lbc_aws::fake::{FakeAccounts, FakeElbV2};
use lbc_webhook::limits::decode_cost;
use lbc_webhook::{
    CertSource, Limits, PATH_MUTATE_POD, ServeConfig, ServeError, ServingCert, ServingPair, StaticClusterView,
    WebhookConfig, WebhookMetrics, WebhookServer, WebhookState, router,
};
use prometheus_client::registry::Registry;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// A CA and a serving certificate for `localhost` signed by it.
struct Pki {
    ca_pem: String,
    ca: Issuer<'static, KeyPair>,
}

impl Pki {
    fn new(name: &str) -> Self {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        let cert = params.self_signed(&key).unwrap();
        Self { ca_pem: cert.pem(), ca: Issuer::new(params, key) }
    }

    /// A leaf for `name` (PEM cert, PEM key).
    fn leaf(&self, name: &str) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec![name.to_string()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.signed_by(&key, &self.ca).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

struct Server {
    addr: SocketAddr,
    metrics: WebhookMetrics,
    ca_pem: String,
    _stop: tokio::sync::oneshot::Sender<()>,
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("tests/fixtures").join(name)).unwrap()
}

fn temp_file(tag: &str, data: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let p = std::env::temp_dir().join(format!("lbc-webhook-limits-{tag}-{}-{nanos}.pem", std::process::id()));
    std::fs::write(&p, data).unwrap();
    p
}

/// The real router behind the server, with `limits` and perhaps a client CA.
async fn start(limits: Limits, client_ca: Option<&Pki>) -> Server {
    let pki = Pki::new("serving CA");
    let (cert, key) = pki.leaf("localhost");
    let serving = ServingCert::new();
    serving.offer(Some(ServingPair::from_pem(cert.as_bytes(), key.as_bytes()).unwrap()), jiff::Timestamp::now());
    let state = Arc::new(WebhookState::new(
        Arc::new(StaticClusterView::default()),
        Arc::new(FakeAccounts::new(Arc::new(FakeElbV2::default()))),
        WebhookConfig::default(),
    ));
    let metrics = state.metrics().clone();
    let mut cfg = ServeConfig::new("127.0.0.1:0".parse().unwrap(), CertSource::Managed(serving), metrics.clone());
    cfg.limits = limits;
    cfg.client_ca_file = client_ca.map(|ca| temp_file("client-ca", &ca.ca_pem));
    let server = WebhookServer::bind(cfg).await.unwrap();
    let addr = server.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(server.run(router(state), async move {
        let _ = stopped.await;
    }));
    Server { addr, metrics, ca_pem: pki.ca_pem, _stop: stop }
}

impl Server {
    /// A TLS client trusting the serving CA, presenting `identity` (cert PEM, key PEM) if given.
    fn connector(&self, identity: Option<(String, String)>) -> TlsConnector {
        let mut roots = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_slice_iter(self.ca_pem.as_bytes()) {
            roots.add(c.unwrap()).unwrap();
        }
        let b = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
        let mut cfg = match identity {
            None => b.with_no_client_auth(),
            Some((cert, key)) => {
                let chain = CertificateDer::pem_slice_iter(cert.as_bytes()).map(Result::unwrap).collect();
                b.with_client_auth_cert(chain, PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap()).unwrap()
            }
        };
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        TlsConnector::from(Arc::new(cfg))
    }

    async fn tls(&self, identity: Option<(String, String)>) -> std::io::Result<TlsStream<TcpStream>> {
        let tcp = TcpStream::connect(self.addr).await?;
        self.connector(identity).connect(ServerName::try_from("localhost").unwrap(), tcp).await
    }

    /// POSTs `body` to `path` on a new connection; (status, body).
    async fn post(&self, path: &str, body: Vec<u8>) -> (u16, String) {
        post_on(self.tls(None).await.unwrap(), path, body).await.unwrap()
    }

    fn refused(&self, reason: &str) -> f64 {
        let mut registry = Registry::default();
        self.metrics.register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        let want = format!("awslbc_webhook_refused_total{{reason=\"{reason}\"}} ");
        text.lines().find_map(|l| l.strip_prefix(&want)?.parse().ok()).unwrap_or(0.0)
    }
}

async fn post_on(tls: TlsStream<TcpStream>, path: &str, body: Vec<u8>) -> Result<(u16, String), hyper::Error> {
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
    tokio::spawn(conn);
    let req = hyper::Request::post(path)
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let resp = sender.send_request(req).await?;
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await?.to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// Sends the head of a request whose body never (fully) comes; returns the open stream.
async fn stalled(server: &Server, head_extra: &str, body_start: &[u8]) -> TlsStream<TcpStream> {
    let mut tls = server.tls(None).await.unwrap();
    let head = format!(
        "POST {PATH_MUTATE_POD} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n{head_extra}\r\n"
    );
    tls.write_all(head.as_bytes()).await.unwrap();
    tls.write_all(body_start).await.unwrap();
    tls.flush().await.unwrap();
    tls
}

/// The status line's code of what `tls` receives next.
async fn status_of(tls: &mut TlsStream<TcpStream>) -> u16 {
    let mut buf = vec![0u8; 4096];
    let n = tls.read(&mut buf).await.unwrap();
    let text = String::from_utf8_lossy(&buf[..n]);
    text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("no status line in {text:?}"))
}

fn limits() -> Limits {
    Limits { max_body_bytes: 64 * 1024, request_timeout: Duration::from_secs(5), ..Limits::default() }
}

#[tokio::test]
async fn bodies_above_the_limit_get_413_declared_or_streamed() {
    let server = start(limits(), None).await;
    // A real review is answered.
    assert_eq!(server.post(PATH_MUTATE_POD, fixture("pod-create.json")).await.0, 200);

    // Declared too large: refused from the headers, nothing read.
    let (status, msg) = server.post(PATH_MUTATE_POD, vec![b' '; 64 * 1024 + 1]).await;
    assert_eq!(status, 413, "{msg}");
    assert!(msg.contains("65537 bytes") && msg.contains("--webhook-max-body-bytes"), "{msg}");

    // Chunked, no length declared: cut while reading, at the limit.
    let mut tls = stalled(&server, "transfer-encoding: chunked\r\n", b"").await;
    let chunk = vec![b' '; 16 * 1024];
    for _ in 0..5 {
        tls.write_all(format!("{:x}\r\n", chunk.len()).as_bytes()).await.unwrap();
        tls.write_all(&chunk).await.unwrap();
        tls.write_all(b"\r\n").await.unwrap();
    }
    tls.flush().await.unwrap();
    assert_eq!(status_of(&mut tls).await, 413);
    assert_eq!(server.refused("body_too_large"), 2.0);
}

#[tokio::test]
async fn json_that_would_decode_into_too_much_memory_gets_413() {
    let limits = Limits { decode_budget_bytes: 8 << 20, ..limits() };
    let server = start(limits, None).await;
    // 48 KiB of one-member objects (~100 times its size as a serde_json::Value).
    let dense = format!("[{}]", vec!["{\"\":0}"; 7_000].join(","));
    assert!(dense.len() < limits.max_body_bytes && decode_cost(dense.as_bytes()) > limits.decode_budget_bytes);
    let (status, msg) = server.post(PATH_MUTATE_POD, dense.into_bytes()).await;
    assert_eq!(status, 413, "{msg}");
    assert!(msg.contains("decode budget of 8 MiB"), "{msg}");
    assert_eq!(server.refused("decode_too_large"), 1.0);
    // An ordinary review of the same size fits easily.
    let pod = fixture("pod-create.json");
    assert!(decode_cost(&pod) < limits.decode_budget_bytes / 8, "{}", decode_cost(&pod));
    assert_eq!(server.post(PATH_MUTATE_POD, pod).await.0, 200);
}

#[tokio::test]
async fn requests_beyond_the_concurrency_limit_get_503_at_once() {
    let server = start(Limits { max_concurrent_requests: 2, ..limits() }, None).await;
    // Two requests hold the two slots: their bodies never finish.
    let _a = stalled(&server, "content-length: 1000\r\n", b"{").await;
    let _b = stalled(&server, "content-length: 1000\r\n", b"{").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let (status, msg) = server.post(PATH_MUTATE_POD, fixture("pod-create.json")).await;
    assert_eq!(status, 503, "{msg}");
    assert!(started.elapsed() < Duration::from_secs(1), "refused at once, not queued: {:?}", started.elapsed());
    assert!(msg.contains("--webhook-max-concurrent-requests"), "{msg}");
    assert_eq!(server.refused("overloaded"), 1.0);
    // Slots come back when the holders go away.
    drop((_a, _b));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(server.post(PATH_MUTATE_POD, fixture("pod-create.json")).await.0, 200);
}

#[tokio::test]
async fn a_request_past_its_deadline_gets_504_and_frees_its_slot() {
    let limits = Limits { max_concurrent_requests: 1, request_timeout: Duration::from_millis(500), ..limits() };
    let server = start(limits, None).await;
    let started = Instant::now();
    let mut slow = stalled(&server, "content-length: 1000\r\n", b"{\"apiVersion\":").await;
    assert_eq!(status_of(&mut slow).await, 504);
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(450) && took < Duration::from_secs(3), "answered after {took:?}");
    assert_eq!(server.refused("deadline"), 1.0);
    // The only slot is free again.
    assert_eq!(server.post(PATH_MUTATE_POD, fixture("pod-create.json")).await.0, 200);
}

#[tokio::test]
async fn connections_beyond_the_cap_are_closed() {
    let server = start(Limits { max_connections: 2, ..limits() }, None).await;
    let _a = server.tls(None).await.unwrap();
    let _b = server.tls(None).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(server.tls(None).await.is_err(), "a third connection completed its handshake");
    assert_eq!(server.refused("too_many_connections"), 1.0);
    drop((_a, _b));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(server.post(PATH_MUTATE_POD, fixture("pod-create.json")).await.0, 200);
}

#[tokio::test]
async fn with_a_client_ca_only_its_certificates_get_in() {
    let api_server_ca = Pki::new("API server webhook client CA");
    let server = start(limits(), Some(&api_server_ca)).await;
    let pod = fixture("pod-create.json");

    // No certificate: the handshake (or, in TLS 1.3, the first exchange after it) fails.
    let none = match server.tls(None).await {
        Err(_) => true,
        Ok(tls) => post_on(tls, PATH_MUTATE_POD, pod.clone()).await.is_err(),
    };
    assert!(none, "a client without a certificate was answered");
    // A certificate of another CA: refused too.
    let stranger = Pki::new("some other CA").leaf("attacker");
    let other = match server.tls(Some(stranger)).await {
        Err(_) => true,
        Ok(tls) => post_on(tls, PATH_MUTATE_POD, pod.clone()).await.is_err(),
    };
    assert!(other, "a client with a certificate of another CA was answered");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(server.refused("client_certificate"), 2.0);

    // The API server's certificate: answered.
    let tls = server.tls(Some(api_server_ca.leaf("kube-apiserver-webhook-client"))).await.unwrap();
    assert_eq!(post_on(tls, PATH_MUTATE_POD, pod).await.unwrap().0, 200);
}

#[tokio::test]
async fn an_unusable_client_ca_file_stops_the_start_with_its_reason() {
    let path = temp_file("not-a-ca", "not a certificate");
    let err = lbc_webhook::client_ca_roots(&path).unwrap_err();
    assert!(matches!(err, ServeError::ClientCa { .. }));
    let msg = err.to_string();
    assert!(msg.contains("holds no PEM CERTIFICATE block") && msg.contains("--webhook-client-ca-file"), "{msg}");
    let missing = lbc_webhook::client_ca_roots(Path::new("/nonexistent/ca.crt")).unwrap_err().to_string();
    assert!(missing.contains("cannot be read"), "{missing}");
}

#[tokio::test]
async fn a_pod_review_near_the_etcd_limit_fits_the_default_limits_and_is_answered() {
    // 1.5 MiB of environment variables in the fixture's pod: the largest Pod etcd stores.
    let mut review: serde_json::Value = serde_json::from_slice(&fixture("pod-create.json")).unwrap();
    let env: Vec<serde_json::Value> = (0..25_500)
        .map(|i| serde_json::json!({"name": format!("SETTING_{i:06}"), "value": format!("value-{i:06}-abcdefghij")}))
        .collect();
    review["request"]["object"]["spec"]["containers"][0]["env"] = serde_json::Value::Array(env);
    let body = serde_json::to_vec(&review).unwrap();
    assert!(body.len() > 1_400_000 && body.len() < 1_700_000, "{} bytes", body.len());
    let defaults = Limits::default();
    let cost = decode_cost(&body);
    assert!(cost < defaults.decode_budget_bytes / 2, "{cost} bytes to decode {} bytes", body.len());
    eprintln!("a {} byte Pod review: decode cost {} MiB", body.len(), cost >> 20);
    let server = start(Limits { max_body_bytes: defaults.max_body_bytes, ..limits() }, None).await;
    assert_eq!(server.post(PATH_MUTATE_POD, body).await.0, 200);
}
