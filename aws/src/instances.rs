//! Instance targets on the AWS side: finding the EC2 instance of a node that has no usable
//! `spec.providerID` (by its private IP, within the VPC), cached per node; and the ELBv2
//! target writes keyed by instance id (the [`crate::elbv2::ElbV2`] instance methods call the
//! functions here).

use crate::call::{CallRunner, Service};
use crate::error::AwsError;
use async_trait::async_trait;
use aws_sdk_ec2 as ec2;
use aws_sdk_elasticloadbalancingv2 as elbv2;
use lbc_model::nodes::{Instance, InstanceTarget};
use lbc_model::target::TargetHealth;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// Most values one DescribeInstances filter takes (EC2's documented limit is 200 per filter).
pub const PRIVATE_IP_FILTER_MAX_VALUES: usize = 200;

/// The EC2 filter names the lookup uses; also quoted in the Warning of an unresolved node.
pub const PRIVATE_IP_FILTER: &str = "private-ip-address";
pub const VPC_FILTER: &str = "vpc-id";
/// Instances in these states can own a node's IP (terminated ones have released theirs).
pub const LIVE_STATES: [&str; 4] = ["pending", "running", "stopping", "stopped"];

/// Private IP → EC2 instance lookups.
#[async_trait]
pub trait InstanceLookup: Send + Sync {
    /// The instances in `vpc_id` owning `ips` as a private address, as (IP → instance, with
    /// its zone and private DNS name for the cross-check); IPs no instance owns are absent. One DescribeInstances call per
    /// [`PRIVATE_IP_FILTER_MAX_VALUES`] IPs (plus its pages).
    async fn instances_by_private_ip(
        &self,
        vpc_id: &str,
        ips: &[IpAddr],
    ) -> Result<BTreeMap<IpAddr, Instance>, AwsError>;
}

/// [`InstanceLookup`] over the AWS SDK: DescribeInstances filtered by `private-ip-address`,
/// `vpc-id` and the live instance states.
pub struct SdkInstanceLookup {
    client: ec2::Client,
    runner: Arc<CallRunner>,
}

impl SdkInstanceLookup {
    pub fn new(client: ec2::Client, runner: Arc<CallRunner>) -> Self {
        Self { client, runner }
    }
}

fn filter(name: &str, values: impl IntoIterator<Item = String>) -> ec2::types::Filter {
    ec2::types::Filter::builder().name(name).set_values(Some(values.into_iter().collect())).build()
}

#[async_trait]
impl InstanceLookup for SdkInstanceLookup {
    async fn instances_by_private_ip(
        &self,
        vpc_id: &str,
        ips: &[IpAddr],
    ) -> Result<BTreeMap<IpAddr, Instance>, AwsError> {
        const OP: &str = "DescribeInstances";
        let mut out = BTreeMap::new();
        for chunk in ips.chunks(PRIVATE_IP_FILTER_MAX_VALUES) {
            let filters = vec![
                filter(PRIVATE_IP_FILTER, chunk.iter().map(ToString::to_string)),
                filter(VPC_FILTER, [vpc_id.to_string()]),
                filter("instance-state-name", LIVE_STATES.iter().map(|s| s.to_string())),
            ];
            let mut token: Option<String> = None;
            loop {
                let page = self
                    .runner
                    .run(Service::Ec2, OP, || async {
                        self.client
                            .describe_instances()
                            .set_filters(Some(filters.clone()))
                            .set_next_token(token.clone())
                            .send()
                            .await
                            .map_err(|e| AwsError::from_sdk(Service::Ec2.label(), OP, e))
                    })
                    .await?;
                for inst in page.reservations().iter().flat_map(|r| r.instances()) {
                    let Some(id) = inst.instance_id() else { continue };
                    let found = Instance {
                        id: id.to_string(),
                        zone: inst.placement().and_then(|p| p.availability_zone()).map(str::to_string),
                        private_dns_name: inst.private_dns_name().filter(|d| !d.is_empty()).map(str::to_string),
                    };
                    let owned = inst.private_ip_address().into_iter().chain(
                        inst.network_interfaces()
                            .iter()
                            .flat_map(|n| n.private_ip_addresses())
                            .filter_map(|a| a.private_ip_address()),
                    );
                    for ip in owned.filter_map(|a| a.parse::<IpAddr>().ok()) {
                        if chunk.contains(&ip) {
                            out.insert(ip, found.clone());
                        }
                    }
                }
                token = page.next_token().filter(|t| !t.is_empty()).map(str::to_string);
                if token.is_none() {
                    break;
                }
            }
        }
        Ok(out)
    }
}

/// A node to resolve: its name and the private IP it reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeIp {
    pub node: String,
    pub ip: IpAddr,
}

#[derive(Clone, Debug)]
struct Entry {
    vpc_id: String,
    ip: IpAddr,
    /// `None`: no instance owned the IP when asked at `at`.
    instance: Option<Instance>,
    at: tokio::time::Instant,
}

