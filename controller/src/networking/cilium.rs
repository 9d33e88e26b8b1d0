//! A watch cache of Cilium's `CiliumNode` objects (`cilium.io/v2`), whose `status.eni` lists every
//! ENI of a node with its addresses, prefixes and security groups: in Cilium ENI mode most pod
//! ENIs are found here without an EC2 call.
//!
//! Optional: without the CRD (or without RBAC to read it) the cache stays empty, the failure is
//! logged once, and ENIs are resolved through EC2 only. The watch keeps retrying with backoff, so
//! a CRD installed later is picked up.

use crate::backoff::{Backoff, Failures};
use futures::TryStreamExt;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::task::JoinHandle;

/// The parts of a CiliumNode that ENI resolution reads (`lbc_model::cilium::parse_cilium_node`).
const KEPT: [&[&str]; 3] = [&["spec", "ipam", "pool"], &["status", "eni", "enis"], &["status", "ipam", "used"]];

/// Watch retries: 1 s doubling to 5 min. Without the CRD every retry is a LIST answered 404, so
/// back off to minutes rather than the seconds of the other watches ([`crate::backoff::watch`]).
const RETRY: Backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(300));

/// The cached CiliumNodes; empty when the CRD is absent.
#[derive(Clone)]
pub struct CiliumNodes {
    store: Store<DynamicObject>,
    /// Whether the last list/watch succeeded (false: CRD absent or not readable).
    available: Arc<AtomicBool>,
}

impl CiliumNodes {
    /// Starts the watch on every replica (followers keep it warm for when they lead).
    pub fn watch(client: &Client, on_change: impl Fn() + Send + 'static) -> (Self, JoinHandle<()>) {
        let gvk = GroupVersionKind::gvk("cilium.io", "v2", "CiliumNode");
        let resource = ApiResource::from_gvk_with_plural(&gvk, "ciliumnodes");
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let writer = reflector::store::Writer::<DynamicObject>::new(resource);
        let store = writer.as_reader();
        let available = Arc::new(AtomicBool::new(false));
        let flag = available.clone();
        let reader = store.clone();
        let task = tokio::spawn(async move {
            // Not kube's `.backoff(..)`: it resets on every Ok item, and `Init` can come before a
            // list that then fails, so it would never grow past its first step.
            let stream = watcher(api, watcher::Config::default()).modify(trim).reflect(writer);
            futures::pin_mut!(stream);
            let mut reported = false;
            let mut failures = Failures::new(RETRY);
            loop {
                match stream.try_next().await {
                    // `Init` can come before the list answers: only these prove the watch works.
                    Ok(Some(
                        ev @ (watcher::Event::InitDone | watcher::Event::Apply(_) | watcher::Event::Delete(_)),
                    )) => {
                        flag.store(true, Ordering::Release);
                        failures.succeeded();
                        if matches!(ev, watcher::Event::InitDone) {
                            tracing::info!(resource = "ciliumnodes", objects = reader.len(), "cache synced");
                        }
                        on_change();
                    }
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(e) => {
                        flag.store(false, Ordering::Release);
                        if reported {
                            tracing::debug!(error = %e, "CiliumNode watch failed; retrying");
                        } else {
                            reported = true;
                            tracing::info!(
                                error = %e,
                                "CiliumNode objects (cilium.io/v2) not readable: CRD not installed or RBAC missing; \
                                 pod ENIs are resolved through ec2:DescribeNetworkInterfaces only (retrying in the background)"
                            );
                        }
                        failures.failed_wait().await;
                    }
                }
            }
        });
        (Self { store, available }, task)
    }

    /// The cached objects as JSON (for `EniIndex::build`); empty while unavailable.
    pub fn objects(&self) -> Vec<Value> {
        if !self.available.load(Ordering::Acquire) && self.store.is_empty() {
            return Vec::new();
        }
        self.store.state().iter().filter_map(|o| serde_json::to_value(o.as_ref()).ok()).collect()
    }
}

/// Keeps only the name and the ENI/IPAM parts of a CiliumNode (the rest can be large).
pub(crate) fn trim(o: &mut DynamicObject) {
    let meta = &mut o.metadata;
    meta.managed_fields = None;
    meta.annotations = None;
    meta.labels = None;
    meta.owner_references = None;
    let mut kept = Value::Object(Default::default());
    for path in KEPT {
        if let Some(v) = path.iter().try_fold(&o.data, |v, k| v.get(k)) {
            set(&mut kept, path, v.clone());
        }
    }
    o.data = kept;
}

fn set(root: &mut Value, path: &[&str], value: Value) {
    let (last, parents) = path.split_last().expect("non-empty path");
    let mut cur = root;
    for k in parents {
        cur = cur
            .as_object_mut()
            .expect("object")
            .entry(k.to_string())
            .or_insert_with(|| Value::Object(Default::default()));
    }
    cur.as_object_mut().expect("object").insert(last.to_string(), value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use lbc_model::cilium::parse_cilium_node;
    use serde_json::json;

    #[test]
    fn trim_keeps_what_eni_resolution_reads() {
        let raw = json!({
            "apiVersion": "cilium.io/v2", "kind": "CiliumNode",
            "metadata": {"name": "node-a", "labels": {"x": "y"}, "managedFields": [{"manager": "cilium"}]},
            "spec": {"ipam": {"pool": {"10.0.1.5": {"resource": "eni-1"}}}, "eni": {"instance-type": "m5.large"}},
            "status": {
                "eni": {"enis": {"eni-1": {"id": "eni-1", "ip": "10.0.1.4", "addresses": ["10.0.1.5"],
                                          "security-groups": ["sg-1"], "subnet": {"id": "subnet-1"}}}},
                "ipam": {"used": {"10.0.1.5": {"resource": "eni-1"}}, "operator-status": {}},
                "health": {"ipv4": "10.0.1.9"}
            }
        });
        let mut obj: DynamicObject = serde_json::from_value(raw.clone()).unwrap();
        trim(&mut obj);
        assert!(obj.metadata.labels.is_none() && obj.metadata.managed_fields.is_none());
        assert!(obj.data.pointer("/status/health").is_none());
        assert!(obj.data.pointer("/spec/eni").is_none());
        assert!(obj.data.pointer("/status/ipam/operator-status").is_none());
        let trimmed = serde_json::to_value(&obj).unwrap();
        assert_eq!(parse_cilium_node(&trimmed), parse_cilium_node(&raw));
        assert_eq!(parse_cilium_node(&trimmed).interfaces[0].security_groups, vec!["sg-1".to_string()]);
    }

    #[test]
    fn trim_of_an_empty_node_keeps_nothing() {
        let mut obj: DynamicObject = serde_json::from_value(json!({"metadata": {"name": "n"}})).unwrap();
        trim(&mut obj);
        assert_eq!(obj.data, json!({}));
    }
}
