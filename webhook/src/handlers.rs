//! The admission webhooks, on ALBC's paths so ALBC's webhook configurations (and Helm
//! values) point at them unchanged.

use crate::WebhookState;
use crate::review::{self, Answer, Decision, Expect};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::routing::{get, post};
use axum::{Json, response::IntoResponse};
use futures::FutureExt;
use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation};
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::networking::v1::Ingress;
use kube::core::DynamicObject;
use kube::core::Resource;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use lbc_aws::elbv2::TargetGroupInfo;
use lbc_aws::error::ErrorKind;
use lbc_model::admission::{
    AdmissionOp, GateBinding, TargetGroupFacts, TargetGroupLookup, Violation, default_load_balancer_class,
    denial_message, namespace_injection_enabled, not_our_target_group, plan_readiness_gates,
    target_group_fields_changed, target_group_not_found, tenancy_violations, tgb_defaults, tgb_lookup,
    validate_ingress, validate_ingress_class_params, validate_tgb_against_target_group, validate_tgb_spec,
    validate_tgb_unique, validate_tgb_update,
};
use lbc_model::crd::{IngressClassParams, TargetGroupBinding, TargetGroupBindingSpec};
use lbc_model::tg_ownership::{foreign_stack_labels, target_group_access};
use serde::de::DeserializeOwned;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;
use tracing::{debug, info, warn};

/// Pod mutator: readiness-gate injection (`mpod.elbv2.k8s.aws`).
pub const PATH_MUTATE_POD: &str = "/mutate-v1-pod";
/// Pod mutator: QUIC server IDs (`quicid.elbv2.k8s.aws`).
pub const PATH_MUTATE_POD_SERVER_ID: &str = "/mutate-v1-pod-server-id";
/// Pod mutator: the ALB target control agent, namespaces labelled
/// `elbv2.k8s.aws/alb-target-control-agent-injection=enabled` (`alb-target-control.namespace.elbv2.k8s.aws`).
pub const PATH_MUTATE_POD_TARGET_CONTROL_NAMESPACE: &str = "/mutate-alb-target-control-namespace-v1-pod";
/// Pod mutator: the ALB target control agent, pods labelled
/// `elbv2.k8s.aws/alb-target-control-agent-inject=true` (`alb-target-control.object.elbv2.k8s.aws`).
pub const PATH_MUTATE_POD_TARGET_CONTROL_OBJECT: &str = "/mutate-alb-target-control-object-v1-pod";
/// Service mutator: default `spec.loadBalancerClass` (`mservice.elbv2.k8s.aws`).
pub const PATH_MUTATE_SERVICE: &str = "/mutate-v1-service";
/// TargetGroupBinding mutator: defaults from the target group (`mtargetgroupbinding.elbv2.k8s.aws`).
pub const PATH_MUTATE_TGB: &str = "/mutate-elbv2-k8s-aws-v1beta1-targetgroupbinding";
/// TargetGroupBinding validator (`vtargetgroupbinding.elbv2.k8s.aws`).
pub const PATH_VALIDATE_TGB: &str = "/validate-elbv2-k8s-aws-v1beta1-targetgroupbinding";
/// Ingress validator (`vingress.elbv2.k8s.aws`).
pub const PATH_VALIDATE_INGRESS: &str = "/validate-networking-v1-ingress";
/// IngressClassParams validator (`vingressclassparams.elbv2.k8s.aws`).
pub const PATH_VALIDATE_INGRESS_CLASS_PARAMS: &str = "/validate-elbv2-k8s-aws-v1beta1-ingressclassparams";

/// Largest request body accepted: an AdmissionReview carries the object and, on UPDATE, the
/// old object too; etcd's limit is 1.5 MiB per object.
const MAX_BODY: usize = 8 * 1024 * 1024;

#[derive(Clone, Copy, Debug)]
enum Hook {
    Pod,
    PodServerId,
    TargetControlNamespace,
    TargetControlObject,
    Service,
    TgbMutate,
    TgbValidate,
    Ingress,
    IngressClassParams,
}

