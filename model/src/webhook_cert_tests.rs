use super::*;
use proptest::prelude::*;
use std::collections::HashMap;

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(secs).unwrap()
}

fn secs(n: i64) -> SignedDuration {
    SignedDuration::from_secs(n)
}

fn names() -> BTreeSet<String> {
    ["lbc-webhook.kube-system.svc".to_string()].into()
}

/// Lifetimes in seconds so that a test can walk through several CA generations.
fn policy() -> Policy {
    Policy {
        ca_lifetime: secs(30_000),
        leaf_lifetime: secs(9_000),
        settle: secs(60),
        retire_after: secs(600),
        names: names(),
    }
}

fn validity(from: i64, to: i64) -> Validity {
    Validity { not_before: t(from), not_after: t(to) }
}

fn ca(id: &str, from: i64, to: i64) -> Ca {
    Ca { id: id.into(), validity: validity(from, to) }
}

fn leaf(id: &str, issuer: &str, from: i64, to: i64) -> Leaf {
    Leaf::Present(LeafCert { id: id.into(), validity: validity(from, to), names: names(), issuer: Some(issuer.into()) })
}

/// A settled Secret at 1000 s: CA `a` (0..30000), leaf `l` from it (1000−300..10000).
fn settled() -> Observed {
    Observed {
        bundle: vec![ca("a", 0, 30_000)],
        ca_key: CaKey::Of("a".into()),
        leaf: leaf("l", "a", 700, 10_000),
        request: None,
    }
}

/// A Secret written by the old chart (or ALBC's): its CA `h`, no ca.key, a leaf from `h`.
fn helm() -> Observed {
    Observed {
        bundle: vec![ca("h", 0, 315_360_000)],
        ca_key: CaKey::Missing,
        leaf: leaf("hl", "h", 0, 315_360_000),
        request: None,
    }
}

struct Case {
    name: &'static str,
    obs: Observed,
    trusted_since: Option<i64>,
    now: i64,
    new_ca: Option<CaReason>,
    new_leaf: Option<LeafReason>,
    retire: &'static [&'static str],
    wait: Option<Wait>,
}

