//! The Service controller: `type: LoadBalancer` Services that are ours (ALBC's selection rules)
//! get an NLB with IP target groups, listeners, a managed frontend security group and one
//! TargetGroupBinding per target group; the TargetGroupBinding controller then keeps targets in
//! sync. Every decision is in `lbc_model::service` (selection, annotations, stack) and
//! `lbc_model::lb` (subnets, diff); this module observes, executes and reports.
//!
//! A Service holding our finalizer is torn down only by its own change (deleted, type changed,
//! annotations no longer selecting us); one whose `loadBalancerClass` stopped matching
//! `--load-balancer-class` is frozen (`lbc_model::service::membership`).
//!
//! One pass: select → parse annotations → finalizer → observe AWS by ownership tags → resolve
//! subnets → build the stack → plan against what exists (refusing untagged look-alikes) →
//! announce replacements → execute steps → apply bindings → `status.loadBalancer` → event.

mod cleanup;
mod report;

use crate::backend_sg::BackendSecurityGroup;
use crate::context::{Context, jittered};
use crate::error::{Error, Result};
use crate::stack::SubnetNeed;
use crate::stack::bindings::{self, BindingOwner};
use crate::stack::{Adapters, Backoff, Reporter, StackIo, deploy, extras, observe};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Service;
use kube::runtime::controller::{Action, Config, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use lbc_model::lb::Tags;
use lbc_model::lb::backend_sg::BackendSgMode;
use lbc_model::lb::diff::{PlanOptions, Step, plan};
use lbc_model::lb::subnets::SubnetSelector;
use lbc_model::lb::tags::SERVICE_TAG_PREFIX;
use lbc_model::service::{
    BuildContext, ExistingLoadBalancer, Membership, NlbSettings, SecurityGroupSelector, SelectConfig, Selection,
    build_stack, membership, parse_annotations,
};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tracing::Instrument;

pub const CONTROLLER: &str = "service";
/// ALBC's Service finalizer.
pub const SERVICE_FINALIZER: &str = "service.k8s.aws/resources";

/// Service-controller settings (from flags).
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    pub cluster_name: String,
    pub vpc_id: String,
    pub select: SelectConfig,
    /// `--default-tags`.
    pub default_tags: Tags,
    /// `--external-managed-tags`.
    pub external_managed_tags: BTreeSet<String>,
    /// Re-check interval of a Service whose stack is in sync (drift).
    pub sync_period: Duration,
    pub max_backoff: Duration,
    /// `--enable-backend-security-group` / `--backend-security-group`.
    pub backend_sg: BackendSgMode,
    /// `--default-load-balancer-scheme`.
    pub default_scheme: lbc_model::lb::Scheme,
    /// ALBC's `--feature-gates`, as far as this controller applies them.
    pub gates: lbc_model::compat::FeatureGates,
}

/// What the Service reconciler shares: the TargetGroupBinding context (client, caches, events,
/// leader state) plus the load-balancer adapters.
pub struct ServiceCtx {
    pub io: StackIo,
    pub cfg: ServiceConfig,
    pub backend_sg: Arc<BackendSecurityGroup>,
    /// Last Warning sent per Service and reason, so a persisting problem is reported once per change.
    reporter: Reporter,
    backoff: Backoff<ObjectRef<Service>>,
}

impl ServiceCtx {
    pub fn new(base: Arc<Context>, aws: &Adapters, cfg: ServiceConfig, backend_sg: Arc<BackendSecurityGroup>) -> Self {
        // NLBs have no web ACLs; `wafv2` only matters to Ingresses.
        let options =
            crate::stack::StackOptions { cluster_tag_check: cfg.gates.subnets_cluster_tag_check, wafv2: true };
        let io = StackIo::new(base, aws, &cfg.cluster_name, &cfg.vpc_id, SERVICE_TAG_PREFIX, options);
        Self { io, backend_sg, reporter: Reporter::default(), backoff: Backoff::new(cfg.max_backoff), cfg }
    }
}

