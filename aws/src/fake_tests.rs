//! Tests of the load balancer and networking fakes: they must behave like AWS where the
//! controller's logic depends on it.

use crate::elbv2::ElbV2;
use crate::error::ErrorKind;
use crate::fake::FakeElbV2;
use crate::fake_lb::FakeLoadBalancers;
use crate::fake_net::FakeNetworking;
use crate::lb::{LoadBalancers, stack_tags};
use crate::net::{Networking, SecurityGroupQuery, SubnetQuery};
use lbc_model::lb::*;
use std::sync::Arc;

fn nlb(name: &str, tags: Tags) -> LoadBalancer {
    LoadBalancer {
        name: name.into(),
        lb_type: LbType::Network,
        scheme: Scheme::Internal,
        ip_address_type: LbIpAddressType::Ipv4,
        subnets: ["subnet-a", "subnet-b"].map(SubnetMapping::plain).to_vec(),
        security_groups: vec!["sg-1".into()],
        attributes: Attributes::new(),
        tags,
        customer_owned_ipv4_pool: None,
        ipv4_ipam_pool: None,
        ipv6_source_nat: None,
    }
}

fn tg(name: &str, tags: Tags) -> TargetGroup {
    TargetGroup {
        name: name.into(),
        protocol: Protocol::Tcp,
        protocol_version: None,
        port: 8080,
        target_type: "ip".into(),
        ip_address_type: TgIpAddressType::Ipv4,
        vpc_id: "vpc-1".into(),
        health_check: HealthCheck {
            protocol: Protocol::Tcp,
            port: HealthCheckPort::TrafficPort,
            path: None,
            success_codes: None,
            interval_seconds: 10,
            timeout_seconds: 10,
            healthy_threshold: 3,
            unhealthy_threshold: 3,
        },
        attributes: Attributes::new(),
        tags,
        target_control_port: None,
    }
}

fn listener(port: u16, tg: TargetGroupRef) -> Listener {
    Listener {
        port,
        protocol: Protocol::Tcp,
        certificates: vec![],
        ssl_policy: None,
        alpn_policy: None,
        mutual_authentication: None,
        default_actions: vec![Action::Forward {
            target_groups: vec![WeightedTargetGroup { target_group: tg, weight: None }],
            stickiness_seconds: None,
        }],
        attributes: Attributes::new(),
        tags: Tags::new(),
        rules: vec![],
    }
}

