//! `service.beta.kubernetes.io/actions.<PROTOCOL>-<port>`: a listener's default action forwarding,
//! by weight, to this Service's own target group and to other Services of the namespace or to
//! target groups by ARN (ALBC `pkg/service/config_types.go`, `buildTargetGroupTuples`).
//!
//! The JSON is ALBC's; unknown fields are refused (ALBC's decoder drops them, which turns a typo
//! such as `wieght` into an unweighted split). What ALBC would dereference as nil (`forward`
//! without `forwardConfig`) is a precise error instead.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Deserialize;

use super::keys::{self as k, full_key};
use crate::lb::Protocol;

/// ALBC's weight range (AWS's too).
pub const MAX_WEIGHT: u32 = 999;

/// A parsed `actions.*` annotation: the listener it applies to and its forward.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NlbForward {
    /// `baseServiceWeight`: the weight of this Service's own target group.
    pub base_weight: Option<u32>,
    pub targets: Vec<ForwardTarget>,
    /// `targetGroupStickinessConfig.enabled`.
    pub stickiness: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ForwardBackend {
    /// A target group the user made (`targetGroupARN`).
    Arn(String),
    /// Another Service of the namespace and its port (`serviceName`, `servicePort`).
    Service { name: String, port: IntOrString },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForwardTarget {
    pub backend: ForwardBackend,
    pub weight: Option<u32>,
    /// `decrypt` (TLS listeners): the target group is TCP, not TLS.
    pub decrypt: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ActionJson {
    #[serde(rename = "type")]
    kind: String,
    forward_config: Option<ForwardJson>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ForwardJson {
    base_service_weight: Option<i64>,
    #[serde(default)]
    target_groups: Vec<TupleJson>,
    target_group_stickiness_config: Option<StickinessJson>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct TupleJson {
    #[serde(rename = "targetGroupARN")]
    target_group_arn: Option<String>,
    service_name: Option<String>,
    service_port: Option<IntOrString>,
    decrypt: Option<bool>,
    weight: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StickinessJson {
    enabled: Option<bool>,
}

/// The listener an `actions.` key names: `TCP-80` → (TCP, 80).
pub fn listener_of(suffix: &str) -> Option<(Protocol, u16)> {
    let (proto, port) = suffix.rsplit_once('-')?;
    let p = match proto {
        "TCP" => Protocol::Tcp,
        "UDP" => Protocol::Udp,
        "TLS" => Protocol::Tls,
        "TCP_UDP" => Protocol::TcpUdp,
        "QUIC" => Protocol::Quic,
        "TCP_QUIC" => Protocol::TcpQuic,
        _ => return None,
    };
    port.parse::<u16>().ok().filter(|p| *p > 0).map(|port| (p, port))
}

fn weight(w: Option<i64>, what: &str) -> Result<Option<u32>, String> {
    match w {
        None => Ok(None),
        Some(w) => u32::try_from(w)
            .ok()
            .filter(|w| *w <= MAX_WEIGHT)
            .map(Some)
            .ok_or_else(|| format!("{what} is {w}; a weight is from 0 to {MAX_WEIGHT}")),
    }
}

/// Parses one annotation value; the error says what is wrong and what is expected.
pub fn parse_forward(raw: &str) -> Result<NlbForward, String> {
    let a: ActionJson = serde_json::from_str(raw).map_err(|e| {
        format!(
            "{e}; expected {{\"type\": \"forward\", \"forwardConfig\": {{\"baseServiceWeight\": N, \"targetGroups\": \
             [{{\"serviceName\": S, \"servicePort\": P, \"weight\": N}} or {{\"targetGroupARN\": A, \"weight\": N}}], \
             \"targetGroupStickinessConfig\": {{\"enabled\": B}}}}}}"
        )
    })?;
    if a.kind != "forward" {
        return Err(format!("type is {:?}; the only type a Service listener takes is \"forward\"", a.kind));
    }
    let f = a.forward_config.ok_or("type \"forward\" needs a forwardConfig")?;
    let mut targets = Vec::new();
    for (i, t) in f.target_groups.into_iter().enumerate() {
        let at = format!("targetGroups[{i}]");
        let backend = match (t.target_group_arn, t.service_name, t.service_port) {
            (Some(arn), None, None) if arn.starts_with("arn:") => ForwardBackend::Arn(arn),
            (Some(arn), None, None) => return Err(format!("{at}.targetGroupARN {arn:?} is not an ARN")),
            (None, Some(name), Some(port)) if !name.is_empty() => ForwardBackend::Service { name, port },
            (None, Some(_), None) => return Err(format!("{at} names a serviceName without a servicePort")),
            _ => return Err(format!("{at} needs precisely one of targetGroupARN and serviceName (with servicePort)")),
        };
        let weight = weight(t.weight, &format!("{at}.weight"))?;
        targets.push(ForwardTarget { backend, weight, decrypt: t.decrypt.unwrap_or(false) });
    }
    if targets.len() > 1
        && let Some(i) = targets.iter().position(|t| t.weight.is_none())
    {
        return Err(format!("targetGroups[{i}] has no weight; every target group needs one when there are several"));
    }
    Ok(NlbForward {
        base_weight: weight(f.base_service_weight, "baseServiceWeight")?,
        targets,
        stickiness: f.target_group_stickiness_config.and_then(|s| s.enabled),
    })
}

/// The Services of the namespace the `actions.*` annotations name: what a Service's stack reads
/// besides the Service itself, and so whose changes wake it.
pub fn referenced_services(annotations: &BTreeMap<String, String>) -> BTreeSet<String> {
    let prefix = full_key(k::ACTIONS_PREFIX);
    let forwards: Vec<NlbForward> = annotations
        .iter()
        .filter(|(key, _)| key.starts_with(&prefix))
        .filter_map(|(_, raw)| parse_forward(raw).ok())
        .collect();
    service_names(&forwards)
}

/// The other Services these forwards name.
/// The tenancy decisions on the target groups a Service's `actions.*` forwards name by ARN
/// ([`crate::tenancy::Tenancy::forward_target_group`]), allowed ones left out.
pub fn tenancy_verdicts(
    tenancy: &crate::tenancy::Tenancy,
    namespace: &str,
    service: &str,
    forwards: &std::collections::BTreeMap<(Protocol, u16), NlbForward>,
) -> Vec<crate::tenancy::Verdict> {
    let object = format!("Service {namespace}/{service}");
    let mut out = Vec::new();
    for ((protocol, port), f) in forwards {
        for t in &f.targets {
            if let ForwardBackend::Arn(arn) = &t.backend {
                let key = format!("{}{}-{port}", super::keys::full_key(super::keys::ACTIONS_PREFIX), protocol.as_aws());
                out.push(tenancy.forward_target_group(namespace, &object, &key, arn));
            }
        }
    }
    out.retain(|v| *v != crate::tenancy::Verdict::Allowed);
    out
}

pub fn service_names<'a>(forwards: impl IntoIterator<Item = &'a NlbForward>) -> BTreeSet<String> {
    forwards
        .into_iter()
        .flat_map(|f| &f.targets)
        .filter_map(|t| match &t.backend {
            ForwardBackend::Service { name, .. } => Some(name.clone()),
            ForwardBackend::Arn(_) => None,
        })
        .collect()
}

/// Which Services' stacks read which other Services of their namespace (`actions.*`): a change
/// of a Service wakes the Services whose load balancer forwards to it.
#[derive(Debug, Default)]
pub struct BackendIndex {
    reads: BTreeMap<(String, String), BTreeSet<String>>,
}

impl BackendIndex {
    /// Records what Service `ns/name` reads now (`None`: it is gone).
    pub fn update(&mut self, ns: &str, name: &str, annotations: Option<&BTreeMap<String, String>>) {
        let key = (ns.to_string(), name.to_string());
        match annotations.map(referenced_services).filter(|r| !r.is_empty()) {
            Some(r) => {
                self.reads.insert(key, r);
            }
            None => {
                self.reads.remove(&key);
            }
        }
    }

    /// The Services of `ns` whose stacks read Service `name`.
    pub fn readers_of(&self, ns: &str, name: &str) -> Vec<String> {
        self.reads
            .iter()
            .filter(|((n, _), reads)| n == ns && reads.contains(name))
            .map(|((_, reader), _)| reader.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn albc_example_parses() {
        let raw = r#"{"type": "forward", "forwardConfig": {"baseServiceWeight": 10, "targetGroups": [
            {"serviceName": "service-1", "servicePort": 81, "weight": 20},
            {"serviceName": "service-2", "servicePort": "https", "weight": 30, "decrypt": true},
            {"targetGroupARN": "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/x/1", "weight": 0}],
            "targetGroupStickinessConfig": {"enabled": true}}}"#;
        let f = parse_forward(raw).unwrap();
        assert_eq!(f.base_weight, Some(10));
        assert_eq!(f.stickiness, Some(true));
        assert_eq!(
            f.targets[1],
            ForwardTarget {
                backend: ForwardBackend::Service {
                    name: "service-2".into(),
                    port: IntOrString::String("https".into())
                },
                weight: Some(30),
                decrypt: true,
            }
        );
        assert!(matches!(&f.targets[2].backend, ForwardBackend::Arn(a) if a.ends_with("targetgroup/x/1")));
        let ann = BTreeMap::from([
            ("service.beta.kubernetes.io/actions.TCP-80".to_string(), raw.to_string()),
            ("service.beta.kubernetes.io/actions.UDP-53".to_string(), "not json".to_string()),
        ]);
        assert_eq!(referenced_services(&ann), BTreeSet::from(["service-1".into(), "service-2".into()]));
    }

    #[test]
    fn mistakes_are_named() {
        let cases = [
            (r#"{"type": "fixed-response"}"#, "the only type a Service listener takes is \"forward\""),
            (r#"{"type": "forward"}"#, "needs a forwardConfig"),
            (
                r#"{"type": "forward", "forwardConfig": {"targetGroups": [{"serviceName": "a", "servicePort": 1, "wieght": 2}]}}"#,
                "unknown field `wieght`",
            ),
            (
                r#"{"type": "forward", "forwardConfig": {"targetGroups": [{"serviceName": "a"}]}}"#,
                "serviceName without a servicePort",
            ),
            (
                r#"{"type": "forward", "forwardConfig": {"targetGroups": [{"serviceName": "a", "servicePort": 1, "targetGroupARN": "arn:x"}]}}"#,
                "precisely one of",
            ),
            (
                r#"{"type": "forward", "forwardConfig": {"targetGroups": [{"targetGroupARN": "tg-1"}]}}"#,
                "is not an ARN",
            ),
            (
                r#"{"type": "forward", "forwardConfig": {"baseServiceWeight": 1000}}"#,
                "baseServiceWeight is 1000; a weight is from 0 to 999",
            ),
            (
                r#"{"type": "forward", "forwardConfig": {"targetGroups": [{"targetGroupARN": "arn:a", "weight": 1}, {"targetGroupARN": "arn:b"}]}}"#,
                "targetGroups[1] has no weight",
            ),
            ("[1]", "expected {\"type\": \"forward\""),
        ];
        for (raw, want) in cases {
            let e = parse_forward(raw).unwrap_err();
            assert!(e.contains(want), "{raw}: {e}");
        }
    }

    #[test]
    fn the_index_follows_annotations_and_deletions() {
        let fwd = |to: &str| {
            BTreeMap::from([(
                "service.beta.kubernetes.io/actions.TCP-80".to_string(),
                format!(
                    r#"{{"type": "forward", "forwardConfig": {{"targetGroups": [{{"serviceName": "{to}", "servicePort": 80}}]}}}}"#
                ),
            )])
        };
        let mut i = BackendIndex::default();
        i.update("a", "web", Some(&fwd("canary")));
        i.update("a", "api", Some(&fwd("canary")));
        i.update("b", "web", Some(&fwd("canary")));
        assert_eq!(i.readers_of("a", "canary"), ["api", "web"]);
        i.update("a", "api", Some(&fwd("other")));
        assert_eq!(i.readers_of("a", "canary"), ["web"]);
        i.update("a", "web", None);
        assert!(i.readers_of("a", "canary").is_empty());
        assert_eq!(i.readers_of("b", "canary"), ["web"]);
        i.update("b", "web", Some(&BTreeMap::new()));
        assert!(i.readers_of("b", "canary").is_empty());
    }

    #[test]
    fn listener_keys() {
        assert_eq!(listener_of("TCP-80"), Some((Protocol::Tcp, 80)));
        assert_eq!(listener_of("TCP_UDP-53"), Some((Protocol::TcpUdp, 53)));
        assert_eq!(listener_of("QUIC-443"), Some((Protocol::Quic, 443)));
        assert_eq!(listener_of("TCP_QUIC-443"), Some((Protocol::TcpQuic, 443)));
        assert_eq!(listener_of("HTTP-80"), None);
        assert_eq!(listener_of("TCP-0"), None);
    }
}
