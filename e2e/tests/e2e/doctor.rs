//! `aws-lb-controller doctor` against the local environment: one test per failure mode, each
//! injected for real (a misspelt cluster name, a removed role tag, an overlay pod IP, a sealed
//! OpenBao, a CCM-owned Service, a namespace without the gate label, a CRD version no longer
//! served, an IAM action refused by the emulator), and a healthy setup (controller, webhooks,
//! gated pods, binding) where every check passes and doctor exits 0.
//!
//! Some injections are cluster-wide (a CRD, the emulator's faults, the seeded subnets' tags), so
//! the tests of this file run one at a time (`LOCK`) and undo them before asserting.

use k8s_openapi::api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use lbc_aws::net::Networking;
use lbc_e2e::controller::{ControllerProc, binary};
use lbc_e2e::emulator::Emulator;
use lbc_e2e::tenant::PolicyFile;
use lbc_e2e::webhook::{webhook, write_cert};
use lbc_e2e::{Env, aws, eventually, kube_util, unique};
use lbc_model::lb::Tags;
use serde_json::{Value, json};
use std::process::Command;

static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Access key doctor signs with: its calls can be told apart in the emulator's call log.
const DOCTOR_KEY: &str = "E2EDOCTOR";
const GATE_LABEL: &str = "elbv2.k8s.aws/pod-readiness-gate-inject";

struct Report {
    code: i32,
    json: Value,
    text: String,
}

impl Report {
    /// Verdicts of `check` with `status`.
    fn with(&self, check: &str, status: &str) -> Vec<&Value> {
        self.json["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .filter(|v| v["check"] == check && v["status"] == status)
            .collect()
    }

    /// The one failing verdict of `check` whose object contains `object`; panics with the report otherwise.
    fn failure(&self, check: &str, object: &str) -> &Value {
        assert_eq!(self.code, 1, "doctor must exit 1 on a failed check:\n{}", self.text);
        self.with(check, "fail")
            .into_iter()
            .find(|v| v["object"].as_str().unwrap_or_default().contains(object))
            .unwrap_or_else(|| panic!("no failing {check} verdict about {object:?}:\n{}", self.text))
    }
}

/// Every AWS API doctor calls, at the emulator.
fn endpoints(env: &Env) -> String {
    format!(
        "Elastic Load Balancing v2={e},EC2={e},STS={e},ACM={e},WAFV2={e},WAF Regional={e},Shield={e},Route 53={e}",
        e = env.aws_endpoint()
    )
}

/// Runs `aws-lb-controller [controller flags] doctor --output json [doctor flags]` for namespace
/// `ns`; `flags` override the defaults of the same name.
fn doctor(env: &Env, ns: &str, flags: &[&str], doctor_flags: &[&str]) -> Report {
    let defaults = [
        format!("--cluster-name={}", env.get("LBC_CLUSTER_NAME")),
        format!("--aws-region={}", env.get("AWS_REGION")),
        format!("--aws-vpc-id={}", env.get("LBC_VPC_ID")),
        format!("--aws-api-endpoints={}", endpoints(env)),
        format!("--watch-namespace={ns}"),
    ];
    let overridden = |d: &String| flags.iter().any(|f| f.split('=').next() == d.split('=').next());
    let run = |format: &str| {
        Command::new(binary())
            .args(defaults.iter().filter(|d| !overridden(d)))
            .args(flags)
            .arg("doctor")
            .arg(format!("--output={format}"))
            .args(doctor_flags)
            .envs(env.vars())
            .env("AWS_ACCESS_KEY_ID", DOCTOR_KEY)
            .output()
            .expect("run aws-lb-controller doctor")
    };
    let out = run("json");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("doctor printed no JSON ({e}): {}\n{stderr}", String::from_utf8_lossy(&out.stdout)));
    let text = String::from_utf8_lossy(&run("text").stdout).into_owned();
    eprintln!("doctor for {ns}:\n{text}{stderr}");
    Report { code: out.status.code().expect("exit code"), json, text }
}

