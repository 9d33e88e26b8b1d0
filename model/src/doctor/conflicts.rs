//! Check 6: another load-balancer controller acting on the same objects. The cloud-controller-
//! manager's service controller takes every `type: LoadBalancer` Service without
//! `spec.loadBalancerClass` (its finalizer `service.kubernetes.io/load-balancer-cleanup`, an
//! `*.elb.amazonaws.com` hostname in status without our finalizer); ALBC, still installed, answers the same annotations,
//! CRDs and webhooks as we do.

use super::{Verdict, list};

pub const CHECK: &str = "conflicts";
/// The finalizer Kubernetes' service controller (in the CCM) puts on Services it provisions.
pub const CCM_FINALIZER: &str = "service.kubernetes.io/load-balancer-cleanup";

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceInfo {
    /// `namespace/name`.
    pub name: String,
    pub load_balancer_class: Option<String>,
    pub finalizers: Vec<String>,
    /// `status.loadBalancer.ingress[].hostname`.
    pub hostnames: Vec<String>,
}

/// Signs of ALBC, each described (e.g. `Deployment kube-system/aws-load-balancer-controller image
/// public.ecr.aws/eks/aws-load-balancer-controller:v2.8.1`).
pub fn check(services: &[ServiceInfo], our_class: &str, albc: &[String]) -> Vec<Verdict> {
    let mut out = Vec::new();
    for s in services {
        let ccm_finalizer = s.finalizers.iter().any(|f| f == CCM_FINALIZER);
        let elb_host: Vec<&String> = s.hostnames.iter().filter(|h| h.ends_with(".elb.amazonaws.com")).collect();
        let classless = s.load_balancer_class.as_deref().unwrap_or("").is_empty();
        let ours = s.load_balancer_class.as_deref() == Some(our_class);
        // A classless Service our controller built (`aws-load-balancer-type: external`, ALBC's most
        // common pattern) carries our finalizer and an ELB hostname too: not the CCM's without its finalizer.
        let built_by_us = s.finalizers.iter().any(|f| f == crate::service::keys::SERVICE_FINALIZER);
        let ccm_host = classless && !elb_host.is_empty() && !built_by_us;
        if !ccm_finalizer && !ccm_host {
            continue;
        }
        let mut found = vec![match &s.load_balancer_class {
            Some(c) if !c.is_empty() => format!("spec.loadBalancerClass {c}"),
            _ => "no spec.loadBalancerClass".to_string(),
        }];
        if ccm_finalizer {
            found.push(format!("finalizer {CCM_FINALIZER}"));
        }
        if !elb_host.is_empty() {
            found.push(format!("status hostname {}", list(&elb_host, 2)));
        }
        let fix = if ours {
            "the cloud-controller-manager still acts on a Service of ours: run it with --controllers=*,-service \
             (RKE2: cloud-controller-manager-extra-args) and remove its finalizer once its load balancer is gone"
        } else {
            "the cloud-controller-manager's service controller owns this Service: set spec.loadBalancerClass: \
             service.k8s.aws/nlb (immutable: recreate the Service), or disable the CCM's service controller \
             (--controllers=*,-service)"
        };
        out.push(Verdict::fail(
            CHECK,
            format!("Service {}", s.name),
            found.join(", "),
            format!("spec.loadBalancerClass {our_class} and no {CCM_FINALIZER} finalizer"),
            fix,
        ));
    }
    if !albc.is_empty() {
        out.push(Verdict::fail(
            CHECK,
            "AWS Load Balancer Controller (ALBC)",
            list(albc, 4),
            "one load balancer controller per cluster",
            "uninstall ALBC (helm uninstall aws-load-balancer-controller -n kube-system) before this controller \
             takes over: both answer the same annotations, CRDs and webhooks",
        ));
    }
    if out.is_empty() {
        out.push(Verdict::ok(
            CHECK,
            format!("{} LoadBalancer Services", services.len()),
            "no cloud-controller-manager finalizer or ELB hostname on classless Services; no ALBC installed",
        ));
    }
    out
}

