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

use super::k8s;
use super::{IngressCtx, Looked, finalizer_groups, look};
use crate::context::{Context, jittered};
use crate::error::{Error, Result, Retry};
use crate::stack::bindings::{self, BindingOwner};
use crate::stack::pipeline::{Pipeline, deploy};
use crate::stack::{Deleted, FAILED_BUILD, StackOwner, delete_stack, set_finalizer, set_hostname};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::networking::v1::Ingress;
use kube::{Resource, ResourceExt};
use lbc_model::ingress::keys as k;
use lbc_model::ingress::{
    BuildContext, Candidate, GroupId, GroupPlan, IngressKey, Member, MergeConfig, ServiceView, Services,
    build_group_stack, certificate_discovery_hosts, conflicts, group_of, members, parse_service_annotations,
    plan_group, replacement_veto,
};
use lbc_model::ingress::{mtls, oidc};
use lbc_model::lb::backend_sg::release_allowed;
use lbc_model::lb::build::{BuildError, BuiltStack, ContextNeeds, ExistingLoadBalancer};
use lbc_model::lb::diff::ReplaceReason;
use lbc_model::lb::extras::shield_blocked;
use lbc_model::lb::tags::INGRESS_TAG_PREFIX;
use lbc_model::text::{EVENT_NOTE_MAX, truncate};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// How soon a group blocked by a missing or incomplete OIDC Secret looks again (Secrets are not
/// watched; one GET per pass).
const SECRET_RETRY: Duration = Duration::from_secs(60);
/// How soon a group whose trust store was not found looks again (trust stores are in AWS, not watched).
const TRUST_STORE_RETRY: Duration = Duration::from_secs(60);
/// How soon a group held for want of a Shield Advanced subscription looks again: subscribing is an
/// account-level step taken outside the cluster.
const SHIELD_RETRY: Duration = Duration::from_secs(600);

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
        let uid = ing.metadata.uid.clone().unwrap_or_default();
        let member_class = ctx.member_classes.lock().expect("member classes").get(&uid).cloned();
        let looked = look(&ing, &classes, &ctx.cfg.select, &ctx.cfg.tenancy, member_class.as_deref());
        {
            let mut seen = ctx.member_classes.lock().expect("member classes");
            match &looked {
                _ if ing.metadata.deletion_timestamp.is_some() => drop(seen.remove(&uid)),
                Looked::Ours(_) => drop(seen.insert(uid, super::class_choice(&ing))),
                _ => {}
            }
        }
        match looked {
            Looked::Ours(c) if group_of(&c).as_ref() == Some(g) => {
                by_key.insert((c.namespace.clone(), c.name.clone()), ing.clone());
                candidates.push(*c);
            }
            Looked::Invalid(msg) if holds || implicit == *g => invalid.push((ing.clone(), msg)),
            Looked::Frozen(reason) if holds => frozen.push((ing.clone(), reason)),
            Looked::Refused { group, reason } if holds || group == *g => {
                let msg = format!("{reason}; this Ingress is left out of IngressGroup {}", group.stack_id());
                ctx.reporter.warn_once(&ctx.io.base, &reference(&ing), TENANCY_REFUSED, &msg).await;
            }
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

/// One pass; `Ok(Some(d))`: look again after `d` (drift), `Ok(None)`: only on change. A blocked
/// group is reported on its members (on the Ingresses still holding its finalizer when it has no
/// member left).
pub(super) async fn reconcile(ctx: &IngressCtx, g: &GroupId) -> Result<Option<Duration>> {
    let gathered = gather(ctx, g).await;
    let concerned = if gathered.members.is_empty() {
        gathered.holders.iter().collect::<Vec<_>>()
    } else {
        gathered.members.iter().map(|(i, _)| i).collect()
    };
    let objects: Vec<ObjectReference> = concerned.into_iter().map(|i| reference(i)).collect();
    let res = pass(ctx, g, &gathered).await;
    crate::stack::settle(&ctx.reporter, &ctx.io.base, &objects, ctx.cfg.sync_period, res).await
}

async fn pass(ctx: &IngressCtx, g: &GroupId, gathered: &Gathered) -> Result<Option<Duration>> {
    let stack_id = g.stack_id();
    let nothing_changed = |detail: String| format!("IngressGroup {stack_id}, nothing changed in AWS: {detail}");
    let blocked = |reason: String| Error::Blocked { event: FAILED_BUILD, reason, retry: Retry::OnChange };
    let member_ings: Vec<&Ingress> = gathered.members.iter().map(|(i, _)| i.as_ref()).collect();
    if !gathered.frozen.is_empty() {
        freeze(ctx, g, gathered).await;
        return Ok(Some(jittered(ctx.cfg.sync_period)));
    }
    if !gathered.invalid.is_empty() {
        let all: Vec<String> = gathered.invalid.iter().map(|(i, m)| format!("Ingress {}: {m}", key_of(i))).collect();
        let msg = format!("IngressGroup {stack_id}: invalid settings, nothing changed in AWS: {}", all.join("; "));
        let mut concerned: Vec<&Ingress> = gathered.invalid.iter().map(|(i, _)| i.as_ref()).collect();
        concerned.extend(member_ings.iter().copied());
        warn_all(ctx, &concerned, FAILED_BUILD, &truncate(msg, EVENT_NOTE_MAX)).await;
        return Ok(None);
    }
    if gathered.members.is_empty() {
        return delete_group(ctx, g, &gathered.holders).await;
    }

    let cands: Vec<&Candidate> = gathered.members.iter().map(|(_, c)| c).collect();
    let conflicting = conflicts(&cands);
    if !conflicting.is_empty() {
        let list: Vec<String> = conflicting.iter().map(ToString::to_string).collect();
        return Err(blocked(format!("IngressGroup {stack_id}: {}; nothing changed in AWS", list.join("; "))));
    }
    let finalizer = g.finalizer();
    for ing in &member_ings {
        set_finalizer(&ctx.io.base, *ing, &finalizer, true).await?;
        // ALBC with its IngressPlanAnnotation gate off (its default, the only value here) clears
        // the plan an earlier run with the gate on left on the group's Ingresses.
        crate::stack::clear_annotation(&ctx.io.base, *ing, &k::full_key(k::DRY_RUN_PLAN)).await?;
    }

    let mut members = Vec::new();
    let mut blocked_members = Vec::new();
    let mut discovery_retry = None;
    // With EnableCertificateManagement, the certificates a controller requested are not discovered
    // (ALBC leaves them out too), and a member asking for one does not look for others.
    let mut exclude: Option<std::collections::HashSet<String>> = None;
    for (ing, c) in &gathered.members {
        let notes: Vec<String> = c
            .settings
            .unsupported
            .iter()
            .filter(|u| !u.fails_closed())
            .map(|u| u.note())
            .chain(c.settings.unknown.iter().map(|u| format!("annotation {u} is unknown and ignored")))
            .chain(mtls::unused_entries(&c.settings))
            .chain((ctx.created.is_none() && asks_for_certificate(&c.settings)).then(gate_off_note))
            .collect();
        ctx.reporter.warn_list_once(&ctx.io.base, &reference(ing), "UnsupportedAnnotation", &notes).await;
        // A protection that cannot be applied keeps the whole group as it is (`refusals`).
        let closed = c.settings.fail_closed();
        if !closed.is_empty() {
            blocked_members.push((ing.clone(), format!("Ingress {}: {}", key_of(ing), closed.join("; "))));
            continue;
        }
        let spec = ing.spec.clone().unwrap_or_default();
        let mut discovered_certificates = vec![];
        let requested = ctx.created.is_some() && asks_for_certificate(&c.settings);
        if let Some(hosts) = certificate_discovery_hosts(&c.settings, &spec).filter(|_| !requested) {
            if let (Some(created), None) = (&ctx.created, &exclude) {
                exclude = Some(created.controller_made().await?);
            }
            match ctx.certificates.discover(&hosts, exclude.as_ref()).await {
                Ok(arns) => discovered_certificates = arns,
                // Each member hears its own problem (below), so not handed to `settle` as is.
                Err(Error::Blocked { reason, retry, .. }) => {
                    discovery_retry = retry.delay(ctx.cfg.sync_period);
                    blocked_members.push((ing.clone(), format!("Ingress {} listens on HTTPS: {reason}", key_of(ing))));
                }
                Err(e) => return Err(e),
            }
        }
        members.push(Member { key: key_of(ing), settings: c.settings.clone(), spec, discovered_certificates });
    }

    let services = services_of(ctx, &gathered.members, &mut blocked_members);
    if !blocked_members.is_empty() {
        // Each member hears its own problem.
        for (ing, msg) in &blocked_members {
            let msg = format!("IngressGroup {stack_id} not deployed, nothing changed in AWS: {msg}");
            ctx.reporter.warn_once(&ctx.io.base, &reference(ing), FAILED_BUILD, &msg).await;
        }
        return Ok(discovery_retry);
    }

    // Trust stores `mutual-authentication` names by name (not ARN): a missing one is looked for
    // again soon, the user is likely creating it.
    let names = mtls::trust_store_names(members.iter().map(|m| &m.settings.mutual_authentication));
    let trust_store_arns = if names.is_empty() {
        BTreeMap::new()
    } else {
        let names: Vec<String> = names.into_iter().collect();
        let found = ctx.io.lbs.trust_store_arns(&names).await?;
        let missing: Vec<&String> = names.iter().filter(|n| !found.contains_key(*n)).collect();
        if !missing.is_empty() {
            let list: Vec<String> = missing.iter().map(|n| format!("{n:?}")).collect();
            let reason = nothing_changed(format!(
                "trust store {} of annotation {}/{} not found in this account and region; create it, or name an \
                 existing trust store by its name or ARN",
                list.join(", "),
                k::PREFIX,
                k::MUTUAL_AUTHENTICATION
            ));
            return Err(Error::Blocked {
                event: FAILED_BUILD,
                reason,
                retry: Retry::After(TRUST_STORE_RETRY.min(ctx.cfg.sync_period)),
            });
        }
        found
    };
    // Shield Advanced protection fails closed: without an active subscription nothing of the group
    // is created or changed (ALBC skips the protection and deploys the ALB unprotected).
    if ctx.io.options.shield && members.iter().any(|m| m.settings.shield_advanced_protection == Some(true)) {
        let state = ctx.io.shield.subscription_state().await?;
        if let Some(why) = shield_blocked(Some(true), &state) {
            return Err(Error::Blocked {
                event: FAILED_BUILD,
                reason: nothing_changed(format!("annotation {}/{}: {why}", k::PREFIX, k::SHIELD_ADVANCED_PROTECTION)),
                retry: Retry::After(SHIELD_RETRY.min(ctx.cfg.sync_period)),
            });
        }
    }
    // Decided before the members get their certificates (which then count as named).
    let wanted_certs =
        certificates_requested(ctx, &stack_id, &mut members).await.map_err(|e| e.map_blocked(nothing_changed))?;
    let merge_cfg = MergeConfig {
        default_ssl_policy: ctx.cfg.default_ssl_policy.clone(),
        trust_store_arns,
        tolerate_missing_service: ctx.cfg.tolerate_missing_service,
        tolerate_missing_action: ctx.cfg.tolerate_missing_action,
        default_scheme: ctx.cfg.default_scheme,
    };
    let group_plan = plan_group(&members, &services, &merge_cfg).map_err(|errors| {
        let list: Vec<String> = errors.iter().map(ToString::to_string).collect();
        blocked(nothing_changed(list.join("; ")))
    })?;

    // OIDC client credentials: read now, every pass (Secrets are not watched): when one is
    // missing, look again soon, the user is likely creating or fixing it.
    let oidc_credentials = k8s::oidc_credentials(
        &ctx.io,
        &oidc::secrets_needed(&group_plan),
        ctx.cfg.required_secrets_label.as_ref(),
        SECRET_RETRY.min(ctx.cfg.sync_period),
    )
    .await
    .map_err(|e| e.map_blocked(nothing_changed))?;

    let owner = GroupOwner {
        ctx,
        g,
        ings: &member_ings,
        cands: &cands,
        members: &members,
        plan: &group_plan,
        oidc_credentials,
    };
    let pipeline = Pipeline {
        io: &ctx.io,
        backend_sg: &ctx.backend_sg,
        reporter: &ctx.reporter,
        controller: super::CONTROLLER,
        external_managed_tags: &ctx.cfg.external_managed_tags,
        enhanced_defaults: ctx.cfg.gates.enhanced_default_behavior,
    };
    deploy(&pipeline, &owner).await?;
    if let Some(created) = &ctx.created {
        for done in created.delete_leftovers(&ctx.io.base, &ctx.cfg.cluster_name, &stack_id, &wanted_certs).await? {
            for ing in &member_ings {
                ctx.io.base.event(&reference(ing), false, "SuccessfullyReconciled", done.clone()).await;
            }
        }
    }

    // Former members: the ALB no longer routes to them.
    let member_keys: Vec<IngressKey> = member_ings.iter().map(|i| key_of(i)).collect();
    for ing in gathered.holders.iter().filter(|h| !member_keys.contains(&key_of(h))) {
        release_member(ctx, ing, &finalizer).await?;
    }
    let resumed = ctx.frozen.lock().expect("frozen groups").remove(g);
    for ing in &member_ings {
        ctx.reporter.forget(&reference(ing), GROUP_FROZEN);
        if resumed {
            let msg = format!("IngressGroup {stack_id} resumed: every member's IngressClass is usable again");
            ctx.io.base.event(&reference(ing), false, "GroupResumed", msg).await;
        }
    }
    Ok(Some(jittered(ctx.cfg.sync_period)))
}

/// An IngressGroup as the owner of its stack: its members in group order.
struct GroupOwner<'a> {
    ctx: &'a IngressCtx,
    g: &'a GroupId,
    ings: &'a [&'a Ingress],
    cands: &'a [&'a Candidate],
    members: &'a [Member],
    plan: &'a GroupPlan,
    oidc_credentials: std::collections::BTreeMap<(String, String), lbc_model::ingress::OidcCredentials>,
}

