//! AWS keys from Vault / OpenBao: ServiceAccount token → Kubernetes auth login → AWS secrets
//! engine (`<mount>/creds/<role>` or `<mount>/sts/<role>`).
//!
//! The background task logs in with the (re-read) projected ServiceAccount token, reads keys,
//! refreshes them at [`Timing::refresh_fraction`] of their lease, renews its Vault token at the
//! same fraction of the token's TTL and logs in again when the token cannot be renewed any more
//! (non-renewable, or `token_max_ttl` reached). With `creds` (IAM-user keys are leases of the
//! Vault token that created them and are revoked with it), a new login also fetches new keys.
//! A 403 on reading keys with an older token triggers one re-login (the token may have been
//! revoked) before it is reported.

use super::{CredentialError, CredentialMetrics, CredentialSource, Loaded, Reason, Secret, Slot, Timing};
use aws_credential_types::Credentials;
use base64::Engine as _;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::time::Instant;

/// Where the kubelet mounts the default ServiceAccount token; the chart projects one with the
/// Vault audience at a path of its own.
pub const DEFAULT_TOKEN_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/// Which secrets-engine endpoint to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CredentialType {
    /// `<mount>/creds/<role>`: `iam_user` keys (or `assumed_role`/`federation_token` on that path).
    Creds,
    /// `<mount>/sts/<role>`: STS keys (`assumed_role`, `federation_token`, `session_token`).
    Sts,
}

impl CredentialType {
    pub fn as_str(self) -> &'static str {
        match self {
            CredentialType::Creds => "creds",
            CredentialType::Sts => "sts",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "creds" | "iam_user" => Some(CredentialType::Creds),
            "sts" => Some(CredentialType::Sts),
            _ => None,
        }
    }
}

/// Settings of the Vault source. [`VaultConfig::new`] fills the defaults.
#[derive(Clone, Debug)]
pub struct VaultConfig {
    /// `https://vault.example:8200` (no `/v1`).
    pub address: String,
    /// PEM bundle of CAs to trust for `address` (in addition to the system roots).
    pub ca_bundle: Option<PathBuf>,
    /// Vault Enterprise / OpenBao namespace (`X-Vault-Namespace`).
    pub namespace: Option<String>,
    /// Kubernetes auth mount (default `kubernetes`).
    pub auth_mount: String,
    /// Kubernetes auth role.
    pub auth_role: String,
    /// ServiceAccount token file, re-read at every login (default [`DEFAULT_TOKEN_PATH`]).
    pub token_path: PathBuf,
    /// AWS secrets engine mount (default `aws`).
    pub secrets_mount: String,
    /// AWS secrets engine role.
    pub secrets_role: String,
    pub credential_type: CredentialType,
    /// Requested lifetime of STS keys (`ttl=` on the read); `None`: the role's default.
    pub ttl: Option<Duration>,
    /// `role_arn=` for roles that list several ARNs.
    pub role_arn: Option<String>,
    /// Keep handing out the previous keys this long after new ones arrive (IAM-user keys take a
    /// few seconds to be accepted everywhere in AWS). `None`: 10 s for `creds`, 0 for `sts`.
    pub new_key_delay: Option<Duration>,
    pub timing: Timing,
    /// Accept `http://` to another host (`--vault-insecure-http`): the token and the keys cross
    /// the network in clear text. Loopback addresses are always accepted.
    pub insecure_http: bool,
}

impl VaultConfig {
    pub fn new(address: impl Into<String>, auth_role: impl Into<String>, secrets_role: impl Into<String>) -> Self {
        Self {
            address: address.into(),
            ca_bundle: None,
            namespace: None,
            auth_mount: "kubernetes".into(),
            auth_role: auth_role.into(),
            token_path: PathBuf::from(DEFAULT_TOKEN_PATH),
            secrets_mount: "aws".into(),
            secrets_role: secrets_role.into(),
            credential_type: CredentialType::Sts,
            ttl: Some(Duration::from_secs(15 * 60)),
            role_arn: None,
            new_key_delay: None,
            timing: Timing::default(),
            insecure_http: false,
        }
    }

