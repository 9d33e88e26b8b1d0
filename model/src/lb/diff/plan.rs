//! The planners: [`plan`] (create/update) and [`plan_delete`].

use super::rules;
use super::{
    DELETION_PROTECTION, ListenerChange, MANAGED_FRONTEND_SG, ObservedStack, PlanError, PlanOptions, ReplaceReason,
    ResourceKind, SecurityGroupRef, Step,
};
use crate::lb::{
    Action, Attributes, IngressRule, LbIpAddressType, LbType, Listener, LoadBalancer, OIDC_SECRET_DIGEST_TAG, Observed,
    Protocol, Rule, SOURCE_NAT_AUTO_ASSIGNED, SecurityGroup, Stack, SubnetMapping, Tags, TargetGroup, TargetGroupRef,
    WeightedTargetGroup,
};
use std::collections::{BTreeMap, BTreeSet};

/// The steps that turn `observed` into `desired`, in a safe order; empty when nothing differs.
pub fn plan(desired: &Stack, observed: &ObservedStack, opts: &PlanOptions) -> Result<Vec<Step>, PlanError> {
    if !observed.foreign.is_empty() {
        return Err(PlanError::Foreign { stack: desired.id.clone(), resources: observed.foreign.clone() });
    }
    let tgs = TgIndex::new(desired, observed)?;
    rules::check_priorities(&desired.listeners)?;
    let mut steps = Vec::new();

    // 1. Frontend security group: created and opened before anything uses it.
    let sg_obs = observed.frontend_security_group.as_ref();
    let sg_replaced = match (&desired.frontend_security_group, sg_obs) {
        (Some(want), Some(have)) => want.name != have.spec.name || want.vpc_id != have.spec.vpc_id,
        _ => false,
    };
    let sg_keep = if sg_replaced { None } else { sg_obs };
    if let Some(want) = &desired.frontend_security_group {
        match sg_keep {
            None => {
                steps.push(Step::CreateSecurityGroup { group: SecurityGroup { ingress: Vec::new(), ..want.clone() } });
                let rules = rule_set(&want.ingress);
                if !rules.is_empty() {
                    steps.push(Step::AuthorizeIngress { group: SecurityGroupRef::ManagedFrontend, rules });
                }
            }
            Some(have) => {
                tag_steps(&mut steps, ResourceKind::SecurityGroup, &have.id, &want.tags, &have.spec.tags, opts);
                let (add, _) = rule_diff(&want.ingress, &have.spec.ingress);
                if !add.is_empty() {
                    steps.push(Step::AuthorizeIngress { group: SecurityGroupRef::Id(have.id.clone()), rules: add });
                }
            }
        }
    }

    // 2. Replacement of the load balancer when an immutable property changed.
    let want_lb = &desired.load_balancer;
    let want_sgs = sg_refs_desired(desired);
    let mut lb_obs = observed.load_balancer.as_ref().map(|(lb, _)| lb);
    let mut listeners_obs: Vec<&Observed<Listener>> = observed.listeners.iter().collect();
    if let Some(have) = lb_obs
        && let Some(reason) = replace_reason(want_lb, &have.spec, &want_sgs)
    {
        if is_true(&want_lb.attributes, DELETION_PROTECTION) {
            return Err(PlanError::ReplacementBlocked { name: have.spec.name.clone(), reason });
        }
        // Protection switched on out of band does not block us (ALBC turns it off and deletes too).
        if is_true(&have.spec.attributes, DELETION_PROTECTION) {
            steps.push(Step::ModifyLoadBalancerAttributes {
                arn: have.id.clone(),
                attributes: [(DELETION_PROTECTION.to_string(), "false".to_string())].into(),
            });
        }
        steps.push(Step::ReplaceLoadBalancer { arn: have.id.clone(), name: have.spec.name.clone(), reason });
        lb_obs = None;
        listeners_obs.clear();
    }

    // 3. Target groups: every one a listener will point at exists before the listener changes.
    for want in &desired.target_groups {
        match tgs.observed.get(want.name.as_str()) {
            None => steps.push(Step::CreateTargetGroup { target_group: want.clone() }),
            Some(have) => {
                if want.health_check != have.spec.health_check {
                    steps.push(Step::ModifyTargetGroupHealthCheck {
                        arn: have.id.clone(),
                        name: want.name.clone(),
                        health_check: want.health_check.clone(),
                    });
                }
                let attrs = attr_diff(&want.attributes, &have.spec.attributes);
                if !attrs.is_empty() {
                    steps.push(Step::ModifyTargetGroupAttributes {
                        arn: have.id.clone(),
                        name: want.name.clone(),
                        attributes: attrs,
                    });
                }
                tag_steps(&mut steps, ResourceKind::TargetGroup, &have.id, &want.tags, &have.spec.tags, opts);
            }
        }
    }

    // 4. The load balancer.
    match lb_obs {
        None => steps.push(Step::CreateLoadBalancer {
            load_balancer: LoadBalancer { security_groups: Vec::new(), ..want_lb.clone() },
            security_groups: want_sgs,
        }),
        Some(have) => {
            let arn = &have.id;
            let pool_differs = want_lb.ipv4_ipam_pool != have.spec.ipv4_ipam_pool;
            let set_pool = Step::ModifyIpPools { arn: arn.clone(), ipv4_ipam_pool: want_lb.ipv4_ipam_pool.clone() };
            // A pool leaves before subnets or the address type change (ALBC's order).
            if pool_differs && want_lb.ipv4_ipam_pool.is_none() {
                steps.push(set_pool.clone());
            }
            let have_sgs = sg_refs_observed(&have.spec.security_groups, sg_keep);
            if set_of(&want_sgs) != set_of(&have_sgs) {
                steps.push(Step::SetSecurityGroups { arn: arn.clone(), security_groups: want_sgs });
            }
            // Source NAT left unsaid keeps what the load balancer has (AWS reports off by default).
            let source_nat_differs =
                want_lb.ipv6_source_nat.is_some_and(|on| on != have.spec.ipv6_source_nat.unwrap_or(false));
            let subnets_differ = !subnets_match(&want_lb.subnets, &have.spec.subnets) || source_nat_differs;
            let ip_differs = want_lb.ip_address_type != have.spec.ip_address_type;
            let set_subnets = Step::SetSubnets {
                arn: arn.clone(),
                subnets: sorted(&want_lb.subnets),
                ipv6_source_nat: want_lb.ipv6_source_nat,
            };
            let set_ip = Step::SetIpAddressType { arn: arn.clone(), ip_address_type: want_lb.ip_address_type };
            // Dual-stack needs IPv6 subnets first; going back to IPv4 must happen before IPv6 subnets leave.
            match (subnets_differ, ip_differs) {
                (true, true) if want_lb.ip_address_type == LbIpAddressType::Ipv4 => steps.extend([set_ip, set_subnets]),
                (true, true) => steps.extend([set_subnets, set_ip]),
                (true, false) => steps.push(set_subnets),
                (false, true) => steps.push(set_ip),
                (false, false) => {}
            }
            let attrs = attr_diff(&want_lb.attributes, &have.spec.attributes);
            if !attrs.is_empty() {
                steps.push(Step::ModifyLoadBalancerAttributes { arn: arn.clone(), attributes: attrs });
            }
            // A new or changed pool comes after every other change of the load balancer.
            if pool_differs && want_lb.ipv4_ipam_pool.is_some() {
                steps.push(set_pool);
            }
            tag_steps(&mut steps, ResourceKind::LoadBalancer, arn, &want_lb.tags, &have.spec.tags, opts);
        }
    }

    // 5. Listeners, matched by port.
    let want_ports: BTreeSet<u16> = desired.listeners.iter().map(|l| l.port).collect();
    for have in &listeners_obs {
        if !want_ports.contains(&have.spec.port) {
            steps.push(Step::DeleteListener { arn: have.id.clone(), port: have.spec.port });
        }
    }
    for want in &desired.listeners {
        let resolved = Listener {
            default_actions: tgs.resolve_actions(&want.default_actions),
            rules: want.rules.iter().map(|r| Rule { actions: tgs.resolve_actions(&r.actions), ..r.clone() }).collect(),
            ..want.clone()
        };
        match listeners_obs.iter().find(|l| l.spec.port == want.port) {
            None => {
                steps.push(Step::CreateListener { listener: Listener { rules: Vec::new(), ..resolved.clone() } });
                rules::create_all(&mut steps, &resolved);
            }
            Some(have) => {
                listener_steps(&mut steps, &resolved, have, &tgs, opts);
                rules::rule_steps(&mut steps, &resolved, &have.id, observed.rules.get(&have.id), &tgs, opts)?;
            }
        }
    }

    // 6. Target groups nothing points at any more.
    let want_tg_names: BTreeSet<&str> = desired.target_groups.iter().map(|t| t.name.as_str()).collect();
    for have in &observed.target_groups {
        if !want_tg_names.contains(have.spec.name.as_str()) {
            steps.push(Step::DeleteTargetGroup { arn: have.id.clone(), name: have.spec.name.clone() });
        }
    }

    // 7. Security group clean-up, once listeners and the load balancer no longer need it.
    if let (Some(want), Some(have)) = (&desired.frontend_security_group, sg_keep) {
        let (_, revoke) = rule_diff(&want.ingress, &have.spec.ingress);
        if !revoke.is_empty() {
            steps.push(Step::RevokeIngress { group_id: have.id.clone(), rules: revoke });
        }
    }
    if let Some(have) = sg_obs
        && (desired.frontend_security_group.is_none() || sg_replaced)
    {
        steps.push(Step::DeleteSecurityGroup {
            id: have.id.clone(),
            name: have.spec.name.clone(),
            retry_on_dependency_violation: true,
        });
    }
    Ok(steps)
}

