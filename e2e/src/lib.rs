//! Harness for end-to-end tests against the local environment started by `e2e/up`: the real
//! kube-apiserver (+ kube-controller-manager, kwok) and the AWS emulator, found through
//! `e2e/.run/env`.
//!
//! The tests are `#[ignore]`d (run with `--include-ignored`, as `e2e/test-all` does) and call
//! [`Env::require`]: when the environment is absent they print why and return early, unless
//! `LBC_E2E_REQUIRED=1` (set by the README's test command and CI), in which case they fail, so a
//! CI run can never pass by skipping.

pub mod albc;
pub mod aws;
pub mod bao;
pub mod controller;
pub mod datapath;
#[cfg(test)]
mod doc_paths;
pub mod emulator;
pub mod fixture;
pub mod helm;
pub mod instances;
pub mod jaeger;
pub mod kube_util;
pub mod prometheus;
pub mod proxy;
pub mod tenant;
pub mod webhook;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The environment variables `e2e/up` wrote.
#[derive(Clone, Debug)]
pub struct Env {
    vars: HashMap<String, String>,
    pub repo: PathBuf,
}

impl Env {
    /// The repository root (this crate lives in `<repo>/e2e`). Read at run time first: with a
    /// target directory shared between checkouts, the compile-time path can name another clone.
    pub fn repo_root() -> PathBuf {
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string());
        Path::new(&dir).parent().expect("e2e has a parent").to_path_buf()
    }

    /// Loads `e2e/.run/env` (or `$LBC_E2E_ENV`). `None` when the environment is not up.
    pub fn load() -> Option<Self> {
        let repo = Self::repo_root();
        let path = std::env::var("LBC_E2E_ENV").map(PathBuf::from).unwrap_or_else(|_| repo.join("e2e/.run/env"));
        let text = std::fs::read_to_string(path).ok()?;
        let mut vars = HashMap::new();
        for line in text.lines() {
            let line = line.trim().strip_prefix("export ").unwrap_or(line.trim());
            if let Some((k, v)) = line.split_once('=') {
                let v = v.trim().trim_matches('"').trim_matches('\'');
                // Lines that expand shell variables (NO_PROXY=...${NO_PROXY}) are for shells only.
                if !v.contains('$') && !k.trim().starts_with('#') {
                    vars.insert(k.trim().to_string(), v.to_string());
                }
            }
        }
        Some(Self { vars, repo })
    }

    /// The environment, or `None` after printing why the test is skipped. Panics instead when
    /// `LBC_E2E_REQUIRED=1`.
    pub fn require(test: &str) -> Option<Self> {
        match Self::load() {
            Some(e) => Some(e),
            None if std::env::var("LBC_E2E_REQUIRED").as_deref() == Ok("1") => {
                panic!("{test}: LBC_E2E_REQUIRED=1 but e2e/.run/env is missing: run e2e/up first")
            }
            None => {
                eprintln!("SKIPPED {test}: the e2e environment is not running (start it with e2e/up)");
                None
            }
        }
    }

    pub fn get(&self, key: &str) -> &str {
        self.vars.get(key).map(String::as_str).unwrap_or_else(|| panic!("{key} missing from e2e/.run/env"))
    }

    /// The environment's run directory (`LBC_E2E_ROOT`: `e2e/.run`, or a second environment's own):
    /// where tests put logs, certificates and other files of theirs.
    pub fn run_dir(&self) -> PathBuf {
        PathBuf::from(self.get("LBC_E2E_ROOT"))
    }

    pub fn aws_endpoint(&self) -> &str {
        self.get("LBC_AWS_ENDPOINT")
    }

    /// All variables, to pass to child processes.
    pub fn vars(&self) -> &HashMap<String, String> {
        &self.vars
    }

    /// Runs the pod helper `e2e/pods ARGS...`, returning its stdout; panics with its stderr on failure.
    pub fn pods(&self, args: &[&str]) -> String {
        self.try_pods(args).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Like [`Env::pods`], returning the failure instead of panicking.
    pub fn try_pods(&self, args: &[&str]) -> Result<String, String> {
        let out =
            Command::new(self.repo.join("e2e/pods")).args(args).envs(&self.vars).output().expect("running e2e/pods");
        if !out.status.success() {
            return Err(format!("e2e/pods {args:?} failed: {}\n{}", out.status, String::from_utf8_lossy(&out.stderr)));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Creates the ELBv2 trust store `name` in the emulator as a user would in AWS (a CA bundle in
    /// S3, then CreateTrustStore; `e2e/scripts/trust_store.py`) and returns its ARN.
    pub fn trust_store(&self, name: &str) -> String {
        self.python_script("trust_store.py", &[name])
    }

    /// Runs `e2e/scripts/NAME ARGS...` with the venv's python and the environment's variables;
    /// returns its stdout, panics with its stderr on failure.
    pub fn python_script(&self, name: &str, args: &[&str]) -> String {
        let python = std::path::Path::new(self.get("LBC_VENV")).join("bin/python");
        let out = Command::new(python)
            .arg(self.repo.join("e2e/scripts").join(name))
            .args(args)
            .envs(&self.vars)
            .output()
            .unwrap_or_else(|e| panic!("running e2e/scripts/{name}: {e}"));
        assert!(out.status.success(), "{name} {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Pod IPs of a set, sorted.
    pub fn pod_ips(&self, ns: &str, set: &str) -> Vec<String> {
        let mut v: Vec<String> =
            self.pods(&["ips", ns, set]).lines().map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect();
        v.sort();
        v
    }
}

/// A unique lowercase name for per-test namespaces and AWS resources.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{:06x}", fastrand::u32(..) & 0xff_ffff)
}

/// Polls `f` every 200 ms until it returns `Some`, or panics after `secs` with `what`.
pub async fn eventually<T, F, Fut>(what: &str, secs: u64, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out after {secs}s waiting for: {what}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}
