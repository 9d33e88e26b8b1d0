//! Conversions between [`lbc_model::lb`] values and aws_sdk_elasticloadbalancingv2 types. Pure.

use super::FoundLoadBalancer;
use aws_sdk_elasticloadbalancingv2::types as sdk;
use lbc_model::lb::{
    Action, Attributes, HealthCheck, HealthCheckPort, LbIpAddressType, LbType, Listener, LoadBalancer,
    LoadBalancerStatus, MtlsMode, MutualAuthentication, Observed, Protocol, Scheme, SubnetMapping, Tags, TargetGroup,
    TargetGroupRef, TgIpAddressType, WeightedTargetGroup,
};

pub fn protocol(p: Protocol) -> sdk::ProtocolEnum {
    sdk::ProtocolEnum::from(p.as_aws())
}

pub fn lb_type(t: LbType) -> sdk::LoadBalancerTypeEnum {
    match t {
        LbType::Network => sdk::LoadBalancerTypeEnum::Network,
        LbType::Application => sdk::LoadBalancerTypeEnum::Application,
    }
}

pub fn scheme(s: Scheme) -> sdk::LoadBalancerSchemeEnum {
    sdk::LoadBalancerSchemeEnum::from(s.as_aws())
}

pub fn ip_address_type(t: LbIpAddressType) -> sdk::IpAddressType {
    sdk::IpAddressType::from(t.as_aws())
}

pub fn tg_ip_address_type(t: TgIpAddressType) -> sdk::TargetGroupIpAddressTypeEnum {
    match t {
        TgIpAddressType::Ipv4 => sdk::TargetGroupIpAddressTypeEnum::Ipv4,
        TgIpAddressType::Ipv6 => sdk::TargetGroupIpAddressTypeEnum::Ipv6,
    }
}

pub fn subnet_mapping(m: &SubnetMapping) -> sdk::SubnetMapping {
    sdk::SubnetMapping::builder()
        .subnet_id(&m.subnet_id)
        .set_allocation_id(m.allocation_id.clone())
        .set_private_ipv4_address(m.private_ipv4.map(|ip| ip.to_string()))
        .set_ipv6_address(m.ipv6.map(|ip| ip.to_string()))
        .set_source_nat_ipv6_prefix(m.source_nat_ipv6_prefix.clone())
        .build()
}

pub fn source_nat(on: Option<bool>) -> Option<sdk::EnablePrefixForIpv6SourceNatEnum> {
    on.map(|on| if on { sdk::EnablePrefixForIpv6SourceNatEnum::On } else { sdk::EnablePrefixForIpv6SourceNatEnum::Off })
}

pub fn tags(t: &Tags) -> Vec<sdk::Tag> {
    t.iter().map(|(k, v)| sdk::Tag::builder().key(k).value(v).build()).collect()
}

pub fn tags_from(t: &[sdk::Tag]) -> Tags {
    t.iter().filter_map(|t| Some((t.key()?.to_string(), t.value().unwrap_or_default().to_string()))).collect()
}

pub fn lb_attributes(a: &Attributes) -> Vec<sdk::LoadBalancerAttribute> {
    a.iter().map(|(k, v)| sdk::LoadBalancerAttribute::builder().key(k).value(v).build()).collect()
}

pub fn tg_attributes(a: &Attributes) -> Vec<sdk::TargetGroupAttribute> {
    a.iter().map(|(k, v)| sdk::TargetGroupAttribute::builder().key(k).value(v).build()).collect()
}

pub fn listener_attributes(a: &Attributes) -> Vec<sdk::ListenerAttribute> {
    a.iter().map(|(k, v)| sdk::ListenerAttribute::builder().key(k).value(v).build()).collect()
}

/// `(key, value)` pairs of any attribute list as [`Attributes`].
pub fn attributes_from<'a>(pairs: impl Iterator<Item = (Option<&'a str>, Option<&'a str>)>) -> Attributes {
    pairs.filter_map(|(k, v)| Some((k?.to_string(), v.unwrap_or_default().to_string()))).collect()
}

/// Health check port as ELBv2 spells it.
pub fn health_check_port(p: HealthCheckPort) -> String {
    match p {
        HealthCheckPort::TrafficPort => "traffic-port".into(),
        HealthCheckPort::Port(n) => n.to_string(),
    }
}

