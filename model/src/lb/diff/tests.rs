use super::testkit::*;
use super::*;
use crate::lb::{Stack, TargetGroupRef};

const LB: &str = "arn:lb/k8s-ns-svc-abc/x-4";
const TG80: &str = "arn:tg/k8s-ns-svc-80/x-2";
const TG443: &str = "arn:tg/k8s-ns-svc-443/x-3";
const L80: &str = "arn:listener-5";
const L443: &str = "arn:listener-6";

fn opts() -> PlanOptions {
    PlanOptions::default()
}

fn summaries(steps: &[Step]) -> Vec<String> {
    steps.iter().map(Step::summary).collect()
}

/// Plans, checks the plan against AWS rules by applying it, and checks nothing is left to do.
fn plan_and_converge(desired: &Stack, observed: &ObservedStack, opts: &PlanOptions) -> Vec<Step> {
    let steps = plan(desired, observed, opts).expect("plan");
    let mut sim = Sim::new(observed.clone());
    sim.apply_all(&steps);
    let again = plan(desired, &sim.state, opts).expect("re-plan");
    assert!(again.is_empty(), "not converged after {:?}:\n{:#?}", summaries(&steps), again);
    steps
}

#[test]
fn fixture_ids_are_stable() {
    let obs = materialize(&stack());
    assert_eq!(obs.load_balancer.as_ref().unwrap().0.id, LB);
    assert_eq!(obs.target_groups.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), vec![TG80, TG443]);
    assert_eq!(obs.listeners.iter().map(|l| l.id.as_str()).collect::<Vec<_>>(), vec![L80, L443]);
    assert_eq!(obs.frontend_security_group.as_ref().unwrap().id, "sg-1");
}

#[test]
fn identical_means_no_steps() {
    let desired = stack();
    assert_eq!(plan(&desired, &materialize(&desired), &opts()).unwrap(), vec![]);
}

#[test]
fn fresh_deploy_order() {
    let steps = plan_and_converge(&stack(), &ObservedStack::default(), &opts());
    assert_eq!(
        summaries(&steps),
        vec![
            "create security group k8s-ns-svc-abc",
            "authorize 2 ingress rule(s)",
            "create target group k8s-ns-svc-80",
            "create target group k8s-ns-svc-443",
            "create load balancer k8s-ns-svc-abc",
            "create listener 80",
            "create listener 443",
        ]
    );
    let Step::CreateLoadBalancer { load_balancer, security_groups } = &steps[4] else { panic!() };
    assert_eq!(security_groups, &vec![SecurityGroupRef::ManagedFrontend]);
    assert!(load_balancer.security_groups.is_empty(), "placeholder must not reach AWS");
    let Step::CreateListener { listener } = &steps[5] else { panic!() };
    assert_eq!(listener.default_actions, forward("k8s-ns-svc-80"), "new target groups are referenced by name");
}

type Edit<T> = fn(&mut T);

fn nothing<T>(_: &mut T) {}

/// (case name, edit of the desired stack, edit of the observed state, expected step summaries)
type Case = (&'static str, Edit<Stack>, Edit<ObservedStack>, Vec<&'static str>);

