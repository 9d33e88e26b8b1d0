//! [`FakeLoadBalancers`]' listener certificates and rules, with AWS's refusals: a priority in
//! use, an OIDC rule created without a client secret, a target group that does not exist, a
//! regex condition value AWS would not accept, a JWT validation AWS would not accept or on a
//! listener that is not HTTPS.

use super::{FakeLoadBalancers, State, error, forwarded_arns, listener_missing, tg_missing};
use crate::error::{AwsError, ErrorKind};
use crate::lb::require_target_group_arns;
use lbc_model::lb::{
    Action, Condition, Observed, Protocol, RULE_PRIORITIES, Rule, regex_value_problem, transform_problems,
};

fn priority_in_use(op: &'static str, p: u32) -> AwsError {
    error(ErrorKind::AlreadyExists, op, "PriorityInUse", format!("Priority '{p}' is currently in use"))
}

fn rule_missing(op: &'static str) -> AwsError {
    error(ErrorKind::NotFound, op, "RuleNotFound", "One or more rules not found".into())
}

/// AWS validates regex condition values (length, syntax, supported features) on write.
/// AWS's limits on a rule's transforms (one per kind, regexes and replacements).
fn check_transforms(op: &'static str, rule: &Rule) -> Result<(), AwsError> {
    match transform_problems(&rule.transforms).into_iter().next() {
        Some(problem) => Err(error(ErrorKind::Invalid, op, "ValidationError", problem)),
        None => Ok(()),
    }
}

fn check_conditions(op: &'static str, conditions: &[Condition]) -> Result<(), AwsError> {
    for c in conditions {
        let (Condition::HostHeaderRegex(v)
        | Condition::PathPatternRegex(v)
        | Condition::HttpHeaderRegex { values: v, .. }) = c
        else {
            continue;
        };
        if let Some(problem) = v.iter().find_map(|re| regex_value_problem(re).map(|p| format!("regex {re:?} {p}"))) {
            return Err(error(ErrorKind::Invalid, op, "ValidationError", problem));
        }
    }
    Ok(())
}

/// JWT validation: a valid configuration (AWS's limits) on an HTTPS listener.
pub(super) fn check_jwt(op: &'static str, protocol: Protocol, actions: &[Action]) -> Result<(), AwsError> {
    for a in actions {
        let Action::JwtValidation(j) = a else { continue };
        if protocol != Protocol::Https {
            let msg = format!("a jwt-validation action needs an HTTPS listener, not {}", protocol.as_aws());
            return Err(error(ErrorKind::Invalid, op, "InvalidConfigurationRequest", msg));
        }
        if let Some(problem) = j.problems().into_iter().next() {
            return Err(error(ErrorKind::Invalid, op, "ValidationError", problem));
        }
    }
    Ok(())
}

fn check_actions(s: &State, op: &'static str, listener_arn: &str, actions: &[Action]) -> Result<(), AwsError> {
    require_target_group_arns(actions).map_err(|m| AwsError::new(ErrorKind::Invalid, "elasticloadbalancing", op, m))?;
    if let Some((_, l)) = s.listeners.get(listener_arn) {
        check_jwt(op, l.protocol, actions)?;
    }
    match forwarded_arns(actions).find(|a| !s.tgs.contains_key(*a)) {
        Some(_) => Err(tg_missing(op)),
        None => Ok(()),
    }
}

/// What Describe answers: AWS never returns the OIDC client secret.
fn as_reported(actions: &[Action]) -> Vec<Action> {
    actions.iter().map(Action::without_secrets).collect()
}

fn held(s: &State, listener: &str, priority: u32) -> bool {
    s.rules.values().any(|(l, r)| l == listener && r.priority == priority)
}

