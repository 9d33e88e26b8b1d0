//! Command-line flags. Names follow the upstream AWS Load Balancer Controller where they
//! overlap, so existing Helm values and manifests carry over.

use clap::{Arg, ArgAction, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use lbc_model::compat::{ALBC_ONLY_FLAGS, FeatureGates, Finding, GivenFlag};
use std::ffi::OsString;
use std::net::SocketAddr;
use std::time::Duration;

/// The command line: this controller's flags, plus ALBC's flags that have no equivalent here
/// (`lbc_model::compat::ALBC_ONLY_FLAGS`, hidden from `--help`) so that an ALBC Deployment's
/// arguments parse unchanged. Every flag is global: it may come before or after a subcommand
/// (`aws-lb-controller --cluster-name=x doctor` = `aws-lb-controller doctor --cluster-name=x`).
pub fn command() -> clap::Command {
    let mut cmd = Args::command();
    for f in ALBC_ONLY_FLAGS {
        let mut arg = Arg::new(f.name).long(f.name).hide(true).action(ArgAction::Set);
        if f.is_bool() {
            arg = arg
                .num_args(0..=1)
                .require_equals(true)
                .default_missing_value("true")
                .value_parser(|s: &str| go_bool(s).map(|b| b.to_string()));
        }
        cmd = cmd.arg(arg);
    }
    cmd.mut_args(|a| a.global(true))
}

/// Parses the command line ([`command`]); the ALBC-only flags given are returned for [`assess_albc`].
pub fn parse_from<I, T>(argv: I) -> Result<(Args, Vec<GivenFlag>), clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let matches = command().try_get_matches_from(argv)?;
    let args = Args::from_arg_matches(&matches)?;
    let given = ALBC_ONLY_FLAGS
        .iter()
        .filter_map(|f| matches.get_one::<String>(f.name).map(|v| GivenFlag { name: f.name.into(), value: v.clone() }))
        .collect();
    Ok((args, given))
}

/// ALBC's `--feature-gates` and the ALBC-only flags given: the gates to apply and the start-up
/// warnings, or every refusal at once.
pub fn assess_albc(args: &Args, given: &[GivenFlag]) -> Result<(FeatureGates, Vec<String>), String> {
    let gates = lbc_model::compat::parse_key_bools("--feature-gates", &args.feature_gates)?;
    let (gates, mut findings) = lbc_model::compat::assess_gates(&gates);
    findings.extend(lbc_model::compat::assess_flags(given));
    findings.extend(lbc_model::vpc::ignored_tags(&args.aws_vpc_id, &args.aws_vpc_tags).map(Finding::Warning));
    if let Err(e) =
        lbc_model::ingress::certificates::parse_allowed_authorities(&args.allowed_certificate_authority_arns)
    {
        findings.push(Finding::Fatal(e));
    }
    let fatal: Vec<&str> = findings.iter().filter(|f| matches!(f, Finding::Fatal(_))).map(Finding::message).collect();
    if !fatal.is_empty() {
        return Err(fatal.join("; "));
    }
    Ok((gates, findings.into_iter().map(|f| f.message().to_string()).collect()))
}

