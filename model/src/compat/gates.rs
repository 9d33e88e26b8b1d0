//! ALBC's `--feature-gates`: every gate ALBC v3.5 knows, its default there, and what this
//! controller does about it. A gate is either honoured (mapped onto our own setting) or describes
//! behaviour this controller has fixed; setting a fixed gate to the other value is reported at
//! start-up, never silently dropped. An unknown gate name refuses the start, as in ALBC, naming
//! the gate spelled the same but for case when there is one.

use super::Finding;

/// How this controller relates to one ALBC gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Here {
    /// The gate's value is applied (see [`FeatureGates`]).
    Honoured,
    /// This controller always behaves as if the gate had this value; the text says how.
    Fixed(bool, &'static str),
    /// Applied when given; not given, this controller leaves the feature off, unlike ALBC, for the
    /// reason the text gives.
    OptIn(&'static str),
}

/// One ALBC feature gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gate {
    pub name: &'static str,
    pub albc_default: bool,
    pub here: Here,
}

const fn fixed(name: &'static str, albc_default: bool, value: bool, what: &'static str) -> Gate {
    Gate { name, albc_default, here: Here::Fixed(value, what) }
}

const fn honoured(name: &'static str, albc_default: bool) -> Gate {
    Gate { name, albc_default, here: Here::Honoured }
}

const fn opt_in(name: &'static str, albc_default: bool, why: &'static str) -> Gate {
    Gate { name, albc_default, here: Here::OptIn(why) }
}

const ALB_GATEWAY_PARTIAL: &str = "Gateways of class gateway.k8s.aws/alb get an ALB for their HTTP listeners and \
     HTTPRoutes; HTTPS listeners, GRPCRoute and the gateway.k8s.aws configuration CRDs are not built yet, and a \
     Gateway using them is refused as a whole (so an ALB that ALBC built is never changed to less than it serves)";

const NO_GATEWAY: &str = "Gateway API objects (GatewayClass, Gateway, routes, ListenerSets) are not reconciled";

/// ALBC v3.5's gates, in its order.
pub const GATES: &[Gate] = &[
    fixed("ListenerRulesTagging", true, true, "listener rules carry the stack's tags"),
    fixed("WeightedTargetGroups", true, true, "forward actions may name several weighted target groups"),
    honoured("ServiceTypeLoadBalancerOnly", false),
    fixed(
        "EndpointsFailOpen",
        true,
        true,
        "not-ready endpoints stay registered while only our readiness gates hold their pods back \
         (containers ready, node not NotReady, not terminating)",
    ),
    honoured("EnableServiceController", true),
    fixed("EnableIPTargetType", true, true, "IP targets are what this controller registers"),
    fixed("EnableRGTAPI", false, false, "resources are found with ELBv2 and EC2 Describe calls, never the tagging API"),
    honoured("SubnetsClusterTagCheck", true),
    fixed("NLBHealthCheckAdvancedConfig", true, true, "the NLB health-check annotations are applied"),
    honoured("NLBSecurityGroup", true),
    honoured("ALBSingleSubnet", false),
    fixed("LBCapacityReservation", true, true, "the minimum-load-balancer-capacity annotations are applied"),
    honoured("SubnetDiscoveryByReachability", true),
    fixed("NLBGatewayAPI", true, false, NO_GATEWAY),
    opt_in("ALBGatewayAPI", true, ALB_GATEWAY_PARTIAL),
    fixed("GlobalAcceleratorController", false, false, "GlobalAccelerator objects are not reconciled"),
    honoured("EnableTCPUDPListener", false),
    honoured("EnhancedDefaultBehavior", false),
    honoured("EnableDefaultTagsLowPriority", false),
    honoured("ALBTargetControlAgent", false),
    fixed("GatewayListenerSet", true, false, NO_GATEWAY),
    honoured("EnableCertificateManagement", false),
    fixed("IngressPlanAnnotation", false, false, "the Ingress plan annotation is not written"),
];

