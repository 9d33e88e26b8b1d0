//! Listener rules (ALB) and the authentication actions rules and listeners may start with.
//!
//! Comparison: a rule's conditions are ANDed and the values inside one condition are ORed, so
//! neither order means anything to AWS. AWS returns both in the order they were sent, which would
//! make a read-back compare equal to what we sent — but a desired rule is built from Kubernetes
//! objects whose order is not stable (annotation maps, host lists), and a rule edited in the
//! console comes back in the editor's order. So the diff compares [`Rule::normalized`] forms
//! (conditions and their values sorted, host names lower-cased because AWS matches them
//! case-insensitively), and an order-only difference never costs a ModifyRule. Actions keep their
//! order: it is their meaning (authenticate, then forward).

use super::{Action, Tags, Transform};
use std::collections::BTreeMap;

/// Priorities AWS accepts for non-default rules.
pub const RULE_PRIORITIES: std::ops::RangeInclusive<u32> = 1..=50_000;

/// A listener rule (ALB). Priority 1..=50000, unique per listener.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub priority: u32,
    pub conditions: Vec<Condition>,
    pub actions: Vec<Action>,
    /// Applied to a matching request before its action; compared in [`Transform`] order.
    pub transforms: Vec<Transform>,
    pub tags: Tags,
}

/// One rule condition (`Field` in AWS), with its values.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Condition {
    /// `HostHeaderConfig.Values`: host names with `*` / `?` wildcards.
    HostHeader(Vec<String>),
    /// `HostHeaderConfig.RegexValues`.
    HostHeaderRegex(Vec<String>),
    /// `PathPatternConfig.Values`: paths with `*` / `?` wildcards.
    PathPattern(Vec<String>),
    /// `PathPatternConfig.RegexValues`.
    PathPatternRegex(Vec<String>),
    /// `HttpHeaderConfig.Values`: header values with `*` / `?` wildcards.
    HttpHeader {
        name: String,
        values: Vec<String>,
    },
    /// `HttpHeaderConfig.RegexValues`.
    HttpHeaderRegex {
        name: String,
        values: Vec<String>,
    },
    HttpRequestMethod(Vec<String>),
    QueryString(Vec<QueryStringPair>),
    /// CIDRs.
    SourceIp(Vec<String>),
}

/// A query-string condition value: `key=value`, or any key with `value` when `key` is `None`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QueryStringPair {
    pub key: Option<String>,
    pub value: String,
}

/// `authenticate-oidc`. AWS never returns `client_secret` (Describe answers leave it out), so an
/// observed action always has `None` there; see [`Action::without_secrets`] and
/// [`OIDC_SECRET_DIGEST_TAG`] for how the diff copes. `Debug` leaves the secret out.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthenticateOidc {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub user_info_endpoint: String,
    pub client_id: String,
    pub client_secret: Option<String>,
    /// The credentials' keyed digest ([`crate::lb::build::OidcCredentials::digest`]); never sent
    /// to AWS, `None` in what AWS reports.
    pub client_secret_digest: Option<String>,
    pub scope: Option<String>,
    pub session_cookie_name: Option<String>,
    pub session_timeout_seconds: Option<u64>,
    /// `deny` | `allow` | `authenticate`.
    pub on_unauthenticated_request: Option<String>,
    pub extra_params: BTreeMap<String, String>,
}

/// `authenticate-cognito`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthenticateCognito {
    pub user_pool_arn: String,
    pub user_pool_client_id: String,
    pub user_pool_domain: String,
    pub scope: Option<String>,
    pub session_cookie_name: Option<String>,
    pub session_timeout_seconds: Option<u64>,
    pub on_unauthenticated_request: Option<String>,
    pub extra_params: BTreeMap<String, String>,
}

impl std::fmt::Debug for AuthenticateOidc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthenticateOidc")
            .field("issuer", &self.issuer)
            .field("authorization_endpoint", &self.authorization_endpoint)
            .field("token_endpoint", &self.token_endpoint)
            .field("user_info_endpoint", &self.user_info_endpoint)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<redacted>"))
            .field("client_secret_digest", &self.client_secret_digest)
            .field("scope", &self.scope)
            .field("session_cookie_name", &self.session_cookie_name)
            .field("session_timeout_seconds", &self.session_timeout_seconds)
            .field("on_unauthenticated_request", &self.on_unauthenticated_request)
            .field("extra_params", &self.extra_params)
            .finish()
    }
}

