//! Cached views of the cluster (reflectors) and the triggers they feed.
//!
//! Every replica keeps the caches warm, leader or not, so a newly elected leader starts with
//! synced stores. Watch events are mapped to the TargetGroupBindings they affect and sent to the
//! running controller only while this replica leads (see [`Triggers`]). Reconcilers never list
//! from the API server: all reads come from these stores.

use crate::metrics::Metrics;
use crate::records::{Records, watch_records};
use futures::TryStreamExt;
use k8s_openapi::api::core::v1::{Namespace, Node, Service};
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use lbc_model::binding::{bindings_gating, binds_service, ingress_stack_labels, owner_services};
use lbc_model::crd::{IngressClassParams, TargetGroupBinding};
use lbc_model::digest::{Digests, ReadDigest, key_of};
use lbc_model::endpoints::SliceInfo;
use lbc_model::ingress::ClassSnapshot;
use lbc_model::names::SERVICE_NAME_LABEL;
use lbc_model::nodes::NodeFacts;
use lbc_model::pod::{GateWrite, PodInfo, trim_node};
use lbc_model::wire::{EndpointSliceWire, PodWire};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

/// The caches reconcilers read from.
#[derive(Clone)]
pub struct Stores {
    pub tgbs: Store<TargetGroupBinding>,
    pub services: Store<Service>,
    /// One compact record per EndpointSlice (`lbc_model::endpoints::SliceInfo`).
    pub slices: Records<SliceInfo>,
    /// One compact record per pod (`lbc_model::pod::PodInfo`), never the Pod object.
    pub pods: Records<PodInfo>,
    pub nodes: Store<Node>,
    /// networking.k8s.io/v1 Ingresses (managedFields dropped).
    pub ingresses: Store<Ingress>,
    /// `networking.k8s.io/v1` IngressClasses (cluster-scoped).
    pub ingress_classes: Store<IngressClass>,
    /// `elbv2.k8s.aws/v1beta1` IngressClassParams (cluster-scoped).
    pub ingress_class_params: Store<IngressClassParams>,
    /// Namespaces, trimmed to name and labels (IngressClassParams `namespaceSelector`).
    pub namespaces: Store<Namespace>,
    /// The Gateway API kinds, with the gate `ALBGatewayAPI` only.
    pub gateways: Option<crate::gateway::stores::GatewayStores>,
}

/// What woke the Ingress controller; it maps each to the IngressGroups concerned
/// (`crate::ingress`), since group membership depends on annotations and classes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IngressTrigger {
    /// This Ingress changed or went away.
    Ingress(ObjectRef<Ingress>),
    /// A Service changed: the groups with a backend on it.
    Service { namespace: String, name: String },
    /// A TargetGroupBinding carrying these ALBC stack labels changed or went away.
    Binding(std::collections::BTreeMap<String, String>),
    /// Something every group depends on (IngressClass, IngressClassParams, Namespace labels).
    All,
}

/// The wake-up a watch event owes the object's readers; held while one of our writes of the
/// object is in flight (`lbc_model::digest::Digests::end_write`).
type Wake = Box<dyn FnOnce() + Send>;

/// Why a binding was triggered, for latency metrics.
#[derive(Default)]
struct Dirty {
    /// First EndpointSlice change not yet reconciled, per binding.
    since: HashMap<ObjectRef<TargetGroupBinding>, Instant>,
    /// Bindings among those whose unreconciled changes take targets out (never paced).
    removing: std::collections::HashSet<ObjectRef<TargetGroupBinding>>,
}

/// Routes watch events to the controller while this replica leads.
#[derive(Clone, Default)]
pub struct Triggers {
    sender: Arc<Mutex<Option<UnboundedSender<ObjectRef<TargetGroupBinding>>>>>,
    /// The Service controller's channel (leader only).
    services: Arc<Mutex<Option<UnboundedSender<ObjectRef<Service>>>>>,
    /// The Ingress controller's channel (leader only).
    ingresses: Arc<Mutex<Option<UnboundedSender<IngressTrigger>>>>,
    /// The Gateway controller's channel (leader only).
    gateways: Arc<Mutex<Option<UnboundedSender<crate::gateway::GatewayTrigger>>>>,
    dirty: Arc<Mutex<Dirty>>,
    /// What was last seen of each Service, Ingress and binding, as the digest of what its
    /// reconcilers read (`lbc_model::digest`), shared with the reconcilers' own writes so that
    /// an object they just wrote does not wake them again.
    digests: Arc<Mutex<Digests<Wake>>>,
    /// Wakes the cluster-wide backend security-group rules pass (`crate::networking`).
    pub backend_rules: Arc<tokio::sync::Notify>,
    /// Pods (namespace, name) that EndpointSlices name but the pods cache does not hold yet, and
    /// the bindings that left their endpoints out: the pod's arrival wakes them.
    waiting_pods: Arc<Mutex<WaitingPods>>,
    /// Services whose NLB forwards to other Services (`actions.*`): those Services' changes wake them.
    weighted: Arc<Mutex<lbc_model::service::actions::BackendIndex>>,
    /// Readiness-gate conditions this process patched and whose watch event has not come yet:
    /// that event wakes no binding (`lbc_model::pod::only_our_gate_writes`).
    gate_writes: Arc<Mutex<GateWrites>>,
}

