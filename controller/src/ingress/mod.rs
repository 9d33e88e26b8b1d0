//! The Ingress controller: every IngressGroup of our Ingresses gets one ALB with a listener per
//! port, listener rules in group order, IP target groups and one TargetGroupBinding per target
//! group (the TargetGroupBinding controller then registers the pods). Decisions are in
//! `lbc_model::ingress` (selection, annotations, params, groups, plan, build) and
//! `lbc_model::lb` (subnets, diff); AWS reads and writes go through `crate::stack`, shared with
//! the Service controller.
//!
//! The unit of work is a group ([`GroupId`]), not an Ingress: watch events are mapped to the
//! groups they touch ([`groups_of_trigger`]) and fed to the shared scheduler
//! ([`crate::schedule::run`], kube-runtime's) that runs up to `--ingress-max-concurrent-reconciles`
//! groups at once, never one group twice. One pass is [`group::reconcile`].

mod certificates;
mod created_certificates;
mod group;
mod k8s;
#[cfg(test)]
mod tests;

use crate::backend_sg::BackendSecurityGroup;
use crate::backoff::PerKey;
use crate::context::Context;
use crate::stack::{Adapters, Reporter, StackIo};
use crate::stores::{IngressTrigger, Stores};
use k8s_openapi::api::networking::v1::Ingress;
use kube::ResourceExt;
use lbc_aws::acm::Acm;
use lbc_model::crd::TargetType;
use lbc_model::ingress::keys as k;
use lbc_model::ingress::tenancy::{OwnChoices, verdicts as tenancy_verdicts};
use lbc_model::ingress::{
    Candidate, ClassSnapshot, GroupId, Membership, SelectConfig, Selection, apply_params, group_of, membership, select,
};
use lbc_model::lb::Tags;
use lbc_model::lb::tags::INGRESS_TAG_PREFIX;
use lbc_model::tenancy::{Tenancy, Verdict};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

pub const CONTROLLER: &str = "ingress";

/// Ingress-controller settings (from flags).
#[derive(Clone, Debug)]
pub struct IngressConfig {
    pub cluster_name: String,
    pub vpc_id: String,
    pub select: SelectConfig,
    /// `--default-tags`.
    pub default_tags: Tags,
    /// `--external-managed-tags`.
    pub external_managed_tags: BTreeSet<String>,
    /// `--default-ssl-policy`.
    pub default_ssl_policy: String,
    /// `--default-target-type`.
    pub default_target_type: TargetType,
    pub sync_period: Duration,
    pub max_backoff: Duration,
    /// `--default-load-balancer-scheme`.
    pub default_scheme: lbc_model::lb::Scheme,
    /// ALBC's `--feature-gates`, as far as this controller applies them.
    pub gates: lbc_model::compat::FeatureGates,
    /// `--enable-wafv2`: manage web ACL associations from the `wafv2-acl-*` annotations.
    pub wafv2: bool,
    /// `--enable-waf`: manage WAF Classic associations from `waf-acl-id` / `web-acl-id`.
    pub waf_classic: bool,
    /// `--enable-shield`: manage Shield Advanced protections from `shield-advanced-protection`.
    pub shield: bool,
    /// `--required-secrets-label` as (key, value): Secrets without it are not used.
    pub required_secrets_label: Option<(String, String)>,
    /// `--tenancy-mode` and the policy: who may join which IngressGroup and set its group-wide settings.
    pub tenancy: Arc<Tenancy>,
    /// `--tolerate-non-existent-backend-service` / `-action`: a missing backend Service or
    /// `actions.<name>` answers 503 with a Warning (true, ALBC's default) or fails the group.
    pub tolerate_missing_service: bool,
    pub tolerate_missing_action: bool,
    /// `--default-pca-arn`: the private CA of requested certificates (empty: Amazon-issued).
    pub default_pca_arn: String,
    /// `--allowed-certificate-authority-arns`: discovery keeps only private certificates of these
    /// CAs (empty: every certificate).
    pub allowed_certificate_authorities: Vec<String>,
}

