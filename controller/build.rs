//! Build script: the revision the binary is built from, for `--version` and the
//! `aws_lb_controller_build_info` metric (controller/src/build_info.rs).
//!
//! - `LBC_GIT_REVISION` set: used as given (`<commit>`, or `<commit>-dirty` for a modified tree). Builds without
//!   `.git` pass it: the Dockerfile (`--build-arg REVISION`) and `image/build`.
//! - else git: `HEAD` abbreviated to 12 digits, `dirty` when the sources the binary is built from
//!   ([`SOURCES`]) differ from `HEAD` (modified, staged or untracked files).
//! - else `unknown` (no git, or not a checkout).

use std::path::Path;
use std::process::Command;

/// What the binary is compiled from, relative to the workspace root: a change here (and only here) makes it
/// `dirty`. Every crate the controller depends on, the manifests, and the files those crates include.
const SOURCES: &[&str] = &["Cargo.toml", "Cargo.lock", "controller", "model", "aws", "webhook", "docs/iam-policy.json"];

fn main() {
    println!("cargo:rerun-if-env-changed=LBC_GIT_REVISION");
    // Read when it runs, not compiled in: checkouts sharing a target directory share this script's binary.
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest_dir).parent().expect("the controller crate sits in the workspace");
    let (revision, tree_state, source) = match std::env::var("LBC_GIT_REVISION") {
        Ok(given) if !given.is_empty() => {
            let (revision, state) = from_env(&given).unwrap_or_else(|e| panic!("{e}"));
            (revision, state, "env")
        }
        _ => match from_git(root) {
            Some((revision, state)) => (revision, state, "git"),
            None => ("unknown".to_string(), "unknown", "none"),
        },
    };
    println!("cargo:rustc-env=LBC_REVISION={revision}");
    println!("cargo:rustc-env=LBC_TREE_STATE={tree_state}");
    println!("cargo:rustc-env=LBC_REVISION_SOURCE={source}");
    println!("cargo:rustc-env=LBC_RUSTC_VERSION={}", rustc_version());
}

/// `<commit>` or `<commit>-dirty`.
fn from_env(given: &str) -> Result<(String, &'static str), String> {
    let (revision, state) = match given.strip_suffix("-dirty") {
        Some(r) => (r, "dirty"),
        None => (given, "clean"),
    };
    let valid = !revision.is_empty()
        && revision.len() <= 64
        && revision.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !valid {
        return Err(format!(
            "LBC_GIT_REVISION={given:?} is not a revision: expected a commit (1-64 characters of [0-9A-Za-z._-]), \
             optionally followed by -dirty, e.g. LBC_GIT_REVISION=$(git rev-parse HEAD); unset it to read .git"
        ));
    }
    Ok((revision.to_string(), state))
}

fn git(root: &Path, args: &[&str]) -> Option<String> {
    // No optional locks: `status` must not take the index lock that concurrent git commands need.
    let out = Command::new("git").arg("--no-optional-locks").arg("-C").arg(root).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn from_git(root: &Path) -> Option<(String, &'static str)> {
    let revision = git(root, &["rev-parse", "--short=12", "HEAD"])?;
    // Re-run when HEAD moves (a commit, a checkout) and when a source changes. Only existing paths: a missing
    // one would re-run this script, and recompile the crate, on every build. Relative to the package (`../`):
    // checkouts sharing a target directory share this script's run, and each must watch its own files.
    let mut watched = vec![git(root, &["rev-parse", "--git-path", "HEAD"])?];
    if let Some(head_ref) = git(root, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(root, &["rev-parse", "--git-path", &head_ref])?);
    }
    watched.push(git(root, &["rev-parse", "--git-path", "packed-refs"])?);
    watched.extend(SOURCES.iter().map(|s| s.to_string()));
    for path in watched {
        if root.join(&path).exists() {
            // Absolute stays absolute (a linked worktree's HEAD lives in the main checkout's .git).
            println!("cargo:rerun-if-changed={}", Path::new("..").join(path).display());
        }
    }
    let mut status = vec!["status", "--porcelain", "--untracked-files=normal", "--"];
    status.extend(SOURCES);
    let changes = git(root, &status)?;
    Some((revision, if changes.is_empty() { "clean" } else { "dirty" }))
}

/// `1.95.0` from `rustc 1.95.0 (<hash> <date>)`.
fn rustc_version() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|v| v.split_whitespace().nth(1).map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}
