//! What the strict tenancy mode refuses in a TargetGroupBinding, said at admission: the role it
//! assumes and the sources `spec.networking` opens (`crate::tenancy`). The controller applies the
//! same policy whatever admission said (a binding admitted before the policy changed, or with the
//! webhook off); this is the early, precise answer. The target group itself is checked against
//! its tags and the policy once it is described ([`crate::tg_ownership::target_group_access`]).

use super::Violation;
use crate::crd::TargetGroupBindingSpec;
use crate::tenancy::{NetworkSource, Tenancy, Verdict};
use ipnet::IpNet;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeSet;

/// The strict mode's refusals for binding `namespace/name` with `spec` (empty in the compatible
/// mode). A named port is resolved only against pods, so a rule with one is checked by the
/// controller, not here; a peer that does not parse is `validate_tgb_spec`'s to report.
pub fn tenancy_violations(
    tenancy: &Tenancy,
    namespace: &str,
    name: &str,
    spec: &TargetGroupBindingSpec,
) -> Vec<Violation> {
    let mut out = Vec::new();
    if let Some(role) = spec.role_to_assume()
        && let Verdict::Refused(r) = tenancy.assume_role(namespace, name, &role.role_arn)
    {
        out.push(Violation::new("spec.iamRoleArnToAssume", "role_not_granted", r.detail));
    }
    let mut seen = BTreeSet::new();
    for rule in spec.networking.iter().flat_map(|n| &n.ingress) {
        // Empty `ports`: every TCP port (the CRD's documented default).
        let ranges: Vec<(u16, u16)> = if rule.ports.is_empty() {
            vec![(0, u16::MAX)]
        } else {
            rule.ports
                .iter()
                .filter_map(|p| match &p.port {
                    None => Some((0, u16::MAX)),
                    Some(IntOrString::Int(n)) => u16::try_from(*n).ok().map(|n| (n, n)),
                    Some(IntOrString::String(_)) => None,
                })
                .collect()
        };
        for source in rule.from.iter().filter_map(source_of) {
            for (from, to) in &ranges {
                if let Verdict::Refused(r) = tenancy.networking_source(namespace, name, &source, *from, *to)
                    && seen.insert(r.detail.clone())
                {
                    out.push(Violation::new("spec.networking", "networking_not_granted", r.detail));
                }
            }
        }
    }
    out
}

fn source_of(peer: &crate::crd::NetworkingPeer) -> Option<NetworkSource> {
    if let Some(sg) = &peer.security_group {
        return Some(NetworkSource::SecurityGroup(sg.group_id.trim().to_string()));
    }
    let net: IpNet = peer.ip_block.as_ref()?.cidr.trim().parse().ok()?;
    Some(NetworkSource::Cidr(net.trunc()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenancy::TenancyMode;
    use serde_json::json;

    const POLICY: &str = r#"{
        "networking": [{"namespaces": ["team-a"], "cidrs": ["10.0.0.0/8"], "ports": ["80-8080"]}],
        "assumeRoles": [{"namespaces": ["team-a"], "roleArns": ["arn:aws:iam::111122223333:role/aws-lb-controller/team-a"]}]
    }"#;

    fn spec(v: serde_json::Value) -> TargetGroupBindingSpec {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn strict_refuses_roles_and_sources_not_granted_and_compatible_refuses_nothing() {
        let asks = spec(json!({
            "serviceRef": {"name": "web", "port": 80},
            "iamRoleArnToAssume": "arn:aws:iam::444455556666:role/aws-lb-controller/team-b",
            "networking": {"ingress": [
                {"from": [{"ipBlock": {"cidr": "10.1.0.0/16"}}, {"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"port": 80}, {"port": "http"}]},
                {"from": [{"securityGroup": {"groupID": "sg-other"}}], "ports": []},
                {"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"port": 80}]}
            ]}
        }));
        let strict = Tenancy::parse(TenancyMode::Strict, POLICY, "test").unwrap();
        let v = tenancy_violations(&strict, "team-a", "web", &asks);
        let fields: Vec<(&str, &str)> = v.iter().map(|v| (v.field, v.category)).collect();
        assert_eq!(
            fields,
            [
                ("spec.iamRoleArnToAssume", "role_not_granted"),
                ("spec.networking", "networking_not_granted"),
                ("spec.networking", "networking_not_granted"),
            ],
            "{v:#?}"
        );
        assert!(v[0].message.contains("team-b") && v[0].message.contains("Fix"), "{}", v[0]);
        assert!(v[1].message.contains("ipBlock 0.0.0.0/0") && v[1].message.contains("ports 80-80"), "{}", v[1]);
        assert!(v[2].message.contains("security group sg-other") && v[2].message.contains("0-65535"), "{}", v[2]);

        // What the policy grants passes.
        let granted = spec(json!({
            "serviceRef": {"name": "web", "port": 80},
            "iamRoleArnToAssume": "arn:aws:iam::111122223333:role/aws-lb-controller/team-a",
            "networking": {"ingress": [{"from": [{"ipBlock": {"cidr": "10.1.0.0/16"}}], "ports": [{"port": 443}]}]}
        }));
        assert_eq!(tenancy_violations(&strict, "team-a", "web", &granted), vec![]);
        assert_eq!(tenancy_violations(&strict, "team-b", "web", &granted).len(), 2, "another namespace's grants");

        let compatible = Tenancy::parse(TenancyMode::Compatible, POLICY, "test").unwrap();
        assert_eq!(tenancy_violations(&compatible, "team-a", "web", &asks), vec![]);
    }
}
