//! The webhooks end to end through the router: AdmissionReview JSON in, AdmissionReview JSON
//! out, patches applied to the object they came with.

use async_trait::async_trait;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::{Service, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use lbc_aws::AwsError;
use lbc_aws::elbv2::{ElbV2, RegisteredTarget, TargetGroupInfo};
use lbc_aws::error::ErrorKind;
use lbc_aws::fake::{FakeAccounts, FakeElbV2};
use lbc_model::crd::RoleToAssume;
use lbc_model::crd::{ServiceReference, TargetGroupBinding, TargetGroupBindingSpec, TargetType};
use lbc_model::target::Target;
use lbc_webhook::{
    PATH_MUTATE_POD, PATH_MUTATE_POD_SERVER_ID, PATH_MUTATE_POD_TARGET_CONTROL_NAMESPACE,
    PATH_MUTATE_POD_TARGET_CONTROL_OBJECT, PATH_MUTATE_SERVICE, PATH_MUTATE_TGB, PATH_VALIDATE_INGRESS,
    PATH_VALIDATE_INGRESS_CLASS_PARAMS, PATH_VALIDATE_TGB, StaticClusterView, WebhookConfig, WebhookState, router,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tower::ServiceExt;

const ARN: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/web/0123456789abcdef";
const ARN2: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/api/fedcba9876543210";
const GATE: &str = "target-health.elbv2.k8s.aws/web-tg";

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", std::env::var("CARGO_MANIFEST_DIR").unwrap());
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// Sets the value at `pointer`, creating the last key if needed.
fn set(v: &mut Value, pointer: &str, new: Value) {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let obj = v.pointer_mut(parent).and_then(Value::as_object_mut).unwrap_or_else(|| panic!("no object at {parent}"));
    obj.insert(key.to_string(), new);
}

fn tg_info(arn: &str, name: &str, target_type: &str) -> TargetGroupInfo {
    TargetGroupInfo {
        arn: arn.into(),
        name: name.into(),
        target_type: target_type.into(),
        protocol: Some("TCP".into()),
        port: Some(80),
        vpc_id: Some("vpc-0abc".into()),
        ip_address_type: Some("ipv4".into()),
        ..Default::default()
    }
}

fn tgb(ns: &str, name: &str, service: &str, tt: Option<TargetType>, arn: &str) -> TargetGroupBinding {
    let mut t = TargetGroupBinding::new(
        name,
        TargetGroupBindingSpec {
            target_group_arn: Some(arn.into()),
            target_type: tt,
            service_ref: ServiceReference { name: service.into(), port: IntOrString::Int(80) },
            ..Default::default()
        },
    );
    t.metadata.namespace = Some(ns.into());
    t
}

fn svc(ns: &str, name: &str, selector: &[(&str, &str)]) -> Service {
    Service {
        metadata: ObjectMeta { name: Some(name.into()), namespace: Some(ns.into()), ..Default::default() },
        spec: Some(ServiceSpec {
            selector: Some(selector.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

struct Harness {
    state: Arc<WebhookState>,
    aws: Arc<FakeElbV2>,
    accounts: Arc<FakeAccounts>,
}

impl Harness {
    fn new(view: StaticClusterView) -> Self {
        Self::with_config(view, WebhookConfig::default())
    }

    fn with_config(view: StaticClusterView, config: WebhookConfig) -> Self {
        let aws = Arc::new(FakeElbV2::default());
        aws.add_target_group(tg_info(ARN, "web", "ip"));
        aws.add_target_group(tg_info(ARN2, "api", "instance"));
        let accounts = Arc::new(FakeAccounts::new(aws.clone()));
        let state = Arc::new(WebhookState::new(Arc::new(view), accounts.clone(), config));
        Self { state, aws, accounts }
    }

    /// The usual cluster: namespace shop with Service web (app=web) and ip binding web-tg.
    fn shop() -> Self {
        Self::new(StaticClusterView::new(
            vec![tgb("shop", "web-tg", "web", Some(TargetType::Ip), ARN)],
            vec![svc("shop", "web", &[("app", "web")])],
        ))
    }

    async fn raw(&self, method: &str, path: &str, body: impl Into<Body>) -> (StatusCode, Vec<u8>) {
        let req = Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json")
            .body(body.into())
            .unwrap();
        let resp = router(self.state.clone()).oneshot(req).await.unwrap();
        let status = resp.status();
        (status, resp.into_body().collect().await.unwrap().to_bytes().to_vec())
    }

    /// Posts a review; returns the `response` of the AdmissionReview sent back.
    async fn post(&self, path: &str, review: &Value) -> Value {
        self.post_bytes(path, serde_json::to_vec(review).unwrap()).await
    }

    async fn post_bytes(&self, path: &str, body: Vec<u8>) -> Value {
        let (status, body) = self.raw("POST", path, body).await;
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["kind"], "AdmissionReview", "{v}");
        assert_eq!(v["apiVersion"], "admission.k8s.io/v1", "{v}");
        v["response"].clone()
    }

    fn metrics_text(&self) -> String {
        let mut r = prometheus_client::registry::Registry::default();
        self.state.metrics().register(&mut r);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &r).unwrap();
        out
    }
}

/// Applies the response's JSON patch to the request's object.
fn patched(review: &Value, response: &Value) -> Value {
    assert_eq!(response["allowed"], true, "{response}");
    assert_eq!(response["patchType"], "JSONPatch", "{response}");
    let bytes: Vec<u8> = match &response["patch"] {
        Value::Array(a) => a.iter().map(|b| b.as_u64().unwrap() as u8).collect(),
        other => panic!("unexpected patch encoding {other}"),
    };
    let patch: json_patch::Patch = serde_json::from_slice(&bytes).unwrap();
    let mut obj = review["request"]["object"].clone();
    json_patch::patch(&mut obj, &patch).unwrap();
    obj
}

fn assert_unchanged(response: &Value) {
    assert_eq!(response["allowed"], true, "{response}");
    assert!(response.get("patch").is_none(), "{response}");
}

fn assert_denied(response: &Value, code: u64, needles: &[&str]) -> String {
    assert_eq!(response["allowed"], false, "{response}");
    assert_eq!(response["status"]["code"], code, "{response}");
    let msg = response["status"]["message"].as_str().unwrap().to_string();
    for n in needles {
        assert!(msg.contains(n), "message {msg:?} lacks {n:?}");
    }
    msg
}

// ---------------------------------------------------------------------------------------------
// Pods
// ---------------------------------------------------------------------------------------------

/// Worker IDs handed out in order, claims counted; `fail` makes every claim fail.
struct CountingWorkers {
    claims: std::sync::atomic::AtomicU32,
    fail: bool,
}

#[async_trait]
impl lbc_webhook::quic::WorkerIds for CountingWorkers {
    async fn claim(&self) -> Result<u32, String> {
        let n = self.claims.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if self.fail {
            Err("ConfigMap kube-system/quic-server-id-worker-tracker: forbidden".into())
        } else {
            Ok(40 + n)
        }
    }
}

fn quic_harness(fail: bool) -> (Harness, Arc<CountingWorkers>) {
    let workers = Arc::new(CountingWorkers { claims: Default::default(), fail });
    let mut h = Harness::new(StaticClusterView::default());
    let view = Arc::new(StaticClusterView::default());
    let injector = lbc_webhook::quic::QuicInjector::new("AWS_LBC_QUIC_SERVER_ID", workers.clone());
    h.state = Arc::new(WebhookState::new(view, h.accounts.clone(), WebhookConfig::default()).with_quic(injector));
    (h, workers)
}

fn quic_review(containers: &str) -> Value {
    let mut review = fixture("pod-create.json");
    set(
        &mut review,
        "/request/object/metadata/annotations",
        json!({
        "service.beta.kubernetes.io/aws-load-balancer-quic-enabled-containers": containers}),
    );
    set(
        &mut review,
        "/request/object/spec/initContainers",
        json!([
        {"name": "proxy", "image": "envoy", "restartPolicy": "Always", "env": [{"name": "A", "value": "b"}]}]),
    );
    review
}

#[tokio::test]
async fn quic_containers_get_a_server_id_each_on_one_claimed_worker_id() {
    let (h, workers) = quic_harness(false);
    let review = quic_review("web,proxy");
    let obj = patched(&review, &h.post(PATH_MUTATE_POD_SERVER_ID, &review).await);
    let id_of = |c: &Value| {
        let env = c["env"].as_array().unwrap();
        let v = env.iter().find(|e| e["name"] == "AWS_LBC_QUIC_SERVER_ID").unwrap()["value"].as_str().unwrap();
        lbc_model::target::QuicServerId::parse_env(v).unwrap()
    };
    let (web, proxy) = (id_of(&obj["spec"]["containers"][0]), id_of(&obj["spec"]["initContainers"][0]));
    assert_ne!(web, proxy);
    assert_eq!(obj["spec"]["initContainers"][0]["env"][0], json!({"name": "A", "value": "b"}), "appended");
    let worker = |id: lbc_model::target::QuicServerId| (u64::from_be_bytes(id.0) >> 7) & 0x1ffff;
    assert_eq!((worker(web), worker(proxy)), (40, 40));
    // Admitted again (a retried request): the containers keep their IDs; the worker ID was claimed once.
    let mut again = review.clone();
    set(&mut again, "/request/object", obj);
    assert_unchanged(&h.post(PATH_MUTATE_POD_SERVER_ID, &again).await);
    h.post(PATH_MUTATE_POD_SERVER_ID, &review).await;
    assert_eq!(workers.claims.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test]
async fn quic_typos_are_warned_and_a_failed_claim_refuses_the_pod() {
    let (h, _) = quic_harness(false);
    let review = quic_review("wbe");
    let resp = h.post(PATH_MUTATE_POD_SERVER_ID, &review).await;
    assert_unchanged(&resp);
    assert!(resp["warnings"][0].as_str().unwrap().contains("container \"wbe\""), "{resp}");
    assert_unchanged(&h.post(PATH_MUTATE_POD_SERVER_ID, &fixture("pod-create.json")).await);
    let (failing, _) = quic_harness(true);
    let resp = failing.post(PATH_MUTATE_POD_SERVER_ID, &quic_review("web")).await;
    assert_eq!(resp["allowed"], false, "{resp}");
    assert!(resp["status"]["message"].as_str().unwrap().contains("quic-server-id-worker-tracker"), "{resp}");
    // Without an injector (a process not given one) the path refuses rather than admit pods without IDs.
    let bare = Harness::new(StaticClusterView::default());
    assert_eq!(bare.post(PATH_MUTATE_POD_SERVER_ID, &quic_review("web")).await["allowed"], false);
}

#[tokio::test]
async fn pod_gets_gate_and_patch_applies() {
    let h = Harness::shop();
    let review = fixture("pod-create.json");
    let resp = h.post(PATH_MUTATE_POD, &review).await;
    assert_eq!(resp["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
    let obj = patched(&review, &resp);
    assert_eq!(obj["spec"]["readinessGates"], json!([{"conditionType": GATE}]));
    // Nothing else changed.
    let mut expect = review["request"]["object"].clone();
    expect["spec"]["readinessGates"] = json!([{"conditionType": GATE}]);
    assert_eq!(obj, expect);
}

#[tokio::test]
async fn pod_gate_injection_is_idempotent() {
    let h = Harness::shop();
    let mut review = fixture("pod-create.json");
    let once = patched(&review, &h.post(PATH_MUTATE_POD, &review).await);
    set(&mut review, "/request/object", once);
    assert_unchanged(&h.post(PATH_MUTATE_POD, &review).await);
}

#[tokio::test]
async fn pod_keeps_user_gates_and_strips_legacy() {
    let h = Harness::shop();
    let mut review = fixture("pod-create.json");
    set(
        &mut review,
        "/request/object/spec/readinessGates",
        json!([{"conditionType": "target-health.alb.ingress.k8s.aws/shop_web_80"}, {"conditionType": "example.com/warm"}]),
    );
    let obj = patched(&review, &h.post(PATH_MUTATE_POD, &review).await);
    assert_eq!(obj["spec"]["readinessGates"], json!([{"conditionType": "example.com/warm"}, {"conditionType": GATE}]));
}

#[tokio::test]
async fn pod_gates_for_every_matching_binding() {
    let h = Harness::new(StaticClusterView::new(
        vec![
            tgb("shop", "web-tg", "web", Some(TargetType::Ip), ARN),
            tgb("shop", "a-web-v6", "web", None, ARN2),
            tgb("shop", "inst", "web", Some(TargetType::Instance), ARN2),
            tgb("shop", "api-tg", "api", Some(TargetType::Ip), ARN2),
            tgb("other", "other-tg", "web", Some(TargetType::Ip), ARN2),
        ],
        vec![
            svc("shop", "web", &[("app", "web")]),
            svc("shop", "api", &[("app", "api")]),
            svc("other", "web", &[("app", "web")]),
        ],
    ));
    let review = fixture("pod-create.json");
    let obj = patched(&review, &h.post(PATH_MUTATE_POD, &review).await);
    assert_eq!(
        obj["spec"]["readinessGates"],
        json!([{"conditionType": "target-health.elbv2.k8s.aws/a-web-v6"}, {"conditionType": GATE}])
    );
}

#[tokio::test]
async fn pod_left_alone_when_nothing_applies() {
    let review = fixture("pod-create.json");
    // Label mismatch.
    let mut other = review.clone();
    set(&mut other, "/request/object/metadata/labels", json!({"app": "api"}));
    assert_unchanged(&Harness::shop().post(PATH_MUTATE_POD, &other).await);
    // No bindings.
    assert_unchanged(&Harness::new(StaticClusterView::default()).post(PATH_MUTATE_POD, &review).await);
    // Service without selector.
    let h = Harness::new(StaticClusterView::new(
        vec![tgb("shop", "web-tg", "web", Some(TargetType::Ip), ARN)],
        vec![Service { spec: Some(ServiceSpec::default()), ..svc("shop", "web", &[]) }],
    ));
    assert_unchanged(&h.post(PATH_MUTATE_POD, &review).await);
    // Injection switched off.
    let h = Harness::with_config(
        Harness::shop_view(),
        WebhookConfig { pod_readiness_gate_inject: false, ..Default::default() },
    );
    assert_unchanged(&h.post(PATH_MUTATE_POD, &review).await);
    // Namespace known and not labelled.
    let mut view = Harness::shop_view();
    view.namespaces.insert("shop".into(), BTreeMap::new());
    assert_unchanged(&Harness::new(view).post(PATH_MUTATE_POD, &review).await);
    // Caches not synced yet.
    let mut view = Harness::shop_view();
    view.not_synced = true;
    assert_unchanged(&Harness::new(view).post(PATH_MUTATE_POD, &review).await);
    // Not a CREATE.
    let mut upd = review.clone();
    set(&mut upd, "/request/operation", json!("UPDATE"));
    assert_unchanged(&Harness::shop().post(PATH_MUTATE_POD, &upd).await);
}

#[tokio::test]
async fn pod_injected_when_namespace_known_and_labelled() {
    let mut view = Harness::shop_view();
    view.namespaces
        .insert("shop".into(), [("elbv2.k8s.aws/pod-readiness-gate-inject".to_string(), "enabled".to_string())].into());
    let review = fixture("pod-create.json");
    let obj = patched(&review, &Harness::new(view).post(PATH_MUTATE_POD, &review).await);
    assert_eq!(obj["spec"]["readinessGates"], json!([{"conditionType": GATE}]));
}

impl Harness {
    fn shop_view() -> StaticClusterView {
        StaticClusterView::new(
            vec![tgb("shop", "web-tg", "web", Some(TargetType::Ip), ARN)],
            vec![svc("shop", "web", &[("app", "web")])],
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Services
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn service_gets_default_class() {
    let h = Harness::shop();
    let review = fixture("service-create.json");
    let obj = patched(&review, &h.post(PATH_MUTATE_SERVICE, &review).await);
    assert_eq!(obj["spec"]["loadBalancerClass"], "service.k8s.aws/nlb");
    let mut expect = review["request"]["object"].clone();
    expect["spec"]["loadBalancerClass"] = json!("service.k8s.aws/nlb");
    assert_eq!(obj, expect);
}

#[tokio::test]
async fn service_class_configurable_and_switchable() {
    let review = fixture("service-create.json");
    let h = Harness::with_config(
        Harness::shop_view(),
        WebhookConfig { load_balancer_class: "example.com/lb".into(), ..Default::default() },
    );
    assert_eq!(
        patched(&review, &h.post(PATH_MUTATE_SERVICE, &review).await)["spec"]["loadBalancerClass"],
        "example.com/lb"
    );
    let h = Harness::with_config(Harness::shop_view(), WebhookConfig { service_mutator: false, ..Default::default() });
    assert_unchanged(&h.post(PATH_MUTATE_SERVICE, &review).await);
}

#[tokio::test]
async fn service_left_alone() {
    let h = Harness::shop();
    let review = fixture("service-create.json");
    let mut own = review.clone();
    set(&mut own, "/request/object/spec/loadBalancerClass", json!("other.io/lb"));
    assert_unchanged(&h.post(PATH_MUTATE_SERVICE, &own).await);
    let mut cip = review.clone();
    set(&mut cip, "/request/object/spec/type", json!("ClusterIP"));
    assert_unchanged(&h.post(PATH_MUTATE_SERVICE, &cip).await);
    let mut del = review.clone();
    set(&mut del, "/request/operation", json!("DELETE"));
    assert_unchanged(&h.post(PATH_MUTATE_SERVICE, &del).await);
}

#[tokio::test]
async fn service_update_keeps_old_class() {
    let h = Harness::shop();
    let mut review = fixture("service-create.json");
    let mut old = review["request"]["object"].clone();
    old["spec"]["loadBalancerClass"] = json!("service.k8s.aws/nlb");
    set(&mut review, "/request/operation", json!("UPDATE"));
    set(&mut review, "/request/oldObject", old.clone());
    let obj = patched(&review, &h.post(PATH_MUTATE_SERVICE, &review).await);
    assert_eq!(obj["spec"]["loadBalancerClass"], "service.k8s.aws/nlb");
    // An update of a classless LoadBalancer Service is not given one.
    old["spec"].as_object_mut().unwrap().remove("loadBalancerClass");
    set(&mut review, "/request/oldObject", old);
    assert_unchanged(&h.post(PATH_MUTATE_SERVICE, &review).await);
}

// ---------------------------------------------------------------------------------------------
// TargetGroupBinding mutator
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn tgb_defaults_from_target_group() {
    let h = Harness::new(StaticClusterView::default());
    let review = fixture("tgb-create.json");
    let obj = patched(&review, &h.post(PATH_MUTATE_TGB, &review).await);
    assert_eq!(
        obj["spec"],
        json!({
            "serviceRef": {"name": "web", "port": 80},
            "targetGroupARN": ARN,
            "targetType": "ip",
            "ipAddressType": "ipv4",
            "vpcID": "vpc-0abc",
            "targetGroupProtocol": "TCP"
        })
    );
    assert_eq!(obj["metadata"], review["request"]["object"]["metadata"]);
}

#[tokio::test]
async fn tgb_name_resolved_to_arn() {
    let h = Harness::new(StaticClusterView::default());
    let mut review = fixture("tgb-create.json");
    let spec = review.pointer_mut("/request/object/spec").unwrap().as_object_mut().unwrap();
    spec.remove("targetGroupARN");
    spec.insert("targetGroupName".into(), json!("api"));
    let obj = patched(&review, &h.post(PATH_MUTATE_TGB, &review).await);
    assert_eq!(obj["spec"]["targetGroupARN"], ARN2);
    assert_eq!(obj["spec"]["targetGroupName"], "api");
    assert_eq!(obj["spec"]["targetType"], "instance");
}

#[tokio::test]
async fn tgb_mutator_denies_unknown_target_group() {
    let h = Harness::new(StaticClusterView::default());
    let mut review = fixture("tgb-create.json");
    let spec = review.pointer_mut("/request/object/spec").unwrap().as_object_mut().unwrap();
    spec.remove("targetGroupARN");
    spec.insert("targetGroupName".into(), json!("nope"));
    assert_denied(&h.post(PATH_MUTATE_TGB, &review).await, 403, &["\"nope\"", "no target group of that name"]);
    let mut review = fixture("tgb-create.json");
    set(&mut review, "/request/object/spec/targetGroupARN", json!(ARN.replace("web/", "gone/")));
    assert_denied(&h.post(PATH_MUTATE_TGB, &review).await, 403, &["targetgroup/gone/", "no such target group"]);
}

#[tokio::test]
async fn tgb_mutator_reports_aws_errors() {
    let h = Harness::new(StaticClusterView::default());
    h.aws.inject_fault("DescribeTargetGroups", ErrorKind::AccessDenied);
    let review = fixture("tgb-create.json");
    let resp = h.post(PATH_MUTATE_TGB, &review).await;
    assert_denied(&resp, 500, &["could not describe target group", ARN, "retry"]);
    assert!(h.metrics_text().contains(
        "awslbc_webhook_mutation_failure_total{webhook_name=\"mtargetgroupbinding.elbv2.k8s.aws\",error_category=\"aws_error\"} 1"
    ));
}

/// An ElbV2 that never answers.
struct Silent;

#[async_trait]
impl ElbV2 for Silent {
    async fn describe_target_group(&self, _: &str) -> Result<Option<TargetGroupInfo>, AwsError> {
        std::future::pending().await
    }
    async fn describe_target_group_by_name(&self, _: &str) -> Result<Option<TargetGroupInfo>, AwsError> {
        std::future::pending().await
    }
    async fn target_group_tags(&self, _: &str) -> Result<Option<BTreeMap<String, String>>, AwsError> {
        std::future::pending().await
    }
    async fn describe_target_health(&self, _: &str, _: Option<&[Target]>) -> Result<Vec<RegisteredTarget>, AwsError> {
        std::future::pending().await
    }
    async fn register_targets(&self, _: &str, _: &[Target], _: Option<&str>) -> Result<(), AwsError> {
        std::future::pending().await
    }
    async fn deregister_targets(&self, _: &str, _: &[Target]) -> Result<(), AwsError> {
        std::future::pending().await
    }
}

#[tokio::test]
async fn tgb_aws_timeout_is_a_clear_error() {
    let state = Arc::new(WebhookState::new(
        Arc::new(StaticClusterView::default()),
        Arc::new(FakeAccounts::new(Arc::new(Silent))),
        WebhookConfig { aws_timeout: Duration::from_millis(50), ..Default::default() },
    ));
    for path in [PATH_MUTATE_TGB, PATH_VALIDATE_TGB] {
        let req =
            Request::post(path).body(Body::from(serde_json::to_vec(&fixture("tgb-create.json")).unwrap())).unwrap();
        let resp = router(state.clone()).oneshot(req).await.unwrap();
        let v: Value = serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap();
        assert_denied(&v["response"], 500, &["did not answer DescribeTargetGroups", "within 50ms"]);
    }
}

#[tokio::test]
async fn tgb_mutator_skips_metadata_only_updates() {
    let h = Harness::new(StaticClusterView::default());
    let mut review = fixture("tgb-create.json");
    let obj = review["request"]["object"].clone();
    set(&mut review, "/request/operation", json!("UPDATE"));
    set(&mut review, "/request/oldObject", obj);
    set(&mut review, "/request/object/metadata/finalizers", json!(["elbv2.k8s.aws/resources"]));
    assert_unchanged(&h.post(PATH_MUTATE_TGB, &review).await);
    assert!(h.aws.calls().is_empty(), "{:?}", h.aws.calls());
}

#[tokio::test]
async fn tgb_mutator_update_carries_old_defaults_without_aws() {
    let h = Harness::new(StaticClusterView::default());
    let mut review = fixture("tgb-create.json");
    let bare = review["request"]["object"].clone();
    let mut old = bare.clone();
    old["spec"] = json!({
        "serviceRef": {"name": "web", "port": 80}, "targetGroupARN": ARN, "targetType": "ip",
        "ipAddressType": "ipv4", "vpcID": "vpc-0abc", "targetGroupProtocol": "TCP"
    });
    set(&mut review, "/request/operation", json!("UPDATE"));
    set(&mut review, "/request/oldObject", old.clone());
    // Re-applying the original manifest with another port: defaults come back from the old object.
    set(&mut review, "/request/object/spec/serviceRef/port", json!(8080));
    let obj = patched(&review, &h.post(PATH_MUTATE_TGB, &review).await);
    let mut expect = old["spec"].clone();
    expect["serviceRef"]["port"] = json!(8080);
    assert_eq!(obj["spec"], expect);
    assert!(h.aws.calls().is_empty(), "{:?}", h.aws.calls());
}

#[tokio::test]
async fn tgb_mutator_refuses_lambda_target_group() {
    let h = Harness::new(StaticClusterView::default());
    let lambda = ARN.replace("web/", "fn/");
    h.aws.add_target_group(TargetGroupInfo { protocol: None, vpc_id: None, ..tg_info(&lambda, "fn", "lambda") });
    let mut review = fixture("tgb-create.json");
    set(&mut review, "/request/object/spec/targetGroupARN", json!(lambda));
    assert_denied(&h.post(PATH_MUTATE_TGB, &review).await, 403, &["\"lambda\"", "\"ip\" or \"instance\""]);
}

// ---------------------------------------------------------------------------------------------
// TargetGroupBinding validator
// ---------------------------------------------------------------------------------------------

/// The fixture as the mutator leaves it.
fn defaulted_tgb() -> Value {
    let mut review = fixture("tgb-create.json");
    set(
        &mut review,
        "/request/object/spec",
        json!({
            "serviceRef": {"name": "web", "port": 80}, "targetGroupARN": ARN, "targetType": "ip",
            "ipAddressType": "ipv4", "vpcID": "vpc-0abc", "targetGroupProtocol": "TCP"
        }),
    );
    review
}

fn as_update(mut review: Value, old_spec: Value) -> Value {
    let mut old = review["request"]["object"].clone();
    old["spec"] = old_spec;
    set(&mut review, "/request/operation", json!("UPDATE"));
    set(&mut review, "/request/oldObject", old);
    review
}

#[tokio::test]
async fn tgb_valid_binding_allowed() {
    let h = Harness::new(StaticClusterView::default());
    let resp = h.post(PATH_VALIDATE_TGB, &defaulted_tgb()).await;
    assert_unchanged(&resp);
    assert!(resp.get("warnings").is_none(), "{resp}");
}

/// A binding with spec.iamRoleArnToAssume is checked against the role's account (a target group
/// shared from another account), as ALBC's webhook does; never against the controller's own.
#[tokio::test]
async fn tgb_cross_account_binding_is_checked_in_the_roles_account() {
    const XARN: &str = "arn:aws:elasticloadbalancing:us-east-1:222222222222:targetgroup/shared/00000000000000aa";
    const ROLE: &str = "arn:aws:iam::222222222222:role/lb-targets";
    let h = Harness::new(StaticClusterView::default());
    let other = Arc::new(FakeElbV2::default());
    other.add_target_group(tg_info(XARN, "shared", "ip"));
    let role = RoleToAssume { role_arn: ROLE.into(), external_id: Some("ext-7".into()) };
    h.accounts.add_role(role.clone(), other.clone());
    let binding = |role: Option<&str>, ext: Option<&str>| {
        let mut r = defaulted_tgb();
        set(&mut r, "/request/object/spec/targetGroupARN", json!(XARN));
        if let Some(role) = role {
            set(&mut r, "/request/object/spec/iamRoleArnToAssume", json!(role));
        }
        if let Some(ext) = ext {
            set(&mut r, "/request/object/spec/assumeRoleExternalId", json!(ext));
        }
        r
    };

    assert_unchanged(&h.post(PATH_VALIDATE_TGB, &binding(Some(ROLE), Some("ext-7"))).await);
    assert_eq!(h.accounts.asked().last(), Some(&Some(role.clone())));
    assert!(other.calls().iter().any(|c| c.operation == "DescribeTargetGroups"), "read in the role's account");
    assert!(h.aws.calls().is_empty(), "the controller's own account was not asked: {:?}", h.aws.calls());

    // Without the role the group is not in the controller's account; with another external ID
    // the role leads elsewhere (here: an account without it).
    assert_denied(&h.post(PATH_VALIDATE_TGB, &binding(None, None)).await, 403, &[XARN, "controller's AWS account"]);
    assert_denied(
        &h.post(PATH_VALIDATE_TGB, &binding(Some(ROLE), Some("other"))).await,
        403,
        &[XARN, "account of role arn:aws:iam::222222222222:role/lb-targets"],
    );
}

#[tokio::test]
async fn tgb_validator_denials() {
    let h = Harness::new(StaticClusterView::new(vec![tgb("prod", "taken", "web", Some(TargetType::Ip), ARN2)], vec![]));
    struct Case {
        name: &'static str,
        pointer: &'static str,
        value: Value,
        needles: &'static [&'static str],
    }
    let cases = [
        Case {
            name: "no service name",
            pointer: "/serviceRef/name",
            value: json!(""),
            needles: &["spec.serviceRef.name is empty"],
        },
        Case {
            name: "port 0",
            pointer: "/serviceRef/port",
            value: json!(0),
            needles: &["spec.serviceRef.port is 0", "1 to 65535"],
        },
        Case {
            name: "bad ARN",
            pointer: "/targetGroupARN",
            value: json!("web"),
            needles: &["\"web\", which is not a target group ARN"],
        },
        Case {
            name: "nodeSelector with ip",
            pointer: "/nodeSelector",
            value: json!({"matchLabels": {"pool": "a"}}),
            needles: &["spec.nodeSelector is set but spec.targetType is \"ip\"", "Remove spec.nodeSelector"],
        },
        Case {
            name: "type mismatch with AWS",
            pointer: "/targetType",
            value: json!("instance"),
            needles: &[
                "spec.targetType is \"instance\" but target group",
                "has target type \"ip\"",
                "Set spec.targetType: ip",
            ],
        },
        Case {
            name: "VPC mismatch with AWS",
            pointer: "/vpcID",
            value: json!("vpc-other"),
            needles: &["spec.vpcID is \"vpc-other\"", "is in VPC \"vpc-0abc\"", "Set spec.vpcID: vpc-0abc"],
        },
        Case {
            name: "IP type mismatch with AWS",
            pointer: "/ipAddressType",
            value: json!("ipv6"),
            needles: &["spec.ipAddressType is \"ipv6\"", "IP address type \"ipv4\""],
        },
        Case {
            name: "target group already bound",
            pointer: "/targetGroupARN",
            value: json!(ARN2),
            needles: &[
                "already bound by TargetGroupBinding prod/taken",
                "multiClusterTargetGroup: true",
                "Set it on shop/web-tg and prod/taken",
            ],
        },
        Case {
            name: "target group missing in AWS",
            pointer: "/targetGroupARN",
            value: json!(ARN.replace("web/", "gone/")),
            needles: &["no such target group exists"],
        },
    ];
    for c in cases {
        let mut review = defaulted_tgb();
        let ptr = format!("/request/object/spec{}", c.pointer);
        match review.pointer_mut(&ptr) {
            Some(v) => *v = c.value.clone(),
            None => {
                let key = c.pointer.trim_start_matches('/');
                review["request"]["object"]["spec"][key] = c.value.clone();
            }
        }
        let resp = h.post(PATH_VALIDATE_TGB, &review).await;
        assert_eq!(resp["uid"], "c0ffee00-1111-4222-8333-444455556666", "{}", c.name);
        let msg = assert_denied(&resp, 403, c.needles);
        assert!(!msg.is_empty(), "{}", c.name);
    }
    let text = h.metrics_text();
    assert!(text.contains(
        "awslbc_webhook_validation_failure_total{webhook_name=\"vtargetgroupbinding.elbv2.k8s.aws\",error_category=\"vpc_mismatch\"} 1"
    ), "{text}");
    assert!(
        text.contains(
            "awslbc_webhook_requests_total{webhook_name=\"vtargetgroupbinding.elbv2.k8s.aws\",outcome=\"denied\"} 9"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn tgb_multi_cluster_sharing_allowed() {
    let mut other = tgb("prod", "shared", "web", Some(TargetType::Ip), ARN);
    other.spec.multi_cluster_target_group = Some(true);
    let h = Harness::new(StaticClusterView::new(vec![other], vec![]));
    let mut review = defaulted_tgb();
    review["request"]["object"]["spec"]["multiClusterTargetGroup"] = json!(true);
    assert_unchanged(&h.post(PATH_VALIDATE_TGB, &review).await);
    review["request"]["object"]["spec"]["multiClusterTargetGroup"] = json!(false);
    assert_denied(&h.post(PATH_VALIDATE_TGB, &review).await, 403, &["prod/shared (multiClusterTargetGroup: true)"]);
}

#[tokio::test]
async fn tgb_update_of_immutable_fields_denied() {
    let h = Harness::new(StaticClusterView::default());
    let old = defaulted_tgb()["request"]["object"]["spec"].clone();
    let mut review = as_update(defaulted_tgb(), old);
    set(&mut review, "/request/object/spec/targetType", json!("instance"));
    set(&mut review, "/request/object/spec/vpcID", json!("vpc-1"));
    let msg = assert_denied(
        &h.post(PATH_VALIDATE_TGB, &review).await,
        403,
        &[
            "(1) spec.targetType is immutable: it is \"ip\" and this update sets \"instance\"",
            "(2) spec.vpcID is immutable",
        ],
    );
    assert!(msg.contains("Restore spec.targetType: ip"), "{msg}");
}

#[tokio::test]
async fn tgb_update_skips_aws_unless_target_group_fields_change() {
    let h = Harness::new(StaticClusterView::default());
    let old = defaulted_tgb()["request"]["object"]["spec"].clone();
    let mut review = as_update(defaulted_tgb(), old);
    set(&mut review, "/request/object/spec/serviceRef/port", json!("http"));
    assert_unchanged(&h.post(PATH_VALIDATE_TGB, &review).await);
    assert!(h.aws.calls().is_empty(), "{:?}", h.aws.calls());
}

#[tokio::test]
async fn tgb_finalizer_removal_never_blocked() {
    // The target group is gone from AWS and the spec is invalid by today's rules: removing
    // the finalizer (a metadata-only update) must still pass.
    let h = Harness::new(StaticClusterView::default());
    h.aws.remove_target_group(ARN);
    let mut review = defaulted_tgb();
    set(&mut review, "/request/object/spec/nodeSelector", json!({"matchLabels": {"a": "b"}}));
    let spec = review["request"]["object"]["spec"].clone();
    let mut review = as_update(review, spec);
    set(&mut review, "/request/oldObject/metadata/finalizers", json!(["elbv2.k8s.aws/resources"]));
    set(&mut review, "/request/object/metadata/deletionTimestamp", json!("2025-01-01T00:00:00Z"));
    assert_unchanged(&h.post(PATH_VALIDATE_TGB, &review).await);
    assert!(h.aws.calls().is_empty());
}

/// Target groups of another cluster or stack are denied; untagged ones (Terraform) and the
/// binding's own stack's are admitted. One DescribeTags per check.
#[tokio::test]
async fn tgb_validator_denies_foreign_target_groups() {
    let config = WebhookConfig { cluster_name: "prod".into(), ..Default::default() };
    let h = Harness::with_config(StaticClusterView::default(), config);
    let tags_calls = |h: &Harness| h.aws.calls().iter().filter(|c| c.operation == "DescribeTags").count();

    // Terraform-made (no tags of ours): admitted as before.
    h.aws.set_tags(ARN, &[("team", "storefront")]);
    assert_unchanged(&h.post(PATH_VALIDATE_TGB, &defaulted_tgb()).await);
    assert_eq!(tags_calls(&h), 1);

    // Another cluster's.
    h.aws.set_tags(ARN, &[("elbv2.k8s.aws/cluster", "staging")]);
    let msg = assert_denied(
        &h.post(PATH_VALIDATE_TGB, &defaulted_tgb()).await,
        403,
        &["elbv2.k8s.aws/cluster=\"staging\"", "elbv2.k8s.aws/cluster=\"prod\"", "shop/web-tg", ARN],
    );
    assert!(msg.contains("Fix:"), "{msg}");

    // Another stack's, for a plain binding.
    h.aws.set_tags(ARN, &[("elbv2.k8s.aws/cluster", "prod"), ("service.k8s.aws/stack", "other/api")]);
    assert_denied(
        &h.post(PATH_VALIDATE_TGB, &defaulted_tgb()).await,
        403,
        &["service.k8s.aws/stack=\"other/api\"", "belongs to another stack"],
    );

    // The binding of the stack that made it (ALBC's stack labels, in the stack's namespace): admitted.
    h.aws.set_tags(ARN, &[("elbv2.k8s.aws/cluster", "prod"), ("service.k8s.aws/stack", "shop/api")]);
    let mut own = defaulted_tgb();
    set(
        &mut own,
        "/request/object/metadata/labels",
        json!({"service.k8s.aws/stack-namespace": "shop", "service.k8s.aws/stack-name": "api"}),
    );
    assert_unchanged(&h.post(PATH_VALIDATE_TGB, &own).await);
    // The same labels in another namespace than the stack's: denied, naming the label (issue 32).
    let mut spoofed = defaulted_tgb();
    set(
        &mut spoofed,
        "/request/object/metadata/labels",
        json!({"service.k8s.aws/stack-namespace": "other", "service.k8s.aws/stack-name": "api"}),
    );
    assert_denied(
        &h.post(PATH_VALIDATE_TGB, &spoofed).await,
        403,
        &["service.k8s.aws/stack-namespace=\"other\"", "(\"shop\" here)", "Fix:"],
    );
    // ...also when only the labels change (an update whose spec is the same).
    let mut relabel = spoofed.clone();
    relabel["request"]["operation"] = json!("UPDATE");
    relabel["request"]["oldObject"] = defaulted_tgb()["request"]["object"].clone();
    assert_denied(&h.post(PATH_VALIDATE_TGB, &relabel).await, 403, &["service.k8s.aws/stack-namespace"]);
    // A label-only update that leaves the stack labels alone is never blocked (finalizers, deletion).
    let mut finalizer = defaulted_tgb();
    finalizer["request"]["operation"] = json!("UPDATE");
    finalizer["request"]["oldObject"] = defaulted_tgb()["request"]["object"].clone();
    set(&mut finalizer, "/request/object/metadata/finalizers", json!(["elbv2.k8s.aws/resources"]));
    assert_unchanged(&h.post(PATH_VALIDATE_TGB, &finalizer).await);
    h.aws.set_tags(ARN, &[("elbv2.k8s.aws/cluster", "prod"), ("service.k8s.aws/stack", "other/api")]);

    // A multi-cluster binding may share it (it only deregisters what it registered).
    let mut multi = defaulted_tgb();
    set(&mut multi, "/request/object/spec/multiClusterTargetGroup", json!(true));
    assert_unchanged(&h.post(PATH_VALIDATE_TGB, &multi).await);

    // AWS failing the tag read: a clear error, not a silent admit.
    h.aws.inject_fault("DescribeTags", ErrorKind::AccessDenied);
    assert_denied(&h.post(PATH_VALIDATE_TGB, &defaulted_tgb()).await, 500, &["could not read the tags", ARN]);
}

/// The strict tenancy mode denies at admission what the policy does not grant: a role (never
/// assumed, not even to describe the target group), a `spec.networking` source, an untagged
/// target group.
#[tokio::test]
async fn strict_tenancy_denies_what_the_policy_does_not_grant() {
    use lbc_model::tenancy::{Tenancy, TenancyMode};
    const ROLE: &str = "arn:aws:iam::222222222222:role/aws-lb-controller/team-b";
    let policy = r#"{"targetGroups": [{"namespaces": ["shop"], "names": ["web"]}],
                     "networking": [{"namespaces": ["shop"], "cidrs": ["10.0.0.0/8"]}]}"#;
    let tenancy = Arc::new(Tenancy::parse(TenancyMode::Strict, policy, "test").unwrap());
    let h = Harness::with_config(
        StaticClusterView::default(),
        WebhookConfig { cluster_name: "prod".into(), tenancy, ..Default::default() },
    );
    // Terraform's group, granted to the namespace by name: admitted.
    h.aws.set_tags(ARN, &[("team", "storefront")]);
    assert_unchanged(&h.post(PATH_VALIDATE_TGB, &defaulted_tgb()).await);

    // A role the policy does not grant: denied by the mutator and the validator, never assumed.
    let mut with_role = defaulted_tgb();
    set(&mut with_role, "/request/object/spec/iamRoleArnToAssume", json!(ROLE));
    for path in [PATH_MUTATE_TGB, PATH_VALIDATE_TGB] {
        assert_denied(&h.post(path, &with_role).await, 403, &["shop/web-tg", ROLE, "tenancy.policy.assumeRoles"]);
    }
    assert!(h.accounts.asked().iter().all(Option::is_none), "a refused role was assumed: {:?}", h.accounts.asked());

    // A source outside the namespace's networking grant: denied; one inside it: admitted.
    let with_source = |cidr: &str| {
        let mut r = defaulted_tgb();
        let networking = json!({"ingress": [{"from": [{"ipBlock": {"cidr": cidr}}], "ports": [{"port": 8080}]}]});
        set(&mut r, "/request/object/spec/networking", networking);
        r
    };
    assert_denied(
        &h.post(PATH_VALIDATE_TGB, &with_source("0.0.0.0/0")).await,
        403,
        &["shop/web-tg", "ipBlock 0.0.0.0/0", "ports 8080-8080", "tenancy.policy.networking"],
    );
    assert_unchanged(&h.post(PATH_VALIDATE_TGB, &with_source("10.1.0.0/16")).await);

    // An untagged group the policy does not grant to the namespace: denied once its tags are read.
    h.aws.add_target_group(tg_info(ARN2, "api", "ip"));
    h.aws.set_tags(ARN2, &[("team", "payments")]);
    let mut other = defaulted_tgb();
    set(&mut other, "/request/object/spec/targetGroupARN", json!(ARN2));
    assert_denied(&h.post(PATH_VALIDATE_TGB, &other).await, 403, &["shop/web-tg", ARN2, "tenancy.policy.targetGroups"]);
}

#[tokio::test]
async fn tgb_validator_warns_while_cache_loads() {
    let view = StaticClusterView { not_synced: true, ..Default::default() };
    let h = Harness::new(view);
    let resp = h.post(PATH_VALIDATE_TGB, &defaulted_tgb()).await;
    assert_eq!(resp["allowed"], true);
    assert!(resp["warnings"][0].as_str().unwrap().contains("still loading"), "{resp}");
}

// ---------------------------------------------------------------------------------------------
// Malformed requests
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn malformed_requests_get_clear_errors() {
    let h = Harness::shop();
    let good = fixture("pod-create.json");
    let uid = "705ab4f5-6393-11e8-b7cc-42010a800002";
    let mut no_request = good.clone();
    no_request.as_object_mut().unwrap().remove("request");
    let mut wrong_kind = fixture("service-create.json");
    set(&mut wrong_kind, "/request/uid", json!(uid));
    let mut bad_object = good.clone();
    set(&mut bad_object, "/request/object/spec", json!("not a spec"));
    let mut bad_op = good.clone();
    set(&mut bad_op, "/request/operation", json!("EXPLODE"));
    let mut no_object = good.clone();
    set(&mut no_object, "/request/object", Value::Null);
    let mut no_ns = good.clone();
    no_ns["request"].as_object_mut().unwrap().remove("namespace");
    no_ns["request"]["object"]["metadata"].as_object_mut().unwrap().remove("namespace");
    let mut no_uid = good.clone();
    no_uid["request"].as_object_mut().unwrap().remove("uid");

    // (name, path, body, uid expected back, words the message must contain)
    type Case = (&'static str, &'static str, Vec<u8>, Option<&'static str>, &'static str);
    let cases: Vec<Case> = vec![
        ("empty body", PATH_MUTATE_POD, vec![], None, "not JSON"),
        ("not JSON", PATH_MUTATE_POD, b"{nope".to_vec(), None, "not JSON"),
        ("JSON but not a review", PATH_MUTATE_POD, b"[1,2]".to_vec(), None, "not an AdmissionReview"),
        ("no request", PATH_MUTATE_POD, serde_json::to_vec(&no_request).unwrap(), None, "has no request"),
        (
            "wrong kind",
            PATH_MUTATE_POD,
            serde_json::to_vec(&wrong_kind).unwrap(),
            Some(uid),
            "handles Pod objects but the request is for \"Service\"",
        ),
        (
            "Pod sent to the TGB validator",
            PATH_VALIDATE_TGB,
            serde_json::to_vec(&good).unwrap(),
            Some(uid),
            "handles TargetGroupBinding.elbv2.k8s.aws objects",
        ),
        (
            "undecodable object",
            PATH_MUTATE_POD,
            serde_json::to_vec(&bad_object).unwrap(),
            Some(uid),
            "cannot read the AdmissionReview of a Pod",
        ),
        (
            "unknown operation",
            PATH_MUTATE_POD,
            serde_json::to_vec(&bad_op).unwrap(),
            Some(uid),
            "cannot read the AdmissionReview of a Pod",
        ),
        (
            "CREATE without object",
            PATH_MUTATE_POD,
            serde_json::to_vec(&no_object).unwrap(),
            Some(uid),
            "without the Pod object",
        ),
        ("no namespace", PATH_MUTATE_POD, serde_json::to_vec(&no_ns).unwrap(), Some(uid), "without a namespace"),
        (
            "no uid",
            PATH_MUTATE_POD,
            serde_json::to_vec(&no_uid).unwrap(),
            None,
            "cannot read the AdmissionReview of a Pod",
        ),
    ];
    for (name, path, body, want_uid, needle) in cases {
        let resp = h.post_bytes(path, body).await;
        assert_eq!(resp["allowed"], false, "{name}: {resp}");
        assert_eq!(resp["status"]["code"], 400, "{name}: {resp}");
        let msg = resp["status"]["message"].as_str().unwrap();
        assert!(msg.contains(needle), "{name}: {msg:?} lacks {needle:?}");
        assert_eq!(resp["uid"], want_uid.unwrap_or(""), "{name}");
    }
    let text = h.metrics_text();
    assert!(text.contains(
        "awslbc_webhook_mutation_failure_total{webhook_name=\"mpod.elbv2.k8s.aws\",error_category=\"malformed_request\"} 10"
    ), "{text}");
}

#[tokio::test]
async fn http_surface() {
    let h = Harness::shop();
    let (status, _) = h.raw("GET", PATH_MUTATE_POD, Body::empty()).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    let (status, body) = h.raw("GET", "/healthz", Body::empty()).await;
    assert_eq!((status, body.as_slice()), (StatusCode::OK, b"ok".as_slice()));
    let (status, _) = h.raw("POST", "/mutate-v1-other", Body::empty()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn metrics_count_requests_and_latency() {
    let h = Harness::shop();
    let review = fixture("pod-create.json");
    h.post(PATH_MUTATE_POD, &review).await;
    let mut other = review.clone();
    set(&mut other, "/request/object/metadata/labels", json!({}));
    h.post(PATH_MUTATE_POD, &other).await;
    let text = h.metrics_text();
    for line in [
        "awslbc_webhook_requests_total{webhook_name=\"mpod.elbv2.k8s.aws\",outcome=\"patched\"} 1",
        "awslbc_webhook_requests_total{webhook_name=\"mpod.elbv2.k8s.aws\",outcome=\"allowed\"} 1",
        "awslbc_webhook_request_duration_seconds_count{webhook_name=\"mpod.elbv2.k8s.aws\"} 2",
        // controller-runtime's families, by path.
        "# TYPE controller_runtime_webhook_requests counter",
        "controller_runtime_webhook_requests_total{code=\"200\",webhook=\"/mutate-v1-pod\"} 2",
        "# TYPE controller_runtime_webhook_latency_seconds histogram",
        "controller_runtime_webhook_latency_seconds_count{webhook=\"/mutate-v1-pod\"} 2",
        "controller_runtime_webhook_latency_seconds_bucket{le=\"10.0\",webhook=\"/mutate-v1-pod\"} 2",
        "# TYPE controller_runtime_webhook_requests_in_flight gauge",
        "controller_runtime_webhook_requests_in_flight{webhook=\"/mutate-v1-pod\"} 0",
        "controller_runtime_webhook_panics_total 0",
    ] {
        assert!(text.contains(line), "missing {line} in\n{text}");
    }
}

// ---------------------------------------------------------------------------------------------
// The ALB target control agent
// ---------------------------------------------------------------------------------------------

fn target_control_config(ns: &str, image: &str) -> Arc<lbc_model::crd::ALBTargetControlConfig> {
    let mut c = lbc_model::crd::ALBTargetControlConfig::new(
        lbc_model::crd::TARGET_CONTROL_CONFIG_NAME,
        lbc_model::crd::ALBTargetControlConfigSpec {
            image: image.into(),
            data_address: "0.0.0.0:80".into(),
            control_address: "0.0.0.0:3000".into(),
            destination_address: "127.0.0.1:8080".into(),
            max_concurrency: 1,
            ..Default::default()
        },
    );
    c.metadata.namespace = Some(ns.into());
    Arc::new(c)
}

fn target_control_harness(gate: bool, configs: Vec<Arc<lbc_model::crd::ALBTargetControlConfig>>) -> Harness {
    let view = StaticClusterView { target_control: configs, ..Default::default() };
    let config = WebhookConfig { target_control_agent: gate, controller_namespace: "lbc".into(), ..Default::default() };
    Harness::with_config(view, config)
}

/// The pod fixture (container `web` on 8080) with `labels` added.
fn agent_review(labels: &[(&str, &str)]) -> Value {
    let mut review = fixture("pod-create.json");
    let object_labels = review.pointer_mut("/request/object/metadata/labels").unwrap().as_object_mut().unwrap();
    for (k, v) in labels {
        object_labels.insert(k.to_string(), json!(v));
    }
    review
}

#[tokio::test]
async fn the_agent_is_added_from_the_namespaces_config_before_the_controllers() {
    let h = target_control_harness(
        true,
        vec![target_control_config("lbc", "agent:ctl"), target_control_config("shop", "agent:shop")],
    );
    let review = agent_review(&[]);
    let obj = patched(&review, &h.post(PATH_MUTATE_POD_TARGET_CONTROL_NAMESPACE, &review).await);
    let agent = &obj["spec"]["containers"][1];
    assert_eq!(agent["name"], "alb-target-control-agent");
    assert_eq!(agent["image"], "agent:shop");
    assert_eq!(
        agent["ports"],
        json!([{"name": "data", "containerPort": 80, "protocol": "TCP"}, {"name": "control", "containerPort": 3000, "protocol": "TCP"}])
    );
    assert_eq!(obj["metadata"]["annotations"]["elbv2.k8s.aws/alb-target-control-agent-injected"], "true");
    assert_eq!(obj["spec"]["containers"][0]["name"], "web", "the application container is kept first");
    // The controller's namespace's config when the pod's has none; a pod that already has the
    // agent (a retried request) is left alone.
    let h = target_control_harness(true, vec![target_control_config("lbc", "agent:ctl")]);
    let obj = patched(&review, &h.post(PATH_MUTATE_POD_TARGET_CONTROL_NAMESPACE, &review).await);
    assert_eq!(obj["spec"]["containers"][1]["image"], "agent:ctl");
    let mut again = review.clone();
    set(&mut again, "/request/object", obj);
    assert_unchanged(&h.post(PATH_MUTATE_POD_TARGET_CONTROL_NAMESPACE, &again).await);
}

#[tokio::test]
async fn pod_labels_decide_and_bad_values_are_refused() {
    let h = target_control_harness(true, vec![target_control_config("shop", "agent:1")]);
    let opted_out = agent_review(&[("elbv2.k8s.aws/alb-target-control-agent-inject", "false")]);
    assert_unchanged(&h.post(PATH_MUTATE_POD_TARGET_CONTROL_NAMESPACE, &opted_out).await);
    // The object webhook: the namespace is not opted in, the pod label asks.
    let asks = agent_review(&[("elbv2.k8s.aws/alb-target-control-agent-inject", "true")]);
    let obj = patched(&asks, &h.post(PATH_MUTATE_POD_TARGET_CONTROL_OBJECT, &asks).await);
    assert_eq!(obj["spec"]["containers"][1]["image"], "agent:1");
    assert_unchanged(&h.post(PATH_MUTATE_POD_TARGET_CONTROL_OBJECT, &agent_review(&[])).await);
    let typo = agent_review(&[("elbv2.k8s.aws/alb-target-control-agent-inject", "yes")]);
    assert_denied(&h.post(PATH_MUTATE_POD_TARGET_CONTROL_NAMESPACE, &typo).await, 403, &["\"yes\""]);
    let mut bad = agent_review(&[]);
    set(
        &mut bad,
        "/request/object/metadata/annotations",
        json!({"elbv2.k8s.aws/alb-target-control-agent-cpu-limit": "lots"}),
    );
    assert_denied(&h.post(PATH_MUTATE_POD_TARGET_CONTROL_NAMESPACE, &bad).await, 403, &["cpu-limit", "quantity"]);
}

#[tokio::test]
async fn without_the_gate_or_a_config_the_pod_is_admitted_and_told_why() {
    let review = agent_review(&[]);
    let off = target_control_harness(false, vec![target_control_config("shop", "agent:1")]);
    let resp = off.post(PATH_MUTATE_POD_TARGET_CONTROL_NAMESPACE, &review).await;
    assert_unchanged(&resp);
    assert!(resp["warnings"][0].as_str().unwrap().contains("ALBTargetControlAgent is off"), "{resp}");
    let none = target_control_harness(true, vec![target_control_config("elsewhere", "agent:1")]);
    let resp = none.post(PATH_MUTATE_POD_TARGET_CONTROL_NAMESPACE, &review).await;
    assert_unchanged(&resp);
    let w = resp["warnings"][0].as_str().unwrap();
    assert!(w.contains("namespace shop, lbc, kube-system"), "{w}");
}

// ---------------------------------------------------------------------------------------------
// Ingresses and IngressClassParams
// ---------------------------------------------------------------------------------------------

fn review_of(
    kind: (&str, &str, &str),
    resource: &str,
    ns: Option<&str>,
    op: &str,
    object: Value,
    old: Option<Value>,
) -> Value {
    let (group, version, kind) = kind;
    let gvk = json!({"group": group, "version": version, "kind": kind});
    let gvr = json!({"group": group, "version": version, "resource": resource});
    let mut request = json!({
        "uid": "1c0ffee0-0000-4000-8000-000000000001", "kind": gvk, "resource": gvr, "requestKind": gvk,
        "requestResource": gvr, "name": object["metadata"]["name"], "operation": op,
        "userInfo": {"username": "dev"}, "object": object, "dryRun": false,
    });
    if let Some(ns) = ns {
        request["namespace"] = json!(ns);
    }
    if let Some(old) = old {
        request["oldObject"] = old;
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
}

fn ingress(ns: &str, class: &str, annotations: Value) -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": "web", "namespace": ns, "annotations": annotations},
           "spec": {"ingressClassName": class, "defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}})
}

fn ingress_review(ns: &str, op: &str, object: Value, old: Option<Value>) -> Value {
    review_of(("networking.k8s.io", "v1", "Ingress"), "ingresses", Some(ns), op, object, old)
}

/// A CREATE review of Ingress `web` in `ns`.
fn create_ingress(ns: &str, class: &str, annotations: Value) -> Value {
    ingress_review(ns, "CREATE", ingress(ns, class, annotations), None)
}

/// Classes `alb` (no params), `team` (params selecting namespaces labelled team=a), `nginx`;
/// namespaces `a` (team=a) and `b`.
fn ingress_harness(config: WebhookConfig) -> Harness {
    let class = |controller: &str, params: Option<&str>| {
        let mut spec = json!({"controller": controller});
        if let Some(p) = params {
            spec["parameters"] = json!({"apiGroup": "elbv2.k8s.aws", "kind": "IngressClassParams", "name": p});
        }
        serde_json::from_value(json!({"metadata": {}, "spec": spec})).unwrap()
    };
    let mut view = StaticClusterView::default();
    view.classes.classes = [
        ("alb".to_string(), class("ingress.k8s.aws/alb", None)),
        ("team".to_string(), class("ingress.k8s.aws/alb", Some("team-params"))),
        ("nginx".to_string(), class("k8s.io/ingress-nginx", None)),
    ]
    .into();
    let params = json!({"apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "IngressClassParams",
                        "metadata": {"name": "team-params"},
                        "spec": {"namespaceSelector": {"matchLabels": {"team": "a"}}}});
    view.classes.params = [("team-params".to_string(), serde_json::from_value(params).unwrap())].into();
    view.namespaces = [
        ("a".to_string(), BTreeMap::from([("team".to_string(), "a".to_string())])),
        ("b".to_string(), BTreeMap::new()),
    ]
    .into();
    Harness::with_config(view, config)
}

#[tokio::test]
async fn ingress_valid_ours_and_foreign_admitted() {
    let h = ingress_harness(WebhookConfig::default());
    let ok = create_ingress("a", "team", json!({"alb.ingress.kubernetes.io/scheme": "internal"}));
    assert_unchanged(&h.post(PATH_VALIDATE_INGRESS, &ok).await);
    let foreign = create_ingress("b", "nginx", json!({"alb.ingress.kubernetes.io/scheme": "sideways"}));
    let resp = h.post(PATH_VALIDATE_INGRESS, &foreign).await;
    assert_unchanged(&resp);
    assert!(resp.get("warnings").is_none(), "{resp}");
    assert!(h.metrics_text().contains("vingress.elbv2.k8s.aws"));
}

#[tokio::test]
async fn ingress_denials_say_why() {
    let h = ingress_harness(WebhookConfig::default());
    let bad = create_ingress("a", "alb", json!({"alb.ingress.kubernetes.io/scheme": "sideways"}));
    assert_denied(
        &h.post(PATH_VALIDATE_INGRESS, &bad).await,
        403,
        &["alb.ingress.kubernetes.io/scheme", "\"sideways\"", "internet-facing"],
    );
    let outside = create_ingress("b", "team", json!({}));
    assert_denied(
        &h.post(PATH_VALIDATE_INGRESS, &outside).await,
        403,
        &["namespace b is not selected by the namespaceSelector of IngressClassParams team-params"],
    );
}

#[tokio::test]
async fn ingress_disabled_annotations_only_block_new_usage() {
    let config = WebhookConfig {
        ingress: lbc_model::ingress::SelectConfig {
            disable_ingress_class_annotation: true,
            disable_group_name_annotation: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let h = ingress_harness(config);
    let mut legacy = ingress("b", "alb", json!({"kubernetes.io/ingress.class": "alb"}));
    legacy["spec"].as_object_mut().unwrap().remove("ingressClassName");
    let create = ingress_review("b", "CREATE", legacy.clone(), None);
    assert_denied(&h.post(PATH_VALIDATE_INGRESS, &create).await, 403, &["kubernetes.io/ingress.class"]);
    let mut changed = legacy.clone();
    changed["metadata"]["annotations"]["alb.ingress.kubernetes.io/scheme"] = json!("internal");
    let update = ingress_review("b", "UPDATE", changed, Some(legacy));
    assert_unchanged(&h.post(PATH_VALIDATE_INGRESS, &update).await);
    let grouped = create_ingress("a", "alb", json!({"alb.ingress.kubernetes.io/group.name": "shop"}));
    assert_denied(&h.post(PATH_VALIDATE_INGRESS, &grouped).await, 403, &["group.name"]);
}

#[tokio::test]
async fn ingress_finalizer_removal_and_unsynced_cache_never_blocked() {
    let h = ingress_harness(WebhookConfig::default());
    let old = ingress("b", "team", json!({"alb.ingress.kubernetes.io/scheme": "sideways"}));
    let mut new = old.clone();
    new["metadata"]["finalizers"] = json!([]);
    assert_unchanged(&h.post(PATH_VALIDATE_INGRESS, &ingress_review("b", "UPDATE", new, Some(old.clone()))).await);

    let mut view = StaticClusterView { not_synced: true, ..Default::default() };
    view.namespaces.insert("b".into(), BTreeMap::new());
    let h = Harness::new(view);
    let resp = h.post(PATH_VALIDATE_INGRESS, &ingress_review("b", "CREATE", old, None)).await;
    assert_unchanged(&resp);
    assert!(resp["warnings"][0].as_str().unwrap().contains("caches are still loading"), "{resp}");
}

#[tokio::test]
async fn ingress_class_params_validated() {
    let h = Harness::new(StaticClusterView::default());
    let icp = |spec: Value| {
        let obj = json!({"apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "IngressClassParams",
                         "metadata": {"name": "p"}, "spec": spec});
        review_of(("elbv2.k8s.aws", "v1beta1", "IngressClassParams"), "ingressclassparams", None, "CREATE", obj, None)
    };
    let ok = icp(json!({"inboundCIDRs": ["10.0.0.0/8"], "subnets": {"tags": {"kubernetes.io/role/elb": ["1"]}}}));
    assert_unchanged(&h.post(PATH_VALIDATE_INGRESS_CLASS_PARAMS, &ok).await);
    let bad = icp(json!({"inboundCIDRs": ["10.1.2.3"], "subnets": {"ids": ["subnet-1"], "tags": {"k": ["v"]}}}));
    assert_denied(
        &h.post(PATH_VALIDATE_INGRESS_CLASS_PARAMS, &bad).await,
        403,
        &["(1) spec.inboundCIDRs[0]", "10.1.2.3/32", "(2) spec.subnets", "mutually exclusive"],
    );
    // An Ingress review sent to the params endpoint is refused as malformed.
    let wrong = create_ingress("a", "alb", json!({}));
    assert_denied(&h.post(PATH_VALIDATE_INGRESS_CLASS_PARAMS, &wrong).await, 400, &["IngressClassParams"]);
}

/// A cluster view that panics: a bug in a handler.
struct PanickyView;

impl lbc_webhook::view::ClusterView for PanickyView {
    fn bindings_in(&self, _namespace: &str) -> Vec<Arc<TargetGroupBinding>> {
        panic!("bindings_in broke")
    }
    fn all_bindings(&self) -> Vec<Arc<TargetGroupBinding>> {
        panic!("all_bindings broke")
    }
    fn service(&self, _namespace: &str, _name: &str) -> Option<Arc<Service>> {
        panic!("service broke")
    }
    fn ingress_classes(&self, _namespace: &str) -> lbc_model::ingress::ClassSnapshot {
        panic!("ingress_classes broke")
    }
    fn target_control_config(
        &self,
        _namespace: &str,
    ) -> Result<Option<Arc<lbc_model::crd::ALBTargetControlConfig>>, String> {
        panic!("target_control_config broke")
    }
}

/// A handler that panics is answered with an error and counted (controller-runtime's
/// `controller_runtime_webhook_panics_total`), not a dropped connection.
#[tokio::test]
async fn a_panicking_handler_is_answered_with_an_error_and_counted() {
    let mut h = Harness::shop();
    h.state = Arc::new(WebhookState::new(Arc::new(PanickyView), h.accounts.clone(), WebhookConfig::default()));
    let response = h.post(PATH_MUTATE_POD, &fixture("pod-create.json")).await;
    assert_eq!(response["allowed"], false, "{response}");
    assert!(response["status"]["message"].as_str().unwrap_or_default().contains("broke"), "{response}");
    let text = h.metrics_text();
    assert!(text.contains("controller_runtime_webhook_panics_total 1"), "{text}");
    assert!(text.contains("controller_runtime_webhook_requests_in_flight{webhook=\"/mutate-v1-pod\"} 0"), "{text}");
}
