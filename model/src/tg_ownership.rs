//! Is this target group ours to write for this binding? Decided from the target group's AWS
//! tags, so a TargetGroupBinding pointed (by mistake or on purpose) at another cluster's or
//! another stack's target group can never deregister that owner's targets.
//!
//! - `elbv2.k8s.aws/cluster` naming another cluster: foreign.
//! - `service.k8s.aws/stack` / `ingress.k8s.aws/stack` naming another stack than the binding's
//!   own (its Service owner reference or ALBC's stack labels): foreign. A plain user binding
//!   belongs to no stack, so any stack tag makes the target group foreign to it.
//! - No such tags (made by Terraform, the console…): ours to use, as before.
//! - `spec.multiClusterTargetGroup: true`: allowed whatever the tags; such a binding only ever
//!   deregisters the targets it registered itself (ALBC's documented way to share a target group
//!   a Service stack of another cluster made).

use crate::crd::TargetGroupBinding;
use crate::lb::Tags;
use crate::lb::tags::{INGRESS_TAG_PREFIX, SERVICE_TAG_PREFIX, stack_tag_key};
use crate::names::CLUSTER_TAG;
use crate::tenancy::{Exposure, Refusal, Tenancy, Verdict};
use std::collections::BTreeSet;

/// The stack a binding belongs to: `(tag prefix, stack ID)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindingStack {
    pub prefix: &'static str,
    pub id: String,
}

/// The stack of a binding, from ALBC's stack labels (`<prefix>/stack-namespace` +
/// `<prefix>/stack-name`, or `<prefix>/stack` for an explicit IngressGroup) or, for a Service,
/// its owner reference. `None` for a binding a user wrote.
///
/// Labels are the tenant's to write, so they count only where they cannot reach another
/// namespace's stack: `stack-namespace` must be the binding's own namespace (ALBC makes a
/// Service's or an implicit IngressGroup's bindings in that namespace), and labels naming a
/// Service other than the one a Service owner reference names are ignored. An explicit
/// IngressGroup spans namespaces; any namespace may join one in the compatible mode, so its label
/// is taken as membership (the strict mode's group policy is what confines it).
pub fn binding_stack(tgb: &TargetGroupBinding) -> Option<BindingStack> {
    let ns = tgb.metadata.namespace.as_deref().unwrap_or_default();
    let owner_service =
        tgb.metadata.owner_references.iter().flatten().find(|r| r.kind == "Service" && r.api_version == "v1");
    let labels = tgb.metadata.labels.as_ref();
    let label = |k: String| labels.and_then(|l| l.get(&k)).filter(|v| !v.is_empty());
    for prefix in [SERVICE_TAG_PREFIX, INGRESS_TAG_PREFIX] {
        if let (Some(stack_ns), Some(name)) =
            (label(format!("{prefix}/stack-namespace")), label(format!("{prefix}/stack-name")))
        {
            let service_elsewhere = prefix == SERVICE_TAG_PREFIX && owner_service.is_some_and(|r| &r.name != name);
            if stack_ns == ns && !service_elsewhere {
                return Some(BindingStack { prefix, id: format!("{ns}/{name}") });
            }
            continue;
        }
        if let Some(group) = label(stack_tag_key(prefix)) {
            return Some(BindingStack { prefix, id: group.clone() });
        }
    }
    owner_service.map(|r| BindingStack { prefix: SERVICE_TAG_PREFIX, id: format!("{ns}/{}", r.name) })
}

