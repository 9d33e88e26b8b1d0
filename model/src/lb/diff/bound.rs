//! Target groups leave after their bindings. A target group the stack no longer wants still has
//! the targets its TargetGroupBinding registered; deleting the group first would leave that
//! binding's finalizer deregistering from a group that is gone, and the controller reporting
//! targets it no longer has. ALBC deletes the unwanted bindings, waits for them, then the groups;
//! so do we, without waiting: a deletion held here runs on the pass the binding's deletion wakes.

use super::Step;
use std::collections::BTreeMap;

/// A target-group deletion that waits for the bindings still naming the group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldDeletion {
    pub name: String,
    pub arn: String,
    /// `namespace/name` of each binding naming the group.
    pub bindings: Vec<String>,
}

impl HeldDeletion {
    /// For the stack's Event and log.
    pub fn summary(&self) -> String {
        format!(
            "target group {} kept until TargetGroupBinding {} has deregistered its targets and is gone",
            self.name,
            self.bindings.join(", ")
        )
    }
}

/// Splits a plan into the steps to run before the stack's bindings are synced and the
/// target-group deletions, which run after (see [`hold_bound`]). Order is kept within each.
pub fn defer_target_group_deletions(steps: Vec<Step>) -> (Vec<Step>, Vec<Step>) {
    steps.into_iter().partition(|s| !matches!(s, Step::DeleteTargetGroup { .. }))
}

/// The deletions to run now, and those held because a binding (any namespace, being deleted or
/// not) still names the group. `bound`: target group ARN → bindings naming it.
pub fn hold_bound(deletions: Vec<Step>, bound: &BTreeMap<String, Vec<String>>) -> (Vec<Step>, Vec<HeldDeletion>) {
    let mut run = Vec::new();
    let mut held = Vec::new();
    for step in deletions {
        match &step {
            Step::DeleteTargetGroup { arn, name } if bound.get(arn).is_some_and(|b| !b.is_empty()) => {
                held.push(HeldDeletion { name: name.clone(), arn: arn.clone(), bindings: bound[arn].clone() })
            }
            _ => run.push(step),
        }
    }
    (run, held)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delete(name: &str) -> Step {
        Step::DeleteTargetGroup { arn: format!("arn:tg/{name}"), name: name.into() }
    }

    #[test]
    fn target_group_deletions_are_split_off_in_order() {
        let other = Step::DeleteListener { arn: "arn:l/80".into(), port: 80 };
        let (before, deletions) = defer_target_group_deletions(vec![delete("a"), other.clone(), delete("b")]);
        assert_eq!(before, vec![other]);
        assert_eq!(deletions, vec![delete("a"), delete("b")]);
    }

    #[test]
    fn a_group_a_binding_still_names_waits_and_the_others_go() {
        let bound = BTreeMap::from([
            ("arn:tg/a".to_string(), vec!["shop/k8s-shop-web-a".to_string()]),
            ("arn:tg/c".to_string(), vec![]),
        ]);
        let (run, held) = hold_bound(vec![delete("a"), delete("b"), delete("c")], &bound);
        assert_eq!(run, vec![delete("b"), delete("c")], "unbound groups are deleted now");
        assert_eq!(
            held,
            vec![HeldDeletion {
                name: "a".into(),
                arn: "arn:tg/a".into(),
                bindings: vec!["shop/k8s-shop-web-a".into()]
            }]
        );
        assert_eq!(
            held[0].summary(),
            "target group a kept until TargetGroupBinding shop/k8s-shop-web-a has deregistered its targets and is gone"
        );
        let (run, held) = hold_bound(vec![delete("a")], &BTreeMap::new());
        assert_eq!((run, held), (vec![delete("a")], vec![]), "once the binding is gone, the group goes");
    }
}
