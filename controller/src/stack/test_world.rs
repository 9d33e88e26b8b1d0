//! A world for the fast tests of the stack reconcilers (Service, IngressGroup, backend rules): a
//! mocked API server (tower-test) behind the production leader gate, hand-filled caches, and the
//! in-memory AWS fakes (load balancers, networking, ELBv2 targets, EC2). Paused time, no
//! environment. Tests read back what the reconcilers asked of each side, in order.

use crate::context::{Context, TgbConfig};
use crate::records::Records;
use crate::stores::{Stores, Triggers};
use http::{Method, Request, Response};
use k8s_openapi::api::core::v1::{Namespace, Node, Service};
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use kube::client::Body;
use kube::runtime::reflector::{self, store::Writer};
use kube::runtime::watcher;
use lbc_aws::fake::{FakeAccounts, FakeEc2, FakeElbV2};
use lbc_aws::fake_lb::FakeLoadBalancers;
use lbc_aws::fake_net::FakeNetworking;
use lbc_aws::fake_waf::FakeWebAcls;
use lbc_model::crd::{IngressClassParams, TargetGroupBinding};
use lbc_model::lb::{Subnet, Tags};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tower_test::mock;

pub const CLUSTER: &str = "prod";
pub const VPC: &str = "vpc-1";

/// One request the mocked API server received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: Method,
    pub path: String,
    pub body: Value,
    /// AWS writes (load balancers and networking) made before this request arrived.
    pub aws_writes_before: usize,
}

impl Seen {
    pub fn line(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// Called with every request as it arrives.
pub type RequestHook = Box<dyn FnMut(&Seen) + Send>;

/// The mocked API server's state.
#[derive(Default)]
pub struct Server {
    pub seen: Vec<Seen>,
    /// (method, path) answered once with this status code instead.
    pub fail: Vec<(Method, String, u16)>,
    /// Secrets by `namespace/name`, as GET returns them.
    pub secrets: BTreeMap<String, Value>,
    /// Called with every request as it arrives (e.g. to lose the lease at a chosen moment).
    pub on_request: Option<RequestHook>,
}

fn status_body(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "code": code,
           "message": format!("{reason} (mocked API server)")})
}

/// `(apiVersion, kind, namespace, name)` of a namespaced object path.
fn object_of(path: &str) -> Option<(String, &'static str, String, String)> {
    let seg: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let at = seg.iter().position(|s| *s == "namespaces")?;
    let (ns, resource, name) = (seg.get(at + 1)?, seg.get(at + 2)?, seg.get(at + 3)?);
    let api_version = if seg[0] == "api" { seg[1].to_string() } else { format!("{}/{}", seg[1], seg[2]) };
    let kind = match *resource {
        "services" => "Service",
        "ingresses" => "Ingress",
        "targetgroupbindings" => "TargetGroupBinding",
        "secrets" => "Secret",
        _ => return None,
    };
    Some((api_version, kind, ns.to_string(), name.to_string()))
}

fn answer(s: &mut Server, seen: &Seen) -> (u16, Value) {
    if let Some(i) = s.fail.iter().position(|(m, p, _)| *m == seen.method && *p == seen.path) {
        let (_, _, code) = s.fail.remove(i);
        return (code, status_body(code, "Injected"));
    }
    if seen.path.contains("/events") {
        return (if seen.method == Method::POST { 201 } else { 200 }, seen.body.clone());
    }
    let Some((api_version, kind, ns, name)) = object_of(&seen.path) else {
        return (500, status_body(500, "UnexpectedRequestInTest"));
    };
    match seen.method {
        // The patched object: what the patch says, as the named object.
        Method::PATCH => {
            let mut out = match &seen.body {
                Value::Object(_) => seen.body.clone(),
                _ => json!({}),
            };
            out["apiVersion"] = json!(api_version);
            out["kind"] = json!(kind);
            out["metadata"]["name"] = json!(name);
            out["metadata"]["namespace"] = json!(ns);
            if kind == "TargetGroupBinding" && out.get("spec").is_none() {
                out["spec"] = json!({"serviceRef": {"name": "x", "port": 80}, "targetGroupARN": "arn"});
            }
            (200, out)
        }
        Method::DELETE => (200, json!({"kind": "Status", "apiVersion": "v1", "status": "Success"})),
        Method::GET if kind == "Secret" => match s.secrets.get(&format!("{ns}/{name}")) {
            Some(v) => (200, v.clone()),
            None => (404, status_body(404, "NotFound")),
        },
        _ => (500, status_body(500, "UnexpectedRequestInTest")),
    }
}

