//! Rule transforms (ALB): rewrite the host header or the URL of a matching request before it is
//! forwarded (`transforms.<name>` on an Ingress). AWS's rules, checked before any call: at most
//! one host-header rewrite and one URL rewrite per rule, each with at least one rewrite whose
//! regex (1..=1,024 characters, without the regex features ALB lacks) and replacement (at most
//! 1,024 characters) are set. A default rule takes none.

use super::rule::regex_problem;

/// AWS's limit on a rewrite's regex and replacement.
pub const REWRITE_MAX_LEN: usize = 1024;

/// What a transform rewrites.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TransformKind {
    HostHeaderRewrite,
    UrlRewrite,
}

impl TransformKind {
    pub const ALL: [TransformKind; 2] = [TransformKind::HostHeaderRewrite, TransformKind::UrlRewrite];

    /// AWS's name (`host-header-rewrite`, `url-rewrite`).
    pub fn as_str(self) -> &'static str {
        match self {
            TransformKind::HostHeaderRewrite => "host-header-rewrite",
            TransformKind::UrlRewrite => "url-rewrite",
        }
    }

    pub fn parse(s: &str) -> Option<TransformKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// Replace what `regex` matches with `replace` (`$1`… name capture groups).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rewrite {
    pub regex: String,
    pub replace: String,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Transform {
    pub kind: TransformKind,
    pub rewrites: Vec<Rewrite>,
}

/// What AWS would refuse in one rule's transforms, one text per problem; empty when valid.
pub fn transform_problems(transforms: &[Transform]) -> Vec<String> {
    let mut out = Vec::new();
    for kind in TransformKind::ALL {
        let n = transforms.iter().filter(|t| t.kind == kind).count();
        if n > 1 {
            out.push(format!("{n} {} transforms, AWS accepts one per rule", kind.as_str()));
        }
    }
    for t in transforms {
        let kind = t.kind.as_str();
        if t.rewrites.is_empty() {
            out.push(format!("the {kind} transform has no rewrites"));
        }
        for r in &t.rewrites {
            if let Some(p) = regex_problem(&r.regex, REWRITE_MAX_LEN) {
                out.push(format!("{kind} regex {:?} {p}", r.regex));
            }
            if r.replace.len() > REWRITE_MAX_LEN {
                out.push(format!(
                    "{kind} replacement is {} characters long, more than the {REWRITE_MAX_LEN} AWS accepts",
                    r.replace.len()
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(kind: TransformKind, pairs: &[(&str, &str)]) -> Transform {
        let rewrites = pairs.iter().map(|(a, b)| Rewrite { regex: a.to_string(), replace: b.to_string() }).collect();
        Transform { kind, rewrites }
    }

    #[test]
    fn kinds_round_trip() {
        for k in TransformKind::ALL {
            assert_eq!(TransformKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(TransformKind::parse("query-rewrite"), None);
    }

    #[test]
    fn aws_rules_each_with_its_reason() {
        use TransformKind::{HostHeaderRewrite as Host, UrlRewrite as Url};
        let ok = [t(Host, &[("^old\\.example\\.com$", "new.example.com")]), t(Url, &[("^/api/(.*)$", "/$1")])];
        assert_eq!(transform_problems(&ok), Vec::<String>::new());
        assert_eq!(transform_problems(&[]), Vec::<String>::new());
        let long = "a".repeat(REWRITE_MAX_LEN + 1);
        let cases: Vec<(Vec<Transform>, &str)> = vec![
            (vec![t(Url, &[("^/a$", "/b")]), t(Url, &[("^/c$", "/d")])], "2 url-rewrite transforms"),
            (vec![t(Host, &[])], "host-header-rewrite transform has no rewrites"),
            (vec![t(Url, &[("", "/b")])], "is empty"),
            (vec![t(Url, &[("^/(?=x)", "/b")])], "not a valid regular expression"),
            (vec![t(Url, &[(long.as_str(), "/b")])], "more than the 1024"),
            (vec![t(Url, &[("^/a$", long.as_str())])], "replacement is 1025 characters"),
        ];
        for (ts, want) in cases {
            let got = transform_problems(&ts);
            assert!(got.len() == 1 && got[0].contains(want), "{want}: {got:?}");
        }
    }
}
