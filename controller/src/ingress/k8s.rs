//! What the Ingress controller writes on Ingresses: group finalizers and
//! `status.loadBalancer.ingress[].hostname`; and the one thing it reads directly, the Secrets
//! holding OIDC client credentials.

use crate::error::Result;
use crate::stack::StackIo;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::networking::v1::Ingress;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use lbc_model::ingress::OidcCredentials;
use lbc_model::ingress::oidc::{CLIENT_ID_KEY, CLIENT_SECRET_KEY, SecretUsers, credentials_from_secret, secret_label};
use serde_json::json;
use std::collections::BTreeMap;

fn api(io: &StackIo, ing: &Ingress) -> Api<Ingress> {
    Api::namespaced(io.base.client.clone(), &ing.namespace().unwrap_or_default())
}

fn ignore_gone(r: std::result::Result<Ingress, kube::Error>) -> Result<()> {
    match r {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Adds `finalizer` (a merge patch of the whole list, guarded by the resourceVersion).
pub(super) async fn add_finalizer(io: &StackIo, ing: &Ingress, finalizer: &str) -> Result<()> {
    if ing.finalizers().iter().any(|f| f == finalizer) {
        return Ok(());
    }
    io.base.ensure_leader()?;
    let mut finalizers = ing.finalizers().to_vec();
    finalizers.push(finalizer.to_string());
    let body = json!({"metadata": {"finalizers": finalizers, "resourceVersion": ing.resource_version()}});
    ignore_gone(api(io, ing).patch(&ing.name_any(), &PatchParams::default(), &Patch::Merge(body)).await)
}

pub(super) async fn remove_finalizer(io: &StackIo, ing: &Ingress, finalizer: &str) -> Result<()> {
    if !ing.finalizers().iter().any(|f| f == finalizer) {
        return Ok(());
    }
    io.base.ensure_leader()?;
    let finalizers: Vec<&String> = ing.finalizers().iter().filter(|f| *f != finalizer).collect();
    let body = json!({"metadata": {"finalizers": finalizers, "resourceVersion": ing.resource_version()}});
    ignore_gone(api(io, ing).patch(&ing.name_any(), &PatchParams::default(), &Patch::Merge(body)).await)
}

/// Sets (or clears) `status.loadBalancer.ingress` to the one hostname, only when it differs.
pub(super) async fn set_hostname(io: &StackIo, ing: &Ingress, hostname: Option<&str>) -> Result<()> {
    let current: Vec<Option<&str>> = ing
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|l| l.ingress.as_ref())
        .map(|i| i.iter().map(|x| x.hostname.as_deref()).collect())
        .unwrap_or_default();
    crate::stack::set_hostname(&io.base, &api(io, ing), &ing.name_any(), &current, hostname).await
}

/// The OIDC client credentials of the Secrets a group needs, one GET each (no watch: a changed
/// Secret is read on the group's next pass). `Ok(Err(problems))`: Secrets missing, unreadable
/// or incomplete, each problem naming the Secret, its users and the fix, never a value.
/// `required_label`: `--required-secrets-label`; a Secret without it is a problem, not used.
pub(super) async fn oidc_credentials(
    io: &StackIo,
    needed: &SecretUsers,
    required_label: Option<&(String, String)>,
) -> Result<std::result::Result<BTreeMap<(String, String), OidcCredentials>, Vec<String>>> {
    let (mut found, mut problems) = (BTreeMap::new(), Vec::new());
    for (key, users) in needed {
        let label = secret_label(key, users);
        let api: Api<Secret> = Api::namespaced(io.base.client.clone(), &key.0);
        let secret = match api.get_opt(&key.1).await {
            Ok(Some(s)) => s,
            Ok(None) => {
                problems.push(format!(
                    "{label} does not exist; create it with keys {CLIENT_ID_KEY} and {CLIENT_SECRET_KEY}"
                ));
                continue;
            }
            Err(kube::Error::Api(s)) if s.code == 403 => {
                problems.push(format!(
                    "{label}: the controller may not read it ({}); grant get on secrets to its service account \
                     (the Helm chart's ClusterRole does)",
                    s.message
                ));
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        if let Some((k, v)) = required_label {
            let has = secret.metadata.labels.as_ref().and_then(|l| l.get(k)).map(String::as_str);
            if has != Some(v.as_str()) {
                problems.push(format!(
                    "{label} lacks label {k}={v} (found {}), which --required-secrets-label requires before the \
                     controller uses a Secret; label the Secret or change the flag",
                    has.map(|x| format!("{k}={x}")).unwrap_or_else(|| "no such label".into())
                ));
                continue;
            }
        }
        let data: BTreeMap<String, Vec<u8>> =
            secret.data.unwrap_or_default().into_iter().map(|(k, v)| (k, v.0)).collect();
        match credentials_from_secret(&data) {
            Ok(c) => {
                found.insert(key.clone(), c);
            }
            Err(e) => problems.push(format!("{label} {e}")),
        }
    }
    Ok(if problems.is_empty() { Ok(found) } else { Err(problems) })
}