impl Hook {
    fn name(self) -> &'static str {
        match self {
            Hook::Pod => "mpod.elbv2.k8s.aws",
            Hook::PodServerId => "quicid.elbv2.k8s.aws",
            Hook::TargetControlNamespace => "alb-target-control.namespace.elbv2.k8s.aws",
            Hook::TargetControlObject => "alb-target-control.object.elbv2.k8s.aws",
            Hook::Service => "mservice.elbv2.k8s.aws",
            Hook::TgbMutate => "mtargetgroupbinding.elbv2.k8s.aws",
            Hook::TgbValidate => "vtargetgroupbinding.elbv2.k8s.aws",
            Hook::Ingress => "vingress.elbv2.k8s.aws",
            Hook::IngressClassParams => "vingressclassparams.elbv2.k8s.aws",
        }
    }

    /// The path it is served at (controller-runtime's `webhook` label).
    fn path(self) -> &'static str {
        match self {
            Hook::Pod => PATH_MUTATE_POD,
            Hook::PodServerId => PATH_MUTATE_POD_SERVER_ID,
            Hook::TargetControlNamespace => PATH_MUTATE_POD_TARGET_CONTROL_NAMESPACE,
            Hook::TargetControlObject => PATH_MUTATE_POD_TARGET_CONTROL_OBJECT,
            Hook::Service => PATH_MUTATE_SERVICE,
            Hook::TgbMutate => PATH_MUTATE_TGB,
            Hook::TgbValidate => PATH_VALIDATE_TGB,
            Hook::Ingress => PATH_VALIDATE_INGRESS,
            Hook::IngressClassParams => PATH_VALIDATE_INGRESS_CLASS_PARAMS,
        }
    }

    fn mutating(self) -> bool {
        !matches!(self, Hook::TgbValidate | Hook::Ingress | Hook::IngressClassParams)
    }

    fn expect(self) -> Expect {
        match self {
            Hook::Pod | Hook::PodServerId | Hook::TargetControlNamespace | Hook::TargetControlObject => {
                Expect { group: "", kind: "Pod" }
            }
            Hook::Service => Expect { group: "", kind: "Service" },
            Hook::TgbMutate | Hook::TgbValidate => Expect { group: "elbv2.k8s.aws", kind: "TargetGroupBinding" },
            Hook::Ingress => Expect { group: "networking.k8s.io", kind: "Ingress" },
            Hook::IngressClassParams => Expect { group: "elbv2.k8s.aws", kind: "IngressClassParams" },
        }
    }
}

/// The webhook routes (plus `GET /healthz`), ready to be served by [`crate::serve`].
pub fn router(state: Arc<WebhookState>) -> Router {
    Router::new()
        .route(PATH_MUTATE_POD, post(mutate_pod))
        .route(PATH_MUTATE_POD_SERVER_ID, post(mutate_pod_server_id))
        .route(PATH_MUTATE_POD_TARGET_CONTROL_NAMESPACE, post(mutate_pod_target_control_namespace))
        .route(PATH_MUTATE_POD_TARGET_CONTROL_OBJECT, post(mutate_pod_target_control_object))
        .route(PATH_MUTATE_SERVICE, post(mutate_service))
        .route(PATH_MUTATE_TGB, post(mutate_tgb))
        .route(PATH_VALIDATE_TGB, post(validate_tgb))
        .route(PATH_VALIDATE_INGRESS, post(validate_ingress_hook))
        .route(PATH_VALIDATE_INGRESS_CLASS_PARAMS, post(validate_ingress_class_params_hook))
        .route("/healthz", get(|| async { "ok" }))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(state)
}

