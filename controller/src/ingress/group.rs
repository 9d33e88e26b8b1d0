//! One pass over an IngressGroup.
//!
//! Members (select → annotations → IngressClassParams → group, in `group.order`) → exclusive
//! conflicts → finalizers → backend Services from the cache → `plan_group` → the OIDC Secrets the
//! plan names (one GET each) → subnets (two AZs)
//! and the shared backend security group → `build_group_stack` → observe AWS by the tags
//! `elbv2.k8s.aws/cluster` + `ingress.k8s.aws/stack=<group>` → `plan` (rules included) →
//! execute → TargetGroupBindings → `status.loadBalancer` on every member → events. Ingresses that
//! hold the group's finalizer but are no longer members (deleted, moved, not ours) lose it once
//! the ALB no longer routes to them; with no member left the whole stack is deleted first.
//!
//! Invalid input (annotations, conflicts, build errors) is a Warning event on the members and
//! changes nothing in AWS. So is a frozen group (a holder's IngressClass or IngressClassParams
//! gone or no longer selecting it: `lbc_model::ingress::membership`), which is never deleted for
//! it, and a replacement of the load balancer that members of another namespace did not ask for
//! (`lbc_model::ingress::replacement_veto`): the whole group waits, since its plan was made for
//! the replaced load balancer.

use super::k8s::{self, add_finalizer, remove_finalizer, set_hostname};
use super::{IngressCtx, Looked, finalizer_groups, look};
use crate::context::jittered;
use crate::error::{Error, Result};
use crate::stack::bindings::{self, BindingOwner};
use crate::stack::{Deleted, FAILED_BUILD, FAILED_DEPLOY, SubnetNeed, delete_stack, deploy, extras, observe};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::networking::v1::Ingress;
use kube::{Resource, ResourceExt};
use lbc_model::ingress::keys as k;
use lbc_model::ingress::oidc;
use lbc_model::ingress::{
    BuildContext, Candidate, GroupId, IngressKey, Member, MergeConfig, ServiceView, Services, build_group_stack,
    certificate_discovery_hosts, conflicts, group_of, members, parse_service_annotations, plan_group, replacement_veto,
};
use lbc_model::lb::backend_sg::{BackendSgMode, release_allowed};
use lbc_model::lb::diff::{ObservedStack, PlanOptions, Step, plan};
use lbc_model::lb::subnets::SubnetSelector;
use lbc_model::lb::tags::INGRESS_TAG_PREFIX;
use std::sync::Arc;
use std::time::Duration;

/// How soon a group blocked by a missing or incomplete OIDC Secret looks again (Secrets are not
/// watched; one GET per pass).
const SECRET_RETRY: Duration = Duration::from_secs(60);

/// Stand-in for the backend group's ID while it does not exist yet (built twice, like Services).
const BACKEND_SG_PENDING: &str = "<backend-security-group-to-create>";

fn reference(ing: &Ingress) -> ObjectReference {
    ing.object_ref(&())
}

fn key_of(ing: &Ingress) -> IngressKey {
    IngressKey { namespace: ing.namespace().unwrap_or_default(), name: ing.name_any() }
}

/// The group's bindings carry ALBC's stack labels (no owner: a group spans namespaces).
pub(super) fn binding_owner(g: &GroupId) -> BindingOwner {
    match g {
        GroupId::Explicit(name) => BindingOwner::new(INGRESS_TAG_PREFIX, None, name, None),
        GroupId::Implicit { namespace, name } => BindingOwner::new(INGRESS_TAG_PREFIX, Some(namespace), name, None),
    }
}

/// The Ingresses of one pass.
struct Gathered {
    /// Members in group order, with their Ingress.
    members: Vec<(Arc<Ingress>, Candidate)>,
    /// Ingresses holding the group's finalizer.
    holders: Vec<Arc<Ingress>>,
    /// Ingresses of (or held by) the group whose annotations do not parse, with the errors.
    invalid: Vec<(Arc<Ingress>, String)>,
    /// Holders whose class or params are gone, with the reason: the group is frozen.
    frozen: Vec<(Arc<Ingress>, String)>,
}