/// One case per step kind: (name, edit desired, edit observed, expected step summaries).
#[test]
fn step_kinds() {
    let cases: Vec<Case> = vec![
        (
            "one load balancer attribute",
            |s| {
                s.load_balancer.attributes.insert("load_balancing.cross_zone.enabled".into(), "true".into());
            },
            nothing,
            vec!["set load balancer attributes load_balancing.cross_zone.enabled"],
        ),
        (
            "attribute AWS has and we do not set: left alone",
            nothing,
            |o| {
                let lb = &mut o.load_balancer.as_mut().unwrap().0.spec;
                lb.attributes.insert("deletion_protection.enabled".into(), "false".into());
                o.target_groups[0].spec.attributes.insert("deregistration_delay.timeout_seconds".into(), "300".into());
                o.listeners[0].spec.attributes.insert("tcp.idle_timeout.seconds".into(), "350".into());
            },
            vec![],
        ),
        (
            "attribute equal to AWS: no step",
            |s| {
                s.target_groups[0].attributes.insert("deregistration_delay.timeout_seconds".into(), "300".into());
            },
            |o| {
                o.target_groups[0].spec.attributes.insert("deregistration_delay.timeout_seconds".into(), "300".into());
                o.target_groups[0].spec.attributes.insert("stickiness.enabled".into(), "false".into());
            },
            vec![],
        ),
        (
            "one target group attribute",
            |s| {
                s.target_groups[1].attributes.insert("deregistration_delay.timeout_seconds".into(), "10".into());
            },
            nothing,
            vec!["set target group k8s-ns-svc-443 attributes deregistration_delay.timeout_seconds"],
        ),
        (
            "health check",
            |s| s.target_groups[0].health_check.interval_seconds = 30,
            nothing,
            vec!["modify health check of target group k8s-ns-svc-80"],
        ),
        (
            "one listener attribute",
            |s| {
                s.listeners[1].attributes.insert("tcp.idle_timeout.seconds".into(), "60".into());
            },
            nothing,
            vec!["set listener 443 attributes tcp.idle_timeout.seconds"],
        ),
        (
            "tags added, changed and removed; aws: keys untouched",
            |s| {
                s.load_balancer.tags.insert("team".into(), "meta".into());
                s.target_groups[0].tags.insert("service.k8s.aws/stack".into(), "ns/other".into());
            },
            |o| {
                let lb = &mut o.load_balancer.as_mut().unwrap().0.spec;
                lb.tags.insert("aws:cloudformation:stack-name".into(), "x".into());
                o.listeners[0].spec.tags.insert("old".into(), "1".into());
                o.frontend_security_group.as_mut().unwrap().spec.tags.insert("stale".into(), "1".into());
            },
            vec![
                "untag security group sg-1: stale",
                "tag target group arn:tg/k8s-ns-svc-80/x-2 with service.k8s.aws/stack",
                "tag load balancer arn:lb/k8s-ns-svc-abc/x-4 with team",
                "untag listener arn:listener-5: old",
            ],
        ),
        (
            "rules: authorize first, revoke last; description-only change ignored",
            |s| {
                let sg = s.frontend_security_group.as_mut().unwrap();
                sg.ingress = vec![rule(80, "0.0.0.0/0"), rule(8443, "10.0.0.0/8")];
                sg.ingress[0].description = Some("new words".into());
            },
            nothing,
            vec!["authorize 1 ingress rule(s)", "revoke 1 ingress rule(s) on sg-1"],
        ),
        (
            "subnets",
            |s| s.load_balancer.subnets.push(mapping("subnet-c")),
            nothing,
            vec!["set load balancer subnets (3)"],
        ),
        (
            "the same EIPs paired with the subnets in another order: kept (AWS cannot move them)",
            |s| {
                s.load_balancer.subnets[0].allocation_id = Some("eipalloc-2".into());
                s.load_balancer.subnets[1].allocation_id = Some("eipalloc-1".into());
            },
            |o| {
                let lb = &mut o.load_balancer.as_mut().unwrap().0.spec;
                lb.subnets[0].allocation_id = Some("eipalloc-1".into());
                lb.subnets[1].allocation_id = Some("eipalloc-2".into());
            },
            vec![],
        ),
        (
            "another EIP: a real change",
            |s| {
                s.load_balancer.subnets[0].allocation_id = Some("eipalloc-3".into());
                s.load_balancer.subnets[1].allocation_id = Some("eipalloc-1".into());
            },
            |o| {
                let lb = &mut o.load_balancer.as_mut().unwrap().0.spec;
                lb.subnets[0].allocation_id = Some("eipalloc-1".into());
                lb.subnets[1].allocation_id = Some("eipalloc-2".into());
            },
            vec!["set load balancer subnets (2)"],
        ),
        (
            "to dual-stack: subnets first",
            |s| {
                s.load_balancer.subnets = vec![mapping("subnet-v6a"), mapping("subnet-v6b")];
                s.load_balancer.ip_address_type = LbIpAddressType::Dualstack;
            },
            nothing,
            vec!["set load balancer subnets (2)", "set load balancer address type dualstack"],
        ),
        (
            "back to IPv4: address type first",
            |s| s.load_balancer.subnets = vec![mapping("subnet-c")],
            |o| {
                let lb = &mut o.load_balancer.as_mut().unwrap().0.spec;
                lb.ip_address_type = LbIpAddressType::Dualstack;
            },
            vec!["set load balancer address type ipv4", "set load balancer subnets (1)"],
        ),
        (
            "an IPAM pool comes after the other load balancer changes",
            |s| {
                s.load_balancer.subnets.push(mapping("subnet-c"));
                s.load_balancer.ipv4_ipam_pool = Some("ipam-pool-1".into());
            },
            nothing,
            vec!["set load balancer subnets (3)", "set load balancer IPAM pool ipam-pool-1"],
        ),
        (
            "a pool leaves before the subnets change; the customer-owned pool is never compared",
            |s| {
                s.load_balancer.subnets.push(mapping("subnet-c"));
                s.load_balancer.customer_owned_ipv4_pool = Some("ipv4pool-coip-new".into());
            },
            |o| {
                let lb = &mut o.load_balancer.as_mut().unwrap().0.spec;
                lb.ipv4_ipam_pool = Some("ipam-pool-1".into());
                lb.customer_owned_ipv4_pool = Some("ipv4pool-coip-old".into());
            },
            vec!["remove load balancer IPAM pool", "set load balancer subnets (3)"],
        ),
        (
            "IPv6 source NAT turned on: SetSubnets carries it; auto_assigned is met by AWS's pick",
            |s| {
                s.load_balancer.ipv6_source_nat = Some(true);
                s.load_balancer.subnets[0].source_nat_ipv6_prefix = Some("auto_assigned".into());
            },
            |o| {
                let lb = &mut o.load_balancer.as_mut().unwrap().0.spec;
                lb.ipv6_source_nat = Some(false);
                lb.subnets[0].source_nat_ipv6_prefix = Some("2600:1f18:0:1:9::/80".into());
            },
            vec!["set load balancer subnets (2), IPv6 source NAT on"],
        ),
        (
            "source NAT unsaid keeps the load balancer's; a given prefix must be the one there",
            |s| s.load_balancer.subnets[0].source_nat_ipv6_prefix = Some("2600:1f18:0:1:5::/80".into()),
            |o| {
                let lb = &mut o.load_balancer.as_mut().unwrap().0.spec;
                lb.ipv6_source_nat = Some(true);
                lb.subnets[0].source_nat_ipv6_prefix = Some("2600:1f18:0:1:9::/80".into());
            },
            vec!["set load balancer subnets (2)"],
        ),
        (
            "source NAT already as wanted, AWS's picks in place: nothing",
            |s| {
                s.load_balancer.ipv6_source_nat = Some(true);
                s.load_balancer.subnets[1].source_nat_ipv6_prefix = Some("auto_assigned".into());
            },
            |o| {
                let lb = &mut o.load_balancer.as_mut().unwrap().0.spec;
                lb.ipv6_source_nat = Some(true);
                lb.subnets[1].source_nat_ipv6_prefix = Some("2600:1f18:0:2:9::/80".into());
            },
            vec![],
        ),
        (
            "extra security group",
            |s| s.load_balancer.security_groups.push("sg-user".into()),
            nothing,
            vec!["set load balancer security groups"],
        ),
        (
            "listener port moves: old deleted, new created",
            |s| s.listeners[1].port = 8443,
            nothing,
            vec!["delete listener 443", "create listener 8443"],
        ),
        (
            "listener to TLS with a certificate, policy and extra certificates",
            |s| {
                let l = &mut s.listeners[1];
                l.protocol = Protocol::Tls;
                l.certificates = vec!["arn:cert/a".into(), "arn:cert/b".into(), "arn:cert/c".into()];
                l.ssl_policy = Some("ELBSecurityPolicy-TLS13-1-2-2021-06".into());
                l.alpn_policy = Some("HTTP2Preferred".into());
            },
            nothing,
            vec!["modify listener 443", "add 2 certificate(s) to listener 443"],
        ),
        (
            "certificate swap",
            |s| {
                let l = &mut s.listeners[1];
                l.protocol = Protocol::Tls;
                l.certificates = vec!["arn:cert/a".into(), "arn:cert/c".into()];
            },
            |o| {
                let l = &mut o.listeners[1].spec;
                l.protocol = Protocol::Tls;
                l.certificates = vec!["arn:cert/a".into(), "arn:cert/b".into()];
            },
            vec!["add 1 certificate(s) to listener 443", "remove 1 certificate(s) from listener 443"],
        ),
        (
            "listener forwards elsewhere",
            |s| s.listeners[0].default_actions = forward("k8s-ns-svc-443"),
            nothing,
            vec!["modify listener 80"],
        ),
        (
            "target group port changes: new name, create, switch, delete old",
            |s| {
                s.target_groups[0] = tg("k8s-ns-svc-80-v2", 9090);
                s.listeners[0].default_actions = forward("k8s-ns-svc-80-v2");
            },
            nothing,
            vec!["create target group k8s-ns-svc-80-v2", "modify listener 80", "delete target group k8s-ns-svc-80"],
        ),
        (
            "listener and its target group removed",
            |s| {
                s.listeners.truncate(1);
                s.target_groups.truncate(1);
                s.frontend_security_group.as_mut().unwrap().ingress.truncate(1);
            },
            nothing,
            vec!["delete listener 443", "delete target group k8s-ns-svc-443", "revoke 1 ingress rule(s) on sg-1"],
        ),
        (
            "managed security group no longer wanted",
            |s| {
                s.frontend_security_group = None;
                s.load_balancer.security_groups = vec!["sg-user".into()];
            },
            nothing,
            vec!["set load balancer security groups", "delete security group k8s-ns-svc-abc"],
        ),
        (
            "managed security group renamed: new one first, old one deleted last",
            |s| s.frontend_security_group.as_mut().unwrap().name = "k8s-ns-svc-def".into(),
            nothing,
            vec![
                "create security group k8s-ns-svc-def",
                "authorize 2 ingress rule(s)",
                "set load balancer security groups",
                "delete security group k8s-ns-svc-abc",
            ],
        ),
        (
            "managed group named instead of the placeholder",
            |s| s.load_balancer.security_groups = vec!["k8s-ns-svc-abc".into()],
            nothing,
            vec![],
        ),
        (
            "scheme change replaces the load balancer, listeners recreated",
            |s| s.load_balancer.scheme = Scheme::Internal,
            nothing,
            vec![
                "replace load balancer k8s-ns-svc-abc: scheme changes from internet-facing to internal (AWS cannot change it in place)",
                "create load balancer k8s-ns-svc-abc",
                "create listener 80",
                "create listener 443",
            ],
        ),
        (
            "name change replaces",
            |s| s.load_balancer.name = "custom".into(),
            nothing,
            vec![
                "replace load balancer k8s-ns-svc-abc: name changes from k8s-ns-svc-abc to custom (AWS cannot rename)",
                "create load balancer custom",
                "create listener 80",
                "create listener 443",
            ],
        ),
        (
            "type change replaces",
            |s| s.load_balancer.lb_type = LbType::Application,
            nothing,
            vec![
                "replace load balancer k8s-ns-svc-abc: type changes from Network to Application (AWS cannot change it in place)",
                "create load balancer k8s-ns-svc-abc",
                "create listener 80",
                "create listener 443",
            ],
        ),
        (
            "NLB created without security groups cannot get one",
            nothing,
            |o| o.load_balancer.as_mut().unwrap().0.spec.security_groups.clear(),
            vec![
                "replace load balancer k8s-ns-svc-abc: security groups are wanted but the NLB was created without any, and AWS cannot add them later",
                "create load balancer k8s-ns-svc-abc",
                "create listener 80",
                "create listener 443",
            ],
        ),
    ];
    for (name, edit_desired, edit_observed, want) in cases {
        eprintln!("case: {name}");
        let mut desired = stack();
        edit_desired(&mut desired);
        let mut observed = materialize(&stack());
        edit_observed(&mut observed);
        let steps = plan_and_converge(&desired, &observed, &opts());
        assert_eq!(summaries(&steps), want, "{name}");
    }
}

