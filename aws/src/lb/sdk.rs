//! [`LoadBalancers`] over aws_sdk_elasticloadbalancingv2; every call goes through [`CallRunner`].

use super::convert as cv;
use super::tag_cache::TagCache;
use super::{DESCRIBE_TAGS_CHUNK, FoundLoadBalancer, LoadBalancers, require_target_group_arns, tags_match};
use crate::call::{CallRunner, Service, all_pages};
use crate::error::{AwsError, ErrorKind, HttpStatus};
use async_trait::async_trait;
use aws_sdk_elasticloadbalancingv2 as elbv2;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use elbv2::types as sdk;
use lbc_model::lb::{
    Attributes, HealthCheck, LbIpAddressType, Listener, LoadBalancer, Observed, Protocol, Rule, SubnetMapping, Tags,
    TargetGroup,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

pub(super) const SVC: Service = Service::Elbv2;
/// Largest page DescribeLoadBalancers / DescribeTargetGroups / DescribeListeners accept.
pub(super) const PAGE_SIZE: i32 = 400;

/// [`LoadBalancers`] over the AWS SDK.
pub struct SdkLoadBalancers {
    pub(super) client: elbv2::Client,
    pub(super) runner: Arc<CallRunner>,
    tag_cache: TagCache,
}

impl SdkLoadBalancers {
    pub fn new(client: elbv2::Client, runner: Arc<CallRunner>) -> Self {
        Self { client, runner, tag_cache: TagCache::default() }
    }

    /// Tags of the listed resources (of one `kind`) that may match `want`; see [`TagCache`].
    async fn tags_for_query(
        &self,
        kind: &str,
        listed: Vec<String>,
        want: &Tags,
    ) -> Result<BTreeMap<String, Tags>, AwsError> {
        let read = self.tag_cache.to_read(kind, &listed, want, Instant::now());
        let tags = self.describe_tags(&read).await?;
        self.tag_cache.remember(&tags, Instant::now());
        Ok(tags)
    }

    async fn all_load_balancers(&self) -> Result<Vec<sdk::LoadBalancer>, AwsError> {
        const OP: &str = "DescribeLoadBalancers";
        all_pages(|marker| async move {
            let page = self
                .runner
                .run(SVC, OP, || async {
                    let req = self.client.describe_load_balancers().page_size(PAGE_SIZE);
                    req.set_marker(marker.clone()).send().await.map_err(err(OP))
                })
                .await?;
            Ok((page.load_balancers().to_vec(), page.next_marker().map(String::from)))
        })
        .await
    }

    async fn all_target_groups(&self) -> Result<Vec<sdk::TargetGroup>, AwsError> {
        const OP: &str = "DescribeTargetGroups";
        all_pages(|marker| async move {
            let page = self
                .runner
                .run(SVC, OP, || async {
                    let req = self.client.describe_target_groups().page_size(PAGE_SIZE);
                    req.set_marker(marker.clone()).send().await.map_err(err(OP))
                })
                .await?;
            Ok((page.target_groups().to_vec(), page.next_marker().map(String::from)))
        })
        .await
    }

    /// One DescribeTags call (≤ 20 ARNs).
    async fn tags_chunk(&self, arns: &[String]) -> Result<Vec<(String, Tags)>, AwsError> {
        const OP: &str = "DescribeTags";
        let out = self
            .runner
            .run(SVC, OP, || async {
                self.client.describe_tags().set_resource_arns(Some(arns.to_vec())).send().await.map_err(err(OP))
            })
            .await?;
        Ok(out
            .tag_descriptions()
            .iter()
            .filter_map(|d| Some((d.resource_arn()?.to_string(), cv::tags_from(d.tags()))))
            .collect())
    }

    async fn tags_of(&self, arn: &str) -> Result<Tags, AwsError> {
        Ok(self.describe_tags(&[arn.to_string()]).await?.remove(arn).unwrap_or_default())
    }

    async fn one_load_balancer(
        &self,
        arn: Option<&str>,
        name: Option<&str>,
    ) -> Result<Option<FoundLoadBalancer>, AwsError> {
        const OP: &str = "DescribeLoadBalancers";
        let out = self
            .runner
            .run(SVC, OP, || async {
                let req = self.client.describe_load_balancers();
                let req = req.set_load_balancer_arns(arn.map(|a| vec![a.to_string()]));
                req.set_names(name.map(|n| vec![n.to_string()])).send().await.map_err(err(OP))
            })
            .await;
        let lb = match out {
            Ok(o) => o.load_balancers().first().cloned(),
            Err(e) if e.kind == ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let Some(lb) = lb else { return Ok(None) };
        let tags = self.tags_of(lb.load_balancer_arn().unwrap_or_default()).await?;
        Ok(Some(cv::load_balancer_from(&lb, tags)))
    }
}

pub(super) fn err<E, R>(op: &'static str) -> impl FnOnce(SdkError<E, R>) -> AwsError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug + HttpStatus,
{
    move |e| AwsError::from_sdk(SVC.label(), op, e)
}

pub(super) fn invalid(op: &'static str, message: String) -> AwsError {
    AwsError::new(ErrorKind::Invalid, SVC.label(), op, message)
}

/// Deletes are idempotent: gone already is done.
pub(super) fn gone_is_ok(r: Result<(), AwsError>) -> Result<(), AwsError> {
    match r {
        Err(e) if e.kind == ErrorKind::NotFound => Ok(()),
        r => r,
    }
}

pub(super) fn non_empty<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

#[async_trait]
impl LoadBalancers for SdkLoadBalancers {
    async fn find_load_balancers(&self, tags: &Tags) -> Result<Vec<FoundLoadBalancer>, AwsError> {
        let lbs = self.all_load_balancers().await?;
        let arns: Vec<String> = lbs.iter().filter_map(|l| l.load_balancer_arn().map(str::to_string)).collect();
        let mut all_tags = self.tags_for_query(":loadbalancer/", arns, tags).await?;
        Ok(lbs
            .iter()
            .filter_map(|lb| {
                let t = all_tags.remove(lb.load_balancer_arn()?)?;
                tags_match(&t, tags).then(|| cv::load_balancer_from(lb, t))
            })
            .collect())
    }

    async fn find_target_groups(&self, tags: &Tags) -> Result<Vec<Observed<TargetGroup>>, AwsError> {
        let tgs = self.all_target_groups().await?;
        let arns: Vec<String> = tgs.iter().filter_map(|t| t.target_group_arn().map(str::to_string)).collect();
        let mut all_tags = self.tags_for_query(":targetgroup/", arns, tags).await?;
        Ok(tgs
            .iter()
            .filter_map(|tg| {
                let t = all_tags.remove(tg.target_group_arn()?)?;
                tags_match(&t, tags).then(|| cv::target_group_from(tg, t))
            })
            .collect())
    }

    async fn load_balancer(&self, arn: &str) -> Result<Option<FoundLoadBalancer>, AwsError> {
        self.one_load_balancer(Some(arn), None).await
    }

    async fn load_balancer_by_name(&self, name: &str) -> Result<Option<FoundLoadBalancer>, AwsError> {
        self.one_load_balancer(None, Some(name)).await
    }

    async fn target_group_by_name(&self, name: &str) -> Result<Option<Observed<TargetGroup>>, AwsError> {
        const OP: &str = "DescribeTargetGroups";
        let out = self
            .runner
            .run(SVC, OP, || async { self.client.describe_target_groups().names(name).send().await.map_err(err(OP)) })
            .await;
        let tg = match out {
            Ok(o) => o.target_groups().first().cloned(),
            Err(e) if e.kind == ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let Some(tg) = tg else { return Ok(None) };
        let tags = self.tags_of(tg.target_group_arn().unwrap_or_default()).await?;
        Ok(Some(cv::target_group_from(&tg, tags)))
    }

    async fn trust_store_arns(&self, names: &[String]) -> Result<BTreeMap<String, String>, AwsError> {
        const OP: &str = "DescribeTrustStores";
        let mut out = BTreeMap::new();
        for name in names {
            let answer = self
                .runner
                .run(SVC, OP, || async {
                    self.client.describe_trust_stores().names(name).send().await.map_err(err(OP))
                })
                .await;
            match answer {
                Ok(o) => {
                    let arn = o
                        .trust_stores()
                        .iter()
                        .find(|t| t.name() == Some(name.as_str()))
                        .and_then(|t| t.trust_store_arn());
                    if let Some(arn) = arn {
                        out.insert(name.clone(), arn.to_string());
                    }
                }
                Err(e) if e.code.as_deref() == Some("TrustStoreNotFound") => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    async fn listeners(&self, load_balancer_arn: &str) -> Result<Vec<Observed<Listener>>, AwsError> {
        const OP: &str = "DescribeListeners";
        let mut out = all_pages(|marker| async move {
            let page = self
                .runner
                .run(SVC, OP, || async {
                    let req = self.client.describe_listeners().load_balancer_arn(load_balancer_arn);
                    req.page_size(PAGE_SIZE).set_marker(marker.clone()).send().await.map_err(err(OP))
                })
                .await?;
            Ok((page.listeners().iter().map(cv::listener_from).collect(), page.next_marker().map(String::from)))
        })
        .await?;
        // DescribeListeners reports the default certificate only.
        for l in &mut out {
            if matches!(l.spec.protocol, Protocol::Tls | Protocol::Https) {
                let reported = self.listener_certificates(&l.id).await?;
                l.spec.certificates = cv::with_extra_certificates(&l.spec.certificates, &reported);
            }
        }
        Ok(out)
    }

    async fn describe_tags(&self, arns: &[String]) -> Result<BTreeMap<String, Tags>, AwsError> {
        let mut out = BTreeMap::new();
        for chunk in arns.chunks(DESCRIBE_TAGS_CHUNK) {
            match self.tags_chunk(chunk).await {
                Ok(v) => out.extend(v),
                // One resource of the chunk was deleted meanwhile: ask one by one, skip the gone.
                Err(e) if e.kind == ErrorKind::NotFound && chunk.len() > 1 => {
                    for arn in chunk {
                        match self.tags_chunk(std::slice::from_ref(arn)).await {
                            Ok(v) => out.extend(v),
                            Err(e) if e.kind == ErrorKind::NotFound => {}
                            Err(e) => return Err(e),
                        }
                    }
                }
                Err(e) if e.kind == ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    async fn load_balancer_attributes(&self, arn: &str) -> Result<Attributes, AwsError> {
        const OP: &str = "DescribeLoadBalancerAttributes";
        let out = self
            .runner
            .run(SVC, OP, || async {
                self.client.describe_load_balancer_attributes().load_balancer_arn(arn).send().await.map_err(err(OP))
            })
            .await?;
        Ok(cv::attributes_from(out.attributes().iter().map(|a| (a.key(), a.value()))))
    }

    async fn target_group_attributes(&self, arn: &str) -> Result<Attributes, AwsError> {
        const OP: &str = "DescribeTargetGroupAttributes";
        let out = self
            .runner
            .run(SVC, OP, || async {
                self.client.describe_target_group_attributes().target_group_arn(arn).send().await.map_err(err(OP))
            })
            .await?;
        Ok(cv::attributes_from(out.attributes().iter().map(|a| (a.key(), a.value()))))
    }

    async fn listener_attributes(&self, arn: &str) -> Result<Attributes, AwsError> {
        const OP: &str = "DescribeListenerAttributes";
        let out = self
            .runner
            .run(SVC, OP, || async {
                self.client.describe_listener_attributes().listener_arn(arn).send().await.map_err(err(OP))
            })
            .await?;
        Ok(cv::attributes_from(out.attributes().iter().map(|a| (a.key(), a.value()))))
    }

    async fn create_load_balancer(&self, lb: &LoadBalancer) -> Result<FoundLoadBalancer, AwsError> {
        const OP: &str = "CreateLoadBalancer";
        let mappings: Vec<sdk::SubnetMapping> = lb.subnets.iter().map(cv::subnet_mapping).collect();
        let out = self
            .runner
            .run(SVC, OP, || async {
                let req = self.client.create_load_balancer().name(&lb.name).r#type(cv::lb_type(lb.lb_type));
                let req = req.scheme(cv::scheme(lb.scheme)).ip_address_type(cv::ip_address_type(lb.ip_address_type));
                let req = req.set_subnet_mappings(Some(mappings.clone()));
                let req = req.set_security_groups(non_empty(lb.security_groups.clone()));
                let req = req.set_customer_owned_ipv4_pool(lb.customer_owned_ipv4_pool.clone());
                let pools = lb.ipv4_ipam_pool.as_ref().map(|p| sdk::IpamPools::builder().ipv4_ipam_pool_id(p).build());
                let req = req.set_ipam_pools(pools);
                let req = req.set_enable_prefix_for_ipv6_source_nat(cv::source_nat(lb.ipv6_source_nat));
                req.set_tags(non_empty(cv::tags(&lb.tags))).send().await.map_err(err(OP))
            })
            .await?;
        let created =
            out.load_balancers().first().ok_or_else(|| invalid(OP, "no load balancer in the answer".into()))?;
        Ok(cv::load_balancer_from(created, lb.tags.clone()))
    }

    async fn delete_load_balancer(&self, arn: &str) -> Result<(), AwsError> {
        const OP: &str = "DeleteLoadBalancer";
        let r = self
            .runner
            .run(SVC, OP, || async {
                self.client.delete_load_balancer().load_balancer_arn(arn).send().await.map_err(err(OP))
            })
            .await;
        gone_is_ok(r.map(|_| ()))
    }

    async fn modify_load_balancer_attributes(&self, arn: &str, attributes: &Attributes) -> Result<(), AwsError> {
        const OP: &str = "ModifyLoadBalancerAttributes";
        let attrs = cv::lb_attributes(attributes);
        self.runner
            .run(SVC, OP, || async {
                let req = self.client.modify_load_balancer_attributes().load_balancer_arn(arn);
                req.set_attributes(Some(attrs.clone())).send().await.map_err(err(OP))
            })
            .await
            .map(|_| ())
    }

    async fn set_subnets(
        &self,
        arn: &str,
        subnets: &[SubnetMapping],
        ipv6_source_nat: Option<bool>,
    ) -> Result<(), AwsError> {
        const OP: &str = "SetSubnets";
        let mappings: Vec<sdk::SubnetMapping> = subnets.iter().map(cv::subnet_mapping).collect();
        self.runner
            .run(SVC, OP, || async {
                let req = self.client.set_subnets().load_balancer_arn(arn);
                let req = req.set_enable_prefix_for_ipv6_source_nat(cv::source_nat(ipv6_source_nat));
                req.set_subnet_mappings(Some(mappings.clone())).send().await.map_err(err(OP))
            })
            .await
            .map(|_| ())
    }

    async fn set_security_groups(&self, arn: &str, security_groups: &[String]) -> Result<(), AwsError> {
        const OP: &str = "SetSecurityGroups";
        self.runner
            .run(SVC, OP, || async {
                let req = self.client.set_security_groups().load_balancer_arn(arn);
                req.set_security_groups(Some(security_groups.to_vec())).send().await.map_err(err(OP))
            })
            .await
            .map(|_| ())
    }

    async fn set_private_link_enforcement(
        &self,
        arn: &str,
        security_groups: &[String],
        on: bool,
    ) -> Result<(), AwsError> {
        self.private_link_enforcement(arn, security_groups, on).await
    }

    async fn minimum_capacity(&self, arn: &str) -> Result<Option<u32>, AwsError> {
        self.capacity_reservation(arn).await
    }

    async fn set_minimum_capacity(&self, arn: &str, units: Option<u32>) -> Result<(), AwsError> {
        self.modify_capacity_reservation(arn, units).await
    }

    async fn set_ip_address_type(&self, arn: &str, ip_address_type: LbIpAddressType) -> Result<(), AwsError> {
        const OP: &str = "SetIpAddressType";
        self.runner
            .run(SVC, OP, || async {
                let req = self.client.set_ip_address_type().load_balancer_arn(arn);
                req.ip_address_type(cv::ip_address_type(ip_address_type)).send().await.map_err(err(OP))
            })
            .await
            .map(|_| ())
    }

    async fn modify_ip_pools(&self, arn: &str, ipv4_ipam_pool: Option<&str>) -> Result<(), AwsError> {
        const OP: &str = "ModifyIpPools";
        self.runner
            .run(SVC, OP, || async {
                let req = self.client.modify_ip_pools().load_balancer_arn(arn);
                let req = match ipv4_ipam_pool {
                    Some(pool) => req.ipam_pools(sdk::IpamPools::builder().ipv4_ipam_pool_id(pool).build()),
                    None => req.remove_ipam_pools(sdk::RemoveIpamPoolEnum::Ipv4),
                };
                req.send().await.map_err(err(OP))
            })
            .await
            .map(|_| ())
    }

    async fn create_target_group(&self, tg: &TargetGroup) -> Result<Observed<TargetGroup>, AwsError> {
        const OP: &str = "CreateTargetGroup";
        let hc = &tg.health_check;
        let out = self
            .runner
            .run(SVC, OP, || async {
                let req = self.client.create_target_group().name(&tg.name).protocol(cv::protocol(tg.protocol));
                let req = req.set_protocol_version(tg.protocol_version.clone()).port(i32::from(tg.port));
                let req = req.vpc_id(&tg.vpc_id).target_type(sdk::TargetTypeEnum::from(tg.target_type.as_str()));
                let req = req.ip_address_type(cv::tg_ip_address_type(tg.ip_address_type));
                let req = req.health_check_enabled(true).health_check_protocol(cv::protocol(hc.protocol));
                let req = req.health_check_port(cv::health_check_port(hc.port));
                let req = req.set_health_check_path(cv::health_check_path(hc)).set_matcher(cv::matcher(hc));
                let req = req.health_check_interval_seconds(cv::int(hc.interval_seconds));
                let req = req.health_check_timeout_seconds(cv::int(hc.timeout_seconds));
                let req = req.healthy_threshold_count(cv::int(hc.healthy_threshold));
                let req = req.unhealthy_threshold_count(cv::int(hc.unhealthy_threshold));
                let req = req.set_target_control_port(tg.target_control_port.map(i32::from));
                req.set_tags(non_empty(cv::tags(&tg.tags))).send().await.map_err(err(OP))
            })
            .await?;
        let created = out.target_groups().first().ok_or_else(|| invalid(OP, "no target group in the answer".into()))?;
        Ok(cv::target_group_from(created, tg.tags.clone()))
    }

    async fn modify_target_group_health_check(&self, arn: &str, hc: &HealthCheck) -> Result<(), AwsError> {
        const OP: &str = "ModifyTargetGroup";
        self.runner
            .run(SVC, OP, || async {
                let req = self.client.modify_target_group().target_group_arn(arn).health_check_enabled(true);
                let req = req.health_check_protocol(cv::protocol(hc.protocol));
                let req = req.health_check_port(cv::health_check_port(hc.port));
                let req = req.set_health_check_path(cv::health_check_path(hc)).set_matcher(cv::matcher(hc));
                let req = req.health_check_interval_seconds(cv::int(hc.interval_seconds));
                let req = req.health_check_timeout_seconds(cv::int(hc.timeout_seconds));
                let req = req.healthy_threshold_count(cv::int(hc.healthy_threshold));
                req.unhealthy_threshold_count(cv::int(hc.unhealthy_threshold)).send().await.map_err(err(OP))
            })
            .await
            .map(|_| ())
    }

    async fn modify_target_group_attributes(&self, arn: &str, attributes: &Attributes) -> Result<(), AwsError> {
        const OP: &str = "ModifyTargetGroupAttributes";
        let attrs = cv::tg_attributes(attributes);
        self.runner
            .run(SVC, OP, || async {
                let req = self.client.modify_target_group_attributes().target_group_arn(arn);
                req.set_attributes(Some(attrs.clone())).send().await.map_err(err(OP))
            })
            .await
            .map(|_| ())
    }

    async fn delete_target_group(&self, arn: &str) -> Result<(), AwsError> {
        const OP: &str = "DeleteTargetGroup";
        let r = self
            .runner
            .run(SVC, OP, || async {
                self.client.delete_target_group().target_group_arn(arn).send().await.map_err(err(OP))
            })
            .await;
        gone_is_ok(r.map(|_| ()))
    }

    async fn id_targets(&self, target_group_arn: &str) -> Result<Vec<(String, u16)>, AwsError> {
        const OP: &str = "DescribeTargetHealth";
        let out = self
            .runner
            .run(SVC, OP, || async {
                self.client.describe_target_health().target_group_arn(target_group_arn).send().await.map_err(err(OP))
            })
            .await?;
        Ok(out
            .target_health_descriptions()
            .iter()
            .filter_map(|d| d.target())
            .filter_map(|t| Some((t.id()?.to_string(), u16::try_from(t.port()?).ok()?)))
            .filter(|(id, _)| id.parse::<std::net::IpAddr>().is_err())
            .collect())
    }

    async fn write_id_targets(
        &self,
        target_group_arn: &str,
        targets: &[(String, u16)],
        register: bool,
    ) -> Result<(), AwsError> {
        let descs: Vec<sdk::TargetDescription> = targets
            .iter()
            .map(|(id, port)| sdk::TargetDescription::builder().id(id).port(i32::from(*port)).build())
            .collect();
        if register {
            const OP: &str = "RegisterTargets";
            self.runner
                .run(SVC, OP, || async {
                    let call = self.client.register_targets().target_group_arn(target_group_arn);
                    call.set_targets(Some(descs.clone())).send().await.map_err(err(OP))
                })
                .await
                .map(|_| ())
        } else {
            const OP: &str = "DeregisterTargets";
            self.runner
                .run(SVC, OP, || async {
                    let call = self.client.deregister_targets().target_group_arn(target_group_arn);
                    call.set_targets(Some(descs.clone())).send().await.map_err(err(OP))
                })
                .await
                .map(|_| ())
        }
    }

    async fn create_listener(
        &self,
        load_balancer_arn: &str,
        listener: &Listener,
    ) -> Result<Observed<Listener>, AwsError> {
        const OP: &str = "CreateListener";
        require_target_group_arns(&listener.default_actions).map_err(|m| invalid(OP, m))?;
        let actions = cv::actions(&listener.default_actions).map_err(|m| invalid(OP, m))?;
        let out = self
            .runner
            .run(SVC, OP, || async {
                let req = self.client.create_listener().load_balancer_arn(load_balancer_arn);
                let req = req.port(i32::from(listener.port)).protocol(cv::protocol(listener.protocol));
                let req =
                    req.set_certificates(default_certificate(listener)).set_ssl_policy(listener.ssl_policy.clone());
                let req = req.set_alpn_policy(listener.alpn_policy.clone().map(|p| vec![p]));
                let req = req
                    .set_mutual_authentication(listener.mutual_authentication.as_ref().map(cv::mutual_authentication));
                let req = req.set_default_actions(Some(actions.clone()));
                req.set_tags(non_empty(cv::tags(&listener.tags))).send().await.map_err(err(OP))
            })
            .await?;
        let created = out.listeners().first().ok_or_else(|| invalid(OP, "no listener in the answer".into()))?;
        let mut observed = cv::listener_from(created);
        observed.spec.tags = listener.tags.clone();
        Ok(observed)
    }

    async fn modify_listener(&self, arn: &str, listener: &Listener) -> Result<(), AwsError> {
        const OP: &str = "ModifyListener";
        require_target_group_arns(&listener.default_actions).map_err(|m| invalid(OP, m))?;
        let actions = cv::actions(&listener.default_actions).map_err(|m| invalid(OP, m))?;
        self.runner
            .run(SVC, OP, || async {
                let req = self.client.modify_listener().listener_arn(arn);
                let req = req.port(i32::from(listener.port)).protocol(cv::protocol(listener.protocol));
                let req =
                    req.set_certificates(default_certificate(listener)).set_ssl_policy(listener.ssl_policy.clone());
                let req = req.set_alpn_policy(listener.alpn_policy.clone().map(|p| vec![p]));
                let req = req
                    .set_mutual_authentication(listener.mutual_authentication.as_ref().map(cv::mutual_authentication));
                req.set_default_actions(Some(actions.clone())).send().await.map_err(err(OP))
            })
            .await
            .map(|_| ())
    }

    async fn modify_listener_attributes(&self, arn: &str, attributes: &Attributes) -> Result<(), AwsError> {
        const OP: &str = "ModifyListenerAttributes";
        let attrs = cv::listener_attributes(attributes);
        self.runner
            .run(SVC, OP, || async {
                let req = self.client.modify_listener_attributes().listener_arn(arn);
                req.set_attributes(Some(attrs.clone())).send().await.map_err(err(OP))
            })
            .await
            .map(|_| ())
    }

    async fn delete_listener(&self, arn: &str) -> Result<(), AwsError> {
        const OP: &str = "DeleteListener";
        let r = self
            .runner
            .run(SVC, OP, || async { self.client.delete_listener().listener_arn(arn).send().await.map_err(err(OP)) })
            .await;
        gone_is_ok(r.map(|_| ()))
    }

    async fn add_listener_certificates(&self, listener_arn: &str, certificates: &[String]) -> Result<(), AwsError> {
        self.change_listener_certificates(listener_arn, certificates, true).await
    }

    async fn remove_listener_certificates(&self, listener_arn: &str, certificates: &[String]) -> Result<(), AwsError> {
        self.change_listener_certificates(listener_arn, certificates, false).await
    }

    async fn rules(&self, listener_arn: &str) -> Result<Vec<Observed<Rule>>, AwsError> {
        self.all_rules(listener_arn).await
    }

    async fn create_rule(&self, listener_arn: &str, rule: &Rule) -> Result<Observed<Rule>, AwsError> {
        self.create_one_rule(listener_arn, rule).await
    }

    async fn modify_rule(&self, arn: &str, rule: &Rule) -> Result<(), AwsError> {
        self.modify_one_rule(arn, rule).await
    }

    async fn set_rule_priorities(&self, priorities: &[(String, u32)]) -> Result<(), AwsError> {
        self.move_rules(priorities).await
    }

    async fn delete_rule(&self, arn: &str) -> Result<(), AwsError> {
        self.delete_one_rule(arn).await
    }

    async fn add_tags(&self, arn: &str, tags: &Tags) -> Result<(), AwsError> {
        const OP: &str = "AddTags";
        if tags.is_empty() {
            return Ok(());
        }
        let t = cv::tags(tags);
        self.tag_cache.forget(arn);
        self.runner
            .run(SVC, OP, || async {
                let req = self.client.add_tags().resource_arns(arn);
                req.set_tags(Some(t.clone())).send().await.map_err(err(OP))
            })
            .await
            .map(|_| ())
    }

    async fn remove_tags(&self, arn: &str, keys: &[String]) -> Result<(), AwsError> {
        const OP: &str = "RemoveTags";
        if keys.is_empty() {
            return Ok(());
        }
        self.tag_cache.forget(arn);
        self.runner
            .run(SVC, OP, || async {
                let req = self.client.remove_tags().resource_arns(arn);
                req.set_tag_keys(Some(keys.to_vec())).send().await.map_err(err(OP))
            })
            .await
            .map(|_| ())
    }
}

/// CreateListener / ModifyListener take exactly one (the default) certificate; the others are
/// attached with AddListenerCertificates.
fn default_certificate(l: &Listener) -> Option<Vec<sdk::Certificate>> {
    l.certificates.first().map(|c| vec![sdk::Certificate::builder().certificate_arn(c).build()])
}
