//! Drop-in, proven with the real ALBC (issue 17 item 6): ALBC builds an NLB for an annotated
//! Service and one ALB for a two-namespace IngressGroup (with its TargetGroupBindings and
//! targets); it stops and our controller takes over with no mutating AWS call and the same ARNs
//! and targets. Then the reverse: what our controller built, ALBC adopts without recreating it.
//! Both controllers watch every namespace; they never run at the same time.

use aws_sdk_elasticloadbalancingv2 as elbv2;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use lbc_e2e::albc::{AlbcProc, require_albc, sum_lines};
use lbc_e2e::controller::ControllerProc;
use lbc_e2e::emulator::{Call, Emulator};
use lbc_e2e::{Env, aws, eventually, kube_util, unique};
use lbc_model::crd::TargetGroupBinding;
use serde_json::json;
use std::collections::BTreeMap;

const ALB: &str = "alb.ingress.kubernetes.io";
/// Pods with a readiness gate (set `web-g`, label `app=web`: behind the Ingress group only).
const GATED: &str = "web-g";
const NLB: &str = "service.beta.kubernetes.io";

fn nlb_service(name: &str, set: &str) -> Service {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "annotations": {
            format!("{NLB}/aws-load-balancer-type"): "external",
            format!("{NLB}/aws-load-balancer-nlb-target-type"): "ip",
            format!("{NLB}/aws-load-balancer-scheme"): "internal",
            format!("{NLB}/aws-load-balancer-manage-backend-security-group-rules"): "false",
        }},
        "spec": {"type": "LoadBalancer", "loadBalancerClass": "service.k8s.aws/nlb",
                 "selector": {"lbc-e2e/set": set},
                 "ports": [{"name": "tcp", "port": 80, "targetPort": 8080, "protocol": "TCP"}]},
    }))
    .expect("service")
}

fn member(name: &str, class: &str, group: Option<&str>, svc: &str, path: &str) -> Ingress {
    let mut ann = json!({
        format!("{ALB}/target-type"): "ip",
        format!("{ALB}/scheme"): "internal",
        format!("{ALB}/manage-backend-security-group-rules"): "false",
    });
    if let Some(g) = group {
        ann[format!("{ALB}/group.name")] = json!(g);
    }
    serde_json::from_value(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": name, "annotations": ann},
        "spec": {"ingressClassName": class, "rules": [{"http": {"paths": [
            {"path": path, "pathType": "Prefix",
             "backend": {"service": {"name": svc, "port": {"number": 80}}}}]}}]},
    }))
    .expect("ingress")
}

fn writes_of(calls: &[Call], key: &str) -> Vec<String> {
    lbc_e2e::emulator::writes(calls, key)
}

async fn hostname_of<K>(api: &Api<K>, name: &str) -> Option<String>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + serde::Serialize,
{
    let v = serde_json::to_value(api.get(name).await.ok()?).ok()?;
    v["status"]["loadBalancer"]["ingress"][0]["hostname"].as_str().map(str::to_string)
}

struct Scene {
    env: Env,
    client: Client,
    elb: elbv2::Client,
    emu: Emulator,
    ns1: String,
    ns2: String,
    class: String,
    group: String,
}

impl Scene {
    /// `ip:8080` of the pods Service `svc` selects: the NLB Services select set `web`; Service
    /// `web` (`app=web`) also the gated set `web-g`.
    fn selected(&self, ns: &str, svc: &str) -> std::collections::BTreeSet<String> {
        let mut ips = self.env.pod_ips(ns, "web");
        if svc == "web" {
            ips.extend(self.env.pod_ips(ns, GATED));
        }
        ips.into_iter().map(|ip| format!("{ip}:8080")).collect()
    }

    /// The binding of Service `web` in ns1 (named by whoever built the group: its readiness gate).
    async fn web_binding(&self) -> String {
        let tgbs: Api<TargetGroupBinding> = Api::namespaced(self.client.clone(), &self.ns1);
        let list = tgbs.list(&ListParams::default()).await.expect("list bindings");
        let b = list.items.iter().find(|b| b.spec.service_ref.name == "web").expect("binding of Service web");
        b.metadata.name.clone().expect("name")
    }

