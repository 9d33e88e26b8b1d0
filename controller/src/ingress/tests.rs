//! The IngressGroup reconciler driven through the function the shared scheduler calls
//! ([`super::reconcile`]: one pass, its backoff, the delay it asks for) against a mocked API
//! server behind the production leader gate and the in-memory AWS fakes
//! (`crate::stack::test_world`): no environment, paused time. Each test asserts the AWS writes
//! and the Kubernetes requests.

use super::*;
use crate::stack::test_world::{CLUSTER, Seen, VPC, World, deleting};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::IngressClass;
use lbc_aws::error::ErrorKind;
use lbc_aws::fake_acm::FakeAcm;
use lbc_aws::lb::LoadBalancers;
use lbc_model::lb::backend_sg::BackendSgMode;
use serde_json::json;

const NS: &str = "shop";
const GROUP: &str = "shared";
const FINALIZER: &str = "group.ingress.k8s.aws/shared";

fn ing_path(name: &str) -> String {
    format!("/apis/networking.k8s.io/v1/namespaces/{NS}/ingresses/{name}")
}

/// Ingress `name` in group `shared`, routing `/name` to Service `name`:80.
fn ingress(name: &str, extra: &[(&str, &str)]) -> Ingress {
    let mut ann = serde_json::Map::new();
    for (key, v) in [(k::GROUP_NAME, GROUP), (k::TARGET_TYPE, "ip")].iter().chain(extra) {
        ann.insert(k::full_key(key), json!(v));
    }
    serde_json::from_value(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"), "resourceVersion": "3",
                     "annotations": ann},
        "spec": {"ingressClassName": "alb", "rules": [{"http": {"paths": [
            {"path": format!("/{name}"), "pathType": "Prefix",
             "backend": {"service": {"name": name, "port": {"number": 80}}}}]}}]},
    }))
    .unwrap()
}

fn backend(name: &str) -> Service {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": NS, "uid": format!("svc-{name}")},
        "spec": {"type": "ClusterIP", "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]},
    }))
    .unwrap()
}

fn class() -> IngressClass {
    serde_json::from_value(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
        "metadata": {"name": "alb"}, "spec": {"controller": k::CONTROLLER},
    }))
    .unwrap()
}

/// `ing` as the watch shows it after a pass: the group's finalizer and the hostname.
fn settled(ing: Ingress, hostname: &str) -> Ingress {
    crate::stack::test_world::settled(ing, FINALIZER, hostname)
}

struct T {
    w: World,
    ctx: IngressCtx,
    g: GroupId,
}

fn world() -> T {
    world_with(|_| {})
}

fn world_with(change: impl FnOnce(&mut IngressConfig)) -> T {
    let w = World::new();
    let mut cfg = IngressConfig {
        cluster_name: CLUSTER.into(),
        vpc_id: VPC.into(),
        select: Default::default(),
        default_tags: Tags::new(),
        external_managed_tags: BTreeSet::new(),
        default_ssl_policy: "ELBSecurityPolicy-2016-08".into(),
        default_target_type: TargetType::Ip,
        sync_period: Duration::from_secs(600),
        max_backoff: Duration::from_secs(60),
        default_scheme: lbc_model::lb::Scheme::Internal,
        gates: Default::default(),
        wafv2: false,
        waf_classic: true,
        shield: true,
        required_secrets_label: None,
        tenancy: Default::default(),
        tolerate_missing_service: true,
        tolerate_missing_action: true,
        default_pca_arn: String::new(),
        allowed_certificate_authorities: Vec::new(),
    };
    change(&mut cfg);
    let backend_sg = Arc::new(BackendSecurityGroup::new(BackendSgMode::Auto, w.net.clone(), CLUSTER, VPC, Tags::new()));
    let ctx = IngressCtx::new(w.base.clone(), &w.adapters(), Arc::new(FakeAcm::default()), cfg, backend_sg);
    w.put(|c| &mut c.classes, class());
    for name in ["a", "b"] {
        w.put(|c| &mut c.services, backend(name));
    }
    T { w, ctx, g: GroupId::Explicit(GROUP.into()) }
}

impl T {
    async fn reconcile(&self, ings: &[&Ingress]) -> Option<Duration> {
        for i in ings {
            self.w.put(|c| &mut c.ingresses, (*i).clone());
        }
        reconcile(&self.ctx, &self.g).await
    }

    /// A first pass over new Ingresses; their bindings cached, the hostname they got.
    async fn created(&self, ings: &[&Ingress]) -> String {
        self.reconcile(ings).await;
        self.w.settle_first_pass()
    }

    /// Every rule of the ALB's listeners, by priority.
    async fn rules(&self) -> Vec<lbc_model::lb::Rule> {
        let tags = Tags::from([("ingress.k8s.aws/stack".to_string(), GROUP.to_string())]);
        let mut out = Vec::new();
        for lb in self.w.lbs.find_load_balancers(&tags).await.unwrap() {
            for l in self.w.lbs.listeners(&lb.lb.id).await.unwrap() {
                out.extend(self.w.lbs.rules(&l.id).await.unwrap().into_iter().map(|r| r.spec));
            }
        }
        self.w.aws();
        out.sort_by_key(|r| r.priority);
        out
    }

    /// Conditions of every rule, by priority.
    async fn routed_paths(&self) -> Vec<String> {
        self.rules().await.iter().map(|r| format!("{:?}", r.conditions)).collect()
    }

    /// Actions of every rule, by priority.
    async fn routed_actions(&self) -> Vec<String> {
        self.rules().await.iter().map(|r| format!("{:?}", r.actions)).collect()
    }
}

fn lines(seen: &[Seen]) -> Vec<String> {
    seen.iter().map(Seen::line).collect()
}

fn within(d: Option<Duration>, lo: u64, hi: u64) -> bool {
    d.is_some_and(|d| d >= Duration::from_secs(lo) && d <= Duration::from_secs(hi))
}