#[test]
fn plan_table() {
    let with = |f: &dyn Fn(&mut Observed)| {
        let mut o = settled();
        f(&mut o);
        o
    };
    let rotating = || Observed {
        // `b` is current (just added); the leaf is still from `a`.
        bundle: vec![ca("b", 2000, 32_000), ca("a", 0, 30_000)],
        ca_key: CaKey::Of("b".into()),
        leaf: leaf("l", "a", 700, 10_000),
        request: None,
    };
    let switched = || Observed {
        bundle: vec![ca("b", 2000, 32_000), ca("a", 0, 30_000)],
        ca_key: CaKey::Of("b".into()),
        leaf: leaf("l2", "b", 2700, 12_000),
        request: None,
    };
    let cases = vec![
        Case {
            name: "no Secret yet: a CA and a leaf at once (nothing in service to protect)",
            obs: Observed::empty(),
            trusted_since: None,
            now: 1000,
            new_ca: Some(CaReason::NoKey),
            new_leaf: Some(LeafReason::Missing),
            retire: &[],
            wait: None,
        },
        Case {
            name: "settled: nothing to do",
            obs: settled(),
            trusted_since: Some(1000),
            now: 5000,
            new_ca: None,
            new_leaf: None,
            retire: &[],
            wait: None,
        },
        Case {
            name: "a third of the leaf's life left: a new leaf from the same CA, no wait for trust",
            obs: settled(),
            trusted_since: None,
            now: 10_000 - 9300 / 3,
            new_ca: None,
            new_leaf: Some(LeafReason::Renewal),
            retire: &[],
            wait: None,
        },
        Case {
            name: "leaf expired",
            obs: settled(),
            trusted_since: Some(1000),
            now: 10_000,
            new_ca: None,
            new_leaf: Some(LeafReason::Expired),
            retire: &[],
            wait: None,
        },
        Case {
            name: "leaf for other names",
            obs: with(&|o| {
                if let Leaf::Present(l) = &mut o.leaf {
                    l.names = ["old-webhook.kube-system.svc".to_string()].into();
                }
            }),
            trusted_since: Some(1000),
            now: 5000,
            new_ca: None,
            new_leaf: Some(LeafReason::NamesChanged),
            retire: &[],
            wait: None,
        },
        Case {
            name: "leaf signed by no CA of the bundle",
            obs: with(&|o| {
                if let Leaf::Present(l) = &mut o.leaf {
                    l.issuer = None;
                }
            }),
            trusted_since: Some(1000),
            now: 5000,
            new_ca: None,
            new_leaf: Some(LeafReason::NotFromBundle),
            retire: &[],
            wait: None,
        },
        Case {
            name: "unusable pair",
            obs: with(&|o| o.leaf = Leaf::Unusable("key of another certificate".into())),
            trusted_since: Some(1000),
            now: 5000,
            new_ca: None,
            new_leaf: Some(LeafReason::Unusable("key of another certificate".into())),
            retire: &[],
            wait: None,
        },
        Case {
            name: "leaf rotation asked for",
            obs: with(&|o| o.request = Some(Ok(Rotate::Leaf))),
            trusted_since: Some(1000),
            now: 5000,
            new_ca: None,
            new_leaf: Some(LeafReason::Requested),
            retire: &[],
            wait: None,
        },
        Case {
            name: "CA rotation asked for: the new CA joins the bundle, the leaf in service stays",
            obs: with(&|o| o.request = Some(Ok(Rotate::Ca))),
            trusted_since: Some(1000),
            now: 5000,
            new_ca: Some(CaReason::Requested),
            new_leaf: None,
            retire: &[],
            wait: Some(Wait::Trust),
        },
        Case {
            name: "CA with a third of its life left",
            obs: settled(),
            trusted_since: Some(1000),
            now: 20_000,
            new_ca: Some(CaReason::Renewal),
            new_leaf: Some(LeafReason::Expired),
            retire: &[],
            wait: None,
        },
        Case {
            name: "ca.key of no bundle CA",
            obs: with(&|o| o.ca_key = CaKey::Unmatched("not a private key".into())),
            trusted_since: None,
            now: 5000,
            new_ca: Some(CaReason::KeyMatchesNoCa("not a private key".into())),
            new_leaf: None,
            retire: &[],
            wait: Some(Wait::Trust),
        },
        Case {
            name: "new CA not trusted by every webhook yet: wait",
            obs: rotating(),
            trusted_since: None,
            now: 2100,
            new_ca: None,
            new_leaf: None,
            retire: &[],
            wait: Some(Wait::Trust),
        },
        Case {
            name: "trusted, settling",
            obs: rotating(),
            trusted_since: Some(2100),
            now: 2150,
            new_ca: None,
            new_leaf: None,
            retire: &[],
            wait: Some(Wait::Settle { until: t(2160) }),
        },
        Case {
            name: "trusted for the settle time: leaf from the new CA",
            obs: rotating(),
            trusted_since: Some(2100),
            now: 2160,
            new_ca: None,
            new_leaf: Some(LeafReason::CaSwitch),
            retire: &[],
            wait: None,
        },
        Case {
            name: "leaf from the new CA just written: the old CA stays",
            obs: switched(),
            trusted_since: Some(2100),
            now: 3000 + 599,
            new_ca: None,
            new_leaf: None,
            retire: &[],
            wait: None,
        },
        Case {
            name: "leaf from the new CA out for retire_after: the old CA leaves",
            obs: switched(),
            trusted_since: Some(2100),
            now: 3000 + 600,
            new_ca: None,
            new_leaf: None,
            retire: &["a"],
            wait: None,
        },
        Case {
            name: "chart Secret: a CA of ours joins the chart's CA, the chart's leaf keeps serving",
            obs: helm(),
            trusted_since: None,
            now: 1000,
            new_ca: Some(CaReason::NoKey),
            new_leaf: None,
            retire: &[],
            wait: Some(Wait::Trust),
        },
        Case {
            name: "an expired old CA leaves even while the leaf switch waits",
            obs: Observed { bundle: vec![ca("b", 2000, 32_000), ca("a", 0, 30_000), ca("old", 0, 2500)], ..rotating() },
            trusted_since: None,
            now: 2600,
            new_ca: None,
            new_leaf: None,
            retire: &["old"],
            wait: Some(Wait::Trust),
        },
        Case {
            name: "a bad annotation is removed, nothing else",
            obs: with(&|o| o.request = Some(Err("x".into()))),
            trusted_since: Some(1000),
            now: 5000,
            new_ca: None,
            new_leaf: None,
            retire: &[],
            wait: None,
        },
    ];
    for c in cases {
        let p = plan(&c.obs, &policy(), c.trusted_since.map(t), t(c.now));
        assert_eq!(p.new_ca, c.new_ca, "{}: new_ca", c.name);
        assert_eq!(p.new_leaf, c.new_leaf, "{}: new_leaf", c.name);
        assert_eq!(p.retire, c.retire.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "{}: retire", c.name);
        assert_eq!(p.wait, c.wait, "{}: wait", c.name);
        assert_eq!(p.clear_request, c.obs.request.is_some(), "{}: clear_request", c.name);
    }
}

