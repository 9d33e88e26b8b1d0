//! Which listeners of a Gateway a route attaches to, through one of its `parentRefs`, and with
//! which hostnames: the route's `Accepted` condition for that parent and the listeners'
//! `attachedRoutes`.
//!
//! Attachment depends on the parent reference and the listeners' `allowedRoutes` alone (the
//! spec: "Listener or Route status does not impact successful attachment"), then on hostnames:
//! a parentRef's `sectionName` and `port` must name listeners (else `NoMatchingParent`), those
//! listeners must allow the route's namespace and kind (else `NotAllowedByListeners`), and the
//! route's hostnames must intersect theirs (else `NoMatchingListenerHostname`). One listener
//! accepting is enough for the route to be accepted by that parent.

use super::conditions::*;
use super::hostname;
use super::listeners::{GatewayVerdict, ListenerSpec};
use super::{GROUP, RouteKind};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use std::collections::BTreeMap;

/// `allowedRoutes.namespaces.from` of a listener (default `Same`).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum AllowedNamespaces {
    #[default]
    Same,
    All,
    /// Namespaces whose labels the selector selects.
    Selector(LabelSelector),
}

/// A listener as attachment sees it: its spec and who may attach.
#[derive(Clone, Debug, PartialEq)]
pub struct AttachListener {
    pub spec: ListenerSpec,
    pub namespaces: AllowedNamespaces,
}

/// One of our Gateways, with its listeners' verdict.
#[derive(Clone, Debug)]
pub struct GatewayView<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub listeners: &'a [AttachListener],
    pub verdict: &'a GatewayVerdict,
}

/// One `parentRefs` entry of a route, defaults applied by [`ParentRef::resolve`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ParentRef {
    pub group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub section_name: Option<String>,
    pub port: Option<i32>,
}

impl ParentRef {
    /// The reference as the route wrote it: an absent group is Gateway API's, an absent kind
    /// `Gateway`, an absent namespace the route's own.
    pub fn resolve(
        route_namespace: &str,
        group: Option<&str>,
        kind: Option<&str>,
        namespace: Option<&str>,
        name: &str,
        section_name: Option<&str>,
        port: Option<i32>,
    ) -> Self {
        Self {
            group: group.unwrap_or(GROUP).to_string(),
            kind: kind.unwrap_or("Gateway").to_string(),
            namespace: namespace.unwrap_or(route_namespace).to_string(),
            name: name.to_string(),
            section_name: section_name.map(String::from),
            port,
        }
    }

    /// Names the Gateway `namespace/name`.
    pub fn is_gateway(&self, namespace: &str, name: &str) -> bool {
        self.group == GROUP && self.kind == "Gateway" && self.namespace == namespace && self.name == name
    }
}

/// A route as attachment sees it.
#[derive(Clone, Debug)]
pub struct RouteView<'a> {
    /// `HTTPRoute`, `GRPCRoute`, `TCPRoute`, `UDPRoute` or `TLSRoute`.
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub hostnames: &'a [String],
}

/// What one parent reference of a route to one of our Gateways comes to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attachment {
    /// The route's `Accepted` condition for this parent.
    pub accepted: Cond,
    /// The listeners it attaches to, each with the hostnames the route serves there (empty: every host).
    pub listeners: BTreeMap<String, Vec<String>>,
}

fn namespace_allowed(
    from: &AllowedNamespaces,
    gateway_ns: &str,
    route_ns: &str,
    labels: &dyn Fn(&str) -> Option<BTreeMap<String, String>>,
) -> bool {
    match from {
        AllowedNamespaces::Same => gateway_ns == route_ns,
        AllowedNamespaces::All => true,
        AllowedNamespaces::Selector(sel) => {
            labels(route_ns).is_some_and(|l| crate::ingress::select::selector_matches(sel, &l))
        }
    }
}

