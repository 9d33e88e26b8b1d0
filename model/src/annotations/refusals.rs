//! Annotations the controller knows but cannot apply, each with a decision: fail closed or
//! degrade. The rule: an annotation that protects the load balancer or what is behind it
//! (authentication, mutual TLS, JWT, WAF, Shield, source ranges, TLS policy) must never be
//! dropped silently while the rest is deployed, because a user migrating from ALBC would expose
//! what the annotation protected. Such an annotation **fails closed**: while it is present, the
//! stack it belongs to is not created or changed (existing listeners and rules stay as they are)
//! and a Warning names it. Any other refused annotation **degrades**: the rest is deployed
//! without it, with a Warning.
//!
//! Every refusal is a row of [`INGRESS`] or [`SERVICE`], so none can be added without choosing
//! its [`Refusal`]; `tests::every_refusal_has_its_decision` lists them all.

use super::{Reader, Unsupported};

/// What a refused annotation does to the stack it is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Security-relevant: nothing of the stack is created or changed while it is present.
    FailClosed,
    /// The stack is deployed without it, with a Warning.
    Degrade,
}

/// One refused annotation: an exact suffix, or a family (every suffix starting with it).
#[derive(Clone, Copy, Debug)]
pub struct Refused {
    pub suffix: &'static str,
    pub family: bool,
    pub refusal: Refusal,
    pub reason: &'static str,
    /// Values that ask for nothing (`shield-advanced-protection: "false"`): refused, but they
    /// only degrade whatever the row's decision.
    pub asks_nothing: &'static [&'static str],
}

const fn exact(suffix: &'static str, refusal: Refusal, reason: &'static str) -> Refused {
    Refused { suffix, family: false, refusal, reason, asks_nothing: &[] }
}

#[cfg(test)]
const fn family(prefix: &'static str, refusal: Refusal, reason: &'static str) -> Refused {
    Refused { suffix: prefix, family: true, refusal, reason, asks_nothing: &[] }
}

use crate::service::keys as svc;
use Refusal::{Degrade, FailClosed};

/// `alb.ingress.kubernetes.io/*` annotations refused on an Ingress.
pub const INGRESS: &[Refused] = &[];

/// `service.beta.kubernetes.io/*` annotations refused on a Service.
pub const SERVICE: &[Refused] = &[exact(
    svc::QUIC_ENABLED_CONTAINERS,
    Degrade,
    "a pod annotation; it has no effect on a Service: put it on the pod template",
)];

impl Refused {
    fn unsupported(&self, key: String, value: &str) -> Unsupported {
        let refusal = if self.asks_nothing.contains(&value) { Refusal::Degrade } else { self.refusal };
        Unsupported { key, reason: self.reason.to_string(), refusal }
    }
}

/// Every annotation of `table` present under the reader's prefix, in table order (they count as
/// read: not reported as unknown).
pub(crate) fn note_refused(r: &mut Reader<'_>, unsupported: &mut Vec<Unsupported>, table: &[Refused]) {
    for row in table {
        if row.family {
            for (key, _, value) in r.family(row.suffix) {
                unsupported.push(row.unsupported(key, value));
            }
        } else if let Some(value) = r.raw(row.suffix) {
            unsupported.push(row.unsupported(r.key(row.suffix), value));
        }
    }
}

/// The refused annotations among `unsupported` that keep their stack from being deployed, as
/// one Warning text each.
pub fn fail_closed_notes(unsupported: &[Unsupported]) -> Vec<String> {
    unsupported
        .iter()
        .filter(|u| u.refusal == FailClosed)
        .map(|u| {
            format!(
                "annotation {} cannot be applied ({}); it protects the load balancer, so nothing is created or \
                 changed in AWS while it is present: remove it to deploy without that protection",
                u.key, u.reason
            )
        })
        .collect()
}

#[cfg(test)]
#[path = "refusals_tests.rs"]
mod tests;
