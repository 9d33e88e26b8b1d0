//! IngressGroups (ALBC `pkg/ingress/group_loader.go`, `finalizer.go`): which group an Ingress is
//! in, the order of its members, the finalizer that holds it, and the exclusive annotations every
//! member must agree on.
//!
//! - Explicit group: `group.name` (or IngressClassParams `spec.group`, which wins, already applied
//!   by `apply_params`); implicit group: the Ingress alone, ID `namespace/name`.
//! - An Ingress being deleted belongs to no group (its finalizer keeps it until the group's ALB
//!   no longer routes to it).
//! - Members sort by `group.order` (default 0, −1000..=1000), then `namespace/name`. Current ALBC
//!   allows equal explicit orders (older versions rejected them); so do we.
//! - Exclusive annotations that differ between members fail the whole group; the error names
//!   both Ingresses, the annotation and both values.
//!
//! The listeners and rules of a group's members are merged by [`super::plan_group`].

use super::annotations::IngressSettings;
use super::keys::{self as k, full_key};

/// The ID of an IngressGroup; also the value of the `ingress.k8s.aws/stack` tag.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GroupId {
    Explicit(String),
    Implicit { namespace: String, name: String },
}

impl GroupId {
    /// `ingress.k8s.aws/stack` tag value: the group name, or `namespace/name`.
    pub fn stack_id(&self) -> String {
        match self {
            GroupId::Explicit(n) => n.clone(),
            GroupId::Implicit { namespace, name } => format!("{namespace}/{name}"),
        }
    }

    /// The finalizer every member carries while the group's load balancer routes to it.
    pub fn finalizer(&self) -> String {
        match self {
            GroupId::Explicit(n) => format!("{}{n}", k::EXPLICIT_GROUP_FINALIZER_PREFIX),
            GroupId::Implicit { .. } => k::IMPLICIT_GROUP_FINALIZER.to_string(),
        }
    }
}

/// One of our Ingresses with its (params-applied) settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub namespace: String,
    pub name: String,
    pub deleting: bool,
    pub settings: IngressSettings,
}

impl Candidate {
    fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// The group of an Ingress; `None` while it is being deleted.
pub fn group_of(c: &Candidate) -> Option<GroupId> {
    if c.deleting {
        return None;
    }
    Some(match &c.settings.group_name {
        Some(n) => GroupId::Explicit(n.clone()),
        None => GroupId::Implicit { namespace: c.namespace.clone(), name: c.name.clone() },
    })
}

/// The members of `id` among `candidates`, in rule order.
pub fn members<'a>(id: &GroupId, candidates: &'a [Candidate]) -> Vec<&'a Candidate> {
    let mut m: Vec<&Candidate> = candidates.iter().filter(|c| group_of(c).as_ref() == Some(id)).collect();
    m.sort_by_key(|c| (c.settings.group_order.unwrap_or(0), c.key()));
    m
}

/// Two members disagreeing on an exclusive annotation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "conflicting {annotation}: Ingress {first} has {first_value}, Ingress {second} has {second_value}; make them \
     equal or move one Ingress to another group (annotation alb.ingress.kubernetes.io/group.name)"
)]
pub struct Conflict {
    pub annotation: String,
    pub first: String,
    pub first_value: String,
    pub second: String,
    pub second_value: String,
}

