//! A watch cache of compact records instead of whole objects (see `lbc_model::wire`).
//!
//! Same guarantees as kube's reflector store: readers see the last complete list plus the watch
//! events since; a relist (410 Gone) is built aside and swapped in whole when complete, and the
//! store reports ready only after its first complete list.

use crate::metrics::Metrics;
use futures::TryStreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource};
use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{Arc, RwLock};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// namespace → name → record.
pub(crate) type Map<R> = HashMap<Box<str>, HashMap<Box<str>, Arc<R>>>;

/// Read side of a record cache; cheap to clone.
pub struct Records<R> {
    map: Arc<RwLock<Map<R>>>,
    ready: watch::Receiver<bool>,
}

impl<R> Clone for Records<R> {
    fn clone(&self) -> Self {
        Self { map: self.map.clone(), ready: self.ready.clone() }
    }
}

impl<R> Records<R> {
    pub fn get(&self, ns: &str, name: &str) -> Option<Arc<R>> {
        self.map.read().expect("records lock").get(ns)?.get(name).cloned()
    }

    /// Every record of a namespace, with its name.
    pub fn in_namespace(&self, ns: &str) -> Vec<(String, Arc<R>)> {
        let map = self.map.read().expect("records lock");
        map.get(ns).into_iter().flatten().map(|(n, r)| (n.to_string(), r.clone())).collect()
    }

    /// The records of a namespace that `keep` accepts.
    pub fn matching(&self, ns: &str, keep: impl Fn(&R) -> bool) -> Vec<Arc<R>> {
        let map = self.map.read().expect("records lock");
        map.get(ns).into_iter().flatten().filter(|(_, r)| keep(r)).map(|(_, r)| r.clone()).collect()
    }

    /// A synced cache filled by hand ([`Records::put`]), for tests of its readers.
    #[cfg(test)]
    pub fn filled_by_hand() -> Self {
        let (_, ready) = watch::channel(true);
        Self { map: Default::default(), ready }
    }

    /// A synced cache holding `map` (the memory benchmark builds it through [`list_apply`]).
    #[cfg(test)]
    pub fn from_map(map: Map<R>) -> Self {
        let (_, ready) = watch::channel(true);
        Self { map: Arc::new(RwLock::new(map)), ready }
    }

    #[cfg(test)]
    pub fn put(&self, ns: &str, name: &str, r: R) {
        let _ = insert(&mut self.map.write().expect("records lock"), (ns.into(), name.into()), Arc::new(r));
    }

    pub fn len(&self) -> usize {
        self.map.read().expect("records lock").values().map(HashMap::len).sum()
    }

    /// Resolves once the first complete list is in.
    pub async fn wait_until_ready(&self) {
        let mut rx = self.ready.clone();
        let _ = rx.wait_for(|r| *r).await;
    }
}

fn key<K: Resource>(o: &K) -> (Box<str>, Box<str>) {
    let m = o.meta();
    (m.namespace.as_deref().unwrap_or_default().into(), m.name.as_deref().unwrap_or_default().into())
}

fn insert<R>(map: &mut Map<R>, (ns, name): (Box<str>, Box<str>), r: Arc<R>) -> Option<Arc<R>> {
    map.entry(ns).or_default().insert(name, r)
}

/// One object of a list page (`InitApply`), decoded into the list being built aside.
pub(crate) fn list_apply<K: Resource, R>(building: &mut Option<Map<R>>, o: K, decode: &mut impl FnMut(K) -> R) {
    let k = key(&o);
    let _ = insert(building.get_or_insert_with(Map::default), k, Arc::new(decode(o)));
}

fn remove<R>(map: &mut Map<R>, (ns, name): &(Box<str>, Box<str>)) {
    if let Some(m) = map.get_mut(ns) {
        m.remove(name);
        if m.is_empty() {
            map.remove(ns);
        }
    }
}

/// Starts a watch whose objects are kept as `decode(object)`. `on_change(namespace, name,
/// previous, record)` is called for every change after the first sync: applied objects (with the
/// record they replace, if any), deleted objects, and after a relist every object of the new list
/// and every one that vanished during the gap (its deletion was never seen as an event), once the
/// new list is visible to readers (no previous record for those).
pub fn watch_records<K, R>(
    name: &'static str,
    api: Api<K>,
    cfg: watcher::Config,
    mut decode: impl FnMut(K) -> R + Send + 'static,
    metrics: Metrics,
    on_change: impl Fn(&str, &str, Option<&R>, &R) + Send + 'static,
) -> (Records<R>, JoinHandle<()>)
where
    K: Resource + Clone + serde::de::DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default,
    R: Send + Sync + 'static,
{
    let map: Arc<RwLock<Map<R>>> = Default::default();
    let (ready_tx, ready) = watch::channel(false);
    let records = Records { map: map.clone(), ready };
    let reader = records.clone();
    let task = tokio::spawn(async move {
        let stream = watcher(api, cfg).backoff(crate::backoff::watch());
        futures::pin_mut!(stream);
        // A list in progress: built aside, swapped in when complete.
        let mut building: Option<Map<R>> = None;
        loop {
            match stream.try_next().await {
                Ok(Some(ev)) => {
                    let synced = *ready_tx.borrow();
                    match ev {
                        watcher::Event::Init => building = Some(Map::default()),
                        watcher::Event::InitApply(o) => list_apply(&mut building, o, &mut decode),
                        watcher::Event::InitDone => {
                            let fresh = building.take().unwrap_or_default();
                            let old = std::mem::replace(&mut *map.write().expect("records lock"), fresh);
                            if synced {
                                let now = map.read().expect("records lock");
                                let mut gone = 0;
                                for (ns, objs) in &old {
                                    for (n, r) in objs {
                                        if now.get(ns).is_none_or(|m| !m.contains_key(n)) {
                                            gone += 1;
                                            on_change(ns, n, None, r);
                                        }
                                    }
                                }
                                for (ns, objs) in now.iter() {
                                    objs.iter().for_each(|(n, r)| on_change(ns, n, None, r));
                                }
                                drop(now);
                                metrics
                                    .cache_relists
                                    .get_or_create(&crate::metrics::ResourceLabel { resource: name })
                                    .inc();
                                tracing::info!(
                                    resource = name,
                                    objects = reader.len(),
                                    deleted_meanwhile = gone,
                                    "cache relisted; every object looked at again"
                                );
                            } else {
                                tracing::info!(resource = name, objects = reader.len(), "cache synced");
                                let _ = ready_tx.send(true);
                            }
                        }
                        watcher::Event::Apply(o) => {
                            let (k, r) = (key(&o), Arc::new(decode(o)));
                            let previous = insert(&mut map.write().expect("records lock"), k.clone(), r.clone());
                            on_change(&k.0, &k.1, previous.as_deref(), &r);
                        }
                        watcher::Event::Delete(o) => {
                            let (k, r) = (key(&o), decode(o));
                            remove(&mut map.write().expect("records lock"), &k);
                            on_change(&k.0, &k.1, None, &r);
                        }
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
    (records, task)
}