#[test]
fn wake_at_is_the_first_deadline() {
    let p = plan(&settled(), &policy(), Some(t(1000)), t(5000));
    assert!(!p.writes());
    // Leaf 700..10000 renews at 10000 − 9300/3 = 6900; CA renews at 20000.
    assert_eq!(p.wake_at, Some(t(6900)));
}

#[test]
fn leaves_never_outlive_their_ca() {
    let p = policy();
    let ca = validity(0, 1000);
    assert_eq!(p.leaf_validity(t(500), &ca), validity(200, 1000));
    assert_eq!(p.leaf_validity(t(0), &validity(0, 100_000)), validity(-300, 9000));
}

#[test]
fn bundle_order_current_first_retired_out() {
    let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(next_bundle(&ids(&["h"]), &"n".into(), &[]), ids(&["n", "h"]));
    assert_eq!(next_bundle(&ids(&["b", "a"]), &"b".into(), &ids(&["a"])), ids(&["b"]));
    assert_eq!(next_bundle(&ids(&["a", "b", "a"]), &"b".into(), &[]), ids(&["b", "a"]));
}

#[test]
fn ca_bundle_patches() {
    assert!(needs_ca_bundle(b"A", None), "a configuration without caBundle gets ours");
    assert!(needs_ca_bundle(b"A", Some(b"B")), "a reset or foreign caBundle is replaced");
    assert!(!needs_ca_bundle(b"A", Some(b"A")));
    assert!(!needs_ca_bundle(b"", None), "no Secret yet: nothing is written");
    let hooks: Vec<Vec<CertId>> = vec![vec!["a".into(), "b".into()], vec!["b".into()]];
    assert!(all_trust(hooks.iter().map(Vec::as_slice), &"b".into()));
    assert!(!all_trust(hooks.iter().map(Vec::as_slice), &"a".into()));
}

#[test]
fn serving_and_swap() {
    let v = validity(100, 200);
    assert_eq!(serving(None, t(150)), Err(NotServing::NoCertificate));
    assert_eq!(serving(Some(&v), t(99)), Err(NotServing::NotYetValid(t(100))));
    assert_eq!(serving(Some(&v), t(200)), Err(NotServing::Expired(t(200))));
    assert_eq!(serving(Some(&v), t(150)), Ok(()));
    let old = validity(0, 180);
    assert_eq!(swap(Some(&v), Some(&old), t(150)), Swap::Install);
    assert_eq!(swap(None, Some(&old), t(150)), Swap::Keep, "a Secret emptied by hand keeps the working pair");
    assert_eq!(swap(Some(&validity(160, 300)), Some(&old), t(150)), Swap::Keep, "not valid yet: keep");
    assert_eq!(swap(None, Some(&old), t(180)), Swap::Clear, "never an expired pair");
}

#[test]
fn rotate_annotation_values() {
    assert_eq!(parse_rotate("leaf"), Ok(Rotate::Leaf));
    assert_eq!(parse_rotate(" ca "), Ok(Rotate::Ca));
    let e = parse_rotate("now").unwrap_err();
    assert!(e.contains("\"now\"") && e.contains("\"leaf\"") && e.contains(ROTATE_ANNOTATION), "{e}");
}

// ---------------------------------------------------------------------------------------------
// A simulated cluster: the leader plans and writes the Secret, then patches the configurations;
// the API server trusts the configurations' bundle `apiserver_lag` seconds later; each replica
// serves the Secret's leaf `replica_lag` seconds later. No admission request may fail.

#[derive(Clone, Debug)]
struct SimLeaf {
    id: CertId,
    validity: Validity,
    issuer: CertId,
}

#[derive(Clone, Debug)]
enum Event {
    Nothing,
    RotateLeaf,
    RotateCa,
    /// Another replica takes over: what this one observed of the configurations is lost.
    NewLeader,
    /// No leader for this many seconds.
    Outage(i64),
}

struct Sim {
    policy: Policy,
    now: i64,
    made: u32,
    cas: HashMap<CertId, Validity>,
    bundle: Vec<CertId>,
    current: Option<CertId>,
    leaf: Option<SimLeaf>,
    request: Option<Rotate>,
    /// What the configurations' caBundle holds, and since when (the leader patches after writing).
    configs: Vec<(i64, Vec<CertId>)>,
    /// The Secret's leaf over time.
    leaves: Vec<(i64, SimLeaf)>,
    trusted_since: Option<(CertId, i64)>,
    down_until: i64,
}

