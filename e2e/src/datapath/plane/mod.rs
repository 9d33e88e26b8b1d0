//! `lbc-dataplane`'s engine: an NLB-like data plane for one load balancer, running inside the VPC
//! namespace. It follows the load balancer's listeners and target groups through the emulator's
//! views (`/_awsemu/load-balancer`, `/_awsemu/target-group`), health-checks every registered
//! target for real with the target group's settings (time-scaled like the emulator), pushes what
//! it measured (`POST /_awsemu/measured-health`) so DescribeTargetHealth answers from real health,
//! and proxies each NEW TCP connection on a listener port to a healthy registered target (round
//! robin; all registered targets when none is healthy: fail open). A connection stays on its
//! target; a deregistered target gets no new connections once the deregistration has propagated,
//! and its open ones are closed when the deregistration delay ends.
//!
//! HTTP/HTTPS listeners (an ALB's) are served request by request instead ([`http`]): each request
//! goes through the listener's rules to an action (forward: a healthy target of the chosen target
//! group, on a connection of its own; fixed-response; redirect), while the client's keep-alive
//! connection stays with the load balancer. Host, path and header conditions take wildcard values
//! or regexes ([`pattern`]); a forward action sends the request as the matched rule's transforms
//! rewrite it (host header and URL; [`transform`]), the rule having matched the request as sent.
//! Not modelled: the other action kinds (authenticate-*, jwt-validation: answered 500, logged).
//!
//! HTTPS listeners terminate TLS first ([`https`]): the listener's certificates and keys come from
//! the emulator (`/_awsemu/certificate`), the one presented is chosen by SNI as AWS documents it
//! ([`tls`]), and the decrypted stream is served like an HTTP listener's. NLB `TLS` listeners are
//! not terminated: their connections are proxied to the targets as TCP, TLS and all.
//!
//! [`fleet`] runs one such data plane per ALB of the emulator, each on an address of its own.
//!
//! Plain std threads: one poller, one health checker per target, one acceptor per listener and
//! one or two per client connection.

pub mod fleet;
pub mod http;
pub mod https;
pub mod model;
pub mod pattern;
pub mod tls;
pub mod transform;
pub mod wire;

use anyhow::{Context, Result};
use model::{CheckFailure, ListenerView, LoadBalancerView, TargetGroupView, TargetKey, Targets};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufReader, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use wire::Endpoint;

/// How the data plane runs.
#[derive(Clone, Debug)]
pub struct Config {
    pub emulator: Endpoint,
    pub load_balancer_arn: String,
    /// The VPC address the listeners bind (e.g. one added with `Vpc::add_address`).
    pub listen: IpAddr,
    /// How often the views are read (real time).
    pub poll: Duration,
    /// Delay before a registration reaches the data plane (health checks start; connections once
    /// healthy), in AWS seconds (multiplied by the emulator's time scale).
    pub registration_propagation_seconds: f64,
    /// Delay before a deregistration reaches the data plane (no new connections from then on), in
    /// AWS seconds (multiplied by the emulator's time scale).
    pub deregistration_propagation_seconds: f64,
    /// Lower bound of a health check's timeout after time scaling.
    pub min_timeout: Duration,
    /// Lower bound of the health-check interval after time scaling.
    pub min_interval: Duration,
    /// Connect timeout to a target for proxied connections (real time).
    pub connect_timeout: Duration,
    /// How long an HTTP listener waits for a target's response (ALB's idle timeout).
    pub request_timeout: Duration,
    /// A JSON snapshot of the targets (state, connections) written after every poll.
    pub status_file: Option<PathBuf>,
}

/// `run`'s tuning flags (everything but what names the load balancer and where it listens), shared with
/// `fleet`, which passes them on to every `run` it starts ([`Tuning::to_args`]).
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct Tuning {
    /// Milliseconds between two reads of the views.
    #[arg(long, default_value_t = 100)]
    pub poll_ms: u64,
    /// How long a registration takes to reach the data plane (health checks start, then
    /// connections once healthy), in AWS seconds (times the emulator's time scale). Real NLBs
    /// take minutes ("a few minutes for the registration process to complete and health checks
    /// to start"), far longer than a deregistration.
    #[arg(long, default_value_t = 300.0)]
    pub registration_propagation_seconds: f64,
    /// How long a deregistration takes to stop new connections to the target, in AWS seconds
    /// (times the emulator's time scale). Tens of seconds on real NLBs.
    #[arg(long, default_value_t = 50.0)]
    pub deregistration_propagation_seconds: f64,
    /// The same propagation delay both ways (overrides the two above).
    #[arg(long)]
    pub propagation_seconds: Option<f64>,
    /// Lower bound of a time-scaled health-check timeout, in milliseconds.
    #[arg(long, default_value_t = 100)]
    pub min_timeout_ms: u64,
    /// Lower bound of a time-scaled health-check interval, in milliseconds.
    #[arg(long, default_value_t = 50)]
    pub min_interval_ms: u64,
    /// Connect timeout to a target, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    pub connect_timeout_ms: u64,
    /// How long an HTTP listener waits for a target's response, in milliseconds.
    #[arg(long, default_value_t = 60000)]
    pub request_timeout_ms: u64,
}