/// Attaches `route` through `parent` (a reference to `gw`). `labels`: a namespace's labels
/// (`None`: not known), for listeners that select namespaces by label.
pub fn attach(
    gw: &GatewayView<'_>,
    parent: &ParentRef,
    route: &RouteView<'_>,
    labels: &dyn Fn(&str) -> Option<BTreeMap<String, String>>,
) -> Attachment {
    let refused = |reason: &'static str, message: String| Attachment {
        accepted: Cond::new(ACCEPTED, false, reason, message),
        listeners: BTreeMap::new(),
    };
    let named: Vec<&AttachListener> = gw
        .listeners
        .iter()
        .filter(|l| parent.section_name.as_deref().is_none_or(|s| s == l.spec.name))
        .filter(|l| parent.port.is_none_or(|p| p == l.spec.port))
        .collect();
    if named.is_empty() {
        let wanted = match (&parent.section_name, parent.port) {
            (Some(s), Some(p)) => format!("a listener named {s:?} on port {p}"),
            (Some(s), None) => format!("a listener named {s:?}"),
            (None, Some(p)) => format!("a listener on port {p}"),
            (None, None) => "a listener".to_string(),
        };
        let have: Vec<String> =
            gw.listeners.iter().map(|l| format!("{:?} (port {})", l.spec.name, l.spec.port)).collect();
        return refused(
            REASON_NO_MATCHING_PARENT,
            format!("Gateway {}/{} has no {wanted}; its listeners: {}", gw.namespace, gw.name, have.join(", ")),
        );
    }
    let kind = RouteKind::gateway_api(route.kind);
    let allowed: Vec<&AttachListener> = named
        .into_iter()
        .filter(|l| {
            let takes_kind = gw
                .verdict
                .listeners
                .iter()
                .find(|v| v.name == l.spec.name)
                .is_some_and(|v| v.supported_kinds.contains(&kind));
            takes_kind && namespace_allowed(&l.namespaces, gw.namespace, route.namespace, labels)
        })
        .collect();
    if allowed.is_empty() {
        return refused(
            REASON_NOT_ALLOWED_BY_LISTENERS,
            format!(
                "no listener of Gateway {}/{} that the parentRef names allows a {} from namespace {} (see each \
                 listener's allowedRoutes: namespaces and kinds)",
                gw.namespace, gw.name, route.kind, route.namespace
            ),
        );
    }
    let listeners: BTreeMap<String, Vec<String>> = allowed
        .iter()
        .filter_map(|l| {
            Some((l.spec.name.clone(), hostname::on_listener(l.spec.hostname.as_deref(), route.hostnames)?))
        })
        .collect();
    if listeners.is_empty() {
        let theirs: Vec<String> = allowed
            .iter()
            .map(|l| format!("{:?}: {}", l.spec.name, l.spec.hostname.as_deref().unwrap_or("any")))
            .collect();
        return refused(
            REASON_NO_MATCHING_LISTENER_HOSTNAME,
            format!(
                "hostnames {} of {} {}/{} match no hostname of the listeners of Gateway {}/{} it may attach to ({})",
                route.hostnames.join(", "),
                route.kind,
                route.namespace,
                route.name,
                gw.namespace,
                gw.name,
                theirs.join("; ")
            ),
        );
    }
    Attachment { accepted: Cond::new(ACCEPTED, true, REASON_ACCEPTED, ""), listeners }
}

/// `attachedRoutes` per listener of a Gateway: the accepted attachments naming each listener
/// (a route counts once per listener, however many of its parentRefs lead there).
pub fn attached_routes<'a>(
    listeners: &[AttachListener],
    attachments: impl IntoIterator<Item = (&'a str, &'a Attachment)>,
) -> BTreeMap<String, i32> {
    let mut routes: BTreeMap<&str, std::collections::BTreeSet<&str>> = BTreeMap::new();
    for (route, a) in attachments {
        if a.accepted.status == CondStatus::True {
            for name in a.listeners.keys() {
                routes.entry(name.as_str()).or_default().insert(route);
            }
        }
    }
    listeners
        .iter()
        .map(|l| (l.spec.name.clone(), routes.get(l.spec.name.as_str()).map_or(0, |r| r.len() as i32)))
        .collect()
}

#[cfg(test)]
#[path = "attach_tests.rs"]
mod tests;
