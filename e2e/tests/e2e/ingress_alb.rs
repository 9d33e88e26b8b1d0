//! Ingress → ALB end to end: the real controller binary, the real kube-apiserver (EndpointSlices
//! from kube-controller-manager, pods from kwok) and the AWS emulator. Writes are checked in the
//! emulator's call log, counting only this controller's calls (its access key).

use aws_sdk_elasticloadbalancingv2 as elbv2;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::{
    HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressBackend, IngressClass, IngressClassSpec, IngressRule,
    IngressServiceBackend, IngressSpec, IngressTLS, ServiceBackendPort,
};
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use lbc_e2e::controller::ControllerProc;
use lbc_e2e::emulator::{self, Emulator};
use lbc_e2e::{Env, aws, eventually, kube_util, unique};
use lbc_model::crd::TargetGroupBinding;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

const ALB: &str = "alb.ingress.kubernetes.io";

/// Freeze, don't delete; no cross-namespace replacement (issue 14).
#[path = "ingress_alb/freeze.rs"]
mod freeze;

/// IngressClassParams honoured or refused, never ignored (issue 17).
#[path = "ingress_alb/params.rs"]
mod params;

/// Security annotations that cannot be applied fail closed (issue 33).
#[path = "ingress_alb/fail_closed.rs"]
mod fail_closed;

/// `mutual-authentication` on the group's HTTPS listeners (issue 33).
#[path = "ingress_alb/mtls.rs"]
mod mtls;

/// `jwt-validation` on the rules of HTTPS listeners (issue 33).
#[path = "ingress_alb/jwt.rs"]
mod jwt;

/// `transforms.<name>`: host-header and URL rewrites (issue 33).
#[path = "ingress_alb/transforms.rs"]
mod transforms;

/// `target-control-port.<service>.<port>`: the ALB target optimizer's port (issue 33).
#[path = "ingress_alb/target_control.rs"]
mod target_control;

/// `enable-frontend-nlb`: an NLB in front of the ALB (issue 33).
#[path = "ingress_alb/frontend_nlb.rs"]
mod frontend_nlb;

/// `create-acm-cert` with `acm-pca-arn` (gate EnableCertificateManagement, issue 33).
#[path = "ingress_alb/created_certificates.rs"]
mod created_certificates;

/// The group test's controller watches every namespace: the tests of this file run one at a time
/// so no two controllers reconcile the same Ingress.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

struct Fixture {
    env: Env,
    client: Client,
    elb: elbv2::Client,
    emu: Emulator,
}

async fn setup(test: &str) -> Option<Fixture> {
    let env = Env::require(test)?;
    let client = kube_util::client(&env).await;
    let elb = aws::elbv2(&env).await;
    let emu = Emulator::new(env.aws_endpoint());
    Some(Fixture { env, client, elb, emu })
}

fn ns_name(test: &str) -> String {
    unique(test.replace('_', "-")[..test.len().min(16)].trim_end_matches('-'))
}

fn service(name: &str, set: &str) -> Service {
    kube_util::backend_service(name, set, None, BTreeMap::new())
}

fn path(p: &str, svc: &str) -> HTTPIngressPath {
    HTTPIngressPath {
        path: Some(p.into()),
        path_type: "Prefix".into(),
        backend: IngressBackend {
            service: Some(IngressServiceBackend {
                name: svc.into(),
                port: Some(ServiceBackendPort { number: Some(80), ..Default::default() }),
            }),
            resource: None,
        },
    }
}

fn ingress(name: &str, paths: Vec<HTTPIngressPath>, annotations: &[(&str, &str)]) -> Ingress {
    let mut ann = BTreeMap::from([
        ("kubernetes.io/ingress.class".to_string(), "alb".to_string()),
        (format!("{ALB}/target-type"), "ip".to_string()),
        (format!("{ALB}/scheme"), "internet-facing".to_string()),
    ]);
    for (k, v) in annotations {
        ann.insert(format!("{ALB}/{k}"), v.to_string());
    }
    Ingress {
        metadata: ObjectMeta { name: Some(name.into()), annotations: Some(ann), ..Default::default() },
        spec: Some(IngressSpec {
            rules: Some(vec![IngressRule { host: None, http: Some(HTTPIngressRuleValue { paths }) }]),
            ..Default::default()
        }),
        status: None,
    }
}

/// One listener rule as the emulator holds it.
#[derive(Debug, PartialEq, Eq)]
struct SeenRule {
    arn: String,
    priority: String,
    paths: Vec<String>,
    target_groups: Vec<String>,
}

impl Fixture {
    fn ingresses(&self, ns: &str) -> Api<Ingress> {
        Api::namespaced(self.client.clone(), ns)
    }

    async fn namespace_with_backends(&self, ns: &str, backends: &[(&str, &str)]) {
        let services: Api<Service> = Api::namespaced(self.client.clone(), ns);
        for (svc, set) in backends {
            self.env.pods(&["create", ns, set, "--replicas", "2", "--port", "8080", "--terminate-seconds", "2"]);
            services.create(&PostParams::default(), &service(svc, set)).await.expect("create service");
        }
    }

    async fn hostname(&self, ns: &str, name: &str) -> Option<String> {
        let i = self.ingresses(ns).get_opt(name).await.ok()??;
        i.status?.load_balancer?.ingress?.first()?.hostname.clone()
    }

    /// Load balancers and target groups carrying `ingress.k8s.aws/stack=<stack>`.
    async fn stack_arns(&self, stack: &str) -> (Vec<String>, Vec<String>) {
        aws::stack_arns(&self.elb, "ingress.k8s.aws/stack", stack).await
    }

    /// The non-default rules of the load balancer's port-80 listener, by priority.
    async fn rules(&self, lb: &str) -> Vec<SeenRule> {
        let ls = self.elb.describe_listeners().load_balancer_arn(lb).send().await.expect("listeners");
        let l = ls.listeners().iter().find(|l| l.port() == Some(80)).expect("HTTP listener on 80");
        assert_eq!(l.protocol().map(|p| p.as_str()), Some("HTTP"));
        let rs = self.elb.describe_rules().listener_arn(l.listener_arn().unwrap()).send().await.expect("rules");
        let mut out: Vec<SeenRule> = rs
            .rules()
            .iter()
            .filter(|r| r.is_default() != Some(true))
            .map(|r| SeenRule {
                arn: r.rule_arn().unwrap_or_default().to_string(),
                priority: r.priority().unwrap_or_default().to_string(),
                paths: r
                    .conditions()
                    .iter()
                    .filter(|c| c.field() == Some("path-pattern"))
                    .flat_map(|c| {
                        c.path_pattern_config().map(|p| p.values().to_vec()).unwrap_or_else(|| c.values().to_vec())
                    })
                    .collect(),
                target_groups: r
                    .actions()
                    .iter()
                    .flat_map(|a| {
                        let single = a.target_group_arn().map(String::from);
                        let weighted = a
                            .forward_config()
                            .map(|f| f.target_groups().iter().filter_map(|t| t.target_group_arn().map(String::from)))
                            .into_iter()
                            .flatten();
                        single.into_iter().chain(weighted)
                    })
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect(),
            })
            .collect();
        out.sort_by_key(|r| r.priority.parse::<u32>().unwrap_or(u32::MAX));
        out
    }

    /// Waits until `ctl` has finished an Ingress reconcile that started after `what` was seen (Ingress
    /// `ns/name` is poked so that its group's runs): the proof a "no further writes" assertion needs.
    async fn settled(&self, ctl: &ControllerProc, ns: &str, name: &str, what: &str) {
        let api = self.ingresses(ns);
        ctl.settled("ingress", what, || kube_util::poke(&api, name)).await;
    }

