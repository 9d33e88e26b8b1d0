//! `create-acm-cert` (with ALBC's feature gate `EnableCertificateManagement`, off by default): an
//! ACM certificate requested for the hosts of each member that asks and names no certificate
//! (`certificate-arn` or IngressClassParams `certificateArn`), used as that member's certificate,
//! so its default listen port is HTTPS 443. ALBC's `pkg/ingress/model_build_certificates.go` and
//! `pkg/deploy/acm/`, whose resource IDs and tags we keep so either controller adopts the other's:
//!
//! - Names: every `spec.rules[].host` and `spec.tls[].hosts`, sorted; the first is the domain name,
//!   all are subject alternative names. No host fails the group (nothing to request).
//! - Issuer: `acm-pca-arn`, else `--default-pca-arn` (a private certificate), else Amazon with DNS
//!   validation: one CNAME per name in the hosted zone whose name is the longest suffix of it (the
//!   zones are checked before the request, so no certificate is left waiting for a record nobody
//!   can write).
//! - Ownership: the stack's tags plus `ingress.k8s.aws/resource` =
//!   `<amazon_issued|private>/<domain, * as wildcard>-<first 8 hex of sha256(namespace/name)>`, then
//!   `--default-tags`, then the Ingress's `tags`.
//! - [`decide`]: an owned certificate with the wanted resource ID and names is used once ISSUED; not
//!   issued [`REQUEST_AGAIN_AFTER_SECONDS`] after its request, it is deleted and requested again; with
//!   other names, a new one is requested; owned certificates nobody uses are deleted after the
//!   listeners stopped using them.
//!
//! Where we differ: ALBC waits in the reconcile up to 30 minutes for the certificate to be issued;
//! here the group waits without holding a worker (looked at again every few seconds) and says so.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

use super::keys::{self as k, full_key};
use super::merge::{IngressKey, Member};
use crate::lb::Tags;
use crate::lb::build::Tagger;
use crate::lb::tags::{INGRESS_TAG_PREFIX, resource_tag_key};

/// ACM's status of a certificate that can be used.
pub const ISSUED: &str = "ISSUED";
/// How long a requested certificate may stay unissued before it is requested again (ALBC: 5 min).
pub const REQUEST_AGAIN_AFTER_SECONDS: i64 = 300;

/// A certificate one member needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WantedCertificate {
    pub ingress: IngressKey,
    /// The `ingress.k8s.aws/resource` tag value.
    pub resource_id: String,
    pub domain: String,
    /// Every host, sorted (the domain first).
    pub names: Vec<String>,
    pub private_ca_arn: Option<String>,
    /// Tracking tags, `--default-tags`, the Ingress's `tags`.
    pub tags: Tags,
}

/// Controller-wide inputs.
pub struct Settings<'a> {
    pub cluster: &'a str,
    /// The group's stack ID.
    pub stack_id: &'a str,
    pub default_tags: &'a Tags,
    /// `EnableDefaultTagsLowPriority`.
    pub default_tags_low_priority: bool,
    /// `--default-pca-arn` (empty: none).
    pub default_pca_arn: &'a str,
}

/// ALBC's resource ID of a certificate.
pub fn resource_id(private: bool, domain: &str, ingress: &IngressKey) -> String {
    let hash = hex::encode(Sha256::digest(format!("{}/{}", ingress.namespace, ingress.name).as_bytes()));
    let kind = if private { "private" } else { "amazon_issued" };
    format!("{kind}/{}-{}", domain.replace('*', "wildcard"), &hash[..8])
}

/// The members that ask for a certificate (and name none), each with what to request; a member
/// without any host is a problem naming it.
pub fn wanted(members: &[Member], s: &Settings<'_>) -> Result<Vec<WantedCertificate>, Vec<String>> {
    let tagger = Tagger {
        prefix: INGRESS_TAG_PREFIX,
        cluster: s.cluster,
        stack_id: s.stack_id,
        default_tags: s.default_tags,
        defaults_low: s.default_tags_low_priority,
    };
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for m in members {
        if m.settings.create_acm_cert != Some(true) || !m.settings.certificate_arns.is_empty() {
            continue;
        }
        let rules = m.spec.rules.iter().flatten().filter_map(|r| r.host.clone());
        let tls = m.spec.tls.iter().flatten().flat_map(|t| t.hosts.clone().unwrap_or_default());
        let names: Vec<String> =
            rules.chain(tls).filter(|h| !h.is_empty()).collect::<BTreeSet<_>>().into_iter().collect();
        let Some(domain) = names.first().cloned() else {
            problems.push(format!(
                "Ingress {} has {} but no host in spec.rules[].host or spec.tls[].hosts: a certificate needs at \
                 least one name; add a host or name a certificate with {}",
                m.key,
                full_key(k::CREATE_ACM_CERT),
                full_key(k::CERTIFICATE_ARN)
            ));
            continue;
        };
        let private_ca_arn = m
            .settings
            .acm_pca_arn
            .clone()
            .or_else(|| (!s.default_pca_arn.is_empty()).then(|| s.default_pca_arn.to_string()));
        let resource_id = resource_id(private_ca_arn.is_some(), &domain, &m.key);
        let tags = tagger.tags(&resource_id, &m.settings.backend.tags);
        out.push(WantedCertificate { ingress: m.key.clone(), resource_id, domain, names, private_ca_arn, tags });
    }
    if problems.is_empty() { Ok(out) } else { Err(problems) }
}