#[derive(Parser, Debug, Clone)]
#[command(
    name = "aws-lb-controller",
    version = crate::build_info::LONG_VERSION,
    about = "Keeps AWS NLB/ALB IP target groups in sync with pod IPs"
)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Name of the Kubernetes cluster; must equal the value of the `kubernetes.io/cluster/<name>`
    /// tags on subnets and the `elbv2.k8s.aws/cluster` tag on resources.
    #[arg(long, env = "LBC_CLUSTER_NAME", default_value = "")]
    pub cluster_name: String,

    /// AWS region (required: the instance metadata service is never consulted).
    #[arg(long, env = "AWS_REGION", default_value = "")]
    pub aws_region: String,

    /// VPC of the cluster; pod IPs outside its CIDRs are reported as overlay addresses. Required
    /// unless `--aws-vpc-tags` names the VPC.
    #[arg(long, env = "LBC_AWS_VPC_ID", default_value = "")]
    pub aws_vpc_id: String,

    /// The VPC by its tags instead (`key=value,...`, all required; ALBC's flag): exactly one VPC of
    /// the region must carry them, looked up once at start (ec2:DescribeVpcs).
    #[arg(long, default_value = "")]
    pub aws_vpc_tags: String,

    /// Endpoint overrides, `serviceID=URL,...` (e.g. `Elastic Load Balancing v2=http://127.0.0.1:4566,EC2=...`);
    /// services: `Elastic Load Balancing v2`, `EC2`, `STS` (the controller's sts:AssumeRole and doctor's
    /// GetCallerIdentity), `ACM`, `WAFV2`.
    #[arg(long, default_value = "", value_parser = check_endpoints)]
    pub aws_api_endpoints: String,

    /// Client-side rate limits, `serviceID:operationRegex=rate:burst,...`, before the defaults.
    #[arg(long, default_value = "")]
    pub aws_api_throttle: String,

    /// Retries of a throttled or failed AWS call before the reconcile backs off.
    #[arg(long, default_value_t = 3)]
    pub aws_max_retries: u32,

    /// One AWS API attempt without an answer for this long is abandoned (a transient error, retried).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub aws_api_attempt_timeout: Duration,

    /// Upper bound of one AWS call's attempts and retry pauses together (client-side throttle waits excluded).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub aws_api_operation_timeout: Duration,

    /// Connecting to the Kubernetes API server gives up after this long.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub kube_api_connect_timeout: Duration,

    /// A Kubernetes API request other than a watch gives up after this long (watches are bounded by
    /// the server's watch timeout and the watcher's idle timeout instead).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub kube_api_request_timeout: Duration,

    /// Where AWS credentials come from.
    #[arg(long, value_enum, default_value_t = CredentialsSource::Default)]
    pub aws_credentials_source: CredentialsSource,

    /// Vault/OpenBao address, e.g. `https://vault.example:8200` (`--aws-credentials-source=vault`).
    #[arg(long, env = "VAULT_ADDR", default_value = "")]
    pub vault_address: String,

    /// PEM bundle of CAs trusted for the Vault server (in addition to the system roots).
    #[arg(long, env = "VAULT_CACERT", default_value = "")]
    pub vault_ca_bundle: String,

    /// Vault Enterprise / OpenBao namespace.
    #[arg(long, env = "VAULT_NAMESPACE", default_value = "")]
    pub vault_namespace: String,

    /// Mount of the Kubernetes auth method.
    #[arg(long, default_value = "kubernetes")]
    pub vault_auth_mount: String,

    /// Kubernetes auth role the controller logs in as.
    #[arg(long, default_value = "")]
    pub vault_auth_role: String,

    /// ServiceAccount token presented to Vault (re-read at every login; the chart projects one
    /// with the Vault audience).
    #[arg(long, default_value = lbc_aws::credentials::vault::DEFAULT_TOKEN_PATH)]
    pub vault_token_path: String,

    /// Mount of the AWS secrets engine.
    #[arg(long, default_value = "aws")]
    pub vault_secrets_mount: String,

    /// AWS secrets engine role to read keys from.
    #[arg(long, default_value = "")]
    pub vault_secrets_role: String,

    /// Which path of the AWS secrets engine is read.
    #[arg(long, value_enum, ignore_case = true, default_value_t = VaultCredentialType::Sts)]
    pub vault_credential_type: VaultCredentialType,

    /// Requested lifetime of STS keys (`0`: the role's default).
    #[arg(long, default_value = "15m", value_parser = parse_duration_or_zero)]
    pub vault_ttl: Duration,

    /// `role_arn` to request, for engine roles that list several.
    #[arg(long, default_value = "")]
    pub vault_role_arn: String,

    /// Accept an `http://` Vault address on another host than this one: the ServiceAccount token
    /// and the AWS keys then cross the network in clear text (a lab without TLS only).
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub vault_insecure_http: bool,

    /// Shared-credentials file kept fresh by something else (`--aws-credentials-source=file`).
    #[arg(long, default_value = "")]
    pub aws_credentials_file: String,

    /// Profile to read from `--aws-credentials-file`.
    #[arg(long, default_value = "default")]
    pub aws_credentials_profile: String,

    /// How long start-up waits for the first AWS credentials before continuing unready.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub aws_credentials_startup_wait: Duration,

    /// Only watch this namespace (all namespaces when empty).
    #[arg(long, default_value = "")]
    pub watch_namespace: String,

    /// Tenancy mode (docs/security.md): `compatible` (every manifest the upstream controller
    /// accepts works; what the strict mode would refuse is reported as an exposure) or `strict`
    /// (only what the tenancy policy grants).
    #[arg(long, default_value = "compatible", value_parser = parse_tenancy_mode())]
    pub tenancy_mode: lbc_model::tenancy::TenancyMode,

    /// The tenancy policy, JSON (the chart renders `tenancy.policy` into a ConfigMap mounted here;
    /// docs/security.md). Empty: no grants. An unusable policy stops the start with every problem named.
    #[arg(long, default_value = "")]
    pub tenancy_policy_file: String,

    /// Prometheus metrics listen address.
    #[arg(long, default_value = "0.0.0.0:8080", value_parser = parse_addr)]
    pub metrics_bind_addr: SocketAddr,

    /// Health probe (`/healthz`, `/readyz`) listen address.
    #[arg(long, default_value = "0.0.0.0:61779", value_parser = parse_addr)]
    pub health_probe_bind_addr: SocketAddr,

    /// Admission webhook port.
    #[arg(long, default_value_t = 9443)]
    pub webhook_bind_port: u16,

    /// Address the webhook listens on (all interfaces in a pod; 127.0.0.1 for local runs).
    #[arg(long, default_value = "0.0.0.0")]
    pub webhook_bind_host: std::net::IpAddr,

    /// Directory holding the webhook certificate and key.
    #[arg(long, default_value_t = default_cert_dir())]
    pub webhook_cert_dir: String,

    #[arg(long, default_value = "tls.crt")]
    pub webhook_cert_file: String,

    #[arg(long, default_value = "tls.key")]
    pub webhook_key_file: String,

    /// How long the webhook server keeps answering after SIGTERM at least: a terminating pod leaves
    /// the webhook Service's endpoints a moment after it is told to stop, and the API server sends it
    /// requests until then. It answers longer while requests keep arriving (at most 10 s more,
    /// `lbc_model::drain`); keep the total below the pod's termination grace period. 0: no drain.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub webhook_shutdown_delay: Duration,

    /// Largest admission request body accepted, in bytes (refused with 413 before any parsing).
    /// Default 3 MiB: the API server's own request limit; every AdmissionReview of an object it
    /// accepted is smaller.
    #[arg(long, default_value_t = lbc_webhook::limits::DEFAULT_MAX_BODY_BYTES, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1024..))]
    pub webhook_max_body_bytes: usize,

    /// Admission requests answered at once; beyond it a request is refused at once with 503
    /// (never queued) and the API server applies the webhook's failurePolicy.
    #[arg(long, default_value_t = lbc_webhook::limits::DEFAULT_MAX_CONCURRENT_REQUESTS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub webhook_max_concurrent_requests: usize,

    /// Longest time one admission request may take (body read included) before it is answered
    /// with 504; keep it below the webhook configurations' timeoutSeconds (the chart renders
    /// timeoutSeconds - 2 s).
    #[arg(long, default_value = "8s", value_parser = parse_duration)]
    pub webhook_request_timeout: Duration,

    /// PEM file of the CA(s) that sign the API server's webhook client certificate: when set,
    /// the webhook server completes a TLS handshake only with a client presenting a certificate
    /// chained to it (the API server's AdmissionConfiguration, docs/webhooks.md). Empty: no
    /// client certificate asked for. ALBC's `--kube-ca-pem-filepath` is the same setting.
    #[arg(long, default_value = "", alias = "kube-ca-pem-filepath")]
    pub webhook_client_ca_file: String,

    /// The webhook's own client-side AWS rate limits (`--aws-api-throttle` syntax), before its
    /// defaults `Elastic Load Balancing v2:.*=4:20,STS:.*=2:10`; apart from the reconcilers' buckets.
    #[arg(long, default_value = "")]
    pub webhook_aws_api_throttle: String,

    /// Where the webhook serving certificate comes from: `files` (the files above: a Secret
    /// volume, cert-manager, your own) or `controller` (the controller keeps a CA and serving
    /// certificate in --webhook-cert-secret and sets the caBundle of its webhook configurations).
    #[arg(long, value_enum, default_value_t = WebhookCertMode::Files)]
    pub webhook_cert_mode: WebhookCertMode,

    /// controller mode: the Secret holding the CA and serving certificate (created when missing).
    #[arg(long, default_value = "")]
    pub webhook_cert_secret: String,

    /// controller mode: the namespace of --webhook-cert-secret.
    #[arg(long, env = "POD_NAMESPACE", default_value = "")]
    pub webhook_cert_secret_namespace: String,

    /// controller mode: the serving certificate's names, comma-separated (the webhook Service's
    /// DNS names; IP addresses are accepted too).
    #[arg(long, default_value = "")]
    pub webhook_cert_dns_names: String,

    /// controller mode: the MutatingWebhookConfiguration whose webhooks get the CA bundle.
    #[arg(long, default_value = "")]
    pub mutating_webhook_configuration: String,

    /// controller mode: the ValidatingWebhookConfiguration whose webhooks get the CA bundle.
    #[arg(long, default_value = "")]
    pub validating_webhook_configuration: String,

    /// controller mode: lifetime of a CA (a new one is rolled in with a third of it left).
    #[arg(long, default_value = "87600h", value_parser = parse_duration)]
    pub webhook_cert_ca_lifetime: Duration,

    /// controller mode: lifetime of a serving certificate (renewed from the same CA with a third left).
    #[arg(long, default_value = "8760h", value_parser = parse_duration)]
    pub webhook_cert_lifetime: Duration,

    /// controller mode: how long every webhook must have trusted a new CA before a serving
    /// certificate from it is served.
    #[arg(long, hide = true, default_value = "60s", value_parser = parse_duration)]
    pub webhook_cert_settle: Duration,

    /// controller mode: how long after the serving certificate from the current CA was written
    /// the older CAs leave the bundle.
    #[arg(long, hide = true, default_value = "1h", value_parser = parse_duration)]
    pub webhook_cert_retire_after: Duration,

    /// A rule forwarding to one Service that does not exist answers a fixed 503 and the Ingress
    /// gets a Warning (true, ALBC's default); false fails the IngressGroup's pass (nothing changes
    /// in AWS) until the Service exists (ALBC flag).
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub tolerate_non_existent_backend_service: bool,

    /// A `use-annotation` backend whose `actions.<name>` annotation is missing answers a fixed 503
    /// and the Ingress gets a Warning (true, ALBC's default); false fails the IngressGroup's pass
    /// (ALBC flag).
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub tolerate_non_existent_backend_action: bool,

    /// Inject readiness gates into new pods of labelled namespaces (pod webhook).
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub enable_pod_readiness_gate_inject: bool,

    /// Default `spec.loadBalancerClass` of LoadBalancer Services (Service webhook).
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub enable_service_mutator_webhook: bool,

    /// The Service load balancer class this controller handles.
    #[arg(long, default_value = "service.k8s.aws/nlb")]
    pub load_balancer_class: String,

    /// The environment variable the pod webhook (/mutate-v1-pod-server-id) gives each container
    /// named by a pod's `service.beta.kubernetes.io/aws-load-balancer-quic-enabled-containers`
    /// annotation, holding its QUIC server ID, and that QUIC target groups read it from (ALBC flag).
    #[arg(long, default_value = lbc_model::wire::DEFAULT_QUIC_ENV)]
    pub quic_environment_variable_name: String,

    /// The `kubernetes.io/ingress.class` annotation value this controller answers to (ALBC flag).
    #[arg(long, default_value = "alb")]
    pub ingress_class: String,

    /// Refuse (at admission) Ingresses that newly use the `kubernetes.io/ingress.class`
    /// annotation; existing ones keep working (ALBC flag).
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub disable_ingress_class_annotation: bool,

    /// Refuse (at admission) Ingresses that newly set or change `alb.ingress.kubernetes.io/group.name`;
    /// IngressClassParams `spec.group` remains (ALBC flag).
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub disable_ingress_group_name_annotation: bool,

    /// Reconcile `type: LoadBalancer` Services into NLBs (ALBC's selection rules).
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub enable_service_controller: bool,

    /// Apply TargetGroupBinding `spec.networking` as ingress rules on the security groups of the
    /// targets' ENIs (ALBC always does; it has no flag). Off: the rules are neither added nor removed.
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub enable_backend_security_group_rules: bool,

    /// Attach one shared backend security group (`k8s-traffic-<cluster>-<hash>`, created and
    /// deleted by the controller) to every load balancer with a managed frontend group and use it
    /// as the source of the pods' ingress rules (ALBC flag). Off: each frontend group is the source.
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub enable_backend_security_group: bool,

    /// Use this existing security group (sg-…) as the shared backend group instead of creating one;
    /// the controller never modifies or deletes it (ALBC flag).
    #[arg(long, default_value = "")]
    pub backend_security_group: String,

    /// Backend rules from one source security group keep their exact ports instead of one range
    /// from the lowest to the highest port (ALBC flag).
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub disable_restricted_sg_rules: bool,

    /// Tags, `k=v,k=v`, that the security group receiving backend rules must carry (besides the
    /// `kubernetes.io/cluster/<cluster>` key) when a target ENI has several groups (ALBC flag).
    #[arg(long, default_value = "")]
    pub service_target_eni_security_group_tags: String,

    /// Tags added to every AWS resource the controller creates, `k=v,k=v` (annotations cannot override them).
    #[arg(long, default_value = "")]
    pub default_tags: String,

    /// Tag keys managed outside the controller, comma-separated: never added, changed or removed.
    #[arg(long, default_value = "")]
    pub external_managed_tags: String,

    /// Reconcile Ingresses (IngressGroups) into ALBs (ALBC's selection and group rules).
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub enable_ingress_controller: bool,

    /// Parallel IngressGroup reconciles (one group is never reconciled twice at once).
    #[arg(long, default_value_t = 3)]
    pub ingress_max_concurrent_reconciles: u16,

    /// Private CA (AWS Private CA ARN) of the certificates `create-acm-cert` requests when the
    /// Ingress names none with `acm-pca-arn`; empty: Amazon-issued, DNS-validated (ALBC flag; needs
    /// the `EnableCertificateManagement` feature gate).
    #[arg(long, default_value = "")]
    pub default_pca_arn: String,

    /// ACM Private CA ARNs, comma-separated: certificate discovery (HTTPS without
    /// `certificate-arn`) keeps only private certificates issued by these CAs. Empty: every
    /// certificate (ALBC flag).
    #[arg(long, default_value = "")]
    pub allowed_certificate_authority_arns: String,

    /// SSL policy of HTTPS listeners whose Ingresses name none (ALBC flag).
    #[arg(long, default_value = "ELBSecurityPolicy-2016-08")]
    pub default_ssl_policy: String,

    /// Target type of Services and Ingress backends without a target-type annotation: `instance`
    /// (ALBC's default: the nodes on the NodePort) or `ip`.
    #[arg(long, value_enum, default_value_t = TargetTypeFlag::Instance)]
    pub default_target_type: TargetTypeFlag,

    /// Parallel Service reconciles.
    #[arg(long, default_value_t = 3)]
    pub service_max_concurrent_reconciles: u16,

    /// Parallel Gateway (and GatewayClass) reconciles, with the gate ALBGatewayAPI.
    #[arg(long, default_value_t = 3)]
    pub alb_gateway_max_concurrent_reconciles: u16,

    /// With the gate ALBGatewayAPI: read Secrets of type kubernetes.io/tls (a list+watch of every
    /// namespace watched) for the certificates of HTTPS listeners (`tls.certificateRefs`), imported
    /// into ACM. Off: such listeners are refused with this reason. Needs the chart's
    /// `gateway.certificateSecrets: true` (its RBAC).
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub enable_gateway_certificate_secrets: bool,

    /// Run leader election (only the leader writes to AWS and pod status).
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub enable_leader_election: bool,

    #[arg(long, default_value = "aws-load-balancer-controller-leader")]
    pub leader_election_id: String,

    /// Namespace of the leader Lease (the pod's namespace when empty).
    #[arg(long, env = "POD_NAMESPACE", default_value = "")]
    pub leader_election_namespace: String,

    /// Seconds a leader's lease is valid without renewal.
    #[arg(long, default_value_t = 15)]
    pub leader_election_lease_duration: u64,

    /// Parallel TargetGroupBinding reconciles (one binding is never reconciled twice at once);
    /// bindings due beyond it wait their turn in the order they became due.
    #[arg(long, default_value_t = 8)]
    pub targetgroupbinding_max_concurrent_reconciles: u16,

    /// Cap of the per-binding error backoff (ALBC: 16m40s).
    #[arg(long, default_value = "2m", value_parser = parse_duration)]
    pub targetgroupbinding_max_exponential_backoff_delay: Duration,

    /// Longest wait between health polls of a target group whose pods wait on a readiness gate;
    /// the actual interval is half the group's health-check interval, within [1s, this].
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub targetgroupbinding_requeue_duration: Duration,

    /// Burst window: EndpointSlice events for one binding within it become one plan.
    #[arg(long, default_value = "50ms", value_parser = parse_duration)]
    pub targetgroupbinding_debounce: Duration,

    /// Targets per RegisterTargets/DeregisterTargets call.
    #[arg(long, default_value_t = lbc_model::plan::DEFAULT_BATCH_SIZE)]
    pub targetgroupbinding_batch_size: usize,

    /// How often each binding is re-verified against AWS (drift: targets removed or added out
    /// of band). Jittered by up to +50%.
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    pub sync_period: Duration,

    /// Register pod IPs outside the VPC's CIDRs with AvailabilityZone=all instead of refusing
    /// them (only for pod networks the VPC really routes, e.g. peered VPCs).
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub allow_targets_outside_vpc: bool,

    /// ALBC's feature gates, `Name=true,Name=false` (see `lbc_model::compat::GATES`): the ones this
    /// controller implements are applied, the others are reported at start-up.
    #[arg(long, default_value = "")]
    pub feature_gates: String,

    /// Scheme of load balancers whose Service or Ingress names none: `internal` (ALBC's default)
    /// or `internet-facing`.
    #[arg(long, value_enum, default_value_t = SchemeFlag::Internal)]
    pub default_load_balancer_scheme: SchemeFlag,

    /// Secrets (OIDC client credentials) are read only when they carry this `key=value` label (ALBC flag).
    #[arg(long, default_value = "", value_parser = parse_label)]
    pub required_secrets_label: String,

    /// Manage WAFv2 web ACL associations of ALBs from the `wafv2-acl-*` annotations (ALBC flag).
    /// Off: associations are left as they are and the annotations have no effect.
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub enable_wafv2: bool,

    /// Manage WAF Classic (WAF Regional) web ACL associations of ALBs from the `waf-acl-id` /
    /// `web-acl-id` annotations (ALBC flag). Off: associations are left as they are.
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub enable_waf: bool,

    /// Manage Shield Advanced protections of ALBs from the `shield-advanced-protection`
    /// annotation (ALBC flag). Off: protections are left as they are.
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub enable_shield: bool,

    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Log level (or a `RUST_LOG`-style filter).
    #[arg(long, default_value = "info")]
    pub log_level: String,

    /// OpenTelemetry traces over OTLP/HTTP (protobuf): the base URL of a collector, Tempo or any
    /// OTLP receiver, e.g. `http://tempo.monitoring:4318`; spans are sent to `<URL>/v1/traces`
    /// (a URL already ending in `/v1/traces` is used as is). Empty (the default): no exporter, no
    /// connection, no trace IDs in logs.
    #[arg(long, default_value = "", value_parser = crate::telemetry::parse_otlp_endpoint)]
    pub otlp_endpoint: String,

    /// `service.name` resource attribute of the exported spans.
    #[arg(long, default_value = "aws-lb-controller", value_parser = crate::telemetry::parse_service_name)]
    pub otlp_service_name: String,

    /// Fraction of traces kept, 0 to 1 (1: every reconcile is traced). Child spans (AWS calls,
    /// Kubernetes writes) follow their reconcile's decision.
    #[arg(long, default_value_t = 1.0, value_parser = crate::telemetry::parse_sampling_ratio)]
    pub otlp_sampling_ratio: f64,

    /// Path to a kubeconfig (in-cluster config or $KUBECONFIG when empty).
    #[arg(long, env = "KUBECONFIG", default_value = "")]
    pub kubeconfig: String,
}

