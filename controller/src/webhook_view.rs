//! The webhook's view of the cluster: the controller's own caches, never an API call per
//! admission.

use crate::stores::Stores;
use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;
use lbc_model::crd::{ALBTargetControlConfig, TargetGroupBinding};
use lbc_webhook::ClusterView;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub struct StoresView {
    pub stores: Stores,
    pub synced: Arc<AtomicBool>,
    /// With the gate `ALBTargetControlAgent` on.
    pub target_control: Option<crate::target_control::TargetControlConfigs>,
}

impl ClusterView for StoresView {
    fn bindings_in(&self, ns: &str) -> Vec<Arc<TargetGroupBinding>> {
        self.stores.tgbs.state().into_iter().filter(|t| t.namespace().as_deref() == Some(ns)).collect()
    }

    fn all_bindings(&self) -> Vec<Arc<TargetGroupBinding>> {
        self.stores.tgbs.state()
    }

    fn service(&self, ns: &str, name: &str) -> Option<Arc<Service>> {
        self.stores.service(ns, name)
    }

    fn ingress_classes(&self, namespace: &str) -> lbc_model::ingress::ClassSnapshot {
        self.stores.class_snapshot([namespace])
    }

    fn target_control_config(&self, namespace: &str) -> Result<Option<Arc<ALBTargetControlConfig>>, String> {
        match &self.target_control {
            Some(configs) => configs.get(namespace),
            None => Err("ALBTargetControlConfigs are not watched (the gate ALBTargetControlAgent is off)".into()),
        }
    }

    fn synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }
}
