//! Admission decisions: what the webhooks add to an object and what they refuse, as pure
//! functions over the object and cached cluster state. The `lbc-webhook` crate does the I/O
//! (decoding AdmissionReviews, looking target groups up in AWS) and turns these decisions into
//! JSON patches and denials.
//!
//! - Pods: which `target-health.elbv2.k8s.aws/<binding>` readiness gates a new pod gets
//!   ([`plan_readiness_gates`]).
//! - Pods: the ALB target control agent sidecar ([`plan_agent`]).
//! - Services: the default `spec.loadBalancerClass` ([`default_load_balancer_class`]).
//! - TargetGroupBindings: defaults from the target group ([`tgb_lookup`], [`tgb_defaults`]) and
//!   validation ([`validate_tgb_spec`], [`validate_tgb_update`], [`validate_tgb_unique`],
//!   [`validate_tgb_against_target_group`]).
//! - Ingresses and IngressClassParams: [`validate_ingress`], [`validate_ingress_class_params`].
//!
//! Every denial is a [`Violation`] whose message says what is wrong, the value seen, what is
//! expected and what to change, because the person reading it only sees `kubectl`'s output.

mod ingresses;
mod pods;
mod quic;
mod services;
mod target_control;
mod tgb_defaults;
mod tgb_tenancy;
mod tgb_validation;

pub use ingresses::{Verdict, validate_ingress, validate_ingress_class_params};
pub use pods::{GateBinding, ReadinessGatePlan, namespace_injection_enabled, plan_readiness_gates, service_selects};
pub use quic::{
    EPOCH_MS as QUIC_EPOCH_MS, MAX_WORKER_ID as QUIC_MAX_WORKER_ID, Minted, QUIC_INJECT_LABEL, QuicIdMinter, QuicSlot,
    WORKER_ID_CONFIG_MAP, WORKER_ID_KEY, WORKER_ID_NAMESPACE, next_worker_id, parse_worker_id, plan_quic_injection,
    unknown_quic_containers,
};
pub use services::default_load_balancer_class;
pub use target_control::{
    AGENT_CONTAINER, INJECT_LABEL as TARGET_CONTROL_INJECT_LABEL,
    INJECTED_ANNOTATION as TARGET_CONTROL_INJECTED_ANNOTATION, NAMESPACE_LABEL as TARGET_CONTROL_NAMESPACE_LABEL,
    agent_wanted, config_namespaces, namespace_opted_in, plan_agent,
};
pub use tgb_defaults::{
    SpecDefault, TargetGroupFacts, TargetGroupLookup, apply_defaults, parse_ip_address_type, parse_protocol,
    parse_target_type, tgb_defaults, tgb_lookup,
};
pub use tgb_tenancy::tenancy_violations;
pub use tgb_validation::{
    is_target_group_arn, not_our_target_group, target_group_fields_changed, target_group_not_found,
    validate_tgb_against_target_group, validate_tgb_spec, validate_tgb_unique, validate_tgb_update,
};

use std::fmt;

/// Prefix of the readiness gates of the v1 ALB ingress controller. Nothing sets those
/// conditions any more, so a pod carrying one would never become Ready: the pod mutator
/// strips them, as ALBC does.
pub const LEGACY_READINESS_GATE_PREFIX: &str = "target-health.alb.ingress.k8s.aws/";

/// `spec.loadBalancerClass` the Service mutator sets by default (ALBC's `--load-balancer-class`).
pub const DEFAULT_LOAD_BALANCER_CLASS: &str = "service.k8s.aws/nlb";

/// Value of [`READINESS_GATE_INJECT_LABEL`](crate::names::READINESS_GATE_INJECT_LABEL) that turns injection on.
pub const READINESS_GATE_INJECT_ENABLED: &str = "enabled";

/// The admission operations our webhooks act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdmissionOp {
    Create,
    Update,
}

/// One reason to refuse an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The offending field (`spec.targetType`), for tests and logs.
    pub field: &'static str,
    /// Short label for the `error_category` of the failure metrics.
    pub category: &'static str,
    /// What is wrong, the value seen, what is expected and what to change.
    pub message: String,
}

impl Violation {
    pub fn new(field: &'static str, category: &'static str, message: impl Into<String>) -> Self {
        Self { field, category, message: message.into() }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// All violations as one message for the AdmissionResponse (numbered when several).
pub fn denial_message(violations: &[Violation]) -> String {
    match violations {
        [] => String::new(),
        [one] => one.message.clone(),
        many => {
            many.iter().enumerate().map(|(i, v)| format!("({}) {}", i + 1, v.message)).collect::<Vec<_>>().join("; ")
        }
    }
}

/// Objects the tests of several admission files build.
#[cfg(test)]
mod fixtures {
    use super::TargetGroupFacts;
    use crate::crd::{
        ServiceReference, TargetGroupBindingSpec, TargetGroupIpAddressType, TargetGroupProtocol, TargetType,
    };
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    use std::collections::BTreeMap;

    pub(super) const ARN: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/web/0123456789abcdef";

    pub(super) fn labels(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    pub(super) fn facts() -> TargetGroupFacts {
        TargetGroupFacts {
            arn: ARN.into(),
            name: "web".into(),
            target_type: "ip".into(),
            protocol: Some("TCP".into()),
            vpc_id: Some("vpc-0abc".into()),
            ip_address_type: Some("ipv4".into()),
        }
    }

    pub(super) fn spec() -> TargetGroupBindingSpec {
        TargetGroupBindingSpec {
            target_group_arn: Some(ARN.into()),
            service_ref: ServiceReference { name: "web".into(), port: IntOrString::Int(80) },
            ..Default::default()
        }
    }

    pub(super) fn full_spec() -> TargetGroupBindingSpec {
        TargetGroupBindingSpec {
            target_type: Some(TargetType::Ip),
            ip_address_type: Some(TargetGroupIpAddressType::Ipv4),
            vpc_id: Some("vpc-0abc".into()),
            target_group_protocol: Some(TargetGroupProtocol::TCP),
            ..spec()
        }
    }
}
