//! First come, first served admission of binding reconciles.
//!
//! kube-runtime's own concurrency limit keeps the objects it holds back in a hash set and takes
//! them in hash order, not arrival order. Under saturation (more bindings changing at once than
//! slots, every reconcile waiting for the shared write bucket) the same bindings are picked again
//! and again while others starve: at 50k pods / 50 groups a 10 % scale-up sent 604
//! RegisterTargets of 1–3 targets each and the last targets waited 82 s (p99). A FIFO semaphore
//! (tokio's is fair) serves them in the order they became due, so each binding's next turn comes
//! after every other waiting binding's, and carries everything that changed meanwhile.

use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// At most `limit` reconciles work at once; the others wait in arrival order.
#[derive(Clone)]
pub struct Turns(Option<Arc<Semaphore>>);

/// A reconcile's turn; dropping it lets the next one in.
pub struct Turn(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

impl Turns {
    /// `0`: no limit (kube-runtime's meaning of a zero concurrency).
    pub fn new(limit: u16) -> Self {
        Self((limit > 0).then(|| Arc::new(Semaphore::new(usize::from(limit)))))
    }

    pub async fn wait(&self) -> Turn {
        match &self.0 {
            None => Turn(None),
            Some(s) => Turn(Some(s.clone().acquire_owned().await.expect("the turn semaphore is never closed"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Duration;

    /// Four bindings that are due again as soon as they finish share one slot: each gets a turn
    /// before any gets a second (the hash-order hold-back this replaces served some repeatedly).
    #[tokio::test(start_paused = true)]
    async fn bindings_due_again_wait_behind_every_binding_already_waiting() {
        let turns = Turns::new(1);
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for id in 0..4u8 {
            let (turns, log) = (turns.clone(), log.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..3 {
                    let _turn = turns.wait().await;
                    log.lock().unwrap().push(id);
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }));
            // Due in this order.
            tokio::task::yield_now().await;
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*log.lock().unwrap(), [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_limit_of_n_lets_n_work_at_once_and_zero_means_no_limit() {
        let turns = Turns::new(2);
        let (a, b) = (turns.wait().await, turns.wait().await);
        assert!(tokio::time::timeout(Duration::from_secs(1), turns.wait()).await.is_err(), "a third while two work");
        drop(a);
        let _c = tokio::time::timeout(Duration::from_secs(1), turns.wait()).await.expect("a slot freed");
        drop(b);
        let unlimited = Turns::new(0);
        let held: Vec<_> = futures::future::join_all((0..100).map(|_| unlimited.wait())).await;
        assert_eq!(held.len(), 100);
    }
}