async fn gather(ctx: &IngressCtx, g: &GroupId) -> Gathered {
    let classes = super::classes(&ctx.io.base.stores);
    let mut candidates = Vec::new();
    let mut by_key = std::collections::BTreeMap::new();
    let (mut holders, mut invalid, mut frozen) = (Vec::new(), Vec::new(), Vec::new());
    for ing in ctx.io.base.stores.ingresses.state() {
        let holds = finalizer_groups(&ing).contains(g);
        let implicit = GroupId::Implicit { namespace: ing.namespace().unwrap_or_default(), name: ing.name_any() };
        match look(&ing, &classes, &ctx.cfg.select) {
            Looked::Ours(c) if group_of(&c).as_ref() == Some(g) => {
                by_key.insert((c.namespace.clone(), c.name.clone()), ing.clone());
                candidates.push(*c);
            }
            Looked::Invalid(msg) if holds || implicit == *g => invalid.push((ing.clone(), msg)),
            Looked::Frozen(reason) if holds => frozen.push((ing.clone(), reason)),
            Looked::NotOurs(Some(reason)) if holds || implicit == *g => {
                let msg = format!("{reason}; this Ingress is left out of its IngressGroup");
                ctx.reporter.warn_once(&ctx.io.base, &reference(&ing), "InvalidIngressClass", &msg).await;
            }
            _ => {}
        }
        if holds {
            holders.push(ing);
        }
    }
    let members = members(g, &candidates)
        .into_iter()
        .map(|c| (by_key[&(c.namespace.clone(), c.name.clone())].clone(), c.clone()))
        .collect();
    Gathered { members, holders, invalid, frozen }
}

async fn warn_all(ctx: &IngressCtx, ings: &[&Ingress], reason: &str, msg: &str) {
    for ing in ings {
        ctx.reporter.warn_once(&ctx.io.base, &reference(ing), reason, msg).await;
    }
}