// ---------------------------------------------------------------------------------------------
// Main paths

#[tokio::test(start_paused = true)]
async fn two_ingresses_of_one_group_share_one_alb_with_the_rules_of_both() {
    let t = world();
    let next = t.reconcile(&[&ingress("a", &[(k::GROUP_ORDER, "10")]), &ingress("b", &[])]).await;
    assert!(within(next, 600, 900), "drift check at the sync period: {next:?}");

    let kube = t.w.kube();
    let finalizers: Vec<&Seen> = kube.iter().filter(|r| r.path == ing_path("a") || r.path == ing_path("b")).collect();
    let patched: Vec<String> = finalizers.iter().map(|s| s.line()).collect();
    assert_eq!(patched, vec![format!("PATCH {}", ing_path("b")), format!("PATCH {}", ing_path("a"))], "group order");
    assert!(finalizers.iter().all(|r| r.aws_writes_before == 0), "finalizers before any AWS write");
    assert_eq!(finalizers[0].body["metadata"]["finalizers"], json!([FINALIZER]));
    let bindings = kube.iter().filter(|r| r.path.contains("/targetgroupbindings/")).count();
    assert_eq!(bindings, 2, "one binding per backend: {:?}", lines(&kube));
    let statuses: Vec<&Seen> = kube.iter().filter(|r| r.path.ends_with("/status")).collect();
    assert_eq!(statuses.len(), 2, "both members get the hostname");
    assert_eq!(statuses[0].body, statuses[1].body);

    let (lb, net) = t.w.aws_writes();
    assert_eq!(
        lb,
        vec![
            "CreateTargetGroup",
            "CreateTargetGroup",
            "CreateLoadBalancer",
            "CreateListener",
            "CreateRule",
            "CreateRule"
        ],
        "one ALB, one listener, a target group and a rule per member"
    );
    assert_eq!(net, vec!["CreateSecurityGroup", "CreateSecurityGroup", "AuthorizeSecurityGroupIngress"]);
    let paths = t.routed_paths().await;
    assert_eq!(paths.len(), 2, "{paths:?}");
    assert!(paths[0].contains("/b") && paths[1].contains("/a"), "b (order 0) before a (order 10): {paths:?}");
    let reasons = t.w.event_reasons();
    assert_eq!(reasons, vec!["SuccessfullyReconciled", "SuccessfullyReconciled"], "one per member");
}

#[tokio::test(start_paused = true)]
async fn a_removed_member_loses_its_rules_and_finalizer_the_alb_stays() {
    let t = world();
    let host = t.created(&[&ingress("a", &[]), &ingress("b", &[])]).await;
    let (a, b) = (settled(ingress("a", &[]), &host), deleting(settled(ingress("b", &[]), &host)));
    let next = t.reconcile(&[&a, &b]).await;
    assert!(within(next, 600, 900), "{next:?}");

    let (lb, net) = t.w.aws_writes();
    assert_eq!(lb, vec!["DeleteRule"], "b's rule goes; its target group waits for b's binding; the ALB stays");
    assert!(net.is_empty(), "the listener port is unchanged: {net:?}");
    let paths = t.routed_paths().await;
    assert_eq!(paths.len(), 1, "{paths:?}");
    assert!(paths[0].contains("/a"), "{paths:?}");

    let kube = t.w.kube();
    let b_binding = kube.iter().find(|r| r.method == http::Method::DELETE).expect("b's binding deleted");
    assert!(b_binding.path.contains("/targetgroupbindings/"), "{}", b_binding.line());
    let last = kube.last().unwrap();
    assert_eq!(last.line(), format!("PATCH {}", ing_path("b")), "b's finalizer goes last: {:?}", lines(&kube));
    assert_eq!(last.body["metadata"]["finalizers"], json!([]));
    assert!(!lines(&kube).iter().any(|l| l.contains("ingresses/a")), "a is already settled");
    assert!(!lines(&kube).iter().any(|l| l.ends_with("/status")), "no status write on a deleted Ingress");

    // b's binding has deregistered its targets and is gone: its target group goes on the pass
    // that deletion wakes.
    let name = b_binding.path.rsplit('/').next().unwrap();
    let cached = t.w.base.stores.tgbs.state().into_iter().find(|c| c.metadata.name.as_deref() == Some(name));
    t.w.remove(|c| &mut c.tgbs, cached.expect("b's binding cached").as_ref().clone());
    t.reconcile(&[&a]).await;
    assert_eq!(t.w.aws_writes(), (vec!["DeleteTargetGroup".to_string()], vec![]));
}

#[tokio::test(start_paused = true)]
async fn deleting_the_last_members_deletes_the_alb_then_the_finalizers() {
    let t = world();
    let host = t.created(&[&ingress("a", &[]), &ingress("b", &[])]).await;
    let (a, b) = (deleting(settled(ingress("a", &[]), &host)), deleting(settled(ingress("b", &[]), &host)));

    let next = t.reconcile(&[&a, &b]).await;
    assert_eq!(next, Some(Duration::from_secs(2)), "waits for the bindings' finalizers");
    let kube = t.w.kube();
    assert_eq!(kube.iter().filter(|r| r.method == http::Method::DELETE).count(), 2, "{:?}", lines(&kube));
    assert_eq!(kube.len(), 2, "only the bindings: {:?}", lines(&kube));
    assert_eq!(t.w.aws_writes(), (vec![], vec![]), "nothing deleted in AWS while bindings remain");

    for tgb in t.w.base.stores.tgbs.state() {
        t.w.remove(|c| &mut c.tgbs, tgb.as_ref().clone());
    }
    let next = t.reconcile(&[&a, &b]).await;
    assert_eq!(next, None);
    let (lb, net) = t.w.aws_writes();
    assert_eq!(
        lb,
        vec!["DeleteLoadBalancer", "DeleteTargetGroup", "DeleteTargetGroup"],
        "its listeners go with the ALB"
    );
    assert_eq!(net, vec!["DeleteSecurityGroup"], "the managed frontend group");
    assert_eq!(t.w.lbs.load_balancer_count() + t.w.lbs.target_group_count(), 0);
    let kube = t.w.kube();
    let mut patched = lines(&kube);
    patched.sort();
    assert_eq!(patched, vec![format!("PATCH {}", ing_path("a")), format!("PATCH {}", ing_path("b"))]);
    assert!(kube.iter().all(|r| r.aws_writes_before == kube[0].aws_writes_before), "after every AWS deletion");
    assert!(kube.iter().all(|r| r.body["metadata"]["finalizers"] == json!([])));
    assert_eq!(t.w.event_reasons(), vec!["SuccessfullyDeleted", "SuccessfullyDeleted"]);
}

