//! The binding reconciler driven through its entry point ([`super::reconcile`], with kube's
//! finalizer handling, and [`super::error_policy`]) against a mocked API server (tower-test) and
//! the in-memory AWS fakes: no environment, milliseconds per scenario, paused time. Each test
//! asserts the exact AWS calls and Kubernetes writes a reconcile makes.

use super::*;
use crate::records::watch_records;
use crate::stack::test_world::synced_store;
use crate::stores::Stores;
use http::{Method, Request, Response};
use k8s_openapi::api::core::v1::{Namespace, Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use kube::client::Body;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher;
use lbc_aws::elbv2::{ElbV2, TargetGroupInfo};
use lbc_aws::error::ErrorKind;
use lbc_aws::fake::{FakeCall, FakeEc2, FakeElbV2};
use lbc_model::crd::IngressClassParams;
use lbc_model::endpoints::SliceInfo;
use lbc_model::pod::PodInfo;
use lbc_model::target::{HealthState, Target};
use lbc_model::wire::PodWire;
use serde_json::{Value, json};
use std::sync::Mutex;
use tower_test::mock;

const NS: &str = "shop";
const ARN: &str = "arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/web/0123456789abcdef";
const TGB_PATH: &str = "/apis/elbv2.k8s.aws/v1beta1/namespaces/shop/targetgroupbindings/web";
const GATE: &str = "target-health.elbv2.k8s.aws/web";

type ApiHandle = mock::Handle<Request<Body>, Response<Body>>;

/// One request the mocked API server received.
#[derive(Clone, Debug)]
struct Seen {
    method: Method,
    path: String,
    body: Value,
}

impl Seen {
    fn line(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// The mocked API server's state: what it was asked, and answers a test wants to differ.
#[derive(Default)]
struct Server {
    seen: Vec<Seen>,
    /// The binding as a PATCH of it returns it.
    tgb: Value,
    configmaps: std::collections::BTreeMap<String, Value>,
    /// (method, path) answered once with this status code instead.
    fail: Vec<(Method, String, u16)>,
}

fn status_body(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "code": code,
           "message": format!("{reason} (mocked API server)")})
}

fn answer(s: &mut Server, seen: &Seen) -> (u16, Value) {
    if let Some(i) = s.fail.iter().position(|(m, p, _)| *m == seen.method && *p == seen.path) {
        let (_, _, code) = s.fail.remove(i);
        return (code, status_body(code, "Injected"));
    }
    let cm_prefix = format!("/api/v1/namespaces/{NS}/configmaps");
    match (&seen.method, seen.path.as_str()) {
        (&Method::PATCH, p) if p == TGB_PATH || p == format!("{TGB_PATH}/status") => (200, s.tgb.clone()),
        (&Method::PATCH, p) if p.starts_with(&format!("/api/v1/namespaces/{NS}/pods/")) && p.ends_with("/status") => {
            let name = p.trim_end_matches("/status").rsplit('/').next().unwrap_or_default();
            (200, json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}}))
        }
        (&Method::POST, p) if p.ends_with("/events") => (201, seen.body.clone()),
        (&Method::POST, p) if p == cm_prefix => {
            let name = seen.body["metadata"]["name"].as_str().unwrap_or_default().to_string();
            s.configmaps.insert(name, seen.body.clone());
            (201, seen.body.clone())
        }
        (m, p) if p.starts_with(&format!("{cm_prefix}/")) => {
            let name = p.rsplit('/').next().unwrap_or_default().to_string();
            match (m, s.configmaps.contains_key(&name)) {
                (&Method::GET, true) => (200, s.configmaps[&name].clone()),
                (&Method::PUT, true) => {
                    s.configmaps.insert(name, seen.body.clone());
                    (200, seen.body.clone())
                }
                (&Method::DELETE, true) => {
                    s.configmaps.remove(&name);
                    (200, json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}))
                }
                _ => (404, status_body(404, "NotFound")),
            }
        }
        _ => (500, status_body(500, "UnexpectedRequestInTest")),
    }
}

/// Serves the reconciler's requests until the client is dropped.
fn serve(mut h: ApiHandle, server: Arc<Mutex<Server>>) {
    tokio::spawn(async move {
        while let Some((req, tx)) = h.next_request().await {
            let (parts, body) = req.into_parts();
            let bytes = body.collect_bytes().await.unwrap_or_default();
            let seen = Seen {
                method: parts.method.clone(),
                path: parts.uri.path().to_string(),
                body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            };
            let (code, out) = {
                let mut s = server.lock().unwrap();
                s.seen.push(seen.clone());
                answer(&mut s, &seen)
            };
            tx.send_response(
                Response::builder().status(code).body(Body::from(serde_json::to_vec(&out).unwrap())).unwrap(),
            );
        }
    });
}

/// The pods cache, filled by its real watch from a second mocked API server that lists `pods`
/// and then holds the watch open.
async fn pod_records(pods: Vec<Value>) -> crate::records::Records<PodInfo> {
    let (svc, mut h) = mock::pair::<Request<Body>, Response<Body>>();
    let client = kube::Client::new(svc, "default");
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Some((req, tx)) = h.next_request().await {
            if req.uri().query().unwrap_or_default().contains("watch=true") {
                held.push(tx);
                continue;
            }
            let list =
                json!({"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "1"}, "items": pods});
            tx.send_response(Response::builder().body(Body::from(serde_json::to_vec(&list).unwrap())).unwrap());
        }
    });
    let (records, _task) = watch_records::<PodWire, _>(
        "pods",
        kube::Api::all(client),
        watcher::Config::default(),
        PodInfo::from_wire,
        crate::metrics::Metrics::new(),
        |_, _, _, _| {},
    );
    records.wait_until_ready().await;
    records
}

/// A reconciler context over the mocked API server and fakes, and the handles a test drives.
struct Harness {
    ctx: Arc<Context>,
    elb: Arc<FakeElbV2>,
    server: Arc<Mutex<Server>>,
    leader: tokio::sync::watch::Sender<bool>,
    /// The EndpointSlice cache, to change endpoints between reconciles.
    slices: crate::records::Records<SliceInfo>,
    /// The node cache, to change nodes between reconciles (instance mode).
    nodes: Mutex<Writer<Node>>,
    /// EC2 instances by private IP (instance mode).
    instances: Arc<lbc_aws::fake_instances::FakeInstances>,
}

struct Cluster {
    tgb: TargetGroupBinding,
    service: Option<Service>,
    slices: Vec<EndpointSlice>,
    pods: Vec<Value>,
    nodes: Vec<Node>,
    /// More bindings in the cache (not served by the mocked API server).
    others: Vec<TargetGroupBinding>,
    tenancy: Arc<lbc_model::tenancy::Tenancy>,
    credentials: Option<lbc_aws::credentials::CredentialStatus>,
}