/// Stack labels on `tgb` that name another namespace's stack (`<prefix>/stack-namespace` other
/// than the binding's namespace): the message the validating webhook denies with. Such labels
/// never make the binding a stack's ([`binding_stack`], [`stack_owns`]); refusing them says so at
/// once instead of leaving a binding that silently belongs to nobody's stack.
pub fn foreign_stack_labels(tgb: &TargetGroupBinding) -> Option<String> {
    let ns = tgb.metadata.namespace.as_deref().unwrap_or_default();
    let labels = tgb.metadata.labels.as_ref()?;
    [SERVICE_TAG_PREFIX, INGRESS_TAG_PREFIX].into_iter().find_map(|prefix| {
        let key = format!("{prefix}/stack-namespace");
        let found = labels.get(&key).filter(|v| !v.is_empty() && v.as_str() != ns)?;
        Some(format!(
            "TargetGroupBinding {ns}/{} carries label {key}={found:?}, but a Service's or an Ingress's binding is \
             always in that stack's own namespace ({ns:?} here), so labels cannot make it another namespace's. \
             Fix: remove the labels {key} and {prefix}/stack-name (a binding you write belongs to no stack), or set \
             {key}={ns:?}",
            tgb.metadata.name.as_deref().unwrap_or_default()
        ))
    })
}

/// A stack that owns TargetGroupBindings: a Service (namespace, name, UID) or an IngressGroup
/// (implicit: namespace and name; explicit: its name only), with ALBC's stack labels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackOwner {
    /// ALBC's stack labels, every one of which its bindings carry.
    pub labels: std::collections::BTreeMap<String, String>,
    /// The namespace every binding of the stack is in; `None` for an explicit IngressGroup.
    pub namespace: Option<String>,
    /// `(kind, uid)` of the object set as the bindings' owner reference (a Service's).
    pub owner: Option<(String, String)>,
}

/// Whether `stack` owns `tgb`: what its sync may update or delete and what its teardown waits
/// for. Never by labels alone across namespaces: a binding in another namespace than a Service's
/// or an implicit group's never belongs to it, whatever its labels, and a binding whose owner
/// reference names another object of the owner's kind is that object's. In its namespace, the
/// owner reference (by UID) or every stack label (bindings ALBC made carry labels only) counts.
pub fn stack_owns(stack: &StackOwner, tgb: &TargetGroupBinding) -> bool {
    let ns = tgb.metadata.namespace.as_deref().unwrap_or_default();
    if stack.namespace.as_deref().is_some_and(|n| n != ns) {
        return false;
    }
    let refs = tgb.metadata.owner_references.as_deref().unwrap_or_default();
    if let Some((kind, uid)) = &stack.owner {
        if refs.iter().any(|r| &r.kind == kind && &r.uid == uid) {
            return true;
        }
        if refs.iter().any(|r| &r.kind == kind) {
            return false;
        }
    }
    let labels = tgb.metadata.labels.as_ref();
    !stack.labels.is_empty() && stack.labels.iter().all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

/// A target group that belongs to someone else.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "target group {arn} belongs to {owner}: it carries tag {tag}={found:?}, but TargetGroupBinding {binding} expects \
     {expected}. Writing to it would deregister its owner's targets, so this controller does not touch it. Fix: point \
     the binding at a target group of its own (one without these tags, or made for this binding's stack); if the \
     target group is meant to be shared across clusters, set spec.multiClusterTargetGroup: true (each cluster then \
     deregisters only the targets it registered)"
)]
pub struct ForeignTargetGroup {
    pub arn: String,
    /// `namespace/name`.
    pub binding: String,
    /// "another cluster" or "another stack".
    pub owner: &'static str,
    pub tag: String,
    pub found: String,
    pub expected: String,
}

/// The other owner `tags` (the target group's) name, if any: `None` means this binding may write
/// to it. An empty `cluster` (not configured) skips the cluster comparison; the stack comparison
/// still applies.
pub fn foreign_by_tags(cluster: &str, tgb: &TargetGroupBinding, arn: &str, tags: &Tags) -> Option<ForeignTargetGroup> {
    if tgb.spec.is_multi_cluster() {
        return None;
    }
    foreign_tags(cluster, tgb, arn, tags)
}

/// Why a binding may not write to a target group.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotOurs {
    /// Its tags name another cluster or stack.
    #[error(transparent)]
    Foreign(Box<ForeignTargetGroup>),
    /// The strict tenancy mode does not grant it to the binding's namespace.
    #[error(transparent)]
    NotGranted(#[from] Refusal),
}

impl From<ForeignTargetGroup> for NotOurs {
    fn from(f: ForeignTargetGroup) -> Self {
        Self::Foreign(Box::new(f))
    }
}

