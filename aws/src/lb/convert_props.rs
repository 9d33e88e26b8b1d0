//! Property tests of the ELBv2 conversions: model → SDK → model round-trips where the mapping is
//! defined (actions, conditions, rules), and SDK values shaped like any Describe answer (missing
//! fields, unknown enum values, out-of-range numbers) never panic on the way in.

use super::convert::{
    action, action_from, actions, listener_from, load_balancer_from, target_group_from, with_extra_certificates,
};
use super::convert_rules::{condition, condition_from, rule_from};
use aws_sdk_elasticloadbalancingv2::types as sdk;
use lbc_model::lb::{
    Action, AuthenticateCognito, AuthenticateOidc, Condition, JwtClaim, JwtClaimFormat, JwtValidation, QueryStringPair,
    Rule, TargetGroupRef, WeightedTargetGroup,
};
use proptest::prelude::*;
use std::collections::BTreeMap;

fn s() -> impl Strategy<Value = String> {
    prop_oneof![3 => "[a-zA-Z0-9:/._*?-]{0,16}", 1 => any::<String>()]
}

fn strings(min: usize) -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(s(), min..4)
}

fn params() -> impl Strategy<Value = BTreeMap<String, String>> {
    proptest::collection::btree_map(s(), s(), 0..3)
}

/// An enum value AWS knows, or one a newer API might send.
fn wire(known: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop_oneof![3 => proptest::sample::select(known).prop_map(str::to_string), 1 => s()]
}

fn oidc() -> impl Strategy<Value = AuthenticateOidc> {
    let behaviour = proptest::option::of(wire(&["deny", "allow", "authenticate"]).boxed());
    ((s(), s(), s(), s(), s()), proptest::option::of(s()), proptest::option::of(s()), proptest::option::of(s()))
        .prop_flat_map(move |(ends, secret, scope, cookie)| {
            (
                Just((ends, secret, scope, cookie)),
                proptest::option::of(0..=i64::MAX as u64),
                behaviour.clone(),
                params(),
            )
        })
        .prop_map(
            |(
                (
                    (issuer, authorization_endpoint, token_endpoint, user_info_endpoint, client_id),
                    client_secret,
                    scope,
                    session_cookie_name,
                ),
                session_timeout_seconds,
                on_unauthenticated_request,
                extra_params,
            )| {
                AuthenticateOidc {
                    issuer,
                    authorization_endpoint,
                    token_endpoint,
                    user_info_endpoint,
                    client_id,
                    client_secret,
                    client_secret_digest: None,
                    scope,
                    session_cookie_name,
                    session_timeout_seconds,
                    on_unauthenticated_request,
                    extra_params,
                }
            },
        )
}

fn jwt() -> impl Strategy<Value = JwtValidation> {
    let claim = (proptest::sample::select(JwtClaimFormat::ALL.to_vec()), s(), strings(1))
        .prop_map(|(format, name, values)| JwtClaim { format, name, values });
    (s(), s(), proptest::collection::vec(claim, 0..3)).prop_map(|(jwks_endpoint, issuer, additional_claims)| {
        JwtValidation { jwks_endpoint, issuer, additional_claims }
    })
}

fn cognito() -> impl Strategy<Value = AuthenticateCognito> {
    (
        (s(), s(), s()),
        (proptest::option::of(s()), proptest::option::of(s())),
        proptest::option::of(0..=i64::MAX as u64),
        proptest::option::of(wire(&["deny", "allow", "authenticate"])),
        params(),
    )
        .prop_map(
            |(
                (user_pool_arn, user_pool_client_id, user_pool_domain),
                (scope, session_cookie_name),
                session_timeout_seconds,
                on_unauthenticated_request,
                extra_params,
            )| {
                AuthenticateCognito {
                    user_pool_arn,
                    user_pool_client_id,
                    user_pool_domain,
                    scope,
                    session_cookie_name,
                    session_timeout_seconds,
                    on_unauthenticated_request,
                    extra_params,
                }
            },
        )
}

/// Model actions the controller can send (target groups resolved to ARNs).
fn model_action() -> impl Strategy<Value = Action> {
    let tg = (
        "arn:aws:elasticloadbalancing:[a-z0-9-]{1,8}:[0-9]{12}:targetgroup/[a-z0-9-]{1,8}/[0-9a-f]{8}",
        proptest::option::of(0u32..=999),
    )
        .prop_map(|(arn, weight)| WeightedTargetGroup { target_group: TargetGroupRef::Arn(arn), weight });
    let opt = || proptest::option::of(s());
    prop_oneof![
        (proptest::collection::vec(tg, 1..4), proptest::option::of(0u32..=604_800))
            .prop_map(|(target_groups, stickiness_seconds)| Action::Forward { target_groups, stickiness_seconds }),
        (opt(), opt(), opt(), opt(), opt(), wire(&["HTTP_301", "HTTP_302"])).prop_map(
            |(protocol, host, port, path, query, status_code)| {
                Action::Redirect { protocol, host, port, path, query, status_code }
            }
        ),
        (s(), opt(), opt()).prop_map(|(status_code, content_type, message_body)| Action::FixedResponse {
            status_code,
            content_type,
            message_body
        }),
        oidc().prop_map(Action::AuthenticateOidc),
        cognito().prop_map(Action::AuthenticateCognito),
        jwt().prop_map(Action::JwtValidation),
    ]
}

