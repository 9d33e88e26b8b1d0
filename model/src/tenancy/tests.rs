use super::*;
use proptest::prelude::*;

const TG_A: &str = "arn:aws:elasticloadbalancing:us-east-1:111122223333:targetgroup/tf-web/0123456789abcdef";
const TG_B: &str = "arn:aws:elasticloadbalancing:us-east-1:111122223333:targetgroup/other/fedcba9876543210";
const ROLE: &str = "arn:aws:iam::444455556666:role/lbc/team-a/registrar";

fn tenancy(mode: TenancyMode, json: &str) -> Tenancy {
    Tenancy::parse(mode, json, "test").unwrap_or_else(|e| panic!("{e}"))
}

fn policy_error(json: &str) -> String {
    Tenancy::parse(TenancyMode::Strict, json, "values").expect_err("the policy must be refused").to_string()
}

fn tags(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn modes_parse_and_unknown_modes_are_refused_with_the_choices() {
    assert_eq!("compatible".parse::<TenancyMode>(), Ok(TenancyMode::Compatible));
    assert_eq!("strict".parse::<TenancyMode>(), Ok(TenancyMode::Strict));
    let e = "Strict".parse::<TenancyMode>().unwrap_err();
    assert!(e.contains("\"Strict\"") && e.contains("\"compatible\"") && e.contains("\"strict\""), "{e}");
    assert_eq!(TenancyMode::default(), TenancyMode::Compatible);
}

#[test]
fn an_empty_file_is_an_empty_policy() {
    let t = tenancy(TenancyMode::Strict, "  \n");
    assert_eq!(t.policy(), &TenancyPolicy::default());
}

#[test]
fn bad_policies_are_refused_with_every_problem_named() {
    let cases: &[(&str, &[&str])] = &[
        (r#"{"targetGroup": []}"#, &["unknown field `targetGroup`"]),
        (
            r#"{"targetGroups": [{"namespaces": [], "arns": []}]}"#,
            &["targetGroups[0].namespaces is empty", "grants nothing"],
        ),
        (r#"{"targetGroups": [{"namespaces": ["a"], "arns": ["tf-web"]}]}"#, &["\"tf-web\" is not a target group ARN"]),
        (r#"{"targetGroups": [{"namespaces": ["A_b"], "names": ["x"]}]}"#, &["\"A_b\" is neither a namespace name"]),
        (
            r#"{"targetGroups": [{"namespaces": ["a"], "names": ["way-too-long-for-a-target-group-name"]}]}"#,
            &["is not a target group name"],
        ),
        (
            r#"{"networking": [{"namespaces": ["a"], "cidrs": ["10.0.0.0/33"], "ports": ["0", "90-80", "x"]}]}"#,
            &["\"10.0.0.0/33\" is not a CIDR", "\"0\" is not a port", "\"90-80\" is not a port", "\"x\" is not a port"],
        ),
        (
            r#"{"networking": [{"namespaces": ["a"], "securityGroups": ["sg-xyz"]}]}"#,
            &["\"sg-xyz\" is not a security group ID"],
        ),
        (r#"{"networking": [{"namespaces": ["a"]}]}"#, &["networking[0] grants nothing"]),
        (
            r#"{"assumeRoles": [{"namespaces": ["a"], "roleArns": ["arn:aws:iam::1:role/x", "arn:aws:iam::444455556666:role/"]}]}"#,
            &["\"arn:aws:iam::1:role/x\" is not a role ARN", "\"arn:aws:iam::444455556666:role/\" is not a role ARN"],
        ),
        (
            r#"{"ingressGroups": [{"group": "shared", "namespaces": ["a"], "owner": "b"}, {"group": "shared", "namespaces": ["c"]}]}"#,
            &["owner \"b\" is not among its namespaces", "group \"shared\" is listed twice"],
        ),
        ("[1]", &["invalid type"]),
    ];
    for (json, wanted) in cases {
        let e = policy_error(json);
        assert!(e.starts_with("tenancy policy values: "), "{e}");
        assert!(e.contains("tenancy.policy"), "the error names the chart value to fix: {e}");
        for w in *wanted {
            assert!(e.contains(w), "{json}: {e:?} should contain {w:?}");
        }
    }
}

#[test]
fn untagged_target_groups_are_granted_by_arn_name_or_every_tag() {
    let t = tenancy(
        TenancyMode::Strict,
        &format!(
            r#"{{"targetGroups": [
                {{"namespaces": ["team-a"], "arns": ["{TG_A}"]}},
                {{"namespaces": ["team-b"], "names": ["tf-web"]}},
                {{"namespaces": ["team-*"], "tags": {{"team": "c", "env": "prod"}}}}
            ]}}"#
        ),
    );
    let none = tags(&[]);
    let c = tags(&[("team", "c"), ("env", "prod"), ("x", "y")]);
    let c_half = tags(&[("team", "c")]);
    let rows: &[(&str, &str, &BTreeMap<String, String>, bool)] = &[
        ("team-a", TG_A, &none, true),
        ("team-a", TG_B, &none, false),
        ("team-b", TG_A, &none, true), // by name
        ("team-b", TG_B, &none, false),
        ("team-c", TG_B, &c, true), // by every tag
        ("team-c", TG_B, &c_half, false),
        ("other", TG_B, &c, false), // the tag grant is for team-* only
        ("other", TG_A, &none, false),
    ];
    for (ns, arn, tags, granted) in rows {
        let v = t.untagged_target_group(ns, "web", arn, tags);
        assert_eq!(v == Verdict::Allowed, *granted, "{ns} {arn} {tags:?}: {v:?}");
        if !granted {
            let Verdict::Refused(r) = v else { panic!("strict mode refuses: {v:?}") };
            assert_eq!(r.kind, "untagged-target-group");
            assert!(r.detail.contains(&format!("TargetGroupBinding {ns}/web")) && r.detail.contains(arn), "{r}");
            assert!(r.detail.contains("Fix:"), "{r}");
        }
    }
}

#[test]
fn compatible_mode_allows_what_strict_refuses_and_names_the_exposure() {
    let t = tenancy(TenancyMode::Compatible, "");
    let v = t.untagged_target_group("team-a", "web", TG_A, &tags(&[]));
    let Verdict::Exposed(e) = v else { panic!("{v:?}") };
    assert_eq!(e.kind, "untagged-target-group");
    assert!(!Verdict::Exposed(e).is_refused());
    let v = t.assume_role("team-a", "web", ROLE);
    assert!(matches!(&v, Verdict::Exposed(e) if e.kind == "assume-role"), "{v:?}");
}

#[test]
fn roles_are_granted_exactly_or_by_prefix_per_namespace() {
    let t = tenancy(
        TenancyMode::Strict,
        r#"{"assumeRoles": [
            {"namespaces": ["team-a"], "roleArns": ["arn:aws:iam::444455556666:role/lbc/team-a/*"]},
            {"namespaces": ["team-b"], "roleArns": ["arn:aws:iam::444455556666:role/exact"]}
        ]}"#,
    );
    assert_eq!(t.assume_role("team-a", "web", ROLE), Verdict::Allowed);
    assert!(t.assume_role("team-b", "web", ROLE).is_refused());
    assert_eq!(t.assume_role("team-b", "web", "arn:aws:iam::444455556666:role/exact"), Verdict::Allowed);
    assert!(t.assume_role("team-b", "web", "arn:aws:iam::444455556666:role/exact2").is_refused());
    let Verdict::Refused(r) = t.assume_role("team-b", "api", ROLE) else { panic!() };
    assert!(r.detail.contains("arn:aws:iam::444455556666:role/exact") && r.detail.contains("team-b/api"), "{r}");
}

