//! The node agent: Kubernetes pods that are real servers. It replaces kwok's pod lifecycle on
//! nodes of its own, so the pods of real Deployments (kube-controller-manager's ReplicaSets)
//! become `lbc-podserver` processes in network namespaces of a test VPC ([`super::netns`]).
//!
//! - **Nodes.** It creates one node per [`NodeSpec`] (`lbc-dp-<tag>-<zone letter>`, labelled
//!   [`NODE_LABEL`]`=<tag>`, not kwok-annotated so kwok leaves them alone) and keeps them Ready:
//!   status conditions and a Lease in `kube-node-lease`, renewed every [`HEARTBEAT`].
//! - **Scheduling.** The environment has no kube-scheduler. Pods with
//!   `spec.schedulerName: `[`SCHEDULER_NAME`] (in [`AgentConfig::namespace`] when set) are bound
//!   to the agent's node with the fewest live pods (the `pods/binding` subresource).
//! - **Running.** A pod bound to its nodes gets a namespace with a VPC address from its node's pod
//!   CIDR (round robin; an address is free again only after the pod's namespace is gone), an ENI
//!   for that address in the AWS emulator ([`eni`]), the podserver on the container's port, and a
//!   status as the kubelet writes it. Container
//!   readiness follows the readinessProbe (httpGet or tcpSocket; period, timeout and thresholds scaled by
//!   [`AgentConfig::time_scale`]), run from inside the VPC ([`prober`]); Ready is True only when
//!   the container is ready and every readiness gate condition is True.
//! - **Deletion.** On `deletionTimestamp`: readiness probes go on as the kubelet's do (the pod
//!   stays Ready while its server answers; marked not ready at once only when
//!   [`AgentConfig::ready_while_terminating`] is false), the preStop sleep runs,
//!   then SIGTERM, SIGKILL after the rest of the grace period, the namespace is removed, and the
//!   pod is deleted with grace 0 (the kubelet's final delete). Each one is recorded as a
//!   [`Termination`] with its measured times.
//!
//! The agent runs on a runtime of its own (two worker threads), so a test that blocks its thread
//! does not stall it. [`Agent::stop`] (or dropping the [`Agent`], e.g. when a test panics) kills every server,
//! removes the namespaces, force-deletes the pods left on its nodes and deletes the nodes.

pub mod eni;
pub mod ipam;
pub mod kubelet;
pub mod prober;
pub mod programs;

use crate::Env;
use crate::datapath::netns::{PodNet, Vpc, signal};
use anyhow::{Context, Result, bail, ensure};
use futures::StreamExt;
use ipnet::Ipv4Net;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Binding, Node, ObjectReference, Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::json;
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// `spec.schedulerName` of the pods the agent schedules and runs.
pub const SCHEDULER_NAME: &str = "lbc-datapath";
/// Label on the agent's nodes; the value is the agent's tag (for node selectors and tests).
pub const NODE_LABEL: &str = "lbc-e2e/node-agent";
/// Annotation on the agent's nodes: the pid of the process that owns them (leftover sweep).
const OWNER_ANNOTATION: &str = "lbc-e2e/node-agent-pid";
/// Node status and Lease renewal period (the kubelet's default lease renewal is 10 s).
pub const HEARTBEAT: Duration = Duration::from_secs(10);
const LEASE_NS: &str = "kube-node-lease";
const FIELD_MANAGER: &str = "lbc-node-agent";

/// One node of the agent: an availability zone and the pod addresses it hands out.
#[derive(Clone, Debug)]
pub struct NodeSpec {
    pub zone: String,
    pub pod_cidr: Ipv4Net,
    /// The node's InternalIP (`status.hostIP` of its pods).
    pub internal_ip: Ipv4Addr,
    /// The emulator subnet its pods' ENIs go into (None: no ENIs).
    pub subnet_id: Option<String>,
}

/// Where pod ENIs are created (the AWS emulator), and their security group.
#[derive(Clone, Debug)]
pub struct EniConfig {
    pub endpoint: String,
    pub region: String,
    pub security_group: Option<String>,
}

#[derive(Clone, Debug)]
pub struct AgentConfig {
    /// Short `[a-z0-9-]` name: nodes are `lbc-dp-<tag>-<zone letter>`.
    pub tag: String,
    /// The VPC network namespace (`Vpc::name`) the pods' namespaces hang off.
    pub vpc: String,
    pub nodes: Vec<NodeSpec>,
    pub scheduler_name: String,
    /// Only pods of this namespace (tests: their own), or all namespaces.
    pub namespace: Option<String>,
    /// The `lbc-podserver` binary (tests: `env!("CARGO_BIN_EXE_lbc-podserver")`).
    pub podserver: PathBuf,
    /// The `lbc-node-agent` binary, run as the prober (tests: `env!("CARGO_BIN_EXE_lbc-node-agent")`).
    pub agent_bin: PathBuf,
    /// Per-pod control directories (`<run_dir>/<namespace>/<pod>/`: `fail-health`, `latency-ms`,
    /// `server.log`).
    pub run_dir: PathBuf,
    /// Multiplies every kubelet duration: probe delay/period/timeout, preStop sleep, grace period.
    pub time_scale: f64,
    /// true (default): as the real kubelet, readiness probes go on during termination (the pod
    /// stays Ready while its server passes health, so EndpointSlices show it `serving` while
    /// `terminating`). false: a deleted pod is marked not ready at once.
    pub ready_while_terminating: bool,
    /// Create an ENI per pod IP in the emulator (as `e2e/pods` does), or none.
    pub enis: Option<EniConfig>,
    /// Without [`AgentConfig::namespace`]: only pods of namespaces whose name starts with this.
    pub namespace_prefix: Option<String>,
    /// The program each container image runs ([`programs`]); empty: `lbc-podserver` for every pod.
    pub images: Vec<programs::ImageRule>,
}

