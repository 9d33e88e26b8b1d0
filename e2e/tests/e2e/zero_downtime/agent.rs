//! The node agent: pods of real Deployments (kube-controller-manager) become podservers in
//! network namespaces of a test VPC, with readiness from their probes and gates, and deletion as
//! the kubelet does it. Needs root and the e2e/up environment. No controller runs here.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use lbc_e2e::datapath::agent::eni::Enis;
use lbc_e2e::datapath::agent::{Agent, AgentConfig, NODE_LABEL, SCHEDULER_NAME, check_process_gone};
use lbc_e2e::datapath::netns::{Vpc, check_host_has_no_route};
use lbc_e2e::datapath::require_root;
use lbc_e2e::{Env, eventually, kube_util};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Kubelet durations run at half speed: probe period 1 s → 0.5 s, preStop 2 s → 1 s.
const SCALE: f64 = 0.5;
const PRE_STOP_SECS: i64 = 2;
const GATE: &str = "target-health.elbv2.k8s.aws/agent-test";

struct Setup {
    env: Env,
    client: Client,
    ns: String,
    vpc: Vpc,
    agent: Option<Agent>,
}

/// A namespace, a VPC namespace on the emulator's VPC CIDR, and an agent for pods of that
/// namespace. `slot` keeps tests running at once on distinct pod CIDRs.
async fn setup(test: &str, tag: &str, slot: u8) -> Option<Setup> {
    if !require_root(test) {
        return None;
    }
    let env = Env::require(test)?;
    let client = kube_util::client(&env).await;
    let ns = lbc_e2e::unique(tag);
    kube_util::namespace(&client, &ns, &[]).await;
    let vpc = Vpc::create(tag, env.get("LBC_VPC_CIDR")).expect("creating the VPC namespace");
    let mut config = AgentConfig::for_env(
        &env,
        tag,
        &vpc,
        slot,
        env!("CARGO_BIN_EXE_lbc-podserver").as_ref(),
        env!("CARGO_BIN_EXE_lbc-node-agent").as_ref(),
    )
    .expect("agent config");
    config.namespace = Some(ns.clone());
    config.time_scale = SCALE;
    let agent = Agent::start(&env, config).await.expect("starting the node agent");
    Some(Setup { env, client, ns, vpc, agent: Some(agent) })
}

impl Setup {
    fn agent(&self) -> &Agent {
        self.agent.as_ref().expect("agent running")
    }

    async fn create_deployment(&self, name: &str, replicas: i32, gates: &[&str]) {
        let d: Deployment = serde_json::from_value(deployment(name, replicas, gates, "v1")).unwrap();
        Api::<Deployment>::namespaced(self.client.clone(), &self.ns)
            .create(&PostParams::default(), &d)
            .await
            .expect("create deployment");
    }

    async fn pods(&self, app: &str) -> Vec<Pod> {
        Api::<Pod>::namespaced(self.client.clone(), &self.ns)
            .list(&ListParams::default().labels(&format!("app={app}")))
            .await
            .expect("list pods")
            .items
    }

    /// Waits until `n` live pods of `app` are Ready; returns them sorted by name.
    async fn wait_ready(&self, app: &str, n: usize) -> Vec<Pod> {
        eventually(&format!("{n} Ready pods of {}/{app}", self.ns), 90, || async {
            let pods: Vec<Pod> =
                self.pods(app).await.into_iter().filter(|p| p.metadata.deletion_timestamp.is_none()).collect();
            let mut ready: Vec<Pod> =
                pods.iter().filter(|p| cond(p, "Ready") == Some("True".into())).cloned().collect();
            ready.sort_by_key(|p| p.name_any());
            (ready.len() == n && pods.len() == n).then_some(ready)
        })
        .await
    }

    async fn wait_cond(&self, pod: &str, type_: &str, want: &str) -> Pod {
        let api = Api::<Pod>::namespaced(self.client.clone(), &self.ns);
        eventually(&format!("pod {}/{pod} condition {type_}={want}", self.ns), 60, || async {
            api.get_opt(pod).await.ok().flatten().filter(|p| cond(p, type_).as_deref() == Some(want))
        })
        .await
    }

