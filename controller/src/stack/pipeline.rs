//! The one deploy pipeline of a stack, for a Service and an IngressGroup alike: observe AWS by the
//! ownership tags → the build context (`lbc_model::lb::build::ContextNeeds` looked up in AWS) →
//! build (twice when the shared backend security group must be created first) → plan against what
//! exists → replacements (announced, or refused by the owner) → execute and extras → bindings →
//! hostname → event. What differs between the two owners is behind [`StackOwner`].
//!
//! An owner that cannot be deployed as it stands yields [`Error::Blocked`]; [`settle`] is the one
//! place that reports it and decides the retry.

use super::bindings::{self, BindingOwner};
use super::{FAILED_BUILD, FAILED_DEPLOY, Reporter, StackIo, SubnetNeed, deploy, extras, frontend_nlb, observe};
use crate::backend_sg::BackendSecurityGroup;
use crate::context::Context;
use crate::error::{Error, Result, Retry};
use k8s_openapi::api::core::v1::ObjectReference;
use lbc_model::lb::build::backend_security_group_for_build;
use lbc_model::lb::build::{BuildContext, BuildError, BuiltStack, ContextNeeds, ExistingLoadBalancer};
use lbc_model::lb::diff::{
    HeldDeletion, ObservedStack, PlanOptions, ReplaceReason, Step, defer_target_group_deletions, hold_bound, plan,
};
use lbc_model::text::{EVENT_NOTE_MAX, truncate};
use std::collections::BTreeSet;
use std::future::Future;
use std::time::{Duration, Instant};

/// Event reason of a replacement the owner refused.
pub const REPLACEMENT_REFUSED: &str = "ReplacementRefused";

/// What the pipeline needs to know of the Kubernetes side of a stack.
pub trait StackOwner: Sync {
    /// How messages name the stack when its Events are not on one object of its own (`IngressGroup
    /// <id>`); `None` for a Service.
    fn subject(&self) -> Option<String>;
    /// The `<prefix>/stack` tag value.
    fn stack_id(&self) -> String;
    /// The objects that get the stack's Events.
    fn objects(&self) -> Vec<ObjectReference>;
    fn binding_owner(&self) -> BindingOwner;
    /// The builder's context as far as flags and Kubernetes decide it; the pipeline adds AWS's
    /// part (subnets, VPC CIDRs, the existing load balancer, the backend group, named groups).
    fn base_context(&self) -> BuildContext;
    fn context_needs(&self, existing: Option<ExistingLoadBalancer>) -> ContextNeeds;
    fn build(&self, c: &BuildContext) -> std::result::Result<BuiltStack, BuildError>;
    /// Warnings of the owner's own, reported with the build's.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
    /// Why the load balancer must not be replaced for `reason`, if it must not.
    fn replacement_veto(&self, _reason: &ReplaceReason) -> Option<String> {
        None
    }
    /// Metric stage name of the hostname update.
    fn status_stage(&self) -> &'static str;
    /// Writes the load balancers' DNS names (the stack's, then its frontend NLB's; none when
    /// unknown) on the owner's objects.
    fn set_hostname(&self, base: &Context, hostnames: &[&str]) -> impl Future<Output = Result<()>> + Send;
    /// The frontend NLB the owner asks for (IngressGroups only).
    fn frontend_nlb(&self) -> Option<frontend_nlb::Wanted<'_>> {
        None
    }
}

/// What a pipeline of one controller shares.
pub struct Pipeline<'a> {
    pub io: &'a StackIo,
    pub backend_sg: &'a BackendSecurityGroup,
    pub reporter: &'a Reporter,
    /// The controller's name in metrics.
    pub controller: &'static str,
    pub external_managed_tags: &'a BTreeSet<String>,
    /// ALBC's gate `EnhancedDefaultBehavior` (`PlanOptions::enhanced_defaults`).
    pub enhanced_defaults: bool,
}

/// `nothing changed in AWS: <detail>`, naming the stack when the owner has a subject.
fn nothing_changed<O: StackOwner>(owner: &O, detail: &str) -> String {
    truncate(
        match owner.subject() {
            Some(s) => format!("{s}, nothing changed in AWS: {detail}"),
            None => format!("nothing changed in AWS: {detail}"),
        },
        EVENT_NOTE_MAX,
    )
}

fn blocked(event: &'static str, reason: String, retry: Retry) -> Error {
    Error::Blocked { event, reason, retry }
}

