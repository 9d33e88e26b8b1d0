//! Which changes of an object move its digest (wake a reconciler) and which do not.

use super::*;
use serde_json::{Value, json};

/// A named change to an object's JSON.
type Edit = (&'static str, fn(&mut Value));

fn from(v: Value) -> Service {
    serde_json::from_value(v).unwrap()
}

fn service() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop", "uid": "u1", "resourceVersion": "1",
                     "labels": {"app": "web"}, "finalizers": ["service.k8s.aws/resources"],
                     "annotations": {"service.beta.kubernetes.io/aws-load-balancer-type": "external"}},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]},
    })
}

/// Applies `edit` to a copy of `base` and says whether `digest` moved.
fn moves<T: serde::de::DeserializeOwned>(base: &Value, digest: fn(&T) -> u64, edit: impl Fn(&mut Value)) -> bool {
    let mut changed = base.clone();
    edit(&mut changed);
    let (a, b): (T, T) = (serde_json::from_value(base.clone()).unwrap(), serde_json::from_value(changed).unwrap());
    digest(&a) != digest(&b)
}

#[test]
fn a_service_digest_ignores_status_and_bookkeeping_and_sees_the_rest() {
    let base = service();
    assert_eq!(service_digest(&from(base.clone())), service_digest(&from(base.clone())), "stable");
    let quiet: Vec<Edit> = vec![
        ("our hostname in the status", |v| {
            v["status"] = json!({"loadBalancer": {"ingress": [{"hostname": "a.elb.amazonaws.com"}]}})
        }),
        ("a new resourceVersion", |v| v["metadata"]["resourceVersion"] = json!("2")),
        ("managedFields", |v| v["metadata"]["managedFields"] = json!([{"manager": "kubectl"}])),
    ];
    for (what, edit) in quiet {
        assert!(!moves(&base, service_digest, edit), "{what} wakes nothing");
    }
    let loud: Vec<Edit> = vec![
        ("a port", |v| v["spec"]["ports"][0]["port"] = json!(81)),
        ("an annotation", |v| v["metadata"]["annotations"]["x"] = json!("y")),
        ("a label", |v| v["metadata"]["labels"]["tier"] = json!("front")),
        ("the finalizer going", |v| v["metadata"]["finalizers"] = json!([])),
        ("a deletion", |v| v["metadata"]["deletionTimestamp"] = json!("2026-11-27T12:00:00Z")),
        ("a re-creation", |v| v["metadata"]["uid"] = json!("u2")),
        ("an owner", |v| {
            v["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "X", "name": "o", "uid": "o1"}])
        }),
    ];
    for (what, edit) in loud {
        assert!(moves(&base, service_digest, edit), "{what} is read");
    }
}

#[test]
fn an_ingress_digest_ignores_its_status_and_sees_spec_annotations_and_metadata() {
    let base = json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "web", "namespace": "shop", "uid": "u1",
                     "annotations": {"alb.ingress.kubernetes.io/group.name": "g"}},
        "spec": {"ingressClassName": "alb", "defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}},
    });
    assert!(
        !moves(&base, ingress_digest, |v| v["status"] =
            json!({"loadBalancer": {"ingress": [{"hostname": "k8s-g.elb.amazonaws.com"}]}})),
        "our hostname wakes nothing"
    );
    let loud: Vec<Edit> = vec![
        ("the class", |v| v["spec"]["ingressClassName"] = json!("other")),
        ("a backend", |v| v["spec"]["defaultBackend"]["service"]["name"] = json!("api")),
        ("the group annotation", |v| v["metadata"]["annotations"]["alb.ingress.kubernetes.io/group.name"] = json!("h")),
        ("a finalizer", |v| v["metadata"]["finalizers"] = json!(["group.ingress.k8s.aws/g"])),
        ("a deletion", |v| v["metadata"]["deletionTimestamp"] = json!("2026-11-27T12:00:00Z")),
    ];
    for (what, edit) in loud {
        assert!(moves(&base, ingress_digest, edit), "{what} is read");
    }
}