/// (namespace, pod name) → when our last condition patch of it was sent, and what it wrote.
type GateWrites = HashMap<(String, String), (std::time::Instant, Vec<GateWrite>)>;

/// A write whose event has not come this long after is forgotten (the patch changed nothing, so
/// the API server sent no event; or the pod went away).
const GATE_WRITE_MEMORY: std::time::Duration = std::time::Duration::from_secs(60);

/// (namespace, pod name) → the bindings waiting for that pod.
type WaitingPods = HashMap<(String, String), HashSet<ObjectRef<TargetGroupBinding>>>;

/// Pods waited for at most (a forged `targetRef` naming a pod that never comes stays until then).
const MAX_WAITING_PODS: usize = 10_000;

impl Triggers {
    /// A readiness-gate condition patch of pod `ns/name` is about to be sent.
    pub fn expect_gate_write(&self, ns: &str, name: &str, write: GateWrite) {
        let mut writes = self.gate_writes.lock().expect("gate writes lock");
        let now = std::time::Instant::now();
        if writes.len() >= MAX_WAITING_PODS {
            writes.retain(|_, (at, _)| now.duration_since(*at) < GATE_WRITE_MEMORY);
        }
        let (at, list) = writes.entry((ns.to_string(), name.to_string())).or_insert_with(|| (now, Vec::new()));
        *at = now;
        list.retain(|w| w.condition_type != write.condition_type);
        list.push(write);
    }

    /// The patch of pod `ns/name`'s condition `condition_type` failed: no event of it will come.
    pub fn forget_gate_write(&self, ns: &str, name: &str, condition_type: &str) {
        let mut writes = self.gate_writes.lock().expect("gate writes lock");
        let key = (ns.to_string(), name.to_string());
        if let Some((_, list)) = writes.get_mut(&key) {
            list.retain(|w| w.condition_type != condition_type);
            if list.is_empty() {
                writes.remove(&key);
            }
        }
    }

    /// Whether the change of pod `ns/name` from `old` to `new` is only our own pending condition
    /// writes (their record is then consumed). A change that also shows them written alongside
    /// something else consumes them too, and is a real change.
    pub fn only_our_gate_writes(&self, ns: &str, name: &str, old: &PodInfo, new: &PodInfo) -> bool {
        let mut writes = self.gate_writes.lock().expect("gate writes lock");
        let key = (ns.to_string(), name.to_string());
        let Some((_, ours)) = writes.get(&key) else { return false };
        let only_ours = lbc_model::pod::only_our_gate_writes(old, new, ours);
        let seen = ours.iter().all(|w| {
            new.gate(&w.condition_type)
                .and_then(|g| g.current.as_ref())
                .is_some_and(|c| c.parts() == (w.status.as_str(), w.reason.as_deref(), w.message.as_deref()))
        });
        if only_ours || seen {
            writes.remove(&key);
        }
        only_ours
    }

    /// `binding` left out endpoints whose pods (`names`, in `ns`) this process has not seen yet:
    /// after a relist the EndpointSlices cache can be ahead of the pods cache, and a pod's arrival
    /// is otherwise no reason to look at a binding again.
    pub fn wait_for_pods(&self, binding: &ObjectRef<TargetGroupBinding>, ns: &str, names: &[String]) {
        let mut waiting = self.waiting_pods.lock().expect("waiting pods lock");
        for name in names {
            let key = (ns.to_string(), name.clone());
            if waiting.len() >= MAX_WAITING_PODS && !waiting.contains_key(&key) {
                tracing::debug!(namespace = ns, pod = %name, "too many pods waited for; this one is not");
                continue;
            }
            waiting.entry(key).or_default().insert(binding.clone());
        }
    }

