//! Per-port merge of an IngressGroup's listeners (ALBC `pkg/ingress/model_builder.go`
//! `mergeListenPortConfigs`, `buildSSLRedirectConfig`; `model_build_listener.go`).
//!
//! What ALBC does, and so do we:
//! - Listen ports of one member: `listen-ports`, else `[{"HTTPS":443}]` when the member names
//!   certificates (`certificate-arn` or IngressClassParams `certificateArn`), else `[{"HTTP":80}]`.
//!   TLS hosts alone do not make the default HTTPS.
//! - Certificates of an HTTPS port: the member's named certificates, or, when it names none, the
//!   ACM certificates discovered for its hosts (`spec.rules[].host` and `spec.tls[].hosts`; the
//!   controller looks them up, see [`certificate_discovery_hosts`]). Merged per port: the default
//!   certificate is the first certificate of the first member (in group order) that has any; then
//!   every member's certificates in order, duplicates dropped. The default certificate may appear
//!   again later in the list (ALBC allows the same certificate as default and SNI).
//! - Errors (the whole group fails): two members giving one port different protocols, different
//!   `ssl-policy` (HTTPS ports only), different `inbound-cidrs` sets or different prefix-list sets
//!   (only members that set them count), or different values for one listener attribute; an
//!   `ssl-redirect` port that is not an HTTPS listener of the group.
//! - Defaults: `ssl-policy` `--default-ssl-policy` on HTTPS ports; inbound `0.0.0.0/0` and `::/0`
//!   when no member of the port names CIDRs or prefix lists.
//!
//! Where we differ: every conflict is reported, not only the first; ALBC resolves a listener
//! attribute conflict with the IngressClassParams value of the port's first member, while here
//! params have already replaced that member's attributes (`apply_params`), so members sharing
//! params agree and only members with different params or annotations conflict. `ssl-redirect`
//! disagreements are [`super::conflicts`] (exclusive annotation); here the first member's wins.
//! `mutual-authentication` must agree like `ssl-policy`, compared after trust store names are
//! resolved (a name and its ARN agree), as ALBC compares them.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use ipnet::IpNet;
use k8s_openapi::api::networking::v1::IngressSpec;

use super::annotations::IngressSettings;
use crate::lb::{Attributes, MutualAuthentication, Protocol};

/// ALBC's `--default-ssl-policy`.
pub const DEFAULT_SSL_POLICY: &str = "ELBSecurityPolicy-2016-08";

/// `namespace/name` of an Ingress.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IngressKey {
    pub namespace: String,
    pub name: String,
}

impl fmt::Display for IngressKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// One member of a group, in group order (see [`super::members`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Member {
    pub key: IngressKey,
    /// Annotations with IngressClassParams applied.
    pub settings: IngressSettings,
    pub spec: IngressSpec,
    /// ACM certificates found for [`certificate_discovery_hosts`]; ignored when none are asked for.
    pub discovered_certificates: Vec<String>,
}

/// Group-wide inputs that are not on the Ingresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeConfig {
    pub default_ssl_policy: String,
    /// Trust store name → ARN, for the names `mutual-authentication` uses
    /// ([`super::mtls::trust_store_names`]), as DescribeTrustStores answered.
    pub trust_store_arns: BTreeMap<String, String>,
    /// `--tolerate-non-existent-backend-service` (ALBC's default true): a rule forwarding to one
    /// Service that does not exist answers 503 with a warning; false fails the group.
    pub tolerate_missing_service: bool,
    /// `--tolerate-non-existent-backend-action` (ALBC's default true): a `use-annotation` backend
    /// without its `actions.<name>` answers 503 with a warning; false fails the group.
    pub tolerate_missing_action: bool,
    /// `--default-load-balancer-scheme`: the frontend NLB's scheme unless `frontend-nlb-scheme`.
    pub default_scheme: crate::lb::Scheme,
}

impl Default for MergeConfig {
    fn default() -> Self {
        Self {
            default_ssl_policy: DEFAULT_SSL_POLICY.into(),
            trust_store_arns: BTreeMap::new(),
            tolerate_missing_service: true,
            tolerate_missing_action: true,
            default_scheme: crate::lb::Scheme::Internal,
        }
    }
}

/// One listener of the group's load balancer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenerConfig {
    pub port: u16,
    pub protocol: Protocol,
    /// HTTPS only; the first is the default certificate.
    pub certificates: Vec<String>,
    /// HTTPS only.
    pub ssl_policy: Option<String>,
    /// HTTPS only: `None` leaves the listener's mutual TLS as it is.
    pub mutual_authentication: Option<MutualAuthentication>,
    /// Sources the frontend security group admits to this port.
    pub inbound_cidrs_v4: Vec<IpNet>,
    pub inbound_cidrs_v6: Vec<IpNet>,
    pub prefix_lists: Vec<String>,
    pub attributes: Attributes,
    /// Indices into the members slice of the members listening here, in group order.
    pub members: Vec<usize>,
}

