//! The Helm chart installed for real on the real node (`LBC_E2E_NODE=1 e2e/up`): the controller's image from
//! `image/build` in containerd, two replicas under the chart's own securityContext, the webhooks served from the
//! pods through the API server, AWS credentials from OpenBao through the pod's projected ServiceAccount token, a
//! real Prometheus scraping the pods; then a TargetGroupBinding and a Service → NLB reconciled by the in-pod
//! leader; `helm upgrade` to a new image tag and `helm rollback` while a client calls the webhooks (0 failed
//! admission requests; AWS writes only from the Lease holder, told apart by the pod IP the node's AWS forwarder
//! adds); `helm test` (doctor in a pod); `helm uninstall` (no AWS write, no namespace wedged).
//!
//! One test, in phases: the install is the expensive part and every phase builds on the one before.

use k8s_openapi::api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use lbc_e2e::emulator::{Call, Emulator};
use lbc_e2e::helm::{Helm, IMAGE_REPOSITORY, import_controller_image};
use lbc_e2e::webhook::{gate_injected, probe_binding, probe_pod};
use lbc_e2e::{Env, aws, eventually, kube_util, unique};
use lbc_model::crd::TargetGroupBinding;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const RELEASE: &str = "aws-lb-controller";
const LEASE: &str = "aws-load-balancer-controller-leader";
const GATE: &str = "target-health.elbv2.k8s.aws/web";

