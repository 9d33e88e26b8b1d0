//! The JSON annotations of an Ingress: `actions.<name>`, `conditions.<name>`, `auth-idp-oidc`,
//! `auth-idp-cognito` and `listen-ports`, decoded into ingress-local types that map one-to-one onto
//! the ELBv2 rule conditions and actions the stack builder will emit.
//!
//! ALBC decodes these with Go's `encoding/json`, which matches object keys case-insensitively
//! (`redirectConfig`, `RedirectConfig` and `redirectconfig` are the same key). Users rely on that,
//! so every object key is lower-cased before decoding here. Unknown keys are ignored, as in Go.
//! Backends are named (namespace, Service, port), never resolved: target groups are built later.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::lb::Protocol;

/// A Service port by number or by name (`port.number` / `port.name`, or `servicePort` in JSON).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ServicePort {
    Number(i32),
    Name(String),
}

/// A backend Service, which will get one target group per (Service, port) and settings.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BackendRef {
    pub namespace: String,
    pub service: String,
    pub port: ServicePort,
}

/// Where a forward sends traffic: a backend of ours, or a target group made outside Kubernetes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ForwardTarget {
    Service(BackendRef),
    Arn(String),
    Name(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightedTarget {
    pub target: ForwardTarget,
    pub weight: Option<u32>,
}

/// Maps onto `lb::Action` (Forward/Redirect/FixedResponse) plus the authenticate and JWT actions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleAction {
    Forward {
        target_groups: Vec<WeightedTarget>,
        stickiness_seconds: Option<u32>,
    },
    Redirect {
        protocol: Option<String>,
        host: Option<String>,
        port: Option<String>,
        path: Option<String>,
        query: Option<String>,
        status_code: String,
    },
    FixedResponse {
        status_code: String,
        content_type: Option<String>,
        message_body: Option<String>,
    },
    AuthenticateOidc(AuthAction<OidcConfig>),
    AuthenticateCognito(AuthAction<CognitoConfig>),
    /// `jwt-validation` (see [`super::jwt`]).
    JwtValidation(crate::lb::JwtValidation),
}

/// An authenticate action: the IdP and the session settings of the `auth-*` annotations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthAction<T> {
    pub idp: T,
    /// `authenticate` | `allow` | `deny`.
    pub on_unauthenticated_request: String,
    pub scope: String,
    pub session_cookie: String,
    pub session_timeout_seconds: u64,
}

/// `auth-idp-oidc`. The client ID and secret live in the Secret `secretName` (keys `clientID`,
/// `clientSecret`) in the Ingress's namespace; the controller reads it, the model only names it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct OidcConfig {
    #[serde(rename = "issuer", default)]
    pub issuer: String,
    #[serde(rename = "authorizationendpoint", default)]
    pub authorization_endpoint: String,
    #[serde(rename = "tokenendpoint", default)]
    pub token_endpoint: String,
    #[serde(rename = "userinfoendpoint", default)]
    pub user_info_endpoint: String,
    #[serde(rename = "secretname", default)]
    pub secret_name: String,
    #[serde(rename = "authenticationrequestextraparams", default)]
    pub extra_params: BTreeMap<String, String>,
}

/// `auth-idp-cognito`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct CognitoConfig {
    #[serde(rename = "userpoolarn", default)]
    pub user_pool_arn: String,
    #[serde(rename = "userpoolclientid", default)]
    pub user_pool_client_id: String,
    #[serde(rename = "userpooldomain", default)]
    pub user_pool_domain: String,
    #[serde(rename = "authenticationrequestextraparams", default)]
    pub extra_params: BTreeMap<String, String>,
}

/// Conditions parse straight into the load balancer's rule conditions.
pub use crate::lb::{Condition, QueryStringPair};

/// Lower-cases every object key, recursively (Go's case-insensitive field matching).
fn fold_keys(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (k.to_ascii_lowercase(), fold_keys(v))).collect()),
        Value::Array(a) => Value::Array(a.into_iter().map(fold_keys).collect()),
        other => other,
    }
}

pub(super) fn decode<T: for<'de> Deserialize<'de>>(raw: &str) -> Result<T, String> {
    let v: Value = serde_json::from_str(raw).map_err(|e| format!("JSON: {e}"))?;
    serde_json::from_value(fold_keys(v)).map_err(|e| e.to_string())
}

pub(crate) fn parse_oidc(raw: &str) -> Result<OidcConfig, String> {
    let c: OidcConfig = decode(raw)?;
    if c.issuer.is_empty()
        || c.authorization_endpoint.is_empty()
        || c.token_endpoint.is_empty()
        || c.user_info_endpoint.is_empty()
        || c.secret_name.is_empty()
    {
        return Err("issuer, authorizationEndpoint, tokenEndpoint, userInfoEndpoint and secretName are required".into());
    }
    Ok(c)
}

