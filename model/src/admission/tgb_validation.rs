//! TargetGroupBindings: what the validator refuses.

use super::Violation;
use super::tgb_defaults::{TargetGroupFacts, TargetGroupLookup, non_empty, parse_ip_address_type, parse_target_type};
use crate::crd::{
    RoleToAssume, TargetGroupBinding, TargetGroupBindingSpec, TargetGroupIpAddressType, TargetGroupProtocol, TargetType,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::fmt;

fn target_type_str(t: TargetType) -> &'static str {
    match t {
        TargetType::Ip => "ip",
        TargetType::Instance => "instance",
    }
}

fn ip_type_str(t: TargetGroupIpAddressType) -> &'static str {
    match t {
        TargetGroupIpAddressType::Ipv4 => "ipv4",
        TargetGroupIpAddressType::Ipv6 => "ipv6",
    }
}

fn protocol_str(p: TargetGroupProtocol) -> String {
    serde_json::to_value(p).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

pub(super) fn unsupported_target_type(tg: &TargetGroupFacts) -> Violation {
    Violation::new(
        "spec.targetType",
        "unsupported_target_type",
        format!(
            "target group {} has target type {:?}; a TargetGroupBinding can only bind target groups of type \"ip\" or \
             \"instance\". Bind a target group of one of those types instead.",
            tg.arn, tg.target_type
        ),
    )
}

/// Whether an ARN looks like a target group ARN
/// (`arn:<partition>:elasticloadbalancing:<region>:<account>:targetgroup/<name>/<id>`).
pub fn is_target_group_arn(arn: &str) -> bool {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    parts.len() == 6
        && parts[0] == "arn"
        && !parts[1].is_empty()
        && parts[2] == "elasticloadbalancing"
        && parts[5]
            .strip_prefix("targetgroup/")
            .is_some_and(|rest| rest.split('/').filter(|p| !p.is_empty()).count() == 2)
}

/// Checks that do not need other objects or AWS: required fields and combinations that
/// cannot work.
pub fn validate_tgb_spec(spec: &TargetGroupBindingSpec) -> Vec<Violation> {
    let mut v = Vec::new();
    if spec.service_ref.name.trim().is_empty() {
        v.push(Violation::new(
            "spec.serviceRef.name",
            "missing_service_name",
            "spec.serviceRef.name is empty; set it to the name of the Service, in this TargetGroupBinding's namespace, \
             whose endpoints should be registered in the target group.",
        ));
    }
    match &spec.service_ref.port {
        IntOrString::Int(p) if !(1..=65535).contains(p) => v.push(Violation::new(
            "spec.serviceRef.port",
            "invalid_service_port",
            format!(
                "spec.serviceRef.port is {p}; expected a port of the Service, as a number from 1 to 65535 or as the \
                 port's name. Set it to one of the Service's spec.ports."
            ),
        )),
        IntOrString::String(s) if s.trim().is_empty() => v.push(Violation::new(
            "spec.serviceRef.port",
            "invalid_service_port",
            "spec.serviceRef.port is an empty string; expected a port of the Service, as a number from 1 to 65535 or \
             as the port's name. Set it to one of the Service's spec.ports.",
        )),
        _ => {}
    }
    match (non_empty(&spec.target_group_arn), non_empty(&spec.target_group_name)) {
        (None, None) => v.push(Violation::new(
            "spec.targetGroupARN",
            "missing_target_group",
            "neither spec.targetGroupARN nor spec.targetGroupName is set; set one of them to the target group to bind \
             (the ARN wins when both are set).",
        )),
        (Some(arn), _) if !is_target_group_arn(arn) => v.push(Violation::new(
            "spec.targetGroupARN",
            "invalid_target_group_arn",
            format!(
                "spec.targetGroupARN is {arn:?}, which is not a target group ARN; expected \
                 arn:<partition>:elasticloadbalancing:<region>:<account>:targetgroup/<name>/<id>. Copy the ARN from \
                 the target group, or set spec.targetGroupName instead."
            ),
        )),
        _ => {}
    }
    let tt = spec.effective_target_type();
    if tt == TargetType::Ip && spec.node_selector.is_some() {
        v.push(Violation::new(
            "spec.nodeSelector",
            "node_selector_with_ip",
            "spec.nodeSelector is set but spec.targetType is \"ip\"; a nodeSelector only chooses which nodes are \
             instance targets. Remove spec.nodeSelector, or bind a target group of type \"instance\".",
        ));
    }
    if tt == TargetType::Instance
        && let Some(role) = non_empty(&spec.iam_role_arn_to_assume)
    {
        v.push(Violation::new(
            "spec.iamRoleArnToAssume",
            "assume_role_with_instance",
            format!(
                "spec.iamRoleArnToAssume is {role:?} but spec.targetType is \"instance\"; a role in another account \
                 can only be used with ip targets. Remove spec.iamRoleArnToAssume, or bind a target group of type \
                 \"ip\"."
            ),
        ));
    }
    if tt == TargetType::Instance
        && let Some(p @ (TargetGroupProtocol::QUIC | TargetGroupProtocol::TcpQuic)) = spec.target_group_protocol
    {
        v.push(Violation::new(
            "spec.targetGroupProtocol",
            "quic_with_instance",
            format!(
                "spec.targetGroupProtocol is {} but spec.targetType is \"instance\"; QUIC targets must be pod IPs \
                 (AWS routes QUIC by the server ID each pod holds). Bind a target group of type \"ip\".",
                protocol_str(p)
            ),
        ));
    }
    v
}

fn immutable<T: PartialEq + fmt::Debug>(
    out: &mut Vec<Violation>,
    field: &'static str,
    old: Option<T>,
    new: Option<T>,
    show: impl Fn(&T) -> String,
) {
    let Some(old) = old else { return };
    if new.as_ref() == Some(&old) {
        return;
    }
    let change = match &new {
        Some(n) => format!("this update sets {}", show(n)),
        None => "this update removes it".to_string(),
    };
    out.push(Violation::new(
        field,
        "immutable_field",
        format!(
            "{field} is immutable: it is {} and {change}. Restore {field}: {}, or create a new TargetGroupBinding with \
             the new value and delete this one.",
            show(&old),
            show(&old).trim_matches('"'),
        ),
    ));
}

/// Fields that cannot change once set: targetGroupARN, targetType, ipAddressType, vpcID.
/// A field the old object did not have may be set (that is what defaulting does).
pub fn validate_tgb_update(old: &TargetGroupBindingSpec, new: &TargetGroupBindingSpec) -> Vec<Violation> {
    let mut v = Vec::new();
    let q = |s: &&str| format!("{s:?}");
    immutable(&mut v, "spec.targetGroupARN", non_empty(&old.target_group_arn), non_empty(&new.target_group_arn), q);
    immutable(&mut v, "spec.targetType", old.target_type.map(target_type_str), new.target_type.map(target_type_str), q);
    immutable(
        &mut v,
        "spec.ipAddressType",
        old.ip_address_type.map(ip_type_str),
        new.ip_address_type.map(ip_type_str),
        q,
    );
    immutable(&mut v, "spec.vpcID", non_empty(&old.vpc_id), non_empty(&new.vpc_id), q);
    v
}

/// Whether an UPDATE changed a field that must be checked against the target group again.
pub fn target_group_fields_changed(old: &TargetGroupBindingSpec, new: &TargetGroupBindingSpec) -> bool {
    old.target_group_arn != new.target_group_arn
        || old.target_group_name != new.target_group_name
        || old.target_type != new.target_type
        || old.ip_address_type != new.ip_address_type
        || old.vpc_id != new.vpc_id
        || old.target_group_protocol != new.target_group_protocol
        // The same ARN read as another role may be another account's answer.
        || old.role_to_assume() != new.role_to_assume()
}

fn key(tgb: &TargetGroupBinding) -> String {
    format!(
        "{}/{}",
        tgb.metadata.namespace.as_deref().unwrap_or_default(),
        tgb.metadata.name.as_deref().unwrap_or_default()
    )
}

/// A target group may be bound by one TargetGroupBinding in the cluster, or by several when
/// every one of them is `multiClusterTargetGroup: true` (each then deregisters only the
/// targets it registered). `others` are all bindings in the cluster; the binding itself
/// (`namespace`/`name`) is skipped.
pub fn validate_tgb_unique(
    namespace: &str,
    name: &str,
    spec: &TargetGroupBindingSpec,
    others: &[&TargetGroupBinding],
) -> Vec<Violation> {
    let Some(arn) = non_empty(&spec.target_group_arn) else {
        return Vec::new();
    };
    let mut conflicts: Vec<&TargetGroupBinding> = others
        .iter()
        .copied()
        .filter(|o| !(o.metadata.namespace.as_deref() == Some(namespace) && o.metadata.name.as_deref() == Some(name)))
        .filter(|o| non_empty(&o.spec.target_group_arn) == Some(arn))
        .collect();
    if conflicts.is_empty() || (spec.is_multi_cluster() && conflicts.iter().all(|o| o.spec.is_multi_cluster())) {
        return Vec::new();
    }
    conflicts.sort_by_key(|o| key(o));
    let list = conflicts
        .iter()
        .take(5)
        .map(|o| {
            let mut s = format!("{} (multiClusterTargetGroup: {})", key(o), o.spec.is_multi_cluster());
            if o.metadata.deletion_timestamp.is_some() {
                s.push_str(" [being deleted: wait until it is gone]");
            }
            s
        })
        .collect::<Vec<_>>()
        .join(", ");
    let more = if conflicts.len() > 5 { format!(" and {} more", conflicts.len() - 5) } else { String::new() };
    let to_fix: Vec<String> = std::iter::once(format!("{namespace}/{name}"))
        .filter(|_| !spec.is_multi_cluster())
        .chain(conflicts.iter().filter(|o| !o.spec.is_multi_cluster()).map(|o| key(o)))
        .collect();
    vec![Violation::new(
        "spec.targetGroupARN",
        "target_group_already_bound",
        format!(
            "target group {arn} is already bound by TargetGroupBinding {list}{more}; this binding has \
             multiClusterTargetGroup: {}. A target group can be bound more than once only when every binding sets \
             spec.multiClusterTargetGroup: true, so that each deregisters only the targets it registered. Set it on {} \
             or bind a different target group.",
            spec.is_multi_cluster(),
            to_fix.join(" and "),
        ),
    )]
}

/// The binding's targetType, vpcID, ipAddressType and targetGroupProtocol must be those of the
/// target group it binds.
pub fn validate_tgb_against_target_group(spec: &TargetGroupBindingSpec, tg: &TargetGroupFacts) -> Vec<Violation> {
    let mut v = Vec::new();
    match parse_target_type(&tg.target_type) {
        None => v.push(unsupported_target_type(tg)),
        Some(tg_type) => {
            if let Some(t) = spec.target_type
                && t != tg_type
            {
                v.push(Violation::new(
                    "spec.targetType",
                    "target_type_mismatch",
                    format!(
                        "spec.targetType is {:?} but target group {} has target type {:?}; they must match. Set \
                         spec.targetType: {} (or leave it out to take the target group's), or bind a target group of \
                         type {:?}.",
                        target_type_str(t),
                        tg.arn,
                        target_type_str(tg_type),
                        target_type_str(tg_type),
                        target_type_str(t),
                    ),
                ));
            }
        }
    }
    if let (Some(mine), Some(theirs)) = (non_empty(&spec.vpc_id), non_empty(&tg.vpc_id))
        && mine != theirs
    {
        v.push(Violation::new(
            "spec.vpcID",
            "vpc_mismatch",
            format!(
                "spec.vpcID is {mine:?} but target group {} is in VPC {theirs:?}; they must match. Set spec.vpcID: \
                 {theirs} (or leave it out to take the target group's), or bind a target group in {mine}.",
                tg.arn
            ),
        ));
    }
    if let Some(mine) = spec.ip_address_type {
        let theirs = parse_ip_address_type(tg.ip_address_type.as_deref());
        if mine != theirs {
            v.push(Violation::new(
                "spec.ipAddressType",
                "ip_address_type_mismatch",
                format!(
                    "spec.ipAddressType is {:?} but target group {} has IP address type {:?}; they must match, since \
                     it picks the address family of the registered pod IPs. Set spec.ipAddressType: {} (or leave it \
                     out to take the target group's), or bind an {} target group.",
                    ip_type_str(mine),
                    tg.arn,
                    ip_type_str(theirs),
                    ip_type_str(theirs),
                    ip_type_str(mine),
                ),
            ));
        }
    }
    if let (Some(mine), Some(theirs)) = (spec.target_group_protocol, tg.protocol.as_deref())
        && protocol_str(mine) != theirs
    {
        v.push(Violation::new(
            "spec.targetGroupProtocol",
            "protocol_mismatch",
            format!(
                "spec.targetGroupProtocol is {:?} but target group {} uses protocol {theirs:?}; they must match. Set \
                 spec.targetGroupProtocol: {theirs} (or leave it out to take the target group's).",
                protocol_str(mine),
                tg.arn
            ),
        ));
    }
    v
}

/// The violation for a target group another cluster or stack owns, or the strict tenancy mode
/// does not grant ([`crate::tg_ownership::target_group_access`]).
pub fn not_our_target_group(e: &crate::tg_ownership::NotOurs) -> Violation {
    let category = match e {
        crate::tg_ownership::NotOurs::Foreign(_) => "foreign_target_group",
        crate::tg_ownership::NotOurs::NotGranted(_) => "target_group_not_granted",
    };
    Violation::new("spec.targetGroupARN", category, e.to_string())
}

/// The violation for a target group AWS does not know.
/// `role`: the binding's `spec.iamRoleArnToAssume`, whose account was searched instead of the
/// controller's.
pub fn target_group_not_found(lookup: &TargetGroupLookup, role: Option<&RoleToAssume>) -> Violation {
    let account = match role {
        None => "the controller's AWS account".to_string(),
        Some(r) => format!("the AWS account of role {} (spec.iamRoleArnToAssume)", r.role_arn),
    };
    let message = match lookup {
        TargetGroupLookup::ByName(name) => format!(
            "spec.targetGroupName is {name:?} but no target group of that name exists in {account} and region; \
             create the target group first, fix the name, or set spec.targetGroupARN."
        ),
        TargetGroupLookup::ByArn(arn) => format!(
            "spec.targetGroupARN is {arn:?} but no such target group exists in {account} and region; create the \
             target group first or fix the ARN (it must be in the region the controller runs against)."
        ),
        TargetGroupLookup::None => "the target group of this binding was not found in AWS".to_string(),
    };
    let field =
        if matches!(lookup, TargetGroupLookup::ByName(_)) { "spec.targetGroupName" } else { "spec.targetGroupARN" };
    Violation::new(field, "target_group_not_found", message)
}

#[cfg(test)]
mod tests;
