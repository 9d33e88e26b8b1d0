//! Read-only probes for `aws-lb-controller doctor`: STS GetCallerIdentity and one harmless try of
//! every IAM action the controller needs (see `lbc_model::doctor::permissions`). Every call goes
//! through the [`CallRunner`] (throttled, counted, timed); EC2 writes carry `DryRun=true` and are
//! labelled `DryRun<Operation>` so the runner treats them as reads.

use crate::call::{CallRunner, Service};
use crate::config::Clients;
use crate::error::{AwsError, ErrorKind};
use aws_sdk_ec2::types::{Filter, IpPermission, IpRange, ResourceType, Tag, TagSpecification};
use lbc_model::doctor::permissions::Outcome;
use std::sync::Arc;

/// Who the keys belong to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallerIdentity {
    pub arn: String,
    pub account: String,
}

/// What the probes need to know of the cluster.
#[derive(Clone, Debug)]
pub struct ProbeTarget {
    pub region: String,
    pub account: String,
    pub vpc_id: String,
    pub cluster_name: String,
}

pub struct Probes {
    clients: Clients,
    runner: Arc<CallRunner>,
}

/// Runs one SDK call through the runner as `$name`, mapping its error.
macro_rules! run {
    ($self:ident, $service:expr, $name:literal, $call:expr) => {
        $self
            .runner
            .run($service, $name, || async {
                $call.await.map_err(|err| AwsError::from_sdk($service.label(), $name, err))
            })
            .await
    };
}

/// Maps one probe's result: a read that answered, or failed only because the made-up resource
/// does not exist, was authorised; a DryRun is allowed only on `DryRunOperation`.
fn outcome<T>(r: Result<T, AwsError>, dry_run: bool) -> Outcome {
    match r {
        Ok(_) => Outcome::Allowed,
        Err(e) if e.code.as_deref() == Some("DryRunOperation") => Outcome::Allowed,
        Err(e) if e.kind == ErrorKind::AccessDenied => {
            Outcome::Denied(format!("{}: {}", e.code.as_deref().unwrap_or("AccessDenied"), e.message))
        }
        Err(e) if !dry_run && matches!(e.kind, ErrorKind::NotFound | ErrorKind::Invalid) => Outcome::Allowed,
        Err(e) => Outcome::Error(e.to_string()),
    }
}

impl Probes {
    pub fn new(clients: Clients, runner: Arc<CallRunner>) -> Self {
        Self { clients, runner }
    }

    pub async fn caller_identity(&self) -> Result<CallerIdentity, AwsError> {
        let out = run!(self, Service::Sts, "GetCallerIdentity", self.clients.sts.get_caller_identity().send())?;
        Ok(CallerIdentity {
            arn: out.arn().unwrap_or_default().to_string(),
            account: out.account().unwrap_or_default().to_string(),
        })
    }

    /// Tries `action` (`service:Operation`) without changing anything.
    pub async fn probe(&self, action: &str, t: &ProbeTarget) -> Outcome {
        let (service, op) = action.split_once(':').unwrap_or(("", action));
        match service {
            "elasticloadbalancing" => self.elbv2(op, t).await,
            "ec2" => self.ec2(op, t).await,
            "acm" => self.acm(op, t).await,
            "wafv2" => self.wafv2(op, t).await,
            _ => Outcome::Unverifiable(format!("no probe for service {service}")),
        }
    }

    async fn elbv2(&self, op: &str, t: &ProbeTarget) -> Outcome {
        let c = &self.clients.elbv2;
        let arn = |kind: &str| format!("arn:aws:elasticloadbalancing:{}:{}:{kind}", t.region, t.account);
        let tg = arn("targetgroup/lbc-doctor-probe/0123456789abcdef");
        let lb = arn("loadbalancer/net/lbc-doctor-probe/0123456789abcdef");
        let listener = arn("listener/net/lbc-doctor-probe/0123456789abcdef/0123456789abcdef");
        macro_rules! read {
            ($name:literal, $call:expr) => {
                outcome(run!(self, Service::Elbv2, $name, $call), false)
            };
        }
        match op {
            "DescribeTargetGroups" => read!("DescribeTargetGroups", c.describe_target_groups().page_size(1).send()),
            "DescribeTargetHealth" => {
                read!("DescribeTargetHealth", c.describe_target_health().target_group_arn(&tg).send())
            }
            "DescribeLoadBalancers" => read!("DescribeLoadBalancers", c.describe_load_balancers().page_size(1).send()),
            "DescribeLoadBalancerAttributes" => {
                read!(
                    "DescribeLoadBalancerAttributes",
                    c.describe_load_balancer_attributes().load_balancer_arn(&lb).send()
                )
            }
            "DescribeTargetGroupAttributes" => {
                read!(
                    "DescribeTargetGroupAttributes",
                    c.describe_target_group_attributes().target_group_arn(&tg).send()
                )
            }
            "DescribeListeners" => read!("DescribeListeners", c.describe_listeners().load_balancer_arn(&lb).send()),
            "DescribeListenerAttributes" => {
                read!("DescribeListenerAttributes", c.describe_listener_attributes().listener_arn(&listener).send())
            }
            "DescribeListenerCertificates" => {
                read!("DescribeListenerCertificates", c.describe_listener_certificates().listener_arn(&listener).send())
            }
            "DescribeRules" => read!("DescribeRules", c.describe_rules().listener_arn(&listener).send()),
            "DescribeTags" => read!("DescribeTags", c.describe_tags().resource_arns(&tg).send()),
            "DescribeCapacityReservation" => {
                read!("DescribeCapacityReservation", c.describe_capacity_reservation().load_balancer_arn(&lb).send())
            }
            _ => Outcome::Unverifiable("ELBv2 has no DryRun".into()),
        }
    }