impl Tuning {
    /// How often the views are read.
    pub fn poll(&self) -> Duration {
        Duration::from_millis(self.poll_ms.max(10))
    }

    /// The data plane's configuration for one load balancer.
    pub fn config(
        &self,
        emulator: Endpoint,
        load_balancer_arn: String,
        listen: IpAddr,
        status_file: Option<PathBuf>,
    ) -> Config {
        Config {
            emulator,
            load_balancer_arn,
            listen,
            poll: self.poll(),
            registration_propagation_seconds: self.propagation_seconds.unwrap_or(self.registration_propagation_seconds),
            deregistration_propagation_seconds: self
                .propagation_seconds
                .unwrap_or(self.deregistration_propagation_seconds),
            min_timeout: Duration::from_millis(self.min_timeout_ms),
            min_interval: Duration::from_millis(self.min_interval_ms),
            connect_timeout: Duration::from_millis(self.connect_timeout_ms),
            request_timeout: Duration::from_millis(self.request_timeout_ms),
            status_file,
        }
    }

    /// The same flags as command-line arguments (f64 values print back to the same number).
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            format!("--poll-ms={}", self.poll_ms),
            format!("--registration-propagation-seconds={}", self.registration_propagation_seconds),
            format!("--deregistration-propagation-seconds={}", self.deregistration_propagation_seconds),
        ];
        if let Some(p) = self.propagation_seconds {
            args.push(format!("--propagation-seconds={p}"));
        }
        args.extend([
            format!("--min-timeout-ms={}", self.min_timeout_ms),
            format!("--min-interval-ms={}", self.min_interval_ms),
            format!("--connect-timeout-ms={}", self.connect_timeout_ms),
            format!("--request-timeout-ms={}", self.request_timeout_ms),
        ]);
        args
    }
}

/// Unix seconds now.
pub fn now_unix() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

fn log(line: std::fmt::Arguments<'_>) {
    let ms = (now_unix() * 1000.0) as u64;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{ms} {line}");
    let _ = out.flush();
}

/// The sockets of one proxied connection (NLB: client and target; ALB: the target's), so the
/// drain can close them.
struct Conn(Vec<TcpStream>);

#[derive(Default)]
struct State {
    targets: Targets,
    groups: BTreeMap<String, TargetGroupView>,
    listeners: BTreeMap<u16, ListenerView>,
    conns: HashMap<TargetKey, BTreeMap<u64, Conn>>,
    time_scale: f64,
    health_dirty: BTreeSet<String>,
    /// HTTPS listeners' TLS configurations by port (an error: its connections are closed).
    tls: BTreeMap<u16, https::TlsConfig>,
}

struct Plane {
    cfg: Config,
    state: Mutex<State>,
    turn: AtomicUsize,
    conn_ids: AtomicU64,
    refused: AtomicU64,
}

