//! The Vault credential source (`lbc_aws::credentials::vault`) against a **real OpenBao** server
//! (`e2e/scripts/bao.sh`, started here if needed) doing **real Kubernetes auth** (TokenReview on the
//! e2e kube-apiserver), and SDK clients built the way the controller builds them, talking to the
//! AWS emulator.
//!
//! All of it is real: the ServiceAccount, its TokenRequest token, the OpenBao login, token TTLs,
//! renew-self, re-login, policies, the HTTP API, and the AWS secrets engine at `aws/` (Vault
//! v1.14's engine built as an OpenBao plugin by `e2e/scripts/build-vault-plugin.sh`), whose every
//! `aws/sts/<role>` read is an sts:AssumeRole against the emulator (moto), which hands out new keys
//! each time. The engine's AWS SDK refuses STS lifetimes under 900 s, so keys live 15 min; what
//! makes the provider re-read them every ~16 s is the lease OpenBao hands out, capped by the `aws/`
//! mount's max_lease_ttl (24 s, set by bao.sh). The emulator does not check keys, so the tests
//! check which access key IDs were used (its call log) and that each one is an STS session of the
//! IAM role the engine role names (its `/_awsemu/sts-sessions`).

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider, future};
use aws_sdk_elasticloadbalancingv2::types::TargetDescription;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, ObjectMeta, PostParams};
use lbc_aws::config::{ClientSettings, Endpoints, build_clients};
use lbc_aws::credentials::{CredentialMetrics, CredentialSource, Health, Reason, VaultConfig, vault};
use lbc_e2e::{Env, aws, kube_util, unique};
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// The OpenBao server of `e2e/scripts/bao.sh`.
#[derive(Clone)]
struct Bao {
    addr: String,
    root: String,
    audit_log: PathBuf,
    /// The IAM role (in the emulator) the engine roles assume.
    role_arn: String,
    /// The `aws/` mount's max lease: how long OpenBao lets the provider keep keys.
    lease_s: u64,
    http: reqwest::Client,
}

impl Bao {
    /// Runs `e2e/scripts/bao.sh` (reuses a running server) and reads `e2e/.run/bao.env`.
    fn up(env: &Env) -> Self {
        let vars = lbc_e2e::bao::up(env);
        Self {
            addr: vars["BAO_ADDR"].clone(),
            root: vars["BAO_TOKEN"].clone(),
            audit_log: PathBuf::from(&vars["LBC_BAO_AUDIT_LOG"]),
            role_arn: vars["LBC_BAO_AWS_ROLE_ARN"].clone(),
            lease_s: vars["LBC_BAO_AWS_LEASE_SECONDS"].parse().expect("LBC_BAO_AWS_LEASE_SECONDS"),
            http: reqwest::Client::new(),
        }
    }

    async fn write(&self, path: &str, body: Value) {
        lbc_e2e::bao::write(&self.http, &self.addr, &self.root, path, body).await;
    }

    async fn delete(&self, path: &str) {
        let _ = self.http.delete(format!("{}/v1/{path}", self.addr)).header("X-Vault-Token", &self.root).send().await;
    }

    /// A Kubernetes auth role for `sa` in `ns` with a policy allowing `allow` (read).
    async fn role(&self, name: &str, ns: &str, sa: &str, allow: &str, token_ttl: &str, token_max_ttl: &str) {
        self.write(
            &format!("sys/policies/acl/{name}"),
            json!({ "policy": format!("path \"{allow}\" {{ capabilities = [\"read\"] }}") }),
        )
        .await;
        self.write(
            &format!("auth/kubernetes/role/{name}"),
            json!({
                "bound_service_account_names": [sa], "bound_service_account_namespaces": [ns], "audience": "vault",
                "token_policies": [name], "token_ttl": token_ttl, "token_max_ttl": token_max_ttl,
            }),
        )
        .await;
    }

    /// An AWS engine role: assumed_role on the IAM role bao.sh created in the emulator. The sts
    /// TTLs are the engine's own bounds (900 s is the least its AWS SDK sends); without
    /// `max_sts_ttl` the engine would clamp the TTL to the mount's 24 s max lease.
    async fn engine_role(&self, name: &str) {
        self.write(
            &format!("aws/roles/{name}"),
            json!({ "credential_type": "assumed_role", "role_arns": [self.role_arn],
                    "default_sts_ttl": "15m", "max_sts_ttl": "1h" }),
        )
        .await;
    }

