//! Issue 32, ownership: a namespace tenant (its own namespace, the built-in `admin` role there, a
//! real ServiceAccount token: `lbc_e2e::tenant`) attacks another team's target group, load
//! balancer or stack through the objects it may write. Each test runs the attack with the
//! controller in its default (drop-in) mode and asserts, from the AWS emulator's call log, that the
//! controller made no write to the victim's resources and that the victim's targets are unchanged.
//! Each waits for proof that the controller handled the attacker's objects (a status, an event)
//! before it asserts that nothing happened.

use aws_sdk_elasticloadbalancingv2 as elbv2;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, DeleteParams, PostParams};
use kube::Client;
use lbc_e2e::controller::ControllerProc;
use lbc_e2e::emulator::{Emulator, writes};
use lbc_e2e::fixture::TgbScene;
use lbc_e2e::tenant::Tenant;
use lbc_e2e::{aws, eventually, kube_util, unique};
use lbc_model::crd::TargetGroupBinding;
use serde_json::json;
use std::collections::BTreeSet;

/// The victim: a team's pods registered in its target group by a controller watching its
/// namespace; and the attacker's controller watching the attacker's namespace (same cluster name).
struct Scene {
    victim: TgbScene,
    _victim_ctl: ControllerProc,
    /// `ip:8080` of the victim's pods, registered.
    targets: BTreeSet<String>,
    tenant: Tenant,
}

impl Scene {
    async fn new(test: &str) -> Option<Self> {
        let victim = TgbScene::setup(test, 2, false).await?;
        let victim_ctl = victim.controller(&[]);
        let targets = victim.expected("web");
        victim.wait_targets("the victim's pods registered", &targets).await;
        let tenant = Tenant::create(&victim.client, &victim.env, &unique("attacker"), &[]).await;
        Some(Self { victim, _victim_ctl: victim_ctl, targets, tenant })
    }

    fn admin(&self) -> &Client {
        &self.victim.client
    }

    fn emu(&self) -> &Emulator {
        &self.victim.emu
    }

    fn elb(&self) -> &elbv2::Client {
        &self.victim.elb
    }

    /// A controller for the attacker's namespace.
    fn attacker_controller(&self) -> ControllerProc {
        ControllerProc::start(&self.victim.env, &self.tenant.namespace, "lbc-e2e-leader", &[])
    }