/// `--tenancy-mode`'s values, listed for `--help` and shell completion.
fn parse_tenancy_mode() -> impl clap::builder::TypedValueParser<Value = lbc_model::tenancy::TenancyMode> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(["compatible", "strict"])
        .map(|v| v.parse::<lbc_model::tenancy::TenancyMode>().expect("every listed value is a mode"))
}

impl Args {
    /// `--tenancy-mode` with the policy of `--tenancy-policy-file`, checked.
    pub fn tenancy(&self) -> anyhow::Result<lbc_model::tenancy::Tenancy> {
        let path = self.tenancy_policy_file.as_str();
        let text = if path.is_empty() {
            String::new()
        } else {
            std::fs::read_to_string(path)
                .map_err(|e| anyhow::anyhow!("--tenancy-policy-file {path}: cannot read it: {e}"))?
        };
        let source = if path.is_empty() { "(none)" } else { path };
        Ok(lbc_model::tenancy::Tenancy::parse(self.tenancy_mode, &text, source)?)
    }

    /// Which Ingresses are ours and which annotations are disabled (`lbc_model::ingress::select`).
    pub fn ingress_select_config(&self) -> lbc_model::ingress::SelectConfig {
        lbc_model::ingress::SelectConfig {
            ingress_class: self.ingress_class.clone(),
            disable_ingress_class_annotation: self.disable_ingress_class_annotation,
            disable_group_name_annotation: self.disable_ingress_group_name_annotation,
            ..Default::default()
        }
    }
}

