//! Removing a Service's stack: when the Service is deleted, or stops being ours (type or class
//! changed). Bindings go first (their finalizers deregister the targets), then the AWS resources
//! (`crate::stack::delete_stack`); the finalizer is released only when nothing of ours is left.

use super::{SERVICE_FINALIZER, ServiceCtx, reference};
use crate::error::{Error, Result, Retry};
use crate::stack::{Deleted, bindings, delete_stack, set_finalizer, set_hostname};
use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;
use lbc_model::lb::backend_sg::release_allowed;
use std::time::Duration;

/// One pass of the teardown; `Ok(Some(d))`: look again after `d`.
pub(super) async fn cleanup(ctx: &ServiceCtx, svc: &Service) -> Result<Option<Duration>> {
    if !bindings::delete_all(&ctx.io, &super::binding_owner(svc)).await? {
        // Their finalizers are deregistering targets; come back when the cache shows them gone.
        return Ok(Some(Duration::from_secs(2)));
    }
    let changes = match delete_stack(&ctx.io, &super::stack_id(svc)).await? {
        Deleted::Done { changes } => changes,
        Deleted::Waiting => return Ok(Some(Duration::from_secs(10))),
        Deleted::Protected { load_balancer } => {
            let msg = format!(
                "load balancer {load_balancer} has deletion_protection.enabled=true; set it to false (annotation \
                 service.beta.kubernetes.io/aws-load-balancer-attributes, or in AWS) to let the controller delete it; \
                 the Service keeps its finalizer until then"
            );
            return Err(Error::Blocked { event: "DeletionProtected", reason: msg, retry: Retry::SyncPeriod });
        }
    };
    if svc.metadata.deletion_timestamp.is_none() {
        set_hostname(&ctx.io.base, svc, &[]).await?;
    }
    set_finalizer(&ctx.io.base, svc, SERVICE_FINALIZER, false).await?;
    release_backend_security_group(ctx, svc);
    if changes > 0 {
        let msg = format!("deleted the load balancer stack of this Service ({changes} AWS changes)");
        ctx.io.base.event(&reference(svc), false, "SuccessfullyDeleted", msg).await;
    }
    Ok(None)
}

/// The last Service with our finalizer gone: the shared backend group may go too (asked again
/// before each attempt, and only while leading).
fn release_backend_security_group(ctx: &ServiceCtx, svc: &Service) {
    let (base, uid, mode) = (ctx.io.base.clone(), svc.uid(), ctx.backend_sg.mode().clone());
    ctx.backend_sg.release_when_unused(move || {
        let holders = crate::stack::finalizer_holders(&base.stores, &uid.iter().cloned().collect::<Vec<_>>());
        !base.is_leader() || !release_allowed(&mode, holders.into_iter())
    });
}
