//! The Service reconciler driven through its entry point ([`super::reconcile`], as kube's
//! Controller calls it, and [`super::error_policy`]) against a mocked API server behind the
//! production leader gate and the in-memory AWS fakes (`crate::stack::test_world`): no
//! environment, paused time. Each test asserts the AWS writes and the Kubernetes requests.

use super::*;
use crate::stack::test_world::{CLUSTER, Seen, VPC, World, deleting, requeue_secs};
use http::Method;
use lbc_aws::error::ErrorKind;
use lbc_aws::lb::LoadBalancers;
use lbc_aws::net::{Networking, SecurityGroupQuery};
use lbc_model::service::keys as k;
use serde_json::json;

/// The full key of a Service annotation suffix.
fn full_key(suffix: &str) -> String {
    format!("{}/{suffix}", k::PREFIX)
}

const NS: &str = "shop";
const SVC_PATH: &str = "/api/v1/namespaces/shop/services/web";

fn service(port: i32, extra: &[(&str, &str)]) -> Service {
    let mut ann = serde_json::Map::new();
    for (key, v) in [(k::LOAD_BALANCER_TYPE, "external"), (k::TARGET_TYPE, "ip")].iter().chain(extra) {
        ann.insert(full_key(key), json!(v));
    }
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": NS, "uid": "svc-uid", "resourceVersion": "7", "annotations": ann},
        "spec": {"type": "LoadBalancer", "ports": [{"name": "http", "port": port, "targetPort": 8080, "protocol": "TCP"}]},
    }))
    .unwrap()
}

/// `svc` as the watch shows it after the first pass: our finalizer and the hostname written.
fn settled(svc: Service, hostname: &str) -> Service {
    crate::stack::test_world::settled(svc, SERVICE_FINALIZER, hostname)
}

struct T {
    w: World,
    ctx: Arc<ServiceCtx>,
}

fn config() -> ServiceConfig {
    ServiceConfig {
        cluster_name: CLUSTER.into(),
        vpc_id: VPC.into(),
        select: Default::default(),
        default_tags: Tags::from([("team".into(), "web".into())]),
        external_managed_tags: BTreeSet::new(),
        sync_period: Duration::from_secs(600),
        max_backoff: Duration::from_secs(60),
        backend_sg: BackendSgMode::Auto,
        default_scheme: lbc_model::lb::Scheme::Internal,
        gates: Default::default(),
    }
}

fn world() -> T {
    world_with(config())
}

fn world_with(cfg: ServiceConfig) -> T {
    let w = World::new();
    let backend_sg =
        Arc::new(BackendSecurityGroup::new(cfg.backend_sg.clone(), w.net.clone(), CLUSTER, VPC, Tags::new()));
    let ctx = Arc::new(ServiceCtx::new(w.base.clone(), &w.adapters(), cfg, backend_sg));
    T { w, ctx }
}

impl T {
    async fn reconcile(&self, svc: &Service) -> Result<Action> {
        self.w.put(|c| &mut c.services, svc.clone());
        reconcile(Arc::new(svc.clone()), self.ctx.clone()).await
    }

    /// A first pass over a new Service, its bindings then cached; the hostname it got.
    async fn created(&self, svc: &Service) -> String {
        self.reconcile(svc).await.unwrap();
        self.w.settle_first_pass()
    }

    async fn load_balancers(&self) -> Vec<lbc_aws::lb::FoundLoadBalancer> {
        let any = Tags::from([("elbv2.k8s.aws/cluster".to_string(), CLUSTER.to_string())]);
        let found = self.w.lbs.find_load_balancers(&any).await.unwrap();
        self.w.aws();
        found
    }
}

fn lines(seen: &[Seen]) -> Vec<String> {
    seen.iter().map(Seen::line).collect()
}

fn tgb_path(name: &str) -> String {
    format!("/apis/elbv2.k8s.aws/v1beta1/namespaces/{NS}/targetgroupbindings/{name}")
}

fn requeues_within(a: &Action, lo: f64, hi: f64) -> bool {
    requeue_secs(a).is_some_and(|s| s >= lo && s <= hi)
}

// ---------------------------------------------------------------------------------------------
// Main paths