async fn run<K, F, Fut>(
    state: &WebhookState,
    hook: Hook,
    body: &[u8],
    decide: F,
) -> Json<AdmissionReview<DynamicObject>>
where
    K: Resource + DeserializeOwned,
    F: FnOnce(AdmissionRequest<K>) -> Fut,
    Fut: Future<Output = Decision>,
{
    let start = Instant::now();
    let _in_flight = state.metrics().path_in_flight(hook.path());
    let answer = match review::decode::<K>(body, &hook.expect()) {
        Err(a) => {
            warn!(webhook = hook.name(), reason = %a.response.result.message, "malformed admission request");
            *a
        }
        Ok(req) => {
            let key = (req.uid.clone(), req.namespace.clone(), req.name.clone());
            let base = AdmissionResponse::from(&req);
            // A handler that panics is answered with an error and counted, as controller-runtime
            // does, instead of dropping the API server's connection.
            let decision = match std::panic::AssertUnwindSafe(decide(req)).catch_unwind().await {
                Ok(d) => d,
                Err(panic) => {
                    state.metrics().panics.inc();
                    let what = panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    tracing::error!(webhook = hook.name(), panic = %what, "admission handler panicked");
                    let message = format!("the {} webhook failed: {what}", hook.name());
                    Decision::Fail { message, category: "panic" }
                }
            };
            let a: Answer = review::answer(base, decision);
            match a.outcome {
                "denied" | "error" => info!(
                    webhook = hook.name(),
                    uid = %key.0,
                    namespace = key.1.as_deref().unwrap_or_default(),
                    name = %key.2,
                    outcome = a.outcome,
                    message = %a.response.result.message,
                    "admission refused"
                ),
                _ => debug!(webhook = hook.name(), uid = %key.0, outcome = a.outcome, "admission answered"),
            }
            a
        }
    };
    state.metrics().observe(hook.name(), hook.path(), hook.mutating(), answer.outcome, answer.failure, start.elapsed());
    Json(review::review(answer.response))
}

pub(crate) fn add(path: &[&str], value: serde_json::Value) -> PatchOperation {
    PatchOperation::Add(AddOperation { path: PointerBuf::from_tokens(path.iter().copied()), value })
}

fn admission_op(op: &Operation) -> Option<AdmissionOp> {
    match op {
        Operation::Create => Some(AdmissionOp::Create),
        Operation::Update => Some(AdmissionOp::Update),
        _ => None,
    }
}

// ----------------------------------------------------------------------------------------------
// Pods
// ----------------------------------------------------------------------------------------------

async fn mutate_pod(State(s): State<Arc<WebhookState>>, body: Bytes) -> impl IntoResponse {
    run(&s, Hook::Pod, &body, |req: AdmissionRequest<Pod>| async { pod_decision(&s, req) }).await
}

async fn mutate_pod_target_control_namespace(State(s): State<Arc<WebhookState>>, body: Bytes) -> impl IntoResponse {
    run(&s, Hook::TargetControlNamespace, &body, |req: AdmissionRequest<Pod>| async {
        crate::target_control::decide(&s, crate::target_control::Selected::ByNamespace, req)
    })
    .await
}

async fn mutate_pod_target_control_object(State(s): State<Arc<WebhookState>>, body: Bytes) -> impl IntoResponse {
    run(&s, Hook::TargetControlObject, &body, |req: AdmissionRequest<Pod>| async {
        crate::target_control::decide(&s, crate::target_control::Selected::ByObject, req)
    })
    .await
}

async fn mutate_pod_server_id(State(s): State<Arc<WebhookState>>, body: Bytes) -> impl IntoResponse {
    run(&s, Hook::PodServerId, &body, |req: AdmissionRequest<Pod>| async {
        match s.quic() {
            Some(q) => q.decide(req).await,
            // Served only where the controller gave the webhook a worker-ID source.
            None => Decision::Fail {
                message: "QUIC server-ID injection is not configured in this process".into(),
                category: "quic_server_id",
            },
        }
    })
    .await
}

