//! The AWS tags that mark a resource as ours, exactly as ALBC writes them
//! (`pkg/deploy/tracking/provider.go`), so resources ALBC created are adopted by tag.
//!
//! Every resource of a stack carries:
//! - `elbv2.k8s.aws/cluster` = the `--cluster-name`;
//! - `<prefix>/stack` = the stack ID (`namespace/name` for a Service, the group name or
//!   `namespace/name` for an Ingress);
//! - `<prefix>/resource` = which resource of the stack it is: [`RESOURCE_LOAD_BALANCER`],
//!   [`RESOURCE_MANAGED_SECURITY_GROUP`], `namespace/service:port` for a Service's target group
//!   ([`service_target_group_resource_id`]) and the listener port for a listener.
//!
//! `<prefix>` is `service.k8s.aws` for Services and `ingress.k8s.aws` for Ingresses.
//!
//! Precedence (ALBC merges with "first map wins"): these tracking tags, then `--default-tags`,
//! then the user's `additional-resource-tags` / `tags` annotation. A user can therefore never
//! move a resource out of (or into) a stack by tagging it.

use super::Tags;
use crate::names::CLUSTER_TAG;

/// Tag prefix of Service (NLB) stacks.
pub const SERVICE_TAG_PREFIX: &str = "service.k8s.aws";
/// Tag prefix of Ingress (ALB) stacks.
pub const INGRESS_TAG_PREFIX: &str = "ingress.k8s.aws";

/// `resource` tag value of a stack's load balancer.
pub const RESOURCE_LOAD_BALANCER: &str = "LoadBalancer";
/// `resource` tag value of a stack's managed frontend security group.
pub const RESOURCE_MANAGED_SECURITY_GROUP: &str = "ManagedLBSecurityGroup";

/// Tag key naming the resource kind of the shared backend security group.
pub const BACKEND_SG_RESOURCE_TAG: &str = "elbv2.k8s.aws/resource";
/// Its value.
pub const BACKEND_SG_RESOURCE_VALUE: &str = "backend-sg";

/// `<prefix>/stack`.
pub fn stack_tag_key(prefix: &str) -> String {
    format!("{prefix}/stack")
}

/// `<prefix>/resource`.
pub fn resource_tag_key(prefix: &str) -> String {
    format!("{prefix}/resource")
}

/// `resource` tag value of a Service target group: `namespace/name:port`.
pub fn service_target_group_resource_id(namespace: &str, name: &str, service_port: u16) -> String {
    format!("{namespace}/{name}:{service_port}")
}

/// The tags that find every resource of a stack (filter for Describe/GetResources calls).
pub fn stack_tags(prefix: &str, cluster: &str, stack_id: &str) -> Tags {
    Tags::from([(CLUSTER_TAG.to_string(), cluster.to_string()), (stack_tag_key(prefix), stack_id.to_string())])
}

/// Which stack a set of tags puts a resource in, and which resource of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tracking<'a> {
    pub prefix: &'a str,
    pub cluster: &'a str,
    pub stack_id: &'a str,
    pub resource_id: &'a str,
}

/// The full tag set of one resource: tracking tags win over `default_tags` (`--default-tags`),
/// which win over the user's `additional` tags, or lose to them with `defaults_low` (ALBC's gate
/// `EnableDefaultTagsLowPriority`).
pub fn resource_tags(t: &Tracking<'_>, default_tags: &Tags, additional: &Tags, defaults_low: bool) -> Tags {
    let (first, then) = if defaults_low { (default_tags, additional) } else { (additional, default_tags) };
    let mut tags = first.clone();
    tags.extend(then.iter().map(|(k, v)| (k.clone(), v.clone())));
    tags.extend(stack_tags(t.prefix, t.cluster, t.stack_id));
    tags.insert(resource_tag_key(t.prefix), t.resource_id.to_string());
    tags
}

/// Tag key prefixes that mark AWS resources as a controller's (ours and the upstream's: its
/// Service, Ingress and Gateway stacks and its cluster tag). Stacks find their resources by tag,
/// so a user tag with one of these prefixes could put a tenant's resources inside another stack's
/// tag query, whose plan would then delete them: user tags (annotations, IngressClassParams) may
/// not use them.
pub const OWNERSHIP_TAG_PREFIXES: [&str; 5] =
    ["elbv2.k8s.aws/", "service.k8s.aws/", "ingress.k8s.aws/", "gateway.k8s.aws.nlb/", "gateway.k8s.aws.alb/"];

/// The ownership prefix `key` starts with, if any ([`OWNERSHIP_TAG_PREFIXES`]).
pub fn reserved_tag_prefix(key: &str) -> Option<&'static str> {
    OWNERSHIP_TAG_PREFIXES.into_iter().find(|p| key.starts_with(p))
}

