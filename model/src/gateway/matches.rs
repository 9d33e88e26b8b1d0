//! An HTTPRoute or GRPCRoute match (and the hostname its rule is split to) as ALB rule
//! conditions, built as ALBC builds them (`routeutils.Build{Http,Grpc}RuleConditions`), so a
//! Gateway it built is adopted without a ModifyRule, except where ALBC's conditions match more
//! than the route asks:
//!
//! - an `Exact` path or header value holding `*` or `?` is sent by ALBC as an ALB wildcard
//!   value (`/a*` then also matches `/abc`); here it becomes an anchored regular expression that
//!   matches the literal value only; a `PathPrefix` holding them (refused by ALBC) likewise;
//! - an `Exact` header value holding a comma is split by ALBC into alternatives (`a,b` matches `a`
//!   or `b`); here it is the one literal value the spec asks for;
//! - a query parameter of type `RegularExpression`, or an exact one holding `*` or `?`, has no
//!   ALB condition that matches it (query-string conditions take wildcard values only): the
//!   match is refused with the reason instead of being widened.

use crate::lb::{Condition, QueryStringPair};

/// An HTTPRoute path match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathMatch {
    Exact(String),
    PathPrefix(String),
    RegularExpression(String),
}

/// A header or query-parameter match: name, whether the value is a regular expression, value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueMatch {
    pub name: String,
    pub regex: bool,
    pub value: String,
}

/// One HTTPRoute match, defaults applied (the API server defaults a missing path to `PathPrefix /`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpMatch {
    pub path: Option<PathMatch>,
    pub headers: Vec<ValueMatch>,
    pub query_params: Vec<ValueMatch>,
    pub method: Option<String>,
}

fn has_wildcard(s: &str) -> bool {
    s.contains(['*', '?'])
}

/// An anchored regular expression matching `literal` exactly.
fn literal_regex(literal: &str) -> String {
    format!("^{}$", regex::escape(literal))
}

/// A header match: a regular expression as one, an exact value holding `*` or `?` as an
/// anchored regular expression of the literal, any other exact value as itself.
fn header_condition(h: &ValueMatch) -> Condition {
    match (h.regex, has_wildcard(&h.value)) {
        (true, _) => Condition::HttpHeaderRegex { name: h.name.clone(), values: vec![h.value.clone()] },
        (false, true) => Condition::HttpHeaderRegex { name: h.name.clone(), values: vec![literal_regex(&h.value)] },
        (false, false) => Condition::HttpHeader { name: h.name.clone(), values: vec![h.value.clone()] },
    }
}

fn path_conditions(path: &PathMatch) -> Condition {
    match path {
        PathMatch::Exact(v) if has_wildcard(v) => Condition::PathPatternRegex(vec![literal_regex(v)]),
        PathMatch::Exact(v) => Condition::PathPattern(vec![v.clone()]),
        PathMatch::PathPrefix(v) if v == "/" => Condition::PathPattern(vec!["/*".into()]),
        PathMatch::PathPrefix(v) if has_wildcard(v) => {
            let trimmed = v.trim_end_matches('/');
            Condition::PathPatternRegex(vec![format!("^{}(/.*)?$", regex::escape(trimmed))])
        }
        PathMatch::PathPrefix(v) => {
            let trimmed = v.trim_end_matches('/');
            Condition::PathPattern(vec![trimmed.to_string(), format!("{trimmed}/*")])
        }
        PathMatch::RegularExpression(v) => Condition::PathPatternRegex(vec![v.clone()]),
    }
}

/// The longest regex AWS takes in `HostHeaderConfig.RegexValues`.
const HOST_REGEX_MAX: usize = 128;

