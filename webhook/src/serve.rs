//! Serving the webhooks over TLS 1.2+ (rustls with the aws-lc-rs provider).
//!
//! The pair in service is held by a [`ServingCert`], which can be swapped at any time:
//!
//! - [`CertSource::Files`]: the certificate and key files are read again every
//!   [`CERT_RELOAD_INTERVAL`] (cert-manager or a Secret volume rotating them). With no certificate
//!   at all, [`WebhookServer::bind`] returns [`ServeError::CertificateMissing`] right away so the
//!   controller can keep running without its webhooks (outside a cluster, in development).
//! - [`CertSource::Managed`]: the caller installs pairs (the controller-managed mode: the
//!   controller watches its Secret). The server listens at once and refuses handshakes until a
//!   pair is installed.
//!
//! Either way a pair is only put in service when it may be served now
//! ([`lbc_model::webhook_cert::swap`]): a half-written or expired pair never replaces a working
//! one, and no handshake is ever completed with an expired certificate. When the pair changes,
//! every open connection is told to go away (HTTP/2 GOAWAY, HTTP/1.1 `Connection: close` after
//! the request in flight): requests in flight finish, and clients (the API server) handshake
//! again, with the new certificate, for their next request.
//!
//! Every request passes the [`crate::limits`] first (body size, concurrency, decode memory,
//! deadline), connections are capped, and with [`ServeConfig::client_ca_file`] only clients
//! presenting a certificate chained to that CA complete the handshake (the API server, configured
//! through its AdmissionConfiguration: docs/webhooks.md).

use crate::drain::Drain;
use crate::limits::{Guard, Limits};
use crate::metrics::WebhookMetrics;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use jiff::Timestamp;
use lbc_model::webhook_cert::{NotServing, Swap, Validity, serving, swap};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::danger::ClientCertVerifier;
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use sha2::{Digest, Sha256};
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio_rustls::TlsAcceptor;
use tracing::{debug, info, warn};

/// How often the certificate and key files are read again.
pub const CERT_RELOAD_INTERVAL: Duration = Duration::from_secs(2);
/// Longest a client may take to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest a graceful stop waits for requests in flight.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// Longest a client may take to send a request's headers (HTTP/1.1).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Requests one HTTP/2 connection may have open at once (the limits apply across connections).
const MAX_STREAMS_PER_CONNECTION: u32 = 64;

/// Where to listen, where the certificate comes from, and what a caller may cost.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// `<--webhook-bind-host>:<--webhook-bind-port>` (`0.0.0.0:9443` by default).
    pub bind: SocketAddr,
    pub source: CertSource,
    /// Body size, concurrency, decode memory, deadline and connection limits.
    pub limits: Limits,
    /// `--webhook-client-ca-file`: when set, a client must present a certificate chained to one
    /// of the PEM certificates in this file (read at start); when unset, no client certificate
    /// is asked for.
    pub client_ca_file: Option<PathBuf>,
    /// Where refusals are counted (the webhook's metrics: [`crate::WebhookState::metrics`]).
    pub metrics: WebhookMetrics,
    /// `--webhook-shutdown-delay`: after the stop signal, answer at least this long and while
    /// requests keep arriving, closing each HTTP/1.1 connection after its answer ([`crate::drain`]);
    /// zero stops at once (a process no Service routes to).
    pub shutdown_delay: Duration,
}

impl ServeConfig {
    /// Default limits, no client certificate asked for.
    pub fn new(bind: SocketAddr, source: CertSource, metrics: WebhookMetrics) -> Self {
        Self { bind, source, limits: Limits::default(), client_ca_file: None, metrics, shutdown_delay: Duration::ZERO }
    }
}

/// Where the served pair comes from.
#[derive(Clone, Debug)]
pub enum CertSource {
    /// `<--webhook-cert-dir>/<--webhook-cert-file>` (PEM chain, leaf first) and
    /// `<--webhook-cert-dir>/<--webhook-key-file>` (PEM key: PKCS#8, PKCS#1 or SEC1), re-read
    /// every [`CERT_RELOAD_INTERVAL`].
    Files { cert_file: PathBuf, key_file: PathBuf },
    /// Pairs installed by the caller into this handle.
    Managed(ServingCert),
}

