//! One pass over a Gateway of ours: the finalizer → the cluster snapshot (routes, grants,
//! Services, namespace labels from the caches) → `lbc_model::gateway::alb_gateway::plan` → the
//! shared stack pipeline (observe AWS by `gateway.k8s.aws.alb/stack=<namespace>/<name>`, build,
//! plan, execute, bindings) → the state of the ALB → the status of the Gateway and of every route
//! that names it.
//!
//! A Gateway that cannot be built as it stands changes nothing in AWS: its `Programmed` condition
//! and a Warning event say why. A Gateway being deleted, or moved to another controller's class,
//! loses its ALB (bindings first, then the stack) and then its finalizer; a Gateway whose class is
//! gone is frozen (a cluster-level mistake never deletes).

use super::status;
use super::{GatewayCtx, ours};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::stack::bindings::{self, BindingOwner};
use crate::stack::pipeline::{Pipeline, deploy};
use crate::stack::{Deleted, StackOwner, delete_stack, set_finalizer};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use lbc_model::gateway::alb_gateway::{
    self, ALB_GATEWAY_FINALIZER, ALB_GATEWAY_TAG_PREFIX, GatewayPlan, PlanConfig, Snapshot,
};
use lbc_model::gateway::api::{Gateway, GatewayClass};
use lbc_model::gateway::api::{grant, parent_refs};
use lbc_model::gateway::certificates::secret_refs;
use lbc_model::gateway::conditions::{CondStatus, PROGRAMMED};
use lbc_model::gateway::status::LbState;
use lbc_model::ingress::{BackendSettings, ServiceView};
use lbc_model::lb::build::{BuildContext, BuildError, BuiltStack, ContextNeeds, ExistingLoadBalancer};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

/// How soon a Gateway whose ALB is still provisioning is looked at again.
const PROVISIONING_RETRY: Duration = Duration::from_secs(10);
/// Event reason of a Gateway frozen because its GatewayClass is gone.
const CLASS_MISSING: &str = "GatewayClassMissing";

pub(super) fn reference(gw: &Gateway) -> ObjectReference {
    gw.object_ref(&())
}

fn binding_owner(gw: &Gateway) -> BindingOwner {
    BindingOwner::new(ALB_GATEWAY_TAG_PREFIX, Some(&gw.namespace().unwrap_or_default()), &gw.name_any(), None)
}

fn stack_id(gw: &Gateway) -> String {
    format!("{}/{}", gw.namespace().unwrap_or_default(), gw.name_any())
}

/// One pass over Gateway `namespace/name`; the delay before the next one (`None`: on change).
pub async fn reconcile(ctx: &GatewayCtx, namespace: &str, name: &str) -> Result<Option<Duration>> {
    let s = ctx.stores();
    let Some(gw) = s.gateways.get(&ObjectRef::new(name).within(namespace)) else { return Ok(None) };
    let holds = gw.finalizers().iter().any(|f| f == ALB_GATEWAY_FINALIZER);
    let deleting = gw.metadata.deletion_timestamp.is_some();
    let class = s.classes.get(&ObjectRef::new(&gw.spec.gateway_class_name));
    let objects = [reference(&gw)];
    match class {
        // Deleting the Gateway is the user's own word for this object, whatever its class.
        _ if deleting => match holds {
            true => teardown(ctx, &gw).await,
            false => Ok(None),
        },
        None if holds => {
            let msg = format!(
                "GatewayClass {} is gone; the ALB of Gateway {} is left as it is (a missing class never deletes a \
                 load balancer). Create the class again to resume, or delete the Gateway to delete its ALB",
                gw.spec.gateway_class_name,
                stack_id(&gw)
            );
            ctx.reporter.warn_once(&ctx.io.base, &objects[0], CLASS_MISSING, &msg).await;
            Ok(None)
        }
        None => Ok(None),
        Some(c) if !ours(&c.spec.controller_name) => match holds {
            true => teardown(ctx, &gw).await,
            false => Ok(None),
        },
        Some(c) => {
            ctx.reporter.forget(&objects[0], CLASS_MISSING);
            let res = build_and_deploy(ctx, &gw, &c).await;
            crate::stack::settle(&ctx.reporter, &ctx.io.base, &objects, ctx.cfg.sync_period, res).await
        }
    }
}

