//! Listener certificates from Kubernetes Secrets (`tls.certificateRefs`), imported into ACM: which
//! Secrets an HTTPS listener may use (the listener's `ResolvedRefs` reasons of the spec), what each
//! holds (checked as ACM's ImportCertificate checks it, so a bad Secret is named on the listener
//! rather than as an AWS error), and what to import, import again or delete.
//!
//! ALBC reads no Secrets (its Gateways take ACM ARNs only); this is ours. One ACM certificate per
//! (Gateway, Secret), owned by the Gateway's stack through its tags, so a Gateway's deletion deletes
//! its certificates and nothing else. A Secret's content is known by a digest tag: a rotated Secret
//! is imported again under the same ARN (listeners keep it), then the tag follows.

use super::api::Listener;
use super::conditions::REASON_REF_NOT_PERMITTED;
use super::refs::{Grant, ObjRef, permitted};
use crate::lb::Tags;
use crate::lb::tags::{resource_tag_key, stack_tag_key};
use crate::names::CLUSTER_TAG;
use base64::Engine;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// Listener reason: a certificate reference that cannot be used.
pub const REASON_INVALID_CERTIFICATE_REF: &str = "InvalidCertificateRef";
/// The Secret type the controller reads (and watches: a field selector on it).
pub const TLS_SECRET_TYPE: &str = "kubernetes.io/tls";
/// The tag holding the digest of the Secret content a certificate was imported from.
pub const DIGEST_TAG_SUFFIX: &str = "secret-sha256";
/// The prefix of the `resource` tag value of an imported certificate.
pub const RESOURCE_PREFIX: &str = "Secret/";

// ImportCertificate's limits (ACM API reference, ImportCertificate request parameters).
const CERTIFICATE_MAX_BYTES: usize = 32_768;
const PRIVATE_KEY_MAX_BYTES: usize = 5_120;
const CHAIN_MAX_BYTES: usize = 2_097_152;

/// What the controller read of a Secret.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct SecretData {
    pub type_: String,
    pub crt: Option<Vec<u8>>,
    pub key: Option<Vec<u8>>,
}

impl std::fmt::Debug for SecretData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretData")
            .field("type_", &self.type_)
            .field("crt_len", &self.crt.as_ref().map(Vec::len))
            .finish()
    }
}

/// A Secret ready for ImportCertificate. Its Debug form leaves the key out.
#[derive(Clone, PartialEq, Eq)]
pub struct ImportableCertificate {
    pub secret_namespace: String,
    pub secret_name: String,
    /// The leaf certificate, PEM.
    pub certificate: String,
    /// The other certificates of `tls.crt`, PEM, in their order.
    pub chain: Option<String>,
    pub private_key: String,
    /// SHA-256 (hex) of `tls.crt` and `tls.key` as the Secret holds them.
    pub digest: String,
}

impl std::fmt::Debug for ImportableCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImportableCertificate")
            .field("secret", &format!("{}/{}", self.secret_namespace, self.secret_name))
            .field("digest", &self.digest)
            .finish()
    }
}

impl ImportableCertificate {
    /// `namespace/name` of the Secret.
    pub fn secret(&self) -> String {
        format!("{}/{}", self.secret_namespace, self.secret_name)
    }

    /// The `resource` tag value: `Secret/<namespace>/<name>`.
    pub fn resource_id(&self) -> String {
        format!("{RESOURCE_PREFIX}{}", self.secret())
    }
}