#[test]
fn step_payloads() {
    // One attribute change carries only that key.
    let mut desired = stack();
    desired.load_balancer.attributes.insert("access_logs.s3.enabled".into(), "false".into());
    let mut observed = materialize(&stack());
    let lb = &mut observed.load_balancer.as_mut().unwrap().0.spec;
    lb.attributes.insert("access_logs.s3.enabled".into(), "true".into());
    lb.attributes.insert("deletion_protection.enabled".into(), "false".into());
    assert_eq!(
        plan(&desired, &observed, &opts()).unwrap(),
        vec![Step::ModifyLoadBalancerAttributes {
            arn: LB.into(),
            attributes: [("access_logs.s3.enabled".to_string(), "false".to_string())].into(),
        }]
    );

    // A changed target group: the listener points at the new one by name, at the old one's ARN never.
    let mut desired = stack();
    desired.target_groups[0] = tg("k8s-ns-svc-80-v2", 9090);
    desired.listeners[0].default_actions = forward("k8s-ns-svc-80-v2");
    let steps = plan(&desired, &materialize(&stack()), &opts()).unwrap();
    assert_eq!(
        steps[1],
        Step::ModifyListener {
            arn: L80.into(),
            port: 80,
            change: ListenerChange { default_actions: Some(forward("k8s-ns-svc-80-v2")), ..Default::default() },
        }
    );
    assert_eq!(steps[2], Step::DeleteTargetGroup { arn: TG80.into(), name: "k8s-ns-svc-80".into() });

    // Listeners created next to existing groups reference them by ARN.
    let mut desired = stack();
    desired.listeners.push(listener(8080, "k8s-ns-svc-443"));
    let steps = plan(&desired, &materialize(&stack()), &opts()).unwrap();
    let Step::CreateListener { listener } = &steps[0] else { panic!("{steps:?}") };
    let Action::Forward { target_groups, .. } = &listener.default_actions[0] else { panic!() };
    assert_eq!(target_groups[0].target_group, TargetGroupRef::Arn(TG443.into()));

    // TLS switch: everything in one ModifyListener, extras separately.
    let mut desired = stack();
    let l = &mut desired.listeners[1];
    l.protocol = Protocol::Tls;
    l.certificates = vec!["arn:cert/a".into(), "arn:cert/b".into()];
    l.ssl_policy = Some("p".into());
    let steps = plan(&desired, &materialize(&stack()), &opts()).unwrap();
    assert_eq!(
        steps,
        vec![
            Step::ModifyListener {
                arn: L443.into(),
                port: 443,
                change: ListenerChange {
                    protocol: Some(Protocol::Tls),
                    default_certificate: Some("arn:cert/a".into()),
                    ssl_policy: Some("p".into()),
                    ..Default::default()
                },
            },
            Step::AddListenerCertificates { arn: L443.into(), port: 443, certificates: vec!["arn:cert/b".into()] },
        ]
    );

    // Rules diff is minimal.
    let mut desired = stack();
    desired.frontend_security_group.as_mut().unwrap().ingress.push(rule(22, "10.0.0.0/8"));
    assert_eq!(
        plan(&desired, &materialize(&stack()), &opts()).unwrap(),
        vec![Step::AuthorizeIngress {
            group: SecurityGroupRef::Id("sg-1".into()),
            rules: vec![rule(22, "10.0.0.0/8")]
        }]
    );

    // Security group deletion waits out the load balancer's ENIs.
    let mut desired = stack();
    desired.frontend_security_group = None;
    desired.load_balancer.security_groups = vec!["sg-user".into()];
    let steps = plan(&desired, &materialize(&stack()), &opts()).unwrap();
    assert_eq!(
        steps.last(),
        Some(&Step::DeleteSecurityGroup {
            id: "sg-1".into(),
            name: "k8s-ns-svc-abc".into(),
            retry_on_dependency_violation: true
        })
    );
}