/// `namespace/name`: the `service.k8s.aws/stack` tag value.
fn stack_id(svc: &Service) -> String {
    format!("{}/{}", svc.namespace().unwrap_or_default(), svc.name_any())
}

/// The Service owns its bindings (owner reference and ALBC's stack labels).
fn binding_owner(svc: &Service) -> BindingOwner {
    let ns = svc.namespace().unwrap_or_default();
    BindingOwner::new(SERVICE_TAG_PREFIX, Some(&ns), &svc.name_any(), svc.controller_owner_ref(&()))
}

/// Runs until `stop` resolves. Every Service is looked at once at start (ours or carrying our
/// finalizer), then on every change.
pub async fn run(
    ctx: Arc<ServiceCtx>,
    concurrency: u16,
    stop: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    ctx.io.base.metrics.set_concurrency(CONTROLLER, concurrency);
    let (tx, rx) = mpsc::unbounded_channel();
    for s in ctx.io.base.stores.services.state() {
        let _ = tx.send(ObjectRef::from_obj(s.as_ref()));
    }
    ctx.io.base.triggers.set_service_sender(Some(tx));
    Controller::for_shared_stream(futures::stream::pending(), ctx.io.base.stores.services.clone())
        .with_config(Config::default().concurrency(concurrency))
        .reconcile_on(UnboundedReceiverStream::new(rx))
        .graceful_shutdown_on(stop)
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|_| futures::future::ready(()))
        .await;
    ctx.io.base.triggers.set_service_sender(None);
}

async fn reconcile(svc: Arc<Service>, ctx: Arc<ServiceCtx>) -> Result<Action> {
    if !ctx.io.base.is_leader() {
        return Ok(Action::await_change());
    }
    let timer =
        ctx.io.base.metrics.reconcile_started(CONTROLLER, &svc.namespace().unwrap_or_default(), &svc.name_any());
    let res = reconcile_inner(&svc, &ctx).instrument(timer.span()).await;
    if !res.as_ref().is_err_and(Error::is_not_leader) {
        timer.done(crate::metrics::ReconcileResult::of(&res));
    }
    if res.is_ok() {
        ctx.backoff.succeeded(&ObjectRef::from_obj(svc.as_ref()));
    }
    res
}

