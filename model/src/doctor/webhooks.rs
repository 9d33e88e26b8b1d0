//! Check 8: webhooks and readiness gates. Our webhook configurations exist and their caBundle
//! verifies the certificate the webhook serves; a server-side dry-run Pod create in a labelled
//! namespace really comes back with the readiness gate; namespaces whose pods carry our gates
//! (or that hold bindings) without the namespace label are named.

use super::{Status, Verdict, list};
use crate::names::{READINESS_GATE_INJECT_LABEL, READINESS_GATE_PREFIX};

pub const CHECK: &str = "webhooks";

/// The TLS handshake with one webhook, trusting only its caBundle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tls {
    Verified,
    NoCaBundle,
    /// The handshake failed on the certificate.
    Rejected(String),
    /// No answer from here (not in the cluster, or the webhook is down).
    Unreachable(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookInfo {
    /// e.g. `mpod.elbv2.k8s.aws`.
    pub name: String,
    /// The URL or `service ns/name:port/path`.
    pub target: String,
    pub tls: Tls,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigInfo {
    /// `MutatingWebhookConfiguration aws-lb-controller-webhook`.
    pub object: String,
    /// `None`: not found.
    pub webhooks: Option<Vec<WebhookInfo>>,
}

/// A server-side dry-run Pod create, shaped to match a binding's Service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DryRun {
    /// No labelled namespace holds a binding whose Service selects pods: nothing to try.
    NoCandidate,
    /// `gate` was expected; `gates` came back.
    Done { namespace: String, binding: String, gate: String, gates: Vec<String> },
    /// The API server refused the dry run.
    Failed { namespace: String, error: String },
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NamespaceInfo {
    pub name: String,
    /// Labelled `elbv2.k8s.aws/pod-readiness-gate-inject=enabled`.
    pub labelled: bool,
    /// TargetGroupBindings in it.
    pub bindings: usize,
    /// Pods carrying a `target-health.elbv2.k8s.aws/*` readiness gate.
    pub gated_pods: Vec<String>,
}

pub fn check(configs: &[ConfigInfo], dry_run: &DryRun, namespaces: &[NamespaceInfo]) -> Vec<Verdict> {
    let mut out = Vec::new();
    for c in configs {
        let Some(hooks) = &c.webhooks else {
            out.push(Verdict::fail(
                CHECK,
                c.object.clone(),
                "not found",
                "the configuration the chart installs",
                "install or upgrade the chart; if it has another name, pass --webhook-configuration=<name>",
            ));
            continue;
        };
        for h in hooks {
            let object = format!("{} webhook {} ({})", c.object, h.name, h.target);
            out.push(match &h.tls {
                Tls::Verified => Verdict::ok(CHECK, object, "caBundle verifies the serving certificate"),
                Tls::NoCaBundle => Verdict::fail(
                    CHECK,
                    object,
                    "no caBundle",
                    "the CA of the serving certificate in clientConfig.caBundle",
                    "controller-managed certificate (the chart's default): the leader sets it within seconds, so look \
                     for 'set caBundle' or errors in the leader's log (RBAC patch on this configuration); cert-manager: \
                     check the cert-manager.io/inject-ca-from annotation and cainjector; webhookTLS: helm upgrade",
                ),
                Tls::Rejected(e) => Verdict::fail(
                    CHECK,
                    object,
                    format!("caBundle does not verify the serving certificate: {e}"),
                    "a serving certificate signed by the caBundle's CA, valid for the webhook's host name",
                    "controller-managed certificate: the leader patches a caBundle that differs from its Secret back \
                     within seconds, so a lasting mismatch means it is not running or may not patch (its log); \
                     cert-manager: let cainjector re-inject; webhookTLS: webhookTLS.caCert must be the CA of \
                     webhookTLS.cert",
                ),
                Tls::Unreachable(e) => Verdict::warn(
                    CHECK,
                    object,
                    format!("no TLS answer from here: {e}"),
                    "a TLS answer",
                    "run doctor inside the cluster (helm test) to reach Service-backed webhooks; if the controller \
                     pods are down, the dry-run check below shows what the API server sees",
                ),
            });
        }
    }
    match dry_run {
        DryRun::NoCandidate => out.push(Verdict::ok(
            CHECK,
            "readiness-gate injection",
            "not tried: no labelled namespace holds a binding whose Service selects pods",
        )),
        DryRun::Done { namespace, binding, gate, gates } if gates.contains(gate) => out.push(Verdict::ok(
            CHECK,
            format!("dry-run Pod in namespace {namespace}"),
            format!("readiness gate {gate} injected (binding {binding})"),
        )),
        DryRun::Done { namespace, binding, gate, gates } => out.push(Verdict::fail(
            CHECK,
            format!("dry-run Pod in namespace {namespace}"),
            format!("readiness gates [{}] for a pod of binding {binding}", gates.join(", ")),
            format!("readiness gate {gate}"),
            "check that the pod webhook (mpod.elbv2.k8s.aws) is registered for pods, its namespaceSelector matches \
             the label, and --enable-pod-readiness-gate-inject is true",
        )),
        DryRun::Failed { namespace, error } => out.push(Verdict::fail(
            CHECK,
            format!("dry-run Pod in namespace {namespace}"),
            format!("refused: {error}"),
            "the API server admits the pod through our webhook",
            "the API server cannot call the webhook: check the controller pods, the webhook Service and the caBundle",
        )),
    }
    let label = format!("{READINESS_GATE_INJECT_LABEL}=enabled");
    for ns in namespaces.iter().filter(|n| !n.labelled) {
        let object = format!("Namespace {}", ns.name);
        if !ns.gated_pods.is_empty() {
            out.push(Verdict::fail(
                CHECK,
                object,
                format!(
                    "pods with {READINESS_GATE_PREFIX}* gates ({}) but no {label} label: new pods get no gate",
                    list(&ns.gated_pods, 3)
                ),
                format!("label {label}"),
                format!("kubectl label namespace {} {label}", ns.name),
            ));
        } else if ns.bindings > 0 {
            out.push(Verdict::warn(
                CHECK,
                object,
                format!(
                    "{} TargetGroupBindings, no {label} label: rollouts do not wait for healthy targets",
                    ns.bindings
                ),
                format!("label {label}"),
                format!("kubectl label namespace {} {label}", ns.name),
            ));
        }
    }
    if !out.iter().any(|v| v.status != Status::Ok) && namespaces.iter().any(|n| n.labelled) {
        let labelled: Vec<&str> = namespaces.iter().filter(|n| n.labelled).map(|n| n.name.as_str()).collect();
        out.push(Verdict::ok(CHECK, "namespaces with bindings", format!("labelled: {}", list(&labelled, 5))));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(tls: Tls) -> WebhookInfo {
        WebhookInfo { name: "mpod.elbv2.k8s.aws".into(), target: "https://127.0.0.1:9443/mutate-v1-pod".into(), tls }
    }

    fn cfg(hooks: Option<Vec<WebhookInfo>>) -> ConfigInfo {
        ConfigInfo { object: "MutatingWebhookConfiguration lbc-webhook".into(), webhooks: hooks }
    }

    fn done(gates: &[&str]) -> DryRun {
        DryRun::Done {
            namespace: "app".into(),
            binding: "web".into(),
            gate: "target-health.elbv2.k8s.aws/web".into(),
            gates: gates.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn ns(name: &str, labelled: bool, bindings: usize, gated: &[&str]) -> NamespaceInfo {
        NamespaceInfo {
            name: name.into(),
            labelled,
            bindings,
            gated_pods: gated.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn statuses(c: &[ConfigInfo], d: &DryRun, n: &[NamespaceInfo]) -> Vec<Status> {
        check(c, d, n).iter().map(|v| v.status).collect()
    }

    #[test]
    fn table() {
        use Status::*;
        let good = vec![cfg(Some(vec![hook(Tls::Verified)]))];
        let gate = "target-health.elbv2.k8s.aws/web";
        let app = [ns("app", true, 1, &["web-0"])];
        assert_eq!(statuses(&good, &done(&[gate]), &app), [Ok, Ok, Ok]);
        assert_eq!(statuses(&[cfg(None)], &done(&[gate]), &app), [Fail, Ok]);
        assert_eq!(statuses(&[cfg(Some(vec![hook(Tls::NoCaBundle)]))], &DryRun::NoCandidate, &[]), [Fail, Ok]);
        assert_eq!(
            statuses(&[cfg(Some(vec![hook(Tls::Rejected("UnknownIssuer".into()))]))], &done(&[gate]), &[]),
            [Fail, Ok]
        );
        assert_eq!(
            statuses(&[cfg(Some(vec![hook(Tls::Unreachable("refused".into()))]))], &done(&[gate]), &[]),
            [Warn, Ok]
        );
        assert_eq!(statuses(&good, &done(&["other"]), &app), [Ok, Fail]);
        let failed = DryRun::Failed { namespace: "app".into(), error: "failed calling webhook".into() };
        assert_eq!(statuses(&good, &failed, &app), [Ok, Fail]);
        assert_eq!(statuses(&good, &done(&[gate]), &[ns("old", false, 1, &["web-0"])]), [Ok, Ok, Fail]);
        assert_eq!(statuses(&good, &done(&[gate]), &[ns("plain", false, 2, &[])]), [Ok, Ok, Warn]);
        assert_eq!(statuses(&good, &done(&[gate]), &[ns("empty", false, 0, &[])]), [Ok, Ok]);
    }

    #[test]
    fn unlabelled_namespace_names_the_fix() {
        let v = check(&[], &DryRun::NoCandidate, &[ns("shop", false, 1, &["cart-0", "cart-1"])]);
        let f = v.iter().find(|v| v.status == Status::Fail).unwrap();
        assert_eq!(f.object, "Namespace shop");
        assert!(f.found.contains("cart-0, cart-1"), "{f:?}");
        assert_eq!(f.fix, "kubectl label namespace shop elbv2.k8s.aws/pod-readiness-gate-inject=enabled");
    }
}