#[tokio::test(start_paused = true)]
async fn a_new_service_gets_the_finalizer_first_then_its_nlb_bindings_and_hostname() {
    let t = world();
    let action = t.reconcile(&service(80, &[])).await.unwrap();
    assert!(requeues_within(&action, 600.0, 900.0), "drift check at the sync period: {action:?}");

    let kube = t.w.kube();
    let tgbs: Vec<&Seen> = kube.iter().filter(|r| r.path.contains("/targetgroupbindings/")).collect();
    let [tgb] = tgbs.as_slice() else { panic!("one binding applied: {:?}", lines(&kube)) };
    assert_eq!(lines(&kube), vec![format!("PATCH {SVC_PATH}"), tgb.line(), format!("PATCH {SVC_PATH}/status")]);
    assert_eq!(kube[0].aws_writes_before, 0, "the finalizer is in place before any AWS write");
    assert_eq!(kube[0].body["metadata"]["finalizers"], json!([SERVICE_FINALIZER]));
    assert_eq!(kube[0].body["metadata"]["resourceVersion"], json!("7"), "guarded by the version decided on");

    let (lb, net) = t.w.aws_writes();
    assert_eq!(
        lb,
        vec!["CreateTargetGroup", "ModifyTargetGroupAttributes", "CreateLoadBalancer", "CreateListener"],
        "target group, then the NLB, then its listener"
    );
    assert_eq!(
        net,
        vec!["CreateSecurityGroup", "CreateSecurityGroup", "AuthorizeSecurityGroupIngress"],
        "the shared backend group, the frontend group and its rule"
    );

    let [found] = t.load_balancers().await.try_into().expect("one load balancer");
    let tags = &found.lb.spec.tags;
    assert_eq!(tags.get("elbv2.k8s.aws/cluster").map(String::as_str), Some(CLUSTER));
    assert_eq!(tags.get("service.k8s.aws/stack").map(String::as_str), Some("shop/web"));
    assert_eq!(tags.get("team").map(String::as_str), Some("web"), "--default-tags");
    let hostname = &kube[2].body["status"]["loadBalancer"]["ingress"][0]["hostname"];
    assert_eq!(hostname, &json!(found.status.dns_name));

    let spec = &tgb.body["spec"];
    assert!(spec["targetGroupARN"].as_str().unwrap().contains(":targetgroup/k8s-shop-web-"), "{spec}");
    assert_eq!(spec["targetType"], json!("ip"));
    assert_eq!(tgb.body["metadata"]["ownerReferences"][0]["uid"], json!("svc-uid"), "owned by the Service");
    // The binding's first sync will read neither the group nor its owner tags back.
    let arn = spec["targetGroupARN"].as_str().unwrap();
    let known = t.w.base.target_groups.lock().unwrap().get(arn).cloned().expect("the created group is known");
    assert_eq!((known.target_type.as_str(), known.port), ("ip", Some(8080)));
    let cell = t.w.base.target_group_tags.lock().unwrap().get(arn).cloned().expect("its tags are known");
    assert_eq!(cell.get().and_then(|t| t.get("service.k8s.aws/stack")).map(String::as_str), Some("shop/web"));
    let (kind, reason, _) = t.w.the_event();
    assert_eq!((kind.as_str(), reason.as_str()), ("Normal", "SuccessfullyReconciled"));
}

