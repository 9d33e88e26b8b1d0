//! `mutual-authentication`: mutual TLS per HTTPS listen port, parsed and checked as ALBC does
//! (`[{"port": 443, "mode": "verify", "trustStore": "name-or-arn", ...}]`). A trust store named
//! by name is resolved to its ARN by the controller (DescribeTrustStores) before the merge; the
//! merge then requires the members of a group that set the same port to agree.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use super::annotations::IngressSettings;
use super::keys::{MUTUAL_AUTHENTICATION, PREFIX};
use super::merge::listen_ports;
use crate::lb::{MtlsMode, MutualAuthentication, Protocol};

/// One port's mutual TLS as an Ingress asks for it: the trust store may still be a name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MtlsSetting {
    pub mode: MtlsMode,
    /// A trust store ARN (starts with `arn:`) or name; `verify` only.
    pub trust_store: Option<String>,
    /// `verify` only; `Some(false)` when not given (ALBC's default for `verify`).
    pub ignore_client_certificate_expiry: Option<bool>,
    /// `verify` only.
    pub advertise_trust_store_ca_names: Option<bool>,
}

impl MtlsSetting {
    /// The trust store's name when it is not an ARN, to be resolved.
    pub fn trust_store_name(&self) -> Option<&str> {
        self.trust_store.as_deref().filter(|t| !t.starts_with("arn:"))
    }