#[tokio::test]
async fn fake_load_balancers_behave_like_elbv2() {
    let hot = Arc::new(FakeElbV2::default());
    let f = FakeLoadBalancers::with_elbv2(hot.clone());
    let mine = stack_tags("c1", "service.k8s.aws/stack", "ns/web");
    let other = stack_tags("c1", "service.k8s.aws/stack", "ns/other");

    let lb = f.create_load_balancer(&nlb("web", mine.clone())).await.unwrap();
    assert!(lb.lb.id.contains(":loadbalancer/net/web/"), "{}", lb.lb.id);
    f.create_load_balancer(&nlb("other", other.clone())).await.unwrap();
    // Same name, same settings: AWS answers with the existing one; different settings: duplicate.
    assert_eq!(f.create_load_balancer(&nlb("web", mine.clone())).await.unwrap().lb.id, lb.lb.id);
    let mut alb = nlb("web", mine.clone());
    alb.lb_type = LbType::Application;
    let e = f.create_load_balancer(&alb).await.unwrap_err();
    assert_eq!((e.kind, e.code.as_deref()), (ErrorKind::AlreadyExists, Some("DuplicateLoadBalancerName")));

    let found = f.find_load_balancers(&mine).await.unwrap();
    assert_eq!(found.iter().map(|l| l.lb.id.as_str()).collect::<Vec<_>>(), [lb.lb.id.as_str()]);
    assert_eq!(f.load_balancer_by_name("web").await.unwrap().unwrap().lb.id, lb.lb.id);
    assert_eq!(f.load_balancer_by_name("nope").await.unwrap(), None);

    let t = f.create_target_group(&tg("web-tg", mine.clone())).await.unwrap();
    assert!(t.id.contains(":targetgroup/web-tg/"));
    assert!(hot.describe_target_group(&t.id).await.unwrap().is_some(), "mirrored for target sync");
    let e = f.create_target_group(&tg("web-tg", mine.clone())).await.unwrap_err();
    assert_eq!((e.kind, e.code.as_deref()), (ErrorKind::AlreadyExists, Some("DuplicateTargetGroupName")));
    assert_eq!(f.find_target_groups(&mine).await.unwrap().len(), 1);
    assert!(f.find_target_groups(&other).await.unwrap().is_empty());

    // Listeners: by ARN only, unique ports, known target groups.
    let e = f.create_listener(&lb.lb.id, &listener(80, TargetGroupRef::Name("web-tg".into()))).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    let l = f.create_listener(&lb.lb.id, &listener(80, TargetGroupRef::Arn(t.id.clone()))).await.unwrap();
    assert!(l.id.contains(":listener/net/web/"), "{}", l.id);
    let e = f.create_listener(&lb.lb.id, &listener(80, TargetGroupRef::Arn(t.id.clone()))).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::AlreadyExists);
    let e = f.create_listener(&lb.lb.id, &listener(81, TargetGroupRef::Arn("arn:nope".into()))).await.unwrap_err();
    assert_eq!(e.code.as_deref(), Some("TargetGroupNotFound"));

    // Attributes and tags.
    let attrs = Attributes::from([("load_balancing.cross_zone.enabled".to_string(), "true".to_string())]);
    f.modify_load_balancer_attributes(&lb.lb.id, &attrs).await.unwrap();
    assert_eq!(f.load_balancer_attributes(&lb.lb.id).await.unwrap(), attrs);
    f.modify_listener_attributes(&l.id, &Attributes::from([("tcp.idle_timeout.seconds".into(), "600".into())]))
        .await
        .unwrap();
    assert_eq!(f.listener_attributes(&l.id).await.unwrap().len(), 1);
    f.add_tags(&t.id, &Tags::from([("team".into(), "a".into())])).await.unwrap();
    f.remove_tags(&t.id, &["team".into()]).await.unwrap();
    assert_eq!(f.describe_tags(&[t.id.clone(), "arn:gone".into()]).await.unwrap().get(&t.id), Some(&mine));

    // A target group in use cannot go; deleting the load balancer deletes its listeners.
    let e = f.delete_target_group(&t.id).await.unwrap_err();
    assert_eq!((e.kind, e.code.as_deref()), (ErrorKind::InUse, Some("ResourceInUse")));
    assert!(e.kind.retry_later());
    f.delete_load_balancer(&lb.lb.id).await.unwrap();
    assert_eq!(f.listener_count(), 0);
    f.delete_target_group(&t.id).await.unwrap();
    assert!(hot.describe_target_group(&t.id).await.unwrap().is_none());
    f.delete_load_balancer(&lb.lb.id).await.unwrap(); // idempotent
    let e = f.modify_target_group_attributes(&t.id, &Attributes::new()).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound);

    f.inject_fault("DescribeLoadBalancers", ErrorKind::Throttled);
    assert_eq!(f.find_load_balancers(&mine).await.unwrap_err().kind, ErrorKind::Throttled);
    assert!(f.calls().iter().any(|(op, _)| *op == "DeleteTargetGroup"));
}

/// ELBv2's checks of IPv6 source NAT, and AWS's pick for `auto_assigned`.
#[tokio::test]
async fn fake_ipv6_source_nat_behaves_like_elbv2() {
    let f = FakeLoadBalancers::default();
    let tags = stack_tags("c1", "service.k8s.aws/stack", "ns/nat");
    let mut lb = nlb("nat", tags.clone());
    lb.ip_address_type = LbIpAddressType::Dualstack;
    lb.ipv6_source_nat = Some(true);
    lb.subnets[0].source_nat_ipv6_prefix = Some(SOURCE_NAT_AUTO_ASSIGNED.into());
    lb.subnets[1].source_nat_ipv6_prefix = Some("2600:1f18:0:2:1::/80".into());
    let got = f.create_load_balancer(&lb).await.unwrap().lb;
    let prefixes: Vec<_> = got.spec.subnets.iter().map(|m| m.source_nat_ipv6_prefix.clone().unwrap()).collect();
    assert!(prefixes[0] != SOURCE_NAT_AUTO_ASSIGNED && prefixes[0].ends_with("/80"), "{prefixes:?}");
    assert_eq!(prefixes[1], "2600:1f18:0:2:1::/80");
    // SetSubnets keeps the flag unless given; a prefix with it off is refused.
    let plain: Vec<SubnetMapping> =
        lb.subnets.iter().map(|m| SubnetMapping { source_nat_ipv6_prefix: None, ..m.clone() }).collect();
    f.set_subnets(&got.id, &plain, None).await.unwrap();
    assert_eq!(f.load_balancer(&got.id).await.unwrap().unwrap().lb.spec.ipv6_source_nat, Some(true));
    f.set_subnets(&got.id, &plain, Some(false)).await.unwrap();
    let e = f.set_subnets(&got.id, &lb.subnets, None).await.unwrap_err();
    assert_eq!((e.kind, e.code.as_deref()), (ErrorKind::Invalid, Some("ValidationError")));
    // An NLB that does not ask reports off; IPv4 or an ALB cannot have it.
    let off = f.create_load_balancer(&nlb("off", tags.clone())).await.unwrap().lb;
    assert_eq!(off.spec.ipv6_source_nat, Some(false));
    let mut v4 = nlb("v4", tags.clone());
    v4.ipv6_source_nat = Some(true);
    assert_eq!(f.create_load_balancer(&v4).await.unwrap_err().kind, ErrorKind::Invalid);
    let mut alb = nlb("alb", tags);
    (alb.lb_type, alb.ip_address_type, alb.ipv6_source_nat) =
        (LbType::Application, LbIpAddressType::Dualstack, Some(false));
    assert_eq!(f.create_load_balancer(&alb).await.unwrap_err().kind, ErrorKind::Invalid);
}