#[tokio::test(start_paused = true)]
async fn a_settled_service_costs_no_write() {
    let t = world();
    let hostname = t.created(&service(80, &[])).await;
    t.reconcile(&settled(service(80, &[]), &hostname)).await.unwrap();
    assert_eq!(t.w.aws_writes(), (vec![], vec![]));
    assert!(t.w.kube().is_empty(), "finalizer, bindings and status already say so");
    assert!(t.w.events().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_port_change_changes_the_listener_not_the_load_balancer() {
    let t = world();
    let hostname = t.created(&service(80, &[])).await;
    let before = t.load_balancers().await;
    let old_binding = t.w.base.stores.tgbs.state()[0].clone();
    let changed = settled(service(81, &[]), &hostname);
    t.reconcile(&changed).await.unwrap();
    let (lb, net) = t.w.aws_writes();
    assert_eq!(
        lb,
        vec!["CreateTargetGroup", "ModifyTargetGroupAttributes", "DeleteListener", "CreateListener"],
        "the target group (named by port, as ALBC does) and the listener are replaced; the NLB stays"
    );
    assert_eq!(net, vec!["AuthorizeSecurityGroupIngress", "RevokeSecurityGroupIngress"], "the frontend rule follows");
    t.w.cache_applied_bindings();
    let kube = t.w.kube_lines();
    assert_eq!(kube.len(), 2, "{kube:?}");
    assert!(kube[0].starts_with("PATCH ") && kube[1].starts_with("DELETE "), "new binding applied, old one deleted");
    assert!(kube.iter().all(|l| l.contains("/targetgroupbindings/")), "the hostname did not change: {kube:?}");
    let (_, reason, note) = t.w.the_event();
    assert_eq!(reason, "SuccessfullyReconciled");
    assert!(note.contains("kept until TargetGroupBinding shop/"), "the old group waits for its binding: {note}");
    assert_eq!(t.w.lbs.target_group_count(), 2, "the old group keeps its targets while its binding deregisters them");

    // The old binding's finalizer has deregistered its targets and it is gone: its group goes.
    t.w.remove(|c| &mut c.tgbs, old_binding.as_ref().clone());
    t.reconcile(&changed).await.unwrap();
    assert_eq!(t.w.aws_writes(), (vec!["DeleteTargetGroup".to_string()], vec![]));
    assert!(t.w.kube().is_empty(), "nothing else to write");
    assert_eq!(t.w.lbs.target_group_count(), 1);
    let after = t.load_balancers().await;
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].lb.id, before[0].lb.id, "same load balancer");
    assert_eq!(after[0].status.dns_name, hostname, "same DNS name");
    assert_eq!(t.w.event_reasons(), vec!["SuccessfullyReconciled"]);
}

#[tokio::test(start_paused = true)]
async fn deletion_removes_bindings_then_the_stack_then_the_finalizer() {
    let t = world();
    let hostname = t.created(&service(80, &[])).await;
    let gone = deleting(settled(service(80, &[]), &hostname));
    let bindings: Vec<_> = t.w.base.stores.tgbs.state();
    assert_eq!(bindings.len(), 1);

    // First pass: the bindings are deleted; their finalizers deregister the targets.
    let action = t.reconcile(&gone).await.unwrap();
    assert_eq!(action, Action::requeue(Duration::from_secs(2)));
    let binding = tgb_path(&bindings[0].metadata.name.clone().unwrap());
    assert_eq!(t.w.kube_lines(), vec![format!("DELETE {binding}")]);
    assert_eq!(t.w.aws_writes(), (vec![], vec![]), "nothing deleted in AWS while bindings remain");

    // The binding is gone from the cache: the stack goes, then the finalizer.
    t.w.remove(|c| &mut c.tgbs, bindings[0].as_ref().clone());
    let action = t.reconcile(&gone).await.unwrap();
    assert_eq!(action, Action::await_change());
    // No Service holds our finalizer any more: the shared backend group goes too, in the background.
    tokio::time::sleep(Duration::from_millis(10)).await;
    let (lb, net) = t.w.aws();
    let reads: Vec<&String> = lb.iter().filter(|op| op.starts_with("Describe")).collect();
    assert_eq!(
        reads,
        vec!["DescribeLoadBalancers", "DescribeLoadBalancerAttributes", "DescribeTargetGroups"],
        "a deletion reads what it deletes and the deletion protection, nothing else (listeners go with the NLB)"
    );
    let writes = |ops: Vec<String>| ops.into_iter().filter(|op| !op.starts_with("Describe")).collect::<Vec<_>>();
    let (lb, net) = (writes(lb), writes(net));
    assert_eq!(lb, vec!["DeleteLoadBalancer", "DeleteTargetGroup"], "its listeners go with the load balancer");
    assert_eq!(net, vec!["DeleteSecurityGroup", "DeleteSecurityGroup"], "the frontend group and the backend one");
    let all = SecurityGroupQuery::Tags { vpc_id: None, tags: Tags::new() };
    assert!(t.w.net.security_groups(&all).await.unwrap().is_empty(), "no security group left");
    assert_eq!(t.w.lbs.load_balancer_count() + t.w.lbs.target_group_count(), 0);
    let kube = t.w.kube();
    assert_eq!(lines(&kube), vec![format!("PATCH {SVC_PATH}")], "no status write on a Service being deleted");
    assert_eq!(kube[0].body["metadata"]["finalizers"], json!([]));
    assert_eq!(
        kube[0].aws_writes_before,
        7 + 3,
        "the finalizer goes after the 3 deletions (7 writes created the stack)"
    );
    assert_eq!(t.w.event_reasons(), vec!["SuccessfullyDeleted"]);
}