/// The host condition of a rule for `hostname` on listener port `port`.
///
/// The spec: the port in a Host header "MUST not be considered" when matching hostnames. An ALB
/// compares a host-header value with the whole Host header, port included (ALBC's conformance
/// notes; a value cannot hold a `:`), and a client sends the port whenever it is not the scheme's
/// default. So on ports other than 80 and 443 the hostname is a regex that allows any port
/// (`^a\.example\.com(:[0-9]+)?$`; `*.` as one or more labels, as ALB's `*` matches them). On 80
/// and 443 it stays ALBC's wildcard value, so an ALB ALBC built compares equal there; a Host
/// naming another port than the connection's is then not matched (conformance
/// HTTPRouteHostnameIntersection). A regex longer than AWS takes falls back to the value.
pub fn host_condition(hostname: &str, port: u16) -> Condition {
    if matches!(port, 80 | 443) {
        return Condition::HostHeader(vec![hostname.to_string()]);
    }
    let (wild, rest) = match hostname.strip_prefix("*.") {
        Some(rest) => (".+\\.", rest),
        None => ("", hostname),
    };
    let regex = format!("^{wild}{}(:[0-9]+)?$", regex_syntax::escape(rest));
    match regex.len() <= HOST_REGEX_MAX {
        true => Condition::HostHeaderRegex(vec![regex]),
        false => Condition::HostHeader(vec![hostname.to_string()]),
    }
}

/// The conditions of one ALB rule on listener port `port`: the host (when the rule is split to
/// one, see [`host_condition`]), the path, each header, each query parameter, the method, in
/// ALBC's order. `Err` says why the match cannot be expressed on an ALB.
pub fn http_conditions(hostname: &str, port: u16, m: &HttpMatch) -> Result<Vec<Condition>, String> {
    let mut out = Vec::new();
    if !hostname.is_empty() {
        out.push(host_condition(hostname, port));
    }
    if let Some(p) = &m.path {
        out.push(path_conditions(p));
    }
    out.extend(m.headers.iter().map(header_condition));
    for q in &m.query_params {
        if q.regex || has_wildcard(&q.value) {
            return Err(format!(
                "query parameter match {:?} = {:?}: an ALB query-string condition takes wildcard values only (`*`, `?`), \
                 so a {} cannot be matched exactly; use an Exact value without `*` or `?`",
                q.name,
                q.value,
                if q.regex { "regular expression" } else { "value holding `*` or `?`" }
            ));
        }
        out.push(Condition::QueryString(vec![QueryStringPair { key: Some(q.name.clone()), value: q.value.clone() }]));
    }
    if let Some(method) = &m.method {
        out.push(Condition::HttpRequestMethod(vec![method.clone()]));
    }
    Ok(out)
}

/// One GRPCRoute match: the method (`service`, `method`, either may be absent; `regex`: of type
/// `RegularExpression`) and header matches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GrpcMatch {
    pub service: Option<String>,
    pub method: Option<String>,
    pub regex: bool,
    pub headers: Vec<ValueMatch>,
}

