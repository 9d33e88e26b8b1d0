//! `lbc-loadgen`: a steady request rate against an address (see `lbc_e2e::datapath::loadgen`),
//! run inside the VPC network namespace:
//!
//! ```sh
//! ip netns exec VPC lbc-loadgen --target 10.0.255.10:80 --rate 200 [--duration-secs 10] [--per-second]
//! ```
//!
//! Prints the JSON summary on stdout at the end, also when stopped by SIGTERM or SIGINT.

use clap::Parser;
use lbc_e2e::datapath::loadgen::{self, Config};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[derive(Parser, Debug)]
struct Args {
    /// `IP:PORT` to load (a listener of lbc-dataplane).
    #[arg(long)]
    target: SocketAddr,
    /// Requests per second, all clients together.
    #[arg(long, default_value_t = 200.0)]
    rate: f64,
    /// Share of requests on new connections (0..=1); the rest on keep-alive connections.
    #[arg(long, default_value_t = 0.5)]
    new_connection_share: f64,
    #[arg(long, default_value_t = 4)]
    keepalive_clients: usize,
    #[arg(long, default_value_t = 16)]
    new_connection_workers: usize,
    /// Connect and response timeout, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    timeout_ms: u64,
    #[arg(long, default_value = "/")]
    path: String,
    /// The `Host` header (default: the target address).
    #[arg(long)]
    host: Option<String>,
    /// Stop after this many seconds (default: at SIGTERM/SIGINT).
    #[arg(long)]
    duration_secs: Option<f64>,
    /// Add the per-second counts to the summary.
    #[arg(long)]
    per_second: bool,
}

fn main() -> std::io::Result<()> {
    let a = Args::parse();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut term = rt.block_on(async { tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) })?;
    let mut int = rt.block_on(async { tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()) })?;
    std::thread::spawn(move || {
        rt.block_on(async {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        });
        flag.store(true, Ordering::SeqCst);
    });
    let summary = loadgen::run(
        Config {
            target: a.target,
            rate: a.rate,
            new_connection_share: a.new_connection_share,
            keepalive_clients: a.keepalive_clients,
            new_connection_workers: a.new_connection_workers,
            timeout: Duration::from_millis(a.timeout_ms),
            path: a.path,
            host: a.host,
            duration: a.duration_secs.map(Duration::from_secs_f64),
        },
        stop,
        a.per_second,
    );
    println!("{}", serde_json::to_string(&summary).unwrap_or_default());
    Ok(())
}
