//! The NLB-like data plane (`lbc-dataplane`) and the load generator (`lbc-loadgen`) against the
//! emulator and podservers in network namespaces, without Kubernetes: targets are registered
//! with the emulator's ELBv2 API directly. Needs root and the e2e environment (`e2e/up`).

use aws_sdk_elasticloadbalancingv2 as elbv2;
use elbv2::types::{
    Action, ActionTypeEnum, LoadBalancerSchemeEnum, LoadBalancerTypeEnum, ProtocolEnum, TargetDescription,
    TargetGroupAttribute, TargetTypeEnum,
};
use lbc_e2e::datapath::loadgen::Summary;
use lbc_e2e::datapath::netns::{PodNet, Vpc, check_host_has_no_route, signal};
use lbc_e2e::datapath::plane::wire::EmulatorForwarder;
use lbc_e2e::datapath::require_root;
use lbc_e2e::{Env, aws, unique};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const CIDR: &str = "10.0.0.0/16";
const VIP: &str = "10.0.255.10";
const PORT: i32 = 8080;

/// One scene at a time: each runs a data plane, servers and 200 req/s of load on a shared 2-core machine.
pub(crate) static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Target group settings of a scene (AWS seconds; the emulator's time scale applies).
struct TgSettings {
    interval: i32,
    timeout: i32,
    healthy: i32,
    unhealthy: i32,
    deregistration_delay: u32,
    propagation: f64,
}

impl Default for TgSettings {
    fn default() -> Self {
        Self { interval: 10, timeout: 6, healthy: 3, unhealthy: 2, deregistration_delay: 300, propagation: 20.0 }
    }
}

struct Pod {
    ip: Ipv4Addr,
    dir: PathBuf,
    server: Child,
    _net: PodNet,
}

struct Scene {
    elb: elbv2::Client,
    dir: PathBuf,
    lb_arn: String,
    tg_arn: String,
    /// ALB scenes: the target group of host `b.example.com`.
    tg_b: Option<String>,
    time_scale: f64,
    settings: TgSettings,
    pods: BTreeMap<String, Pod>,
    plane: Child,
    _fwd: EmulatorForwarder,
    // Last: dropped after the processes above, killing whatever is left in its namespaces.
    vpc: Vpc,
}

impl Scene {
    /// A VPC namespace with pods `names` (servers up, nothing registered), an NLB with one TCP
    /// listener on port 80 forwarding to an IP target group (HTTP health checks on /healthz), and
    /// the data plane on the VIP.
    async fn setup(env: &Env, tag: &str, names: &[&str], settings: TgSettings) -> Self {
        Self::setup_lb(env, tag, names, settings, false).await
    }

    /// With `alb`: an ALB whose HTTP listener on port 80 forwards to target group `tg_arn` by
    /// default, host `b.example.com` to `tg_b`, and answers path `/fixed*` itself (404 "fixed").
    async fn setup_lb(env: &Env, tag: &str, names: &[&str], settings: TgSettings, alb: bool) -> Self {
        check_host_has_no_route(CIDR.parse().unwrap()).expect("host route check before the scene");
        let elb = aws::elbv2(env).await;
        let time_scale = time_scale(env).await;
        let dir = Env::repo_root().join(format!("e2e/.run/datapath/{}", unique(tag)));
        std::fs::create_dir_all(&dir).unwrap();
        let vpc = Vpc::create(tag, CIDR).expect("creating the VPC namespace");
        vpc.add_address(VIP.parse().unwrap()).unwrap();
        let fwd = EmulatorForwarder::for_env(env).expect("emulator forwarder");

        let mut pods = BTreeMap::new();
        let port = PORT.to_string();
        for (i, name) in names.iter().copied().enumerate() {
            let ip: Ipv4Addr = format!("10.0.100.{}", 11 + i).parse().unwrap();
            let net = vpc.add_pod(name, ip).unwrap();
            let pdir = dir.join(name);
            std::fs::create_dir_all(&pdir).unwrap();
            let server = net
                .command(env!("CARGO_BIN_EXE_lbc-podserver"))
                .args(["--name", name, "--port", port.as_str(), "--control-dir"])
                .arg(&pdir)
                .stdout(std::fs::File::create(pdir.join("server.log")).unwrap())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("spawning lbc-podserver");
            pods.insert(name.to_string(), Pod { ip, dir: pdir, server, _net: net });
        }

        let subnets: Vec<String> = env.get("LBC_PUBLIC_SUBNET_IDS").split(',').map(String::from).collect();
        let lb = elb
            .create_load_balancer()
            .name(unique("dp"))
            .r#type(if alb { LoadBalancerTypeEnum::Application } else { LoadBalancerTypeEnum::Network })
            .scheme(LoadBalancerSchemeEnum::Internal)
            .set_subnets(Some(subnets))
            .send()
            .await
            .expect("CreateLoadBalancer");
        let lb_arn = lb.load_balancers()[0].load_balancer_arn().unwrap().to_string();
        let protocol = if alb { ProtocolEnum::Http } else { ProtocolEnum::Tcp };
        let tg_arn = create_tg(env, &elb, &settings, protocol.clone()).await;
        let tg_b = if alb { Some(create_tg(env, &elb, &settings, protocol.clone()).await) } else { None };
        let listener = elb
            .create_listener()
            .load_balancer_arn(&lb_arn)
            .protocol(protocol)
            .port(80)
            .default_actions(Action::builder().r#type(ActionTypeEnum::Forward).target_group_arn(&tg_arn).build())
            .send()
            .await
            .expect("CreateListener");
        if let Some(b) = &tg_b {
            let listener_arn = listener.listeners()[0].listener_arn().unwrap();
            let cond =
                |field: &str, value: &str| elbv2::types::RuleCondition::builder().field(field).values(value).build();
            elb.create_rule()
                .listener_arn(listener_arn)
                .priority(10)
                .conditions(cond("host-header", "b.example.com"))
                .actions(Action::builder().r#type(ActionTypeEnum::Forward).target_group_arn(b).build())
                .send()
                .await
                .expect("CreateRule host-header");
            let fixed = elbv2::types::FixedResponseActionConfig::builder()
                .status_code("404")
                .content_type("text/plain")
                .message_body("fixed")
                .build();
            elb.create_rule()
                .listener_arn(listener_arn)
                .priority(5)
                .conditions(cond("path-pattern", "/fixed*"))
                .actions(Action::builder().r#type(ActionTypeEnum::FixedResponse).fixed_response_config(fixed).build())
                .send()
                .await
                .expect("CreateRule fixed-response");
        }

        let (emulator, propagation) = (fwd.endpoint_arg(), settings.propagation.to_string());
        let plane = vpc
            .command(env!("CARGO_BIN_EXE_lbc-dataplane"))
            .args(["run", "--emulator", emulator.as_str(), "--load-balancer-arn", lb_arn.as_str(), "--listen", VIP])
            .args(["--propagation-seconds", propagation.as_str(), "--status-file"])
            .arg(dir.join("plane.json"))
            .stdout(std::fs::File::create(dir.join("plane.log")).unwrap())
            .stderr(std::fs::File::create(dir.join("plane.err")).unwrap())
            .spawn()
            .expect("spawning lbc-dataplane");
        let status = dir.join("plane.json");
        let deadline = Instant::now() + Duration::from_secs(10);
        // Its first poll is done once the status file lists the listener (bound, health pushed).
        let bound = || -> Option<bool> {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&status).ok()?).ok()?;
            Some(v["listeners"].as_array()?.iter().any(|p| p == 80))
        };
        while bound() != Some(true) {
            assert!(
                Instant::now() < deadline,
                "lbc-dataplane did not bind {VIP}:80 within 10 s; its stderr: {}",
                std::fs::read_to_string(dir.join("plane.err")).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        eprintln!(
            "scene {tag}: VPC {}, data plane on {VIP}:80, time scale {time_scale}, files in {}",
            vpc.name(),
            dir.display()
        );
        Self { elb, dir, lb_arn, tg_arn, tg_b, time_scale, settings, pods, plane, _fwd: fwd, vpc }
    }

    fn ip(&self, pod: &str) -> String {
        self.pods[pod].ip.to_string()
    }

    fn describe(&self, pods: &[&str]) -> Vec<TargetDescription> {
        pods.iter().map(|p| TargetDescription::builder().id(self.ip(p)).port(PORT).build()).collect()
    }

    async fn register(&self, pods: &[&str]) {
        self.register_in(&self.tg_arn, pods).await
    }

    async fn register_in(&self, tg: &str, pods: &[&str]) {
        self.elb
            .register_targets()
            .target_group_arn(tg)
            .set_targets(Some(self.describe(pods)))
            .send()
            .await
            .expect("RegisterTargets");
    }

    async fn deregister(&self, pods: &[&str]) {
        self.elb
            .deregister_targets()
            .target_group_arn(&self.tg_arn)
            .set_targets(Some(self.describe(pods)))
            .send()
            .await
            .expect("DeregisterTargets");
    }

    /// DescribeTargetHealth: pod name -> (state, reason).
    async fn health(&self) -> BTreeMap<String, (String, String)> {
        self.health_in(&self.tg_arn).await
    }

    async fn health_in(&self, tg: &str) -> BTreeMap<String, (String, String)> {
        let by_ip: BTreeMap<String, String> = self.pods.iter().map(|(n, p)| (p.ip.to_string(), n.clone())).collect();
        let out = self.elb.describe_target_health().target_group_arn(tg).send().await.expect("DescribeTargetHealth");
        out.target_health_descriptions()
            .iter()
            .filter_map(|d| {
                let id = d.target()?.id()?.to_string();
                let h = d.target_health()?;
                Some((
                    by_ip.get(&id).cloned().unwrap_or(id),
                    (
                        h.state().map(|s| s.as_str().to_string()).unwrap_or_default(),
                        h.reason().map(|r| r.as_str().to_string()).unwrap_or_default(),
                    ),
                ))
            })
            .collect()
    }

    /// Waits until DescribeTargetHealth reports `want` (pod -> state) for those pods.
    async fn wait_health(&self, want: &[(&str, &str)], secs: u64) {
        self.wait_health_in(&self.tg_arn, want, secs).await
    }

    async fn wait_health_in(&self, tg: &str, want: &[(&str, &str)], secs: u64) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let h = self.health_in(tg).await;
            if want.iter().all(|(p, s)| h.get(*p).is_some_and(|(st, _)| st == s)) {
                return;
            }
            if Instant::now() > deadline {
                panic!(
                    "DescribeTargetHealth of {tg} after {secs}s: {h:?}; expected {want:?}. The data plane's log:\n{}",
                    self.plane_log()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn plane_log(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("plane.log")).unwrap_or_default();
        let err = std::fs::read_to_string(self.dir.join("plane.err")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect();
        format!("{}\n{err}", tail.join("\n"))
    }

    /// The data plane's view of pod `pod`'s target (its status file), if it knows it.
    fn target(&self, pod: &str) -> Option<Value> {
        let text = std::fs::read_to_string(self.dir.join("plane.json")).ok()?;
        let v: Value = serde_json::from_str(&text).ok()?;
        let ip = self.ip(pod);
        v["targets"].as_array()?.iter().find(|t| t["id"] == ip.as_str()).cloned()
    }

    fn counter(&self, pod: &str, field: &str) -> u64 {
        self.target(pod).and_then(|t| t[field].as_u64()).unwrap_or(0)
    }

    /// Waits until the data plane's status of `pod` satisfies `ok`.
    async fn wait_target(&self, pod: &str, what: &str, secs: u64, ok: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(t) = self.target(pod).filter(|t| ok(t)) {
                return t;
            }
            if Instant::now() > deadline {
                panic!(
                    "the data plane's target {pod} ({}) never got {what} within {secs}s; its status: {:?}; log:\n{}",
                    self.ip(pod),
                    self.target(pod),
                    self.plane_log()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn control(&self, pod: &str, file: &str, content: Option<&str>) {
        let path = self.pods[pod].dir.join(file);
        match content {
            Some(c) => std::fs::write(path, c).unwrap(),
            None => {
                let _ = std::fs::remove_file(path);
            }
        }
    }

    /// Starts lbc-loadgen against the VIP (until [`stop_loadgen`]).
    fn start_loadgen(&self, args: &[&str]) -> Child {
        let target = format!("{VIP}:80");
        self.vpc
            .command(env!("CARGO_BIN_EXE_lbc-loadgen"))
            .args(["--target", target.as_str(), "--timeout-ms", "3000"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawning lbc-loadgen")
    }

    /// Load for `secs` seconds, then the summary.
    async fn load_for(&self, secs: f64, args: &[&str]) -> Summary {
        let secs = secs.to_string();
        let mut all = vec!["--duration-secs", secs.as_str()];
        all.extend_from_slice(args);
        let child = self.start_loadgen(&all);
        finish_loadgen(child, false).await
    }

    /// Cleans the AWS objects up (the namespaces go with the scene).
    async fn delete_aws(&self) {
        let _ = self.elb.delete_load_balancer().load_balancer_arn(&self.lb_arn).send().await;
        for tg in std::iter::once(&self.tg_arn).chain(&self.tg_b) {
            let _ = self.elb.delete_target_group().target_group_arn(tg).send().await;
        }
    }

    /// Seconds of real time for `aws_seconds` of AWS time.
    fn scaled(&self, aws_seconds: f64) -> f64 {
        aws_seconds * self.time_scale
    }
}

impl Drop for Scene {
    fn drop(&mut self) {
        let _ = self.plane.kill();
        let _ = self.plane.wait();
        for p in self.pods.values_mut() {
            let _ = p.server.kill();
            let _ = p.server.wait();
        }
    }
}

/// SIGTERMs lbc-loadgen when `term` and reads its summary.
async fn finish_loadgen(child: Child, term: bool) -> Summary {
    if term {
        assert!(signal(child.id() as i32, "TERM"), "SIGTERM to lbc-loadgen");
    }
    let out = tokio::task::spawn_blocking(move || child.wait_with_output()).await.unwrap().expect("lbc-loadgen output");
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("lbc-loadgen ({}) printed no JSON summary ({e}): {text:?}", out.status))
}

/// An IP target group on port 8080 with HTTP health checks on /healthz and `settings`; its ARN.
async fn create_tg(env: &Env, elb: &elbv2::Client, settings: &TgSettings, protocol: ProtocolEnum) -> String {
    let tg = elb
        .create_target_group()
        .name(unique("dp"))
        .protocol(protocol)
        .port(PORT)
        .vpc_id(env.get("LBC_VPC_ID"))
        .target_type(TargetTypeEnum::Ip)
        .health_check_protocol(ProtocolEnum::Http)
        .health_check_path("/healthz")
        .health_check_interval_seconds(settings.interval)
        .health_check_timeout_seconds(settings.timeout)
        .healthy_threshold_count(settings.healthy)
        .unhealthy_threshold_count(settings.unhealthy)
        .send()
        .await
        .expect("CreateTargetGroup");
    let arn = tg.target_groups()[0].target_group_arn().unwrap().to_string();
    elb.modify_target_group_attributes()
        .target_group_arn(&arn)
        .attributes(
            TargetGroupAttribute::builder()
                .key("deregistration_delay.timeout_seconds")
                .value(settings.deregistration_delay.to_string())
                .build(),
        )
        .send()
        .await
        .expect("ModifyTargetGroupAttributes");
    arn
}

async fn time_scale(env: &Env) -> f64 {
    let url = format!("{}/_awsemu/settings", env.aws_endpoint().trim_end_matches('/'));
    let v: Value = reqwest::get(url).await.expect("emulator settings").json().await.expect("settings JSON");
    v["time_scale"].as_f64().expect("time_scale in the emulator settings")
}

fn pods_of(s: &Summary) -> BTreeSet<String> {
    s.total.pods.keys().cloned().collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn report(what: &str, s: &Summary) {
    eprintln!(
        "{what}: sent {} ok {} failed {} {:?} stale_retries {} pods {:?} ({:.1} s, {:.0} req/s, p99 {:.1} ms)",
        s.total.sent,
        s.total.ok,
        s.total.failed,
        s.total.failures,
        s.stale_retries,
        s.total.pods,
        s.seconds,
        s.rate_achieved,
        s.latency_ms.p99
    );
}

/// The environment and root, or `None` after saying why the test is skipped.
fn prerequisites(test: &str) -> Option<Env> {
    if !require_root(test) {
        return None;
    }
    Env::require(test)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn only_healthy_targets_get_traffic_and_a_failing_target_stops_within_its_thresholds() {
    let Some(env) = prerequisites("only_healthy_targets_get_traffic") else { return };
    let _serial = SERIAL.lock().await;
    let sc = Scene::setup(&env, "dp-healthy", &["web-a", "web-b", "web-c"], TgSettings::default()).await;
    let vpc_name = sc.vpc.name().to_string();
    sc.control("web-c", "fail-health", Some(""));
    sc.register(&["web-a", "web-b", "web-c"]).await;
    sc.wait_health(&[("web-a", "healthy"), ("web-b", "healthy"), ("web-c", "unhealthy")], 20).await;
    assert_eq!(sc.health().await["web-c"].1, "Target.ResponseCodeMismatch", "web-c fails with HTTP 503");

    let s = sc.load_for(2.0, &[]).await;
    report("a, b healthy, c failing", &s);
    assert!(s.total.sent > 50, "lbc-loadgen sent only {} requests in 2 s", s.total.sent);
    assert_eq!(s.total.failed, 0, "failed requests with two healthy targets: {:?}", s.total.failures);
    assert_eq!(pods_of(&s), set(&["web-a", "web-b"]), "only healthy targets answer");
    assert_eq!(sc.counter("web-c", "opened"), 0, "the unhealthy target got connections");

    // web-b starts failing: unhealthy after `unhealthy` failed checks; then no new connections.
    let t = Instant::now();
    sc.control("web-b", "fail-health", Some(""));
    sc.wait_health(&[("web-b", "unhealthy")], 20).await;
    let took = t.elapsed().as_secs_f64();
    let expected = sc.scaled(f64::from(sc.settings.unhealthy * sc.settings.interval));
    eprintln!(
        "web-b unhealthy in DescribeTargetHealth {took:.2} s after it started failing (thresholds: {expected:.2} s)"
    );
    let opened = sc.counter("web-b", "opened");
    let s = sc.load_for(1.5, &[]).await;
    report("b failing", &s);
    assert_eq!(s.total.failed, 0, "failed requests: {:?}", s.total.failures);
    assert_eq!(pods_of(&s), set(&["web-a"]), "web-b still answered after it was reported unhealthy");
    assert_eq!(sc.counter("web-b", "opened"), opened, "new connections went to the unhealthy web-b");

    sc.delete_aws().await;
    drop(sc);
    let left =
        String::from_utf8_lossy(&std::process::Command::new("ip").args(["netns", "list"]).output().unwrap().stdout)
            .into_owned();
    assert!(!left.contains(&vpc_name["lbcv-".len()..]), "namespaces of {vpc_name} left: {left}");
    check_host_has_no_route(CIDR.parse().unwrap()).expect("host route check after the scene");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn a_register_deregister_cycle_with_prestop_ordering_fails_no_request() {
    let Some(env) = prerequisites("register_deregister_cycle") else { return };
    let _serial = SERIAL.lock().await;
    let mut sc = Scene::setup(&env, "dp-cycle", &["web-a", "web-b", "web-c"], TgSettings::default()).await;
    sc.register(&["web-a", "web-b"]).await;
    sc.wait_health(&[("web-a", "healthy"), ("web-b", "healthy")], 20).await;
    let load = sc.start_loadgen(&["--rate", "200"]);
    let guard = KillOnDrop(load.id());
    sc.wait_target("web-a", "connections", 10, |t| t["opened"].as_u64() > Some(0)).await;

    // Scale up: web-c registered, receives traffic once healthy.
    sc.register(&["web-c"]).await;
    sc.wait_health(&[("web-c", "healthy")], 20).await;
    sc.wait_target("web-c", "connections", 10, |t| t["opened"].as_u64() > Some(0)).await;

    // Scale down web-a with a pod's termination order: deregister; preStop (sleep until the
    // deregistration has propagated to the data plane); SIGTERM (the server finishes what is in
    // flight, closes idle keep-alive connections and exits); the drain ends later. Requests are
    // slow on web-a so that some are in flight throughout.
    sc.control("web-a", "latency-ms", Some("150"));
    sc.deregister(&["web-a"]).await;
    assert_eq!(sc.health().await["web-a"].0, "draining", "web-a right after DeregisterTargets");
    let stopped = sc.wait_target("web-a", "routing stopped", 10, |t| t["routable"] == false).await;
    let opened = stopped["opened"].as_u64().unwrap();
    // preStop margin: the data plane stopped routing; connections accepted just before are served.
    tokio::time::sleep(Duration::from_secs_f64(sc.scaled(sc.settings.propagation).max(0.2))).await;
    let pod = sc.pods.get_mut("web-a").unwrap();
    assert!(signal(pod.server.id() as i32, "TERM"), "SIGTERM to web-a's server");
    let status = pod.server.wait().unwrap();
    assert!(status.success(), "web-a's server exited with {status} after SIGTERM");
    let log = std::fs::read_to_string(pod.dir.join("server.log")).unwrap();
    assert!(log.contains(" exit pod=web-a") && log.contains("in_flight=0"), "web-a's server log: {log}");
    // The drain ends (deregistration delay); the data plane then forgets the target.
    let drained = sc
        .wait_target("web-a", "the end of its drain", 20, |t| {
            t["drain_until"].as_f64().is_some_and(|d| lbc_e2e::datapath::plane::now_unix() > d) && t["active"] == 0
        })
        .await;
    sc.wait_health(&[("web-b", "healthy"), ("web-c", "healthy")], 5).await;
    std::mem::forget(guard);
    let s = finish_loadgen(load, true).await;
    report("register web-c, deregister web-a (preStop ordering)", &s);
    assert!(s.total.sent > 200, "lbc-loadgen sent only {} requests", s.total.sent);
    assert_eq!(s.total.failed, 0, "failed requests over the cycle: {:?} (summary: {s:?})", s.total.failures);
    assert_eq!(pods_of(&s), set(&["web-a", "web-b", "web-c"]), "every target answered at some point");
    assert_eq!(
        drained["opened"].as_u64(),
        Some(opened),
        "web-a got new connections after its deregistration propagated"
    );
    assert_eq!(drained["drain_closed"].as_u64(), Some(0), "the data plane had to cut web-a's connections at drain end");
    sc.delete_aws().await;
    drop(sc);
    check_host_has_no_route(CIDR.parse().unwrap()).expect("host route check after the scene");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn a_deregistered_targets_open_connections_run_until_the_delay_ends_then_are_closed() {
    let Some(env) = prerequisites("drain_closes_connections") else { return };
    let _serial = SERIAL.lock().await;
    let settings = TgSettings { deregistration_delay: 150, propagation: 0.0, ..TgSettings::default() };
    let sc = Scene::setup(&env, "dp-drain", &["web-a", "web-b"], settings).await;
    sc.register(&["web-a"]).await;
    sc.wait_health(&[("web-a", "healthy")], 20).await;
    // One keep-alive client: its connection stays on web-a.
    let load = sc.start_loadgen(&["--rate", "40", "--new-connection-share", "0", "--keepalive-clients", "1"]);
    let guard = KillOnDrop(load.id());
    sc.wait_target("web-a", "an open connection", 10, |t| t["active"].as_u64() >= Some(1)).await;
    sc.register(&["web-b"]).await;
    sc.wait_health(&[("web-b", "healthy")], 20).await;
    sc.deregister(&["web-a"]).await;
    let t = Instant::now();
    let stopped = sc.wait_target("web-a", "routing stopped", 10, |t| t["routable"] == false).await;
    assert_eq!(stopped["active"].as_u64(), Some(1), "web-a's keep-alive connection was not kept while draining");
    let closed = sc
        .wait_target("web-a", "its connection closed at drain end", 20, |t| t["drain_closed"].as_u64() >= Some(1))
        .await;
    eprintln!(
        "web-a's connection closed {:.2} s after DeregisterTargets (deregistration delay {:.2} s)",
        t.elapsed().as_secs_f64(),
        sc.scaled(f64::from(sc.settings.deregistration_delay))
    );
    assert_eq!(closed["opened"], stopped["opened"], "web-a got new connections while draining");
    sc.wait_target("web-b", "the client's new connection", 10, |t| t["opened"].as_u64() >= Some(1)).await;
    std::mem::forget(guard);
    let s = finish_loadgen(load, true).await;
    report("keep-alive client across web-a's drain", &s);
    assert_eq!(s.total.failed, 0, "failed requests: {:?}", s.total.failures);
    assert!(s.stale_retries >= 1, "the client never saw its connection closed at drain end: {s:?}");
    assert_eq!(pods_of(&s), set(&["web-a", "web-b"]));
    sc.delete_aws().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn fails_open_to_all_registered_targets_when_none_is_healthy() {
    let Some(env) = prerequisites("fails_open") else { return };
    let _serial = SERIAL.lock().await;
    let sc = Scene::setup(&env, "dp-failopen", &["web-a", "web-b", "web-c"], TgSettings::default()).await;
    sc.register(&["web-a", "web-b"]).await;
    sc.wait_health(&[("web-a", "healthy"), ("web-b", "healthy")], 20).await;
    sc.control("web-a", "fail-health", Some(""));
    sc.control("web-b", "fail-health", Some(""));
    sc.wait_health(&[("web-a", "unhealthy"), ("web-b", "unhealthy")], 20).await;
    let s = sc.load_for(1.5, &[]).await;
    report("a, b unhealthy (fail open)", &s);
    assert_eq!(s.total.failed, 0, "failed requests: {:?}", s.total.failures);
    assert_eq!(pods_of(&s), set(&["web-a", "web-b"]), "failing open sends to every registered target (and only those)");
    sc.control("web-a", "fail-health", None);
    sc.wait_health(&[("web-a", "healthy"), ("web-b", "unhealthy")], 20).await;
    let s = sc.load_for(1.0, &[]).await;
    report("a healthy again", &s);
    assert_eq!(pods_of(&s), set(&["web-a"]), "one healthy target: fail-open ends");
    sc.delete_aws().await;
}

/// SIGKILLs a child process on drop unless forgotten (a failing test leaves no load running).
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        signal(self.0 as i32, "KILL");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn without_prestop_ordering_a_deregistered_target_fails_requests() {
    // The control for the cycle above: the server stops as soon as its target is deregistered,
    // before the deregistration reaches the data plane, which keeps sending it new connections.
    let Some(env) = prerequisites("without_prestop_ordering") else { return };
    let _serial = SERIAL.lock().await;
    let settings = TgSettings { propagation: 50.0, ..TgSettings::default() };
    let mut sc = Scene::setup(&env, "dp-noprestop", &["web-a", "web-b"], settings).await;
    sc.register(&["web-a", "web-b"]).await;
    sc.wait_health(&[("web-a", "healthy"), ("web-b", "healthy")], 20).await;
    let load = sc.start_loadgen(&["--rate", "200"]);
    let guard = KillOnDrop(load.id());
    sc.wait_target("web-a", "connections", 10, |t| t["opened"].as_u64() > Some(0)).await;
    sc.deregister(&["web-a"]).await;
    let pod = sc.pods.get_mut("web-a").unwrap();
    assert!(signal(pod.server.id() as i32, "TERM"), "SIGTERM to web-a's server");
    let _ = pod.server.wait();
    sc.wait_target("web-a", "routing stopped", 10, |t| t["routable"] == false).await;
    sc.wait_target("web-b", "more connections", 10, |t| t["opened"].as_u64() > Some(10)).await;
    std::mem::forget(guard);
    let s = finish_loadgen(load, true).await;
    report("deregister web-a and stop its server at once (no preStop)", &s);
    assert!(
        s.total.failed > 0,
        "no request failed although web-a's server stopped {:.2} s before the data plane stopped routing to it: {s:?}",
        sc.scaled(sc.settings.propagation)
    );
    sc.delete_aws().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn a_scene_that_panics_leaves_no_namespace_process_or_socket() {
    let Some(env) = prerequisites("scene_panics") else { return };
    let _serial = SERIAL.lock().await;
    let seen: std::sync::Arc<std::sync::Mutex<Option<(String, PathBuf, u32)>>> = Default::default();
    let seen2 = seen.clone();
    let run = tokio::spawn(async move {
        let sc = Scene::setup(&env, "dp-panics", &["web-a"], TgSettings::default()).await;
        sc.register(&["web-a"]).await;
        sc.wait_health(&[("web-a", "healthy")], 20).await;
        *seen2.lock().unwrap() = Some((sc.vpc.name().to_string(), sc._fwd.path().to_path_buf(), sc.plane.id()));
        sc.delete_aws().await;
        panic!("a failing test");
    })
    .await;
    assert!(run.is_err(), "the scene was expected to panic");
    let (vpc, sock, plane) = seen.lock().unwrap().clone().expect("the scene got as far as its data plane");
    let list =
        String::from_utf8_lossy(&std::process::Command::new("ip").args(["netns", "list"]).output().unwrap().stdout)
            .into_owned();
    assert!(!list.contains(&vpc["lbcv-".len()..]), "namespaces of {vpc} left after a panic: {list}");
    assert!(!sock.exists(), "the emulator forwarder's socket {} is left after a panic", sock.display());
    assert!(!PathBuf::from(format!("/proc/{plane}")).exists(), "lbc-dataplane (pid {plane}) still runs after a panic");
    check_host_has_no_route(CIDR.parse().unwrap()).expect("host route check after the panic");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn an_alb_listener_routes_each_request_by_rule_and_a_deregistration_fails_none() {
    let Some(env) = prerequisites("alb_routes_requests") else { return };
    let _serial = SERIAL.lock().await;
    let names = ["web-a1", "web-a2", "web-a3", "web-b1"];
    let mut sc = Scene::setup_lb(&env, "dp-alb", &names, TgSettings::default(), true).await;
    let tg_b = sc.tg_b.clone().unwrap();
    sc.register(&["web-a1", "web-a2"]).await;
    sc.register_in(&tg_b, &["web-b1"]).await;
    sc.wait_health(&[("web-a1", "healthy"), ("web-a2", "healthy")], 20).await;
    sc.wait_health_in(&tg_b, &[("web-b1", "healthy")], 20).await;

    // One keep-alive connection, requests spread over the targets (an NLB would pin it to one).
    let s = sc.load_for(1.0, &["--rate", "100", "--new-connection-share", "0", "--keepalive-clients", "1"]).await;
    report("ALB, one keep-alive client", &s);
    assert_eq!(s.total.failed, 0, "failed requests: {:?}", s.total.failures);
    assert_eq!(pods_of(&s), set(&["web-a1", "web-a2"]), "requests of one connection go to every healthy target");
    let s = sc.load_for(1.0, &["--rate", "100", "--host", "b.example.com"]).await;
    report("ALB, host b.example.com", &s);
    assert_eq!((s.total.failed, pods_of(&s)), (0, set(&["web-b1"])), "the host-header rule: {s:?}");
    let fixed = sc.vpc.http_get(&format!("{VIP}:80"), "/fixed/x").expect("GET /fixed/x through the ALB");
    assert_eq!(fixed, (404, "fixed".to_string()), "the fixed-response rule");

    // A rolling replacement under load with the preStop ordering: web-a3 in, web-a1 out.
    let load = sc.start_loadgen(&["--rate", "200"]);
    let guard = KillOnDrop(load.id());
    sc.register(&["web-a3"]).await;
    sc.wait_health(&[("web-a3", "healthy")], 20).await;
    sc.wait_target("web-a3", "requests", 10, |t| t["opened"].as_u64() > Some(0)).await;
    sc.control("web-a1", "latency-ms", Some("150"));
    sc.deregister(&["web-a1"]).await;
    let stopped = sc.wait_target("web-a1", "routing stopped", 10, |t| t["routable"] == false).await;
    tokio::time::sleep(Duration::from_secs_f64(sc.scaled(sc.settings.propagation).max(0.2))).await;
    let pod = sc.pods.get_mut("web-a1").unwrap();
    assert!(signal(pod.server.id() as i32, "TERM"), "SIGTERM to web-a1's server");
    let status = pod.server.wait().unwrap();
    assert!(status.success(), "web-a1's server exited with {status} after SIGTERM");
    // Load goes on for a while after the server stopped.
    let a2 = sc.counter("web-a2", "opened");
    sc.wait_target("web-a2", "100 more requests", 10, |t| t["opened"].as_u64() > Some(a2 + 100)).await;
    std::mem::forget(guard);
    let s = finish_loadgen(load, true).await;
    report("ALB, web-a3 in, web-a1 out (preStop ordering)", &s);
    assert_eq!(s.total.failed, 0, "failed requests over the replacement: {:?} ({s:?})", s.total.failures);
    assert_eq!(pods_of(&s), set(&["web-a1", "web-a2", "web-a3"]));
    assert_eq!(
        sc.counter("web-a1", "opened"),
        stopped["opened"].as_u64().unwrap(),
        "requests went to web-a1 after its deregistration propagated"
    );
    sc.delete_aws().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the e2e environment; run by e2e/test-all with --include-ignored"]
async fn health_check_port_and_matcher_follow_the_target_group_live() {
    let Some(env) = prerequisites("health_check_settings") else { return };
    let _serial = SERIAL.lock().await;
    // An HTTP (ALB) target group: moto keeps a TCP group's matcher at "200" whatever ModifyTargetGroup says.
    let sc = Scene::setup_lb(&env, "dp-hcport", &["web-a"], TgSettings::default(), true).await;
    sc.register(&["web-a"]).await;
    sc.wait_health(&[("web-a", "healthy")], 20).await;
    let modify = || sc.elb.modify_target_group().target_group_arn(&sc.tg_arn);
    // A health-check port nothing listens on: connection refused.
    modify().health_check_port("8081").send().await.expect("ModifyTargetGroup health check port");
    sc.wait_health(&[("web-a", "unhealthy")], 20).await;
    assert_eq!(sc.health().await["web-a"].1, "Target.FailedHealthChecks", "refused on port 8081");
    // Back on the traffic port, with a matcher the server's 200 does not satisfy.
    let matcher = |code: &str| elbv2::types::Matcher::builder().http_code(code).build();
    modify().health_check_port("traffic-port").matcher(matcher("201")).send().await.expect("ModifyTargetGroup matcher");
    let deadline = Instant::now() + Duration::from_secs(20);
    while sc.health().await["web-a"].1 != "Target.ResponseCodeMismatch" {
        assert!(Instant::now() < deadline, "web-a never failed on matcher 201: {:?}", sc.health().await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    modify().matcher(matcher("200-299")).send().await.expect("ModifyTargetGroup matcher");
    sc.wait_health(&[("web-a", "healthy")], 20).await;
    sc.delete_aws().await;
}
