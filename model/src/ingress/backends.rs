//! One Ingress backend → the action of its rule (ALBC `pkg/ingress/enhanced_backend_builder.go`,
//! `auth_config_builder.go`, `model_build_actions.go`).
//!
//! - Port name `use-annotation`: the action is `actions.<service name>`. A missing annotation is
//!   not an error in ALBC: the rule answers a fixed 503 "Backend action does not exist". Same here,
//!   plus a warning naming the Ingress, the path and the annotation to add.
//! - Otherwise: forward to (Service, port name or number). A forward to one Service that does not
//!   exist becomes a fixed 503 "Backend service does not exist" (ALBC tolerates it; we warn). A
//!   missing Service among several weighted targets, or a port the Service does not have, fails the
//!   group (ALBC `LookupServicePort`).
//! - Authentication: the `auth-*` settings of the Ingress, overridden by those of the Service when
//!   the action forwards to exactly one Service; the authenticate action precedes the backend
//!   action on HTTPS listeners only. `auth-type` oidc/cognito without its IdP annotation fails the
//!   group when an HTTPS listener needs it.
//! - JWT validation: the Ingress's `jwt-validation` (not the Service's, as in ALBC) precedes the
//!   backend action on HTTPS listeners only; with authentication on the same rule it fails the
//!   group, as in ALBC.
//! - `conditions.<service name>` adds conditions to the rule (see [`super::rules`]).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::IngressBackend;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::actions::{AuthAction, BackendRef, ForwardTarget, RuleAction, ServicePort, WeightedTarget};
use super::annotations::{AuthSettings, AuthType, BackendSettings};
use super::keys::{self as k, full_key};
use super::merge::{GroupError, Member};

/// The ports and ALB annotations of a backend Service, as the controller's cache holds them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceView {
    /// `spec.ports[]` as (name, port).
    pub ports: Vec<(Option<String>, i32)>,
    /// `parse_service_annotations` of the Service.
    pub settings: BackendSettings,
    /// `metadata.uid` (hashed into target group names).
    pub uid: String,
    /// `spec.ports[].targetPort` by `spec.ports[].port` (absent: the port itself).
    pub target_ports: BTreeMap<i32, IntOrString>,
    /// `spec.ipFamilies` includes IPv6 (an Ingress's target group's addresses are IPv6, as ALBC decides).
    pub ipv6: bool,
    /// `spec.ipFamilies` lists IPv6 only (no IPv4 endpoints to register on an IPv4 load balancer).
    pub ipv6_only: bool,
    /// `spec.ports[].nodePort` by `spec.ports[].port` (instance targets are registered there).
    pub node_ports: BTreeMap<i32, u16>,
}

impl ServiceView {
    pub fn from_service(svc: &Service, settings: BackendSettings) -> Self {
        let all = || svc.spec.iter().flat_map(|s| s.ports.iter().flatten());
        let ports = all().map(|p| (p.name.clone(), p.port)).collect();
        let target_ports = all().filter_map(|p| p.target_port.clone().map(|t| (p.port, t))).collect();
        let families: Vec<&String> = svc.spec.iter().flat_map(|s| s.ip_families.iter().flatten()).collect();
        let ipv6 = families.iter().any(|f| *f == "IPv6");
        let ipv6_only = ipv6 && !families.iter().any(|f| *f == "IPv4");
        let node_ports = all().filter_map(|p| crate::nodes::node_port(p).map(|np| (p.port, np))).collect();
        let uid = svc.metadata.uid.clone().unwrap_or_default();
        Self { ports, settings, uid, target_ports, ipv6, ipv6_only, node_ports }
    }

    /// The Service port (number) a backend port names, if the Service has it.
    pub fn port_number(&self, port: &ServicePort) -> Option<i32> {
        self.ports
            .iter()
            .find(|(name, number)| match port {
                ServicePort::Number(n) => number == n,
                ServicePort::Name(s) => name.as_deref() == Some(s.as_str()),
            })
            .map(|(_, n)| *n)
    }