#[test]
fn networking_sources_must_lie_inside_a_grant_with_its_ports() {
    let t = tenancy(
        TenancyMode::Strict,
        r#"{"networking": [
            {"namespaces": ["team-a"], "cidrs": ["10.0.0.0/16"], "securityGroups": ["sg-0abc"], "ports": ["8080", "9000-9100"]},
            {"namespaces": ["*"], "cidrs": ["192.168.0.0/24"]}
        ]}"#,
    );
    let cidr = |s: &str| NetworkSource::Cidr(s.parse().unwrap());
    let sg = |s: &str| NetworkSource::SecurityGroup(s.into());
    let rows: &[(&str, NetworkSource, u16, u16, bool)] = &[
        ("team-a", cidr("10.0.1.0/24"), 8080, 8080, true),
        ("team-a", cidr("10.0.0.0/8"), 8080, 8080, false), // wider than granted
        ("team-a", cidr("0.0.0.0/0"), 8080, 8080, false),
        ("team-a", cidr("10.0.1.0/24"), 9000, 9100, true),
        ("team-a", cidr("10.0.1.0/24"), 8080, 9000, false), // range spans ungranted ports
        ("team-a", cidr("10.0.1.0/24"), 0, 65535, false),   // ports [] = all
        ("team-a", sg("sg-0abc"), 8080, 8080, true),
        ("team-a", sg("sg-0abd"), 8080, 8080, false),
        ("team-b", cidr("10.0.1.0/24"), 8080, 8080, false),
        ("team-b", cidr("192.168.0.128/25"), 1, 65535, true), // no ports listed: any port
    ];
    for (ns, source, from, to, granted) in rows {
        let v = t.networking_source(ns, "web", source, *from, *to);
        assert_eq!(v == Verdict::Allowed, *granted, "{ns} {source} {from}-{to}: {v:?}");
    }
}

