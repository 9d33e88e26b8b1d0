//! The conditions of a route's `status.parents[]` entry for one of our Gateways: `Accepted` from
//! its attachment (or False/UnsupportedValue when the load balancer cannot express one of its
//! rules, [`super::alb_rules`]), and `ResolvedRefs` from its backends ([`super::refs::resolved_refs`]).

use super::api::{RouteParentStatus, parent_refs};
use super::attach::Attachment;
use super::conditions::*;

/// `Accepted` then `ResolvedRefs`, for one parent. `refused`: why the route's rules were not
/// built, when they were not.
pub fn parent_conditions(attachment: &Attachment, resolved_refs: Cond, refused: Option<&str>) -> Vec<Cond> {
    let accepted = match refused {
        Some(why) if attachment.accepted.status == CondStatus::True => {
            Cond::new(ACCEPTED, false, REASON_UNSUPPORTED_VALUE, why.to_string())
        }
        _ => attachment.accepted.clone(),
    };
    vec![accepted, resolved_refs]
}

/// A route's new `status.parents`: the entries of other controllers and of our other Gateways
/// kept as they are, ours for Gateway `gateway` (namespace, name) replaced by `ours` (empty:
/// removed). `None` when that changes nothing.
pub fn merge_parents(
    route_namespace: &str,
    existing: &[RouteParentStatus],
    controller_name: &str,
    gateway: (&str, &str),
    ours: Vec<RouteParentStatus>,
) -> Option<Vec<RouteParentStatus>> {
    let mine = |p: &RouteParentStatus| {
        p.controller_name == controller_name
            && parent_refs(route_namespace, std::slice::from_ref(&p.parent_ref))
                .first()
                .is_some_and(|r| r.is_gateway(gateway.0, gateway.1))
    };
    let mut out: Vec<RouteParentStatus> = existing.iter().filter(|p| !mine(p)).cloned().collect();
    out.extend(ours);
    (out != existing).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::api::ParentReference;
    use std::collections::BTreeMap;

    fn entry(controller: &str, gw: &str, section: Option<&str>) -> RouteParentStatus {
        RouteParentStatus {
            parent_ref: ParentReference {
                name: gw.into(),
                section_name: section.map(Into::into),
                ..Default::default()
            },
            controller_name: controller.into(),
            conditions: vec![],
        }
    }

    #[test]
    fn only_our_entries_for_this_gateway_are_replaced() {
        let other = entry("example.net/gateway", "gw", None);
        let ours_other_gw = entry("gateway.k8s.aws/alb", "gw2", None);
        let old = entry("gateway.k8s.aws/alb", "gw", Some("http"));
        let existing = vec![other.clone(), old.clone(), ours_other_gw.clone()];
        let new = entry("gateway.k8s.aws/alb", "gw", Some("https"));
        let got = merge_parents("app", &existing, "gateway.k8s.aws/alb", ("app", "gw"), vec![new.clone()]);
        assert_eq!(got, Some(vec![other.clone(), ours_other_gw.clone(), new]));
        // Removing: the other entries stay.
        let got = merge_parents("app", &existing, "gateway.k8s.aws/alb", ("app", "gw"), vec![]);
        assert_eq!(got, Some(vec![other.clone(), ours_other_gw.clone()]));
        // The same entries: nothing to write.
        let same = vec![other.clone(), ours_other_gw.clone(), old.clone()];
        assert_eq!(merge_parents("app", &same, "gateway.k8s.aws/alb", ("app", "gw"), vec![old]), None);
        // A Gateway of the same name in another namespace is another parent.
        assert_eq!(
            merge_parents("app", std::slice::from_ref(&other), "gateway.k8s.aws/alb", ("infra", "gw"), vec![]),
            None
        );
    }

    fn attached(ok: bool) -> Attachment {
        Attachment {
            accepted: if ok {
                Cond::new(ACCEPTED, true, REASON_ACCEPTED, "")
            } else {
                Cond::new(ACCEPTED, false, REASON_NO_MATCHING_PARENT, "no listener named \"x\"")
            },
            listeners: BTreeMap::new(),
        }
    }

    #[test]
    fn attachment_then_buildability_then_refs() {
        let refs_ok = Cond::new(RESOLVED_REFS, true, REASON_RESOLVED_REFS, "");
        let got = parent_conditions(&attached(true), refs_ok.clone(), None);
        assert_eq!((got[0].status, got[0].reason, got[1].type_), (CondStatus::True, REASON_ACCEPTED, RESOLVED_REFS));
        let got = parent_conditions(&attached(true), refs_ok.clone(), Some("rule 1: 307"));
        assert_eq!(
            (got[0].status, got[0].reason, got[0].message.as_str()),
            (CondStatus::False, REASON_UNSUPPORTED_VALUE, "rule 1: 307")
        );
        // Not attached: that reason stands, whatever else is wrong.
        let got = parent_conditions(&attached(false), refs_ok, Some("rule 1: 307"));
        assert_eq!(got[0].reason, REASON_NO_MATCHING_PARENT);
        let denied = Cond::new(RESOLVED_REFS, false, REASON_REF_NOT_PERMITTED, "x");
        let got = parent_conditions(&attached(true), denied, None);
        assert_eq!(
            (got[0].status, got[1].status, got[1].reason),
            (CondStatus::True, CondStatus::False, REASON_REF_NOT_PERMITTED)
        );
    }
}