#[tokio::test(start_paused = true)]
async fn a_listener_deleted_out_of_band_is_recreated_alone() {
    let t = world();
    let hostname = t.created(&service(80, &[])).await;
    let arn = t.load_balancers().await[0].lb.id.clone();
    let listener = t.w.lbs.listeners(&arn).await.unwrap().remove(0).id;
    t.w.lbs.delete_listener(&listener).await.unwrap();
    t.w.aws();
    let action = t.reconcile(&settled(service(80, &[]), &hostname)).await.unwrap();
    assert!(requeues_within(&action, 600.0, 900.0), "{action:?}");
    assert_eq!(t.w.aws_writes(), (vec!["CreateListener".to_string()], vec![]), "only the missing listener");
    assert!(t.w.kube().is_empty());
    let (kind, reason, note) = t.w.the_event();
    assert_eq!((kind.as_str(), reason.as_str()), ("Normal", "SuccessfullyReconciled"));
    assert!(note.contains("80"), "says what was done: {note}");
}

#[tokio::test(start_paused = true)]
async fn a_service_no_longer_of_type_load_balancer_is_torn_down_and_its_status_cleared() {
    // ALBC's gate ServiceTypeLoadBalancerOnly on; off (its default) the Service stays ours (below).
    let mut cfg = config();
    cfg.select.load_balancer_type_only = true;
    let t = world_with(cfg);
    let hostname = t.created(&service(80, &[])).await;
    for b in t.w.base.stores.tgbs.state() {
        t.w.remove(|c| &mut c.tgbs, b.as_ref().clone());
    }
    let mut cluster_ip = settled(service(80, &[]), &hostname);
    cluster_ip.spec.as_mut().unwrap().type_ = Some("ClusterIP".into());
    let action = t.reconcile(&cluster_ip).await.unwrap();
    assert_eq!(action, Action::await_change());
    let (lb, _) = t.w.aws_writes();
    assert_eq!(lb, vec!["DeleteLoadBalancer", "DeleteTargetGroup"], "its listeners go with the load balancer");
    let kube = t.w.kube();
    assert_eq!(lines(&kube), vec![format!("PATCH {SVC_PATH}/status"), format!("PATCH {SVC_PATH}")]);
    assert_eq!(kube[0].body["status"]["loadBalancer"]["ingress"], json!([]), "the hostname is cleared");
    assert_eq!(kube[1].body["metadata"]["finalizers"], json!([]), "then the finalizer goes");
}

/// ALBC's default (gate ServiceTypeLoadBalancerOnly off): a ClusterIP Service with the annotations
/// keeps its NLB; its status is not written (the API server refuses `status.loadBalancer` on a
/// Service that is not of type LoadBalancer).
#[tokio::test(start_paused = true)]
async fn a_cluster_ip_service_with_the_annotations_keeps_its_nlb_and_gets_no_status() {
    let t = world();
    let hostname = t.created(&service(80, &[])).await;
    let mut cluster_ip = settled(service(80, &[]), &hostname);
    cluster_ip.spec.as_mut().unwrap().type_ = Some("ClusterIP".into());
    cluster_ip.status = None;
    t.reconcile(&cluster_ip).await.unwrap();
    assert_eq!(t.w.aws_writes(), (vec![], vec![]), "the NLB and its target group stay as they are");
    assert!(lines(&t.w.kube()).iter().all(|l| !l.ends_with("/status")), "{:?}", lines(&t.w.kube()));
}

