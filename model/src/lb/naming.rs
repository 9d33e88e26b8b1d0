//! Deterministic AWS names, computed exactly as the upstream AWS Load Balancer Controller (ALBC)
//! computes them, so a load balancer, target group or security group that ALBC created is found
//! again under the same name after users swap controllers.
//!
//! Every generated name has the shape `k8s-<namespace, 8 chars>-<name, 8 chars>-<hash, 10 hex>`:
//! namespace and name lose every character that is not an ASCII letter or digit and are then cut
//! to 8 characters; the hash is the lower-case hex SHA-256 of the inputs below, written one after
//! the other with no separator, cut to 10 characters. The inputs (verified against ALBC's
//! `pkg/service/model_build_load_balancer.go`, `model_build_target_group.go`,
//! `model_build_managed_sg.go` and `pkg/networking/backend_sg_provider.go`):
//!
//! | resource | hash inputs, in order |
//! |---|---|
//! | NLB | cluster name, Service UID, scheme (`internal` / `internet-facing`) |
//! | target group (and its TargetGroupBinding) | cluster name, Service UID, target-group port, Service port, target type (`ip`), target-group protocol (`TCP`, `TLS`, …), health-check protocol, health-check interval seconds |
//! | managed frontend security group | cluster name, Service **name**, Service **namespace**, Service UID |
//! | shared backend security group | cluster name only; shape `k8s-traffic-<cluster, ≤232 chars>-<hash>` |
//! | ALB of an IngressGroup | cluster name, group ID (group name, or `namespace/name`), scheme |
//! | managed frontend SG of an IngressGroup | cluster name, group ID |
//! | Ingress target group | cluster name, group ID, Ingress namespace, Ingress name, Service UID, backend port as written (number or name), target-group port, target type, protocol (`HTTP`/`HTTPS`), protocol version (`HTTP1`/`HTTP2`/`GRPC`) |
//! | Gateway's load balancer | as the NLB: cluster name, Gateway UID, scheme |
//! | Gateway route target group (named after the route) | cluster name, Gateway namespace and name, route namespace, name and kind, Service namespace and name, port, target type, protocol, protocol version and target-control port when set |
//!
//! IngressGroup names (ALB, frontend SG) have the shape `k8s-<group name, 17 chars>-<hash>` for an
//! explicit group and the usual `k8s-<namespace>-<name>-<hash>` for an implicit one; an Ingress
//! target group is named after the backend Service's namespace and name (ALBC
//! `pkg/ingress/model_build_load_balancer.go`, `model_build_managed_sg.go`,
//! `model_build_target_group.go`).
//!
//! Adoption must not rely on names alone: ALBC finds its resources by tags (see [`super::tags`]),
//! and a custom `aws-load-balancer-name` replaces the generated NLB name. Names only decide what
//! a new resource is called and keep ours identical to what ALBC would have created.

use sha2::{Digest, Sha256};

/// AWS's limit on load balancer and target group names.
pub const MAX_NAME_LEN: usize = 32;

/// Whether a user-chosen load balancer name is acceptable to AWS: 1 to 32 letters, digits or
/// inner hyphens, not starting with `internal-` (that prefix is AWS's for internal DNS names).
pub fn valid_custom_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= MAX_NAME_LEN
        && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !n.starts_with('-')
        && !n.ends_with('-')
        && !n.starts_with("internal-")
}

/// The rule of [`valid_custom_name`] in words, for error messages.
pub const CUSTOM_NAME_HINT: &str =
    "1 to 32 letters, digits or hyphens, not starting or ending with a hyphen nor starting with \"internal-\"";

/// Keeps ASCII letters and digits only (ALBC's `[[:^alnum:]]` removal).
pub fn sanitize(s: &str) -> String {
    s.chars().filter(|c| c.is_ascii_alphanumeric()).collect()
}

fn hash_hex<'a>(parts: impl IntoIterator<Item = &'a str>) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
    }
    hex::encode(h.finalize())
}

