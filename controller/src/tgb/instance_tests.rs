//! Instance mode through the binding reconciler's entry point, with the harness of
//! `tests.rs` (mocked API server behind the leader gate, AWS fakes, paused time): exact AWS
//! calls, instance lookups and Kubernetes writes.

use super::*;
use lbc_model::crd::TargetType;
use lbc_model::nodes::InstanceTarget;

const VPC: &str = "vpc-1";

fn instance_binding(finalizer: bool) -> TargetGroupBinding {
    let mut b = binding(finalizer);
    b.spec.target_type = Some(TargetType::Instance);
    b
}

fn node_port_service(node_port: Option<u16>) -> Service {
    let mut port = json!({"name": "http", "port": 80, "targetPort": 8080});
    if let Some(np) = node_port {
        port["nodePort"] = json!(np);
    }
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"type": "NodePort", "ports": [port]},
    }))
    .unwrap()
}

/// A kwok-like node: no providerID unless given, one InternalIP.
fn node(name: &str, ip: &str, ready: bool, labels: &[(&str, &str)], provider_id: Option<&str>) -> Node {
    let labels: serde_json::Map<String, serde_json::Value> =
        labels.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    let mut n = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
        },
    });
    if let Some(p) = provider_id {
        n["spec"] = json!({"providerID": p});
    }
    let mut n: Node = serde_json::from_value(n).unwrap();
    lbc_model::pod::trim_node(&mut n);
    n
}

fn three_nodes() -> Vec<Node> {
    vec![
        node("n1", "10.0.1.10", true, &[], None),
        node("n2", "10.0.1.11", true, &[], Some("rke2://n2")),
        node("n3", "10.0.1.12", true, &[], None),
    ]
}

/// Replaces the harness's target group with one of `target_type` in the test's VPC.
fn set_target_group_type(h: &Harness, target_type: &str) {
    h.elb.remove_target_group(ARN);
    h.elb.add_target_group(TargetGroupInfo {
        arn: ARN.into(),
        name: "web".into(),
        target_type: target_type.into(),
        vpc_id: Some(VPC.into()),
        ..Default::default()
    });
}

async fn instance_harness(nodes: Vec<Node>, node_port: Option<u16>) -> Harness {
    let c = Cluster {
        tgb: instance_binding(true),
        service: Some(node_port_service(node_port)),
        slices: vec![],
        pods: vec![],
        nodes,
    };
    let h = harness(c).await;
    set_target_group_type(&h, "instance");
    h.instances.add(VPC, "10.0.1.10", "i-0000000000000000a");
    h.instances.add(VPC, "10.0.1.11", "i-0000000000000000b");
    h.instances.add(VPC, "10.0.1.12", "i-0000000000000000c");
    h
}

impl Harness {
    fn instance_targets(&self) -> Vec<String> {
        self.elb.registered_instances(ARN).iter().map(InstanceTarget::to_string).collect()
    }

    fn set_node(&self, n: Node) {
        self.nodes.lock().unwrap().apply_watcher_event(&watcher::Event::Apply(n));
    }

    fn delete_node(&self, n: Node) {
        self.nodes.lock().unwrap().apply_watcher_event(&watcher::Event::Delete(n));
    }

    /// Instance lookups since the last look, as `(VPC, IPs asked)`.
    fn lookups(&self) -> Vec<(String, usize)> {
        let c = self.instances.calls();
        self.instances.clear_calls();
        c
    }

    /// Bodies of the Events published since the last look, as (reason, note).
    fn event_notes(&self) -> Vec<(String, String)> {
        let mut s = self.server.lock().unwrap();
        let seen = std::mem::take(&mut s.seen);
        let (ev, rest): (Vec<Seen>, Vec<Seen>) = seen.into_iter().partition(|r| r.path.ends_with("/events"));
        s.seen = rest;
        ev.iter()
            .map(|e| {
                (
                    e.body["reason"].as_str().unwrap_or_default().into(),
                    e.body["note"].as_str().unwrap_or_default().into(),
                )
            })
            .collect()
    }
}