    fn key_delay(&self) -> Duration {
        self.new_key_delay.unwrap_or(match self.credential_type {
            CredentialType::Creds => Duration::from_secs(10),
            CredentialType::Sts => Duration::ZERO,
        })
    }

    fn secrets_path(&self) -> String {
        format!("{}/{}/{}", self.secrets_mount, self.credential_type.as_str(), self.secrets_role)
    }
}

/// The host of an `http://` address that is not this machine (`None` for https:// and loopback).
fn plaintext_remote_host(address: &str) -> Option<String> {
    let rest = address.strip_prefix("http://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    let loopback =
        host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    (!loopback).then(|| host.to_string())
}

/// A [`VaultConfig`] that cannot work (checked before anything is started).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid Vault credentials configuration: {0}")]
pub struct InvalidConfig(pub String);

/// Validates `cfg`, then starts the background refresher on the current tokio runtime.
pub fn start(mut cfg: VaultConfig, metrics: CredentialMetrics) -> Result<CredentialSource, InvalidConfig> {
    cfg.address = cfg.address.trim().trim_end_matches('/').to_string();
    if !(cfg.address.starts_with("http://") || cfg.address.starts_with("https://")) {
        return Err(InvalidConfig(format!("address {:?} must start with http:// or https://", cfg.address)));
    }
    if let Some(host) = plaintext_remote_host(&cfg.address).filter(|_| !cfg.insecure_http) {
        return Err(InvalidConfig(format!(
            "address {:?} is plain HTTP to {host}: the ServiceAccount token and the AWS keys would cross the network \
             in clear text; use https:// (with --vault-ca-bundle for a private CA), or --vault-insecure-http for a \
             lab without TLS",
            cfg.address
        )));
    }
    cfg.auth_mount = cfg.auth_mount.trim().trim_matches('/').to_string();
    cfg.secrets_mount = cfg.secrets_mount.trim().trim_matches('/').to_string();
    for (what, v) in [
        ("Kubernetes auth role", &cfg.auth_role),
        ("Kubernetes auth mount", &cfg.auth_mount),
        ("secrets engine role", &cfg.secrets_role),
        ("secrets engine mount", &cfg.secrets_mount),
    ] {
        if v.trim().is_empty() {
            return Err(InvalidConfig(format!("the {what} is empty")));
        }
    }
    let t = &cfg.timing;
    let mut http = reqwest::Client::builder()
        .timeout(t.request_timeout)
        .connect_timeout(t.request_timeout.min(Duration::from_secs(5)))
        // The Vault token travels in X-Vault-Token, which a client keeps on a redirect to another
        // host: never follow one (`send` reports it).
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("aws-lb-controller/", env!("CARGO_PKG_VERSION")));
    if let Some(path) = &cfg.ca_bundle {
        let pem = std::fs::read(path)
            .map_err(|e| InvalidConfig(format!("cannot read the Vault CA bundle {}: {e}", path.display())))?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem)
            .map_err(|e| InvalidConfig(format!("the Vault CA bundle {} is not PEM: {e}", path.display())))?;
        if certs.is_empty() {
            return Err(InvalidConfig(format!("the Vault CA bundle {} holds no certificate", path.display())));
        }
        for c in certs {
            http = http.add_root_certificate(c);
        }
    }
    let http = http.build().map_err(|e| InvalidConfig(format!("HTTP client: {e}")))?;
    let slot = Slot::new("vault", metrics, cfg.timing.clone());
    let api = Api { http, cfg: Arc::new(cfg) };
    tracing::info!(
        address = %api.cfg.address,
        auth = %format!("auth/{}/role/{}", api.cfg.auth_mount, api.cfg.auth_role),
        path = %api.cfg.secrets_path(),
        token_path = %api.cfg.token_path.display(),
        "AWS credentials from Vault"
    );
    tokio::spawn(run(Arc::downgrade(&slot), api));
    Ok(CredentialSource::new(slot))
}

