use super::*;
use crate::ingress::actions::{BackendRef, ForwardTarget, ServicePort, WeightedTarget};
use crate::ingress::backends::{ACTION_MISSING, SERVICE_MISSING};
use crate::ingress::merge::MergeConfig;
use crate::ingress::plan::{GroupPlan, plan_group};
use crate::ingress::test_fixtures::{P, member, path, rule, services, spec, with_default};

fn svcs() -> Services {
    services(&[
        ("shop/web", &[("http", 80)]),
        ("shop/api", &[("grpc", 9000), ("", 8080)]),
        ("blog/site", &[("http", 80)]),
        ("ops/status", &[("http", 80)]),
    ])
}

fn plan(members: &[Member]) -> GroupPlan {
    plan_group(members, &svcs(), &MergeConfig::default()).unwrap_or_else(|e| panic!("{e:?}"))
}

fn errors(members: &[Member]) -> String {
    let e = plan_group(members, &svcs(), &MergeConfig::default()).expect_err("errors");
    e.iter().map(ToString::to_string).collect::<Vec<_>>().join(" | ")
}

fn fwd(ns: &str, svc: &str, port: ServicePort) -> RuleAction {
    let target = ForwardTarget::Service(BackendRef { namespace: ns.into(), service: svc.into(), port });
    RuleAction::Forward { target_groups: vec![WeightedTarget { target, weight: None }], stickiness_seconds: None }
}

fn pp(v: &[&str]) -> Condition {
    Condition::PathPattern(v.iter().map(|s| s.to_string()).collect())
}

fn host(v: &[&str]) -> Condition {
    Condition::HostHeader(v.iter().map(|s| s.to_string()).collect())
}

/// (priority, ingress, conditions) of the rules of the listener on `port`.
fn summary(p: &GroupPlan, port: u16) -> Vec<(u32, String, Vec<Condition>)> {
    let l = p.rules.iter().find(|l| l.port == port).expect("listener");
    l.rules.iter().map(|r| (r.priority, r.ingress.to_string(), r.conditions.clone())).collect()
}