impl Plane {
    fn new(cfg: Config) -> Self {
        Plane {
            cfg,
            state: Mutex::new(State { time_scale: 1.0, ..State::default() }),
            turn: AtomicUsize::new(0),
            conn_ids: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Runs the data plane until the process is killed (it is stateless: the emulator holds the truth).
pub fn run(cfg: Config) -> Result<()> {
    let plane = Arc::new(Plane::new(cfg));
    log(format_args!(
        "start load_balancer={} listen={} emulator={} registration_propagation_seconds={} \
         deregistration_propagation_seconds={}",
        plane.cfg.load_balancer_arn,
        plane.cfg.listen,
        plane.cfg.emulator,
        plane.cfg.registration_propagation_seconds,
        plane.cfg.deregistration_propagation_seconds
    ));
    let mut bound: BTreeSet<u16> = BTreeSet::new();
    let mut certs = https::Certs::default();
    let mut last_push = Instant::now();
    let mut failing_since: Option<Instant> = None;
    loop {
        let started = Instant::now();
        match poll_once(&plane, &mut bound, &mut certs) {
            Ok(()) => {
                if failing_since.take().is_some() {
                    log(format_args!("emulator reachable again"));
                }
            }
            Err(e) => {
                if failing_since.is_none() {
                    log(format_args!("poll failed (keeping the last known state): {e:#}"));
                    failing_since = Some(Instant::now());
                }
            }
        }
        let force = last_push.elapsed() > Duration::from_secs(2);
        if push_health(&plane, force) {
            last_push = Instant::now();
        }
        drain_and_forget(&plane);
        if let Some(path) = &plane.cfg.status_file {
            let _ = write_status(&plane, path);
        }
        std::thread::sleep(plane.cfg.poll.saturating_sub(started.elapsed()));
    }
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn poll_once(plane: &Arc<Plane>, bound: &mut BTreeSet<u16>, certs: &mut https::Certs) -> Result<()> {
    let ep = &plane.cfg.emulator;
    let lb: LoadBalancerView = serde_json::from_value(wire::get_json(
        ep,
        &format!("/_awsemu/load-balancer?load_balancer_arn={}", urlencode(&plane.cfg.load_balancer_arn)),
    )?)
    .context("parsing the load-balancer view")?;
    let listeners: BTreeMap<u16, ListenerView> = lb
        .listeners
        .into_iter()
        .filter(|l| matches!(l.protocol.as_str(), "TCP" | "TLS" | "TCP_UDP" | "HTTP" | "HTTPS"))
        .map(|l| (l.port, l))
        .collect();
    let groups: BTreeSet<String> = listeners.values().flat_map(ListenerView::all_groups).collect();
    let mut views = Vec::new();
    for arn in &groups {
        let v: TargetGroupView = serde_json::from_value(wire::get_json(
            ep,
            &format!("/_awsemu/target-group?target_group_arn={}", urlencode(arn)),
        )?)
        .with_context(|| format!("parsing the target-group view of {arn}"))?;
        views.push(v);
    }
    let tls_changes = certs.update(ep, &listeners);
    let now = now_unix();
    let mut new_checks = Vec::new();
    {
        let mut st = plane.lock();
        st.tls.extend(tls_changes);
        st.tls.retain(|port, _| listeners.get(port).is_some_and(|l| l.protocol == "HTTPS"));
        for v in &views {
            st.time_scale = v.time_scale;
            let propagation = model::Propagation {
                registration: plane.cfg.registration_propagation_seconds * v.time_scale,
                deregistration: plane.cfg.deregistration_propagation_seconds * v.time_scale,
            };
            let changes = st.targets.apply_view(v, now, propagation);
            for k in &changes.registered {
                let t = &st.targets.map[k];
                log(format_args!(
                    "registered tg={} target={}:{} effective_in_ms={:.0}",
                    v.name,
                    k.1,
                    k.2,
                    ((t.effective_at - now) * 1000.0).max(0.0)
                ));
                new_checks.push((k.clone(), t.generation));
            }
            for k in &changes.deregistered {
                let t = &st.targets.map[k];
                log(format_args!(
                    "deregistered tg={} target={}:{} stop_routing_in_ms={:.0} drain_ms={:.0}",
                    v.name,
                    k.1,
                    k.2,
                    ((t.stop_routing_at.unwrap_or(now) - now) * 1000.0).max(0.0),
                    ((t.drain_until.unwrap_or(now) - now) * 1000.0).max(0.0)
                ));
            }
            if !changes.registered.is_empty()
                || !changes.deregistered.is_empty()
                || !st.groups.contains_key(&v.target_group_arn)
            {
                st.health_dirty.insert(v.target_group_arn.clone());
            }
            st.groups.insert(v.target_group_arn.clone(), v.clone());
        }
        st.targets.retain_groups(&groups);
        st.groups.retain(|arn, _| groups.contains(arn));
        for (port, l) in &listeners {
            if st.listeners.get(port) != Some(l) {
                let kind = if l.is_http() { format!("requests ({})", l.protocol) } else { "connections (TCP)".into() };
                log(format_args!(
                    "listener port={port} forwards {kind} to {:?} ({} rule(s))",
                    l.forward_groups(),
                    l.rules.len()
                ));
                // Once per change of the listener: the requests reaching these actions get a 500.
                if l.is_http() {
                    for problem in l.problems() {
                        log(format_args!("{problem} (answered 500)"));
                    }
                    for problem in transform::problems(l) {
                        log(format_args!("{problem}"));
                    }
                }
            }
        }
        st.listeners = listeners.clone();
    }
    for (key, generation) in new_checks {
        let p = plane.clone();
        std::thread::Builder::new()
            .name(format!("hc-{}", key.1))
            .spawn(move || health_checker(p, key, generation))
            .context("spawning a health checker")?;
    }
    for port in listeners.keys() {
        if bound.contains(port) {
            continue;
        }
        let addr = SocketAddr::new(plane.cfg.listen, *port);
        let listener = TcpListener::bind(addr).with_context(|| {
            format!(
                "binding listener {addr}: the address must be on the VPC bridge (Vpc::add_address) and the port free"
            )
        })?;
        log(format_args!("listening on {addr}"));
        bound.insert(*port);
        let p = plane.clone();
        let port = *port;
        std::thread::Builder::new().name(format!("listen-{port}")).spawn(move || accept_loop(p, listener, port))?;
    }
    Ok(())
}

/// One target's health checks, from its registration's arrival until its deregistration's (or a
/// newer registration of the same target).
fn health_checker(plane: Arc<Plane>, key: TargetKey, generation: u64) {
    loop {
        let (hc, scale, wait) = {
            let st = plane.lock();
            let Some(t) = st.targets.map.get(&key).filter(|t| t.generation == generation) else { return };
            let now = now_unix();
            if t.stop_routing_at.is_some_and(|s| now >= s) || !t.health_checks_enabled {
                return;
            }
            let Some(g) = st.groups.get(&key.0) else { return };
            (g.health_check.clone(), st.time_scale, (t.effective_at - now).max(0.0))
        };
        if wait > 0.0 {
            std::thread::sleep(Duration::from_secs_f64(wait));
            continue;
        }
        let interval = Duration::from_secs_f64(hc.interval_seconds * scale).max(plane.cfg.min_interval);
        let timeout = Duration::from_secs_f64(hc.timeout_seconds * scale).max(plane.cfg.min_timeout);
        let started = Instant::now();
        let port = match &hc.port {
            Value::Number(n) => n.as_u64().and_then(|p| u16::try_from(p).ok()).unwrap_or(key.2),
            Value::String(s) => s.parse().unwrap_or(key.2),
            _ => key.2,
        };
        let result = check(&key.1, port, &hc, timeout);
        {
            let mut st = plane.lock();
            let Some(t) = st.targets.map.get_mut(&key).filter(|t| t.generation == generation) else { return };
            if t.health.record(result.clone(), hc.healthy_threshold, hc.unhealthy_threshold) {
                let detail = result.err().map(|f| f.reason().1).unwrap_or_default();
                log(format_args!(
                    "health target={}:{} {} after {} checks {detail}",
                    key.1,
                    key.2,
                    t.health.state.as_str(),
                    t.health.checks
                ));
                st.health_dirty.insert(key.0.clone());
            }
        }
        std::thread::sleep(interval.saturating_sub(started.elapsed()));
    }
}

/// One health check of `ip:port`: TCP connect, or an HTTP(S→HTTP) GET whose status must match.
fn check(ip: &str, port: u16, hc: &model::HealthCheckView, timeout: Duration) -> Result<(), CheckFailure> {
    let addr: SocketAddr = format!("{ip}:{port}").parse().map_err(|e| CheckFailure::Connect(format!("{e}")))?;
    let deadline = Instant::now() + timeout;
    let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| match e.kind() {
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => CheckFailure::Timeout,
        _ => CheckFailure::Connect(e.to_string()),
    })?;
    if !matches!(hc.protocol.as_str(), "HTTP" | "HTTPS") {
        return Ok(());
    }
    let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
    let _ = s.set_read_timeout(Some(left));
    let _ = s.set_write_timeout(Some(left));
    let path = hc.path.as_deref().filter(|p| !p.is_empty()).unwrap_or("/");
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {ip}:{port}\r\nUser-Agent: ELB-HealthChecker/2.0\r\nConnection: close\r\n\r\n"
    );
    let io_err = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => CheckFailure::Timeout,
        _ => CheckFailure::Connect(e.to_string()),
    };
    s.write_all(req.as_bytes()).map_err(io_err)?;
    // The status line is enough.
    let mut buf = Vec::with_capacity(256);
    let mut chunk = [0u8; 256];
    while !buf.windows(2).any(|w| w == b"\r\n") {
        if Instant::now() >= deadline {
            return Err(CheckFailure::Timeout);
        }
        match s.read(&mut chunk) {
            Ok(0) => return Err(CheckFailure::Connect("connection closed before a status line".into())),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(io_err(e)),
        }
    }
    let line = String::from_utf8_lossy(&buf);
    let code: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| CheckFailure::Connect(format!("bad status line {:?}", line.lines().next())))?;
    if model::matcher_accepts(hc.matcher.as_deref(), code) { Ok(()) } else { Err(CheckFailure::Code(code)) }
}