// ---- the refresher ---------------------------------------------------------------------------------------------------

struct Token {
    secret: Secret,
    /// Zero: the token does not expire.
    ttl: Duration,
    renewable: bool,
    obtained: Instant,
    /// The TTL to ask for on renewal (the login's).
    increment: Duration,
    /// A renewal returned less than asked: `token_max_ttl` is near, log in again instead.
    capped: bool,
}

impl Token {
    fn expires(&self) -> Option<Instant> {
        (!self.ttl.is_zero()).then(|| self.obtained + self.ttl)
    }
    fn action_at(&self, t: &Timing) -> Option<Instant> {
        (!self.ttl.is_zero()).then(|| self.obtained + self.ttl.mul_f64(t.refresh_fraction))
    }
    fn will_renew(&self) -> bool {
        self.renewable && !self.capped
    }
}

struct Refresher {
    api: Api,
    token: Option<Token>,
    creds_due: Instant,
    failures: u32,
}

async fn run(slot: Weak<Slot>, api: Api) {
    let mut r = Refresher { api, token: None, creds_due: Instant::now(), failures: 0 };
    loop {
        let Some(s) = slot.upgrade() else { return };
        let next = match r.step(&s).await {
            Ok(()) => {
                r.failures = 0;
                let t = s.timing();
                r.token.as_ref().and_then(|tok| tok.action_at(t)).map_or(r.creds_due, |a| a.min(r.creds_due))
            }
            Err(e) => {
                r.failures += 1;
                let delay = s.timing().backoff(r.failures);
                s.fail(&e);
                match s.current_valid_until() {
                    Some(until) => tracing::warn!(
                        reason = e.reason.label(),
                        retry_in_ms = delay.as_millis() as u64,
                        valid_for_s = until.map(|u| u.saturating_duration_since(Instant::now()).as_secs()),
                        "AWS credential refresh from Vault failed; still serving the previous keys: {e}"
                    ),
                    None => tracing::error!(
                        reason = e.reason.label(),
                        retry_in_ms = delay.as_millis() as u64,
                        "no valid AWS credentials: refresh from Vault failed: {e}"
                    ),
                }
                Instant::now() + delay
            }
        };
        drop(s);
        tokio::time::sleep_until(next).await;
    }
}

impl Refresher {
    async fn step(&mut self, slot: &Slot) -> Result<(), CredentialError> {
        let timing = slot.timing().clone();
        let now = Instant::now();
        let mut fresh = false;
        let relogin = match &self.token {
            None => true,
            Some(t) => {
                let due = t.action_at(&timing).is_some_and(|a| now >= a);
                // too close to expiry to risk a renewal that could fail
                let guard = (t.ttl / 10).min(Duration::from_secs(5));
                let expiring = t.expires().is_some_and(|e| now + guard >= e);
                expiring || (due && !t.will_renew())
            }
        };
        if relogin {
            self.login(now).await?;
            fresh = true;
        } else if let Some(t) = self.token.as_mut()
            && t.action_at(&timing).is_some_and(|a| now >= a)
        {
            match self.api.renew(t).await {
                Ok((ttl, renewable)) => {
                    t.capped = ttl < t.increment;
                    t.ttl = ttl;
                    t.renewable = renewable;
                    t.obtained = now;
                    tracing::debug!(ttl_s = ttl.as_secs(), capped = t.capped, "Vault token renewed");
                }
                Err(e) if e.reason == Reason::PermissionDenied => {
                    tracing::info!("Vault token can no longer be renewed (revoked or expired); logging in again");
                    self.login(now).await?;
                    fresh = true;
                }
                Err(e) => return Err(e),
            }
        }
        if now < self.creds_due {
            return Ok(());
        }
        let sent = Instant::now();
        let token = self.token.as_ref().expect("logged in");
        let got = match self.api.read(token).await {
            Err(e) if e.reason == Reason::PermissionDenied && !fresh => {
                tracing::info!("Vault refused the read with the current token; logging in again before reporting it");
                self.login(now).await?;
                let sent2 = Instant::now();
                self.api.read(self.token.as_ref().expect("logged in")).await.map(|g| (g, sent2))?
            }
            r => r.map(|g| (g, sent))?,
        };
        let (fetched, sent) = got;
        let token = self.token.as_ref().expect("logged in");
        let mut valid_until = sent + fetched.lease;
        if self.api.cfg.credential_type == CredentialType::Creds
            && !token.will_renew()
            && let Some(exp) = token.expires()
        {
            // IAM-user keys are revoked with the token that created them.
            valid_until = valid_until.min(exp);
        }
        let lease = valid_until.saturating_duration_since(sent);
        let delay = self.api.cfg.key_delay();
        let usable_from = (!delay.is_zero()).then(|| Instant::now() + delay);
        tracing::info!(
            access_key_id = fetched.creds.access_key_id(),
            lease_s = lease.as_secs(),
            path = %self.api.cfg.secrets_path(),
            "new AWS credentials from Vault"
        );
        slot.store(Loaded { creds: fetched.creds, valid_until: Some(valid_until) }, usable_from);
        // never sooner than min_backoff from now (a lease shorter than the request took would spin)
        self.creds_due = timing.refresh_at(sent, lease).max(Instant::now() + timing.min_backoff);
        Ok(())
    }

