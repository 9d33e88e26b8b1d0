//! What the Service (NLB) and Ingress (ALB) reconcilers share once a desired `lbc_model::lb::Stack`
//! exists: reading a stack from AWS by its ownership tags ([`observe`]), carrying out a plan
//! ([`deploy`]), keeping the stack's TargetGroupBindings ([`bindings`]), deleting a whole stack
//! ([`delete_stack`]), the settings with their own AWS calls ([`extras`]) and deduplicated Warning
//! events ([`Reporter`]).
//!
//! The two differ only in the tag prefix (`service.k8s.aws` vs `ingress.k8s.aws`, see
//! `lbc_model::lb::tags`), the stack ID and the Kubernetes objects that own the stack; those are
//! parameters here.

pub mod bindings;
pub mod deploy;
pub mod extras;
pub mod frontend_nlb;
pub mod k8s;
pub mod observe;
pub mod pipeline;
#[cfg(test)]
pub mod test_world;

pub use k8s::{clear_annotation, set_finalizer, set_hostname};
use lbc_model::text::{EVENT_NOTE_MAX, truncate};
pub use pipeline::{StackOwner, settle};

use crate::context::Context;
use crate::error::{Error, OkIfGone, Result, Retry};
use k8s_openapi::api::core::v1::ObjectReference;
use lbc_aws::lb::LoadBalancers;
use lbc_aws::net::Networking;
use lbc_aws::shield::Protections;
use lbc_aws::waf::WebAcls;
use lbc_aws::waf_classic::ClassicWebAcls;
use lbc_model::lb::diff::{deletion_protected, plan_delete};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// ALBC's event reasons for model build and deploy failures.
pub const FAILED_BUILD: &str = "FailedBuildModel";
pub const FAILED_DEPLOY: &str = "FailedDeployModel";

/// The AWS adapters the Service and Ingress reconcilers share.
#[derive(Clone)]
pub struct Adapters {
    pub lbs: Arc<dyn LoadBalancers>,
    pub net: Arc<dyn Networking>,
    pub waf: Arc<dyn WebAcls>,
    pub waf_classic: Arc<dyn ClassicWebAcls>,
    pub shield: Arc<dyn Protections>,
}

/// The AWS side of one kind of stack: adapters, cluster, VPC and tag prefix.
pub struct StackIo {
    pub base: Arc<Context>,
    pub lbs: Arc<dyn LoadBalancers>,
    pub net: Arc<dyn Networking>,
    pub waf: Arc<dyn WebAcls>,
    pub waf_classic: Arc<dyn ClassicWebAcls>,
    pub shield: Arc<dyn Protections>,
    pub cluster_name: String,
    pub vpc_id: String,
    /// `lbc_model::lb::tags::SERVICE_TAG_PREFIX` or `INGRESS_TAG_PREFIX`.
    pub tag_prefix: &'static str,
    pub options: StackOptions,
}

/// Controller-wide switches of the AWS side of stacks (ALBC flags and feature gates).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackOptions {
    /// Gate `SubnetsClusterTagCheck`: discovery drops subnets tagged for other clusters only.
    pub cluster_tag_check: bool,
    /// `--enable-wafv2`: web ACL associations follow the annotations (else left untouched).
    pub wafv2: bool,
    /// `--enable-waf`: WAF Classic associations follow the annotations (else left untouched).
    pub waf_classic: bool,
    /// `--enable-shield`: Shield Advanced protections follow the annotation (else left untouched).
    pub shield: bool,
    /// Gate `SubnetDiscoveryByReachability`: without role-tagged subnets, classify by route table.
    pub subnet_reachability: bool,
}

impl StackIo {
    pub fn new(
        base: Arc<Context>,
        aws: &Adapters,
        cluster_name: &str,
        vpc_id: &str,
        tag_prefix: &'static str,
        options: StackOptions,
    ) -> Self {
        Self {
            base,
            lbs: aws.lbs.clone(),
            net: aws.net.clone(),
            waf: aws.waf.clone(),
            waf_classic: aws.waf_classic.clone(),
            shield: aws.shield.clone(),
            cluster_name: cluster_name.into(),
            vpc_id: vpc_id.into(),
            tag_prefix,
            options,
        }
    }
}

