//! The TLS server: a self-signed certificate made here, a client that trusts it, a rotation on
//! disk picked up without a restart, and pairs installed by the caller (the controller-managed
//! mode): swapped in, never served expired, open connections told to go away on a change.

use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use lbc_aws::fake::{FakeAccounts, FakeElbV2};
use lbc_model::webhook_cert::{NotServing, Swap};
use lbc_webhook::{
    CERT_RELOAD_INTERVAL, CertSource, PATH_MUTATE_POD, ServeConfig, ServeError, ServingCert, ServingPair,
    StaticClusterView, WebhookConfig, WebhookMetrics, WebhookServer, WebhookState, router,
};
use rustls::pki_types::{CertificateDer, ServerName};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let p = std::env::temp_dir().join(format!("lbc-webhook-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }
    fn cert(&self) -> PathBuf {
        self.0.join("tls.crt")
    }
    fn key(&self) -> PathBuf {
        self.0.join("tls.key")
    }
    fn config(&self) -> ServeConfig {
        ServeConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            CertSource::Files { cert_file: self.cert(), key_file: self.key() },
            WebhookMetrics::default(),
        )
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh self-signed certificate for `localhost`; returns (cert PEM, key PEM, cert DER).
fn self_signed() -> (String, String, Vec<u8>) {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    (ck.cert.pem(), ck.signing_key.serialize_pem(), ck.cert.der().to_vec())
}

/// Writes a pair atomically (temp file + rename), as a Secret volume update does.
fn install(dir: &TempDir, cert_pem: &str, key_pem: &str) {
    for (path, data) in [(dir.key(), key_pem), (dir.cert(), cert_pem)] {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, data).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
    }
}

fn client(trust: &[u8], versions: &[&'static rustls::SupportedProtocolVersion], alpn: &[&[u8]]) -> TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from(trust.to_vec())).unwrap();
    let mut cfg = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    TlsConnector::from(Arc::new(cfg))
}

async fn connect(addr: SocketAddr, connector: &TlsConnector) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    connector.connect(ServerName::try_from("localhost").unwrap(), tcp).await
}

fn peer_cert(tls: &TlsStream<TcpStream>) -> Vec<u8> {
    tls.get_ref().1.peer_certificates().unwrap()[0].to_vec()
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

async fn http1(tls: TlsStream<TcpStream>) -> Sender {
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await.unwrap();
    tokio::spawn(conn);
    sender
}

async fn request(sender: &mut Sender, method: &str, path: &str, body: Vec<u8>) -> (u16, String) {
    let req = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let resp = sender.send_request(req).await.unwrap();
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

fn test_router() -> axum::Router {
    let state = WebhookState::new(
        Arc::new(StaticClusterView::default()),
        Arc::new(FakeAccounts::new(Arc::new(FakeElbV2::default()))),
        WebhookConfig::default(),
    );
    router(Arc::new(state))
}

fn pod_review() -> Vec<u8> {
    std::fs::read(Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("tests/fixtures/pod-create.json"))
        .unwrap()
}

#[tokio::test]
async fn serves_tls_and_picks_up_a_rotated_certificate() {
    let dir = TempDir::new("rotate");
    let (cert_a, key_a, der_a) = self_signed();
    install(&dir, &cert_a, &key_a);

    let server = WebhookServer::bind(dir.config()).await.unwrap();
    let addr = server.local_addr();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(server.run(test_router(), async move {
        let _ = stop_rx.await;
    }));

    // TLS 1.3 (default) with certificate A; the webhook answers over it.
    let trust_a = client(&der_a, &[&rustls::version::TLS13, &rustls::version::TLS12], &[]);
    let tls = connect(addr, &trust_a).await.unwrap();
    assert_eq!(peer_cert(&tls), der_a);
    assert_eq!(tls.get_ref().1.protocol_version(), Some(rustls::ProtocolVersion::TLSv1_3));
    let mut kept = http1(tls).await;
    assert_eq!(request(&mut kept, "GET", "/healthz", vec![]).await, (200, "ok".to_string()));
    let (status, body) = request(&mut kept, "POST", PATH_MUTATE_POD, pod_review()).await;
    assert_eq!(status, 200);
    assert!(body.contains("\"allowed\":true"), "{body}");

    // TLS 1.2 is accepted; HTTP/2 is offered through ALPN.
    let tls12 = connect(addr, &client(&der_a, &[&rustls::version::TLS12], &[])).await.unwrap();
    assert_eq!(tls12.get_ref().1.protocol_version(), Some(rustls::ProtocolVersion::TLSv1_2));
    let h2 = connect(addr, &client(&der_a, &[&rustls::version::TLS13], &[b"h2", b"http/1.1"])).await.unwrap();
    assert_eq!(h2.get_ref().1.alpn_protocol(), Some(b"h2".as_slice()));

    // A broken write is ignored: certificate A stays in service.
    std::fs::write(dir.cert(), "not a certificate").unwrap();
    tokio::time::sleep(CERT_RELOAD_INTERVAL + Duration::from_millis(500)).await;
    // (Fresh client configs from here on: a cached TLS 1.3 session would be resumed without
    // the server presenting its certificate again.)
    let fresh_a = || client(&der_a, &[&rustls::version::TLS13], &[]);
    assert_eq!(peer_cert(&connect(addr, &fresh_a()).await.unwrap()), der_a);
    // controller-runtime's certwatcher families count the reads and the broken one (process-wide:
    // other tests of this binary read too, so at least).
    let (reads, errors) = certwatcher_counts();
    assert!(reads >= 2.0 && errors >= 1.0, "reads {reads}, errors {errors}");

    // Rotate to certificate B on disk; new handshakes get B without a restart.
    let (cert_b, key_b, der_b) = self_signed();
    install(&dir, &cert_b, &key_b);
    let deadline = Instant::now() + CERT_RELOAD_INTERVAL * 5;
    let tls = loop {
        match connect(addr, &client(&der_b, &[&rustls::version::TLS13], &[])).await {
            Ok(tls) => break tls,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("rotated certificate never served: {e}"),
        }
    };
    assert_eq!(peer_cert(&tls), der_b);
    let mut fresh = http1(tls).await;
    assert_eq!(request(&mut fresh, "GET", "/healthz", vec![]).await, (200, "ok".to_string()));
    // A client that only trusts A is now refused...
    let refused = connect(addr, &fresh_a()).await.expect_err("certificate A still served");
    assert!(refused.to_string().contains("invalid peer certificate"), "{refused}");
    // ...and the idle connection opened before the rotation was closed by the server: the client's
    // next request handshakes again and meets B.
    closed_soon(&mut kept).await;

    // Graceful stop.
    stop_tx.send(()).unwrap();
    let result = tokio::time::timeout(Duration::from_secs(15), running).await.expect("server did not stop").unwrap();
    assert!(result.is_ok(), "{result:?}");
    assert!(TcpStream::connect(addr).await.is_err(), "still accepting after shutdown");
}

/// `certwatcher_read_certificate_total` and `certwatcher_read_certificate_errors_total` as exported.
fn certwatcher_counts() -> (f64, f64) {
    let mut r = prometheus_client::registry::Registry::default();
    lbc_webhook::WebhookMetrics::default().register(&mut r);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &r).unwrap();
    let value =
        |name: &str| text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok()).unwrap_or(-1.0);
    (value("certwatcher_read_certificate_total"), value("certwatcher_read_certificate_errors_total"))
}

/// Waits (up to 5 s) until the server has closed the connection behind `sender`.
async fn closed_soon(sender: &mut Sender) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !sender.is_closed() {
        assert!(Instant::now() < deadline, "the server kept the connection open");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A pair valid from `from` to `to` seconds around now, for `localhost`.
fn pair_valid(from: i64, to: i64) -> (ServingPair, Vec<u8>) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    params.not_before = time::OffsetDateTime::from_unix_timestamp(now + from).unwrap();
    params.not_after = time::OffsetDateTime::from_unix_timestamp(now + to).unwrap();
    let cert = params.self_signed(&key).unwrap();
    let pair = ServingPair::from_pem(cert.pem().as_bytes(), key.serialize_pem().as_bytes()).unwrap();
    (pair, cert.der().to_vec())
}

type H2Sender = hyper::client::conn::http2::SendRequest<Full<Bytes>>;

async fn http2(tls: TlsStream<TcpStream>) -> (H2Sender, tokio::task::JoinHandle<()>) {
    let (sender, conn) =
        hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), TokioIo::new(tls)).await.unwrap();
    let task = tokio::spawn(async move {
        let _ = conn.await;
    });
    (sender, task)
}