#[derive(Subcommand, Debug, Clone)]
pub enum Command {
    /// Print the CustomResourceDefinitions this controller serves, as YAML.
    Crd,
    /// Check the cluster and AWS read-only and explain what stops the controller
    /// (`aws-lb-controller doctor [controller flags] [--output json]`); exits 1 when a check fails.
    Doctor(crate::doctor::DoctorArgs),
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum CredentialsSource {
    /// The AWS SDK default chain (environment, profile, web identity, ...), read as the SDK does.
    Default,
    /// Vault/OpenBao: Kubernetes auth → AWS secrets engine, refreshed before expiry.
    Vault,
    /// A shared-credentials file, re-read whenever it changes (vault-agent, CSI driver, ...).
    File,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// `--vault-credential-type`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum VaultCredentialType {
    /// `<mount>/sts/<role>`: STS keys (assumed_role, federation_token, session_token).
    Sts,
    /// `<mount>/creds/<role>`: iam_user keys (`iam_user` is accepted as a name for it).
    #[value(alias = "iam_user")]
    Creds,
}

impl From<VaultCredentialType> for lbc_aws::credentials::vault::CredentialType {
    fn from(t: VaultCredentialType) -> Self {
        match t {
            VaultCredentialType::Sts => Self::Sts,
            VaultCredentialType::Creds => Self::Creds,
        }
    }
}

/// `--default-target-type`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetTypeFlag {
    Instance,
    Ip,
}

