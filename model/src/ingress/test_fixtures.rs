//! Builders for Ingress specs, members and Services shared by the group tests.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{
    HTTPIngressPath, HTTPIngressRuleValue, IngressBackend, IngressRule, IngressServiceBackend, IngressSpec, IngressTLS,
    ServiceBackendPort,
};

use super::annotations::BackendSettings;
use super::backends::{ServiceView, Services};
use super::keys::full_key;
use super::merge::{IngressKey, Member};
use super::parse_annotations;

/// A backend port: number or name.
#[derive(Clone, Copy)]
pub enum P<'a> {
    N(i32),
    S(&'a str),
}

pub fn backend(svc: &str, port: P<'_>) -> IngressBackend {
    let port = match port {
        P::N(n) => ServiceBackendPort { number: Some(n), name: None },
        P::S(s) => ServiceBackendPort { number: None, name: Some(s.into()) },
    };
    IngressBackend { service: Some(IngressServiceBackend { name: svc.into(), port: Some(port) }), resource: None }
}

pub fn path(p: &str, path_type: &str, svc: &str, port: P<'_>) -> HTTPIngressPath {
    HTTPIngressPath { path: Some(p.into()), path_type: path_type.into(), backend: backend(svc, port) }
}

pub fn rule(host: &str, paths: Vec<HTTPIngressPath>) -> IngressRule {
    IngressRule { host: (!host.is_empty()).then(|| host.into()), http: Some(HTTPIngressRuleValue { paths }) }
}

pub fn spec(rules: Vec<IngressRule>) -> IngressSpec {
    IngressSpec { rules: Some(rules), ..Default::default() }
}

pub fn with_default(mut s: IngressSpec, svc: &str, port: P<'_>) -> IngressSpec {
    s.default_backend = Some(backend(svc, port));
    s
}

pub fn with_tls(mut s: IngressSpec, hosts: &[&str]) -> IngressSpec {
    let tls = IngressTLS { hosts: Some(hosts.iter().map(|h| h.to_string()).collect()), secret_name: None };
    s.tls = Some(vec![tls]);
    s
}

/// `namespace/name` with its annotations (suffixes under `alb.ingress.kubernetes.io/`) parsed.
pub fn member(key: &str, ann: &[(&str, &str)], spec: IngressSpec) -> Member {
    let (namespace, name) = key.split_once('/').expect("namespace/name");
    let map = ann.iter().map(|(k, v)| (full_key(k), v.to_string())).collect();
    let settings = parse_annotations(&map, namespace).unwrap_or_else(|e| panic!("{key}: {e}"));
    Member {
        key: IngressKey { namespace: namespace.into(), name: name.into() },
        settings,
        spec,
        discovered_certificates: vec![],
    }
}

/// Services as `namespace/name` with (port name, number) pairs and no annotations.
pub fn services(list: &[(&str, &[(&str, i32)])]) -> Services {
    let mut out = BTreeMap::new();
    for (key, ports) in list {
        let (ns, name) = key.split_once('/').expect("namespace/name");
        let ports = ports.iter().map(|(n, p)| ((!n.is_empty()).then(|| n.to_string()), *p)).collect();
        out.insert(
            (ns.to_string(), name.to_string()),
            ServiceView { ports, settings: BackendSettings::default(), ..Default::default() },
        );
    }
    out
}
