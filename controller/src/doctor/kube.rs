//! What doctor reads from Kubernetes (all reads, plus one server-side dry-run Pod create, which
//! the API server never persists), turned into the plain inputs of `lbc_model::doctor`.

use super::DoctorArgs;
use crate::args::Args;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Namespace, Node, Pod, PodSpec, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use kube::{Client, Resource, ResourceExt};
use lbc_model::crd::{IngressClassParams, TargetGroupBinding};
use lbc_model::doctor::not_run::Blocker;
use lbc_model::doctor::{Verdict, conflicts, crds, nodes, pod_ips, subnets::Demand, tenancy, throttle, webhooks};
use lbc_model::names::{READINESS_GATE_INJECT_LABEL, READINESS_GATE_PREFIX};
use lbc_model::net::VpcCidrs;
use serde::de::DeserializeOwned;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;

/// ALBC's chart names its webhook configurations this way.
const ALBC_WEBHOOK: &str = "aws-load-balancer-webhook";
const INGRESS_CONTROLLER: &str = "ingress.k8s.aws/alb";

/// Everything read from the cluster.
pub struct Cluster {
    /// Reads that failed (RBAC, API errors): reported, never fatal.
    errors: Vec<Verdict>,
    /// The checks those failed reads leave without complete input: reported as not run.
    pub blockers: Vec<Blocker>,
    nodes: Vec<nodes::NodeInfo>,
    node_pod_cidrs: Vec<ipnet::IpNet>,
    cni: pod_ips::Cni,
    addresses: Vec<pod_ips::PodAddress>,
    /// Endpoint counts of each binding's (or our load balancer Service's) target group.
    targets_per_group: Vec<usize>,
    pub demand: Demand,
    instance_targets: bool,
    services: Vec<conflicts::ServiceInfo>,
    albc: Vec<String>,
    crds: Vec<(String, Vec<String>, Option<crds::CrdInfo>)>,
    webhook_configs: Vec<webhooks::ConfigInfo>,
    dry_run: webhooks::DryRun,
    namespaces: Vec<webhooks::NamespaceInfo>,
    bindings: Vec<tenancy::BindingInfo>,
    ingresses: Vec<tenancy::IngressInfo>,
}

impl Cluster {
    /// The target groups the bindings name that doctor reads with the controller's own identity
    /// (not those of bindings that assume a role), for their ownership tags.
    pub fn bound_target_groups(&self) -> Vec<String> {
        let arns: BTreeSet<String> = self
            .bindings
            .iter()
            .filter(|b| b.spec.iam_role_arn_to_assume.is_none())
            .filter_map(|b| b.spec.target_group_arn.clone())
            .collect();
        arns.into_iter().collect()
    }

    /// The verdicts of every Kubernetes-side check (pod IPs need the VPC's CIDRs from AWS, the
    /// tenancy check the bound target groups' tags).
    pub fn verdicts(
        self,
        args: &Args,
        vpc: Option<&VpcCidrs>,
        target_group_tags: Option<&BTreeMap<String, lbc_model::lb::Tags>>,
    ) -> Vec<Verdict> {
        let mut out = self.errors;
        let runs = |check: &str| !self.blockers.iter().any(|b| b.checks.contains(&check));
        if let Some(vpc) = vpc.filter(|_| runs(pod_ips::CHECK)) {
            out.extend(pod_ips::check(
                vpc,
                &self.addresses,
                &self.node_pod_cidrs,
                &self.cni,
                args.allow_targets_outside_vpc,
            ));
        }
        if runs(nodes::CHECK) {
            out.extend(nodes::check(&self.nodes, self.instance_targets));
        }
        if runs(conflicts::CHECK) {
            out.extend(conflicts::check(&self.services, &args.load_balancer_class, &self.albc));
        }
        if runs(crds::CHECK) {
            for (name, wanted, found) in &self.crds {
                out.push(crds::check(name, wanted, found.as_ref()));
            }
        }
        if runs(webhooks::CHECK) {
            out.extend(webhooks::check(&self.webhook_configs, &self.dry_run, &self.namespaces));
        }
        if runs(throttle::CHECK) {
            let rules = lbc_model::throttle::parse_rules(&args.aws_api_throttle).unwrap_or_default();
            out.push(throttle::check(&rules, &self.targets_per_group, args.targetgroupbinding_batch_size));
        }
        if runs(tenancy::CHECK) {
            match args.tenancy() {
                Ok(policy) => out.extend(tenancy::check(
                    &policy,
                    &tenancy::Inputs {
                        cluster: &args.cluster_name,
                        bindings: &self.bindings,
                        ingresses: &self.ingresses,
                        target_group_tags,
                    },
                )),
                Err(e) => out.push(Verdict::fail(
                    tenancy::CHECK,
                    "--tenancy-policy-file",
                    format!("{e:#}"),
                    "a tenancy policy the controller can load",
                    "fix the policy (chart: tenancy.policy) as the message says; the controller refuses to start with it",
                )),
            }
        }
        out
    }
}

