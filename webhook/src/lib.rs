//! Admission webhooks of aws-lb-controller, on ALBC's paths and with ALBC's semantics:
//!
//! | webhook | path | does |
//! |---|---|---|
//! | `mpod.elbv2.k8s.aws` | [`PATH_MUTATE_POD`] | adds `target-health.elbv2.k8s.aws/<binding>` readiness gates to new pods |
//! | `alb-target-control.{namespace,object}.elbv2.k8s.aws` | [`PATH_MUTATE_POD_TARGET_CONTROL_NAMESPACE`], [`PATH_MUTATE_POD_TARGET_CONTROL_OBJECT`] | adds the ALB target control agent sidecar to new pods that ask for it (gate `ALBTargetControlAgent`) |
//! | `mservice.elbv2.k8s.aws` | [`PATH_MUTATE_SERVICE`] | defaults `spec.loadBalancerClass` of LoadBalancer Services |
//! | `mtargetgroupbinding.elbv2.k8s.aws` | [`PATH_MUTATE_TGB`] | fills ARN, targetType, ipAddressType, vpcID, protocol from the target group |
//! | `vtargetgroupbinding.elbv2.k8s.aws` | [`PATH_VALIDATE_TGB`] | refuses bindings that cannot work, saying what to change |
//! | `vingress.elbv2.k8s.aws` | [`PATH_VALIDATE_INGRESS`] | refuses Ingresses of ours with invalid annotations, disabled annotations or a class they may not use |
//! | `vingressclassparams.elbv2.k8s.aws` | [`PATH_VALIDATE_INGRESS_CLASS_PARAMS`] | refuses invalid CIDRs, subnet selectors, names and ports |
//!
//! The decisions themselves live in [`lbc_model::admission`]; this crate decodes requests,
//! reads the controller's caches through [`ClusterView`] (never the API server), asks AWS
//! about target groups, answers with JSON patches or denials, records [`WebhookMetrics`] and
//! serves it all over TLS with a swappable certificate ([`serve`], [`ServingCert`]).
//!
//! Wiring (in the controller):
//!
//! ```ignore
//! let state = Arc::new(WebhookState::new(cluster_view, elbv2, WebhookConfig::default()));
//! metrics.with_registry(|r| state.metrics().register(r));
//! let cfg = ServeConfig::new(bind, CertSource::Files { cert_file, key_file }, state.metrics().clone());
//! match lbc_webhook::serve(cfg, lbc_webhook::router(state), shutdown).await {
//!     Err(ServeError::CertificateMissing { .. }) => warn!("webhook server off: no certificate"),
//!     other => other?,
//! }
//! ```

pub mod drain;
mod handlers;
pub mod limits;
pub mod metrics;
pub mod quic;
mod review;
#[cfg(test)]
mod review_props;
mod serve;
mod target_control;
pub mod view;

pub use handlers::{
    PATH_MUTATE_POD, PATH_MUTATE_POD_SERVER_ID, PATH_MUTATE_POD_TARGET_CONTROL_NAMESPACE,
    PATH_MUTATE_POD_TARGET_CONTROL_OBJECT, PATH_MUTATE_SERVICE, PATH_MUTATE_TGB, PATH_VALIDATE_INGRESS,
    PATH_VALIDATE_INGRESS_CLASS_PARAMS, PATH_VALIDATE_TGB, router,
};
pub use limits::Limits;
pub use metrics::WebhookMetrics;
pub use serve::{
    CERT_RELOAD_INTERVAL, CertSource, ServeConfig, ServeError, ServingCert, ServingPair, WebhookServer,
    client_ca_roots, fingerprint, serve, validity_of,
};
pub use view::{ClusterView, StaticClusterView};

use lbc_aws::assume_role::ElbV2ByRole;
use lbc_aws::elbv2::ElbV2;
use lbc_model::admission::DEFAULT_LOAD_BALANCER_CLASS;
use lbc_model::crd::TargetGroupBindingSpec;
use lbc_model::ingress::SelectConfig;
use std::sync::Arc;
use std::time::Duration;

