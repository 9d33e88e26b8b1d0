//! An HTTPRoute's rules as the ALB builder reads them: matches with the API's defaults applied,
//! the `RequestRedirect` filter, and the backend references.
//!
//! Every other filter is refused with the reason (the route is then not built at all, and its
//! `Accepted` condition says why): an ALB rule cannot modify headers, mirror or rewrite here yet,
//! and answering without the filter would serve something the route did not ask for. Weights
//! above 999 are refused too: an ALB forward takes weights from 0 to 999, and scaling them would
//! change the ratios the route wrote only where they were not representable anyway.

use super::actions::RedirectFilter;
use super::api::{HTTPPathMatch, HTTPRoute, HTTPRouteMatch, HTTPValueMatch};
use super::matches::{HttpMatch, PathMatch, ValueMatch};
use super::refs::BackendRef;
use super::rewrite::{self, RewriteFilter};
use serde_json::Value;

/// The largest weight of one target group in an ALB forward action.
pub const ALB_MAX_WEIGHT: i32 = 999;

/// One rule of an HTTPRoute, defaults applied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleSpec {
    /// Empty: the rule matches every request.
    pub matches: Vec<HttpMatch>,
    pub redirect: Option<RedirectFilter>,
    /// A `URLRewrite` filter: rule transforms.
    pub rewrite: Option<RewriteFilter>,
    pub backends: Vec<BackendRef>,
}

fn path(p: Option<&HTTPPathMatch>) -> Result<PathMatch, String> {
    let value = p.and_then(|p| p.value.clone()).unwrap_or_else(|| "/".into());
    match p.and_then(|p| p.type_.as_deref()).unwrap_or("PathPrefix") {
        "Exact" => Ok(PathMatch::Exact(value)),
        "PathPrefix" => Ok(PathMatch::PathPrefix(value)),
        "RegularExpression" => Ok(PathMatch::RegularExpression(value)),
        other => Err(format!("path match type {other:?} is not Exact, PathPrefix or RegularExpression")),
    }
}

fn value_match(what: &str, v: &HTTPValueMatch) -> Result<ValueMatch, String> {
    let regex = match v.type_.as_deref().unwrap_or("Exact") {
        "Exact" => false,
        "RegularExpression" => true,
        other => return Err(format!("{what} {:?}: match type {other:?} is not Exact or RegularExpression", v.name)),
    };
    Ok(ValueMatch { name: v.name.clone(), regex, value: v.value.clone() })
}

fn http_match(m: &HTTPRouteMatch) -> Result<HttpMatch, String> {
    Ok(HttpMatch {
        path: Some(path(m.path.as_ref())?),
        headers: m.headers.iter().map(|h| value_match("header", h)).collect::<Result<_, _>>()?,
        query_params: m.query_params.iter().map(|q| value_match("query parameter", q)).collect::<Result<_, _>>()?,
        method: m.method.clone(),
    })
}

fn int(v: &Value, key: &str) -> Result<Option<i32>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(n) => n
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| format!("requestRedirect.{key} {n} is not a number")),
    }
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn redirect(f: &Value) -> Result<RedirectFilter, String> {
    let r = f.get("requestRedirect").ok_or("a RequestRedirect filter without requestRedirect")?;
    let mut out = RedirectFilter {
        scheme: text(r, "scheme"),
        hostname: text(r, "hostname"),
        port: int(r, "port")?,
        status_code: int(r, "statusCode")?,
        ..Default::default()
    };
    if let Some(p) = r.get("path") {
        match p.get("type").and_then(Value::as_str) {
            Some("ReplaceFullPath") => out.full_path = text(p, "replaceFullPath"),
            Some("ReplacePrefixMatch") => out.prefix_path = text(p, "replacePrefixMatch"),
            other => {
                return Err(format!(
                    "requestRedirect.path.type {other:?} is not ReplaceFullPath or ReplacePrefixMatch"
                ));
            }
        }
    }
    Ok(out)
}

