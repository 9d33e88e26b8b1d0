//! ALB-style request forwarding, the pure parts: reading an HTTP/1.1 request, choosing the
//! listener's action by its rules (priority order, every condition of a rule must match), and
//! rewriting a target's response for the client connection.

use super::model::{ActionView, ConditionView, ListenerView};
use std::io::BufRead;
use std::net::IpAddr;

/// One client request, as read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Request {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    pub version: String,
    /// Names lowercase, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }

    fn query(&self) -> Vec<(String, String)> {
        let Some((_, q)) = self.target.split_once('?') else { return Vec::new() };
        q.split('&')
            .filter(|kv| !kv.is_empty())
            .map(|kv| match kv.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (kv.to_string(), String::new()),
            })
            .collect()
    }

    /// Whether the client wants the connection closed after this request.
    pub fn wants_close(&self) -> bool {
        let conn = self.header("connection").unwrap_or_default().to_ascii_lowercase();
        conn.contains("close") || (self.version == "HTTP/1.0" && !conn.contains("keep-alive"))
    }

    /// The request as sent to a target: `Connection: close` (one request per target connection)
    /// and `X-Forwarded-For`.
    pub fn to_upstream(&self, client: IpAddr) -> Vec<u8> {
        let mut out = format!("{} {} HTTP/1.1\r\n", self.method, self.target);
        for (k, v) in &self.headers {
            if !matches!(k.as_str(), "connection" | "keep-alive" | "x-forwarded-for") {
                out.push_str(&format!("{k}: {v}\r\n"));
            }
        }
        let xff = match self.header("x-forwarded-for") {
            Some(prev) => format!("{prev}, {client}"),
            None => client.to_string(),
        };
        out.push_str(&format!("x-forwarded-for: {xff}\r\nconnection: close\r\n\r\n"));
        let mut bytes = out.into_bytes();
        bytes.extend_from_slice(&self.body);
        bytes
    }
}

/// Reads one request; `Ok(None)` at a clean end of the connection.
pub fn read_request(r: &mut impl BufRead) -> std::io::Result<Option<Request>> {
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    let mut line = String::new();
    // Tolerate empty lines before a request line (RFC 9112 §2.2).
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        if !line.trim().is_empty() {
            break;
        }
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad("bad request line"));
    };
    let mut req = Request {
        method: method.to_string(),
        target: target.to_string(),
        version: version.to_string(),
        ..Request::default()
    };
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Err(bad("connection closed in the request headers"));
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            req.headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    if req.header("transfer-encoding").is_some() {
        return Err(bad("chunked request bodies are not supported"));
    }
    let len: usize = req.header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    req.body.resize(len, 0);
    r.read_exact(&mut req.body)?;
    Ok(Some(req))
}

/// `*` any run of characters, `?` exactly one (ALB's path and host patterns).
pub fn wildcard(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

fn strings(c: &ConditionView) -> impl Iterator<Item = &str> {
    c.values.iter().filter_map(|v| v.as_str())
}

/// Whether one rule condition matches the request from `client`.
pub fn condition_matches(c: &ConditionView, req: &Request, client: IpAddr) -> bool {
    match c.field.as_str() {
        "path-pattern" => strings(c).any(|p| wildcard(p, req.path())),
        // The Host header as sent, port included: ALB does not strip it (a rule for `example.com`
        // does not match `Host: example.com:8080`); host names compare case-insensitively.
        "host-header" => {
            let host = req.header("host").unwrap_or_default().to_ascii_lowercase();
            strings(c).any(|p| wildcard(&p.to_ascii_lowercase(), &host))
        }
        "http-header" => {
            let name = c.header_name.as_deref().unwrap_or_default().to_ascii_lowercase();
            req.headers
                .iter()
                .filter(|(k, _)| *k == name)
                .any(|(_, v)| strings(c).any(|p| wildcard(&p.to_ascii_lowercase(), &v.to_ascii_lowercase())))
        }
        "http-request-method" => strings(c).any(|m| m == req.method),
        // AWS (QueryStringConfig): "The comparison is case insensitive", keys and values alike.
        "query-string" => {
            let q = req.query();
            c.values.iter().any(|kv| {
                let key = kv["key"].as_str().map(str::to_ascii_lowercase);
                let value = kv["value"].as_str().unwrap_or_default().to_ascii_lowercase();
                q.iter().any(|(k, v)| {
                    key.as_deref().is_none_or(|key| key == k.to_ascii_lowercase())
                        && wildcard(&value, &v.to_ascii_lowercase())
                })
            })
        }
        "source-ip" => strings(c).any(|cidr| {
            cidr.parse::<ipnet::IpNet>().is_ok_and(|n| n.contains(&client))
                || cidr.parse::<IpAddr>().is_ok_and(|a| a == client)
        }),
        _ => false,
    }
}

/// The action for `req`: the first rule (by priority) whose conditions all match, else the
/// listener's default; the lowest-order action of either.
pub fn route<'a>(l: &'a ListenerView, req: &Request, client: IpAddr) -> Option<&'a ActionView> {
    let mut rules: Vec<_> = l.rules.iter().collect();
    rules.sort_by_key(|r| r.priority.unwrap_or(i64::MAX));
    rules
        .into_iter()
        .find(|r| !r.conditions.is_empty() && r.conditions.iter().all(|c| condition_matches(c, req, client)))
        .map(|r| r.actions.first())
        .unwrap_or_else(|| l.default_actions.first())
}