fn truncated(s: &str, n: usize) -> &str {
    // `s` is ASCII after `sanitize` or hex encoding, so byte and char positions agree.
    &s[..s.len().min(n)]
}

fn k8s_name(namespace: &str, name: &str, hash: &str) -> String {
    let ns = sanitize(namespace);
    let n = sanitize(name);
    format!("k8s-{}-{}-{}", truncated(&ns, 8), truncated(&n, 8), truncated(hash, 10))
}

/// Generated NLB name (used when `aws-load-balancer-name` is absent).
pub fn load_balancer_name(cluster: &str, namespace: &str, name: &str, uid: &str, scheme: &str) -> String {
    k8s_name(namespace, name, &hash_hex([cluster, uid, scheme]))
}

/// Everything ALBC hashes into a Service target group's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetGroupNameInputs<'a> {
    pub cluster: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
    /// For another Service's target group of a weighted `actions.*` forward: the UID of the Service
    /// that owns the load balancer (ALBC hashes it in first, so two load balancers sharing a
    /// backend Service get two target groups).
    pub base_uid: Option<&'a str>,
    /// The target group's own port (the numeric targetPort in ip mode, 1 for a named one).
    pub target_group_port: u16,
    /// The Service port (`spec.ports[].port`).
    pub service_port: u16,
    /// `ip` or `instance`.
    pub target_type: &'a str,
    /// AWS spelling: `TCP`, `UDP`, `TCP_UDP`, `TLS`.
    pub protocol: &'a str,
    /// AWS spelling: `TCP`, `HTTP`, `HTTPS`.
    pub health_check_protocol: &'a str,
    pub health_check_interval_seconds: u32,
}

/// Target group name; ALBC names the TargetGroupBinding after it too.
pub fn target_group_name(i: &TargetGroupNameInputs<'_>) -> String {
    let tg_port = i.target_group_port.to_string();
    let svc_port = i.service_port.to_string();
    let interval = i.health_check_interval_seconds.to_string();
    let hash = hash_hex([
        i.cluster,
        i.base_uid.unwrap_or_default(),
        i.uid,
        tg_port.as_str(),
        svc_port.as_str(),
        i.target_type,
        i.protocol,
        i.health_check_protocol,
        interval.as_str(),
    ]);
    k8s_name(i.namespace, i.name, &hash)
}

/// Name of the managed frontend security group of a Service's NLB.
pub fn frontend_security_group_name(cluster: &str, namespace: &str, name: &str, uid: &str) -> String {
    k8s_name(namespace, name, &hash_hex([cluster, name, namespace, uid]))
}

/// Name of the cluster-wide shared backend security group.
pub fn backend_security_group_name(cluster: &str) -> String {
    let c = sanitize(cluster);
    format!("k8s-traffic-{}-{}", truncated(&c, 232), truncated(&hash_hex([cluster]), 10))
}

/// ALBC's shape for names derived from an IngressGroup: `k8s-<group name, 17 chars>-<hash>` for an
/// explicit group, `k8s-<namespace, 8>-<name, 8>-<hash>` for an implicit one (`group_id` is then
/// `namespace/name`, exactly the stack ID).
fn ingress_group_name(explicit: bool, group_id: &str, hash: &str) -> String {
    if explicit {
        return format!("k8s-{}-{}", truncated(&sanitize(group_id), 17), truncated(hash, 10));
    }
    let (namespace, name) = group_id.split_once('/').unwrap_or(("", group_id));
    k8s_name(namespace, name, hash)
}

/// Generated ALB name of an IngressGroup (used when `load-balancer-name` is absent). `group_id` is
/// the group's stack ID (group name, or `namespace/name` of an implicit group).
pub fn ingress_load_balancer_name(cluster: &str, explicit: bool, group_id: &str, scheme: &str) -> String {
    ingress_group_name(explicit, group_id, &hash_hex([cluster, group_id, scheme]))
}