    /// Stops the agent and checks nothing is left: pod namespaces, servers, nodes.
    async fn teardown(mut self) {
        let agent = self.agent.take().expect("agent running");
        let pids: Vec<u32> = agent.pods().iter().filter_map(|p| p.pid).collect();
        let nodes = agent.node_names().to_vec();
        let agent_id = agent.config().agent_id();
        agent.stop().await.expect("stopping the agent");
        assert_nothing_left(&self.client, &self.vpc, &pids, &nodes).await;
        let enis = Enis::new(self.env.aws_endpoint(), "us-east-1");
        let left = enis.ids("tag:lbc-e2e/node-agent", &agent_id).await.unwrap();
        assert!(left.is_empty(), "ENIs of agent {agent_id} left after it stopped: {left:?}");
        kube_util::delete_namespace(&self.client, &self.ns).await;
        let cidr = self.env.get("LBC_VPC_CIDR").parse().unwrap();
        drop(self.vpc);
        check_host_has_no_route(cidr).expect("host route check after teardown");
    }
}

async fn assert_nothing_left(client: &Client, vpc: &Vpc, pids: &[u32], nodes: &[String]) {
    let left = vpc.pod_namespaces().unwrap();
    assert!(left.is_empty(), "pod namespaces left after the agent stopped: {left:?}; expected none");
    for pid in pids {
        check_process_gone(*pid).unwrap();
    }
    let api = Api::<Node>::all(client.clone());
    for n in nodes {
        assert!(api.get_opt(n).await.unwrap().is_none(), "node {n} still exists after the agent stopped");
    }
}

fn deployment(name: &str, replicas: i32, gates: &[&str], version: &str) -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": {"lbc-e2e/version": version}},
                "spec": {
                    "schedulerName": SCHEDULER_NAME,
                    "terminationGracePeriodSeconds": 20,
                    "readinessGates": gates.iter().map(|g| json!({"conditionType": g})).collect::<Vec<_>>(),
                    "containers": [{
                        "name": "web", "image": "lbc-podserver",
                        "ports": [{"name": "http", "containerPort": 8080}],
                        "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"},
                                           "periodSeconds": 1, "failureThreshold": 2, "successThreshold": 1},
                        "lifecycle": {"preStop": {"sleep": {"seconds": PRE_STOP_SECS}}},
                    }],
                },
            },
        },
    })
}

fn cond(p: &Pod, type_: &str) -> Option<String> {
    p.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == type_).map(|c| c.status.clone())
}

fn pod_ip(p: &Pod) -> String {
    p.status.as_ref().and_then(|s| s.pod_ip.clone()).unwrap_or_else(|| panic!("pod {} has no podIP", p.name_any()))
}

