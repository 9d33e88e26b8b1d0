//! Conversions for listener rules: conditions, the authenticate and JWT actions, rules. Pure.

use aws_sdk_elasticloadbalancingv2::types as sdk;
use lbc_model::lb::{
    AuthenticateCognito, AuthenticateOidc, Condition, JwtClaim, JwtClaimFormat, JwtValidation, Observed,
    QueryStringPair, Rewrite, Rule, Tags, Transform, TransformKind,
};
use std::collections::BTreeMap;

fn owned(v: &[String]) -> Vec<String> {
    v.to_vec()
}

pub fn condition(c: &Condition) -> sdk::RuleCondition {
    let b = sdk::RuleCondition::builder().field(c.field());
    match c {
        Condition::HostHeader(v) => {
            b.host_header_config(sdk::HostHeaderConditionConfig::builder().set_values(Some(owned(v))).build())
        }
        Condition::HostHeaderRegex(v) => {
            b.host_header_config(sdk::HostHeaderConditionConfig::builder().set_regex_values(Some(owned(v))).build())
        }
        Condition::PathPattern(v) => {
            b.path_pattern_config(sdk::PathPatternConditionConfig::builder().set_values(Some(owned(v))).build())
        }
        Condition::PathPatternRegex(v) => {
            b.path_pattern_config(sdk::PathPatternConditionConfig::builder().set_regex_values(Some(owned(v))).build())
        }
        Condition::HttpHeader { name, values } => b.http_header_config(
            sdk::HttpHeaderConditionConfig::builder().http_header_name(name).set_values(Some(owned(values))).build(),
        ),
        Condition::HttpHeaderRegex { name, values } => b.http_header_config(
            sdk::HttpHeaderConditionConfig::builder()
                .http_header_name(name)
                .set_regex_values(Some(owned(values)))
                .build(),
        ),
        Condition::HttpRequestMethod(v) => b.http_request_method_config(
            sdk::HttpRequestMethodConditionConfig::builder().set_values(Some(owned(v))).build(),
        ),
        Condition::QueryString(pairs) => {
            let values = pairs
                .iter()
                .map(|p| sdk::QueryStringKeyValuePair::builder().set_key(p.key.clone()).value(&p.value).build())
                .collect();
            b.query_string_config(sdk::QueryStringConditionConfig::builder().set_values(Some(values)).build())
        }
        Condition::SourceIp(v) => {
            b.source_ip_config(sdk::SourceIpConditionConfig::builder().set_values(Some(owned(v))).build())
        }
    }
    .build()
}

/// A reported condition; `None` for fields the model does not have. Host and path conditions
/// may come in the legacy `Values` form (rules created by older tools): read both. A host, path
/// or header config with `RegexValues` is a regex condition (AWS refuses a config with both).
pub fn condition_from(c: &sdk::RuleCondition) -> Option<Condition> {
    let legacy = || owned(c.values());
    Some(match c.field()? {
        "host-header" => match c.host_header_config() {
            Some(h) if !h.regex_values().is_empty() => Condition::HostHeaderRegex(owned(h.regex_values())),
            h => Condition::HostHeader(h.map(|h| owned(h.values())).unwrap_or_else(legacy)),
        },
        "path-pattern" => match c.path_pattern_config() {
            Some(p) if !p.regex_values().is_empty() => Condition::PathPatternRegex(owned(p.regex_values())),
            p => Condition::PathPattern(p.map(|p| owned(p.values())).unwrap_or_else(legacy)),
        },
        "http-header" => {
            let h = c.http_header_config()?;
            let name = h.http_header_name()?.to_string();
            if h.regex_values().is_empty() {
                Condition::HttpHeader { name, values: owned(h.values()) }
            } else {
                Condition::HttpHeaderRegex { name, values: owned(h.regex_values()) }
            }
        }
        "http-request-method" => Condition::HttpRequestMethod(owned(c.http_request_method_config()?.values())),
        "query-string" => Condition::QueryString(
            c.query_string_config()?
                .values()
                .iter()
                .map(|p| QueryStringPair {
                    key: p.key().map(str::to_string),
                    value: p.value().unwrap_or_default().to_string(),
                })
                .collect(),
        ),
        "source-ip" => Condition::SourceIp(owned(c.source_ip_config()?.values())),
        _ => return None,
    })
}