impl StackOwner for GroupOwner<'_> {
    fn subject(&self) -> Option<String> {
        Some(format!("IngressGroup {}", self.g.stack_id()))
    }

    fn stack_id(&self) -> String {
        self.g.stack_id()
    }

    fn objects(&self) -> Vec<ObjectReference> {
        self.ings.iter().map(|i| reference(i)).collect()
    }

    fn binding_owner(&self) -> BindingOwner {
        binding_owner(self.g)
    }

    fn base_context(&self) -> BuildContext {
        let cfg = &self.ctx.cfg;
        let mut c = BuildContext::new(&cfg.cluster_name, &cfg.vpc_id);
        c.default_tags = cfg.default_tags.clone();
        c.default_tags_low_priority = cfg.gates.default_tags_low_priority;
        c.external_managed_tags = cfg.external_managed_tags.clone();
        c.default_ssl_policy = cfg.default_ssl_policy.clone();
        c.default_target_type = cfg.default_target_type;
        c.default_scheme = cfg.default_scheme;
        c.oidc_credentials = self.oidc_credentials.clone();
        c
    }

    fn context_needs(&self, _existing: Option<ExistingLoadBalancer>) -> ContextNeeds {
        let cfg = &self.ctx.cfg;
        lbc_model::ingress::context_needs(self.members, cfg.default_scheme, cfg.gates.alb_single_subnet)
    }

    fn build(&self, c: &BuildContext) -> std::result::Result<BuiltStack, BuildError> {
        build_group_stack(self.g, self.members, self.plan, c)
    }

    fn warnings(&self) -> Vec<String> {
        self.plan.warnings.clone()
    }

    fn replacement_veto(&self, reason: &ReplaceReason) -> Option<String> {
        replacement_veto(self.cands, reason).map(|v| v.to_string())
    }

    fn status_stage(&self) -> &'static str {
        "dns_resolve_and_update_status"
    }

    fn frontend_nlb(&self) -> Option<crate::stack::frontend_nlb::Wanted<'_>> {
        let explicit = matches!(self.g, GroupId::Explicit(_));
        self.plan.frontend_nlb.as_ref().map(|plan| crate::stack::frontend_nlb::Wanted { plan, explicit })
    }

    async fn set_hostname(&self, base: &Context, hostnames: &[&str]) -> Result<()> {
        for ing in self.ings {
            set_hostname(base, *ing, hostnames).await?;
        }
        Ok(())
    }
}