impl AgentConfig {
    /// Nodes in the private subnets `e2e/up` seeded in the AWS emulator (`e2e/.run/aws-seed.json`),
    /// one per zone, so the controller sees pod IPs of its VPC subnets: pod CIDR = the
    /// `(2 + slot)`-th /22 of the subnet (kwok's nodes use the second), InternalIP `.11 + slot`.
    /// `slot` (0..=5) keeps agents running at once apart.
    pub fn for_env(env: &Env, tag: &str, vpc: &Vpc, slot: u8, podserver: &Path, agent_bin: &Path) -> Result<Self> {
        ensure!(slot <= 5, "agent slot {slot} is out of range: expected 0..=5 (the /22s of a /19 after kwok's)");
        let path = PathBuf::from(env.get("LBC_E2E_ROOT")).join("aws-seed.json");
        let seed: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(&path).with_context(|| format!("reading {} (run e2e/up)", path.display()))?,
        )
        .with_context(|| format!("parsing {}", path.display()))?;
        let mut nodes = Vec::new();
        for s in seed["private_subnets"].as_array().context("aws-seed.json has no private_subnets: run e2e/up")? {
            let cidr: Ipv4Net = s["cidr"].as_str().unwrap_or_default().parse().context("private subnet cidr")?;
            let pod_cidr = cidr.subnets(22).context("subnet smaller than /22")?.nth(2 + slot as usize);
            let pod_cidr = pod_cidr.with_context(|| format!("subnet {cidr} has no /22 number {}", 2 + slot))?;
            let internal_ip = cidr.hosts().nth(10 + slot as usize).context("subnet too small")?;
            ensure!(
                vpc.cidr().contains(&pod_cidr),
                "subnet {cidr} of aws-seed.json is outside the test VPC namespace's CIDR {}: create the VPC with \
                 the emulator's VPC CIDR (LBC_VPC_CIDR={})",
                vpc.cidr(),
                env.get("LBC_VPC_CIDR")
            );
            nodes.push(NodeSpec {
                zone: s["az"].as_str().unwrap_or_default().to_string(),
                pod_cidr,
                internal_ip,
                subnet_id: s["id"].as_str().map(str::to_string),
            });
        }
        ensure!(!nodes.is_empty(), "aws-seed.json lists no private subnet: run e2e/up");
        Ok(Self {
            tag: tag.to_string(),
            vpc: vpc.name().to_string(),
            nodes,
            scheduler_name: SCHEDULER_NAME.into(),
            namespace: None,
            podserver: podserver.to_path_buf(),
            agent_bin: agent_bin.to_path_buf(),
            run_dir: Env::repo_root().join(format!("e2e/.run/datapath/agent-{tag}-{}", std::process::id())),
            time_scale: 1.0,
            ready_while_terminating: true,
            enis: Some(EniConfig {
                endpoint: env.aws_endpoint().to_string(),
                region: seed["region"].as_str().unwrap_or("us-east-1").to_string(),
                security_group: seed["node_security_group_id"].as_str().map(str::to_string),
            }),
            namespace_prefix: None,
            images: Vec::new(),
        })
    }

    pub fn node_name(&self, n: &NodeSpec) -> String {
        format!("lbc-dp-{}-{}", self.tag, n.zone.chars().last().unwrap_or('x'))
    }

    /// `<tag>-<pid>`: the value of the `lbc-e2e/node-agent` tag on this agent's ENIs.
    pub fn agent_id(&self) -> String {
        format!("{}-{}", self.tag, std::process::id())
    }

    fn scale(&self, d: Duration) -> Duration {
        d.mul_f64(self.time_scale)
    }
}

/// A pod the agent runs.
#[derive(Clone, Debug)]
pub struct PodInfo {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub node: String,
    pub ip: Ipv4Addr,
    /// The server's pid (None while starting).
    pub pid: Option<u32>,
    pub netns: Option<String>,
    pub control_dir: PathBuf,
    pub container_ready: bool,
    pub terminating: bool,
}

/// One pod deletion as the agent carried it out; times from when it saw `deletionTimestamp`.
#[derive(Clone, Debug)]
pub struct Termination {
    pub namespace: String,
    pub name: String,
    pub ip: Ipv4Addr,
    /// Wall-clock time the agent saw `deletionTimestamp` (to line up with load-generator counts).
    pub observed_at: std::time::SystemTime,
    /// The preStop sleep the spec asked for (unscaled).
    pub pre_stop: Option<Duration>,
    /// When SIGTERM was sent (after the preStop hook).
    pub sigterm_after: Duration,
    /// When the server had exited.
    pub exited_after: Duration,
    /// Whether it had to be SIGKILLed at the end of the grace period.
    pub killed: bool,
    /// The server's exit status as text.
    pub exit: String,
    /// When its namespace was gone and its address free.
    pub removed_after: Duration,
}

struct PodRt {
    namespace: String,
    name: String,
    node: String,
    ip: Ipv4Addr,
    net: Option<PodNet>,
    child: Option<Child>,
    pid: Option<u32>,
    control: PathBuf,
    ready: bool,
    terminating: Option<Instant>,
    probe: Option<JoinHandle<()>>,
    last: Pod,
    started_at: Option<Time>,
    eni: Option<String>,
}

#[derive(Default)]
struct Shared {
    pods: HashMap<String, PodRt>,
    terminations: Vec<Termination>,
    errors: Vec<String>,
    tasks: Vec<JoinHandle<()>>,
}

type SharedRef = Arc<Mutex<Shared>>;

fn lock(s: &SharedRef) -> std::sync::MutexGuard<'_, Shared> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// A pod's namespace, server and ENI, just made.
struct Launched {
    net: PodNet,
    child: Child,
    eni: Option<String>,
}

enum Ev {
    Pod(Box<Pod>),
    Gone(Box<Pod>),
    /// The watch (re)listed: these UIDs exist; pods deleted during a gap are not among them.
    Listed(std::collections::HashSet<String>),
    Started {
        uid: String,
        node: String,
        ip: Ipv4Addr,
        result: Result<Launched, String>,
    },
    Probe {
        uid: String,
        ready: bool,
    },
    Finished {
        uid: String,
        record: Termination,
    },
}

/// A running agent. [`Agent::stop`] ends it; dropping it without `stop` cleans up too.
pub struct Agent {
    config: AgentConfig,
    /// The agent's own runtime (two workers): a test that blocks its thread (std::thread::join,
    /// a blocking command) never stalls probes, status writes or deletions.
    runtime: Option<tokio::runtime::Runtime>,
    client: Client,
    shared: SharedRef,
    prober: Arc<prober::Prober>,
    tasks: Vec<JoinHandle<()>>,
    node_names: Vec<String>,
    stopped: bool,
}