/// The success-code matcher, sent only for HTTP(S) health checks (TCP ones reject it).
pub fn matcher(hc: &HealthCheck) -> Option<sdk::Matcher> {
    let http = matches!(hc.protocol, Protocol::Http | Protocol::Https);
    hc.success_codes.as_ref().filter(|_| http).map(|c| sdk::Matcher::builder().http_code(c).build())
}

/// The path, sent only for HTTP(S) health checks.
pub fn health_check_path(hc: &HealthCheck) -> Option<String> {
    hc.path.clone().filter(|_| matches!(hc.protocol, Protocol::Http | Protocol::Https))
}

pub fn int(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn uint(n: Option<i32>) -> u32 {
    n.and_then(|n| u32::try_from(n).ok()).unwrap_or(0)
}

/// A model action as ELBv2 takes it. A forward is always written in ALBC's form: a
/// `ForwardConfig` whose groups carry a weight (1 for a single unweighted group) and an explicit
/// stickiness setting, no `TargetGroupArn`. ALBC compares its desired actions with what AWS
/// reports in that form, so a load balancer written this way is one ALBC adopts without a
/// ModifyListener/ModifyRule (rollback to ALBC proven in e2e/tests/e2e/adoption.rs). NLBs accept it
/// since they support weighted target groups.
pub fn action(a: &Action, order: Option<i32>) -> Result<sdk::Action, String> {
    let b = sdk::Action::builder().set_order(order);
    Ok(match a {
        Action::Forward { target_groups, stickiness_seconds } => {
            let arn = |t: &WeightedTargetGroup| match &t.target_group {
                TargetGroupRef::Arn(a) => Ok(a.clone()),
                TargetGroupRef::Name(n) => Err(format!("target group {n:?} must be resolved to an ARN")),
            };
            let single = target_groups.len() == 1;
            let mut fc = sdk::ForwardActionConfig::builder();
            for t in target_groups {
                let weight = t.weight.map(int).or(single.then_some(1));
                fc = fc.target_groups(
                    sdk::TargetGroupTuple::builder().target_group_arn(arn(t)?).set_weight(weight).build(),
                );
            }
            let sticky = sdk::TargetGroupStickinessConfig::builder();
            fc = fc.target_group_stickiness_config(match stickiness_seconds {
                // NLB stickiness has no duration.
                Some(0) => sticky.enabled(true).build(),
                Some(s) => sticky.enabled(true).duration_seconds(int(*s)).build(),
                None => sticky.enabled(false).build(),
            });
            b.r#type(sdk::ActionTypeEnum::Forward).forward_config(fc.build()).build()
        }
        Action::Redirect { protocol, host, port, path, query, status_code } => b
            .r#type(sdk::ActionTypeEnum::Redirect)
            .redirect_config(
                sdk::RedirectActionConfig::builder()
                    .set_protocol(protocol.clone())
                    .set_host(host.clone())
                    .set_port(port.clone())
                    .set_path(path.clone())
                    .set_query(query.clone())
                    .status_code(sdk::RedirectActionStatusCodeEnum::from(status_code.as_str()))
                    .build(),
            )
            .build(),
        Action::FixedResponse { status_code, content_type, message_body } => b
            .r#type(sdk::ActionTypeEnum::FixedResponse)
            .fixed_response_config(
                sdk::FixedResponseActionConfig::builder()
                    .status_code(status_code)
                    .set_content_type(content_type.clone())
                    .set_message_body(message_body.clone())
                    .build(),
            )
            .build(),
        Action::AuthenticateOidc(o) => b
            .r#type(sdk::ActionTypeEnum::AuthenticateOidc)
            .authenticate_oidc_config(super::convert_rules::oidc(o))
            .build(),
        Action::AuthenticateCognito(c) => b
            .r#type(sdk::ActionTypeEnum::AuthenticateCognito)
            .authenticate_cognito_config(super::convert_rules::cognito(c))
            .build(),
        Action::JwtValidation(j) => {
            b.r#type(sdk::ActionTypeEnum::JwtValidation).jwt_validation_config(super::convert_rules::jwt(j)).build()
        }
    })
}

/// Listener or rule actions in order, each with its `Order` (1, 2, ...), as ALBC writes them.
pub fn actions(list: &[Action]) -> Result<Vec<sdk::Action>, String> {
    list.iter().enumerate().map(|(i, a)| action(a, Some(int(i as u32 + 1)))).collect()
}

/// A reported action as a model action; `None` for kinds the model does not have.
pub fn action_from(a: &sdk::Action) -> Option<Action> {
    Some(match a.r#type()? {
        sdk::ActionTypeEnum::Forward => {
            let fc = a.forward_config();
            let mut tgs: Vec<WeightedTargetGroup> = fc
                .map(|f| f.target_groups())
                .unwrap_or_default()
                .iter()
                .filter_map(|t| {
                    Some(WeightedTargetGroup {
                        target_group: TargetGroupRef::Arn(t.target_group_arn()?.to_string()),
                        weight: t.weight().and_then(|w| u32::try_from(w).ok()),
                    })
                })
                .collect();
            if tgs.is_empty() {
                tgs.push(WeightedTargetGroup {
                    target_group: TargetGroupRef::Arn(a.target_group_arn()?.to_string()),
                    weight: None,
                });
            }
            let stickiness_seconds = fc
                .and_then(|f| f.target_group_stickiness_config())
                .filter(|s| s.enabled() == Some(true))
                .map(|s| uint(s.duration_seconds()));
            // One group takes all traffic: weight 1 (what AWS reports for a plain forward, and what
            // `action` writes for an unweighted one) is the same as no weight.
            if let [only] = tgs.as_mut_slice()
                && only.weight == Some(1)
            {
                only.weight = None;
            }
            Action::Forward { target_groups: tgs, stickiness_seconds }
        }
        sdk::ActionTypeEnum::Redirect => {
            let r = a.redirect_config()?;
            Action::Redirect {
                protocol: r.protocol().map(str::to_string),
                host: r.host().map(str::to_string),
                port: r.port().map(str::to_string),
                path: r.path().map(str::to_string),
                query: r.query().map(str::to_string),
                status_code: r.status_code().map(|s| s.as_str().to_string()).unwrap_or_default(),
            }
        }
        sdk::ActionTypeEnum::FixedResponse => {
            let f = a.fixed_response_config()?;
            Action::FixedResponse {
                status_code: f.status_code().unwrap_or_default().to_string(),
                content_type: f.content_type().map(str::to_string),
                message_body: f.message_body().map(str::to_string),
            }
        }
        sdk::ActionTypeEnum::AuthenticateOidc => {
            Action::AuthenticateOidc(super::convert_rules::oidc_from(a.authenticate_oidc_config()?))
        }
        sdk::ActionTypeEnum::AuthenticateCognito => {
            Action::AuthenticateCognito(super::convert_rules::cognito_from(a.authenticate_cognito_config()?))
        }
        sdk::ActionTypeEnum::JwtValidation => {
            Action::JwtValidation(super::convert_rules::jwt_from(a.jwt_validation_config()?)?)
        }
        _ => return None,
    })
}