async fn reconcile_inner(svc: &Service, ctx: &ServiceCtx) -> Result<Action> {
    let ours = svc.finalizers().iter().any(|f| f == SERVICE_FINALIZER);
    let selection = match membership(svc, &ctx.cfg.select, ours) {
        Membership::Member(s) => s,
        Membership::Out if ours => return cleanup::cleanup(ctx, svc).await,
        Membership::Out => return Ok(Action::await_change()),
        Membership::Frozen { reason } => {
            // The flag is fixed by a restart, which looks at every Service again.
            report::warn_once(ctx, svc, "Frozen", &reason).await;
            return Ok(Action::await_change());
        }
    };
    if let Selection::InstanceTargetsUnsupported { message } = &selection {
        report::warn_once(ctx, svc, "InstanceTargetsUnsupported", message).await;
        return Ok(Action::await_change());
    }

    let settings = match parse_annotations(&svc.annotations().clone()) {
        Ok(s) => s,
        Err(errors) => {
            report::warn_once(
                ctx,
                svc,
                report::FAILED_BUILD,
                &format!("invalid annotations, nothing changed in AWS: {errors}"),
            )
            .await;
            return Ok(Action::await_change());
        }
    };
    report::warn_list_once(ctx, svc, "UnsupportedAnnotation", &settings.warnings()).await;
    if !ours {
        report::add_finalizer(ctx, svc).await?;
    }

    let stack_id = stack_id(svc);
    // ALBC's stages, timed where ours has the same work: reading AWS and building the stack
    // (build_model), the AWS writes and the bindings (deploy_model), the hostname (update_status).
    let metrics = &ctx.io.base.metrics;
    let stage = std::time::Instant::now();
    let mut observed = observe::observe(&ctx.io, &stack_id, None).await?;
    let mut build_ctx = match build_context(ctx, svc, &settings, &observed).await? {
        Ok(c) => c,
        Err(message) => {
            report::warn_once(ctx, svc, report::FAILED_BUILD, &message).await;
            return Ok(Action::requeue(jittered(ctx.cfg.sync_period)));
        }
    };
    let mut built = match build_stack(svc, &settings, &build_ctx) {
        Ok(b) => b,
        Err(e) => {
            report::warn_once(ctx, svc, report::FAILED_BUILD, &format!("nothing changed in AWS: {e}")).await;
            return Ok(Action::await_change());
        }
    };
    // The shared backend group is created only when a stack needs it: built once with a
    // stand-in, then again with the real ID.
    if built.backend_security_group_used && build_ctx.backend_security_group.as_deref() == Some(BACKEND_SG_PENDING) {
        build_ctx.backend_security_group = ctx.backend_sg.ensure().await?;
        built = build_stack(svc, &settings, &build_ctx)
            .map_err(|e| Error::Invalid(format!("stack changed when the backend security group was added: {e}")))?;
    }
    report::warn_list_once(ctx, svc, "BuildWarning", &built.warnings).await;
    observed.foreign = observe::foreign(&ctx.io, &built.stack, &observed).await?;

    let opts = PlanOptions { external_managed_tags: ctx.cfg.external_managed_tags.clone() };
    let steps = match plan(&built.stack, &observed, &opts) {
        Ok(s) => s,
        Err(e) => {
            report::warn_once(ctx, svc, report::FAILED_DEPLOY, &format!("nothing changed in AWS: {e}")).await;
            return Ok(Action::requeue(jittered(ctx.cfg.sync_period)));
        }
    };
    metrics.reconcile_stage(CONTROLLER, "build_model", stage);
    for s in &steps {
        if let Step::ReplaceLoadBalancer { name, reason, .. } = s {
            let msg = format!(
                "load balancer {name} is being deleted and created again because its {reason}; its DNS name will change: \
                 update what points at the old name (external-dns follows the status by itself)"
            );
            ctx.io.base.event(&report::reference(svc), true, "ReplacingLoadBalancer", msg).await;
        }
    }

    let stage = std::time::Instant::now();
    let mut resolved = deploy::Resolved {
        load_balancer_arn: observed.load_balancer.as_ref().map(|(o, _)| o.id.clone()),
        dns_name: observed.load_balancer.as_ref().map(|(_, s)| s.dns_name.clone()),
        frontend_security_group: observed.frontend_security_group.as_ref().map(|o| o.id.clone()),
        target_groups: observed.target_groups.iter().map(|t| (t.spec.name.clone(), t.id.clone())).collect(),
        listeners: observed.listeners.iter().map(|l| (l.spec.port, l.id.clone())).collect(),
    };
    if let Err(e) = deploy::execute(&ctx.io, &stack_id, &steps, &built.stack.listeners, &mut resolved).await {
        let msg = format!("{e} (the next attempt re-reads AWS and continues from what exists)");
        ctx.io.base.event(&report::reference(svc), true, report::FAILED_DEPLOY, msg).await;
        return Err(e);
    }
    let groups = &built.stack.load_balancer.security_groups;
    let extra_steps = match extras::apply(&ctx.io, &built.extras, groups, &observed, &resolved).await {
        Ok(done) => done,
        Err(e) => {
            let msg = format!("{e} (the next attempt re-reads AWS and continues from what exists)");
            ctx.io.base.event(&report::reference(svc), true, report::FAILED_DEPLOY, msg).await;
            return Err(e);
        }
    };
    if let Some(id) = &resolved.frontend_security_group {
        built.resolve_frontend_security_group(id);
    }
    bindings::sync(&ctx.io, &binding_owner(svc), &built.bindings, &resolved.target_groups).await?;
    metrics.reconcile_stage(CONTROLLER, "deploy_model", stage);
    if let Some(dns) = &resolved.dns_name {
        let stage = std::time::Instant::now();
        report::set_hostname(ctx, svc, Some(dns)).await?;
        metrics.reconcile_stage(CONTROLLER, "update_status", stage);
    }
    if !steps.is_empty() || !extra_steps.is_empty() {
        let done: Vec<String> = steps.iter().map(Step::summary).chain(extra_steps).collect();
        let msg = format!("load balancer {} in sync: {}", built.stack.load_balancer.name, done.join("; "));
        ctx.io.base.event(&report::reference(svc), false, "SuccessfullyReconciled", report::truncate_list(msg)).await;
    }
    report::clear_warnings(ctx, svc);
    Ok(Action::requeue(jittered(ctx.cfg.sync_period)))
}