#[tokio::test]
async fn managed_pairs_swap_in_place_and_old_connections_go_away() {
    let serving = ServingCert::new();
    let cfg = ServeConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        CertSource::Managed(serving.clone()),
        WebhookMetrics::default(),
    );
    let server = WebhookServer::bind(cfg).await.expect("listens without a certificate");
    let addr = server.local_addr();
    // A slow route: a request in flight across a swap.
    let app = test_router().route(
        "/slow",
        axum::routing::get(|| async {
            tokio::time::sleep(Duration::from_millis(800)).await;
            "slow ok"
        }),
    );
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(server.run(app, async move {
        let _ = stop_rx.await;
    }));

    // Nothing installed: not ready, and no handshake completes.
    assert_eq!(serving.check(jiff::Timestamp::now()), Err(NotServing::NoCertificate));
    let (pair_a, der_a) = pair_valid(-60, 3600);
    let h2 = |der: &[u8]| client(der, &[&rustls::version::TLS13], &[b"h2"]);
    assert!(connect(addr, &h2(&der_a)).await.is_err(), "a handshake without a certificate");

    // A installed: served.
    assert_eq!(serving.offer(Some(pair_a.clone()), jiff::Timestamp::now()), Swap::Install);
    assert_eq!(serving.check(jiff::Timestamp::now()), Ok(()));
    let tls = connect(addr, &h2(&der_a)).await.unwrap();
    assert_eq!(peer_cert(&tls), der_a);
    let (mut old, old_conn) = http2(tls).await;
    let get = |path: &str| {
        hyper::Request::builder().uri(format!("https://localhost{path}")).body(Full::new(Bytes::new())).unwrap()
    };
    let in_flight = tokio::spawn(old.send_request(get("/slow")));
    tokio::time::sleep(Duration::from_millis(200)).await;

    // An expired pair or none at all never replaces A.
    let (expired, _) = pair_valid(-7200, -3600);
    assert_eq!(serving.offer(Some(expired), jiff::Timestamp::now()), Swap::Keep);
    assert_eq!(serving.offer(None, jiff::Timestamp::now()), Swap::Keep);
    assert_eq!(serving.current().unwrap().fingerprint(), pair_a.fingerprint());

    // B swapped in while the slow request is in flight: it completes on the old connection, which
    // then closes (HTTP/2 GOAWAY); new handshakes get B.
    let (pair_b, der_b) = pair_valid(-60, 3600);
    assert_eq!(serving.offer(Some(pair_b), jiff::Timestamp::now()), Swap::Install);
    let resp = in_flight.await.unwrap().expect("the request in flight completes");
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.into_body().collect().await.unwrap().to_bytes(), "slow ok");
    tokio::time::timeout(Duration::from_secs(5), old_conn).await.expect("old connection closed by the server").unwrap();
    assert!(old.send_request(get("/healthz")).await.is_err(), "no new request on the old connection");
    assert_eq!(peer_cert(&connect(addr, &h2(&der_b)).await.unwrap()), der_b);

    // A pair that expires while in service stops being served, and readiness says so.
    let (short, der_short) = pair_valid(-60, 2);
    assert_eq!(serving.offer(Some(short), jiff::Timestamp::now()), Swap::Install);
    assert!(connect(addr, &h2(&der_short)).await.is_ok());
    tokio::time::sleep(Duration::from_millis(3100)).await;
    assert!(matches!(serving.check(jiff::Timestamp::now()), Err(NotServing::Expired(_))));
    assert!(connect(addr, &h2(&der_short)).await.is_err(), "an expired certificate was served");

    stop_tx.send(()).unwrap();
    let result = tokio::time::timeout(Duration::from_secs(15), running).await.expect("server did not stop").unwrap();
    assert!(result.is_ok(), "{result:?}");
}

