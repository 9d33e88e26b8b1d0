use super::*;
use crate::gateway::Flavor;
use crate::gateway::attach::{GatewayView, RouteView, attach};
use crate::gateway::conditions::{CondStatus, REASON_ACCEPTED, REASON_NOT_ALLOWED_BY_LISTENERS};
use crate::gateway::listeners::assess;
use serde_json::json;
use std::collections::BTreeMap;

/// The conformance suite's base Gateway `backend-namespaces` (listeners taking routes from
/// namespaces labelled `gateway-conformance: backend`), as the API server returns it.
fn backend_namespaces_gateway() -> Gateway {
    serde_json::from_value(json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": "backend-namespaces", "namespace": "gateway-conformance-infra", "generation": 1},
        "spec": {
            "gatewayClassName": "ours",
            "listeners": [{
                "name": "http",
                "port": 80,
                "protocol": "HTTP",
                "allowedRoutes": {
                    "namespaces": {"from": "Selector", "selector": {"matchLabels": {"gateway-conformance": "backend"}}}
                }
            }]
        },
        "status": {"conditions": [{"type": "Accepted", "status": "Unknown", "reason": "Pending", "message": "Waiting for controller",
                                   "lastTransitionTime": "1970-01-01T00:00:00Z"}]}
    }))
    .expect("a Gateway")
}

fn route(ns: &str) -> HTTPRoute {
    serde_json::from_value(json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "backend-route", "namespace": ns},
        "spec": {
            "parentRefs": [{"name": "backend-namespaces", "namespace": "gateway-conformance-infra"}],
            "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                       "backendRefs": [{"name": "web-backend", "port": 8080}]}]
        }
    }))
    .expect("an HTTPRoute")
}

#[test]
fn a_gateway_and_its_routes_read_from_the_api_attach_as_the_suite_expects() {
    let gw = backend_namespaces_gateway();
    let listeners = listener_views(&gw).unwrap();
    let specs: Vec<_> = listeners.iter().map(|l| l.spec.clone()).collect();
    let verdict = assess(Flavor::Alb, &specs);
    let view = GatewayView {
        namespace: "gateway-conformance-infra",
        name: "backend-namespaces",
        listeners: &listeners,
        verdict: &verdict,
    };
    let labels = |ns: &str| match ns {
        "gateway-conformance-web-backend" => Some(BTreeMap::from([("gateway-conformance".into(), "backend".into())])),
        _ => Some(BTreeMap::new()),
    };
    for (ns, want) in [
        ("gateway-conformance-web-backend", REASON_ACCEPTED),
        ("gateway-conformance-app-backend", REASON_NOT_ALLOWED_BY_LISTENERS),
    ] {
        let r = route(ns);
        let parents = parent_refs(ns, &r.spec.parent_refs);
        assert_eq!(parents.len(), 1);
        assert!(parents[0].is_gateway("gateway-conformance-infra", "backend-namespaces"));
        let rv = RouteView { kind: "HTTPRoute", namespace: ns, name: "backend-route", hostnames: &r.spec.hostnames };
        let a = attach(&view, &parents[0], &rv, &labels);
        assert_eq!(a.accepted.reason, want, "{ns}: {}", a.accepted.message);
        assert_eq!(a.accepted.status == CondStatus::True, want == REASON_ACCEPTED);
    }
    assert_eq!(route("x").spec.rules[0].backend_refs[0].port, Some(8080));
}

#[test]
fn allowed_routes_the_controller_cannot_read_are_named() {
    let mut gw = backend_namespaces_gateway();
    gw.spec.listeners[0].allowed_routes.as_mut().unwrap().namespaces.as_mut().unwrap().selector = None;
    let e = listener_views(&gw).unwrap_err();
    assert!(e.contains("gateway-conformance-infra/backend-namespaces") && e.contains("without a selector"), "{e}");
    gw.spec.listeners[0].allowed_routes.as_mut().unwrap().namespaces.as_mut().unwrap().from = Some("None".into());
    assert!(listener_views(&gw).unwrap_err().contains("\"None\" is not All, Same or Selector"));
    gw.spec.listeners[0].allowed_routes = None;
    assert_eq!(listener_views(&gw).unwrap()[0].namespaces, AllowedNamespaces::Same, "the default");
}

#[test]
fn a_reference_grant_reads_as_the_trust_it_gives() {
    let g: ReferenceGrant = serde_json::from_value(json!({
        "apiVersion": "gateway.networking.k8s.io/v1beta1",
        "kind": "ReferenceGrant",
        "metadata": {"name": "allow", "namespace": "backend"},
        "spec": {
            "from": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": "app"}],
            "to": [{"group": "", "kind": "Service", "name": "web"}]
        }
    }))
    .unwrap();
    let g = grant(&g);
    let b = crate::gateway::refs::BackendRef {
        group: None,
        kind: None,
        namespace: Some("backend".into()),
        name: "web".into(),
        port: Some(80),
        weight: None,
    };
    let r = crate::gateway::refs::resolve_backend("HTTPRoute", "app", "r", &b, &[g], &|_, _| true).unwrap();
    assert_eq!((r.namespace.as_str(), r.name.as_str(), r.port), ("backend", "web", 80));
}

/// Empty lists are left out when written, so the API server applies the CRDs' defaults (a rule
/// sent with `matches: []` would get no default `PathPrefix /` match and match nothing).
#[test]
fn empty_lists_are_not_written() {
    let rule = serde_json::to_value(HTTPRouteRule::default()).unwrap();
    assert_eq!(rule, json!({}), "{rule}");
    let listener =
        serde_json::to_value(Listener { name: "l".into(), port: 80, protocol: "HTTP".into(), ..Default::default() });
    assert_eq!(listener.unwrap(), json!({"name": "l", "port": 80, "protocol": "HTTP"}));
}
