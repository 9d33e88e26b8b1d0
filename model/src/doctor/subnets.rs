//! Check 2: the role tags discovery needs, per availability zone. Internal load balancers (the
//! default scheme of Services and Ingresses) need `kubernetes.io/role/internal-elb`, internet-facing
//! ones `kubernetes.io/role/elb`; an ALB needs subnets in two AZs; ELB needs 8 free addresses per
//! subnet. Without any subnet tagged for a role, discovery classifies subnets by route table (gate
//! `SubnetDiscoveryByReachability`, `lb::subnets::reachability`): given that classification, the
//! check counts the public (internet-facing) or private (internal) subnets instead.

use super::{Verdict, list};
use crate::lb::Subnet;
use crate::lb::subnets::{CLUSTER_TAG_PREFIX, MIN_FREE_IPS, ROLE_ELB_TAG, ROLE_INTERNAL_ELB_TAG, cluster_tag};
use std::collections::{BTreeMap, BTreeSet};

pub const CHECK: &str = "subnet-roles";

/// What the cluster asks for, from its Services and Ingresses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Demand {
    /// Some Service or Ingress asks for `internet-facing`.
    pub internet_facing: bool,
    /// Some Ingress exists (an ALB needs two AZs).
    pub alb: bool,
}

/// Subnets discovery may pick: not tagged for another cluster.
fn eligible<'a>(cluster_name: &str, subnets: &'a [Subnet]) -> Vec<&'a Subnet> {
    let ours = cluster_tag(cluster_name);
    subnets
        .iter()
        .filter(|s| s.tags.contains_key(&ours) || !s.tags.keys().any(|k| k.starts_with(CLUSTER_TAG_PREFIX)))
        .collect()
}

fn has_role(s: &Subnet, role: &str) -> bool {
    s.tags.get(role).is_some_and(|v| v.is_empty() || v == "1")
}

