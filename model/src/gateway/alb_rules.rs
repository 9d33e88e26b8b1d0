//! The rules of each ALB listener of a Gateway, from the HTTPRoutes attached to it: one rule per
//! (route, rule, match, hostname), ordered by [`super::precedence`] and numbered 1, 2, … per
//! listener port as ALBC numbers them, with [`super::matches`] conditions and
//! [`super::actions`] actions.
//!
//! A route one of whose rules cannot be expressed on an ALB gets no rule at all (never a wider
//! or partial match): [`build`] returns it with the reason, for its `Accepted` condition.

use super::actions::{self, RedirectFilter};
use super::matches::{HttpMatch, http_conditions};
use super::precedence::{MatchType, RuleKey, compare, split_hostnames};
use super::rewrite::{self, RewriteFilter};
use crate::lb::{Rule, Tags};
use std::collections::BTreeMap;

/// One rule of an HTTPRoute, its backends resolved to target-group names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RouteRuleIn {
    /// Empty: a rule without matches (every request).
    pub matches: Vec<HttpMatch>,
    pub redirect: Option<RedirectFilter>,
    /// A `URLRewrite` filter: the rule's transforms.
    pub rewrite: Option<RewriteFilter>,
    /// Target-group name and weight of each backend that resolved; empty: the rule answers 500.
    pub target_groups: Vec<(String, u32)>,
}

/// An HTTPRoute attached to the Gateway.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteIn {
    pub namespace: String,
    pub name: String,
    /// `metadata.creationTimestamp`, in seconds.
    pub created: i64,
    /// Per listener port it attached to: the hostnames it serves there (empty: every host).
    pub hostnames_by_port: BTreeMap<u16, Vec<String>>,
    pub rules: Vec<RouteRuleIn>,
}

/// The listeners' rules, and the routes refused with why (`namespace/name` → reason).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AlbRules {
    pub by_port: BTreeMap<u16, Vec<Rule>>,
    pub refused: BTreeMap<String, String>,
}

fn key_of(route: &RouteIn, rule_index: usize, match_index: usize, m: Option<&HttpMatch>, hostname: &str) -> RuleKey {
    use super::matches::PathMatch::*;
    let (match_type, primary_len) = match m.and_then(|m| m.path.as_ref()) {
        Some(Exact(v)) => (MatchType::Exact, v.len()),
        Some(PathPrefix(v)) => (MatchType::PathPrefix, v.len()),
        Some(RegularExpression(v)) => (MatchType::RegularExpression, v.len()),
        None => (MatchType::None, 0),
    };
    RuleKey {
        hostname: hostname.to_string(),
        match_type,
        primary_len,
        secondary_len: 0,
        has_method: m.is_some_and(|m| m.method.is_some()),
        headers: m.map_or(0, |m| m.headers.len()),
        query_params: m.map_or(0, |m| m.query_params.len()),
        created: route.created,
        route: format!("{}/{}", route.namespace, route.name),
        rule_index,
        match_index,
    }
}

/// The rules of every listener port the routes attached to.
pub fn build(routes: &[RouteIn]) -> AlbRules {
    let mut out = AlbRules::default();
    // (port, key) → the rule's conditions and action, per route until the route is known good.
    let mut keyed: BTreeMap<u16, Vec<(RuleKey, Rule)>> = BTreeMap::new();
    for route in routes {
        let id = format!("{}/{}", route.namespace, route.name);
        let mut mine: Vec<(u16, RuleKey, Rule)> = Vec::new();
        let mut problem = None;
        'rules: for (port, hostnames) in &route.hostnames_by_port {
            for (ri, rule) in route.rules.iter().enumerate() {
                let action = match &rule.redirect {
                    Some(f) => match actions::redirect(f) {
                        Ok(a) => a,
                        Err(e) => {
                            problem = Some(format!("rule {ri}: {e}"));
                            break 'rules;
                        }
                    },
                    None => actions::forward(&rule.target_groups),
                };
                let matches: Vec<(usize, Option<&HttpMatch>)> = if rule.matches.is_empty() {
                    vec![(usize::MAX, None)]
                } else {
                    rule.matches.iter().enumerate().map(|(i, m)| (i, Some(m))).collect()
                };
                for (mi, m) in matches {
                    let transforms = match rule.rewrite.as_ref().map(|f| rewrite::transforms(f, m)).transpose() {
                        Ok(t) => t.unwrap_or_default(),
                        Err(e) => {
                            problem = Some(format!("rule {ri} match {mi}: {e}"));
                            break 'rules;
                        }
                    };
                    for host in split_hostnames(hostnames) {
                        let conditions = match http_conditions(&host, *port, m.unwrap_or(&HttpMatch::default())) {
                            Ok(c) => c,
                            Err(e) => {
                                problem = Some(format!("rule {ri} match {mi}: {e}"));
                                break 'rules;
                            }
                        };
                        let rule = Rule {
                            priority: 0,
                            conditions,
                            actions: vec![action.clone()],
                            transforms: transforms.clone(),
                            tags: Tags::new(),
                        };
                        mine.push((*port, key_of(route, ri, mi, m, &host), rule));
                    }
                }
            }
        }
        match problem {
            Some(p) => {
                out.refused.insert(id, p);
            }
            None => {
                for (port, key, rule) in mine {
                    keyed.entry(port).or_default().push((key, rule));
                }
            }
        }
    }
    for (port, mut entries) in keyed {
        entries.sort_by(|a, b| compare(&a.0, &b.0));
        let rules =
            entries.into_iter().enumerate().map(|(i, (_, rule))| Rule { priority: i as u32 + 1, ..rule }).collect();
        out.by_port.insert(port, rules);
    }
    out
}

#[cfg(test)]
#[path = "alb_rules_tests.rs"]
mod tests;
