//! The tenancy decisions for one Ingress of ours (`crate::tenancy`): may it be selected through the
//! legacy class annotation, join the IngressGroup it names, and set the group-wide settings it
//! sets? Only what the Ingress chose itself is judged: a group or setting that comes from the
//! IngressClassParams is the cluster admin's choice.

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
    fn compatible_mode_reports_the_same_decisions_as_exposures() {
        let t = Tenancy::parse(TenancyMode::Compatible, POLICY, "test").unwrap();
        let member = IngressSettings { group_name: Some("shared".into()), ..Default::default() };
        let c = OwnChoices { via_class_annotation: true, ..choices("team-c", &member) };
        assert_eq!(kinds(&verdicts(&t, &c)), [("ingress-class-annotation", false), ("ingress-group-member", false)]);
    }
}
