//! Admission decisions: what the webhooks add to an object and what they refuse, as pure
//! functions over the object and cached cluster state. The `lbc-webhook` crate does the I/O
//! (decoding AdmissionReviews, looking target groups up in AWS) and turns these decisions into
//! JSON patches and denials.
//!
//! - Pods: which `target-health.elbv2.k8s.aws/<binding>` readiness gates a new pod gets
//!   ([`plan_readiness_gates`]).
//! - Services: the default `spec.loadBalancerClass` ([`default_load_balancer_class`]).
//! - TargetGroupBindings: defaults from the target group ([`tgb_lookup`], [`tgb_defaults`]) and
//!   validation ([`validate_tgb_spec`], [`validate_tgb_update`], [`validate_tgb_unique`],
//!   [`validate_tgb_against_target_group`]).
//!
//! Every denial is a [`Violation`] whose message says what is wrong, the value seen, what is
//! expected and what to change, because the person reading it only sees `kubectl`'s output.

use crate::crd::{
    TargetGroupBinding, TargetGroupBindingSpec, TargetGroupIpAddressType, TargetGroupProtocol, TargetType,
};
use crate::names::{READINESS_GATE_INJECT_LABEL, readiness_gate_condition};
use k8s_openapi::api::core::v1::{PodReadinessGate, Service};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;
use std::fmt;

/// Prefix of the readiness gates of the v1 ALB ingress controller. Nothing sets those
/// conditions any more, so a pod carrying one would never become Ready: the pod mutator
/// strips them, as ALBC does.
pub const LEGACY_READINESS_GATE_PREFIX: &str = "target-health.alb.ingress.k8s.aws/";

/// `spec.loadBalancerClass` the Service mutator sets by default (ALBC's `--load-balancer-class`).
pub const DEFAULT_LOAD_BALANCER_CLASS: &str = "service.k8s.aws/nlb";

/// Value of [`READINESS_GATE_INJECT_LABEL`] that turns injection on.
pub const READINESS_GATE_INJECT_ENABLED: &str = "enabled";

/// The admission operations our webhooks act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdmissionOp {
    Create,
    Update,
}

// ---------------------------------------------------------------------------------------------
// Pods: readiness gates
// ---------------------------------------------------------------------------------------------

/// Whether a namespace with these labels asks for readiness-gate injection. The webhook
/// configuration's namespaceSelector normally filters already; this is the same rule for
/// callers that know the namespace's labels.
pub fn namespace_injection_enabled(labels: &BTreeMap<String, String>) -> bool {
    labels.get(READINESS_GATE_INJECT_LABEL).map(String::as_str) == Some(READINESS_GATE_INJECT_ENABLED)
}

/// Whether `service` selects a pod with these labels. A Service with an empty or absent
/// selector selects nothing (its endpoints are managed by hand), as in Kubernetes.
pub fn service_selects(service: &Service, pod_labels: &BTreeMap<String, String>) -> bool {
    match service.spec.as_ref().and_then(|s| s.selector.as_ref()) {
        Some(sel) if !sel.is_empty() => sel.iter().all(|(k, v)| pod_labels.get(k) == Some(v)),
        _ => false,
    }
}

/// A TargetGroupBinding of the pod's namespace and the Service it references (if cached).
#[derive(Clone, Copy, Debug)]
pub struct GateBinding<'a> {
    pub binding: &'a TargetGroupBinding,
    pub service: Option<&'a Service>,
}

/// The readiness gates a pod should have after admission.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReadinessGatePlan {
    /// All gates, in order: the pod's own (minus legacy ones), then the added ones.
    pub gates: Vec<PodReadinessGate>,
    /// Condition types added.
    pub added: Vec<String>,
    /// Legacy condition types removed.
    pub removed: Vec<String>,
}

impl ReadinessGatePlan {
    /// Whether the pod must be patched.
    pub fn changed(&self) -> bool {
        !self.added.is_empty() || !self.removed.is_empty()
    }
}

/// Decides the readiness gates of a pod being created in `pod_namespace` with `pod_labels`
/// and `existing` gates: one `target-health.elbv2.k8s.aws/<binding>` gate per ip-type binding
/// of the namespace whose Service selects the pod. Bindings being deleted are skipped (nothing
/// would ever release a gate they left behind). Gates already present are kept once; legacy
/// `target-health.alb.ingress.k8s.aws/` gates are removed. Applying the plan twice changes
/// nothing the second time.
pub fn plan_readiness_gates(
    pod_namespace: &str,
    pod_labels: &BTreeMap<String, String>,
    existing: &[PodReadinessGate],
    bindings: &[GateBinding<'_>],
) -> ReadinessGatePlan {
    let mut plan = ReadinessGatePlan::default();
    for g in existing {
        if g.condition_type.starts_with(LEGACY_READINESS_GATE_PREFIX) {
            plan.removed.push(g.condition_type.clone());
        } else {
            plan.gates.push(g.clone());
        }
    }
    let mut wanted: Vec<String> = bindings
        .iter()
        .filter(|b| gate_applies(pod_namespace, pod_labels, b))
        .filter_map(|b| b.binding.metadata.name.as_deref())
        .map(readiness_gate_condition)
        .collect();
    wanted.sort();
    wanted.dedup();
    for c in wanted {
        if !plan.gates.iter().any(|g| g.condition_type == c) {
            plan.gates.push(PodReadinessGate { condition_type: c.clone() });
            plan.added.push(c);
        }
    }
    plan
}

fn gate_applies(pod_namespace: &str, pod_labels: &BTreeMap<String, String>, b: &GateBinding<'_>) -> bool {
    let tgb = b.binding;
    let same_ns = tgb.metadata.namespace.as_deref().is_none_or(|ns| ns == pod_namespace);
    let service_matches = b.service.is_some_and(|svc| {
        svc.metadata.name.as_deref() == Some(tgb.spec.service_ref.name.as_str())
            && svc.metadata.namespace.as_deref().is_none_or(|ns| ns == pod_namespace)
            && service_selects(svc, pod_labels)
    });
    same_ns
        && tgb.metadata.deletion_timestamp.is_none()
        && tgb.spec.effective_target_type() == TargetType::Ip
        && service_matches
}

// ---------------------------------------------------------------------------------------------
// Services: loadBalancerClass
// ---------------------------------------------------------------------------------------------

fn lb_class(svc: &Service) -> Option<&str> {
    svc.spec.as_ref().and_then(|s| s.load_balancer_class.as_deref()).filter(|c| !c.is_empty())
}

fn is_load_balancer(svc: &Service) -> bool {
    svc.spec.as_ref().and_then(|s| s.type_.as_deref()) == Some("LoadBalancer")
}

/// The `spec.loadBalancerClass` to set on a Service, or `None` to leave it alone.
///
/// - CREATE of a `type: LoadBalancer` Service without a class: `class` (our default,
///   [`DEFAULT_LOAD_BALANCER_CLASS`] unless configured otherwise).
/// - UPDATE of a `type: LoadBalancer` Service that drops the class the old object had (e.g.
///   `kubectl replace` of the original manifest): the old class, because the field is immutable
///   and the update would otherwise be refused by the API server.
/// - Anything else: `None`. An existing LoadBalancer Service without a class is never given one
///   on update (that would be refused as a change of an immutable field).
pub fn default_load_balancer_class(
    op: AdmissionOp,
    new: &Service,
    old: Option<&Service>,
    class: &str,
) -> Option<String> {
    if !is_load_balancer(new) || lb_class(new).is_some() {
        return None;
    }
    match op {
        AdmissionOp::Create => Some(class.to_string()).filter(|c| !c.is_empty()),
        AdmissionOp::Update => old.and_then(lb_class).map(str::to_string),
    }
}

// ---------------------------------------------------------------------------------------------
// TargetGroupBindings: defaulting
// ---------------------------------------------------------------------------------------------

/// What the webhooks know about a target group (from DescribeTargetGroups).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TargetGroupFacts {
    pub arn: String,
    pub name: String,
    /// `ip`, `instance`, `lambda` or `alb`.
    pub target_type: String,
    /// `HTTP`, `TCP`, `TCP_UDP`, … (absent for lambda target groups).
    pub protocol: Option<String>,
    pub vpc_id: Option<String>,
    /// `ipv4` or `ipv6`.
    pub ip_address_type: Option<String>,
}