/// What reading back what we sent gives: no OIDC secret (AWS never returns it), and a lone
/// unsticky forward has no weight (AWS reports it as weight 1).
fn as_read_back(a: &Action) -> Action {
    match a.without_secrets() {
        Action::Forward { mut target_groups, stickiness_seconds }
            if target_groups.len() == 1 && target_groups[0].weight == Some(1) =>
        {
            target_groups[0].weight = None;
            Action::Forward { target_groups, stickiness_seconds }
        }
        other => other,
    }
}

fn model_condition() -> impl Strategy<Value = Condition> {
    let pair = (proptest::option::of(s()), s()).prop_map(|(key, value)| QueryStringPair { key, value });
    prop_oneof![
        strings(0).prop_map(Condition::HostHeader),
        strings(1).prop_map(Condition::HostHeaderRegex),
        strings(0).prop_map(Condition::PathPattern),
        strings(1).prop_map(Condition::PathPatternRegex),
        (s(), strings(0)).prop_map(|(name, values)| Condition::HttpHeader { name, values }),
        (s(), strings(1)).prop_map(|(name, values)| Condition::HttpHeaderRegex { name, values }),
        strings(0).prop_map(Condition::HttpRequestMethod),
        proptest::collection::vec(pair, 0..3).prop_map(Condition::QueryString),
        strings(0).prop_map(Condition::SourceIp),
    ]
}

// ---- SDK-shaped values, as a Describe answer could hold them ------------------------------------

fn sdk_action() -> impl Strategy<Value = sdk::Action> {
    let tuple = (proptest::option::of(s()), any::<Option<i32>>())
        .prop_map(|(arn, w)| sdk::TargetGroupTuple::builder().set_target_group_arn(arn).set_weight(w).build());
    let stick = (any::<Option<bool>>(), any::<Option<i32>>())
        .prop_map(|(e, d)| sdk::TargetGroupStickinessConfig::builder().set_enabled(e).set_duration_seconds(d).build());
    let forward = (proptest::collection::vec(tuple, 0..3), proptest::option::of(stick)).prop_map(|(t, st)| {
        sdk::ForwardActionConfig::builder().set_target_groups(Some(t)).set_target_group_stickiness_config(st).build()
    });
    let redirect = (proptest::option::of(s()), proptest::option::of(s()), wire(&["HTTP_301", "HTTP_302"])).prop_map(
        |(h, p, code)| {
            sdk::RedirectActionConfig::builder().set_host(h).set_path(p).status_code(code.as_str().into()).build()
        },
    );
    let fixed = (proptest::option::of(s()), proptest::option::of(s())).prop_map(|(code, body)| {
        sdk::FixedResponseActionConfig::builder().status_code(code.unwrap_or_default()).set_message_body(body).build()
    });
    let kind =
        wire(&["forward", "redirect", "fixed-response", "authenticate-oidc", "authenticate-cognito", "jwt-validation"]);
    (
        kind,
        any::<Option<i32>>(),
        proptest::option::of(s()),
        proptest::option::of(forward),
        proptest::option::of(redirect),
        proptest::option::of(fixed),
        proptest::option::of(oidc()),
        proptest::option::of(cognito()),
        proptest::option::of(jwt()),
    )
        .prop_map(|(kind, order, arn, fwd, red, fix, o, c, j)| {
            sdk::Action::builder()
                .r#type(kind.as_str().into())
                .set_order(order)
                .set_target_group_arn(arn)
                .set_forward_config(fwd)
                .set_redirect_config(red)
                .set_fixed_response_config(fix)
                .set_authenticate_oidc_config(o.map(|o| super::convert_rules::oidc(&o)))
                .set_authenticate_cognito_config(c.map(|c| super::convert_rules::cognito(&c)))
                .set_jwt_validation_config(j.map(|j| super::convert_rules::jwt(&j)))
                .build()
        })
}

