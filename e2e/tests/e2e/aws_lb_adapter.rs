//! The load balancer and networking adapters (`lbc_aws::lb`, `lbc_aws::net`) against the
//! emulator: an NLB stack created, found by tags, modified and deleted in order; ENIs found by
//! private IP; error classification; DescribeTags in chunks of 20.

use lbc_aws::call::CallRunner;
use lbc_aws::config::{ClientSettings, Clients, Endpoints, build_clients};
use lbc_aws::error::ErrorKind;
use lbc_aws::lb::{LoadBalancers, SdkLoadBalancers, stack_tags};
use lbc_aws::metrics::AwsMetrics;
use lbc_aws::net::{Networking, SdkNetworking, SecurityGroupQuery, SubnetQuery};
use lbc_aws::throttle::Throttler;
use lbc_e2e::emulator::Emulator;
use lbc_e2e::{Env, unique};
use lbc_model::lb::*;
use serde_json::json;
use std::net::{IpAddr, Ipv4Addr};

/// The chunking test injects a DescribeTags fault no filter can confine to it: one test at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn adapters(env: &Env) -> (SdkLoadBalancers, SdkNetworking, Clients) {
    let runner = CallRunner::new(Throttler::new(lbc_model::throttle::default_rules()), AwsMetrics::default(), 0);
    let settings = ClientSettings {
        region: env.get("AWS_REGION").into(),
        endpoints: Endpoints::all(env.aws_endpoint()),
        credentials: Some(aws_credential_types::provider::SharedCredentialsProvider::new(
            aws_credential_types::Credentials::new("testing", "testing", None, None, "e2e"),
        )),
    };
    let clients = build_clients(&settings).await;
    let more = build_clients(&settings).await;
    (SdkLoadBalancers::new(more.elbv2, runner.clone()), SdkNetworking::new(more.ec2, runner), clients)
}

/// The `n`th address of an IPv4 CIDR.
fn nth(cidr: &str, n: u32) -> Ipv4Addr {
    let base: Ipv4Addr = cidr.split('/').next().unwrap().parse().unwrap();
    Ipv4Addr::from(u32::from(base) + n)
}

fn rule(port: i32, source: RuleSource, description: Option<&str>) -> IngressRule {
    IngressRule {
        protocol: "tcp".into(),
        from_port: port,
        to_port: port,
        source,
        description: description.map(Into::into),
    }
}

fn health_check() -> HealthCheck {
    HealthCheck {
        protocol: Protocol::Http,
        port: HealthCheckPort::TrafficPort,
        path: Some("/healthz".into()),
        success_codes: Some("200-399".into()),
        interval_seconds: 10,
        timeout_seconds: 6,
        healthy_threshold: 3,
        unhealthy_threshold: 3,
    }
}

fn target_group(name: &str, vpc: &str, tags: Tags) -> TargetGroup {
    TargetGroup {
        name: name.into(),
        protocol: Protocol::Tcp,
        protocol_version: None,
        port: 8080,
        target_type: "ip".into(),
        ip_address_type: TgIpAddressType::Ipv4,
        vpc_id: vpc.into(),
        health_check: health_check(),
        attributes: Attributes::new(),
        tags,
        target_control_port: None,
    }
}

fn forward(tg: TargetGroupRef) -> Vec<Action> {
    vec![Action::Forward {
        target_groups: vec![WeightedTargetGroup { target_group: tg, weight: None }],
        stickiness_seconds: None,
    }]
}