/// One pass; `Ok(Some(d))`: look again after `d` (drift), `Ok(None)`: only on change.
pub(super) async fn reconcile(ctx: &IngressCtx, g: &GroupId) -> Result<Option<Duration>> {
    let stack_id = g.stack_id();
    let gathered = gather(ctx, g).await;
    let member_ings: Vec<&Ingress> = gathered.members.iter().map(|(i, _)| i.as_ref()).collect();
    if !gathered.frozen.is_empty() {
        freeze(ctx, g, &gathered).await;
        return Ok(Some(jittered(ctx.cfg.sync_period)));
    }
    if !gathered.invalid.is_empty() {
        let all: Vec<String> = gathered.invalid.iter().map(|(i, m)| format!("Ingress {}: {m}", key_of(i))).collect();
        let msg = format!("IngressGroup {stack_id}: invalid settings, nothing changed in AWS: {}", all.join("; "));
        let mut concerned: Vec<&Ingress> = gathered.invalid.iter().map(|(i, _)| i.as_ref()).collect();
        concerned.extend(member_ings.iter().copied());
        warn_all(ctx, &concerned, FAILED_BUILD, &crate::stack::truncate_list(msg)).await;
        return Ok(None);
    }
    if gathered.members.is_empty() {
        return delete_group(ctx, g, &gathered.holders).await;
    }

    let cands: Vec<&Candidate> = gathered.members.iter().map(|(_, c)| c).collect();
    let conflicting = conflicts(&cands);
    if !conflicting.is_empty() {
        let list: Vec<String> = conflicting.iter().map(ToString::to_string).collect();
        let msg = format!("IngressGroup {stack_id}: {}; nothing changed in AWS", list.join("; "));
        warn_all(ctx, &member_ings, FAILED_BUILD, &crate::stack::truncate_list(msg)).await;
        return Ok(None);
    }
    let finalizer = g.finalizer();
    for ing in &member_ings {
        add_finalizer(&ctx.io, ing, &finalizer).await?;
    }

    let mut members = Vec::new();
    let mut blocked = Vec::new();
    let mut discovery_retry = None;
    for (ing, c) in &gathered.members {
        let notes: Vec<String> = c
            .settings
            .unsupported
            .iter()
            .map(|u| format!("annotation {} is not applied: {}", u.key, u.reason))
            .chain(c.settings.unknown.iter().map(|u| format!("annotation {u} is unknown and ignored")))
            .collect();
        ctx.reporter.warn_list_once(&ctx.io.base, &reference(ing), "UnsupportedAnnotation", &notes).await;
        let spec = ing.spec.clone().unwrap_or_default();
        let mut discovered_certificates = vec![];
        if let Some(hosts) = certificate_discovery_hosts(&c.settings, &spec) {
            let problem = match ctx.certificates.discover(&hosts).await {
                Ok(Ok(arns)) => {
                    discovered_certificates = arns;
                    None
                }
                Ok(Err(missing)) => Some(missing.to_string()),
                Err(e) if e.kind.retry_later() => return Err(e.into()),
                Err(e) => Some(format!("its ACM certificates cannot be discovered: {e}")),
            };
            if let Some(p) = problem {
                // A certificate is found within a minute of being issued: look again then.
                discovery_retry = Some(jittered(super::certificates::LIST_TTL));
                blocked.push((ing.clone(), format!("Ingress {} listens on HTTPS: {p}", key_of(ing))));
            }
        }
        members.push(Member { key: key_of(ing), settings: c.settings.clone(), spec, discovered_certificates });
    }

    let services = services_of(ctx, &gathered.members, &mut blocked);
    if !blocked.is_empty() {
        for (ing, msg) in &blocked {
            let msg = format!("IngressGroup {stack_id} not deployed, nothing changed in AWS: {msg}");
            ctx.reporter.warn_once(&ctx.io.base, &reference(ing), FAILED_BUILD, &msg).await;
        }
        return Ok(discovery_retry);
    }

    let merge_cfg = MergeConfig { default_ssl_policy: ctx.cfg.default_ssl_policy.clone() };
    let group_plan = match plan_group(&members, &services, &merge_cfg) {
        Ok(p) => p,
        Err(errors) => {
            let list: Vec<String> = errors.iter().map(ToString::to_string).collect();
            let msg = format!("IngressGroup {stack_id}, nothing changed in AWS: {}", list.join("; "));
            warn_all(ctx, &member_ings, FAILED_BUILD, &crate::stack::truncate_list(msg)).await;
            return Ok(None);
        }
    };

    // OIDC client credentials: read now, every pass (Secrets are not watched).
    let oidc_credentials = match k8s::oidc_credentials(
        &ctx.io,
        &oidc::secrets_needed(&group_plan),
        ctx.cfg.required_secrets_label.as_ref(),
    )
    .await?
    {
        Ok(c) => c,
        Err(problems) => {
            let msg = format!("IngressGroup {stack_id}, nothing changed in AWS: {}", problems.join("; "));
            warn_all(ctx, &member_ings, FAILED_BUILD, &crate::stack::truncate_list(msg)).await;
            // Not watched: look again soon, the user is likely creating or fixing the Secret.
            return Ok(Some(SECRET_RETRY.min(ctx.cfg.sync_period)));
        }
    };

    // ALBC's stages, timed where ours has the same work: reading AWS and building the stack
    // (build_model), the AWS writes and the bindings (deploy_model), the members' hostnames
    // (dns_resolve_and_update_status).
    let metrics = &ctx.io.base.metrics;
    let stage = std::time::Instant::now();
    let mut observed = observe::observe(&ctx.io, &stack_id, None).await?;
    let mut build_ctx = match build_context(ctx, &members, &observed).await? {
        Ok(c) => c,
        Err(message) => {
            let msg = format!("IngressGroup {stack_id}, nothing changed in AWS: {message}");
            warn_all(ctx, &member_ings, FAILED_BUILD, &msg).await;
            return Ok(Some(jittered(ctx.cfg.sync_period)));
        }
    };
    build_ctx.oidc_credentials = oidc_credentials;
    let build = |c: &BuildContext| build_group_stack(g, &members, &group_plan, c);
    let mut built = match build(&build_ctx) {
        Ok(b) => b,
        Err(e) => {
            let msg = format!("IngressGroup {stack_id}, nothing changed in AWS: {e}");
            warn_all(ctx, &member_ings, FAILED_BUILD, &crate::stack::truncate_list(msg)).await;
            return Ok(None);
        }
    };
    if built.backend_security_group_used && build_ctx.backend_security_group.as_deref() == Some(BACKEND_SG_PENDING) {
        build_ctx.backend_security_group = ctx.backend_sg.ensure().await?;
        built = build(&build_ctx)
            .map_err(|e| Error::Invalid(format!("stack changed when the backend security group was added: {e}")))?;
    }
    let mut warnings = group_plan.warnings.clone();
    warnings.extend(built.warnings.iter().cloned());
    for ing in &member_ings {
        ctx.reporter.warn_list_once(&ctx.io.base, &reference(ing), "BuildWarning", &warnings).await;
    }
    observed.foreign = observe::foreign(&ctx.io, &built.stack, &observed).await?;

    let opts = PlanOptions { external_managed_tags: ctx.cfg.external_managed_tags.clone() };
    let steps = match plan(&built.stack, &observed, &opts) {
        Ok(s) => s,
        Err(e) => {
            let msg = format!("IngressGroup {stack_id}, nothing changed in AWS: {e}");
            warn_all(ctx, &member_ings, FAILED_DEPLOY, &msg).await;
            return Ok(Some(jittered(ctx.cfg.sync_period)));
        }
    };
    metrics.reconcile_stage(super::CONTROLLER, "build_model", stage);
    let vetoes: Vec<String> = steps
        .iter()
        .filter_map(|s| match s {
            Step::ReplaceLoadBalancer { reason, .. } => replacement_veto(&cands, reason).map(|v| v.to_string()),
            _ => None,
        })
        .collect();
    if !vetoes.is_empty() {
        // The rest of the group waits too: it was built for the replaced load balancer.
        let msg = format!("IngressGroup {stack_id}: {}", vetoes.join("; "));
        warn_all(ctx, &member_ings, REPLACEMENT_REFUSED, &crate::stack::truncate_list(msg)).await;
        return Ok(Some(jittered(ctx.cfg.sync_period)));
    }
    for s in &steps {
        if let Step::ReplaceLoadBalancer { name, reason, .. } = s {
            let msg = format!(
                "load balancer {name} is being deleted and created again because its {reason}; its DNS name will change: \
                 update what points at the old name (external-dns follows the status by itself)"
            );
            for ing in &member_ings {
                ctx.io.base.event(&reference(ing), true, "ReplacingLoadBalancer", msg.clone()).await;
            }
        }
    }

    let stage = std::time::Instant::now();
    let mut resolved = resolved_from(&observed);
    let deployed = match deploy::execute(&ctx.io, &stack_id, &steps, &built.stack.listeners, &mut resolved).await {
        Ok(()) => {
            let groups = &built.stack.load_balancer.security_groups;
            extras::apply(&ctx.io, &built.extras, groups, &observed, &resolved).await
        }
        Err(e) => Err(e),
    };
    let extra_steps = match deployed {
        Ok(done) => done,
        Err(e) => {
            let msg =
                format!("IngressGroup {stack_id}: {e} (the next attempt re-reads AWS and continues from what exists)");
            for ing in &member_ings {
                ctx.io.base.event(&reference(ing), true, FAILED_DEPLOY, msg.clone()).await;
            }
            return Err(e);
        }
    };
    if let Some(id) = &resolved.frontend_security_group {
        built.resolve_frontend_security_group(id);
    }
    bindings::sync(&ctx.io, &binding_owner(g), &built.bindings, &resolved.target_groups).await?;
    metrics.reconcile_stage(super::CONTROLLER, "deploy_model", stage);
    let stage = std::time::Instant::now();
    for ing in &member_ings {
        set_hostname(&ctx.io, ing, resolved.dns_name.as_deref()).await?;
    }
    metrics.reconcile_stage(super::CONTROLLER, "dns_resolve_and_update_status", stage);
    // Former members: the ALB no longer routes to them.
    let member_keys: Vec<IngressKey> = member_ings.iter().map(|i| key_of(i)).collect();
    for ing in gathered.holders.iter().filter(|h| !member_keys.contains(&key_of(h))) {
        release_member(ctx, ing, &finalizer).await?;
    }
    if !steps.is_empty() || !extra_steps.is_empty() {
        let done: Vec<String> = steps.iter().map(Step::summary).chain(extra_steps).collect();
        let msg = format!("load balancer {} in sync: {}", built.stack.load_balancer.name, done.join("; "));
        for ing in &member_ings {
            let note = crate::stack::truncate_list(msg.clone());
            ctx.io.base.event(&reference(ing), false, "SuccessfullyReconciled", note).await;
        }
    }
    let resumed = ctx.frozen.lock().expect("frozen groups").remove(g);
    for ing in &member_ings {
        ctx.reporter.clear_failures(&reference(ing));
        ctx.reporter.forget(&reference(ing), GROUP_FROZEN);
        ctx.reporter.forget(&reference(ing), REPLACEMENT_REFUSED);
        if resumed {
            let msg = format!("IngressGroup {stack_id} resumed: every member's IngressClass is usable again");
            ctx.io.base.event(&reference(ing), false, "GroupResumed", msg).await;
        }
    }
    Ok(Some(jittered(ctx.cfg.sync_period)))
}

