//! EndpointSlices → desired targets → plan: the invariants the target-group writes rest on.

use super::slices::{Expected, GATE, World, address, world};
use lbc_model::endpoints::{DesiredTargets, EndpointInputs, SliceInfo, desired_targets};
use lbc_model::net::VpcCidrs;
use lbc_model::plan::{Plan, PlanInput, Refusal, batches, plan};
use lbc_model::target::{HealthState, Target};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

fn desired(w: &World) -> DesiredTargets {
    let input = EndpointInputs {
        service_port: &w.service_port,
        family: w.family,
        gate: GATE,
        pod: |n: &str| w.pods.get(n).cloned().map(std::sync::Arc::new),
        node: |n: &str| w.nodes.get(n).copied(),
        quic: false,
    };
    let infos: Vec<SliceInfo> = w.slices.iter().map(SliceInfo::of).collect();
    desired_targets(&infos, &input)
}

fn health() -> impl Strategy<Value = HealthState> {
    prop_oneof![
        Just(HealthState::Initial),
        Just(HealthState::Healthy),
        Just(HealthState::Unhealthy),
        Just(HealthState::UnhealthyDraining),
        Just(HealthState::Unused),
        Just(HealthState::Draining),
        Just(HealthState::Unavailable),
    ]
}

fn target() -> impl Strategy<Value = Option<Target>> {
    (address(), prop_oneof![Just(8080u16), Just(9090), Just(80)])
        .prop_map(|(a, port)| a.parse::<IpAddr>().ok().map(|ip| Target::new(ip, port)))
}

/// What the target group holds before the plan, and how the plan is run.
#[derive(Clone, Debug)]
struct Group {
    registered: BTreeMap<Target, HealthState>,
    /// Multi-cluster: the targets this binding registered (others are another cluster's).
    owned: Option<BTreeSet<Target>>,
    vpc: Vec<&'static str>,
    allow_outside_vpc: bool,
    /// Deregistered targets linger as draining (else they are gone at once).
    linger: bool,
}

/// Registered targets: some of `ours` (the world's), some strangers.
fn group(ours: Vec<Target>, outside_vpc: Outside) -> impl Strategy<Value = Group> {
    let pick = if ours.is_empty() {
        Just(Vec::new()).boxed()
    } else {
        proptest::sample::subsequence(ours.clone(), 0..=ours.len()).boxed()
    };
    let strangers = proptest::collection::vec(target(), 0..4);
    let vpc = prop_oneof![
        4 => Just(vec!["10.0.0.0/16", "2600:1f18::/56"]),
        1 => Just(vec!["10.0.0.0/16"]),
        1 => Just(vec![]),
    ];
    let allow = match outside_vpc {
        Outside::Either => any::<bool>().boxed(),
        Outside::Allowed => Just(true).boxed(),
        Outside::Refused => Just(false).boxed(),
    };
    (pick, strangers, any::<bool>(), vpc, allow, any::<bool>()).prop_flat_map(
        |(mine, strangers, multi_cluster, vpc, allow, linger)| {
            let all: Vec<Target> = mine.into_iter().chain(strangers.into_iter().flatten()).collect();
            let states = proptest::collection::vec(health(), all.len());
            let owned_mask = proptest::collection::vec(any::<bool>(), all.len());
            (Just(all), states, owned_mask).prop_map(move |(all, states, mask)| Group {
                registered: all.iter().copied().zip(states).collect(),
                owned: multi_cluster.then(|| all.iter().zip(&mask).filter(|(_, m)| **m).map(|(t, _)| *t).collect()),
                vpc: vpc.clone(),
                allow_outside_vpc: allow,
                linger,
            })
        },
    )
}

/// Whether pod IPs outside the VPC may be registered (`--allow-outside-vpc`-like opt-in).
#[derive(Clone, Copy, Debug)]
enum Outside {
    Either,
    Allowed,
    Refused,
}

fn case_with(outside_vpc: Outside) -> impl Strategy<Value = (World, Group)> {
    world().prop_flat_map(move |w| {
        let e = w.expected();
        let g = group(e.non_terminating.into_iter().chain(e.terminating).collect(), outside_vpc);
        (Just(w), g)
    })
}

fn case() -> impl Strategy<Value = (World, Group)> {
    case_with(Outside::Either)
}

/// The wipe guard as the issue states it: with live endpoints, a target group that serves
/// something still serves something after the plan's writes.
fn wipe_guard_holds(w: &World, g: &Group, live: usize) -> Result<(), TestCaseError> {
    let d = desired(w);
    if let Ok(p) = run(&d, g, live) {
        let (before, after) = (ours_serving(g, &d), ours_serving(&apply(g, &p), &d));
        prop_assert!(before == 0 || after > 0, "{} serving targets before, none after: {:?}", before, p);
    }
    Ok(())
}