#[tokio::test]
#[ignore = "end-to-end: needs the local environment with its real node (LBC_E2E_NODE=1 e2e/up); e2e/test-all runs it"]
async fn chart_installed_on_a_real_node_upgrades_rolls_back_and_uninstalls_cleanly() {
    let Some(env) = Env::require("chart_on_node") else { return };
    if env.vars().get("LBC_NODE_NAME").is_none() {
        assert!(
            std::env::var("LBC_E2E_REQUIRED").as_deref() != Ok("1"),
            "chart_on_node: LBC_E2E_REQUIRED=1 but the environment has no real node: run LBC_E2E_NODE=1 e2e/up"
        );
        eprintln!("SKIPPED chart_on_node: no real node (start the environment with LBC_E2E_NODE=1 e2e/up)");
        return;
    }
    let client = kube_util::client(&env).await;
    let emu = Emulator::new(env.aws_endpoint());
    let elb = aws::elbv2(&env).await;
    let system = unique("lbc-system");
    let apps = unique("lbc-apps");
    let helm = Helm::new(&env, &system);
    let mut cleanup = Cleanup { helm: Some(helm), env: env.clone(), namespaces: vec![] };

    // ---- images: the same binary under two tags, so the upgrade changes the pod template -----------------------
    let binary = lbc_e2e::controller::binary();
    let image_a = import_controller_image(&env, &binary, "e2e-a");
    let image_b = import_controller_image(&env, &binary, "e2e-b");
    eprintln!("[chart] images {image_a} and {image_b} imported into the node's containerd");

    // ---- namespaces and Vault: the chart's ServiceAccounts (controller, doctor) may log in ----------------------
    kube_util::namespace(&client, &system, &[]).await;
    kube_util::namespace(&client, &apps, &[("elbv2.k8s.aws/pod-readiness-gate-inject", "enabled")]).await;
    cleanup.namespaces = vec![apps.clone(), system.clone()];
    let bao = lbc_e2e::bao::up(&env);
    let (bao_addr, bao_root) = (bao["BAO_ADDR"].clone(), bao["BAO_TOKEN"].clone());
    let vault_role = format!("chart-{}", &system[system.len() - 6..]);
    let http = reqwest::Client::new();
    lbc_e2e::bao::write(
        &http,
        &bao_addr,
        &bao_root,
        &format!("auth/kubernetes/role/{vault_role}"),
        json!({"bound_service_account_names": [RELEASE, format!("{RELEASE}-doctor")], "bound_service_account_namespaces": [&system],
               "audience": "vault", "token_policies": ["lbc"], "token_ttl": "10m"}),
    )
    .await;

    // ---- the workload the controller serves: kwok pods with VPC IPs, a Service, a target group ------------------
    let tg_arn = aws::create_ip_target_group(&env, &elb, &unique("tg"), 8080).await;
    emu.tg_health(&tg_arn, 1.0, "healthy").await;
    env.pods(&["service", &apps, "web", "--port", "80", "--target-port", "8080"]);

    // ---- install ---------------------------------------------------------------------------------------------
    let values = values_file(&env, &system, &apps, &vault_role, "e2e-a");
    let helm = cleanup.helm.as_ref().unwrap();
    let mark_install = emu.mark().await;
    let started = std::time::Instant::now();
    helm.run(&["install", RELEASE, &helm.chart.to_string_lossy(), "-f", &values, "--wait", "--timeout", "5m"]);
    eprintln!("[chart] helm install --wait: {:.1}s", started.elapsed().as_secs_f64());
    let pods: Api<Pod> = Api::namespaced(client.clone(), &system);
    let running = controller_pods(&pods).await;
    assert_eq!(running.len(), 2, "2 replicas Running and Ready, found {:?}", names(&running));
    for p in &running {
        check_pod_security(p);
    }
    let leases: Api<Lease> = Api::namespaced(client.clone(), &system);
    let holder = eventually("a leader holds the Lease", 60, || async {
        let l = leases.get_opt(LEASE).await.ok()??;
        let h = l.spec?.holder_identity?;
        running.iter().any(|p| h.starts_with(&format!("{}_", p.name_any()))).then_some(h)
    })
    .await;
    eprintln!("[chart] leader: {holder}");
    let history = LeaseHistory::watch(leases.clone(), pods.clone());

    // ---- the webhooks, served from the pods through the API server --------------------------------------------
    let tgbs: Api<TargetGroupBinding> = Api::namespaced(client.clone(), &apps);
    // Mutating webhook: the binding is created without targetType; the webhook fills it from the target group.
    let binding = json!({
        "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
        "metadata": {"name": "web", "namespace": &apps},
        "spec": {"targetGroupARN": &tg_arn, "serviceRef": {"name": "web", "port": 80}},
    });
    let created: TargetGroupBinding =
        tgbs.create(&PostParams::default(), &serde_json::from_value(binding).unwrap()).await.expect("create binding");
    assert!(
        created.spec.target_type.is_some(),
        "the mutating webhook (served by the pods) fills spec.targetType from the target group: {:?}",
        created.spec
    );
    // Validating webhook: targetGroupARN is immutable.
    let other_tg = aws::create_ip_target_group(&env, &elb, &unique("tg"), 8080).await;
    let patch = json!({"spec": {"targetGroupARN": other_tg}});
    let refused = tgbs.patch("web", &kube::api::PatchParams::default(), &kube::api::Patch::Merge(&patch)).await;
    let msg = format!("{refused:?}");
    assert!(
        refused.is_err() && msg.contains("vtargetgroupbinding.elbv2.k8s.aws"),
        "the validating webhook refuses a new targetGroupARN: {msg}"
    );

    // Pods created now get the readiness gate from the pod webhook, get registered, and their gates turn True.
    env.pods(&["create", &apps, "web", "--replicas", "3", "--port", "8080", "--terminate-seconds", "3"]);
    let app_pods: Api<Pod> = Api::namespaced(client.clone(), &apps);
    for p in app_pods.list(&ListParams::default().labels("lbc-e2e/set=web")).await.unwrap() {
        let gates: Vec<String> =
            p.spec.and_then(|s| s.readiness_gates).unwrap_or_default().into_iter().map(|g| g.condition_type).collect();
        assert_eq!(
            gates,
            vec![GATE.to_string()],
            "pod {} got the gate from the in-pod webhook",
            p.metadata.name.unwrap()
        );
    }
    let want: BTreeSet<String> = env.pod_ips(&apps, "web").into_iter().map(|ip| format!("{ip}:8080")).collect();
    eventually("the in-pod leader registered the 3 pods", 90, || async {
        (aws::registered(&elb, &tg_arn).await == want).then_some(())
    })
    .await;
    eventually("the 3 readiness gates True", 90, || async {
        let s = kube_util::gate_status(&client, &apps, "web", GATE).await;
        (s.len() == 3 && s.iter().all(|(_, v)| v.as_deref() == Some("True"))).then_some(())
    })
    .await;

    // A Service of type LoadBalancer → an NLB with IP targets.
    let svcs: Api<Service> = Api::namespaced(client.clone(), &apps);
    let nlb: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web-nlb", "namespace": &apps, "annotations": {
            "service.beta.kubernetes.io/aws-load-balancer-type": "external",
            "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
            "service.beta.kubernetes.io/aws-load-balancer-scheme": "internal"}},
        "spec": {"type": "LoadBalancer", "selector": {"app": "web"},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]},
    }))
    .unwrap();
    svcs.create(&PostParams::default(), &nlb).await.expect("create LoadBalancer Service");
    let hostname = eventually("the NLB's hostname in the Service's status", 120, || async {
        let s = svcs.get("web-nlb").await.ok()?;
        s.status?.load_balancer?.ingress?.first()?.hostname.clone()
    })
    .await;
    eprintln!("[chart] NLB {hostname}");

    // ---- Vault: every AWS write was signed with keys the engine handed out (an STS session of its IAM role) ----
    // The test's own calls (creating target groups) come from the host: no X-Forwarded-For.
    let (calls, _) = emu.calls(mark_install, None).await;
    let writes: Vec<&Call> = calls.iter().filter(|c| is_write(c) && c.forwarded_for.is_some()).collect();
    assert!(!writes.is_empty(), "the in-pod controller made no AWS write through the node's forwarder");
    let sessions = emu.sts_sessions().await;
    let role_arn = &bao["LBC_BAO_AWS_ROLE_ARN"];
    for w in &writes {
        let key = w.access_key.as_deref().unwrap_or("-");
        assert_eq!(
            sessions.get(key),
            Some(role_arn),
            "{} #{} was signed with {key}, not an STS session of {role_arn} (keys from OpenBao)",
            w.operation,
            w.seq
        );
    }

    // ---- Prometheus scrapes the pods --------------------------------------------------------------------------
    let prom_bin = lbc_e2e::prometheus::binary(&env).unwrap_or_else(|e| panic!("{e}"));
    // One job per pod (the harness writes one scrape config per target).
    let targets: Vec<lbc_e2e::prometheus::Target> = running
        .iter()
        .map(|p| lbc_e2e::prometheus::Target {
            job: format!("lbc-{}", p.name_any()),
            address: format!("{}:8080", pod_ip(p)),
            pod: p.name_any(),
            namespace: system.clone(),
        })
        .collect();
    let prom = lbc_e2e::prometheus::Prometheus::start(&env, &prom_bin, &targets).await;
    eventually("Prometheus scraped both pods (up == 1) and the build info", 60, || async {
        let now = lbc_e2e::prometheus::now();
        let up = prom.query("up{job=~\"lbc-.+\"} == 1", now).await.ok()?;
        let info = prom.query("aws_lb_controller_build_info", now).await.ok()?;
        (up.len() == 2 && info.len() == 2).then_some(())
    })
    .await;
    drop(prom);

    // ---- helm upgrade to a new image tag, then rollback, while a client calls the webhooks --------------------
    // Its dry-run bindings name the unbound target group (the first one is bound: they would be refused).
    let mark_admission = emu.mark().await;
    let client_loop = AdmissionClient::start(client.clone(), &apps, &other_tg);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &system);
    let started = std::time::Instant::now();
    helm.run(&[
        "upgrade",
        RELEASE,
        &helm.chart.to_string_lossy(),
        "-f",
        &values,
        "--set",
        "image.tag=e2e-b",
        "--wait",
        "--timeout",
        "5m",
    ]);
    wait_rollout(&deployments, &pods, "e2e-b").await;
    eprintln!("[chart] upgrade rolled out in {:.1}s", started.elapsed().as_secs_f64());
    let started = std::time::Instant::now();
    helm.run(&["rollback", RELEASE, "1", "--wait", "--timeout", "5m"]);
    wait_rollout(&deployments, &pods, "e2e-a").await;
    eprintln!("[chart] rollback rolled out in {:.1}s", started.elapsed().as_secs_f64());
    // The workload is still served by the new leader: a scale-up is registered.
    env.pods(&["scale", &apps, "web", "--replicas", "4"]);
    let want: BTreeSet<String> = env.pod_ips(&apps, "web").into_iter().map(|ip| format!("{ip}:8080")).collect();
    eventually("the leader after the rollback registers a new pod", 90, || async {
        (aws::registered(&elb, &tg_arn).await == want).then_some(())
    })
    .await;
    let report = client_loop.stop().await;
    eprintln!("[chart] admission requests during upgrade and rollback: {report:?}");
    let webhook_calls = || async { slowest_webhook_calls(&emu.calls(mark_admission, None).await.0) };
    assert!(
        report.sent >= 50,
        "the admission client made too few requests to prove anything: {report:?}\nthe webhooks' slowest AWS calls \
         in the emulator:\n{}",
        webhook_calls().await
    );
    assert!(
        report.failures.is_empty(),
        "failed admission requests: {report:?}\nwhat the API server logged about the pod webhook:\n{}\nthe \
         webhooks' slowest AWS calls in the emulator:\n{}",
        apiserver_lines(&env, "mpod.elbv2.k8s.aws"),
        webhook_calls().await
    );

    // No AWS write from a pod that did not hold the Lease at that moment.
    let (calls, _) = emu.calls(mark_install, None).await;
    let ips = history.pod_ips();
    let acquisitions = history.acquisitions();
    assert!(acquisitions.len() >= 2, "the upgrade and rollback moved the Lease: {acquisitions:?}");
    let mut checked = 0;
    for w in calls.iter().filter(|c| is_write(c)) {
        let Some(ip) = w.forwarded_for.as_deref() else { continue }; // the test's own calls, from the host
        let writer = ips.get(ip).unwrap_or_else(|| panic!("write #{} from {ip}: not a controller pod {ips:?}", w.seq));
        let holder = acquisitions.iter().rev().find(|(t, _)| *t <= w.received).map(|(_, h)| h.as_str());
        assert_eq!(
            holder,
            Some(writer.as_str()),
            "write #{} {} at {:.3} came from {writer} while the Lease was {holder:?} ({acquisitions:?})",
            w.seq,
            w.operation,
            w.received
        );
        checked += 1;
    }
    eprintln!("[chart] {checked} AWS writes, each from the Lease holder of its moment");

    // ---- helm test: doctor in a pod -----------------------------------------------------------------------------
    let out = helm.run(&["test", RELEASE, "--timeout", "3m", "--logs"]);
    assert!(out.contains("Phase:") && out.contains("Succeeded"), "helm test:\n{out}");

    // ---- helm uninstall: nothing deleted in AWS, no namespace wedged --------------------------------------------
    let mark = emu.mark().await;
    let registered_before = aws::registered(&elb, &tg_arn).await;
    helm.run(&["uninstall", RELEASE, "--wait", "--timeout", "3m"]);
    eventually("the controller pods gone", 90, || async { controller_pods_any(&pods).await.is_empty().then_some(()) })
        .await;
    let (calls, _) = emu.calls(mark, None).await;
    let writes: Vec<String> =
        calls.iter().filter(|c| is_write(c) && c.forwarded_for.is_some()).map(|c| c.operation.clone()).collect();
    assert!(writes.is_empty(), "the controller wrote to AWS during helm uninstall: {writes:?}");
    assert_eq!(aws::registered(&elb, &tg_arn).await, registered_before, "targets changed by the uninstall");
    assert!(tgbs.get_opt("web").await.unwrap().is_some(), "the TargetGroupBinding survives the uninstall");
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    assert!(mutating.get_opt(&format!("{RELEASE}-webhook")).await.unwrap().is_none(), "mutating webhooks left");
    assert!(validating.get_opt(&format!("{RELEASE}-webhook")).await.unwrap().is_none(), "validating webhooks left");
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces.delete(&system, &Default::default()).await.expect("delete the release namespace");
    eventually("the release namespace deleted (nothing of ours holds it)", 60, || async {
        namespaces.get_opt(&system).await.ok()?.is_none().then_some(())
    })
    .await;
    // The application namespace's objects carry our finalizers: without a controller they wait for one
    // (docs/install.md, "Uninstall"). The cleanup guard strips them so the test leaves nothing behind.
    cleanup.helm = None;
}