/// Why `create-acm-cert` does nothing with the gate off.
fn gate_off_note() -> String {
    format!(
        "annotation {} is ignored: the EnableCertificateManagement feature gate is off (ALBC's default); turn it on \
         with --feature-gates=EnableCertificateManagement=true, or name a certificate with {}",
        k::full_key(k::CREATE_ACM_CERT),
        k::full_key(k::CERTIFICATE_ARN)
    )
}

/// Whether a member asks for a requested certificate (and names none).
fn asks_for_certificate(s: &lbc_model::ingress::IngressSettings) -> bool {
    s.create_acm_cert == Some(true) && s.certificate_arns.is_empty()
}

fn wanted_certificates(
    ctx: &IngressCtx,
    stack_id: &str,
    members: &[Member],
) -> std::result::Result<Vec<lbc_model::ingress::created_certificates::WantedCertificate>, String> {
    let settings = lbc_model::ingress::created_certificates::Settings {
        cluster: &ctx.cfg.cluster_name,
        stack_id,
        default_tags: &ctx.cfg.default_tags,
        default_tags_low_priority: ctx.cfg.gates.default_tags_low_priority,
        default_pca_arn: &ctx.cfg.default_pca_arn,
    };
    lbc_model::ingress::created_certificates::wanted(members, &settings).map_err(|p| p.join("; "))
}

