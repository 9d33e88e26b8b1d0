//! Desired vs registered → what to register and deregister, in as few calls as possible, and
//! the safety checks that come before any AWS write.

use crate::net::VpcCidrs;
use crate::target::{HealthState, Target};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

/// Default number of targets per RegisterTargets/DeregisterTargets call (ALBC uses 200 too).
pub const DEFAULT_BATCH_SIZE: usize = 200;

/// Everything the planner needs, as plain data.
#[derive(Clone, Debug)]
pub struct PlanInput<'a> {
    /// Targets that should be registered.
    pub desired: BTreeSet<Target>,
    /// What AWS reports as registered, with its state (draining ones included).
    pub registered: &'a BTreeMap<Target, HealthState>,
    /// Multi-cluster target groups: the targets this binding registered earlier. Only these may
    /// be deregistered. `None` for a target group this cluster owns alone.
    pub owned: Option<&'a BTreeSet<Target>>,
    /// VPC CIDRs; pod IPs outside them are overlay addresses the load balancer cannot reach.
    pub vpc: &'a VpcCidrs,
    /// Register out-of-VPC IPs with `AvailabilityZone=all` instead of refusing them.
    pub allow_outside_vpc: bool,
    /// Non-terminating endpoints the Service's synced EndpointSlices hold, in every slice
    /// whatever its ports or family (see [`crate::endpoints::EndpointStats::live`]).
    pub live_endpoints: usize,
    /// The Service port the binding looks for in the slices, for the refusal message.
    pub wanted_port: &'a str,
    /// The ports the slices carry, for the refusal message.
    pub slice_ports: &'a [String],
}

/// The AWS writes that bring the target group in line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Targets to register in their own AZ (the AWS default for IPs inside the VPC).
    pub register: Vec<Target>,
    /// Targets outside the VPC to register with `AvailabilityZone=all` (opt-in only).
    pub register_any_az: Vec<Target>,
    pub deregister: Vec<Target>,
    /// Pod IPs outside the VPC that were left out: reported loudly, never registered silently.
    pub outside_vpc: Vec<IpAddr>,
    /// Registered targets left alone because another cluster registered them (multi-cluster).
    pub foreign_kept: usize,
    /// QUIC targets held back for one pass: their address and port are registered under another
    /// server ID, which AWS does not let a registration change. That registration is removed
    /// by this plan and the new one made once it drains.
    pub deferred: Vec<Target>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.register.is_empty() && self.register_any_az.is_empty() && self.deregister.is_empty()
    }

    /// The minimum number of AWS write calls for this plan at `batch` targets per call.
    pub fn call_floor(&self, batch: usize) -> usize {
        [&self.register, &self.register_any_az, &self.deregister].iter().map(|v| v.len().div_ceil(batch.max(1))).sum()
    }
}

/// A plan the controller refuses to carry out.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Refusal {
    #[error(
        "refusing to deregister all {registered} registered targets: the Service's EndpointSlices still hold \
         {live_endpoints} live endpoints but none of them qualifies as a target. The binding looks for Service port \
         {wanted_port} in the slices (matched by port name); the slices carry {slice_ports}. If the Service port was \
         renamed, the EndpointSlices still carry the old name: make them carry the new one (for a selector-less \
         Service, update the slices you manage) or rename the port back; if the ports match, check the pods' readiness \
         and IP family. Targets are kept until the endpoints are really gone"
    )]
    WouldDeregisterAll { registered: usize, live_endpoints: usize, wanted_port: String, slice_ports: String },
    #[error(
        "refusing to deregister all {registered} registered targets: the Service's {live_endpoints} live endpoints \
         have only pod IPs outside the VPC CIDRs ({outside_vpc} of them, see the PodIPsOutsideVPC warning), which are \
         not registered. Emptying the target group would take the load balancer down; the registered targets are \
         kept until pods get VPC IPs again (Cilium in ENI mode) or the controller runs with \
         --allow-targets-outside-vpc=true because the VPC routes those addresses"
    )]
    WouldDeregisterAllForOutsideVpc { registered: usize, live_endpoints: usize, outside_vpc: usize },
}