/// How deleting a stack went.
#[derive(Debug, PartialEq, Eq)]
pub enum Deleted {
    /// Nothing of the stack is left; `changes` AWS writes were made.
    Done { changes: usize },
    /// The load balancer has deletion protection on; nothing was deleted.
    Protected { load_balancer: String },
    /// AWS still holds a resource (network interfaces of a deleted load balancer); try again soon.
    Waiting,
}

/// Deletes every AWS resource of `stack_id` in `plan_delete`'s order (bindings must be gone
/// already: their finalizers deregister the targets), a frontend NLB first: it sends traffic to
/// the load balancer behind it, which AWS does not delete while it is a target.
pub async fn delete_stack(io: &StackIo, stack_id: &str) -> Result<Deleted> {
    let parts = observe::for_deletion(io, stack_id).await?;
    if let Some(load_balancer) = [&parts.frontend, &parts.main].into_iter().find_map(|o| {
        deletion_protected(o).then(|| o.load_balancer.as_ref().map(|(l, _)| l.spec.name.clone()).unwrap_or_default())
    }) {
        return Ok(Deleted::Protected { load_balancer });
    }
    let mut changes = 0;
    for observed in [&parts.frontend, &parts.main] {
        let steps = plan_delete(observed);
        let mut resolved = deploy::Resolved::default();
        match deploy::execute(io, stack_id, &steps, &[], &mut resolved).await {
            Ok(()) => changes += steps.len(),
            // The load balancer's network interfaces take a while to go; the security group waits.
            Err(Error::Aws(e)) if e.kind == lbc_aws::error::ErrorKind::InUse => {
                tracing::info!(stack = %stack_id, error = %e, "waiting for AWS to release resources before deleting them");
                return Ok(Deleted::Waiting);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(Deleted::Done { changes })
}

/// Warning events sent once per (object, reason) until the message changes, so a persisting
/// problem is reported once, not every pass.
#[derive(Default)]
pub struct Reporter {
    last: Mutex<HashMap<(String, String), String>>,
}

fn object_key(r: &ObjectReference) -> String {
    format!(
        "{}/{}/{}",
        r.kind.as_deref().unwrap_or(""),
        r.namespace.as_deref().unwrap_or(""),
        r.name.as_deref().unwrap_or("")
    )
}

impl Reporter {
    /// A Warning event, unless the same reason and message were the last one sent for `obj`.
    pub async fn warn_once(&self, base: &Context, obj: &ObjectReference, reason: &str, message: &str) {
        let key = (object_key(obj), reason.to_string());
        let fresh =
            self.last.lock().expect("reported").insert(key.clone(), message.to_string()).as_deref() != Some(message);
        // Not published: forgotten, so the next pass sends it again.
        if fresh && !base.event(obj, true, reason, message.to_string()).await {
            self.last.lock().expect("reported").remove(&key);
        }
    }

    pub async fn warn_list_once(&self, base: &Context, obj: &ObjectReference, reason: &str, messages: &[String]) {
        if !messages.is_empty() {
            self.warn_once(base, obj, reason, &truncate(messages.join("; "), EVENT_NOTE_MAX)).await;
        }
    }

    /// Forgets the last Warning of `reason` for `obj`, so a recurrence is reported again.
    pub fn forget(&self, obj: &ObjectReference, reason: &str) {
        let key = (object_key(obj), reason.to_string());
        self.last.lock().expect("reported").remove(&key);
    }

    /// Forgets the build/deploy failures reported for `obj` once a pass succeeds, so a
    /// recurrence is reported again.
    pub fn clear_failures(&self, obj: &ObjectReference) {
        let key = object_key(obj);
        self.last
            .lock()
            .expect("reported")
            .retain(|(k, reason), _| k != &key || !matches!(reason.as_str(), FAILED_BUILD | FAILED_DEPLOY));
    }
}

/// What a load balancer needs of its subnets.
pub struct SubnetNeed<'a> {
    pub scheme: lbc_model::lb::Scheme,
    /// 1 for an NLB, 2 for an ALB.
    pub min_azs: usize,
    /// The annotation that names subnets, for error messages.
    pub annotation: &'a str,
}

/// Subnets of the load balancer: the named ones (IDs or `Name` tags; IDs outside the VPC are
/// described too, so the error can say where they are) or discovered by role and cluster tags.
/// No usable set: [`Error::Blocked`] with a message that lists every subnet and near miss.
pub async fn subnets(
    io: &StackIo,
    selector: &lbc_model::lb::subnets::SubnetSelector,
    need: &SubnetNeed<'_>,
) -> Result<Vec<lbc_model::lb::Subnet>> {
    use lbc_aws::net::SubnetQuery;
    use lbc_model::lb::subnets::{SubnetParams, SubnetSelector, needs_reachability, reachability, resolve};
    let mut subnets = io.net.subnets(&SubnetQuery::Vpc(io.vpc_id.clone())).await?;
    if let SubnetSelector::Explicit(items) = selector {
        let outside: Vec<String> = items
            .iter()
            .filter(|i| i.starts_with("subnet-") && !subnets.iter().any(|s| &s.id == *i))
            .cloned()
            .collect();
        if !outside.is_empty() {
            subnets.extend(io.net.subnets(&SubnetQuery::Ids(outside)).await.ok_if_gone()?.into_iter().flatten());
        }
    }
    let mut params = SubnetParams {
        cluster_name: &io.cluster_name,
        vpc_id: &io.vpc_id,
        scheme: need.scheme,
        min_azs: need.min_azs,
        cluster_tag_check: io.options.cluster_tag_check,
        subnets_annotation: need.annotation,
        reachability_gate: io.options.subnet_reachability,
        reachability: None,
    };
    // No subnet tagged for the scheme: ALBC's fallback, by route table (one DescribeRouteTables).
    let public;
    if needs_reachability(selector, &params, &subnets) {
        let tables = io.net.route_tables(&io.vpc_id).await?;
        let ids = subnets.iter().filter(|s| s.vpc_id == io.vpc_id).map(|s| s.id.as_str());
        public = reachability(&io.vpc_id, ids, &tables).map_err(blocked_build)?;
        params.reachability = Some(&public);
    }
    resolve(selector, &params, &subnets).map_err(|e| blocked_build(e.to_string()))
}

/// The stack cannot be built as its owner stands; looked at again at the sync period (the fix
/// may be in AWS: subnet tags, security group names).
fn blocked_build(reason: String) -> Error {
    Error::Blocked { event: FAILED_BUILD, reason, retry: Retry::SyncPeriod }
}

/// Per Service, Ingress and Gateway not in `except` (UIDs just cleaned up, which the cache may still show
/// with their finalizer): whether it holds one of the controller's load-balancer finalizers. Input
/// of `lbc_model::lb::backend_sg::release_allowed`.
pub fn finalizer_holders(stores: &crate::stores::Stores, except: &[String]) -> Vec<bool> {
    use kube::ResourceExt;
    use lbc_model::ingress::keys as ik;
    let skip = |uid: Option<String>| uid.is_some_and(|u| except.contains(&u));
    let services = stores
        .services
        .state()
        .into_iter()
        .filter(|s| !skip(s.uid()))
        .map(|s| s.finalizers().iter().any(|f| f == lbc_model::service::keys::SERVICE_FINALIZER));
    let ingresses = stores.ingresses.state().into_iter().filter(|i| !skip(i.uid())).map(|i| {
        i.finalizers()
            .iter()
            .any(|f| f == ik::IMPLICIT_GROUP_FINALIZER || f.starts_with(ik::EXPLICIT_GROUP_FINALIZER_PREFIX))
    });
    let gateways = stores.gateways.as_ref().map(|g| crate::gateway::pass::finalizer_holders(g, except));
    services.chain(ingresses).chain(gateways.into_iter().flatten()).collect()
}

/// IDs of the security groups a `security-groups` annotation names by `Name` (tag or group
/// name). Some do not exist: [`Error::Blocked`].
pub async fn security_groups_by_name(io: &StackIo, names: &[String], annotation: &str) -> Result<Vec<String>> {
    let q = lbc_aws::net::SecurityGroupQuery::Names { vpc_id: io.vpc_id.clone(), names: names.to_vec() };
    let found = io.net.security_groups(&q).await?;
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| !found.iter().any(|f| &f.spec.name == *n || f.spec.tags.get("Name") == Some(*n)))
        .collect();
    if !missing.is_empty() {
        return Err(blocked_build(format!(
            "security groups named {missing:?} (annotation {annotation}) do not exist in VPC {}; use their IDs (sg-…) or fix the names",
            io.vpc_id
        )));
    }
    Ok(found.into_iter().map(|f| f.id).collect())
}
