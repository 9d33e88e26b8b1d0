//! A real Prometheus scrapes the controller through a scenario that exercises it (targets registered, readiness
//! gates flipped, AWS throttling, admission webhook calls, a credentials refresh that fails and one that
//! succeeds, a refused deregister-all plan, a scale-down), then every panel query and every template variable
//! query of the Grafana dashboard (charts/aws-lb-controller/dashboards/aws-lb-controller.json) is evaluated
//! through Prometheus's HTTP API with the dashboard's variables substituted as Grafana does, and each result is
//! checked: non-empty, finite, and for the panels whose value the scenario fixes, that value.

use k8s_openapi::api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use lbc_e2e::fixture::{GATE, TgbScene};
use lbc_e2e::prometheus::{self, Prometheus, SCRAPE_INTERVAL_SECS, Series, Target};
use lbc_e2e::webhook::{webhook, write_cert};
use lbc_e2e::{Env, eventually, kube_util};
use lbc_model::crd::TargetGroupBinding;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The job the chart's ServiceMonitor gives a release named `aws-lb-controller` (`<fullname>-metrics`, the
/// metrics Service's name), which is also the PrometheusRule's default selector.
const JOB: &str = "aws-lb-controller-metrics";
const POD: &str = "aws-lb-controller-7d9f8b6c5d-x2x7q";
/// Grafana's `$__interval` for the range the test queries: the query step.
const STEP_SECS: u64 = 2;

/// Queries that legitimately return nothing after this scenario, with the reason. Keyed by panel title and
/// refId; the test fails if one of them returns data (then it belongs with the others).
const NO_DATA: &[(&str, &str, &str)] = &[];

/// Why a one-off event stays at 0 on a `rate()`/`increase()` panel: a labelled series whose label values are
/// not known before the event (an AWS error code, a credential source's failure reason, a webhook's refusal
/// reason) is created at its first increment, so Prometheus's first sample of it already holds the event and
/// `rate()` sees no increase. Series with known label values (reconcile error categories per controller, the
/// throttled and retries series of each AWS operation once called, per-binding counters once the binding is
/// reconciled) start at 0, and their panels must show the event. The listed series must still exist (the
/// non-empty check), so the controller did count the event.
const BORN_AT_FIRST_EVENT: &str =
    "one-off event: the series is created at its first increment, so rate() never sees it";

/// `rate()`/`increase()` queries whose events happen once in this scenario and are therefore invisible
/// ([`BORN_AT_FIRST_EVENT`]). Every other `rate()`/`increase()` query must show a value above 0 at some point.
const ONE_OFF: &[(&str, &str)] = &[
    ("Errors by code", "A"),
    ("Credential refresh failures by reason", "A"),
    ("Refused or failed, by reason", "A"),
    ("Refused or failed, by reason", "B"),
];

struct Query {
    /// Panel title.
    panel: String,
    ref_id: String,
    expr: String,
}

fn panels<'a>(list: &'a [Value], out: &mut Vec<&'a Value>) {
    for p in list {
        out.push(p);
        if let Some(inner) = p["panels"].as_array() {
            panels(inner, out);
        }
    }
}

/// Every panel target of the dashboard, nested rows included.
fn dashboard_queries(dash: &Value) -> Vec<Query> {
    let mut all = Vec::new();
    panels(dash["panels"].as_array().expect("dashboard panels"), &mut all);
    let mut out = Vec::new();
    for p in all {
        for t in p["targets"].as_array().into_iter().flatten() {
            if let Some(expr) = t["expr"].as_str() {
                out.push(Query {
                    panel: p["title"].as_str().unwrap_or_default().to_string(),
                    ref_id: t["refId"].as_str().unwrap_or_default().to_string(),
                    expr: expr.to_string(),
                });
            }
        }
    }
    out
}

/// A value as Grafana writes a variable into a PromQL regex matcher: metacharacters escaped (the backslash
/// doubled for the PromQL string), several values as `(a|b)`.
fn regex_value(values: &[String]) -> String {
    let esc = |v: &String| {
        v.chars()
            .map(|c| if "\\^$.|?*+()[]{}".contains(c) { format!("\\\\{c}") } else { c.to_string() })
            .collect::<String>()
    };
    match values {
        [one] => esc(one),
        many => format!("({})", many.iter().map(esc).collect::<Vec<_>>().join("|")),
    }
}