/// What the Ingress reconciler shares.
pub struct IngressCtx {
    pub io: StackIo,
    pub cfg: IngressConfig,
    pub backend_sg: Arc<BackendSecurityGroup>,
    /// ACM certificates for hosts of HTTPS listeners without `certificate-arn`.
    pub certificates: certificates::CertificateCatalog,
    /// Certificates `create-acm-cert` requests; `None` with the `EnableCertificateManagement` gate off.
    pub created: Option<created_certificates::CreatedCertificates>,
    reporter: Reporter,
    backoff: PerKey<GroupId>,
    /// Groups found frozen (a holder's class gone), for the event when they resume.
    frozen: std::sync::Mutex<BTreeSet<GroupId>>,
    /// The class each Ingress (by UID) was last seen a member under ([`class_choice`]): an Ingress
    /// that now names a missing class leaves its group by its own change instead of freezing it.
    /// In memory only: after a restart an unknown change freezes, the safe side.
    member_classes: std::sync::Mutex<std::collections::HashMap<String, String>>,
}

impl IngressCtx {
    pub fn new(
        base: Arc<Context>,
        aws: &Adapters,
        acm: Arc<dyn Acm>,
        cfg: IngressConfig,
        backend_sg: Arc<BackendSecurityGroup>,
    ) -> Self {
        let options = crate::stack::StackOptions {
            cluster_tag_check: cfg.gates.subnets_cluster_tag_check,
            wafv2: cfg.wafv2,
            waf_classic: cfg.waf_classic,
            shield: cfg.shield,
            subnet_reachability: cfg.gates.subnet_discovery_by_reachability,
        };
        let io = StackIo::new(base, aws, &cfg.cluster_name, &cfg.vpc_id, INGRESS_TAG_PREFIX, options);
        let certificates = certificates::CertificateCatalog::new(acm, cfg.allowed_certificate_authorities.clone());
        Self {
            io,
            backend_sg,
            certificates,
            reporter: Reporter::default(),
            backoff: PerKey::new(crate::backoff::reconcile(cfg.max_backoff)),
            frozen: Default::default(),
            member_classes: Default::default(),
            created: None,
            cfg,
        }
    }

    /// Requests certificates for `create-acm-cert` (gate `EnableCertificateManagement` on).
    pub fn with_certificate_requests(
        mut self,
        inventory: Arc<crate::acm_inventory::AcmInventory>,
        dns: Arc<dyn lbc_aws::route53::DnsRecords>,
    ) -> Self {
        self.created = Some(created_certificates::CreatedCertificates::new(inventory, dns));
        self
    }
}

/// What class selection reads, for the namespaces of every cached Ingress.
pub(crate) fn classes(stores: &Stores) -> ClassSnapshot {
    let namespaces: BTreeSet<String> = stores.ingresses.state().iter().filter_map(|i| i.namespace()).collect();
    stores.class_snapshot(namespaces.iter().map(String::as_str))
}

/// One Ingress as the group logic sees it.
pub(crate) enum Looked {
    /// Someone else's (or a misconfigured class: `Some(reason)`, reported on the Ingress).
    NotOurs(Option<String>),
    /// Holds a group finalizer but its class or params are gone: its groups are frozen.
    Frozen(String),
    /// Ours, but its annotations do not parse or its IngressClassParams cannot be honoured.
    Invalid(String),
    /// Ours, but the tenancy policy refuses what it chose (strict mode): left out of `group`.
    Refused {
        group: GroupId,
        reason: String,
    },
    Ours(Box<Candidate>),
}

/// The class an Ingress chooses, as its own spec says: the legacy annotation, else
/// `spec.ingressClassName`.
pub(crate) fn class_choice(ing: &Ingress) -> String {
    if let Some(v) = ing.annotations().get(k::INGRESS_CLASS_ANNOTATION) {
        return format!("{}: {v}", k::INGRESS_CLASS_ANNOTATION);
    }
    match ing.spec.as_ref().and_then(|s| s.ingress_class_name.as_deref()) {
        Some(c) => format!("IngressClass {c}"),
        None => "no class".into(),
    }
}

