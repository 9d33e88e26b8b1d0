//! Removing a Service's stack: when the Service is deleted, or stops being ours (type or class
//! changed). Bindings go first (their finalizers deregister the targets), then listeners, the
//! load balancer, target groups and the security group, in `plan_delete`'s order; the finalizer
//! is released only when nothing of ours is left.

use super::{ServiceCtx, bindings, deploy, observe, report};
use crate::context::jittered;
use crate::error::Result;
use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use lbc_model::lb::backend_sg::release_allowed;
use lbc_model::lb::diff::{deletion_protected, plan_delete};
use std::time::Duration;

pub(super) async fn cleanup(ctx: &ServiceCtx, svc: &Service) -> Result<Action> {
    if !bindings::delete_all(ctx, svc).await? {
        // Their finalizers are deregistering targets; come back when the cache shows them gone.
        return Ok(Action::requeue(Duration::from_secs(2)));
    }
    let stack_id = format!("{}/{}", svc.namespace().unwrap_or_default(), svc.name_any());
    let observed = observe::observe(ctx, &stack_id, None).await?;
    if deletion_protected(&observed) {
        let name = observed.load_balancer.as_ref().map(|(o, _)| o.spec.name.clone()).unwrap_or_default();
        let msg = format!(
            "load balancer {name} has deletion_protection.enabled=true; set it to false (annotation \
             service.beta.kubernetes.io/aws-load-balancer-attributes, or in AWS) to let the controller delete it; \
             the Service keeps its finalizer until then"
        );
        report::warn_once(ctx, svc, "DeletionProtected", &msg).await;
        return Ok(Action::requeue(jittered(ctx.cfg.sync_period)));
    }
    let steps = plan_delete(&observed);
    let mut resolved = deploy::Resolved::default();
    match deploy::execute(ctx, &stack_id, &steps, &[], &mut resolved).await {
        Ok(()) => {}
        // The load balancer's network interfaces take a while to go; the security group waits.
        Err(crate::error::Error::Aws(e)) if e.kind == lbc_aws::error::ErrorKind::InUse => {
            tracing::info!(stack = %stack_id, error = %e, "waiting for AWS to release resources before deleting them");
            return Ok(Action::requeue(Duration::from_secs(10)));
        }
        Err(e) => return Err(e),
    }
    if svc.metadata.deletion_timestamp.is_none() {
        report::set_hostname(ctx, svc, None).await?;
    }
    report::remove_finalizer(ctx, svc).await?;
    release_backend_security_group(ctx, svc);
    if !steps.is_empty() {
        let msg = format!("deleted the load balancer stack of this Service ({} AWS changes)", steps.len());
        ctx.base.event(&report::reference(svc), false, "SuccessfullyDeleted", msg).await;
    }
    Ok(Action::await_change())
}

/// The last Service with our finalizer gone: the shared backend group may go too (asked again
/// before each attempt, and only while leading).
fn release_backend_security_group(ctx: &ServiceCtx, svc: &Service) {
    let (base, uid, mode) = (ctx.base.clone(), svc.uid(), ctx.backend_sg.mode().clone());
    ctx.backend_sg.release_when_unused(move || {
        let holders = base
            .stores
            .services
            .state()
            .into_iter()
            .map(|s| s.uid() != uid && s.finalizers().iter().any(|f| f == super::SERVICE_FINALIZER));
        !base.is_leader() || !release_allowed(&mode, holders.collect::<Vec<_>>().into_iter())
    });
}
