//! What the Service controller writes to Kubernetes besides bindings: events (deduplicated, so a
//! persisting problem is reported once, not every pass), the finalizer and `status.loadBalancer`.

use super::{SERVICE_FINALIZER, ServiceCtx};
use crate::error::Result;
use k8s_openapi::api::core::v1::{ObjectReference, Service};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use serde_json::json;

/// ALBC's event reasons for model build and deploy failures.
pub(super) const FAILED_BUILD: &str = "FailedBuildModel";
pub(super) const FAILED_DEPLOY: &str = "FailedDeployModel";

pub(super) fn reference(svc: &Service) -> ObjectReference {
    svc.object_ref(&())
}

/// A Warning event, unless the same reason and message were the last one sent for this Service.
pub(super) async fn warn_once(ctx: &ServiceCtx, svc: &Service, reason: &str, message: &str) {
    let key = (ObjectRef::from_obj(svc), reason.to_string());
    let fresh = ctx.reported.lock().expect("reported").insert(key, message.to_string()).as_deref() != Some(message);
    if fresh {
        ctx.base.event(&reference(svc), true, reason, message.to_string()).await;
    }
}

pub(super) async fn warn_list_once(ctx: &ServiceCtx, svc: &Service, reason: &str, messages: &[String]) {
    if !messages.is_empty() {
        warn_once(ctx, svc, reason, &truncate_list(messages.join("; "))).await;
    }
}

/// Forgets reported problems once a pass succeeds, so a recurrence is reported again.
pub(super) fn clear_warnings(ctx: &ServiceCtx, svc: &Service) {
    let key = ObjectRef::from_obj(svc);
    ctx.reported.lock().expect("reported").retain(|(k, reason), _| {
        k != &key || !matches!(reason.as_str(), super::report::FAILED_BUILD | super::report::FAILED_DEPLOY)
    });
}

/// Event notes are capped at 1 KiB by the API; keep the start, say that more was cut.
pub(super) fn truncate_list(s: String) -> String {
    if s.len() <= 1000 {
        return s;
    }
    let mut cut = 980;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{} … (truncated)", &s[..cut])
}

fn api(ctx: &ServiceCtx, svc: &Service) -> Api<Service> {
    Api::namespaced(ctx.base.client.clone(), &svc.namespace().unwrap_or_default())
}

pub(super) async fn add_finalizer(ctx: &ServiceCtx, svc: &Service) -> Result<()> {
    ctx.base.ensure_leader()?;
    let mut finalizers = svc.finalizers().to_vec();
    finalizers.push(SERVICE_FINALIZER.to_string());
    let body = json!({"metadata": {"finalizers": finalizers, "resourceVersion": svc.resource_version()}});
    api(ctx, svc).patch(&svc.name_any(), &PatchParams::default(), &Patch::Merge(body)).await?;
    Ok(())
}

pub(super) async fn remove_finalizer(ctx: &ServiceCtx, svc: &Service) -> Result<()> {
    ctx.base.ensure_leader()?;
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
    let want: Vec<Option<&str>> = hostname.into_iter().map(Some).collect();
    if current == want {
        return Ok(());
    }
    ctx.base.ensure_leader()?;
    let ingress: Vec<serde_json::Value> = hostname.iter().map(|h| json!({"hostname": h})).collect();
    let body = json!({"status": {"loadBalancer": {"ingress": ingress}}});
    match api(ctx, svc).patch_status(&svc.name_any(), &PatchParams::default(), &Patch::Merge(body)).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}
