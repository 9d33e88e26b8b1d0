//! `transforms.<name>` on an Ingress: the host-header and URL rewrites of the rules whose backend
//! Service (or `actions.<name>` action) is `<name>`, on every listener, as in ALBC:
//! `[{"type": "url-rewrite", "urlRewriteConfig": {"rewrites": [{"regex": "^/api/(.*)$", "replace": "/$1"}]}}]`.
//! Keys are case-insensitive as in ALBC. Checked here, before any AWS call: ALBC's rules (a known
//! type with its own config and at least one rewrite) and AWS's (one transform per type,
//! regexes and replacements within their limits); deviation: unknown keys and the other type's
//! config are refused instead of ignored.

use serde::Deserialize;

use super::actions::decode;
use crate::lb::{Rewrite, Transform, TransformKind, transform_problems};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTransform {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(rename = "hostheaderrewriteconfig")]
    host: Option<RawRewrites>,
    #[serde(rename = "urlrewriteconfig")]
    url: Option<RawRewrites>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRewrites {
    #[serde(default)]
    rewrites: Vec<RawRewrite>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRewrite {
    #[serde(default)]
    regex: String,
    #[serde(default)]
    replace: String,
}

/// One `transforms.<name>` value; `Err` says every problem found.
pub fn parse_transforms(raw: &str) -> Result<Vec<Transform>, String> {
    let list: Vec<RawTransform> = decode(raw)?;
    let mut problems = Vec::new();
    let mut out = Vec::new();
    for t in list {
        let (config, other) = match TransformKind::parse(&t.kind) {
            Some(TransformKind::HostHeaderRewrite) => ((TransformKind::HostHeaderRewrite, t.host), t.url),
            Some(TransformKind::UrlRewrite) => ((TransformKind::UrlRewrite, t.url), t.host),
            None => {
                problems.push(format!("type {:?} is not host-header-rewrite or url-rewrite", t.kind));
                continue;
            }
        };
        let (kind, rewrites) = config;
        let name = kind.as_str();
        if other.is_some() {
            problems.push(format!("a {name} transform takes only its own config"));
        }
        let Some(rewrites) = rewrites else {
            let key = if kind == TransformKind::UrlRewrite { "urlRewriteConfig" } else { "hostHeaderRewriteConfig" };
            problems.push(format!("the {name} transform needs {key}"));
            continue;
        };
        let rewrites = rewrites.rewrites.into_iter().map(|r| Rewrite { regex: r.regex, replace: r.replace }).collect();
        out.push(Transform { kind, rewrites });
    }
    problems.extend(transform_problems(&out));
    if problems.is_empty() { Ok(out) } else { Err(problems.join("; ")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_kinds_parse_with_keys_in_any_case() {
        let raw = r#"[{"type":"host-header-rewrite","hostHeaderRewriteConfig":{"rewrites":[{"regex":"^old\\.example$","replace":"new.example"}]}},
                      {"Type":"url-rewrite","UrlRewriteConfig":{"Rewrites":[{"Regex":"^/api/(.*)$","Replace":"/$1"}]}}]"#;
        let got = parse_transforms(raw).unwrap();
        let rw = |a: &str, b: &str| vec![Rewrite { regex: a.into(), replace: b.into() }];
        assert_eq!(
            got,
            vec![
                Transform { kind: TransformKind::HostHeaderRewrite, rewrites: rw("^old\\.example$", "new.example") },
                Transform { kind: TransformKind::UrlRewrite, rewrites: rw("^/api/(.*)$", "/$1") },
            ]
        );
        assert_eq!(parse_transforms("[]").unwrap(), vec![]);
    }

    #[test]
    fn bad_values_are_refused_with_the_reason() {
        let url = |body: &str| format!(r#"[{{"type":"url-rewrite","urlRewriteConfig":{{"rewrites":[{body}]}}}}]"#);
        let cases = [
            ("{}".to_string(), "sequence"),
            (r#"[{"type":"path-rewrite"}]"#.to_string(), "\"path-rewrite\" is not host-header-rewrite or url-rewrite"),
            (r#"[{"type":"url-rewrite"}]"#.to_string(), "needs urlRewriteConfig"),
            (r#"[{"type":"url-rewrite","urlRewriteConfig":{"rewrites":[]}}]"#.to_string(), "has no rewrites"),
            (
                r#"[{"type":"url-rewrite","urlRewriteConfig":{"rewrites":[{"regex":"a","replace":"b"}]},"hostHeaderRewriteConfig":{"rewrites":[]}}]"#
                    .to_string(),
                "takes only its own config",
            ),
            (url(r#"{"regex":"^/(?=x)","replace":"/"}"#), "not a valid regular expression"),
            (url(r#"{"regex":"a","replace":"b","flags":"i"}"#), "unknown field"),
            (
                r#"[{"type":"url-rewrite","urlRewriteConfig":{"rewrites":[{"regex":"a","replace":"b"}]}},
                    {"type":"url-rewrite","urlRewriteConfig":{"rewrites":[{"regex":"c","replace":"d"}]}}]"#
                    .to_string(),
                "2 url-rewrite transforms",
            ),
        ];
        for (raw, want) in cases {
            let err = parse_transforms(&raw).expect_err(&raw);
            assert!(err.contains(want), "{raw}: {err}");
        }
    }
}
