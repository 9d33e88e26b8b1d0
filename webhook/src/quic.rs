//! `/mutate-v1-pod-server-id` (`quicid.elbv2.k8s.aws`): gives the containers a new pod's
//! `service.beta.kubernetes.io/aws-load-balancer-quic-enabled-containers` annotation names a QUIC
//! server ID in an environment variable, as the upstream controller's webhook does. The IDs are
//! minted by [`lbc_model::admission::QuicIdMinter`] on a worker ID claimed once per process from
//! the counter the upstream keeps ([`WorkerIds`]).

use crate::review::Decision;
use json_patch::PatchOperation;
use k8s_openapi::api::core::v1::Pod;
use kube::core::admission::{AdmissionRequest, Operation};
use lbc_model::admission::{Minted, QuicIdMinter, plan_quic_injection, unknown_quic_containers};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tracing::info;

/// Where a process claims its worker ID (the controller: a ConfigMap through the API server).
#[async_trait::async_trait]
pub trait WorkerIds: Send + Sync {
    /// A worker ID no other process holds; an error names what failed and the fix.
    async fn claim(&self) -> Result<u32, String>;
}

/// The injector's state: the variable name, the worker-ID source and, once claimed, the minter.
pub struct QuicInjector {
    env_name: String,
    worker_ids: Arc<dyn WorkerIds>,
    minter: tokio::sync::Mutex<Option<QuicIdMinter>>,
}

impl QuicInjector {
    pub fn new(env_name: impl Into<String>, worker_ids: Arc<dyn WorkerIds>) -> Self {
        Self { env_name: env_name.into(), worker_ids, minter: tokio::sync::Mutex::new(None) }
    }

    /// `n` new server IDs, in the pod form (base64).
    async fn mint(&self, n: usize) -> Result<Vec<String>, String> {
        let mut guard = self.minter.lock().await;
        if guard.is_none() {
            let worker = self.worker_ids.claim().await?;
            info!(worker, "claimed a QUIC server-ID worker ID");
            *guard = Some(QuicIdMinter::new(worker));
        }
        let minter = guard.as_mut().expect("claimed above");
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let now = SystemTime::now().duration_since(UNIX_EPOCH).map_err(|e| e.to_string())?;
            let now_ms = i64::try_from(now.as_millis()).map_err(|e| e.to_string())?;
            match minter.mint(now_ms, fastrand::u8(..))? {
                Minted::Id(id) => out.push(id.to_env()),
                Minted::NextMillisecond => tokio::time::sleep(Duration::from_millis(1)).await,
            }
        }
        Ok(out)
    }

    /// The decision for a pod admission request.
    pub(crate) async fn decide(&self, req: AdmissionRequest<Pod>) -> Decision {
        if req.operation != Operation::Create {
            return Decision::allow();
        }
        let Some(pod) = req.object else { return Decision::invalid("CREATE request without the Pod object") };
        let slots = plan_quic_injection(&pod, &self.env_name);
        let unknown = unknown_quic_containers(&pod);
        let warnings: Vec<String> = unknown
            .iter()
            .map(|c| {
                format!(
                    "annotation {} names container {c:?}, which the pod does not have: no QUIC server ID is given \
                     to it",
                    lbc_model::wire::QUIC_ENABLED_CONTAINERS
                )
            })
            .collect();
        if slots.is_empty() {
            return Decision::Allow { warnings };
        }
        let ids = match self.mint(slots.len()).await {
            Ok(ids) => ids,
            Err(e) => {
                return Decision::Fail {
                    message: format!("cannot mint a QUIC server ID: {e}"),
                    category: "quic_server_id",
                };
            }
        };
        let mut ops: Vec<PatchOperation> = Vec::new();
        for (slot, id) in slots.iter().zip(ids) {
            let var = serde_json::json!({"name": self.env_name, "value": id});
            let index = slot.index.to_string();
            if slot.has_env {
                ops.push(crate::handlers::add(&["spec", slot.list, &index, "env", "-"], var));
            } else {
                ops.push(crate::handlers::add(&["spec", slot.list, &index, "env"], serde_json::json!([var])));
            }
        }
        let name = pod.metadata.name.as_deref().or(pod.metadata.generate_name.as_deref()).unwrap_or_default();
        info!(namespace = ?req.namespace, pod = name, containers = slots.len(), "QUIC server IDs given");
        Decision::Patch { ops, warnings }
    }
}
