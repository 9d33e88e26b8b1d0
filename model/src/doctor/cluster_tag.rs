//! Check 1: the VPC's subnets carry `kubernetes.io/cluster/<name>` for exactly `--cluster-name`.
//! Subnet discovery drops every subnet tagged for *another* cluster, so `meta-dev` on the subnets
//! of a cluster started with `--cluster-name=dev-meta` leaves no subnet at all, silently in ALBC.
//! Near misses (swapped parts, case, a typo) are named with both spellings.

use super::{Verdict, list};
use crate::lb::Subnet;
use crate::lb::subnets::{CLUSTER_TAG_PREFIX, cluster_tag};
use std::collections::BTreeMap;

pub const CHECK: &str = "cluster-tag";

/// How another cluster name on the subnets resembles ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NearMiss {
    /// Same letters, other case (`Dev-Meta`).
    Case,
    /// Same parts in another order (`meta-dev` for `dev-meta`).
    SwappedParts,
    /// A small edit away (`dev-mata`, `devmeta`).
    Typo,
}

impl NearMiss {
    fn describe(self) -> &'static str {
        match self {
            NearMiss::Case => "differs only in case",
            NearMiss::SwappedParts => "same parts in another order",
            NearMiss::Typo => "a typo away",
        }
    }
}

/// Whether `other` is a likely misspelling of `ours` (`None`: a genuinely different cluster).
pub fn near_miss(ours: &str, other: &str) -> Option<NearMiss> {
    if ours == other || ours.is_empty() || other.is_empty() {
        return None;
    }
    if ours.eq_ignore_ascii_case(other) {
        return Some(NearMiss::Case);
    }
    let parts = |s: &str| {
        let mut v: Vec<String> =
            s.split(['-', '_', '.']).filter(|p| !p.is_empty()).map(str::to_ascii_lowercase).collect();
        v.sort();
        v
    };
    let (a, b) = (parts(ours), parts(other));
    if a.len() > 1 && a == b {
        return Some(NearMiss::SwappedParts);
    }
    let distance = strsim::damerau_levenshtein(&ours.to_ascii_lowercase(), &other.to_ascii_lowercase());
    // One edit for short names, two from 8 characters on: `prod` vs `dev` must stay different clusters.
    let allowed = if ours.len().min(other.len()) >= 8 { 2 } else { 1 };
    (distance <= allowed).then_some(NearMiss::Typo)
}