/// Computes the plan. Draining targets do not count as registered: an endpoint that comes back
/// is registered again rather than matched to a target on its way out.
pub fn plan(input: &PlanInput<'_>) -> Result<Plan, Refusal> {
    let mut out = Plan::default();
    let current: BTreeSet<Target> =
        input.registered.iter().filter(|(_, s)| !s.is_draining()).map(|(t, _)| *t).collect();

    for t in &input.desired {
        if current.contains(t) {
            continue;
        }
        if t.quic.is_some() && current.iter().any(|c| (c.ip, c.port) == (t.ip, t.port)) {
            out.deferred.push(*t);
            continue;
        }
        if input.vpc.is_empty() || input.vpc.contains(&t.ip) {
            out.register.push(*t);
        } else if input.allow_outside_vpc {
            out.register_any_az.push(*t);
        } else {
            out.outside_vpc.push(t.ip);
        }
    }
    out.outside_vpc.dedup();

    for t in current.difference(&input.desired) {
        match input.owned {
            Some(owned) if !owned.contains(t) => out.foreign_kept += 1,
            _ => out.deregister.push(*t),
        }
    }

    let ours_registered = current.len() - out.foreign_kept;
    // After the plan none of our targets would be left and none would come: the group is emptied.
    let wipes_all = ours_registered > 0
        && out.deregister.len() == ours_registered
        && out.register.is_empty()
        && out.register_any_az.is_empty()
        && out.deferred.is_empty();
    if wipes_all && input.live_endpoints > 0 && !out.outside_vpc.is_empty() {
        return Err(Refusal::WouldDeregisterAllForOutsideVpc {
            registered: ours_registered,
            live_endpoints: input.live_endpoints,
            outside_vpc: out.outside_vpc.len(),
        });
    }
    if wipes_all && input.live_endpoints > 0 {
        return Err(Refusal::WouldDeregisterAll {
            registered: ours_registered,
            live_endpoints: input.live_endpoints,
            wanted_port: input.wanted_port.to_string(),
            slice_ports: if input.slice_ports.is_empty() {
                "no ports".to_string()
            } else {
                format!("ports {}", input.slice_ports.join(", "))
            },
        });
    }
    Ok(out)
}

