//! Ingress annotation keys as suffixes under [`PREFIX`] (ALBC `docs/guide/ingress/annotations.md`),
//! plus the class, controller and finalizer names an Ingress is recognised and held by.

/// Every ALB annotation lives under this prefix.
pub const PREFIX: &str = "alb.ingress.kubernetes.io";
/// Legacy class annotation on the Ingress.
pub const INGRESS_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";
/// ALBC's default `--ingress-class`.
pub const DEFAULT_INGRESS_CLASS: &str = "alb";
/// `spec.controller` of an IngressClass this controller implements.
pub const CONTROLLER: &str = "ingress.k8s.aws/alb";
/// Annotation marking the cluster's default IngressClass (applied by the API server).
pub const DEFAULT_CLASS_ANNOTATION: &str = "ingressclass.kubernetes.io/is-default-class";
/// Finalizer of an Ingress in an implicit group.
pub const IMPLICIT_GROUP_FINALIZER: &str = "ingress.k8s.aws/resources";
/// Prefix of the finalizer of an Ingress in an explicit group (followed by the group name).
pub const EXPLICIT_GROUP_FINALIZER_PREFIX: &str = "group.ingress.k8s.aws/";

pub const GROUP_NAME: &str = "group.name";
pub const GROUP_ORDER: &str = "group.order";
pub const LOAD_BALANCER_NAME: &str = "load-balancer-name";
pub const TAGS: &str = "tags";
pub const IP_ADDRESS_TYPE: &str = "ip-address-type";
pub const SCHEME: &str = "scheme";
pub const SUBNETS: &str = "subnets";
pub const SECURITY_GROUPS: &str = "security-groups";
pub const MANAGE_BACKEND_SG_RULES: &str = "manage-backend-security-group-rules";
pub const CUSTOMER_OWNED_IPV4_POOL: &str = "customer-owned-ipv4-pool";
pub const LOAD_BALANCER_ATTRIBUTES: &str = "load-balancer-attributes";
pub const WAFV2_ACL_ARN: &str = "wafv2-acl-arn";
pub const WAFV2_ACL_NAME: &str = "wafv2-acl-name";
pub const WAF_ACL_ID: &str = "waf-acl-id";
pub const WEB_ACL_ID: &str = "web-acl-id";
pub const SHIELD_ADVANCED_PROTECTION: &str = "shield-advanced-protection";
pub const LISTEN_PORTS: &str = "listen-ports";
pub const SSL_REDIRECT: &str = "ssl-redirect";
pub const INBOUND_CIDRS: &str = "inbound-cidrs";
pub const SECURITY_GROUP_PREFIX_LISTS: &str = "security-group-prefix-lists";
pub const CERTIFICATE_ARN: &str = "certificate-arn";
pub const SSL_POLICY: &str = "ssl-policy";
pub const TARGET_TYPE: &str = "target-type";
pub const BACKEND_PROTOCOL: &str = "backend-protocol";
pub const BACKEND_PROTOCOL_VERSION: &str = "backend-protocol-version";
pub const TARGET_GROUP_ATTRIBUTES: &str = "target-group-attributes";
pub const HC_PORT: &str = "healthcheck-port";
pub const HC_PROTOCOL: &str = "healthcheck-protocol";
pub const HC_PATH: &str = "healthcheck-path";
pub const HC_INTERVAL: &str = "healthcheck-interval-seconds";
pub const HC_TIMEOUT: &str = "healthcheck-timeout-seconds";
pub const HC_HEALTHY_THRESHOLD: &str = "healthy-threshold-count";
pub const HC_UNHEALTHY_THRESHOLD: &str = "unhealthy-threshold-count";
pub const SUCCESS_CODES: &str = "success-codes";
pub const AUTH_TYPE: &str = "auth-type";
pub const AUTH_IDP_COGNITO: &str = "auth-idp-cognito";
pub const AUTH_IDP_OIDC: &str = "auth-idp-oidc";
pub const AUTH_ON_UNAUTHENTICATED_REQUEST: &str = "auth-on-unauthenticated-request";
pub const AUTH_SCOPE: &str = "auth-scope";
pub const AUTH_SESSION_COOKIE: &str = "auth-session-cookie";
pub const AUTH_SESSION_TIMEOUT: &str = "auth-session-timeout";
pub const TARGET_NODE_LABELS: &str = "target-node-labels";
pub const USE_REGEX_PATH_MATCH: &str = "use-regex-path-match";
pub const MULTI_CLUSTER_TARGET_GROUP: &str = "multi-cluster-target-group";
pub const MINIMUM_CAPACITY: &str = "minimum-load-balancer-capacity";
pub const IPAM_IPV4_POOL_ID: &str = "ipam-ipv4-pool-id";
pub const JWT_VALIDATION: &str = "jwt-validation";
pub const MUTUAL_AUTHENTICATION: &str = "mutual-authentication";
pub const CREATE_ACM_CERT: &str = "create-acm-cert";
pub const ACM_PCA_ARN: &str = "acm-pca-arn";
pub const DRY_RUN_PLAN: &str = "dry-run-plan";
pub const ENABLE_FRONTEND_NLB: &str = "enable-frontend-nlb";
pub const FRONTEND_NLB_SCHEME: &str = "frontend-nlb-scheme";
pub const FRONTEND_NLB_SUBNETS: &str = "frontend-nlb-subnets";
pub const FRONTEND_NLB_SECURITY_GROUPS: &str = "frontend-nlb-security-groups";
pub const FRONTEND_NLB_LISTENER_PORT_MAPPING: &str = "frontend-nlb-listener-port-mapping";
pub const FRONTEND_NLB_EIP_ALLOCATIONS: &str = "frontend-nlb-eip-allocations";
pub const FRONTEND_NLB_HC_PORT: &str = "frontend-nlb-healthcheck-port";
pub const FRONTEND_NLB_HC_PROTOCOL: &str = "frontend-nlb-healthcheck-protocol";
pub const FRONTEND_NLB_HC_PATH: &str = "frontend-nlb-healthcheck-path";
pub const FRONTEND_NLB_HC_INTERVAL: &str = "frontend-nlb-healthcheck-interval-seconds";
pub const FRONTEND_NLB_HC_TIMEOUT: &str = "frontend-nlb-healthcheck-timeout-seconds";
pub const FRONTEND_NLB_HC_HEALTHY_THRESHOLD: &str = "frontend-nlb-healthcheck-healthy-threshold-count";
pub const FRONTEND_NLB_HC_UNHEALTHY_THRESHOLD: &str = "frontend-nlb-healthcheck-unhealthy-threshold-count";
pub const FRONTEND_NLB_HC_SUCCESS_CODES: &str = "frontend-nlb-healthcheck-success-codes";
pub const FRONTEND_NLB_ATTRIBUTES: &str = "frontend-nlb-attributes";
pub const FRONTEND_NLB_TAGS: &str = "frontend-nlb-tags";
/// Followed by `<name>`.
pub const ACTIONS_PREFIX: &str = "actions.";
/// Followed by `<name>`.
pub const CONDITIONS_PREFIX: &str = "conditions.";
/// Followed by `<name>`.
pub const TRANSFORMS_PREFIX: &str = "transforms.";
/// Followed by `<PROTOCOL>-<port>`.
pub const LISTENER_ATTRIBUTES_PREFIX: &str = "listener-attributes.";
/// Followed by `<service>.<port>`.
pub const TARGET_CONTROL_PORT_PREFIX: &str = "target-control-port.";

/// The backend port name that sends a path to `actions.<service name>`.
pub const USE_ANNOTATION: &str = "use-annotation";

/// The full key of an Ingress annotation suffix.
pub fn full_key(suffix: &str) -> String {
    format!("{PREFIX}/{suffix}")
}