/// Whether a container image is ALBC's.
pub fn is_albc_image(image: &str) -> bool {
    let repo = image.split('@').next().unwrap_or(image);
    let repo = repo.rsplit_once(':').filter(|(_, tag)| !tag.contains('/')).map_or(repo, |(r, _)| r);
    repo.ends_with("/aws-load-balancer-controller") || repo == "aws-load-balancer-controller"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Status;

    const OURS: &str = "service.k8s.aws/nlb";

    fn svc(class: Option<&str>, finalizers: &[&str], hosts: &[&str]) -> ServiceInfo {
        ServiceInfo {
            name: "ns/web".into(),
            load_balancer_class: class.map(str::to_string),
            finalizers: finalizers.iter().map(|s| s.to_string()).collect(),
            hostnames: hosts.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn table() {
        let host = "k8s-ns-web-0123456789.elb.us-east-1.amazonaws.com";
        #[allow(clippy::type_complexity)] // a table of cases reads best as tuples
        let cases: Vec<(&str, Vec<ServiceInfo>, Vec<String>, Vec<Status>, &str)> = vec![
            (
                "ours",
                vec![svc(Some(OURS), &["service.k8s.aws/resources"], &[host])],
                vec![],
                vec![Status::Ok],
                "no ALBC",
            ),
            ("ccm finalizer", vec![svc(None, &[CCM_FINALIZER], &[])], vec![], vec![Status::Fail], CCM_FINALIZER),
            (
                "ccm hostname",
                vec![svc(None, &[], &["a1b2-123.us-east-1.elb.amazonaws.com"])],
                vec![],
                vec![Status::Fail],
                "status hostname a1b2",
            ),
            (
                "ccm on ours",
                vec![svc(Some(OURS), &[CCM_FINALIZER], &[])],
                vec![],
                vec![Status::Fail],
                "spec.loadBalancerClass service.k8s.aws/nlb",
            ),
            ("classless pending", vec![svc(None, &[], &[])], vec![], vec![Status::Ok], "no ALBC"),
            (
                "classless, built by us (aws-load-balancer-type: external)",
                vec![svc(None, &["service.k8s.aws/resources"], &[host])],
                vec![],
                vec![Status::Ok],
                "no ALBC",
            ),
            (
                "classless, ours and the CCM's",
                vec![svc(None, &["service.k8s.aws/resources", CCM_FINALIZER], &[host])],
                vec![],
                vec![Status::Fail],
                CCM_FINALIZER,
            ),
            ("other class with hostname", vec![svc(Some("other"), &[], &[host])], vec![], vec![Status::Ok], "no ALBC"),
            (
                "albc",
                vec![],
                vec!["Deployment kube-system/aws-load-balancer-controller".into()],
                vec![Status::Fail],
                "Deployment kube-system",
            ),
        ];
        for (name, svcs, albc, want, text) in cases {
            let v = check(&svcs, OURS, &albc);
            assert_eq!(v.iter().map(|v| v.status).collect::<Vec<_>>(), want, "{name}: {v:?}");
            assert!(v.iter().any(|v| v.found.contains(text)), "{name}: {v:?}");
        }
        let v = check(&[svc(None, &[CCM_FINALIZER], &[])], OURS, &[]);
        assert!(v[0].fix.contains("loadBalancerClass") && v[0].object == "Service ns/web", "{v:?}");
    }

    #[test]
    fn albc_images() {
        for (image, want) in [
            ("public.ecr.aws/eks/aws-load-balancer-controller:v2.8.1", true),
            ("602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon/aws-load-balancer-controller:v2.4.7", true),
            ("registry.local:5000/eks/aws-load-balancer-controller@sha256:abc", true),
            ("registry.local:5000/aws-lb-controller:0.1.0", false),
            ("nginx:1.25", false),
        ] {
            assert_eq!(is_albc_image(image), want, "{image}");
        }
    }
}
