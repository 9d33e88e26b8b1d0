//! `lbc-node-agent`: the data-path node agent (library: `lbc_e2e::datapath::agent`).
//!
//! - `lbc-node-agent probe`: the readiness prober the agent runs inside the VPC namespace
//!   (requests on stdin, answers on stdout; see `agent::prober`).
//! - `lbc-node-agent run [--vpc lbcv-...] [--namespace NS]`: the agent on its own, against the
//!   environment of `e2e/.run/env`, until SIGINT/SIGTERM (then it deletes its nodes and the pods'
//!   namespaces). Without `--vpc` it creates a VPC namespace of its own on `LBC_VPC_CIDR` (and
//!   deletes it at the end). Tests use the library instead.

use clap::{Parser, Subcommand};
use lbc_e2e::datapath::agent::{Agent, AgentConfig, prober};
use lbc_e2e::datapath::netns::Vpc;
use std::path::PathBuf;

#[derive(Parser, Debug)]
struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Serve probe requests on stdin (run inside the VPC namespace).
    Probe,
    /// Run the agent until SIGINT/SIGTERM.
    Run {
        /// An existing VPC network namespace (made by `Vpc::create` in a live process); default:
        /// a new one, `lbcv-<tag>-<pid>`.
        #[arg(long)]
        vpc: Option<String>,
        #[arg(long, default_value = "manual")]
        tag: String,
        /// Only pods of this namespace.
        #[arg(long)]
        namespace: Option<String>,
        /// Pod CIDR slot (0..=5): agents running at once need different slots.
        #[arg(long, default_value_t = 0)]
        slot: u8,
        #[arg(long, default_value_t = 1.0)]
        time_scale: f64,
        /// The lbc-podserver binary (default: next to this one).
        #[arg(long)]
        podserver: Option<PathBuf>,
    },
}

fn main() -> anyhow::Result<()> {
    match Args::parse().cmd {
        Cmd::Probe => {
            prober::serve_stdin();
            Ok(())
        }
        Cmd::Run { vpc, tag, namespace, slot, time_scale, podserver } => {
            let me = std::env::current_exe()?;
            let podserver = podserver.unwrap_or_else(|| me.with_file_name("lbc-podserver"));
            let env = lbc_e2e::Env::load().ok_or_else(|| anyhow::anyhow!("e2e/.run/env is missing: run e2e/up"))?;
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            rt.block_on(async move {
                let vpc = match vpc {
                    Some(name) => Vpc::attach(&name)?,
                    None => Vpc::create(&tag, env.get("LBC_VPC_CIDR"))?,
                };
                let mut config = AgentConfig::for_env(&env, &tag, &vpc, slot, &podserver, &me)?;
                config.namespace = namespace;
                config.time_scale = time_scale;
                let agent = Agent::start(&env, config).await?;
                eprintln!(
                    "[node-agent {tag}] running; VPC namespace {} ({}), nodes {:?}, pods with schedulerName {}",
                    vpc.name(),
                    vpc.cidr(),
                    agent.node_names(),
                    agent.config().scheduler_name
                );
                let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
                let stopped = agent.stop().await;
                drop(vpc);
                stopped
            })
        }
    }
}
