//! Chooses and starts the AWS credential source (`--aws-credentials-source`).
//!
//! `default` leaves the SDK's own chain in charge. `vault` and `file` start a background refresher
//! from `lbc_aws::credentials` whose provider the SDK clients use; its state feeds `/readyz` and
//! its metrics the `/metrics` registry. The refreshing itself lives in `lbc_aws`.

use crate::args::{Args, CredentialsSource};
use crate::metrics::Metrics;
use anyhow::bail;
use lbc_aws::credentials::vault::{self, CredentialType, VaultConfig};
use lbc_aws::credentials::{CredentialMetrics, CredentialSource, FileConfig, file};
use std::path::PathBuf;

/// Starts the configured source; `None` for the SDK default chain. Fails only on a configuration
/// that can never work (a missing flag), never on an unreachable Vault: that is a readiness state.
pub async fn start(args: &Args, metrics: &Metrics) -> anyhow::Result<Option<CredentialSource>> {
    let m = CredentialMetrics::default();
    let Some(source) = start_source(args, m.clone())? else { return Ok(None) };
    metrics.with_registry(|r| m.register(r));
    match source.wait_ready(args.aws_credentials_startup_wait).await {
        Ok(st) => tracing::info!(state = %st.summary(), "AWS credentials ready"),
        Err(st) => tracing::error!(
            state = %st.summary(),
            "no AWS credentials yet after {:?}; starting unready, AWS calls fail until the source recovers",
            args.aws_credentials_startup_wait
        ),
    }
    Ok(Some(source))
}

/// The configured source, started without waiting for keys (`None`: the SDK default chain).
pub fn start_source(args: &Args, m: CredentialMetrics) -> anyhow::Result<Option<CredentialSource>> {
    Ok(Some(match args.aws_credentials_source {
        CredentialsSource::Default => return Ok(None),
        CredentialsSource::Vault => vault::start(vault_config(args)?, m)?,
        CredentialsSource::File => {
            if args.aws_credentials_file.is_empty() {
                bail!(
                    "--aws-credentials-source=file needs --aws-credentials-file: the path of the shared-credentials \
                     file your sidecar renders (e.g. /etc/aws-lb-controller/aws/credentials)"
                );
            }
            let mut cfg = FileConfig::new(&args.aws_credentials_file);
            cfg.profile = args.aws_credentials_profile.clone();
            file::start(cfg, m)
        }
    }))
}

fn vault_config(args: &Args) -> anyhow::Result<VaultConfig> {
    let mut missing = Vec::new();
    for (flag, v) in [
        ("--vault-address", &args.vault_address),
        ("--vault-auth-role", &args.vault_auth_role),
        ("--vault-secrets-role", &args.vault_secrets_role),
    ] {
        if v.trim().is_empty() {
            missing.push(flag);
        }
    }
    if !missing.is_empty() {
        bail!(
            "--aws-credentials-source=vault needs {}: the Vault address, the Kubernetes auth role the controller \
             logs in as, and the AWS secrets engine role it reads keys from (see docs/credentials.md)",
            missing.join(", ")
        );
    }
    let kind = CredentialType::from(args.vault_credential_type);
    let mut cfg = VaultConfig::new(&args.vault_address, &args.vault_auth_role, &args.vault_secrets_role);
    cfg.ca_bundle = non_empty(&args.vault_ca_bundle).map(PathBuf::from);
    cfg.namespace = non_empty(&args.vault_namespace);
    cfg.auth_mount = args.vault_auth_mount.clone();
    cfg.token_path = PathBuf::from(&args.vault_token_path);
    cfg.secrets_mount = args.vault_secrets_mount.clone();
    cfg.credential_type = kind;
    cfg.ttl = (!args.vault_ttl.is_zero()).then_some(args.vault_ttl);
    cfg.role_arn = non_empty(&args.vault_role_arn);
    cfg.insecure_http = args.vault_insecure_http;
    Ok(cfg)
}

fn non_empty(s: &str) -> Option<String> {
    Some(s.trim().to_string()).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> Args {
        let mut v = vec!["aws-lb-controller", "--aws-credentials-source=vault"];
        v.extend_from_slice(extra);
        Args::try_parse_from(v).unwrap()
    }

    #[test]
    fn vault_flags_map_onto_the_config() {
        let a = args(&[
            "--vault-address=https://vault:8200",
            "--vault-auth-role=lbc",
            "--vault-secrets-role=lbc-aws",
            "--vault-credential-type=creds",
            "--vault-namespace=team",
            "--vault-role-arn=arn:aws:iam::1:role/x",
            "--vault-ttl=30m",
            "--vault-token-path=/var/run/secrets/vault/token",
        ]);
        let c = vault_config(&a).unwrap();
        assert_eq!(c.credential_type, CredentialType::Creds);
        assert_eq!(c.secrets_role, "lbc-aws");
        assert_eq!(c.namespace.as_deref(), Some("team"));
        assert_eq!(c.ttl, Some(std::time::Duration::from_secs(1800)));
        assert_eq!(c.token_path, PathBuf::from("/var/run/secrets/vault/token"));
        assert_eq!(c.ca_bundle, None);
    }

    #[test]
    fn missing_vault_flags_are_all_named() {
        let e = vault_config(&args(&["--vault-auth-role=lbc"])).unwrap_err().to_string();
        assert!(e.contains("--vault-address") && e.contains("--vault-secrets-role"), "{e}");
        assert!(!e.contains("--vault-auth-role,"), "{e}");
        // An unknown credential type is refused when the flags are read, naming the flag, the value and
        // the choices.
        let e = Args::try_parse_from(["aws-lb-controller", "--vault-credential-type=iam"]).unwrap_err().to_string();
        assert!(e.contains("--vault-credential-type") && e.contains("'iam'") && e.contains("sts, creds"), "{e}");
    }
}
