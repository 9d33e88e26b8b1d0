//! Building SDK clients: region, endpoint overrides (`--aws-api-endpoints`), credentials.
//! No instance-metadata lookups happen when region and VPC are given, as on RKE2 nodes where
//! IMDS is often unreachable from pods.

use aws_config::BehaviorVersion;
use aws_config::retry::RetryConfig;
use aws_credential_types::provider::SharedCredentialsProvider;
use std::collections::HashMap;

/// Endpoint overrides by service. Keys accept ALBC's service IDs (`Elastic Load Balancing v2`,
/// `EC2`, `STS`, `ACM`, `WAFV2`, `WAF Regional`, `Shield`, `Route 53`) and the short endpoint names
/// (`elasticloadbalancing`, `ec2`, `sts`, `acm`, `wafv2`, `waf-regional`, `shield`, `route53`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Endpoints {
    pub elbv2: Option<String>,
    pub ec2: Option<String>,
    pub sts: Option<String>,
    pub acm: Option<String>,
    pub wafv2: Option<String>,
    pub waf_regional: Option<String>,
    pub shield: Option<String>,
    pub route53: Option<String>,
}

/// An `--aws-api-endpoints` value that does not parse.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "invalid --aws-api-endpoints entry {entry:?}: {why}; expected serviceID=URL pairs separated by commas, \
     e.g. \"Elastic Load Balancing v2=http://127.0.0.1:4566,EC2=http://127.0.0.1:4566\""
)]
pub struct InvalidEndpoints {
    pub entry: String,
    pub why: String,
}

impl Endpoints {
    pub fn parse(flag: &str) -> Result<Self, InvalidEndpoints> {
        let mut out = Self::default();
        for entry in flag.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let err = |why: &str| InvalidEndpoints { entry: entry.into(), why: why.into() };
            let (svc, url) = entry.split_once('=').ok_or_else(|| err("missing '='"))?;
            let url = url.trim();
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(err("the URL must start with http:// or https://"));
            }
            let slot = match svc.trim().to_ascii_lowercase().as_str() {
                "elastic load balancing v2" | "elasticloadbalancing" | "elbv2" => &mut out.elbv2,
                "ec2" => &mut out.ec2,
                "sts" => &mut out.sts,
                "acm" => &mut out.acm,
                "wafv2" => &mut out.wafv2,
                "waf regional" | "waf-regional" => &mut out.waf_regional,
                "shield" => &mut out.shield,
                "route 53" | "route53" => &mut out.route53,
                _ => {
                    return Err(err(
                        "unknown service (known: Elastic Load Balancing v2, EC2, STS, ACM, WAFV2, WAF Regional, \
                         Shield, Route 53)",
                    ));
                }
            };
            *slot = Some(url.to_string());
        }
        Ok(out)
    }

    /// Same URL for every service (the local emulator).
    pub fn all(url: &str) -> Self {
        let u = || Some(url.to_string());
        Self { elbv2: u(), ec2: u(), sts: u(), acm: u(), wafv2: u(), waf_regional: u(), shield: u(), route53: u() }
    }
}

/// Inputs for the SDK clients.
pub struct ClientSettings {
    pub region: String,
    pub endpoints: Endpoints,
    /// `None`: the SDK's default credential chain (env, profile, web identity, ...).
    pub credentials: Option<SharedCredentialsProvider>,
}

/// The SDK clients, with SDK retries off: [`crate::call::CallRunner`] retries so that every
/// attempt is throttled and counted.
pub struct Clients {
    pub elbv2: aws_sdk_elasticloadbalancingv2::Client,
    pub ec2: aws_sdk_ec2::Client,
    pub acm: aws_sdk_acm::Client,
    pub wafv2: aws_sdk_wafv2::Client,
    pub waf_regional: aws_sdk_wafregional::Client,
    pub shield: aws_sdk_shield::Client,
    /// Validation records of the ACM certificates the controller requests.
    pub route53: aws_sdk_route53::Client,
    /// `doctor` (GetCallerIdentity) and assumed roles (AssumeRole).
    pub sts: aws_sdk_sts::Client,
    /// What the clients above were built from, for clients built later with other credentials
    /// ([`Clients::elbv2_with`]).
    shared: aws_config::SdkConfig,
    elbv2_endpoint: Option<String>,
}

impl Clients {
    /// An ELBv2 client like [`Clients::elbv2`] (region, endpoint, no SDK retries) signing with
    /// `credentials` instead; the SDK's identity cache keeps them until shortly before expiry.
    pub fn elbv2_with(&self, credentials: SharedCredentialsProvider) -> aws_sdk_elasticloadbalancingv2::Client {
        let mut b =
            aws_sdk_elasticloadbalancingv2::config::Builder::from(&self.shared).credentials_provider(credentials);
        if let Some(u) = &self.elbv2_endpoint {
            b = b.endpoint_url(u);
        }
        aws_sdk_elasticloadbalancingv2::Client::from_conf(b.build())
    }
}