impl From<TargetTypeFlag> for lbc_model::crd::TargetType {
    fn from(t: TargetTypeFlag) -> Self {
        match t {
            TargetTypeFlag::Instance => Self::Instance,
            TargetTypeFlag::Ip => Self::Ip,
        }
    }
}

/// `--default-load-balancer-scheme`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemeFlag {
    Internal,
    InternetFacing,
}

impl From<SchemeFlag> for lbc_model::lb::Scheme {
    fn from(s: SchemeFlag) -> Self {
        match s {
            SchemeFlag::Internal => Self::Internal,
            SchemeFlag::InternetFacing => Self::InternetFacing,
        }
    }
}

/// A boolean as Go's flag package reads it (`--flag`, `--flag=true`, `--flag=0`, …), as in ALBC.
fn go_bool(s: &str) -> Result<bool, String> {
    lbc_model::compat::parse_go_bool(s)
}

/// `--aws-api-endpoints`, checked when the flags are read (the value is kept: `lbc_aws` parses it
/// again where it builds the clients).
fn check_endpoints(s: &str) -> Result<String, String> {
    lbc_aws::config::Endpoints::parse(s).map(|_| s.to_string()).map_err(|e| e.to_string())
}

/// `key=value` (both non-empty) or empty.
fn parse_label(s: &str) -> Result<String, String> {
    match s.split_once('=') {
        _ if s.is_empty() => Ok(String::new()),
        Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => Ok(s.to_string()),
        _ => Err(format!("invalid label {s:?}: expected key=value, e.g. aws-lb-controller/readable=true")),
    }
}