pub fn load_balancer_from(lb: &sdk::LoadBalancer, tags: Tags) -> FoundLoadBalancer {
    let mut subnets: Vec<SubnetMapping> = lb
        .availability_zones()
        .iter()
        .filter_map(|az| {
            let addr = az.load_balancer_addresses().first();
            Some(SubnetMapping {
                subnet_id: az.subnet_id()?.to_string(),
                allocation_id: addr.and_then(|a| a.allocation_id()).map(str::to_string),
                private_ipv4: addr.and_then(|a| a.private_ipv4_address()).and_then(|s| s.parse().ok()),
                ipv6: addr.and_then(|a| a.ipv6_address()).and_then(|s| s.parse().ok()),
                source_nat_ipv6_prefix: az.source_nat_ipv6_prefixes().first().cloned(),
            })
        })
        .collect();
    subnets.sort();
    let mut security_groups = lb.security_groups().to_vec();
    security_groups.sort();
    let spec = LoadBalancer {
        name: lb.load_balancer_name().unwrap_or_default().to_string(),
        lb_type: match lb.r#type() {
            Some(sdk::LoadBalancerTypeEnum::Network) => LbType::Network,
            _ => LbType::Application,
        },
        scheme: match lb.scheme() {
            Some(sdk::LoadBalancerSchemeEnum::InternetFacing) => Scheme::InternetFacing,
            _ => Scheme::Internal,
        },
        ip_address_type: match lb.ip_address_type().map(|t| t.as_str()) {
            Some("dualstack") => LbIpAddressType::Dualstack,
            Some("dualstack-without-public-ipv4") => LbIpAddressType::DualstackWithoutPublicIpv4,
            _ => LbIpAddressType::Ipv4,
        },
        subnets,
        security_groups,
        attributes: Attributes::new(),
        tags,
        customer_owned_ipv4_pool: lb.customer_owned_ipv4_pool().map(str::to_string),
        ipv4_ipam_pool: lb.ipam_pools().and_then(|p| p.ipv4_ipam_pool_id()).map(str::to_string),
        ipv6_source_nat: lb.enable_prefix_for_ipv6_source_nat().map(|e| e.as_str() == "on"),
    };
    FoundLoadBalancer {
        lb: Observed { id: lb.load_balancer_arn().unwrap_or_default().to_string(), spec },
        status: LoadBalancerStatus {
            dns_name: lb.dns_name().unwrap_or_default().to_string(),
            vpc_id: lb.vpc_id().unwrap_or_default().to_string(),
            state: lb.state().and_then(|s| s.code()).map(|c| c.as_str().to_string()).unwrap_or_default(),
            enforce_inbound_rules_on_private_link: lb
                .enforce_security_group_inbound_rules_on_private_link_traffic()
                .map(|v| v.eq_ignore_ascii_case("on")),
        },
    }
}

