//! Services: the default `spec.loadBalancerClass`.

use super::AdmissionOp;
use k8s_openapi::api::core::v1::Service;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::DEFAULT_LOAD_BALANCER_CLASS;
    use k8s_openapi::api::core::v1::ServiceSpec;

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
}
