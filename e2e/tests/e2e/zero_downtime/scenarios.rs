//! Zero-downtime scenarios on the real data path: a Deployment whose pods are real servers (the
//! node agent), a Service → NLB made by the real controller (readiness gates injected by its pod
//! webhook), the NLB-like data plane in front of the pods and 200 req/s of load through it. Each
//! scenario prints one line `SCENARIO <name> sent=N failed=N rollout_s=X min_healthy=M`
//! (docs/zero-downtime.md collects them). Needs root and the e2e environment (`e2e/up`).
//!
//! Asserted 0 failed: rolling updates with gates, scaling, the controller killed for 10 s, leader
//! failover, OpenBao sealed until the controller's keys expire, AWS rejecting the credentials, a
//! 60 s throttling storm from a registration, an Ingress → ALB with two backends, one rolling.
//! Measured only: rolling updates without gates (registrations reach the data plane in 3 s,
//! deregistrations in 0.5 s, so an ungated rollout faster than 3 s leaves nothing routable for a
//! moment), and a throttling storm over a deregistration longer than the preStop sleep (no
//! controller can deregister while AWS refuses; the preStop sleep has to cover it).
//!
//! Time scales: the kubelet (the agent) runs at [`KUBELET_SCALE`] (pod-spec seconds × 0.1), AWS
//! (the emulator and the data plane) at the emulator's scale (0.01); Kubernetes' control plane,
//! the controller, OpenBao and the throttling storms run in real time. Every figure printed is in
//! real seconds.

use aws_sdk_elasticloadbalancingv2 as elbv2;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use lbc_e2e::controller::ControllerProc;
use lbc_e2e::datapath::agent::{Agent, AgentConfig, SCHEDULER_NAME};
use lbc_e2e::datapath::loadgen::Summary;
use lbc_e2e::datapath::netns::{Vpc, check_host_has_no_route, signal};
use lbc_e2e::datapath::plane::wire::EmulatorForwarder;
use lbc_e2e::datapath::require_root;
use lbc_e2e::emulator::Emulator;
use lbc_e2e::webhook::{webhook, write_cert};
use lbc_e2e::{Env, aws, eventually, kube_util, unique};
use lbc_model::crd::TargetGroupBinding;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const ANN: &str = "service.beta.kubernetes.io";
const GATE_LABEL: &str = "elbv2.k8s.aws/pod-readiness-gate-inject";
const APP: &str = "web";
/// Kubelet durations (probe period, preStop, grace period) × 0.1.
const KUBELET_SCALE: f64 = 0.1;
/// preStop sleep, pod-spec seconds (2 s real): ≥ the controller's reaction + the deregistration
/// propagation delay.
const PRE_STOP_S: i64 = 20;
/// terminationGracePeriodSeconds (6 s real): > preStop + deregistration delay (2 s + 2 s real).
const GRACE_S: i64 = 60;
/// Target group deregistration delay, AWS seconds (2 s real at the emulator's 0.01).
const DEREGISTRATION_DELAY_S: u32 = 200;
/// Registration propagation to the data plane, AWS seconds (3 s real): real NLBs take minutes to
/// start sending to a newly registered target (lbc-dataplane's default).
const REGISTRATION_PROPAGATION_S: f64 = 300.0;
/// Deregistration propagation to the data plane, AWS seconds (0.5 s real): tens of seconds on real
/// NLBs, far shorter than a registration (lbc-dataplane's default).
const DEREGISTRATION_PROPAGATION_S: f64 = 50.0;
/// Health check: HTTP /healthz every 10 s (0.1 s real), 3 to be healthy, 2 to be unhealthy.
const HC: [(&str, &str); 7] = [
    ("aws-load-balancer-healthcheck-protocol", "http"),
    ("aws-load-balancer-healthcheck-path", "/healthz"),
    ("aws-load-balancer-healthcheck-port", "traffic-port"),
    ("aws-load-balancer-healthcheck-interval", "10"),
    ("aws-load-balancer-healthcheck-timeout", "6"),
    ("aws-load-balancer-healthcheck-healthy-threshold", "3"),
    ("aws-load-balancer-healthcheck-unhealthy-threshold", "2"),
];
/// The load balancer's address inside the VPC namespace (outside every subnet's pod range).
const VIP: &str = "10.0.255.10";
/// The agent's pod-CIDR slot (the agent tests use 0..=3).
const SLOT: u8 = 4;
const RATE: &str = "200";

/// A labelled (or not) namespace with its own controller (pod webhook registered), node agent,
/// VPC namespace, Service → NLB, data plane on the NLB's listeners, and the Deployment.
struct Scene {
    name: &'static str,
    env: Env,
    client: Client,
    elb: elbv2::Client,
    emu: Emulator,
    ns: String,
    cert_dir: PathBuf,
    /// The webhook's CA bundle (PEM).
    ca: String,
    webhook_port: u16,
    mwc_name: String,
    ctl: Option<ControllerProc>,
    /// The controller's extra flags (its credential source), for restarts.
    ctl_args: Vec<String>,
    agent: Option<Agent>,
    tg_arn: String,
    lb_arn: String,
    gate: String,
    dir: PathBuf,
    plane: Child,
    _fwd: EmulatorForwarder,
    // Last: dropped after the processes above.
    vpc: Vpc,
}

/// lbc-dataplane's propagation arguments (every scenario uses the same delays).
fn propagation_args() -> [String; 4] {
    [
        "--registration-propagation-seconds".into(),
        REGISTRATION_PROPAGATION_S.to_string(),
        "--deregistration-propagation-seconds".into(),
        DEREGISTRATION_PROPAGATION_S.to_string(),
    ]
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// SIGKILLs a process on drop: no stray load generator when a test panics.
struct KillOnDrop(u32);
impl Drop for KillOnDrop {
    fn drop(&mut self) {
        signal(self.0 as i32, "KILL");
    }
}

/// What every scenario stands on: a namespace (labelled for readiness gates or not) with its own
/// controller (pod webhook registered with the API server as the chart does), the VPC namespace
/// with the load balancer's address, and the node agent running the namespace's pods. The load
/// balancer's data plane comes once the controller made the load balancer ([`Bed::start_plane`]).
struct Bed {
    env: Env,
    client: Client,
    ns: String,
    dir: PathBuf,
    cert_dir: PathBuf,
    ca: String,
    webhook_port: u16,
    mwc_name: String,
    ctl: ControllerProc,
    ctl_args: Vec<String>,
    agent: Agent,
    vpc: Vpc,
}

impl Bed {
    /// `None` when not root or without the e2e environment (the test is skipped). The controller
    /// takes its AWS keys from OpenBao when `bao` is given; `ready_while_terminating` is the
    /// agent's (kubelet's) probing of terminating pods.
    async fn setup(name: &str, gated: bool, bao: Option<&ScenarioBao>, ready_while_terminating: bool) -> Option<Self> {
        if !require_root(name) {
            return None;
        }
        let env = Env::require(name)?;
        let client = kube_util::client(&env).await;
        let ns = unique("zd");
        let mut labels = vec![("lbc-e2e/webhook-test", ns.as_str())];
        if gated {
            labels.push((GATE_LABEL, "enabled"));
        }
        kube_util::namespace(&client, &ns, &labels).await;
        let dir = Env::repo_root().join(format!("e2e/.run/datapath/{ns}"));
        std::fs::create_dir_all(&dir).unwrap();

        // The controller, its pod webhook registered with the API server (url + caBundle).
        let cert_dir = dir.join("certs");
        let ca = write_cert(&cert_dir);
        let webhook_port = free_port();
        let ctl_args = match bao {
            Some(b) => b.bind(&client, &ns, &dir).await,
            None => Vec::new(),
        };
        let ctl = start_controller(&env, &ns, &cert_dir, webhook_port, &ctl_args).await;
        let mwc_name = format!("{ns}-mutating");
        register_pod_webhook(&client, &ns, &mwc_name, &ca, webhook_port).await;

        // The VPC, with the load balancer's address, and the node agent running this namespace's pods.
        let cidr = env.get("LBC_VPC_CIDR");
        check_host_has_no_route(cidr.parse().unwrap()).expect("host route check before the scenario");
        let vpc = Vpc::create("zd", cidr).expect("creating the VPC namespace");
        vpc.add_address(VIP.parse().unwrap()).unwrap();
        let mut config = AgentConfig::for_env(
            &env,
            "zd",
            &vpc,
            SLOT,
            env!("CARGO_BIN_EXE_lbc-podserver").as_ref(),
            env!("CARGO_BIN_EXE_lbc-node-agent").as_ref(),
        )
        .expect("agent config");
        config.namespace = Some(ns.clone());
        config.time_scale = KUBELET_SCALE;
        config.ready_while_terminating = ready_while_terminating;
        let agent = Agent::start(&env, config).await.expect("starting the node agent");
        Some(Self { env, client, ns, dir, cert_dir, ca, webhook_port, mwc_name, ctl, ctl_args, agent, vpc })
    }

    /// lbc-dataplane for load balancer `lb_arn` in the VPC namespace (it reaches the emulator
    /// through a forwarder), once it listens on port 80. Its files: `plane.{json,log,err}` in the
    /// bed's directory. On a panic, dropping the VPC kills what runs in it.
    async fn start_plane(&self, lb_arn: &str) -> (Child, EmulatorForwarder) {
        let fwd = EmulatorForwarder::for_env(&self.env).expect("emulator forwarder");
        let emulator = fwd.endpoint_arg();
        let dir = &self.dir;
        let plane = self
            .vpc
            .command(env!("CARGO_BIN_EXE_lbc-dataplane"))
            .args(["run", "--emulator", emulator.as_str(), "--load-balancer-arn", lb_arn, "--listen", VIP])
            .args(propagation_args())
            .arg("--status-file")
            .arg(dir.join("plane.json"))
            .stdout(std::fs::File::create(dir.join("plane.log")).unwrap())
            .stderr(std::fs::File::create(dir.join("plane.err")).unwrap())
            .spawn()
            .expect("spawning lbc-dataplane");
        let status = dir.join("plane.json");
        eventually("lbc-dataplane listening on port 80", 20, || async {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&status).ok()?).ok()?;
            v["listeners"].as_array()?.iter().any(|p| p == 80).then_some(())
        })
        .await;
        (plane, fwd)
    }
}