pub async fn build_clients(s: &ClientSettings) -> Clients {
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .region(aws_config::Region::new(s.region.clone()))
        .retry_config(RetryConfig::disabled());
    if let Some(c) = &s.credentials {
        loader = loader.credentials_provider(c.clone());
    }
    let shared = loader.load().await;
    let mut elb = aws_sdk_elasticloadbalancingv2::config::Builder::from(&shared);
    if let Some(u) = &s.endpoints.elbv2 {
        elb = elb.endpoint_url(u);
    }
    let mut ec2 = aws_sdk_ec2::config::Builder::from(&shared);
    if let Some(u) = &s.endpoints.ec2 {
        ec2 = ec2.endpoint_url(u);
    }
    let mut acm = aws_sdk_acm::config::Builder::from(&shared);
    if let Some(u) = &s.endpoints.acm {
        acm = acm.endpoint_url(u);
    }
    let mut waf = aws_sdk_wafv2::config::Builder::from(&shared);
    if let Some(u) = &s.endpoints.wafv2 {
        waf = waf.endpoint_url(u);
    }
    let mut waf_regional = aws_sdk_wafregional::config::Builder::from(&shared);
    if let Some(u) = &s.endpoints.waf_regional {
        waf_regional = waf_regional.endpoint_url(u);
    }
    // The load balancer's region, as ALBC's client: the SDK's endpoint rules resolve Shield's endpoint.
    let mut shield = aws_sdk_shield::config::Builder::from(&shared);
    if let Some(u) = &s.endpoints.shield {
        shield = shield.endpoint_url(u);
    }
    let mut route53 = aws_sdk_route53::config::Builder::from(&shared);
    if let Some(u) = &s.endpoints.route53 {
        route53 = route53.endpoint_url(u);
    }
    let mut sts = aws_sdk_sts::config::Builder::from(&shared);
    if let Some(u) = &s.endpoints.sts {
        sts = sts.endpoint_url(u);
    }
    Clients {
        sts: aws_sdk_sts::Client::from_conf(sts.build()),
        elbv2: aws_sdk_elasticloadbalancingv2::Client::from_conf(elb.build()),
        ec2: aws_sdk_ec2::Client::from_conf(ec2.build()),
        acm: aws_sdk_acm::Client::from_conf(acm.build()),
        wafv2: aws_sdk_wafv2::Client::from_conf(waf.build()),
        waf_regional: aws_sdk_wafregional::Client::from_conf(waf_regional.build()),
        shield: aws_sdk_shield::Client::from_conf(shield.build()),
        route53: aws_sdk_route53::Client::from_conf(route53.build()),
        elbv2_endpoint: s.endpoints.elbv2.clone(),
        shared,
    }
}

/// Parses `k=v,k=v` maps (`--default-tags` style). `flag` names the flag in errors. An entry
/// without `=` or with an empty key is an error, never dropped: a tag silently missing from every
/// resource is found months later.
pub fn parse_map(flag: &str, value: &str) -> Result<HashMap<String, String>, String> {
    let mut out = HashMap::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        match entry.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                out.insert(k.trim().to_string(), v.trim().to_string());
            }
            _ => {
                return Err(format!(
                    "invalid {flag} entry {entry:?}: expected key=value pairs separated by commas, e.g. {flag}=team=core,env=prod"
                ));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_accept_albc_ids_and_short_names() {
        let e = Endpoints::parse("Elastic Load Balancing v2=http://127.0.0.1:4566, ec2=https://ec2.internal").unwrap();
        assert_eq!(e.elbv2.as_deref(), Some("http://127.0.0.1:4566"));
        assert_eq!(e.ec2.as_deref(), Some("https://ec2.internal"));
        assert_eq!(e.sts, None);
        assert_eq!(Endpoints::parse("ACM=http://acm.local").unwrap().acm.as_deref(), Some("http://acm.local"));
        assert_eq!(Endpoints::parse("WAFV2=http://waf.local").unwrap().wafv2.as_deref(), Some("http://waf.local"));
        assert_eq!(Endpoints::parse("").unwrap(), Endpoints::default());
        assert!(Endpoints::parse("S3=http://x").unwrap_err().to_string().contains("unknown service"));
        assert!(Endpoints::parse("EC2=ftp://x").unwrap_err().to_string().contains("http://"));
        assert!(Endpoints::parse("EC2").unwrap_err().to_string().contains("missing '='"));
    }

    #[test]
    fn maps_parse() {
        let m = parse_map("--default-tags", "team=core, env=prod,empty=").unwrap();
        assert_eq!(m.get("team").map(String::as_str), Some("core"));
        assert_eq!(m.get("empty").map(String::as_str), Some(""));
        assert_eq!(m.len(), 3);
        assert!(parse_map("--default-tags", "").unwrap().is_empty());
        for bad in ["team=core,bad", "=v", "a=b, =c"] {
            let e = parse_map("--default-tags", bad).unwrap_err();
            assert!(e.contains("--default-tags") && e.contains("key=value"), "{bad}: {e}");
        }
    }
}