/// `public`: per subnet, public by its route table, when the controller would classify subnets that
/// way (the gate on); `None` checks role tags only.
pub fn check(
    cluster_name: &str,
    vpc_id: &str,
    subnets: &[Subnet],
    demand: Demand,
    public: Option<&BTreeMap<String, bool>>,
) -> Vec<Verdict> {
    let candidates = eligible(cluster_name, subnets);
    let mut out = Vec::new();
    for (role, scheme, needed) in
        [(ROLE_INTERNAL_ELB_TAG, "internal", true), (ROLE_ELB_TAG, "internet-facing", demand.internet_facing)]
    {
        let object = format!("{role} subnets of VPC {vpc_id}");
        let tagged = subnets.iter().any(|s| has_role(s, role));
        // No usable role tag anywhere in the VPC: the route table decides, as discovery does.
        let by_route = match public {
            Some(p) if !tagged => Some(p),
            _ => None,
        };
        let with_role: Vec<&&Subnet> = candidates
            .iter()
            .filter(|s| match by_route {
                Some(p) => p.get(&s.id) == Some(&(scheme == "internet-facing")),
                None => has_role(s, role),
            })
            .collect();
        let usable: Vec<&&Subnet> = with_role.iter().copied().filter(|s| s.available_ips >= MIN_FREE_IPS).collect();
        let azs: BTreeSet<&str> = usable.iter().map(|s| s.availability_zone.as_str()).collect();
        let odd: Vec<String> = subnets
            .iter()
            .filter(|s| s.tags.get(role).is_some_and(|v| !(v.is_empty() || v == "1")))
            .map(|s| format!("{}={:?}", s.id, s.tags[role]))
            .collect();
        let full: Vec<String> = with_role
            .iter()
            .filter(|s| s.available_ips < MIN_FREE_IPS)
            .map(|s| format!("{} ({} free)", s.id, s.available_ips))
            .collect();
        let tag_fix = format!(
            "tag one subnet per AZ for {scheme} load balancers: aws ec2 create-tags --resources <subnet-ids> --tags Key={role},Value=1"
        );
        if azs.is_empty() {
            let mut found = match by_route {
                Some(_) => format!(
                    "no subnet tagged {role}, and by route table no {} subnet among {} eligible subnets",
                    if scheme == "internet-facing" { "public" } else { "private" },
                    candidates.len()
                ),
                None => format!("no {scheme}-role subnet among {} eligible subnets", candidates.len()),
            };
            if !odd.is_empty() {
                found.push_str(&format!("; values other than 1 or empty: {}", list(&odd, 5)));
            }
            if !full.is_empty() {
                found.push_str(&format!("; fewer than {MIN_FREE_IPS} free IPs: {}", list(&full, 5)));
            }
            let expected = format!("{role}=1 on a subnet (tagged for this cluster or untagged) in each AZ");
            if needed {
                out.push(Verdict::fail(CHECK, object, found, expected, tag_fix));
            } else {
                out.push(Verdict::warn(
                    CHECK,
                    object,
                    found,
                    expected,
                    format!("nothing asks for {scheme} yet; {tag_fix} before one does"),
                ));
            }
            continue;
        }
        let found = format!(
            "{}{} AZ(s): {}",
            if by_route.is_some() {
                format!(
                    "no subnet tagged {role}; by route table ({} subnets, gate SubnetDiscoveryByReachability): ",
                    if scheme == "internet-facing" { "public" } else { "private" }
                )
            } else {
                String::new()
            },
            azs.len(),
            list(
                &usable
                    .iter()
                    .map(|s| format!("{} {} ({} free)", s.availability_zone, s.id, s.available_ips))
                    .collect::<Vec<_>>(),
                6
            )
        );
        if azs.len() < 2 && (demand.alb || !needed) {
            out.push(Verdict::new(
                CHECK,
                if demand.alb && needed { super::Status::Fail } else { super::Status::Warn },
                object,
                found,
                "subnets in at least 2 AZs (an ALB refuses fewer)",
                tag_fix,
            ));
        } else if !full.is_empty() || !odd.is_empty() {
            let mut problems = Vec::new();
            if !full.is_empty() {
                problems.push(format!("fewer than {MIN_FREE_IPS} free IPs (skipped): {}", list(&full, 5)));
            }
            if !odd.is_empty() {
                problems.push(format!("role values other than 1 or empty (skipped): {}", list(&odd, 5)));
            }
            out.push(Verdict::warn(
                CHECK,
                object,
                format!("{found}; {}", problems.join("; ")),
                format!("{role}=1 and at least {MIN_FREE_IPS} free IPs"),
                "free addresses in the full subnets (or tag others) and set role values to 1",
            ));
        } else {
            out.push(Verdict::ok(CHECK, object, found));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Status;
    use crate::doctor::cluster_tag::tests::subnet;

    const C: &str = "kubernetes.io/cluster/dev";

    fn statuses(subnets: &[Subnet], demand: Demand) -> Vec<Status> {
        check("dev", "vpc-1", subnets, demand, None).iter().map(|v| v.status).collect()
    }

    #[test]
    fn roles_per_az() {
        let internal = |id: &str, az: &str| subnet(id, az, &[(C, "owned"), (ROLE_INTERNAL_ELB_TAG, "1")]);
        let public = |id: &str, az: &str| subnet(id, az, &[(C, "owned"), (ROLE_ELB_TAG, "")]);
        let both = vec![internal("i1", "a"), internal("i2", "b"), public("p1", "a"), public("p2", "b")];
        let none = Demand::default();
        let public_demand = Demand { internet_facing: true, alb: false };
        let alb = Demand { internet_facing: false, alb: true };
        let cases: Vec<(&str, Vec<Subnet>, Demand, Vec<Status>)> = vec![
            ("healthy", both.clone(), alb, vec![Status::Ok, Status::Ok]),
            (
                "no public role, nothing asks",
                vec![internal("i1", "a"), internal("i2", "b")],
                none,
                vec![Status::Ok, Status::Warn],
            ),
            (
                "no public role, asked for",
                vec![internal("i1", "a"), internal("i2", "b")],
                public_demand,
                vec![Status::Ok, Status::Fail],
            ),
            ("no internal role", vec![public("p1", "a"), public("p2", "b")], none, vec![Status::Fail, Status::Ok]),
            ("one AZ with an ALB", vec![internal("i1", "a"), public("p1", "a")], alb, vec![Status::Fail, Status::Warn]),
            ("one AZ, NLB only", vec![internal("i1", "a"), public("p1", "a")], none, vec![Status::Ok, Status::Warn]),
            (
                "other cluster's subnets do not count",
                vec![subnet("x", "a", &[("kubernetes.io/cluster/other", "owned"), (ROLE_INTERNAL_ELB_TAG, "1")])],
                none,
                vec![Status::Fail, Status::Warn],
            ),
            (
                "untagged subnets count",
                vec![
                    subnet("u1", "a", &[(ROLE_INTERNAL_ELB_TAG, "1")]),
                    subnet("u2", "b", &[(ROLE_INTERNAL_ELB_TAG, "1")]),
                ],
                none,
                vec![Status::Ok, Status::Warn],
            ),
        ];
        for (name, subnets, demand, want) in cases {
            assert_eq!(statuses(&subnets, demand), want, "{name}");
        }
    }

    #[test]
    fn free_ips_and_values_are_named() {
        let mut full = subnet("full", "c", &[(C, "owned"), (ROLE_INTERNAL_ELB_TAG, "1")]);
        full.available_ips = 3;
        let odd = subnet("odd", "c", &[(C, "owned"), (ROLE_INTERNAL_ELB_TAG, "true")]);
        let good = |id: &str, az: &str| subnet(id, az, &[(C, "owned"), (ROLE_INTERNAL_ELB_TAG, "1")]);
        let v = check("dev", "vpc-1", &[good("g1", "a"), good("g2", "b"), full.clone(), odd], Demand::default(), None);
        assert_eq!(v[0].status, Status::Warn, "{v:?}");
        assert!(v[0].found.contains("full (3 free)") && v[0].found.contains("odd=\"true\""), "{v:?}");
        let v = check("dev", "vpc-1", &[full], Demand::default(), None);
        assert_eq!(v[0].status, Status::Fail);
        assert!(v[0].found.contains("full (3 free)") && v[0].fix.contains("create-tags"), "{v:?}");
    }

    /// Without any role tag, the route table classifies: public subnets for internet-facing,
    /// private ones for internal, said so in what doctor found.
    #[test]
    fn without_role_tags_the_route_table_decides() {
        let plain =
            vec![subnet("s1", "a", &[]), subnet("s2", "b", &[]), subnet("s3", "a", &[]), subnet("s4", "b", &[])];
        let public: BTreeMap<String, bool> = [("s1", true), ("s2", true), ("s3", false), ("s4", false)]
            .into_iter()
            .map(|(k, v)| (k.into(), v))
            .collect();
        let demand = Demand { internet_facing: true, alb: true };
        let v = check("dev", "vpc-1", &plain, demand, Some(&public));
        assert_eq!(v.iter().map(|v| v.status).collect::<Vec<_>>(), [Status::Ok, Status::Ok], "{v:?}");
        assert!(v[0].found.contains("by route table (private subnets") && v[0].found.contains("s3"), "{v:?}");
        assert!(v[1].found.contains("by route table (public subnets") && v[1].found.contains("s1"), "{v:?}");
        let all_private: BTreeMap<String, bool> = public.keys().map(|k| (k.clone(), false)).collect();
        let v = check("dev", "vpc-1", &plain, demand, Some(&all_private));
        assert_eq!(v[1].status, Status::Fail);
        assert!(v[1].found.contains("by route table no public subnet"), "{v:?}");
        assert_eq!(statuses(&plain, demand), [Status::Fail, Status::Fail], "without the classification: tags only");
    }
}
