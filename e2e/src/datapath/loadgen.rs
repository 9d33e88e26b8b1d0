//! `lbc-loadgen`'s engine: a steady request rate against one address from inside the VPC
//! namespace, on new connections (one request each, `Connection: close`) and on keep-alive
//! connections (one per client, reused), counting successes, failures by kind and the pods that
//! answered (the podserver's body).
//!
//! Failure kinds: `refused` (connect refused), `reset` (connection reset / broken pipe),
//! `closed` (EOF before a whole response), `timeout` (connect or response), `http_5xx`,
//! `http_other` (any other non-2xx), `other`.
//!
//! A keep-alive client whose *reused* connection is closed or reset before any byte of the
//! response arrived reconnects and sends the request again, once, as HTTP/1.1 clients do for
//! idempotent requests (RFC 9112 §9.3.1): that is how a server's graceful close of an idle
//! connection looks from the client. Such retries are counted apart (`stale_retries`), never as
//! successes of the first attempt; a second failure counts as a failure.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct Config {
    pub target: SocketAddr,
    /// Requests per second, all clients together.
    pub rate: f64,
    /// Share of the requests sent on new connections (0..=1); the rest go over keep-alive clients.
    pub new_connection_share: f64,
    pub keepalive_clients: usize,
    /// Threads sending the new-connection requests (each waits for its answer).
    pub new_connection_workers: usize,
    pub timeout: Duration,
    pub path: String,
    /// The `Host` header (default: the target address), e.g. for an ALB's host-header rules.
    pub host: Option<String>,
    /// Stops after this long; else at `stop`.
    pub duration: Option<Duration>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Counts {
    pub sent: u64,
    pub ok: u64,
    pub failed: u64,
    pub failures: BTreeMap<String, u64>,
    pub pods: BTreeMap<String, u64>,
}

impl Counts {
    fn add(&mut self, r: &Outcome) {
        self.sent += 1;
        match r {
            Outcome::Ok(pod) => {
                self.ok += 1;
                *self.pods.entry(pod.clone()).or_default() += 1;
            }
            Outcome::Failed(kind) => {
                self.failed += 1;
                *self.failures.entry((*kind).to_string()).or_default() += 1;
            }
        }
    }
}

/// What a run counted; printed as JSON.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Summary {
    pub target: String,
    pub seconds: f64,
    pub rate_asked: f64,
    pub rate_achieved: f64,
    #[serde(flatten)]
    pub total: Counts,
    pub new_connection: Counts,
    pub keep_alive: Counts,
    pub stale_retries: u64,
    pub latency_ms: Latency,
    /// Per second since the start (when asked for).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_second: Vec<Counts>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Latency {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Ok(String),
    Failed(&'static str),
}

#[derive(Default)]
struct Tally {
    new_connection: Counts,
    keep_alive: Counts,
    per_second: Vec<Counts>,
    stale_retries: u64,
    latencies_us: Vec<u64>,
}

struct Shared {
    cfg: Config,
    start: Instant,
    end: Option<Instant>,
    stop: Arc<AtomicBool>,
    tally: Mutex<Tally>,
}

impl Shared {
    fn record(&self, keep_alive: bool, r: &Outcome, took: Duration) {
        let sec = self.start.elapsed().as_secs() as usize;
        let mut t = self.tally.lock().unwrap_or_else(|p| p.into_inner());
        if keep_alive {
            t.keep_alive.add(r)
        } else {
            t.new_connection.add(r)
        }
        if t.per_second.len() <= sec {
            t.per_second.resize(sec + 1, Counts::default());
        }
        t.per_second[sec].add(r);
        if matches!(r, Outcome::Ok(_)) {
            t.latencies_us.push(took.as_micros() as u64);
        }
    }

    fn done(&self, due: Instant) -> bool {
        self.stop.load(Ordering::Relaxed) || self.end.is_some_and(|e| due >= e)
    }

    /// Sleeps until `due` in short steps, so a stop is noticed; false when stopped.
    fn wait_until(&self, due: Instant) -> bool {
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return false;
            }
            let now = Instant::now();
            if now >= due {
                return true;
            }
            std::thread::sleep((due - now).min(Duration::from_millis(50)));
        }
    }
}