    /// The tenant's own API handle for kind `K` in its namespace.
    fn tenant_api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.tenant.client.clone(), &self.tenant.namespace)
    }

    /// As the tenant: a Service `name` (80 → 8080) selecting no pod at all.
    async fn tenant_service(&self, name: &str) {
        let svc: Service = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"selector": {"app": format!("{name}-no-pods")}, "ports": [{"port": 80, "targetPort": 8080}]},
        }))
        .expect("Service");
        self.tenant_api::<Service>()
            .create(&PostParams::default(), &svc)
            .await
            .expect("the tenant creates its Service");
    }

    /// As the tenant: a binding `name` of its Service `name` to `arn`, with `spec` merged in.
    async fn tenant_binding(&self, name: &str, arn: &str, spec: serde_json::Value) -> TargetGroupBinding {
        let mut body = json!({
            "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
            "metadata": {"name": name},
            "spec": {"serviceRef": {"name": name, "port": 80}, "targetGroupARN": arn, "targetType": "ip"},
        });
        if let (Some(base), Some(extra)) = (body["spec"].as_object_mut(), spec.as_object()) {
            base.extend(extra.clone());
        }
        let tgb: TargetGroupBinding = serde_json::from_value(body).expect("binding");
        self.tenant_api::<TargetGroupBinding>()
            .create(&PostParams::default(), &tgb)
            .await
            .expect("the tenant creates its binding")
    }

    /// Waits until the controller has reconciled the tenant's binding `name` (its Ready condition
    /// set for the current generation); returns the binding.
    async fn reconciled(&self, name: &str) -> TargetGroupBinding {
        let api = self.tenant_api::<TargetGroupBinding>();
        eventually(&format!("the tenant's binding {name} reconciled"), 60, || async {
            let b = api.get_opt(name).await.ok()??;
            let st = b.status.as_ref()?;
            let ready = st.conditions.iter().find(|c| c.type_ == "Ready")?;
            (ready.observed_generation == b.metadata.generation).then_some(b.clone())
        })
        .await
    }

    /// As the tenant: deletes binding `name` and waits until it is gone (its finalizer ran).
    async fn tenant_deletes_binding(&self, name: &str) {
        let api = self.tenant_api::<TargetGroupBinding>();
        api.delete(name, &DeleteParams::default()).await.expect("the tenant deletes its binding");
        eventually(&format!("the tenant's binding {name} gone"), 60, || async {
            api.get_opt(name).await.ok()?.is_none().then_some(())
        })
        .await;
    }

    /// No AWS write by `ctl` to the victim's target group since `mark`, and the victim's targets
    /// are what they were.
    async fn victim_untouched(&self, ctl: &ControllerProc, mark: u64, when: &str) {
        let (calls, _) = self.emu().calls(mark, Some(&self.victim.arn)).await;
        assert_eq!(
            writes(&calls, &ctl.access_key),
            Vec::<String>::new(),
            "{when}: the attacker's controller wrote to the victim's target group {}",
            self.victim.arn
        );
        assert_eq!(aws::registered(self.elb(), &self.victim.arn).await, self.targets, "{when}: the victim's targets");
    }

    async fn cleanup(self) {
        kube_util::delete_namespace(self.admin(), &self.tenant.namespace).await;
        self.victim.cleanup().await;
    }
}

/// Finding "ConfigMap spoofing": a multi-cluster binding's record of "the targets this binding
/// registered" was read from ConfigMap `aws-lbc-targets-<binding>` in the tenant's own namespace.
/// The tenant binds the victim's target group with `multiClusterTargetGroup: true` (a Service
/// without pods, so it registers nothing) and lists the victim's targets in that ConfigMap: the
/// controller deregistered them. Now the record is `status.ownedTargets` (the tenant cannot write
/// the status subresource) and the ConfigMap is read once, adopting only the binding's own
/// endpoints: nothing is deregistered, neither by the sync nor by the binding's deletion.
#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn a_forged_multi_cluster_configmap_deregisters_nothing_of_the_victims() {
    let Some(s) = Scene::new("attack_configmap").await else { return };
    s.tenant_service("web").await;
    let forged: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "aws-lbc-targets-web"},
        "data": {"targets": s.targets.iter().cloned().collect::<Vec<_>>().join(",")},
    }))
    .expect("ConfigMap");
    s.tenant_api::<ConfigMap>().create(&PostParams::default(), &forged).await.expect("the tenant writes its ConfigMap");
    // The tenant cannot forge the record where it is kept now.
    let denied = s
        .tenant_api::<TargetGroupBinding>()
        .patch_status(
            "web",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"status": {"ownedTargets": ["10.0.0.1:8080"]}})),
        )
        .await;
    assert!(denied.is_err(), "the tenant must not write a binding's status");

    let mark = s.emu().mark().await;
    let ctl = s.attacker_controller();
    s.tenant_binding("web", &s.victim.arn, json!({"multiClusterTargetGroup": true})).await;
    let b = s.reconciled("web").await;
    s.victim_untouched(&ctl, mark, "after the sync").await;
    let record = b.status.and_then(|st| st.owned_targets);
    assert_eq!(record, Some(vec![]), "nothing of the forged ConfigMap adopted");

    s.tenant_deletes_binding("web").await;
    s.victim_untouched(&ctl, mark, "after the binding's deletion").await;
    ctl.terminate();
    s.cleanup().await;
}