async fn build_and_deploy(ctx: &GatewayCtx, gw: &Gateway, class: &GatewayClass) -> Result<Option<Duration>> {
    if !set_finalizer(&ctx.io.base, gw, ALB_GATEWAY_FINALIZER, true).await? {
        return Ok(None);
    }
    let plan = plan_of(ctx, gw, class);
    let owner = GatewayOwner {
        ctx,
        gw,
        plan: &plan,
        certificate_arns: Mutex::default(),
        lb_name: Mutex::default(),
        hostnames: Mutex::default(),
    };
    let pipeline = Pipeline {
        io: &ctx.io,
        backend_sg: &ctx.backend_sg,
        reporter: &ctx.reporter,
        controller: super::CONTROLLER,
        external_managed_tags: &ctx.cfg.external_managed_tags,
        enhanced_defaults: ctx.cfg.enhanced_defaults,
    };
    let (cluster, stack) = (&ctx.cfg.cluster_name, stack_id(gw));
    let wanted = plan.wanted_certificates();
    // Without Secrets read, nothing is imported and ACM is not asked.
    let imports = ctx.stores().secrets.is_some();
    let deployed = async {
        if imports {
            let arns = ctx.imports.ensure(&ctx.io.base, cluster, &stack, &wanted).await?;
            *owner.certificate_arns.lock().expect("certificate arns") = arns;
        }
        deploy(&pipeline, &owner).await?;
        // The listeners use only the wanted certificates now.
        match imports {
            true => ctx.imports.delete_leftovers(&ctx.io.base, cluster, &stack, &wanted).await.map(|_| ()),
            false => Ok(()),
        }
    }
    .await;
    let lb = match &deployed {
        Ok(()) => load_balancer_state(ctx, gw, &owner).await?,
        Err(Error::Blocked { reason, .. }) => LbState::Failed(reason.clone()),
        Err(e) => LbState::Failed(format!("{e} (the next attempt re-reads AWS and continues from what exists)")),
    };
    status::gateway(ctx, gw, &plan, &lb).await?;
    status::routes(ctx, gw, &plan).await?;
    deployed?;
    Ok(Some(match lb {
        LbState::Provisioning => PROVISIONING_RETRY,
        _ => crate::context::jittered(ctx.cfg.sync_period),
    }))
}

/// The Gateway's plan from the caches.
fn plan_of(ctx: &GatewayCtx, gw: &Gateway, class: &GatewayClass) -> GatewayPlan {
    let s = ctx.stores();
    let base = &ctx.io.base.stores;
    let http_routes = s.http_routes.state();
    let grpc_routes = s.grpc_routes.state();
    let grants: Vec<_> = s.grants.state().iter().map(|g| grant(g)).collect();
    // The Services the routes naming this Gateway send to.
    let (gns, gname) = (gw.namespace().unwrap_or_default(), gw.name_any());
    let mut services = BTreeMap::new();
    for r in &http_routes {
        let rns = r.namespace().unwrap_or_default();
        if !parent_refs(&rns, &r.spec.parent_refs).iter().any(|p| p.is_gateway(&gns, &gname)) {
            continue;
        }
        for b in r.spec.rules.iter().flat_map(|x| &x.backend_refs) {
            let ns = b.namespace.clone().unwrap_or_else(|| rns.clone());
            if let Some(svc) = base.service(&ns, &b.name) {
                services.insert((ns, b.name.clone()), ServiceView::from_service(&svc, BackendSettings::default()));
            }
        }
    }
    // The TLS Secrets its listeners name (`None`: Secrets are not read).
    let secrets = s.secrets.as_ref().map(|store| {
        let mut found = BTreeMap::new();
        for (ns, name) in gw.spec.listeners.iter().flat_map(|l| secret_refs(&gns, l)) {
            if let Some(secret) = store.get(&ObjectRef::new(&name).within(&ns)) {
                found.insert((ns, name), super::stores::secret_data(&secret));
            }
        }
        found
    });
    let labels = |ns: &str| base.namespace_labels(ns);
    let snapshot = Snapshot {
        gateway: gw,
        class_parameters: class.spec.parameters_ref.as_ref(),
        routes: http_routes.iter().map(|r| r.as_ref()).collect(),
        grpc_routes: grpc_routes.iter().map(|r| r.as_ref()).collect(),
        grants: &grants,
        services: &services,
        secrets: secrets.as_ref(),
        namespace_labels: &labels,
    };
    let cfg =
        PlanConfig { cluster_name: ctx.cfg.cluster_name.clone(), default_target_type: ctx.cfg.default_target_type };
    alb_gateway::plan(&snapshot, &cfg)
}

