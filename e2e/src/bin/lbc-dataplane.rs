//! `lbc-dataplane`: an NLB-like (and basic ALB-like) data plane for one load balancer of the AWS emulator (see
//! `lbc_e2e::datapath::plane`), run inside the VPC network namespace:
//!
//! ```sh
//! lbc-dataplane forward --socket /tmp/emu.sock --to 127.0.0.1:4566      # host namespace
//! ip netns exec VPC lbc-dataplane run --emulator unix:/tmp/emu.sock \
//!     --load-balancer-arn ARN --listen 10.0.255.10 [--registration-propagation-seconds 300] \
//!     [--deregistration-propagation-seconds 50] [--status-file F]
//! ip netns exec VPC lbc-dataplane fleet --emulator unix:/tmp/emu.sock --pool 10.0.254.0/24 \
//!     --hosts-file /tmp/fleet/hosts --status-dir /tmp/fleet [run's tuning flags]
//! ```
//!
//! `run` logs one line per event (registrations, health changes, drains) on stdout and runs until
//! killed. `fleet` serves every ALB of the emulator, each with a `run` of its own on an address of
//! `--pool` (see `lbc_e2e::datapath::plane::fleet`), until SIGTERM/SIGINT, then stops them and
//! removes the addresses. `forward` relays a Unix socket to the emulator's TCP port (the emulator
//! listens on the host's 127.0.0.1, which the VPC namespace cannot reach) until SIGTERM/SIGINT,
//! then removes its socket.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use ipnet::Ipv4Net;
use lbc_e2e::datapath::plane::{self, fleet, wire};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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
        #[command(flatten)]
        tuning: plane::Tuning,
        /// Write a JSON snapshot of the targets here after every poll.
        #[arg(long)]
        status_file: Option<PathBuf>,
    },
    /// Serve every ALB of the emulator, each with a `run` of its own on an address of `--pool`
    /// (inside the VPC namespace), until SIGTERM/SIGINT.
    Fleet {
        /// The emulator: `unix:PATH` (a `forward` socket) or `HOST:PORT`.
        #[arg(long)]
        emulator: wire::Endpoint,
        /// The addresses handed to the load balancers (network and broadcast addresses excluded),
        /// added to the VPC bridge as /32s.
        #[arg(long)]
        pool: Ipv4Net,
        /// Rewritten (atomically) after every change: one `ADDR DNS_NAME` line per served load balancer.
        #[arg(long)]
        hosts_file: PathBuf,
        /// Each load balancer's `run`: status file `<name>.json`, stdout `<name>.log`, stderr `<name>.err`.
        #[arg(long)]
        status_dir: PathBuf,
        /// Passed on to every `run` (`--poll-ms` is also the fleet's own poll interval).
        #[command(flatten)]
        tuning: plane::Tuning,
    },
    /// Relay a Unix socket to the emulator's TCP port (in the machine's own namespace).
    Forward {
        #[arg(long)]
        socket: PathBuf,
        #[arg(long)]
        to: SocketAddr,
    },
}

/// Sets `stop` on the first SIGTERM or SIGINT, from a thread of its own (the engines are plain std
/// threads); returns once the handlers are installed.
fn stop_on_signal(stop: Arc<AtomicBool>) -> Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<()>>();
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(rt) => rt,
            Err(e) => {
                let _ = ready_tx.send(Err(e.into()));
                return;
            }
        };
        let _entered = rt.enter();
        let (mut term, mut int) = match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
            (Ok(t), Ok(i)) => (t, i),
            (Err(e), _) | (_, Err(e)) => {
                let _ = ready_tx.send(Err(e.into()));
                return;
            }
        };
        let _ = ready_tx.send(Ok(()));
        rt.block_on(async {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        });
        stop.store(true, Ordering::SeqCst);
    })?;
    ready_rx.recv().context("the signal thread ended before installing its handlers")?
}

fn main() -> Result<()> {
    match Args::parse().cmd {
        Cmd::Run { emulator, load_balancer_arn, listen, tuning, status_file } => {
            plane::run(tuning.config(emulator, load_balancer_arn, listen, status_file))
        }
        Cmd::Fleet { emulator, pool, hosts_file, status_dir, tuning } => {
            let stop = Arc::new(AtomicBool::new(false));
            stop_on_signal(stop.clone())?;
            let program = std::env::current_exe().context("finding lbc-dataplane's own path (current_exe)")?;
            fleet::run(fleet::FleetConfig { emulator, pool, hosts_file, status_dir, tuning, program }, stop)
        }
        Cmd::Forward { socket, to } => {
            let fwd = wire::EmulatorForwarder::start(&socket, to)?;
            println!("forwarding {} -> {to}", socket.display());
            // Until SIGTERM/SIGINT; dropping the forwarder removes its socket file.
            let stop = Arc::new(AtomicBool::new(false));
            stop_on_signal(stop.clone())?;
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            drop(fwd);
            Ok(())
        }
    }
}
