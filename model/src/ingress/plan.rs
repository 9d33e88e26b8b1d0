//! An IngressGroup → its listeners, rules and target-group backends, in one call.
//!
//! Target groups follow ALBC (`pkg/ingress/model_build_target_group.go`): one per (Ingress,
//! Service, port as written) — resource ID `<ingress namespace>/<ingress name>-<service>:<port>` —
//! because each Ingress's annotations shape its target groups. Two members of a group routing to
//! the same Service port get two target groups, and `port.name: http` and `port.number: 80` are
//! two backends even when they are the same port. Settings: the Ingress's backend annotations,
//! overridden by the Service's ([`BackendSettings::overridden_by`]).

use std::collections::BTreeMap;

use super::actions::{BackendRef, ForwardTarget, RuleAction};
use super::annotations::BackendSettings;
use super::backends::{ServiceView, Services};
use super::merge::{GroupError, IngressKey, ListenerConfig, Member, MergeConfig, merge};
use super::rules::{ListenerRules, build_rules};

/// The key of one target group (and its TargetGroupBinding).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TargetGroupKey {
    /// The member whose rules forward here.
    pub ingress: IngressKey,
    pub backend: BackendRef,
}

impl TargetGroupKey {
    /// ALBC's stack resource ID of the target group.
    pub fn resource_id(&self) -> String {
        let port = match &self.backend.port {
            super::actions::ServicePort::Number(n) => n.to_string(),
            super::actions::ServicePort::Name(s) => s.clone(),
        };
        format!("{}/{}-{}:{port}", self.ingress.namespace, self.ingress.name, self.backend.service)
    }
}

/// One target group to build, with the settings that shape it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetGroupBackend {
    pub key: TargetGroupKey,
    pub settings: BackendSettings,
    /// The backend Service (`None` only if it vanished between planning and building).
    pub service: Option<ServiceView>,
}

/// Everything the stack builder needs of a group's routing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupPlan {
    /// Listener settings (protocol, certificates, policy, inbound sources, attributes) by port.
    pub listeners: Vec<ListenerConfig>,
    /// Rules and default actions, same order as `listeners`.
    pub rules: Vec<ListenerRules>,
    /// Sorted by key; each referenced by at least one rule or default action.
    pub target_groups: Vec<TargetGroupBackend>,
    /// Tolerated problems (missing backend Service or action: the ALB answers 503).
    pub warnings: Vec<String>,
    /// The NLB in front of the ALB (`enable-frontend-nlb`).
    pub frontend_nlb: Option<super::frontend_nlb::FrontendNlbPlan>,
}

fn forwards(actions: &[RuleAction]) -> impl Iterator<Item = &BackendRef> {
    actions
        .iter()
        .flat_map(|a| match a {
            RuleAction::Forward { target_groups, .. } => target_groups.as_slice(),
            _ => &[],
        })
        .filter_map(|t| match &t.target {
            ForwardTarget::Service(b) => Some(b),
            _ => None,
        })
}

/// Merges the listeners of `members` (in group order, see [`super::members`]) and builds their
/// rules; any error fails the whole group and all errors are returned.
pub fn plan_group(members: &[Member], services: &Services, cfg: &MergeConfig) -> Result<GroupPlan, Vec<GroupError>> {
    let merged = merge(members, cfg)?;
    let (rules, warnings) = build_rules(members, &merged, services, cfg)?;
    let by_key: BTreeMap<&IngressKey, &Member> = members.iter().map(|m| (&m.key, m)).collect();
    let mut tgs: BTreeMap<TargetGroupKey, (BackendSettings, Option<ServiceView>)> = BTreeMap::new();
    for l in &rules {
        let defaults = l.default_from.iter().map(|k| (k, l.default_actions.as_slice()));
        let rules = l.rules.iter().map(|r| (&r.ingress, r.actions.as_slice()));
        for (ingress, actions) in defaults.chain(rules) {
            for b in forwards(actions) {
                let key = TargetGroupKey { ingress: ingress.clone(), backend: b.clone() };
                if tgs.contains_key(&key) {
                    continue;
                }
                let own = &by_key[ingress].settings.backend;
                let svc = services.get(&(b.namespace.clone(), b.service.clone()));
                let settings = match svc {
                    Some(svc) => own.overridden_by(&svc.settings),
                    None => own.clone(),
                };
                tgs.insert(key, (settings, svc.cloned()));
            }
        }
    }
    let target_groups =
        tgs.into_iter().map(|(key, (settings, service))| TargetGroupBackend { key, settings, service }).collect();
    let frontend_nlb =
        super::frontend_nlb::plan(members, &merged.listeners, cfg.default_scheme).map_err(|problems| {
            problems.into_iter().map(|problem| GroupError::FrontendNlb { problem }).collect::<Vec<_>>()
        })?;
    Ok(GroupPlan { listeners: merged.listeners, rules, target_groups, warnings, frontend_nlb })
}
