//! The parity table: every Service annotation, Ingress annotation and IngressClassParams spec
//! field that the upstream AWS Load Balancer Controller (ALBC) v3.5 defines, with what this
//! controller does with it and the tests that show the **effect**: what is built or sent to AWS,
//! or the Warning it is refused with. A test that only shows a value being parsed proves no
//! effect; a row whose only test is such a parse test says so ([`Status::SupportedParseOnly`]).
//! For an IngressClassParams field the effect is the field replacing (or merging into) the
//! setting of the annotation it stands for (`ingress::apply_params`), whose own effect its
//! annotation row shows; a field only shown to deserialize is "parse test only".
//!
//! What was counted, from ALBC v3.5's source:
//! - Service (50 rows): the 47 `SvcLBSuffix*` constants of `pkg/annotations/constants.go`
//!   (`aws-load-balancer-listener-attributes` is a prefix: one row, with its placeholder), the
//!   pod annotation `QuicEnabledContainersAnnotation`, and two keys ALBC builds in code: the
//!   per-port `aws-load-balancer-target-group-attributes.${Port}` and the listener default action
//!   `actions.${Protocol}-${Port}`. (Without those two: 48.)
//! - Ingress (72 rows): the 69 `IngressSuffix*` / `IngressLBSuffix*` constants (the prefixes
//!   `listener-attributes` and `target-control-port` as one row each, with placeholders) and the
//!   three families ALBC builds in code: `actions.`, `conditions.` and `transforms.`.
//! - IngressClassParams (20 rows): the top-level JSON fields of `IngressClassParamsSpec`
//!   (`apis/elbv2/v1beta1/ingressclassparams_types.go`), the legacy `PrefixListsIDs` included.
//!
//! `tests` entries are `<path from the workspace root>::<test function>`. The tests of this
//! module check the table against the code: every supported row names tests that exist, every
//! refused row matches [`crate::annotations::refusals`] (and every refusal has its row), every
//! annotation row is read by our parsers, and `docs/parity.md` is [`render`]'s output.

/// What a row is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `service.beta.kubernetes.io/<key>`.
    ServiceAnnotation,
    /// `alb.ingress.kubernetes.io/<key>`.
    IngressAnnotation,
    /// `IngressClassParams.spec.<key>`.
    IngressClassParamsField,
}

/// What this controller does with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Status {
    /// Applied; `tests` show the effect.
    Supported,
    /// Applied, but the only tests show the value being parsed: no test shows the effect yet.
    SupportedParseOnly,
    /// Not applied: refused with a Warning (`annotations::refusals`); `note` says why.
    Refused,
    /// Neither applied nor refused: a gap. The table's tests fail while any row has it.
    Missing,
}

/// One key of ALBC's and its status here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    pub kind: Kind,
    /// The suffix (or spec field) as ALBC spells it; a family has `${…}` placeholders.
    pub key: &'static str,
    pub status: Status,
    /// `<path from the workspace root>::<test function>`.
    pub tests: &'static [&'static str],
    pub note: &'static str,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::ServiceAnnotation, Kind::IngressAnnotation, Kind::IngressClassParamsField];

    /// Section title of [`render`].
    pub fn title(self) -> &'static str {
        match self {
            Kind::ServiceAnnotation => "Service annotations (`service.beta.kubernetes.io/…`)",
            Kind::IngressAnnotation => "Ingress annotations (`alb.ingress.kubernetes.io/…`)",
            Kind::IngressClassParamsField => "IngressClassParams fields (`spec.…`)",
        }
    }
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Supported => "supported",
            Status::SupportedParseOnly => "supported (parse test only)",
            Status::Refused => "refused",
            Status::Missing => "missing",
        }
    }

    pub fn is_supported(self) -> bool {
        matches!(self, Status::Supported | Status::SupportedParseOnly)
    }
}

use Kind::{IngressAnnotation as Ing, IngressClassParamsField as Icp, ServiceAnnotation as Svc};
use Status::Supported;