async fn namespace(env: &Env, prefix: &str, labels: &[(&str, &str)]) -> (kube::Client, String) {
    let client = kube_util::client(env).await;
    let ns = unique(prefix);
    kube_util::namespace(&client, &ns, labels).await;
    (client, ns)
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn doctor_names_a_swapped_cluster_name() {
    let Some(env) = Env::require("doctor_names_a_swapped_cluster_name") else { return };
    let _one = LOCK.lock().await;
    let (client, ns) = namespace(&env, "doc-tag", &[]).await;
    // The subnets say e2e-cluster; the controller was started as cluster-e2e.
    let ours = env.get("LBC_CLUSTER_NAME");
    let swapped: String = ours.split('-').rev().collect::<Vec<_>>().join("-");
    assert_ne!(swapped, ours);
    let r = doctor(&env, &ns, &[&format!("--cluster-name={swapped}")], &[]);
    let v = r.failure("cluster-tag", "subnets of VPC");
    assert!(
        v["found"].as_str().unwrap().contains(&format!("kubernetes.io/cluster/{ours}"))
            && v["found"].as_str().unwrap().contains("same parts in another order"),
        "{v}"
    );
    assert_eq!(v["expected"], format!("kubernetes.io/cluster/{swapped} on the load balancer subnets"));
    assert!(v["fix"].as_str().unwrap().contains("--cluster-name"), "{v}");
    kube_util::delete_namespace(&client, &ns).await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn doctor_names_a_missing_role_tag() {
    let Some(env) = Env::require("doctor_names_a_missing_role_tag") else { return };
    let _one = LOCK.lock().await;
    let (client, ns) = namespace(&env, "doc-role", &[]).await;
    let net = aws::networking(&env).await;
    let private: Vec<String> = env.get("LBC_PRIVATE_SUBNET_IDS").split(',').map(str::to_string).collect();
    let role = "kubernetes.io/role/internal-elb";
    net.delete_tags(&private, &[role.to_string()]).await.expect("remove the role tag");
    // As discovery: no subnet tagged for the role, so the route tables decide (ALBC's default gate).
    let by_route = doctor(&env, &ns, &[], &[]);
    let tags_only = doctor(&env, &ns, &["--feature-gates=SubnetDiscoveryByReachability=false"], &[]);
    // Put the tag back before asserting: the other suites need it.
    let tags: Tags = [(role.to_string(), "1".to_string())].into();
    net.create_tags(&private, &tags).await.expect("restore the role tag");
    let ok = by_route.with("subnet-roles", "ok");
    let v = ok.iter().find(|v| v["object"].as_str().unwrap_or_default().contains(role)).expect("internal ok by route");
    assert!(v["found"].as_str().unwrap().contains("by route table (private subnets"), "{v}");
    let v = tags_only.failure("subnet-roles", role);
    assert!(v["found"].as_str().unwrap().contains("no internal-role subnet"), "{v}");
    assert!(v["fix"].as_str().unwrap().contains(&format!("Key={role},Value=1")), "{v}");
    kube_util::delete_namespace(&client, &ns).await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn doctor_names_an_overlay_pod_ip() {
    let Some(env) = Env::require("doctor_names_an_overlay_pod_ip") else { return };
    let _one = LOCK.lock().await;
    let (client, ns) = namespace(&env, "doc-overlay", &[]).await;
    // A pod on a Canal-style address (kwok reports the annotation as its podIP), behind a bound Service.
    let node = env.get("LBC_NODES").split(',').next().expect("a node").to_string();
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "overlay-0", "labels": {"app": "overlay"}, "annotations": {"lbc-e2e/pod-ip": "10.42.7.9"}},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "registry.invalid/overlay", "ports": [{"containerPort": 8080}]}]}});
    Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &serde_json::from_value(pod).unwrap())
        .await
        .expect("create pod");
    env.pods(&["service", &ns, "overlay", "--port", "80", "--target-port", "8080", "--selector", "app=overlay"]);
    let arn = format!(
        "arn:aws:elasticloadbalancing:{}:123456789012:targetgroup/doc-overlay/0123456789abcdef",
        env.get("AWS_REGION")
    );
    kube_util::create_binding(&client, &ns, "overlay", "overlay", 80, &arn).await;
    let slices: Api<k8s_openapi::api::discovery::v1::EndpointSlice> = Api::namespaced(client.clone(), &ns);
    eventually("the overlay address in the Service's EndpointSlice", 60, || async {
        let l = slices.list(&Default::default()).await.ok()?;
        l.items.iter().flat_map(|s| &s.endpoints).any(|e| e.addresses.iter().any(|a| a == "10.42.7.9")).then_some(())
    })
    .await;
    let r = doctor(&env, &ns, &[], &[]);
    let v = r.failure("pod-ips", &format!("Service {ns}/overlay"));
    let found = v["found"].as_str().unwrap();
    assert!(found.contains("pod overlay-0 has 10.42.7.9") && found.contains("Canal/Flannel"), "{v}");
    assert!(v["fix"].as_str().unwrap().contains("ipam: eni"), "{v}");
    kube_util::delete_namespace(&client, &ns).await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn doctor_names_a_sealed_vault() {
    let Some(env) = Env::require("doctor_names_a_sealed_vault") else { return };
    let _one = LOCK.lock().await;
    lbc_e2e::bao::up(&env);
    let sealed = lbc_e2e::bao::SealedBao::start(&env).await;
    let (client, ns) = namespace(&env, "doc-vault", &[]).await;
    let token = env.run_dir().join(format!("{ns}-token.jwt"));
    std::fs::write(&token, "not-a-real-token").unwrap();
    let r = doctor(
        &env,
        &ns,
        &[
            "--aws-credentials-source=vault",
            &format!("--vault-address={}", sealed.addr),
            "--vault-auth-role=lbc",
            "--vault-secrets-role=lbc",
            &format!("--vault-token-path={}", token.display()),
        ],
        &["--credentials-timeout=10s"],
    );
    drop(sealed);
    let v = r.failure("credentials", "--aws-credentials-source=vault");
    assert!(v["found"].as_str().unwrap().contains("is sealed"), "{v}");
    assert!(v["fix"].as_str().unwrap().contains("unseal"), "{v}");
    // The checks that need AWS keys are not left out: each fails, naming the sealed Vault.
    for check in ["cluster-tag", "subnet-roles", "pod-ips", "permissions"] {
        let lines = r.with(check, "fail");
        assert_eq!(lines.len(), 1, "{check}: one line, failed:\n{}", r.text);
        let found = lines[0]["found"].as_str().unwrap();
        assert!(found.starts_with("not run: credentials failed: ") && found.contains("is sealed"), "{check}: {found}");
        assert!(lines[0]["fix"].as_str().unwrap().contains("the credentials line"), "{}", lines[0]);
        assert!(r.with(check, "ok").is_empty() && r.with(check, "warn").is_empty(), "{check}:\n{}", r.text);
    }
    // The cluster-side checks ran.
    for check in ["conflicts", "nodes", "crds", "throttle", "tenancy"] {
        assert!(!r.with(check, "ok").is_empty(), "{check} ran:\n{}", r.text);
    }
    let _ = std::fs::remove_file(token);
    kube_util::delete_namespace(&client, &ns).await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn doctor_names_a_service_the_ccm_owns() {
    let Some(env) = Env::require("doctor_names_a_service_the_ccm_owns") else { return };
    let _one = LOCK.lock().await;
    let (client, ns) = namespace(&env, "doc-ccm", &[]).await;
    let services: Api<Service> = Api::namespaced(client.clone(), &ns);
    let svc = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "legacy", "finalizers": ["service.kubernetes.io/load-balancer-cleanup"]},
        "spec": {"type": "LoadBalancer", "selector": {"app": "legacy"}, "ports": [{"port": 80, "targetPort": 8080}]}});
    services.create(&PostParams::default(), &serde_json::from_value(svc).unwrap()).await.expect("create Service");
    let status = json!({"status": {"loadBalancer": {"ingress": [{"hostname": "a1b2c3d4e5-123456789.us-east-1.elb.amazonaws.com"}]}}});
    services.patch_status("legacy", &PatchParams::default(), &Patch::Merge(status)).await.expect("status");
    let r = doctor(&env, &ns, &[], &[]);
    let clear = json!({"metadata": {"finalizers": null}});
    services.patch("legacy", &PatchParams::default(), &Patch::Merge(clear)).await.expect("drop the finalizer");
    let v = r.failure("conflicts", &format!("Service {ns}/legacy"));
    let found = v["found"].as_str().unwrap();
    assert!(
        found.contains("no spec.loadBalancerClass")
            && found.contains("finalizer service.kubernetes.io/load-balancer-cleanup")
            && found.contains("a1b2c3d4e5-123456789.us-east-1.elb.amazonaws.com"),
        "{v}"
    );
    assert!(v["fix"].as_str().unwrap().contains("loadBalancerClass"), "{v}");
    kube_util::delete_namespace(&client, &ns).await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn doctor_names_a_namespace_without_the_gate_label() {
    let Some(env) = Env::require("doctor_names_a_namespace_without_the_gate_label") else { return };
    let _one = LOCK.lock().await;
    let (client, ns) = namespace(&env, "doc-nogate", &[]).await;
    // Pods that carry our gate (created when the namespace was still labelled), the label gone.
    let gate = "target-health.elbv2.k8s.aws/web";
    env.pods(&["create", &ns, "web", "--replicas", "2", "--port", "8080", "--readiness-gates", gate, "--no-wait"]);
    env.pods(&["service", &ns, "web", "--port", "80", "--target-port", "8080"]);
    let arn = format!(
        "arn:aws:elasticloadbalancing:{}:123456789012:targetgroup/doc-nogate/0123456789abcdef",
        env.get("AWS_REGION")
    );
    kube_util::create_binding(&client, &ns, "web", "web", 80, &arn).await;
    let r = doctor(&env, &ns, &[], &[]);
    let v = r.failure("webhooks", &format!("Namespace {ns}"));
    assert!(v["found"].as_str().unwrap().contains("web-0"), "{v}");
    assert_eq!(v["fix"], format!("kubectl label namespace {ns} {GATE_LABEL}=enabled"));
    kube_util::delete_namespace(&client, &ns).await;
}

