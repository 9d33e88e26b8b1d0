//! Freeze, don't delete: what a [`Selection`] means for the IngressGroup an Ingress is in.
//!
//! An Ingress leaves its group only by its own hand: it is deleted, or its `ingressClassName` /
//! `kubernetes.io/ingress.class` names something that is not ours (or nothing). A class or
//! IngressClassParams that disappears, or a namespaceSelector that stops selecting, is a change
//! of the *cluster* (an ArgoCD prune, a Helm upgrade recreating the class, a relabelled
//! namespace): an Ingress still holding a group finalizer then freezes its group — the load
//! balancer stays as it is, nothing is written to AWS, and the group resumes when the class is
//! back. ALBC likewise refuses to reconcile a group whose member's class cannot be loaded.
//!
//! [`Selection::NotOurs`] is the Ingress's own doing, even for a class that now belongs to
//! another controller (`spec.controller` is immutable, so that class was replaced on purpose).
//! So is an Ingress that now names another class than the one it was last a member under
//! (`own_change`): a tenant switching its own Ingress to a missing class takes that Ingress out of
//! the group, and never freezes the other members' load balancer.

use super::select::Selection;

/// How an Ingress takes part in its group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Membership {
    /// Ours: in the group its settings name (a deleted one leaves through the group pass).
    Member,
    /// Holds a group finalizer but its class or params cannot be used: the group is frozen.
    /// `reason` names what is missing or mismatching and the fix.
    Frozen { reason: String },
    /// Not in any group of ours (never was, or left by its own change or deletion).
    Out,
}

/// The decision for one Ingress: its selection, whether it holds a group finalizer
/// (`ingress.k8s.aws/resources` or `group.ingress.k8s.aws/<group>`), whether it is being deleted,
/// and whether it names another class than the one it was last seen a member under (`own_change`;
/// `false` when that is not known, as after a restart: the safe side).
pub fn membership(selection: &Selection, holds_group_finalizer: bool, deleting: bool, own_change: bool) -> Membership {
    match selection {
        Selection::Ours { .. } => Membership::Member,
        Selection::NotOurs { .. } => Membership::Out,
        Selection::Misconfigured { .. } if deleting || !holds_group_finalizer || own_change => Membership::Out,
        Selection::Misconfigured { reason } => Membership::Frozen {
            reason: format!(
                "{reason}; the IngressGroup this Ingress is in is frozen (its load balancer is kept, nothing is \
                 changed in AWS) until that is restored; to delete the load balancer instead, remove \
                 spec.ingressClassName from the Ingress or delete it"
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_combination() {
        let ours = Selection::Ours { class: Some("alb".into()), params: None };
        let not_ours = Selection::NotOurs { reason: "IngressClass nginx belongs to controller \"nginx\"".into() };
        let broken = Selection::Misconfigured { reason: "IngressClass alb does not exist".into() };
        let frozen =
            |m: &Membership| matches!(m, Membership::Frozen { reason } if reason.contains("alb does not exist"));
        let member = |m: &Membership| *m == Membership::Member;
        let out = |m: &Membership| *m == Membership::Out;
        type Row<'a> = (&'a Selection, bool, bool, fn(&Membership) -> bool);
        let table: [Row<'_>; 12] = [
            // selection, holds a group finalizer, deleting, expected (own_change: false)
            (&ours, false, false, member),
            (&ours, true, false, member),
            (&ours, false, true, member),
            (&ours, true, true, member),
            (&not_ours, false, false, out),
            (&not_ours, true, false, out),
            (&not_ours, false, true, out),
            (&not_ours, true, true, out),
            (&broken, false, false, out),
            (&broken, true, false, frozen),
            (&broken, false, true, out),
            (&broken, true, true, out),
        ];
        for (sel, holds, deleting, want) in table {
            let got = membership(sel, holds, deleting, false);
            assert!(want(&got), "{sel:?} holds={holds} deleting={deleting}: {got:?}");
            // The Ingress's own class change: out wherever the cluster's change would freeze;
            // nothing else differs.
            let own = membership(sel, holds, deleting, true);
            let want_own = if frozen(&got) { Membership::Out } else { got.clone() };
            assert_eq!(own, want_own, "{sel:?} holds={holds} deleting={deleting}, own change");
        }
    }

    #[test]
    fn frozen_reason_names_the_fix_and_the_way_out() {
        let sel = Selection::Misconfigured { reason: "IngressClassParams p of IngressClass alb does not exist".into() };
        let Membership::Frozen { reason } = membership(&sel, true, false, false) else { panic!() };
        for want in ["IngressClassParams p", "frozen", "nothing is changed in AWS", "remove spec.ingressClassName"] {
            assert!(reason.contains(want), "{want}: {reason}");
        }
    }
}
