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

/// Last digest per object key (`namespace/name`, or a node's name), and the keys our own
/// reconcilers are writing. `W` is what a held event would have woken (see [`Digests::changed`]).
#[derive(Debug)]
pub struct Digests<W = ()> {
    seen: HashMap<String, u64>,
    writing: HashMap<String, Writing<W>>,
}

impl<W> Default for Digests<W> {
    fn default() -> Self {
        Self { seen: HashMap::new(), writing: HashMap::new() }
    }
}

/// One of our writes of an object in flight. Its watch event may come before the write's answer,
/// so a change seen meanwhile is held: it wakes only if it is not what the write produced.
#[derive(Debug)]
struct Writing<W> {
    writers: u32,
    /// The last changed digest an event showed during the write, and what it would have woken.
    held: Option<(u64, W)>,
    /// The resource versions of the changes held (`None` where the caller gave none).
    held_versions: Vec<Option<String>>,
    /// The object was deleted during the write (its digest is not recorded at the end).
    gone: bool,
}

impl<W> Digests<W> {
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

    /// A watch event showed `digest` for `key`: `Some(wake())` when it changed what readers read
    /// and no write of ours is in flight; `None` when unchanged, or when held for the write in
    /// flight (then [`Digests::end_write`] decides).
    pub fn changed(&mut self, key: &str, digest: u64, wake: impl FnOnce() -> W) -> Option<W> {
        self.changed_at(key, digest, None, wake)
    }

    /// [`Digests::changed`] for the object at resource version `version`: with versions, a
    /// change held during a write is dropped only when it is the write's own version
    /// ([`Digests::end_write_at`]).
    pub fn changed_at(&mut self, key: &str, digest: u64, version: Option<&str>, wake: impl FnOnce() -> W) -> Option<W> {
        if !self.record(key, digest) {
            return None;
        }
        match self.writing.get_mut(key) {
            Some(w) => {
                w.held = Some((digest, wake()));
                w.held_versions.push(version.map(str::to_string));
                None
            }
            None => Some(wake()),
        }
    }

    /// The object was deleted (a deletion always wakes its readers, write in flight or not).
    pub fn deleted(&mut self, key: &str) {
        self.seen.remove(key);
        if let Some(w) = self.writing.get_mut(key) {
            w.gone = true;
            w.held = None;
        }
    }

    /// One of our reconcilers is about to write `key`; end it with [`Digests::end_write`].
    pub fn begin_write(&mut self, key: &str) {
        let w = self.writing.entry(key.to_string()).or_insert(Writing {
            writers: 0,
            held: None,
            held_versions: Vec::new(),
            gone: false,
        });
        w.writers += 1;
    }

    /// Our write of `key` answered `written` (the digest of the object the API server returned;
    /// `None`: the write failed). Returns what a change held meanwhile would have woken when that
    /// change is not the write's own doing (or the write failed), which the caller wakes now.
    /// Whichever comes first, the write's answer or its watch event, the other then finds the
    /// digest unchanged; a change by anyone else still wakes, once.
    pub fn end_write(&mut self, key: &str, written: Option<u64>) -> Option<W> {
        self.end_write_at(key, written, None)
    }

    /// [`Digests::end_write`] for a write answered at resource version `version`. With versions,
    /// a held change is the write's own only when every change held has that version: a write
    /// that leaves the digest as it was (a status write) answers with an object that already
    /// holds a change someone made meanwhile, whose digest then equals the answer's.
    pub fn end_write_at(&mut self, key: &str, written: Option<u64>, version: Option<&str>) -> Option<W> {
        let w = self.writing.get_mut(key)?;
        w.writers = w.writers.saturating_sub(1);
        if w.writers > 0 {
            return None;
        }
        let w = self.writing.remove(key)?;
        let versioned = version.is_some() && w.held_versions.iter().all(Option::is_some);
        let all_ours = w.held_versions.iter().all(|v| v.as_deref() == version);
        match (w.held, written) {
            (Some((_, wake)), Some(_)) if versioned && !all_ours => Some(wake),
            (Some((seen, _)), Some(written)) if seen == written => None,
            (Some((_, wake)), _) => Some(wake),
            (None, Some(written)) if !w.gone => {
                self.record(key, written);
                None
            }
            (None, _) => None,
        }
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

/// What the Gateway controller reads of a TLS Secret: its identity, type and data (the caches keep
/// `tls.crt` and `tls.key` only).
impl ReadDigest for k8s_openapi::api::core::v1::Secret {
    fn read_digest(&self) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.metadata.uid.hash(&mut h);
        self.type_.hash(&mut h);
        spec_digest(&self.data, &mut h);
        h.finish()
    }
}

/// What the Gateway controller reads of the Gateway API kinds: metadata, annotations,
/// finalizers and spec; never their status, which it writes itself.
macro_rules! gateway_api_digest {
    ($($kind:ty),*) => {$(
        impl ReadDigest for $kind {
            fn read_digest(&self) -> u64 {
                configured_digest(self, &self.spec)
            }
        }
    )*};
}

gateway_api_digest!(
    crate::gateway::api::GatewayClass,
    crate::gateway::api::Gateway,
    crate::gateway::api::HTTPRoute,
    crate::gateway::api::GRPCRoute,
    crate::gateway::api::ReferenceGrant
);

#[cfg(test)]
mod tests;
