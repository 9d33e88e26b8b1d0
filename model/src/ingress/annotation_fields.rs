//! [`parse_annotations`]: the load-balancer and listener annotations of one Ingress, on top of
//! the backend ones in [`super::annotations`].

use std::collections::BTreeMap;

use ipnet::IpNet;

use super::actions::{parse_action, parse_conditions, parse_listen_ports};
use super::annotations::{IngressSettings, backend};
use super::keys::{self as k, PREFIX};
use super::mtls::parse_mutual_authentication;
use crate::annotations::fields::minimum_capacity;
use crate::annotations::refusals;
use crate::annotations::{AnnotationErrors, Reader};
use crate::lb::{LbIpAddressType, Protocol, Scheme};

const GROUP_NAME_HINT: &str =
    "at most 63 lower-case letters, digits, '-' or '.', starting and ending with a letter or digit";

/// ALBC's group-name rule: `^([a-z0-9][-a-z0-9.]*)?[a-z0-9]$`, at most 63 characters.
pub fn valid_group_name(name: &str) -> bool {
    let b = name.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.len() <= 63
        && b.first().is_some_and(alnum)
        && b.last().is_some_and(alnum)
        && b.iter().all(|c| alnum(c) || *c == b'-' || *c == b'.')
}

/// Parses every annotation of an Ingress in `namespace`; all invalid values are reported together.
pub fn parse_annotations(
    annotations: &BTreeMap<String, String>,
    namespace: &str,
) -> Result<IngressSettings, AnnotationErrors> {
    let mut r = Reader::new(annotations, PREFIX);
    let group_name = r.raw(k::GROUP_NAME).and_then(|v| {
        let ok = valid_group_name(v);
        if !ok {
            r.fail(r.key(k::GROUP_NAME), v, GROUP_NAME_HINT);
        }
        ok.then(|| v.to_string())
    });
    let mut s = IngressSettings { group_name, ..Default::default() };
    s.group_order = r.raw(k::GROUP_ORDER).and_then(|v| match v.trim().parse::<i32>() {
        Ok(n) if (-1000..=1000).contains(&n) => Some(n),
        _ => {
            r.fail(r.key(k::GROUP_ORDER), v, "an integer from -1000 to 1000");
            None
        }
    });
    s.load_balancer_name = r.raw(k::LOAD_BALANCER_NAME).and_then(|v| {
        let ok = crate::lb::naming::valid_custom_name(v);
        if !ok {
            r.fail(r.key(k::LOAD_BALANCER_NAME), v, crate::lb::naming::CUSTOM_NAME_HINT);
        }
        ok.then(|| v.to_string())
    });
    s.scheme = r
        .one_of(k::SCHEME, &["internal", "internet-facing"])
        .map(|v| if v == "internal" { Scheme::Internal } else { Scheme::InternetFacing });
    s.ip_address_type =
        r.one_of(k::IP_ADDRESS_TYPE, &["ipv4", "dualstack", "dualstack-without-public-ipv4"]).map(|v| match v {
            "dualstack" => LbIpAddressType::Dualstack,
            "dualstack-without-public-ipv4" => LbIpAddressType::DualstackWithoutPublicIpv4,
            _ => LbIpAddressType::Ipv4,
        });
    s.subnets = r.list(k::SUBNETS);
    s.security_groups = r.list(k::SECURITY_GROUPS);
    s.manage_backend_security_group_rules = r.bool(k::MANAGE_BACKEND_SG_RULES);
    s.load_balancer_attributes = r.map(k::LOAD_BALANCER_ATTRIBUTES);
    // ALBC's own output (its plan for the migration console, with IngressPlanAnnotation on): read
    // so it is not "unknown"; the group's pass clears it, as ALBC does with the gate off.
    let _ = r.raw(k::DRY_RUN_PLAN);
    s.wafv2_acl_arn = r.string(k::WAFV2_ACL_ARN);
    // As ALBC: an empty name is no name (the ARN, if any, is used).
    s.wafv2_acl_name = r.string(k::WAFV2_ACL_NAME).filter(|n| !n.is_empty());
    // ALBC reads `waf-acl-id` and falls back to its older name `web-acl-id`; an empty value asks for nothing.
    let waf_acl_id = r.string(k::WAF_ACL_ID);
    let web_acl_id = r.string(k::WEB_ACL_ID);
    s.waf_classic_acl_id = waf_acl_id.or(web_acl_id).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    s.shield_advanced_protection = r.bool(k::SHIELD_ADVANCED_PROTECTION);
    s.listen_ports = r.raw(k::LISTEN_PORTS).and_then(|raw| {
        parse_listen_ports(raw)
            .map_err(|e| {
                r.fail(r.key(k::LISTEN_PORTS), raw, format!("{e}; e.g. '[{{\"HTTP\": 80}}, {{\"HTTPS\": 443}}]'"))
            })
            .ok()
    });
    s.ssl_redirect = r.int(k::SSL_REDIRECT, 1, 65535).map(|p| p as u16);
    s.inbound_cidrs = r.checked_list(k::INBOUND_CIDRS, "CIDR blocks like 10.0.0.0/16", |x| x.parse::<IpNet>().ok());
    s.security_group_prefix_lists =
        r.checked_list(k::SECURITY_GROUP_PREFIX_LISTS, "prefix list IDs like pl-0123", |x| {
            x.starts_with("pl-").then(|| x.to_string())
        });
    s.certificate_arns = r.list(k::CERTIFICATE_ARN).unwrap_or_default();
    s.ssl_policy = r.string(k::SSL_POLICY).filter(|p| !p.is_empty());
    if let Some(raw) = r.raw(k::MUTUAL_AUTHENTICATION) {
        match parse_mutual_authentication(raw) {
            Ok(m) => s.mutual_authentication = m,
            Err(e) => r.fail(
                r.key(k::MUTUAL_AUTHENTICATION),
                raw,
                format!("a JSON list of {{\"port\", \"mode\", \"trustStore\"}} entries ({e})"),
            ),
        }
    }
    if let Some(raw) = r.raw(k::JWT_VALIDATION) {
        match super::jwt::parse_jwt_validation(raw) {
            Ok(j) => s.jwt_validation = Some(j),
            Err(e) => r.fail(
                r.key(k::JWT_VALIDATION),
                raw,
                format!("{{\"jwksEndpoint\", \"issuer\", \"additionalClaims\"}} within AWS's limits ({e})"),
            ),
        }
    }
    s.minimum_capacity_units = minimum_capacity(&mut r, k::MINIMUM_CAPACITY);
    s.customer_owned_ipv4_pool = r.raw(k::CUSTOMER_OWNED_IPV4_POOL).and_then(|v| {
        if v.is_empty() {
            r.fail(r.key(k::CUSTOMER_OWNED_IPV4_POOL), v, "a customer-owned IPv4 pool ID (ipv4pool-coip-...)");
        }
        (!v.is_empty()).then(|| v.to_string())
    });
    // As ALBC: an empty value sets no pool.
    s.ipv4_ipam_pool = r.raw(k::IPAM_IPV4_POOL_ID).filter(|v| !v.is_empty()).map(str::to_string);
    s.use_regex_path_match = r.bool(k::USE_REGEX_PATH_MATCH).unwrap_or(false);
    s.backend = backend(&mut r, &mut s.unsupported);
    for (key, rest, raw) in r.family(k::LISTENER_ATTRIBUTES_PREFIX) {
        let parsed = rest.rsplit_once('-').and_then(|(proto, port)| {
            let p = match proto {
                "HTTP" => Protocol::Http,
                "HTTPS" => Protocol::Https,
                _ => return None,
            };
            port.parse::<u16>().ok().filter(|p| *p > 0).map(|port| (p, port))
        });
        match (parsed, crate::annotations::split_map(raw)) {
            (Some(lk), Some(attrs)) => {
                s.listener_attributes.insert(lk, attrs);
            }
            (None, _) => r.fail(key, raw, "a key of the form listener-attributes.<HTTP|HTTPS>-<port>"),
            (_, None) => r.fail(key, raw, "comma-separated key=value pairs, e.g. \"k1=v1,k2=v2\""),
        }
    }
    for (key, name, raw) in r.family(k::ACTIONS_PREFIX) {
        match parse_action(raw, namespace) {
            Ok(a) => {
                s.actions.insert(name.to_string(), a);
            }
            Err(e) => r.fail(key, raw, format!("an action ({e})")),
        }
    }
    for (key, name, raw) in r.family(k::TRANSFORMS_PREFIX) {
        match super::transforms::parse_transforms(raw) {
            Ok(t) => {
                s.transforms.insert(name.to_string(), t);
            }
            Err(e) => r.fail(key, raw, format!("a JSON list of host-header-rewrite / url-rewrite transforms ({e})")),
        }
    }
    for (key, name, raw) in r.family(k::CONDITIONS_PREFIX) {
        match parse_conditions(raw) {
            Ok(c) => {
                s.conditions.insert(name.to_string(), c);
            }
            Err(e) => r.fail(key, raw, format!("a JSON list of conditions ({e})")),
        }
    }
    s.frontend_nlb = super::frontend_nlb::parse(&mut r, &mut s.unsupported);
    s.create_acm_cert = r.bool(k::CREATE_ACM_CERT);
    s.acm_pca_arn = r.string(k::ACM_PCA_ARN).filter(|a| !a.is_empty());
    refusals::note_refused(&mut r, &mut s.unsupported, refusals::INGRESS);
    s.unknown = r.unknown(|_| true);
    r.finish(s)
}