/// The gates this controller applies, with ALBC's defaults for those not given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeatureGates {
    /// `EnableServiceController`: Services are reconciled (together with `--enable-service-controller`).
    pub service_controller: bool,
    /// `SubnetsClusterTagCheck`: discovered subnets tagged for other clusters only are dropped.
    pub subnets_cluster_tag_check: bool,
    /// `ALBSingleSubnet`: an ALB may live in one subnet (else two Availability Zones at least).
    pub alb_single_subnet: bool,
    /// `NLBSecurityGroup`: NLBs get a managed frontend security group.
    pub nlb_security_group: bool,
    /// `EnableTCPUDPListener`: a Service port listed for TCP and UDP becomes one TCP_UDP listener
    /// (the Service annotation `aws-load-balancer-enable-tcp-udp-listener` still decides first).
    pub tcp_udp_listener: bool,
    /// `SubnetDiscoveryByReachability`: without any role-tagged subnet, discovery classifies the
    /// VPC's subnets by route table (`lb::subnets::needs_reachability`).
    pub subnet_discovery_by_reachability: bool,
    /// `ServiceTypeLoadBalancerOnly`: only `type: LoadBalancer` Services get an NLB (off: any
    /// type carrying the annotations, as ALBC).
    pub service_type_load_balancer_only: bool,
    /// `EnableCertificateManagement`: `create-acm-cert` requests ACM certificates
    /// (`ingress::created_certificates`), and discovery leaves controller-made ones out.
    pub certificate_management: bool,
    /// `ALBTargetControlAgent`: pods asking for the ALB target control agent get the sidecar
    /// (`admission::plan_agent`), configured by ALBTargetControlConfigs.
    pub target_control_agent: bool,
    /// `EnableDefaultTagsLowPriority`: tags from annotations and IngressClassParams win over
    /// `--default-tags` (off: `--default-tags` win).
    pub default_tags_low_priority: bool,
    /// `EnhancedDefaultBehavior`: listeners no longer asked for an ALPN policy or mutual TLS are
    /// set back to none / off (`PlanOptions::enhanced_defaults`).
    pub enhanced_default_behavior: bool,
    /// `ALBGatewayAPI` (opt-in here, see [`Here::OptIn`]): Gateways of class
    /// `gateway.k8s.aws/alb` are reconciled (`gateway::alb_gateway`).
    pub alb_gateway_api: bool,
}

impl Default for FeatureGates {
    fn default() -> Self {
        let d = |n: &str| GATES.iter().find(|g| g.name == n).map(|g| g.albc_default).unwrap_or(false);
        FeatureGates {
            service_controller: d("EnableServiceController"),
            subnets_cluster_tag_check: d("SubnetsClusterTagCheck"),
            alb_single_subnet: d("ALBSingleSubnet"),
            nlb_security_group: d("NLBSecurityGroup"),
            tcp_udp_listener: d("EnableTCPUDPListener"),
            subnet_discovery_by_reachability: d("SubnetDiscoveryByReachability"),
            service_type_load_balancer_only: d("ServiceTypeLoadBalancerOnly"),
            certificate_management: d("EnableCertificateManagement"),
            target_control_agent: d("ALBTargetControlAgent"),
            default_tags_low_priority: d("EnableDefaultTagsLowPriority"),
            enhanced_default_behavior: d("EnhancedDefaultBehavior"),
            // Opt-in: not ALBC's default (`ALB_GATEWAY_PARTIAL`).
            alb_gateway_api: false,
        }
    }
}