fn attrs(k: &str, v: &str) -> Attributes {
    Attributes::from([(k.to_string(), v.to_string())])
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn nlb_stack_create_find_modify_delete() {
    let Some(env) = Env::require("nlb_stack_create_find_modify_delete") else { return };
    let _serial = SERIAL.lock().await;
    let (lbs, net, clients) = adapters(&env).await;
    let emu = Emulator::new(env.aws_endpoint());
    let vpc = env.get("LBC_VPC_ID");
    let tags = stack_tags(env.get("LBC_CLUSTER_NAME"), "service.k8s.aws/stack", &unique("ns/web"));

    // Subnets: all of the VPC, by ID, by Name tag.
    let private: Vec<String> = env.get("LBC_PRIVATE_SUBNET_IDS").split(',').map(String::from).collect();
    let all = net.subnets(&SubnetQuery::Vpc(vpc.into())).await.unwrap();
    assert!(private.iter().all(|id| all.iter().any(|s| &s.id == id)), "{all:?}");
    let subnets = net.subnets(&SubnetQuery::Ids(private[..2].to_vec())).await.unwrap();
    assert_eq!(subnets.len(), 2);
    assert!(subnets.iter().all(|s| s.available_ips > 0 && s.vpc_id == vpc && !s.availability_zone.is_empty()));
    let name = subnets[0].tags.get("Name").expect("e2e subnets have a Name tag").clone();
    let by_name = net.subnets(&SubnetQuery::NameTags { vpc_id: vpc.into(), names: vec![name] }).await.unwrap();
    assert_eq!(by_name.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), [subnets[0].id.as_str()]);

    // Security group with ingress rules; authorize and revoke are idempotent.
    let sg = SecurityGroup {
        name: unique("lbc-e2e-sg"),
        description: "frontend".into(),
        vpc_id: vpc.into(),
        ingress: vec![],
        tags: tags.clone(),
    };
    let sg_id = net.create_security_group(&sg).await.unwrap();
    let e = net.create_security_group(&sg).await.unwrap_err();
    assert_eq!((e.kind, e.code.as_deref()), (ErrorKind::AlreadyExists, Some("InvalidGroup.Duplicate")));
    let node_sg = env.get("LBC_NODE_SECURITY_GROUP_ID").to_string();
    let rules = vec![
        rule(80, RuleSource::Cidr("10.0.0.0/16".into()), Some("web")),
        rule(80, RuleSource::SecurityGroup(node_sg.clone()), Some("nodes")),
    ];
    net.authorize_ingress(&sg_id, &rules).await.unwrap();
    let extra = rule(443, RuleSource::Cidr("10.1.0.0/16".into()), None);
    net.authorize_ingress(&sg_id, &[rules[0].clone(), extra.clone()]).await.expect("duplicates are fine");
    let q = SecurityGroupQuery::Tags { vpc_id: Some(vpc.into()), tags: tags.clone() };
    let found = net.security_groups(&q).await.unwrap();
    let mut want = vec![rules[0].clone(), rules[1].clone(), extra.clone()];
    want.sort();
    assert_eq!((found.len(), found[0].id.as_str()), (1, sg_id.as_str()));
    assert_eq!(found[0].spec.ingress, want);
    let q = SecurityGroupQuery::Names { vpc_id: vpc.into(), names: vec![sg.name.clone()] };
    assert_eq!(net.security_groups(&q).await.unwrap()[0].id, sg_id);
    let missing = rule(8443, RuleSource::Cidr("10.2.0.0/16".into()), None);
    net.revoke_ingress(&sg_id, &[extra, missing]).await.expect("revoking a missing rule is fine");
    let found = net.security_groups(&SecurityGroupQuery::Ids(vec![sg_id.clone()])).await.unwrap();
    assert_eq!(found[0].spec.ingress.len(), 2);

    // Target group, load balancer with a fixed private address, listener.
    let tg_spec = target_group(&unique("lbc-e2e-tg"), vpc, tags.clone());
    let tg = lbs.create_target_group(&tg_spec).await.unwrap();
    assert!(tg.id.contains(":targetgroup/"), "{}", tg.id);
    assert_eq!(tg.spec.health_check, tg_spec.health_check);
    let fixed_ip = nth(&subnets[0].cidr, 10);
    let mut mappings: Vec<SubnetMapping> = subnets.iter().map(|s| SubnetMapping::plain(&s.id)).collect();
    mappings[0].private_ipv4 = Some(fixed_ip);
    mappings.sort();
    let lb_spec = LoadBalancer {
        name: unique("lbc-e2e-nlb"),
        lb_type: LbType::Network,
        scheme: Scheme::Internal,
        ip_address_type: LbIpAddressType::Ipv4,
        subnets: mappings.clone(),
        security_groups: vec![sg_id.clone()],
        attributes: Attributes::new(),
        tags: tags.clone(),
        customer_owned_ipv4_pool: None,
        ipv4_ipam_pool: None,
        ipv6_source_nat: None,
    };
    let created = lbs.create_load_balancer(&lb_spec).await.unwrap();
    let lb_arn = created.lb.id.clone();
    assert!(lb_arn.contains(":loadbalancer/net/"), "{lb_arn}");
    assert_eq!((created.status.vpc_id.as_str(), created.lb.spec.subnets.as_slice()), (vpc, mappings.as_slice()));
    assert!(!created.status.dns_name.is_empty());

    let mut listener = Listener {
        port: 80,
        protocol: Protocol::Tcp,
        certificates: vec![],
        ssl_policy: None,
        alpn_policy: None,
        mutual_authentication: None,
        default_actions: forward(TargetGroupRef::Name(tg_spec.name.clone())),
        attributes: Attributes::new(),
        tags: tags.clone(),
        rules: vec![],
    };
    let before = emu.mark().await;
    let e = lbs.create_listener(&lb_arn, &listener).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(e.to_string().contains("resolve it to its ARN"), "{e}");
    listener.default_actions = forward(TargetGroupRef::Arn(tg.id.clone()));
    let l = lbs.create_listener(&lb_arn, &listener).await.unwrap();
    assert!(l.id.contains(":listener/net/"), "{}", l.id);
    let e = lbs.create_listener(&lb_arn, &listener).await.unwrap_err();
    assert_eq!((e.kind, e.code.as_deref()), (ErrorKind::AlreadyExists, Some("DuplicateListener")));
    let (calls, _) = emu.calls(before, None).await;
    let creates: Vec<&str> =
        calls.iter().filter(|c| c.operation == "CreateListener").map(|c| c.outcome.as_str()).collect();
    assert_eq!(creates, ["ok", "error"], "a name reference never reaches AWS");

    // Find the stack by its tags; another stack's tags find nothing of ours.
    let found = lbs.find_load_balancers(&tags).await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].lb.id, lb_arn);
    // AWS reports IPv6 source NAT off on every NLB that did not ask for it.
    let reported = LoadBalancer { ipv6_source_nat: Some(false), ..lb_spec.clone() };
    assert_eq!(found[0].lb.spec, reported, "subnets with the fixed address, security groups and tags read back");
    let other = stack_tags(env.get("LBC_CLUSTER_NAME"), "service.k8s.aws/stack", "ns/other");
    assert!(lbs.find_load_balancers(&other).await.unwrap().iter().all(|f| f.lb.id != lb_arn));
    let tgs = lbs.find_target_groups(&tags).await.unwrap();
    assert_eq!(tgs.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), [tg.id.as_str()]);
    assert_eq!(tgs[0].spec, tg_spec);
    let ls = lbs.listeners(&lb_arn).await.unwrap();
    assert_eq!((ls.len(), ls[0].id.as_str()), (1, l.id.as_str()));
    assert_eq!(ls[0].spec.default_actions, listener.default_actions);
    assert_eq!(lbs.load_balancer_by_name(&lb_spec.name).await.unwrap().unwrap().lb.id, lb_arn);
    assert_eq!(lbs.target_group_by_name(&tg_spec.name).await.unwrap().unwrap().id, tg.id);
    assert_eq!(lbs.load_balancer_by_name("lbc-e2e-no-such-lb").await.unwrap(), None);

    // Modify attributes, health check, listener, addressing, tags.
    lbs.modify_load_balancer_attributes(&lb_arn, &attrs("load_balancing.cross_zone.enabled", "true")).await.unwrap();
    let a = lbs.load_balancer_attributes(&lb_arn).await.unwrap();
    assert_eq!(a.get("load_balancing.cross_zone.enabled").map(String::as_str), Some("true"));
    let hc = HealthCheck {
        protocol: Protocol::Tcp,
        port: HealthCheckPort::Port(8081),
        path: None,
        success_codes: None,
        interval_seconds: 30,
        ..health_check()
    };
    lbs.modify_target_group_health_check(&tg.id, &hc).await.unwrap();
    let got = lbs.target_group_by_name(&tg_spec.name).await.unwrap().unwrap().spec.health_check;
    assert_eq!((got.protocol, got.port, got.interval_seconds), (Protocol::Tcp, HealthCheckPort::Port(8081), 30));
    lbs.modify_target_group_attributes(&tg.id, &attrs("deregistration_delay.timeout_seconds", "10")).await.unwrap();
    let a = lbs.target_group_attributes(&tg.id).await.unwrap();
    assert_eq!(a.get("deregistration_delay.timeout_seconds").map(String::as_str), Some("10"));
    listener.port = 81;
    lbs.modify_listener(&l.id, &listener).await.unwrap();
    assert_eq!(lbs.listeners(&lb_arn).await.unwrap()[0].spec.port, 81);
    lbs.modify_listener_attributes(&l.id, &attrs("tcp.idle_timeout.seconds", "600")).await.unwrap();
    let a = lbs.listener_attributes(&l.id).await.unwrap();
    assert_eq!(a.get("tcp.idle_timeout.seconds").map(String::as_str), Some("600"));
    lbs.set_ip_address_type(&lb_arn, LbIpAddressType::Dualstack).await.unwrap();
    let all_private: Vec<SubnetMapping> = private.iter().map(|s| SubnetMapping::plain(s.as_str())).collect();
    lbs.set_subnets(&lb_arn, &all_private, None).await.unwrap();
    lbs.set_security_groups(&lb_arn, std::slice::from_ref(&sg_id)).await.unwrap();
    let now = lbs.load_balancer(&lb_arn).await.unwrap().unwrap();
    assert_eq!(now.lb.spec.ip_address_type, LbIpAddressType::Dualstack);
    assert_eq!(now.lb.spec.subnets.len(), 3);
    lbs.add_tags(&lb_arn, &attrs("team", "a")).await.unwrap();
    assert_eq!(
        lbs.describe_tags(std::slice::from_ref(&lb_arn)).await.unwrap()[&lb_arn].get("team").map(String::as_str),
        Some("a")
    );
    lbs.remove_tags(&lb_arn, &["team".into()]).await.unwrap();
    assert_eq!(lbs.describe_tags(std::slice::from_ref(&lb_arn)).await.unwrap()[&lb_arn], tags);

    // ENI lookup by private IP and by ID.
    let eni_ip = nth(&subnets[0].cidr, 20);
    let out = clients
        .ec2
        .create_network_interface()
        .subnet_id(&subnets[0].id)
        .private_ip_address(eni_ip.to_string())
        .groups(&sg_id)
        .send()
        .await
        .expect("CreateNetworkInterface");
    let eni_id = out.network_interface().and_then(|n| n.network_interface_id()).unwrap().to_string();
    let unused = IpAddr::V4(nth(&subnets[0].cidr, 200));
    let enis = net.network_interfaces_by_ip(vpc, &[IpAddr::V4(eni_ip), unused]).await.unwrap();
    assert_eq!(enis.len(), 1);
    assert_eq!((enis[0].id.as_str(), enis[0].subnet_id.as_str()), (eni_id.as_str(), subnets[0].id.as_str()));
    assert_eq!(enis[0].security_groups, std::slice::from_ref(&sg_id));
    assert!(enis[0].private_ips.contains(&IpAddr::V4(eni_ip)));
    assert_eq!(net.network_interfaces(std::slice::from_ref(&eni_id)).await.unwrap(), enis);

    // Delete in order; what is still referenced says so; deletes are idempotent.
    let e = lbs.delete_target_group(&tg.id).await.unwrap_err();
    assert_eq!((e.kind, e.code.as_deref()), (ErrorKind::InUse, Some("ResourceInUse")));
    let e = net.delete_security_group(&sg_id).await.unwrap_err();
    assert_eq!((e.kind, e.code.as_deref()), (ErrorKind::InUse, Some("DependencyViolation")));
    assert!(e.kind.retry_later());
    clients.ec2.delete_network_interface().network_interface_id(&eni_id).send().await.expect("DeleteNetworkInterface");
    lbs.delete_listener(&l.id).await.unwrap();
    lbs.delete_listener(&l.id).await.unwrap();
    lbs.delete_load_balancer(&lb_arn).await.unwrap();
    lbs.delete_load_balancer(&lb_arn).await.unwrap();
    lbs.delete_target_group(&tg.id).await.unwrap();
    lbs.delete_target_group(&tg.id).await.unwrap();
    net.delete_security_group(&sg_id).await.unwrap();
    net.delete_security_group(&sg_id).await.unwrap();
    assert!(lbs.find_load_balancers(&tags).await.unwrap().is_empty());
    assert!(lbs.find_target_groups(&tags).await.unwrap().is_empty());
    assert!(net.security_groups(&SecurityGroupQuery::Tags { vpc_id: None, tags }).await.unwrap().is_empty());
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn find_by_tags_describes_tags_in_chunks_of_20() {
    let Some(env) = Env::require("find_by_tags_describes_tags_in_chunks_of_20") else { return };
    let _serial = SERIAL.lock().await;
    let (lbs, _, _) = adapters(&env).await;
    let emu = Emulator::new(env.aws_endpoint());
    let vpc = env.get("LBC_VPC_ID");
    let tags = stack_tags(env.get("LBC_CLUSTER_NAME"), "ingress.k8s.aws/stack", &unique("group"));
    let prefix = unique("lbc-chunk");
    let mut arns = Vec::new();
    for i in 0..25 {
        let t = if i % 10 == 0 { tags.clone() } else { Tags::new() };
        arns.push(lbs.create_target_group(&target_group(&format!("{prefix}-{i}"), vpc, t)).await.unwrap().id);
    }
    let before = emu.mark().await;
    let mut found: Vec<String> = lbs.find_target_groups(&tags).await.unwrap().into_iter().map(|t| t.id).collect();
    found.sort();
    let mut want = vec![arns[0].clone(), arns[10].clone(), arns[20].clone()];
    want.sort();
    assert_eq!(found, want);
    let (calls, _) = emu.calls(before, None).await;
    let tag_calls: Vec<&str> =
        calls.iter().filter(|c| c.operation == "DescribeTags").map(|c| c.outcome.as_str()).collect();
    assert!(tag_calls.len() >= 2 && tag_calls.iter().all(|o| *o == "ok"), "{tag_calls:?}");

    // Asked again: the 22 groups seen without the stack's tags are not asked about again (tag cache);
    // the 3 that carry them are read fresh, in one call.
    let before = emu.mark().await;
    assert_eq!(lbs.find_target_groups(&tags).await.unwrap().len(), 3);
    let (calls, _) = emu.calls(before, None).await;
    assert_eq!(calls.iter().filter(|c| c.operation == "DescribeTags").count(), 1, "{calls:?}");

    // A resource deleted between the listing and DescribeTags: the chunk is retried one by one.
    let id = emu
        .fault(json!({"service": "elasticloadbalancing", "operation": "DescribeTags", "code": "TargetGroupNotFound",
                      "count": 1}))
        .await;
    let mut again: Vec<String> = lbs.find_target_groups(&tags).await.unwrap().into_iter().map(|t| t.id).collect();
    again.sort();
    assert_eq!(again, want);
    emu.clear_fault(&id).await;
    for arn in &arns {
        lbs.delete_target_group(arn).await.unwrap();
    }
}