fn pod_decision(s: &WebhookState, req: AdmissionRequest<Pod>) -> Decision {
    if !s.config().pod_readiness_gate_inject || req.operation != Operation::Create {
        return Decision::allow();
    }
    let Some(pod) = req.object else { return Decision::invalid("CREATE request without the Pod object") };
    let Some(ns) = req.namespace.as_deref().or(pod.metadata.namespace.as_deref()).filter(|n| !n.is_empty()) else {
        return Decision::invalid("Pod admission request without a namespace");
    };
    if let Some(labels) = s.cluster().namespace_labels(ns)
        && !namespace_injection_enabled(&labels)
    {
        return Decision::allow();
    }
    if !s.cluster().synced() {
        debug!(namespace = ns, "caches not synced yet: pod admitted without readiness gates");
        return Decision::allow();
    }
    let bindings = s.cluster().bindings_in(ns);
    if bindings.is_empty() && !has_legacy_gate(&pod) {
        return Decision::allow();
    }
    let services: Vec<_> = bindings.iter().map(|b| s.cluster().service(ns, &b.spec.service_ref.name)).collect();
    let gate_bindings: Vec<GateBinding<'_>> = bindings
        .iter()
        .zip(&services)
        .map(|(b, svc)| GateBinding { binding: b.as_ref(), service: svc.as_deref() })
        .collect();
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    let existing = pod.spec.as_ref().and_then(|sp| sp.readiness_gates.clone()).unwrap_or_default();
    let plan = plan_readiness_gates(ns, &labels, &existing, &gate_bindings);
    if !plan.changed() {
        return Decision::allow();
    }
    if pod.spec.is_none() {
        return Decision::invalid("the Pod has no spec");
    }
    let name = pod.metadata.name.as_deref().or(pod.metadata.generate_name.as_deref()).unwrap_or_default();
    info!(namespace = ns, pod = name, added = ?plan.added, removed = ?plan.removed, "setting pod readiness gates");
    match serde_json::to_value(&plan.gates) {
        Ok(v) => Decision::Patch { ops: vec![add(&["spec", "readinessGates"], v)], warnings: Vec::new() },
        Err(e) => Decision::Fail { message: format!("cannot encode readiness gates: {e}"), category: "patch_encoding" },
    }
}

fn has_legacy_gate(pod: &Pod) -> bool {
    pod.spec.as_ref().and_then(|s| s.readiness_gates.as_ref()).is_some_and(|gs| {
        gs.iter().any(|g| g.condition_type.starts_with(lbc_model::admission::LEGACY_READINESS_GATE_PREFIX))
    })
}

// ----------------------------------------------------------------------------------------------
// Services
// ----------------------------------------------------------------------------------------------

async fn mutate_service(State(s): State<Arc<WebhookState>>, body: Bytes) -> impl IntoResponse {
    run(&s, Hook::Service, &body, |req: AdmissionRequest<Service>| async { service_decision(&s, req) }).await
}

fn service_decision(s: &WebhookState, req: AdmissionRequest<Service>) -> Decision {
    if !s.config().service_mutator {
        return Decision::allow();
    }
    let Some(op) = admission_op(&req.operation) else { return Decision::allow() };
    let Some(new) = req.object.as_ref() else {
        return Decision::invalid("Service admission request without the object");
    };
    match default_load_balancer_class(op, new, req.old_object.as_ref(), &s.config().load_balancer_class) {
        None => Decision::allow(),
        Some(class) => {
            debug!(namespace = ?req.namespace, name = %req.name, class = %class, "setting spec.loadBalancerClass");
            Decision::Patch { ops: vec![add(&["spec", "loadBalancerClass"], class.into())], warnings: Vec::new() }
        }
    }
}

// ----------------------------------------------------------------------------------------------
// TargetGroupBindings
// ----------------------------------------------------------------------------------------------

fn facts(i: TargetGroupInfo) -> TargetGroupFacts {
    TargetGroupFacts {
        arn: i.arn,
        name: i.name,
        target_type: i.target_type,
        protocol: i.protocol,
        vpc_id: i.vpc_id,
        ip_address_type: i.ip_address_type,
    }
}

