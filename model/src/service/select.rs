//! Which Services this controller reconciles: ALBC's rules (`pkg/service/service_utils.go`,
//! `model_build_target_group.go` `buildTargetType`).
//!
//! A Service is ours when
//! - `spec.loadBalancerClass` equals the configured class (`--load-balancer-class`, default
//!   [`DEFAULT_LOAD_BALANCER_CLASS`]); any other class belongs to someone else, annotations or not;
//! - or, without a class, annotation `aws-load-balancer-type` is `nlb-ip` (legacy), or `external`
//!   together with `aws-load-balancer-nlb-target-type` `ip` or `instance`.
//!
//! The target type is `ip` for `nlb-ip` or `nlb-target-type: ip`, `instance` for
//! `nlb-target-type: instance`, and `--default-target-type` (ALBC: instance) when the annotation is
//! absent. Any other value is [`Selection::InvalidTargetType`] (ALBC fails the build with
//! "unsupported target type" too), with a message that names the two accepted values.
//!
//! Of any `spec.type`, as ALBC with its feature gate `ServiceTypeLoadBalancerOnly` off (its
//! default): a ClusterIP Service carrying the annotations gets an NLB too. With the gate on, only
//! `type: LoadBalancer` Services are looked at.

use k8s_openapi::api::core::v1::Service;

use super::keys::{self as k, full_key};
use crate::crd::TargetType;

/// ALBC's default `--load-balancer-class`.
pub const DEFAULT_LOAD_BALANCER_CLASS: &str = "service.k8s.aws/nlb";

/// Controller-wide selection settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectConfig {
    /// `--load-balancer-class`.
    pub load_balancer_class: String,
    /// `--default-target-type` (ALBC: instance).
    pub default_target_type: TargetType,
    /// ALBC feature gate `ServiceTypeLoadBalancerOnly` (off): only `type: LoadBalancer` Services.
    pub load_balancer_type_only: bool,
}

impl Default for SelectConfig {
    fn default() -> Self {
        Self {
            load_balancer_class: DEFAULT_LOAD_BALANCER_CLASS.to_string(),
            default_target_type: TargetType::Instance,
            load_balancer_type_only: false,
        }
    }
}

/// Whether, and how, a Service is ours.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// Not for this controller: leave it alone (no events, no finalizer).
    NotOurs,
    /// Ours; build and deploy its NLB.
    Ours { target_type: TargetType },
    /// Ours by ALBC's rules, but `nlb-target-type` is neither `ip` nor `instance`.
    /// `message` is a complete sentence for a Warning event.
    InvalidTargetType { message: String },
}

