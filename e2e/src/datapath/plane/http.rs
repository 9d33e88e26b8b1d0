//! ALB-style request forwarding, the pure parts: reading an HTTP/1.1 request, choosing the
//! listener's action by its rules (priority order, every condition of a rule must match), and
//! rewriting a target's response for the client connection.

use super::model::{ActionView, ConditionView, Keyword, ListenerView, Redirect, RedirectPort, RedirectProtocol};
use super::pattern::found;
use super::transform::TransformView;
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
    /// and AWS's X-Forwarded headers ("HTTP headers and Application Load Balancers"): the client
    /// appended to `X-Forwarded-For`; `X-Forwarded-Proto` the protocol the client used to reach
    /// the listener (`http`/`https`, from the listener's `protocol`) and `X-Forwarded-Port` its
    /// port, replacing what the client sent.
    pub fn to_upstream(&self, client: IpAddr, protocol: &str, port: u16) -> Vec<u8> {
        let mut out = format!("{} {} HTTP/1.1\r\n", self.method, self.target);
        for (k, v) in &self.headers {
            if !matches!(
                k.as_str(),
                "connection" | "keep-alive" | "x-forwarded-for" | "x-forwarded-proto" | "x-forwarded-port"
            ) {
                out.push_str(&format!("{k}: {v}\r\n"));
            }
        }
        let xff = match self.header("x-forwarded-for") {
            Some(prev) => format!("{prev}, {client}"),
            None => client.to_string(),
        };
        out.push_str(&format!(
            "x-forwarded-for: {xff}\r\nx-forwarded-proto: {}\r\nx-forwarded-port: {port}\r\nconnection: close\r\n\r\n",
            protocol.to_ascii_lowercase()
        ));
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

/// Whether one rule condition matches the request from `client`. Host, path and header conditions
/// take wildcard `values` or `regex_values` ([`super::pattern`] says how those are compared).
pub fn condition_matches(c: &ConditionView, req: &Request, client: IpAddr) -> bool {
    match c.field.as_str() {
        "path-pattern" => strings(c).any(|p| wildcard(p, req.path())) || found(&c.regex_values, req.path()),
        // The Host header as sent, port included: ALB does not strip it (a rule for `example.com`
        // does not match `Host: example.com:8080`); host names compare case-insensitively.
        "host-header" => {
            let raw = req.header("host").unwrap_or_default();
            let host = raw.to_ascii_lowercase();
            strings(c).any(|p| wildcard(&p.to_ascii_lowercase(), &host)) || found(&c.regex_values, raw)
        }
        "http-header" => {
            let name = c.header_name.as_deref().unwrap_or_default().to_ascii_lowercase();
            req.headers.iter().filter(|(k, _)| *k == name).any(|(_, v)| {
                strings(c).any(|p| wildcard(&p.to_ascii_lowercase(), &v.to_ascii_lowercase()))
                    || found(&c.regex_values, v)
            })
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
/// listener's default; the lowest-order action of either, with the transforms of the rule (none
/// for the default: AWS puts no transform on a default rule).
pub fn route<'a>(l: &'a ListenerView, req: &Request, client: IpAddr) -> Option<(&'a ActionView, &'a [TransformView])> {
    let mut rules: Vec<_> = l.rules.iter().collect();
    rules.sort_by_key(|r| r.priority.unwrap_or(i64::MAX));
    match rules
        .into_iter()
        .find(|r| !r.conditions.is_empty() && r.conditions.iter().all(|c| condition_matches(c, req, client)))
    {
        Some(r) => r.actions.first().map(|a| (a, r.transforms.as_slice())),
        None => l.default_actions.first().map(|a| (a, &[][..])),
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        400 => "Bad Request",
        404 => "Not Found",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

/// A response the load balancer itself writes (fixed-response, 500/502/503/504).
pub fn own_response(status: u16, content_type: &str, body: &str, close: bool) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} {}\r\nserver: lbc-dataplane\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n{}\r\n{body}",
        reason(status),
        body.len(),
        if close { "connection: close\r\n" } else { "" }
    )
    .into_bytes()
}

/// A redirect action's answer: `status` (301/302), `Location`, no body.
pub fn redirect_response(status: u16, location: &str, close: bool) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} {}\r\nserver: lbc-dataplane\r\nlocation: {location}\r\ncontent-length: 0\r\n{}\r\n",
        reason(status),
        if close { "connection: close\r\n" } else { "" }
    )
    .into_bytes()
}

