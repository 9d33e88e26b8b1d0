//! `aws-lb-controller [controller flags] doctor`: a read-only check of the cluster and AWS that
//! explains why nothing happens. It gathers plain data here (kube reads, AWS read calls and
//! DryRuns through the same adapters and CallRunner as the controller, TLS handshakes) and leaves
//! every judgement to `lbc_model::doctor`. Exit code 1 when any check fails.

mod aws;
mod kube;
mod output;
mod tls;

use crate::args::Args;
use lbc_model::doctor::not_run::{Blocker, CHECKS, not_run};
use lbc_model::doctor::{Verdict, exit_code};

/// Flags of the `doctor` subcommand (the controller's own flags go before or after `doctor`).
#[derive(clap::Args, Debug, Clone)]
pub struct DoctorArgs {
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub output: Format,

    /// Check the pod IPs of every Service with endpoints in every namespace, not only the
    /// Services this controller serves in the watched namespace.
    #[arg(long, default_value_t = false)]
    pub all_namespaces: bool,

    /// Name of our Mutating- and ValidatingWebhookConfiguration (the chart's `<fullname>-webhook`).
    #[arg(long, default_value = "aws-lb-controller-webhook")]
    pub webhook_configuration: String,

    /// How long the credential source may take to hand out keys.
    #[arg(long, default_value = "20s", value_parser = crate::args::parse_duration)]
    pub credentials_timeout: std::time::Duration,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

/// Runs every check and prints the report; returns the exit code.
pub async fn run(args: &Args, d: &DoctorArgs) -> anyhow::Result<i32> {
    let mut verdicts: Vec<Verdict> = Vec::new();
    let mut blockers: Vec<Blocker> = Vec::new();
    let client = crate::run::kube_config(args).await.and_then(|mut c| {
        c.connect_timeout = Some(args.kube_api_connect_timeout);
        c.read_timeout = Some(args.kube_api_request_timeout);
        Ok(::kube::Client::try_from(c)?)
    });
    let cluster = match client {
        Ok(client) => Some(kube::gather(&client, args, d).await),
        Err(e) => {
            verdicts.push(Verdict::fail(
                "kubernetes",
                "Kubernetes API",
                format!("no client: {e:#}"),
                "a reachable API server",
                "pass --kubeconfig (or KUBECONFIG), or run doctor in the cluster",
            ));
            blockers.push(Blocker::kubernetes(format!("{e:#}")));
            None
        }
    };
    let aws = aws::gather(args, d, cluster.as_ref()).await;
    verdicts.extend(aws.verdicts);
    blockers.extend(aws.blockers);
    if let Some(c) = cluster {
        blockers.extend(c.blockers.clone());
        verdicts.extend(c.verdicts(args, aws.vpc.as_ref(), aws.target_group_tags.as_ref()));
    }
    // A check that could not run is a failure that names why, never a missing line.
    let missing = not_run(&verdicts, &blockers);
    verdicts.extend(missing);
    // Stable order: the check order (after the Kubernetes connection), then as gathered.
    let position = |check: &str| {
        if check == "kubernetes" { 0 } else { 1 + CHECKS.iter().position(|c| *c == check).unwrap_or(CHECKS.len()) }
    };
    verdicts.sort_by_key(|v| position(v.check));
    match d.output {
        Format::Text => print!("{}", output::text(&verdicts)),
        Format::Json => println!("{}", output::json(&verdicts)),
    }
    Ok(exit_code(&verdicts))
}
