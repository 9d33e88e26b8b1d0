//! The backend security-group rules reconciler driven through its entry points ([`BackendRules::run`]
//! on the shared scheduler, and one pass with its retry policy, `logged_pass`) against hand-filled
//! caches, the production leader state and the in-memory EC2 networking fake
//! (`crate::stack::test_world`): no environment, paused time. Each test asserts the security-group
//! writes and the rules left in AWS.

use super::*;
use crate::stack::test_world::{CLUSTER, VPC, World, deleting};
use futures::FutureExt;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use lbc_aws::error::ErrorKind;
use lbc_model::crd::TargetGroupBinding;
use lbc_model::endpoints::SliceInfo;
use lbc_model::lb::backend_rules::RULE_DESCRIPTION;
use lbc_model::lb::{IngressRule, RuleSource};
use serde_json::json;

const NS: &str = "shop";

/// A binding of Service `web`:80 whose networking lets `source` (a security group) reach port 8080.
fn binding(name: &str, source: &str) -> TargetGroupBinding {
    serde_json::from_value(json!({
        "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}")},
        "spec": {
            "targetGroupARN": format!("arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/{name}/0123"),
            "targetType": "ip", "serviceRef": {"name": "web", "port": 80},
            "networking": {"ingress": [{"from": [{"securityGroup": {"groupID": source}}],
                                        "ports": [{"protocol": "TCP", "port": 8080}]}]},
        },
    }))
    .unwrap()
}

fn service() -> Service {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": NS},
        "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
    }))
    .unwrap()
}

/// Ready endpoints at 10.0.1.`x`.
fn slice(ips: &[u8]) -> EndpointSlice {
    let endpoints: Vec<_> = ips
        .iter()
        .map(|x| json!({"addresses": [format!("10.0.1.{x}")], "conditions": {"ready": true, "serving": true}}))
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-abc", "namespace": NS, "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}], "endpoints": endpoints,
    }))
    .unwrap()
}

fn rule(source: &RuleSource, port: i32, description: &str) -> IngressRule {
    IngressRule {
        protocol: "tcp".into(),
        from_port: port,
        to_port: port,
        source: source.clone(),
        description: Some(description.into()),
    }
}

struct T {
    w: World,
    rules: Arc<BackendRules>,
    /// The pods' security group, tagged for this cluster.
    node_sg: String,
    /// The load balancers' (backend) security group: the rules' source.
    lb_sg: String,
}

async fn group(w: &World, name: &str, tags: &[(&str, &str)]) -> String {
    let sg = SecurityGroup {
        name: name.into(),
        description: name.into(),
        vpc_id: VPC.into(),
        ingress: vec![],
        tags: tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
    };
    w.net.create_security_group(&sg).await.unwrap()
}

fn eni(w: &World, id: &str, ip: u8, groups: &[&str]) {
    w.net.add_network_interface(NetworkInterface {
        id: id.into(),
        subnet_id: "subnet-a".into(),
        private_ips: vec![IpAddr::from([10, 0, 1, ip])],
        security_groups: groups.iter().map(|g| g.to_string()).collect(),
    });
}

async fn world() -> T {
    let w = World::new();
    let node_sg = group(&w, "nodes", &[(&cluster_tag(CLUSTER), "owned")]).await;
    let lb_sg = group(&w, "k8s-traffic-prod", &[]).await;
    eni(&w, "eni-1", 5, &[&node_sg]);
    w.put(|c| &mut c.services, service());
    w.slices.put(NS, "web-abc", SliceInfo::of(&slice(&[5])));
    let cfg = BackendRulesConfig {
        cluster_name: CLUSTER.into(),
        vpc_id: VPC.into(),
        required_tags: Tags::new(),
        restricted: true,
        sync_period: Duration::from_secs(600),
    };
    let trigger = w.base.triggers.backend_rules.clone();
    let rules = Arc::new(BackendRules::new(w.base.clone(), w.net.clone(), cfg, None, trigger));
    w.aws();
    T { w, rules, node_sg, lb_sg }
}

impl T {
    fn ingress(&self, sg: &str) -> Vec<IngressRule> {
        self.w.net.group(sg).expect("group exists").ingress
    }

    fn net_writes(&self) -> Vec<String> {
        self.w.aws_writes().1
    }
}