/// `create-acm-cert`: each asking member gets its issued certificate as its `certificate-arn`
/// (the group waits while ACM has not issued it). Without the gate nothing: the members' notes say
/// the annotation is ignored.
async fn certificates_requested(
    ctx: &IngressCtx,
    stack_id: &str,
    members: &mut [Member],
) -> Result<Vec<lbc_model::ingress::created_certificates::WantedCertificate>> {
    let Some(created) = &ctx.created else { return Ok(Vec::new()) };
    let wanted = wanted_certificates(ctx, stack_id, members).map_err(|reason| Error::Blocked {
        event: FAILED_BUILD,
        reason,
        retry: Retry::OnChange,
    })?;
    if wanted.is_empty() {
        return Ok(wanted);
    }
    let ready = created.ensure(&ctx.io.base, &ctx.cfg.cluster_name, stack_id, &wanted).await?;
    for m in members.iter_mut() {
        if let Some(arn) = ready.get(&m.key) {
            m.settings.certificate_arns = vec![arn.clone()];
        }
    }
    Ok(wanted)
}

/// Event reason of a frozen group's Warnings.
const GROUP_FROZEN: &str = "GroupFrozen";
/// The strict tenancy mode refused what an Ingress chose (its group, a group-wide setting, the legacy class annotation).
const TENANCY_REFUSED: &str = "TenancyRefused";