    async fn login(&mut self, now: Instant) -> Result<(), CredentialError> {
        let had = self.token.is_some();
        let t = self.api.login().await?;
        tracing::info!(ttl_s = t.ttl.as_secs(), renewable = t.renewable, relogin = had, "logged in to Vault");
        self.token = Some(t);
        if had && self.api.cfg.credential_type == CredentialType::Creds {
            // keys created under the old token die with it
            self.creds_due = now;
        }
        Ok(())
    }
}

// ---- HTTP ------------------------------------------------------------------------------------------------------------

struct Api {
    http: reqwest::Client,
    cfg: Arc<VaultConfig>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Login,
    Renew,
    Read,
}

impl Op {
    fn describe(self) -> &'static str {
        match self {
            Op::Login => "the Kubernetes login",
            Op::Renew => "the token renewal",
            Op::Read => "the credentials read",
        }
    }
}

struct Fetched {
    creds: Credentials,
    lease: Duration,
}

/// What the ServiceAccount token says about itself (unverified; for error messages only).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Claims {
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub audiences: Vec<String>,
}

impl Claims {
    pub(crate) fn parse(jwt: &str) -> Self {
        let Some(payload) = jwt.split('.').nth(1) else { return Self::default() };
        let Ok(bytes) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')) else {
            return Self::default();
        };
        let Ok(v) = serde_json::from_slice::<Value>(&bytes) else { return Self::default() };
        let k8s = &v["kubernetes.io"];
        let mut namespace = k8s["namespace"].as_str().map(String::from);
        let mut name = k8s["serviceaccount"]["name"].as_str().map(String::from);
        if let Some(rest) = v["sub"].as_str().and_then(|s| s.strip_prefix("system:serviceaccount:"))
            && let Some((ns, n)) = rest.split_once(':')
        {
            namespace.get_or_insert_with(|| ns.to_string());
            name.get_or_insert_with(|| n.to_string());
        }
        let audiences = match &v["aud"] {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) => a.iter().filter_map(|x| x.as_str().map(String::from)).collect(),
            _ => vec![],
        };
        Self { namespace, name, audiences }
    }

    fn service_account(&self) -> String {
        match (&self.namespace, &self.name) {
            (Some(ns), Some(n)) => format!("ServiceAccount {ns}/{n}"),
            _ => "the ServiceAccount".into(),
        }
    }
}

impl Api {
    fn url(&self, path: &str) -> String {
        format!("{}/v1/{path}", self.cfg.address)
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut r = self.http.request(method, self.url(path)).header("X-Vault-Request", "true");
        if let Some(ns) = self.cfg.namespace.as_deref().filter(|n| !n.is_empty()) {
            r = r.header("X-Vault-Namespace", ns);
        }
        r
    }