/// Name of the managed frontend security group of an IngressGroup's ALB.
pub fn ingress_frontend_security_group_name(cluster: &str, explicit: bool, group_id: &str) -> String {
    ingress_group_name(explicit, group_id, &hash_hex([cluster, group_id]))
}

/// Everything ALBC hashes into the name of a frontend NLB's target group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrontendNlbTargetGroupNameInputs<'a> {
    pub cluster: &'a str,
    /// A named group (`group.name`), not an implicit one.
    pub explicit: bool,
    /// The group's stack ID (group name, or `namespace/name`).
    pub group_id: &'a str,
    /// The NLB listener port (the target group's port).
    pub port: u16,
    /// `traffic-port` or a number.
    pub health_check_port: &'a str,
    /// `HTTP` or `HTTPS`.
    pub health_check_protocol: &'a str,
}

/// Target group name of a frontend NLB listener (target type `alb`, protocol TCP).
pub fn ingress_frontend_nlb_target_group_name(i: &FrontendNlbTargetGroupNameInputs<'_>) -> String {
    let port = i.port.to_string();
    let hash =
        hash_hex([i.cluster, i.group_id, port.as_str(), "alb", "TCP", i.health_check_port, i.health_check_protocol]);
    ingress_group_name(i.explicit, i.group_id, &hash)
}

/// Everything ALBC hashes into an Ingress target group's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IngressTargetGroupNameInputs<'a> {
    pub cluster: &'a str,
    /// The group's stack ID (group name, or `namespace/name`).
    pub group_id: &'a str,
    /// The Ingress whose rule forwards to the Service.
    pub ingress_namespace: &'a str,
    pub ingress_name: &'a str,
    pub service_namespace: &'a str,
    pub service_name: &'a str,
    pub service_uid: &'a str,
    /// The backend port as the Ingress writes it: a number or a port name.
    pub service_port: &'a str,
    /// The target group's own port (numeric targetPort for ip targets, else 1).
    pub target_group_port: u16,
    /// `ip` or `instance`.
    pub target_type: &'a str,
    /// `HTTP` or `HTTPS`.
    pub protocol: &'a str,
    /// `HTTP1`, `HTTP2` or `GRPC`.
    pub protocol_version: &'a str,
    /// `target-control-port.*` (hashed only when set, as ALBC).
    pub target_control_port: Option<u16>,
}

/// Target group name of an Ingress backend; ALBC names the TargetGroupBinding after it too.
pub fn ingress_target_group_name(i: &IngressTargetGroupNameInputs<'_>) -> String {
    let tg_port = i.target_group_port.to_string();
    let control = i.target_control_port.map(|p| p.to_string()).unwrap_or_default();
    let hash = hash_hex([
        i.cluster,
        i.group_id,
        i.ingress_namespace,
        i.ingress_name,
        i.service_uid,
        i.service_port,
        tg_port.as_str(),
        i.target_type,
        i.protocol,
        i.protocol_version,
        control.as_str(),
    ]);
    k8s_name(i.service_namespace, i.service_name, &hash)
}

/// Everything ALBC hashes into the name of a Gateway route backend's target group
/// (`pkg/gateway/model/model_build_target_group.go`); a Gateway's load balancer is named by
/// [`load_balancer_name`] from the Gateway's UID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatewayTargetGroupNameInputs<'a> {
    pub cluster: &'a str,
    pub gateway_namespace: &'a str,
    pub gateway_name: &'a str,
    pub route_namespace: &'a str,
    pub route_name: &'a str,
    /// `HTTPRoute`, `GRPCRoute`, `TCPRoute`, `UDPRoute` or `TLSRoute`.
    pub route_kind: &'a str,
    pub service_namespace: &'a str,
    pub service_name: &'a str,
    /// ip targets: the backend's port as the route identifies it (number or name); instance
    /// targets: the target group's port (the NodePort).
    pub port: &'a str,
    /// `ip` or `instance`.
    pub target_type: &'a str,
    /// AWS spelling: `HTTP`, `HTTPS`, `TCP`, `UDP`, `TCP_UDP`, `TLS`.
    pub protocol: &'a str,
    /// `HTTP1`, `HTTP2` or `GRPC` (hashed only when set, as ALBC).
    pub protocol_version: Option<&'a str>,
    /// Hashed only when set, as ALBC.
    pub target_control_port: Option<u16>,
}

