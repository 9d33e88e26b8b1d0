//! ALBC's rule optimizer (`pkg/ingress/rule_optimizer.go`), kept for compatibility with the old
//! `actions.ssl-redirect` idiom (a redirect rule on Ingresses with HTTP and HTTPS listeners):
//! 1. a redirect rule whose target is the request itself (same port, protocol, host, path, and
//!    query `#{query}`) would loop, so it is dropped;
//! 2. a rule after a redirect rule whose host and path conditions cover its own is unreachable,
//!    so it is dropped (the redirect rule must have only host-header and path-pattern
//!    conditions; no hosts covers every host; no paths or `/*` covers every path; the later
//!    rule's other conditions do not matter).

use std::collections::BTreeSet;

use super::actions::{Condition, RuleAction};
use super::rules::Rule;
use crate::lb::Protocol;

fn redirect(r: &Rule) -> Option<&RuleAction> {
    r.actions.iter().find(|a| matches!(a, RuleAction::Redirect { .. }))
}

/// (hosts, paths) of the glob host-header and path-pattern conditions; other conditions ignored.
fn hosts_paths(r: &Rule) -> (BTreeSet<&str>, BTreeSet<&str>) {
    let (mut hosts, mut paths) = (BTreeSet::new(), BTreeSet::new());
    for c in &r.conditions {
        match c {
            Condition::HostHeader(v) => hosts.extend(v.iter().map(String::as_str)),
            Condition::PathPattern(v) => paths.extend(v.iter().map(String::as_str)),
            _ => {}
        }
    }
    (hosts, paths)
}

fn only_hosts_and_paths(r: &Rule) -> bool {
    r.conditions.iter().all(|c| matches!(c, Condition::HostHeader(_) | Condition::PathPattern(_)))
}

fn loops(port: u16, protocol: Protocol, r: &Rule) -> bool {
    let Some(RuleAction::Redirect { protocol: to_proto, host, port: to_port, path, query, .. }) = redirect(r) else {
        return false;
    };
    let (hosts, paths) = hosts_paths(r);
    let same =
        |v: &Option<String>, keep: &str, ok: &dyn Fn(&str) -> bool| v.as_deref().is_none_or(|v| v == keep || ok(v));
    same(host, "#{host}", &|h| hosts.contains(h))
        && same(path, "/#{path}", &|p| paths.contains(p))
        && same(to_port, "#{port}", &|p| p == port.to_string())
        && same(to_proto, "#{protocol}", &|p| p == protocol.as_aws())
        && same(query, "#{query}", &|_| false)
}

fn covers(earlier: &Rule, later: &Rule) -> bool {
    if !only_hosts_and_paths(earlier) {
        return false;
    }
    let ((eh, ep), (lh, lp)) = (hosts_paths(earlier), hosts_paths(later));
    let hosts = eh.is_empty() || (!lh.is_empty() && eh.is_superset(&lh));
    let paths = ep.is_empty() || ep.contains("/*") || (!lp.is_empty() && ep.is_superset(&lp));
    hosts && paths
}

/// The rules of one listener without looping and shadowed ones, order kept.
pub(super) fn optimize(port: u16, protocol: Protocol, rules: Vec<Rule>) -> Vec<Rule> {
    let mut out: Vec<Rule> = Vec::new();
    for r in rules {
        if loops(port, protocol, &r) {
            continue;
        }
        if out.iter().any(|e| redirect(e).is_some() && covers(e, &r)) {
            continue;
        }
        out.push(r);
    }
    out
}