#[test]
fn ingress_groups_confine_members_and_group_wide_settings_to_the_owner() {
    let t = tenancy(
        TenancyMode::Strict,
        r#"{"ingressGroups": [{"group": "shared", "namespaces": ["team-a", "team-b"], "owner": "team-a"},
                              {"group": "open", "namespaces": ["*"]}]}"#,
    );
    assert_eq!(t.ingress_group_member("team-b", "web", "shared"), Verdict::Allowed);
    let Verdict::Refused(r) = t.ingress_group_member("team-c", "web", "shared") else { panic!() };
    assert!(r.detail.contains("grants only to [\"team-a\", \"team-b\"]"), "{r}");
    let Verdict::Refused(r) = t.ingress_group_member("team-c", "web", "unlisted") else { panic!() };
    assert!(r.detail.contains("does not list"), "{r}");
    assert_eq!(t.ingress_group_member("anyone", "web", "open"), Verdict::Allowed);
    assert_eq!(t.ingress_group_setting("team-a", "web", "shared", "security-groups"), Verdict::Allowed);
    let Verdict::Refused(r) = t.ingress_group_setting("team-b", "web", "shared", "security-groups") else { panic!() };
    assert!(r.detail.contains("only namespace team-a"), "{r}");
    let Verdict::Refused(r) = t.ingress_group_setting("x", "web", "open", "wafv2-acl-arn") else { panic!() };
    assert!(r.detail.contains("names no owner"), "{r}");
}

#[test]
fn target_group_names_come_from_the_arn() {
    assert_eq!(target_group_name(TG_A), Some("tf-web"));
    assert_eq!(target_group_name("arn:aws:elasticloadbalancing:us-east-1:1:targetgroup//x"), None);
    assert_eq!(target_group_name("arn:aws:elasticloadbalancing:us-east-1:1:loadbalancer/app/x/y"), None);
}

proptest! {
    /// A prefix grant matches exactly the namespaces that start with it; `*` matches all.
    #[test]
    fn namespace_patterns_match_by_prefix(prefix in "[a-z]{0,5}", ns in "[a-z]{1,8}") {
        let listed = namespace_listed(&[format!("{prefix}*")], &ns);
        prop_assert_eq!(listed, ns.starts_with(&prefix));
        prop_assert!(namespace_listed(&["*".to_string()], &ns));
        prop_assert_eq!(namespace_listed(std::slice::from_ref(&prefix), &ns), prefix == ns);
    }

    /// Strict refuses exactly what compatible reports as exposed, with the same words.
    #[test]
    fn strict_refuses_what_compatible_exposes(ns in "[a-z]{1,6}", granted_ns in "[a-z]{1,6}", port in 1u16..) {
        let json = format!(r#"{{"networking": [{{"namespaces": ["{granted_ns}"], "cidrs": ["10.0.0.0/16"]}}]}}"#);
        let strict = tenancy(TenancyMode::Strict, &json);
        let compatible = tenancy(TenancyMode::Compatible, &json);
        let src = NetworkSource::Cidr("10.0.0.0/24".parse().unwrap());
        match (strict.networking_source(&ns, "b", &src, port, port), compatible.networking_source(&ns, "b", &src, port, port)) {
            (Verdict::Allowed, Verdict::Allowed) => prop_assert_eq!(&ns, &granted_ns),
            (Verdict::Refused(r), Verdict::Exposed(e)) => {
                prop_assert_ne!(&ns, &granted_ns);
                prop_assert_eq!(r.detail, e.detail);
                prop_assert_eq!(r.kind, e.kind);
            }
            other => prop_assert!(false, "modes disagree: {:?}", other),
        }
    }
}
