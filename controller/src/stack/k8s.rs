//! What the Service and Ingress controllers write on the objects that own a stack: a finalizer
//! and `status.loadBalancer.ingress[].hostname`. Both leader only; an object gone meanwhile is
//! fine (nothing left to write on).

use crate::context::Context;
use crate::error::{OkIfGone, Result};
use k8s_openapi::NamespaceResourceScope;
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde_json::json;

fn api<K>(base: &Context, obj: &K) -> Api<K>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>,
{
    Api::namespaced(base.client.clone(), &obj.namespace().unwrap_or_default())
}

/// Makes `obj` hold `finalizer` (`present`) or not: a merge patch of the whole list, guarded by
/// the resourceVersion the decision was made on. `Ok(false)`: the object is gone.
pub async fn set_finalizer<K>(base: &Context, obj: &K, finalizer: &str, present: bool) -> Result<bool>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + lbc_model::digest::ReadDigest
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let Some(finalizers) = finalizers_patch(obj.finalizers(), finalizer, present) else { return Ok(true) };
    // The pass goes on with the finalizer in place; its watch event need not wake another.
    patch_metadata(base, obj, json!({"finalizers": finalizers})).await
}

/// A merge patch of `obj`'s metadata by the leader, guarded by the resourceVersion the decision
/// was made on, recorded as our own write (its watch event wakes no reader). `Ok(false)`: gone.
async fn patch_metadata<K>(base: &Context, obj: &K, mut metadata: serde_json::Value) -> Result<bool>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + lbc_model::digest::ReadDigest
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    base.ensure_leader()?;
    metadata["resourceVersion"] = json!(obj.resource_version());
    let write = base.triggers.own_write(obj.digest_key());
    let body = json!({ "metadata": metadata });
    let patched = api(base, obj).patch(&obj.name_any(), &PatchParams::default(), &Patch::Merge(body)).await;
    let Some(patched) = patched.ok_if_gone()? else { return Ok(false) };
    write.done(&patched);
    Ok(true)
}

/// Removes annotation `key` from `obj` when it has it (a merge patch setting it to null, guarded
/// by the resourceVersion). `Ok(false)`: the object is gone.
pub async fn clear_annotation<K>(base: &Context, obj: &K, key: &str) -> Result<bool>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + lbc_model::digest::ReadDigest
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    if !obj.annotations().contains_key(key) {
        return Ok(true);
    }
    patch_metadata(base, obj, json!({"annotations": {key: null}})).await
}

/// The finalizer list that holds `finalizer` (or not), `None` when `current` already does.
fn finalizers_patch(current: &[String], finalizer: &str, present: bool) -> Option<Vec<String>> {
    let has = current.iter().any(|f| f == finalizer);
    match (has, present) {
        (false, true) => Some(current.iter().cloned().chain([finalizer.to_string()]).collect()),
        (true, false) => Some(current.iter().filter(|f| *f != finalizer).cloned().collect()),
        _ => None,
    }
}

/// The hostnames in `status.loadBalancer.ingress` of a Service or an Ingress.
pub trait LoadBalancerStatus {
    fn hostnames(&self) -> Vec<Option<&str>>;
}

impl LoadBalancerStatus for k8s_openapi::api::core::v1::Service {
    fn hostnames(&self) -> Vec<Option<&str>> {
        let ingress = self.status.as_ref().and_then(|s| s.load_balancer.as_ref()).and_then(|l| l.ingress.as_ref());
        ingress.map(|i| i.iter().map(|x| x.hostname.as_deref()).collect()).unwrap_or_default()
    }
}

impl LoadBalancerStatus for k8s_openapi::api::networking::v1::Ingress {
    fn hostnames(&self) -> Vec<Option<&str>> {
        let ingress = self.status.as_ref().and_then(|s| s.load_balancer.as_ref()).and_then(|l| l.ingress.as_ref());
        ingress.map(|i| i.iter().map(|x| x.hostname.as_deref()).collect()).unwrap_or_default()
    }
}

/// The merge patch that makes `status.loadBalancer.ingress` hold just `hostnames` (in order; none
/// clears it), `None` when `current` (the hostnames there now) already says so.
pub fn hostname_patch(current: &[Option<&str>], hostnames: &[&str]) -> Option<serde_json::Value> {
    let want: Vec<Option<&str>> = hostnames.iter().copied().map(Some).collect();
    if current == want.as_slice() {
        return None;
    }
    let ingress: Vec<serde_json::Value> = hostnames.iter().map(|h| json!({"hostname": h})).collect();
    Some(json!({"status": {"loadBalancer": {"ingress": ingress}}}))
}

/// Makes `status.loadBalancer.ingress` of `obj` hold just `hostnames` unless it already says so.
pub async fn set_hostname<K>(base: &Context, obj: &K, hostnames: &[&str]) -> Result<()>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + LoadBalancerStatus
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let Some(body) = hostname_patch(&obj.hostnames(), hostnames) else { return Ok(()) };
    base.ensure_leader()?;
    let params = PatchParams::default();
    api(base, obj).patch_status(&obj.name_any(), &params, &Patch::Merge(body)).await.ok_if_gone()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finalizer_lists() {
        let list = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // (current, present) → patched list (None: nothing to write)
        type Case<'a> = (&'a [&'a str], bool, Option<&'a [&'a str]>);
        let cases: [Case<'_>; 4] = [
            (&["other"], true, Some(&["other", "ours"])),
            (&["other", "ours"], true, None),
            (&["ours", "other"], false, Some(&["other"])),
            (&["other"], false, None),
        ];
        for (current, present, want) in cases {
            assert_eq!(finalizers_patch(&list(current), "ours", present), want.map(list), "{current:?} {present}");
        }
    }

    #[test]
    fn hostname_is_written_only_when_it_differs() {
        assert_eq!(hostname_patch(&[Some("a.elb")], &["a.elb"]), None);
        assert_eq!(hostname_patch(&[], &[]), None);
        let set = hostname_patch(&[], &["a.elb"]).expect("set");
        assert_eq!(set["status"]["loadBalancer"]["ingress"][0]["hostname"], "a.elb");
        // A frontend NLB's name follows the ALB's, and leaves with it.
        let both = hostname_patch(&[Some("a.elb")], &["a.elb", "n.elb"]).expect("the NLB's added");
        assert_eq!(both["status"]["loadBalancer"]["ingress"][1]["hostname"], "n.elb");
        assert!(hostname_patch(&[Some("a.elb"), Some("n.elb")], &["a.elb"]).is_some());
        let clear = hostname_patch(&[Some("a.elb")], &[]).expect("cleared");
        assert_eq!(clear["status"]["loadBalancer"]["ingress"], json!([]));
    }
}