/// Values of the test's release: the chart's defaults except what this environment needs (no kube-proxy, no
/// DNS, no registry: docs in e2e/README.md, "The real node").
fn values_file(env: &Env, system: &str, apps: &str, vault_role: &str, tag: &str) -> String {
    let aws = env.get("LBC_NODE_AWS_URL");
    let api_url = env.get("LBC_NODE_API_URL");
    let (api_host, api_port) = api_url
        .strip_prefix("https://")
        .and_then(|hp| hp.trim_end_matches('/').rsplit_once(':'))
        .unwrap_or_else(|| panic!("LBC_NODE_API_URL {api_url:?} is not https://HOST:PORT"));
    let (label_key, label_value) = env.get("LBC_NODE_LABEL").split_once('=').expect("LBC_NODE_LABEL is key=value");
    let only_apps = json!([{"key": "kubernetes.io/metadata.name", "operator": "In", "values": [apps]}]);
    let values = json!({
        "clusterName": env.get("LBC_CLUSTER_NAME"),
        "region": env.get("AWS_REGION"),
        "vpcId": env.get("LBC_VPC_ID"),
        "image": {"repository": IMAGE_REPOSITORY, "tag": tag, "pullPolicy": "Never"},
        "replicaCount": 2,
        "watchNamespace": apps,
        "createIngressClassResource": false,
        "nodeSelector": {label_key: label_value},
        "awsApiEndpoints": format!(
            "Elastic Load Balancing v2={aws},EC2={aws},STS={aws},ACM={aws},WAFV2={aws},WAF Regional={aws},Shield={aws},Route 53={aws}"
        ),
        // The lab's OpenBao listens on plain HTTP at the node's gateway: accepted only when asked for.
        "awsCredentials": {"source": "vault", "vault": {
            "address": env.get("LBC_NODE_BAO_URL"), "authRole": vault_role, "secretsRole": "lbc",
            "insecureHttp": true}},
        // No kube-proxy here: the in-cluster client goes to the API server's forwarder on the node's gateway.
        "env": {"KUBERNETES_SERVICE_HOST": api_host, "KUBERNETES_SERVICE_PORT": api_port},
        "dnsPolicy": "Default",
        "leaderElection": {"leaseDurationSeconds": 15},
        "webhookNamespaceSelectors": only_apps,
        "serviceMutatorWebhookConfig": {"namespaceSelectors": only_apps},
        "enableBackendSecurityGroup": false,
        "logLevel": "info,aws_lb_controller=debug",
        "extraArgs": {"enable-backend-security-group-rules": "false"},
    });
    let path = std::env::temp_dir().join(format!("{system}-values.yaml"));
    std::fs::write(&path, serde_json::to_string_pretty(&values).unwrap()).unwrap();
    path.to_string_lossy().into_owned()
}