/// Why the webhook server is not serving.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The certificate or key file does not exist: the webhook server is off, the rest of the
    /// controller can run.
    #[error("webhook certificate {} or key {} does not exist", cert_file.display(), key_file.display())]
    CertificateMissing { cert_file: PathBuf, key_file: PathBuf },
    /// The files exist but do not hold a usable certificate and matching key.
    #[error("webhook certificate {} / key {}: {reason}", cert_file.display(), key_file.display())]
    Certificate { cert_file: PathBuf, key_file: PathBuf, reason: String },
    /// The port could not be bound.
    #[error("cannot listen on {addr} for webhooks: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// rustls refused the configuration.
    #[error("webhook TLS configuration: {0}")]
    Tls(String),
    /// `--webhook-client-ca-file` cannot be used.
    #[error(
        "--webhook-client-ca-file {}: {reason}; expected a PEM file of the CA certificates that sign the API \
         server's webhook client certificate (docs/webhooks.md)",
        path.display()
    )]
    ClientCa { path: PathBuf, reason: String },
}

/// A certificate chain with its matching key, ready to serve.
#[derive(Clone)]
pub struct ServingPair {
    key: Arc<CertifiedKey>,
    validity: Validity,
    fingerprint: String,
}

impl std::fmt::Debug for ServingPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServingPair").field("fingerprint", &self.fingerprint).field("validity", &self.validity).finish()
    }
}

impl ServingPair {
    /// Parses a PEM certificate chain (leaf first) and key and checks that they belong together.
    pub fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> Result<Self, String> {
        let provider = rustls::crypto::aws_lc_rs::default_provider();
        Self::parse(cert_pem, key_pem, &provider)
    }

    fn parse(cert_pem: &[u8], key_pem: &[u8], provider: &CryptoProvider) -> Result<Self, String> {
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
            .collect::<Result<_, _>>()
            .map_err(|e| format!("certificate is not valid PEM: {e}"))?;
        let Some(leaf) = chain.first() else {
            return Err("certificate holds no PEM CERTIFICATE block".into());
        };
        let validity = validity_of(leaf)?;
        let fingerprint = fingerprint(leaf);
        let key =
            PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| format!("key holds no usable private key: {e}"))?;
        let key = CertifiedKey::from_der(chain, key, provider)
            .map_err(|e| format!("certificate and key do not work together: {e}"))?;
        Ok(Self { key: Arc::new(key), validity, fingerprint })
    }

    pub fn validity(&self) -> Validity {
        self.validity
    }

    /// SHA-256 of the leaf's DER, hex.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
}

/// SHA-256 of a certificate's DER, lower-case hex (how certificates are named in logs and in
/// [`lbc_model::webhook_cert`]).
pub fn fingerprint(der: &[u8]) -> String {
    hex::encode(Sha256::digest(der))
}

/// The validity window of a DER certificate.
pub fn validity_of(der: &[u8]) -> Result<Validity, String> {
    let (_, cert) =
        x509_parser::parse_x509_certificate(der).map_err(|e| format!("certificate does not parse as X.509: {e}"))?;
    let at = |t: x509_parser::time::ASN1Time| {
        Timestamp::from_second(t.timestamp()).map_err(|e| format!("certificate validity out of range: {e}"))
    };
    Ok(Validity { not_before: at(cert.validity().not_before)?, not_after: at(cert.validity().not_after)? })
}

/// The pair in service, shared by the TLS server (every handshake) and whoever installs pairs.
/// Cloning gives another handle to the same pair.
#[derive(Clone)]
pub struct ServingCert {
    current: Arc<RwLock<Option<ServingPair>>>,
    /// Bumped on every change: open connections are then told to go away.
    generation: Arc<watch::Sender<u64>>,
}

impl Default for ServingCert {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for ServingCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ServingCert").field(&self.current()).finish()
    }
}

impl ServingCert {
    /// No pair yet: handshakes fail until one is installed.
    pub fn new() -> Self {
        Self { current: Arc::new(RwLock::new(None)), generation: Arc::new(watch::channel(0).0) }
    }