fn accept_loop(plane: Arc<Plane>, listener: TcpListener, port: u16) {
    for conn in listener.incoming() {
        let Ok(client) = conn else { continue };
        let p = plane.clone();
        let protocol = p.lock().listeners.get(&port).map(|l| l.protocol.clone());
        let _ = std::thread::Builder::new().name("conn".into()).spawn(move || match protocol.as_deref() {
            Some("HTTPS") => https::serve(p, client, port),
            Some("HTTP") => serve_http(p, client, port),
            _ => proxy(p, client, port),
        });
    }
}

/// Forwards one client connection to the target picked for it, until either side closes.
fn proxy(plane: Arc<Plane>, client: TcpStream, port: u16) {
    let _ = client.set_nodelay(true);
    let now = now_unix();
    let picked = {
        let st = plane.lock();
        let groups = st.listeners.get(&port).map(ListenerView::forward_groups).unwrap_or_default();
        let turn = plane.turn.fetch_add(1, Ordering::Relaxed);
        pick_group(&groups, turn).and_then(|tg| st.targets.pick(&tg, now, turn))
    };
    let Some(key) = picked else {
        plane.refused.fetch_add(1, Ordering::Relaxed);
        return; // no registered target: the client sees its connection closed
    };
    let Ok(addr) = format!("{}:{}", key.1, key.2).parse::<SocketAddr>() else { return };
    let upstream = match TcpStream::connect_timeout(&addr, plane.cfg.connect_timeout) {
        Ok(u) => u,
        Err(e) => {
            log(format_args!("connect target={}:{} failed: {e}", key.1, key.2));
            return;
        }
    };
    let _ = upstream.set_nodelay(true);
    let id = plane.conn_ids.fetch_add(1, Ordering::Relaxed);
    let (Ok(c2), Ok(u2), Ok(c3), Ok(u3)) =
        (client.try_clone(), upstream.try_clone(), client.try_clone(), upstream.try_clone())
    else {
        return;
    };
    {
        let mut st = plane.lock();
        match st.targets.map.get_mut(&key) {
            Some(t) => {
                t.opened += 1;
                t.active += 1;
            }
            None => return,
        }
        st.conns.entry(key.clone()).or_default().insert(id, Conn(vec![c3, u3]));
    }
    let back = std::thread::spawn(move || {
        wire::pipe(&u2, &c2, || {
            let _ = c2.shutdown(Shutdown::Write);
        })
    });
    wire::pipe(&client, &upstream, || {
        let _ = upstream.shutdown(Shutdown::Write);
    });
    let _ = back.join();
    let mut st = plane.lock();
    if let Some(m) = st.conns.get_mut(&key) {
        m.remove(&id);
    }
    if let Some(t) = st.targets.map.get_mut(&key) {
        t.active = t.active.saturating_sub(1);
    }
}