/// Stand-in for the backend group's ID while it does not exist yet (see `reconcile_inner`).
const BACKEND_SG_PENDING: &str = "<backend-security-group-to-create>";

/// Subnets, VPC CIDRs, the existing load balancer and named security groups → the builder's
/// context. `Ok(Err(message))`: the Service cannot be built as it stands (reported, no AWS write).
async fn build_context(
    ctx: &ServiceCtx,
    svc: &Service,
    settings: &NlbSettings,
    observed: &lbc_model::lb::diff::ObservedStack,
) -> Result<std::result::Result<BuildContext, String>> {
    let mut c = BuildContext::new(&ctx.cfg.cluster_name, &ctx.cfg.vpc_id);
    c.default_tags = ctx.cfg.default_tags.clone();
    c.default_scheme = ctx.cfg.default_scheme;
    c.manage_frontend_security_groups = ctx.cfg.gates.nlb_security_group;
    c.enable_tcp_udp_listener = ctx.cfg.gates.tcp_udp_listener;
    c.backend_security_group = match (ctx.backend_sg.existing().await?, ctx.backend_sg.mode()) {
        (None, BackendSgMode::Auto) => Some(BACKEND_SG_PENDING.to_string()),
        (id, _) => id,
    };
    c.external_managed_tags = ctx.cfg.external_managed_tags.clone();
    c.vpc_cidrs = ctx.io.base.vpc_cidrs(&ctx.cfg.vpc_id).await?.to_strings();
    c.ipv6_available = c.vpc_cidrs.iter().any(|s| s.contains(':'));
    c.existing = observed.load_balancer.as_ref().map(|(o, _)| ExistingLoadBalancer {
        scheme: o.spec.scheme,
        has_security_groups: !o.spec.security_groups.is_empty(),
    });

    let raw =
        svc.annotations().get(&format!("{}/{}", lbc_model::service::keys::PREFIX, lbc_model::service::keys::SUBNETS));
    let selector = SubnetSelector::from_annotation(raw.map(String::as_str));
    let scheme = settings.scheme.or(c.existing.map(|e| e.scheme)).unwrap_or(c.default_scheme);
    let need = SubnetNeed { scheme, min_azs: 1, annotation: "service.beta.kubernetes.io/aws-load-balancer-subnets" };
    c.subnets = match crate::stack::subnets(&ctx.io, &selector, &need).await? {
        Ok(s) => s,
        Err(e) => return Ok(Err(e)),
    };

    let names: Vec<String> = settings
        .security_groups
        .iter()
        .flatten()
        .filter_map(|g| match g {
            SecurityGroupSelector::Name(n) => Some(n.clone()),
            SecurityGroupSelector::Id(_) => None,
        })
        .collect();
    if !names.is_empty() {
        let annotation = "service.beta.kubernetes.io/aws-load-balancer-security-groups";
        c.custom_security_group_ids = match crate::stack::security_groups_by_name(&ctx.io, &names, annotation).await? {
            Ok(ids) => ids,
            Err(e) => return Ok(Err(e)),
        };
    }
    Ok(Ok(c))
}

/// Per-Service backoff, capped like the binding controller's.
fn error_policy(svc: Arc<Service>, err: &Error, ctx: Arc<ServiceCtx>) -> Action {
    let key = ObjectRef::from_obj(svc.as_ref());
    if err.is_not_leader() {
        return Action::await_change();
    }
    let (failures, delay) = ctx.backoff.failed(&ctx.io.base, CONTROLLER, &key, err);
    tracing::warn!(service = %key, error = %err, category = err.category(), failures, retry_in = ?delay, "Service reconcile failed");
    Action::requeue(delay)
}