async fn kube_config(env: &Env) -> Result<kube::Config> {
    let kc = kube::config::Kubeconfig::read_from(env.get("KUBECONFIG")).context("reading the e2e kubeconfig")?;
    Ok(kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default()).await?)
}

impl Agent {
    /// Creates the nodes (sweeping those of dead agents), starts the prober in the VPC
    /// namespace, and starts scheduling and running pods.
    pub async fn start(env: &Env, config: AgentConfig) -> Result<Self> {
        ensure!(
            !config.tag.is_empty()
                && config.tag.len() <= 20
                && config.tag.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "agent tag {:?} is invalid: expected 1-20 characters of [a-z0-9-]",
            config.tag
        );
        ensure!(config.time_scale > 0.0, "time_scale {} must be > 0", config.time_scale);
        let vpc = Arc::new(Vpc::attach(&config.vpc)?);
        let kube_config = kube_config(env).await?;
        std::fs::create_dir_all(&config.run_dir).with_context(|| format!("creating {}", config.run_dir.display()))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(format!("node-agent-{}", config.tag))
            .enable_all()
            .build()
            .context("building the agent's runtime")?;
        // Everything (the client's connections included) lives on the agent's runtime.
        let setup = runtime.spawn(Self::launch(kube_config, config.clone(), vpc)).await;
        match setup {
            Ok(Ok((client, shared, prober, tasks, node_names))) => {
                Ok(Self { config, runtime: Some(runtime), client, shared, prober, tasks, node_names, stopped: false })
            }
            Ok(Err(e)) => {
                runtime.shutdown_background();
                Err(e)
            }
            Err(e) => {
                runtime.shutdown_background();
                bail!("starting the node agent: {e}")
            }
        }
    }

    #[allow(clippy::type_complexity)]
    async fn launch(
        kube_config: kube::Config,
        config: AgentConfig,
        vpc: Arc<Vpc>,
    ) -> Result<(Client, SharedRef, Arc<prober::Prober>, Vec<JoinHandle<()>>, Vec<String>)> {
        let client = Client::try_from(kube_config)?;
        let node_names: Vec<String> = config.nodes.iter().map(|n| config.node_name(n)).collect();
        sweep_nodes(&client, &node_names).await?;
        for n in &config.nodes {
            create_node(&client, &config, n).await?;
        }
        let prober = Arc::new(prober::Prober::spawn(&config.vpc, &config.agent_bin)?);
        let shared: SharedRef = Arc::default();
        let (tx, rx) = mpsc::unbounded_channel();
        let mut tasks = vec![tokio::spawn(heartbeat(client.clone(), node_names.clone()))];
        tasks.push(tokio::spawn(watch_pods(client.clone(), config.clone(), tx.clone())));
        let runner = Runner {
            client: client.clone(),
            config: config.clone(),
            shared: shared.clone(),
            pools: config.nodes.iter().map(|n| (config.node_name(n), ipam::Pool::new(n.pod_cidr))).collect(),
            host_ips: config.nodes.iter().map(|n| (config.node_name(n), n.internal_ip)).collect(),
            pending_binds: HashMap::new(),
            tx,
            prober: prober.clone(),
            vpc,
            enis: config.enis.as_ref().map(|e| eni::Enis::new(&e.endpoint, &e.region)),
            subnets: config.nodes.iter().filter_map(|n| Some((config.node_name(n), n.subnet_id.clone()?))).collect(),
        };
        tasks.push(tokio::spawn(runner.run(rx)));
        Ok((client, shared, prober, tasks, node_names))
    }

    pub fn node_names(&self) -> &[String] {
        &self.node_names
    }

    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// The control directory of pod `ns/pod` (the podserver reads `fail-health` and `latency-ms` there).
    pub fn control_dir(&self, ns: &str, pod: &str) -> PathBuf {
        self.config.run_dir.join(ns).join(pod)
    }

    /// Tells pod `ns/pod`'s server to fail (or pass) its health check.
    pub fn set_fail_health(&self, ns: &str, pod: &str, fail: bool) -> Result<()> {
        let f = self.control_dir(ns, pod).join("fail-health");
        if fail {
            std::fs::write(&f, "")
        } else {
            match std::fs::remove_file(&f) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                r => r,
            }
        }
        .with_context(|| format!("writing {}", f.display()))
    }

    /// The pods running (or starting, or terminating) now.
    pub fn pods(&self) -> Vec<PodInfo> {
        let s = lock(&self.shared);
        let mut v: Vec<PodInfo> = s
            .pods
            .iter()
            .map(|(uid, p)| PodInfo {
                namespace: p.namespace.clone(),
                name: p.name.clone(),
                uid: uid.clone(),
                node: p.node.clone(),
                ip: p.ip,
                pid: p.pid,
                netns: p.net.as_ref().map(|n| n.netns().to_string()),
                control_dir: p.control.clone(),
                container_ready: p.ready,
                terminating: p.terminating.is_some(),
            })
            .collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// The deletions carried out so far, in order of completion.
    pub fn terminations(&self) -> Vec<Termination> {
        lock(&self.shared).terminations.clone()
    }

    /// What went wrong so far (unsupported specs, failed API calls), for test assertions.
    pub fn errors(&self) -> Vec<String> {
        lock(&self.shared).errors.clone()
    }

    /// Stops the agent: kills every server, removes the pod namespaces, force-deletes the pods
    /// left on its nodes and deletes the nodes (and their Leases).
    pub async fn stop(mut self) -> Result<()> {
        self.stopped = true;
        self.halt_local();
        let runtime = self.runtime.take().context("agent runtime gone")?;
        let cleanup = self.remote_cleanup();
        let done = runtime.spawn(cleanup).await;
        runtime.shutdown_background();
        done.context("deleting the agent's nodes")?
    }

    /// What stop and drop do through the APIs: delete the pods' ENIs (all tagged with this agent's
    /// id, so those of aborted terminations too), force-delete the pods, delete the nodes.
    fn remote_cleanup(&self) -> impl std::future::Future<Output = Result<()>> + Send + 'static {
        let (client, nodes) = (self.client.clone(), self.node_names.clone());
        let enis = self.config.enis.as_ref().map(|e| eni::Enis::new(&e.endpoint, &e.region));
        let id = self.config.agent_id();
        async move {
            let enis_gone = match enis {
                Some(enis) => enis.delete_tagged(&id).await,
                None => Ok(()),
            };
            delete_nodes(&client, &nodes).await?;
            enis_gone
        }
    }

    /// Stops the tasks, the servers and the prober, and removes the namespaces.
    fn halt_local(&mut self) {
        for t in self.tasks.drain(..) {
            t.abort();
        }
        let (pods, tasks) = {
            let mut s = lock(&self.shared);
            (std::mem::take(&mut s.pods), std::mem::take(&mut s.tasks))
        };
        for t in tasks {
            t.abort();
        }
        for (_, mut p) in pods {
            if let Some(t) = p.probe.take() {
                t.abort();
            }
            if let Some(mut c) = p.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
            if let Some(net) = p.net.take()
                && let Err(e) = net.remove()
            {
                eprintln!(
                    "[node-agent {}] removing the namespace of {}/{}: {e:#}",
                    self.config.tag, p.namespace, p.name
                );
            }
        }
        self.prober.kill();
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if self.stopped {
            return;
        }
        self.halt_local();
        let Some(runtime) = self.runtime.take() else { return };
        // Possibly while a test panics, maybe on a runtime thread: run the deletion on the
        // agent's runtime and wait for it here.
        let (cleanup, tag) = (self.remote_cleanup(), self.config.tag.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        runtime.spawn(async move {
            let r = tokio::time::timeout(Duration::from_secs(20), cleanup).await;
            let _ = tx.send(r.unwrap_or_else(|_| Err(anyhow::anyhow!("deleting the nodes timed out after 20 s"))));
        });
        let done = rx.recv_timeout(Duration::from_secs(25)).unwrap_or_else(|e| Err(anyhow::anyhow!("{e}")));
        runtime.shutdown_background();
        if let Err(e) = done {
            eprintln!("[node-agent {tag}] cleanup on drop: {e:#}");
        }
    }
}

