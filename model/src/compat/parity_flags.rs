//! The command-line part of the parity table: every flag ALBC v3.5 binds (`BindFlags` of
//! `pkg/config`, `pkg/aws`, `pkg/inject`; 60 with `--feature-gates`; the constants
//! `aws-vpc-cache-ttl` and `enable-acm-certificates` are never bound there), what this controller
//! does with it and the tests that show the effect. Rendered into `docs/parity.md`; checked by
//! `parity_tests` (rows and tests) and by the controller's argument tests (every row parses, and
//! only [`ALBC_ONLY_FLAGS`] rows are ALBC-only there).

use super::flags::{ALBC_ONLY_FLAGS, Treatment};

/// One ALBC flag: an example value an ALBC Deployment passes (ALBC's default where it has one)
/// and the tests showing its effect here (`<path>::<test function>`).
pub struct FlagRow {
    pub name: &'static str,
    pub example: &'static str,
    pub tests: &'static [&'static str],
}

const fn row(name: &'static str, example: &'static str, tests: &'static [&'static str]) -> FlagRow {
    FlagRow { name, example, tests }
}

/// What this controller does with an ALBC flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagStatus {
    /// Our flag of the same name and meaning.
    Honoured,
    /// Another name for our flag of that name.
    Alias(&'static str),
    /// Parsed; reported at start-up with what happens instead ([`ALBC_ONLY_FLAGS`]).
    Reported(Treatment),
}

/// ALBC's flag names that are aliases of ours: (ALBC's, ours).
pub const ALIASES: &[(&str, &str)] = &[("kube-ca-pem-filepath", "webhook-client-ca-file")];

/// Honoured flags whose tests only show the value being read: no test shows the effect yet.
pub const PARSE_ONLY: &[&str] =
    &["service-max-concurrent-reconciles", "aws-region", "alb-gateway-max-concurrent-reconciles"];

/// Tests of the start-up report of ALBC-only flags, cited by their rows.
const REPORTED: &[&str] = &[
    "model/src/compat/flags.rs::table",
    "model/src/compat/flags.rs::names_are_unique_and_albc_defaults_never_warn_unless_the_behaviour_differs",
];