    /// (logins, renewals) the audit log shows for Kubernetes auth role `role`: renewals are
    /// renew-self requests made with a token that one of those logins returned (the audit log
    /// HMACs accessors with one key, so they can be matched).
    fn audit_counts(&self, role: &str) -> (usize, usize) {
        let text = std::fs::read_to_string(&self.audit_log).unwrap_or_default();
        let mut accessors = HashSet::new();
        let mut renewals = 0;
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
            if v["type"] != "response" {
                continue;
            }
            match v["request"]["path"].as_str().unwrap_or_default() {
                "auth/kubernetes/login" if v["response"]["auth"]["metadata"]["role"] == role => {
                    accessors.insert(v["response"]["auth"]["accessor"].as_str().unwrap_or_default().to_string());
                }
                "auth/token/renew-self"
                    if v["error"].is_null()
                        && accessors.contains(v["request"]["client_token_accessor"].as_str().unwrap_or_default()) =>
                {
                    renewals += 1;
                }
                _ => {}
            }
        }
        (accessors.len(), renewals)
    }
}

/// Namespace + ServiceAccount + a TokenRequest token (audience `aud`) in a file.
async fn service_account_token(client: &kube::Client, ns: &str, sa: &str, aud: &str, dir: &Path) -> PathBuf {
    let sas = Api::<ServiceAccount>::namespaced(client.clone(), ns);
    let obj =
        ServiceAccount { metadata: ObjectMeta { name: Some(sa.into()), ..Default::default() }, ..Default::default() };
    if let Err(e) = sas.create(&PostParams::default(), &obj).await {
        assert!(e.to_string().contains("already exists"), "create ServiceAccount: {e}");
    }
    let tr = TokenRequest {
        spec: TokenRequestSpec { audiences: vec![aud.into()], expiration_seconds: Some(3600), ..Default::default() },
        ..Default::default()
    };
    let out = sas.create_token_request(sa, &PostParams::default(), &tr).await.expect("TokenRequest");
    let path = dir.join(format!("{sa}-{}.jwt", aud.replace(['.', '/', ':'], "_")));
    std::fs::write(&path, out.status.expect("token").token).unwrap();
    path
}

/// Records the access key ID every time the SDK's identity cache asks for credentials.
#[derive(Debug)]
struct Recording {
    inner: SharedCredentialsProvider,
    seen: Arc<Mutex<Vec<String>>>,
}