#[tokio::test]
async fn fake_networking_behaves_like_ec2() {
    let n = FakeNetworking::default();
    n.add_subnet(Subnet {
        id: "subnet-a".into(),
        vpc_id: "vpc-1".into(),
        availability_zone: "us-east-1a".into(),
        cidr: "10.0.0.0/24".into(),
        ipv6_cidrs: vec![],
        available_ips: 250,
        tags: Tags::from([("Name".into(), "private-a".into())]),
    });
    assert_eq!(n.subnets(&SubnetQuery::Vpc("vpc-1".into())).await.unwrap().len(), 1);
    let by_name = SubnetQuery::NameTags { vpc_id: "vpc-1".into(), names: vec!["private-a".into()] };
    assert_eq!(n.subnets(&by_name).await.unwrap()[0].id, "subnet-a");
    let e = n.subnets(&SubnetQuery::Ids(vec!["subnet-x".into()])).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound);

    let sg = SecurityGroup {
        name: "k8s-web".into(),
        description: "frontend".into(),
        vpc_id: "vpc-1".into(),
        ingress: vec![],
        tags: stack_tags("c1", "service.k8s.aws/stack", "ns/web"),
    };
    let id = n.create_security_group(&sg).await.unwrap();
    let e = n.create_security_group(&sg).await.unwrap_err();
    assert_eq!((e.kind, e.code.as_deref()), (ErrorKind::AlreadyExists, Some("InvalidGroup.Duplicate")));
    let rule = IngressRule {
        protocol: "tcp".into(),
        from_port: 80,
        to_port: 80,
        source: RuleSource::Cidr("0.0.0.0/0".into()),
        description: Some("web".into()),
    };
    n.authorize_ingress(&id, std::slice::from_ref(&rule)).await.unwrap();
    n.authorize_ingress(&id, std::slice::from_ref(&rule)).await.unwrap(); // already there: fine
    let q = SecurityGroupQuery::Tags { vpc_id: Some("vpc-1".into()), tags: sg.tags.clone() };
    let found = n.security_groups(&q).await.unwrap();
    assert_eq!((found[0].id.as_str(), found[0].spec.ingress.as_slice()), (id.as_str(), std::slice::from_ref(&rule)));
    let by_name = SecurityGroupQuery::Names { vpc_id: "vpc-1".into(), names: vec!["k8s-web".into()] };
    assert_eq!(n.security_groups(&by_name).await.unwrap().len(), 1);
    n.revoke_ingress(&id, std::slice::from_ref(&rule)).await.unwrap();
    n.revoke_ingress(&id, std::slice::from_ref(&rule)).await.unwrap(); // already gone: fine
    assert!(n.group(&id).unwrap().ingress.is_empty());

    let eni = NetworkInterface {
        id: "eni-1".into(),
        subnet_id: "subnet-a".into(),
        private_ips: vec!["10.0.0.5".parse().unwrap()],
        security_groups: vec![id.clone()],
    };
    n.add_network_interface(eni.clone());
    let got = n.network_interfaces_by_ip("vpc-1", &["10.0.0.5".parse().unwrap()]).await.unwrap();
    assert_eq!(got, std::slice::from_ref(&eni));
    assert_eq!(n.network_interfaces(&["eni-1".into()]).await.unwrap(), [eni]);
    let e = n.delete_security_group(&id).await.unwrap_err();
    assert_eq!((e.kind, e.code.as_deref()), (ErrorKind::InUse, Some("DependencyViolation")));
    n.remove_network_interface("eni-1");
    // Named as the source of another group's rule: in use until that rule is revoked.
    let other = SecurityGroup { name: "k8s-nodes".into(), ..sg.clone() };
    let other = n.create_security_group(&other).await.unwrap();
    let from_id = IngressRule { source: RuleSource::SecurityGroup(id.clone()), ..rule.clone() };
    n.authorize_ingress(&other, std::slice::from_ref(&from_id)).await.unwrap();
    let e = n.delete_security_group(&id).await.unwrap_err();
    assert_eq!((e.kind, e.code.as_deref()), (ErrorKind::InUse, Some("DependencyViolation")));
    n.revoke_ingress(&other, &[from_id]).await.unwrap();
    n.delete_security_group(&id).await.unwrap();
    n.delete_security_group(&id).await.unwrap(); // idempotent
    let e = n.security_groups(&SecurityGroupQuery::Ids(vec![id])).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound);
}