#[test]
fn external_managed_tags_are_left_alone() {
    let mut desired = stack();
    desired.load_balancer.tags.insert("cost-center".into(), "1".into());
    let mut observed = materialize(&stack());
    observed.load_balancer.as_mut().unwrap().0.spec.tags.insert("owner".into(), "finops".into());
    let opts = PlanOptions {
        external_managed_tags: ["cost-center".to_string(), "owner".to_string()].into(),
        ..Default::default()
    };
    assert_eq!(plan(&desired, &observed, &opts).unwrap(), vec![]);
}

#[test]
fn foreign_resources_are_refused() {
    let mut observed = ObservedStack::default();
    observed.foreign.push(ForeignResource {
        kind: ResourceKind::LoadBalancer,
        name: "k8s-ns-svc-abc".into(),
        id: "arn:lb/someone-elses".into(),
        tags: [("team".to_string(), "billing".to_string())].into(),
    });
    observed.foreign.push(ForeignResource {
        kind: ResourceKind::TargetGroup,
        name: "k8s-ns-svc-80".into(),
        id: "arn:tg/other".into(),
        tags: Tags::new(),
    });
    let err = plan(&stack(), &observed, &opts()).unwrap_err();
    assert!(matches!(err, PlanError::Foreign { .. }));
    assert_eq!(
        err.to_string(),
        "refusing to reconcile stack ns/svc: 2 AWS resource(s) use the names this stack wants but do not carry its \
         ownership tags, so they belong to someone else and will not be modified or deleted:\n  \
         load balancer k8s-ns-svc-abc (arn:lb/someone-elses) tags: [team=billing]\n  \
         target group k8s-ns-svc-80 (arn:tg/other) tags: []\n\
         fix: choose another name (e.g. the load-balancer-name annotation), or delete/rename the existing resource; \
         if it was created by this controller before, restore its ownership tags"
    );
    // Deletion never touches them either.
    assert_eq!(plan_delete(&observed), vec![]);
}