/// The `Location` a redirect action sends for `req`, received on a listener of `protocol`
/// (`HTTP`/`HTTPS`) and `port`; `local_host` stands for the host when the request has no `Host`
/// header (HTTP/1.0). Follows AWS RedirectActionConfig: `protocol://hostname:port/path?query`,
/// each component the config's with the reserved keywords replaced by the request's values
/// (`#{protocol}` lowercase, `#{host}` the Host header without its port, `#{port}` the listener's,
/// `#{path}` the path without its leading "/", `#{query}` the query without its "?"); the query
/// with its "?" only when not empty.
///
/// The port is always written, also the scheme's default (`https://h:443/`): real ALBs send it
/// that way as far as we know, and a client must accept it either way (RFC 3986 §6.2.3); this is
/// the stricter choice, should ALB leave the default port out.
pub fn redirect_location(
    r: &Redirect,
    protocol: &str,
    port: u16,
    req: &Request,
    local_host: &str,
) -> Result<String, String> {
    r.check_listener(protocol)?;
    let host_header = req.header("host").filter(|h| !h.is_empty()).unwrap_or(local_host);
    let value = |k: Keyword| match k {
        Keyword::Protocol => protocol.to_ascii_lowercase(),
        Keyword::Host => host_without_port(host_header).to_string(),
        Keyword::Port => port.to_string(),
        Keyword::Path => req.path().strip_prefix('/').unwrap_or(req.path()).to_string(),
        Keyword::Query => req.target.split_once('?').map(|(_, q)| q.to_string()).unwrap_or_default(),
    };
    let scheme = match r.protocol {
        RedirectProtocol::Keep => protocol.to_ascii_lowercase(),
        RedirectProtocol::Http => "http".into(),
        RedirectProtocol::Https => "https".into(),
    };
    let to_port = match r.port {
        RedirectPort::Keep => port,
        RedirectPort::Number(p) => p,
    };
    let host = r.host.expand(value);
    let path = r.path.expand(value);
    let query = r.query.expand(value);
    let query = if query.is_empty() { String::new() } else { format!("?{query}") };
    Ok(format!("{scheme}://{host}:{to_port}{path}{query}"))
}

