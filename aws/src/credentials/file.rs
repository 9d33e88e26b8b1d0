//! AWS keys from a shared-credentials-format file that something else keeps fresh (vault-agent's
//! template, a CSI secret, an operator's script):
//!
//! ```ini
//! [default]
//! aws_access_key_id = ASIA...
//! aws_secret_access_key = ...
//! aws_session_token = ...
//! ; optional, RFC 3339: when the keys stop working (readiness turns false after it)
//! expiration = 2026-11-26T10:15:00Z
//! ```
//!
//! The file is polled (size, mtime, inode: atomic renames as vault-agent does them are seen) and
//! re-read when it changes. A file that disappears or turns unparsable keeps the previous keys in
//! use (state degraded) until their expiry, if one is known.

use super::{CredentialError, CredentialMetrics, CredentialSource, Loaded, Reason, Slot, Timing};
use aws_credential_types::Credentials;
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};
use tokio::time::Instant;

#[derive(Clone, Debug)]
pub struct FileConfig {
    pub path: PathBuf,
    /// Profile (section) to read (default `default`; `[profile x]` headers also match `x`).
    pub profile: String,
    /// How often to check the file for changes (default 10 s).
    pub poll_interval: Duration,
    /// Only `wait_for_credentials` and `sdk_cache_ttl` apply.
    pub timing: Timing,
}

impl FileConfig {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            profile: "default".into(),
            poll_interval: Duration::from_secs(10),
            timing: Timing::default(),
        }
    }
}

/// Starts polling `cfg.path` on the current tokio runtime. A missing file is not an error here:
/// it is reported through the state until it appears.
pub fn start(cfg: FileConfig, metrics: CredentialMetrics) -> CredentialSource {
    let slot = Slot::new("file", metrics, cfg.timing.clone());
    tracing::info!(path = %cfg.path.display(), profile = %cfg.profile, "AWS credentials from a file");
    tokio::spawn(run(Arc::downgrade(&slot), cfg));
    CredentialSource::new(slot)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Stamp {
    len: u64,
    mtime: Option<SystemTime>,
    ino: u64,
}

fn stamp(m: &std::fs::Metadata) -> Stamp {
    #[cfg(unix)]
    let ino = std::os::unix::fs::MetadataExt::ino(m);
    #[cfg(not(unix))]
    let ino = 0;
    Stamp { len: m.len(), mtime: m.modified().ok(), ino }
}

/// Keys read from the file.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
    pub expiration: Option<SystemTime>,
}

impl std::fmt::Debug for Parsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parsed")
            .field("access_key_id", &self.access_key_id)
            .field("expiration", &self.expiration)
            .finish_non_exhaustive()
    }
}

async fn run(slot: Weak<Slot>, cfg: FileConfig) {
    let mut seen: Option<Stamp> = None;
    let mut healthy = false;
    let mut last: Option<Parsed> = None;
    let mut last_error: Option<String> = None;
    loop {
        let Some(s) = slot.upgrade() else { return };
        let result = match tokio::fs::metadata(&cfg.path).await {
            Err(e) => Err(unreadable(&cfg, &e)),
            Ok(m) if Some(stamp(&m)) == seen && healthy => Ok(None),
            Ok(m) => {
                seen = Some(stamp(&m));
                match tokio::fs::read_to_string(&cfg.path).await {
                    Err(e) => Err(unreadable(&cfg, &e)),
                    Ok(text) => parse(&text, &cfg.profile)
                        .map_err(|why| {
                            CredentialError::new(Reason::FileInvalid, format!("{}: {why}", cfg.path.display()))
                        })
                        .and_then(|p| match p.expiration {
                            Some(t) if t <= SystemTime::now() => Err(CredentialError::new(
                                Reason::FileInvalid,
                                format!(
                                    "the keys in {} expired at {}: is the process that renders it (vault-agent) running?",
                                    cfg.path.display(),
                                    jiff::Timestamp::try_from(t).map(|t| t.to_string()).unwrap_or_default()
                                ),
                            )),
                            _ => Ok(Some(p)),
                        }),
                }
            }
        };
        match result {
            Ok(None) => {}
            Ok(Some(p)) => {
                healthy = true;
                last_error = None;
                if last.as_ref() != Some(&p) {
                    let valid_until = p
                        .expiration
                        .map(|t| Instant::now() + t.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO));
                    tracing::info!(
                        access_key_id = %p.access_key_id,
                        path = %cfg.path.display(),
                        "AWS credentials (re)loaded from file"
                    );
                    s.store(
                        Loaded {
                            creds: Credentials::new(
                                p.access_key_id.clone(),
                                p.secret_access_key.clone(),
                                p.session_token.clone(),
                                None,
                                "file",
                            ),
                            valid_until,
                        },
                        None,
                    );
                    last = Some(p);
                }
            }
            Err(e) => {
                healthy = false;
                s.fail(&e);
                if last_error.as_deref() != Some(e.message.as_str()) {
                    if s.current_valid_until().is_some() {
                        tracing::warn!(reason = e.reason.label(), "{e}; still serving the previous keys");
                    } else {
                        tracing::error!(reason = e.reason.label(), "no valid AWS credentials: {e}");
                    }
                    last_error = Some(e.message.clone());
                }
            }
        }
        drop(s);
        tokio::time::sleep(cfg.poll_interval).await;
    }
}

