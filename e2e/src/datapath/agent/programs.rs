//! What the agent runs for a pod's container, as a kubelet would run its image: the program chosen by the
//! image, the container's environment resolved (literal values and the downward API's `fieldRef`s), and Secret
//! volumes materialised in the pod's control directory, with environment values that point into a mount rewritten
//! to the materialised files (there is no mount namespace: the program sees host paths).
//!
//! Without image rules every pod runs `lbc-podserver` (the agent's own tests). With rules (the Gateway API
//! conformance suite), an image matches the first rule whose prefix it starts with; an image no rule names is an
//! error, never silently replaced.

use k8s_openapi::api::core::v1::{Container, Pod, Secret};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The program for an image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Program {
    /// `lbc-podserver --name --port --control-dir` (the agent's default).
    PodServer,
    /// A binary run with the container's resolved environment only (no arguments: the suite's images take none).
    Binary(PathBuf),
    /// A process that serves nothing (`sleep infinity`): for images a test needs Ready but never sends traffic to
    /// (the suite's coredns, which would forward to public resolvers this machine cannot reach).
    Placeholder,
}

/// Images whose repository path (the name without its registry host) starts with `prefix` run `program`.
#[derive(Clone, Debug)]
pub struct ImageRule {
    pub prefix: String,
    pub program: Program,
}

/// The program for `image` under `rules` (first match; no rules: the podserver).
pub fn program_for(rules: &[ImageRule], image: &str) -> Result<Program, String> {
    if rules.is_empty() {
        return Ok(Program::PodServer);
    }
    let path = repository_path(image);
    rules.iter().find(|r| path.starts_with(&r.prefix)).map(|r| r.program.clone()).ok_or_else(|| {
        format!(
            "image {image:?} matches no image rule of the node agent: expected one starting with {:?} (add a rule \
             to AgentConfig::images)",
            rules.iter().map(|r| r.prefix.as_str()).collect::<Vec<_>>()
        )
    })
}

/// `image` without its registry host: the first path component is a host when it has a `.` or a `:` or is
/// `localhost` (the container image reference grammar).
pub fn repository_path(image: &str) -> &str {
    match image.split_once('/') {
        Some((first, rest)) if first.contains('.') || first.contains(':') || first == "localhost" => rest,
        _ => image,
    }
}

/// One Secret volume mounted by the container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretMount {
    pub volume: String,
    pub secret: String,
    /// `items` (key → relative path); `None`: every key under its own name.
    pub items: Option<Vec<(String, String)>>,
    pub mount_path: String,
}

/// The container's Secret volume mounts; any other volume kind it mounts is an error (the agent has no other), but
/// the ServiceAccount token volume (`kube-api-access-*`), which is left out: no program the agent runs reads it.
pub fn secret_mounts(pod: &Pod, c: &Container) -> Result<Vec<SecretMount>, String> {
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_ref());
    let mut out = Vec::new();
    for m in c.volume_mounts.iter().flatten() {
        let v = volumes
            .and_then(|vs| vs.iter().find(|v| v.name == m.name))
            .ok_or_else(|| format!("container {}: volumeMount {:?} names no volume of the pod", c.name, m.name))?;
        // The ServiceAccount admission's token volume: the programs the agent runs never call the API server.
        if v.projected.is_some() && v.name.starts_with("kube-api-access-") {
            continue;
        }
        let Some(s) = &v.secret else {
            return Err(format!(
                "container {}: volume {:?} is not a Secret volume; the node agent materialises Secret volumes only",
                c.name, v.name
            ));
        };
        let secret = s.secret_name.clone().ok_or_else(|| format!("volume {:?} has no secretName", v.name))?;
        let items = s.items.as_ref().map(|items| items.iter().map(|i| (i.key.clone(), i.path.clone())).collect());
        out.push(SecretMount { volume: v.name.clone(), secret, items, mount_path: m.mount_path.clone() });
    }
    Ok(out)
}

/// Where a mount's files live: `<control>/volumes/<volume>`.
pub fn mount_dir(control: &Path, m: &SecretMount) -> PathBuf {
    control.join("volumes").join(&m.volume)
}