    /// The bindings that waited for pod `ns/name`, now seen (no longer waited for).
    pub fn pod_seen(&self, ns: &str, name: &str) -> Vec<ObjectRef<TargetGroupBinding>> {
        let mut waiting = self.waiting_pods.lock().expect("waiting pods lock");
        if waiting.is_empty() {
            return Vec::new();
        }
        waiting.remove(&(ns.to_string(), name.to_string())).map(|b| b.into_iter().collect()).unwrap_or_default()
    }

    /// Installs (leader) or removes (follower) the controller's trigger channel.
    pub fn set_sender(&self, s: Option<UnboundedSender<ObjectRef<TargetGroupBinding>>>) {
        *self.sender.lock().expect("trigger lock") = s;
        if self.sender.lock().expect("trigger lock").is_none() {
            let mut d = self.dirty.lock().expect("dirty lock");
            d.since.clear();
            d.removing.clear();
        }
    }

    pub(crate) fn send(&self, r: ObjectRef<TargetGroupBinding>) {
        self.send_change(r, None);
    }

    /// `endpoints`: `Some(removal)` for a change of the binding's endpoints (`removal`: it may take
    /// targets out), `None` for anything else.
    fn send_change(&self, r: ObjectRef<TargetGroupBinding>, endpoints: Option<bool>) {
        self.backend_rules.notify_one();
        let guard = self.sender.lock().expect("trigger lock");
        let Some(tx) = guard.as_ref() else { return };
        if let Some(removal) = endpoints {
            let mut d = self.dirty.lock().expect("dirty lock");
            d.since.entry(r.clone()).or_insert_with(Instant::now);
            if removal {
                d.removing.insert(r.clone());
            }
        }
        let _ = tx.send(r);
    }

    /// Installs (leader) or removes (follower) the Service controller's trigger channel.
    pub fn set_service_sender(&self, s: Option<UnboundedSender<ObjectRef<Service>>>) {
        *self.services.lock().expect("trigger lock") = s;
    }

    fn send_service(&self, r: ObjectRef<Service>) {
        if let Some(tx) = self.services.lock().expect("trigger lock").as_ref() {
            let _ = tx.send(r);
        }
    }

    /// Installs (leader) or removes (follower) the Ingress controller's trigger channel.
    pub fn set_ingress_sender(&self, s: Option<UnboundedSender<IngressTrigger>>) {
        *self.ingresses.lock().expect("trigger lock") = s;
    }

    pub fn send_ingress(&self, t: IngressTrigger) {
        if let Some(tx) = self.ingresses.lock().expect("trigger lock").as_ref() {
            let _ = tx.send(t);
        }
    }

    /// Installs (leader) or removes (follower) the Gateway controller's trigger channel.
    pub fn set_gateway_sender(&self, s: Option<UnboundedSender<crate::gateway::GatewayTrigger>>) {
        *self.gateways.lock().expect("trigger lock") = s;
    }

    pub fn send_gateway(&self, t: crate::gateway::GatewayTrigger) {
        if let Some(tx) = self.gateways.lock().expect("trigger lock").as_ref() {
            let _ = tx.send(t);
        }
    }

    /// When the oldest unreconciled EndpointSlice change for this binding arrived (cleared).
    pub fn take_dirty_since(&self, r: &ObjectRef<TargetGroupBinding>) -> Option<Instant> {
        let mut d = self.dirty.lock().expect("dirty lock");
        d.removing.remove(r);
        d.since.remove(r)
    }

    /// Whether an unreconciled change of this binding's endpoints may take targets out: a
    /// terminating endpoint, a node event (pacing never holds those, `lbc_model::pacing`).
    pub fn is_removing(&self, r: &ObjectRef<TargetGroupBinding>) -> bool {
        self.dirty.lock().expect("dirty lock").removing.contains(r)
    }

    /// Whether an endpoint change for this binding arrived since the last
    /// [`Triggers::take_dirty_since`]: a follow-up reconcile is queued.
    pub fn is_dirty(&self, r: &ObjectRef<TargetGroupBinding>) -> bool {
        self.dirty.lock().expect("dirty lock").since.contains_key(r)
    }

    /// A reconciler is about to write the object named `key` (its [`ReadDigest::digest_key`]):
    /// the watch event of that write is its own doing, and the pass that writes goes on, so the
    /// event must wake nobody, whether it comes before or after the write's answer. End the
    /// write with [`OwnWrite::done`]; dropped without it (the write failed), a change seen
    /// meanwhile wakes its readers then.
    pub fn own_write(&self, key: String) -> OwnWrite {
        self.digests.lock().expect("digests").begin_write(&key);
        OwnWrite { triggers: self.clone(), key: Some(key) }
    }

