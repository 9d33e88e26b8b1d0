//! The cluster's shared backend security group (ALBC `--enable-backend-security-group`,
//! `--backend-security-group`): one group per cluster, attached to every load balancer with a
//! managed frontend group, and the *source* of the rules that let load balancers reach pods. Pod
//! security groups then need one rule per port for all load balancers of the cluster, not one per
//! load balancer.
//!
//! - **Given** (`--backend-security-group=sg-…`): used as is, never created, changed or deleted.
//! - **Auto** (default): found by its tags (`elbv2.k8s.aws/cluster=<cluster>`,
//!   `elbv2.k8s.aws/resource=backend-sg`) in the VPC, created on first need as
//!   `k8s-traffic-<cluster>-<hash>` with no ingress rules, deleted once no load balancer of the
//!   cluster needs it. Tags are the ownership proof: a group without them is never touched.
//! - **Disabled** (`--enable-backend-security-group=false`): each load balancer's frontend group is
//!   the source of its target rules instead.

use super::naming::backend_security_group_name;
use super::tags::backend_security_group_tags;
use super::{SecurityGroup, Tags};

/// The description ALBC gives the group (kept so an ALBC-created group looks the same).
pub const DESCRIPTION: &str = "[k8s] Shared Backend SecurityGroup for LoadBalancer";

/// How the controller gets the backend security group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendSgMode {
    Disabled,
    Given(String),
    Auto,
}

impl BackendSgMode {
    /// From the two flags. A given ID must look like one; giving it while the feature is off is a
    /// contradiction the operator should hear about rather than have one flag silently win.
    pub fn from_flags(enabled: bool, given: &str) -> Result<Self, String> {
        let given = given.trim();
        match (enabled, given.is_empty()) {
            (false, true) => Ok(Self::Disabled),
            (false, false) => Err(format!(
                "--backend-security-group={given} is set but --enable-backend-security-group=false; \
                 remove one of them"
            )),
            (true, true) => Ok(Self::Auto),
            (true, false) if given.starts_with("sg-") && given.len() > 3 => Ok(Self::Given(given.to_string())),
            (true, false) => Err(format!(
                "--backend-security-group={given} is not a security group ID; expected sg-…, e.g. sg-0123456789abcdef0"
            )),
        }
    }
}

/// The group the controller creates in Auto mode.
pub fn desired(cluster: &str, vpc_id: &str, default_tags: &Tags) -> SecurityGroup {
    SecurityGroup {
        name: backend_security_group_name(cluster),
        description: DESCRIPTION.to_string(),
        vpc_id: vpc_id.to_string(),
        ingress: Vec::new(),
        tags: backend_security_group_tags(cluster, default_tags),
    }
}

/// The tags that find the group (a subset of [`desired`]'s: default tags may change over time).
pub fn lookup_tags(cluster: &str) -> Tags {
    backend_security_group_tags(cluster, &Tags::new())
}

/// Whether the auto-created group may be deleted: only when no object that can own a load
/// balancer still holds one of the controller's finalizers (the finalizer outlives the load
/// balancer, so this errs on the side of keeping the group). `holders` yields, per object other
/// than the one just cleaned up, whether it still holds a finalizer of ours.
pub fn release_allowed(mode: &BackendSgMode, mut holders: impl Iterator<Item = bool>) -> bool {
    *mode == BackendSgMode::Auto && !holders.any(|holds| holds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_map_to_modes_and_contradictions_are_named() {
        assert_eq!(BackendSgMode::from_flags(true, ""), Ok(BackendSgMode::Auto));
        assert_eq!(BackendSgMode::from_flags(true, " sg-0abc "), Ok(BackendSgMode::Given("sg-0abc".into())));
        assert_eq!(BackendSgMode::from_flags(false, ""), Ok(BackendSgMode::Disabled));
        let off = BackendSgMode::from_flags(false, "sg-1").unwrap_err();
        assert!(off.contains("sg-1") && off.contains("--enable-backend-security-group=false"), "{off}");
        for bad in ["k8s-traffic-prod", "sg-", "0abc"] {
            let e = BackendSgMode::from_flags(true, bad).unwrap_err();
            assert!(e.contains(bad) && e.contains("expected sg-"), "{e}");
        }
    }

    #[test]
    fn desired_group_is_albcs_and_found_by_its_ownership_tags() {
        let defaults: Tags = [("team".to_string(), "net".to_string())].into();
        let sg = desired("prod", "vpc-1", &defaults);
        assert_eq!(sg.name, "k8s-traffic-prod-6754af9632");
        assert_eq!(sg.description, DESCRIPTION);
        assert!(sg.ingress.is_empty());
        assert_eq!(sg.tags.get("team").map(String::as_str), Some("net"));
        let lookup = lookup_tags("prod");
        assert_eq!(lookup.len(), 2);
        assert!(lookup.iter().all(|(k, v)| sg.tags.get(k) == Some(v)), "{lookup:?} ⊄ {:?}", sg.tags);
    }

    #[test]
    fn released_only_in_auto_mode_when_nobody_holds_a_finalizer() {
        let auto = BackendSgMode::Auto;
        assert!(release_allowed(&auto, [false, false].into_iter()));
        assert!(release_allowed(&auto, std::iter::empty()));
        assert!(!release_allowed(&auto, [false, true].into_iter()));
        assert!(!release_allowed(&BackendSgMode::Given("sg-1".into()), std::iter::empty()));
        assert!(!release_allowed(&BackendSgMode::Disabled, std::iter::empty()));
    }
}