    /// Replaces Ingress `ing` (by its name) in `ns` as a user's `kubectl replace` would: the
    /// current resource version, and the finalizers the controller added, kept.
    async fn replace_ingress(&self, ns: &str, mut ing: Ingress) {
        let api = self.ingresses(ns);
        let name = ing.metadata.name.clone().expect("a named Ingress");
        let current = api.get(&name).await.unwrap();
        ing.metadata.resource_version = current.metadata.resource_version.clone();
        ing.metadata.finalizers = current.metadata.finalizers.clone();
        api.replace(&name, &PostParams::default(), &ing).await.expect("replace ingress");
    }

    /// The deployment of Ingress `ns/name` is done and stays done: `pods` targets registered in
    /// `target_group`, a reconcile after that, and a resync after it that writes nothing.
    async fn deployed_and_quiet(&self, ctl: &ControllerProc, ns: &str, name: &str, target_group: &str, pods: usize) {
        eventually(&format!("{pods} pods registered in {target_group}"), 60, || async {
            (aws::registered(&self.elb, target_group).await.len() == pods).then_some(())
        })
        .await;
        self.settled(ctl, ns, name, "the deployment").await;
        let mark = self.emu.mark().await;
        self.settled(ctl, ns, name, "a resync").await;
        assert_eq!(self.writes_since(mark, ctl).await, Vec::<String>::new(), "no write without a change");
    }

    /// Write calls (anything but Describe*) `ctl` made since `mark`.
    async fn writes_since(&self, mark: u64, ctl: &ControllerProc) -> Vec<String> {
        let (calls, _) = self.emu.calls(mark, None).await;
        emulator::writes(&calls, &ctl.access_key)
    }

    /// All calls `ctl` made since `mark`, per operation.
    async fn calls_since(&self, mark: u64, ctl: &ControllerProc) -> BTreeMap<String, usize> {
        let (calls, _) = self.emu.calls(mark, None).await;
        let mut out = BTreeMap::new();
        for c in calls.iter().filter(|c| c.access_key.as_deref() == Some(ctl.access_key.as_str())) {
            *out.entry(c.operation.clone()).or_default() += 1;
        }
        out
    }

    async fn target_group_of_service(&self, tgs: &[String], svc_ns: &str, tgb_name_part: &str) -> String {
        let tgbs: Api<TargetGroupBinding> = Api::namespaced(self.client.clone(), svc_ns);
        let list = tgbs.list(&ListParams::default()).await.unwrap();
        let tgb = list
            .items
            .iter()
            .find(|t| t.spec.service_ref.name == tgb_name_part)
            .unwrap_or_else(|| panic!("a binding for Service {svc_ns}/{tgb_name_part}"));
        let arn = tgb.spec.target_group_arn.clone().expect("binding has the target group ARN");
        assert!(tgs.contains(&arn), "binding's target group {arn} is one of the stack's {tgs:?}");
        arn
    }
}

/// Notes of the events of `reason` about object `name`, in namespace `ns`.
async fn notes(f: &Fixture, ns: &str, reason: &str, name: &str) -> Vec<String> {
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(f.client.clone(), ns);
    let Ok(list) = events.list(&ListParams::default()).await else { return vec![] };
    list.items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .filter_map(|e| e.note)
        .collect()
}

