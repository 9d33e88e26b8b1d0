//! Runs the upstream AWS Load Balancer Controller (ALBC) against the e2e environment, for the
//! adoption tests. ALBC is not part of the project: its binary is built from the peers' source
//! snapshot (`../shared/peers/build-albc.sh`, cached under ~/.cache/aws-lb-controller/) or given
//! with `LBC_ALBC_BIN`. Flags as the peers' README found them to work against the emulator.

use crate::Env;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// ALBC's service IDs for `--aws-api-endpoints` (the Go SDK's), all pointed at the emulator.
const SERVICES: [&str; 8] = [
    "EC2",
    "Elastic Load Balancing v2",
    "ACM",
    "WAFV2",
    "WAF Regional",
    "Shield",
    "Resource Groups Tagging API",
    "STS",
];

/// The ALBC binary, or `None` after printing why `test` is skipped (panics instead when
/// `LBC_ALBC_REQUIRED=1`).
pub fn require_albc(test: &str) -> Option<PathBuf> {
    let candidate = std::env::var_os("LBC_ALBC_BIN").map(PathBuf::from).or_else(|| {
        let home = std::env::var_os("HOME")?;
        Some(PathBuf::from(home).join(".cache/aws-lb-controller/albc-225f4456/controller"))
    });
    match candidate.filter(|p| p.is_file()) {
        Some(p) => Some(p),
        None => {
            let why = format!(
                "{test} needs the ALBC binary: build it with ../shared/peers/build-albc.sh (cached under \
                 ~/.cache/aws-lb-controller/albc-225f4456/) or set LBC_ALBC_BIN"
            );
            if std::env::var("LBC_ALBC_REQUIRED").as_deref() == Ok("1") {
                panic!("{why} (LBC_ALBC_REQUIRED=1)");
            }
            eprintln!("SKIPPED {why}");
            None
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// A running ALBC, killed when dropped.
pub struct AlbcProc {
    child: Child,
    pub metrics_port: u16,
    pub log: PathBuf,
    /// The access key ID it signs with: its calls in the emulator's call log.
    pub access_key: String,
}

impl AlbcProc {
    /// Starts ALBC watching every namespace, electing its leader on Lease `lease` in `lease_ns`.
    /// Its ports are picked free just before it binds them; another test's process may take one
    /// in between (ALBC then exits with "address already in use"): it is started again on new
    /// ports, up to three times.
    pub fn start(env: &Env, bin: &std::path::Path, lease_ns: &str, lease: &str, extra: &[&str]) -> Self {
        for _ in 0..2 {
            let mut p = Self::start_once(env, bin, lease_ns, lease, extra);
            if !p.lost_a_port() {
                return p;
            }
            let _ = p.child.wait();
        }
        Self::start_once(env, bin, lease_ns, lease, extra)
    }

    /// Whether ALBC exited within its first seconds because a port it was given is taken.
    fn lost_a_port(&mut self) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::time::Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return self.log_text().contains("address already in use");
            }
            // Something answers on its metrics port: ALBC, unless it is about to exit for want of it.
            if std::net::TcpStream::connect(("127.0.0.1", self.metrics_port)).is_ok() {
                std::thread::sleep(std::time::Duration::from_millis(500));
                if self.child.try_wait().ok().flatten().is_none() {
                    return false;
                }
                continue;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        false
    }

    fn start_once(env: &Env, bin: &std::path::Path, lease_ns: &str, lease: &str, extra: &[&str]) -> Self {
        let (metrics_port, health_port, webhook_port) = (free_port(), free_port(), free_port());
        let log = env.run_dir().join(format!("logs/albc-{metrics_port}.log"));
        let cert_dir = env.run_dir().join(format!("albc-cert-{metrics_port}"));
        // No webhook configuration points at it; it refuses to start without a serving pair.
        crate::webhook::write_cert(&cert_dir);
        let endpoints: Vec<String> = SERVICES.iter().map(|s| format!("{s}={}", env.aws_endpoint())).collect();
        let access_key = format!("E2EALBC{metrics_port}");
        let file = std::fs::File::create(&log).expect("albc log");
        let child = Command::new(bin)
            .arg(format!("--kubeconfig={}", env.get("KUBECONFIG")))
            .arg(format!("--cluster-name={}", env.get("LBC_CLUSTER_NAME")))
            .arg(format!("--aws-region={}", env.get("AWS_REGION")))
            .arg(format!("--aws-vpc-id={}", env.get("LBC_VPC_ID")))
            .arg(format!("--aws-api-endpoints={}", endpoints.join(",")))
            .arg(format!("--webhook-cert-dir={}", cert_dir.display()))
            .arg(format!("--webhook-bind-port={webhook_port}"))
            .arg(format!("--metrics-bind-addr=127.0.0.1:{metrics_port}"))
            .arg(format!("--health-probe-bind-addr=127.0.0.1:{health_port}"))
            .arg(format!("--leader-election-namespace={lease_ns}"))
            .arg(format!("--leader-election-id={lease}"))
            .args(["--enable-waf=false", "--enable-wafv2=false", "--enable-shield=false"])
            .arg(
                "--feature-gates=ALBGatewayAPI=false,NLBGatewayAPI=false,GatewayListenerSet=false,\
                 GlobalAcceleratorController=false",
            )
            .args(extra)
            .envs(env.vars())
            .env("AWS_ACCESS_KEY_ID", &access_key)
            .env("AWS_SECRET_ACCESS_KEY", "e2e-albc-secret")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .stdout(file.try_clone().expect("log fd"))
            .stderr(file)
            .stdin(Stdio::null())
            .spawn()
            .expect("start ALBC");
        Self { child, metrics_port, log, access_key }
    }

    /// `/metrics` text (empty while it has not bound its port).
    pub async fn metrics(&self) -> String {
        match reqwest::get(format!("http://127.0.0.1:{}/metrics", self.metrics_port)).await {
            Ok(r) => r.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        }
    }

    /// Sum of the samples of lines starting with `prefix` (e.g. a family and some labels).
    pub async fn metric_sum(&self, prefix: &str) -> f64 {
        sum_lines(&self.metrics().await, prefix)
    }

    /// SIGTERM and wait (ALBC releases its lease on the way out).
    pub fn terminate(mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let _ = self.child.wait();
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for AlbcProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sum of the values of the exposition lines starting with `prefix`.
pub fn sum_lines(text: &str, prefix: &str) -> f64 {
    text.lines().filter(|l| l.starts_with(prefix)).filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok()).sum()
}
