//! The upstream Gateway API conformance suite (sigs.k8s.io/gateway-api/conformance v1.6.3, profile GATEWAY-HTTP)
//! against our controller, issue 34. Nobody here wrote the suite: it creates its own Gateways, routes, Services and
//! echo-basic Deployments, then checks status and sends real HTTP through each Gateway's address.
//!
//! What stands under it: the suite's pods run as real echo-basic servers in network namespaces of a test VPC (the
//! node agent binds the default scheduler's pods of the `gateway-conformance-*` namespaces, by image), the
//! controller builds an ALB per Gateway in the AWS emulator, and the data-plane fleet serves every ALB on an address
//! of its own in the VPC, writing each DNS name → address into a hosts file. The suite runs on the host (the API
//! server is on the host's 127.0.0.1) and dials every connection from inside the VPC namespace
//! (e2e/go/conformance/vpcdial.go).
//!
//! The run writes the suite's ConformanceReport to `<run dir>/conformance/report.yaml` (and its log beside it).
//! The test passes when the suite does: every test not skipped below passed. Each skip says why.
//!
//! Needs an environment without the real node (LBC_E2E_NODE=0): the real node's kube-scheduler binds the default
//! scheduler's pods too. e2e/test-all runs it in lane 2.

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use lbc_e2e::controller::ControllerProc;
use lbc_e2e::datapath::agent::programs::{ImageRule, Program};
use lbc_e2e::datapath::agent::{Agent, AgentConfig};
use lbc_e2e::datapath::netns::{Vpc, check_host_has_no_route, signal};
use lbc_e2e::datapath::plane::wire::EmulatorForwarder;
use lbc_e2e::datapath::require_root;
use lbc_e2e::{Env, eventually, kube_util, unique};
use lbc_model::gateway::Flavor;
use lbc_model::gateway::api::GatewayClass;
use lbc_model::gateway::status::ALB_SUPPORTED_FEATURES;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

/// The agent's pod-CIDR slot (the agent tests use 0..=3, zero_downtime 4).
const SLOT: u8 = 5;
/// Addresses the fleet gives the ALBs (inside the VPC CIDR, outside every subnet's pod CIDRs).
const VIP_POOL: &str = "10.0.254.0/24";
/// The GatewayClass the suite runs against.
const CLASS: &str = "lbc-conformance";
/// The suite's namespaces (base manifests and tests).
const NS_PREFIX: &str = "gateway-conformance-";
/// Tests of the profile we skip, each with the reason. Nothing else is skipped.
const SKIPS: &[(&str, &str)] = &[
    (
        "HTTPRouteHostnameIntersection",
        "it sends `very.specific.com:1234` to a port-80 listener: ALB compares a host-header value with the whole Host \
         header, port included, and on ports 80 and 443 we keep ALBC's values (an ALB ALBC built compares equal); off \
         those ports the hostname is a regex that ignores the port (HTTPRouteListenerPortMatching passes). ALBC skips \
         it for the same reason",
    ),
    (
        "HTTPRouteRedirectPortAndScheme",
        "three of its cases redirect an HTTPS listener to http, which an ALB does not do (RedirectActionConfig: \
         \"You can't redirect HTTPS to HTTP\"): the route is refused with that reason",
    ),
    (
        "HTTPRouteRequestHeaderModifier",
        "ALB cannot modify request headers per rule (only a fixed set, listener-wide): the filter is refused",
    ),
];

/// The echo-basic image rule: matched on the image's repository path (the registry host is not ours to name).
fn image_rules(echo_basic: &Path) -> Vec<ImageRule> {
    vec![
        ImageRule { prefix: "gateway-api/echo-basic:".into(), program: Program::Binary(echo_basic.to_path_buf()) },
        // The suite's coredns (UDPRoute tests only, outside GATEWAY-HTTP) would forward to public resolvers.
        ImageRule { prefix: "coredns/coredns:".into(), program: Program::Placeholder },
    ]
}

/// Stops a child process on drop (SIGTERM, then waits).
struct Stop(Child);
impl Drop for Stop {
    fn drop(&mut self) {
        signal(self.0.id() as i32, "TERM");
        let _ = self.0.wait();
    }
}

fn suite_binaries(env: &Env) -> (PathBuf, PathBuf) {
    let dir = PathBuf::from(env.get("LBC_GATEWAY_API_DIR"));
    let (suite, echo) = (dir.join("conformance.test"), dir.join("echo-basic"));
    for b in [&suite, &echo] {
        assert!(
            b.is_file(),
            "{} is missing: build the suite with `ONLY=conformance e2e/scripts/build-bins.sh` (e2e/test-all does)",
            b.display()
        );
    }
    (suite, echo)
}