fn sdk_condition() -> impl Strategy<Value = sdk::RuleCondition> {
    let field =
        wire(&["host-header", "path-pattern", "http-header", "http-request-method", "query-string", "source-ip"]);
    (field, strings(0), proptest::option::of(model_condition())).prop_map(|(field, legacy, cfg)| {
        // Another condition's configs under this field name, or none, or the legacy Values.
        let from = cfg.map(|c| condition(&c)).unwrap_or_else(|| sdk::RuleCondition::builder().build());
        sdk::RuleCondition::builder()
            .field(field)
            .set_values(Some(legacy))
            .set_host_header_config(from.host_header_config().cloned())
            .set_path_pattern_config(from.path_pattern_config().cloned())
            .set_http_header_config(from.http_header_config().cloned())
            .set_http_request_method_config(from.http_request_method_config().cloned())
            .set_query_string_config(from.query_string_config().cloned())
            .set_source_ip_config(from.source_ip_config().cloned())
            .build()
    })
}

fn sdk_rule() -> impl Strategy<Value = sdk::Rule> {
    let priority = prop_oneof![(0u64..=60_000).prop_map(|p| p.to_string()), Just("default".to_string()), s()];
    (
        proptest::option::of(s()),
        proptest::option::of(priority),
        proptest::collection::vec(sdk_condition(), 0..3),
        proptest::collection::vec(sdk_action(), 0..3),
        any::<Option<bool>>(),
    )
        .prop_map(|(arn, priority, conditions, actions, is_default)| {
            sdk::Rule::builder()
                .set_rule_arn(arn)
                .set_priority(priority)
                .set_conditions(Some(conditions))
                .set_actions(Some(actions))
                .set_is_default(is_default)
                .build()
        })
}

fn sdk_load_balancer() -> impl Strategy<Value = sdk::LoadBalancer> {
    let address = (
        proptest::option::of(s()),
        proptest::option::of(prop_oneof![Just("10.0.0.9".to_string()), s()]),
        proptest::option::of(prop_oneof![Just("2600::9".to_string()), s()]),
    )
        .prop_map(|(alloc, v4, v6)| {
            sdk::LoadBalancerAddress::builder()
                .set_allocation_id(alloc)
                .set_private_ipv4_address(v4)
                .set_ipv6_address(v6)
                .build()
        });
    let az = (proptest::option::of(s()), proptest::collection::vec(address, 0..2)).prop_map(|(subnet, addrs)| {
        sdk::AvailabilityZone::builder().set_subnet_id(subnet).set_load_balancer_addresses(Some(addrs)).build()
    });
    (
        (proptest::option::of(s()), proptest::option::of(s()), proptest::option::of(s()), proptest::option::of(s())),
        (
            wire(&["network", "application", "gateway"]),
            wire(&["internal", "internet-facing"]),
            wire(&["ipv4", "dualstack", "dualstack-without-public-ipv4"]),
        ),
        (
            proptest::collection::vec(az, 0..3),
            strings(0),
            proptest::option::of(wire(&["active", "provisioning", "failed"])),
            proptest::option::of(wire(&["on", "off", "ON"])),
        ),
    )
        .prop_map(|((arn, name, dns, vpc), (t, scheme, ip), (azs, sgs, state, enforce))| {
            sdk::LoadBalancer::builder()
                .set_load_balancer_arn(arn)
                .set_load_balancer_name(name)
                .set_dns_name(dns)
                .set_vpc_id(vpc)
                .r#type(t.as_str().into())
                .scheme(scheme.as_str().into())
                .ip_address_type(ip.as_str().into())
                .set_availability_zones(Some(azs))
                .set_security_groups(Some(sgs))
                .set_state(state.map(|c| sdk::LoadBalancerState::builder().code(c.as_str().into()).build()))
                .set_enforce_security_group_inbound_rules_on_private_link_traffic(enforce)
                .build()
        })
}

fn sdk_target_group() -> impl Strategy<Value = sdk::TargetGroup> {
    let proto = || proptest::option::of(wire(&["HTTP", "HTTPS", "TCP", "UDP", "TCP_UDP", "TLS", "GENEVE", "QUIC"]));
    (
        (proptest::option::of(s()), proptest::option::of(s()), proto(), proto(), any::<Option<i32>>()),
        (
            proptest::option::of(prop_oneof![
                Just("traffic-port".to_string()),
                (0u32..70_000).prop_map(|p| p.to_string()),
                s()
            ]),
            proptest::option::of(s()),
            proptest::option::of(s()),
        ),
        any::<(Option<i32>, Option<i32>, Option<i32>, Option<i32>)>(),
        (
            proptest::option::of(wire(&["ip", "instance", "lambda", "alb"])),
            proptest::option::of(wire(&["ipv4", "ipv6"])),
            proptest::option::of(s()),
        ),
    )
        .prop_map(|((arn, name, p, hp, port), (hc_port, path, codes), (i, t, h, u), (tt, ipt, vpc))| {
            sdk::TargetGroup::builder()
                .set_target_group_arn(arn)
                .set_target_group_name(name)
                .set_protocol(p.map(|p| p.as_str().into()))
                .set_health_check_protocol(hp.map(|p| p.as_str().into()))
                .set_port(port)
                .set_health_check_port(hc_port)
                .set_health_check_path(path)
                .set_matcher(codes.map(|c| sdk::Matcher::builder().http_code(c).build()))
                .set_health_check_interval_seconds(i)
                .set_health_check_timeout_seconds(t)
                .set_healthy_threshold_count(h)
                .set_unhealthy_threshold_count(u)
                .set_target_type(tt.map(|t| t.as_str().into()))
                .set_ip_address_type(ipt.map(|t| t.as_str().into()))
                .set_vpc_id(vpc)
                .build()
        })
}