/// Deletes agent nodes owned by processes that are gone and any node named like ours (left by an
/// earlier agent of this process), with the pods bound to them.
async fn sweep_nodes(client: &Client, ours: &[String]) -> Result<()> {
    let nodes = Api::<Node>::all(client.clone()).list(&ListParams::default().labels(NODE_LABEL)).await?;
    let stale: Vec<String> = nodes
        .items
        .iter()
        .filter(|n| {
            let pid = n.annotations().get(OWNER_ANNOTATION).and_then(|p| p.parse::<u32>().ok());
            ours.contains(&n.name_any()) || !pid.is_some_and(|p| Path::new(&format!("/proc/{p}")).exists())
        })
        .map(|n| n.name_any())
        .collect();
    delete_nodes(client, &stale).await
}

/// Force-deletes the pods bound to `nodes`, deletes the nodes and their Leases, and waits until
/// the nodes are gone.
async fn delete_nodes(client: &Client, nodes: &[String]) -> Result<()> {
    let node_api = Api::<Node>::all(client.clone());
    let lease_api = Api::<Lease>::namespaced(client.clone(), LEASE_NS);
    let force = DeleteParams { grace_period_seconds: Some(0), ..Default::default() };
    for n in nodes {
        let pods =
            Api::<Pod>::all(client.clone()).list(&ListParams::default().fields(&format!("spec.nodeName={n}"))).await?;
        for p in pods.items {
            let api = Api::<Pod>::namespaced(client.clone(), &p.namespace().unwrap_or_default());
            ignore_not_found(api.delete(&p.name_any(), &force).await.map(|_| ()))?;
        }
        ignore_not_found(node_api.delete(n, &DeleteParams::default()).await.map(|_| ()))?;
        ignore_not_found(lease_api.delete(n, &DeleteParams::default()).await.map(|_| ()))?;
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    for n in nodes {
        while node_api.get_opt(n).await?.is_some() {
            ensure!(Instant::now() < deadline, "node {n} still exists 15 s after its deletion: check its finalizers");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(())
}

fn ignore_not_found(r: kube::Result<()>) -> Result<()> {
    match r {
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
        other => Ok(other?),
    }
}

fn now_time() -> Time {
    Time(jiff::Timestamp::now())
}

fn node_status(n: &NodeSpec, name: &str) -> serde_json::Value {
    let now = json!(now_time());
    let cond = |t: &str, status: &str, reason: &str, msg: &str| {
        json!({"type": t, "status": status, "reason": reason, "message": msg,
               "lastHeartbeatTime": now, "lastTransitionTime": now})
    };
    json!({"status": {
        "conditions": [
            cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            cond("Ready", "True", "KubeletReady", "lbc-node-agent is posting ready status"),
        ],
        "addresses": [{"type": "InternalIP", "address": n.internal_ip.to_string()}, {"type": "Hostname", "address": name}],
        "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
        "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "", "osImage": "lbc-e2e",
                     "containerRuntimeVersion": "lbc-node-agent://0", "kubeletVersion": "v1.34.0",
                     "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"},
    }})
}

async fn create_node(client: &Client, c: &AgentConfig, n: &NodeSpec) -> Result<()> {
    let name = c.node_name(n);
    let region = n.zone.trim_end_matches(|ch: char| ch.is_ascii_lowercase());
    // As e2e/up's nodes: the subnet and security group of the node's pod ENIs.
    let mut annotations =
        json!({OWNER_ANNOTATION: std::process::id().to_string(), "node.alpha.kubernetes.io/ttl": "0"});
    if let Some(subnet) = &n.subnet_id {
        annotations["lbc-e2e/subnet-id"] = json!(subnet);
    }
    if let Some(sg) = c.enis.as_ref().and_then(|e| e.security_group.as_ref()) {
        annotations["lbc-e2e/security-group-id"] = json!(sg);
    }
    let node: Node = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": n.zone, "topology.kubernetes.io/region": region,
                NODE_LABEL: c.tag,
            },
            "annotations": annotations,
        },
        "spec": {"podCIDR": n.pod_cidr.to_string(), "podCIDRs": [n.pod_cidr.to_string()]},
    }))?;
    let api = Api::<Node>::all(client.clone());
    let created = api.create(&PostParams::default(), &node).await.with_context(|| format!("creating node {name}"))?;
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(node_status(n, &name)))
        .await
        .with_context(|| format!("setting node {name} Ready"))?;
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": LEASE_NS, "ownerReferences": [{
            "apiVersion": "v1", "kind": "Node", "name": name, "uid": created.uid().unwrap_or_default()}]},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": MicroTime(jiff::Timestamp::now())},
    }))?;
    let leases = Api::<Lease>::namespaced(client.clone(), LEASE_NS);
    let _ = leases.delete(&name, &DeleteParams::default()).await;
    leases
        .create(&PostParams::default(), &lease)
        .await
        .with_context(|| format!("creating the Lease of node {name}"))?;
    Ok(())
}

