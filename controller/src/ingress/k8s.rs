//! The one thing the Ingress controller reads directly: the Secrets holding OIDC client
//! credentials. (What it writes on Ingresses, finalizers and hostnames, is `crate::stack::k8s`.)

use crate::error::{Error, Result, Retry};
use crate::stack::{FAILED_BUILD, StackIo};
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use lbc_model::ingress::OidcCredentials;
use lbc_model::ingress::oidc::{CLIENT_ID_KEY, CLIENT_SECRET_KEY, SecretUsers, credentials_from_secret, secret_label};
use std::collections::BTreeMap;

/// The OIDC client credentials of the Secrets a group needs, one GET each (no watch: a changed
/// Secret is read on the group's next pass). Secrets missing, unreadable or incomplete:
/// [`Error::Blocked`] (looked at again after `retry`), each problem naming the Secret, its users
/// and the fix, never a value. `required_label`: `--required-secrets-label`; a Secret without it
/// is a problem, not used.
pub(super) async fn oidc_credentials(
    io: &StackIo,
    needed: &SecretUsers,
    required_label: Option<&(String, String)>,
    retry: std::time::Duration,
) -> Result<BTreeMap<(String, String), OidcCredentials>> {
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
        // The API server gives every object a UID; it keys the credentials' digest tag.
        let uid = secret.metadata.uid.unwrap_or_default();
        let data: BTreeMap<String, Vec<u8>> =
            secret.data.unwrap_or_default().into_iter().map(|(k, v)| (k, v.0)).collect();
        match credentials_from_secret(&uid, &data) {
            Ok(c) => {
                found.insert(key.clone(), c);
            }
            Err(e) => problems.push(format!("{label} {e}")),
        }
    }
    if problems.is_empty() {
        return Ok(found);
    }
    Err(Error::Blocked { event: FAILED_BUILD, reason: problems.join("; "), retry: Retry::After(retry) })
}
