//! After the plan: the load balancer settings AWS keeps behind their own calls (decisions in
//! `lbc_model::lb::extras`): PrivateLink enforcement, minimum capacity, WAFv2 and WAF Classic web
//! ACLs, Shield Advanced protection. Runs every
//! pass, but reads a setting from AWS only when the stack asks for it, so a Service or Ingress
//! without these annotations costs no extra call.

use super::StackIo;
use super::deploy::Resolved;
use crate::error::{Error, Result};
use lbc_model::lb::diff::{MANAGED_FRONTEND_SG, ObservedStack};
use lbc_model::lb::extras::{
    ExtraStep, ObservedExtras, SHIELD_PROTECTION_NAME, WantedExtras, WebAclWanted, plan_extras,
};

/// Applies what differs; returns the summaries of what it changed. `security_groups`: the load
/// balancer's groups as the desired stack names them (the managed frontend group by placeholder).
pub async fn apply(
    io: &StackIo,
    want: &WantedExtras,
    security_groups: &[String],
    observed: &ObservedStack,
    resolved: &Resolved,
) -> Result<Vec<String>> {
    // `--enable-wafv2=false`, `--enable-waf=false`, `--enable-shield=false`: these are not this
    // controller's business (ALBC's meaning), the annotations have no effect.
    let want = &WantedExtras {
        web_acl: want.web_acl.clone().filter(|_| io.options.wafv2),
        waf_classic_acl: want.waf_classic_acl.clone().filter(|_| io.options.waf_classic),
        shield_protection: want.shield_protection.filter(|_| io.options.shield),
        ..want.clone()
    };
    if *want == WantedExtras::default() {
        return Ok(Vec::new());
    }
    let arn = resolved
        .load_balancer_arn
        .clone()
        .ok_or_else(|| Error::Internal("load balancer settings planned before the load balancer exists".into()))?;
    // A load balancer created (or replaced) in this pass has AWS's defaults.
    let same_lb = observed.load_balancer.as_ref().filter(|(o, _)| o.id == arn);
    let seen = ObservedExtras {
        enforce_inbound_rules_on_private_link: same_lb.and_then(|(_, s)| s.enforce_inbound_rules_on_private_link),
        minimum_capacity_units: match want.minimum_capacity_units {
            Some(_) => io.lbs.minimum_capacity(&arn).await?,
            None => None,
        },
        web_acl: match want.web_acl {
            Some(_) => io.waf.web_acl_for(&arn).await?,
            None => None,
        },
        web_acls_by_name: match want.web_acl {
            Some(WebAclWanted::Name(_)) => io.waf.list().await?,
            _ => Vec::new(),
        },
        waf_classic_acl: match want.waf_classic_acl {
            Some(_) => io.waf_classic.web_acl_for(&arn).await?,
            None => None,
        },
        shield_protection: match want.shield_protection {
            Some(_) => io.shield.protection_for(&arn).await?,
            None => None,
        },
    };
    let steps = plan_extras(want, &seen, !security_groups.is_empty()).map_err(Error::Invalid)?;
    for step in &steps {
        io.base.ensure_leader()?;
        match step {
            ExtraStep::SetPrivateLinkEnforcement { on } => {
                let ids: Vec<String> = security_groups
                    .iter()
                    .map(|g| match g.as_str() {
                        MANAGED_FRONTEND_SG => resolved.frontend_security_group.clone().ok_or_else(|| {
                            Error::Internal("the managed frontend security group does not exist yet".into())
                        }),
                        id => Ok(id.to_string()),
                    })
                    .collect::<Result<_>>()?;
                io.lbs.set_private_link_enforcement(&arn, &ids, *on).await?
            }
            ExtraStep::SetMinimumCapacity { units } => io.lbs.set_minimum_capacity(&arn, *units).await?,
            ExtraStep::AssociateWebAcl { arn: acl } => io.waf.associate(acl, &arn).await?,
            ExtraStep::DisassociateWebAcl => io.waf.disassociate(&arn).await?,
            ExtraStep::AssociateWafClassic { id } => io.waf_classic.associate(id, &arn).await?,
            ExtraStep::DisassociateWafClassic => io.waf_classic.disassociate(&arn).await?,
            ExtraStep::CreateShieldProtection => {
                io.shield.create(&arn, SHIELD_PROTECTION_NAME).await?;
            }
            ExtraStep::DeleteShieldProtection { id } => io.shield.delete(id).await?,
        }
    }
    Ok(steps.iter().map(ExtraStep::summary).collect())
}
