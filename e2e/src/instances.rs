//! EC2 instances in the emulator for instance-mode tests: instances with fixed private IPs in a
//! subnet of the e2e VPC (moto's RunInstances), the fake nodes that report those IPs, and
//! instance target groups.

use crate::Env;
use crate::aws::HARNESS_ACCESS_KEY;
use aws_sdk_elasticloadbalancingv2 as elbv2;
use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use lbc_aws::config::{ClientSettings, Clients, Endpoints, build_clients};
use lbc_aws::net::{Networking, SdkNetworking, SecurityGroupQuery};
use lbc_model::lb::{RuleSource, SecurityGroup};
use std::collections::BTreeSet;
use std::net::Ipv4Addr;

/// What every instance-mode test starts from: the environment, the Kubernetes and ELBv2 clients,
/// the harness's AWS clients and a fresh namespace.
pub struct Scene {
    pub env: Env,
    pub client: Client,
    pub elb: elbv2::Client,
    pub aws: Clients,
    pub ns: String,
}

impl Scene {
    /// `None` when the environment is not up and not required (see [`Env::require`]).
    pub async fn new(test: &str, ns_prefix: &str) -> Option<Self> {
        let env = Env::require(test)?;
        let client = crate::kube_util::client(&env).await;
        let elb = crate::aws::elbv2(&env).await;
        let aws = clients(&env).await;
        let ns = crate::unique(ns_prefix);
        crate::kube_util::namespace(&client, &ns, &[]).await;
        Some(Self { env, client, elb, aws, ns })
    }
}

/// The emulator's AWS clients, signed as the harness (`.ec2` is the EC2 API).
pub async fn clients(env: &Env) -> Clients {
    let settings = ClientSettings {
        region: env.get("AWS_REGION").into(),
        endpoints: Endpoints::all(env.aws_endpoint()),
        credentials: Some(aws_credential_types::provider::SharedCredentialsProvider::new(
            aws_credential_types::Credentials::new(HARNESS_ACCESS_KEY, "testing", None, None, "e2e"),
        )),
    };
    build_clients(&settings).await
}

/// A random address in the first /22 of `subnet_id`'s CIDR (hosts .20-.229 of its /24s 1-3: away
/// from the fixed node address .10, from the pod range in the second /22, and never .0 or .255).
pub async fn random_ip(aws: &Clients, subnet_id: &str) -> Ipv4Addr {
    let out = aws.ec2.describe_subnets().subnet_ids(subnet_id).send().await.expect("DescribeSubnets");
    let cidr: ipnet::Ipv4Net = out.subnets()[0].cidr_block().expect("subnet CIDR").parse().expect("subnet CIDR parses");
    Ipv4Addr::from(u32::from(cidr.network()) + 256 * (1 + fastrand::u32(0..3)) + 20 + fastrand::u32(0..210))
}

/// Starts an instance in `subnet_id` with a fixed private IP chosen at random; returns the IP and
/// the instance id. The emulator never frees the address of a terminated instance, so an address
/// it calls in use is replaced by another (up to 20 tries).
pub async fn run_instance(aws: &Clients, subnet_id: &str) -> (Ipv4Addr, String) {
    run_instance_in(aws, subnet_id, &[]).await
}

/// [`run_instance`] with the instance's (primary ENI's) security groups `groups` (empty: the
/// VPC's default group).
pub async fn run_instance_in(aws: &Clients, subnet_id: &str, groups: &[String]) -> (Ipv4Addr, String) {
    let mut last = String::new();
    for _ in 0..20 {
        let ip = random_ip(aws, subnet_id).await;
        let res = aws
            .ec2
            .run_instances()
            .image_id("ami-12c6146b")
            .min_count(1)
            .max_count(1)
            .subnet_id(subnet_id)
            .private_ip_address(ip.to_string())
            .set_security_group_ids((!groups.is_empty()).then(|| groups.to_vec()))
            .send()
            .await;
        match res {
            Ok(out) => {
                let inst = &out.instances()[0];
                assert_eq!(inst.private_ip_address(), Some(ip.to_string().as_str()), "the emulator kept the fixed IP");
                return (ip, inst.instance_id().expect("instance id").to_string());
            }
            Err(e) => last = format!("RunInstances with private IP {ip} in {subnet_id}: {e:?}"),
        }
    }
    panic!("no instance started after 20 addresses; last error: {last}")
}

