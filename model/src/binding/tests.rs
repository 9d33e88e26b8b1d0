use super::*;
use crate::crd::{ServiceReference, TargetGroupBindingSpec, TargetGroupBindingStatus};
use crate::endpoints::PodRef;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

fn t(last: u8, port: u16) -> Target {
    Target::new(std::net::IpAddr::from([10, 0, 0, last]), port)
}

fn th(state: HealthState, reason: Option<&str>) -> TargetHealth {
    TargetHealth { state, reason: reason.map(str::to_string), description: None }
}

const STATES: [HealthState; 7] = HealthState::ALL;

fn time(secs: i64) -> Time {
    serde_json::from_value(serde_json::json!(format!("2026-01-01T00:00:{secs:02}Z"))).unwrap()
}

fn tgb(generation: Option<i64>, status: Option<TargetGroupBindingStatus>) -> TargetGroupBinding {
    let mut b = TargetGroupBinding::new(
        "web",
        TargetGroupBindingSpec {
            target_group_arn: Some("arn:tg/web".into()),
            service_ref: ServiceReference { name: "web".into(), port: IntOrString::Int(80) },
            ..Default::default()
        },
    );
    b.metadata.namespace = Some("shop".into());
    b.metadata.generation = generation;
    b.status = status;
    b
}

fn ready_cond(status: &str, reason: &str, message: &str, at: i64) -> Condition {
    Condition {
        type_: READY.into(),
        status: status.into(),
        reason: reason.into(),
        message: message.into(),
        last_transition_time: time(at),
        observed_generation: Some(1),
    }
}

fn status(cond: Condition, observed: Option<i64>, counts: Option<(i32, i32)>) -> TargetGroupBindingStatus {
    TargetGroupBindingStatus {
        observed_generation: observed,
        conditions: vec![cond],
        registered_targets: counts.map(|c| c.0),
        healthy_targets: counts.map(|c| c.1),
        owned_targets: None,
    }
}

#[test]
fn pending_gates_are_gated_pods_not_yet_true() {
    let pod = |name: &str, gated, st: Option<&str>| {
        Some(PodRef { name: name.into(), gated, gate_status: st.map(str::to_string) })
    };
    let mut d = DesiredTargets::default();
    d.targets.insert(t(1, 80), pod("a", true, None));
    d.targets.insert(t(2, 80), pod("b", true, Some("False")));
    d.targets.insert(t(3, 80), pod("c", true, Some("True")));
    d.targets.insert(t(4, 80), pod("d", false, None));
    d.targets.insert(t(5, 80), None);
    assert_eq!(pending_gates(&d), vec![(t(1, 80), "a"), (t(2, 80), "b")]);
}

#[test]
fn settling_targets_are_initial_and_not_gated() {
    let reg: BTreeMap<Target, TargetHealth> =
        STATES.iter().enumerate().map(|(i, s)| (t(i as u8, 80), TargetHealth::new(*s))).collect();
    assert_eq!(settling_targets(Some(&reg), &HashSet::new()), vec![t(0, 80)], "only the initial one");
    assert!(settling_targets(Some(&reg), &HashSet::from([t(0, 80)])).is_empty(), "a gated one is watched already");
    assert!(settling_targets(None, &HashSet::new()).is_empty(), "unknown registrations settle nothing");
}

/// Every combination: AWS's not-registered answer wins; a target just registered or never
/// described is "registering"; otherwise the health held decides, True only when healthy.
#[test]
fn gate_condition_exhaustive() {
    let lost_answers =
        [None, Some(th(HealthState::Unused, Some("Target.NotRegistered"))), Some(th(HealthState::Draining, None))];
    let known: Vec<Option<TargetHealth>> = std::iter::once(None).chain(STATES.map(|s| Some(th(s, None)))).collect();
    for lost in &lost_answers {
        for k in &known {
            for fresh in [false, true] {
                let c = gate_condition(lost.as_ref(), k.as_ref(), fresh);
                let want = match (lost, k, fresh) {
                    (Some(h), _, _) => GateCondition::from_health(h),
                    (None, Some(h), false) => GateCondition::from_health(h),
                    _ => GateCondition::registering(),
                };
                assert_eq!(c, want, "lost {lost:?}, known {k:?}, just registered {fresh}");
                let healthy_known = k.as_ref().is_some_and(|h| h.state == HealthState::Healthy);
                assert_eq!(
                    c.status == "True",
                    lost.is_none() && !fresh && healthy_known,
                    "True exactly for a described healthy target: lost {lost:?}, known {k:?}, fresh {fresh}"
                );
            }
        }
    }
}