pub(crate) fn parse_cognito(raw: &str) -> Result<CognitoConfig, String> {
    let c: CognitoConfig = decode(raw)?;
    if c.user_pool_arn.is_empty() || c.user_pool_client_id.is_empty() || c.user_pool_domain.is_empty() {
        return Err("userPoolARN, userPoolClientID and userPoolDomain are required".into());
    }
    Ok(c)
}

/// `listen-ports`: `[{"HTTP": 80}, {"HTTPS": 443}]`; one protocol per object, ports unique.
pub(crate) fn parse_listen_ports(raw: &str) -> Result<Vec<(Protocol, u16)>, String> {
    let items: Vec<BTreeMap<String, i64>> = serde_json::from_str(raw).map_err(|e| format!("JSON: {e}"))?;
    let mut out: Vec<(Protocol, u16)> = Vec::new();
    for item in items {
        for (proto, port) in item {
            let p = match proto.as_str() {
                "HTTP" => Protocol::Http,
                "HTTPS" => Protocol::Https,
                _ => return Err(format!("protocol {proto:?} is not HTTP or HTTPS")),
            };
            let port = u16::try_from(port).ok().filter(|p| *p > 0).ok_or(format!("port {port} is not 1 to 65535"))?;
            if out.iter().any(|(_, q)| *q == port) {
                return Err(format!("port {port} is listed twice"));
            }
            out.push((p, port));
        }
    }
    if out.is_empty() {
        return Err("no ports".into());
    }
    Ok(out)
}

#[derive(Deserialize)]
struct RawAction {
    #[serde(rename = "type")]
    kind: String,
    #[serde(rename = "targetgrouparn")]
    target_group_arn: Option<String>,
    #[serde(rename = "targetgroupname")]
    target_group_name: Option<String>,
    #[serde(rename = "forwardconfig")]
    forward: Option<RawForward>,
    #[serde(rename = "redirectconfig")]
    redirect: Option<BTreeMap<String, Value>>,
    #[serde(rename = "fixedresponseconfig")]
    fixed: Option<BTreeMap<String, Value>>,
}

#[derive(Deserialize)]
struct RawForward {
    #[serde(rename = "targetgroups", default)]
    target_groups: Vec<RawTarget>,
    #[serde(rename = "targetgroupstickinessconfig")]
    stickiness: Option<RawStickiness>,
}

#[derive(Deserialize)]
struct RawTarget {
    #[serde(rename = "servicename")]
    service_name: Option<String>,
    #[serde(rename = "serviceport")]
    service_port: Option<Value>,
    #[serde(rename = "targetgrouparn")]
    arn: Option<String>,
    #[serde(rename = "targetgroupname")]
    name: Option<String>,
    weight: Option<u32>,
}

#[derive(Deserialize)]
struct RawStickiness {
    enabled: Option<bool>,
    #[serde(rename = "durationseconds")]
    duration_seconds: Option<u32>,
}