/// Event reason of a frozen group's Warnings.
const GROUP_FROZEN: &str = "GroupFrozen";
/// Event reason of a replacement members of another namespace did not ask for.
const REPLACEMENT_REFUSED: &str = "ReplacementRefused";

/// A holder's class or params are gone: a Warning on every Ingress of the group and on the
/// classes they name (when they exist); nothing else is written, in AWS or on the Ingresses.
async fn freeze(ctx: &IngressCtx, g: &GroupId, gathered: &Gathered) {
    ctx.frozen.lock().expect("frozen groups").insert(g.clone());
    let stack_id = g.stack_id();
    let why: Vec<String> = gathered.frozen.iter().map(|(i, r)| format!("Ingress {}: {r}", key_of(i))).collect();
    let msg = crate::stack::truncate_list(format!("IngressGroup {stack_id} is frozen. {}", why.join(". ")));
    let mut concerned = std::collections::BTreeMap::new();
    let all =
        gathered.members.iter().map(|(i, _)| i).chain(&gathered.holders).chain(gathered.frozen.iter().map(|(i, _)| i));
    for ing in all {
        concerned.insert(key_of(ing), ing.clone());
    }
    for ing in concerned.values() {
        ctx.reporter.warn_once(&ctx.io.base, &reference(ing), GROUP_FROZEN, &msg).await;
    }
    let classes: std::collections::BTreeSet<&str> =
        gathered.frozen.iter().filter_map(|(i, _)| i.spec.as_ref()?.ingress_class_name.as_deref()).collect();
    for name in classes {
        let Some(class) = ctx.io.base.stores.ingress_classes.get(&kube::runtime::reflector::ObjectRef::new(name))
        else {
            continue;
        };
        ctx.reporter.warn_once(&ctx.io.base, &class.object_ref(&()), GROUP_FROZEN, &msg).await;
    }
}

