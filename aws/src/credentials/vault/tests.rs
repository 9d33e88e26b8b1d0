//! The Vault source against a fake Vault (axum on 127.0.0.1:0) for what a real server cannot easily
//! be made to do on cue: seal mid-run, answer slowly, drop the connection mid-body, revoke tokens,
//! cap renewals at a max TTL, and expire keys while a refresh is in flight.

use super::*;
use crate::credentials::{CredentialState, Health};
use aws_credential_types::provider::ProvideCredentials;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

const JWT_PAYLOAD: &str = r#"{"aud":["vault"],"sub":"system:serviceaccount:kube-system:lbc","kubernetes.io":{"namespace":"kube-system","serviceaccount":{"name":"lbc","uid":"u"}}}"#;

fn fake_jwt() -> String {
    let b = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
    format!("{}.{}.{}", b(r#"{"alg":"RS256"}"#), b(JWT_PAYLOAD), "c2lnbmF0dXJlLXNlY3JldA")
}

#[derive(Clone, Debug)]
enum Action {
    Ok,
    Delay(Duration),
    /// Send half a body, then break the connection.
    Drop,
    Status(u16, &'static str),
}

struct Fake {
    sealed: bool,
    login: Action,
    token_ttl: u64,
    token_renewable: bool,
    /// Seconds after login beyond which renewals are capped (0: none).
    token_max_ttl: u64,
    lease: u64,
    reads: VecDeque<Action>,
    /// tokens: id -> (login time, expiry, max expiry)
    tokens: HashMap<String, (Instant, Instant, Option<Instant>)>,
    logins: u32,
    renews: u32,
    read_calls: u32,
    key_seq: u32,
    last_query: String,
}

impl Default for Fake {
    fn default() -> Self {
        Self {
            sealed: false,
            login: Action::Ok,
            token_ttl: 3600,
            token_renewable: true,
            token_max_ttl: 0,
            lease: 3600,
            reads: VecDeque::new(),
            tokens: HashMap::new(),
            logins: 0,
            renews: 0,
            read_calls: 0,
            key_seq: 0,
            last_query: String::new(),
        }
    }
}

type Shared = Arc<Mutex<Fake>>;

fn errors(status: u16, msg: &str) -> Response {
    (StatusCode::from_u16(status).unwrap(), axum::Json(json!({ "errors": [msg] }))).into_response()
}

fn sealed() -> Response {
    errors(503, "Vault is sealed")
}

fn dropped() -> Response {
    let chunks: Vec<Result<&'static str, std::io::Error>> =
        vec![Ok(r#"{"data":{"access_key":"#), Err(std::io::Error::other("connection reset"))];
    Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .body(Body::from_stream(futures::stream::iter(chunks)))
        .unwrap()
}

async fn apply(action: &Action) -> Option<Response> {
    match action {
        Action::Ok => None,
        Action::Delay(d) => {
            tokio::time::sleep(*d).await;
            None
        }
        Action::Drop => Some(dropped()),
        Action::Status(s, m) => Some(errors(*s, m)),
    }
}

async fn login(State(f): State<Shared>, Path(mount): Path<String>, axum::Json(body): axum::Json<Value>) -> Response {
    let action = {
        let g = f.lock().unwrap();
        if g.sealed {
            return sealed();
        }
        g.login.clone()
    };
    if mount != "kubernetes" {
        return errors(404, "no handler for route \"auth/x/login\". route entry not found.");
    }
    if body["role"] != "lbc" {
        return errors(400, "invalid role name \"x\"");
    }
    let claims = Claims::parse(body["jwt"].as_str().unwrap_or_default());
    if claims.name.is_none() {
        return errors(403, "permission denied");
    }
    if claims.name.as_deref() != Some("lbc") {
        return errors(403, "service account name not authorized");
    }
    if let Some(r) = apply(&action).await {
        return r;
    }
    let mut g = f.lock().unwrap();
    g.logins += 1;
    let id = format!("hvs.tok-{}", g.logins);
    let now = Instant::now();
    let max = (g.token_max_ttl > 0).then(|| now + Duration::from_secs(g.token_max_ttl));
    let ttl = Duration::from_secs(g.token_ttl);
    g.tokens.insert(id.clone(), (now, now + ttl, max));
    axum::Json(json!({
        "auth": { "client_token": id, "accessor": "acc", "lease_duration": g.token_ttl,
                  "renewable": g.token_renewable, "policies": ["default", "lbc"] },
        "data": null
    }))
    .into_response()
}

fn valid_token(g: &Fake, h: &HeaderMap) -> Option<String> {
    let id = h.get("x-vault-token")?.to_str().ok()?.to_string();
    let (_, exp, _) = g.tokens.get(&id)?;
    (Instant::now() < *exp).then_some(id)
}

async fn renew(State(f): State<Shared>, h: HeaderMap, axum::Json(body): axum::Json<Value>) -> Response {
    let mut g = f.lock().unwrap();
    if g.sealed {
        return sealed();
    }
    let Some(id) = valid_token(&g, &h) else { return errors(403, "permission denied") };
    if !g.token_renewable {
        return errors(400, "lease is not renewable");
    }
    g.renews += 1;
    let inc: u64 = body["increment"].as_str().unwrap().trim_end_matches('s').parse().unwrap();
    let now = Instant::now();
    let (_, exp, max) = g.tokens.get_mut(&id).unwrap();
    let mut new_exp = now + Duration::from_secs(inc);
    if let Some(m) = max {
        new_exp = new_exp.min(*m);
    }
    *exp = new_exp;
    let ttl = new_exp.saturating_duration_since(now).as_secs();
    axum::Json(json!({ "auth": { "client_token": id, "lease_duration": ttl, "renewable": true } })).into_response()
}

async fn read(
    State(f): State<Shared>,
    Path((kind, role)): Path<(String, String)>,
    h: HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    let action = {
        let mut g = f.lock().unwrap();
        if g.sealed {
            return sealed();
        }
        if valid_token(&g, &h).is_none() {
            return errors(403, "permission denied");
        }
        g.read_calls += 1;
        g.last_query = uri.query().unwrap_or_default().to_string();
        g.reads.pop_front().unwrap_or(Action::Ok)
    };
    if role != "lbc" {
        return errors(400, "role \"x\" not found");
    }
    if let Some(r) = apply(&action).await {
        return r;
    }
    let mut g = f.lock().unwrap();
    g.key_seq += 1;
    let n = g.key_seq;
    let token = (kind == "sts").then(|| format!("session-token-{n}"));
    axum::Json(json!({
        "lease_id": format!("aws/{kind}/lbc/lease{n}"), "renewable": kind == "creds", "lease_duration": g.lease,
        "data": { "access_key": format!("AKIAFAKE{n:08}"), "secret_key": format!("secret-key-{n}"),
                  "security_token": token }
    }))
    .into_response()
}

struct Harness {
    fake: Shared,
    addr: String,
    dir: PathBuf,
}

impl Harness {
    async fn start(fake: Fake) -> Self {
        let fake = Arc::new(Mutex::new(fake));
        let app = Router::new()
            .route("/v1/auth/token/renew-self", post(renew))
            .route("/v1/auth/{mount}/login", post(login))
            .route("/v1/aws/{kind}/{role}", get(read))
            .with_state(fake.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let dir = std::env::temp_dir().join(format!("lbc-vault-test-{:x}", fastrand::u64(..)));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("token"), fake_jwt()).unwrap();
        Self { fake, addr, dir }
    }

    fn config(&self) -> VaultConfig {
        let mut c = VaultConfig::new(&self.addr, "lbc", "lbc");
        c.token_path = self.dir.join("token");
        c.timing = fast_timing();
        c
    }

    fn with<R>(&self, f: impl FnOnce(&mut Fake) -> R) -> R {
        f(&mut self.fake.lock().unwrap())
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn fast_timing() -> Timing {
    Timing {
        refresh_fraction: 2.0 / 3.0,
        jitter: 0.0,
        min_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_millis(400),
        request_timeout: Duration::from_millis(500),
        wait_for_credentials: Duration::from_secs(2),
        sdk_cache_ttl: Duration::from_secs(25),
    }
}

async fn key(source: &CredentialSource) -> Result<String, String> {
    source
        .provider()
        .provide_credentials()
        .await
        .map(|c| c.access_key_id().to_string())
        .map_err(|e| aws_smithy_types::error::display::DisplayErrorContext(&e).to_string())
}

async fn sleep_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

fn assert_no_secrets(st: &CredentialState) {
    let text = format!("{} {:?}", st.summary(), st);
    for s in ["secret-key-", "session-token-", "hvs.tok-", &fake_jwt(), "c2lnbmF0dXJlLXNlY3JldA"] {
        assert!(!text.contains(s), "state leaks {s:?}: {text}");
    }
}

fn failures(m: &CredentialMetrics, reason: Reason) -> u64 {
    m.failures.get_or_create(&super::super::FailureLabels { source: "vault", reason: reason.label() }).get()
}

fn successes(m: &CredentialMetrics) -> u64 {
    m.refreshes.get_or_create(&super::super::RefreshLabels { source: "vault", outcome: "success" }).get()
}

#[tokio::test]
async fn rotates_keys_at_two_thirds_of_the_lease_with_one_login() {
    let h = Harness::start(Fake { lease: 3, ..Fake::default() }).await;
    let m = CredentialMetrics::default();
    let src = start(h.config(), m.clone()).unwrap();
    assert!(src.wait_ready(Duration::from_secs(3)).await.is_ok());
    assert_eq!(key(&src).await.unwrap(), "AKIAFAKE00000001");
    assert_eq!(h.with(|f| f.last_query.clone()), "ttl=900s");
    sleep_ms(2300).await; // refresh due at 2 s
    assert_eq!(key(&src).await.unwrap(), "AKIAFAKE00000002");
    sleep_ms(2000).await; // next at ~4 s
    assert_eq!(key(&src).await.unwrap(), "AKIAFAKE00000003");
    let st = src.state();
    assert_eq!(st.health, Health::Healthy);
    assert_eq!(st.refreshes, 3);
    assert!(st.expires_at.is_some());
    assert_eq!(h.with(|f| f.logins), 1, "the token (1 h) is reused");
    assert_eq!(successes(&m), 3);
    let gauge = m.expiry.get_or_create(&super::super::SourceLabels { source: "vault" }).get();
    assert!(gauge > 1_700_000_000, "expiry gauge {gauge}");
    assert_no_secrets(&st);
}

#[tokio::test]
async fn sdk_gets_session_token_and_capped_expiry() {
    let h = Harness::start(Fake { lease: 900, ..Fake::default() }).await;
    let src = start(h.config(), CredentialMetrics::default()).unwrap();
    let c = src.provider().provide_credentials().await.unwrap();
    assert_eq!(c.session_token(), Some("session-token-1"));
    assert_eq!(c.secret_access_key(), "secret-key-1");
    let ahead = c.expiry().unwrap().duration_since(std::time::SystemTime::now()).unwrap();
    assert!(ahead <= Duration::from_secs(25), "the SDK is told to come back within 25 s, not 15 min: {ahead:?}");
    assert!(!format!("{c:?}").contains("secret-key-1"));
}

#[tokio::test]
async fn token_is_renewed_then_replaced_by_a_new_login_at_max_ttl() {
    // token TTL 3 s, max TTL 5 s: renew at 2 s gets only 3 s -> ok; at 4 s gets 1 s (capped) -> log in again
    let h = Harness::start(Fake { token_ttl: 3, token_max_ttl: 5, lease: 60, ..Fake::default() }).await;
    let src = start(h.config(), CredentialMetrics::default()).unwrap();
    assert_eq!(key(&src).await.unwrap(), "AKIAFAKE00000001");
    sleep_ms(6500).await;
    let (logins, renews, reads) = h.with(|f| (f.logins, f.renews, f.read_calls));
    assert!(renews >= 1, "renew-self used: {renews} (logins {logins}, reads {reads}): {}", src.state().summary());
    assert!(logins >= 2, "logged in again once the token could not be extended: {logins}");
    assert_eq!(reads, 1, "STS keys do not depend on the token: no re-read on re-login");
    assert_eq!(src.state().health, Health::Healthy);
}

#[tokio::test]
async fn iam_user_keys_are_refetched_after_a_new_login() {
    let h = Harness::start(Fake { token_ttl: 2, token_renewable: false, lease: 60, ..Fake::default() }).await;
    let mut cfg = h.config();
    cfg.credential_type = CredentialType::Creds;
    cfg.ttl = None;
    cfg.new_key_delay = Some(Duration::ZERO);
    let src = start(cfg, CredentialMetrics::default()).unwrap();
    assert_eq!(key(&src).await.unwrap(), "AKIAFAKE00000001");
    // keys are capped at the token's life; re-login at 2/3 of 2 s -> new keys
    sleep_ms(1800).await;
    assert_eq!(h.with(|f| f.logins), 2);
    assert_eq!(key(&src).await.unwrap(), "AKIAFAKE00000002");
    assert_eq!(h.with(|f| f.last_query.clone()), "");
}

#[tokio::test]
async fn new_iam_user_keys_wait_before_use() {
    let h = Harness::start(Fake { lease: 3, ..Fake::default() }).await;
    let mut cfg = h.config();
    cfg.credential_type = CredentialType::Creds;
    cfg.new_key_delay = Some(Duration::from_millis(600));
    let src = start(cfg, CredentialMetrics::default()).unwrap();
    assert_eq!(key(&src).await.unwrap(), "AKIAFAKE00000001", "first keys are used at once");
    sleep_ms(2200).await; // refreshed at 2.0 s, usable from 2.6 s
    assert_eq!(key(&src).await.unwrap(), "AKIAFAKE00000001");
    sleep_ms(600).await;
    assert_eq!(key(&src).await.unwrap(), "AKIAFAKE00000002");
}

#[tokio::test]
async fn login_403_names_the_role_mount_and_service_account() {
    let h = Harness::start(Fake::default()).await;
    std::fs::write(h.dir.join("token"), {
        let b = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        format!("{}.{}.sig", b("{}"), b(r#"{"aud":["vault"],"sub":"system:serviceaccount:other:intruder"}"#))
    })
    .unwrap();
    let m = CredentialMetrics::default();
    let src = start(h.config(), m.clone()).unwrap();
    let err = src.wait_ready(Duration::from_secs(2)).await.unwrap_err();
    assert_eq!(err.health, Health::Expired);
    let e = err.last_error.clone().unwrap();
    assert_eq!(e.reason, Reason::PermissionDenied);
    for want in
        ["role \"lbc\"", "auth/kubernetes/", "ServiceAccount other/intruder", "HTTP 403", "bound_service_account_names"]
    {
        assert!(e.message.contains(want), "missing {want:?} in: {}", e.message);
    }
    assert!(failures(&m, Reason::PermissionDenied) >= 1);
    let msg = key(&src).await.unwrap_err();
    assert!(msg.contains("Vault denied the Kubernetes login"), "{msg}");
    assert_no_secrets(&err);
}

#[tokio::test]
async fn wrong_audience_is_reported_as_such() {
    let h = Harness::start(Fake {
        login: Action::Status(403, "invalid audience (aud) claim: audience claim does not match any expected audience"),
        ..Fake::default()
    })
    .await;
    let src = start(h.config(), CredentialMetrics::default()).unwrap();
    let e = src.wait_ready(Duration::from_secs(2)).await.unwrap_err().last_error.unwrap();
    assert_eq!(e.reason, Reason::Audience);
    assert!(e.message.contains("audiences: [vault]") && e.message.contains("kube-system/lbc"), "{}", e.message);
}

#[tokio::test]
async fn unknown_role_and_mount_are_named() {
    let h = Harness::start(Fake::default()).await;
    let mut cfg = h.config();
    cfg.auth_role = "nope".into();
    let e = start(cfg, CredentialMetrics::default()).unwrap().wait_ready(Duration::from_secs(2)).await.unwrap_err();
    let e = e.last_error.unwrap();
    assert_eq!(e.reason, Reason::InvalidRole);
    assert!(e.message.contains("\"nope\" does not exist at auth/kubernetes/"), "{}", e.message);

    let mut cfg = h.config();
    cfg.auth_mount = "/k8s-prod/".into();
    let e = start(cfg, CredentialMetrics::default()).unwrap().wait_ready(Duration::from_secs(2)).await.unwrap_err();
    let e = e.last_error.unwrap();
    assert_eq!(e.reason, Reason::NotFound);
    assert!(e.message.contains("auth/k8s-prod/"), "{}", e.message);

    let mut cfg = h.config();
    cfg.secrets_role = "other".into();
    let e = start(cfg, CredentialMetrics::default()).unwrap().wait_ready(Duration::from_secs(2)).await.unwrap_err();
    let e = e.last_error.unwrap();
    assert_eq!(e.reason, Reason::InvalidRole);
    assert!(e.message.contains("no role \"other\""), "{}", e.message);
}

#[tokio::test]
async fn read_403_from_policy_names_path_and_role_after_one_relogin() {
    let h = Harness::start(Fake::default()).await;
    h.with(|f| f.reads.extend([Action::Status(403, "1 error occurred:\n\t* permission denied\n\n")]));
    let m = CredentialMetrics::default();
    let src = start(h.config(), m.clone()).unwrap();
    let st = src.wait_ready(Duration::from_secs(2)).await;
    // a fresh token's 403 is reported at once; the retry then succeeds
    assert!(st.is_ok(), "{st:?}");
    assert_eq!(failures(&m, Reason::PermissionDenied), 1);
    h.with(|f| f.reads.extend(std::iter::repeat_n(Action::Status(403, "permission denied"), 50)));
    let mut cfg = h.config();
    cfg.secrets_role = "lbc".into();
    let src2 = start(cfg, CredentialMetrics::default()).unwrap();
    let e = src2.wait_ready(Duration::from_secs(1)).await.unwrap_err().last_error.unwrap();
    assert_eq!(e.reason, Reason::PermissionDenied);
    assert!(
        e.message.contains("aws/sts/lbc") && e.message.contains("role \"lbc\"") && e.message.contains("[\"read\"]"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn revoked_token_is_replaced_without_reporting_a_failure() {
    let h = Harness::start(Fake { lease: 2, ..Fake::default() }).await;
    let m = CredentialMetrics::default();
    let src = start(h.config(), m.clone()).unwrap();
    assert_eq!(key(&src).await.unwrap(), "AKIAFAKE00000001");
    h.with(|f| f.tokens.clear()); // an operator revoked the token
    sleep_ms(1700).await;
    assert_eq!(key(&src).await.unwrap(), "AKIAFAKE00000002");
    assert_eq!(h.with(|f| f.logins), 2);
    assert_eq!(failures(&m, Reason::PermissionDenied), 0);
    assert_eq!(src.state().health, Health::Healthy);
}

#[tokio::test]
async fn sealed_vault_keeps_old_keys_until_they_expire_then_recovers() {
    let h = Harness::start(Fake { lease: 2, ..Fake::default() }).await;
    let m = CredentialMetrics::default();
    let src = start(h.config(), m.clone()).unwrap();
    assert_eq!(key(&src).await.unwrap(), "AKIAFAKE00000001");
    h.with(|f| f.sealed = true);
    sleep_ms(1600).await; // refresh at 1.33 s fails
    let st = src.state();
    assert_eq!(st.health, Health::Degraded, "{}", st.summary());
    assert!(st.is_ready());
    assert_eq!(key(&src).await.unwrap(), "AKIAFAKE00000001", "old keys still served");
    let e = st.last_error.clone().unwrap();
    assert_eq!(e.reason, Reason::Sealed);
    assert!(e.message.contains(&h.addr) && e.message.contains("is sealed"), "{}", e.message);
    sleep_ms(600).await; // past 2 s: expired
    let st = src.state();
    assert_eq!(st.health, Health::Expired);
    assert!(!st.is_ready());
    let msg = key(&src).await.unwrap_err(); // waits wait_for_credentials (2 s), then fails
    assert!(msg.contains("sealed"), "{msg}");
    h.with(|f| f.sealed = false);
    let st = src.wait_ready(Duration::from_secs(2)).await.unwrap();
    assert_eq!(st.health, Health::Healthy);
    assert_eq!(key(&src).await.unwrap(), "AKIAFAKE00000002");
    assert!(failures(&m, Reason::Sealed) >= 2);
}

/// A redirect is never followed (the token would go with it to the other host): the error names
/// where it pointed, the other host sees no request, and `/readyz`'s text names only the reason.
#[tokio::test]
async fn a_redirect_is_reported_not_followed() {
    let elsewhere = Harness::start(Fake::default()).await;
    let to = format!("{}/v1/auth/lbc/login", elsewhere.addr);
    let app = Router::new().fallback(move || {
        let to = to.clone();
        async move { (axum::http::StatusCode::TEMPORARY_REDIRECT, [(axum::http::header::LOCATION, to)]).into_response() }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let mut cfg = elsewhere.config();
    cfg.address = addr;
    let src = start(cfg, CredentialMetrics::default()).unwrap();
    let st = src.wait_ready(Duration::from_secs(1)).await.unwrap_err();
    let e = st.last_error.clone().unwrap();
    assert_eq!(e.reason, Reason::Rejected);
    assert!(e.message.contains("redirect (HTTP 307") && e.message.contains(&elsewhere.addr), "{}", e.message);
    assert_eq!(elsewhere.with(|f| f.logins), 0, "the redirect's target never saw the token");
    let public = st.public_summary();
    assert!(!public.contains(&elsewhere.addr) && !public.contains("redirect"), "{public}");
    assert!(public.contains("rejected"), "{public}");
}

#[tokio::test]
async fn unreachable_vault_names_the_address() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    }; // closed again: connection refused
    let h = Harness::start(Fake::default()).await;
    let mut cfg = h.config();
    cfg.address = format!("http://127.0.0.1:{port}/");
    let m = CredentialMetrics::default();
    let src = start(cfg, m.clone()).unwrap();
    let e = src.wait_ready(Duration::from_secs(1)).await.unwrap_err().last_error.unwrap();
    assert_eq!(e.reason, Reason::Unreachable);
    assert!(e.message.contains(&format!("cannot connect to Vault at http://127.0.0.1:{port}")), "{}", e.message);
    assert!(failures(&m, Reason::Unreachable) >= 1);
}

#[tokio::test]
async fn slow_answer_times_out_and_is_retried() {
    let h = Harness::start(Fake::default()).await;
    h.with(|f| f.reads.push_back(Action::Delay(Duration::from_millis(1500))));
    let m = CredentialMetrics::default();
    let src = start(h.config(), m.clone()).unwrap();
    let st = src.wait_ready(Duration::from_secs(3)).await.unwrap();
    assert_eq!(st.health, Health::Healthy);
    assert_eq!(failures(&m, Reason::Timeout), 1);
    assert_eq!(key(&src).await.unwrap(), "AKIAFAKE00000001");
}

#[tokio::test]
async fn dropped_connection_is_retried() {
    let h = Harness::start(Fake::default()).await;
    h.with(|f| f.reads.push_back(Action::Drop));
    let m = CredentialMetrics::default();
    let src = start(h.config(), m.clone()).unwrap();
    src.wait_ready(Duration::from_secs(3)).await.unwrap();
    assert_eq!(failures(&m, Reason::BadResponse), 1);
    let other: u64 = [Reason::Timeout, Reason::Unreachable, Reason::ServerError].iter().map(|r| failures(&m, *r)).sum();
    assert_eq!(other, 0);
}

#[tokio::test]
async fn server_errors_are_retried_with_backoff() {
    let h = Harness::start(Fake::default()).await;
    h.with(|f| f.reads.extend([Action::Status(500, "internal error"), Action::Status(500, "internal error")]));
    let m = CredentialMetrics::default();
    let src = start(h.config(), m.clone()).unwrap();
    src.wait_ready(Duration::from_secs(3)).await.unwrap();
    assert_eq!(failures(&m, Reason::ServerError), 2);
}

#[tokio::test]
async fn keys_expiring_while_a_refresh_is_in_flight_are_replaced_without_error() {
    // lease 2 s: the refresh starts at 1.33 s and takes 1.2 s, so the old keys expire at 2.0 s while
    // it is in flight. An SDK call at 2.1 s waits for the refresh instead of failing.
    let h = Harness::start(Fake { lease: 2, ..Fake::default() }).await;
    h.with(|f| f.reads.extend([Action::Ok, Action::Delay(Duration::from_millis(1200))]));
    let mut cfg = h.config();
    cfg.timing.request_timeout = Duration::from_secs(3);
    let src = start(cfg, CredentialMetrics::default()).unwrap();
    assert_eq!(key(&src).await.unwrap(), "AKIAFAKE00000001");
    sleep_ms(2100).await;
    assert_eq!(src.state().health, Health::Expired, "old keys expired, refresh still in flight");
    let t0 = Instant::now();
    assert_eq!(key(&src).await.unwrap(), "AKIAFAKE00000002");
    assert!(t0.elapsed() > Duration::from_millis(200), "the call waited for the refresh");
    assert_eq!(src.state().health, Health::Healthy);
}

#[tokio::test]
async fn missing_token_file_says_where_it_looked() {
    let h = Harness::start(Fake::default()).await;
    let mut cfg = h.config();
    cfg.token_path = h.dir.join("absent");
    let e = start(cfg, CredentialMetrics::default()).unwrap().wait_ready(Duration::from_secs(1)).await.unwrap_err();
    let e = e.last_error.unwrap();
    assert_eq!(e.reason, Reason::TokenFile);
    assert!(e.message.contains("absent") && e.message.contains("projected token"), "{}", e.message);
}

#[tokio::test]
async fn config_is_validated_before_start() {
    let mut c = VaultConfig::new("vault:8200", "lbc", "lbc");
    assert!(start(c.clone(), CredentialMetrics::default()).unwrap_err().0.contains("http://"));
    c.address = "https://vault:8200".into();
    c.ca_bundle = Some(PathBuf::from("/nonexistent/ca.pem"));
    assert!(start(c.clone(), CredentialMetrics::default()).unwrap_err().0.contains("/nonexistent/ca.pem"));
    c.ca_bundle = None;
    c.auth_role = " ".into();
    assert!(start(c, CredentialMetrics::default()).unwrap_err().0.contains("auth role"));
    assert_eq!(CredentialType::parse("STS"), Some(CredentialType::Sts));
    assert_eq!(CredentialType::parse("iam_user"), Some(CredentialType::Creds));
    assert_eq!(CredentialType::parse("x"), None);
}

/// Plain HTTP carries the ServiceAccount token and the AWS keys in clear text: refused to another
/// host unless asked for, always accepted on this one.
#[tokio::test]
async fn plain_http_to_another_host_is_refused_unless_asked_for() {
    for remote in ["http://vault:8200", "http://10.0.0.5:8200/", "http://user@vault.example", "http://[fd00::1]:8200"] {
        let mut c = VaultConfig::new(remote, "lbc", "lbc");
        let e = start(c.clone(), CredentialMetrics::default()).unwrap_err().0;
        assert!(e.contains("clear text") && e.contains("--vault-insecure-http") && e.contains("https://"), "{e}");
        c.insecure_http = true;
        assert!(start(c, CredentialMetrics::default()).is_ok(), "{remote}: accepted when asked for");
    }
    for local in ["http://127.0.0.1:8200", "http://localhost:8200", "http://[::1]:8200", "https://vault:8200"] {
        assert!(start(VaultConfig::new(local, "lbc", "lbc"), CredentialMetrics::default()).is_ok(), "{local}");
    }
    assert_eq!(plaintext_remote_host("http://127.0.0.9/v1"), None);
    assert_eq!(plaintext_remote_host("http://bao.lab:8200/x").as_deref(), Some("bao.lab"));
}

#[test]
fn claims_come_from_the_jwt_payload() {
    let c = Claims::parse(&fake_jwt());
    assert_eq!(c.namespace.as_deref(), Some("kube-system"));
    assert_eq!(c.name.as_deref(), Some("lbc"));
    assert_eq!(c.audiences, vec!["vault".to_string()]);
    assert_eq!(Claims::parse("garbage"), Claims::default());
}

#[test]
fn secrets_do_not_show_in_debug() {
    let t = Token {
        secret: Secret("hvs.very-secret".into()),
        ttl: Duration::from_secs(1),
        renewable: true,
        obtained: Instant::now(),
        increment: Duration::from_secs(1),
        capped: false,
    };
    assert!(!format!("{:?}", t.secret).contains("very-secret"));
}
