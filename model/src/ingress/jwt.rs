//! `jwt-validation` on an Ingress: `{"jwksEndpoint": ..., "issuer": ..., "additionalClaims":
//! [{"format": ..., "name": ..., "values": [...]}]}`, keys case-insensitive as in ALBC. Every rule
//! of the Ingress on an HTTPS listener gets a JWT validation action before its routing action
//! (HTTP listeners get none, as in ALBC); authentication (`auth-type`) on the same rule is refused,
//! as ALBC refuses it. Deviation: unknown keys are refused (a misspelt `additionalClaims` would
//! otherwise drop a check silently), and AWS's limits are checked here, before any call.

use serde::Deserialize;

use super::actions::decode;
use crate::lb::{JwtClaim, JwtClaimFormat, JwtValidation};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJwt {
    #[serde(rename = "jwksendpoint", default)]
    jwks_endpoint: String,
    #[serde(default)]
    issuer: String,
    #[serde(rename = "additionalclaims", default)]
    additional_claims: Vec<RawClaim>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClaim {
    #[serde(default)]
    format: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    values: Vec<String>,
}

/// The annotation's value, checked against ALBC's rules and AWS's limits; `Err` says every
/// problem found.
pub fn parse_jwt_validation(raw: &str) -> Result<JwtValidation, String> {
    let r: RawJwt = decode(raw)?;
    let mut problems = Vec::new();
    let mut claims = Vec::new();
    for c in r.additional_claims {
        let format = match (c.format.as_str(), JwtClaimFormat::parse(&c.format)) {
            ("", _) => {
                problems.push(format!("additional claim {:?} needs a format", c.name));
                continue;
            }
            (_, Some(f)) => f,
            (other, None) => {
                let known: Vec<&str> = JwtClaimFormat::ALL.iter().map(|f| f.as_str()).collect();
                problems.push(format!(
                    "additional claim {:?} has format {other:?}, expected one of {}",
                    c.name,
                    known.join(", ")
                ));
                continue;
            }
        };
        claims.push(JwtClaim { format, name: c.name, values: c.values });
    }
    let jwt = JwtValidation { jwks_endpoint: r.jwks_endpoint, issuer: r.issuer, additional_claims: claims };
    problems.extend(jwt.problems());
    if problems.is_empty() { Ok(jwt) } else { Err(problems.join("; ")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_annotation_parses_with_keys_in_any_case() {
        let raw = r#"{"JwksEndpoint":"https://idp.example.com/jwks","issuer":"https://idp.example.com",
            "additionalClaims":[{"format":"string-array","name":"groups","values":["admins","ops"]},
                                {"FORMAT":"single-string","Name":"sub","Values":["svc-a"]}]}"#;
        let jwt = parse_jwt_validation(raw).unwrap();
        assert_eq!(jwt.jwks_endpoint, "https://idp.example.com/jwks");
        assert_eq!(jwt.issuer, "https://idp.example.com");
        assert_eq!(
            jwt.additional_claims,
            vec![
                JwtClaim {
                    format: JwtClaimFormat::StringArray,
                    name: "groups".into(),
                    values: vec!["admins".into(), "ops".into()]
                },
                JwtClaim { format: JwtClaimFormat::SingleString, name: "sub".into(), values: vec!["svc-a".into()] },
            ]
        );
        let bare = parse_jwt_validation(r#"{"jwksEndpoint":"https://idp/jwks","issuer":"idp"}"#).unwrap();
        assert!(bare.additional_claims.is_empty());
    }

    #[test]
    fn bad_values_are_refused_with_every_reason() {
        let cases = [
            ("{", "JSON"),
            (r#"{"issuer":"idp"}"#, "jwksEndpoint is required"),
            (r#"{"jwksEndpoint":"https://idp/jwks"}"#, "issuer is required"),
            (r#"{"jwksEndpoint":"https://idp/jwks","issuer":"idp","additionalClaim":[]}"#, "unknown field"),
            (
                r#"{"jwksEndpoint":"https://idp/jwks","issuer":"idp","additionalClaims":[{"name":"a","values":["x"]}]}"#,
                "\"a\" needs a format",
            ),
            (
                r#"{"jwksEndpoint":"https://idp/jwks","issuer":"idp","additionalClaims":[{"format":"array","name":"a","values":["x"]}]}"#,
                "format \"array\", expected one of single-string, string-array, space-separated-values",
            ),
            (
                r#"{"jwksEndpoint":"https://idp/jwks","issuer":"idp","additionalClaims":[{"format":"string-array","name":"a"}]}"#,
                "\"a\" has no values",
            ),
            (
                r#"{"jwksEndpoint":"http://idp/jwks","issuer":"","additionalClaims":[{"format":"single-string","name":"iss","values":["x"]}]}"#,
                "issuer is required; jwksEndpoint \"http://idp/jwks\" is not a full https:// URL",
            ),
        ];
        for (raw, want) in cases {
            let err = parse_jwt_validation(raw).expect_err(raw);
            assert!(err.contains(want), "{raw}: {err}");
        }
    }
}