/// The checks whose input a read of `what` feeds: a failed read leaves them not run.
fn needed_by(what: &str) -> &'static [&'static str] {
    match what {
        "TargetGroupBindings" => &[pod_ips::CHECK, webhooks::CHECK, throttle::CHECK, nodes::CHECK, tenancy::CHECK],
        "Services" => &[pod_ips::CHECK, conflicts::CHECK, throttle::CHECK, webhooks::CHECK, nodes::CHECK],
        "Ingresses" | "IngressClasses" => &[pod_ips::CHECK, throttle::CHECK, nodes::CHECK, tenancy::CHECK],
        "IngressClassParams" => &[tenancy::CHECK],
        "EndpointSlices" => &[pod_ips::CHECK, throttle::CHECK],
        "Nodes" => &[nodes::CHECK],
        "Pods" | "Namespaces" => &[webhooks::CHECK],
        "Deployments" => &[conflicts::CHECK],
        w if w.starts_with("CustomResourceDefinition") => &[crds::CHECK],
        w if w.contains("WebhookConfiguration") => &[webhooks::CHECK, conflicts::CHECK],
        _ => &[],
    }
}

/// Records a failed read: its own line, and the checks it leaves without input.
fn failed(what: &str, e: &kube::Error, errors: &mut Vec<Verdict>, blockers: &mut Vec<Blocker>) {
    errors.push(read_failed(what, e));
    blockers.push(Blocker::kube_read(what, e, needed_by(what)));
}

async fn list<K>(api: Api<K>, what: &str, errors: &mut Vec<Verdict>, blockers: &mut Vec<Blocker>) -> Vec<K>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    match api.list(&ListParams::default()).await {
        Ok(l) => l.items,
        Err(e) => {
            failed(what, &e, errors, blockers);
            Vec::new()
        }
    }
}

fn read_failed(what: &str, e: &kube::Error) -> Verdict {
    Verdict::fail(
        "kubernetes",
        what.to_string(),
        format!("read failed: {e}"),
        "readable with doctor's credentials",
        "grant get/list on it (the chart's test ServiceAccount has the read-only ClusterRole doctor needs)",
    )
}