/// A certificate carrying the group's stack tags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedCertificate {
    pub arn: String,
    /// Its `ingress.k8s.aws/resource` tag.
    pub resource_id: Option<String>,
    pub status: String,
    /// Domain name and subject alternative names.
    pub names: Vec<String>,
    pub created_unix: Option<i64>,
}

/// Whether `tags` mark a certificate as requested by a controller (ours or ALBC's) for any stack,
/// or imported by ours from a Gateway's Secret: certificate discovery leaves those out, as ALBC
/// does with the gate on (an Ingress using a Gateway's import would keep it from being deleted).
pub fn made_by_a_controller(tags: &Tags) -> bool {
    let gateway = crate::gateway::alb_gateway::ALB_GATEWAY_TAG_PREFIX;
    tags.contains_key(crate::names::CLUSTER_TAG)
        && [INGRESS_TAG_PREFIX, gateway].iter().any(|p| tags.contains_key(&crate::lb::tags::stack_tag_key(p)))
}

/// The `ingress.k8s.aws/resource` tag of a certificate.
pub fn owned_resource_id(tags: &Tags) -> Option<String> {
    tags.get(&resource_tag_key(INGRESS_TAG_PREFIX)).cloned()
}

/// What to do with the group's certificates.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// Ingress → its issued certificate's ARN.
    pub ready: BTreeMap<IngressKey, String>,
    pub request: Vec<WantedCertificate>,
    /// (ARN to delete first, what to request instead).
    pub replace: Vec<(String, WantedCertificate)>,
    /// Requested, not issued yet: (ARN, what it was requested for, status).
    pub pending: Vec<(String, WantedCertificate, String)>,
    /// Owned, wanted by nobody: deleted once the listeners no longer use them.
    pub leftovers: Vec<String>,
}

impl Decision {
    /// Every wanted certificate is issued: the group can be deployed.
    pub fn all_ready(&self) -> bool {
        self.request.is_empty() && self.replace.is_empty() && self.pending.is_empty()
    }
}

fn same_names(a: &[String], b: &[String]) -> bool {
    a.iter().collect::<BTreeSet<_>>() == b.iter().collect::<BTreeSet<_>>()
}

/// Matches the wanted certificates with the owned ones by resource ID; `now_unix` decides when an
/// unissued one is requested again.
pub fn decide(wanted: &[WantedCertificate], owned: &[OwnedCertificate], now_unix: i64) -> Decision {
    let mut d = Decision::default();
    let mut used = BTreeSet::new();
    for w in wanted {
        // With the wanted names: an issued one first, then the newest. One with other names is
        // not used, so it is deleted once the listeners have moved to the new one.
        let mut same: Vec<&OwnedCertificate> = owned
            .iter()
            .filter(|o| o.resource_id.as_deref() == Some(&w.resource_id) && same_names(&o.names, &w.names))
            .filter(|o| !used.contains(&o.arn))
            .collect();
        same.sort_by_key(|o| (o.status != ISSUED, std::cmp::Reverse(o.created_unix)));
        let Some(o) = same.first() else {
            d.request.push(w.clone());
            continue;
        };
        used.insert(o.arn.clone());
        let stale = o.status != ISSUED && o.created_unix.is_none_or(|c| now_unix - c >= REQUEST_AGAIN_AFTER_SECONDS);
        if stale {
            // Not issued, so no listener uses it: deleted before the new request.
            d.replace.push((o.arn.clone(), w.clone()));
        } else if o.status == ISSUED {
            d.ready.insert(w.ingress.clone(), o.arn.clone());
        } else {
            d.pending.push((o.arn.clone(), w.clone(), o.status.clone()));
        }
    }
    d.leftovers = owned.iter().filter(|o| !used.contains(&o.arn)).map(|o| o.arn.clone()).collect();
    d
}

/// A hosted zone as the decision needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Zone {
    pub id: String,
    /// With or without the trailing dot.
    pub name: String,
}

/// The zone holding `domain`'s records: the one whose name is the longest suffix of it, label by
/// label (ALBC's rule); `*.` is not a label of its own zone.
pub fn zone_for<'a>(domain: &str, zones: &'a [Zone]) -> Option<&'a Zone> {
    let labels: Vec<&str> = domain.trim_end_matches('.').split('.').collect();
    zones
        .iter()
        .filter_map(|z| {
            let zl: Vec<&str> = z.name.trim_end_matches('.').split('.').collect();
            let fits = zl.len() <= labels.len()
                && labels[labels.len() - zl.len()..].iter().zip(&zl).all(|(a, b)| a.eq_ignore_ascii_case(b));
            fits.then_some((zl.len(), z))
        })
        .max_by_key(|(n, _)| *n)
        .map(|(_, z)| z)
}

#[cfg(test)]
#[path = "created_certificates_tests.rs"]
mod tests;
