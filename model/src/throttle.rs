//! Client-side AWS API rate limits, configured like ALBC's `--aws-api-throttle`:
//! `serviceID:operationRegex=rate:burst,...`, e.g.
//! `Elastic Load Balancing v2:RegisterTargets|DeregisterTargets=4:20`.
//!
//! Unlike ALBC, a call waits on the **first** matching rule only: ALBC made a call wait on every
//! matching limiter, so RegisterTargets also drained the `.*` bucket (its PR #4641). User rules
//! come before the defaults, so a user rule for an operation replaces the default one.

use regex::Regex;

/// Service IDs as the AWS SDKs name them (and as ALBC's flag expects).
pub const ELBV2_SERVICE: &str = "Elastic Load Balancing v2";
pub const EC2_SERVICE: &str = "EC2";
pub const ACM_SERVICE: &str = "ACM";
pub const WAFV2_SERVICE: &str = "WAFV2";
pub const WAF_REGIONAL_SERVICE: &str = "WAF Regional";
pub const SHIELD_SERVICE: &str = "Shield";
pub const ROUTE53_SERVICE: &str = "Route 53";

/// One rate limit.
#[derive(Clone, Debug)]
pub struct ThrottleRule {
    pub service: String,
    pub operations: Regex,
    /// Tokens per second.
    pub rate: f64,
    /// Bucket size.
    pub burst: u32,
}

impl ThrottleRule {
    pub fn matches(&self, service: &str, operation: &str) -> bool {
        self.service == service && self.operations.is_match(operation)
    }
}

/// A `--aws-api-throttle` entry that does not parse.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "invalid --aws-api-throttle entry {entry:?}: {why}; expected serviceID:operationRegex=rate:burst, e.g. \"Elastic Load Balancing v2:RegisterTargets|DeregisterTargets=4:20\""
)]
pub struct InvalidThrottle {
    pub entry: String,
    pub why: String,
}

fn rule(service: &str, ops: &str, rate: f64, burst: u32) -> ThrottleRule {
    ThrottleRule { service: service.into(), operations: Regex::new(ops).expect("static regex"), rate, burst }
}

/// Defaults: ALBC's proven register/deregister limit, AWS's documented non-mutating ELBv2
/// bucket (40 tokens, 10/s) for reads, and ALBC's limit for other ELBv2 writes; EC2 reads get a
/// generous bucket since EC2 is only used for VPC/subnet/ENI/SG lookups; ACM (certificate
/// discovery, reads only, cached) stays under its documented per-account limits (ListCertificates
/// 8/s, DescribeCertificate 10/s). WAFv2 gets ALBC's limits (association changes 0.5/s, reads 1/s):
/// AWS's WAF quotas are low and shared with the console; WAF Classic (WAF Regional) the same, as in
/// ALBC. Shield (a protection read per ALB that asks for one, a subscription read per pass) gets
/// the WAF read limit. Route 53 (validation records of requested certificates, a few calls per
/// certificate) stays under its 5 requests per second per account.
pub fn default_rules() -> Vec<ThrottleRule> {
    vec![
        rule(ELBV2_SERVICE, "^(RegisterTargets|DeregisterTargets)$", 4.0, 20),
        rule(ELBV2_SERVICE, "^Describe", 10.0, 40),
        rule(ELBV2_SERVICE, ".*", 3.0, 20),
        rule(EC2_SERVICE, "^Describe", 20.0, 100),
        rule(EC2_SERVICE, ".*", 5.0, 50),
        rule(ACM_SERVICE, ".*", 4.0, 8),
        rule(WAFV2_SERVICE, "^(AssociateWebACL|DisassociateWebACL)$", 0.5, 1),
        rule(WAFV2_SERVICE, ".*", 1.0, 1),
        rule(WAF_REGIONAL_SERVICE, "^(AssociateWebACL|DisassociateWebACL)$", 0.5, 1),
        rule(WAF_REGIONAL_SERVICE, ".*", 1.0, 1),
        rule(SHIELD_SERVICE, ".*", 1.0, 2),
        rule(ROUTE53_SERVICE, ".*", 2.0, 4),
    ]
}