#[test]
fn gate_patch_table() {
    let cur = |status: &str, reason: Option<&str>, at: Option<i64>| CurrentCondition {
        status: status.into(),
        reason: reason.map(Into::into),
        message: None,
        last_transition_time: at.map(time),
    };
    let healthy = GateCondition { status: "True", reason: None, message: None };
    let initial = GateCondition { status: "False", reason: Some("Elb.InitialHealthChecking".into()), message: None };
    // (want, current, expected patch)
    let cases = [
        (&healthy, None, Some(GatePatch { status_changed: true, keep_transition: None })),
        (&healthy, Some(cur("True", None, Some(5))), None),
        (&healthy, Some(cur("False", None, Some(5))), Some(GatePatch { status_changed: true, keep_transition: None })),
        (&initial, Some(cur("False", Some("Elb.InitialHealthChecking"), Some(5))), None),
        // Same status, new reason: the transition time stays.
        (
            &initial,
            Some(cur("False", Some("Elb.RegistrationInProgress"), Some(5))),
            Some(GatePatch { status_changed: false, keep_transition: Some(time(5)) }),
        ),
        (
            &initial,
            Some(cur("False", Some("Elb.RegistrationInProgress"), None)),
            Some(GatePatch { status_changed: false, keep_transition: None }),
        ),
        (
            &initial,
            Some(cur("Unknown", None, Some(5))),
            Some(GatePatch { status_changed: true, keep_transition: None }),
        ),
    ];
    for (want, current, expected) in cases {
        assert_eq!(gate_patch(want, current.as_ref()), expected, "want {want:?}, current {current:?}");
    }
    let released = GateCondition::binding_deleted();
    assert_eq!(
        gate_patch(&released, Some(&cur("True", Some(crate::readiness::REASON_BINDING_DELETED), None)))
            .map(|p| p.status_changed),
        Some(false),
        "message differs, status same"
    );
}

#[test]
fn status_change_table() {
    let want = ReadyStatus { ready: true, reason: "Synced".into(), message: "2 targets".into(), counts: Some((2, 1)) };
    let same = status(ready_cond("True", "Synced", "2 targets", 1), Some(3), Some((2, 1)));
    let cases: Vec<(&str, TargetGroupBinding, StatusChange)> = vec![
        ("no status yet", tgb(Some(3), None), StatusChange::Condition),
        ("identical", tgb(Some(3), Some(same.clone())), StatusChange::None),
        ("new generation", tgb(Some(4), Some(same.clone())), StatusChange::Condition),
        (
            "status differs",
            tgb(Some(3), Some(status(ready_cond("False", "Synced", "2 targets", 1), Some(3), Some((2, 1))))),
            StatusChange::Condition,
        ),
        (
            "reason differs",
            tgb(
                Some(3),
                Some(status(ready_cond("True", "SyncedWithOverlayIPs", "2 targets", 1), Some(3), Some((2, 1)))),
            ),
            StatusChange::Condition,
        ),
        (
            "message differs",
            tgb(Some(3), Some(status(ready_cond("True", "Synced", "1 targets", 1), Some(3), Some((2, 1))))),
            StatusChange::Counts,
        ),
        (
            "counts differ",
            tgb(Some(3), Some(status(ready_cond("True", "Synced", "2 targets", 1), Some(3), Some((2, 2))))),
            StatusChange::Counts,
        ),
        (
            "counts absent",
            tgb(Some(3), Some(status(ready_cond("True", "Synced", "2 targets", 1), Some(3), None))),
            StatusChange::Counts,
        ),
    ];
    for (what, b, expected) in cases {
        assert_eq!(status_change(&b, &want), expected, "{what}");
    }
    // A not-ready status leaves counts alone: only condition and message count.
    let refused = ReadyStatus::not_ready("ServiceNotFound", "no Service");
    let b = tgb(Some(3), Some(status(ready_cond("False", "ServiceNotFound", "no Service", 1), Some(3), Some((9, 9)))));
    assert_eq!(status_change(&b, &refused), StatusChange::None);
}

