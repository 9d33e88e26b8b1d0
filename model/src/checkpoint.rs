//! The reconcile checkpoint: a hash of everything a sync depends on, stored on the binding
//! after a successful sync. A restarted or newly elected controller that computes the same hash
//! knows the target group is already in sync and makes no AWS call for it (a periodic drift
//! check still verifies later). ALBC stores its own checkpoint under the same annotation; the
//! `v1:` prefix keeps the two from ever matching by accident, so a swap costs one verification.
//! [`write_back`] decides when a sync writes the checkpoint and its status.

use crate::target::Target;
use sha2::{Digest, Sha256};
use std::time::Duration;

/// Checkpoint of a binding: its target group, the spec generation and the desired targets.
pub fn checkpoint<'a>(
    target_group_arn: &str,
    generation: i64,
    desired: impl IntoIterator<Item = &'a Target>,
) -> String {
    let mut h = Sha256::new();
    h.update(target_group_arn.as_bytes());
    h.update(b"\n");
    h.update(generation.to_le_bytes());
    let mut targets: Vec<&Target> = desired.into_iter().collect();
    targets.sort();
    for t in targets {
        h.update(t.to_string().as_bytes());
        h.update(b",");
    }
    format!("v1:{}", hex::encode(h.finalize()))
}

/// How the status a sync would write differs from the one the binding carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusChange {
    /// Nothing to write.
    None,
    /// Only the target counts (and the message quoting them) differ.
    Counts,
    /// The Ready condition's status or reason, or the observed generation, differ.
    Condition,
}

/// Longest time a counts-only status change waits for a follow-up sync while changes keep
/// arriving, so the counts never lag a long rollout by more than this.
pub const MAX_STATUS_DEFER: Duration = Duration::from_secs(10);

/// What a sync knows when it is about to write back to its binding.
#[derive(Clone, Copy, Debug)]
pub struct WriteBackInput {
    pub status: StatusChange,
    /// An endpoint change for the binding arrived after this sync planned, so a follow-up sync
    /// is queued and will write back whatever this one leaves out.
    pub follow_up_queued: bool,
    /// How long the status has already been left behind by earlier syncs (`None`: it is not).
    pub status_deferred_for: Option<Duration>,
    /// Everything desired is registered and no readiness gate is pending: the checkpoint may
    /// be written.
    pub complete: bool,
}

/// Which binding writes a sync makes now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteBack {
    pub status: bool,
    pub checkpoint: bool,
}

/// Decides which writes a sync makes after its AWS calls. During a scale-up the endpoints arrive
/// a few at a time and every sync used to write status and checkpoint only for the next sync to
/// clear the checkpoint again: when a follow-up sync is already queued, a counts-only status
/// change (up to [`MAX_STATUS_DEFER`]) and the checkpoint are left to it. Not writing a
/// checkpoint is always safe (the next start does a full pass); condition changes are never
/// held back.
pub fn write_back(input: &WriteBackInput) -> WriteBack {
    let defer_status = input.status == StatusChange::Counts
        && input.follow_up_queued
        && input.status_deferred_for.is_none_or(|d| d < MAX_STATUS_DEFER);
    WriteBack {
        status: input.status != StatusChange::None && !defer_status,
        checkpoint: input.complete && !input.follow_up_queued,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ip: &str, port: u16) -> Target {
        Target::new(ip.parse().unwrap(), port)
    }

    #[test]
    fn order_independent_and_sensitive_to_every_input() {
        let a = [t("10.0.0.1", 80), t("10.0.0.2", 80)];
        let b = [t("10.0.0.2", 80), t("10.0.0.1", 80)];
        let base = checkpoint("arn:tg/a", 1, &a);
        assert!(base.starts_with("v1:"));
        assert_eq!(base, checkpoint("arn:tg/a", 1, &b));
        assert_ne!(base, checkpoint("arn:tg/b", 1, &a));
        assert_ne!(base, checkpoint("arn:tg/a", 2, &a));
        assert_ne!(base, checkpoint("arn:tg/a", 1, &a[..1]));
        assert_ne!(base, checkpoint("arn:tg/a", 1, &[t("10.0.0.1", 80), t("10.0.0.2", 81)]));
    }

    #[test]
    fn write_back_leaves_counts_and_checkpoint_to_a_queued_sync() {
        use StatusChange::{Condition, Counts, None as Unchanged};
        let wb = |status, follow_up_queued, deferred: Option<u64>, complete| {
            let w = write_back(&WriteBackInput {
                status,
                follow_up_queued,
                status_deferred_for: deferred.map(Duration::from_secs),
                complete,
            });
            (w.status, w.checkpoint)
        };
        // Quiet: write what changed, checkpoint when complete.
        assert_eq!(wb(Counts, false, None, true), (true, true));
        assert_eq!(wb(Unchanged, false, None, true), (false, true));
        assert_eq!(wb(Condition, false, None, false), (true, false));
        // More endpoints on the way: counts and checkpoint wait for the next sync...
        assert_eq!(wb(Counts, true, None, true), (false, false));
        assert_eq!(wb(Counts, true, Some(9), true), (false, false));
        // ...but not for ever, and condition changes go out at once.
        assert_eq!(wb(Counts, true, Some(10), true), (true, false));
        assert_eq!(wb(Condition, true, None, true), (true, false));
        // A deferred status is written by the first sync with nothing queued.
        assert_eq!(wb(Counts, false, Some(3), true), (true, true));
    }
}
