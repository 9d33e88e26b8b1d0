//! IngressClassParams precedence: each field that is set replaces the annotation it stands for
//! (ALBC `model_build_*`: scheme, ip-address-type, subnets, inbound-cidrs, prefix lists, ssl-policy,
//! certificates, ssl-redirect, load-balancer-name, target-type, attributes, capacity, WAFv2 and
//! `spec.group` over `group.name`). Tags, `loadBalancerAttributes` and the listener attributes of
//! `spec.listeners` merge with the annotations', the params' value winning per key, as in ALBC
//! (`--default-tags` win over both tag sets, applied by `lb::tags`).

use super::annotations::IngressSettings;
use crate::crd::IngressClassParamsSpec;
use crate::crd::ingress_class_params::{ParamsIpAddressType, ParamsListenerProtocol, ParamsScheme};
use crate::lb::{LbIpAddressType, Protocol, Scheme};

/// The settings of one Ingress once its IngressClassParams (if any) have been applied, or why the
/// params cannot be applied: every field the controller cannot honour as written is refused here,
/// naming the field, the value and the fix (never dropped silently). `params_name` is for messages.
pub fn apply_params(
    settings: &IngressSettings,
    params: Option<&IngressClassParamsSpec>,
    params_name: &str,
) -> Result<IngressSettings, String> {
    let Some(p) = params else { return Ok(settings.clone()) };
    let problems = refusals(p);
    if !problems.is_empty() {
        return Err(format!("IngressClassParams {params_name}: {}", problems.join("; ")));
    }
    Ok(merge(settings, p))
}

/// Fields of the params that cannot be honoured as written, each with its fix.
fn refusals(p: &IngressClassParamsSpec) -> Vec<String> {
    let keys = p.tags.iter().map(|t| t.key.as_str());
    let mut out: Vec<String> =
        crate::lb::tags::reserved_tag_problem(keys, "IngressClassParams spec.tags").into_iter().collect();
    if let Some(sub) = &p.subnets {
        match (sub.ids.is_empty(), sub.tags.is_empty()) {
            (false, false) => out.push(format!(
                "spec.subnets sets both ids {:?} and tags {:?} (expected: exactly one); keep one of them",
                sub.ids, sub.tags
            )),
            (true, true) => out.push(
                "spec.subnets is empty (expected: ids or tags); set one of them, or remove spec.subnets for \
                 role-tag discovery"
                    .to_string(),
            ),
            _ => {}
        }
        if let Some((key, _)) = sub.tags.iter().find(|(k, _)| k.is_empty()) {
            out.push(format!("spec.subnets.tags has an empty key {key:?} (expected: a tag key); remove it"));
        }
    }
    for c in &p.inbound_cidrs {
        if c.parse::<ipnet::IpNet>().is_err() {
            out.push(format!(
                "spec.inboundCIDRs has {c:?}, which is not a CIDR (expected e.g. 10.0.0.0/8 or 2600:1f14::/56); fix or \
                 remove it"
            ));
        }
    }
    if let Some(port) = &p.ssl_redirect_port
        && !port.is_empty()
        && !matches!(port.parse::<u16>(), Ok(1..))
    {
        out.push(format!("spec.sslRedirectPort is {port:?} (expected: a port 1-65535 as a string, e.g. \"443\")"));
    }
    for (i, l) in p.listeners.iter().enumerate() {
        match l.port {
            Some(port) if !(1..=65535).contains(&port) => {
                out.push(format!("spec.listeners[{i}].port is {port} (expected: 1-65535)"))
            }
            None if !l.listener_attributes.is_empty() => out.push(format!(
                "spec.listeners[{i}] has listenerAttributes but no port (expected: the listener's port); add \
                 spec.listeners[{i}].port"
            )),
            _ => {}
        }
        if l.protocol.is_none() && !l.listener_attributes.is_empty() {
            out.push(format!(
                "spec.listeners[{i}] has listenerAttributes but no protocol (expected: HTTP or HTTPS; ALBC matches \
                 such an entry to no listener); add spec.listeners[{i}].protocol"
            ));
        }
    }
    if let Some(c) = p.minimum_load_balancer_capacity
        && c.capacity_units < 0
    {
        out.push(format!(
            "spec.minimumLoadBalancerCapacity.capacityUnits is {} (expected: 0 or more)",
            c.capacity_units
        ));
    }
    out
}

