//! Read-only probes of EC2 (DryRun for writes). One file per SDK crate: the IAM policy test
//! (charts/tests/test_iam_policy.py) pairs each operation with its crate by file.

use super::{ProbeTarget, Probes, outcome};
use crate::call::Service;
use crate::error::AwsError;
use aws_sdk_ec2::types::{Filter, IpPermission, IpRange, ResourceType, Tag, TagSpecification};
use lbc_model::doctor::permissions::Outcome;

impl Probes {
    pub(super) async fn ec2(&self, op: &str, t: &ProbeTarget) -> Outcome {
        let c: &aws_sdk_ec2::Client = &self.clients.ec2;
        let vpc = Filter::builder().name("vpc-id").values(&t.vpc_id).build();
        macro_rules! call {
            ($name:literal, $dry:expr, $call:expr) => {
                outcome(run!(self, Service::Ec2, $name, $call), $dry)
            };
        }
        // The security groups to try writes on: any of the VPC (ingress rules are unconditional in
        // the policy), and one of ours (tags and deletes are allowed on our groups only).
        let groups = |tag_key: Option<&str>| {
            let mut q = c.describe_security_groups().filters(vpc.clone()).max_results(5);
            if let Some(k) = tag_key {
                q = q.filters(Filter::builder().name("tag-key").values(k).build());
            }
            async move {
                let out = run!(self, Service::Ec2, "DescribeSecurityGroups", q.clone().send())?;
                Ok::<_, AwsError>(out.security_groups().first().and_then(|g| g.group_id()).map(str::to_string))
            }
        };
        let owned_tag = lbc_model::names::CLUSTER_TAG;
        let rule = IpPermission::builder()
            .ip_protocol("tcp")
            .from_port(1)
            .to_port(1)
            .ip_ranges(IpRange::builder().cidr_ip("192.0.2.1/32").description("aws-lb-controller doctor probe").build())
            .build();
        let ours_or = |r: Result<Option<String>, AwsError>| match r {
            Ok(Some(id)) => Ok(id),
            Ok(None) => Err(Outcome::Unverifiable(format!(
                "no security group tagged {owned_tag} in {} to try it on (DryRun)",
                t.vpc_id
            ))),
            Err(err) => Err(outcome::<()>(Err(err), false)),
        };
        match op {
            "DescribeVpcs" => call!("DescribeVpcs", false, c.describe_vpcs().vpc_ids(&t.vpc_id).send()),
            "DescribeSubnets" => call!("DescribeSubnets", false, c.describe_subnets().filters(vpc.clone()).send()),
            "DescribeRouteTables" => {
                call!(
                    "DescribeRouteTables",
                    false,
                    c.describe_route_tables().filters(vpc.clone()).max_results(5).send()
                )
            }
            "DescribeSecurityGroups" => {
                call!(
                    "DescribeSecurityGroups",
                    false,
                    c.describe_security_groups().filters(vpc.clone()).max_results(5).send()
                )
            }
            "DescribeInstances" => {
                call!("DescribeInstances", false, c.describe_instances().filters(vpc.clone()).max_results(5).send())
            }
            "DescribeNetworkInterfaces" => call!(
                "DescribeNetworkInterfaces",
                false,
                c.describe_network_interfaces().filters(vpc.clone()).max_results(5).send()
            ),
            "CreateSecurityGroup" => call!(
                "DryRunCreateSecurityGroup",
                true,
                c.create_security_group()
                    .dry_run(true)
                    .group_name("lbc-doctor-probe")
                    .description("aws-lb-controller doctor probe (DryRun)")
                    .vpc_id(&t.vpc_id)
                    .set_tag_specifications(Some(vec![
                        TagSpecification::builder()
                            .resource_type(ResourceType::SecurityGroup)
                            .tags(Tag::builder().key(owned_tag).value(&t.cluster_name).build())
                            .build()
                    ]))
                    .send()
            ),
            "AuthorizeSecurityGroupIngress" | "RevokeSecurityGroupIngress" => {
                let id = match ours_or(groups(None).await) {
                    Ok(id) => id,
                    Err(Outcome::Unverifiable(_)) => {
                        return Outcome::Unverifiable(format!("no security group in {} to try it on", t.vpc_id));
                    }
                    Err(o) => return o,
                };
                if op == "AuthorizeSecurityGroupIngress" {
                    call!(
                        "DryRunAuthorizeSecurityGroupIngress",
                        true,
                        c.authorize_security_group_ingress()
                            .dry_run(true)
                            .group_id(&id)
                            .ip_permissions(rule.clone())
                            .send()
                    )
                } else {
                    call!(
                        "DryRunRevokeSecurityGroupIngress",
                        true,
                        c.revoke_security_group_ingress()
                            .dry_run(true)
                            .group_id(&id)
                            .ip_permissions(rule.clone())
                            .send()
                    )
                }
            }
            "CreateTags" | "DeleteTags" | "DeleteSecurityGroup" => {
                let id = match ours_or(groups(Some(owned_tag)).await) {
                    Ok(id) => id,
                    Err(o) => return o,
                };
                let tag = Tag::builder().key(owned_tag).value(&t.cluster_name).build();
                match op {
                    "CreateTags" => {
                        call!(
                            "DryRunCreateTags",
                            true,
                            c.create_tags().dry_run(true).resources(&id).set_tags(Some(vec![tag.clone()])).send()
                        )
                    }
                    "DeleteTags" => call!(
                        "DryRunDeleteTags",
                        true,
                        c.delete_tags()
                            .dry_run(true)
                            .resources(&id)
                            .tags(Tag::builder().key("lbc-doctor-probe").build())
                            .send()
                    ),
                    _ => {
                        call!(
                            "DryRunDeleteSecurityGroup",
                            true,
                            c.delete_security_group().dry_run(true).group_id(&id).send()
                        )
                    }
                }
            }
            _ => Outcome::Unverifiable(format!("no probe for ec2:{op}")),
        }
    }
}
