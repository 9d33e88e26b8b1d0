//! OIDC client credentials: which Secrets a group needs, and how one Secret's data becomes the
//! client ID and secret (ALBC's keys and trimming). The controller GETs the Secrets; nothing
//! here ever puts a value into a message, only names and keys.
//!
//! ALBC reads `clientID` (or the legacy `clientId` of the old ALB ingress controller) and
//! `clientSecret` from the Secret named by `auth-idp-oidc`'s `secretName`, in the Ingress's
//! namespace; trailing whitespace is cut from the ID, trailing control characters (a newline
//! left by `echo`) from the secret.

use std::collections::{BTreeMap, BTreeSet};

use super::actions::RuleAction;
use super::keys::{self as k, full_key};
use super::merge::IngressKey;
use super::plan::GroupPlan;
use crate::lb::build::OidcCredentials;

pub const CLIENT_ID_KEY: &str = "clientID";
pub const CLIENT_ID_LEGACY_KEY: &str = "clientId";
pub const CLIENT_SECRET_KEY: &str = "clientSecret";

/// (namespace, Secret name) → the Ingresses whose rules or default actions authenticate with it.
pub type SecretUsers = BTreeMap<(String, String), BTreeSet<IngressKey>>;

/// The Secrets `plan` needs: only actions that made it into a listener (auth on HTTPS).
pub fn secrets_needed(plan: &GroupPlan) -> SecretUsers {
    let mut out = SecretUsers::new();
    let mut add = |who: &IngressKey, actions: &[RuleAction]| {
        for a in actions {
            if let RuleAction::AuthenticateOidc(auth) = a {
                let key = (who.namespace.clone(), auth.idp.secret_name.clone());
                out.entry(key).or_default().insert(who.clone());
            }
        }
    };
    for l in &plan.rules {
        if let Some(who) = &l.default_from {
            add(who, &l.default_actions);
        }
        for r in &l.rules {
            add(&r.ingress, &r.actions);
        }
    }
    out
}

/// Where a problem with a Secret is reported from: "Secret ns/name (auth-idp-oidc of Ingress …)".
pub fn secret_label(secret: &(String, String), users: &BTreeSet<IngressKey>) -> String {
    let who: Vec<String> = users.iter().map(ToString::to_string).collect();
    format!("Secret {}/{} (named in {} of Ingress {})", secret.0, secret.1, full_key(k::AUTH_IDP_OIDC), who.join(", "))
}

/// One Secret's `data` → credentials, or what is wrong with it. Only the keys the controller
/// looks for are named, never the Secret's other keys nor any value: the problem is reported on
/// every member of the Ingress's group, which may be other namespaces. `uid`: the Secret's
/// `metadata.uid`, the key of the credentials' digest.
pub fn credentials_from_secret(uid: &str, data: &BTreeMap<String, Vec<u8>>) -> Result<OidcCredentials, String> {
    let others = || match data.len() {
        0 => "the Secret has no keys".to_string(),
        n => format!("the Secret has {n} other key{}; key names are case-sensitive", if n == 1 { "" } else { "s" }),
    };
    let text = |key: &str, raw: &[u8]| {
        String::from_utf8(raw.to_vec()).map_err(|_| format!("the value of key {key} is not UTF-8 text"))
    };
    let (id_key, raw_id) = match data.get(CLIENT_ID_KEY) {
        Some(v) => (CLIENT_ID_KEY, v),
        None => match data.get(CLIENT_ID_LEGACY_KEY) {
            Some(v) => (CLIENT_ID_LEGACY_KEY, v),
            None => {
                return Err(format!(
                    "has no key {CLIENT_ID_KEY} ({}); add the IdP's client ID under {CLIENT_ID_KEY}",
                    others()
                ));
            }
        },
    };
    let Some(raw_secret) = data.get(CLIENT_SECRET_KEY) else {
        return Err(format!(
            "has no key {CLIENT_SECRET_KEY} ({}); add the IdP's client secret under {CLIENT_SECRET_KEY}",
            others()
        ));
    };
    let client_id = text(id_key, raw_id)?.trim_end().to_string();
    let client_secret = text(CLIENT_SECRET_KEY, raw_secret)?.trim_end_matches(char::is_control).to_string();
    for (key, v) in [(id_key, &client_id), (CLIENT_SECRET_KEY, &client_secret)] {
        if v.is_empty() {
            return Err(format!("has an empty {key}; set it to the IdP's value"));
        }
    }
    let digest = credentials_digest(uid, &client_id, &client_secret);
    Ok(OidcCredentials { client_id, client_secret, digest })
}

