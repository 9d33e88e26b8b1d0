//! The report: one line per verdict (text) or a JSON document for automation.

use lbc_model::doctor::{Status, Verdict};

/// `STATUS  check  object: found [; expected …; fix: …]`, then a summary line.
pub fn text(verdicts: &[Verdict]) -> String {
    let mut out = String::new();
    for v in verdicts {
        let status = match v.status {
            Status::Ok => "ok  ",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        };
        out.push_str(&format!("{status}  {:<13} {}: {}", v.check, v.object, v.found));
        if v.status != Status::Ok {
            out.push_str(&format!("; expected: {}; fix: {}", v.expected, v.fix));
        }
        out.push('\n');
    }
    let count = |s: Status| verdicts.iter().filter(|v| v.status == s).count();
    out.push_str(&format!(
        "{} ok, {} warnings, {} failures\n",
        count(Status::Ok),
        count(Status::Warn),
        count(Status::Fail)
    ));
    out
}

pub fn json(verdicts: &[Verdict]) -> String {
    let count = |s: Status| verdicts.iter().filter(|v| v.status == s).count();
    serde_json::to_string_pretty(&serde_json::json!({
        "checks": verdicts,
        "summary": {"ok": count(Status::Ok), "warn": count(Status::Warn), "fail": count(Status::Fail)},
    }))
    .expect("verdicts serialize")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_verdict() {
        let v = vec![
            Verdict::ok("crds", "CustomResourceDefinition x", "served [v1beta1]"),
            Verdict::fail("pod-ips", "Service a/web", "10.42.0.5", "VPC IPs", "use ENI mode"),
        ];
        let t = text(&v);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert_eq!(lines[0], "ok    crds          CustomResourceDefinition x: served [v1beta1]");
        assert_eq!(lines[1], "FAIL  pod-ips       Service a/web: 10.42.0.5; expected: VPC IPs; fix: use ENI mode");
        assert_eq!(lines[2], "1 ok, 0 warnings, 1 failures");
        let j: serde_json::Value = serde_json::from_str(&json(&v)).unwrap();
        assert_eq!(j["checks"][1]["status"], "fail");
        assert_eq!(j["checks"][1]["fix"], "use ENI mode");
        assert_eq!(j["summary"]["fail"], 1);
    }
}
