//! A namespace tenant as a platform team sets one up: its own namespace, a ServiceAccount bound to
//! the built-in `admin` ClusterRole in that namespace only (what teams get on a shared cluster), and
//! a kube client that authenticates with that ServiceAccount's TokenRequest token. Everything the
//! tenant does goes through the API server's real authentication, RBAC and admission webhooks.

use crate::Env;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef, Subject};
use kube::api::{Api, ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

/// The rights of a team in its own namespace: the built-in aggregated `admin` ClusterRole, which
/// includes TargetGroupBindings through the chart's aggregation labels when those are installed
/// (the test grants them explicitly too, so it does not depend on the chart).
pub const TENANT_CLUSTER_ROLE: &str = "admin";

pub struct Tenant {
    pub namespace: String,
    /// Authenticated as `system:serviceaccount:<namespace>:team`.
    pub client: Client,
}

impl Tenant {
    /// Creates `namespace` (with `labels`), the ServiceAccount `team`, RoleBindings to `admin` and
    /// to a Role over `elbv2.k8s.aws` TargetGroupBindings, and a client holding a one-hour token.
    pub async fn create(admin: &Client, env: &Env, namespace: &str, labels: &[(&str, &str)]) -> Tenant {
        crate::kube_util::namespace(admin, namespace, labels).await;
        Self::join(admin, env, namespace).await
    }

    /// The tenant of an existing namespace (one a test's workload already runs in).
    pub async fn join(admin: &Client, env: &Env, namespace: &str) -> Tenant {
        let sa = "team";
        let sas = Api::<ServiceAccount>::namespaced(admin.clone(), namespace);
        let obj = ServiceAccount {
            metadata: ObjectMeta { name: Some(sa.into()), ..Default::default() },
            ..Default::default()
        };
        sas.create(&PostParams::default(), &obj).await.expect("create the tenant's ServiceAccount");
        let roles = Api::<k8s_openapi::api::rbac::v1::Role>::namespaced(admin.clone(), namespace);
        let bindings_role: k8s_openapi::api::rbac::v1::Role = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "team-targetgroupbindings"},
            "rules": [{"apiGroups": ["elbv2.k8s.aws"], "resources": ["targetgroupbindings"], "verbs": ["*"]}],
        }))
        .expect("Role");
        roles.create(&PostParams::default(), &bindings_role).await.expect("create the tenant's binding Role");
        let rbs = Api::<RoleBinding>::namespaced(admin.clone(), namespace);
        for (name, kind, role) in [
            ("team-admin", "ClusterRole", TENANT_CLUSTER_ROLE),
            ("team-targetgroupbindings", "Role", "team-targetgroupbindings"),
        ] {
            let rb = RoleBinding {
                metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
                role_ref: RoleRef {
                    api_group: "rbac.authorization.k8s.io".into(),
                    kind: kind.into(),
                    name: role.into(),
                },
                subjects: Some(vec![Subject {
                    kind: "ServiceAccount".into(),
                    name: sa.into(),
                    namespace: Some(namespace.into()),
                    ..Default::default()
                }]),
            };
            rbs.create(&PostParams::default(), &rb).await.expect("create the tenant's RoleBinding");
        }
        let tr = TokenRequest {
            spec: TokenRequestSpec { audiences: vec![], expiration_seconds: Some(3600), ..Default::default() },
            ..Default::default()
        };
        let token = sas
            .create_token_request(sa, &PostParams::default(), &tr)
            .await
            .expect("TokenRequest for the tenant")
            .status
            .expect("token in the TokenRequest's status")
            .token;
        Tenant { namespace: namespace.into(), client: token_client(env, &token).await }
    }
}

/// A client for the environment's API server (its address and CA from the kubeconfig) that
/// authenticates with `token` only: no client certificate.
pub async fn token_client(env: &Env, token: &str) -> Client {
    let kc = Kubeconfig::read_from(env.get("KUBECONFIG")).expect("kubeconfig");
    let mut cfg = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await.expect("kube config");
    cfg.auth_info = kube::config::AuthInfo { token: Some(token.to_string().into()), ..Default::default() };
    Client::try_from(cfg).expect("kube client with the tenant's token")
}

/// A tenancy policy written where `--tenancy-policy-file` reads it; the file goes with the value.
pub struct PolicyFile(std::path::PathBuf);

impl PolicyFile {
    /// Writes `policy` (JSON) to a file named after `tag` (a namespace: unique per test).
    pub fn new(tag: &str, policy: &serde_json::Value) -> Self {
        let path = std::env::temp_dir().join(format!("{tag}-tenancy.json"));
        std::fs::write(&path, policy.to_string()).expect("tenancy policy file");
        Self(path)
    }

    /// `--tenancy-policy-file=<path>`.
    pub fn flag(&self) -> String {
        format!("--tenancy-policy-file={}", self.0.display())
    }
}

impl Drop for PolicyFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