    /// The pair in service.
    pub fn current(&self) -> Option<ServingPair> {
        self.current.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Offers `pair` (None: the source holds none) at `now`: it is put in service when it may be
    /// served; else the pair in service stays while it is valid; else nothing is served. Returns
    /// what happened. Installing the pair already in service changes nothing.
    pub fn offer(&self, pair: Option<ServingPair>, now: Timestamp) -> Swap {
        let mut current = self.current.write().unwrap_or_else(PoisonError::into_inner);
        let decision = swap(pair.as_ref().map(|p| &p.validity), current.as_ref().map(|p| &p.validity), now);
        let next = match decision {
            Swap::Install => pair,
            Swap::Keep => return Swap::Keep,
            Swap::Clear => None,
        };
        let changed = next.as_ref().map(ServingPair::fingerprint) != current.as_ref().map(ServingPair::fingerprint);
        *current = next;
        drop(current);
        if changed {
            self.generation.send_modify(|g| *g += 1);
        }
        decision
    }

    /// Whether a valid pair is in service at `now` (readiness).
    pub fn check(&self, now: Timestamp) -> Result<(), NotServing> {
        serving(self.current().as_ref().map(|p| &p.validity), now)
    }

    fn resolve(&self) -> Option<Arc<CertifiedKey>> {
        let current = self.current.read().unwrap_or_else(PoisonError::into_inner);
        let pair = current.as_ref()?;
        // Never an expired pair, even between two offers.
        serving(Some(&pair.validity), Timestamp::now()).ok()?;
        Some(pair.key.clone())
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }
}

/// Serves `router` over TLS until `shutdown` completes, drains ([`ServeConfig::shutdown_delay`]),
/// then stops accepting and waits (a bounded time) for requests in flight. Same as [`WebhookServer::bind`] then
/// [`WebhookServer::run`].
pub async fn serve(
    cfg: ServeConfig,
    router: Router,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    WebhookServer::bind(cfg).await?.run(router, shutdown).await
}

/// A bound webhook listener.
pub struct WebhookServer {
    listener: TcpListener,
    acceptor: TlsAcceptor,
    serving: ServingCert,
    reloader: Option<FileReloader>,
    local_addr: SocketAddr,
    limits: Limits,
    metrics: WebhookMetrics,
    client_auth: bool,
    shutdown_delay: Duration,
}

impl WebhookServer {
    /// Binds the port; with [`CertSource::Files`], loads the pair first.
    pub async fn bind(cfg: ServeConfig) -> Result<Self, ServeError> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let (serving, reloader) = match cfg.source {
            CertSource::Managed(serving) => (serving, None),
            CertSource::Files { cert_file, key_file } => {
                let exists = |p: &Path| std::fs::metadata(p).is_ok();
                if !exists(&cert_file) || !exists(&key_file) {
                    return Err(ServeError::CertificateMissing { cert_file, key_file });
                }
                let loaded = match read_pair(&cert_file, &key_file).await {
                    Ok((c, k)) => ServingPair::parse(&c, &k, &provider).map(|p| (c, k, p)),
                    Err(e) => Err(e),
                };
                crate::metrics::count_certificate_read(loaded.is_ok());
                let (cert_pem, key_pem, pair) = loaded.map_err(|reason| ServeError::Certificate {
                    cert_file: cert_file.clone(),
                    key_file: key_file.clone(),
                    reason,
                })?;
                let serving = ServingCert::new();
                if serving.offer(Some(pair), Timestamp::now()) != Swap::Install {
                    warn!(cert = %cert_file.display(), "webhook certificate is not valid now; handshakes fail until it is replaced");
                }
                let reloader = FileReloader {
                    cert_file,
                    key_file,
                    provider: provider.clone(),
                    serving: serving.clone(),
                    current: (cert_pem, key_pem),
                    last_error: None,
                };
                (serving, Some(reloader))
            }
        };
        let resolver = Arc::new(Resolver(serving.clone()));
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| ServeError::Tls(e.to_string()))?;
        let client_auth = cfg.client_ca_file.is_some();
        let builder = match &cfg.client_ca_file {
            None => builder.with_no_client_auth(),
            Some(path) => builder.with_client_cert_verifier(client_verifier(path, provider)?),
        };
        let mut tls = builder.with_cert_resolver(resolver);
        tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let listener =
            TcpListener::bind(cfg.bind).await.map_err(|source| ServeError::Bind { addr: cfg.bind, source })?;
        let local_addr = listener.local_addr().map_err(|source| ServeError::Bind { addr: cfg.bind, source })?;
        Ok(Self {
            listener,
            acceptor: TlsAcceptor::from(Arc::new(tls)),
            serving,
            reloader,
            local_addr,
            limits: cfg.limits,
            metrics: cfg.metrics,
            client_auth,
            shutdown_delay: cfg.shutdown_delay,
        })
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The pair in service.
    pub fn serving(&self) -> &ServingCert {
        &self.serving
    }