fn merge(settings: &IngressSettings, p: &IngressClassParamsSpec) -> IngressSettings {
    let mut s = settings.clone();
    let kv = |v: &[crate::crd::ingress_class_params::KeyValue]| {
        v.iter().map(|x| (x.key.clone(), x.value.clone())).collect::<std::collections::BTreeMap<_, _>>()
    };
    if let Some(g) = &p.group {
        s.group_name = Some(g.name.clone());
    }
    // As ALBC's Go strings: an empty value is unset.
    if let Some(n) = p.load_balancer_name.as_ref().filter(|n| !n.is_empty()) {
        s.load_balancer_name = Some(n.clone());
    }
    // As ALBC: the class's pool wins over the members' annotations; an empty one sets none.
    if let Some(pool) =
        p.ipam_configuration.as_ref().and_then(|c| c.ipv4_ipam_pool_id.as_deref()).filter(|x| !x.is_empty())
    {
        s.ipv4_ipam_pool = Some(pool.to_string());
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
    if let Some(sub) = &p.subnets {
        if !sub.ids.is_empty() {
            s.subnets = Some(sub.ids.clone());
            s.subnet_tags = None;
        } else if !sub.tags.is_empty() {
            s.subnets = None;
            s.subnet_tags = Some(sub.tags.clone());
        }
    }
    if !p.inbound_cidrs.is_empty() {
        // Checked by `refusals`.
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
        s.backend.class_target_type = Some(t);
    }
    if !p.load_balancer_attributes.is_empty() {
        s.load_balancer_attributes.get_or_insert_with(Default::default).extend(kv(&p.load_balancer_attributes));
    }
    s.backend.tags.extend(kv(&p.tags));
    s.backend.class_tags = kv(&p.tags);
    for l in &p.listeners {
        let proto = match l.protocol {
            Some(ParamsListenerProtocol::HTTPS) => Protocol::Https,
            Some(ParamsListenerProtocol::HTTP) => Protocol::Http,
            None => continue, // refused above when it has attributes
        };
        if let Some(port) = l.port.and_then(|x| u16::try_from(x).ok()) {
            s.listener_attributes.entry((proto, port)).or_default().extend(kv(&l.listener_attributes));
        }
    }
    if let Some(c) = p.minimum_load_balancer_capacity {
        s.minimum_capacity_units = u32::try_from(c.capacity_units).ok();
    }
    if let Some(arn) = p.wafv2_acl_arn.as_ref().filter(|x| !x.is_empty()) {
        s.wafv2_acl_arn = Some(arn.clone());
    }
    if let Some(name) = p.wafv2_acl_name.as_ref().filter(|x| !x.is_empty()) {
        s.wafv2_acl_name = Some(name.clone());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::TargetType;
    use crate::crd::ingress_class_params::{
        IngressGroupRef, IpamConfiguration, KeyValue, MinimumCapacity, ParamsListener, ParamsSubnets,
    };
    use std::collections::BTreeMap;

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
        let s = apply_params(&ann, Some(&p), "icp").unwrap();
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
        assert_eq!(apply_params(&ann, None, "none"), Ok(ann.clone()));
        assert_eq!(apply_params(&ann, Some(&IngressClassParamsSpec::default()), "empty"), Ok(ann));
    }

    /// ALBC: the class's IPAM pool wins over the members' `ipam-ipv4-pool-id`; an empty one sets none.
    #[test]
    fn the_class_ipam_pool_wins_over_the_annotation() {
        let ann = IngressSettings { ipv4_ipam_pool: Some("ipam-pool-ann".into()), ..Default::default() };
        let with = |pool: Option<&str>| IngressClassParamsSpec {
            ipam_configuration: Some(IpamConfiguration { ipv4_ipam_pool_id: pool.map(str::to_string) }),
            ..Default::default()
        };
        let got = |p: IngressClassParamsSpec| apply_params(&ann, Some(&p), "icp").unwrap().ipv4_ipam_pool;
        assert_eq!(got(with(Some("ipam-pool-icp"))).as_deref(), Some("ipam-pool-icp"));
        assert_eq!(got(with(Some(""))).as_deref(), Some("ipam-pool-ann"), "empty: the annotation stays");
        assert_eq!(got(with(None)).as_deref(), Some("ipam-pool-ann"));
    }

    #[test]
    fn subnet_tags_replace_the_subnets_annotation_and_ids_replace_tags() {
        let ann = IngressSettings { subnets: Some(vec!["subnet-ann".into()]), ..Default::default() };
        let tags: BTreeMap<String, Vec<String>> = [("tier".to_string(), vec!["edge".to_string()])].into();
        let p = IngressClassParamsSpec {
            subnets: Some(ParamsSubnets { tags: tags.clone(), ..Default::default() }),
            ..Default::default()
        };
        let s = apply_params(&ann, Some(&p), "edge").unwrap();
        assert_eq!((s.subnets, s.subnet_tags), (None, Some(tags.clone())));
        let with_tags = IngressSettings { subnet_tags: Some(tags), ..Default::default() };
        let p = IngressClassParamsSpec {
            subnets: Some(ParamsSubnets { ids: vec!["subnet-1".into()], ..Default::default() }),
            ..Default::default()
        };
        let s = apply_params(&with_tags, Some(&p), "ids").unwrap();
        assert_eq!((s.subnets, s.subnet_tags), (Some(vec!["subnet-1".into()]), None));
    }

    /// Every field the controller cannot honour as written is refused, naming the params, the
    /// field and the value; nothing is applied then.
    #[test]
    fn fields_that_cannot_be_honoured_are_refused_with_the_field_and_value() {
        let ok = IngressClassParamsSpec::default;
        let tags = |k: &str| -> BTreeMap<String, Vec<String>> { [(k.to_string(), vec![])].into() };
        let cases: Vec<(&str, IngressClassParamsSpec, &str)> = vec![
            (
                "a Service stack's tag among the tags",
                IngressClassParamsSpec {
                    tags: vec![KeyValue { key: "service.k8s.aws/stack".into(), value: "victim/web".into() }],
                    ..ok()
                },
                "tag \"service.k8s.aws/stack\" (prefix \"service.k8s.aws/\") in IngressClassParams spec.tags",
            ),
            (
                "both",
                IngressClassParamsSpec {
                    subnets: Some(ParamsSubnets { ids: vec!["subnet-1".into()], tags: tags("tier") }),
                    ..ok()
                },
                "spec.subnets sets both ids [\"subnet-1\"] and tags",
            ),
            (
                "none",
                IngressClassParamsSpec { subnets: Some(ParamsSubnets::default()), ..ok() },
                "spec.subnets is empty",
            ),
            (
                "empty key",
                IngressClassParamsSpec {
                    subnets: Some(ParamsSubnets { tags: tags(""), ..Default::default() }),
                    ..ok()
                },
                "spec.subnets.tags has an empty key",
            ),
            (
                "cidr",
                IngressClassParamsSpec { inbound_cidrs: vec!["10.0.0.0/8".into(), "10.0.0.0/33".into()], ..ok() },
                "spec.inboundCIDRs has \"10.0.0.0/33\"",
            ),
            (
                "redirect",
                IngressClassParamsSpec { ssl_redirect_port: Some("https".into()), ..ok() },
                "sslRedirectPort is \"https\"",
            ),
            (
                "redirect 0",
                IngressClassParamsSpec { ssl_redirect_port: Some("0".into()), ..ok() },
                "sslRedirectPort is \"0\"",
            ),
            (
                "listener port",
                IngressClassParamsSpec {
                    listeners: vec![ParamsListener { protocol: None, port: Some(70000), listener_attributes: vec![] }],
                    ..ok()
                },
                "spec.listeners[0].port is 70000",
            ),
            (
                "listener without port",
                IngressClassParamsSpec {
                    listeners: vec![ParamsListener {
                        protocol: None,
                        port: None,
                        listener_attributes: vec![KeyValue { key: "k".into(), value: "v".into() }],
                    }],
                    ..ok()
                },
                "spec.listeners[0] has listenerAttributes but no port",
            ),
            (
                "listener without protocol",
                IngressClassParamsSpec {
                    listeners: vec![ParamsListener {
                        protocol: None,
                        port: Some(443),
                        listener_attributes: vec![KeyValue { key: "k".into(), value: "v".into() }],
                    }],
                    ..ok()
                },
                "spec.listeners[0] has listenerAttributes but no protocol",
            ),
            (
                "capacity",
                IngressClassParamsSpec {
                    minimum_load_balancer_capacity: Some(MinimumCapacity { capacity_units: -1 }),
                    ..ok()
                },
                "capacityUnits is -1",
            ),
        ];
        let ann = IngressSettings::default();
        for (name, p, want) in cases {
            let err = apply_params(&ann, Some(&p), "class-a").expect_err(name);
            assert!(err.starts_with("IngressClassParams class-a: "), "{name}: {err}");
            assert!(err.contains(want), "{name}: {err}");
        }
        let fine = IngressClassParamsSpec { ssl_redirect_port: Some(String::new()), ..ok() };
        assert!(apply_params(&ann, Some(&fine), "class-a").is_ok(), "an empty string is unset");
    }

    /// ALBC's order for a target group: the class's target type and tags, then the Service's
    /// annotations, then the Ingress's; multi-cluster when either the Ingress or the Service asks;
    /// an empty string in the params is unset (Go strings).
    #[test]
    fn the_class_wins_over_the_service_and_empty_strings_are_unset() {
        let p = IngressClassParamsSpec {
            target_type: Some(TargetType::Ip),
            tags: vec![KeyValue { key: "team".into(), value: "platform".into() }],
            load_balancer_name: Some(String::new()),
            wafv2_acl_name: Some(String::new()),
            ..Default::default()
        };
        let mut ann = IngressSettings {
            load_balancer_name: Some("mine".into()),
            wafv2_acl_arn: Some("arn:w".into()),
            ..Default::default()
        };
        ann.backend.tags.insert("team".into(), "ingress".into());
        ann.backend.multi_cluster_target_group = Some(true);
        let s = apply_params(&ann, Some(&p), "icp").unwrap();
        assert_eq!(s.load_balancer_name.as_deref(), Some("mine"), "an empty name is unset");
        assert_eq!((s.wafv2_acl_arn.as_deref(), s.wafv2_acl_name.as_deref()), (Some("arn:w"), None));
        let mut svc = super::super::annotations::BackendSettings {
            target_type: Some(TargetType::Instance),
            multi_cluster_target_group: Some(false),
            ..Default::default()
        };
        svc.tags.insert("team".into(), "svc".into());
        svc.tags.insert("svc-only".into(), "1".into());
        let b = s.backend.overridden_by(&svc);
        assert_eq!(b.target_type, Some(TargetType::Ip), "the class over the Service");
        assert_eq!(b.tags["team"], "platform", "the class's tag over the Service's");
        assert_eq!(b.tags["svc-only"], "1");
        assert_eq!(b.multi_cluster_target_group, Some(true), "either asking is enough");
        // Without params the Service wins, as before.
        let plain = ann.backend.overridden_by(&svc);
        assert_eq!((plain.target_type, plain.tags["team"].as_str()), (Some(TargetType::Instance), "svc"));
    }

    /// ALBC merges the params' attributes into the annotations', the params winning per key.
    #[test]
    fn attributes_merge_with_the_annotations_the_params_winning_per_key() {
        let kv = |k: &str, v: &str| KeyValue { key: k.into(), value: v.into() };
        let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let mut ann = IngressSettings {
            load_balancer_attributes: Some(map(&[
                ("idle_timeout.timeout_seconds", "120"),
                ("routing.http2.enabled", "false"),
            ])),
            ..Default::default()
        };
        ann.listener_attributes.insert((Protocol::Https, 443), map(&[("a", "1"), ("b", "2")]));
        let p = IngressClassParamsSpec {
            load_balancer_attributes: vec![kv("idle_timeout.timeout_seconds", "300")],
            listeners: vec![ParamsListener {
                protocol: Some(ParamsListenerProtocol::HTTPS),
                port: Some(443),
                listener_attributes: vec![kv("a", "9")],
            }],
            ..Default::default()
        };
        let s = apply_params(&ann, Some(&p), "icp").unwrap();
        assert_eq!(
            s.load_balancer_attributes,
            Some(map(&[("idle_timeout.timeout_seconds", "300"), ("routing.http2.enabled", "false")]))
        );
        assert_eq!(s.listener_attributes[&(Protocol::Https, 443)], map(&[("a", "9"), ("b", "2")]));
        let none = apply_params(&IngressSettings::default(), Some(&p), "icp").unwrap();
        assert_eq!(none.load_balancer_attributes, Some(map(&[("idle_timeout.timeout_seconds", "300")])));
    }
}
