//! Serving the webhooks over TLS 1.2+ (rustls with the aws-lc-rs provider).
//!
//! The certificate and key are read from files and read again every
//! [`CERT_RELOAD_INTERVAL`]; when either changed (cert-manager or a Secret volume rotating
//! them) new handshakes use the new pair, without a restart and without dropping open
//! connections. A pair that does not load (half-written, key not matching) is reported once
//! and the previous pair stays in use. With no certificate at all, [`serve`] returns
//! [`ServeError::CertificateMissing`] right away so the controller can keep running without
//! its webhooks (outside a cluster, in development).

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tracing::{debug, info, warn};

/// How often the certificate and key files are read again.
pub const CERT_RELOAD_INTERVAL: Duration = Duration::from_secs(2);
/// Longest a client may take to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest a graceful stop waits for requests in flight.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Where to listen and where the certificate is.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// `0.0.0.0:<--webhook-bind-port>` (9443 by default).
    pub bind: SocketAddr,
    /// `<--webhook-cert-dir>/<--webhook-cert-file>`: PEM certificate chain, leaf first.
    pub cert_file: PathBuf,
    /// `<--webhook-cert-dir>/<--webhook-key-file>`: PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key_file: PathBuf,
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
}

/// Serves `router` over TLS until `shutdown` completes, then stops accepting and waits (a
/// bounded time) for requests in flight. Same as [`WebhookServer::bind`] then
/// [`WebhookServer::run`].
pub async fn serve(
    cfg: ServeConfig,
    router: Router,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    WebhookServer::bind(cfg).await?.run(router, shutdown).await
}

/// A bound webhook listener with its certificate loaded.
pub struct WebhookServer {
    listener: TcpListener,
    acceptor: TlsAcceptor,
    reloader: CertReloader,
    local_addr: SocketAddr,
}

impl WebhookServer {
    /// Loads the certificate and binds the port.
    pub async fn bind(cfg: ServeConfig) -> Result<Self, ServeError> {
        let exists = |p: &Path| std::fs::metadata(p).is_ok();
        if !exists(&cfg.cert_file) || !exists(&cfg.key_file) {
            return Err(ServeError::CertificateMissing { cert_file: cfg.cert_file, key_file: cfg.key_file });
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let loaded = match read_pair(&cfg.cert_file, &cfg.key_file).await {
            Ok((c, k)) => certified_key(&c, &k, &provider).map(|ck| (c, k, ck)),
            Err(e) => Err(e),
        };
        let (cert_pem, key_pem, ck) = loaded.map_err(|reason| ServeError::Certificate {
            cert_file: cfg.cert_file.clone(),
            key_file: cfg.key_file.clone(),
            reason,
        })?;
        let resolver = Arc::new(Resolver(RwLock::new(Arc::new(ck))));
        let mut tls = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| ServeError::Tls(e.to_string()))?
            .with_no_client_auth()
            .with_cert_resolver(resolver.clone());
        tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let listener =
            TcpListener::bind(cfg.bind).await.map_err(|source| ServeError::Bind { addr: cfg.bind, source })?;
        let local_addr = listener.local_addr().map_err(|source| ServeError::Bind { addr: cfg.bind, source })?;
        let reloader = CertReloader {
            cert_file: cfg.cert_file,
            key_file: cfg.key_file,
            provider,
            resolver,
            current: (cert_pem, key_pem),
            last_error: None,
        };
        Ok(Self { listener, acceptor: TlsAcceptor::from(Arc::new(tls)), reloader, local_addr })
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Serves until `shutdown` completes.
    pub async fn run(self, router: Router, shutdown: impl Future<Output = ()> + Send) -> Result<(), ServeError> {
        let Self { listener, acceptor, mut reloader, local_addr } = self;
        info!(
            addr = %local_addr,
            cert = %reloader.cert_file.display(),
            "webhook server listening (TLS 1.2+, certificate reloaded on change)"
        );
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder.http1().timer(TokioTimer::new());
        builder.http2().timer(TokioTimer::new());
        let graceful = GracefulShutdown::new();
        let mut reload = tokio::time::interval(CERT_RELOAD_INTERVAL);
        reload.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                _ = reload.tick() => reloader.check().await,
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
                    let acceptor = acceptor.clone();
                    let builder = builder.clone();
                    let service = TowerToHyperService::new(router.clone());
                    let watcher = graceful.watcher();
                    tokio::spawn(async move {
                        let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                            Ok(Ok(tls)) => tls,
                            Ok(Err(e)) => {
                                debug!(%peer, error = %e, "webhook TLS handshake failed");
                                return;
                            }
                            Err(_) => {
                                debug!(%peer, "webhook TLS handshake timed out");
                                return;
                            }
                        };
                        let conn = builder.serve_connection(TokioIo::new(tls), service).into_owned();
                        if let Err(e) = watcher.watch(conn).await {
                            debug!(%peer, error = %e, "webhook connection ended with an error");
                        }
                    });
                }
            }
        }
        drop(listener);
        info!("webhook server stopping: no new connections, waiting for requests in flight");
        if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await.is_err() {
            warn!("webhook server: requests still in flight after {SHUTDOWN_GRACE:?}, stopping anyway");
        }
        Ok(())
    }
}

/// Hands the current certificate to every handshake.
#[derive(Debug)]
struct Resolver(RwLock<Arc<CertifiedKey>>);

impl Resolver {
    fn set(&self, ck: CertifiedKey) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(ck);
    }
}

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.read().unwrap_or_else(PoisonError::into_inner).clone())
    }
}

struct CertReloader {
    cert_file: PathBuf,
    key_file: PathBuf,
    provider: Arc<CryptoProvider>,
    resolver: Arc<Resolver>,
    /// PEM bytes of the pair in use.
    current: (Vec<u8>, Vec<u8>),
    /// Last reload error reported (each distinct error is logged once).
    last_error: Option<String>,
}

impl CertReloader {
    async fn check(&mut self) {
        let (cert, key) = match read_pair(&self.cert_file, &self.key_file).await {
            Ok(pair) => pair,
            Err(e) => return self.report(e),
        };
        if (&cert, &key) == (&self.current.0, &self.current.1) {
            return;
        }
        match certified_key(&cert, &key, &self.provider) {
            Ok(ck) => {
                self.resolver.set(ck);
                self.current = (cert, key);
                self.last_error = None;
                info!(cert = %self.cert_file.display(), "webhook certificate reloaded");
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

/// Parses a PEM certificate chain and key and checks that they belong together.
fn certified_key(cert_pem: &[u8], key_pem: &[u8], provider: &CryptoProvider) -> Result<CertifiedKey, String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("certificate file is not valid PEM: {e}"))?;
    if chain.is_empty() {
        return Err("certificate file holds no PEM CERTIFICATE block".into());
    }
    let key =
        PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| format!("key file holds no usable private key: {e}"))?;
    CertifiedKey::from_der(chain, key, provider).map_err(|e| format!("certificate and key do not work together: {e}"))
}
