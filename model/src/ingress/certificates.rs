//! ACM certificate discovery by host (ALBC `pkg/ingress/cert_discovery.go`, v2.5 and later).
//!
//! When a member listens on HTTPS and names no certificate, the controller lists the account's
//! ISSUED ACM certificates of the region and hands them here with the member's hosts
//! ([`super::certificate_discovery_hosts`]). What ALBC does, and so do we:
//! - A certificate covers a host when one of its names (the domain name or a subject alternative
//!   name) equals the host, or is a wildcard `*.parent` and the host is one label followed by
//!   `.parent` (`*.example.com` covers `a.example.com`, not `example.com` nor `a.b.example.com`).
//!   A wildcard host (`*.example.com` in a rule) is covered only by the same wildcard name.
//! - Every certificate covering a host is used (ALBC failed on several until v2.5).
//! - A host that no certificate covers fails the member (ALBC: "no certificate found for host").
//! - The result is the ARNs in sorted order, duplicates dropped (ALBC returns a sorted set); the
//!   first becomes the listener's default certificate when this member is the first with
//!   certificates on the port ([`super::merge`]).
//!
//! Where we differ: names compare case-insensitively and ignore one trailing dot (DNS names are
//! case-insensitive; ALBC compares bytes, which only matters for an imported certificate with
//! upper-case names, since Kubernetes hosts are lower case); every host without a certificate
//! is reported, not only the first.

use std::collections::BTreeSet;

/// One ISSUED ACM certificate: its ARN and every name it covers (domain name and SANs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AcmCertificate {
    pub arn: String,
    pub names: Vec<String>,
}

/// Hosts that no certificate covers.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "no ISSUED ACM certificate covers host(s) {} (looked at {examined} ISSUED certificate(s) of the region; a \
     certificate covers a host when its domain name or a subject alternative name equals it, or is *.<parent> \
     for a host one label below <parent>); request or import a certificate for each in ACM (it is found within a \
     minute once ISSUED), or name certificates with annotation {} or IngressClassParams spec.certificateArn",
    hosts.join(", "),
    super::keys::full_key(super::keys::CERTIFICATE_ARN)
)]
pub struct NoCertificate {
    pub hosts: Vec<String>,
    pub examined: usize,
}

fn normalize(name: &str) -> String {
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}

/// Whether a certificate name (domain name or SAN) covers `host`.
pub fn name_covers_host(name: &str, host: &str) -> bool {
    let (name, host) = (normalize(name), normalize(host));
    if name.is_empty() || host.is_empty() {
        return false;
    }
    if name == host {
        return true;
    }
    match name.strip_prefix("*.") {
        // One label, not empty, then exactly the wildcard's parent.
        Some(parent) => match host.split_once('.') {
            Some((label, rest)) => !label.is_empty() && rest == parent,
            None => false,
        },
        None => false,
    }
}

/// The certificates covering `hosts` (sorted ARNs, unique), or every host none covers.
/// Empty hosts are ignored; no host at all gives no certificate (the HTTPS listener then needs
/// another member's, see the build's "has no certificate" error).
pub fn discover(hosts: &[String], certificates: &[AcmCertificate]) -> Result<Vec<String>, NoCertificate> {
    let mut found = BTreeSet::new();
    let mut missing = Vec::new();
    for host in hosts.iter().filter(|h| !h.is_empty()) {
        let covering: Vec<&str> = certificates
            .iter()
            .filter(|c| c.names.iter().any(|n| name_covers_host(n, host)))
            .map(|c| c.arn.as_str())
            .collect();
        if covering.is_empty() {
            missing.push(host.clone());
        }
        found.extend(covering.into_iter().map(str::to_string));
    }
    if missing.is_empty() {
        Ok(found.into_iter().collect())
    } else {
        missing.sort();
        missing.dedup();
        Err(NoCertificate { hosts: missing, examined: certificates.len() })
    }
}

/// Whether discovery may use a certificate issued by `issuer` under
/// `--allowed-certificate-authority-arns` (ALBC's filter): with no list every certificate; with
/// one, only private certificates of a CA on it (imported and Amazon-issued certificates have no
/// issuing CA, so none of them).
pub fn issuer_allowed(allowed: &[String], issuer: Option<&str>) -> bool {
    allowed.is_empty() || issuer.is_some_and(|i| allowed.iter().any(|a| a == i))
}

/// `--allowed-certificate-authority-arns` (comma-separated, as ALBC's string slice): the ARNs, or
/// the first entry that is not an ACM Private CA ARN, named with the fix.
pub fn parse_allowed_authorities(raw: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let parts: Vec<&str> = entry.splitn(6, ':').collect();
        let ok = parts.len() == 6
            && parts[0] == "arn"
            && parts[2] == "acm-pca"
            && parts[5].starts_with("certificate-authority/")
            && parts[5].len() > "certificate-authority/".len();
        if !ok {
            return Err(format!(
                "--allowed-certificate-authority-arns: {entry:?} is not an ACM Private CA ARN; expected \
                 arn:<partition>:acm-pca:<region>:<account>:certificate-authority/<id>, comma-separated"
            ));
        }
        if !out.iter().any(|o| o == entry) {
            out.push(entry.to_string());
        }
    }
    Ok(out)
}

#[cfg(test)]
#[path = "certificates_tests.rs"]
mod tests;