fn field(m: &BTreeMap<String, Value>, key: &str) -> Option<String> {
    match m.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn target(t: RawTarget, namespace: &str) -> Result<WeightedTarget, String> {
    let target = match (t.arn, t.name, t.service_name) {
        (Some(arn), None, None) => ForwardTarget::Arn(arn),
        (None, Some(name), None) => ForwardTarget::Name(name),
        (None, None, Some(service)) => {
            let port = match t.service_port {
                Some(Value::Number(n)) => n.as_i64().and_then(|n| i32::try_from(n).ok()).map(ServicePort::Number),
                // ALBC re-parses a string port, so "80" is the number 80.
                Some(Value::String(s)) if !s.is_empty() => {
                    Some(s.parse::<i32>().map(ServicePort::Number).unwrap_or(ServicePort::Name(s)))
                }
                _ => None,
            }
            .ok_or(format!("serviceName {service} needs a servicePort (number or name)"))?;
            ForwardTarget::Service(BackendRef { namespace: namespace.into(), service, port })
        }
        _ => return Err("each target group needs exactly one of targetGroupARN, targetGroupName or serviceName".into()),
    };
    Ok(WeightedTarget { target, weight: t.weight })
}

/// One `actions.<name>` value; Services named in it live in `namespace` (the Ingress's).
pub(crate) fn parse_action(raw: &str, namespace: &str) -> Result<RuleAction, String> {
    let a: RawAction = decode(raw)?;
    match a.kind.as_str() {
        "forward" => {
            let simple = match (a.target_group_arn, a.target_group_name) {
                (Some(arn), _) => Some(ForwardTarget::Arn(arn)),
                (None, Some(name)) => Some(ForwardTarget::Name(name)),
                _ => None,
            };
            if let Some(target) = simple {
                return Ok(RuleAction::Forward {
                    target_groups: vec![WeightedTarget { target, weight: None }],
                    stickiness_seconds: None,
                });
            }
            let f = a.forward.ok_or("forward needs targetGroupARN, targetGroupName or forwardConfig")?;
            if f.target_groups.is_empty() {
                return Err("forwardConfig.targetGroups is empty".into());
            }
            let target_groups = f.target_groups.into_iter().map(|t| target(t, namespace)).collect::<Result<_, _>>()?;
            let stickiness_seconds =
                f.stickiness.filter(|s| s.enabled == Some(true)).map(|s| s.duration_seconds.unwrap_or(3600));
            Ok(RuleAction::Forward { target_groups, stickiness_seconds })
        }
        "redirect" => {
            let r = a.redirect.ok_or("redirect needs redirectConfig")?;
            let status_code = field(&r, "statuscode").ok_or("redirectConfig.statusCode is required")?;
            if status_code != "HTTP_301" && status_code != "HTTP_302" {
                return Err(format!("redirect statusCode {status_code:?} is not HTTP_301 or HTTP_302"));
            }
            Ok(RuleAction::Redirect {
                protocol: field(&r, "protocol"),
                host: field(&r, "host"),
                port: field(&r, "port"),
                path: field(&r, "path"),
                query: field(&r, "query"),
                status_code,
            })
        }
        "fixed-response" => {
            let r = a.fixed.ok_or("fixed-response needs fixedResponseConfig")?;
            let status_code = field(&r, "statuscode").ok_or("fixedResponseConfig.statusCode is required")?;
            Ok(RuleAction::FixedResponse {
                status_code,
                content_type: field(&r, "contenttype"),
                message_body: field(&r, "messagebody"),
            })
        }
        other => Err(format!("type {other:?} is not forward, redirect or fixed-response")),
    }
}

#[derive(Deserialize)]
struct RawCondition {
    field: String,
    #[serde(flatten)]
    configs: BTreeMap<String, Value>,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
}

/// One `conditions.<name>` value: a JSON list of conditions, all of which must hold.
pub(crate) fn parse_conditions(raw: &str) -> Result<Vec<Condition>, String> {
    let list: Vec<RawCondition> = decode(raw)?;
    list.into_iter()
        .map(|c| {
            let cfg = |name: &str| c.configs.get(name).cloned().unwrap_or(Value::Null);
            let values = |name: &str| strings(cfg(name).get("values"));
            // host-header, path-pattern (and http-header, below) take either `values` (wildcards) or `regexValues`.
            let glob_or_regex =
                |name: &str, glob: fn(Vec<String>) -> Condition, regex: fn(Vec<String>) -> Condition| {
                    let (v, r) = (values(name), strings(cfg(name).get("regexvalues")));
                    match (v.is_empty(), r.is_empty()) {
                        (false, false) => Err(format!("{} has both values and regexValues; use one", c.field)),
                        (true, false) => Ok(regex(r)),
                        _ => Ok(glob(v)),
                    }
                };
            let cond = match c.field.as_str() {
                "host-header" => glob_or_regex("hostheaderconfig", Condition::HostHeader, Condition::HostHeaderRegex)?,
                "path-pattern" => {
                    glob_or_regex("pathpatternconfig", Condition::PathPattern, Condition::PathPatternRegex)?
                }
                "http-request-method" => Condition::HttpRequestMethod(values("httprequestmethodconfig")),
                "source-ip" => Condition::SourceIp(values("sourceipconfig")),
                "http-header" => {
                    let h = cfg("httpheaderconfig");
                    let name = h.get("httpheadername").and_then(Value::as_str).unwrap_or_default().to_string();
                    if name.is_empty() {
                        return Err("http-header needs httpHeaderConfig.httpHeaderName".to_string());
                    }
                    let (v, r) = (strings(h.get("values")), strings(h.get("regexvalues")));
                    match (v.is_empty(), r.is_empty()) {
                        (false, false) => {
                            return Err(format!("http-header {name} has both values and regexValues; use one"));
                        }
                        (true, false) => Condition::HttpHeaderRegex { name, values: r },
                        _ => Condition::HttpHeader { name, values: v },
                    }
                }
                "query-string" => {
                    let items =
                        cfg("querystringconfig").get("values").and_then(Value::as_array).cloned().unwrap_or_default();
                    Condition::QueryString(
                        items
                            .iter()
                            .map(|kv| QueryStringPair {
                                key: kv.get("key").and_then(Value::as_str).map(str::to_string),
                                value: kv.get("value").and_then(Value::as_str).unwrap_or_default().to_string(),
                            })
                            .collect(),
                    )
                }
                other => return Err(format!("field {other:?} is not a condition type")),
            };
            let empty = match &cond {
                Condition::QueryString(v) => v.is_empty(),
                Condition::HostHeader(v)
                | Condition::HostHeaderRegex(v)
                | Condition::PathPattern(v)
                | Condition::PathPatternRegex(v)
                | Condition::HttpRequestMethod(v)
                | Condition::SourceIp(v) => v.is_empty(),
                Condition::HttpHeader { values, .. } | Condition::HttpHeaderRegex { values, .. } => values.is_empty(),
            };
            if empty { Err(format!("condition {} has no values", c.field)) } else { Ok(cond) }
        })
        .collect()
}

#[cfg(test)]
#[path = "actions_tests.rs"]
mod tests;
