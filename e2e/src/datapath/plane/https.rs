//! HTTPS listeners: TLS termination with rustls (blocking: `ServerConnection` + `StreamOwned` on
//! the connection's thread), then the decrypted stream served like an HTTP listener's
//! ([`super::serve_requests`]: rules, forward, redirect, fixed response).
//!
//! The listener's certificates and private keys are read from the emulator
//! (`GET /_awsemu/certificate?certificate_arn=`) when its certificate list changes (a certificate
//! imported again under the same ARN changes its fingerprint, so the list); they are cached by ARN
//! and fingerprint. The certificate presented is chosen per ClientHello by [`tls::select`] (SNI,
//! then what the client supports, as AWS documents it). A listener whose certificates cannot be
//! fetched or read has its connections closed, never served in plain text; it is retried every
//! [`RETRY`].
//!
//! Known gaps: ALPN offers `http/1.1` only (a real ALB also negotiates `h2`); TLS 1.2 and 1.3 with
//! rustls' default cipher suites whatever the listener's `ssl_policy` (not modelled); no mutual
//! TLS.

use super::model::{ListenerCertView, ListenerView};
use super::tls::{self, CertInfo, Listed};
use super::wire::{self, Endpoint};
use super::{Plane, log, now_unix, peer_ip, serve_requests, urlencode};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{ServerConfig, ServerConnection, StreamOwned};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A listener's TLS configuration, or why it has none (its connections are then closed).
pub type TlsConfig = Result<Arc<ServerConfig>, String>;

/// How soon a listener whose certificates failed is tried again.
pub const RETRY: Duration = Duration::from_secs(2);

/// How long a client may take over its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

fn provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::aws_lc_rs::default_provider()
}

/// `/_awsemu/certificate`'s answer.
#[derive(Deserialize)]
struct CertificateView {
    certificate: String,
    certificate_chain: Option<String>,
    private_key: String,
}

/// One certificate ready to present.
#[derive(Debug)]
pub struct Loaded {
    pub info: CertInfo,
    pub key: Arc<CertifiedKey>,
}

impl Loaded {
    /// The certificate (leaf first, then its chain) with its private key, all PEM.
    pub fn from_pem(certificate: &str, chain: Option<&str>, private_key: &str) -> Result<Self, String> {
        let certs = |pem: &str, what: &str| {
            CertificateDer::pem_slice_iter(pem.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("{what} is not PEM certificates: {e}"))
        };
        let mut der = certs(certificate, "the certificate")?;
        let leaf = der.first().ok_or("the certificate PEM holds no CERTIFICATE block")?;
        let info = CertInfo::from_der(leaf)?;
        der.extend(certs(chain.unwrap_or_default(), "the certificate chain")?);
        let key = PrivateKeyDer::from_pem_slice(private_key.as_bytes())
            .map_err(|e| format!("the private key is not a PEM private key: {e}"))?;
        let key = CertifiedKey::from_der(der, key, &provider())
            .map_err(|e| format!("the private key does not go with the certificate: {e}"))?;
        Ok(Self { info, key: Arc::new(key) })
    }
}

/// Chooses the certificate per ClientHello.
#[derive(Debug)]
struct SniResolver {
    listed: Vec<Listed>,
    keys: Vec<Arc<CertifiedKey>>,
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let schemes = hello.signature_schemes();
        let i = tls::select(&self.listed, hello.server_name(), now_unix() as i64, |i| {
            self.keys[i].key.choose_scheme(schemes).is_some()
        })?;
        Some(self.keys[i].clone())
    }
}