#[test]
fn a_binding_digest_ignores_what_the_binding_reconciler_writes() {
    let base = json!({
        "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
        "metadata": {"name": "k8s-shop-web-1", "namespace": "shop", "uid": "b1",
                     "labels": {"service.k8s.aws/stack-namespace": "shop", "service.k8s.aws/stack-name": "web"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "web", "uid": "u1", "controller": true}]},
        "spec": {"serviceRef": {"name": "web", "port": 80}, "targetGroupARN": "arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/a/1", "targetType": "ip"},
    });
    let quiet: Vec<Edit> = vec![
        ("its status", |v| v["status"] = json!({"observedGeneration": 2})),
        ("a checkpoint annotation", |v| v["metadata"]["annotations"] = json!({"elbv2.k8s.aws/checkpoint": "abc"})),
        ("its reconciler's finalizer", |v| v["metadata"]["finalizers"] = json!(["elbv2.k8s.aws/resources"])),
        ("a new resourceVersion", |v| v["metadata"]["resourceVersion"] = json!("9")),
    ];
    for (what, edit) in quiet {
        assert!(!moves(&base, binding_owner_digest, edit), "{what} wakes no owner");
    }
    let loud: Vec<Edit> = vec![
        ("its target group", |v| {
            v["spec"]["targetGroupARN"] = json!("arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/b/2")
        }),
        ("its Service port", |v| v["spec"]["serviceRef"]["port"] = json!(81)),
        ("a stack label", |v| v["metadata"]["labels"]["service.k8s.aws/stack-name"] = json!("api")),
        ("its owner", |v| v["metadata"]["ownerReferences"][0]["uid"] = json!("u2")),
        ("a deletion", |v| v["metadata"]["deletionTimestamp"] = json!("2026-11-27T12:00:00Z")),
    ];
    for (what, edit) in loud {
        assert!(moves(&base, binding_owner_digest, edit), "{what} is read by its owner");
    }
}

#[test]
fn digests_record_changes_per_key_and_forget() {
    let mut d: Digests = Digests::default();
    assert!(d.record("a", 1), "a new key is a change");
    assert!(!d.record("a", 1), "the same digest is not");
    assert!(d.record("a", 2));
    assert!(d.record("b", 2), "keys are independent");
    assert_eq!(d.len(), 2);
    d.deleted("a");
    assert!(d.record("a", 2), "a forgotten key is new again");
    assert_eq!(key_of(&from(service())), "shop/web");
    assert_eq!(from(service()).digest_key(), "Service/shop/web", "one map holds every kind");
    assert_eq!(from(service()).read_digest(), service_digest(&from(service())));
}

/// What `changed` and `end_write` decide, as the wake-ups that ran, in every order of an own
/// write's answer and its watch event.
#[test]
fn an_own_write_wakes_nobody_in_either_order_and_anyone_elses_change_wakes_once() {
    let mut d: Digests<&str> = Digests::default();
    assert_eq!(d.changed("k", 1, || "created"), Some("created"), "no write in flight: a change wakes now");
    assert_eq!(d.changed("k", 1, || "again"), None, "the same digest does not");

    // The answer comes first, then the event.
    d.begin_write("k");
    assert_eq!(d.end_write("k", Some(2)), None);
    assert_eq!(d.changed("k", 2, || "ours, late"), None, "the event of our write finds it recorded");

    // The event comes first, then the answer.
    d.begin_write("k");
    assert_eq!(d.changed("k", 3, || "ours, early"), None, "held while the write is in flight");
    assert_eq!(d.end_write("k", Some(3)), None, "it was our write: nobody wakes");
    assert_eq!(d.changed("k", 3, || "repeat"), None);

    // Someone else's change seen during our write: it wakes once, at the answer.
    d.begin_write("k");
    assert_eq!(d.changed("k", 4, || "ours"), None);
    assert_eq!(d.changed("k", 5, || "a user's edit"), None);
    assert_eq!(d.end_write("k", Some(4)), Some("a user's edit"), "not our write: it wakes");
    assert_eq!(d.changed("k", 5, || "repeat"), None, "and only once");

    // Someone else's change first, our write's event last: what readers see is our write's.
    d.begin_write("k");
    assert_eq!(d.changed("k", 6, || "a user's edit"), None);
    assert_eq!(d.changed("k", 7, || "ours"), None);
    assert_eq!(d.end_write("k", Some(7)), None, "the last change seen is our own answer");

    // The write failed: a change seen meanwhile was not ours.
    d.begin_write("k");
    assert_eq!(d.changed("k", 8, || "a user's edit"), None);
    assert_eq!(d.end_write("k", None), Some("a user's edit"));
    d.begin_write("k");
    assert_eq!(d.end_write("k", None), None, "a failed write with nothing seen wakes nobody");
    assert_eq!(d.changed("k", 8, || "repeat"), None, "and recorded nothing");
}

#[test]
fn writes_of_one_key_decide_at_the_last_answer_and_a_deletion_is_never_recorded_back() {
    let mut d: Digests<&str> = Digests::default();
    d.record("k", 1);
    d.begin_write("k");
    d.begin_write("k");
    assert_eq!(d.changed("k", 2, || "first write's"), None);
    assert_eq!(d.end_write("k", Some(2)), None, "another write is still in flight");
    assert_eq!(d.changed("k", 3, || "second write's"), None, "still held");
    assert_eq!(d.end_write("k", Some(3)), None, "both were ours");
    assert_eq!(d.end_write("k", Some(9)), None, "an unmatched end is ignored");

    d.begin_write("k");
    d.deleted("k");
    assert_eq!(d.end_write("k", Some(4)), None);
    assert!(d.is_empty(), "the deleted object's digest is not recorded back");
    assert_eq!(d.changed("k", 4, || "created again"), Some("created again"));

    assert_eq!(d.changed("other", 1, || "independent"), Some("independent"), "other keys are not held");
}