/// A former member: its status is cleared (unless it is being deleted) and its finalizer removed.
async fn release_member(ctx: &IngressCtx, ing: &Ingress, finalizer: &str) -> Result<()> {
    if ing.metadata.deletion_timestamp.is_none() {
        set_hostname(&ctx.io, ing, None).await?;
    }
    remove_finalizer(&ctx.io, ing, finalizer).await
}

fn resolved_from(observed: &ObservedStack) -> deploy::Resolved {
    deploy::Resolved {
        load_balancer_arn: observed.load_balancer.as_ref().map(|(o, _)| o.id.clone()),
        dns_name: observed.load_balancer.as_ref().map(|(_, s)| s.dns_name.clone()),
        frontend_security_group: observed.frontend_security_group.as_ref().map(|o| o.id.clone()),
        target_groups: observed.target_groups.iter().map(|t| (t.spec.name.clone(), t.id.clone())).collect(),
        listeners: observed.listeners.iter().map(|l| (l.spec.port, l.id.clone())).collect(),
    }
}

/// No member left: bindings, then every AWS resource of the stack, then the finalizers.
async fn delete_group(ctx: &IngressCtx, g: &GroupId, holders: &[Arc<Ingress>]) -> Result<Option<Duration>> {
    let stack_id = g.stack_id();
    if !bindings::delete_all(&ctx.io, &binding_owner(g)).await? {
        // Their finalizers are deregistering targets; come back when the cache shows them gone.
        return Ok(Some(Duration::from_secs(2)));
    }
    let changes = match delete_stack(&ctx.io, &stack_id).await? {
        Deleted::Done { changes } => changes,
        Deleted::Waiting => return Ok(Some(Duration::from_secs(10))),
        Deleted::Protected { load_balancer } => {
            let msg = format!(
                "load balancer {load_balancer} of IngressGroup {stack_id} has deletion_protection.enabled=true; set it \
                 to false (annotation {}, or in AWS) to let the controller delete it; the Ingress keeps its \
                 finalizer until then",
                lbc_model::ingress::keys::full_key(k::LOAD_BALANCER_ATTRIBUTES)
            );
            let refs: Vec<&Ingress> = holders.iter().map(AsRef::as_ref).collect();
            warn_all(ctx, &refs, "DeletionProtected", &msg).await;
            return Ok(Some(jittered(ctx.cfg.sync_period)));
        }
    };
    let finalizer = g.finalizer();
    for ing in holders {
        release_member(ctx, ing, &finalizer).await?;
        if changes > 0 {
            let msg = format!("deleted the load balancer stack of IngressGroup {stack_id} ({changes} AWS changes)");
            ctx.io.base.event(&reference(ing), false, "SuccessfullyDeleted", msg).await;
        }
    }
    if changes > 0 || !holders.is_empty() {
        release_backend_security_group(ctx, holders);
    }
    Ok(None)
}