impl FakeLoadBalancers {
    pub(super) fn change_certificates(
        &self,
        op: &'static str,
        listener_arn: &str,
        certificates: &[String],
        add: bool,
    ) -> Result<(), AwsError> {
        let mut s = self.enter(op, listener_arn)?;
        let (_, l) = s.listeners.get_mut(listener_arn).ok_or_else(|| listener_missing(op))?;
        if l.certificates.is_empty() {
            let msg = "the listener has no default certificate".to_string();
            return Err(error(ErrorKind::Invalid, op, "InvalidConfigurationRequest", msg));
        }
        for c in certificates {
            let attached = l.certificates[1..].contains(c);
            if add && !attached {
                l.certificates.push(c.clone());
            } else if !add && attached {
                let pos = 1 + l.certificates[1..].iter().position(|x| x == c).expect("attached");
                l.certificates.remove(pos);
            }
        }
        Ok(())
    }

    pub(super) fn list_rules(&self, listener_arn: &str) -> Result<Vec<Observed<Rule>>, AwsError> {
        const OP: &str = "DescribeRules";
        let s = self.enter(OP, listener_arn)?;
        if !s.listeners.contains_key(listener_arn) {
            return Err(listener_missing(OP));
        }
        let mut out: Vec<Observed<Rule>> = s
            .rules
            .iter()
            .filter(|(_, (l, _))| l == listener_arn)
            .map(|(arn, (_, r))| Observed { id: arn.clone(), spec: r.clone() })
            .collect();
        out.sort_by_key(|r| r.spec.priority);
        Ok(out)
    }

    pub(super) fn add_rule(&self, listener_arn: &str, rule: &Rule) -> Result<Observed<Rule>, AwsError> {
        const OP: &str = "CreateRule";
        let mut s = self.enter(OP, listener_arn)?;
        if !s.listeners.contains_key(listener_arn) {
            return Err(listener_missing(OP));
        }
        check_actions(&s, OP, listener_arn, &rule.actions)?;
        check_conditions(OP, &rule.conditions)?;
        check_transforms(OP, rule)?;
        if !RULE_PRIORITIES.contains(&rule.priority) {
            let msg = format!("priority {} is not within 1..50000", rule.priority);
            return Err(error(ErrorKind::Invalid, OP, "ValidationError", msg));
        }
        if rule.actions.iter().any(|a| matches!(a, Action::AuthenticateOidc(o) if o.client_secret.is_none())) {
            let msg = "a client secret is required to create an authenticate-oidc action".to_string();
            return Err(error(ErrorKind::Invalid, OP, "ValidationError", msg));
        }
        if held(&s, listener_arn, rule.priority) {
            return Err(priority_in_use(OP, rule.priority));
        }
        let arn = format!("{}/{}", listener_arn.replace(":listener/", ":listener-rule/"), Self::next_id(&mut s));
        let spec = Rule { actions: as_reported(&rule.actions), ..rule.clone() };
        s.rules.insert(arn.clone(), (listener_arn.to_string(), spec.clone()));
        Ok(Observed { id: arn, spec })
    }

    pub(super) fn change_rule(&self, arn: &str, rule: &Rule) -> Result<(), AwsError> {
        const OP: &str = "ModifyRule";
        let mut s = self.enter(OP, arn)?;
        let listener = s.rules.get(arn).map(|(l, _)| l.clone()).unwrap_or_default();
        check_actions(&s, OP, &listener, &rule.actions)?;
        check_conditions(OP, &rule.conditions)?;
        check_transforms(OP, rule)?;
        let (_, r) = s.rules.get_mut(arn).ok_or_else(|| rule_missing(OP))?;
        r.conditions = rule.conditions.clone();
        r.actions = as_reported(&rule.actions);
        r.transforms = rule.transforms.clone();
        Ok(())
    }

    /// Applied one pair after the other, each needing its priority free: the strictest reading
    /// of AWS, so a plan that passes here cannot collide there.
    pub(super) fn move_rules(&self, priorities: &[(String, u32)]) -> Result<(), AwsError> {
        const OP: &str = "SetRulePriorities";
        let mut s = self.enter(OP, &priorities.iter().map(|(a, _)| a.as_str()).collect::<Vec<_>>().join(","))?;
        for (arn, p) in priorities {
            let listener = s.rules.get(arn).map(|(l, _)| l.clone()).ok_or_else(|| rule_missing(OP))?;
            if held(&s, &listener, *p) {
                return Err(priority_in_use(OP, *p));
            }
            s.rules.get_mut(arn).expect("checked").1.priority = *p;
        }
        Ok(())
    }
}
