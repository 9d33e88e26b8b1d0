//! `jwt-validation`: an ALB rule action that verifies the request's JSON Web Token (signature
//! against the JWKS endpoint's keys, `iss`, `exp`, and `nbf`/`iat` when present, plus the
//! additional claims) before the routing action. The limits are AWS's
//! (`JwtValidationActionConfig`, `JwtValidationActionAdditionalClaim`), checked before any call so
//! a bad value is a precise Warning instead of a CreateRule failing halfway through a deployment.

/// AWS's limit on the issuer, the JWKS endpoint and each claim value.
pub const JWT_FIELD_MAX_LEN: usize = 256;
/// At most this many additional claims, and this many values per claim.
pub const JWT_CLAIMS_MAX: usize = 10;
/// Claims AWS always checks; it refuses them as additional claims.
pub const JWT_DEFAULT_CLAIMS: [&str; 4] = ["exp", "iss", "nbf", "iat"];

/// The action's configuration, compared as written (AWS reports claims and values in the order
/// they were sent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JwtValidation {
    pub jwks_endpoint: String,
    pub issuer: String,
    pub additional_claims: Vec<JwtClaim>,
}

/// A claim the token must carry with one of `values`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JwtClaim {
    pub format: JwtClaimFormat,
    pub name: String,
    pub values: Vec<String>,
}

/// How the claim's value is written in the token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JwtClaimFormat {
    SingleString,
    StringArray,
    SpaceSeparatedValues,
}

impl JwtClaimFormat {
    pub const ALL: [JwtClaimFormat; 3] =
        [JwtClaimFormat::SingleString, JwtClaimFormat::StringArray, JwtClaimFormat::SpaceSeparatedValues];

    /// AWS's name (`single-string`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            JwtClaimFormat::SingleString => "single-string",
            JwtClaimFormat::StringArray => "string-array",
            JwtClaimFormat::SpaceSeparatedValues => "space-separated-values",
        }
    }

    pub fn parse(s: &str) -> Option<JwtClaimFormat> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }
}

impl JwtValidation {
    /// What AWS would refuse in this configuration, one text per problem; empty when it is valid.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let too_long = |what: &str, v: &str| {
            (v.len() > JWT_FIELD_MAX_LEN)
                .then(|| format!("{what} is {} characters long, AWS accepts at most {JWT_FIELD_MAX_LEN}", v.len()))
        };
        if self.issuer.is_empty() {
            out.push("issuer is required".to_string());
        }
        out.extend(too_long("issuer", &self.issuer));
        match self.jwks_endpoint.as_str() {
            "" => out.push("jwksEndpoint is required".to_string()),
            e if !is_https_url(e) => {
                out.push(format!("jwksEndpoint {e:?} is not a full https:// URL (scheme, host and path)"));
            }
            _ => {}
        }
        out.extend(too_long("jwksEndpoint", &self.jwks_endpoint));
        if self.additional_claims.len() > JWT_CLAIMS_MAX {
            out.push(format!(
                "{} additional claims, AWS accepts at most {JWT_CLAIMS_MAX}",
                self.additional_claims.len()
            ));
        }
        for c in &self.additional_claims {
            let at = format!("additional claim {:?}", c.name);
            if c.name.is_empty() {
                out.push("an additional claim has no name".to_string());
            } else if JWT_DEFAULT_CLAIMS.contains(&c.name.as_str()) {
                out.push(format!(
                    "{at}: {} are always validated and cannot be additional claims",
                    JWT_DEFAULT_CLAIMS.join(", ")
                ));
            }
            match c.values.len() {
                0 => out.push(format!("{at} has no values")),
                n if n > JWT_CLAIMS_MAX => {
                    out.push(format!("{at} has {n} values, AWS accepts at most {JWT_CLAIMS_MAX}"));
                }
                _ => {}
            }
            for v in &c.values {
                out.extend(too_long(&format!("{at} value {v:?}"), v));
                if c.format == JwtClaimFormat::SpaceSeparatedValues && v.contains(' ') {
                    out.push(format!("{at} value {v:?} contains a space, which space-separated-values cannot hold"));
                }
            }
        }
        out
    }
}

