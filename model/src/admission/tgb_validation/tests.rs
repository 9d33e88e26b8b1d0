use super::*;
use crate::admission::denial_message;
use crate::admission::fixtures::{ARN, facts, full_spec, labels, spec};
use crate::crd::ServiceReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};

const ARN2: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/api/fedcba9876543210";

#[test]
fn arn_shape() {
    assert!(is_target_group_arn(ARN));
    assert!(is_target_group_arn("arn:aws-cn:elasticloadbalancing:cn-north-1:123456789012:targetgroup/a/b"));
    for bad in [
        "",
        "web",
        "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net/a/b",
        "arn:aws:ec2:us-east-1:123456789012:targetgroup/a/b",
        "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/a",
        "arn::elasticloadbalancing:us-east-1:123456789012:targetgroup/a/b",
    ] {
        assert!(!is_target_group_arn(bad), "{bad}");
    }
}

#[test]
fn spec_validation_table() {
    let sel = Some(LabelSelector { match_labels: Some(labels(&[("pool", "a")])), ..Default::default() });
    let cases: Vec<(&str, TargetGroupBindingSpec, &[&str])> = vec![
        ("valid", spec(), &[]),
        (
            "valid by name",
            TargetGroupBindingSpec { target_group_arn: None, target_group_name: Some("web".into()), ..spec() },
            &[],
        ),
        (
            "valid named port",
            TargetGroupBindingSpec {
                service_ref: ServiceReference { name: "web".into(), port: IntOrString::String("http".into()) },
                ..spec()
            },
            &[],
        ),
        (
            "missing service name",
            TargetGroupBindingSpec {
                service_ref: ServiceReference { name: "".into(), port: IntOrString::Int(80) },
                ..spec()
            },
            &["missing_service_name"],
        ),
        (
            "port 0",
            TargetGroupBindingSpec {
                service_ref: ServiceReference { name: "web".into(), port: IntOrString::Int(0) },
                ..spec()
            },
            &["invalid_service_port"],
        ),
        (
            "port too big",
            TargetGroupBindingSpec {
                service_ref: ServiceReference { name: "web".into(), port: IntOrString::Int(70000) },
                ..spec()
            },
            &["invalid_service_port"],
        ),
        (
            "empty port name",
            TargetGroupBindingSpec {
                service_ref: ServiceReference { name: "web".into(), port: IntOrString::String(" ".into()) },
                ..spec()
            },
            &["invalid_service_port"],
        ),
        (
            "neither ARN nor name",
            TargetGroupBindingSpec { target_group_arn: None, ..spec() },
            &["missing_target_group"],
        ),
        (
            "empty ARN and name",
            TargetGroupBindingSpec { target_group_arn: Some("".into()), target_group_name: Some("".into()), ..spec() },
            &["missing_target_group"],
        ),
        (
            "malformed ARN",
            TargetGroupBindingSpec { target_group_arn: Some("web".into()), ..spec() },
            &["invalid_target_group_arn"],
        ),
        (
            "nodeSelector with ip",
            TargetGroupBindingSpec { target_type: Some(TargetType::Ip), node_selector: sel.clone(), ..spec() },
            &["node_selector_with_ip"],
        ),
        (
            "nodeSelector with untyped (ip)",
            TargetGroupBindingSpec { node_selector: sel.clone(), ..spec() },
            &["node_selector_with_ip"],
        ),
        (
            "nodeSelector with instance",
            TargetGroupBindingSpec { target_type: Some(TargetType::Instance), node_selector: sel, ..spec() },
            &[],
        ),
        (
            "assume role with ip",
            TargetGroupBindingSpec {
                target_type: Some(TargetType::Ip),
                iam_role_arn_to_assume: Some("arn:aws:iam::1:role/x".into()),
                ..spec()
            },
            &[],
        ),
        (
            "assume role with instance",
            TargetGroupBindingSpec {
                target_type: Some(TargetType::Instance),
                iam_role_arn_to_assume: Some("arn:aws:iam::1:role/x".into()),
                ..spec()
            },
            &["assume_role_with_instance"],
        ),
        (
            "QUIC with instance",
            TargetGroupBindingSpec {
                target_type: Some(TargetType::Instance),
                target_group_protocol: Some(TargetGroupProtocol::TcpQuic),
                ..spec()
            },
            &["quic_with_instance"],
        ),
        (
            "QUIC with ip",
            TargetGroupBindingSpec {
                target_type: Some(TargetType::Ip),
                target_group_protocol: Some(TargetGroupProtocol::QUIC),
                ..spec()
            },
            &[],
        ),
        (
            "several problems reported together",
            TargetGroupBindingSpec {
                target_group_arn: None,
                service_ref: ServiceReference { name: "".into(), port: IntOrString::Int(0) },
                ..spec()
            },
            &["missing_service_name", "invalid_service_port", "missing_target_group"],
        ),
    ];
    for (name, s, want) in cases {
        let got: Vec<&str> = validate_tgb_spec(&s).iter().map(|v| v.category).collect();
        assert_eq!(got, want, "{name}");
    }
    let msg = &validate_tgb_spec(&TargetGroupBindingSpec {
        service_ref: ServiceReference { name: "web".into(), port: IntOrString::Int(0) },
        ..spec()
    })[0]
        .message;
    assert!(msg.contains("is 0") && msg.contains("1 to 65535"), "{msg}");
}

