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
#[cfg(test)]
mod tests;

use crate::backend_sg::BackendSecurityGroup;
use crate::backoff::PerKey;
use crate::context::Context;
use crate::error::{Error, Result, Retry};
use crate::stack::bindings::BindingOwner;
use crate::stack::pipeline::{Pipeline, deploy};
use crate::stack::{Adapters, FAILED_BUILD, Reporter, StackIo, StackOwner};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ObjectReference, Service};
use kube::runtime::controller::{Action, Config, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use lbc_model::lb::Tags;
use lbc_model::lb::backend_sg::BackendSgMode;
use lbc_model::lb::build::{BuildContext, BuildError, BuiltStack, ContextNeeds, ExistingLoadBalancer};
use lbc_model::lb::tags::SERVICE_TAG_PREFIX;
use lbc_model::service::{
    Membership, NlbSettings, SelectConfig, Selection, build_stack, membership, parse_annotations,
};
use lbc_model::tenancy::Verdict;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tracing::Instrument;

pub const CONTROLLER: &str = "service";
pub use lbc_model::service::keys::SERVICE_FINALIZER;

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
    backoff: PerKey<ObjectRef<Service>>,
}

impl ServiceCtx {
    pub fn new(base: Arc<Context>, aws: &Adapters, cfg: ServiceConfig, backend_sg: Arc<BackendSecurityGroup>) -> Self {
        // NLBs have no web ACLs; `wafv2` only matters to Ingresses.
        let options = crate::stack::StackOptions {
            cluster_tag_check: cfg.gates.subnets_cluster_tag_check,
            wafv2: true,
            waf_classic: true,
            shield: true,
            subnet_reachability: cfg.gates.subnet_discovery_by_reachability,
        };
        let io = StackIo::new(base, aws, &cfg.cluster_name, &cfg.vpc_id, SERVICE_TAG_PREFIX, options);
        Self {
            io,
            backend_sg,
            reporter: Reporter::default(),
            backoff: PerKey::new(crate::backoff::reconcile(cfg.max_backoff)),
            cfg,
        }
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
        .reconcile_on(crate::tgb::queued(UnboundedReceiverStream::new(rx), ctx.io.base.clone(), CONTROLLER))
        .graceful_shutdown_on(stop)
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|res| {
            // Failed reconciles are logged by `error_policy`.
            if let Err(kube::runtime::controller::Error::ObjectNotFound(r)) = res {
                tracing::debug!(service = %r, "Service gone before its reconcile");
            }
            futures::future::ready(())
        })
        .await;
    ctx.io.base.triggers.set_service_sender(None);
}

async fn reconcile(svc: Arc<Service>, ctx: Arc<ServiceCtx>) -> Result<Action> {
    let leader = ctx.io.base.is_leader();
    // Pairs with the wake-up lines of `crate::stores`: a trigger sent and never run shows here.
    tracing::debug!(service = %ObjectRef::from_obj(svc.as_ref()), leader, "Service reconcile triggered");
    if !leader {
        return Ok(Action::await_change());
    }
    let timer =
        ctx.io.base.metrics.reconcile_started(CONTROLLER, &svc.namespace().unwrap_or_default(), &svc.name_any());
    let pass = reconcile_inner(&svc, &ctx).instrument(timer.span());
    let res = ctx.io.base.metrics.recover_panics(CONTROLLER, pass).await;
    let res = crate::stack::settle(&ctx.reporter, &ctx.io.base, &[reference(&svc)], ctx.cfg.sync_period, res).await;
    let res = res.map(|next| next.map_or_else(Action::await_change, Action::requeue));
    if !res.as_ref().is_err_and(Error::is_not_leader) {
        timer.done(crate::metrics::ReconcileResult::of(&res));
    }
    if res.is_ok() {
        ctx.backoff.succeeded(&ObjectRef::from_obj(svc.as_ref()));
    }
    res
}

fn reference(svc: &Service) -> ObjectReference {
    svc.object_ref(&())
}

