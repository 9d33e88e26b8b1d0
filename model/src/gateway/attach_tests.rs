use super::*;
use crate::gateway::Flavor;
use crate::gateway::listeners::assess;

fn listener(name: &str, port: i32, hostname: Option<&str>, from: AllowedNamespaces) -> AttachListener {
    AttachListener {
        spec: ListenerSpec {
            name: name.into(),
            port,
            protocol: "HTTP".into(),
            hostname: hostname.map(Into::into),
            kinds: vec![],
        },
        namespaces: from,
    }
}

fn parent(section: Option<&str>, port: Option<i32>) -> ParentRef {
    ParentRef::resolve("infra", None, None, Some("infra"), "gw", section, port)
}

fn labels(ns: &str) -> Option<BTreeMap<String, String>> {
    match ns {
        "web" => Some(BTreeMap::from([("gateway-conformance".to_string(), "web-backend".to_string())])),
        "app" | "infra" => Some(BTreeMap::new()),
        _ => None,
    }
}

/// Attaches a route of `kind` in `ns` with `hostnames` through `parent` to a Gateway `infra/gw`
/// of `listeners`.
fn run(listeners: &[AttachListener], parent: &ParentRef, kind: &str, ns: &str, hostnames: &[&str]) -> Attachment {
    let specs: Vec<ListenerSpec> = listeners.iter().map(|l| l.spec.clone()).collect();
    let verdict = assess(Flavor::Alb, &specs);
    let gw = GatewayView { namespace: "infra", name: "gw", listeners, verdict: &verdict };
    let hostnames: Vec<String> = hostnames.iter().map(|h| h.to_string()).collect();
    let route = RouteView { kind, namespace: ns, name: "r", hostnames: &hostnames };
    attach(&gw, parent, &route, &labels)
}

fn reason(a: &Attachment) -> (CondStatus, &str) {
    (a.accepted.status, a.accepted.reason)
}

/// HTTPRouteInvalidParentRefNotMatchingSectionName, HTTPRouteInvalidCrossNamespaceParentRef,
/// HTTPRouteCrossNamespace (From: Selector), HTTPRouteParentRefPort, and a kind the listener
/// does not take.
#[test]
fn parent_refs_and_allowed_routes_table() {
    let selector = LabelSelector {
        match_labels: Some(BTreeMap::from([("gateway-conformance".into(), "web-backend".into())])),
        match_expressions: None,
    };
    let same = [listener("http", 80, None, AllowedNamespaces::Same)];
    let all = [listener("http", 80, None, AllowedNamespaces::All)];
    let by_label = [listener("http", 80, None, AllowedNamespaces::Selector(selector))];
    let two =
        [listener("http", 80, None, AllowedNamespaces::Same), listener("alt", 8080, None, AllowedNamespaces::All)];
    /// What, the Gateway's listeners, the parentRef, route kind and namespace, the verdict, the listeners attached.
    type Case<'a> = (&'a str, &'a [AttachListener], ParentRef, &'a str, &'a str, (CondStatus, &'a str), &'a [&'a str]);
    let cases: &[Case] = &[
        (
            "same namespace",
            &same,
            parent(None, None),
            "HTTPRoute",
            "infra",
            (CondStatus::True, REASON_ACCEPTED),
            &["http"],
        ),
        (
            "section named",
            &same,
            parent(Some("http"), None),
            "HTTPRoute",
            "infra",
            (CondStatus::True, REASON_ACCEPTED),
            &["http"],
        ),
        (
            "no such section",
            &same,
            parent(Some("https"), None),
            "HTTPRoute",
            "infra",
            (CondStatus::False, REASON_NO_MATCHING_PARENT),
            &[],
        ),
        (
            "port named",
            &same,
            parent(None, Some(80)),
            "HTTPRoute",
            "infra",
            (CondStatus::True, REASON_ACCEPTED),
            &["http"],
        ),
        (
            "no such port",
            &same,
            parent(None, Some(81)),
            "HTTPRoute",
            "infra",
            (CondStatus::False, REASON_NO_MATCHING_PARENT),
            &[],
        ),
        (
            "section and other port",
            &two,
            parent(Some("http"), Some(8080)),
            "HTTPRoute",
            "infra",
            (CondStatus::False, REASON_NO_MATCHING_PARENT),
            &[],
        ),
        (
            "From Same, other namespace",
            &same,
            parent(None, None),
            "HTTPRoute",
            "app",
            (CondStatus::False, REASON_NOT_ALLOWED_BY_LISTENERS),
            &[],
        ),
        ("From All", &all, parent(None, None), "HTTPRoute", "app", (CondStatus::True, REASON_ACCEPTED), &["http"]),
        (
            "selector selects",
            &by_label,
            parent(None, None),
            "HTTPRoute",
            "web",
            (CondStatus::True, REASON_ACCEPTED),
            &["http"],
        ),
        (
            "selector does not",
            &by_label,
            parent(None, None),
            "HTTPRoute",
            "app",
            (CondStatus::False, REASON_NOT_ALLOWED_BY_LISTENERS),
            &[],
        ),
        (
            "namespace unknown",
            &by_label,
            parent(None, None),
            "HTTPRoute",
            "gone",
            (CondStatus::False, REASON_NOT_ALLOWED_BY_LISTENERS),
            &[],
        ),
        (
            "one of two listeners allows",
            &two,
            parent(None, None),
            "HTTPRoute",
            "app",
            (CondStatus::True, REASON_ACCEPTED),
            &["alt"],
        ),
        (
            "a kind HTTP does not take",
            &all,
            parent(None, None),
            "TCPRoute",
            "app",
            (CondStatus::False, REASON_NOT_ALLOWED_BY_LISTENERS),
            &[],
        ),
        (
            "GRPCRoute on HTTP",
            &all,
            parent(None, None),
            "GRPCRoute",
            "app",
            (CondStatus::True, REASON_ACCEPTED),
            &["http"],
        ),
    ];
    for (what, listeners, parent, kind, ns, want, attached) in cases {
        let a = run(listeners, parent, kind, ns, &[]);
        assert_eq!(reason(&a), *want, "{what}: {}", a.accepted.message);
        assert_eq!(a.listeners.keys().map(String::as_str).collect::<Vec<_>>(), *attached, "{what}");
        if want.0 == CondStatus::False {
            assert!(a.accepted.message.contains("infra/gw"), "{what}: names the Gateway: {}", a.accepted.message);
        }
    }
}

