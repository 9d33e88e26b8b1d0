//! `--aws-credentials-source=default` with the credentials EKS gives a pod, for users who keep
//! IRSA or EKS Pod Identity when they swap from ALBC (issue 33):
//! - IRSA: a web identity token file and `AWS_ROLE_ARN` → sts:AssumeRoleWithWebIdentity against the
//!   emulator's STS (moto answers it; it does not verify the token, AWS would);
//! - Pod Identity: the agent's container-credentials endpoint and its authorization token file,
//!   the agent emulated here (a loopback server that checks the token and hands out keys).
//!
//! Each test proves the keys the chain found sign the controller's calls: the RegisterTargets of
//! its binding carries them.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use kube::Client;
use kube::api::Api;
use lbc_e2e::controller::ControllerProc;
use lbc_e2e::emulator::Emulator;
use lbc_e2e::{Env, aws, eventually, kube_util, unique};
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

struct Scene {
    env: Env,
    client: Client,
    emu: Emulator,
    ns: String,
    target_group: String,
    ips: [&'static str; 2],
}

/// A namespace with a selector-less Service, its EndpointSlice of two VPC addresses and a binding
/// to a new IP target group.
async fn scene(test: &str, ips: [&'static str; 2]) -> Option<Scene> {
    let env = Env::require(test)?;
    let client = kube_util::client(&env).await;
    let elb = aws::elbv2(&env).await;
    let emu = Emulator::new(env.aws_endpoint());
    let ns = unique("cred-chain");
    kube_util::namespace(&client, &ns, &[]).await;
    kube_util::manual_endpoints(&client, &ns, &ips).await;
    let target_group = aws::create_ip_target_group(&env, &elb, &unique("cred-tg"), 8080).await;
    emu.tg_health(&target_group, 1.0, "healthy").await;
    kube_util::create_binding(&client, &ns, "web", "web", 80, &target_group).await;
    Some(Scene { env, client, emu, ns, target_group, ips })
}

impl Scene {
    /// Waits until both endpoints are registered; returns the access keys that signed the
    /// RegisterTargets calls naming this scene's target group since `mark`.
    async fn registered_with(&self, mark: u64, ctl: &ControllerProc) -> BTreeSet<String> {
        let elb = aws::elbv2(&self.env).await;
        let want: BTreeSet<String> = self.ips.iter().map(|ip| format!("{ip}:8080")).collect();
        eventually("both endpoints registered", 90, || async {
            (aws::registered(&elb, &self.target_group).await == want).then_some(())
        })
        .await;
        let (calls, _) = self.emu.calls(mark, None).await;
        let keys: BTreeSet<String> = calls
            .iter()
            .filter(|c| c.operation == "RegisterTargets" && c.target_group_arn.as_deref() == Some(&self.target_group))
            .filter_map(|c| c.access_key.clone())
            .collect();
        assert!(!keys.is_empty(), "no RegisterTargets for {}: {}", self.target_group, ctl.log_tail(30));
        keys
    }

    async fn teardown(self, ctl: ControllerProc) {
        let tgbs: Api<lbc_model::crd::TargetGroupBinding> = Api::namespaced(self.client.clone(), &self.ns);
        let _ = tgbs.delete_collection(&Default::default(), &Default::default()).await;
        eventually("bindings gone", 60, || async {
            tgbs.list(&Default::default()).await.ok()?.items.is_empty().then_some(())
        })
        .await;
        drop(ctl);
        kube_util::delete_namespace(&self.client, &self.ns).await;
    }
}

fn write_file(dir: &std::path::Path, name: &str, text: &str) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn irsa_web_identity_keys_sign_the_controllers_calls() {
    let Some(s) = scene("irsa_web_identity_keys_sign_the_controllers_calls", ["10.0.100.231", "10.0.100.232"]).await
    else {
        return;
    };
    let dir = s.env.run_dir().join(unique("irsa"));
    // What the EKS pod identity webhook mounts: a projected service-account token (any JWT-shaped text here).
    let token = write_file(
        &dir,
        "token",
        "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6a3ViZS1zeXN0ZW06bGJjIn0.c2ln",
    );
    let role = format!("arn:aws:iam::123456789012:role/{}", unique("lbc-irsa"));
    let mark = s.emu.mark().await;
    let ctl = ControllerProc::start_with_default_chain(
        &s.env,
        &s.ns,
        "lbc-e2e-leader",
        &["--aws-credentials-source=default"],
        &[
            ("AWS_ROLE_ARN", role.clone()),
            ("AWS_WEB_IDENTITY_TOKEN_FILE", token),
            ("AWS_ROLE_SESSION_NAME", "lbc-e2e".to_string()),
            // The chain's own STS client: the emulator (EKS sets no such variable; the regional endpoint is used).
            ("AWS_ENDPOINT_URL_STS", s.env.aws_endpoint().to_string()),
        ],
    );
    let keys = s.registered_with(mark, &ctl).await;
    let (calls, _) = s.emu.calls(mark, None).await;
    assert!(calls.iter().any(|c| c.operation == "AssumeRoleWithWebIdentity"), "no web identity exchange");
    let sessions = s.emu.sts_sessions().await;
    for k in &keys {
        assert_eq!(sessions.get(k), Some(&role), "key {k} is not a web identity session of {role}");
    }
    s.teardown(ctl).await;
}

/// The Pod Identity agent's answer for a request carrying `token`.
#[derive(Clone)]
struct Agent {
    token: String,
    access_key: String,
    seen: Arc<Mutex<Vec<String>>>,
}

async fn agent_credentials(State(a): State<Agent>, headers: HeaderMap) -> (StatusCode, String) {
    let got = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    a.seen.lock().unwrap().push(got.clone());
    if got != a.token {
        return (StatusCode::UNAUTHORIZED, r#"{"message":"invalid token"}"#.to_string());
    }
    let body = json!({"AccessKeyId": a.access_key, "SecretAccessKey": "pod-identity-secret",
        "Token": "pod-identity-session", "AccountId": "123456789012", "Expiration": "2099-01-01T00:00:00Z"});
    (StatusCode::OK, body.to_string())
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn pod_identity_agent_keys_sign_the_controllers_calls() {
    let Some(s) = scene("pod_identity_agent_keys_sign_the_controllers_calls", ["10.0.100.233", "10.0.100.234"]).await
    else {
        return;
    };
    let dir = s.env.run_dir().join(unique("pod-identity"));
    let token = unique("agent-token");
    let token_file = write_file(&dir, "eks-pod-identity-token", &token);
    let agent = Agent {
        token: token.clone(),
        access_key: format!("EKSPODID{}", fastrand::u32(100_000..999_999)),
        seen: Arc::default(),
    };
    let app =
        axum::Router::new().route("/v1/credentials", axum::routing::get(agent_credentials)).with_state(agent.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let mark = s.emu.mark().await;
    let ctl = ControllerProc::start_with_default_chain(
        &s.env,
        &s.ns,
        "lbc-e2e-leader",
        &["--aws-credentials-source=default"],
        &[
            // What EKS sets in a pod with a Pod Identity association (the agent listens on a link-local address
            // there; loopback here, which the SDK accepts as well).
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", format!("http://127.0.0.1:{port}/v1/credentials")),
            ("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", token_file),
        ],
    );
    let keys = s.registered_with(mark, &ctl).await;
    assert_eq!(keys, BTreeSet::from([agent.access_key.clone()]), "the agent's keys sign the calls");
    let seen = agent.seen.lock().unwrap().clone();
    assert!(!seen.is_empty() && seen.iter().all(|t| *t == token), "the agent got its token each time: {seen:?}");
    server.abort();
    s.teardown(ctl).await;
}
