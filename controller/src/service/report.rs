//! What the Service controller writes to Kubernetes besides bindings: events (deduplicated
//! through `crate::stack::Reporter`), the finalizer and `status.loadBalancer`.

use super::{SERVICE_FINALIZER, ServiceCtx};
use crate::error::Result;
use k8s_openapi::api::core::v1::{ObjectReference, Service};
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde_json::json;

pub(super) use crate::stack::{FAILED_BUILD, FAILED_DEPLOY, truncate_list};

pub(super) fn reference(svc: &Service) -> ObjectReference {
    svc.object_ref(&())
}

/// A Warning event, unless the same reason and message were the last one sent for this Service.
pub(super) async fn warn_once(ctx: &ServiceCtx, svc: &Service, reason: &str, message: &str) {
    ctx.reporter.warn_once(&ctx.io.base, &reference(svc), reason, message).await
}

pub(super) async fn warn_list_once(ctx: &ServiceCtx, svc: &Service, reason: &str, messages: &[String]) {
    ctx.reporter.warn_list_once(&ctx.io.base, &reference(svc), reason, messages).await
}

/// Forgets reported problems once a pass succeeds, so a recurrence is reported again.
pub(super) fn clear_warnings(ctx: &ServiceCtx, svc: &Service) {
    ctx.reporter.clear_failures(&reference(svc))
}

fn api(ctx: &ServiceCtx, svc: &Service) -> Api<Service> {
    Api::namespaced(ctx.io.base.client.clone(), &svc.namespace().unwrap_or_default())
}

pub(super) async fn add_finalizer(ctx: &ServiceCtx, svc: &Service) -> Result<()> {
    ctx.io.base.ensure_leader()?;
    let mut finalizers = svc.finalizers().to_vec();
    finalizers.push(SERVICE_FINALIZER.to_string());
    let body = json!({"metadata": {"finalizers": finalizers, "resourceVersion": svc.resource_version()}});
    api(ctx, svc).patch(&svc.name_any(), &PatchParams::default(), &Patch::Merge(body)).await?;
    Ok(())
}

pub(super) async fn remove_finalizer(ctx: &ServiceCtx, svc: &Service) -> Result<()> {
    ctx.io.base.ensure_leader()?;
    let finalizers: Vec<&String> = svc.finalizers().iter().filter(|f| *f != SERVICE_FINALIZER).collect();
    let body = json!({"metadata": {"finalizers": finalizers, "resourceVersion": svc.resource_version()}});
    match api(ctx, svc).patch(&svc.name_any(), &PatchParams::default(), &Patch::Merge(body)).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Sets (or clears) `status.loadBalancer.ingress[0].hostname`, only when it differs.
pub(super) async fn set_hostname(ctx: &ServiceCtx, svc: &Service, hostname: Option<&str>) -> Result<()> {
    let current: Vec<Option<&str>> = svc
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|l| l.ingress.as_ref())
        .map(|i| i.iter().map(|x| x.hostname.as_deref()).collect())
        .unwrap_or_default();
    crate::stack::set_hostname(&ctx.io.base, &api(ctx, svc), &svc.name_any(), &current, hostname).await
}