/// An empty cache, synced (as after its watch's first list).
pub fn synced_store<K>() -> (reflector::Store<K>, Writer<K>)
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (r, mut w) = reflector::store();
    w.apply_watcher_event(&watcher::Event::Init);
    w.apply_watcher_event(&watcher::Event::InitDone);
    (r, w)
}

/// The caches a test fills and changes between reconciles, as their watches would.
pub struct Caches {
    pub services: Writer<Service>,
    pub ingresses: Writer<Ingress>,
    pub classes: Writer<IngressClass>,
    pub tgbs: Writer<TargetGroupBinding>,
    pub nodes: Writer<Node>,
}

/// The shared context over the mocked API server and the fakes, and the handles a test drives.
pub struct World {
    pub base: Arc<Context>,
    pub server: Arc<Mutex<Server>>,
    pub leader: tokio::sync::watch::Sender<bool>,
    pub lbs: Arc<FakeLoadBalancers>,
    pub net: Arc<FakeNetworking>,
    pub waf: Arc<FakeWebAcls>,
    pub waf_classic: Arc<lbc_aws::fake_waf::FakeClassicWebAcls>,
    pub shield: Arc<lbc_aws::fake_shield::FakeProtections>,
    pub caches: Mutex<Caches>,
    pub slices: Records<lbc_model::endpoints::SliceInfo>,
    /// Calls of each fake already returned by [`World::aws`].
    looked: Mutex<(usize, usize)>,
}

fn is_write(op: &str) -> bool {
    !op.starts_with("Describe")
}

/// A subnet of the VPC in `az`, tagged for both internal and internet-facing load balancers.
pub fn subnet(id: &str, az: &str, cidr: &str) -> Subnet {
    Subnet {
        id: id.into(),
        vpc_id: VPC.into(),
        availability_zone: az.into(),
        cidr: cidr.into(),
        ipv6_cidrs: vec![],
        available_ips: 200,
        tags: Tags::from([
            (lbc_model::lb::subnets::ROLE_ELB_TAG.into(), "1".into()),
            (lbc_model::lb::subnets::ROLE_INTERNAL_ELB_TAG.into(), "1".into()),
        ]),
    }
}

impl World {
    pub fn new() -> Self {
        let (svc, mut h) = mock::pair::<Request<Body>, Response<Body>>();
        let (leader, leader_rx) = tokio::sync::watch::channel(true);
        let client = kube::client::ClientBuilder::new(svc, "default")
            .with_layer(&crate::kube_gate::KubeGate::new(leader_rx.clone(), Duration::from_secs(30)))
            .build();
        let elb = Arc::new(FakeElbV2::default());
        let lbs = Arc::new(FakeLoadBalancers::with_elbv2(elb.clone()));
        let net = Arc::new(FakeNetworking::default());
        net.add_subnet(subnet("subnet-a", "eu-west-1a", "10.0.1.0/24"));
        net.add_subnet(subnet("subnet-b", "eu-west-1b", "10.0.2.0/24"));

        let server = Arc::new(Mutex::new(Server::default()));
        let (srv, counted_lbs, counted_net) = (server.clone(), lbs.clone(), net.clone());
        tokio::spawn(async move {
            while let Some((req, tx)) = h.next_request().await {
                let (parts, body) = req.into_parts();
                let bytes = body.collect_bytes().await.unwrap_or_default();
                let writes = counted_lbs.calls().iter().filter(|(op, _)| is_write(op)).count()
                    + counted_net.calls().iter().filter(|(op, _)| is_write(op)).count();
                let seen = Seen {
                    method: parts.method.clone(),
                    path: parts.uri.path().to_string(),
                    body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                    aws_writes_before: writes,
                };
                let (code, out) = {
                    let mut s = srv.lock().unwrap();
                    s.seen.push(seen.clone());
                    if let Some(hook) = s.on_request.as_mut() {
                        hook(&seen);
                    }
                    answer(&mut s, &seen)
                };
                let resp = Response::builder().status(code).body(Body::from(serde_json::to_vec(&out).unwrap()));
                tx.send_response(resp.unwrap());
            }
        });

        let (services, svc_w) = synced_store::<Service>();
        let (ingresses, ing_w) = synced_store::<Ingress>();
        let (ingress_classes, class_w) = synced_store::<IngressClass>();
        let (tgbs, tgb_w) = synced_store::<TargetGroupBinding>();
        let (nodes, node_w) = synced_store::<Node>();
        let slices = Records::filled_by_hand();
        let stores = Stores {
            tgbs,
            services,
            slices: slices.clone(),
            pods: Records::filled_by_hand(),
            nodes,
            ingresses,
            ingress_classes,
            ingress_class_params: synced_store::<IngressClassParams>().0,
            namespaces: synced_store::<Namespace>().0,
            gateways: None,
        };
        let ec2 = FakeEc2::default();
        ec2.vpcs.lock().unwrap().insert(VPC.into(), vec!["10.0.0.0/16".into()]);
        let base = context(client, stores, elb, ec2, leader_rx);
        let caches = Caches { services: svc_w, ingresses: ing_w, classes: class_w, tgbs: tgb_w, nodes: node_w };
        World {
            base,
            server,
            leader,
            lbs,
            net,
            waf: Arc::default(),
            waf_classic: Arc::default(),
            shield: Arc::default(),
            caches: Mutex::new(caches),
            slices,
            looked: Mutex::default(),
        }
    }