/// The `i`-th private subnet of the local environment (`LBC_PRIVATE_SUBNET_IDS`, one per zone).
pub fn private_subnet(env: &Env, i: usize) -> String {
    let ids = env.get("LBC_PRIVATE_SUBNET_IDS");
    ids.split(',').nth(i).unwrap_or_else(|| panic!("LBC_PRIVATE_SUBNET_IDS={ids} has no subnet #{i}")).to_string()
}

/// `n` instances in `subnet_id` ([`run_instance`] each): their private IPs and ids, in order.
pub async fn run_instances(aws: &Clients, subnet_id: &str, n: usize) -> (Vec<Ipv4Addr>, Vec<String>) {
    run_instances_in(aws, subnet_id, n, &[]).await
}

/// [`run_instances`] with security groups `groups` on each instance ([`run_instance_in`]).
pub async fn run_instances_in(
    aws: &Clients,
    subnet_id: &str,
    n: usize,
    groups: &[String],
) -> (Vec<Ipv4Addr>, Vec<String>) {
    let (mut ips, mut ids) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        let (ip, id) = run_instance_in(aws, subnet_id, groups).await;
        ips.push(ip);
        ids.push(id);
    }
    (ips, ids)
}

/// A test's clean-up: its fake nodes deleted, its instances terminated, its namespace deleted.
pub async fn clean_up<'a>(
    client: &Client,
    aws: &Clients,
    nodes: impl IntoIterator<Item = &'a String>,
    ids: &[String],
    namespace: &str,
) {
    for n in nodes {
        delete_node(client, n).await;
    }
    terminate(aws, ids).await;
    crate::kube_util::delete_namespace(client, namespace).await;
}

pub async fn terminate(aws: &Clients, ids: &[String]) {
    if !ids.is_empty() {
        let res = aws.ec2.terminate_instances().set_instance_ids(Some(ids.to_vec())).send().await;
        res.unwrap_or_else(|e| panic!("TerminateInstances {ids:?}: {e:?}"));
    }
}

/// Creates security group `name` in `vpc_id` tagged `kubernetes.io/cluster/<cluster>: owned` (the
/// tag the backend rules look for on the nodes' ENIs); returns its id.
pub async fn create_cluster_security_group(net: &SdkNetworking, vpc_id: &str, name: &str, cluster: &str) -> String {
    let sg = SecurityGroup {
        name: name.into(),
        description: "lbc e2e nodes".into(),
        vpc_id: vpc_id.into(),
        ingress: vec![],
        tags: [(format!("kubernetes.io/cluster/{cluster}"), "owned".to_string())].into_iter().collect(),
    };
    net.create_security_group(&sg).await.unwrap_or_else(|e| panic!("CreateSecurityGroup {name} in {vpc_id}: {e}"))
}

/// Ingress rules of security group `sg` as `protocol:from-to:source:description`.
pub async fn ingress_rules(net: &SdkNetworking, sg: &str) -> BTreeSet<String> {
    let q = SecurityGroupQuery::Ids(vec![sg.to_string()]);
    let groups = net.security_groups(&q).await.unwrap_or_else(|e| panic!("DescribeSecurityGroups {sg}: {e}"));
    groups
        .iter()
        .flat_map(|g| &g.spec.ingress)
        .map(|r| {
            let src = match &r.source {
                RuleSource::Cidr(s)
                | RuleSource::Ipv6Cidr(s)
                | RuleSource::PrefixList(s)
                | RuleSource::SecurityGroup(s) => s,
            };
            let d = r.description.as_deref().unwrap_or_default();
            format!("{}:{}-{}:{src}:{d}", r.protocol, r.from_port, r.to_port)
        })
        .collect()
}

