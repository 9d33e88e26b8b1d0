//! Gateway API read types against the real CRDs (issue 34): a GatewayClass, a Gateway, HTTPRoutes
//! and a ReferenceGrant shaped as the conformance suite's base manifests, written through the API
//! server with the upstream v1.6.3 standard CRDs (e2e/up installs them), read back with the
//! controller's types (so with every default the CRDs apply), and run through the model's
//! listener, attachment and ReferenceGrant decisions.

use kube::api::{Api, DeleteParams, PostParams};
use lbc_e2e::{Env, kube_util, unique};
use lbc_model::gateway::api::{
    Gateway, GatewayClass, HTTPRoute, ReferenceGrant, backend_ref, grant, listener_views, parent_refs,
};
use lbc_model::gateway::attach::{AllowedNamespaces, GatewayView, RouteView, attach};
use lbc_model::gateway::conditions::{
    CondStatus, REASON_ACCEPTED, REASON_NOT_ALLOWED_BY_LISTENERS, REASON_REF_NOT_PERMITTED,
};
use lbc_model::gateway::listeners::assess;
use lbc_model::gateway::refs::resolve_backend;
use lbc_model::gateway::{Flavor, RouteKind};
use serde_json::json;
use std::collections::BTreeMap;

/// A Gateway of class gateway.k8s.aws/alb gets its ALB (gate ALBGatewayAPI).
#[path = "gateway_api/alb.rs"]
mod alb;

/// A Gateway ALBC built is adopted with no AWS write (the real ALBC binary).
#[path = "gateway_api/adoption.rs"]
mod adoption;
#[path = "gateway_api/certificates.rs"]
mod certificates;

fn from<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
    serde_json::from_value(v).expect("an object of our types")
}

