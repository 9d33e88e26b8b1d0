//! Which node events re-sync the instance-mode bindings.

use super::*;
use serde_json::json;

/// A node as a kubelet reports it (before the cache's trim): `heartbeat` is the Ready
/// condition's lastHeartbeatTime, `capacity_cpu` a status field no decision reads.
fn node(ready: &str, heartbeat: &str, labels: serde_json::Value, capacity_cpu: &str) -> Node {
    let mut n: Node = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "n1", "labels": labels, "resourceVersion": heartbeat},
        "status": {
            "conditions": [
                {"type": "Ready", "status": ready, "lastHeartbeatTime": heartbeat,
                 "lastTransitionTime": "2026-11-27T10:00:00Z", "reason": "KubeletReady"},
                {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": heartbeat},
            ],
            "addresses": [{"type": "InternalIP", "address": "10.0.1.10"}, {"type": "Hostname", "address": "n1"}],
            "capacity": {"cpu": capacity_cpu},
        },
    }))
    .unwrap();
    trim_node(&mut n);
    n
}

#[test]
fn a_heartbeat_triggers_nothing_and_a_real_change_does() {
    let mut d = NodeDigests::default();
    let base = node("True", "2026-11-27T12:00:00Z", json!({"pool": "web"}), "4");
    assert!(!node_event_matters(&mut d, CacheEvent::Listed, &base), "the initial list triggers nothing");
    let beat = node("True", "2026-11-27T12:05:00Z", json!({"pool": "web"}), "4");
    assert!(!node_event_matters(&mut d, CacheEvent::Applied, &beat), "a heartbeat changes no decision");
    let resized = node("True", "2026-11-27T12:06:00Z", json!({"pool": "web"}), "8");
    assert!(!node_event_matters(&mut d, CacheEvent::Applied, &resized), "nor does a capacity change");
    // Seen again in a relist, unchanged: nothing.
    assert!(!node_event_matters(&mut d, CacheEvent::Applied, &resized));

    let not_ready = node("False", "2026-11-27T12:07:00Z", json!({"pool": "web"}), "8");
    assert!(node_event_matters(&mut d, CacheEvent::Applied, &not_ready), "readiness is read");
    let relabelled = node("False", "2026-11-27T12:07:00Z", json!({"pool": "batch"}), "8");
    assert!(node_event_matters(&mut d, CacheEvent::Applied, &relabelled), "labels are read");
    assert!(node_event_matters(&mut d, CacheEvent::Deleted, &relabelled), "a deletion always matters");
    assert!(node_event_matters(&mut d, CacheEvent::Applied, &relabelled), "created again: new");
}
