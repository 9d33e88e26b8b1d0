use super::*;
use crate::gateway::matches::PathMatch;
use crate::lb::{Action, Condition};

fn prefix(p: &str) -> HttpMatch {
    HttpMatch { path: Some(PathMatch::PathPrefix(p.into())), ..Default::default() }
}

fn exact(p: &str) -> HttpMatch {
    HttpMatch { path: Some(PathMatch::Exact(p.into())), ..Default::default() }
}

fn forward(tg: &str, matches: Vec<HttpMatch>) -> RouteRuleIn {
    RouteRuleIn { matches, redirect: None, rewrite: None, target_groups: vec![(tg.into(), 1)] }
}

fn route(name: &str, created: i64, ports: &[(u16, &[&str])], rules: Vec<RouteRuleIn>) -> RouteIn {
    RouteIn {
        namespace: "app".into(),
        name: name.into(),
        created,
        hostnames_by_port: ports.iter().map(|(p, h)| (*p, h.iter().map(|s| s.to_string()).collect())).collect(),
        rules,
    }
}

/// Each rule as (priority, host, path values, target group or fixed status).
fn summary(rules: &[Rule]) -> Vec<(u32, String, String, String)> {
    rules
        .iter()
        .map(|r| {
            let host = r.conditions.iter().find_map(|c| match c {
                Condition::HostHeader(v) => Some(v.join(",")),
                _ => None,
            });
            let path = r.conditions.iter().find_map(|c| match c {
                Condition::PathPattern(v) => Some(v.join(",")),
                _ => None,
            });
            let action = match &r.actions[0] {
                Action::Forward { target_groups, .. } => format!("{:?}", target_groups[0].target_group),
                Action::FixedResponse { status_code, .. } => status_code.clone(),
                Action::Redirect { status_code, .. } => status_code.clone(),
                other => format!("{other:?}"),
            };
            (r.priority, host.unwrap_or_default(), path.unwrap_or_default(), action)
        })
        .collect()
}

/// Two routes on one port: hostname first (exact, then wildcard, then none), then exact paths,
/// then longer prefixes; priorities 1.. with no gap.
#[test]
fn rules_of_every_route_on_a_port_in_precedence_order() {
    let a = route("a", 10, &[(80, &["*.example.com"])], vec![forward("tg-a", vec![prefix("/"), exact("/login")])]);
    let b = route("b", 20, &[(80, &["shop.example.com"])], vec![forward("tg-b", vec![prefix("/cart")])]);
    let c = route("c", 5, &[(80, &[])], vec![forward("tg-c", vec![prefix("/")])]);
    let got = build(&[a, b, c]);
    assert!(got.refused.is_empty());
    let name = |n: &str| format!("{:?}", crate::lb::TargetGroupRef::Name(n.into()));
    assert_eq!(
        summary(&got.by_port[&80]),
        vec![
            (1, "shop.example.com".into(), "/cart,/cart/*".into(), name("tg-b")),
            (2, "*.example.com".into(), "/login".into(), name("tg-a")),
            (3, "*.example.com".into(), "/*".into(), name("tg-a")),
            (4, "".into(), "/*".into(), name("tg-c")),
        ]
    );
}

#[test]
fn a_route_on_two_ports_and_two_hostnames_gets_a_rule_for_each() {
    let r = route("r", 1, &[(80, &["a.io", "b.io"]), (8080, &[])], vec![forward("tg", vec![prefix("/x")])]);
    let got = build(&[r]);
    let hosts: Vec<String> = summary(&got.by_port[&80]).into_iter().map(|s| s.1).collect();
    assert_eq!(hosts, ["a.io", "b.io"]);
    assert_eq!(got.by_port[&8080].len(), 1);
}