/// The honoured gates' values and one finding per gate given with a value this controller does
/// not implement, or unknown.
pub fn assess_gates(given: &[(String, bool)]) -> (FeatureGates, Vec<Finding>) {
    let mut gates = FeatureGates::default();
    let mut findings = Vec::new();
    for (name, value) in given {
        let Some(gate) = GATES.iter().find(|g| g.name == name) else {
            let near = GATES.iter().find(|g| g.name.eq_ignore_ascii_case(name));
            let hint = near.map(|g| format!(" (did you mean {}?)", g.name)).unwrap_or_default();
            // ALBC refuses to start on an unknown gate ("unknown feature"): a typo never passes.
            findings.push(Finding::Fatal(format!(
                "--feature-gates: unknown gate {name:?}{hint}; ALBC's gates are {}",
                GATES.iter().map(|g| g.name).collect::<Vec<_>>().join(", ")
            )));
            continue;
        };
        match gate.here {
            Here::Honoured | Here::OptIn(_) => match gate.name {
                "EnableServiceController" => gates.service_controller = *value,
                "SubnetsClusterTagCheck" => gates.subnets_cluster_tag_check = *value,
                "ALBSingleSubnet" => gates.alb_single_subnet = *value,
                "NLBSecurityGroup" => gates.nlb_security_group = *value,
                "EnableTCPUDPListener" => gates.tcp_udp_listener = *value,
                "SubnetDiscoveryByReachability" => gates.subnet_discovery_by_reachability = *value,
                "ServiceTypeLoadBalancerOnly" => gates.service_type_load_balancer_only = *value,
                "EnableCertificateManagement" => gates.certificate_management = *value,
                "ALBTargetControlAgent" => gates.target_control_agent = *value,
                "EnableDefaultTagsLowPriority" => gates.default_tags_low_priority = *value,
                "EnhancedDefaultBehavior" => gates.enhanced_default_behavior = *value,
                "ALBGatewayAPI" => gates.alb_gateway_api = *value,
                other => unreachable!("honoured gate {other} has no setting"),
            },
            Here::Fixed(v, _) if v == *value => {}
            Here::Fixed(v, what) => findings.push(Finding::Warning(format!(
                "--feature-gates: {name}={value} is not supported: this controller behaves as {name}={v} ({what})"
            ))),
        }
    }
    (gates, findings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(pairs: &[(&str, bool)]) -> Vec<(String, bool)> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn defaults_are_albcs() {
        let (g, f) = assess_gates(&[]);
        assert!(f.is_empty());
        assert_eq!(
            g,
            FeatureGates {
                service_controller: true,
                subnets_cluster_tag_check: true,
                alb_single_subnet: false,
                nlb_security_group: true,
                tcp_udp_listener: false,
                subnet_discovery_by_reachability: true,
                service_type_load_balancer_only: false,
                certificate_management: false,
                target_control_agent: false,
                default_tags_low_priority: false,
                enhanced_default_behavior: false,
                alb_gateway_api: false,
            }
        );
    }

    #[test]
    fn every_gate_name_is_unique_and_every_honoured_gate_has_a_setting() {
        let mut names: Vec<_> = GATES.iter().map(|g| g.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), GATES.len());
        assert_eq!(GATES.len(), 23, "ALBC v3.5 has 23 gates");
        for g in GATES.iter().filter(|g| g.here == Here::Honoured) {
            let (gates, f) = assess_gates(&given(&[(g.name, !g.albc_default)]));
            assert!(f.is_empty(), "{}", g.name);
            assert_ne!(gates, FeatureGates::default(), "{} changed nothing", g.name);
        }
    }

    #[test]
    fn opt_in_gates_stay_off_unless_given_and_follow_either_value() {
        for g in GATES.iter().filter(|g| matches!(g.here, Here::OptIn(_))) {
            assert!(g.albc_default, "{}: an opt-in gate is one ALBC turns on", g.name);
            let (on, f) = assess_gates(&given(&[(g.name, true)]));
            assert!(f.is_empty(), "{}", g.name);
            assert_ne!(on, FeatureGates::default(), "{} on changed nothing", g.name);
            let (off, f) = assess_gates(&given(&[(g.name, false)]));
            assert!(f.is_empty(), "{}: off is applied without a word", g.name);
            assert_eq!(off, FeatureGates::default(), "{}", g.name);
        }
    }

    #[test]
    fn honoured_gates_apply() {
        let (g, f) = assess_gates(&given(&[
            ("EnableServiceController", false),
            ("SubnetsClusterTagCheck", false),
            ("ALBSingleSubnet", true),
            ("NLBSecurityGroup", false),
            ("EnableTCPUDPListener", true),
            ("SubnetDiscoveryByReachability", false),
            ("ServiceTypeLoadBalancerOnly", true),
            ("EnableCertificateManagement", true),
            ("ALBTargetControlAgent", true),
            ("EnableDefaultTagsLowPriority", true),
            ("EnhancedDefaultBehavior", true),
            ("ALBGatewayAPI", true),
        ]));
        assert!(f.is_empty());
        assert_eq!(
            g,
            FeatureGates {
                service_controller: false,
                subnets_cluster_tag_check: false,
                alb_single_subnet: true,
                nlb_security_group: false,
                tcp_udp_listener: true,
                subnet_discovery_by_reachability: false,
                service_type_load_balancer_only: true,
                certificate_management: true,
                target_control_agent: true,
                default_tags_low_priority: true,
                enhanced_default_behavior: true,
                alb_gateway_api: true,
            }
        );
    }

    #[test]
    fn fixed_gates_warn_only_when_set_against_our_behaviour() {
        // ALBC's own defaults, written out as Helm charts often do: only the gates where we differ.
        let (_, f) = assess_gates(&given(&[("ListenerRulesTagging", true), ("NLBGatewayAPI", false)]));
        assert!(f.is_empty(), "{f:?}");
        let (_, f) = assess_gates(&given(&[("EnableRGTAPI", true), ("IngressPlanAnnotation", true)]));
        assert_eq!(f.len(), 2);
        let m = f[0].message();
        assert!(matches!(f[0], Finding::Warning(_)));
        assert!(
            m.contains("EnableRGTAPI=true is not supported") && m.contains("=false") && m.contains("tagging API"),
            "{m}"
        );
        assert!(f[1].message().contains("plan annotation is not written"), "{}", f[1].message());
    }

    #[test]
    fn unknown_gates_are_refused_named_with_a_hint() {
        let (g, f) = assess_gates(&given(&[("albsinglesubnet", true), ("NoSuchGate", false)]));
        assert_eq!(g, FeatureGates::default());
        assert!(f.iter().all(|f| matches!(f, Finding::Fatal(_))), "{f:?}");
        assert!(f[0].message().contains("did you mean ALBSingleSubnet?"), "{}", f[0].message());
        assert!(
            f[1].message().contains("unknown gate \"NoSuchGate\"") && f[1].message().contains("ListenerRulesTagging")
        );
    }
}