/// The listeners of a group, by port, and where HTTP is redirected.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Merged {
    pub listeners: Vec<ListenerConfig>,
    /// The HTTPS port every HTTP listener redirects to (status HTTP_301).
    pub ssl_redirect: Option<u16>,
}

/// Why a group cannot be built; every variant names the Ingress(es) and what to change.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    #[error(
        "listener port {port}: conflicting {setting}: Ingress {first} has {first_value}, Ingress {second} has {second_value}; make them equal or move one Ingress to another group"
    )]
    Conflict { port: u16, setting: String, first: String, first_value: String, second: String, second_value: String },
    #[error("ssl-redirect port {port} (set on Ingress {ingress}) {problem}")]
    SslRedirect { port: u16, ingress: String, problem: String },
    #[error(
        "listener port {port}: Ingresses {} all set spec.defaultBackend; keep it on one Ingress of the group",
        ingresses.join(", ")
    )]
    DefaultBackends { port: u16, ingresses: Vec<String> },
    #[error("Ingress {ingress}, {location}: {problem}; {fix}")]
    Invalid { ingress: String, location: String, problem: String, fix: String },
    /// The frontend NLB's annotations disagree or cannot be applied.
    #[error("{problem}")]
    FrontendNlb { problem: String },
}

/// The listen ports of one member, with ALBC's default.
pub fn listen_ports(s: &IngressSettings) -> Vec<(Protocol, u16)> {
    match &s.listen_ports {
        Some(p) => p.clone(),
        None if !s.certificate_arns.is_empty() => vec![(Protocol::Https, 443)],
        None => vec![(Protocol::Http, 80)],
    }
}

/// The hosts whose ACM certificates the controller must discover for this member: `Some` only
/// when it has an HTTPS port and names no certificate (sorted, unique).
pub fn certificate_discovery_hosts(settings: &IngressSettings, spec: &IngressSpec) -> Option<Vec<String>> {
    let https = listen_ports(settings).iter().any(|(p, _)| *p == Protocol::Https);
    if !https || !settings.certificate_arns.is_empty() {
        return None;
    }
    let mut hosts = BTreeSet::new();
    for r in spec.rules.iter().flatten() {
        hosts.extend(r.host.clone().filter(|h| !h.is_empty()));
    }
    for t in spec.tls.iter().flatten() {
        hosts.extend(t.hosts.iter().flatten().cloned());
    }
    Some(hosts.into_iter().collect())
}

/// Remembers the first member that set a value and reports every later disagreement.
struct Agree<'a, T> {
    setting: String,
    first: Option<(&'a IngressKey, T)>,
}

impl<'a, T: PartialEq + Clone> Agree<'a, T> {
    fn new(setting: impl Into<String>) -> Self {
        Self { setting: setting.into(), first: None }
    }

    fn offer(&mut self, who: &'a IngressKey, v: T, port: u16, show: fn(&T) -> String, errs: &mut Vec<GroupError>) {
        match &self.first {
            None => self.first = Some((who, v)),
            Some((w, f)) if *f != v => errs.push(GroupError::Conflict {
                port,
                setting: self.setting.clone(),
                first: w.to_string(),
                first_value: show(f),
                second: who.to_string(),
                second_value: show(&v),
            }),
            Some(_) => {}
        }
    }

    fn value(self) -> Option<T> {
        self.first.map(|(_, v)| v)
    }
}

fn show_set<T: fmt::Display>(s: &BTreeSet<T>) -> String {
    format!("[{}]", s.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))
}

/// Merges the members' listeners port by port; all conflicts at once.
pub fn merge(members: &[Member], cfg: &MergeConfig) -> Result<Merged, Vec<GroupError>> {
    let mut errs = Vec::new();
    let mut by_port: BTreeMap<u16, Vec<(usize, Protocol)>> = BTreeMap::new();
    for (i, m) in members.iter().enumerate() {
        for (proto, port) in listen_ports(&m.settings) {
            by_port.entry(port).or_default().push((i, proto));
        }
    }
    let mut listeners = Vec::new();
    for (port, on_port) in by_port {
        listeners.push(merge_port(port, &on_port, members, cfg, &mut errs));
    }
    let ssl_redirect = members.iter().find_map(|m| m.settings.ssl_redirect.map(|p| (p, &m.key)));
    if let Some((port, who)) = ssl_redirect {
        let problem = match listeners.iter().find(|l| l.port == port) {
            None => Some("is not a listener port of the group; add {\"HTTPS\": PORT} to listen-ports"),
            Some(l) if l.protocol != Protocol::Https => {
                Some("is an HTTP listener; redirect to an HTTPS listener port of the group")
            }
            Some(_) => None,
        };
        if let Some(p) = problem {
            let problem = p.replace("PORT", &port.to_string());
            errs.push(GroupError::SslRedirect { port, ingress: who.to_string(), problem });
        }
    }
    if errs.is_empty() { Ok(Merged { listeners, ssl_redirect: ssl_redirect.map(|(p, _)| p) }) } else { Err(errs) }
}

