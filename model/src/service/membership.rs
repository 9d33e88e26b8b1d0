//! Freeze, don't delete, for Services: a Service holding our finalizer loses its NLB only by its
//! own hand — deleted, no longer `type: LoadBalancer` (with ALBC's gate `ServiceTypeLoadBalancerOnly`
//! on; off, its default, any type is looked at), or (without a class) its
//! `aws-load-balancer-type` / `nlb-target-type` annotations edited so they no longer select us.
//!
//! `spec.loadBalancerClass` cannot change while a Service is `type: LoadBalancer` (the API
//! server refuses it), so a Service holding our finalizer whose class differs from
//! `--load-balancer-class` was not changed: the controller's flag was (a cluster-level change,
//! between two runs). It is frozen: the NLB is kept, nothing is written to AWS, a Warning names
//! both classes and the fix. `--default-target-type` changes the target type of Services without
//! an `nlb-target-type` annotation, as in ALBC: their target groups are replaced (the target type is
//! part of the name), the NLB stays.

use k8s_openapi::api::core::v1::Service;

use super::select::{SelectConfig, Selection, select};

/// How a Service takes part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Membership {
    /// Ours ([`Selection::Ours`] or [`Selection::InvalidTargetType`]).
    Member(Selection),
    /// Holds our finalizer but no longer matches because of the controller's configuration;
    /// `reason` names both values and the fix.
    Frozen { reason: String },
    /// Not ours: a holder of our finalizer is cleaned up (its load balancer deleted).
    Out,
}

/// The decision for one Service, given whether it holds our finalizer.
pub fn membership(svc: &Service, cfg: &SelectConfig, holds_finalizer: bool) -> Membership {
    if svc.metadata.deletion_timestamp.is_some() {
        return Membership::Out;
    }
    let selection = select(svc, cfg);
    if selection != Selection::NotOurs {
        return Membership::Member(selection);
    }
    let spec = svc.spec.as_ref();
    let class =
        spec.filter(|s| s.type_.as_deref() == Some("LoadBalancer")).and_then(|s| s.load_balancer_class.as_deref());
    match class {
        Some(class) if holds_finalizer => Membership::Frozen {
            reason: format!(
                "spec.loadBalancerClass is {class:?} but this controller runs with --load-balancer-class {:?}; the \
                 class of a Service cannot change, so the controller's setting did: its load balancer is kept and \
                 nothing is changed in AWS. Fix: run the controller with --load-balancer-class={class}; to delete \
                 the load balancer instead, delete the Service or change its type",
                cfg.load_balancer_class
            ),
        },
        _ => Membership::Out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::TargetType;
    use crate::service::keys::{self as k, full_key};
    use k8s_openapi::api::core::v1::ServiceSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    const OURS: &str = "service.k8s.aws/nlb";

    fn svc(deleting: bool, lb: bool, class: Option<&str>, annotated: bool) -> Service {
        let ann = annotated.then(|| [(full_key(k::LOAD_BALANCER_TYPE), "nlb-ip".to_string())].into());
        Service {
            metadata: ObjectMeta {
                annotations: ann,
                deletion_timestamp: deleting.then(|| Time(Default::default())),
                ..Default::default()
            },
            spec: Some(ServiceSpec {
                type_: Some(if lb { "LoadBalancer" } else { "ClusterIP" }.into()),
                load_balancer_class: class.map(Into::into),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Every combination of gate `ServiceTypeLoadBalancerOnly` × deleting × holds × type × class
    /// (none, ours, other) × selecting annotation, against the rule written out row by row.
    #[test]
    fn every_combination() {
        let mut seen = 0;
        for only in [false, true] {
            let cfg = SelectConfig {
                load_balancer_class: OURS.into(),
                default_target_type: TargetType::Ip,
                load_balancer_type_only: only,
            };
            for deleting in [false, true] {
                for holds in [false, true] {
                    for lb in [false, true] {
                        for class in [None, Some(OURS), Some("other.io/nlb")] {
                            for annotated in [false, true] {
                                let got = membership(&svc(deleting, lb, class, annotated), &cfg, holds);
                                let want = match (deleting, lb, class, annotated, holds) {
                                    (true, ..) => "out",
                                    (_, false, ..) if only => "out",
                                    (_, _, Some(OURS), ..) | (_, _, None, true, _) => "member",
                                    (_, _, None, false, _) => "out",
                                    // The API server allows a class on type LoadBalancer only.
                                    (_, true, Some(_), _, true) => "frozen",
                                    (_, _, Some(_), ..) => "out",
                                };
                                let kind = match &got {
                                    Membership::Member(Selection::Ours { .. }) => "member",
                                    Membership::Member(other) => panic!("{other:?}"),
                                    Membership::Frozen { .. } => "frozen",
                                    Membership::Out => "out",
                                };
                                assert_eq!(
                                    kind, want,
                                    "only={only} deleting={deleting} holds={holds} lb={lb} {class:?} {annotated}"
                                );
                                seen += 1;
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(seen, 96);
    }

    #[test]
    fn frozen_names_both_classes_and_the_fix() {
        let cfg = SelectConfig {
            load_balancer_class: "corp/nlb".into(),
            default_target_type: TargetType::Ip,
            load_balancer_type_only: false,
        };
        let Membership::Frozen { reason } = membership(&svc(false, true, Some(OURS), false), &cfg, true) else {
            panic!()
        };
        for want in ["\"service.k8s.aws/nlb\"", "\"corp/nlb\"", "--load-balancer-class=service.k8s.aws/nlb", "delete"] {
            assert!(reason.contains(want), "{want}: {reason}");
        }
    }
}
