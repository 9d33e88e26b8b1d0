//! The data plane's plumbing: a tiny hand-written HTTP/1.1 client for the emulator's JSON control
//! API (one request per connection, `Connection: close`), over TCP or a Unix socket, and the
//! forwarder the harness runs in the machine's own namespace from a Unix socket (filesystem paths
//! cross network namespaces) to the emulator's TCP port, so the data plane inside the VPC
//! namespace reaches the emulator without the host ever getting a route to the VPC.

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Where the emulator answers: `unix:PATH` (through an [`EmulatorForwarder`]) or `HOST:PORT`.
#[derive(Clone, Debug)]
pub enum Endpoint {
    Unix(PathBuf),
    Tcp(SocketAddr),
}

impl std::str::FromStr for Endpoint {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        if let Some(p) = s.strip_prefix("unix:") {
            return Ok(Self::Unix(PathBuf::from(p)));
        }
        let hostport = s.strip_prefix("http://").unwrap_or(s).trim_end_matches('/');
        hostport.parse().map(Self::Tcp).with_context(|| {
            format!("emulator endpoint {s:?} is neither unix:PATH nor HOST:PORT (e.g. 127.0.0.1:4566)")
        })
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unix(p) => write!(f, "unix:{}", p.display()),
            Self::Tcp(a) => write!(f, "{a}"),
        }
    }
}

/// `METHOD path` with an optional JSON body: (status, JSON body or Null).
pub fn request(
    ep: &Endpoint,
    method: &str,
    path: &str,
    body: Option<&Value>,
    timeout: Duration,
) -> Result<(u16, Value)> {
    let payload = body.map(|b| b.to_string()).unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: awsemu\r\nConnection: close\r\nAccept: application/json\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        payload.len()
    );
    let mut raw = Vec::new();
    let what = || format!("{method} {path} to the emulator at {ep}");
    match ep {
        Endpoint::Unix(p) => {
            let mut s = UnixStream::connect(p).with_context(|| format!("{}: connecting", what()))?;
            s.set_read_timeout(Some(timeout))?;
            s.set_write_timeout(Some(timeout))?;
            s.write_all(head.as_bytes())?;
            s.write_all(payload.as_bytes())?;
            s.read_to_end(&mut raw).with_context(what)?;
        }
        Endpoint::Tcp(a) => {
            let mut s = TcpStream::connect_timeout(a, timeout).with_context(|| format!("{}: connecting", what()))?;
            s.set_read_timeout(Some(timeout))?;
            s.set_write_timeout(Some(timeout))?;
            s.write_all(head.as_bytes())?;
            s.write_all(payload.as_bytes())?;
            s.read_to_end(&mut raw).with_context(what)?;
        }
    }
    let (status, headers, body) = parse_response(&raw).with_context(what)?;
    let body = if headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked")) {
        dechunk(body)?
    } else {
        body.to_vec()
    };
    let v = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        serde_json::from_slice(&body).with_context(|| format!("{}: HTTP {status}, body is not JSON", what()))?
    };
    Ok((status, v))
}

/// `GET path`, failing on a non-2xx answer with the emulator's error.
pub fn get_json(ep: &Endpoint, path: &str) -> Result<Value> {
    let (status, v) = request(ep, "GET", path, None, Duration::from_secs(5))?;
    ensure!((200..300).contains(&status), "GET {path} from the emulator at {ep}: HTTP {status}: {v}");
    Ok(v)
}

/// `POST path` with a JSON body, failing on a non-2xx answer.
pub fn post_json(ep: &Endpoint, path: &str, body: &Value) -> Result<Value> {
    let (status, v) = request(ep, "POST", path, Some(body), Duration::from_secs(5))?;
    ensure!((200..300).contains(&status), "POST {path} to the emulator at {ep}: HTTP {status}: {v}");
    Ok(v)
}

/// Lowercase header names with their values.
pub type Headers = Vec<(String, String)>;

/// A whole HTTP/1.x response: (status, headers, body bytes as received).
pub fn parse_response(raw: &[u8]) -> Result<(u16, Headers, &[u8])> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").context("response without an end of headers")?;
    let head = std::str::from_utf8(&raw[..end]).context("response headers are not UTF-8")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .with_context(|| format!("bad status line {status_line:?}"))?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Ok((status, headers, &raw[end + 4..]))
}