/// Posts a pod review; returns the status and whether the answer closes the connection.
async fn post_pod(sender: &mut Sender) -> (u16, bool) {
    let req = hyper::Request::builder()
        .method("POST")
        .uri(PATH_MUTATE_POD)
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(pod_review())))
        .unwrap();
    let resp = sender.send_request(req).await.expect("answered");
    let close = resp.headers().get("connection").is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
    let status = resp.status().as_u16();
    resp.into_body().collect().await.unwrap();
    (status, close)
}

/// The API server calls webhooks over HTTP/1.1 and reuses pooled connections to a replica that
/// has begun to stop: the replica must keep answering and close each such connection right after
/// an answer, never while the client may be writing its next request on it.
#[tokio::test]
async fn a_stopping_server_answers_and_closes_each_http1_connection_after_its_answer() {
    let dir = TempDir::new("drain");
    let (cert, key, der) = self_signed();
    install(&dir, &cert, &key);
    let cfg = ServeConfig { shutdown_delay: Duration::from_secs(1), ..dir.config() };
    let server = WebhookServer::bind(cfg).await.unwrap();
    let addr = server.local_addr();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(server.run(test_router(), async move {
        let _ = stop_rx.await;
    }));
    let http11 = client(&der, &[&rustls::version::TLS13], &[b"http/1.1"]);

    // Before the stop: connections are kept open between requests (two pooled, idle).
    let mut pooled_a = http1(connect(addr, &http11).await.unwrap()).await;
    let mut pooled_b = http1(connect(addr, &http11).await.unwrap()).await;
    assert_eq!(post_pod(&mut pooled_a).await, (200, false));
    assert_eq!(post_pod(&mut pooled_b).await, (200, false));

    // The stop: new connections are still accepted and answered, each closed after its answer.
    stop_tx.send(()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut fresh = http1(connect(addr, &http11).await.expect("still accepting while draining")).await;
        let (status, close) = post_pod(&mut fresh).await;
        assert_eq!(status, 200);
        if close {
            closed_soon(&mut fresh).await;
            break;
        }
        assert!(Instant::now() < deadline, "no answer closed its connection after the stop");
    }

    // A connection pooled before the stop is answered, then closed by the server.
    assert_eq!(post_pod(&mut pooled_a).await, (200, true));
    closed_soon(&mut pooled_a).await;
    assert_eq!(post_pod(&mut pooled_b).await, (200, true));
    let last_answer = Instant::now();
    closed_soon(&mut pooled_b).await;
    assert!(!running.is_finished(), "stopped while requests were still arriving");

    // No more requests: the server stops after the quiet spell, and not before it.
    let result = tokio::time::timeout(Duration::from_secs(15), running).await.expect("server did not stop").unwrap();
    assert!(result.is_ok(), "{result:?}");
    let quiet = last_answer.elapsed();
    assert!(quiet >= lbc_model::drain::QUIET - Duration::from_millis(200), "stopped after only {quiet:?} of quiet");
    assert!(TcpStream::connect(addr).await.is_err(), "still accepting after the drain");
}