#[tokio::test(start_paused = true)]
async fn a_class_this_controller_no_longer_runs_with_freezes_the_service_nothing_deleted() {
    let t = world();
    let hostname = t.created(&service(80, &[])).await;
    let mut other = settled(service(80, &[]), &hostname);
    other.spec.as_mut().unwrap().load_balancer_class = Some("example.com/other".into());
    let action = t.reconcile(&other).await.unwrap();
    assert_eq!(action, Action::await_change(), "fixed by a restart with the right flag, which looks at every Service");
    assert_eq!(t.w.aws_writes(), (vec![], vec![]), "frozen, not deleted");
    assert!(t.w.kube().is_empty(), "the finalizer stays");
    let (kind, reason, note) = t.w.the_event();
    assert_eq!((kind.as_str(), reason.as_str()), ("Warning", "Frozen"));
    assert!(note.contains("example.com/other") && note.contains("--load-balancer-class"), "{note}");
}

// ---------------------------------------------------------------------------------------------
// Failure paths

#[tokio::test(start_paused = true)]
async fn a_load_balancer_of_another_stack_is_refused_and_nothing_deleted() {
    let t = world();
    let hostname = t.created(&service(80, &[])).await;
    // Someone retags the NLB for another stack (or another cluster's controller owns the name).
    let arn = t.load_balancers().await[0].lb.id.clone();
    let other = Tags::from([("service.k8s.aws/stack".to_string(), "other/web".to_string())]);
    t.w.lbs.add_tags(&arn, &other).await.unwrap();
    t.w.aws();

    let action = t.reconcile(&settled(service(80, &[]), &hostname)).await.unwrap();
    assert!(requeues_within(&action, 600.0, 900.0), "looked at again at the sync period: {action:?}");
    assert_eq!(t.w.aws_writes(), (vec![], vec![]), "refused: nothing created, changed or deleted");
    assert_eq!(t.w.lbs.load_balancer_count(), 1);
    assert!(t.w.kube().is_empty());
    let (kind, reason, note) = &t.w.the_event();
    assert_eq!((kind.as_str(), reason.as_str()), ("Warning", FAILED_DEPLOY_REASON));
    assert!(note.contains("nothing changed in AWS") && note.contains("k8s-shop-web-"), "names the look-alike: {note}");

    // The same problem on the next pass is not announced again.
    t.reconcile(&settled(service(80, &[]), &hostname)).await.unwrap();
    assert!(t.w.events().is_empty());
}

#[tokio::test(start_paused = true)]
async fn another_clusters_load_balancer_of_the_same_name_is_refused_not_adopted() {
    // What this Service's NLB looks like (learnt from a first world)...
    let first = world();
    first.created(&service(80, &[])).await;
    let mut theirs = first.load_balancers().await.remove(0).lb.spec;
    // ...already exists, created by the controller of cluster "staging".
    theirs.tags.insert("elbv2.k8s.aws/cluster".into(), "staging".into());
    let t = world();
    t.w.lbs.create_load_balancer(&theirs).await.unwrap();
    t.w.aws();

    let action = t.reconcile(&service(80, &[])).await.unwrap();
    assert!(requeues_within(&action, 600.0, 900.0), "{action:?}");
    let (lb, _) = t.w.aws_writes();
    assert!(lb.is_empty(), "nothing created, changed or deleted next to it: {lb:?}");
    assert_eq!(t.w.lbs.load_balancer_count(), 1);
    let kube = t.w.kube_lines();
    assert_eq!(kube, vec![format!("PATCH {SVC_PATH}")], "only the finalizer; no binding, no hostname");
    let (_, reason, note) = t.w.the_event();
    assert_eq!(reason, FAILED_DEPLOY_REASON);
    assert!(note.contains(&theirs.name) && note.contains("staging"), "names the load balancer and its owner: {note}");
}

const FAILED_DEPLOY_REASON: &str = crate::stack::FAILED_DEPLOY;

