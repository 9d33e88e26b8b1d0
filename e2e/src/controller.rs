//! Runs the real `aws-lb-controller` binary against the e2e environment, one process per test,
//! watching only that test's namespace and electing its leader on a Lease of its own.

use crate::Env;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// A running controller, killed (SIGKILL) when dropped.
pub struct ControllerProc {
    child: Child,
    pub metrics_port: u16,
    pub health_port: u16,
    pub webhook_port: u16,
    pub log: PathBuf,
    /// The access key ID this process signs with (unless a test gives it another credential
    /// source): its calls can be told apart in the emulator's call log from other tests'.
    pub access_key: String,
}

/// A TCP port free on 127.0.0.1 right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// The controller binary built next to this test (`cargo build -p aws-lb-controller` first), or
/// `$LBC_CONTROLLER_BIN` when set (a release build for the benchmarks among the tests).
pub fn binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("LBC_CONTROLLER_BIN").filter(|b| !b.is_empty()) {
        let bin = PathBuf::from(bin);
        assert!(bin.is_file(), "LBC_CONTROLLER_BIN={} is not a file: point it at a built controller", bin.display());
        return bin;
    }
    let exe = std::env::current_exe().expect("test exe");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    let bin = dir.join("aws-lb-controller");
    assert!(bin.exists(), "{} not found: build it first with `cargo build -p aws-lb-controller`", bin.display());
    bin
}

/// The ports a controller listens on.
#[derive(Clone, Copy, Debug)]
pub struct Ports {
    pub metrics: u16,
    pub health: u16,
    pub webhook: u16,
}

/// The flags a test's controller runs with: this environment's cluster, region, VPC and AWS endpoints, namespace
/// `ns` only, lease `lease` in it, `ports` on 127.0.0.1, then `extra` (a flag of `extra` replaces the default it
/// names: clap refuses a flag twice).
pub fn flags(env: &Env, ns: &str, lease: &str, ports: Ports, extra: &[&str]) -> Vec<String> {
    // A test may pose as another cluster (`--cluster-name=` in `extra`).
    let cluster = (!extra.iter().any(|a| a.starts_with("--cluster-name=")))
        .then(|| format!("--cluster-name={}", env.get("LBC_CLUSTER_NAME")));
    // Backend security-group rules are cluster-wide (every rule with our description on the shared
    // node security group), so controllers of concurrent tests, each watching its own namespace,
    // would revoke each other's rules: off unless a test asks for it.
    let backend_rules = (!extra.iter().any(|a| a.starts_with("--enable-backend-security-group-rules")))
        .then(|| "--enable-backend-security-group-rules=false".to_string());
    // The shared backend security group is per cluster name, created and deleted by whichever
    // controller needs it: off unless a test asks for it (and then poses as its own cluster).
    let backend_sg = (!extra.iter().any(|a| a.starts_with("--enable-backend-security-group=")))
        .then(|| "--enable-backend-security-group=false".to_string());
    let defaults = [
        format!("--aws-region={}", env.get("AWS_REGION")),
        format!("--aws-vpc-id={}", env.get("LBC_VPC_ID")),
        format!(
            "--aws-api-endpoints=Elastic Load Balancing v2={e},EC2={e},STS={e},ACM={e},WAFV2={e},WAF Regional={e},Shield={e},Route 53={e}",
            e = env.aws_endpoint()
        ),
        format!("--watch-namespace={ns}"),
        format!("--metrics-bind-addr=127.0.0.1:{}", ports.metrics),
        format!("--health-probe-bind-addr=127.0.0.1:{}", ports.health),
        format!("--leader-election-id={lease}"),
        format!("--leader-election-namespace={ns}"),
        "--leader-election-lease-duration=6".into(),
        "--targetgroupbinding-requeue-duration=1s".into(),
        "--webhook-bind-host=127.0.0.1".into(),
        format!("--webhook-bind-port={}", ports.webhook),
        "--log-level=info,aws_lb_controller=debug".into(),
        // No Service endpoints to leave on 127.0.0.1: stop at once (the pod's drain is tested on the real node).
        "--webhook-shutdown-delay=0s".into(),
    ];
    let overridden = |d: &String| {
        let name = d.split('=').next().unwrap_or_default();
        extra.iter().any(|a| a.split('=').next() == Some(name))
    };
    cluster
        .into_iter()
        .chain(backend_rules)
        .chain(backend_sg)
        .chain(defaults.iter().filter(|d| !overridden(d)).cloned())
        .chain(extra.iter().map(|a| a.to_string()))
        .collect()
}

impl ControllerProc {
    /// Starts a controller for namespace `ns` with lease `lease` and extra flags.
    pub fn start(env: &Env, ns: &str, lease: &str, extra: &[&str]) -> Self {
        Self::start_with_env(env, ns, lease, extra, &[])
    }