/// Unknown protocols (GENEVE) read as TCP: the controller never creates them.
fn protocol_from(p: Option<&sdk::ProtocolEnum>) -> Protocol {
    p.and_then(|p| Protocol::from_aws(p.as_str())).unwrap_or(Protocol::Tcp)
}

pub fn target_group_from(tg: &sdk::TargetGroup, tags: Tags) -> Observed<TargetGroup> {
    let health_check = HealthCheck {
        protocol: protocol_from(tg.health_check_protocol()),
        port: match tg.health_check_port() {
            Some(p) => p.parse().map(HealthCheckPort::Port).unwrap_or(HealthCheckPort::TrafficPort),
            None => HealthCheckPort::TrafficPort,
        },
        path: tg.health_check_path().map(str::to_string),
        success_codes: tg.matcher().and_then(|m| m.http_code()).map(str::to_string),
        interval_seconds: uint(tg.health_check_interval_seconds()),
        timeout_seconds: uint(tg.health_check_timeout_seconds()),
        healthy_threshold: uint(tg.healthy_threshold_count()),
        unhealthy_threshold: uint(tg.unhealthy_threshold_count()),
    };
    let spec = TargetGroup {
        name: tg.target_group_name().unwrap_or_default().to_string(),
        protocol: protocol_from(tg.protocol()),
        protocol_version: tg.protocol_version().map(str::to_string),
        port: tg.port().and_then(|p| u16::try_from(p).ok()).unwrap_or(0),
        target_type: tg.target_type().map(|t| t.as_str().to_string()).unwrap_or_default(),
        ip_address_type: match tg.ip_address_type() {
            Some(sdk::TargetGroupIpAddressTypeEnum::Ipv6) => TgIpAddressType::Ipv6,
            _ => TgIpAddressType::Ipv4,
        },
        vpc_id: tg.vpc_id().unwrap_or_default().to_string(),
        health_check,
        attributes: Attributes::new(),
        tags,
        target_control_port: tg.target_control_port().and_then(|p| u16::try_from(p).ok()),
    };
    Observed { id: tg.target_group_arn().unwrap_or_default().to_string(), spec }
}

/// The listener as DescribeListeners reports it: only the default certificate (the others come
/// from DescribeListenerCertificates, see [`with_extra_certificates`]).
pub fn listener_from(l: &sdk::Listener) -> Observed<Listener> {
    let certificates: Vec<String> =
        l.certificates().iter().filter_map(|c| c.certificate_arn()).take(1).map(str::to_string).collect();
    let spec = Listener {
        port: l.port().and_then(|p| u16::try_from(p).ok()).unwrap_or(0),
        protocol: protocol_from(l.protocol()),
        certificates,
        ssl_policy: l.ssl_policy().map(str::to_string),
        alpn_policy: l.alpn_policy().first().cloned(),
        mutual_authentication: l.mutual_authentication().and_then(mutual_authentication_from),
        default_actions: l.default_actions().iter().filter_map(action_from).collect(),
        attributes: Attributes::new(),
        tags: Tags::new(),
        rules: Vec::new(),
    };
    Observed { id: l.listener_arn().unwrap_or_default().to_string(), spec }
}