/// How long a pod waits for the Secrets its volumes name (the kubelet waits forever; a test would rather fail).
const SECRET_WAIT: Duration = Duration::from_secs(180);

/// Writes each Secret volume's files under the pod's control directory, waiting for Secrets not created yet.
async fn materialise_secrets(
    api: &Api<Secret>,
    pod: &str,
    mounts: &[programs::SecretMount],
    control: &Path,
) -> Result<(), String> {
    for m in mounts {
        let started = Instant::now();
        let secret = loop {
            match api.get_opt(&m.secret).await {
                Ok(Some(s)) => break s,
                Ok(None) if started.elapsed() < SECRET_WAIT => tokio::time::sleep(Duration::from_millis(500)).await,
                Ok(None) => {
                    return Err(format!(
                        "pod {pod}: Secret {:?} of volume {:?} did not appear within {SECRET_WAIT:?}",
                        m.secret, m.volume
                    ));
                }
                Err(e) => {
                    return Err(format!("pod {pod}: reading Secret {:?} of volume {:?}: {e}", m.secret, m.volume));
                }
            }
        };
        let files = programs::secret_files(m, &secret).map_err(|e| format!("pod {pod}: {e}"))?;
        let dir = programs::mount_dir(control, m);
        for (path, bytes) in files {
            let file = dir.join(&path);
            let written =
                file.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| std::fs::write(&file, bytes));
            written.map_err(|e| format!("pod {pod}: writing {}: {e}", file.display()))?;
        }
    }
    Ok(())
}

/// Renews the nodes' Leases and Ready conditions every [`HEARTBEAT`].
async fn heartbeat(client: Client, nodes: Vec<String>) {
    let nodes_api = Api::<Node>::all(client.clone());
    let leases = Api::<Lease>::namespaced(client, LEASE_NS);
    loop {
        tokio::time::sleep(HEARTBEAT).await;
        for n in &nodes {
            let renew = json!({"spec": {"renewTime": MicroTime(jiff::Timestamp::now())}});
            if let Err(e) = leases.patch(n, &PatchParams::default(), &Patch::Merge(renew)).await {
                eprintln!("[node-agent] renewing the Lease of node {n}: {e}");
            }
            let beat = json!({"status": {"conditions": [{"type": "Ready", "lastHeartbeatTime": now_time()}]}});
            if let Err(e) = nodes_api.patch_status(n, &PatchParams::default(), &Patch::Strategic(beat)).await {
                eprintln!("[node-agent] heartbeat of node {n}: {e}");
            }
        }
    }
}

/// Feeds the runner every pod with the agent's scheduler name (in its namespace, if any).
async fn watch_pods(client: Client, config: AgentConfig, tx: mpsc::UnboundedSender<Ev>) {
    let api: Api<Pod> = match &config.namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::all(client),
    };
    let wc = watcher::Config::default().fields(&format!("spec.schedulerName={}", config.scheduler_name));
    let mut stream = watcher(api, wc).default_backoff().boxed();
    let mut listed = std::collections::HashSet::new();
    let prefix = config.namespace_prefix.clone().filter(|_| config.namespace.is_none());
    let ours = |p: &Pod| prefix.as_ref().is_none_or(|x| p.namespace().unwrap_or_default().starts_with(x.as_str()));
    while let Some(ev) = stream.next().await {
        let ev = match ev {
            Ok(watcher::Event::InitApply(p) | watcher::Event::Apply(p) | watcher::Event::Delete(p)) if !ours(&p) => {
                continue;
            }
            ev => ev,
        };
        let sent = match ev {
            Ok(watcher::Event::Init) => {
                listed.clear();
                Ok(())
            }
            Ok(watcher::Event::InitApply(p)) => {
                listed.extend(p.uid());
                tx.send(Ev::Pod(Box::new(p)))
            }
            Ok(watcher::Event::InitDone) => tx.send(Ev::Listed(std::mem::take(&mut listed))),
            Ok(watcher::Event::Apply(p)) => tx.send(Ev::Pod(Box::new(p))),
            Ok(watcher::Event::Delete(p)) => tx.send(Ev::Gone(Box::new(p))),
            Err(e) => {
                eprintln!("[node-agent {}] pod watch: {e}", config.tag);
                Ok(())
            }
        };
        if sent.is_err() {
            return;
        }
    }
}

struct Runner {
    client: Client,
    config: AgentConfig,
    shared: SharedRef,
    pools: HashMap<String, ipam::Pool>,
    host_ips: HashMap<String, Ipv4Addr>,
    /// Pods bound but not yet seen with their `nodeName`: counted when spreading.
    pending_binds: HashMap<String, String>,
    tx: mpsc::UnboundedSender<Ev>,
    prober: Arc<prober::Prober>,
    vpc: Arc<Vpc>,
    enis: Option<eni::Enis>,
    /// ENI subnet of each node.
    subnets: HashMap<String, String>,
}