fn summarize(calls: &BTreeMap<String, usize>) -> String {
    let total: usize = calls.values().sum();
    format!("{total} calls: {calls:?}")
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn ingress_with_two_paths_gets_an_alb_with_rules_and_is_cleaned_up() {
    let _serial = SERIAL.lock().await;
    let Some(f) = setup("ingress_alb_single").await else { return };
    let ns = ns_name("ing_single");
    f.namespace_with_backends(&ns, &[("svc-a", "a"), ("svc-b", "b")]).await;
    let ctl = ControllerProc::start(&f.env, &ns, "lbc-e2e-ing", &["--enable-service-controller=false"]);
    let mark = f.emu.mark().await;
    let ing = ingress("web", vec![path("/a", "svc-a"), path("/b", "svc-b")], &[]);
    f.ingresses(&ns).create(&PostParams::default(), &ing).await.expect("create ingress");

    let host = eventually("status.loadBalancer hostname", 90, || f.hostname(&ns, "web")).await;
    let stack = format!("{ns}/web");
    let (lbs, tgs) = f.stack_arns(&stack).await;
    assert_eq!((lbs.len(), tgs.len()), (1, 2), "one ALB and a target group per backend");
    let lb = f.elb.describe_load_balancers().load_balancer_arns(&lbs[0]).send().await.unwrap();
    let lb = &lb.load_balancers()[0];
    assert_eq!(lb.dns_name(), Some(host.as_str()));
    assert_eq!(lb.r#type().map(|t| t.as_str()), Some("application"));
    assert!(lb.availability_zones().len() >= 2, "an ALB spans two AZs at least");

    let tg_a = f.target_group_of_service(&tgs, &ns, "svc-a").await;
    let tg_b = f.target_group_of_service(&tgs, &ns, "svc-b").await;
    let rules = f.rules(&lbs[0]).await;
    assert_eq!(rules.len(), 2, "{rules:?}");
    assert_eq!((rules[0].priority.as_str(), rules[1].priority.as_str()), ("1", "2"), "{rules:?}");
    assert!(rules[0].paths.contains(&"/a".to_string()) && rules[0].target_groups == [tg_a.clone()], "{rules:?}");
    assert!(rules[1].paths.contains(&"/b".to_string()) && rules[1].target_groups == [tg_b.clone()], "{rules:?}");
    for (tg, set) in [(&tg_a, "a"), (&tg_b, "b")] {
        let want: BTreeSet<String> = f.env.pod_ips(&ns, set).into_iter().map(|ip| format!("{ip}:8080")).collect();
        eventually(&format!("pods of {set} registered"), 60, || async {
            (aws::registered(&f.elb, tg).await == want).then_some(())
        })
        .await;
    }
    let ing = f.ingresses(&ns).get("web").await.unwrap();
    assert!(ing.metadata.finalizers.unwrap_or_default().contains(&"ingress.k8s.aws/resources".to_string()));
    let created = f.calls_since(mark, &ctl).await;
    eprintln!("create: {}", summarize(&created));
    for op in ["CreateSecurityGroup", "CreateTargetGroup", "CreateLoadBalancer", "CreateListener", "CreateRule"] {
        assert!(created.contains_key(op), "{op} in {created:?}");
    }

    // Steady state: a resync makes no write.
    let mark = f.emu.mark().await;
    f.settled(&ctl, &ns, "web", "the ALB in place").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "no write without a change");

    // One path changes: one rule is modified, nothing else.
    let mark = f.emu.mark().await;
    let patch = json!({"spec": {"rules": [{"http": {"paths": [
        {"path": "/a", "pathType": "Prefix", "backend": {"service": {"name": "svc-a", "port": {"number": 80}}}},
        {"path": "/c", "pathType": "Prefix", "backend": {"service": {"name": "svc-b", "port": {"number": 80}}}},
    ]}}]}});
    f.ingresses(&ns).patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    eventually("rule for /c", 60, || async {
        let r = f.rules(&lbs[0]).await;
        (r.len() == 2 && r[1].paths.contains(&"/c".to_string())).then_some(())
    })
    .await;
    f.settled(&ctl, &ns, "web", "the rule for /c").await;
    let updated = f.calls_since(mark, &ctl).await;
    eprintln!("update (one path): {}", summarize(&updated));
    assert_eq!(f.writes_since(mark, &ctl).await, ["ModifyRule"], "only the changed rule");

    // Invalid annotation: a Warning, nothing changed in AWS.
    let mark = f.emu.mark().await;
    let patch = json!({"metadata": {"annotations": {format!("{ALB}/healthcheck-interval-seconds"): "nope"}}});
    f.ingresses(&ns).patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    let note = eventually("FailedBuildModel event", 30, || async {
        let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(f.client.clone(), &ns);
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items.into_iter().filter(|e| e.reason.as_deref() == Some("FailedBuildModel")).find_map(|e| e.note)
    })
    .await;
    assert!(note.contains("healthcheck-interval-seconds"), "names the annotation: {note}");
    f.settled(&ctl, &ns, "web", "the FailedBuildModel Warning").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "bad input changes nothing in AWS");
    let patch = json!({"metadata": {"annotations": {format!("{ALB}/healthcheck-interval-seconds"): null}}});
    f.ingresses(&ns).patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();

    // Deleted: nothing of ours left, the Ingress goes away.
    let mark = f.emu.mark().await;
    f.ingresses(&ns).delete("web", &DeleteParams::default()).await.unwrap();
    eventually("Ingress gone", 120, || async { f.ingresses(&ns).get_opt("web").await.ok()?.is_none().then_some(()) })
        .await;
    let (lbs, tgs) = f.stack_arns(&stack).await;
    assert!(lbs.is_empty() && tgs.is_empty(), "left behind: {lbs:?} {tgs:?}");
    eprintln!("delete: {}", summarize(&f.calls_since(mark, &ctl).await));
    drop(ctl);
    kube_util::delete_namespace(&f.client, &ns).await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn a_group_of_two_namespaces_shares_one_alb_in_group_order() {
    let _serial = SERIAL.lock().await;
    let Some(f) = setup("ingress_alb_group").await else { return };
    let (ns1, ns2) = (ns_name("ing_group_one"), ns_name("ing_group_two"));
    f.namespace_with_backends(&ns1, &[("svc-a", "a")]).await;
    f.namespace_with_backends(&ns2, &[("svc-b", "b")]).await;
    let group = unique("e2e-group");
    // Selected through an IngressClass of ours (spec.ingressClassName), not the annotation.
    let classes: Api<IngressClass> = Api::all(f.client.clone());
    let class = IngressClass {
        metadata: ObjectMeta { name: Some(group.clone()), ..Default::default() },
        spec: Some(IngressClassSpec { controller: Some("ingress.k8s.aws/alb".into()), parameters: None }),
    };
    classes.create(&PostParams::default(), &class).await.expect("create IngressClass");
    // Every namespace: the group spans two.
    let ctl = ControllerProc::start(&f.env, "", "lbc-e2e-ing-group", &["--enable-service-controller=false"]);
    let order = |o: &'static str| [("group.name", group.as_str()), ("group.order", o)];
    let with_class = |mut i: Ingress| {
        i.metadata.annotations.as_mut().unwrap().remove("kubernetes.io/ingress.class");
        i.spec.as_mut().unwrap().ingress_class_name = Some(group.clone());
        i
    };
    // ns2's Ingress comes first (order 1), ns1's second (order 2).
    let first = with_class(ingress("first", vec![path("/first", "svc-b")], &order("1")));
    let second = with_class(ingress("second", vec![path("/second", "svc-a")], &order("2")));
    f.ingresses(&ns1).create(&PostParams::default(), &second).await.expect("create second");
    f.ingresses(&ns2).create(&PostParams::default(), &first).await.expect("create first");

    let h1 = eventually("hostname of first", 90, || f.hostname(&ns2, "first")).await;
    let h2 = eventually("hostname of second", 90, || f.hostname(&ns1, "second")).await;
    assert_eq!(h1, h2, "one ALB for the group");
    let (lbs, tgs) = eventually("two target groups", 60, || async {
        let (l, t) = f.stack_arns(&group).await;
        (l.len() == 1 && t.len() == 2).then_some((l, t))
    })
    .await;
    let rules = eventually("two rules", 60, || async {
        let r = f.rules(&lbs[0]).await;
        (r.len() == 2).then_some(r)
    })
    .await;
    assert!(rules[0].paths.contains(&"/first".to_string()), "group.order 1 first: {rules:?}");
    assert!(rules[1].paths.contains(&"/second".to_string()), "{rules:?}");
    for (ns, name) in [(&ns2, "first"), (&ns1, "second")] {
        let ing = f.ingresses(ns).get(name).await.unwrap();
        assert!(ing.metadata.finalizers.unwrap_or_default().contains(&format!("group.ingress.k8s.aws/{group}")));
    }

    // A member joins (order 3): its target group and rule are added, nothing else is touched.
    let want: BTreeSet<String> = f.env.pod_ips(&ns1, "a").into_iter().map(|ip| format!("{ip}:8080")).collect();
    for tg in &tgs {
        eventually("pods registered", 60, || async { (aws::registered(&f.elb, tg).await.len() == 2).then_some(()) })
            .await;
    }
    let mark = f.emu.mark().await;
    let third = with_class(ingress("third", vec![path("/third", "svc-a")], &order("3")));
    f.ingresses(&ns1).create(&PostParams::default(), &third).await.expect("create third");
    let joined = eventually("three rules", 60, || async {
        let r = f.rules(&lbs[0]).await;
        (r.len() == 3).then_some(r)
    })
    .await;
    assert_eq!((joined[0].arn.as_str(), joined[1].arn.as_str()), (rules[0].arn.as_str(), rules[1].arn.as_str()));
    assert!(joined[2].paths.contains(&"/third".to_string()), "group.order 3 last: {joined:?}");
    let tgs_joined = f.stack_arns(&group).await.1;
    assert_eq!(tgs_joined.len(), 3, "{tgs_joined:?}");
    let tg_third = tgs_joined.iter().find(|t| !tgs.contains(t)).unwrap().clone();
    eventually("third's pods registered", 60, || async {
        (aws::registered(&f.elb, &tg_third).await == want).then_some(())
    })
    .await;
    eventually("hostname of third", 60, || f.hostname(&ns1, "third")).await;
    f.settled(&ctl, &ns1, "third", "third's hostname").await;
    let (calls, _) = f.emu.calls(mark, None).await;
    // This controller watches every namespace: writes on other tests' target groups are not the group's.
    let mut written = emulator::writes_on(&calls, &ctl.access_key, &tgs_joined);
    written.sort();
    assert_eq!(
        written,
        ["CreateRule", "CreateTargetGroup", "RegisterTargets"],
        "only the joining member's parts: {:#?}\ncontroller log:\n{}",
        emulator::write_details(&calls, &ctl.access_key),
        ctl.log_tail(60)
    );

    // The first member leaves the group: only its rule and target group go.
    let tg_first = f.target_group_of_service(&tgs, &ns2, "svc-b").await;
    let mark = f.emu.mark().await;
    f.ingresses(&ns2).delete("first", &DeleteParams::default()).await.unwrap();
    eventually("first gone", 120, || async { f.ingresses(&ns2).get_opt("first").await.ok()?.is_none().then_some(()) })
        .await;
    // Its target group goes once its binding has deregistered the targets and is gone.
    let tgs_after = eventually("the leaving member's target group deleted", 60, || async {
        let tgs = f.stack_arns(&group).await.1;
        (!tgs.contains(&tg_first)).then_some(tgs)
    })
    .await;
    assert_eq!(tgs_after.len(), 2, "{tgs_after:?}");
    assert_eq!(f.stack_arns(&group).await.0, lbs, "the ALB stays");
    let rules = f.rules(&lbs[0]).await;
    assert_eq!(rules.len(), 2, "{rules:?}");
    assert!(rules[0].paths.contains(&"/second".to_string()), "{rules:?}");
    assert!(rules[1].paths.contains(&"/third".to_string()), "{rules:?}");
    let (calls, _) = f.emu.calls(mark, None).await;
    let written = emulator::writes_on(&calls, &ctl.access_key, &tgs_joined);
    assert!(!written.iter().any(|w| w == "DeleteLoadBalancer" || w == "DeleteListener"), "{written:?}");
    let at = |op: &str| written.iter().position(|w| w == op).unwrap_or_else(|| panic!("no {op}: {written:?}"));
    assert!(at("DeregisterTargets") < at("DeleteTargetGroup"), "targets leave before their group: {written:?}");

    // The last members go: nothing of ours left.
    for name in ["second", "third"] {
        f.ingresses(&ns1).delete(name, &DeleteParams::default()).await.unwrap();
    }
    eventually("second and third gone", 120, || async {
        let left = f.ingresses(&ns1).list(&ListParams::default()).await.ok()?;
        left.items.is_empty().then_some(())
    })
    .await;
    let (lbs, tgs) = f.stack_arns(&group).await;
    assert!(lbs.is_empty() && tgs.is_empty(), "left behind: {lbs:?} {tgs:?}");
    drop(ctl);
    classes.delete(&group, &DeleteParams::default()).await.expect("delete IngressClass");
    kube_util::delete_namespace(&f.client, &ns1).await;
    kube_util::delete_namespace(&f.client, &ns2).await;
}

/// `ing` with one rule per host (the first rule's paths) and `tls` hosts.
fn with_hosts(mut ing: Ingress, rule_hosts: &[String], tls: &[String]) -> Ingress {
    let spec = ing.spec.as_mut().expect("spec");
    let http = spec.rules.as_ref().and_then(|r| r.first()).and_then(|r| r.http.clone());
    spec.rules = Some(rule_hosts.iter().map(|h| IngressRule { host: Some(h.clone()), http: http.clone() }).collect());
    spec.tls = Some(vec![IngressTLS { hosts: Some(tls.to_vec()), secret_name: None }]);
    ing
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn https_without_certificate_arn_uses_the_acm_certificates_of_its_hosts() {
    let _serial = SERIAL.lock().await;
    let Some(f) = setup("ingress_alb_acm").await else { return };
    let ns = ns_name("ing_acm");
    f.namespace_with_backends(&ns, &[("svc-a", "a")]).await;
    // Certificates stay in the emulator across runs: one zone per run.
    let zone = unique("acm");
    let (example, other) = (format!("{zone}.example.test"), format!("{zone}.other.test"));
    let wildcard = aws::acm_import_certificate(&f.env, &[&format!("*.{example}")]).await;
    let api = aws::acm_import_certificate(&f.env, &[&format!("api.{other}"), &format!("www.{other}")]).await;
    // Covering none of the hosts: a wildcard one level down, an apex, another zone.
    for names in [format!("*.deep.{example}"), example.clone(), format!("api.{zone}.example.org")] {
        aws::acm_import_certificate(&f.env, &[&names]).await;
    }
    let ctl = ControllerProc::start(
        &f.env,
        &ns,
        "lbc-e2e-ing-acm",
        &["--enable-service-controller=false", "--sync-period=5s"],
    );
    let mark = f.emu.mark().await;
    let https = [("listen-ports", r#"[{"HTTPS":443}]"#)];
    // app.<example> is covered by the wildcard, api.<other> exactly by a SAN; the wildcard host
    // *.<example> only by the same wildcard name.
    let (app, api_host, wild_host) = (format!("app.{example}"), format!("api.{other}"), format!("*.{example}"));
    let ing = with_hosts(
        ingress("tls", vec![path("/", "svc-a")], &https),
        &[app.clone(), api_host.clone(), wild_host],
        &[app, api_host],
    );
    f.ingresses(&ns).create(&PostParams::default(), &ing).await.expect("create ingress");
    // A host no certificate covers: a Warning naming it, no load balancer.
    let missing = format!("missing.{zone}.nowhere.test");
    let lonely = with_hosts(ingress("nocert", vec![path("/", "svc-a")], &https), std::slice::from_ref(&missing), &[]);
    f.ingresses(&ns).create(&PostParams::default(), &lonely).await.expect("create ingress nocert");

    eventually("status.loadBalancer hostname", 90, || f.hostname(&ns, "tls")).await;
    let (lbs, tgs) = f.stack_arns(&format!("{ns}/tls")).await;
    assert_eq!((lbs.len(), tgs.len()), (1, 1));
    let ls = f.elb.describe_listeners().load_balancer_arn(&lbs[0]).send().await.expect("listeners");
    assert_eq!(ls.listeners().len(), 1, "HTTPS:443 only");
    let l = &ls.listeners()[0];
    assert_eq!((l.port(), l.protocol().map(|p| p.as_str())), (Some(443), Some("HTTPS")));
    let mut discovered = [wildcard.clone(), api.clone()];
    discovered.sort();
    let default: Vec<&str> = l.certificates().iter().filter_map(|c| c.certificate_arn()).collect();
    assert_eq!(default, [discovered[0].as_str()], "the smallest discovered ARN is the default, as ALBC");
    let attached = f.elb.describe_listener_certificates().listener_arn(l.listener_arn().unwrap()).send().await;
    let mut attached: Vec<(String, bool)> = attached
        .expect("listener certificates")
        .certificates()
        .iter()
        .map(|c| (c.certificate_arn().unwrap_or_default().to_string(), c.is_default() == Some(true)))
        .collect();
    attached.sort_by_key(|(c, d)| (!d, c.clone()));
    assert_eq!(attached, [(discovered[0].clone(), true), (discovered[1].clone(), false)], "exactly the discovered");

    let note = eventually("FailedBuildModel event on nocert", 30, || async {
        let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(f.client.clone(), &ns);
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("FailedBuildModel"))
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("nocert"))
            .find_map(|e| e.note)
    })
    .await;
    eprintln!("warning: {note}");
    assert!(note.contains(&missing) && note.contains("certificate-arn"), "names the host and the fix: {note}");
    let (lbs_none, _) = f.stack_arns(&format!("{ns}/nocert")).await;
    assert!(lbs_none.is_empty(), "no load balancer without a certificate: {lbs_none:?}");
    let created = f.calls_since(mark, &ctl).await;
    eprintln!("create (two Ingresses, discovery): {}", summarize(&created));
    assert_eq!(created.get("DescribeCertificate"), None, "the listing has every name");

    // Steady state once the pods are registered (bindings register asynchronously): resyncs
    // (every 5-7.5 s) write nothing.
    let want: BTreeSet<String> = f.env.pod_ips(&ns, "a").into_iter().map(|ip| format!("{ip}:8080")).collect();
    eventually("pods registered", 60, || async { (aws::registered(&f.elb, &tgs[0]).await == want).then_some(()) })
        .await;
    // The reconciles running now finish (marked), then a resync of its own (no poke: --sync-period=5s)
    // reads the load balancer and a reconcile after it finishes.
    let mark = f.emu.mark().await;
    ctl.settled("ingress", "the pods registered", || async {}).await;
    eventually("a resync reads the load balancer", 30, || async {
        (f.calls_since(mark, &ctl).await.get("DescribeLoadBalancers").copied().unwrap_or(0) >= 1).then_some(())
    })
    .await;
    ctl.settled("ingress", "the resync's DescribeLoadBalancers", || async {}).await;
    let resync = f.calls_since(mark, &ctl).await;
    eprintln!("resyncs: {}", summarize(&resync));
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "no write on resync");
    assert!(resync.get("DescribeLoadBalancers").copied().unwrap_or(0) >= 1, "a resync ran: {resync:?}");

    // The missing certificate is issued: the next attempt (within the one-minute list cache
    // and its retry) finds it and the ALB is created.
    let late = aws::acm_import_certificate(&f.env, &[&missing]).await;
    eventually("nocert's load balancer once its certificate exists", 120, || f.hostname(&ns, "nocert")).await;
    let (lbs_late, _) = f.stack_arns(&format!("{ns}/nocert")).await;
    let ls = f.elb.describe_listeners().load_balancer_arn(&lbs_late[0]).send().await.expect("listeners");
    let default: Vec<&str> = ls.listeners()[0].certificates().iter().filter_map(|c| c.certificate_arn()).collect();
    assert_eq!(default, [late.as_str()]);

    for name in ["tls", "nocert"] {
        f.ingresses(&ns).delete(name, &DeleteParams::default()).await.unwrap();
    }
    for name in ["tls", "nocert"] {
        eventually("Ingress gone", 120, || async {
            f.ingresses(&ns).get_opt(name).await.ok()?.is_none().then_some(())
        })
        .await;
    }
    drop(ctl);
    kube_util::delete_namespace(&f.client, &ns).await;
}

/// WAFv2 web ACL by ARN, by name, replaced, left alone without the annotation, removed by `none`:
/// each change exactly one WAFv2 write, resyncs none.
#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn wafv2_web_acl_follows_the_annotations() {
    let _serial = SERIAL.lock().await;
    let Some(f) = setup("ingress_alb_wafv2").await else { return };
    let ns = ns_name("ing_waf");
    f.namespace_with_backends(&ns, &[("svc-a", "a")]).await;
    let acl_a = aws::wafv2_web_acl(&f.env, &unique("acl-a")).await;
    let name_b = unique("acl-b");
    let acl_b = aws::wafv2_web_acl(&f.env, &name_b).await;
    let ctl = ControllerProc::start(&f.env, &ns, "lbc-e2e-ing", &["--enable-service-controller=false"]);
    let ing = ingress("web", vec![path("/a", "svc-a")], &[("wafv2-acl-arn", &acl_a)]);
    f.ingresses(&ns).create(&PostParams::default(), &ing).await.expect("create ingress");
    eventually("hostname", 90, || f.hostname(&ns, "web")).await;
    let (lbs, _) = f.stack_arns(&format!("{ns}/web")).await;
    let lb = lbs[0].clone();
    let acl_of = || aws::wafv2_web_acl_of(&f.env, &lb);
    eventually("web ACL a associated", 30, || async {
        (acl_of().await.as_deref() == Some(acl_a.as_str())).then_some(())
    })
    .await;
    let want: BTreeSet<String> = f.env.pod_ips(&ns, "a").into_iter().map(|ip| format!("{ip}:8080")).collect();
    let tgs = f.stack_arns(&format!("{ns}/web")).await.1;
    eventually("pods registered", 60, || async { (aws::registered(&f.elb, &tgs[0]).await == want).then_some(()) })
        .await;

    // Resync: reads only.
    let mark = f.emu.mark().await;
    f.settled(&ctl, &ns, "web", "the pods registered").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "no write without a change");

    let set = |k: &str, v: Option<&str>| {
        let patch = json!({"metadata": {"annotations": {format!("{ALB}/{k}"): v}}});
        let api = f.ingresses(&ns);
        async move { api.patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap() }
    };
    // By name (the ARN annotation removed at the same time): replaced with one AssociateWebACL.
    let mark = f.emu.mark().await;
    set("wafv2-acl-arn", None).await;
    set("wafv2-acl-name", Some(&name_b)).await;
    eventually("web ACL b by name", 30, || async { (acl_of().await.as_deref() == Some(acl_b.as_str())).then_some(()) })
        .await;
    f.settled(&ctl, &ns, "web", "web ACL b associated").await;
    assert_eq!(f.writes_since(mark, &ctl).await, ["AssociateWebACL"], "one association change");

    // An unknown name: a Warning naming it, nothing changed.
    let mark = f.emu.mark().await;
    set("wafv2-acl-name", Some("no-such-acl")).await;
    let note = eventually("FailedDeployModel event", 30, || async {
        let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(f.client.clone(), &ns);
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items.into_iter().filter_map(|e| e.note).find(|n| n.contains("no-such-acl"))
    })
    .await;
    assert!(note.contains("no WAFv2 web ACL named") && note.contains("wafv2-acl-arn"), "{note}");
    f.settled(&ctl, &ns, "web", "the FailedDeployModel Warning").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "nothing changed");
    assert_eq!(acl_of().await.as_deref(), Some(acl_b.as_str()));

    // Annotation removed: the association stays (ALBC: remove with `none`, never by omission).
    let mark = f.emu.mark().await;
    set("wafv2-acl-name", None).await;
    f.settled(&ctl, &ns, "web", "the annotation removed").await;
    assert_eq!(acl_of().await.as_deref(), Some(acl_b.as_str()), "left alone without the annotation");
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new());

    // `none`: one DisassociateWebACL.
    let mark = f.emu.mark().await;
    set("wafv2-acl-arn", Some("none")).await;
    eventually("web ACL removed", 30, || async { acl_of().await.is_none().then_some(()) }).await;
    f.settled(&ctl, &ns, "web", "web ACL removed").await;
    assert_eq!(f.writes_since(mark, &ctl).await, ["DisassociateWebACL"]);

    f.ingresses(&ns).delete("web", &DeleteParams::default()).await.unwrap();
    eventually("Ingress gone", 120, || async { f.ingresses(&ns).get_opt("web").await.ok()?.is_none().then_some(()) })
        .await;
    drop(ctl);
    kube_util::delete_namespace(&f.client, &ns).await;
}