async fn harness(c: Cluster) -> Harness {
    let (svc, h) = mock::pair::<Request<Body>, Response<Body>>();
    let (leader, leader_rx) = tokio::sync::watch::channel(true);
    // As in production: writes go through the leader gate.
    let client = kube::client::ClientBuilder::new(svc, "default")
        .with_layer(&crate::kube_gate::KubeGate::new(leader_rx.clone(), Duration::from_secs(30)))
        .build();
    let server = Arc::new(Mutex::new(Server { tgb: serde_json::to_value(&c.tgb).unwrap(), ..Default::default() }));
    serve(h, server.clone());

    let (tgbs, mut tgb_w) = synced_store::<TargetGroupBinding>();
    tgb_w.apply_watcher_event(&watcher::Event::Apply(c.tgb.clone()));
    for other in c.others {
        tgb_w.apply_watcher_event(&watcher::Event::Apply(other));
    }
    let (services, mut svc_w) = synced_store::<Service>();
    if let Some(s) = c.service {
        svc_w.apply_watcher_event(&watcher::Event::Apply(s));
    }
    let (nodes_r, mut nodes_w) = synced_store::<Node>();
    for n in c.nodes {
        nodes_w.apply_watcher_event(&watcher::Event::Apply(n));
    }
    let slices = crate::records::Records::filled_by_hand();
    for s in &c.slices {
        slices.put(NS, s.metadata.name.as_deref().unwrap_or_default(), SliceInfo::of(s));
    }
    let stores = Stores {
        tgbs,
        services,
        slices: slices.clone(),
        pods: pod_records(c.pods).await,
        nodes: nodes_r,
        ingresses: synced_store::<Ingress>().0,
        ingress_classes: synced_store::<IngressClass>().0,
        ingress_class_params: synced_store::<IngressClassParams>().0,
        namespaces: synced_store::<Namespace>().0,
        gateways: None,
    };

    let elb = Arc::new(FakeElbV2::default());
    elb.add_target_group(TargetGroupInfo {
        arn: ARN.into(),
        name: "web".into(),
        target_type: "ip".into(),
        vpc_id: Some("vpc-1".into()),
        health_check_interval_seconds: Some(10),
        ..Default::default()
    });
    let instances = Arc::new(lbc_aws::fake_instances::FakeInstances::default());
    let ec2 = FakeEc2::default();
    ec2.vpcs.lock().unwrap().insert("vpc-1".into(), vec!["10.0.0.0/16".into()]);
    let mut ctx = crate::stack::test_world::context_with_instances(
        client,
        stores,
        elb.clone(),
        ec2,
        leader_rx,
        instances.clone(),
    );
    let fresh = Arc::get_mut(&mut ctx).expect("a new context");
    fresh.cfg.tenancy = c.tenancy;
    fresh.credentials = c.credentials;
    // This cluster's target group (a binding on a group without ownership tags deregisters only
    // what it registered: `untagged_group_*` below).
    elb.set_tags(ARN, &[(lbc_model::names::CLUSTER_TAG, &ctx.cfg.cluster_name)]);
    Harness { ctx, elb, server, leader, slices, nodes: Mutex::new(nodes_w), instances }
}

impl Harness {
    async fn reconcile(&self, tgb: &TargetGroupBinding) -> Result<Action> {
        reconcile(Arc::new(tgb.clone()), self.ctx.clone()).await
    }

    /// AWS calls since the last look, as `Operation(targets)`.
    fn aws(&self) -> Vec<String> {
        let calls = self.elb.calls();
        self.elb.clear_calls();
        calls.iter().map(|FakeCall { operation, targets, .. }| format!("{operation}({targets})")).collect()
    }

    /// Kubernetes requests since the last look (events apart, see [`Harness::events`]).
    fn kube(&self) -> Vec<Seen> {
        let mut s = self.server.lock().unwrap();
        let (events, rest): (Vec<Seen>, Vec<Seen>) = s.seen.drain(..).partition(|r| r.path.ends_with("/events"));
        s.seen = events;
        rest
    }

    fn kube_lines(&self) -> Vec<String> {
        self.kube().iter().map(Seen::line).collect()
    }

    /// Reasons of the Events published since the last look.
    fn events(&self) -> Vec<String> {
        let mut s = self.server.lock().unwrap();
        let events: Vec<Seen> = std::mem::take(&mut s.seen);
        let (ev, rest): (Vec<Seen>, Vec<Seen>) = events.into_iter().partition(|r| r.path.ends_with("/events"));
        s.seen = rest;
        ev.iter().map(|e| e.body["reason"].as_str().unwrap_or_default().to_string()).collect()
    }

    fn registered(&self) -> Vec<String> {
        self.elb.registered(ARN).iter().map(Target::to_string).collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Fixtures

fn binding(finalizer: bool) -> TargetGroupBinding {
    let mut b: TargetGroupBinding = serde_json::from_value(json!({
        "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
        "metadata": {"name": "web", "namespace": NS, "uid": "tgb-uid", "generation": 1, "resourceVersion": "5"},
        "spec": {"targetGroupARN": ARN, "targetType": "ip", "serviceRef": {"name": "web", "port": 80}},
    }))
    .unwrap();
    if finalizer {
        b.metadata.finalizers = Some(vec![lbc_model::names::TGB_FINALIZER.into()]);
    }
    b
}

fn deleting(mut b: TargetGroupBinding) -> TargetGroupBinding {
    b.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        jiff::Timestamp::from_second(1_700_000_000).unwrap(),
    ));
    b
}

fn service() -> Service {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
    }))
    .unwrap()
}

/// An endpoint: (last octet of 10.0.1.x, pod name, ready, terminating).
type Ep = (u8, &'static str, bool, bool);

fn slice(eps: &[Ep]) -> EndpointSlice {
    let endpoints: Vec<Value> = eps
        .iter()
        .map(|(ip, pod, ready, terminating)| {
            json!({
                "addresses": [format!("10.0.1.{ip}")],
                "conditions": {"ready": ready, "serving": ready, "terminating": terminating},
                "targetRef": {"kind": "Pod", "name": pod, "namespace": NS},
            })
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-abc", "namespace": NS, "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": endpoints,
    }))
    .unwrap()
}

/// A running pod carrying our readiness gate; `gate`: its condition's status, if any.
fn gated_pod(name: &str, ip: u8, gate: Option<&str>) -> Value {
    let mut conditions = vec![json!({"type": "ContainersReady", "status": "True"})];
    if let Some(s) = gate {
        conditions.push(json!({"type": GATE, "status": s, "reason": "Elb.RegistrationInProgress"}));
    }
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}")},
        "spec": {"readinessGates": [{"conditionType": GATE}], "nodeName": "node-1"},
        "status": {"podIP": format!("10.0.1.{ip}"), "conditions": conditions},
    })
}