/// GET from inside the VPC, retried briefly (a server just started may not listen yet).
fn vpc_get(vpc: &Vpc, addr: &str, path: &str) -> (u16, String) {
    let t = std::time::Instant::now();
    loop {
        match vpc.http_get(addr, path) {
            Ok(r) => return r,
            Err(e) if t.elapsed() > Duration::from_secs(10) => panic!("GET {addr}{path} from the VPC failed: {e:#}"),
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// The EndpointSlice `ready` condition of `ip` for Service `svc`.
async fn slice_ready(client: &Client, ns: &str, svc: &str, ip: &str) -> Option<bool> {
    let slices = Api::<EndpointSlice>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels(&format!("kubernetes.io/service-name={svc}")))
        .await
        .ok()?;
    slices
        .items
        .iter()
        .flat_map(|s| s.endpoints.iter())
        .find(|e| e.addresses.iter().any(|a| a == ip))
        .and_then(|e| e.conditions.as_ref()?.ready)
}

#[tokio::test]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn deployment_pods_are_servers_and_readiness_follows_health() {
    let Some(s) = setup("deployment_pods_are_servers_and_readiness_follows_health", "agent-basic", 0).await else {
        return;
    };
    let agent = s.agent();

    // Nodes: Ready, labelled for tests, with a Lease, not kwok's.
    let nodes = Api::<Node>::all(s.client.clone())
        .list(&ListParams::default().labels(&format!("{NODE_LABEL}={}", agent.config().tag)))
        .await
        .unwrap();
    assert_eq!(nodes.items.len(), 3, "agent nodes: {:?}", nodes.items.iter().map(|n| n.name_any()).collect::<Vec<_>>());
    for n in &nodes.items {
        let ready =
            n.status.as_ref().and_then(|s| s.conditions.as_ref()).and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
        assert_eq!(ready.map(|c| c.status.as_str()), Some("True"), "node {} is not Ready", n.name_any());
        assert!(!n.annotations().contains_key("kwok.x-k8s.io/node"), "node {} is kwok-managed", n.name_any());
        let lease = Api::<Lease>::namespaced(s.client.clone(), "kube-node-lease").get(&n.name_any()).await.unwrap();
        assert_eq!(lease.spec.and_then(|l| l.holder_identity), Some(n.name_any()));
    }

    s.create_deployment("web", 3, &[]).await;
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }))
    .unwrap();
    Api::<Service>::namespaced(s.client.clone(), &s.ns).create(&PostParams::default(), &svc).await.unwrap();
    let pods = s.wait_ready("web", 3).await;
    let enis = Enis::new(s.env.aws_endpoint(), "us-east-1");

    // Spread over the three nodes; addresses of each node's pod CIDR; each server answers with its name.
    let by_node: BTreeMap<String, String> =
        pods.iter().map(|p| (p.spec.as_ref().unwrap().node_name.clone().unwrap(), p.name_any())).collect();
    assert_eq!(by_node.len(), 3, "pods not spread over the agent's 3 nodes: {by_node:?}");
    for p in &pods {
        let ip = pod_ip(p);
        let node = p.spec.as_ref().unwrap().node_name.clone().unwrap();
        let spec = agent.config().nodes.iter().find(|n| agent.config().node_name(n) == node).unwrap();
        assert!(
            spec.pod_cidr.contains(&ip.parse::<std::net::Ipv4Addr>().unwrap()),
            "pod {} IP {ip} outside {}",
            p.name_any(),
            spec.pod_cidr
        );
        let st = p.status.as_ref().unwrap();
        assert_eq!(st.host_ip.as_deref(), Some(spec.internal_ip.to_string().as_str()));
        assert_eq!(st.pod_ips.as_ref().map(|v| v.len()), Some(1));
        assert_eq!(st.container_statuses.as_ref().and_then(|c| c.first()).map(|c| c.ready), Some(true));
        for c in ["PodScheduled", "Initialized", "ContainersReady", "Ready"] {
            assert_eq!(cond(p, c).as_deref(), Some("True"), "pod {} condition {c}", p.name_any());
        }
        assert_eq!(vpc_get(&s.vpc, &format!("{ip}:8080"), "/"), (200, format!("{}\n", p.name_any())));
        // Its ENI in the emulator (the controller's backend security-group pass looks pod IPs up).
        let tagged = enis.ids("tag:lbc-e2e/pod", &format!("{}/{}", s.ns, p.name_any())).await.unwrap();
        assert_eq!(enis.ids("addresses.private-ip-address", &ip).await.unwrap(), tagged, "ENI of pod {}", p.name_any());
        assert_eq!(tagged.len(), 1, "ENIs of pod {} ({ip}): {tagged:?}", p.name_any());
    }
    check_host_has_no_route(s.env.get("LBC_VPC_CIDR").parse().unwrap()).unwrap();

    // Readiness follows health: fail → NotReady → the EndpointSlice says not ready; recover → back.
    let sick = &pods[0];
    let (sick_name, sick_ip) = (sick.name_any(), pod_ip(sick));
    agent.set_fail_health(&s.ns, &sick_name, true).unwrap();
    let p = s.wait_cond(&sick_name, "Ready", "False").await;
    assert_eq!(cond(&p, "ContainersReady").as_deref(), Some("False"));
    eventually(&format!("EndpointSlice endpoint {sick_ip} ready=false"), 30, || async {
        (slice_ready(&s.client, &s.ns, "web", &sick_ip).await == Some(false)).then_some(())
    })
    .await;
    for other in &pods[1..] {
        assert_eq!(
            slice_ready(&s.client, &s.ns, "web", &pod_ip(other)).await,
            Some(true),
            "{} lost readiness",
            other.name_any()
        );
    }
    agent.set_fail_health(&s.ns, &sick_name, false).unwrap();
    s.wait_cond(&sick_name, "Ready", "True").await;
    eventually(&format!("EndpointSlice endpoint {sick_ip} ready=true"), 30, || async {
        (slice_ready(&s.client, &s.ns, "web", &sick_ip).await == Some(true)).then_some(())
    })
    .await;

    // Deletion as the kubelet, and a podserver that shuts down gracefully: the server answers
    // slowly (2.5 s), the pod is deleted while a request runs; SIGTERM comes after the preStop
    // sleep (1 s scaled), the server stops accepting (a new connection is refused), completes the
    // request in flight and exits by itself.
    let slow = &pods[1];
    let (slow_name, slow_ip) = (slow.name_any(), pod_ip(slow));
    let control = agent.control_dir(&s.ns, &slow_name);
    std::fs::write(control.join("latency-ms"), "2500").unwrap();
    let mut curl = s.vpc.command("curl");
    curl.args(["-sS", "-m", "10", &format!("http://{slow_ip}:8080/")]);
    let curl = std::thread::spawn(move || curl.output());
    Api::<Pod>::namespaced(s.client.clone(), &s.ns).delete(&slow_name, &DeleteParams::default()).await.unwrap();
    let log_path = control.join("server.log");
    let sigterm_line = eventually(&format!("SIGTERM logged by the server of {slow_name}"), 20, || async {
        std::fs::read_to_string(&log_path).ok()?.lines().find(|l| l.contains(" sigterm pod=")).map(str::to_string)
    })
    .await;
    let refused = s.vpc.command("curl").args(["-sS", "-m", "2", &format!("http://{slow_ip}:8080/")]).output().unwrap();
    assert_eq!(
        refused.status.code(),
        Some(7),
        "a new connection to {slow_name} after SIGTERM: expected curl exit 7 (refused), got {} / {:?} {:?}",
        refused.status,
        String::from_utf8_lossy(&refused.stdout),
        String::from_utf8_lossy(&refused.stderr)
    );
    let out = curl.join().unwrap().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{slow_name}\n"),
        "the request in flight at SIGTERM: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(sigterm_line.contains("in_flight=1"), "expected the request in flight at SIGTERM: {sigterm_line}");
    let t = eventually(&format!("termination of {slow_name}"), 30, || async {
        agent.terminations().into_iter().find(|t| t.name == slow_name)
    })
    .await;
    assert!(!t.killed && t.exit.contains("exit status: 0"), "server of {} did not exit gracefully: {t:?}", t.name);
    let pre_stop = Duration::from_secs(PRE_STOP_SECS as u64).mul_f64(SCALE);
    assert!(
        t.sigterm_after >= pre_stop,
        "SIGTERM {:?} after deletion, before the preStop {pre_stop:?} ended",
        t.sigterm_after
    );
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(log.contains(" exit pod="), "server log of {slow_name}: {log}");
    eprintln!("deletion with a request in flight: {t:?}");
    // The ReplicaSet replaces it.
    s.wait_ready("web", 3).await;
    assert!(agent.errors().is_empty(), "agent errors: {:?}", agent.errors());
    s.teardown().await;
}

