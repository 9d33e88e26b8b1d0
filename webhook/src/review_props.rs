//! Property tests of AdmissionReview decoding: whatever the API server (or anything else) sends,
//! decoding never panics and a refusal is a 400 AdmissionReview naming the problem; valid reviews
//! come back with their fields, and our answers encode and decode again.

use crate::review::{Decision, Expect, answer, decode, review};
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::core::Resource;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use kube::core::{DynamicObject, ResourceExt};
use lbc_model::crd::TargetGroupBinding;
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::BTreeMap;

const POD: &str = include_str!("../tests/fixtures/pod-create.json");
const SERVICE: &str = include_str!("../tests/fixtures/service-create.json");
const TGB: &str = include_str!("../tests/fixtures/tgb-create.json");

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        any::<String>().prop_map(Value::from),
        prop_oneof![Just("Pod"), Just("admission.k8s.io/v1"), Just("AdmissionReview"), Just("CREATE"), Just("")]
            .prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            proptest::collection::btree_map("[a-zA-Z]{1,8}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// JSON pointers to every node of `v`.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            m.iter().for_each(|(k, c)| pointers(c, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out))
        }
        Value::Array(a) => a.iter().enumerate().for_each(|(i, c)| pointers(c, format!("{at}/{i}"), out)),
        _ => {}
    }
    out.push(at);
}

/// One change to a review: replace a node, drop it, or empty it.
#[derive(Clone, Debug)]
enum Edit {
    Replace(prop::sample::Index, Value),
    Remove(prop::sample::Index),
    Empty(prop::sample::Index),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<prop::sample::Index>(), json()).prop_map(|(i, v)| Edit::Replace(i, v)),
        any::<prop::sample::Index>().prop_map(Edit::Remove),
        any::<prop::sample::Index>().prop_map(Edit::Empty),
    ]
}

fn apply(mut v: Value, edits: &[Edit]) -> Value {
    for e in edits {
        let mut ps = Vec::new();
        pointers(&v, String::new(), &mut ps);
        let pick = |i: &prop::sample::Index| ps[i.index(ps.len())].clone();
        match e {
            Edit::Replace(i, new) => {
                let p = pick(i);
                if p.is_empty() {
                    v = new.clone();
                } else if let Some(n) = v.pointer_mut(&p) {
                    *n = new.clone();
                }
            }
            Edit::Remove(i) => {
                let p = pick(i);
                if let Some((parent, key)) = p.rsplit_once('/')
                    && let Some(n) = v.pointer_mut(parent)
                {
                    let key = key.replace("~1", "/").replace("~0", "~");
                    match n {
                        Value::Object(m) => drop(m.remove(&key)),
                        Value::Array(a) => {
                            drop(key.parse::<usize>().ok().filter(|&k| k < a.len()).map(|k| a.remove(k)))
                        }
                        _ => {}
                    }
                }
            }
            Edit::Empty(i) => {
                if let Some(n) = v.pointer_mut(&pick(i)) {
                    *n = match n {
                        Value::Object(_) => Value::Object(Default::default()),
                        Value::Array(_) => Value::Array(vec![]),
                        Value::String(_) => Value::from(""),
                        _ => Value::Null,
                    };
                }
            }
        }
    }
    v
}

/// A body: a fixture with edits, then perhaps cut or with bytes spliced in.
fn body(fixture: &'static str) -> impl Strategy<Value = Vec<u8>> {
    let base: Value = serde_json::from_str(fixture).unwrap();
    (
        proptest::collection::vec(edit(), 0..4),
        any::<prop::sample::Index>(),
        proptest::option::weighted(0.2, proptest::collection::vec(any::<u8>(), 0..8)),
    )
        .prop_map(move |(edits, at, splice)| {
            let mut bytes = serde_json::to_vec(&apply(base.clone(), &edits)).unwrap();
            if let Some(s) = splice {
                let i = at.index(bytes.len() + 1);
                bytes.splice(i..i, s);
            }
            bytes
        })
}