/// A rule's transforms as ELBv2 takes them.
pub fn transforms(list: &[Transform]) -> Vec<sdk::RuleTransform> {
    list.iter()
        .map(|t| {
            let rewrites: Vec<sdk::RewriteConfig> = t
                .rewrites
                .iter()
                .map(|r| sdk::RewriteConfig::builder().regex(&r.regex).replace(&r.replace).build())
                .collect();
            let b = sdk::RuleTransform::builder().r#type(sdk::TransformTypeEnum::from(t.kind.as_str()));
            match t.kind {
                TransformKind::HostHeaderRewrite => b.host_header_rewrite_config(
                    sdk::HostHeaderRewriteConfig::builder().set_rewrites(Some(rewrites)).build(),
                ),
                TransformKind::UrlRewrite => {
                    b.url_rewrite_config(sdk::UrlRewriteConfig::builder().set_rewrites(Some(rewrites)).build())
                }
            }
            .build()
        })
        .collect()
}

/// A reported transform; `None` for a kind the model does not have.
pub fn transform_from(t: &sdk::RuleTransform) -> Option<Transform> {
    let kind = TransformKind::parse(t.r#type()?.as_str())?;
    let rewrites = match kind {
        TransformKind::HostHeaderRewrite => t.host_header_rewrite_config().map(|c| c.rewrites()),
        TransformKind::UrlRewrite => t.url_rewrite_config().map(|c| c.rewrites()),
    }
    .unwrap_or_default()
    .iter()
    .map(|r| Rewrite {
        regex: r.regex().unwrap_or_default().to_string(),
        replace: r.replace().unwrap_or_default().to_string(),
    })
    .collect();
    Some(Transform { kind, rewrites })
}

/// `jwt-validation`.
pub fn jwt(j: &JwtValidation) -> sdk::JwtValidationActionConfig {
    let claims = j
        .additional_claims
        .iter()
        .map(|c| {
            sdk::JwtValidationActionAdditionalClaim::builder()
                .format(sdk::JwtValidationActionAdditionalClaimFormatEnum::from(c.format.as_str()))
                .name(&c.name)
                .set_values(Some(owned(&c.values)))
                .build()
        })
        .collect();
    sdk::JwtValidationActionConfig::builder()
        .jwks_endpoint(&j.jwks_endpoint)
        .issuer(&j.issuer)
        .set_additional_claims(Some(claims))
        .build()
}

/// A reported JWT validation; `None` when a claim's format is one the model does not know (the
/// rule is then read without the action, and rewritten from the desired state).
pub fn jwt_from(c: &sdk::JwtValidationActionConfig) -> Option<JwtValidation> {
    let claims = c
        .additional_claims()
        .iter()
        .map(|a| {
            Some(JwtClaim {
                format: JwtClaimFormat::parse(a.format()?.as_str())?,
                name: a.name().unwrap_or_default().to_string(),
                values: owned(a.values()),
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(JwtValidation {
        jwks_endpoint: c.jwks_endpoint().unwrap_or_default().to_string(),
        issuer: c.issuer().unwrap_or_default().to_string(),
        additional_claims: claims,
    })
}

fn params(m: &BTreeMap<String, String>) -> Option<std::collections::HashMap<String, String>> {
    (!m.is_empty()).then(|| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
}

fn params_from(m: Option<&std::collections::HashMap<String, String>>) -> BTreeMap<String, String> {
    m.map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()).unwrap_or_default()
}

fn timeout(s: Option<u64>) -> Option<i64> {
    s.map(|s| i64::try_from(s).unwrap_or(i64::MAX))
}

/// `authenticate-oidc`. Without a client secret the request asks AWS to keep the one it has
/// (`UseExistingClientSecret`): how a rule whose secret we never read back is modified.
pub fn oidc(o: &AuthenticateOidc) -> sdk::AuthenticateOidcActionConfig {
    sdk::AuthenticateOidcActionConfig::builder()
        .issuer(&o.issuer)
        .authorization_endpoint(&o.authorization_endpoint)
        .token_endpoint(&o.token_endpoint)
        .user_info_endpoint(&o.user_info_endpoint)
        .client_id(&o.client_id)
        .set_client_secret(o.client_secret.clone())
        .set_use_existing_client_secret(o.client_secret.is_none().then_some(true))
        .set_scope(o.scope.clone())
        .set_session_cookie_name(o.session_cookie_name.clone())
        .set_session_timeout(timeout(o.session_timeout_seconds))
        .set_on_unauthenticated_request(
            o.on_unauthenticated_request.as_deref().map(sdk::AuthenticateOidcActionConditionalBehaviorEnum::from),
        )
        .set_authentication_request_extra_params(params(&o.extra_params))
        .build()
}

pub fn oidc_from(c: &sdk::AuthenticateOidcActionConfig) -> AuthenticateOidc {
    let s = |v: Option<&str>| v.unwrap_or_default().to_string();
    AuthenticateOidc {
        issuer: s(c.issuer()),
        authorization_endpoint: s(c.authorization_endpoint()),
        token_endpoint: s(c.token_endpoint()),
        user_info_endpoint: s(c.user_info_endpoint()),
        client_id: s(c.client_id()),
        // AWS does not return it; an emulator might.
        client_secret: None,
        client_secret_digest: None,
        scope: c.scope().map(str::to_string),
        session_cookie_name: c.session_cookie_name().map(str::to_string),
        session_timeout_seconds: c.session_timeout().and_then(|t| u64::try_from(t).ok()),
        on_unauthenticated_request: c.on_unauthenticated_request().map(|b| b.as_str().to_string()),
        extra_params: params_from(c.authentication_request_extra_params()),
    }
}

pub fn cognito(o: &AuthenticateCognito) -> sdk::AuthenticateCognitoActionConfig {
    sdk::AuthenticateCognitoActionConfig::builder()
        .user_pool_arn(&o.user_pool_arn)
        .user_pool_client_id(&o.user_pool_client_id)
        .user_pool_domain(&o.user_pool_domain)
        .set_scope(o.scope.clone())
        .set_session_cookie_name(o.session_cookie_name.clone())
        .set_session_timeout(timeout(o.session_timeout_seconds))
        .set_on_unauthenticated_request(
            o.on_unauthenticated_request.as_deref().map(sdk::AuthenticateCognitoActionConditionalBehaviorEnum::from),
        )
        .set_authentication_request_extra_params(params(&o.extra_params))
        .build()
}

pub fn cognito_from(c: &sdk::AuthenticateCognitoActionConfig) -> AuthenticateCognito {
    let s = |v: Option<&str>| v.unwrap_or_default().to_string();
    AuthenticateCognito {
        user_pool_arn: s(c.user_pool_arn()),
        user_pool_client_id: s(c.user_pool_client_id()),
        user_pool_domain: s(c.user_pool_domain()),
        scope: c.scope().map(str::to_string),
        session_cookie_name: c.session_cookie_name().map(str::to_string),
        session_timeout_seconds: c.session_timeout().and_then(|t| u64::try_from(t).ok()),
        on_unauthenticated_request: c.on_unauthenticated_request().map(|b| b.as_str().to_string()),
        extra_params: params_from(c.authentication_request_extra_params()),
    }
}

/// A reported non-default rule (the default rule is the listener's default actions: `None`).
/// Actions come back sorted by `Order`. Tags are filled in by the caller (DescribeTags).
pub fn rule_from(r: &sdk::Rule) -> Option<Observed<Rule>> {
    if r.is_default() == Some(true) {
        return None;
    }
    let priority = r.priority()?.parse().ok()?;
    let mut actions: Vec<&sdk::Action> = r.actions().iter().collect();
    actions.sort_by_key(|a| a.order().unwrap_or(i32::MAX));
    let spec = Rule {
        priority,
        conditions: r.conditions().iter().filter_map(condition_from).collect(),
        actions: actions.into_iter().filter_map(super::convert::action_from).collect(),
        transforms: r.transforms().iter().filter_map(transform_from).collect(),
        tags: Tags::new(),
    };
    Some(Observed { id: r.rule_arn()?.to_string(), spec })
}

#[cfg(test)]
mod tests {
    use super::super::convert::{action, action_from, actions};
    use super::*;
    use lbc_model::lb::Action;

    fn conditions() -> Vec<Condition> {
        vec![
            Condition::HostHeader(vec!["a.example".into(), "*.b.example".into()]),
            Condition::HostHeaderRegex(vec!["^[a-z]+\\.example$".into()]),
            Condition::PathPattern(vec!["/api/*".into()]),
            Condition::PathPatternRegex(vec!["^/v[0-9]+/.*$".into(), "^/legacy$".into()]),
            Condition::HttpHeader { name: "X-Env".into(), values: vec!["prod".into()] },
            Condition::HttpHeaderRegex { name: "User-Agent".into(), values: vec!["^curl/[0-9.]+$".into()] },
            Condition::HttpRequestMethod(vec!["GET".into(), "HEAD".into()]),
            Condition::QueryString(vec![
                QueryStringPair { key: Some("v".into()), value: "2".into() },
                QueryStringPair { key: None, value: "debug".into() },
            ]),
            Condition::SourceIp(vec!["10.0.0.0/8".into()]),
        ]
    }

    fn oidc_action(secret: Option<&str>) -> AuthenticateOidc {
        AuthenticateOidc {
            issuer: "https://idp".into(),
            authorization_endpoint: "https://idp/auth".into(),
            token_endpoint: "https://idp/token".into(),
            user_info_endpoint: "https://idp/userinfo".into(),
            client_id: "app".into(),
            client_secret: secret.map(str::to_string),
            client_secret_digest: None,
            scope: Some("openid email".into()),
            session_cookie_name: Some("AWSELBAuth".into()),
            session_timeout_seconds: Some(604_800),
            on_unauthenticated_request: Some("authenticate".into()),
            extra_params: [("prompt".to_string(), "login".to_string())].into(),
        }
    }

    #[test]
    fn conditions_round_trip() {
        for c in conditions() {
            let s = condition(&c);
            assert_eq!(s.field(), Some(c.field()));
            assert_eq!(condition_from(&s), Some(c));
        }
        let legacy = sdk::RuleCondition::builder().field("path-pattern").values("/old").build();
        assert_eq!(condition_from(&legacy), Some(Condition::PathPattern(vec!["/old".into()])));
        // Regex values travel in RegexValues, never in Values.
        let s = condition(&Condition::PathPatternRegex(vec!["^/a$".into()]));
        let cfg = s.path_pattern_config().unwrap();
        assert_eq!((cfg.values(), cfg.regex_values()), (&[][..], &["^/a$".to_string()][..]));
        let s = condition(&Condition::HostHeader(vec!["a.example".into()]));
        assert!(s.host_header_config().unwrap().regex_values().is_empty());
        let unknown = sdk::RuleCondition::builder().field("some-future-field").build();
        assert_eq!(condition_from(&unknown), None);
    }

    #[test]
    fn authenticate_actions_round_trip_without_the_secret() {
        let with_secret = Action::AuthenticateOidc(oidc_action(Some("s3cret")));
        let s = action(&with_secret, Some(1)).unwrap();
        let cfg = s.authenticate_oidc_config().unwrap();
        assert_eq!((cfg.client_secret(), cfg.use_existing_client_secret()), (Some("s3cret"), None));
        assert_eq!(action_from(&s), Some(with_secret.without_secrets()));
        // No secret in the model: keep AWS's.
        let s = action(&Action::AuthenticateOidc(oidc_action(None)), None).unwrap();
        assert_eq!(s.authenticate_oidc_config().unwrap().use_existing_client_secret(), Some(true));
        let cognito = Action::AuthenticateCognito(AuthenticateCognito {
            user_pool_arn: "arn:aws:cognito-idp:us-east-1:123456789012:userpool/us-east-1_abc".into(),
            user_pool_client_id: "client".into(),
            user_pool_domain: "auth.example".into(),
            scope: None,
            session_cookie_name: None,
            session_timeout_seconds: Some(60),
            on_unauthenticated_request: Some("deny".into()),
            extra_params: BTreeMap::new(),
        });
        assert_eq!(action_from(&action(&cognito, None).unwrap()), Some(cognito));
    }

    #[test]
    fn transforms_round_trip_in_their_own_config() {
        let list = vec![
            Transform {
                kind: TransformKind::HostHeaderRewrite,
                rewrites: vec![Rewrite { regex: "^a\\.example$".into(), replace: "b.example".into() }],
            },
            Transform {
                kind: TransformKind::UrlRewrite,
                rewrites: vec![Rewrite { regex: "^/v1/(.*)$".into(), replace: "/$1".into() }],
            },
        ];
        let sdk_list = transforms(&list);
        assert!(sdk_list[0].url_rewrite_config().is_none() && sdk_list[1].host_header_rewrite_config().is_none());
        assert_eq!(sdk_list[1].r#type().map(|t| t.as_str()), Some("url-rewrite"));
        assert_eq!(sdk_list.iter().filter_map(transform_from).collect::<Vec<_>>(), list);
        let future = sdk::RuleTransform::builder().r#type("query-rewrite".into()).build();
        assert_eq!(transform_from(&future), None);
    }

    #[test]
    fn jwt_validation_round_trips_and_an_unknown_claim_format_is_not_guessed() {
        let jwt = JwtValidation {
            jwks_endpoint: "https://idp.example/jwks".into(),
            issuer: "https://idp.example".into(),
            additional_claims: vec![
                JwtClaim { format: JwtClaimFormat::StringArray, name: "groups".into(), values: vec!["ops".into()] },
                JwtClaim {
                    format: JwtClaimFormat::SpaceSeparatedValues,
                    name: "scope".into(),
                    values: vec!["read".into(), "write".into()],
                },
            ],
        };
        let s = action(&Action::JwtValidation(jwt.clone()), Some(1)).unwrap();
        assert_eq!(s.r#type(), Some(&sdk::ActionTypeEnum::JwtValidation));
        let claims = s.jwt_validation_config().unwrap().additional_claims();
        assert_eq!(claims[1].format().map(|f| f.as_str()), Some("space-separated-values"));
        assert_eq!(action_from(&s), Some(Action::JwtValidation(jwt)));
        let future = sdk::JwtValidationActionConfig::builder()
            .jwks_endpoint("https://idp/jwks")
            .issuer("idp")
            .additional_claims(
                sdk::JwtValidationActionAdditionalClaim::builder().format("json-object".into()).name("x").build(),
            )
            .build();
        assert_eq!(jwt_from(&future), None);
    }

    #[test]
    fn rules_round_trip_and_the_default_rule_is_skipped() {
        let acts = vec![
            Action::AuthenticateOidc(oidc_action(None)),
            Action::FixedResponse { status_code: "200".into(), content_type: None, message_body: None },
        ];
        let mut sdk_actions = actions(&acts).unwrap();
        sdk_actions.reverse(); // AWS orders by `Order`, not by position
        let r = sdk::Rule::builder()
            .rule_arn("arn:rule")
            .priority("7")
            .set_conditions(Some(conditions().iter().map(condition).collect()))
            .set_actions(Some(sdk_actions))
            .is_default(false)
            .build();
        let got = rule_from(&r).unwrap();
        assert_eq!(got.id, "arn:rule");
        assert_eq!(
            got.spec,
            Rule { priority: 7, conditions: conditions(), actions: acts, transforms: vec![], tags: Tags::new() }
        );
        let default = sdk::Rule::builder().rule_arn("arn:d").priority("default").is_default(true).build();
        assert_eq!(rule_from(&default), None);
    }
}
