//! A Gateway of class `gateway.k8s.aws/alb` end to end (gate ALBGatewayAPI): the real controller
//! binary, the real kube-apiserver with Gateway API's standard CRDs, kwok pods and the AWS
//! emulator. The Gateway gets an ALB whose rules follow its HTTPRoute, the pods are registered
//! through the TargetGroupBinding, every status says so; a resync writes nothing; a listener the
//! controller cannot build yet refuses the whole Gateway without one AWS write; deleting the
//! Gateway deletes its stack, its binding and its route status entry.

use aws_sdk_elasticloadbalancingv2 as elbv2;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use lbc_e2e::controller::ControllerProc;
use lbc_e2e::emulator::{self, Emulator};
use lbc_e2e::{Env, aws, eventually, kube_util, unique};
use lbc_model::crd::TargetGroupBinding;
use lbc_model::gateway::Flavor;
use lbc_model::gateway::api::{Gateway, GatewayClass, HTTPRoute};
use serde_json::json;
use std::collections::BTreeMap;

/// ALBC's controller-runtime name of its ALB Gateway controller, which our metrics keep.
pub(super) const CONTROLLER: &str = "gateway.k8s.aws/alb";
const STACK_TAG: &str = "gateway.k8s.aws.alb/stack";

pub(super) fn from<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
    serde_json::from_value(v).expect("an object of our types")
}

pub(super) fn condition<'a>(
    conds: &'a [k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    type_: &str,
) -> Option<(&'a str, &'a str, &'a str)> {
    conds.iter().find(|c| c.type_ == type_).map(|c| (c.status.as_str(), c.reason.as_str(), c.message.as_str()))
}

/// The non-default rules of the port-80 listener: (priority, path values, target group ARNs).
async fn rules(elb: &elbv2::Client, lb: &str) -> Vec<(String, Vec<String>, Vec<String>)> {
    let ls = elb.describe_listeners().load_balancer_arn(lb).send().await.expect("listeners");
    let Some(l) = ls.listeners().iter().find(|l| l.port() == Some(80)) else { return vec![] };
    let rs = elb.describe_rules().listener_arn(l.listener_arn().unwrap()).send().await.expect("rules");
    let mut out: Vec<_> = rs
        .rules()
        .iter()
        .filter(|r| r.is_default() != Some(true))
        .map(|r| {
            let paths = r
                .conditions()
                .iter()
                .filter(|c| c.field() == Some("path-pattern"))
                .flat_map(|c| c.path_pattern_config().map(|p| p.values().to_vec()).unwrap_or_default())
                .collect();
            let tgs = r
                .actions()
                .iter()
                .flat_map(|a| a.forward_config().map(|f| f.target_groups().to_vec()).unwrap_or_default())
                .filter_map(|t| t.target_group_arn().map(String::from))
                .collect();
            (r.priority().unwrap_or_default().to_string(), paths, tgs)
        })
        .collect();
    out.sort();
    out
}

/// What both Gateway tests start from, in namespace `ns`: two pods behind Service `web` (port 80 to
/// 8080), a GatewayClass of ours, Gateway `gw` with one HTTP listener on 80, and HTTPRoute `web`
/// sending `/api` to the Service.
pub(super) struct Scene {
    pub class_name: String,
    pub classes: Api<GatewayClass>,
    pub gateways: Api<Gateway>,
    pub routes: Api<HTTPRoute>,
}

