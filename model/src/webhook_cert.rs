//! Decisions of the controller-managed webhook certificate (`--webhook-cert-mode=controller`).
//!
//! The controller keeps its own CA and serving certificate in one Secret: `ca.crt` (the trust
//! bundle: one or more CA certificates, the current one first), `ca.key` (the current CA's key),
//! `tls.crt` and `tls.key` (the serving leaf, signed by a CA of the bundle). The leader writes it;
//! every replica serves the pair it holds. The rules, all as functions of what was read and of the
//! time, never of a clock read here:
//!
//! - A leaf is reissued from the *same* CA when a third of its life is left, so the trust bundle
//!   (and the webhook configurations' `caBundle`) does not change on a leaf rotation.
//! - A CA is replaced when a third of its life is left (or on request, or when there is no usable
//!   CA key: a first start, or a Secret written by the old chart, which has no `ca.key`). The new
//!   CA is first *added* to the bundle; a leaf from it is issued only once every webhook of our
//!   configurations has trusted it for [`Policy::settle`]. Until then the old leaf keeps serving.
//! - A CA other than the current one leaves the bundle once it has expired, or once the leaf from
//!   the current CA has been in the Secret for [`Policy::retire_after`] (every replica serves it by
//!   then). The CA that signed the leaf in the Secret never leaves.
//! - Without a usable leaf there is nothing in service to protect: a leaf is issued at once.
//!
//! Certificates are named by the SHA-256 of their DER ([`CertId`]); parsing and generation live in
//! the controller.

use jiff::{SignedDuration, Timestamp};
use std::collections::BTreeSet;

/// The SHA-256 of a certificate's DER, lower-case hex.
pub type CertId = String;

/// How far back a certificate issued here starts (`notBefore = now − BACKDATE`), so a replica or
/// API server whose clock is a little behind the leader's accepts it at once. A leaf's issue time
/// is its `notBefore + BACKDATE`.
pub const BACKDATE: SignedDuration = SignedDuration::from_mins(5);

/// Annotation on the Secret that asks for an early rotation: `leaf` (a new serving certificate
/// from the same CA) or `ca` (a new CA, rolled in as on expiry). Removed when acted upon.
pub const ROTATE_ANNOTATION: &str = "elbv2.k8s.aws/webhook-cert-rotate";

/// A certificate's validity window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Validity {
    pub not_before: Timestamp,
    pub not_after: Timestamp,
}

impl Validity {
    pub fn lifetime(&self) -> SignedDuration {
        self.not_after.duration_since(self.not_before)
    }

    /// Whether a TLS client checking at `now` accepts the window.
    pub fn valid_at(&self, now: Timestamp) -> bool {
        self.not_before <= now && now < self.not_after
    }

    /// When a third of the lifetime is left: the time to replace it.
    pub fn renew_at(&self) -> Timestamp {
        self.not_after - self.lifetime() / 3
    }
}

/// A CA certificate of the bundle (`ca.crt`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ca {
    pub id: CertId,
    pub validity: Validity,
}

/// What `ca.key` is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaKey {
    /// No `ca.key` (first start, or a Secret from the old chart or ALBC's chart).
    Missing,
    /// A `ca.key` that is no key, or the key of no CA in the bundle (why, for the log).
    Unmatched(String),
    /// The key of this bundle CA: the current CA.
    Of(CertId),
}

/// The serving pair (`tls.crt`, `tls.key`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Leaf {
    Missing,
    /// Not a certificate, not a key, or a key of another certificate (why, for the log).
    Unusable(String),
    Present(LeafCert),
}

/// A serving certificate whose key is in the Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeafCert {
    pub id: CertId,
    pub validity: Validity,
    /// Its subject alternative names (DNS names and IP addresses, as text).
    pub names: BTreeSet<String>,
    /// The bundle CA whose signature it carries (None: signed by no CA of the bundle).
    pub issuer: Option<CertId>,
}

impl LeafCert {
    /// When it was written to the Secret (leaves issued here start [`BACKDATE`] early).
    pub fn issued_at(&self) -> Timestamp {
        self.validity.not_before + BACKDATE
    }
}