    fn end_own_write(&self, key: &str, written: Option<u64>, version: Option<&str>) {
        let wake = self.digests.lock().expect("digests").end_write_at(key, written, version);
        if let Some(wake) = wake {
            tracing::debug!(object = %key, "a change seen during our own write was not ours; waking its readers");
            wake();
        }
    }

    /// Runs `wake` now, later or never, as the watch event of `o` requires: it wakes the
    /// object's readers when what they read changed (`lbc_model::digest`).
    pub(crate) fn wake_readers<K: ReadDigest>(&self, ev: CacheEvent, o: &K, wake: impl FnOnce() -> Wake) {
        let key = o.digest_key();
        let version = o.meta().resource_version.as_deref();
        let now = event_wake(&mut self.digests.lock().expect("digests"), ev, &key, (o.read_digest(), version), wake);
        // Outside the lock: a wake sends on channels and may look at other stores.
        if let Some(wake) = now {
            wake();
        }
    }

    /// Bindings with endpoint changes not yet reconciled (the controller's backlog).
    pub fn pending(&self) -> usize {
        self.dirty.lock().expect("dirty lock").since.len()
    }
}

/// One of our writes of an object in flight ([`Triggers::own_write`]).
#[must_use = "end the write with OwnWrite::done once the API server answered"]
pub struct OwnWrite {
    triggers: Triggers,
    /// `None` once ended.
    key: Option<String>,
}

impl OwnWrite {
    /// The API server answered with `written`.
    pub fn done<K: ReadDigest>(mut self, written: &K) {
        if let Some(key) = self.key.take() {
            let version = written.meta().resource_version.as_deref();
            self.triggers.end_own_write(&key, Some(written.read_digest()), version);
        }
    }
}

impl Drop for OwnWrite {
    /// Not answered (an error, a cancelled pass): nothing of ours to recognise.
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.triggers.end_own_write(&key, None, None);
        }
    }
}

fn tgb_ref(ns: &str, name: &str) -> ObjectRef<TargetGroupBinding> {
    ObjectRef::new(name).within(ns)
}

/// Bindings in `ns` whose Service is `svc`.
pub fn bindings_for_service(
    tgbs: &Store<TargetGroupBinding>,
    ns: &str,
    svc: &str,
) -> Vec<ObjectRef<TargetGroupBinding>> {
    tgbs.state().iter().filter(|t| binds_service(t, ns, svc)).map(|t| ObjectRef::from_obj(t.as_ref())).collect()
}

/// The bindings in instance mode (their targets depend on the nodes).
pub fn instance_bindings(tgbs: &Store<TargetGroupBinding>) -> Vec<ObjectRef<TargetGroupBinding>> {
    tgbs.state()
        .iter()
        .filter(|t| t.spec.effective_target_type() == lbc_model::crd::TargetType::Instance)
        .map(|t| ObjectRef::from_obj(t.as_ref()))
        .collect()
}

/// Whether a node event changes anything the instance decisions read (its
/// [`lbc_model::nodes::NodeFacts`]): a node of the initial list is only recorded, a deletion
/// always matters, a change matters when the facts differ from those last seen.
pub fn node_event_matters(digests: &mut Digests, ev: CacheEvent, node: &Node) -> bool {
    let facts = NodeFacts::of(node);
    event_matters(digests, ev, &facts.name, facts.digest())
}

/// Whether a watch event changes an object's `digest` (what some decision reads of it): an
/// object of the initial list is only recorded, a deletion always matters, a change matters when
/// the digest differs from the one last recorded (a status-only write does not).
pub fn event_matters(digests: &mut Digests, ev: CacheEvent, key: &str, digest: u64) -> bool {
    event_wake(digests, ev, key, (digest, None), || ()).is_some()
}

/// [`event_matters`], with the wake-up it owes: `Some(wake())` to run now; `None` when nothing
/// changed or when the change waits for one of our writes in flight (`Digests::end_write`).
fn event_wake<W>(
    digests: &mut Digests<W>,
    ev: CacheEvent,
    key: &str,
    (digest, version): (u64, Option<&str>),
    wake: impl FnOnce() -> W,
) -> Option<W> {
    match ev {
        CacheEvent::Listed => {
            digests.record(key, digest);
            None
        }
        CacheEvent::Applied => digests.changed_at(key, digest, version, wake),
        CacheEvent::Deleted => {
            digests.deleted(key);
            Some(wake())
        }
    }
}