/// Applies ALBC's selection rules to a Service.
pub fn select(svc: &Service, cfg: &SelectConfig) -> Selection {
    let Some(spec) = svc.spec.as_ref() else { return Selection::NotOurs };
    if cfg.load_balancer_type_only && spec.type_.as_deref() != Some("LoadBalancer") {
        return Selection::NotOurs;
    }
    let ann = svc.metadata.annotations.as_ref();
    let get = |suffix: &str| ann.and_then(|a| a.get(&full_key(suffix))).map(String::as_str);
    let lb_type = get(k::LOAD_BALANCER_TYPE);
    let target_type = get(k::TARGET_TYPE);
    match spec.load_balancer_class.as_deref() {
        Some(class) if class != cfg.load_balancer_class => return Selection::NotOurs,
        Some(_) => {}
        None => {
            let by_annotation = lb_type == Some("nlb-ip")
                || (lb_type == Some("external") && matches!(target_type, Some("ip" | "instance")));
            if !by_annotation {
                return Selection::NotOurs;
            }
        }
    }
    if lb_type == Some("nlb-ip") || target_type == Some("ip") {
        return Selection::Ours { target_type: TargetType::Ip };
    }
    match target_type {
        None => Selection::Ours { target_type: cfg.default_target_type },
        Some("instance") => Selection::Ours { target_type: TargetType::Instance },
        Some(v) => Selection::InvalidTargetType {
            message: format!(
                "annotation {} is {v:?}; the accepted values are \"ip\" (pod IPs) and \"instance\" (nodes on the \
                 Service's NodePort), written in lower case: nothing is changed in AWS until it is one of them",
                full_key(k::TARGET_TYPE)
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ServiceSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn svc(type_: &str, class: Option<&str>, ann: &[(&str, &str)]) -> Service {
        Service {
            metadata: ObjectMeta {
                annotations: Some(ann.iter().map(|(k, v)| (full_key(k), v.to_string())).collect()),
                ..Default::default()
            },
            spec: Some(ServiceSpec {
                type_: Some(type_.into()),
                load_balancer_class: class.map(Into::into),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    type Case = (&'static str, Service, fn(&Selection) -> bool);

    fn ip_of() -> Selection {
        Selection::Ours { target_type: TargetType::Ip }
    }

    #[test]
    fn albc_selection_table() {
        use Selection::*;
        let ip = Ours { target_type: TargetType::Ip };
        let nlb = Some(DEFAULT_LOAD_BALANCER_CLASS);
        let cases: Vec<Case> = vec![
            ("class + ip", svc("LoadBalancer", nlb, &[(k::TARGET_TYPE, "ip")]), |s| {
                *s == Ours { target_type: TargetType::Ip }
            }),
            ("class alone = instance", svc("LoadBalancer", nlb, &[]), |s| {
                *s == Ours { target_type: TargetType::Instance }
            }),
            ("class + instance", svc("LoadBalancer", nlb, &[(k::TARGET_TYPE, "instance")]), |s| {
                *s == Ours { target_type: TargetType::Instance }
            }),
            (
                "class + IP (case)",
                svc("LoadBalancer", nlb, &[(k::TARGET_TYPE, "IP")]),
                |s| matches!(s, InvalidTargetType { message } if message.contains("\"IP\"")),
            ),
            (
                "other class",
                svc("LoadBalancer", Some("eks.amazonaws.com/nlb"), &[(k::LOAD_BALANCER_TYPE, "nlb-ip")]),
                |s| *s == NotOurs,
            ),
            (
                "external + ip",
                svc("LoadBalancer", None, &[(k::LOAD_BALANCER_TYPE, "external"), (k::TARGET_TYPE, "ip")]),
                |s| *s == Ours { target_type: TargetType::Ip },
            ),
            (
                "external + instance",
                svc("LoadBalancer", None, &[(k::LOAD_BALANCER_TYPE, "external"), (k::TARGET_TYPE, "instance")]),
                |s| *s == Ours { target_type: TargetType::Instance },
            ),
            ("external alone", svc("LoadBalancer", None, &[(k::LOAD_BALANCER_TYPE, "external")]), |s| *s == NotOurs),
            (
                "external + bogus",
                svc("LoadBalancer", None, &[(k::LOAD_BALANCER_TYPE, "external"), (k::TARGET_TYPE, "pod")]),
                |s| *s == NotOurs,
            ),
            ("nlb-ip legacy", svc("LoadBalancer", None, &[(k::LOAD_BALANCER_TYPE, "nlb-ip")]), |s| {
                *s == Ours { target_type: TargetType::Ip }
            }),
            ("nlb (in-tree)", svc("LoadBalancer", None, &[(k::LOAD_BALANCER_TYPE, "nlb")]), |s| *s == NotOurs),
            ("no annotations", svc("LoadBalancer", None, &[]), |s| *s == NotOurs),
            ("ClusterIP + class (gate off)", svc("ClusterIP", nlb, &[(k::TARGET_TYPE, "ip")]), |s| *s == ip_of()),
            (
                "ClusterIP + external + ip (gate off)",
                svc("ClusterIP", None, &[(k::LOAD_BALANCER_TYPE, "external"), (k::TARGET_TYPE, "ip")]),
                |s| *s == ip_of(),
            ),
            ("ClusterIP without annotations", svc("ClusterIP", None, &[]), |s| *s == NotOurs),
        ];
        for (name, s, ok) in cases {
            let got = select(&s, &SelectConfig::default());
            assert!(ok(&got), "{name}: {got:?}");
        }
        assert_eq!(select(&Service::default(), &SelectConfig::default()), NotOurs);
        let custom = SelectConfig {
            load_balancer_class: "corp/nlb".into(),
            default_target_type: TargetType::Ip,
            load_balancer_type_only: false,
        };
        assert_eq!(select(&svc("LoadBalancer", Some("corp/nlb"), &[]), &custom), ip);
        assert_eq!(select(&svc("LoadBalancer", nlb, &[]), &custom), NotOurs);
        // Gate ServiceTypeLoadBalancerOnly on: other types are never ours.
        let only = SelectConfig { load_balancer_type_only: true, ..SelectConfig::default() };
        let cluster_ip = svc("ClusterIP", None, &[(k::LOAD_BALANCER_TYPE, "external"), (k::TARGET_TYPE, "ip")]);
        assert_eq!(select(&cluster_ip, &only), NotOurs);
        assert_eq!(select(&svc("LoadBalancer", nlb, &[(k::TARGET_TYPE, "ip")]), &only), ip);
    }

    #[test]
    fn invalid_target_type_message_tells_the_fix() {
        let class = Some(DEFAULT_LOAD_BALANCER_CLASS);
        let Selection::InvalidTargetType { message } =
            select(&svc("LoadBalancer", class, &[(k::TARGET_TYPE, "Instance")]), &SelectConfig::default())
        else {
            panic!()
        };
        assert!(
            message.contains("service.beta.kubernetes.io/aws-load-balancer-nlb-target-type is \"Instance\""),
            "{message}"
        );
        assert!(message.contains("\"ip\"") && message.contains("\"instance\""), "{message}");
    }
}