/// Serves one client connection of an HTTP listener.
fn serve_http(plane: Arc<Plane>, mut client: TcpStream, port: u16) {
    let _ = client.set_nodelay(true);
    let peer = peer_ip(&client);
    serve_requests(&plane, &mut client, peer, port);
}

fn peer_ip(client: &TcpStream) -> IpAddr {
    client.peer_addr().map(|a| a.ip()).unwrap_or(IpAddr::from([0, 0, 0, 0]))
}

/// Serves the requests of one client connection (plain, or TLS once decrypted) one by one, until
/// the client closes it or asks to.
fn serve_requests(plane: &Plane, stream: &mut (impl Read + Write), peer: IpAddr, port: u16) {
    let mut r = BufReader::new(stream);
    loop {
        let req = match http::read_request(&mut r) {
            Ok(Some(req)) => req,
            Ok(None) => return,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                let w = r.get_mut();
                let _ = w
                    .write_all(&http::own_response(400, "text/plain", &format!("{e}\n"), true))
                    .and_then(|()| w.flush());
                return;
            }
            Err(_) => return,
        };
        let close = req.wants_close();
        let resp = handle_request(plane, port, &req, peer, close);
        let w = r.get_mut();
        if w.write_all(&resp).and_then(|()| w.flush()).is_err() || close {
            return;
        }
    }
}

