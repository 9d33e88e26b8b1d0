use super::*;
use crate::crd::{AgentLogLevel, AgentProtocolVersion};
use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

const REF: &str = "shop/aws-load-balancer-controller-alb-target-control-agent-config";

fn config() -> ALBTargetControlConfigSpec {
    ALBTargetControlConfigSpec {
        image: "agent:1".into(),
        data_address: "0.0.0.0:80".into(),
        control_address: "0.0.0.0:3000".into(),
        destination_address: "127.0.0.1:8080".into(),
        max_concurrency: 1,
        ..Default::default()
    }
}

fn pod(annotations: &[(&str, &str)], ports: &[i32]) -> Pod {
    Pod {
        metadata: ObjectMeta {
            annotations: (!annotations.is_empty())
                .then(|| annotations.iter().map(|(k, v)| (format!("{ANNOTATION_PREFIX}{k}"), v.to_string())).collect()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                ports: Some(ports.iter().map(|p| ContainerPort { container_port: *p, ..Default::default() }).collect()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn env(c: &Container) -> Vec<(String, String)> {
    c.env.iter().flatten().map(|e| (e.name.clone(), e.value.clone().unwrap_or_default())).collect()
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn the_pod_label_decides_before_the_namespace() {
    assert_eq!(agent_wanted(&labels(&[]), true), Ok(true));
    assert_eq!(agent_wanted(&labels(&[]), false), Ok(false));
    assert_eq!(agent_wanted(&labels(&[(INJECT_LABEL, "true")]), false), Ok(true));
    assert_eq!(agent_wanted(&labels(&[(INJECT_LABEL, "false")]), true), Ok(false));
    let e = agent_wanted(&labels(&[(INJECT_LABEL, "yes")]), true).unwrap_err();
    assert!(e.contains(INJECT_LABEL) && e.contains("\"yes\"") && e.contains("\"true\""), "{e}");
    assert!(namespace_opted_in(&labels(&[(NAMESPACE_LABEL, "enabled")])));
    assert!(!namespace_opted_in(&labels(&[(NAMESPACE_LABEL, "disabled")])));
    assert!(!namespace_opted_in(&labels(&[])));
}

#[test]
fn configs_are_looked_up_in_the_pods_namespace_then_the_controllers_then_kube_system() {
    assert_eq!(config_namespaces("shop", "lbc"), ["shop", "lbc", "kube-system"]);
    assert_eq!(config_namespaces("shop", "kube-system"), ["shop", "kube-system"]);
    assert_eq!(config_namespaces("kube-system", ""), ["kube-system"]);
}

#[test]
fn the_config_alone_gives_the_upstreams_container() {
    let c = plan_agent(&pod(&[], &[8080]), &config(), REF).unwrap().unwrap();
    assert_eq!(c.name, AGENT_CONTAINER);
    assert_eq!(c.image.as_deref(), Some("agent:1"));
    assert_eq!(
        env(&c),
        [
            ("TARGET_CONTROL_DATA_ADDRESS".to_string(), "0.0.0.0:80".to_string()),
            ("TARGET_CONTROL_CONTROL_ADDRESS".into(), "0.0.0.0:3000".into()),
            ("TARGET_CONTROL_DESTINATION_ADDRESS".into(), "127.0.0.1:8080".into()),
            ("TARGET_CONTROL_MAX_CONCURRENCY".into(), "1".into()),
        ]
    );
    let ports: Vec<_> = c.ports.iter().flatten().map(|p| (p.name.clone().unwrap(), p.container_port)).collect();
    assert_eq!(ports, [("data".to_string(), 80), ("control".to_string(), 3000)]);
    assert_eq!(c.resources, None);
}

#[test]
fn annotations_override_every_field_and_optional_ones_follow_in_order() {
    let mut cfg = config();
    cfg.protocol_version = Some(AgentProtocolVersion::HTTP1);
    cfg.rust_log = Some(AgentLogLevel::Error);
    cfg.tls_cert_path = Some("/certs/tls.crt".into());
    let p = pod(
        &[
            ("image", "agent:2"),
            ("data-address", "[::]:81"),
            ("control-address", "0.0.0.0:3001"),
            ("destination-address", "127.0.0.1:9090"),
            ("max-concurrency", "50"),
            ("tls-key-path", "/certs/tls.key"),
            ("tls-security-policy", "ELBSecurityPolicy-TLS13-1-2-2021-06"),
            ("protocol-version", "GRPC"),
            ("rust-log", "debug"),
            ("cpu-request", "100m"),
            ("memory-limit", "128Mi"),
        ],
        &[9090],
    );
    let c = plan_agent(&p, &cfg, REF).unwrap().unwrap();
    assert_eq!(c.image.as_deref(), Some("agent:2"));
    let names: Vec<String> = env(&c).into_iter().map(|(k, v)| format!("{k}={v}")).collect();
    assert_eq!(
        names,
        [
            "TARGET_CONTROL_DATA_ADDRESS=[::]:81",
            "TARGET_CONTROL_CONTROL_ADDRESS=0.0.0.0:3001",
            "TARGET_CONTROL_DESTINATION_ADDRESS=127.0.0.1:9090",
            "TARGET_CONTROL_MAX_CONCURRENCY=50",
            "TARGET_CONTROL_TLS_CERT_PATH=/certs/tls.crt",
            "TARGET_CONTROL_TLS_KEY_PATH=/certs/tls.key",
            "TARGET_CONTROL_TLS_SECURITY_POLICY=ELBSecurityPolicy-TLS13-1-2-2021-06",
            "TARGET_CONTROL_PROTOCOL_VERSION=GRPC",
            "RUST_LOG=debug",
        ]
    );
    let r = c.resources.unwrap();
    assert_eq!(r.requests.unwrap()["cpu"], Quantity("100m".into()));
    assert_eq!(r.limits.unwrap()["memory"], Quantity("128Mi".into()));
}

#[test]
fn config_resources_are_kept_under_the_annotations() {
    let mut cfg = config();
    cfg.resources = Some(ResourceRequirements {
        limits: Some(BTreeMap::from([("cpu".to_string(), Quantity("500m".into()))])),
        ..Default::default()
    });
    let c = plan_agent(&pod(&[("cpu-limit", "1")], &[]), &cfg, REF).unwrap().unwrap();
    assert_eq!(c.resources.unwrap().limits.unwrap()["cpu"], Quantity("1".into()));
    let c = plan_agent(&pod(&[], &[]), &cfg, REF).unwrap().unwrap();
    assert_eq!(c.resources.unwrap().limits.unwrap()["cpu"], Quantity("500m".into()));
}

#[test]
fn a_pod_with_the_agent_already_is_left_alone() {
    let mut p = pod(&[], &[]);
    p.spec.as_mut().unwrap().containers.push(Container { name: AGENT_CONTAINER.into(), ..Default::default() });
    assert_eq!(plan_agent(&p, &config(), REF), Ok(None));
}

#[test]
fn bad_values_are_refused_naming_where_they_came_from() {
    type Case = (&'static [(&'static str, &'static str)], &'static [&'static str]);
    let cases: &[Case] = &[
        (&[("data-address", "localhost:80")], &["data-address", "\"localhost\" is not an IP address"]),
        (&[("control-address", "0.0.0.0")], &["control-address", "no port"]),
        (&[("destination-address", "127.0.0.1:0")], &["destination-address", "not from 1 to 65535"]),
        (&[("max-concurrency", "1001")], &["max-concurrency", "0 to 1000"]),
        (&[("max-concurrency", "many")], &["max-concurrency", "\"many\""]),
        (&[("protocol-version", "HTTP3")], &["protocol-version", "HTTP1, HTTP2, GRPC"]),
        (&[("rust-log", "trace")], &["rust-log", "debug, info, error"]),
        (&[("cpu-request", "lots")], &["cpu-request", "quantity"]),
        (&[("memory-limit", "1.2.3Gi")], &["memory-limit", "quantity"]),
        (&[("control-address", "0.0.0.0:80")], &["same port"]),
        (&[("image", " ")], &["spec.image is empty"]),
    ];
    for (annotations, wanted) in cases {
        let e = plan_agent(&pod(annotations, &[]), &config(), REF).unwrap_err();
        for w in *wanted {
            assert!(e.contains(w), "{annotations:?}: {e}");
        }
    }
    let mut cfg = config();
    cfg.data_address = "pod:80".into();
    let e = plan_agent(&pod(&[], &[]), &cfg, REF).unwrap_err();
    assert!(e.contains(&format!("ALBTargetControlConfig {REF} spec.dataAddress")), "{e}");
    let e = plan_agent(&pod(&[], &[80]), &config(), REF).unwrap_err();
    assert!(e.contains("container \"app\" declares port 80"), "{e}");
}

#[test]
fn quantities_follow_the_api_servers_grammar() {
    for ok in ["1", "100m", "0.5", ".5", "5.", "128Mi", "1Gi", "2e3", "1E", "+1", "1.5e-3", "3k"] {
        assert!(is_quantity(ok), "{ok}");
    }
    for bad in ["", "m", "1mi", "1KiB", "1.2.3", ".", "1e", "abc", "1 Gi"] {
        assert!(!is_quantity(bad), "{bad}");
    }
}