/// Exclusive settings of one member, as (annotation suffix, rendered value) for those it sets.
fn exclusive(s: &IngressSettings) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let mut put = |k: &'static str, v: Option<String>| {
        if let Some(v) = v {
            out.push((k, v));
        }
    };
    put(k::LOAD_BALANCER_NAME, s.load_balancer_name.clone());
    put(k::SCHEME, s.scheme.map(|x| x.as_aws().to_string()));
    put(k::IP_ADDRESS_TYPE, s.ip_address_type.map(|x| x.as_aws().to_string()));
    put(k::SUBNETS, s.subnets.as_ref().map(|v| sorted(v.clone())));
    put(k::SUBNETS, s.subnet_tags.as_ref().map(|t| format!("IngressClassParams subnets.tags {t:?}")));
    put(k::SECURITY_GROUPS, s.security_groups.as_ref().map(|v| sorted(v.clone())));
    put(k::WAFV2_ACL_ARN, s.wafv2_acl_arn.clone());
    put(k::WAFV2_ACL_NAME, s.wafv2_acl_name.clone());
    put(k::WAF_ACL_ID, s.waf_classic_acl_id.clone());
    put(k::SHIELD_ADVANCED_PROTECTION, s.shield_advanced_protection.map(|b| b.to_string()));
    put(k::SSL_REDIRECT, s.ssl_redirect.map(|p| p.to_string()));
    // Only decides anything with custom security groups (ALBC reads it only then).
    put(
        k::MANAGE_BACKEND_SG_RULES,
        s.manage_backend_security_group_rules.filter(|_| s.security_groups.is_some()).map(|b| b.to_string()),
    );
    put(k::MINIMUM_CAPACITY, s.minimum_capacity_units.map(|n| n.to_string()));
    put(k::CUSTOMER_OWNED_IPV4_POOL, s.customer_owned_ipv4_pool.clone());
    put(k::IPAM_IPV4_POOL_ID, s.ipv4_ipam_pool.clone());
    out
}

/// The group-wide settings (annotation suffixes) `s` sets: they apply to every member's load balancer.
pub fn group_wide_settings(s: &IngressSettings) -> Vec<&'static str> {
    let mut keys: Vec<&'static str> = exclusive(s).into_iter().map(|(k, _)| k).collect();
    if s.load_balancer_attributes.as_ref().is_some_and(|a| !a.is_empty()) {
        keys.push(k::LOAD_BALANCER_ATTRIBUTES);
    }
    keys.dedup();
    keys
}

fn sorted(mut v: Vec<String>) -> String {
    v.sort();
    v.join(",")
}

