//! The feature-gate part of the parity table: each of ALBC v3.5's gates ([`super::GATES`]), what
//! this controller does with it, and the tests that show the effect of the behaviour it selects.
//! Rendered into `docs/parity.md` after the annotation tables; checked by `parity_tests`.

use super::gates::{GATES, Gate, Here};

/// Tests showing the effect of each gate's behaviour (`<path>::<test function>`), in [`GATES`]
/// order. Empty: no behaviour to show (not available here), or [`PARSE_ONLY`].
pub const GATE_TESTS: &[(&str, &[&str])] = &[
    (
        "ListenerRulesTagging",
        &[
            "model/src/ingress/build_tests.rs::group_across_namespaces_names_and_tags",
            "model/src/lb/diff/listener_tests.rs::rule_tags_and_untagged_rules",
        ],
    ),
    (
        "WeightedTargetGroups",
        &[
            "model/src/service/build_tests.rs::weighted_forward_to_another_service_and_an_arn",
            "e2e/tests/e2e/service_nlb/weighted.rs::a_weighted_forward_splits_between_two_services",
        ],
    ),
    (
        "ServiceTypeLoadBalancerOnly",
        &[
            "controller/src/service/tests.rs::a_service_no_longer_of_type_load_balancer_is_torn_down_and_its_status_cleared",
            "controller/src/service/tests.rs::a_cluster_ip_service_with_the_annotations_keeps_its_nlb_and_gets_no_status",
        ],
    ),
    ("EndpointsFailOpen", &["model/src/endpoints.rs::endpoint_readiness_table"]),
    (
        "EnableServiceController",
        &[
            "e2e/tests/e2e/service_nlb/gate_off.rs::without_the_service_controller_gate_a_service_gets_nothing_until_the_gate_is_back",
        ],
    ),
    ("EnableIPTargetType", &["model/src/service/build_tests.rs::plain_tcp_service"]),
    ("EnableRGTAPI", &["e2e/tests/e2e/aws_lb_adapter.rs::find_by_tags_describes_tags_in_chunks_of_20"]),
    (
        "SubnetsClusterTagCheck",
        &[
            "model/src/lb/subnets/tests.rs::cluster_tag_check_can_be_disabled",
            "e2e/tests/e2e/service_nlb.rs::discovery_failure_names_the_near_miss_cluster_tag",
        ],
    ),
    (
        "NLBHealthCheckAdvancedConfig",
        &[
            "model/src/service/build_tests.rs::health_check_unhealthy_threshold_and_success_codes_reach_the_target_group",
        ],
    ),
    (
        "NLBSecurityGroup",
        &["model/src/service/build_tests.rs::without_the_nlb_security_group_gate_an_nlb_gets_no_frontend_group"],
    ),
    (
        "ALBSingleSubnet",
        &[
            "model/src/ingress/build_tests.rs::context_needs_follow_the_first_member_that_sets_each_setting",
            "model/src/lb/subnets/tests.rs::explicit_selection",
        ],
    ),
    (
        "LBCapacityReservation",
        &["e2e/tests/e2e/service_nlb.rs::private_link_enforcement_and_minimum_capacity_follow_their_annotations"],
    ),
    (
        "SubnetDiscoveryByReachability",
        &[
            "model/src/lb/subnets/tests.rs::reachability_is_needed_only_without_any_role_tag",
            "e2e/tests/e2e/service_nlb/reachability.rs::untagged_subnets_are_chosen_by_their_route_table",
        ],
    ),
    ("NLBGatewayAPI", &[]),
    (
        "ALBGatewayAPI",
        &[
            "model/src/compat/gates.rs::opt_in_gates_stay_off_unless_given_and_follow_either_value",
            "model/src/gateway/alb_gateway_tests.rs::one_route_builds_one_listener_rule_and_target_group_named_as_albc_names_them",
            "e2e/tests/e2e/gateway_api/alb.rs::an_alb_gateway_follows_its_http_route_and_goes_with_it",
            "e2e/tests/e2e/gateway_api/adoption.rs::a_gateway_albc_built_is_adopted_without_one_aws_write",
        ],
    ),
    ("GlobalAcceleratorController", &[]),
    ("EnableTCPUDPListener", &["model/src/service/build_tests.rs::tcp_and_udp_on_one_port"]),
    (
        "EnhancedDefaultBehavior",
        &["model/src/lb/diff/tests.rs::enhanced_defaults_reset_alpn_and_mutual_tls_no_longer_asked_for"],
    ),
    (
        "EnableDefaultTagsLowPriority",
        &[
            "model/src/lb/tags.rs::tracking_tags_beat_defaults_which_beat_annotations",
            "model/src/service/build_tests.rs::multi_cluster_listener_attributes_and_extras",
        ],
    ),
    (
        "ALBTargetControlAgent",
        &[
            "webhook/tests/handlers.rs::without_the_gate_or_a_config_the_pod_is_admitted_and_told_why",
            "e2e/tests/e2e/webhooks/target_control.rs::target_control_agents_follow_the_labels_and_the_namespaces_config",
        ],
    ),
    ("GatewayListenerSet", &[]),
    (
        "EnableCertificateManagement",
        &[
            "controller/src/ingress/tests.rs::create_acm_cert_without_its_gate_is_reported_not_silently_ignored",
            "e2e/tests/e2e/ingress_alb/created_certificates.rs::created_certificates_are_requested_validated_used_and_deleted",
        ],
    ),
    (
        "IngressPlanAnnotation",
        &["controller/src/ingress/tests.rs::albcs_plan_annotation_is_cleared_as_albc_clears_it_with_its_gate_off"],
    ),
];