#[tokio::test(start_paused = true)]
async fn nodes_without_provider_id_are_registered_by_their_ip_on_the_node_port() {
    let h = instance_harness(three_nodes(), Some(30080)).await;
    let action = h.reconcile(&instance_binding(true)).await.unwrap();
    assert_eq!(
        h.instance_targets(),
        ["i-0000000000000000a:30080", "i-0000000000000000b:30080", "i-0000000000000000c:30080"]
    );
    assert_eq!(h.lookups(), [(VPC.to_string(), 3)], "one batched lookup for the three nodes");
    assert_eq!(
        h.aws(),
        ["DescribeTargetGroups(0)", "DescribeTags(0)", "DescribeTargetHealth(0)", "RegisterTargets(3)"]
    );
    let kube = h.kube();
    assert_eq!(kube.iter().map(Seen::line).collect::<Vec<_>>(), [format!("PATCH {TGB_PATH}/status")]);
    assert_eq!(ready_condition(&kube[0]), ("True".into(), "Synced".into()));
    assert_eq!(kube[0].body["status"]["registeredTargets"], json!(3));
    assert_eq!(h.events(), ["SuccessfullyReconciled"]);
    assert!(requeues_within(&action, 600, 900), "next verification after the jittered sync period: {action:?}");

    // Nothing changed: no AWS call, no lookup (cached), no write.
    let mut synced = instance_binding(true);
    synced.status = serde_json::from_value(kube[0].body["status"].clone()).unwrap();
    h.reconcile(&synced).await.unwrap();
    assert_eq!(h.aws(), Vec::<String>::new());
    assert_eq!(h.lookups(), Vec::<(String, usize)>::new());
    assert_eq!(h.kube_lines(), Vec::<String>::new());
}

#[tokio::test(start_paused = true)]
async fn a_provider_id_wins_over_the_ip() {
    let nodes = vec![node("n1", "10.0.1.10", true, &[], Some("aws:///eu-west-1a/i-0123456789abcdef0"))];
    let h = instance_harness(nodes, Some(30080)).await;
    h.reconcile(&instance_binding(true)).await.unwrap();
    assert_eq!(h.instance_targets(), ["i-0123456789abcdef0:30080"]);
    assert_eq!(h.lookups(), Vec::<(String, usize)>::new(), "no lookup for a node with an AWS providerID");
}

#[tokio::test(start_paused = true)]
async fn nodes_follow_readiness_labels_and_deletion() {
    let h = instance_harness(three_nodes(), Some(30080)).await;
    h.reconcile(&instance_binding(true)).await.unwrap();
    h.aws();
    h.lookups();

    h.set_node(node("n1", "10.0.1.10", false, &[], None));
    h.reconcile(&instance_binding(true)).await.unwrap();
    assert_eq!(h.instance_targets(), ["i-0000000000000000b:30080", "i-0000000000000000c:30080"], "NotReady leaves");
    assert_eq!(h.aws(), ["DescribeTargetHealth(0)", "DeregisterTargets(1)"]);

    h.set_node(node("n2", "10.0.1.11", true, &[("node.kubernetes.io/exclude-from-external-load-balancers", "")], None));
    h.reconcile(&instance_binding(true)).await.unwrap();
    assert_eq!(h.instance_targets(), ["i-0000000000000000c:30080"], "excluded by label");

    h.delete_node(node("n3", "10.0.1.12", true, &[], None));
    h.set_node(node("n4", "10.0.1.13", true, &[], None));
    h.instances.add(VPC, "10.0.1.13", "i-0000000000000000d");
    h.aws();
    h.lookups();
    h.reconcile(&instance_binding(true)).await.unwrap();
    assert_eq!(h.instance_targets(), ["i-0000000000000000d:30080"], "deleted node out, new node in");
    assert_eq!(h.aws(), ["DescribeTargetHealth(0)", "DeregisterTargets(1)", "RegisterTargets(1)"]);
    assert_eq!(h.lookups(), [(VPC.to_string(), 1)], "only the new node is looked up");
    assert_eq!(
        h.ctx.instances.len(),
        3,
        "the deleted node n3 is forgotten; n1, n2 (excluded, still a node) and n4 remain"
    );

    // Back to Ready: cached, no lookup.
    h.set_node(node("n1", "10.0.1.10", true, &[], None));
    h.reconcile(&instance_binding(true)).await.unwrap();
    assert_eq!(h.instance_targets(), ["i-0000000000000000a:30080", "i-0000000000000000d:30080"]);
    assert_eq!(h.lookups(), Vec::<(String, usize)>::new());
}

#[tokio::test(start_paused = true)]
async fn the_node_selector_chooses_the_nodes() {
    let nodes = vec![
        node("n1", "10.0.1.10", true, &[("pool", "web")], None),
        node("n2", "10.0.1.11", true, &[("pool", "batch")], None),
    ];
    let h = instance_harness(nodes, Some(30080)).await;
    let mut b = instance_binding(true);
    b.spec.node_selector = Some(serde_json::from_value(json!({"matchLabels": {"pool": "web"}})).unwrap());
    h.reconcile(&b).await.unwrap();
    assert_eq!(h.instance_targets(), ["i-0000000000000000a:30080"]);
    assert_eq!(h.lookups(), [(VPC.to_string(), 1)], "ineligible nodes are not looked up");
}