impl Runner {
    async fn delete_eni(&self, eni: Option<String>) {
        if let (Some(enis), Some(id)) = (&self.enis, eni)
            && let Err(e) = enis.delete(&id).await
        {
            self.error(format!("deleting ENI {id}: {e:#}"));
        }
    }

    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Ev>) {
        while let Some(ev) = rx.recv().await {
            match ev {
                Ev::Pod(p) => self.on_pod(*p).await,
                Ev::Gone(p) => self.on_gone(*p).await,
                Ev::Listed(uids) => {
                    let missing: Vec<Pod> = lock(&self.shared)
                        .pods
                        .iter()
                        .filter(|(uid, _)| !uids.contains(*uid))
                        .map(|(_, p)| p.last.clone())
                        .collect();
                    for p in missing {
                        self.on_gone(p).await;
                    }
                }
                Ev::Started { uid, node, ip, result } => self.on_started(uid, node, ip, result).await,
                Ev::Probe { uid, ready } => {
                    if let Some(p) = lock(&self.shared).pods.get_mut(&uid)
                        && (p.terminating.is_none() || self.config.ready_while_terminating)
                    {
                        p.ready = ready;
                    }
                    self.sync_status(&uid).await;
                }
                Ev::Finished { uid, record } => self.on_finished(uid, record).await,
            }
        }
    }

    fn error(&self, msg: String) {
        eprintln!("[node-agent {}] {msg}", self.config.tag);
        lock(&self.shared).errors.push(msg);
    }

    fn pods_api(&self, ns: &str) -> Api<Pod> {
        Api::namespaced(self.client.clone(), ns)
    }

    async fn on_pod(&mut self, pod: Pod) {
        let Some(uid) = pod.uid() else { return };
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
        if node.as_ref().is_some_and(|n| !self.pools.contains_key(n)) {
            return; // bound to a node that is not ours
        }
        let deleting = pod.metadata.deletion_timestamp.is_some();
        let known = lock(&self.shared).pods.contains_key(&uid);
        match (node, deleting, known) {
            (None, false, _) => self.bind(&pod, &uid).await,
            (None, true, _) => {} // the API server deletes unscheduled pods at once
            (Some(_), true, true) => self.begin_termination(&uid, pod).await,
            (Some(_), true, false) => {
                self.final_delete(&pod.namespace().unwrap_or_default(), &pod.name_any(), &uid).await
            }
            (Some(node), false, false) => {
                self.pending_binds.remove(&uid);
                self.start(pod, uid, node);
            }
            (Some(_), false, true) => {
                if let Some(p) = lock(&self.shared).pods.get_mut(&uid) {
                    p.last = pod;
                }
                self.sync_status(&uid).await;
            }
        }
    }

    /// Binds the pod to the node with the fewest live pods (ties: node order).
    async fn bind(&mut self, pod: &Pod, uid: &str) {
        if self.pending_binds.contains_key(uid) {
            return;
        }
        let node = {
            let s = lock(&self.shared);
            let load = |n: &String| {
                s.pods.values().filter(|p| &p.node == n && p.terminating.is_none()).count()
                    + self.pending_binds.values().filter(|b| *b == n).count()
            };
            let mut names: Vec<&String> = self.pools.keys().collect();
            names.sort();
            names.into_iter().min_by_key(|n| load(n)).cloned()
        };
        let Some(node) = node else { return };
        let (ns, name) = (pod.namespace().unwrap_or_default(), pod.name_any());
        let binding = Binding {
            metadata: kube::api::ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(ns.clone()),
                ..Default::default()
            },
            target: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Node".into()),
                name: Some(node.clone()),
                ..Default::default()
            },
        };
        let r: kube::Result<serde_json::Value> =
            self.pods_api(&ns).create_subresource("binding", &name, &PostParams::default(), &binding).await;
        match r {
            Ok(_) => {
                self.pending_binds.insert(uid.to_string(), node);
            }
            Err(kube::Error::Api(s)) if s.code == 409 || s.is_not_found() => {} // bound already, or gone
            Err(e) => self.error(format!("binding pod {ns}/{name} to node {node}: {e}")),
        }
    }

    fn start(&mut self, pod: Pod, uid: String, node: String) {
        let (ns, name) = (pod.namespace().unwrap_or_default(), pod.name_any());
        let Some(c) = kubelet::main_container(&pod).cloned() else {
            return self.error(format!("pod {ns}/{name} has no container"));
        };
        let image = c.image.clone().unwrap_or_default();
        let program = match programs::program_for(&self.config.images, &image) {
            Ok(p) => p,
            Err(e) => return self.error(format!("pod {ns}/{name}: {e}")),
        };
        // A placeholder runs nothing: its volumes (the suite's coredns has a ConfigMap) are never read.
        let mounts = match programs::secret_mounts(&pod, &c) {
            _ if program == programs::Program::Placeholder => Vec::new(),
            Ok(m) => m,
            Err(e) => return self.error(format!("pod {ns}/{name}: {e}")),
        };
        for problem in [kubelet::readiness_probe(&c).err(), kubelet::pre_stop(&c).err()].into_iter().flatten() {
            self.error(format!("pod {ns}/{name}: {problem}"));
        }
        let Some(ip) = self.pools.get_mut(&node).and_then(|p| p.allocate()) else {
            return self.error(format!(
                "pod {ns}/{name}: node {node} has no free pod address left in its pod CIDR: delete pods or add nodes"
            ));
        };
        let control = self.config.run_dir.join(&ns).join(&name);
        let spec_pod = pod.clone();
        let rt = PodRt {
            namespace: ns.clone(),
            name: name.clone(),
            node: node.clone(),
            ip,
            net: None,
            child: None,
            pid: None,
            control: control.clone(),
            ready: false,
            terminating: None,
            probe: None,
            last: pod,
            started_at: None,
            eni: None,
        };
        lock(&self.shared).pods.insert(uid.clone(), rt);
        let (vpc, tx, bin) = (self.vpc.clone(), self.tx.clone(), self.config.podserver.clone());
        let port = kubelet::server_port(&c);
        let enis = self.enis.clone();
        let subnet = self.subnets.get(&node).cloned();
        let sg = self.config.enis.as_ref().and_then(|e| e.security_group.clone());
        let key = format!("{ns}/{name}");
        let agent_id = self.config.agent_id();
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &ns);
        let node_name = node.clone();
        tokio::spawn(async move {
            // Secret volumes first: as the kubelet, the container starts only once its Secrets exist.
            if let Err(e) = materialise_secrets(&secrets, &key, &mounts, &control).await {
                let _ = tx.send(Ev::Started { uid, node, ip, result: Err(e) });
                return;
            }
            // The ENI first, so it exists before the pod reports its IP (as with Cilium ENI mode).
            let eni = match (&enis, &subnet) {
                (Some(enis), Some(subnet)) => match enis.create(&key, &agent_id, ip, subnet, sg.as_deref()).await {
                    Ok(id) => Some(id),
                    Err(e) => {
                        let result = Err(format!("creating the ENI of pod {key} at {ip}: {e:#}"));
                        let _ = tx.send(Ev::Started { uid, node, ip, result });
                        return;
                    }
                },
                _ => None,
            };
            let launched = tokio::task::spawn_blocking(move || {
                (|| -> Result<(PodNet, Child)> {
                    std::fs::create_dir_all(&control)?;
                    let net = vpc.add_pod(&format!("{ns}.{name}"), ip)?;
                    let log = std::fs::File::create(control.join("server.log"))?;
                    let mut cmd = match &program {
                        programs::Program::PodServer => {
                            let mut cmd = net.command(&bin);
                            cmd.args(["--name", &name, "--port", &port.to_string(), "--control-dir"]).arg(&control);
                            cmd
                        }
                        programs::Program::Binary(path) => {
                            let env =
                                programs::container_env(&spec_pod, &c, &ip.to_string(), &node_name, &mounts, &control)
                                    .map_err(anyhow::Error::msg)?;
                            let mut cmd = net.command(path);
                            cmd.env_clear().env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin").envs(env);
                            cmd
                        }
                        programs::Program::Placeholder => {
                            let mut cmd = net.command("sleep");
                            cmd.arg("infinity");
                            cmd
                        }
                    };
                    let child = cmd
                        .stdin(Stdio::null())
                        .stdout(log.try_clone()?)
                        .stderr(log)
                        .spawn()
                        .with_context(|| format!("starting the program of image {image:?}"))?;
                    Ok((net, child))
                })()
                .map_err(|e| format!("starting pod {ns}/{name} at {ip}: {e:#}"))
            })
            .await
            .unwrap_or_else(|e| Err(format!("starting a pod at {ip}: {e}")));
            let result = match launched {
                Ok((net, child)) => Ok(Launched { net, child, eni }),
                Err(e) => {
                    if let (Some(enis), Some(id)) = (&enis, &eni) {
                        let _ = enis.delete(id).await;
                    }
                    Err(e)
                }
            };
            // A closed channel (agent stopped) drops the namespace and with it the server.
            let _ = tx.send(Ev::Started { uid, node, ip, result });
        });
    }

    async fn on_started(&mut self, uid: String, node: String, ip: Ipv4Addr, result: Result<Launched, String>) {
        let Launched { net, child, eni } = match result {
            Ok(r) => r,
            Err(e) => {
                self.error(e);
                let gone = lock(&self.shared).pods.remove(&uid);
                if let Some(p) = self.pools.get_mut(&node) {
                    p.release(ip);
                }
                if let Some(p) = gone
                    && p.terminating.is_some()
                {
                    self.final_delete(&p.namespace, &p.name, &uid).await;
                }
                return;
            }
        };
        let terminating = {
            let mut s = lock(&self.shared);
            match s.pods.get_mut(&uid) {
                None => Err((net, child, eni)),
                Some(p) => {
                    p.eni = eni;
                    p.pid = Some(child.id());
                    p.child = Some(child);
                    p.net = Some(net);
                    p.started_at = Some(now_time());
                    Ok(p.terminating.is_some())
                }
            }
        };
        let terminating = match terminating {
            Ok(t) => t,
            Err((net, mut child, eni)) => {
                // Deleted (force) while starting.
                let _ = child.kill();
                let _ = child.wait();
                let _ = tokio::task::spawn_blocking(move || net.remove()).await;
                self.delete_eni(eni).await;
                if let Some(p) = self.pools.get_mut(&node) {
                    p.release(ip);
                }
                return;
            }
        };
        if terminating {
            self.spawn_termination(&uid);
            return;
        }
        let probe = {
            let s = lock(&self.shared);
            s.pods
                .get(&uid)
                .and_then(|p| kubelet::main_container(&p.last))
                .and_then(|c| kubelet::readiness_probe(c).ok().flatten())
        };
        match probe {
            None => {
                if let Some(p) = lock(&self.shared).pods.get_mut(&uid) {
                    p.ready = true;
                }
            }
            Some(probe) => {
                let task = tokio::spawn(probe_loop(
                    self.prober.clone(),
                    self.tx.clone(),
                    uid.clone(),
                    SocketAddr::from((ip, probe.port)),
                    probe,
                    self.config.time_scale,
                ));
                if let Some(p) = lock(&self.shared).pods.get_mut(&uid) {
                    p.probe = Some(task);
                }
            }
        }
        self.sync_status(&uid).await;
    }

    /// Writes the pod's status when what the API server has differs from what the agent knows.
    async fn sync_status(&mut self, uid: &str) {
        let (pod, run) = {
            let s = lock(&self.shared);
            let Some(p) = s.pods.get(uid) else { return };
            let (Some(_), Some(started_at)) = (&p.net, &p.started_at) else { return };
            let run = kubelet::Running {
                pod_ip: p.ip.to_string(),
                host_ip: self.host_ips.get(&p.node).map(|i| i.to_string()).unwrap_or_default(),
                started_at: started_at.clone(),
                container_id: format!("lbc-node-agent://{}", p.pid.unwrap_or(0)),
                ready: p.ready && (p.terminating.is_none() || self.config.ready_while_terminating),
            };
            (p.last.clone(), run)
        };
        let has_ip = pod.status.as_ref().and_then(|s| s.pod_ip.as_deref()) == Some(&run.pod_ip);
        if has_ip && kubelet::readiness_current(&pod, run.ready) {
            return;
        }
        let (ns, name) = (pod.namespace().unwrap_or_default(), pod.name_any());
        let patch = kubelet::status_patch(&pod, &run);
        match self
            .pods_api(&ns)
            .patch_status(
                &name,
                &PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() },
                &Patch::Strategic(patch),
            )
            .await
        {
            Ok(updated) => {
                if let Some(p) = lock(&self.shared).pods.get_mut(uid) {
                    p.last = updated;
                }
            }
            Err(kube::Error::Api(s)) if s.is_not_found() => {}
            Err(e) => self.error(format!("writing the status of pod {ns}/{name}: {e}")),
        }
    }

    async fn begin_termination(&mut self, uid: &str, pod: Pod) {
        let start_now = {
            let mut s = lock(&self.shared);
            let Some(p) = s.pods.get_mut(uid) else { return };
            p.last = pod;
            if p.terminating.is_some() {
                return;
            }
            p.terminating = Some(Instant::now());
            if !self.config.ready_while_terminating {
                p.ready = false;
                if let Some(t) = p.probe.take() {
                    t.abort();
                }
            }
            p.net.is_some()
        };
        if start_now {
            self.sync_status(uid).await; // not ready first, as the kubelet
            self.spawn_termination(uid);
        }
    }

    /// preStop, SIGTERM, SIGKILL after the grace period, namespace removal: in a task of its own.
    fn spawn_termination(&mut self, uid: &str) {
        let mut s = lock(&self.shared);
        let Some(p) = s.pods.get_mut(uid) else { return };
        let (Some(mut child), Some(net)) = (p.child.take(), p.net.take()) else { return };
        let observed = p.terminating.unwrap_or_else(Instant::now);
        let observed_at = std::time::SystemTime::now() - observed.elapsed();
        let c = kubelet::main_container(&p.last);
        let pre_stop = c.and_then(|c| kubelet::pre_stop(c).ok().flatten());
        let grace = kubelet::grace_period(&p.last);
        let (ns, name, ip) = (p.namespace.clone(), p.name.clone(), p.ip);
        let (tx, uid, config) = (self.tx.clone(), uid.to_string(), self.config.clone());
        let (enis, eni) = (self.enis.clone(), p.eni.take());
        let task = tokio::spawn(async move {
            // The kubelet bounds the hook by the grace period.
            let hook = pre_stop.map(|d| d.min(grace));
            if let Some(d) = hook {
                tokio::time::sleep_until((observed + config.scale(d)).into()).await;
            }
            let pid = child.id() as i32;
            signal(pid, "TERM");
            let sigterm_after = observed.elapsed();
            let kill_at = Instant::now() + config.scale(kubelet::term_to_kill(grace, hook));
            let (exit, killed) = loop {
                match child.try_wait() {
                    Ok(Some(st)) => break (st.to_string(), false),
                    Ok(None) if Instant::now() < kill_at => tokio::time::sleep(Duration::from_millis(10)).await,
                    Ok(None) => {
                        let _ = child.kill();
                        break (child.wait().map(|s| s.to_string()).unwrap_or_else(|e| e.to_string()), true);
                    }
                    Err(e) => break (format!("waiting for the server: {e}"), false),
                }
            };
            let exited_after = observed.elapsed();
            if let Ok(Err(e)) = tokio::task::spawn_blocking(move || net.remove()).await {
                eprintln!("[node-agent {}] removing the namespace of {ns}/{name}: {e:#}", config.tag);
            }
            if let (Some(enis), Some(id)) = (enis, eni)
                && let Err(e) = enis.delete(&id).await
            {
                eprintln!("[node-agent {}] deleting ENI {id} of {ns}/{name}: {e:#}", config.tag);
            }
            let record = Termination {
                namespace: ns,
                name,
                ip,
                observed_at,
                pre_stop,
                sigterm_after,
                exited_after,
                killed,
                exit,
                removed_after: observed.elapsed(),
            };
            let _ = tx.send(Ev::Finished { uid, record });
        });
        s.tasks.retain(|t| !t.is_finished());
        s.tasks.push(task);
    }

    async fn on_finished(&mut self, uid: String, record: Termination) {
        let gone = lock(&self.shared).pods.remove(&uid);
        let Some(mut p) = gone else { return };
        if let Some(t) = p.probe.take() {
            t.abort();
        }
        if let Some(pool) = self.pools.get_mut(&p.node) {
            pool.release(p.ip);
        }
        lock(&self.shared).terminations.push(record);
        self.final_delete(&p.namespace, &p.name, &uid).await;
    }

    /// The kubelet's last word: delete with grace 0, for this pod's UID only.
    async fn final_delete(&self, ns: &str, name: &str, uid: &str) {
        let dp = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions { uid: Some(uid.to_string()), resource_version: None }),
            ..Default::default()
        };
        match self.pods_api(ns).delete(name, &dp).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.is_not_found() || s.code == 409 => {}
            Err(e) => self.error(format!("final delete of pod {ns}/{name}: {e}")),
        }
    }

    /// The pod is gone from the API (force-deleted, or our final delete): stop what still runs.
    async fn on_gone(&mut self, pod: Pod) {
        let Some(uid) = pod.uid() else { return };
        self.pending_binds.remove(&uid);
        let rt = {
            let mut s = lock(&self.shared);
            // A termination in flight finishes on its own; a start in flight cleans up in on_started.
            match s.pods.get(&uid).map(|p| p.terminating.is_some()) {
                Some(false) => s.pods.remove(&uid),
                _ => None,
            }
        };
        let Some(mut p) = rt else { return };
        if let Some(t) = p.probe.take() {
            t.abort();
        }
        if let Some(mut c) = p.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some(net) = p.net.take() {
            let _ = tokio::task::spawn_blocking(move || net.remove()).await;
            if let Some(pool) = self.pools.get_mut(&p.node) {
                pool.release(p.ip);
            }
        }
        self.delete_eni(p.eni.take()).await;
    }
}