fn api<K>(client: &Client, ns: Option<&str>) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    <K as Resource>::DynamicType: Default,
{
    match ns {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

pub async fn gather(client: &Client, args: &Args, d: &DoctorArgs) -> Cluster {
    let mut errors = Vec::new();
    let mut blockers = Vec::new();
    let scope = (!args.watch_namespace.is_empty()).then_some(args.watch_namespace.as_str());
    let bindings: Vec<TargetGroupBinding> =
        list(api(client, scope), "TargetGroupBindings", &mut errors, &mut blockers).await;
    let services: Vec<Service> =
        list(api(client, if d.all_namespaces { None } else { scope }), "Services", &mut errors, &mut blockers).await;
    let ingresses: Vec<Ingress> = list(api(client, scope), "Ingresses", &mut errors, &mut blockers).await;
    let classes: Vec<IngressClass> = list(Api::all(client.clone()), "IngressClasses", &mut errors, &mut blockers).await;
    let params: Vec<IngressClassParams> =
        list(Api::all(client.clone()), "IngressClassParams", &mut errors, &mut blockers).await;
    let slices: Vec<EndpointSlice> =
        list(api(client, if d.all_namespaces { None } else { scope }), "EndpointSlices", &mut errors, &mut blockers)
            .await;
    let node_objs: Vec<Node> = list(Api::all(client.clone()), "Nodes", &mut errors, &mut blockers).await;
    let pods: Vec<Pod> = list(api(client, scope), "Pods", &mut errors, &mut blockers).await;
    let ns_objs: Vec<Namespace> = list(Api::all(client.clone()), "Namespaces", &mut errors, &mut blockers).await;
    let deployments: Vec<Deployment> = list(Api::all(client.clone()), "Deployments", &mut errors, &mut blockers).await;

    // Services of ours: referenced by a binding, of our load balancer class, or an Ingress backend.
    let key = |ns: &str, name: &str| format!("{ns}/{name}");
    let alb_classes: BTreeSet<String> = classes
        .iter()
        .filter(|c| c.spec.as_ref().and_then(|s| s.controller.as_deref()) == Some(INGRESS_CONTROLLER))
        .map(|c| c.name_any())
        .collect();
    let our_ingresses: Vec<&Ingress> = ingresses
        .iter()
        .filter(|i| {
            let class = i.spec.as_ref().and_then(|s| s.ingress_class_name.clone());
            let annotation = i.annotations().get("kubernetes.io/ingress.class").cloned();
            annotation.as_deref() == Some(args.ingress_class.as_str())
                || class.is_some_and(|c| alb_classes.contains(&c))
        })
        .collect();
    let mut ours: BTreeSet<String> =
        bindings.iter().map(|b| key(&b.namespace().unwrap_or_default(), &b.spec.service_ref.name)).collect();
    for s in &services {
        let spec = s.spec.clone().unwrap_or_default();
        if spec.type_.as_deref() == Some("LoadBalancer")
            && spec.load_balancer_class.as_deref() == Some(&args.load_balancer_class)
        {
            ours.insert(key(&s.namespace().unwrap_or_default(), &s.name_any()));
        }
    }
    for i in &our_ingresses {
        let ns = i.namespace().unwrap_or_default();
        let spec = i.spec.clone().unwrap_or_default();
        let backends = spec.default_backend.iter().chain(
            spec.rules
                .iter()
                .flatten()
                .filter_map(|r| r.http.as_ref())
                .flat_map(|h| h.paths.iter().map(|p| &p.backend)),
        );
        for b in backends {
            if let Some(svc) = &b.service {
                ours.insert(key(&ns, &svc.name));
            }
        }
    }

    let mut addresses = Vec::new();
    let mut endpoints_of: BTreeMap<String, usize> = BTreeMap::new();
    for s in &slices {
        let Some(svc) = s.labels().get(lbc_model::names::SERVICE_NAME_LABEL) else { continue };
        let service = key(&s.namespace().unwrap_or_default(), svc);
        if !(d.all_namespaces || ours.contains(&service)) {
            continue;
        }
        for e in &s.endpoints {
            let pod = e.target_ref.as_ref().filter(|r| r.kind.as_deref() == Some("Pod")).and_then(|r| r.name.clone());
            for a in &e.addresses {
                if let Ok(ip) = a.parse() {
                    *endpoints_of.entry(service.clone()).or_default() += 1;
                    addresses.push(pod_ips::PodAddress { service: service.clone(), pod: pod.clone(), ip });
                }
            }
        }
    }
    let mut targets_per_group: Vec<usize> = bindings
        .iter()
        .map(|b| {
            endpoints_of.get(&key(&b.namespace().unwrap_or_default(), &b.spec.service_ref.name)).copied().unwrap_or(0)
        })
        .collect();
    for s in services.iter().filter(|s| {
        s.spec.as_ref().and_then(|sp| sp.load_balancer_class.as_deref()) == Some(args.load_balancer_class.as_str())
    }) {
        targets_per_group
            .push(endpoints_of.get(&key(&s.namespace().unwrap_or_default(), &s.name_any())).copied().unwrap_or(0));
    }

    let scheme_public = |a: &BTreeMap<String, String>, k: &str| a.get(k).is_some_and(|v| v == "internet-facing");
    let demand = Demand {
        internet_facing: services
            .iter()
            .any(|s| scheme_public(s.annotations(), "service.beta.kubernetes.io/aws-load-balancer-scheme"))
            || our_ingresses.iter().any(|i| scheme_public(i.annotations(), "alb.ingress.kubernetes.io/scheme")),
        alb: !our_ingresses.is_empty(),
    };
    // Instance targets resolve nodes without providerID by their InternalIP (model::nodes); the
    // nodes check only says so.
    let instance_targets = services.iter().any(|s| {
        s.annotations()
            .get("service.beta.kubernetes.io/aws-load-balancer-nlb-target-type")
            .is_some_and(|v| v == "instance")
    }) || our_ingresses
        .iter()
        .any(|i| i.annotations().get("alb.ingress.kubernetes.io/target-type").is_some_and(|v| v == "instance"));

    let node_pod_cidrs = node_objs
        .iter()
        .filter_map(|n| n.spec.as_ref())
        .flat_map(|s| s.pod_cidrs.clone().unwrap_or_default().into_iter().chain(s.pod_cidr.clone()))
        .filter_map(|c| c.parse().ok())
        .collect();
    let nodes = node_objs
        .iter()
        .map(|n| nodes::NodeInfo {
            name: n.name_any(),
            provider_id: n.spec.as_ref().and_then(|s| s.provider_id.clone()),
            ready: n
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True")),
            taint_keys: n
                .spec
                .as_ref()
                .and_then(|s| s.taints.as_ref())
                .into_iter()
                .flatten()
                .map(|t| t.key.clone())
                .collect(),
        })
        .collect();
    let cni = match Api::<ConfigMap>::namespaced(client.clone(), "kube-system").get_opt("cilium-config").await {
        Ok(Some(cm)) => pod_ips::Cni::Cilium {
            ipam: cm.data.unwrap_or_default().get("ipam").cloned().unwrap_or_else(|| "cluster-pool".into()),
        },
        Ok(None) => pod_ips::Cni::Unknown,
        Err(e) => {
            failed("ConfigMap kube-system/cilium-config", &e, &mut errors, &mut blockers);
            pod_ips::Cni::Unknown
        }
    };

    let conflict_services = services
        .iter()
        .filter(|s| s.spec.as_ref().and_then(|sp| sp.type_.as_deref()) == Some("LoadBalancer"))
        .map(|s| conflicts::ServiceInfo {
            name: key(&s.namespace().unwrap_or_default(), &s.name_any()),
            load_balancer_class: s.spec.as_ref().and_then(|sp| sp.load_balancer_class.clone()),
            finalizers: s.finalizers().to_vec(),
            hostnames: s
                .status
                .as_ref()
                .and_then(|st| st.load_balancer.as_ref())
                .and_then(|lb| lb.ingress.as_ref())
                .into_iter()
                .flatten()
                .filter_map(|i| i.hostname.clone())
                .collect(),
        })
        .collect();
    let mut albc: Vec<String> = deployments
        .iter()
        .filter_map(|dep| {
            let spec = dep.spec.as_ref()?.template.spec.as_ref()?;
            let image =
                spec.containers.iter().filter_map(|c| c.image.as_deref()).find(|i| conflicts::is_albc_image(i))?;
            Some(format!("Deployment {}/{} image {image}", dep.namespace().unwrap_or_default(), dep.name_any()))
        })
        .collect();

    let mwc: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let vwc: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    if d.webhook_configuration != ALBC_WEBHOOK
        && let Ok(Some(_)) = mwc.get_opt(ALBC_WEBHOOK).await
    {
        albc.push(format!("MutatingWebhookConfiguration {ALBC_WEBHOOK}"));
    }
    let mut webhook_configs = Vec::new();
    let hooks = |name: &str, cc: &WebhookClientConfig| (name.to_string(), cc.clone());
    match mwc.get_opt(&d.webhook_configuration).await {
        Ok(found) => {
            let list = found
                .map(|c| c.webhooks.unwrap_or_default().iter().map(|w| hooks(&w.name, &w.client_config)).collect());
            webhook_configs.push(config_info("MutatingWebhookConfiguration", &d.webhook_configuration, list).await);
        }
        Err(e) => failed("MutatingWebhookConfigurations", &e, &mut errors, &mut blockers),
    }
    match vwc.get_opt(&d.webhook_configuration).await {
        Ok(found) => {
            let list = found
                .map(|c| c.webhooks.unwrap_or_default().iter().map(|w| hooks(&w.name, &w.client_config)).collect());
            webhook_configs.push(config_info("ValidatingWebhookConfiguration", &d.webhook_configuration, list).await);
        }
        Err(e) => failed("ValidatingWebhookConfigurations", &e, &mut errors, &mut blockers),
    }

    let labelled: BTreeSet<String> = ns_objs
        .iter()
        .filter(|n| n.labels().get(READINESS_GATE_INJECT_LABEL).is_some_and(|v| v == "enabled"))
        .map(|n| n.name_any())
        .collect();
    let mut per_ns: BTreeMap<String, webhooks::NamespaceInfo> = BTreeMap::new();
    for b in &bindings {
        let ns = b.namespace().unwrap_or_default();
        per_ns.entry(ns.clone()).or_insert_with(|| ns_info(&ns, &labelled)).bindings += 1;
    }
    for p in &pods {
        let gated = p
            .spec
            .as_ref()
            .and_then(|s| s.readiness_gates.as_ref())
            .is_some_and(|g| g.iter().any(|g| g.condition_type.starts_with(READINESS_GATE_PREFIX)));
        if gated {
            let ns = p.namespace().unwrap_or_default();
            per_ns.entry(ns.clone()).or_insert_with(|| ns_info(&ns, &labelled)).gated_pods.push(p.name_any());
        }
    }
    let dry_run = dry_run_gate(client, &bindings, &services, &labelled).await;

    let mut crd_list = Vec::new();
    let crd_api: Api<CustomResourceDefinition> = Api::all(client.clone());
    // The ALBTargetControlConfig CRD matters only with its gate on (Helm never adds CRDs on upgrade).
    let target_control = lbc_model::compat::parse_key_bools("--feature-gates", &args.feature_gates)
        .map(|g| lbc_model::compat::assess_gates(&g).0.target_control_agent)
        .unwrap_or(false);
    for want in lbc_model::crd::all() {
        let name = want.name_any();
        if !target_control && want.spec.names.kind == "ALBTargetControlConfig" {
            continue;
        }
        let versions: Vec<String> = want.spec.versions.iter().map(|v| v.name.clone()).collect();
        match crd_api.get_opt(&name).await {
            Ok(found) => crd_list.push((
                name,
                versions,
                found.map(|c| crds::CrdInfo {
                    versions: c
                        .spec
                        .versions
                        .iter()
                        .map(|v| crds::VersionInfo { name: v.name.clone(), served: v.served, storage: v.storage })
                        .collect(),
                    stored_versions: c.status.and_then(|s| s.stored_versions).unwrap_or_default(),
                }),
            )),
            Err(e) => failed(&format!("CustomResourceDefinition {name}"), &e, &mut errors, &mut blockers),
        }
    }

    Cluster {
        errors,
        blockers,
        nodes,
        node_pod_cidrs,
        cni,
        addresses,
        targets_per_group,
        demand,
        instance_targets,
        services: conflict_services,
        albc,
        crds: crd_list,
        webhook_configs,
        dry_run,
        namespaces: per_ns.into_values().collect(),
        ingresses: ingress_infos(&our_ingresses, &classes, &params),
        bindings: bindings
            .into_iter()
            .map(|b| tenancy::BindingInfo {
                namespace: b.namespace().unwrap_or_default(),
                name: b.name_any(),
                spec: b.spec,
            })
            .collect(),
    }
}

/// Our Ingresses as the tenancy check reads them: their own choices. Ingresses whose annotations
/// do not parse are left to the controller's report.
fn ingress_infos(
    ours: &[&Ingress],
    classes: &[IngressClass],
    params: &[IngressClassParams],
) -> Vec<tenancy::IngressInfo> {
    let params_of = |class: &str| {
        let c = classes.iter().find(|c| c.name_any() == class)?;
        let p = c.spec.as_ref()?.parameters.as_ref()?;
        (p.kind == "IngressClassParams").then(|| params.iter().find(|x| x.name_any() == p.name))?
    };
    ours.iter()
        .filter_map(|i| {
            let ns = i.namespace().unwrap_or_default();
            let settings = lbc_model::ingress::parse_annotations(i.annotations(), &ns).ok()?;
            let via_class_annotation = i.annotations().contains_key("kubernetes.io/ingress.class");
            let class = i.spec.as_ref().and_then(|s| s.ingress_class_name.as_deref());
            let group_from_params =
                !via_class_annotation && class.and_then(params_of).is_some_and(|p| p.spec.group.is_some());
            Some(tenancy::IngressInfo {
                namespace: ns,
                name: i.name_any(),
                via_class_annotation,
                settings,
                group_from_params,
            })
        })
        .collect()
}

fn ns_info(ns: &str, labelled: &BTreeSet<String>) -> webhooks::NamespaceInfo {
    webhooks::NamespaceInfo { name: ns.to_string(), labelled: labelled.contains(ns), ..Default::default() }
}

async fn config_info(
    kind: &str,
    name: &str,
    hooks: Option<Vec<(String, WebhookClientConfig)>>,
) -> webhooks::ConfigInfo {
    let webhooks = match hooks {
        None => None,
        Some(hooks) => {
            let mut out = Vec::new();
            for (hook, cc) in hooks {
                let (target, tls) = super::tls::verify(&cc).await;
                out.push(webhooks::WebhookInfo { name: hook, target, tls });
            }
            Some(out)
        }
    };
    webhooks::ConfigInfo { object: format!("{kind} {name}"), webhooks }
}

/// A server-side dry-run Pod create (nothing is stored) in the first labelled namespace holding a
/// binding whose Service selects pods, labelled to match that Service.
async fn dry_run_gate(
    client: &Client,
    bindings: &[TargetGroupBinding],
    services: &[Service],
    labelled: &BTreeSet<String>,
) -> webhooks::DryRun {
    let candidate = bindings.iter().find_map(|b| {
        let ns = b.namespace()?;
        if !labelled.contains(&ns) {
            return None;
        }
        let svc = services
            .iter()
            .find(|s| s.namespace().as_deref() == Some(ns.as_str()) && s.name_any() == b.spec.service_ref.name)?;
        let selector = svc.spec.as_ref()?.selector.clone().filter(|s| !s.is_empty())?;
        Some((ns, b.name_any(), selector))
    });
    let Some((ns, binding, selector)) = candidate else { return webhooks::DryRun::NoCandidate };
    let pod = Pod {
        metadata: ObjectMeta {
            generate_name: Some("lbc-doctor-".into()),
            labels: Some(selector),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "probe".into(),
                image: Some("registry.invalid/aws-lb-controller-doctor-probe".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let pp = PostParams { dry_run: true, field_manager: Some("aws-lb-controller-doctor".into()) };
    match Api::<Pod>::namespaced(client.clone(), &ns).create(&pp, &pod).await {
        Ok(p) => webhooks::DryRun::Done {
            namespace: ns,
            gate: format!("{READINESS_GATE_PREFIX}{binding}"),
            binding,
            gates: p
                .spec
                .and_then(|s| s.readiness_gates)
                .unwrap_or_default()
                .into_iter()
                .map(|g| g.condition_type)
                .collect(),
        },
        Err(e) => webhooks::DryRun::Failed { namespace: ns, error: e.to_string() },
    }
}