/// Describes the target group; `Ok(None)` when AWS says it does not exist.
async fn describe(
    s: &WebhookState,
    spec: &TargetGroupBindingSpec,
    lookup: &TargetGroupLookup,
) -> Result<Option<TargetGroupFacts>, Decision> {
    let elbv2 = s.elbv2(spec);
    let (what, call) = match lookup {
        TargetGroupLookup::None => return Ok(None),
        TargetGroupLookup::ByArn(arn) => (arn.as_str(), elbv2.describe_target_group(arn)),
        TargetGroupLookup::ByName(name) => (name.as_str(), elbv2.describe_target_group_by_name(name)),
    };
    let timeout = s.config().aws_timeout;
    match tokio::time::timeout(timeout, call).await {
        Err(_) => Err(Decision::Fail {
            message: format!(
                "AWS did not answer DescribeTargetGroups for {what} within {timeout:?}, so the TargetGroupBinding could \
                 not be checked against its target group. Retry; if it persists, check the controller's AWS \
                 connectivity and credentials (controller logs, metric aws_api_calls_total)."
            ),
            category: "aws_timeout",
        }),
        Ok(Err(e)) if e.kind == ErrorKind::NotFound => Ok(None),
        Ok(Err(e)) => Err(Decision::Fail {
            message: format!(
                "could not describe target group {what} in AWS: {e}. The TargetGroupBinding could not be checked \
                 against its target group; retry once AWS answers."
            ),
            category: "aws_error",
        }),
        Ok(Ok(info)) => Ok(info.map(facts)),
    }
}

/// Whether the target group belongs to another cluster or stack, or is not granted by the strict
/// tenancy mode (one DescribeTags call).
async fn owner_violation(s: &WebhookState, tgb: &TargetGroupBinding, arn: &str) -> Result<Option<Violation>, Decision> {
    let timeout = s.config().aws_timeout;
    let tags = match tokio::time::timeout(timeout, s.elbv2(&tgb.spec).target_group_tags(arn)).await {
        Err(_) => {
            return Err(Decision::Fail {
                message: format!(
                    "AWS did not answer DescribeTags for {arn} within {timeout:?}, so the TargetGroupBinding could not \
                     be checked for a target group of another cluster or stack. Retry; if it persists, check the \
                     controller's AWS connectivity and credentials."
                ),
                category: "aws_timeout",
            });
        }
        Ok(Err(e)) => {
            return Err(Decision::Fail {
                message: format!(
                    "could not read the tags of target group {arn} in AWS: {e}. The TargetGroupBinding could not be \
                     checked for a target group of another cluster or stack; retry once AWS answers."
                ),
                category: "aws_error",
            });
        }
        // Gone between the two calls: the controller reports it; nothing to check here.
        Ok(Ok(None)) => return Ok(None),
        Ok(Ok(Some(tags))) => tags,
    };
    let cfg = s.config();
    Ok(target_group_access(&cfg.cluster_name, &cfg.tenancy, tgb, arn, &tags).err().map(|e| not_our_target_group(&e)))
}

fn deny(v: &[Violation]) -> Decision {
    Decision::Deny { message: denial_message(v), category: v.first().map_or("invalid", |v| v.category) }
}

async fn mutate_tgb(State(s): State<Arc<WebhookState>>, body: Bytes) -> impl IntoResponse {
    run(&s, Hook::TgbMutate, &body, |req: AdmissionRequest<TargetGroupBinding>| tgb_mutation(&s, req)).await
}

