//! AWS credentials that rotate under a running controller.
//!
//! RKE2 has no IRSA: workloads get short-lived AWS keys from Vault/OpenBao's AWS secrets engine
//! (ServiceAccount token → Kubernetes auth → `aws/creds|sts/<role>`), either directly
//! ([`vault`]) or through a file that vault-agent renders ([`file`]). Both sources:
//!
//! - keep the current keys in memory and hand them to the SDK through [`RotatingCredentials`]
//!   (a [`ProvideCredentials`]); a background task refreshes them well before they expire, so
//!   SDK clients built once pick up new keys without a restart. Keys already handed out stay valid
//!   until their own expiry, so calls in flight during a rotation are not broken;
//! - retry failed refreshes with backoff and keep serving the previous keys until they actually
//!   expire;
//! - report a [`CredentialState`] (healthy / degraded / expired, expiry time, last error) for
//!   readiness, and [`CredentialMetrics`];
//! - never log or report a secret key, session token, Vault token or ServiceAccount token (access
//!   key IDs are not secret: AWS prints them in CloudTrail; they are reported to tell rotations
//!   apart).
//!
//! ```ignore
//! let metrics = CredentialMetrics::default();
//! metrics.register(&mut registry);
//! let source = vault::start(VaultConfig::new("https://vault:8200", "lbc", "lbc"), metrics)?;
//! let provider = source.provider();          // -> ClientSettings { credentials: Some(provider) }
//! let status = source.status();              // /readyz: status.is_ready(), status.state()
//! ```

pub mod file;
#[cfg(test)]
mod file_props;
pub mod vault;

use crate::backoff::Backoff;
use aws_credential_types::Credentials;
use aws_credential_types::provider::{self, ProvideCredentials, SharedCredentialsProvider, error::CredentialsError};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;
use tokio::time::Instant;

pub use file::FileConfig;
pub use vault::{CredentialType, VaultConfig};

// ---- timing ----------------------------------------------------------------------------------------------------------

/// When to refresh and how to retry. The defaults suit 15-minute STS keys; tests shrink them.
#[derive(Clone, Debug)]
pub struct Timing {
    /// Refresh when this fraction of the lease has passed (default 2/3).
    pub refresh_fraction: f64,
    /// Each scheduled refresh is moved earlier by up to this fraction of the lease, so that
    /// replicas do not hit Vault at the same instant (default 0.05). 0 also makes the retry
    /// backoff exact (tests).
    pub jitter: f64,
    /// First retry delay after a failure; doubles per consecutive failure up to `max_backoff`.
    pub min_backoff: Duration,
    pub max_backoff: Duration,
    /// Timeout of one HTTP request to Vault (connect timeout: the smaller of this and 5 s).
    pub request_timeout: Duration,
    /// How long an SDK call waits for credentials when none are valid (at start-up, or when a
    /// refresh is still in flight at expiry) before it fails with the last error.
    pub wait_for_credentials: Duration,
    /// Expiry announced to the SDK's identity cache: at most this far ahead (and never past the
    /// real expiry), so the SDK asks again soon after a rotation. Answering is a memory read.
    pub sdk_cache_ttl: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            refresh_fraction: 2.0 / 3.0,
            jitter: 0.05,
            min_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
            request_timeout: Duration::from_secs(10),
            wait_for_credentials: Duration::from_secs(5),
            sdk_cache_ttl: Duration::from_secs(25),
        }
    }
}

impl Timing {
    /// When to refresh keys obtained `now` with `lease` left.
    pub(crate) fn refresh_at(&self, now: Instant, lease: Duration) -> Instant {
        let jitter = if self.jitter > 0.0 { fastrand::f64() * self.jitter } else { 0.0 };
        let frac = (self.refresh_fraction - jitter).clamp(0.05, 1.0);
        now + lease.mul_f64(frac)
    }

    /// Delay before retry number `failures` (1 = first retry): `min_backoff` doubling up to
    /// `max_backoff` ([`Backoff`]), jittered up to twice that (never past `max_backoff`) so retries
    /// of several replicas spread out; exact when `jitter` is 0 (tests).
    pub(crate) fn backoff(&self, failures: u32) -> Duration {
        let b = Backoff::new(self.min_backoff, self.max_backoff);
        if self.jitter > 0.0 { b.delay(failures) } else { b.without_jitter().delay(failures) }
    }
}