#[tokio::test]
async fn missing_certificate_is_a_distinct_error() {
    let dir = TempDir::new("missing");
    match WebhookServer::bind(dir.config()).await {
        Err(ServeError::CertificateMissing { cert_file, key_file }) => {
            assert_eq!((cert_file, key_file), (dir.cert(), dir.key()));
        }
        Err(other) => panic!("unexpected error {other}"),
        Ok(_) => panic!("served without a certificate"),
    }
    // Only the key present: still "missing".
    std::fs::write(dir.key(), "x").unwrap();
    let err = lbc_webhook::serve(dir.config(), test_router(), std::future::pending()).await.unwrap_err();
    assert!(matches!(err, ServeError::CertificateMissing { .. }), "{err}");
    assert!(err.to_string().contains("does not exist"), "{err}");
}

#[tokio::test]
async fn unusable_certificates_are_reported() {
    let dir = TempDir::new("bad");
    let (cert_a, key_a, _) = self_signed();
    let (_, key_b, _) = self_signed();
    let cases = [
        ("garbage certificate", "hello".to_string(), key_a.clone(), "no PEM CERTIFICATE block"),
        ("garbage key", cert_a.clone(), "hello".to_string(), "no usable private key"),
        ("key of another certificate", cert_a.clone(), key_b, "do not work together"),
    ];
    for (name, cert, key, needle) in cases {
        install(&dir, &cert, &key);
        match WebhookServer::bind(dir.config()).await {
            Err(e @ ServeError::Certificate { .. }) => assert!(e.to_string().contains(needle), "{name}: {e}"),
            Err(e) => panic!("{name}: unexpected error {e}"),
            Ok(_) => panic!("{name}: accepted"),
        }
    }
}

#[tokio::test]
async fn port_in_use_is_reported() {
    let dir = TempDir::new("port");
    let (cert, key, _) = self_signed();
    install(&dir, &cert, &key);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let cfg = ServeConfig { bind: taken.local_addr().unwrap(), ..dir.config() };
    let err = WebhookServer::bind(cfg).await.err().expect("bound a port in use");
    assert!(matches!(err, ServeError::Bind { .. }), "{err}");
}