/// Deploys the owner's stack; `Ok(())` when AWS, the bindings and the hostname match it.
pub async fn deploy<O: StackOwner>(p: &Pipeline<'_>, owner: &O) -> Result<()> {
    let (io, stack_id, objects) = (p.io, owner.stack_id(), owner.objects());
    let metrics = &io.base.metrics;
    // ALBC's stages, timed where ours has the same work: reading AWS and building the stack
    // (build_model), the AWS writes and the bindings (deploy_model), the hostname.
    let stage = Instant::now();
    let observe::Parts { main: mut observed, frontend } = observe::observe(io, &stack_id, None).await?;
    let mut c = build_context(p, owner, &observed).await.map_err(|e| e.map_blocked(|r| nothing_changed(owner, &r)))?;
    let mut built =
        owner.build(&c).map_err(|e| blocked(FAILED_BUILD, nothing_changed(owner, &e.to_string()), Retry::OnChange))?;
    if built.needs_backend_security_group(&c) {
        c.backend_security_group = p.backend_sg.ensure().await?;
        built = owner.build(&c).map_err(|e| {
            Error::Internal(format!("stack {stack_id} changed when the backend security group was added: {e}"))
        })?;
    }
    let warnings: Vec<String> = owner.warnings().into_iter().chain(built.warnings.iter().cloned()).collect();
    for o in &objects {
        p.reporter.warn_list_once(&io.base, o, "BuildWarning", &warnings).await;
    }
    observed.foreign = observe::foreign(io, &built.stack, &observed).await?;

    let opts =
        PlanOptions { external_managed_tags: p.external_managed_tags.clone(), enhanced_defaults: p.enhanced_defaults };
    let steps = plan(&built.stack, &observed, &opts)
        .map_err(|e| blocked(FAILED_DEPLOY, nothing_changed(owner, &e.to_string()), Retry::SyncPeriod))?;
    metrics.reconcile_stage(p.controller, "build_model", stage);
    let replacements = steps.iter().filter_map(|s| match s {
        Step::ReplaceLoadBalancer { name, reason, .. } => Some((name, reason)),
        _ => None,
    });
    let vetoes: Vec<String> = replacements.clone().filter_map(|(_, r)| owner.replacement_veto(r)).collect();
    if !vetoes.is_empty() {
        // The rest of the stack waits too: it was built for the replaced load balancer.
        let subject = owner.subject().map(|s| format!("{s}: ")).unwrap_or_default();
        let reason = truncate(format!("{subject}{}", vetoes.join("; ")), EVENT_NOTE_MAX);
        return Err(blocked(REPLACEMENT_REFUSED, reason, Retry::SyncPeriod));
    }
    for (name, reason) in replacements {
        let msg = format!(
            "load balancer {name} is being deleted and created again because its {reason}; its DNS name will change: \
             update what points at the old name (external-dns follows the status by itself)"
        );
        for o in &objects {
            io.base.event(o, true, "ReplacingLoadBalancer", msg.clone()).await;
        }
    }

    let stage = Instant::now();
    let mut resolved = resolved_from(&observed);
    // Target groups leave after their bindings (`lbc_model::lb::diff::hold_bound`).
    let (steps, tg_deletions) = defer_target_group_deletions(steps);
    let deployed = match deploy::execute(io, &stack_id, &steps, &built.stack.listeners, &mut resolved).await {
        Ok(()) => {
            let groups = &built.stack.load_balancer.security_groups;
            extras::apply(io, &built.extras, groups, &observed, &resolved).await
        }
        Err(e) => Err(e),
    };
    let extra_steps = match deployed {
        Ok(done) => done,
        Err(e) => return failed(io, owner, &objects, e).await,
    };
    if let Some(id) = &resolved.frontend_security_group {
        built.resolve_frontend_security_group(id);
    }
    bindings::sync(io, &owner.binding_owner(), &built.bindings, &resolved.target_groups).await?;
    let (tg_deletions, held) = hold_bound(tg_deletions, &bindings::by_target_group(io));
    if let Err(e) = deploy::execute(io, &stack_id, &tg_deletions, &built.stack.listeners, &mut resolved).await {
        return failed(io, owner, &objects, e).await;
    }
    for h in &held {
        tracing::info!(stack = %stack_id, target_group = %h.arn, bindings = ?h.bindings, "{}", h.summary());
    }
    let front = match resolved.load_balancer_arn.as_deref() {
        Some(arn) => {
            let alb = frontend_nlb::DeployedAlb {
                spec: &built.stack.load_balancer,
                arn,
                security_groups: resolved_security_groups(&built.stack.load_balancer, &resolved),
            };
            match frontend_nlb::sync(io, &stack_id, owner.frontend_nlb(), &alb, &c, frontend, &opts).await {
                Ok(o) => o,
                Err(e @ Error::Blocked { .. }) => return Err(e),
                Err(e) => return failed(io, owner, &objects, e).await,
            }
        }
        None => frontend_nlb::Outcome::default(),
    };
    metrics.reconcile_stage(p.controller, "deploy_model", stage);
    let stage = Instant::now();
    let hostnames: Vec<&str> = match resolved.dns_name.as_deref() {
        Some(alb) => [Some(alb), front.dns_name.as_deref()].into_iter().flatten().collect(),
        None => Vec::new(),
    };
    owner.set_hostname(&io.base, &hostnames).await?;
    metrics.reconcile_stage(p.controller, owner.status_stage(), stage);
    let done: Vec<String> = steps
        .iter()
        .chain(&tg_deletions)
        .map(Step::summary)
        .chain(extra_steps)
        .chain(held.iter().map(HeldDeletion::summary))
        .chain(front.done)
        .collect();
    if !done.is_empty() {
        let msg = truncate(
            format!("load balancer {} in sync: {}", built.stack.load_balancer.name, done.join("; ")),
            EVENT_NOTE_MAX,
        );
        for o in &objects {
            io.base.event(o, false, "SuccessfullyReconciled", msg.clone()).await;
        }
    }
    for o in &objects {
        p.reporter.clear_failures(o);
        p.reporter.forget(o, REPLACEMENT_REFUSED);
    }
    Ok(())
}