/// Every flag ALBC v3.5 binds, in its `BindFlags` order.
pub const FLAGS: &[FlagRow] = &[
    row("log-level", "info", &["charts/tests/test_chart.py::test_chart_rbac_is_sufficient"]),
    row(
        "cluster-name",
        "c",
        &[
            "e2e/tests/e2e/service_nlb.rs::discovery_failure_names_the_near_miss_cluster_tag",
            "controller/src/tgb/tests.rs::another_clusters_target_group_is_not_written",
            "webhook/tests/handlers.rs::tgb_validator_denies_foreign_target_groups",
        ],
    ),
    row(
        "default-tags",
        "a=b",
        &[
            "model/src/lb/tags.rs::tracking_tags_beat_defaults_which_beat_annotations",
            "model/src/service/build_tests.rs::multi_cluster_listener_attributes_and_extras",
            "controller/src/service/tests.rs::a_new_service_gets_the_finalizer_first_then_its_nlb_bindings_and_hostname",
        ],
    ),
    row(
        "default-target-type",
        "instance",
        &[
            "model/src/service/build_tests.rs::instance_targets_table",
            "model/src/ingress/build_tests.rs::instance_targets_use_the_node_port_and_node_labels",
            "controller/src/run.rs::default_target_type_applies_to_services_and_ingresses",
        ],
    ),
    row(
        "default-load-balancer-scheme",
        "internal",
        &[
            "model/src/service/build_tests.rs::default_scheme_applies_only_where_nothing_else_decides",
            "model/src/ingress/build_tests.rs::default_scheme_applies_when_no_member_names_one",
            "model/src/ingress/frontend_nlb_tests.rs::defaults_follow_albc",
        ],
    ),
    row(
        "external-managed-tags",
        "x",
        &[
            "model/src/lb/diff/tests.rs::external_managed_tags_are_left_alone",
            "model/src/service/build_tests.rs::multi_cluster_listener_attributes_and_extras",
            "model/src/ingress/build_tests.rs::every_problem_is_reported",
        ],
    ),
    row("service-max-concurrent-reconciles", "3", &[]),
    row(
        "targetgroupbinding-max-concurrent-reconciles",
        "3",
        &[
            "controller/src/tgb/turns.rs::a_limit_of_n_lets_n_work_at_once_and_zero_means_no_limit",
            "controller/src/tgb/turns.rs::bindings_due_again_wait_behind_every_binding_already_waiting",
            "controller/src/metrics.rs::reconciles_feed_ours_and_albcs_families_alike",
        ],
    ),
    row("gateway-class-max-concurrent-reconciles", "3", REPORTED),
    row("alb-gateway-max-concurrent-reconciles", "3", &[]),
    row("nlb-gateway-max-concurrent-reconciles", "3", REPORTED),
    row("globalaccelerator-max-concurrent-reconciles", "1", REPORTED),
    row("globalaccelerator-max-exponential-backoff-delay", "16m40s", REPORTED),
    row(
        "targetgroupbinding-max-exponential-backoff-delay",
        "16m40s",
        &[
            "controller/src/tgb/tests.rs::failures_in_a_row_double_the_requeue_up_to_the_cap_and_a_success_starts_over",
            "e2e/tests/e2e/guards.rs::poisoned_target_does_not_block_its_batch",
        ],
    ),
    row("lb-stabilization-monitor-interval", "2m0s", REPORTED),
    row(
        "default-ssl-policy",
        "ELBSecurityPolicy-2016-08",
        &[
            "model/src/service/build_tests.rs::ssl_negotiation_policy_annotation_sets_the_tls_listeners_policy",
            "model/src/ingress/merge_tests.rs::single_ingress_defaults",
        ],
    ),
    row(
        "enable-backend-security-group",
        "true",
        &[
            "e2e/tests/e2e/service_nlb.rs::backend_security_group_is_shared_by_load_balancers_and_deleted_with_the_last",
            "controller/src/backend_sg.rs::given_and_disabled_modes_never_create",
            "model/src/service/build_tests.rs::the_backend_group_is_a_stand_in_only_while_auto_mode_has_none",
        ],
    ),
    row("enable-manage-backend-security-group-rules", "false", REPORTED),
    row(
        "backend-security-group",
        "",
        &[
            "controller/src/backend_sg.rs::given_and_disabled_modes_never_create",
            "model/src/service/build_tests.rs::the_backend_group_is_a_stand_in_only_while_auto_mode_has_none",
            "model/src/lb/backend_sg.rs::flags_map_to_modes_and_contradictions_are_named",
        ],
    ),
    row("enable-endpoint-slices", "true", REPORTED),
    row(
        "disable-restricted-sg-rules",
        "false",
        &["model/src/lb/backend_rules/tests.rs::restricted_mode_collapses_group_sources_only"],
    ),
    row(
        "service-target-eni-security-group-tags",
        "",
        &[
            "model/src/lb/backend_rules/tests.rs::which_sg_of_a_multi_sg_eni",
            "controller/src/run.rs::malformed_tag_flags_are_refused_with_the_flag_named",
        ],
    ),
    row("max-targets-per-target-group", "0", REPORTED),
    row(
        "targetgroupbinding-requeue-duration",
        "15s",
        &[
            "model/src/readiness.rs::poll_interval_follows_health_check_interval",
            "controller/src/tgb/tests.rs::a_gate_turns_true_once_aws_reports_the_target_healthy",
        ],
    ),
    row(
        "required-secrets-label",
        "",
        &["controller/src/ingress/tests.rs::an_oidc_secret_without_the_required_label_is_not_used"],
    ),
    row(
        "feature-gates",
        "ListenerRulesTagging=true",
        &[
            "e2e/tests/e2e/ingress_alb/created_certificates.rs::created_certificates_are_requested_validated_used_and_deleted",
            "e2e/tests/e2e/service_nlb/reachability.rs::untagged_subnets_are_chosen_by_their_route_table",
            "e2e/tests/e2e/webhooks/target_control.rs::target_control_agents_follow_the_labels_and_the_namespaces_config",
        ],
    ),
    row("aws-region", "us-east-1", &[]),
    row(
        "aws-api-throttle",
        "",
        &[
            "aws/src/throttle.rs::burst_then_rate",
            "model/src/throttle.rs::user_rules_precede_defaults",
            "model/src/doctor/throttle.rs::table",
        ],
    ),
    row(
        "aws-vpc-id",
        "vpc-1",
        &[
            "e2e/tests/e2e/guards.rs::the_vpc_comes_from_its_id_or_its_tags_never_from_a_guess",
            "e2e/tests/e2e/targetgroupbinding.rs::overlay_pod_ips_are_reported_not_registered",
            "model/src/lb/subnets/tests.rs::discovery_errors_explain_themselves",
        ],
    ),
    row(
        "aws-vpc-tags",
        "",
        &[
            "e2e/tests/e2e/guards.rs::the_vpc_comes_from_its_id_or_its_tags_never_from_a_guess",
            "model/src/vpc.rs::exactly_one_vpc_must_match_the_tags",
            "model/src/vpc.rs::tags_beside_an_id_are_reported",
        ],
    ),
    row("aws-vpc-tag-key", "Name", REPORTED),
    row(
        "aws-max-retries",
        "10",
        &[
            "aws/src/call.rs::non_retryable_fails_at_once_and_retries_are_bounded",
            "e2e/tests/e2e/aws_adapter.rs::throttling_is_retried_within_bounds_and_counted",
        ],
    ),
    row(
        "aws-api-endpoints",
        "",
        &[
            "e2e/tests/e2e/cross_account.rs::binding_with_a_role_registers_into_the_other_accounts_target_group",
            "aws/src/config.rs::endpoints_accept_albc_ids_and_short_names",
            "controller/src/args.rs::sts_endpoint_is_accepted_and_kept",
        ],
    ),
    row(
        "kubeconfig",
        "",
        &[
            "e2e/tests/e2e/fencing.rs::a_partitioned_leader_stops_writing_before_the_new_leader_starts",
            "charts/tests/test_chart.py::test_chart_rbac_is_sufficient",
            "charts/tests/test_webhook_certs.py::test_controller_mode_under_the_chart_rbac",
        ],
    ),
    row(
        "metrics-bind-addr",
        ":8080",
        &[
            "e2e/tests/e2e/albc_metrics.rs::albc_families_are_served_with_albcs_types_and_labels",
            "e2e/tests/e2e/prometheus.rs::prometheus_scrapes_the_controller_and_every_dashboard_query_has_data",
            "charts/tests/test_chart.py::test_queried_metrics_exist",
        ],
    ),
    row(
        "health-probe-bind-addr",
        ":61779",
        &[
            "e2e/tests/e2e/vault_credentials.rs::readyz_names_a_vault_failure_by_its_reason_only",
            "charts/tests/test_webhook_certs.py::test_controller_mode_under_the_chart_rbac",
        ],
    ),
    row(
        "webhook-bind-port",
        "9443",
        &[
            "e2e/tests/e2e/webhooks.rs::webhooks_inject_gates_validate_bindings_and_survive_outages",
            "e2e/tests/e2e/guards.rs::foreign_target_group_is_denied_and_never_written",
            "e2e/tests/e2e/zero_downtime/scenarios.rs::leader_failover_mid_rollout_fails_no_request",
        ],
    ),
    row(
        "enable-leader-election",
        "true",
        &[
            "e2e/tests/e2e/targetgroupbinding.rs::leader_handover_between_two_controllers",
            "controller/src/leader_tests.rs::a_follower_takes_the_lease_only_after_seeing_it_unchanged_for_the_whole_duration",
            "controller/src/tgb/tests.rs::a_replica_that_does_not_lead_writes_nothing",
        ],
    ),
    row(
        "leader-election-id",
        "aws-load-balancer-controller-leader",
        &[
            "e2e/tests/e2e/zero_downtime/scenarios.rs::leader_failover_mid_rollout_fails_no_request",
            "e2e/tests/e2e/albc_metrics.rs::albc_families_are_served_with_albcs_types_and_labels",
            "controller/src/metrics.rs::leader_cache_and_binding_info_in_albcs_terms",
        ],
    ),
    row(
        "leader-election-namespace",
        "",
        &[
            "e2e/tests/e2e/zero_downtime/scenarios.rs::leader_failover_mid_rollout_fails_no_request",
            "e2e/tests/e2e/chart_on_node.rs::chart_installed_on_a_real_node_upgrades_rolls_back_and_uninstalls_cleanly",
        ],
    ),
    row(
        "watch-namespace",
        "",
        &[
            "e2e/tests/e2e/backend_rules.rs::one_bad_binding_never_delays_or_revokes_another_tenants_rules",
            "e2e/tests/e2e/adoption.rs::albc_to_ours_and_back_without_recreating_anything",
        ],
    ),
    row(
        "sync-period",
        "10h0m0s",
        &[
            "e2e/tests/e2e/targetgroupbinding.rs::drift_is_repaired_and_deleted_target_group_is_reported",
            "controller/src/tgb/tests.rs::a_missing_target_group_is_reported_and_nothing_written",
            "e2e/tests/e2e/ingress_alb.rs::actions_conditions_regex_paths_and_oidc_rules_match_the_annotations",
        ],
    ),
    row(
        "webhook-cert-dir",
        "/tmp/k",
        &[
            "e2e/tests/e2e/webhooks.rs::webhooks_inject_gates_validate_bindings_and_survive_outages",
            "webhook/tests/tls.rs::serves_tls_and_picks_up_a_rotated_certificate",
            "webhook/tests/tls.rs::missing_certificate_is_a_distinct_error",
        ],
    ),
    row(
        "webhook-cert-file",
        "tls.crt",
        &[
            "webhook/tests/tls.rs::serves_tls_and_picks_up_a_rotated_certificate",
            "webhook/tests/tls.rs::missing_certificate_is_a_distinct_error",
        ],
    ),
    row(
        "webhook-key-file",
        "tls.key",
        &[
            "webhook/tests/tls.rs::serves_tls_and_picks_up_a_rotated_certificate",
            "webhook/tests/tls.rs::missing_certificate_is_a_distinct_error",
        ],
    ),
    row(
        "kube-ca-pem-filepath",
        "",
        &[
            "webhook/tests/limits.rs::with_a_client_ca_only_its_certificates_get_in",
            "e2e/tests/e2e/webhook_overload.rs::with_a_client_ca_the_flood_is_refused_at_the_handshake",
            "controller/src/args.rs::albcs_kube_ca_pem_filepath_asks_webhook_callers_for_certificates_as_ours_does",
        ],
    ),
    row(
        "enable-pod-readiness-gate-inject",
        "true",
        &[
            "webhook/tests/handlers.rs::pod_left_alone_when_nothing_applies",
            "webhook/tests/handlers.rs::pod_injected_when_namespace_known_and_labelled",
            "e2e/tests/e2e/webhooks.rs::webhooks_inject_gates_validate_bindings_and_survive_outages",
        ],
    ),
    row(
        "quic-environment-variable-name",
        "AWS_LBC_QUIC_SERVER_ID",
        &[
            "webhook/tests/handlers.rs::quic_containers_get_a_server_id_each_on_one_claimed_worker_id",
            "controller/src/tgb/tests.rs::a_quic_group_gets_each_target_with_its_pods_server_id_and_the_ones_without_are_named",
            "e2e/tests/e2e/service_nlb/quic.rs::quic_ports_get_quic_listeners_and_each_pod_is_registered_with_its_server_id",
        ],
    ),
    row(
        "ingress-class",
        "alb",
        &[
            "model/src/ingress/select_tests.rs::flags_and_default_class",
            "model/src/ingress/select_tests.rs::albc_selection_table",
        ],
    ),
    row(
        "disable-ingress-class-annotation",
        "false",
        &[
            "model/src/admission/ingresses_tests.rs::disabled_class_annotation_only_blocks_new_usage",
            "model/src/ingress/select_tests.rs::disabled_annotations_are_denied_only_when_introduced",
            "webhook/tests/handlers.rs::ingress_disabled_annotations_only_block_new_usage",
        ],
    ),
    row(
        "disable-ingress-group-name-annotation",
        "false",
        &[
            "model/src/admission/ingresses_tests.rs::disabled_group_name_blocks_new_or_changed_values",
            "model/src/ingress/select_tests.rs::disabled_annotations_are_denied_only_when_introduced",
            "webhook/tests/handlers.rs::ingress_disabled_annotations_only_block_new_usage",
        ],
    ),
    row(
        "ingress-max-concurrent-reconciles",
        "3",
        &["controller/src/schedule.rs::coalesces_never_runs_a_key_twice_at_once_and_reruns_it_once_after"],
    ),
    row(
        "tolerate-non-existent-backend-service",
        "true",
        &[
            "controller/src/ingress/tests.rs::a_missing_backend_service_answers_503_unless_the_controller_is_told_not_to_tolerate_it",
            "model/src/ingress/rules_tests.rs::use_annotation_actions_and_conditions",
        ],
    ),
    row(
        "tolerate-non-existent-backend-action",
        "true",
        &["model/src/ingress/rules_tests.rs::use_annotation_actions_and_conditions"],
    ),
    row(
        "allowed-certificate-authority-arns",
        "",
        &[
            "model/src/ingress/certificates_tests.rs::allowed_authorities_keep_only_their_private_certificates",
            "controller/src/ingress/certificates.rs::allowed_authorities_keep_only_their_certificates",
            "controller/src/args.rs::unsafe_albc_flags_stop_the_start_with_the_fix",
        ],
    ),
    row(
        "default-pca-arn",
        "",
        &["model/src/ingress/created_certificates_tests.rs::a_member_asking_gets_its_hosts_sorted_and_its_issuer"],
    ),
    row(
        "enable-waf",
        "true",
        &["controller/src/ingress/tests.rs::a_waf_classic_annotation_associates_and_none_disassociates"],
    ),
    row(
        "enable-wafv2",
        "true",
        &[
            "controller/src/ingress/tests.rs::a_web_acl_annotation_associates_the_alb_once",
            "e2e/tests/e2e/ingress_alb.rs::wafv2_web_acl_follows_the_annotations",
        ],
    ),
    row(
        "enable-shield",
        "true",
        &[
            "controller/src/ingress/tests.rs::shield_false_removes_only_our_protection",
            "controller/src/ingress/tests.rs::a_protection_that_cannot_be_applied_holds_the_whole_group_as_it_is",
            "e2e/tests/e2e/ingress_alb/fail_closed.rs::shield_fails_closed_without_a_subscription_and_protects_with_one",
        ],
    ),
    row(
        "load-balancer-class",
        "service.k8s.aws/nlb",
        &[
            "e2e/tests/e2e/service_nlb/freeze.rs::a_changed_load_balancer_class_flag_freezes_the_service_instead_of_deleting_its_nlb",
            "webhook/tests/handlers.rs::service_class_configurable_and_switchable",
            "model/src/service/select.rs::albc_selection_table",
        ],
    ),
];