/// A listener's mutual TLS as AWS reports it; `None` for a mode this controller does not know
/// (read as off, so a wanted setting is applied over it).
pub fn mutual_authentication_from(m: &sdk::MutualAuthenticationAttributes) -> Option<MutualAuthentication> {
    Some(MutualAuthentication {
        mode: MtlsMode::from_aws(m.mode()?)?,
        trust_store_arn: m.trust_store_arn().map(str::to_string),
        ignore_client_certificate_expiry: m.ignore_client_certificate_expiry(),
        advertise_trust_store_ca_names: m
            .advertise_trust_store_ca_names()
            .map(|a| *a == sdk::AdvertiseTrustStoreCaNamesEnum::On),
    })
}

/// The request's `MutualAuthentication`: the fields `verify` alone takes only in that mode.
pub fn mutual_authentication(m: &MutualAuthentication) -> sdk::MutualAuthenticationAttributes {
    let verify = m.mode == MtlsMode::Verify;
    let advertise = m
        .advertise_trust_store_ca_names
        .filter(|_| verify)
        .map(|on| if on { sdk::AdvertiseTrustStoreCaNamesEnum::On } else { sdk::AdvertiseTrustStoreCaNamesEnum::Off });
    sdk::MutualAuthenticationAttributes::builder()
        .mode(m.mode.as_aws())
        .set_trust_store_arn(m.trust_store_arn.clone().filter(|_| verify))
        .set_ignore_client_certificate_expiry(m.ignore_client_certificate_expiry.filter(|_| verify))
        .set_advertise_trust_store_ca_names(advertise)
        .build()
}