// ---- errors ----------------------------------------------------------------------------------------------------------

/// Why a refresh failed; the metric label is [`Reason::label`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// Vault answered 503 and says it is sealed.
    Sealed,
    /// 403: the Kubernetes auth role does not accept this ServiceAccount, or the policy does not
    /// allow the secrets path.
    PermissionDenied,
    /// The ServiceAccount token's audience is not the one the Kubernetes auth role expects.
    Audience,
    /// The Kubernetes auth role or the secrets-engine role does not exist.
    InvalidRole,
    /// Nothing mounted at the auth or secrets path.
    NotFound,
    /// Connection refused, DNS failure, TLS failure.
    Unreachable,
    /// No answer within the request timeout.
    Timeout,
    /// The connection broke mid-response or the answer is not what Vault sends.
    BadResponse,
    /// Any other 4xx (e.g. a TTL above the role's maximum, the engine failed to call AWS).
    Rejected,
    /// Any other 5xx.
    ServerError,
    /// The ServiceAccount token file cannot be read.
    TokenFile,
    /// The credentials file cannot be read.
    FileUnreadable,
    /// The credentials file has no usable keys.
    FileInvalid,
}

impl Reason {
    pub fn label(self) -> &'static str {
        match self {
            Reason::Sealed => "sealed",
            Reason::PermissionDenied => "permission_denied",
            Reason::Audience => "audience",
            Reason::InvalidRole => "invalid_role",
            Reason::NotFound => "not_found",
            Reason::Unreachable => "unreachable",
            Reason::Timeout => "timeout",
            Reason::BadResponse => "bad_response",
            Reason::Rejected => "rejected",
            Reason::ServerError => "server_error",
            Reason::TokenFile => "token_file",
            Reason::FileUnreadable => "file_unreadable",
            Reason::FileInvalid => "file_invalid",
        }
    }
}

/// A failed refresh, worded for the person who has to fix it. Never contains a secret.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CredentialError {
    pub reason: Reason,
    pub message: String,
}

impl CredentialError {
    pub fn new(reason: Reason, message: impl Into<String>) -> Self {
        Self { reason, message: message.into() }
    }
}

// ---- state -----------------------------------------------------------------------------------------------------------

/// Credential health, for readiness and logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Health {
    /// No refresh has finished yet.
    Initializing,
    /// Valid keys, and the last refresh attempt succeeded.
    Healthy,
    /// Valid keys, but the last refresh attempt failed: still serving the previous keys.
    Degraded,
    /// No valid keys: they expired, or none could be obtained.
    Expired,
}

impl Health {
    pub fn as_str(self) -> &'static str {
        match self {
            Health::Initializing => "initializing",
            Health::Healthy => "healthy",
            Health::Degraded => "degraded",
            Health::Expired => "expired",
        }
    }
}

/// A snapshot of a credential source.
#[derive(Clone, Debug)]
pub struct CredentialState {
    /// `vault` or `file`.
    pub source: &'static str,
    pub health: Health,
    /// Access key ID of the keys being handed out (not a secret).
    pub access_key_id: Option<String>,
    /// When those keys expire (`None`: unknown, e.g. a credentials file without an expiry).
    pub expires_at: Option<SystemTime>,
    pub last_success: Option<SystemTime>,
    pub last_error: Option<CredentialError>,
    /// Times new keys were stored.
    pub refreshes: u64,
}

impl CredentialState {
    /// Ready = valid keys are available (healthy or degraded).
    pub fn is_ready(&self) -> bool {
        matches!(self.health, Health::Healthy | Health::Degraded)
    }

    /// One line for logs, e.g. `aws credentials (vault): degraded, expire in 212s;
    /// last error: Vault at https://vault:8200 is sealed ...`.
    pub fn summary(&self) -> String {
        let mut s = self.state_and_expiry();
        if let Some(e) = &self.last_error {
            s.push_str("; last error: ");
            s.push_str(&e.message);
        }
        s
    }