/// Tag on rules and listeners whose actions authenticate with OIDC: a digest of the client
/// credentials they were last written with. AWS never returns the client secret, so this tag is
/// how the diff tells "unchanged" (no write) from "rotated in the Secret" (ModifyRule /
/// ModifyListener with the new secret). Not a tag ALBC writes; ALBC-created rules lack it and
/// are rewritten once when adopted.
pub const OIDC_SECRET_DIGEST_TAG: &str = "ingress.k8s.aws/oidc-secret-digest";

/// Rule conditions ALBs limit (AWS "Condition types for listener rules"): each regex value at
/// most this long.
pub const REGEX_VALUE_MAX_LEN: usize = 128;
/// At most this many match evaluations (values) per condition.
pub const VALUES_PER_CONDITION_MAX: usize = 3;

impl Condition {
    /// AWS's `Field` name.
    pub fn field(&self) -> &'static str {
        match self {
            Condition::HostHeader(_) | Condition::HostHeaderRegex(_) => "host-header",
            Condition::PathPattern(_) | Condition::PathPatternRegex(_) => "path-pattern",
            Condition::HttpHeader { .. } | Condition::HttpHeaderRegex { .. } => "http-header",
            Condition::HttpRequestMethod(_) => "http-request-method",
            Condition::QueryString(_) => "query-string",
            Condition::SourceIp(_) => "source-ip",
        }
    }

    /// Values sorted and de-duplicated; host names lower-cased (see the module docs).
    pub fn normalized(&self) -> Condition {
        fn sorted(v: &[String], lower: bool) -> Vec<String> {
            let mut v: Vec<String> = v.iter().map(|s| if lower { s.to_ascii_lowercase() } else { s.clone() }).collect();
            v.sort();
            v.dedup();
            v
        }
        match self {
            Condition::HostHeader(v) => Condition::HostHeader(sorted(v, true)),
            // A regex is compared as written: lower-casing could change its meaning (`\D`).
            Condition::HostHeaderRegex(v) => Condition::HostHeaderRegex(sorted(v, false)),
            Condition::PathPattern(v) => Condition::PathPattern(sorted(v, false)),
            Condition::PathPatternRegex(v) => Condition::PathPatternRegex(sorted(v, false)),
            // Header names are case-insensitive in HTTP, values are not.
            Condition::HttpHeader { name, values } => {
                Condition::HttpHeader { name: name.to_ascii_lowercase(), values: sorted(values, false) }
            }
            Condition::HttpHeaderRegex { name, values } => {
                Condition::HttpHeaderRegex { name: name.to_ascii_lowercase(), values: sorted(values, false) }
            }
            Condition::HttpRequestMethod(v) => Condition::HttpRequestMethod(sorted(v, false)),
            Condition::QueryString(v) => {
                let mut v = v.clone();
                v.sort();
                v.dedup();
                Condition::QueryString(v)
            }
            Condition::SourceIp(v) => Condition::SourceIp(sorted(v, false)),
        }
    }
}

impl Rule {
    /// Conditions normalized and sorted, transforms sorted (one per kind, so their order means
    /// nothing); actions as they are (their order is their meaning).
    pub fn normalized(&self) -> Rule {
        let mut conditions: Vec<Condition> = self.conditions.iter().map(Condition::normalized).collect();
        conditions.sort();
        let mut transforms = self.transforms.clone();
        transforms.sort();
        Rule { conditions, transforms, ..self.clone() }
    }
}

/// Why a regex value is refused: AWS's limits (length, visible ASCII only) and the features
/// ALB regexes lack (lookaround, backreferences, atomic groups, possessive quantifiers,
/// recursion, Unicode classes); `None` when it is acceptable.
pub fn regex_value_problem(re: &str) -> Option<String> {
    regex_problem(re, REGEX_VALUE_MAX_LEN)
}