#[test]
fn target_group_conflicts_and_dangling_references() {
    let mut observed = materialize(&stack());
    observed.target_groups[0].spec.protocol = Protocol::Udp;
    let err = plan(&stack(), &observed, &opts()).unwrap_err().to_string();
    assert!(err.starts_with("target group k8s-ns-svc-80 exists with protocol UDP but the stack wants TCP"), "{err}");

    let mut desired = stack();
    desired.listeners[0].default_actions = forward("nope");
    assert_eq!(
        plan(&desired, &materialize(&stack()), &opts()).unwrap_err(),
        PlanError::UnknownTargetGroup { port: 80, name: "nope".into() }
    );
}

#[test]
fn replacement_and_deletion_protection() {
    // Set out of band: lifted right before the replacement.
    let mut desired = stack();
    desired.load_balancer.scheme = Scheme::Internal;
    let mut observed = materialize(&stack());
    observed.load_balancer.as_mut().unwrap().0.spec.attributes.insert(DELETION_PROTECTION.into(), "true".into());
    let steps = plan_and_converge(&desired, &observed, &opts());
    assert_eq!(
        steps[0],
        Step::ModifyLoadBalancerAttributes {
            arn: LB.into(),
            attributes: [(DELETION_PROTECTION.to_string(), "false".to_string())].into()
        }
    );
    assert!(matches!(steps[1], Step::ReplaceLoadBalancer { .. }));

    // Asked for by the user: refused, with the way out.
    desired.load_balancer.attributes.insert(DELETION_PROTECTION.into(), "true".into());
    assert_eq!(
        plan(&desired, &observed, &opts()).unwrap_err().to_string(),
        "load balancer k8s-ns-svc-abc must be replaced (scheme changes from internet-facing to internal (AWS cannot \
         change it in place)) but its deletion_protection.enabled attribute is true in the desired configuration; set \
         it to false to let the controller delete and re-create it (its DNS name will change)"
    );
}