/// A binding changed: its own reconciler looks; its owner (a Service, an IngressGroup) only when
/// what it reads changed (spec, labels, owners, existence), never for the status and checkpoint
/// annotations the binding reconciler writes after every sync, nor for the owner's own apply.
fn on_binding_event(t: &Triggers, ev: CacheEvent, o: &TargetGroupBinding) {
    // Built only when the event changed what the owner reads.
    let wake_owners = || -> Wake {
        let owners: Vec<String> = owner_services(o).into_iter().map(String::from).collect();
        let ingress_labels = ingress_stack_labels(o);
        let gateway = lbc_model::binding::gateway_stack(o);
        let (t, key, ns) = (t.clone(), key_of(o), o.namespace().unwrap_or_default());
        Box::new(move || {
            tracing::debug!(binding = %key, event = ?ev, "binding changed what its owner reads; waking the owner");
            for owner in owners {
                t.send_service(ObjectRef::new(&owner).within(&ns));
            }
            if !ingress_labels.is_empty() {
                t.send_ingress(IngressTrigger::Binding(ingress_labels));
            }
            if let Some((ns, name)) = gateway {
                t.send_gateway(crate::gateway::GatewayTrigger::Gateway(ns, name));
            }
        })
    };
    t.wake_readers(ev, o, wake_owners);
    if ev != CacheEvent::Listed {
        t.send(ObjectRef::from_obj(o));
    }
}

/// A Service changed: the Service, the Ingresses with a backend on it and its bindings look, but
/// only when what they read changed (`service_digest`): our own hostname in its status is not.
fn on_service_event(t: &Triggers, tgbs: &Store<TargetGroupBinding>, ev: CacheEvent, s: &Service) {
    let annotations = (ev != CacheEvent::Deleted).then(|| s.annotations());
    let (ns, name) = (s.namespace().unwrap_or_default(), s.name_any());
    t.weighted.lock().expect("trigger lock").update(&ns, &name, annotations);
    let wake = || -> Wake {
        let (t, tgbs, key) = (t.clone(), tgbs.clone(), key_of(s));
        Box::new(move || {
            tracing::debug!(service = %key, event = ?ev, "Service changed what its readers read; waking them");
            t.send_service(ObjectRef::new(&name).within(&ns));
            let readers = t.weighted.lock().expect("trigger lock").readers_of(&ns, &name);
            for reader in readers {
                t.send_service(ObjectRef::new(&reader).within(&ns));
            }
            t.send_ingress(IngressTrigger::Service { namespace: ns.clone(), name: name.clone() });
            t.send_gateway(crate::gateway::GatewayTrigger::Service { namespace: ns.clone(), name: name.clone() });
            for r in bindings_for_service(&tgbs, &ns, &name) {
                t.send(r);
            }
        })
    };
    t.wake_readers(ev, s, wake);
}

/// An Ingress changed: its groups look, unless only its status (our hostname) moved.
fn on_ingress_event(t: &Triggers, ev: CacheEvent, i: &Ingress) {
    let wake = || -> Wake {
        let (t, key, r) = (t.clone(), key_of(i), ObjectRef::from_obj(i));
        Box::new(move || {
            tracing::debug!(ingress = %key, event = ?ev, "Ingress changed what its groups read; waking them");
            t.send_ingress(IngressTrigger::Ingress(r))
        })
    };
    t.wake_readers(ev, i, wake);
}

/// Objects per list page of the pods watch (kube's default). A page of `bench/`-scene pods is
/// ≈ 1.6 MiB on the wire and peaks at ≈ 3.6 MiB while read and decoded (`mem_bench`).
pub(crate) const POD_PAGE_SIZE: u32 = 500;

/// Objects per list page of the EndpointSlices watch. A slice holds up to 100 endpoints (≈ 29 KiB
/// on the wire, ~9× a pod), so kube's default of 500 made one page ≈ 14 MiB at 50k pods and its
/// read a ≈ 34 MiB transient peak (`mem_bench`); 50 slices keep a page near a pod page's size,
/// for 10 list calls instead of 1 at 50k pods.
pub(crate) const SLICE_PAGE_SIZE: u32 = 50;

/// How the pods watch decodes: one record per pod, the named-port lists shared between pods.
pub(crate) fn pod_decoder() -> impl FnMut(PodWire) -> PodInfo + Send + 'static {
    let mut ports = lbc_model::pod::NamedPortsInterner::default();
    move |p| PodInfo::from_wire_shared(p, &mut ports)
}

