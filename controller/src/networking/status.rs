//! The `BackendSecurityGroupRules` status condition: on a binding whose `spec.networking` is at
//! fault (a bad port, CIDR or peer, a rule EC2 refused) it says False with the problem; once fixed,
//! True. A binding that never had a problem is never written, so one tenant's mistake changes no
//! other binding's status.
//!
//! The binding reconciler owns the rest of the status and writes its `conditions` as a whole
//! (a merge patch replaces the list), so this writer keeps every other condition as the cache saw
//! it and sends the cached `resourceVersion`: a write racing another is refused (409) and the next
//! pass, which the binding's change triggers, writes it again.

use crate::context::Context;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use lbc_model::crd::TargetGroupBinding;
use serde_json::json;

/// The condition type (also the Warning events' reason).
pub const CONDITION: &str = "BackendSecurityGroupRules";
/// Reason of the True condition once the problem is gone.
pub const APPLIED: &str = "Applied";

/// The condition a binding should carry: `fault` = (reason, message) of its spec problems.
/// `None`: leave the status alone (no condition to set or clear).
pub fn wanted(tgb: &TargetGroupBinding, fault: Option<(&str, &str)>) -> Option<(bool, String, String)> {
    let current = tgb.status.as_ref().and_then(|s| s.conditions.iter().find(|c| c.type_ == CONDITION));
    match (fault, current) {
        (Some((reason, message)), Some(c)) if c.status == "False" && c.reason == reason && c.message == message => None,
        (Some((reason, message)), _) => Some((false, reason.to_string(), message.to_string())),
        (None, Some(c)) if c.status == "False" => Some((
            true,
            APPLIED.to_string(),
            "every rule of spec.networking is applied on the targets' security groups".to_string(),
        )),
        (None, _) => None,
    }
}

/// The status patch for `want` (from [`wanted`]): every other condition as cached, then ours.
pub fn patch_body(
    tgb: &TargetGroupBinding,
    ok: bool,
    reason: &str,
    message: &str,
    now: jiff::Timestamp,
) -> serde_json::Value {
    let others: Vec<&Condition> =
        tgb.status.iter().flat_map(|s| s.conditions.iter()).filter(|c| c.type_ != CONDITION).collect();
    let mut conditions = serde_json::to_value(others).unwrap_or_else(|_| json!([]));
    let status = if ok { "True" } else { "False" };
    let current = tgb.status.iter().flat_map(|s| s.conditions.iter()).find(|c| c.type_ == CONDITION);
    let since = match current {
        Some(c) if c.status == status => c.last_transition_time.clone(),
        _ => k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now),
    };
    let ours = json!({
        "type": CONDITION,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
        "observedGeneration": tgb.metadata.generation,
    });
    if let Some(list) = conditions.as_array_mut() {
        list.push(ours);
    }
    json!({
        "metadata": {"resourceVersion": tgb.resource_version()},
        "status": {"conditions": conditions},
    })
}

/// Writes the condition when it differs (leader only: the caller checked). Conflicts and a
/// binding gone meanwhile are left to the next pass.
pub async fn write(ctx: &Context, tgb: &TargetGroupBinding, fault: Option<(&str, &str)>) {
    let Some((ok, reason, message)) = wanted(tgb, fault) else { return };
    let api: Api<TargetGroupBinding> = Api::namespaced(ctx.client.clone(), &tgb.namespace().unwrap_or_default());
    let body = patch_body(tgb, ok, &reason, &message, jiff::Timestamp::now());
    match api.patch_status(&tgb.name_any(), &PatchParams::default(), &Patch::Merge(body)).await {
        Ok(_) => {
            tracing::debug!(binding = %tgb.name_any(), ok, reason, "backend security-group rules condition written")
        }
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {
            tracing::debug!(binding = %tgb.name_any(), code = s.code, "condition not written; the next pass retries")
        }
        Err(e) => tracing::warn!(
            binding = %tgb.name_any(),
            namespace = ?tgb.meta().namespace,
            error = %e,
            "could not write the {CONDITION} condition"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tgb(conditions: serde_json::Value) -> TargetGroupBinding {
        serde_json::from_value(json!({
            "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
            "metadata": {"name": "x", "namespace": "a", "resourceVersion": "42", "generation": 3},
            "spec": {"serviceRef": {"name": "s", "port": 80}, "targetGroupARN": "arn"},
            "status": {"conditions": conditions},
        }))
        .unwrap()
    }

    fn ready() -> serde_json::Value {
        json!({"type": "Ready", "status": "True", "reason": "Synced", "message": "1 target",
               "lastTransitionTime": "2026-01-01T00:00:00Z"})
    }

    #[test]
    fn only_a_binding_at_fault_or_just_fixed_is_written() {
        let clean = tgb(json!([ready()]));
        assert_eq!(wanted(&clean, None), None, "never had a problem: untouched");
        assert_eq!(wanted(&clean, Some(("InvalidCIDR", "bad"))), Some((false, "InvalidCIDR".into(), "bad".into())));
        let bad =
            tgb(json!([ready(), {"type": CONDITION, "status": "False", "reason": "InvalidCIDR", "message": "bad",
                                        "lastTransitionTime": "2026-01-01T00:00:00Z"}]));
        assert_eq!(wanted(&bad, Some(("InvalidCIDR", "bad"))), None, "unchanged: no write");
        assert!(wanted(&bad, Some(("InvalidCIDR", "worse"))).is_some());
        assert_eq!(wanted(&bad, None).map(|w| (w.0, w.1)), Some((true, APPLIED.into())));
    }

    #[test]
    fn the_patch_keeps_the_other_conditions_and_is_conditional() {
        let old = json!({"type": CONDITION, "status": "False", "reason": "InvalidCIDR", "message": "bad",
                         "lastTransitionTime": "2026-01-01T00:00:00Z"});
        let body =
            patch_body(&tgb(json!([ready(), old])), false, "NamedPortNotFound", "no port", jiff::Timestamp::UNIX_EPOCH);
        assert_eq!(body["metadata"]["resourceVersion"], "42");
        let list = body["status"]["conditions"].as_array().unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0]["type"], "Ready");
        assert_eq!(list[1]["reason"], "NamedPortNotFound");
        assert_eq!(list[1]["observedGeneration"], 3);
        assert_eq!(list[1]["lastTransitionTime"], "2026-01-01T00:00:00Z", "still False: the transition time stays");
    }
}