fn is_write(c: &Call) -> bool {
    !["Describe", "List", "Get"].iter().any(|read| c.operation.starts_with(read))
        && c.service != "sts"
        && c.service != "iam"
}

fn names(pods: &[Pod]) -> Vec<String> {
    pods.iter().map(|p| p.name_any()).collect()
}

fn pod_ip(p: &Pod) -> String {
    p.status.as_ref().and_then(|s| s.pod_ip.clone()).unwrap_or_default()
}

/// The controller's pods, all of them (any phase, terminating too).
async fn controller_pods_any(pods: &Api<Pod>) -> Vec<Pod> {
    pods.list(&ListParams::default().labels(&format!("app.kubernetes.io/name={RELEASE}"))).await.unwrap().items
}

/// Waits until exactly the controller's Running and Ready pods remain (2), none terminating; returns them.
async fn controller_pods(pods: &Api<Pod>) -> Vec<Pod> {
    eventually("2 controller pods Running and Ready, none terminating", 180, || async {
        let all = controller_pods_any(pods).await;
        let ready = all.iter().filter(|p| p.metadata.deletion_timestamp.is_none() && is_ready(p)).count();
        (all.len() == 2 && ready == 2).then_some(all)
    })
    .await
}

fn is_ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The rollout of `tag` finished: the Deployment's pods all run that image, 2 Ready, none left terminating.
async fn wait_rollout(deployments: &Api<Deployment>, pods: &Api<Pod>, tag: &str) {
    let image = format!("{IMAGE_REPOSITORY}:{tag}");
    eventually(&format!("the Deployment rolled out {image}"), 300, || async {
        let d = deployments.get(RELEASE).await.ok()?;
        let st = d.status?;
        (st.updated_replicas == Some(2) && st.ready_replicas == Some(2) && st.replicas == Some(2)).then_some(())?;
        let all = controller_pods_any(pods).await;
        let on_tag = all.iter().all(|p| {
            p.spec.as_ref().is_some_and(|s| s.containers.iter().all(|c| c.image.as_deref() == Some(image.as_str())))
        });
        (all.len() == 2 && on_tag && all.iter().all(is_ready)).then_some(())
    })
    .await;
}

