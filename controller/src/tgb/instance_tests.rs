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
        others: vec![],
        tenancy: Arc::default(),
        credentials: None,
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
    assert_eq!(
        kube.iter().map(Seen::line).collect::<Vec<_>>(),
        [format!("PATCH {TGB_PATH}/status"), format!("PATCH {TGB_PATH}")],
        "status, then the checkpoint annotation"
    );
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

/// Issue 21's cross-check: an instance found by a node's IP whose zone or EC2 hostname
/// disagrees with the node is not registered for it, and a Warning says which node, IP,
/// instance, value seen and value expected; the other nodes still register.
#[tokio::test(start_paused = true)]
async fn an_instance_that_fails_the_cross_check_is_not_registered_and_warned_about() {
    use lbc_model::nodes::{Instance, ZONE_LABEL};
    let zone = |z: &'static str| [(ZONE_LABEL, z)];
    let nodes = vec![
        node("n1", "10.0.1.10", true, &zone("eu-west-1a"), None),
        node("n2", "10.0.1.11", true, &zone("eu-west-1b"), None),
        node("ip-10-0-1-12", "10.0.1.12", true, &[], None),
        node("rke2-agent-4", "10.0.1.13", true, &zone("eu-west-1a"), None),
    ];
    let h = instance_harness(nodes, Some(30080)).await;
    let inst = |id: &str, zone: &str, host: &str| Instance {
        id: id.into(),
        zone: Some(zone.into()),
        private_dns_name: Some(format!("{host}.eu-west-1.compute.internal")),
    };
    h.instances.add_instance(VPC, "10.0.1.10", inst("i-0000000000000000a", "eu-west-1a", "ip-10-0-1-10"));
    h.instances.add_instance(VPC, "10.0.1.11", inst("i-0000000000000000b", "eu-west-1a", "ip-10-0-1-11"));
    h.instances.add_instance(VPC, "10.0.1.12", inst("i-0000000000000000c", "eu-west-1a", "ip-10-0-7-7"));
    h.instances.add_instance(VPC, "10.0.1.13", inst("i-0000000000000000d", "eu-west-1a", "ip-10-0-1-13"));
    h.reconcile(&instance_binding(true)).await.unwrap();
    assert_eq!(
        h.instance_targets(),
        ["i-0000000000000000a:30080", "i-0000000000000000d:30080"],
        "n1 agrees; n2's zone and ip-10-0-1-12's hostname disagree; rke2-agent-4's custom name is not compared"
    );
    let events = h.event_notes();
    let mismatch: Vec<&String> = events.iter().filter(|(r, _)| r == "NodeInstanceMismatch").map(|(_, n)| n).collect();
    assert_eq!(mismatch.len(), 1, "one Warning for both nodes: {events:?}");
    let note = mismatch[0];
    for part in [
        "node n2 (InternalIP 10.0.1.11) resolved to instance i-0000000000000000b",
        "label topology.kubernetes.io/zone=eu-west-1b, but the instance is in availability zone eu-west-1a",
        "node ip-10-0-1-12 (InternalIP 10.0.1.12) resolved to instance i-0000000000000000c",
        "hostname ip-10-0-1-12, but the instance's private DNS name is ip-10-0-7-7.eu-west-1.compute.internal",
        "NOT registered in TargetGroupBinding shop/web",
        "Fix:",
    ] {
        assert!(note.contains(part), "{part:?} missing from the warning: {note}");
    }
    let kube = h.kube();
    let status = &kube.iter().find(|r| r.path.ends_with("/status")).expect("status written").body;
    assert!(status.to_string().contains("failed the zone/hostname cross-check: ip-10-0-1-12, n2"), "{status}");

    // The same again: no second Warning. n2's label corrected: registered, and no Warning for
    // the one left.
    h.reconcile(&instance_binding(true)).await.unwrap();
    assert!(h.event_notes().iter().all(|(r, _)| r != "NodeInstanceMismatch"));
    h.set_node(node("n2", "10.0.1.11", true, &zone("eu-west-1a"), None));
    h.reconcile(&instance_binding(true)).await.unwrap();
    assert_eq!(
        h.instance_targets(),
        ["i-0000000000000000a:30080", "i-0000000000000000b:30080", "i-0000000000000000d:30080"]
    );
    let again: Vec<String> =
        h.event_notes().into_iter().filter(|(r, _)| r == "NodeInstanceMismatch").map(|(_, n)| n).collect();
    assert_eq!(again.len(), 1, "the set changed: warned again, about ip-10-0-1-12 alone: {again:?}");
    assert!(!again[0].contains("node n2"), "{}", again[0]);
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

/// Issue 32, instance mode as ip mode: a binding on a target group without ownership tags
/// (Terraform's) deregisters only the instances it registered (its `status.ownedTargets`); the
/// owner's instance is reported and kept through node changes and the binding's deletion.
#[tokio::test(start_paused = true)]
async fn an_untagged_group_keeps_its_owners_instances_through_sync_and_deletion() {
    let h = instance_harness(three_nodes(), Some(30080)).await;
    h.elb.set_tags(ARN, &[("team", "platform")]);
    let owners = InstanceTarget::new("i-0ffffffffffffffff", 30080);
    h.elb.write_instance_targets(ARN, std::slice::from_ref(&owners), true).await.unwrap();
    h.aws();
    h.reconcile(&instance_binding(true)).await.unwrap();
    assert!(!h.aws().iter().any(|c| c.starts_with("DeregisterTargets")), "the owner's instance is not deregistered");
    assert_eq!(h.instance_targets().len(), 4);
    let kube = h.kube();
    assert!(!kube.iter().any(|r| r.path.contains("configmaps")), "no ConfigMap for a plain binding");
    let records: Vec<&Value> = kube.iter().filter_map(|r| r.body["status"].get("ownedTargets")).collect();
    let ours = ["i-0000000000000000a:30080", "i-0000000000000000b:30080", "i-0000000000000000c:30080"];
    assert_eq!(records, [&json!([]), &json!(ours)], "adopted nothing, then recorded before writing");
    assert!(h.event_notes().iter().any(|(r, _)| r == "ForeignTargetsPresent"));

    // The binding as the cache holds it now (its record), deleted: only its instances go.
    let mut recorded = instance_binding(true);
    recorded.status = serde_json::from_value(json!({"ownedTargets": ours})).unwrap();
    h.reconcile(&deleting(recorded)).await.unwrap();
    assert_eq!(h.instance_targets(), ["i-0ffffffffffffffff:30080"], "deletion keeps the owner's instance");
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

/// Multi-cluster target groups in instance mode, as in ip mode: the instance targets this
/// cluster registers are recorded in the binding's ConfigMap before they are registered; another
/// cluster's instance in the shared group survives node changes and the binding's deletion.
#[tokio::test(start_paused = true)]
async fn multi_cluster_instance_targets_are_recorded_before_writing_and_only_they_are_deregistered() {
    let h = instance_harness(three_nodes(), Some(30080)).await;
    let mut b = instance_binding(true);
    b.spec.multi_cluster_target_group = Some(true);
    let foreign = InstanceTarget::new("i-0ffffffffffffffff", 30080);
    h.elb.write_instance_targets(ARN, std::slice::from_ref(&foreign), true).await.unwrap();
    h.aws();

    h.reconcile(&b).await.unwrap();
    assert_eq!(
        h.aws(),
        ["DescribeTargetGroups(0)", "DescribeTargetHealth(0)", "RegisterTargets(3)"],
        "no owner-tag read for a shared group"
    );
    assert_eq!(
        h.instance_targets(),
        [
            "i-0000000000000000a:30080",
            "i-0000000000000000b:30080",
            "i-0000000000000000c:30080",
            "i-0ffffffffffffffff:30080"
        ]
    );
    let cm = format!("/api/v1/namespaces/{NS}/configmaps");
    let kube = h.kube();
    assert_eq!(
        kube.iter().map(Seen::line).collect::<Vec<_>>(),
        [
            format!("GET {cm}/aws-lbc-targets-web"),
            format!("PATCH {TGB_PATH}/status"),
            format!("PATCH {TGB_PATH}/status"),
            format!("PUT {cm}/aws-lbc-targets-web"),
            format!("POST {cm}"),
            format!("PUT {cm}/aws-lbc-targets-web"),
            format!("PATCH {TGB_PATH}/status"),
            format!("PATCH {TGB_PATH}"),
        ],
        "no record: ALBC's ConfigMap read once, the (empty) adoption recorded; the planned registrations recorded \
         before them (status, and the ConfigMap created on first use), the ConfigMap again after; status and \
         checkpoint"
    );
    let ours = "i-0000000000000000a:30080,i-0000000000000000b:30080,i-0000000000000000c:30080";
    let listed: Vec<&str> = ours.split(',').collect();
    assert_eq!(kube[2].body["status"]["ownedTargets"], json!(listed), "recorded before RegisterTargets");
    assert_eq!(kube[4].body["data"]["targets"], json!(ours), "ALBC's ConfigMap kept for a rollback");
    assert_eq!(kube[4].body["metadata"]["ownerReferences"][0]["name"], json!("web"), "owned by the binding");
    assert_eq!(kube[5].body["data"]["targets"], json!(ours));

    // A node of ours leaves: deregistered and dropped from the record; the foreign one stays.
    h.set_node(node("n1", "10.0.1.10", false, &[], None));
    h.reconcile(&b).await.unwrap();
    assert_eq!(h.aws(), ["DescribeTargetHealth(0)", "DeregisterTargets(1)"]);
    let kube = h.kube();
    let put = kube.iter().find(|r| r.method == Method::PUT).expect("the owned set written after");
    assert_eq!(put.body["data"]["targets"], json!("i-0000000000000000b:30080,i-0000000000000000c:30080"));

    h.reconcile(&deleting(b)).await.unwrap();
    assert_eq!(h.aws(), ["DescribeTargetHealth(0)", "DeregisterTargets(2)"]);
    assert_eq!(h.instance_targets(), ["i-0ffffffffffffffff:30080"], "only this cluster's targets deregistered");
    assert_eq!(
        h.kube_lines(),
        [format!("DELETE {cm}/aws-lbc-targets-web"), format!("PATCH {TGB_PATH}")],
        "the record is the status's: the ConfigMap is not read again"
    );
}

/// The checkpoint annotation in instance mode: a restarted controller (a new process: nothing in
/// memory, empty AWS caches) whose binding carries the checkpoint of exactly the set the nodes
/// ask for makes no per-binding AWS call: no DescribeTags, no DescribeTargetHealth, no write; only
/// the group read (batched across bindings, for its VPC) and the node look-up (batched across
/// nodes, shared by every binding). A stale checkpoint costs the full pass.
#[tokio::test(start_paused = true)]
async fn a_warm_restart_with_the_checkpoint_costs_no_per_binding_aws_call() {
    let h = instance_harness(three_nodes(), Some(30080)).await;
    h.reconcile(&instance_binding(true)).await.unwrap();
    let kube = h.kube();
    let status = kube.iter().find(|r| r.path.ends_with("/status")).expect("status written").body["status"].clone();
    let cp_patch = kube.iter().find(|r| r.path == TGB_PATH).expect("checkpoint written");
    let annotations = cp_patch.body["metadata"]["annotations"].clone();
    let cp = annotations[lbc_model::names::CHECKPOINT_ANNOTATION].as_str().expect("checkpoint").to_string();
    assert!(cp.starts_with("v1-instance:"), "{cp}");

    // The binding as the new process's cache sees it: Ready, with the checkpoint.
    let mut synced = instance_binding(true);
    synced.status = serde_json::from_value(status).unwrap();
    synced.metadata.annotations = serde_json::from_value(annotations).unwrap();

    let restarted = instance_harness(three_nodes(), Some(30080)).await;
    let action = restarted.reconcile(&synced).await.unwrap();
    assert_eq!(restarted.aws(), ["DescribeTargetGroups(0)"], "no DescribeTags, DescribeTargetHealth or write");
    assert_eq!(restarted.lookups(), [(VPC.to_string(), 3)], "the node look-up (shared by all bindings)");
    assert_eq!(restarted.kube_lines(), Vec::<String>::new(), "nothing written");
    assert!(requeues_within(&action, 600, 900), "verified after the jittered sync period: {action:?}");
    // It stays cheap: nothing changed, nothing asked.
    restarted.reconcile(&synced).await.unwrap();
    assert_eq!(restarted.aws(), Vec::<String>::new());

    // A node left while the controller was down: the checkpoint no longer matches, full pass,
    // the checkpoint cleared before the write and written again after.
    let mut two = three_nodes();
    two.pop();
    let stale = instance_harness(two, Some(30080)).await;
    stale.elb.write_instance_targets(ARN, &[InstanceTarget::new("i-0000000000000000c", 30080)], true).await.unwrap();
    stale.aws();
    stale.reconcile(&synced).await.unwrap();
    assert_eq!(
        stale.aws(),
        [
            "DescribeTargetGroups(0)",
            "DescribeTags(0)",
            "DescribeTargetHealth(0)",
            "DeregisterTargets(1)",
            "RegisterTargets(2)"
        ]
    );
    let lines = stale.kube_lines();
    assert_eq!(
        lines,
        [format!("PATCH {TGB_PATH}"), format!("PATCH {TGB_PATH}/status"), format!("PATCH {TGB_PATH}")],
        "checkpoint cleared, status, checkpoint written"
    );
}

/// A Warning the API server did not take is not remembered as told: the next pass sends it again.
#[tokio::test(start_paused = true)]
async fn a_warning_the_api_server_lost_is_sent_again() {
    let mut nodes = three_nodes();
    nodes.push(node("ghost", "10.0.9.99", true, &[], None));
    let h = instance_harness(nodes, Some(30080)).await;
    let events = format!("/apis/events.k8s.io/v1/namespaces/{NS}/events");
    h.server.lock().unwrap().fail.push((Method::POST, events, 500));
    h.reconcile(&instance_binding(true)).await.unwrap();
    let tried = h.event_notes();
    assert!(tried.iter().any(|(r, _)| r == "NodeInstanceNotFound"), "tried once: {tried:?}");
    h.reconcile(&instance_binding(true)).await.unwrap();
    let again = h.event_notes();
    assert!(again.iter().any(|(r, _)| r == "NodeInstanceNotFound"), "sent again: {again:?}");
    h.reconcile(&instance_binding(true)).await.unwrap();
    assert!(h.event_notes().iter().all(|(r, _)| r != "NodeInstanceNotFound"), "then told: once");
}