impl NotOurs {
    /// The binding's status condition reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Foreign(_) => "TargetGroupNotOwned",
            Self::NotGranted(_) => "TargetGroupNotGranted",
        }
    }
}

/// May `tgb` write to target group `arn` carrying `tags`? The tags decide first
/// ([`foreign_by_tags`]). A group they do not give to the binding (no ownership tag at all, or
/// another owner's group shared through `spec.multiClusterTargetGroup`) is then the tenancy
/// policy's to grant ([`Tenancy::untagged_target_group`]): the strict mode refuses it unless
/// granted; the compatible mode allows it and returns the exposure.
pub fn target_group_access(
    cluster: &str,
    tenancy: &Tenancy,
    tgb: &TargetGroupBinding,
    arn: &str,
    tags: &Tags,
) -> Result<Option<Exposure>, NotOurs> {
    if let Some(foreign) = foreign_by_tags(cluster, tgb, arn, tags) {
        return Err(foreign.into());
    }
    if !untagged(tags) && foreign_tags(cluster, tgb, arn, tags).is_none() {
        return Ok(None);
    }
    let ns = tgb.metadata.namespace.as_deref().unwrap_or_default();
    let name = tgb.metadata.name.as_deref().unwrap_or_default();
    match tenancy.untagged_target_group(ns, name, arn, tags) {
        Verdict::Allowed => Ok(None),
        Verdict::Exposed(e) => Ok(Some(e)),
        Verdict::Refused(r) => Err(r.into()),
    }
}

/// [`foreign_by_tags`] whatever `spec.multiClusterTargetGroup` says.
fn foreign_tags(cluster: &str, tgb: &TargetGroupBinding, arn: &str, tags: &Tags) -> Option<ForeignTargetGroup> {
    let binding = format!(
        "{}/{}",
        tgb.metadata.namespace.as_deref().unwrap_or_default(),
        tgb.metadata.name.as_deref().unwrap_or_default()
    );
    let foreign = |owner, tag: &str, found: &str, expected: String| ForeignTargetGroup {
        arn: arn.to_string(),
        binding: binding.clone(),
        owner,
        tag: tag.to_string(),
        found: found.to_string(),
        expected,
    };
    if let Some(found) = tags.get(CLUSTER_TAG)
        && !cluster.is_empty()
        && found != cluster
    {
        return Some(foreign(
            "another cluster",
            CLUSTER_TAG,
            found,
            format!("{CLUSTER_TAG}={cluster:?} (this cluster)"),
        ));
    }
    let mine = binding_stack(tgb);
    for prefix in [SERVICE_TAG_PREFIX, INGRESS_TAG_PREFIX] {
        let key = stack_tag_key(prefix);
        let Some(found) = tags.get(&key) else { continue };
        let expected = match &mine {
            Some(s) if s.prefix == prefix && &s.id == found => continue,
            Some(s) => format!("{}={:?} (the stack that owns the binding)", stack_tag_key(s.prefix), s.id),
            None => "no stack tag: a TargetGroupBinding no Service or Ingress owns may only bind target groups \
                     no Service or Ingress stack made"
                .to_string(),
        };
        return Some(foreign("another stack", &key, found, expected));
    }
    None
}

/// Whether a target group carries none of the ownership tags (no `elbv2.k8s.aws/cluster`, no
/// Service or Ingress stack tag): made by Terraform, the console, another tool. Any binding may
/// use one in the compatible mode (upstream users bind such groups), but such a binding only ever
/// deregisters the targets it registered itself (its record, `status.ownedTargets`), exactly as a
/// multi-cluster binding: the group's other targets are its owner's, reported and left alone.
pub fn untagged(tags: &Tags) -> bool {
    !tags.contains_key(CLUSTER_TAG)
        && [SERVICE_TAG_PREFIX, INGRESS_TAG_PREFIX].iter().all(|p| !tags.contains_key(&stack_tag_key(p)))
}