    /// [`ControllerProc::start`] with extra environment variables.
    pub fn start_with_env(env: &Env, ns: &str, lease: &str, extra: &[&str], vars: &[(&str, String)]) -> Self {
        Self::launch(env, ns, lease, extra, vars, true)
    }

    /// [`ControllerProc::start_with_env`] without the environment's static keys, and without any
    /// shared credentials file: the SDK default chain finds whatever `vars` give it (a web identity
    /// token, a container-credentials endpoint). `access_key` is then empty: the test learns the
    /// keys from the emulator.
    pub fn start_with_default_chain(env: &Env, ns: &str, lease: &str, extra: &[&str], vars: &[(&str, String)]) -> Self {
        Self::launch(env, ns, lease, extra, vars, false)
    }

    fn launch(env: &Env, ns: &str, lease: &str, extra: &[&str], vars: &[(&str, String)], static_keys: bool) -> Self {
        let ports = Ports { metrics: free_port(), health: free_port(), webhook: free_port() };
        let (metrics_port, health_port, webhook_port) = (ports.metrics, ports.health, ports.webhook);
        let log = env.run_dir().join(format!("logs/controller-{ns}-{metrics_port}.log"));
        let access_key = if static_keys { format!("E2ECTL{metrics_port}") } else { String::new() };
        let file = std::fs::File::create(&log).expect("controller log");
        let mut cmd = Command::new(binary());
        cmd.args(flags(env, ns, lease, ports, extra)).envs(env.vars());
        if static_keys {
            cmd.env("AWS_ACCESS_KEY_ID", &access_key);
        } else {
            for k in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"] {
                cmd.env_remove(k);
            }
            let nowhere = env.run_dir().join("no-such-aws-file");
            cmd.env("AWS_SHARED_CREDENTIALS_FILE", &nowhere).env("AWS_CONFIG_FILE", &nowhere);
        }
        let child = cmd
            .envs(vars.iter().map(|(k, v)| (*k, v.as_str())))
            .stdout(file.try_clone().expect("log fd"))
            .stderr(file)
            .stdin(Stdio::null())
            .spawn()
            .expect("start aws-lb-controller");
        Self { child, metrics_port, health_port, webhook_port, log, access_key }
    }

    /// Fetches `/metrics`.
    /// Empty while the process has not bound its port yet (or is gone): callers poll.
    pub async fn metrics(&self) -> String {
        match reqwest::get(format!("http://127.0.0.1:{}/metrics", self.metrics_port)).await {
            Ok(r) => r.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        }
    }

    /// Value of a metric line that starts with `prefix` (first match), if any.
    pub async fn metric(&self, prefix: &str) -> Option<f64> {
        self.metrics()
            .await
            .lines()
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    }

    /// A point in the reconciles of `controller` (ALBC's label: `service`, `ingress`,
    /// `targetGroupBinding`): every reconcile that had started by then is inside the mark's bound.
    /// Waits for the controller to serve its per-controller series (they start at 0).
    pub async fn reconcile_mark(&self, controller: &'static str) -> ReconcileMark {
        let scrape = || async {
            let text = self.metrics().await;
            reconcile_counts(&text, controller)
        };
        // Running ones first, finished ones from a later scrape: a reconcile that ends in between is
        // counted once or twice, never missed (a reconcile is counted as finished before it stops
        // counting as running).
        let running = crate::eventually(&format!("{controller} reconcile series in /metrics"), 30, || async {
            scrape().await.map(|(_, running)| running)
        })
        .await;
        let finished = scrape().await.map_or(0.0, |(finished, _)| finished);
        ReconcileMark { controller, bound: finished + running }
    }

    /// Waits until `mark`'s controller has finished a reconcile that started after the mark: proof
    /// that the state as it was at the mark has been looked at, before asserting that nothing more
    /// was written. Panics after `secs`, naming `what`, the counts seen and the log.
    pub async fn reconciled_since(&self, mark: ReconcileMark, what: &str, secs: u64) {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(secs);
        loop {
            let text = self.metrics().await;
            let seen = reconcile_counts(&text, mark.controller);
            if mark.passed_by(seen) {
                return;
            }
            if tokio::time::Instant::now() > deadline {
                panic!(
                    "timed out after {secs}s waiting for a {} reconcile that started after {what}: finished/running \
                     {seen:?}, needed more than {} finished; {}",
                    mark.controller,
                    mark.bound,
                    self.log_tail(LOG_TAIL_LINES),
                );
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// A quiet window that can fail: marks `controller`'s reconciles, runs `poke` (a change the
    /// controller reacts to that asks nothing of AWS: [`crate::kube_util::poke`] on the object, or
    /// `async {}` where a change just made or a short `--sync-period` starts one), then waits for a
    /// reconcile that started after the mark to finish. After it, "no further writes" is an
    /// assertion about a reconcile that ran, not about a sleep.
    ///
    /// `poke` runs again every 10 s while that reconcile has not come (60 s in all): the mark may
    /// count a reconcile that ends while it is taken twice (never less than once, see
    /// [`ControllerProc::reconcile_mark`]), and one poke's reconcile then does not pass it.
    pub async fn settled<F: std::future::Future<Output = ()>>(
        &self,
        controller: &'static str,
        what: &str,
        poke: impl Fn() -> F,
    ) {
        let mark = self.reconcile_mark(controller).await;
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            poke().await;
            let round = (tokio::time::Instant::now() + std::time::Duration::from_secs(10)).min(deadline);
            while tokio::time::Instant::now() < round {
                if mark.passed_by(reconcile_counts(&self.metrics().await, mark.controller)) {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            if tokio::time::Instant::now() >= deadline {
                // Panics with the counts and the log unless the reconcile finished just now.
                return self.reconciled_since(mark, what, 0).await;
            }
        }
    }

    /// Whether `/readyz` answers 200.
    pub async fn ready(&self) -> bool {
        reqwest::get(format!("http://127.0.0.1:{}/readyz", self.health_port))
            .await
            .is_ok_and(|r| r.status().is_success())
    }

    /// The exit status once the process has ended by itself within `secs` (a refused start), else
    /// `None` (still running).
    pub async fn exited_within(&mut self, secs: u64) -> Option<std::process::ExitStatus> {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        while std::time::Instant::now() < until {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        None
    }

    /// Sends SIGTERM and waits for exit (graceful shutdown).
    pub fn terminate(mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let _ = self.child.wait();
    }

    /// SIGKILL now (a crash).
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The log's last `lines` lines with its path, for a failure message: the log goes with the
    /// environment when e2e/test-all tears it down.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = self.log_text();
        let all: Vec<&str> = text.lines().collect();
        let tail = &all[all.len().saturating_sub(lines)..];
        format!("the last {} lines of {}:\n{}", tail.len(), self.log.display(), tail.join("\n"))
    }
}

/// Finished and running reconciles of `controller` in one `/metrics` text
/// (`controller_runtime_reconcile_total` over every result, `controller_runtime_active_workers`);
/// `None` while the controller does not serve them.
pub fn reconcile_counts(metrics: &str, controller: &str) -> Option<(f64, f64)> {
    let total = format!("controller_runtime_reconcile_total{{controller=\"{controller}\",");
    let active = format!("controller_runtime_active_workers{{controller=\"{controller}\"}}");
    let running = metrics.lines().find(|l| l.starts_with(&active))?.rsplit(' ').next()?.parse().ok()?;
    Some((crate::albc::sum_lines(metrics, &total), running))
}

/// Lines of the controller's log a failed wait prints.
const LOG_TAIL_LINES: usize = 80;

/// See [`ControllerProc::reconcile_mark`].
#[derive(Clone, Copy, Debug)]
pub struct ReconcileMark {
    controller: &'static str,
    /// Finished plus running reconciles at the mark: at least the number that had started.
    bound: f64,
}

impl ReconcileMark {
    /// Whether `seen` (finished, running) counts more finished reconciles than had started at the
    /// mark, so that at least one of them started after it.
    pub fn passed_by(&self, seen: Option<(f64, f64)>) -> bool {
        seen.is_some_and(|(finished, _)| finished > self.bound)
    }
}

impl Drop for ControllerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
controller_runtime_reconcile_total{controller=\"service\",result=\"success\"} 3
controller_runtime_reconcile_total{controller=\"service\",result=\"error\"} 1
controller_runtime_reconcile_total{controller=\"service\",result=\"requeue_after\"} 2
controller_runtime_reconcile_total{controller=\"ingress\",result=\"success\"} 9
controller_runtime_active_workers{controller=\"service\"} 1
controller_runtime_active_workers{controller=\"ingress\"} 0
";

    #[test]
    fn counts_are_per_controller_over_every_result() {
        assert_eq!(reconcile_counts(TEXT, "service"), Some((6.0, 1.0)));
        assert_eq!(reconcile_counts(TEXT, "ingress"), Some((9.0, 0.0)));
        assert_eq!(reconcile_counts(TEXT, "targetGroupBinding"), None, "not served: no count");
        assert_eq!(reconcile_counts("", "service"), None, "not up yet");
    }

    /// The reconcile running at the mark finishing is not enough: it may have read the state before
    /// the mark. Only one more finished reconcile than had started proves a look after it.
    #[test]
    fn a_mark_is_passed_only_by_a_reconcile_that_started_after_it() {
        let mark = ReconcileMark { controller: "service", bound: 6.0 + 1.0 };
        assert!(!mark.passed_by(Some((6.0, 1.0))), "nothing finished");
        assert!(!mark.passed_by(Some((7.0, 0.0))), "only the one running at the mark finished");
        assert!(!mark.passed_by(Some((7.0, 1.0))), "a new one is still running");
        assert!(mark.passed_by(Some((8.0, 0.0))), "one started after the mark finished");
        assert!(!mark.passed_by(None), "metrics gone: no proof");
    }
}
