//! A real Prometheus (Debian's `prometheus` package, installed by e2e/test-all) scraping controllers of a test
//! on 127.0.0.1, and the parts of its HTTP API a Grafana dashboard uses: range queries and label values.
//!
//! The binary is `$LBC_PROMETHEUS_BIN` (e2e/up writes it to e2e/.run/env when `prometheus` is on the PATH), else
//! `prometheus` on the PATH. It listens on `$LBC_PROMETHEUS_PORT` (19090 + `LBC_E2E_PORT_OFFSET`, written by
//! e2e/up), keeps its data in a temporary directory and is killed when dropped.

use crate::Env;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Scrape interval of every job: short, so a scenario of a minute leaves enough samples for `rate()`.
pub const SCRAPE_INTERVAL_SECS: u64 = 1;

/// One scrape target, labelled as the chart's ServiceMonitor labels it (the Prometheus Operator adds the `pod`
/// and `namespace` target labels; with `honorLabels: true`, the chart's default, a series' own `namespace`
/// label wins over the target's).
pub struct Target {
    pub job: String,
    pub address: String,
    pub pod: String,
    pub namespace: String,
}

/// One series of a range query: its labels and `(unix seconds, value)` samples.
#[derive(Debug, Clone)]
pub struct Series {
    pub labels: BTreeMap<String, String>,
    pub values: Vec<(f64, f64)>,
}

impl Series {
    /// The last finite value (what Grafana's "last *" reducers show).
    pub fn last_finite(&self) -> Option<f64> {
        self.values.iter().rev().map(|(_, v)| *v).find(|v| v.is_finite())
    }
}

pub struct Prometheus {
    child: Child,
    pub port: u16,
    dir: PathBuf,
    pub log: PathBuf,
    http: reqwest::Client,
}

/// The prometheus binary, or why there is none.
pub fn binary(env: &Env) -> Result<PathBuf, String> {
    if let Some(b) = env.vars().get("LBC_PROMETHEUS_BIN").filter(|b| !b.is_empty()) {
        return Ok(PathBuf::from(b));
    }
    which("prometheus").ok_or_else(|| {
        "prometheus is not installed: `apt-get install prometheus` (Debian's package, 2.42; e2e/test-all installs \
         it when run as root), then run e2e/up again so e2e/.run/env names it"
            .to_string()
    })
}

/// `name` on the PATH.
pub fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(name)).find(|p| p.is_file())
}

/// Seconds since the Unix epoch, as Prometheus's API takes them.
pub fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock after 1970").as_secs_f64()
}

