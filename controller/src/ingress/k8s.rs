//! What the Ingress controller writes on Ingresses: group finalizers and
//! `status.loadBalancer.ingress[].hostname`.

use crate::error::Result;
use crate::stack::StackIo;
use k8s_openapi::api::networking::v1::Ingress;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

fn api(io: &StackIo, ing: &Ingress) -> Api<Ingress> {
    Api::namespaced(io.base.client.clone(), &ing.namespace().unwrap_or_default())
}

fn ignore_gone(r: std::result::Result<Ingress, kube::Error>) -> Result<()> {
    match r {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Adds `finalizer` (a merge patch of the whole list, guarded by the resourceVersion).
pub(super) async fn add_finalizer(io: &StackIo, ing: &Ingress, finalizer: &str) -> Result<()> {
    if ing.finalizers().iter().any(|f| f == finalizer) {
        return Ok(());
    }
    io.base.ensure_leader()?;
    let mut finalizers = ing.finalizers().to_vec();
    finalizers.push(finalizer.to_string());
    let body = json!({"metadata": {"finalizers": finalizers, "resourceVersion": ing.resource_version()}});
    ignore_gone(api(io, ing).patch(&ing.name_any(), &PatchParams::default(), &Patch::Merge(body)).await)
}

pub(super) async fn remove_finalizer(io: &StackIo, ing: &Ingress, finalizer: &str) -> Result<()> {
    if !ing.finalizers().iter().any(|f| f == finalizer) {
        return Ok(());
    }
    io.base.ensure_leader()?;
    let finalizers: Vec<&String> = ing.finalizers().iter().filter(|f| *f != finalizer).collect();
    let body = json!({"metadata": {"finalizers": finalizers, "resourceVersion": ing.resource_version()}});
    ignore_gone(api(io, ing).patch(&ing.name_any(), &PatchParams::default(), &Patch::Merge(body)).await)
}

/// Sets (or clears) `status.loadBalancer.ingress` to the one hostname, only when it differs.
pub(super) async fn set_hostname(io: &StackIo, ing: &Ingress, hostname: Option<&str>) -> Result<()> {
    let current: Vec<Option<&str>> = ing
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|l| l.ingress.as_ref())
        .map(|i| i.iter().map(|x| x.hostname.as_deref()).collect())
        .unwrap_or_default();
    let Some(body) = crate::stack::hostname_patch(&current, hostname) else { return Ok(()) };
    io.base.ensure_leader()?;
    ignore_gone(api(io, ing).patch_status(&ing.name_any(), &PatchParams::default(), &Patch::Merge(body)).await)
}