    /// The targetPort of Service port `number` (the port itself when unset).
    pub fn target_port(&self, number: i32) -> IntOrString {
        self.target_ports.get(&number).cloned().unwrap_or(IntOrString::Int(number))
    }

    fn has(&self, port: &ServicePort) -> bool {
        self.ports.iter().any(|(name, number)| match port {
            ServicePort::Number(n) => number == n,
            ServicePort::Name(s) => name.as_deref() == Some(s.as_str()),
        })
    }

    fn port_list(&self) -> String {
        let list: Vec<String> =
            self.ports.iter().map(|(n, p)| n.as_ref().map_or(p.to_string(), |n| format!("{n} ({p})"))).collect();
        if list.is_empty() { "none".into() } else { list.join(", ") }
    }
}

/// Backend Services by (namespace, name).
pub type Services = BTreeMap<(String, String), ServiceView>;

/// A backend with its action, the name its `conditions.<name>` go by, and its auth settings.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Resolved {
    pub name: String,
    pub action: RuleAction,
    /// The action that guards the backend on HTTPS listeners (authenticate or JWT validation).
    /// `None`: none; `Some(Err)`: asked for but not configured, or both asked for.
    pub auth: Option<Result<RuleAction, GroupError>>,
}

pub(super) const SERVICE_MISSING: &str = "Backend service does not exist";
pub(super) const ACTION_MISSING: &str = "Backend action does not exist";

fn fixed_503(body: &str) -> RuleAction {
    RuleAction::FixedResponse {
        status_code: "503".into(),
        content_type: Some("text/plain".into()),
        message_body: Some(body.into()),
    }
}

fn port_text(p: &ServicePort) -> String {
    match p {
        ServicePort::Number(n) => n.to_string(),
        ServicePort::Name(s) => format!("{s:?}"),
    }
}

