use super::*;
use crate::annotations::fields::HealthCheckPortSetting;
use crate::ingress::keys::full_key;

fn parse(kv: &[(&str, &str)]) -> Result<IngressSettings, AnnotationErrors> {
    parse_annotations(&kv.iter().map(|(key, v)| (full_key(key), v.to_string())).collect(), "shop")
}

fn ok(kv: &[(&str, &str)]) -> IngressSettings {
    parse(kv).unwrap_or_else(|e| panic!("{kv:?}: {e}"))
}

#[test]
fn no_annotations_no_settings() {
    assert_eq!(ok(&[]), IngressSettings::default());
}

#[test]
fn valid_values_table() {
    type Check = fn(&IngressSettings) -> bool;
    let cases: &[(&str, &str, Check)] = &[
        (k::GROUP_NAME, "my-team.awesome-group", |s| s.group_name.as_deref() == Some("my-team.awesome-group")),
        (k::GROUP_ORDER, "-1000", |s| s.group_order == Some(-1000)),
        (k::GROUP_ORDER, "1000", |s| s.group_order == Some(1000)),
        (k::LOAD_BALANCER_NAME, "shop-alb", |s| s.load_balancer_name.as_deref() == Some("shop-alb")),
        (k::SCHEME, "internet-facing", |s| s.scheme == Some(Scheme::InternetFacing)),
        (k::IP_ADDRESS_TYPE, "dualstack-without-public-ipv4", |s| {
            s.ip_address_type == Some(LbIpAddressType::DualstackWithoutPublicIpv4)
        }),
        (k::SUBNETS, "subnet-1, public-a", |s| s.subnets == Some(vec!["subnet-1".into(), "public-a".into()])),
        (k::SECURITY_GROUPS, "sg-1,web", |s| s.security_groups.as_ref().is_some_and(|v| v.len() == 2)),
        (k::MANAGE_BACKEND_SG_RULES, "true", |s| s.manage_backend_security_group_rules == Some(true)),
        (k::LOAD_BALANCER_ATTRIBUTES, "idle_timeout.timeout_seconds=600", |s| {
            s.load_balancer_attributes.as_ref().unwrap()["idle_timeout.timeout_seconds"] == "600"
        }),
        (k::WAFV2_ACL_ARN, "arn:aws:wafv2:x", |s| s.wafv2_acl_arn.is_some()),
        (k::LISTEN_PORTS, r#"[{"HTTP":80},{"HTTPS":443}]"#, |s| {
            s.listen_ports == Some(vec![(Protocol::Http, 80), (Protocol::Https, 443)])
        }),
        (k::SSL_REDIRECT, "443", |s| s.ssl_redirect == Some(443)),
        (k::INBOUND_CIDRS, "10.0.0.0/8, ::/0", |s| s.inbound_cidrs.as_ref().is_some_and(|v| v.len() == 2)),
        (k::SECURITY_GROUP_PREFIX_LISTS, "pl-1", |s| s.security_group_prefix_lists == Some(vec!["pl-1".into()])),
        (k::CERTIFICATE_ARN, "arn:a,arn:b", |s| s.certificate_arns == ["arn:a", "arn:b"]),
        (k::SSL_POLICY, "ELBSecurityPolicy-TLS13-1-2-2021-06", |s| s.ssl_policy.is_some()),
        (k::MINIMUM_CAPACITY, "CapacityUnits=100", |s| s.minimum_capacity_units == Some(100)),
        (k::USE_REGEX_PATH_MATCH, "true", |s| s.use_regex_path_match),
        (k::TARGET_TYPE, "ip", |s| s.backend.target_type == Some(TargetType::Ip)),
        (k::BACKEND_PROTOCOL, "HTTPS", |s| s.backend.backend_protocol == Some(Protocol::Https)),
        (k::BACKEND_PROTOCOL_VERSION, "GRPC", |s| s.backend.backend_protocol_version.as_deref() == Some("GRPC")),
        (k::TARGET_GROUP_ATTRIBUTES, "stickiness.enabled=true", |s| s.backend.target_group_attributes.is_some()),
        (k::HC_PORT, "traffic-port", |s| s.backend.health_check.port == Some(HealthCheckPortSetting::TrafficPort)),
        (k::HC_PROTOCOL, "HTTPS", |s| s.backend.health_check.protocol == Some(Protocol::Https)),
        (k::HC_PATH, "/ping", |s| s.backend.health_check.path.as_deref() == Some("/ping")),
        (k::HC_INTERVAL, "30", |s| s.backend.health_check.interval_seconds == Some(30)),
        (k::SUCCESS_CODES, "200-299", |s| s.backend.health_check.success_codes.is_some()),
        (k::SUCCESS_CODES, "0,12", |s| s.backend.health_check.success_codes.as_deref() == Some("0,12")),
        (k::AUTH_TYPE, "cognito", |s| s.backend.auth.auth_type == Some(AuthType::Cognito)),
        (k::AUTH_ON_UNAUTHENTICATED_REQUEST, "deny", |s| s.backend.auth.on_unauthenticated_request.is_some()),
        (k::AUTH_SESSION_TIMEOUT, "3600", |s| s.backend.auth.session_timeout_seconds == Some(3600)),
        (k::AUTH_SCOPE, "email openid", |s| s.backend.auth.scope.as_deref() == Some("email openid")),
        (k::TAGS, "team=shop", |s| s.backend.tags["team"] == "shop"),
        ("listener-attributes.HTTPS-443", "routing.http.response.server.enabled=false", |s| {
            s.listener_attributes.contains_key(&(Protocol::Https, 443))
        }),
        ("actions.response-503", r#"{"type":"fixed-response","fixedResponseConfig":{"statusCode":"503"}}"#, |s| {
            s.actions.contains_key("response-503")
        }),
        (
            "conditions.canary",
            r#"[{"field":"http-header","httpHeaderConfig":{"httpHeaderName":"X","values":["1"]}}]"#,
            |s| s.conditions["canary"].len() == 1,
        ),
    ];
    for (key, value, check) in cases {
        let s = ok(&[(key, value)]);
        assert!(check(&s), "{key}={value:?}: {s:?}");
        assert!(s.unknown.is_empty() && s.unsupported.is_empty(), "{key}: {s:?}");
    }
}