fn merge_port(
    port: u16,
    on_port: &[(usize, Protocol)],
    members: &[Member],
    cfg: &MergeConfig,
    errs: &mut Vec<GroupError>,
) -> ListenerConfig {
    let mut protocol = Agree::new("protocol");
    let mut policy = Agree::new(format!("{}/ssl-policy", super::keys::PREFIX));
    let mtls_key = format!("{}/{}", super::keys::PREFIX, super::keys::MUTUAL_AUTHENTICATION);
    let mut mtls = Agree::new(mtls_key.clone());
    let mut cidrs = Agree::new(format!("{}/inbound-cidrs", super::keys::PREFIX));
    let mut lists = Agree::new(format!("{}/security-group-prefix-lists", super::keys::PREFIX));
    let mut attrs: BTreeMap<String, Agree<String>> = BTreeMap::new();
    for &(i, proto) in on_port {
        let who = &members[i].key;
        protocol.offer(who, proto, port, |p| p.as_aws().to_string(), errs);
    }
    let proto = protocol.value().unwrap_or(Protocol::Http);
    let https = proto == Protocol::Https;
    let mut certificates: Vec<String> = Vec::new();
    let mut seen = BTreeSet::new();
    for &(i, _) in on_port {
        let m = &members[i];
        let s = &m.settings;
        if https {
            if let Some(p) = &s.ssl_policy {
                policy.offer(&m.key, p.clone(), port, Clone::clone, errs);
            }
            match s.mutual_authentication.get(&port).map(|t| t.resolve(&cfg.trust_store_arns)) {
                Some(Ok(t)) => mtls.offer(&m.key, t, port, ToString::to_string, errs),
                Some(Err(name)) => errs.push(GroupError::Invalid {
                    ingress: m.key.to_string(),
                    location: format!("annotation {mtls_key}, port {port}"),
                    problem: format!("trust store {name:?} was not found"),
                    fix: "create it, or name an existing trust store by its name or ARN".into(),
                }),
                None => {}
            }
            let own = if s.certificate_arns.is_empty() { &m.discovered_certificates } else { &s.certificate_arns };
            for (j, c) in own.iter().enumerate() {
                let is_default = certificates.is_empty() && j == 0;
                if is_default || seen.insert(c.clone()) {
                    certificates.push(c.clone());
                }
            }
        }
        if let Some(c) = s.inbound_cidrs.as_ref().filter(|c| !c.is_empty()) {
            cidrs.offer(&m.key, c.iter().copied().collect::<BTreeSet<IpNet>>(), port, show_set, errs);
        }
        if let Some(l) = s.security_group_prefix_lists.as_ref().filter(|l| !l.is_empty()) {
            lists.offer(&m.key, l.iter().cloned().collect::<BTreeSet<String>>(), port, show_set, errs);
        }
        for (k, v) in s.listener_attributes.get(&(proto, port)).into_iter().flatten() {
            let setting = format!("listener attribute {k} (listener-attributes.{}-{port})", proto.as_aws());
            attrs.entry(k.clone()).or_insert_with(|| Agree::new(setting)).offer(
                &m.key,
                v.clone(),
                port,
                Clone::clone,
                errs,
            );
        }
    }
    let cidrs = cidrs.value().unwrap_or_default();
    let prefix_lists: Vec<String> = lists.value().unwrap_or_default().into_iter().collect();
    let (mut v4, mut v6): (Vec<IpNet>, Vec<IpNet>) = cidrs.into_iter().partition(|c| matches!(c, IpNet::V4(_)));
    if v4.is_empty() && v6.is_empty() && prefix_lists.is_empty() {
        v4.push("0.0.0.0/0".parse().expect("valid CIDR"));
        v6.push("::/0".parse().expect("valid CIDR"));
    }
    ListenerConfig {
        port,
        protocol: proto,
        certificates,
        ssl_policy: if https { Some(policy.value().unwrap_or_else(|| cfg.default_ssl_policy.clone())) } else { None },
        mutual_authentication: mtls.value(),
        inbound_cidrs_v4: v4,
        inbound_cidrs_v6: v6,
        prefix_lists,
        attributes: attrs.into_iter().filter_map(|(k, a)| a.value().map(|v| (k, v))).collect(),
        members: on_port.iter().map(|(i, _)| *i).collect(),
    }
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