#[tokio::test(start_paused = true)]
async fn a_new_target_groups_binding_gets_its_rule_on_the_pods_group_once() {
    let t = world().await;
    t.w.put(|c| &mut c.tgbs, binding("web-tg", &t.lb_sg));
    t.w.net.reject_unknown_sources();
    let s = t.rules.pass().await.unwrap();
    assert_eq!((s.bindings, s.authorized, s.revoked, s.problems), (1, 1, 0, 0));
    // A healthy pass: one read of the ENIs, one of the cluster's groups, one write per group.
    let (_, calls) = t.w.aws();
    assert_eq!(calls, ["DescribeNetworkInterfaces", "DescribeSecurityGroups", "AuthorizeSecurityGroupIngress"]);
    let from_lb = RuleSource::SecurityGroup(t.lb_sg.clone());
    assert_eq!(t.ingress(&t.node_sg), vec![rule(&from_lb, 8080, RULE_DESCRIPTION)]);
    assert!(t.ingress(&t.lb_sg).is_empty(), "the source group is not written");

    // In sync: the next pass reads, writes nothing.
    let s = t.rules.pass().await.unwrap();
    assert_eq!((s.authorized, s.revoked), (0, 0));
    assert!(t.net_writes().is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_scheduled_reconciler_revokes_the_rule_when_the_target_group_goes() {
    let t = world().await;
    t.w.put(|c| &mut c.tgbs, binding("web-tg", &t.lb_sg));
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let runner = tokio::spawn(t.rules.clone().run(async { stop_rx.await.unwrap_or(()) }));
    // The first pass runs at start.
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(t.net_writes(), vec!["AuthorizeSecurityGroupIngress"]);

    // The stack drops the target group: its binding is being deleted, then gone. A watch event
    // wakes the reconciler; the pass runs after the debounce.
    t.w.put(|c| &mut c.tgbs, deleting(binding("web-tg", &t.lb_sg)));
    t.w.base.triggers.backend_rules.notify_one();
    tokio::time::sleep(DEBOUNCE + Duration::from_millis(10)).await;
    assert_eq!(t.net_writes(), vec!["RevokeSecurityGroupIngress"], "a binding being deleted takes no part");
    assert!(t.ingress(&t.node_sg).is_empty());

    // Nothing of ours is left: a wake makes no pass, but whoever waits for one (the shared
    // backend group's release) hears that the rules are as the bindings want them.
    let done = t.rules.pass_signals().done;
    let heard = done.notified();
    tokio::pin!(heard);
    heard.as_mut().enable();
    let calls_before = t.w.net.calls().len();
    t.w.base.triggers.backend_rules.notify_one();
    tokio::time::sleep(DEBOUNCE + Duration::from_millis(10)).await;
    assert!(heard.now_or_never().is_some(), "told at once");
    assert_eq!(t.w.net.calls().len(), calls_before, "without an AWS call");

    stop_tx.send(()).unwrap();
    runner.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn only_our_rules_on_our_groups_are_revoked() {
    let t = world().await;
    let office = RuleSource::Cidr("192.0.2.0/24".into());
    let stale = RuleSource::SecurityGroup("sg-gone-lb".into());
    // On the cluster's group: a rule of someone else and a stale one of ours.
    let mut mixed = vec![rule(&office, 22, "office ssh"), rule(&stale, 8080, RULE_DESCRIPTION)];
    t.w.net.authorize_ingress(&t.node_sg, &mixed).await.unwrap();
    // A group without the cluster tag holding a rule labelled like ours: not ours to clean.
    let untagged = group(&t.w, "someone-elses", &[]).await;
    t.w.net.authorize_ingress(&untagged, &[rule(&stale, 8080, RULE_DESCRIPTION)]).await.unwrap();
    t.w.aws();

    let s = t.rules.pass().await.unwrap();
    assert_eq!((s.bindings, s.authorized, s.revoked), (0, 0, 1));
    assert_eq!(t.net_writes(), vec!["RevokeSecurityGroupIngress"]);
    mixed.truncate(1);
    assert_eq!(t.ingress(&t.node_sg), mixed, "the foreign rule stays");
    assert_eq!(t.ingress(&untagged).len(), 1, "nothing touched on a group without our tags");
}

#[tokio::test(start_paused = true)]
async fn an_eni_with_several_untagged_groups_is_reported_and_not_written() {
    let t = world().await;
    let (g1, g2) = (group(&t.w, "app-1", &[]).await, group(&t.w, "app-2", &[]).await);
    t.w.net.remove_network_interface("eni-1");
    eni(&t.w, "eni-2", 5, &[&g1, &g2]);
    t.w.aws();
    let b = binding("web-tg", &t.lb_sg);
    t.w.put(|c| &mut c.tgbs, b);
    let s = t.rules.pass().await.unwrap();
    assert_eq!((s.authorized, s.revoked, s.problems), (0, 0, 1));
    assert!(t.net_writes().is_empty(), "no group of that ENI is ours to write");
    assert!(t.ingress(&g1).is_empty() && t.ingress(&g2).is_empty());
    let (kind, reason, note) = &t.w.the_event();
    assert_eq!((kind.as_str(), reason.as_str()), ("Warning", "BackendSecurityGroupRules"));
    assert!(note.contains("eni-2") && note.contains(&g1) && note.contains(&g2), "names the ENI and groups: {note}");
    assert!(note.contains(&cluster_tag(CLUSTER)), "says which tag is expected: {note}");
    // The same problem is not announced again within the sync period.
    t.rules.pass().await.unwrap();
    assert!(t.w.events().is_empty());
}

/// Plants, on the node group, a rule of ours from the binding's own source on a port it no
/// longer asks for (`own`) and one from a source no binding names (`stale`); returns both.
async fn own_and_stale(t: &T) -> (IngressRule, IngressRule) {
    let own = rule(&RuleSource::SecurityGroup(t.lb_sg.clone()), 9090, RULE_DESCRIPTION);
    let stale = rule(&RuleSource::SecurityGroup("sg-gone-lb".into()), 9090, RULE_DESCRIPTION);
    t.w.net.authorize_ingress(&t.node_sg, &[own.clone(), stale.clone()]).await.unwrap();
    (own, stale)
}

#[tokio::test(start_paused = true)]
async fn an_endpoint_without_a_known_eni_keeps_its_bindings_rules_and_retries_soon() {
    let t = world().await;
    // One endpoint's ENI is unknown: the binding keeps what it had (first pass: the rules from its
    // own peers), a rule nobody names still goes.
    let (own, stale) = own_and_stale(&t).await;
    t.w.slices.put(NS, "web-abc", SliceInfo::of(&slice(&[5, 6])));
    t.w.put(|c| &mut c.tgbs, binding("web-tg", &t.lb_sg));
    t.w.aws();
    let (next, idle) = t.rules.logged_pass().await;
    assert_eq!((next, idle), (RETRY_UNRESOLVED, false), "looked at again soon");
    assert_eq!(t.net_writes(), vec!["AuthorizeSecurityGroupIngress", "RevokeSecurityGroupIngress"]);
    let ingress = t.ingress(&t.node_sg);
    assert!(ingress.contains(&own) && !ingress.contains(&stale), "{ingress:?}");
    // Remembered: the next pass changes nothing while the ENI stays unknown.
    t.rules.pass().await.unwrap();
    assert!(t.net_writes().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_binding_whose_service_is_missing_keeps_its_rules_and_stops_no_one() {
    let t = world().await;
    let (own, stale) = own_and_stale(&t).await;
    t.w.put(|c| &mut c.tgbs, binding("web-tg", &t.lb_sg));
    let mut ghost = binding("ghost-tg", &t.lb_sg);
    ghost.spec.service_ref.name = "ghost".into();
    t.w.put(|c| &mut c.tgbs, ghost);
    t.w.aws();
    let s = t.rules.pass().await.unwrap();
    assert_eq!((s.authorized, s.revoked, s.withheld_revokes), (1, 1, 1), "{s:?}");
    assert_eq!(t.net_writes(), vec!["AuthorizeSecurityGroupIngress", "RevokeSecurityGroupIngress"]);
    let ingress = t.ingress(&t.node_sg);
    assert!(ingress.contains(&own) && !ingress.contains(&stale), "{ingress:?}");
}

#[tokio::test(start_paused = true)]
async fn a_throttled_write_fails_the_pass_and_it_is_retried_sooner() {
    let t = world().await;
    t.w.put(|c| &mut c.tgbs, binding("web-tg", &t.lb_sg));
    t.w.net.inject_fault("AuthorizeSecurityGroupIngress", ErrorKind::Throttled);
    // The shared backend group's release waits to hear of a pass that succeeded.
    let done = t.rules.pass_signals().done;
    let heard = done.notified();
    tokio::pin!(heard);
    heard.as_mut().enable();
    let (next, _) = t.rules.logged_pass().await;
    assert!((RETRY_FAILED..=2 * RETRY_FAILED).contains(&next), "first failure: 10 s plus jitter, got {next:?}");
    assert!(t.ingress(&t.node_sg).is_empty());
    assert!(heard.as_mut().now_or_never().is_none(), "a failed pass tells nobody it is done");
    let (next, _) = t.rules.logged_pass().await;
    assert!(next >= Duration::from_secs(600), "in sync: back to the sync period ({next:?})");
    assert_eq!(t.ingress(&t.node_sg).len(), 1);
    assert!(heard.now_or_never().is_some(), "a pass that succeeded does");
}

#[tokio::test(start_paused = true)]
async fn a_replica_that_does_not_lead_writes_no_rule() {
    let t = world().await;
    t.w.put(|c| &mut c.tgbs, binding("web-tg", &t.lb_sg));
    t.w.leader.send(false).unwrap();
    let err = t.rules.pass().await.unwrap_err();
    assert!(err.is_not_leader(), "{err}");
    assert!(t.net_writes().is_empty());
    assert!(t.ingress(&t.node_sg).is_empty());
    // Through the loop's own handling: no failure counted, no backoff step.
    let (next, idle) = t.rules.logged_pass().await;
    assert_eq!((next, idle), (RETRY_UNRESOLVED, false));
    assert_eq!(t.rules.failures.lock().unwrap().count(), 0);
    let errors = t.w.base.metrics.encode();
    assert!(!errors.contains("not_leader"), "{errors}");
}

/// A node as the trimmed watch keeps it: Ready or not, its labels, its InternalIP 10.0.1.`ip`,
/// no providerID (as on RKE2 without the AWS cloud provider).
fn node(name: &str, ip: u8, ready: bool, labels: &[(&str, &str)]) -> k8s_openapi::api::core::v1::Node {
    let labels: serde_json::Map<String, serde_json::Value> =
        labels.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
        "status": {
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
            "addresses": [{"type": "InternalIP", "address": format!("10.0.1.{ip}")}],
        },
    }))
    .unwrap()
}

/// An instance-mode binding whose networking opens NodePort 30080 to `source`, on nodes labelled
/// `role: edge`.
fn instance_binding(source: &str) -> TargetGroupBinding {
    let mut b = binding("web-inst", source);
    b.spec.target_type = Some(lbc_model::crd::TargetType::Instance);
    b.spec.node_selector = Some(serde_json::from_value(json!({"matchLabels": {"role": "edge"}})).unwrap());
    let port = &mut b.spec.networking.as_mut().unwrap().ingress[0].ports[0];
    port.port = Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(30080));
    b
}

#[tokio::test(start_paused = true)]
async fn instance_targets_open_the_node_port_on_the_eligible_nodes_groups_only() {
    let t = world().await;
    let other_sg = group(&t.w, "other-nodes", &[(&cluster_tag(CLUSTER), "owned")]).await;
    eni(&t.w, "eni-edge", 20, &[&t.node_sg]);
    eni(&t.w, "eni-plain", 21, &[&other_sg]);
    t.w.put(|c| &mut c.nodes, node("edge-1", 20, true, &[("role", "edge")]));
    t.w.put(|c| &mut c.nodes, node("plain-1", 21, true, &[]));
    t.w.put(|c| &mut c.tgbs, instance_binding(&t.lb_sg));
    t.w.aws();
    let s = t.rules.pass().await.unwrap();
    assert_eq!((s.bindings, s.authorized, s.revoked, s.problems), (1, 1, 0, 0), "{s:?}");
    let from_lb = RuleSource::SecurityGroup(t.lb_sg.clone());
    assert_eq!(t.ingress(&t.node_sg), vec![rule(&from_lb, 30080, RULE_DESCRIPTION)], "the NodePort, not a pod port");
    assert!(t.ingress(&other_sg).is_empty(), "a node outside the nodeSelector gets no rule");

    // The edge node stops being Ready: no eligible node is left on that group, the rule goes.
    t.w.put(|c| &mut c.nodes, node("edge-1", 20, false, &[("role", "edge")]));
    t.w.aws();
    let s = t.rules.pass().await.unwrap();
    assert_eq!((s.authorized, s.revoked), (0, 1), "{s:?}");
    assert!(t.ingress(&t.node_sg).is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_eligible_node_without_an_internal_ip_keeps_its_bindings_rules() {
    let t = world().await;
    let (own, stale) = own_and_stale(&t).await;
    let mut bare = node("edge-2", 22, true, &[("role", "edge")]);
    bare.status.as_mut().unwrap().addresses = None;
    t.w.put(|c| &mut c.nodes, bare);
    t.w.put(|c| &mut c.tgbs, instance_binding(&t.lb_sg));
    t.w.aws();
    let s = t.rules.pass().await.unwrap();
    assert_eq!((s.authorized, s.revoked, s.withheld_revokes), (0, 1, 1), "{s:?}");
    assert_eq!(
        t.ingress(&t.node_sg),
        vec![own],
        "its own rule stays while a node's address is unknown; {stale:?} goes"
    );
}

#[test]
fn a_revoke_refused_because_the_rules_source_group_is_gone_is_reported_stale_not_done() {
    let stale = rule(&RuleSource::SecurityGroup("sg-0lb".into()), 8080, RULE_DESCRIPTION);
    let e = |msg: &str| lbc_aws::error::AwsError::new(ErrorKind::NotFound, "ec2", "RevokeSecurityGroupIngress", msg);
    let gone_source = e("The security group 'sg-0lb' does not exist");
    assert!(not_revoked("sg-0nodes", std::slice::from_ref(&stale), &gone_source));
    // The group being changed is gone, or the rule is: nothing left to do.
    assert!(!not_revoked(
        "sg-0nodes",
        std::slice::from_ref(&stale),
        &e("The security group 'sg-0nodes' does not exist")
    ));
    assert!(!not_revoked("sg-0nodes", std::slice::from_ref(&stale), &e("The specified rule does not exist")));
    let cidr = rule(&RuleSource::Cidr("10.0.0.0/8".into()), 22, "ssh");
    assert!(!not_revoked("sg-0nodes", &[cidr], &gone_source));
}

/// A tenant's binding in namespace `ns` with one ready endpoint at 10.0.1.`ip` (on the shared
/// node group) and this networking.
fn tenant_binding(t: &T, ns: &str, name: &str, ip: u8, networking: serde_json::Value) -> TargetGroupBinding {
    eni(&t.w, &format!("eni-{ns}-{ip}"), ip, &[&t.node_sg]);
    let mut svc = service();
    svc.metadata.namespace = Some(ns.into());
    t.w.put(|c| &mut c.services, svc);
    let mut sl = slice(&[ip]);
    sl.metadata.namespace = Some(ns.into());
    t.w.slices.put(ns, "web-abc", SliceInfo::of(&sl));
    let mut b = binding(name, &t.lb_sg);
    b.metadata.namespace = Some(ns.into());
    b.spec.networking = Some(serde_json::from_value(networking).unwrap());
    b
}

fn from_group(group: &str, port: serde_json::Value) -> serde_json::Value {
    json!({"ingress": [{"from": [{"securityGroup": {"groupID": group}}], "ports": [{"protocol": "TCP", "port": port}]}]})
}

/// Status patches since the last look, as (binding path, our condition).
fn condition_writes(t: &T) -> Vec<(String, serde_json::Value)> {
    t.w.kube()
        .into_iter()
        .filter(|r| r.path.ends_with("/status"))
        .map(|r| {
            let ours = r.body["status"]["conditions"]
                .as_array()
                .and_then(|l| l.iter().find(|c| c["type"] == status::CONDITION).cloned())
                .unwrap_or_default();
            (r.path.clone(), ours)
        })
        .collect()
}

/// What the binding's watch shows after our status write.
fn with_condition(mut b: TargetGroupBinding, condition: serde_json::Value) -> TargetGroupBinding {
    let c = serde_json::from_value(condition).unwrap();
    b.status = Some(lbc_model::crd::TargetGroupBindingStatus { conditions: vec![c], ..Default::default() });
    b
}

#[tokio::test(start_paused = true)]
async fn a_binding_naming_a_missing_peer_group_delays_nobody() {
    let t = world().await;
    t.w.net.reject_unknown_sources();
    let victim = tenant_binding(&t, "victim", "web", 5, from_group(&t.lb_sg, json!(8080)));
    let bad = tenant_binding(&t, "attacker", "evil", 7, from_group("sg-0doesnotexist", json!(9090)));
    t.w.put(|c| &mut c.tgbs, victim);
    t.w.put(|c| &mut c.tgbs, bad.clone());
    t.w.aws();
    t.w.kube();

    let s = t.rules.pass().await.unwrap();
    assert_eq!((s.authorized, s.refused, s.revoked), (1, 1, 0), "{s:?}");
    // The batch of both is refused, then the victim's rule goes alone: one call more, no pass more.
    assert_eq!(t.net_writes(), vec!["AuthorizeSecurityGroupIngress", "AuthorizeSecurityGroupIngress"]);
    assert_eq!(t.ingress(&t.node_sg), vec![rule(&RuleSource::SecurityGroup(t.lb_sg.clone()), 8080, RULE_DESCRIPTION)]);
    let (kind, reason, note) = t.w.the_event();
    assert_eq!((kind.as_str(), reason.as_str()), ("Warning", status::CONDITION));
    for part in ["attacker/evil", "\"sg-0doesnotexist\"", "does not exist", "Fix:"] {
        assert!(note.contains(part), "{part:?} missing from {note}");
    }
    let writes = condition_writes(&t);
    assert_eq!(writes.len(), 1, "only the bad binding's status: {writes:?}");
    assert!(writes[0].0.contains("/namespaces/attacker/targetgroupbindings/evil/status"), "{writes:?}");
    assert_eq!(
        (writes[0].1["status"].as_str(), writes[0].1["reason"].as_str()),
        (Some("False"), Some("PeerSecurityGroupNotFound"))
    );

    // Next pass: the missing group is looked for (a read), the bad binding is left out up front:
    // no refused call, no status write (the condition is as wanted).
    t.w.put(|c| &mut c.tgbs, with_condition(bad.clone(), writes[0].1.clone()));
    let s = t.rules.pass().await.unwrap();
    assert_eq!((s.authorized, s.refused, s.problems), (0, 0, 1), "{s:?}");
    let (_, net) = t.w.aws();
    assert!(net.iter().all(|op| op.starts_with("Describe")), "reads only: {net:?}");
    assert!(condition_writes(&t).is_empty());
    // Each namespace's share of the group's rules; the bad binding holds none.
    let metrics = t.w.base.metrics.encode();
    assert!(metrics.contains("awslbc_backend_sg_rules{namespace=\"victim\"} 1"), "{metrics}");
    assert!(metrics.contains("awslbc_backend_sg_rules{namespace=\"attacker\"} 0"), "{metrics}");

    // Fixed: its rule lands and its condition turns True; the victim's status is never written.
    let mut fixed = with_condition(bad, writes[0].1.clone());
    fixed.spec.networking = Some(serde_json::from_value(from_group(&t.lb_sg, json!(9090))).unwrap());
    t.w.put(|c| &mut c.tgbs, fixed);
    let s = t.rules.pass().await.unwrap();
    assert_eq!((s.authorized, s.refused, s.problems), (1, 0, 0), "{s:?}");
    let writes = condition_writes(&t);
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert!(writes[0].0.contains("/attacker/"), "{writes:?}");
    assert_eq!((writes[0].1["status"].as_str(), writes[0].1["reason"].as_str()), (Some("True"), Some(status::APPLIED)));
}

#[tokio::test(start_paused = true)]
async fn a_typo_keeps_the_bindings_rule_and_freezes_no_revoke() {
    let t = world().await;
    let web = tenant_binding(&t, "victim", "web", 5, from_group(&t.lb_sg, json!(8080)));
    t.w.put(|c| &mut c.tgbs, web.clone());
    t.w.aws();
    t.rules.pass().await.unwrap();
    let its_rule = rule(&RuleSource::SecurityGroup(t.lb_sg.clone()), 8080, RULE_DESCRIPTION);
    assert_eq!(t.ingress(&t.node_sg), vec![its_rule.clone()]);

    // A stale rule of ours appears (a binding deleted while the controller was down), and the
    // tenant mistypes the port name.
    let stale = rule(&RuleSource::SecurityGroup("sg-gone-lb".into()), 7070, RULE_DESCRIPTION);
    t.w.net.authorize_ingress(&t.node_sg, std::slice::from_ref(&stale)).await.unwrap();
    let mut typo = web;
    typo.spec.networking = Some(serde_json::from_value(from_group(&t.lb_sg, json!("htp"))).unwrap());
    t.w.put(|c| &mut c.tgbs, typo);
    t.w.aws();
    t.w.kube();
    let s = t.rules.pass().await.unwrap();
    assert_eq!((s.authorized, s.revoked, s.withheld_revokes), (0, 1, 1), "{s:?}");
    assert_eq!(t.ingress(&t.node_sg), vec![its_rule], "its rule is kept, the stale one still goes");
    let (_, _, note) = t.w.the_event();
    assert!(note.contains("\"htp\"") && note.contains("victim/web") && note.contains("Fix:"), "{note}");
    let writes = condition_writes(&t);
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0].1["reason"], "NamedPortNotFound");
}

#[tokio::test(start_paused = true)]
async fn a_full_group_takes_the_rules_that_fit_and_names_the_one_that_did_not() {
    let t = world().await;
    t.w.net.set_rule_quota(2);
    for (i, (ns, cidr)) in
        [("team-a", "10.1.0.0/16"), ("team-b", "10.2.0.0/16"), ("team-c", "10.3.0.0/16")].iter().enumerate()
    {
        let n = json!({"ingress": [{"from": [{"ipBlock": {"cidr": cidr}}], "ports": [{"port": 8080}]}]});
        let b = tenant_binding(&t, ns, "web", 5 + i as u8, n);
        t.w.put(|c| &mut c.tgbs, b);
    }
    t.w.aws();
    let s = t.rules.pass().await.unwrap();
    assert_eq!((s.authorized, s.refused), (2, 1), "{s:?}");
    // 3 refused → [1] lands, [2, 3] refused → [2] lands, [3] refused.
    assert_eq!(t.net_writes().len(), 5);
    assert_eq!(t.ingress(&t.node_sg).len(), 2);
    let events = t.w.events();
    assert_eq!(events.len(), 1, "{events:?}");
    let note = &events[0].2;
    for part in [
        "team-c/web",
        "tcp 8080 from 10.3.0.0/16",
        &t.node_sg,
        "RulesPerSecurityGroupLimitExceeded",
        "awslbc_backend_sg_rules",
    ] {
        assert!(note.contains(part), "{part:?} missing from {note}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_binding_refused_for_one_peer_keeps_the_rule_of_its_other_peer() {
    let t = world().await;
    t.w.net.reject_unknown_sources();
    // Peers: an existing group and one that does not exist. The first pass learns that from EC2
    // (the batch is refused, the good peer's rule goes alone); from then on the binding is Bad, and
    // the rule that landed is kept, not revoked.
    let two = json!({"ingress": [{"from": [{"securityGroup": {"groupID": t.lb_sg}}, {"securityGroup": {"groupID": "sg-0ghost"}}],
                                  "ports": [{"port": 8080}]}]});
    t.w.put(|c| &mut c.tgbs, tenant_binding(&t, "team", "two-peers", 7, two));
    t.w.aws();
    let s = t.rules.pass().await.unwrap();
    assert_eq!((s.authorized, s.refused), (1, 1), "{s:?}");
    let kept = vec![rule(&RuleSource::SecurityGroup(t.lb_sg.clone()), 8080, RULE_DESCRIPTION)];
    assert_eq!(t.ingress(&t.node_sg), kept);
    t.w.aws();
    let s = t.rules.pass().await.unwrap();
    assert_eq!((s.authorized, s.revoked, s.withheld_revokes), (0, 0, 1), "{s:?}");
    assert!(t.net_writes().is_empty());
    assert_eq!(t.ingress(&t.node_sg), kept);
}