/// The ALB's state after a deploy: what the Gateway's status already says when it names the same
/// DNS name as serving (no AWS call), else one DescribeLoadBalancers by name.
async fn load_balancer_state(ctx: &GatewayCtx, gw: &Gateway, owner: &GatewayOwner<'_>) -> Result<LbState> {
    let Some(dns) = owner.hostnames.lock().expect("hostnames").first().cloned() else {
        return Ok(LbState::Provisioning);
    };
    let st = gw.status.as_ref();
    let programmed = st
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == PROGRAMMED))
        .filter(|c| c.status == CondStatus::True.as_str());
    let same_address = st.is_some_and(|s| s.addresses.iter().any(|a| a.value == dns.to_ascii_lowercase()));
    if let (Some(c), true) = (programmed, same_address) {
        return Ok(LbState::Active { arn: c.message.clone(), dns_name: dns });
    }
    let Some(name) = owner.lb_name.lock().expect("lb name").clone() else { return Ok(LbState::Provisioning) };
    Ok(match ctx.io.lbs.load_balancer_by_name(&name).await? {
        None => LbState::Provisioning,
        Some(found) => match found.status.state.as_str() {
            "active" | "active_impaired" => LbState::Active { arn: found.lb.id, dns_name: found.status.dns_name },
            "provisioning" => LbState::Provisioning,
            other => LbState::Failed(format!("load balancer {name} is {other} in AWS")),
        },
    })
}

/// Bindings, then the stack, then our status entries on routes, then the finalizer.
async fn teardown(ctx: &GatewayCtx, gw: &Gateway) -> Result<Option<Duration>> {
    let io = &ctx.io;
    if !bindings::delete_all(io, &binding_owner(gw)).await? {
        // Their finalizers are deregistering targets; come back when the cache shows them gone.
        return Ok(Some(Duration::from_secs(2)));
    }
    let changes = match delete_stack(io, &stack_id(gw)).await? {
        Deleted::Done { changes } => changes,
        Deleted::Waiting => return Ok(Some(Duration::from_secs(10))),
        Deleted::Protected { load_balancer } => {
            let msg = format!(
                "load balancer {load_balancer} has deletion_protection.enabled=true; turn it off in AWS to let the \
                 controller delete it; the Gateway keeps its finalizer until then"
            );
            ctx.reporter.warn_once(&io.base, &reference(gw), "DeletionProtected", &msg).await;
            return Ok(Some(crate::context::jittered(ctx.cfg.sync_period)));
        }
    };
    let in_use = match ctx.stores().secrets.is_some() {
        true => ctx.imports.delete_leftovers(&io.base, &ctx.cfg.cluster_name, &stack_id(gw), &[]).await?.1,
        false => Vec::new(),
    };
    if !in_use.is_empty() {
        // ACM reports a certificate in use for a while after its load balancer is gone.
        return Ok(Some(Duration::from_secs(10)));
    }
    status::forget_routes(ctx, gw).await?;
    set_finalizer(&io.base, gw, ALB_GATEWAY_FINALIZER, false).await?;
    release_backend_security_group(ctx, gw);
    if changes > 0 {
        let msg = format!("deleted the ALB stack of this Gateway ({changes} AWS changes)");
        io.base.event(&reference(gw), false, "SuccessfullyDeleted", msg).await;
    }
    Ok(None)
}

