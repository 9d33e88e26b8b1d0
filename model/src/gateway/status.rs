//! The `Programmed` conditions and addresses of a Gateway and its listeners, from the state of
//! its load balancer; the `Accepted` condition of a GatewayClass.

use super::Flavor;
use super::conditions::*;
use super::listeners::ListenerVerdict;

pub const REASON_PROGRAMMED: &str = "Programmed";
pub const REASON_PENDING: &str = "Pending";
pub const REASON_INVALID: &str = "Invalid";

/// The Gateway's load balancer as the last pass saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LbState {
    /// Not created yet, or `provisioning`.
    Provisioning,
    /// `active` or `active_impaired`: serving at `dns_name`.
    Active { arn: String, dns_name: String },
    /// The last pass could not build or change it: why.
    Failed(String),
}

/// The Gateway's `Programmed` condition: True with the load balancer's ARN once it serves (as
/// ALBC writes it), Unknown/Pending while it is being made, False/Invalid with the error.
pub fn gateway_programmed(lb: &LbState) -> Cond {
    programmed(lb, |arn| arn.to_string())
}

/// `Programmed` by the load balancer's state; `active`: the message once it serves, from its ARN.
fn programmed(lb: &LbState, active: impl Fn(&str) -> String) -> Cond {
    match lb {
        LbState::Active { arn, .. } => Cond::new(PROGRAMMED, true, REASON_PROGRAMMED, active(arn)),
        LbState::Provisioning => Cond {
            type_: PROGRAMMED,
            status: CondStatus::Unknown,
            reason: REASON_PENDING,
            message: "Waiting for load balancer to be active".into(),
        },
        LbState::Failed(why) => Cond::new(PROGRAMMED, false, REASON_INVALID, why.clone()),
    }
}

/// `status.addresses`: the load balancer's DNS name, lower-cased, of type `Hostname`.
pub fn gateway_addresses(lb: &LbState) -> Vec<(&'static str, String)> {
    match lb {
        LbState::Active { dns_name, .. } => vec![("Hostname", dns_name.to_ascii_lowercase())],
        _ => vec![],
    }
}

/// A listener's `Programmed` condition: True when it is usable and the load balancer serves;
/// for a listener not accepted, False with the reason it was refused.
pub fn listener_programmed(v: &ListenerVerdict, lb: &LbState) -> Cond {
    if !v.usable {
        let refused = find(&v.conditions, ACCEPTED).filter(|c| c.status == CondStatus::False);
        let (reason, message) = refused.map_or((REASON_INVALID, String::new()), |c| (c.reason, c.message.clone()));
        return Cond::new(PROGRAMMED, false, reason, message);
    }
    programmed(lb, |_| String::new())
}

/// A GatewayClass's `Accepted` condition when its `controllerName` is one of ours; `None`:
/// another controller's class, whose status is not ours to write.
pub fn gateway_class_accepted(controller_name: &str) -> Option<Cond> {
    let flavor = Flavor::from_controller_name(controller_name)?;
    Some(Cond::new(
        ACCEPTED,
        true,
        REASON_ACCEPTED,
        format!("Gateways of this class get an {}", flavor.load_balancer()),
    ))
}

/// The Gateway API features (the conformance suite's names) Gateways of an ALB class get here, for
/// the class's `status.supportedFeatures`, sorted as the spec asks. Each one passes the upstream suite
/// (e2e/tests/e2e/conformance.rs reads them from the class). Not claimed, as an ALB cannot do them:
/// HTTPRouteQueryParamMatching (ALB compares query keys and values case-insensitively, the API
/// case-sensitively), HTTPRoutePathRedirect (`replacePrefixMatch` has no ALB redirect form).
pub const ALB_SUPPORTED_FEATURES: &[&str] = &[
    "Gateway",
    "GatewayPort8080",
    "HTTPRoute",
    "HTTPRouteDestinationPortMatching",
    "HTTPRouteMethodMatching",
    "HTTPRouteParentRefPort",
    "HTTPRoutePortRedirect",
    "HTTPRouteSchemeRedirect",
    "ReferenceGrant",
];

/// The `status.supportedFeatures` of a class of `controller_name`; `None`: not ours.
pub fn supported_features(controller_name: &str) -> Option<&'static [&'static str]> {
    match Flavor::from_controller_name(controller_name)? {
        Flavor::Alb => Some(ALB_SUPPORTED_FEATURES),
        // NLB Gateways are not reconciled yet: their classes get no status from us.
        Flavor::Nlb => None,
    }
}