    /// Serves until `shutdown` completes and the drain after it ends ([`crate::drain`]).
    pub async fn run(self, router: Router, shutdown: impl Future<Output = ()> + Send) -> Result<(), ServeError> {
        let Self {
            listener,
            acceptor,
            serving,
            mut reloader,
            local_addr,
            limits,
            metrics,
            client_auth,
            shutdown_delay,
        } = self;
        let cert = reloader.as_ref().map(|r| r.cert_file.display().to_string());
        info!(
            addr = %local_addr,
            cert = cert.as_deref().unwrap_or("from the controller"),
            client_certificate = if client_auth { "required" } else { "not asked for" },
            max_body_bytes = limits.max_body_bytes,
            max_concurrent_requests = limits.max_concurrent_requests,
            request_timeout = ?limits.request_timeout,
            "webhook server listening (TLS 1.2+)"
        );
        let guard = Guard::new(limits, metrics.clone());
        let drain = Drain::default();
        // The drain's mark goes outermost: refusals count as traffic and close their connection too.
        let router = router
            .layer(axum::middleware::from_fn_with_state(guard, crate::limits::admit))
            .layer(axum::middleware::from_fn_with_state(drain.clone(), crate::drain::mark));
        let shutdown = async move {
            shutdown.await;
            drain.run(shutdown_delay).await;
        };
        let connections = Arc::new(Semaphore::new(limits.max_connections.max(1)));
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder.http1().timer(TokioTimer::new()).header_read_timeout(HEADER_READ_TIMEOUT);
        builder.http2().timer(TokioTimer::new()).max_concurrent_streams(MAX_STREAMS_PER_CONNECTION);
        // Connections stop (gracefully) when the server stops; each task holds a `done` sender.
        let (stop_tx, stop_rx) = watch::channel(false);
        let (done_tx, mut done_rx) = mpsc::channel::<()>(1);
        let mut reload = tokio::time::interval(CERT_RELOAD_INTERVAL);
        reload.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                _ = reload.tick() => {
                    if let Some(r) = reloader.as_mut() {
                        r.check().await;
                    }
                }
                accepted = listener.accept() => {
                    let (tcp, peer) = match accepted {
                        Ok(a) => a,
                        Err(e) => {
                            // Out of file descriptors and the like: back off instead of spinning.
                            warn!(error = %e, "webhook server: accept failed");
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            continue;
                        }
                    };
                    let Ok(slot) = connections.clone().try_acquire_owned() else {
                        // Closed at once: the client's next attempt may find a free slot.
                        metrics.refused("too_many_connections");
                        debug!(%peer, max = limits.max_connections, "webhook connection refused: too many open");
                        drop(tcp);
                        continue;
                    };
                    let conn = Conn {
                        acceptor: acceptor.clone(),
                        builder: builder.clone(),
                        service: TowerToHyperService::new(router.clone()),
                        // Subscribed before the handshake: a change during it still closes the connection.
                        changes: serving.changes(),
                        stop: stop_rx.clone(),
                        metrics: metrics.clone(),
                        _slot: slot,
                        _done: done_tx.clone(),
                    };
                    tokio::spawn(conn.serve(tcp, peer));
                }
            }
        }
        drop(listener);
        info!("webhook server stopping: no new connections, waiting for requests in flight");
        let _ = stop_tx.send(true);
        drop(done_tx);
        if tokio::time::timeout(SHUTDOWN_GRACE, done_rx.recv()).await.is_err() {
            warn!("webhook server: requests still in flight after {SHUTDOWN_GRACE:?}, stopping anyway");
        }
        Ok(())
    }
}

/// One accepted connection.
struct Conn {
    acceptor: TlsAcceptor,
    builder: auto::Builder<TokioExecutor>,
    service: TowerToHyperService<Router>,
    changes: watch::Receiver<u64>,
    stop: watch::Receiver<bool>,
    metrics: WebhookMetrics,
    /// One of the server's connection slots, held while the connection is open.
    _slot: OwnedSemaphorePermit,
    /// Dropped when the connection ends: the server's stop waits for all of them.
    _done: mpsc::Sender<()>,
}

impl Conn {
    async fn serve(self, tcp: tokio::net::TcpStream, peer: SocketAddr) {
        let Self { acceptor, builder, service, mut changes, mut stop, metrics, _slot, _done } = self;
        let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
            Ok(Ok(tls)) => tls,
            Ok(Err(e)) => {
                if client_certificate_refused(&e) {
                    metrics.refused("client_certificate");
                    debug!(%peer, error = %e, "webhook TLS handshake refused: no valid client certificate");
                } else {
                    debug!(%peer, error = %e, "webhook TLS handshake failed");
                }
                return;
            }
            Err(_) => {
                debug!(%peer, "webhook TLS handshake timed out");
                return;
            }
        };
        let conn = builder.serve_connection(TokioIo::new(tls), service).into_owned();
        tokio::pin!(conn);
        let why = tokio::select! {
            res = conn.as_mut() => {
                if let Err(e) = res {
                    debug!(%peer, error = %e, "webhook connection ended with an error");
                }
                return;
            }
            Ok(()) = changes.changed() => "certificate changed",
            _ = stop.wait_for(|s| *s) => "server stopping",
        };
        debug!(%peer, why, "webhook connection: asking the client to go away after the requests in flight");
        conn.as_mut().graceful_shutdown();
        if let Err(e) = conn.await {
            debug!(%peer, error = %e, "webhook connection ended with an error");
        }
    }
}