fn route(ns: &str, gw_ns: &str, backend_ns: &str) -> HTTPRoute {
    from(json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {
            "parentRefs": [{"name": "gw", "namespace": gw_ns}],
            "rules": [{"backendRefs": [{"name": "web-backend", "namespace": backend_ns, "port": 8080}]}]
        }
    }))
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn gateway_objects_read_back_from_the_api_server_attach_as_the_suite_expects() {
    let Some(env) = Env::require("gateway_objects_read_back") else { return };
    let client = kube_util::client(&env).await;
    let (infra, web, app) = (unique("gw-infra"), unique("gw-web"), unique("gw-app"));
    kube_util::namespace(&client, &infra, &[]).await;
    kube_util::namespace(&client, &web, &[("gateway-conformance", "backend")]).await;
    kube_util::namespace(&client, &app, &[]).await;
    let class_name = unique("gw-class");
    let classes: Api<GatewayClass> = Api::all(client.clone());
    let class: GatewayClass = from(json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
        "metadata": {"name": class_name}, "spec": {"controllerName": Flavor::ALB_CONTROLLER}
    }));
    classes.create(&PostParams::default(), &class).await.expect("create GatewayClass");

    let gateways: Api<Gateway> = Api::namespaced(client.clone(), &infra);
    let gw: Gateway = from(json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "gw", "namespace": infra},
        "spec": {
            "gatewayClassName": class_name,
            "listeners": [
                {"name": "http", "port": 80, "protocol": "HTTP",
                 "allowedRoutes": {"namespaces": {"from": "Selector",
                                                  "selector": {"matchLabels": {"gateway-conformance": "backend"}}}}},
                {"name": "same", "port": 8080, "protocol": "HTTP"},
                {"name": "https", "port": 443, "protocol": "HTTPS", "hostname": "*.example.com",
                 "tls": {"certificateRefs": [{"name": "tls-validity-checks-certificate"}]}}
            ]
        }
    }));
    gateways.create(&PostParams::default(), &gw).await.expect("create Gateway");
    let routes_web: Api<HTTPRoute> = Api::namespaced(client.clone(), &web);
    routes_web.create(&PostParams::default(), &route(&web, &infra, &app)).await.expect("create HTTPRoute");
    let routes_app: Api<HTTPRoute> = Api::namespaced(client.clone(), &app);
    routes_app.create(&PostParams::default(), &route(&app, &infra, &app)).await.expect("create HTTPRoute");
    let grants: Api<ReferenceGrant> = Api::namespaced(client.clone(), &app);
    let g: ReferenceGrant = from(json!({
        "apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "ReferenceGrant",
        "metadata": {"name": "from-web", "namespace": app},
        "spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": web}],
                 "to": [{"group": "", "kind": "Service"}]}
    }));
    grants.create(&PostParams::default(), &g).await.expect("create ReferenceGrant");

    // Read back: the CRDs' defaults are there.
    let gw = gateways.get("gw").await.expect("Gateway");
    let pending = gw.status.as_ref().and_then(|s| s.conditions.iter().find(|c| c.type_ == "Accepted"));
    assert_eq!(
        pending.map(|c| (c.status.as_str(), c.reason.as_str())),
        Some(("Unknown", "Pending")),
        "the CRD's default status"
    );
    let tls = gw.spec.listeners[2].tls.as_ref().expect("tls");
    assert_eq!(tls.mode.as_deref(), Some("Terminate"), "tls.mode defaulted");
    let r = routes_web.get("web").await.expect("HTTPRoute");
    let m = &r.spec.rules[0].matches;
    assert_eq!(m.len(), 1, "a rule without matches gets the default one");
    let path = m[0].path.as_ref().expect("default path");
    assert_eq!((path.type_.as_deref(), path.value.as_deref()), (Some("PathPrefix"), Some("/")));
    let b = &r.spec.rules[0].backend_refs[0];
    assert_eq!(
        (b.group.as_deref(), b.kind.as_deref(), b.weight),
        (Some(""), Some("Service"), Some(1)),
        "backendRef defaults"
    );

    // The model on what the API server returned.
    let listeners = listener_views(&gw).expect("readable listeners");
    assert_eq!(listeners[1].namespaces, AllowedNamespaces::Same, "allowedRoutes defaulted to Same");
    let specs: Vec<_> = listeners.iter().map(|l| l.spec.clone()).collect();
    let verdict = assess(Flavor::Alb, &specs);
    assert!(["http", "same", "https"].iter().all(|l| verdict.usable(l)), "{verdict:?}");
    assert!(verdict.listeners[0].supported_kinds.contains(&RouteKind::gateway_api("HTTPRoute")));
    let view = GatewayView { namespace: &infra, name: "gw", listeners: &listeners, verdict: &verdict };
    let ns_api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let mut labels_of: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for ns in [&infra, &web, &app] {
        let n = ns_api.get(ns).await.expect("namespace");
        labels_of.insert(ns.clone(), n.metadata.labels.unwrap_or_default());
    }
    let labels = |ns: &str| labels_of.get(ns).cloned();
    for (api, ns, want, attached) in [
        (&routes_web, &web, REASON_ACCEPTED, vec!["http"]),
        (&routes_app, &app, REASON_NOT_ALLOWED_BY_LISTENERS, vec![]),
    ] {
        let r = api.get("web").await.expect("HTTPRoute");
        let parents = parent_refs(ns, &r.spec.parent_refs);
        assert!(parents[0].is_gateway(&infra, "gw"), "{parents:?}");
        let rv = RouteView { kind: "HTTPRoute", namespace: ns, name: "web", hostnames: &r.spec.hostnames };
        let a = attach(&view, &parents[0], &rv, &labels);
        assert_eq!(
            (a.accepted.status == CondStatus::True, a.accepted.reason),
            (want == REASON_ACCEPTED, want),
            "{ns}: {}",
            a.accepted.message
        );
        assert_eq!(a.listeners.keys().map(String::as_str).collect::<Vec<_>>(), attached, "{ns}");
    }

    // The ReferenceGrant lets the web route reach app's Service; without it, it may not.
    let b = &routes_web.get("web").await.expect("HTTPRoute").spec.rules[0].backend_refs[0];
    let backend = backend_ref(b);
    let read: Vec<_> = grants.list(&Default::default()).await.expect("grants").items.iter().map(grant).collect();
    let exists = |_: &str, _: &str| true;
    let ok = resolve_backend("HTTPRoute", &web, "web", &backend, &read, &exists).expect("granted");
    assert_eq!((ok.namespace.as_str(), ok.port, ok.weight), (app.as_str(), 8080, 1));
    grants.delete("from-web", &DeleteParams::default()).await.expect("delete ReferenceGrant");
    let read: Vec<_> = grants.list(&Default::default()).await.expect("grants").items.iter().map(grant).collect();
    let denied = resolve_backend("HTTPRoute", &web, "web", &backend, &read, &exists).unwrap_err();
    assert_eq!(denied.reason, REASON_REF_NOT_PERMITTED, "{}", denied.message);

    for ns in [&infra, &web, &app] {
        kube_util::delete_namespace(&client, ns).await;
    }
    let _ = classes.delete(&class_name, &DeleteParams::default()).await;
}