/// Stops what [`Bed::setup`] started (once the load balancer is gone) and checks nothing is left:
/// pod namespaces, host routes to the VPC, node agent errors.
async fn teardown_bed(
    client: &Client,
    env: &Env,
    ns: &str,
    mwc_name: &str,
    ctl: Option<ControllerProc>,
    agent: Agent,
    vpc: Vpc,
) {
    if let Some(ctl) = ctl {
        ctl.terminate();
    }
    let _ = Api::<MutatingWebhookConfiguration>::all(client.clone()).delete(mwc_name, &DeleteParams::default()).await;
    let errors = agent.errors();
    agent.stop().await.expect("stopping the node agent");
    kube_util::delete_namespace(client, ns).await;
    let left = vpc.pod_namespaces().unwrap();
    assert!(left.is_empty(), "pod namespaces left after the agent stopped: {left:?}");
    drop(vpc);
    check_host_has_no_route(env.get("LBC_VPC_CIDR").parse().unwrap()).expect("host route check after the scenario");
    assert!(errors.is_empty(), "node agent errors: {errors:?}");
}

impl Scene {
    async fn setup(name: &'static str, gated: bool, replicas: i32) -> Option<Self> {
        Self::setup_with(name, gated, replicas, None).await
    }

    /// [`Scene::setup`], the controller taking its AWS keys from OpenBao when `bao` is given.
    async fn setup_with(name: &'static str, gated: bool, replicas: i32, bao: Option<&ScenarioBao>) -> Option<Self> {
        let Bed { env, client, ns, dir, cert_dir, ca, webhook_port, mwc_name, ctl, ctl_args, agent, vpc } =
            Bed::setup(name, gated, bao, true).await?;
        let elb = aws::elbv2(&env).await;
        let emu = Emulator::new(env.aws_endpoint());

        // Service → NLB (IP targets); the binding the controller makes names the gate.
        let mut ann = serde_json::Map::new();
        for (k, v) in [
            ("aws-load-balancer-type", "external"),
            ("aws-load-balancer-nlb-target-type", "ip"),
            ("aws-load-balancer-scheme", "internal"),
        ]
        .into_iter()
        .chain(HC)
        {
            ann.insert(format!("{ANN}/{k}"), json!(v));
        }
        ann.insert(
            format!("{ANN}/aws-load-balancer-target-group-attributes"),
            json!(format!("deregistration_delay.timeout_seconds={DEREGISTRATION_DELAY_S}")),
        );
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": APP, "annotations": ann},
            "spec": {"type": "LoadBalancer", "selector": {"app": APP},
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}});
        let services: Api<Service> = Api::namespaced(client.clone(), &ns);
        services.create(&PostParams::default(), &serde_json::from_value(svc).unwrap()).await.expect("create Service");
        eventually(&format!("Service {ns}/{APP} gets its NLB hostname"), 90, || async {
            services.get_opt(APP).await.ok()??.status?.load_balancer?.ingress?.first()?.hostname.clone()
        })
        .await;
        let (lbs, tgs) = aws::stack_arns(&elb, "service.k8s.aws/stack", &format!("{ns}/{APP}")).await;
        assert_eq!((lbs.len(), tgs.len()), (1, 1), "one NLB and one target group for Service {ns}/{APP}");
        let tgbs: Api<TargetGroupBinding> = Api::namespaced(client.clone(), &ns);
        let tgb = eventually("the controller's TargetGroupBinding", 30, || async {
            tgbs.list(&ListParams::default()).await.ok()?.items.into_iter().next()
        })
        .await;
        let gate = format!("target-health.elbv2.k8s.aws/{}", tgb.name_any());

        // The data plane on the NLB's listeners.
        let bed = Bed { env, client, ns, dir, cert_dir, ca, webhook_port, mwc_name, ctl, ctl_args, agent, vpc };
        let (plane, fwd) = bed.start_plane(&lbs[0]).await;
        let Bed { env, client, ns, dir, cert_dir, ca, webhook_port, mwc_name, ctl, ctl_args, agent, vpc } = bed;
        let scene = Self {
            name,
            env,
            client,
            elb,
            emu,
            ns,
            cert_dir,
            ca,
            webhook_port,
            mwc_name,
            ctl: Some(ctl),
            ctl_args,
            agent: Some(agent),
            tg_arn: tgs[0].clone(),
            lb_arn: lbs[0].clone(),
            gate,
            dir,
            plane,
            _fwd: fwd,
            vpc,
        };

        // The Deployment, all Ready and healthy in the data plane before any load.
        let d: Deployment = serde_json::from_value(deployment(replicas)).unwrap();
        scene.deployments().create(&PostParams::default(), &d).await.expect("create Deployment");
        scene.wait_settled(replicas as usize, 120).await;
        let pods = scene.live_pods().await;
        let with_gate = pods.iter().filter(|p| gates(p).contains(&scene.gate)).count();
        let want = if gated { pods.len() } else { 0 };
        assert_eq!(
            with_gate,
            want,
            "pods of {}/{APP} carrying readiness gate {}: {with_gate} of {}; expected {want} (namespace labelled \
             {GATE_LABEL}=enabled: {gated}; the controller's pod webhook injects it)",
            scene.ns,
            scene.gate,
            pods.len()
        );
        eprintln!(
            "scenario {name}: namespace {}, gate {} ({}), NLB {}, files in {}",
            scene.ns,
            scene.gate,
            if gated { "injected" } else { "not injected" },
            scene.lb_arn,
            scene.dir.display()
        );
        Some(scene)
    }

    fn deployments(&self) -> Api<Deployment> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    fn pods_api(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    async fn all_pods(&self) -> Vec<Pod> {
        self.pods_api().list(&ListParams::default().labels(&format!("app={APP}"))).await.expect("list pods").items
    }

    async fn live_pods(&self) -> Vec<Pod> {
        self.all_pods().await.into_iter().filter(|p| p.metadata.deletion_timestamp.is_none()).collect()
    }

    fn plane_status(&self) -> Option<Value> {
        serde_json::from_str(&std::fs::read_to_string(self.dir.join("plane.json")).ok()?).ok()
    }

    /// Pod IPs the data plane routes new connections to (registered, propagated, healthy).
    fn routable(&self) -> Vec<String> {
        healthy_routable(&self.dir.join("plane.json")).unwrap_or_default()
    }

    /// Samples the data plane's healthy routable targets every 20 ms until the returned
    /// sampler is finished: the fewest seen is what the load balancer had at its lowest.
    fn sample_healthy(&self) -> Sampler {
        let path = self.dir.join("plane.json");
        let stop = Arc::new(AtomicBool::new(false));
        let min = Arc::new(AtomicUsize::new(usize::MAX));
        let (s, m) = (stop.clone(), min.clone());
        let task = tokio::spawn(async move {
            while !s.load(Ordering::Relaxed) {
                if let Some(ips) = healthy_routable(&path) {
                    m.fetch_min(ips.len(), Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        Sampler { stop, min, task }
    }

    fn plane_log(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("plane.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(60).collect::<Vec<_>>().into_iter().rev().collect();
        tail.join("\n")
    }

    /// Waits until `n` pods exist, none terminating, all Ready, and the data plane routes to
    /// exactly their IPs (old targets' drains may still run).
    async fn wait_settled(&self, n: usize, secs: u64) {
        eventually(
            &format!("{n} Ready pods of {}/{APP}, all of them and only them routable", self.ns),
            secs,
            || async {
                let pods = self.all_pods().await;
                let ready = pods.iter().filter(|p| p.metadata.deletion_timestamp.is_none() && is_ready(p)).count();
                if pods.len() != n || ready != n {
                    return None;
                }
                let mut ips: Vec<String> = pods.iter().filter_map(pod_ip).collect();
                ips.sort();
                (self.routable() == ips).then_some(())
            },
        )
        .await
    }

    /// Waits until the Deployment's rollout is complete as `kubectl rollout status` sees it.
    async fn wait_rollout(&self, replicas: i32, secs: u64) {
        eventually(&format!("rollout of Deployment {}/{APP} complete", self.ns), secs, || async {
            let d = self.deployments().get(APP).await.ok()?;
            let (generation, st) = (d.metadata.generation?, d.status?);
            (st.observed_generation >= Some(generation)
                && st.updated_replicas == Some(replicas)
                && st.replicas == Some(replicas)
                && st.available_replicas == Some(replicas))
            .then_some(())
        })
        .await
    }

    /// Starts a rollout (a new template annotation).
    async fn roll(&self, version: usize) {
        let patch =
            json!({"spec": {"template": {"metadata": {"annotations": {"lbc-e2e/version": version.to_string()}}}}});
        self.deployments().patch(APP, &PatchParams::default(), &Patch::Merge(patch)).await.expect("patch Deployment");
    }

    async fn scale(&self, replicas: i32) {
        let patch = json!({"spec": {"replicas": replicas}});
        self.deployments().patch(APP, &PatchParams::default(), &Patch::Merge(patch)).await.expect("scale Deployment");
    }

    /// lbc-loadgen against the NLB's address, until [`finish_loadgen`].
    fn start_loadgen(&self) -> Child {
        let target = format!("{VIP}:80");
        self.vpc
            .command(env!("CARGO_BIN_EXE_lbc-loadgen"))
            .args(["--target", target.as_str(), "--timeout-ms", "3000", "--rate", RATE, "--per-second"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawning lbc-loadgen")
    }

    fn controller_log(&self) -> String {
        self.ctl.as_ref().map(|c| c.log.display().to_string()).unwrap_or_default()
    }

    /// Stops everything and checks nothing is left (namespaces, host routes).
    async fn teardown(mut self) {
        let _ = self.plane.kill();
        let _ = self.plane.wait();
        let _ = self.deployments().delete(APP, &DeleteParams::default()).await;
        let services: Api<Service> = Api::namespaced(self.client.clone(), &self.ns);
        let _ = services.delete(APP, &DeleteParams::default()).await;
        eventually(&format!("Service {}/{APP} deleted (the controller removes its NLB)", self.ns), 60, || async {
            services.get_opt(APP).await.ok()?.is_none().then_some(())
        })
        .await;
        let agent = self.agent.take().expect("agent running");
        let Scene { client, env, ns, mwc_name, ctl, vpc, .. } = self;
        teardown_bed(&client, &env, &ns, &mwc_name, ctl, agent, vpc).await;
    }
}

/// Registers the controller's pod webhook at `port` with the API server as the chart does:
/// failurePolicy Ignore, only namespaces labelled for injection (the webhook trusts this
/// selector), here also only this test's namespace.
async fn register_pod_webhook(client: &Client, ns: &str, mwc_name: &str, ca: &str, port: u16) {
    let mut pod_hook = webhook("mpod.elbv2.k8s.aws", port, "/mutate-v1-pod", ca, ns, "Ignore", ("", "v1", "pods"));
    pod_hook["namespaceSelector"]["matchExpressions"] =
        json!([{"key": GATE_LABEL, "operator": "In", "values": ["enabled"]}]);
    pod_hook["rules"][0]["operations"] = json!(["CREATE"]);
    let mwc = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": mwc_name}, "webhooks": [pod_hook]});
    Api::<MutatingWebhookConfiguration>::all(client.clone())
        .patch(mwc_name, &PatchParams::apply("e2e").force(), &Patch::Apply(mwc))
        .await
        .expect("MutatingWebhookConfiguration");
}

async fn start_controller(
    env: &Env,
    ns: &str,
    cert_dir: &std::path::Path,
    webhook_port: u16,
    extra: &[String],
) -> ControllerProc {
    let mut args =
        vec![format!("--webhook-cert-dir={}", cert_dir.display()), format!("--webhook-bind-port={webhook_port}")];
    args.extend(extra.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let ctl = ControllerProc::start(env, ns, &format!("{ns}-leader"), &args);
    eventually(&format!("controller ready (log {})", ctl.log.display()), 30, || async {
        ctl.ready().await.then_some(())
    })
    .await;
    ctl
}

fn deployment(replicas: i32) -> Value {
    deployment_named(APP, replicas)
}

fn deployment_named(app: &str, replicas: i32) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": app},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": app}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"app": app}, "annotations": {"lbc-e2e/version": "0"}},
                "spec": {
                    "schedulerName": SCHEDULER_NAME,
                    "terminationGracePeriodSeconds": GRACE_S,
                    "containers": [{
                        "name": "web", "image": "lbc-podserver",
                        "ports": [{"name": "http", "containerPort": 8080}],
                        "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"},
                                           "periodSeconds": 1, "failureThreshold": 2, "successThreshold": 1},
                        "lifecycle": {"preStop": {"sleep": {"seconds": PRE_STOP_S}}},
                    }],
                },
            },
        },
    })
}