/// `https://host/...` with a non-empty host.
fn is_https_url(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("https://") else { return false };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    !host.is_empty() && !s.chars().any(char::is_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid() -> JwtValidation {
        JwtValidation {
            jwks_endpoint: "https://idp.example.com/.well-known/jwks.json".into(),
            issuer: "https://idp.example.com".into(),
            additional_claims: vec![JwtClaim {
                format: JwtClaimFormat::SpaceSeparatedValues,
                name: "scope".into(),
                values: vec!["read:orders".into(), "write:orders".into()],
            }],
        }
    }

    #[test]
    fn formats_round_trip_and_unknown_ones_are_none() {
        for f in JwtClaimFormat::ALL {
            assert_eq!(JwtClaimFormat::parse(f.as_str()), Some(f));
        }
        assert_eq!(JwtClaimFormat::parse("SingleString"), None);
    }

    #[test]
    fn aws_limits_are_checked_each_with_its_reason() {
        assert_eq!(valid().problems(), Vec::<String>::new());
        let claim = |format, name: &str, values: Vec<String>| JwtClaim { format, name: name.into(), values };
        let long = "a".repeat(JWT_FIELD_MAX_LEN + 1);
        let cases: Vec<(JwtValidation, &str)> = vec![
            (JwtValidation { issuer: String::new(), ..valid() }, "issuer is required"),
            (JwtValidation { issuer: long.clone(), ..valid() }, "issuer is 257 characters"),
            (JwtValidation { jwks_endpoint: String::new(), ..valid() }, "jwksEndpoint is required"),
            (JwtValidation { jwks_endpoint: "http://idp/jwks".into(), ..valid() }, "not a full https:// URL"),
            (JwtValidation { jwks_endpoint: "https:///jwks".into(), ..valid() }, "not a full https:// URL"),
            (JwtValidation { jwks_endpoint: format!("https://idp/{long}"), ..valid() }, "jwksEndpoint is 269"),
            (
                JwtValidation {
                    additional_claims: (0..11)
                        .map(|i| claim(JwtClaimFormat::SingleString, &format!("c{i}"), vec!["v".into()]))
                        .collect(),
                    ..valid()
                },
                "11 additional claims",
            ),
            (
                JwtValidation {
                    additional_claims: vec![claim(JwtClaimFormat::SingleString, "", vec!["v".into()])],
                    ..valid()
                },
                "has no name",
            ),
            (
                JwtValidation {
                    additional_claims: vec![claim(JwtClaimFormat::SingleString, "exp", vec!["1".into()])],
                    ..valid()
                },
                "always validated",
            ),
            (
                JwtValidation {
                    additional_claims: vec![claim(JwtClaimFormat::StringArray, "groups", vec![])],
                    ..valid()
                },
                "has no values",
            ),
            (
                JwtValidation {
                    additional_claims: vec![claim(JwtClaimFormat::StringArray, "groups", vec!["g".into(); 11])],
                    ..valid()
                },
                "has 11 values",
            ),
            (
                JwtValidation {
                    additional_claims: vec![claim(JwtClaimFormat::SingleString, "sub", vec![long.clone()])],
                    ..valid()
                },
                "257 characters",
            ),
            (
                JwtValidation {
                    additional_claims: vec![claim(JwtClaimFormat::SpaceSeparatedValues, "scope", vec!["a b".into()])],
                    ..valid()
                },
                "contains a space",
            ),
        ];
        for (jwt, want) in cases {
            let got = jwt.problems();
            assert!(got.len() == 1 && got[0].contains(want), "{want}: {got:?}");
        }
        // A space is fine in the other formats.
        let spaced = JwtValidation {
            additional_claims: vec![claim(JwtClaimFormat::SingleString, "name", vec!["Ada Lovelace".into()])],
            ..valid()
        };
        assert_eq!(spaced.problems(), Vec::<String>::new());
    }
}