fn t(ip: u8) -> Target {
    Target::new(std::net::IpAddr::from([10, 0, 1, ip]), 8080)
}

fn cluster(tgb: TargetGroupBinding, eps: &[Ep]) -> Cluster {
    Cluster {
        tgb,
        service: Some(service()),
        slices: vec![slice(eps)],
        pods: vec![],
        nodes: vec![],
        others: vec![],
        tenancy: Arc::default(),
        credentials: None,
    }
}

/// When an action requeues (kube's `Action` shows it only through `Debug`).
fn requeue_after(a: &Action) -> Option<Duration> {
    let shown = format!("{a:?}");
    let inner = shown.split("Some(").nth(1)?.split(')').next()?;
    let at = inner.find(|c: char| c.is_alphabetic())?;
    let n: f64 = inner[..at].parse().ok()?;
    let secs = match &inner[at..] {
        "s" => n,
        "ms" => n / 1e3,
        "\u{b5}s" => n / 1e6,
        "ns" => n / 1e9,
        _ => return None,
    };
    Some(Duration::from_secs_f64(secs))
}

/// `a` requeues between `lo` and `hi` seconds (jitter).
fn requeues_within(a: &Action, lo: u64, hi: u64) -> bool {
    requeue_after(a).is_some_and(|d| d >= Duration::from_secs(lo) && d <= Duration::from_secs(hi))
}

fn ready_condition(req: &Seen) -> (String, String) {
    let c = &req.body["status"]["conditions"][0];
    (c["status"].as_str().unwrap_or_default().into(), c["reason"].as_str().unwrap_or_default().into())
}

// ---------------------------------------------------------------------------------------------
// Main paths

#[tokio::test(start_paused = true)]
async fn a_target_group_this_process_created_is_not_read_back() {
    let h = harness(cluster(binding(true), &[(1, "a", true, false), (2, "b", true, false)])).await;
    let created =
        TargetGroupInfo { arn: ARN.into(), name: "web".into(), target_type: "ip".into(), ..Default::default() };
    // A Service's stack made it, with only the cluster tag a plain binding may find.
    let tags = [(lbc_model::names::CLUSTER_TAG.to_string(), h.ctx.cfg.cluster_name.clone())].into();
    h.ctx.learn_created_target_group(created, &tags);
    h.reconcile(&binding(true)).await.unwrap();
    assert_eq!(
        h.aws(),
        vec!["DescribeTargetHealth(0)", "RegisterTargets(2)"],
        "no DescribeTargetGroups, no DescribeTags"
    );
}

#[tokio::test(start_paused = true)]
async fn first_reconcile_only_adds_the_finalizer() {
    let h = harness(cluster(binding(false), &[(1, "a", true, false)])).await;
    let action = h.reconcile(&binding(false)).await.unwrap();
    assert_eq!(action, Action::await_change(), "the finalizer patch's watch event brings the next reconcile");
    let kube = h.kube();
    assert_eq!(kube.iter().map(Seen::line).collect::<Vec<_>>(), vec![format!("PATCH {TGB_PATH}")]);
    let patch = kube[0].body.to_string();
    assert!(patch.contains(lbc_model::names::TGB_FINALIZER), "finalizer added by JSON patch: {patch}");
    assert_eq!(h.aws(), Vec::<String>::new(), "no AWS call before the finalizer is in place");
}

#[tokio::test(start_paused = true)]
async fn new_endpoints_are_registered_and_the_status_written() {
    let h = harness(cluster(binding(true), &[(1, "a", true, false), (2, "b", true, false)])).await;
    let action = h.reconcile(&binding(true)).await.unwrap();
    assert_eq!(
        h.aws(),
        vec!["DescribeTargetGroups(0)", "DescribeTags(0)", "DescribeTargetHealth(0)", "RegisterTargets(2)"],
        "one read of the group, its owner tags and registrations, then one batched write"
    );
    assert_eq!(h.registered(), vec!["10.0.1.1:8080", "10.0.1.2:8080"]);
    let kube = h.kube();
    assert_eq!(kube.iter().map(Seen::line).collect::<Vec<_>>(), vec![format!("PATCH {TGB_PATH}/status")]);
    assert_eq!(ready_condition(&kube[0]), ("True".into(), "Synced".into()));
    assert_eq!(kube[0].body["status"]["registeredTargets"], json!(2));
    assert_eq!(h.events(), vec!["SuccessfullyReconciled"]);
    // The checkpoint waits for a write-back sync shortly after (the binding was changing).
    assert_eq!(action, Action::requeue(lbc_model::checkpoint::WRITE_BACK_DELAY));
}

#[tokio::test(start_paused = true)]
async fn terminating_endpoints_are_deregistered() {
    let h = harness(cluster(binding(true), &[(1, "a", true, false), (2, "b", false, true)])).await;
    h.elb.register_targets(ARN, &[t(1), t(2)], None).await.unwrap();
    h.aws();
    h.reconcile(&binding(true)).await.unwrap();
    assert_eq!(
        h.aws(),
        vec!["DescribeTargetGroups(0)", "DescribeTags(0)", "DescribeTargetHealth(0)", "DeregisterTargets(1)"]
    );
    assert_eq!(h.registered(), vec!["10.0.1.1:8080"]);
    let lines = h.kube_lines();
    assert_eq!(lines, vec![format!("PATCH {TGB_PATH}/status")]);
}

#[tokio::test(start_paused = true)]
async fn a_gate_turns_true_once_aws_reports_the_target_healthy() {
    let mut c = cluster(binding(true), &[(1, "a", false, false)]);
    c.pods = vec![gated_pod("a", 1, None)];
    let h = harness(c).await;
    h.elb.set_initial_state(HealthState::Initial);

    // Registered: the pod shows "registration in progress" at once.
    let action = h.reconcile(&binding(true)).await.unwrap();
    assert_eq!(
        h.aws(),
        vec!["DescribeTargetGroups(0)", "DescribeTags(0)", "DescribeTargetHealth(0)", "RegisterTargets(1)"]
    );
    let kube = h.kube();
    let pod_patch = format!("PATCH /api/v1/namespaces/{NS}/pods/a/status");
    assert_eq!(
        kube.iter().map(Seen::line).collect::<Vec<_>>(),
        vec![pod_patch.clone(), format!("PATCH {TGB_PATH}/status")]
    );
    let cond = &kube[0].body["status"]["conditions"][0];
    assert_eq!((cond["type"].as_str(), cond["status"].as_str()), (Some(GATE), Some("False")));
    assert_eq!(cond["reason"], json!("Elb.RegistrationInProgress"));
    assert_eq!(kube[0].body["metadata"]["uid"], json!("uid-a"), "a replaced pod of the same name is not patched");
    assert_eq!(action, Action::requeue(Duration::from_secs(5)), "the health poll: half the 10 s health-check interval");

    // AWS says healthy; at the poll the gate turns True.
    h.elb.set_health(ARN, t(1), HealthState::Healthy);
    tokio::time::advance(Duration::from_secs(5)).await;
    h.reconcile(&binding(true)).await.unwrap();
    assert_eq!(h.aws(), vec!["DescribeTargetHealth(1)"], "only the pending target is polled; no write");
    let kube = h.kube();
    assert_eq!(kube.first().map(Seen::line), Some(pod_patch));
    assert_eq!(kube[0].body["status"]["conditions"][0]["status"], json!("True"));
}