impl Prometheus {
    /// Starts Prometheus scraping `targets` every [`SCRAPE_INTERVAL_SECS`] and waits until it is ready.
    pub async fn start(env: &Env, bin: &Path, targets: &[Target]) -> Self {
        let port: u16 = match env.vars().get("LBC_PROMETHEUS_PORT") {
            Some(p) => p.parse().unwrap_or_else(|_| panic!("LBC_PROMETHEUS_PORT={p:?} in e2e/.run/env is not a port")),
            None => 19090,
        };
        if let Ok(l) = std::net::TcpListener::bind(("127.0.0.1", port)) {
            drop(l);
        } else {
            panic!(
                "127.0.0.1:{port} (LBC_PROMETHEUS_PORT) is taken: a Prometheus of an earlier, killed test? \
                 Find it with `ss -ltnp 'sport = :{port}'` and stop it, or run with another LBC_E2E_PORT_OFFSET"
            );
        }
        let dir = std::env::temp_dir().join(crate::unique("lbc-e2e-prometheus"));
        std::fs::create_dir_all(dir.join("data")).expect("prometheus temp dir");
        let mut config = format!(
            "global:\n  scrape_interval: {i}s\n  scrape_timeout: {i}s\n  evaluation_interval: {i}s\nscrape_configs:\n",
            i = SCRAPE_INTERVAL_SECS
        );
        for t in targets {
            config.push_str(&format!(
                "  - job_name: {job:?}\n    honor_labels: true\n    static_configs:\n      - targets: [{addr:?}]\n        \
                 labels: {{pod: {pod:?}, namespace: {ns:?}}}\n",
                job = t.job,
                addr = t.address,
                pod = t.pod,
                ns = t.namespace
            ));
        }
        let config_path = dir.join("prometheus.yml");
        std::fs::write(&config_path, config).expect("write prometheus.yml");
        let log = env.run_dir().join(format!("logs/prometheus-{port}.log"));
        let file = std::fs::File::create(&log).expect("prometheus log");
        let child = Command::new(bin)
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--storage.tsdb.retention.time=1h")
            .stdout(file.try_clone().expect("log fd"))
            .stderr(file)
            .stdin(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
        let p = Self { child, port, dir, log, http: reqwest::Client::new() };
        let url = format!("http://127.0.0.1:{port}/-/ready");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            if p.http.get(&url).send().await.is_ok_and(|r| r.status().is_success()) {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "Prometheus on 127.0.0.1:{port} not ready after 60 s; its log ({}):\n{}",
                p.log.display(),
                std::fs::read_to_string(&p.log).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        p
    }

    async fn api(&self, path: &str, params: &[(&str, String)]) -> Result<Value, String> {
        let url = format!("http://127.0.0.1:{}/api/v1/{path}", self.port);
        let r = self.http.get(&url).query(params).send().await.map_err(|e| format!("{url}: {e}"))?;
        let status = r.status();
        let v: Value = r.json().await.map_err(|e| format!("{url}: HTTP {status}, not JSON: {e}"))?;
        if v["status"] != "success" {
            return Err(format!("{url} {params:?}: HTTP {status}: {} {}", v["errorType"], v["error"]));
        }
        Ok(v["data"].clone())
    }

    /// `/api/v1/query_range`, as a Grafana time series panel sends it.
    pub async fn query_range(&self, query: &str, start: f64, end: f64, step: f64) -> Result<Vec<Series>, String> {
        let data = self
            .api(
                "query_range",
                &[
                    ("query", query.into()),
                    ("start", start.to_string()),
                    ("end", end.to_string()),
                    ("step", step.to_string()),
                ],
            )
            .await?;
        if data["resultType"] != "matrix" {
            return Err(format!("{query}: result type {} (expected matrix)", data["resultType"]));
        }
        let mut out = Vec::new();
        for s in data["result"].as_array().into_iter().flatten() {
            let labels = labels_of(s);
            let mut values = Vec::new();
            for pair in s["values"].as_array().into_iter().flatten() {
                let t = pair[0].as_f64().ok_or_else(|| format!("{query}: bad sample time {pair}"))?;
                // Prometheus writes "NaN", "+Inf" and "-Inf", which Rust parses.
                let v: f64 = pair[1]
                    .as_str()
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| format!("{query}: bad sample value {pair}"))?;
                values.push((t, v));
            }
            out.push(Series { labels, values });
        }
        Ok(out)
    }

    /// `/api/v1/query` at `time`: one value per series.
    pub async fn query(&self, query: &str, time: f64) -> Result<Vec<(BTreeMap<String, String>, f64)>, String> {
        let data = self.api("query", &[("query", query.into()), ("time", time.to_string())]).await?;
        let mut out = Vec::new();
        for s in data["result"].as_array().into_iter().flatten() {
            let labels = labels_of(s);
            let v = s["value"][1].as_str().and_then(|v| v.parse().ok()).ok_or_else(|| format!("{query}: {s}"))?;
            out.push((labels, v));
        }
        Ok(out)
    }

    /// Values of `label` on the series `selector` matches between `start` and `end` (what Grafana asks for a
    /// `label_values(selector, label)` variable), sorted.
    pub async fn label_values(&self, label: &str, selector: &str, start: f64, end: f64) -> Result<Vec<String>, String> {
        let data = self
            .api(
                &format!("label/{label}/values"),
                &[("match[]", selector.into()), ("start", start.to_string()), ("end", end.to_string())],
            )
            .await?;
        let mut v: Vec<String> =
            data.as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_string)).collect();
        v.sort();
        Ok(v)
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A result series' label set (`metric`).
fn labels_of(series: &serde_json::Value) -> BTreeMap<String, String> {
    series["metric"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect()
}
