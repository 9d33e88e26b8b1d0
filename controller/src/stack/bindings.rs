//! The TargetGroupBindings a stack owns: created or updated with the target groups' ARNs,
//! removed when their target group leaves the stack. They carry ALBC's stack labels
//! (`lbc_model::lb::tags` prefix + `stack-namespace`/`stack-name` for a Service or an implicit
//! IngressGroup, `stack` for an explicit group), by which they are found again, and for a Service
//! an owner reference, so the TargetGroupBinding controller (and ALBC tooling) sees them like any
//! other binding. Labels alone never reach across namespaces (`lbc_model::tg_ownership::stack_owns`):
//! a tenant labelling its own binding with another namespace's stack neither gets it updated or
//! deleted by that stack nor holds that stack's teardown.

use super::StackIo;
use crate::error::{OkIfGone, Result};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use lbc_model::crd::TargetGroupBinding;
use lbc_model::digest::ReadDigest;
use lbc_model::names::TGB_FINALIZER;
use lbc_model::service::build::TargetGroupBindingTemplate;
use lbc_model::tg_ownership::{StackOwner, stack_owns};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

const FIELD_MANAGER: &str = "aws-lb-controller";

/// Who owns a stack's bindings.
#[derive(Clone, Debug)]
pub struct BindingOwner {
    /// ALBC's stack labels; every owned binding carries all of them.
    pub labels: BTreeMap<String, String>,
    /// Set on every binding (a Service's; an IngressGroup spans namespaces and has none, as in ALBC).
    pub owner_ref: Option<OwnerReference>,
    /// Which bindings are the stack's ([`lbc_model::tg_ownership::stack_owns`]).
    stack: StackOwner,
}

impl BindingOwner {
    /// ALBC's `StackLabels`: `<prefix>/stack-namespace` + `<prefix>/stack-name`, or
    /// `<prefix>/stack` when the stack has no namespace (explicit IngressGroup).
    pub fn new(prefix: &str, namespace: Option<&str>, name: &str, owner_ref: Option<OwnerReference>) -> Self {
        let labels = match namespace {
            Some(ns) => BTreeMap::from([
                (format!("{prefix}/stack-namespace"), ns.to_string()),
                (format!("{prefix}/stack-name"), name.to_string()),
            ]),
            None => BTreeMap::from([(format!("{prefix}/stack"), name.to_string())]),
        };
        let stack = StackOwner {
            labels: labels.clone(),
            namespace: namespace.map(str::to_string),
            owner: owner_ref.as_ref().map(|r| (r.kind.clone(), r.uid.clone())),
        };
        Self { labels, owner_ref, stack }
    }

    fn owns(&self, t: &TargetGroupBinding) -> bool {
        stack_owns(&self.stack, t)
    }
}

/// Bindings the owner holds (any namespace), from the cache.
pub fn owned(io: &StackIo, owner: &BindingOwner) -> Vec<Arc<TargetGroupBinding>> {
    io.base.stores.tgbs.state().into_iter().filter(|t| owner.owns(t)).collect()
}

/// Every binding in the cache (any owner, any namespace) by the target group ARN it names:
/// `namespace/name` each, deleted or not yet.
pub fn by_target_group(io: &StackIo) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for t in io.base.stores.tgbs.state() {
        if let Some(arn) = &t.spec.target_group_arn {
            out.entry(arn.clone()).or_default().push(format!("{}/{}", t.namespace().unwrap_or_default(), t.name_any()));
        }
    }
    out
}

/// Applies every template (server-side apply; templates equal to the cached object are not
/// sent) and deletes owned bindings no longer wanted. `arns`: target group name → ARN.
pub async fn sync(
    io: &StackIo,
    owner: &BindingOwner,
    templates: &[TargetGroupBindingTemplate],
    arns: &BTreeMap<String, String>,
) -> Result<()> {
    let current = owned(io, owner);
    for t in templates {
        let mut spec = t.spec.clone();
        let Some(tg_name) = spec.target_group_name.clone() else { continue };
        let Some(arn) = arns.get(&tg_name) else { continue };
        io.base.metrics.target_group_binding(&t.namespace, &spec.service_ref.name, arn, true);
        spec.target_group_arn = Some(arn.clone());
        spec.target_group_name = None;
        let same = current.iter().any(|c| {
            c.name_any() == t.name && c.namespace().as_deref() == Some(t.namespace.as_str()) && covers(&c.spec, &spec)
        });
        if same {
            continue;
        }
        io.base.ensure_leader()?;
        let mut tgb = TargetGroupBinding::new(&t.name, spec);
        tgb.metadata.namespace = Some(t.namespace.clone());
        tgb.metadata.labels = Some(owner.labels.clone());
        tgb.metadata.owner_references = owner.owner_ref.clone().map(|r| vec![r]);
        let body = serde_json::to_value(&tgb).map_err(|e| crate::error::Error::Internal(e.to_string()))?;
        let api: Api<TargetGroupBinding> = Api::namespaced(io.base.client.clone(), &t.namespace);
        let write = io.base.triggers.own_write(tgb.digest_key());
        let applied = api.patch(&t.name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(body)).await?;
        write.done(&applied);
        tracing::info!(binding = %format!("{}/{}", t.namespace, t.name), target_group = %arn, "TargetGroupBinding applied");
    }
    let wanted: BTreeSet<(&str, &str)> = templates.iter().map(|t| (t.namespace.as_str(), t.name.as_str())).collect();
    for c in
        current.iter().filter(|c| !wanted.contains(&(c.namespace().as_deref().unwrap_or(""), c.name_any().as_str())))
    {
        delete(io, c).await?;
    }
    Ok(())
}

/// Whether `have` already says everything `want` says (fields `want` leaves unset may carry
/// defaults the mutating webhook filled in).
fn covers(have: &lbc_model::crd::TargetGroupBindingSpec, want: &lbc_model::crd::TargetGroupBindingSpec) -> bool {
    let (Ok(serde_json::Value::Object(h)), Ok(serde_json::Value::Object(w))) =
        (serde_json::to_value(have), serde_json::to_value(want))
    else {
        return false;
    };
    w.iter().all(|(k, v)| v.is_null() || h.get(k) == Some(v))
}

/// Deletes every owned binding; `true` once none left in the cache still carries our finalizer
/// (its cleanup has deregistered the targets), so target groups can go. A binding some other
/// finalizer keeps after ours is gone does not hold the stack's teardown.
pub async fn delete_all(io: &StackIo, owner: &BindingOwner) -> Result<bool> {
    let current = owned(io, owner);
    for c in current.iter().filter(|c| c.meta().deletion_timestamp.is_none()) {
        delete(io, c).await?;
    }
    Ok(current
        .iter()
        .all(|c| c.meta().deletion_timestamp.is_some() && !c.finalizers().iter().any(|f| f == TGB_FINALIZER)))
}

async fn delete(io: &StackIo, t: &TargetGroupBinding) -> Result<()> {
    io.base.ensure_leader()?;
    let api: Api<TargetGroupBinding> = Api::namespaced(io.base.client.clone(), &t.namespace().unwrap_or_default());
    api.delete(&t.name_any(), &DeleteParams::background()).await.ok_if_gone()?;
    let (ns, arn) = (t.namespace().unwrap_or_default(), t.spec.target_group_arn.as_deref().unwrap_or_default());
    io.base.metrics.target_group_binding(&ns, &t.spec.service_ref.name, arn, false);
    Ok(())
}
