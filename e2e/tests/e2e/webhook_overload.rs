//! The webhook under attack: any pod of the cluster can reach the webhook Service's port, so an
//! attacker here is a plain TLS client of the controller's webhook port (what such a pod can do),
//! flooding it with (a) oversized bodies and JSON built to blow up when decoded, and (b) many
//! concurrent crafted TargetGroupBinding reviews, each naming another `iamRoleArnToAssume`, while
//! the real kube-apiserver keeps sending its own admission calls (dry-run creates of Pods and
//! TargetGroupBindings) and a real binding is created and reconciled.
//!
//! Asserted: the controller process's peak RSS (VmHWM) stays below the chart's memory limit
//! (`resources.limits.memory` in charts/aws-lb-controller/values.yaml); every admission call of the
//! API server is answered (0 failures); the attacker is refused by the limits (counted by reason);
//! the webhook holds at most its bounded number of role clients; the webhook's AWS calls are
//! counted in its own series (`awslbc_webhook_aws_api_*`) and none of the attacker's roles reached
//! the reconcilers' (`aws_api_*` shows no `sts:AssumeRole`); and the binding created during the
//! flood registers its targets.
//!
//! Without a client CA, the attacker uses fewer connections than `--webhook-max-concurrent-requests`
//! (32): with more, its requests would hold every slot and the API server's calls would be refused
//! too (503 at once; the webhook's failurePolicy applies). With `--webhook-client-ca-file` (the
//! second test: e2e/up makes the API server present a client certificate signed by the CA in
//! `LBC_WEBHOOK_CLIENT_CA_FILE`), twice that many attacker connections are refused at the TLS
//! handshake and the API server's calls are still all answered.

use k8s_openapi::api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration};
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use lbc_e2e::controller::ControllerProc;
use lbc_e2e::emulator::Emulator;
use lbc_e2e::webhook::{gate_injected, probe_binding, probe_pod, webhook, write_cert};
use lbc_e2e::{Env, albc, aws, eventually, kube_util, unique};
use lbc_model::crd::TargetGroupBinding;
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the attack lasts.
const FLOOD: Duration = Duration::from_secs(40);
/// Attacker connections sending oversized bodies, and sending crafted binding reviews: 4 + 16,
/// below the 32 requests the webhook answers at once.
const OVERSIZED_CLIENTS: usize = 4;
const REVIEW_CLIENTS: usize = 16;
/// With a client CA: attacker connections sending crafted reviews, twice the concurrency limit.
const REVIEW_CLIENTS_ABOVE_THE_LIMIT: usize = 60;

/// `resources.limits.memory` of the chart's values, in bytes.
fn chart_memory_limit(env: &Env) -> u64 {
    let path = env.repo.join("charts/aws-lb-controller/values.yaml");
    let text = std::fs::read_to_string(&path).expect("values.yaml");
    let mut section = Vec::<String>::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let depth = (line.len() - trimmed.len()) / 2;
        section.truncate(depth);
        let Some((key, value)) = trimmed.split_once(':') else { continue };
        if section == ["resources", "limits"] && key == "memory" {
            return parse_quantity(value.trim()).unwrap_or_else(|| panic!("resources.limits.memory {value:?}"));
        }
        section.push(key.to_string());
    }
    panic!("{} sets no resources.limits.memory: the overload test measures against it", path.display())
}

fn parse_quantity(q: &str) -> Option<u64> {
    let q = q.trim_matches('"');
    let units =
        [("Ki", 1u64 << 10), ("Mi", 1 << 20), ("Gi", 1 << 30), ("K", 1000), ("M", 1_000_000), ("G", 1_000_000_000)];
    for (suffix, mult) in units {
        if let Some(n) = q.strip_suffix(suffix) {
            return n.parse::<u64>().ok().map(|n| n * mult);
        }
    }
    q.parse().ok()
}

/// The pid of the controller listening on `metrics_port` (its command line names the port).
fn controller_pid(metrics_port: u16) -> u32 {
    let want = format!("--metrics-bind-addr=127.0.0.1:{metrics_port}");
    for entry in std::fs::read_dir("/proc").expect("/proc") {
        let Ok(entry) = entry else { continue };
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        if cmdline.split(|b| *b == 0).any(|a| a == want.as_bytes()) {
            return pid;
        }
    }
    panic!("no process with {want} in its command line")
}