#[test]
fn update_validation_table() {
    let cases: Vec<(&str, TargetGroupBindingSpec, TargetGroupBindingSpec, &[&str])> = vec![
        ("unchanged", full_spec(), full_spec(), &[]),
        ("defaults filled in", spec(), full_spec(), &[]),
        (
            "other fields may change",
            full_spec(),
            TargetGroupBindingSpec {
                multi_cluster_target_group: Some(true),
                service_ref: ServiceReference { name: "web2".into(), port: IntOrString::Int(81) },
                ..full_spec()
            },
            &[],
        ),
        (
            "ARN changed",
            full_spec(),
            TargetGroupBindingSpec { target_group_arn: Some(ARN2.into()), ..full_spec() },
            &["spec.targetGroupARN"],
        ),
        (
            "ARN removed",
            full_spec(),
            TargetGroupBindingSpec { target_group_arn: None, ..full_spec() },
            &["spec.targetGroupARN"],
        ),
        (
            "targetType changed",
            full_spec(),
            TargetGroupBindingSpec { target_type: Some(TargetType::Instance), ..full_spec() },
            &["spec.targetType"],
        ),
        (
            "targetType removed",
            full_spec(),
            TargetGroupBindingSpec { target_type: None, ..full_spec() },
            &["spec.targetType"],
        ),
        (
            "ipAddressType changed",
            full_spec(),
            TargetGroupBindingSpec { ip_address_type: Some(TargetGroupIpAddressType::Ipv6), ..full_spec() },
            &["spec.ipAddressType"],
        ),
        (
            "vpcID changed",
            full_spec(),
            TargetGroupBindingSpec { vpc_id: Some("vpc-other".into()), ..full_spec() },
            &["spec.vpcID"],
        ),
        (
            "protocol is not immutable",
            full_spec(),
            TargetGroupBindingSpec { target_group_protocol: Some(TargetGroupProtocol::UDP), ..full_spec() },
            &[],
        ),
        (
            "all four changed",
            full_spec(),
            TargetGroupBindingSpec {
                target_group_arn: Some(ARN2.into()),
                target_type: Some(TargetType::Instance),
                ip_address_type: Some(TargetGroupIpAddressType::Ipv6),
                vpc_id: Some("vpc-x".into()),
                ..full_spec()
            },
            &["spec.targetGroupARN", "spec.targetType", "spec.ipAddressType", "spec.vpcID"],
        ),
    ];
    for (name, old, new, want) in cases {
        let got: Vec<&str> = validate_tgb_update(&old, &new).iter().map(|v| v.field).collect();
        assert_eq!(got, want, "{name}");
    }
    let v = validate_tgb_update(
        &full_spec(),
        &TargetGroupBindingSpec { target_type: Some(TargetType::Instance), ..full_spec() },
    );
    assert_eq!(
        v[0].message,
        "spec.targetType is immutable: it is \"ip\" and this update sets \"instance\". Restore spec.targetType: ip, \
         or create a new TargetGroupBinding with the new value and delete this one."
    );
    let v = validate_tgb_update(&full_spec(), &TargetGroupBindingSpec { vpc_id: None, ..full_spec() });
    assert!(v[0].message.contains("\"vpc-0abc\" and this update removes it"), "{}", v[0].message);
}

