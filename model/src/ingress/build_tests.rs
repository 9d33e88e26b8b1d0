use super::*;
use crate::ingress::backends::{ServiceView, Services};
use crate::ingress::merge::MergeConfig;
use crate::ingress::plan::plan_group;
use crate::ingress::test_fixtures::{P, member, path, rule, spec};
use crate::lb::Subnet;

const UID: &str = "3f1b7c2e-0000-4000-8000-000000000002";

fn subnet(id: &str, az: &str) -> Subnet {
    Subnet {
        id: id.into(),
        vpc_id: "vpc-1".into(),
        availability_zone: az.into(),
        cidr: "10.0.0.0/24".into(),
        ipv6_cidrs: vec![],
        available_ips: 100,
        tags: Tags::new(),
    }
}

fn ctx() -> BuildContext {
    let mut c = BuildContext::new("prod", "vpc-1");
    c.subnets = vec![subnet("subnet-b", "az-b"), subnet("subnet-a", "az-a")];
    c.backend_security_group = Some("sg-backend".into());
    c.default_tags = Tags::from([("owner".into(), "platform".into())]);
    c.default_target_type = TargetType::Ip;
    c
}

/// (name, port, targetPort).
type PortSpec<'a> = (&'a str, i32, IntOrString);

/// `namespace/name` → ports.
fn services(list: &[(&str, &[PortSpec<'_>])]) -> Services {
    let mut out = Services::new();
    for (key, ports) in list {
        let (ns, name) = key.split_once('/').unwrap();
        let view = ServiceView {
            ports: ports.iter().map(|(n, p, _)| ((!n.is_empty()).then(|| n.to_string()), *p)).collect(),
            target_ports: ports.iter().map(|(_, p, t)| (*p, t.clone())).collect(),
            uid: UID.into(),
            ..Default::default()
        };
        out.insert((ns.into(), name.into()), view);
    }
    out
}

fn echo() -> Services {
    services(&[("shop/echo-server", &[("http", 80, IntOrString::Int(8080))])])
}

fn build(group: &GroupId, members: &[Member], svcs: &Services, c: &BuildContext) -> Result<IngressStack, BuildError> {
    let plan = plan_group(members, svcs, &MergeConfig::default()).expect("valid group");
    build_group_stack(group, members, &plan, c)
}

fn implicit(ns: &str, name: &str) -> GroupId {
    GroupId::Implicit { namespace: ns.into(), name: name.into() }
}

#[test]
fn single_http_ingress() {
    let m = member("shop/web", &[], spec(vec![rule("", vec![path("/", "Prefix", "echo-server", P::N(80))])]));
    let st = build(&implicit("shop", "web"), &[m], &echo(), &ctx()).unwrap();
    let lb = &st.stack.load_balancer;
    assert_eq!(st.stack.id, "shop/web");
    assert_eq!(lb.lb_type, LbType::Application);
    assert_eq!(lb.name, naming::ingress_load_balancer_name("prod", false, "shop/web", "internal"));
    assert_eq!(lb.scheme, Scheme::Internal);
    assert_eq!(lb.security_groups, ["managed:frontend", "sg-backend"]);
    assert_eq!(lb.subnets.iter().map(|s| s.subnet_id.as_str()).collect::<Vec<_>>(), ["subnet-a", "subnet-b"]);
    assert_eq!(lb.tags["ingress.k8s.aws/stack"], "shop/web");
    assert_eq!(lb.tags["ingress.k8s.aws/resource"], "LoadBalancer");
    assert_eq!(lb.tags["elbv2.k8s.aws/cluster"], "prod");
    assert_eq!(lb.tags["owner"], "platform");
    let [tg] = st.stack.target_groups.as_slice() else { panic!("{:?}", st.stack.target_groups) };
    assert_eq!((tg.protocol, tg.port, tg.target_type.as_str()), (Protocol::Http, 8080, "ip"));
    assert_eq!(tg.protocol_version.as_deref(), Some("HTTP1"));
    assert_eq!(tg.tags["ingress.k8s.aws/resource"], "shop/web-echo-server:80");
    let hc = &tg.health_check;
    assert_eq!(
        (hc.protocol, hc.port, hc.path.as_deref(), hc.success_codes.as_deref()),
        (Protocol::Http, HealthCheckPort::TrafficPort, Some("/"), Some("200"))
    );
    assert_eq!((hc.interval_seconds, hc.timeout_seconds, hc.healthy_threshold, hc.unhealthy_threshold), (15, 5, 2, 2));
    let [l] = st.stack.listeners.as_slice() else { panic!() };
    assert_eq!((l.port, l.protocol), (80, Protocol::Http));
    assert_eq!(l.tags["ingress.k8s.aws/resource"], "80");
    let [r] = l.rules.as_slice() else { panic!("{:?}", l.rules) };
    assert_eq!(r.priority, 1);
    assert_eq!(r.conditions, [Condition::PathPattern(vec!["/*".into()])]);
    assert_eq!(
        r.actions,
        [Action::Forward {
            target_groups: vec![WeightedTargetGroup {
                target_group: TargetGroupRef::Name(tg.name.clone()),
                weight: None
            }],
            stickiness_seconds: None
        }]
    );
    assert_eq!(r.tags["ingress.k8s.aws/resource"], "80:1");
    let [bnd] = st.bindings.as_slice() else { panic!() };
    assert_eq!((bnd.namespace.as_str(), bnd.name.as_str()), ("shop", tg.name.as_str()));
    assert_eq!(bnd.spec.service_ref.port, IntOrString::Int(80));
    let net = bnd.spec.networking.as_ref().unwrap();
    assert_eq!(net.ingress[0].from[0].security_group.as_ref().unwrap().group_id, "sg-backend");
    assert_eq!(net.ingress[0].ports[0].port, Some(IntOrString::Int(8080)));
    assert!(st.backend_security_group_used);
    let sg = st.stack.frontend_security_group.as_ref().unwrap();
    assert_eq!(sg.name, naming::ingress_frontend_security_group_name("prod", false, "shop/web"));
    assert_eq!(sg.tags["ingress.k8s.aws/resource"], "ManagedLBSecurityGroup");
    assert_eq!(sg.ingress.len(), 1, "IPv4 only on an ipv4 ALB: {:?}", sg.ingress);
}