    pub fn adapters(&self) -> super::Adapters {
        super::Adapters {
            lbs: self.lbs.clone(),
            net: self.net.clone(),
            waf: self.waf.clone(),
            waf_classic: self.waf_classic.clone(),
            shield: self.shield.clone(),
        }
    }

    /// AWS calls (load balancers, then networking) since the last look, as `Operation`.
    pub fn aws(&self) -> (Vec<String>, Vec<String>) {
        let (lb_calls, net_calls) = (self.lbs.calls(), self.net.calls());
        let mut looked = self.looked.lock().unwrap();
        let lb: Vec<String> = lb_calls[looked.0..].iter().map(|(op, _)| op.to_string()).collect();
        let net: Vec<String> = net_calls[looked.1..].iter().map(|(op, _)| op.to_string()).collect();
        *looked = (lb_calls.len(), net_calls.len());
        (lb, net)
    }

    /// AWS writes since the last look (reads dropped), load balancers then networking.
    pub fn aws_writes(&self) -> (Vec<String>, Vec<String>) {
        let (lb, net) = self.aws();
        let w = |v: Vec<String>| v.into_iter().filter(|op| is_write(op)).collect();
        (w(lb), w(net))
    }

    /// Kubernetes requests since the last look (Events apart, see [`World::events`]).
    pub fn kube(&self) -> Vec<Seen> {
        let mut s = self.server.lock().unwrap();
        let (events, rest): (Vec<Seen>, Vec<Seen>) = s.seen.drain(..).partition(|r| r.path.contains("/events"));
        s.seen = events;
        rest
    }

    /// The spec of the one TargetGroupBinding written since the last read of the requests.
    pub fn the_binding_spec(&self) -> Value {
        let kube = self.kube();
        let tgbs: Vec<&Seen> = kube.iter().filter(|r| r.path.contains("/targetgroupbindings/")).collect();
        let [tgb] = tgbs.as_slice() else {
            panic!("one binding written: {:?}", kube.iter().map(Seen::line).collect::<Vec<_>>())
        };
        tgb.body["spec"].clone()
    }

    pub fn kube_lines(&self) -> Vec<String> {
        self.kube().iter().map(Seen::line).collect()
    }

    /// Events published since the last look, as (type, reason, note).
    pub fn events(&self) -> Vec<(String, String, String)> {
        let mut s = self.server.lock().unwrap();
        let all: Vec<Seen> = std::mem::take(&mut s.seen);
        let (ev, rest): (Vec<Seen>, Vec<Seen>) = all.into_iter().partition(|r| r.path.contains("/events"));
        s.seen = rest;
        ev.iter()
            .filter(|e| e.method == Method::POST)
            .map(|e| {
                let field = |k: &str| e.body[k].as_str().unwrap_or_default().to_string();
                (field("type"), field("reason"), field("note"))
            })
            .collect()
    }

    /// The one Event published since the last look, as (type, reason, note).
    pub fn the_event(&self) -> (String, String, String) {
        let mut events = self.events();
        assert_eq!(events.len(), 1, "exactly one Event expected: {events:?}");
        events.remove(0)
    }

    /// Reasons of the Events since the last look.
    pub fn event_reasons(&self) -> Vec<String> {
        self.events().into_iter().map(|(_, r, _)| r).collect()
    }

    /// The bindings applied (server-side apply) since the start, as their watch would show them.
    pub fn cache_applied_bindings(&self) {
        let applied: Vec<TargetGroupBinding> = {
            let s = self.server.lock().unwrap();
            s.seen
                .iter()
                .filter(|r| r.method == Method::PATCH && r.path.contains("/targetgroupbindings/"))
                .filter_map(|r| serde_json::from_value(r.body.clone()).ok())
                .collect()
        };
        let mut c = self.caches.lock().unwrap();
        for t in applied {
            c.tgbs.apply_watcher_event(&watcher::Event::Apply(t));
        }
    }

