//! Check 10: throttle headroom. A cold start registers every target of every target group; with
//! the client-side ELBv2 write bucket (`--aws-api-throttle`, default 4/s burst 20 for
//! Register/DeregisterTargets) that takes `(calls - burst) / rate` seconds before the last pod is
//! in. Warn when that is minutes.

use super::Verdict;
use crate::throttle::{ELBV2_SERVICE, ThrottleRule, rule_for};

pub const CHECK: &str = "throttle";
/// A cold start slower than this is worth a warning.
pub const SLOW_SECS: f64 = 60.0;

/// RegisterTargets calls to fill target groups with these target counts, `batch` per call.
pub fn register_calls(targets_per_group: &[usize], batch: usize) -> usize {
    let batch = batch.max(1);
    targets_per_group.iter().map(|n| n.div_ceil(batch)).sum()
}

/// Seconds a bucket of `rate`/s with `burst` tokens needs for `calls` calls.
pub fn drain_secs(calls: usize, rate: f64, burst: u32) -> f64 {
    if rate <= 0.0 {
        return f64::INFINITY;
    }
    (calls.saturating_sub(burst as usize)) as f64 / rate
}

pub fn check(rules: &[ThrottleRule], targets_per_group: &[usize], batch: usize) -> Verdict {
    let groups = targets_per_group.len();
    let targets: usize = targets_per_group.iter().sum();
    let object = format!("{ELBV2_SERVICE} RegisterTargets bucket");
    let Some(rule) = rule_for(rules, ELBV2_SERVICE, "RegisterTargets").map(|i| &rules[i]) else {
        return Verdict::ok(CHECK, object, "no client-side limit on RegisterTargets (AWS's own limits apply)");
    };
    let calls = register_calls(targets_per_group, batch);
    // Every group also needs a DescribeTargetHealth on the read bucket.
    let reads = rule_for(rules, ELBV2_SERVICE, "DescribeTargetHealth").map(|i| &rules[i]);
    let read_secs = reads.map_or(0.0, |r| drain_secs(groups, r.rate, r.burst));
    let secs = drain_secs(calls, rule.rate, rule.burst).max(read_secs);
    let found = format!(
        "{groups} target groups, {targets} targets → {calls} RegisterTargets calls at {}/s (burst {}): a cold start \
         needs ≈{secs:.0}s",
        rule.rate, rule.burst
    );
    if secs > SLOW_SECS {
        let needed = ((calls.saturating_sub(rule.burst as usize)) as f64 / SLOW_SECS).ceil().max(1.0);
        Verdict::warn(
            CHECK,
            object,
            found,
            format!("a cold start within {SLOW_SECS:.0}s"),
            format!(
                "raise the bucket if your account's ELBv2 quota allows, e.g. --aws-api-throttle='{ELBV2_SERVICE}:RegisterTargets|DeregisterTargets={needed}:{}', or a larger --targetgroupbinding-batch-size",
                rule.burst
            ),
        )
    } else {
        Verdict::ok(CHECK, object, found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Status;
    use crate::throttle::{default_rules, parse_rules};

    #[test]
    fn arithmetic() {
        assert_eq!(register_calls(&[0, 1, 200, 201], 200), 4);
        assert_eq!(register_calls(&[5], 0), 5);
        assert_eq!(drain_secs(20, 4.0, 20), 0.0);
        assert_eq!(drain_secs(60, 4.0, 20), 10.0);
        assert!(drain_secs(1, 0.0, 0).is_infinite());
    }

    #[test]
    fn table() {
        let d = default_rules();
        let slow = parse_rules("Elastic Load Balancing v2:RegisterTargets=0.1:1").unwrap();
        #[allow(clippy::type_complexity)] // a table of cases reads best as tuples
        let cases: Vec<(&str, Vec<ThrottleRule>, Vec<usize>, usize, Status, &str)> = vec![
            ("small", d.clone(), vec![3; 10], 200, Status::Ok, "≈0s"),
            // 500 groups: 500 calls, (500-20)/4 = 120 s
            ("many groups", d.clone(), vec![3; 500], 200, Status::Warn, "≈120s"),
            // 1 group of 10 000 pods in batches of 10: 1000 calls
            ("tiny batches", d.clone(), vec![10_000], 10, Status::Warn, "1000 RegisterTargets calls"),
            // 10 calls, burst 1, 0.1/s: 90 s
            ("slow custom bucket", slow, vec![1; 10], 200, Status::Warn, "≈90s"),
        ];
        for (name, rules, groups, batch, want, text) in cases {
            let v = check(&rules, &groups, batch);
            assert_eq!(v.status, want, "{name}: {v:?}");
            assert!(v.found.contains(text), "{name}: {v:?}");
            if v.status == Status::Warn {
                assert!(v.fix.contains("--aws-api-throttle"), "{v:?}");
            }
        }
    }
}
