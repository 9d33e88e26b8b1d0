//! `alb.ingress.kubernetes.io/*` annotations → [`IngressSettings`] (per Ingress) and
//! [`BackendSettings`] (the Ingress,Service-located ones, also read from each backend Service by
//! [`parse_service_annotations`]; the Service's value wins field by field, see
//! [`BackendSettings::overridden_by`]). An absent annotation is `None`; ALBC's defaults (internal
//! scheme, ipv4, `[{"HTTP":80}]` or `[{"HTTPS":443}]`, health-check numbers) are applied when the
//! stack is built, because some depend on other values (certificates, gRPC).
//!
//! Known but not implemented (`crate::annotations::refusals::INGRESS`, empty today) → `unsupported`, with the reason and whether
//! the group fails closed on it. Other keys of our prefix → `unknown`. Deviation: ALBC silently
//! ignores unknown keys.

use std::collections::BTreeMap;

use ipnet::IpNet;

use super::actions::{CognitoConfig, Condition, OidcConfig, RuleAction, parse_cognito, parse_oidc};
use super::keys::{self as k, PREFIX};
use crate::annotations::fields::{HealthCheckKeys, HealthCheckSettings, health_check, user_tags};
use crate::annotations::{AnnotationErrors, Reader, Unsupported};
use crate::crd::TargetType;
use crate::lb::{Attributes, LbIpAddressType, Protocol, Scheme, Tags};

/// `auth-type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthType {
    None,
    Oidc,
    Cognito,
}

/// The `auth-*` annotations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthSettings {
    pub auth_type: Option<AuthType>,
    pub oidc: Option<OidcConfig>,
    pub cognito: Option<CognitoConfig>,
    /// `authenticate` | `allow` | `deny` (ALBC default `authenticate`).
    pub on_unauthenticated_request: Option<String>,
    /// ALBC default `openid`.
    pub scope: Option<String>,
    /// ALBC default `AWSELBAuthSessionCookie`.
    pub session_cookie: Option<String>,
    /// ALBC default 604800.
    pub session_timeout_seconds: Option<u64>,
}

/// Settings of the target groups behind one backend (annotations on the Ingress or the Service).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackendSettings {
    pub target_type: Option<TargetType>,
    /// HTTP or HTTPS.
    pub backend_protocol: Option<Protocol>,
    /// HTTP1 | HTTP2 | GRPC.
    pub backend_protocol_version: Option<String>,
    pub target_group_attributes: Option<Attributes>,
    pub health_check: HealthCheckSettings,
    pub auth: AuthSettings,
    /// `tags` (Merge): on the load balancer when read from an Ingress, on the target group when
    /// read from a Service.
    pub tags: Tags,
    pub multi_cluster_target_group: Option<bool>,
    /// `target-node-labels`: instance targets are the nodes carrying all these labels (the
    /// binding's `nodeSelector`); ignored for ip targets, as in ALBC.
    pub target_node_labels: Option<BTreeMap<String, String>>,
    /// `target-control-port.<service>.<port>` by (Service name, port as the backend writes it):
    /// the ALB target optimizer's control port of that backend's target group.
    pub target_control_ports: BTreeMap<(String, String), u16>,
    /// The IngressClassParams' `targetType` and `tags`, which win over a Service's annotations too
    /// (ALBC: class, then Service, then Ingress); set by `super::params`.
    pub class_target_type: Option<TargetType>,
    pub class_tags: Tags,
}