/// A Host header's host: `a.example.com:8080` → `a.example.com`, `[::1]:80` → `[::1]`.
fn host_without_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    host.rsplit_once(':').filter(|(_, p)| p.bytes().all(|b| b.is_ascii_digit())).map_or(host, |(h, _)| h)
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

    fn action_json(tg: &str) -> serde_json::Value {
        json!({"type": "forward", "target_groups": [{"arn": tg, "weight": 1}]})
    }

    fn action(tg: &str) -> ActionView {
        serde_json::from_value(action_json(tg)).unwrap()
    }

    fn rule(priority: i64, conditions: serde_json::Value, tg: &str) -> RuleView {
        RuleView {
            priority: Some(priority),
            conditions: serde_json::from_value(conditions).unwrap(),
            actions: vec![action(tg)],
            transforms: Vec::new(),
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
        let up = String::from_utf8(r.to_upstream("10.0.0.1".parse().unwrap(), "HTTP", 80)).unwrap();
        assert!(
            up.contains("x-forwarded-for: 10.0.0.1\r\nx-forwarded-proto: http\r\nx-forwarded-port: 80\r\nconnection: close\r\n\r\nhi"),
            "{up}"
        );
        // The client's X-Forwarded-Proto/Port are replaced, its X-Forwarded-For appended to.
        let r =
            req("GET / HTTP/1.1\r\nX-Forwarded-Proto: http\r\nX-Forwarded-Port: 1\r\nX-Forwarded-For: 1.2.3.4\r\n\r\n");
        let up = String::from_utf8(r.to_upstream("10.0.0.1".parse().unwrap(), "HTTPS", 443)).unwrap();
        assert!(up.ends_with("x-forwarded-for: 1.2.3.4, 10.0.0.1\r\nx-forwarded-proto: https\r\nx-forwarded-port: 443\r\nconnection: close\r\n\r\n"), "{up}");
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
            certificates: Vec::new(),
            ssl_policy: None,
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
        let tg = |text: &str| route(&l, &req(text), ip).unwrap().0.groups()[0].0.clone();
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

    fn redirect(config: serde_json::Value) -> Redirect {
        Redirect::from_config(Some(&json!({ "RedirectConfig": config }))).unwrap()
    }

    /// The Location for `request` on a listener `protocol:port` whose data plane listens on 10.0.254.1.
    fn location(config: serde_json::Value, protocol: &str, port: u16, request: &str) -> Result<String, String> {
        redirect_location(&redirect(config), protocol, port, &req(request), "10.0.254.1")
    }

    // AWS RedirectActionConfig: "A URI consists of the following components:
    // protocol://hostname:port/path?query"; the components not set keep the request's: #{host} is
    // the domain (the Host header without its port), #{path} the path, #{query} the query.
    #[test]
    fn redirects_keep_what_they_do_not_change() {
        let to_https = json!({"Protocol": "HTTPS", "Port": "443", "StatusCode": "HTTP_301"});
        assert_eq!(
            location(to_https.clone(), "HTTP", 80, "GET /a/b?x=1&y=2 HTTP/1.1\r\nHost: Shop.example.com:80\r\n\r\n"),
            Ok("https://Shop.example.com:443/a/b?x=1&y=2".into())
        );
        // The query with its "?" only when there is one.
        assert_eq!(
            location(to_https.clone(), "HTTP", 80, "GET / HTTP/1.1\r\nHost: shop.example.com\r\n\r\n"),
            Ok("https://shop.example.com:443/".into())
        );
        assert_eq!(
            location(to_https, "HTTP", 80, "GET /a? HTTP/1.1\r\nHost: shop.example.com\r\n\r\n"),
            Ok("https://shop.example.com:443/a".into())
        );
    }

    // AWS RedirectActionConfig: "Any components that you do not modify retain their original
    // values": a protocol change alone keeps the listener's port (the controller sets 443 itself).
    // The port is written even when it is the scheme's default (see redirect_location).
    #[test]
    fn redirects_keep_the_listeners_port_unless_set() {
        let r = location(
            json!({"Protocol": "HTTPS", "StatusCode": "HTTP_302"}),
            "HTTP",
            8080,
            "GET /x HTTP/1.1\r\nHost: h:9999\r\n\r\n",
        );
        assert_eq!(r, Ok("https://h:8080/x".into()), "#{{port}} is the listener's, not the Host header's");
        let r = location(
            json!({"Host": "other.example.com", "StatusCode": "HTTP_302"}),
            "HTTP",
            80,
            "GET /x HTTP/1.1\r\nHost: h\r\n\r\n",
        );
        assert_eq!(r, Ok("http://other.example.com:80/x".into()));
    }

    // AWS RedirectActionConfig: "#{path} (the leading "/" is removed)"; its examples: the path
    // "/new/#{path}", the hostname "example.#{host}", the query "#{query}&value=xyz".
    #[test]
    fn redirect_keywords_take_the_requests_values() {
        let cfg = json!({"Host": "example.#{host}", "Path": "/new/#{path}", "Query": "#{query}&value=xyz",
                         "StatusCode": "HTTP_301"});
        assert_eq!(
            location(cfg, "HTTP", 80, "GET /old/page?id=7 HTTP/1.1\r\nHost: shop.example.com:80\r\n\r\n"),
            Ok("http://example.shop.example.com:80/new/old/page?id=7&value=xyz".into())
        );
        // #{host}, #{port} in the path; #{protocol} (lowercase) and #{port} in the query.
        let cfg = json!({"Path": "/#{host}/#{port}/#{path}", "Query": "from=#{protocol}:#{port}",
                         "StatusCode": "HTTP_301"});
        assert_eq!(
            location(cfg, "HTTPS", 8443, "GET /p HTTP/1.1\r\nHost: h.example.com:8443\r\n\r\n"),
            Ok("https://h.example.com:8443/h.example.com/8443/p?from=https:8443".into())
        );
        // An empty query expands to nothing: no "?".
        let cfg = json!({"Path": "/v2/#{path}", "Query": "#{query}", "StatusCode": "HTTP_301"});
        assert_eq!(location(cfg, "HTTP", 80, "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"), Ok("http://h:80/v2/a".into()));
    }

    #[test]
    fn redirect_hosts_come_from_the_host_header_or_the_listener_address() {
        let cfg = json!({"Path": "/moved", "StatusCode": "HTTP_302"});
        assert_eq!(
            location(cfg.clone(), "HTTP", 80, "GET / HTTP/1.0\r\n\r\n"),
            Ok("http://10.0.254.1:80/moved".into())
        );
        assert_eq!(
            location(cfg, "HTTP", 80, "GET / HTTP/1.1\r\nHost: [fd00::1]:80\r\n\r\n"),
            Ok("http://[fd00::1]:80/moved".into())
        );
        assert_eq!(host_without_port("a.example.com"), "a.example.com");
        assert_eq!(host_without_port("[::1]"), "[::1]");
    }

    // AWS RedirectActionConfig Protocol: "You can redirect HTTP to HTTP, HTTP to HTTPS, and HTTPS
    // to HTTPS. You can't redirect HTTPS to HTTP."
    #[test]
    fn https_listeners_do_not_redirect_to_http() {
        let cfg = json!({"Protocol": "HTTP", "Port": "80", "StatusCode": "HTTP_301"});
        let e = location(cfg.clone(), "HTTPS", 443, "GET / HTTP/1.1\r\nHost: h\r\n\r\n").unwrap_err();
        assert!(e.contains("HTTPS listener to HTTP"), "{e}");
        assert_eq!(location(cfg, "HTTP", 8080, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"), Ok("http://h:80/".into()));
    }

    // AWS RedirectActionConfig StatusCode: "The redirect is either permanent (HTTP 301) or
    // temporary (HTTP 302)".
    #[test]
    fn redirect_responses_carry_the_status_and_location_only() {
        let out = String::from_utf8(redirect_response(301, "https://h:443/a", false)).unwrap();
        assert_eq!(
            out,
            "HTTP/1.1 301 Moved Permanently\r\nserver: lbc-dataplane\r\nlocation: https://h:443/a\r\ncontent-length: 0\r\n\r\n"
        );
        let out = String::from_utf8(redirect_response(302, "http://h:80/", true)).unwrap();
        assert!(out.starts_with("HTTP/1.1 302 Found\r\n") && out.ends_with("connection: close\r\n\r\n"), "{out}");
        let (status, headers, body) = super::super::wire::parse_response(out.as_bytes()).unwrap();
        assert_eq!((status, body.len()), (302, 0));
        assert!(headers.contains(&("location".into(), "http://h:80/".into())));
    }

    #[test]
    fn rules_route_to_redirects_read_from_the_view() {
        let l: ListenerView = serde_json::from_value(json!({
            "protocol": "HTTP", "port": 80, "default_actions": [action_json("default")],
            "rules": [{"priority": 1, "conditions": [{"field": "path-pattern", "values": ["/old/*"]}],
                       "actions": [{"type": "redirect", "order": 1, "config": {"RedirectConfig": {
                           "Protocol": "HTTPS", "Port": "443", "Path": "/new/#{path}", "StatusCode": "HTTP_301"}}}]}],
        }))
        .unwrap();
        let r = req("GET /old/x HTTP/1.1\r\nHost: h\r\n\r\n");
        let (a, _) = route(&l, &r, "10.0.0.1".parse().unwrap()).unwrap();
        let Some(Ok(redirect)) = &a.redirect else { panic!("{a:?}") };
        assert_eq!(redirect.status, 301);
        assert_eq!(redirect_location(redirect, "HTTP", 80, &r, "x"), Ok("https://h:443/new/old/x".into()));
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
