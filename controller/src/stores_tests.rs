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
    let mut d: Digests = Digests::default();
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

/// Every channel a watch event can reach, as the leader has them.
struct Woken {
    t: Triggers,
    bindings: tokio::sync::mpsc::UnboundedReceiver<ObjectRef<TargetGroupBinding>>,
    services: tokio::sync::mpsc::UnboundedReceiver<ObjectRef<Service>>,
    ingresses: tokio::sync::mpsc::UnboundedReceiver<IngressTrigger>,
}

impl Woken {
    fn new() -> Self {
        let t = Triggers::default();
        let (b, bindings) = tokio::sync::mpsc::unbounded_channel();
        let (s, services) = tokio::sync::mpsc::unbounded_channel();
        let (i, ingresses) = tokio::sync::mpsc::unbounded_channel();
        t.set_sender(Some(b));
        t.set_service_sender(Some(s));
        t.set_ingress_sender(Some(i));
        Self { t, bindings, services, ingresses }
    }

    /// What was woken since the last call: (bindings, Services, Ingress triggers).
    fn drain(&mut self) -> (Vec<String>, Vec<String>, Vec<IngressTrigger>) {
        let (mut b, mut s, mut i) = (vec![], vec![], vec![]);
        while let Ok(r) = self.bindings.try_recv() {
            b.push(r.to_string());
        }
        while let Ok(r) = self.services.try_recv() {
            s.push(r.to_string());
        }
        while let Ok(r) = self.ingresses.try_recv() {
            i.push(r);
        }
        (b, s, i)
    }
}

fn binding(edit: impl FnOnce(&mut serde_json::Value)) -> TargetGroupBinding {
    let mut v = json!({
        "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
        "metadata": {"name": "k8s-shop-web", "namespace": "shop", "uid": "b1",
                     "labels": {"service.k8s.aws/stack-namespace": "shop", "service.k8s.aws/stack-name": "web"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "web", "uid": "u1", "controller": true}]},
        "spec": {"serviceRef": {"name": "web", "port": 80}, "targetGroupARN": "arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/a/1", "targetType": "ip"},
    });
    edit(&mut v);
    serde_json::from_value(v).unwrap()
}

#[test]
fn a_binding_wakes_its_owner_only_when_what_the_owner_reads_changed() {
    let mut w = Woken::new();
    let base = binding(|_| {});
    on_binding_event(&w.t, CacheEvent::Listed, &base);
    assert_eq!(w.drain(), (vec![], vec![], vec![]), "the initial list wakes nothing");

    let synced = binding(|v| {
        v["status"] = json!({"observedGeneration": 1});
        v["metadata"]["annotations"] = json!({"elbv2.k8s.aws/checkpoint": "c1"});
    });
    on_binding_event(&w.t, CacheEvent::Applied, &synced);
    let (b, s, i) = w.drain();
    assert_eq!((b.len(), s, i), (1, vec![], vec![]), "our status and checkpoint wake the binding, not the Service");

    let edited = binding(|v| v["spec"]["serviceRef"]["port"] = json!(81));
    on_binding_event(&w.t, CacheEvent::Applied, &edited);
    assert_eq!(w.drain().1, vec!["Service.v1./web.shop"], "a spec edit wakes the owning Service");

    on_binding_event(&w.t, CacheEvent::Deleted, &edited);
    assert_eq!(w.drain().1, vec!["Service.v1./web.shop"], "a deletion wakes it");

    // The Service applies it again: its own write, answered before the watch event comes.
    w.t.own_write(base.digest_key()).done(&base);
    on_binding_event(&w.t, CacheEvent::Applied, &base);
    let (b, s, _) = w.drain();
    assert_eq!((b.len(), s), (1, vec![]), "the owner's own apply wakes the binding, not the owner");
    // And once more, with the watch event before the write's answer.
    let write = w.t.own_write(edited.digest_key());
    on_binding_event(&w.t, CacheEvent::Applied, &edited);
    write.done(&edited);
    let (b, s, _) = w.drain();
    assert_eq!((b.len(), s), (1, vec![]), "an event that came first does not wake the owner either");
}