/// `expr` with Grafana's variables replaced: `$__rate_interval` (max(`$__interval` + scrape interval,
/// 4 × scrape interval), Grafana's rule, with the data source's scrape interval set to Prometheus's),
/// `$__interval` (the step) and the dashboard's own variables (`All` selected: every value).
fn substitute(expr: &str, vars: &BTreeMap<String, Vec<String>>) -> String {
    let rate = (STEP_SECS + SCRAPE_INTERVAL_SECS).max(4 * SCRAPE_INTERVAL_SECS);
    let mut e = expr.replace("$__rate_interval", &format!("{rate}s")).replace("$__interval", &format!("{STEP_SECS}s"));
    for (name, values) in vars {
        e = e.replace(&format!("${{{name}}}"), &regex_value(values)).replace(&format!("${name}"), &regex_value(values));
    }
    assert!(!e.contains('$'), "a variable left unsubstituted in {e} (from {expr})");
    e
}

fn show(series: &[Series]) -> String {
    let mut parts: Vec<String> = series
        .iter()
        .map(|s| {
            let labels: Vec<String> = s
                .labels
                .iter()
                .filter(|(k, _)| !["job", "instance"].contains(&k.as_str()))
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let max = s.values.iter().map(|(_, v)| *v).filter(|v| v.is_finite()).reduce(f64::max);
            let v = match (s.last_finite(), max) {
                (Some(l), Some(m)) if l == m => format!("{l:.4}"),
                (Some(l), Some(m)) => format!("{l:.4} (max {m:.4})"),
                _ => "NaN".to_string(),
            };
            if labels.is_empty() { v } else { format!("{{{}}} {v}", labels.join(",")) }
        })
        .collect();
    parts.sort();
    parts.join("; ")
}

fn last(
    results: &BTreeMap<(String, String), Vec<Series>>,
    panel: &str,
    ref_id: &str,
) -> Vec<(BTreeMap<String, String>, f64)> {
    let series = results
        .get(&(panel.to_string(), ref_id.to_string()))
        .unwrap_or_else(|| panic!("the dashboard has no panel {panel:?} with query {ref_id}: update this test"));
    series.iter().filter_map(|s| Some((s.labels.clone(), s.last_finite()?))).collect()
}