/// One pass; `Ok(Some(d))`: look again after `d` (drift), `Ok(None)`: only on change.
async fn reconcile_inner(svc: &Service, ctx: &ServiceCtx) -> Result<Option<Duration>> {
    let ours = svc.finalizers().iter().any(|f| f == SERVICE_FINALIZER);
    let blocked = |event, reason: &str| Error::Blocked { event, reason: reason.to_string(), retry: Retry::OnChange };
    let selection = match membership(svc, &ctx.cfg.select, ours) {
        Membership::Member(s) => s,
        Membership::Out if ours => return cleanup::cleanup(ctx, svc).await,
        Membership::Out => return Ok(None),
        // The flag is fixed by a restart, which looks at every Service again.
        Membership::Frozen { reason } => return Err(blocked("Frozen", &reason)),
    };
    if let Selection::InvalidTargetType { message } = &selection {
        return Err(blocked("InvalidTargetType", message));
    }
    let settings = parse_annotations(&svc.annotations().clone())
        .map_err(|errors| blocked(FAILED_BUILD, &format!("invalid annotations, nothing changed in AWS: {errors}")))?;
    ctx.reporter.warn_list_once(&ctx.io.base, &reference(svc), "UnsupportedAnnotation", &settings.warnings()).await;
    let mut closed = settings.fail_closed();
    let ns = svc.namespace().unwrap_or_default();
    for v in lbc_model::service::actions::tenancy_verdicts(
        &ctx.io.base.cfg.tenancy,
        &ns,
        &svc.name_any(),
        &settings.forwards,
    ) {
        match v {
            Verdict::Refused(r) => closed.push(r.detail),
            Verdict::Exposed(e) => tracing::debug!(kind = e.kind, detail = %e.detail, "tenancy exposure"),
            Verdict::Allowed => {}
        }
    }
    if !closed.is_empty() {
        return Err(blocked(FAILED_BUILD, &format!("nothing changed in AWS: {}", closed.join("; "))));
    }
    if !crate::stack::set_finalizer(&ctx.io.base, svc, SERVICE_FINALIZER, true).await? {
        return Ok(None);
    }
    let pipeline = Pipeline {
        io: &ctx.io,
        backend_sg: &ctx.backend_sg,
        reporter: &ctx.reporter,
        controller: CONTROLLER,
        external_managed_tags: &ctx.cfg.external_managed_tags,
        enhanced_defaults: ctx.cfg.gates.enhanced_default_behavior,
    };
    deploy(&pipeline, &ServiceOwner { svc, settings: &settings, ctx }).await?;
    Ok(Some(crate::context::jittered(ctx.cfg.sync_period)))
}

/// A Service as the owner of its stack.
struct ServiceOwner<'a> {
    svc: &'a Service,
    settings: &'a NlbSettings,
    ctx: &'a ServiceCtx,
}

impl StackOwner for ServiceOwner<'_> {
    fn subject(&self) -> Option<String> {
        None
    }

    fn stack_id(&self) -> String {
        stack_id(self.svc)
    }

    fn objects(&self) -> Vec<ObjectReference> {
        vec![reference(self.svc)]
    }

    fn binding_owner(&self) -> BindingOwner {
        binding_owner(self.svc)
    }

    fn base_context(&self) -> BuildContext {
        let cfg = &self.ctx.cfg;
        let mut c = BuildContext::new(&cfg.cluster_name, &cfg.vpc_id);
        c.default_tags = cfg.default_tags.clone();
        c.default_tags_low_priority = cfg.gates.default_tags_low_priority;
        c.default_scheme = cfg.default_scheme;
        c.manage_frontend_security_groups = cfg.gates.nlb_security_group;
        c.enable_tcp_udp_listener = cfg.gates.tcp_udp_listener;
        c.external_managed_tags = cfg.external_managed_tags.clone();
        c.default_target_type = cfg.select.default_target_type;
        // The other Services `actions.*` forwards to, from the cache (their changes wake this one).
        let ns = self.svc.namespace().unwrap_or_default();
        for name in lbc_model::service::actions::service_names(self.settings.forwards.values()) {
            if let Some(s) = self.ctx.io.base.stores.service(&ns, &name) {
                c.backend_services.insert(name, s.as_ref().clone());
            }
        }
        c
    }

    fn context_needs(&self, existing: Option<ExistingLoadBalancer>) -> ContextNeeds {
        lbc_model::service::context_needs(self.svc, self.settings, existing, self.ctx.cfg.default_scheme)
    }

    fn build(&self, c: &BuildContext) -> std::result::Result<BuiltStack, BuildError> {
        build_stack(self.svc, self.settings, c)
    }

    fn status_stage(&self) -> &'static str {
        "update_status"
    }

    /// Only a known DNS name is written (a Service's status is cleared by its cleanup), and only on
    /// a `type: LoadBalancer` Service: the API server refuses `status.loadBalancer` on the others
    /// (which get an NLB with gate `ServiceTypeLoadBalancerOnly` off, as in ALBC).
    async fn set_hostname(&self, base: &Context, hostnames: &[&str]) -> Result<()> {
        if self.svc.spec.as_ref().and_then(|s| s.type_.as_deref()) != Some("LoadBalancer") {
            return Ok(());
        }
        match hostnames.first() {
            Some(h) => crate::stack::set_hostname(base, self.svc, &[h]).await,
            None => Ok(()),
        }
    }
}

/// Per-Service backoff, capped like the binding controller's.
fn error_policy(svc: Arc<Service>, err: &Error, ctx: Arc<ServiceCtx>) -> Action {
    let key = ObjectRef::from_obj(svc.as_ref());
    if err.is_not_leader() {
        return Action::await_change();
    }
    ctx.io.base.metrics.reconcile_failed(CONTROLLER, err.category());
    let (failures, delay) = ctx.backoff.failed(&key);
    tracing::warn!(service = %key, error = %err, category = err.category(), failures, retry_in = ?delay, "Service reconcile failed");
    Action::requeue(delay)
}
