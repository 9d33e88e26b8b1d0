use super::*;

fn l(name: &str, port: i32, protocol: &str, hostname: Option<&str>) -> ListenerSpec {
    ListenerSpec {
        name: name.into(),
        port,
        protocol: protocol.into(),
        hostname: hostname.map(Into::into),
        kinds: vec![],
    }
}

fn cond<'a>(v: &'a ListenerVerdict, type_: &str) -> (CondStatus, &'a str) {
    let c = find(&v.conditions, type_).unwrap_or_else(|| panic!("{type_} on {}", v.name));
    (c.status, c.reason)
}

fn kind(group: &str, kind: &str) -> RouteKind {
    RouteKind { group: group.into(), kind: kind.into() }
}

/// The suite's GatewayListenerUnsupportedProtocol (`gateway-invalid-listeners-unsupported-protocol`):
/// only unsupported listeners → the Gateway is not accepted; one good one → accepted, with
/// ListenersNotValid either way; the refused listener has no supported kinds.
#[test]
fn unsupported_protocols_are_refused_and_the_gateway_accepted_while_one_listener_is() {
    let v = assess(Flavor::Alb, &[l("invalid", 1111, "INVALID", None)]);
    assert_eq!(cond(&v.listeners[0], ACCEPTED), (CondStatus::False, REASON_UNSUPPORTED_PROTOCOL));
    assert!(v.listeners[0].supported_kinds.is_empty());
    assert_eq!((v.accepted.status, v.accepted.reason), (CondStatus::False, REASON_LISTENERS_NOT_VALID));

    let v = assess(Flavor::Alb, &[l("http", 80, "HTTP", None), l("invalid", 1111, "INVALID", None)]);
    assert_eq!(cond(&v.listeners[0], ACCEPTED), (CondStatus::True, REASON_ACCEPTED));
    assert!(v.listeners[0].supported_kinds.contains(&RouteKind::gateway_api("HTTPRoute")));
    assert_eq!((v.accepted.status, v.accepted.reason), (CondStatus::True, REASON_LISTENERS_NOT_VALID));
    assert!(v.accepted.message.contains("invalid"), "{}", v.accepted.message);
    assert!(v.usable("http") && !v.usable("invalid"));

    // Each flavor serves its own protocols only, and says which it serves.
    let v = assess(Flavor::Nlb, &[l("web", 80, "HTTP", None), l("tcp", 5432, "TCP", None)]);
    let msg = &find(&v.listeners[0].conditions, ACCEPTED).unwrap().message;
    assert!(msg.contains("\"HTTP\"") && msg.contains("gateway.k8s.aws/nlb") && msg.contains("TCP, UDP, TLS"), "{msg}");
    assert!(v.usable("tcp"));
    let v = assess(Flavor::Alb, &[l("tcp", 5432, "TCP", None)]);
    assert_eq!(cond(&v.listeners[0], ACCEPTED), (CondStatus::False, REASON_UNSUPPORTED_PROTOCOL));
}

/// The suite's GatewayInvalidRouteKind: only invalid kinds → ResolvedRefs False InvalidRouteKinds
/// and no supported kinds; a valid one beside → it alone is supported.
#[test]
fn invalid_route_kinds_are_named_and_the_valid_ones_kept() {
    let mut only = l("http", 80, "HTTP", None);
    only.kinds = vec![kind("", "InvalidRoute")];
    let mut both = only.clone();
    both.kinds.push(kind("", "HTTPRoute"));
    let mut other_group = l("http", 80, "HTTP", None);
    other_group.kinds = vec![kind("example.com", "HTTPRoute")];
    for (spec, want) in [(only, vec![]), (both, vec![RouteKind::gateway_api("HTTPRoute")]), (other_group, vec![])] {
        let v = assess(Flavor::Alb, &[spec]);
        let lv = &v.listeners[0];
        assert_eq!(cond(lv, RESOLVED_REFS), (CondStatus::False, REASON_INVALID_ROUTE_KINDS));
        assert_eq!(lv.supported_kinds, want);
        assert_eq!(cond(lv, ACCEPTED).0, CondStatus::True, "still served (a 404 for every request)");
    }
    let v = assess(Flavor::Nlb, &[l("udp", 53, "UDP", None), l("tls", 443, "TLS", None)]);
    assert_eq!(v.listeners[0].supported_kinds, vec![RouteKind::gateway_api("UDPRoute")]);
    assert_eq!(v.listeners[1].supported_kinds, vec![RouteKind::gateway_api("TLSRoute")]);
    let v = assess(Flavor::Alb, &[l("https", 443, "HTTPS", None)]);
    let kinds: Vec<&str> = v.listeners[0].supported_kinds.iter().map(|k| k.kind.as_str()).collect();
    assert_eq!(kinds, ["HTTPRoute", "GRPCRoute"]);
}