    /// Adds gated pod `web-g-<n>` (its gate, as the webhook would inject it, for `binding`) and
    /// waits until the running controller turns its gate True.
    async fn add_gated_pod(&self, n: u32, binding: &str) {
        let gate = format!("target-health.elbv2.k8s.aws/{binding}");
        let replicas = (n + 1).to_string();
        if n == 0 {
            self.env.pods(&[
                "create",
                &self.ns1,
                GATED,
                "--replicas",
                &replicas,
                "--port",
                "8080",
                "--labels",
                "app=web",
                "--readiness-gates",
                &gate,
            ]);
        } else {
            self.env.pods(&["scale", &self.ns1, GATED, "--replicas", &replicas]);
        }
        let pod = format!("{GATED}-{n}");
        eventually(&format!("gate of {pod} True"), 120, || async {
            (self.gate(&pod, &gate).await?.0 == "True").then_some(())
        })
        .await;
    }

    /// Status and last transition time of condition `gate` on pod `pod` of ns1.
    async fn gate(&self, pod: &str, gate: &str) -> Option<(String, String)> {
        let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(self.client.clone(), &self.ns1);
        let p = pods.get(pod).await.ok()?;
        let c = p.status?.conditions?.into_iter().find(|c| c.type_ == gate)?;
        Some((c.status, c.last_transition_time.map(|t| format!("{:?}", t.0)).unwrap_or_default()))
    }

    /// Every gated pod's gate: True, never transitioned since `before` was read.
    async fn gates_unchanged(&self, binding: &str, before: &[(String, (String, String))], when: &str) {
        let gate = format!("target-health.elbv2.k8s.aws/{binding}");
        for (pod, was) in before {
            assert_eq!(self.gate(pod, &gate).await.as_ref(), Some(was), "{when}: gate of {pod} changed");
        }
    }

    async fn gates_now(&self, binding: &str, n: u32) -> Vec<(String, (String, String))> {
        let gate = format!("target-health.elbv2.k8s.aws/{binding}");
        let mut out = Vec::new();
        for i in 0..n {
            let pod = format!("{GATED}-{i}");
            out.push((pod.clone(), self.gate(&pod, &gate).await.expect("gate condition")));
        }
        out
    }

    fn services(&self, ns: &str) -> Api<Service> {
        Api::namespaced(self.client.clone(), ns)
    }
    fn ingresses(&self, ns: &str) -> Api<Ingress> {
        Api::namespaced(self.client.clone(), ns)
    }
    /// Waits until the Service's NLB and the Ingresses' ALBs have hostnames and every binding of
    /// `namespaces` has its pods registered; returns the stacks' snapshots.
    async fn settled(
        &self,
        services: &[(&str, &str)],
        ingresses: &[(&str, &str)],
    ) -> Vec<BTreeMap<String, Vec<String>>> {
        for (ns, name) in services {
            let api = self.services(ns);
            eventually(&format!("NLB hostname of Service {ns}/{name}"), 120, || hostname_of(&api, name)).await;
        }
        for (ns, name) in ingresses {
            let api = self.ingresses(ns);
            eventually(&format!("ALB hostname of Ingress {ns}/{name}"), 120, || hostname_of(&api, name)).await;
        }
        for ns in [&self.ns1, &self.ns2] {
            let tgbs: Api<TargetGroupBinding> = Api::namespaced(self.client.clone(), ns);
            eventually(&format!("bindings of {ns} hold the pods"), 120, || async {
                let list = tgbs.list(&ListParams::default()).await.ok()?;
                if list.items.is_empty() {
                    return None;
                }
                for b in &list.items {
                    let arn = b.spec.target_group_arn.clone()?;
                    if aws::registered(&self.elb, &arn).await != self.selected(ns, &b.spec.service_ref.name) {
                        return None;
                    }
                }
                Some(())
            })
            .await;
        }
        let mut out = Vec::new();
        for (ns, name) in services {
            out.push(aws::stack_snapshot(&self.elb, "service.k8s.aws/stack", &format!("{ns}/{name}")).await);
        }
        out.push(aws::stack_snapshot(&self.elb, "ingress.k8s.aws/stack", &self.group).await);
        for (ns, name) in ingresses.iter().skip(2) {
            out.push(aws::stack_snapshot(&self.elb, "ingress.k8s.aws/stack", &format!("{ns}/{name}")).await);
        }
        out
    }
}