#[tokio::test(start_paused = true)]
async fn a_web_acl_annotation_associates_the_alb_once() {
    let t = world_with(|cfg| cfg.wafv2 = true);
    let acl = "arn:aws:wafv2:eu-west-1:111122223333:regional/webacl/shop/1";
    t.w.waf.add("shop", acl);
    let a = ingress("a", &[(k::WAFV2_ACL_ARN, acl)]);
    let host = t.created(&[&a, &ingress("b", &[])]).await;
    let tags = Tags::from([("ingress.k8s.aws/stack".to_string(), GROUP.to_string())]);
    let arn = t.w.lbs.find_load_balancers(&tags).await.unwrap().remove(0).lb.id;
    assert_eq!(t.w.waf.associated(&arn).as_deref(), Some(acl));
    let ops = |t: &T| -> Vec<&'static str> {
        let mut log = t.w.waf.log.lock().unwrap();
        let ops = log.calls().iter().map(|(op, _)| *op).collect();
        log.clear();
        ops
    };
    assert_eq!(ops(&t), vec!["GetWebACLForResource", "AssociateWebACL"]);

    // In sync: read, not written again.
    t.reconcile(&[&settled(a, &host), &settled(ingress("b", &[]), &host)]).await;
    assert_eq!(ops(&t), vec!["GetWebACLForResource"]);
    assert_eq!(t.w.aws_writes(), (vec![], vec![]));
}

/// An HTTPS Ingress's annotations authenticating with OIDC, its client credentials in Secret `oidc`.
fn oidc_https() -> [(&'static str, &'static str); 4] {
    let oidc = r#"{"issuer":"https://idp.example","authorizationEndpoint":"https://idp.example/auth",
        "tokenEndpoint":"https://idp.example/token","userInfoEndpoint":"https://idp.example/userinfo",
        "secretName":"oidc"}"#;
    [
        (k::LISTEN_PORTS, r#"[{"HTTPS":443}]"#),
        (k::CERTIFICATE_ARN, "arn:aws:acm:eu-west-1:111122223333:certificate/1"),
        (k::AUTH_TYPE, "oidc"),
        (k::AUTH_IDP_OIDC, oidc),
    ]
}

#[tokio::test(start_paused = true)]
async fn an_oidc_secret_is_read_every_pass_missing_it_blocks_and_retries_within_a_minute() {
    let t = world();
    let https = oidc_https();
    let a = ingress("a", &https);
    let next = t.reconcile(&[&a]).await;
    assert_eq!(next, Some(Duration::from_secs(60)), "Secrets are not watched: looked at again soon");
    let secret = format!("/api/v1/namespaces/{NS}/secrets/oidc");
    assert_eq!(t.w.kube_lines(), vec![format!("PATCH {}", ing_path("a")), format!("GET {secret}")]);
    assert_eq!(t.w.aws_writes(), (vec![], vec![]), "nothing deployed without the credentials");
    let (kind, reason, note) = t.w.the_event();
    assert_eq!((kind.as_str(), reason.as_str()), ("Warning", crate::stack::FAILED_BUILD));
    assert!(note.contains("shop/oidc") && note.contains("clientID") && note.contains("clientSecret"), "{note}");

    // The Secret appears: the next pass reads it and deploys the authenticating rule.
    t.w.server.lock().unwrap().secrets.insert(
        format!("{NS}/oidc"),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "oidc", "namespace": NS},
               "data": {"clientID": "YXBw", "clientSecret": "czNjcmV0"}}),
    );
    let mut with_finalizer = a.clone();
    with_finalizer.metadata.finalizers = Some(vec![FINALIZER.into()]);
    let next = t.reconcile(&[&with_finalizer]).await;
    assert!(within(next, 600, 900), "{next:?}");
    assert_eq!(t.w.kube_lines().first(), Some(&format!("GET {secret}")));
    let (lb, _) = t.w.aws_writes();
    assert!(lb.contains(&"CreateRule".to_string()), "{lb:?}");
    let rules = t.routed_actions().await;
    assert!(rules.iter().any(|a| a.contains("AuthenticateOidc") && a.contains("\"app\"")), "{rules:?}");
    let notes: Vec<String> = t.w.events().into_iter().map(|e| e.2).collect();
    assert!(notes.iter().all(|n| !n.contains("s3cret")), "never a secret value in an Event: {notes:?}");
}

