//! Cross-namespace references and the ReferenceGrants that allow them, and a route's
//! `backendRefs` resolved to Services: the route's `ResolvedRefs` reasons.
//!
//! A reference into another namespace is allowed only by a ReferenceGrant in that namespace
//! whose `from` names the referring kind and namespace and whose `to` names the referred kind
//! (and name, when it gives one). The check comes before the lookup, so a route never learns
//! whether a Service it may not reference exists.

use super::conditions::*;

/// One `spec.from` entry of a ReferenceGrant (`group` empty: the core group).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantFrom {
    pub group: String,
    pub kind: String,
    pub namespace: String,
}

/// One `spec.to` entry (`name` absent: every object of the kind).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantTo {
    pub group: String,
    pub kind: String,
    pub name: Option<String>,
}

/// A ReferenceGrant: trust given in `namespace` to the `from` kinds for the `to` objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    pub namespace: String,
    pub from: Vec<GrantFrom>,
    pub to: Vec<GrantTo>,
}

/// An object reference: group (empty: core), kind, namespace, name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjRef<'a> {
    pub group: &'a str,
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

/// Whether `from` may reference `to`: the same namespace, or a grant in `to`'s namespace.
pub fn permitted(grants: &[Grant], from: ObjRef<'_>, to: ObjRef<'_>) -> bool {
    from.namespace == to.namespace
        || grants.iter().filter(|g| g.namespace == to.namespace).any(|g| {
            g.from.iter().any(|f| f.group == from.group && f.kind == from.kind && f.namespace == from.namespace)
                && g.to
                    .iter()
                    .any(|t| t.group == to.group && t.kind == to.kind && t.name.as_deref().is_none_or(|n| n == to.name))
        })
}

/// One `backendRefs` entry as the route wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendRef {
    pub group: Option<String>,
    pub kind: Option<String>,
    pub namespace: Option<String>,
    pub name: String,
    pub port: Option<i32>,
    pub weight: Option<i32>,
}

/// A backend that resolved: a Service and port.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ServiceBackend {
    pub namespace: String,
    pub name: String,
    pub port: i32,
    /// `weight` (default 1; 0: no traffic).
    pub weight: i32,
}

/// Why a backend did not resolve: the route's `ResolvedRefs` reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unresolved {
    pub reason: &'static str,
    pub message: String,
}

/// Resolves `b`, a backend of `route` (kind and namespace). `service_exists(namespace, name)`
/// looks the Service up.
pub fn resolve_backend(
    route_kind: &str,
    route_namespace: &str,
    route_name: &str,
    b: &BackendRef,
    grants: &[Grant],
    service_exists: &dyn Fn(&str, &str) -> bool,
) -> Result<ServiceBackend, Unresolved> {
    let group = b.group.as_deref().unwrap_or("");
    let kind = b.kind.as_deref().unwrap_or("Service");
    let namespace = b.namespace.as_deref().unwrap_or(route_namespace);
    let what = format!("backendRef {namespace}/{} of {route_kind} {route_namespace}/{route_name}", b.name);
    if !(group.is_empty() && kind == "Service") {
        let shown = if group.is_empty() { kind.to_string() } else { format!("{group}/{kind}") };
        return Err(Unresolved {
            reason: REASON_INVALID_KIND,
            message: format!("{what}: kind {shown} is not a backend here; expected a core Service"),
        });
    }
    let from = ObjRef { group: super::GROUP, kind: route_kind, namespace: route_namespace, name: route_name };
    let to = ObjRef { group: "", kind: "Service", namespace, name: &b.name };
    if !permitted(grants, from, to) {
        return Err(Unresolved {
            reason: REASON_REF_NOT_PERMITTED,
            message: format!(
                "{what}: no ReferenceGrant in namespace {namespace} allows {route_kind}s of namespace \
                 {route_namespace} to reference Service {}; create one there",
                b.name
            ),
        });
    }
    let Some(port) = b.port else {
        return Err(Unresolved {
            reason: REASON_BACKEND_NOT_FOUND,
            message: format!("{what}: a Service backend needs a port"),
        });
    };
    if !service_exists(namespace, &b.name) {
        return Err(Unresolved { reason: REASON_BACKEND_NOT_FOUND, message: format!("{what}: Service not found") });
    }
    Ok(ServiceBackend { namespace: namespace.to_string(), name: b.name.clone(), port, weight: b.weight.unwrap_or(1) })
}