#[test]
fn ready_transition_kept_only_while_status_unchanged() {
    let b = tgb(Some(1), Some(status(ready_cond("True", "Synced", "m", 7), Some(1), None)));
    let ready = ReadyStatus { ready: true, reason: "SyncedWithOverlayIPs".into(), message: "x".into(), counts: None };
    assert_eq!(ready_transition(&b, &ready), Some(time(7)));
    assert_eq!(ready_transition(&b, &ReadyStatus::not_ready("X", "y")), None);
    assert_eq!(ready_transition(&tgb(Some(1), None), &ready), None);
    assert!(is_ready(&b));
    assert!(!is_ready(&tgb(Some(1), None)));
}

#[test]
fn synced_status_counts_and_reason() {
    let reg: BTreeMap<Target, TargetHealth> =
        STATES.iter().enumerate().map(|(i, s)| (t(i as u8, 80), TargetHealth::new(*s))).collect();
    let mut d = DesiredTargets::default();
    d.targets.insert(t(1, 80), None);
    d.targets.insert(t(2, 80), None);
    let s = synced_status(&reg, &d, &Plan::default());
    // initial, healthy, unhealthy, unavailable are registered; draining and unused are not.
    assert_eq!(
        s,
        ReadyStatus {
            ready: true,
            reason: "Synced".into(),
            message: "4 targets registered for 2 endpoints".into(),
            counts: Some((4, 1)),
        }
    );
    d.stats.not_ready = 3;
    let plan = Plan { outside_vpc: vec!["100.64.0.1".parse().unwrap()], ..Default::default() };
    let s = synced_status(&reg, &d, &plan);
    assert!(!s.ready);
    assert_eq!(s.reason, "SyncedWithOverlayIPs");
    assert_eq!(
        s.message,
        "4 targets registered for 2 endpoints; 3 endpoints not ready; 1 pod IPs outside the VPC not registered"
    );
}

/// Randomised against the definition: the deletion set is exactly the non-draining targets,
/// restricted to the owned ones in multi-cluster mode, in the order AWS listed them.
#[test]
fn deletion_targets_random() {
    for seed in 0..300 {
        let mut rng = fastrand::Rng::with_seed(seed);
        let registered: Vec<(Target, HealthState)> =
            (0..rng.usize(0..20)).map(|i| (t(i as u8, 80), STATES[rng.usize(..STATES.len())])).collect();
        let owned: Option<BTreeSet<Target>> =
            rng.bool().then(|| (0..25).filter(|_| rng.bool()).map(|i| t(i as u8, 80)).collect());
        let got = deletion_targets(registered.iter().copied(), owned.as_ref());
        let want: Vec<Target> = registered
            .iter()
            .filter(|(_, s)| !matches!(s, HealthState::Draining | HealthState::UnhealthyDraining))
            .filter(|(t, _)| owned.as_ref().is_none_or(|o| o.contains(t)))
            .map(|(t, _)| *t)
            .collect();
        assert_eq!(got, want, "seed {seed}: registered {registered:?}, owned {owned:?}");
        if let Some(o) = &owned {
            assert!(got.iter().all(|t| o.contains(t)), "seed {seed}: never another cluster's target");
        }
    }
}

#[test]
fn owned_after_random() {
    for seed in 0..300 {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut pick = || -> BTreeSet<Target> { (0..12).filter(|_| rng.bool()).map(|i| t(i, 80)).collect() };
        let (owned, added, removed) = (pick(), pick(), pick());
        let got = owned_after(&owned, &added, &removed);
        let want: BTreeSet<Target> = owned.union(&added).filter(|t| !removed.contains(t)).copied().collect();
        assert_eq!(got, want, "seed {seed}: ({owned:?} + {added:?}) - {removed:?}");
        assert_eq!(
            parse_owned_targets(&owned_targets_value(&got)),
            got,
            "seed {seed}: the ConfigMap value round-trips"
        );
    }
}