/// The pod runs as the chart says a security review wants it: non-root uid 65532, read-only root, no privilege
/// escalation, all capabilities dropped, a projected token for Vault only.
fn check_pod_security(p: &Pod) {
    let spec = p.spec.as_ref().unwrap();
    let c = &spec.containers[0];
    let sc = c.security_context.as_ref().expect("container securityContext");
    assert_eq!(sc.read_only_root_filesystem, Some(true), "{}: read-only root", p.name_any());
    assert_eq!(sc.allow_privilege_escalation, Some(false), "{}: no privilege escalation", p.name_any());
    let drop = sc.capabilities.as_ref().and_then(|c| c.drop.clone()).unwrap_or_default();
    assert!(drop.iter().any(|d| d == "ALL"), "{}: capabilities dropped: {drop:?}", p.name_any());
    let uid = sc.run_as_user.or(spec.security_context.as_ref().and_then(|s| s.run_as_user));
    assert_eq!(uid, Some(65532), "{}: uid 65532", p.name_any());
    let projected = spec.volumes.as_ref().unwrap().iter().any(|v| {
        v.projected.as_ref().is_some_and(|pr| {
            pr.sources
                .iter()
                .flatten()
                .any(|s| s.service_account_token.as_ref().is_some_and(|t| t.audience.as_deref() == Some("vault")))
        })
    });
    assert!(projected, "{}: a projected ServiceAccount token with audience vault", p.name_any());
}