#[test]
fn a_change_seen_during_an_own_write_that_is_not_the_write_wakes_the_owner_at_the_answer() {
    let mut w = Woken::new();
    let base = binding(|_| {});
    on_binding_event(&w.t, CacheEvent::Listed, &base);
    let applied = binding(|v| v["spec"]["serviceRef"]["port"] = json!(81));
    let edited = binding(|v| v["spec"]["serviceRef"]["port"] = json!(82));

    let write = w.t.own_write(applied.digest_key());
    on_binding_event(&w.t, CacheEvent::Applied, &applied);
    on_binding_event(&w.t, CacheEvent::Applied, &edited);
    assert_eq!(w.drain().1, Vec::<String>::new(), "held while the write is in flight");
    write.done(&applied);
    assert_eq!(w.drain().1, vec!["Service.v1./web.shop"], "someone else's edit wakes the owner at the answer");

    // A write that fails (dropped unanswered): what was seen meanwhile was not ours.
    let write = w.t.own_write(base.digest_key());
    on_binding_event(&w.t, CacheEvent::Applied, &base);
    drop(write);
    assert_eq!(w.drain().1, vec!["Service.v1./web.shop"]);

    // A deletion during the write wakes at once.
    let write = w.t.own_write(base.digest_key());
    on_binding_event(&w.t, CacheEvent::Deleted, &base);
    assert_eq!(w.drain().1, vec!["Service.v1./web.shop"]);
    write.done(&base);
    assert_eq!(w.drain().1, Vec::<String>::new());
}

/// A write that leaves what the owner reads as it was (a status write) answers with the object
/// as stored, which already holds a change someone made meanwhile: the answer's digest then equals
/// the held change's, yet the change is not ours. Resource versions tell them apart.
#[test]
fn a_change_folded_into_the_answer_of_our_own_write_still_wakes_the_owner() {
    let mut w = Woken::new();
    let at = |rv: &str, port: i64| {
        binding(|v| {
            v["metadata"]["resourceVersion"] = json!(rv);
            v["spec"]["serviceRef"]["port"] = json!(port);
        })
    };
    on_binding_event(&w.t, CacheEvent::Listed, &at("10", 80));
    let write = w.t.own_write(at("10", 80).digest_key());
    on_binding_event(&w.t, CacheEvent::Applied, &at("11", 81));
    assert_eq!(w.drain().1, Vec::<String>::new(), "held while the write is in flight");
    write.done(&at("12", 81));
    assert_eq!(w.drain().1, vec!["Service.v1./web.shop"], "someone else's edit (rv 11) wakes the owner");

    // The write's own change, its event first: no wake.
    let write = w.t.own_write(at("12", 81).digest_key());
    on_binding_event(&w.t, CacheEvent::Applied, &at("13", 82));
    write.done(&at("13", 82));
    assert_eq!(w.drain().1, Vec::<String>::new(), "our own change (rv 13) does not wake the owner");
}

#[test]
fn an_ingress_stack_binding_wakes_its_group_on_spec_changes_only() {
    let mut w = Woken::new();
    let labelled = |port: i64, status: bool| {
        binding(|v| {
            v["metadata"]["labels"] = json!({"ingress.k8s.aws/stack": "g"});
            v["metadata"]["ownerReferences"] = json!([]);
            v["spec"]["serviceRef"]["port"] = json!(port);
            if status {
                v["status"] = json!({"observedGeneration": 3});
            }
        })
    };
    on_binding_event(&w.t, CacheEvent::Applied, &labelled(80, false));
    let group = vec![IngressTrigger::Binding([("ingress.k8s.aws/stack".to_string(), "g".to_string())].into())];
    assert_eq!(w.drain().2, group, "a new binding wakes its group");
    on_binding_event(&w.t, CacheEvent::Applied, &labelled(80, true));
    assert_eq!(w.drain().2, vec![], "its status does not");
    on_binding_event(&w.t, CacheEvent::Applied, &labelled(8080, true));
    assert_eq!(w.drain().2, group, "its spec does");
}

/// A named change to an object's JSON.
type Edit = (&'static str, fn(&mut serde_json::Value));

fn svc(edit: impl FnOnce(&mut serde_json::Value)) -> Service {
    let mut v = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop", "uid": "u1",
                     "annotations": {"service.beta.kubernetes.io/aws-load-balancer-type": "external"}},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]},
    });
    edit(&mut v);
    serde_json::from_value(v).unwrap()
}