/// The route's rules; `Err` names the first rule the ALB cannot serve as written, and why.
pub fn rules(route: &HTTPRoute) -> Result<Vec<RuleSpec>, String> {
    route
        .spec
        .rules
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let at = |e: String| format!("rule {i}: {e}");
            let (mut redirect_filter, mut rewrite_filter) = (None, None);
            for f in &r.filters {
                match f.get("type").and_then(Value::as_str) {
                    Some("RequestRedirect") if redirect_filter.is_none() => redirect_filter = Some(redirect(f).map_err(at)?),
                    Some("RequestRedirect") => return Err(at("more than one RequestRedirect filter".into())),
                    Some("URLRewrite") if rewrite_filter.is_none() => rewrite_filter = Some(rewrite::parse(f).map_err(at)?),
                    Some("URLRewrite") => return Err(at("more than one URLRewrite filter".into())),
                    other => {
                        return Err(at(format!(
                            "filter type {} is not supported on an ALB by this controller (supported: RequestRedirect, \
                             URLRewrite)",
                            other.unwrap_or("(none)")
                        )));
                    }
                }
            }
            if redirect_filter.is_some() && rewrite_filter.is_some() {
                return Err(at("RequestRedirect and URLRewrite in one rule: the spec allows one of them".into()));
            }
            let mut backends = Vec::new();
            for b in &r.backend_refs {
                if !b.filters.is_empty() {
                    return Err(at(format!("backendRef {}: filters on a backendRef are not supported on an ALB", b.name)));
                }
                if let Some(w) = b.weight.filter(|w| !(0..=ALB_MAX_WEIGHT).contains(w)) {
                    return Err(at(format!(
                        "backendRef {}: weight {w} is outside what an ALB forward takes (0 to {ALB_MAX_WEIGHT}); scale the \
                         rule's weights down keeping their ratio",
                        b.name
                    )));
                }
                backends.push(super::api::backend_ref(b));
            }
            Ok(RuleSpec {
                matches: r.matches.iter().map(http_match).collect::<Result<_, _>>().map_err(at)?,
                redirect: redirect_filter,
                rewrite: rewrite_filter,
                backends,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::api::{HTTPBackendRef, HTTPRouteRule, HTTPRouteSpec};
    use serde_json::json;

    fn route(rules: Vec<HTTPRouteRule>) -> HTTPRoute {
        HTTPRoute::new("r", HTTPRouteSpec { rules, ..Default::default() })
    }

    #[test]
    fn a_match_without_path_is_the_prefix_slash() {
        let r = route(vec![HTTPRouteRule { matches: vec![HTTPRouteMatch::default()], ..Default::default() }]);
        let got = rules(&r).unwrap();
        assert_eq!(got[0].matches[0].path, Some(PathMatch::PathPrefix("/".into())));
        // No matches at all: the rule matches everything and gets no match entry.
        assert!(rules(&route(vec![HTTPRouteRule::default()])).unwrap()[0].matches.is_empty());
    }

    #[test]
    fn header_and_query_types_default_to_exact() {
        let m = HTTPRouteMatch {
            headers: vec![HTTPValueMatch { type_: None, name: "version".into(), value: "two".into() }],
            query_params: vec![HTTPValueMatch {
                type_: Some("RegularExpression".into()),
                name: "q".into(),
                value: "^a".into(),
            }],
            ..Default::default()
        };
        let got = rules(&route(vec![HTTPRouteRule { matches: vec![m], ..Default::default() }])).unwrap();
        assert!(!got[0].matches[0].headers[0].regex);
        assert!(got[0].matches[0].query_params[0].regex);
    }

    #[test]
    fn redirect_filters_are_read_and_others_refused_by_name() {
        let redirect = json!({"type": "RequestRedirect", "requestRedirect": {
            "scheme": "https", "statusCode": 301, "path": {"type": "ReplaceFullPath", "replaceFullPath": "/x"}}});
        let got = rules(&route(vec![HTTPRouteRule { filters: vec![redirect], ..Default::default() }])).unwrap();
        let f = got[0].redirect.as_ref().unwrap();
        assert_eq!(
            (f.scheme.as_deref(), f.status_code, f.full_path.as_deref()),
            (Some("https"), Some(301), Some("/x"))
        );
        let header = json!({"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": []}});
        let err = rules(&route(vec![
            HTTPRouteRule::default(),
            HTTPRouteRule { filters: vec![header], ..Default::default() },
        ]))
        .unwrap_err();
        assert!(err.starts_with("rule 1: filter type RequestHeaderModifier"), "{err}");
    }

    #[test]
    fn url_rewrite_filters_are_read_one_per_rule_and_never_with_a_redirect() {
        let rewrite = json!({"type": "URLRewrite", "urlRewrite": {"hostname": "h.example.org"}});
        let got = rules(&route(vec![HTTPRouteRule { filters: vec![rewrite.clone()], ..Default::default() }])).unwrap();
        assert_eq!(got[0].rewrite.as_ref().and_then(|r| r.hostname.as_deref()), Some("h.example.org"));
        let two = HTTPRouteRule { filters: vec![rewrite.clone(), rewrite.clone()], ..Default::default() };
        assert!(rules(&route(vec![two])).unwrap_err().contains("more than one URLRewrite"));
        let redirect = json!({"type": "RequestRedirect", "requestRedirect": {"scheme": "https"}});
        let both = HTTPRouteRule { filters: vec![redirect, rewrite], ..Default::default() };
        assert!(rules(&route(vec![both])).unwrap_err().contains("RequestRedirect and URLRewrite"));
    }

    #[test]
    fn weights_an_alb_cannot_take_are_refused() {
        let b = |weight| HTTPBackendRef { name: "svc".into(), port: Some(80), weight, ..Default::default() };
        let ok =
            rules(&route(vec![HTTPRouteRule { backend_refs: vec![b(Some(0)), b(Some(999))], ..Default::default() }]));
        assert_eq!(ok.unwrap()[0].backends.len(), 2);
        let err = rules(&route(vec![HTTPRouteRule { backend_refs: vec![b(Some(1000))], ..Default::default() }]));
        assert!(err.unwrap_err().contains("weight 1000"));
    }
}