/// A holder's class or params are gone: a Warning on every Ingress of the group and on the
/// classes they name (when they exist); nothing else is written, in AWS or on the Ingresses.
async fn freeze(ctx: &IngressCtx, g: &GroupId, gathered: &Gathered) {
    ctx.frozen.lock().expect("frozen groups").insert(g.clone());
    let stack_id = g.stack_id();
    let why: Vec<String> = gathered.frozen.iter().map(|(i, r)| format!("Ingress {}: {r}", key_of(i))).collect();
    let msg = truncate(format!("IngressGroup {stack_id} is frozen. {}", why.join(". ")), EVENT_NOTE_MAX);
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
        set_hostname(&ctx.io.base, ing, &[]).await?;
    }
    set_finalizer(&ctx.io.base, ing, finalizer, false).await?;
    Ok(())
}

/// No member left: bindings, then every AWS resource of the stack, then the finalizers.
async fn delete_group(ctx: &IngressCtx, g: &GroupId, holders: &[Arc<Ingress>]) -> Result<Option<Duration>> {
    let stack_id = g.stack_id();
    if !bindings::delete_all(&ctx.io, &binding_owner(g)).await? {
        // Their finalizers are deregistering targets; come back when the cache shows them gone.
        return Ok(Some(Duration::from_secs(2)));
    }
    let changes = match delete_stack(&ctx.io, &stack_id).await? {
        Deleted::Done { changes } => match &ctx.created {
            Some(created) => {
                changes + created.delete_leftovers(&ctx.io.base, &ctx.cfg.cluster_name, &stack_id, &[]).await?.len()
            }
            None => changes,
        },
        Deleted::Waiting => return Ok(Some(Duration::from_secs(10))),
        Deleted::Protected { load_balancer } => {
            let msg = format!(
                "load balancer {load_balancer} of IngressGroup {stack_id} has deletion_protection.enabled=true; set it \
                 to false (annotation {}, or in AWS) to let the controller delete it; the Ingress keeps its \
                 finalizer until then",
                lbc_model::ingress::keys::full_key(k::LOAD_BALANCER_ATTRIBUTES)
            );
            return Err(Error::Blocked { event: "DeletionProtected", reason: msg, retry: Retry::SyncPeriod });
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
