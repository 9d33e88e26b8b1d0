//! ALBC's metric families on our `/metrics` (issue 17 item 3): dashboards and alerts written for
//! ALBC must keep working after the swap.
//!
//! [`FAMILIES`] says, for every family ALBC exports, whether we export it with ALBC's name, type
//! and label names, or why not. Two checks hold it to the truth:
//! - `every_family_albc_exports_is_accounted_for` (no environment needed) compares it with
//!   e2e/albc-metrics-families.txt, the families a real ALBC exported after reconciling an NLB
//!   Service and its TargetGroupBinding here (made by e2e/scripts/albc-metrics.sh), and with the
//!   table in docs/metrics.md;
//! - `albc_families_are_served_with_albcs_types_and_labels` runs our controller through a
//!   TargetGroupBinding with readiness gates, an NLB Service and injected AWS errors, scrapes it
//!   and checks every exported family's type, label names and the label values ALBC uses.

use lbc_e2e::fixture::{GATE, TgbScene};
use lbc_e2e::{Env, eventually, unique};
use std::collections::{BTreeMap, BTreeSet};

/// How we serve one of ALBC's families.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ours {
    /// Same name, type and label names. `extra`: label names we add beside ALBC's.
    Same { extra: &'static [&'static str] },
    /// Not exported, and why.
    Not(&'static str),
}

struct Family {
    /// As ALBC's exposition names it (counters with `_total`); a name ending in `_` stands for
    /// every family with that prefix.
    name: &'static str,
    kind: &'static str,
    labels: &'static [&'static str],
    ours: Ours,
    /// The e2e scenario gives it samples, so its type and labels are checked there (a family
    /// without samples is absent from an exposition, ALBC's too). The webhook failure counters
    /// are ours already and checked with the webhooks (webhook/src/metrics.rs, the chart test).
    sampled: bool,
}

const fn same(name: &'static str, kind: &'static str, labels: &'static [&'static str], sampled: bool) -> Family {
    Family { name, kind, labels, ours: Ours::Same { extra: &[] }, sampled }
}

const fn not(name: &'static str, kind: &'static str, labels: &'static [&'static str], why: &'static str) -> Family {
    Family { name, kind, labels, ours: Ours::Not(why), sampled: false }
}

const OP: &[&str] = &["operation", "service"];
const STATUS: &[&str] = &["error_code", "operation", "service", "status_code"];
const CTRL: &[&str] = &["controller"];
const QUEUE: &[&str] = &["controller", "name"];

const NO_GO: &str = "Go runtime internals; the controller is not a Go program";