/// [`regex_value_problem`] with another length limit (rule transforms take 1,024 characters).
pub(super) fn regex_problem(re: &str, max_len: usize) -> Option<String> {
    if re.is_empty() {
        return Some("is empty".into());
    }
    if re.len() > max_len {
        return Some(format!("is {} characters long, more than the {max_len} AWS accepts", re.len()));
    }
    if let Some(c) = re.chars().find(|c| !(c.is_ascii_graphic() || *c == ' ')) {
        return Some(format!("contains {c:?}; AWS matches visible ASCII characters only"));
    }
    let ast = match regex_syntax::ast::parse::Parser::new().parse(re) {
        Ok(ast) => ast,
        Err(e) => {
            return Some(format!(
                "is not a valid regular expression ({}); lookarounds, backreferences, atomic groups and possessive quantifiers are not supported by ALB either",
                e.kind()
            ));
        }
    };
    struct UnicodeClass(bool);
    impl regex_syntax::ast::Visitor for UnicodeClass {
        type Output = bool;
        type Err = ();
        fn finish(self) -> Result<bool, ()> {
            Ok(self.0)
        }
        fn visit_pre(&mut self, ast: &regex_syntax::ast::Ast) -> Result<(), ()> {
            self.0 |= matches!(ast, regex_syntax::ast::Ast::ClassUnicode(_));
            Ok(())
        }
        fn visit_class_set_item_pre(&mut self, item: &regex_syntax::ast::ClassSetItem) -> Result<(), ()> {
            self.0 |= matches!(item, regex_syntax::ast::ClassSetItem::Unicode(_));
            Ok(())
        }
    }
    if regex_syntax::ast::visit(&ast, UnicodeClass(false)) == Ok(true) {
        return Some("uses a Unicode character class (\\p{..}), which ALB regexes do not support".into());
    }
    None
}

impl Action {
    /// The action with the OIDC client secret left out: what AWS reports back, so what a
    /// comparison can use. Without this every pass would see "secret: Some(x) vs None" and modify
    /// the rule. A secret changed in the source is noticed through [`OIDC_SECRET_DIGEST_TAG`].
    pub fn without_secrets(&self) -> Action {
        match self {
            Action::AuthenticateOidc(o) => Action::AuthenticateOidc(AuthenticateOidc {
                client_secret: None,
                client_secret_digest: None,
                ..o.clone()
            }),
            other => other.clone(),
        }
    }
}

