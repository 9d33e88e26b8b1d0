//! The reconcile checkpoint: a hash of everything a sync depends on, stored on the binding
//! after a successful sync. A restarted or newly elected controller that computes the same hash
//! knows the target group is already in sync and makes no AWS call for it (a periodic drift
//! check still verifies later). ALBC stores its own checkpoint under the same annotation; the
//! `v1:` prefix keeps the two from ever matching by accident, so a swap costs one verification.

use crate::target::Target;
use sha2::{Digest, Sha256};

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
}