/// How long "no instance owns this IP" is believed. Every node event re-syncs the instance-mode
/// bindings (kubelets report status every few minutes per node), so without it one unresolvable
/// node would cost a DescribeInstances per node event per binding; a minute, like the ENI
/// look-up's misses.
pub const MISS_TTL: std::time::Duration = std::time::Duration::from_secs(60);

/// Node → instance id, resolved by private IP and cached per node. An entry is used only while
/// the node still reports the same IP in the same VPC (a changed IP is looked up again);
/// [`InstanceIdCache::retain_nodes`] drops the nodes that are gone. Misses are looked up
/// together, one call per [`PRIVATE_IP_FILTER_MAX_VALUES`] IPs; an IP that no instance owns is asked again
/// after [`MISS_TTL`] (or at once when the node's IP changes). Failed look-ups are not cached.
pub struct InstanceIdCache {
    lookup: Arc<dyn InstanceLookup>,
    entries: Mutex<HashMap<String, Entry>>,
}

impl InstanceIdCache {
    pub fn new(lookup: Arc<dyn InstanceLookup>) -> Self {
        Self { lookup, entries: Mutex::default() }
    }

    /// The instance of each node that has one (node name → instance); nodes missing from the
    /// result own no instance in `vpc_id` under their IP.
    pub async fn resolve(&self, vpc_id: &str, nodes: &[NodeIp]) -> Result<BTreeMap<String, Instance>, AwsError> {
        let mut out = BTreeMap::new();
        let mut misses = Vec::new();
        {
            let entries = self.entries.lock().expect("instance cache");
            for n in nodes {
                match entries.get(&n.node) {
                    Some(e) if e.ip == n.ip && e.vpc_id == vpc_id => match &e.instance {
                        Some(inst) => {
                            out.insert(n.node.clone(), inst.clone());
                        }
                        None if e.at.elapsed() < MISS_TTL => {}
                        None => misses.push(n),
                    },
                    _ => misses.push(n),
                }
            }
        }
        if misses.is_empty() {
            return Ok(out);
        }
        let mut ips: Vec<IpAddr> = misses.iter().map(|n| n.ip).collect();
        ips.sort();
        ips.dedup();
        let mut found = BTreeMap::new();
        for chunk in ips.chunks(PRIVATE_IP_FILTER_MAX_VALUES) {
            found.extend(self.lookup.instances_by_private_ip(vpc_id, chunk).await?);
        }
        let mut entries = self.entries.lock().expect("instance cache");
        let at = tokio::time::Instant::now();
        for n in misses {
            let instance = found.get(&n.ip).cloned();
            if let Some(inst) = &instance {
                out.insert(n.node.clone(), inst.clone());
            }
            entries.insert(n.node.clone(), Entry { vpc_id: vpc_id.to_string(), ip: n.ip, instance, at });
        }
        Ok(out)
    }

    /// Forgets every node `live` rejects (the node was deleted).
    pub fn retain_nodes(&self, live: impl Fn(&str) -> bool) {
        self.entries.lock().expect("instance cache").retain(|node, _| live(node));
    }