#[test]
fn a_service_wakes_its_readers_unless_only_its_status_changed() {
    let mut w = Woken::new();
    let (tgbs, mut writer) = crate::stack::test_world::synced_store::<TargetGroupBinding>();
    writer.apply_watcher_event(&watcher::Event::Apply(binding(|_| {})));
    on_service_event(&w.t, &tgbs, CacheEvent::Listed, &svc(|_| {}));
    assert_eq!(w.drain(), (vec![], vec![], vec![]), "the initial list wakes nothing");

    let hostname = |v: &mut serde_json::Value| {
        v["status"] = json!({"loadBalancer": {"ingress": [{"hostname": "k8s-shop-web.elb.amazonaws.com"}]}})
    };
    on_service_event(&w.t, &tgbs, CacheEvent::Applied, &svc(hostname));
    assert_eq!(w.drain(), (vec![], vec![], vec![]), "our hostname in its status wakes nothing");

    let everyone = (
        vec!["TargetGroupBinding.v1beta1.elbv2.k8s.aws/k8s-shop-web.shop".to_string()],
        vec!["Service.v1./web.shop".to_string()],
        vec![IngressTrigger::Service { namespace: "shop".into(), name: "web".into() }],
    );
    let edits: Vec<Edit> = vec![
        ("an annotation", |v| {
            v["metadata"]["annotations"]["service.beta.kubernetes.io/aws-load-balancer-scheme"] =
                json!("internet-facing")
        }),
        ("a port", |v| v["spec"]["ports"][0]["targetPort"] = json!(9090)),
        ("a finalizer", |v| v["metadata"]["finalizers"] = json!(["service.k8s.aws/resources"])),
    ];
    for (what, edit) in edits {
        on_service_event(
            &w.t,
            &tgbs,
            CacheEvent::Applied,
            &svc(|v| {
                hostname(v);
                edit(v);
            }),
        );
        assert_eq!(w.drain(), everyone, "{what} wakes the Service, its Ingresses and its bindings");
        on_service_event(&w.t, &tgbs, CacheEvent::Applied, &svc(hostname));
        assert_eq!(w.drain(), everyone, "and so does undoing it");
    }
    on_service_event(&w.t, &tgbs, CacheEvent::Deleted, &svc(hostname));
    assert_eq!(w.drain(), everyone, "a deletion wakes them");
}

#[test]
fn an_ingress_wakes_its_groups_unless_only_its_status_changed() {
    let mut w = Woken::new();
    let ing = |class: &str, hostname: bool| -> Ingress {
        let mut v = json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "web", "namespace": "shop", "uid": "i1"},
            "spec": {"ingressClassName": class},
        });
        if hostname {
            v["status"] = json!({"loadBalancer": {"ingress": [{"hostname": "k8s-g.elb.amazonaws.com"}]}});
        }
        serde_json::from_value(v).unwrap()
    };
    on_ingress_event(&w.t, CacheEvent::Applied, &ing("alb", false));
    let woken = vec![IngressTrigger::Ingress(ObjectRef::new("web").within("shop"))];
    assert_eq!(w.drain().2, woken, "a new Ingress wakes its groups");
    on_ingress_event(&w.t, CacheEvent::Applied, &ing("alb", true));
    assert_eq!(w.drain().2, vec![], "our hostname does not");
    on_ingress_event(&w.t, CacheEvent::Applied, &ing("other", true));
    assert_eq!(w.drain().2, woken, "another class does");
    on_ingress_event(&w.t, CacheEvent::Deleted, &ing("other", true));
    assert_eq!(w.drain().2, woken, "a deletion does");
}