/// Everything the annotations of one Ingress ask for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IngressSettings {
    pub group_name: Option<String>,
    /// −1000..=1000.
    pub group_order: Option<i32>,
    pub load_balancer_name: Option<String>,
    pub scheme: Option<Scheme>,
    pub ip_address_type: Option<LbIpAddressType>,
    /// Subnet IDs or `Name` tags.
    pub subnets: Option<Vec<String>>,
    /// IngressClassParams `spec.subnets.tags`: tag key → accepted values (replaces `subnets`).
    pub subnet_tags: Option<std::collections::BTreeMap<String, Vec<String>>>,
    pub security_groups: Option<Vec<String>>,
    pub manage_backend_security_group_rules: Option<bool>,
    pub load_balancer_attributes: Option<Attributes>,
    pub wafv2_acl_arn: Option<String>,
    pub wafv2_acl_name: Option<String>,
    /// WAF Classic (WAF Regional) web ACL ID: `waf-acl-id`, else `web-acl-id`; `none` disassociates.
    pub waf_classic_acl_id: Option<String>,
    /// `shield-advanced-protection`.
    pub shield_advanced_protection: Option<bool>,
    pub listen_ports: Option<Vec<(Protocol, u16)>>,
    pub ssl_redirect: Option<u16>,
    pub inbound_cidrs: Option<Vec<IpNet>>,
    pub security_group_prefix_lists: Option<Vec<String>>,
    pub certificate_arns: Vec<String>,
    pub ssl_policy: Option<String>,
    /// `jwt-validation`: checked, applied to the Ingress's rules on HTTPS listeners.
    pub jwt_validation: Option<crate::lb::JwtValidation>,
    /// `mutual-authentication`, by listen port (applied to HTTPS ports only).
    pub mutual_authentication: BTreeMap<u16, super::mtls::MtlsSetting>,
    pub minimum_capacity_units: Option<u32>,
    /// `customer-owned-ipv4-pool` (never empty).
    pub customer_owned_ipv4_pool: Option<String>,
    /// `ipam-ipv4-pool-id`, or IngressClassParams `ipamConfiguration.ipv4IPAMPoolId` (which wins).
    pub ipv4_ipam_pool: Option<String>,
    /// `listener-attributes.<PROTOCOL>-<port>`.
    pub listener_attributes: BTreeMap<(Protocol, u16), Attributes>,
    pub use_regex_path_match: bool,
    pub backend: BackendSettings,
    /// `actions.<name>`, referred to by backends with port name `use-annotation`.
    pub actions: BTreeMap<String, RuleAction>,
    /// `conditions.<name>`, added to the rules whose backend Service (or action) is `<name>`.
    pub conditions: BTreeMap<String, Vec<Condition>>,
    /// `transforms.<name>`, the rewrites of the rules whose backend Service (or action) is `<name>`.
    pub transforms: BTreeMap<String, Vec<crate::lb::Transform>>,
    /// `create-acm-cert` (gate `EnableCertificateManagement`): a certificate requested for the
    /// Ingress's hosts when it names none.
    pub create_acm_cert: Option<bool>,
    /// `acm-pca-arn`: the private CA that issues it (else `--default-pca-arn`, else Amazon).
    pub acm_pca_arn: Option<String>,
    /// `enable-frontend-nlb` and `frontend-nlb-*`.
    pub frontend_nlb: super::frontend_nlb::FrontendNlbSettings,
    pub unsupported: Vec<Unsupported>,
    pub unknown: Vec<String>,
}

impl IngressSettings {
    /// Why the group must stay as it is: this Ingress's refused annotations that protect the load
    /// balancer ([`crate::annotations::refusals`]), one Warning text each; empty when it may be deployed.
    pub fn fail_closed(&self) -> Vec<String> {
        crate::annotations::refusals::fail_closed_notes(&self.unsupported)
    }
}

impl BackendSettings {
    /// The Service's annotations win over the Ingress's, field by field (tags are merged, the
    /// Service's value winning per key), and the IngressClassParams' target type and tags over
    /// both; `multi-cluster-target-group` is on when either asks.
    pub fn overridden_by(&self, svc: &BackendSettings) -> BackendSettings {
        let h = &self.health_check;
        let sh = &svc.health_check;
        let a = &self.auth;
        let sa = &svc.auth;
        let mut tags = self.tags.clone();
        tags.extend(svc.tags.clone());
        tags.extend(self.class_tags.clone());
        BackendSettings {
            target_type: self.class_target_type.or(svc.target_type).or(self.target_type),
            backend_protocol: svc.backend_protocol.or(self.backend_protocol),
            backend_protocol_version: svc.backend_protocol_version.clone().or(self.backend_protocol_version.clone()),
            target_group_attributes: svc.target_group_attributes.clone().or(self.target_group_attributes.clone()),
            health_check: HealthCheckSettings {
                protocol: sh.protocol.or(h.protocol),
                port: sh.port.clone().or(h.port.clone()),
                path: sh.path.clone().or(h.path.clone()),
                interval_seconds: sh.interval_seconds.or(h.interval_seconds),
                timeout_seconds: sh.timeout_seconds.or(h.timeout_seconds),
                healthy_threshold: sh.healthy_threshold.or(h.healthy_threshold),
                unhealthy_threshold: sh.unhealthy_threshold.or(h.unhealthy_threshold),
                success_codes: sh.success_codes.clone().or(h.success_codes.clone()),
            },
            auth: AuthSettings {
                auth_type: sa.auth_type.or(a.auth_type),
                oidc: sa.oidc.clone().or(a.oidc.clone()),
                cognito: sa.cognito.clone().or(a.cognito.clone()),
                on_unauthenticated_request: sa
                    .on_unauthenticated_request
                    .clone()
                    .or(a.on_unauthenticated_request.clone()),
                scope: sa.scope.clone().or(a.scope.clone()),
                session_cookie: sa.session_cookie.clone().or(a.session_cookie.clone()),
                session_timeout_seconds: sa.session_timeout_seconds.or(a.session_timeout_seconds),
            },
            tags,
            // Either one asking makes it multi-cluster (ALBC ORs the two).
            multi_cluster_target_group: match (self.multi_cluster_target_group, svc.multi_cluster_target_group) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (mine, theirs) => theirs.or(mine),
            },
            target_node_labels: svc.target_node_labels.clone().or(self.target_node_labels.clone()),
            // Key by key, the Service's win (ALBC merges the two annotation maps).
            target_control_ports: {
                let mut m = self.target_control_ports.clone();
                m.extend(svc.target_control_ports.clone());
                m
            },
            class_target_type: self.class_target_type,
            class_tags: self.class_tags.clone(),
        }
    }
}

