//! The listener rules and default actions of an IngressGroup (ALBC
//! `pkg/ingress/model_build_listener_rules.go`, `model_build_listener.go`, `rule_optimizer.go`).
//!
//! For every listener port, members in group order, then `spec.rules[]` in order (entries
//! without `http` skipped), then the paths of that entry in ALBC's order — Exact paths first,
//! then Prefix paths longest first (stable), then ImplementationSpecific paths as written — one
//! rule each, listing:
//! - conditions: those of `conditions.<service name>` other than host/path first, then one
//!   host-header condition (the rule's host, then the annotation's hosts), then one path-pattern
//!   condition (the path's patterns, then the annotation's); a rule with no condition at all gets
//!   path-pattern `/*`. Patterns: Exact → the path; Prefix → `/` gives `/*`, `/foo` and `/foo/`
//!   give `/foo` and `/foo/*`; ImplementationSpecific → the path as written, or with
//!   `use-regex-path-match: "true"` a regex path condition (the path without its leading `/`).
//!   Wildcards (`*`, `?`) in Exact or Prefix paths, and glob and regex values for the same field,
//!   fail the group.
//! - transforms: the backend's `transforms.<name>` (see [`super::transforms`]), on every listener.
//! - actions: on HTTPS listeners the authenticate or JWT validation action first (see
//!   [`super::backends`]), then the backend action. An HTTP listener's rules of an Ingress with
//!   `jwt-validation` forward without it, as in ALBC, with a warning naming the port (deviation:
//!   ALBC says nothing).
//!
//! Then ALBC's optimizer: redirect rules that would redirect to themselves are dropped, and so
//! are rules shadowed by an earlier redirect rule whose host and path conditions cover theirs.
//! Priorities are 1, 2, 3… per listener in the resulting order, so the same members give the
//! same rules on every reconcile, a change to a member moves only the rules after its own, and a
//! member leaving removes its rules and renumbers the later ones (as ALBC does).
//!
//! With `ssl-redirect`, every HTTP listener has the redirect as its default action and no rules.
//! Otherwise the default action is the `spec.defaultBackend` of the one member on that port that
//! sets it (two such members fail the group), else a fixed 404 `text/plain`.
//!
//! A broken member fails the whole group, as in ALBC: the result is every error, and nothing is
//! built. Deviations: every error is reported, not only the first; ALBC reads a redirect rule with
//! only regex conditions as covering every host and path (so it would shadow all later rules); a
//! redirect rule with regex conditions never shadows here.

use std::collections::BTreeSet;

use k8s_openapi::api::networking::v1::HTTPIngressPath;

use super::actions::{Condition, RuleAction};
use super::backends::{Resolved, Services, resolve};
use super::keys::{self as k, full_key};
use super::merge::{GroupError, IngressKey, Member, MergeConfig, Merged};
use crate::lb::{Protocol, Transform};

/// One listener rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub priority: u32,
    /// The member whose path it is (its target groups are this member's).
    pub ingress: IngressKey,
    pub conditions: Vec<Condition>,
    pub actions: Vec<RuleAction>,
    /// `transforms.<name>` of its backend.
    pub transforms: Vec<Transform>,
}

/// The rules and default actions of one listener.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenerRules {
    pub port: u16,
    pub protocol: Protocol,
    pub default_actions: Vec<RuleAction>,
    /// The member whose `spec.defaultBackend` the default actions come from.
    pub default_from: Option<IngressKey>,
    pub rules: Vec<Rule>,
}

/// The ALB answer when no member has a default backend.
pub fn default_404() -> RuleAction {
    RuleAction::FixedResponse { status_code: "404".into(), content_type: Some("text/plain".into()), message_body: None }
}

/// The default action of HTTP listeners under `ssl-redirect`.
pub fn ssl_redirect(port: u16) -> RuleAction {
    RuleAction::Redirect {
        protocol: Some("HTTPS".into()),
        host: None,
        port: Some(port.to_string()),
        path: None,
        query: None,
        status_code: "HTTP_301".into(),
    }
}