/// `--required-secrets-label`: an OIDC Secret without the label is not used (the group waits, the
/// Event names the label and what was found); labelled, it is.
#[tokio::test(start_paused = true)]
async fn an_oidc_secret_without_the_required_label_is_not_used() {
    let t = world_with(|c| c.required_secrets_label = Some(("lbc.example/oidc".into(), "yes".into())));
    let https = oidc_https();
    let secret = |labels: serde_json::Value| {
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "oidc", "namespace": NS, "labels": labels},
               "data": {"clientID": "YXBw", "clientSecret": "czNjcmV0"}})
    };
    t.w.server.lock().unwrap().secrets.insert(format!("{NS}/oidc"), secret(json!({"lbc.example/oidc": "no"})));
    let a = ingress("a", &https);
    t.reconcile(&[&a]).await;
    assert_eq!(t.w.aws_writes(), (vec![], vec![]), "nothing deployed with an unlabelled Secret");
    let (kind, _, note) = t.w.the_event();
    assert_eq!(kind, "Warning");
    assert!(
        note.contains("shop/oidc")
            && note.contains("lbc.example/oidc=yes")
            && note.contains("found lbc.example/oidc=no"),
        "{note}"
    );

    t.w.server.lock().unwrap().secrets.insert(format!("{NS}/oidc"), secret(json!({"lbc.example/oidc": "yes"})));
    let mut with_finalizer = a.clone();
    with_finalizer.metadata.finalizers = Some(vec![FINALIZER.into()]);
    t.reconcile(&[&with_finalizer]).await;
    let rules = t.routed_actions().await;
    assert!(rules.iter().any(|a| a.contains("AuthenticateOidc")), "{rules:?}");
}

// ---------------------------------------------------------------------------------------------
// Failure paths

#[tokio::test(start_paused = true)]
async fn a_pruned_ingress_class_freezes_the_group_nothing_is_deleted() {
    let t = world();
    let host = t.created(&[&ingress("a", &[]), &ingress("b", &[])]).await;
    let (a, b) = (settled(ingress("a", &[]), &host), settled(ingress("b", &[]), &host));
    t.w.remove(|c| &mut c.classes, class());

    let next = t.reconcile(&[&a, &b]).await;
    assert!(within(next, 600, 900), "looked at again at the sync period: {next:?}");
    assert_eq!(t.w.aws_writes(), (vec![], vec![]), "frozen: nothing deleted, nothing changed");
    assert_eq!(t.w.lbs.load_balancer_count(), 1);
    assert!(t.w.kube().is_empty(), "finalizers and status untouched");
    let events = t.w.events();
    assert_eq!(events.iter().map(|e| e.1.as_str()).collect::<Vec<_>>(), vec!["GroupFrozen", "GroupFrozen"]);
    assert!(events.iter().all(|e| e.0 == "Warning"));
    assert!(events[0].2.contains("IngressClass alb") && events[0].2.contains("frozen"), "{}", events[0].2);

    // Even with every member deleted meanwhile, a frozen group is not deleted.
    let next = t.reconcile(&[&deleting(a.clone()), &b]).await;
    assert!(next.is_some());
    assert_eq!(t.w.aws_writes(), (vec![], vec![]));

    // The class is back: the group resumes, with nothing to change.
    t.w.put(|c| &mut c.classes, class());
    t.reconcile(&[&a, &b]).await;
    assert_eq!(t.w.aws_writes(), (vec![], vec![]));
    let reasons = t.w.event_reasons();
    assert!(reasons.iter().filter(|r| *r == "GroupResumed").count() == 2, "{reasons:?}");
}

/// A member switching its own Ingress to a class that does not exist leaves the group by its own
/// change: the others keep their load balancer and are never frozen by it. The same switch unseen
/// by this process (a restart between) freezes, the safe side.
#[tokio::test(start_paused = true)]
async fn a_member_switching_itself_to_a_missing_class_leaves_without_freezing_the_group() {
    let t = world();
    let host = t.created(&[&ingress("a", &[]), &ingress("b", &[])]).await;
    let a = settled(ingress("a", &[]), &host);
    let mut b = settled(ingress("b", &[]), &host);
    b.spec.as_mut().unwrap().ingress_class_name = Some("missing".into());

    t.reconcile(&[&a, &b]).await;
    let events = t.w.events();
    assert!(!events.iter().any(|e| e.1 == "GroupFrozen"), "{events:?}");
    let rules = t.rules().await;
    let paths: Vec<String> = rules.iter().flat_map(|r| r.conditions.iter().map(|c| format!("{c:?}"))).collect();
    assert!(paths.iter().any(|p| p.contains("/a")) && !paths.iter().any(|p| p.contains("/b")), "{paths:?}");
    let note = events
        .iter()
        .find(|e| e.1 == "InvalidIngressClass")
        .map(|e| e.2.clone())
        .unwrap_or_else(|| panic!("a Warning on b: {events:?}"));
    assert!(
        note.contains("IngressClass alb") && note.contains("IngressClass missing") && note.contains("own change"),
        "{note}"
    );
    assert_eq!(t.w.lbs.load_balancer_count(), 1, "a's load balancer stays");

    // A process that never saw b as a member (a restart between) cannot tell its change from a
    // pruned class: frozen.
    let t = world();
    let host = t.created(&[&ingress("a", &[]), &ingress("b", &[])]).await;
    t.ctx.member_classes.lock().unwrap().clear();
    let a = settled(ingress("a", &[]), &host);
    let mut b = settled(ingress("b", &[]), &host);
    b.spec.as_mut().unwrap().ingress_class_name = Some("missing".into());
    t.reconcile(&[&a, &b]).await;
    assert!(t.w.event_reasons().iter().any(|r| r == "GroupFrozen"), "{:?}", t.w.event_reasons());
    assert_eq!(t.w.aws_writes(), (vec![], vec![]), "frozen: nothing changed");
}