    async fn login(&self) -> Result<Token, CredentialError> {
        let jwt = tokio::fs::read_to_string(&self.cfg.token_path).await.map_err(|e| {
            CredentialError::new(
                Reason::TokenFile,
                format!(
                    "cannot read the ServiceAccount token {} for the Vault login: {e} (is the projected token volume mounted?)",
                    self.cfg.token_path.display()
                ),
            )
        })?;
        let jwt = Secret(jwt.trim().to_string());
        let claims = Claims::parse(&jwt.0);
        let path = format!("auth/{}/login", self.cfg.auth_mount);
        let req = self.request(reqwest::Method::POST, &path).json(&json!({ "role": self.cfg.auth_role, "jwt": jwt.0 }));
        let body = self.send(Op::Login, req, Some(&claims)).await?;
        let auth = &body["auth"];
        let token = auth["client_token"].as_str().filter(|t| !t.is_empty()).ok_or_else(|| {
            CredentialError::new(
                Reason::BadResponse,
                format!("Vault at {} answered the Kubernetes login without auth.client_token", self.cfg.address),
            )
        })?;
        let ttl = Duration::from_secs(auth["lease_duration"].as_u64().unwrap_or(0));
        Ok(Token {
            secret: Secret(token.to_string()),
            ttl,
            renewable: auth["renewable"].as_bool().unwrap_or(false),
            obtained: Instant::now(),
            increment: ttl,
            capped: false,
        })
    }

    async fn renew(&self, t: &Token) -> Result<(Duration, bool), CredentialError> {
        let req = self
            .request(reqwest::Method::POST, "auth/token/renew-self")
            .header("X-Vault-Token", &t.secret.0)
            .json(&json!({ "increment": format!("{}s", t.increment.as_secs()) }));
        let body = self.send(Op::Renew, req, None).await?;
        let ttl = body["auth"]["lease_duration"].as_u64().ok_or_else(|| {
            CredentialError::new(
                Reason::BadResponse,
                format!("Vault at {} answered the token renewal without auth.lease_duration", self.cfg.address),
            )
        })?;
        Ok((Duration::from_secs(ttl), body["auth"]["renewable"].as_bool().unwrap_or(false)))
    }

    async fn read(&self, t: &Token) -> Result<Fetched, CredentialError> {
        let mut query: Vec<(&str, String)> = Vec::new();
        if let Some(ttl) = self.cfg.ttl {
            query.push(("ttl", format!("{}s", ttl.as_secs())));
        }
        if let Some(arn) = &self.cfg.role_arn {
            query.push(("role_arn", arn.clone()));
        }
        let req = self
            .request(reqwest::Method::GET, &self.cfg.secrets_path())
            .header("X-Vault-Token", &t.secret.0)
            .query(&query);
        let body = self.send(Op::Read, req, None).await?;
        let data = &body["data"];
        let field = |k: &str| data[k].as_str().filter(|s| !s.is_empty()).map(String::from);
        let missing = |what: &str| {
            CredentialError::new(
                Reason::BadResponse,
                format!(
                    "Vault at {} answered {} without data.{what}: is {}/ an AWS secrets engine?",
                    self.cfg.address,
                    self.cfg.secrets_path(),
                    self.cfg.secrets_mount
                ),
            )
        };
        let access = field("access_key").ok_or_else(|| missing("access_key"))?;
        let secret = field("secret_key").ok_or_else(|| missing("secret_key"))?;
        let session = field("security_token");
        let lease = body["lease_duration"]
            .as_u64()
            .filter(|&s| s > 0)
            .or_else(|| data["ttl"].as_u64().filter(|&s| s > 0))
            .map(Duration::from_secs)
            .or(self.cfg.ttl)
            .ok_or_else(|| missing("ttl (and no lease_duration)"))?;
        Ok(Fetched { creds: Credentials::new(access, secret, session, None, "vault"), lease })
    }