/// Every family ALBC exports (its source, v3.5.0+8, and a scrape of it), in ALBC's terms.
const FAMILIES: &[Family] = &[
    // ALBC's own (pkg/metrics/lbc)
    same("awslbc_controller_reconcile_errors_total", "counter", &["controller", "error_category"], true),
    same("awslbc_controller_reconcile_stage_duration", "histogram", &["controller", "reconcile_stage"], true),
    same("awslbc_controller_cache_object_total", "gauge", &["resource"], true),
    same("awslbc_readiness_gate_ready_seconds", "histogram", &["name", "namespace"], true),
    same("awslbc_webhook_validation_failure_total", "counter", &["error_category", "webhook_name"], false),
    same("awslbc_webhook_mutation_failure_total", "counter", &["error_category", "webhook_name"], false),
    // Picked every 3 minutes (controller/src/metrics.rs tests): too slow for the scenario.
    same("awslbc_controller_top_talkers", "gauge", &["controller", "name", "namespace"], false),
    // ALBC's AWS SDK middleware (pkg/metrics/aws)
    Family {
        name: "aws_api_calls_total",
        kind: "counter",
        labels: STATUS,
        ours: Ours::Same { extra: &["outcome"] },
        sampled: true,
    },
    same("aws_api_call_duration_seconds", "histogram", OP, true),
    same("aws_api_call_retries", "histogram", OP, true),
    same("aws_api_requests_total", "counter", STATUS, true),
    same("aws_api_request_duration_seconds", "histogram", OP, true),
    same("aws_api_call_permission_errors_total", "counter", STATUS, true),
    same("aws_api_call_service_limit_exceeded_errors_total", "counter", STATUS, true),
    same("aws_api_call_throttled_errors_total", "counter", STATUS, true),
    same("aws_api_call_validation_errors_total", "counter", STATUS, true),
    same("aws_target_group_info", "gauge", &["namespace", "service", "target_group"], true),
    // controller-runtime's controllers
    same("controller_runtime_reconcile_total", "counter", &["controller", "result"], true),
    same("controller_runtime_reconcile_errors_total", "counter", CTRL, true),
    same("controller_runtime_reconcile_time_seconds", "histogram", CTRL, true),
    same("controller_runtime_max_concurrent_reconciles", "gauge", CTRL, true),
    same("controller_runtime_active_workers", "gauge", CTRL, true),
    // Recovered panics are counted; the other three are 0 by construction, as in ALBC (no terminal
    // errors, no reconcile deadline, no conversion webhook).
    same("controller_runtime_terminal_reconcile_errors_total", "counter", CTRL, true),
    same("controller_runtime_reconcile_panics_total", "counter", CTRL, true),
    same("controller_runtime_reconcile_timeouts_total", "counter", CTRL, true),
    same("controller_runtime_conversion_webhook_panics_total", "counter", &[], true),
    // controller-runtime's webhook server: the scenario admits nothing, so webhook/tests/handlers.rs
    // (metrics_count_requests_and_latency) checks the three request families; the panic counter always
    // has its sample.
    same("controller_runtime_webhook_panics_total", "counter", &[], true),
    same("controller_runtime_webhook_requests_in_flight", "gauge", &["webhook"], false),
    same("controller_runtime_webhook_requests_total", "counter", &["code", "webhook"], false),
    same("controller_runtime_webhook_latency_seconds", "histogram", &["webhook"], false),
    // client-go's workqueue, as controller-runtime registers it
    same("workqueue_depth", "gauge", &["controller", "name", "priority"], true),
    same("workqueue_work_duration_seconds", "histogram", QUEUE, true),
    same("workqueue_retries_total", "counter", QUEUE, true),
    same("workqueue_adds_total", "counter", QUEUE, true),
    same("workqueue_queue_duration_seconds", "histogram", QUEUE, true),
    same("workqueue_unfinished_work_seconds", "gauge", QUEUE, true),
    same("workqueue_longest_running_processor_seconds", "gauge", QUEUE, true),
    // client-go's leader election and REST client
    same("leader_election_master_status", "gauge", &["name"], true),
    not("leader_election_slowpath_total", "counter", &["name"], "client-go's lease fast path does not exist in ours"),
    same("rest_client_requests_total", "counter", &["code", "host", "method"], true),
    // Reads of the serving pair (files or the managed Secret), process-wide as controller-runtime keeps them.
    same("certwatcher_read_certificate_total", "counter", &[], true),
    same("certwatcher_read_certificate_errors_total", "counter", &[], true),
    // Go's runtime collector
    not("go_", "", &[], NO_GO),
    // The Prometheus clients' process collector (read from /proc/self here)
    same("process_cpu_seconds_total", "counter", &[], true),
    same("process_start_time_seconds", "gauge", &[], true),
    same("process_resident_memory_bytes", "gauge", &[], true),
    same("process_virtual_memory_bytes", "gauge", &[], true),
    same("process_virtual_memory_max_bytes", "gauge", &[], true),
    same("process_open_fds", "gauge", &[], true),
    same("process_max_fds", "gauge", &[], true),
    same("process_network_receive_bytes_total", "counter", &[], true),
    same("process_network_transmit_bytes_total", "counter", &[], true),
];

fn entry(name: &str) -> Option<&'static Family> {
    FAMILIES
        .iter()
        .find(|f| f.name == name)
        .or_else(|| FAMILIES.iter().find(|f| f.name.ends_with('_') && name.starts_with(f.name)))
}

/// One family of an exposition: type and the label names its samples carry.
#[derive(Debug, Default)]
struct Seen {
    kind: String,
    labels: BTreeSet<String>,
    samples: Vec<(BTreeMap<String, String>, String)>,
}