fn watch_config(label_selector: Option<&str>) -> watcher::Config {
    let c = watcher::Config::default();
    match label_selector {
        Some(l) => c.labels(l),
        None => c,
    }
}

pub(crate) fn api<K>(client: &Client, ns: &str) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope> + Clone + serde::de::DeserializeOwned + Debug,
    K::DynamicType: Default,
{
    if ns.is_empty() { Api::all(client.clone()) } else { Api::namespaced(client.clone(), ns) }
}

/// Drives one reflector; `on_change` maps each changed object to the work it affects.
///
/// A relist (the watch could not resume: 410 Gone after an API server restart or compaction)
/// replaces the cache wholesale without per-object events. Past the first sync, every object of
/// the new list is handed to `on_change` (its inputs may have changed during the gap), and so is
/// every object that vanished during the gap (its deletion was never seen as an event).
fn drive<K>(
    name: &'static str,
    api: Api<K>,
    cfg: watcher::Config,
    trim: fn(&mut K),
    metrics: Metrics,
    on_change: impl Fn(&K) + Send + 'static,
) -> (Store<K>, JoinHandle<()>)
where
    K: Resource + Clone + serde::de::DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
{
    drive_events(name, api, cfg, trim, metrics, move |ev, o| {
        if ev != CacheEvent::Listed {
            on_change(o)
        }
    })
}

/// What a cache saw of one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheEvent {
    /// In the first complete list (before the cache synced): nothing changed, it is just known.
    Listed,
    /// Created or changed (or seen again in a relist).
    Applied,
    /// Deleted (or gone in a relist).
    Deleted,
}

/// [`drive`], telling the callback what happened: the initial list, changes and deletions.
pub(crate) fn drive_events<K>(
    name: &'static str,
    api: Api<K>,
    cfg: watcher::Config,
    trim: fn(&mut K),
    metrics: Metrics,
    on_event: impl Fn(CacheEvent, &K) + Send + 'static,
) -> (Store<K>, JoinHandle<()>)
where
    K: Resource + Clone + serde::de::DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
{
    let (reader, writer) = reflector::store::<K>();
    let store = reader.clone();
    let task = tokio::spawn(async move {
        let stream = watcher(api, cfg).modify(trim).backoff(crate::backoff::watch()).reflect(writer);
        futures::pin_mut!(stream);
        let mut synced = false;
        // The cache's content when a relist began.
        let mut before: Option<Vec<Arc<K>>> = None;
        loop {
            match stream.try_next().await {
                Ok(Some(ev)) => {
                    match &ev {
                        watcher::Event::Apply(o) => on_event(CacheEvent::Applied, o),
                        watcher::Event::Delete(o) => on_event(CacheEvent::Deleted, o),
                        watcher::Event::Init if synced => before = Some(reader.state()),
                        watcher::Event::InitApply(o) if synced => on_event(CacheEvent::Applied, o),
                        watcher::Event::InitApply(o) => on_event(CacheEvent::Listed, o),
                        watcher::Event::InitDone => {
                            let gone: Vec<Arc<K>> = before
                                .take()
                                .unwrap_or_default()
                                .into_iter()
                                .filter(|o| reader.get(&ObjectRef::from_obj(o.as_ref())).is_none())
                                .collect();
                            for o in &gone {
                                on_event(CacheEvent::Deleted, o);
                            }
                            if synced {
                                metrics
                                    .cache_relists
                                    .get_or_create(&crate::metrics::ResourceLabel { resource: name })
                                    .inc();
                                tracing::info!(
                                    resource = name,
                                    objects = reader.len(),
                                    deleted_meanwhile = gone.len(),
                                    "cache relisted; every object looked at again"
                                );
                            } else {
                                tracing::info!(resource = name, objects = reader.len(), "cache synced");
                            }
                            synced = true;
                        }
                        _ => {}
                    }
                    metrics.set_cache_objects(name, reader.len());
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(resource = name, error = %e, "watch failed; retrying with backoff")
                }
            }
        }
    });
    (store, task)
}

/// A cluster-wide cache whose changes trigger nothing.
pub(crate) fn cache_all<K>(
    name: &'static str,
    client: &Client,
    cfg: watcher::Config,
    trim: fn(&mut K),
    metrics: &Metrics,
    on_change: impl Fn(&K) + Send + 'static,
) -> (Store<K>, JoinHandle<()>)
where
    K: Resource + Clone + serde::de::DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
{
    drive(name, Api::all(client.clone()), cfg, trim, metrics.clone(), on_change)
}