impl ProvideCredentials for Recording {
    fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        future::ProvideCredentials::new(async move {
            let c = self.inner.provide_credentials().await?;
            self.seen.lock().unwrap().push(c.access_key_id().to_string());
            Ok(c)
        })
    }
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(unique(name));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn vault_keys_rotate_during_target_sync_without_a_failed_call() {
    let Some(env) = Env::require("vault_keys_rotate_during_target_sync_without_a_failed_call") else { return };
    let bao = Bao::up(&env);
    let kube = kube_util::client(&env).await;
    let ns = unique("vault-rot");
    kube_util::namespace(&kube, &ns, &[]).await;
    let dir = tmpdir("vault-rot");
    let token_path = service_account_token(&kube, &ns, "aws-load-balancer-controller", "vault", &dir).await;
    let role = ns.clone();
    // token TTL 20 s (renewed at ~13 s), max 50 s: renewals, then a re-login, during the run
    bao.role(&role, &ns, "aws-load-balancer-controller", &format!("aws/sts/{role}"), "20s", "50s").await;
    bao.engine_role(&role).await;
    let emu = lbc_e2e::emulator::Emulator::new(env.aws_endpoint());

    // 15-minute STS keys (the controller's default --vault-ttl), leased for 24 s: new keys every ~16 s.
    let mut cfg = VaultConfig::new(&bao.addr, &role, &role);
    cfg.token_path = token_path;
    cfg.ttl = Some(Duration::from_secs(900));
    let metrics = CredentialMetrics::default();
    let source = vault::start(cfg, metrics.clone()).expect("config");
    let st =
        source.wait_ready(Duration::from_secs(20)).await.unwrap_or_else(|st| panic!("not ready: {}", st.summary()));
    assert_eq!(st.health, Health::Healthy);

    let seen = Arc::new(Mutex::new(Vec::new()));
    let provider = SharedCredentialsProvider::new(Recording { inner: source.provider(), seen: seen.clone() });
    // The controller's way of building clients (SDK identity cache included), retries off: every failure counts.
    let clients = build_clients(&ClientSettings {
        region: env.get("AWS_REGION").into(),
        endpoints: Endpoints::all(env.aws_endpoint()),
        credentials: Some(provider),
    })
    .await;
    let elb = clients.elbv2;
    let arn = aws::create_ip_target_group(&env, &aws::elbv2(&env).await, &unique("vault-tg"), 8080).await;
    let since = emu.mark().await;

    // Target-sync-like loop: register/describe/deregister against the target group while keys rotate.
    // LBC_E2E_VAULT_SECS shortens or lengthens the run (default 80 s: ~5 key rotations, 1 re-login).
    let run_for =
        Duration::from_secs(std::env::var("LBC_E2E_VAULT_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(80));
    let start = Instant::now();
    let (mut calls, mut failed) = (0u32, Vec::new());
    let mut not_ready = Vec::new();
    let mut i = 0u32;
    while start.elapsed() < run_for {
        i += 1;
        let ip = format!("10.0.{}.{}", 100 + (i / 200) % 50, 10 + i % 200);
        let target = TargetDescription::builder().id(&ip).port(8080).build();
        let r = elb.register_targets().target_group_arn(&arn).targets(target.clone()).send().await;
        calls += 1;
        if let Err(e) = r {
            failed.push(format!("RegisterTargets at {:?}: {}", start.elapsed(), aws_smithy_types_display(&e)));
        }
        match elb.describe_target_health().target_group_arn(&arn).send().await {
            Ok(out) => {
                assert!(out.target_health_descriptions().iter().any(|d| d.target().and_then(|t| t.id()) == Some(&ip)))
            }
            Err(e) => {
                failed.push(format!("DescribeTargetHealth at {:?}: {}", start.elapsed(), aws_smithy_types_display(&e)))
            }
        }
        calls += 1;
        if i.is_multiple_of(3) {
            let r = elb.deregister_targets().target_group_arn(&arn).targets(target).send().await;
            calls += 1;
            if let Err(e) = r {
                failed.push(format!("DeregisterTargets at {:?}: {}", start.elapsed(), aws_smithy_types_display(&e)));
            }
        }
        let st = source.state();
        if !st.is_ready() || st.health != Health::Healthy {
            not_ready.push(format!("{:?}: {}", start.elapsed(), st.summary()));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    let st = source.state();
    let sdk_keys: BTreeSet<String> = seen.lock().unwrap().iter().cloned().collect();
    // What the emulator saw: this target group's calls, signed with which keys, and whose keys they are.
    let (logged, _) = emu.calls(since, Some(&arn)).await;
    let emu_failed = logged.iter().filter(|c| c.outcome != "ok").count();
    let emu_keys: BTreeSet<String> = logged.iter().filter_map(|c| c.access_key.clone()).collect();
    let sessions = emu.sts_sessions().await;
    let (logins, renewals) = bao.audit_counts(&role);
    eprintln!(
        "vault e2e: {calls} AWS calls in {:?} ({} logged by the emulator, {emu_failed} failed); provider refreshes {}; \
         SDK used {} distinct keys, the emulator saw {} {:?}; OpenBao logins {logins}, token renewals {renewals}; \
         state: {}",
        start.elapsed(),
        logged.len(),
        st.refreshes,
        sdk_keys.len(),
        emu_keys.len(),
        emu_keys,
        st.summary()
    );
    assert!(failed.is_empty(), "{} of {calls} AWS calls failed:\n{}", failed.len(), failed.join("\n"));
    assert!(not_ready.is_empty(), "credentials were not healthy at times:\n{}", not_ready.join("\n"));
    // refreshes at ~2/3 of the lease (~16 s of 24 s): more than run_for / (5/6 of the lease)
    let expected_min = (run_for.as_secs() * 6 / (5 * bao.lease_s)) as usize;
    assert!(st.refreshes as usize > expected_min, "provider refreshed {} times in {run_for:?}", st.refreshes);
    assert_eq!(emu_failed, 0, "the emulator logged failed calls");
    assert!(emu_keys.len() >= 3, "the emulator should have seen at least 3 different keys: {emu_keys:?}");
    assert!(emu_keys.is_subset(&sdk_keys), "keys the emulator saw {emu_keys:?}, the SDK was given {sdk_keys:?}");
    for k in &sdk_keys {
        assert_eq!(sessions.get(k), Some(&bao.role_arn), "key {k} is not an sts:AssumeRole session of the role");
    }
    assert!(logins >= 2, "token_max_ttl 50 s: the provider must have logged in again (logins {logins})");
    assert!(renewals >= 1, "token_ttl 20 s: the provider must have renewed its token (renewals {renewals})");
    let failures: u64 = metrics
        .failures
        .get_or_create(&lbc_aws::credentials::FailureLabels { source: "vault", reason: "permission_denied" })
        .get();
    assert_eq!(failures, 0);

    bao.delete(&format!("auth/kubernetes/role/{role}")).await;
    bao.delete(&format!("sys/policies/acl/{role}")).await;
    bao.delete(&format!("aws/roles/{role}")).await;
    kube_util::delete_namespace(&kube, &ns).await;
    let _ = std::fs::remove_dir_all(dir);
}

fn aws_smithy_types_display<E: std::error::Error>(e: &E) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// The first error the source reports (it must not become ready).
async fn failure_of(source: &CredentialSource) -> lbc_aws::credentials::CredentialError {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let st = source.state();
        if let Some(e) = st.last_error {
            assert_eq!(st.health, Health::Expired, "{}", e.message);
            return e;
        }
        assert!(!st.is_ready(), "became ready: {}", st.summary());
        assert!(Instant::now() < deadline, "no error reported: {}", st.summary());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn vault_failures_are_named_against_real_openbao() {
    let Some(env) = Env::require("vault_failures_are_named_against_real_openbao") else { return };
    let bao = Bao::up(&env);
    let kube = kube_util::client(&env).await;
    let ns = unique("vault-err");
    kube_util::namespace(&kube, &ns, &[]).await;
    let dir = tmpdir("vault-err");
    let role = ns.clone();
    bao.role(&role, &ns, "aws-load-balancer-controller", &format!("aws/sts/{role}"), "1h", "2h").await;
    bao.engine_role(&role).await;
    let good = service_account_token(&kube, &ns, "aws-load-balancer-controller", "vault", &dir).await;
    let cfg = |token: &PathBuf| {
        let mut c = VaultConfig::new(&bao.addr, &role, &role);
        c.token_path = token.clone();
        c
    };

    // sanity: the good path works
    let ok = vault::start(cfg(&good), CredentialMetrics::default()).unwrap();
    ok.wait_ready(Duration::from_secs(10)).await.unwrap_or_else(|st| panic!("{}", st.summary()));

    // wrong audience: the token is for STS, the role wants "vault"
    let sts_aud = service_account_token(&kube, &ns, "aws-load-balancer-controller", "sts.amazonaws.com", &dir).await;
    let e = failure_of(&vault::start(cfg(&sts_aud), CredentialMetrics::default()).unwrap()).await;
    assert_eq!(e.reason, Reason::Audience, "{}", e.message);
    assert!(
        e.message.contains("audiences: [sts.amazonaws.com]") && e.message.contains("invalid audience"),
        "{}",
        e.message
    );

    // a ServiceAccount the role does not bind
    let other = service_account_token(&kube, &ns, "someone-else", "vault", &dir).await;
    let e = failure_of(&vault::start(cfg(&other), CredentialMetrics::default()).unwrap()).await;
    assert_eq!(e.reason, Reason::PermissionDenied, "{}", e.message);
    assert!(
        e.message.contains(&format!("ServiceAccount {ns}/someone-else"))
            && e.message.contains("bound_service_account_names")
            && e.message.contains(&format!("role \"{role}\"")),
        "{}",
        e.message
    );

    // unknown auth role
    let mut c = cfg(&good);
    c.auth_role = "no-such-role".into();
    let e = failure_of(&vault::start(c, CredentialMetrics::default()).unwrap()).await;
    assert_eq!(e.reason, Reason::InvalidRole, "{}", e.message);

    // the policy does not cover the path
    let mut c = cfg(&good);
    c.secrets_role = format!("{role}-other");
    let e = failure_of(&vault::start(c, CredentialMetrics::default()).unwrap()).await;
    assert_eq!(e.reason, Reason::PermissionDenied, "{}", e.message);
    assert!(e.message.contains(&format!("aws/sts/{role}-other")) && e.message.contains("[\"read\"]"), "{}", e.message);

    // the engine has no such role (the policy allows the path): the engine's own 400
    let noeng = format!("{role}-noeng");
    bao.role(&noeng, &ns, "aws-load-balancer-controller", &format!("aws/sts/{noeng}"), "1h", "2h").await;
    let mut c = cfg(&good);
    (c.auth_role, c.secrets_role) = (noeng.clone(), noeng.clone());
    let e = failure_of(&vault::start(c, CredentialMetrics::default()).unwrap()).await;
    assert_eq!(e.reason, Reason::InvalidRole, "{}", e.message);
    assert!(e.message.contains(&format!("no role \"{noeng}\"")) && e.message.contains("not found"), "{}", e.message);

    // the engine's AWS SDK refuses an STS lifetime under 900 s before calling STS: a rejected read
    let mut c = cfg(&good);
    c.ttl = Some(Duration::from_secs(60));
    let e = failure_of(&vault::start(c, CredentialMetrics::default()).unwrap()).await;
    assert_eq!(e.reason, Reason::Rejected, "{}", e.message);
    assert!(e.message.contains("Error assuming role") && e.message.contains("900"), "{}", e.message);

    // a sealed server: a second OpenBao of our own, sealed through the API
    let sealed = lbc_e2e::bao::SealedBao::start(&env).await;
    let mut c = cfg(&good);
    c.address = sealed.addr.clone();
    let e = failure_of(&vault::start(c, CredentialMetrics::default()).unwrap()).await;
    assert_eq!(e.reason, Reason::Sealed, "{}", e.message);
    assert!(e.message.contains(&sealed.addr) && e.message.contains("is sealed"), "{}", e.message);
    drop(sealed);

    for r in [&role, &noeng] {
        bao.delete(&format!("auth/kubernetes/role/{r}")).await;
        bao.delete(&format!("sys/policies/acl/{r}")).await;
    }
    bao.delete(&format!("aws/roles/{role}")).await;
    kube_util::delete_namespace(&kube, &ns).await;
    let _ = std::fs::remove_dir_all(dir);
}

/// The controller binary itself on `--aws-credentials-source=vault`: a TargetGroupBinding
/// follows scaling while the AWS engine hands out new STS keys on every read (leased 24 s, so
/// re-read every ~16 s) and the Vault token is renewed and re-issued. No AWS call may fail,
/// readiness must hold, and the emulator's call log must show the controller signing with several
/// keys, each an sts:AssumeRole session of the engine role's IAM role.
#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn controller_on_vault_keys_follows_scaling_while_keys_rotate() {
    let Some(env) = Env::require("controller_on_vault_keys_follows_scaling_while_keys_rotate") else { return };
    let bao = Bao::up(&env);
    let kube = kube_util::client(&env).await;
    let elb = aws::elbv2(&env).await;
    let emu = lbc_e2e::emulator::Emulator::new(env.aws_endpoint());
    let ns = unique("vault-ctl");
    kube_util::namespace(&kube, &ns, &[]).await;
    let dir = tmpdir("vault-ctl");
    let sa = "aws-load-balancer-controller";
    let token_path = service_account_token(&kube, &ns, sa, "vault", &dir).await;
    let role = ns.clone();
    bao.role(&role, &ns, sa, &format!("aws/sts/{role}"), "20s", "50s").await;
    bao.engine_role(&role).await;

    env.pods(&["create", &ns, "web", "--replicas", "2", "--port", "8080", "--terminate-seconds", "2"]);
    env.pods(&["service", &ns, "web", "--port", "80", "--target-port", "8080"]);
    let arn = aws::create_ip_target_group(&env, &elb, &unique("vault-tg"), 8080).await;
    kube_util::create_binding(&kube, &ns, "web", "web", 80, &arn).await;
    let since = emu.mark().await;

    let ctl = lbc_e2e::controller::ControllerProc::start(
        &env,
        &ns,
        "lbc-e2e-vault",
        &[
            "--aws-credentials-source=vault",
            &format!("--vault-address={}", bao.addr),
            &format!("--vault-auth-role={role}"),
            &format!("--vault-secrets-role={role}"),
            &format!("--vault-token-path={}", token_path.display()),
            "--vault-ttl=15m",
            "--sync-period=5s",
        ],
    );
    let run_for =
        Duration::from_secs(std::env::var("LBC_E2E_VAULT_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(70));
    let start = Instant::now();
    let mut not_ready = Vec::new();
    let mut round = 0u32;
    while start.elapsed() < run_for {
        round += 1;
        let replicas = [2, 5, 3, 6, 1][round as usize % 5].to_string();
        env.pods(&["scale", &ns, "web", "--replicas", &replicas]);
        let want: BTreeSet<String> = env.pod_ips(&ns, "web").into_iter().map(|ip| format!("{ip}:8080")).collect();
        lbc_e2e::eventually(&format!("round {round}: {replicas} targets"), 60, || async {
            (aws::registered(&elb, &arn).await == want).then_some(())
        })
        .await;
        if !ctl.ready().await {
            not_ready.push(format!("{:?}", start.elapsed()));
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
    }

    // This binding's target group only: other tests may share the emulator.
    let (calls, _) = emu.calls(since, Some(&arn)).await;
    let calls: Vec<_> =
        calls.into_iter().filter(|c| c.access_key.as_deref() != Some(aws::HARNESS_ACCESS_KEY)).collect();
    let failed: Vec<String> = calls
        .iter()
        .filter(|c| c.outcome != "ok")
        .map(|c| format!("{} {:?} key {:?}", c.operation, c.error_code, c.access_key))
        .collect();
    let used: BTreeSet<String> = calls.iter().filter_map(|c| c.access_key.clone()).collect();
    let sessions = emu.sts_sessions().await;
    let refreshes = ctl.metric("aws_credentials_refreshes_total{source=\"vault\",outcome=\"success\"}").await;
    let expiry = ctl.metric("aws_credentials_expiry_timestamp_seconds{source=\"vault\"}").await;
    eprintln!(
        "controller on vault: {round} scaling rounds in {:?}, {} AWS calls, {} distinct keys used, refreshes {refreshes:?}",
        start.elapsed(),
        calls.len(),
        used.len()
    );
    assert!(failed.is_empty(), "AWS calls failed while keys rotated:\n{}", failed.join("\n"));
    assert!(not_ready.is_empty(), "controller unready at {not_ready:?}:\n{}", ctl.log_text());
    assert!(used.len() >= 3, "the controller should have signed with at least 3 keys: {used:?}");
    for k in &used {
        assert_eq!(sessions.get(k), Some(&bao.role_arn), "key {k} is not an sts:AssumeRole session of the role");
    }
    assert!(refreshes.unwrap_or(0.0) >= 3.0, "refreshes {refreshes:?}");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    assert!(expiry.is_some_and(|e| e > now), "expiry gauge in the future: {expiry:?}");
    // moto's session tokens all start like this
    assert!(!ctl.log_text().contains("FQoGZXIvYXdzE"), "a session token reached the controller log");
    drop(ctl);

    bao.delete(&format!("auth/kubernetes/role/{role}")).await;
    bao.delete(&format!("sys/policies/acl/{role}")).await;
    bao.delete(&format!("aws/roles/{role}")).await;
    kube_util::delete_namespace(&kube, &ns).await;
    let _ = std::fs::remove_dir_all(dir);
}

/// `/readyz`, which any pod in the cluster can reach, names a Vault failure by its reason only:
/// never Vault's address nor its error text (those go to the log and the metrics).
#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn readyz_names_a_vault_failure_by_its_reason_only() {
    let Some(env) = Env::require("readyz_names_a_vault_failure_by_its_reason_only") else { return };
    let _bao = Bao::up(&env); // the sealed server's binary comes with it
    let kube = kube_util::client(&env).await;
    let ns = unique("vault-readyz");
    kube_util::namespace(&kube, &ns, &[]).await;
    let dir = tmpdir("vault-readyz");
    let token = service_account_token(&kube, &ns, "aws-load-balancer-controller", "vault", &dir).await;
    let sealed = lbc_e2e::bao::SealedBao::start(&env).await;
    let ctl = lbc_e2e::controller::ControllerProc::start(
        &env,
        &ns,
        "lbc-e2e-vault-readyz",
        &[
            "--aws-credentials-source=vault",
            &format!("--vault-address={}", sealed.addr),
            "--vault-auth-role=lbc",
            "--vault-secrets-role=lbc",
            &format!("--vault-token-path={}", token.display()),
        ],
    );
    let url = format!("http://127.0.0.1:{}/readyz", ctl.health_port);
    // Ready (admission is served) after the 30 s credential wait, with the failure in the body.
    let body = lbc_e2e::eventually("/readyz names the sealed Vault", 90, || async {
        let body = reqwest::get(&url).await.ok()?.text().await.ok()?;
        body.contains("last error: sealed").then_some(body)
    })
    .await;
    assert!(!body.contains(&sealed.addr) && !body.contains("is sealed"), "Vault's own words in /readyz: {body}");
    assert!(ctl.log_text().contains("is sealed"), "the log keeps the whole error: {}", ctl.log_tail(20));
    drop(ctl);
    drop(sealed);
    kube_util::delete_namespace(&kube, &ns).await;
    let _ = std::fs::remove_dir_all(dir);
}