/// A backend named by an `actions.<name>` annotation (port name `use-annotation`).
fn annotated_path(p: &str, path_type: &str, action: &str) -> HTTPIngressPath {
    let mut out = path(p, action);
    out.path_type = path_type.into();
    out.backend.service.as_mut().unwrap().port =
        Some(ServiceBackendPort { name: Some("use-annotation".into()), number: None });
    out
}

/// One listener rule as text: its conditions (sorted) and its actions (in order), with target
/// groups named by the Service of their binding.
#[derive(Debug, PartialEq, Eq)]
struct RuleText {
    priority: u32,
    arn: String,
    conditions: Vec<String>,
    actions: Vec<String>,
}

fn condition_text(c: &elbv2::types::RuleCondition) -> String {
    let sorted = |v: &[String]| {
        let mut v = v.to_vec();
        v.sort();
        v.join(",")
    };
    let field = c.field().unwrap_or_default();
    let values = match field {
        "host-header" => c.host_header_config().map(|h| (h.values(), h.regex_values())),
        "path-pattern" => c.path_pattern_config().map(|p| (p.values(), p.regex_values())),
        _ => None,
    };
    match (field, values) {
        (_, Some((v, re))) if !re.is_empty() => {
            format!("{field} regex [{}]{}", sorted(re), if v.is_empty() { "" } else { " AND values!" })
        }
        (_, Some((v, _))) => format!("{field} [{}]", sorted(v)),
        ("http-header", _) => {
            let h = c.http_header_config().unwrap();
            let name = h.http_header_name().unwrap_or_default();
            match (h.values(), h.regex_values()) {
                (v, []) => format!("http-header {name} [{}]", sorted(v)),
                ([], re) => format!("http-header {name} regex [{}]", sorted(re)),
                (_, re) => format!("http-header {name} regex [{}] AND values!", sorted(re)),
            }
        }
        ("http-request-method", _) => {
            format!("http-request-method [{}]", sorted(c.http_request_method_config().unwrap().values()))
        }
        ("source-ip", _) => format!("source-ip [{}]", sorted(c.source_ip_config().unwrap().values())),
        ("query-string", _) => {
            let kv: Vec<String> = c
                .query_string_config()
                .unwrap()
                .values()
                .iter()
                .map(|p| format!("{}={}", p.key().unwrap_or("*"), p.value().unwrap_or_default()))
                .collect();
            format!("query-string [{}]", sorted(&kv))
        }
        _ => format!("{field} ?"),
    }
}

