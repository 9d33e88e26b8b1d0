//! Gateway API (`gateway.networking.k8s.io/v1`, the standard channel of v1.6): the pure core of
//! the two GatewayClass controllers ALBC names `gateway.k8s.aws/alb` (HTTPRoute and GRPCRoute on
//! an ALB) and `gateway.k8s.aws/nlb` (TCPRoute, UDPRoute and TLSRoute on an NLB).
//!
//! Plain data in, decisions out: which listeners of a Gateway are accepted and why not
//! ([`listeners`]), which routes attach to which listeners with which hostnames ([`attach`],
//! [`hostname`]), which cross-namespace references a ReferenceGrant allows ([`refs`]), each with
//! the condition types and reasons of the spec ([`conditions`]) that the upstream conformance
//! suite checks; the order of the ALB rules built from routes ([`precedence`]), their conditions
//! ([`matches`](mod@matches)) and actions ([`actions`]), put together per listener port ([`alb_rules`]); an NLB
//! Gateway's listeners ([`nlb_listeners`]); a route's conditions per parent ([`route_status`]);
//! the `Programmed` conditions and addresses that follow the load balancer ([`status`]). [`api`] holds the read types of the kinds and their conversion to that data.
//!
//! [`alb_gateway`] puts them together for one Gateway of class `gateway.k8s.aws/alb`, which the
//! controller reconciles with the gate `ALBGatewayAPI` (opt-in here, see `compat::gates`). NLB
//! Gateways and ListenerSets are not reconciled yet (issue 34). Where the spec and ALBC differ,
//! the spec wins and the module says so.

pub mod actions;
mod alb_build;
pub mod alb_gateway;
pub mod alb_rules;
pub mod api;
pub mod attach;
pub mod certificates;
pub mod conditions;
pub mod hostname;
pub mod http_route;
pub mod listeners;
pub mod matches;
pub mod nlb_listeners;
pub mod precedence;
pub mod refs;
pub mod rewrite;
pub mod route_status;
pub mod status;

/// The API group of Gateway API's kinds.
pub const GROUP: &str = "gateway.networking.k8s.io";

/// Which load balancer a GatewayClass's Gateways get, by the class's `spec.controllerName`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flavor {
    /// `gateway.k8s.aws/alb`: HTTP and HTTPS listeners, HTTPRoute and GRPCRoute.
    Alb,
    /// `gateway.k8s.aws/nlb`: TCP, UDP and TLS listeners, TCPRoute, UDPRoute and TLSRoute.
    Nlb,
}

impl Flavor {
    pub const ALB_CONTROLLER: &'static str = "gateway.k8s.aws/alb";
    pub const NLB_CONTROLLER: &'static str = "gateway.k8s.aws/nlb";

    /// The flavor a GatewayClass's `spec.controllerName` asks for; `None`: another controller's class.
    pub fn from_controller_name(name: &str) -> Option<Self> {
        match name {
            Self::ALB_CONTROLLER => Some(Flavor::Alb),
            Self::NLB_CONTROLLER => Some(Flavor::Nlb),
            _ => None,
        }
    }

    /// The GatewayClass `controllerName` of this flavor.
    pub fn controller_name(self) -> &'static str {
        match self {
            Flavor::Alb => Self::ALB_CONTROLLER,
            Flavor::Nlb => Self::NLB_CONTROLLER,
        }
    }

    /// The load balancer type's name: `ALB` or `NLB`.
    pub fn load_balancer(self) -> &'static str {
        match self {
            Flavor::Alb => "ALB",
            Flavor::Nlb => "NLB",
        }
    }

    /// Listener protocols this flavor's load balancer serves.
    pub fn protocols(self) -> &'static [&'static str] {
        match self {
            Flavor::Alb => &["HTTP", "HTTPS"],
            Flavor::Nlb => &["TCP", "UDP", "TLS"],
        }
    }

    /// Route kinds a listener of `protocol` can take here (none for a protocol this flavor does
    /// not serve).
    pub fn route_kinds(self, protocol: &str) -> &'static [&'static str] {
        match (self, protocol) {
            (Flavor::Alb, "HTTP" | "HTTPS") => &["HTTPRoute", "GRPCRoute"],
            (Flavor::Nlb, "TCP") => &["TCPRoute"],
            (Flavor::Nlb, "UDP") => &["UDPRoute"],
            (Flavor::Nlb, "TLS") => &["TLSRoute"],
            _ => &[],
        }
    }
}

/// A route kind with its API group (`RouteGroupKind`; an absent group is Gateway API's).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RouteKind {
    pub group: String,
    pub kind: String,
}

impl RouteKind {
    /// A Gateway API kind.
    pub fn gateway_api(kind: &str) -> Self {
        Self { group: GROUP.to_string(), kind: kind.to_string() }
    }
}