/// Name of a Gateway's managed frontend security group (ALBC `buildManagedSecurityGroupName`:
/// cluster, name, namespace and UID hashed, in that order).
pub fn gateway_security_group_name(cluster: &str, namespace: &str, name: &str, uid: &str) -> String {
    k8s_name(namespace, name, &hash_hex([cluster, name, namespace, uid]))
}

/// Target group name of a Gateway route backend, named after the route (not the Service).
pub fn gateway_target_group_name(i: &GatewayTargetGroupNameInputs<'_>) -> String {
    let control = i.target_control_port.map(|p| p.to_string()).unwrap_or_default();
    let hash = hash_hex([
        i.cluster,
        i.gateway_namespace,
        i.gateway_name,
        i.route_namespace,
        i.route_name,
        i.route_kind,
        i.service_namespace,
        i.service_name,
        i.port,
        i.target_type,
        i.protocol,
        i.protocol_version.unwrap_or_default(),
        control.as_str(),
    ]);
    k8s_name(i.route_namespace, i.route_name, &hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden values from Python's hashlib over ALBC's inputs, concatenated.
    #[test]
    fn gateway_target_group_name_golden() {
        let base = GatewayTargetGroupNameInputs {
            cluster: "prod",
            gateway_namespace: "gateway-conformance-infra",
            gateway_name: "same-namespace",
            route_namespace: "gateway-conformance-infra",
            route_name: "http-route",
            route_kind: "HTTPRoute",
            service_namespace: "gateway-conformance-infra",
            service_name: "infra-backend-v1",
            port: "8080",
            target_type: "ip",
            protocol: "HTTP",
            protocol_version: Some("HTTP1"),
            target_control_port: None,
        };
        assert_eq!(gateway_target_group_name(&base), "k8s-gatewayc-httprout-18a79169e5");
        let control = GatewayTargetGroupNameInputs { target_control_port: Some(7000), ..base.clone() };
        assert_eq!(gateway_target_group_name(&control), "k8s-gatewayc-httprout-e2adffeb3a");
        let tcp = GatewayTargetGroupNameInputs {
            gateway_namespace: "infra",
            gateway_name: "gw",
            route_namespace: "app",
            route_name: "r",
            route_kind: "TCPRoute",
            service_namespace: "app",
            service_name: "db",
            port: "5432",
            protocol: "TCP",
            protocol_version: None,
            ..base
        };
        assert_eq!(gateway_target_group_name(&tcp), "k8s-app-r-22afacad64");
    }

    // Golden values computed independently (Python hashlib, by hand-following ALBC's formula):
    //   sha256("prod" + "3f1b7c2e-0000-4000-8000-000000000001" + "internal")
    //   sha256("prod" + uid + "8080" + "80" + "ip" + "TCP" + "TCP" + "10")
    const UID: &str = "3f1b7c2e-0000-4000-8000-000000000001";

    #[test]
    fn load_balancer_name_golden() {
        assert_eq!(load_balancer_name("prod", "default", "echo", UID, "internal"), "k8s-default-echo-731d9390f7");
        assert_eq!(
            load_balancer_name("prod", "kube-system", "my-ingress-nginx", UID, "internet-facing"),
            "k8s-kubesyst-myingres-8b89dcdd02"
        );
    }

    #[test]
    fn target_group_name_golden() {
        let i = TargetGroupNameInputs {
            cluster: "prod",
            namespace: "default",
            name: "echo",
            uid: UID,
            base_uid: None,
            target_group_port: 8080,
            service_port: 80,
            target_type: "ip",
            protocol: "TCP",
            health_check_protocol: "TCP",
            health_check_interval_seconds: 10,
        };
        assert_eq!(target_group_name(&i), "k8s-default-echo-e7096d4508");
        let udp = TargetGroupNameInputs { protocol: "UDP", ..i.clone() };
        assert_ne!(target_group_name(&udp), target_group_name(&i), "protocol is hashed");
        // A weighted backend of another Service's NLB: that Service's UID goes first.
        //   sha256("prod" + base uid + uid + "8080" + "80" + "ip" + "TCP" + "TCP" + "10")
        let weighted = TargetGroupNameInputs { base_uid: Some("9a2c0000-0000-4000-8000-000000000002"), ..i.clone() };
        assert_eq!(target_group_name(&weighted), "k8s-default-echo-057f9354bd");
    }

    #[test]
    fn security_group_names_golden() {
        assert_eq!(frontend_security_group_name("prod", "default", "echo", UID), "k8s-default-echo-940fba9c7a");
        assert_eq!(backend_security_group_name("prod"), "k8s-traffic-prod-6754af9632");
        assert_eq!(
            backend_security_group_name("dev.meta_1"),
            format!("k8s-traffic-devmeta1-{}", &hash_hex(["dev.meta_1"])[..10])
        );
    }

    #[test]
    fn names_fit_aws_limit() {
        let n = load_balancer_name("c", "a-very-long-namespace-name", "a-very-long-service-name", "u", "internal");
        assert!(n.len() <= MAX_NAME_LEN, "{n}");
        assert!(n.starts_with("k8s-averylon-averylon-"));
        assert_eq!(sanitize("ns_1.x-Ü"), "ns1x");
    }

    #[test]
    fn ingress_names_golden() {
        // sha256("prod" + "team-a" + "internal"), sha256("prod" + "shop/web" + "internet-facing"),
        // sha256("prod" + "team-a"), sha256("prod" + "shop/web"): Python hashlib.
        assert_eq!(ingress_load_balancer_name("prod", true, "team-a", "internal"), "k8s-teama-e4e1d3825c");
        assert_eq!(ingress_load_balancer_name("prod", false, "shop/web", "internet-facing"), "k8s-shop-web-0c9cb52896");
        assert_eq!(ingress_frontend_security_group_name("prod", true, "team-a"), "k8s-teama-f2fac9541f");
        assert_eq!(ingress_frontend_security_group_name("prod", false, "shop/web"), "k8s-shop-web-2d5ac86ca1");
        let long = ingress_load_balancer_name("prod", true, "a-very-long-group-name-indeed", "internal");
        assert!(long.starts_with("k8s-averylonggroupnam-") && long.len() <= MAX_NAME_LEN, "{long}");
    }

    #[test]
    fn ingress_target_group_name_golden() {
        let i = IngressTargetGroupNameInputs {
            cluster: "prod",
            group_id: "team-a",
            ingress_namespace: "shop",
            ingress_name: "web",
            service_namespace: "shop",
            service_name: "echo-server",
            service_uid: "3f1b7c2e-0000-4000-8000-000000000002",
            service_port: "80",
            target_group_port: 8080,
            target_type: "ip",
            protocol: "HTTP",
            protocol_version: "HTTP1",
            target_control_port: None,
        };
        assert_eq!(ingress_target_group_name(&i), "k8s-shop-echoserv-4d96c8a373");
        // A target control port is hashed last: sha256(... + "HTTP1" + "3000").
        let control = IngressTargetGroupNameInputs { target_control_port: Some(3000), ..i.clone() };
        assert_eq!(ingress_target_group_name(&control), "k8s-shop-echoserv-bbb59e2502");
        let grpc = IngressTargetGroupNameInputs {
            group_id: "shop/web",
            service_port: "http",
            target_group_port: 1,
            protocol: "HTTPS",
            protocol_version: "GRPC",
            ..i.clone()
        };
        assert_eq!(ingress_target_group_name(&grpc), "k8s-shop-echoserv-26a8d069b5");
    }
}
