//! The Gateway API caches (started with the gate `ALBGatewayAPI` only) and the wake-ups their
//! events owe the Gateway controller. Like every cache they run on every replica; the wake-ups
//! reach the controller only while this replica leads ([`crate::stores::Triggers`]). Only a change
//! of what the controller reads wakes it (`lbc_model::digest`): our own status writes do not.
//!
//! Secrets: only those of type `kubernetes.io/tls` are watched (a field selector), and each is kept
//! as its `tls.crt` and `tls.key` alone (no labels, annotations or other keys), for the listener
//! certificates of `tls.certificateRefs`.

use super::GatewayTrigger;
use crate::metrics::Metrics;
use crate::stores::{CacheEvent, Triggers, api, drive_events, trim_meta};
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::reflector::Store;
use kube::{Api, Client, ResourceExt};
use lbc_model::gateway::api::{
    GRPCRoute, Gateway, GatewayClass, HTTPRoute, ParentReference, ReferenceGrant, parent_refs,
};
use tokio::task::JoinHandle;

/// The Gateway API kinds the Gateway controller reads.
#[derive(Clone)]
pub struct GatewayStores {
    pub classes: Store<GatewayClass>,
    pub gateways: Store<Gateway>,
    pub http_routes: Store<HTTPRoute>,
    pub grpc_routes: Store<GRPCRoute>,
    pub grants: Store<ReferenceGrant>,
    /// TLS Secrets, trimmed to their certificate and key (`--enable-gateway-certificate-secrets`).
    pub secrets: Option<Store<Secret>>,
}

/// The Gateways a route's `parentRefs` name (namespace, name), whatever their class.
pub(super) fn parents(namespace: &str, refs: &[ParentReference]) -> Vec<(String, String)> {
    parent_refs(namespace, refs)
        .into_iter()
        .filter(|p| p.group == lbc_model::gateway::GROUP && p.kind == "Gateway")
        .map(|p| (p.namespace, p.name))
        .collect()
}

impl GatewayStores {
    /// Starts the reflectors (the namespaced kinds in `namespace` only, when not empty: the
    /// `--watch-namespace` of every controller); returns at once (see [`GatewayStores::wait_synced`]).
    pub fn start(
        client: &Client,
        namespace: &str,
        triggers: &Triggers,
        metrics: &Metrics,
        secrets: bool,
    ) -> (Self, Vec<(&'static str, JoinHandle<()>)>) {
        let mut tasks = Vec::new();
        let t = triggers.clone();
        let (classes, task) = drive_events::<GatewayClass>(
            "gatewayclasses",
            Api::all(client.clone()),
            watcher_config(),
            trim_meta,
            metrics.clone(),
            move |ev, c| wake(&t, ev, c, GatewayTrigger::Class(c.name_any())),
        );
        tasks.push(("gatewayclasses watch", task));
        let t = triggers.clone();
        let (gateways, task) = drive_events::<Gateway>(
            "gateways",
            api(client, namespace),
            watcher_config(),
            trim_meta,
            metrics.clone(),
            move |ev, g| wake(&t, ev, g, GatewayTrigger::Gateway(g.namespace().unwrap_or_default(), g.name_any())),
        );
        tasks.push(("gateways watch", task));
        let (http_routes, task) =
            watch_routes::<HTTPRoute>("httproutes", client, namespace, triggers, metrics, |r| &r.spec.parent_refs);
        tasks.push(("httproutes watch", task));
        let (grpc_routes, task) =
            watch_routes::<GRPCRoute>("grpcroutes", client, namespace, triggers, metrics, |r| &r.spec.parent_refs);
        tasks.push(("grpcroutes watch", task));
        let t = triggers.clone();
        let (grants, task) = drive_events::<ReferenceGrant>(
            "referencegrants",
            api(client, namespace),
            watcher_config(),
            trim_meta,
            metrics.clone(),
            move |ev, g| wake(&t, ev, g, GatewayTrigger::All),
        );
        tasks.push(("referencegrants watch", task));
        let secrets = secrets.then(|| {
            let t = triggers.clone();
            let tls = kube::runtime::watcher::Config::default()
                .fields(&format!("type={}", lbc_model::gateway::certificates::TLS_SECRET_TYPE));
            let (store, task) = drive_events::<Secret>(
                "secrets",
                api(client, namespace),
                tls,
                trim_secret,
                metrics.clone(),
                move |ev, s| {
                    let trigger =
                        GatewayTrigger::Secret { namespace: s.namespace().unwrap_or_default(), name: s.name_any() };
                    wake(&t, ev, s, trigger)
                },
            );
            tasks.push(("secrets watch", task));
            store
        });
        (Self { classes, gateways, http_routes, grpc_routes, grants, secrets }, tasks)
    }

    /// Waits until every cache holds a complete first list.
    pub async fn wait_synced(&self) {
        let _ = futures::join!(
            self.classes.wait_until_ready(),
            self.gateways.wait_until_ready(),
            self.http_routes.wait_until_ready(),
            self.grpc_routes.wait_until_ready(),
            self.grants.wait_until_ready(),
            async {
                if let Some(s) = &self.secrets {
                    let _ = s.wait_until_ready().await;
                }
            },
        );
    }
}

/// A route kind's cache; an event wakes the Gateways the route names now and named before.
fn watch_routes<R>(
    resource: &'static str,
    client: &Client,
    namespace: &str,
    triggers: &Triggers,
    metrics: &Metrics,
    refs: fn(&R) -> &[ParentReference],
) -> (Store<R>, JoinHandle<()>)
where
    R: lbc_model::digest::ReadDigest<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let t = triggers.clone();
    drive_events::<R>(resource, api(client, namespace), watcher_config(), trim_meta, metrics.clone(), move |ev, r| {
        let ns = r.namespace().unwrap_or_default();
        let trigger = GatewayTrigger::Route {
            key: format!("{}/{ns}/{}", R::kind(&()), r.name_any()),
            parents: if ev == CacheEvent::Deleted { Vec::new() } else { parents(&ns, refs(r)) },
        };
        wake(&t, ev, r, trigger)
    })
}

/// A Secret is cached for its certificate and key only.
fn trim_secret(s: &mut Secret) {
    s.metadata.managed_fields = None;
    s.metadata.annotations = None;
    s.metadata.labels = None;
    s.string_data = None;
    if let Some(data) = s.data.as_mut() {
        data.retain(|k, _| k == "tls.crt" || k == "tls.key");
    }
}

/// What the plan reads of a cached Secret.
pub(super) fn secret_data(s: &Secret) -> lbc_model::gateway::certificates::SecretData {
    let get = |k: &str| s.data.as_ref().and_then(|d| d.get(k)).map(|b| b.0.clone());
    lbc_model::gateway::certificates::SecretData {
        type_: s.type_.clone().unwrap_or_default(),
        crt: get("tls.crt"),
        key: get("tls.key"),
    }
}

fn watcher_config() -> kube::runtime::watcher::Config {
    kube::runtime::watcher::Config::default()
}

/// Sends `trigger` when the event changed what the Gateway controller reads of the object.
fn wake<K: lbc_model::digest::ReadDigest>(t: &Triggers, ev: CacheEvent, o: &K, trigger: GatewayTrigger) {
    let t2 = t.clone();
    t.wake_readers(ev, o, move || Box::new(move || t2.send_gateway(trigger)));
}
