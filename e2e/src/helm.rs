//! Helm against the local environment: the pinned helm of `charts/scripts/helm.sh`, the e2e kubeconfig, the
//! project's chart; and the controller's image imported into the real node's containerd (`LBC_E2E_NODE=1`).

use crate::Env;
use std::path::PathBuf;
use std::process::Command;

/// The pinned helm binary, built once by `charts/scripts/helm.sh` (cached).
pub fn binary(env: &Env) -> PathBuf {
    let out = Command::new(env.repo.join("charts/scripts/helm.sh")).output().expect("running charts/scripts/helm.sh");
    assert!(out.status.success(), "charts/scripts/helm.sh failed:\n{}", String::from_utf8_lossy(&out.stderr));
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// `helm` with the environment's kubeconfig, in `namespace`.
pub struct Helm {
    bin: PathBuf,
    kubeconfig: String,
    pub namespace: String,
    pub chart: PathBuf,
}

impl Helm {
    pub fn new(env: &Env, namespace: &str) -> Self {
        Self {
            bin: binary(env),
            kubeconfig: env.get("KUBECONFIG").to_string(),
            namespace: namespace.to_string(),
            chart: env.repo.join("charts/aws-lb-controller"),
        }
    }

    /// Runs `helm ARGS -n NAMESPACE`; stdout, or helm's stderr as the error.
    pub fn try_run(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new(&self.bin)
            .args(args)
            .args(["-n", &self.namespace, "--kubeconfig", &self.kubeconfig])
            .env("HELM_CACHE_HOME", std::env::temp_dir().join("lbc-e2e-helm/cache"))
            .env("HELM_CONFIG_HOME", std::env::temp_dir().join("lbc-e2e-helm/config"))
            .env("HELM_DATA_HOME", std::env::temp_dir().join("lbc-e2e-helm/data"))
            .output()
            .expect("running helm");
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!(
                "helm {args:?} -n {} failed ({}):\n{}{}",
                self.namespace,
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    pub fn run(&self, args: &[&str]) -> String {
        self.try_run(args).unwrap_or_else(|e| panic!("{e}"))
    }
}

/// Repository of the controller's image in the node's containerd: a made-up registry name, fully qualified so
/// the kubelet's name normalisation leaves it as it is.
pub const IMAGE_REPOSITORY: &str = "lbc-e2e.local/aws-lb-controller";

/// Packages `binary` as the controller's image `IMAGE_REPOSITORY:<tag>` with `image/build` (offline, cached) and
/// imports it into the real node's containerd (the kubelet's `k8s.io` namespace), so pods with
/// `imagePullPolicy: Never` find it. Returns the image reference.
pub fn import_controller_image(env: &Env, binary: &std::path::Path, tag: &str) -> String {
    let reference = format!("{IMAGE_REPOSITORY}:{tag}");
    let out = Command::new(env.repo.join("image/build"))
        .args(["--binary", &binary.to_string_lossy(), "--tag", &reference])
        .output()
        .expect("running image/build");
    assert!(out.status.success(), "image/build failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let archive = stdout.lines().last().map(str::trim).filter(|l| !l.is_empty()).expect("image/build printed no path");
    let sock = env.get("LBC_NODE_CONTAINERD_SOCK");
    let out = Command::new("ctr")
        .args(["--address", sock, "--namespace", "k8s.io", "images", "import", archive])
        .output()
        .expect("running ctr");
    assert!(
        out.status.success(),
        "ctr images import {archive} into {sock} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    reference
}
