//! The Gateway controller for GatewayClasses of `controllerName: gateway.k8s.aws/alb` (gate
//! `ALBGatewayAPI`, opt-in here): every such Gateway gets one ALB whose listeners and rules follow
//! its HTTPRoutes, with IP target groups and one TargetGroupBinding each (the TargetGroupBinding
//! controller then registers the pods). Decisions are in `lbc_model::gateway` (attachment, the
//! plan, the stack, every status condition); AWS reads and writes go through `crate::stack`, shared
//! with the Service and Ingress controllers, under ALBC's tag prefix `gateway.k8s.aws.alb`.
//!
//! Two kinds of work ([`GatewayKey`]): a GatewayClass of ours gets its `Accepted` condition; a
//! Gateway gets one pass ([`pass::reconcile`]). Watch events are mapped to the keys they concern
//! ([`Router`]) and fed to the shared scheduler ([`crate::schedule::run`]).

pub mod imported_certificates;
pub mod pass;
mod status;
pub mod stores;

use crate::backend_sg::BackendSecurityGroup;
use crate::backoff::PerKey;
use crate::context::Context;
use crate::stack::{Adapters, Reporter, StackIo};
use kube::ResourceExt;
use lbc_model::crd::TargetType;
use lbc_model::gateway::Flavor;
use lbc_model::gateway::alb_gateway::ALB_GATEWAY_TAG_PREFIX;
use lbc_model::gateway::api::parent_refs;
use lbc_model::gateway::certificates::secret_refs;
use lbc_model::lb::Tags;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

pub const CONTROLLER: &str = "gateway-alb";

/// What woke the Gateway controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GatewayTrigger {
    /// This GatewayClass changed: its status, and its Gateways.
    Class(String),
    /// This Gateway (namespace, name) changed, or a binding of its stack did.
    Gateway(String, String),
    /// A route changed (`Kind/namespace/name`); `parents`: the Gateways it names now (empty when
    /// deleted). The Gateways it named before are woken too.
    Route { key: String, parents: Vec<(String, String)> },
    /// A Service changed: the Gateways with a route to it.
    Service { namespace: String, name: String },
    /// A TLS Secret changed: the Gateways whose listeners name it.
    Secret { namespace: String, name: String },
    /// Something any Gateway may depend on (ReferenceGrants, namespace labels).
    All,
}

/// One unit of work.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GatewayKey {
    Class(String),
    Gateway { namespace: String, name: String },
}

/// Gateway-controller settings (from flags).
#[derive(Clone, Debug)]
pub struct GatewayConfig {
    pub cluster_name: String,
    pub vpc_id: String,
    /// `--default-tags`, `--external-managed-tags`.
    pub default_tags: Tags,
    pub external_managed_tags: BTreeSet<String>,
    pub default_tags_low_priority: bool,
    /// `--default-target-type`, `--default-load-balancer-scheme`.
    pub default_target_type: TargetType,
    pub default_scheme: lbc_model::lb::Scheme,
    pub sync_period: Duration,
    pub max_backoff: Duration,
    pub enhanced_defaults: bool,
}

/// What the Gateway reconciler shares.
pub struct GatewayCtx {
    pub io: StackIo,
    pub cfg: GatewayConfig,
    pub backend_sg: Arc<BackendSecurityGroup>,
    reporter: Reporter,
    backoff: PerKey<GatewayKey>,
    /// Listener certificates imported from Secrets.
    imports: imported_certificates::ImportedCertificates,
}

impl GatewayCtx {
    pub fn new(
        base: Arc<Context>,
        aws: &Adapters,
        cfg: GatewayConfig,
        backend_sg: Arc<BackendSecurityGroup>,
        options: crate::stack::StackOptions,
        imports: imported_certificates::ImportedCertificates,
    ) -> Self {
        let io = StackIo::new(base, aws, &cfg.cluster_name, &cfg.vpc_id, ALB_GATEWAY_TAG_PREFIX, options);
        Self {
            io,
            backend_sg,
            reporter: Reporter::default(),
            backoff: PerKey::new(crate::backoff::reconcile(cfg.max_backoff)),
            cfg,
            imports,
        }
    }

    fn stores(&self) -> &stores::GatewayStores {
        self.io.base.stores.gateways.as_ref().expect("the Gateway controller runs with its caches")
    }
}

/// Maps triggers to keys; remembers the Gateways each route named, so that a route that stops
/// naming a Gateway still wakes it (its rules and status entry must go).
#[derive(Default)]
struct Router {
    route_parents: Mutex<BTreeMap<String, Vec<(String, String)>>>,
}

