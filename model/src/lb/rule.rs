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

use super::{Action, Tags};
use std::collections::BTreeMap;

/// Priorities AWS accepts for non-default rules.
pub const RULE_PRIORITIES: std::ops::RangeInclusive<u32> = 1..=50_000;

/// A listener rule (ALB). Priority 1..=50000, unique per listener.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub priority: u32,
    pub conditions: Vec<Condition>,
    pub actions: Vec<Action>,
    pub tags: Tags,
}

/// One rule condition (`Field` in AWS), with its values.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Condition {
    HostHeader(Vec<String>),
    PathPattern(Vec<String>),
    HttpHeader {
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
/// observed action always has `None` there; see [`Action::without_secrets`] for how the diff copes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthenticateOidc {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub user_info_endpoint: String,
    pub client_id: String,
    pub client_secret: Option<String>,
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

impl Condition {
    /// AWS's `Field` name.
    pub fn field(&self) -> &'static str {
        match self {
            Condition::HostHeader(_) => "host-header",
            Condition::PathPattern(_) => "path-pattern",
            Condition::HttpHeader { .. } => "http-header",
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
            Condition::PathPattern(v) => Condition::PathPattern(sorted(v, false)),
            // Header names are case-insensitive in HTTP, values are not.
            Condition::HttpHeader { name, values } => {
                Condition::HttpHeader { name: name.to_ascii_lowercase(), values: sorted(values, false) }
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
    /// Conditions normalized and sorted; actions as they are (their order is their meaning).
    pub fn normalized(&self) -> Rule {
        let mut conditions: Vec<Condition> = self.conditions.iter().map(Condition::normalized).collect();
        conditions.sort();
        Rule { conditions, ..self.clone() }
    }
}

impl Action {
    /// The action with the OIDC client secret left out: what AWS reports back, so what a
    /// comparison can use. Without this every pass would see "secret: Some(x) vs None" and modify
    /// the rule. The price: a secret changed in the source alone is not noticed until something
    /// else about the action or rule changes (ModifyRule then sends the current secret).
    pub fn without_secrets(&self) -> Action {
        match self {
            Action::AuthenticateOidc(o) => {
                Action::AuthenticateOidc(AuthenticateOidc { client_secret: None, ..o.clone() })
            }
            other => other.clone(),
        }
    }
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
            scope: None,
            session_cookie_name: None,
            session_timeout_seconds: None,
            on_unauthenticated_request: None,
            extra_params: BTreeMap::new(),
        };
        let want = Action::AuthenticateOidc(oidc.clone());
        let have = Action::AuthenticateOidc(AuthenticateOidc { client_secret: None, ..oidc.clone() });
        assert_eq!(want.without_secrets(), have);
        let other = Action::AuthenticateOidc(AuthenticateOidc { client_id: "id2".into(), ..oidc });
        assert_ne!(other.without_secrets(), have);
    }
}