/// The suite's namespaces left by an earlier or failed run (the suite deletes its own at the end): deleted while the
/// controller runs, so it tears their Gateways down, and waited for.
async fn remove_leftovers(client: &kube::Client) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let left: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .expect("list namespaces")
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .filter(|n| n.starts_with(NS_PREFIX))
        .collect();
    for n in &left {
        kube_util::delete_namespace(client, n).await;
        // Pods of a stopped agent's nodes have no kubelet to confirm their deletion.
        let pods: Api<Pod> = Api::namespaced(client.clone(), n);
        let _ = pods.delete_collection(&DeleteParams::default().grace_period(0), &ListParams::default()).await;
    }
    for n in left {
        eventually(&format!("namespace {n} gone (its Gateways torn down by the controller)"), 180, || async {
            namespaces.get_opt(&n).await.ok()?.is_none().then_some(())
        })
        .await;
    }
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up, LBC_E2E_NODE=0) and root; e2e/test-all runs it in lane 2"]
async fn gateway_api_conformance_suite_gateway_http_passes() {
    const NAME: &str = "conformance";
    if !require_root(NAME) {
        return;
    }
    let Some(env) = Env::require(NAME) else { return };
    let (suite, echo_basic) = suite_binaries(&env);
    let client = kube_util::client(&env).await;
    let real_nodes = Api::<Node>::all(client.clone())
        .list(&ListParams::default().labels("lbc-e2e/real-node=true"))
        .await
        .expect("list nodes")
        .items;
    assert!(
        real_nodes.is_empty(),
        "the real node's kube-scheduler binds the default scheduler's pods, which the suite's are: run the suite in \
         an environment without it (LBC_E2E_NODE=0 e2e/up; e2e/test-all runs it in lane 2)"
    );
    let out = env.run_dir().join("conformance");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();

    // The controller's own namespace (its Lease), every namespace watched.
    let ns = unique("cf");
    kube_util::namespace(&client, &ns, &[]).await;
    let cidr = env.get("LBC_VPC_CIDR");
    check_host_has_no_route(cidr.parse().unwrap()).expect("host route check before the suite");
    let vpc = Vpc::create("cf", cidr).expect("creating the VPC namespace");

    // The node agent runs the suite's pods by image.
    let mut config = AgentConfig::for_env(
        &env,
        "cf",
        &vpc,
        SLOT,
        env!("CARGO_BIN_EXE_lbc-podserver").as_ref(),
        env!("CARGO_BIN_EXE_lbc-node-agent").as_ref(),
    )
    .expect("agent config");
    config.scheduler_name = "default-scheduler".into();
    config.namespace_prefix = Some(NS_PREFIX.into());
    config.images = image_rules(&echo_basic);
    let agent = Agent::start(&env, config).await.expect("starting the node agent");

    // The data-plane fleet: every ALB of the emulator served on an address of the pool.
    let fwd = EmulatorForwarder::for_env(&env).expect("emulator forwarder");
    let hosts = out.join("hosts");
    let fleet = Stop(
        vpc.command(env!("CARGO_BIN_EXE_lbc-dataplane"))
            .args(["fleet", "--emulator", fwd.endpoint_arg().as_str(), "--pool", VIP_POOL, "--hosts-file"])
            .arg(&hosts)
            .arg("--status-dir")
            .arg(out.join("plane"))
            // Registration reaches a target within seconds here (minutes on AWS): the suite's 30 s consistency
            // window is about routing, not about AWS's propagation.
            .args(["--propagation-seconds", "2"])
            .stdout(std::fs::File::create(out.join("fleet.log")).unwrap())
            .stderr(std::fs::File::create(out.join("fleet.err")).unwrap())
            .spawn()
            .expect("spawning lbc-dataplane fleet"),
    );

    let ctl = ControllerProc::start(
        &env,
        &ns,
        "lbc-conformance",
        &[
            "--watch-namespace=",
            "--feature-gates=ALBGatewayAPI=true",
            "--enable-gateway-certificate-secrets=true",
            "--default-target-type=ip",
            "--enable-service-controller=false",
        ],
    );
    // One class name for every run: the Gateways a killed run left behind find their class again, so the controller
    // tears them down (a Gateway whose class is gone is frozen, finalizer kept) before the suite starts.
    let class_name = CLASS;
    let classes: Api<GatewayClass> = Api::all(client.clone());
    let class: GatewayClass = serde_json::from_value(json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
        "metadata": {"name": class_name}, "spec": {"controllerName": Flavor::ALB_CONTROLLER}
    }))
    .unwrap();
    if classes.get_opt(class_name).await.expect("read GatewayClass").is_none() {
        classes.create(&PostParams::default(), &class).await.expect("create GatewayClass");
    }
    // The features claimed are the class's `status.supportedFeatures`, which the suite reads (no
    // --supported-features: the report says "Inferred").
    let claimed: Vec<String> = ALB_SUPPORTED_FEATURES.iter().map(|f| f.to_string()).collect();
    eventually("GatewayClass Accepted with its supported features", 60, || async {
        let st = classes.get(class_name).await.ok()?.status?;
        let accepted = st.conditions.iter().any(|c| c.type_ == "Accepted" && c.status == "True");
        let features: Vec<String> = st.supported_features.iter().map(|f| f.name.clone()).collect();
        (accepted && features == claimed).then_some(())
    })
    .await;
    remove_leftovers(&client).await;

    // The suite, on the host, dialling into the VPC.
    let skips: Vec<&str> = SKIPS.iter().map(|(t, _)| *t).collect();
    let report = out.join("report.yaml");
    let version = std::process::Command::new("git")
        .args(["describe", "--always", "--dirty"])
        .current_dir(Env::repo_root())
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into());
    let started = std::time::Instant::now();
    let mut cmd = std::process::Command::new(&suite);
    cmd.current_dir(&out)
        .args(["-test.v", "-test.timeout=60m", "-test.run=^TestConformance$"])
        .arg(format!("--gateway-class={class_name}"))
        .arg(format!("--skip-tests={}", skips.join(",")))
        .args(["--conformance-profiles=GATEWAY-HTTP", "--organization=aws-lb-controller"])
        .args(["--project=aws-lb-controller", "--url=https://example.invalid/aws-lb-controller"])
        .arg(format!("--version={version}"))
        .args(["--contact=@aws-lb-controller/maintainers", "--mode=default"])
        .arg(format!("--report-output={}", report.display()))
        .env("KUBECONFIG", env.get("KUBECONFIG"))
        .env("LBC_CONFORMANCE_NETNS", format!("/run/netns/{}", vpc.name()))
        .env("LBC_CONFORMANCE_HOSTS", &hosts)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(out.join("suite.log")).unwrap())
        .stderr(std::fs::File::create(out.join("suite.err")).unwrap());
    let status = tokio::task::spawn_blocking(move || cmd.status()).await.unwrap().expect("running conformance.test");
    let took = started.elapsed();

    let summary = std::fs::read_to_string(&report).ok().map(|r| report_summary(&r));
    println!("conformance: suite exited {status} after {:.0} s", took.as_secs_f64());
    println!("conformance: {}", summary.clone().unwrap_or_else(|| "no report written".into()));
    println!("conformance: files in {}", out.display());

    // Tear down before asserting: the suite deleted its objects (what a failed run left goes now, the controller
    // deleting their ALBs), then the class, the controller, the fleet and the pods.
    remove_leftovers(&client).await;
    let _ = classes.delete(class_name, &DeleteParams::default()).await;
    ctl.terminate();
    drop(fleet);
    drop(fwd);
    let errors = agent.errors();
    agent.stop().await.expect("stopping the node agent");
    kube_util::delete_namespace(&client, &ns).await;
    drop(vpc);
    check_host_has_no_route(env.get("LBC_VPC_CIDR").parse().unwrap()).expect("host route check after the suite");

    let failed = failed_tests(&std::fs::read_to_string(out.join("suite.log")).unwrap_or_default());
    assert!(
        status.success(),
        "the conformance suite failed ({status}); failed tests: {failed:?}; {}; log: {}",
        summary.unwrap_or_else(|| "no report".into()),
        out.join("suite.log").display()
    );
    assert!(errors.is_empty(), "node agent errors: {errors:?}");
}

/// `--- FAIL: TestConformance/Name` lines of the suite's verbose log.
fn failed_tests(log: &str) -> Vec<String> {
    log.lines()
        .filter_map(|l| l.trim().strip_prefix("--- FAIL: TestConformance/"))
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_string())
        .collect()
}

/// One line from the report: core and extended passed/failed/skipped of each profile.
fn report_summary(yaml: &str) -> String {
    let Ok(v) = serde_yaml::from_str::<serde_json::Value>(yaml) else {
        return "report is not YAML".into();
    };
    let mut parts = Vec::new();
    for p in v["profiles"].as_array().into_iter().flatten() {
        let count = |part: &str, k: &str| p[part]["statistics"][k].as_u64().unwrap_or(0);
        parts.push(format!(
            "{}: core {} passed, {} failed, {} skipped; extended {} passed, {} failed, {} skipped",
            p["name"].as_str().unwrap_or("?"),
            count("core", "Passed"),
            count("core", "Failed"),
            count("core", "Skipped"),
            count("extended", "Passed"),
            count("extended", "Failed"),
            count("extended", "Skipped"),
        ));
    }
    parts.join("; ")
}