#[tokio::test(start_paused = true)]
async fn an_unresolvable_node_gets_a_warning_and_the_others_register() {
    let mut nodes = three_nodes();
    nodes.push(node("ghost", "10.0.9.99", true, &[], None));
    let h = instance_harness(nodes, Some(30080)).await;
    h.reconcile(&instance_binding(true)).await.unwrap();
    assert_eq!(h.instance_targets().len(), 3);
    let events = h.event_notes();
    let (reason, note) = events.iter().find(|(r, _)| r == "NodeInstanceNotFound").expect("warning published");
    assert_eq!(reason, "NodeInstanceNotFound");
    for part in ["node ghost", "10.0.9.99", "private-ip-address=10.0.9.99", "vpc-id=vpc-1", "NOT registered"] {
        assert!(note.contains(part), "{part:?} missing from the warning: {note}");
    }
    let kube = h.kube();
    let status = &kube.iter().find(|r| r.path.ends_with("/status")).expect("status written").body;
    assert!(status.to_string().contains("not resolved to an instance: ghost"), "{status}");

    // The same node unresolved again: within MISS_TTL no look-up (node events re-sync every
    // instance binding; one unresolvable node must not cost a call each time), warned once.
    h.reconcile(&instance_binding(true)).await.unwrap();
    assert_eq!(h.lookups(), [(VPC.to_string(), 4)], "one look-up, of the four nodes, for both passes");
    assert!(h.event_notes().iter().all(|(r, _)| r != "NodeInstanceNotFound"));
    // After it, asked again; still the only Warning.
    tokio::time::advance(lbc_aws::instances::MISS_TTL).await;
    h.reconcile(&instance_binding(true)).await.unwrap();
    assert_eq!(h.lookups(), [(VPC.to_string(), 1)], "the ghost alone, asked again");
    assert!(h.event_notes().iter().all(|(r, _)| r != "NodeInstanceNotFound"));
}

#[tokio::test(start_paused = true)]
async fn deleting_the_binding_deregisters_every_instance_target() {
    let h = instance_harness(three_nodes(), Some(30080)).await;
    h.reconcile(&instance_binding(true)).await.unwrap();
    h.aws();
    h.kube();
    h.reconcile(&deleting(instance_binding(true))).await.unwrap();
    assert_eq!(h.instance_targets(), Vec::<String>::new());
    assert_eq!(h.aws(), ["DescribeTargetHealth(0)", "DeregisterTargets(3)"], "owner tags already known");
    let lines = h.kube_lines();
    assert_eq!(lines, [format!("PATCH {TGB_PATH}")], "then the finalizer goes");
}

#[tokio::test(start_paused = true)]
async fn a_service_without_node_port_is_reported_not_guessed() {
    let h = instance_harness(three_nodes(), None).await;
    h.reconcile(&instance_binding(true)).await.unwrap();
    assert_eq!(h.instance_targets(), Vec::<String>::new());
    let kube = h.kube();
    assert_eq!(ready_condition(&kube[0]), ("False".into(), "ServiceNodePortMissing".into()));
    assert!(h.aws().iter().all(|c| !c.starts_with("Register")));
}

#[tokio::test(start_paused = true)]
async fn an_ip_target_group_is_refused_for_an_instance_binding() {
    let h = instance_harness(three_nodes(), Some(30080)).await;
    set_target_group_type(&h, "ip");
    h.reconcile(&instance_binding(true)).await.unwrap();
    let kube = h.kube();
    assert_eq!(ready_condition(&kube[0]), ("False".into(), "TargetTypeMismatch".into()));
    assert_eq!(h.aws(), ["DescribeTargetGroups(0)"]);
    assert!(h.elb.registered(ARN).is_empty());
}

/// Cold start at scale costs the call floor: one read each of the group, its tags and its
/// registrations, one DescribeInstances per 200 nodes and one RegisterTargets per 200 targets.
#[tokio::test(start_paused = true)]
async fn cold_start_at_450_nodes_costs_the_call_floor() {
    let ip = |i: u32| format!("10.0.{}.{}", 10 + i / 200, i % 200 + 1);
    let nodes: Vec<Node> = (0..450).map(|i| node(&format!("n{i:03}"), &ip(i), true, &[], None)).collect();
    let h = instance_harness(nodes, Some(30080)).await;
    for i in 0..450 {
        h.instances.add(VPC, &ip(i), &format!("i-{:017x}", 0x1000 + i));
    }
    h.reconcile(&instance_binding(true)).await.unwrap();
    assert_eq!(h.instance_targets().len(), 450);
    assert_eq!(h.lookups().iter().map(|(_, n)| *n).collect::<Vec<_>>(), [200, 200, 50]);
    assert_eq!(
        h.aws(),
        [
            "DescribeTargetGroups(0)",
            "DescribeTags(0)",
            "DescribeTargetHealth(0)",
            "RegisterTargets(200)",
            "RegisterTargets(200)",
            "RegisterTargets(50)"
        ]
    );
}