/// A `/proc/<pid>/status` field in bytes (`VmHWM`, `VmRSS`).
fn status_kib(pid: u32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("controller status");
    let line = text.lines().find(|l| l.starts_with(&format!("{field}:"))).expect("field");
    line.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()).expect("kB value") * 1024
}

/// A crafted review of a binding naming role `i` and a target group of its account.
fn crafted_review(ns: &str, i: u64) -> Vec<u8> {
    let account = 100_000_000_000 + (i % 900_000_000_000);
    json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": format!("00000000-0000-4000-8000-{i:012}"),
            "kind": {"group": "elbv2.k8s.aws", "version": "v1beta1", "kind": "TargetGroupBinding"},
            "resource": {"group": "elbv2.k8s.aws", "version": "v1beta1", "resource": "targetgroupbindings"},
            "name": format!("attack-{i}"), "namespace": ns, "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:attacker:default"},
            "object": {
                "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
                "metadata": {"name": format!("attack-{i}"), "namespace": ns},
                "spec": {
                    "serviceRef": {"name": "web", "port": 80},
                    "targetGroupARN": format!("arn:aws:elasticloadbalancing:us-east-1:{account}:targetgroup/t{i}/{i:016x}"),
                    "targetType": "ip",
                    "iamRoleArnToAssume": format!("arn:aws:iam::{account}:role/attack-{i}"),
                    "assumeRoleExternalId": format!("x-{i}"),
                }
            },
            "oldObject": null, "dryRun": false,
        }
    })
    .to_string()
    .into_bytes()
}

/// JSON just under the body limit whose decoded form would be ~100 times larger.
fn dense_json() -> Vec<u8> {
    let mut s = String::from("[");
    while s.len() < 3 * 1024 * 1024 - 16 {
        s.push_str("{\"\":0},");
    }
    s.push_str("{}]");
    s.into_bytes()
}

#[derive(Default)]
struct Tally {
    sent: AtomicU64,
    by_status: Mutex<std::collections::BTreeMap<String, u64>>,
}

impl Tally {
    fn add(&self, outcome: String) {
        self.sent.fetch_add(1, Ordering::Relaxed);
        *self.by_status.lock().unwrap().entry(outcome).or_default() += 1;
    }
}

/// The API server's side: dry-run creates of bindings and pods through kube, one after the other,
/// each timed.
struct Legit {
    latencies: Mutex<Vec<Duration>>,
    /// The slowest call of each kind.
    slowest: Mutex<std::collections::BTreeMap<&'static str, Duration>>,
    failures: Mutex<Vec<String>>,
}

impl Legit {
    fn record(&self, kind: &'static str, took: Duration) {
        self.latencies.lock().unwrap().push(took);
        let mut slowest = self.slowest.lock().unwrap();
        let s = slowest.entry(kind).or_default();
        *s = (*s).max(took);
    }
}

