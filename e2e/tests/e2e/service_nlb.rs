//! Service `type: LoadBalancer` → NLB end to end: the real controller binary, the real
//! kube-apiserver (EndpointSlices from kube-controller-manager, pods from kwok) and the AWS
//! emulator. Each update is checked against the emulator's call log: only the expected writes.

use aws_sdk_elasticloadbalancingv2 as elbv2;
use k8s_openapi::api::core::v1::Service;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use lbc_e2e::controller::ControllerProc;
use lbc_e2e::emulator::{self, Emulator};
use lbc_e2e::{Env, aws, eventually, kube_util, unique};
use lbc_model::crd::TargetGroupBinding;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

const ANN: &str = "service.beta.kubernetes.io";

/// Freeze, don't delete (issue 14).
#[path = "service_nlb/freeze.rs"]
mod freeze;

/// Gate EnableServiceController off: the Service controller does not run.
#[path = "service_nlb/gate_off.rs"]
mod gate_off;

/// QUIC listeners and server IDs (`quic-enabled-ports`, the pod webhook).
#[path = "service_nlb/quic.rs"]
mod quic;

/// Subnets chosen by route table when none carries a role tag.
#[path = "service_nlb/reachability.rs"]
mod reachability;

/// IPv6 source NAT prefixes of a dual-stack NLB.
#[path = "service_nlb/source_nat.rs"]
mod source_nat;

/// Weighted forwards to other Services (`actions.*`).
#[path = "service_nlb/weighted.rs"]
mod weighted;

struct Fixture {
    env: Env,
    client: Client,
    elb: elbv2::Client,
    emu: Emulator,
    ns: String,
}

async fn setup(test: &str, replicas: u32) -> Option<Fixture> {
    let env = Env::require(test)?;
    let client = kube_util::client(&env).await;
    let ns = unique(test.replace('_', "-")[..test.len().min(16)].trim_end_matches('-'));
    let replicas = replicas.to_string();
    env.pods(&["create", &ns, "web", "--replicas", &replicas, "--port", "8080", "--terminate-seconds", "2"]);
    let elb = aws::elbv2(&env).await;
    let emu = Emulator::new(env.aws_endpoint());
    Some(Fixture { env, client, elb, emu, ns })
}

fn nlb_service(name: &str, annotations: &[(&str, &str)]) -> Service {
    let mut ann: BTreeMap<String, String> = BTreeMap::from([
        (format!("{ANN}/aws-load-balancer-type"), "external".to_string()),
        (format!("{ANN}/aws-load-balancer-nlb-target-type"), "ip".to_string()),
    ]);
    for (k, v) in annotations {
        ann.insert(format!("{ANN}/{k}"), v.to_string());
    }
    kube_util::backend_service(name, "web", Some("LoadBalancer"), ann)
}

impl Fixture {
    fn services(&self) -> Api<Service> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    fn controller(&self, extra: &[&str]) -> ControllerProc {
        ControllerProc::start(&self.env, &self.ns, "lbc-e2e-svc", extra)
    }

    async fn hostname(&self, name: &str) -> Option<String> {
        let s = self.services().get_opt(name).await.ok()??;
        s.status?.load_balancer?.ingress?.first()?.hostname.clone()
    }

    /// Load balancers and target groups carrying this Service's stack tag.
    async fn stack_arns(&self, name: &str) -> (Vec<String>, Vec<String>) {
        aws::stack_arns(&self.elb, "service.k8s.aws/stack", &format!("{}/{name}", self.ns)).await
    }

    /// Waits until target group `tg` holds exactly the `web` pods' IPs (the binding registered them);
    /// returns them as `ip:8080`.
    async fn wait_registered(&self, tg: &str) -> BTreeSet<String> {
        let want: BTreeSet<String> =
            self.env.pod_ips(&self.ns, "web").into_iter().map(|ip| format!("{ip}:8080")).collect();
        eventually("pod IPs registered", 60, || async { (aws::registered(&self.elb, tg).await == want).then_some(()) })
            .await;
        want
    }

    /// Waits until `ctl` has finished a Service reconcile that started after `what` was seen (Service
    /// `name` is poked so that one runs): the proof a "no further writes" assertion needs.
    async fn settled(&self, ctl: &ControllerProc, name: &str, what: &str) {
        let api = self.services();
        ctl.settled("service", what, || kube_util::poke(&api, name)).await;
    }

