//! Load balancer settings AWS keeps outside the load balancer's own fields, each with its own
//! call: PrivateLink inbound-rule enforcement (an argument of SetSecurityGroups, NLBs with
//! security groups only), the minimum capacity reservation (ModifyCapacityReservation) and the
//! WAFv2 web ACL association (ALBs; WAFv2's own API).
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
    if let Some(arn) = acl
        && observed.web_acl.as_ref() != Some(&arn)
    {
        steps.push(ExtraStep::AssociateWebAcl { arn });
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
        WantedExtras { enforce_inbound_rules_on_private_link: link, minimum_capacity_units: units, web_acl: None }
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
}