fn default_cert_dir() -> String {
    std::env::temp_dir().join("k8s-webhook-server/serving-certs").to_string_lossy().into_owned()
}

/// Accepts `:8080` (all interfaces, as ALBC writes it) as well as `host:port`.
fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    let full = if s.starts_with(':') { format!("0.0.0.0{s}") } else { s.to_string() };
    full.parse().map_err(|_| format!("invalid address {s:?}: expected host:port or :port"))
}

/// `--webhook-cert-mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum WebhookCertMode {
    /// The certificate and key files in `--webhook-cert-dir`, re-read on change.
    Files,
    /// A CA and serving certificate the controller keeps in a Secret.
    Controller,
}

fn parse_duration_or_zero(s: &str) -> Result<Duration, String> {
    if s.trim() == "0" { Ok(Duration::ZERO) } else { parse_duration(s) }
}

/// A duration as ALBC's flags write them (Go's `500ms`, `15s`, `2m`, `16m40s`, `10h0m0s`), read by
/// jiff's friendly duration parser (which also takes `1h 30m`, `1.5s` and ISO 8601's `PT15S`).
/// Negative durations are refused. clap puts the flag's name and the value before the message.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    const EXPECTED: &str = "expected a duration with units, e.g. 500ms, 15s, 2m, 1h30m or 10h0m0s";
    let d: jiff::SignedDuration = s.trim().parse().map_err(|e| format!("{s:?} is not a duration ({e}); {EXPECTED}"))?;
    Duration::try_from(d).map_err(|_| format!("{s:?} is negative; {EXPECTED}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(argv: &[&str]) -> Result<(Args, Vec<GivenFlag>), clap::Error> {
        parse_from(std::iter::once("aws-lb-controller").chain(argv.iter().copied()))
    }

    #[test]
    fn go_style_booleans_parse_bare_and_with_values() {
        let (a, _) = parse(&["--disable-ingress-class-annotation", "--enable-leader-election=F"]).unwrap();
        assert!(a.disable_ingress_class_annotation && !a.enable_leader_election);
        let (a, _) = parse(&["--enable-wafv2=0", "--enable-service-mutator-webhook=True"]).unwrap();
        assert!(!a.enable_wafv2 && a.enable_service_mutator_webhook);
        let e = parse(&["--enable-leader-election=maybe"]).unwrap_err().to_string();
        assert!(e.contains("maybe") && e.contains("expected true or false"), "{e}");
    }

    /// Every flag of ALBC v3.5 (the parity table's rows), as an ALBC Deployment would pass it,
    /// parses; only the ALBC-only ones are ALBC's alone, every other is ours under ALBC's name.
    #[test]
    fn every_albc_flag_parses() {
        use lbc_model::compat::parity_flags::FLAGS;
        let argv: Vec<String> = FLAGS.iter().map(|f| format!("--{}={}", f.name, f.example)).collect();
        for (f, arg) in FLAGS.iter().zip(&argv) {
            let (_, given) = parse(&[arg.as_str()]).unwrap_or_else(|e| panic!("{arg}: {e}"));
            let albc_only = ALBC_ONLY_FLAGS.iter().any(|o| o.name == f.name);
            assert_eq!(given.len(), usize::from(albc_only), "{arg}: ALBC-only here exactly when listed so");
        }
        let (a, given) = parse(&argv.iter().map(String::as_str).collect::<Vec<_>>()).unwrap();
        assert_eq!(given.len(), ALBC_ONLY_FLAGS.len());
        assert_eq!(a.sync_period, Duration::from_secs(36000));
        // At ALBC's defaults, only the flags whose feature is absent here are reported.
        let (_, warnings) = assess_albc(&a, &given).unwrap();
        assert!(warnings.iter().any(|w| w.contains("--nlb-gateway-max-concurrent-reconciles")), "{warnings:?}");
        assert!(!warnings.iter().any(|w| w.contains("--enable-endpoint-slices")), "{warnings:?}");
    }

    #[test]
    fn unsafe_albc_flags_stop_the_start_with_the_fix() {
        let (a, given) = parse(&[
            "--allowed-certificate-authority-arns=arn:aws:acm-pca:x",
            "--enable-shield",
            "--feature-gates=ALBSingleSubnet=true",
        ])
        .unwrap();
        let e = assess_albc(&a, &given).unwrap_err();
        assert!(e.contains("\"arn:aws:acm-pca:x\" is not an ACM Private CA ARN"), "{e}");
        let ca = "arn:aws:acm-pca:us-east-1:123456789012:certificate-authority/ours";
        let (a, given) = parse(&[&format!("--allowed-certificate-authority-arns={ca}")]).unwrap();
        assert!(assess_albc(&a, &given).is_ok(), "honoured, not refused");
        // As in ALBC, --aws-vpc-id wins over the tags: then they are only reported.
        let (a, given) = parse(&["--aws-vpc-tags=env=prod", "--aws-vpc-id=vpc-1"]).unwrap();
        assert!(assess_albc(&a, &given).unwrap().1[0].contains("--aws-vpc-tags=env=prod has no effect"));
        // Numeric ALBC-only flags take numbers (their defaults, 0 and 1, are not booleans).
        let (_, given) =
            parse(&["--max-targets-per-target-group=1000", "--globalaccelerator-max-concurrent-reconciles=2"]).unwrap();
        assert_eq!(given.len(), 2);
        assert!(parse(&["--enable-endpoint-slices=2"]).is_err());
        let (a, given) =
            parse(&["--enable-shield", "--enable-endpoint-slices=false", "--feature-gates=ALBSingleSubnet=true"])
                .unwrap();
        let (gates, warnings) = assess_albc(&a, &given).unwrap();
        assert!(gates.alb_single_subnet && a.enable_shield && a.enable_waf);
        assert_eq!(warnings.len(), 1, "only the ALBC-only flag: {warnings:?}");
        let (a, given) = parse(&["--feature-gates=ALBSingleSubnet=true,Nope=false"]).unwrap();
        assert!(assess_albc(&a, &given).unwrap_err().contains("unknown gate \"Nope\""), "refused, as ALBC does");
        let (a, given) = parse(&["--feature-gates=ALBSingleSubnet"]).unwrap();
        assert!(assess_albc(&a, &given).unwrap_err().contains("has no '='"));
        assert!(parse(&["--required-secrets-label=novalue"]).is_err());
    }

    #[test]
    fn albcs_kube_ca_pem_filepath_asks_webhook_callers_for_certificates_as_ours_does() {
        let (a, given) = parse(&["--kube-ca-pem-filepath=/etc/kubernetes/pki/front-proxy-ca.crt"]).unwrap();
        assert_eq!(a.webhook_client_ca_file, "/etc/kubernetes/pki/front-proxy-ca.crt");
        assert!(given.is_empty() && assess_albc(&a, &given).unwrap().1.is_empty());
        // Given twice under both names: refused by the parser rather than one silently dropped.
        assert!(parse(&["--kube-ca-pem-filepath=/a", "--webhook-client-ca-file=/b"]).is_err());
    }

    /// What a parse yields, the subcommand aside.
    fn flags_of((a, given): (Args, Vec<GivenFlag>)) -> String {
        format!("{:?} {given:?}", Args { command: None, ..a })
    }

    /// Every flag (ours and ALBC's) means the same before `doctor` or `crd`, after it, and with no
    /// subcommand (the controller's normal run). Each is given a value other than its default, so
    /// a flag that was parsed but dropped would show.
    #[test]
    fn every_flag_works_before_and_after_a_subcommand() {
        let baseline = flags_of(parse(&[]).unwrap());
        let mut checked = 0;
        for arg in command().get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if matches!(long, "help" | "version") {
                continue;
            }
            let mut values: Vec<String> = arg.get_possible_values().iter().map(|v| v.get_name().to_string()).collect();
            values.extend(
                [
                    "true",
                    "false",
                    "7",
                    "4096",
                    "7s",
                    "127.0.0.7",
                    "127.0.0.1:7",
                    "a=b",
                    "x",
                    "0.5",
                    "http://127.0.0.7:4318",
                    "EC2=http://127.0.0.7:4566",
                ]
                .map(str::to_string),
            );
            let flag = std::iter::once(format!("--{long}"))
                .chain(values.iter().map(|v| format!("--{long}={v}")))
                .find(|f| parse(&[f.as_str()]).is_ok_and(|p| flags_of(p) != baseline))
                .unwrap_or_else(|| panic!("no value of --{long} parses to something other than its default"));
            let alone = flags_of(parse(&[flag.as_str()]).unwrap());
            for sub in ["doctor", "crd"] {
                for argv in [[flag.as_str(), sub], [sub, flag.as_str()]] {
                    let parsed = parse(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
                    let is_sub = match &parsed.0.command {
                        Some(Command::Doctor(_)) => sub == "doctor",
                        Some(Command::Crd) => sub == "crd",
                        None => false,
                    };
                    assert!(is_sub, "{argv:?}: {:?}", parsed.0.command);
                    assert_eq!(flags_of(parsed), alone, "{argv:?}");
                }
            }
            checked += 1;
        }
        assert!(checked > 60 + ALBC_ONLY_FLAGS.len(), "{checked} flags checked");

        // Doctor's own flags still belong to doctor, next to the controller's.
        let (a, _) = parse(&["doctor", "--cluster-name=dev-meta", "--output=json", "--aws-region=eu-west-1"]).unwrap();
        assert_eq!((a.cluster_name.as_str(), a.aws_region.as_str()), ("dev-meta", "eu-west-1"));
        let Some(Command::Doctor(d)) = a.command else { panic!("doctor: {:?}", a.command) };
        assert_eq!(d.output, crate::doctor::Format::Json);
        assert!(parse(&["--output=json", "doctor"]).is_err(), "--output is doctor's flag only");
    }

    /// Every form the flags' documentation and ALBC's manifests use, and Go's others.
    #[test]
    fn durations() {
        for (text, want) in [
            ("10s", Duration::from_secs(10)),
            ("1m30s", Duration::from_secs(90)),
            ("10h", Duration::from_secs(36_000)),
            ("10h0m0s", Duration::from_secs(36_000)),
            ("16m40s", Duration::from_secs(1000)),
            ("2m", Duration::from_secs(120)),
            ("1h30m", Duration::from_secs(5400)),
            ("500ms", Duration::from_millis(500)),
            ("50ms", Duration::from_millis(50)),
            ("1.5s", Duration::from_millis(1500)),
            ("0s", Duration::ZERO),
            (" 15m ", Duration::from_secs(900)),
        ] {
            assert_eq!(parse_duration(text), Ok(want), "{text:?}");
        }
        for bad in ["", "5", "5x", "m", "-5s", "ten seconds"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")) && e.contains("e.g. 500ms, 15s, 2m, 1h30m"), "{bad:?}: {e}");
        }
        assert_eq!(parse_duration_or_zero("0"), Ok(Duration::ZERO));
    }

    /// A bad value names the flag, the value seen and the expected form.
    #[test]
    fn bad_values_name_the_flag_the_value_and_the_expected_form() {
        for (argv, needles) in [
            ("--sync-period=10", &["--sync-period", "'10'", "1h30m"][..]),
            ("--vault-ttl=-1m", &["--vault-ttl", "'-1m'", "negative"][..]),
            ("--aws-api-attempt-timeout=soon", &["--aws-api-attempt-timeout", "'soon'", "e.g. 500ms"][..]),
            ("--default-target-type=instances", &["--default-target-type", "'instances'", "instance, ip"][..]),
            (
                "--default-load-balancer-scheme=public",
                &["--default-load-balancer-scheme", "'public'", "internet-facing"][..],
            ),
            ("--vault-credential-type=keys", &["--vault-credential-type", "'keys'", "sts, creds"][..]),
            ("--aws-api-endpoints=S3=http://x", &["--aws-api-endpoints", "\"S3=http://x\"", "known: Elastic"][..]),
        ] {
            let e = parse(&[argv]).unwrap_err().to_string();
            for n in needles {
                assert!(e.contains(n), "{argv}: {n:?} missing in {e}");
            }
        }
    }

    /// `STS=` is a known service: its URL reaches the STS client the assume-role credentials use.
    #[test]
    fn sts_endpoint_is_accepted_and_kept() {
        let (a, _) = parse(&["--aws-api-endpoints=STS=http://127.0.0.1:4566,EC2=http://127.0.0.1:4567"]).unwrap();
        let e = lbc_aws::config::Endpoints::parse(&a.aws_api_endpoints).unwrap();
        assert_eq!(e.sts.as_deref(), Some("http://127.0.0.1:4566"));
        assert_eq!(e.ec2.as_deref(), Some("http://127.0.0.1:4567"));
    }

    #[test]
    fn enum_flags_parse_to_their_types() {
        let (a, _) = parse(&[]).unwrap();
        assert_eq!(
            (a.vault_credential_type, a.default_target_type, a.default_load_balancer_scheme),
            (VaultCredentialType::Sts, TargetTypeFlag::Instance, SchemeFlag::Internal),
            "defaults"
        );
        let (a, _) = parse(&[
            "--vault-credential-type=CREDS",
            "--default-target-type=ip",
            "--default-load-balancer-scheme=internet-facing",
        ])
        .unwrap();
        assert_eq!(lbc_aws::credentials::vault::CredentialType::from(a.vault_credential_type).as_str(), "creds");
        assert_eq!(lbc_model::crd::TargetType::from(a.default_target_type), lbc_model::crd::TargetType::Ip);
        assert_eq!(lbc_model::lb::Scheme::from(a.default_load_balancer_scheme), lbc_model::lb::Scheme::InternetFacing);
        let (a, _) = parse(&["--vault-credential-type=iam_user"]).unwrap();
        assert_eq!(a.vault_credential_type, VaultCredentialType::Creds, "Vault's own name for creds");
    }

    #[test]
    fn albc_style_flags_parse() {
        let a = Args::try_parse_from([
            "aws-lb-controller",
            "--cluster-name=dev-meta",
            "--aws-region=us-east-1",
            "--metrics-bind-addr=:8080",
            "--enable-leader-election=false",
            "--targetgroupbinding-max-exponential-backoff-delay=16m40s",
        ])
        .unwrap();
        assert_eq!(a.cluster_name, "dev-meta");
        assert_eq!(a.metrics_bind_addr.port(), 8080);
        assert!(!a.enable_leader_election);
        assert_eq!(a.targetgroupbinding_max_exponential_backoff_delay, Duration::from_secs(1000));
        assert_eq!(a.aws_credentials_source, CredentialsSource::Default);
        assert_eq!(a.ingress_class, "alb");
        assert!(!a.disable_ingress_class_annotation && !a.disable_ingress_group_name_annotation);
    }

    #[test]
    fn ingress_flags_parse_as_albc_writes_them() {
        let a = Args::try_parse_from([
            "aws-lb-controller",
            "--ingress-class=alb-internal",
            "--disable-ingress-class-annotation=true",
            "--disable-ingress-group-name-annotation=true",
        ])
        .unwrap();
        let c = a.ingress_select_config();
        assert_eq!(c.ingress_class, "alb-internal");
        assert!(c.disable_ingress_class_annotation && c.disable_group_name_annotation);
    }

    #[test]
    fn credential_source_flags_parse() {
        let a = Args::try_parse_from([
            "aws-lb-controller",
            "--aws-credentials-source=vault",
            "--vault-address=https://vault:8200",
            "--vault-auth-role=lbc",
            "--vault-secrets-role=lbc",
            "--vault-ttl=0",
        ])
        .unwrap();
        assert_eq!(a.aws_credentials_source, CredentialsSource::Vault);
        assert_eq!(a.vault_ttl, Duration::ZERO);
        assert_eq!(a.vault_credential_type, VaultCredentialType::Sts);
        let f =
            Args::try_parse_from(["aws-lb-controller", "--aws-credentials-source=file", "--aws-credentials-file=/x"])
                .unwrap();
        assert_eq!(f.aws_credentials_source, CredentialsSource::File);
        assert!(Args::try_parse_from(["aws-lb-controller", "--aws-credentials-source=irsa"]).is_err());
    }
}
