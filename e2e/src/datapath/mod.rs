//! The data path of the zero-downtime tests: a VPC of network namespaces ([`netns`]) whose pods
//! are real HTTP servers (`lbc-podserver`), the node agent that makes Kubernetes pods of them, the
//! NLB-like data plane in front of them ([`plane`], `lbc-dataplane`) and the load generator
//! ([`loadgen`], `lbc-loadgen`).

pub mod agent;
pub mod loadgen;
pub mod netns;
pub mod plane;

/// Whether this process may build network namespaces (root). When not: panics with the reason if
/// `LBC_E2E_REQUIRED=1`, else prints why `test` is skipped and returns false.
pub fn require_root(test: &str) -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    // "Uid: real effective saved fs"
    let euid =
        status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|u| u.split_whitespace().nth(1)).unwrap_or("?");
    if euid == "0" {
        return true;
    }
    let why = format!(
        "{test} needs root (euid 0, got {euid}) to create network namespaces and veth pairs for the \
         test VPC: run the e2e tests as root"
    );
    if std::env::var("LBC_E2E_REQUIRED").as_deref() == Ok("1") {
        panic!("{why} (LBC_E2E_REQUIRED=1)");
    }
    eprintln!("SKIPPED {why}");
    false
}