fn unreadable(cfg: &FileConfig, e: &std::io::Error) -> CredentialError {
    CredentialError::new(
        Reason::FileUnreadable,
        format!("cannot read the AWS credentials file {}: {e}", cfg.path.display()),
    )
}

/// Parses the shared-credentials format; errors name what is missing, never a value.
pub(crate) fn parse(text: &str, profile: &str) -> Result<Parsed, String> {
    let mut sections: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    let mut fields: std::collections::HashMap<String, String> = Default::default();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(h) = line.strip_prefix('[') {
            let Some(h) = h.strip_suffix(']') else {
                return Err(format!("line {}: unterminated section header", n + 1));
            };
            let name = h.trim();
            let name = name.strip_prefix("profile ").map(str::trim).unwrap_or(name).to_string();
            sections.push(name.clone());
            current = Some(name);
            continue;
        }
        if current.as_deref() != Some(profile) {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            return Err(format!("line {}: expected `key = value` in profile [{profile}]", n + 1));
        };
        fields.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
    }
    if !sections.iter().any(|s| s == profile) {
        return Err(if sections.is_empty() {
            format!("no [{profile}] section (the file has no section header at all)")
        } else {
            format!("no [{profile}] section (found: {})", sections.join(", "))
        });
    }
    let get = |k: &str| fields.get(k).filter(|v| !v.is_empty()).cloned();
    let access_key_id = get("aws_access_key_id").ok_or(format!("profile [{profile}] has no aws_access_key_id"))?;
    let secret_access_key =
        get("aws_secret_access_key").ok_or(format!("profile [{profile}] has no aws_secret_access_key"))?;
    let session_token = get("aws_session_token").or_else(|| get("aws_security_token"));
    let expiration = match ["expiration", "aws_expiration", "x_security_token_expires"].iter().find_map(|k| get(k)) {
        None => None,
        Some(v) => Some(
            v.parse::<jiff::Timestamp>()
                .map(SystemTime::from)
                .map_err(|_| format!("profile [{profile}]: expiration {v:?} is not an RFC 3339 time"))?,
        ),
    };
    Ok(Parsed { access_key_id, secret_access_key, session_token, expiration })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credentials::Health;
    use aws_credential_types::provider::ProvideCredentials;

    fn cfg(dir: &std::path::Path) -> FileConfig {
        let mut c = FileConfig::new(dir.join("credentials"));
        c.poll_interval = Duration::from_millis(50);
        c.timing.wait_for_credentials = Duration::from_millis(500);
        c
    }

    fn tmpdir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("lbc-file-test-{:x}", fastrand::u64(..)));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Writes like vault-agent: a temp file renamed over the target.
    fn render(path: &std::path::Path, text: &str) {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, path).unwrap();
    }

    fn keys(id: &str, extra: &str) -> String {
        format!(
            "# rendered\n[default]\naws_access_key_id = {id}\naws_secret_access_key = s3cr3t-{id}\naws_session_token=tok\n{extra}"
        )
    }

    async fn key(src: &CredentialSource) -> Result<String, String> {
        src.provider().provide_credentials().await.map(|c| c.access_key_id().to_string()).map_err(|e| e.to_string())
    }

    /// Waits (polling every 10 ms, up to 5 s: the file is read on the blocking pool, so tokio's
    /// paused clock does not fit) until the source's state satisfies `done`; panics naming
    /// `what` and the last state otherwise. Replaces fixed sleeps before positive assertions.
    async fn until(src: &CredentialSource, what: &str, done: impl Fn(&crate::credentials::CredentialState) -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let st = src.state();
            if done(&st) {
                return;
            }
            assert!(std::time::Instant::now() < deadline, "{what}: still {st:?} after 5 s");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn last_reason(st: &crate::credentials::CredentialState) -> Option<Reason> {
        st.last_error.as_ref().map(|e| e.reason)
    }

    #[tokio::test]
    async fn reloads_on_change_and_keeps_old_keys_when_broken() {
        let dir = tmpdir();
        let c = cfg(&dir);
        render(&c.path, &keys("ASIAONE", ""));
        let m = CredentialMetrics::default();
        let src = start(c.clone(), m.clone());
        src.wait_ready(Duration::from_secs(2)).await.unwrap();
        assert_eq!(key(&src).await.unwrap(), "ASIAONE");
        let refreshes = |m: &CredentialMetrics| {
            m.refreshes.get_or_create(&super::super::RefreshLabels { source: "file", outcome: "success" }).get()
        };
        render(&c.path, &keys("ASIATWO", ""));
        until(&src, "second keys read", |_| refreshes(&m) == 2).await;
        assert_eq!(key(&src).await.unwrap(), "ASIATWO");
        // half-written / broken template
        render(&c.path, "[default]\naws_access_key_id = ASIATHREE\n");
        until(&src, "broken file noticed", |st| last_reason(st) == Some(Reason::FileInvalid)).await;
        let st = src.state();
        assert_eq!(st.health, Health::Degraded);
        let e = st.last_error.clone().unwrap();
        assert_eq!(e.reason, Reason::FileInvalid);
        assert!(e.message.contains("no aws_secret_access_key"), "{}", e.message);
        assert_eq!(key(&src).await.unwrap(), "ASIATWO");
        std::fs::remove_file(&c.path).unwrap();
        until(&src, "removal noticed", |st| last_reason(st) == Some(Reason::FileUnreadable)).await;
        render(&c.path, &keys("ASIAFOUR", ""));
        until(&src, "keys back", |st| st.health == Health::Healthy && st.access_key_id.as_deref() == Some("ASIAFOUR"))
            .await;
        assert_eq!(key(&src).await.unwrap(), "ASIAFOUR");
        assert_eq!(refreshes(&m), 3, "rewrites with unchanged keys are not refreshes");
        assert!(!format!("{:?} {}", src.state(), src.state().summary()).contains("s3cr3t"));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn missing_file_names_the_path() {
        let dir = tmpdir();
        let src = start(cfg(&dir), CredentialMetrics::default());
        let st = src.wait_ready(Duration::from_millis(300)).await.unwrap_err();
        assert_eq!(st.health, Health::Expired);
        let msg = key(&src).await.unwrap_err();
        let st = src.state();
        assert!(st.last_error.unwrap().message.contains(&dir.join("credentials").display().to_string()));
        assert!(!msg.is_empty());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn expiration_in_the_file_bounds_validity() {
        let dir = tmpdir();
        let c = cfg(&dir);
        let soon = jiff::Timestamp::now() + jiff::SignedDuration::from_millis(1500);
        render(&c.path, &keys("ASIAEXP", &format!("expiration = {soon}\n")));
        let src = start(c.clone(), CredentialMetrics::default());
        let st = src.wait_ready(Duration::from_secs(2)).await.unwrap();
        assert!(st.expires_at.is_some());
        // The expiry is a wall-clock time written in the file: this one waits for real.
        until(&src, "keys expired", |st| st.health == Health::Expired).await;
        render(&c.path, &keys("ASIAOLD", "expiration = 2020-01-01T00:00:00Z\n"));
        until(&src, "stale file noticed", |st| {
            st.last_error.as_ref().is_some_and(|e| e.message.contains("2020-01-01"))
        })
        .await;
        let e = src.state().last_error.unwrap();
        assert!(
            e.message.contains("expired at 2020-01-01T00:00:00Z") && e.message.contains("vault-agent"),
            "{}",
            e.message
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn parses_profiles_and_reports_what_is_missing() {
        let text = "[other]\naws_access_key_id=A\naws_secret_access_key=B\n\n[profile lbc]\nAWS_ACCESS_KEY_ID = C\naws_secret_access_key = D\naws_security_token = E\n";
        let p = parse(text, "lbc").unwrap();
        assert_eq!((p.access_key_id.as_str(), p.session_token.as_deref()), ("C", Some("E")));
        assert_eq!(parse(text, "other").unwrap().session_token, None);
        assert_eq!(parse(text, "default").unwrap_err(), "no [default] section (found: other, lbc)");
        assert!(parse("aws_access_key_id=A", "default").unwrap_err().contains("no section header"));
        assert!(
            parse("[default]\nexpiration=tomorrow\naws_access_key_id=A\naws_secret_access_key=B", "default")
                .unwrap_err()
                .contains("RFC 3339")
        );
        assert!(!format!("{p:?}").contains('D'));
    }
}