/// What the start-up says about Gateways of ALBC's classes this run leaves alone: one line per
/// class of `controllerName` `gateway.k8s.aws/alb` (while `alb_on` is false) or
/// `gateway.k8s.aws/nlb` (never reconciled here) that has Gateways. `classes`: (name,
/// controllerName); `gateways`: (namespace, name, class name).
pub fn unreconciled(classes: &[(String, String)], gateways: &[(String, String, String)], alb_on: bool) -> Vec<String> {
    let mut out = Vec::new();
    for (class, controller) in classes {
        let why = match Flavor::from_controller_name(controller) {
            Some(Flavor::Alb) if !alb_on => {
                "the gate ALBGatewayAPI is off (opt-in here, unlike ALBC): set --feature-gates=ALBGatewayAPI=true \
                 (chart: controllerConfig.featureGates.ALBGatewayAPI: true) to reconcile them"
            }
            Some(Flavor::Nlb) => "NLB Gateways are not reconciled by this controller yet",
            _ => continue,
        };
        let mine: Vec<String> =
            gateways.iter().filter(|(_, _, c)| c == class).map(|(ns, name, _)| format!("{ns}/{name}")).collect();
        if mine.is_empty() {
            continue;
        }
        let shown = if mine.len() > 5 { format!("{}, …", mine[..5].join(", ")) } else { mine.join(", ") };
        out.push(format!(
            "{} Gateway(s) of GatewayClass {class} ({controller}) are not reconciled, their load balancers left \
             as they are: {why}. Gateways: {shown}",
            mine.len()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::listeners::{ListenerSpec, assess};

    fn active() -> LbState {
        LbState::Active {
            arn: "arn:aws:elasticloadbalancing:r:1:loadbalancer/app/k8s-x/1".into(),
            dns_name: "K8s-X-1.r.elb.amazonaws.com".into(),
        }
    }

    #[test]
    fn gateways_left_alone_are_named_at_start_up() {
        let classes = vec![
            ("alb".to_string(), Flavor::ALB_CONTROLLER.to_string()),
            ("nlb".to_string(), Flavor::NLB_CONTROLLER.to_string()),
            ("other".to_string(), "example.net/gw".to_string()),
            ("idle".to_string(), Flavor::ALB_CONTROLLER.to_string()),
        ];
        let gw = |ns: &str, n: &str, c: &str| (ns.to_string(), n.to_string(), c.to_string());
        let gateways = vec![gw("a", "web", "alb"), gw("b", "tcp", "nlb"), gw("c", "x", "other")];
        let off = unreconciled(&classes, &gateways, false);
        assert_eq!(off.len(), 2, "{off:?}");
        assert!(off[0].contains("GatewayClass alb") && off[0].contains("a/web") && off[0].contains("ALBGatewayAPI"));
        assert!(off[1].contains("GatewayClass nlb") && off[1].contains("b/tcp"));
        let on = unreconciled(&classes, &gateways, true);
        assert_eq!(on.len(), 1, "with the gate on only NLB Gateways are left: {on:?}");
    }

    #[test]
    fn the_gateway_follows_its_load_balancer() {
        let c = gateway_programmed(&active());
        assert_eq!((c.status, c.reason), (CondStatus::True, REASON_PROGRAMMED));
        assert!(c.message.starts_with("arn:aws:elasticloadbalancing"), "ALBC writes the ARN");
        assert_eq!(gateway_addresses(&active()), vec![("Hostname", "k8s-x-1.r.elb.amazonaws.com".to_string())]);
        let c = gateway_programmed(&LbState::Provisioning);
        assert_eq!((c.status, c.reason), (CondStatus::Unknown, REASON_PENDING));
        assert!(gateway_addresses(&LbState::Provisioning).is_empty());
        let c = gateway_programmed(&LbState::Failed("subnets: none tagged".into()));
        assert_eq!(
            (c.status, c.reason, c.message.as_str()),
            (CondStatus::False, REASON_INVALID, "subnets: none tagged")
        );
    }

    #[test]
    fn listeners_are_programmed_when_usable_and_served() {
        let l = |name: &str, port: i32, protocol: &str| ListenerSpec {
            name: name.into(),
            port,
            protocol: protocol.into(),
            hostname: None,
            kinds: vec![],
        };
        let v =
            assess(Flavor::Alb, &[l("http", 80, "HTTP"), l("a", 8080, "HTTP"), l("b", 8080, "HTTP"), l("x", 1, "UDP")]);
        let got: Vec<(CondStatus, &str)> = v
            .listeners
            .iter()
            .map(|lv| {
                let c = listener_programmed(lv, &active());
                (c.status, c.reason)
            })
            .collect();
        assert_eq!(
            got,
            [
                (CondStatus::True, REASON_PROGRAMMED),
                (CondStatus::False, REASON_HOSTNAME_CONFLICT),
                (CondStatus::False, REASON_HOSTNAME_CONFLICT),
                (CondStatus::False, REASON_UNSUPPORTED_PROTOCOL),
            ]
        );
        assert_eq!(listener_programmed(&v.listeners[0], &LbState::Provisioning).status, CondStatus::Unknown);
    }

    #[test]
    fn only_our_classes_are_accepted() {
        assert_eq!(gateway_class_accepted("gateway.k8s.aws/alb").map(|c| c.status), Some(CondStatus::True));
        assert!(gateway_class_accepted("gateway.k8s.aws/nlb").unwrap().message.contains("NLB"));
        assert_eq!(gateway_class_accepted("example.com/gateway-controller"), None);
    }

    #[test]
    fn supported_features_are_sorted_unique_and_only_for_our_alb_classes() {
        let f = supported_features("gateway.k8s.aws/alb").unwrap();
        assert!(f.windows(2).all(|w| w[0] < w[1]), "sorted ascending, no duplicates: {f:?}");
        assert!(f.len() <= 64, "the CRD takes at most 64");
        for core in ["Gateway", "HTTPRoute", "ReferenceGrant"] {
            assert!(f.contains(&core), "{core}");
        }
        assert_eq!(supported_features("gateway.k8s.aws/nlb"), None);
        assert_eq!(supported_features("example.com/gateway-controller"), None);
    }
}