#[tokio::test]
async fn fake_listener_certificates_and_rules_behave_like_elbv2() {
    let f = FakeLoadBalancers::default();
    let lb = f.create_load_balancer(&nlb("web", Tags::new())).await.unwrap().lb.id;
    let t = f.create_target_group(&tg("web-80", Tags::new())).await.unwrap().id;
    let mut tls = listener(443, TargetGroupRef::Arn(t.clone()));
    tls.protocol = Protocol::Tls;
    tls.certificates = vec!["arn:a".into(), "arn:b".into()];
    // CreateListener keeps the default certificate only; the others are attached separately.
    let l = f.create_listener(&lb, &tls).await.unwrap().id;
    let certs = async |f: &FakeLoadBalancers| f.listeners(&lb).await.unwrap()[0].spec.certificates.clone();
    assert_eq!(certs(&f).await, ["arn:a"]);
    f.add_listener_certificates(&l, &["arn:z".into(), "arn:b".into()]).await.unwrap();
    assert_eq!(certs(&f).await, ["arn:a", "arn:b", "arn:z"], "default first, then sorted");
    f.remove_listener_certificates(&l, &["arn:z".into(), "arn:never".into()]).await.unwrap();
    tls.certificates = vec!["arn:c".into()];
    f.modify_listener(&l, &tls).await.unwrap();
    assert_eq!(certs(&f).await, ["arn:c", "arn:b"], "ModifyListener replaces the default only");

    let rule = |priority: u32, path: &str| Rule {
        priority,
        conditions: vec![Condition::PathPattern(vec![path.into()])],
        actions: listener(1, TargetGroupRef::Arn(t.clone())).default_actions,
        transforms: vec![],
        tags: Tags::from([("k".to_string(), "v".to_string())]),
    };
    let a = f.create_rule(&l, &rule(1, "/a")).await.unwrap().id;
    let b = f.create_rule(&l, &rule(2, "/b")).await.unwrap().id;
    assert_eq!(f.create_rule(&l, &rule(2, "/c")).await.unwrap_err().kind, ErrorKind::AlreadyExists);
    // One by one: a swap in a single call collides, parking first does not.
    let e = f.set_rule_priorities(&[(a.clone(), 2), (b.clone(), 1)]).await.unwrap_err();
    assert_eq!(e.code.as_deref(), Some("PriorityInUse"));
    f.set_rule_priorities(&[(a.clone(), 100), (b.clone(), 1), (a.clone(), 2)]).await.unwrap();
    let got = f.rules(&l).await.unwrap();
    assert_eq!(
        got.iter().map(|r| (r.id.clone(), r.spec.priority)).collect::<Vec<_>>(),
        [(b.clone(), 1), (a.clone(), 2)]
    );
    assert_eq!(f.describe_tags(std::slice::from_ref(&a)).await.unwrap()[&a]["k"], "v");
    assert_eq!(f.delete_target_group(&t).await.unwrap_err().kind, ErrorKind::InUse);
    f.modify_rule(&a, &rule(2, "/a2")).await.unwrap();
    assert_eq!(f.rules(&l).await.unwrap()[1].spec.conditions, [Condition::PathPattern(vec!["/a2".into()])]);
    // Regex conditions are kept as regexes; one AWS would refuse is refused, the rule unchanged.
    let regex = Condition::PathPatternRegex(vec!["^/v[0-9]+$".into()]);
    f.modify_rule(&a, &Rule { conditions: vec![regex.clone()], ..rule(2, "") }).await.unwrap();
    assert_eq!(f.rules(&l).await.unwrap()[1].spec.conditions, std::slice::from_ref(&regex));
    let bad = Rule { conditions: vec![Condition::HostHeaderRegex(vec!["(?=a)b".into()])], ..rule(2, "") };
    let e = f.modify_rule(&a, &bad).await.unwrap_err();
    assert_eq!((e.kind, e.code.as_deref()), (ErrorKind::Invalid, Some("ValidationError")));
    assert_eq!(f.create_rule(&l, &Rule { priority: 9, ..bad }).await.unwrap_err().kind, ErrorKind::Invalid);
    assert_eq!(f.rules(&l).await.unwrap()[1].spec.conditions, [regex]);
    f.delete_rule(&a).await.unwrap();
    f.delete_rule(&a).await.unwrap(); // idempotent
    f.delete_listener(&l).await.unwrap();
    assert_eq!(f.describe_tags(std::slice::from_ref(&b)).await.unwrap().len(), 0, "rules go with their listener");
}
