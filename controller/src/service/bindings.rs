//! The TargetGroupBindings a Service's stack owns: created or updated with the target groups'
//! ARNs, removed when their target group leaves the stack. They carry an owner reference to the
//! Service and ALBC's stack labels, so the TargetGroupBinding controller (and ALBC tooling) sees
//! them like any other binding.

use super::ServiceCtx;
use crate::error::Result;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use lbc_model::crd::TargetGroupBinding;
use lbc_model::service::build::TargetGroupBindingTemplate;
use std::collections::{BTreeMap, BTreeSet};

const STACK_NAME_LABEL: &str = "service.k8s.aws/stack-name";
const STACK_NAMESPACE_LABEL: &str = "service.k8s.aws/stack-namespace";
const FIELD_MANAGER: &str = "aws-lb-controller";

/// Bindings in the Service's namespace owned by it (by owner reference), from the cache.
pub(super) fn owned(ctx: &ServiceCtx, svc: &Service) -> Vec<std::sync::Arc<TargetGroupBinding>> {
    let (ns, uid) = (svc.namespace().unwrap_or_default(), svc.uid().unwrap_or_default());
    ctx.base
        .stores
        .tgbs
        .state()
        .into_iter()
        .filter(|t| t.namespace().as_deref() == Some(ns.as_str()))
        .filter(|t| t.owner_references().iter().any(|o| o.uid == uid && o.kind == "Service"))
        .collect()
}

/// Applies every template (server-side apply: unchanged bindings cost one no-op request, so
/// only templates that differ from the cached object are sent) and deletes owned bindings that
/// are no longer wanted. `arns`: target group name → ARN.
pub(super) async fn sync(
    ctx: &ServiceCtx,
    svc: &Service,
    templates: &[TargetGroupBindingTemplate],
    arns: &BTreeMap<String, String>,
) -> Result<()> {
    let ns = svc.namespace().unwrap_or_default();
    let api: Api<TargetGroupBinding> = Api::namespaced(ctx.base.client.clone(), &ns);
    let current = owned(ctx, svc);
    for t in templates {
        let mut spec = t.spec.clone();
        let Some(tg_name) = spec.target_group_name.clone() else { continue };
        let Some(arn) = arns.get(&tg_name) else { continue };
        spec.target_group_arn = Some(arn.clone());
        spec.target_group_name = None;
        let same = current.iter().any(|c| c.name_any() == t.name && covers(&c.spec, &spec));
        if same {
            continue;
        }
        ctx.base.ensure_leader()?;
        let mut tgb = TargetGroupBinding::new(&t.name, spec);
        tgb.metadata.namespace = Some(ns.clone());
        tgb.metadata.labels = Some(BTreeMap::from([
            (STACK_NAME_LABEL.to_string(), svc.name_any()),
            (STACK_NAMESPACE_LABEL.to_string(), ns.clone()),
        ]));
        tgb.metadata.owner_references = svc.controller_owner_ref(&()).map(|r| vec![r]);
        let body = serde_json::to_value(&tgb).map_err(|e| crate::error::Error::Invalid(e.to_string()))?;
        api.patch(&t.name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(body)).await?;
        tracing::info!(binding = %format!("{ns}/{}", t.name), target_group = %arn, "TargetGroupBinding applied");
    }
    let wanted: BTreeSet<&str> = templates.iter().map(|t| t.name.as_str()).collect();
    for c in current.iter().filter(|c| !wanted.contains(c.name_any().as_str())) {
        delete(ctx, &api, &c.name_any()).await?;
    }
    Ok(())
}

/// Whether `have` already says everything `want` says (fields `want` leaves unset may carry
/// defaults the mutating webhook filled in).
fn covers(have: &lbc_model::crd::TargetGroupBindingSpec, want: &lbc_model::crd::TargetGroupBindingSpec) -> bool {
    let (Ok(serde_json::Value::Object(h)), Ok(serde_json::Value::Object(w))) =
        (serde_json::to_value(have), serde_json::to_value(want))
    else {
        return false;
    };
    w.iter().all(|(k, v)| v.is_null() || h.get(k) == Some(v))
}

/// Deletes every owned binding; `true` once none is left in the cache (their finalizers have
/// deregistered the targets), so target groups can go.
pub(super) async fn delete_all(ctx: &ServiceCtx, svc: &Service) -> Result<bool> {
    let api: Api<TargetGroupBinding> = Api::namespaced(ctx.base.client.clone(), &svc.namespace().unwrap_or_default());
    let current = owned(ctx, svc);
    for c in current.iter().filter(|c| c.meta().deletion_timestamp.is_none()) {
        delete(ctx, &api, &c.name_any()).await?;
    }
    Ok(current.is_empty())
}

async fn delete(ctx: &ServiceCtx, api: &Api<TargetGroupBinding>, name: &str) -> Result<()> {
    ctx.base.ensure_leader()?;
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}