#[tokio::test(start_paused = true)]
async fn deletion_deregisters_releases_gates_and_removes_the_finalizer() {
    let tgb = deleting(binding(true));
    let mut c = cluster(tgb.clone(), &[(1, "a", true, false)]);
    c.pods = vec![gated_pod("a", 1, Some("True"))];
    let h = harness(c).await;
    h.elb.register_targets(ARN, &[t(1), t(2), t(3)], None).await.unwrap();
    h.elb.set_health(ARN, t(3), HealthState::Draining);
    h.aws();

    let action = h.reconcile(&tgb).await.unwrap();
    assert_eq!(action, Action::await_change());
    assert_eq!(
        h.aws(),
        vec!["DescribeTags(0)", "DescribeTargetHealth(0)", "DeregisterTargets(2)"],
        "every target not already draining"
    );
    let kube = h.kube();
    assert_eq!(
        kube.iter().map(Seen::line).collect::<Vec<_>>(),
        vec![format!("PATCH /api/v1/namespaces/{NS}/pods/a/status"), format!("PATCH {TGB_PATH}")]
    );
    let released = &kube[0].body["status"]["conditions"][0];
    assert_eq!(
        (released["status"].as_str(), released["reason"].as_str()),
        (Some("True"), Some("TargetGroupBindingDeleted"))
    );
    let remove = kube[1].body.to_string();
    assert!(remove.contains("\"remove\"") && remove.contains("/metadata/finalizers/0"), "finalizer removed: {remove}");
}

// ---------------------------------------------------------------------------------------------
// Failure paths

#[tokio::test(start_paused = true)]
async fn a_missing_target_group_is_reported_and_nothing_written() {
    let h = harness(cluster(binding(true), &[(1, "a", true, false)])).await;
    h.elb.remove_target_group(ARN);
    let action = h.reconcile(&binding(true)).await.unwrap();
    assert_eq!(h.aws(), vec!["DescribeTargetGroups(0)"]);
    let kube = h.kube();
    assert_eq!(kube.iter().map(Seen::line).collect::<Vec<_>>(), vec![format!("PATCH {TGB_PATH}/status")]);
    assert_eq!(ready_condition(&kube[0]), ("False".into(), "TargetGroupNotFound".into()));
    let msg = kube[0].body["status"]["conditions"][0]["message"].as_str().unwrap_or_default().to_string();
    assert!(msg.contains(ARN) && msg.contains("shop/web") && msg.contains("recreate it"), "{msg}");
    assert_eq!(h.events(), vec!["TargetGroupNotFound"]);
    assert!(requeues_within(&action, 600, 900), "checked again at the sync period: {action:?}");
}

#[tokio::test(start_paused = true)]
async fn a_target_group_deleted_between_reads_is_reported_not_retried_hot() {
    let h = harness(cluster(binding(true), &[(1, "a", true, false)])).await;
    h.reconcile(&binding(true)).await.unwrap();
    h.aws();
    h.kube();
    h.events();
    // Deleted out of band (group and tags are cached); a new endpoint needs a write AWS refuses.
    h.elb.remove_target_group(ARN);
    h.slices.put(NS, "web-abc", SliceInfo::of(&slice(&[(1, "a", true, false), (2, "b", true, false)])));
    let action = h.reconcile(&binding(true)).await.unwrap();
    assert_eq!(h.aws(), vec!["RegisterTargets(1)"]);
    let kube = h.kube();
    assert_eq!(kube.iter().map(Seen::line).collect::<Vec<_>>(), vec![format!("PATCH {TGB_PATH}/status")]);
    assert_eq!(ready_condition(&kube[0]), ("False".into(), "TargetGroupNotFound".into()));
    assert!(requeues_within(&action, 600, 900), "not a hot retry: {action:?}");
    // What was cached of the group is dropped: the next reconcile asks AWS again.
    h.reconcile(&binding(true)).await.unwrap();
    assert_eq!(h.aws(), vec!["DescribeTargetGroups(0)"]);
}

#[tokio::test(start_paused = true)]
async fn a_throttled_write_fails_with_backoff_and_the_retry_rereads_aws() {
    let h = harness(cluster(binding(true), &[(1, "a", true, false)])).await;
    h.elb.inject_fault("RegisterTargets", ErrorKind::Throttled);
    let tgb = Arc::new(binding(true));
    let err = h.reconcile(&tgb).await.unwrap_err();
    assert_eq!(
        h.aws(),
        vec!["DescribeTargetGroups(0)", "DescribeTags(0)", "DescribeTargetHealth(0)", "RegisterTargets(1)"]
    );
    assert!(h.kube_lines().is_empty(), "no status write for a failed sync: {err}");
    let action = error_policy(tgb.clone(), &err, h.ctx.clone());
    assert!(requeues_within(&action, 1, 2), "first backoff step, 1 s plus jitter: {action:?}");
    tokio::task::yield_now().await;
    assert_eq!(h.events(), vec!["FailedReconcileThrottled"], "a Warning names the failure");

    // The retry reads the registrations again (what a failed write did is unknown) and writes.
    h.reconcile(&tgb).await.unwrap();
    assert_eq!(h.aws(), vec!["DescribeTargetHealth(0)", "RegisterTargets(1)"]);
    assert_eq!(h.registered(), vec!["10.0.1.1:8080"]);
}