/// One request through the listener's rules: the response for the client.
fn handle_request(plane: &Plane, port: u16, req: &http::Request, peer: IpAddr, close: bool) -> Vec<u8> {
    let fail = |status: u16, why: &str| http::own_response(status, "text/plain", &format!("{why}\n"), close);
    let now = now_unix();
    let (picked, protocol, sent) = {
        let st = plane.lock();
        let Some(listener) = st.listeners.get(&port) else { return fail(503, "no listener on this port") };
        let Some((action, transforms)) = http::route(listener, req, peer) else {
            return fail(503, "no action for this request");
        };
        match action.kind.as_str() {
            "redirect" => {
                let local = match plane.cfg.listen {
                    IpAddr::V4(a) => a.to_string(),
                    IpAddr::V6(a) => format!("[{a}]"),
                };
                return match &action.redirect {
                    Some(Ok(r)) => match http::redirect_location(r, &listener.protocol, port, req, &local) {
                        Ok(location) => http::redirect_response(r.status, &location, close),
                        Err(e) => fail(500, &e),
                    },
                    Some(Err(e)) => fail(500, e),
                    None => fail(500, "redirect action without a parsed config"),
                };
            }
            "fixed-response" => {
                return http::own_response(
                    action.status_code.unwrap_or(200),
                    action.content_type.as_deref().unwrap_or("text/plain"),
                    action.message_body.as_deref().unwrap_or_default(),
                    close,
                );
            }
            "forward" => {
                // The rule's transforms rewrite what the target receives, not the routing decision.
                let sent = match transform::apply(transforms, req) {
                    Ok(sent) => sent,
                    Err(e) => return fail(500, &e),
                };
                let turn = plane.turn.fetch_add(1, Ordering::Relaxed);
                let picked = pick_group(&action.groups(), turn).and_then(|tg| st.targets.pick(&tg, now, turn));
                (picked, listener.protocol.clone(), sent)
            }
            other => return fail(500, &format!("action {other} is not supported by lbc-dataplane")),
        }
    };
    let Some(key) = picked else {
        plane.refused.fetch_add(1, Ordering::Relaxed);
        return fail(503, "no registered target");
    };
    let Ok(addr) = format!("{}:{}", key.1, key.2).parse::<SocketAddr>() else { return fail(502, "bad target") };
    let timed_out =
        |e: &std::io::Error| matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock);
    let mut upstream = match TcpStream::connect_timeout(&addr, plane.cfg.connect_timeout) {
        Ok(u) => u,
        Err(e) => return fail(if timed_out(&e) { 504 } else { 502 }, &format!("target {addr}: {e}")),
    };
    let _ = upstream.set_nodelay(true);
    let _ = upstream.set_read_timeout(Some(plane.cfg.request_timeout));
    let id = plane.conn_ids.fetch_add(1, Ordering::Relaxed);
    {
        let mut st = plane.lock();
        let Some(t) = st.targets.map.get_mut(&key) else { return fail(502, "target gone") };
        t.opened += 1;
        t.active += 1;
        if let Ok(u) = upstream.try_clone() {
            st.conns.entry(key.clone()).or_default().insert(id, Conn(vec![u]));
        }
    }
    let mut raw = Vec::new();
    let result =
        upstream.write_all(&sent.to_upstream(peer, &protocol, port)).and_then(|()| upstream.read_to_end(&mut raw));
    {
        let mut st = plane.lock();
        if let Some(m) = st.conns.get_mut(&key) {
            m.remove(&id);
        }
        if let Some(t) = st.targets.map.get_mut(&key) {
            t.active = t.active.saturating_sub(1);
        }
    }
    match result {
        Ok(_) => http::relay_response(&raw, close).unwrap_or_else(|| fail(502, &format!("target {addr}: no response"))),
        Err(e) => fail(if timed_out(&e) { 504 } else { 502 }, &format!("target {addr}: {e}")),
    }
}