/// An early rotation asked for with [`ROTATE_ANNOTATION`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rotate {
    Leaf,
    Ca,
}

/// Reads the annotation's value.
pub fn parse_rotate(value: &str) -> Result<Rotate, String> {
    match value.trim() {
        "leaf" => Ok(Rotate::Leaf),
        "ca" => Ok(Rotate::Ca),
        other => Err(format!(
            "annotation {ROTATE_ANNOTATION}={other:?} is not understood: expected \"leaf\" (a new serving certificate \
             from the same CA) or \"ca\" (a new CA, rolled in); it is removed without effect"
        )),
    }
}

/// The Secret as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// The CA certificates of `ca.crt`, in order, without duplicates.
    pub bundle: Vec<Ca>,
    pub ca_key: CaKey,
    pub leaf: Leaf,
    /// [`ROTATE_ANNOTATION`], when present (`Err`: a value not understood).
    pub request: Option<Result<Rotate, String>>,
}

impl Observed {
    /// A Secret that does not exist yet.
    pub fn empty() -> Self {
        Self { bundle: Vec::new(), ca_key: CaKey::Missing, leaf: Leaf::Missing, request: None }
    }

    fn ca(&self, id: &CertId) -> Option<&Ca> {
        self.bundle.iter().find(|c| &c.id == id)
    }
}

/// Lifetimes and waits (flags `--webhook-cert-*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    pub ca_lifetime: SignedDuration,
    pub leaf_lifetime: SignedDuration,
    /// How long every webhook must have trusted a new CA before a leaf from it is served: the API
    /// servers' own watch of the configurations must have caught up.
    pub settle: SignedDuration,
    /// How long after the leaf from the current CA was written the other CAs leave the bundle:
    /// every replica serves the new leaf well before.
    pub retire_after: SignedDuration,
    /// The names the leaf must carry (the webhook Service's DNS names).
    pub names: BTreeSet<String>,
}

impl Policy {
    /// The validity of a CA issued at `now`.
    pub fn ca_validity(&self, now: Timestamp) -> Validity {
        Validity { not_before: now - BACKDATE, not_after: now + self.ca_lifetime }
    }

    /// The validity of a leaf issued at `now` by a CA valid for `ca`: never past the CA.
    pub fn leaf_validity(&self, now: Timestamp, ca: &Validity) -> Validity {
        Validity { not_before: now - BACKDATE, not_after: (now + self.leaf_lifetime).min(ca.not_after) }
    }
}

/// Why a new CA is made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaReason {
    /// No `ca.key`: a first start, or a Secret written by a chart (its CA stays trusted meanwhile).
    NoKey,
    /// `ca.key` is unusable or belongs to no CA of the bundle.
    KeyMatchesNoCa(String),
    NotYetValid,
    Expired,
    /// A third of its life is left.
    Renewal,
    /// [`ROTATE_ANNOTATION`]`: ca`.
    Requested,
}

/// Why a new leaf is issued.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeafReason {
    Missing,
    Unusable(String),
    NotYetValid,
    Expired,
    /// Signed by no CA of the bundle, or by one that is not valid now.
    NotFromBundle,
    /// The wanted names changed (the webhook Service was renamed, `--webhook-cert-dns-names`).
    NamesChanged,
    /// A third of its life is left.
    Renewal,
    /// [`ROTATE_ANNOTATION`]`: leaf`.
    Requested,
    /// The current CA is trusted by every webhook since [`Policy::settle`]: serve a leaf from it.
    CaSwitch,
}

impl LeafReason {
    /// Whether a leaf was in service (a valid pair that clients trusted): the switch had to wait
    /// for the bundle, and clients see no change of trust.
    pub fn replaces_a_serving_leaf(&self) -> bool {
        matches!(self, Self::Renewal | Self::Requested | Self::CaSwitch)
    }
}

/// Why the leaf in service stays although a newer CA is current.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Some webhook of our configurations does not trust the current CA yet (its caBundle gets
    /// patched from the Secret).
    Trust,
    /// Every webhook trusts it; the API servers get until then to notice.
    Settle { until: Timestamp },
}