fn single(results: &BTreeMap<(String, String), Vec<Series>>, panel: &str, ref_id: &str) -> f64 {
    let v = last(results, panel, ref_id);
    assert_eq!(v.len(), 1, "panel {panel:?} {ref_id}: one series expected, got {v:?}");
    v[0].1
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn prometheus_scrapes_the_controller_and_every_dashboard_query_has_data() {
    let test = "prometheus_dashboard";
    let Some(env) = Env::require(test) else { return };
    let bin = match prometheus::binary(&env) {
        Ok(b) => b,
        Err(why) if std::env::var("LBC_E2E_REQUIRED").as_deref() == Ok("1") => panic!("{test}: {why}"),
        Err(why) => {
            eprintln!("SKIPPED {test}: {why}");
            return;
        }
    };
    drop(env);
    let dash: Value = serde_json::from_str(
        &std::fs::read_to_string(Env::repo_root().join("charts/aws-lb-controller/dashboards/aws-lb-controller.json"))
            .expect("read the dashboard"),
    )
    .expect("dashboard JSON");

    let Some(f) = TgbScene::setup("prom_dash", 3, true).await else { return };
    let run_dir = f.env.run_dir().join(&f.ns);
    // AWS keys from a file with an expiry: the expiry gauge is non-zero, and rewriting the file is a refresh.
    let creds = run_dir.join("aws-credentials");
    let write_creds = |key: &str| {
        let expiration = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(3600);
        let text = format!(
            "[default]\naws_access_key_id = {key}\naws_secret_access_key = testing\nexpiration = {expiration}\n"
        );
        std::fs::write(&creds, text).expect("write the credentials file");
    };
    std::fs::create_dir_all(&run_dir).unwrap();
    write_creds("E2EPROMONE");
    let ca = write_cert(&run_dir.join("certs"));
    // The first registration is throttled through all its attempts (1 + --aws-max-retries 3): AWS errors,
    // throttling, retries and a failed reconcile. The throttling lasts until Prometheus has scraped the
    // controller, so the registration and the gates that follow are events it sees happen.
    let throttle = f
        .emu
        .fault(json!({"service": "elasticloadbalancing", "operation": "RegisterTargets", "target_group_arn": f.arn,
                      "code": "Throttling", "message": "Rate exceeded"}))
        .await;

    let ctl = f.controller(&[
        &format!("--webhook-cert-dir={}", run_dir.join("certs").display()),
        "--aws-credentials-source=file",
        &format!("--aws-credentials-file={}", creds.display()),
    ]);
    let prom = Prometheus::start(
        &f.env,
        &bin,
        &[Target {
            job: JOB.into(),
            address: format!("127.0.0.1:{}", ctl.metrics_port),
            pod: POD.into(),
            namespace: "kube-system".into(),
        }],
    )
    .await;
    let start = prometheus::now();
    eventually("controller ready", 60, || async { ctl.ready().await.then_some(()) }).await;
    let throttled = || async {
        let (calls, _) = f.emu.calls(0, Some(&f.arn)).await;
        calls.iter().filter(|c| c.error_code.as_deref() == Some("Throttling")).count()
    };
    eventually("Prometheus scraped the controller", 60, || async {
        let up = prom.query(&format!("up{{job=\"{JOB}\"}}"), prometheus::now()).await.ok()?;
        (up.first().map(|(_, v)| *v) == Some(1.0)).then_some(())
    })
    .await;
    // A whole failed reconcile (4 throttled attempts) while Prometheus watches: the attempts before its
    // first scrape may be invisible to rate().
    let seen = throttled().await;
    eventually("4 more throttled RegisterTargets after the first scrape", 60, || async {
        (throttled().await >= seen + 4).then_some(())
    })
    .await;
    f.emu.clear_fault(&throttle).await;

    // Admission webhooks for this namespace only (the configurations are cluster-wide; `Ignore` so nothing
    // outside this test can be blocked by them).
    let client = f.client.clone();
    Api::<Namespace>::all(client.clone())
        .patch(
            &f.ns,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"lbc-e2e/webhook-test": f.ns,
                                                          "elbv2.k8s.aws/pod-readiness-gate-inject": "enabled"}}})),
        )
        .await
        .expect("label the namespace");
    let port = ctl.webhook_port;
    let (mwc_name, vwc_name) = (format!("{}-mutating", f.ns), format!("{}-validating", f.ns));
    let mwcs: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let vwcs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let mwc = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": mwc_name},
        "webhooks": [webhook("mpod.elbv2.k8s.aws", port, "/mutate-v1-pod", &ca, &f.ns, "Ignore", ("", "v1", "pods")),
                     webhook("mtargetgroupbinding.elbv2.k8s.aws", port, "/mutate-elbv2-k8s-aws-v1beta1-targetgroupbinding", &ca, &f.ns, "Ignore", ("elbv2.k8s.aws", "v1beta1", "targetgroupbindings"))]});
    mwcs.patch(&mwc_name, &PatchParams::apply("e2e").force(), &Patch::Apply(mwc)).await.unwrap();
    let vwc = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": vwc_name},
        "webhooks": [webhook("vtargetgroupbinding.elbv2.k8s.aws", port, "/validate-elbv2-k8s-aws-v1beta1-targetgroupbinding", &ca, &f.ns, "Ignore", ("elbv2.k8s.aws", "v1beta1", "targetgroupbindings"))]});
    vwcs.patch(&vwc_name, &PatchParams::apply("e2e").force(), &Patch::Apply(vwc)).await.unwrap();

    f.wait_targets("3 pods registered after the throttled attempts", &f.expected("web")).await;
    eventually("readiness gates True", 60, || async {
        let st = kube_util::gate_status(&client, &f.ns, "web", GATE).await;
        (st.len() == 3 && st.iter().all(|(_, s)| s.as_deref() == Some("True"))).then_some(())
    })
    .await;

    // A credentials file that no longer parses: a failed refresh (the old keys stay in use).
    std::fs::write(&creds, "[default]\naws_access_key_id = E2EPROMTWO\n").unwrap();

    // A second binding of the same target group: the validating webhook refuses it.
    let tgbs: Api<TargetGroupBinding> = Api::namespaced(client.clone(), &f.ns);
    let dup = json!({"apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding", "metadata": {"name": "dup"},
                     "spec": {"serviceRef": {"name": "web", "port": 80}, "targetGroupARN": f.arn}});
    // Dry-run probes until the webhook answers: a real create admitted before the API server loaded
    // the configuration would leave a second binding behind.
    let dry_run = PostParams { dry_run: true, ..Default::default() };
    eventually("the duplicate binding denied by our webhook", 30, || async {
        let err = tgbs.create(&dry_run, &serde_json::from_value(dup.clone()).unwrap()).await.err()?;
        err.to_string().contains("denied the request").then_some(())
    })
    .await;
    let denial =
        tgbs.create(&PostParams::default(), &serde_json::from_value(dup).unwrap()).await.unwrap_err().to_string();
    assert!(denial.contains("denied the request"), "{denial}");
    assert!(denial.contains(&f.arn), "the denial names the target group: {denial}");
    // A binding of a target group that does not exist: the mutating webhook refuses it (a mutation failure).
    let gone = f.arn.replace(f.arn.rsplit('/').next().unwrap(), "0123456789abcdef");
    let missing = json!({"apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding", "metadata": {"name": "gone"},
                         "spec": {"serviceRef": {"name": "web", "port": 80}, "targetGroupARN": gone}});
    let err = tgbs.create(&PostParams::default(), &serde_json::from_value(missing).unwrap()).await.unwrap_err();
    assert!(err.to_string().contains("denied the request"), "a binding of {gone} must be refused: {err}");

    // A scale-up through the pod webhook.
    f.env.pods(&["scale", &f.ns, "web", "--replicas", "4"]);
    f.wait_targets("scaled up to 4", &f.expected("web")).await;

    eventually("the failed credentials refresh counted", 60, || async {
        ctl.metrics().await.lines().any(|l| l.starts_with("aws_credentials_refresh_failures_total{")).then_some(())
    })
    .await;
    write_creds("E2EPROMTHREE");

    // Every pod unready while its endpoints live: the plan to deregister every target is refused.
    for i in 0..4 {
        f.env.pods(&["set-ready", &f.ns, &format!("web-{i}"), "false"]);
    }
    eventually("deregister-all refused", 60, || async {
        let st = tgbs.get("web").await.ok()?.status?;
        st.conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "False" && c.reason == "DeregisterAllRefused")
            .then_some(())
    })
    .await;
    for i in 0..4 {
        f.env.pods(&["set-ready", &f.ns, &format!("web-{i}"), "true"]);
    }
    // A scale-down: a terminating endpoint deregistered.
    f.env.pods(&["scale", &f.ns, "web", "--replicas", "3"]);
    f.wait_targets("scaled down to 3", &f.expected("web")).await;
    eventually("the credentials file read again", 60, || async {
        let m = ctl.metrics().await;
        m.lines()
            .find(|l| l.starts_with("aws_credentials_refreshes_total{") && l.contains("outcome=\"success\""))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .filter(|n| *n >= 2.0)
    })
    .await;
    // Targets registered without a pending gate (re-registered after the refusal) are polled until AWS
    // reports them out of `initial`: the gauges end at the 3 pods healthy.
    eventually("the 3 targets reported healthy by the controller", 60, || async {
        let m = ctl.metrics().await;
        let healthy = m
            .lines()
            .find(|l| l.starts_with("awslbc_targets{") && l.contains("name=\"web\"") && l.contains("state=\"healthy\""))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok());
        (healthy == Some(3.0)).then_some(())
    })
    .await;
    let end = prometheus::now();
    let job_sel = format!("{{job=\"{JOB}\"}}");
    // The last change of the scenario is in a scrape at most one interval after `end`. The range ends at a
    // scrape one step beyond that, so the range's last step (end - STEP at the earliest) comes after it and
    // the windows (STEP apart, $__rate_interval wide) cover every pair of consecutive scrapes up to it.
    let settle = end + (SCRAPE_INTERVAL_SECS + STEP_SECS) as f64;
    let end = eventually("Prometheus scraped the controller after the scenario", 30, || async {
        let v = prom.query(&format!("max(timestamp(awslbc_leader{job_sel}))"), prometheus::now()).await.ok()?;
        v.first().map(|(_, t)| *t).filter(|t| *t >= settle)
    })
    .await;

    // Template variables, in order, each query with the earlier ones substituted (All selected).
    let mut vars: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut report = Vec::new();
    for v in dash["templating"]["list"].as_array().expect("templating") {
        let Some(q) = v["query"]["query"].as_str() else { continue };
        let name = v["name"].as_str().unwrap().to_string();
        let q = substitute(q, &vars);
        let inner = q.strip_prefix("label_values(").and_then(|r| r.strip_suffix(')')).expect("label_values(..)");
        let (selector, label) = inner.rsplit_once(',').expect("label_values(selector, label)");
        let values = prom.label_values(label.trim(), selector.trim(), start, end).await.unwrap();
        println!("variable {name}: {q} => {values:?}");
        report.push(format!("variable ${name} | {q} | {values:?}"));
        assert!(!values.is_empty(), "variable {name}: {q} returned no value");
        vars.insert(name, values);
    }
    assert_eq!(vars["job"], vec![JOB.to_string()], "variable job");
    assert!(vars["namespace"].contains(&f.ns), "variable namespace: {:?} lacks {}", vars["namespace"], f.ns);
    assert_eq!(vars["binding"], vec!["web".to_string()], "variable binding");

    // Every panel query, as a range query over the scenario.
    let queries = dashboard_queries(&dash);
    assert!(queries.len() >= 40, "only {} panel queries found in the dashboard", queries.len());
    let mut results = BTreeMap::new();
    let mut problems = Vec::new();
    for q in &queries {
        let expr = substitute(&q.expr, &vars);
        let series = match prom.query_range(&expr, start, end, STEP_SECS as f64).await {
            Ok(s) => s,
            Err(e) => {
                problems.push(format!("{} {}: {e}", q.panel, q.ref_id));
                continue;
            }
        };
        let shown = show(&series);
        println!("{} [{}]: {expr} => {shown}", q.panel, q.ref_id);
        report.push(format!("{} [{}] | {expr} | {shown}", q.panel, q.ref_id));
        let no_data = NO_DATA.iter().find(|(p, r, _)| *p == q.panel && *r == q.ref_id);
        let finite = series.iter().any(|s| s.last_finite().is_some());
        match (no_data, finite) {
            (None, false) => problems.push(format!(
                "{} [{}]: no finite value ({} series) from {expr}",
                q.panel,
                q.ref_id,
                series.len()
            )),
            (Some((_, _, why)), true) => problems.push(format!(
                "{} [{}] returned data ({shown}) but is listed in NO_DATA ({why}): remove it from the list",
                q.panel, q.ref_id
            )),
            _ => {}
        }
        let infinite: Vec<_> = series
            .iter()
            .flat_map(|s| {
                s.values.iter().filter(|(_, v)| v.is_infinite()).map(move |(t, v)| (s.labels.clone(), *t, *v))
            })
            .collect();
        if !infinite.is_empty() {
            problems.push(format!(
                "{} [{}]: infinite values {:?} from {expr}",
                q.panel,
                q.ref_id,
                &infinite[..infinite.len().min(3)]
            ));
        }
        if q.panel == "Targets by state" {
            // How the states moved, for the report: (seconds since Prometheus started, value) at each change.
            for s in &series {
                let mut changes: Vec<(u64, f64)> = Vec::new();
                for (t, v) in &s.values {
                    if changes.last().is_none_or(|(_, last)| last != v) {
                        changes.push(((*t - start).round() as u64, *v));
                    }
                }
                println!("  state {}: {changes:?}", s.labels.get("state").map_or("?", String::as_str));
            }
        }
        if (expr.contains("rate(") || expr.contains("increase(")) && !expr.starts_with("histogram_quantile") {
            let max = series.iter().flat_map(|s| s.values.iter().map(|(_, v)| *v)).fold(0.0, f64::max);
            // A listed query may still show its event when it happened twice (a refused plan retried, say).
            match (ONE_OFF.contains(&(q.panel.as_str(), q.ref_id.as_str())), max > 0.0) {
                (false, false) => problems.push(format!(
                    "{} [{}]: stays at 0 through the scenario, which exercises it: {expr}",
                    q.panel, q.ref_id
                )),
                (true, false) => println!("  0 throughout: {BORN_AT_FIRST_EVENT}"),
                (_, true) => {}
            }
        }
        if expr.starts_with("histogram_quantile") {
            let negative: Vec<_> = series.iter().flat_map(|s| s.values.iter().filter(|(_, v)| *v < 0.0)).collect();
            if !negative.is_empty() {
                problems.push(format!("{} [{}]: negative durations {negative:?}", q.panel, q.ref_id));
            }
        }
        results.insert((q.panel.clone(), q.ref_id.clone()), series);
    }
    let out = f.env.run_dir().join("prometheus-dashboard-values.txt");
    std::fs::write(&out, report.join("\n") + "\n").unwrap();
    println!("{} queries evaluated; values written to {}", queries.len() + vars.len(), out.display());
    assert!(
        problems.is_empty(),
        "dashboard queries without a sensible result:\n{}\nPrometheus log: {}",
        problems.join("\n"),
        prom.log.display()
    );

    // The values the scenario fixes.
    assert_eq!(single(&results, "Leader replicas", "A"), 1.0, "Leader replicas");
    let leaders = last(&results, "Leader by pod", "A");
    assert!(
        leaders.iter().any(|(l, v)| l.get("pod").map(String::as_str) == Some(POD) && *v == 1.0),
        "Leader by pod: {leaders:?}, expected pod={POD} at 1"
    );
    assert_eq!(single(&results, "Bindings", "A"), 1.0, "Bindings");
    // Targets re-registered after the deregister-all refusal (no gate pending) were polled until healthy.
    let healthy = single(&results, "Healthy targets", "A");
    let not_healthy = single(&results, "Targets not healthy", "A");
    assert_eq!((healthy, not_healthy), (3.0, 0.0), "Healthy targets / Targets not healthy: the 3 pods left");
    let by_state = last(&results, "Targets by state", "A");
    let of_web = |state: &str| -> f64 {
        by_state
            .iter()
            .filter(|(l, _)| {
                l.get("name").map(String::as_str) == Some("web") && l.get("state").map(String::as_str) == Some(state)
            })
            .map(|(_, v)| v)
            .sum()
    };
    let live: f64 = ["initial", "healthy", "unhealthy", "unavailable"].iter().map(|s| of_web(s)).sum();
    assert_eq!(of_web("healthy"), 3.0, "{by_state:?}");
    assert_eq!(live, 3.0, "Targets by state of {}/web, draining aside, add up to the 3 pods: {by_state:?}", f.ns);
    assert!(of_web("draining") <= 1.0, "at most the one scaled-down pod drains: {by_state:?}");
    let p99 = single(&results, "Endpoint change to RegisterTargets", "C");
    assert!(p99 > 0.0 && p99 <= 120.0, "registration latency p99 {p99} s: expected a finite number of seconds");
    let expiry = single(&results, "AWS credentials expire in", "A");
    assert!(expiry > 3000.0 && expiry <= 3600.0, "credentials expire in {expiry} s; the file says in one hour");

    mwcs.delete(&mwc_name, &DeleteParams::default()).await.unwrap();
    vwcs.delete(&vwc_name, &DeleteParams::default()).await.unwrap();
    drop(prom);
    ctl.terminate();
    f.cleanup().await;
    let _ = std::fs::remove_dir_all(run_dir);
}
