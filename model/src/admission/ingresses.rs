//! Ingress and IngressClassParams admission (ALBC's `vingress.elbv2.k8s.aws` and
//! `vingressclassparams.elbv2.k8s.aws`).
//!
//! [`validate_ingress`] refuses, for Ingresses this controller reconciles ([`select`]): newly
//! added annotations the cluster disabled ([`disabled_annotation_use`]), a class whose
//! IngressClassParams are missing or whose `namespaceSelector` leaves the Ingress's namespace out,
//! and invalid `alb.ingress.kubernetes.io/*` values ([`parse_annotations`]). Unknown and
//! unsupported annotations are warnings. Deviations from ALBC, both so that an Ingress can always
//! be released: updates that change neither the spec nor the annotations (finalizers, labels) and
//! Ingresses being deleted are always admitted; an Ingress naming an IngressClass that does not
//! exist is admitted with a warning (it may belong to a controller installed later), where ALBC
//! refuses it.
//!
//! In the strict tenancy mode it also refuses what the policy does not grant the Ingress's
//! namespace (`crate::ingress::tenancy`: joining a group, group-wide settings, the legacy class
//! annotation); the Ingress reconciler applies the same policy whatever admission said.
//!
//! [`validate_ingress_class_params`] checks what ALBC's validator checks (inbound CIDRs; subnet
//! `ids` xor `tags`, no duplicates) plus what ALBC's CRD schema enforces and ours does not
//! (group name, load balancer name length, ports).

use std::net::IpAddr;

use ipnet::IpNet;
use k8s_openapi::api::networking::v1::Ingress;

use super::{AdmissionOp, Violation};
use crate::crd::IngressClassParamsSpec;
use crate::ingress::keys::INGRESS_CLASS_ANNOTATION;
use crate::ingress::select::disabled_annotation_use;
use crate::ingress::tenancy::{OwnChoices, verdicts as tenancy_verdicts};
use crate::ingress::{ClassView, SelectConfig, Selection, parse_annotations, select, valid_group_name};
use crate::tenancy::{Tenancy, Verdict as TenancyVerdict};

/// What the Ingress validator answers: denied when `violations` is not empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    pub violations: Vec<Violation>,
    /// Shown by `kubectl` on an admitted request.
    pub warnings: Vec<String>,
}

fn class_name(ing: &Ingress) -> Option<&str> {
    ing.spec.as_ref().and_then(|s| s.ingress_class_name.as_deref())
}

/// Only the spec and the annotations matter to the load balancer.
fn same_spec_and_annotations(a: &Ingress, b: &Ingress) -> bool {
    a.spec == b.spec && a.metadata.annotations == b.metadata.annotations
}

/// The Ingress validator's decision for a CREATE (`old` = `None`) or UPDATE.
pub fn validate_ingress(
    op: AdmissionOp,
    new: &Ingress,
    old: Option<&Ingress>,
    view: &ClassView<'_>,
    cfg: &SelectConfig,
    tenancy: &Tenancy,
) -> Verdict {
    let old = old.filter(|_| op == AdmissionOp::Update);
    let mut out = Verdict::default();
    if new.metadata.deletion_timestamp.is_some() || old.is_some_and(|o| same_spec_and_annotations(o, new)) {
        return out;
    }
    let ns = new.metadata.namespace.as_deref().unwrap_or("default");
    let params = match select(new, view, cfg) {
        Selection::NotOurs { .. } => return out,
        Selection::Misconfigured { reason } => {
            if let Some(name) = class_name(new).filter(|n| !view.classes.contains_key(*n)) {
                out.warnings.push(format!(
                    "IngressClass {name} does not exist: if this Ingress is meant for aws-lb-controller, create the \
                     IngressClass (spec.controller: ingress.k8s.aws/alb); nothing happens until then"
                ));
                return out;
            }
            out.violations.push(Violation::new(
                "spec.ingressClassName",
                "ingress_class",
                format!("{reason}: the Ingress cannot use this class"),
            ));
            return out;
        }
        Selection::Ours { params, .. } => params,
    };
    if let Some(m) = disabled_annotation_use(new, old, cfg) {
        out.violations.push(Violation::new("metadata.annotations", "disabled_annotation", m));
    }
    let empty = Default::default();
    let annotations = new.metadata.annotations.as_ref().unwrap_or(&empty);
    match parse_annotations(annotations, ns) {
        Err(e) => out.violations.push(Violation::new("metadata.annotations", "invalid_annotation", e.to_string())),
        Ok(s) => {
            for u in s.unsupported.iter().filter(|u| !u.fails_closed()) {
                out.warnings.push(u.note());
            }
            // Admitted (ALBC admits it too), but its IngressGroup is held as it is: say so now.
            out.warnings.extend(s.fail_closed());
            for k in &s.unknown {
                out.warnings.push(format!("annotation {k} is unknown to aws-lb-controller and is ignored"));
            }
            let choices = OwnChoices {
                namespace: ns,
                name: new.metadata.name.as_deref().unwrap_or_default(),
                via_class_annotation: annotations.contains_key(INGRESS_CLASS_ANNOTATION),
                own: &s,
                group_from_params: params.as_deref().is_some_and(|p| p.spec.group.is_some()),
            };
            for v in tenancy_verdicts(tenancy, &choices) {
                if let TenancyVerdict::Refused(r) = v {
                    out.violations.push(Violation::new("metadata.annotations", "tenancy_refused", r.detail));
                }
            }
        }
    }
    out
}