    async fn ec2(&self, op: &str, t: &ProbeTarget) -> Outcome {
        let c = &self.clients.ec2;
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
            "DescribeSecurityGroups" => {
                call!(
                    "DescribeSecurityGroups",
                    false,
                    c.describe_security_groups().filters(vpc.clone()).max_results(5).send()
                )
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
                    .tag_specifications(
                        TagSpecification::builder()
                            .resource_type(ResourceType::SecurityGroup)
                            .tags(Tag::builder().key(owned_tag).value(&t.cluster_name).build())
                            .build()
                    )
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
                            c.create_tags().dry_run(true).resources(&id).tags(tag.clone()).send()
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

    async fn acm(&self, op: &str, t: &ProbeTarget) -> Outcome {
        let c = &self.clients.acm;
        let cert = format!("arn:aws:acm:{}:{}:certificate/00000000-0000-0000-0000-000000000000", t.region, t.account);
        match op {
            "ListCertificates" => {
                outcome(run!(self, Service::Acm, "ListCertificates", c.list_certificates().max_items(1).send()), false)
            }
            "DescribeCertificate" => outcome(
                run!(self, Service::Acm, "DescribeCertificate", c.describe_certificate().certificate_arn(&cert).send()),
                false,
            ),
            _ => Outcome::Unverifiable("ACM has no DryRun".into()),
        }
    }

    async fn wafv2(&self, op: &str, t: &ProbeTarget) -> Outcome {
        let c = &self.clients.wafv2;
        let lb = format!(
            "arn:aws:elasticloadbalancing:{}:{}:loadbalancer/app/lbc-doctor-probe/0123456789abcdef",
            t.region, t.account
        );
        match op {
            "ListWebACLs" => outcome(
                run!(
                    self,
                    Service::Wafv2,
                    "ListWebACLs",
                    c.list_web_acls().scope(aws_sdk_wafv2::types::Scope::Regional).limit(1).send()
                ),
                false,
            ),
            "GetWebACLForResource" => {
                let r = run!(
                    self,
                    Service::Wafv2,
                    "GetWebACLForResource",
                    c.get_web_acl_for_resource().resource_arn(&lb).send()
                );
                // WAFv2 answers a load balancer it does not know with WAFNonexistentItemException.
                match r {
                    Err(err) if err.code.as_deref() == Some("WAFNonexistentItemException") => Outcome::Allowed,
                    r => outcome(r, false),
                }
            }
            _ => Outcome::Unverifiable("WAFv2 has no DryRun".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(kind: ErrorKind, code: &str) -> Result<(), AwsError> {
        let mut e = AwsError::new(kind, "ec2", "X", "msg");
        e.code = Some(code.into());
        Err(e)
    }

    #[test]
    fn outcomes() {
        assert_eq!(outcome(Ok::<(), AwsError>(()), false), Outcome::Allowed);
        assert_eq!(outcome(err(ErrorKind::Other, "DryRunOperation"), true), Outcome::Allowed);
        assert!(
            matches!(outcome(err(ErrorKind::AccessDenied, "UnauthorizedOperation"), true), Outcome::Denied(m) if m.contains("UnauthorizedOperation"))
        );
        assert_eq!(outcome(err(ErrorKind::NotFound, "TargetGroupNotFound"), false), Outcome::Allowed);
        assert!(matches!(outcome(err(ErrorKind::NotFound, "InvalidGroup.NotFound"), true), Outcome::Error(_)));
        assert!(matches!(outcome(err(ErrorKind::Transient, "InternalError"), false), Outcome::Error(_)));
    }
}