#[tokio::test]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn readiness_gate_holds_ready_until_its_condition_is_true() {
    let Some(s) = setup("readiness_gate_holds_ready_until_its_condition_is_true", "agent-gate", 1).await else {
        return;
    };
    s.create_deployment("gated", 1, &[GATE]).await;
    let pod = eventually("the gated pod's containers ready", 60, || async {
        s.pods("gated").await.into_iter().find(|p| cond(p, "ContainersReady").as_deref() == Some("True"))
    })
    .await;
    let name = pod.name_any();
    let ready =
        pod.status.as_ref().unwrap().conditions.as_ref().unwrap().iter().find(|c| c.type_ == "Ready").cloned().unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_deref()),
        ("False", Some("ReadinessGatesNotReady")),
        "{ready:?}"
    );
    assert_eq!(vpc_get(&s.vpc, &format!("{}:8080", pod_ip(&pod)), "/").1, format!("{name}\n"));

    let api = Api::<Pod>::namespaced(s.client.clone(), &s.ns);
    let set_gate = |status: &'static str| {
        let api = api.clone();
        let name = name.clone();
        async move {
            let patch = json!({"status": {"conditions": [{"type": GATE, "status": status,
                "lastTransitionTime": k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now())}]}});
            api.patch_status(&name, &PatchParams::default(), &Patch::Strategic(patch)).await.expect("patch gate");
        }
    };
    set_gate("False").await;
    let p = s.wait_cond(&name, GATE, "False").await;
    assert_eq!(cond(&p, "Ready").as_deref(), Some("False"));
    set_gate("True").await;
    s.wait_cond(&name, "Ready", "True").await;
    // The agent's status writes keep the gate condition.
    let p = api.get(&name).await.unwrap();
    assert_eq!(cond(&p, GATE).as_deref(), Some("True"));
    set_gate("False").await;
    s.wait_cond(&name, "Ready", "False").await;
    assert!(s.agent().errors().is_empty(), "agent errors: {:?}", s.agent().errors());
    s.teardown().await;
}