/// Honoured gates whose only tests show the value being read (`compat::gates`'s tests): the
/// effect is not shown by a test yet.
pub const PARSE_ONLY: &[&str] = &[];

/// Gates off in ALBC too that turn on a feature this controller does not have: at their default
/// there is no behaviour for a test to show (set on, they are reported at start-up).
pub const FEATURE_ABSENT: &[&str] = &["GlobalAcceleratorController"];

/// A gate's status here, as the page says it.
pub fn status(g: &Gate) -> &'static str {
    match g.here {
        Here::Honoured if PARSE_ONLY.contains(&g.name) => "honoured (parse test only)",
        Here::Honoured => "honoured",
        Here::OptIn(_) => "honoured, off unless given",
        Here::Fixed(_, _) if FEATURE_ABSENT.contains(&g.name) => "ALBC's default, fixed (feature absent)",
        Here::Fixed(v, _) if v == g.albc_default => "ALBC's default, fixed",
        Here::Fixed(..) => "not available",
    }
}

/// The tests cited for `name`.
pub fn tests_of(name: &str) -> &'static [&'static str] {
    GATE_TESTS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t).unwrap_or_default()
}

/// The page's feature-gate section.
pub fn render_section(cell: fn(&str) -> String) -> String {
    let honoured = GATES.iter().filter(|g| g.here == Here::Honoured).count();
    let opt_in = GATES.iter().filter(|g| matches!(g.here, Here::OptIn(_))).count();
    let at_default = GATES.iter().filter(|g| matches!(g.here, Here::Fixed(v, _) if v == g.albc_default)).count();
    let mut out = String::from("\n## Feature gates (`--feature-gates`)\n\n");
    out.push_str(&format!(
        "{} gates: {honoured} honoured (either value applied), {opt_in} honoured but off unless given (ALBC's \
         default is on; the note says why not here), {at_default} fixed at ALBC's default (the other value is \
         reported at start-up with what happens instead), {} not available (ALBC's default differs; reported when \
         set). An unknown gate refuses the start, as in ALBC.\n\n",
        GATES.len(),
        GATES.len() - honoured - opt_in - at_default,
    ));
    out.push_str("| gate | ALBC default | status | tests | note |\n|---|---|---|---|---|\n");
    for g in GATES {
        let tests: Vec<String> = tests_of(g.name).iter().map(|t| format!("`{t}`")).collect();
        let note = match g.here {
            Here::Honoured => String::new(),
            Here::OptIn(why) => format!("off unless given: {why}"),
            Here::Fixed(v, what) => format!("always {v}: {what}"),
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            g.name,
            g.albc_default,
            status(g),
            cell(&tests.join("<br>")),
            cell(&note)
        ));
    }
    out
}