/// Our reconcile count for `controller` (a histogram's `_count`).
async fn our_reconciles(ctl: &ControllerProc, controller: &str) -> f64 {
    sum_lines(&ctl.metrics().await, &format!("awslbc_reconcile_duration_seconds_count{{controller=\"{controller}\"}}"))
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up) and the ALBC binary; e2e/test-all runs it"]
async fn albc_to_ours_and_back_without_recreating_anything() {
    let test = "albc_to_ours_and_back_without_recreating_anything";
    let Some(env) = Env::require(test) else { return };
    let Some(albc_bin) = require_albc(test) else { return };
    let client = kube_util::client(&env).await;
    let id = unique("adopt");
    let s = Scene {
        elb: aws::elbv2(&env).await,
        emu: Emulator::new(env.aws_endpoint()),
        ns1: format!("{id}-a"),
        ns2: format!("{id}-b"),
        class: id.clone(),
        group: id.clone(),
        client,
        env,
    };
    for ns in [&s.ns1, &s.ns2] {
        kube_util::namespace(&s.client, ns, &[]).await;
        s.env.pods(&["create", ns, "web", "--replicas", "2", "--port", "8080"]);
        s.env.pods(&["service", ns, "web", "--port", "80", "--target-port", "8080"]);
    }
    let classes: Api<IngressClass> = Api::all(s.client.clone());
    let ic: IngressClass = serde_json::from_value(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": s.class},
        "spec": {"controller": "ingress.k8s.aws/alb"}}))
    .expect("class");
    classes.create(&PostParams::default(), &ic).await.expect("create IngressClass");

    // 1. ALBC builds: an NLB for ns1/nlb, one ALB for the group of ns1/web + ns2/web.
    let albc =
        AlbcProc::start(&s.env, &albc_bin, &s.ns1, &format!("{id}-albc"), &["--enable-backend-security-group=false"]);
    s.services(&s.ns1).create(&PostParams::default(), &nlb_service("nlb", "web")).await.expect("create Service");
    for (ns, path) in [(&s.ns1, "/a"), (&s.ns2, "/b")] {
        let ing = member("web", &s.class, Some(&s.group), "web", path);
        s.ingresses(ns).create(&PostParams::default(), &ing).await.expect("create Ingress");
    }
    let services = [(s.ns1.as_str(), "nlb")];
    let group_members = [(s.ns1.as_str(), "web"), (s.ns2.as_str(), "web")];
    s.settled(&services, &group_members).await;
    // A pod gated on the group's binding in ns1: ALBC turns its gate True.
    let binding = s.web_binding().await;
    s.add_gated_pod(0, &binding).await;
    let built_by_albc = s.settled(&services, &group_members).await;
    eprintln!("ALBC built: {built_by_albc:#?}");
    let gates_by_albc = s.gates_now(&binding, 1).await;
    albc.terminate();

    // 2. Ours takes over: its first passes (counted in its metrics) make no mutating call.
    let mark = s.emu.mark().await;
    let ours = ControllerProc::start(
        &s.env,
        &s.ns1,
        &format!("{id}-ours"),
        &["--watch-namespace=", "--enable-service-controller=true"],
    );
    eventually("our first passes over the Service, the group and the 3 bindings", 120, || async {
        let done = our_reconciles(&ours, "service").await >= 1.0
            && our_reconciles(&ours, "ingress").await >= 1.0
            && our_reconciles(&ours, "targetgroupbinding").await >= 3.0;
        done.then_some(())
    })
    .await;
    let (calls, _) = s.emu.calls(mark, None).await;
    let ours_writes = writes_of(&calls, &ours.access_key);
    let adopted = s.settled(&services, &group_members).await;
    assert_eq!(adopted, built_by_albc, "same load balancers, listeners, rules, target groups and targets");
    assert_eq!(ours_writes, Vec::<String>::new(), "taking over from ALBC writes nothing to AWS");
    // Readiness gates: ALBC's True gate is left alone; a new gated pod gets its gate from ours.
    s.gates_unchanged(&binding, &gates_by_albc, "after ours took over").await;
    s.add_gated_pod(1, &binding).await;

    // 3. Ours builds more (an NLB and an Ingress of its own in ns2), then hands over to ALBC.
    s.services(&s.ns2).create(&PostParams::default(), &nlb_service("nlb", "web")).await.expect("create Service 2");
    let solo = member("solo", &s.class, None, "web", "/solo");
    s.ingresses(&s.ns2).create(&PostParams::default(), &solo).await.expect("create Ingress solo");
    let services2 = [(s.ns1.as_str(), "nlb"), (s.ns2.as_str(), "nlb")];
    let ingresses2 = [(s.ns1.as_str(), "web"), (s.ns2.as_str(), "web"), (s.ns2.as_str(), "solo")];
    let built_by_ours = s.settled(&services2, &ingresses2).await;
    let gates_by_ours = s.gates_now(&binding, 2).await;
    ours.terminate();

    let mark = s.emu.mark().await;
    let albc =
        AlbcProc::start(&s.env, &albc_bin, &s.ns1, &format!("{id}-albc"), &["--enable-backend-security-group=false"]);
    // controller-runtime's counters: one successful pass per Service and Ingress group at least.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    loop {
        let m = albc.metrics().await;
        let ok = |c: &str| {
            sum_lines(&m, &format!("controller_runtime_reconcile_total{{controller=\"{c}\",result=\"success\"}}"))
        };
        // ALBC's binding passes end in `requeue_after` here: after registering targets it wants each
        // node's providerID for security-group work, which the local nodes lack (as on RKE2).
        let tgb_passes = ok("targetGroupBinding")
            + sum_lines(
                &m,
                "controller_runtime_reconcile_total{controller=\"targetGroupBinding\",result=\"requeue_after\"}",
            );
        if ok("service") >= 2.0 && ok("ingress") >= 2.0 && tgb_passes >= 6.0 {
            break;
        }
        if std::time::Instant::now() > deadline {
            let counts: Vec<&str> = m.lines().filter(|l| l.starts_with("controller_runtime_reconcile_total")).collect();
            let errors: Vec<String> =
                albc.log_text().lines().filter(|l| l.contains("error")).map(str::to_string).collect();
            let tail: Vec<&String> = errors.iter().rev().take(15).collect();
            panic!(
                "ALBC did not finish its passes over what ours built in 180 s: {counts:#?}\nits last errors: {tail:#?}"
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    let (calls, _) = s.emu.calls(mark, None).await;
    let albc_writes = writes_of(&calls, &albc.access_key);
    let readopted = s.settled(&services2, &ingresses2).await;
    eprintln!("ALBC's writes when it took over from ours: {albc_writes:?}");
    assert_eq!(readopted, built_by_ours, "ALBC keeps what ours built: same ARNs, actions and targets");
    assert_eq!(albc_writes, Vec::<String>::new(), "ALBC takes over what ours built without a write");
    s.gates_unchanged(&binding, &gates_by_ours, "after ALBC took over").await;
    s.add_gated_pod(2, &binding).await;

    // 4. Clean up with ALBC, the current owner: everything goes.
    for (ns, name) in services2 {
        s.services(ns).delete(name, &DeleteParams::default()).await.expect("delete Service");
    }
    for (ns, name) in ingresses2 {
        s.ingresses(ns).delete(name, &DeleteParams::default()).await.expect("delete Ingress");
    }
    for (ns, name) in ingresses2 {
        let api = s.ingresses(ns);
        eventually(&format!("Ingress {ns}/{name} gone"), 120, || async {
            api.get_opt(name).await.ok()?.is_none().then_some(())
        })
        .await;
    }
    for (ns, name) in services2 {
        let api = s.services(ns);
        eventually(&format!("Service {ns}/{name} gone"), 120, || async {
            api.get_opt(name).await.ok()?.is_none().then_some(())
        })
        .await;
    }
    drop(albc);
    classes.delete(&s.class, &DeleteParams::default()).await.expect("delete IngressClass");
    for ns in [&s.ns1, &s.ns2] {
        kube_util::delete_namespace(&s.client, ns).await;
    }
}
