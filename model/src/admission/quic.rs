//! Pods: QUIC server IDs for the containers a pod's
//! `service.beta.kubernetes.io/aws-load-balancer-quic-enabled-containers` annotation names.
//!
//! A QUIC load balancer routes a packet to the target whose server ID the connection ID carries,
//! so each serving container needs an ID no other target of the listener holds. The IDs follow
//! the upstream controller's layout, so both controllers can mint IDs for one cluster during a
//! migration without colliding (they share the worker counter, see [`next_worker_id`]):
//! 39 bits of milliseconds since 2020-01-01 UTC, a 17-bit worker ID claimed once per process,
//! and a 7-bit sequence, started at random in each millisecond.

use crate::target::QuicServerId;
use crate::wire::QUIC_ENABLED_CONTAINERS;
use k8s_openapi::api::core::v1::{Container, Pod};

/// The namespace label that opts a namespace into server-ID injection (upstream chart's default
/// `namespaceSelector`).
pub const QUIC_INJECT_LABEL: &str = "elbv2.k8s.aws/quic-server-id-inject";
/// The ConfigMap (in `kube-system`, as the upstream keeps it) counting claimed worker IDs.
pub const WORKER_ID_CONFIG_MAP: &str = "quic-server-id-worker-tracker";
pub const WORKER_ID_NAMESPACE: &str = "kube-system";
pub const WORKER_ID_KEY: &str = "nextWorkerId";

/// The ID layout's epoch, 2020-01-01T00:00:00Z, in Unix milliseconds.
pub const EPOCH_MS: i64 = 1_577_836_800_000;
const TIMESTAMP_BITS: u32 = 39;
const WORKER_BITS: u32 = 17;
const SEQUENCE_BITS: u32 = 7;
/// The largest worker ID.
pub const MAX_WORKER_ID: u32 = (1 << WORKER_BITS) - 1;
const MAX_SEQUENCE: u8 = (1 << SEQUENCE_BITS) - 1;

/// The worker ID the next process claims after `current` (the upstream's counter: it wraps at
/// [`MAX_WORKER_ID`]).
pub fn next_worker_id(current: u32) -> u32 {
    (current + 1) % MAX_WORKER_ID
}

/// The counter's stored value; anything else is an error naming the ConfigMap.
pub fn parse_worker_id(raw: &str) -> Result<u32, String> {
    match raw.trim().parse::<u32>() {
        Ok(n) if n <= MAX_WORKER_ID => Ok(n),
        _ => Err(format!(
            "ConfigMap {WORKER_ID_NAMESPACE}/{WORKER_ID_CONFIG_MAP} key {WORKER_ID_KEY} is {raw:?}; expected a \
             number from 0 to {MAX_WORKER_ID}. Fix or delete the key (a new worker ID is then drawn at random)"
        )),
    }
}

/// What [`QuicIdMinter::mint`] gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Minted {
    Id(QuicServerId),
    /// This millisecond's sequence is spent: ask again in the next one.
    NextMillisecond,
}

/// Mints server IDs for one worker ID. Not thread-safe by itself: keep it behind a lock.
#[derive(Clone, Debug)]
pub struct QuicIdMinter {
    worker: u32,
    last_ms: i64,
    sequence: u8,
    /// This millisecond's sequence wrapped: nothing more until the next one.
    spent: bool,
}

impl QuicIdMinter {
    pub fn new(worker: u32) -> Self {
        Self { worker: worker.min(MAX_WORKER_ID), last_ms: 0, sequence: 0, spent: false }
    }

    /// An ID at `now_ms` (Unix milliseconds); `random_sequence` starts a new millisecond's
    /// sequence. A clock that went back, or a time outside the layout's 39 bits, is refused: an ID
    /// minted then could repeat one already handed out.
    pub fn mint(&mut self, now_ms: i64, random_sequence: u8) -> Result<Minted, String> {
        if now_ms < self.last_ms {
            return Err(format!(
                "the clock went back {} ms since the last QUIC server ID; refusing to mint one that could repeat",
                self.last_ms - now_ms
            ));
        }
        let since = now_ms - EPOCH_MS;
        if !(0..1i64 << TIMESTAMP_BITS).contains(&since) {
            return Err(format!("time {now_ms} ms is outside the QUIC server-ID layout (2020 to 2037)"));
        }
        if now_ms == self.last_ms {
            // As the upstream: the sequence runs up from its random start and the millisecond is
            // spent when it wraps (so no value repeats within it).
            self.sequence = (self.sequence + 1) & MAX_SEQUENCE;
            self.spent |= self.sequence == 0;
            if self.spent {
                return Ok(Minted::NextMillisecond);
            }
        } else {
            self.last_ms = now_ms;
            self.sequence = random_sequence % MAX_SEQUENCE;
            self.spent = false;
        }
        let id = ((since as u64) << (WORKER_BITS + SEQUENCE_BITS))
            | (u64::from(self.worker) << SEQUENCE_BITS)
            | u64::from(self.sequence);
        Ok(Minted::Id(QuicServerId(id.to_be_bytes())))
    }
}

/// One container that gets a server ID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuicSlot {
    /// `containers` or `initContainers`.
    pub list: &'static str,
    pub index: usize,
    /// The container has an `env` list already (append to it) or not (create it).
    pub has_env: bool,
}

/// The containers (and init containers) of a pod being created that the annotation names and
/// that do not carry `env_name` yet (a pod admitted twice, or given an ID by hand, keeps it).
/// Empty without the annotation.
pub fn plan_quic_injection(pod: &Pod, env_name: &str) -> Vec<QuicSlot> {
    let Some(list) = pod.metadata.annotations.as_ref().and_then(|a| a.get(QUIC_ENABLED_CONTAINERS)) else {
        return Vec::new();
    };
    let names: Vec<&str> = list.split(',').map(str::trim).filter(|n| !n.is_empty()).collect();
    let Some(spec) = pod.spec.as_ref() else { return Vec::new() };
    let slots = |list: &'static str, containers: &[Container]| -> Vec<QuicSlot> {
        containers
            .iter()
            .enumerate()
            .filter(|(_, c)| names.contains(&c.name.as_str()))
            .filter(|(_, c)| !c.env.iter().flatten().any(|e| e.name == env_name))
            .map(|(index, c)| QuicSlot { list, index, has_env: c.env.is_some() })
            .collect()
    };
    let mut out = slots("containers", &spec.containers);
    out.extend(slots("initContainers", spec.init_containers.as_deref().unwrap_or_default()));
    out
}

/// Annotation entries naming no container of the pod (a typo leaves a container without an ID:
/// said as a warning at admission).
pub fn unknown_quic_containers(pod: &Pod) -> Vec<String> {
    let Some(list) = pod.metadata.annotations.as_ref().and_then(|a| a.get(QUIC_ENABLED_CONTAINERS)) else {
        return Vec::new();
    };
    let spec = pod.spec.as_ref();
    let all = spec.iter().flat_map(|s| s.containers.iter().chain(s.init_containers.iter().flatten()));
    let known: Vec<&str> = all.map(|c| c.name.as_str()).collect();
    list.split(',').map(str::trim).filter(|n| !n.is_empty() && !known.contains(n)).map(String::from).collect()
}

#[cfg(test)]
mod tests;