/// Runs until `cfg.duration` passes or `stop` is set; `per_second` keeps the per-second counts.
pub fn run(cfg: Config, stop: Arc<AtomicBool>, per_second: bool) -> Summary {
    let start = Instant::now();
    let shared = Arc::new(Shared { end: cfg.duration.map(|d| start + d), cfg, start, stop, tally: Mutex::default() });
    let cfg = &shared.cfg;
    let share = cfg.new_connection_share.clamp(0.0, 1.0);
    let new_rate = cfg.rate * share;
    let ka_clients = if share >= 1.0 { 0 } else { cfg.keepalive_clients.max(1) };
    let ka_rate = if ka_clients == 0 { 0.0 } else { cfg.rate * (1.0 - share) / ka_clients as f64 };
    let mut threads = Vec::new();
    if new_rate > 0.0 {
        let slot = Arc::new(AtomicU64::new(0));
        for _ in 0..cfg.new_connection_workers.max(1) {
            let (s, slot) = (shared.clone(), slot.clone());
            threads.push(std::thread::spawn(move || {
                loop {
                    let i = slot.fetch_add(1, Ordering::Relaxed);
                    let due = s.start + Duration::from_secs_f64(i as f64 / new_rate);
                    if s.done(due) || !s.wait_until(due) {
                        return;
                    }
                    let t = Instant::now();
                    let r = one_shot(&s.cfg);
                    s.record(false, &r, t.elapsed());
                }
            }));
        }
    }
    for c in 0..ka_clients {
        let s = shared.clone();
        threads.push(std::thread::spawn(move || {
            let phase = c as f64 / (ka_clients as f64 * ka_rate);
            let mut conn: Option<KeepAlive> = None;
            for i in 0u64.. {
                let due = s.start + Duration::from_secs_f64(phase + i as f64 / ka_rate);
                if s.done(due) || !s.wait_until(due) {
                    return;
                }
                let t = Instant::now();
                let (r, retried) = keep_alive_request(&s.cfg, &mut conn);
                if retried {
                    s.tally.lock().unwrap_or_else(|p| p.into_inner()).stale_retries += 1;
                }
                s.record(true, &r, t.elapsed());
            }
        }));
    }
    for t in threads {
        let _ = t.join();
    }
    let seconds = start.elapsed().as_secs_f64();
    let mut t = std::mem::take(&mut *shared.tally.lock().unwrap_or_else(|p| p.into_inner()));
    let mut total = t.new_connection.clone();
    for (k, v) in &t.keep_alive.failures {
        *total.failures.entry(k.clone()).or_default() += v;
    }
    for (k, v) in &t.keep_alive.pods {
        *total.pods.entry(k.clone()).or_default() += v;
    }
    total.sent += t.keep_alive.sent;
    total.ok += t.keep_alive.ok;
    total.failed += t.keep_alive.failed;
    t.latencies_us.sort_unstable();
    let pct = |p: f64| {
        t.latencies_us
            .get(((t.latencies_us.len() as f64 * p) as usize).min(t.latencies_us.len().saturating_sub(1)))
            .map(|us| *us as f64 / 1000.0)
            .unwrap_or(0.0)
    };
    Summary {
        target: shared.cfg.target.to_string(),
        seconds,
        rate_asked: shared.cfg.rate,
        rate_achieved: if seconds > 0.0 { total.sent as f64 / seconds } else { 0.0 },
        latency_ms: Latency { p50: pct(0.5), p99: pct(0.99), max: pct(1.0) },
        total,
        new_connection: t.new_connection,
        keep_alive: t.keep_alive,
        stale_retries: t.stale_retries,
        per_second: if per_second { t.per_second } else { Vec::new() },
    }
}

fn classify(e: &std::io::Error) -> &'static str {
    use std::io::ErrorKind::*;
    match e.kind() {
        ConnectionRefused => "refused",
        ConnectionReset | ConnectionAborted | BrokenPipe => "reset",
        TimedOut | WouldBlock => "timeout",
        UnexpectedEof => "closed",
        _ => "other",
    }
}

fn connect(cfg: &Config) -> Result<(BufReader<TcpStream>, TcpStream), &'static str> {
    let s = TcpStream::connect_timeout(&cfg.target, cfg.timeout).map_err(|e| classify(&e))?;
    let _ = s.set_nodelay(true);
    s.set_read_timeout(Some(cfg.timeout)).map_err(|e| classify(&e))?;
    s.set_write_timeout(Some(cfg.timeout)).map_err(|e| classify(&e))?;
    let w = s.try_clone().map_err(|e| classify(&e))?;
    Ok((BufReader::new(s), w))
}

/// A failed exchange: its kind, and whether any byte of the response had arrived.
struct Failure {
    kind: &'static str,
    started: bool,
}

