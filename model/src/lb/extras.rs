//! Load balancer settings AWS keeps outside the load balancer's own fields, each with its own
//! call: PrivateLink inbound-rule enforcement (an argument of SetSecurityGroups, NLBs with
//! security groups only), the minimum capacity reservation (ModifyCapacityReservation) and the
//! WAFv2 web ACL association (ALBs; WAFv2's own API), the WAF Classic one (WAF Regional's API) and
//! the Shield Advanced protection (Shield's API).
//! `None` on the desired side means "not configured: leave AWS as it is" (ALBC does the same for
//! all three), so removing an annotation never flips a setting someone made by hand — in
//! particular it never strips a web ACL off a load balancer; `none` does that explicitly.

/// What the stack wants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WantedExtras {
    /// `EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic` on (true) / off.
    pub enforce_inbound_rules_on_private_link: Option<bool>,
    /// `MinimumLoadBalancerCapacity.CapacityUnits`; `Some(0)` resets the reservation.
    pub minimum_capacity_units: Option<u32>,
    /// WAFv2 web ACL (`wafv2-acl-arn` / `wafv2-acl-name`).
    pub web_acl: Option<WebAclWanted>,
    /// WAF Classic web ACL (`waf-acl-id` / `web-acl-id`).
    pub waf_classic_acl: Option<WafClassicWanted>,
    /// Shield Advanced protection on (true) / off (`shield-advanced-protection`).
    pub shield_protection: Option<bool>,
}

/// The WAF Classic web ACL an annotation asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WafClassicWanted {
    Id(String),
    /// `none`: no WAF Classic web ACL on this load balancer.
    Disassociate,
}

impl WafClassicWanted {
    pub fn from_id(v: &str) -> Self {
        if v.trim().eq_ignore_ascii_case("none") { Self::Disassociate } else { Self::Id(v.trim().to_string()) }
    }
}

/// The name this controller gives the Shield protections it creates, as ALBC does: only a
/// protection with this name (or ALBC's legacy one) is ever deleted by `shield-advanced-protection:
/// "false"`; one made by hand or by another tool is left alone.
pub const SHIELD_PROTECTION_NAME: &str = "managed by aws-load-balancer-controller";
const SHIELD_PROTECTION_NAME_LEGACY: &str = "managed by aws-alb-ingress-controller";

/// A Shield Advanced protection of one load balancer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShieldProtection {
    pub id: String,
    pub name: String,
}

impl ShieldProtection {
    pub fn is_ours(&self) -> bool {
        self.name == SHIELD_PROTECTION_NAME || self.name == SHIELD_PROTECTION_NAME_LEGACY
    }
}

/// Why a wanted Shield protection cannot be applied, given the account's subscription state
/// (`GetSubscriptionState`: `ACTIVE` or `INACTIVE`); `None` when it can. Asked before anything of
/// the stack is created or changed: the protection fails closed (`annotations::refusals`).
pub fn shield_blocked(want: Option<bool>, subscription_state: &str) -> Option<String> {
    (want == Some(true) && subscription_state != "ACTIVE").then(|| {
        format!(
            "a Shield Advanced protection is wanted but this account has no active Shield Advanced subscription \
             (GetSubscriptionState: {subscription_state}, expected ACTIVE): subscribe the account to Shield \
             Advanced, or remove the annotation to deploy without the protection"
        )
    })
}

/// The web ACL an annotation asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WebAclWanted {
    Arn(String),
    /// Looked up among the region's web ACLs (the controller lists them when this is wanted).
    Name(String),
    /// `none`: no web ACL on this load balancer.
    Disassociate,
}

impl WebAclWanted {
    /// An annotation value: `none` (any case) disassociates, anything else names the ACL.
    pub fn from_arn(v: &str) -> Self {
        if v.trim().eq_ignore_ascii_case("none") { Self::Disassociate } else { Self::Arn(v.trim().to_string()) }
    }

    pub fn from_name(v: &str) -> Self {
        if v.trim().eq_ignore_ascii_case("none") { Self::Disassociate } else { Self::Name(v.trim().to_string()) }
    }
}

