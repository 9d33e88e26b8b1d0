//! Rule steps for one listener (see "Listener rules" in the module docs of [`super`]).

use super::plan::{TgIndex, tag_steps};
use super::{PlanError, PlanOptions, ResourceKind, Step};
use crate::lb::{Action, Condition, Listener, OIDC_SECRET_DIGEST_TAG, Observed, RULE_PRIORITIES, Rule, Transform};
use std::collections::BTreeSet;

/// What a rule does, independent of its priority, tags, value order and target-group spelling;
/// plus the digest of its OIDC client credentials (AWS never returns the secret itself).
type Content = (Vec<Condition>, Vec<Action>, Vec<Transform>, Option<String>);

fn content(r: &Rule, tgs: &TgIndex<'_>) -> Content {
    let n = r.normalized();
    let actions = tgs.normalize_actions(&n.actions).iter().map(Action::without_secrets).collect();
    (n.conditions, actions, n.transforms, r.tags.get(OIDC_SECRET_DIGEST_TAG).cloned())
}

/// Desired priorities unique and in range, for every listener, before any step is planned.
pub(super) fn check_priorities(listeners: &[Listener]) -> Result<(), PlanError> {
    for l in listeners {
        let mut seen = BTreeSet::new();
        for r in &l.rules {
            let problem = if !RULE_PRIORITIES.contains(&r.priority) {
                format!("a rule with priority {}", r.priority)
            } else if !seen.insert(r.priority) {
                format!("two rules with priority {}", r.priority)
            } else {
                continue;
            };
            return Err(PlanError::BadRulePriority { port: l.port, problem });
        }
    }
    Ok(())
}

/// Rules of a listener this plan creates: all of them, in priority order.
pub(super) fn create_all(steps: &mut Vec<Step>, want: &Listener) {
    let mut rules = want.rules.clone();
    rules.sort_by_key(|r| r.priority);
    steps.extend(rules.into_iter().map(|rule| Step::CreateRule { port: want.port, rule }));
}

/// Rules of an existing listener (`arn`): `have` is `None` when they were not read.
pub(super) fn rule_steps(
    steps: &mut Vec<Step>,
    want: &Listener,
    arn: &str,
    have: Option<&Vec<Observed<Rule>>>,
    tgs: &TgIndex<'_>,
    opts: &PlanOptions,
) -> Result<(), PlanError> {
    let port = want.port;
    let Some(have) = have else {
        if want.rules.is_empty() {
            return Ok(());
        }
        return Err(PlanError::RulesNotObserved { port, arn: arn.to_string(), count: want.rules.len() });
    };
    let mut wants: Vec<&Rule> = want.rules.iter().collect();
    wants.sort_by_key(|r| r.priority);
    let mut haves: Vec<&Observed<Rule>> = have.iter().collect();
    haves.sort_by_key(|r| r.spec.priority);
    let want_content: Vec<Content> = wants.iter().map(|r| content(r, tgs)).collect();
    let have_content: Vec<Content> = haves.iter().map(|r| content(&r.spec, tgs)).collect();

    // Pairs (want index, have index): same content first (preferring the same priority), so a
    // reordered rule only moves; then same priority, modified in place.
    let mut pair_of_want: Vec<Option<usize>> = vec![None; wants.len()];
    let mut taken = vec![false; haves.len()];
    for (w, wc) in want_content.iter().enumerate() {
        let same = |h: &usize| !taken[*h] && have_content[*h] == *wc;
        let found = (0..haves.len())
            .filter(same)
            .find(|h| haves[*h].spec.priority == wants[w].priority)
            .or_else(|| (0..haves.len()).find(same));
        if let Some(h) = found {
            taken[h] = true;
            pair_of_want[w] = Some(h);
        }
    }
    for w in 0..wants.len() {
        if pair_of_want[w].is_some() {
            continue;
        }
        if let Some(h) = (0..haves.len()).find(|h| !taken[*h] && haves[*h].spec.priority == wants[w].priority) {
            taken[h] = true;
            pair_of_want[w] = Some(h);
        }
    }

    // 1. Delete what nobody wants (frees its priority for the moves and creates below).
    for (h, r) in haves.iter().enumerate() {
        if !taken[h] {
            steps.push(Step::DeleteRule { arn: r.id.clone(), port });
        }
    }

    // 2. Move. Only rules paired by content move (a rule paired by priority is already there).
    let moves: Vec<(String, u32)> = pair_of_want
        .iter()
        .enumerate()
        .filter_map(|(w, h)| h.map(|h| (haves[h], wants[w].priority)))
        .filter(|(have, to)| have.spec.priority != *to)
        .map(|(have, to)| (have.id.clone(), to))
        .collect();
    let held: BTreeSet<u32> =
        haves.iter().enumerate().filter(|(h, _)| taken[*h]).map(|(_, r)| r.spec.priority).collect();
    match chain_order(&moves, &haves, held.clone()) {
        Some(ordered) => {
            if !ordered.is_empty() {
                steps.push(Step::SetRulePriorities { port, priorities: ordered });
            }
        }
        None => {
            // A cycle (a swap, a rotation): no order frees every target first. Park the moving
            // rules on priorities nobody holds or wants, then move them home.
            let wanted: BTreeSet<u32> = wants.iter().map(|r| r.priority).collect();
            let mut free = RULE_PRIORITIES.rev().filter(|p| !held.contains(p) && !wanted.contains(p));
            let parked: Vec<(String, u32)> = moves
                .iter()
                .map(|(arn, _)| (arn.clone(), free.next().expect("50000 priorities, at most 100 rules per ALB")))
                .collect();
            steps.push(Step::SetRulePriorities { port, priorities: parked });
            steps.push(Step::SetRulePriorities { port, priorities: moves });
        }
    }

    // 3. Modify rules paired by priority whose conditions or actions differ.
    for (w, h) in pair_of_want.iter().enumerate() {
        if let Some(h) = *h
            && want_content[w] != have_content[h]
        {
            steps.push(Step::ModifyRule { arn: haves[h].id.clone(), port, rule: wants[w].clone() });
        }
    }

    // 4. Create the rest; their priorities are free now (every kept rule sits at its own).
    for (w, h) in pair_of_want.iter().enumerate() {
        if h.is_none() {
            steps.push(Step::CreateRule { port, rule: wants[w].clone() });
        }
    }

    // 5. Tags of the kept rules (an adopted untagged rule gets ours).
    for (w, h) in pair_of_want.iter().enumerate() {
        if let Some(h) = *h {
            tag_steps(steps, ResourceKind::Rule, &haves[h].id, &wants[w].tags, &haves[h].spec.tags, opts);
        }
    }
    Ok(())
}

/// The moves in an order where each target is free when its move runs (AWS may apply them one by
/// one: this way no reading of SetRulePriorities can see a duplicate); `None` when they form a
/// cycle. `held`: priorities of the rules kept on the listener.
fn chain_order(
    moves: &[(String, u32)],
    haves: &[&Observed<Rule>],
    mut held: BTreeSet<u32>,
) -> Option<Vec<(String, u32)>> {
    let from = |arn: &str| haves.iter().find(|r| r.id == arn).map(|r| r.spec.priority).expect("moving rule observed");
    let mut pending: Vec<&(String, u32)> = moves.iter().collect();
    let mut out = Vec::with_capacity(moves.len());
    while !pending.is_empty() {
        let i = pending.iter().position(|(_, to)| !held.contains(to))?;
        let (arn, to) = pending.remove(i);
        held.remove(&from(arn));
        held.insert(*to);
        out.push((arn.clone(), *to));
    }
    Some(out)
}