fn run(d: &DesiredTargets, g: &Group, live: usize) -> Result<Plan, Refusal> {
    let vpc = VpcCidrs::parse(&g.vpc).unwrap();
    plan(&PlanInput {
        desired: d.targets.keys().copied().collect(),
        registered: &g.registered,
        owned: g.owned.as_ref(),
        vpc: &vpc,
        allow_outside_vpc: g.allow_outside_vpc,
        live_endpoints: live,
        wanted_port: &d.stats.wanted_port,
        slice_ports: &d.stats.slice_ports,
    })
}

/// The target group after the plan's writes.
fn apply(g: &Group, p: &Plan) -> Group {
    let mut after = g.clone();
    for t in p.register.iter().chain(&p.register_any_az) {
        after.registered.insert(*t, HealthState::Initial);
        if let Some(owned) = after.owned.as_mut() {
            owned.insert(*t);
        }
    }
    for t in &p.deregister {
        if g.linger {
            after.registered.insert(*t, HealthState::Draining);
        } else {
            after.registered.remove(t);
        }
    }
    after
}

/// Registered, not leaving, and ours: registered by this binding, or serving one of its endpoints
/// (multi-cluster groups hold other clusters' targets too).
fn ours_serving(g: &Group, d: &DesiredTargets) -> usize {
    let ours = |t: &Target| g.owned.as_ref().is_none_or(|o| o.contains(t)) || d.targets.contains_key(t);
    g.registered.iter().filter(|(t, s)| !s.is_draining() && ours(t)).count()
}

proptest! {
    #[test]
    fn desired_targets_are_exactly_what_the_slices_allow(w in world()) {
        let d = desired(&w);
        let e: Expected = w.expected();
        let got: BTreeSet<Target> = d.targets.keys().copied().collect();
        prop_assert!(e.ready.is_subset(&got), "ready endpoints left out: {:?}", e.ready.difference(&got).collect::<Vec<_>>());
        prop_assert!(got.is_subset(&e.non_terminating),
            "targets no live endpoint of the bound port asked for: {:?}", got.difference(&e.non_terminating).collect::<Vec<_>>());
        let s = &d.stats;
        prop_assert_eq!(s.seen, s.ready + s.gated + s.not_ready + s.terminating + s.pod_unknown, "{:?}", s);
    }

    #[test]
    fn plan_keeps_ready_endpoints_and_never_registers_terminating_ones((w, g) in case(), live_extra in 0usize..3) {
        let d = desired(&w);
        let e = w.expected();
        let Ok(p) = run(&d, &g, e.live_anywhere + live_extra) else { return Ok(()) };
        let deregistered: BTreeSet<Target> = p.deregister.iter().copied().collect();
        prop_assert!(e.ready.is_disjoint(&deregistered), "deregisters ready endpoints: {:?}",
            e.ready.intersection(&deregistered).collect::<Vec<_>>());
        let terminating_only: BTreeSet<Target> = e.terminating.difference(&e.non_terminating).copied().collect();
        for t in p.register.iter().chain(&p.register_any_az) {
            prop_assert!(!terminating_only.contains(t), "registers terminating endpoint {}", t);
            prop_assert!(d.targets.contains_key(t), "registers {} that is not desired", t);
        }
    }

    #[test]
    fn batches_never_exceed_the_batch_size((w, g) in case(), size in 0usize..8) {
        let Ok(p) = run(&desired(&w), &g, 0) else { return Ok(()) };
        let mut calls = 0;
        for list in [&p.register, &p.register_any_az, &p.deregister] {
            let parts: Vec<&[Target]> = batches(list, size).collect();
            prop_assert!(parts.iter().all(|b| !b.is_empty() && b.len() <= size.max(1)));
            prop_assert_eq!(parts.concat(), list.clone());
            calls += parts.len();
        }
        prop_assert_eq!(calls, p.call_floor(size));
    }

    #[test]
    fn planning_again_after_the_writes_plans_nothing((w, g) in case()) {
        let d = desired(&w);
        let live = w.expected().live_anywhere;
        let Ok(first) = run(&d, &g, live) else { return Ok(()) };
        let again = run(&d, &apply(&g, &first), live);
        prop_assert!(matches!(&again, Ok(p) if p.is_empty()), "first {:?}, then {:?}", first, again);
    }

    #[test]
    fn refusals_happen_only_while_endpoints_live((w, g) in case(), live in 0usize..3) {
        if let Err(Refusal::WouldDeregisterAll { registered, live_endpoints, .. }) = run(&desired(&w), &g, live) {
            prop_assert!(live > 0 && live_endpoints == live && registered > 0);
        }
    }

    #[test]
    fn never_deregisters_every_target_while_endpoints_live((w, g) in case_with(Outside::Allowed), live in 1usize..3) {
        wipe_guard_holds(&w, &g, live)?;
    }

    // Found by this property: with only outside-VPC pod IPs desired (no opt-in), the guard looked at
    // `desired.is_empty()` and let the plan empty the group (one ready endpoint 100.64.0.1, VPC
    // 10.0.0.0/16, registered {10.0.0.0:9090}); it now looks at what would be left registered.
    #[test]
    fn never_empties_the_group_for_pod_ips_outside_the_vpc((w, g) in case_with(Outside::Refused), live in 1usize..3) {
        wipe_guard_holds(&w, &g, live)?;
    }
}