/// Parses the flag value; the result is the user's rules followed by the defaults.
pub fn parse_rules(flag: &str) -> Result<Vec<ThrottleRule>, InvalidThrottle> {
    let mut out = Vec::new();
    for entry in flag.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let err = |why: &str| InvalidThrottle { entry: entry.to_string(), why: why.to_string() };
        let (head, limits) = entry.rsplit_once('=').ok_or_else(|| err("missing '=rate:burst'"))?;
        let (service, ops) = head.split_once(':').ok_or_else(|| err("missing ':' after the service ID"))?;
        let (rate, burst) = limits.split_once(':').ok_or_else(|| err("missing ':burst' after the rate"))?;
        let rate: f64 = rate.trim().parse().map_err(|_| err("rate is not a number"))?;
        let burst: u32 = burst.trim().parse().map_err(|_| err("burst is not a whole number"))?;
        if !(rate > 0.0 && rate.is_finite()) || burst == 0 {
            return Err(err("rate and burst must be positive"));
        }
        let operations =
            Regex::new(&format!("^(?:{})$", ops.trim())).map_err(|e| err(&format!("bad operation regex: {e}")))?;
        out.push(ThrottleRule { service: service.trim().to_string(), operations, rate, burst });
    }
    out.extend(default_rules());
    Ok(out)
}

/// Index of the rule a call waits on, if any.
pub fn rule_for(rules: &[ThrottleRule], service: &str, operation: &str) -> Option<usize> {
    rules.iter().position(|r| r.matches(service, operation))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_first_match_wins() {
        let r = default_rules();
        assert_eq!(rule_for(&r, ELBV2_SERVICE, "RegisterTargets"), Some(0));
        assert_eq!(rule_for(&r, ELBV2_SERVICE, "DeregisterTargets"), Some(0));
        assert_eq!(rule_for(&r, ELBV2_SERVICE, "DescribeTargetHealth"), Some(1));
        assert_eq!(rule_for(&r, ELBV2_SERVICE, "ModifyTargetGroup"), Some(2));
        assert_eq!(rule_for(&r, EC2_SERVICE, "DescribeSubnets"), Some(3));
        assert_eq!(rule_for(&r, ACM_SERVICE, "ListCertificates"), Some(5));
        assert_eq!(rule_for(&r, WAFV2_SERVICE, "AssociateWebACL"), Some(6));
        assert_eq!(rule_for(&r, WAFV2_SERVICE, "GetWebACLForResource"), Some(7));
        assert_eq!(rule_for(&r, "STS", "AssumeRole"), None);
    }

    #[test]
    fn user_rules_precede_defaults() {
        let r = parse_rules("Elastic Load Balancing v2:RegisterTargets|DeregisterTargets=10:50, Elastic Load Balancing v2:Describe.*=20:80").unwrap();
        assert_eq!(r.len(), 2 + default_rules().len());
        let i = rule_for(&r, ELBV2_SERVICE, "RegisterTargets").unwrap();
        assert_eq!((r[i].rate, r[i].burst), (10.0, 50));
        let i = rule_for(&r, ELBV2_SERVICE, "DescribeTargetGroups").unwrap();
        assert_eq!((r[i].rate, r[i].burst), (20.0, 80));
        // Anchored: "Register" alone does not match "RegisterTargets".
        let r = parse_rules("Elastic Load Balancing v2:Register=1:1").unwrap();
        assert_eq!(rule_for(&r, ELBV2_SERVICE, "RegisterTargets"), Some(1));
        assert_eq!(parse_rules("").unwrap().len(), default_rules().len());
    }

    #[test]
    fn invalid_entries_are_explained() {
        for (flag, why) in [
            ("RegisterTargets=4:20", "missing ':' after the service ID"),
            ("Elastic Load Balancing v2:RegisterTargets", "missing '=rate:burst'"),
            ("EC2:Describe.*=4", "missing ':burst'"),
            ("EC2:Describe.*=x:4", "rate is not a number"),
            ("EC2:Describe.*=4:-1", "burst is not a whole number"),
            ("EC2:Describe.*=0:4", "must be positive"),
            ("EC2:(=4:4", "bad operation regex"),
        ] {
            let e = parse_rules(flag).unwrap_err();
            assert!(e.to_string().contains(why), "{flag}: {e}");
        }
    }
}