/// HMAC-SHA256 of the client ID and secret keyed by the Secret's UID (random, made by the API
/// server, never sent to AWS), as hex. It changes when the credentials do (or the Secret is made
/// anew), and unlike a hash with a fixed salt it is no offline test of guessed secrets for whoever
/// reads the load balancer's tags.
pub fn credentials_digest(uid: &str, client_id: &str, client_secret: &str) -> String {
    use hmac::{KeyInit, Mac};
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(uid.as_bytes()).expect("HMAC takes keys of any length");
    for part in [client_id, client_secret] {
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part.as_bytes());
    }
    hex::encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(pairs: &[(&str, &[u8])]) -> BTreeMap<String, Vec<u8>> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_vec())).collect()
    }

    #[test]
    fn secret_data_to_credentials() {
        type Case<'a> = (&'a str, Vec<(&'a str, &'a [u8])>, Result<(&'a str, &'a str), &'a str>);
        let cases: Vec<Case> = vec![
            ("ALBC's keys", vec![("clientID", b"app"), ("clientSecret", b"s3cret")], Ok(("app", "s3cret"))),
            ("legacy clientId", vec![("clientId", b"old"), ("clientSecret", b"s3cret")], Ok(("old", "s3cret"))),
            (
                "clientID wins over clientId",
                vec![("clientID", b"new"), ("clientId", b"old"), ("clientSecret", b"x")],
                Ok(("new", "x")),
            ),
            (
                "trailing newline (echo) and spaces trimmed from the ID, control characters from the secret",
                vec![("clientID", b"app \n"), ("clientSecret", b" s3cret \r\n")],
                Ok(("app", " s3cret ")),
            ),
            (
                "no client ID",
                vec![("clientSecret", b"x"), ("other", b"y")],
                Err("has no key clientID (the Secret has 2 other keys; key names are case-sensitive)"),
            ),
            (
                "no client secret",
                vec![("clientID", b"app")],
                Err("has no key clientSecret (the Secret has 1 other key; key names are case-sensitive)"),
            ),
            ("no keys", vec![], Err("has no key clientID (the Secret has no keys)")),
            ("empty secret", vec![("clientID", b"app"), ("clientSecret", b"\n")], Err("has an empty clientSecret")),
            ("binary", vec![("clientID", b"app"), ("clientSecret", &[0xff, 0xfe])], Err("not UTF-8")),
        ];
        for (name, pairs, want) in cases {
            let got = credentials_from_secret("uid-1", &data(&pairs));
            match (got, want) {
                (Ok(c), Ok((id, secret))) => {
                    assert_eq!((c.client_id.as_str(), c.client_secret.as_str()), (id, secret), "{name}");
                    assert_eq!(c.digest, credentials_digest("uid-1", id, secret), "{name}");
                }
                (Err(e), Err(part)) => {
                    assert!(e.contains(part), "{name}: {e}");
                    assert!(!e.contains("s3cret"), "{name}: never the value: {e}");
                    assert!(!e.contains("other,") && !e.contains("["), "{name}: never another key's name: {e}");
                }
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    /// The digest is keyed: the same credentials under another Secret UID give another digest, so
    /// a guess of the secret cannot be checked against a tag without the UID.
    #[test]
    fn the_credentials_digest_needs_the_secrets_uid() {
        let d = credentials_digest("0b6c…-uid-a", "app", "s3cret");
        assert_eq!(d.len(), 64);
        assert_eq!(d, credentials_digest("0b6c…-uid-a", "app", "s3cret"), "stable");
        assert_ne!(d, credentials_digest("0b6c…-uid-b", "app", "s3cret"), "keyed by the UID");
        assert_ne!(d, credentials_digest("0b6c…-uid-a", "app", "s3cret2"), "follows the secret");
        assert_ne!(d, credentials_digest("0b6c…-uid-a", "app2", "s3cret"), "follows the client ID");
        assert_ne!(credentials_digest("u", "ab", "c"), credentials_digest("u", "a", "bc"), "parts are delimited");
        // Not the unkeyed hash of the credentials.
        use sha2::{Digest, Sha256};
        assert_ne!(d, hex::encode(Sha256::digest(b"apps3cret")));
    }
}
