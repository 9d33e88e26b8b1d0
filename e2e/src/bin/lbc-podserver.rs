//! `lbc-podserver`: the HTTP server a data-path test pod runs inside its network namespace.
//! `GET /` answers 200 with the pod's name, `GET /healthz` 200 (503 while `<control-dir>/fail-health`
//! exists); `<control-dir>/latency-ms` (a number) delays every answer. On SIGTERM it stops
//! accepting, finishes the requests in flight and exits, as a well-behaved server does. It logs
//! one line per lifecycle event on stdout (`listening`, `sigterm`, `exit`) with the counters.

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use clap::Parser;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Parser, Debug)]
struct Args {
    /// The pod's name, the body of `GET /`.
    #[arg(long)]
    name: String,
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Directory of the control files (`fail-health`, `latency-ms`); the filesystem is shared
    /// across network namespaces, so the test and the node agent steer the server through it.
    #[arg(long)]
    control_dir: PathBuf,
}

struct Server {
    name: String,
    control: PathBuf,
    served: AtomicU64,
    in_flight: AtomicU64,
}

impl Server {
    async fn delay(&self) {
        let ms = std::fs::read_to_string(self.control.join("latency-ms")).ok().and_then(|s| s.trim().parse().ok());
        if let Some(ms) = ms.filter(|ms: &u64| *ms > 0) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
    }
}

fn log(event: &str, s: &Server) {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    println!(
        "{ms} {event} pod={} served={} in_flight={}",
        s.name,
        s.served.load(Ordering::Relaxed),
        s.in_flight.load(Ordering::Relaxed)
    );
}

async fn root(State(s): State<Arc<Server>>) -> String {
    s.in_flight.fetch_add(1, Ordering::Relaxed);
    s.delay().await;
    s.in_flight.fetch_sub(1, Ordering::Relaxed);
    s.served.fetch_add(1, Ordering::Relaxed);
    format!("{}\n", s.name)
}

async fn healthz(State(s): State<Arc<Server>>) -> (StatusCode, &'static str) {
    s.delay().await;
    if s.control.join("fail-health").exists() {
        (StatusCode::SERVICE_UNAVAILABLE, "failing (told to)\n")
    } else {
        (StatusCode::OK, "ok\n")
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let s = Arc::new(Server { name: args.name, control: args.control_dir, served: 0.into(), in_flight: 0.into() });
    let app = Router::new().route("/", get(root)).route("/healthz", get(healthz)).with_state(s.clone());
    // All addresses of the pod's own network namespace (its eth0 holds the pod IP), never the host's.
    let listener = tokio::net::TcpListener::bind(("0.0.0.0", args.port)).await?;
    log("listening", &s);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let s2 = s.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            term.recv().await;
            log("sigterm", &s2);
        })
        .await?;
    log("exit", &s);
    Ok(())
}