/// No Service or Ingress holds a finalizer of ours any more: the shared backend group may go.
fn release_backend_security_group(ctx: &IngressCtx, released: &[Arc<Ingress>]) {
    let (base, mode) = (ctx.io.base.clone(), ctx.backend_sg.mode().clone());
    let except: Vec<String> = released.iter().filter_map(|i| i.uid()).collect();
    ctx.backend_sg.release_when_unused(move || {
        let holders = crate::stack::finalizer_holders(&base.stores, &except);
        !base.is_leader() || !release_allowed(&mode, holders.into_iter())
    });
}

/// Backend Services of the members' namespaces, from the cache. A Service whose ALB annotations
/// do not parse blocks the group when a member routes to it.
fn services_of(
    ctx: &IngressCtx,
    members: &[(Arc<Ingress>, Candidate)],
    blocked: &mut Vec<(Arc<Ingress>, String)>,
) -> Services {
    let mut out = Services::new();
    for svc in ctx.io.base.stores.services.state() {
        let ns = svc.namespace().unwrap_or_default();
        let users: Vec<&Arc<Ingress>> = members
            .iter()
            .map(|(i, _)| i)
            .filter(|i| i.namespace().as_deref() == Some(ns.as_str()) && super::uses_service(i, &svc.name_any()))
            .collect();
        if users.is_empty() {
            continue;
        }
        match parse_service_annotations(svc.annotations()) {
            Ok((settings, _, _)) => {
                out.insert((ns, svc.name_any()), ServiceView::from_service(&svc, settings));
            }
            Err(e) => {
                for i in users {
                    blocked.push((i.clone(), format!("backend Service {ns}/{}: {e}", svc.name_any())));
                }
            }
        }
    }
    out
}

