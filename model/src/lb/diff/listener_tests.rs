//! Listener certificates and listener rules: table-driven plans checked against the simulator
//! (which refuses a priority in use, a target group deleted while a rule forwards to it, …).

use super::testkit::*;
use super::*;
use crate::lb::{AuthenticateOidc, Condition, QueryStringPair, Rule, Stack};

const L80: &str = "arn:listener-5";
/// In stacks without rules (with rules, listener 80's rules take the IDs before it).
const L443: &str = "arn:listener-6";

fn summaries(steps: &[Step]) -> Vec<String> {
    steps.iter().map(Step::summary).collect()
}

/// Plans, applies the plan in the simulator and checks a second plan is empty.
fn converge(desired: &Stack, observed: &ObservedStack) -> Vec<Step> {
    let steps = plan(desired, observed, &PlanOptions::default()).expect("plan");
    let mut sim = Sim::new(observed.clone());
    sim.apply_all(&steps);
    let again = plan(desired, &sim.state, &PlanOptions::default()).expect("re-plan");
    assert!(again.is_empty(), "not converged after {:?}:\n{:#?}", summaries(&steps), again);
    steps
}

fn tls(s: &mut Stack, certs: &[&str]) {
    let l = &mut s.listeners[1];
    l.protocol = Protocol::Tls;
    l.certificates = certs.iter().map(|c| c.to_string()).collect();
}

