//! Load balancer settings AWS keeps outside the load balancer's own fields, each with its own
//! call: PrivateLink inbound-rule enforcement (an argument of SetSecurityGroups, NLBs with
//! security groups only) and the minimum capacity reservation (ModifyCapacityReservation).
//! `None` on the desired side means "not configured: leave AWS as it is" (ALBC does the same for
//! both), so removing the annotation never flips a setting someone made by hand.

/// What the stack wants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WantedExtras {
    /// `EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic` on (true) / off.
    pub enforce_inbound_rules_on_private_link: Option<bool>,
    /// `MinimumLoadBalancerCapacity.CapacityUnits`; `Some(0)` resets the reservation.
    pub minimum_capacity_units: Option<u32>,
}

/// What AWS reports. `minimum_capacity_units` is only read when wanted (one call per pass).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObservedExtras {
    /// `None`: AWS did not say (a load balancer without security groups).
    pub enforce_inbound_rules_on_private_link: Option<bool>,
    /// `None`: no reservation.
    pub minimum_capacity_units: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExtraStep {
    /// SetSecurityGroups with the load balancer's current groups and the enforcement flag.
    SetPrivateLinkEnforcement { on: bool },
    /// ModifyCapacityReservation; `None` resets it.
    SetMinimumCapacity { units: Option<u32> },
}

impl ExtraStep {
    pub fn summary(&self) -> String {
        match self {
            Self::SetPrivateLinkEnforcement { on } => {
                format!("inbound rules on PrivateLink traffic {}", if *on { "enforced" } else { "not enforced" })
            }
            Self::SetMinimumCapacity { units: Some(n) } => format!("minimum capacity {n} units"),
            Self::SetMinimumCapacity { units: None } => "minimum capacity reservation reset".into(),
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
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn want(link: Option<bool>, units: Option<u32>) -> WantedExtras {
        WantedExtras { enforce_inbound_rules_on_private_link: link, minimum_capacity_units: units }
    }

    fn seen(link: Option<bool>, units: Option<u32>) -> ObservedExtras {
        ObservedExtras { enforce_inbound_rules_on_private_link: link, minimum_capacity_units: units }
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