/// Every exclusive-annotation conflict among ordered members (empty = the group is consistent).
///
/// `load-balancer-attributes` merge key by key, as in ALBC: only one attribute given two values
/// by two members conflicts (the IngressClassParams' value, applied to every member, never does).
pub fn conflicts(members: &[&Candidate]) -> Vec<Conflict> {
    let mut first: std::collections::BTreeMap<String, (String, String)> = Default::default();
    let mut out = Vec::new();
    // A web ACL name (on any member) wins, and ALBC then does not compare the ARNs.
    let named_acl = members.iter().any(|m| m.settings.wafv2_acl_name.is_some());
    for m in members {
        let attributes = m
            .settings
            .load_balancer_attributes
            .iter()
            .flatten()
            .map(|(a, v)| (format!("{} (attribute {a})", full_key(k::LOAD_BALANCER_ATTRIBUTES)), format!("{v:?}")));
        let settings = exclusive(&m.settings)
            .into_iter()
            .filter(|(key, _)| !(named_acl && *key == k::WAFV2_ACL_ARN))
            .map(|(key, v)| (full_key(key), v));
        for (key, value) in settings.chain(attributes) {
            match first.get(&key) {
                None => {
                    first.insert(key, (m.key(), value));
                }
                Some((who, v)) if *v != value => out.push(Conflict {
                    annotation: key.clone(),
                    first: who.clone(),
                    first_value: v.clone(),
                    second: m.key(),
                    second_value: value,
                }),
                Some(_) => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lb::Scheme;

    fn cand(ns: &str, name: &str, group: Option<&str>, order: Option<i32>) -> Candidate {
        let settings = IngressSettings { group_name: group.map(Into::into), group_order: order, ..Default::default() };
        Candidate { namespace: ns.into(), name: name.into(), deleting: false, settings }
    }

    #[test]
    fn ids_finalizers_and_membership() {
        let g = GroupId::Explicit("team".into());
        assert_eq!((g.stack_id(), g.finalizer()), ("team".into(), "group.ingress.k8s.aws/team".into()));
        let i = GroupId::Implicit { namespace: "shop".into(), name: "web".into() };
        assert_eq!((i.stack_id(), i.finalizer()), ("shop/web".into(), "ingress.k8s.aws/resources".into()));
        let mut d = cand("a", "x", Some("team"), None);
        assert_eq!(group_of(&d), Some(g.clone()));
        d.deleting = true;
        assert_eq!(group_of(&d), None, "a deleted Ingress leaves its group");
        assert_eq!(group_of(&cand("shop", "web", None, None)), Some(i));
    }

    #[test]
    fn members_sort_by_order_then_name() {
        let all = vec![
            cand("b", "one", Some("g"), None),
            cand("a", "two", Some("g"), Some(5)),
            cand("a", "one", Some("g"), None),
            cand("z", "first", Some("g"), Some(-1000)),
            cand("c", "same", Some("g"), Some(5)),
            cand("a", "other", Some("h"), None),
            Candidate { deleting: true, ..cand("a", "gone", Some("g"), None) },
        ];
        let names: Vec<String> = members(&GroupId::Explicit("g".into()), &all).iter().map(|c| c.key()).collect();
        assert_eq!(names, ["z/first", "a/one", "b/one", "a/two", "c/same"]);
    }

    #[test]
    fn exclusive_conflicts_name_both_ingresses() {
        let mut a = cand("shop", "a", Some("g"), None);
        let mut b = cand("shop", "b", Some("g"), Some(1));
        let c = cand("shop", "c", Some("g"), Some(2));
        a.settings.scheme = Some(Scheme::Internal);
        b.settings.scheme = Some(Scheme::InternetFacing);
        a.settings.subnets = Some(vec!["s2".into(), "s1".into()]);
        b.settings.subnets = Some(vec!["s1".into(), "s2".into()]);
        let got = conflicts(&[&a, &b, &c]);
        assert_eq!(got.len(), 1, "{got:?}");
        let text = got[0].to_string();
        for want in
            ["alb.ingress.kubernetes.io/scheme", "shop/a", "internal", "shop/b", "internet-facing", "make them equal"]
        {
            assert!(text.contains(want), "{text}");
        }
        assert!(conflicts(&[&a, &c]).is_empty(), "set on one member only: no conflict");
    }

    /// As ALBC: load balancer attributes merge key by key; only one key with two values conflicts.
    #[test]
    fn load_balancer_attributes_conflict_only_on_one_key_with_two_values() {
        let with = |name: &str, pairs: &[(&str, &str)]| {
            let mut c = cand("shop", name, Some("g"), None);
            c.settings.load_balancer_attributes =
                Some(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
            c
        };
        let a = with("a", &[("idle_timeout.timeout_seconds", "120")]);
        let b = with("b", &[("deletion_protection.enabled", "true")]);
        let same = with("c", &[("idle_timeout.timeout_seconds", "120")]);
        assert!(conflicts(&[&a, &b, &same]).is_empty(), "different keys, or the same value: merged");
        let other = with("d", &[("idle_timeout.timeout_seconds", "60")]);
        let got = conflicts(&[&a, &other]);
        assert_eq!(got.len(), 1, "{got:?}");
        let text = got[0].to_string();
        assert!(text.contains("load-balancer-attributes (attribute idle_timeout.timeout_seconds)"), "{text}");
        assert!(text.contains("\"120\"") && text.contains("\"60\""), "{text}");
    }

    /// As ALBC: a web ACL name on any member wins and the ARNs are not compared;
    /// `manage-backend-security-group-rules` is compared only with custom security groups.
    #[test]
    fn settings_that_decide_nothing_do_not_conflict() {
        let mut a = cand("shop", "a", Some("g"), None);
        let mut b = cand("shop", "b", Some("g"), Some(1));
        let mut c = cand("shop", "c", Some("g"), Some(2));
        b.settings.wafv2_acl_arn = Some("arn:1".into());
        c.settings.wafv2_acl_arn = Some("arn:2".into());
        assert_eq!(conflicts(&[&a, &b, &c]).len(), 1, "two ARNs, no name: a conflict");
        a.settings.wafv2_acl_name = Some("web".into());
        assert!(conflicts(&[&a, &b, &c]).is_empty(), "the name wins; the ARNs are not compared");
        let (mut d, mut e) = (cand("shop", "d", Some("g"), None), cand("shop", "e", Some("g"), Some(1)));
        d.settings.manage_backend_security_group_rules = Some(true);
        e.settings.manage_backend_security_group_rules = Some(false);
        assert!(conflicts(&[&d, &e]).is_empty(), "no custom security groups: it decides nothing");
        d.settings.security_groups = Some(vec!["sg-1".into()]);
        e.settings.security_groups = Some(vec!["sg-1".into()]);
        assert_eq!(conflicts(&[&d, &e]).len(), 1, "with custom security groups it does");
    }
}