/// The value of [`OIDC_SECRET_DIGEST_TAG`] for `actions`: the OIDC actions' issuers and credential
/// digests, hashed and cut to 16 hex digits; `None` without an OIDC action with credentials. The
/// credential digests are keyed with the Secret's UID
/// ([`crate::ingress::oidc::credentials_digest`]), which AWS never sees: whoever may read the tag
/// cannot test guesses of the secret against it.
pub fn oidc_secret_digest(actions: &[Action]) -> Option<String> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"aws-lb-controller/oidc-client-secret/v2");
    let mut any = false;
    for a in actions {
        if let Action::AuthenticateOidc(AuthenticateOidc { issuer, client_secret_digest: Some(digest), .. }) = a {
            any = true;
            for part in [issuer, digest] {
                h.update((part.len() as u64).to_be_bytes());
                h.update(part.as_bytes());
            }
        }
    }
    any.then(|| hex::encode(&h.finalize()[..8]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_and_host_case_do_not_matter() {
        let a = Rule {
            priority: 1,
            conditions: vec![
                Condition::PathPattern(vec!["/b".into(), "/a".into()]),
                Condition::HostHeader(vec!["Example.COM".into()]),
            ],
            actions: vec![],
            transforms: vec![],
            tags: Tags::new(),
        };
        let b = Rule {
            conditions: vec![
                Condition::HostHeader(vec!["example.com".into()]),
                Condition::PathPattern(vec!["/a".into(), "/b".into()]),
            ],
            ..a.clone()
        };
        assert_ne!(a, b);
        assert_eq!(a.normalized(), b.normalized());
        // Paths are case-sensitive in AWS: a case change is a real change.
        let c = Rule { conditions: vec![Condition::PathPattern(vec!["/A".into()])], ..a.clone() };
        let d = Rule { conditions: vec![Condition::PathPattern(vec!["/a".into()])], ..a.clone() };
        assert_ne!(c.normalized(), d.normalized());
    }

    #[test]
    fn secrets_are_left_out_of_comparisons() {
        let oidc = AuthenticateOidc {
            issuer: "https://idp".into(),
            authorization_endpoint: "https://idp/auth".into(),
            token_endpoint: "https://idp/token".into(),
            user_info_endpoint: "https://idp/userinfo".into(),
            client_id: "id".into(),
            client_secret: Some("s3cret".into()),
            client_secret_digest: Some("d1".into()),
            scope: None,
            session_cookie_name: None,
            session_timeout_seconds: None,
            on_unauthenticated_request: None,
            extra_params: BTreeMap::new(),
        };
        let want = Action::AuthenticateOidc(oidc.clone());
        let have = Action::AuthenticateOidc(AuthenticateOidc {
            client_secret: None,
            client_secret_digest: None,
            ..oidc.clone()
        });
        assert_eq!(want.without_secrets(), have);
        let other = Action::AuthenticateOidc(AuthenticateOidc { client_id: "id2".into(), ..oidc });
        assert_ne!(other.without_secrets(), have);
    }

    #[test]
    fn regex_values_are_checked_like_aws() {
        let long = format!("^/{}$", "a".repeat(REGEX_VALUE_MAX_LEN));
        let cases: &[(&str, Option<&str>)] = &[
            ("^/api/v[0-9]+/.*$", None),
            ("api/(users|orders)/[0-9]+", None),
            ("^[a-z0-9-]+\\.example\\.com$", None),
            ("^\\/escaped\\/slash$", None),
            ("", Some("is empty")),
            (&long, Some("characters long")),
            ("^/caf\u{e9}$", Some("visible ASCII")),
            ("^/a\tb$", Some("visible ASCII")),
            ("^/(unclosed$", Some("not a valid regular expression")),
            ("^/(?=look)ahead$", Some("not a valid regular expression")),
            ("^/(?<!x)behind$", Some("not a valid regular expression")),
            ("^/(a)\\1$", Some("not a valid regular expression")),
            ("^/(?>atomic)$", Some("not a valid regular expression")),
            ("^/\\p{L}+$", Some("Unicode character class")),
            ("^/[\\p{Greek}a-z]+$", Some("Unicode character class")),
        ];
        for (re, want) in cases {
            let got = regex_value_problem(re);
            match want {
                None => assert_eq!(got, None, "{re:?}"),
                Some(part) => assert!(got.as_deref().is_some_and(|g| g.contains(part)), "{re:?}: {got:?}"),
            }
        }
    }

    #[test]
    fn the_oidc_digest_follows_the_credentials_and_debug_hides_the_secret() {
        // The credentials' keyed digest, as `credentials_digest` makes it from a Secret.
        let keyed = |id: &str, secret: &str| crate::ingress::oidc::credentials_digest("uid-1", id, secret);
        let oidc = |id: &str, secret: Option<&str>| {
            Action::AuthenticateOidc(AuthenticateOidc {
                issuer: "https://idp".into(),
                authorization_endpoint: "https://idp/auth".into(),
                token_endpoint: "https://idp/token".into(),
                user_info_endpoint: "https://idp/userinfo".into(),
                client_id: id.into(),
                client_secret: secret.map(str::to_string),
                client_secret_digest: secret.map(|s| keyed(id, s)),
                scope: None,
                session_cookie_name: None,
                session_timeout_seconds: None,
                on_unauthenticated_request: None,
                extra_params: BTreeMap::new(),
            })
        };
        let fixed = Action::FixedResponse { status_code: "200".into(), content_type: None, message_body: None };
        let d = |a: Vec<Action>| oidc_secret_digest(&a);
        let base = d(vec![oidc("id", Some("s3cret")), fixed.clone()]).unwrap();
        assert_eq!(base.len(), 16);
        assert_eq!(d(vec![oidc("id", Some("s3cret"))]).as_ref(), Some(&base), "only the credentials count");
        assert_ne!(d(vec![oidc("id", Some("s3cret2"))]).as_ref(), Some(&base), "a rotated secret");
        assert_ne!(d(vec![oidc("id2", Some("s3cret"))]).as_ref(), Some(&base), "another client");
        assert_eq!(d(vec![oidc("id", None)]), None, "no secret, no digest");
        assert_eq!(d(vec![fixed]), None);
        let shown = format!("{:?}", oidc("id", Some("s3cret")));
        assert!(!shown.contains("s3cret") && shown.contains("<redacted>"), "{shown}");
    }
}