/// Subnets (two AZs), VPC CIDRs, the existing load balancer and named security groups.
/// `Ok(Err(message))`: the group cannot be built as it stands.
async fn build_context(
    ctx: &IngressCtx,
    members: &[Member],
    observed: &ObservedStack,
) -> Result<std::result::Result<BuildContext, String>> {
    let mut c = BuildContext::new(&ctx.cfg.cluster_name, &ctx.cfg.vpc_id);
    c.default_tags = ctx.cfg.default_tags.clone();
    c.external_managed_tags = ctx.cfg.external_managed_tags.clone();
    c.default_ssl_policy = ctx.cfg.default_ssl_policy.clone();
    c.default_target_type = ctx.cfg.default_target_type;
    c.default_scheme = ctx.cfg.default_scheme;
    c.backend_security_group = match (ctx.backend_sg.existing().await?, ctx.backend_sg.mode()) {
        (None, BackendSgMode::Auto) => Some(BACKEND_SG_PENDING.to_string()),
        (id, _) => id,
    };
    c.vpc_cidrs = ctx.io.base.vpc_cidrs(&ctx.cfg.vpc_id).await?.to_strings();
    c.ipv6_available = c.vpc_cidrs.iter().any(|s| s.contains(':'));
    c.existing = observed.load_balancer.as_ref().map(|(o, _)| lbc_model::lb::build::ExistingLoadBalancer {
        scheme: o.spec.scheme,
        has_security_groups: !o.spec.security_groups.is_empty(),
    });

    // Exclusive settings: members agree (checked by `conflicts`), the first that sets one wins.
    let subnets = members.iter().find_map(|m| m.settings.subnets.clone());
    let selector = match members.iter().find_map(|m| m.settings.subnet_tags.clone()) {
        Some(tags) => SubnetSelector::Tags(tags),
        None => SubnetSelector::from_annotation(subnets.map(|s| s.join(",")).as_deref()),
    };
    let scheme = members.iter().find_map(|m| m.settings.scheme).unwrap_or(c.default_scheme);
    let annotation = lbc_model::ingress::keys::full_key(k::SUBNETS);
    // ALBC's `ALBSingleSubnet` gate lets an ALB live in one subnet.
    let min_azs = if ctx.cfg.gates.alb_single_subnet { 1 } else { 2 };
    let need = SubnetNeed { scheme, min_azs, annotation: &annotation };
    c.subnets = match crate::stack::subnets(&ctx.io, &selector, &need).await? {
        Ok(s) => s,
        Err(e) => return Ok(Err(e)),
    };

    let names: Vec<String> = members
        .iter()
        .find_map(|m| m.settings.security_groups.clone())
        .into_iter()
        .flatten()
        .filter(|g| !g.starts_with("sg-"))
        .collect();
    if !names.is_empty() {
        let annotation = lbc_model::ingress::keys::full_key(k::SECURITY_GROUPS);
        c.custom_security_group_ids = match crate::stack::security_groups_by_name(&ctx.io, &names, &annotation).await? {
            Ok(ids) => ids,
            Err(e) => return Ok(Err(e)),
        };
    }
    Ok(Ok(c))
}
