//! A work queue keyed by IngressGroup: a group is never reconciled twice at once, triggers for a
//! queued group coalesce, a trigger while it runs makes it run once more afterwards, and only the
//! latest delayed requeue of a group fires.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

pub struct Queue<K> {
    state: Mutex<State<K>>,
    notify: Notify,
}

struct State<K> {
    ready: VecDeque<K>,
    queued: HashSet<K>,
    running: HashSet<K>,
    again: HashSet<K>,
    /// Generation of each key's pending delayed requeue; an older timer does nothing.
    timers: HashMap<K, u64>,
}

impl<K: Clone + Eq + Hash + Send + 'static> Queue<K> {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                ready: VecDeque::new(),
                queued: HashSet::new(),
                running: HashSet::new(),
                again: HashSet::new(),
                timers: HashMap::new(),
            }),
            notify: Notify::new(),
        })
    }

    pub fn add(&self, k: K) {
        let mut s = self.state.lock().expect("queue");
        if s.running.contains(&k) {
            s.again.insert(k);
        } else if s.queued.insert(k.clone()) {
            s.ready.push_back(k);
            drop(s);
            self.notify.notify_one();
        }
    }

    /// Adds `k` after `delay`, replacing any earlier delayed requeue of `k`.
    pub fn add_after(self: &Arc<Self>, k: K, delay: Duration) {
        let generation = {
            let mut s = self.state.lock().expect("queue");
            let g = s.timers.entry(k.clone()).or_default();
            *g += 1;
            *g
        };
        let q = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let Some(q) = q.upgrade() else { return };
            let current = q.state.lock().expect("queue").timers.get(&k) == Some(&generation);
            if current {
                q.add(k);
            }
        });
    }

    /// Cancels the delayed requeue of `k`.
    pub fn forget(&self, k: &K) {
        self.state.lock().expect("queue").timers.remove(k);
    }

    /// The next key to reconcile; it counts as running until [`Queue::done`].
    pub async fn next(&self) -> K {
        loop {
            let notified = self.notify.notified();
            {
                let mut s = self.state.lock().expect("queue");
                if let Some(k) = s.ready.pop_front() {
                    s.queued.remove(&k);
                    s.running.insert(k.clone());
                    if !s.ready.is_empty() {
                        self.notify.notify_one();
                    }
                    return k;
                }
            }
            notified.await;
        }
    }

    pub fn done(&self, k: &K) {
        let again = {
            let mut s = self.state.lock().expect("queue");
            s.running.remove(k);
            s.again.remove(k)
        };
        if again {
            self.add(k.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn coalesces_and_reruns_a_key_triggered_while_running() {
        let q = Queue::<&str>::new();
        q.add("a");
        q.add("a");
        q.add("b");
        let first = q.next().await;
        assert_eq!(first, "a");
        q.add("a");
        assert_eq!(q.next().await, "b", "a runs, so it is not handed out again");
        q.done(&"a");
        assert_eq!(q.next().await, "a", "triggered while running: once more");
        q.done(&"a");
        q.done(&"b");
        assert!(q.state.lock().unwrap().ready.is_empty());
    }

    #[tokio::test]
    async fn only_the_latest_delayed_requeue_fires() {
        let q = Queue::<&str>::new();
        q.add_after("a", Duration::from_millis(20));
        q.add_after("a", Duration::from_millis(300));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(q.state.lock().unwrap().ready.is_empty(), "the replaced timer did nothing");
        let got = tokio::time::timeout(Duration::from_secs(2), q.next()).await;
        assert_eq!(got.ok(), Some("a"));
    }
}