/// A response the load balancer itself writes (fixed-response, 502/503/504).
pub fn own_response(status: u16, content_type: &str, body: &str, close: bool) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    };
    format!(
        "HTTP/1.1 {status} {reason}\r\nserver: lbc-dataplane\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n{}\r\n{body}",
        body.len(),
        if close { "connection: close\r\n" } else { "" }
    )
    .into_bytes()
}

/// A target's whole response (read to EOF: the target connection carried one request) rewritten
/// for the client connection: its own framing, `connection: close` when the client leaves.
pub fn relay_response(raw: &[u8], close: bool) -> Option<Vec<u8>> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let body = &raw[end + 4..];
    let mut lines = head.split("\r\n");
    let status = lines.next()?;
    let mut out = format!("{status}\r\n");
    let (mut framed, mut chunked) = (false, false);
    for l in lines {
        let Some((k, _)) = l.split_once(':') else { continue };
        let k = k.trim().to_ascii_lowercase();
        if matches!(k.as_str(), "connection" | "keep-alive") {
            continue;
        }
        framed |= k == "content-length";
        chunked |= k == "transfer-encoding";
        out.push_str(l);
        out.push_str("\r\n");
    }
    if !framed && !chunked {
        out.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    if close {
        out.push_str("connection: close\r\n");
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datapath::plane::model::RuleView;
    use serde_json::json;

    fn req(text: &str) -> Request {
        read_request(&mut std::io::Cursor::new(text.as_bytes())).unwrap().unwrap()
    }

    fn action(tg: &str) -> ActionView {
        serde_json::from_value(json!({"type": "forward", "target_groups": [{"arn": tg, "weight": 1}]})).unwrap()
    }

    fn rule(priority: i64, conditions: serde_json::Value, tg: &str) -> RuleView {
        RuleView {
            priority: Some(priority),
            conditions: serde_json::from_value(conditions).unwrap(),
            actions: vec![action(tg)],
        }
    }

    #[test]
    fn requests_parse_with_bodies_and_keep_alive() {
        let r = req("GET /a/b?x=1 HTTP/1.1\r\nHost: A.example.com:80\r\nContent-Length: 2\r\n\r\nhi");
        assert_eq!((r.method.as_str(), r.path(), r.body.as_slice()), ("GET", "/a/b", &b"hi"[..]));
        assert!(!r.wants_close());
        assert!(req("GET / HTTP/1.0\r\n\r\n").wants_close());
        assert!(req("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").wants_close());
        assert_eq!(read_request(&mut std::io::Cursor::new(&b""[..])).unwrap(), None);
        let up = String::from_utf8(r.to_upstream("10.0.0.1".parse().unwrap())).unwrap();
        assert!(up.contains("x-forwarded-for: 10.0.0.1\r\nconnection: close\r\n\r\nhi"), "{up}");
    }

    #[test]
    fn wildcards_match_like_alb() {
        assert!(wildcard("/b*", "/b") && wildcard("/b*", "/b/c") && !wildcard("/b*", "/a"));
        assert!(wildcard("*.example.com", "a.example.com") && !wildcard("*.example.com", "example.org"));
        assert!(wildcard("/x?z", "/xyz") && !wildcard("/x?z", "/xz"));
    }

    #[test]
    fn rules_apply_by_priority_then_the_default() {
        let l = ListenerView {
            protocol: "HTTP".into(),
            port: 80,
            default_actions: vec![action("default")],
            rules: vec![
                rule(20, json!([{"field": "path-pattern", "values": ["/b*"]}]), "b"),
                rule(
                    10,
                    json!([{"field": "host-header", "values": ["*.example.com"]},
                                {"field": "http-header", "header_name": "X-Env", "values": ["blue"]}]),
                    "blue",
                ),
                rule(30, json!([{"field": "query-string", "values": [{"key": "v", "value": "2"}]}]), "v2"),
            ],
        };
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let tg = |text: &str| route(&l, &req(text), ip).unwrap().groups()[0].0.clone();
        assert_eq!(tg("GET /b/1 HTTP/1.1\r\nHost: x\r\n\r\n"), "b");
        assert_eq!(tg("GET /b/1 HTTP/1.1\r\nHost: A.example.com\r\nX-Env: Blue\r\n\r\n"), "blue");
        // ALB matches the Host header with its port: `*.example.com` is not `a.example.com:8080`.
        assert_eq!(tg("GET /b/1 HTTP/1.1\r\nHost: a.example.com:8080\r\nX-Env: blue\r\n\r\n"), "b");
        // Query keys and values compare case-insensitively (AWS QueryStringConfig).
        assert_eq!(tg("GET /a?V=2 HTTP/1.1\r\n\r\n"), "v2");
        assert_eq!(tg("GET /a HTTP/1.1\r\nHost: a.example.com\r\n\r\n"), "default");
        assert_eq!(tg("GET /a?v=2 HTTP/1.1\r\n\r\n"), "v2");
        assert_eq!(l.all_groups(), ["default", "b", "blue", "v2"]);
    }

    #[test]
    fn responses_are_reframed_for_the_client() {
        let out =
            relay_response(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: text/plain\r\n\r\nweb-a\n", false)
                .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\ncontent-length: 6\r\n\r\nweb-a\n"
        );
        let out = relay_response(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", true).unwrap();
        assert!(String::from_utf8(out).unwrap().ends_with("content-length: 2\r\nconnection: close\r\n\r\nok"));
        assert!(relay_response(b"HTTP/1.1 200", false).is_none());
    }
}