/// `name`'s status here.
pub fn status(name: &str) -> FlagStatus {
    if let Some((_, ours)) = ALIASES.iter().find(|(albc, _)| *albc == name) {
        return FlagStatus::Alias(ours);
    }
    match ALBC_ONLY_FLAGS.iter().find(|f| f.name == name) {
        Some(f) => FlagStatus::Reported(f.treatment),
        None => FlagStatus::Honoured,
    }
}

/// The page's flag section.
pub fn render_section(cell: fn(&str) -> String) -> String {
    let reported = FLAGS.iter().filter(|f| matches!(status(f.name), FlagStatus::Reported(_))).count();
    let mut out = String::from("\n## Command-line flags\n\n");
    out.push_str(&format!(
        "{} flags: {} honoured under ALBC's name ({} of them an alias of ours), {reported} parsed and reported at \
         start-up with what happens instead (the feature is absent, or the value differs from this controller's \
         only behaviour). A flag neither ALBC's nor ours refuses the start.\n\n",
        FLAGS.len(),
        FLAGS.len() - reported,
        ALIASES.len(),
    ));
    out.push_str("| flag | status | tests | note |\n|---|---|---|---|\n");
    for f in FLAGS {
        let (label, note) = match status(f.name) {
            FlagStatus::Honoured if PARSE_ONLY.contains(&f.name) => ("honoured (parse test only)", String::new()),
            FlagStatus::Honoured => ("honoured", String::new()),
            FlagStatus::Alias(ours) => ("honoured", format!("alias of `--{ours}`")),
            FlagStatus::Reported(Treatment::Warn(what)) => ("reported, no effect", what.to_string()),
            FlagStatus::Reported(Treatment::WarnUnless(ok, what)) => {
                ("honoured at its default", format!("any value but `{ok}` is reported: {what}"))
            }
        };
        let tests: Vec<String> = f.tests.iter().map(|t| format!("`{t}`")).collect();
        out.push_str(&format!("| `--{}` | {label} | {} | {} |\n", f.name, cell(&tests.join("<br>")), cell(&note)));
    }
    out
}
