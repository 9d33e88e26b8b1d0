//! Test fixtures and a tiny pure AWS simulator: [`apply`] carries steps out on an
//! [`ObservedStack`] the way AWS would, so tests can check that a plan converges.

use super::*;
use crate::lb::{
    HealthCheck, HealthCheckPort, LoadBalancerStatus, RuleSource, Stack, TargetGroupRef, TgIpAddressType,
    WeightedTargetGroup,
};

pub fn tags(pairs: &[(&str, &str)]) -> Tags {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

pub fn mapping(id: &str) -> SubnetMapping {
    SubnetMapping::plain(id)
}

pub fn health_check() -> HealthCheck {
    HealthCheck {
        protocol: Protocol::Tcp,
        port: HealthCheckPort::TrafficPort,
        path: None,
        success_codes: None,
        interval_seconds: 10,
        timeout_seconds: 10,
        healthy_threshold: 3,
        unhealthy_threshold: 3,
    }
}

pub fn tg(name: &str, port: u16) -> TargetGroup {
    TargetGroup {
        name: name.into(),
        protocol: Protocol::Tcp,
        protocol_version: None,
        port,
        target_type: "ip".into(),
        ip_address_type: TgIpAddressType::Ipv4,
        vpc_id: "vpc-1".into(),
        health_check: health_check(),
        attributes: Attributes::new(),
        tags: tags(&[("service.k8s.aws/stack", "ns/svc")]),
        target_control_port: None,
    }
}

pub fn forward(tg_name: &str) -> Vec<Action> {
    vec![Action::Forward {
        target_groups: vec![WeightedTargetGroup { target_group: TargetGroupRef::Name(tg_name.into()), weight: None }],
        stickiness_seconds: None,
    }]
}

pub fn listener(port: u16, tg_name: &str) -> Listener {
    Listener {
        port,
        protocol: Protocol::Tcp,
        certificates: vec![],
        ssl_policy: None,
        alpn_policy: None,
        mutual_authentication: None,
        default_actions: forward(tg_name),
        attributes: Attributes::new(),
        tags: tags(&[("service.k8s.aws/stack", "ns/svc")]),
        rules: vec![],
    }
}

pub fn rule(port: i32, cidr: &str) -> IngressRule {
    IngressRule {
        protocol: "tcp".into(),
        from_port: port,
        to_port: port,
        source: RuleSource::Cidr(cidr.into()),
        description: None,
    }
}

pub fn sg() -> SecurityGroup {
    SecurityGroup {
        name: "k8s-ns-svc-abc".into(),
        description: "[k8s] Managed SecurityGroup for LoadBalancer".into(),
        vpc_id: "vpc-1".into(),
        ingress: vec![rule(80, "0.0.0.0/0"), rule(443, "0.0.0.0/0")],
        tags: tags(&[("service.k8s.aws/stack", "ns/svc")]),
    }
}

/// An NLB with a managed security group, two target groups and two listeners.
pub fn stack() -> Stack {
    Stack {
        id: "ns/svc".into(),
        load_balancer: LoadBalancer {
            name: "k8s-ns-svc-abc".into(),
            lb_type: LbType::Network,
            scheme: Scheme::InternetFacing,
            ip_address_type: LbIpAddressType::Ipv4,
            subnets: vec![mapping("subnet-a"), mapping("subnet-b")],
            security_groups: vec![MANAGED_FRONTEND_SG.into()],
            attributes: Attributes::new(),
            tags: tags(&[("service.k8s.aws/stack", "ns/svc"), ("elbv2.k8s.aws/cluster", "dev-meta")]),
            customer_owned_ipv4_pool: None,
            ipv4_ipam_pool: None,
            ipv6_source_nat: None,
        },
        frontend_security_group: Some(sg()),
        target_groups: vec![tg("k8s-ns-svc-80", 8080), tg("k8s-ns-svc-443", 8443)],
        listeners: vec![listener(80, "k8s-ns-svc-80"), listener(443, "k8s-ns-svc-443")],
    }
}

/// The simulated AWS account. Security groups other than the managed slot live in `other_sgs`
/// until deleted (a replaced managed group lingers there).
#[derive(Clone, Debug, Default)]
pub struct Sim {
    pub state: ObservedStack,
    pub other_sgs: Vec<Observed<SecurityGroup>>,
    next: u32,
}

impl Sim {
    pub fn new(state: ObservedStack) -> Self {
        // New IDs continue after the highest existing one, like AWS never reusing an ID.
        let ids = state
            .load_balancer
            .iter()
            .map(|(lb, _)| &lb.id)
            .chain(state.target_groups.iter().map(|t| &t.id))
            .chain(state.listeners.iter().map(|l| &l.id))
            .chain(state.frontend_security_group.iter().map(|g| &g.id))
            .chain(state.rules.values().flatten().map(|r| &r.id));
        let next = ids.filter_map(|id| id.rsplit('-').next().and_then(|n| n.parse::<u32>().ok())).max().unwrap_or(0);
        Sim { state, other_sgs: Vec::new(), next }
    }

    fn id(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}-{}", self.next)
    }

    fn managed_sg_id(&self) -> String {
        self.state.frontend_security_group.as_ref().expect("managed security group exists").id.clone()
    }

    fn sg_ids(&self, refs: &[SecurityGroupRef]) -> Vec<String> {
        let mut ids: Vec<String> = refs
            .iter()
            .map(|r| match r {
                SecurityGroupRef::Id(id) => id.clone(),
                SecurityGroupRef::ManagedFrontend => self.managed_sg_id(),
            })
            .collect();
        ids.sort();
        ids
    }

    fn sg_mut(&mut self, id: &str) -> &mut SecurityGroup {
        if self.state.frontend_security_group.as_ref().is_some_and(|g| g.id == id) {
            return &mut self.state.frontend_security_group.as_mut().unwrap().spec;
        }
        &mut self.other_sgs.iter_mut().find(|g| g.id == id).expect("security group exists").spec
    }

    fn tg_arn(&self, name: &str) -> String {
        self.state.target_groups.iter().find(|t| t.spec.name == name).expect("target group exists").id.clone()
    }

    fn resolve(&self, actions: &[Action]) -> Vec<Action> {
        actions
            .iter()
            .map(|a| match a {
                Action::Forward { target_groups, stickiness_seconds } => Action::Forward {
                    target_groups: target_groups
                        .iter()
                        .map(|w| WeightedTargetGroup {
                            target_group: match &w.target_group {
                                TargetGroupRef::Name(n) => TargetGroupRef::Arn(self.tg_arn(n)),
                                arn => arn.clone(),
                            },
                            weight: w.weight,
                        })
                        .collect(),
                    stickiness_seconds: *stickiness_seconds,
                },
                other => other.clone(),
            })
            .collect()
    }

    fn lb_mut(&mut self, arn: &str) -> &mut LoadBalancer {
        let (lb, _) = self.state.load_balancer.as_mut().expect("load balancer exists");
        assert_eq!(lb.id, arn, "step addresses another load balancer");
        &mut lb.spec
    }

    fn listener_mut(&mut self, arn: &str) -> &mut Listener {
        &mut self.state.listeners.iter_mut().find(|l| l.id == arn).expect("listener exists").spec
    }

    fn listener_arn(&self, port: u16) -> String {
        self.state.listeners.iter().find(|l| l.spec.port == port).expect("listener exists").id.clone()
    }

    fn rule_mut(&mut self, arn: &str) -> &mut Observed<Rule> {
        self.state.rules.values_mut().flatten().find(|r| r.id == arn).expect("rule exists")
    }

    /// Panics when another rule of the rule's listener holds `priority` (AWS: PriorityInUse).
    fn assert_priority_free(&self, listener: &str, priority: u32) {
        let held = self.state.rules.get(listener).into_iter().flatten().any(|r| r.spec.priority == priority);
        assert!(!held, "priority {priority} is in use on {listener}");
    }

    fn tags_mut(&mut self, kind: ResourceKind, id: &str) -> &mut Tags {
        match kind {
            ResourceKind::Rule => &mut self.rule_mut(id).spec.tags,
            ResourceKind::LoadBalancer => &mut self.lb_mut(id).tags,
            ResourceKind::Listener => &mut self.listener_mut(id).tags,
            ResourceKind::SecurityGroup => &mut self.sg_mut(id).tags,
            ResourceKind::TargetGroup => {
                &mut self.state.target_groups.iter_mut().find(|t| t.id == id).expect("target group exists").spec.tags
            }
        }
    }

    /// Carries one step out, panicking on what AWS would reject.
    pub fn apply(&mut self, step: &Step) {
        match step {
            Step::CreateSecurityGroup { group } => {
                if let Some(old) = self.state.frontend_security_group.take() {
                    self.other_sgs.push(old);
                }
                let id = self.id("sg");
                self.state.frontend_security_group = Some(Observed { id, spec: group.clone() });
            }
            Step::AuthorizeIngress { group, rules } => {
                let id = self.sg_ids(std::slice::from_ref(group)).remove(0);
                let sg = self.sg_mut(&id);
                for r in rules {
                    assert!(!sg.ingress.contains(r), "duplicate rule {r:?}");
                    sg.ingress.push(r.clone());
                }
            }
            Step::RevokeIngress { group_id, rules } => {
                let sg = self.sg_mut(group_id);
                for r in rules {
                    let before = sg.ingress.len();
                    sg.ingress.retain(|x| x != r);
                    assert!(sg.ingress.len() < before, "revoking a missing rule {r:?}");
                }
            }
            Step::ReplaceLoadBalancer { arn, .. } | Step::DeleteLoadBalancer { arn, .. } => {
                let (lb, _) = self.state.load_balancer.take().expect("load balancer exists");
                assert_eq!(&lb.id, arn);
                assert_ne!(lb.spec.attributes.get(DELETION_PROTECTION).map(String::as_str), Some("true"));
                self.state.listeners.clear();
                self.state.rules.clear();
            }
            Step::CreateTargetGroup { target_group } => {
                assert!(self.state.target_groups.iter().all(|t| t.spec.name != target_group.name), "duplicate name");
                let id = format!("arn:tg/{}/{}", target_group.name, self.id("x"));
                self.state.target_groups.push(Observed { id, spec: target_group.clone() });
            }
            Step::ModifyTargetGroupHealthCheck { arn, health_check, .. } => {
                self.state.target_groups.iter_mut().find(|t| &t.id == arn).unwrap().spec.health_check =
                    health_check.clone();
            }
            Step::ModifyTargetGroupAttributes { arn, attributes, .. } => {
                self.state
                    .target_groups
                    .iter_mut()
                    .find(|t| &t.id == arn)
                    .unwrap()
                    .spec
                    .attributes
                    .extend(attributes.clone());
            }
            Step::CreateLoadBalancer { load_balancer, security_groups } => {
                assert!(self.state.load_balancer.is_none(), "one load balancer per stack");
                let id = format!("arn:lb/{}/{}", load_balancer.name, self.id("x"));
                let mut spec = load_balancer.clone();
                spec.security_groups = self.sg_ids(security_groups);
                spec.subnets = aws_picks_prefixes(&spec.subnets);
                spec.subnets.sort();
                if spec.lb_type == LbType::Network {
                    spec.ipv6_source_nat = Some(spec.ipv6_source_nat.unwrap_or(false));
                }
                let status = LoadBalancerStatus {
                    dns_name: "x.elb".into(),
                    vpc_id: "vpc-1".into(),
                    state: "active".into(),
                    enforce_inbound_rules_on_private_link: None,
                };
                self.state.load_balancer = Some((Observed { id, spec }, status));
            }
            Step::SetSecurityGroups { arn, security_groups } => {
                let ids = self.sg_ids(security_groups);
                let lb = self.lb_mut(arn);
                assert!(!(lb.lb_type == LbType::Network && lb.security_groups.is_empty()), "NLB created without SGs");
                lb.security_groups = ids;
            }
            Step::SetSubnets { arn, subnets, ipv6_source_nat } => {
                let lb = self.lb_mut(arn);
                lb.subnets = aws_picks_prefixes(subnets);
                if let Some(on) = ipv6_source_nat {
                    lb.ipv6_source_nat = Some(*on);
                }
            }
            Step::SetIpAddressType { arn, ip_address_type } => self.lb_mut(arn).ip_address_type = *ip_address_type,
            Step::ModifyIpPools { arn, ipv4_ipam_pool } => self.lb_mut(arn).ipv4_ipam_pool = ipv4_ipam_pool.clone(),
            Step::ModifyLoadBalancerAttributes { arn, attributes } => {
                self.lb_mut(arn).attributes.extend(attributes.clone())
            }
            Step::CreateListener { listener } => {
                assert!(self.state.load_balancer.is_some());
                assert!(self.state.listeners.iter().all(|l| l.spec.port != listener.port), "duplicate port");
                assert!(listener.rules.is_empty(), "rules are created by CreateRule steps");
                let id = self.id("arn:listener");
                let spec = Listener { default_actions: self.resolve(&listener.default_actions), ..listener.clone() };
                self.state.rules.insert(id.clone(), Vec::new());
                self.state.listeners.push(Observed { id, spec });
            }
            Step::ModifyListener { arn, change, .. } => {
                let actions = change.default_actions.as_ref().map(|a| self.resolve(a));
                let l = self.listener_mut(arn);
                if let Some(p) = change.protocol {
                    l.protocol = p;
                    if !matches!(p, Protocol::Tls | Protocol::Https) {
                        l.certificates.clear();
                        l.ssl_policy = None;
                        l.alpn_policy = None;
                        l.mutual_authentication = None;
                    }
                }
                if let Some(c) = &change.default_certificate {
                    l.certificates.retain(|x| x != c);
                    if l.certificates.is_empty() {
                        l.certificates.push(c.clone());
                    } else {
                        l.certificates[0] = c.clone();
                    }
                }
                if let Some(p) = &change.ssl_policy {
                    l.ssl_policy = Some(p.clone());
                }
                if let Some(p) = &change.alpn_policy {
                    l.alpn_policy = Some(p.clone());
                }
                if let Some(m) = &change.mutual_authentication {
                    l.mutual_authentication = Some(m.clone());
                }
                if let Some(a) = actions {
                    l.default_actions = a;
                }
            }
            Step::AddListenerCertificates { arn, certificates, .. } => {
                let l = self.listener_mut(arn);
                assert!(!l.certificates.is_empty(), "extra certificates need a default one");
                l.certificates.extend(certificates.iter().cloned());
            }
            Step::RemoveListenerCertificates { arn, certificates, .. } => {
                let l = self.listener_mut(arn);
                let default = l.certificates[0].clone();
                l.certificates.retain(|c| *c == default || !certificates.contains(c));
            }
            Step::ModifyListenerAttributes { arn, attributes, .. } => {
                self.listener_mut(arn).attributes.extend(attributes.clone())
            }
            Step::DeleteListener { arn, .. } => {
                let before = self.state.listeners.len();
                self.state.listeners.retain(|l| &l.id != arn);
                assert!(self.state.listeners.len() < before);
                self.state.rules.remove(arn);
            }
            Step::CreateRule { port, rule } => {
                let listener = self.listener_arn(*port);
                self.assert_priority_free(&listener, rule.priority);
                let id = self.id("arn:rule");
                let spec = Rule { actions: self.resolve(&rule.actions), ..rule.clone() };
                // What AWS reports: no client secret.
                let spec = Rule { actions: spec.actions.iter().map(Action::without_secrets).collect(), ..spec };
                self.state.rules.get_mut(&listener).expect("rules of the listener known").push(Observed { id, spec });
            }
            Step::ModifyRule { arn, rule, .. } => {
                let actions: Vec<Action> = self.resolve(&rule.actions).iter().map(Action::without_secrets).collect();
                let r = self.rule_mut(arn);
                r.spec.conditions = rule.conditions.clone();
                r.spec.actions = actions;
                // ALBC's and our ModifyRule: the transforms given, or ResetTransforms when none is left.
                r.spec.transforms = rule.transforms.clone();
            }
            Step::SetRulePriorities { port, priorities } => {
                let listener = self.listener_arn(*port);
                // Strictest reading of AWS: each move must find its priority free when it runs.
                for (arn, p) in priorities {
                    self.assert_priority_free(&listener, *p);
                    let r = self.rule_mut(arn);
                    r.spec.priority = *p;
                }
            }
            Step::DeleteRule { arn, .. } => {
                let before: usize = self.state.rules.values().map(|v| v.len()).sum();
                self.state.rules.values_mut().for_each(|v| v.retain(|r| &r.id != arn));
                let after: usize = self.state.rules.values().map(|v| v.len()).sum();
                assert!(after < before, "rule {arn} exists");
            }
            Step::DeleteTargetGroup { arn, name } => {
                let rule_actions = self.state.rules.values().flatten().flat_map(|r| r.spec.actions.iter());
                let in_use =
                    self.state.listeners.iter().flat_map(|l| l.spec.default_actions.iter()).chain(rule_actions).any(
                        |a| match a {
                            Action::Forward { target_groups, .. } => {
                                target_groups.iter().any(|w| w.target_group == TargetGroupRef::Arn(arn.clone()))
                            }
                            _ => false,
                        },
                    );
                assert!(!in_use, "target group {name} still in use");
                self.state.target_groups.retain(|t| &t.id != arn);
            }
            Step::DeleteSecurityGroup { id, .. } => {
                let attached =
                    self.state.load_balancer.as_ref().is_some_and(|(lb, _)| lb.spec.security_groups.contains(id));
                assert!(!attached, "security group {id} still attached");
                if self.state.frontend_security_group.as_ref().is_some_and(|g| &g.id == id) {
                    self.state.frontend_security_group = None;
                } else {
                    let before = self.other_sgs.len();
                    self.other_sgs.retain(|g| &g.id != id);
                    assert!(self.other_sgs.len() < before, "no security group {id}");
                }
            }
            Step::AddTags { kind, id, tags } => {
                assert!(tags.keys().all(|k| !k.starts_with("aws:")));
                self.tags_mut(*kind, id).extend(tags.clone());
            }
            Step::RemoveTags { kind, id, keys } => {
                let t = self.tags_mut(*kind, id);
                for k in keys {
                    assert!(t.remove(k).is_some(), "removing missing tag {k}");
                }
            }
        }
    }

    pub fn apply_all(&mut self, steps: &[Step]) {
        for s in steps {
            self.apply(s);
        }
    }
}

/// What AWS holds once `stack` has been deployed from nothing.
pub fn materialize(stack: &Stack) -> ObservedStack {
    let mut sim = Sim::new(ObservedStack::default());
    sim.apply_all(&plan(stack, &ObservedStack::default(), &PlanOptions::default()).unwrap());
    sim.state
}

/// AWS answers `auto_assigned` with a prefix of its choice.
fn aws_picks_prefixes(subnets: &[SubnetMapping]) -> Vec<SubnetMapping> {
    let pick = |i: usize, p: &Option<String>| match p.as_deref() {
        Some(crate::lb::SOURCE_NAT_AUTO_ASSIGNED) => Some(format!("2600:1f18:0:{i:x}:1::/80")),
        _ => p.clone(),
    };
    subnets
        .iter()
        .enumerate()
        .map(|(i, m)| SubnetMapping { source_nat_ipv6_prefix: pick(i, &m.source_nat_ipv6_prefix), ..m.clone() })
        .collect()
}