    /// [`CredentialState::summary`] for unauthenticated readers (`/readyz`, which any pod can
    /// reach): the last error by its reason only, never its text (Vault's words, paths, roles).
    pub fn public_summary(&self) -> String {
        let mut s = self.state_and_expiry();
        if let Some(e) = &self.last_error {
            s.push_str(&format!(
                "; last error: {} (the controller's log and aws_credentials_refresh_failures_total say more)",
                e.reason.label()
            ));
        }
        s
    }

    fn state_and_expiry(&self) -> String {
        let mut s = format!("aws credentials ({}): {}", self.source, self.health.as_str());
        if let Some(t) = self.expires_at {
            match t.duration_since(SystemTime::now()) {
                Ok(d) => s.push_str(&format!(", expire in {}s", d.as_secs())),
                Err(e) => s.push_str(&format!(", expired {}s ago", e.duration().as_secs())),
            }
        }
        s
    }
}

// ---- metrics ---------------------------------------------------------------------------------------------------------

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SourceLabels {
    pub source: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefreshLabels {
    pub source: &'static str,
    /// `success` or `failure`.
    pub outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FailureLabels {
    pub source: &'static str,
    /// [`Reason::label`].
    pub reason: &'static str,
}

/// `aws_credentials_expiry_timestamp_seconds{source}`, `aws_credentials_refreshes_total{source,outcome}`,
/// `aws_credentials_refresh_failures_total{source,reason}`.
#[derive(Clone, Debug, Default)]
pub struct CredentialMetrics {
    pub expiry: Family<SourceLabels, Gauge>,
    pub refreshes: Family<RefreshLabels, Counter>,
    pub failures: Family<FailureLabels, Counter>,
}

impl CredentialMetrics {
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "aws_credentials_expiry_timestamp_seconds",
            "Unix time at which the AWS credentials being handed out expire (0: unknown or none)",
            self.expiry.clone(),
        );
        registry.register(
            "aws_credentials_refreshes",
            "AWS credential refresh attempts by outcome",
            self.refreshes.clone(),
        );
        registry.register(
            "aws_credentials_refresh_failures",
            "Failed AWS credential refresh attempts by reason",
            self.failures.clone(),
        );
    }
}

// ---- the slot shared by the provider and the refresher --------------------------------------------------------------

/// Keys with their validity on the monotonic clock (`tokio::time`, so tests can steer it).
#[derive(Clone)]
pub(crate) struct Loaded {
    pub creds: Credentials,
    /// `None`: no known expiry.
    pub valid_until: Option<Instant>,
}

impl Loaded {
    fn valid_at(&self, now: Instant) -> bool {
        self.valid_until.is_none_or(|t| now < t)
    }

    fn expires_wall(&self) -> Option<SystemTime> {
        let now = Instant::now();
        self.valid_until.map(|t| if t >= now { SystemTime::now() + (t - now) } else { SystemTime::now() - (now - t) })
    }
}

impl fmt::Debug for Loaded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Credentials' own Debug redacts the secret.
        f.debug_struct("Loaded").field("creds", &self.creds).field("valid_until", &self.valid_until).finish()
    }
}

#[derive(Default)]
struct Inner {
    current: Option<Loaded>,
    /// New keys waiting for `usable_from` (IAM-user keys take seconds to work everywhere in AWS).
    next: Option<(Loaded, Instant)>,
    last_success: Option<SystemTime>,
    last_error: Option<CredentialError>,
    /// The last attempt failed.
    failing: bool,
    attempted: bool,
    refreshes: u64,
}

pub(crate) struct Slot {
    source: &'static str,
    inner: Mutex<Inner>,
    changed: watch::Sender<u64>,
    metrics: CredentialMetrics,
    timing: Timing,
}

