//! Poison targets: one target AWS rejects (`InvalidTarget`) fails its whole Register/
//! DeregisterTargets batch, on every retry. A failed batch is halved until the bad target is
//! alone, so every other target of the batch still goes through.
//!
//! [`Isolation`] is the decision side: which group to send next, given what the previous calls
//! answered. The controller makes the calls (`controller/src/tgb/sync.rs`).

use crate::target::Target;
use std::collections::VecDeque;

/// AWS error codes of a target write that name a problem with one of its targets: worth
/// splitting the batch for. Anything else (throttling, credentials, a missing target group)
/// concerns the whole call, and splitting would only multiply it.
pub const POISON_CODES: &[&str] = &["InvalidTarget", "TooManyRegistrationsForTargetId"];

/// Whether an error code of a target write is attributable to one of its targets.
pub fn is_poison(code: Option<&str>) -> bool {
    code.is_some_and(|c| POISON_CODES.contains(&c))
}

/// Bad targets one batch may isolate before giving up (each costs about 2·log₂(batch) calls);
/// past that the batch is failed as a whole and retried with backoff.
pub const MAX_ISOLATED_PER_BATCH: usize = 4;

/// Most calls an isolation of a batch of `len` targets may make.
pub fn call_budget(len: usize) -> usize {
    let depth = usize::BITS - len.saturating_sub(1).leading_zeros(); // ceil(log2(len))
    2 * MAX_ISOLATED_PER_BATCH * (depth as usize).max(1)
}

/// A target AWS refused on its own, with AWS's reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    pub target: Target,
    pub reason: String,
}

/// Halving a failed batch until its bad targets are alone.
#[derive(Clone, Debug)]
pub struct Isolation {
    queue: VecDeque<Vec<Target>>,
    calls_left: usize,
    /// Targets whose call succeeded.
    pub done: Vec<Target>,
    /// Targets refused on their own.
    pub rejected: Vec<Rejected>,
}

fn halves(group: &[Target]) -> [Vec<Target>; 2] {
    let (a, b) = group.split_at(group.len() / 2);
    [a.to_vec(), b.to_vec()]
}

impl Isolation {
    /// Starts from a batch whose call just failed with a poison error (`reason`).
    pub fn new(failed: &[Target], reason: &str) -> Self {
        let mut s = Self {
            queue: VecDeque::new(),
            calls_left: call_budget(failed.len()),
            done: Vec::new(),
            rejected: Vec::new(),
        };
        s.failed(failed, reason);
        s
    }

    fn failed(&mut self, group: &[Target], reason: &str) {
        match group {
            [] => {}
            [t] => self.rejected.push(Rejected { target: *t, reason: reason.to_string() }),
            _ => {
                let [a, b] = halves(group);
                self.queue.push_front(b);
                self.queue.push_front(a);
            }
        }
    }

    /// The next group to send; `None` when done or out of calls (see [`Isolation::untried`]).
    pub fn next_group(&mut self) -> Option<Vec<Target>> {
        if self.calls_left == 0 || self.rejected.len() > MAX_ISOLATED_PER_BATCH {
            return None;
        }
        let g = self.queue.pop_front()?;
        self.calls_left -= 1;
        Some(g)
    }

    /// What the call for `group` answered: `Ok(())`, or `Err(reason)` of a poison error.
    pub fn record(&mut self, group: &[Target], outcome: Result<(), &str>) {
        match outcome {
            Ok(()) => self.done.extend_from_slice(group),
            Err(reason) => self.failed(group, reason),
        }
    }

    /// Targets never sent on their own because the call budget ran out: the batch failed as a
    /// whole (too many bad targets, or a problem of the whole call after all).
    pub fn untried(&self) -> Vec<Target> {
        self.queue.iter().flatten().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn targets(n: u16) -> Vec<Target> {
        (0..n).map(|i| Target::new(format!("10.0.{}.{}", i / 200, i % 200 + 1).parse().unwrap(), 8080)).collect()
    }

    /// Runs an isolation against a fake AWS that refuses any call containing a bad target.
    fn run(batch: &[Target], bad: &BTreeSet<Target>) -> (Isolation, usize) {
        let mut iso = Isolation::new(batch, "InvalidTarget: first call");
        let mut calls = 0;
        while let Some(g) = iso.next_group() {
            calls += 1;
            match g.iter().find(|t| bad.contains(t)) {
                Some(t) => iso.record(&g, Err(&format!("InvalidTarget: {t} is not valid"))),
                None => iso.record(&g, Ok(())),
            }
        }
        (iso, calls)
    }

    #[test]
    fn poison_codes() {
        assert!(is_poison(Some("InvalidTarget")));
        assert!(is_poison(Some("TooManyRegistrationsForTargetId")));
        for other in [None, Some("Throttling"), Some("TargetGroupNotFound"), Some("AccessDenied"), Some("")] {
            assert!(!is_poison(other), "{other:?}");
        }
    }

    #[test]
    fn budget_grows_with_log_of_batch() {
        assert_eq!(call_budget(1), 8);
        assert_eq!(call_budget(2), 8);
        assert_eq!(call_budget(4), 16);
        assert_eq!(call_budget(200), 64);
    }

    #[test]
    fn isolation_table() {
        // (case, batch size, bad indices, isolated?, most calls)
        let cases: Vec<(&str, u16, Vec<usize>, bool, usize)> = vec![
            ("one bad of one: refused at once, no call", 1, vec![0], true, 0),
            ("one bad of two", 2, vec![1], true, 2),
            ("one bad first of 200", 200, vec![0], true, 16),
            ("one bad last of 200", 200, vec![199], true, 16),
            ("one bad in the middle of 7", 7, vec![3], true, 6),
            ("two bad in different halves", 200, vec![5, 150], true, 30),
            ("two bad side by side", 200, vec![99, 100], true, 30),
            ("four bad", 64, vec![0, 20, 40, 63], true, 48),
            ("every target bad: gives up within the budget", 200, (0..200).collect(), false, 64),
        ];
        for (what, n, bad_idx, isolated, most) in cases {
            let batch = targets(n);
            let bad: BTreeSet<Target> = bad_idx.iter().map(|i| batch[*i]).collect();
            let (iso, calls) = run(&batch, &bad);
            assert!(calls <= most, "{what}: {calls} calls");
            assert!(calls <= call_budget(batch.len()), "{what}: over budget");
            // Never a good target reported bad, never a bad one reported done.
            assert!(iso.rejected.iter().all(|r| bad.contains(&r.target)), "{what}: {:?}", iso.rejected);
            assert!(iso.done.iter().all(|t| !bad.contains(t)), "{what}");
            // Every target is accounted for exactly once.
            let mut all: Vec<Target> = iso.done.clone();
            all.extend(iso.rejected.iter().map(|r| r.target));
            all.extend(iso.untried());
            all.sort();
            let mut want = batch.clone();
            want.sort();
            assert_eq!(all, want, "{what}");
            if isolated {
                assert!(iso.untried().is_empty(), "{what}");
                assert_eq!(iso.rejected.len(), bad.len(), "{what}");
                assert_eq!(iso.done.len(), batch.len() - bad.len(), "{what}: the others went through");
            } else {
                assert!(!iso.untried().is_empty(), "{what}");
            }
        }
    }

    #[test]
    fn reason_is_kept_per_target() {
        let batch = targets(4);
        let bad: BTreeSet<Target> = [batch[2]].into();
        let (iso, _) = run(&batch, &bad);
        assert_eq!(
            iso.rejected,
            vec![Rejected { target: batch[2], reason: format!("InvalidTarget: {} is not valid", batch[2]) }]
        );
    }
}