/// The shared backend group may go once nothing of ours holds a load-balancer finalizer.
fn release_backend_security_group(ctx: &GatewayCtx, gw: &Gateway) {
    let (base, uid, mode) = (ctx.io.base.clone(), gw.uid(), ctx.backend_sg.mode().clone());
    ctx.backend_sg.release_when_unused(move || {
        let holders = crate::stack::finalizer_holders(&base.stores, &uid.iter().cloned().collect::<Vec<_>>());
        !base.is_leader() || !lbc_model::lb::backend_sg::release_allowed(&mode, holders.into_iter())
    });
}

/// A Gateway as the owner of its stack.
struct GatewayOwner<'a> {
    ctx: &'a GatewayCtx,
    gw: &'a Gateway,
    plan: &'a GatewayPlan,
    /// The ACM ARN of each Secret the HTTPS listeners use.
    certificate_arns: Mutex<BTreeMap<String, String>>,
    /// The ALB's name, known once built.
    lb_name: Mutex<Option<String>>,
    /// The ALB's DNS name once deployed.
    hostnames: Mutex<Vec<String>>,
}

impl StackOwner for GatewayOwner<'_> {
    fn subject(&self) -> Option<String> {
        None
    }

    fn stack_id(&self) -> String {
        stack_id(self.gw)
    }

    fn objects(&self) -> Vec<ObjectReference> {
        vec![reference(self.gw)]
    }

    fn binding_owner(&self) -> BindingOwner {
        binding_owner(self.gw)
    }

    fn base_context(&self) -> BuildContext {
        let cfg = &self.ctx.cfg;
        let mut c = BuildContext::new(cfg.cluster_name.clone(), cfg.vpc_id.clone());
        c.default_tags = cfg.default_tags.clone();
        c.default_tags_low_priority = cfg.default_tags_low_priority;
        c.external_managed_tags = cfg.external_managed_tags.clone();
        c.default_target_type = cfg.default_target_type;
        c.default_scheme = cfg.default_scheme;
        c
    }

    fn context_needs(&self, _existing: Option<ExistingLoadBalancer>) -> ContextNeeds {
        alb_gateway::context_needs(self.ctx.cfg.default_scheme)
    }

    fn build(&self, c: &BuildContext) -> std::result::Result<BuiltStack, BuildError> {
        let built = alb_gateway::build(self.plan, c, &self.certificate_arns.lock().expect("certificate arns"))?;
        *self.lb_name.lock().expect("lb name") = Some(built.stack.load_balancer.name.clone());
        Ok(built)
    }

    fn status_stage(&self) -> &'static str {
        "gateway_status"
    }

    async fn set_hostname(&self, _base: &Context, hostnames: &[&str]) -> Result<()> {
        // Written with the rest of the Gateway's status once the ALB's state is known.
        *self.hostnames.lock().expect("hostnames") = hostnames.iter().map(|h| h.to_string()).collect();
        Ok(())
    }
}

/// For the stores' backend-group check: Gateways holding our finalizer.
pub(crate) fn finalizer_holders(s: &super::stores::GatewayStores, except: &[String]) -> Vec<bool> {
    s.gateways
        .state()
        .iter()
        .filter(|g| !g.uid().is_some_and(|u| except.contains(&u)))
        .map(|g| g.finalizers().iter().any(|f| f == ALB_GATEWAY_FINALIZER))
        .collect()
}
