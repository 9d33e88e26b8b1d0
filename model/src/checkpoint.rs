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

/// Checkpoint of a binding in instance mode: its target group, the spec generation and the
/// desired instance targets (`<instance id>:<port>`). Its own prefix, so a binding switching
/// between ip and instance mode never matches the other mode's checkpoint.
pub fn instance_checkpoint<'a>(
    target_group_arn: &str,
    generation: i64,
    desired: impl IntoIterator<Item = &'a crate::nodes::InstanceTarget>,
) -> String {
    let mut h = Sha256::new();
    h.update(target_group_arn.as_bytes());
    h.update(b"\n");
    h.update(generation.to_le_bytes());
    let mut targets: Vec<&crate::nodes::InstanceTarget> = desired.into_iter().collect();
    targets.sort();
    for t in targets {
        h.update(t.to_string().as_bytes());
        h.update(b",");
    }
    format!("v1-instance:{}", hex::encode(h.finalize()))
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

/// Longest time a counts-only status change is held back while the binding keeps changing, so
/// the counts never lag a long rollout by more than this.
pub const MAX_STATUS_DEFER: Duration = Duration::from_secs(10);

/// How soon after a change a binding is synced again to write back what was held back.
pub const WRITE_BACK_DELAY: Duration = Duration::from_secs(1);

/// What a sync knows when it is about to write back to its binding.
#[derive(Clone, Copy, Debug)]
pub struct WriteBackInput {
    pub status: StatusChange,
    /// This sync registered or deregistered targets.
    pub wrote_targets: bool,
    /// An endpoint change for the binding arrived after this sync planned: a follow-up sync is
    /// already queued.
    pub follow_up_queued: bool,
    /// How long the status has already been held back by earlier syncs (`None`: it is not).
    pub status_deferred_for: Option<Duration>,
    /// Everything desired is registered and no readiness gate is pending: the checkpoint may
    /// be written.
    pub complete: bool,
}

/// Which binding writes a sync makes now, and when to sync again for the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteBack {
    pub status: bool,
    pub checkpoint: bool,
    /// Sync again this soon to write back what was held back.
    pub again_in: Option<Duration>,
}

/// Decides which writes a sync makes after its AWS calls. A scale-up reaches the controller a
/// few endpoints at a time, and writing status and checkpoint after every AWS call (only for the
/// next sync to clear the checkpoint again) cost three binding writes per call. While the
/// binding is changing (this sync wrote targets, or another change is queued), the checkpoint
/// and a counts-only status change (up to [`MAX_STATUS_DEFER`]) are held back and written by a
/// sync [`WRITE_BACK_DELAY`] later, once the changes have stopped. Not writing a checkpoint is
/// always crash-safe (the next start does a full pass); condition changes are never held back.
pub fn write_back(input: &WriteBackInput) -> WriteBack {
    let changing = input.wrote_targets || input.follow_up_queued;
    let defer_status = input.status == StatusChange::Counts
        && changing
        && input.status_deferred_for.is_none_or(|d| d < MAX_STATUS_DEFER);
    let defer_checkpoint = input.complete && changing;
    WriteBack {
        status: input.status != StatusChange::None && !defer_status,
        checkpoint: input.complete && !changing,
        again_in: (defer_status || defer_checkpoint).then_some(WRITE_BACK_DELAY),
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
    fn write_back_holds_counts_and_checkpoint_while_changing() {
        use StatusChange::{Condition, Counts, None as Unchanged};
        let wb = |status, wrote_targets, follow_up_queued, deferred: Option<u64>, complete| {
            let w = write_back(&WriteBackInput {
                status,
                wrote_targets,
                follow_up_queued,
                status_deferred_for: deferred.map(Duration::from_secs),
                complete,
            });
            (w.status, w.checkpoint, w.again_in.is_some())
        };
        // Quiet (the write-back sync after a change): write what changed, checkpoint when complete.
        assert_eq!(wb(Counts, false, false, Some(1), true), (true, true, false));
        assert_eq!(wb(Unchanged, false, false, None, true), (false, true, false));
        assert_eq!(wb(Condition, false, false, None, false), (true, false, false));
        // Changing: counts and checkpoint wait for the write-back sync...
        assert_eq!(wb(Counts, true, false, None, true), (false, false, true));
        assert_eq!(wb(Counts, false, true, Some(9), true), (false, false, true));
        assert_eq!(wb(Unchanged, true, false, None, true), (false, false, true));
        // ...but the counts not for ever, and condition changes go out at once.
        assert_eq!(wb(Counts, true, true, Some(10), true), (true, false, true));
        assert_eq!(wb(Condition, true, false, None, true), (true, false, true));
        // Incomplete (gates pending, overlay IPs): no checkpoint to wait for.
        assert_eq!(wb(Condition, true, false, None, false), (true, false, false));
    }
}