/// Splits targets into AWS calls of at most `size` targets.
pub fn batches(targets: &[Target], size: usize) -> impl Iterator<Item = &[Target]> {
    targets.chunks(size.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Target {
        let (ip, port) = s.rsplit_once(':').unwrap();
        Target::new(ip.parse().unwrap(), port.parse().unwrap())
    }
    fn set(xs: &[&str]) -> BTreeSet<Target> {
        xs.iter().map(|s| t(s)).collect()
    }
    fn reg(xs: &[(&str, HealthState)]) -> BTreeMap<Target, HealthState> {
        xs.iter().map(|(s, h)| (t(s), *h)).collect()
    }
    fn vpc() -> VpcCidrs {
        VpcCidrs::parse(["10.0.0.0/16"]).unwrap()
    }

    /// An input with no ownership filter, no opt-in and no live endpoints.
    fn input<'a>(
        desired: BTreeSet<Target>,
        registered: &'a BTreeMap<Target, HealthState>,
        vpc: &'a VpcCidrs,
    ) -> PlanInput<'a> {
        PlanInput {
            desired,
            registered,
            owned: None,
            vpc,
            allow_outside_vpc: false,
            live_endpoints: 0,
            wanted_port: "80 (\"http\")",
            slice_ports: &[],
        }
    }

    #[test]
    fn a_new_quic_server_id_at_a_registered_address_replaces_it_over_two_passes() {
        let id = |n: u64| crate::target::QuicServerId(n.to_be_bytes());
        let old = t("10.0.0.1:443").with_quic(id(1));
        let new = t("10.0.0.1:443").with_quic(id(2));
        let other = t("10.0.0.2:443").with_quic(id(3));
        let v = vpc();
        // Pass 1: the old registration goes, the new one waits (AWS cannot change a registered
        // target's server ID); live endpoints do not make this a refused wipe.
        let registered = BTreeMap::from([(old, HealthState::Healthy)]);
        let mut i = input(BTreeSet::from([new]), &registered, &v);
        i.live_endpoints = 1;
        let p = plan(&i).unwrap();
        assert_eq!((p.register.clone(), p.deregister.clone(), p.deferred.clone()), (vec![], vec![old], vec![new]));
        // Pass 2: the old one drains, the new one is registered; others never wait.
        let registered = BTreeMap::from([(old, HealthState::Draining)]);
        let p = plan(&input(BTreeSet::from([new, other]), &registered, &v)).unwrap();
        assert_eq!((p.register, p.deferred), (vec![new, other], vec![]));
    }

    #[test]
    fn diff_table() {
        use HealthState::*;
        let v = vpc();
        // (case, desired, registered, expected register, expected deregister)
        #[allow(clippy::type_complexity)] // a table of cases reads best as tuples
        let cases: Vec<(&str, Vec<&str>, Vec<(&str, HealthState)>, Vec<&str>, Vec<&str>)> = vec![
            ("in sync", vec!["10.0.0.1:80"], vec![("10.0.0.1:80", Healthy)], vec![], vec![]),
            (
                "scale up",
                vec!["10.0.0.1:80", "10.0.0.2:80"],
                vec![("10.0.0.1:80", Healthy)],
                vec!["10.0.0.2:80"],
                vec![],
            ),
            (
                "scale down",
                vec!["10.0.0.1:80"],
                vec![("10.0.0.1:80", Healthy), ("10.0.0.2:80", Initial)],
                vec![],
                vec!["10.0.0.2:80"],
            ),
            ("replace", vec!["10.0.0.3:80"], vec![("10.0.0.1:80", Healthy)], vec!["10.0.0.3:80"], vec!["10.0.0.1:80"]),
            (
                "same ip other port is another target",
                vec!["10.0.0.1:8080"],
                vec![("10.0.0.1:80", Healthy)],
                vec!["10.0.0.1:8080"],
                vec!["10.0.0.1:80"],
            ),
            (
                "draining target re-registered",
                vec!["10.0.0.1:80"],
                vec![("10.0.0.1:80", Draining)],
                vec!["10.0.0.1:80"],
                vec![],
            ),
            ("draining target not deregistered twice", vec![], vec![("10.0.0.1:80", Draining)], vec![], vec![]),
            ("unhealthy stays registered", vec!["10.0.0.1:80"], vec![("10.0.0.1:80", Unhealthy)], vec![], vec![]),
        ];
        for (what, desired, registered, want_reg, want_dereg) in cases {
            let registered = reg(&registered);
            let p = plan(&input(set(&desired), &registered, &v)).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(p.register, want_reg.iter().map(|s| t(s)).collect::<Vec<_>>(), "{what}: register");
            assert_eq!(p.deregister, want_dereg.iter().map(|s| t(s)).collect::<Vec<_>>(), "{what}: deregister");
        }
    }

    #[test]
    fn refuses_to_wipe_while_endpoints_live() {
        let registered = reg(&[("10.0.0.1:80", HealthState::Healthy), ("10.0.0.2:80", HealthState::Healthy)]);
        let v = vpc();
        let input = PlanInput { live_endpoints: 2, ..input(BTreeSet::new(), &registered, &v) };
        let e = plan(&input).unwrap_err();
        assert!(matches!(e, Refusal::WouldDeregisterAll { registered: 2, live_endpoints: 2, .. }), "{e:?}");
        assert!(e.to_string().contains("refusing to deregister all 2 registered targets"));
        // Truly empty (scaled to zero, or every endpoint terminating): the wipe goes ahead.
        let p = plan(&PlanInput { live_endpoints: 0, ..input.clone() }).unwrap();
        assert_eq!(p.deregister.len(), 2);
        // Partial removal is never refused.
        let p = plan(&PlanInput { desired: set(&["10.0.0.1:80"]), live_endpoints: 5, ..input }).unwrap();
        assert_eq!(p.deregister, vec![t("10.0.0.2:80")]);
    }

    #[test]
    fn overlay_ips_are_reported_not_registered() {
        let registered = BTreeMap::new();
        let v = vpc();
        let input = input(set(&["10.0.0.1:80", "10.42.7.9:80", "10.42.7.9:81"]), &registered, &v);
        let p = plan(&input).unwrap();
        assert_eq!(p.register, vec![t("10.0.0.1:80")]);
        assert_eq!(p.outside_vpc, vec!["10.42.7.9".parse::<IpAddr>().unwrap()]);
        assert!(p.register_any_az.is_empty());
        let p = plan(&PlanInput { allow_outside_vpc: true, ..input }).unwrap();
        assert_eq!(p.register_any_az.len(), 2);
        assert!(p.outside_vpc.is_empty());
    }

    #[test]
    fn pods_moved_to_overlay_ips_never_empty_the_group() {
        let registered = reg(&[("10.0.0.1:80", HealthState::Healthy)]);
        let v = vpc();
        let base = input(set(&["10.42.7.9:80"]), &registered, &v);
        let e = plan(&PlanInput { live_endpoints: 1, ..base.clone() }).unwrap_err();
        assert_eq!(e, Refusal::WouldDeregisterAllForOutsideVpc { registered: 1, live_endpoints: 1, outside_vpc: 1 });
        assert!(e.to_string().contains("--allow-targets-outside-vpc"), "{e}");
        // Endpoints gone: the group may empty. Opted in: the overlay IPs are registered instead.
        assert_eq!(plan(&PlanInput { live_endpoints: 0, ..base.clone() }).unwrap().deregister.len(), 1);
        let p = plan(&PlanInput { live_endpoints: 1, allow_outside_vpc: true, ..base }).unwrap();
        assert_eq!((p.register_any_az.len(), p.deregister.len()), (1, 1));
    }

    #[test]
    fn multi_cluster_only_deregisters_what_we_registered() {
        let registered = reg(&[
            ("10.0.0.1:80", HealthState::Healthy), // ours, still desired
            ("10.0.0.2:80", HealthState::Healthy), // ours, gone
            ("10.1.0.9:80", HealthState::Healthy), // another cluster's
        ]);
        let owned = set(&["10.0.0.1:80", "10.0.0.2:80"]);
        let v = VpcCidrs::parse(["10.0.0.0/8"]).unwrap();
        let p = plan(&PlanInput { owned: Some(&owned), ..input(set(&["10.0.0.1:80"]), &registered, &v) }).unwrap();
        assert_eq!(p.deregister, vec![t("10.0.0.2:80")]);
        assert_eq!(p.foreign_kept, 1);
        // Wiping all of ours while another cluster's remain is still a wipe of ours: guarded.
        let e = plan(&PlanInput { owned: Some(&owned), live_endpoints: 1, ..input(BTreeSet::new(), &registered, &v) });
        assert!(e.is_err());
    }

    #[test]
    fn batching_and_call_floor() {
        let many: Vec<Target> = (0..450u16).map(|i| Target::new("10.0.0.1".parse().unwrap(), 1000 + i)).collect();
        let sizes: Vec<usize> = batches(&many, 200).map(<[Target]>::len).collect();
        assert_eq!(sizes, [200, 200, 50]);
        assert_eq!(batches(&many, 0).count(), 450, "a zero batch size is treated as 1, never a panic");
        let p = Plan { register: many.clone(), deregister: many[..1].to_vec(), ..Default::default() };
        assert_eq!(p.call_floor(200), 4);
        assert!(!p.is_empty());
        assert!(Plan::default().is_empty());
    }
}