#[test]
fn target_group_fields() {
    assert!(!target_group_fields_changed(&full_spec(), &full_spec()));
    assert!(!target_group_fields_changed(
        &full_spec(),
        &TargetGroupBindingSpec { multi_cluster_target_group: Some(true), ..full_spec() }
    ));
    assert!(target_group_fields_changed(&full_spec(), &TargetGroupBindingSpec { vpc_id: None, ..full_spec() }));
    assert!(target_group_fields_changed(
        &full_spec(),
        &TargetGroupBindingSpec { target_group_protocol: None, ..full_spec() }
    ));
    let role = Some("arn:aws:iam::222222222222:role/tg".to_string());
    let with_role = TargetGroupBindingSpec { iam_role_arn_to_assume: role.clone(), ..full_spec() };
    assert!(target_group_fields_changed(&full_spec(), &with_role), "role added");
    assert!(
        target_group_fields_changed(
            &with_role,
            &TargetGroupBindingSpec { assume_role_external_id: Some("e".into()), ..with_role.clone() }
        ),
        "external ID added"
    );
    assert!(
        !target_group_fields_changed(
            &full_spec(),
            &TargetGroupBindingSpec { assume_role_external_id: Some("e".into()), ..full_spec() }
        ),
        "an external ID without a role reads the same account"
    );
}

fn bound(ns: &str, name: &str, arn: &str, multi: bool) -> TargetGroupBinding {
    let mut t = TargetGroupBinding::new(
        name,
        TargetGroupBindingSpec {
            target_group_arn: Some(arn.into()),
            multi_cluster_target_group: Some(multi).filter(|m| *m),
            ..spec()
        },
    );
    t.metadata.namespace = Some(ns.into());
    t
}

#[test]
fn uniqueness_table() {
    let a = bound("shop", "a", ARN, false);
    let a_multi = bound("shop", "a", ARN, true);
    let c = bound("shop", "c", ARN, false);
    let b_multi = bound("prod", "b", ARN, true);
    let other_tg = bound("shop", "c", ARN2, false);
    let mut deleting = bound("shop", "old", ARN, false);
    deleting.metadata.deletion_timestamp = Some(Time(Default::default()));
    let many: Vec<TargetGroupBinding> = (0..7).map(|i| bound("ns", &format!("x{i}"), ARN, false)).collect();
    let many_refs: Vec<&TargetGroupBinding> = many.iter().collect();
    let mine = |multi: bool| TargetGroupBindingSpec { multi_cluster_target_group: Some(multi), ..spec() };
    let cases: Vec<(&str, &str, TargetGroupBindingSpec, Vec<&TargetGroupBinding>, bool)> = vec![
        ("alone", "new", mine(false), vec![], true),
        ("other target group", "new", mine(false), vec![&other_tg], true),
        ("itself (update)", "a", mine(false), vec![&a], true),
        ("second binding refused", "new", mine(false), vec![&a], false),
        ("multi-cluster vs single", "new", mine(true), vec![&a], false),
        ("single vs multi-cluster", "new", mine(false), vec![&a_multi], false),
        ("all multi-cluster allowed", "new", mine(true), vec![&a_multi, &b_multi, &other_tg], true),
        ("one of several not multi", "new", mine(true), vec![&a_multi, &b_multi, &c], false),
        ("binding being deleted still counts", "new", mine(false), vec![&deleting], false),
        ("update turning multi-cluster off with a partner", "a", mine(false), vec![&a_multi, &b_multi], false),
        (
            "no ARN yet: nothing to compare",
            "new",
            TargetGroupBindingSpec { target_group_arn: None, ..spec() },
            vec![&a],
            true,
        ),
        ("many conflicts", "new", mine(false), many_refs, false),
    ];
    for (name, this, s, others, ok) in cases {
        let v = validate_tgb_unique("shop", this, &s, &others);
        assert_eq!(v.is_empty(), ok, "{name}: {v:?}");
    }
    let v = validate_tgb_unique("shop", "new", &mine(true), &[&a_multi, &b_multi, &c]);
    assert_eq!(
        v[0].message,
        format!(
            "target group {ARN} is already bound by TargetGroupBinding prod/b (multiClusterTargetGroup: true), \
             shop/a (multiClusterTargetGroup: true), shop/c (multiClusterTargetGroup: false); this binding has \
             multiClusterTargetGroup: true. A target group can be bound more than once only when every binding \
             sets spec.multiClusterTargetGroup: true, so that each deregisters only the targets it registered. Set \
             it on shop/c or bind a different target group."
        )
    );
    let v = validate_tgb_unique("shop", "new", &mine(false), &[&deleting]);
    assert!(v[0].message.contains("shop/old (multiClusterTargetGroup: false) [being deleted: wait until it is gone]"));
    assert!(v[0].message.contains("Set it on shop/new and shop/old"), "{}", v[0].message);
    let many: Vec<&TargetGroupBinding> = many.iter().collect();
    let v = validate_tgb_unique("shop", "new", &mine(false), &many);
    assert!(v[0].message.contains("and 2 more"), "{}", v[0].message);
}