/// Selection, annotations and IngressClassParams of one Ingress. `member_class`: the
/// [`class_choice`] it was last a member under, when known.
pub(crate) fn look(
    ing: &Ingress,
    classes: &ClassSnapshot,
    cfg: &SelectConfig,
    tenancy: &Tenancy,
    member_class: Option<&str>,
) -> Looked {
    let selection = select(ing, &classes.view(), cfg);
    let holds = !finalizer_groups(ing).is_empty();
    let now = class_choice(ing);
    let own_change = member_class.is_some_and(|c| c != now);
    let deleting = ing.metadata.deletion_timestamp.is_some();
    if let Membership::Frozen { reason } = membership(&selection, holds, deleting, own_change) {
        return Looked::Frozen(reason);
    }
    let params = match selection {
        Selection::NotOurs { .. } => return Looked::NotOurs(None),
        Selection::Misconfigured { reason } if own_change => {
            let was = member_class.unwrap_or_default();
            return Looked::NotOurs(Some(format!(
                "{reason}; it was a member under {was} and now names {now}: its own change takes it out of its \
                 IngressGroup (the other members are not frozen); restore {was} to rejoin"
            )));
        }
        Selection::Misconfigured { reason } => return Looked::NotOurs(Some(reason)),
        Selection::Ours { params, .. } => params,
    };
    let ns = ing.namespace().unwrap_or_default();
    let settings = match lbc_model::ingress::parse_annotations(ing.annotations(), &ns) {
        Ok(s) => s,
        Err(e) => return Looked::Invalid(e.to_string()),
    };
    let params_name = params.as_deref().map(|p| p.name_any()).unwrap_or_default();
    let applied = match apply_params(&settings, params.as_deref().map(|p| &p.spec), &params_name) {
        Ok(s) => s,
        Err(e) => return Looked::Invalid(e),
    };
    let name = ing.name_any();
    let choices = OwnChoices {
        namespace: &ns,
        name: &name,
        via_class_annotation: ing.annotations().contains_key(k::INGRESS_CLASS_ANNOTATION),
        own: &settings,
        group_from_params: params.as_deref().is_some_and(|p| p.spec.group.is_some()),
    };
    let (mut refusals, mut forwards) = (Vec::new(), Vec::new());
    for verdict in tenancy_verdicts(tenancy, &choices) {
        match verdict {
            // Fail closed: the group's pass stops before any AWS write, as for an invalid
            // annotation, so the rules already there stay and none forwards to the group.
            Verdict::Refused(r) if r.kind == "forward-target-group" => forwards.push(r.detail),
            Verdict::Refused(r) => refusals.push(r.detail),
            // The upstream's trust model, kept in compatible mode: debug only.
            Verdict::Exposed(e) => tracing::debug!(kind = e.kind, detail = %e.detail, "tenancy exposure"),
            Verdict::Allowed => {}
        }
    }
    if !forwards.is_empty() {
        return Looked::Invalid(forwards.join("; "));
    }
    let candidate =
        Candidate { namespace: ns, name, deleting: ing.metadata.deletion_timestamp.is_some(), settings: applied };
    if let (false, Some(group)) = (refusals.is_empty(), group_of(&candidate)) {
        return Looked::Refused { group, reason: refusals.join("; ") };
    }
    Looked::Ours(Box::new(candidate))
}

/// The groups whose finalizer an Ingress carries.
pub(crate) fn finalizer_groups(ing: &Ingress) -> Vec<GroupId> {
    ing.finalizers()
        .iter()
        .filter_map(|f| {
            if f == k::IMPLICIT_GROUP_FINALIZER {
                Some(GroupId::Implicit { namespace: ing.namespace().unwrap_or_default(), name: ing.name_any() })
            } else {
                f.strip_prefix(k::EXPLICIT_GROUP_FINALIZER_PREFIX).map(|g| GroupId::Explicit(g.to_string()))
            }
        })
        .collect()
}

/// The groups an Ingress is in or still holds (finalizer): both need a pass when it changes.
fn groups_of_ingress(ing: &Ingress, classes: &ClassSnapshot, cfg: &SelectConfig, tenancy: &Tenancy) -> Vec<GroupId> {
    let mut out = finalizer_groups(ing);
    // Without the member record: a missing class reads as frozen, whose finalizer groups are above.
    let now = match look(ing, classes, cfg, tenancy, None) {
        Looked::Ours(c) => group_of(&c),
        // The group it asks to join reports the refusal.
        Looked::Refused { group, .. } => Some(group),
        // Frozen: the finalizer groups above are the ones it is in.
        Looked::Frozen(_) => None,
        // Its group is unknown; the pass of its implicit group reports the problem.
        Looked::Invalid(_) | Looked::NotOurs(Some(_)) => {
            Some(GroupId::Implicit { namespace: ing.namespace().unwrap_or_default(), name: ing.name_any() })
        }
        Looked::NotOurs(None) => None,
    };
    if let Some(g) = now
        && !out.contains(&g)
    {
        out.push(g);
    }
    out
}

