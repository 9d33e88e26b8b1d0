//! After the plan: the load balancer settings AWS keeps behind their own calls (decisions in
//! `lbc_model::lb::extras`). Runs every pass, but reads the capacity reservation only when the
//! Service asks for one, so a Service without these annotations costs nothing extra.

use super::ServiceCtx;
use crate::error::{Error, Result};
use crate::stack::deploy::Resolved;
use lbc_model::lb::diff::{MANAGED_FRONTEND_SG, ObservedStack};
use lbc_model::lb::extras::{ExtraStep, ObservedExtras, WantedExtras, plan_extras};
use lbc_model::service::ServiceStack;

/// Applies what differs; returns the summaries of what it changed.
pub(super) async fn apply(
    ctx: &ServiceCtx,
    built: &ServiceStack,
    observed: &ObservedStack,
    resolved: &Resolved,
) -> Result<Vec<String>> {
    let want = WantedExtras {
        enforce_inbound_rules_on_private_link: built.extras.enforce_inbound_rules_on_private_link,
        minimum_capacity_units: built.extras.minimum_capacity_units,
    };
    if want == WantedExtras::default() {
        return Ok(Vec::new());
    }
    let arn = resolved
        .load_balancer_arn
        .clone()
        .ok_or_else(|| Error::Invalid("load balancer settings planned before the load balancer exists".into()))?;
    // A load balancer created (or replaced) in this pass has AWS's defaults.
    let same_lb = observed.load_balancer.as_ref().filter(|(o, _)| o.id == arn);
    let seen = ObservedExtras {
        enforce_inbound_rules_on_private_link: same_lb.and_then(|(_, s)| s.enforce_inbound_rules_on_private_link),
        minimum_capacity_units: match want.minimum_capacity_units {
            Some(_) => ctx.io.lbs.minimum_capacity(&arn).await?,
            None => None,
        },
    };
    let groups = &built.stack.load_balancer.security_groups;
    let steps = plan_extras(&want, &seen, !groups.is_empty()).map_err(Error::Invalid)?;
    for step in &steps {
        ctx.io.base.ensure_leader()?;
        match step {
            ExtraStep::SetPrivateLinkEnforcement { on } => {
                let ids: Vec<String> = groups
                    .iter()
                    .map(|g| match g.as_str() {
                        MANAGED_FRONTEND_SG => resolved.frontend_security_group.clone().ok_or_else(|| {
                            Error::Invalid("the managed frontend security group does not exist yet".into())
                        }),
                        id => Ok(id.to_string()),
                    })
                    .collect::<Result<_>>()?;
                ctx.io.lbs.set_private_link_enforcement(&arn, &ids, *on).await?
            }
            ExtraStep::SetMinimumCapacity { units } => ctx.io.lbs.set_minimum_capacity(&arn, *units).await?,
        }
    }
    Ok(steps.iter().map(ExtraStep::summary).collect())
}
