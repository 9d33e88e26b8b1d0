//! Check 3: the pod IPs behind our Services are VPC addresses an NLB/ALB can send to. Overlay
//! addresses (Canal/Flannel's 10.42.0.0/16 on RKE2, Cilium's cluster-pool default 10.0.0.0/8,
//! ...) are named with the pod and the likely cause; Cilium's IPAM mode (ENI expected) is read
//! from its ConfigMap.

use super::{Verdict, list};
use crate::net::VpcCidrs;
use ipnet::IpNet;
use std::collections::BTreeMap;
use std::net::IpAddr;

pub const CHECK: &str = "pod-ips";

/// One endpoint address of a Service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodAddress {
    /// `namespace/name` of the Service.
    pub service: String,
    /// The pod behind the address (EndpointSlice `targetRef`), if named.
    pub pod: Option<String>,
    pub ip: IpAddr,
}

/// What was read of Cilium (`kube-system/cilium-config`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cni {
    /// No Cilium ConfigMap: another CNI, or Cilium elsewhere.
    Unknown,
    /// Cilium with this `ipam` value (`eni`, `cluster-pool`, `kubernetes`, ...).
    Cilium { ipam: String },
}

/// The usual source of a pod address outside the VPC.
pub fn likely_cause(ip: IpAddr, node_pod_cidrs: &[IpNet], cni: &Cni) -> String {
    let within = |cidr: &str| cidr.parse::<IpNet>().is_ok_and(|n| n.contains(&ip));
    if let Cni::Cilium { ipam } = cni
        && ipam != "eni"
    {
        return format!("Cilium runs with ipam={ipam}: pods get addresses from an overlay pool, not from ENIs");
    }
    if within("10.42.0.0/16") {
        "10.42.0.0/16 is RKE2's default cluster CIDR (Canal/Flannel VXLAN overlay)".into()
    } else if within("10.244.0.0/16") {
        "10.244.0.0/16 is Flannel's default overlay network".into()
    } else if node_pod_cidrs.iter().any(|n| n.contains(&ip)) {
        "the address comes from the node's spec.podCIDR (host-local overlay IPAM)".into()
    } else {
        "the CNI hands out addresses the VPC does not route".into()
    }
}

