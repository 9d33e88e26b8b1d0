//! IngressClassParams precedence: each field that is set replaces the annotation it stands for
//! (ALBC `model_build_*`: scheme, ip-address-type, subnets, inbound-cidrs, prefix lists, ssl-policy,
//! certificates, ssl-redirect, load-balancer-name, target-type, attributes, capacity, WAFv2 and
//! `spec.group` over `group.name`). Tags merge, the params' value winning per key (`--default-tags`
//! win over both, applied by `lb::tags`). Listener attributes from `spec.listeners` replace the
//! annotation for the same protocol and port.

use super::annotations::IngressSettings;
use crate::crd::IngressClassParamsSpec;
use crate::crd::ingress_class_params::{ParamsIpAddressType, ParamsListenerProtocol, ParamsScheme};
use crate::lb::{LbIpAddressType, Protocol, Scheme};

/// The settings of one Ingress once its IngressClassParams (if any) have been applied.
pub fn apply_params(settings: &IngressSettings, params: Option<&IngressClassParamsSpec>) -> IngressSettings {
    let mut s = settings.clone();
    let Some(p) = params else { return s };
    let kv = |v: &[crate::crd::ingress_class_params::KeyValue]| {
        v.iter().map(|x| (x.key.clone(), x.value.clone())).collect::<std::collections::BTreeMap<_, _>>()
    };
    if let Some(g) = &p.group {
        s.group_name = Some(g.name.clone());
    }
    if let Some(n) = &p.load_balancer_name {
        s.load_balancer_name = Some(n.clone());
    }
    if let Some(sc) = p.scheme {
        s.scheme = Some(match sc {
            ParamsScheme::Internal => Scheme::Internal,
            ParamsScheme::InternetFacing => Scheme::InternetFacing,
        });
    }
    if let Some(t) = p.ip_address_type {
        s.ip_address_type = Some(match t {
            ParamsIpAddressType::Ipv4 => LbIpAddressType::Ipv4,
            ParamsIpAddressType::Dualstack => LbIpAddressType::Dualstack,
            ParamsIpAddressType::DualstackWithoutPublicIpv4 => LbIpAddressType::DualstackWithoutPublicIpv4,
        });
    }
    if let Some(sub) = p.subnets.as_ref().filter(|x| !x.ids.is_empty()) {
        s.subnets = Some(sub.ids.clone());
    }
    if !p.inbound_cidrs.is_empty() {
        s.inbound_cidrs = Some(p.inbound_cidrs.iter().filter_map(|c| c.parse().ok()).collect());
    }
    if !p.prefix_lists().is_empty() {
        s.security_group_prefix_lists = Some(p.prefix_lists());
    }
    if !p.certificate_arn.is_empty() {
        s.certificate_arns = p.certificate_arn.clone();
    }
    if let Some(pol) = p.ssl_policy.as_ref().filter(|x| !x.is_empty()) {
        s.ssl_policy = Some(pol.clone());
    }
    if let Some(port) = p.ssl_redirect_port.as_ref().and_then(|x| x.parse::<u16>().ok()) {
        s.ssl_redirect = Some(port);
    }
    if let Some(t) = p.target_type {
        s.backend.target_type = Some(t);
    }
    if !p.load_balancer_attributes.is_empty() {
        s.load_balancer_attributes = Some(kv(&p.load_balancer_attributes));
    }
    s.backend.tags.extend(kv(&p.tags));
    for l in &p.listeners {
        let proto = match l.protocol {
            Some(ParamsListenerProtocol::HTTPS) => Protocol::Https,
            _ => Protocol::Http,
        };
        if let Some(port) = l.port.and_then(|x| u16::try_from(x).ok()) {
            s.listener_attributes.insert((proto, port), kv(&l.listener_attributes));
        }
    }
    if let Some(c) = p.minimum_load_balancer_capacity {
        s.minimum_capacity_units = u32::try_from(c.capacity_units).ok();
    }
    if let Some(arn) = &p.wafv2_acl_arn {
        s.wafv2_acl_arn = Some(arn.clone());
    }
    if let Some(name) = &p.wafv2_acl_name {
        s.wafv2_acl_name = Some(name.clone());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::TargetType;
    use crate::crd::ingress_class_params::{IngressGroupRef, KeyValue, ParamsSubnets};

    #[test]
    fn params_win_where_set_and_leave_the_rest() {
        let mut ann =
            IngressSettings { scheme: Some(Scheme::Internal), group_name: Some("a".into()), ..Default::default() };
        ann.ssl_policy = Some("ann".into());
        ann.backend.tags.insert("team".into(), "ann".into());
        ann.backend.tags.insert("keep".into(), "1".into());
        let p = IngressClassParamsSpec {
            group: Some(IngressGroupRef { name: "g".into() }),
            scheme: Some(ParamsScheme::InternetFacing),
            subnets: Some(ParamsSubnets { ids: vec!["subnet-1".into()], ..Default::default() }),
            inbound_cidrs: vec!["10.0.0.0/8".into()],
            prefix_lists_ids_legacy: vec!["pl-1".into()],
            certificate_arn: vec!["arn:c".into()],
            ssl_redirect_port: Some("443".into()),
            target_type: Some(TargetType::Ip),
            tags: vec![KeyValue { key: "team".into(), value: "icp".into() }],
            wafv2_acl_arn: Some("arn:w".into()),
            ..Default::default()
        };
        let s = apply_params(&ann, Some(&p));
        assert_eq!(s.group_name.as_deref(), Some("g"));
        assert_eq!(s.scheme, Some(Scheme::InternetFacing));
        assert_eq!(s.subnets, Some(vec!["subnet-1".into()]));
        assert_eq!(s.inbound_cidrs.as_ref().map(Vec::len), Some(1));
        assert_eq!(s.security_group_prefix_lists, Some(vec!["pl-1".into()]));
        assert_eq!(s.certificate_arns, ["arn:c"]);
        assert_eq!(s.ssl_redirect, Some(443));
        assert_eq!(s.ssl_policy.as_deref(), Some("ann"), "not set in params: the annotation stays");
        assert_eq!(s.backend.target_type, Some(TargetType::Ip));
        assert_eq!(s.backend.tags["team"], "icp");
        assert_eq!(s.backend.tags["keep"], "1");
        assert_eq!(s.wafv2_acl_arn.as_deref(), Some("arn:w"));
        assert_eq!(apply_params(&ann, None), ann);
        assert_eq!(apply_params(&ann, Some(&IngressClassParamsSpec::default())), ann);
    }
}