impl Slot {
    pub(crate) fn new(source: &'static str, metrics: CredentialMetrics, timing: Timing) -> Arc<Self> {
        metrics.expiry.get_or_create(&SourceLabels { source }).set(0);
        Arc::new(Self { source, inner: Mutex::default(), changed: watch::channel(0).0, metrics, timing })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bump(&self) {
        self.changed.send_modify(|g| *g += 1);
    }

    /// New keys; handed out from `usable_from` on (or at once when the current ones are no longer
    /// valid by then).
    pub(crate) fn store(&self, loaded: Loaded, usable_from: Option<Instant>) {
        let now = Instant::now();
        {
            let mut g = self.lock();
            let wait = usable_from.filter(|&t| t > now && g.current.as_ref().is_some_and(|c| c.valid_at(now)));
            match wait {
                Some(t) => g.next = Some((loaded, t)),
                None => {
                    g.next = None;
                    g.current = Some(loaded);
                }
            }
            g.last_success = Some(SystemTime::now());
            g.last_error = None;
            g.failing = false;
            g.attempted = true;
            g.refreshes += 1;
            self.set_expiry_gauge(&g);
        }
        self.metrics.refreshes.get_or_create(&RefreshLabels { source: self.source, outcome: "success" }).inc();
        self.bump();
    }

    pub(crate) fn fail(&self, err: &CredentialError) {
        {
            let mut g = self.lock();
            g.last_error = Some(err.clone());
            g.failing = true;
            g.attempted = true;
        }
        self.metrics.refreshes.get_or_create(&RefreshLabels { source: self.source, outcome: "failure" }).inc();
        self.metrics.failures.get_or_create(&FailureLabels { source: self.source, reason: err.reason.label() }).inc();
        self.bump();
    }

    /// The keys to sign with now, if any: promotes pending keys that became usable.
    fn usable(&self, g: &mut Inner, now: Instant) -> Option<Loaded> {
        if let Some((_, from)) = &g.next {
            let current_ok = g.current.as_ref().is_some_and(|c| c.valid_at(now));
            if *from <= now || !current_ok {
                g.current = g.next.take().map(|(l, _)| l);
                self.set_expiry_gauge(g);
            }
        }
        g.current.as_ref().filter(|c| c.valid_at(now)).cloned()
    }

    fn set_expiry_gauge(&self, g: &Inner) {
        let secs = g
            .current
            .as_ref()
            .and_then(Loaded::expires_wall)
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs() as i64);
        self.metrics.expiry.get_or_create(&SourceLabels { source: self.source }).set(secs);
    }

    /// What the SDK gets: the keys, with an expiry no later than `sdk_cache_ttl` from now.
    fn handout(&self) -> Option<Credentials> {
        let now = Instant::now();
        let loaded = {
            let mut g = self.lock();
            self.usable(&mut g, now)?
        };
        let cap = SystemTime::now() + self.timing.sdk_cache_ttl;
        let expiry = match loaded.expires_wall() {
            Some(t) if t < cap => t,
            _ => cap,
        };
        let mut creds = loaded.creds;
        *creds.expiry_mut() = Some(expiry);
        Some(creds)
    }

    pub(crate) fn state(&self) -> CredentialState {
        let now = Instant::now();
        let mut g = self.lock();
        let usable = self.usable(&mut g, now);
        let health = match (&usable, g.failing, g.attempted) {
            (Some(_), false, _) => Health::Healthy,
            (Some(_), true, _) => Health::Degraded,
            (None, _, false) => Health::Initializing,
            (None, _, true) => Health::Expired,
        };
        let shown = usable.as_ref().or(g.current.as_ref());
        CredentialState {
            source: self.source,
            health,
            access_key_id: shown.map(|l| l.creds.access_key_id().to_string()),
            expires_at: shown.and_then(Loaded::expires_wall),
            last_success: g.last_success,
            last_error: g.last_error.clone(),
            refreshes: g.refreshes,
        }
    }

    /// Currently valid keys (as stored), if any. For the refresher's own decisions.
    pub(crate) fn current_valid_until(&self) -> Option<Option<Instant>> {
        let g = self.lock();
        g.current.as_ref().filter(|c| c.valid_at(Instant::now())).map(|c| c.valid_until)
    }

    pub(crate) fn timing(&self) -> &Timing {
        &self.timing
    }

    async fn get(self: Arc<Self>) -> provider::Result {
        let mut rx = self.changed.subscribe();
        let deadline = Instant::now() + self.timing.wait_for_credentials;
        loop {
            if let Some(c) = self.handout() {
                return Ok(c);
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => continue,
                _ => break,
            }
        }
        if let Some(c) = self.handout() {
            return Ok(c);
        }
        let st = self.state();
        let why = match &st.last_error {
            Some(e) => e.message.clone(),
            None => format!("no credentials loaded yet after waiting {:?}", self.timing.wait_for_credentials),
        };
        Err(CredentialsError::provider_error(format!("no valid AWS credentials from {}: {why}", self.source)))
    }
}

