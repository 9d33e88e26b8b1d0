//! Service annotation keys, as suffixes under [`PREFIX`] (ALBC `pkg/annotations/constants.go`).

/// Every NLB annotation lives under this prefix.
pub const PREFIX: &str = "service.beta.kubernetes.io";

/// The full key of a Service annotation suffix.
pub(crate) fn full_key(suffix: &str) -> String {
    format!("{PREFIX}/{suffix}")
}

/// ALBC's finalizer on Services whose load balancer this controller manages.
pub const SERVICE_FINALIZER: &str = "service.k8s.aws/resources";

pub const SOURCE_RANGES: &str = "load-balancer-source-ranges";
pub const LOAD_BALANCER_TYPE: &str = "aws-load-balancer-type";
pub const TARGET_TYPE: &str = "aws-load-balancer-nlb-target-type";
pub const NAME: &str = "aws-load-balancer-name";
pub const SCHEME: &str = "aws-load-balancer-scheme";
pub const INTERNAL: &str = "aws-load-balancer-internal";
pub const PROXY_PROTOCOL: &str = "aws-load-balancer-proxy-protocol";
pub const PROXY_PROTOCOL_PER_TARGET_GROUP: &str = "aws-load-balancer-proxy-protocol-per-target-group";
pub const IP_ADDRESS_TYPE: &str = "aws-load-balancer-ip-address-type";
pub const ACCESS_LOG_ENABLED: &str = "aws-load-balancer-access-log-enabled";
pub const ACCESS_LOG_S3_BUCKET_NAME: &str = "aws-load-balancer-access-log-s3-bucket-name";
pub const ACCESS_LOG_S3_BUCKET_PREFIX: &str = "aws-load-balancer-access-log-s3-bucket-prefix";
pub const CROSS_ZONE_ENABLED: &str = "aws-load-balancer-cross-zone-load-balancing-enabled";
pub const SSL_CERT: &str = "aws-load-balancer-ssl-cert";
pub const SSL_PORTS: &str = "aws-load-balancer-ssl-ports";
pub const SSL_NEGOTIATION_POLICY: &str = "aws-load-balancer-ssl-negotiation-policy";
pub const BACKEND_PROTOCOL: &str = "aws-load-balancer-backend-protocol";
pub const ADDITIONAL_TAGS: &str = "aws-load-balancer-additional-resource-tags";
pub const HC_HEALTHY_THRESHOLD: &str = "aws-load-balancer-healthcheck-healthy-threshold";
pub const HC_UNHEALTHY_THRESHOLD: &str = "aws-load-balancer-healthcheck-unhealthy-threshold";
pub const HC_TIMEOUT: &str = "aws-load-balancer-healthcheck-timeout";
pub const HC_INTERVAL: &str = "aws-load-balancer-healthcheck-interval";
pub const HC_PROTOCOL: &str = "aws-load-balancer-healthcheck-protocol";
pub const HC_PORT: &str = "aws-load-balancer-healthcheck-port";
pub const HC_PATH: &str = "aws-load-balancer-healthcheck-path";
pub const HC_SUCCESS_CODES: &str = "aws-load-balancer-healthcheck-success-codes";
pub const TARGET_GROUP_ATTRIBUTES: &str = "aws-load-balancer-target-group-attributes";
pub const SUBNETS: &str = "aws-load-balancer-subnets";
pub const EIP_ALLOCATIONS: &str = "aws-load-balancer-eip-allocations";
pub const PRIVATE_IPV4_ADDRESSES: &str = "aws-load-balancer-private-ipv4-addresses";
pub const IPV6_ADDRESSES: &str = "aws-load-balancer-ipv6-addresses";
pub const ALPN_POLICY: &str = "aws-load-balancer-alpn-policy";
pub const TARGET_NODE_LABELS: &str = "aws-load-balancer-target-node-labels";
pub const ATTRIBUTES: &str = "aws-load-balancer-attributes";
pub const SECURITY_GROUPS: &str = "aws-load-balancer-security-groups";
pub const MANAGE_BACKEND_SG_RULES: &str = "aws-load-balancer-manage-backend-security-group-rules";
pub const INBOUND_SG_RULES_ON_PRIVATE_LINK: &str = "aws-load-balancer-inbound-sg-rules-on-private-link-traffic";
pub const SECURITY_GROUP_PREFIX_LISTS: &str = "aws-load-balancer-security-group-prefix-lists";
/// Followed by `.${PROTOCOL}-${PORT}`.
pub const LISTENER_ATTRIBUTES: &str = "aws-load-balancer-listener-attributes";
pub const MULTI_CLUSTER_TARGET_GROUP: &str = "aws-load-balancer-multi-cluster-target-group";
pub const ENABLE_PREFIX_FOR_IPV6_SOURCE_NAT: &str = "aws-load-balancer-enable-prefix-for-ipv6-source-nat";
pub const SOURCE_NAT_IPV6_PREFIXES: &str = "aws-load-balancer-source-nat-ipv6-prefixes";
pub const MINIMUM_CAPACITY: &str = "aws-load-balancer-minimum-load-balancer-capacity";
pub const ENABLE_ICMP_PMTUD: &str = "aws-load-balancer-enable-icmp-for-path-mtu-discovery";
pub const ENABLE_TCP_UDP_LISTENER: &str = "aws-load-balancer-enable-tcp-udp-listener";
pub const DISABLE_NLB_SG: &str = "aws-load-balancer-disable-nlb-sg";
pub const QUIC_ENABLED_PORTS: &str = "aws-load-balancer-quic-enabled-ports";
/// A pod annotation in ALBC; meaningless on a Service.
pub const QUIC_ENABLED_CONTAINERS: &str = "aws-load-balancer-quic-enabled-containers";
/// `service.beta.kubernetes.io/actions.${protocol}-${port}`: custom listener default actions.
pub const ACTIONS_PREFIX: &str = "actions.";

/// Keys of our prefix that we inspect for typos: anything starting with this is expected to be
/// one of the annotations above.
pub const AWS_LB_FAMILY: &str = "aws-load-balancer-";
