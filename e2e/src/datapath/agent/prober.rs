//! HTTP readiness probes from inside the VPC namespace. The agent runs in the machine's own
//! namespace, which has no route to the VPC (by design), and this crate forbids the unsafe code
//! setns(2) would need; so one helper process (`lbc-node-agent probe`) runs inside the VPC
//! namespace and does the GETs for it, as the kubelet does from the node: a new connection per
//! probe, success for a status in 200..400.
//!
//! Protocol, one line each way: request `ID IP:PORT TIMEOUT_MS PATH`, answer `ID CODE` or
//! `ID ERR MESSAGE`. A small hand-written HTTP/1.1 client (std threads, one per probe).

use anyhow::{Context, Result};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<u16, String>>>>>;

/// The agent's side: a running `lbc-node-agent probe` inside the VPC namespace.
pub struct Prober {
    child: Mutex<Child>,
    stdin: Mutex<ChildStdin>,
    pending: Pending,
    next: AtomicU64,
}

impl Prober {
    /// Starts `bin probe` inside network namespace `vpc` (`ip netns exec`).
    pub fn spawn(vpc: &str, bin: &Path) -> Result<Self> {
        let mut child = Command::new("ip")
            .args(["netns", "exec", vpc])
            .arg(bin)
            .arg("probe")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting the prober {} in namespace {vpc}", bin.display()))?;
        let stdin = child.stdin.take().context("prober stdin")?;
        let stdout = child.stdout.take().context("prober stdout")?;
        let pending: Pending = Arc::default();
        let p2 = pending.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let mut it = line.splitn(2, ' ');
                let (Some(id), Some(rest)) = (it.next().and_then(|i| i.parse::<u64>().ok()), it.next()) else {
                    continue;
                };
                let answer = match rest.strip_prefix("ERR ") {
                    Some(e) => Err(e.to_string()),
                    None => rest.trim().parse::<u16>().map_err(|e| format!("prober answered {rest:?}: {e}")),
                };
                if let Some(tx) = p2.lock().expect("prober pending").remove(&id) {
                    let _ = tx.send(answer);
                }
            }
            // The prober is gone: fail whatever waits.
            for (_, tx) in p2.lock().expect("prober pending").drain() {
                let _ = tx.send(Err("the prober process exited".into()));
            }
        });
        Ok(Self { child: Mutex::new(child), stdin: Mutex::new(stdin), pending, next: AtomicU64::new(1) })
    }

    /// `GET http://addr/path`: the status code, or why there is none (refused, timeout, ...).
    pub async fn get(&self, addr: SocketAddr, path: &str, timeout: Duration) -> Result<u16, String> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().expect("prober pending").insert(id, tx);
        let line = format!("{id} {addr} {} {path}\n", timeout.as_millis().max(1));
        let sent = self.stdin.lock().expect("prober stdin").write_all(line.as_bytes());
        if let Err(e) = sent {
            self.pending.lock().expect("prober pending").remove(&id);
            return Err(format!("writing to the prober: {e}"));
        }
        match tokio::time::timeout(timeout + Duration::from_secs(2), rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err("the prober dropped the request".into()),
            Err(_) => {
                self.pending.lock().expect("prober pending").remove(&id);
                Err("the prober did not answer in time".into())
            }
        }
    }

    /// Kills the helper (idempotent).
    pub fn kill(&self) {
        let mut c = self.child.lock().expect("prober child");
        let _ = c.kill();
        let _ = c.wait();
    }
}

impl Drop for Prober {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One probe: `Ok(status)` or the failure as the kubelet would name it. Path
/// [`super::kubelet::TCP_PROBE`]: a tcpSocket probe, `Ok(200)` once connected.
pub fn http_get(addr: SocketAddr, path: &str, timeout: Duration) -> Result<u16, String> {
    let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("connect {addr}: {e}"))?;
    if path == super::kubelet::TCP_PROBE {
        return Ok(200);
    }
    s.set_read_timeout(Some(timeout)).and_then(|_| s.set_write_timeout(Some(timeout))).map_err(|e| e.to_string())?;
    let req =
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: kube-probe/1.34\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).map_err(|e| format!("write {addr}: {e}"))?;
    let mut head = Vec::new();
    let mut buf = [0u8; 512];
    while !head.contains(&b'\n') {
        let n = s.read(&mut buf).map_err(|e| format!("read {addr}: {e}"))?;
        if n == 0 {
            return Err(format!("{addr} closed the connection before a status line"));
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = String::from_utf8_lossy(&head);
    line.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("{addr} answered a bad status line {:?}", line.lines().next().unwrap_or("")))
}

/// The helper's main loop (`lbc-node-agent probe`): requests on stdin, answers on stdout, until
/// stdin closes.
pub fn serve_stdin() {
    let out = Arc::new(Mutex::new(std::io::stdout()));
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let out = out.clone();
        std::thread::spawn(move || {
            let mut it = line.splitn(4, ' ');
            let (id, addr, ms, path) = (it.next(), it.next(), it.next(), it.next());
            let answer = match (id, addr.and_then(|a| a.parse().ok()), ms.and_then(|m| m.parse().ok()), path) {
                (Some(_), Some(addr), Some(ms), Some(path)) => http_get(addr, path, Duration::from_millis(ms)),
                _ => Err(format!("bad request line {line:?}")),
            };
            let text = match answer {
                Ok(code) => format!("{} {code}\n", id.unwrap_or("0")),
                Err(e) => format!("{} ERR {}\n", id.unwrap_or("0"), e.replace('\n', " ")),
            };
            let mut o = out.lock().expect("stdout");
            let _ = o.write_all(text.as_bytes());
            let _ = o.flush();
        });
    }
}