/// What a binding takes over from the upstream controller's record of its targets (ConfigMap
/// `aws-lbc-targets-<binding>` in the binding's own namespace), read once, when the binding has
/// no record of ours yet.
///
/// The ConfigMap lives where the binding's tenant can write it, so it is evidence, not proof: an
/// entry is adopted only when it is registered in the target group now AND is one of this
/// binding's own endpoints now. A forged entry (another team's `ip:port`) is therefore never
/// adopted, and since only adopted or self-registered targets are ever deregistered, a forged
/// ConfigMap can never cause a deregistration. What the upstream registered for endpoints that
/// went away before the adoption stays in the target group and is reported
/// ([`Adoption::left_alone`]) for the owner to remove by hand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Adoption<T> {
    /// The record this binding starts from.
    pub owned: BTreeSet<T>,
    /// Recorded and registered, but not an endpoint of this binding: not adopted.
    pub left_alone: BTreeSet<T>,
}

/// `recorded ∩ registered ∩ endpoints` is adopted; `recorded ∩ registered − endpoints` is left
/// alone (see [`Adoption`]).
pub fn adopt_upstream_record<T: Ord + Clone>(
    recorded: &BTreeSet<T>,
    registered: &BTreeSet<T>,
    endpoints: &BTreeSet<T>,
) -> Adoption<T> {
    let mut out = Adoption { owned: BTreeSet::new(), left_alone: BTreeSet::new() };
    for t in recorded.intersection(registered) {
        if endpoints.contains(t) {
            out.owned.insert(t.clone());
        } else {
            out.left_alone.insert(t.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::TargetGroupBindingSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
    use std::collections::BTreeMap;

    const ARN: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/tg/0123456789abcdef";

    fn tgb(labels: &[(&str, &str)], owner_service: Option<&str>, multi: bool) -> TargetGroupBinding {
        TargetGroupBinding {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("shop".into()),
                labels: Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
                owner_references: owner_service.map(|n| {
                    vec![OwnerReference {
                        api_version: "v1".into(),
                        kind: "Service".into(),
                        name: n.into(),
                        uid: "u".into(),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            },
            spec: TargetGroupBindingSpec { multi_cluster_target_group: multi.then_some(true), ..Default::default() },
            status: None,
        }
    }

    fn tags(kv: &[(&str, &str)]) -> Tags {
        kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn binding_stacks() {
        let svc_labels = [("service.k8s.aws/stack-namespace", "shop"), ("service.k8s.aws/stack-name", "web")];
        assert_eq!(
            binding_stack(&tgb(&svc_labels, None, false)),
            Some(BindingStack { prefix: SERVICE_TAG_PREFIX, id: "shop/web".into() })
        );
        assert_eq!(binding_stack(&tgb(&[], Some("api"), false)).unwrap().id, "shop/api");
        let group = binding_stack(&tgb(&[("ingress.k8s.aws/stack", "team-a")], None, false)).unwrap();
        assert_eq!((group.prefix, group.id.as_str()), (INGRESS_TAG_PREFIX, "team-a"));
        let implicit = [("ingress.k8s.aws/stack-namespace", "shop"), ("ingress.k8s.aws/stack-name", "site")];
        assert_eq!(binding_stack(&tgb(&implicit, None, false)).unwrap().id, "shop/site");
        assert_eq!(binding_stack(&tgb(&[("app", "web")], None, false)), None);
        // Spoofed labels: another namespace's stack, or another Service than the owner reference's.
        let elsewhere = [("service.k8s.aws/stack-namespace", "victim"), ("service.k8s.aws/stack-name", "web")];
        assert_eq!(binding_stack(&tgb(&elsewhere, None, false)), None);
        let elsewhere = [("ingress.k8s.aws/stack-namespace", "victim"), ("ingress.k8s.aws/stack-name", "site")];
        assert_eq!(binding_stack(&tgb(&elsewhere, None, false)), None);
        assert_eq!(binding_stack(&tgb(&svc_labels, Some("api"), false)).unwrap().id, "shop/api");
    }

    #[test]
    fn foreign_stack_labels_are_named() {
        let spoof = [("service.k8s.aws/stack-namespace", "victim"), ("service.k8s.aws/stack-name", "web")];
        let msg = foreign_stack_labels(&tgb(&spoof, None, false)).expect("refused");
        for needle in ["shop/web", "service.k8s.aws/stack-namespace=\"victim\"", "(\"shop\" here)", "Fix:"] {
            assert!(msg.contains(needle), "{needle}: {msg}");
        }
        let ing = [("ingress.k8s.aws/stack-namespace", "victim"), ("ingress.k8s.aws/stack-name", "site")];
        assert!(foreign_stack_labels(&tgb(&ing, None, false)).unwrap().contains("ingress.k8s.aws/stack-name"));
        let own = [("service.k8s.aws/stack-namespace", "shop"), ("service.k8s.aws/stack-name", "web")];
        assert_eq!(foreign_stack_labels(&tgb(&own, None, false)), None);
        assert_eq!(foreign_stack_labels(&tgb(&[("ingress.k8s.aws/stack", "team-a")], None, false)), None);
        assert_eq!(foreign_stack_labels(&tgb(&[], None, false)), None);
    }

    #[test]
    fn stack_ownership_table() {
        let svc_labels: BTreeMap<String, String> =
            [("service.k8s.aws/stack-namespace", "shop"), ("service.k8s.aws/stack-name", "web")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        let service = StackOwner {
            labels: svc_labels.clone(),
            namespace: Some("shop".into()),
            owner: Some(("Service".into(), "uid-web".into())),
        };
        let group = StackOwner {
            labels: [("ingress.k8s.aws/stack".to_string(), "team-a".to_string())].into(),
            namespace: None,
            owner: None,
        };
        let with = |ns: &str, labels: &[(&str, &str)], owner: Option<(&str, &str)>| {
            let mut b = tgb(labels, None, false);
            b.metadata.namespace = Some(ns.into());
            b.metadata.owner_references = owner.map(|(kind, uid)| {
                vec![OwnerReference {
                    api_version: "v1".into(),
                    kind: kind.into(),
                    name: "x".into(),
                    uid: uid.into(),
                    ..Default::default()
                }]
            });
            b
        };
        let labels = [("service.k8s.aws/stack-namespace", "shop"), ("service.k8s.aws/stack-name", "web")];
        let cases: Vec<(&str, &StackOwner, TargetGroupBinding, bool)> = vec![
            ("ours: owner reference by UID", &service, with("shop", &[], Some(("Service", "uid-web"))), true),
            ("ALBC's: every stack label, no owner reference", &service, with("shop", &labels, None), true),
            ("labels and our owner reference", &service, with("shop", &labels, Some(("Service", "uid-web"))), true),
            ("spoof: the labels from another namespace", &service, with("attacker", &labels, None), false),
            (
                "spoof: another namespace even with our UID",
                &service,
                with("attacker", &labels, Some(("Service", "uid-web"))),
                false,
            ),
            (
                "labels, but another Service's owner reference",
                &service,
                with("shop", &labels, Some(("Service", "uid-api"))),
                false,
            ),
            ("some labels only", &service, with("shop", &labels[..1], None), false),
            ("a plain binding", &service, with("shop", &[], None), false),
            (
                "explicit group member, any namespace",
                &group,
                with("team-b", &[("ingress.k8s.aws/stack", "team-a")], None),
                true,
            ),
            ("another group", &group, with("team-b", &[("ingress.k8s.aws/stack", "team-b")], None), false),
        ];
        for (what, stack, b, want) in cases {
            assert_eq!(stack_owns(stack, &b), want, "{what}");
        }
        let no_labels = StackOwner { labels: BTreeMap::new(), namespace: Some("shop".into()), owner: None };
        assert!(!stack_owns(&no_labels, &with("shop", &[], None)), "no labels to match: owns nothing");
    }

    #[test]
    fn ownership_table() {
        let svc = [("service.k8s.aws/stack-namespace", "shop"), ("service.k8s.aws/stack-name", "web")];
        let ing = [("ingress.k8s.aws/stack", "team-a")];
        let ours = ("elbv2.k8s.aws/cluster", "prod");
        // (case, binding labels, owner Service, multi-cluster, target group tags, Err(tag) or Ok)
        #[allow(clippy::type_complexity)] // a table of cases reads best as tuples
        let cases: Vec<(&str, &[(&str, &str)], Option<&str>, bool, Vec<(&str, &str)>, Option<&str>)> = vec![
            ("terraform target group, plain binding", &[], None, false, vec![("team", "x")], None),
            ("no tags at all", &[], None, false, vec![], None),
            ("our cluster, no stack: plain binding", &[], None, false, vec![ours], None),
            ("another cluster", &[], None, false, vec![("elbv2.k8s.aws/cluster", "staging")], Some(CLUSTER_TAG)),
            (
                "another cluster, even for our stack",
                &svc,
                None,
                false,
                vec![("elbv2.k8s.aws/cluster", "staging"), ("service.k8s.aws/stack", "shop/web")],
                Some(CLUSTER_TAG),
            ),
            ("own Service stack by labels", &svc, None, false, vec![ours, ("service.k8s.aws/stack", "shop/web")], None),
            (
                "own Service stack by owner reference",
                &[],
                Some("web"),
                false,
                vec![ours, ("service.k8s.aws/stack", "shop/web")],
                None,
            ),
            (
                "another Service's stack",
                &svc,
                None,
                false,
                vec![ours, ("service.k8s.aws/stack", "shop/api")],
                Some("service.k8s.aws/stack"),
            ),
            (
                "owner reference to another Service",
                &[],
                Some("api"),
                false,
                vec![ours, ("service.k8s.aws/stack", "shop/web")],
                Some("service.k8s.aws/stack"),
            ),
            (
                "plain binding, Service stack's target group",
                &[],
                None,
                false,
                vec![ours, ("service.k8s.aws/stack", "shop/web")],
                Some("service.k8s.aws/stack"),
            ),
            (
                "plain binding, Ingress stack's target group",
                &[],
                None,
                false,
                vec![ours, ("ingress.k8s.aws/stack", "team-a")],
                Some("ingress.k8s.aws/stack"),
            ),
            ("own IngressGroup", &ing, None, false, vec![ours, ("ingress.k8s.aws/stack", "team-a")], None),
            (
                "another IngressGroup",
                &ing,
                None,
                false,
                vec![ours, ("ingress.k8s.aws/stack", "team-b")],
                Some("ingress.k8s.aws/stack"),
            ),
            (
                "Service binding, Ingress stack's target group",
                &svc,
                None,
                false,
                vec![ours, ("ingress.k8s.aws/stack", "shop/web")],
                Some("ingress.k8s.aws/stack"),
            ),
            ("stack binding, untagged target group", &svc, None, false, vec![], None),
            (
                "spoofed labels of another namespace's stack",
                &[("service.k8s.aws/stack-namespace", "victim"), ("service.k8s.aws/stack-name", "web")],
                None,
                false,
                vec![ours, ("service.k8s.aws/stack", "victim/web")],
                Some("service.k8s.aws/stack"),
            ),
            (
                "multi-cluster binding shares another cluster's group",
                &[],
                None,
                true,
                vec![("elbv2.k8s.aws/cluster", "staging"), ("service.k8s.aws/stack", "shop/web")],
                None,
            ),
        ];
        for (what, labels, owner, multi, tg_tags, want) in cases {
            let got = foreign_by_tags("prod", &tgb(labels, owner, multi), ARN, &tags(&tg_tags));
            match (got, want) {
                (None, None) => {}
                (Some(e), Some(tag)) => {
                    assert_eq!(e.tag, tag, "{what}");
                    let msg = e.to_string();
                    assert!(msg.contains(ARN) && msg.contains("shop/web") && msg.contains("Fix:"), "{what}: {msg}");
                    assert!(msg.contains(&format!("{tag}={:?}", e.found)), "{what}: {msg}");
                }
                (got, want) => panic!("{what}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn message_names_tag_found_and_expected() {
        let e = foreign_by_tags(
            "prod",
            &tgb(&[], None, false),
            ARN,
            &tags(&[("elbv2.k8s.aws/cluster", "prod"), ("service.k8s.aws/stack", "other/svc")]),
        )
        .unwrap();
        let msg = e.to_string();
        assert!(msg.contains("service.k8s.aws/stack=\"other/svc\""), "{msg}");
        assert!(msg.contains("belongs to another stack"), "{msg}");
        assert!(msg.contains("no stack tag"), "{msg}");
        let e =
            foreign_by_tags("prod", &tgb(&[], None, false), ARN, &tags(&[("elbv2.k8s.aws/cluster", "dev")])).unwrap();
        assert!(e.to_string().contains("expects elbv2.k8s.aws/cluster=\"prod\" (this cluster)"), "{e}");
    }

    fn set(xs: &[&str]) -> BTreeSet<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn untagged_target_groups() {
        let cases: [(&[(&str, &str)], bool); 6] = [
            (&[], true),
            (&[("team", "platform"), ("Name", "tf-web")], true),
            (&[("elbv2.k8s.aws/cluster", "prod")], false),
            (&[("service.k8s.aws/stack", "shop/web")], false),
            (&[("ingress.k8s.aws/stack", "team-a")], false),
            (&[("ingress.k8s.aws/resource", "x")], true),
        ];
        for (kv, want) in cases {
            assert_eq!(untagged(&tags(kv)), want, "{kv:?}");
        }
    }

    #[test]
    fn target_group_access_table() {
        use crate::tenancy::TenancyMode;
        let policy = r#"{"targetGroups": [{"namespaces": ["shop"], "names": ["tg"]}]}"#;
        let other_policy = r#"{"targetGroups": [{"namespaces": ["other"], "names": ["tg"]}]}"#;
        let svc_stack = tags(&[("elbv2.k8s.aws/cluster", "c1"), ("service.k8s.aws/stack", "shop/web")]);
        let other_cluster = tags(&[("elbv2.k8s.aws/cluster", "c2")]);
        let terraform = tags(&[("team", "shop")]);
        // (binding labels, owner Service, multi-cluster, tags, mode, policy) → Ok(exposed) or Err(reason)
        type Row<'a> = (Option<&'a str>, bool, &'a Tags, TenancyMode, &'a str, Result<bool, &'a str>);
        let rows: &[Row<'_>] = &[
            // Tag-owned by the binding's own stack: no tenancy question, whatever the mode.
            (Some("web"), false, &svc_stack, TenancyMode::Strict, "{}", Ok(false)),
            (Some("web"), true, &svc_stack, TenancyMode::Strict, "{}", Ok(false)),
            // Another cluster's: foreign without multi-cluster, in both modes.
            (None, false, &other_cluster, TenancyMode::Compatible, policy, Err("TargetGroupNotOwned")),
            (None, false, &other_cluster, TenancyMode::Strict, policy, Err("TargetGroupNotOwned")),
            // Shared through multi-cluster: the upstream's trust in compatible mode, the grant in strict.
            (None, true, &other_cluster, TenancyMode::Compatible, "{}", Ok(true)),
            (None, true, &other_cluster, TenancyMode::Strict, "{}", Err("TargetGroupNotGranted")),
            (None, true, &other_cluster, TenancyMode::Strict, policy, Ok(false)),
            // Untagged (Terraform, the console): granted by the policy, or exposed / refused.
            (None, false, &terraform, TenancyMode::Compatible, "{}", Ok(true)),
            (None, false, &terraform, TenancyMode::Compatible, policy, Ok(false)),
            (None, false, &terraform, TenancyMode::Strict, policy, Ok(false)),
            (None, false, &terraform, TenancyMode::Strict, other_policy, Err("TargetGroupNotGranted")),
            (None, false, &terraform, TenancyMode::Strict, "{}", Err("TargetGroupNotGranted")),
        ];
        for (i, (owner, multi, tg_tags, mode, policy, want)) in rows.iter().enumerate() {
            let tenancy = Tenancy::parse(*mode, policy, "test").unwrap();
            let got = target_group_access("c1", &tenancy, &tgb(&[], *owner, *multi), ARN, tg_tags);
            match (got, want) {
                (Ok(e), Ok(exposed)) => assert_eq!(e.is_some(), *exposed, "row {i}: exposure {e:?}"),
                (Err(e), Err(reason)) => {
                    assert_eq!(e.reason(), *reason, "row {i}: {e}");
                    assert!(e.to_string().contains(ARN) && e.to_string().contains("Fix"), "row {i}: {e}");
                }
                (got, want) => panic!("row {i}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn adoption_table() {
        // (case, recorded, registered, endpoints, adopted, left alone)
        #[allow(clippy::type_complexity)] // a table of cases reads best as tuples
        let cases: Vec<(&str, &[&str], &[&str], &[&str], &[&str], &[&str])> = vec![
            ("nothing recorded", &[], &["a:80"], &["a:80"], &[], &[]),
            (
                "upstream's live endpoints adopted",
                &["a:80", "b:80"],
                &["a:80", "b:80"],
                &["a:80", "b:80"],
                &["a:80", "b:80"],
                &[],
            ),
            ("recorded but no longer registered", &["a:80", "b:80"], &["a:80"], &["a:80"], &["a:80"], &[]),
            (
                "forged: another team's target",
                &["a:80", "victim:80"],
                &["a:80", "victim:80"],
                &["a:80"],
                &["a:80"],
                &["victim:80"],
            ),
            (
                "forged: same port, other IP",
                &["victim:8080"],
                &["victim:8080", "a:8080"],
                &["a:8080"],
                &[],
                &["victim:8080"],
            ),
            ("stale upstream target left alone", &["gone:80"], &["gone:80"], &["a:80"], &[], &["gone:80"]),
            ("endpoint registered but not recorded", &[], &["a:80"], &["a:80"], &[], &[]),
        ];
        for (what, rec, reg, eps, want_owned, want_left) in cases {
            let got = adopt_upstream_record(&set(rec), &set(reg), &set(eps));
            assert_eq!(got.owned, set(want_owned), "{what}: adopted");
            assert_eq!(got.left_alone, set(want_left), "{what}: left alone");
        }
    }

    mod props {
        use super::super::*;
        use crate::net::VpcCidrs;
        use crate::plan::{PlanInput, plan};
        use crate::target::{HealthState, Target};
        use proptest::prelude::*;
        use std::collections::BTreeMap;

        fn targets() -> impl Strategy<Value = BTreeSet<Target>> {
            proptest::collection::btree_set((0u8..12, 0u16..3), 0..10)
                .prop_map(|s| s.into_iter().map(|(i, p)| Target::new([10, 0, 0, i].into(), 80 + p)).collect())
        }

        proptest! {
            /// Whatever a tenant writes into the ConfigMap, the adopted record holds only this
            /// binding's own registered endpoints, so the first plan built on it deregisters nothing
            /// that is not this binding's, and nothing at all while every endpoint is desired.
            #[test]
            fn a_forged_record_never_causes_a_deregistration(
                forged in targets(), registered in targets(), endpoints in targets()
            ) {
                let a = adopt_upstream_record(&forged, &registered, &endpoints);
                prop_assert!(a.owned.is_subset(&endpoints) && a.owned.is_subset(&registered));
                prop_assert!(a.left_alone.is_disjoint(&endpoints) && a.left_alone.is_subset(&registered));
                prop_assert_eq!(a.owned.len() + a.left_alone.len(), forged.intersection(&registered).count());
                let states: BTreeMap<Target, HealthState> =
                    registered.iter().map(|t| (*t, HealthState::Healthy)).collect();
                let vpc = VpcCidrs::default();
                let p = plan(&PlanInput {
                    desired: endpoints.clone(),
                    registered: &states,
                    owned: Some(&a.owned),
                    vpc: &vpc,
                    allow_outside_vpc: false,
                    live_endpoints: endpoints.len(),
                    wanted_port: "80",
                    slice_ports: &[],
                })
                .expect("nothing of ours is wiped");
                prop_assert!(p.deregister.is_empty(), "deregistered {:?}", p.deregister);
                prop_assert_eq!(p.foreign_kept, registered.difference(&endpoints).count());
            }
        }
    }
}