impl Router {
    fn keys(&self, s: &stores::GatewayStores, t: &GatewayTrigger) -> BTreeSet<GatewayKey> {
        let gw = |(namespace, name): (String, String)| GatewayKey::Gateway { namespace, name };
        let mut out = BTreeSet::new();
        match t {
            GatewayTrigger::Class(name) => {
                out.insert(GatewayKey::Class(name.clone()));
                out.extend(
                    s.gateways
                        .state()
                        .iter()
                        .filter(|g| &g.spec.gateway_class_name == name)
                        .map(|g| gw((g.namespace().unwrap_or_default(), g.name_any()))),
                );
            }
            GatewayTrigger::Gateway(ns, name) => {
                out.insert(gw((ns.clone(), name.clone())));
            }
            GatewayTrigger::Route { key, parents } => {
                let before = match parents.is_empty() {
                    true => self.route_parents.lock().expect("route parents").remove(key),
                    false => self.route_parents.lock().expect("route parents").insert(key.clone(), parents.clone()),
                };
                out.extend(parents.iter().cloned().chain(before.into_iter().flatten()).map(gw));
            }
            GatewayTrigger::Service { namespace, name } => {
                for r in s.http_routes.state() {
                    let rns = r.namespace().unwrap_or_default();
                    let uses = r
                        .spec
                        .rules
                        .iter()
                        .flat_map(|x| &x.backend_refs)
                        .any(|b| &b.name == name && b.namespace.as_deref().unwrap_or(&rns) == namespace.as_str());
                    if uses {
                        out.extend(
                            parent_refs(&rns, &r.spec.parent_refs)
                                .into_iter()
                                .filter(|p| p.kind == "Gateway")
                                .map(|p| gw((p.namespace, p.name))),
                        );
                    }
                }
            }
            GatewayTrigger::Secret { namespace, name } => {
                let wanted = (namespace.clone(), name.clone());
                for g in s.gateways.state() {
                    let gns = g.namespace().unwrap_or_default();
                    if g.spec.listeners.iter().any(|l| secret_refs(&gns, l).contains(&wanted)) {
                        out.insert(gw((gns, g.name_any())));
                    }
                }
            }
            GatewayTrigger::All => {
                out.extend(s.classes.state().iter().map(|c| GatewayKey::Class(c.name_any())));
                out.extend(s.gateways.state().iter().map(|g| gw((g.namespace().unwrap_or_default(), g.name_any()))));
            }
        }
        out
    }
}

/// Runs until `stop` resolves: every class and Gateway is looked at once at start, then on every
/// change. On `stop` no new pass starts and the passes in flight finish.
pub async fn run(ctx: Arc<GatewayCtx>, concurrency: u16, stop: impl std::future::Future<Output = ()> + Send) {
    use futures::StreamExt;
    ctx.stores().wait_synced().await;
    ctx.io.base.metrics.set_concurrency(CONTROLLER, concurrency.max(1));
    let (tx, rx) = mpsc::unbounded_channel();
    let _ = tx.send(GatewayTrigger::All);
    ctx.io.base.triggers.set_gateway_sender(Some(tx));
    let router = Arc::new(Router::default());
    // What each route names now, before the first events (keys as `stores::watch_routes` makes them).
    {
        let mut known = router.route_parents.lock().expect("route parents");
        let s = ctx.stores();
        let http = s
            .http_routes
            .state()
            .into_iter()
            .map(|r| ("HTTPRoute", r.namespace(), r.name_any(), r.spec.parent_refs.clone()));
        let grpc = s
            .grpc_routes
            .state()
            .into_iter()
            .map(|r| ("GRPCRoute", r.namespace(), r.name_any(), r.spec.parent_refs.clone()));
        for (kind, ns, name, refs) in http.chain(grpc) {
            let ns = ns.unwrap_or_default();
            known.insert(format!("{kind}/{ns}/{name}"), stores::parents(&ns, &refs));
        }
    }
    let requests = {
        let ctx = ctx.clone();
        tokio_stream::wrappers::UnboundedReceiverStream::new(rx).flat_map(move |t| {
            let keys = router.keys(ctx.stores(), &t);
            futures::stream::iter(keys.into_iter().map(|k| crate::schedule::request(k, Duration::ZERO)))
        })
    };
    crate::schedule::run(requests, concurrency, stop, |k| {
        let ctx = ctx.clone();
        async move { reconcile(&ctx, &k).await }
    })
    .await;
    ctx.io.base.triggers.set_gateway_sender(None);
}

