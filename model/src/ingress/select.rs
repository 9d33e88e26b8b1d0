//! Which Ingresses this controller reconciles, with ALBC's rules (`pkg/ingress/group_loader.go`,
//! `class_loader.go`, `class_annotation_matcher.go`):
//!
//! 1. The legacy annotation `kubernetes.io/ingress.class`, when present, decides alone: it must
//!    equal `--ingress-class` (default `alb`; with an empty flag, `alb` still matches).
//! 2. Otherwise `spec.ingressClassName` must name an IngressClass whose `spec.controller` is
//!    `ingress.k8s.aws/alb`. Its `spec.parameters`, when set, must point at an IngressClassParams
//!    (`apiGroup: elbv2.k8s.aws`, `kind: IngressClassParams`) that exists and whose
//!    `namespaceSelector` (absent = all) selects the Ingress's namespace.
//! 3. An Ingress naming no class at all is ours only with `--manage-ingresses-without-class`
//!    (ALBC's hidden default: no).
//!
//! ALBC does not read `ingressclass.kubernetes.io/is-default-class` itself: the API server's
//! DefaultIngressClass admission plugin writes the default class into `spec.ingressClassName`
//! when an Ingress is created. We do the same (an Ingress without a class is left alone) but say
//! so in the reason when a default class of ours exists, since that Ingress predates it.
//!
//! `--disable-ingress-class-annotation` does not change selection (ALBC enforces it only in its
//! validating webhook, so existing Ingresses keep their load balancers); [`disabled_annotation_use`]
//! is that webhook decision.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::keys::{self as k, full_key};
use crate::crd::IngressClassParams;
use crate::names::ELBV2_GROUP;

/// Controller-wide selection settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectConfig {
    /// `--ingress-class`: the value of `kubernetes.io/ingress.class` we answer to.
    pub ingress_class: String,
    /// `--disable-ingress-class-annotation` (enforced at admission, see [`disabled_annotation_use`]).
    pub disable_ingress_class_annotation: bool,
    /// `--disable-ingress-group-name-annotation` (enforced at admission).
    pub disable_group_name_annotation: bool,
    /// Take Ingresses that name no class at all.
    pub manage_ingresses_without_class: bool,
}

impl Default for SelectConfig {
    fn default() -> Self {
        Self {
            ingress_class: k::DEFAULT_INGRESS_CLASS.into(),
            disable_ingress_class_annotation: false,
            disable_group_name_annotation: false,
            manage_ingresses_without_class: false,
        }
    }
}

/// The cluster objects selection looks at, as the controller's caches hold them.
#[derive(Clone, Copy, Debug)]
pub struct ClassView<'a> {
    pub classes: &'a BTreeMap<String, IngressClass>,
    pub params: &'a BTreeMap<String, IngressClassParams>,
    /// Labels of every namespace (a missing namespace fails a namespaceSelector).
    pub namespace_labels: &'a BTreeMap<String, BTreeMap<String, String>>,
}

/// Whether, and how, an Ingress is ours.
#[derive(Clone, Debug, PartialEq)]
pub enum Selection {
    /// Someone else's; leave it alone (no events, no finalizer).
    NotOurs { reason: String },
    /// Ours; `params` is its class's IngressClassParams, if any.
    Ours { class: Option<String>, params: Option<Box<IngressClassParams>> },
    /// Meant for us but its class cannot be used; ALBC drops it from its group. `reason` is a
    /// complete sentence for a Warning event.
    Misconfigured { reason: String },
}