/// Every acquisition of the Lease (its acquireTime, as Unix seconds, and the pod that acquired it), and the IP
/// of every controller pod (old pods of a rollout are gone by the time the writes are checked), both recorded
/// from watches.
struct LeaseHistory {
    acquired: Arc<Mutex<BTreeMap<u64, String>>>,
    ips: Arc<Mutex<BTreeMap<String, String>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl LeaseHistory {
    fn watch(leases: Api<Lease>, pods: Api<Pod>) -> Self {
        use futures::StreamExt;
        let acquired = Arc::new(Mutex::new(BTreeMap::new()));
        let ips = Arc::new(Mutex::new(BTreeMap::new()));
        let seen = ips.clone();
        let pod_task = tokio::spawn(async move {
            let cfg = watcher::Config::default().labels(&format!("app.kubernetes.io/name={RELEASE}"));
            let mut stream = std::pin::pin!(watcher(pods, cfg).applied_objects());
            while let Some(Ok(p)) = stream.next().await {
                let ip = pod_ip(&p);
                if !ip.is_empty() {
                    seen.lock().unwrap().insert(ip, p.name_any());
                }
            }
        });
        let record = acquired.clone();
        let lease_task = tokio::spawn(async move {
            let cfg = watcher::Config::default().fields(&format!("metadata.name={LEASE}"));
            let mut stream = std::pin::pin!(watcher(leases, cfg).applied_objects());
            while let Some(Ok(l)) = stream.next().await {
                let Some(spec) = l.spec else { continue };
                let (Some(holder), Some(at)) = (spec.holder_identity, spec.acquire_time) else { continue };
                if holder.is_empty() {
                    continue;
                }
                let micros = at.0.as_microsecond() as u64;
                let pod = holder.rsplit_once('_').map(|(p, _)| p.to_string()).unwrap_or(holder);
                record.lock().unwrap().insert(micros, pod);
            }
        });
        Self { acquired, ips, tasks: vec![pod_task, lease_task] }
    }

    /// (acquired at, Unix seconds; pod), oldest first.
    fn acquisitions(&self) -> Vec<(f64, String)> {
        self.acquired.lock().unwrap().iter().map(|(t, p)| (*t as f64 / 1e6, p.clone())).collect()
    }

    /// Pod IP → pod name of every controller pod seen since the watch started.
    fn pod_ips(&self) -> BTreeMap<String, String> {
        self.ips.lock().unwrap().clone()
    }
}

impl Drop for LeaseHistory {
    fn drop(&mut self) {
        self.tasks.iter().for_each(|t| t.abort());
    }
}

#[derive(Debug)]
struct AdmissionReport {
    sent: u64,
    failures: Vec<String>,
}

/// Calls the webhooks through the API server until stopped, from [`CLIENT_LOOPS`] loops at once, each pausing
/// 100 ms between rounds: a dry-run TargetGroupBinding create (mutating + validating, failurePolicy Fail) and a
/// dry-run pod create in the opted-in namespace (its gate must be injected: the pod webhook fails open, so a
/// missing gate is how its failure shows). Several loops: one round takes about a second through the node's
/// webhook path, and one loop alone sent 44–66 requests over the two rollouts, too close to the proof's floor.
struct AdmissionClient {
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    failures: Arc<Mutex<Vec<String>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

const CLIENT_LOOPS: usize = 3;

impl AdmissionClient {
    fn start(client: Client, apps: &str, tg_arn: &str) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let failures = Arc::new(Mutex::new(Vec::new()));
        let tasks: Vec<_> = (0..CLIENT_LOOPS)
            .map(|l| {
                let (stop, sent, failures) = (stop.clone(), sent.clone(), failures.clone());
                let tgbs: Api<TargetGroupBinding> = Api::namespaced(client.clone(), apps);
                let pods: Api<Pod> = Api::namespaced(client.clone(), apps);
                let (apps, tg_arn) = (apps.to_string(), tg_arn.to_string());
                tokio::spawn(async move {
                    let dry = PostParams { dry_run: true, ..Default::default() };
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        i += 1;
                        let name = format!("probe-{l}-{i}");
                        sent.fetch_add(1, Ordering::Relaxed);
                        match tgbs.create(&dry, &probe_binding(&apps, &name, &tg_arn)).await {
                            Ok(b) if b.spec.target_type.is_some() => {}
                            Ok(b) => {
                                failures.lock().unwrap().push(format!("binding {l}-{i}: not mutated: {:?}", b.spec))
                            }
                            Err(e) => failures.lock().unwrap().push(format!("binding {l}-{i}: {e}")),
                        }
                        sent.fetch_add(1, Ordering::Relaxed);
                        match pods.create(&dry, &probe_pod(&apps, &name, Some("lbc-e2e-node-a"))).await {
                            Ok(p) if gate_injected(&p) => {}
                            Ok(_) => failures
                                .lock()
                                .unwrap()
                                .push(format!("pod {l}-{i} at {}: no readiness gate injected", jiff::Timestamp::now())),
                            Err(e) => failures.lock().unwrap().push(format!("pod {l}-{i}: {e}")),
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                })
            })
            .collect();
        Self { stop, sent, failures, tasks }
    }