const fn row(kind: Kind, key: &'static str, status: Status, tests: &'static [&'static str], note: &'static str) -> Row {
    Row { kind, key, status, tests, note }
}

const FRONTEND_NLB_E2E: &str =
    "e2e/tests/e2e/ingress_alb/frontend_nlb.rs::frontend_nlb_fronts_the_alb_and_leaves_with_it";
const FRONTEND_NLB_TESTS: &[&str] =
    &["model/src/ingress/frontend_nlb_tests.rs::built_stack_has_albc_names_tags_and_targets", FRONTEND_NLB_E2E];
const FRONTEND_NLB_TESTS_EXPLICIT: &[&str] =
    &["model/src/ingress/frontend_nlb_tests.rs::explicit_settings_replace_the_albs", FRONTEND_NLB_E2E];
const FRONTEND_NLB_TESTS_SETS: &[&str] = &[
    "model/src/ingress/frontend_nlb_tests.rs::sets_agree_in_any_order_and_unset_values_never_conflict",
    FRONTEND_NLB_E2E,
];
const FRONTEND_NLB_TESTS_PORTS: &[&str] =
    &["model/src/ingress/frontend_nlb_tests.rs::listeners_come_from_each_members_ports_and_mapping", FRONTEND_NLB_E2E];
const FRONTEND_NLB_TESTS_HC: &[&str] =
    &["model/src/ingress/frontend_nlb_tests.rs::health_check_annotations_shape_the_target_group", FRONTEND_NLB_E2E];

/// The table, in ALBC's order (`constants.go`, then the keys built in code; the spec's field order).
pub const PARITY: &[Row] = &[
    // ---- Service annotations ----
    row(
        Svc,
        "load-balancer-source-ranges",
        Supported,
        &[
            "model/src/service/build_tests.rs::source_ranges_prefix_lists_and_pmtud",
            "model/src/service/build_tests.rs::instance_targets_without_security_groups_admit_clients_on_the_node_port",
        ],
        "frontend security group sources; spec.loadBalancerSourceRanges wins",
    ),
    row(
        Svc,
        "aws-load-balancer-type",
        Supported,
        &[
            "model/src/service/select.rs::albc_selection_table",
            "e2e/tests/e2e/service_nlb.rs::scheme_change_is_announced_and_a_service_that_stops_being_ours_is_cleaned_up",
        ],
        "external / nlb-ip make the Service ours",
    ),
    row(
        Svc,
        "aws-load-balancer-nlb-target-type",
        Supported,
        &[
            "model/src/service/build_tests.rs::instance_targets_table",
            "model/src/service/select.rs::albc_selection_table",
            "controller/src/service/tests.rs::an_invalid_target_type_is_refused_with_the_fix",
            "e2e/tests/e2e/instance_targets.rs::services_and_ingresses_in_instance_mode_register_the_nodes_on_the_node_port",
        ],
        "ip or instance targets",
    ),
    row(
        Svc,
        "aws-load-balancer-name",
        Supported,
        &["model/src/service/build_tests.rs::multi_cluster_listener_attributes_and_extras"],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-scheme",
        Supported,
        &[
            "model/src/service/build_tests.rs::default_scheme_applies_only_where_nothing_else_decides",
            "model/src/service/build_tests.rs::context_needs_follow_annotation_then_existing_then_default",
            "e2e/tests/e2e/service_nlb.rs::service_gets_an_nlb_follows_updates_and_is_cleaned_up",
            "e2e/tests/e2e/service_nlb.rs::scheme_change_is_announced_and_a_service_that_stops_being_ours_is_cleaned_up",
        ],
        "a change replaces the NLB, announced first",
    ),
    row(
        Svc,
        "aws-load-balancer-internal",
        Supported,
        &[
            "model/src/service/build_tests.rs::deprecated_internal_annotation_decides_the_scheme",
            "model/src/service/annotations_tests.rs::scheme_annotation_beats_deprecated_internal",
            "model/src/service/annotations_tests.rs::valid_values_table",
        ],
        "deprecated; read as the scheme (the scheme annotation wins)",
    ),
    row(
        Svc,
        "aws-load-balancer-proxy-protocol",
        Supported,
        &["model/src/service/build_tests.rs::proxy_protocol_and_attributes"],
        "`*` only, as ALBC",
    ),
    row(
        Svc,
        "aws-load-balancer-proxy-protocol-per-target-group",
        Supported,
        &["model/src/service/build_tests.rs::proxy_protocol_and_attributes"],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-ip-address-type",
        Supported,
        &[
            "model/src/service/build_tests.rs::dualstack_and_ipv6_target_groups",
            "e2e/tests/e2e/service_nlb/source_nat.rs::source_nat_prefixes_follow_the_annotations_on_a_dualstack_nlb",
        ],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-access-log-enabled",
        Supported,
        &[
            "model/src/service/build_tests.rs::access_log_and_cross_zone_annotations_become_load_balancer_attributes",
            "model/src/service/annotations_tests.rs::deprecated_attributes_win_over_attributes_annotation",
        ],
        "deprecated; \"true\" becomes access_logs.s3.enabled, winning over the attributes annotation; \"false\" asks for nothing, as ALBC",
    ),
    row(
        Svc,
        "aws-load-balancer-access-log-s3-bucket-name",
        Supported,
        &[
            "model/src/service/build_tests.rs::access_log_and_cross_zone_annotations_become_load_balancer_attributes",
            "model/src/service/annotations_tests.rs::deprecated_attributes_win_over_attributes_annotation",
        ],
        "deprecated; becomes access_logs.s3.bucket while access logs are enabled, as ALBC",
    ),
    row(
        Svc,
        "aws-load-balancer-access-log-s3-bucket-prefix",
        Supported,
        &[
            "model/src/service/build_tests.rs::access_log_and_cross_zone_annotations_become_load_balancer_attributes",
            "model/src/service/annotations_tests.rs::deprecated_attributes_win_over_attributes_annotation",
        ],
        "deprecated; becomes access_logs.s3.prefix while access logs are enabled, as ALBC",
    ),
    row(
        Svc,
        "aws-load-balancer-cross-zone-load-balancing-enabled",
        Supported,
        &[
            "model/src/service/build_tests.rs::access_log_and_cross_zone_annotations_become_load_balancer_attributes",
            "model/src/service/annotations_tests.rs::deprecated_attributes_win_over_attributes_annotation",
            "model/src/service/annotations_tests.rs::valid_values_table",
        ],
        "deprecated; becomes load_balancing.cross_zone.enabled, winning over the attributes annotation",
    ),
    row(
        Svc,
        "aws-load-balancer-ssl-cert",
        Supported,
        &[
            "model/src/service/build_tests.rs::tls_by_port_name_and_number",
            "e2e/tests/e2e/service_nlb.rs::sni_certificates_follow_the_ssl_cert_annotation",
        ],
        "first is the default certificate, the others SNI",
    ),
    row(
        Svc,
        "aws-load-balancer-ssl-ports",
        Supported,
        &[
            "model/src/service/build_tests.rs::tls_by_port_name_and_number",
            "e2e/tests/e2e/service_nlb.rs::sni_certificates_follow_the_ssl_cert_annotation",
        ],
        "port names or numbers",
    ),
    row(
        Svc,
        "aws-load-balancer-ssl-negotiation-policy",
        Supported,
        &[
            "model/src/service/build_tests.rs::ssl_negotiation_policy_annotation_sets_the_tls_listeners_policy",
            "model/src/service/annotations_tests.rs::valid_values_table",
        ],
        "TLS listeners' policy, over --default-ssl-policy",
    ),
    row(
        Svc,
        "aws-load-balancer-backend-protocol",
        Supported,
        &["model/src/service/build_tests.rs::tls_by_port_name_and_number"],
        "ssl: TLS target groups",
    ),
    row(
        Svc,
        "aws-load-balancer-additional-resource-tags",
        Supported,
        &[
            "model/src/service/build_tests.rs::multi_cluster_listener_attributes_and_extras",
            "e2e/tests/e2e/attack_ownership.rs::injected_ownership_tags_never_reach_aws",
        ],
        "ownership tags refused",
    ),
    row(
        Svc,
        "aws-load-balancer-healthcheck-healthy-threshold",
        Supported,
        &[
            "model/src/service/build_tests.rs::instance_targets_table",
            "e2e/tests/e2e/service_nlb.rs::service_gets_an_nlb_follows_updates_and_is_cleaned_up",
        ],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-healthcheck-unhealthy-threshold",
        Supported,
        &[
            "model/src/service/build_tests.rs::health_check_unhealthy_threshold_and_success_codes_reach_the_target_group",
            "model/src/service/annotations_tests.rs::valid_values_table",
        ],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-healthcheck-timeout",
        Supported,
        &["model/src/service/build_tests.rs::instance_targets_table"],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-healthcheck-interval",
        Supported,
        &[
            "model/src/service/build_tests.rs::http_health_check_and_named_port",
            "e2e/tests/e2e/service_nlb.rs::service_gets_an_nlb_follows_updates_and_is_cleaned_up",
        ],
        "hashed into the target group name: a change replaces the group",
    ),
    row(
        Svc,
        "aws-load-balancer-healthcheck-protocol",
        Supported,
        &["model/src/service/build_tests.rs::http_health_check_and_named_port"],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-healthcheck-port",
        Supported,
        &[
            "model/src/service/build_tests.rs::http_health_check_and_named_port",
            "model/src/service/build_tests.rs::instance_targets_table",
        ],
        "traffic-port, a number or a port name",
    ),
    row(
        Svc,
        "aws-load-balancer-healthcheck-path",
        Supported,
        &["model/src/service/build_tests.rs::instance_targets_table"],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-healthcheck-success-codes",
        Supported,
        &[
            "model/src/service/build_tests.rs::health_check_unhealthy_threshold_and_success_codes_reach_the_target_group",
            "model/src/service/annotations_tests.rs::valid_values_table",
        ],
        "HTTP(S) health checks only (AWS takes none for TCP)",
    ),
    row(
        Svc,
        "aws-load-balancer-target-group-attributes",
        Supported,
        &[
            "model/src/service/build_tests.rs::proxy_protocol_and_attributes",
            "e2e/tests/e2e/service_nlb.rs::service_gets_an_nlb_follows_updates_and_is_cleaned_up",
        ],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-subnets",
        Supported,
        &[
            "model/src/service/build_tests.rs::context_needs_follow_annotation_then_existing_then_default",
            "model/src/lb/subnets/tests.rs::explicit_selection",
            "e2e/tests/e2e/service_nlb.rs::backend_security_group_is_shared_by_load_balancers_and_deleted_with_the_last",
        ],
        "IDs or Name tags",
    ),
    row(
        Svc,
        "aws-load-balancer-eip-allocations",
        Supported,
        &["model/src/service/build_tests.rs::eip_allocations_follow_the_subnets_order_and_scheme"],
        "paired with the subnets in the subnets annotation's order, as ALBC v3.5 pairs them; an existing NLB keeps its EIPs if only their pairing differs",
    ),
    row(
        Svc,
        "aws-load-balancer-private-ipv4-addresses",
        Supported,
        &["model/src/service/build_tests.rs::private_ipv4_addresses_must_sit_in_their_subnets"],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-ipv6-addresses",
        Supported,
        &["model/src/service/build_tests.rs::dualstack_and_ipv6_target_groups"],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-alpn-policy",
        Supported,
        &["model/src/service/build_tests.rs::tls_by_port_name_and_number"],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-target-node-labels",
        Supported,
        &[
            "model/src/service/build_tests.rs::instance_target_group_name_differs_from_ip_and_node_labels_select_nodes",
            "controller/src/service/tests.rs::an_instance_mode_service_gets_a_node_port_target_group_and_an_instance_binding",
            "e2e/tests/e2e/instance_targets.rs::services_and_ingresses_in_instance_mode_register_the_nodes_on_the_node_port",
        ],
        "instance targets only, as ALBC",
    ),
    row(
        Svc,
        "aws-load-balancer-attributes",
        Supported,
        &["controller/src/service/tests.rs::a_deletion_protected_load_balancer_keeps_the_finalizer"],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-security-groups",
        Supported,
        &[
            "model/src/service/build_tests.rs::custom_security_groups_and_no_security_groups",
            "model/src/service/build_tests.rs::context_needs_follow_annotation_then_existing_then_default",
        ],
        "IDs or Name tags",
    ),
    row(
        Svc,
        "aws-load-balancer-manage-backend-security-group-rules",
        Supported,
        &["model/src/service/build_tests.rs::custom_security_groups_and_no_security_groups"],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-inbound-sg-rules-on-private-link-traffic",
        Supported,
        &[
            "model/src/service/build_tests.rs::multi_cluster_listener_attributes_and_extras",
            "e2e/tests/e2e/service_nlb.rs::private_link_enforcement_and_minimum_capacity_follow_their_annotations",
        ],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-security-group-prefix-lists",
        Supported,
        &["model/src/service/build_tests.rs::source_ranges_prefix_lists_and_pmtud"],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-listener-attributes.${Protocol}-${Port}",
        Supported,
        &["model/src/service/build_tests.rs::multi_cluster_listener_attributes_and_extras"],
        "a key matching no listener is a Warning",
    ),
    row(
        Svc,
        "aws-load-balancer-multi-cluster-target-group",
        Supported,
        &["model/src/service/build_tests.rs::multi_cluster_listener_attributes_and_extras"],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-enable-prefix-for-ipv6-source-nat",
        Supported,
        &[
            "model/src/service/build_tests.rs::ipv6_source_nat_prefixes_follow_the_subnets_and_are_checked",
            "e2e/tests/e2e/service_nlb/source_nat.rs::source_nat_prefixes_follow_the_annotations_on_a_dualstack_nlb",
        ],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-source-nat-ipv6-prefixes",
        Supported,
        &[
            "model/src/service/build_tests.rs::ipv6_source_nat_prefixes_follow_the_subnets_and_are_checked",
            "e2e/tests/e2e/service_nlb/source_nat.rs::source_nat_prefixes_follow_the_annotations_on_a_dualstack_nlb",
        ],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-minimum-load-balancer-capacity",
        Supported,
        &[
            "model/src/service/build_tests.rs::multi_cluster_listener_attributes_and_extras",
            "e2e/tests/e2e/service_nlb.rs::private_link_enforcement_and_minimum_capacity_follow_their_annotations",
        ],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-enable-icmp-for-path-mtu-discovery",
        Supported,
        &["model/src/service/build_tests.rs::source_ranges_prefix_lists_and_pmtud"],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-enable-tcp-udp-listener",
        Supported,
        &["model/src/service/build_tests.rs::tcp_and_udp_on_one_port"],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-disable-nlb-sg",
        Supported,
        &[
            "model/src/service/build_tests.rs::custom_security_groups_and_no_security_groups",
            "model/src/service/build_tests.rs::instance_targets_without_security_groups_admit_clients_on_the_node_port",
        ],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-quic-enabled-ports",
        Supported,
        &[
            "model/src/service/build_tests.rs::quic_enabled_ports_upgrade_udp_to_quic_and_tcp_udp_to_tcp_quic",
            "e2e/tests/e2e/service_nlb/quic.rs::quic_ports_get_quic_listeners_and_each_pod_is_registered_with_its_server_id",
        ],
        "",
    ),
    row(
        Svc,
        "aws-load-balancer-quic-enabled-containers",
        Supported,
        &[
            "model/src/admission/quic/tests.rs::the_named_containers_without_an_id_get_one",
            "webhook/tests/handlers.rs::quic_containers_get_a_server_id_each_on_one_claimed_worker_id",
            "controller/src/tgb/tests.rs::a_quic_group_gets_each_target_with_its_pods_server_id_and_the_ones_without_are_named",
            "e2e/tests/e2e/service_nlb/quic.rs::quic_ports_get_quic_listeners_and_each_pod_is_registered_with_its_server_id",
        ],
        "a pod annotation: the pod webhook gives the named containers QUIC server IDs; on a Service it is refused \
         with a Warning",
    ),
    row(
        Svc,
        "aws-load-balancer-target-group-attributes.${Port}",
        Supported,
        &["model/src/service/build_tests.rs::proxy_protocol_and_attributes"],
        "per Service port, over the general annotation",
    ),
    row(
        Svc,
        "actions.${Protocol}-${Port}",
        Supported,
        &[
            "model/src/service/build_tests.rs::weighted_forward_to_another_service_and_an_arn",
            "e2e/tests/e2e/service_nlb/weighted.rs::a_weighted_forward_splits_between_two_services",
        ],
        "weighted forward to Services and target group ARNs",
    ),
    // ---- Ingress annotations ----
    row(
        Ing,
        "load-balancer-name",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::load_balancer_name_annotation_and_class_params_name_the_alb",
            "model/src/ingress/annotations_tests.rs::valid_values_table",
            "model/src/ingress/replacement.rs::name_and_other_reasons",
        ],
        "members of a group must agree; IngressClassParams loadBalancerName wins",
    ),
    row(
        Ing,
        "group.name",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::group_across_namespaces_names_and_tags",
            "controller/src/ingress/tests.rs::two_ingresses_of_one_group_share_one_alb_with_the_rules_of_both",
            "e2e/tests/e2e/ingress_alb.rs::a_group_of_two_namespaces_shares_one_alb_in_group_order",
        ],
        "",
    ),
    row(
        Ing,
        "group.order",
        Supported,
        &[
            "model/src/ingress/rules_tests.rs::group_of_three_in_member_order",
            "controller/src/ingress/tests.rs::a_group_order_out_of_range_is_a_warning_naming_the_value_and_the_range",
            "e2e/tests/e2e/ingress_alb.rs::a_group_of_two_namespaces_shares_one_alb_in_group_order",
        ],
        "",
    ),
    row(
        Ing,
        "tags",
        Supported,
        &["model/src/ingress/build_tests.rs::group_across_namespaces_names_and_tags"],
        "ownership tags refused",
    ),
    row(Ing, "ip-address-type", Supported, &["model/src/ingress/build_tests.rs::dualstack_opens_ipv6_sources"], ""),
    row(
        Ing,
        "scheme",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::context_needs_follow_the_first_member_that_sets_each_setting",
            "controller/src/ingress/tests.rs::conflicting_exclusive_annotations_are_refused_with_both_values",
            "e2e/tests/e2e/ingress_alb/freeze.rs::a_member_of_another_namespace_cannot_replace_the_shared_alb",
        ],
        "",
    ),
    row(
        Ing,
        "subnets",
        Supported,
        &["model/src/ingress/build_tests.rs::context_needs_follow_the_first_member_that_sets_each_setting"],
        "IDs or Name tags",
    ),
    row(
        Ing,
        "customer-owned-ipv4-pool",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::outpost_and_ipam_pools_are_group_wide_and_a_pool_aws_cannot_change_is_warned_about",
            "e2e/tests/e2e/ingress_alb/params.rs::params_subnet_tags_choose_the_subnets_and_ipam_configuration_sets_the_pool",
        ],
        "",
    ),
    row(
        Ing,
        "load-balancer-attributes",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::load_balancer_attributes_annotation_and_class_params_reach_the_alb",
            "model/src/ingress/group.rs::load_balancer_attributes_conflict_only_on_one_key_with_two_values",
            "model/src/ingress/annotations_tests.rs::valid_values_table",
        ],
        "group members' maps merge key by key (one key with two values conflicts), as in ALBC",
    ),
    row(
        Ing,
        "wafv2-acl-arn",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::web_acl_and_minimum_capacity_become_extras",
            "controller/src/ingress/tests.rs::a_web_acl_annotation_associates_the_alb_once",
            "e2e/tests/e2e/ingress_alb.rs::wafv2_web_acl_follows_the_annotations",
        ],
        "`none` disassociates",
    ),
    row(
        Ing,
        "wafv2-acl-name",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::web_acl_and_minimum_capacity_become_extras",
            "e2e/tests/e2e/ingress_alb.rs::wafv2_web_acl_follows_the_annotations",
            "model/src/ingress/group.rs::settings_that_decide_nothing_do_not_conflict",
        ],
        "wins over wafv2-acl-arn, as ALBC",
    ),
    row(
        Ing,
        "waf-acl-id",
        Supported,
        &[
            "controller/src/ingress/tests.rs::a_waf_classic_annotation_associates_and_none_disassociates",
            "e2e/tests/e2e/ingress_alb/fail_closed.rs::waf_classic_web_acl_follows_the_annotations",
        ],
        "WAF Classic",
    ),
    row(
        Ing,
        "web-acl-id",
        Supported,
        &[
            "model/src/ingress/annotations_tests.rs::waf_classic_and_shield_are_read_as_albc_reads_them",
            "controller/src/ingress/tests.rs::a_waf_classic_annotation_associates_and_none_disassociates",
            "e2e/tests/e2e/ingress_alb/fail_closed.rs::waf_classic_web_acl_follows_the_annotations",
        ],
        "deprecated name of waf-acl-id, which wins",
    ),
    row(
        Ing,
        "shield-advanced-protection",
        Supported,
        &[
            "controller/src/ingress/tests.rs::shield_false_removes_only_our_protection",
            "controller/src/ingress/tests.rs::a_protection_that_cannot_be_applied_holds_the_whole_group_as_it_is",
            "e2e/tests/e2e/ingress_alb/fail_closed.rs::shield_fails_closed_without_a_subscription_and_protects_with_one",
        ],
        "fails closed without a Shield subscription",
    ),
    row(
        Ing,
        "security-groups",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::security_group_modes",
            "model/src/ingress/build_tests.rs::context_needs_follow_the_first_member_that_sets_each_setting",
        ],
        "IDs or Name tags",
    ),
    row(
        Ing,
        "listen-ports",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::https_with_certificates_and_ssl_redirect",
            "model/src/ingress/merge_tests.rs::listen_ports_defaults_table",
            "e2e/tests/e2e/ingress_alb.rs::actions_conditions_regex_paths_and_oidc_rules_match_the_annotations",
        ],
        "",
    ),
    row(
        Ing,
        "ssl-redirect",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::https_with_certificates_and_ssl_redirect",
            "model/src/ingress/rules_tests.rs::ssl_redirect_leaves_http_listeners_without_rules",
        ],
        "",
    ),
    row(
        Ing,
        "inbound-cidrs",
        Supported,
        &[
            "model/src/ingress/merge_tests.rs::agreeing_or_partial_settings_merge",
            "model/src/ingress/merge_tests.rs::conflicts_name_port_ingresses_and_values",
        ],
        "",
    ),
    row(
        Ing,
        "certificate-arn",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::https_with_certificates_and_ssl_redirect",
            "model/src/ingress/merge_tests.rs::certificates_merge_default_first_in_group_order",
            "e2e/tests/e2e/ingress_alb.rs::actions_conditions_regex_paths_and_oidc_rules_match_the_annotations",
        ],
        "without it, ACM certificates are discovered by host",
    ),
    row(
        Ing,
        "ssl-policy",
        Supported,
        &[
            "model/src/ingress/merge_tests.rs::agreeing_or_partial_settings_merge",
            "model/src/ingress/merge_tests.rs::conflicts_name_port_ingresses_and_values",
        ],
        "",
    ),
    row(
        Ing,
        "target-type",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::instance_targets_use_the_node_port_and_node_labels",
            "e2e/tests/e2e/instance_targets.rs::services_and_ingresses_in_instance_mode_register_the_nodes_on_the_node_port",
            "model/src/ingress/params.rs::the_class_wins_over_the_service_and_empty_strings_are_unset",
        ],
        "the IngressClassParams' targetType, then the Service's annotation, then the Ingress's, as ALBC",
    ),
    row(
        Ing,
        "backend-protocol",
        Supported,
        &["model/src/ingress/build_tests.rs::https_with_certificates_and_ssl_redirect"],
        "",
    ),
    row(
        Ing,
        "backend-protocol-version",
        Supported,
        &["model/src/ingress/build_tests.rs::https_with_certificates_and_ssl_redirect"],
        "",
    ),
    row(
        Ing,
        "target-group-attributes",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::target_group_attributes_annotation_reaches_the_target_group",
            "model/src/ingress/annotations_tests.rs::valid_values_table",
        ],
        "the Service's annotation wins, whole",
    ),
    row(
        Ing,
        "healthcheck-port",
        Supported,
        &["model/src/ingress/build_tests.rs::instance_targets_use_the_node_port_and_node_labels"],
        "traffic-port, a number or a port name",
    ),
    row(
        Ing,
        "healthcheck-protocol",
        Supported,
        &["model/src/ingress/build_tests.rs::ingress_health_check_annotations_reach_the_target_group"],
        "",
    ),
    row(
        Ing,
        "healthcheck-path",
        Supported,
        &[
            "model/src/ingress/rules_tests.rs::target_group_settings_are_ingress_overridden_by_service",
            "model/src/ingress/build_tests.rs::ingress_health_check_annotations_reach_the_target_group",
        ],
        "",
    ),
    row(
        Ing,
        "healthcheck-interval-seconds",
        Supported,
        &[
            "model/src/ingress/rules_tests.rs::target_group_settings_are_ingress_overridden_by_service",
            "model/src/ingress/build_tests.rs::ingress_health_check_annotations_reach_the_target_group",
            "e2e/tests/e2e/ingress_alb.rs::ingress_with_two_paths_gets_an_alb_with_rules_and_is_cleaned_up",
        ],
        "",
    ),
    row(
        Ing,
        "healthcheck-timeout-seconds",
        Supported,
        &["model/src/ingress/build_tests.rs::ingress_health_check_annotations_reach_the_target_group"],
        "",
    ),
    row(
        Ing,
        "healthy-threshold-count",
        Supported,
        &["model/src/ingress/build_tests.rs::ingress_health_check_annotations_reach_the_target_group"],
        "",
    ),
    row(
        Ing,
        "unhealthy-threshold-count",
        Supported,
        &["model/src/ingress/build_tests.rs::ingress_health_check_annotations_reach_the_target_group"],
        "",
    ),
    row(
        Ing,
        "success-codes",
        Supported,
        &["model/src/ingress/build_tests.rs::ingress_health_check_annotations_reach_the_target_group"],
        "",
    ),
    row(
        Ing,
        "auth-type",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::cognito_needs_no_secret",
            "model/src/ingress/build_tests.rs::oidc_uses_the_credentials_of_its_secret_and_tags_their_digest",
            "model/src/ingress/rules_tests.rs::authentication_on_https_only_and_service_overrides",
            "e2e/tests/e2e/ingress_alb.rs::actions_conditions_regex_paths_and_oidc_rules_match_the_annotations",
        ],
        "HTTPS listeners only, as ALBC",
    ),
    row(
        Ing,
        "auth-idp-cognito",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::cognito_needs_no_secret",
            "e2e/tests/e2e/ingress_alb.rs::actions_conditions_regex_paths_and_oidc_rules_match_the_annotations",
        ],
        "",
    ),
    row(
        Ing,
        "auth-idp-oidc",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::oidc_uses_the_credentials_of_its_secret_and_tags_their_digest",
            "controller/src/ingress/tests.rs::an_oidc_secret_is_read_every_pass_missing_it_blocks_and_retries_within_a_minute",
            "e2e/tests/e2e/ingress_alb.rs::actions_conditions_regex_paths_and_oidc_rules_match_the_annotations",
        ],
        "client credentials from the named Secret",
    ),
    row(
        Ing,
        "auth-on-unauthenticated-request",
        Supported,
        &["model/src/ingress/build_tests.rs::ingress_auth_session_annotations_reach_the_authenticate_action"],
        "",
    ),
    row(
        Ing,
        "auth-scope",
        Supported,
        &["model/src/ingress/build_tests.rs::ingress_auth_session_annotations_reach_the_authenticate_action"],
        "",
    ),
    row(
        Ing,
        "auth-session-cookie",
        Supported,
        &["model/src/ingress/build_tests.rs::ingress_auth_session_annotations_reach_the_authenticate_action"],
        "",
    ),
    row(
        Ing,
        "auth-session-timeout",
        Supported,
        &["model/src/ingress/build_tests.rs::ingress_auth_session_annotations_reach_the_authenticate_action"],
        "",
    ),
    row(
        Ing,
        "jwt-validation",
        Supported,
        &[
            "model/src/ingress/rules_tests.rs::jwt_validation_guards_https_rules_only_and_refuses_authentication_beside_it",
            "e2e/tests/e2e/ingress_alb/jwt.rs::jwt_validation_guards_the_https_rules_and_follows_the_annotation",
        ],
        "",
    ),
    row(
        Ing,
        "target-node-labels",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::instance_targets_use_the_node_port_and_node_labels",
            "controller/src/ingress/tests.rs::an_instance_mode_backend_gets_a_node_port_target_group_and_an_instance_binding",
            "e2e/tests/e2e/instance_targets.rs::services_and_ingresses_in_instance_mode_register_the_nodes_on_the_node_port",
        ],
        "",
    ),
    row(
        Ing,
        "manage-backend-security-group-rules",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::security_group_modes",
            "model/src/ingress/group.rs::settings_that_decide_nothing_do_not_conflict",
        ],
        "read and compared only with custom security-groups, as ALBC",
    ),
    row(
        Ing,
        "mutual-authentication",
        Supported,
        &[
            "model/src/ingress/merge_tests.rs::mutual_tls_merges_per_https_port_after_names_resolve",
            "controller/src/ingress/tests.rs::mutual_tls_names_a_trust_store_waits_for_it_and_follows_changes",
            "e2e/tests/e2e/ingress_alb/mtls.rs::verify_waits_for_its_trust_store_and_modes_change_in_place",
        ],
        "trust stores by name or ARN",
    ),
    row(
        Ing,
        "security-group-prefix-lists",
        Supported,
        &[
            "model/src/ingress/merge_tests.rs::agreeing_or_partial_settings_merge",
            "model/src/ingress/merge_tests.rs::conflicts_name_port_ingresses_and_values",
        ],
        "",
    ),
    row(
        Ing,
        "listener-attributes.${Protocol}-${Port}",
        Supported,
        &[
            "model/src/ingress/merge_tests.rs::agreeing_or_partial_settings_merge",
            "model/src/ingress/merge_tests.rs::conflicts_name_port_ingresses_and_values",
        ],
        "",
    ),
    row(
        Ing,
        "multi-cluster-target-group",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::ingress_multi_cluster_target_group_marks_the_binding",
            "model/src/ingress/params.rs::the_class_wins_over_the_service_and_empty_strings_are_unset",
        ],
        "on when the Ingress or the Service asks, as ALBC",
    ),
    row(
        Ing,
        "minimum-load-balancer-capacity",
        Supported,
        &["model/src/ingress/build_tests.rs::web_acl_and_minimum_capacity_become_extras"],
        "",
    ),
    row(
        Ing,
        "ipam-ipv4-pool-id",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::outpost_and_ipam_pools_are_group_wide_and_a_pool_aws_cannot_change_is_warned_about",
            "e2e/tests/e2e/ingress_alb/params.rs::params_subnet_tags_choose_the_subnets_and_ipam_configuration_sets_the_pool",
        ],
        "",
    ),
    row(Ing, "enable-frontend-nlb", Supported, FRONTEND_NLB_TESTS, ""),
    row(Ing, "frontend-nlb-scheme", Supported, FRONTEND_NLB_TESTS_EXPLICIT, ""),
    row(Ing, "frontend-nlb-subnets", Supported, FRONTEND_NLB_TESTS_SETS, ""),
    row(Ing, "frontend-nlb-security-groups", Supported, FRONTEND_NLB_TESTS_EXPLICIT, ""),
    row(Ing, "frontend-nlb-listener-port-mapping", Supported, FRONTEND_NLB_TESTS_PORTS, ""),
    row(Ing, "frontend-nlb-eip-allocations", Supported, FRONTEND_NLB_TESTS_EXPLICIT, ""),
    row(Ing, "frontend-nlb-healthcheck-port", Supported, FRONTEND_NLB_TESTS_HC, ""),
    row(Ing, "frontend-nlb-healthcheck-protocol", Supported, FRONTEND_NLB_TESTS_HC, ""),
    row(Ing, "frontend-nlb-healthcheck-path", Supported, FRONTEND_NLB_TESTS_HC, ""),
    row(Ing, "frontend-nlb-healthcheck-interval-seconds", Supported, FRONTEND_NLB_TESTS_HC, ""),
    row(Ing, "frontend-nlb-healthcheck-timeout-seconds", Supported, FRONTEND_NLB_TESTS_HC, ""),
    row(Ing, "frontend-nlb-healthcheck-healthy-threshold-count", Supported, FRONTEND_NLB_TESTS_HC, ""),
    row(Ing, "frontend-nlb-healthcheck-unhealthy-threshold-count", Supported, FRONTEND_NLB_TESTS_HC, ""),
    row(Ing, "frontend-nlb-healthcheck-success-codes", Supported, FRONTEND_NLB_TESTS_HC, ""),
    row(Ing, "frontend-nlb-attributes", Supported, FRONTEND_NLB_TESTS_EXPLICIT, ""),
    row(Ing, "frontend-nlb-tags", Supported, FRONTEND_NLB_TESTS_EXPLICIT, ""),
    row(
        Ing,
        "use-regex-path-match",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::regex_conditions_are_built_and_checked_before_any_aws_call",
            "model/src/ingress/rules_tests.rs::regex_paths_and_optimizer",
            "e2e/tests/e2e/ingress_alb.rs::actions_conditions_regex_paths_and_oidc_rules_match_the_annotations",
        ],
        "",
    ),
    row(
        Ing,
        "target-control-port.${service-name}.${service-port}",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::a_target_control_port_is_set_on_its_backends_group_and_opened_to_the_alb",
            "e2e/tests/e2e/ingress_alb/target_control.rs::a_target_control_port_is_created_with_its_group_and_a_new_one_replaces_the_group",
        ],
        "",
    ),
    row(
        Ing,
        "create-acm-cert",
        Supported,
        &[
            "model/src/ingress/created_certificates_tests.rs::a_member_asking_gets_its_hosts_sorted_and_its_issuer",
            "model/src/ingress/created_certificates_tests.rs::decisions_by_resource_id_names_status_and_age",
            "e2e/tests/e2e/ingress_alb/created_certificates.rs::created_certificates_are_requested_validated_used_and_deleted",
        ],
        "with the EnableCertificateManagement gate (off by default, as ALBC; off: a Warning)",
    ),
    row(
        Ing,
        "acm-pca-arn",
        Supported,
        &[
            "model/src/ingress/created_certificates_tests.rs::a_member_asking_gets_its_hosts_sorted_and_its_issuer",
            "e2e/tests/e2e/ingress_alb/created_certificates.rs::created_certificates_are_requested_validated_used_and_deleted",
        ],
        "else --default-pca-arn",
    ),
    row(
        Ing,
        "dry-run-plan",
        Supported,
        &[
            "controller/src/ingress/tests.rs::albcs_plan_annotation_is_cleared_as_albc_clears_it_with_its_gate_off",
            "model/src/admission/ingresses_tests.rs::waf_classic_shield_certificates_and_the_plan_annotation_are_admitted",
        ],
        "ALBC's output: cleared from the group's Ingresses, as ALBC does with its IngressPlanAnnotation gate off (its default); the gate on (writing ALBC's stack JSON for its migration console) is not available",
    ),
    row(
        Ing,
        "actions.${action-name}",
        Supported,
        &[
            "model/src/ingress/rules_tests.rs::use_annotation_actions_and_conditions",
            "e2e/tests/e2e/ingress_alb.rs::actions_conditions_regex_paths_and_oidc_rules_match_the_annotations",
        ],
        "backends with port use-annotation",
    ),
    row(
        Ing,
        "conditions.${conditions-name}",
        Supported,
        &[
            "model/src/ingress/rules_tests.rs::use_annotation_actions_and_conditions",
            "model/src/ingress/build_tests.rs::regex_conditions_are_built_and_checked_before_any_aws_call",
            "e2e/tests/e2e/ingress_alb.rs::actions_conditions_regex_paths_and_oidc_rules_match_the_annotations",
        ],
        "",
    ),
    row(
        Ing,
        "transforms.${transforms-name}",
        Supported,
        &[
            "model/src/ingress/rules_tests.rs::transforms_go_to_their_backends_rules_on_every_listener",
            "e2e/tests/e2e/ingress_alb/transforms.rs::rewrites_follow_the_transforms_annotation",
        ],
        "",
    ),
    // ---- IngressClassParams spec fields ----
    row(
        Icp,
        "loadBalancerName",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::load_balancer_name_annotation_and_class_params_name_the_alb",
            "model/src/crd/ingress_class_params.rs::albc_object_deserializes_unchanged",
            "model/src/admission/ingresses_tests.rs::class_params_names_and_ports",
            "model/src/ingress/params.rs::the_class_wins_over_the_service_and_empty_strings_are_unset",
        ],
        "",
    ),
    row(
        Icp,
        "certificateArn",
        Supported,
        &["model/src/ingress/params.rs::params_win_where_set_and_leave_the_rest"],
        "",
    ),
    row(
        Icp,
        "namespaceSelector",
        Supported,
        &[
            "model/src/ingress/select_tests.rs::albc_selection_table",
            "model/src/admission/ingresses_tests.rs::namespace_outside_the_params_selector_is_denied",
            "e2e/tests/e2e/webhooks.rs::ingress_webhooks_enforce_class_params_and_annotations",
        ],
        "an Ingress of another namespace is refused",
    ),
    row(Icp, "group", Supported, &["model/src/ingress/params.rs::params_win_where_set_and_leave_the_rest"], ""),
    row(Icp, "scheme", Supported, &["model/src/ingress/params.rs::params_win_where_set_and_leave_the_rest"], ""),
    row(
        Icp,
        "inboundCIDRs",
        Supported,
        &[
            "model/src/ingress/params.rs::params_win_where_set_and_leave_the_rest",
            "model/src/ingress/params.rs::fields_that_cannot_be_honoured_are_refused_with_the_field_and_value",
        ],
        "",
    ),
    row(
        Icp,
        "sslPolicy",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::class_params_ssl_policy_and_listener_attributes_reach_the_listeners",
            "model/src/crd/ingress_class_params.rs::albc_object_deserializes_unchanged",
        ],
        "",
    ),
    row(
        Icp,
        "sslRedirectPort",
        Supported,
        &[
            "model/src/ingress/params.rs::params_win_where_set_and_leave_the_rest",
            "model/src/ingress/params.rs::fields_that_cannot_be_honoured_are_refused_with_the_field_and_value",
        ],
        "",
    ),
    row(
        Icp,
        "subnets",
        Supported,
        &[
            "model/src/ingress/params.rs::params_win_where_set_and_leave_the_rest",
            "model/src/ingress/params.rs::subnet_tags_replace_the_subnets_annotation_and_ids_replace_tags",
            "e2e/tests/e2e/ingress_alb/params.rs::params_subnet_tags_choose_the_subnets_and_ipam_configuration_sets_the_pool",
        ],
        "ids or tags",
    ),
    row(
        Icp,
        "ipAddressType",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::class_params_ip_address_type_sets_the_alb_and_its_frontend_rules",
            "model/src/crd/ingress_class_params.rs::albc_object_deserializes_unchanged",
        ],
        "",
    ),
    row(
        Icp,
        "tags",
        Supported,
        &[
            "model/src/ingress/params.rs::params_win_where_set_and_leave_the_rest",
            "model/src/ingress/params.rs::fields_that_cannot_be_honoured_are_refused_with_the_field_and_value",
            "model/src/ingress/params.rs::the_class_wins_over_the_service_and_empty_strings_are_unset",
        ],
        "merged with the annotation's, the params winning per key",
    ),
    row(
        Icp,
        "targetType",
        Supported,
        &[
            "model/src/ingress/params.rs::params_win_where_set_and_leave_the_rest",
            "model/src/ingress/params.rs::the_class_wins_over_the_service_and_empty_strings_are_unset",
        ],
        "",
    ),
    row(
        Icp,
        "loadBalancerAttributes",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::load_balancer_attributes_annotation_and_class_params_reach_the_alb",
            "model/src/ingress/params.rs::attributes_merge_with_the_annotations_the_params_winning_per_key",
            "model/src/crd/ingress_class_params.rs::albc_object_deserializes_unchanged",
        ],
        "merged into the annotation's attributes, the class winning per key, as in ALBC",
    ),
    row(
        Icp,
        "listeners",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::class_params_ssl_policy_and_listener_attributes_reach_the_listeners",
            "model/src/crd/ingress_class_params.rs::albc_object_deserializes_unchanged",
            "model/src/ingress/params.rs::fields_that_cannot_be_honoured_are_refused_with_the_field_and_value",
            "model/src/ingress/params.rs::attributes_merge_with_the_annotations_the_params_winning_per_key",
        ],
        "listener attributes by protocol and port, merged into that listener's listener-attributes annotation, the class winning per key, as in ALBC; an entry with attributes but no protocol is refused (ALBC matches it to no listener)",
    ),
    row(
        Icp,
        "minimumLoadBalancerCapacity",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::class_params_capacity_and_web_acl_name_become_extras",
            "model/src/crd/ingress_class_params.rs::albc_object_deserializes_unchanged",
            "model/src/ingress/params.rs::fields_that_cannot_be_honoured_are_refused_with_the_field_and_value",
        ],
        "",
    ),
    row(
        Icp,
        "ipamConfiguration",
        Supported,
        &[
            "model/src/ingress/params.rs::the_class_ipam_pool_wins_over_the_annotation",
            "e2e/tests/e2e/ingress_alb/params.rs::params_subnet_tags_choose_the_subnets_and_ipam_configuration_sets_the_pool",
        ],
        "",
    ),
    row(
        Icp,
        "PrefixListsIDs",
        Supported,
        &["model/src/ingress/params.rs::params_win_where_set_and_leave_the_rest"],
        "legacy spelling; merged with prefixListsIDs",
    ),
    row(
        Icp,
        "prefixListsIDs",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::class_params_prefix_lists_become_the_frontend_rules",
            "model/src/crd/ingress_class_params.rs::albc_object_deserializes_unchanged",
        ],
        "and the legacy spelling PrefixListsIDs",
    ),
    row(Icp, "wafv2AclArn", Supported, &["model/src/ingress/params.rs::params_win_where_set_and_leave_the_rest"], ""),
    row(
        Icp,
        "wafv2AclName",
        Supported,
        &[
            "model/src/ingress/build_tests.rs::class_params_capacity_and_web_acl_name_become_extras",
            "model/src/crd/ingress_class_params.rs::albc_object_deserializes_unchanged",
            "model/src/ingress/params.rs::the_class_wins_over_the_service_and_empty_strings_are_unset",
        ],
        "wins over wafv2AclArn, as ALBC",
    ),
];