/// The pod IPs the data plane's status file lists as routable and healthy.
fn healthy_routable(path: &std::path::Path) -> Option<Vec<String>> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    let mut ips: Vec<String> = v["targets"]
        .as_array()?
        .iter()
        .filter(|t| t["routable"] == true && t["state"] == "healthy")
        .filter_map(|t| t["id"].as_str().map(str::to_string))
        .collect();
    ips.sort();
    Some(ips)
}

struct Sampler {
    stop: Arc<AtomicBool>,
    min: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Sampler {
    /// The fewest healthy routable targets seen.
    async fn finish(self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.task.await;
        self.min.load(Ordering::Relaxed)
    }
}

fn gates(p: &Pod) -> Vec<String> {
    p.spec
        .as_ref()
        .and_then(|s| s.readiness_gates.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|g| g.condition_type)
        .collect()
}

fn cond(p: &Pod, type_: &str) -> Option<String> {
    p.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == type_).map(|c| c.status.clone())
}

fn is_ready(p: &Pod) -> bool {
    cond(p, "Ready").as_deref() == Some("True")
}

fn pod_ip(p: &Pod) -> Option<String> {
    p.status.as_ref()?.pod_ip.clone()
}

/// SIGTERMs lbc-loadgen and reads its summary.
async fn finish_loadgen(child: Child) -> Summary {
    assert!(signal(child.id() as i32, "TERM"), "SIGTERM to lbc-loadgen");
    let out = tokio::task::spawn_blocking(move || child.wait_with_output()).await.unwrap().expect("lbc-loadgen output");
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("lbc-loadgen ({}) printed no JSON summary ({e}): {text:?}", out.status))
}

/// Seconds (from the load's start) with failures, and what failed in each.
fn failing_seconds(s: &Summary) -> String {
    let v: Vec<String> = s
        .per_second
        .iter()
        .enumerate()
        .filter(|(_, c)| c.failed > 0)
        .map(|(i, c)| format!("s{i}: {} failed {:?} ok-by-pod {:?}", c.failed, c.failures, c.pods))
        .collect();
    if v.is_empty() { "none".into() } else { v.join("; ") }
}

/// One measured run of load across an action.
struct Measured {
    summary: Summary,
    rollout_s: f64,
    /// The fewest healthy targets the data plane routed to during the run.
    min_healthy: usize,
}

impl Measured {
    fn line(&self) -> String {
        format!(
            "sent={} failed={} rollout_s={:.1} min_healthy={} failures={:?}",
            self.summary.total.sent,
            self.summary.total.failed,
            self.rollout_s,
            self.min_healthy,
            self.summary.total.failures
        )
    }
}

/// Load against the scene (lbc-loadgen) and the healthy-target sampler, from before an action
/// until [`Run::stop`] or [`Run::finish_rollout`].
struct Run {
    load: Child,
    guard: KillOnDrop,
    sampler: Sampler,
    started: Instant,
}

impl Scene {
    /// Starts the load, lets it reach every pod (0.5 s), starts the sampler; the run's clock starts.
    async fn start_run(&self) -> Run {
        let load = self.start_loadgen();
        let guard = KillOnDrop(load.id());
        tokio::time::sleep(Duration::from_millis(500)).await;
        let sampler = self.sample_healthy();
        Run { load, guard, sampler, started: Instant::now() }
    }

    /// [`Scene::start_run`], then a rollout to template `version`.
    async fn start_rollout(&self, version: usize) -> Run {
        let run = self.start_run().await;
        self.roll(version).await;
        run
    }