    /// Sends, reads the JSON body, turns every failure into a [`CredentialError`] for humans.
    async fn send(
        &self,
        op: Op,
        req: reqwest::RequestBuilder,
        claims: Option<&Claims>,
    ) -> Result<Value, CredentialError> {
        let addr = &self.cfg.address;
        let resp = req.send().await.map_err(|e| self.transport_error(op, &e))?;
        let status = resp.status();
        if status.is_redirection() {
            let to = resp.headers().get(reqwest::header::LOCATION).and_then(|l| l.to_str().ok()).unwrap_or("nowhere");
            return Err(CredentialError::new(
                Reason::Rejected,
                format!(
                    "Vault at {addr} answered {} with a redirect (HTTP {status}) to {}; the controller never follows \
                     one (its Vault token would go along): set --vault-address to the active node or to an address \
                     that forwards requests (Vault standbys forward by default)",
                    op.describe(),
                    lbc_model::text::truncate(to.to_string(), 200)
                ),
            ));
        }
        let bytes = resp.bytes().await.map_err(|e| self.transport_error(op, &e))?;
        if status.is_success() {
            return serde_json::from_slice(&bytes).map_err(|_| {
                // never echo the body: it holds keys or tokens
                CredentialError::new(
                    Reason::BadResponse,
                    format!(
                        "Vault at {addr} answered {} with HTTP {status} but a body that is not JSON",
                        op.describe()
                    ),
                )
            });
        }
        let errors: Vec<String> = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|v| {
                v["errors"].as_array().map(|a| a.iter().filter_map(|e| e.as_str().map(String::from)).collect())
            })
            .unwrap_or_default();
        Err(self.classify(op, status.as_u16(), &errors, claims))
    }

    fn transport_error(&self, op: Op, e: &reqwest::Error) -> CredentialError {
        let addr = &self.cfg.address;
        let cause = root_cause(e);
        if e.is_timeout() {
            CredentialError::new(
                Reason::Timeout,
                format!(
                    "Vault at {addr} did not answer {} within {:?} ({cause})",
                    op.describe(),
                    self.cfg.timing.request_timeout
                ),
            )
        } else if e.is_connect() {
            CredentialError::new(Reason::Unreachable, format!("cannot connect to Vault at {addr}: {cause}"))
        } else {
            CredentialError::new(
                Reason::BadResponse,
                format!("the connection to Vault at {addr} broke during {}: {cause}", op.describe()),
            )
        }
    }

    fn classify(&self, op: Op, status: u16, errors: &[String], claims: Option<&Claims>) -> CredentialError {
        let cfg = &self.cfg;
        let addr = &cfg.address;
        let said = if errors.is_empty() {
            "(no message)".to_string()
        } else {
            // "1 error occurred:\n\t* permission denied\n\n" -> one line
            let joined = errors.join("; ");
            lbc_model::text::truncate(joined.split_whitespace().collect::<Vec<_>>().join(" "), 400)
        };
        let lower = said.to_ascii_lowercase();
        let auth = format!("auth/{}/", cfg.auth_mount);
        let role = &cfg.auth_role;
        if status == 503 && lower.contains("sealed") {
            return CredentialError::new(
                Reason::Sealed,
                format!(
                    "Vault at {addr} is sealed (HTTP 503 on {}): unseal it (`vault operator unseal` / `bao operator unseal`); \
                     no new AWS credentials can be issued until then",
                    op.describe()
                ),
            );
        }
        let not_mounted = status == 404 || lower.contains("no handler for route") || lower.contains("unsupported path");
        match op {
            Op::Login => {
                let sa = claims.map(Claims::service_account).unwrap_or_else(|| "the ServiceAccount".into());
                if lower.contains("audience") || lower.contains("aud claim") || lower.contains("(aud)") {
                    let auds = claims.map(|c| c.audiences.join(", ")).unwrap_or_default();
                    return CredentialError::new(
                        Reason::Audience,
                        format!(
                            "Vault rejected the audience of the token of {sa} (audiences: [{auds}]) for Kubernetes auth role \
                             \"{role}\" at {auth}: project the token with the audience the role expects (its `audience` \
                             setting) and make sure the kube-apiserver accepts it; Vault said: {said}"
                        ),
                    );
                }
                if status == 400 && (lower.contains("invalid role") || lower.contains("role not found")) {
                    return CredentialError::new(
                        Reason::InvalidRole,
                        format!(
                            "Kubernetes auth role \"{role}\" does not exist at {auth} in Vault at {addr}: create it \
                             (`vault write {auth}role/{role} ...`) or fix the role name; Vault said: {said}"
                        ),
                    );
                }
                if not_mounted {
                    return CredentialError::new(
                        Reason::NotFound,
                        format!(
                            "no Kubernetes auth method is mounted at {auth} in Vault at {addr} (HTTP {status}): \
                             check the auth mount setting; Vault said: {said}"
                        ),
                    );
                }
                if status == 403 {
                    let hint = if lower.contains("service account name not authorized") {
                        format!("add it to bound_service_account_names of {auth}role/{role}")
                    } else if lower.contains("namespace not authorized") {
                        format!("add its namespace to bound_service_account_namespaces of {auth}role/{role}")
                    } else if lower.contains("service account unauthorized") || lower.contains("lookup failed") {
                        "Vault's TokenReview failed: the ServiceAccount was deleted or recreated, or Vault's token \
                         reviewer may not create TokenReviews (ClusterRole system:auth-delegator)"
                            .to_string()
                    } else {
                        format!(
                            "Vault gives no detail: check that a Kubernetes auth method is mounted at {auth} (Vault \
                             answers 403 for unknown paths), that the token is not expired, and that it was issued by \
                             the cluster (and issuer) this auth method is configured for"
                        )
                    };
                    return CredentialError::new(
                        Reason::PermissionDenied,
                        format!(
                            "Vault denied the Kubernetes login of {sa} with role \"{role}\" at {auth} (HTTP 403): \
                             {hint}; Vault said: {said}"
                        ),
                    );
                }
            }
            Op::Renew => {
                if status == 403 {
                    return CredentialError::new(
                        Reason::PermissionDenied,
                        format!("Vault refused to renew its token (HTTP 403: revoked or expired); Vault said: {said}"),
                    );
                }
            }
            Op::Read => {
                let path = cfg.secrets_path();
                if status == 403 {
                    return CredentialError::new(
                        Reason::PermissionDenied,
                        format!(
                            "Vault denied reading {path} (HTTP 403): a policy of Kubernetes auth role \"{role}\" \
                             ({auth}role/{role}, token_policies) must grant capabilities [\"read\"] on path \"{path}\" \
                             (Vault also answers 403 when nothing is mounted at {}/); Vault said: {said}",
                            cfg.secrets_mount
                        ),
                    );
                }
                if not_mounted {
                    return CredentialError::new(
                        Reason::NotFound,
                        format!(
                            "nothing answers {path} in Vault at {addr} (HTTP {status}): is an AWS secrets engine \
                             mounted at {}/ ?; Vault said: {said}",
                            cfg.secrets_mount
                        ),
                    );
                }
                if status == 400
                    && lower.contains("role")
                    && (lower.contains("not found")
                        || lower.contains("does not exist")
                        || lower.contains("unknown role"))
                {
                    return CredentialError::new(
                        Reason::InvalidRole,
                        format!(
                            "the AWS secrets engine at {}/ has no role \"{}\" (HTTP 400); Vault said: {said}",
                            cfg.secrets_mount, cfg.secrets_role
                        ),
                    );
                }
            }
        }
        let (reason, kind) =
            if status >= 500 { (Reason::ServerError, "failed") } else { (Reason::Rejected, "refused") };
        CredentialError::new(
            reason,
            format!("Vault at {addr} {kind} {} (HTTP {status}); Vault said: {said}", op.describe()),
        )
    }
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod props;