/// Whether a handshake failed because the client presented no certificate, or one the
/// `--webhook-client-ca-file` CA did not sign.
fn client_certificate_refused(e: &std::io::Error) -> bool {
    matches!(
        e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()),
        Some(rustls::Error::NoCertificatesPresented | rustls::Error::InvalidCertificate(_))
    )
}

/// The CA certificates of a `--webhook-client-ca-file`, or why they cannot be used (checked at
/// start, before anything connects).
pub fn client_ca_roots(path: &Path) -> Result<rustls::RootCertStore, ServeError> {
    let err = |reason: String| ServeError::ClientCa { path: path.to_path_buf(), reason };
    let pem = std::fs::read(path).map_err(|e| err(format!("cannot be read: {e}")))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| err(format!("is not valid PEM: {e}")))?;
        roots.add(cert).map_err(|e| err(format!("holds a certificate that is not a usable CA: {e}")))?;
    }
    if roots.is_empty() {
        return Err(err("holds no PEM CERTIFICATE block".into()));
    }
    Ok(roots)
}

/// A verifier that requires a client certificate chained to the CAs in `path`.
fn client_verifier(path: &Path, provider: Arc<CryptoProvider>) -> Result<Arc<dyn ClientCertVerifier>, ServeError> {
    WebPkiClientVerifier::builder_with_provider(Arc::new(client_ca_roots(path)?), provider).build().map_err(|e| {
        ServeError::ClientCa {
            path: path.to_path_buf(),
            reason: format!("cannot verify client certificates with it: {e}"),
        }
    })
}

/// Hands the pair in service to every handshake (none: the handshake fails).
#[derive(Debug)]
struct Resolver(ServingCert);

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.0.resolve()
    }
}

struct FileReloader {
    cert_file: PathBuf,
    key_file: PathBuf,
    provider: Arc<CryptoProvider>,
    serving: ServingCert,
    /// PEM bytes of the pair last read.
    current: (Vec<u8>, Vec<u8>),
    /// Last reload error reported (each distinct error is logged once).
    last_error: Option<String>,
}

impl FileReloader {
    async fn check(&mut self) {
        let (cert, key) = match read_pair(&self.cert_file, &self.key_file).await {
            Ok(pair) => pair,
            Err(e) => {
                crate::metrics::count_certificate_read(false);
                return self.report(e);
            }
        };
        if (&cert, &key) == (&self.current.0, &self.current.1) {
            crate::metrics::count_certificate_read(true);
            return;
        }
        let parsed = ServingPair::parse(&cert, &key, &self.provider);
        crate::metrics::count_certificate_read(parsed.is_ok());
        match parsed {
            Ok(pair) => {
                let fp = pair.fingerprint().to_string();
                match self.serving.offer(Some(pair), Timestamp::now()) {
                    Swap::Install => {
                        self.current = (cert, key);
                        self.last_error = None;
                        info!(cert = %self.cert_file.display(), fingerprint = %fp, "webhook certificate reloaded");
                    }
                    _ => self.report(format!("certificate {fp} is not valid now")),
                }
            }
            Err(e) => self.report(e),
        }
    }

    fn report(&mut self, e: String) {
        if self.last_error.as_ref() != Some(&e) {
            warn!(
                cert = %self.cert_file.display(),
                key = %self.key_file.display(),
                error = %e,
                "webhook certificate not reloaded; still serving the previous one"
            );
            self.last_error = Some(e);
        }
    }
}

async fn read_pair(cert_file: &Path, key_file: &Path) -> Result<(Vec<u8>, Vec<u8>), String> {
    let cert = tokio::fs::read(cert_file).await.map_err(|e| format!("cannot read {}: {e}", cert_file.display()))?;
    let key = tokio::fs::read(key_file).await.map_err(|e| format!("cannot read {}: {e}", key_file.display()))?;
    Ok((cert, key))
}