/// The webhook's own client-side AWS budget (`--aws-api-throttle` syntax), apart from the
/// reconcilers' buckets: requests anyone can send must never slow the reconcilers' calls down.
/// The controller keeps two sets of these buckets, one for calls as its own identity and one for
/// calls as roles the requests name, so that reviews naming roles cannot spend the budget of
/// ordinary bindings. A TargetGroupBinding admission needs one to three ELBv2 reads (and one
/// `sts:AssumeRole` per new role), so 4/s with a burst of 20 admits a burst of a few bindings at
/// once; STS gets 2/s, burst 10. `--webhook-aws-api-throttle` entries come before these.
pub const AWS_THROTTLE: &str = "Elastic Load Balancing v2:.*=4:20,STS:.*=2:10";

/// Behaviour switches (controller flags and chart values).
#[derive(Clone, Debug)]
pub struct WebhookConfig {
    /// `--enable-pod-readiness-gate-inject` (default true). When false the pod webhook admits
    /// every pod unchanged.
    pub pod_readiness_gate_inject: bool,
    /// Service mutator on (default true; chart `enableServiceMutatorWebhook`). When false the
    /// Service webhook admits every Service unchanged.
    pub service_mutator: bool,
    /// `--load-balancer-class`: the class the Service mutator sets (default `service.k8s.aws/nlb`).
    pub load_balancer_class: String,
    /// Longest wait for one AWS answer in the TargetGroupBinding webhooks (default 5 s, below
    /// the API server's default 10 s webhook timeout, so the user sees our message rather than
    /// a timeout).
    pub aws_timeout: Duration,
    /// `--ingress-class`, `--disable-ingress-class-annotation`,
    /// `--disable-ingress-group-name-annotation`: which Ingresses the Ingress validator checks and
    /// which annotations it refuses.
    pub ingress: SelectConfig,
    /// `--cluster-name`: a target group tagged `elbv2.k8s.aws/cluster` with another value is
    /// another cluster's (empty: not compared).
    pub cluster_name: String,
    /// `--tenancy-mode` and the policy: the strict mode's refusals of a TargetGroupBinding's
    /// role, `spec.networking` sources and target group are said at admission.
    pub tenancy: Arc<lbc_model::tenancy::Tenancy>,
    /// Gate `ALBTargetControlAgent` (default off, as the upstream): pods asking for the agent
    /// get it; off, they are admitted without it and told why.
    pub target_control_agent: bool,
    /// The controller's namespace: the second place an ALBTargetControlConfig is looked for.
    pub controller_namespace: String,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        Self {
            pod_readiness_gate_inject: true,
            service_mutator: true,
            load_balancer_class: DEFAULT_LOAD_BALANCER_CLASS.to_string(),
            aws_timeout: Duration::from_secs(5),
            ingress: SelectConfig::default(),
            cluster_name: String::new(),
            tenancy: Arc::default(),
            target_control_agent: false,
            controller_namespace: String::new(),
        }
    }
}

/// Everything the handlers read.
pub struct WebhookState {
    cluster: Arc<dyn ClusterView>,
    elbv2: Arc<dyn ElbV2ByRole>,
    config: WebhookConfig,
    metrics: WebhookMetrics,
    quic: Option<quic::QuicInjector>,
}

impl WebhookState {
    pub fn new(cluster: Arc<dyn ClusterView>, elbv2: Arc<dyn ElbV2ByRole>, config: WebhookConfig) -> Self {
        Self { cluster, elbv2, config, metrics: WebhookMetrics::default(), quic: None }
    }

    /// Serves `/mutate-v1-pod-server-id` with this injector (without one that path refuses).
    pub fn with_quic(mut self, injector: quic::QuicInjector) -> Self {
        self.quic = Some(injector);
        self
    }

    pub(crate) fn quic(&self) -> Option<&quic::QuicInjector> {
        self.quic.as_ref()
    }

    /// The webhook metrics; register them once with [`WebhookMetrics::register`].
    pub fn metrics(&self) -> &WebhookMetrics {
        &self.metrics
    }

    pub fn config(&self) -> &WebhookConfig {
        &self.config
    }

    pub(crate) fn cluster(&self) -> &dyn ClusterView {
        self.cluster.as_ref()
    }

    /// The ELBv2 client a binding's target group is read with: as the role of
    /// `spec.iamRoleArnToAssume` when set (a target group of another account), as ALBC's webhook does.
    pub(crate) fn elbv2(&self, spec: &TargetGroupBindingSpec) -> Arc<dyn ElbV2> {
        let client = self.elbv2.client(spec.role_to_assume().as_ref());
        self.metrics.role_clients.set(i64::try_from(self.elbv2.cached_roles()).unwrap_or(i64::MAX));
        client
    }
}