/// A listener's TLS configuration for its certificates, each with whether it is the default.
pub fn server_config(certs: &[(Arc<Loaded>, bool)]) -> TlsConfig {
    if !certs.iter().any(|(_, default)| *default) {
        return Err("no default certificate".into());
    }
    let resolver = SniResolver {
        listed: certs.iter().map(|(c, d)| Listed { info: c.info.clone(), is_default: *d }).collect(),
        keys: certs.iter().map(|(c, _)| c.key.clone()).collect(),
    };
    let mut cfg = ServerConfig::builder_with_provider(Arc::new(provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS versions: {e}"))?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(resolver));
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

/// What a listener's configuration was built from.
struct Built {
    certificates: Vec<ListenerCertView>,
    result: Result<(), String>,
    at: Instant,
}

/// The poller's side: the HTTPS listeners' configurations and the certificates they use.
#[derive(Default)]
pub struct Certs {
    cache: HashMap<(String, Option<String>), Arc<Loaded>>,
    built: BTreeMap<u16, Built>,
}

impl Certs {
    /// The new configurations of the HTTPS listeners among `listeners` whose certificates changed
    /// since the last call (or failed and are due for a retry), each logged once.
    pub fn update(&mut self, ep: &Endpoint, listeners: &BTreeMap<u16, ListenerView>) -> Vec<(u16, TlsConfig)> {
        let mut changed = Vec::new();
        for (port, l) in listeners.iter().filter(|(_, l)| l.protocol == "HTTPS") {
            let previous = self.built.remove(port);
            let due = previous
                .as_ref()
                .is_none_or(|b| b.certificates != l.certificates || (b.result.is_err() && b.at.elapsed() >= RETRY));
            if !due {
                self.built.extend(previous.map(|b| (*port, b)));
                continue;
            }
            let config = self.build(ep, &l.certificates);
            let result = config.as_ref().map(|_| ()).map_err(Clone::clone);
            let same_failure = previous.is_some_and(|b| b.certificates == l.certificates && b.result == result);
            if !same_failure {
                match &result {
                    Ok(()) => log(format_args!(
                        "listener port={port} terminates TLS with {} certificate(s) (default {})",
                        l.certificates.len(),
                        l.certificates.iter().find(|c| c.is_default).map_or("?", |c| &c.certificate_arn)
                    )),
                    Err(e) => log(format_args!("listener port={port} (HTTPS): {e}; closing its connections")),
                }
                changed.push((*port, config));
            }
            let certificates = l.certificates.clone();
            self.built.insert(*port, Built { certificates, result, at: Instant::now() });
        }
        self.built.retain(|port, _| listeners.get(port).is_some_and(|l| l.protocol == "HTTPS"));
        let used: Vec<(String, Option<String>)> =
            self.built.values().flat_map(|b| b.certificates.iter().map(cache_key)).collect();
        self.cache.retain(|k, _| used.contains(k));
        changed
    }

    fn build(&mut self, ep: &Endpoint, certificates: &[ListenerCertView]) -> TlsConfig {
        let mut certs = Vec::new();
        for c in certificates {
            let key = cache_key(c);
            let loaded = match self.cache.get(&key) {
                Some(l) => l.clone(),
                None => {
                    let l = Arc::new(fetch(ep, &c.certificate_arn).map_err(|e| format!("{}: {e}", c.certificate_arn))?);
                    self.cache.insert(key, l.clone());
                    l
                }
            };
            certs.push((loaded, c.is_default));
        }
        server_config(&certs)
    }
}

fn cache_key(c: &ListenerCertView) -> (String, Option<String>) {
    (c.certificate_arn.clone(), c.fingerprint.clone())
}

fn fetch(ep: &Endpoint, arn: &str) -> Result<Loaded, String> {
    let v = wire::get_json(ep, &format!("/_awsemu/certificate?certificate_arn={}", urlencode(arn)))
        .map_err(|e| format!("{e:#}"))?;
    let v: CertificateView = serde_json::from_value(v).map_err(|e| format!("the certificate view: {e}"))?;
    Loaded::from_pem(&v.certificate, v.certificate_chain.as_deref(), &v.private_key)
}

/// Serves one client connection of an HTTPS listener: the handshake, then its requests.
pub(super) fn serve(plane: Arc<Plane>, client: TcpStream, port: u16) {
    // Without a configuration the connection is closed (dropped).
    let Some(Ok(config)) = plane.lock().tls.get(&port).cloned() else { return };
    let _ = client.set_nodelay(true);
    let peer = peer_ip(&client);
    let Ok(conn) = ServerConnection::new(config) else { return };
    let mut tls = StreamOwned::new(conn, client);
    let _ = tls.sock.set_read_timeout(Some(HANDSHAKE_TIMEOUT));
    while tls.conn.is_handshaking() {
        if let Err(e) = tls.conn.complete_io(&mut tls.sock) {
            if e.kind() != std::io::ErrorKind::UnexpectedEof {
                log(format_args!("listener port={port} TLS handshake with {peer} failed: {e}"));
            }
            return;
        }
    }
    let _ = tls.sock.set_read_timeout(None);
    serve_requests(&plane, &mut tls, peer, port);
    tls.conn.send_close_notify();
    let _ = tls.flush();
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::datapath::plane::{Config, model};
    use rustls::pki_types::ServerName;
    use rustls::{ClientConfig, ClientConnection, RootCertStore};
    use serde_json::json;
    use std::io::{BufRead, BufReader, Read};
    use std::net::{IpAddr, TcpListener};

    /// A self-signed certificate for `names`, ECDSA P-256 or RSA 2048: (certificate, key) PEM.
    fn self_signed(names: &[&str], alg: &'static rcgen::SignatureAlgorithm) -> (String, String) {
        let key = rcgen::KeyPair::generate_for(alg).unwrap();
        let params = rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
        (params.self_signed(&key).unwrap().pem(), key.serialize_pem())
    }

    fn loaded(pem: &(String, String)) -> Arc<Loaded> {
        Arc::new(Loaded::from_pem(&pem.0, None, &pem.1).unwrap())
    }

    fn der(pem: &(String, String)) -> Vec<u8> {
        CertificateDer::from_pem_slice(pem.0.as_bytes()).unwrap().to_vec()
    }

    /// A client trusting `roots` (self-signed); `rsa_only`: it offers RSA signature schemes only.
    fn client_config(roots: &[&(String, String)], rsa_only: bool) -> Arc<ClientConfig> {
        let mut provider = provider();
        if rsa_only {
            let algs = &mut provider.signature_verification_algorithms;
            let rsa: Vec<_> =
                algs.mapping.iter().filter(|(s, _)| format!("{s:?}").starts_with("RSA")).copied().collect();
            algs.mapping = Box::leak(rsa.into_boxed_slice());
        }
        let mut store = RootCertStore::empty();
        for r in roots {
            store.add(CertificateDer::from(der(r))).unwrap();
        }
        let cfg = ClientConfig::builder_with_provider(Arc::new(provider))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(store)
            .with_no_client_auth();
        Arc::new(cfg)
    }

    /// The end-entity certificate the server presents to a client connecting to `name` (a DNS
    /// name: SNI; an IP address: none), handshaking in memory; the client's error when it
    /// refuses it.
    fn presented(server: &TlsConfig, client: &Arc<ClientConfig>, name: &str) -> Result<Vec<u8>, String> {
        let mut s = ServerConnection::new(server.clone().unwrap()).unwrap();
        let mut c = ClientConnection::new(client.clone(), ServerName::try_from(name.to_string()).unwrap()).unwrap();
        while c.is_handshaking() {
            let mut buf = Vec::new();
            c.write_tls(&mut buf).unwrap();
            s.read_tls(&mut buf.as_slice()).unwrap();
            s.process_new_packets().unwrap();
            buf.clear();
            s.write_tls(&mut buf).unwrap();
            c.read_tls(&mut buf.as_slice()).unwrap();
            c.process_new_packets().map_err(|e| e.to_string())?;
        }
        Ok(c.peer_certificates().unwrap()[0].to_vec())
    }

    #[test]
    fn handshakes_present_the_certificate_chosen_by_sni() {
        let a = self_signed(&["a.example.com"], &rcgen::PKCS_ECDSA_P256_SHA256);
        let b = self_signed(&["*.b.example.com"], &rcgen::PKCS_ECDSA_P256_SHA256);
        let server = server_config(&[(loaded(&a), true), (loaded(&b), false)]);
        let client = client_config(&[&a, &b], false);
        assert_eq!(presented(&server, &client, "x.b.example.com"), Ok(der(&b)));
        assert_eq!(presented(&server, &client, "X.B.Example.com"), Ok(der(&b)));
        assert_eq!(presented(&server, &client, "a.example.com"), Ok(der(&a)));
        // No match, no SNI: the default, which the client refuses for that name.
        for name in ["y.x.b.example.com", "127.0.0.1"] {
            let e = presented(&server, &client, name).unwrap_err();
            assert!(
                e.contains(&format!(
                    "not valid for name \"{name}\"; certificate is only valid for DnsName(\"a.example.com\")"
                )),
                "{e}"
            );
        }
    }

    // "the load balancer selects the best certificate that the client can support": ECDSA first,
    // RSA for a client that takes RSA signatures only.
    #[test]
    fn handshakes_present_what_the_client_supports() {
        let d = self_signed(&["d.example.com"], &rcgen::PKCS_ECDSA_P256_SHA256);
        let ec = self_signed(&["c.example.com"], &rcgen::PKCS_ECDSA_P256_SHA256);
        let rsa = self_signed(&["*.example.com"], &rcgen::PKCS_RSA_SHA256);
        let server = server_config(&[(loaded(&d), true), (loaded(&rsa), false), (loaded(&ec), false)]);
        assert_eq!(presented(&server, &client_config(&[&d, &ec, &rsa], false), "c.example.com"), Ok(der(&ec)));
        assert_eq!(presented(&server, &client_config(&[&d, &ec, &rsa], true), "c.example.com"), Ok(der(&rsa)));
    }

    #[test]
    fn certificates_must_come_with_their_key_and_a_default() {
        let a = self_signed(&["a.example.com"], &rcgen::PKCS_ECDSA_P256_SHA256);
        let b = self_signed(&["b.example.com"], &rcgen::PKCS_ECDSA_P256_SHA256);
        let e = Loaded::from_pem(&a.0, None, &b.1).unwrap_err();
        assert!(e.contains("does not go with the certificate"), "{e}");
        let e = Loaded::from_pem("junk", None, &a.1).unwrap_err();
        assert!(e.contains("no CERTIFICATE block"), "{e}");
        assert!(Loaded::from_pem(&a.0, None, "junk").unwrap_err().contains("not a PEM private key"));
        // The chain follows the certificate.
        let with_chain = Loaded::from_pem(&a.0, Some(&b.0), &a.1).unwrap();
        assert_eq!(with_chain.key.cert.iter().map(|c| c.to_vec()).collect::<Vec<_>>(), [der(&a), der(&b)]);
        assert_eq!(server_config(&[(loaded(&a), false)]).unwrap_err(), "no default certificate");
    }

    /// A target answering each request with `ok` and handing the request's head to the test.
    pub(in crate::datapath::plane) fn target() -> (u16, std::sync::mpsc::Receiver<String>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for mut s in l.incoming().map_while(Result::ok) {
                let mut head = String::new();
                let mut r = BufReader::new(s.try_clone().unwrap());
                while r.read_line(&mut head).unwrap_or(0) > 2 && !head.ends_with("\r\n\r\n") {}
                let _ = tx.send(head);
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
            }
        });
        (port, rx)
    }

    /// A data plane for one HTTPS listener on 127.0.0.1 (on a free port), its target group `tg`
    /// holding `target_port`: the port.
    fn https_plane(certs: TlsConfig, target_port: u16) -> u16 {
        serving_plane(
            json!({
                "protocol": "HTTPS",
                "default_actions": [{"type": "fixed-response", "status_code": 200, "content_type": "text/plain",
                                     "message_body": "hello"}],
                "rules": [
                    {"priority": 1, "conditions": [{"field": "path-pattern", "values": ["/old"]}],
                     "actions": [{"type": "redirect", "config": {"RedirectConfig": {
                         "Protocol": "#{protocol}", "Path": "/new", "StatusCode": "HTTP_301"}}}]},
                    {"priority": 2, "conditions": [{"field": "path-pattern", "values": ["/app"]}],
                     "actions": [{"type": "forward", "target_groups": [{"arn": "tg", "weight": 1}]}]}],
            }),
            target_port,
            Some(certs),
        )
    }

    /// A data plane serving one listener on 127.0.0.1 (on a free port, set as the view's `port`):
    /// `view` is the listener's view, its target group `tg` holds `target_port`, `certs` are an
    /// HTTPS listener's. Returns the port.
    pub(in crate::datapath::plane) fn serving_plane(
        mut view: serde_json::Value,
        target_port: u16,
        certs: Option<TlsConfig>,
    ) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cfg = Config {
            emulator: "127.0.0.1:9".parse().unwrap(),
            load_balancer_arn: "lb".into(),
            listen: IpAddr::from([127, 0, 0, 1]),
            poll: Duration::from_millis(100),
            registration_propagation_seconds: 0.0,
            deregistration_propagation_seconds: 0.0,
            min_timeout: Duration::from_millis(100),
            min_interval: Duration::from_millis(50),
            connect_timeout: Duration::from_secs(2),
            request_timeout: Duration::from_secs(5),
            status_file: None,
        };
        let plane = Arc::new(Plane::new(cfg));
        view["port"] = json!(port);
        let view: ListenerView = serde_json::from_value(view).unwrap();
        let group: model::TargetGroupView = serde_json::from_value(json!({
            "target_group_arn": "tg", "name": "tg", "deregistration_delay_seconds": 0, "time_scale": 1.0,
            "health_check": {"protocol": "TCP", "port": "traffic-port", "interval_seconds": 30,
                             "timeout_seconds": 5, "healthy_threshold": 3, "unhealthy_threshold": 3},
            "targets": [{"id": "127.0.0.1", "port": target_port, "registered_at": now_unix()}], "draining": [],
        }))
        .unwrap();
        {
            let mut st = plane.lock();
            st.targets.apply_view(&group, now_unix(), model::Propagation::both(0.0));
            st.listeners.insert(port, view);
            if let Some(certs) = certs {
                st.tls.insert(port, certs);
            }
        }
        std::thread::spawn(move || super::super::accept_loop(plane, listener, port));
        port
    }

    /// A client trusting `roots` (self-signed), connected to 127.0.0.1:`port` for `sni`.
    fn connect(port: u16, roots: &[&(String, String)], sni: &str) -> StreamOwned<ClientConnection, TcpStream> {
        let name = ServerName::try_from(sni.to_string()).unwrap();
        let conn = ClientConnection::new(client_config(roots, false), name).unwrap();
        StreamOwned::new(conn, TcpStream::connect(("127.0.0.1", port)).unwrap())
    }

    /// One request on the connection; the response with its `content-length` body.
    pub(in crate::datapath::plane) fn exchange(s: &mut (impl Read + Write), request: &str) -> String {
        s.write_all(request.as_bytes()).unwrap();
        let mut r = BufReader::new(s);
        let mut head = String::new();
        while r.read_line(&mut head).unwrap() > 2 {}
        let len: usize = head
            .lines()
            .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length: ").map(|v| v.parse().unwrap()))
            .unwrap_or(0);
        let mut body = vec![0; len];
        r.read_exact(&mut body).unwrap();
        head + &String::from_utf8(body).unwrap()
    }

    #[test]
    fn requests_are_served_over_tls_like_an_http_listeners() {
        let a = self_signed(&["a.example.com"], &rcgen::PKCS_ECDSA_P256_SHA256);
        let b = self_signed(&["*.b.example.com"], &rcgen::PKCS_ECDSA_P256_SHA256);
        let (target_port, seen) = target();
        let port = https_plane(server_config(&[(loaded(&a), true), (loaded(&b), false)]), target_port);
        // A client that verifies the certificate for its SNI (as the conformance suite does), on one
        // keep-alive connection: fixed response, redirect, forward.
        let mut s = connect(port, &[&a, &b], "x.b.example.com");
        let out = exchange(&mut s, "GET / HTTP/1.1\r\nHost: x.b.example.com\r\n\r\n");
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n") && out.ends_with("\r\n\r\nhello"), "{out}");
        assert_eq!(s.conn.alpn_protocol(), None, "the client offered no ALPN");
        let out = exchange(&mut s, "GET /old HTTP/1.1\r\nHost: x.b.example.com\r\n\r\n");
        assert!(out.contains(&format!("location: https://x.b.example.com:{port}/new\r\n")), "#{{protocol}}: {out}");
        let out = exchange(&mut s, "GET /app HTTP/1.1\r\nHost: x.b.example.com\r\nConnection: close\r\n\r\n");
        assert!(out.ends_with("connection: close\r\n\r\nok"), "{out}");
        let head = seen.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(head.contains("x-forwarded-proto: https\r\n"), "{head}");
        assert!(head.contains(&format!("x-forwarded-port: {port}\r\n")), "{head}");
        // The client's close is answered with close_notify: a clean end of the stream.
        let mut rest = Vec::new();
        assert_eq!(s.read_to_end(&mut rest).unwrap(), 0);
        // The default certificate when the list has no match: for its own name, and for a name no
        // certificate covers, which a verifying client refuses.
        let mut s = connect(port, &[&a, &b], "a.example.com");
        let out = exchange(&mut s, "GET / HTTP/1.1\r\nHost: a.example.com\r\nConnection: close\r\n\r\n");
        assert!(out.ends_with("hello"), "{out}");
        let mut s = connect(port, &[&a, &b], "c.example.com");
        let e = s.write_all(b"GET / HTTP/1.1\r\n\r\n").and_then(|()| s.read(&mut [0; 1])).unwrap_err();
        assert!(e.to_string().contains("only valid for DnsName(\"a.example.com\")"), "{e}");
    }

    /// An emulator answering `/_awsemu/certificate` from `certs` (ARN → PEM pair), 404 otherwise;
    /// counts the requests.
    fn fake_emulator(certs: HashMap<String, (String, String)>) -> (Endpoint, Arc<std::sync::atomic::AtomicUsize>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let ep = Endpoint::Tcp(l.local_addr().unwrap());
        let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let n = count.clone();
        std::thread::spawn(move || {
            for mut s in l.incoming().map_while(Result::ok) {
                n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut line = String::new();
                BufReader::new(s.try_clone().unwrap()).read_line(&mut line).unwrap();
                let arn = line.split(['=', ' ']).nth(2).unwrap_or_default().replace("%3A", ":").replace("%2F", "/");
                let (status, body) = match certs.get(&arn) {
                    Some((c, k)) => (200, json!({"certificate": c, "certificate_chain": null, "private_key": k})),
                    None => (404, json!({"error": format!("certificate {arn} not found in ACM")})),
                };
                let body = body.to_string();
                let head =
                    format!("HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len());
                let _ = s.write_all((head + &body).as_bytes());
            }
        });
        (ep, count)
    }

    fn https_listener(port: u16, certs: &[(&str, bool, &str)]) -> BTreeMap<u16, ListenerView> {
        let certificates: Vec<_> = certs
            .iter()
            .map(|(arn, d, fp)| json!({"certificate_arn": arn, "is_default": d, "fingerprint": fp}))
            .collect();
        let view = json!({"protocol": "HTTPS", "port": port, "default_actions": [], "certificates": certificates});
        BTreeMap::from([(port, serde_json::from_value(view).unwrap())])
    }

    #[test]
    fn certificates_are_fetched_when_the_list_changes_and_cached() {
        let pems = [
            self_signed(&["a.example.com"], &rcgen::PKCS_ECDSA_P256_SHA256),
            self_signed(&["b.example.com"], &rcgen::PKCS_ECDSA_P256_SHA256),
        ];
        let (ep, fetched) =
            fake_emulator(HashMap::from([("arn:a".into(), pems[0].clone()), ("arn:b".into(), pems[1].clone())]));
        let fetches = || fetched.load(std::sync::atomic::Ordering::SeqCst);
        let mut certs = Certs::default();
        let changed = certs.update(&ep, &https_listener(443, &[("arn:a", true, "1"), ("arn:b", false, "1")]));
        assert!(matches!(changed.as_slice(), [(443, Ok(_))]), "{changed:?}");
        assert_eq!(fetches(), 2);
        assert!(certs.update(&ep, &https_listener(443, &[("arn:a", true, "1"), ("arn:b", false, "1")])).is_empty());
        assert_eq!(fetches(), 2, "unchanged: nothing fetched");
        // b imported again (new fingerprint): b fetched again, a from the cache.
        let changed = certs.update(&ep, &https_listener(443, &[("arn:a", true, "1"), ("arn:b", false, "2")]));
        assert_eq!((changed.len(), fetches()), (1, 3));
        // An unknown certificate: the listener has an error naming it, logged and retried after RETRY.
        let unknown = https_listener(443, &[("arn:a", true, "1"), ("arn:c", false, "1")]);
        let changed = certs.update(&ep, &unknown);
        let [(443, Err(e))] = changed.as_slice() else { panic!("{changed:?}") };
        assert!(e.starts_with("arn:c: ") && e.contains("HTTP 404") && e.contains("certificate arn:c not found"), "{e}");
        assert!(certs.update(&ep, &unknown).is_empty());
        assert_eq!(fetches(), 4, "no retry before RETRY");
        // Gone (or no longer HTTPS): forgotten with its certificates.
        assert!(certs.update(&ep, &BTreeMap::new()).is_empty());
        assert!(certs.built.is_empty() && certs.cache.is_empty());
    }

    #[test]
    fn a_listener_without_certificates_closes_its_connections() {
        let a = self_signed(&["a.example.com"], &rcgen::PKCS_ECDSA_P256_SHA256);
        let port = https_plane(Err("arn: not found".into()), 9);
        let mut s = connect(port, &[&a], "a.example.com");
        let e = s.write_all(b"GET / HTTP/1.1\r\n\r\n").and_then(|()| s.read(&mut [0; 1]));
        assert!(matches!(&e, Ok(0)) || e.is_err(), "{e:?}: no plain-text answer");
    }
}