fn pem_text(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

fn blocks(what: &str, bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut out = Vec::new();
    for p in x509_parser::pem::Pem::iter_from_buffer(bytes) {
        let p = p.map_err(|e| format!("{what} is not PEM ({e})"))?;
        out.push((p.label, p.contents));
    }
    if out.is_empty() {
        return Err(format!("{what} holds no PEM block"));
    }
    Ok(out)
}

/// The Secret `namespace/name` as ImportCertificate takes it, or why it cannot be imported.
pub fn parse(namespace: &str, name: &str, s: &SecretData) -> Result<ImportableCertificate, String> {
    let id = format!("Secret {namespace}/{name}");
    if s.type_ != TLS_SECRET_TYPE {
        return Err(format!(
            "{id} has type {:?}; a listener certificate is a Secret of type {TLS_SECRET_TYPE}",
            s.type_
        ));
    }
    let (Some(crt), Some(key)) = (s.crt.as_deref(), s.key.as_deref()) else {
        return Err(format!("{id} lacks tls.crt or tls.key"));
    };
    let certs = blocks(&format!("{id} tls.crt"), crt)?;
    let mut pems = Vec::new();
    for (i, (label, der)) in certs.iter().enumerate() {
        if label != "CERTIFICATE" {
            return Err(format!("{id} tls.crt block {} is {label:?}; expected CERTIFICATE", i + 1));
        }
        x509_parser::parse_x509_certificate(der)
            .map_err(|e| format!("{id} tls.crt certificate {} is not an X.509 certificate ({e})", i + 1))?;
        pems.push(pem_text("CERTIFICATE", der));
    }
    let keys = blocks(&format!("{id} tls.key"), key)?;
    let [(label, der)] = keys.as_slice() else {
        return Err(format!("{id} tls.key holds {} PEM blocks; expected one private key", keys.len()));
    };
    match label.as_str() {
        "PRIVATE KEY" | "RSA PRIVATE KEY" | "EC PRIVATE KEY" => {}
        "ENCRYPTED PRIVATE KEY" => {
            return Err(format!("{id} tls.key is encrypted; ACM imports only unencrypted private keys"));
        }
        other => return Err(format!("{id} tls.key is {other:?}; expected a PRIVATE KEY block")),
    }
    let private_key = pem_text(label, der);
    let certificate = pems.remove(0);
    let chain = (!pems.is_empty()).then(|| pems.concat());
    for (what, len, max) in [
        ("certificate", certificate.len(), CERTIFICATE_MAX_BYTES),
        ("private key", private_key.len(), PRIVATE_KEY_MAX_BYTES),
        ("chain", chain.as_ref().map_or(0, String::len), CHAIN_MAX_BYTES),
    ] {
        if len > max {
            return Err(format!("{id}: its {what} is {len} bytes as PEM; ACM imports at most {max}"));
        }
    }
    let mut h = Sha256::new();
    h.update(crt);
    h.update([0u8]);
    h.update(key);
    Ok(ImportableCertificate {
        secret_namespace: namespace.to_string(),
        secret_name: name.to_string(),
        certificate,
        chain,
        private_key,
        digest: hex::encode(h.finalize()),
    })
}

/// The Secrets a listener names, in its order, as (namespace, name); other kinds left out.
pub fn secret_refs(gateway_namespace: &str, l: &Listener) -> Vec<(String, String)> {
    l.tls
        .iter()
        .flat_map(|t| &t.certificate_refs)
        .filter(|r| r.group.as_deref().unwrap_or("").is_empty() && r.kind.as_deref().unwrap_or("Secret") == "Secret")
        .map(|r| (r.namespace.clone().unwrap_or_else(|| gateway_namespace.to_string()), r.name.clone()))
        .collect()
}

/// Why listener `name` has no certificate when the controller reads no Secrets.
pub fn secrets_not_read(listener: &str) -> String {
    format!(
        "listener {listener:?}: its certificates are Secrets, and this controller reads none: start it with \
         --enable-gateway-certificate-secrets (chart: gateway.certificateSecrets: true, which grants list and watch \
         on Secrets)"
    )
}

/// The certificates of an HTTPS listener of Gateway `gateway_namespace/…`, or the listener's
/// `ResolvedRefs` reason and message. Every reference must resolve: the spec lets a listener keep
/// the valid ones, but serving a hostname with another certificate than the one asked for is worse
/// than not serving it.
pub fn listener_certificates(
    gateway_namespace: &str,
    l: &Listener,
    secrets: &BTreeMap<(String, String), SecretData>,
    grants: &[Grant],
) -> Result<Vec<ImportableCertificate>, (&'static str, String)> {
    let invalid = |m: String| (REASON_INVALID_CERTIFICATE_REF, m);
    let Some(tls) = &l.tls else {
        return Err(invalid(format!("listener {:?} is HTTPS without tls.certificateRefs", l.name)));
    };
    if let Some(mode) = tls.mode.as_deref().filter(|m| *m != "Terminate") {
        return Err(invalid(format!("listener {:?}: tls.mode {mode:?}; an ALB HTTPS listener terminates TLS", l.name)));
    }
    if tls.certificate_refs.is_empty() {
        return Err(invalid(format!(
            "listener {:?} has no tls.certificateRefs; name a Secret of type {TLS_SECRET_TYPE} (ACM discovery and \
             LoadBalancerConfiguration certificates are not read for Gateways yet)",
            l.name
        )));
    }
    let mut out: Vec<ImportableCertificate> = Vec::new();
    for r in &tls.certificate_refs {
        let group = r.group.as_deref().unwrap_or("");
        let kind = r.kind.as_deref().unwrap_or("Secret");
        if !group.is_empty() || kind != "Secret" {
            return Err(invalid(format!(
                "listener {:?}: certificateRef {:?} is {}/{kind}; a listener certificate is a core Secret (group \"\")",
                l.name,
                r.name,
                if group.is_empty() { "core" } else { group }
            )));
        }
        let ns = r.namespace.as_deref().unwrap_or(gateway_namespace);
        let from = ObjRef { group: super::GROUP, kind: "Gateway", namespace: gateway_namespace, name: "" };
        let to = ObjRef { group: "", kind: "Secret", namespace: ns, name: &r.name };
        if !permitted(grants, from, to) {
            return Err((
                REASON_REF_NOT_PERMITTED,
                format!(
                    "listener {:?}: Secret {ns}/{} is in another namespace and no ReferenceGrant there lets Gateways \
                     of {gateway_namespace} use it",
                    l.name, r.name
                ),
            ));
        }
        let Some(data) = secrets.get(&(ns.to_string(), r.name.clone())) else {
            return Err(invalid(format!(
                "listener {:?}: Secret {ns}/{} not found (the controller reads Secrets of type {TLS_SECRET_TYPE})",
                l.name, r.name
            )));
        };
        let cert = parse(ns, &r.name, data).map_err(|e| invalid(format!("listener {:?}: {e}", l.name)))?;
        if !out.iter().any(|c| c.secret() == cert.secret()) {
            out.push(cert);
        }
    }
    Ok(out)
}

/// The tags of the certificate imported for `c` by the Gateway stack `stack_id`.
pub fn tags(prefix: &str, cluster: &str, stack_id: &str, c: &ImportableCertificate) -> Tags {
    let mut t = Tags::new();
    t.insert(CLUSTER_TAG.to_string(), cluster.to_string());
    t.insert(stack_tag_key(prefix), stack_id.to_string());
    t.insert(resource_tag_key(prefix), c.resource_id());
    t.insert(digest_tag_key(prefix), c.digest.clone());
    t
}

/// `<prefix>/secret-sha256`.
pub fn digest_tag_key(prefix: &str) -> String {
    format!("{prefix}/{DIGEST_TAG_SUFFIX}")
}

/// An imported certificate of the stack, as its tags describe it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedImport {
    pub arn: String,
    /// `resource` tag (`Secret/<ns>/<name>`).
    pub resource_id: Option<String>,
    pub digest: Option<String>,
}