    /// The listener setting, with a named trust store looked up in `arns` (name → ARN);
    /// `Err(name)` when the name is not there.
    pub fn resolve(&self, arns: &BTreeMap<String, String>) -> Result<MutualAuthentication, String> {
        let trust_store_arn = match (&self.trust_store, self.trust_store_name()) {
            (_, Some(name)) => Some(arns.get(name).cloned().ok_or_else(|| name.to_string())?),
            (t, None) => t.clone(),
        };
        Ok(MutualAuthentication {
            mode: self.mode,
            trust_store_arn,
            ignore_client_certificate_expiry: self.ignore_client_certificate_expiry,
            advertise_trust_store_ca_names: self.advertise_trust_store_ca_names,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawEntry {
    port: i64,
    #[serde(default)]
    mode: String,
    trust_store: Option<String>,
    ignore_client_certificate_expiry: Option<bool>,
    advertise_trust_store_ca_names: Option<String>,
}

/// Parses the annotation's value: every entry checked as ALBC checks it, plus a port listed
/// twice (ALBC keeps the last one silently) and unknown fields (ALBC ignores them, so a typo like
/// `truststore` would go unnoticed) refused.
pub fn parse_mutual_authentication(raw: &str) -> Result<BTreeMap<u16, MtlsSetting>, String> {
    let entries: Vec<RawEntry> = serde_json::from_str(raw).map_err(|e| format!("JSON: {e}"))?;
    if entries.is_empty() {
        return Err("an empty list; give at least one {\"port\": ..., \"mode\": ...} entry".into());
    }
    let mut out = BTreeMap::new();
    for e in entries {
        let port = u16::try_from(e.port).ok().filter(|p| *p > 0).ok_or(format!("port {} is not 1 to 65535", e.port))?;
        let mode = match MtlsMode::from_aws(&e.mode) {
            Some(m) => m,
            None if e.mode.is_empty() => return Err(format!("port {port}: mode is missing")),
            None => return Err(format!("port {port}: mode {:?} is not one of off, passthrough, verify", e.mode)),
        };
        let trust_store = e.trust_store.filter(|t| !t.is_empty());
        let verify = mode == MtlsMode::Verify;
        if verify && trust_store.is_none() {
            return Err(format!("port {port}: mode verify needs a trustStore (its name or ARN)"));
        }
        for (given, field) in [
            (trust_store.is_some(), "trustStore"),
            (e.ignore_client_certificate_expiry.is_some(), "ignoreClientCertificateExpiry"),
            (e.advertise_trust_store_ca_names.is_some(), "advertiseTrustStoreCaNames"),
        ] {
            if given && !verify {
                return Err(format!("port {port}: mode {} does not take {field}; only verify does", mode.as_aws()));
            }
        }
        let advertise = match e.advertise_trust_store_ca_names.as_deref() {
            None => None,
            Some("on") => Some(true),
            Some("off") => Some(false),
            Some(other) => {
                return Err(format!("port {port}: advertiseTrustStoreCaNames {other:?} is not \"on\" or \"off\""));
            }
        };
        let setting = MtlsSetting {
            mode,
            trust_store,
            ignore_client_certificate_expiry: if verify {
                Some(e.ignore_client_certificate_expiry.unwrap_or(false))
            } else {
                None
            },
            advertise_trust_store_ca_names: advertise,
        };
        if out.insert(port, setting).is_some() {
            return Err(format!("port {port} is listed twice"));
        }
    }
    Ok(out)
}

/// Warnings for `mutual-authentication` entries whose port is not an HTTPS listen port of the
/// Ingress (settings with IngressClassParams applied): ALBC ignores them silently.
pub fn unused_entries(settings: &IngressSettings) -> Vec<String> {
    let https: BTreeSet<u16> =
        listen_ports(settings).into_iter().filter(|(p, _)| *p == Protocol::Https).map(|(_, port)| port).collect();
    settings
        .mutual_authentication
        .keys()
        .filter(|port| !https.contains(port))
        .map(|port| {
            format!(
                "annotation {PREFIX}/{MUTUAL_AUTHENTICATION}: port {port} is not an HTTPS listen port of this Ingress, \
                 so its entry is not applied; add {{\"HTTPS\": {port}}} to listen-ports or remove the entry"
            )
        })
        .collect()
}

/// Trust store names (not ARNs) that `settings` use, to resolve in one DescribeTrustStores call.
pub fn trust_store_names<'a>(settings: impl IntoIterator<Item = &'a BTreeMap<u16, MtlsSetting>>) -> BTreeSet<String> {
    settings.into_iter().flat_map(|m| m.values()).filter_map(|s| s.trust_store_name().map(str::to_string)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(raw: &str) -> MtlsSetting {
        let mut m = parse_mutual_authentication(raw).unwrap_or_else(|e| panic!("{raw}: {e}"));
        assert_eq!(m.len(), 1, "{raw}");
        m.pop_first().unwrap().1
    }

    #[test]
    fn albc_examples_parse_with_albc_defaults() {
        let v = one(r#"[{"port": 443, "mode": "verify", "trustStore": "my-ts"}]"#);
        assert_eq!(v.mode, MtlsMode::Verify);
        assert_eq!(v.trust_store_name(), Some("my-ts"));
        assert_eq!(v.ignore_client_certificate_expiry, Some(false), "ALBC defaults it to false for verify");
        assert_eq!(v.advertise_trust_store_ca_names, None);
        let arn = "arn:aws:elasticloadbalancing:us-east-1:123456789012:truststore/ts/0123";
        let v = one(&format!(
            r#"[{{"port": 8443, "mode": "verify", "trustStore": "{arn}", "ignoreClientCertificateExpiry": true, "advertiseTrustStoreCaNames": "on"}}]"#
        ));
        assert_eq!((v.trust_store.as_deref(), v.trust_store_name()), (Some(arn), None));
        assert_eq!((v.ignore_client_certificate_expiry, v.advertise_trust_store_ca_names), (Some(true), Some(true)));
        let p = one(r#"[{"port": 443, "mode": "passthrough"}]"#);
        assert_eq!((p.mode, p.trust_store, p.ignore_client_certificate_expiry), (MtlsMode::Passthrough, None, None));
        assert_eq!(one(r#"[{"port": 443, "mode": "off"}]"#).mode, MtlsMode::Off);
        let two = parse_mutual_authentication(
            r#"[{"port": 443, "mode": "off"}, {"port": 8443, "mode": "verify", "trustStore": "ts"}]"#,
        )
        .unwrap();
        assert_eq!(two.keys().copied().collect::<Vec<_>>(), [443, 8443]);
    }

    #[test]
    fn every_invalid_entry_is_refused_with_what_to_change() {
        // (value, words the error must carry)
        let cases = [
            ("not json", "JSON"),
            ("[]", "empty list"),
            (r#"[{"port": 0, "mode": "off"}]"#, "port 0 is not 1 to 65535"),
            (r#"[{"port": 70000, "mode": "off"}]"#, "port 70000"),
            (r#"[{"port": 443}]"#, "mode is missing"),
            (r#"[{"port": 443, "mode": "Verify", "trustStore": "t"}]"#, "not one of off, passthrough, verify"),
            (r#"[{"port": 443, "mode": "verify"}]"#, "needs a trustStore"),
            (r#"[{"port": 443, "mode": "verify", "trustStore": ""}]"#, "needs a trustStore"),
            (r#"[{"port": 443, "mode": "off", "trustStore": "t"}]"#, "mode off does not take trustStore"),
            (
                r#"[{"port": 443, "mode": "passthrough", "ignoreClientCertificateExpiry": false}]"#,
                "mode passthrough does not take ignoreClientCertificateExpiry",
            ),
            (
                r#"[{"port": 443, "mode": "off", "advertiseTrustStoreCaNames": "on"}]"#,
                "does not take advertiseTrustStoreCaNames",
            ),
            (
                r#"[{"port": 443, "mode": "verify", "trustStore": "t", "advertiseTrustStoreCaNames": "yes"}]"#,
                "\"yes\" is not \"on\" or \"off\"",
            ),
            (r#"[{"port": 443, "mode": "off"}, {"port": 443, "mode": "passthrough"}]"#, "port 443 is listed twice"),
            (r#"[{"port": 443, "mode": "verify", "truststore": "t"}]"#, "unknown field `truststore`"),
        ];
        for (raw, want) in cases {
            let err = parse_mutual_authentication(raw).expect_err(raw);
            assert!(err.contains(want), "{raw}: {err}");
        }
    }

    #[test]
    fn entries_for_ports_that_are_not_https_listen_ports_are_named() {
        let mut s = IngressSettings {
            mutual_authentication: parse_mutual_authentication(
                r#"[{"port": 443, "mode": "passthrough"}, {"port": 80, "mode": "off"}]"#,
            )
            .unwrap(),
            ..Default::default()
        };
        s.listen_ports = Some(vec![(Protocol::Http, 80), (Protocol::Https, 443)]);
        let notes = unused_entries(&s);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("port 80 is not an HTTPS listen port"), "{notes:?}");
        // The default listen port without certificates is HTTP 80: both entries apply to nothing.
        s.listen_ports = None;
        assert_eq!(unused_entries(&s).len(), 2);
        // With a certificate the default is HTTPS 443.
        s.certificate_arns = vec!["arn:cert".into()];
        assert_eq!(unused_entries(&s).len(), 1);
    }

    #[test]
    fn names_resolve_through_the_map_and_arns_pass_as_they_are() {
        let arns = BTreeMap::from([("ts".to_string(), "arn:ts/1".to_string())]);
        let named = one(r#"[{"port": 443, "mode": "verify", "trustStore": "ts"}]"#);
        assert_eq!(named.resolve(&arns).unwrap().trust_store_arn.as_deref(), Some("arn:ts/1"));
        let missing = one(r#"[{"port": 443, "mode": "verify", "trustStore": "other"}]"#);
        assert_eq!(missing.resolve(&arns), Err("other".to_string()));
        let by_arn = one(r#"[{"port": 443, "mode": "verify", "trustStore": "arn:ts/2"}]"#);
        assert_eq!(by_arn.resolve(&BTreeMap::new()).unwrap().trust_store_arn.as_deref(), Some("arn:ts/2"));
        let pass = one(r#"[{"port": 443, "mode": "passthrough"}]"#);
        assert_eq!(
            pass.resolve(&BTreeMap::new()).unwrap(),
            MutualAuthentication { mode: MtlsMode::Passthrough, ..MutualAuthentication::off() }
        );
        let both = [
            parse_mutual_authentication(r#"[{"port": 443, "mode": "verify", "trustStore": "a"}]"#).unwrap(),
            parse_mutual_authentication(
                r#"[{"port": 443, "mode": "verify", "trustStore": "arn:x"}, {"port": 8443, "mode": "verify", "trustStore": "b"}]"#,
            )
            .unwrap(),
        ];
        assert_eq!(trust_store_names(&both), BTreeSet::from(["a".to_string(), "b".to_string()]));
    }
}