/// The files of a Secret volume (relative path → bytes), as the kubelet projects them.
pub fn secret_files(m: &SecretMount, secret: &Secret) -> Result<Vec<(String, Vec<u8>)>, String> {
    let data = secret.data.clone().unwrap_or_default();
    let mut files: Vec<(String, Vec<u8>)> = match &m.items {
        None => data.into_iter().map(|(k, v)| (k, v.0)).collect(),
        Some(items) => items
            .iter()
            .map(|(key, path)| {
                data.get(key).map(|v| (path.clone(), v.0.clone())).ok_or_else(|| {
                    format!(
                        "Secret {:?} of volume {:?} has no key {key:?}: it has {:?}",
                        m.secret,
                        m.volume,
                        data.keys().collect::<Vec<_>>()
                    )
                })
            })
            .collect::<Result<_, _>>()?,
    };
    for (path, _) in &files {
        if path.is_empty() || path.starts_with('/') || path.split('/').any(|p| p == "..") {
            return Err(format!(
                "volume {:?}: item path {path:?} must be relative and stay inside the mount",
                m.volume
            ));
        }
    }
    files.sort();
    Ok(files)
}

/// The container's environment: literal values and `fieldRef`s of the downward API (`metadata.name`,
/// `metadata.namespace`, `metadata.uid`, `spec.nodeName`, `status.podIP`), with values under a Secret mount's path
/// rewritten into its materialised directory. Anything else (`secretKeyRef`, `configMapKeyRef`, …) is an error.
pub fn container_env(
    pod: &Pod,
    c: &Container,
    pod_ip: &str,
    node: &str,
    mounts: &[SecretMount],
    control: &Path,
) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for e in c.env.iter().flatten() {
        let value = match (&e.value, &e.value_from) {
            (_, Some(from)) => {
                let Some(f) = &from.field_ref else {
                    return Err(format!(
                        "container {}: env {} takes its value from other than a fieldRef; the node agent resolves \
                         literal values and fieldRefs only",
                        c.name, e.name
                    ));
                };
                match f.field_path.as_str() {
                    "metadata.name" => pod.metadata.name.clone().unwrap_or_default(),
                    "metadata.namespace" => pod.metadata.namespace.clone().unwrap_or_default(),
                    "metadata.uid" => pod.metadata.uid.clone().unwrap_or_default(),
                    "spec.nodeName" => node.to_string(),
                    "status.podIP" => pod_ip.to_string(),
                    other => {
                        return Err(format!(
                            "container {}: env {} has fieldRef {other:?}; expected metadata.name, metadata.namespace, \
                             metadata.uid, spec.nodeName or status.podIP",
                            c.name, e.name
                        ));
                    }
                }
            }
            (Some(v), None) => rewrite_mount_path(v, mounts, control),
            (None, None) => String::new(),
        };
        out.insert(e.name.clone(), value);
    }
    Ok(out)
}