#[test]
fn user_supplied_target_group_arns_pass_through() {
    let mut desired = stack();
    desired.listeners[0].default_actions = vec![Action::Forward {
        target_groups: vec![crate::lb::WeightedTargetGroup {
            target_group: TargetGroupRef::Arn("arn:tg/users".into()),
            weight: Some(1),
        }],
        stickiness_seconds: None,
    }];
    desired.target_groups.remove(0);
    let mut observed = materialize(&stack());
    // AWS already forwards there: only the group nothing uses any more goes.
    observed.listeners[0].spec.default_actions = desired.listeners[0].default_actions.clone();
    let steps = plan(&desired, &observed, &opts()).unwrap();
    assert_eq!(summaries(&steps), vec!["delete target group k8s-ns-svc-80"]);
}

#[test]
fn deletion_order() {
    let observed = materialize(&stack());
    let steps = plan_delete(&observed);
    assert_eq!(
        summaries(&steps),
        vec![
            "delete load balancer k8s-ns-svc-abc",
            "delete target group k8s-ns-svc-80",
            "delete target group k8s-ns-svc-443",
            "delete security group k8s-ns-svc-abc",
        ]
    );
    assert!(matches!(steps.last(), Some(Step::DeleteSecurityGroup { retry_on_dependency_violation: true, .. })));
    let mut sim = Sim::new(observed);
    sim.apply_all(&steps);
    assert_eq!(sim.state, ObservedStack::default());

    // Deletion protection is lifted right before the delete.
    let mut observed = materialize(&stack());
    observed.load_balancer.as_mut().unwrap().0.spec.attributes.insert(DELETION_PROTECTION.into(), "true".into());
    assert!(deletion_protected(&observed));
    let steps = plan_delete(&observed);
    assert_eq!(
        summaries(&steps)[0..2],
        ["set load balancer attributes deletion_protection.enabled", "delete load balancer k8s-ns-svc-abc"]
    );
    let mut sim = Sim::new(observed);
    sim.apply_all(&steps);
    assert_eq!(sim.state, ObservedStack::default());

    // Partial leftovers (e.g. a crash after creating target groups only).
    let mut observed = materialize(&stack());
    observed.load_balancer = None;
    observed.listeners.clear();
    assert_eq!(
        summaries(&plan_delete(&observed)),
        vec![
            "delete target group k8s-ns-svc-80",
            "delete target group k8s-ns-svc-443",
            "delete security group k8s-ns-svc-abc"
        ]
    );
}