    async fn stop(self) -> AdmissionReport {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            let _ = t.await;
        }
        AdmissionReport { sent: self.sent.load(Ordering::Relaxed), failures: self.failures.lock().unwrap().clone() }
    }
}

/// The TargetGroupBinding webhook's AWS calls (DescribeTargetGroups, DescribeTags) made from the node's pods, the
/// ten slowest to answer, with when each arrived: whether an admission that waited on AWS waited on the emulator
/// or before its request reached it.
fn slowest_webhook_calls(calls: &[Call]) -> String {
    let mut mine: Vec<&Call> = calls
        .iter()
        .filter(|c| {
            c.forwarded_for.is_some() && matches!(c.operation.as_str(), "DescribeTags" | "DescribeTargetGroups")
        })
        .collect();
    let count = mine.len();
    mine.sort_by(|a, b| (b.time - b.received).total_cmp(&(a.time - a.received)));
    let lines: Vec<String> = mine
        .iter()
        .take(10)
        .map(|c| {
            format!(
                "  {} from {} received at {:.3}, answered in {:.3}s ({})",
                c.operation,
                c.forwarded_for.as_deref().unwrap_or("?"),
                c.received,
                c.time - c.received,
                c.outcome
            )
        })
        .collect();
    format!("{count} calls; slowest:\n{}", lines.join("\n"))
}

/// The API server's warnings and errors naming `what` (a webhook failing open logs only there).
fn apiserver_lines(env: &Env, what: &str) -> String {
    let log = std::path::Path::new(env.get("LBC_E2E_ROOT")).join("logs/kube-apiserver.log");
    let text = std::fs::read_to_string(&log).unwrap_or_else(|e| format!("cannot read {}: {e}", log.display()));
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('I') && l.contains(what)).collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Leaves nothing behind when the test fails half-way: the release uninstalled (its cluster-scoped webhooks
/// would gate later tests), our finalizers stripped from the test's objects, the namespaces deleted.
struct Cleanup {
    helm: Option<Helm>,
    env: Env,
    namespaces: Vec<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(h) = &self.helm {
            let _ = h.try_run(&["uninstall", RELEASE, "--wait", "--timeout", "2m"]);
        }
        // On a thread and runtime of its own, with a client of its own: the test's runtime is blocked in this
        // drop, and a client made on it would wait for it forever.
        let (env, namespaces) = (self.env.clone(), std::mem::take(&mut self.namespaces));
        let done = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let client = kube_util::client(&env).await;
                for ns in &namespaces {
                    strip_finalizers(&client, ns).await;
                    kube_util::delete_namespace(&client, ns).await;
                }
            });
        });
        let _ = done.join();
    }
}

/// Removes every finalizer from the bindings and Services of `ns` (no controller is left to honour them).
async fn strip_finalizers(client: &Client, ns: &str) {
    let patch = kube::api::Patch::Merge(json!({"metadata": {"finalizers": null}}));
    let pp = kube::api::PatchParams::default();
    let tgbs: Api<TargetGroupBinding> = Api::namespaced(client.clone(), ns);
    for b in tgbs.list(&ListParams::default()).await.map(|l| l.items).unwrap_or_default() {
        let _ = tgbs.patch(&b.name_any(), &pp, &patch).await;
    }
    let svcs: Api<Service> = Api::namespaced(client.clone(), ns);
    for s in svcs.list(&ListParams::default()).await.map(|l| l.items).unwrap_or_default() {
        let _ = svcs.patch(&s.name_any(), &pp, &patch).await;
    }
}