/// Rows of one kind, in table order.
pub fn rows(kind: Kind) -> impl Iterator<Item = &'static Row> {
    PARITY.iter().filter(move |r| r.kind == kind)
}

/// `docs/parity.md`: the table as a page.
pub fn render() -> String {
    let mut out = String::new();
    out.push_str("# Parity with the AWS Load Balancer Controller v3.5\n\n");
    out.push_str(
        "<!-- Generated from model/src/compat/parity.rs by its tests: do not edit; regenerate as below. -->\n\n",
    );
    out.push_str(
        "Every Service annotation, Ingress annotation, IngressClassParams field, command-line flag and feature gate \
         that the upstream AWS Load Balancer Controller (ALBC) v3.5 defines, what this controller does with it, and \
         the tests that show the effect (what is built or sent to AWS, or the Warning it is refused with). Tests under \
         `e2e/` run against the local environment (`e2e/test-all`); those under `charts/tests/` with pytest; the \
         others run with `cargo test`.\n\n",
    );
    out.push_str(
        "Two more lists are kept as tests beside the code they describe: ALBC's **metric families** (name, type, \
         labels, or why not exported) in `e2e/tests/e2e/albc_metrics.rs`, checked against a scrape of the real ALBC \
         binary and against the table of [metrics.md](metrics.md); and ALBC's **Helm values** (each supported, with \
         the flag or object it renders, or not applicable, with why) in `charts/tests/test_albc_values.py`, checked \
         against ALBC's own chart and our `values.yaml`.\n\n",
    );
    out.push_str(
        "This page is generated from the table in `model/src/compat/parity.rs`; `cargo test -p lbc-model --lib \
         compat::parity` fails while it differs. After changing the table, regenerate it with:\n\n",
    );
    out.push_str("```sh\nLBC_WRITE_PARITY=1 cargo test -p lbc-model --lib compat::parity\n```\n\n");
    out.push_str("Statuses:\n\n");
    out.push_str("- **supported**: applied; the tests show the effect.\n");
    out.push_str(
        "- **supported (parse test only)**: applied, but the only tests show the value being read; no test shows \
         the effect yet.\n",
    );
    out.push_str("- **refused**: not applied; the Ingress or Service gets a Warning naming the key and why.\n");
    out.push_str("- **missing**: neither applied nor refused (the table's tests fail while any row has it).\n");
    for kind in Kind::ALL {
        let all: Vec<&Row> = rows(kind).collect();
        let count = |s: Status| all.iter().filter(|r| r.status == s).count();
        let supported = count(Status::Supported) + count(Status::SupportedParseOnly);
        out.push_str(&format!("\n## {}\n\n", kind.title()));
        out.push_str(&format!(
            "{supported} of {} supported ({} with a parse test only), {} refused, {} missing.\n\n",
            all.len(),
            count(Status::SupportedParseOnly),
            count(Status::Refused),
            count(Status::Missing),
        ));
        out.push_str("| key | status | tests | note |\n|---|---|---|---|\n");
        for r in all {
            let tests: Vec<String> = r.tests.iter().map(|t| format!("`{t}`")).collect();
            out.push_str(&format!(
                "| `{}` | {} | {} | {} |\n",
                r.key,
                r.status.label(),
                cell(&tests.join("<br>")),
                cell(r.note)
            ));
        }
    }
    out.push_str(&super::parity_flags::render_section(cell));
    out.push_str(&super::parity_gates::render_section(cell));
    out
}

/// A table cell: no line breaks, pipes escaped.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
#[path = "parity_tests.rs"]
mod tests;