#[test]
fn invalid_values_table() {
    let cases: &[(&str, &str, &str)] = &[
        (k::GROUP_NAME, "Team", "lower-case"),
        (k::GROUP_NAME, "-team", "starting and ending"),
        (k::GROUP_NAME, &"a".repeat(64), "63"),
        (k::GROUP_ORDER, "1001", "-1000 to 1000"),
        (k::GROUP_ORDER, "x", "-1000 to 1000"),
        (k::LOAD_BALANCER_NAME, "internal-x", "internal-"),
        (k::LOAD_BALANCER_NAME, &"n".repeat(33), "1 to 32"),
        (k::SCHEME, "public", "internet-facing"),
        (k::IP_ADDRESS_TYPE, "ipv6", "dualstack"),
        (k::LISTEN_PORTS, r#"[{"HTTP":80},{"HTTP":80}]"#, "twice"),
        (k::LISTEN_PORTS, "80", "JSON"),
        (k::SSL_REDIRECT, "https", "1 to 65535"),
        (k::INBOUND_CIDRS, "10.0.0.0/33", "CIDR"),
        (k::SECURITY_GROUP_PREFIX_LISTS, "sg-1", "pl-"),
        (k::TARGET_TYPE, "pod", "\"ip\""),
        (k::BACKEND_PROTOCOL, "https", "\"HTTPS\""),
        (k::BACKEND_PROTOCOL_VERSION, "HTTP3", "GRPC"),
        (k::HC_PROTOCOL, "tcp", "\"http\" or \"https\""),
        (k::SUCCESS_CODES, "500", "200 to 499"),
        (k::HC_TIMEOUT, "1", "from 2 to 120"),
        (k::AUTH_TYPE, "saml", "cognito"),
        (k::AUTH_IDP_OIDC, r#"{"issuer":"x"}"#, "secretName"),
        (k::AUTH_IDP_COGNITO, "{", "JSON"),
        (k::MINIMUM_CAPACITY, "Units=100", "CapacityUnits=N"),
        ("listener-attributes.TCP-80", "a=b", "HTTP|HTTPS"),
        ("listener-attributes.HTTP-80", "ab", "key=value"),
        ("actions.x", r#"{"type":"nope"}"#, "nope"),
        ("conditions.x", "{}", "conditions"),
    ];
    for (key, value, fragment) in cases {
        let errs = parse(&[(key, value)]).expect_err(&format!("{key}={value:?} should fail"));
        assert_eq!(errs.0.len(), 1, "{key}: {errs}");
        assert_eq!(errs.0[0].key, full_key(key));
        let text = errs.to_string();
        assert!(text.contains(fragment), "{key}={value:?}: {text}");
    }
    let many = parse(&[(k::SCHEME, "x"), (k::GROUP_ORDER, "y"), (k::TARGET_TYPE, "z")]).unwrap_err();
    assert_eq!(many.0.len(), 3, "every problem at once");
}

#[test]
fn unsupported_and_unknown_are_listed() {
    let s = ok(&[
        (k::WAF_ACL_ID, "x"),
        (k::ENABLE_FRONTEND_NLB, "true"),
        ("frontend-nlb-scheme", "internal"),
        ("create-acm-cert", "true"),
        ("target-control-port.svc.80", "3000"),
        (k::SHIELD_ADVANCED_PROTECTION, "true"),
        ("healthcheck-pth", "/"),
    ]);
    let keys: Vec<&str> = s.unsupported.iter().map(|u| u.key.as_str()).collect();
    assert_eq!(keys, Vec::<&str>::new(), "nothing refused");
    assert_eq!(s.create_acm_cert, Some(true));
    assert!(s.unsupported.iter().all(|u| !u.reason.is_empty()));
    assert!(s.fail_closed().is_empty(), "no refused annotation is security-relevant any more: {keys:?}");
    // Implemented: read, not refused.
    assert_eq!(s.waf_classic_acl_id.as_deref(), Some("x"));
    assert_eq!((s.frontend_nlb.enable, s.frontend_nlb.scheme), (Some(true), Some(crate::lb::Scheme::Internal)));
    assert_eq!(s.shield_advanced_protection, Some(true));
    assert_eq!(s.backend.target_control_ports, BTreeMap::from([(("svc".to_string(), "80".to_string()), 3000)]));
    assert_eq!(s.unknown, [full_key("healthcheck-pth")]);
    for (key, value) in [("target-control-port.svc.80", "0"), ("target-control-port.svc", "3000")] {
        let e = parse(&[(key, value)]).unwrap_err().to_string();
        assert!(e.contains(key) && (e.contains("from 1 to 65535") || e.contains("<service>.<port>")), "{e}");
    }
    let reserved = ok(&[(k::TAGS, "elbv2.k8s.aws/cluster=x,team=a")]);
    assert_eq!(reserved.backend.tags.len(), 1);
    assert_eq!(reserved.unsupported.len(), 1);
    // Issue 32: an Ingress may not put a Service stack's (or any controller's) tag on its resources.
    let injected = ok(&[(k::TAGS, "service.k8s.aws/stack=victim/web,service.k8s.aws/resource=x,team=a")]);
    assert_eq!(injected.backend.tags.keys().collect::<Vec<_>>(), ["team"]);
    assert_eq!(injected.unsupported.len(), 1);
    assert_eq!(injected.unsupported[0].key, full_key(k::TAGS));
    let reason = &injected.unsupported[0].reason;
    assert!(reason.contains("\"service.k8s.aws/resource\" (prefix") && reason.contains("\"service.k8s.aws/stack\""));
}

#[test]
fn service_annotations_override_the_ingress() {
    let ing = ok(&[(k::TARGET_TYPE, "ip"), (k::HC_PATH, "/ing"), (k::HC_INTERVAL, "30"), (k::TAGS, "a=1,b=1")]);
    let svc_ann: BTreeMap<String, String> = [(k::HC_PATH, "/svc"), (k::TAGS, "b=2"), (k::SCHEME, "internal")]
        .iter()
        .map(|(key, v)| (full_key(key), v.to_string()))
        .collect();
    let (svc, unsupported, unknown) = parse_service_annotations(&svc_ann).unwrap();
    assert!(unsupported.is_empty());
    assert_eq!(unknown, [full_key(k::SCHEME)], "an Ingress-only annotation means nothing on a Service");
    let merged = ing.backend.overridden_by(&svc);
    assert_eq!(merged.target_type, Some(TargetType::Ip));
    assert_eq!(merged.health_check.path.as_deref(), Some("/svc"));
    assert_eq!(merged.health_check.interval_seconds, Some(30));
    assert_eq!(merged.tags, Tags::from([("a".into(), "1".into()), ("b".into(), "2".into())]));
}

/// WAF Classic: `waf-acl-id` first, its older name `web-acl-id` otherwise (as ALBC reads them); an
/// empty value asks for nothing. Shield: Go's booleans, anything else refused with the key.
#[test]
fn waf_classic_and_shield_are_read_as_albc_reads_them() {
    let id = |pairs: &[(&str, &str)]| ok(pairs).waf_classic_acl_id;
    assert_eq!(id(&[(k::WAF_ACL_ID, "a"), (k::WEB_ACL_ID, "b")]).as_deref(), Some("a"));
    assert_eq!(id(&[(k::WEB_ACL_ID, " b ")]).as_deref(), Some("b"));
    assert_eq!(id(&[(k::WAF_ACL_ID, "")]), None);
    assert_eq!(id(&[(k::WAF_ACL_ID, "none")]).as_deref(), Some("none"));
    assert_eq!(id(&[]), None);
    for (v, want) in [("true", true), ("1", true), ("False", false), ("0", false)] {
        assert_eq!(ok(&[(k::SHIELD_ADVANCED_PROTECTION, v)]).shield_advanced_protection, Some(want), "{v}");
    }
    let errs = parse(&[(k::SHIELD_ADVANCED_PROTECTION, "yes")]).unwrap_err();
    assert_eq!(errs.0[0].key, full_key(k::SHIELD_ADVANCED_PROTECTION));
}