/// Deletes security group `sg` (errors ignored: clean-up).
pub async fn delete_security_group(net: &SdkNetworking, sg: &str) {
    let _ = net.delete_security_group(sg).await;
}

/// Creates an instance target group (TCP, port 80) in the e2e VPC; returns its ARN.
pub async fn create_instance_target_group(env: &Env, client: &elbv2::Client, name: &str) -> String {
    crate::aws::create_target_group(env, client, name, 80, elbv2::types::TargetTypeEnum::Instance).await
}

/// A fake node not managed by kwok (so the test owns its Ready condition): labels `labels`, one
/// InternalIP, no spec.providerID, as RKE2 nodes without the AWS cloud provider.
pub async fn create_node(client: &Client, name: &str, ip: Ipv4Addr, labels: &[(&str, &str)]) {
    let labels: serde_json::Map<String, serde_json::Value> =
        labels.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect();
    let node: Node = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "e2e fake node"}],
            "addresses": [{"type": "InternalIP", "address": ip.to_string()}, {"type": "Hostname", "address": name}],
        },
    }))
    .expect("node manifest");
    // A Node keeps the status given at creation (as a kubelet's registration does).
    Api::<Node>::all(client.clone())
        .create(&PostParams::default(), &node)
        .await
        .unwrap_or_else(|e| panic!("create node {name}: {e}"));
}

/// Sets node `name`'s Ready condition.
pub async fn set_ready(client: &Client, name: &str, ready: bool) {
    let status = if ready { "True" } else { "False" };
    let patch = serde_json::json!({"status": {"conditions": [{"type": "Ready", "status": status, "reason": "E2E", "message": "set by the test"}]}});
    Api::<Node>::all(client.clone())
        .patch_status(name, &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .unwrap_or_else(|e| panic!("set node {name} Ready={status}: {e}"));
}

pub async fn label(client: &Client, name: &str, key: &str, value: &str) {
    let patch = serde_json::json!({"metadata": {"labels": {key: value}}});
    Api::<Node>::all(client.clone())
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap_or_else(|e| panic!("label node {name}: {e}"));
}

pub async fn delete_node(client: &Client, name: &str) {
    let _ = Api::<Node>::all(client.clone()).delete(name, &DeleteParams::default()).await;
}

/// A NodePort Service `web` in `ns` and an instance target group bound to it by
/// TargetGroupBinding `web` (`targetType: instance`, nodes labelled `selector_label: ns`, and
/// `spec_extra` merged into its spec); returns the NodePort and the target group's ARN.
pub async fn service_and_binding(
    env: &Env,
    client: &Client,
    elb: &elbv2::Client,
    ns: &str,
    selector_label: &str,
    spec_extra: serde_json::Value,
) -> (i32, String) {
    use k8s_openapi::api::core::v1::Service;
    use lbc_model::crd::TargetGroupBinding;
    let svc: Service = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
    }))
    .expect("Service manifest");
    let svc =
        Api::<Service>::namespaced(client.clone(), ns).create(&PostParams::default(), &svc).await.expect("Service");
    let node_port =
        svc.spec.and_then(|s| s.ports).and_then(|p| p[0].node_port).expect("the apiserver allocated a nodePort");
    let arn = create_instance_target_group(env, elb, &crate::unique("itg")).await;
    let mut spec = serde_json::json!({"targetGroupARN": arn, "targetType": "instance", "serviceRef": {"name": "web", "port": 80},
                                      "nodeSelector": {"matchLabels": {selector_label: ns}}});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
        spec.extend(extra.clone());
    }
    let tgb: TargetGroupBinding = serde_json::from_value(serde_json::json!({
        "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
        "metadata": {"name": "web", "namespace": ns}, "spec": spec,
    }))
    .expect("TargetGroupBinding manifest");
    Api::<TargetGroupBinding>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &tgb)
        .await
        .expect("TargetGroupBinding");
    (node_port, arn)
}