/// A route's `ResolvedRefs` condition from the resolution of every backend of every rule: True
/// when all resolved; else False with the first failure's reason and every failure in the
/// message (the route stays accepted: its rules with resolved backends still route, the others
/// answer 500, as the spec asks).
pub fn resolved_refs(results: &[Result<ServiceBackend, Unresolved>]) -> Cond {
    let failed: Vec<&Unresolved> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    match failed.first() {
        None => Cond::new(RESOLVED_REFS, true, REASON_RESOLVED_REFS, ""),
        Some(first) => Cond::new(
            RESOLVED_REFS,
            false,
            first.reason,
            failed.iter().map(|u| u.message.as_str()).collect::<Vec<_>>().join("; "),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(ns: &str, from_ns: &str, from_kind: &str, to_name: Option<&str>) -> Grant {
        Grant {
            namespace: ns.into(),
            from: vec![GrantFrom {
                group: crate::gateway::GROUP.into(),
                kind: from_kind.into(),
                namespace: from_ns.into(),
            }],
            to: vec![GrantTo { group: String::new(), kind: "Service".into(), name: to_name.map(Into::into) }],
        }
    }

    fn backend(ns: Option<&str>, name: &str) -> BackendRef {
        BackendRef {
            group: None,
            kind: None,
            namespace: ns.map(Into::into),
            name: name.into(),
            port: Some(8080),
            weight: None,
        }
    }

    /// The suite's HTTPRouteReferenceGrant, HTTPRouteInvalidReferenceGrant,
    /// HTTPRouteInvalidCrossNamespaceBackendRef, HTTPRouteInvalidNonExistentBackendRef and
    /// HTTPRouteInvalidBackendRefUnknownKind, as resolutions.
    #[test]
    fn backend_resolution_table() {
        let exists = |ns: &str, name: &str| (ns, name) != ("app", "missing");
        let specific = grant("backend", "app", "HTTPRoute", Some("web"));
        let any = grant("backend", "app", "HTTPRoute", None);
        let wrong_from = grant("backend", "other", "HTTPRoute", None);
        let wrong_kind = grant("backend", "app", "GRPCRoute", None);
        let elsewhere = grant("app", "app", "HTTPRoute", None);
        type Case = (&'static str, BackendRef, Vec<Grant>, Result<(&'static str, i32), &'static str>);
        let mut unknown_kind = backend(None, "web");
        unknown_kind.kind = Some("UnknownKind".into());
        let mut other_group = backend(None, "web");
        other_group.group = Some("example.com".into());
        let mut no_port = backend(None, "web");
        no_port.port = None;
        let mut weighted = backend(None, "web");
        weighted.weight = Some(0);
        let cases: Vec<Case> = vec![
            ("same namespace", backend(None, "web"), vec![], Ok(("app", 1))),
            ("same namespace named", backend(Some("app"), "web"), vec![], Ok(("app", 1))),
            ("weight 0 kept", weighted, vec![], Ok(("app", 0))),
            ("cross, no grant", backend(Some("backend"), "web"), vec![], Err(REASON_REF_NOT_PERMITTED)),
            ("cross, grant for the name", backend(Some("backend"), "web"), vec![specific.clone()], Ok(("backend", 1))),
            (
                "cross, grant for another name",
                backend(Some("backend"), "api"),
                vec![specific],
                Err(REASON_REF_NOT_PERMITTED),
            ),
            ("cross, grant for every Service", backend(Some("backend"), "api"), vec![any], Ok(("backend", 1))),
            (
                "cross, grant from another namespace",
                backend(Some("backend"), "web"),
                vec![wrong_from],
                Err(REASON_REF_NOT_PERMITTED),
            ),
            (
                "cross, grant for another kind",
                backend(Some("backend"), "web"),
                vec![wrong_kind],
                Err(REASON_REF_NOT_PERMITTED),
            ),
            (
                "cross, grant in the wrong namespace",
                backend(Some("backend"), "web"),
                vec![elsewhere],
                Err(REASON_REF_NOT_PERMITTED),
            ),
            ("missing Service", backend(None, "missing"), vec![], Err(REASON_BACKEND_NOT_FOUND)),
            ("no port", no_port, vec![], Err(REASON_BACKEND_NOT_FOUND)),
            ("unknown kind", unknown_kind, vec![], Err(REASON_INVALID_KIND)),
            ("another group", other_group, vec![], Err(REASON_INVALID_KIND)),
        ];
        for (what, b, grants, want) in cases {
            let got = resolve_backend("HTTPRoute", "app", "r", &b, &grants, &exists);
            match (got, want) {
                (Ok(s), Ok((ns, weight))) => {
                    assert_eq!((s.namespace.as_str(), s.weight, s.port), (ns, weight, 8080), "{what}")
                }
                (Err(u), Err(reason)) => {
                    assert_eq!(u.reason, reason, "{what}: {}", u.message);
                    assert!(u.message.contains("HTTPRoute app/r"), "{what}: {}", u.message);
                }
                (got, want) => panic!("{what}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn resolved_refs_names_the_first_reason_and_every_failure() {
        let ok = Ok(ServiceBackend { namespace: "a".into(), name: "s".into(), port: 80, weight: 1 });
        assert_eq!(resolved_refs(std::slice::from_ref(&ok)).status, CondStatus::True);
        assert_eq!(resolved_refs(&[]).reason, REASON_RESOLVED_REFS);
        let denied = Err(Unresolved { reason: REASON_REF_NOT_PERMITTED, message: "x denied".into() });
        let missing = Err(Unresolved { reason: REASON_BACKEND_NOT_FOUND, message: "y missing".into() });
        let c = resolved_refs(&[ok, denied, missing]);
        assert_eq!((c.status, c.reason), (CondStatus::False, REASON_REF_NOT_PERMITTED));
        assert_eq!(c.message, "x denied; y missing");
    }

    #[test]
    fn a_forbidden_reference_is_refused_before_the_lookup() {
        let looked = std::cell::Cell::new(false);
        let exists = |_: &str, _: &str| {
            looked.set(true);
            false
        };
        let e = resolve_backend("HTTPRoute", "app", "r", &backend(Some("secret"), "db"), &[], &exists).unwrap_err();
        assert_eq!(e.reason, REASON_REF_NOT_PERMITTED);
        assert!(!looked.get(), "never learns whether the Service exists");
    }
}
