//! [`Networking`] over aws_sdk_ec2; every call goes through [`CallRunner`].

use super::{ENI_IP_CHUNK, Networking, SecurityGroupQuery, SubnetQuery};
use crate::call::{CallRunner, Service, all_pages};
use crate::error::{AwsError, ErrorKind, HttpStatus};
use async_trait::async_trait;
use aws_sdk_ec2 as ec2;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use ec2::types as sdk;
use lbc_model::lb::subnets::RouteTable;
use lbc_model::lb::{IngressRule, NetworkInterface, Observed, RuleSource, SecurityGroup, Subnet, Tags};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

const SVC: Service = Service::Ec2;
const PAGE_SIZE: i32 = 1000;

/// [`Networking`] over the AWS SDK.
pub struct SdkNetworking {
    client: ec2::Client,
    runner: Arc<CallRunner>,
}

fn err<E, R>(op: &'static str) -> impl FnOnce(SdkError<E, R>) -> AwsError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug + HttpStatus,
{
    move |e| AwsError::from_sdk(SVC.label(), op, e)
}

fn filter(name: &str, values: impl IntoIterator<Item = impl Into<String>>) -> sdk::Filter {
    sdk::Filter::builder().name(name).set_values(Some(values.into_iter().map(Into::into).collect())).build()
}

fn tags_from(t: &[sdk::Tag]) -> Tags {
    t.iter().filter_map(|t| Some((t.key()?.to_string(), t.value().unwrap_or_default().to_string()))).collect()
}

fn tags(t: &Tags) -> Vec<sdk::Tag> {
    t.iter().map(|(k, v)| sdk::Tag::builder().key(k).value(v).build()).collect()
}

fn route_table_from(t: &sdk::RouteTable) -> RouteTable {
    RouteTable {
        id: t.route_table_id().unwrap_or_default().to_string(),
        main: t.associations().iter().any(|a| a.main() == Some(true)),
        subnet_ids: t.associations().iter().filter_map(|a| a.subnet_id()).map(String::from).collect(),
        gateway_ids: t.routes().iter().filter_map(|r| r.gateway_id()).map(String::from).collect(),
    }
}

fn subnet_from(s: &sdk::Subnet) -> Subnet {
    Subnet {
        id: s.subnet_id().unwrap_or_default().to_string(),
        vpc_id: s.vpc_id().unwrap_or_default().to_string(),
        availability_zone: s.availability_zone().unwrap_or_default().to_string(),
        cidr: s.cidr_block().unwrap_or_default().to_string(),
        ipv6_cidrs: s
            .ipv6_cidr_block_association_set()
            .iter()
            .filter_map(|a| a.ipv6_cidr_block().map(str::to_string))
            .collect(),
        available_ips: s.available_ip_address_count().and_then(|n| u32::try_from(n).ok()).unwrap_or(0),
        tags: tags_from(s.tags()),
    }
}

/// One [`IngressRule`] per source of each permission.
fn ingress_from(perms: &[sdk::IpPermission]) -> Vec<IngressRule> {
    let mut out = Vec::new();
    for p in perms {
        let rule = |source: RuleSource, description: Option<&str>| IngressRule {
            protocol: p.ip_protocol().unwrap_or("-1").to_string(),
            from_port: p.from_port().unwrap_or(-1),
            to_port: p.to_port().unwrap_or(-1),
            source,
            description: description.map(str::to_string),
        };
        for r in p.ip_ranges() {
            out.extend(r.cidr_ip().map(|c| rule(RuleSource::Cidr(c.into()), r.description())));
        }
        for r in p.ipv6_ranges() {
            out.extend(r.cidr_ipv6().map(|c| rule(RuleSource::Ipv6Cidr(c.into()), r.description())));
        }
        for r in p.prefix_list_ids() {
            out.extend(r.prefix_list_id().map(|c| rule(RuleSource::PrefixList(c.into()), r.description())));
        }
        for r in p.user_id_group_pairs() {
            out.extend(r.group_id().map(|c| rule(RuleSource::SecurityGroup(c.into()), r.description())));
        }
    }
    out.sort();
    out
}

fn permission(r: &IngressRule) -> sdk::IpPermission {
    let b = sdk::IpPermission::builder().ip_protocol(&r.protocol).from_port(r.from_port).to_port(r.to_port);
    let d = r.description.clone();
    match &r.source {
        RuleSource::Cidr(c) => b.ip_ranges(sdk::IpRange::builder().cidr_ip(c).set_description(d).build()),
        RuleSource::Ipv6Cidr(c) => b.ipv6_ranges(sdk::Ipv6Range::builder().cidr_ipv6(c).set_description(d).build()),
        RuleSource::PrefixList(c) => {
            b.prefix_list_ids(sdk::PrefixListId::builder().prefix_list_id(c).set_description(d).build())
        }
        RuleSource::SecurityGroup(c) => {
            b.user_id_group_pairs(sdk::UserIdGroupPair::builder().group_id(c).set_description(d).build())
        }
    }
    .build()
}

fn security_group_from(g: &sdk::SecurityGroup) -> Observed<SecurityGroup> {
    Observed {
        id: g.group_id().unwrap_or_default().to_string(),
        spec: SecurityGroup {
            name: g.group_name().unwrap_or_default().to_string(),
            description: g.description().unwrap_or_default().to_string(),
            vpc_id: g.vpc_id().unwrap_or_default().to_string(),
            ingress: ingress_from(g.ip_permissions()),
            tags: tags_from(g.tags()),
        },
    }
}

fn eni_from(n: &sdk::NetworkInterface) -> NetworkInterface {
    let v4 = n.private_ip_addresses().iter().filter_map(|a| a.private_ip_address()?.parse::<IpAddr>().ok());
    let v6 = n.ipv6_addresses().iter().filter_map(|a| a.ipv6_address()?.parse::<IpAddr>().ok());
    NetworkInterface {
        id: n.network_interface_id().unwrap_or_default().to_string(),
        subnet_id: n.subnet_id().unwrap_or_default().to_string(),
        private_ips: v4.chain(v6).collect(),
        security_groups: n.groups().iter().filter_map(|g| g.group_id().map(str::to_string)).collect(),
    }
}

impl SdkNetworking {
    pub fn new(client: ec2::Client, runner: Arc<CallRunner>) -> Self {
        Self { client, runner }
    }

    async fn describe_subnets(
        &self,
        ids: Option<Vec<String>>,
        filters: Vec<sdk::Filter>,
    ) -> Result<Vec<Subnet>, AwsError> {
        const OP: &str = "DescribeSubnets";
        let (ids, filters, size) = (&ids, &filters, page_size(&ids));
        all_pages(|token| async move {
            let page = self
                .runner
                .run(SVC, OP, || async {
                    let req = self.client.describe_subnets().set_subnet_ids(ids.clone()).set_max_results(size);
                    req.set_filters(non_empty(filters)).set_next_token(token.clone()).send().await.map_err(err(OP))
                })
                .await?;
            Ok((page.subnets().iter().map(subnet_from).collect(), page.next_token().map(String::from)))
        })
        .await
    }

    async fn describe_groups(
        &self,
        ids: Option<Vec<String>>,
        filters: Vec<sdk::Filter>,
    ) -> Result<Vec<Observed<SecurityGroup>>, AwsError> {
        const OP: &str = "DescribeSecurityGroups";
        let (ids, filters, size) = (&ids, &filters, page_size(&ids));
        all_pages(|token| async move {
            let page = self
                .runner
                .run(SVC, OP, || async {
                    let req = self.client.describe_security_groups().set_group_ids(ids.clone()).set_max_results(size);
                    req.set_filters(non_empty(filters)).set_next_token(token.clone()).send().await.map_err(err(OP))
                })
                .await?;
            Ok((page.security_groups().iter().map(security_group_from).collect(), page.next_token().map(String::from)))
        })
        .await
    }

    async fn describe_enis(
        &self,
        ids: Option<Vec<String>>,
        filters: Vec<sdk::Filter>,
    ) -> Result<Vec<NetworkInterface>, AwsError> {
        const OP: &str = "DescribeNetworkInterfaces";
        let (ids, filters, size) = (&ids, &filters, page_size(&ids));
        all_pages(|token| async move {
            let page = self
                .runner
                .run(SVC, OP, || async {
                    let req = self.client.describe_network_interfaces().set_network_interface_ids(ids.clone());
                    let req = req.set_max_results(size).set_filters(non_empty(filters));
                    req.set_next_token(token.clone()).send().await.map_err(err(OP))
                })
                .await?;
            Ok((page.network_interfaces().iter().map(eni_from).collect(), page.next_token().map(String::from)))
        })
        .await
    }

    async fn authorize(&self, group_id: &str, perms: Vec<sdk::IpPermission>) -> Result<(), AwsError> {
        const OP: &str = "AuthorizeSecurityGroupIngress";
        self.runner
            .run(SVC, OP, || async {
                let req = self.client.authorize_security_group_ingress().group_id(group_id);
                req.set_ip_permissions(Some(perms.clone())).send().await.map_err(err(OP))
            })
            .await
            .map(|_| ())
    }

    async fn revoke(&self, group_id: &str, perms: Vec<sdk::IpPermission>) -> Result<(), AwsError> {
        const OP: &str = "RevokeSecurityGroupIngress";
        self.runner
            .run(SVC, OP, || async {
                let req = self.client.revoke_security_group_ingress().group_id(group_id);
                req.set_ip_permissions(Some(perms.clone())).send().await.map_err(err(OP))
            })
            .await
            .map(|_| ())
    }
}

/// Page size only when no IDs are given (some EC2 describes refuse MaxResults together with IDs).
fn page_size(ids: &Option<Vec<String>>) -> Option<i32> {
    ids.is_none().then_some(PAGE_SIZE)
}

fn non_empty(filters: &[sdk::Filter]) -> Option<Vec<sdk::Filter>> {
    Some(filters.to_vec()).filter(|f| !f.is_empty())
}

fn is_code(e: &AwsError, code: &str) -> bool {
    e.code.as_deref() == Some(code)
}

#[async_trait]
impl Networking for SdkNetworking {
    async fn subnets(&self, query: &SubnetQuery) -> Result<Vec<Subnet>, AwsError> {
        match query {
            SubnetQuery::Vpc(vpc) => self.describe_subnets(None, vec![filter("vpc-id", [vpc.as_str()])]).await,
            SubnetQuery::Ids(ids) if ids.is_empty() => Ok(Vec::new()),
            SubnetQuery::Ids(ids) => self.describe_subnets(Some(ids.clone()), Vec::new()).await,
            SubnetQuery::NameTags { vpc_id, names } => {
                let filters =
                    vec![filter("vpc-id", [vpc_id.as_str()]), filter("tag:Name", names.iter().map(String::as_str))];
                self.describe_subnets(None, filters).await
            }
        }
    }

    async fn route_tables(&self, vpc_id: &str) -> Result<Vec<RouteTable>, AwsError> {
        const OP: &str = "DescribeRouteTables";
        let filters = &vec![filter("vpc-id", [vpc_id])];
        all_pages(|token| async move {
            let page = self
                .runner
                .run(SVC, OP, || async {
                    let req = self.client.describe_route_tables().set_filters(Some(filters.clone())).max_results(100);
                    req.set_next_token(token.clone()).send().await.map_err(err(OP))
                })
                .await?;
            Ok((page.route_tables().iter().map(route_table_from).collect(), page.next_token().map(String::from)))
        })
        .await
    }

    async fn security_groups(&self, query: &SecurityGroupQuery) -> Result<Vec<Observed<SecurityGroup>>, AwsError> {
        let found = match query {
            SecurityGroupQuery::Ids(ids) if ids.is_empty() => Vec::new(),
            SecurityGroupQuery::Ids(ids) => self.describe_groups(Some(ids.clone()), Vec::new()).await?,
            SecurityGroupQuery::Existing(ids) if ids.is_empty() => Vec::new(),
            SecurityGroupQuery::Existing(ids) => {
                self.describe_groups(None, vec![filter("group-id", ids.iter().map(String::as_str))]).await?
            }
            SecurityGroupQuery::Names { vpc_id, names } => {
                // EC2 ANDs filters: Name tag and group name need one call each.
                let mut all = Vec::new();
                for key in ["tag:Name", "group-name"] {
                    let filters =
                        vec![filter("vpc-id", [vpc_id.as_str()]), filter(key, names.iter().map(String::as_str))];
                    all.extend(self.describe_groups(None, filters).await?);
                }
                all
            }
            SecurityGroupQuery::Tags { vpc_id, tags } => {
                let mut filters: Vec<sdk::Filter> = vpc_id.iter().map(|v| filter("vpc-id", [v.as_str()])).collect();
                filters.extend(tags.iter().map(|(k, v)| filter(&format!("tag:{k}"), [v.as_str()])));
                self.describe_groups(None, filters).await?
            }
            SecurityGroupQuery::TagKey { vpc_id, key } => {
                let filters = vec![filter("vpc-id", [vpc_id.as_str()]), filter("tag-key", [key.as_str()])];
                self.describe_groups(None, filters).await?
            }
        };
        // Deduplicate (a group can match both by Name tag and by group name).
        let by_id: BTreeMap<String, Observed<SecurityGroup>> = found.into_iter().map(|g| (g.id.clone(), g)).collect();
        Ok(by_id.into_values().collect())
    }

    async fn create_security_group(&self, sg: &SecurityGroup) -> Result<String, AwsError> {
        const OP: &str = "CreateSecurityGroup";
        let spec = (!sg.tags.is_empty()).then(|| {
            vec![
                sdk::TagSpecification::builder()
                    .resource_type(sdk::ResourceType::SecurityGroup)
                    .set_tags(Some(tags(&sg.tags)))
                    .build(),
            ]
        });
        let out = self
            .runner
            .run(SVC, OP, || async {
                let req = self.client.create_security_group().group_name(&sg.name).description(&sg.description);
                req.vpc_id(&sg.vpc_id).set_tag_specifications(spec.clone()).send().await.map_err(err(OP))
            })
            .await?;
        out.group_id()
            .map(str::to_string)
            .ok_or_else(|| AwsError::new(ErrorKind::Other, SVC.label(), OP, "no group ID in the answer"))
    }

    async fn delete_security_group(&self, id: &str) -> Result<(), AwsError> {
        const OP: &str = "DeleteSecurityGroup";
        let r = self
            .runner
            .run(SVC, OP, || async { self.client.delete_security_group().group_id(id).send().await.map_err(err(OP)) })
            .await;
        match r {
            Err(e) if e.kind == ErrorKind::NotFound => Ok(()),
            r => r.map(|_| ()),
        }
    }

    async fn authorize_ingress(&self, group_id: &str, rules: &[IngressRule]) -> Result<(), AwsError> {
        if rules.is_empty() {
            return Ok(());
        }
        // All or nothing: one existing rule fails the whole call. Then add them one by one.
        match self.authorize(group_id, rules.iter().map(permission).collect()).await {
            Err(e) if is_code(&e, "InvalidPermission.Duplicate") && rules.len() > 1 => {
                for r in rules {
                    match self.authorize(group_id, vec![permission(r)]).await {
                        Err(e) if is_code(&e, "InvalidPermission.Duplicate") => {}
                        r => r?,
                    }
                }
                Ok(())
            }
            Err(e) if is_code(&e, "InvalidPermission.Duplicate") => Ok(()),
            r => r,
        }
    }

    async fn revoke_ingress(&self, group_id: &str, rules: &[IngressRule]) -> Result<(), AwsError> {
        if rules.is_empty() {
            return Ok(());
        }
        match self.revoke(group_id, rules.iter().map(permission).collect()).await {
            Err(e) if is_code(&e, "InvalidPermission.NotFound") && rules.len() > 1 => {
                for r in rules {
                    match self.revoke(group_id, vec![permission(r)]).await {
                        Err(e) if is_code(&e, "InvalidPermission.NotFound") => {}
                        r => r?,
                    }
                }
                Ok(())
            }
            Err(e) if is_code(&e, "InvalidPermission.NotFound") => Ok(()),
            r => r,
        }
    }

    async fn create_tags(&self, resource_ids: &[String], t: &Tags) -> Result<(), AwsError> {
        const OP: &str = "CreateTags";
        if resource_ids.is_empty() || t.is_empty() {
            return Ok(());
        }
        let t = tags(t);
        self.runner
            .run(SVC, OP, || async {
                let req = self.client.create_tags().set_resources(Some(resource_ids.to_vec()));
                req.set_tags(Some(t.clone())).send().await.map_err(err(OP))
            })
            .await
            .map(|_| ())
    }

    async fn delete_tags(&self, resource_ids: &[String], keys: &[String]) -> Result<(), AwsError> {
        const OP: &str = "DeleteTags";
        if resource_ids.is_empty() || keys.is_empty() {
            return Ok(());
        }
        let t: Vec<sdk::Tag> = keys.iter().map(|k| sdk::Tag::builder().key(k).build()).collect();
        self.runner
            .run(SVC, OP, || async {
                let req = self.client.delete_tags().set_resources(Some(resource_ids.to_vec()));
                req.set_tags(Some(t.clone())).send().await.map_err(err(OP))
            })
            .await
            .map(|_| ())
    }

    async fn network_interfaces_by_ip(&self, vpc_id: &str, ips: &[IpAddr]) -> Result<Vec<NetworkInterface>, AwsError> {
        let mut by_id = BTreeMap::new();
        for chunk in ips.chunks(ENI_IP_CHUNK) {
            let filters = vec![
                filter("vpc-id", [vpc_id]),
                filter("addresses.private-ip-address", chunk.iter().map(|ip| ip.to_string())),
            ];
            by_id.extend(self.describe_enis(None, filters).await?.into_iter().map(|n| (n.id.clone(), n)));
        }
        Ok(by_id.into_values().collect())
    }

    async fn network_interfaces(&self, ids: &[String]) -> Result<Vec<NetworkInterface>, AwsError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.describe_enis(Some(ids.to_vec()), Vec::new()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ingress_rules_flatten_and_round_trip() {
        let rules = vec![
            IngressRule {
                protocol: "tcp".into(),
                from_port: 80,
                to_port: 80,
                source: RuleSource::Cidr("10.0.0.0/16".into()),
                description: Some("web".into()),
            },
            IngressRule {
                protocol: "tcp".into(),
                from_port: 80,
                to_port: 80,
                source: RuleSource::SecurityGroup("sg-1".into()),
                description: None,
            },
            IngressRule {
                protocol: "udp".into(),
                from_port: 53,
                to_port: 53,
                source: RuleSource::Ipv6Cidr("::/0".into()),
                description: None,
            },
            IngressRule {
                protocol: "tcp".into(),
                from_port: 443,
                to_port: 443,
                source: RuleSource::PrefixList("pl-1".into()),
                description: Some("pl".into()),
            },
        ];
        let perms: Vec<sdk::IpPermission> = rules.iter().map(permission).collect();
        let mut want = rules.clone();
        want.sort();
        assert_eq!(ingress_from(&perms), want);
        // One permission with two sources becomes two rules; no ports means all.
        let p = sdk::IpPermission::builder()
            .ip_protocol("-1")
            .ip_ranges(sdk::IpRange::builder().cidr_ip("10.1.0.0/16").build())
            .ip_ranges(sdk::IpRange::builder().cidr_ip("10.2.0.0/16").build())
            .build();
        let got = ingress_from(&[p]);
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].from_port, got[0].to_port), (-1, -1));
    }
}