/// ALBC's EnhancedDefaultBehavior: an ALPN policy or mutual TLS no longer asked for is set back to
/// none / off; without it (ALBC's default) the listener keeps what it has.
#[test]
fn enhanced_defaults_reset_alpn_and_mutual_tls_no_longer_asked_for() {
    let mut desired = stack();
    desired.listeners[1].protocol = Protocol::Tls;
    desired.listeners[1].certificates = vec!["arn:cert/a".into()];
    let mut observed = materialize(&desired);
    let l = &mut observed.listeners[1].spec;
    l.alpn_policy = Some("HTTP2Preferred".into());
    l.mutual_authentication = Some(crate::lb::MutualAuthentication {
        mode: crate::lb::MtlsMode::Passthrough,
        ..crate::lb::MutualAuthentication::off()
    });
    assert!(plan(&desired, &observed, &opts()).unwrap().is_empty(), "legacy: left as it is");
    let enhanced = PlanOptions { enhanced_defaults: true, ..opts() };
    let steps = plan_and_converge(&desired, &observed, &enhanced);
    let [Step::ModifyListener { change, .. }] = steps.as_slice() else { panic!("{:?}", summaries(&steps)) };
    assert_eq!(change.alpn_policy.as_deref(), Some("None"));
    assert_eq!(change.mutual_authentication, Some(crate::lb::MutualAuthentication::off()));
    // Nothing set: nothing to reset.
    let clean = materialize(&desired);
    assert!(plan(&desired, &clean, &enhanced).unwrap().is_empty());
}