/// Whether an Ingress routes to Service `name` (its own namespace): a backend in its spec, or an
/// `actions.*` annotation forwarding to it.
fn uses_service(ing: &Ingress, name: &str) -> bool {
    let spec = ing.spec.as_ref();
    let default = spec.and_then(|s| s.default_backend.as_ref()).and_then(|b| b.service.as_ref());
    let paths = spec
        .into_iter()
        .flat_map(|s| s.rules.iter().flatten())
        .flat_map(|r| r.http.iter().flat_map(|h| h.paths.iter()))
        .filter_map(|p| p.backend.service.as_ref());
    let in_spec = default.into_iter().chain(paths).any(|s| s.name == name);
    let quoted = format!("\"{name}\"");
    let in_actions = ing
        .annotations()
        .iter()
        .any(|(key, v)| key.starts_with(&format!("{}/actions.", k::PREFIX)) && v.contains(&quoted));
    in_spec || in_actions
}

/// The groups a watch event concerns.
pub(crate) fn groups_of_trigger(stores: &Stores, cfg: &IngressConfig, t: &IngressTrigger) -> BTreeSet<GroupId> {
    let classes = classes(stores);
    let (tenancy, cfg) = (&cfg.tenancy, &cfg.select);
    let mut out = BTreeSet::new();
    match t {
        IngressTrigger::Ingress(r) => {
            if let Some(ing) = stores.ingresses.get(r) {
                out.extend(groups_of_ingress(&ing, &classes, cfg, tenancy));
            }
        }
        IngressTrigger::Service { namespace, name } => {
            for ing in stores.ingresses.state() {
                if ing.namespace().as_deref() == Some(namespace.as_str()) && uses_service(&ing, name) {
                    out.extend(groups_of_ingress(&ing, &classes, cfg, tenancy));
                }
            }
        }
        IngressTrigger::Binding(labels) => {
            let get = |s: &str| labels.get(&format!("{INGRESS_TAG_PREFIX}/{s}")).cloned();
            match (get("stack"), get("stack-namespace"), get("stack-name")) {
                (Some(g), _, _) => {
                    out.insert(GroupId::Explicit(g));
                }
                (None, Some(namespace), Some(name)) => {
                    out.insert(GroupId::Implicit { namespace, name });
                }
                _ => {}
            }
        }
        IngressTrigger::All => {
            for ing in stores.ingresses.state() {
                out.extend(groups_of_ingress(&ing, &classes, cfg, tenancy));
            }
        }
    }
    out
}

/// Runs until `stop` resolves: every group is looked at once at start, then on every change. On
/// `stop` no new pass starts and the passes in flight finish (as the other controllers drain).
pub async fn run(ctx: Arc<IngressCtx>, concurrency: u16, stop: impl std::future::Future<Output = ()> + Send) {
    use futures::StreamExt;
    ctx.io.base.metrics.set_concurrency(CONTROLLER, concurrency.max(1));
    let (tx, rx) = mpsc::unbounded_channel();
    let _ = tx.send(IngressTrigger::All);
    ctx.io.base.triggers.set_ingress_sender(Some(tx));
    let requests = {
        let ctx = ctx.clone();
        tokio_stream::wrappers::UnboundedReceiverStream::new(rx).flat_map(move |t| {
            let groups = groups_of_trigger(&ctx.io.base.stores, &ctx.cfg, &t);
            for g in &groups {
                let (ns, name) = metrics_key(g);
                ctx.io.base.metrics.queued(CONTROLLER, ns, name);
            }
            futures::stream::iter(groups.into_iter().map(|g| crate::schedule::request(g, Duration::ZERO)))
        })
    };
    crate::schedule::run(requests, concurrency, stop, |g| {
        let ctx = ctx.clone();
        async move { reconcile(&ctx, &g).await }
    })
    .await;
    ctx.io.base.triggers.set_ingress_sender(None);
}

/// A group as the metrics name it: its namespace (empty for an explicit group) and name.
fn metrics_key(g: &GroupId) -> (&str, &str) {
    match g {
        GroupId::Explicit(name) => ("", name.as_str()),
        GroupId::Implicit { namespace, name } => (namespace.as_str(), name.as_str()),
    }
}

/// One pass over a group; the delay before the next one (`None`: only on change).
async fn reconcile(ctx: &IngressCtx, g: &GroupId) -> Option<Duration> {
    let leader = ctx.io.base.is_leader();
    // Pairs with the wake-up lines of `crate::stores`: a trigger sent and never run shows here.
    tracing::debug!(group = %g.stack_id(), leader, "IngressGroup reconcile triggered");
    if !leader {
        return None;
    }
    let pass = group::reconcile(ctx, g);
    crate::schedule::timed_pass(&ctx.io.base.metrics, &ctx.backoff, CONTROLLER, g, metrics_key(g), pass).await
}
