//! The conditions of a route's `status.parents[]` entry for one of our Gateways: `Accepted` from
//! its attachment (or False/UnsupportedValue when the load balancer cannot express one of its
//! rules, [`super::alb_rules`]), and `ResolvedRefs` from its backends ([`super::refs::resolved_refs`]).

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

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