#[tokio::test(start_paused = true)]
async fn a_new_ingress_naming_a_missing_class_is_left_alone_with_a_warning() {
    let t = world();
    t.w.remove(|c| &mut c.classes, class());
    let a = ingress("a", &[]);
    t.w.put(|c| &mut c.ingresses, a.clone());
    let trigger = IngressTrigger::Ingress(kube::runtime::reflector::ObjectRef::from_obj(&a));
    let groups: Vec<GroupId> = groups_of_trigger(&t.w.base.stores, &t.ctx.cfg, &trigger).into_iter().collect();
    assert_eq!(groups, vec![GroupId::Implicit { namespace: NS.into(), name: "a".into() }], "its own group reports it");
    for g in &groups {
        assert_eq!(reconcile(&t.ctx, g).await, None);
    }
    assert_eq!(t.w.aws_writes(), (vec![], vec![]));
    assert!(t.w.kube().is_empty(), "no finalizer on an Ingress that is not ours");
    let (kind, reason, note) = &t.w.the_event();
    assert_eq!((kind.as_str(), reason.as_str()), ("Warning", "InvalidIngressClass"));
    assert!(note.contains("alb") && note.contains("left out"), "{note}");
}

#[tokio::test(start_paused = true)]
async fn conflicting_exclusive_annotations_are_refused_with_both_values() {
    let t = world();
    let a = ingress("a", &[(k::SCHEME, "internal")]);
    let b = ingress("b", &[(k::SCHEME, "internet-facing")]);
    let next = t.reconcile(&[&a, &b]).await;
    assert_eq!(next, None, "fixed by an edit of an Ingress");
    assert_eq!(t.w.aws_writes(), (vec![], vec![]));
    assert!(t.w.kube().is_empty(), "not even a finalizer");
    let events = t.w.events();
    assert_eq!(events.len(), 2, "one per member: {events:?}");
    assert!(events.iter().all(|e| e.0 == "Warning" && e.1 == crate::stack::FAILED_BUILD), "{events:?}");
    let note = &events[0].2;
    assert!(
        note.contains("alb.ingress.kubernetes.io/scheme")
            && note.contains("shop/a has internal")
            && note.contains("shop/b has internet-facing"),
        "names the annotation and both values: {note}"
    );
}

/// A protection that cannot be applied holds the group as it is: `shield-advanced-protection:
/// "true"` on an account without an active Shield Advanced subscription (ALBC deploys the ALB
/// unprotected). Another member's change waits too, nothing is written, the members hear why and
/// the group is looked at again; once the account is subscribed the held change is applied and
/// the ALB protected.
#[tokio::test(start_paused = true)]
async fn a_protection_that_cannot_be_applied_holds_the_whole_group_as_it_is() {
    let t = world();
    let host = t.created(&[&ingress("a", &[]), &ingress("b", &[])]).await;
    t.w.shield.set_subscription("INACTIVE");
    let reordered = settled(ingress("a", &[(k::GROUP_ORDER, "10")]), &host);
    let shield = settled(ingress("b", &[(k::SHIELD_ADVANCED_PROTECTION, "true")]), &host);
    let next = t.reconcile(&[&reordered, &shield]).await;
    assert_eq!(next, Some(Duration::from_secs(600)), "subscribing happens outside the cluster: looked at again");
    assert_eq!(t.w.aws_writes(), (vec![], vec![]), "the ALB stays exactly as it was");
    let events = t.w.events();
    assert!(!events.is_empty());
    for (kind, reason, note) in &events {
        assert_eq!((kind.as_str(), reason.as_str()), ("Warning", crate::stack::FAILED_BUILD));
        assert!(
            note.contains("alb.ingress.kubernetes.io/shield-advanced-protection")
                && note.contains("INACTIVE")
                && note.contains("nothing changed in AWS"),
            "names the annotation, what AWS said and the consequence: {note}"
        );
    }

    t.w.shield.set_subscription("ACTIVE");
    let next = t.reconcile(&[&reordered, &shield]).await;
    assert!(within(next, 600, 900), "{next:?}");
    let (lb, _) = t.w.aws_writes();
    assert!(!lb.is_empty(), "the held reorder is applied once the account is subscribed");
    let tags = Tags::from([("ingress.k8s.aws/stack".to_string(), GROUP.to_string())]);
    let arn = t.w.lbs.find_load_balancers(&tags).await.unwrap().remove(0).lb.id;
    let p = t.w.shield.protection(&arn).expect("protected");
    assert_eq!(p.name, lbc_model::lb::extras::SHIELD_PROTECTION_NAME);
}

/// `shield-advanced-protection: "false"` deletes the protection this controller made, never one
/// made by someone else; without the annotation protections are not even read.
#[tokio::test(start_paused = true)]
async fn shield_false_removes_only_our_protection() {
    let t = world();
    let on = ingress("a", &[(k::SHIELD_ADVANCED_PROTECTION, "true")]);
    let host = t.created(&[&on]).await;
    let tags = Tags::from([("ingress.k8s.aws/stack".to_string(), GROUP.to_string())]);
    let arn = t.w.lbs.find_load_balancers(&tags).await.unwrap().remove(0).lb.id;
    assert!(t.w.shield.protection(&arn).is_some());
    let off = settled(ingress("a", &[(k::SHIELD_ADVANCED_PROTECTION, "false")]), &host);
    t.reconcile(&[&off]).await;
    assert_eq!(t.w.shield.protection(&arn), None, "ours: deleted");

    let by_hand = t.w.shield.add(&arn, "protected by the security team");
    t.reconcile(&[&off]).await;
    assert_eq!(t.w.shield.protection(&arn).map(|p| p.id), Some(by_hand), "not ours: left alone");
    t.w.shield.log.lock().unwrap().clear();
    t.reconcile(&[&settled(ingress("a", &[]), &host)]).await;
    assert!(t.w.shield.log.lock().unwrap().calls().is_empty(), "no annotation, no Shield call");
}