// ---- public handles --------------------------------------------------------------------------------------------------

/// The SDK-facing provider. Cheap to clone; answers from memory.
#[derive(Clone)]
pub struct RotatingCredentials {
    slot: Arc<Slot>,
}

impl fmt::Debug for RotatingCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RotatingCredentials").field("source", &self.slot.source).finish()
    }
}

impl ProvideCredentials for RotatingCredentials {
    fn provide_credentials<'a>(&'a self) -> provider::future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        provider::future::ProvideCredentials::new(self.slot.clone().get())
    }
}

/// A read-only view of a source's state, for `/readyz`.
#[derive(Clone)]
pub struct CredentialStatus {
    slot: Arc<Slot>,
}

impl CredentialStatus {
    pub fn state(&self) -> CredentialState {
        self.slot.state()
    }
    pub fn is_ready(&self) -> bool {
        self.state().is_ready()
    }
}

impl fmt::Debug for CredentialStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.state().summary())
    }
}

/// A running credential source ([`vault::start`], [`file::start`]). Its background task runs as
/// long as this, a provider or a status handle is alive.
#[derive(Clone)]
pub struct CredentialSource {
    slot: Arc<Slot>,
}

impl CredentialSource {
    pub(crate) fn new(slot: Arc<Slot>) -> Self {
        Self { slot }
    }

    /// The provider to put into the SDK config (`ClientSettings::credentials`).
    pub fn provider(&self) -> SharedCredentialsProvider {
        SharedCredentialsProvider::new(RotatingCredentials { slot: self.slot.clone() })
    }

    pub fn status(&self) -> CredentialStatus {
        CredentialStatus { slot: self.slot.clone() }
    }

    pub fn state(&self) -> CredentialState {
        self.slot.state()
    }

    /// Waits until keys are available or `timeout` passes; returns the state either way
    /// (`Err` when not ready), e.g. to fail start-up with the reason.
    pub async fn wait_ready(&self, timeout: Duration) -> Result<CredentialState, CredentialState> {
        let mut rx = self.slot.changed.subscribe();
        let deadline = Instant::now() + timeout;
        loop {
            let st = self.slot.state();
            if st.is_ready() {
                return Ok(st);
            }
            if !matches!(tokio::time::timeout_at(deadline, rx.changed()).await, Ok(Ok(()))) {
                let st = self.slot.state();
                return if st.is_ready() { Ok(st) } else { Err(st) };
            }
        }
    }
}

impl fmt::Debug for CredentialSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.state().summary())
    }
}