impl Sim {
    fn fresh(policy: Policy) -> Self {
        Self {
            policy,
            now: 0,
            made: 0,
            cas: HashMap::new(),
            bundle: vec![],
            current: None,
            leaf: None,
            request: None,
            configs: vec![],
            leaves: vec![],
            trusted_since: None,
            down_until: 0,
        }
    }

    /// The chart's Secret, trusted by the configurations from the start.
    fn from_chart(policy: Policy) -> Self {
        let mut s = Self::fresh(policy);
        let h = validity(-1_000_000, 100_000_000);
        s.cas.insert("helm".into(), h);
        s.bundle = vec!["helm".into()];
        let l = SimLeaf { id: "helm-leaf".into(), validity: h, issuer: "helm".into() };
        s.leaf = Some(l.clone());
        s.leaves.push((i64::MIN, l));
        s.configs.push((i64::MIN, vec!["helm".into()]));
        s
    }

    fn observed(&self) -> Observed {
        let bundle: Vec<Ca> = self.bundle.iter().map(|id| Ca { id: id.clone(), validity: self.cas[id] }).collect();
        Observed {
            ca_key: self.current.clone().map_or(CaKey::Missing, CaKey::Of),
            leaf: self.leaf.as_ref().map_or(Leaf::Missing, |l| {
                Leaf::Present(LeafCert {
                    id: l.id.clone(),
                    validity: l.validity,
                    names: self.policy.names.clone(),
                    issuer: self.bundle.contains(&l.issuer).then(|| l.issuer.clone()),
                })
            }),
            bundle,
            request: self.request.map(Ok),
        }
    }

    fn id(&mut self, kind: &str) -> CertId {
        self.made += 1;
        format!("{kind}{}", self.made)
    }

    fn trusted(&self) -> Option<Timestamp> {
        self.trusted_since.as_ref().filter(|(id, _)| Some(id) == self.current.as_ref()).map(|(_, s)| t(*s))
    }

    /// What the leader does at one look: plan, write, patch the configurations, note the trust.
    fn lead(&mut self) -> Plan {
        let now = t(self.now);
        let p = plan(&self.observed(), &self.policy, self.trusted(), now);
        if let Some(_why) = &p.new_ca {
            let id = self.id("ca");
            self.cas.insert(id.clone(), self.policy.ca_validity(now));
            self.current = Some(id);
        }
        let current = self.current.clone().expect("a plan always leaves a current CA");
        if p.new_leaf.is_some() {
            let id = self.id("leaf");
            let l =
                SimLeaf { id, validity: self.policy.leaf_validity(now, &self.cas[&current]), issuer: current.clone() };
            self.leaf = Some(l.clone());
            self.leaves.push((self.now, l));
        }
        self.bundle = next_bundle(&self.bundle, &current, &p.retire);
        if p.clear_request {
            self.request = None;
        }
        if self.configs.last().map(|(_, b)| b) != Some(&self.bundle) {
            self.configs.push((self.now, self.bundle.clone()));
        }
        if self.bundle.contains(&current) {
            if self.trusted_since.as_ref().map(|(id, _)| id) != Some(&current) {
                self.trusted_since = Some((current, self.now));
            }
        } else {
            self.trusted_since = None;
        }
        p
    }

    fn as_of<T: Clone>(history: &[(i64, T)], at: i64) -> Option<T> {
        history.iter().rev().find(|(since, _)| *since <= at).map(|(_, v)| v.clone())
    }

    /// Whether a request sent now through a replica `replica_lag` behind succeeds.
    fn admission_ok(&self, apiserver_lag: i64, replica_lag: i64) -> Result<(), String> {
        let Some(trusted) = Self::as_of(&self.configs, self.now - apiserver_lag) else {
            return Ok(()); // not installed yet: no admission request is sent
        };
        let Some(served) = Self::as_of(&self.leaves, self.now - replica_lag) else {
            return Ok(()); // first start: the replica is not ready, the Service routes nowhere yet
        };
        if !served.validity.valid_at(t(self.now)) {
            return Err(format!(
                "t={}: replica serves {} outside its validity {:?}",
                self.now, served.id, served.validity
            ));
        }
        if !self.cas[&served.issuer].valid_at(t(self.now)) || !trusted.contains(&served.issuer) {
            return Err(format!(
                "t={}: replica serves {} from {} but the API server trusts {:?}",
                self.now, served.id, served.issuer, trusted
            ));
        }
        Ok(())
    }
}