/// Path patterns of one path: (glob values, regex values), or why the path is invalid.
pub fn path_patterns(path: &str, path_type: &str, use_regex: bool) -> Result<(Vec<String>, Vec<String>), String> {
    let wild = |kind: &str| format!("{kind} path {path:?} contains a wildcard (* or ?)");
    match path_type {
        "Exact" if path.contains(['*', '?']) => Err(wild("Exact")),
        "Exact" => Ok((vec![path.into()], vec![])),
        "Prefix" if path == "/" => Ok((vec!["/*".into()], vec![])),
        "Prefix" if path.contains(['*', '?']) => Err(wild("Prefix")),
        "Prefix" => {
            let p = path.strip_suffix('/').unwrap_or(path);
            Ok((vec![p.into(), format!("{p}/*")], vec![]))
        }
        "ImplementationSpecific" | "" if use_regex => Ok((vec![], vec![path.strip_prefix('/').unwrap_or(path).into()])),
        "ImplementationSpecific" | "" => Ok((vec![path.into()], vec![])),
        other => Err(format!("pathType {other:?} is not Exact, Prefix or ImplementationSpecific")),
    }
}

/// ALBC's path order within one `spec.rules[]` entry.
pub fn sort_paths(paths: &[HTTPIngressPath]) -> Vec<&HTTPIngressPath> {
    let rank = |p: &HTTPIngressPath| match p.path_type.as_str() {
        "Exact" => 0,
        "Prefix" => 1,
        _ => 2,
    };
    let mut out: Vec<&HTTPIngressPath> = paths.iter().collect();
    // Stable: Exact and ImplementationSpecific keep their order, Prefix longest first.
    out.sort_by_key(|p| (rank(p), if rank(p) == 1 { usize::MAX - p.path.as_deref().unwrap_or("").len() } else { 0 }));
    out
}

/// The conditions of one rule (see the module docs for the order).
pub fn conditions(
    host: &str,
    path: &str,
    path_type: &str,
    use_regex: bool,
    extra: &[Condition],
) -> Result<Vec<Condition>, String> {
    let (mut hosts, mut host_re, mut out) = (Vec::new(), Vec::new(), Vec::new());
    if !host.is_empty() {
        hosts.push(host.to_string());
    }
    let (mut paths, mut path_re) =
        if path.is_empty() { (vec![], vec![]) } else { path_patterns(path, path_type, use_regex)? };
    for c in extra {
        match c {
            Condition::HostHeader(v) => hosts.extend(v.iter().cloned()),
            Condition::HostHeaderRegex(v) => host_re.extend(v.iter().cloned()),
            Condition::PathPattern(v) => paths.extend(v.iter().cloned()),
            Condition::PathPatternRegex(v) => path_re.extend(v.iter().cloned()),
            other => out.push(other.clone()),
        }
    }
    if !hosts.is_empty() && !host_re.is_empty() {
        return Err(format!("host values {hosts:?} and host regex values {host_re:?} cannot be combined in one rule"));
    }
    if !paths.is_empty() && !path_re.is_empty() {
        return Err(format!("path values {paths:?} and path regex values {path_re:?} cannot be combined in one rule"));
    }
    let parts = [
        (hosts, Condition::HostHeader as fn(_) -> _),
        (host_re, Condition::HostHeaderRegex),
        (paths, Condition::PathPattern),
        (path_re, Condition::PathPatternRegex),
    ];
    out.extend(parts.into_iter().filter(|(v, _)| !v.is_empty()).map(|(v, f)| f(v)));
    if out.is_empty() {
        out.push(Condition::PathPattern(vec!["/*".into()]));
    }
    Ok(out)
}

/// A path of a member, resolved once for every listener.
struct Draft {
    conditions: Vec<Condition>,
    transforms: Vec<Transform>,
    backend: Resolved,
}

fn location(host: &str, path: &str) -> String {
    match host {
        "" => format!("path {path:?}"),
        h => format!("host {h:?} path {path:?}"),
    }
}

fn drafts(
    m: &Member,
    services: &Services,
    cfg: &MergeConfig,
    warnings: &mut Vec<String>,
    errs: &mut Vec<GroupError>,
) -> Vec<Draft> {
    let mut out = Vec::new();
    for r in m.spec.rules.iter().flatten() {
        let Some(http) = &r.http else { continue };
        let host = r.host.as_deref().unwrap_or("");
        for p in sort_paths(&http.paths) {
            let path = p.path.as_deref().unwrap_or("");
            let at = location(host, path);
            let backend = match resolve(m, &p.backend, &at, services, cfg, warnings) {
                Ok(b) => b,
                Err(e) => {
                    errs.push(e);
                    continue;
                }
            };
            let extra = m.settings.conditions.get(&backend.name).map(Vec::as_slice).unwrap_or_default();
            let transforms = m.settings.transforms.get(&backend.name).cloned().unwrap_or_default();
            match conditions(host, path, &p.path_type, m.settings.use_regex_path_match, extra) {
                Ok(conditions) => out.push(Draft { conditions, transforms, backend }),
                Err(problem) => errs.push(GroupError::Invalid {
                    ingress: m.key.to_string(),
                    location: at,
                    problem,
                    fix: "use pathType ImplementationSpecific for wildcards, and either glob or regex values".into(),
                }),
            }
        }
    }
    out
}

