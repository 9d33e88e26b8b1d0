//! TargetGroupBindings: what the mutator looks up in AWS and the `spec` fields it fills in.

use super::Violation;
use super::tgb_validation::unsupported_target_type;
use crate::crd::{TargetGroupBindingSpec, TargetGroupIpAddressType, TargetGroupProtocol, TargetType};

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

pub(super) fn non_empty(s: &Option<String>) -> Option<&str> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::fixtures::{ARN, facts, full_spec, spec};

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
}