/// Families of a Prometheus or OpenMetrics text exposition, keyed as ALBC names them (counters
/// with `_total`).
fn parse(text: &str) -> BTreeMap<String, Seen> {
    let mut fams: BTreeMap<String, Seen> = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split_whitespace();
            let (Some(name), Some(kind)) = (it.next(), it.next()) else { continue };
            let key =
                if kind == "counter" && !name.ends_with("_total") { format!("{name}_total") } else { name.into() };
            fams.entry(key).or_default().kind = kind.into();
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (head, value) = line.rsplit_once(' ').unwrap_or((line, ""));
        let (name, labels) = match head.split_once('{') {
            Some((n, l)) => (n, l.trim_end_matches('}')),
            None => (head, ""),
        };
        let family = [name.to_string()]
            .into_iter()
            .chain(
                ["_bucket", "_sum", "_count", "_created"].iter().filter_map(|s| name.strip_suffix(s)).map(String::from),
            )
            .find(|f| fams.contains_key(f));
        let Some(family) = family else { continue };
        let f = fams.get_mut(&family).expect("family");
        let mut set = BTreeMap::new();
        for pair in split_labels(labels) {
            let (k, v) = pair.split_once('=').expect("label k=v");
            if (k == "le" && f.kind == "histogram") || (k == "quantile" && f.kind == "summary") {
                continue;
            }
            f.labels.insert(k.to_string());
            set.insert(k.to_string(), v.trim_matches('"').to_string());
        }
        f.samples.push((set, value.to_string()));
    }
    fams
}