#[tokio::test(start_paused = true)]
async fn aws_throttling_is_retried_with_backoff_and_the_retry_continues_from_what_exists() {
    let t = world();
    let svc = Arc::new(service(80, &[]));
    t.w.lbs.inject_fault("CreateLoadBalancer", ErrorKind::Throttled);
    t.w.lbs.inject_fault("CreateLoadBalancer", ErrorKind::Throttled);

    let err = t.reconcile(&svc).await.unwrap_err();
    assert_eq!(err.category(), "throttled", "{err}");
    let action = error_policy(svc.clone(), &err, t.ctx.clone());
    assert!(requeues_within(&action, 1.0, 2.0), "first step: 1 s plus jitter: {action:?}");
    let (lb, _) = t.w.aws_writes();
    assert_eq!(lb, vec!["CreateTargetGroup", "ModifyTargetGroupAttributes", "CreateLoadBalancer"]);
    let (_, reason, note) = t.w.the_event();
    assert_eq!(reason, FAILED_DEPLOY_REASON);
    assert!(note.contains("re-reads AWS"), "{note}");

    let err = t.reconcile(&svc).await.unwrap_err();
    let action = error_policy(svc.clone(), &err, t.ctx.clone());
    assert!(requeues_within(&action, 2.0, 4.0), "second step doubles: {action:?}");
    assert_eq!(t.w.aws_writes().0, vec!["CreateLoadBalancer"], "the target group is not created twice");

    t.reconcile(&svc).await.unwrap();
    assert_eq!(t.w.aws_writes().0, vec!["CreateLoadBalancer", "CreateListener"]);
    // A success resets the backoff: the next failure starts at 1 s again.
    t.w.lbs.inject_fault("DescribeLoadBalancers", ErrorKind::Throttled);
    let err = t.reconcile(&svc).await.unwrap_err();
    assert!(requeues_within(&error_policy(svc, &err, t.ctx.clone()), 1.0, 2.0));
}

#[tokio::test(start_paused = true)]
async fn a_replica_that_does_not_lead_writes_nothing() {
    let t = world();
    t.w.leader.send(false).unwrap();
    let action = t.reconcile(&service(80, &[])).await.unwrap();
    assert_eq!(action, Action::await_change());
    assert_eq!(t.w.aws(), (vec![], vec![]), "not even a read");
    assert!(t.w.kube().is_empty() && t.w.events().is_empty());

    // Lost mid-pass: the fence's refusal is no failure, no backoff step, no Warning.
    let err = Error::NotLeader("lost the lease".into());
    assert_eq!(error_policy(Arc::new(service(80, &[])), &err, t.ctx.clone()), Action::await_change());
    tokio::task::yield_now().await;
    assert!(t.w.events().is_empty());
}

#[tokio::test(start_paused = true)]
async fn leadership_lost_mid_pass_stops_before_the_next_load_balancer_write() {
    let t = world();
    // The lease is lost while the finalizer patch is in flight.
    let leader = t.w.leader.clone();
    t.w.server.lock().unwrap().on_request = Some(Box::new(move |r: &Seen| {
        if r.method == Method::PATCH && r.path == SVC_PATH {
            leader.send_replace(false);
        }
    }));
    let svc = Arc::new(service(80, &[]));
    let err = t.reconcile(&svc).await.unwrap_err();
    assert!(err.is_not_leader(), "{err}");
    assert_eq!(error_policy(svc, &err, t.ctx.clone()), Action::await_change(), "no backoff step");
    tokio::task::yield_now().await;
    assert_eq!(t.w.kube_lines(), vec![format!("PATCH {SVC_PATH}")], "nothing after the finalizer");
    let (lb, _) = t.w.aws_writes();
    assert!(lb.is_empty(), "no load balancer write after the lease was lost: {lb:?}");
    assert!(t.w.events().is_empty(), "the fence refuses the Warning too: not the user's problem");
}

#[tokio::test(start_paused = true)]
async fn an_invalid_annotation_is_a_warning_naming_it_and_no_aws_write() {
    let t = world();
    let svc = service(80, &[(k::SCHEME, "public")]);
    let action = t.reconcile(&svc).await.unwrap();
    assert_eq!(action, Action::await_change(), "fixed by an edit of the Service");
    assert_eq!(t.w.aws(), (vec![], vec![]));
    assert!(t.w.kube().is_empty(), "not even the finalizer");
    let (kind, reason, note) = &t.w.the_event();
    assert_eq!((kind.as_str(), reason.as_str()), ("Warning", crate::stack::FAILED_BUILD));
    let key = full_key(k::SCHEME);
    assert!(note.contains(&key) && note.contains("public"), "names the annotation and the value: {note}");
    assert!(note.contains("internet-facing") && note.contains("internal"), "says what is expected: {note}");
    // Reported once, not every pass.
    t.reconcile(&svc).await.unwrap();
    assert!(t.w.events().is_empty());
}