/// `value` with a leading Secret mount path replaced by that mount's directory (longest mount first).
fn rewrite_mount_path(value: &str, mounts: &[SecretMount], control: &Path) -> String {
    let mut by_len: Vec<&SecretMount> = mounts.iter().collect();
    by_len.sort_by_key(|m| std::cmp::Reverse(m.mount_path.len()));
    for m in by_len {
        let base = m.mount_path.trim_end_matches('/');
        if value == base || value.starts_with(&format!("{base}/")) {
            return format!("{}{}", mount_dir(control, m).display(), &value[base.len()..]);
        }
    }
    value.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use serde_json::json;

    fn pod() -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "tls-backend-7d9", "namespace": "gateway-conformance-infra", "uid": "u-1"},
            "spec": {
                "containers": [{
                    "name": "tls-backend", "image": "registry.example/gateway-api/echo-basic:v1.5.1",
                    "volumeMounts": [{"name": "secret-volume", "mountPath": "/etc/secret-volume"}],
                    "env": [
                        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                        {"name": "TLS_SERVER_CERT", "value": "/etc/secret-volume/crt"},
                        {"name": "OTHER", "value": "/etc/secret-volumex/crt"},
                        {"name": "EMPTY"},
                    ],
                }],
                "volumes": [{"name": "secret-volume", "secret": {"secretName": "tls-checks-certificate",
                    "items": [{"key": "tls.crt", "path": "crt"}, {"key": "tls.key", "path": "key"}]}}],
            },
        }))
        .unwrap()
    }

    #[test]
    fn images_pick_the_first_matching_rule_and_unknown_images_are_errors() {
        assert_eq!(program_for(&[], "anything"), Ok(Program::PodServer));
        let rules = vec![
            ImageRule { prefix: "gateway-api/echo-basic:".into(), program: Program::Binary("/e".into()) },
            ImageRule { prefix: "coredns/".into(), program: Program::Placeholder },
        ];
        assert_eq!(program_for(&rules, "localhost:5000/coredns/coredns:v1"), Ok(Program::Placeholder));
        assert_eq!(repository_path("gateway-api/echo-basic:v1"), "gateway-api/echo-basic:v1", "no host");
        assert_eq!(
            program_for(&rules, "registry.example/gateway-api/echo-basic:v1.5.1"),
            Ok(Program::Binary("/e".into()))
        );
        assert_eq!(program_for(&rules, "registry.example/coredns/coredns:v1.12.2"), Ok(Program::Placeholder));
        let e = program_for(&rules, "nginx:1").unwrap_err();
        assert!(e.contains("\"nginx:1\"") && e.contains("coredns"), "{e}");
    }

    #[test]
    fn env_resolves_field_refs_and_rewrites_mount_paths() {
        let p = pod();
        let c = &p.spec.as_ref().unwrap().containers[0];
        let mounts = secret_mounts(&p, c).unwrap();
        assert_eq!(
            mounts,
            vec![SecretMount {
                volume: "secret-volume".into(),
                secret: "tls-checks-certificate".into(),
                items: Some(vec![("tls.crt".into(), "crt".into()), ("tls.key".into(), "key".into())]),
                mount_path: "/etc/secret-volume".into(),
            }]
        );
        let env = container_env(&p, c, "10.0.1.5", "node-a", &mounts, Path::new("/run/pod")).unwrap();
        assert_eq!(env["POD_NAME"], "tls-backend-7d9");
        assert_eq!(env["NAMESPACE"], "gateway-conformance-infra");
        assert_eq!(env["TLS_SERVER_CERT"], "/run/pod/volumes/secret-volume/crt");
        assert_eq!(env["OTHER"], "/etc/secret-volumex/crt", "a path that only shares a prefix is left alone");
        assert_eq!(env["EMPTY"], "");
    }

    #[test]
    fn the_service_account_token_volume_is_left_out() {
        let mut p = pod();
        let token = json!({"name": "kube-api-access-x1", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}});
        p.spec.as_mut().unwrap().volumes.as_mut().unwrap().push(serde_json::from_value(token).unwrap());
        let c = &mut p.spec.as_mut().unwrap().containers[0];
        c.volume_mounts.as_mut().unwrap().push(
            serde_json::from_value(json!({"name": "kube-api-access-x1",
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}))
            .unwrap(),
        );
        let c = c.clone();
        assert_eq!(secret_mounts(&p, &c).unwrap().len(), 1, "only the Secret volume");
    }

    #[test]
    fn unsupported_env_sources_and_volumes_are_errors() {
        let mut p = pod();
        let c = &mut p.spec.as_mut().unwrap().containers[0];
        c.env.as_mut().unwrap().push(
            serde_json::from_value(json!({"name": "X",
            "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}}))
            .unwrap(),
        );
        let c = c.clone();
        let e = container_env(&p, &c, "", "", &[], Path::new("/")).unwrap_err();
        assert!(e.contains("metadata.labels['app']") && e.contains("expected metadata.name"), "{e}");
        p.spec.as_mut().unwrap().volumes = Some(vec![
            serde_json::from_value(json!({"name": "secret-volume",
            "configMap": {"name": "x"}}))
            .unwrap(),
        ]);
        let e = secret_mounts(&p, &c).unwrap_err();
        assert!(e.contains("not a Secret volume"), "{e}");
    }

    #[test]
    fn secret_files_follow_items_or_take_every_key() {
        let p = pod();
        let c = &p.spec.as_ref().unwrap().containers[0];
        let mut m = secret_mounts(&p, c).unwrap().remove(0);
        let secret = Secret {
            data: Some(BTreeMap::from([
                ("tls.crt".to_string(), ByteString(b"CERT".to_vec())),
                ("tls.key".to_string(), ByteString(b"KEY".to_vec())),
            ])),
            ..Default::default()
        };
        assert_eq!(
            secret_files(&m, &secret).unwrap(),
            vec![("crt".to_string(), b"CERT".to_vec()), ("key".to_string(), b"KEY".to_vec())]
        );
        m.items = None;
        assert_eq!(secret_files(&m, &secret).unwrap()[0].0, "tls.crt");
        m.items = Some(vec![("ca.crt".into(), "ca".into())]);
        let e = secret_files(&m, &secret).unwrap_err();
        assert!(e.contains("no key \"ca.crt\""), "{e}");
        m.items = Some(vec![("tls.crt".into(), "../escape".into())]);
        assert!(secret_files(&m, &secret).unwrap_err().contains("stay inside"));
    }
}