async fn tgb_mutation(s: &WebhookState, req: AdmissionRequest<TargetGroupBinding>) -> Decision {
    if admission_op(&req.operation).is_none() {
        return Decision::allow();
    }
    let Some(new) = req.object.as_ref() else {
        return Decision::invalid("TargetGroupBinding admission request without the object");
    };
    let old = match req.operation {
        Operation::Update => req.old_object.as_ref().map(|o| &o.spec),
        _ => None,
    };
    // Metadata-only updates (finalizers, annotations, deletion) are not ours to touch.
    if old.is_some_and(|o| *o == new.spec) || new.metadata.deletion_timestamp.is_some() {
        return Decision::allow();
    }
    // A role the strict tenancy mode refuses is never assumed, not even to describe.
    let ns = req.namespace.as_deref().or(new.metadata.namespace.as_deref()).unwrap_or_default();
    let name = new.metadata.name.as_deref().unwrap_or(&req.name);
    let refused: Vec<Violation> = tenancy_violations(&s.config().tenancy, ns, name, &new.spec)
        .into_iter()
        .filter(|v| v.field == "spec.iamRoleArnToAssume")
        .collect();
    if !refused.is_empty() {
        return deny(&refused);
    }
    let lookup = tgb_lookup(&new.spec, old);
    let tg = match describe(s, &new.spec, &lookup).await {
        Ok(tg) => tg,
        Err(d) => return d,
    };
    if lookup != TargetGroupLookup::None && tg.is_none() {
        return deny(&[target_group_not_found(&lookup, new.spec.role_to_assume().as_ref())]);
    }
    match tgb_defaults(&new.spec, old, tg.as_ref()) {
        Err(v) => deny(&[v]),
        Ok(defaults) => {
            let ops = defaults.iter().map(|d| add(&["spec", d.field()], d.value())).collect();
            Decision::Patch { ops, warnings: Vec::new() }
        }
    }
}

async fn validate_tgb(State(s): State<Arc<WebhookState>>, body: Bytes) -> impl IntoResponse {
    run(&s, Hook::TgbValidate, &body, |req: AdmissionRequest<TargetGroupBinding>| tgb_validation(&s, req)).await
}

async fn tgb_validation(s: &WebhookState, req: AdmissionRequest<TargetGroupBinding>) -> Decision {
    if admission_op(&req.operation).is_none() {
        return Decision::allow();
    }
    let Some(new) = req.object.as_ref() else {
        return Decision::invalid("TargetGroupBinding admission request without the object");
    };
    let old = match req.operation {
        Operation::Update => req.old_object.as_ref(),
        _ => None,
    };
    if new.metadata.deletion_timestamp.is_some() {
        return Decision::allow();
    }
    let ns = req.namespace.as_deref().or(new.metadata.namespace.as_deref()).unwrap_or_default();
    // Stack labels naming another namespace's stack, on create or when the labels change (a
    // label-only update included): never a stack's binding, said at once.
    let labels_changed = old.is_none_or(|o| o.metadata.labels != new.metadata.labels);
    let mut labelled = new.clone();
    labelled.metadata.namespace = Some(ns.to_string());
    let label_violation = labels_changed
        .then(|| foreign_stack_labels(&labelled))
        .flatten()
        .map(|m| Violation::new("metadata.labels", "foreign_stack_labels", m));
    // Never block other metadata-only updates: the controller adds and removes its finalizer
    // with them, and a binding whose target group is gone must still be deletable.
    if old.is_some_and(|o| o.spec == new.spec) {
        return match label_violation {
            Some(v) => deny(&[v]),
            None => Decision::allow(),
        };
    }
    let mut violations: Vec<Violation> = label_violation.into_iter().collect();
    violations.extend(validate_tgb_spec(&new.spec));
    let name = new.metadata.name.as_deref().unwrap_or(&req.name);
    violations.extend(tenancy_violations(&s.config().tenancy, ns, name, &new.spec));
    if let Some(old) = old {
        violations.extend(validate_tgb_update(&old.spec, &new.spec));
    }
    let mut warnings = Vec::new();
    if s.cluster().synced() {
        let all = s.cluster().all_bindings();
        let refs: Vec<&TargetGroupBinding> = all.iter().map(Arc::as_ref).collect();
        violations.extend(validate_tgb_unique(ns, name, &new.spec, &refs));
    } else {
        warnings.push(
            "the controller's cache of TargetGroupBindings is still loading: this binding was not checked for \
             other bindings of the same target group"
                .to_string(),
        );
    }
    if !violations.is_empty() {
        return deny(&violations);
    }
    if old.is_none_or(|o| target_group_fields_changed(&o.spec, &new.spec)) {
        let lookup = match (&new.spec.target_group_arn, &new.spec.target_group_name) {
            (Some(arn), _) if !arn.trim().is_empty() => TargetGroupLookup::ByArn(arn.trim().to_string()),
            (_, Some(name)) if !name.trim().is_empty() => TargetGroupLookup::ByName(name.trim().to_string()),
            _ => TargetGroupLookup::None,
        };
        match describe(s, &new.spec, &lookup).await {
            Err(d) => return d,
            Ok(None) => return deny(&[target_group_not_found(&lookup, new.spec.role_to_assume().as_ref())]),
            Ok(Some(tg)) => {
                violations.extend(validate_tgb_against_target_group(&new.spec, &tg));
                let mut binding = new.clone();
                binding.metadata.namespace = Some(ns.to_string());
                binding.metadata.name = Some(name.to_string());
                match owner_violation(s, &binding, &tg.arn).await {
                    Err(d) => return d,
                    Ok(v) => violations.extend(v),
                }
                if let Some(n) = new.spec.target_group_name.as_deref().filter(|n| !n.is_empty() && *n != tg.name)
                    && matches!(lookup, TargetGroupLookup::ByArn(_))
                {
                    warnings.push(format!(
                        "spec.targetGroupName {n:?} is not the name of target group {} ({:?}); the ARN is used",
                        tg.arn, tg.name
                    ));
                }
            }
        }
    }
    if violations.is_empty() { Decision::Allow { warnings } } else { deny(&violations) }
}