#[test]
fn owned_targets_parse_v4_v6_and_skip_garbage() {
    let parsed = parse_owned_targets("10.0.0.1:80, [fd00::1]:443,nonsense,10.0.0.1:99999,,");
    let shown: Vec<String> = parsed.iter().map(Target::to_string).collect();
    assert_eq!(shown, vec!["10.0.0.1:80", "[fd00::1]:443"]);
    assert_eq!(owned_targets_value(&BTreeSet::new()), "");
    assert!(parse_owned_targets("").is_empty());
}

#[test]
fn owned_quic_targets_keep_their_server_id_as_albc_writes_it() {
    let raw = "10.0.0.1:443:0x0123456789abcdef,[fd00::1]:443:0x0000000000000001,10.0.0.2:443:0xZZ";
    let parsed = parse_owned_targets(raw);
    assert_eq!(parsed.len(), 2, "a malformed server ID is no target");
    assert!(parsed.iter().all(|t| t.quic.is_some()));
    assert_eq!(owned_targets_value(&parsed), "10.0.0.1:443:0x0123456789abcdef,[fd00::1]:443:0x0000000000000001");
}

#[test]
fn next_sync_table() {
    let s = Duration::from_secs;
    let base = NextSync {
        gates_pending: 0,
        settling: 0,
        poll_in: s(5),
        verify_in: Some(s(600)),
        sync_period: s(3600),
        write_back_in: None,
    };
    let cases = [
        ("quiet: at the verification", base, s(600)),
        ("no verification scheduled: the sync period", NextSync { verify_in: None, ..base }, s(3600)),
        ("gates pending: at the poll", NextSync { gates_pending: 2, ..base }, s(5)),
        ("targets settling: at the poll", NextSync { settling: 1, ..base }, s(5)),
        ("write-back held: sooner", NextSync { write_back_in: Some(s(1)), ..base }, s(1)),
        ("write-back later than the poll", NextSync { gates_pending: 1, write_back_in: Some(s(9)), ..base }, s(5)),
        ("never hot", NextSync { gates_pending: 1, poll_in: Duration::ZERO, ..base }, MIN_RESYNC),
        ("verification overdue", NextSync { verify_in: Some(Duration::ZERO), ..base }, MIN_RESYNC),
    ];
    for (what, n, want) in cases {
        assert_eq!(next_sync(&n), want, "{what}: {n:?}");
    }
}

#[test]
fn which_bindings_an_event_wakes() {
    let mut b = tgb(Some(1), None);
    assert!(binds_service(&b, "shop", "web"));
    assert!(!binds_service(&b, "other", "web"), "same Service name in another namespace");
    assert!(!binds_service(&b, "shop", "api"));

    assert_eq!(
        bindings_gating([
            "target-health.elbv2.k8s.aws/web",
            "example.com/other",
            "target-health.elbv2.k8s.aws/",
            "target-health.elbv2.k8s.aws/api"
        ]),
        vec!["web", "api"]
    );

    let owner = |kind: &str, name: &str| OwnerReference {
        api_version: "v1".into(),
        kind: kind.into(),
        name: name.into(),
        uid: "u".into(),
        ..Default::default()
    };
    assert!(owner_services(&b).is_empty());
    b.metadata.owner_references = Some(vec![owner("Service", "web"), owner("Deployment", "x"), owner("Service", "w2")]);
    assert_eq!(owner_services(&b), vec!["web", "w2"]);

    assert!(ingress_stack_labels(&b).is_empty());
    b.metadata.labels = Some(
        [("ingress.k8s.aws/stack", "g"), ("ingress.k8s.aws/stack-namespace", "shop"), ("app", "web")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    let labels = ingress_stack_labels(&b);
    assert_eq!(labels.keys().collect::<Vec<_>>(), vec!["ingress.k8s.aws/stack", "ingress.k8s.aws/stack-namespace"]);
}