/// `waf-acl-id` associates the WAF Classic web ACL once; `none` removes it; `--enable-waf=false`
/// leaves associations alone.
#[tokio::test(start_paused = true)]
async fn a_waf_classic_annotation_associates_and_none_disassociates() {
    let t = world();
    t.w.waf_classic.add("acl-1");
    let a = ingress("a", &[(k::WEB_ACL_ID, "acl-1")]);
    let host = t.created(&[&a]).await;
    let tags = Tags::from([("ingress.k8s.aws/stack".to_string(), GROUP.to_string())]);
    let arn = t.w.lbs.find_load_balancers(&tags).await.unwrap().remove(0).lb.id;
    assert_eq!(t.w.waf_classic.associated(&arn).as_deref(), Some("acl-1"));
    let ops = |t: &T| -> Vec<&'static str> {
        let mut log = t.w.waf_classic.log.lock().unwrap();
        let ops = log.calls().iter().map(|(op, _)| *op).collect();
        log.clear();
        ops
    };
    assert_eq!(ops(&t), vec!["GetWebACLForResource", "AssociateWebACL"]);
    t.reconcile(&[&settled(a, &host)]).await;
    assert_eq!(ops(&t), vec!["GetWebACLForResource"], "in sync: read, not written again");
    t.reconcile(&[&settled(ingress("a", &[(k::WAF_ACL_ID, "none")]), &host)]).await;
    assert_eq!(ops(&t), vec!["GetWebACLForResource", "DisassociateWebACL"]);
    assert_eq!(t.w.waf_classic.associated(&arn), None);

    let off = world_with(|cfg| cfg.waf_classic = false);
    off.w.waf_classic.add("acl-1");
    off.created(&[&ingress("a", &[(k::WAF_ACL_ID, "acl-1")])]).await;
    assert!(off.w.waf_classic.log.lock().unwrap().calls().is_empty(), "--enable-waf=false: not this controller's");
}

/// The mutual TLS of the group's listener on `port`, as the fake AWS holds it.
async fn listener_mtls(t: &T, port: u16) -> Option<lbc_model::lb::MutualAuthentication> {
    let tags = Tags::from([("ingress.k8s.aws/stack".to_string(), GROUP.to_string())]);
    let [lb] = t.w.lbs.find_load_balancers(&tags).await.unwrap().try_into().expect("one ALB");
    let listeners = t.w.lbs.listeners(&lb.lb.id).await.unwrap();
    t.w.aws();
    listeners.into_iter().find(|l| l.spec.port == port).expect("the listener").spec.mutual_authentication
}