/// Resolves `backend` of member `m` found at `location` (e.g. `rule host "a" path "/x"`).
pub(super) fn resolve(
    m: &Member,
    backend: &IngressBackend,
    location: &str,
    services: &Services,
    cfg: &super::merge::MergeConfig,
    warnings: &mut Vec<String>,
) -> Result<Resolved, GroupError> {
    let invalid = |problem: String, fix: &str| GroupError::Invalid {
        ingress: m.key.to_string(),
        location: location.to_string(),
        problem,
        fix: fix.to_string(),
    };
    let svc = backend.service.as_ref().ok_or_else(|| {
        invalid("the backend names no Service".into(), "set backend.service (resource backends are not supported)")
    })?;
    let port = svc.port.as_ref();
    let by_name = port.and_then(|p| p.name.clone()).filter(|n| !n.is_empty());
    let ns = &m.key.namespace;
    let mut action = if by_name.as_deref() == Some(k::USE_ANNOTATION) {
        match m.settings.actions.get(&svc.name) {
            Some(a) => a.clone(),
            None if !cfg.tolerate_missing_action => {
                return Err(invalid(
                    format!(
                        "backend port use-annotation but annotation {} is missing",
                        full_key(&format!("{}{}", k::ACTIONS_PREFIX, svc.name))
                    ),
                    "add the annotation (the controller runs with --tolerate-non-existent-backend-action=false)",
                ));
            }
            None => {
                warnings.push(format!(
                    "Ingress {}, {location}: backend port use-annotation but annotation {} is missing; the ALB answers 503 until it is added",
                    m.key,
                    full_key(&format!("{}{}", k::ACTIONS_PREFIX, svc.name))
                ));
                fixed_503(ACTION_MISSING)
            }
        }
    } else {
        let port = match (by_name, port.and_then(|p| p.number)) {
            (Some(n), _) => ServicePort::Name(n),
            (None, Some(n)) => ServicePort::Number(n),
            (None, None) => {
                return Err(invalid(
                    format!("backend Service {} has no port", svc.name),
                    "set backend.service.port.number or .name",
                ));
            }
        };
        let target = ForwardTarget::Service(BackendRef { namespace: ns.clone(), service: svc.name.clone(), port });
        RuleAction::Forward { target_groups: vec![WeightedTarget { target, weight: None }], stickiness_seconds: None }
    };
    // Check the Services the action forwards to.
    let mut single_service = None;
    if let RuleAction::Forward { target_groups, .. } = &action {
        let single = target_groups.len() == 1;
        for t in target_groups {
            let ForwardTarget::Service(b) = &t.target else { continue };
            match services.get(&(b.namespace.clone(), b.service.clone())) {
                None if single && !cfg.tolerate_missing_service => {
                    return Err(invalid(
                        format!("Service {}/{} does not exist", b.namespace, b.service),
                        "create it, or change the backend (the controller runs with \
                         --tolerate-non-existent-backend-service=false)",
                    ));
                }
                None if single => {
                    warnings.push(format!(
                        "Ingress {}, {location}: Service {}/{} does not exist; the ALB answers 503 until it does",
                        m.key, b.namespace, b.service
                    ));
                }
                None => {
                    return Err(invalid(
                        format!("Service {}/{} does not exist", b.namespace, b.service),
                        "create it or remove it from the forward action",
                    ));
                }
                Some(view) if !view.has(&b.port) => {
                    return Err(invalid(
                        format!("Service {}/{} has no port {}", b.namespace, b.service, port_text(&b.port)),
                        &format!("use one of its ports: {}", view.port_list()),
                    ));
                }
                Some(view) => {
                    if single {
                        single_service = Some(view);
                    }
                }
            }
        }
        let missing_single =
            single && single_service.is_none() && matches!(target_groups[0].target, ForwardTarget::Service(_));
        if missing_single {
            action = fixed_503(SERVICE_MISSING);
        }
    }
    let auth = match single_service {
        Some(view) => m.settings.backend.overridden_by(&view.settings).auth,
        None => m.settings.backend.auth.clone(),
    };
    let auth = auth_action(&auth).map(|r| r.map_err(|(problem, fix)| invalid(problem, &fix)));
    let jwt = m.settings.jwt_validation.clone().map(RuleAction::JwtValidation);
    let auth = match (auth, jwt) {
        (Some(Ok(_)), Some(_)) => Some(Err(invalid(
            format!("authentication (auth-type) and {} cannot both be configured", full_key(k::JWT_VALIDATION)),
            &format!(
                "remove {} or set {} none on this Ingress and its backend Services",
                full_key(k::JWT_VALIDATION),
                full_key(k::AUTH_TYPE)
            ),
        ))),
        (None, jwt) => jwt.map(Ok),
        (auth, _) => auth,
    };
    Ok(Resolved { name: svc.name.clone(), action, auth })
}

/// The authenticate action of `auth`, with ALBC's defaults; `Err` names what is missing.
fn auth_action(a: &AuthSettings) -> Option<Result<RuleAction, (String, String)>> {
    /// The action for one IdP kind, or what is missing when its annotation is absent.
    fn with<T: Clone>(
        a: &AuthSettings,
        idp: &Option<T>,
        kind: &str,
        key: &str,
        wrap: fn(AuthAction<T>) -> RuleAction,
    ) -> Result<RuleAction, (String, String)> {
        let Some(idp) = idp else {
            return Err((
                format!("auth-type is {kind} but {} is not set", full_key(key)),
                format!("add {} or set auth-type none", full_key(key)),
            ));
        };
        Ok(wrap(AuthAction {
            idp: idp.clone(),
            on_unauthenticated_request: a.on_unauthenticated_request.clone().unwrap_or_else(|| "authenticate".into()),
            scope: a.scope.clone().unwrap_or_else(|| "openid".into()),
            session_cookie: a.session_cookie.clone().unwrap_or_else(|| "AWSELBAuthSessionCookie".into()),
            session_timeout_seconds: a.session_timeout_seconds.unwrap_or(604_800),
        }))
    }
    match a.auth_type? {
        AuthType::None => None,
        AuthType::Oidc => Some(with(a, &a.oidc, "oidc", k::AUTH_IDP_OIDC, RuleAction::AuthenticateOidc)),
        AuthType::Cognito => Some(with(a, &a.cognito, "cognito", k::AUTH_IDP_COGNITO, RuleAction::AuthenticateCognito)),
    }
}