/// The tenancy check names what the policy does not cover beyond the bindings' specs: a binding on
/// a target group without our ownership tags (Terraform's) and an Ingress that joins a group and
/// is selected by the legacy class annotation. Compatible mode: warnings (exposures); strict mode:
/// failures (refusals); a grant clears each.
#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn doctor_names_untagged_target_groups_and_ingress_group_choices() {
    let Some(env) = Env::require("doctor_names_untagged_target_groups_and_ingress_group_choices") else { return };
    let _one = LOCK.lock().await;
    let (client, ns) = namespace(&env, "doc-tenancy", &[]).await;
    let elb = aws::elbv2(&env).await;
    let arn = aws::create_ip_target_group(&env, &elb, &unique("tf-web"), 8080).await;
    env.pods(&["service", &ns, "web", "--port", "80", "--target-port", "8080"]);
    kube_util::create_binding(&client, &ns, "web", "web", 80, &arn).await;
    let ingress: k8s_openapi::api::networking::v1::Ingress = serde_json::from_value(json!({
        "metadata": {"name": "shop", "annotations": {
            "kubernetes.io/ingress.class": "alb", "alb.ingress.kubernetes.io/group.name": "shared"}},
        "spec": {"rules": [{"http": {"paths": [{"path": "/", "pathType": "Prefix",
            "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]},
    }))
    .unwrap();
    Api::namespaced(client.clone(), &ns).create(&PostParams::default(), &ingress).await.expect("Ingress");

    let r = doctor(&env, &ns, &["--tenancy-mode=compatible"], &[]);
    let warned: Vec<String> =
        r.with("tenancy", "warn").iter().map(|v| v["object"].as_str().unwrap().to_string()).collect();
    assert!(warned.contains(&format!("TargetGroupBinding {ns}/web")), "{}", r.text);
    assert_eq!(
        warned.iter().filter(|o| **o == format!("Ingress {ns}/shop")).count(),
        2,
        "member + annotation:\n{}",
        r.text
    );
    assert!(r.with("tenancy", "fail").is_empty(), "{}", r.text);

    let nothing = PolicyFile::new(&format!("{ns}-none"), &json!({}));
    let r = doctor(&env, &ns, &["--tenancy-mode=strict", &nothing.flag()], &[]);
    let v = r.failure("tenancy", &format!("TargetGroupBinding {ns}/web"));
    assert!(
        v["found"].as_str().unwrap().contains(&arn) && v["expected"].as_str().unwrap().contains("targetGroups"),
        "{v}"
    );
    let v = r.failure("tenancy", &format!("Ingress {ns}/shop"));
    assert!(v["found"].as_str().unwrap().starts_with("refused: "), "{v}");

    // Granted: the binding's line goes; the Ingress still chooses the legacy annotation, which no
    // grant covers (strict mode refuses it: use spec.ingressClassName).
    let granted = PolicyFile::new(
        &format!("{ns}-granted"),
        &json!({"targetGroups": [{"namespaces": [&ns], "arns": [&arn]}],
                "ingressGroups": [{"group": "shared", "namespaces": [&ns], "owner": &ns}]}),
    );
    let r = doctor(&env, &ns, &["--tenancy-mode=strict", &granted.flag()], &[]);
    let failed: Vec<String> =
        r.with("tenancy", "fail").iter().map(|v| v["found"].as_str().unwrap().to_string()).collect();
    assert_eq!(failed.len(), 1, "{}", r.text);
    assert!(failed[0].contains("kubernetes.io/ingress.class"), "{}", r.text);
    kube_util::delete_namespace(&client, &ns).await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn doctor_names_a_crd_version_no_longer_served() {
    let Some(env) = Env::require("doctor_names_a_crd_version_no_longer_served") else { return };
    let _one = LOCK.lock().await;
    let (client, ns) = namespace(&env, "doc-crd", &[]).await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = "ingressclassparams.elbv2.k8s.aws";
    let set_served = |served: bool| {
        let crds = crds.clone();
        async move {
            let mut crd = crds.get(name).await.expect("our CRD is installed");
            crd.spec.versions.iter_mut().filter(|v| v.name == "v1beta1").for_each(|v| v.served = served);
            crd.metadata.managed_fields = None;
            crds.replace(name, &PostParams::default(), &crd).await.expect("update CRD");
        }
    };
    set_served(false).await;
    let r = doctor(&env, &ns, &[], &[]);
    set_served(true).await;
    let v = r.failure("crds", name);
    assert!(v["found"].as_str().unwrap().contains("v1beta1 not served"), "{v}");
    assert!(v["fix"].as_str().unwrap().contains("crds.yaml"), "{v}");
    kube_util::delete_namespace(&client, &ns).await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn doctor_names_iam_actions_the_account_refuses() {
    let Some(env) = Env::require("doctor_names_iam_actions_the_account_refuses") else { return };
    let _one = LOCK.lock().await;
    let (client, ns) = namespace(&env, "doc-iam", &[]).await;
    let emu = Emulator::new(env.aws_endpoint());
    let denied = "User: arn:aws:iam::123456789012:user/lbc is not authorized to perform this operation";
    let f1 = emu
        .fault(json!({"service": "ec2", "operation": "CreateSecurityGroup", "code": "UnauthorizedOperation", "http_status": 403, "message": denied}))
        .await;
    let f2 = emu
        .fault(json!({"service": "elasticloadbalancing", "operation": "DescribeTargetHealth", "code": "AccessDenied", "http_status": 403, "message": denied}))
        .await;
    let r = doctor(&env, &ns, &[], &[]);
    emu.clear_fault(&f1).await;
    emu.clear_fault(&f2).await;
    for action in ["ec2:CreateSecurityGroup", "elasticloadbalancing:DescribeTargetHealth"] {
        let v = r.failure("permissions", &format!("IAM action {action}"));
        assert!(v["found"].as_str().unwrap().contains("not authorized"), "{v}");
        assert!(v["fix"].as_str().unwrap().contains("docs/iam-policy.json"), "{v}");
    }
    assert_eq!(r.with("permissions", "fail").len(), 2, "only the refused actions fail:\n{}", r.text);
    kube_util::delete_namespace(&client, &ns).await;
}

/// The healthy setup: a controller serving its webhooks, our webhook configurations
/// (`<id>-webhook`, as the chart names them for a release whose full name is `<id>`), a labelled
/// namespace whose pods got their gate from the webhook, a binding with its targets registered.
struct Healthy {
    client: kube::Client,
    id: String,
    ns: String,
    ctl: ControllerProc,
    cert_dir: std::path::PathBuf,
}

impl Healthy {
    async fn start(env: &Env, prefix: &str) -> Self {
        let id = unique(prefix);
        let (client, ns) = namespace(env, &id, &[(GATE_LABEL, "enabled"), ("lbc-e2e/webhook-test", &id)]).await;
        let cert_dir = env.run_dir().join(format!("{id}-certs"));
        let ca = write_cert(&cert_dir);
        let ctl = ControllerProc::start(
            env,
            &ns,
            &format!("{id}-leader"),
            &[&format!("--webhook-cert-dir={}", cert_dir.display())],
        );
        eventually("controller ready", 30, || async { ctl.ready().await.then_some(()) }).await;
        let port = ctl.webhook_port;
        let config = format!("{id}-webhook");
        let mwc = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration", "metadata": {"name": config},
            "webhooks": [webhook("mpod.elbv2.k8s.aws", port, "/mutate-v1-pod", &ca, &id, "Fail", ("", "v1", "pods")),
                         webhook("mtargetgroupbinding.elbv2.k8s.aws", port, "/mutate-elbv2-k8s-aws-v1beta1-targetgroupbinding", &ca, &id, "Fail", ("elbv2.k8s.aws", "v1beta1", "targetgroupbindings"))]});
        let vwc = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": {"name": config},
            "webhooks": [webhook("vtargetgroupbinding.elbv2.k8s.aws", port, "/validate-elbv2-k8s-aws-v1beta1-targetgroupbinding", &ca, &id, "Fail", ("elbv2.k8s.aws", "v1beta1", "targetgroupbindings"))]});
        let mwcs: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
        let vwcs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
        mwcs.patch(&config, &PatchParams::apply("e2e").force(), &Patch::Apply(mwc)).await.unwrap();
        vwcs.patch(&config, &PatchParams::apply("e2e").force(), &Patch::Apply(vwc)).await.unwrap();

        let elb = aws::elbv2(env).await;
        let arn = aws::create_ip_target_group(env, &elb, &unique("doc-tg"), 8080).await;
        // Made for this cluster's bindings (our cluster tag): a group without it is a tenancy
        // exposure doctor names (doctor_names_untagged_target_groups_and_ingress_group_choices).
        let tag = aws_sdk_elasticloadbalancingv2::types::Tag::builder()
            .key("elbv2.k8s.aws/cluster")
            .value(env.get("LBC_CLUSTER_NAME"))
            .build();
        elb.add_tags().resource_arns(&arn).tags(tag).send().await.expect("tag the target group");
        env.pods(&["service", &ns, "web", "--port", "80", "--target-port", "8080"]);
        let tgbs: Api<lbc_model::crd::TargetGroupBinding> = Api::namespaced(client.clone(), &ns);
        eventually("binding accepted through the webhooks", 30, || async {
            let b = json!({"apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding", "metadata": {"name": "web"},
                           "spec": {"serviceRef": {"name": "web", "port": 80}, "targetGroupARN": arn}});
            tgbs.create(&PostParams::default(), &serde_json::from_value(b).unwrap()).await.ok()
        })
        .await;
        env.pods(&["create", &ns, "web", "--replicas", "2", "--port", "8080", "--wait-ready"]);
        let want: std::collections::BTreeSet<String> =
            env.pod_ips(&ns, "web").into_iter().map(|ip| format!("{ip}:8080")).collect();
        eventually("targets registered", 60, || async { (aws::registered(&elb, &arn).await == want).then_some(()) })
            .await;
        Self { client, id, ns, ctl, cert_dir }
    }

    fn config(&self) -> String {
        format!("{}-webhook", self.id)
    }

    /// Stops the controller and removes what `start` created.
    async fn stop(self) {
        drop(self.ctl);
        let config = format!("{}-webhook", self.id);
        let _ = Api::<MutatingWebhookConfiguration>::all(self.client.clone())
            .delete(&config, &DeleteParams::default())
            .await;
        let _ = Api::<ValidatingWebhookConfiguration>::all(self.client.clone())
            .delete(&config, &DeleteParams::default())
            .await;
        kube_util::delete_namespace(&self.client, &self.ns).await;
        let _ = std::fs::remove_dir_all(&self.cert_dir);
    }
}

/// Every check of the issue has an ok verdict, and nothing failed or warned.
fn assert_all_ok(r: &Report) {
    assert_eq!(r.code, 0, "doctor must exit 0 on the healthy environment:\n{}", r.text);
    assert_eq!(r.json["summary"]["fail"], 0, "{}", r.text);
    for check in lbc_model::doctor::not_run::CHECKS {
        assert!(!r.with(check, "ok").is_empty(), "no ok verdict for {check}:\n{}", r.text);
    }
    // Justified warnings only: none is expected here.
    assert_eq!(r.json["summary"]["warn"], 0, "unexpected warnings:\n{}", r.text);
}

/// The healthy setup ([`Healthy`]): every check is ok, exit 0, and no write reached AWS.
#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn doctor_passes_on_the_healthy_environment_without_writing() {
    let Some(env) = Env::require("doctor_passes_on_the_healthy_environment_without_writing") else { return };
    let _one = LOCK.lock().await;
    let h = Healthy::start(&env, "doc-ok").await;
    let ns = h.ns.clone();
    let emu = Emulator::new(env.aws_endpoint());
    let since = emu.mark().await;
    let r = doctor(&env, &ns, &[], &[&format!("--webhook-configuration={}", h.config())]);
    let (calls, _) = emu.calls(since, None).await;
    h.stop().await;

    assert_all_ok(&r);
    let gate = r
        .with("webhooks", "ok")
        .into_iter()
        .any(|v| v["found"] == "readiness gate target-health.elbv2.k8s.aws/web injected (binding web)");
    assert!(gate, "the dry-run pod got its gate:\n{}", r.text);
    let pods = r.with("pod-ips", "ok");
    assert!(pods[0]["found"].as_str().unwrap().starts_with("2 pod IPs inside"), "{pods:?}");

    // Read-only: of doctor's calls, only EC2 DryRun probes are not reads, and nothing was created.
    let mine: Vec<&lbc_e2e::emulator::Call> =
        calls.iter().filter(|c| c.access_key.as_deref() == Some(DOCTOR_KEY)).collect();
    assert!(mine.len() > 20, "doctor's AWS calls: {}", mine.len());
    let writes = lbc_e2e::emulator::writes(&calls, DOCTOR_KEY);
    let dry_run_ops = [
        "CreateSecurityGroup",
        "AuthorizeSecurityGroupIngress",
        "RevokeSecurityGroupIngress",
        "CreateTags",
        "DeleteTags",
        "DeleteSecurityGroup",
    ];
    assert!(writes.iter().all(|w| dry_run_ops.contains(&w.as_str())), "non-DryRun writes: {writes:?}");
    for c in mine.iter().filter(|c| dry_run_ops.contains(&c.operation.as_str())) {
        assert_eq!(c.error_code.as_deref(), Some("DryRunOperation"), "{c:?}");
    }
    let net = aws::networking(&env).await;
    let probe = net
        .security_groups(&lbc_aws::net::SecurityGroupQuery::Names {
            vpc_id: env.get("LBC_VPC_ID").into(),
            names: vec!["lbc-doctor-probe".into()],
        })
        .await
        .unwrap();
    assert!(probe.is_empty(), "the DryRun created a security group: {probe:?}");
}

/// Runs a tool of the environment; panics with its output unless it succeeds.
fn tool(env: &Env, program: &std::path::Path, args: &[&str], input: Option<&str>) -> String {
    use std::io::Write;
    let mut child = Command::new(program)
        .args(args)
        .envs(env.vars())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    child.stdin.take().unwrap().write_all(input.unwrap_or_default().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{} {args:?}: {}\n{stdout}{}",
        program.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The chart's `helm test` hook (templates/tests/doctor.yaml), rendered for release `release` in
/// `ns` with `values`, as JSON documents.
fn render_hook(env: &Env, release: &str, ns: &str, values: &Value) -> Vec<Value> {
    let helm = tool(env, &env.repo.join("charts/scripts/helm.sh"), &[], None).trim().to_string();
    let file = env.run_dir().join(format!("{release}-values.json"));
    std::fs::write(&file, values.to_string()).unwrap();
    let chart = env.repo.join("charts/aws-lb-controller");
    let yaml = tool(
        env,
        std::path::Path::new(&helm),
        &[
            "template",
            release,
            chart.to_str().unwrap(),
            "-n",
            ns,
            "-f",
            file.to_str().unwrap(),
            "--show-only",
            "templates/tests/doctor.yaml",
        ],
        None,
    );
    let _ = std::fs::remove_file(file);
    // YAML to JSON with the environment's Python (PyYAML is in its venv).
    let python = std::path::Path::new(env.get("LBC_VENV")).join("bin/python");
    let json = tool(
        env,
        &python,
        &["-c", "import json, sys, yaml; print(json.dumps([d for d in yaml.safe_load_all(sys.stdin) if d]))"],
        Some(&yaml),
    );
    serde_json::from_str(&json).expect("rendered hook as JSON")
}

/// The `helm test` hook's command works: Pods do not run here (kwok fakes them, there is no
/// container runtime), so this takes the command line of the rendered test Pod and runs the built
/// binary with it against the healthy environment, authenticated as the hook's own ServiceAccount
/// (applied from the same render, with a token of it): every check is ok, exit 0, so its RBAC is
/// sufficient (nothing forbidden) and its flags are the ones doctor needs.
#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn doctor_helm_test_hook_command_passes_on_the_healthy_environment() {
    let Some(env) = Env::require("doctor_helm_test_hook_command_passes_on_the_healthy_environment") else { return };
    let _one = LOCK.lock().await;
    let h = Healthy::start(&env, "doc-hook").await;
    // fullnameOverride=<id>: the chart's webhook configurations are then <id>-webhook, the ones set up.
    let values = json!({
        "clusterName": env.get("LBC_CLUSTER_NAME"),
        "region": env.get("AWS_REGION"),
        "vpcId": env.get("LBC_VPC_ID"),
        "awsApiEndpoints": endpoints(&env),
        "watchNamespace": &h.ns,
        "fullnameOverride": &h.id,
    });
    let docs = render_hook(&env, &h.id, &h.ns, &values);
    let pod = docs.iter().find(|d| d["kind"] == "Pod").expect("the hook renders a Pod");
    let args: Vec<String> = pod["spec"]["containers"][0]["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string arg").to_string())
        .collect();
    assert_eq!(args[args.len() - 2..], ["doctor".to_string(), format!("--webhook-configuration={}", h.config())]);
    let sa = pod["spec"]["serviceAccountName"].as_str().expect("serviceAccountName").to_string();

    // The hook's ServiceAccount and RBAC, applied as Helm would before the Pod.
    let kubectl = std::path::Path::new(env.get("LBC_BIN_DIR")).join("kubectl");
    let rbac: Vec<&Value> = docs.iter().filter(|d| d["kind"] != "Pod").collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": rbac}).to_string();
    tool(&env, &kubectl, &["apply", "-f", "-"], Some(&list));
    let token = tool(&env, &kubectl, &["create", "token", &sa, "-n", &h.ns, "--duration=10m"], None);
    let kubeconfig = env.run_dir().join(format!("{}-doctor.kubeconfig", h.id));
    let config = json!({"apiVersion": "v1", "kind": "Config", "current-context": "doctor",
        "clusters": [{"name": "e2e", "cluster": {"server": env.get("LBC_KUBE_SERVER"), "certificate-authority": env.get("LBC_KUBE_CA_FILE")}}],
        "users": [{"name": sa, "user": {"token": token.trim()}}],
        "contexts": [{"name": "doctor", "context": {"cluster": "e2e", "user": sa}}]});
    std::fs::write(&kubeconfig, config.to_string()).unwrap();

    let run = |extra: &[&str]| {
        let t0 = std::time::Instant::now();
        let out = Command::new(binary())
            .args(&args)
            .args(extra)
            .envs(env.vars())
            .env("KUBECONFIG", &kubeconfig)
            .env("AWS_ACCESS_KEY_ID", DOCTOR_KEY)
            .output()
            .expect("run the hook's command");
        eprintln!("hook command{extra:?}: {:?}", t0.elapsed());
        out
    };
    let text = run(&[]);
    let json_out = run(&["--output=json"]);

    let _ = tool(&env, &kubectl, &["delete", "--ignore-not-found", "-f", "-"], Some(&list));
    let _ = std::fs::remove_file(&kubeconfig);
    h.stop().await;

    let text_out = String::from_utf8_lossy(&text.stdout).into_owned();
    eprintln!("the hook's report:\n{text_out}{}", String::from_utf8_lossy(&text.stderr));
    assert_eq!(text.status.code(), Some(0), "the hook's command must exit 0:\n{text_out}");
    assert!(text_out.ends_with(" 0 warnings, 0 failures\n"), "{text_out}");
    let r = Report {
        code: json_out.status.code().expect("exit code"),
        json: serde_json::from_slice(&json_out.stdout).expect("JSON report"),
        text: text_out,
    };
    assert_all_ok(&r);
    // Nothing was refused to the hook's ServiceAccount (a refused read is a `kubernetes` failure).
    assert!(r.with("kubernetes", "fail").is_empty(), "{}", r.text);
    let gate = r.with("webhooks", "ok").into_iter().any(|v| v["found"].as_str().unwrap().starts_with("readiness gate"));
    assert!(gate, "the dry-run Pod create was allowed and got its gate:\n{}", r.text);
}