    /// Write calls (anything but Describe*) `ctl` made since `mark`, as "Operation" strings.
    async fn writes_since(&self, mark: u64, ctl: &ControllerProc) -> Vec<String> {
        let (calls, _) = self.emu.calls(mark, None).await;
        emulator::writes(&calls, &ctl.access_key)
    }

    async fn warnings(&self, reason: &str) -> Vec<String> {
        let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(self.client.clone(), &self.ns);
        let list = events.list(&ListParams::default()).await.expect("events");
        list.items.into_iter().filter(|e| e.reason.as_deref() == Some(reason)).filter_map(|e| e.note).collect()
    }
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn service_gets_an_nlb_follows_updates_and_is_cleaned_up() {
    let Some(f) = setup("svc_nlb_lifecycle", 3).await else { return };
    let ctl = f.controller(&[]);
    let mark = f.emu.mark().await;
    f.services()
        .create(&PostParams::default(), &nlb_service("web", &[("aws-load-balancer-scheme", "internet-facing")]))
        .await
        .expect("create service");

    // Created: hostname in status, the pods' IPs registered through the binding the controller made.
    let host = eventually("status.loadBalancer hostname", 90, || f.hostname("web")).await;
    let (lbs, tgs) = f.stack_arns("web").await;
    assert_eq!((lbs.len(), tgs.len()), (1, 1), "one NLB and one target group carry the stack tag");
    let want = f.wait_registered(&tgs[0]).await;
    let tgbs: Api<TargetGroupBinding> = Api::namespaced(f.client.clone(), &f.ns);
    let [tgb] = tgbs.list(&ListParams::default()).await.unwrap().items.try_into().expect("one binding");
    assert_eq!(tgb.spec.target_group_arn.as_deref(), Some(tgs[0].as_str()));
    let lb = f.elb.describe_load_balancers().load_balancer_arns(&lbs[0]).send().await.unwrap();
    let lb = &lb.load_balancers()[0];
    assert_eq!(lb.dns_name(), Some(host.as_str()));
    assert_eq!(lb.scheme().map(|s| s.as_str()), Some("internet-facing"));
    let created = f.writes_since(mark, &ctl).await;
    for op in ["CreateSecurityGroup", "CreateTargetGroup", "CreateLoadBalancer", "CreateListener", "RegisterTargets"] {
        assert!(created.iter().any(|o| o == op), "{op} in {created:?}");
    }

    // Steady state: a resync makes no write.
    let mark = f.emu.mark().await;
    f.settled(&ctl, "web", "the NLB in place").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "no write without a change");

    // One annotation changes one thing: the healthy threshold → ModifyTargetGroup only.
    let mark = f.emu.mark().await;
    let patch =
        json!({"metadata": {"annotations": {format!("{ANN}/aws-load-balancer-healthcheck-healthy-threshold"): "5"}}});
    f.services().patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    eventually("healthy threshold 5", 60, || async {
        let d = f.elb.describe_target_groups().target_group_arns(&tgs[0]).send().await.ok()?;
        (d.target_groups()[0].healthy_threshold_count() == Some(5)).then_some(())
    })
    .await;
    f.settled(&ctl, "web", "healthy threshold 5").await;
    assert_eq!(f.writes_since(mark, &ctl).await, ["ModifyTargetGroup"], "only the health check changed");

    // A target-group attribute → ModifyTargetGroupAttributes only.
    let mark = f.emu.mark().await;
    let patch = json!({"metadata": {"annotations": {
        format!("{ANN}/aws-load-balancer-target-group-attributes"): "deregistration_delay.timeout_seconds=30"}}});
    f.services().patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    eventually("deregistration delay 30", 60, || async {
        let a = f.elb.describe_target_group_attributes().target_group_arn(&tgs[0]).send().await.ok()?;
        a.attributes()
            .iter()
            .any(|a| a.key() == Some("deregistration_delay.timeout_seconds") && a.value() == Some("30"))
            .then_some(())
    })
    .await;
    f.settled(&ctl, "web", "deregistration delay 30").await;
    assert_eq!(f.writes_since(mark, &ctl).await, ["ModifyTargetGroupAttributes"], "only the attribute changed");

