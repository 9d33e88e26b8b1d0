use super::*;

fn svc(name: &str, port: ServicePort) -> ForwardTarget {
    ForwardTarget::Service(BackendRef { namespace: "shop".into(), service: name.into(), port })
}

#[test]
fn actions_table() {
    let cases: Vec<(&str, RuleAction)> = vec![
        (
            r#"{"type":"fixed-response","fixedResponseConfig":{"contentType":"text/plain","statusCode":"503","messageBody":"down"}}"#,
            RuleAction::FixedResponse {
                status_code: "503".into(),
                content_type: Some("text/plain".into()),
                message_body: Some("down".into()),
            },
        ),
        (
            r#"{"type":"redirect","redirectConfig":{"host":"aws.amazon.com","path":"/eks/","port":"443","protocol":"HTTPS","query":"k=v","statusCode":"HTTP_302"}}"#,
            RuleAction::Redirect {
                protocol: Some("HTTPS".into()),
                host: Some("aws.amazon.com".into()),
                port: Some("443".into()),
                path: Some("/eks/".into()),
                query: Some("k=v".into()),
                status_code: "HTTP_302".into(),
            },
        ),
        (
            // Go's case-insensitive keys, as users write them.
            r#"{"type":"redirect", "redirectconfig": {"protocol":"HTTPS","port":"443","statuscode":"HTTP_301"}}"#,
            RuleAction::Redirect {
                protocol: Some("HTTPS".into()),
                host: None,
                port: Some("443".into()),
                path: None,
                query: None,
                status_code: "HTTP_301".into(),
            },
        ),
        (
            r#"{"type":"forward","targetGroupARN":"arn:tg"}"#,
            RuleAction::Forward {
                target_groups: vec![WeightedTarget { target: ForwardTarget::Arn("arn:tg".into()), weight: None }],
                stickiness_seconds: None,
            },
        ),
        (
            r#"{"type":"forward","targetGroupName":"legacy"}"#,
            RuleAction::Forward {
                target_groups: vec![WeightedTarget { target: ForwardTarget::Name("legacy".into()), weight: None }],
                stickiness_seconds: None,
            },
        ),
        (
            r#"{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":"s1","servicePort":"http","weight":20},{"serviceName":"s2","servicePort":80,"weight":20},{"targetGroupARN":"arn:x","weight":60}],"targetGroupStickinessConfig":{"enabled":true,"durationSeconds":200}}}"#,
            RuleAction::Forward {
                target_groups: vec![
                    WeightedTarget { target: svc("s1", ServicePort::Name("http".into())), weight: Some(20) },
                    WeightedTarget { target: svc("s2", ServicePort::Number(80)), weight: Some(20) },
                    WeightedTarget { target: ForwardTarget::Arn("arn:x".into()), weight: Some(60) },
                ],
                stickiness_seconds: Some(200),
            },
        ),
        (
            // ALBC re-parses string ports: "8080" is the number 8080.
            r#"{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":"s1","servicePort":"8080"}]}}"#,
            RuleAction::Forward {
                target_groups: vec![WeightedTarget { target: svc("s1", ServicePort::Number(8080)), weight: None }],
                stickiness_seconds: None,
            },
        ),
        (
            r#"{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":"s1","servicePort":80}],"targetGroupStickinessConfig":{"enabled":false,"durationSeconds":9}}}"#,
            RuleAction::Forward {
                target_groups: vec![WeightedTarget { target: svc("s1", ServicePort::Number(80)), weight: None }],
                stickiness_seconds: None,
            },
        ),
    ];
    for (raw, want) in cases {
        assert_eq!(parse_action(raw, "shop"), Ok(want), "{raw}");
    }
}