/// Decodes like the handlers do and checks the answer to a bad request.
fn check<K: Resource + DeserializeOwned>(bytes: &[u8], expect: &Expect) -> Result<(), TestCaseError> {
    let a = match decode::<K>(bytes, expect) {
        Ok(req) => {
            prop_assert_eq!((req.kind.group.as_str(), req.kind.kind.as_str()), (expect.group, expect.kind));
            answer(AdmissionResponse::from(&req), Decision::allow())
        }
        Err(a) => {
            let r = &a.response;
            prop_assert!(!r.allowed && r.result.code == 400 && !r.result.message.is_empty(), "{:?}", r);
            let uid = serde_json::from_slice::<Value>(bytes)
                .ok()
                .and_then(|v| v.pointer("/request/uid")?.as_str().map(String::from));
            if let Some(uid) = uid {
                prop_assert_eq!(&r.uid, &uid);
            }
            *a
        }
    };
    let sent = serde_json::to_vec(&review(a.response)).unwrap();
    let back: AdmissionReview<DynamicObject> = serde_json::from_slice(&sent).unwrap();
    prop_assert!(back.response.is_some());
    Ok(())
}

fn pod_expect() -> Expect {
    Expect { group: "", kind: "Pod" }
}

fn operation() -> impl Strategy<Value = (Operation, &'static str)> {
    prop_oneof![
        Just((Operation::Create, "CREATE")),
        Just((Operation::Update, "UPDATE")),
        Just((Operation::Delete, "DELETE")),
        Just((Operation::Connect, "CONNECT")),
    ]
}

proptest! {
    #[test]
    fn arbitrary_bytes_get_an_error_review(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        check::<Pod>(&bytes, &pod_expect())?;
    }

    #[test]
    fn garbled_pod_reviews(bytes in body(POD)) {
        check::<Pod>(&bytes, &pod_expect())?;
    }

    #[test]
    fn garbled_service_reviews(bytes in body(SERVICE)) {
        check::<Service>(&bytes, &Expect { group: "", kind: "Service" })?;
    }

    #[test]
    fn garbled_binding_reviews(bytes in body(TGB)) {
        check::<TargetGroupBinding>(&bytes, &Expect { group: "elbv2.k8s.aws", kind: "TargetGroupBinding" })?;
    }

    #[test]
    fn reviews_for_another_kind_are_refused(bytes in body(SERVICE)) {
        // A Service review (edited or not) sent to the Pod endpoint is never decoded as a Pod.
        if let Ok(req) = decode::<Pod>(&bytes, &pod_expect()) {
            prop_assert_eq!(req.kind.kind, "Pod");
        }
    }

    #[test]
    fn valid_reviews_round_trip(
        uid in "[a-f0-9-]{1,36}",
        namespace in "[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?",
        name in proptest::option::of("[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?"),
        (op, op_text) in operation(),
        labels in proptest::collection::btree_map("[a-z]{1,10}", "[a-zA-Z0-9]{0,10}", 0..4),
        dry_run in any::<bool>(),
        deny in proptest::option::of("\\PC{1,40}"),
    ) {
        let mut v: Value = serde_json::from_str(POD).unwrap();
        v["request"]["uid"] = uid.clone().into();
        v["request"]["namespace"] = namespace.clone().into();
        v["request"]["operation"] = op_text.into();
        v["request"]["dryRun"] = dry_run.into();
        v["request"]["object"]["metadata"]["labels"] = serde_json::to_value(&labels).unwrap();
        if let Some(n) = &name {
            v["request"]["name"] = n.clone().into();
            v["request"]["object"]["metadata"]["name"] = n.clone().into();
        }
        let req: AdmissionRequest<Pod> = decode(&serde_json::to_vec(&v).unwrap(), &pod_expect()).map_err(|a| {
            TestCaseError::fail(format!("valid review refused: {}", a.response.result.message))
        })?;
        prop_assert_eq!(&req.uid, &uid);
        prop_assert_eq!(req.namespace.as_deref(), Some(namespace.as_str()));
        prop_assert_eq!(&req.name, name.as_deref().unwrap_or_default());
        prop_assert_eq!(&req.operation, &op);
        prop_assert_eq!(req.dry_run, dry_run);
        let got: BTreeMap<String, String> = req.object.as_ref().unwrap().labels().clone();
        prop_assert_eq!(got, labels);

        let decision = match &deny {
            Some(m) => Decision::Deny { message: m.clone(), category: "test" },
            None => Decision::allow(),
        };
        let sent = serde_json::to_value(review(answer(AdmissionResponse::from(&req), decision).response)).unwrap();
        prop_assert_eq!(&sent["apiVersion"], "admission.k8s.io/v1");
        prop_assert_eq!(&sent["response"]["uid"], &Value::from(uid));
        prop_assert_eq!(&sent["response"]["allowed"], &Value::from(deny.is_none()));
        if let Some(m) = deny {
            prop_assert_eq!(&sent["response"]["status"]["message"], &Value::from(m));
        }
    }
}