    // The health-check interval is part of the target group's name (ALBC's hash): a new group is
    // created, the listener switched, the old group and its binding removed; targets follow.
    let mark = f.emu.mark().await;
    let patch = json!({"metadata": {"annotations": {format!("{ANN}/aws-load-balancer-healthcheck-interval"): "30"}}});
    f.services().patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    let new_tg = eventually("replacement target group", 60, || async {
        let (_, tgs2) = f.stack_arns("web").await;
        (tgs2.len() == 1 && tgs2[0] != tgs[0]).then(|| tgs2[0].clone())
    })
    .await;
    eventually("targets on the new group", 60, || async {
        (aws::registered(&f.elb, &new_tg).await == want).then_some(())
    })
    .await;
    // The old group goes only after its binding has deregistered the targets (ALBC's order).
    let written = f.writes_since(mark, &ctl).await;
    let at = |op: &str| written.iter().position(|w| w == op).unwrap_or_else(|| panic!("no {op}: {written:?}"));
    assert!(at("DeregisterTargets") < at("DeleteTargetGroup"), "targets leave before their group: {written:?}");

    // An invalid annotation: a precise Warning, nothing written to AWS.
    let mark = f.emu.mark().await;
    let patch =
        json!({"metadata": {"annotations": {format!("{ANN}/aws-load-balancer-healthcheck-interval"): "often"}}});
    f.services().patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    let note = eventually("FailedBuildModel event", 60, || async {
        f.warnings("FailedBuildModel").await.into_iter().find(|n| n.contains("often"))
    })
    .await;
    assert!(note.contains("aws-load-balancer-healthcheck-interval"), "names the annotation: {note}");
    f.settled(&ctl, "web", "the FailedBuildModel Warning").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "bad input changes nothing in AWS");

    // Deleted: nothing of ours left, the Service goes away.
    f.services().delete("web", &DeleteParams::default()).await.unwrap();
    eventually("Service gone", 120, || async { f.services().get_opt("web").await.ok()?.is_none().then_some(()) }).await;
    let (lbs, tgs) = f.stack_arns("web").await;
    assert!(lbs.is_empty() && tgs.is_empty(), "left behind: {lbs:?} {tgs:?}");
    drop(ctl);
    kube_util::delete_namespace(&f.client, &f.ns).await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn discovery_failure_names_the_near_miss_cluster_tag() {
    let Some(f) = setup("svc_nlb_discovery", 1).await else { return };
    // The subnets are tagged for "e2e-cluster"; this controller believes it is "cluster-e2e".
    let ctl = ControllerProc::start(&f.env, &f.ns, "lbc-e2e-svc", &["--cluster-name=cluster-e2e"]);
    let mark = f.emu.mark().await;
    f.services().create(&PostParams::default(), &nlb_service("web", &[])).await.expect("create service");
    let note = eventually("FailedBuildModel event", 60, || async {
        f.warnings("FailedBuildModel").await.into_iter().find(|n| n.contains("subnet"))
    })
    .await;
    assert!(note.contains("kubernetes.io/cluster/e2e-cluster"), "shows the tag seen: {note}");
    assert!(note.contains("cluster-e2e"), "shows our cluster name: {note}");
    let written = f.writes_since(mark, &ctl).await;
    assert!(written.is_empty(), "no AWS writes on a failed discovery: {written:?}");
    // Deleting releases the finalizer (nothing to remove in AWS).
    f.services().delete("web", &DeleteParams::default()).await.unwrap();
    eventually("Service gone", 60, || async { f.services().get_opt("web").await.ok()?.is_none().then_some(()) }).await;
    drop(ctl);
    kube_util::delete_namespace(&f.client, &f.ns).await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn an_nlb_created_by_albc_is_adopted_not_recreated() {
    let Some(f) = setup("svc_nlb_adopt", 2).await else { return };
    let svc = f.services().create(&PostParams::default(), &nlb_service("web", &[])).await.expect("create service");
    // What ALBC would have created for this Service: its name and ownership tags, internal, in the
    // internal-elb subnets, without security groups.
    let cluster = f.env.get("LBC_CLUSTER_NAME").to_string();
    let uid = svc.metadata.uid.clone().unwrap();
    let name = lbc_model::lb::naming::load_balancer_name(&cluster, &f.ns, "web", &uid, "internal");
    let tag = |k: &str, v: &str| elbv2::types::Tag::builder().key(k).value(v).build();
    let subnets: Vec<String> = f.env.get("LBC_PRIVATE_SUBNET_IDS").split(',').map(String::from).collect();
    let pre = f
        .elb
        .create_load_balancer()
        .name(&name)
        .r#type(elbv2::types::LoadBalancerTypeEnum::Network)
        .scheme(elbv2::types::LoadBalancerSchemeEnum::Internal)
        .set_subnets(Some(subnets))
        .tags(tag("elbv2.k8s.aws/cluster", &cluster))
        .tags(tag("service.k8s.aws/stack", &format!("{}/web", f.ns)))
        .tags(tag("service.k8s.aws/resource", "LoadBalancer"))
        .send()
        .await
        .expect("pre-create NLB");
    let pre = &pre.load_balancers()[0];

    let mark = f.emu.mark().await;
    let ctl = f.controller(&[]);
    let host = eventually("status.loadBalancer hostname", 90, || f.hostname("web")).await;
    assert_eq!(Some(host.as_str()), pre.dns_name(), "the existing NLB's DNS name");
    let (lbs, tgs) = f.stack_arns("web").await;
    assert_eq!(lbs, [pre.load_balancer_arn().unwrap().to_string()]);
    assert_eq!(tgs.len(), 1);
    let written = f.writes_since(mark, &ctl).await;
    assert!(!written.iter().any(|o| o == "CreateLoadBalancer" || o == "DeleteLoadBalancer"), "{written:?}");
    assert!(!written.iter().any(|o| o == "CreateSecurityGroup"), "no SG for an NLB created without: {written:?}");

    f.services().delete("web", &DeleteParams::default()).await.unwrap();
    eventually("Service gone", 120, || async { f.services().get_opt("web").await.ok()?.is_none().then_some(()) }).await;
    drop(ctl);
    kube_util::delete_namespace(&f.client, &f.ns).await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn scheme_change_is_announced_and_a_service_that_stops_being_ours_is_cleaned_up() {
    let Some(f) = setup("svc_nlb_change", 1).await else { return };
    let ctl = f.controller(&[]);
    f.services().create(&PostParams::default(), &nlb_service("web", &[])).await.expect("create service");
    let internal = eventually("internal NLB", 90, || f.hostname("web")).await;

    // internal → internet-facing: AWS cannot change a scheme; the replacement is announced first.
    let patch = json!({"metadata": {"annotations": {format!("{ANN}/aws-load-balancer-scheme"): "internet-facing"}}});
    f.services().patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    let public = eventually("new hostname", 90, || async { f.hostname("web").await.filter(|h| h != &internal) }).await;
    let note = eventually("ReplacingLoadBalancer event", 30, || async {
        f.warnings("ReplacingLoadBalancer").await.into_iter().next()
    })
    .await;
    assert!(note.contains("scheme") && note.contains("DNS name will change"), "{note}");
    let (lbs, _) = f.stack_arns("web").await;
    assert_eq!(lbs.len(), 1, "the old NLB is gone: {lbs:?}");
    assert_ne!(public, internal);

    // type: ClusterIP with the annotations: still ours (ALBC's gate ServiceTypeLoadBalancerOnly is
    // off by default), the NLB stays and nothing is written.
    let (lbs, _) = f.stack_arns("web").await;
    let mark = f.emu.mark().await;
    let patch = json!({"spec": {"type": "ClusterIP"}});
    f.services().patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    f.settled(&ctl, "web", "type ClusterIP").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "a ClusterIP Service keeps its NLB");
    assert_eq!(f.stack_arns("web").await.0, lbs);

    // Without the annotations → no longer ours: stack removed, finalizer released.
    let patch = json!({"metadata": {"annotations": {format!("{ANN}/aws-load-balancer-type"): null}}});
    f.services().patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    eventually("finalizer released", 90, || async {
        let s = f.services().get("web").await.ok()?;
        let fin = s.metadata.finalizers.unwrap_or_default();
        (!fin.iter().any(|x| x == "service.k8s.aws/resources")).then_some(())
    })
    .await;
    let (lbs, tgs) = f.stack_arns("web").await;
    assert!(lbs.is_empty() && tgs.is_empty(), "left behind: {lbs:?} {tgs:?}");
    drop(ctl);
    kube_util::delete_namespace(&f.client, &f.ns).await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn backend_security_group_is_shared_by_load_balancers_and_deleted_with_the_last() {
    use lbc_aws::net::{Networking, SecurityGroupQuery};
    use lbc_model::lb::backend_sg::{DESCRIPTION, lookup_tags};
    let Some(f) = setup("svc_nlb_backend_sg", 1).await else { return };
    // Its own cluster name, so no other test's controller shares (or deletes) this group.
    let cluster = format!("bsg-{}", f.ns.rsplit('-').next().unwrap_or("x"));
    let ctl = f.controller(&[&format!("--cluster-name={cluster}"), "--enable-backend-security-group=true"]);
    let net = aws::networking(&f.env).await;
    let find = || async {
        let q = SecurityGroupQuery::Tags { vpc_id: Some(f.env.get("LBC_VPC_ID").into()), tags: lookup_tags(&cluster) };
        net.security_groups(&q).await.expect("describe security groups")
    };
    let mark = f.emu.mark().await;
    // The subnets carry the e2e cluster's tag, not this one's: name them.
    let subnets = ("aws-load-balancer-subnets", "lbc-e2e-private-a,lbc-e2e-private-b");
    for name in ["web", "api"] {
        f.services().create(&PostParams::default(), &nlb_service(name, &[subnets])).await.expect("create service");
    }
    for name in ["web", "api"] {
        eventually("status.loadBalancer hostname", 90, || f.hostname(name)).await;
    }

    let groups = find().await;
    assert_eq!(groups.len(), 1, "one backend group for the cluster: {groups:?}");
    let backend = &groups[0];
    assert_eq!(backend.spec.name, lbc_model::lb::naming::backend_security_group_name(&cluster));
    assert_eq!(backend.spec.description, DESCRIPTION);
    for name in ["web", "api"] {
        let (lbs, _) = f.stack_arns(name).await;
        let d = f.elb.describe_load_balancers().load_balancer_arns(&lbs[0]).send().await.unwrap();
        let sgs = d.load_balancers()[0].security_groups().to_vec();
        assert!(sgs.len() == 2 && sgs.contains(&backend.id), "{name}: frontend + backend group, got {sgs:?}");
    }
    // The bindings admit traffic from the backend group, not from each frontend group.
    let tgbs: Api<TargetGroupBinding> = Api::namespaced(f.client.clone(), &f.ns);
    let bindings = tgbs.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(bindings.len(), 2);
    for b in &bindings {
        let peers = serde_json::to_value(&b.spec.networking).unwrap();
        assert_eq!(peers["ingress"][0]["from"][0]["securityGroup"]["groupID"], json!(backend.id), "{peers}");
    }
    let creates = f.writes_since(mark, &ctl).await.into_iter().filter(|o| o == "CreateSecurityGroup").count();
    assert_eq!(creates, 3, "two frontend groups and one backend group");

    // The first deletion keeps the group (the other load balancer uses it); the last removes it.
    f.services().delete("web", &DeleteParams::default()).await.unwrap();
    eventually("web gone", 120, || async { f.services().get_opt("web").await.ok()?.is_none().then_some(()) }).await;
    // The reconcile that released web's finalizer asked whether the group is still needed; one after
    // it has finished too.
    f.settled(&ctl, "api", "web gone").await;
    assert_eq!(find().await.len(), 1, "still used by api");
    f.services().delete("api", &DeleteParams::default()).await.unwrap();
    eventually("api gone", 120, || async { f.services().get_opt("api").await.ok()?.is_none().then_some(()) }).await;
    eventually("backend group deleted", 60, || async { find().await.is_empty().then_some(()) }).await;
    drop(ctl);
    kube_util::delete_namespace(&f.client, &f.ns).await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn sni_certificates_follow_the_ssl_cert_annotation() {
    let Some(f) = setup("svc_nlb_sni", 1).await else { return };
    let [a, b, c] = ["a", "b", "c"].map(|n| format!("{n}.{}.example.com", f.ns));
    let (a, b, c) = (
        aws::acm_certificate(&f.env, &a).await,
        aws::acm_certificate(&f.env, &b).await,
        aws::acm_certificate(&f.env, &c).await,
    );
    let ctl = f.controller(&[]);
    let mark = f.emu.mark().await;
    let certs = format!("{a},{b}");
    let svc = nlb_service("tls", &[("aws-load-balancer-ssl-cert", &certs), ("aws-load-balancer-ssl-ports", "http")]);
    f.services().create(&PostParams::default(), &svc).await.expect("create service");
    eventually("status.loadBalancer hostname", 90, || f.hostname("tls")).await;
    let (lbs, _) = f.stack_arns("tls").await;
    let listeners = f.elb.describe_listeners().load_balancer_arn(&lbs[0]).send().await.unwrap();
    let [listener] = listeners.listeners() else { panic!("one listener: {listeners:?}") };
    assert_eq!(listener.protocol().map(|p| p.as_str()), Some("TLS"));
    let arn = listener.listener_arn().unwrap().to_string();
    // (certificate, is default), default first.
    let attached = || async {
        let out = f.elb.describe_listener_certificates().listener_arn(&arn).send().await.unwrap();
        let mut v: Vec<(String, bool)> = out
            .certificates()
            .iter()
            .map(|c| (c.certificate_arn().unwrap().to_string(), c.is_default() == Some(true)))
            .collect();
        v.sort_by_key(|(c, d)| (!d, c.clone()));
        v
    };
    assert_eq!(attached().await, [(a.clone(), true), (b.clone(), false)]);
    let created = f.writes_since(mark, &ctl).await;
    assert!(created.iter().any(|o| o == "AddListenerCertificates"), "extra certificate attached: {created:?}");

    // Steady state (once the binding has registered the pod): all certificates are observed, so a
    // resync writes nothing.
    let (_, tgs) = f.stack_arns("tls").await;
    f.wait_registered(&tgs[0]).await;
    let mark = f.emu.mark().await;
    f.settled(&ctl, "tls", "the pod registered").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "no write without a change");

    // b → c: one add, one remove, the default untouched.
    let mark = f.emu.mark().await;
    let patch = json!({"metadata": {"annotations": {format!("{ANN}/aws-load-balancer-ssl-cert"): format!("{a},{c}")}}});
    f.services().patch("tls", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    let want = [(a.clone(), true), (c.clone(), false)];
    eventually("certificate c attached, b detached", 60, || async { (attached().await == want).then_some(()) }).await;
    f.settled(&ctl, "tls", "certificate c attached").await;
    assert_eq!(f.writes_since(mark, &ctl).await, ["AddListenerCertificates", "RemoveListenerCertificates"]);

    f.services().delete("tls", &DeleteParams::default()).await.unwrap();
    eventually("Service gone", 120, || async { f.services().get_opt("tls").await.ok()?.is_none().then_some(()) }).await;
    drop(ctl);
    kube_util::delete_namespace(&f.client, &f.ns).await;
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn private_link_enforcement_and_minimum_capacity_follow_their_annotations() {
    let Some(f) = setup("svc_nlb_extras", 1).await else { return };
    let ctl = f.controller(&[]);
    let annotations = [
        ("aws-load-balancer-inbound-sg-rules-on-private-link-traffic", "off"),
        ("aws-load-balancer-minimum-load-balancer-capacity", "CapacityUnits=1500"),
    ];
    f.services().create(&PostParams::default(), &nlb_service("web", &annotations)).await.expect("create service");
    eventually("status.loadBalancer hostname", 90, || f.hostname("web")).await;
    let (lbs, _) = f.stack_arns("web").await;
    let arn = lbs[0].clone();
    let capacity = || async {
        let d = f.elb.describe_capacity_reservation().load_balancer_arn(&arn).send().await.expect("capacity");
        d.minimum_load_balancer_capacity().and_then(|m| m.capacity_units())
    };
    eventually("capacity reserved", 30, || async { (capacity().await == Some(1500)).then_some(()) }).await;
    let d = f.elb.describe_load_balancers().load_balancer_arns(&arn).send().await.unwrap();
    assert_eq!(d.load_balancers()[0].enforce_security_group_inbound_rules_on_private_link_traffic(), Some("off"));
    let (_, tgs) = f.stack_arns("web").await;
    f.wait_registered(&tgs[0]).await;

    // In sync: no write on resync.
    let mark = f.emu.mark().await;
    f.settled(&ctl, "web", "the pods registered").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "no write without a change");

    // CapacityUnits=0 resets the reservation, and only that.
    let mark = f.emu.mark().await;
    let key = format!("{ANN}/aws-load-balancer-minimum-load-balancer-capacity");
    let patch = json!({"metadata": {"annotations": {key: "CapacityUnits=0"}}});
    f.services().patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    eventually("reservation reset", 30, || async { capacity().await.is_none().then_some(()) }).await;
    f.settled(&ctl, "web", "the reservation reset").await;
    assert_eq!(f.writes_since(mark, &ctl).await, ["ModifyCapacityReservation"]);

    f.services().delete("web", &DeleteParams::default()).await.unwrap();
    eventually("Service gone", 120, || async { f.services().get_opt("web").await.ok()?.is_none().then_some(()) }).await;
    drop(ctl);
    kube_util::delete_namespace(&f.client, &f.ns).await;
}