/// `a="x",b="y,z"` → [`a="x"`, `b="y,z"`] (commas inside values kept).
fn split_labels(s: &str) -> Vec<&str> {
    let (mut out, mut start, mut quoted) = (Vec::new(), 0, false);
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

#[test]
fn every_family_albc_exports_is_accounted_for() {
    let root = Env::repo_root();
    let snapshot = std::fs::read_to_string(root.join("e2e/albc-metrics-families.txt")).expect("snapshot");
    let docs = std::fs::read_to_string(root.join("docs/metrics.md")).expect("docs/metrics.md");
    let mut problems = Vec::new();
    let mut seen = 0;
    for line in snapshot.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let mut it = line.split_whitespace();
        let (name, kind, labels) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap_or("-"));
        seen += 1;
        let Some(f) = entry(name) else {
            problems.push(format!("{name} ({kind}, labels {labels}): ALBC exports it; add it to FAMILIES"));
            continue;
        };
        if f.name.ends_with('_') {
            continue;
        }
        let albc: BTreeSet<&str> = labels.split(',').filter(|l| *l != "-").collect();
        let table: BTreeSet<&str> = f.labels.iter().copied().collect();
        if f.kind != kind || (!albc.is_empty() && albc != table) {
            problems.push(format!(
                "{name}: ALBC exports a {kind} with labels {albc:?}; FAMILIES says {} with {table:?}",
                f.kind
            ));
        }
    }
    assert!(seen > 30, "the snapshot lists only {seen} families: regenerate it with e2e/scripts/albc-metrics.sh");
    for f in FAMILIES {
        let shown = f.name.trim_end_matches('_');
        let in_docs = docs.lines().any(|l| l.starts_with('|') && l.contains(&format!("`{shown}")));
        if !in_docs {
            problems.push(format!("{}: missing from the ALBC table of docs/metrics.md", f.name));
        }
    }
    assert!(problems.is_empty(), "ALBC's families and ours disagree:\n  {}", problems.join("\n  "));
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn albc_families_are_served_with_albcs_types_and_labels() {
    let Some(f) = TgbScene::setup("albc_metrics", 2, true).await else { return };
    // Registrations fail, in turn, on each of ALBC's error classes (with one retry per call:
    // refused, throttled twice, over a limit twice, invalid), then succeed. Only the controller
    // registers, so the test's own reads are spared.
    let faults = [
        ("AccessDenied", 403, 1),
        ("Throttling", 400, 2),
        ("RequestLimitExceeded", 503, 2),
        ("ValidationError", 400, 1),
    ];
    for (code, status, count) in faults {
        f.emu
            .fault(serde_json::json!({"service": "elasticloadbalancing", "operation": "RegisterTargets",
                "target_group_arn": f.arn, "code": code, "http_status": status, "count": count}))
            .await;
    }
    let lease = unique("albc-metrics");
    let ctl = lbc_e2e::controller::ControllerProc::start(&f.env, &f.ns, &lease, &["--aws-max-retries=1"]);
    f.wait_targets("2 pods registered after the refused first attempt", &f.expected("web")).await;
    eventually("readiness gates True", 60, || async {
        let gates = lbc_e2e::kube_util::gate_status(&f.client, &f.ns, "web", GATE).await;
        (gates.len() == 2 && gates.iter().all(|(_, s)| s.as_deref() == Some("True"))).then_some(())
    })
    .await;
    // An NLB Service: its binding is one ALBC's aws_target_group_info would show.
    nlb_service(&f).await;
    // The binding is applied inside the deploy stage, so its info series can show before that stage's duration
    // is recorded: wait for both.
    let text = eventually("the NLB's binding in aws_target_group_info and its deploy stage timed", 90, || async {
        let text = ctl.metrics().await;
        let info = text.lines().any(|l| l.starts_with("aws_target_group_info{"));
        let deployed = text.lines().any(|l| {
            l.starts_with("awslbc_controller_reconcile_stage_duration")
                && l.contains("reconcile_stage=\"deploy_model\"")
        });
        (info && deployed).then_some(text)
    })
    .await;

    let ours = parse(&text);
    let mut problems = Vec::new();
    for fam in FAMILIES {
        let Ours::Same { extra } = fam.ours else { continue };
        if !fam.sampled {
            continue;
        }
        let Some(seen) = ours.get(fam.name) else {
            problems.push(format!("{}: not exported (ALBC's {} is)", fam.name, fam.kind));
            continue;
        };
        if seen.kind != fam.kind {
            problems.push(format!("{}: exported as a {}, ALBC's is a {}", fam.name, seen.kind, fam.kind));
        }
        let want: BTreeSet<String> = fam.labels.iter().chain(extra).map(|s| s.to_string()).collect();
        if seen.samples.is_empty() {
            problems.push(format!("{}: no samples after the scenario", fam.name));
        } else if seen.labels != want {
            problems
                .push(format!("{}: labels {:?}, ALBC's {:?} (+ ours {extra:?})", fam.name, seen.labels, fam.labels));
        }
    }
    // Label values as ALBC writes them.
    let values = |family: &str, label: &str| -> Vec<String> {
        ours.get(family)
            .map(|s| s.samples.iter().filter_map(|(l, _)| l.get(label).cloned()).collect())
            .unwrap_or_default()
    };
    let tgb = "targetGroupBinding";
    let checks: [(&str, &str, &str); 11] = [
        ("awslbc_controller_reconcile_stage_duration", "reconcile_stage", "reconcile_targetgroupbinding"),
        ("awslbc_controller_reconcile_stage_duration", "reconcile_stage", "deploy_model"),
        ("controller_runtime_reconcile_total", "controller", tgb),
        ("controller_runtime_reconcile_total", "result", "success"),
        ("awslbc_controller_reconcile_errors_total", "controller", tgb),
        ("awslbc_controller_reconcile_errors_total", "error_category", "access_denied"),
        ("awslbc_controller_cache_object_total", "resource", "targetgroupbinding"),
        ("workqueue_depth", "priority", "0"),
        ("leader_election_master_status", "name", &lease),
        ("aws_api_requests_total", "service", "Elastic Load Balancing v2"),
        ("aws_api_call_permission_errors_total", "status_code", "403"),
    ];
    for (family, label, want) in checks {
        let got = values(family, label);
        if !got.iter().any(|v| v == want) {
            problems.push(format!("{family}: no sample with {label}={want:?} (values seen: {got:?})"));
        }
    }
    let tg = values("aws_target_group_info", "target_group");
    if !tg.iter().any(|v| v.starts_with("targetgroup/")) {
        problems.push(format!("aws_target_group_info: target_group should be `targetgroup/<name>/<id>`, seen {tg:?}"));
    }
    let gate = ours.get("awslbc_readiness_gate_ready_seconds").map(|s| &s.samples);
    let gate_of_web = gate.is_some_and(|s| {
        s.iter().any(|(l, _)| l.get("namespace") == Some(&f.ns) && l.get("name").map(String::as_str) == Some("web"))
    });
    if !gate_of_web {
        problems.push(format!("awslbc_readiness_gate_ready_seconds: no sample of binding {}/web", f.ns));
    }
    // Side by side with what the real ALBC exported (the snapshot): written out for reading, and
    // every family ALBC sampled that we export must match it.
    let snapshot = std::fs::read_to_string(Env::repo_root().join("e2e/albc-metrics-families.txt")).expect("snapshot");
    let mut report = String::from("# family | ALBC (scraped): type labels | ours (scraped): type labels | verdict\n");
    let (mut matched, mut absent) = (0, 0);
    for line in snapshot.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let mut it = line.split_whitespace();
        let (name, kind, labels) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap_or("-"));
        let albc: BTreeSet<String> = labels.split(',').filter(|l| *l != "-").map(String::from).collect();
        let extra: BTreeSet<String> = match entry(name).map(|f| f.ours) {
            Some(Ours::Same { extra }) => extra.iter().map(|s| s.to_string()).collect(),
            _ => BTreeSet::new(),
        };
        let (shown, verdict) = match ours.get(name) {
            None => {
                absent += 1;
                let why = match entry(name).map(|f| f.ours) {
                    Some(Ours::Not(why)) => why,
                    _ => "no samples in this scenario",
                };
                ("-".to_string(), format!("not exported: {why}"))
            }
            Some(seen) => {
                let ok = seen.kind == kind
                    && seen.labels.iter().all(|l| albc.contains(l) || extra.contains(l))
                    && (seen.samples.is_empty() || albc.iter().all(|l| seen.labels.contains(l)));
                if ok {
                    matched += 1;
                } else {
                    problems.push(format!(
                        "{name}: ALBC exports a {kind} with {albc:?}, we a {} with {:?}",
                        seen.kind, seen.labels
                    ));
                }
                let labels = seen.labels.iter().cloned().collect::<Vec<_>>().join(",");
                (
                    format!("{} {}", seen.kind, if labels.is_empty() { "-" } else { &labels }),
                    (if ok { "same" } else { "DIFFERS" }).to_string(),
                )
            }
        };
        report.push_str(&format!("{name} | {kind} {labels} | {shown} | {verdict}\n"));
    }
    let out = Env::repo_root().join("e2e/.run/albc-metrics-compare.txt");
    let _ = std::fs::write(&out, &report);
    eprintln!("ALBC's families: {matched} exported alike, {absent} not exported; side by side in {}", out.display());
    assert!(
        problems.is_empty(),
        "ALBC's families on our /metrics (controller log {}):\n  {}",
        ctl.log.display(),
        problems.join("\n  ")
    );
    // The Service carries our finalizer: deleted while the controller still runs.
    let services: kube::Api<k8s_openapi::api::core::v1::Service> = kube::Api::namespaced(f.client.clone(), &f.ns);
    services.delete("nlb", &Default::default()).await.expect("delete the NLB Service");
    eventually("NLB Service deleted", 90, || async { services.get_opt("nlb").await.ok()?.is_none().then_some(()) })
        .await;
    drop(ctl);
    f.cleanup().await;
}

async fn nlb_service(f: &TgbScene) {
    use k8s_openapi::api::core::v1::Service;
    use kube::api::{Api, PostParams};
    let ann = "service.beta.kubernetes.io";
    let annotations = BTreeMap::from([
        (format!("{ann}/aws-load-balancer-type"), "external".to_string()),
        (format!("{ann}/aws-load-balancer-nlb-target-type"), "ip".to_string()),
    ]);
    let svc = lbc_e2e::kube_util::backend_service("nlb", "web", Some("LoadBalancer"), annotations);
    Api::<Service>::namespaced(f.client.clone(), &f.ns)
        .create(&PostParams::default(), &svc)
        .await
        .expect("NLB Service");
}
