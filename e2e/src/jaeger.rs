//! A real OTLP receiver for the tracing test: Jaeger v1's all-in-one (built by
//! `ONLY=jaeger e2e/scripts/build-bins.sh`, path in `LBC_JAEGER_BIN`), in-memory store, every port
//! on 127.0.0.1, queried through its HTTP API (`/api/traces`).

use crate::Env;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// A running Jaeger, killed when dropped.
pub struct JaegerProc {
    child: Child,
    /// OTLP/HTTP receiver (`/v1/traces`).
    pub otlp_http_port: u16,
    pub query_port: u16,
    admin_port: u16,
    pub log: PathBuf,
}

/// One span as Jaeger's query API returns it.
#[derive(Clone, Debug)]
pub struct Span {
    pub span_id: String,
    pub parent: Option<String>,
    pub name: String,
    pub tags: serde_json::Map<String, Value>,
    pub start_us: u64,
}

/// One trace: its ID (lowercase hex, as Jaeger prints it) and spans.
#[derive(Clone, Debug)]
pub struct Trace {
    pub id: String,
    pub spans: Vec<Span>,
}

impl Trace {
    fn from_json(t: &Value) -> Self {
        let spans = t["spans"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| Span {
                span_id: s["spanID"].as_str().unwrap_or_default().to_string(),
                parent: s["references"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|r| r["refType"] == "CHILD_OF")
                    .and_then(|r| r["spanID"].as_str().map(str::to_string)),
                name: s["operationName"].as_str().unwrap_or_default().to_string(),
                tags: s["tags"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|t| Some((t["key"].as_str()?.to_string(), t["value"].clone())))
                    .collect(),
                start_us: s["startTime"].as_u64().unwrap_or_default(),
            })
            .collect();
        Self { id: t["traceID"].as_str().unwrap_or_default().to_string(), spans }
    }

    pub fn named(&self, name: &str) -> Vec<&Span> {
        self.spans.iter().filter(|s| s.name == name).collect()
    }

    pub fn children(&self, of: &Span) -> Vec<&Span> {
        self.spans.iter().filter(|s| s.parent.as_deref() == Some(of.span_id.as_str())).collect()
    }

    /// The span tree, one span a line, indented by depth (children by start time).
    pub fn render(&self) -> String {
        let mut out = format!("trace {}\n", self.id);
        let ids: std::collections::BTreeSet<&str> = self.spans.iter().map(|s| s.span_id.as_str()).collect();
        let mut roots: Vec<&Span> =
            self.spans.iter().filter(|s| s.parent.as_deref().is_none_or(|p| !ids.contains(p))).collect();
        roots.sort_by_key(|s| s.start_us);
        for r in roots {
            self.render_into(r, 1, &mut out);
        }
        out
    }

    fn render_into(&self, s: &Span, depth: usize, out: &mut String) {
        let keep = ["object", "outcome", "rpc.service", "attempts", "http.response.status_code", "error"];
        let tags: Vec<String> =
            s.tags.iter().filter(|(k, _)| keep.contains(&k.as_str())).map(|(k, v)| format!("{k}={v}")).collect();
        out.push_str(&format!("{}{} [{}]\n", "  ".repeat(depth), s.name, tags.join(" ")));
        let mut kids = self.children(s);
        kids.sort_by_key(|k| k.start_us);
        for k in kids {
            self.render_into(k, depth + 1, out);
        }
    }
}

/// Trace IDs compared as numbers: Jaeger drops leading zeros of a trace ID's high half.
pub fn same_trace_id(a: &str, b: &str) -> bool {
    a.trim_start_matches('0').eq_ignore_ascii_case(b.trim_start_matches('0'))
}

impl JaegerProc {
    /// Starts Jaeger and waits until its admin endpoint says it serves.
    pub async fn start(env: &Env, name: &str) -> Self {
        let bin = std::env::var("LBC_JAEGER_BIN")
            .ok()
            .or_else(|| env.vars().get("LBC_JAEGER_BIN").cloned())
            .map(PathBuf::from)
            .filter(|p| p.is_file())
            .unwrap_or_else(|| {
                panic!(
                    "LBC_JAEGER_BIN is not set or not a file: run `LBC_E2E_JAEGER=1 e2e/up` (it builds Jaeger \
                     with `ONLY=jaeger e2e/scripts/build-bins.sh`, ~8 min cold) and source e2e/.run/env"
                )
            });
        let (otlp_http_port, otlp_grpc_port, query_port, query_grpc_port, admin_port, coll_http, coll_grpc) =
            (free_port(), free_port(), free_port(), free_port(), free_port(), free_port(), free_port());
        let log = env.run_dir().join(format!("logs/jaeger-{name}-{otlp_http_port}.log"));
        let file = std::fs::File::create(&log).expect("jaeger log");
        let at = |p: u16| format!("127.0.0.1:{p}");
        let child = Command::new(&bin)
            .arg(format!("--collector.otlp.http.host-port={}", at(otlp_http_port)))
            .arg(format!("--collector.otlp.grpc.host-port={}", at(otlp_grpc_port)))
            .arg(format!("--collector.http-server.host-port={}", at(coll_http)))
            .arg(format!("--collector.grpc-server.host-port={}", at(coll_grpc)))
            .arg(format!("--query.http-server.host-port={}", at(query_port)))
            .arg(format!("--query.grpc-server.host-port={}", at(query_grpc_port)))
            .arg(format!("--admin.http.host-port={}", at(admin_port)))
            .env("SPAN_STORAGE_TYPE", "memory")
            .env("OTEL_SDK_DISABLED", "true")
            .stdout(file.try_clone().expect("log fd"))
            .stderr(file)
            .stdin(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", bin.display()));
        let me = Self { child, otlp_http_port, query_port, admin_port, log };
        let http = reqwest::Client::new();
        crate::eventually("jaeger serving (admin endpoint 200, query API answers)", 60, || async {
            let admin = http.get(format!("http://127.0.0.1:{}/", me.admin_port)).send().await.ok()?;
            let query = http.get(format!("http://127.0.0.1:{}/api/services", me.query_port)).send().await.ok()?;
            (admin.status().is_success() && query.status().is_success()).then_some(())
        })
        .await;
        me
    }

    /// The OTLP/HTTP base URL to give the controller.
    pub fn otlp_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.otlp_http_port)
    }

    /// Traces of `service` that have a span named `operation` (Jaeger's search), newest first.
    pub async fn traces(&self, service: &str, operation: &str) -> Vec<Trace> {
        let url = format!("http://127.0.0.1:{}/api/traces", self.query_port);
        let q = [("service", service), ("operation", operation), ("limit", "100"), ("lookback", "1h")];
        let Ok(r) = reqwest::Client::new().get(url).query(&q).send().await else { return Vec::new() };
        let Ok(v) = r.json::<Value>().await else { return Vec::new() };
        v["data"].as_array().into_iter().flatten().map(Trace::from_json).collect()
    }

    /// Services Jaeger has spans of.
    pub async fn services(&self) -> Vec<String> {
        let url = format!("http://127.0.0.1:{}/api/services", self.query_port);
        let Ok(r) = reqwest::get(url).await else { return Vec::new() };
        let Ok(v) = r.json::<Value>().await else { return Vec::new() };
        v["data"].as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_string)).collect()
    }
}

impl Drop for JaegerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