#[test]
fn certificates() {
    type Certs = (&'static str, &'static [&'static str], &'static [&'static str], Vec<&'static str>);
    let cases: Vec<Certs> = vec![
        ("same", &["a", "b", "c"], &["a", "c", "b"], vec![]),
        // Two group members naming one certificate: the default is served already, never re-added.
        ("default listed again", &["a", "b"], &["a", "b", "a"], vec![]),
        ("add", &["a"], &["a", "b", "c"], vec!["add 2 certificate(s) to listener 443"]),
        ("remove", &["a", "b", "c"], &["a"], vec!["remove 2 certificate(s) from listener 443"]),
        (
            "replace one",
            &["a", "b"],
            &["a", "c"],
            vec!["add 1 certificate(s) to listener 443", "remove 1 certificate(s) from listener 443"],
        ),
        // The new default leaves the extra set; the old default (never an extra) joins it.
        ("default swap", &["a", "b"], &["b", "a"], vec!["modify listener 443", "add 1 certificate(s) to listener 443"]),
    ];
    for (name, have, want, expected) in cases {
        let mut observed_stack = stack();
        tls(&mut observed_stack, have);
        let observed = materialize(&observed_stack);
        let mut desired = stack();
        tls(&mut desired, want);
        let steps = converge(&desired, &observed);
        assert_eq!(summaries(&steps), expected, "{name}");
        if name == "default swap" {
            let Step::ModifyListener { change, .. } = &steps[0] else { panic!() };
            assert_eq!(change.default_certificate.as_deref(), Some("b"));
            assert_eq!(
                steps[1],
                Step::AddListenerCertificates { arn: L443.into(), port: 443, certificates: vec!["a".into()] }
            );
        }
    }
}

#[test]
fn new_tls_listener_carries_all_certificates_in_its_create_step() {
    let mut desired = stack();
    tls(&mut desired, &["a", "b"]);
    let steps = converge(&desired, &ObservedStack::default());
    let created: Vec<_> = steps
        .iter()
        .filter_map(|s| if let Step::CreateListener { listener } = s { Some(listener) } else { None })
        .collect();
    assert_eq!(created[1].certificates, ["a", "b"]);
    assert!(!steps.iter().any(|s| matches!(s, Step::AddListenerCertificates { .. })));
}

#[test]
fn certificates_on_a_non_tls_listener_are_ignored() {
    let observed = materialize(&stack());
    let mut desired = stack();
    desired.listeners[1].certificates = vec!["a".into(), "b".into()]; // still TCP
    assert_eq!(plan(&desired, &observed, &PlanOptions::default()).unwrap(), vec![]);
}

fn rule(priority: u32, path: &str, tg: &str) -> Rule {
    Rule {
        priority,
        conditions: vec![Condition::PathPattern(vec![path.into()])],
        actions: forward(tg),
        transforms: vec![],
        tags: tags(&[("ingress.k8s.aws/stack", "ns/ing")]),
    }
}

/// Listener 80 with rules /a@1 /b@2 /c@3 forwarding to the 443 group.
fn with_rules(rules: &[(u32, &str)]) -> Stack {
    let mut s = stack();
    s.listeners[0].rules = rules.iter().map(|(p, path)| rule(*p, path, "k8s-ns-svc-443")).collect();
    s
}

fn abc() -> ObservedStack {
    materialize(&with_rules(&[(1, "/a"), (2, "/b"), (3, "/c")]))
}

fn rule_arn(o: &ObservedStack, path: &str) -> String {
    let want = Condition::PathPattern(vec![path.into()]);
    o.rules[L80].iter().find(|r| r.spec.conditions == [want.clone()]).unwrap().id.clone()
}

#[test]
fn rule_cases() {
    type RuleCase = (&'static str, Vec<(u32, &'static str)>, Vec<&'static str>);
    let cases: Vec<RuleCase> = vec![
        ("identical", vec![(1, "/a"), (2, "/b"), (3, "/c")], vec![]),
        ("create", vec![(1, "/a"), (2, "/b"), (3, "/c"), (4, "/d")], vec!["create rule 4 on listener 80"]),
        ("modify in place", vec![(1, "/a"), (2, "/B"), (3, "/c")], vec!["modify rule 2 on listener 80"]),
        ("delete", vec![(1, "/a"), (3, "/c")], vec!["delete rule arn:rule-7 of listener 80"]),
        (
            "move to free priorities",
            vec![(10, "/a"), (20, "/b"), (30, "/c")],
            vec!["move 3 rule(s) of listener 80 to priorities 10, 20, 30"],
        ),
        // /c jumps to the front: every target is held by another moving rule → park, then move.
        (
            "rotate",
            vec![(1, "/c"), (2, "/a"), (3, "/b")],
            vec![
                "move 3 rule(s) of listener 80 to priorities 50000, 49999, 49998",
                "move 3 rule(s) of listener 80 to priorities 1, 2, 3",
            ],
        ),
        (
            "swap two",
            vec![(1, "/b"), (2, "/a"), (3, "/c")],
            vec![
                "move 2 rule(s) of listener 80 to priorities 50000, 49999",
                "move 2 rule(s) of listener 80 to priorities 1, 2",
            ],
        ),
        // The new rule takes a priority a kept rule leaves: moves come before creates, the last
        // rule moves first so each target is free.
        (
            "insert in front",
            vec![(1, "/new"), (2, "/a"), (3, "/b"), (4, "/c")],
            vec!["move 3 rule(s) of listener 80 to priorities 4, 3, 2", "create rule 1 on listener 80"],
        ),
        (
            "delete first, the rest move up",
            vec![(1, "/b"), (2, "/c")],
            vec!["delete rule arn:rule-6 of listener 80", "move 2 rule(s) of listener 80 to priorities 1, 2"],
        ),
        (
            "all gone",
            vec![],
            vec![
                "delete rule arn:rule-6 of listener 80",
                "delete rule arn:rule-7 of listener 80",
                "delete rule arn:rule-8 of listener 80",
            ],
        ),
    ];
    for (name, want, expected) in cases {
        let steps = converge(&with_rules(&want), &abc());
        assert_eq!(summaries(&steps), expected, "{name}");
    }
}

#[test]
fn reorder_moves_the_same_rules() {
    let observed = abc();
    let steps = converge(&with_rules(&[(1, "/b"), (2, "/a"), (3, "/c")]), &observed);
    let Step::SetRulePriorities { priorities, .. } = &steps[1] else { panic!("{steps:?}") };
    assert_eq!(priorities, &vec![(rule_arn(&observed, "/b"), 1), (rule_arn(&observed, "/a"), 2)]);
}

#[test]
fn value_order_and_target_group_spelling_are_not_changes() {
    let mut desired = with_rules(&[(1, "/a")]);
    desired.listeners[0].rules[0].conditions =
        vec![Condition::PathPattern(vec!["/x".into(), "/a".into()]), Condition::HostHeader(vec!["A.example".into()])];
    let mut observed = materialize(&desired);
    let r = &mut observed.rules.get_mut(L80).unwrap()[0].spec;
    r.conditions =
        vec![Condition::HostHeader(vec!["a.example".into()]), Condition::PathPattern(vec!["/a".into(), "/x".into()])];
    assert_eq!(plan(&desired, &observed, &PlanOptions::default()).unwrap(), vec![]);
}

#[test]
fn rule_tags_and_untagged_rules() {
    let mut observed = abc();
    let rules = observed.rules.get_mut(L80).unwrap();
    rules[0].spec.tags.clear(); // /a lost its tags: adopted again
    rules.push(Observed {
        id: "arn:rule-99".into(),
        spec: Rule { tags: Tags::new(), ..rule(7, "/manual", "k8s-ns-svc-80") },
    });
    let steps = converge(&with_rules(&[(1, "/a"), (2, "/b"), (3, "/c")]), &observed);
    assert_eq!(
        summaries(&steps),
        ["delete rule arn:rule-99 of listener 80", "tag listener rule arn:rule-6 with ingress.k8s.aws/stack"]
    );
}

#[test]
fn rules_of_listeners_we_do_not_manage_are_untouched() {
    let mut observed = abc();
    observed.rules.insert(
        "arn:listener-someone-else".into(),
        vec![Observed { id: "arn:rule-x".into(), spec: rule(1, "/z", "k8s-ns-svc-80") }],
    );
    assert_eq!(
        plan(&with_rules(&[(1, "/a"), (2, "/b"), (3, "/c")]), &observed, &PlanOptions::default()).unwrap(),
        vec![]
    );
}

#[test]
fn unread_rules_plan_nothing_or_refuse() {
    let mut observed = abc();
    observed.rules.clear();
    // The Service path: rules not read, none wanted.
    assert_eq!(plan(&stack(), &observed, &PlanOptions::default()).unwrap(), vec![]);
    let err = plan(&with_rules(&[(1, "/a")]), &observed, &PlanOptions::default()).unwrap_err();
    assert_eq!(err, PlanError::RulesNotObserved { port: 80, arn: L80.into(), count: 1 });
    assert!(err.to_string().contains("read the listener's rules"), "{err}");
}

#[test]
fn bad_priorities_are_refused() {
    for (rules, problem) in
        [(vec![(1, "/a"), (1, "/b")], "two rules with priority 1"), (vec![(0, "/a")], "a rule with priority 0")]
    {
        let err = plan(&with_rules(&rules), &ObservedStack::default(), &PlanOptions::default()).unwrap_err();
        assert_eq!(err, PlanError::BadRulePriority { port: 80, problem: problem.into() });
        assert!(err.to_string().contains("1..=50000"), "{err}");
    }
}

#[test]
fn rules_follow_target_groups_in_and_out() {
    // Fresh: target groups → load balancer → listener → its rules.
    let steps = converge(&with_rules(&[(2, "/b"), (1, "/a")]), &ObservedStack::default());
    let s = summaries(&steps);
    let pos = |x: &str| s.iter().position(|y| y == x).unwrap();
    assert!(pos("create target group k8s-ns-svc-443") < pos("create rule 1 on listener 80"));
    assert!(pos("create listener 80") < pos("create rule 1 on listener 80"));
    assert!(pos("create rule 1 on listener 80") < pos("create rule 2 on listener 80"));
    // A rule to a new group, and the old group goes once no rule uses it.
    let mut desired = with_rules(&[(1, "/a"), (2, "/b"), (3, "/c")]);
    desired.target_groups[1] = tg("k8s-ns-svc-443-v2", 9443);
    desired.listeners[1].default_actions = forward("k8s-ns-svc-443-v2");
    for r in &mut desired.listeners[0].rules {
        r.actions = forward("k8s-ns-svc-443-v2");
    }
    let s = summaries(&converge(&desired, &abc()));
    let pos = |x: &str| s.iter().position(|y| y == x).unwrap();
    assert!(pos("create target group k8s-ns-svc-443-v2") < pos("modify rule 1 on listener 80"), "{s:?}");
    assert!(pos("modify rule 3 on listener 80") < pos("delete target group k8s-ns-svc-443"), "{s:?}");
}

fn oidc(client_id: &str) -> Action {
    Action::AuthenticateOidc(AuthenticateOidc {
        issuer: "https://idp.example".into(),
        authorization_endpoint: "https://idp.example/auth".into(),
        token_endpoint: "https://idp.example/token".into(),
        user_info_endpoint: "https://idp.example/userinfo".into(),
        client_id: client_id.into(),
        client_secret: Some("s3cret".into()),
        client_secret_digest: Some(crate::ingress::oidc::credentials_digest("uid", client_id, "s3cret")),
        scope: Some("openid".into()),
        session_cookie_name: None,
        session_timeout_seconds: Some(3600),
        on_unauthenticated_request: Some("authenticate".into()),
        extra_params: [("prompt".to_string(), "login".to_string())].into(),
    })
}

#[test]
fn oidc_client_secret_does_not_cause_churn() {
    let mut desired = with_rules(&[(1, "/a")]);
    desired.listeners[0].rules[0].actions.insert(0, oidc("app"));
    desired.listeners[0].rules[0]
        .conditions
        .push(Condition::QueryString(vec![QueryStringPair { key: None, value: "x".into() }]));
    let observed = materialize(&desired);
    let reported = &observed.rules[L80][0].spec.actions[0];
    assert!(
        matches!(reported, Action::AuthenticateOidc(o) if o.client_secret.is_none()),
        "the simulator drops the secret like AWS"
    );
    assert_eq!(plan(&desired, &observed, &PlanOptions::default()).unwrap(), vec![]);
    // A real change modifies the rule and sends the secret again.
    desired.listeners[0].rules[0].actions[0] = oidc("app2");
    let steps = converge(&desired, &observed);
    let [Step::ModifyRule { rule, .. }] = steps.as_slice() else { panic!("{steps:?}") };
    assert!(matches!(&rule.actions[0], Action::AuthenticateOidc(o) if o.client_secret.as_deref() == Some("s3cret")));
}

#[test]
fn listener_443_rules_are_independent() {
    let mut desired = with_rules(&[(1, "/a")]);
    desired.listeners[1].rules = vec![rule(1, "/a", "k8s-ns-svc-80")];
    let observed = materialize(&desired);
    assert_eq!(observed.rules[&observed.listeners[1].id].len(), 1);
    assert_eq!(plan(&desired, &observed, &PlanOptions::default()).unwrap(), vec![]);
}

fn with_secret(r: &mut Rule, idx: usize, secret: &str) {
    if let Action::AuthenticateOidc(o) = &mut r.actions[idx] {
        o.client_secret = Some(secret.into());
        o.client_secret_digest = Some(crate::ingress::oidc::credentials_digest("uid", &o.client_id, secret));
    }
    let digest = crate::lb::oidc_secret_digest(&r.actions).expect("an OIDC action with a secret");
    r.tags.insert(crate::lb::OIDC_SECRET_DIGEST_TAG.into(), digest);
}

#[test]
fn a_rotated_oidc_secret_modifies_exactly_the_rules_using_it() {
    let mut desired = with_rules(&[(1, "/a"), (2, "/b"), (3, "/c")]);
    for i in [0, 2] {
        desired.listeners[0].rules[i].actions.insert(0, oidc("app"));
        with_secret(&mut desired.listeners[0].rules[i], 0, "s3cret");
    }
    let observed = materialize(&desired);
    assert_eq!(plan(&desired, &observed, &PlanOptions::default()).unwrap(), vec![], "unchanged secret: no write");
    for i in [0, 2] {
        with_secret(&mut desired.listeners[0].rules[i], 0, "r0tated");
    }
    let steps = converge(&desired, &observed);
    let modified: Vec<u32> = steps
        .iter()
        .filter_map(|s| match s {
            Step::ModifyRule { rule, .. } => Some(rule.priority),
            _ => None,
        })
        .collect();
    assert_eq!(modified, [1, 3], "{:?}", summaries(&steps));
    for s in &steps {
        if let Step::ModifyRule { rule, .. } = s {
            assert!(
                matches!(&rule.actions[0], Action::AuthenticateOidc(o) if o.client_secret.as_deref() == Some("r0tated")),
                "the new secret is sent"
            );
        }
    }
    let s = summaries(&steps);
    assert_eq!(s.iter().filter(|x| x.starts_with("tag listener rule")).count(), 2, "digest tags follow: {s:?}");
    assert_eq!(s.len(), 4, "{s:?}");
    // Rules adopted without the digest (created by ALBC): rewritten once, then quiet.
    let mut adopted = observed.clone();
    for r in adopted.rules.get_mut(L80).unwrap() {
        r.spec.tags.remove(crate::lb::OIDC_SECRET_DIGEST_TAG);
    }
    assert_eq!(converge(&desired, &adopted).iter().filter(|s| matches!(s, Step::ModifyRule { .. })).count(), 2);
}

#[test]
fn a_default_action_with_oidc_is_not_rewritten_until_its_secret_changes() {
    let mut desired = with_rules(&[]);
    let l = &mut desired.listeners[1];
    l.default_actions.insert(0, oidc("app"));
    l.tags.insert(crate::lb::OIDC_SECRET_DIGEST_TAG.into(), crate::lb::oidc_secret_digest(&l.default_actions).unwrap());
    let observed = materialize(&desired);
    assert_eq!(plan(&desired, &observed, &PlanOptions::default()).unwrap(), vec![]);
    let l = &mut desired.listeners[1];
    if let Action::AuthenticateOidc(o) = &mut l.default_actions[0] {
        o.client_secret = Some("r0tated".into());
        o.client_secret_digest = Some(crate::ingress::oidc::credentials_digest("uid", &o.client_id, "r0tated"));
    }
    l.tags.insert(crate::lb::OIDC_SECRET_DIGEST_TAG.into(), crate::lb::oidc_secret_digest(&l.default_actions).unwrap());
    let s = summaries(&converge(&desired, &observed));
    assert_eq!(s.len(), 2, "{s:?}");
    assert!(s[0].starts_with("modify listener 443") && s[1].starts_with("tag listener "), "{s:?}");
}

#[test]
fn regex_conditions_round_trip_and_only_real_changes_modify() {
    let regex_rule = || {
        let mut d = with_rules(&[(1, "/a"), (2, "/b")]);
        d.listeners[0].rules[0].conditions = vec![
            Condition::HostHeaderRegex(vec!["^Shop\\.example$".into()]),
            Condition::PathPatternRegex(vec!["^/v[0-9]+$".into(), "^/api$".into()]),
        ];
        d
    };
    let observed = materialize(&regex_rule());
    type Case = (&'static str, fn(&mut Vec<Condition>), Vec<&'static str>);
    let cases: Vec<Case> = vec![
        ("same", |_| {}, vec![]),
        (
            "conditions and values reordered",
            |c| {
                c.reverse();
                if let Condition::PathPatternRegex(v) = &mut c[0] {
                    v.reverse();
                }
            },
            vec![],
        ),
        (
            "a regex value changes",
            |c| c[1] = Condition::PathPatternRegex(vec!["^/v[0-9]+$".into(), "^/api/.*$".into()]),
            vec!["modify rule 1 on listener 80"],
        ),
        (
            // A regex is case-sensitive text; host names are not, but regexes are not lower-cased.
            "regex host case changes",
            |c| c[0] = Condition::HostHeaderRegex(vec!["^shop\\.example$".into()]),
            vec!["modify rule 1 on listener 80"],
        ),
        (
            "the same text as a wildcard value",
            |c| c[1] = Condition::PathPattern(vec!["^/v[0-9]+$".into(), "^/api$".into()]),
            vec!["modify rule 1 on listener 80"],
        ),
    ];
    for (name, change, want) in cases {
        let mut desired = regex_rule();
        change(&mut desired.listeners[0].rules[0].conditions);
        assert_eq!(summaries(&converge(&desired, &observed)), want, "{name}");
    }
}

#[test]
fn transforms_are_part_of_a_rule_and_their_order_is_not_a_change() {
    use crate::lb::{Rewrite, Transform, TransformKind};
    let t = |kind, regex: &str, replace: &str| Transform {
        kind,
        rewrites: vec![Rewrite { regex: regex.into(), replace: replace.into() }],
    };
    let with = |ts: Vec<Transform>| {
        let mut d = with_rules(&[(1, "/a"), (2, "/b")]);
        d.listeners[0].rules[0].transforms = ts;
        d
    };
    let both = || {
        vec![
            t(TransformKind::UrlRewrite, "^/a/(.*)$", "/$1"),
            t(TransformKind::HostHeaderRewrite, "^a\\.example$", "b.example"),
        ]
    };
    let observed = materialize(&with(both()));
    let mut reversed = both();
    reversed.reverse();
    let cases: Vec<(&str, Vec<Transform>, Vec<&str>)> = vec![
        ("same", both(), vec![]),
        ("kinds in the other order", reversed, vec![]),
        (
            "a replacement changes",
            vec![both()[0].clone(), t(TransformKind::HostHeaderRewrite, "^a\\.example$", "c.example")],
            vec!["modify rule 1 on listener 80"],
        ),
        ("one removed", vec![both()[0].clone()], vec!["modify rule 1 on listener 80"]),
        ("all removed", vec![], vec!["modify rule 1 on listener 80"]),
    ];
    for (name, ts, want) in cases {
        assert_eq!(summaries(&converge(&with(ts), &observed)), want, "{name}");
    }
}
