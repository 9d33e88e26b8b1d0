//! What this binary is: its version and the revision it was built from (controller/build.rs), for
//! `--version`, the start-up log line and the `aws_lb_controller_build_info` metric.

/// The crate's version (the workspace's, `Cargo.toml`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The commit (12 digits when read from git), or `unknown`.
pub const REVISION: &str = env!("LBC_REVISION");
/// `clean`, `dirty` (the sources differed from the commit) or `unknown`.
pub const TREE_STATE: &str = env!("LBC_TREE_STATE");
/// Where [`REVISION`] came from: `git`, `env` (`LBC_GIT_REVISION`) or `none` (what the tests compare with).
#[cfg(test)]
pub const REVISION_SOURCE: &str = env!("LBC_REVISION_SOURCE");
/// The compiler's version, e.g. `1.95.0`.
pub const RUSTC: &str = env!("LBC_RUSTC_VERSION");

/// What `--version` prints after the program's name: `0.1.0 (rev 0790a7e1d2c4, clean)`.
pub const LONG_VERSION: &str =
    concat!(env!("CARGO_PKG_VERSION"), " (rev ", env!("LBC_REVISION"), ", ", env!("LBC_TREE_STATE"), ")");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_line_names_version_revision_and_tree_state() {
        let err = crate::args::command().try_get_matches_from(["aws-lb-controller", "--version"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::DisplayVersion);
        assert_eq!(err.to_string(), format!("aws-lb-controller {VERSION} (rev {REVISION}, {TREE_STATE})\n"));
        assert!(["clean", "dirty", "unknown"].contains(&TREE_STATE), "tree state {TREE_STATE:?}");
        assert!(RUSTC.split('.').count() == 3 && RUSTC.split('.').all(|n| n.parse::<u32>().is_ok()), "rustc {RUSTC:?}");
    }

    /// A revision read from git is the checkout's HEAD (the build script re-runs when HEAD moves).
    #[test]
    fn revision_from_git_is_head() {
        if REVISION_SOURCE != "git" {
            assert!(REVISION_SOURCE == "env" || (REVISION_SOURCE == "none" && REVISION == "unknown"));
            return;
        }
        // At run time: a test binary built in another checkout sharing the target directory names that one.
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string());
        let out = std::process::Command::new("git")
            .args(["-C", &dir, "rev-parse", "--short=12", "HEAD"])
            .output()
            .expect("git runs (it ran at build time)");
        assert_eq!(REVISION, String::from_utf8_lossy(&out.stdout).trim(), "built from another commit: rebuild");
        assert!(TREE_STATE == "clean" || TREE_STATE == "dirty", "{TREE_STATE}");
    }
}