fn dechunk(mut body: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = body.windows(2).position(|w| w == b"\r\n").context("chunk size line")?;
        let size_text = std::str::from_utf8(&body[..eol])?.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).with_context(|| format!("chunk size {size_text:?}"))?;
        body = &body[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        if body.len() < size {
            bail!("chunk of {size} bytes cut short at {}", body.len());
        }
        out.extend_from_slice(&body[..size]);
        body = body.get(size + 2..).unwrap_or_default();
    }
}

/// Copies `from` into `to` until EOF or an error, then half-closes `to` for writing.
pub fn pipe(mut from: impl Read, mut to: impl Write, close_to: impl FnOnce()) -> u64 {
    let n = std::io::copy(&mut from, &mut to).unwrap_or(0);
    close_to();
    n
}

/// Forwards connections on a Unix socket to a TCP address (the emulator), one pair of threads per
/// connection. Stops accepting and removes the socket file on drop.
pub struct EmulatorForwarder {
    path: PathBuf,
    stop: Arc<AtomicBool>,
}

impl EmulatorForwarder {
    /// Listens on `path` (replacing a stale socket file) and forwards to `to`.
    pub fn start(path: &Path, to: SocketAddr) -> Result<Self> {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path)
            .with_context(|| format!("binding the emulator forwarder at {}", path.display()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::Builder::new().name("emu-forward".into()).spawn(move || {
            for conn in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = conn else { continue };
                std::thread::spawn(move || forward_one(client, to));
            }
        })?;
        Ok(Self { path: path.to_path_buf(), stop })
    }

    /// A forwarder to the environment's emulator, on a socket of its own in the temporary directory.
    pub fn for_env(env: &crate::Env) -> Result<Self> {
        let url = env.aws_endpoint();
        let to: SocketAddr = url
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .with_context(|| format!("the emulator's endpoint {url:?} is not http://IP:PORT"))?;
        Self::start(&std::env::temp_dir().join(format!("{}.sock", crate::unique("lbc-emu"))), to)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The `--emulator` argument of `lbc-dataplane` for this forwarder.
    pub fn endpoint_arg(&self) -> String {
        format!("unix:{}", self.path.display())
    }
}

fn forward_one(client: UnixStream, to: SocketAddr) {
    let Ok(upstream) = TcpStream::connect_timeout(&to, Duration::from_secs(5)) else {
        return; // dropping `client` closes it: the data plane sees the emulator as unreachable
    };
    let (Ok(c2), Ok(u2)) = (client.try_clone(), upstream.try_clone()) else { return };
    let back = std::thread::spawn(move || {
        pipe(&u2, &c2, || {
            let _ = c2.shutdown(Shutdown::Write);
        })
    });
    pipe(&client, &upstream, || {
        let _ = upstream.shutdown(Shutdown::Write);
    });
    let _ = back.join();
}

impl Drop for EmulatorForwarder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = UnixStream::connect(&self.path); // wakes the accept loop
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_parse_with_length_or_chunks() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
        let (status, headers, body) = parse_response(raw).unwrap();
        assert_eq!((status, body), (200, &b"{}"[..]));
        assert_eq!(headers[1], ("content-length".to_string(), "2".to_string()));
        assert_eq!(dechunk(b"3\r\n{\"a\r\n5\r\n\":1}\n\r\n0\r\n\r\n").unwrap(), b"{\"a\":1}\n");
        assert!(parse_response(b"HTTP/1.1 200 OK\r\n").is_err());
    }

    #[test]
    fn endpoints_parse() {
        assert!(
            matches!("unix:/tmp/x.sock".parse::<Endpoint>().unwrap(), Endpoint::Unix(p) if p == Path::new("/tmp/x.sock"))
        );
        assert!(matches!("http://127.0.0.1:4566/".parse::<Endpoint>().unwrap(), Endpoint::Tcp(a) if a.port() == 4566));
        assert!("localhost".parse::<Endpoint>().is_err());
    }
}