// ----------------------------------------------------------------------------------------------
// Ingresses and IngressClassParams
// ----------------------------------------------------------------------------------------------

async fn validate_ingress_hook(State(s): State<Arc<WebhookState>>, body: Bytes) -> impl IntoResponse {
    run(&s, Hook::Ingress, &body, |req: AdmissionRequest<Ingress>| async { ingress_decision(&s, req) }).await
}

fn ingress_decision(s: &WebhookState, req: AdmissionRequest<Ingress>) -> Decision {
    let Some(op) = admission_op(&req.operation) else { return Decision::allow() };
    let Some(new) = req.object.as_ref() else {
        return Decision::invalid("Ingress admission request without the object");
    };
    if !s.cluster().synced() {
        return Decision::Allow {
            warnings: vec![
                "aws-lb-controller's caches are still loading: this Ingress was admitted without checking its class \
                 and annotations"
                    .to_string(),
            ],
        };
    }
    // The request's namespace is authoritative (a CREATE may carry an object without one).
    let ns = req.namespace.clone().or_else(|| new.metadata.namespace.clone()).unwrap_or_default();
    let mut new = new.clone();
    new.metadata.namespace = Some(ns.clone());
    let classes = s.cluster().ingress_classes(&ns);
    let cfg = s.config();
    let verdict = validate_ingress(op, &new, req.old_object.as_ref(), &classes.view(), &cfg.ingress, &cfg.tenancy);
    if verdict.violations.is_empty() {
        Decision::Allow { warnings: verdict.warnings }
    } else {
        deny(&verdict.violations)
    }
}

async fn validate_ingress_class_params_hook(State(s): State<Arc<WebhookState>>, body: Bytes) -> impl IntoResponse {
    run(&s, Hook::IngressClassParams, &body, |req: AdmissionRequest<IngressClassParams>| async move {
        ingress_class_params_decision(&req)
    })
    .await
}

fn ingress_class_params_decision(req: &AdmissionRequest<IngressClassParams>) -> Decision {
    match (admission_op(&req.operation), req.object.as_ref()) {
        (None, _) => Decision::allow(),
        (Some(_), None) => Decision::invalid("IngressClassParams admission request without the object"),
        (Some(_), Some(p)) => match validate_ingress_class_params(&p.spec) {
            v if v.is_empty() => Decision::allow(),
            v => deny(&v),
        },
    }
}