fn actions(protocol: Protocol, b: &Resolved, errs: &mut Vec<GroupError>) -> Vec<RuleAction> {
    let mut out = Vec::new();
    match (&b.auth, protocol) {
        (Some(Ok(a)), Protocol::Https) => out.push(a.clone()),
        (Some(Err(e)), Protocol::Https) if !errs.contains(e) => errs.push(e.clone()),
        _ => {}
    }
    out.push(b.action.clone());
    out
}

/// The rules and default actions of every listener of `merged`.
pub fn build_rules(
    members: &[Member],
    merged: &Merged,
    services: &Services,
    cfg: &MergeConfig,
) -> Result<(Vec<ListenerRules>, Vec<String>), Vec<GroupError>> {
    let (mut warnings, mut errs) = (Vec::new(), Vec::new());
    let mut defaults = Vec::new();
    let mut member_drafts = Vec::new();
    for m in members {
        member_drafts.push(drafts(m, services, cfg, &mut warnings, &mut errs));
        let d =
            m.spec.default_backend.as_ref().map(|b| resolve(m, b, "spec.defaultBackend", services, cfg, &mut warnings));
        defaults.push(match d {
            Some(Err(e)) => {
                errs.push(e);
                None
            }
            Some(Ok(r)) => Some(r),
            None => None,
        });
    }
    let mut listeners = Vec::new();
    for l in &merged.listeners {
        if let (Some(to), Protocol::Http) = (merged.ssl_redirect, l.protocol) {
            let default_actions = vec![ssl_redirect(to)];
            listeners.push(ListenerRules {
                port: l.port,
                protocol: l.protocol,
                default_actions,
                default_from: None,
                rules: vec![],
            });
            continue;
        }
        let with_default: Vec<usize> =
            l.members.iter().copied().filter(|&i| members[i].spec.default_backend.is_some()).collect();
        let (default_actions, default_from) = match with_default.as_slice() {
            [] => (vec![default_404()], None),
            [i] => match &defaults[*i] {
                Some(r) => (actions(l.protocol, r, &mut errs), Some(members[*i].key.clone())),
                None => (vec![default_404()], None),
            },
            many => {
                let ingresses = many.iter().map(|&i| members[i].key.to_string()).collect();
                errs.push(GroupError::DefaultBackends { port: l.port, ingresses });
                (vec![default_404()], None)
            }
        };
        let mut rules = Vec::new();
        for &i in &l.members {
            if l.protocol == Protocol::Http && members[i].settings.jwt_validation.is_some() {
                warnings.push(format!(
                    "Ingress {}: {} applies to HTTPS listeners only; its rules on HTTP port {} forward without JWT \
                     validation (set {} to send HTTP to HTTPS)",
                    members[i].key,
                    full_key(k::JWT_VALIDATION),
                    l.port,
                    full_key(k::SSL_REDIRECT)
                ));
            }
            for d in &member_drafts[i] {
                let actions = actions(l.protocol, &d.backend, &mut errs);
                rules.push(Rule {
                    priority: 0,
                    ingress: members[i].key.clone(),
                    conditions: d.conditions.clone(),
                    actions,
                    transforms: d.transforms.clone(),
                });
            }
        }
        let mut rules = super::optimize::optimize(l.port, l.protocol, rules);
        for (n, r) in rules.iter_mut().enumerate() {
            r.priority = n as u32 + 1;
        }
        listeners.push(ListenerRules { port: l.port, protocol: l.protocol, default_actions, default_from, rules });
    }
    let mut seen = BTreeSet::new();
    warnings.retain(|w| seen.insert(w.clone()));
    if errs.is_empty() { Ok((listeners, warnings)) } else { Err(errs) }
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