/// What to write to the Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Make a CA: it becomes current (`ca.key`) and joins the bundle.
    pub new_ca: Option<CaReason>,
    /// Issue a leaf from the current CA (the new one when [`Plan::new_ca`]).
    pub new_leaf: Option<LeafReason>,
    /// CAs that leave the bundle.
    pub retire: Vec<CertId>,
    /// Remove [`ROTATE_ANNOTATION`].
    pub clear_request: bool,
    pub wait: Option<Wait>,
    /// The next time this plan changes with nothing else changing (a renewal or retirement falls
    /// due, a settle ends).
    pub wake_at: Option<Timestamp>,
}

impl Plan {
    pub fn writes(&self) -> bool {
        self.new_ca.is_some() || self.new_leaf.is_some() || !self.retire.is_empty() || self.clear_request
    }
}

/// Decides what to write. `trusted_since`: since when every webhook of our configurations has had
/// the current CA (the one of `ca.key`) in its caBundle, as this replica saw it (None: not all of
/// them yet, or no current CA).
pub fn plan(obs: &Observed, policy: &Policy, trusted_since: Option<Timestamp>, now: Timestamp) -> Plan {
    let request = obs.request.as_ref().and_then(|r| r.as_ref().ok()).copied();
    let current = match &obs.ca_key {
        CaKey::Of(id) => obs.ca(id),
        _ => None,
    };
    let new_ca = match (current, &obs.ca_key) {
        (None, CaKey::Missing) => Some(CaReason::NoKey),
        (None, CaKey::Unmatched(why)) => Some(CaReason::KeyMatchesNoCa(why.clone())),
        (None, CaKey::Of(id)) => Some(CaReason::KeyMatchesNoCa(format!("ca.key belongs to {id}, not in ca.crt"))),
        (Some(ca), _) if now < ca.validity.not_before => Some(CaReason::NotYetValid),
        (Some(ca), _) if now >= ca.validity.not_after => Some(CaReason::Expired),
        (Some(ca), _) if now >= ca.validity.renew_at() => Some(CaReason::Renewal),
        (Some(_), _) if request == Some(Rotate::Ca) => Some(CaReason::Requested),
        _ => None,
    };
    // The CA leaves are issued from after this plan (None: the one made now).
    let effective = if new_ca.is_some() { None } else { current };

    let mut wait = None;
    let new_leaf = match &obs.leaf {
        Leaf::Missing => Some(LeafReason::Missing),
        Leaf::Unusable(why) => Some(LeafReason::Unusable(why.clone())),
        Leaf::Present(l) if now < l.validity.not_before => Some(LeafReason::NotYetValid),
        Leaf::Present(l) if now >= l.validity.not_after => Some(LeafReason::Expired),
        Leaf::Present(l) if !l.issuer.as_ref().and_then(|i| obs.ca(i)).is_some_and(|c| c.validity.valid_at(now)) => {
            Some(LeafReason::NotFromBundle)
        }
        Leaf::Present(l) if l.names != policy.names => Some(LeafReason::NamesChanged),
        Leaf::Present(l) => match effective {
            Some(ca) if l.issuer.as_ref() == Some(&ca.id) => {
                if now >= l.validity.renew_at() {
                    Some(LeafReason::Renewal)
                } else if request == Some(Rotate::Leaf) {
                    Some(LeafReason::Requested)
                } else {
                    None
                }
            }
            // A newer CA is current: its leaf waits until every webhook trusts it.
            Some(_) => match trusted_since {
                Some(t) if now >= t + policy.settle => Some(LeafReason::CaSwitch),
                Some(t) => {
                    wait = Some(Wait::Settle { until: t + policy.settle });
                    None
                }
                None => {
                    wait = Some(Wait::Trust);
                    None
                }
            },
            // The CA made now goes into the bundle first.
            None => {
                wait = Some(Wait::Trust);
                None
            }
        },
    };

    // The leaf in the Secret after this plan, when it stays: who signed it, and whether that is the
    // effective CA (then the others may retire once it has been out long enough).
    let kept_leaf = match (&obs.leaf, &new_leaf) {
        (Leaf::Present(l), None) => Some(l),
        _ => None,
    };
    let leaf_from_effective = kept_leaf.filter(|l| effective.is_some_and(|ca| l.issuer.as_ref() == Some(&ca.id)));
    let mut retire = Vec::new();
    let mut wakes: Vec<Timestamp> = Vec::new();
    for ca in &obs.bundle {
        let is_effective = effective.is_some_and(|e| e.id == ca.id);
        let signs_kept_leaf = kept_leaf.is_some_and(|l| l.issuer.as_ref() == Some(&ca.id));
        if is_effective || signs_kept_leaf {
            continue;
        }
        let grace_over = leaf_from_effective.map(|l| l.issued_at() + policy.retire_after);
        if now >= ca.validity.not_after || grace_over.is_some_and(|g| now >= g) {
            retire.push(ca.id.clone());
        } else {
            wakes.push(ca.validity.not_after);
            wakes.extend(grace_over);
        }
    }

    if let Some(ca) = effective {
        wakes.extend([ca.validity.renew_at(), ca.validity.not_after]);
    }
    if let Some(l) = kept_leaf {
        wakes.push(l.validity.not_after);
        if leaf_from_effective.is_some() {
            wakes.push(l.validity.renew_at());
        }
    }
    if let Some(Wait::Settle { until }) = wait {
        wakes.push(until);
    }
    let wake_at = wakes.into_iter().filter(|t| *t > now).min();
    Plan { new_ca, new_leaf, retire, clear_request: obs.request.is_some(), wait, wake_at }
}

