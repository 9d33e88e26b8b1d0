//! Field parsers behind [`super::annotations::parse_annotations`], one per annotation family.

use std::collections::BTreeMap;

use super::annotations::{BackendProtocol, NlbSettings};
use super::keys::{self as k, full_key};
use crate::annotations::fields::HealthCheckKeys;
use crate::annotations::refusals;
use crate::annotations::{Reader, Unsupported, parse_go_bool};
use crate::lb::{Attributes, Protocol};

pub(super) const ALPN_POLICIES: &[&str] = &["None", "HTTP1Only", "HTTP2Only", "HTTP2Optional", "HTTP2Preferred"];
pub(crate) const DNS_POLICY_KEY: &str = "dns_record.client_routing_policy";
pub(crate) const DNS_POLICIES: &[&str] =
    &["availability_zone_affinity", "partial_availability_zone_affinity", "any_availability_zone"];

pub(super) fn valid_name(r: &mut Reader<'_>, n: &str) -> Option<String> {
    let ok = crate::lb::naming::valid_custom_name(n);
    if !ok {
        r.fail(full_key(k::NAME), n, crate::lb::naming::CUSTOM_NAME_HINT);
    }
    ok.then(|| n.to_string())
}

pub(super) fn load_balancer_attributes(r: &mut Reader<'_>) -> Attributes {
    let mut attrs = r.map(k::ATTRIBUTES).unwrap_or_default();
    if let Some(p) = attrs.get(DNS_POLICY_KEY).filter(|p| !DNS_POLICIES.contains(&p.as_str())) {
        let raw = format!("{DNS_POLICY_KEY}={p}");
        r.fail(full_key(k::ATTRIBUTES), raw, format!("{DNS_POLICY_KEY} one of {}", DNS_POLICIES.join(", ")));
    }
    // Deprecated annotations override `attributes` (ALBC merges them first).
    if r.bool(k::ACCESS_LOG_ENABLED) == Some(true) {
        attrs.insert("access_logs.s3.enabled".into(), "true".into());
        if let Some(b) = r.string(k::ACCESS_LOG_S3_BUCKET_NAME) {
            attrs.insert("access_logs.s3.bucket".into(), b);
        }
        if let Some(p) = r.string(k::ACCESS_LOG_S3_BUCKET_PREFIX) {
            attrs.insert("access_logs.s3.prefix".into(), p);
        }
    } else {
        // Read (so they are not reported as unknown) but, as in ALBC, without effect.
        r.raw(k::ACCESS_LOG_S3_BUCKET_NAME);
        r.raw(k::ACCESS_LOG_S3_BUCKET_PREFIX);
    }
    if let Some(c) = r.bool(k::CROSS_ZONE_ENABLED) {
        attrs.insert("load_balancing.cross_zone.enabled".into(), c.to_string());
    }
    attrs
}

pub(super) fn tg_attributes(r: &mut Reader<'_>, key: &str) -> Attributes {
    let attrs = r.map_key(key).unwrap_or_default();
    for name in ["preserve_client_ip.enabled", "proxy_protocol_v2.enabled"] {
        if let Some(v) = attrs.get(name).filter(|v| !v.is_empty() && parse_go_bool(v).is_none()) {
            let raw = format!("{name}={v}");
            r.fail(key, raw, format!("{name}=true or {name}=false"));
        }
    }
    attrs
}

/// The NLB's health-check annotations and accepted values.
pub(super) const HEALTH_CHECK_KEYS: HealthCheckKeys = HealthCheckKeys {
    protocol: k::HC_PROTOCOL,
    port: k::HC_PORT,
    path: k::HC_PATH,
    interval: k::HC_INTERVAL,
    timeout: k::HC_TIMEOUT,
    healthy_threshold: k::HC_HEALTHY_THRESHOLD,
    unhealthy_threshold: k::HC_UNHEALTHY_THRESHOLD,
    success_codes: k::HC_SUCCESS_CODES,
    protocols: &[Protocol::Tcp, Protocol::Http, Protocol::Https],
    code_ranges: &[(200, 599)],
    codes_hint: "HTTP codes from 200 to 599, e.g. \"200\", \"200-399\" or \"200,302\"",
};

pub(super) fn backend_protocol(r: &mut Reader<'_>, unsupported: &mut Vec<Unsupported>) -> BackendProtocol {
    match r.raw(k::BACKEND_PROTOCOL) {
        None | Some("tcp") => BackendProtocol::Tcp,
        Some("ssl") => BackendProtocol::Ssl,
        Some(v @ ("http" | "https")) => {
            unsupported.push(Unsupported::degrade(
                full_key(k::BACKEND_PROTOCOL),
                format!(
                    "{v:?} only applies to Classic Load Balancers; the NLB uses tcp (use \"ssl\" for TLS to targets)"
                ),
            ));
            BackendProtocol::Tcp
        }
        Some(v) => {
            r.fail(full_key(k::BACKEND_PROTOCOL), v, "\"tcp\" or \"ssl\"");
            BackendProtocol::Tcp
        }
    }
}

/// `target-group-attributes.<port>` and `listener-attributes.<PROTOCOL>-<port>`.
pub(super) fn prefixed_annotations(r: &mut Reader<'_>, annotations: &BTreeMap<String, String>, s: &mut NlbSettings) {
    let tg_prefix = format!("{}.", full_key(k::TARGET_GROUP_ATTRIBUTES));
    let ls_prefix = format!("{}.", full_key(k::LISTENER_ATTRIBUTES));
    let actions_prefix = full_key(k::ACTIONS_PREFIX);
    for (key, raw) in annotations {
        if let Some(suffix) = key.strip_prefix(&actions_prefix) {
            let Some(listener) = super::actions::listener_of(suffix) else {
                let want = format!("a key of the form {actions_prefix}<TCP|UDP|TLS|TCP_UDP|QUIC|TCP_QUIC>-<port>");
                r.fail(key.as_str(), raw.as_str(), want);
                continue;
            };
            match super::actions::parse_forward(raw) {
                Ok(f) => {
                    s.forwards.insert(listener, f);
                }
                Err(e) => r.fail(key.as_str(), raw.as_str(), e),
            }
            continue;
        }
        if let Some(port) = key.strip_prefix(&tg_prefix) {
            let attrs = tg_attributes(r, key);
            match port.parse::<u16>() {
                Ok(p) if p > 0 => {
                    s.target_group_attributes_by_port.insert(p, attrs);
                }
                _ => r.fail(key.as_str(), raw.as_str(), format!("a key of the form {tg_prefix}<service port number>")),
            }
        } else if let Some(suffix) = key.strip_prefix(&ls_prefix) {
            let attrs = r.map_key(key).unwrap_or_default();
            let parsed = super::actions::listener_of(suffix);
            match parsed {
                Some(lk) => {
                    s.listener_attributes.insert(lk, attrs);
                }
                None => r.fail(
                    key.as_str(),
                    raw.as_str(),
                    format!("a key of the form {ls_prefix}<TCP|UDP|TLS|TCP_UDP|QUIC|TCP_QUIC>-<port>, e.g. {ls_prefix}TCP-80"),
                ),
            }
        }
    }
}

/// Known annotations this controller does not act on (yet): [`refusals::SERVICE`].
pub(super) fn unsupported_annotations(r: &mut Reader<'_>, unsupported: &mut Vec<Unsupported>) {
    refusals::note_refused(r, unsupported, refusals::SERVICE);
}