/// Which target group the mutator must describe before it can fill the defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetGroupLookup {
    /// Nothing to look up: every defaulted field is set, or there is no ARN or name to look up
    /// with (the validator then says what is missing).
    None,
    ByArn(String),
    ByName(String),
}

/// One field the mutator sets in `spec`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecDefault {
    TargetGroupArn(String),
    TargetType(TargetType),
    IpAddressType(TargetGroupIpAddressType),
    VpcId(String),
    TargetGroupProtocol(TargetGroupProtocol),
}

impl SpecDefault {
    /// JSON name of the field under `spec`.
    pub fn field(&self) -> &'static str {
        match self {
            Self::TargetGroupArn(_) => "targetGroupARN",
            Self::TargetType(_) => "targetType",
            Self::IpAddressType(_) => "ipAddressType",
            Self::VpcId(_) => "vpcID",
            Self::TargetGroupProtocol(_) => "targetGroupProtocol",
        }
    }

    /// JSON pointer of the field in the object (`/spec/<field>`).
    pub fn json_pointer(&self) -> String {
        format!("/spec/{}", self.field())
    }

    /// The value to set, as it appears in the object.
    pub fn value(&self) -> serde_json::Value {
        let v = match self {
            Self::TargetGroupArn(s) | Self::VpcId(s) => serde_json::to_value(s),
            Self::TargetType(t) => serde_json::to_value(t),
            Self::IpAddressType(t) => serde_json::to_value(t),
            Self::TargetGroupProtocol(p) => serde_json::to_value(p),
        };
        v.unwrap_or(serde_json::Value::Null)
    }
}

