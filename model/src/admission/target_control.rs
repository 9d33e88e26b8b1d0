//! Pods: the ALB target control agent sidecar (gate `ALBTargetControlAgent`, the upstream's
//! `alb-target-control.{namespace,object}.elbv2.k8s.aws` webhooks).
//!
//! A pod gets the agent when its label [`INJECT_LABEL`] is `true`, or when its namespace is
//! labelled [`NAMESPACE_LABEL`]`=enabled` and the pod does not say `false`. The agent's image,
//! addresses and limits come from the namespace's ALBTargetControlConfig (else the controller's
//! namespace's), each overridable by a pod annotation. Where the upstream skips an annotation it
//! cannot parse (CPU and memory quantities) or lets an address through that the API server then
//! refuses, the pod is refused here naming the annotation or field, the value and what is expected.

use crate::crd::ALBTargetControlConfigSpec;
use k8s_openapi::api::core::v1::{Container, ContainerPort, EnvVar, Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// The sidecar's container name; a pod already holding one is left as it is.
pub const AGENT_CONTAINER: &str = "alb-target-control-agent";
/// Pod label: `true` asks for the agent, `false` refuses it whatever the namespace says.
pub const INJECT_LABEL: &str = "elbv2.k8s.aws/alb-target-control-agent-inject";
/// Namespace label: `enabled` gives the agent to every pod not labelled `false`.
pub const NAMESPACE_LABEL: &str = "elbv2.k8s.aws/alb-target-control-agent-injection";
/// Set on the pods given the agent.
pub const INJECTED_ANNOTATION: &str = "elbv2.k8s.aws/alb-target-control-agent-injected";

const ANNOTATION_PREFIX: &str = "elbv2.k8s.aws/alb-target-control-agent-";

/// Whether a pod asks for the agent: its own label first, then its namespace's opt-in.
pub fn agent_wanted(pod_labels: &BTreeMap<String, String>, namespace_opted_in: bool) -> Result<bool, String> {
    match pod_labels.get(INJECT_LABEL).map(String::as_str) {
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(other) => Err(format!(
            "label {INJECT_LABEL} is {other:?}; expected \"true\" (give this pod the ALB target control agent) or \
             \"false\" (never give it one)"
        )),
        None => Ok(namespace_opted_in),
    }
}

/// Whether a namespace's labels opt its pods into the agent.
pub fn namespace_opted_in(labels: &BTreeMap<String, String>) -> bool {
    labels.get(NAMESPACE_LABEL).is_some_and(|v| v == "enabled")
}

/// The namespaces whose ALBTargetControlConfig applies to a pod of `pod_namespace`, in the order
/// they are looked at: the pod's, the controller's, then `kube-system` (where the upstream
/// looks whatever namespace it runs in), each once.
pub fn config_namespaces<'a>(pod_namespace: &'a str, controller_namespace: &'a str) -> Vec<&'a str> {
    let mut out = vec![pod_namespace];
    for ns in [controller_namespace, "kube-system"] {
        if !ns.is_empty() && !out.contains(&ns) {
            out.push(ns);
        }
    }
    out
}

/// The agent container for `pod`, from the ALBTargetControlConfig `config_ref` (`namespace/name`,
/// named in errors) and the pod's annotations; `None` when the pod already has one.
pub fn plan_agent(
    pod: &Pod,
    config: &ALBTargetControlConfigSpec,
    config_ref: &str,
) -> Result<Option<Container>, String> {
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or_default();
    if containers.iter().any(|c| c.name == AGENT_CONTAINER) {
        return Ok(None);
    }
    let annotations = pod.metadata.annotations.clone().unwrap_or_default();
    let given = |suffix: &str| {
        let key = format!("{ANNOTATION_PREFIX}{suffix}");
        annotations.get(&key).map(|v| (key, v.clone()))
    };
    let field = |name: &str| format!("ALBTargetControlConfig {config_ref} spec.{name}");

    let image = given("image").map(|(_, v)| v).unwrap_or_else(|| config.image.clone());
    if image.trim().is_empty() {
        return Err(format!("{} is empty; expected the agent's container image", field("image")));
    }
    let address = |suffix: &str, spec_name: &str, from_spec: &str| -> Result<(String, u16), String> {
        let (whence, value) = match given(suffix) {
            Some((key, v)) => (format!("annotation {key}"), v),
            None => (field(spec_name), from_spec.to_string()),
        };
        let port = parse_address(&value).map_err(|e| format!("{whence} is {value:?}: {e}"))?;
        Ok((value, port))
    };
    let (data, data_port) = address("data-address", "dataAddress", &config.data_address)?;
    let (control, control_port) = address("control-address", "controlAddress", &config.control_address)?;
    let (destination, _) = address("destination-address", "destinationAddress", &config.destination_address)?;
    if data_port == control_port {
        return Err(format!(
            "the agent's data address {data:?} and control address {control:?} use the same port; expected two \
             ports (the target port and the target group's target control port)"
        ));
    }
    for c in containers {
        for p in c.ports.iter().flatten() {
            if p.container_port == i32::from(data_port) || p.container_port == i32::from(control_port) {
                return Err(format!(
                    "container {:?} declares port {}, which the ALB target control agent listens on (data {data:?}, \
                     control {control:?}); move the application (the agent forwards to {destination:?}) or set \
                     other agent addresses",
                    c.name, p.container_port
                ));
            }
        }
    }
    let max_concurrency = match given("max-concurrency") {
        Some((key, v)) => match v.trim().parse::<i32>() {
            Ok(n) if (0..=1000).contains(&n) => n,
            _ => return Err(format!("annotation {key} is {v:?}; expected a whole number from 0 to 1000")),
        },
        None => config.max_concurrency,
    };
    let optional = |suffix: &str, from_spec: Option<String>| given(suffix).map(|(_, v)| v).or(from_spec);
    let one_of = |suffix: &str, from_spec: Option<&str>, allowed: &[&str]| -> Result<Option<String>, String> {
        match given(suffix) {
            Some((key, v)) if !allowed.contains(&v.as_str()) => {
                Err(format!("annotation {key} is {v:?}; expected one of {}", allowed.join(", ")))
            }
            Some((_, v)) => Ok(Some(v)),
            None => Ok(from_spec.map(str::to_string)),
        }
    };
    let protocol =
        one_of("protocol-version", config.protocol_version.map(|p| p.as_str()), &["HTTP1", "HTTP2", "GRPC"])?;
    let rust_log = one_of("rust-log", config.rust_log.map(|l| l.as_str()), &["debug", "info", "error"])?;

    let mut env = vec![
        var("TARGET_CONTROL_DATA_ADDRESS", &data),
        var("TARGET_CONTROL_CONTROL_ADDRESS", &control),
        var("TARGET_CONTROL_DESTINATION_ADDRESS", &destination),
        var("TARGET_CONTROL_MAX_CONCURRENCY", &max_concurrency.to_string()),
    ];
    let optional_vars = [
        ("TARGET_CONTROL_TLS_CERT_PATH", optional("tls-cert-path", config.tls_cert_path.clone())),
        ("TARGET_CONTROL_TLS_KEY_PATH", optional("tls-key-path", config.tls_key_path.clone())),
        ("TARGET_CONTROL_TLS_SECURITY_POLICY", optional("tls-security-policy", config.tls_security_policy.clone())),
        ("TARGET_CONTROL_PROTOCOL_VERSION", protocol),
        ("RUST_LOG", rust_log),
    ];
    env.extend(optional_vars.into_iter().filter_map(|(name, v)| v.filter(|v| !v.is_empty()).map(|v| var(name, &v))));

    Ok(Some(Container {
        name: AGENT_CONTAINER.to_string(),
        image: Some(image),
        env: Some(env),
        ports: Some(vec![port("data", data_port), port("control", control_port)]),
        resources: resources(config.resources.clone(), &given)?,
        ..Default::default()
    }))
}

/// The port of an `IP:port` address (`[v6]:port` for IPv6), or why it is not one.
fn parse_address(value: &str) -> Result<u16, String> {
    let expected = "expected IP:port, for example 0.0.0.0:80 or [::]:80";
    let (host, port) = value.rsplit_once(':').ok_or_else(|| format!("no port; {expected}"))?;
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    host.parse::<IpAddr>().map_err(|_| format!("{host:?} is not an IP address; {expected}"))?;
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(format!("port {port:?} is not from 1 to 65535; {expected}")),
    }
}