async fn legit_loop(client: Client, ns: String, tg_arn: String, stop: Arc<AtomicBool>, out: Arc<Legit>) {
    let tgbs: Api<TargetGroupBinding> = Api::namespaced(client.clone(), &ns);
    let pods: Api<Pod> = Api::namespaced(client, &ns);
    let dry = PostParams { dry_run: true, ..Default::default() };
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let name = format!("probe-{i}");
        let started = Instant::now();
        let res = tgbs.create(&dry, &probe_binding(&ns, &name, &tg_arn)).await;
        out.record("binding", started.elapsed());
        match res {
            Ok(b) if b.spec.target_type.is_some() => {}
            Ok(b) => out.failures.lock().unwrap().push(format!("binding {i}: not mutated: {:?}", b.spec)),
            Err(e) => out.failures.lock().unwrap().push(format!("binding {i}: {e}")),
        }
        let started = Instant::now();
        let res = pods.create(&dry, &probe_pod(&ns, &name, None)).await;
        out.record("pod", started.elapsed());
        match res {
            Ok(p) if gate_injected(&p) => {}
            Ok(_) => out.failures.lock().unwrap().push(format!("pod {i}: no readiness gate")),
            Err(e) => out.failures.lock().unwrap().push(format!("pod {i}: {e}")),
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn webhook_flood_stays_within_memory_and_the_api_server_is_answered() {
    let Some(env) = Env::require("webhook_flood_stays_within_memory_and_the_api_server_is_answered") else { return };
    flood(&env, false).await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn with_a_client_ca_the_flood_is_refused_at_the_handshake() {
    let Some(env) = Env::require("with_a_client_ca_the_flood_is_refused_at_the_handshake") else { return };
    flood(&env, true).await;
}

/// The flood and its assertions; `client_ca`: the controller requires the API server's client
/// certificate, and the attacker (without one) uses twice the concurrency limit.
/// One flood at a time: two at once on a 2-core machine would measure the machine.
static FLOODS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn flood(env: &Env, client_ca: bool) {
    let _one_at_a_time = FLOODS.lock().await;
    let env = env.clone();
    let tag = if client_ca { "[webhook flood, client CA]" } else { "[webhook flood]" };
    let review_clients = if client_ca { REVIEW_CLIENTS_ABOVE_THE_LIMIT } else { REVIEW_CLIENTS };
    let limit = chart_memory_limit(&env);
    let client = kube_util::client(&env).await;
    let elb = aws::elbv2(&env).await;
    let emu = Emulator::new(env.aws_endpoint());
    let id = unique("whflood");
    let ns = format!("{id}-apps");
    let cert_dir = env.run_dir().join(format!("{id}-certs"));
    let ca = write_cert(&cert_dir);
    kube_util::namespace(
        &client,
        &ns,
        &[("elbv2.k8s.aws/pod-readiness-gate-inject", "enabled"), ("lbc-e2e/webhook-test", &id)],
    )
    .await;
    env.pods(&["service", &ns, "web", "--port", "80", "--target-port", "8080"]);
    // The gates' binding, the target group the probes name (a different one: a target group is bound
    // once), and the one bound during the flood.
    let gate_tg = aws::create_ip_target_group(&env, &elb, &unique("whf-gate"), 8080).await;
    let probe_tg = aws::create_ip_target_group(&env, &elb, &unique("whf-probe"), 8080).await;
    let web_tg = aws::create_ip_target_group(&env, &elb, &unique("whf-web"), 8080).await;

    let mut flags = vec![format!("--webhook-cert-dir={}", cert_dir.display())];
    if client_ca {
        let ca_file = env.get("LBC_WEBHOOK_CLIENT_CA_FILE");
        assert!(
            std::path::Path::new(ca_file).is_file(),
            "LBC_WEBHOOK_CLIENT_CA_FILE={ca_file:?} is not a file: run e2e/up (it makes the API server present a \
             webhook client certificate)"
        );
        flags.push(format!("--webhook-client-ca-file={ca_file}"));
    }
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let ctl = ControllerProc::start(&env, &ns, &format!("{id}-leader"), &flags);
    eventually("controller ready", 30, || async { ctl.ready().await.then_some(()) }).await;
    let pid = controller_pid(ctl.metrics_port);
    let port = ctl.webhook_port;
    let mwc_name = format!("{id}-mutating");
    let vwc_name = format!("{id}-validating");
    let mwcs: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let vwcs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let mwc = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": mwc_name},
        "webhooks": [webhook("mpod.elbv2.k8s.aws", port, "/mutate-v1-pod", &ca, &id, "Fail", ("", "v1", "pods")),
                     webhook("mtargetgroupbinding.elbv2.k8s.aws", port, "/mutate-elbv2-k8s-aws-v1beta1-targetgroupbinding", &ca, &id, "Fail", ("elbv2.k8s.aws", "v1beta1", "targetgroupbindings"))]});
    mwcs.patch(&mwc_name, &PatchParams::apply("e2e").force(), &Patch::Apply(mwc)).await.unwrap();
    let vwc = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": vwc_name},
        "webhooks": [webhook("vtargetgroupbinding.elbv2.k8s.aws", port, "/validate-elbv2-k8s-aws-v1beta1-targetgroupbinding", &ca, &id, "Fail", ("elbv2.k8s.aws", "v1beta1", "targetgroupbindings"))]});
    vwcs.patch(&vwc_name, &PatchParams::apply("e2e").force(), &Patch::Apply(vwc)).await.unwrap();

    // A binding of the Service the probe pods belong to, so that they get a readiness gate; then the pods
    // the flood-time binding will register (created before it: they carry no gate of it).
    kube_util::create_binding(&client, &ns, "web", "web", 80, &gate_tg).await;
    let tgbs = Api::<TargetGroupBinding>::namespaced(client.clone(), &ns);
    ctl.settled("targetGroupBinding", "the probe binding", || kube_util::poke(&tgbs, "web")).await;
    env.pods(&["create", &ns, "backend", "--replicas", "2", "--port", "8080"]);
    env.pods(&["service", &ns, "backend", "--port", "80", "--target-port", "8080"]);
    let rss_before = status_kib(pid, "VmRSS");
    let mark = emu.mark().await;

    // The attack.
    let stop = Arc::new(AtomicBool::new(false));
    let attacker = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes()).unwrap())
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let base = format!("https://127.0.0.1:{port}");
    let oversized = Arc::new(Tally::default());
    let reviews = Arc::new(Tally::default());
    // Made once and shared by every send (a static slice is sent without a copy).
    let big: &'static [u8] = Vec::leak(vec![b' '; 4 * 1024 * 1024]);
    let dense: &'static [u8] = Vec::leak(dense_json());
    // The attacker runs on a thread of its own, so that its loops never delay the API server's calls
    // inside this test process (they would on the test's single-threaded runtime).
    let attack = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let mut tasks = Vec::new();
    for k in 0..OVERSIZED_CLIENTS {
        let (http, url, stop, tally) =
            (attacker.clone(), format!("{base}/mutate-v1-pod"), stop.clone(), oversized.clone());
        let body = if k % 2 == 0 { big } else { dense };
        tasks.push(attack.spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let outcome = match http.post(&url).header("content-type", "application/json").body(body).send().await {
                    Ok(r) => r.status().as_u16().to_string(),
                    Err(_) => "connection error".to_string(),
                };
                tally.add(outcome);
            }
        }));
    }
    let counter = Arc::new(AtomicU64::new(0));
    for k in 0..review_clients {
        let path = if k % 2 == 0 {
            "/validate-elbv2-k8s-aws-v1beta1-targetgroupbinding"
        } else {
            "/mutate-elbv2-k8s-aws-v1beta1-targetgroupbinding"
        };
        let (http, url, stop, tally, counter, ns) =
            (attacker.clone(), format!("{base}{path}"), stop.clone(), reviews.clone(), counter.clone(), ns.clone());
        tasks.push(attack.spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let i = counter.fetch_add(1, Ordering::Relaxed);
                let outcome = match http
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(crafted_review(&ns, i))
                    .send()
                    .await
                {
                    Ok(r) => r.status().as_u16().to_string(),
                    Err(_) => "connection error".to_string(),
                };
                tally.add(outcome);
            }
        }));
    }
    // The API server's own admission calls, all through the flood.
    let legit = Arc::new(Legit { latencies: Mutex::default(), slowest: Mutex::default(), failures: Mutex::default() });
    let legit_task =
        tokio::spawn(legit_loop(client.clone(), ns.clone(), probe_tg.clone(), stop.clone(), legit.clone()));
    let sampler = {
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut peak = 0;
            while !stop.load(Ordering::Relaxed) {
                peak = peak.max(status_kib(pid, "VmRSS"));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            peak
        })
    };

    // A binding created mid-flood (through the webhooks) registers its targets.
    tokio::time::sleep(FLOOD / 4).await;
    let created_at = Instant::now();
    kube_util::create_binding(&client, &ns, "backend", "backend", 80, &web_tg).await;
    let want: BTreeSet<String> = env.pod_ips(&ns, "backend").into_iter().map(|ip| format!("{ip}:8080")).collect();
    assert_eq!(want.len(), 2, "backend pods have IPs");
    eventually("the binding created during the flood registers its targets", 60, || async {
        (aws::registered(&elb, &web_tg).await == want).then_some(())
    })
    .await;
    let registered_after = created_at.elapsed();
    let rest = FLOOD.saturating_sub(FLOOD / 4 + registered_after);
    tokio::time::sleep(rest).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    attack.shutdown_background();
    legit_task.await.unwrap();
    let peak_rss = rss_before.max(sampler.await.unwrap());
    let hwm = status_kib(pid, "VmHWM");

    let metrics = ctl.metrics().await;
    // (+ 0.0: an empty sum is -0.)
    let sum = |prefix: &str| albc::sum_lines(&metrics, prefix) + 0.0;
    let refused = |reason: &str| sum(&format!("awslbc_webhook_refused_total{{reason=\"{reason}\"}}"));
    let role_clients = sum("awslbc_webhook_role_clients ");
    let webhook_sts = sum("awslbc_webhook_aws_api_calls_total{service=\"STS\",");
    let webhook_elb = sum("awslbc_webhook_aws_api_calls_total{service=\"Elastic Load Balancing v2\",");
    let reconciler_sts = sum("aws_api_calls_total{service=\"STS\",");
    let (calls, _) = emu.calls(mark, None).await;
    let assumed = calls
        .iter()
        .filter(|c| c.operation == "AssumeRole" && c.access_key.as_deref() == Some(&ctl.access_key))
        .count();

    let mut lat = legit.latencies.lock().unwrap().clone();
    lat.sort();
    let failures = legit.failures.lock().unwrap().clone();
    eprintln!(
        "{tag} {:?}: peak RSS (VmHWM) {:.1} MiB of the chart's {:.0} MiB limit (VmRSS before {:.1} MiB, sampled peak {:.1} MiB)",
        FLOOD,
        hwm as f64 / 1048576.0,
        limit as f64 / 1048576.0,
        rss_before as f64 / 1048576.0,
        peak_rss as f64 / 1048576.0
    );
    eprintln!(
        "{tag} attacker: {} oversized/dense bodies {:?}, {} crafted binding reviews {:?}",
        oversized.sent.load(Ordering::Relaxed),
        oversized.by_status.lock().unwrap(),
        reviews.sent.load(Ordering::Relaxed),
        reviews.by_status.lock().unwrap()
    );
    eprintln!(
        "{tag} refused: client_certificate {} body_too_large {} decode_too_large {} overloaded {} decode_budget {} deadline {} too_many_connections {}",
        refused("client_certificate"),
        refused("body_too_large"),
        refused("decode_too_large"),
        refused("overloaded"),
        refused("decode_budget"),
        refused("deadline"),
        refused("too_many_connections")
    );
    eprintln!(
        "{tag} API server admission calls: {} answered, {} failed; latency p50 {:?} p99 {:?} max {:?} (slowest by kind {:?})",
        lat.len(),
        failures.len(),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        lat.last().copied().unwrap_or_default(),
        legit.slowest.lock().unwrap()
    );
    eprintln!(
        "{tag} webhook AWS calls: STS {webhook_sts}, ELBv2 {webhook_elb} (emulator: {assumed} AssumeRole); reconcilers' STS calls {reconciler_sts}; role clients held {role_clients}; flood-time binding registered in {registered_after:?}"
    );

    assert!(hwm < limit, "peak RSS {hwm} bytes is not below the chart's memory limit {limit}");
    assert!(
        failures.is_empty(),
        "{} of the API server's admission calls failed during the flood, the first: {:?}",
        failures.len(),
        &failures[..failures.len().min(3)]
    );
    assert!(lat.len() >= 10, "too few admission calls to prove anything: {}", lat.len());
    assert_eq!(reconciler_sts, 0.0, "the attacker's roles never reached the reconcilers' AWS budget");
    assert!(
        reviews.sent.load(Ordering::Relaxed) >= 50,
        "the crafted reviews flowed: {:?}",
        reviews.by_status.lock().unwrap()
    );
    if client_ca {
        // Nothing of the attacker's got past the handshake: no body read, no role assumed.
        let answered: u64 = [&oversized, &reviews]
            .iter()
            .map(|t| {
                t.by_status
                    .lock()
                    .unwrap()
                    .iter()
                    .filter(|(k, _)| *k != "connection error")
                    .map(|(_, n)| n)
                    .sum::<u64>()
            })
            .sum();
        assert_eq!(answered, 0, "an attacker without a client certificate got an HTTP answer");
        assert!(refused("client_certificate") > 0.0, "handshakes refused and counted");
        assert_eq!(refused("body_too_large") + refused("decode_too_large"), 0.0, "no attacker body was read");
        assert!(webhook_sts == 0.0 && assumed == 0, "no role assumed for the attacker");
    } else {
        assert!(
            refused("body_too_large") > 0.0 && refused("decode_too_large") > 0.0,
            "oversized bodies refused by the limits"
        );
        assert!(role_clients <= 64.0, "role clients held: {role_clients}");
        assert!(
            webhook_sts > 0.0 && assumed > 0,
            "the crafted reviews made the webhook assume roles, counted in its own series"
        );
    }

    mwcs.delete(&mwc_name, &DeleteParams::default()).await.unwrap();
    vwcs.delete(&vwc_name, &DeleteParams::default()).await.unwrap();
    ctl.terminate();
    kube_util::delete_namespace(&client, &ns).await;
}