/// Verdicts for the subnets of the cluster VPC.
pub fn check(cluster_name: &str, vpc_id: &str, subnets: &[Subnet]) -> Vec<Verdict> {
    let object = format!("subnets of VPC {vpc_id}");
    if cluster_name.trim().is_empty() {
        return vec![Verdict::fail(
            CHECK,
            "--cluster-name",
            "empty",
            "the name in your subnets' kubernetes.io/cluster/<name> tags",
            "pass --cluster-name=<name> (Helm value clusterName)",
        )];
    }
    let ours = cluster_tag(cluster_name);
    let tagged: Vec<&Subnet> = subnets.iter().filter(|s| s.tags.contains_key(&ours)).collect();
    // Other cluster names → the subnets carrying them.
    let mut others: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for s in subnets {
        for k in s.tags.keys() {
            if let Some(name) = k.strip_prefix(CLUSTER_TAG_PREFIX)
                && name != cluster_name
            {
                others.entry(name).or_default().push(&s.id);
            }
        }
    }
    let misses: Vec<String> = others
        .iter()
        .filter_map(|(name, ids)| {
            near_miss(cluster_name, name).map(|m| {
                format!("{CLUSTER_TAG_PREFIX}{name} on {} ({} of {cluster_name:?})", list(ids, 3), m.describe())
            })
        })
        .collect();
    let mut out = Vec::new();
    if tagged.is_empty() {
        let found = if !misses.is_empty() {
            misses.join("; ")
        } else if others.is_empty() {
            format!("none of the {} subnets carries {ours}", subnets.len())
        } else {
            format!("only other clusters' tags: {}", others.keys().copied().collect::<Vec<_>>().join(", "))
        };
        let fix = if misses.is_empty() {
            format!(
                "tag the load balancer subnets: aws ec2 create-tags --resources <subnet-ids> --tags Key={ours},Value=owned"
            )
        } else {
            format!(
                "make the names equal: start the controller with --cluster-name=<the name on the subnets>, or retag them with Key={ours},Value=owned (and remove the misspelt tag)"
            )
        };
        out.push(Verdict::fail(CHECK, object, found, format!("{ours} on the load balancer subnets"), fix));
        return out;
    }
    let odd_values: Vec<String> = tagged
        .iter()
        .filter(|s| !matches!(s.tags[&ours].as_str(), "owned" | "shared"))
        .map(|s| format!("{}={:?}", s.id, s.tags[&ours]))
        .collect();
    if !misses.is_empty() {
        out.push(Verdict::warn(
            CHECK,
            object.clone(),
            misses.join("; "),
            format!("{ours} on every load balancer subnet"),
            format!("subnets with the misspelt tag are skipped by discovery: retag them Key={ours},Value=owned"),
        ));
    }
    if !odd_values.is_empty() {
        out.push(Verdict::warn(
            CHECK,
            object.clone(),
            format!("unusual values: {}", list(&odd_values, 5)),
            "owned or shared",
            "set the value to owned (or shared): discovery reads only the key, other tools read the value",
        ));
    }
    if out.is_empty() {
        let ids: Vec<&str> = tagged.iter().map(|s| s.id.as_str()).collect();
        out.push(Verdict::ok(
            CHECK,
            object,
            format!("{ours} on {} of {} subnets: {}", ids.len(), subnets.len(), list(&ids, 6)),
        ));
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::doctor::Status;

    pub(crate) fn subnet(id: &str, az: &str, tags: &[(&str, &str)]) -> Subnet {
        Subnet {
            id: id.into(),
            vpc_id: "vpc-1".into(),
            availability_zone: az.into(),
            cidr: "10.0.0.0/24".into(),
            ipv6_cidrs: vec![],
            available_ips: 250,
            tags: tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }

    #[test]
    fn near_misses() {
        for (ours, other, want) in [
            ("dev-meta", "meta-dev", Some(NearMiss::SwappedParts)),
            ("dev-meta", "meta_dev", Some(NearMiss::SwappedParts)),
            ("dev-meta", "Dev-Meta", Some(NearMiss::Case)),
            ("dev-meta", "dev-mata", Some(NearMiss::Typo)),
            ("dev-meta", "devmeta", Some(NearMiss::Typo)),
            ("dev-meta", "dev-mate", Some(NearMiss::Typo)),
            ("production", "prodcution", Some(NearMiss::Typo)),
            ("dev-meta", "dev-meta", None),
            ("dev-meta", "prod-meta", None),
            ("dev", "prd", None),
            ("prod", "dev", None),
            ("a", "", None),
        ] {
            assert_eq!(near_miss(ours, other), want, "{ours} vs {other}");
        }
    }

    #[test]
    fn verdicts() {
        let ok = |id: &str| subnet(id, "a", &[("kubernetes.io/cluster/dev-meta", "owned")]);
        let swapped = |id: &str| subnet(id, "b", &[("kubernetes.io/cluster/meta-dev", "owned")]);
        let other = |id: &str| subnet(id, "c", &[("kubernetes.io/cluster/billing", "shared")]);
        let cases: Vec<(&str, Vec<Subnet>, Vec<Status>, &str)> = vec![
            ("dev-meta", vec![ok("s1"), ok("s2"), other("s3")], vec![Status::Ok], "on 2 of 3 subnets"),
            ("dev-meta", vec![swapped("s1"), swapped("s2")], vec![Status::Fail], "same parts in another order"),
            ("dev-meta", vec![other("s1")], vec![Status::Fail], "only other clusters' tags: billing"),
            ("dev-meta", vec![subnet("s1", "a", &[])], vec![Status::Fail], "none of the 1 subnets"),
            ("dev-meta", vec![ok("s1"), swapped("s2")], vec![Status::Warn], "meta-dev on s2"),
            (
                "dev-meta",
                vec![subnet("s1", "a", &[("kubernetes.io/cluster/dev-meta", "1")])],
                vec![Status::Warn],
                "s1=\"1\"",
            ),
            ("", vec![ok("s1")], vec![Status::Fail], "empty"),
        ];
        for (name, subnets, want, text) in cases {
            let got = check(name, "vpc-1", &subnets);
            assert_eq!(got.iter().map(|v| v.status).collect::<Vec<_>>(), want, "{name} {got:?}");
            assert!(got.iter().any(|v| v.found.contains(text)), "{text:?} not in {got:?}");
            for v in got.iter().filter(|v| v.status != Status::Ok) {
                assert!(!v.fix.is_empty() && !v.expected.is_empty(), "{v:?}");
            }
        }
        let swapped_fail = &check("dev-meta", "vpc-1", &[swapped("s1")])[0];
        assert!(swapped_fail.expected.contains("kubernetes.io/cluster/dev-meta"), "{swapped_fail:?}");
        assert!(swapped_fail.fix.contains("--cluster-name"), "{swapped_fail:?}");
    }
}