/// Reports a failed write on the stack's objects; the error goes on to the retry policy.
async fn failed<O: StackOwner>(io: &StackIo, owner: &O, objects: &[ObjectReference], e: Error) -> Result<()> {
    let subject = owner.subject().map(|s| format!("{s}: ")).unwrap_or_default();
    let msg = format!("{subject}{e} (the next attempt re-reads AWS and continues from what exists)");
    for o in objects {
        io.base.event(o, true, FAILED_DEPLOY, msg.clone()).await;
    }
    Err(e)
}

/// Subnets, VPC CIDRs, the existing load balancer, the backend group (or its stand-in) and the
/// security groups named by `Name`, on top of the owner's context.
async fn build_context<O: StackOwner>(p: &Pipeline<'_>, owner: &O, observed: &ObservedStack) -> Result<BuildContext> {
    let io = p.io;
    let mut c = owner.base_context();
    c.backend_security_group = backend_security_group_for_build(p.backend_sg.existing().await?, p.backend_sg.mode());
    c.vpc_cidrs = io.base.vpc_cidrs(&io.vpc_id).await?.to_strings();
    c.ipv6_available = c.vpc_cidrs.iter().any(|s| s.contains(':'));
    c.existing = observed.load_balancer.as_ref().map(|(o, _)| ExistingLoadBalancer {
        scheme: o.spec.scheme,
        has_security_groups: !o.spec.security_groups.is_empty(),
        customer_owned_ipv4_pool: o.spec.customer_owned_ipv4_pool.clone(),
    });
    let needs = owner.context_needs(c.existing.clone());
    let need = SubnetNeed { scheme: needs.scheme, min_azs: needs.min_azs, annotation: &needs.subnets_annotation };
    c.subnets = super::subnets(io, &needs.subnets, &need).await?;
    if !needs.security_group_names.is_empty() {
        let (names, annotation) = (&needs.security_group_names, &needs.security_groups_annotation);
        c.custom_security_group_ids = super::security_groups_by_name(io, names, annotation).await?;
    }
    Ok(c)
}

/// The load balancer's security group IDs, the managed frontend group's resolved.
fn resolved_security_groups(lb: &lbc_model::lb::LoadBalancer, resolved: &deploy::Resolved) -> Vec<String> {
    use lbc_model::lb::diff::MANAGED_FRONTEND_SG;
    lb.security_groups
        .iter()
        .map(|g| match &resolved.frontend_security_group {
            Some(id) if g == MANAGED_FRONTEND_SG => id.clone(),
            _ => g.clone(),
        })
        .collect()
}

/// What AWS already has, as the deployer's starting point.
pub(super) fn resolved_from(observed: &ObservedStack) -> deploy::Resolved {
    deploy::Resolved {
        load_balancer_arn: observed.load_balancer.as_ref().map(|(o, _)| o.id.clone()),
        dns_name: observed.load_balancer.as_ref().map(|(_, s)| s.dns_name.clone()),
        frontend_security_group: observed.frontend_security_group.as_ref().map(|o| o.id.clone()),
        target_groups: observed.target_groups.iter().map(|t| (t.spec.name.clone(), t.id.clone())).collect(),
        listeners: observed.listeners.iter().map(|l| (l.spec.port, l.id.clone())).collect(),
    }
}

/// The one place a blocked pass is handled: a Warning `event` on each of `objects` (once per
/// message: a persisting problem is reported once), nothing counted as a failure, and the next
/// pass when the block asks for it (`None`: on change only). Other results pass through.
pub async fn settle(
    reporter: &Reporter,
    base: &Context,
    objects: &[ObjectReference],
    sync_period: Duration,
    res: Result<Option<Duration>>,
) -> Result<Option<Duration>> {
    match res {
        Err(Error::Blocked { event, reason, retry }) => {
            let reason = truncate(reason, EVENT_NOTE_MAX);
            for o in objects {
                reporter.warn_once(base, o, event, &reason).await;
            }
            Ok(retry.delay(sync_period))
        }
        other => other,
    }
}