fn sdk_listener() -> impl Strategy<Value = sdk::Listener> {
    let cert = (proptest::option::of(s()), any::<Option<bool>>())
        .prop_map(|(arn, d)| sdk::Certificate::builder().set_certificate_arn(arn).set_is_default(d).build());
    (
        proptest::option::of(s()),
        any::<Option<i32>>(),
        proptest::option::of(wire(&["HTTP", "HTTPS", "TCP", "TLS"])),
        proptest::collection::vec(cert, 0..3),
        strings(0),
        proptest::collection::vec(sdk_action(), 0..3),
    )
        .prop_map(|(arn, port, proto, certs, alpn, acts)| {
            sdk::Listener::builder()
                .set_listener_arn(arn)
                .set_port(port)
                .set_protocol(proto.map(|p| p.as_str().into()))
                .set_certificates(Some(certs))
                .set_alpn_policy(Some(alpn))
                .set_default_actions(Some(acts))
                .build()
        })
}

proptest! {
    #[test]
    fn actions_round_trip(list in proptest::collection::vec(model_action(), 1..4), reorder in any::<bool>()) {
        let mut sent = actions(&list).map_err(TestCaseError::fail)?;
        for a in &list {
            prop_assert_eq!(action_from(&action(a, None).unwrap()), Some(as_read_back(a)));
        }
        if reorder {
            sent.reverse(); // AWS orders rule actions by Order, not by position
        }
        let rule = sdk::Rule::builder().rule_arn("arn:rule").priority("12").set_actions(Some(sent)).is_default(false).build();
        let got = rule_from(&rule).unwrap().spec;
        prop_assert_eq!(got.actions, list.iter().map(as_read_back).collect::<Vec<_>>());
    }

    #[test]
    fn conditions_round_trip(conditions in proptest::collection::vec(model_condition(), 0..4), priority in 1u32..=50_000) {
        for c in &conditions {
            prop_assert_eq!(condition_from(&condition(c)), Some(c.clone()));
        }
        let rule = sdk::Rule::builder()
            .rule_arn("arn:rule")
            .priority(priority.to_string())
            .set_conditions(Some(conditions.iter().map(condition).collect()))
            .build();
        let got = rule_from(&rule).unwrap().spec;
        prop_assert_eq!(got, Rule { priority, conditions, actions: vec![], transforms: vec![], tags: Default::default() });
    }

    #[test]
    fn describe_answers_never_panic(lb in sdk_load_balancer(), tg in sdk_target_group(), l in sdk_listener(), r in sdk_rule()) {
        let found = load_balancer_from(&lb, Default::default());
        prop_assert!(found.lb.spec.subnets.windows(2).all(|w| w[0] <= w[1]));
        prop_assert!(found.lb.spec.security_groups.windows(2).all(|w| w[0] <= w[1]));
        let t = target_group_from(&tg, Default::default());
        prop_assert_eq!(t.spec.port, tg.port().and_then(|p| u16::try_from(p).ok()).unwrap_or(0));
        let got = listener_from(&l);
        prop_assert_eq!(got.spec.port, l.port().and_then(|p| u16::try_from(p).ok()).unwrap_or(0));
        prop_assert!(got.spec.certificates.len() <= 1);
        prop_assert!(got.spec.default_actions.len() <= l.default_actions().len());
        let full = with_extra_certificates(&got.spec.certificates, l.certificates());
        prop_assert_eq!(full.first(), got.spec.certificates.first());
        let extra = &full[got.spec.certificates.len()..];
        prop_assert!(extra.windows(2).all(|w| w[0] < w[1]), "extras not sorted and unique: {:?}", extra);
        prop_assert!(extra.iter().all(|c| Some(c) != got.spec.certificates.first()));
        if let Some(rule) = rule_from(&r) {
            prop_assert_eq!(Some(rule.spec.priority.to_string()), r.priority().map(|p| p.parse::<u32>().unwrap().to_string()));
            prop_assert!(rule.spec.conditions.len() <= r.conditions().len());
        }
    }
}