/// The conditions of one ALB rule for a GRPCRoute match, as ALBC builds them: a gRPC call is an
/// HTTP/2 POST to `/<service>/<method>`, so the method match is a path pattern (`/svc/m`,
/// `/svc/*`, `/*/m`, or `/*` for none). ALBC sends a `RegularExpression` method as a wildcard
/// value (so `a.b` matches `a.b` only and `.*` matches a literal `.*`); here it is a regular
/// expression over the path.
pub fn grpc_conditions(hostname: &str, m: &GrpcMatch) -> Result<Vec<Condition>, String> {
    let mut out = Vec::new();
    if !hostname.is_empty() {
        out.push(Condition::HostHeader(vec![hostname.to_string()]));
    }
    let path = match (&m.service, &m.method, m.regex) {
        (None, None, _) => Condition::PathPattern(vec!["/*".into()]),
        (s, me, false) => {
            let part = |p: &Option<String>| p.clone().unwrap_or_else(|| "*".into());
            if [s, me].into_iter().flatten().any(|p| has_wildcard(p)) {
                return Err(
                    "GRPCRoute method match of type Exact holds `*` or `?`, which the API does not allow".into()
                );
            }
            Condition::PathPattern(vec![format!("/{}/{}", part(s), part(me))])
        }
        (s, me, true) => {
            let part = |p: &Option<String>| p.as_ref().map_or("[^/]+".to_string(), |r| format!("(?:{r})"));
            Condition::PathPatternRegex(vec![format!("^/{}/{}$", part(s), part(me))])
        }
    };
    out.push(path);
    out.extend(m.headers.iter().map(header_condition));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: PathMatch) -> HttpMatch {
        HttpMatch { path: Some(p), ..Default::default() }
    }

    #[test]
    fn hostnames_ignore_the_port_off_the_default_ports_and_stay_albcs_values_on_them() {
        assert_eq!(host_condition("foo.com", 80), Condition::HostHeader(vec!["foo.com".into()]));
        assert_eq!(host_condition("*.wildcard.io", 443), Condition::HostHeader(vec!["*.wildcard.io".into()]));
        assert_eq!(host_condition("foo.com", 8080), Condition::HostHeaderRegex(vec![r"^foo\.com(:[0-9]+)?$".into()]));
        assert_eq!(
            host_condition("*.wildcard.io", 8090),
            Condition::HostHeaderRegex(vec![r"^.+\.wildcard\.io(:[0-9]+)?$".into()])
        );
        let re = |c: Condition| match c {
            Condition::HostHeaderRegex(v) => regex::Regex::new(&v[0]).unwrap(),
            other => panic!("{other:?}"),
        };
        let exact = re(host_condition("foo.com", 8080));
        for (host, hit) in [
            ("foo.com", true),
            ("foo.com:8080", true),
            ("foo.com:1", true),
            ("xfoo.com", false),
            ("foo.com.evil", false),
            ("fooXcom", false),
            ("foo.com:", false),
        ] {
            assert_eq!(exact.is_match(host), hit, "{host}");
        }
        let wild = re(host_condition("*.wildcard.io", 8080));
        for (host, hit) in [
            ("foo.wildcard.io", true),
            ("foo.bar.wildcard.io:8080", true),
            ("wildcard.io", false),
            (".wildcard.io", false),
        ] {
            assert_eq!(wild.is_match(host), hit, "{host}");
        }
        // Longer than AWS takes as a regex: the value, as on the default ports.
        let long = format!("{}.example.com", "a".repeat(120));
        assert_eq!(host_condition(&long, 8080), Condition::HostHeader(vec![long.clone()]));
        assert_eq!(
            http_conditions("foo.com", 8080, &HttpMatch::default()).unwrap()[0],
            host_condition("foo.com", 8080)
        );
    }

    #[test]
    fn paths_as_albc_sends_them_and_literals_kept_literal() {
        use PathMatch::*;
        let cases: Vec<(PathMatch, Condition)> = vec![
            (PathPrefix("/".into()), Condition::PathPattern(vec!["/*".into()])),
            (PathPrefix("/abc".into()), Condition::PathPattern(vec!["/abc".into(), "/abc/*".into()])),
            (PathPrefix("/abc/".into()), Condition::PathPattern(vec!["/abc".into(), "/abc/*".into()])),
            (Exact("/match/exact".into()), Condition::PathPattern(vec!["/match/exact".into()])),
            (RegularExpression("/v[0-9]+/.*".into()), Condition::PathPatternRegex(vec!["/v[0-9]+/.*".into()])),
            (Exact("/a*".into()), Condition::PathPatternRegex(vec![r"^/a\*$".into()])),
            (PathPrefix("/what?/".into()), Condition::PathPatternRegex(vec![r"^/what\?(/.*)?$".into()])),
        ];
        for (p, want) in cases {
            assert_eq!(http_conditions("", 80, &path(p.clone())).unwrap(), vec![want], "{p:?}");
        }
    }

    #[test]
    fn the_literal_regexes_match_the_literal_only() {
        let exact = regex::Regex::new(&literal_regex("/a*")).unwrap();
        assert!(exact.is_match("/a*") && !exact.is_match("/abc") && !exact.is_match("/a*/x"));
        let Condition::PathPatternRegex(v) = path_conditions(&PathMatch::PathPrefix("/w?".into())) else { panic!() };
        let prefix = regex::Regex::new(&v[0]).unwrap();
        assert!(
            prefix.is_match("/w?") && prefix.is_match("/w?/x") && !prefix.is_match("/wx") && !prefix.is_match("/w?x")
        );
    }

    #[test]
    fn a_whole_match_in_albcs_order() {
        let m = HttpMatch {
            path: Some(PathMatch::PathPrefix("/api".into())),
            headers: vec![
                ValueMatch { name: "version".into(), regex: false, value: "two".into() },
                ValueMatch { name: "color".into(), regex: true, value: "^(red|blue)$".into() },
                ValueMatch { name: "list".into(), regex: false, value: "a,b".into() },
            ],
            query_params: vec![ValueMatch { name: "animal".into(), regex: false, value: "whale".into() }],
            method: Some("POST".into()),
        };
        let got = http_conditions("very.specific.com", 80, &m).unwrap();
        assert_eq!(
            got,
            vec![
                Condition::HostHeader(vec!["very.specific.com".into()]),
                Condition::PathPattern(vec!["/api".into(), "/api/*".into()]),
                Condition::HttpHeader { name: "version".into(), values: vec!["two".into()] },
                Condition::HttpHeaderRegex { name: "color".into(), values: vec!["^(red|blue)$".into()] },
                Condition::HttpHeader { name: "list".into(), values: vec!["a,b".into()] },
                Condition::QueryString(vec![QueryStringPair { key: Some("animal".into()), value: "whale".into() }]),
                Condition::HttpRequestMethod(vec!["POST".into()]),
            ]
        );
        assert_eq!(
            http_conditions("", 80, &HttpMatch::default()).unwrap(),
            vec![],
            "a rule without matches: no condition"
        );
    }

    /// The suite's GRPCRouteExactMethodMatching shapes, and what ALBC's wildcard reading of a
    /// regular expression would get wrong.
    #[test]
    fn grpc_methods_as_paths() {
        let g = |service: Option<&str>, method: Option<&str>, regex: bool| GrpcMatch {
            service: service.map(Into::into),
            method: method.map(Into::into),
            regex,
            headers: vec![],
        };
        let pattern = |c: &[Condition]| c.last().cloned().unwrap();
        let cases = [
            (
                g(Some("gateway_api_conformance.echo_basic.grpcecho.GrpcEcho"), Some("Echo"), false),
                Condition::PathPattern(vec!["/gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/Echo".into()]),
            ),
            (g(Some("svc"), None, false), Condition::PathPattern(vec!["/svc/*".into()])),
            (g(None, Some("Echo"), false), Condition::PathPattern(vec!["/*/Echo".into()])),
            (g(None, None, false), Condition::PathPattern(vec!["/*".into()])),
            (
                g(Some("echo\\..*"), Some("Ech."), true),
                Condition::PathPatternRegex(vec![r"^/(?:echo\..*)/(?:Ech.)$".into()]),
            ),
            (g(None, Some("Get.*"), true), Condition::PathPatternRegex(vec!["^/[^/]+/(?:Get.*)$".into()])),
        ];
        for (m, want) in cases {
            assert_eq!(pattern(&grpc_conditions("", &m).unwrap()), want, "{m:?}");
        }
        let Condition::PathPatternRegex(v) = pattern(&grpc_conditions("", &g(None, Some("Get.*"), true)).unwrap())
        else {
            panic!()
        };
        let re = regex::Regex::new(&v[0]).unwrap();
        assert!(re.is_match("/pkg.Svc/GetThing") && !re.is_match("/pkg.Svc/Put") && !re.is_match("/a/b/GetX"));
        assert!(grpc_conditions("", &g(Some("s*"), None, false)).is_err());
        let with_host = grpc_conditions("api.example.com", &g(Some("svc"), None, false)).unwrap();
        assert_eq!(with_host[0], Condition::HostHeader(vec!["api.example.com".into()]));
    }

    #[test]
    fn query_matches_an_alb_cannot_make_exact_are_refused() {
        for (regex, value) in [(true, "^a.*$"), (false, "wh*le")] {
            let m = HttpMatch {
                query_params: vec![ValueMatch { name: "animal".into(), regex, value: value.into() }],
                ..Default::default()
            };
            let e = http_conditions("", 80, &m).unwrap_err();
            assert!(e.contains("\"animal\"") && e.contains(value), "{e}");
        }
    }
}
