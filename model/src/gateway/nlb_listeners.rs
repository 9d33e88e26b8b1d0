//! The NLB listeners of a Gateway of class `gateway.k8s.aws/nlb`, from its usable listeners and
//! the TCPRoutes, UDPRoutes and TLSRoutes attached to them, as ALBC builds them:
//!
//! - a Gateway listener gets an NLB listener only once a route is attached to its port;
//! - TCP and UDP listeners of one port become one `TCP_UDP` listener; a `TLS` listener in
//!   `Passthrough` mode is a `TCP` one (the NLB does not terminate it);
//! - an NLB listener forwards to one route's backends: nothing in a connection tells routes
//!   apart (no host, no path; an NLB does no SNI routing), so the oldest route wins, then the first
//!   by `namespace/name` (the spec's precedence). The others stay accepted and get no traffic;
//!   [`build`] names them so their status can say so.

use super::actions;
use crate::lb::{Action, Protocol};
use std::collections::BTreeMap;

/// A usable listener of the Gateway.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct L4ListenerIn {
    pub port: u16,
    /// `TCP`, `UDP` or `TLS`.
    pub protocol: String,
    /// `tls.mode: Passthrough`.
    pub passthrough: bool,
}

/// A route attached to the Gateway.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct L4RouteIn {
    pub namespace: String,
    pub name: String,
    /// `metadata.creationTimestamp`, in seconds.
    pub created: i64,
    /// The listener ports it attached to.
    pub ports: Vec<u16>,
    /// Target-group name and weight of each backend that resolved.
    pub target_groups: Vec<(String, u32)>,
}

/// One NLB listener to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NlbListener {
    pub port: u16,
    pub protocol: Protocol,
    pub default_action: Action,
    /// `namespace/name` of the route it forwards for.
    pub route: String,
}

/// The NLB's listeners, and the routes attached to a port another route won (`namespace/name` →
/// the port and the winner), or whose port has no listener because the winner has no backend.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NlbListeners {
    pub listeners: Vec<NlbListener>,
    pub not_served: BTreeMap<String, String>,
}

fn protocol_of(l: &L4ListenerIn) -> Option<Protocol> {
    match (l.protocol.as_str(), l.passthrough) {
        ("TCP", _) | ("TLS", true) => Some(Protocol::Tcp),
        ("UDP", _) => Some(Protocol::Udp),
        ("TLS", false) => Some(Protocol::Tls),
        _ => None,
    }
}

fn merge(a: Protocol, b: Protocol) -> Option<Protocol> {
    use Protocol::*;
    match (a, b) {
        (x, y) if x == y => Some(x),
        (Tcp, Udp) | (Udp, Tcp) | (TcpUdp, Tcp | Udp) | (Tcp | Udp, TcpUdp) => Some(TcpUdp),
        _ => None,
    }
}

/// The listeners of every port a route attached to.
pub fn build(listeners: &[L4ListenerIn], routes: &[L4RouteIn]) -> NlbListeners {
    let mut by_port: BTreeMap<u16, Option<Protocol>> = BTreeMap::new();
    for l in listeners {
        let p = protocol_of(l);
        let merged = match by_port.get(&l.port) {
            None => p,
            Some(prev) => prev.zip(p).and_then(|(a, b)| merge(a, b)),
        };
        by_port.insert(l.port, merged);
    }
    let mut out = NlbListeners::default();
    for (port, protocol) in by_port {
        let mut attached: Vec<&L4RouteIn> = routes.iter().filter(|r| r.ports.contains(&port)).collect();
        attached.sort_by(|a, b| {
            a.created.cmp(&b.created).then_with(|| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)))
        });
        let Some(winner) = attached.first() else { continue };
        let winner_id = format!("{}/{}", winner.namespace, winner.name);
        for r in &attached[1..] {
            out.not_served.insert(
                format!("{}/{}", r.namespace, r.name),
                format!("port {port} forwards to the older route {winner_id}: an NLB listener serves one route"),
            );
        }
        let Some(protocol) = protocol else {
            out.not_served
                .insert(winner_id, format!("port {port}: its listeners' protocols cannot share an NLB listener"));
            continue;
        };
        if winner.target_groups.is_empty() {
            out.not_served.insert(
                winner_id,
                format!(
                    "port {port}: none of the route's backends resolved, and an NLB listener cannot answer by itself"
                ),
            );
            continue;
        }
        out.listeners.push(NlbListener {
            port,
            protocol,
            default_action: actions::forward(&winner.target_groups),
            route: winner_id,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(port: u16, protocol: &str, passthrough: bool) -> L4ListenerIn {
        L4ListenerIn { port, protocol: protocol.into(), passthrough }
    }

    fn r(name: &str, created: i64, ports: &[u16], tgs: &[&str]) -> L4RouteIn {
        L4RouteIn {
            namespace: "app".into(),
            name: name.into(),
            created,
            ports: ports.to_vec(),
            target_groups: tgs.iter().map(|t| (t.to_string(), 1)).collect(),
        }
    }

    #[test]
    fn a_port_gets_a_listener_once_a_route_attaches_and_the_oldest_route_wins() {
        let ls = [l(5432, "TCP", false), l(6379, "TCP", false)];
        let got = build(&ls, &[r("newer", 20, &[5432], &["tg-new"]), r("older", 10, &[5432], &["tg-old"])]);
        assert_eq!(got.listeners.len(), 1, "6379 has no route: no listener");
        assert_eq!((got.listeners[0].port, got.listeners[0].route.as_str()), (5432, "app/older"));
        assert!(got.not_served["app/newer"].contains("app/older"), "{:?}", got.not_served);
        // Same age: the first by namespace/name.
        let got = build(&ls, &[r("b", 10, &[5432], &["tg-b"]), r("a", 10, &[5432], &["tg-a"])]);
        assert_eq!(got.listeners[0].route, "app/a");
    }

    #[test]
    fn protocols_per_port_as_albc_merges_them() {
        let cases = [
            (vec![l(53, "TCP", false), l(53, "UDP", false)], Some(Protocol::TcpUdp)),
            (vec![l(443, "TLS", true)], Some(Protocol::Tcp)),
            (vec![l(443, "TLS", false)], Some(Protocol::Tls)),
            (vec![l(53, "UDP", false)], Some(Protocol::Udp)),
            (vec![l(443, "TLS", false), l(443, "UDP", false)], None),
        ];
        for (ls, want) in cases {
            let got = build(&ls, &[r("x", 1, &[ls[0].port], &["tg"])]);
            assert_eq!(got.listeners.first().map(|l| l.protocol), want, "{ls:?}");
            assert_eq!(got.not_served.contains_key("app/x"), want.is_none());
        }
    }

    #[test]
    fn a_winner_without_backends_gets_no_listener_and_is_named() {
        let got = build(&[l(5432, "TCP", false)], &[r("x", 1, &[5432], &[])]);
        assert!(got.listeners.is_empty());
        assert!(got.not_served["app/x"].contains("none of the route's backends resolved"));
    }
}
