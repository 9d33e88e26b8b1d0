//! Mutual TLS of an HTTPS listener (ELBv2 `MutualAuthenticationAttributes`), and when the one a
//! listener has differs from the one wanted.

/// How the listener handles client certificates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MtlsMode {
    /// No client certificate asked for (AWS's default).
    Off,
    /// The certificate chain goes to the targets in `X-Amzn-Mtls-Clientcert-*` headers, unchecked.
    Passthrough,
    /// The load balancer checks the certificate against a trust store.
    Verify,
}

impl MtlsMode {
    pub const ALL: [MtlsMode; 3] = [MtlsMode::Off, MtlsMode::Passthrough, MtlsMode::Verify];

    pub fn as_aws(self) -> &'static str {
        match self {
            MtlsMode::Off => "off",
            MtlsMode::Passthrough => "passthrough",
            MtlsMode::Verify => "verify",
        }
    }

    pub fn from_aws(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_aws() == s)
    }
}

/// A listener's mutual TLS. On the desired side `trust_store_arn` is an ARN (names are resolved
/// before the stack is built).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MutualAuthentication {
    pub mode: MtlsMode,
    /// `verify` only.
    pub trust_store_arn: Option<String>,
    /// `verify` only; AWS's default is `false`.
    pub ignore_client_certificate_expiry: Option<bool>,
    /// `verify` only: send the trust store's CA names in the TLS handshake; AWS's default is off.
    pub advertise_trust_store_ca_names: Option<bool>,
}

impl MutualAuthentication {
    pub fn off() -> Self {
        Self {
            mode: MtlsMode::Off,
            trust_store_arn: None,
            ignore_client_certificate_expiry: None,
            advertise_trust_store_ca_names: None,
        }
    }

    /// Whether a listener that has `observed` (`None`: AWS reported nothing, which is `off`)
    /// already does what `self` asks. The fields `verify` alone uses are compared only in that
    /// mode, with AWS's defaults filled in; AWS's association status is not part of the setting.
    pub fn satisfied_by(&self, observed: Option<&MutualAuthentication>) -> bool {
        let off = MutualAuthentication::off();
        let have = observed.unwrap_or(&off);
        if self.mode != have.mode {
            return false;
        }
        self.mode != MtlsMode::Verify
            || (self.trust_store_arn == have.trust_store_arn
                && self.ignore_client_certificate_expiry.unwrap_or(false)
                    == have.ignore_client_certificate_expiry.unwrap_or(false)
                && self.advertise_trust_store_ca_names.unwrap_or(false)
                    == have.advertise_trust_store_ca_names.unwrap_or(false))
    }
}

impl std::fmt::Display for MutualAuthentication {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.mode.as_aws())?;
        if let Some(t) = &self.trust_store_arn {
            write!(f, " with trust store {t}")?;
        }
        if let Some(i) = self.ignore_client_certificate_expiry {
            write!(f, ", ignoreClientCertificateExpiry {i}")?;
        }
        if let Some(a) = self.advertise_trust_store_ca_names {
            write!(f, ", advertiseTrustStoreCaNames {}", if a { "on" } else { "off" })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verify(ts: &str, ignore: Option<bool>, advertise: Option<bool>) -> MutualAuthentication {
        MutualAuthentication {
            mode: MtlsMode::Verify,
            trust_store_arn: Some(ts.into()),
            ignore_client_certificate_expiry: ignore,
            advertise_trust_store_ca_names: advertise,
        }
    }

    fn mode(m: MtlsMode) -> MutualAuthentication {
        MutualAuthentication { mode: m, ..MutualAuthentication::off() }
    }

    #[test]
    fn modes_round_trip_and_unknown_words_are_none() {
        for m in MtlsMode::ALL {
            assert_eq!(MtlsMode::from_aws(m.as_aws()), Some(m));
        }
        assert_eq!(MtlsMode::from_aws("Verify"), None);
        assert_eq!(MtlsMode::from_aws(""), None);
    }

    #[test]
    fn drift_follows_the_mode_and_the_verify_fields_with_aws_defaults() {
        let v = verify("arn:ts/a", None, None);
        // (wanted, observed, satisfied)
        let cases = [
            (mode(MtlsMode::Off), None, true),
            (mode(MtlsMode::Off), Some(mode(MtlsMode::Off)), true),
            (mode(MtlsMode::Off), Some(mode(MtlsMode::Passthrough)), false),
            (mode(MtlsMode::Off), Some(v.clone()), false),
            (mode(MtlsMode::Passthrough), None, false),
            (mode(MtlsMode::Passthrough), Some(mode(MtlsMode::Passthrough)), true),
            (v.clone(), None, false),
            (v.clone(), Some(mode(MtlsMode::Passthrough)), false),
            (v.clone(), Some(v.clone()), true),
            (v.clone(), Some(verify("arn:ts/a", Some(false), Some(false))), true),
            (v.clone(), Some(verify("arn:ts/b", None, None)), false),
            (v.clone(), Some(verify("arn:ts/a", Some(true), None)), false),
            (v.clone(), Some(verify("arn:ts/a", None, Some(true))), false),
            (verify("arn:ts/a", Some(true), Some(true)), Some(verify("arn:ts/a", Some(true), Some(true))), true),
        ];
        for (want, have, ok) in cases {
            assert_eq!(want.satisfied_by(have.as_ref()), ok, "want {want}, have {have:?}");
        }
    }

    #[test]
    fn display_names_every_field_set() {
        assert_eq!(mode(MtlsMode::Passthrough).to_string(), "passthrough");
        assert_eq!(
            verify("arn:ts/a", Some(false), Some(true)).to_string(),
            "verify with trust store arn:ts/a, ignoreClientCertificateExpiry false, advertiseTrustStoreCaNames on"
        );
    }
}