/// Why the user tags set in `source` are refused, naming each key with an ownership prefix
/// among `keys` and its prefix; `None` when none has one. Only those tags are left out.
pub fn reserved_tag_problem<'a>(keys: impl IntoIterator<Item = &'a str>, source: &str) -> Option<String> {
    let refused: Vec<String> =
        keys.into_iter().filter_map(|k| reserved_tag_prefix(k).map(|p| format!("{k:?} (prefix {p:?})"))).collect();
    if refused.is_empty() {
        return None;
    }
    Some(format!(
        "tag {} in {source} uses a prefix that marks AWS resources as a load balancer controller's stack or cluster: \
         user tags may not use {} (such a tag could put these resources inside another stack's tag query, whose \
         owner would then delete them). The tag is not applied, the other tags are; remove it from {source}",
        refused.join(", "),
        OWNERSHIP_TAG_PREFIXES.join(", ")
    ))
}

/// Tags of the cluster-wide backend security group.
pub fn backend_security_group_tags(cluster: &str, default_tags: &Tags) -> Tags {
    let mut tags = default_tags.clone();
    tags.insert(CLUSTER_TAG.to_string(), cluster.to_string());
    tags.insert(BACKEND_SG_RESOURCE_TAG.to_string(), BACKEND_SG_RESOURCE_VALUE.to_string());
    tags
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(kv: &[(&str, &str)]) -> Tags {
        kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn tracking_tags_beat_defaults_which_beat_annotations() {
        let t =
            Tracking { prefix: SERVICE_TAG_PREFIX, cluster: "prod", stack_id: "shop/web", resource_id: "LoadBalancer" };
        let defaults = tags(&[("team", "platform"), ("elbv2.k8s.aws/cluster", "evil")]);
        let user = tags(&[
            ("team", "shop"),
            ("cost-center", "42"),
            ("service.k8s.aws/stack", "other/stack"),
            ("service.k8s.aws/resource", "x"),
        ]);
        let got = resource_tags(&t, &defaults, &user, false);
        let tracking = [
            ("elbv2.k8s.aws/cluster", "prod"),
            ("service.k8s.aws/stack", "shop/web"),
            ("service.k8s.aws/resource", "LoadBalancer"),
        ];
        let want = |team| {
            let mut w = tags(&tracking);
            w.extend(tags(&[("team", team), ("cost-center", "42")]));
            w
        };
        assert_eq!(got, want("platform"));
        // EnableDefaultTagsLowPriority: the user's tags win over the defaults, never over tracking.
        assert_eq!(resource_tags(&t, &defaults, &user, true), want("shop"));
    }

    #[test]
    fn resource_ids_and_keys() {
        assert_eq!(service_target_group_resource_id("shop", "web", 443), "shop/web:443");
        assert_eq!(resource_tag_key(INGRESS_TAG_PREFIX), "ingress.k8s.aws/resource");
        assert_eq!(stack_tags(SERVICE_TAG_PREFIX, "c", "a/b").len(), 2);
        let b = backend_security_group_tags("prod", &tags(&[("elbv2.k8s.aws/resource", "no")]));
        assert_eq!(b["elbv2.k8s.aws/resource"], "backend-sg");
    }

    #[test]
    fn ownership_prefixes_are_reserved_in_user_tags() {
        // (key, refused)
        let cases = [
            ("elbv2.k8s.aws/cluster", true),
            ("elbv2.k8s.aws/anything", true),
            ("service.k8s.aws/stack", true),
            ("service.k8s.aws/resource", true),
            ("ingress.k8s.aws/stack", true),
            ("ingress.k8s.aws/cluster", true),
            ("gateway.k8s.aws.alb/stack", true),
            ("gateway.k8s.aws.nlb/resource", true),
            ("team", false),
            ("kubernetes.io/cluster/prod", false),
            ("ingress.k8s.aws", false),
            ("my.ingress.k8s.aws/stack", false),
            ("Service.k8s.aws/stack", false),
        ];
        for (key, refused) in cases {
            let problem = reserved_tag_problem([key, "team"], "annotation a/b");
            assert_eq!(problem.is_some(), refused, "{key}");
            if let Some(p) = problem {
                let named = format!("{key:?} (prefix {:?})", reserved_tag_prefix(key).unwrap());
                assert!(p.contains(&named) && p.contains("annotation a/b") && !p.contains("\"team\""), "{p}");
            }
        }
        let both = reserved_tag_problem(["ingress.k8s.aws/stack", "elbv2.k8s.aws/x"], "s").unwrap();
        assert!(both.contains("\"ingress.k8s.aws/stack\" (prefix") && both.contains("\"elbv2.k8s.aws/x\" (prefix"));
    }
}