/// What AWS reports. Each part is only read when wanted (one call each per pass).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObservedExtras {
    /// `None`: AWS did not say (a load balancer without security groups).
    pub enforce_inbound_rules_on_private_link: Option<bool>,
    /// `None`: no reservation.
    pub minimum_capacity_units: Option<u32>,
    /// ARN of the associated web ACL.
    pub web_acl: Option<String>,
    /// `(name, ARN)` of the region's web ACLs; listed only when a name is wanted.
    pub web_acls_by_name: Vec<(String, String)>,
    /// ID of the associated WAF Classic web ACL.
    pub waf_classic_acl: Option<String>,
    /// The load balancer's Shield Advanced protection.
    pub shield_protection: Option<ShieldProtection>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExtraStep {
    /// SetSecurityGroups with the load balancer's current groups and the enforcement flag.
    SetPrivateLinkEnforcement {
        on: bool,
    },
    /// ModifyCapacityReservation; `None` resets it.
    SetMinimumCapacity {
        units: Option<u32>,
    },
    /// AssociateWebACL (replaces any other association).
    AssociateWebAcl {
        arn: String,
    },
    DisassociateWebAcl,
    /// WAF Regional AssociateWebACL (replaces any other WAF Classic association).
    AssociateWafClassic {
        id: String,
    },
    DisassociateWafClassic,
    /// Shield CreateProtection named [`SHIELD_PROTECTION_NAME`].
    CreateShieldProtection,
    /// Shield DeleteProtection of a protection this controller made.
    DeleteShieldProtection {
        id: String,
    },
}

impl ExtraStep {
    pub fn summary(&self) -> String {
        match self {
            Self::SetPrivateLinkEnforcement { on } => {
                format!("inbound rules on PrivateLink traffic {}", if *on { "enforced" } else { "not enforced" })
            }
            Self::SetMinimumCapacity { units: Some(n) } => format!("minimum capacity {n} units"),
            Self::SetMinimumCapacity { units: None } => "minimum capacity reservation reset".into(),
            Self::AssociateWebAcl { arn } => format!("WAFv2 web ACL {arn} associated"),
            Self::DisassociateWebAcl => "WAFv2 web ACL disassociated".into(),
            Self::AssociateWafClassic { id } => format!("WAF Classic web ACL {id} associated"),
            Self::DisassociateWafClassic => "WAF Classic web ACL disassociated".into(),
            Self::CreateShieldProtection => "Shield Advanced protection created".into(),
            Self::DeleteShieldProtection { id } => format!("Shield Advanced protection {id} deleted"),
        }
    }
}

