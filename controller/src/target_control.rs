//! The ALBTargetControlConfig cache the target control webhook reads (gate
//! `ALBTargetControlAgent` only: without the gate nothing is watched, so the CRD need not exist).
//! Only objects with the one name the upstream looks up are listed.

use crate::metrics::Metrics;
use kube::Client;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use lbc_model::crd::{ALBTargetControlConfig, TARGET_CONTROL_CONFIG_NAME};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::task::JoinHandle;

#[derive(Clone)]
pub struct TargetControlConfigs {
    store: Store<ALBTargetControlConfig>,
    ready: Arc<AtomicBool>,
}

impl TargetControlConfigs {
    /// Starts the watch; the returned task runs it (supervise it like the other caches).
    pub fn watch(client: &Client, metrics: &Metrics) -> (Self, JoinHandle<()>) {
        let cfg = watcher::Config::default().fields(&format!("metadata.name={TARGET_CONTROL_CONFIG_NAME}"));
        let (store, task) = crate::stores::cache_all(
            "albtargetcontrolconfigs",
            client,
            cfg,
            crate::stores::trim_meta,
            metrics,
            |_: &ALBTargetControlConfig| {},
        );
        let ready = Arc::new(AtomicBool::new(false));
        tokio::spawn({
            let (store, ready) = (store.clone(), ready.clone());
            async move {
                if store.wait_until_ready().await.is_ok() {
                    ready.store(true, Ordering::Release);
                }
            }
        });
        (Self { store, ready }, task)
    }

    /// The configuration of `namespace`, or an error while the first list is still running.
    pub fn get(&self, namespace: &str) -> Result<Option<Arc<ALBTargetControlConfig>>, String> {
        if !self.ready.load(Ordering::Acquire) {
            return Err("ALBTargetControlConfigs are not listed yet (the controller's log says why; is the CRD \
                        albtargetcontrolconfigs.elbv2.k8s.aws installed? `aws-lb-controller doctor` checks it)"
                .into());
        }
        Ok(self.store.get(&ObjectRef::new(TARGET_CONTROL_CONFIG_NAME).within(namespace)))
    }
}