#[tokio::test(start_paused = true)]
async fn a_replica_that_does_not_lead_writes_nothing() {
    let h = harness(cluster(binding(true), &[(1, "a", true, false)])).await;
    h.leader.send(false).unwrap();
    let action = h.reconcile(&binding(true)).await.unwrap();
    assert_eq!(action, Action::await_change());
    assert_eq!(h.aws(), Vec::<String>::new());
    assert!(h.kube().is_empty());

    // A write refused by the leader fence mid-reconcile: no backoff step, no Warning, state dropped.
    h.ctx.with_state(&ObjectRef::from_obj(&binding(true)), |s| s.failures = 3);
    let err = Error::NotLeader("lost the lease".into());
    assert_eq!(error_policy(Arc::new(binding(true)), &err, h.ctx.clone()), Action::await_change());
    tokio::task::yield_now().await;
    assert!(h.events().is_empty());
    assert_eq!(h.ctx.with_state(&ObjectRef::from_obj(&binding(true)), |s| s.failures), 0, "state forgotten");
}

#[tokio::test(start_paused = true)]
async fn deregistering_everything_is_refused_while_endpoints_live() {
    // Both endpoints not ready (and not held by our gate): nothing is desired, yet the Service
    // has live endpoints, so an empty desired set is suspicious, not a scale-to-zero.
    let h = harness(cluster(binding(true), &[(1, "a", false, false), (2, "b", false, false)])).await;
    h.elb.register_targets(ARN, &[t(1), t(2)], None).await.unwrap();
    h.aws();
    h.reconcile(&binding(true)).await.unwrap();
    assert_eq!(
        h.aws(),
        vec!["DescribeTargetGroups(0)", "DescribeTags(0)", "DescribeTargetHealth(0)"],
        "no deregistration"
    );
    assert_eq!(h.registered().len(), 2);
    let kube = h.kube();
    assert_eq!(kube.iter().map(Seen::line).collect::<Vec<_>>(), vec![format!("PATCH {TGB_PATH}/status")]);
    assert_eq!(ready_condition(&kube[0]), ("False".into(), "DeregisterAllRefused".into()));
}

#[tokio::test(start_paused = true)]
async fn another_clusters_target_group_is_not_written() {
    let h = harness(cluster(binding(true), &[(1, "a", true, false)])).await;
    h.elb.set_tags(ARN, &[(lbc_model::names::CLUSTER_TAG, "staging")]);
    h.reconcile(&binding(true)).await.unwrap();
    assert_eq!(h.aws(), vec!["DescribeTargetGroups(0)", "DescribeTags(0)"], "not even a registration read");
    let kube = h.kube();
    assert_eq!(ready_condition(&kube[0]), ("False".into(), "TargetGroupNotOwned".into()));
    let msg = kube[0].body["status"]["conditions"][0]["message"].as_str().unwrap_or_default().to_string();
    assert!(msg.contains("staging") && msg.contains("prod"), "names the value seen and expected: {msg}");

    // Deleting such a binding deregisters nothing either.
    let gone = deleting(binding(true));
    h.reconcile(&gone).await.unwrap();
    assert_eq!(h.aws(), Vec::<String>::new(), "tags are read once per process");
    assert_eq!(h.kube_lines(), vec![format!("PATCH {TGB_PATH}")], "only the finalizer removal");
    assert_eq!(h.events(), vec!["TargetGroupNotOwned", "TargetGroupNotOwned"]);
}

#[tokio::test(start_paused = true)]
async fn a_status_write_the_api_server_refuses_fails_the_reconcile() {
    let h = harness(cluster(binding(true), &[(1, "a", true, false)])).await;
    h.server.lock().unwrap().fail.push((Method::PATCH, format!("{TGB_PATH}/status"), 500));
    let err = h.reconcile(&binding(true)).await.unwrap_err();
    assert_eq!(h.registered(), vec!["10.0.1.1:8080"], "the AWS write happened");
    assert_eq!(h.kube_lines(), vec![format!("PATCH {TGB_PATH}/status")]);
    assert!(err.to_string().contains("500") || err.to_string().contains("Injected"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn multi_cluster_records_its_targets_before_writing_and_deletes_only_its_own() {
    let mut tgb = binding(true);
    tgb.spec.multi_cluster_target_group = Some(true);
    let h = harness(cluster(tgb.clone(), &[(1, "a", true, false)])).await;
    // Another cluster's target in the shared group.
    h.elb.register_targets(ARN, &[t(9)], None).await.unwrap();
    h.aws();

    h.reconcile(&tgb).await.unwrap();
    assert_eq!(
        h.aws(),
        vec!["DescribeTargetGroups(0)", "DescribeTargetHealth(0)", "RegisterTargets(1)"],
        "no owner-tag read for a shared group; the other cluster's target is left alone"
    );
    assert_eq!(h.registered(), vec!["10.0.1.1:8080", "10.0.1.9:8080"]);
    let cm = format!("/api/v1/namespaces/{NS}/configmaps");
    let kube = h.kube();
    assert_eq!(
        kube.iter().map(Seen::line).collect::<Vec<_>>(),
        vec![
            format!("GET {cm}/aws-lbc-targets-web"),
            format!("PATCH {TGB_PATH}/status"),
            format!("PATCH {TGB_PATH}/status"),
            format!("PUT {cm}/aws-lbc-targets-web"),
            format!("POST {cm}"),
            format!("PUT {cm}/aws-lbc-targets-web"),
            format!("PATCH {TGB_PATH}/status"),
        ],
        "no record: ALBC's ConfigMap read once, the (empty) adoption recorded in the status; the planned \
         registration recorded before it (status, and the ConfigMap created on first use), the ConfigMap again after"
    );
    assert_eq!(kube[1].body["status"]["ownedTargets"], json!([]), "nothing to adopt");
    assert_eq!(kube[2].body["status"]["ownedTargets"], json!(["10.0.1.1:8080"]), "recorded before RegisterTargets");
    assert_eq!(kube[4].body["data"]["targets"], json!("10.0.1.1:8080"), "ALBC's ConfigMap kept for a rollback");
    assert_eq!(kube[4].body["metadata"]["ownerReferences"][0]["name"], json!("web"), "owned by the binding");
    assert_eq!(kube[5].body["data"]["targets"], json!("10.0.1.1:8080"));

    let gone = deleting(tgb);
    h.reconcile(&gone).await.unwrap();
    assert_eq!(h.aws(), vec!["DescribeTargetHealth(0)", "DeregisterTargets(1)"]);
    assert_eq!(h.registered(), vec!["10.0.1.9:8080"], "only this cluster's target deregistered");
    assert_eq!(
        h.kube_lines(),
        vec![format!("DELETE {cm}/aws-lbc-targets-web"), format!("PATCH {TGB_PATH}")],
        "the record is the status's: the ConfigMap is not read again"
    );
}

/// Issue 32: the ConfigMap is in the tenant's namespace. A forged one listing another team's
/// target (registered in the shared group) is read once, its foreign entry is not adopted (a
/// Warning names it), and neither a sync nor the deletion ever deregisters it.
#[tokio::test(start_paused = true)]
async fn a_forged_multi_cluster_configmap_never_deregisters_another_teams_target() {
    let mut tgb = binding(true);
    tgb.spec.multi_cluster_target_group = Some(true);
    let h = harness(cluster(tgb.clone(), &[(1, "a", true, false), (2, "b", true, false)])).await;
    h.elb.register_targets(ARN, &[t(1), t(9)], None).await.unwrap();
    let forged = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "aws-lbc-targets-web", "namespace": NS},
        "data": {"targets": "10.0.1.1:8080,10.0.1.9:8080"}});
    h.server.lock().unwrap().configmaps.insert("aws-lbc-targets-web".into(), forged);
    h.aws();

    h.reconcile(&tgb).await.unwrap();
    assert_eq!(h.registered(), vec!["10.0.1.1:8080", "10.0.1.2:8080", "10.0.1.9:8080"], "nothing deregistered");
    let kube = h.kube();
    assert_eq!(kube[1].line(), format!("PATCH {TGB_PATH}/status"));
    assert_eq!(kube[1].body["status"]["ownedTargets"], json!(["10.0.1.1:8080"]), "only our own endpoint adopted");
    assert_eq!(kube[2].body["status"]["ownedTargets"], json!(["10.0.1.1:8080", "10.0.1.2:8080"]));
    assert!(h.events().contains(&"RecordEntriesNotAdopted".to_string()), "the foreign entry is reported");

    // The binding goes: its own targets are deregistered, the forged entry's never.
    let gone = deleting(tgb);
    h.reconcile(&gone).await.unwrap();
    assert_eq!(h.registered(), vec!["10.0.1.9:8080"], "the other team's target survives the deletion");
    assert!(!h.kube_lines().iter().any(|l| l.starts_with("GET")), "the ConfigMap is read only once");
}

