//! What the webhooks read from the cluster: the controller's watch caches, behind a trait.
//! An admission request never causes an API call: the API server waits on us (and, for pods,
//! every rollout does), so answers come from memory.

use k8s_openapi::api::core::v1::Service;
use lbc_model::crd::{ALBTargetControlConfig, TARGET_CONTROL_CONFIG_NAME, TargetGroupBinding};
use lbc_model::ingress::ClassSnapshot;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Read access to cached cluster state.
pub trait ClusterView: Send + Sync {
    /// TargetGroupBindings in `namespace`.
    fn bindings_in(&self, namespace: &str) -> Vec<Arc<TargetGroupBinding>>;
    /// Every TargetGroupBinding in the cluster.
    fn all_bindings(&self) -> Vec<Arc<TargetGroupBinding>>;
    /// The Service `namespace/name`.
    fn service(&self, namespace: &str, name: &str) -> Option<Arc<Service>>;
    /// Labels of a namespace, when the controller caches namespaces. `None` (the default)
    /// means "unknown": the webhook configuration's namespaceSelector is trusted to send only
    /// namespaces labelled `elbv2.k8s.aws/pod-readiness-gate-inject=enabled`.
    fn namespace_labels(&self, _namespace: &str) -> Option<BTreeMap<String, String>> {
        None
    }
    /// Every IngressClass and IngressClassParams, and the labels of `namespace` when known, for
    /// Ingress class selection (`lbc_model::ingress::select`).
    fn ingress_classes(&self, namespace: &str) -> ClassSnapshot;
    /// The ALBTargetControlConfig named [`TARGET_CONTROL_CONFIG_NAME`] in `namespace`, if any; an
    /// error while those are not cached yet (or not at all: the gate is off).
    fn target_control_config(&self, namespace: &str) -> Result<Option<Arc<ALBTargetControlConfig>>, String>;
    /// Whether the caches have finished their initial list. Before that the pod mutator adds
    /// no gates (exactly what happens when the webhook is down) and the validator cannot see
    /// other bindings of a target group (it says so in a warning).
    fn synced(&self) -> bool {
        true
    }
}

/// A fixed [`ClusterView`], for tests and tools.
#[derive(Clone, Debug, Default)]
pub struct StaticClusterView {
    pub bindings: Vec<Arc<TargetGroupBinding>>,
    pub services: Vec<Arc<Service>>,
    pub namespaces: BTreeMap<String, BTreeMap<String, String>>,
    /// IngressClasses and IngressClassParams (namespace labels come from `namespaces`).
    pub classes: ClassSnapshot,
    /// Reported by [`ClusterView::synced`]; `true` unless set.
    pub not_synced: bool,
    /// ALBTargetControlConfigs (only those named [`TARGET_CONTROL_CONFIG_NAME`] are found).
    pub target_control: Vec<Arc<ALBTargetControlConfig>>,
}

impl StaticClusterView {
    pub fn new(bindings: Vec<TargetGroupBinding>, services: Vec<Service>) -> Self {
        Self {
            bindings: bindings.into_iter().map(Arc::new).collect(),
            services: services.into_iter().map(Arc::new).collect(),
            ..Default::default()
        }
    }
}

impl ClusterView for StaticClusterView {
    fn bindings_in(&self, namespace: &str) -> Vec<Arc<TargetGroupBinding>> {
        self.bindings.iter().filter(|b| b.metadata.namespace.as_deref() == Some(namespace)).cloned().collect()
    }

    fn all_bindings(&self) -> Vec<Arc<TargetGroupBinding>> {
        self.bindings.clone()
    }

    fn service(&self, namespace: &str, name: &str) -> Option<Arc<Service>> {
        self.services
            .iter()
            .find(|s| s.metadata.namespace.as_deref() == Some(namespace) && s.metadata.name.as_deref() == Some(name))
            .cloned()
    }

    fn namespace_labels(&self, namespace: &str) -> Option<BTreeMap<String, String>> {
        self.namespaces.get(namespace).cloned()
    }

    fn ingress_classes(&self, namespace: &str) -> ClassSnapshot {
        let mut snap = self.classes.clone();
        snap.namespace_labels =
            self.namespaces.get(namespace).map(|l| (namespace.to_string(), l.clone())).into_iter().collect();
        snap
    }

    fn target_control_config(&self, namespace: &str) -> Result<Option<Arc<ALBTargetControlConfig>>, String> {
        Ok(self
            .target_control
            .iter()
            .find(|c| {
                c.metadata.namespace.as_deref() == Some(namespace)
                    && c.metadata.name.as_deref() == Some(TARGET_CONTROL_CONFIG_NAME)
            })
            .cloned())
    }

    fn synced(&self) -> bool {
        !self.not_synced
    }
}