impl OwnedImport {
    /// From a certificate's tags, when they name `cluster` and `stack_id` under `prefix`.
    pub fn from_tags(prefix: &str, cluster: &str, stack_id: &str, arn: &str, t: &Tags) -> Option<Self> {
        let ours = t.get(CLUSTER_TAG).map(String::as_str) == Some(cluster)
            && t.get(&stack_tag_key(prefix)).map(String::as_str) == Some(stack_id)
            && t.get(&resource_tag_key(prefix)).is_some_and(|r| r.starts_with(RESOURCE_PREFIX));
        ours.then(|| OwnedImport {
            arn: arn.to_string(),
            resource_id: t.get(&resource_tag_key(prefix)).cloned(),
            digest: t.get(&digest_tag_key(prefix)).cloned(),
        })
    }
}

/// What to do with a stack's imported certificates.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportDecision {
    /// Secret (`namespace/name`) → ARN, for every wanted certificate already imported as it is now.
    pub ready: BTreeMap<String, String>,
    pub import: Vec<ImportableCertificate>,
    /// (ARN, the Secret's new content): imported again in place, then the digest tag set.
    pub reimport: Vec<(String, ImportableCertificate)>,
    /// Owned, wanted by nobody: deleted once the listeners no longer use them.
    pub leftovers: Vec<String>,
}

/// Matches the wanted certificates with the owned ones by Secret. Two owned for one Secret (an
/// import whose tagging was interrupted, then done again) keep the lowest ARN; the other is a
/// leftover.
pub fn decide(wanted: &[ImportableCertificate], owned: &[OwnedImport]) -> ImportDecision {
    let mut d = ImportDecision::default();
    let mut used = BTreeSet::new();
    let mut owned: Vec<&OwnedImport> = owned.iter().collect();
    owned.sort_by(|a, b| a.arn.cmp(&b.arn));
    for w in wanted {
        if d.ready.contains_key(&w.secret()) || d.import.iter().any(|i| i.secret() == w.secret()) {
            continue;
        }
        let rid = w.resource_id();
        match owned.iter().find(|o| o.resource_id.as_deref() == Some(rid.as_str())) {
            None => d.import.push(w.clone()),
            Some(o) => {
                used.insert(o.arn.clone());
                d.ready.insert(w.secret(), o.arn.clone());
                if o.digest.as_deref() != Some(w.digest.as_str()) {
                    d.reimport.push((o.arn.clone(), w.clone()));
                }
            }
        }
    }
    d.leftovers = owned.iter().filter(|o| !used.contains(&o.arn)).map(|o| o.arn.clone()).collect();
    d
}

#[cfg(test)]
#[path = "certificates_tests.rs"]
mod tests;
