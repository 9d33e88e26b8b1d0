//! `/mutate-alb-target-control-{namespace,object}-v1-pod` (`alb-target-control.*.elbv2.k8s.aws`):
//! the ALB target control agent sidecar for new pods that ask for it, configured by the
//! ALBTargetControlConfig of their namespace (or the controller's). The decision is
//! [`lbc_model::admission::plan_agent`]; this module finds the inputs in the caches and writes
//! the patch. A pod that asks while the gate is off, or where no configuration exists, is admitted
//! without the agent and the user is told why (the upstream says nothing).

use crate::WebhookState;
use crate::handlers::add;
use crate::review::Decision;
use k8s_openapi::api::core::v1::Pod;
use kube::core::admission::{AdmissionRequest, Operation};
use lbc_model::admission::{
    TARGET_CONTROL_INJECTED_ANNOTATION, agent_wanted, config_namespaces, namespace_opted_in, plan_agent,
};
use lbc_model::crd::TARGET_CONTROL_CONFIG_NAME;
use tracing::info;

/// Which of the two upstream webhooks sent the request: the namespace one (namespace labelled
/// `enabled`) or the object one (pod labelled `true`). Used only when the namespace's labels are
/// not cached: the webhook configuration's selector then stands for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Selected {
    ByNamespace,
    ByObject,
}

const CATEGORY: &str = "alb_target_control";

pub(crate) fn decide(s: &WebhookState, selected: Selected, req: AdmissionRequest<Pod>) -> Decision {
    if req.operation != Operation::Create {
        return Decision::allow();
    }
    let Some(pod) = req.object else { return Decision::invalid("CREATE request without the Pod object") };
    let Some(ns) = req.namespace.as_deref().or(pod.metadata.namespace.as_deref()).filter(|n| !n.is_empty()) else {
        return Decision::invalid("Pod admission request without a namespace");
    };
    let opted_in = match s.cluster().namespace_labels(ns) {
        Some(labels) => namespace_opted_in(&labels),
        None => selected == Selected::ByNamespace,
    };
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    match agent_wanted(&labels, opted_in) {
        Err(message) => return Decision::Deny { message, category: CATEGORY },
        Ok(false) => return Decision::allow(),
        Ok(true) => {}
    }
    if !s.config().target_control_agent {
        return Decision::Allow {
            warnings: vec![format!(
                "this pod asks for the ALB target control agent, but the feature gate ALBTargetControlAgent is off: \
                 admitted without it; set --feature-gates=ALBTargetControlAgent=true (chart: \
                 controllerConfig.featureGates.ALBTargetControlAgent) to inject it"
            )],
        };
    }
    let looked_at = config_namespaces(ns, &s.config().controller_namespace);
    let mut found = None;
    for n in &looked_at {
        match s.cluster().target_control_config(n) {
            Ok(Some(c)) => {
                found = Some((format!("{n}/{TARGET_CONTROL_CONFIG_NAME}"), c));
                break;
            }
            Ok(None) => {}
            Err(e) => {
                return Decision::Fail {
                    message: format!(
                        "cannot decide the ALB target control agent yet: {e}; the pod's creation is retried"
                    ),
                    category: CATEGORY,
                };
            }
        }
    }
    let Some((config_ref, config)) = found else {
        return Decision::Allow {
            warnings: vec![format!(
                "this pod asks for the ALB target control agent, but no ALBTargetControlConfig named {} exists in \
                 namespace {}: admitted without it; create one there",
                TARGET_CONTROL_CONFIG_NAME,
                looked_at.join(", ")
            )],
        };
    };
    let container = match plan_agent(&pod, &config.spec, &config_ref) {
        Err(message) => return Decision::Deny { message, category: CATEGORY },
        Ok(None) => return Decision::allow(),
        Ok(Some(c)) => c,
    };
    let container = match serde_json::to_value(&container) {
        Ok(v) => v,
        Err(e) => {
            return Decision::Fail { message: format!("cannot encode the agent container: {e}"), category: CATEGORY };
        }
    };
    if pod.spec.is_none() {
        return Decision::invalid("the Pod has no spec");
    }
    let mut ops = vec![add(&["spec", "containers", "-"], container)];
    if pod.metadata.annotations.is_some() {
        ops.push(add(&["metadata", "annotations", TARGET_CONTROL_INJECTED_ANNOTATION], "true".into()));
    } else {
        ops.push(add(&["metadata", "annotations"], serde_json::json!({TARGET_CONTROL_INJECTED_ANNOTATION: "true"})));
    }
    let name = pod.metadata.name.as_deref().or(pod.metadata.generate_name.as_deref()).unwrap_or_default();
    info!(namespace = ns, pod = name, config = config_ref, "ALB target control agent given");
    Decision::Patch { ops, warnings: Vec::new() }
}
