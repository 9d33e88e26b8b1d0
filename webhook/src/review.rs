//! Decoding AdmissionReviews and encoding our answers. A request we cannot read still gets an
//! AdmissionReview back (HTTP 200, `allowed: false`, status code 400 and the reason), with the
//! request's uid when it could be found: the API server then reports our message instead of
//! a bare connection error, and nothing here can panic on bad input.

use json_patch::{Patch, PatchOperation};
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use kube::core::{DynamicObject, Resource, Status, TypeMeta};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// What a webhook decided about one request.
#[derive(Debug)]
pub(crate) enum Decision {
    /// Admit unchanged.
    Allow { warnings: Vec<String> },
    /// Admit with these changes (admitted unchanged when `ops` is empty).
    Patch { ops: Vec<PatchOperation>, warnings: Vec<String> },
    /// Refuse: the object is wrong and the message says how to fix it.
    Deny { message: String, category: &'static str },
    /// Refuse because we could not decide (AWS unreachable…): the message says so.
    Fail { message: String, category: &'static str },
    /// The request itself is unusable (no object, wrong kind…).
    Invalid { message: String },
}

impl Decision {
    pub(crate) fn allow() -> Self {
        Self::Allow { warnings: Vec::new() }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid { message: message.into() }
    }
}

/// Outcome label, failure category and the response.
pub(crate) struct Answer {
    pub response: AdmissionResponse,
    pub outcome: &'static str,
    pub failure: Option<&'static str>,
}

/// What an endpoint accepts.
pub(crate) struct Expect {
    pub group: &'static str,
    pub kind: &'static str,
}

pub(crate) const MALFORMED: &str = "malformed_request";

fn bad_request(uid: Option<String>, types: Option<TypeMeta>, message: String) -> Box<Answer> {
    let mut r = AdmissionResponse::invalid(&message);
    if let Some(uid) = uid {
        r.uid = uid;
    }
    if let Some(t) = types {
        r.types = t;
    }
    r.result = Status::failure(&message, "BadRequest").with_code(400);
    Box::new(Answer { response: r, outcome: "error", failure: Some(MALFORMED) })
}

/// Decodes an AdmissionReview carrying a `K`, or the answer to send back when it cannot be.
pub(crate) fn decode<K>(body: &[u8], expect: &Expect) -> Result<AdmissionRequest<K>, Box<Answer>>
where
    K: Resource + DeserializeOwned,
{
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        bad_request(None, None, format!("the request body is not JSON ({e}); expected an AdmissionReview"))
    })?;
    let uid = value.pointer("/request/uid").and_then(Value::as_str).map(str::to_string);
    let types = match (value.get("apiVersion").and_then(Value::as_str), value.get("kind").and_then(Value::as_str)) {
        (Some(a), Some("AdmissionReview")) if a.starts_with("admission.k8s.io/") => {
            Some(TypeMeta { api_version: a.to_string(), kind: "AdmissionReview".to_string() })
        }
        _ => {
            return Err(bad_request(
                uid,
                None,
                "the request body is not an AdmissionReview (expected apiVersion admission.k8s.io/v1 and kind \
                 AdmissionReview)"
                    .to_string(),
            ));
        }
    };
    if !value.get("request").is_some_and(Value::is_object) {
        return Err(bad_request(uid, types, "the AdmissionReview has no request".to_string()));
    }
    let kind = (
        value.pointer("/request/kind/group").and_then(Value::as_str).unwrap_or_default().to_string(),
        value.pointer("/request/kind/kind").and_then(Value::as_str).unwrap_or_default().to_string(),
    );
    if kind.0 != expect.group || kind.1 != expect.kind {
        let want =
            if expect.group.is_empty() { expect.kind.to_string() } else { format!("{}.{}", expect.kind, expect.group) };
        let got = if kind.0.is_empty() { kind.1.clone() } else { format!("{}.{}", kind.1, kind.0) };
        return Err(bad_request(
            uid,
            types,
            format!(
                "this webhook endpoint handles {want} objects but the request is for {got:?}; check the rules of the \
                 webhook configuration that points here"
            ),
        ));
    }
    let review: AdmissionReview<K> = serde_json::from_value(value).map_err(|e| {
        bad_request(uid.clone(), types.clone(), format!("cannot read the AdmissionReview of a {}: {e}", expect.kind))
    })?;
    review.try_into().map_err(|_| bad_request(uid, types, "the AdmissionReview has no request".to_string()))
}

/// Turns a decision into the response; `base` is `AdmissionResponse::from(&request)`.
pub(crate) fn answer(base: AdmissionResponse, d: Decision) -> Answer {
    let with_warnings = |mut r: AdmissionResponse, w: Vec<String>| {
        if !w.is_empty() {
            r.warnings = Some(w);
        }
        r
    };
    match d {
        Decision::Allow { warnings } => {
            Answer { response: with_warnings(base, warnings), outcome: "allowed", failure: None }
        }
        Decision::Patch { ops, warnings } if ops.is_empty() => {
            Answer { response: with_warnings(base, warnings), outcome: "allowed", failure: None }
        }
        Decision::Patch { ops, warnings } => match base.clone().with_patch(Patch(ops)) {
            Ok(r) => Answer { response: with_warnings(r, warnings), outcome: "patched", failure: None },
            Err(e) => refuse(
                base,
                format!("internal error: cannot encode the JSON patch: {e}"),
                500,
                "InternalError",
                "error",
                "patch_encoding",
            ),
        },
        Decision::Deny { message, category } => refuse(base, message, 403, "Forbidden", "denied", category),
        Decision::Fail { message, category } => refuse(base, message, 500, "InternalError", "error", category),
        Decision::Invalid { message } => refuse(base, message, 400, "BadRequest", "error", MALFORMED),
    }
}

fn refuse(
    base: AdmissionResponse,
    message: String,
    code: u16,
    reason: &str,
    outcome: &'static str,
    category: &'static str,
) -> Answer {
    let mut r = base.deny(&message);
    r.result = Status::failure(&message, reason).with_code(code);
    Answer { response: r, outcome, failure: Some(category) }
}

/// The review to send back.
pub(crate) fn review(r: AdmissionResponse) -> AdmissionReview<DynamicObject> {
    r.into_review()
}