#[test]
fn invalid_actions_say_why() {
    let cases = [
        ("not json", "JSON"),
        (r#"{"type":"teleport"}"#, "teleport"),
        (r#"{"type":"forward"}"#, "forwardConfig"),
        (r#"{"type":"forward","forwardConfig":{"targetGroups":[]}}"#, "empty"),
        (r#"{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":"s"}]}}"#, "servicePort"),
        (
            r#"{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":"s","targetGroupARN":"a"}]}}"#,
            "exactly one",
        ),
        (r#"{"type":"redirect","redirectConfig":{"host":"x"}}"#, "statusCode"),
        (r#"{"type":"redirect","redirectConfig":{"statusCode":"HTTP_307"}}"#, "HTTP_307"),
        (r#"{"type":"fixed-response","fixedResponseConfig":{}}"#, "statusCode"),
        (r#"{"type":"redirect"}"#, "redirectConfig"),
    ];
    for (raw, fragment) in cases {
        let err = parse_action(raw, "ns").expect_err(raw);
        assert!(err.contains(fragment), "{raw}: {err}");
    }
}

#[test]
fn conditions_table() {
    let raw = r#"[
        {"field":"host-header","hostHeaderConfig":{"values":["a.example.com","b.example.com"]}},
        {"field":"path-pattern","pathPatternConfig":{"values":["/api/*"]}},
        {"field":"http-header","httpHeaderConfig":{"httpHeaderName":"X-Env","values":["canary"]}},
        {"field":"http-request-method","httpRequestMethodConfig":{"Values":["GET","HEAD"]}},
        {"field":"query-string","queryStringConfig":{"values":[{"key":"v","value":"2"},{"value":"x"}]}},
        {"field":"source-ip","sourceIpConfig":{"values":["10.0.0.0/8"]}}
    ]"#;
    let got = parse_conditions(raw).unwrap();
    assert_eq!(
        got,
        vec![
            Condition::HostHeader(vec!["a.example.com".into(), "b.example.com".into()]),
            Condition::PathPattern(vec!["/api/*".into()]),
            Condition::HttpHeader { name: "X-Env".into(), values: vec!["canary".into()] },
            Condition::HttpRequestMethod(vec!["GET".into(), "HEAD".into()]),
            Condition::QueryString(vec![
                QueryStringPair { key: Some("v".into()), value: "2".into() },
                QueryStringPair { key: None, value: "x".into() }
            ]),
            Condition::SourceIp(vec!["10.0.0.0/8".into()]),
        ]
    );
    let regex = r#"[{"field":"host-header","hostHeaderConfig":{"regexValues":["^a.*$"]}},
        {"field":"path-pattern","pathPatternConfig":{"regexValues":["^/v[0-9]+/"]}},
        {"field":"http-header","httpHeaderConfig":{"httpHeaderName":"User-Agent","regexValues":["^curl/.*$"]}}]"#;
    assert_eq!(
        parse_conditions(regex).unwrap(),
        vec![
            Condition::HostHeaderRegex(vec!["^a.*$".into()]),
            Condition::PathPatternRegex(vec!["^/v[0-9]+/".into()]),
            Condition::HttpHeaderRegex { name: "User-Agent".into(), values: vec!["^curl/.*$".into()] },
        ]
    );
    for (bad, fragment) in [
        (r#"[{"field":"cookie"}]"#, "cookie"),
        (r#"[{"field":"path-pattern","pathPatternConfig":{"values":["/a"],"regexValues":["b"]}}]"#, "both"),
        (r#"[{"field":"host-header","hostHeaderConfig":{"values":[]}}]"#, "no values"),
        (r#"[{"field":"http-header","httpHeaderConfig":{"values":["x"]}}]"#, "httpHeaderName"),
        (
            r#"[{"field":"http-header","httpHeaderConfig":{"httpHeaderName":"X-A","values":["a"],"regexValues":["^b$"]}}]"#,
            "http-header X-A has both values and regexValues",
        ),
        (r#"[{"field":"http-header","httpHeaderConfig":{"httpHeaderName":"X-A","regexValues":[]}}]"#, "no values"),
        (r#"{"field":"host-header"}"#, "sequence"),
    ] {
        let err = parse_conditions(bad).expect_err(bad);
        assert!(err.contains(fragment), "{bad}: {err}");
    }
}

#[test]
fn listen_ports_and_idps() {
    assert_eq!(
        parse_listen_ports(r#"[{"HTTP":80},{"HTTPS":443}]"#),
        Ok(vec![(Protocol::Http, 80), (Protocol::Https, 443)])
    );
    assert_eq!(parse_listen_ports(r#"[{"HTTP": 8080, "HTTPS": 8443}]"#).unwrap().len(), 2);
    for (bad, fragment) in [
        (r#"[{"HTTP":80},{"HTTPS":80}]"#, "twice"),
        (r#"[{"TCP":80}]"#, "TCP"),
        (r#"[{"HTTP":0}]"#, "port 0"),
        (r#"[{"HTTP":70000}]"#, "70000"),
        ("[]", "no ports"),
        (r#"[{"HTTP":"80"}]"#, "JSON"),
    ] {
        let err = parse_listen_ports(bad).expect_err(bad);
        assert!(err.contains(fragment), "{bad}: {err}");
    }
    let oidc = parse_oidc(
        r#"{"issuer":"https://idp","authorizationEndpoint":"https://idp/a","tokenEndpoint":"https://idp/t","userInfoEndpoint":"https://idp/u","secretName":"oidc","authenticationRequestExtraParams":{"prompt":"login"}}"#,
    )
    .unwrap();
    assert_eq!(oidc.secret_name, "oidc");
    assert_eq!(oidc.extra_params["prompt"], "login");
    assert!(parse_oidc(r#"{"issuer":"https://idp"}"#).unwrap_err().contains("secretName"));
    let c = parse_cognito(r#"{"userPoolARN":"arn:pool","userPoolClientID":"id","userPoolDomain":"dom"}"#).unwrap();
    assert_eq!(c.user_pool_domain, "dom");
    assert!(parse_cognito("{}").is_err());
}