/// (glob values, regex values), or a fragment of the error.
type Patterns<'a> = Result<(&'a [&'a str], &'a [&'a str]), &'a str>;

#[test]
fn path_patterns_table() {
    let cases: &[(&str, &str, bool, Patterns)] = &[
        ("/", "Prefix", false, Ok((&["/*"], &[]))),
        ("/foo", "Prefix", false, Ok((&["/foo", "/foo/*"], &[]))),
        ("/foo/", "Prefix", false, Ok((&["/foo", "/foo/*"], &[]))),
        ("/foo", "Exact", false, Ok((&["/foo"], &[]))),
        ("/foo/", "Exact", false, Ok((&["/foo/"], &[]))),
        ("/img/*.png", "ImplementationSpecific", false, Ok((&["/img/*.png"], &[]))),
        ("/api/v[0-9]+", "ImplementationSpecific", true, Ok((&[], &["api/v[0-9]+"]))),
        ("/foo", "Prefix", true, Ok((&["/foo", "/foo/*"], &[]))),
        ("/foo*", "Prefix", false, Err("wildcard")),
        ("/fo?", "Exact", false, Err("wildcard")),
        ("/x", "Glob", false, Err("Glob")),
    ];
    for (p, t, re, want) in cases {
        let got = path_patterns(p, t, *re);
        match want {
            Ok((g, r)) => assert_eq!(
                got,
                Ok((g.iter().map(|s| s.to_string()).collect(), r.iter().map(|s| s.to_string()).collect())),
                "{p} {t}"
            ),
            Err(frag) => assert!(got.as_ref().unwrap_err().contains(frag), "{p} {t}: {got:?}"),
        }
    }
}

#[test]
fn paths_sort_exact_then_longest_prefix_then_as_written() {
    let ps = vec![
        path("/b", "ImplementationSpecific", "web", P::N(80)),
        path("/a", "Prefix", "web", P::N(80)),
        path("/exact", "Exact", "web", P::N(80)),
        path("/longer", "Prefix", "web", P::N(80)),
        path("/a2", "ImplementationSpecific", "web", P::N(80)),
        path("/bb", "Prefix", "web", P::N(80)),
        path("/cc", "Prefix", "web", P::N(80)),
    ];
    let got: Vec<&str> = sort_paths(&ps).iter().map(|p| p.path.as_deref().unwrap()).collect();
    assert_eq!(got, ["/exact", "/longer", "/bb", "/cc", "/a", "/b", "/a2"]);
}

#[test]
fn conditions_table() {
    let hdr = Condition::HttpHeader { name: "X".into(), values: vec!["1".into()] };
    let cases: Vec<(&str, &str, Vec<Condition>, Vec<Condition>)> = vec![
        ("", "", vec![], vec![pp(&["/*"])]),
        ("a.com", "", vec![], vec![host(&["a.com"])]),
        ("a.com", "/x", vec![], vec![host(&["a.com"]), pp(&["/x", "/x/*"])]),
        (
            "a.com",
            "/x",
            vec![host(&["b.com"]), hdr.clone(), pp(&["/y"])],
            vec![hdr.clone(), host(&["a.com", "b.com"]), pp(&["/x", "/x/*", "/y"])],
        ),
        ("", "", vec![hdr.clone()], vec![hdr.clone()]),
        (
            "",
            "",
            vec![Condition::HostHeaderRegex(vec!["^a".into()])],
            vec![Condition::HostHeaderRegex(vec!["^a".into()])],
        ),
    ];
    for (h, p, extra, want) in cases {
        assert_eq!(conditions(h, p, "Prefix", false, &extra), Ok(want), "{h} {p} {extra:?}");
    }
    let mixed = conditions("a.com", "", "Prefix", false, &[Condition::HostHeaderRegex(vec!["^a".into()])]);
    assert!(mixed.unwrap_err().contains("cannot be combined"));
    let mixed = conditions("", "/x", "ImplementationSpecific", true, &[pp(&["/y"])]);
    assert!(mixed.unwrap_err().contains("cannot be combined"));
}

#[test]
fn single_ingress_rules_and_default_404() {
    let s = spec(vec![
        rule(
            "shop.example.com",
            vec![path("/", "Prefix", "web", P::S("http")), path("/api", "Exact", "api", P::N(8080))],
        ),
        rule("", vec![path("/status", "Prefix", "web", P::N(80))]),
        k8s_openapi::api::networking::v1::IngressRule { host: Some("nohttp.example.com".into()), http: None },
    ]);
    let p = plan(&[member("shop/web", &[], s)]);
    assert_eq!(
        summary(&p, 80),
        vec![
            (1, "shop/web".into(), vec![host(&["shop.example.com"]), pp(&["/api"])]),
            (2, "shop/web".into(), vec![host(&["shop.example.com"]), pp(&["/*"])]),
            (3, "shop/web".into(), vec![pp(&["/status", "/status/*"])]),
        ]
    );
    let l = &p.rules[0];
    assert_eq!(l.default_actions, [default_404()]);
    assert_eq!(l.rules[0].actions, [fwd("shop", "api", ServicePort::Number(8080))]);
    assert_eq!(l.rules[1].actions, [fwd("shop", "web", ServicePort::Name("http".into()))]);
    let keys: Vec<String> = p.target_groups.iter().map(|t| t.key.resource_id()).collect();
    assert_eq!(keys, ["shop/web-api:8080", "shop/web-web:80", "shop/web-web:http"]);
    assert!(p.warnings.is_empty());
}

fn three() -> Vec<Member> {
    let g = |order: &'static str| vec![("group.name", "team"), ("group.order", order)];
    vec![
        member("ops/status", &g("-10"), spec(vec![rule("", vec![path("/healthz", "Exact", "status", P::N(80))])])),
        member("shop/web", &g("0"), spec(vec![rule("shop.example.com", vec![path("/", "Prefix", "web", P::N(80))])])),
        member("blog/site", &g("5"), spec(vec![rule("blog.example.com", vec![path("/", "Prefix", "site", P::N(80))])])),
    ]
}

#[test]
fn group_of_three_in_member_order() {
    let p = plan(&three());
    let got: Vec<(u32, String)> = summary(&p, 80).into_iter().map(|(n, i, _)| (n, i)).collect();
    assert_eq!(got, [(1, "ops/status".into()), (2, "shop/web".into()), (3, "blog/site".into())]);
    assert_eq!(p.target_groups.len(), 3);
    assert_eq!(p.target_groups[0].key.resource_id(), "blog/site-site:80");
}

#[test]
fn priorities_stable_and_member_leaving_removes_only_its_rules() {
    let base = plan(&three());
    assert_eq!(plan(&three()), base, "same input, same plan");
    let mut changed = three();
    changed[2].spec = spec(vec![rule(
        "blog.example.com",
        vec![path("/", "Prefix", "site", P::N(80)), path("/new", "Exact", "site", P::N(80))],
    )]);
    let after = plan(&changed);
    assert_eq!(summary(&after, 80)[..2], summary(&base, 80)[..2], "earlier members untouched");
    assert_eq!(summary(&after, 80).len(), 4);
    let mut left = three();
    left.remove(1);
    let after = plan(&left);
    let before: Vec<_> = summary(&base, 80).into_iter().filter(|r| r.1 != "shop/web").map(|r| (r.1, r.2)).collect();
    let now: Vec<_> = summary(&after, 80).into_iter().map(|r| (r.1, r.2)).collect();
    assert_eq!(now, before, "only shop/web's rules are gone, the others keep their order");
    assert!(after.target_groups.iter().all(|t| t.key.ingress.name != "web"));
}

#[test]
fn use_annotation_actions_and_conditions() {
    let ann = [
        (
            "actions.canary",
            r#"{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":"web","servicePort":80,"weight":90},{"serviceName":"api","servicePort":"grpc","weight":10}]}}"#,
        ),
        ("actions.old", r#"{"type":"redirect","redirectConfig":{"host":"new.example.com","statusCode":"HTTP_301"}}"#),
        (
            "actions.down",
            r#"{"type":"fixed-response","fixedResponseConfig":{"statusCode":"503","messageBody":"maintenance"}}"#,
        ),
        (
            "conditions.canary",
            r#"[{"field":"http-header","httpHeaderConfig":{"httpHeaderName":"X-Canary","values":["1"]}}]"#,
        ),
    ];
    let s = spec(vec![rule(
        "",
        vec![
            path("/c", "Exact", "canary", P::S("use-annotation")),
            path("/old", "Exact", "old", P::S("use-annotation")),
            path("/down", "Exact", "down", P::S("use-annotation")),
            path("/gone", "Exact", "missing", P::S("use-annotation")),
            path("/nosvc", "Exact", "nosuch", P::N(80)),
        ],
    )]);
    let p = plan(&[member("shop/web", &ann, s.clone())]);
    let rules = &p.rules[0].rules;
    assert_eq!(rules[0].conditions[0], Condition::HttpHeader { name: "X-Canary".into(), values: vec!["1".into()] });
    let RuleAction::Forward { target_groups, .. } = &rules[0].actions[0] else { panic!("{:?}", rules[0]) };
    assert_eq!(target_groups.iter().map(|t| t.weight).collect::<Vec<_>>(), [Some(90), Some(10)]);
    assert!(matches!(&rules[1].actions[0], RuleAction::Redirect { host: Some(h), .. } if h == "new.example.com"));
    assert!(matches!(&rules[2].actions[0], RuleAction::FixedResponse { status_code, .. } if status_code == "503"));
    for (i, body) in [(3, ACTION_MISSING), (4, SERVICE_MISSING)] {
        assert!(matches!(&rules[i].actions[0], RuleAction::FixedResponse { message_body: Some(b), .. } if b == body));
    }
    assert_eq!(p.warnings.len(), 2, "{:?}", p.warnings);
    assert!(p.warnings[0].contains("alb.ingress.kubernetes.io/actions.missing") && p.warnings[0].contains("/gone"));
    assert!(p.warnings[1].contains("shop/nosuch") && p.warnings[1].contains("/nosvc"));
    let keys: Vec<String> = p.target_groups.iter().map(|t| t.key.resource_id()).collect();
    assert_eq!(keys, ["shop/web-api:grpc", "shop/web-web:80"]);
    // --tolerate-non-existent-backend-action=false / -service=false: each fails the group instead.
    let members = [member("shop/web", &ann, s)];
    for (cfg, words) in [
        (MergeConfig { tolerate_missing_action: false, ..Default::default() }, "actions.missing"),
        (MergeConfig { tolerate_missing_service: false, ..Default::default() }, "Service shop/nosuch does not exist"),
    ] {
        let e = plan_group(&members, &svcs(), &cfg).expect_err("the group fails");
        let shown: Vec<String> = e.iter().map(ToString::to_string).collect();
        assert_eq!(shown.len(), 1, "{shown:?}");
        assert!(shown[0].contains(words) && shown[0].contains("--tolerate-non-existent-backend-"), "{shown:?}");
    }
}

#[test]
fn ssl_redirect_leaves_http_listeners_without_rules() {
    let ann =
        [("listen-ports", r#"[{"HTTP":80},{"HTTPS":443}]"#), ("certificate-arn", "arn:c"), ("ssl-redirect", "443")];
    let s = with_default(spec(vec![rule("", vec![path("/", "Prefix", "web", P::N(80))])]), "web", P::N(80));
    let p = plan(&[member("shop/web", &ann, s)]);
    let http = p.rules.iter().find(|l| l.port == 80).unwrap();
    assert_eq!((http.default_actions.clone(), http.rules.len()), (vec![ssl_redirect(443)], 0));
    let https = p.rules.iter().find(|l| l.port == 443).unwrap();
    assert_eq!(https.rules.len(), 1);
    assert_eq!(https.default_actions, [fwd("shop", "web", ServicePort::Number(80))]);
}

#[test]
fn authentication_on_https_only_and_service_overrides() {
    let oidc = r#"{"issuer":"https://idp","authorizationEndpoint":"https://idp/a","tokenEndpoint":"https://idp/t","userInfoEndpoint":"https://idp/u","secretName":"oidc"}"#;
    let ann = [("listen-ports", r#"[{"HTTP":80},{"HTTPS":443}]"#), ("auth-type", "oidc"), ("auth-idp-oidc", oidc)];
    let s = spec(vec![rule("", vec![path("/", "Prefix", "web", P::N(80)), path("/api", "Prefix", "api", P::N(8080))])]);
    let mut services = svcs();
    // The Service turns authentication off for its own paths.
    services.get_mut(&("shop".into(), "api".into())).unwrap().settings.auth.auth_type =
        Some(super::super::annotations::AuthType::None);
    let p = plan_group(&[member("shop/web", &ann, s.clone())], &services, &MergeConfig::default()).unwrap();
    let http = p.rules.iter().find(|l| l.port == 80).unwrap();
    assert!(http.rules.iter().all(|r| r.actions.len() == 1), "no auth on HTTP");
    let https = p.rules.iter().find(|l| l.port == 443).unwrap();
    let RuleAction::AuthenticateOidc(a) = &https.rules[1].actions[0] else { panic!("{:?}", https.rules[1]) };
    assert_eq!(
        (a.scope.as_str(), a.session_cookie.as_str(), a.session_timeout_seconds),
        ("openid", "AWSELBAuthSessionCookie", 604_800)
    );
    assert_eq!(a.on_unauthenticated_request, "authenticate");
    assert_eq!(https.rules[0].actions.len(), 1, "Service annotation auth-type none wins");
    // auth-type without its IdP fails only when an HTTPS listener needs it.
    let bare = [("auth-type", "cognito")];
    assert!(plan_group(&[member("shop/web", &bare, s.clone())], &svcs(), &MergeConfig::default()).is_ok());
    let text = errors(&[member("shop/web", &[bare[0], ("certificate-arn", "arn:c")], s)]);
    assert!(text.contains("auth-idp-cognito") && text.contains("shop/web"), "{text}");
}

#[test]
fn jwt_validation_guards_https_rules_only_and_refuses_authentication_beside_it() {
    let jwt = r#"{"jwksEndpoint":"https://idp/jwks","issuer":"https://idp",
        "additionalClaims":[{"format":"string-array","name":"groups","values":["ops"]}]}"#;
    let ann =
        [("listen-ports", r#"[{"HTTP":80},{"HTTPS":443}]"#), ("certificate-arn", "arn:c"), ("jwt-validation", jwt)];
    let s = with_default(spec(vec![rule("", vec![path("/", "Prefix", "web", P::N(80))])]), "web", P::N(80));
    let p = plan(&[member("shop/web", &ann, s.clone())]);
    let https = p.rules.iter().find(|l| l.port == 443).unwrap();
    let web = fwd("shop", "web", ServicePort::Number(80));
    let RuleAction::JwtValidation(j) = &https.rules[0].actions[0] else { panic!("{:?}", https.rules[0]) };
    assert_eq!((j.issuer.as_str(), j.additional_claims[0].name.as_str()), ("https://idp", "groups"));
    assert_eq!(https.rules[0].actions[1], web);
    assert!(matches!(https.default_actions[..], [RuleAction::JwtValidation(_), _]), "the default backend too");
    let http = p.rules.iter().find(|l| l.port == 80).unwrap();
    assert_eq!(http.rules[0].actions, std::slice::from_ref(&web), "as in ALBC: none on HTTP");
    assert_eq!(http.default_actions, [web]);
    let warned: Vec<&String> = p.warnings.iter().filter(|w| w.contains("jwt-validation")).collect();
    assert!(
        warned.len() == 1 && warned[0].contains("HTTP port 80") && warned[0].contains("ssl-redirect"),
        "{:?}",
        p.warnings
    );
    // With ssl-redirect the HTTP listener has no rules: nothing to warn about.
    let redirected = [ann[0], ann[1], ann[2], ("ssl-redirect", "443")];
    let p = plan(&[member("shop/web", &redirected, s.clone())]);
    assert!(!p.warnings.iter().any(|w| w.contains("jwt-validation")), "{:?}", p.warnings);
    // Authentication on the same rules is refused, as ALBC refuses it.
    let cognito = r#"{"userPoolARN":"arn:pool","userPoolClientID":"c","userPoolDomain":"d"}"#;
    let both = [ann[0], ann[1], ann[2], ("auth-type", "cognito"), ("auth-idp-cognito", cognito)];
    let text = errors(&[member("shop/web", &both, s)]);
    assert!(text.contains("cannot both be configured") && text.contains("shop/web"), "{text}");
}

#[test]
fn transforms_go_to_their_backends_rules_on_every_listener() {
    let url = r#"[{"type":"url-rewrite","urlRewriteConfig":{"rewrites":[{"regex":"^/api/(.*)$","replace":"/$1"}]}}]"#;
    let ann =
        [("listen-ports", r#"[{"HTTP":80},{"HTTPS":443}]"#), ("certificate-arn", "arn:c"), ("transforms.api", url)];
    let s = spec(vec![rule("", vec![path("/", "Prefix", "web", P::N(80)), path("/api", "Prefix", "api", P::N(8080))])]);
    let p = plan(&[member("shop/web", &ann, s)]);
    for l in &p.rules {
        let by_path: Vec<(Vec<Condition>, usize)> =
            l.rules.iter().map(|r| (r.conditions.clone(), r.transforms.len())).collect();
        assert_eq!(by_path, [(vec![pp(&["/api", "/api/*"])], 1), (vec![pp(&["/*"])], 0)], "port {}", l.port);
        let t = &l.rules[0].transforms[0];
        assert_eq!((t.kind, t.rewrites[0].replace.as_str()), (crate::lb::TransformKind::UrlRewrite, "/$1"));
    }
}

#[test]
fn default_backend_precedence() {
    let g = |o: &'static str| vec![("group.name", "g"), ("group.order", o)];
    let plain = || spec(vec![rule("", vec![path("/a", "Exact", "web", P::N(80))])]);
    let a = member("shop/a", &g("1"), plain());
    let b = member("shop/b", &g("2"), with_default(plain(), "api", P::N(8080)));
    let p = plan(&[a.clone(), b.clone()]);
    assert_eq!(p.rules[0].default_actions, [fwd("shop", "api", ServicePort::Number(8080))]);
    assert_eq!(p.rules[0].default_from.as_ref().map(ToString::to_string).as_deref(), Some("shop/b"));
    assert!(p.target_groups.iter().any(|t| t.key.resource_id() == "shop/b-api:8080"));
    let c = member("shop/c", &g("3"), with_default(plain(), "web", P::N(80)));
    let text = errors(&[a.clone(), b.clone(), c]);
    assert!(text.contains("port 80") && text.contains("shop/b, shop/c") && text.contains("defaultBackend"), "{text}");
    // A default backend on a member that does not listen on the port does not count there.
    let mut other = g("3");
    other.push(("listen-ports", r#"[{"HTTP":8080}]"#));
    let d = member("shop/d", &other, with_default(plain(), "web", P::N(80)));
    let p = plan(&[a, b, d]);
    assert_eq!(p.rules[0].default_from.as_ref().unwrap().name, "b");
    assert_eq!(p.rules[1].default_from.as_ref().unwrap().name, "d");
}

#[test]
fn broken_member_fails_the_group_with_every_error() {
    let g = [("group.name", "g")];
    let good = member("shop/a", &g, spec(vec![rule("", vec![path("/", "Prefix", "web", P::N(80))])]));
    let weighted = r#"{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":"web","servicePort":80},{"serviceName":"ghost","servicePort":80}]}}"#;
    let bad = member(
        "shop/b",
        &[g[0], ("actions.split", weighted)],
        spec(vec![rule(
            "x.example.com",
            vec![
                path("/p", "Exact", "web", P::N(81)),
                path("/w*", "Prefix", "web", P::N(80)),
                path("/s", "Exact", "split", P::S("use-annotation")),
                path("/t", "Special", "web", P::N(80)),
            ],
        )]),
    );
    let text = errors(&[good, bad]);
    for want in [
        r#"Ingress shop/b, host "x.example.com" path "/p": Service shop/web has no port 81; use one of its ports: http (80)"#,
        "path \"/w*\": Prefix path \"/w*\" contains a wildcard",
        "Service shop/ghost does not exist",
        "pathType \"Special\"",
    ] {
        assert!(text.contains(want), "missing {want:?} in {text}");
    }
}

#[test]
fn regex_paths_and_optimizer() {
    let p = plan(&[member(
        "shop/web",
        &[("use-regex-path-match", "true")],
        spec(vec![rule("", vec![path("/v[0-9]+/.*", "ImplementationSpecific", "web", P::N(80))])]),
    )]);
    assert_eq!(p.rules[0].rules[0].conditions, [Condition::PathPatternRegex(vec!["v[0-9]+/.*".into()])]);
    // The old actions.ssl-redirect idiom: first rule redirects everything to HTTPS:443.
    let redirect = r#"{"type":"redirect","redirectConfig":{"protocol":"HTTPS","port":"443","statusCode":"HTTP_301"}}"#;
    let ann = [
        ("listen-ports", r#"[{"HTTP":80},{"HTTPS":443}]"#),
        ("certificate-arn", "arn:c"),
        ("actions.ssl-redirect", redirect),
    ];
    let s = spec(vec![rule(
        "",
        vec![
            path("/", "Prefix", "ssl-redirect", P::S("use-annotation")),
            path("/app", "ImplementationSpecific", "web", P::N(80)),
        ],
    )]);
    let p = plan(&[member("shop/web", &ann, s)]);
    let http = summary(&p, 80);
    assert_eq!(http.len(), 1, "the redirect shadows the later rule on HTTP: {http:?}");
    let https = p.rules.iter().find(|l| l.port == 443).unwrap();
    assert_eq!(https.rules.len(), 1, "the redirect would loop on HTTPS:443 and is dropped");
    assert_eq!((https.rules[0].priority, https.rules[0].conditions.clone()), (1, vec![pp(&["/app"])]));
}

#[test]
fn target_group_settings_are_ingress_overridden_by_service() {
    let mut services = svcs();
    let web = services.get_mut(&("shop".into(), "web".into())).unwrap();
    web.settings.health_check.path = Some("/svc".into());
    let ann = [("healthcheck-path", "/ing"), ("healthcheck-interval-seconds", "30")];
    let s = spec(vec![rule("", vec![path("/", "Prefix", "web", P::N(80)), path("/api", "Prefix", "api", P::N(8080))])]);
    let p = plan_group(&[member("shop/web", &ann, s)], &services, &MergeConfig::default()).unwrap();
    let [api, web] = p.target_groups.as_slice() else { panic!("{:?}", p.target_groups) };
    assert_eq!(api.settings.health_check.path.as_deref(), Some("/ing"));
    assert_eq!(web.settings.health_check.path.as_deref(), Some("/svc"));
    assert_eq!(web.settings.health_check.interval_seconds, Some(30));
}