/// Sends one GET and reads its response: (status, body, whether the server keeps the connection).
fn exchange(
    cfg: &Config,
    r: &mut BufReader<TcpStream>,
    w: &mut TcpStream,
    close: bool,
) -> Result<(u16, String, bool), Failure> {
    let req = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: lbc-loadgen\r\n{}\r\n",
        cfg.path,
        cfg.host.clone().unwrap_or_else(|| cfg.target.to_string()),
        if close { "Connection: close\r\n" } else { "" }
    );
    w.write_all(req.as_bytes()).map_err(|e| Failure { kind: classify(&e), started: false })?;
    let mut line = String::new();
    let mut started = false;
    let mut read_line = |line: &mut String, started: &mut bool| -> Result<(), Failure> {
        line.clear();
        match r.read_line(line) {
            Ok(0) => Err(Failure { kind: "closed", started: *started }),
            Ok(_) => {
                *started = true;
                Ok(())
            }
            Err(e) => Err(Failure { kind: classify(&e), started: *started }),
        }
    };
    read_line(&mut line, &mut started)?;
    let status: u16 =
        line.split_whitespace().nth(1).and_then(|c| c.parse().ok()).ok_or(Failure { kind: "other", started })?;
    let (mut length, mut keep) = (None, !close);
    loop {
        read_line(&mut line, &mut started)?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_ascii_lowercase());
            if k == "content-length" {
                length = v.parse::<usize>().ok();
            } else if k == "connection" && v.contains("close") {
                keep = false;
            }
        }
    }
    let mut body = Vec::new();
    match length {
        Some(n) => {
            body.resize(n, 0);
            r.read_exact(&mut body).map_err(|e| Failure { kind: classify(&e), started: true })?;
        }
        None => {
            keep = false;
            r.read_to_end(&mut body).map_err(|e| Failure { kind: classify(&e), started: true })?;
        }
    }
    Ok((status, String::from_utf8_lossy(&body).trim().to_string(), keep))
}

fn outcome(status: u16, body: String) -> Outcome {
    match status {
        200..=299 => Outcome::Ok(body),
        500..=599 => Outcome::Failed("http_5xx"),
        _ => Outcome::Failed("http_other"),
    }
}

fn one_shot(cfg: &Config) -> Outcome {
    let (mut r, mut w) = match connect(cfg) {
        Ok(c) => c,
        Err(kind) => return Outcome::Failed(kind),
    };
    match exchange(cfg, &mut r, &mut w, true) {
        Ok((status, body, _)) => outcome(status, body),
        Err(f) => Outcome::Failed(f.kind),
    }
}

struct KeepAlive {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

/// One request on the client's connection (opened when missing); (outcome, stale retry made).
fn keep_alive_request(cfg: &Config, conn: &mut Option<KeepAlive>) -> (Outcome, bool) {
    let mut retried = false;
    loop {
        let reused = conn.is_some();
        if !reused {
            match connect(cfg) {
                Ok((r, w)) => *conn = Some(KeepAlive { r, w }),
                Err(kind) => return (Outcome::Failed(kind), retried),
            }
        }
        let Some(c) = conn.as_mut() else { return (Outcome::Failed("other"), retried) };
        match exchange(cfg, &mut c.r, &mut c.w, false) {
            Ok((status, body, keep)) => {
                if !keep {
                    *conn = None;
                }
                return (outcome(status, body), retried);
            }
            Err(f) => {
                *conn = None;
                if reused && !f.started && !retried && matches!(f.kind, "closed" | "reset") {
                    retried = true;
                    continue;
                }
                return (Outcome::Failed(f.kind), retried);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A server answering `n` requests per connection, then closing it (idle close).
    fn server(per_conn: usize) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            for s in l.incoming() {
                let s = s.unwrap();
                std::thread::spawn(move || {
                    let mut r = BufReader::new(s.try_clone().unwrap());
                    let mut w = s;
                    for _ in 0..per_conn {
                        let mut line = String::new();
                        loop {
                            line.clear();
                            if r.read_line(&mut line).unwrap_or(0) == 0 {
                                return;
                            }
                            if line == "\r\n" {
                                break;
                            }
                        }
                        let _ = w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\npod-a\n");
                    }
                });
            }
        });
        addr
    }

    fn cfg(target: SocketAddr, share: f64) -> Config {
        Config {
            target,
            rate: 100.0,
            new_connection_share: share,
            keepalive_clients: 2,
            new_connection_workers: 2,
            timeout: Duration::from_secs(2),
            path: "/".into(),
            host: None,
            duration: Some(Duration::from_millis(500)),
        }
    }

    #[test]
    fn counts_answers_by_pod_and_retries_idle_closed_keepalives_once() {
        let addr = server(3);
        let s = run(cfg(addr, 0.5), Arc::new(AtomicBool::new(false)), true);
        assert!(s.total.sent >= 30, "{s:?}");
        assert_eq!(s.total.failed, 0, "{s:?}");
        assert_eq!(s.total.pods.get("pod-a"), Some(&s.total.ok));
        assert!(s.stale_retries > 0, "the server closes keep-alive connections every 3 requests: {s:?}");
        assert_eq!(s.per_second.iter().map(|c| c.sent).sum::<u64>(), s.total.sent);
    }

    #[test]
    fn refused_connections_are_counted_as_such() {
        let addr = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let s = run(cfg(addr, 0.5), Arc::new(AtomicBool::new(false)), false);
        assert!(s.total.failed > 0 && s.total.ok == 0);
        assert_eq!(s.total.failures.keys().collect::<Vec<_>>(), ["refused"], "{s:?}");
    }
}