fn non_empty(s: &Option<String>) -> Option<&str> {
    s.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// The spec after carrying defaulted fields over from the old object on UPDATE: a field the
/// new object omits keeps its old value (so re-applying the original manifest, which never had
/// the defaulted fields, is not refused as a change of an immutable field). The ARN is carried
/// only when the new object names no target group either: a new `targetGroupName` is resolved
/// again and the validator refuses it if it points elsewhere.
fn carried(spec: &TargetGroupBindingSpec, old: Option<&TargetGroupBindingSpec>) -> TargetGroupBindingSpec {
    let mut s = spec.clone();
    let Some(old) = old else { return s };
    if non_empty(&s.target_group_arn).is_none() && non_empty(&s.target_group_name).is_none() {
        s.target_group_arn = non_empty(&old.target_group_arn).map(str::to_string);
    }
    s.target_type = s.target_type.or(old.target_type);
    s.ip_address_type = s.ip_address_type.or(old.ip_address_type);
    s.target_group_protocol = s.target_group_protocol.or(old.target_group_protocol);
    if non_empty(&s.vpc_id).is_none() {
        s.vpc_id = non_empty(&old.vpc_id).map(str::to_string);
    }
    s
}

fn fully_defaulted(s: &TargetGroupBindingSpec) -> bool {
    non_empty(&s.target_group_arn).is_some()
        && s.target_type.is_some()
        && s.ip_address_type.is_some()
        && non_empty(&s.vpc_id).is_some()
        && s.target_group_protocol.is_some()
}

/// What the mutator must look up in AWS for `spec` (`old` on UPDATE). The ARN wins over the
/// name when both are set, as in ALBC.
pub fn tgb_lookup(spec: &TargetGroupBindingSpec, old: Option<&TargetGroupBindingSpec>) -> TargetGroupLookup {
    let s = carried(spec, old);
    if fully_defaulted(&s) {
        return TargetGroupLookup::None;
    }
    if let Some(arn) = non_empty(&s.target_group_arn) {
        TargetGroupLookup::ByArn(arn.to_string())
    } else if let Some(name) = non_empty(&s.target_group_name) {
        TargetGroupLookup::ByName(name.to_string())
    } else {
        TargetGroupLookup::None
    }
}

/// Parses a target type as AWS spells it.
pub fn parse_target_type(s: &str) -> Option<TargetType> {
    match s {
        "ip" => Some(TargetType::Ip),
        "instance" => Some(TargetType::Instance),
        _ => None,
    }
}

/// Parses an IP address type as AWS spells it (`ipv4` when absent).
pub fn parse_ip_address_type(s: Option<&str>) -> TargetGroupIpAddressType {
    match s {
        Some("ipv6") => TargetGroupIpAddressType::Ipv6,
        _ => TargetGroupIpAddressType::Ipv4,
    }
}

/// Parses a target group protocol as AWS spells it.
pub fn parse_protocol(s: &str) -> Option<TargetGroupProtocol> {
    serde_json::from_value(serde_json::Value::String(s.to_string())).ok()
}

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

/// The fields the mutator sets on `spec` (`old` on UPDATE), given the target group looked up
/// per [`tgb_lookup`] (`None` when no lookup was needed or possible). Fields the user set are
/// never overwritten: a mismatch with the target group is the validator's to refuse.
pub fn tgb_defaults(
    spec: &TargetGroupBindingSpec,
    old: Option<&TargetGroupBindingSpec>,
    tg: Option<&TargetGroupFacts>,
) -> Result<Vec<SpecDefault>, Violation> {
    let c = carried(spec, old);
    let mut out = Vec::new();

    let arn = non_empty(&c.target_group_arn).map(str::to_string).or_else(|| tg.map(|t| t.arn.clone()));
    if non_empty(&spec.target_group_arn).is_none()
        && let Some(arn) = arn.filter(|a| !a.is_empty())
    {
        out.push(SpecDefault::TargetGroupArn(arn));
    }

    match (spec.target_type, c.target_type, tg) {
        (Some(_), _, _) => {}
        (None, Some(t), _) => out.push(SpecDefault::TargetType(t)),
        (None, None, Some(tg)) => match parse_target_type(&tg.target_type) {
            Some(t) => out.push(SpecDefault::TargetType(t)),
            None => return Err(unsupported_target_type(tg)),
        },
        (None, None, None) => {}
    }

    match (spec.ip_address_type, c.ip_address_type, tg) {
        (Some(_), _, _) => {}
        (None, Some(t), _) => out.push(SpecDefault::IpAddressType(t)),
        (None, None, Some(tg)) => {
            out.push(SpecDefault::IpAddressType(parse_ip_address_type(tg.ip_address_type.as_deref())))
        }
        (None, None, None) => {}
    }

    if non_empty(&spec.vpc_id).is_none() {
        let vpc = non_empty(&c.vpc_id)
            .map(str::to_string)
            .or_else(|| tg.and_then(|t| non_empty(&t.vpc_id).map(str::to_string)));
        if let Some(v) = vpc {
            out.push(SpecDefault::VpcId(v));
        }
    }

    if spec.target_group_protocol.is_none()
        && let Some(p) =
            c.target_group_protocol.or_else(|| tg.and_then(|t| t.protocol.as_deref()).and_then(parse_protocol))
    {
        out.push(SpecDefault::TargetGroupProtocol(p));
    }
    Ok(out)
}

/// Applies defaults to a spec (what the object looks like after the mutator's patch).
pub fn apply_defaults(spec: &mut TargetGroupBindingSpec, defaults: &[SpecDefault]) {
    for d in defaults {
        match d {
            SpecDefault::TargetGroupArn(a) => spec.target_group_arn = Some(a.clone()),
            SpecDefault::TargetType(t) => spec.target_type = Some(*t),
            SpecDefault::IpAddressType(t) => spec.ip_address_type = Some(*t),
            SpecDefault::VpcId(v) => spec.vpc_id = Some(v.clone()),
            SpecDefault::TargetGroupProtocol(p) => spec.target_group_protocol = Some(*p),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// TargetGroupBindings: validation
// ---------------------------------------------------------------------------------------------

/// One reason to refuse an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The offending field (`spec.targetType`), for tests and logs.
    pub field: &'static str,
    /// Short label for the `error_category` of the failure metrics.
    pub category: &'static str,
    /// What is wrong, the value seen, what is expected and what to change.
    pub message: String,
}

impl Violation {
    pub fn new(field: &'static str, category: &'static str, message: impl Into<String>) -> Self {
        Self { field, category, message: message.into() }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// All violations as one message for the AdmissionResponse (numbered when several).
pub fn denial_message(violations: &[Violation]) -> String {
    match violations {
        [] => String::new(),
        [one] => one.message.clone(),
        many => {
            many.iter().enumerate().map(|(i, v)| format!("({}) {}", i + 1, v.message)).collect::<Vec<_>>().join("; ")
        }
    }
}

fn unsupported_target_type(tg: &TargetGroupFacts) -> Violation {
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

/// The violation for a target group AWS does not know.
pub fn target_group_not_found(lookup: &TargetGroupLookup) -> Violation {
    let message = match lookup {
        TargetGroupLookup::ByName(name) => format!(
            "spec.targetGroupName is {name:?} but no target group of that name exists in the controller's AWS account \
             and region; create the target group first, fix the name, or set spec.targetGroupARN."
        ),
        TargetGroupLookup::ByArn(arn) => format!(
            "spec.targetGroupARN is {arn:?} but no such target group exists in the controller's AWS account and \
             region; create the target group first or fix the ARN (it must be in the region the controller runs \
             against)."
        ),
        TargetGroupLookup::None => "the target group of this binding was not found in AWS".to_string(),
    };
    let field =
        if matches!(lookup, TargetGroupLookup::ByName(_)) { "spec.targetGroupName" } else { "spec.targetGroupARN" };
    Violation::new(field, "target_group_not_found", message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::ServiceReference;
    use k8s_openapi::api::core::v1::ServiceSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};

    const ARN: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/web/0123456789abcdef";
    const ARN2: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/api/fedcba9876543210";

    fn labels(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn svc(name: &str, selector: Option<&[(&str, &str)]>) -> Service {
        Service {
            metadata: ObjectMeta { name: Some(name.into()), namespace: Some("shop".into()), ..Default::default() },
            spec: Some(ServiceSpec { selector: selector.map(labels), ..Default::default() }),
            ..Default::default()
        }
    }

    fn tgb(name: &str, service: &str, tt: Option<TargetType>) -> TargetGroupBinding {
        let mut t = TargetGroupBinding::new(
            name,
            TargetGroupBindingSpec {
                target_group_arn: Some(ARN.into()),
                target_type: tt,
                service_ref: ServiceReference { name: service.into(), port: IntOrString::Int(80) },
                ..Default::default()
            },
        );
        t.metadata.namespace = Some("shop".into());
        t
    }

    fn gates(types: &[&str]) -> Vec<PodReadinessGate> {
        types.iter().map(|t| PodReadinessGate { condition_type: t.to_string() }).collect()
    }

    #[test]
    fn namespace_label() {
        assert!(namespace_injection_enabled(&labels(&[(READINESS_GATE_INJECT_LABEL, "enabled")])));
        assert!(!namespace_injection_enabled(&labels(&[(READINESS_GATE_INJECT_LABEL, "disabled")])));
        assert!(!namespace_injection_enabled(&labels(&[])));
    }

    #[test]
    fn readiness_gate_table() {
        let web = svc("web", Some(&[("app", "web")]));
        let web_tier = svc("web-tier", Some(&[("app", "web"), ("tier", "front")]));
        let headless = svc("manual", None);
        let empty_sel = svc("empty", Some(&[]));
        let other_ns =
            Service { metadata: ObjectMeta { namespace: Some("other".into()), ..web.metadata.clone() }, ..web.clone() };
        let mut deleting = tgb("going", "web", Some(TargetType::Ip));
        deleting.metadata.deletion_timestamp = Some(Time(Default::default()));
        let mut elsewhere = tgb("elsewhere", "web", Some(TargetType::Ip));
        elsewhere.metadata.namespace = Some("other".into());
        let ip_web = tgb("web-tg", "web", Some(TargetType::Ip));
        let untyped_web = tgb("untyped", "web", None);
        let inst_web = tgb("inst", "web", Some(TargetType::Instance));
        let ip_tier = tgb("tier-tg", "web-tier", Some(TargetType::Ip));
        let ip_manual = tgb("manual-tg", "manual", Some(TargetType::Ip));
        let ip_empty = tgb("empty-tg", "empty", Some(TargetType::Ip));
        let ip_missing_svc = tgb("nosvc", "gone", Some(TargetType::Ip));
        let g = |b: &'static str| readiness_gate_condition(b);

        struct Case<'a> {
            name: &'a str,
            labels: &'a [(&'a str, &'a str)],
            existing: Vec<PodReadinessGate>,
            bindings: Vec<GateBinding<'a>>,
            added: Vec<String>,
            removed: Vec<&'a str>,
            result: Vec<String>,
        }
        let b = |binding, service| GateBinding { binding, service };
        let cases = vec![
            Case {
                name: "matching ip binding adds its gate",
                labels: &[("app", "web")],
                existing: vec![],
                bindings: vec![b(&ip_web, Some(&web))],
                added: vec![g("web-tg")],
                removed: vec![],
                result: vec![g("web-tg")],
            },
            Case {
                name: "no bindings: no-op",
                labels: &[("app", "web")],
                existing: gates(&["example.com/ready"]),
                bindings: vec![],
                added: vec![],
                removed: vec![],
                result: vec!["example.com/ready".into()],
            },
            Case {
                name: "selector does not match",
                labels: &[("app", "api")],
                existing: vec![],
                bindings: vec![b(&ip_web, Some(&web))],
                added: vec![],
                removed: vec![],
                result: vec![],
            },
            Case {
                name: "selector needs every label",
                labels: &[("app", "web")],
                existing: vec![],
                bindings: vec![b(&ip_tier, Some(&web_tier))],
                added: vec![],
                removed: vec![],
                result: vec![],
            },
            Case {
                name: "superset of the selector matches",
                labels: &[("app", "web"), ("tier", "front"), ("x", "y")],
                existing: vec![],
                bindings: vec![b(&ip_tier, Some(&web_tier)), b(&ip_web, Some(&web))],
                added: vec![g("tier-tg"), g("web-tg")],
                removed: vec![],
                result: vec![g("tier-tg"), g("web-tg")],
            },
            Case {
                name: "absent selector selects nothing",
                labels: &[("app", "web")],
                existing: vec![],
                bindings: vec![b(&ip_manual, Some(&headless))],
                added: vec![],
                removed: vec![],
                result: vec![],
            },
            Case {
                name: "empty selector selects nothing",
                labels: &[],
                existing: vec![],
                bindings: vec![b(&ip_empty, Some(&empty_sel))],
                added: vec![],
                removed: vec![],
                result: vec![],
            },
            Case {
                name: "instance binding gets no gate",
                labels: &[("app", "web")],
                existing: vec![],
                bindings: vec![b(&inst_web, Some(&web))],
                added: vec![],
                removed: vec![],
                result: vec![],
            },
            Case {
                name: "binding without targetType counts as ip, like the controller",
                labels: &[("app", "web")],
                existing: vec![],
                bindings: vec![b(&untyped_web, Some(&web))],
                added: vec![g("untyped")],
                removed: vec![],
                result: vec![g("untyped")],
            },
            Case {
                name: "service not cached: no gate",
                labels: &[("app", "web")],
                existing: vec![],
                bindings: vec![b(&ip_missing_svc, None)],
                added: vec![],
                removed: vec![],
                result: vec![],
            },
            Case {
                name: "service of another name is not the binding's",
                labels: &[("app", "web")],
                existing: vec![],
                bindings: vec![b(&ip_missing_svc, Some(&web))],
                added: vec![],
                removed: vec![],
                result: vec![],
            },
            Case {
                name: "service in another namespace is not the binding's",
                labels: &[("app", "web")],
                existing: vec![],
                bindings: vec![b(&ip_web, Some(&other_ns))],
                added: vec![],
                removed: vec![],
                result: vec![],
            },
            Case {
                name: "binding in another namespace is ignored",
                labels: &[("app", "web")],
                existing: vec![],
                bindings: vec![b(&elsewhere, Some(&web))],
                added: vec![],
                removed: vec![],
                result: vec![],
            },
            Case {
                name: "binding being deleted is skipped",
                labels: &[("app", "web")],
                existing: vec![],
                bindings: vec![b(&deleting, Some(&web))],
                added: vec![],
                removed: vec![],
                result: vec![],
            },
            Case {
                name: "gate already present is not duplicated",
                labels: &[("app", "web")],
                existing: gates(&["target-health.elbv2.k8s.aws/web-tg"]),
                bindings: vec![b(&ip_web, Some(&web))],
                added: vec![],
                removed: vec![],
                result: vec![g("web-tg")],
            },
            Case {
                name: "user gates kept first, ours appended",
                labels: &[("app", "web")],
                existing: gates(&["example.com/warm"]),
                bindings: vec![b(&ip_web, Some(&web))],
                added: vec![g("web-tg")],
                removed: vec![],
                result: vec!["example.com/warm".into(), g("web-tg")],
            },
            Case {
                name: "legacy gates are stripped even with nothing to add",
                labels: &[("app", "api")],
                existing: gates(&["target-health.alb.ingress.k8s.aws/shop_web_80", "example.com/warm"]),
                bindings: vec![b(&ip_web, Some(&web))],
                added: vec![],
                removed: vec!["target-health.alb.ingress.k8s.aws/shop_web_80"],
                result: vec!["example.com/warm".into()],
            },
            Case {
                name: "legacy stripped and new added",
                labels: &[("app", "web")],
                existing: gates(&["target-health.alb.ingress.k8s.aws/x"]),
                bindings: vec![b(&ip_web, Some(&web))],
                added: vec![g("web-tg")],
                removed: vec!["target-health.alb.ingress.k8s.aws/x"],
                result: vec![g("web-tg")],
            },
            Case {
                name: "added gates sorted and deduplicated",
                labels: &[("app", "web"), ("tier", "front")],
                existing: vec![],
                bindings: vec![b(&ip_web, Some(&web)), b(&ip_tier, Some(&web_tier)), b(&ip_web, Some(&web))],
                added: vec![g("tier-tg"), g("web-tg")],
                removed: vec![],
                result: vec![g("tier-tg"), g("web-tg")],
            },
        ];
        for c in cases {
            let plan = plan_readiness_gates("shop", &labels(c.labels), &c.existing, &c.bindings);
            assert_eq!(plan.added, c.added, "{}: added", c.name);
            assert_eq!(plan.removed, c.removed, "{}: removed", c.name);
            let result: Vec<String> = plan.gates.iter().map(|g| g.condition_type.clone()).collect();
            assert_eq!(result, c.result, "{}: gates", c.name);
            assert_eq!(plan.changed(), !c.added.is_empty() || !c.removed.is_empty(), "{}: changed", c.name);
            // Idempotent: planning again on the result changes nothing.
            let again = plan_readiness_gates("shop", &labels(c.labels), &plan.gates, &c.bindings);
            assert!(!again.changed(), "{}: second pass changed {again:?}", c.name);
            assert_eq!(again.gates, plan.gates, "{}: second pass gates", c.name);
        }
    }

    fn service(type_: Option<&str>, class: Option<&str>) -> Service {
        Service {
            spec: Some(ServiceSpec {
                type_: type_.map(str::to_string),
                load_balancer_class: class.map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn load_balancer_class_table() {
        use AdmissionOp::*;
        let nlb = DEFAULT_LOAD_BALANCER_CLASS;
        type Case = (&'static str, AdmissionOp, Service, Option<Service>, &'static str, Option<&'static str>);
        let cases: Vec<Case> = vec![
            ("create LB without class", Create, service(Some("LoadBalancer"), None), None, nlb, Some(nlb)),
            ("create LB with empty class", Create, service(Some("LoadBalancer"), Some("")), None, nlb, Some(nlb)),
            ("create LB with custom default", Create, service(Some("LoadBalancer"), None), None, "x/y", Some("x/y")),
            ("create LB with its own class", Create, service(Some("LoadBalancer"), Some("other/lb")), None, nlb, None),
            ("create ClusterIP", Create, service(Some("ClusterIP"), None), None, nlb, None),
            ("create NodePort", Create, service(Some("NodePort"), None), None, nlb, None),
            ("create without type (ClusterIP)", Create, service(None, None), None, nlb, None),
            ("create without spec", Create, Service::default(), None, nlb, None),
            ("create with empty configured class", Create, service(Some("LoadBalancer"), None), None, "", None),
            (
                "update drops the old class: keep it",
                Update,
                service(Some("LoadBalancer"), None),
                Some(service(Some("LoadBalancer"), Some(nlb))),
                nlb,
                Some(nlb),
            ),
            (
                "update drops a foreign class: keep it too",
                Update,
                service(Some("LoadBalancer"), None),
                Some(service(Some("LoadBalancer"), Some("other/lb"))),
                nlb,
                Some("other/lb"),
            ),
            (
                "update keeps the class: no-op",
                Update,
                service(Some("LoadBalancer"), Some(nlb)),
                Some(service(Some("LoadBalancer"), Some(nlb))),
                nlb,
                None,
            ),
            (
                "update of a classless LB: not given one",
                Update,
                service(Some("LoadBalancer"), None),
                Some(service(Some("LoadBalancer"), None)),
                nlb,
                None,
            ),
            (
                "update to ClusterIP: class left to the user",
                Update,
                service(Some("ClusterIP"), None),
                Some(service(Some("LoadBalancer"), Some(nlb))),
                nlb,
                None,
            ),
            (
                "update ClusterIP to LB: ALBC semantics, no default",
                Update,
                service(Some("LoadBalancer"), None),
                Some(service(Some("ClusterIP"), None)),
                nlb,
                None,
            ),
            ("update without old object", Update, service(Some("LoadBalancer"), None), None, nlb, None),
        ];
        for (name, op, new, old, class, want) in cases {
            assert_eq!(default_load_balancer_class(op, &new, old.as_ref(), class).as_deref(), want, "{name}");
        }
    }

    fn facts() -> TargetGroupFacts {
        TargetGroupFacts {
            arn: ARN.into(),
            name: "web".into(),
            target_type: "ip".into(),
            protocol: Some("TCP".into()),
            vpc_id: Some("vpc-0abc".into()),
            ip_address_type: Some("ipv4".into()),
        }
    }

    fn spec() -> TargetGroupBindingSpec {
        TargetGroupBindingSpec {
            target_group_arn: Some(ARN.into()),
            service_ref: ServiceReference { name: "web".into(), port: IntOrString::Int(80) },
            ..Default::default()
        }
    }

    fn full_spec() -> TargetGroupBindingSpec {
        TargetGroupBindingSpec {
            target_type: Some(TargetType::Ip),
            ip_address_type: Some(TargetGroupIpAddressType::Ipv4),
            vpc_id: Some("vpc-0abc".into()),
            target_group_protocol: Some(TargetGroupProtocol::TCP),
            ..spec()
        }
    }

    #[test]
    fn lookup_table() {
        let by_name =
            TargetGroupBindingSpec { target_group_arn: None, target_group_name: Some("web".into()), ..spec() };
        let both = TargetGroupBindingSpec { target_group_name: Some("web".into()), ..spec() };
        let neither = TargetGroupBindingSpec { target_group_arn: None, ..spec() };
        let blank_arn = TargetGroupBindingSpec {
            target_group_arn: Some(" ".into()),
            target_group_name: Some("web".into()),
            ..spec()
        };
        let cases: Vec<(&str, TargetGroupBindingSpec, Option<TargetGroupBindingSpec>, TargetGroupLookup)> = vec![
            ("ARN only", spec(), None, TargetGroupLookup::ByArn(ARN.into())),
            ("name only", by_name.clone(), None, TargetGroupLookup::ByName("web".into())),
            ("ARN wins over name", both, None, TargetGroupLookup::ByArn(ARN.into())),
            ("blank ARN counts as absent", blank_arn, None, TargetGroupLookup::ByName("web".into())),
            ("neither: nothing to look up", neither.clone(), None, TargetGroupLookup::None),
            ("fully defaulted: no AWS call", full_spec(), None, TargetGroupLookup::None),
            (
                "update re-applying the bare manifest: all carried over except protocol",
                spec(),
                Some(TargetGroupBindingSpec { target_group_protocol: None, ..full_spec() }),
                TargetGroupLookup::ByArn(ARN.into()),
            ),
            (
                "update of a fully defaulted object: no AWS call",
                neither.clone(),
                Some(full_spec()),
                TargetGroupLookup::None,
            ),
            (
                "update naming a target group resolves the name again",
                by_name,
                Some(full_spec()),
                TargetGroupLookup::ByName("web".into()),
            ),
        ];
        for (name, spec, old, want) in cases {
            assert_eq!(tgb_lookup(&spec, old.as_ref()), want, "{name}");
        }
    }

    #[test]
    fn defaults_table() {
        use SpecDefault as D;
        let ipv6_tg = TargetGroupFacts { ip_address_type: Some("ipv6".into()), ..facts() };
        let inst_tg = TargetGroupFacts { target_type: "instance".into(), protocol: Some("TCP_UDP".into()), ..facts() };
        let odd_proto = TargetGroupFacts { protocol: Some("SOMETHING_NEW".into()), ..facts() };
        let lambda = TargetGroupFacts { target_type: "lambda".into(), protocol: None, vpc_id: None, ..facts() };
        let by_name =
            TargetGroupBindingSpec { target_group_arn: None, target_group_name: Some("web".into()), ..spec() };
        type Case = (
            &'static str,
            TargetGroupBindingSpec,
            Option<TargetGroupBindingSpec>,
            Option<TargetGroupFacts>,
            Result<Vec<SpecDefault>, &'static str>,
        );
        let ip_defaults = vec![
            D::TargetType(TargetType::Ip),
            D::IpAddressType(TargetGroupIpAddressType::Ipv4),
            D::VpcId("vpc-0abc".into()),
            D::TargetGroupProtocol(TargetGroupProtocol::TCP),
        ];
        let cases: Vec<Case> = vec![
            ("all from the target group", spec(), None, Some(facts()), Ok(ip_defaults.clone())),
            (
                "name resolved to ARN first",
                by_name.clone(),
                None,
                Some(facts()),
                Ok([vec![D::TargetGroupArn(ARN.into())], ip_defaults.clone()].concat()),
            ),
            (
                "ipv6 target group",
                spec(),
                None,
                Some(ipv6_tg),
                Ok(vec![
                    D::TargetType(TargetType::Ip),
                    D::IpAddressType(TargetGroupIpAddressType::Ipv6),
                    D::VpcId("vpc-0abc".into()),
                    D::TargetGroupProtocol(TargetGroupProtocol::TCP),
                ]),
            ),
            (
                "instance target group",
                spec(),
                None,
                Some(inst_tg),
                Ok(vec![
                    D::TargetType(TargetType::Instance),
                    D::IpAddressType(TargetGroupIpAddressType::Ipv4),
                    D::VpcId("vpc-0abc".into()),
                    D::TargetGroupProtocol(TargetGroupProtocol::TcpUdp),
                ]),
            ),
            (
                "user's values are never overwritten",
                TargetGroupBindingSpec {
                    target_type: Some(TargetType::Instance),
                    vpc_id: Some("vpc-mine".into()),
                    ..spec()
                },
                None,
                Some(facts()),
                Ok(vec![
                    D::IpAddressType(TargetGroupIpAddressType::Ipv4),
                    D::TargetGroupProtocol(TargetGroupProtocol::TCP),
                ]),
            ),
            ("fully set: nothing", full_spec(), None, Some(facts()), Ok(vec![])),
            ("no target group known: nothing", spec(), None, None, Ok(vec![])),
            ("unknown protocol is left unset", spec(), None, Some(odd_proto), Ok(ip_defaults[..3].to_vec())),
            ("lambda target group refused", spec(), None, Some(lambda), Err("unsupported_target_type")),
            (
                "update carries immutable fields from the old object without AWS",
                TargetGroupBindingSpec { target_group_arn: None, ..spec() },
                Some(full_spec()),
                None,
                Ok(vec![
                    D::TargetGroupArn(ARN.into()),
                    D::TargetType(TargetType::Ip),
                    D::IpAddressType(TargetGroupIpAddressType::Ipv4),
                    D::VpcId("vpc-0abc".into()),
                    D::TargetGroupProtocol(TargetGroupProtocol::TCP),
                ]),
            ),
            (
                "update carries old values in preference to the target group's",
                spec(),
                Some(TargetGroupBindingSpec {
                    vpc_id: Some("vpc-old".into()),
                    target_group_protocol: None,
                    ..full_spec()
                }),
                Some(facts()),
                Ok(vec![
                    D::TargetType(TargetType::Ip),
                    D::IpAddressType(TargetGroupIpAddressType::Ipv4),
                    D::VpcId("vpc-old".into()),
                    D::TargetGroupProtocol(TargetGroupProtocol::TCP),
                ]),
            ),
        ];
        for (name, spec, old, tg, want) in cases {
            let got = tgb_defaults(&spec, old.as_ref(), tg.as_ref());
            match want {
                Ok(w) => assert_eq!(got, Ok(w), "{name}"),
                Err(cat) => {
                    let v = got.expect_err(name);
                    assert_eq!(v.category, cat, "{name}");
                    assert!(v.message.contains("lambda") && v.message.contains(ARN), "{name}: {}", v.message);
                }
            }
        }
    }

    #[test]
    fn defaults_then_lookup_is_a_fixed_point() {
        let mut s = spec();
        let d = tgb_defaults(&s, None, Some(&facts())).unwrap();
        apply_defaults(&mut s, &d);
        assert_eq!(s, full_spec());
        assert_eq!(tgb_lookup(&s, None), TargetGroupLookup::None);
        assert_eq!(tgb_defaults(&s, None, Some(&facts())).unwrap(), vec![]);
    }

    #[test]
    fn spec_default_json() {
        let cases = [
            (SpecDefault::TargetGroupArn(ARN.into()), "/spec/targetGroupARN", serde_json::json!(ARN)),
            (SpecDefault::TargetType(TargetType::Ip), "/spec/targetType", serde_json::json!("ip")),
            (
                SpecDefault::IpAddressType(TargetGroupIpAddressType::Ipv6),
                "/spec/ipAddressType",
                serde_json::json!("ipv6"),
            ),
            (SpecDefault::VpcId("vpc-1".into()), "/spec/vpcID", serde_json::json!("vpc-1")),
            (
                SpecDefault::TargetGroupProtocol(TargetGroupProtocol::TcpUdp),
                "/spec/targetGroupProtocol",
                serde_json::json!("TCP_UDP"),
            ),
        ];
        for (d, ptr, val) in cases {
            assert_eq!(d.json_pointer(), ptr);
            assert_eq!(d.value(), val);
        }
    }

    #[test]
    fn arn_shape() {
        assert!(is_target_group_arn(ARN));
        assert!(is_target_group_arn("arn:aws-cn:elasticloadbalancing:cn-north-1:123456789012:targetgroup/a/b"));
        for bad in [
            "",
            "web",
            "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net/a/b",
            "arn:aws:ec2:us-east-1:123456789012:targetgroup/a/b",
            "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/a",
            "arn::elasticloadbalancing:us-east-1:123456789012:targetgroup/a/b",
        ] {
            assert!(!is_target_group_arn(bad), "{bad}");
        }
    }

    #[test]
    fn spec_validation_table() {
        let sel = Some(LabelSelector { match_labels: Some(labels(&[("pool", "a")])), ..Default::default() });
        let cases: Vec<(&str, TargetGroupBindingSpec, &[&str])> = vec![
            ("valid", spec(), &[]),
            (
                "valid by name",
                TargetGroupBindingSpec { target_group_arn: None, target_group_name: Some("web".into()), ..spec() },
                &[],
            ),
            (
                "valid named port",
                TargetGroupBindingSpec {
                    service_ref: ServiceReference { name: "web".into(), port: IntOrString::String("http".into()) },
                    ..spec()
                },
                &[],
            ),
            (
                "missing service name",
                TargetGroupBindingSpec {
                    service_ref: ServiceReference { name: "".into(), port: IntOrString::Int(80) },
                    ..spec()
                },
                &["missing_service_name"],
            ),
            (
                "port 0",
                TargetGroupBindingSpec {
                    service_ref: ServiceReference { name: "web".into(), port: IntOrString::Int(0) },
                    ..spec()
                },
                &["invalid_service_port"],
            ),
            (
                "port too big",
                TargetGroupBindingSpec {
                    service_ref: ServiceReference { name: "web".into(), port: IntOrString::Int(70000) },
                    ..spec()
                },
                &["invalid_service_port"],
            ),
            (
                "empty port name",
                TargetGroupBindingSpec {
                    service_ref: ServiceReference { name: "web".into(), port: IntOrString::String(" ".into()) },
                    ..spec()
                },
                &["invalid_service_port"],
            ),
            (
                "neither ARN nor name",
                TargetGroupBindingSpec { target_group_arn: None, ..spec() },
                &["missing_target_group"],
            ),
            (
                "empty ARN and name",
                TargetGroupBindingSpec {
                    target_group_arn: Some("".into()),
                    target_group_name: Some("".into()),
                    ..spec()
                },
                &["missing_target_group"],
            ),
            (
                "malformed ARN",
                TargetGroupBindingSpec { target_group_arn: Some("web".into()), ..spec() },
                &["invalid_target_group_arn"],
            ),
            (
                "nodeSelector with ip",
                TargetGroupBindingSpec { target_type: Some(TargetType::Ip), node_selector: sel.clone(), ..spec() },
                &["node_selector_with_ip"],
            ),
            (
                "nodeSelector with untyped (ip)",
                TargetGroupBindingSpec { node_selector: sel.clone(), ..spec() },
                &["node_selector_with_ip"],
            ),
            (
                "nodeSelector with instance",
                TargetGroupBindingSpec { target_type: Some(TargetType::Instance), node_selector: sel, ..spec() },
                &[],
            ),
            (
                "assume role with ip",
                TargetGroupBindingSpec {
                    target_type: Some(TargetType::Ip),
                    iam_role_arn_to_assume: Some("arn:aws:iam::1:role/x".into()),
                    ..spec()
                },
                &[],
            ),
            (
                "assume role with instance",
                TargetGroupBindingSpec {
                    target_type: Some(TargetType::Instance),
                    iam_role_arn_to_assume: Some("arn:aws:iam::1:role/x".into()),
                    ..spec()
                },
                &["assume_role_with_instance"],
            ),
            (
                "several problems reported together",
                TargetGroupBindingSpec {
                    target_group_arn: None,
                    service_ref: ServiceReference { name: "".into(), port: IntOrString::Int(0) },
                    ..spec()
                },
                &["missing_service_name", "invalid_service_port", "missing_target_group"],
            ),
        ];
        for (name, s, want) in cases {
            let got: Vec<&str> = validate_tgb_spec(&s).iter().map(|v| v.category).collect();
            assert_eq!(got, want, "{name}");
        }
        let msg = &validate_tgb_spec(&TargetGroupBindingSpec {
            service_ref: ServiceReference { name: "web".into(), port: IntOrString::Int(0) },
            ..spec()
        })[0]
            .message;
        assert!(msg.contains("is 0") && msg.contains("1 to 65535"), "{msg}");
    }

    #[test]
    fn update_validation_table() {
        let cases: Vec<(&str, TargetGroupBindingSpec, TargetGroupBindingSpec, &[&str])> = vec![
            ("unchanged", full_spec(), full_spec(), &[]),
            ("defaults filled in", spec(), full_spec(), &[]),
            (
                "other fields may change",
                full_spec(),
                TargetGroupBindingSpec {
                    multi_cluster_target_group: Some(true),
                    service_ref: ServiceReference { name: "web2".into(), port: IntOrString::Int(81) },
                    ..full_spec()
                },
                &[],
            ),
            (
                "ARN changed",
                full_spec(),
                TargetGroupBindingSpec { target_group_arn: Some(ARN2.into()), ..full_spec() },
                &["spec.targetGroupARN"],
            ),
            (
                "ARN removed",
                full_spec(),
                TargetGroupBindingSpec { target_group_arn: None, ..full_spec() },
                &["spec.targetGroupARN"],
            ),
            (
                "targetType changed",
                full_spec(),
                TargetGroupBindingSpec { target_type: Some(TargetType::Instance), ..full_spec() },
                &["spec.targetType"],
            ),
            (
                "targetType removed",
                full_spec(),
                TargetGroupBindingSpec { target_type: None, ..full_spec() },
                &["spec.targetType"],
            ),
            (
                "ipAddressType changed",
                full_spec(),
                TargetGroupBindingSpec { ip_address_type: Some(TargetGroupIpAddressType::Ipv6), ..full_spec() },
                &["spec.ipAddressType"],
            ),
            (
                "vpcID changed",
                full_spec(),
                TargetGroupBindingSpec { vpc_id: Some("vpc-other".into()), ..full_spec() },
                &["spec.vpcID"],
            ),
            (
                "protocol is not immutable",
                full_spec(),
                TargetGroupBindingSpec { target_group_protocol: Some(TargetGroupProtocol::UDP), ..full_spec() },
                &[],
            ),
            (
                "all four changed",
                full_spec(),
                TargetGroupBindingSpec {
                    target_group_arn: Some(ARN2.into()),
                    target_type: Some(TargetType::Instance),
                    ip_address_type: Some(TargetGroupIpAddressType::Ipv6),
                    vpc_id: Some("vpc-x".into()),
                    ..full_spec()
                },
                &["spec.targetGroupARN", "spec.targetType", "spec.ipAddressType", "spec.vpcID"],
            ),
        ];
        for (name, old, new, want) in cases {
            let got: Vec<&str> = validate_tgb_update(&old, &new).iter().map(|v| v.field).collect();
            assert_eq!(got, want, "{name}");
        }
        let v = validate_tgb_update(
            &full_spec(),
            &TargetGroupBindingSpec { target_type: Some(TargetType::Instance), ..full_spec() },
        );
        assert_eq!(
            v[0].message,
            "spec.targetType is immutable: it is \"ip\" and this update sets \"instance\". Restore spec.targetType: ip, \
             or create a new TargetGroupBinding with the new value and delete this one."
        );
        let v = validate_tgb_update(&full_spec(), &TargetGroupBindingSpec { vpc_id: None, ..full_spec() });
        assert!(v[0].message.contains("\"vpc-0abc\" and this update removes it"), "{}", v[0].message);
    }

    #[test]
    fn target_group_fields() {
        assert!(!target_group_fields_changed(&full_spec(), &full_spec()));
        assert!(!target_group_fields_changed(
            &full_spec(),
            &TargetGroupBindingSpec { multi_cluster_target_group: Some(true), ..full_spec() }
        ));
        assert!(target_group_fields_changed(&full_spec(), &TargetGroupBindingSpec { vpc_id: None, ..full_spec() }));
        assert!(target_group_fields_changed(
            &full_spec(),
            &TargetGroupBindingSpec { target_group_protocol: None, ..full_spec() }
        ));
    }

    fn bound(ns: &str, name: &str, arn: &str, multi: bool) -> TargetGroupBinding {
        let mut t = TargetGroupBinding::new(
            name,
            TargetGroupBindingSpec {
                target_group_arn: Some(arn.into()),
                multi_cluster_target_group: Some(multi).filter(|m| *m),
                ..spec()
            },
        );
        t.metadata.namespace = Some(ns.into());
        t
    }

    #[test]
    fn uniqueness_table() {
        let a = bound("shop", "a", ARN, false);
        let a_multi = bound("shop", "a", ARN, true);
        let c = bound("shop", "c", ARN, false);
        let b_multi = bound("prod", "b", ARN, true);
        let other_tg = bound("shop", "c", ARN2, false);
        let mut deleting = bound("shop", "old", ARN, false);
        deleting.metadata.deletion_timestamp = Some(Time(Default::default()));
        let many: Vec<TargetGroupBinding> = (0..7).map(|i| bound("ns", &format!("x{i}"), ARN, false)).collect();
        let many_refs: Vec<&TargetGroupBinding> = many.iter().collect();
        let mine = |multi: bool| TargetGroupBindingSpec { multi_cluster_target_group: Some(multi), ..spec() };
        let cases: Vec<(&str, &str, TargetGroupBindingSpec, Vec<&TargetGroupBinding>, bool)> = vec![
            ("alone", "new", mine(false), vec![], true),
            ("other target group", "new", mine(false), vec![&other_tg], true),
            ("itself (update)", "a", mine(false), vec![&a], true),
            ("second binding refused", "new", mine(false), vec![&a], false),
            ("multi-cluster vs single", "new", mine(true), vec![&a], false),
            ("single vs multi-cluster", "new", mine(false), vec![&a_multi], false),
            ("all multi-cluster allowed", "new", mine(true), vec![&a_multi, &b_multi, &other_tg], true),
            ("one of several not multi", "new", mine(true), vec![&a_multi, &b_multi, &c], false),
            ("binding being deleted still counts", "new", mine(false), vec![&deleting], false),
            ("update turning multi-cluster off with a partner", "a", mine(false), vec![&a_multi, &b_multi], false),
            (
                "no ARN yet: nothing to compare",
                "new",
                TargetGroupBindingSpec { target_group_arn: None, ..spec() },
                vec![&a],
                true,
            ),
            ("many conflicts", "new", mine(false), many_refs, false),
        ];
        for (name, this, s, others, ok) in cases {
            let v = validate_tgb_unique("shop", this, &s, &others);
            assert_eq!(v.is_empty(), ok, "{name}: {v:?}");
        }
        let v = validate_tgb_unique("shop", "new", &mine(true), &[&a_multi, &b_multi, &c]);
        assert_eq!(
            v[0].message,
            format!(
                "target group {ARN} is already bound by TargetGroupBinding prod/b (multiClusterTargetGroup: true), \
                 shop/a (multiClusterTargetGroup: true), shop/c (multiClusterTargetGroup: false); this binding has \
                 multiClusterTargetGroup: true. A target group can be bound more than once only when every binding \
                 sets spec.multiClusterTargetGroup: true, so that each deregisters only the targets it registered. Set \
                 it on shop/c or bind a different target group."
            )
        );
        let v = validate_tgb_unique("shop", "new", &mine(false), &[&deleting]);
        assert!(
            v[0].message.contains("shop/old (multiClusterTargetGroup: false) [being deleted: wait until it is gone]")
        );
        assert!(v[0].message.contains("Set it on shop/new and shop/old"), "{}", v[0].message);
        let many: Vec<&TargetGroupBinding> = many.iter().collect();
        let v = validate_tgb_unique("shop", "new", &mine(false), &many);
        assert!(v[0].message.contains("and 2 more"), "{}", v[0].message);
    }

    #[test]
    fn against_target_group_table() {
        let cases: Vec<(&str, TargetGroupBindingSpec, TargetGroupFacts, &[&str])> = vec![
            ("matching", full_spec(), facts(), &[]),
            ("nothing set yet", spec(), facts(), &[]),
            (
                "type mismatch",
                TargetGroupBindingSpec { target_type: Some(TargetType::Instance), ..full_spec() },
                facts(),
                &["target_type_mismatch"],
            ),
            (
                "vpc mismatch",
                TargetGroupBindingSpec { vpc_id: Some("vpc-other".into()), ..full_spec() },
                facts(),
                &["vpc_mismatch"],
            ),
            (
                "ip type mismatch",
                TargetGroupBindingSpec { ip_address_type: Some(TargetGroupIpAddressType::Ipv6), ..full_spec() },
                facts(),
                &["ip_address_type_mismatch"],
            ),
            ("tg without ip type is ipv4", full_spec(), TargetGroupFacts { ip_address_type: None, ..facts() }, &[]),
            (
                "protocol mismatch",
                TargetGroupBindingSpec { target_group_protocol: Some(TargetGroupProtocol::UDP), ..full_spec() },
                facts(),
                &["protocol_mismatch"],
            ),
            ("tg without vpc (not checked)", full_spec(), TargetGroupFacts { vpc_id: None, ..facts() }, &[]),
            (
                "lambda target group",
                spec(),
                TargetGroupFacts { target_type: "lambda".into(), ..facts() },
                &["unsupported_target_type"],
            ),
            (
                "everything wrong",
                TargetGroupBindingSpec {
                    target_type: Some(TargetType::Instance),
                    vpc_id: Some("vpc-x".into()),
                    ip_address_type: Some(TargetGroupIpAddressType::Ipv6),
                    target_group_protocol: Some(TargetGroupProtocol::HTTP),
                    ..spec()
                },
                facts(),
                &["target_type_mismatch", "vpc_mismatch", "ip_address_type_mismatch", "protocol_mismatch"],
            ),
        ];
        for (name, s, tg, want) in cases {
            let got: Vec<&str> = validate_tgb_against_target_group(&s, &tg).iter().map(|v| v.category).collect();
            assert_eq!(got, want, "{name}");
        }
        let v = validate_tgb_against_target_group(
            &TargetGroupBindingSpec { vpc_id: Some("vpc-x".into()), ..spec() },
            &facts(),
        );
        assert_eq!(
            v[0].message,
            format!(
                "spec.vpcID is \"vpc-x\" but target group {ARN} is in VPC \"vpc-0abc\"; they must match. Set \
                 spec.vpcID: vpc-0abc (or leave it out to take the target group's), or bind a target group in vpc-x."
            )
        );
        let v = validate_tgb_against_target_group(
            &TargetGroupBindingSpec { target_type: Some(TargetType::Instance), ..spec() },
            &facts(),
        );
        assert!(v[0].message.contains("Set spec.targetType: ip"), "{}", v[0].message);
    }

    #[test]
    fn not_found_and_joined_messages() {
        let v = target_group_not_found(&TargetGroupLookup::ByName("web".into()));
        assert_eq!(v.field, "spec.targetGroupName");
        assert!(v.message.contains("\"web\"") && v.message.contains("create the target group first"));
        let v = target_group_not_found(&TargetGroupLookup::ByArn(ARN.into()));
        assert_eq!(v.field, "spec.targetGroupARN");
        assert!(v.message.contains(ARN));
        let a = Violation::new("f", "c", "first");
        let b = Violation::new("g", "d", "second");
        assert_eq!(denial_message(&[]), "");
        assert_eq!(denial_message(std::slice::from_ref(&a)), "first");
        assert_eq!(denial_message(&[a, b]), "(1) first; (2) second");
    }
}