/// Every condition kind (regex host, path and header included), both authenticate actions and both
/// transforms, through the SDK and the emulator and back: what `rules` reads equals what was sent,
/// minus the OIDC secret.
#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn alb_rules_round_trip_regex_conditions_and_authenticate_actions() {
    let Some(env) = Env::require("alb_rules_round_trip") else { return };
    let _serial = SERIAL.lock().await;
    let (lbs, _, _) = adapters(&env).await;
    let public: Vec<SubnetMapping> =
        env.get("LBC_PUBLIC_SUBNET_IDS").split(',').take(2).map(SubnetMapping::plain).collect();
    let tags = stack_tags(env.get("LBC_CLUSTER_NAME"), "ingress.k8s.aws/stack", &unique("ns/rules"));
    let lb = LoadBalancer {
        name: unique("lbc-e2e-alb"),
        lb_type: LbType::Application,
        scheme: Scheme::InternetFacing,
        ip_address_type: LbIpAddressType::Ipv4,
        subnets: public,
        security_groups: vec![],
        attributes: Attributes::new(),
        tags: tags.clone(),
        customer_owned_ipv4_pool: Some("ipv4pool-coip-0e2e0000000000001".into()),
        ipv4_ipam_pool: Some("ipam-pool-0e2e0000000000001".into()),
        ipv6_source_nat: None,
    };
    let created = lbs.create_load_balancer(&lb).await.unwrap();
    assert_eq!(
        (created.lb.spec.customer_owned_ipv4_pool.as_deref(), created.lb.spec.ipv4_ipam_pool.as_deref()),
        (Some("ipv4pool-coip-0e2e0000000000001"), Some("ipam-pool-0e2e0000000000001")),
        "CreateLoadBalancer's answer carries both pools"
    );
    let lb_arn = created.lb.id;
    // The IPAM pool is released by ModifyIpPools; the outpost pool is fixed at creation.
    lbs.modify_ip_pools(&lb_arn, None).await.unwrap();
    let read = lbs.load_balancer(&lb_arn).await.unwrap().expect("the ALB exists").lb.spec;
    assert_eq!(
        (read.customer_owned_ipv4_pool.as_deref(), read.ipv4_ipam_pool.as_deref()),
        (Some("ipv4pool-coip-0e2e0000000000001"), None)
    );
    lbs.modify_ip_pools(&lb_arn, Some("ipam-pool-0e2e0000000000002")).await.unwrap();
    let read = lbs.load_balancer(&lb_arn).await.unwrap().expect("the ALB exists").lb.spec;
    assert_eq!(read.ipv4_ipam_pool.as_deref(), Some("ipam-pool-0e2e0000000000002"));
    let e = lbs.modify_ip_pools(&lb_arn, Some("pool-1")).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid, "a malformed pool ID is refused: {e:?}");
    let fixed = |code: &str| Action::FixedResponse { status_code: code.into(), content_type: None, message_body: None };
    let listener = Listener {
        port: 80,
        protocol: Protocol::Http,
        certificates: vec![],
        ssl_policy: None,
        alpn_policy: None,
        mutual_authentication: None,
        default_actions: vec![fixed("404")],
        attributes: Attributes::new(),
        tags: tags.clone(),
        rules: vec![],
    };
    let l = lbs.create_listener(&lb_arn, &listener).await.unwrap().id;
    let oidc = AuthenticateOidc {
        issuer: "https://idp.example.com".into(),
        authorization_endpoint: "https://idp.example.com/auth".into(),
        token_endpoint: "https://idp.example.com/token".into(),
        user_info_endpoint: "https://idp.example.com/userinfo".into(),
        client_id: "app".into(),
        client_secret: Some("s3cret".into()),
        client_secret_digest: None,
        scope: Some("openid".into()),
        session_cookie_name: Some("AWSELBAuthSessionCookie".into()),
        session_timeout_seconds: Some(604_800),
        on_unauthenticated_request: Some("authenticate".into()),
        extra_params: [("prompt".to_string(), "login".to_string())].into(),
    };
    let cognito = AuthenticateCognito {
        user_pool_arn: "arn:aws:cognito-idp:us-east-1:123456789012:userpool/us-east-1_e2e".into(),
        user_pool_client_id: "members".into(),
        user_pool_domain: "auth.example.com".into(),
        scope: Some("openid".into()),
        session_cookie_name: Some("AWSELBAuthSessionCookie".into()),
        session_timeout_seconds: Some(3600),
        on_unauthenticated_request: Some("deny".into()),
        extra_params: Default::default(),
    };
    let rules = [
        Rule {
            priority: 1,
            conditions: vec![
                Condition::HostHeaderRegex(vec!["^[a-z]+\\.example\\.com$".into()]),
                Condition::PathPatternRegex(vec!["^/v[0-9]+/.*$".into(), "^/api$".into()]),
                Condition::HttpHeader { name: "X-Canary".into(), values: vec!["yes".into()] },
            ],
            actions: vec![Action::AuthenticateOidc(oidc.clone()), fixed("200")],
            transforms: vec![
                Transform {
                    kind: TransformKind::HostHeaderRewrite,
                    rewrites: vec![Rewrite { regex: "^shop\\.example\\.com$".into(), replace: "shop.internal".into() }],
                },
                Transform {
                    kind: TransformKind::UrlRewrite,
                    rewrites: vec![Rewrite { regex: "^/v[0-9]+/(.*)$".into(), replace: "/$1".into() }],
                },
            ],
            tags: tags.clone(),
        },
        Rule {
            priority: 2,
            conditions: vec![
                Condition::HostHeader(vec!["shop.example.com".into()]),
                Condition::PathPattern(vec!["/members/*".into()]),
                Condition::HttpRequestMethod(vec!["GET".into()]),
                Condition::QueryString(vec![QueryStringPair { key: Some("v".into()), value: "1".into() }]),
                Condition::SourceIp(vec!["10.0.0.0/8".into()]),
            ],
            actions: vec![Action::AuthenticateCognito(cognito), fixed("200")],
            transforms: vec![],
            tags: tags.clone(),
        },
    ];
    let reported = |r: &Rule| Rule { actions: r.actions.iter().map(Action::without_secrets).collect(), ..r.clone() };
    for r in &rules {
        let created = lbs.create_rule(&l, r).await.unwrap();
        assert_eq!(created.spec, reported(r), "CreateRule's answer");
    }
    let read = lbs.rules(&l).await.unwrap();
    assert_eq!(read.iter().map(|o| o.spec.clone()).collect::<Vec<_>>(), rules.iter().map(reported).collect::<Vec<_>>());
    // Modified without the secret: AWS keeps its own (UseExistingClientSecret).
    let mut changed = reported(&rules[0]);
    changed.conditions[1] = Condition::PathPatternRegex(vec!["^/v2/.*$".into()]);
    changed.conditions[2] = Condition::HttpHeaderRegex { name: "User-Agent".into(), values: vec!["^curl/.*$".into()] };
    // One transform left: the other is reset (ResetTransforms is sent only when none is left).
    changed.transforms.truncate(1);
    lbs.modify_rule(&read[0].id, &changed).await.unwrap();
    assert_eq!(lbs.rules(&l).await.unwrap()[0].spec, changed);
    // None left: ResetTransforms.
    changed.transforms.clear();
    lbs.modify_rule(&read[0].id, &changed).await.unwrap();
    assert_eq!(lbs.rules(&l).await.unwrap()[0].spec, changed);
    // An invalid regex is refused by AWS (the builder refuses it earlier).
    let bad = Rule { conditions: vec![Condition::PathPatternRegex(vec!["^/(?=x)$".into()])], ..changed.clone() };
    assert_eq!(lbs.modify_rule(&read[0].id, &bad).await.unwrap_err().kind, ErrorKind::Invalid);
    lbs.delete_listener(&l).await.unwrap();
    lbs.delete_load_balancer(&lb_arn).await.unwrap();
}