pub(super) async fn scene(env: &Env, client: &kube::Client, ns: &str) -> Scene {
    env.pods(&["create", ns, "web", "--replicas", "2", "--port", "8080", "--terminate-seconds", "2"]);
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    services
        .create(&PostParams::default(), &kube_util::backend_service("web", "web", None, BTreeMap::new()))
        .await
        .expect("create Service");

    let class_name = unique("alb");
    let classes: Api<GatewayClass> = Api::all(client.clone());
    let class: GatewayClass = from(json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
        "metadata": {"name": class_name}, "spec": {"controllerName": Flavor::ALB_CONTROLLER}
    }));
    classes.create(&PostParams::default(), &class).await.expect("create GatewayClass");
    let gateways: Api<Gateway> = Api::namespaced(client.clone(), ns);
    let gw: Gateway = from(json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "gw", "namespace": ns},
        "spec": {"gatewayClassName": class_name, "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}
    }));
    gateways.create(&PostParams::default(), &gw).await.expect("create Gateway");
    let routes: Api<HTTPRoute> = Api::namespaced(client.clone(), ns);
    let route: HTTPRoute = from(json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {
            "parentRefs": [{"name": "gw"}],
            "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/api"}}],
                       "backendRefs": [{"name": "web", "port": 80}]}]
        }
    }));
    routes.create(&PostParams::default(), &route).await.expect("create HTTPRoute");
    Scene { class_name, classes, gateways, routes }
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn an_alb_gateway_follows_its_http_route_and_goes_with_it() {
    let Some(env) = Env::require("alb_gateway") else { return };
    let client = kube_util::client(&env).await;
    let elb = aws::elbv2(&env).await;
    let emu = Emulator::new(env.aws_endpoint());
    let ns = unique("gw-alb");
    kube_util::namespace(&client, &ns, &[]).await;
    let Scene { class_name, classes, gateways, routes } = scene(&env, &client, &ns).await;

    let mark = emu.mark().await;
    let ctl = ControllerProc::start(
        &env,
        &ns,
        "lbc-e2e-gw",
        &["--feature-gates=ALBGatewayAPI=true", "--default-target-type=ip", "--enable-service-controller=false"],
    );

    // The class is accepted; the Gateway is programmed with the ALB's DNS name.
    eventually("GatewayClass Accepted", 60, || async {
        let c = classes.get(&class_name).await.ok()?;
        let conds = c.status?.conditions;
        (condition(&conds, "Accepted")?.0 == "True").then_some(())
    })
    .await;
    let address = eventually("Gateway Programmed with an address", 120, || async {
        let s = gateways.get("gw").await.ok()?.status?;
        let programmed = condition(&s.conditions, "Programmed")?;
        (programmed.0 == "True").then(|| s.addresses.first().map(|a| a.value.clone()))?
    })
    .await;
    let stack = format!("{ns}/gw");
    let (lbs, tgs) = aws::stack_arns(&elb, STACK_TAG, &stack).await;
    assert_eq!((lbs.len(), tgs.len()), (1, 1), "one ALB and one target group");
    let described = elb.describe_load_balancers().load_balancer_arns(&lbs[0]).send().await.unwrap();
    let lb = &described.load_balancers()[0];
    assert_eq!(lb.dns_name().map(str::to_ascii_lowercase), Some(address.clone()));
    assert_eq!(lb.r#type().map(|t| t.as_str()), Some("application"));
    let got = rules(&elb, &lbs[0]).await;
    assert_eq!(got, vec![("1".into(), vec!["/api".into(), "/api/*".into()], vec![tgs[0].clone()])], "{got:?}");

    // The Gateway's listener and the route's parent entry.
    let s = gateways.get("gw").await.unwrap().status.unwrap();
    assert_eq!(condition(&s.conditions, "Accepted").map(|c| c.0), Some("True"));
    let l = &s.listeners[0];
    assert_eq!((l.name.as_str(), l.attached_routes), ("http", 1));
    assert_eq!(condition(&l.conditions, "Programmed").map(|c| c.0), Some("True"));
    let r = routes.get("web").await.unwrap();
    let parents = r.status.expect("route status").parents;
    assert_eq!(parents.len(), 1, "{parents:?}");
    assert_eq!(parents[0].controller_name, Flavor::ALB_CONTROLLER);
    assert_eq!(condition(&parents[0].conditions, "Accepted").map(|c| c.0), Some("True"));
    assert_eq!(condition(&parents[0].conditions, "ResolvedRefs").map(|c| c.0), Some("True"));

    // The pods are registered through the binding the Gateway made.
    let tgbs: Api<TargetGroupBinding> = Api::namespaced(client.clone(), &ns);
    let list = tgbs.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(list.len(), 1);
    let labels = list[0].metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("gateway.k8s.aws.alb/stack-name").map(String::as_str), Some("gw"), "{labels:?}");
    assert_eq!(list[0].spec.target_group_arn.as_deref(), Some(tgs[0].as_str()));
    let want: std::collections::BTreeSet<String> =
        env.pod_ips(&ns, "web").into_iter().map(|ip| format!("{ip}:8080")).collect();
    eventually("the pods registered", 60, || async { (aws::registered(&elb, &tgs[0]).await == want).then_some(()) })
        .await;
    let created = emulator::writes(&emu.calls(mark, None).await.0, &ctl.access_key);
    eprintln!("writes to create: {} {created:?}", created.len());

    // Steady state: a pass after everything is in place writes nothing.
    let poke = || kube_util::poke(&gateways, "gw");
    ctl.settled(CONTROLLER, "the ALB in place", poke).await;
    let quiet = emu.mark().await;
    ctl.settled(CONTROLLER, "a resync", poke).await;
    assert_eq!(emulator::writes(&emu.calls(quiet, None).await.0, &ctl.access_key), Vec::<String>::new());

    // The GatewayClass goes: a cluster-level mistake freezes the Gateway, it never deletes its ALB.
    let mark = emu.mark().await;
    classes.delete(&class_name, &DeleteParams::default()).await.expect("delete GatewayClass");
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), &ns);
    let frozen = eventually("a GatewayClassMissing Warning on the Gateway", 60, || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items.into_iter().find(|e| e.reason.as_deref() == Some("GatewayClassMissing")).and_then(|e| e.note)
    })
    .await;
    assert!(frozen.contains("left as it is"), "{frozen}");
    ctl.settled(CONTROLLER, "the frozen Gateway", poke).await;
    assert_eq!(emulator::writes(&emu.calls(mark, None).await.0, &ctl.access_key), Vec::<String>::new());
    assert_eq!(aws::stack_arns(&elb, STACK_TAG, &stack).await, (lbs.clone(), tgs.clone()), "the ALB stays");
    let class: GatewayClass = from(json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
        "metadata": {"name": class_name}, "spec": {"controllerName": Flavor::ALB_CONTROLLER}
    }));
    classes.create(&PostParams::default(), &class).await.expect("create the GatewayClass again");
    ctl.settled(CONTROLLER, "the class back", poke).await;
    assert_eq!(emulator::writes(&emu.calls(mark, None).await.0, &ctl.access_key), Vec::<String>::new());

    // An HTTPS listener with a route whose certificate this controller cannot read (it reads no
    // Secrets: gateway_api/certificates.rs runs the one that does): the whole Gateway waits.
    let https = json!({"spec": {"listeners": [
        {"name": "http", "port": 80, "protocol": "HTTP"},
        {"name": "https", "port": 443, "protocol": "HTTPS", "tls": {"certificateRefs": [{"name": "cert"}]}}
    ]}});
    let mark = emu.mark().await;
    gateways.patch("gw", &PatchParams::default(), &Patch::Merge(https)).await.expect("add HTTPS listener");
    let message = eventually("Gateway Programmed False", 60, || async {
        let s = gateways.get("gw").await.ok()?.status?;
        let (status, reason, message) = condition(&s.conditions, "Programmed")?;
        (status == "False" && reason == "Invalid").then(|| message.to_string())
    })
    .await;
    assert!(message.contains("--enable-gateway-certificate-secrets"), "{message}");
    ctl.settled(CONTROLLER, "the refusal", poke).await;
    assert_eq!(
        emulator::writes(&emu.calls(mark, None).await.0, &ctl.access_key),
        Vec::<String>::new(),
        "a refused Gateway changes nothing in AWS"
    );
    assert_eq!(aws::stack_arns(&elb, STACK_TAG, &stack).await, (lbs.clone(), tgs.clone()));

    // Deleting the Gateway deletes its stack, its binding and its entry in the route's status.
    gateways.delete("gw", &DeleteParams::default()).await.expect("delete Gateway");
    eventually("the Gateway gone", 120, || async { gateways.get_opt("gw").await.ok()?.is_none().then_some(()) }).await;
    assert_eq!(aws::stack_arns(&elb, STACK_TAG, &stack).await, (vec![], vec![]), "nothing of the stack left");
    assert!(tgbs.list(&ListParams::default()).await.unwrap().items.is_empty(), "the binding is gone");
    let parents = routes.get("web").await.unwrap().status.map(|s| s.parents).unwrap_or_default();
    assert!(parents.is_empty(), "{parents:?}");

    drop(ctl);
    kube_util::delete_namespace(&client, &ns).await;
    let _ = classes.delete(&class_name, &DeleteParams::default()).await;
}