#[tokio::test]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn rolling_update_replaces_pods_one_by_one_honouring_pre_stop() {
    let Some(s) = setup("rolling_update_replaces_pods_one_by_one_honouring_pre_stop", "agent-roll", 2).await else {
        return;
    };
    s.create_deployment("roll", 3, &[]).await;
    let old = s.wait_ready("roll", 3).await;
    let old_names: BTreeSet<String> = old.iter().map(|p| p.name_any()).collect();
    let old_ns: Vec<String> = s.agent().pods().into_iter().filter_map(|p| p.netns).collect();
    assert_eq!(old_ns.len(), 3);

    // Watch the rollout: Ready live (not terminating) pods never drop below 3 (maxUnavailable 0).
    let (client, ns) = (s.client.clone(), s.ns.clone());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let watch = tokio::spawn(async move {
        let api = Api::<Pod>::namespaced(client, &ns);
        let (mut max_live, mut min_ready) = (0usize, usize::MAX);
        while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
            let pods = api.list(&ListParams::default().labels("app=roll")).await.unwrap().items;
            let live: Vec<&Pod> = pods.iter().filter(|p| p.metadata.deletion_timestamp.is_none()).collect();
            max_live = max_live.max(live.len());
            min_ready = min_ready.min(live.iter().filter(|p| cond(p, "Ready").as_deref() == Some("True")).count());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        (max_live, min_ready)
    });
    let started = std::time::Instant::now();
    let patch = json!({"spec": {"template": {"metadata": {"annotations": {"lbc-e2e/version": "v2"}}}}});
    Api::<Deployment>::namespaced(s.client.clone(), &s.ns)
        .patch("roll", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .unwrap();
    // Done: 3 new Ready pods, the old ones deleted (final delete after the agent's teardown).
    let new = eventually("rollout complete and old pods gone", 120, || async {
        let pods = s.pods("roll").await;
        let all_new = pods.iter().all(|p| !old_names.contains(&p.name_any()));
        let ready = pods.iter().filter(|p| cond(p, "Ready").as_deref() == Some("True")).count();
        (all_new && pods.len() == 3 && ready == 3).then_some(pods)
    })
    .await;
    let rollout = started.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (max_live, min_ready) = watch.await.unwrap();
    // (Live pods may briefly exceed 3 + maxSurge: the Deployment controller counts ReplicaSet
    // replicas, not pods, so it is reported, not asserted.)
    assert!(
        min_ready >= 3,
        "only {min_ready} Ready pods at one point during the rollout: expected 3 (maxUnavailable 0)"
    );

    let terms: Vec<_> = s.agent().terminations().into_iter().filter(|t| old_names.contains(&t.name)).collect();
    assert_eq!(terms.len(), 3, "terminations of the old pods: {terms:?}");
    let pre_stop = Duration::from_secs(PRE_STOP_SECS as u64).mul_f64(SCALE);
    for t in &terms {
        assert!(
            t.sigterm_after >= pre_stop,
            "{}: SIGTERM {:?} after deletion, before the preStop sleep {pre_stop:?} ended",
            t.name,
            t.sigterm_after
        );
        assert!(!t.killed && t.exit.contains("exit status: 0"), "{}: server did not exit gracefully: {t:?}", t.name);
        eprintln!(
            "rollout: {} preStop {:?} (scaled {pre_stop:?}), SIGTERM at {:?}, exited at {:?}, namespace removed at {:?}",
            t.name, t.pre_stop, t.sigterm_after, t.exited_after, t.removed_after
        );
    }
    let enis = Enis::new(s.env.aws_endpoint(), "us-east-1");
    for old in &old_names {
        let left = enis.ids("tag:lbc-e2e/pod", &format!("{}/{old}", s.ns)).await.unwrap();
        assert!(left.is_empty(), "ENIs of old pod {old} left after the rollout: {left:?}");
    }
    let left = s.vpc.pod_namespaces().unwrap();
    for n in &old_ns {
        assert!(!left.contains(n), "namespace {n} of an old pod is left after the rollout");
    }
    assert_eq!(left.len(), 3, "pod namespaces after the rollout: {left:?}");
    for p in &new {
        assert_eq!(vpc_get(&s.vpc, &format!("{}:8080", pod_ip(p)), "/").1, format!("{}\n", p.name_any()));
    }
    eprintln!(
        "rollout of 3 replicas took {rollout:?} (time scale {SCALE}); max live {max_live}, min ready {min_ready}"
    );
    assert!(s.agent().errors().is_empty(), "agent errors: {:?}", s.agent().errors());
    s.teardown().await;
}

