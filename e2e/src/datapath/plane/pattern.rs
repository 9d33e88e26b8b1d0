//! The regular expressions of listener rules: the `RegexValues` of host-header, path-pattern and
//! http-header conditions, and the `Regex` of rule transforms ([`super::transform`]).
//!
//! From AWS's text ("Condition types for listener rules"; API `HostHeaderConditionConfig`,
//! `PathPatternConditionConfig`, `HttpHeaderConditionConfig`):
//! - host-header, http-header and path-pattern conditions take either value matching (`Values`,
//!   wildcards) or regex matching (`RegexValues`): "The regular expressions to compare against the
//!   host header" / "against the request URL" / "against the HTTP header";
//! - the condition is satisfied when one of its strings matches; for an http-header, "If the same
//!   header appears multiple times in the request, we search them in order until a match is found";
//! - ALB's regexes have no lookaheads, lookbehinds, backreferences, atomic groups, possessive
//!   quantifiers, subroutines, recursion or Unicode classes (the emulator refuses those).
//!
//! Our assumptions, where that text is silent:
//! - a regex is a search: it matches anywhere in the value unless it anchors itself (`^`, `$`);
//! - the dialect is the `regex` crate's (RE2-like, what remains once the features above are gone);
//!   a regex the crate does not compile never matches (listed by [`super::transform::problems`]);
//! - the comparison is case-sensitive, as the regex is written (`(?i)` makes it insensitive), for
//!   host names too, unlike `Values`;
//! - the host header is the raw `Host` value, with its port when the client sent one (third-party
//!   docs of the API read this way: regexes are how a rule matches `example.com:8443`); none: "";
//! - a path regex is compared with the path only, without the query string, as `Values` are
//!   ("The path pattern is compared only to the path of the URL, not to its query string").

use regex::Regex;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

/// Every pattern compiled so far (the views are read every poll; a pattern is compiled once).
static COMPILED: LazyLock<Mutex<HashMap<String, Result<Regex, String>>>> = LazyLock::new(Default::default);

/// `source` compiled by the `regex` crate, or why it does not compile.
pub fn compiled(source: &str) -> Result<Regex, String> {
    let mut cache = COMPILED.lock().unwrap_or_else(|p| p.into_inner());
    cache
        .entry(source.to_string())
        .or_insert_with(|| Regex::new(source).map_err(|e| format!("regex {source:?} does not compile: {e}")))
        .clone()
}

/// Whether one of `regexes` is found in `text` (a regex that does not compile matches nothing).
pub fn found(regexes: &[String], text: &str) -> bool {
    regexes.iter().any(|r| compiled(r).is_ok_and(|re| re.is_match(text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    // "The regular expressions to compare against the host header": a search unless anchored (ours).
    #[test]
    fn regexes_are_searched_unless_anchored() {
        let r = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(found(&r(&["example"]), "shop.example.com"));
        assert!(!found(&r(&["^example"]), "shop.example.com"));
        assert!(found(&r(&["^[a-z]+\\.example\\.com$"]), "shop.example.com"));
        assert!(!found(&r(&["^[a-z]+\\.example\\.com$"]), "shop.example.com:8080"), "the port is part of the value");
        assert!(found(&r(&["^[a-z]+\\.example\\.com(:\\d+)?$"]), "shop.example.com:8080"));
        // As written: case-sensitive unless the regex says otherwise (ours).
        assert!(!found(&r(&["^shop"]), "SHOP.example.com") && found(&r(&["(?i)^shop"]), "SHOP.example.com"));
        // Any one of the values.
        assert!(found(&r(&["^a$", "^b$"]), "b") && !found(&r(&[]), "b"));
    }

    // "host-header, http-header, and path-pattern conditions: value matching or regex matching";
    // a rule of regex conditions only routes by them (the view's `regex_values`).
    #[test]
    fn rules_route_by_regex_conditions() {
        use crate::datapath::plane::http::{read_request, route};
        use crate::datapath::plane::model::ListenerView;
        let l: ListenerView = serde_json::from_value(serde_json::json!({
            "protocol": "HTTP", "port": 80,
            "default_actions": [{"type": "fixed-response", "status_code": 404}],
            "rules": [
                {"priority": 1, "conditions": [{"field": "host-header", "values": [],
                                                "regex_values": ["^api-[0-9]+\\.example\\.com$"]}],
                 "actions": [{"type": "fixed-response", "status_code": 201}]},
                {"priority": 2, "conditions": [{"field": "path-pattern", "regex_values": ["^/v[0-9]+/", "\\.png$"]}],
                 "actions": [{"type": "fixed-response", "status_code": 202}]},
                {"priority": 3, "conditions": [{"field": "http-header", "header_name": "X-Env",
                                                "regex_values": ["^(blue|green)$"]}],
                 "actions": [{"type": "fixed-response", "status_code": 203}]},
            ],
        }))
        .unwrap();
        let status = |text: &str| {
            let req = read_request(&mut std::io::Cursor::new(text.as_bytes())).unwrap().unwrap();
            route(&l, &req, "10.0.0.1".parse().unwrap()).unwrap().0.status_code.unwrap()
        };
        assert_eq!(status("GET / HTTP/1.1\r\nHost: api-12.example.com\r\n\r\n"), 201);
        // The Host header with its port (ours): this regex anchors the end, the port is in the way.
        assert_eq!(status("GET / HTTP/1.1\r\nHost: api-12.example.com:8080\r\n\r\n"), 404);
        assert_eq!(status("GET / HTTP/1.1\r\nHost: API-12.example.com\r\n\r\n"), 404, "as written (ours)");
        assert_eq!(status("GET /v2/items HTTP/1.1\r\nHost: h\r\n\r\n"), 202);
        assert_eq!(status("GET /img/a.png HTTP/1.1\r\nHost: h\r\n\r\n"), 202);
        // The path without its query (ours, as for Values: "not to its query string").
        assert_eq!(status("GET /img?f=a.png HTTP/1.1\r\nHost: h\r\n\r\n"), 404);
        // "If the same header appears multiple times in the request, we search them in order".
        assert_eq!(status("GET / HTTP/1.1\r\nX-Env: red\r\nX-Env: green\r\n\r\n"), 203);
        assert_eq!(status("GET / HTTP/1.1\r\nX-Env: greenish\r\n\r\n"), 404);
        assert_eq!(status("GET / HTTP/1.1\r\n\r\n"), 404, "no such header");
    }

    #[test]
    fn regexes_that_do_not_compile_match_nothing() {
        let e = compiled("(").unwrap_err();
        assert!(e.starts_with("regex \"(\" does not compile: "), "{e}");
        assert!(!found(&["(".to_string()], "("));
        // Compiled once, the same answer again.
        assert_eq!(compiled("(").unwrap_err(), e);
        assert!(compiled("^/a$").unwrap().is_match("/a"));
    }
}