fn arb_event() -> impl Strategy<Value = Event> {
    prop_oneof![
        90 => Just(Event::Nothing),
        3 => Just(Event::RotateLeaf),
        2 => Just(Event::RotateCa),
        3 => Just(Event::NewLeader),
        2 => (1i64..300).prop_map(Event::Outage),
    ]
}

/// Runs `events`, one per `step` seconds. `fixpoint`: also check that a plan carried out leaves
/// nothing more to write at the same instant.
fn run_sim(
    mut sim: Sim,
    events: &[Event],
    step: i64,
    apiserver_lag: i64,
    replica_lags: &[i64],
    fixpoint: bool,
) -> Result<Sim, String> {
    for e in events {
        match e {
            Event::Nothing => {}
            Event::RotateLeaf => sim.request = Some(Rotate::Leaf),
            Event::RotateCa => sim.request = Some(Rotate::Ca),
            Event::NewLeader => sim.trusted_since = None,
            Event::Outage(d) => sim.down_until = sim.now + d,
        }
        if sim.now >= sim.down_until {
            let p = sim.lead();
            if fixpoint {
                let again = sim.lead();
                if again.writes() {
                    return Err(format!("t={}: {p:?} then, at once, {again:?}", sim.now));
                }
            }
        }
        for &r in replica_lags {
            sim.admission_ok(apiserver_lag, r)?;
        }
        sim.now += step;
    }
    Ok(sim)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Leaf renewals, CA renewals, requested rotations, leader changes and outages: every replica
    /// always serves a valid leaf the API server trusts, as long as the API server sees a patched
    /// configuration within the settle time and every replica sees the Secret within the retire
    /// time. The bundle never loses its current CA and ends with one CA when left alone.
    #[test]
    fn no_request_fails_across_rotations(
        from_chart in any::<bool>(),
        events in prop::collection::vec(arb_event(), 1500..2500),
        apiserver_lag in 0i64..=60,
        replica_lags in prop::collection::vec(0i64..599, 1..4),
    ) {
        let p = Policy { ca_lifetime: secs(40_000), leaf_lifetime: secs(9_000), ..policy() };
        let sim = if from_chart { Sim::from_chart(p) } else { Sim::fresh(p) };
        let mut sim = run_sim(sim, &events, 20, apiserver_lag, &replica_lags, true).map_err(TestCaseError::fail)?;
        prop_assert!(sim.bundle.contains(sim.current.as_ref().unwrap()));
        // Left alone for the settle and retire times (and no CA due): one CA remains.
        let quiet = vec![Event::Nothing; 100];
        sim.down_until = 0;
        let sim = run_sim(sim, &quiet, 20, apiserver_lag, &replica_lags, true).map_err(TestCaseError::fail)?;
        let current = sim.current.clone().unwrap();
        if sim.cas[&current].renew_at() > t(sim.now) {
            prop_assert_eq!(&sim.bundle, &vec![current]);
        }
    }

    /// Nothing falls due before `wake_at`: at any earlier instant, with nothing else changing, the
    /// plan still has nothing to write.
    #[test]
    fn nothing_falls_due_before_wake_at(
        events in prop::collection::vec(arb_event(), 100..800),
        probe in 0.0f64..1.0,
    ) {
        let p = Policy { ca_lifetime: secs(40_000), leaf_lifetime: secs(9_000), ..policy() };
        let mut sim = run_sim(Sim::fresh(p), &events, 20, 0, &[0], true).map_err(TestCaseError::fail)?;
        sim.request = None;
        let now = t(sim.now);
        let first = plan(&sim.observed(), &sim.policy, sim.trusted(), now);
        prop_assume!(!first.writes());
        let wake = first.wake_at.expect("a settled Secret always has a next deadline");
        let span = wake.as_second() - sim.now;
        prop_assert!(span >= 1);
        let at = t(sim.now + ((span - 1) as f64 * probe) as i64);
        prop_assert!(!plan(&sim.observed(), &sim.policy, sim.trusted(), at).writes(), "due at {at}, before {wake}");
    }
}

#[test]
fn simulation_catches_a_switch_without_settle() {
    // The property above is not vacuous: with no settle time and an API server slower than the
    // leaf switch, a replica serves a leaf the API server does not trust yet.
    let p = Policy { settle: secs(0), ..policy() };
    let events: Vec<Event> = std::iter::once(Event::RotateCa).chain(std::iter::repeat_n(Event::Nothing, 50)).collect();
    let err = run_sim(Sim::from_chart(p), &events, 20, 40, &[0], false).err().expect("a failed request");
    assert!(err.contains("the API server trusts"), "{err}");
}