#[test]
fn a_reconcilers_own_finalizer_write_wakes_nobody_and_anyone_elses_change_still_does() {
    let mut w = Woken::new();
    let (tgbs, _writer) = crate::stack::test_world::synced_store::<TargetGroupBinding>();
    on_service_event(&w.t, &tgbs, CacheEvent::Applied, &svc(|_| {}));
    w.drain();
    // The Service reconciler added its finalizer and goes on in the same pass.
    let finalized = svc(|v| v["metadata"]["finalizers"] = json!(["service.k8s.aws/resources"]));
    let write = w.t.own_write(finalized.digest_key());
    on_service_event(&w.t, &tgbs, CacheEvent::Applied, &finalized);
    write.done(&finalized);
    assert_eq!(w.drain(), (vec![], vec![], vec![]), "its own finalizer wakes nobody, its event seen first");
    let edited = svc(|v| {
        v["metadata"]["finalizers"] = json!(["service.k8s.aws/resources"]);
        v["metadata"]["annotations"]["service.beta.kubernetes.io/aws-load-balancer-scheme"] = json!("internet-facing");
    });
    on_service_event(&w.t, &tgbs, CacheEvent::Applied, &edited);
    assert_eq!(w.drain().1, vec!["Service.v1./web.shop"], "a user's edit after it does");
}

#[test]
fn an_endpoint_change_that_may_remove_targets_is_flagged_until_reconciled() {
    let mut w = Woken::new();
    let r: ObjectRef<TargetGroupBinding> = ObjectRef::new("k8s-shop-web").within("shop");
    w.t.send_change(r.clone(), Some(false));
    assert!(w.t.is_dirty(&r) && !w.t.is_removing(&r), "new endpoints only: pacing may hold it");
    w.t.send_change(r.clone(), Some(true));
    assert!(w.t.is_removing(&r), "a terminating endpoint since: never held");
    w.t.send_change(r.clone(), Some(false));
    assert!(w.t.is_removing(&r), "a later addition does not clear the removal");
    assert!(w.t.take_dirty_since(&r).is_some());
    assert!(!w.t.is_dirty(&r) && !w.t.is_removing(&r), "both cleared when the reconcile takes the change");
    w.t.send_change(r.clone(), None);
    assert!(!w.t.is_dirty(&r), "a change of something else is no endpoint change");
    assert_eq!(w.drain().0.len(), 4, "each one wakes the binding");
}

fn gated(gate_status: Option<(&str, &str)>, ready: bool) -> PodInfo {
    let gate = "target-health.elbv2.k8s.aws/web";
    let mut conditions = vec![json!({"type": "ContainersReady", "status": "True"})];
    if let Some((status, reason)) = gate_status {
        conditions.push(json!({"type": gate, "status": status, "reason": reason}));
    }
    if ready {
        conditions.push(json!({"type": "Ready", "status": "True"}));
    }
    PodInfo::from_pod(
        &serde_json::from_value(json!({
            "metadata": {"name": "web-0", "namespace": "shop", "uid": "u"},
            "spec": {"readinessGates": [{"conditionType": gate}], "nodeName": "n1"},
            "status": {"podIP": "10.0.1.5", "conditions": conditions},
        }))
        .unwrap(),
    )
}

#[test]
fn our_own_gate_patch_coming_back_wakes_nobody_once_and_anything_else_still_does() {
    let t = Triggers::default();
    let write = |status: &str, reason: &str| GateWrite {
        condition_type: "target-health.elbv2.k8s.aws/web".into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: None,
    };
    let (before, registering) = (gated(None, false), gated(Some(("False", "Elb.RegistrationInProgress")), false));
    assert!(!t.only_our_gate_writes("shop", "web-0", &before, &registering), "no write of ours pending");
    t.expect_gate_write("shop", "web-0", write("False", "Elb.RegistrationInProgress"));
    assert!(t.only_our_gate_writes("shop", "web-0", &before, &registering), "our patch coming back");
    assert!(!t.only_our_gate_writes("shop", "web-0", &before, &registering), "consumed: the same change again is real");
    // Our True patch arriving together with the kubelet's Ready: a real change, and consumed.
    let healthy = gated(Some(("True", "Healthy")), true);
    t.expect_gate_write("shop", "web-0", write("True", "Healthy"));
    assert!(!t.only_our_gate_writes("shop", "web-0", &registering, &healthy));
    assert!(t.gate_writes.lock().unwrap().is_empty(), "the write was seen, so it is forgotten");
    // A failed patch is forgotten at once.
    t.expect_gate_write("shop", "web-0", write("True", "Healthy"));
    t.forget_gate_write("shop", "web-0", "target-health.elbv2.k8s.aws/web");
    assert!(t.gate_writes.lock().unwrap().is_empty());
}
