//! `lbc-dataplane`: an NLB-like (and basic ALB-like) data plane for one load balancer of the AWS emulator (see
//! `lbc_e2e::datapath::plane`), run inside the VPC network namespace:
//!
//! ```sh
//! lbc-dataplane forward --socket /tmp/emu.sock --to 127.0.0.1:4566      # host namespace
//! ip netns exec VPC lbc-dataplane run --emulator unix:/tmp/emu.sock \
//!     --load-balancer-arn ARN --listen 10.0.255.10 [--registration-propagation-seconds 300] \
//!     [--deregistration-propagation-seconds 50] [--status-file F]
//! ```
//!
//! `run` logs one line per event (registrations, health changes, drains) on stdout and runs until
//! killed. `forward` relays a Unix socket to the emulator's TCP port (the emulator listens on the
//! host's 127.0.0.1, which the VPC namespace cannot reach) until SIGTERM/SIGINT, then removes its socket.

use anyhow::Result;
use clap::{Parser, Subcommand};
use lbc_e2e::datapath::plane::{self, wire};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser, Debug)]
struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Serve the load balancer's listeners (inside the VPC namespace).
    Run {
        /// The emulator: `unix:PATH` (a `forward` socket) or `HOST:PORT`.
        #[arg(long)]
        emulator: wire::Endpoint,
        #[arg(long)]
        load_balancer_arn: String,
        /// The VPC address the listeners bind.
        #[arg(long)]
        listen: IpAddr,
        /// Milliseconds between two reads of the views.
        #[arg(long, default_value_t = 100)]
        poll_ms: u64,
        /// How long a registration takes to reach the data plane (health checks start, then
        /// connections once healthy), in AWS seconds (times the emulator's time scale). Real NLBs
        /// take minutes ("a few minutes for the registration process to complete and health checks
        /// to start"), far longer than a deregistration.
        #[arg(long, default_value_t = 300.0)]
        registration_propagation_seconds: f64,
        /// How long a deregistration takes to stop new connections to the target, in AWS seconds
        /// (times the emulator's time scale). Tens of seconds on real NLBs.
        #[arg(long, default_value_t = 50.0)]
        deregistration_propagation_seconds: f64,
        /// The same propagation delay both ways (overrides the two above).
        #[arg(long)]
        propagation_seconds: Option<f64>,
        /// Lower bound of a time-scaled health-check timeout, in milliseconds.
        #[arg(long, default_value_t = 100)]
        min_timeout_ms: u64,
        /// Lower bound of a time-scaled health-check interval, in milliseconds.
        #[arg(long, default_value_t = 50)]
        min_interval_ms: u64,
        /// Connect timeout to a target, in milliseconds.
        #[arg(long, default_value_t = 2000)]
        connect_timeout_ms: u64,
        /// How long an HTTP listener waits for a target's response, in milliseconds.
        #[arg(long, default_value_t = 60000)]
        request_timeout_ms: u64,
        /// Write a JSON snapshot of the targets here after every poll.
        #[arg(long)]
        status_file: Option<PathBuf>,
    },
    /// Relay a Unix socket to the emulator's TCP port (in the machine's own namespace).
    Forward {
        #[arg(long)]
        socket: PathBuf,
        #[arg(long)]
        to: SocketAddr,
    },
}

fn main() -> Result<()> {
    match Args::parse().cmd {
        Cmd::Run {
            emulator,
            load_balancer_arn,
            listen,
            poll_ms,
            registration_propagation_seconds,
            deregistration_propagation_seconds,
            propagation_seconds,
            min_timeout_ms,
            min_interval_ms,
            connect_timeout_ms,
            request_timeout_ms,
            status_file,
        } => plane::run(plane::Config {
            emulator,
            load_balancer_arn,
            listen,
            poll: Duration::from_millis(poll_ms.max(10)),
            registration_propagation_seconds: propagation_seconds.unwrap_or(registration_propagation_seconds),
            deregistration_propagation_seconds: propagation_seconds.unwrap_or(deregistration_propagation_seconds),
            min_timeout: Duration::from_millis(min_timeout_ms),
            min_interval: Duration::from_millis(min_interval_ms),
            connect_timeout: Duration::from_millis(connect_timeout_ms),
            request_timeout: Duration::from_millis(request_timeout_ms),
            status_file,
        }),
        Cmd::Forward { socket, to } => {
            let fwd = wire::EmulatorForwarder::start(&socket, to)?;
            println!("forwarding {} -> {to}", socket.display());
            // Until SIGTERM/SIGINT; dropping the forwarder removes its socket file.
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            rt.block_on(async {
                use tokio::signal::unix::{SignalKind, signal};
                let (mut term, mut int) = (signal(SignalKind::terminate())?, signal(SignalKind::interrupt())?);
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
                anyhow::Ok(())
            })?;
            drop(fwd);
            Ok(())
        }
    }
}