const HEALTH_CHECK_KEYS: HealthCheckKeys = HealthCheckKeys {
    protocol: k::HC_PROTOCOL,
    port: k::HC_PORT,
    path: k::HC_PATH,
    interval: k::HC_INTERVAL,
    timeout: k::HC_TIMEOUT,
    healthy_threshold: k::HC_HEALTHY_THRESHOLD,
    unhealthy_threshold: k::HC_UNHEALTHY_THRESHOLD,
    success_codes: k::SUCCESS_CODES,
    protocols: &[Protocol::Http, Protocol::Https],
    code_ranges: &[(200, 499), (0, 99)],
    codes_hint: "HTTP codes from 200 to 499 or gRPC codes from 0 to 99, e.g. \"200\", \"200-299\" or \"0,12\"",
};

/// The backend (Ingress,Service-located) annotations.
pub(super) fn backend(r: &mut Reader<'_>, unsupported: &mut Vec<Unsupported>) -> BackendSettings {
    let target_type = r.one_of(k::TARGET_TYPE, &["instance", "ip"]).map(|v| match v {
        "ip" => TargetType::Ip,
        _ => TargetType::Instance,
    });
    let backend_protocol = r
        .one_of(k::BACKEND_PROTOCOL, &["HTTP", "HTTPS"])
        .map(|v| if v == "HTTPS" { Protocol::Https } else { Protocol::Http });
    let auth_type = r.one_of(k::AUTH_TYPE, &["none", "oidc", "cognito"]).map(|v| match v {
        "oidc" => AuthType::Oidc,
        "cognito" => AuthType::Cognito,
        _ => AuthType::None,
    });
    let oidc = r.raw(k::AUTH_IDP_OIDC).and_then(|raw| {
        parse_oidc(raw).map_err(|e| r.fail(r.key(k::AUTH_IDP_OIDC), raw, format!("OIDC settings ({e})"))).ok()
    });
    let cognito = r.raw(k::AUTH_IDP_COGNITO).and_then(|raw| {
        parse_cognito(raw).map_err(|e| r.fail(r.key(k::AUTH_IDP_COGNITO), raw, format!("Cognito settings ({e})"))).ok()
    });
    BackendSettings {
        target_type,
        backend_protocol,
        backend_protocol_version: r
            .one_of(k::BACKEND_PROTOCOL_VERSION, &["HTTP1", "HTTP2", "GRPC"])
            .map(str::to_string),
        target_group_attributes: r.map(k::TARGET_GROUP_ATTRIBUTES),
        health_check: health_check(r, &HEALTH_CHECK_KEYS),
        auth: AuthSettings {
            auth_type,
            oidc,
            cognito,
            on_unauthenticated_request: r
                .one_of(k::AUTH_ON_UNAUTHENTICATED_REQUEST, &["authenticate", "allow", "deny"])
                .map(str::to_string),
            scope: r.string(k::AUTH_SCOPE),
            session_cookie: r.string(k::AUTH_SESSION_COOKIE),
            session_timeout_seconds: r.int(k::AUTH_SESSION_TIMEOUT, 1, 604_800).map(u64::from),
        },
        tags: user_tags(r, k::TAGS, unsupported),
        multi_cluster_target_group: r.bool(k::MULTI_CLUSTER_TARGET_GROUP),
        target_node_labels: r.map(k::TARGET_NODE_LABELS),
        target_control_ports: target_control_ports(r),
        class_target_type: None,
        class_tags: Tags::new(),
    }
}

/// `target-control-port.<service>.<port>: "<1-65535>"`.
fn target_control_ports(r: &mut Reader<'_>) -> BTreeMap<(String, String), u16> {
    let mut out = BTreeMap::new();
    for (key, rest, raw) in r.family(k::TARGET_CONTROL_PORT_PREFIX) {
        let Some((svc, port)) = rest.rsplit_once('.').filter(|(s, p)| !s.is_empty() && !p.is_empty()) else {
            let want = format!("a key of the form {}<service>.<port>", r.key(k::TARGET_CONTROL_PORT_PREFIX));
            r.fail(key.as_str(), raw, want);
            continue;
        };
        match raw.trim().parse::<u16>() {
            Ok(p) if p > 0 => {
                out.insert((svc.to_string(), port.to_string()), p);
            }
            _ => r.fail(key.as_str(), raw, "a port from 1 to 65535"),
        }
    }
    out
}

/// The ALB annotations of a backend Service (only the Ingress,Service-located ones mean anything
/// there; other `alb.ingress.kubernetes.io/*` keys on a Service are reported as unknown).
pub fn parse_service_annotations(
    annotations: &BTreeMap<String, String>,
) -> Result<(BackendSettings, Vec<Unsupported>, Vec<String>), AnnotationErrors> {
    let mut r = Reader::new(annotations, PREFIX);
    let mut unsupported = Vec::new();
    let b = backend(&mut r, &mut unsupported);
    let unknown = r.unknown(|_| true);
    r.finish((b, unsupported, unknown))
}

pub use super::annotation_fields::parse_annotations;

#[cfg(test)]
#[path = "annotations_tests.rs"]
mod tests;