/// Steps that bring AWS to what is wanted. A problem (the setting cannot apply to this load
/// balancer) is an `Err` naming the annotation's effect and the fix.
pub fn plan_extras(
    want: &WantedExtras,
    observed: &ObservedExtras,
    has_security_groups: bool,
) -> Result<Vec<ExtraStep>, String> {
    let mut steps = Vec::new();
    if let Some(on) = want.enforce_inbound_rules_on_private_link {
        if !has_security_groups {
            return Err(format!(
                "inbound-rule enforcement on PrivateLink traffic ({}) needs a load balancer with security groups; \
                 this one has none (disable-nlb-sg, or created without them): remove the annotation",
                if on { "on" } else { "off" }
            ));
        }
        // AWS's default for a load balancer with security groups is "on".
        if observed.enforce_inbound_rules_on_private_link.unwrap_or(true) != on {
            steps.push(ExtraStep::SetPrivateLinkEnforcement { on });
        }
    }
    match want.minimum_capacity_units {
        Some(0) if observed.minimum_capacity_units.is_some_and(|n| n > 0) => {
            steps.push(ExtraStep::SetMinimumCapacity { units: None })
        }
        Some(n) if n > 0 && observed.minimum_capacity_units != Some(n) => {
            steps.push(ExtraStep::SetMinimumCapacity { units: Some(n) })
        }
        _ => {}
    }
    let acl = match &want.web_acl {
        None => None,
        Some(WebAclWanted::Disassociate) => {
            if observed.web_acl.is_some() {
                steps.push(ExtraStep::DisassociateWebAcl);
            }
            None
        }
        Some(WebAclWanted::Arn(arn)) => Some(arn.clone()),
        Some(WebAclWanted::Name(name)) => {
            let found: Vec<&String> =
                observed.web_acls_by_name.iter().filter(|(n, _)| n == name).map(|(_, a)| a).collect();
            match found.as_slice() {
                [arn] => Some((*arn).clone()),
                [] => {
                    return Err(format!(
                        "no WAFv2 web ACL named {name:?} in this region (REGIONAL scope; {} found: {}); create it, \
                         fix the name, or use wafv2-acl-arn",
                        observed.web_acls_by_name.len(),
                        preview(&observed.web_acls_by_name)
                    ));
                }
                _ => {
                    return Err(format!(
                        "{} WAFv2 web ACLs are named {name:?} in this region; name one by its ARN with wafv2-acl-arn",
                        found.len()
                    ));
                }
            }
        }
    };
    let classic = match &want.waf_classic_acl {
        None => None,
        Some(WafClassicWanted::Disassociate) => {
            if observed.waf_classic_acl.is_some() {
                steps.push(ExtraStep::DisassociateWafClassic);
            }
            None
        }
        Some(WafClassicWanted::Id(id)) => Some(id.clone()),
    };
    // AWS associates a load balancer with one web ACL, of either WAF: asking for both is refused
    // before any call rather than left to whichever association runs last.
    if let (Some(v2), Some(id)) = (&acl, &classic) {
        return Err(format!(
            "both a WAFv2 web ACL ({v2}) and a WAF Classic web ACL ({id}) are wanted; a load balancer takes one: \
             remove waf-acl-id/web-acl-id or wafv2-acl-arn/wafv2-acl-name (set the other to none to move over)"
        ));
    }
    if let Some(arn) = acl
        && observed.web_acl.as_ref() != Some(&arn)
    {
        steps.push(ExtraStep::AssociateWebAcl { arn });
    }
    if let Some(id) = classic
        && observed.waf_classic_acl.as_ref() != Some(&id)
    {
        steps.push(ExtraStep::AssociateWafClassic { id });
    }
    match (want.shield_protection, &observed.shield_protection) {
        (Some(true), None) => steps.push(ExtraStep::CreateShieldProtection),
        (Some(false), Some(p)) if p.is_ours() => steps.push(ExtraStep::DeleteShieldProtection { id: p.id.clone() }),
        // On and already protected (whoever made it), off and not ours, or not asked: as it is.
        _ => {}
    }
    Ok(steps)
}