/// HTTPRouteHostnameIntersection's Gateway and routes.
#[test]
fn hostnames_choose_the_listeners_and_what_is_served_there() {
    let gw = [
        listener("listener-1", 80, Some("very.specific.com"), AllowedNamespaces::Same),
        listener("listener-2", 80, Some("*.wildcard.io"), AllowedNamespaces::Same),
        listener("listener-3", 80, Some("*.anotherwildcard.io"), AllowedNamespaces::Same),
    ];
    let p = parent(None, None);
    let a = run(&gw, &p, "HTTPRoute", "infra", &["non.matching.com", "*.nonmatchingwildcard.io", "very.specific.com"]);
    assert_eq!(a.listeners, BTreeMap::from([("listener-1".to_string(), vec!["very.specific.com".to_string()])]));
    let a = run(&gw, &p, "HTTPRoute", "infra", &["*.specific.com"]);
    assert_eq!(a.listeners, BTreeMap::from([("listener-1".to_string(), vec!["very.specific.com".to_string()])]));
    let a = run(&gw, &p, "HTTPRoute", "infra", &["foo.wildcard.io", "bar.wildcard.io", "foo.bar.wildcard.io"]);
    let want = vec!["bar.wildcard.io".to_string(), "foo.bar.wildcard.io".to_string(), "foo.wildcard.io".to_string()];
    assert_eq!(a.listeners, BTreeMap::from([("listener-2".to_string(), want)]));
    let a = run(&gw, &p, "HTTPRoute", "infra", &["*.anotherwildcard.io"]);
    assert_eq!(a.listeners, BTreeMap::from([("listener-3".to_string(), vec!["*.anotherwildcard.io".to_string()])]));
    let a = run(&gw, &p, "HTTPRoute", "infra", &["specific.but.wrong.com", "wildcard.io"]);
    assert_eq!(reason(&a), (CondStatus::False, REASON_NO_MATCHING_LISTENER_HOSTNAME));
    assert!(
        a.accepted.message.contains("wildcard.io") && a.accepted.message.contains("listener-2"),
        "{}",
        a.accepted.message
    );
    // No hostnames: every listener, each with its own hostname.
    let a = run(&gw, &p, "HTTPRoute", "infra", &[]);
    assert_eq!(a.listeners.len(), 3);
    assert_eq!(a.listeners["listener-2"], vec!["*.wildcard.io".to_string()]);
}

/// `attachedRoutes` counts accepted routes, each once per listener.
#[test]
fn attached_routes_count_accepted_routes_once_per_listener() {
    let gw = [listener("a", 80, None, AllowedNamespaces::All), listener("b", 8080, None, AllowedNamespaces::All)];
    let both = run(&gw, &parent(None, None), "HTTPRoute", "app", &[]);
    let only_a = run(&gw, &parent(Some("a"), None), "HTTPRoute", "app", &[]);
    let refused = run(&gw, &parent(Some("c"), None), "HTTPRoute", "app", &[]);
    let counts =
        attached_routes(&gw, [("app/r1", &both), ("app/r1", &only_a), ("app/r2", &only_a), ("app/r3", &refused)]);
    assert_eq!(counts, BTreeMap::from([("a".to_string(), 2), ("b".to_string(), 1)]));
}

#[test]
fn parent_refs_default_to_a_gateway_in_the_routes_namespace() {
    let p = ParentRef::resolve("app", None, None, None, "gw", None, None);
    assert!(p.is_gateway("app", "gw"));
    assert!(!p.is_gateway("infra", "gw"));
    let svc = ParentRef::resolve("app", Some(""), Some("Service"), None, "gw", None, None);
    assert!(!svc.is_gateway("app", "gw"), "a mesh parent is not a Gateway");
}