    /// The rollout's first new pod once its target is registered and its gate not yet True:
    /// (name, IP).
    async fn first_new_pod_registered(&self) -> (String, String) {
        eventually("a new pod registered in the target group, gate not True", 60, || async {
            for p in pods_of_version(self, "1").await {
                let ip = pod_ip(&p)?;
                if cond(&p, &self.gate).as_deref() != Some("True") && target_state(self, &ip).await.is_some() {
                    return Some((p.name_any(), ip));
                }
            }
            None
        })
        .await
    }
}

impl Run {
    fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Stops the sampler and the load: (the load's summary, the fewest healthy targets seen).
    async fn stop(self) -> (Summary, usize) {
        let min_healthy = self.sampler.finish().await;
        std::mem::forget(self.guard);
        (finish_loadgen(self.load).await, min_healthy)
    }

    /// Waits for the rollout of `replicas` to complete (its time counted from the run's start),
    /// then for the old pods to finish terminating under load too, then stops.
    async fn finish_rollout(self, sc: &Scene, replicas: i32) -> Measured {
        sc.wait_rollout(replicas, 120).await;
        let rollout_s = self.elapsed_s();
        sc.wait_settled(replicas as usize, 60).await;
        let (summary, min_healthy) = self.stop().await;
        Measured { summary, rollout_s, min_healthy }
    }
}

/// Rolls the Deployment `rollouts` times, each under its own load run; returns each measurement.
async fn rollouts(sc: &Scene, replicas: i32, rollouts: usize) -> Vec<Measured> {
    let mut out = Vec::new();
    for i in 1..=rollouts {
        let m = sc.start_rollout(i).await.finish_rollout(sc, replicas).await;
        eprintln!(
            "{} rollout {i}/{rollouts}: {} ({:.1} s of load); failing seconds: {}",
            sc.name,
            m.line(),
            m.summary.seconds,
            failing_seconds(&m.summary)
        );
        out.push(m);
    }
    out
}

fn scenario_line(name: &str, runs: &[Measured]) -> (u64, u64) {
    let sent: u64 = runs.iter().map(|m| m.summary.total.sent).sum();
    let failed: u64 = runs.iter().map(|m| m.summary.total.failed).sum();
    let rollout: Vec<String> = runs.iter().map(|m| format!("{:.1}", m.rollout_s)).collect();
    let min_healthy = runs.iter().map(|m| m.min_healthy).min().unwrap_or(0);
    let line = format!(
        "SCENARIO {name} sent={sent} failed={failed} rollout_s={} min_healthy={min_healthy}",
        rollout.join(",")
    );
    println!("{line}");
    eprintln!("{line}");
    (sent, failed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn rolling_update_with_readiness_gates_fails_no_request_in_five_rollouts() {
    let _serial = super::dataplane::SERIAL.lock().await;
    let Some(sc) = Scene::setup("rolling_update_gated", true, 6).await else { return };
    let runs = rollouts(&sc, 6, 5).await;
    let (sent, failed) = scenario_line("rolling_update_gated", &runs);
    assert!(sent > 1000, "lbc-loadgen sent only {sent} requests over 5 rollouts");
    for (i, m) in runs.iter().enumerate() {
        assert_eq!(
            m.summary.total.failed,
            0,
            "rollout {} of {}/{APP} with readiness gates: {} failed requests {:?}; expected 0. Failing seconds: {}. \
             Controller log: {}; data plane log (tail):\n{}",
            i + 1,
            sc.ns,
            m.summary.total.failed,
            m.summary.total.failures,
            failing_seconds(&m.summary),
            sc.controller_log(),
            sc.plane_log()
        );
    }
    assert_eq!(failed, 0);
    sc.teardown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn rolling_update_without_readiness_gates_is_measured() {
    let _serial = super::dataplane::SERIAL.lock().await;
    let Some(sc) = Scene::setup("rolling_update_ungated", false, 6).await else { return };
    let runs = rollouts(&sc, 6, 5).await;
    let (sent, failed) = scenario_line("rolling_update_ungated", &runs);
    assert!(sent > 1000, "lbc-loadgen sent only {sent} requests over 5 rollouts: nothing was measured");
    // No number is asserted; this shows what the gate is worth. Without it a pod is Ready on its
    // readinessProbe alone, so each old pod is deleted (and deregistered, 0.5 s to take effect)
    // while the new pods' registrations (3 s to take effect) have not reached the load balancer:
    // when the whole rollout is faster than a registration, for a moment no target is routable
    // and connections fail. Measured over 7 runs of 5 rollouts: 245, 602, 384, 362, 0, 540, 394;
    // the run with 0 rolled slower (3.4-5.9 s per rollout, the machine busy with a build) than
    // the registration delay, so "> 0" is not reliable enough to assert.
    if failed == 0 {
        eprintln!(
            "rolling_update_ungated: 0 failed this time (rollouts {:?} s): the rollouts were slower than the 3 s \
             registration delay",
            runs.iter().map(|m| format!("{:.1}", m.rollout_s)).collect::<Vec<_>>()
        );
    }
    sc.teardown().await;
}

/// Prints the scenario's `SCENARIO` line (stdout and stderr: shown with or without --nocapture).
fn print_scenario(name: &str, s: &Summary, rollout_s: &str, min_healthy: usize) {
    let line = format!(
        "SCENARIO {name} sent={} failed={} rollout_s={rollout_s} min_healthy={min_healthy}",
        s.total.sent, s.total.failed
    );
    println!("{line}");
    eprintln!("{line}");
}

fn assert_no_failure(sc: &Scene, what: &str, s: &Summary) {
    assert!(s.total.sent > 500, "{what}: lbc-loadgen sent only {} requests", s.total.sent);
    assert_eq!(
        s.total.failed,
        0,
        "{what} ({}/{APP}): {} failed requests {:?}; expected 0. Failing seconds: {}. Controller log: {}; data \
         plane log (tail):\n{}",
        sc.ns,
        s.total.failed,
        s.total.failures,
        failing_seconds(s),
        sc.controller_log(),
        sc.plane_log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn scaling_6_to_12_to_3_under_load_fails_no_request() {
    let _serial = super::dataplane::SERIAL.lock().await;
    let Some(sc) = Scene::setup("scale_6_12_3", true, 6).await else { return };
    let run = sc.start_run().await;
    let t = Instant::now();
    sc.scale(12).await;
    sc.wait_settled(12, 120).await;
    let up_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    sc.scale(3).await;
    sc.wait_settled(3, 120).await;
    let down_s = t.elapsed().as_secs_f64();
    let (summary, min_healthy) = run.stop().await;
    eprintln!("scale 6→12 in {up_s:.1} s, 12→3 in {down_s:.1} s; failing seconds: {}", failing_seconds(&summary));
    print_scenario("scale_6_12_3", &summary, &format!("{up_s:.1},{down_s:.1}"), min_healthy);
    assert_no_failure(&sc, "scaling 6→12→3 with readiness gates", &summary);
    sc.teardown().await;
}

/// Live pods of template version `v` (the rollout's new pods).
async fn pods_of_version(sc: &Scene, v: &str) -> Vec<Pod> {
    sc.live_pods()
        .await
        .into_iter()
        .filter(|p| p.annotations().get("lbc-e2e/version").map(String::as_str) == Some(v))
        .collect()
}

/// How long the controller stays down in the kill scenario (the 10 s).
const CONTROLLER_DOWN: Duration = Duration::from_secs(10);

/// When pod `p` last turned Ready (its Ready condition's lastTransitionTime), if Ready.
fn ready_since(p: &Pod) -> Option<jiff::Timestamp> {
    let c = p.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == "Ready" && c.status == "True")?;
    Some(c.last_transition_time.as_ref()?.0)
}

/// DescribeTargetHealth state of `ip` in the scene's target group.
async fn target_state(sc: &Scene, ip: &str) -> Option<String> {
    let out = sc.elb.describe_target_health().target_group_arn(&sc.tg_arn).send().await.ok()?;
    out.target_health_descriptions()
        .iter()
        .find(|d| d.target().and_then(|t| t.id()) == Some(ip))
        .and_then(|d| d.target_health()?.state().map(|s| s.as_str().to_string()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn controller_killed_mid_rollout_stalls_the_rollout_and_fails_no_request() {
    let _serial = super::dataplane::SERIAL.lock().await;
    let Some(mut sc) = Scene::setup("controller_killed", true, 6).await else { return };
    let run = sc.start_rollout(1).await;
    // The rollout's first new pod: its target registered, its gate not yet True.
    let (name, ip) = sc.first_new_pod_registered().await;
    sc.ctl.take().expect("controller running").kill();
    let killed = Instant::now();
    eprintln!("controller SIGKILLed {:.1} s into the rollout; new pod {name} ({ip}) registered", run.elapsed_s());
    // No controller: the load balancer reports the target healthy, yet nothing flips the gate,
    // so the pod stays un-Ready and no old pod is deleted: the rollout waits.
    eventually(&format!("target {ip} of {name} healthy in DescribeTargetHealth"), 30, || async {
        (target_state(&sc, &ip).await.as_deref() == Some("healthy")).then_some(())
    })
    .await;
    // Until the restart, read from the API every 250 ms: no pod of the new template Ready or with
    // its gate True, none of the 6 old pods deleted. Every sample is checked, not only the last.
    let mut samples = 0;
    while killed.elapsed() < CONTROLLER_DOWN {
        let pods = sc.all_pods().await;
        let version = |p: &Pod| p.annotations().get("lbc-e2e/version").cloned().unwrap_or_default();
        let new_ready: Vec<String> = pods
            .iter()
            .filter(|p| version(p) == "1" && (is_ready(p) || cond(p, &sc.gate).as_deref() == Some("True")))
            .map(ResourceExt::name_any)
            .collect();
        assert!(
            new_ready.is_empty(),
            "pods of the new template Ready (or gate {} True) {:.1} s after the controller was SIGKILLed, with no \
             controller running: {new_ready:?}; expected none (only the controller sets the gate)",
            sc.gate,
            killed.elapsed().as_secs_f64()
        );
        let old_live = pods.iter().filter(|p| version(p) == "0" && p.metadata.deletion_timestamp.is_none()).count();
        assert_eq!(
            old_live,
            6,
            "old pods not deleted {:.1} s after the controller was SIGKILLed: {old_live}; expected 6 (the rollout \
             must wait while no controller runs)",
            killed.elapsed().as_secs_f64()
        );
        samples += 1;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let down_s = killed.elapsed().as_secs_f64();
    let restarted = jiff::Timestamp::now();
    sc.ctl = Some(start_controller(&sc.env, &sc.ns, &sc.cert_dir, sc.webhook_port, &sc.ctl_args).await);
    let Measured { summary, rollout_s, min_healthy } = run.finish_rollout(&sc, 6).await;
    // Read back from the API once the rollout is done: every new pod turned Ready after the
    // restart (lastTransitionTime has whole seconds, hence the floor).
    let mut ready_after_restart = Vec::new();
    for p in pods_of_version(&sc, "1").await {
        let since = ready_since(&p).unwrap_or_else(|| panic!("pod {} Ready without lastTransitionTime", p.name_any()));
        assert!(
            since.as_second() >= restarted.as_second(),
            "pod {} of the new template turned Ready at {since}, before the controller was restarted at {restarted} \
             (SIGKILLed {down_s:.1} s before that): the rollout did not wait",
            p.name_any()
        );
        ready_after_restart.push(since.as_second() - restarted.as_second());
    }
    ready_after_restart.sort();
    eprintln!(
        "no controller for {down_s:.1} s: {samples} API reads, no new pod Ready, 6 old pods kept; new pods turned \
         Ready {ready_after_restart:?} s after the restart"
    );
    eprintln!(
        "controller down {down_s:.1} s (restarted on the same webhook port; it then waits for the dead leader's \
         lease); rollout {rollout_s:.1} s; failing seconds: {}",
        failing_seconds(&summary)
    );
    print_scenario("controller_killed", &summary, &format!("{rollout_s:.1}"), min_healthy);
    assert_no_failure(&sc, &format!("a rollout with the controller killed for {down_s:.1} s"), &summary);
    sc.teardown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn leader_failover_mid_rollout_fails_no_request() {
    let _serial = super::dataplane::SERIAL.lock().await;
    let Some(mut sc) = Scene::setup("leader_failover", true, 6).await else { return };
    // A second replica on the same lease: a follower with warm caches, serving its own webhook.
    let lease = format!("{}-leader", sc.ns);
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> = Api::namespaced(sc.client.clone(), &sc.ns);
    let leader = eventually(&format!("Lease {}/{lease} held", sc.ns), 30, || async {
        leases.get_opt(&lease).await.ok()??.spec?.holder_identity.filter(|h| !h.is_empty())
    })
    .await;
    let standby_port = free_port();
    let standby = start_controller(&sc.env, &sc.ns, &sc.cert_dir, standby_port, &sc.ctl_args).await;
    let run = sc.start_rollout(1).await;
    let run_started = run.started;
    let (name, _) = sc.first_new_pod_registered().await;
    sc.ctl.take().expect("leader running").kill();
    let killed = Instant::now();
    // The webhook Service would now send admissions to the remaining replica only.
    register_pod_webhook(&sc.client, &sc.ns, &sc.mwc_name, &sc.ca, standby_port).await;
    sc.ctl = Some(standby);
    let new_leader = eventually(&format!("Lease {}/{lease} taken over", sc.ns), 60, || async {
        leases.get_opt(&lease).await.ok()??.spec?.holder_identity.filter(|h| !h.is_empty() && *h != leader)
    })
    .await;
    let takeover_s = killed.elapsed().as_secs_f64();
    let Measured { summary, rollout_s, min_healthy } = run.finish_rollout(&sc, 6).await;
    let gated = sc.live_pods().await.iter().filter(|p| gates(p).contains(&sc.gate)).count();
    assert_eq!(
        gated, 6,
        "pods with gate {} after the failover: {gated} of 6 (the standby's webhook injects it)",
        sc.gate
    );
    eprintln!(
        "leader {leader} SIGKILLed {:.1} s into the rollout (new pod {name} registered); {new_leader} took the lease \
         {takeover_s:.1} s later; rollout {rollout_s:.1} s; failing seconds: {}",
        killed.duration_since(run_started).as_secs_f64(),
        failing_seconds(&summary)
    );
    print_scenario("leader_failover", &summary, &format!("{rollout_s:.1}"), min_healthy);
    assert_no_failure(&sc, "a rollout with the leader killed and the standby taking over", &summary);
    sc.teardown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn aws_rejecting_credentials_mid_rollout_stalls_the_rollout_and_fails_no_request() {
    let _serial = super::dataplane::SERIAL.lock().await;
    let Some(sc) = Scene::setup("credentials_rejected", true, 6).await else { return };
    let run = sc.start_rollout(1).await;
    let (name, ip) = sc.first_new_pod_registered().await;
    // Every call on the target group (DescribeTargetHealth included) refused as with expired keys.
    let fault = sc
        .emu
        .fault(json!({"service": "elasticloadbalancing", "operation": "*", "target_group_arn": sc.tg_arn,
                      "code": "ExpiredToken", "http_status": 403,
                      "message": "The security token included in the request is expired"}))
        .await;
    let from = Instant::now();
    // The data plane's own checks find the target healthy; nothing can tell the controller so.
    let status = sc.dir.join("plane.json");
    eventually(&format!("target {ip} of {name} healthy in the data plane"), 30, || async {
        healthy_routable(&status)?.contains(&ip).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3).saturating_sub(from.elapsed())).await;
    let p = sc.pods_api().get(&name).await.expect("the new pod");
    let gate = cond(&p, &sc.gate);
    let ready = is_ready(&p);
    let old = pods_of_version(&sc, "0").await.len();
    let outage_s = from.elapsed().as_secs_f64();
    sc.emu.clear_fault(&fault).await;
    assert_ne!(
        gate.as_deref(),
        Some("True"),
        "gate {} of pod {name} became True while AWS refused every call",
        sc.gate
    );
    assert!(!ready, "pod {name} became Ready while AWS refused every call");
    assert_eq!(old, 6, "old pods left while AWS refused every call: {old}; expected 6 (the rollout must wait)");
    let resumed = Instant::now();
    eventually(&format!("gate of {name} True once AWS answers again"), 60, || async {
        let p = sc.pods_api().get_opt(&name).await.ok()??;
        (cond(&p, &sc.gate).as_deref() == Some("True")).then_some(())
    })
    .await;
    let resume_s = resumed.elapsed().as_secs_f64();
    let Measured { summary, rollout_s, min_healthy } = run.finish_rollout(&sc, 6).await;
    eprintln!(
        "AWS refused every call on the target group for {outage_s:.1} s; the gate flipped {resume_s:.1} s after it \
         answered again; rollout {rollout_s:.1} s; failing seconds: {}",
        failing_seconds(&summary)
    );
    print_scenario("credentials_rejected", &summary, &format!("{rollout_s:.1}"), min_healthy);
    assert_no_failure(&sc, "a rollout while AWS rejected the controller's credentials", &summary);
    sc.teardown().await;
}

/// When a throttling storm starts.
#[derive(Clone, Copy, Debug, PartialEq)]
enum StormFrom {
    /// As the rollout starts: its first new pod's RegisterTargets is throttled.
    Registration,
    /// Once the rollout's first new pod is registered (its gate about to flip): the
    /// DeregisterTargets of the old pod deleted next is throttled.
    Deregistration,
}

/// A rollout through a storm: every RegisterTargets and DeregisterTargets of the target group
/// throttled for `storm` (real time: the controller and AWS's throttling both run in real time),
/// starting at `from`.
async fn rollout_through_storm(name: &'static str, from: StormFrom, storm: Duration) -> Option<(Scene, Summary)> {
    let sc = Scene::setup(name, true, 6).await?;
    let throttle = || async {
        let mut faults = Vec::new();
        for op in ["RegisterTargets", "DeregisterTargets"] {
            faults.push(
                sc.emu
                    .fault(json!({"service": "elasticloadbalancing", "operation": op, "target_group_arn": sc.tg_arn,
                                  "code": "Throttling", "rate": 1.0}))
                    .await,
            );
        }
        faults
    };
    let run = sc.start_run().await;
    let faults = match from {
        StormFrom::Registration => {
            // Before the change: the first new pod's RegisterTargets cannot slip in ahead of the
            // storm (it did once, when the storm started on the pod's creation: its gate flipped
            // and the old pod's deregistration was throttled instead, as in 5b).
            let faults = throttle().await;
            sc.roll(1).await;
            faults
        }
        StormFrom::Deregistration => {
            sc.roll(1).await;
            eventually("the rollout's first new pod registered in the target group", 60, || async {
                for p in pods_of_version(&sc, "1").await {
                    if target_state(&sc, &pod_ip(&p)?).await.is_some() {
                        return Some(());
                    }
                }
                None
            })
            .await;
            throttle().await
        }
    };
    let storm_start = run.elapsed_s();
    tokio::time::sleep(storm).await;
    for id in &faults {
        sc.emu.clear_fault(id).await;
    }
    let Measured { summary, rollout_s, min_healthy } = run.finish_rollout(&sc, 6).await;
    let log = std::fs::read_to_string(&sc.ctl.as_ref().expect("controller running").log).unwrap_or_default();
    let throttled = log.lines().filter(|l| l.contains("Throttling")).count();
    eprintln!(
        "{name}: storm {:.1} s from {storm_start:.1} s into the rollout ({from:?}; {throttled} controller log lines \
         mention Throttling); rollout {rollout_s:.1} s; failing seconds: {}",
        storm.as_secs_f64(),
        failing_seconds(&summary)
    );
    print_scenario(name, &summary, &format!("{rollout_s:.1}"), min_healthy);
    Some((sc, summary))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn throttling_storm_from_a_registration_mid_rollout_fails_no_request() {
    let _serial = super::dataplane::SERIAL.lock().await;
    let name = "throttling_storm_registration";
    // The 60 s, in real time: the one scenario not time-scaled (it costs about 60 s).
    let storm = Duration::from_secs(60);
    let Some((sc, summary)) = rollout_through_storm(name, StormFrom::Registration, storm).await else { return };
    assert_no_failure(&sc, "a rollout through a RegisterTargets/DeregisterTargets throttling storm", &summary);
    sc.teardown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn throttling_storm_over_a_deregistration_longer_than_pre_stop_is_measured() {
    let _serial = super::dataplane::SERIAL.lock().await;
    let name = "throttling_storm_deregistration";
    // 6 s: longer than the 2 s preStop, which is all this scenario needs to show.
    let storm = Duration::from_secs(6);
    let Some((sc, summary)) = rollout_through_storm(name, StormFrom::Deregistration, storm).await else { return };
    // No number is asserted. The storm (6 s) outlasts the preStop sleep (2 s): the old pod deleted
    // during it cannot be deregistered before its server stops, so new connections reach a
    // stopped server until the health checks mark it unhealthy. No controller can deregister
    // while AWS refuses every call; the preStop sleep is what covers it (docs/zero-downtime.md).
    assert!(summary.total.sent > 500, "lbc-loadgen sent only {} requests: nothing was measured", summary.total.sent);
    sc.teardown().await;
}

/// Ingress → ALB: host `a.example.com` to Service `web` (6 replicas, rolling), host
/// `b.example.com` to Service `other` (3 replicas, steady), both with readiness gates; load on both
/// hosts through the ALB-like data plane (HTTP listener, host rules) while `web` rolls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn ingress_alb_with_two_backends_one_rolling_fails_no_request() {
    const NAME: &str = "alb_two_backends";
    let _serial = super::dataplane::SERIAL.lock().await;
    let Some(bed) = Bed::setup(NAME, true, None, false).await else { return };
    let client = bed.client.clone();
    let ns = bed.ns.clone();
    let env = &bed.env;

    // Two Services, one Ingress with a host rule for each, ALB health checks as the NLB's above.
    let services: Api<Service> = Api::namespaced(client.clone(), &ns);
    for app in ["web", "other"] {
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": app},
            "spec": {"selector": {"app": app}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}});
        services.create(&PostParams::default(), &serde_json::from_value(svc).unwrap()).await.expect("create Service");
    }
    let alb = "alb.ingress.kubernetes.io";
    let ann = json!({
        "kubernetes.io/ingress.class": "alb",
        format!("{alb}/target-type"): "ip",
        format!("{alb}/scheme"): "internal",
        format!("{alb}/healthcheck-path"): "/healthz",
        format!("{alb}/healthcheck-interval-seconds"): "10",
        format!("{alb}/healthcheck-timeout-seconds"): "6",
        format!("{alb}/healthy-threshold-count"): "3",
        format!("{alb}/unhealthy-threshold-count"): "2",
        format!("{alb}/target-group-attributes"): format!("deregistration_delay.timeout_seconds={DEREGISTRATION_DELAY_S}"),
    });
    let rule = |host: &str, svc: &str| {
        json!({"host": host, "http": {"paths": [{"path": "/", "pathType": "Prefix",
            "backend": {"service": {"name": svc, "port": {"number": 80}}}}]}})
    };
    let ing = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "web", "annotations": ann},
        "spec": {"rules": [rule("a.example.com", "web"), rule("b.example.com", "other")]}});
    let ingresses: Api<k8s_openapi::api::networking::v1::Ingress> = Api::namespaced(client.clone(), &ns);
    ingresses.create(&PostParams::default(), &serde_json::from_value(ing).unwrap()).await.expect("create Ingress");
    eventually(&format!("Ingress {ns}/web gets its ALB hostname"), 90, || async {
        ingresses.get_opt("web").await.ok()??.status?.load_balancer?.ingress?.first()?.hostname.clone()
    })
    .await;
    let elb = aws::elbv2(env).await;
    let (lbs, tgs) = aws::stack_arns(&elb, "ingress.k8s.aws/stack", &format!("{ns}/web")).await;
    assert_eq!((lbs.len(), tgs.len()), (1, 2), "one ALB and a target group per backend for Ingress {ns}/web");
    let tgbs: Api<TargetGroupBinding> = Api::namespaced(client.clone(), &ns);
    let bindings = eventually("the controller's two TargetGroupBindings", 30, || async {
        let items = tgbs.list(&ListParams::default()).await.ok()?.items;
        (items.len() == 2).then_some(items)
    })
    .await;
    let gate_of = |svc: &str| {
        let b = bindings.iter().find(|b| b.spec.service_ref.name == svc).expect("a binding per Service");
        format!("target-health.elbv2.k8s.aws/{}", b.name_any())
    };
    let (gate_web, gate_other) = (gate_of("web"), gate_of("other"));

    let (mut plane, fwd) = bed.start_plane(&lbs[0]).await;
    let status = bed.dir.join("plane.json");
    let vpc = &bed.vpc;

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    for (app, n) in [("web", 6), ("other", 3)] {
        let d: Deployment = serde_json::from_value(deployment_named(app, n)).unwrap();
        deployments.create(&PostParams::default(), &d).await.expect("create Deployment");
    }
    // Settled: 9 pods, none terminating, all Ready, each with its Service's gate, all routable.
    let settled = || async {
        let all = pods.list(&ListParams::default()).await.ok()?.items;
        let ready = all.iter().filter(|p| p.metadata.deletion_timestamp.is_none() && is_ready(p)).count();
        if all.len() != 9 || ready != 9 {
            return None;
        }
        let mut ips: Vec<String> = all.iter().filter_map(pod_ip).collect();
        ips.sort();
        (healthy_routable(&status)? == ips).then_some(all)
    };
    let all = eventually("9 Ready pods of web and other, all routable", 120, settled).await;
    for p in &all {
        let want = if p.labels().get("app").map(String::as_str) == Some("web") { &gate_web } else { &gate_other };
        assert_eq!(&gates(p), &vec![want.clone()], "readiness gates of pod {ns}/{}", p.name_any());
    }

    let target = format!("{VIP}:80");
    let load = |host: &str| {
        vpc.command(env!("CARGO_BIN_EXE_lbc-loadgen"))
            .args(["--target", target.as_str(), "--timeout-ms", "3000", "--rate", "100", "--per-second"])
            .args(["--host", host])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawning lbc-loadgen")
    };
    let (load_a, load_b) = (load("a.example.com"), load("b.example.com"));
    let guards = (KillOnDrop(load_a.id()), KillOnDrop(load_b.id()));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let t = Instant::now();
    let patch = json!({"spec": {"template": {"metadata": {"annotations": {"lbc-e2e/version": "1"}}}}});
    deployments.patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.expect("patch Deployment");
    eventually(&format!("rollout of Deployment {ns}/web complete"), 120, || async {
        let d = deployments.get("web").await.ok()?;
        let (generation, st) = (d.metadata.generation?, d.status?);
        (st.observed_generation >= Some(generation)
            && st.updated_replicas == Some(6)
            && st.replicas == Some(6)
            && st.available_replicas == Some(6))
        .then_some(())
    })
    .await;
    let rollout_s = t.elapsed().as_secs_f64();
    eventually("9 Ready pods after the rollout, all routable", 60, settled).await;
    std::mem::forget(guards);
    let (a, b) = (finish_loadgen(load_a).await, finish_loadgen(load_b).await);
    let (sent, failed) = (a.total.sent + b.total.sent, a.total.failed + b.total.failed);
    eprintln!(
        "ALB: a.example.com (web, rolling) sent {} failed {} {:?}; b.example.com (other) sent {} failed {} {:?}; \
         rollout {rollout_s:.1} s; failing seconds a: {}; b: {}",
        a.total.sent,
        a.total.failed,
        a.total.failures,
        b.total.sent,
        b.total.failed,
        b.total.failures,
        failing_seconds(&a),
        failing_seconds(&b)
    );
    let line = format!("SCENARIO {NAME} sent={sent} failed={failed} rollout_s={rollout_s:.1}");
    println!("{line}");
    eprintln!("{line}");
    let log = std::fs::read_to_string(bed.dir.join("plane.log")).unwrap_or_default();
    let tail: Vec<&str> = log.lines().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect();
    assert!(
        a.total.sent > 300 && b.total.sent > 300,
        "lbc-loadgen sent only {} / {} requests",
        a.total.sent,
        b.total.sent
    );
    assert_eq!(
        failed,
        0,
        "Ingress {ns}/web rolling backend web: {failed} failed requests (a: {:?}, b: {:?}); expected 0. Controller \
         log: {}; data plane log (tail):\n{}",
        a.total.failures,
        b.total.failures,
        bed.ctl.log.display(),
        tail.join("\n")
    );

    // Teardown: the ALB goes with the Ingress (the controller removes it), then everything else.
    let _ = plane.kill();
    let _ = plane.wait();
    for app in ["web", "other"] {
        let _ = deployments.delete(app, &DeleteParams::default()).await;
    }
    let _ = ingresses.delete("web", &DeleteParams::default()).await;
    eventually(&format!("Ingress {ns}/web deleted (the controller removes its ALB)"), 60, || async {
        ingresses.get_opt("web").await.ok()?.is_none().then_some(())
    })
    .await;
    drop(fwd);
    let Bed { client, env, ns, mwc_name, ctl, agent, vpc, .. } = bed;
    teardown_bed(&client, &env, &ns, &mwc_name, Some(ctl), agent, vpc).await;
}

/// The data plane's status of target `ip`, if it knows it.
fn plane_target(sc: &Scene, ip: &str) -> Option<Value> {
    sc.plane_status()?["targets"].as_array()?.iter().find(|t| t["id"] == ip).cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn a_pod_failing_health_in_steady_state_stops_getting_new_connections() {
    let _serial = super::dataplane::SERIAL.lock().await;
    let Some(sc) = Scene::setup("pod_fails_health", true, 6).await else { return };
    let run = sc.start_run().await;
    let pod = sc.live_pods().await.into_iter().next().expect("a pod");
    let (name, ip) = (pod.name_any(), pod_ip(&pod).expect("pod IP"));
    eventually(&format!("connections to {name}"), 10, || async {
        (plane_target(&sc, &ip)?["opened"].as_u64()? > 0).then_some(())
    })
    .await;
    let t = Instant::now();
    sc.agent.as_ref().expect("agent running").set_fail_health(&sc.ns, &name, true).unwrap();
    // The load balancer's checks (2 × 10 s, 0.2 s real) and the kubelet's probe (2 × 1 s, 0.2 s
    // real) both see it; the controller deregisters the now un-Ready pod.
    let opened = eventually(&format!("{name} unhealthy in the data plane"), 20, || async {
        let tgt = plane_target(&sc, &ip)?;
        (tgt["state"] == "unhealthy" || tgt["routable"] == false).then(|| tgt["opened"].as_u64().unwrap_or(0))
    })
    .await;
    let out_s = t.elapsed().as_secs_f64();
    eventually(&format!("{name} deregistered by the controller"), 20, || async {
        (target_state(&sc, &ip).await.as_deref() == Some("draining") || target_state(&sc, &ip).await.is_none())
            .then_some(())
    })
    .await;
    let deregistered_s = t.elapsed().as_secs_f64();
    let p = sc.pods_api().get(&name).await.expect("the failing pod");
    let gate = cond(&p, &sc.gate);
    // Load goes on; the failing pod gets no new connection.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let later = plane_target(&sc, &ip).and_then(|t| t["opened"].as_u64()).unwrap_or(opened);
    // Recovery: Ready again, registered again, healthy, routable.
    sc.agent.as_ref().expect("agent running").set_fail_health(&sc.ns, &name, false).unwrap();
    let t2 = Instant::now();
    sc.wait_settled(6, 60).await;
    let back_s = t2.elapsed().as_secs_f64();
    let (summary, min_healthy) = run.stop().await;
    eprintln!(
        "{name} failing health: out of the data plane's rotation {out_s:.2} s later, deregistered {deregistered_s:.2} \
         s later, gate while un-Ready: {gate:?}; routable again {back_s:.1} s after it recovered; failing seconds: {}",
        failing_seconds(&summary)
    );
    print_scenario("pod_fails_health", &summary, &format!("{out_s:.2},{deregistered_s:.2},{back_s:.1}"), min_healthy);
    assert_eq!(later, opened, "new connections went to {name} ({ip}) after it was unhealthy in the data plane");
    assert_no_failure(&sc, "a pod failing health in steady state (its server still answers /)", &summary);
    sc.teardown().await;
}

/// The `aws/` mount's lease (default and max) during the OpenBao scenario: the controller's keys
/// are leased for this long, re-read at 2/3 of it, and expire this long after the last read.
const BAO_LEASE_S: u64 = 10;
/// What `e2e/scripts/bao.sh` tunes the mount to (restored afterwards).
const BAO_LEASE_DEFAULT: &str = "24s";

/// The OpenBao server of `e2e/scripts/bao.sh` as the credentials scenario uses it: a Kubernetes
/// auth role and an AWS engine role of its own, the `aws/` mount's lease cut to [`BAO_LEASE_S`],
/// and sealing / unsealing through the API (the dev server's unseal key is in its log). Dropping
/// it unseals the server and restores the lease, also when the test panics.
struct ScenarioBao {
    addr: String,
    root: String,
    unseal_key: String,
    role_arn: String,
    http: reqwest::Client,
    /// The auth/engine role (the namespace's name) once [`ScenarioBao::bind`] ran.
    role: std::sync::Mutex<Option<String>>,
}

impl ScenarioBao {
    async fn up(env: &Env) -> Self {
        let vars = lbc_e2e::bao::up(env);
        let log_path = env.run_dir().join("logs/bao.log");
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        let unseal_key = log
            .lines()
            .rev()
            .find_map(|l| l.trim().strip_prefix("Unseal Key: "))
            .unwrap_or_else(|| panic!("no 'Unseal Key:' line in {} (the dev server prints it)", log_path.display()))
            .trim()
            .to_string();
        let bao = Self {
            addr: vars["BAO_ADDR"].clone(),
            root: vars["BAO_TOKEN"].clone(),
            unseal_key,
            role_arn: vars["LBC_BAO_AWS_ROLE_ARN"].clone(),
            http: reqwest::Client::new(),
            role: std::sync::Mutex::new(None),
        };
        let lease = format!("{BAO_LEASE_S}s");
        bao.write("sys/mounts/aws/tune", json!({"default_lease_ttl": lease, "max_lease_ttl": lease})).await;
        bao
    }

    async fn write(&self, path: &str, body: Value) {
        lbc_e2e::bao::write(&self.http, &self.addr, &self.root, path, body).await;
    }

    /// A ServiceAccount token (audience `vault`) for `aws-load-balancer-controller` in `ns`, an
    /// auth role and an engine role for it; returns the controller's flags.
    async fn bind(&self, client: &Client, ns: &str, dir: &std::path::Path) -> Vec<String> {
        use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
        use k8s_openapi::api::core::v1::ServiceAccount;
        let sa = "aws-load-balancer-controller";
        let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
        let obj: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": sa}})).unwrap();
        sas.create(&PostParams::default(), &obj).await.expect("create ServiceAccount");
        let tr = TokenRequest {
            spec: TokenRequestSpec {
                audiences: vec!["vault".into()],
                expiration_seconds: Some(3600),
                ..Default::default()
            },
            ..Default::default()
        };
        let token = sas.create_token_request(sa, &PostParams::default(), &tr).await.expect("TokenRequest");
        let token_path = dir.join("vault.jwt");
        std::fs::write(&token_path, token.status.expect("token").token).unwrap();
        let role = ns.to_string();
        self.write(
            &format!("sys/policies/acl/{role}"),
            json!({"policy": format!("path \"aws/sts/{role}\" {{ capabilities = [\"read\"] }}")}),
        )
        .await;
        self.write(
            &format!("auth/kubernetes/role/{role}"),
            json!({"bound_service_account_names": [sa], "bound_service_account_namespaces": [ns], "audience": "vault",
                   "token_policies": [role], "token_ttl": "1h", "token_max_ttl": "4h"}),
        )
        .await;
        self.write(
            &format!("aws/roles/{role}"),
            json!({"credential_type": "assumed_role", "role_arns": [self.role_arn],
                   "default_sts_ttl": "15m", "max_sts_ttl": "1h"}),
        )
        .await;
        *self.role.lock().unwrap() = Some(role.clone());
        vec![
            "--aws-credentials-source=vault".into(),
            format!("--vault-address={}", self.addr),
            format!("--vault-auth-role={role}"),
            format!("--vault-secrets-role={role}"),
            format!("--vault-token-path={}", token_path.display()),
            "--vault-ttl=15m".into(),
        ]
    }

    async fn seal(&self) {
        self.write("sys/seal", json!({})).await;
    }

    async fn unseal(&self) {
        self.write("sys/unseal", json!({"key": self.unseal_key})).await;
    }
}

impl Drop for ScenarioBao {
    /// Unseals (a no-op when unsealed), restores the mount's lease and removes the roles, with
    /// curl: no async runtime is guaranteed here.
    fn drop(&mut self) {
        let call = |method: &str, path: &str, body: &str| {
            let _ = std::process::Command::new("curl")
                .args(["-s", "-o", "/dev/null", "--max-time", "5", "-X", method])
                .args(["-H", &format!("X-Vault-Token: {}", self.root), "-d", body])
                .arg(format!("{}/v1/{path}", self.addr))
                .status();
        };
        call("PUT", "sys/unseal", &json!({"key": self.unseal_key}).to_string());
        let lease = json!({"default_lease_ttl": BAO_LEASE_DEFAULT, "max_lease_ttl": BAO_LEASE_DEFAULT}).to_string();
        call("POST", "sys/mounts/aws/tune", &lease);
        if let Some(role) = self.role.lock().unwrap().take() {
            for path in [
                format!("auth/kubernetes/role/{role}"),
                format!("sys/policies/acl/{role}"),
                format!("aws/roles/{role}"),
            ] {
                call("DELETE", &path, "");
            }
        }
    }
}

/// Whether the controller holds AWS keys that have not expired (its
/// `aws_credentials_expiry_timestamp_seconds{source="vault"}` gauge is in the future).
async fn keys_valid(ctl: &ControllerProc) -> bool {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    ctl.metric("aws_credentials_expiry_timestamp_seconds{source=\"vault\"}").await.is_some_and(|e| e > now)
}

/// The controller takes its AWS keys from OpenBao (Kubernetes auth → AWS secrets engine →
/// sts:AssumeRole in the emulator), leased for 10 s. Mid-rollout OpenBao is sealed: the keys
/// cannot be refreshed and expire; from then on the controller cannot read target health, so no
/// gate flips, no new pod becomes Ready and no old pod is removed (read from the API throughout).
/// Then OpenBao is unsealed; the controller gets new keys and the rollout completes. 0 failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn openbao_sealed_mid_rollout_stalls_the_rollout_until_unsealed_and_fails_no_request() {
    const NAME: &str = "openbao_sealed";
    let _serial = super::dataplane::SERIAL.lock().await;
    if !require_root(NAME) {
        return;
    }
    let Some(env) = Env::require(NAME) else { return };
    let bao = ScenarioBao::up(&env).await;
    drop(env);
    let Some(sc) = Scene::setup_with(NAME, true, 6, Some(&bao)).await else { return };
    let ctl = sc.ctl.as_ref().expect("controller running");
    let run = sc.start_rollout(1).await;
    eventually("the rollout's first new pod", 30, || async { pods_of_version(&sc, "1").await.first().map(|_| ()) })
        .await;
    bao.seal().await;
    let sealed = Instant::now();
    // The keys read before the seal are still handed out until their lease ends; then the
    // controller has none (its expiry gauge is 0 or in the past; /readyz stays 200 by design, so
    // the webhook keeps answering).
    eventually(
        &format!("the controller's keys expired (OpenBao sealed, lease {BAO_LEASE_S} s; log {})", sc.controller_log()),
        BAO_LEASE_S + 30,
        || async { (!keys_valid(ctl).await).then_some(()) },
    )
    .await;
    let expired_s = sealed.elapsed().as_secs_f64();
    // A gate flipped with the last valid keys may still be followed by an old pod's deletion.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let version = |p: &Pod| p.annotations().get("lbc-e2e/version").cloned().unwrap_or_default();
    let snapshot = |pods: &[Pod]| {
        let mut ready: Vec<String> =
            pods.iter().filter(|p| version(p) == "1" && is_ready(p)).map(ResourceExt::name_any).collect();
        ready.sort();
        let old = pods.iter().filter(|p| version(p) == "0" && p.metadata.deletion_timestamp.is_none()).count();
        (ready, old)
    };
    let (ready_at_expiry, old_at_expiry) = snapshot(&sc.all_pods().await);
    assert!(old_at_expiry > 0, "the rollout finished before the keys expired: nothing was stalled");
    // Stalled: read from the API every 250 ms for 6 s; the rollout's pending new pod stays
    // un-Ready, its gate not True (with no keys the controller can neither register its target
    // nor read its health; whether the data plane already routes to it is reported).
    let status = sc.dir.join("plane.json");
    let mut held_back: Option<String> = None;
    let mut held_back_routable = false;
    let hold = Instant::now();
    let mut samples = 0;
    while hold.elapsed() < Duration::from_secs(6) {
        let pods = sc.all_pods().await;
        let (ready, old) = snapshot(&pods);
        assert_eq!(
            (&ready, old),
            (&ready_at_expiry, old_at_expiry),
            "{:.1} s after the keys expired (OpenBao sealed), new pods Ready / old pods left changed from {:?}; \
             expected no change: the controller has no keys, so no gate may flip",
            hold.elapsed().as_secs_f64(),
            (&ready_at_expiry, old_at_expiry)
        );
        let healthy = healthy_routable(&status).unwrap_or_default();
        for p in pods.iter().filter(|p| version(p) == "1" && !is_ready(p) && p.metadata.deletion_timestamp.is_none()) {
            assert_ne!(cond(p, &sc.gate).as_deref(), Some("True"), "gate of {} True with no keys", p.name_any());
            held_back = Some(p.name_any());
            held_back_routable |= pod_ip(p).is_some_and(|ip| healthy.contains(&ip));
        }
        samples += 1;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let held_back = held_back.unwrap_or_else(|| {
        panic!(
            "no new pod of {}/{APP} was pending (un-Ready) while the keys were expired: the stall is not shown (new \
             Ready: {ready_at_expiry:?}, old left: {old_at_expiry})",
            sc.ns
        )
    });
    let sealed_s = sealed.elapsed().as_secs_f64();
    bao.unseal().await;
    let unsealed = Instant::now();
    eventually("the controller has valid keys again", 60, || async { keys_valid(ctl).await.then_some(()) }).await;
    let keys_back_s = unsealed.elapsed().as_secs_f64();
    eventually(&format!("gate of {held_back} True once OpenBao is unsealed"), 60, || async {
        let p = sc.pods_api().get_opt(&held_back).await.ok()??;
        (cond(&p, &sc.gate).as_deref() == Some("True")).then_some(())
    })
    .await;
    let gate_s = unsealed.elapsed().as_secs_f64();
    let Measured { summary, rollout_s, min_healthy } = run.finish_rollout(&sc, 6).await;
    eprintln!(
        "OpenBao sealed {sealed_s:.1} s; the controller's keys expired {expired_s:.1} s after the seal; stalled with \
         {} new pod(s) Ready and {old_at_expiry} old left ({samples} API reads), {held_back} held back (routable \
         healthy in the data plane: {held_back_routable}); after the unseal: keys {keys_back_s:.1} s, gate {gate_s:.1} s; rollout {rollout_s:.1} \
         s; failing seconds: {}",
        ready_at_expiry.len(),
        failing_seconds(&summary)
    );
    print_scenario(NAME, &summary, &format!("{rollout_s:.1}"), min_healthy);
    assert_no_failure(&sc, "a rollout with OpenBao sealed until the controller's keys expired", &summary);
    sc.teardown().await;
    drop(bao);
}