#[test]
fn a_rule_without_backends_answers_500_and_one_without_matches_takes_every_request() {
    let r = route(
        "r",
        1,
        &[(80, &[])],
        vec![
            RouteRuleIn { matches: vec![], redirect: None, rewrite: None, target_groups: vec![] },
            forward("tg", vec![exact("/a")]),
        ],
    );
    let got = build(&[r]);
    let s = summary(&got.by_port[&80]);
    assert_eq!(s[0].3, format!("{:?}", crate::lb::TargetGroupRef::Name("tg".into())), "the exact match first");
    assert_eq!((s[1].2.as_str(), s[1].3.as_str()), ("", "500"), "no condition, fixed 500");
}

/// A route with a rule an ALB cannot express is refused whole, with the reason; the others keep
/// their rules, numbered without a gap.
#[test]
fn a_route_with_an_impossible_rule_is_refused_whole() {
    let bad_redirect = RouteRuleIn {
        matches: vec![prefix("/old")],
        redirect: Some(RedirectFilter { status_code: Some(307), ..Default::default() }),
        rewrite: None,
        target_groups: vec![],
    };
    let bad = route("bad", 1, &[(80, &[])], vec![forward("tg-bad", vec![exact("/keep")]), bad_redirect]);
    let regex_query = HttpMatch {
        query_params: vec![crate::gateway::matches::ValueMatch { name: "q".into(), regex: true, value: ".*".into() }],
        ..Default::default()
    };
    let bad_query = route("query", 2, &[(80, &[])], vec![forward("tg-q", vec![regex_query])]);
    let good = route("good", 3, &[(80, &[])], vec![forward("tg-good", vec![prefix("/")])]);
    let got = build(&[bad, bad_query, good]);
    assert_eq!(got.refused.len(), 2);
    assert!(got.refused["app/bad"].contains("rule 1") && got.refused["app/bad"].contains("301 or 302"));
    assert!(got.refused["app/query"].contains("rule 0 match 0"), "{}", got.refused["app/query"]);
    assert_eq!(summary(&got.by_port[&80]).into_iter().map(|s| s.0).collect::<Vec<_>>(), [1]);
}

#[test]
fn redirects_become_redirect_rules() {
    let r = RouteRuleIn {
        matches: vec![prefix("/")],
        redirect: Some(RedirectFilter {
            hostname: Some("example.org".into()),
            status_code: Some(301),
            ..Default::default()
        }),
        rewrite: None,
        target_groups: vec![],
    };
    let got = build(&[route("r", 1, &[(80, &[])], vec![r])]);
    assert_eq!(summary(&got.by_port[&80])[0].3, "HTTP_301");
}

#[test]
fn a_url_rewrite_becomes_the_transforms_of_every_rule_of_its_matches() {
    use crate::gateway::rewrite::RewriteFilter;
    use crate::lb::TransformKind;
    let r = RouteRuleIn {
        rewrite: Some(RewriteFilter { prefix_path: Some("/new".into()), ..Default::default() }),
        ..forward("tg", vec![prefix("/a"), prefix("/b")])
    };
    let got = build(&[route("r", 1, &[(80, &["x.example.com", "y.example.com"])], vec![r])]);
    let rules = &got.by_port[&80];
    assert_eq!(rules.len(), 4, "two matches on two hostnames");
    for rule in rules {
        assert_eq!(rule.transforms.len(), 1);
        assert_eq!(rule.transforms[0].kind, TransformKind::UrlRewrite);
        assert_eq!(rule.transforms[0].rewrites[0].replace, "/new$2");
    }
    let regexes: std::collections::BTreeSet<&str> =
        rules.iter().map(|r| r.transforms[0].rewrites[0].regex.as_str()).collect();
    assert_eq!(regexes, ["(^/a(/)?)", "(^/b(/)?)"].into_iter().collect());
    // ReplacePrefixMatch on an Exact match cannot be built: the route is refused whole.
    let bad = RouteRuleIn {
        rewrite: Some(RewriteFilter { prefix_path: Some("/new".into()), ..Default::default() }),
        ..forward("tg", vec![exact("/a")])
    };
    let got = build(&[route("bad", 1, &[(80, &[])], vec![bad])]);
    assert!(got.refused["app/bad"].contains("needs a PathPrefix match"), "{:?}", got.refused);
}