/// ALBC's checks of an IngressClassParams, each violation naming the field, the value and the fix.
pub fn validate_ingress_class_params(spec: &IngressClassParamsSpec) -> Vec<Violation> {
    let mut v: Vec<Violation> =
        crate::lb::tags::reserved_tag_problem(spec.tags.iter().map(|t| t.key.as_str()), "spec.tags")
            .map(|m| Violation::new("spec.tags", "reserved_tag", m))
            .into_iter()
            .collect();
    for (i, cidr) in spec.inbound_cidrs.iter().enumerate() {
        if let Some(problem) = cidr_problem(cidr) {
            v.push(Violation::new(
                "spec.inboundCIDRs",
                "inbound_cidrs",
                format!("spec.inboundCIDRs[{i}]: {cidr:?} {problem}"),
            ));
        }
    }
    if let Some(s) = &spec.subnets {
        match (s.ids.is_empty(), s.tags.is_empty()) {
            (true, true) => v.push(Violation::new(
                "spec.subnets",
                "subnets",
                "spec.subnets: set either ids (subnet IDs) or tags (tag key → values), or remove spec.subnets",
            )),
            (false, false) => v.push(Violation::new(
                "spec.subnets",
                "subnets",
                "spec.subnets: ids and tags are mutually exclusive; keep one of them",
            )),
            _ => {}
        }
        for (i, id) in s.ids.iter().enumerate() {
            if s.ids[..i].contains(id) {
                v.push(Violation::new(
                    "spec.subnets.ids",
                    "subnets",
                    format!("spec.subnets.ids[{i}]: {id:?} is listed twice"),
                ));
            }
        }
        for (key, values) in &s.tags {
            for (i, value) in values.iter().enumerate() {
                if values[..i].contains(value) {
                    v.push(Violation::new(
                        "spec.subnets.tags",
                        "subnets",
                        format!("spec.subnets.tags[{key}][{i}]: {value:?} is listed twice"),
                    ));
                }
            }
        }
    }
    if let Some(g) = spec.group.as_ref().filter(|g| !valid_group_name(&g.name)) {
        v.push(Violation::new(
            "spec.group.name",
            "group",
            format!(
                "spec.group.name: {:?} is not a valid group name; expected at most 63 lower-case letters, digits, '-' \
                 or '.', starting and ending with a letter or digit",
                g.name
            ),
        ));
    }
    if let Some(n) = spec.load_balancer_name.as_ref().filter(|n| n.is_empty() || n.len() > 32) {
        v.push(Violation::new(
            "spec.loadBalancerName",
            "load_balancer_name",
            format!("spec.loadBalancerName: {n:?} must be 1 to 32 characters (an AWS load balancer name)"),
        ));
    }
    if let Some(p) = spec.ssl_redirect_port.as_ref().filter(|p| p.parse::<u16>().map_or(true, |n| n == 0)) {
        v.push(Violation::new(
            "spec.sslRedirectPort",
            "ssl_redirect_port",
            format!("spec.sslRedirectPort: {p:?} is not a port; expected a number from 1 to 65535, e.g. \"443\""),
        ));
    }
    for (i, l) in spec.listeners.iter().enumerate() {
        if let Some(port) = l.port.filter(|p| !(1..=65535).contains(p)) {
            v.push(Violation::new(
                "spec.listeners",
                "listeners",
                format!("spec.listeners[{i}].port: {port} is not a port; expected 1 to 65535"),
            ));
        }
    }
    v
}

/// Why `s` is not a CIDR in canonical form (ALBC's hints: `/32` or `/64` for a bare address,
/// the network address when host bits are set).
fn cidr_problem(s: &str) -> Option<String> {
    match s.parse::<IpNet>() {
        Ok(net) if net.trunc() == net => None,
        Ok(net) => Some(format!("has bits set outside the prefix; did you mean \"{}\"?", net.trunc())),
        Err(_) => Some(match s.parse::<IpAddr>() {
            Ok(IpAddr::V4(_)) => format!("is an address, not a CIDR; did you mean \"{s}/32\"?"),
            Ok(IpAddr::V6(_)) => format!("is an address, not a CIDR; did you mean \"{s}/64\"?"),
            Err(_) => "is not a CIDR; expected e.g. 10.0.0.0/8 or 2001:db8::/32".to_string(),
        }),
    }
}

#[cfg(test)]
#[path = "ingresses_tests.rs"]
mod tests;