#[tokio::test(start_paused = true)]
async fn mutual_tls_names_a_trust_store_waits_for_it_and_follows_changes() {
    let t = world();
    let https = |mtls: &'static str| {
        ingress(
            "a",
            &[
                (k::LISTEN_PORTS, r#"[{"HTTPS": 443}]"#),
                (k::CERTIFICATE_ARN, "arn:aws:acm:us-east-1:123456789012:certificate/c1"),
                (k::MUTUAL_AUTHENTICATION, mtls),
            ],
        )
    };
    let verify = https(r#"[{"port": 443, "mode": "verify", "trustStore": "partners"}]"#);
    // The trust store does not exist yet: nothing is created, a Warning names it, a look again soon.
    let next = t.reconcile(&[&verify]).await;
    assert_eq!(next, Some(Duration::from_secs(60)), "trust stores are in AWS, not watched");
    assert_eq!(t.w.aws_writes(), (vec![], vec![]), "no ALB without its mutual TLS");
    let (kind, reason, note) = &t.w.the_event();
    assert_eq!((kind.as_str(), reason.as_str()), ("Warning", crate::stack::FAILED_BUILD));
    assert!(
        note.contains("\"partners\"") && note.contains("alb.ingress.kubernetes.io/mutual-authentication"),
        "{note}"
    );

    // Created: the listener verifies client certificates against the store, by ARN.
    let arn = t.w.lbs.add_trust_store("partners");
    t.reconcile(&[&verify]).await;
    let host = t.w.settle_first_pass();
    let want = lbc_model::lb::MutualAuthentication {
        mode: lbc_model::lb::MtlsMode::Verify,
        trust_store_arn: Some(arn),
        ignore_client_certificate_expiry: Some(false),
        advertise_trust_store_ca_names: None,
    };
    assert_eq!(listener_mtls(&t, 443).await, Some(want));
    t.reconcile(&[&settled(verify, &host)]).await;
    assert_eq!(t.w.aws_writes(), (vec![], vec![]), "settled: no write");

    // Passthrough: one ModifyListener.
    let pass = settled(https(r#"[{"port": 443, "mode": "passthrough"}]"#), &host);
    t.reconcile(&[&pass]).await;
    assert_eq!(t.w.aws_writes().0, ["ModifyListener"]);
    let got = listener_mtls(&t, 443).await.expect("set");
    assert_eq!((got.mode, got.trust_store_arn), (lbc_model::lb::MtlsMode::Passthrough, None));
    t.reconcile(&[&pass]).await;
    assert_eq!(t.w.aws_writes(), (vec![], vec![]), "settled again");
}

#[tokio::test(start_paused = true)]
async fn a_group_order_out_of_range_is_a_warning_naming_the_value_and_the_range() {
    let t = world();
    let (a, b) = (ingress("a", &[(k::GROUP_ORDER, "1001")]), ingress("b", &[]));
    for i in [&a, &b] {
        t.w.put(|c| &mut c.ingresses, i.clone());
    }
    // The groups a watch event on `a` concerns: its group is unknown, its own implicit one
    // reports the problem.
    let trigger = IngressTrigger::Ingress(kube::runtime::reflector::ObjectRef::from_obj(&a));
    let groups = groups_of_trigger(&t.w.base.stores, &t.ctx.cfg, &trigger);
    let implicit = GroupId::Implicit { namespace: NS.into(), name: "a".into() };
    assert_eq!(groups.into_iter().collect::<Vec<_>>(), vec![implicit.clone()]);
    assert_eq!(reconcile(&t.ctx, &implicit).await, None, "fixed by an edit of the Ingress");
    assert_eq!(t.w.aws_writes(), (vec![], vec![]));
    assert!(t.w.kube().is_empty(), "no finalizer");
    let (kind, reason, note) = &t.w.the_event();
    assert_eq!((kind.as_str(), reason.as_str()), ("Warning", crate::stack::FAILED_BUILD));
    assert!(note.contains("group.order") && note.contains("1001") && note.contains("1000"), "{note}");

    // The group goes on without it: b's rule only, a gets no finalizer.
    reconcile(&t.ctx, &t.g).await;
    assert!(!t.w.kube_lines().iter().any(|l| l.contains("ingresses/a")));
    let paths = t.routed_paths().await;
    assert_eq!(paths.len(), 1, "{paths:?}");
    assert!(paths[0].contains("/b"), "{paths:?}");
}

#[tokio::test(start_paused = true)]
async fn throttling_backs_off_per_group_and_doubles() {
    let t = world();
    t.w.lbs.inject_fault("CreateLoadBalancer", ErrorKind::Throttled);
    t.w.lbs.inject_fault("CreateLoadBalancer", ErrorKind::Throttled);
    let (a, b) = (ingress("a", &[]), ingress("b", &[]));
    let next = t.reconcile(&[&a, &b]).await;
    assert!(within(next, 1, 2), "first step 1 s plus jitter: {next:?}");
    let next = t.reconcile(&[&a, &b]).await;
    assert!(within(next, 2, 4), "then 2 s plus jitter: {next:?}");
    let (lb, _) = t.w.aws_writes();
    assert_eq!(lb.iter().filter(|op| *op == "CreateTargetGroup").count(), 2, "created once each: {lb:?}");
    let next = t.reconcile(&[&a, &b]).await;
    assert!(within(next, 600, 900), "then in sync: {next:?}");
    assert_eq!(t.w.lbs.load_balancer_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_missing_backend_service_answers_503_unless_the_controller_is_told_not_to_tolerate_it() {
    let ghost = ingress("ghost", &[]); // Service "ghost" does not exist
    let tolerant = world();
    tolerant.reconcile(&[&ingress("a", &[]), &ghost]).await;
    assert!(tolerant.routed_actions().await.iter().any(|a| a.contains("503")), "ALBC's default: a fixed 503");
    let strict = world_with(|c| c.tolerate_missing_service = false);
    strict.reconcile(&[&ingress("a", &[]), &ghost]).await;
    assert_eq!(strict.w.aws_writes(), (vec![], vec![]), "the group's pass stops before any AWS write");
    let events = strict.w.events();
    let failed =
        events.iter().find(|e| e.2.contains("shop/ghost does not exist")).unwrap_or_else(|| panic!("{events:?}"));
    assert!(failed.0 == "Warning" && failed.2.contains("--tolerate-non-existent-backend-service=false"), "{failed:?}");
}

#[tokio::test(start_paused = true)]
async fn albcs_plan_annotation_is_cleared_as_albc_clears_it_with_its_gate_off() {
    let t = world();
    let ing = ingress("a", &[("dry-run-plan", r#"{"id":"shop/a","resources":{}}"#)]);
    t.reconcile(&[&ing]).await;
    let patches: Vec<Seen> = t.w.kube().into_iter().filter(|r| r.path.ends_with("/ingresses/a")).collect();
    let cleared = patches.iter().find(|r| r.body["metadata"]["annotations"].is_object()).expect("a patch of it");
    let key = k::full_key(k::DRY_RUN_PLAN);
    assert_eq!(cleared.body["metadata"]["annotations"][key.as_str()], serde_json::Value::Null);
    assert!(cleared.body["metadata"]["annotations"].as_object().unwrap().contains_key(key.as_str()), "set to null");
    assert!(cleared.body["metadata"]["resourceVersion"].is_string(), "guarded by the version it was read at");
    assert!(t.w.events().iter().all(|e| !e.2.contains("dry-run-plan")), "no Warning about it: {:?}", t.w.events());
    // Without it, nothing is patched for it.
    let t = world();
    t.reconcile(&[&ingress("a", &[])]).await;
    assert!(t.w.kube().iter().all(|r| !r.body["metadata"]["annotations"].is_object()));
}

#[tokio::test(start_paused = true)]
async fn a_replica_that_does_not_lead_does_nothing() {
    let t = world();
    t.w.leader.send(false).unwrap();
    assert_eq!(t.reconcile(&[&ingress("a", &[])]).await, None);
    assert_eq!(t.w.aws(), (vec![], vec![]));
    assert!(t.w.kube().is_empty() && t.w.events().is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_instance_mode_backend_gets_a_node_port_target_group_and_an_instance_binding() {
    let t = world_with(|c| c.default_target_type = TargetType::Instance);
    let mut svc = backend("a");
    let spec = svc.spec.as_mut().unwrap();
    spec.type_ = Some("NodePort".into());
    spec.ports.as_mut().unwrap()[0].node_port = Some(30080);
    t.w.put(|c| &mut c.services, svc);
    let mut ing = ingress("a", &[(k::TARGET_NODE_LABELS, "role=edge")]);
    // No target-type annotation: --default-target-type (instance) decides, as in ALBC.
    ing.metadata.annotations.as_mut().unwrap().remove(&k::full_key(k::TARGET_TYPE));
    t.reconcile(&[&ing]).await;
    let tags = Tags::from([("ingress.k8s.aws/stack".to_string(), GROUP.to_string())]);
    let [tg] = t.w.lbs.find_target_groups(&tags).await.unwrap().try_into().expect("one target group");
    assert_eq!((tg.spec.target_type.as_str(), tg.spec.port), ("instance", 30080), "the nodes on the NodePort");
    let b = &t.w.the_binding_spec();
    assert_eq!(b["targetType"], json!("instance"));
    assert_eq!(b["nodeSelector"], json!({"matchLabels": {"role": "edge"}}));
    assert_eq!(b["serviceRef"], json!({"name": "a", "port": 80}));
    assert_eq!(b["networking"]["ingress"][0]["ports"], json!([{"protocol": "TCP", "port": 30080}]));
    assert!(t.w.events().iter().all(|e| e.0 != "Warning"), "{:?}", t.w.events());
}

// ---------------------------------------------------------------------------------------------
// Tenancy (docs/security.md)

/// Ingress `b` of namespace `other` joining group `shared` first in order with a catch-all path.
fn intruder() -> Ingress {
    let mut b = ingress("b", &[(k::GROUP_ORDER, "-1000")]);
    b.metadata.namespace = Some("other".into());
    b
}

fn tenancy_world(mode: lbc_model::tenancy::TenancyMode) -> T {
    let policy = r#"{"ingressGroups": [{"group": "shared", "namespaces": ["shop"], "owner": "shop"}]}"#;
    world_with(|c| c.tenancy = Arc::new(Tenancy::parse(mode, policy, "test").unwrap()))
}

#[tokio::test(start_paused = true)]
async fn strict_tenancy_leaves_out_a_member_of_an_ungranted_namespace_and_deploys_the_others() {
    let t = tenancy_world(lbc_model::tenancy::TenancyMode::Strict);
    t.reconcile(&[&ingress("a", &[]), &intruder()]).await;
    let paths = t.routed_paths().await;
    assert_eq!(paths.len(), 1, "only the granted member is routed: {paths:?}");
    assert!(paths[0].contains("/a"), "{paths:?}");
    let reasons = t.w.event_reasons();
    assert!(reasons.contains(&"TenancyRefused".to_string()), "{reasons:?}");
    assert!(reasons.contains(&"SuccessfullyReconciled".to_string()), "the granted member is deployed: {reasons:?}");
    let touched: Vec<String> =
        t.w.kube().iter().filter(|r| r.path.contains("/namespaces/other/ingresses/")).map(Seen::line).collect();
    assert!(touched.is_empty(), "the refused Ingress gets no finalizer and no status: {touched:?}");
}

#[tokio::test(start_paused = true)]
async fn strict_tenancy_refuses_a_forward_to_an_ungranted_target_group_and_changes_nothing() {
    let t = tenancy_world(lbc_model::tenancy::TenancyMode::Strict);
    let a = ingress("a", &[]);
    t.created(&[&a]).await;
    let before = t.routed_actions().await;
    t.w.aws();
    t.w.events();
    // The Ingress now sends /a to a target group it names by ARN (another team's, say).
    let victim = "arn:aws:elasticloadbalancing:us-east-1:111122223333:targetgroup/payments/0123456789abcdef";
    let forward = format!(r#"{{"type": "forward", "targetGroupARN": "{victim}"}}"#);
    let mut changed = ingress("a", &[("actions.a", &forward)]);
    changed.metadata.finalizers = Some(vec![format!("{}{GROUP}", k::EXPLICIT_GROUP_FINALIZER_PREFIX)]);
    let backend = &mut changed.spec.as_mut().unwrap().rules.as_mut().unwrap()[0].http.as_mut().unwrap().paths[0];
    backend.backend.service.as_mut().unwrap().port = Some(k8s_openapi::api::networking::v1::ServiceBackendPort {
        name: Some("use-annotation".into()),
        number: None,
    });
    t.reconcile(&[&changed]).await;
    assert_eq!(t.w.aws_writes(), (vec![], vec![]), "fail closed: no AWS write");
    assert_eq!(t.routed_actions().await, before, "the rule already there stays as it is");
    let events = t.w.events();
    let warned = events.iter().find(|(_, _, note)| note.contains(victim)).unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(warned.0, "Warning");
    assert!(warned.2.contains("actions.a") && warned.2.contains("tenancy.policy.targetGroups"), "{warned:?}");
    // The same change in compatible mode is sent to AWS (the upstream's behaviour; the fake has no
    // such group and refuses the ModifyRule, which is not the tenancy's business).
    let c = tenancy_world(lbc_model::tenancy::TenancyMode::Compatible);
    c.created(&[&a]).await;
    c.w.aws();
    c.reconcile(&[&changed]).await;
    assert!(c.w.aws_writes().0.contains(&"ModifyRule".to_string()));
}

#[tokio::test(start_paused = true)]
async fn compatible_tenancy_keeps_the_upstream_behaviour_for_the_same_scene() {
    let t = tenancy_world(lbc_model::tenancy::TenancyMode::Compatible);
    t.reconcile(&[&ingress("a", &[]), &intruder()]).await;
    let reasons = t.w.event_reasons();
    assert!(!reasons.contains(&"TenancyRefused".to_string()), "{reasons:?}");
    let paths = t.routed_paths().await;
    assert_eq!(paths.len(), 2, "both members routed, as the upstream does: {paths:?}");
    assert!(paths[0].contains("/b"), "the order -1000 member first: {paths:?}");
}

/// `create-acm-cert` with the EnableCertificateManagement gate off (ALBC's default): the ALB is
/// built without it, as ALBC does, and a Warning says the annotation is ignored and how to turn it on.
#[tokio::test(start_paused = true)]
async fn create_acm_cert_without_its_gate_is_reported_not_silently_ignored() {
    let t = world();
    t.reconcile(&[&ingress("a", &[(k::CREATE_ACM_CERT, "true")])]).await;
    let notes: Vec<String> = t.w.events().into_iter().filter(|e| e.1 == "UnsupportedAnnotation").map(|e| e.2).collect();
    assert_eq!(notes.len(), 1, "{:?}", t.w.events());
    assert!(notes[0].contains("create-acm-cert") && notes[0].contains("EnableCertificateManagement=true"), "{notes:?}");
    let listeners = t.w.lbs.calls().into_iter().filter(|c| c.0 == "CreateListener").count();
    assert_eq!(listeners, 1, "the HTTP listener, as ALBC without the gate");
}
