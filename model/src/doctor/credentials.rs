//! Check 4: the configured credential source works end to end (for Vault/OpenBao: login, lease,
//! keys; then STS GetCallerIdentity with those keys) and the keys have time left.

use super::Verdict;

pub const CHECK: &str = "credentials";
/// Keys expiring sooner than this get a warning: the controller refreshes well before expiry, so
/// fresh keys this short-lived mean the role's TTL is too low to ride out a Vault outage.
pub const SHORT_SECS: i64 = 300;

/// What the doctor saw of the credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// `default`, `vault` or `file`.
    pub source: String,
    /// Where they came from: the Vault address and roles, the file path, or the SDK chain's source.
    pub origin: String,
    /// The source's own error (sealed Vault, denied login, unreadable file), if it gave no keys.
    pub source_error: Option<String>,
    /// Seconds until the keys expire (`None`: no expiry known, e.g. static keys).
    pub expires_in: Option<i64>,
    /// STS GetCallerIdentity: the ARN, or the error.
    pub caller: Result<String, String>,
}

/// Which provider of the SDK default chain answers, from the environment it reads (in the
/// chain's order: environment, web identity, profile, container, instance metadata).
pub fn default_chain_source(env: &dyn Fn(&str) -> Option<String>, profile_file_exists: bool) -> String {
    let set = |k: &str| env(k).is_some_and(|v| !v.is_empty());
    if set("AWS_ACCESS_KEY_ID") && set("AWS_SECRET_ACCESS_KEY") {
        "environment variables AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY".into()
    } else if set("AWS_WEB_IDENTITY_TOKEN_FILE") && set("AWS_ROLE_ARN") {
        "web identity (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN): IRSA-style".into()
    } else if set("AWS_PROFILE") || profile_file_exists {
        format!("shared config profile {:?}", env("AWS_PROFILE").unwrap_or_else(|| "default".into()))
    } else if set("AWS_CONTAINER_CREDENTIALS_FULL_URI") || set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") {
        "container credentials endpoint (ECS/EKS Pod Identity)".into()
    } else if env("AWS_EC2_METADATA_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        "nothing: no environment keys, profile or web identity, and instance metadata is disabled".into()
    } else {
        "instance metadata (the node's instance profile: every pod on the node shares it)".into()
    }
}

fn human(secs: i64) -> String {
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    if h > 0 {
        format!("{h}h{m:02}m")
    } else if m > 0 {
        format!("{m}m{s:02}s")
    } else {
        format!("{s}s")
    }
}

pub fn check(o: &Observed) -> Verdict {
    let object = format!("--aws-credentials-source={} ({})", o.source, o.origin);
    if let Some(e) = &o.source_error {
        let fix = if e.contains("sealed") {
            "unseal Vault (vault operator unseal), then the controller recovers by itself".to_string()
        } else {
            "fix what the error names; docs/credentials.md lists each Vault role and policy setting".to_string()
        };
        return Verdict::fail(CHECK, object, e.clone(), "AWS keys from the source", fix);
    }
    let arn = match &o.caller {
        Ok(arn) => arn,
        Err(e) => {
            return Verdict::fail(
                CHECK,
                object,
                format!("sts:GetCallerIdentity failed: {e}"),
                "the keys are accepted by STS",
                "the keys are invalid or expired: check the role the source hands out (and the STS endpoint in --aws-api-endpoints)",
            );
        }
    };
    match o.expires_in {
        Some(s) if s <= 0 => Verdict::fail(
            CHECK,
            object,
            format!("caller {arn}; keys expired {}s ago", -s),
            "unexpired keys",
            "the source handed out expired keys: check the clock and the Vault role's TTL",
        ),
        Some(s) if s < SHORT_SECS => Verdict::warn(
            CHECK,
            object,
            format!("caller {arn}; fresh keys expire in {}", human(s)),
            format!("at least {} of lifetime", human(SHORT_SECS)),
            "raise the role's TTL (--vault-ttl, the engine role's default_sts_ttl) so keys outlive a short Vault outage",
        ),
        Some(s) => Verdict::ok(CHECK, object, format!("caller {arn}; keys expire in {}", human(s))),
        None => Verdict::ok(CHECK, object, format!("caller {arn}; keys without expiry")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Status;

    fn obs(error: Option<&str>, expires: Option<i64>, caller: Result<&str, &str>) -> Observed {
        Observed {
            source: "vault".into(),
            origin: "http://127.0.0.1:8200 role lbc".into(),
            source_error: error.map(str::to_string),
            expires_in: expires,
            caller: caller.map(str::to_string).map_err(str::to_string),
        }
    }

    #[test]
    fn table() {
        let arn = "arn:aws:sts::123456789012:assumed-role/lbc/vault-1";
        let cases: Vec<(&str, Observed, Status, &str, &str)> = vec![
            ("healthy", obs(None, Some(899), Ok(arn)), Status::Ok, "keys expire in 14m59s", ""),
            ("static", obs(None, None, Ok(arn)), Status::Ok, "without expiry", ""),
            (
                "sealed",
                obs(Some("Vault at http://v is sealed"), None, Err("no keys")),
                Status::Fail,
                "is sealed",
                "unseal",
            ),
            (
                "denied",
                obs(Some("permission denied on aws/sts/x"), None, Err("x")),
                Status::Fail,
                "permission denied",
                "docs/credentials.md",
            ),
            (
                "sts refuses",
                obs(None, Some(900), Err("InvalidClientTokenId")),
                Status::Fail,
                "GetCallerIdentity failed",
                "invalid",
            ),
            ("short", obs(None, Some(120), Ok(arn)), Status::Warn, "expire in 2m00s", "--vault-ttl"),
            ("expired", obs(None, Some(-5), Ok(arn)), Status::Fail, "expired 5s ago", "clock"),
        ];
        for (name, o, want, found, fix) in cases {
            let v = check(&o);
            assert_eq!(v.status, want, "{name}: {v:?}");
            assert!(v.found.contains(found) && v.fix.contains(fix), "{name}: {v:?}");
            assert!(v.object.contains("--aws-credentials-source=vault"), "{v:?}");
        }
    }

    #[test]
    fn default_chain_is_named() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        for (vars, file, want) in [
            (&[("AWS_ACCESS_KEY_ID", "a"), ("AWS_SECRET_ACCESS_KEY", "b")][..], false, "environment variables"),
            (&[("AWS_WEB_IDENTITY_TOKEN_FILE", "/t"), ("AWS_ROLE_ARN", "r")][..], false, "web identity"),
            (&[("AWS_PROFILE", "p")][..], false, "profile \"p\""),
            (&[][..], true, "profile \"default\""),
            (&[("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://x")][..], false, "container"),
            (&[("AWS_EC2_METADATA_DISABLED", "true")][..], false, "nothing"),
            (&[("AWS_ACCESS_KEY_ID", "a")][..], false, "instance metadata"),
        ] {
            let got = default_chain_source(&env(vars), file);
            assert!(got.contains(want), "{vars:?}: {got}");
        }
    }
}