/// The bundle after a plan, by id: the current CA first, then the others in their order, minus
/// the retired ones.
pub fn next_bundle(bundle: &[CertId], current: &CertId, retire: &[CertId]) -> Vec<CertId> {
    let mut out = vec![current.clone()];
    for id in bundle {
        if !retire.contains(id) && !out.contains(id) {
            out.push(id.clone());
        }
    }
    out
}

/// Whether a webhook's `caBundle` must be set to `desired` (the Secret's `ca.crt`). An empty
/// `desired` (no Secret yet) never replaces anything.
pub fn needs_ca_bundle(desired: &[u8], current: Option<&[u8]>) -> bool {
    !desired.is_empty() && current != Some(desired)
}

/// Whether every webhook trusts `ca`, given the CAs each webhook's caBundle holds.
pub fn all_trust<'a>(webhooks: impl IntoIterator<Item = &'a [CertId]>, ca: &CertId) -> bool {
    webhooks.into_iter().all(|cas| cas.contains(ca))
}

/// Why a replica cannot serve (its `/readyz` says so).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotServing {
    #[error("no webhook serving certificate yet")]
    NoCertificate,
    #[error("the webhook serving certificate is not valid before {0}")]
    NotYetValid(Timestamp),
    #[error("the webhook serving certificate expired at {0}")]
    Expired(Timestamp),
}

/// Whether a pair with this validity may be served at `now`.
pub fn serving(validity: Option<&Validity>, now: Timestamp) -> Result<(), NotServing> {
    match validity {
        None => Err(NotServing::NoCertificate),
        Some(v) if now < v.not_before => Err(NotServing::NotYetValid(v.not_before)),
        Some(v) if now >= v.not_after => Err(NotServing::Expired(v.not_after)),
        Some(_) => Ok(()),
    }
}

/// Which pair a replica serves when the Secret changes: the Secret's when it may be served, else
/// the one in service while it is still valid (a Secret half-written or emptied by hand does not
/// take a working pair away).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swap {
    /// Serve the Secret's pair.
    Install,
    /// Keep serving the pair in service.
    Keep,
    /// Serve nothing (readiness fails): no pair that may be served.
    Clear,
}

/// `secret`: the Secret's pair, when it parses with a matching key; `serving`: the pair in service.
pub fn swap(secret: Option<&Validity>, serving_now: Option<&Validity>, now: Timestamp) -> Swap {
    if serving(secret, now).is_ok() {
        Swap::Install
    } else if serving(serving_now, now).is_ok() {
        Swap::Keep
    } else {
        Swap::Clear
    }
}

#[cfg(test)]
#[path = "webhook_cert_tests.rs"]
mod tests;