/// The config's resources with the pod's CPU and memory annotations over them.
fn resources(
    base: Option<ResourceRequirements>,
    given: &dyn Fn(&str) -> Option<(String, String)>,
) -> Result<Option<ResourceRequirements>, String> {
    let overrides = [
        ("cpu-request", false, "cpu"),
        ("cpu-limit", true, "cpu"),
        ("memory-request", false, "memory"),
        ("memory-limit", true, "memory"),
    ];
    let mut out = base;
    for (suffix, limit, resource) in overrides {
        let Some((key, value)) = given(suffix) else { continue };
        if !is_quantity(&value) {
            return Err(format!(
                "annotation {key} is {value:?}; expected a Kubernetes quantity, for example 100m or 128Mi"
            ));
        }
        let r = out.get_or_insert_with(ResourceRequirements::default);
        let list = if limit { &mut r.limits } else { &mut r.requests };
        list.get_or_insert_with(BTreeMap::new).insert(resource.to_string(), Quantity(value));
    }
    Ok(out)
}

/// A Kubernetes quantity (the API server's grammar: a signed decimal number, then a binary suffix
/// `Ki`…`Ei`, a decimal suffix `n u m k M G T P E`, or a decimal exponent).
fn is_quantity(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let digits_end = s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len());
    let (number, suffix) = s.split_at(digits_end);
    let number_ok = is_quantity_number(number);
    let suffix_ok = match suffix {
        "" | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E" => true,
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => true,
        exp => {
            exp.strip_prefix(['e', 'E']).is_some_and(|e| is_quantity_number(e.strip_prefix(['+', '-']).unwrap_or(e)))
        }
    };
    number_ok && suffix_ok
}

/// `[0-9]+(\.[0-9]*)?|\.[0-9]+`.
fn is_quantity_number(s: &str) -> bool {
    match s.split_once('.') {
        Some((a, b)) => !(a.is_empty() && b.is_empty()) && (a.chars().chain(b.chars())).all(|c| c.is_ascii_digit()),
        None => !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()),
    }
}

fn var(name: &str, value: &str) -> EnvVar {
    EnvVar { name: name.to_string(), value: Some(value.to_string()), ..Default::default() }
}

fn port(name: &str, number: u16) -> ContainerPort {
    ContainerPort {
        name: Some(name.to_string()),
        container_port: i32::from(number),
        protocol: Some("TCP".to_string()),
        ..Default::default()
    }
}

#[cfg(test)]
#[path = "target_control_tests.rs"]
mod tests;