/// Applies ALBC's selection rules to an Ingress.
pub fn select(ing: &Ingress, view: &ClassView<'_>, cfg: &SelectConfig) -> Selection {
    let annotation = ing.metadata.annotations.as_ref().and_then(|a| a.get(k::INGRESS_CLASS_ANNOTATION));
    if let Some(value) = annotation {
        return if class_annotation_matches(value, cfg) {
            Selection::Ours { class: None, params: None }
        } else {
            Selection::NotOurs { reason: format!("{} is {value:?}", k::INGRESS_CLASS_ANNOTATION) }
        };
    }
    let class_name = ing.spec.as_ref().and_then(|s| s.ingress_class_name.as_deref());
    let Some(class_name) = class_name else {
        if cfg.manage_ingresses_without_class {
            return Selection::Ours { class: None, params: None };
        }
        let mut reason = "no spec.ingressClassName and no kubernetes.io/ingress.class annotation".to_string();
        if let Some(default) = default_class(view.classes) {
            reason.push_str(&format!(
                "; IngressClass {default} is the default but the API server applies it only when an Ingress \
                 is created: set spec.ingressClassName: {default}"
            ));
        }
        return Selection::NotOurs { reason };
    };
    let Some(class) = view.classes.get(class_name) else {
        return Selection::Misconfigured { reason: format!("IngressClass {class_name} does not exist") };
    };
    let controller = class.spec.as_ref().and_then(|s| s.controller.as_deref()).unwrap_or_default();
    if controller != k::CONTROLLER {
        return Selection::NotOurs {
            reason: format!("IngressClass {class_name} belongs to controller {controller:?}"),
        };
    }
    let Some(p) = class.spec.as_ref().and_then(|s| s.parameters.as_ref()) else {
        return Selection::Ours { class: Some(class_name.into()), params: None };
    };
    if p.api_group.as_deref() != Some(ELBV2_GROUP) || p.kind != "IngressClassParams" {
        return Selection::Misconfigured {
            reason: format!(
                "IngressClass {class_name} references parameters {}/{} {}; only {ELBV2_GROUP} IngressClassParams are understood",
                p.api_group.as_deref().unwrap_or(""),
                p.kind,
                p.name
            ),
        };
    }
    let Some(params) = view.params.get(&p.name) else {
        return Selection::Misconfigured {
            reason: format!("IngressClassParams {} of IngressClass {class_name} does not exist", p.name),
        };
    };
    if let Some(sel) = &params.spec.namespace_selector {
        let ns = ing.metadata.namespace.as_deref().unwrap_or("default");
        let matched = view.namespace_labels.get(ns).is_some_and(|labels| selector_matches(sel, labels));
        if !matched {
            return Selection::Misconfigured {
                reason: format!(
                    "namespace {ns} is not selected by the namespaceSelector of IngressClassParams {}",
                    p.name
                ),
            };
        }
    }
    Selection::Ours { class: Some(class_name.into()), params: Some(Box::new(params.clone())) }
}

fn class_annotation_matches(value: &str, cfg: &SelectConfig) -> bool {
    (cfg.ingress_class.is_empty() && value == k::DEFAULT_INGRESS_CLASS) || value == cfg.ingress_class
}

/// The IngressClass of ours marked as the cluster default, if exactly one is.
pub fn default_class(classes: &BTreeMap<String, IngressClass>) -> Option<&str> {
    let mut ours = classes.iter().filter(|(_, c)| {
        c.spec.as_ref().and_then(|s| s.controller.as_deref()) == Some(k::CONTROLLER)
            && c.metadata.annotations.as_ref().and_then(|a| a.get(k::DEFAULT_CLASS_ANNOTATION)).map(String::as_str)
                == Some("true")
    });
    let first = ours.next()?;
    ours.next().is_none().then_some(first.0.as_str())
}

/// Kubernetes label-selector semantics: every `matchLabels` pair and every expression holds;
/// an empty selector selects everything; an unknown operator selects nothing.
pub fn selector_matches(sel: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let pairs_ok = sel.match_labels.iter().flatten().all(|(k, v)| labels.get(k) == Some(v));
    let exprs_ok = sel.match_expressions.iter().flatten().all(|e| {
        let values = e.values.as_deref().unwrap_or_default();
        let got = labels.get(&e.key);
        match e.operator.as_str() {
            "In" => got.is_some_and(|v| values.contains(v)),
            "NotIn" => got.is_none_or(|v| !values.contains(v)),
            "Exists" => got.is_some(),
            "DoesNotExist" => got.is_none(),
            _ => false,
        }
    });
    pairs_ok && exprs_ok
}

/// The validating webhook's check of ALBC's `--disable-ingress-class-annotation` and
/// `--disable-ingress-group-name-annotation`: a create or update that *introduces* (or changes)
/// a disabled annotation is denied with this message; one that keeps an existing value passes.
pub fn disabled_annotation_use(new: &Ingress, old: Option<&Ingress>, cfg: &SelectConfig) -> Option<String> {
    let get = |ing: Option<&Ingress>, key: &str| {
        ing.and_then(|i| i.metadata.annotations.as_ref()).and_then(|a| a.get(key)).cloned()
    };
    let group_key = full_key(k::GROUP_NAME);
    let checks = [
        (cfg.disable_ingress_class_annotation, k::INGRESS_CLASS_ANNOTATION, "use spec.ingressClassName"),
        (cfg.disable_group_name_annotation, group_key.as_str(), "use IngressClassParams spec.group"),
    ];
    checks.into_iter().find_map(|(disabled, key, fix)| {
        let now = get(Some(new), key)?;
        (disabled && get(old, key).as_ref() != Some(&now))
            .then(|| format!("annotation {key} is disabled on this cluster ({fix})"))
    })
}

#[cfg(test)]
#[path = "select_tests.rs"]
mod tests;