impl Fixture {
    /// Target group ARN → the Service its binding points at, for every binding in `ns`.
    async fn services_by_target_group(&self, ns: &str) -> BTreeMap<String, String> {
        let tgbs: Api<TargetGroupBinding> = Api::namespaced(self.client.clone(), ns);
        let list = tgbs.list(&ListParams::default()).await.unwrap();
        list.items
            .iter()
            .filter_map(|t| Some((t.spec.target_group_arn.clone()?, t.spec.service_ref.name.clone())))
            .collect()
    }

    /// The non-default rules of the load balancer's listener on `port`, by priority.
    async fn rule_texts(&self, lb: &str, port: i32, ns: &str) -> Vec<RuleText> {
        let svc = self.services_by_target_group(ns).await;
        let name = |arn: &str| svc.get(arn).cloned().unwrap_or_else(|| format!("<{arn}>"));
        let ls = self.elb.describe_listeners().load_balancer_arn(lb).send().await.expect("listeners");
        let Some(l) = ls.listeners().iter().find(|l| l.port() == Some(port)) else { return vec![] };
        let rs = self.elb.describe_rules().listener_arn(l.listener_arn().unwrap()).send().await.expect("rules");
        let mut out: Vec<RuleText> = rs
            .rules()
            .iter()
            .filter(|r| r.is_default() != Some(true))
            .map(|r| {
                let mut conditions: Vec<String> = r.conditions().iter().map(condition_text).collect();
                conditions.sort();
                let mut actions: Vec<&elbv2::types::Action> = r.actions().iter().collect();
                actions.sort_by_key(|a| a.order().unwrap_or(i32::MAX));
                let actions = actions
                    .into_iter()
                    .map(|a| match a.r#type().map(|t| t.as_str()).unwrap_or_default() {
                        "forward" => {
                            let mut tgs: Vec<String> = a
                                .forward_config()
                                .map(|f| {
                                    f.target_groups()
                                        .iter()
                                        .map(|t| {
                                            format!(
                                                "{}:{}",
                                                name(t.target_group_arn().unwrap_or_default()),
                                                t.weight().unwrap_or(1)
                                            )
                                        })
                                        .collect()
                                })
                                .unwrap_or_else(|| {
                                    vec![format!("{}:1", name(a.target_group_arn().unwrap_or_default()))]
                                });
                            tgs.sort();
                            format!("forward {}", tgs.join(" "))
                        }
                        "redirect" => {
                            let r = a.redirect_config().unwrap();
                            format!(
                                "redirect {} {}:{} {} {}",
                                r.protocol().unwrap_or("#{protocol}"),
                                r.host().unwrap_or("#{host}"),
                                r.port().unwrap_or("#{port}"),
                                r.path().unwrap_or("#{path}"),
                                r.status_code().map(|s| s.as_str()).unwrap_or_default()
                            )
                        }
                        "fixed-response" => {
                            let f = a.fixed_response_config().unwrap();
                            format!(
                                "fixed-response {} {} {}",
                                f.status_code().unwrap_or_default(),
                                f.content_type().unwrap_or_default(),
                                f.message_body().unwrap_or_default()
                            )
                        }
                        "authenticate-oidc" => {
                            let o = a.authenticate_oidc_config().unwrap();
                            assert_eq!(o.client_secret(), None, "AWS never returns the client secret");
                            format!(
                                "authenticate-oidc {} client {}",
                                o.issuer().unwrap_or_default(),
                                o.client_id().unwrap_or_default()
                            )
                        }
                        "authenticate-cognito" => {
                            let c = a.authenticate_cognito_config().unwrap();
                            format!(
                                "authenticate-cognito {} client {}",
                                c.user_pool_domain().unwrap_or_default(),
                                c.user_pool_client_id().unwrap_or_default()
                            )
                        }
                        "jwt-validation" => {
                            let j = a.jwt_validation_config().unwrap();
                            let claims: Vec<String> = j
                                .additional_claims()
                                .iter()
                                .map(|c| {
                                    format!(
                                        "{}={}:{}",
                                        c.name().unwrap_or_default(),
                                        c.format().map(|f| f.as_str()).unwrap_or_default(),
                                        c.values().join(",")
                                    )
                                })
                                .collect();
                            format!(
                                "jwt-validation {} jwks {} claims [{}]",
                                j.issuer().unwrap_or_default(),
                                j.jwks_endpoint().unwrap_or_default(),
                                claims.join(" ")
                            )
                        }
                        other => other.to_string(),
                    })
                    .collect();
                RuleText {
                    priority: r.priority().unwrap_or_default().parse().unwrap_or(u32::MAX),
                    arn: r.rule_arn().unwrap_or_default().to_string(),
                    conditions,
                    actions,
                }
            })
            .collect();
        out.sort_by_key(|r| r.priority);
        out
    }

    async fn tag(&self, arn: &str, key: &str) -> Option<String> {
        let d = self.elb.describe_tags().resource_arns(arn).send().await.ok()?;
        d.tag_descriptions()
            .iter()
            .flat_map(|d| d.tags())
            .find(|t| t.key() == Some(key))
            .and_then(|t| t.value().map(String::from))
    }
}

