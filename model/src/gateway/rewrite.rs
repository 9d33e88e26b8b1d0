//! An HTTPRoute `URLRewrite` filter as ALB rule transforms, in the shapes ALBC builds
//! (`routeutils/route_rule_transform.go`), so a rule ALBC made compares equal: a hostname rewrite
//! is a `host-header-rewrite` of `.*`; `ReplaceFullPath` a `url-rewrite` of `^([^?]*)` (the path,
//! not the query); `ReplacePrefixMatch` a `url-rewrite` of `(^<prefix>(/)?)` with `$2` appended to a
//! replacement that does not end in `/` (so `/prefix/rest` keeps its `/`), and `/` for an empty
//! one. One difference: the prefix is escaped here (ALBC writes it raw, so a `.` in a path
//! prefix matched any character).
//!
//! AWS applies a transform after the rule matched ("rewriting a request does not change the
//! routing decision"); a URL rewrite never changes the protocol or port.

use super::matches::{HttpMatch, PathMatch};
use crate::lb::{Rewrite, Transform, TransformKind};
use serde_json::Value;

/// A `URLRewrite` filter, as the route wrote it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RewriteFilter {
    pub hostname: Option<String>,
    /// `path.replaceFullPath`.
    pub full_path: Option<String>,
    /// `path.replacePrefixMatch`.
    pub prefix_path: Option<String>,
}

const WHOLE_HOST: &str = ".*";
const PATH_WITHOUT_QUERY: &str = "^([^?]*)";

/// Reads a `URLRewrite` filter.
pub fn parse(f: &Value) -> Result<RewriteFilter, String> {
    let r = f.get("urlRewrite").ok_or("a URLRewrite filter without urlRewrite")?;
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let mut out = RewriteFilter { hostname: text(r, "hostname"), ..Default::default() };
    if let Some(p) = r.get("path") {
        match p.get("type").and_then(Value::as_str) {
            Some("ReplaceFullPath") => out.full_path = Some(text(p, "replaceFullPath").unwrap_or_default()),
            Some("ReplacePrefixMatch") => out.prefix_path = Some(text(p, "replacePrefixMatch").unwrap_or_default()),
            other => {
                return Err(format!("urlRewrite.path.type {other:?} is not ReplaceFullPath or ReplacePrefixMatch"));
            }
        }
    }
    Ok(out)
}

/// The transforms of `f` for a rule built from match `m` (`None`: the rule has no match, which is
/// the path prefix `/`).
pub fn transforms(f: &RewriteFilter, m: Option<&HttpMatch>) -> Result<Vec<Transform>, String> {
    let mut out = Vec::new();
    let one = |kind, regex: String, replace: String| Transform { kind, rewrites: vec![Rewrite { regex, replace }] };
    if let Some(path) = &f.full_path {
        out.push(one(TransformKind::UrlRewrite, PATH_WITHOUT_QUERY.into(), path.clone()));
    }
    if let Some(replace) = &f.prefix_path {
        let prefix = match m.and_then(|m| m.path.as_ref()) {
            None => "/".to_string(),
            Some(PathMatch::PathPrefix(p)) => p.clone(),
            Some(other) => {
                return Err(format!(
                    "urlRewrite.path ReplacePrefixMatch needs a PathPrefix match (the spec's rule), this match is {other:?}"
                ));
            }
        };
        let replace = match replace.as_str() {
            "" => "/".to_string(),
            r if r.ends_with('/') => r.to_string(),
            r => format!("{r}$2"),
        };
        out.push(one(TransformKind::UrlRewrite, format!("(^{}(/)?)", regex_syntax::escape(&prefix)), replace));
    }
    if let Some(host) = &f.hostname {
        out.push(one(TransformKind::HostHeaderRewrite, WHOLE_HOST.into(), host.clone()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prefix(p: &str) -> HttpMatch {
        HttpMatch { path: Some(PathMatch::PathPrefix(p.into())), ..Default::default() }
    }

    fn rewrites(t: &[Transform]) -> Vec<(TransformKind, &str, &str)> {
        t.iter().flat_map(|t| t.rewrites.iter().map(move |r| (t.kind, r.regex.as_str(), r.replace.as_str()))).collect()
    }

    #[test]
    fn the_shapes_are_albcs() {
        let f = parse(&json!({"type": "URLRewrite", "urlRewrite": {"hostname": "one.example.org",
            "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/cat"}}}))
        .unwrap();
        let t = transforms(&f, Some(&prefix("/prefix"))).unwrap();
        assert_eq!(
            rewrites(&t),
            vec![
                (TransformKind::UrlRewrite, "(^/prefix(/)?)", "/cat$2"),
                (TransformKind::HostHeaderRewrite, ".*", "one.example.org")
            ]
        );
        let full = RewriteFilter { full_path: Some("/one".into()), ..Default::default() };
        assert_eq!(rewrites(&transforms(&full, None).unwrap()), vec![(TransformKind::UrlRewrite, "^([^?]*)", "/one")]);
        let trailing = RewriteFilter { prefix_path: Some("/cat/".into()), ..Default::default() };
        assert_eq!(rewrites(&transforms(&trailing, Some(&prefix("/p"))).unwrap())[0].2, "/cat/");
        let empty = RewriteFilter { prefix_path: Some(String::new()), ..Default::default() };
        assert_eq!(rewrites(&transforms(&empty, None).unwrap()), vec![(TransformKind::UrlRewrite, "(^/(/)?)", "/")]);
    }

    #[test]
    fn a_prefix_is_escaped_and_needs_a_prefix_match() {
        let f = RewriteFilter { prefix_path: Some("/v2".into()), ..Default::default() };
        assert_eq!(rewrites(&transforms(&f, Some(&prefix("/v1.0"))).unwrap())[0].1, r"(^/v1\.0(/)?)");
        let exact = HttpMatch { path: Some(PathMatch::Exact("/a".into())), ..Default::default() };
        assert!(transforms(&f, Some(&exact)).unwrap_err().contains("needs a PathPrefix match"));
        let bad = json!({"type": "URLRewrite", "urlRewrite": {"path": {"type": "Other"}}});
        assert!(parse(&bad).unwrap_err().contains("not ReplaceFullPath or ReplacePrefixMatch"));
    }
}