/// A change that can move any Ingress in or out of any group.
fn every_group<K>(t: &Triggers) -> impl Fn(&K) + Send + 'static {
    let t = t.clone();
    move |_| t.send_ingress(IngressTrigger::All)
}

pub(crate) fn trim_meta<K: Resource>(o: &mut K) {
    o.meta_mut().managed_fields = None;
}

/// A namespace is cached for its labels only.
fn trim_namespace(ns: &mut Namespace) {
    ns.metadata.managed_fields = None;
    ns.metadata.annotations = None;
    ns.spec = None;
    ns.status = None;
}

impl Stores {
    /// Starts every reflector. Returns at once; use [`Stores::wait_synced`] before reconciling.
    pub fn start(
        client: &Client,
        namespace: &str,
        triggers: Triggers,
        metrics: Metrics,
        gateway_api: bool,
        gateway_secrets: bool,
    ) -> (Self, Vec<(&'static str, JoinHandle<()>)>) {
        let mut tasks = Vec::new();
        let gateways = gateway_api.then(|| {
            let (stores, started) =
                crate::gateway::stores::GatewayStores::start(client, namespace, &triggers, &metrics, gateway_secrets);
            tasks.extend(started);
            stores
        });

        let t = triggers.clone();
        let (tgbs, task) = drive_events::<TargetGroupBinding>(
            "targetgroupbindings",
            api(client, namespace),
            watch_config(None),
            trim_meta,
            metrics.clone(),
            move |ev, o| on_binding_event(&t, ev, o),
        );
        tasks.push(("targetgroupbindings watch", task));

        // A Service's own status (our hostname) is read by nobody: only changes of what the
        // Service, Ingress and binding reconcilers read wake them (`service_digest`).
        let (t, idx) = (triggers.clone(), tgbs.clone());
        let (services, task) = drive_events::<Service>(
            "services",
            api(client, namespace),
            watch_config(None),
            trim_meta,
            metrics.clone(),
            move |ev, s| on_service_event(&t, &idx, ev, s),
        );
        tasks.push(("services watch", task));

        let (t, idx) = (triggers.clone(), tgbs.clone());
        let (slices, task) = watch_records::<EndpointSliceWire, _>(
            "endpointslices",
            api(client, namespace),
            watch_config(Some(SERVICE_NAME_LABEL)).page_size(SLICE_PAGE_SIZE),
            SliceInfo::from_wire,
            metrics.clone(),
            move |ns, _, _, s| {
                let Some(svc) = s.service.as_deref() else { return };
                // A terminating endpoint is a target on its way out: its deregistration is never paced.
                let removal = s.endpoints.iter().any(|e| e.terminating);
                for r in bindings_for_service(&idx, ns, svc) {
                    t.send_change(r, Some(removal));
                }
            },
        );
        tasks.push(("endpointslices watch", task));

        let t = triggers.clone();
        let (pods, task) = watch_records::<PodWire, _>(
            "pods",
            api(client, namespace),
            watch_config(None).page_size(POD_PAGE_SIZE),
            pod_decoder(),
            metrics.clone(),
            move |ns, pod, previous, p| {
                // Our own condition patch coming back: the pass that sent it decided with it.
                let ours = previous.is_some_and(|old| t.only_our_gate_writes(ns, pod, old, p));
                if ours {
                    tracing::debug!(
                        namespace = ns,
                        pod,
                        "pod changed by our own condition patch only; no binding woken"
                    );
                }
                for name in bindings_gating(p.gates().iter().map(|g| &*g.condition_type)).into_iter().filter(|_| !ours)
                {
                    t.send(tgb_ref(ns, name));
                }
                for r in t.pod_seen(ns, pod) {
                    t.send(r);
                }
            },
        );
        tasks.push(("pods watch", task));

        // Instance-mode bindings follow their nodes (readiness, labels, IPs, deletion), and only
        // the changes their decisions read (`node_event_matters`).
        let (t, idx) = (triggers.clone(), tgbs.clone());
        let digests = Mutex::new(Digests::default());
        let (nodes, task) =
            drive_events("nodes", Api::all(client.clone()), watch_config(None), trim_node, metrics.clone(), {
                move |ev, n: &Node| {
                    if node_event_matters(&mut digests.lock().expect("node digests"), ev, n) {
                        for r in instance_bindings(&idx) {
                            t.send_change(r, Some(true));
                        }
                    }
                }
            });
        tasks.push(("nodes watch", task));
        // Classes, their parameters and namespace labels decide which Ingresses are ours and in
        // which group: a change looks at every group again.
        let (ingress_classes, task) =
            cache_all("ingressclasses", client, watch_config(None), trim_meta, &metrics, every_group(&triggers));
        tasks.push(("ingressclasses watch", task));
        let (ingress_class_params, task) =
            cache_all("ingressclassparams", client, watch_config(None), trim_meta, &metrics, every_group(&triggers));
        tasks.push(("ingressclassparams watch", task));
        // With --watch-namespace only that namespace's labels are ever needed.
        let ns_cfg = match namespace {
            "" => watch_config(None),
            ns => watcher::Config::default().fields(&format!("metadata.name={ns}")),
        };
        // Labels also decide which namespaces a Gateway listener's `Selector` admits routes from.
        let (t, groups) = (triggers.clone(), every_group(&triggers));
        let (namespaces, task) = cache_all("namespaces", client, ns_cfg, trim_namespace, &metrics, move |n| {
            groups(n);
            t.send_gateway(crate::gateway::GatewayTrigger::All);
        });
        tasks.push(("namespaces watch", task));

        let t = triggers.clone();
        let (ingresses, task) =
            drive_events::<Ingress>("ingresses", api(client, namespace), watch_config(None), trim_meta, metrics, {
                move |ev, i| on_ingress_event(&t, ev, i)
            });
        tasks.push(("ingresses watch", task));

        let stores = Self {
            tgbs,
            services,
            slices,
            pods,
            nodes,
            ingresses,
            ingress_classes,
            ingress_class_params,
            namespaces,
            gateways,
        };
        (stores, tasks)
    }

    /// Waits until every cache holds a complete initial list. Reconciling earlier would read an
    /// empty cache as "no endpoints" and deregister everything.
    pub async fn wait_synced(&self) {
        let _ = futures::join!(
            self.tgbs.wait_until_ready(),
            self.services.wait_until_ready(),
            self.slices.wait_until_ready(),
            self.pods.wait_until_ready(),
            self.nodes.wait_until_ready(),
            self.ingresses.wait_until_ready(),
            self.ingress_classes.wait_until_ready(),
            self.ingress_class_params.wait_until_ready(),
            self.namespaces.wait_until_ready(),
            async {
                if let Some(g) = &self.gateways {
                    g.wait_synced().await
                }
            },
        );
    }

    /// EndpointSlices of a Service.
    pub fn slices_of(&self, ns: &str, svc: &str) -> Vec<Arc<SliceInfo>> {
        self.slices.matching(ns, |s| s.service.as_deref() == Some(svc))
    }

    pub fn service(&self, ns: &str, name: &str) -> Option<Arc<Service>> {
        self.services.get(&ObjectRef::new(name).within(ns))
    }

    pub fn pod(&self, ns: &str, name: &str) -> Option<Arc<PodInfo>> {
        self.pods.get(ns, name)
    }

    pub fn node(&self, name: &str) -> Option<Arc<Node>> {
        self.nodes.get(&ObjectRef::new(name))
    }

    /// Labels of a namespace (`None`: not in the cache).
    pub fn namespace_labels(&self, name: &str) -> Option<BTreeMap<String, String>> {
        self.namespaces.get(&ObjectRef::new(name)).map(|n| n.metadata.labels.clone().unwrap_or_default())
    }

    /// Every IngressClass and IngressClassParams, and the labels of `namespaces` (the only ones
    /// selection of Ingresses in those namespaces looks at), for `lbc_model::ingress::select`.
    pub fn class_snapshot<'a>(&self, namespaces: impl IntoIterator<Item = &'a str>) -> ClassSnapshot {
        ClassSnapshot {
            classes: self.ingress_classes.state().iter().map(|c| (c.name_any(), c.as_ref().clone())).collect(),
            params: self.ingress_class_params.state().iter().map(|p| (p.name_any(), p.as_ref().clone())).collect(),
            namespace_labels: namespaces
                .into_iter()
                .filter_map(|ns| Some((ns.to_string(), self.namespace_labels(ns)?)))
                .collect(),
        }
    }

    /// Pods in `ns` carrying the readiness gate `gate`, with their names.
    pub fn pods_with_gate(&self, ns: &str, gate: &str) -> Vec<(String, Arc<PodInfo>)> {
        self.pods.in_namespace(ns).into_iter().filter(|(_, p)| p.has_gate(gate)).collect()
    }
}

#[cfg(test)]
#[path = "stores_tests.rs"]
mod tests;