const OIDC_DIGEST_TAG: &str = "ingress.k8s.aws/oidc-secret-digest";
/// Priorities of the rules authenticating with the OIDC Secret in the rules test.
const OIDC_RULES: [u32; 2] = [5, 6];

fn oidc_secret(client_secret: &str) -> k8s_openapi::api::core::v1::Secret {
    k8s_openapi::api::core::v1::Secret {
        metadata: ObjectMeta { name: Some("oidc-creds".into()), ..Default::default() },
        string_data: Some(BTreeMap::from([
            ("clientID".to_string(), "shop-app".to_string()),
            ("clientSecret".to_string(), format!("{client_secret}\n")),
        ])),
        ..Default::default()
    }
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn actions_conditions_regex_paths_and_oidc_rules_match_the_annotations() {
    let _serial = SERIAL.lock().await;
    let Some(f) = setup("ingress_alb_rules").await else { return };
    let ns = ns_name("ing_rules");
    f.namespace_with_backends(&ns, &[("svc-a", "a"), ("svc-b", "b")]).await;
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(f.client.clone(), &ns);
    secrets.create(&PostParams::default(), &oidc_secret("first-s3cret")).await.expect("create Secret");
    let cert = aws::acm_certificate(&f.env, "shop.example.com").await;
    // A short resync: the rotated Secret (not watched) is read on the next pass.
    let ctl = ControllerProc::start(
        &f.env,
        &ns,
        "lbc-e2e-ing-rules",
        &["--enable-service-controller=false", "--sync-period=3s"],
    );
    let mark = f.emu.mark().await;
    let group = unique("e2e-rules");
    let https = r#"[{"HTTPS":443}]"#;
    let common = |order: &'static str| {
        vec![
            ("group.name", group.clone()),
            ("group.order", order.to_string()),
            ("listen-ports", https.to_string()),
            ("certificate-arn", cert.clone()),
        ]
    };
    let weighted = json!({"type": "forward", "forwardConfig": {"targetGroups": [
        {"serviceName": "svc-a", "servicePort": 80, "weight": 80},
        {"serviceName": "svc-b", "servicePort": "80", "weight": 20}]}})
    .to_string();
    let redirect = json!({"type": "redirect", "redirectConfig": {
        "protocol": "HTTPS", "host": "example.com", "port": "443", "path": "/new", "statusCode": "HTTP_301"}})
    .to_string();
    let fixed = json!({"type": "fixed-response", "fixedResponseConfig": {
        "statusCode": "503", "contentType": "text/plain", "messageBody": "maintenance"}})
    .to_string();
    let weighted_if = |header: &str| {
        json!([
            {"field": "host-header", "hostHeaderConfig": {"values": ["shop.example.com"]}},
            {"field": "http-header", "httpHeaderConfig": {"httpHeaderName": "X-Canary", "values": [header]}},
            {"field": "http-request-method", "httpRequestMethodConfig": {"values": ["GET", "HEAD"]}}])
        .to_string()
    };
    let redirect_if = json!([
        {"field": "host-header", "hostHeaderConfig": {"regexValues": ["^old\\.example\\.com$"]}},
        {"field": "query-string", "queryStringConfig": {"values": [{"key": "v", "value": "1"}]}},
        {"field": "source-ip", "sourceIpConfig": {"values": ["10.0.0.0/8"]}}])
    .to_string();
    let fixed_if = json!([
        {"field": "path-pattern", "pathPatternConfig": {"values": ["/down"]}},
        {"field": "http-header", "httpHeaderConfig": {"httpHeaderName": "User-Agent", "regexValues": ["^curl/.*$"]}}])
    .to_string();
    let mut routes_ann = common("1");
    routes_ann.extend([
        ("use-regex-path-match", "true".to_string()),
        ("actions.weighted", weighted),
        ("actions.redirect", redirect),
        ("actions.fixed", fixed),
        ("conditions.weighted", weighted_if("yes")),
        ("conditions.redirect", redirect_if),
        ("conditions.fixed", fixed_if),
    ]);
    let mut regex_path = path("/api/v[0-9]+/.*", "svc-a");
    regex_path.path_type = "ImplementationSpecific".into();
    let paths = vec![
        annotated_path("/weighted", "Prefix", "weighted"),
        annotated_path("/old", "Prefix", "redirect"),
        annotated_path("/maintenance", "Exact", "fixed"),
        regex_path,
    ];
    let ann: Vec<(&str, &str)> = routes_ann.iter().map(|(k, v)| (*k, v.as_str())).collect();
    f.ingresses(&ns).create(&PostParams::default(), &ingress("routes", paths, &ann)).await.expect("create routes");
    let oidc = json!({"issuer": "https://idp.example.com", "authorizationEndpoint": "https://idp.example.com/auth",
        "tokenEndpoint": "https://idp.example.com/token", "userInfoEndpoint": "https://idp.example.com/userinfo",
        "secretName": "oidc-creds"})
    .to_string();
    let mut secure_ann = common("2");
    secure_ann.extend([("auth-type", "oidc".to_string()), ("auth-idp-oidc", oidc)]);
    let ann: Vec<(&str, &str)> = secure_ann.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let secure = ingress("secure", vec![path("/secure", "svc-a"), path("/admin", "svc-b")], &ann);
    f.ingresses(&ns).create(&PostParams::default(), &secure).await.expect("create secure");
    // Cognito needs no Secret.
    let cognito = json!({"userPoolARN": "arn:aws:cognito-idp:us-east-1:123456789012:userpool/us-east-1_e2e",
        "userPoolClientID": "members-app", "userPoolDomain": "auth.shop.example.com"})
    .to_string();
    let mut members_ann = common("3");
    members_ann.extend([("auth-type", "cognito".to_string()), ("auth-idp-cognito", cognito)]);
    let ann: Vec<(&str, &str)> = members_ann.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let members = ingress("members", vec![path("/members", "svc-b")], &ann);
    f.ingresses(&ns).create(&PostParams::default(), &members).await.expect("create members");

    eventually("hostname of routes", 90, || f.hostname(&ns, "routes")).await;
    eventually("hostname of secure", 90, || f.hostname(&ns, "secure")).await;
    eventually("hostname of members", 90, || f.hostname(&ns, "members")).await;
    let (lbs, tgs) = eventually("one ALB, five target groups", 60, || async {
        let (l, t) = f.stack_arns(&group).await;
        (l.len() == 1 && t.len() == 5).then_some((l, t))
    })
    .await;
    let oidc_action = "authenticate-oidc https://idp.example.com client shop-app";
    let want: Vec<(u32, Vec<&str>, Vec<&str>)> = vec![
        (
            1,
            vec!["http-header User-Agent regex [^curl/.*$]", "path-pattern [/down,/maintenance]"],
            vec!["fixed-response 503 text/plain maintenance"],
        ),
        (
            2,
            vec![
                "host-header [shop.example.com]",
                "http-header X-Canary [yes]",
                "http-request-method [GET,HEAD]",
                "path-pattern [/weighted,/weighted/*]",
            ],
            vec!["forward svc-a:80 svc-b:20"],
        ),
        (
            3,
            vec![
                "host-header regex [^old\\.example\\.com$]",
                "path-pattern [/old,/old/*]",
                "query-string [v=1]",
                "source-ip [10.0.0.0/8]",
            ],
            vec!["redirect HTTPS example.com:443 /new HTTP_301"],
        ),
        (4, vec!["path-pattern regex [api/v[0-9]+/.*]"], vec!["forward svc-a:1"]),
        (5, vec!["path-pattern [/secure,/secure/*]"], vec![oidc_action, "forward svc-a:1"]),
        (6, vec!["path-pattern [/admin,/admin/*]"], vec![oidc_action, "forward svc-b:1"]),
        (
            7,
            vec!["path-pattern [/members,/members/*]"],
            vec!["authenticate-cognito auth.shop.example.com client members-app", "forward svc-b:1"],
        ),
    ];
    let shown = |rules: &[RuleText]| -> Vec<(u32, Vec<String>, Vec<String>)> {
        rules.iter().map(|r| (r.priority, r.conditions.clone(), r.actions.clone())).collect()
    };
    let want_text: Vec<(u32, Vec<String>, Vec<String>)> = want
        .iter()
        .map(|(p, c, a)| (*p, c.iter().map(|s| s.to_string()).collect(), a.iter().map(|s| s.to_string()).collect()))
        .collect();
    let rules = eventually("seven rules as annotated", 60, || async {
        let r = f.rule_texts(&lbs[0], 443, &ns).await;
        (shown(&r) == want_text).then_some(r)
    })
    .await;
    eprintln!("create: {}", summarize(&f.calls_since(mark, &ctl).await));
    // The OIDC rules carry the digest of the credentials they were written with; the others not.
    let mut digests = BTreeMap::new();
    for r in &rules {
        let d = f.tag(&r.arn, OIDC_DIGEST_TAG).await;
        assert_eq!(d.is_some(), OIDC_RULES.contains(&r.priority), "digest tag on rule {}: {d:?}", r.priority);
        digests.insert(r.priority, d);
    }
    // Bindings register targets asynchronously: wait for all of them before counting writes.
    for tg in &tgs {
        let set = if f.services_by_target_group(&ns).await[tg] == "svc-a" { "a" } else { "b" };
        let want: BTreeSet<String> = f.env.pod_ips(&ns, set).into_iter().map(|ip| format!("{ip}:8080")).collect();
        eventually(&format!("pods of {set} registered in {tg}"), 60, || async {
            (aws::registered(&f.elb, tg).await == want).then_some(())
        })
        .await;
    }

    // Resyncs (every 3 s) make no write.
    let mark = f.emu.mark().await;
    f.settled(&ctl, &ns, "routes", "every target registered").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "no write without a change");
    eprintln!("resync: {}", summarize(&f.calls_since(mark, &ctl).await));

    // One condition changes: exactly one ModifyRule.
    let mark = f.emu.mark().await;
    let patch = json!({"metadata": {"annotations": {format!("{ALB}/conditions.weighted"): weighted_if("true")}}});
    f.ingresses(&ns).patch("routes", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    eventually("header condition changed", 60, || async {
        let r = f.rule_texts(&lbs[0], 443, &ns).await;
        r.iter().any(|r| r.conditions.contains(&"http-header X-Canary [true]".to_string())).then_some(())
    })
    .await;
    f.settled(&ctl, &ns, "routes", "the header condition changed").await;
    eprintln!("one condition: {}", summarize(&f.calls_since(mark, &ctl).await));
    assert_eq!(f.writes_since(mark, &ctl).await, ["ModifyRule"], "only the changed rule");

    // The OIDC Secret rotates: the next pass rewrites exactly the two rules using it.
    let mark = f.emu.mark().await;
    secrets.replace("oidc-creds", &PostParams::default(), &oidc_secret("second-s3cret")).await.expect("rotate");
    let rotated = eventually("digest tags follow the rotated secret", 30, || async {
        let mut now = BTreeMap::new();
        for r in &rules {
            now.insert(r.priority, f.tag(&r.arn, OIDC_DIGEST_TAG).await);
        }
        (now[&5] != digests[&5] && now[&6] != digests[&6]).then_some(now)
    })
    .await;
    assert_eq!(rotated.iter().filter(|(p, d)| !OIDC_RULES.contains(p) && d.is_some()).count(), 0);
    f.settled(&ctl, &ns, "routes", "the digest tags rotated").await;
    let mut written = f.writes_since(mark, &ctl).await;
    written.sort();
    eprintln!("secret rotation: {}", summarize(&f.calls_since(mark, &ctl).await));
    assert_eq!(written, ["AddTags", "AddTags", "ModifyRule", "ModifyRule"], "the two OIDC rules, nothing else");
    let after = f.rule_texts(&lbs[0], 443, &ns).await;
    assert_eq!(after.iter().map(|r| &r.arn).collect::<Vec<_>>(), rules.iter().map(|r| &r.arn).collect::<Vec<_>>());

    // A Secret without clientSecret: a Warning naming the Secret and the key, nothing changed in AWS.
    let mark = f.emu.mark().await;
    let mut incomplete = oidc_secret("unused");
    incomplete.string_data.as_mut().unwrap().remove("clientSecret");
    incomplete.data = None;
    secrets.replace("oidc-creds", &PostParams::default(), &incomplete).await.expect("replace Secret");
    let note = eventually("FailedBuildModel for the Secret", 30, || async {
        let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(f.client.clone(), &ns);
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items.into_iter().filter_map(|e| e.note).find(|n| n.contains("has no key clientSecret"))
    })
    .await;
    assert!(note.contains(&format!("Secret {ns}/oidc-creds")) && note.contains("the Secret has 1 other key"), "{note}");
    assert!(
        !note.contains("clientID,") && !note.contains("[clientID]"),
        "the Secret's other keys are not named: {note}"
    );
    f.settled(&ctl, &ns, "routes", "the Warning about the Secret").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "an incomplete Secret changes nothing in AWS");
    // Restored with the same secret: the digest is unchanged, still no write.
    secrets.replace("oidc-creds", &PostParams::default(), &oidc_secret("second-s3cret")).await.expect("restore");
    // Secrets are never watched: the restored one is read by the next pass, which the poke starts.
    f.settled(&ctl, &ns, "routes", "the Secret restored").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "the same secret again: no write");

    // The same credentials in a Secret made anew: the digest is keyed by the Secret's UID, so it
    // changes (whoever reads the tag without the UID cannot test a guessed secret against it).
    let mut before = BTreeMap::new();
    for r in &rules {
        before.insert(r.priority, f.tag(&r.arn, OIDC_DIGEST_TAG).await);
    }
    secrets.delete("oidc-creds", &Default::default()).await.expect("delete the Secret");
    secrets.create(&PostParams::default(), &oidc_secret("second-s3cret")).await.expect("the same Secret anew");
    eventually("digest tags keyed by the new Secret's UID", 30, || async {
        let mut changed = 0;
        for p in OIDC_RULES {
            let r = rules.iter().find(|r| r.priority == p).expect("an OIDC rule");
            let now = f.tag(&r.arn, OIDC_DIGEST_TAG).await;
            changed += usize::from(now.is_some() && now != before[&p]);
        }
        (changed == OIDC_RULES.len()).then_some(())
    })
    .await;
    f.settled(&ctl, &ns, "routes", "the Secret made anew").await;

    // An invalid regex: a Warning naming it, nothing changed in AWS.
    let mark = f.emu.mark().await;
    let bad = json!([{"field": "host-header", "hostHeaderConfig": {"regexValues": ["^(?=x)shop$"]}}]).to_string();
    let patch = json!({"metadata": {"annotations": {format!("{ALB}/conditions.fixed"): bad}}});
    f.ingresses(&ns).patch("routes", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    let note = eventually("FailedBuildModel for the regex", 30, || async {
        let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(f.client.clone(), &ns);
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items.into_iter().filter_map(|e| e.note).find(|n| n.contains("(?=x)"))
    })
    .await;
    assert!(note.contains("not a valid regular expression") && note.contains("conditions."), "{note}");
    f.settled(&ctl, &ns, "routes", "the Warning about the regex").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "an invalid regex changes nothing in AWS");

    // The secret never shows in events.
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(f.client.clone(), &ns);
    for e in events.list(&ListParams::default()).await.unwrap().items {
        let note = e.note.unwrap_or_default();
        assert!(!note.contains("s3cret"), "an event shows the client secret: {note}");
    }
    assert!(!ctl.log_text().contains("s3cret"), "the log shows the client secret");

    for name in ["routes", "secure", "members"] {
        f.ingresses(&ns).delete(name, &DeleteParams::default()).await.unwrap();
    }
    eventually("Ingresses gone", 120, || async {
        f.ingresses(&ns).list(&ListParams::default()).await.ok()?.items.is_empty().then_some(())
    })
    .await;
    let (lbs, tgs) = f.stack_arns(&group).await;
    assert!(lbs.is_empty() && tgs.is_empty(), "left behind: {lbs:?} {tgs:?}");
    drop(ctl);
    kube_util::delete_namespace(&f.client, &ns).await;
}
