//! Client of the AWS emulator's control API (`/_awsemu/`, see e2e/emulator/README.md).

use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Clone)]
pub struct Emulator {
    base: String,
    http: reqwest::Client,
}

/// One AWS call as the emulator logged it.
#[derive(Clone, Debug, Deserialize)]
pub struct Call {
    pub seq: u64,
    /// When the emulator finished answering (Unix seconds).
    pub time: f64,
    /// When the request arrived (Unix seconds): the moment a write took effect, for ordering.
    #[serde(default)]
    pub received: f64,
    pub service: String,
    pub operation: String,
    pub target_group_arn: Option<String>,
    pub targets: Option<u64>,
    pub outcome: String,
    pub error_code: Option<String>,
    /// Access key ID the request was signed with.
    #[serde(default)]
    pub access_key: Option<String>,
    /// `X-Forwarded-For` of the request: the pod IP, for calls from the real node's pods (through its AWS
    /// forwarder, `e2e/node/forward.py`); none for calls made on the host.
    #[serde(default)]
    pub forwarded_for: Option<String>,
}

/// The write operations among `calls` signed with `access_key` (one controller's, when several share the
/// emulator). Reads are `Describe*`, `List*` (ACM, WAFv2) and `Get*` (WAFv2's GetWebACLForResource).
pub fn writes(calls: &[Call], access_key: &str) -> Vec<String> {
    calls
        .iter()
        .filter(|c| c.access_key.as_deref() == Some(access_key))
        .filter(|c| !["Describe", "List", "Get"].iter().any(|read| c.operation.starts_with(read)))
        .map(|c| c.operation.clone())
        .collect()
}

/// [`writes`] that name no target group or one of `target_groups`: a controller that watches every
/// namespace also finishes other tests' bindings left behind in terminating namespaces (their
/// DeregisterTargets are its writes too, on target groups that are not the test's).
pub fn writes_on(calls: &[Call], access_key: &str, target_groups: &[String]) -> Vec<String> {
    let theirs = |c: &&Call| c.target_group_arn.as_ref().is_some_and(|tg| !target_groups.contains(tg));
    let ours: Vec<Call> = calls.iter().filter(|c| !theirs(c)).cloned().collect();
    writes(&ours, access_key)
}

/// The write calls `access_key` made, one line each with the target group and target count, for an
/// assertion message that says which target group a surprise write touched.
pub fn write_details(calls: &[Call], access_key: &str) -> Vec<String> {
    calls
        .iter()
        .filter(|c| c.access_key.as_deref() == Some(access_key))
        .filter(|c| !["Describe", "List", "Get"].iter().any(|read| c.operation.starts_with(read)))
        .map(|c| {
            let tg = c.target_group_arn.as_deref().unwrap_or("-");
            format!("{} tg={tg} targets={:?} at {:.3}", c.operation, c.targets, c.received)
        })
        .collect()
}

impl Emulator {
    pub fn new(endpoint: &str) -> Self {
        Self { base: format!("{}/_awsemu", endpoint.trim_end_matches('/')), http: reqwest::Client::new() }
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let r = self.http.post(format!("{}/{path}", self.base)).json(&body).send().await.expect("emulator reachable");
        let status = r.status();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "emulator {path}: HTTP {status}: {v}");
        v
    }

    /// Calls with `seq > since`, optionally for one target group.
    pub async fn calls(&self, since: u64, target_group_arn: Option<&str>) -> (Vec<Call>, u64) {
        let mut url = format!("{}/calls?since={since}", self.base);
        if let Some(arn) = target_group_arn {
            url.push_str(&format!("&target_group_arn={}", urlencode(arn)));
        }
        let v: Value = self.http.get(url).send().await.expect("emulator reachable").json().await.expect("json");
        let calls: Vec<Call> = serde_json::from_value(v["calls"].clone()).expect("call records");
        (calls, v["last_seq"].as_u64().unwrap_or(0))
    }

    /// The current end of the call log.
    pub async fn mark(&self) -> u64 {
        self.calls(u64::MAX - 1, Some("none")).await.1
    }

    /// Health policy for one target group: `initial` for `initial_seconds`, then `then`.
    pub async fn tg_health(&self, arn: &str, initial_seconds: f64, then: &str) {
        self.post(
            "health-policy",
            json!({"scope": "target_group", "target_group_arn": arn, "initial_seconds": initial_seconds, "then": then}),
        )
        .await;
    }

    /// Access key ID -> role ARN of every sts:AssumeRole the emulator answered (`/_awsemu/sts-sessions`).
    pub async fn sts_sessions(&self) -> std::collections::HashMap<String, String> {
        self.sts_sessions_with_external_ids().await.into_iter().map(|(k, (role, _))| (k, role)).collect()
    }

    /// Access key ID -> (role ARN, external ID sent) of every sts:AssumeRole the emulator answered.
    pub async fn sts_sessions_with_external_ids(&self) -> std::collections::HashMap<String, (String, Option<String>)> {
        let v: Value = self
            .http
            .get(format!("{}/sts-sessions", self.base))
            .send()
            .await
            .expect("emulator reachable")
            .json()
            .await
            .expect("json");
        v["sessions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| {
                let role = s["role_arn"].as_str()?.to_string();
                Some((s["access_key_id"].as_str()?.to_string(), (role, s["external_id"].as_str().map(str::to_string))))
            })
            .collect()
    }

    /// Injects a fault; returns its id.
    pub async fn fault(&self, spec: Value) -> String {
        self.post("faults", spec).await["id"].as_str().unwrap_or_default().to_string()
    }

    pub async fn clear_fault(&self, id: &str) {
        let r = self.http.delete(format!("{}/faults/{id}", self.base)).send().await.expect("emulator reachable");
        assert!(r.status().is_success());
    }
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