    /// How many nodes are cached with their instance (for tests and metrics).
    pub fn len(&self) -> usize {
        self.entries.lock().expect("instance cache").values().filter(|e| e.instance.is_some()).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

// ---------------------------------------------------------------------------------------------
// ELBv2 reads and writes of instance targets (called from `SdkElbV2`).

/// The ELBv2 target description of an instance target (no zone: AWS takes the instance's).
pub(crate) fn description(t: &InstanceTarget) -> elbv2::types::TargetDescription {
    elbv2::types::TargetDescription::builder().id(t.id.clone()).port(i32::from(t.port)).build()
}

/// Every instance target registered in the group, with its health. Registrations whose id is an
/// IP address (an IP target group) are skipped.
pub(crate) async fn describe_instance_targets(
    client: &elbv2::Client,
    runner: &CallRunner,
    arn: &str,
) -> Result<Vec<(InstanceTarget, TargetHealth)>, AwsError> {
    const OP: &str = "DescribeTargetHealth";
    let out = runner
        .run(Service::Elbv2, OP, || async {
            client.describe_target_health().target_group_arn(arn).send().await.map_err(crate::elbv2::sdk_err(OP))
        })
        .await?;
    let mut res = Vec::new();
    for d in out.target_health_descriptions() {
        let Some(t) = d.target() else { continue };
        let (Some(id), Some(port)) = (t.id(), t.port().and_then(|p| u16::try_from(p).ok())) else { continue };
        if id.parse::<IpAddr>().is_ok() {
            continue;
        }
        res.push((InstanceTarget::new(id, port), crate::elbv2::health_of(d)));
    }
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake_instances::FakeInstances;

    fn n(node: &str, ip: &str) -> NodeIp {
        NodeIp { node: node.into(), ip: ip.parse().unwrap() }
    }

    fn ids(got: &BTreeMap<String, Instance>) -> BTreeMap<String, String> {
        got.iter().map(|(n, i)| (n.clone(), i.id.clone())).collect()
    }

    #[tokio::test]
    async fn the_zone_and_dns_name_are_cached_with_the_id() {
        let fake = Arc::new(FakeInstances::default());
        let inst = Instance {
            id: "i-0aaaaaaaaaaaaaaaa".into(),
            zone: Some("eu-west-1a".into()),
            private_dns_name: Some("ip-10-0-1-10.eu-west-1.compute.internal".into()),
        };
        fake.add_instance("vpc-1", "10.0.1.10", inst.clone());
        let cache = InstanceIdCache::new(fake.clone());
        assert_eq!(cache.resolve("vpc-1", &[n("a", "10.0.1.10")]).await.unwrap()["a"], inst);
        assert_eq!(cache.resolve("vpc-1", &[n("a", "10.0.1.10")]).await.unwrap()["a"], inst, "from the cache");
        assert_eq!(fake.calls().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn batches_misses_caches_hits_and_follows_ip_changes() {
        let fake = Arc::new(FakeInstances::default());
        fake.add("vpc-1", "10.0.1.10", "i-0aaaaaaaaaaaaaaaa");
        fake.add("vpc-1", "10.0.1.11", "i-0bbbbbbbbbbbbbbbb");
        fake.add("vpc-2", "10.0.1.12", "i-0cccccccccccccccc");
        let cache = InstanceIdCache::new(fake.clone());
        let nodes = [n("a", "10.0.1.10"), n("b", "10.0.1.11"), n("c", "10.0.1.12")];

        let got = cache.resolve("vpc-1", &nodes).await.unwrap();
        assert_eq!(
            ids(&got),
            BTreeMap::from([("a".into(), "i-0aaaaaaaaaaaaaaaa".into()), ("b".into(), "i-0bbbbbbbbbbbbbbbb".into())]),
            "c's IP belongs to an instance of another VPC"
        );
        assert_eq!(fake.calls(), vec![("vpc-1".to_string(), 3)], "one batched call for the three misses");

        // Hits cost nothing, and so does the unresolved node within MISS_TTL.
        cache.resolve("vpc-1", &nodes).await.unwrap();
        assert_eq!(fake.calls().len(), 1, "no call: {:?}", fake.calls());
        // After it, the unresolved node alone is asked again.
        tokio::time::advance(MISS_TTL).await;
        cache.resolve("vpc-1", &nodes).await.unwrap();
        assert_eq!(fake.calls()[1..], [("vpc-1".to_string(), 1)]);

        // b's IP changed: looked up again, under the new IP.
        fake.add("vpc-1", "10.0.1.21", "i-0dddddddddddddddd");
        let got = cache.resolve("vpc-1", &[n("a", "10.0.1.10"), n("b", "10.0.1.21")]).await.unwrap();
        assert_eq!(got["b"].id, "i-0dddddddddddddddd");
        assert_eq!(fake.calls()[2..], [("vpc-1".to_string(), 1)]);

        // c's IP changed: asked at once, whatever the age of its miss.
        let got = cache.resolve("vpc-1", &[n("c", "10.0.1.11")]).await.unwrap();
        assert_eq!(got["c"].id, "i-0bbbbbbbbbbbbbbbb");
        assert_eq!(fake.calls()[3..], [("vpc-1".to_string(), 1)]);

        // b is deleted: forgotten.
        cache.retain_nodes(|name| name != "b");
        assert_eq!(cache.len(), 2, "a and c");
    }

    #[tokio::test]
    async fn failures_are_not_cached() {
        let fake = Arc::new(FakeInstances::default());
        fake.add("vpc-1", "10.0.1.10", "i-0aaaaaaaaaaaaaaaa");
        fake.fail_next();
        let cache = InstanceIdCache::new(fake.clone());
        assert!(cache.resolve("vpc-1", &[n("a", "10.0.1.10")]).await.is_err());
        assert!(cache.is_empty());
        assert_eq!(cache.resolve("vpc-1", &[n("a", "10.0.1.10")]).await.unwrap()["a"].id, "i-0aaaaaaaaaaaaaaaa");
    }

    #[tokio::test]
    async fn large_lookups_are_chunked_by_the_filter_limit() {
        let fake = Arc::new(FakeInstances::default());
        let nodes: Vec<NodeIp> =
            (0..450u32).map(|i| n(&format!("n{i}"), &format!("10.0.{}.{}", i / 200, i % 200))).collect();
        let cache = InstanceIdCache::new(fake.clone());
        cache.resolve("vpc-1", &nodes).await.unwrap();
        assert_eq!(fake.calls().iter().map(|c| c.1).collect::<Vec<_>>(), [200, 200, 50]);
    }
}