/// Verdicts for the addresses of the checked Services. `allow_outside_vpc` mirrors
/// `--allow-targets-outside-vpc` (the operator vouches that the VPC routes them).
pub fn check(
    vpc: &VpcCidrs,
    addresses: &[PodAddress],
    node_pod_cidrs: &[IpNet],
    cni: &Cni,
    allow_outside_vpc: bool,
) -> Vec<Verdict> {
    let mut out = Vec::new();
    let cidrs = vpc.to_strings().join(", ");
    let mut outside: BTreeMap<&str, Vec<&PodAddress>> = BTreeMap::new();
    for a in addresses.iter().filter(|a| !vpc.contains(&a.ip)) {
        outside.entry(&a.service).or_default().push(a);
    }
    for (service, addrs) in &outside {
        let named: Vec<String> =
            addrs.iter().map(|a| format!("pod {} has {}", a.pod.as_deref().unwrap_or("(unnamed)"), a.ip)).collect();
        let found = format!(
            "{} of its pod IPs are outside the VPC CIDRs {cidrs}: {}; likely cause: {}",
            addrs.len(),
            list(&named, 3),
            likely_cause(addrs[0].ip, node_pod_cidrs, cni)
        );
        let expected = format!("pod IPs inside {cidrs} (Cilium in ENI mode gives pods VPC addresses)");
        let fix = "run Cilium with ipam: eni (pods on ENI secondary addresses), or use instance targets; \
                   --allow-targets-outside-vpc only if the VPC really routes these addresses (peering)";
        out.push(if allow_outside_vpc {
            Verdict::warn(CHECK, format!("Service {service}"), found, expected, fix)
        } else {
            Verdict::fail(CHECK, format!("Service {service}"), found, expected, fix)
        });
    }
    let services = addresses.iter().map(|a| a.service.as_str()).collect::<std::collections::BTreeSet<_>>().len();
    match cni {
        Cni::Cilium { ipam } if ipam != "eni" => out.push(Verdict::new(
            CHECK,
            if outside.is_empty() { super::Status::Warn } else { super::Status::Fail },
            "ConfigMap kube-system/cilium-config",
            format!("ipam: {ipam}"),
            "ipam: eni",
            "set ipam: eni (Helm: --set ipam.mode=eni,eni.enabled=true) so pods get VPC addresses",
        )),
        Cni::Cilium { .. } if outside.is_empty() => out.push(Verdict::ok(
            CHECK,
            "ConfigMap kube-system/cilium-config",
            format!("ipam: eni; {} pod IPs of {services} Services inside {cidrs}", addresses.len()),
        )),
        Cni::Unknown if outside.is_empty() => out.push(Verdict::ok(
            CHECK,
            format!("pod IPs of {services} Services"),
            format!("{} pod IPs inside {cidrs} (no kube-system/cilium-config: CNI not identified)", addresses.len()),
        )),
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Status;

    fn addr(svc: &str, pod: &str, ip: &str) -> PodAddress {
        PodAddress { service: svc.into(), pod: Some(pod.into()), ip: ip.parse().unwrap() }
    }

    #[test]
    fn overlay_addresses_are_named_with_pod_and_cause() {
        let vpc = VpcCidrs::parse(["10.0.0.0/16"]).unwrap();
        let eni = Cni::Cilium { ipam: "eni".into() };
        let pool = Cni::Cilium { ipam: "cluster-pool".into() };
        let node_cidrs: Vec<IpNet> = vec!["172.20.1.0/24".parse().unwrap()];
        let inside = vec![addr("a/web", "web-0", "10.0.100.5"), addr("a/web", "web-1", "10.0.132.9")];
        let canal = vec![addr("a/web", "web-0", "10.0.100.5"), addr("a/web", "web-1", "10.42.1.7")];
        #[allow(clippy::type_complexity)] // a table of cases reads best as tuples
        let cases: Vec<(&str, Vec<PodAddress>, Cni, bool, Vec<Status>, &str)> = vec![
            ("eni healthy", inside.clone(), eni.clone(), false, vec![Status::Ok], "ipam: eni; 2 pod IPs of 1 Services"),
            ("no cilium healthy", inside.clone(), Cni::Unknown, false, vec![Status::Ok], "CNI not identified"),
            ("canal", canal.clone(), Cni::Unknown, false, vec![Status::Fail], "pod web-1 has 10.42.1.7"),
            ("canal cause", canal.clone(), Cni::Unknown, false, vec![Status::Fail], "Canal/Flannel"),
            ("allowed", canal.clone(), Cni::Unknown, true, vec![Status::Warn], "outside the VPC CIDRs 10.0.0.0/16"),
            (
                "pool",
                vec![addr("a/x", "x-0", "10.1.0.3")],
                pool.clone(),
                false,
                vec![Status::Fail, Status::Fail],
                "ipam=cluster-pool",
            ),
            ("pool, addresses happen to fit", inside, pool, false, vec![Status::Warn], "ipam: cluster-pool"),
            ("flannel", vec![addr("a/x", "x-0", "10.244.3.3")], Cni::Unknown, false, vec![Status::Fail], "Flannel"),
            (
                "host-local",
                vec![addr("a/x", "x-0", "172.20.1.9")],
                Cni::Unknown,
                false,
                vec![Status::Fail],
                "spec.podCIDR",
            ),
            ("nothing", vec![], Cni::Unknown, false, vec![Status::Ok], "0 pod IPs"),
        ];
        for (name, addrs, cni, allow, want, text) in cases {
            let v = check(&vpc, &addrs, &node_cidrs, &cni, allow);
            assert_eq!(v.iter().map(|v| v.status).collect::<Vec<_>>(), want, "{name}: {v:?}");
            assert!(v.iter().any(|v| v.found.contains(text)), "{name}: {text:?} not in {v:?}");
        }
    }

    #[test]
    fn one_verdict_per_service() {
        let vpc = VpcCidrs::parse(["10.0.0.0/16"]).unwrap();
        let addrs =
            vec![addr("a/x", "x-0", "10.42.0.1"), addr("a/x", "x-1", "10.42.0.2"), addr("b/y", "y-0", "10.42.0.3")];
        let v = check(&vpc, &addrs, &[], &Cni::Unknown, false);
        assert_eq!(v.iter().map(|v| v.object.as_str()).collect::<Vec<_>>(), ["Service a/x", "Service b/y"]);
        assert!(v[0].found.starts_with("2 of its pod IPs"), "{v:?}");
    }
}
