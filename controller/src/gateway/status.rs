//! The Gateway controller's status writes: a GatewayClass's `Accepted` and `supportedFeatures`, a
//! Gateway's conditions, addresses and listeners, and each route's `status.parents` entries for our Gateways. Each is a
//! merge patch of `/status` sent only when it changes something (a condition keeps its
//! `lastTransitionTime` while its status holds), by the leader. Route entries of other controllers
//! and of our other Gateways are never touched; a route write carries the resourceVersion it was
//! decided on (a conflict retries the pass).

use super::GatewayCtx;
use crate::error::{OkIfGone, Result};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use lbc_model::gateway::Flavor;
use lbc_model::gateway::alb_gateway::{GatewayPlan, gateway_status};
use lbc_model::gateway::api::{GRPCRoute, Gateway, GatewayClass, HTTPRoute};
use lbc_model::gateway::api::{
    GatewayStatus, GatewayStatusAddress, ListenerStatus, RouteGroupKind, RouteParentStatus, RouteStatus,
    SupportedFeature,
};
use lbc_model::gateway::conditions::to_k8s;
use lbc_model::gateway::route_status::merge_parents;
use lbc_model::gateway::status::{LbState, gateway_class_accepted, supported_features};
use serde_json::json;

fn now() -> Time {
    Time(jiff::Timestamp::now())
}

/// A GatewayClass of ours: `Accepted`.
pub(super) async fn class(ctx: &GatewayCtx, name: &str) -> Result<()> {
    let Some(c) = ctx.stores().classes.get(&ObjectRef::new(name)) else { return Ok(()) };
    if !super::ours(&c.spec.controller_name) {
        return Ok(());
    }
    let Some(accepted) = gateway_class_accepted(&c.spec.controller_name) else { return Ok(()) };
    let features: Vec<SupportedFeature> = supported_features(&c.spec.controller_name)
        .unwrap_or_default()
        .iter()
        .map(|n| SupportedFeature { name: n.to_string() })
        .collect();
    let previous = c.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
    let previous_features = c.status.as_ref().map(|s| s.supported_features.as_slice()).unwrap_or_default();
    let conditions = to_k8s(&[accepted], c.metadata.generation, &now(), previous);
    if conditions == previous && features == previous_features {
        return Ok(());
    }
    ctx.io.base.ensure_leader()?;
    let api: Api<GatewayClass> = Api::all(ctx.io.base.client.clone());
    let body = json!({"status": {"conditions": conditions, "supportedFeatures": features}});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(body)).await.ok_if_gone()?;
    Ok(())
}

/// The Gateway's status from its plan and its ALB's state.
pub(super) async fn gateway(ctx: &GatewayCtx, gw: &Gateway, plan: &GatewayPlan, lb: &LbState) -> Result<()> {
    let out = gateway_status(plan, lb);
    let old = gw.status.clone().unwrap_or_default();
    let (generation, t) = (gw.metadata.generation, now());
    let listener_conds =
        |name: &str| old.listeners.iter().find(|l| l.name == name).map(|l| l.conditions.clone()).unwrap_or_default();
    let status = GatewayStatus {
        addresses: out
            .addresses
            .into_iter()
            .map(|(type_, value)| GatewayStatusAddress { type_: Some(type_.into()), value })
            .collect(),
        conditions: to_k8s(&out.conditions, generation, &t, &old.conditions),
        listeners: out
            .listeners
            .iter()
            .map(|l| ListenerStatus {
                name: l.name.clone(),
                supported_kinds: l
                    .supported_kinds
                    .iter()
                    .map(|k| RouteGroupKind { group: Some(k.group.clone()), kind: k.kind.clone() })
                    .collect(),
                attached_routes: l.attached_routes,
                conditions: to_k8s(&l.conditions, generation, &t, &listener_conds(&l.name)),
            })
            .collect(),
    };
    if status == old {
        return Ok(());
    }
    ctx.io.base.ensure_leader()?;
    // Empty lists are sent as such: a merge patch leaves out what it does not name.
    let body = json!({"status": {
        "addresses": status.addresses,
        "conditions": status.conditions,
        "listeners": status.listeners,
    }});
    let api: Api<Gateway> = Api::namespaced(ctx.io.base.client.clone(), &gw.namespace().unwrap_or_default());
    api.patch_status(&gw.name_any(), &PatchParams::default(), &Patch::Merge(body)).await.ok_if_gone()?;
    Ok(())
}

/// Every route's entries for this Gateway: the plan's, and none for routes that no longer name it.
pub(super) async fn routes(ctx: &GatewayCtx, gw: &Gateway, plan: &GatewayPlan) -> Result<()> {
    let s = ctx.stores();
    for r in s.http_routes.state() {
        write_route(ctx, gw, r.as_ref(), Some(plan)).await?;
    }
    for r in s.grpc_routes.state() {
        write_route(ctx, gw, r.as_ref(), Some(plan)).await?;
    }
    Ok(())
}

/// Removes our entries for this Gateway from every route (the Gateway is going).
pub(super) async fn forget_routes(ctx: &GatewayCtx, gw: &Gateway) -> Result<()> {
    let s = ctx.stores();
    for r in s.http_routes.state() {
        write_route(ctx, gw, r.as_ref(), None).await?;
    }
    for r in s.grpc_routes.state() {
        write_route(ctx, gw, r.as_ref(), None).await?;
    }
    Ok(())
}

/// A route kind whose status is `RouteStatus`.
trait Route:
    Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
    + Clone
    + serde::de::DeserializeOwned
    + std::fmt::Debug
{
    fn route_status(&self) -> Option<&RouteStatus>;
}

impl Route for HTTPRoute {
    fn route_status(&self) -> Option<&RouteStatus> {
        self.status.as_ref()
    }
}

impl Route for GRPCRoute {
    fn route_status(&self) -> Option<&RouteStatus> {
        self.status.as_ref()
    }
}

async fn write_route<R: Route>(ctx: &GatewayCtx, gw: &Gateway, r: &R, plan: Option<&GatewayPlan>) -> Result<()> {
    let (rns, rname) = (r.namespace().unwrap_or_default(), r.name_any());
    let (gns, gname) = (gw.namespace().unwrap_or_default(), gw.name_any());
    let existing = r.route_status().map(|s| s.parents.as_slice()).unwrap_or_default();
    let kind = R::kind(&());
    let outcome = plan.and_then(|p| p.routes.iter().find(|o| o.kind == kind && o.namespace == rns && o.name == rname));
    let controller = Flavor::Alb.controller_name();
    let t = now();
    let ours: Vec<RouteParentStatus> = outcome
        .into_iter()
        .flat_map(|o| &o.parents)
        .map(|(parent_ref, conds)| {
            let previous = existing
                .iter()
                .find(|p| p.controller_name == controller && &p.parent_ref == parent_ref)
                .map(|p| p.conditions.as_slice())
                .unwrap_or_default();
            RouteParentStatus {
                parent_ref: parent_ref.clone(),
                controller_name: controller.to_string(),
                conditions: to_k8s(conds, r.meta().generation, &t, previous),
            }
        })
        .collect();
    let Some(parents) = merge_parents(&rns, existing, controller, (&gns, &gname), ours) else { return Ok(()) };
    ctx.io.base.ensure_leader()?;
    let body = json!({
        "metadata": {"resourceVersion": r.resource_version()},
        "status": {"parents": parents},
    });
    let api: Api<R> = Api::namespaced(ctx.io.base.client.clone(), &rns);
    api.patch_status(&rname, &PatchParams::default(), &Patch::Merge(body)).await.ok_if_gone()?;
    Ok(())
}