/// Distinct listeners share a port only where the load balancer can tell them apart; every
/// listener of an indistinct set is conflicted (the spec: no winner), the others unaffected.
#[test]
fn conflicts_take_every_indistinct_listener_and_nothing_else() {
    type Case =
        (Flavor, &'static [(&'static str, i32, &'static str, Option<&'static str>)], &'static [Option<&'static str>]);
    let cases: &[Case] = &[
        // ALB: hostnames tell HTTP listeners of one port apart.
        (
            Flavor::Alb,
            &[("a", 80, "HTTP", Some("a.example.com")), ("b", 80, "HTTP", Some("b.example.com"))],
            &[None, None],
        ),
        (Flavor::Alb, &[("a", 80, "HTTP", None), ("b", 80, "HTTP", Some("b.example.com"))], &[None, None]),
        (
            Flavor::Alb,
            &[("a", 80, "HTTP", Some("x.io")), ("b", 80, "HTTP", Some("x.io")), ("c", 80, "HTTP", Some("y.io"))],
            &[Some(REASON_HOSTNAME_CONFLICT), Some(REASON_HOSTNAME_CONFLICT), None],
        ),
        (
            Flavor::Alb,
            &[("a", 80, "HTTP", None), ("b", 80, "HTTP", None)],
            &[Some(REASON_HOSTNAME_CONFLICT), Some(REASON_HOSTNAME_CONFLICT)],
        ),
        // ALB: one port, one protocol.
        (
            Flavor::Alb,
            &[("a", 443, "HTTP", None), ("b", 443, "HTTPS", Some("x.io")), ("c", 80, "HTTP", None)],
            &[Some(REASON_PROTOCOL_CONFLICT), Some(REASON_PROTOCOL_CONFLICT), None],
        ),
        // NLB: TCP and UDP on one port combine; anything else on a port is one listener.
        (Flavor::Nlb, &[("t", 53, "TCP", None), ("u", 53, "UDP", None)], &[None, None]),
        (
            Flavor::Nlb,
            &[("t", 443, "TCP", None), ("s", 443, "TLS", None)],
            &[Some(REASON_PROTOCOL_CONFLICT), Some(REASON_PROTOCOL_CONFLICT)],
        ),
        (
            Flavor::Nlb,
            &[("t", 53, "TCP", None), ("t2", 53, "TCP", None), ("u", 53, "UDP", None)],
            &[Some(REASON_HOSTNAME_CONFLICT), Some(REASON_HOSTNAME_CONFLICT), None],
        ),
        (
            Flavor::Nlb,
            &[("a", 443, "TLS", Some("a.io")), ("b", 443, "TLS", Some("b.io"))],
            &[Some(REASON_HOSTNAME_CONFLICT), Some(REASON_HOSTNAME_CONFLICT)],
        ),
        // A refused listener takes no part in conflicts.
        (Flavor::Alb, &[("a", 80, "HTTP", None), ("b", 80, "TCP", None)], &[None, None]),
    ];
    for (flavor, specs, want) in cases {
        let specs: Vec<ListenerSpec> = specs.iter().map(|(n, p, proto, h)| l(n, *p, proto, *h)).collect();
        let v = assess(*flavor, &specs);
        for (lv, want) in v.listeners.iter().zip(*want) {
            let (status, reason) = cond(lv, CONFLICTED);
            match want {
                Some(r) => {
                    assert_eq!((status, reason), (CondStatus::True, *r), "{flavor:?} {specs:?}: {}", lv.name);
                    assert_eq!(cond(lv, ACCEPTED), (CondStatus::False, *r));
                    assert!(!lv.usable);
                    let msg = &find(&lv.conditions, CONFLICTED).unwrap().message;
                    assert!(msg.contains(&format!("{:?}", lv.name)), "names the listeners: {msg}");
                }
                None => assert_eq!((status, reason), (CondStatus::False, REASON_NO_CONFLICTS), "{flavor:?} {specs:?}"),
            }
        }
    }
}

#[test]
fn every_listener_is_conflicted_so_the_gateway_is_not_accepted() {
    let v = assess(Flavor::Alb, &[l("a", 80, "HTTP", None), l("b", 80, "HTTP", None)]);
    assert_eq!((v.accepted.status, v.accepted.reason), (CondStatus::False, REASON_LISTENERS_NOT_VALID));
    let v = assess(Flavor::Alb, &[l("a", 80, "HTTP", None), l("b", 443, "HTTPS", None)]);
    assert_eq!((v.accepted.status, v.accepted.reason), (CondStatus::True, REASON_ACCEPTED));
}