#[tokio::test(start_paused = true)]
async fn strict_tenancy_refuses_a_forward_to_an_ungranted_target_group_before_any_write() {
    let victim = "arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/payments/0123456789abcdef";
    let forward = format!(
        r#"{{"type": "forward", "forwardConfig": {{"targetGroups": [{{"targetGroupARN": "{victim}", "weight": 10}}]}}}}"#
    );
    let svc = service(80, &[("aws-load-balancer-nlb-target-type", "ip"), ("actions.TCP-80", &forward)]);
    let mut w = World::new();
    let strict = lbc_model::tenancy::Tenancy::parse(lbc_model::tenancy::TenancyMode::Strict, "{}", "test").unwrap();
    Arc::get_mut(&mut w.base).expect("a new context").cfg.tenancy = Arc::new(strict);
    let cfg = config();
    let backend_sg =
        Arc::new(BackendSecurityGroup::new(cfg.backend_sg.clone(), w.net.clone(), CLUSTER, VPC, Tags::new()));
    let t = T { ctx: Arc::new(ServiceCtx::new(w.base.clone(), &w.adapters(), cfg, backend_sg)), w };
    assert_eq!(t.reconcile(&svc).await.unwrap(), Action::await_change());
    assert_eq!(t.w.aws(), (vec![], vec![]), "no AWS call at all");
    let (kind, reason, note) = &t.w.the_event();
    assert_eq!((kind.as_str(), reason.as_str()), ("Warning", crate::stack::FAILED_BUILD));
    assert!(note.contains(victim) && note.contains(&full_key("actions.TCP-80")), "{note}");
    // Compatible mode (the upstream's trust): the same Service is deployed (the fake has no such
    // group and refuses the listener, which is not the tenancy's business).
    let t = world();
    let _ = t.reconcile(&svc).await;
    assert!(t.w.aws_writes().0.contains(&"CreateLoadBalancer".to_string()));
}

/// `service(port, extra)` in instance mode, with the NodePort (and health-check node port) the
/// API server would have allocated.
fn instance_service(extra: &[(&str, &str)], local: bool) -> Service {
    let mut svc = service(80, extra);
    svc.metadata.annotations.as_mut().unwrap().insert(full_key(k::TARGET_TYPE), "instance".into());
    let spec = svc.spec.as_mut().unwrap();
    spec.ports.as_mut().unwrap()[0].node_port = Some(30080);
    if local {
        spec.external_traffic_policy = Some("Local".into());
        spec.health_check_node_port = Some(31999);
    }
    svc
}

#[tokio::test(start_paused = true)]
async fn an_instance_mode_service_gets_a_node_port_target_group_and_an_instance_binding() {
    let t = world();
    let svc = instance_service(&[(k::TARGET_NODE_LABELS, "role=edge")], true);
    t.reconcile(&svc).await.unwrap();
    let (lb, _) = t.w.aws_writes();
    assert_eq!(lb, vec!["CreateTargetGroup", "ModifyTargetGroupAttributes", "CreateLoadBalancer", "CreateListener"]);
    let any = Tags::from([("elbv2.k8s.aws/cluster".to_string(), CLUSTER.to_string())]);
    let [tg] = t.w.lbs.find_target_groups(&any).await.unwrap().try_into().expect("one target group");
    let (spec, hc) = (&tg.spec, &tg.spec.health_check);
    assert_eq!((spec.target_type.as_str(), spec.port), ("instance", 30080), "instance targets on the NodePort");
    assert_eq!(
        (hc.protocol, hc.port, hc.path.as_deref()),
        (lbc_model::lb::Protocol::Http, lbc_model::lb::HealthCheckPort::Port(31999), Some("/healthz")),
        "externalTrafficPolicy: Local → kube-proxy's health-check node port"
    );
    let b = &t.w.the_binding_spec();
    assert_eq!(b["targetType"], json!("instance"));
    assert_eq!(b["nodeSelector"], json!({"matchLabels": {"role": "edge"}}));
    assert_eq!(b["serviceRef"], json!({"name": "web", "port": 80}), "the binding resolves the NodePort itself");
    let ports: Vec<&serde_json::Value> =
        b["networking"]["ingress"].as_array().unwrap().iter().flat_map(|r| r["ports"].as_array().unwrap()).collect();
    assert_eq!(ports, [&json!({"protocol": "TCP", "port": 30080}), &json!({"protocol": "TCP", "port": 31999})]);
    assert!(t.w.events().iter().all(|e| e.0 != "Warning"), "{:?}", t.w.events());
}

