//! The QUIC server-ID worker counter: the ConfigMap `kube-system/quic-server-id-worker-tracker`
//! the upstream controller keeps, so both controllers draw worker IDs from one count during a
//! migration. Written by whichever replica's webhook mints first (not a leader write: every
//! replica answers admission requests), with optimistic concurrency so two replicas never claim
//! the same ID.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};
use lbc_model::admission::{
    QUIC_MAX_WORKER_ID, WORKER_ID_CONFIG_MAP, WORKER_ID_KEY, WORKER_ID_NAMESPACE, next_worker_id, parse_worker_id,
};

/// Attempts before a claim gives up on conflicting writers.
const ATTEMPTS: usize = 5;

pub struct ConfigMapWorkerIds {
    client: Client,
}

impl ConfigMapWorkerIds {
    pub fn new(client: Client) -> Self {
        Self { client }
    }

    async fn claim_once(&self) -> Result<Result<u32, String>, kube::Error> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), WORKER_ID_NAMESPACE);
        let random = || fastrand::u32(0..=QUIC_MAX_WORKER_ID);
        match api.get_opt(WORKER_ID_CONFIG_MAP).await? {
            None => {
                let worker = random();
                let mut cm = ConfigMap::default();
                cm.metadata.name = Some(WORKER_ID_CONFIG_MAP.into());
                cm.metadata.namespace = Some(WORKER_ID_NAMESPACE.into());
                cm.data = Some([(WORKER_ID_KEY.to_string(), next_worker_id(worker).to_string())].into());
                api.create(&PostParams::default(), &cm).await?;
                Ok(Ok(worker))
            }
            Some(mut cm) => {
                let stored = cm.data.as_ref().and_then(|d| d.get(WORKER_ID_KEY));
                let worker = match stored.map(|v| parse_worker_id(v)) {
                    None => random(),
                    Some(Ok(w)) => w,
                    Some(Err(e)) => return Ok(Err(e)),
                };
                cm.data
                    .get_or_insert_with(Default::default)
                    .insert(WORKER_ID_KEY.into(), next_worker_id(worker).to_string());
                // The resourceVersion read above makes this a compare-and-swap.
                api.replace(&cm.name_any(), &PostParams::default(), &cm).await?;
                Ok(Ok(worker))
            }
        }
    }
}

#[async_trait::async_trait]
impl lbc_webhook::quic::WorkerIds for ConfigMapWorkerIds {
    async fn claim(&self) -> Result<u32, String> {
        let mut last = String::new();
        for _ in 0..ATTEMPTS {
            match self.claim_once().await {
                Ok(r) => return r,
                // Another replica (or the upstream controller) claimed at the same time: read again.
                Err(kube::Error::Api(e)) if e.code == 409 => last = e.message,
                Err(e) => {
                    return Err(format!(
                        "reading or writing ConfigMap {WORKER_ID_NAMESPACE}/{WORKER_ID_CONFIG_MAP}: {e}. The \
                         controller needs get, create and update on configmaps in {WORKER_ID_NAMESPACE}"
                    ));
                }
            }
        }
        Err(format!(
            "ConfigMap {WORKER_ID_NAMESPACE}/{WORKER_ID_CONFIG_MAP} kept changing under {ATTEMPTS} claims ({last})"
        ))
    }
}
