//! The tenancy decisions for one Ingress of ours (`crate::tenancy`): may it be selected through the
//! legacy class annotation, join the IngressGroup it names, and set the group-wide settings it
//! sets? Only what the Ingress chose itself is judged: a group or setting that comes from the
//! IngressClassParams is the cluster admin's choice.

use super::actions::{ForwardTarget, RuleAction};
use super::annotations::IngressSettings;
use super::group::group_wide_settings;
use super::keys::full_key;
use crate::tenancy::{Tenancy, Verdict};

/// What an Ingress chose for itself.
#[derive(Clone, Copy, Debug)]
pub struct OwnChoices<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    /// Selected by `kubernetes.io/ingress.class` rather than `spec.ingressClassName`.
    pub via_class_annotation: bool,
    /// Its annotations alone, before the IngressClassParams were applied.
    pub own: &'a IngressSettings,
    /// The IngressClassParams set the group (`spec.group`): then the admin chose it.
    pub group_from_params: bool,
}

/// Every decision that is not a plain allow, in a stable order (a refusal in strict mode, an
/// exposure in compatible mode).
pub fn verdicts(t: &Tenancy, c: &OwnChoices<'_>) -> Vec<Verdict> {
    let mut out = Vec::new();
    if c.via_class_annotation {
        out.push(t.legacy_class_annotation(c.namespace, c.name));
    }
    if let (Some(group), false) = (c.own.group_name.as_deref(), c.group_from_params) {
        out.push(t.ingress_group_member(c.namespace, c.name, group));
        for key in group_wide_settings(c.own) {
            out.push(t.ingress_group_setting(c.namespace, c.name, group, &full_key(key)));
        }
    }
    let object = format!("Ingress {}/{}", c.namespace, c.name);
    for (action, a) in &c.own.actions {
        let RuleAction::Forward { target_groups, .. } = a else { continue };
        for w in target_groups {
            if let ForwardTarget::Arn(tg) | ForwardTarget::Name(tg) = &w.target {
                let key = full_key(&format!("actions.{action}"));
                out.push(t.forward_target_group(c.namespace, &object, &key, tg));
            }
        }
    }
    out.retain(|v| *v != Verdict::Allowed);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lb::Scheme;
    use crate::tenancy::TenancyMode;

    fn strict(json: &str) -> Tenancy {
        Tenancy::parse(TenancyMode::Strict, json, "test").unwrap()
    }

    fn choices<'a>(ns: &'a str, own: &'a IngressSettings) -> OwnChoices<'a> {
        OwnChoices { namespace: ns, name: "web", via_class_annotation: false, own, group_from_params: false }
    }

    fn kinds(v: &[Verdict]) -> Vec<(&'static str, bool)> {
        v.iter()
            .map(|v| match v {
                Verdict::Refused(r) => (r.kind, true),
                Verdict::Exposed(e) => (e.kind, false),
                Verdict::Allowed => unreachable!("allows are filtered out"),
            })
            .collect()
    }

    const POLICY: &str =
        r#"{"ingressGroups": [{"group": "shared", "namespaces": ["team-a", "team-b"], "owner": "team-a"}]}"#;

    #[test]
    fn members_and_group_wide_settings_are_judged_on_what_the_ingress_chose() {
        let t = strict(POLICY);
        let member = IngressSettings { group_name: Some("shared".into()), ..Default::default() };
        let with_sg = IngressSettings {
            security_groups: Some(vec!["sg-1".into()]),
            scheme: Some(Scheme::InternetFacing),
            ..member.clone()
        };
        let alone = IngressSettings { scheme: Some(Scheme::InternetFacing), ..Default::default() };
        type Row<'a> = (&'a str, &'a IngressSettings, bool, bool, Vec<(&'static str, bool)>);
        let rows: Vec<Row<'_>> = vec![
            // namespace, own settings, via annotation, group from params, expected
            ("team-b", &member, false, false, vec![]),
            ("team-c", &member, false, false, vec![("ingress-group-member", true)]),
            ("team-a", &with_sg, false, false, vec![]), // the owner
            (
                "team-b",
                &with_sg,
                false,
                false,
                vec![("ingress-group-settings", true), ("ingress-group-settings", true)],
            ),
            ("team-c", &member, false, true, vec![]), // the admin's params chose the group
            ("team-c", &alone, false, false, vec![]), // an implicit group is its own
            ("team-b", &member, true, false, vec![("ingress-class-annotation", true)]),
        ];
        for (ns, own, annotation, from_params, want) in rows {
            let c = OwnChoices { via_class_annotation: annotation, group_from_params: from_params, ..choices(ns, own) };
            assert_eq!(kinds(&verdicts(&t, &c)), want, "{ns} {own:?} annotation={annotation} params={from_params}");
        }
        let v = verdicts(&t, &choices("team-b", &with_sg));
        let Verdict::Refused(r) = &v[0] else { panic!("{v:?}") };
        assert!(r.detail.contains("alb.ingress.kubernetes.io/"), "names the annotation: {r}");
    }

    #[test]
    fn forwards_to_target_groups_by_arn_or_name_need_a_grant_by_arn_or_name() {
        const ARN: &str = "arn:aws:elasticloadbalancing:us-east-1:111122223333:targetgroup/payments/0123456789abcdef";
        let policy = r#"{"targetGroups": [
            {"namespaces": ["team-a"], "arns": ["arn:aws:elasticloadbalancing:us-east-1:111122223333:targetgroup/payments/0123456789abcdef"]},
            {"namespaces": ["team-b"], "names": ["payments"]},
            {"namespaces": ["team-c"], "tags": {"team": "c"}}]}"#;
        let t = strict(policy);
        let forward = |target: ForwardTarget| {
            let a = RuleAction::Forward {
                target_groups: vec![super::super::actions::WeightedTarget { target, weight: None }],
                stickiness_seconds: None,
            };
            IngressSettings { actions: [("pay".to_string(), a)].into(), ..Default::default() }
        };
        let (by_arn, by_name) =
            (forward(ForwardTarget::Arn(ARN.into())), forward(ForwardTarget::Name("payments".into())));
        type Row<'a> = (&'a str, &'a IngressSettings, Vec<(&'static str, bool)>);
        let rows: Vec<Row<'_>> = vec![
            ("team-a", &by_arn, vec![]),
            ("team-a", &by_name, vec![("forward-target-group", true)]), // granted by ARN only
            ("team-b", &by_arn, vec![]),
            ("team-b", &by_name, vec![]),
            ("team-c", &by_arn, vec![("forward-target-group", true)]), // tag grants are not read for forwards
            ("team-d", &by_arn, vec![("forward-target-group", true)]),
        ];
        for (ns, own, want) in rows {
            assert_eq!(kinds(&verdicts(&t, &choices(ns, own))), want, "{ns} {own:?}");
        }
        let v = verdicts(&t, &choices("team-d", &by_arn));
        let Verdict::Refused(r) = &v[0] else { panic!("{v:?}") };
        assert!(r.detail.contains("alb.ingress.kubernetes.io/actions.pay") && r.detail.contains(ARN), "{r}");
        let compatible = Tenancy::parse(TenancyMode::Compatible, policy, "test").unwrap();
        assert_eq!(kinds(&verdicts(&compatible, &choices("team-d", &by_arn))), [("forward-target-group", false)]);
    }

    #[test]
    fn compatible_mode_reports_the_same_decisions_as_exposures() {
        let t = Tenancy::parse(TenancyMode::Compatible, POLICY, "test").unwrap();
        let member = IngressSettings { group_name: Some("shared".into()), ..Default::default() };
        let c = OwnChoices { via_class_annotation: true, ..choices("team-c", &member) };
        assert_eq!(kinds(&verdicts(&t, &c)), [("ingress-class-annotation", false), ("ingress-group-member", false)]);
    }
}