    /// After a first pass: caches the bindings it applied, forgets what it did and returns the
    /// hostname it wrote in a status.
    pub fn settle_first_pass(&self) -> String {
        self.cache_applied_bindings();
        let status = self.kube().into_iter().find(|r| r.path.ends_with("/status")).expect("a status written");
        self.aws();
        self.events();
        status.body["status"]["loadBalancer"]["ingress"][0]["hostname"].as_str().expect("a hostname").to_string()
    }

    /// Adds or replaces `obj` in the cache `f` picks.
    pub fn put<K>(&self, f: impl FnOnce(&mut Caches) -> &mut Writer<K>, obj: K)
    where
        K: kube::Resource + Clone + 'static,
        K::DynamicType: Default + Eq + std::hash::Hash + Clone,
    {
        f(&mut self.caches.lock().unwrap()).apply_watcher_event(&watcher::Event::Apply(obj));
    }

    /// Removes `obj` from the cache `f` picks.
    pub fn remove<K>(&self, f: impl FnOnce(&mut Caches) -> &mut Writer<K>, obj: K)
    where
        K: kube::Resource + Clone + 'static,
        K::DynamicType: Default + Eq + std::hash::Hash + Clone,
    {
        f(&mut self.caches.lock().unwrap()).apply_watcher_event(&watcher::Event::Delete(obj));
    }
}

/// The shared reconcile context over a (mocked) client, caches and the ELBv2/EC2 fakes: cluster
/// [`CLUSTER`] in [`VPC`], events from `aws-lb-controller`, the binding reconciler's usual tunables.
pub fn context(
    client: kube::Client,
    stores: Stores,
    elb: Arc<FakeElbV2>,
    ec2: FakeEc2,
    leader: tokio::sync::watch::Receiver<bool>,
) -> Arc<Context> {
    context_with_instances(client, stores, elb, ec2, leader, Default::default())
}

/// [`context`] whose node → instance look-ups go to `instances`.
pub fn context_with_instances(
    client: kube::Client,
    stores: Stores,
    elb: Arc<FakeElbV2>,
    ec2: FakeEc2,
    leader: tokio::sync::watch::Receiver<bool>,
    instances: Arc<lbc_aws::fake_instances::FakeInstances>,
) -> Arc<Context> {
    let recorder = kube::runtime::events::Recorder::new(
        client.clone(),
        kube::runtime::events::Reporter { controller: "aws-lb-controller".into(), instance: None },
    );
    Arc::new(Context {
        client,
        stores,
        triggers: Triggers::default(),
        elb: elb.clone(),
        elb_roles: Arc::new(FakeAccounts::new(elb)),
        ec2: Arc::new(ec2),
        recorder,
        metrics: crate::metrics::Metrics::new(),
        cfg: TgbConfig {
            cluster_name: CLUSTER.into(),
            cluster_vpc_id: VPC.into(),
            batch_size: 200,
            allow_outside_vpc: false,
            health_poll_ceiling: Duration::from_secs(15),
            health_poll_floor: Duration::from_secs(1),
            sync_period: Duration::from_secs(600),
            max_backoff: Duration::from_secs(60),
            tenancy: Default::default(),
        },
        leader,
        bindings: Default::default(),
        target_groups: Default::default(),
        target_group_fetch: Default::default(),
        target_group_tags: Default::default(),
        vpcs: Default::default(),
        instances: Arc::new(lbc_aws::instances::InstanceIdCache::new(instances)),
        credentials: None,
    })
}

/// `obj` as the watch shows it after a pass: holding `finalizer`, its status naming `hostname`.
pub fn settled<K: serde::Serialize + serde::de::DeserializeOwned>(obj: K, finalizer: &str, hostname: &str) -> K {
    let mut v = serde_json::to_value(obj).expect("serializes");
    v["metadata"]["finalizers"] = json!([finalizer]);
    v["status"] = json!({"loadBalancer": {"ingress": [{"hostname": hostname}]}});
    serde_json::from_value(v).expect("deserializes")
}

/// `obj` marked as being deleted.
pub fn deleting<K: kube::Resource>(mut obj: K) -> K {
    obj.meta_mut().deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        jiff::Timestamp::from_second(1_700_000_000).unwrap(),
    ));
    obj
}

/// When an action requeues (kube's `Action` shows it only through `Debug`).
pub fn requeue_secs(a: &kube::runtime::controller::Action) -> Option<f64> {
    let shown = format!("{a:?}");
    let inner = shown.split("Some(").nth(1)?.split(')').next()?;
    let at = inner.find(|c: char| c.is_alphabetic())?;
    let n: f64 = inner[..at].parse().ok()?;
    match &inner[at..] {
        "s" => Some(n),
        "ms" => Some(n / 1000.0),
        "µs" => Some(n / 1e6),
        "ns" => Some(n / 1e9),
        _ => None,
    }
}