/// A string that never shows in Debug output (Vault tokens, JWTs).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(pub String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(id: &str, valid: Option<Duration>) -> Loaded {
        Loaded {
            creds: Credentials::new(id, "secret-value", None, None, "test"),
            valid_until: valid.map(|d| Instant::now() + d),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn health_follows_validity_and_failures() {
        let slot = Slot::new("vault", CredentialMetrics::default(), Timing::default());
        assert_eq!(slot.state().health, Health::Initializing);
        slot.fail(&CredentialError::new(Reason::Sealed, "sealed"));
        assert_eq!(slot.state().health, Health::Expired);
        slot.store(loaded("AKIA1", Some(Duration::from_secs(60))), None);
        assert_eq!(slot.state().health, Health::Healthy);
        slot.fail(&CredentialError::new(Reason::Sealed, "sealed"));
        let st = slot.state();
        assert_eq!(st.health, Health::Degraded);
        assert!(st.is_ready());
        assert!(st.summary().contains("degraded") && st.summary().contains("sealed"), "{}", st.summary());
        tokio::time::advance(Duration::from_secs(61)).await;
        let st = slot.state();
        assert_eq!(st.health, Health::Expired);
        assert!(!st.is_ready());
        assert_eq!(st.access_key_id.as_deref(), Some("AKIA1"), "the expired key stays visible for diagnosis");
    }

    #[tokio::test(start_paused = true)]
    async fn sdk_expiry_is_capped_and_pending_keys_wait() {
        let timing = Timing { sdk_cache_ttl: Duration::from_secs(25), ..Timing::default() };
        let slot = Slot::new("vault", CredentialMetrics::default(), timing);
        slot.store(loaded("AKIA1", Some(Duration::from_secs(600))), None);
        let c = slot.handout().unwrap();
        let ahead = c.expiry().unwrap().duration_since(SystemTime::now()).unwrap();
        assert!(ahead <= Duration::from_secs(25) && ahead > Duration::from_secs(24), "{ahead:?}");
        // short remaining validity: the real expiry is announced
        slot.store(loaded("AKIA2", Some(Duration::from_secs(5))), None);
        let c = slot.handout().unwrap();
        assert_eq!(c.access_key_id(), "AKIA2");
        assert!(c.expiry().unwrap().duration_since(SystemTime::now()).unwrap() <= Duration::from_secs(5));
        // pending keys are held back until usable_from, unless the current ones expire first
        slot.store(loaded("AKIA3", Some(Duration::from_secs(600))), Some(Instant::now() + Duration::from_secs(3)));
        assert_eq!(slot.handout().unwrap().access_key_id(), "AKIA2");
        tokio::time::advance(Duration::from_secs(3)).await;
        assert_eq!(slot.handout().unwrap().access_key_id(), "AKIA3");
        slot.store(loaded("AKIA4", Some(Duration::from_secs(1200))), Some(Instant::now() + Duration::from_secs(700)));
        assert_eq!(slot.handout().unwrap().access_key_id(), "AKIA3");
        tokio::time::advance(Duration::from_secs(601)).await;
        assert_eq!(slot.handout().unwrap().access_key_id(), "AKIA4");
    }

    #[tokio::test(start_paused = true)]
    async fn provider_waits_for_first_keys_then_fails_with_last_error() {
        let timing = Timing { wait_for_credentials: Duration::from_secs(2), ..Timing::default() };
        let slot = Slot::new("file", CredentialMetrics::default(), timing);
        let source = CredentialSource::new(slot.clone());
        let provider = source.provider();
        let s2 = slot.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            s2.store(loaded("AKIA1", None), None);
        });
        let c = provider.provide_credentials().await.unwrap();
        assert_eq!(c.access_key_id(), "AKIA1");

        let slot = Slot::new("file", CredentialMetrics::default(), Timing::default());
        slot.fail(&CredentialError::new(Reason::FileUnreadable, "cannot read /x: No such file"));
        let err = CredentialSource::new(slot).provider().provide_credentials().await.unwrap_err();
        let msg = format!("{}", aws_smithy_types::error::display::DisplayErrorContext(&err));
        assert!(msg.contains("cannot read /x"), "{msg}");
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let t = Timing { jitter: 0.0, ..Timing::default() };
        assert_eq!(t.backoff(1), Duration::from_secs(1));
        assert_eq!(t.backoff(3), Duration::from_secs(4));
        assert_eq!(t.backoff(30), Duration::from_secs(30));
    }

    #[test]
    fn jittered_backoff_stays_between_the_step_and_twice_it_never_past_the_cap() {
        let t = Timing::default();
        for (failures, lo, hi) in [(1, 1, 2), (3, 4, 8), (5, 16, 30), (6, 30, 30), (30, 30, 30)] {
            let (lo, hi) = (Duration::from_secs(lo), Duration::from_secs(hi));
            for _ in 0..50 {
                let d = t.backoff(failures);
                assert!(d >= lo && d <= hi, "failure {failures}: {d:?}, expected {lo:?}..={hi:?}");
            }
        }
    }

    #[test]
    fn metrics_encode_with_the_documented_names() {
        let m = CredentialMetrics::default();
        let mut reg = Registry::default();
        m.register(&mut reg);
        let slot = Slot::new("vault", m.clone(), Timing::default());
        slot.fail(&CredentialError::new(Reason::Sealed, "sealed"));
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &reg).unwrap();
        assert!(out.contains("aws_credentials_expiry_timestamp_seconds{source=\"vault\"} 0"), "{out}");
        assert!(out.contains("aws_credentials_refreshes_total{source=\"vault\",outcome=\"failure\"} 1"), "{out}");
        assert!(out.contains("aws_credentials_refresh_failures_total{source=\"vault\",reason=\"sealed\"} 1"), "{out}");
    }
}
