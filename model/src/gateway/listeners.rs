//! A Gateway's listeners: which ones its load balancer can serve, which conflict, which route
//! kinds each takes, and the Gateway's own `Accepted` condition.
//!
//! Conflicts follow the spec (`GatewaySpec.listeners`), not ALBC: every listener of an
//! indistinct set is Conflicted and not accepted (ALBC accepts the first and refuses the rest,
//! which the spec forbids: "MUST NOT pick one conflicting Listener as the winner"). On an ALB
//! one port is one listener of one protocol, told apart by hostname; on an NLB a port is one
//! listener too, where TCP and UDP combine (`TCP_UDP`) and nothing tells two listeners of one
//! protocol apart (an NLB listener forwards to one target group, TLS included).

use super::conditions::*;
use super::{Flavor, GROUP, RouteKind};
use std::collections::BTreeMap;

/// One listener as the Gateway's spec gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenerSpec {
    pub name: String,
    pub port: i32,
    pub protocol: String,
    pub hostname: Option<String>,
    /// `allowedRoutes.kinds`; empty: every kind the protocol takes.
    pub kinds: Vec<RouteKind>,
}

/// What becomes of one listener.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenerVerdict {
    pub name: String,
    /// Accepted and not conflicted: routes attach and the load balancer serves it.
    pub usable: bool,
    /// The kinds routes attached to it may have (`status.listeners[].supportedKinds`).
    pub supported_kinds: Vec<RouteKind>,
    /// `Accepted`, `Conflicted` and `ResolvedRefs` (`Programmed` follows the load balancer).
    pub conditions: Vec<Cond>,
}

/// What becomes of a Gateway's listeners, and the Gateway's `Accepted` condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatewayVerdict {
    pub listeners: Vec<ListenerVerdict>,
    pub accepted: Cond,
}

impl GatewayVerdict {
    /// The usable listener named `name`.
    pub fn usable(&self, name: &str) -> bool {
        self.listeners.iter().any(|l| l.name == name && l.usable)
    }
}

/// Why a listener is not accepted, before conflicts are looked at.
fn refusal(flavor: Flavor, l: &ListenerSpec) -> Option<(&'static str, String)> {
    if !flavor.protocols().contains(&l.protocol.as_str()) {
        return Some((
            REASON_UNSUPPORTED_PROTOCOL,
            format!(
                "listener {:?}: protocol {:?} is not served by an {} (GatewayClass controller {}); expected one of {}",
                l.name,
                l.protocol,
                flavor.load_balancer(),
                flavor.controller_name(),
                flavor.protocols().join(", ")
            ),
        ));
    }
    if !(1..=65535).contains(&l.port) {
        return Some((REASON_PORT_UNAVAILABLE, format!("listener {:?}: port {} is not 1-65535", l.name, l.port)));
    }
    None
}

/// The conflict of each listener in `group` (listeners sharing one port, all of served protocols).
fn conflicts(flavor: Flavor, group: &[&ListenerSpec]) -> Vec<Option<(&'static str, String)>> {
    let port = group[0].port;
    let protocols: Vec<&str> = group.iter().map(|l| l.protocol.as_str()).collect();
    let names = |pred: &dyn Fn(&ListenerSpec) -> bool| -> String {
        group.iter().filter(|l| pred(l)).map(|l| format!("{:?}", l.name)).collect::<Vec<_>>().join(", ")
    };
    let mixed = protocols.iter().any(|p| *p != protocols[0]);
    let compatible_mix = flavor == Flavor::Nlb && protocols.iter().all(|p| matches!(*p, "TCP" | "UDP"));
    if mixed && !compatible_mix {
        let msg = format!(
            "listeners {} share port {port} with protocols {}: one port is one load balancer listener of one protocol{}",
            names(&|_| true),
            protocols.join(", "),
            if flavor == Flavor::Nlb { " (TCP and UDP alone combine, as TCP_UDP)" } else { "" }
        );
        return group.iter().map(|_| Some((REASON_PROTOCOL_CONFLICT, msg.clone()))).collect();
    }
    group
        .iter()
        .map(|l| {
            let same = |o: &ListenerSpec| {
                o.protocol == l.protocol && (flavor == Flavor::Nlb || o.hostname.as_deref() == l.hostname.as_deref())
            };
            if group.iter().filter(|o| same(o)).count() < 2 {
                return None;
            }
            let msg = match flavor {
                Flavor::Alb => format!(
                    "listeners {} share port {port}, protocol {} and hostname {:?}: give each its own hostname or port",
                    names(&same),
                    l.protocol,
                    l.hostname.as_deref().unwrap_or("")
                ),
                Flavor::Nlb => format!(
                    "listeners {} share port {port} and protocol {}: an NLB listener forwards a port to one target \
                     group, so they cannot be told apart; give each its own port",
                    names(&same),
                    l.protocol
                ),
            };
            Some((REASON_HOSTNAME_CONFLICT, msg))
        })
        .collect()
}