/// The readiness probe of one pod, reporting changes.
async fn probe_loop(
    prober: Arc<prober::Prober>,
    tx: mpsc::UnboundedSender<Ev>,
    uid: String,
    addr: SocketAddr,
    p: kubelet::ReadinessProbe,
    scale: f64,
) {
    tokio::time::sleep(p.initial_delay.mul_f64(scale)).await;
    let mut counter = kubelet::ProbeCounter::new(&p);
    let mut tick = tokio::time::interval(p.period.mul_f64(scale));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let ok = prober.get(addr, &p.path, p.timeout.mul_f64(scale)).await.is_ok_and(|c| (200..400).contains(&c));
        if let Some(ready) = counter.observe(ok)
            && tx.send(Ev::Probe { uid: uid.clone(), ready }).is_err()
        {
            return;
        }
    }
}

/// Fails unless `pid` is gone (or a zombie).
pub fn check_process_gone(pid: u32) -> Result<()> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Field 3 is the state; Z = zombie (exited, not yet reaped).
    let state = stat.rsplit(')').next().and_then(|r| r.split_whitespace().next()).unwrap_or("");
    if !stat.is_empty() && state != "Z" {
        bail!("process {pid} is still running (state {state}): expected the node agent to have stopped it");
    }
    Ok(())
}