#[test]
fn against_target_group_table() {
    let cases: Vec<(&str, TargetGroupBindingSpec, TargetGroupFacts, &[&str])> = vec![
        ("matching", full_spec(), facts(), &[]),
        ("nothing set yet", spec(), facts(), &[]),
        (
            "type mismatch",
            TargetGroupBindingSpec { target_type: Some(TargetType::Instance), ..full_spec() },
            facts(),
            &["target_type_mismatch"],
        ),
        (
            "vpc mismatch",
            TargetGroupBindingSpec { vpc_id: Some("vpc-other".into()), ..full_spec() },
            facts(),
            &["vpc_mismatch"],
        ),
        (
            "ip type mismatch",
            TargetGroupBindingSpec { ip_address_type: Some(TargetGroupIpAddressType::Ipv6), ..full_spec() },
            facts(),
            &["ip_address_type_mismatch"],
        ),
        ("tg without ip type is ipv4", full_spec(), TargetGroupFacts { ip_address_type: None, ..facts() }, &[]),
        (
            "protocol mismatch",
            TargetGroupBindingSpec { target_group_protocol: Some(TargetGroupProtocol::UDP), ..full_spec() },
            facts(),
            &["protocol_mismatch"],
        ),
        ("tg without vpc (not checked)", full_spec(), TargetGroupFacts { vpc_id: None, ..facts() }, &[]),
        (
            "lambda target group",
            spec(),
            TargetGroupFacts { target_type: "lambda".into(), ..facts() },
            &["unsupported_target_type"],
        ),
        (
            "everything wrong",
            TargetGroupBindingSpec {
                target_type: Some(TargetType::Instance),
                vpc_id: Some("vpc-x".into()),
                ip_address_type: Some(TargetGroupIpAddressType::Ipv6),
                target_group_protocol: Some(TargetGroupProtocol::HTTP),
                ..spec()
            },
            facts(),
            &["target_type_mismatch", "vpc_mismatch", "ip_address_type_mismatch", "protocol_mismatch"],
        ),
    ];
    for (name, s, tg, want) in cases {
        let got: Vec<&str> = validate_tgb_against_target_group(&s, &tg).iter().map(|v| v.category).collect();
        assert_eq!(got, want, "{name}");
    }
    let v =
        validate_tgb_against_target_group(&TargetGroupBindingSpec { vpc_id: Some("vpc-x".into()), ..spec() }, &facts());
    assert_eq!(
        v[0].message,
        format!(
            "spec.vpcID is \"vpc-x\" but target group {ARN} is in VPC \"vpc-0abc\"; they must match. Set \
             spec.vpcID: vpc-0abc (or leave it out to take the target group's), or bind a target group in vpc-x."
        )
    );
    let v = validate_tgb_against_target_group(
        &TargetGroupBindingSpec { target_type: Some(TargetType::Instance), ..spec() },
        &facts(),
    );
    assert!(v[0].message.contains("Set spec.targetType: ip"), "{}", v[0].message);
}

#[test]
fn not_found_and_joined_messages() {
    let v = target_group_not_found(&TargetGroupLookup::ByName("web".into()), None);
    assert_eq!(v.field, "spec.targetGroupName");
    assert!(v.message.contains("\"web\"") && v.message.contains("create the target group first"));
    assert!(v.message.contains("in the controller's AWS account"), "{}", v.message);
    let v = target_group_not_found(&TargetGroupLookup::ByArn(ARN.into()), None);
    assert_eq!(v.field, "spec.targetGroupARN");
    assert!(v.message.contains(ARN));
    let role = RoleToAssume { role_arn: "arn:aws:iam::222222222222:role/tg".into(), external_id: None };
    let v = target_group_not_found(&TargetGroupLookup::ByArn(ARN.into()), Some(&role));
    assert!(
        v.message.contains("account of role arn:aws:iam::222222222222:role/tg (spec.iamRoleArnToAssume)"),
        "{}",
        v.message
    );
    let a = Violation::new("f", "c", "first");
    let b = Violation::new("g", "d", "second");
    assert_eq!(denial_message(&[]), "");
    assert_eq!(denial_message(std::slice::from_ref(&a)), "first");
    assert_eq!(denial_message(&[a, b]), "(1) first; (2) second");
}
