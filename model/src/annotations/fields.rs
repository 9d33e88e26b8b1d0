//! Field parsers shared by the Service (NLB) and Ingress (ALB) annotation families: health
//! checks, user tags minus the keys the controller owns, `CapacityUnits=N` and success codes.
//! Each takes the annotation suffixes of its family, so the two families differ only in their
//! key names and accepted values, never in how a value is read or reported.

use super::{Reader, Unsupported};
use crate::lb::tags::{reserved_tag_prefix, reserved_tag_problem};
use crate::lb::{Protocol, Tags};

/// Where health checks go, as the annotation says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HealthCheckPortSetting {
    TrafficPort,
    Port(u16),
    /// A Service port name, resolved to that port's numeric targetPort (ip targets).
    Named(String),
}

/// The health-check annotations; `None` = ALBC's default (applied when building).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HealthCheckSettings {
    pub protocol: Option<Protocol>,
    pub port: Option<HealthCheckPortSetting>,
    pub path: Option<String>,
    pub interval_seconds: Option<u32>,
    pub timeout_seconds: Option<u32>,
    pub healthy_threshold: Option<u32>,
    pub unhealthy_threshold: Option<u32>,
    pub success_codes: Option<String>,
}

/// The suffixes of one family's health-check annotations and the values it accepts.
pub(crate) struct HealthCheckKeys {
    pub protocol: &'static str,
    pub port: &'static str,
    pub path: &'static str,
    pub interval: &'static str,
    pub timeout: &'static str,
    pub healthy_threshold: &'static str,
    pub unhealthy_threshold: &'static str,
    pub success_codes: &'static str,
    /// Accepted protocols (matched case-insensitively).
    pub protocols: &'static [Protocol],
    /// Accepted success-code ranges, e.g. HTTP 200–599; a value must fit one of them entirely.
    pub code_ranges: &'static [(u16, u16)],
    /// Words describing the accepted success codes, for error messages.
    pub codes_hint: &'static str,
}

/// `"a"`, `"a" or "b"`, `"a", "b" or "c"`.
fn either(words: &[String]) -> String {
    match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

const PORT_HINT: &str = "\"traffic-port\", a port from 1 to 65535 or a Service port name";

fn port_setting(raw: &str) -> Option<HealthCheckPortSetting> {
    if raw == "traffic-port" {
        Some(HealthCheckPortSetting::TrafficPort)
    } else if !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit()) {
        raw.parse::<u16>().ok().filter(|p| *p > 0).map(HealthCheckPortSetting::Port)
    } else if !raw.is_empty() && !raw.starts_with('-') {
        Some(HealthCheckPortSetting::Named(raw.to_string()))
    } else {
        None
    }
}

/// Reads one family's health-check annotations; every invalid value is reported.
pub(crate) fn health_check(r: &mut Reader<'_>, k: &HealthCheckKeys) -> HealthCheckSettings {
    let protocol = r.raw(k.protocol).and_then(|raw| {
        let p = Protocol::from_aws(raw).filter(|p| k.protocols.contains(p));
        if p.is_none() {
            let names: Vec<String> =
                k.protocols.iter().map(|p| format!("\"{}\"", p.as_aws().to_ascii_lowercase())).collect();
            r.fail(r.key(k.protocol), raw, either(&names));
        }
        p
    });
    let port = r.raw(k.port).and_then(|raw| {
        let p = port_setting(raw);
        if p.is_none() {
            r.fail(r.key(k.port), raw, PORT_HINT);
        }
        p
    });
    let path = r.raw(k.path).and_then(|raw| {
        if raw.starts_with('/') && raw.len() <= 1024 {
            Some(raw.to_string())
        } else {
            r.fail(r.key(k.path), raw, "an absolute path starting with \"/\" (at most 1024 characters)");
            None
        }
    });
    let success_codes = r.raw(k.success_codes).and_then(|raw| {
        if k.code_ranges.iter().any(|range| valid_success_codes(raw, *range)) {
            Some(raw.to_string())
        } else {
            r.fail(r.key(k.success_codes), raw, k.codes_hint);
            None
        }
    });
    HealthCheckSettings {
        protocol,
        port,
        path,
        interval_seconds: r.int(k.interval, 5, 300),
        timeout_seconds: r.int(k.timeout, 2, 120),
        healthy_threshold: r.int(k.healthy_threshold, 2, 10),
        unhealthy_threshold: r.int(k.unhealthy_threshold, 2, 10),
        success_codes,
    }
}

/// `"200"`, `"200-399"`, `"200,302"`: every code (or both ends of a range) within `min..=max`.
pub(crate) fn valid_success_codes(raw: &str, (min, max): (u16, u16)) -> bool {
    let code = |s: &str| {
        !s.is_empty() && s.len() <= 3 && s.bytes().all(|b| b.is_ascii_digit()) && {
            let c: u16 = s.parse().unwrap_or(u16::MAX);
            (min..=max).contains(&c)
        }
    };
    !raw.is_empty()
        && raw.split(',').all(|part| match part.split_once('-') {
            Some((a, b)) => code(a) && code(b) && a.parse::<u16>().ok() <= b.parse::<u16>().ok(),
            None => code(part),
        })
}

/// A user tag map (`key=value,…`) minus every key with an ownership prefix, ours or the upstream
/// controller's, of any stack kind ([`reserved_tag_problem`]): they are named in `unsupported`
/// (a Warning) so the user learns why those tags did not stick.
pub(crate) fn user_tags(r: &mut Reader<'_>, suffix: &str, unsupported: &mut Vec<Unsupported>) -> Tags {
    let mut tags = r.map(suffix).unwrap_or_default();
    let annotation = r.key(suffix);
    if let Some(reason) = reserved_tag_problem(tags.keys().map(String::as_str), &format!("annotation {annotation}")) {
        tags.retain(|key, _| reserved_tag_prefix(key).is_none());
        unsupported.push(Unsupported::degrade(annotation, reason));
    }
    tags
}

/// `CapacityUnits=N` (minimum load balancer capacity).
pub(crate) fn minimum_capacity(r: &mut Reader<'_>, suffix: &str) -> Option<u32> {
    let m = r.map(suffix)?;
    let raw = r.raw(suffix).unwrap_or_default();
    match (m.len(), m.get("CapacityUnits").map(|v| v.parse::<u32>())) {
        (1, Some(Ok(n))) => Some(n),
        _ => {
            r.fail(r.key(suffix), raw, "\"CapacityUnits=N\" with N a whole number (0 resets)");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_codes_by_range() {
        let http = (200, 599);
        let grpc = (0, 99);
        for ok in ["200", "200-399", "200,302", "200-299,404"] {
            assert!(valid_success_codes(ok, http), "{ok}");
        }
        for bad in ["", "199", "600", "300-200", "20x", "0200", "200,", "-", "200-"] {
            assert!(!valid_success_codes(bad, http), "{bad}");
        }
        for ok in ["0", "12", "0-99", "0,12"] {
            assert!(valid_success_codes(ok, grpc), "{ok}");
        }
        assert!(!valid_success_codes("100", grpc));
    }

    #[test]
    fn port_settings() {
        assert_eq!(port_setting("traffic-port"), Some(HealthCheckPortSetting::TrafficPort));
        assert_eq!(port_setting("8080"), Some(HealthCheckPortSetting::Port(8080)));
        assert_eq!(port_setting("metrics"), Some(HealthCheckPortSetting::Named("metrics".into())));
        for bad in ["", "0", "70000", "-1"] {
            assert_eq!(port_setting(bad), None, "{bad}");
        }
    }
}