/// The first few names of a list, for an error message.
fn preview(acls: &[(String, String)]) -> String {
    let mut names: Vec<&str> = acls.iter().take(5).map(|(n, _)| n.as_str()).collect();
    if acls.len() > 5 {
        names.push("…");
    }
    if names.is_empty() { "none".into() } else { names.join(", ") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn want(link: Option<bool>, units: Option<u32>) -> WantedExtras {
        WantedExtras {
            enforce_inbound_rules_on_private_link: link,
            minimum_capacity_units: units,
            ..Default::default()
        }
    }

    fn seen(link: Option<bool>, units: Option<u32>) -> ObservedExtras {
        ObservedExtras {
            enforce_inbound_rules_on_private_link: link,
            minimum_capacity_units: units,
            ..Default::default()
        }
    }

    fn acl(want: Option<WebAclWanted>, seen: Option<&str>) -> Result<Vec<ExtraStep>, String> {
        let w = WantedExtras { web_acl: want, ..Default::default() };
        let o = ObservedExtras {
            web_acl: seen.map(String::from),
            web_acls_by_name: vec![
                ("a".into(), "arn:a".into()),
                ("b".into(), "arn:b".into()),
                ("d".into(), "arn:d1".into()),
                ("d".into(), "arn:d2".into()),
            ],
            ..Default::default()
        };
        plan_extras(&w, &o, true)
    }

    #[test]
    fn web_acl_follows_arn_name_and_none_and_is_left_alone_without_annotation() {
        use ExtraStep::*;
        use WebAclWanted::*;
        let arn = |s: &str| Arn(s.into());
        type Case<'a> = (&'a str, Option<WebAclWanted>, Option<&'a str>, Vec<ExtraStep>);
        let cases: &[Case<'_>] = &[
            ("no annotation, one associated by hand: left alone", None, Some("arn:x"), vec![]),
            ("no annotation, none associated", None, None, vec![]),
            ("associate", Some(arn("arn:a")), None, vec![AssociateWebAcl { arn: "arn:a".into() }]),
            ("already associated", Some(arn("arn:a")), Some("arn:a"), vec![]),
            ("replace", Some(arn("arn:b")), Some("arn:a"), vec![AssociateWebAcl { arn: "arn:b".into() }]),
            ("by name", Some(Name("b".into())), None, vec![AssociateWebAcl { arn: "arn:b".into() }]),
            ("by name, already", Some(Name("b".into())), Some("arn:b"), vec![]),
            ("none removes", Some(Disassociate), Some("arn:a"), vec![DisassociateWebAcl]),
            ("none with nothing associated", Some(Disassociate), None, vec![]),
        ];
        for (what, w, o, steps) in cases {
            assert_eq!(&acl(w.clone(), *o).unwrap(), steps, "{what}");
        }
    }

    #[test]
    fn web_acl_names_that_do_not_resolve_are_refused_with_the_fix() {
        let e = acl(Some(WebAclWanted::Name("zz".into())), None).unwrap_err();
        assert!(
            e.contains("no WAFv2 web ACL named \"zz\"") && e.contains("a, b, d, d") && e.contains("wafv2-acl-arn"),
            "{e}"
        );
        let e = acl(Some(WebAclWanted::Name("d".into())), None).unwrap_err();
        assert!(e.contains("2 WAFv2 web ACLs are named \"d\""), "{e}");
        assert_eq!(WebAclWanted::from_arn(" None "), WebAclWanted::Disassociate);
        assert_eq!(WebAclWanted::from_name("web"), WebAclWanted::Name("web".into()));
        assert_eq!(WebAclWanted::from_arn("arn:aws:wafv2:x"), WebAclWanted::Arn("arn:aws:wafv2:x".into()));
    }

    #[test]
    fn only_differences_become_steps() {
        use ExtraStep::*;
        let cases: &[(&str, WantedExtras, ObservedExtras, Vec<ExtraStep>)] = &[
            ("nothing configured: AWS left alone", want(None, None), seen(Some(false), Some(100)), vec![]),
            (
                "off on a fresh NLB (AWS default on)",
                want(Some(false), None),
                seen(None, None),
                vec![SetPrivateLinkEnforcement { on: false }],
            ),
            ("on, AWS default already on", want(Some(true), None), seen(None, None), vec![]),
            ("off, already off", want(Some(false), None), seen(Some(false), None), vec![]),
            ("on again", want(Some(true), None), seen(Some(false), None), vec![SetPrivateLinkEnforcement { on: true }]),
            ("reserve", want(None, Some(1500)), seen(None, None), vec![SetMinimumCapacity { units: Some(1500) }]),
            ("same reservation", want(None, Some(1500)), seen(None, Some(1500)), vec![]),
            ("change", want(None, Some(2000)), seen(None, Some(1500)), vec![SetMinimumCapacity { units: Some(2000) }]),
            ("0 resets", want(None, Some(0)), seen(None, Some(1500)), vec![SetMinimumCapacity { units: None }]),
            ("0 with nothing reserved", want(None, Some(0)), seen(None, None), vec![]),
            (
                "both",
                want(Some(false), Some(10)),
                seen(Some(true), None),
                vec![SetPrivateLinkEnforcement { on: false }, SetMinimumCapacity { units: Some(10) }],
            ),
        ];
        for (what, w, o, steps) in cases {
            assert_eq!(&plan_extras(w, o, true).unwrap(), steps, "{what}");
        }
    }

    #[test]
    fn enforcement_without_security_groups_is_refused_with_the_fix() {
        let e = plan_extras(&want(Some(false), None), &seen(None, None), false).unwrap_err();
        assert!(e.contains("needs a load balancer with security groups") && e.contains("remove the annotation"), "{e}");
        assert_eq!(plan_extras(&want(None, Some(5)), &seen(None, None), false).unwrap().len(), 1);
    }

    #[test]
    fn waf_classic_follows_id_and_none_and_refuses_two_wafs() {
        use ExtraStep::*;
        let plan = |want: Option<&str>, v2: Option<&str>, seen: Option<&str>| {
            let w = WantedExtras {
                waf_classic_acl: want.map(WafClassicWanted::from_id),
                web_acl: v2.map(WebAclWanted::from_arn),
                ..Default::default()
            };
            plan_extras(&w, &ObservedExtras { waf_classic_acl: seen.map(String::from), ..Default::default() }, true)
        };
        assert_eq!(plan(Some("acl-1"), None, None), Ok(vec![AssociateWafClassic { id: "acl-1".into() }]));
        assert_eq!(plan(Some("acl-1"), None, Some("acl-1")), Ok(vec![]));
        assert_eq!(plan(Some("acl-2"), None, Some("acl-1")), Ok(vec![AssociateWafClassic { id: "acl-2".into() }]));
        assert_eq!(plan(Some("None"), None, Some("acl-1")), Ok(vec![DisassociateWafClassic]));
        assert_eq!(plan(Some("none"), None, None), Ok(vec![]));
        assert_eq!(plan(None, None, Some("acl-1")), Ok(vec![]), "no annotation: left as it is");
        // Moving from one WAF to the other: `none` on the old one.
        assert_eq!(
            plan(Some("none"), Some("arn:v2"), Some("acl-1")),
            Ok(vec![DisassociateWafClassic, AssociateWebAcl { arn: "arn:v2".into() }])
        );
        let both = plan(Some("acl-1"), Some("arn:v2"), None).unwrap_err();
        assert!(both.contains("acl-1") && both.contains("arn:v2") && both.contains("takes one"), "{both}");
    }

    #[test]
    fn shield_creates_ours_deletes_only_ours_and_blocks_without_a_subscription() {
        use ExtraStep::*;
        let p = |name: &str| ShieldProtection { id: "p-1".into(), name: name.into() };
        let plan = |want: Option<bool>, seen: Option<ShieldProtection>| {
            let w = WantedExtras { shield_protection: want, ..Default::default() };
            plan_extras(&w, &ObservedExtras { shield_protection: seen, ..Default::default() }, true).unwrap()
        };
        assert_eq!(plan(Some(true), None), vec![CreateShieldProtection]);
        assert_eq!(plan(Some(true), Some(p("by hand"))), vec![], "protected already, whoever made it");
        assert_eq!(
            plan(Some(false), Some(p(SHIELD_PROTECTION_NAME))),
            vec![DeleteShieldProtection { id: "p-1".into() }]
        );
        assert_eq!(
            plan(Some(false), Some(p(SHIELD_PROTECTION_NAME_LEGACY))),
            vec![DeleteShieldProtection { id: "p-1".into() }]
        );
        assert_eq!(plan(Some(false), Some(p("by hand"))), vec![], "not ours: left alone");
        assert_eq!(plan(None, Some(p(SHIELD_PROTECTION_NAME))), vec![], "no annotation: left as it is");

        assert_eq!(shield_blocked(Some(true), "ACTIVE"), None);
        assert_eq!(shield_blocked(Some(false), "INACTIVE"), None);
        assert_eq!(shield_blocked(None, "INACTIVE"), None);
        let why = shield_blocked(Some(true), "INACTIVE").unwrap();
        assert!(why.contains("INACTIVE") && why.contains("expected ACTIVE") && why.contains("remove the annotation"));
    }
}