#[tokio::test(start_paused = true)]
async fn failures_in_a_row_double_the_requeue_up_to_the_cap_and_a_success_starts_over() {
    let h = harness(cluster(binding(true), &[(1, "a", true, false)])).await;
    let tgb = Arc::new(binding(true));
    // The harness's --targetgroupbinding-max-exponential-backoff-delay is 60 s.
    for (n, lo) in [1, 2, 4, 8, 16, 32, 60, 60].into_iter().enumerate() {
        h.elb.inject_fault("RegisterTargets", ErrorKind::Throttled);
        let err = h.reconcile(&tgb).await.unwrap_err();
        let action = error_policy(tgb.clone(), &err, h.ctx.clone());
        let hi = (lo * 2).min(60);
        assert!(requeues_within(&action, lo, hi), "failure {}: expected {lo}…{hi} s, got {action:?}", n + 1);
    }
    h.reconcile(&tgb).await.unwrap();
    assert_eq!(h.registered(), vec!["10.0.1.1:8080"]);
    let key = ObjectRef::from_obj(tgb.as_ref());
    assert_eq!(h.ctx.with_state(&key, |s| s.failures), 0, "a success clears the failures");
    let err = Error::Aws(lbc_aws::AwsError::new(
        ErrorKind::Throttled,
        "elasticloadbalancing",
        "RegisterTargets",
        "slow down",
    ));
    let action = error_policy(tgb.clone(), &err, h.ctx.clone());
    assert!(requeues_within(&action, 1, 2), "the next failure starts over at 1 s: {action:?}");
}

#[path = "instance_tests.rs"]
mod instance;

/// Binding `name` of Service `web` for target group `.../targetgroup/<name>/0123`.
fn other_binding(name: &str) -> (TargetGroupBinding, String) {
    let arn = format!("arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/{name}/0123");
    let mut b = binding(true);
    b.metadata.name = Some(name.into());
    b.metadata.uid = Some(format!("uid-{name}"));
    b.spec.target_group_arn = Some(arn.clone());
    (b, arn)
}

