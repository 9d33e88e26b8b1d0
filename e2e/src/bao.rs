//! OpenBao for tests: `e2e/scripts/bao.sh` (one shared dev server) and sealed servers of a test's own.

use crate::Env;
use std::process::Command;
use std::time::Duration;
use tokio::time::Instant;

/// Runs `e2e/scripts/bao.sh` (reuses a running server); returns the variables of `e2e/.run/bao.env`.
pub fn up(env: &Env) -> std::collections::HashMap<String, String> {
    let out = Command::new(env.repo.join("e2e/scripts/bao.sh")).envs(env.vars()).output().expect("running bao.sh");
    assert!(out.status.success(), "e2e/scripts/bao.sh failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(env.run_dir().join("bao.env")).expect("e2e/.run/bao.env");
    text.lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('\'').to_string()))
        .collect()
}

/// Writes `body` to `path` of the OpenBao at `addr` with the root token; panics with OpenBao's answer
/// unless it succeeded.
pub async fn write(http: &reqwest::Client, addr: &str, root: &str, path: &str, body: serde_json::Value) {
    let r = http
        .post(format!("{addr}/v1/{path}"))
        .header("X-Vault-Token", root)
        .json(&body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("OpenBao at {addr} unreachable writing {path}: {e}"));
    let status = r.status();
    assert!(status.is_success(), "OpenBao write {path}: {status} {}", r.text().await.unwrap_or_default());
}

/// A second dev server on a free port, sealed; killed (by its PID, via the child handle) on drop.
pub struct SealedBao {
    child: std::process::Child,
    pub addr: String,
}

impl SealedBao {
    pub async fn start(env: &Env) -> Self {
        let vars = std::fs::read_to_string(env.run_dir().join("bao.env")).unwrap();
        let bin = vars
            .lines()
            .find_map(|l| l.strip_prefix("export LBC_BAO_BIN="))
            .map(|v| v.trim_matches('\'').to_string())
            .expect("LBC_BAO_BIN in bao.env");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr = format!("http://127.0.0.1:{port}");
        let token = format!("{:032x}", fastrand::u128(..));
        let log = std::fs::File::create(env.run_dir().join(format!("logs/bao-sealed-{port}.log"))).unwrap();
        let child = Command::new(bin)
            .args(["server", "-dev", &format!("-dev-listen-address=127.0.0.1:{port}"), "-dev-no-store-token"])
            .env("BAO_DEV_ROOT_TOKEN_ID", &token)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start a second bao");
        let me = Self { child, addr };
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if http.get(format!("{}/v1/sys/health", me.addr)).send().await.is_ok_and(|r| r.status().is_success()) {
                break;
            }
            assert!(Instant::now() < deadline, "second bao did not start");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let r = http.put(format!("{}/v1/sys/seal", me.addr)).header("X-Vault-Token", &token).send().await.unwrap();
        assert!(r.status().is_success(), "seal: {}", r.status());
        me
    }
}

impl Drop for SealedBao {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