fn metrics_key(k: &GatewayKey) -> (&str, &str) {
    match k {
        GatewayKey::Class(name) => ("", name.as_str()),
        GatewayKey::Gateway { namespace, name } => (namespace.as_str(), name.as_str()),
    }
}

/// One pass; the delay before the next one (`None`: only on change).
async fn reconcile(ctx: &GatewayCtx, k: &GatewayKey) -> Option<Duration> {
    if !ctx.io.base.is_leader() {
        return None;
    }
    let work = async {
        match k {
            GatewayKey::Class(name) => status::class(ctx, name).await.map(|()| None),
            GatewayKey::Gateway { namespace, name } => pass::reconcile(ctx, namespace, name).await,
        }
    };
    crate::schedule::timed_pass(&ctx.io.base.metrics, &ctx.backoff, CONTROLLER, k, metrics_key(k), work).await
}

/// With the gate on, the Gateway API kinds must be served: a watch of a kind the API server does
/// not know would never sync, and the controller would never become ready.
pub async fn require_crds(client: &kube::Client) -> anyhow::Result<()> {
    use kube::api::{Api, ListParams};
    use lbc_model::gateway::api::{GRPCRoute, Gateway, GatewayClass, HTTPRoute, ReferenceGrant};
    let one = ListParams::default().limit(1);
    let missing = |crd: &str, e: kube::Error| match &e {
        kube::Error::Api(s) if s.code == 404 => anyhow::anyhow!(
            "--feature-gates=ALBGatewayAPI=true, but the API server does not serve {crd} (Gateway API's standard \
             CRDs are not installed): install them (the standard channel, v1.2 or later), or turn the gate off"
        ),
        _ => anyhow::anyhow!("checking that the API server serves {crd}: {e}"),
    };
    let c = client.clone();
    Api::<GatewayClass>::all(c.clone())
        .list_metadata(&one)
        .await
        .map_err(|e| missing("gatewayclasses.gateway.networking.k8s.io", e))?;
    Api::<Gateway>::all(c.clone())
        .list_metadata(&one)
        .await
        .map_err(|e| missing("gateways.gateway.networking.k8s.io", e))?;
    Api::<HTTPRoute>::all(c.clone())
        .list_metadata(&one)
        .await
        .map_err(|e| missing("httproutes.gateway.networking.k8s.io", e))?;
    Api::<GRPCRoute>::all(c.clone())
        .list_metadata(&one)
        .await
        .map_err(|e| missing("grpcroutes.gateway.networking.k8s.io", e))?;
    Api::<ReferenceGrant>::all(c)
        .list_metadata(&one)
        .await
        .map_err(|e| missing("referencegrants.gateway.networking.k8s.io", e))?;
    Ok(())
}

/// Once at start-up: a warning per class of ALBC's controller names whose Gateways this run
/// leaves alone (the gate off, or NLB Gateways), so a migration from ALBC never orphans a
/// Gateway without a word. Without the Gateway API CRDs there is nothing to say.
pub async fn report_unreconciled(client: kube::Client, alb_on: bool) {
    use kube::api::{Api, ListParams};
    use lbc_model::gateway::api::{Gateway, GatewayClass};
    let classes = match Api::<GatewayClass>::all(client.clone()).list(&ListParams::default()).await {
        Ok(l) => l.items,
        Err(kube::Error::Api(s)) if s.code == 404 => return,
        Err(e) => {
            tracing::warn!(error = %e, "could not list GatewayClasses to check for Gateways of ALBC's classes \
                (the chart grants list on gatewayclasses and gateways)");
            return;
        }
    };
    let classes: Vec<(String, String)> =
        classes.iter().map(|c| (c.name_any(), c.spec.controller_name.clone())).collect();
    if !classes.iter().any(|(_, c)| Flavor::from_controller_name(c).is_some()) {
        return;
    }
    let gateways = match Api::<Gateway>::all(client).list(&ListParams::default()).await {
        Ok(l) => l.items,
        Err(e) => {
            tracing::warn!(error = %e, "could not list Gateways to check for Gateways of ALBC's classes");
            return;
        }
    };
    let gateways: Vec<(String, String, String)> = gateways
        .iter()
        .map(|g| (g.namespace().unwrap_or_default(), g.name_any(), g.spec.gateway_class_name.clone()))
        .collect();
    for w in lbc_model::gateway::status::unreconciled(&classes, &gateways, alb_on) {
        tracing::warn!("{w}");
    }
}

/// Whether `controller_name` is the class controller this build serves.
pub(crate) fn ours(controller_name: &str) -> bool {
    Flavor::from_controller_name(controller_name) == Some(Flavor::Alb)
}
