//! No cross-namespace replacement: a member of an IngressGroup cannot have the group's shared
//! load balancer deleted and created again by setting an exclusive setting (scheme, name) that
//! members of other namespaces left unset.
//!
//! A member agrees with the replacement's new value when it sets that value, or leaves the
//! setting unset while a member of its own namespace sets it (one namespace, one team). With no
//! member setting it at all the new value is the default everyone left it at, so nobody
//! disagrees. Members that set a different value are already a [`super::conflicts`] error. A
//! group in one namespace therefore never objects; the type (always ALB here) and an NLB's
//! security groups do not come from members and are not vetoed.

use super::group::Candidate;
use super::keys::{self as k, full_key};
use crate::lb::diff::ReplaceReason;

/// A refused replacement: who asked for it, who did not, and which setting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplacementVeto {
    /// The annotation (also an IngressClassParams field) that would replace the load balancer.
    pub annotation: String,
    /// The value it would be replaced with.
    pub value: String,
    /// `namespace/name` of the members setting it.
    pub setters: Vec<String>,
    /// `namespace/name` of the members of other namespaces that leave it unset.
    pub objectors: Vec<String>,
}

impl std::fmt::Display for ReplacementVeto {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} would replace the shared load balancer (delete and create again, new DNS name), but Ingress {} \
             of another namespace leaves it unset; the replacement is refused and nothing is changed in AWS: \
             remove {} from {}, or set it to {} on {} too",
            self.annotation,
            self.value,
            self.objectors.join(", "),
            self.annotation,
            self.setters.join(", "),
            self.value,
            self.objectors.join(", "),
        )
    }
}

/// A member's value of the setting in question, rendered.
type SettingOf = fn(&Candidate) -> Option<String>;

/// Whether the members of a group veto a replacement for `reason` (members in rule order).
pub fn replacement_veto(members: &[&Candidate], reason: &ReplaceReason) -> Option<ReplacementVeto> {
    let (key, value, of): (&str, String, SettingOf) = match reason {
        ReplaceReason::Scheme { to, .. } => {
            (k::SCHEME, to.as_aws().to_string(), |c| c.settings.scheme.map(|s| s.as_aws().to_string()))
        }
        ReplaceReason::Name { to, .. } => {
            (k::LOAD_BALANCER_NAME, to.clone(), |c| c.settings.load_balancer_name.clone())
        }
        ReplaceReason::Type { .. } | ReplaceReason::NlbSecurityGroups => return None,
    };
    let sets = |c: &Candidate| of(c).as_ref() == Some(&value);
    let setters: Vec<&Candidate> = members.iter().copied().filter(|c| sets(c)).collect();
    if setters.is_empty() {
        return None;
    }
    let objectors: Vec<String> = members
        .iter()
        .filter(|c| !sets(c) && !setters.iter().any(|s| s.namespace == c.namespace))
        .map(|c| format!("{}/{}", c.namespace, c.name))
        .collect();
    (!objectors.is_empty()).then(|| ReplacementVeto {
        annotation: full_key(key),
        value,
        setters: setters.iter().map(|c| format!("{}/{}", c.namespace, c.name)).collect(),
        objectors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingress::IngressSettings;
    use crate::lb::{LbType, Scheme};

    fn member(ns: &str, name: &str, scheme: Option<Scheme>, lb_name: Option<&str>) -> Candidate {
        let settings = IngressSettings { scheme, load_balancer_name: lb_name.map(Into::into), ..Default::default() };
        Candidate { namespace: ns.into(), name: name.into(), deleting: false, settings }
    }

    const PUBLIC: Option<Scheme> = Some(Scheme::InternetFacing);
    const INTERNAL: Option<Scheme> = Some(Scheme::Internal);

    #[test]
    fn scheme_table() {
        let to_public = ReplaceReason::Scheme { from: Scheme::Internal, to: Scheme::InternetFacing };
        let to_internal = ReplaceReason::Scheme { from: Scheme::InternetFacing, to: Scheme::Internal };
        type Row = (&'static str, Vec<Candidate>, &'static ReplaceReason, Option<&'static [&'static str]>);
        let (tp, ti): (&'static ReplaceReason, &'static ReplaceReason) =
            (Box::leak(Box::new(to_public)), Box::leak(Box::new(to_internal)));
        let table: Vec<Row> = vec![
            (
                "other namespace flips an unset scheme",
                vec![member("a", "x", None, None), member("b", "y", PUBLIC, None)],
                tp,
                Some(&["a/x"]),
            ),
            ("every member sets it", vec![member("a", "x", PUBLIC, None), member("b", "y", PUBLIC, None)], tp, None),
            (
                "one namespace: its team decides",
                vec![member("a", "x", None, None), member("a", "y", PUBLIC, None)],
                tp,
                None,
            ),
            (
                "each namespace has a setter",
                vec![member("a", "x", None, None), member("a", "y", PUBLIC, None), member("b", "z", PUBLIC, None)],
                tp,
                None,
            ),
            (
                "two namespaces object",
                vec![member("a", "x", None, None), member("b", "y", PUBLIC, None), member("c", "z", None, None)],
                tp,
                Some(&["a/x", "c/z"]),
            ),
            (
                "nobody sets it: back to the default",
                vec![member("a", "x", None, None), member("b", "y", None, None)],
                ti,
                None,
            ),
            (
                "explicit internal from one namespace",
                vec![member("a", "x", None, None), member("b", "y", INTERNAL, None)],
                ti,
                Some(&["a/x"]),
            ),
            ("a lone member", vec![member("a", "x", PUBLIC, None)], tp, None),
        ];
        for (what, members, reason, want) in table {
            let refs: Vec<&Candidate> = members.iter().collect();
            let got = replacement_veto(&refs, reason);
            assert_eq!(
                got.as_ref().map(|v| v.objectors.clone()),
                want.map(|w| w.iter().map(|s| s.to_string()).collect()),
                "{what}"
            );
        }
    }

    #[test]
    fn name_and_other_reasons() {
        let rename = ReplaceReason::Name { from: "k8s-old".into(), to: "shop".into() };
        let a = member("a", "x", None, None);
        let b = member("b", "y", None, Some("shop"));
        let veto = replacement_veto(&[&a, &b], &rename).expect("vetoed");
        let text = veto.to_string();
        for want in ["alb.ingress.kubernetes.io/load-balancer-name shop", "Ingress a/x", "remove", "b/y", "refused"] {
            assert!(text.contains(want), "{want}: {text}");
        }
        let generated = ReplaceReason::Name { from: "k8s-old".into(), to: "k8s-new".into() };
        assert_eq!(replacement_veto(&[&a, &b], &generated), None, "a generated name is nobody's setting");
        let t = ReplaceReason::Type { from: LbType::Network, to: LbType::Application };
        assert_eq!(replacement_veto(&[&a, &b], &t), None);
        assert_eq!(replacement_veto(&[&a, &b], &ReplaceReason::NlbSecurityGroups), None);
    }
}