/// A target group of the listener's forward action, by weight.
fn pick_group(groups: &[(String, u32)], turn: usize) -> Option<String> {
    let total: u32 = groups.iter().map(|(_, w)| *w).sum();
    if total == 0 {
        return groups.first().map(|(a, _)| a.clone());
    }
    let mut slot = (turn as u64 % u64::from(total)) as u32;
    for (arn, w) in groups {
        if slot < *w {
            return Some(arn.clone());
        }
        slot -= w;
    }
    None
}

/// Closes the connections of targets whose deregistration delay is over, then forgets them.
fn drain_and_forget(plane: &Plane) {
    let now = now_unix();
    let mut st = plane.lock();
    let over: Vec<TargetKey> = st
        .targets
        .map
        .iter()
        .filter(|(_, t)| t.is_deregistered() && t.drain_over(now))
        .map(|(k, _)| k.clone())
        .collect();
    for key in over {
        let Some(conns) = st.conns.remove(&key) else { continue };
        if conns.is_empty() {
            continue;
        }
        for s in conns.values().flat_map(|c| c.0.iter()) {
            let _ = s.shutdown(Shutdown::Both);
        }
        if let Some(t) = st.targets.map.get_mut(&key) {
            t.drain_closed += conns.len() as u64;
        }
        log(format_args!("drain over target={}:{} closed {} connection(s)", key.1, key.2, conns.len()));
    }
    // Kept until their proxies noticed, so the counters stay visible in the status file.
    st.targets.forget_drained(now - 5.0);
}

/// Pushes measured health for the target groups whose states changed (all of them when `force`);
/// returns whether anything was pushed.
fn push_health(plane: &Plane, force: bool) -> bool {
    let bodies: Vec<(String, Value)> = {
        let mut st = plane.lock();
        let arns: Vec<String> = if force {
            st.groups.keys().cloned().collect()
        } else {
            std::mem::take(&mut st.health_dirty).into_iter().collect()
        };
        if force {
            st.health_dirty.clear();
        }
        arns.into_iter()
            .map(|arn| {
                let targets: Vec<Value> = st
                    .targets
                    .map
                    .iter()
                    .filter(|(k, t)| k.0 == arn && !t.is_deregistered())
                    .map(|(k, t)| {
                        let (state, reason, description) = t.health.report();
                        json!({"id": k.1, "port": k.2, "state": state, "reason": reason,
                               "description": description, "registered_at": t.registered_at})
                    })
                    .collect();
                let body = json!({"target_group_arn": arn, "targets": targets});
                (arn, body)
            })
            .collect()
    };
    let mut pushed = false;
    for (arn, body) in bodies {
        match wire::post_json(&plane.cfg.emulator, "/_awsemu/measured-health", &body) {
            Ok(_) => pushed = true,
            Err(e) => {
                log(format_args!("pushing measured health of {arn} failed (retrying): {e:#}"));
                plane.lock().health_dirty.insert(arn);
            }
        }
    }
    pushed
}

fn write_status(plane: &Plane, path: &std::path::Path) -> Result<()> {
    let now = now_unix();
    let v = {
        let st = plane.lock();
        let targets: Vec<Value> = st
            .targets
            .map
            .iter()
            .map(|(k, t)| {
                json!({
                    "target_group_arn": k.0, "id": k.1, "port": k.2,
                    "state": t.health.state.as_str(), "checks": t.health.checks,
                    "routable": t.routable(now), "deregistered": t.is_deregistered(),
                    "registered_at": t.registered_at, "effective_at": t.effective_at,
                    "stop_routing_at": t.stop_routing_at, "drain_until": t.drain_until,
                    "opened": t.opened, "active": t.active, "drain_closed": t.drain_closed,
                })
            })
            .collect();
        json!({"time": now, "listeners": st.listeners.keys().collect::<Vec<_>>(), "time_scale": st.time_scale,
               "no_target": plane.refused.load(Ordering::Relaxed), "targets": targets})
    };
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&v)?)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weighted_groups_share_turns_by_weight() {
        let groups = vec![("a".to_string(), 3), ("b".to_string(), 1)];
        let picks: Vec<String> = (0..8).map(|t| pick_group(&groups, t).unwrap()).collect();
        assert_eq!(picks.iter().filter(|g| *g == "a").count(), 6);
        assert_eq!(pick_group(&[], 0), None);
    }
}
