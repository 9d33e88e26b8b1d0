//! What a watch last saw of each object, as a digest of the parts some decision reads, so an
//! event that touched nothing else (a status write, a heartbeat, a checkpoint annotation, a new
//! resourceVersion) wakes no reconciler.
//!
//! The fields read are named here, next to each other, so that a new decision reading a new
//! field has one place to add it. A field missing here is a missed trigger (repaired only by the
//! periodic resync); a field too many is only an extra pass.

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::Ingress;
use kube::Resource;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use crate::crd::TargetGroupBinding;

/// Last digest per object key (`namespace/name`, or a node's name).
#[derive(Debug, Default)]
pub struct Digests {
    seen: HashMap<String, u64>,
}

impl Digests {
    /// Records `digest` for `key`; `true` when it differs from the last one recorded (a key not
    /// seen before differs).
    pub fn record(&mut self, key: &str, digest: u64) -> bool {
        match self.seen.get_mut(key) {
            Some(d) if *d == digest => false,
            Some(d) => {
                *d = digest;
                true
            }
            None => {
                self.seen.insert(key.to_string(), digest);
                true
            }
        }
    }

    /// Forgets a deleted object.
    pub fn forget(&mut self, key: &str) {
        self.seen.remove(key);
    }

    pub fn len(&self) -> usize {
        self.seen.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }
}

/// A stable (within the process) digest of anything hashable.
pub fn digest_of(value: &impl Hash) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

/// `namespace/name` of an object.
pub fn key_of<K: Resource + ?Sized>(o: &K) -> String {
    let m = o.meta();
    format!("{}/{}", m.namespace.as_deref().unwrap_or_default(), m.name.as_deref().unwrap_or_default())
}

/// An object whose watch events wake reconcilers only when what they read of it changed.
pub trait ReadDigest: Resource<DynamicType = ()> {
    fn read_digest(&self) -> u64;

    /// `Kind/namespace/name`: one digest map can hold every kind.
    fn digest_key(&self) -> String {
        format!("{}/{}", Self::kind(&()), key_of(self))
    }
}

impl ReadDigest for Service {
    fn read_digest(&self) -> u64 {
        service_digest(self)
    }
}

impl ReadDigest for Ingress {
    fn read_digest(&self) -> u64 {
        ingress_digest(self)
    }
}

/// A binding as its owner reads it.
impl ReadDigest for TargetGroupBinding {
    fn read_digest(&self) -> u64 {
        binding_owner_digest(self)
    }
}

/// The metadata every decision about an object may read: identity (a re-created object is a new
/// one), labels, owners and whether it is being deleted. Annotations and finalizers are left to
/// the caller: a Service's are its configuration and its reconciler's progress, a binding's are
/// its own reconciler's checkpoints and finalizer, which its owner never reads.
fn metadata_digest<K: Resource>(o: &K, h: &mut impl Hasher) {
    let m = o.meta();
    m.uid.hash(h);
    m.labels.hash(h);
    m.deletion_timestamp.is_some().hash(h);
    for r in m.owner_references.iter().flatten() {
        (&r.kind, &r.name, &r.uid, r.controller).hash(h);
    }
}

/// A spec, by its JSON form (k8s-openapi types do not implement `Hash`).
fn spec_digest(spec: &impl serde::Serialize, h: &mut impl Hasher) {
    serde_json::to_string(spec).unwrap_or_default().hash(h);
}

/// An object configured by its annotations and spec, as its reconcilers read it.
fn configured_digest<K: Resource>(o: &K, spec: &impl serde::Serialize) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    metadata_digest(o, &mut h);
    o.meta().annotations.hash(&mut h);
    o.meta().finalizers.hash(&mut h);
    spec_digest(spec, &mut h);
    h.finish()
}

/// What the Service, Ingress and binding reconcilers read of a Service: metadata, annotations
/// (its configuration) and spec; never its status, which the Service reconciler itself writes.
pub fn service_digest(s: &Service) -> u64 {
    configured_digest(s, &s.spec)
}

/// What the Ingress reconciler reads of an Ingress: metadata, annotations and spec; not its
/// status (the hostname it writes itself).
pub fn ingress_digest(i: &Ingress) -> u64 {
    configured_digest(i, &i.spec)
}

/// What the owner of a binding (a Service or an IngressGroup) reads of it: metadata and spec.
/// Not its status, annotations and finalizer, which the binding reconciler writes.
pub fn binding_owner_digest(t: &TargetGroupBinding) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    metadata_digest(t, &mut h);
    spec_digest(&t.spec, &mut h);
    h.finish()
}

#[cfg(test)]
mod tests;