/// `default` first, then the non-default certificates DescribeListenerCertificates reported,
/// sorted and without the default one (listed there too, with IsDefault=true, and possibly again
/// as an SNI entry after the default moved onto a certificate that was already attached).
pub fn with_extra_certificates(default: &[String], reported: &[sdk::Certificate]) -> Vec<String> {
    let mut extra: Vec<String> = reported
        .iter()
        .filter(|c| c.is_default() != Some(true))
        .filter_map(|c| c.certificate_arn())
        .filter(|c| default.first().map(String::as_str) != Some(*c))
        .map(str::to_string)
        .collect();
    extra.sort();
    extra.dedup();
    default.iter().take(1).cloned().chain(extra).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fwd(tgs: &[(&str, Option<u32>)], stickiness: Option<u32>) -> Action {
        Action::Forward {
            target_groups: tgs
                .iter()
                .map(|(a, w)| WeightedTargetGroup { target_group: TargetGroupRef::Arn(a.to_string()), weight: *w })
                .collect(),
            stickiness_seconds: stickiness,
        }
    }

    #[test]
    fn actions_round_trip() {
        let cases = [
            fwd(&[("arn:a", None)], None),
            fwd(&[("arn:a", Some(80)), ("arn:b", Some(20))], Some(3600)),
            Action::Redirect {
                protocol: Some("HTTPS".into()),
                host: None,
                port: Some("443".into()),
                path: None,
                query: None,
                status_code: "HTTP_301".into(),
            },
            Action::FixedResponse {
                status_code: "404".into(),
                content_type: Some("text/plain".into()),
                message_body: Some("nope".into()),
            },
        ];
        for a in &cases {
            let s = action(a, None).unwrap();
            assert_eq!(action_from(&s).as_ref(), Some(a), "{s:?}");
        }
        // AWS's answer for a plain forward: TargetGroupArn plus a one-group ForwardConfig, weight 1.
        let reported = sdk::Action::builder()
            .r#type(sdk::ActionTypeEnum::Forward)
            .target_group_arn("arn:a")
            .forward_config(
                sdk::ForwardActionConfig::builder()
                    .target_groups(sdk::TargetGroupTuple::builder().target_group_arn("arn:a").weight(1).build())
                    .build(),
            )
            .build();
        assert_eq!(action_from(&reported).as_ref(), Some(&cases[0]));
        // One unweighted group: ALBC's form (weight 1, stickiness off, no TargetGroupArn).
        let s = action(&cases[0], None).unwrap();
        let fc = s.forward_config().expect("forward config");
        assert_eq!(s.target_group_arn(), None);
        assert_eq!(
            fc.target_groups().iter().map(|t| (t.target_group_arn(), t.weight())).collect::<Vec<_>>(),
            [(Some("arn:a"), Some(1))]
        );
        assert_eq!(fc.target_group_stickiness_config().and_then(|c| c.enabled()), Some(false));
        assert_eq!(actions(&cases[..1]).unwrap()[0].order(), Some(1), "numbered even when alone");
        let numbered = actions(&cases[2..]).unwrap();
        assert_eq!(numbered.iter().map(|a| a.order()).collect::<Vec<_>>(), [Some(1), Some(2)]);
        let by_name = Action::Forward {
            target_groups: vec![WeightedTargetGroup { target_group: TargetGroupRef::Name("x".into()), weight: None }],
            stickiness_seconds: None,
        };
        assert!(action(&by_name, None).unwrap_err().contains("\"x\""));
    }

    #[test]
    fn certificates_default_first_then_sorted_extras() {
        let c = |arn: &str, d: bool| sdk::Certificate::builder().certificate_arn(arn).is_default(d).build();
        let reported = [c("arn:z", false), c("arn:a", true), c("arn:m", false), c("arn:a", false), c("arn:m", false)];
        assert_eq!(with_extra_certificates(&["arn:a".into()], &reported), ["arn:a", "arn:m", "arn:z"]);
        assert_eq!(with_extra_certificates(&[], &[]), Vec::<String>::new());
    }

    #[test]
    fn health_check_extras_only_for_http() {
        let mut hc = HealthCheck {
            protocol: Protocol::Tcp,
            port: HealthCheckPort::Port(8080),
            path: Some("/healthz".into()),
            success_codes: Some("200".into()),
            interval_seconds: 10,
            timeout_seconds: 5,
            healthy_threshold: 3,
            unhealthy_threshold: 3,
        };
        assert_eq!((matcher(&hc), health_check_path(&hc)), (None, None));
        assert_eq!(health_check_port(hc.port), "8080");
        hc.protocol = Protocol::Http;
        assert_eq!(matcher(&hc).and_then(|m| m.http_code().map(str::to_string)).as_deref(), Some("200"));
        assert_eq!(health_check_path(&hc).as_deref(), Some("/healthz"));
        assert_eq!(health_check_port(HealthCheckPort::TrafficPort), "traffic-port");
    }

    #[test]
    fn load_balancer_addresses_become_subnet_mappings() {
        let lb = sdk::LoadBalancer::builder()
            .load_balancer_arn("arn:lb")
            .load_balancer_name("web")
            .r#type(sdk::LoadBalancerTypeEnum::Network)
            .scheme(sdk::LoadBalancerSchemeEnum::Internal)
            .ip_address_type(sdk::IpAddressType::Dualstack)
            .state(sdk::LoadBalancerState::builder().code(sdk::LoadBalancerStateEnum::Active).build())
            .availability_zones(sdk::AvailabilityZone::builder().subnet_id("subnet-b").build())
            .availability_zones(
                sdk::AvailabilityZone::builder()
                    .subnet_id("subnet-a")
                    .load_balancer_addresses(
                        sdk::LoadBalancerAddress::builder().private_ipv4_address("10.0.1.10").build(),
                    )
                    .build(),
            )
            .security_groups("sg-2")
            .security_groups("sg-1")
            .build();
        let f = load_balancer_from(&lb, Tags::new());
        assert_eq!(f.lb.id, "arn:lb");
        assert_eq!(f.status.state, "active");
        assert_eq!(f.lb.spec.ip_address_type, LbIpAddressType::Dualstack);
        assert_eq!(f.lb.spec.security_groups, ["sg-1", "sg-2"]);
        assert_eq!(f.lb.spec.subnets[0].subnet_id, "subnet-a");
        assert_eq!(f.lb.spec.subnets[0].private_ipv4, Some("10.0.1.10".parse().unwrap()));
        assert_eq!(f.lb.spec.subnets[1].private_ipv4, None);
    }
}