#[tokio::test(start_paused = true)]
async fn the_first_ownership_read_fetches_every_named_groups_tags_in_one_call() {
    let (api, api_arn) = other_binding("api");
    let (gone, gone_arn) = other_binding("gone");
    let mut c = cluster(binding(true), &[(1, "a", true, false)]);
    c.others = vec![api.clone()];
    let h = harness(c).await;
    h.elb.add_target_group(TargetGroupInfo { arn: api_arn.clone(), name: "api".into(), ..Default::default() });
    h.reconcile(&binding(true)).await.unwrap();
    let tag_reads = |h: &Harness| {
        h.elb
            .calls()
            .iter()
            .filter(|c| c.operation == "DescribeTags")
            .map(|c| c.target_group_arn.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(tag_reads(&h), [format!("{ARN},{api_arn}")], "web's and api's tags in one call");
    let known = |arn: &str| h.ctx.target_group_tags.lock().unwrap().get(arn).is_some_and(|c| c.initialized());
    assert!(known(&api_arn), "api's tags are cached by web's read");
    h.elb.clear_calls();
    // api's own first sync reads no tags.
    sync::foreign_owner(&h.ctx, &api, &api_arn).await.unwrap();
    assert!(tag_reads(&h).is_empty());

    // A named group that does not exist fails the batched call: the binding's own group is read alone.
    let mut c = cluster(binding(true), &[(1, "a", true, false)]);
    c.others = vec![gone];
    let h = harness(c).await;
    h.reconcile(&binding(true)).await.unwrap();
    assert_eq!(tag_reads(&h), [format!("{ARN},{gone_arn}"), ARN.to_string()]);
    assert!(h.registered().contains(&t(1).to_string()), "the sync went on");
}

#[tokio::test(start_paused = true)]
async fn a_binding_that_just_wrote_is_held_while_few_bindings_write_and_the_bucket_drains() {
    use lbc_model::pacing::BucketLevel;
    let h = harness(cluster(binding(true), &[(1, "a", true, false)])).await;
    let key = ObjectRef::from_obj(&binding(true));
    let empty = Some(BucketLevel { tokens: 0.0, rate: 4.0, burst: 20.0 });
    assert_eq!(h.ctx.write_hold(&key, empty, false), Duration::ZERO, "no write yet");
    // Its first reconcile registers a target.
    h.reconcile(&binding(true)).await.unwrap();
    assert_eq!(h.registered(), [t(1).to_string()]);
    // Alone: one binding's share of an empty bucket, 1 / 4 s.
    assert_eq!(h.ctx.write_hold(&key, empty, false), Duration::from_millis(250));
    assert_eq!(h.ctx.write_hold(&key, empty, true), Duration::ZERO, "a change taking targets out is never held");
    assert_eq!(h.ctx.write_hold(&key, None, false), Duration::ZERO, "no client-side throttle: no pacing");
    // Nine other bindings wrote too: ten share the bucket, 10 / 4 s, less the time gone by.
    let others: Vec<_> = (0..9).map(|i| ObjectRef::<TargetGroupBinding>::new(&format!("b{i}")).within(NS)).collect();
    others.iter().for_each(|k| h.ctx.wrote_targets(k));
    tokio::time::advance(Duration::from_millis(500)).await;
    assert_eq!(h.ctx.write_hold(&key, empty, false), Duration::from_millis(2000));
    // Eleven: more than half the burst writing, nobody is held.
    h.ctx.wrote_targets(&ObjectRef::new("b9").within(NS));
    assert_eq!(h.ctx.write_hold(&key, empty, false), Duration::ZERO);
    // Two seconds after the writes, nobody counts as writing any more.
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(h.ctx.write_hold(&key, empty, false), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn the_ready_write_keeps_the_conditions_other_writers_own() {
    let mut b = binding(true);
    b.status = Some(
        serde_json::from_value(json!({"conditions": [{
        "type": "BackendSecurityGroupRules", "status": "False", "reason": "PeerNotFound",
        "message": "security group sg-0missing does not exist", "lastTransitionTime": "2026-11-28T10:00:00Z"}]}))
        .unwrap(),
    );
    let h = harness(cluster(b.clone(), &[(1, "a", false, false)])).await;
    h.reconcile(&b).await.unwrap();
    let kube = h.kube();
    let status = kube.iter().find(|r| r.path == format!("{TGB_PATH}/status")).expect("a status write");
    let types: Vec<&str> =
        status.body["status"]["conditions"].as_array().unwrap().iter().filter_map(|c| c["type"].as_str()).collect();
    assert_eq!(types, ["BackendSecurityGroupRules", "Ready"], "the networking pass's condition is not dropped");
    assert_eq!(status.body["status"]["conditions"][0]["reason"], json!("PeerNotFound"));
}

/// Issue 32: a plain binding on a target group without ownership tags (Terraform's) deregisters
/// only what it registered. The group's owner's target is reported (ForeignTargetsPresent), kept
/// by the first sync, by later syncs and by the binding's deletion.
#[tokio::test(start_paused = true)]
async fn untagged_group_keeps_its_owners_targets_through_sync_and_deletion() {
    let tgb = binding(true);
    let h = harness(cluster(tgb.clone(), &[(1, "a", true, false)])).await;
    h.elb.set_tags(ARN, &[("team", "platform")]);
    h.elb.register_targets(ARN, &[t(9)], None).await.unwrap();
    h.aws();

    h.reconcile(&tgb).await.unwrap();
    assert_eq!(h.registered(), vec!["10.0.1.1:8080", "10.0.1.9:8080"], "the owner's target kept");
    assert!(!h.aws().iter().any(|c| c.starts_with("DeregisterTargets")), "no deregistration");
    let kube = h.kube();
    assert!(!kube.iter().any(|r| r.path.contains("configmaps")), "no ConfigMap for a plain binding");
    let records: Vec<&Value> = kube.iter().filter_map(|r| r.body["status"].get("ownedTargets")).collect();
    assert_eq!(records, [&json!([]), &json!(["10.0.1.1:8080"])], "adopted nothing, then recorded before writing");
    assert!(h.events().contains(&"ForeignTargetsPresent".to_string()));

    h.reconcile(&deleting(tgb)).await.unwrap();
    assert_eq!(h.registered(), vec!["10.0.1.9:8080"], "deletion deregisters only this binding's target");
}

#[tokio::test(start_paused = true)]
async fn strict_tenancy_writes_only_to_untagged_groups_the_policy_grants() {
    use lbc_model::tenancy::{Tenancy, TenancyMode};
    let strict = |policy: &str| Arc::new(Tenancy::parse(TenancyMode::Strict, policy, "test").unwrap());
    // Terraform's group (no ownership tag), granted to another namespace only: nothing written,
    // not even a registration read, and the binding says why.
    let mut c = cluster(binding(true), &[(1, "a", true, false)]);
    c.tenancy = strict(r#"{"targetGroups": [{"namespaces": ["other"], "names": ["web"]}]}"#);
    let h = harness(c).await;
    h.elb.set_tags(ARN, &[("team", "platform")]);
    h.elb.register_targets(ARN, &[t(9)], None).await.unwrap();
    h.aws();
    h.reconcile(&binding(true)).await.unwrap();
    assert_eq!(h.aws(), vec!["DescribeTargetGroups(0)", "DescribeTags(0)"]);
    let kube = h.kube();
    assert_eq!(ready_condition(&kube[0]), ("False".into(), "TargetGroupNotGranted".into()));
    let msg = kube[0].body["status"]["conditions"][0]["message"].as_str().unwrap_or_default().to_string();
    assert!(msg.contains("shop/web") && msg.contains("tenancy.policy.targetGroups"), "{msg}");
    // Deleting it deregisters nothing either.
    h.reconcile(&deleting(binding(true))).await.unwrap();
    assert!(!h.aws().iter().any(|c| c.starts_with("DeregisterTargets")));
    assert_eq!(h.registered(), vec!["10.0.1.9:8080"]);
    assert!(h.events().contains(&"TargetGroupNotGranted".to_string()));

    // Granted to this namespace by name: the binding registers its pods, and leaves the owner's.
    let mut c = cluster(binding(true), &[(1, "a", true, false)]);
    c.tenancy = strict(r#"{"targetGroups": [{"namespaces": ["shop"], "names": ["web"]}]}"#);
    let h = harness(c).await;
    h.elb.set_tags(ARN, &[("team", "platform")]);
    h.elb.register_targets(ARN, &[t(9)], None).await.unwrap();
    h.reconcile(&binding(true)).await.unwrap();
    assert_eq!(h.registered(), vec!["10.0.1.1:8080", "10.0.1.9:8080"]);
}

/// A gate turning True lets the rollout delete an old pod, whose deregistration needs AWS keys:
/// while the keys cannot be refreshed and expire within the margin, the gate waits.
#[tokio::test(start_paused = true)]
async fn gates_wait_while_the_keys_cannot_be_refreshed_and_are_about_to_expire() {
    use lbc_aws::credentials::{CredentialMetrics, FileConfig, Health, file};
    let dir = std::env::temp_dir().join(format!("lbc-gate-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("credentials");
    let write = |secs: i64| {
        let expires = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(secs);
        let text =
            format!("[default]\naws_access_key_id = AKID{secs}\naws_secret_access_key = s\nexpiration = {expires}\n");
        std::fs::write(&path, text).unwrap();
    };
    let until = |status: lbc_aws::credentials::CredentialStatus, want: Health| async move {
        for _ in 0..500 {
            if status.state().health == want {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("credentials never {want:?}: {:?}", status.state());
    };
    write(20);
    let mut cfg = FileConfig::new(&path);
    cfg.poll_interval = Duration::from_millis(20);
    let source = file::start(cfg, CredentialMetrics::default());
    source.wait_ready(Duration::from_secs(5)).await.expect("keys read");
    // The source can no longer refresh: the keys in hand last 20 s more.
    std::fs::write(&path, "not a credentials file").unwrap();
    until(source.status(), Health::Degraded).await;

    let mut c = cluster(binding(true), &[(1, "a", false, false)]);
    c.pods = vec![gated_pod("a", 1, None)];
    c.credentials = Some(source.status());
    let h = harness(c).await;
    h.elb.set_initial_state(HealthState::Initial);
    h.reconcile(&binding(true)).await.unwrap();
    h.elb.set_health(ARN, t(1), HealthState::Healthy);
    h.kube();
    tokio::time::advance(Duration::from_secs(5)).await;
    h.reconcile(&binding(true)).await.unwrap();
    let pod_patch = format!("PATCH /api/v1/namespaces/{NS}/pods/a/status");
    assert!(!h.kube_lines().contains(&pod_patch), "the gate turned True with keys about to run out");

    // The source recovers: the gate turns True at the next poll.
    write(3600);
    until(source.status(), Health::Healthy).await;
    tokio::time::advance(Duration::from_secs(5)).await;
    h.reconcile(&binding(true)).await.unwrap();
    let kube = h.kube();
    let patch = kube.iter().find(|r| r.line() == pod_patch).expect("the pod's gate patched");
    assert_eq!(patch.body["status"]["conditions"][0]["status"], json!("True"));
    let _ = std::fs::remove_dir_all(dir);
}

/// After a relist the EndpointSlices cache can hold endpoints of pods the pods cache does not
/// hold yet. Such endpoints are left out (only known pods are registered), and the binding waits
/// for those pods: their arrival in the pods cache wakes it (`Triggers::pod_seen`).
#[tokio::test(start_paused = true)]
async fn endpoints_of_pods_not_seen_yet_wait_for_the_pods() {
    let mut c = cluster(binding(true), &[(1, "a", true, false), (2, "b", true, false)]);
    let mut svc = service();
    svc.spec.as_mut().unwrap().selector = Some([("app".to_string(), "web".to_string())].into());
    c.service = Some(svc);
    c.pods = vec![gated_pod("a", 1, Some("True"))];
    let h = harness(c).await;
    h.reconcile(&binding(true)).await.unwrap();
    assert_eq!(h.registered(), vec!["10.0.1.1:8080"], "only the known pod's endpoint");
    let waiting = h.ctx.triggers.pod_seen(NS, "b");
    assert_eq!(waiting, vec![ObjectRef::from_obj(&binding(true))], "pod b's arrival wakes the binding");
    assert!(h.ctx.triggers.pod_seen(NS, "b").is_empty(), "once");
    assert!(h.ctx.triggers.pod_seen(NS, "a").is_empty(), "a known pod is not waited for");
}

/// An endpoint naming a known pod at an address the pod does not hold (a hand-written slice
/// putting another team's pod or a database behind the load balancer, or a pods cache still
/// without the pod's new IP) is not registered; the pod's next event wakes the binding.
#[tokio::test(start_paused = true)]
async fn an_endpoint_at_an_address_its_pod_does_not_hold_is_left_out() {
    let mut c = cluster(binding(true), &[(1, "a", true, false), (2, "b", true, false)]);
    let mut svc = service();
    svc.spec.as_mut().unwrap().selector = Some([("app".to_string(), "web".to_string())].into());
    c.service = Some(svc);
    c.pods = vec![gated_pod("a", 1, Some("True")), gated_pod("b", 9, Some("True"))];
    let h = harness(c).await;
    h.reconcile(&binding(true)).await.unwrap();
    assert_eq!(h.registered(), vec!["10.0.1.1:8080"], "10.0.1.2 is not pod b's address (10.0.1.9)");
    assert_eq!(h.ctx.triggers.pod_seen(NS, "b"), vec![ObjectRef::from_obj(&binding(true))], "b's next event wakes it");
}

// ---------------------------------------------------------------------------------------------
// QUIC

fn quic_pod(name: &str, ip: u8, server_id: Option<&str>) -> Value {
    let env: Vec<Value> =
        server_id.map(|v| json!({"name": "AWS_LBC_QUIC_SERVER_ID", "value": v})).into_iter().collect();
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"),
                     "annotations": {lbc_model::wire::QUIC_ENABLED_CONTAINERS: "app"}},
        "spec": {"containers": [{"name": "app", "env": env, "ports": [{"containerPort": 8080, "protocol": "UDP"}]}]},
        "status": {"podIP": format!("10.0.1.{ip}")},
    })
}

#[tokio::test(start_paused = true)]
async fn a_quic_group_gets_each_target_with_its_pods_server_id_and_the_ones_without_are_named() {
    for spec_protocol in [Some("QUIC"), None] {
        let mut tgb = binding(true);
        tgb.spec.target_group_protocol = spec_protocol.map(|p| serde_json::from_value(json!(p)).unwrap());
        let mut c = cluster(tgb.clone(), &[(1, "a", true, false), (2, "b", true, false)]);
        c.pods = vec![quic_pod("a", 1, Some("ASNFZ4mrze8=")), quic_pod("b", 2, None)];
        let h = harness(c).await;
        h.elb.add_target_group(TargetGroupInfo {
            arn: ARN.into(),
            name: "web".into(),
            target_type: "ip".into(),
            protocol: Some("QUIC".into()),
            vpc_id: Some("vpc-1".into()),
            ..Default::default()
        });
        let first = h.reconcile(&tgb).await.unwrap();
        if spec_protocol.is_none() {
            // The group's protocol is learnt from AWS on this pass: planned again at once with it.
            assert_eq!(first, Action::requeue(lbc_model::binding::MIN_RESYNC));
            assert!(h.registered().is_empty(), "nothing registered without the server IDs");
            h.reconcile(&tgb).await.unwrap();
        }
        assert_eq!(h.registered(), ["10.0.1.1:8080 (QUIC server ID 0x0123456789abcdef)"], "{spec_protocol:?}");
        assert!(h.events().contains(&"QUICServerIDMissing".to_string()));
        let text = h.ctx.metrics.encode();
        let line = format!("awslbc_quic_target_missing_server_id{{namespace=\"{NS}\",name=\"web\"}} 1");
        assert!(text.contains(&line), "{text}");
    }
}