#[tokio::test]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn agent_is_torn_down_when_a_test_panics() {
    let Some(s) = setup("agent_is_torn_down_when_a_test_panics", "agent-panic", 3).await else {
        return;
    };
    let Setup { env, client, ns, vpc, agent } = s;
    let seen = std::sync::Arc::new(std::sync::Mutex::new((Vec::new(), Vec::new())));
    let seen2 = seen.clone();
    let (client2, ns2) = (client.clone(), ns.clone());
    let panicked = tokio::spawn(async move {
        let agent = agent.unwrap();
        let d: Deployment = serde_json::from_value(deployment("doomed", 2, &[], "v1")).unwrap();
        Api::<Deployment>::namespaced(client2.clone(), &ns2).create(&PostParams::default(), &d).await.unwrap();
        let pids = eventually("2 servers running", 60, || async {
            let pids: Vec<u32> = agent.pods().iter().filter_map(|p| p.pid).collect();
            (pids.len() == 2).then_some(pids)
        })
        .await;
        *seen2.lock().unwrap() = (pids, agent.node_names().to_vec());
        panic!("a test failing with the agent running");
    })
    .await;
    assert!(panicked.unwrap_err().is_panic());
    let (pids, nodes) = seen.lock().unwrap().clone();
    assert_eq!(pids.len(), 2);
    assert_nothing_left(&client, &vpc, &pids, &nodes).await;
    let agent_id = format!("agent-panic-{}", std::process::id());
    let left = Enis::new(env.aws_endpoint(), "us-east-1").ids("tag:lbc-e2e/node-agent", &agent_id).await.unwrap();
    assert!(left.is_empty(), "ENIs of agent {agent_id} left after the panic: {left:?}");
    kube_util::delete_namespace(&client, &ns).await;
    drop(vpc);
    check_host_has_no_route(env.get("LBC_VPC_CIDR").parse().unwrap()).unwrap();
}
