//! Pods: which `target-health.elbv2.k8s.aws/<binding>` readiness gates a new pod gets.

use super::{LEGACY_READINESS_GATE_PREFIX, READINESS_GATE_INJECT_ENABLED};
use crate::crd::{TargetGroupBinding, TargetType};
use crate::names::{READINESS_GATE_INJECT_LABEL, readiness_gate_condition};
use k8s_openapi::api::core::v1::{PodReadinessGate, Service};
use std::collections::BTreeMap;

/// Whether a namespace with these labels asks for readiness-gate injection. The webhook
/// configuration's namespaceSelector normally filters already; this is the same rule for
/// callers that know the namespace's labels.
pub fn namespace_injection_enabled(labels: &BTreeMap<String, String>) -> bool {
    labels.get(READINESS_GATE_INJECT_LABEL).map(String::as_str) == Some(READINESS_GATE_INJECT_ENABLED)
}

/// Whether `service` selects a pod with these labels. A Service with an empty or absent
/// selector selects nothing (its endpoints are managed by hand), as in Kubernetes.
pub fn service_selects(service: &Service, pod_labels: &BTreeMap<String, String>) -> bool {
    match service.spec.as_ref().and_then(|s| s.selector.as_ref()) {
        Some(sel) if !sel.is_empty() => sel.iter().all(|(k, v)| pod_labels.get(k) == Some(v)),
        _ => false,
    }
}

/// A TargetGroupBinding of the pod's namespace and the Service it references (if cached).
#[derive(Clone, Copy, Debug)]
pub struct GateBinding<'a> {
    pub binding: &'a TargetGroupBinding,
    pub service: Option<&'a Service>,
}

/// The readiness gates a pod should have after admission.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReadinessGatePlan {
    /// All gates, in order: the pod's own (minus legacy ones), then the added ones.
    pub gates: Vec<PodReadinessGate>,
    /// Condition types added.
    pub added: Vec<String>,
    /// Legacy condition types removed.
    pub removed: Vec<String>,
}

impl ReadinessGatePlan {
    /// Whether the pod must be patched.
    pub fn changed(&self) -> bool {
        !self.added.is_empty() || !self.removed.is_empty()
    }
}