/// The kinds `l` takes and the ones it asks for that it cannot take.
fn kinds(flavor: Flavor, l: &ListenerSpec) -> (Vec<RouteKind>, Vec<String>) {
    let takes = flavor.route_kinds(&l.protocol);
    if l.kinds.is_empty() {
        return (takes.iter().map(|k| RouteKind::gateway_api(k)).collect(), vec![]);
    }
    let (mut ok, mut bad) = (Vec::new(), Vec::new());
    for k in &l.kinds {
        let group = if k.group.is_empty() { GROUP } else { k.group.as_str() };
        if group == GROUP && takes.contains(&k.kind.as_str()) {
            ok.push(RouteKind::gateway_api(&k.kind));
        } else {
            bad.push(format!("{group}/{}", k.kind));
        }
    }
    ok.dedup();
    (ok, bad)
}

/// The verdict on every listener of a Gateway of `flavor`, in the spec's order.
pub fn assess(flavor: Flavor, listeners: &[ListenerSpec]) -> GatewayVerdict {
    let refused: Vec<Option<(&'static str, String)>> = listeners.iter().map(|l| refusal(flavor, l)).collect();
    let mut by_port: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
    for (i, l) in listeners.iter().enumerate() {
        if refused[i].is_none() {
            by_port.entry(l.port).or_default().push(i);
        }
    }
    let mut conflict: Vec<Option<(&'static str, String)>> = vec![None; listeners.len()];
    for idx in by_port.values() {
        let group: Vec<&ListenerSpec> = idx.iter().map(|i| &listeners[*i]).collect();
        for (i, c) in idx.iter().zip(conflicts(flavor, &group)) {
            conflict[*i] = c;
        }
    }

    let mut out = Vec::with_capacity(listeners.len());
    for (i, l) in listeners.iter().enumerate() {
        let (supported, bad) = kinds(flavor, l);
        let mut conds = Vec::new();
        match (&refused[i], &conflict[i]) {
            (Some((reason, msg)), _) => {
                conds.push(Cond::new(ACCEPTED, false, reason, msg.clone()));
                conds.push(Cond::new(CONFLICTED, false, REASON_NO_CONFLICTS, ""));
            }
            (None, Some((reason, msg))) => {
                conds.push(Cond::new(ACCEPTED, false, reason, msg.clone()));
                conds.push(Cond::new(CONFLICTED, true, reason, msg.clone()));
            }
            (None, None) => {
                conds.push(Cond::new(ACCEPTED, true, REASON_ACCEPTED, ""));
                conds.push(Cond::new(CONFLICTED, false, REASON_NO_CONFLICTS, ""));
            }
        }
        conds.push(if bad.is_empty() {
            Cond::new(RESOLVED_REFS, true, REASON_RESOLVED_REFS, "")
        } else {
            Cond::new(
                RESOLVED_REFS,
                false,
                REASON_INVALID_ROUTE_KINDS,
                format!(
                    "listener {:?} (protocol {}) cannot take route kinds {}; it takes {}",
                    l.name,
                    l.protocol,
                    bad.join(", "),
                    flavor.route_kinds(&l.protocol).join(", ")
                ),
            )
        });
        let usable = refused[i].is_none() && conflict[i].is_none();
        // A refused listener takes no routes: its supported kinds are empty, as the suite expects.
        let supported_kinds = if refused[i].is_some() { vec![] } else { supported };
        out.push(ListenerVerdict { name: l.name.clone(), usable, supported_kinds, conditions: conds });
    }

    let not_usable: Vec<&str> = out.iter().filter(|v| !v.usable).map(|v| v.name.as_str()).collect();
    let accepted = if not_usable.is_empty() {
        Cond::new(ACCEPTED, true, REASON_ACCEPTED, "")
    } else {
        let msg = format!(
            "listeners not accepted: {} (see status.listeners); {} accepted",
            not_usable.join(", "),
            out.len() - not_usable.len()
        );
        Cond::new(ACCEPTED, not_usable.len() < out.len(), REASON_LISTENERS_NOT_VALID, msg)
    };
    GatewayVerdict { listeners: out, accepted }
}

#[cfg(test)]
#[path = "listeners_tests.rs"]
mod tests;