#[tokio::test(start_paused = true)]
async fn an_instance_mode_service_without_node_ports_is_a_warning_and_no_aws_write() {
    let t = world();
    let mut svc = instance_service(&[], false);
    let spec = svc.spec.as_mut().unwrap();
    spec.ports.as_mut().unwrap()[0].node_port = None;
    spec.allocate_load_balancer_node_ports = Some(false);
    t.reconcile(&svc).await.unwrap();
    assert_eq!(t.w.aws_writes(), (vec![], vec![]));
    let (kind, reason, note) = t.w.the_event();
    assert_eq!((kind.as_str(), reason.as_str()), ("Warning", crate::stack::FAILED_BUILD));
    assert!(note.contains("no nodePort because spec.allocateLoadBalancerNodePorts is false"), "{note}");
}

#[tokio::test(start_paused = true)]
async fn an_invalid_target_type_is_refused_with_the_fix() {
    let t = world();
    let mut svc = service(80, &[(k::TARGET_TYPE, "Instance")]);
    svc.spec.as_mut().unwrap().load_balancer_class = Some(lbc_model::service::DEFAULT_LOAD_BALANCER_CLASS.into());
    t.reconcile(&svc).await.unwrap();
    assert_eq!(t.w.aws(), (vec![], vec![]));
    assert!(t.w.kube().is_empty());
    let (_, reason, note) = t.w.the_event();
    assert_eq!(reason, "InvalidTargetType");
    assert!(note.contains("\"ip\"") && note.contains("\"instance\""), "{note}");
}

#[tokio::test(start_paused = true)]
async fn a_deletion_protected_load_balancer_keeps_the_finalizer() {
    let t = world();
    let protect = [(k::ATTRIBUTES, "deletion_protection.enabled=true")];
    let hostname = t.created(&service(80, &protect)).await;
    let bindings = t.w.base.stores.tgbs.state();
    t.w.remove(|c| &mut c.tgbs, bindings[0].as_ref().clone());
    let gone = deleting(settled(service(80, &protect), &hostname));
    let action = t.reconcile(&gone).await.unwrap();
    assert!(requeues_within(&action, 600.0, 900.0), "{action:?}");
    assert_eq!(t.w.aws_writes(), (vec![], vec![]), "nothing deleted");
    assert!(t.w.kube().is_empty(), "the finalizer stays");
    let (_, reason, note) = t.w.the_event();
    assert_eq!(reason, "DeletionProtected");
    assert!(note.contains("deletion_protection.enabled=true"), "{note}");
}

#[tokio::test(start_paused = true)]
async fn a_status_write_the_api_server_refuses_fails_the_pass_and_the_retry_writes_it() {
    let t = world();
    t.w.server.lock().unwrap().fail.push((Method::PATCH, format!("{SVC_PATH}/status"), 500));
    let svc = Arc::new(service(80, &[]));
    let err = t.reconcile(&svc).await.unwrap_err();
    assert_eq!(err.category(), "kubernetes", "{err}");
    assert_eq!(t.w.lbs.load_balancer_count(), 1, "the AWS side was done");
    t.w.aws();
    t.w.cache_applied_bindings();
    t.w.kube();
    let mut with_finalizer = svc.as_ref().clone();
    with_finalizer.metadata.finalizers = Some(vec![SERVICE_FINALIZER.into()]);
    t.reconcile(&with_finalizer).await.unwrap();
    assert_eq!(t.w.aws_writes(), (vec![], vec![]));
    assert_eq!(t.w.kube_lines(), vec![format!("PATCH {SVC_PATH}/status")]);
}