/// Whether the observed load balancer has deletion protection on. ALBC refuses to delete when
/// the user's annotation asks for protection, and turns it off (then deletes) when it was set
/// out of band; the caller makes that call before [`plan_delete`], which always turns it off.
pub fn deletion_protected(observed: &ObservedStack) -> bool {
    observed.load_balancer.as_ref().is_some_and(|(lb, _)| is_true(&lb.spec.attributes, DELETION_PROTECTION))
}

fn is_true(attrs: &Attributes, key: &str) -> bool {
    attrs.get(key).is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// Tear everything down: load balancer (AWS deletes its listeners and rules with it) → target
/// groups → security group (the last retried until the load balancer's network interfaces are
/// released). `foreign` is ignored: those resources were never ours.
pub fn plan_delete(observed: &ObservedStack) -> Vec<Step> {
    let mut steps = Vec::new();
    if let Some((lb, _)) = &observed.load_balancer {
        if deletion_protected(observed) {
            steps.push(Step::ModifyLoadBalancerAttributes {
                arn: lb.id.clone(),
                attributes: [(DELETION_PROTECTION.to_string(), "false".to_string())].into(),
            });
        }
        steps.push(Step::DeleteLoadBalancer { arn: lb.id.clone(), name: lb.spec.name.clone() });
    }
    for tg in &observed.target_groups {
        steps.push(Step::DeleteTargetGroup { arn: tg.id.clone(), name: tg.spec.name.clone() });
    }
    if let Some(sg) = &observed.frontend_security_group {
        steps.push(Step::DeleteSecurityGroup {
            id: sg.id.clone(),
            name: sg.spec.name.clone(),
            retry_on_dependency_violation: true,
        });
    }
    steps
}

fn replace_reason(want: &LoadBalancer, have: &LoadBalancer, want_sgs: &[SecurityGroupRef]) -> Option<ReplaceReason> {
    if want.lb_type != have.lb_type {
        return Some(ReplaceReason::Type { from: have.lb_type, to: want.lb_type });
    }
    if want.scheme != have.scheme {
        return Some(ReplaceReason::Scheme { from: have.scheme, to: want.scheme });
    }
    if want.name != have.name {
        return Some(ReplaceReason::Name { from: have.name.clone(), to: want.name.clone() });
    }
    if want.lb_type == LbType::Network && have.security_groups.is_empty() && !want_sgs.is_empty() {
        return Some(ReplaceReason::NlbSecurityGroups);
    }
    None
}

/// The desired load balancer's security groups, with the managed one as a reference.
fn sg_refs_desired(desired: &Stack) -> Vec<SecurityGroupRef> {
    let managed_name = desired.frontend_security_group.as_ref().map(|g| g.name.as_str());
    let mut out: Vec<SecurityGroupRef> = desired
        .load_balancer
        .security_groups
        .iter()
        .map(|s| {
            if s == MANAGED_FRONTEND_SG || Some(s.as_str()) == managed_name {
                SecurityGroupRef::ManagedFrontend
            } else {
                SecurityGroupRef::Id(s.clone())
            }
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

fn sg_refs_observed(ids: &[String], managed: Option<&Observed<SecurityGroup>>) -> Vec<SecurityGroupRef> {
    let mut out: Vec<SecurityGroupRef> = ids
        .iter()
        .map(|id| match managed {
            Some(m) if &m.id == id => SecurityGroupRef::ManagedFrontend,
            _ => SecurityGroupRef::Id(id.clone()),
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

fn listener_steps(
    steps: &mut Vec<Step>,
    want: &Listener,
    have: &Observed<Listener>,
    tgs: &TgIndex<'_>,
    opts: &PlanOptions,
) {
    let (arn, port) = (&have.id, want.port);
    let obs = &have.spec;
    let mut change = ListenerChange::default();
    if want.protocol != obs.protocol {
        change.protocol = Some(want.protocol);
    }
    // Certificates only mean something on TLS/HTTPS listeners (AWS drops them on a switch to TCP/HTTP).
    let tls = matches!(want.protocol, Protocol::Tls | Protocol::Https);
    if tls
        && let Some(cert) = want.certificates.first()
        && obs.certificates.first() != Some(cert)
    {
        change.default_certificate = Some(cert.clone());
    }
    if want.ssl_policy.is_some() && want.ssl_policy != obs.ssl_policy {
        change.ssl_policy = want.ssl_policy.clone();
    }
    // ALPN: `None` wanted leaves the listener's policy as it is, unless enhanced defaults say that
    // no policy means AWS's `None` (ALBC's EnhancedDefaultBehavior).
    let no_alpn = |p: &Option<String>| p.as_deref().is_none_or(|p| p == "None");
    if opts.enhanced_defaults && no_alpn(&want.alpn_policy) {
        if !no_alpn(&obs.alpn_policy) {
            change.alpn_policy = Some("None".to_string());
        }
    } else if want.alpn_policy.is_some() && want.alpn_policy != obs.alpn_policy {
        change.alpn_policy = want.alpn_policy.clone();
    }
    // Mutual TLS only exists on TLS/HTTPS listeners; `None` wanted leaves the listener's as it is,
    // or, with enhanced defaults, turns it off.
    let off = crate::lb::MutualAuthentication::off();
    let wanted_mtls = match &want.mutual_authentication {
        Some(m) => Some(m),
        None if opts.enhanced_defaults => Some(&off),
        None => None,
    };
    if tls
        && let Some(m) = wanted_mtls
        && !m.satisfied_by(obs.mutual_authentication.as_ref())
    {
        change.mutual_authentication = Some(m.clone());
    }
    // Without the OIDC client secret, which AWS never returns; a rotated one shows in the digest tag.
    let comparable = |l: &Listener| -> (Vec<Action>, Option<String>) {
        let actions = tgs.normalize_actions(&l.default_actions).iter().map(Action::without_secrets).collect();
        (actions, l.tags.get(OIDC_SECRET_DIGEST_TAG).cloned())
    };
    if comparable(want) != comparable(obs) {
        change.default_actions = Some(want.default_actions.clone());
    }
    if !change.is_empty() {
        steps.push(Step::ModifyListener { arn: arn.clone(), port, change });
    }
    if !tls {
        want_attrs_and_tags(steps, want, have, opts);
        return;
    }
    let extra = |l: &Listener| -> BTreeSet<String> { l.certificates.iter().skip(1).cloned().collect() };
    let default = want.certificates.first();
    let (want_extra, have_extra) = (extra(want), extra(obs));
    // The default certificate also listed as an SNI one (two group members naming the same
    // certificate) is served already: adding it would repeat on every pass.
    let add: Vec<String> = want_extra.difference(&have_extra).filter(|c| Some(*c) != default).cloned().collect();
    let remove: Vec<String> = have_extra.difference(&want_extra).filter(|c| Some(*c) != default).cloned().collect();
    if !add.is_empty() {
        steps.push(Step::AddListenerCertificates { arn: arn.clone(), port, certificates: add });
    }
    if !remove.is_empty() {
        steps.push(Step::RemoveListenerCertificates { arn: arn.clone(), port, certificates: remove });
    }
    want_attrs_and_tags(steps, want, have, opts);
}

fn want_attrs_and_tags(steps: &mut Vec<Step>, want: &Listener, have: &Observed<Listener>, opts: &PlanOptions) {
    let attrs = attr_diff(&want.attributes, &have.spec.attributes);
    if !attrs.is_empty() {
        steps.push(Step::ModifyListenerAttributes { arn: have.id.clone(), port: want.port, attributes: attrs });
    }
    tag_steps(steps, ResourceKind::Listener, &have.id, &want.tags, &have.spec.tags, opts);
}

/// Target groups by name and ARN, to compare and resolve listener and rule actions.
pub(super) struct TgIndex<'a> {
    observed: BTreeMap<&'a str, &'a Observed<TargetGroup>>,
    name_by_arn: BTreeMap<&'a str, &'a str>,
}

impl<'a> TgIndex<'a> {
    fn new(desired: &'a Stack, observed: &'a ObservedStack) -> Result<Self, PlanError> {
        let by_name: BTreeMap<&str, &Observed<TargetGroup>> =
            observed.target_groups.iter().map(|t| (t.spec.name.as_str(), t)).collect();
        for want in &desired.target_groups {
            if let Some(have) = by_name.get(want.name.as_str()) {
                immutable_check(want, &have.spec)?;
            }
        }
        let desired_names: BTreeSet<&str> = desired.target_groups.iter().map(|t| t.name.as_str()).collect();
        for l in &desired.listeners {
            let rule_actions = l.rules.iter().flat_map(|r| action_tg_names(&r.actions));
            for name in action_tg_names(&l.default_actions).chain(rule_actions) {
                if !desired_names.contains(name) && !by_name.contains_key(name) {
                    return Err(PlanError::UnknownTargetGroup { port: l.port, name: name.to_string() });
                }
            }
        }
        let name_by_arn = observed.target_groups.iter().map(|t| (t.id.as_str(), t.spec.name.as_str())).collect();
        Ok(TgIndex { observed: by_name, name_by_arn })
    }

    /// Names of groups that exist become ARNs; names of groups about to be created stay names.
    fn resolve_actions(&self, actions: &[Action]) -> Vec<Action> {
        map_refs(actions, |r| match r {
            TargetGroupRef::Name(n) => match self.observed.get(n.as_str()) {
                Some(t) => TargetGroupRef::Arn(t.id.clone()),
                None => r.clone(),
            },
            TargetGroupRef::Arn(_) => r.clone(),
        })
    }

    /// ARNs of our groups become names, so desired and observed actions compare equal.
    pub(super) fn normalize_actions(&self, actions: &[Action]) -> Vec<Action> {
        map_refs(actions, |r| match r {
            TargetGroupRef::Arn(a) => match self.name_by_arn.get(a.as_str()) {
                Some(n) => TargetGroupRef::Name(n.to_string()),
                None => r.clone(),
            },
            TargetGroupRef::Name(_) => r.clone(),
        })
    }
}

fn action_tg_names(actions: &[Action]) -> impl Iterator<Item = &str> {
    actions
        .iter()
        .flat_map(|a| match a {
            Action::Forward { target_groups, .. } => target_groups.as_slice(),
            _ => &[],
        })
        .filter_map(|w| match &w.target_group {
            TargetGroupRef::Name(n) => Some(n.as_str()),
            TargetGroupRef::Arn(_) => None,
        })
}

fn map_refs(actions: &[Action], f: impl Fn(&TargetGroupRef) -> TargetGroupRef) -> Vec<Action> {
    actions
        .iter()
        .map(|a| match a {
            Action::Forward { target_groups, stickiness_seconds } => Action::Forward {
                target_groups: target_groups
                    .iter()
                    .map(|w| WeightedTargetGroup { target_group: f(&w.target_group), weight: w.weight })
                    .collect(),
                stickiness_seconds: *stickiness_seconds,
            },
            other => other.clone(),
        })
        .collect()
}

fn immutable_check(want: &TargetGroup, have: &TargetGroup) -> Result<(), PlanError> {
    let conflict = |field: &'static str, observed: String, desired: String| {
        Err(PlanError::TargetGroupConflict { name: want.name.clone(), field, observed, desired })
    };
    if want.protocol != have.protocol {
        return conflict("protocol", have.protocol.as_aws().into(), want.protocol.as_aws().into());
    }
    if want.port != have.port {
        return conflict("port", have.port.to_string(), want.port.to_string());
    }
    if want.target_type != have.target_type {
        return conflict("target type", have.target_type.clone(), want.target_type.clone());
    }
    if want.vpc_id != have.vpc_id {
        return conflict("VPC", have.vpc_id.clone(), want.vpc_id.clone());
    }
    if want.ip_address_type != have.ip_address_type {
        return conflict(
            "IP address type",
            format!("{:?}", have.ip_address_type),
            format!("{:?}", want.ip_address_type),
        );
    }
    if want.protocol_version.is_some() && want.protocol_version != have.protocol_version {
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(none)".into());
        return conflict("protocol version", show(&have.protocol_version), show(&want.protocol_version));
    }
    if want.target_control_port != have.target_control_port {
        let show = |p: Option<u16>| p.map_or_else(|| "(none)".to_string(), |p| p.to_string());
        return conflict("target control port", show(have.target_control_port), show(want.target_control_port));
    }
    Ok(())
}

/// Desired keys whose value AWS does not have.
fn attr_diff(want: &Attributes, have: &Attributes) -> Attributes {
    want.iter().filter(|(k, v)| have.get(*k) != Some(*v)).map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn tag_managed(key: &str, opts: &PlanOptions) -> bool {
    !key.starts_with("aws:") && !opts.external_managed_tags.contains(key)
}

pub(super) fn tag_steps(
    steps: &mut Vec<Step>,
    kind: ResourceKind,
    id: &str,
    want: &Tags,
    have: &Tags,
    opts: &PlanOptions,
) {
    let add: Tags = want
        .iter()
        .filter(|(k, v)| tag_managed(k, opts) && have.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let remove: Vec<String> = have.keys().filter(|k| tag_managed(k, opts) && !want.contains_key(*k)).cloned().collect();
    if !add.is_empty() {
        steps.push(Step::AddTags { kind, id: id.to_string(), tags: add });
    }
    if !remove.is_empty() {
        steps.push(Step::RemoveTags { kind, id: id.to_string(), keys: remove });
    }
}

/// A rule's identity: what it lets in, not its description.
type RuleKey = (String, i32, i32, crate::lb::RuleSource);

fn rule_key(r: &IngressRule) -> RuleKey {
    (r.protocol.clone(), r.from_port, r.to_port, r.source.clone())
}

fn rule_set(rules: &[IngressRule]) -> Vec<IngressRule> {
    let mut seen = BTreeSet::new();
    let mut out: Vec<IngressRule> = rules.iter().filter(|r| seen.insert(rule_key(r))).cloned().collect();
    out.sort();
    out
}

/// (to authorize, to revoke)
fn rule_diff(want: &[IngressRule], have: &[IngressRule]) -> (Vec<IngressRule>, Vec<IngressRule>) {
    let have_keys: BTreeSet<RuleKey> = have.iter().map(rule_key).collect();
    let want_keys: BTreeSet<RuleKey> = want.iter().map(rule_key).collect();
    let add = rule_set(want).into_iter().filter(|r| !have_keys.contains(&rule_key(r))).collect();
    let revoke = rule_set(have).into_iter().filter(|r| !want_keys.contains(&rule_key(r))).collect();
    (add, revoke)
}

/// Same subnets, and every address the desired side fixes is the observed one. An address the
/// desired side leaves open is AWS's choice (an internal NLB reports the private IP AWS picked):
/// not a difference, or every pass would call SetSubnets.
///
/// The same Elastic IPs paired with the same subnets in another order also match: AWS cannot move
/// an EIP between the subnets of a load balancer, and an NLB built while EIPs paired with subnets
/// sorted by ID (before the annotation's order, as ALBC v3.5 pairs them) keeps its addresses.
fn subnets_match(want: &[SubnetMapping], have: &[SubnetMapping]) -> bool {
    fn fixed<T: PartialEq>(w: &Option<T>, h: &Option<T>) -> bool {
        w.is_none() || w == h
    }
    let matches = |eips: bool| {
        want.len() == have.len()
            && want.iter().all(|w| {
                have.iter().any(|h| {
                    h.subnet_id == w.subnet_id
                        && (!eips || fixed(&w.allocation_id, &h.allocation_id))
                        && fixed(&w.private_ipv4, &h.private_ipv4)
                        && fixed(&w.ipv6, &h.ipv6)
                        && source_nat_matches(&w.source_nat_ipv6_prefix, &h.source_nat_ipv6_prefix)
                })
            })
    };
    let eip_set =
        |m: &[SubnetMapping]| -> BTreeSet<String> { m.iter().filter_map(|x| x.allocation_id.clone()).collect() };
    matches(true)
        || (matches(false) && want.iter().all(|w| w.allocation_id.is_some()) && eip_set(want) == eip_set(have))
}

/// `auto_assigned` is met by whichever prefix AWS picked; a given prefix must be the one there.
fn source_nat_matches(want: &Option<String>, have: &Option<String>) -> bool {
    match (want.as_deref(), have) {
        (None, _) => true,
        (Some(SOURCE_NAT_AUTO_ASSIGNED), h) => h.is_some(),
        (Some(w), h) => h.as_deref() == Some(w),
    }
}

fn set_of<T: Ord + Clone>(v: &[T]) -> BTreeSet<T> {
    v.iter().cloned().collect()
}

fn sorted<T: Ord + Clone>(v: &[T]) -> Vec<T> {
    let mut v = v.to_vec();
    v.sort();
    v
}

#[cfg(test)]
mod subnet_tests {
    use super::subnets_match;
    use crate::lb::SubnetMapping;

    fn m(id: &str, ip: Option<&str>) -> SubnetMapping {
        SubnetMapping {
            subnet_id: id.into(),
            allocation_id: None,
            private_ipv4: ip.map(|i| i.parse().unwrap()),
            ipv6: None,
            source_nat_ipv6_prefix: None,
        }
    }

    #[test]
    fn addresses_aws_picked_are_not_a_difference() {
        assert!(subnets_match(&[m("subnet-a", None)], &[m("subnet-a", Some("10.0.1.9"))]));
        assert!(subnets_match(&[m("subnet-a", Some("10.0.1.9"))], &[m("subnet-a", Some("10.0.1.9"))]));
        assert!(!subnets_match(&[m("subnet-a", Some("10.0.1.8"))], &[m("subnet-a", Some("10.0.1.9"))]));
        assert!(!subnets_match(&[m("subnet-a", None)], &[m("subnet-b", None)]));
        assert!(!subnets_match(&[m("subnet-a", None)], &[m("subnet-a", None), m("subnet-b", None)]));
    }
}
