//! Field parsers behind [`super::annotations::parse_annotations`], one per annotation family.

use std::collections::BTreeMap;

use super::annotations::{BackendProtocol, HealthCheckPortSetting, HealthCheckSettings, NlbSettings, Unsupported};
use super::keys as k;
use super::parse::{Reader, full_key, parse_go_bool};
use crate::lb::tags::{SERVICE_TAG_PREFIX, reserved_tag_keys};
use crate::lb::{Attributes, Protocol, Tags};

pub(super) const NOT_YET: &str = "not implemented yet";
pub(super) const ALPN_POLICIES: &[&str] = &["None", "HTTP1Only", "HTTP2Only", "HTTP2Optional", "HTTP2Preferred"];
pub(super) const DNS_POLICY_KEY: &str = "dns_record.client_routing_policy";
pub(super) const DNS_POLICIES: &[&str] =
    &["availability_zone_affinity", "partial_availability_zone_affinity", "any_availability_zone"];

pub(super) fn valid_name(r: &mut Reader<'_>, n: &str) -> Option<String> {
    let ok = !n.is_empty()
        && n.len() <= crate::lb::naming::MAX_NAME_LEN
        && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !n.starts_with('-')
        && !n.ends_with('-')
        && !n.starts_with("internal-");
    if !ok {
        r.fail(
            full_key(k::NAME),
            n,
            "1 to 32 letters, digits or hyphens, not starting or ending with a hyphen nor starting with \"internal-\"",
        );
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

pub(super) fn additional_tags(r: &mut Reader<'_>, unsupported: &mut Vec<Unsupported>) -> Tags {
    let mut tags = r.map(k::ADDITIONAL_TAGS).unwrap_or_default();
    for key in reserved_tag_keys(SERVICE_TAG_PREFIX) {
        if tags.remove(&key).is_some() {
            unsupported.push(Unsupported {
                key: full_key(k::ADDITIONAL_TAGS),
                reason: format!("tag {key} is set by the controller and cannot be overridden"),
            });
        }
    }
    tags
}

pub(super) fn health_check(r: &mut Reader<'_>) -> HealthCheckSettings {
    let protocol = r.raw(k::HC_PROTOCOL).and_then(|raw| match raw.to_ascii_uppercase().as_str() {
        "TCP" => Some(Protocol::Tcp),
        "HTTP" => Some(Protocol::Http),
        "HTTPS" => Some(Protocol::Https),
        _ => {
            r.fail(full_key(k::HC_PROTOCOL), raw, "\"tcp\", \"http\" or \"https\"");
            None
        }
    });
    let port = r.raw(k::HC_PORT).and_then(|raw| {
        if raw == "traffic-port" {
            Some(HealthCheckPortSetting::TrafficPort)
        } else if raw.bytes().all(|b| b.is_ascii_digit()) && !raw.is_empty() {
            match raw.parse::<u16>() {
                Ok(p) if p > 0 => Some(HealthCheckPortSetting::Port(p)),
                _ => {
                    r.fail(
                        full_key(k::HC_PORT),
                        raw,
                        "\"traffic-port\", a port from 1 to 65535 or a Service port name",
                    );
                    None
                }
            }
        } else if !raw.is_empty() && !raw.starts_with('-') {
            Some(HealthCheckPortSetting::Named(raw.to_string()))
        } else {
            r.fail(full_key(k::HC_PORT), raw, "\"traffic-port\", a port from 1 to 65535 or a Service port name");
            None
        }
    });
    let path = r.raw(k::HC_PATH).and_then(|raw| {
        if raw.starts_with('/') && raw.len() <= 1024 {
            Some(raw.to_string())
        } else {
            r.fail(full_key(k::HC_PATH), raw, "an absolute path starting with \"/\" (at most 1024 characters)");
            None
        }
    });
    let success_codes = r.raw(k::HC_SUCCESS_CODES).and_then(|raw| {
        if valid_success_codes(raw) {
            Some(raw.to_string())
        } else {
            r.fail(
                full_key(k::HC_SUCCESS_CODES),
                raw,
                "HTTP codes from 200 to 599, e.g. \"200\", \"200-399\" or \"200,302\"",
            );
            None
        }
    });
    HealthCheckSettings {
        protocol,
        port,
        path,
        interval_seconds: r.int(k::HC_INTERVAL, 5, 300),
        timeout_seconds: r.int(k::HC_TIMEOUT, 2, 120),
        healthy_threshold: r.int(k::HC_HEALTHY_THRESHOLD, 2, 10),
        unhealthy_threshold: r.int(k::HC_UNHEALTHY_THRESHOLD, 2, 10),
        success_codes,
    }
}

pub(super) fn valid_success_codes(raw: &str) -> bool {
    let code = |s: &str| s.len() == 3 && s.parse::<u16>().is_ok_and(|c| (200..=599).contains(&c));
    !raw.is_empty()
        && raw.split(',').all(|part| match part.split_once('-') {
            Some((a, b)) => code(a) && code(b) && a <= b,
            None => code(part),
        })
}

pub(super) fn backend_protocol(r: &mut Reader<'_>, unsupported: &mut Vec<Unsupported>) -> BackendProtocol {
    match r.raw(k::BACKEND_PROTOCOL) {
        None | Some("tcp") => BackendProtocol::Tcp,
        Some("ssl") => BackendProtocol::Ssl,
        Some(v @ ("http" | "https")) => {
            unsupported.push(Unsupported {
                key: full_key(k::BACKEND_PROTOCOL),
                reason: format!(
                    "{v:?} only applies to Classic Load Balancers; the NLB uses tcp (use \"ssl\" for TLS to targets)"
                ),
            });
            BackendProtocol::Tcp
        }
        Some(v) => {
            r.fail(full_key(k::BACKEND_PROTOCOL), v, "\"tcp\" or \"ssl\"");
            BackendProtocol::Tcp
        }
    }
}

pub(super) fn minimum_capacity(r: &mut Reader<'_>) -> Option<u32> {
    let m = r.map(k::MINIMUM_CAPACITY)?;
    let raw = r.raw(k::MINIMUM_CAPACITY).unwrap_or_default();
    match (m.len(), m.get("CapacityUnits").map(|v| v.parse::<u32>())) {
        (1, Some(Ok(n))) => Some(n),
        _ => {
            r.fail(full_key(k::MINIMUM_CAPACITY), raw, "\"CapacityUnits=N\" with N a whole number (0 resets)");
            None
        }
    }
}

/// `target-group-attributes.<port>` and `listener-attributes.<PROTOCOL>-<port>`.
pub(super) fn prefixed_annotations(r: &mut Reader<'_>, annotations: &BTreeMap<String, String>, s: &mut NlbSettings) {
    let tg_prefix = format!("{}.", full_key(k::TARGET_GROUP_ATTRIBUTES));
    let ls_prefix = format!("{}.", full_key(k::LISTENER_ATTRIBUTES));
    for (key, raw) in annotations {
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
            let parsed = suffix.rsplit_once('-').and_then(|(proto, port)| {
                let p = match proto {
                    "TCP" => Protocol::Tcp,
                    "UDP" => Protocol::Udp,
                    "TLS" => Protocol::Tls,
                    "TCP_UDP" => Protocol::TcpUdp,
                    _ => return None,
                };
                port.parse::<u16>().ok().filter(|p| *p > 0).map(|port| (p, port))
            });
            match parsed {
                Some(lk) => {
                    s.listener_attributes.insert(lk, attrs);
                }
                None => r.fail(
                    key.as_str(),
                    raw.as_str(),
                    format!("a key of the form {ls_prefix}<TCP|UDP|TLS|TCP_UDP>-<port>, e.g. {ls_prefix}TCP-80"),
                ),
            }
        }
    }
}

/// Known annotations this controller does not act on (yet).
pub(super) fn unsupported_annotations(r: &mut Reader<'_>, unsupported: &mut Vec<Unsupported>) {
    let mut note = |r: &mut Reader<'_>, suffix: &str, reason: &str| {
        if r.raw(suffix).is_some() {
            unsupported.push(Unsupported { key: full_key(suffix), reason: reason.to_string() });
        }
    };
    note(r, k::QUIC_ENABLED_PORTS, "QUIC listeners are not implemented yet");
    note(r, k::SOURCE_NAT_IPV6_PREFIXES, "IPv6 source-NAT prefixes are not implemented yet");
    note(r, k::EIP_ALLOCATIONS_DISCOVERY_TAGS, "Elastic IP discovery by tags is not implemented yet");
    note(r, k::TARGET_NODE_LABELS, "applies to instance targets only; this controller registers pod IPs");
    note(r, k::QUIC_ENABLED_CONTAINERS, "a pod annotation; it has no effect on a Service");
    if let Some(v) = r.raw(k::ENABLE_PREFIX_FOR_IPV6_SOURCE_NAT) {
        if v == "on" {
            unsupported.push(Unsupported {
                key: full_key(k::ENABLE_PREFIX_FOR_IPV6_SOURCE_NAT),
                reason: format!("IPv6 source-NAT prefixes are {NOT_YET}"),
            });
        } else if v != "off" {
            r.fail(full_key(k::ENABLE_PREFIX_FOR_IPV6_SOURCE_NAT), v, "\"on\" or \"off\"");
        }
    }
}

/// `service.beta.kubernetes.io/actions.*` keys (custom listener actions): not implemented yet.
pub(super) fn action_annotations(annotations: &BTreeMap<String, String>) -> Vec<Unsupported> {
    let prefix = full_key(k::ACTIONS_PREFIX);
    annotations
        .keys()
        .filter(|key| key.starts_with(&prefix))
        .map(|key| Unsupported {
            key: key.clone(),
            reason: "custom listener actions (weighted forwarding to other Services) are not implemented yet; \
                     the listener forwards to this Service's own target group"
                .into(),
        })
        .collect()
}