/// Decides the readiness gates of a pod being created in `pod_namespace` with `pod_labels`
/// and `existing` gates: one `target-health.elbv2.k8s.aws/<binding>` gate per ip-type binding
/// of the namespace whose Service selects the pod. Bindings being deleted are skipped (nothing
/// would ever release a gate they left behind). Gates already present are kept once; legacy
/// `target-health.alb.ingress.k8s.aws/` gates are removed. Applying the plan twice changes
/// nothing the second time.
pub fn plan_readiness_gates(
    pod_namespace: &str,
    pod_labels: &BTreeMap<String, String>,
    existing: &[PodReadinessGate],
    bindings: &[GateBinding<'_>],
) -> ReadinessGatePlan {
    let mut plan = ReadinessGatePlan::default();
    for g in existing {
        if g.condition_type.starts_with(LEGACY_READINESS_GATE_PREFIX) {
            plan.removed.push(g.condition_type.clone());
        } else {
            plan.gates.push(g.clone());
        }
    }
    let mut wanted: Vec<String> = bindings
        .iter()
        .filter(|b| gate_applies(pod_namespace, pod_labels, b))
        .filter_map(|b| b.binding.metadata.name.as_deref())
        .map(readiness_gate_condition)
        .collect();
    wanted.sort();
    wanted.dedup();
    for c in wanted {
        if !plan.gates.iter().any(|g| g.condition_type == c) {
            plan.gates.push(PodReadinessGate { condition_type: c.clone() });
            plan.added.push(c);
        }
    }
    plan
}

fn gate_applies(pod_namespace: &str, pod_labels: &BTreeMap<String, String>, b: &GateBinding<'_>) -> bool {
    let tgb = b.binding;
    let same_ns = tgb.metadata.namespace.as_deref().is_none_or(|ns| ns == pod_namespace);
    let service_matches = b.service.is_some_and(|svc| {
        svc.metadata.name.as_deref() == Some(tgb.spec.service_ref.name.as_str())
            && svc.metadata.namespace.as_deref().is_none_or(|ns| ns == pod_namespace)
            && service_selects(svc, pod_labels)
    });
    same_ns
        && tgb.metadata.deletion_timestamp.is_none()
        && tgb.spec.effective_target_type() == TargetType::Ip
        && service_matches
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::fixtures::{ARN, labels};
    use crate::crd::{ServiceReference, TargetGroupBindingSpec};
    use k8s_openapi::api::core::v1::ServiceSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn svc(name: &str, selector: Option<&[(&str, &str)]>) -> Service {
        Service {
            metadata: ObjectMeta { name: Some(name.into()), namespace: Some("shop".into()), ..Default::default() },
            spec: Some(ServiceSpec { selector: selector.map(labels), ..Default::default() }),
            ..Default::default()
        }
    }

    fn tgb(name: &str, service: &str, tt: Option<TargetType>) -> TargetGroupBinding {
        let mut t = TargetGroupBinding::new(
            name,
            TargetGroupBindingSpec {
                target_group_arn: Some(ARN.into()),
                target_type: tt,
                service_ref: ServiceReference { name: service.into(), port: IntOrString::Int(80) },
                ..Default::default()
            },
        );
        t.metadata.namespace = Some("shop".into());
        t
    }

    fn gates(types: &[&str]) -> Vec<PodReadinessGate> {
        types.iter().map(|t| PodReadinessGate { condition_type: t.to_string() }).collect()
    }

    #[test]
    fn namespace_label() {
        assert!(namespace_injection_enabled(&labels(&[(READINESS_GATE_INJECT_LABEL, "enabled")])));
        assert!(!namespace_injection_enabled(&labels(&[(READINESS_GATE_INJECT_LABEL, "disabled")])));
        assert!(!namespace_injection_enabled(&labels(&[])));
    }

    #[test]
    fn readiness_gate_table() {
        let web = svc("web", Some(&[("app", "web")]));
        let web_tier = svc("web-tier", Some(&[("app", "web"), ("tier", "front")]));
        let headless = svc("manual", None);
        let empty_sel = svc("empty", Some(&[]));
        let other_ns =
            Service { metadata: ObjectMeta { namespace: Some("other".into()), ..web.metadata.clone() }, ..web.clone() };
        let mut deleting = tgb("going", "web", Some(TargetType::Ip));
        deleting.metadata.deletion_timestamp = Some(Time(Default::default()));
        let mut elsewhere = tgb("elsewhere", "web", Some(TargetType::Ip));
        elsewhere.metadata.namespace = Some("other".into());
        let ip_web = tgb("web-tg", "web", Some(TargetType::Ip));
        let untyped_web = tgb("untyped", "web", None);
        let inst_web = tgb("inst", "web", Some(TargetType::Instance));
        let ip_tier = tgb("tier-tg", "web-tier", Some(TargetType::Ip));
        let ip_manual = tgb("manual-tg", "manual", Some(TargetType::Ip));
        let ip_empty = tgb("empty-tg", "empty", Some(TargetType::Ip));
        let ip_missing_svc = tgb("nosvc", "gone", Some(TargetType::Ip));
        let g = |b: &'static str| readiness_gate_condition(b);

        struct Case<'a> {
            name: &'a str,
            labels: &'a [(&'a str, &'a str)],
            existing: Vec<PodReadinessGate>,
            bindings: Vec<GateBinding<'a>>,
            added: Vec<String>,
            removed: Vec<&'a str>,
            result: Vec<String>,
        }
        let b = |binding, service| GateBinding { binding, service };
        let cases = vec![
            Case {
                name: "matching ip binding adds its gate",
                labels: &[("app", "web")],
                existing: vec![],
                bindings: vec![b(&ip_web, Some(&web))],
                added: vec![g("web-tg")],
                removed: vec![],
                result: vec![g("web-tg")],
            },
            Case {
                name: "no bindings: no-op",
                labels: &[("app", "web")],
                existing: gates(&["example.com/ready"]),
                bindings: vec![],
                added: vec![],
                removed: vec![],
                result: vec!["example.com/ready".into()],
            },
            Case {
                name: "selector does not match",
                labels: &[("app", "api")],
                existing: vec![],
                bindings: vec![b(&ip_web, Some(&web))],
                added: vec![],
                removed: vec![],
                result: vec![],
            },
            Case {
                name: "selector needs every label",
                labels: &[("app", "web")],
                existing: vec![],
                bindings: vec![b(&ip_tier, Some(&web_tier))],
                added: vec![],
                removed: vec![],
                result: vec![],
            },
            Case {
                name: "superset of the selector matches",
                labels: &[("app", "web"), ("tier", "front"), ("x", "y")],
                existing: vec![],
                bindings: vec![b(&ip_tier, Some(&web_tier)), b(&ip_web, Some(&web))],
                added: vec![g("tier-tg"), g("web-tg")],
                removed: vec![],
                result: vec![g("tier-tg"), g("web-tg")],
            },
            Case {
                name: "absent selector selects nothing",
                labels: &[("app", "web")],
                existing: vec![],
                bindings: vec![b(&ip_manual, Some(&headless))],
                added: vec![],
                removed: vec![],
                result: vec![],
            },
            Case {
                name: "empty selector selects nothing",
                labels: &[],
                existing: vec![],
                bindings: vec![b(&ip_empty, Some(&empty_sel))],
                added: vec![],
                removed: vec![],
                result: vec![],
            },
            Case {
                name: "instance binding gets no gate",
                labels: &[("app", "web")],
                existing: vec![],
                bindings: vec![b(&inst_web, Some(&web))],
                added: vec![],
                removed: vec![],
                result: vec![],
            },
            Case {
                name: "binding without targetType counts as ip, like the controller",
                labels: &[("app", "web")],
                existing: vec![],
                bindings: vec![b(&untyped_web, Some(&web))],
                added: vec![g("untyped")],
                removed: vec![],
                result: vec![g("untyped")],
            },
            Case {
                name: "service not cached: no gate",
                labels: &[("app", "web")],
                existing: vec![],
                bindings: vec![b(&ip_missing_svc, None)],
                added: vec![],
                removed: vec![],
                result: vec![],
            },
            Case {
                name: "service of another name is not the binding's",
                labels: &[("app", "web")],
                existing: vec![],
                bindings: vec![b(&ip_missing_svc, Some(&web))],
                added: vec![],
                removed: vec![],
                result: vec![],
            },
            Case {
                name: "service in another namespace is not the binding's",
                labels: &[("app", "web")],
                existing: vec![],
                bindings: vec![b(&ip_web, Some(&other_ns))],
                added: vec![],
                removed: vec![],
                result: vec![],
            },
            Case {
                name: "binding in another namespace is ignored",
                labels: &[("app", "web")],
                existing: vec![],
                bindings: vec![b(&elsewhere, Some(&web))],
                added: vec![],
                removed: vec![],
                result: vec![],
            },
            Case {
                name: "binding being deleted is skipped",
                labels: &[("app", "web")],
                existing: vec![],
                bindings: vec![b(&deleting, Some(&web))],
                added: vec![],
                removed: vec![],
                result: vec![],
            },
            Case {
                name: "gate already present is not duplicated",
                labels: &[("app", "web")],
                existing: gates(&["target-health.elbv2.k8s.aws/web-tg"]),
                bindings: vec![b(&ip_web, Some(&web))],
                added: vec![],
                removed: vec![],
                result: vec![g("web-tg")],
            },
            Case {
                name: "user gates kept first, ours appended",
                labels: &[("app", "web")],
                existing: gates(&["example.com/warm"]),
                bindings: vec![b(&ip_web, Some(&web))],
                added: vec![g("web-tg")],
                removed: vec![],
                result: vec!["example.com/warm".into(), g("web-tg")],
            },
            Case {
                name: "legacy gates are stripped even with nothing to add",
                labels: &[("app", "api")],
                existing: gates(&["target-health.alb.ingress.k8s.aws/shop_web_80", "example.com/warm"]),
                bindings: vec![b(&ip_web, Some(&web))],
                added: vec![],
                removed: vec!["target-health.alb.ingress.k8s.aws/shop_web_80"],
                result: vec!["example.com/warm".into()],
            },
            Case {
                name: "legacy stripped and new added",
                labels: &[("app", "web")],
                existing: gates(&["target-health.alb.ingress.k8s.aws/x"]),
                bindings: vec![b(&ip_web, Some(&web))],
                added: vec![g("web-tg")],
                removed: vec!["target-health.alb.ingress.k8s.aws/x"],
                result: vec![g("web-tg")],
            },
            Case {
                name: "added gates sorted and deduplicated",
                labels: &[("app", "web"), ("tier", "front")],
                existing: vec![],
                bindings: vec![b(&ip_web, Some(&web)), b(&ip_tier, Some(&web_tier)), b(&ip_web, Some(&web))],
                added: vec![g("tier-tg"), g("web-tg")],
                removed: vec![],
                result: vec![g("tier-tg"), g("web-tg")],
            },
        ];
        for c in cases {
            let plan = plan_readiness_gates("shop", &labels(c.labels), &c.existing, &c.bindings);
            assert_eq!(plan.added, c.added, "{}: added", c.name);
            assert_eq!(plan.removed, c.removed, "{}: removed", c.name);
            let result: Vec<String> = plan.gates.iter().map(|g| g.condition_type.clone()).collect();
            assert_eq!(result, c.result, "{}: gates", c.name);
            assert_eq!(plan.changed(), !c.added.is_empty() || !c.removed.is_empty(), "{}: changed", c.name);
            // Idempotent: planning again on the result changes nothing.
            let again = plan_readiness_gates("shop", &labels(c.labels), &plan.gates, &c.bindings);
            assert!(!again.changed(), "{}: second pass changed {again:?}", c.name);
            assert_eq!(again.gates, plan.gates, "{}: second pass gates", c.name);
        }
    }
}
