//! [`ClassSnapshot`]: owned copies of what [`select`](super::select()) reads, for callers whose
//! objects live behind locks or `Arc`s (the controller's caches) and must be copied out first.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::IngressClass;

use super::select::ClassView;
use crate::crd::IngressClassParams;

/// IngressClasses and IngressClassParams by name, and the labels of the namespaces of interest.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClassSnapshot {
    pub classes: BTreeMap<String, IngressClass>,
    pub params: BTreeMap<String, IngressClassParams>,
    /// Labels per namespace; a namespace missing here fails every namespaceSelector.
    pub namespace_labels: BTreeMap<String, BTreeMap<String, String>>,
}

impl ClassSnapshot {
    /// Borrows the snapshot as the view [`select`](super::select()) takes.
    pub fn view(&self) -> ClassView<'_> {
        ClassView { classes: &self.classes, params: &self.params, namespace_labels: &self.namespace_labels }
    }
}
