//! The manager's writes against a mocked API server (tower-test): what it creates, what it
//! patches, and that a lost race (AlreadyExists, Conflict) is not an error. The whole loop runs
//! against a real API server in e2e/tests/e2e/webhook_certs.rs.

use super::*;
use clap::Parser;
use http::{Request, Response, StatusCode};
use k8s_openapi::api::admissionregistration::v1::{MutatingWebhook, ValidatingWebhook, WebhookClientConfig};
use kube::client::Body;
use lbc_model::webhook_cert::{Leaf, Validity};
use serde_json::json;
use tower_test::mock::{self, Handle};

type ApiHandle = Handle<Request<Body>, Response<Body>>;

const MWC: &str = "lbc-webhook";
const VWC: &str = "lbc-webhook-v";

fn policy() -> Policy {
    Policy {
        ca_lifetime: SignedDuration::from_hours(24 * 3650),
        leaf_lifetime: SignedDuration::from_hours(24 * 365),
        settle: SignedDuration::from_secs(60),
        retire_after: SignedDuration::from_hours(1),
        names: ["lbc-webhook.kube-system.svc".to_string()].into(),
    }
}

fn client_config(bundle: Option<&[u8]>) -> WebhookClientConfig {
    WebhookClientConfig { ca_bundle: bundle.map(|b| ByteString(b.to_vec())), ..Default::default() }
}

fn mwc(hooks: &[(&str, Option<&[u8]>)]) -> MutatingWebhookConfiguration {
    MutatingWebhookConfiguration {
        metadata: ObjectMeta { name: Some(MWC.into()), ..Default::default() },
        webhooks: Some(
            hooks
                .iter()
                .map(|(n, b)| MutatingWebhook {
                    name: n.to_string(),
                    client_config: client_config(*b),
                    ..Default::default()
                })
                .collect(),
        ),
    }
}

fn vwc(hooks: &[(&str, Option<&[u8]>)]) -> ValidatingWebhookConfiguration {
    ValidatingWebhookConfiguration {
        metadata: ObjectMeta { name: Some(VWC.into()), ..Default::default() },
        webhooks: Some(
            hooks
                .iter()
                .map(|(n, b)| ValidatingWebhook {
                    name: n.to_string(),
                    client_config: client_config(*b),
                    ..Default::default()
                })
                .collect(),
        ),
    }
}

/// A manager that leads, seeing `secret` and the two configurations; writes go to the mock.
fn manager(
    secret: Option<Secret>,
    m: MutatingWebhookConfiguration,
    v: ValidatingWebhookConfiguration,
) -> (Manager, ApiHandle) {
    let (svc, handle) = mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(svc, "default");
    let cfg = CertsConfig {
        namespace: "kube-system".into(),
        secret: "lbc-tls".into(),
        mutating: Some(MWC.into()),
        validating: Some(VWC.into()),
        policy: policy(),
    };
    let mgr = Manager {
        secrets: Api::namespaced(client.clone(), &cfg.namespace),
        mwcs: Api::all(client.clone()),
        vwcs: Api::all(client),
        cfg,
        secret: watch::channel(Some(secret)).1,
        mutating: Some(watch::channel(Some(Some(m))).1),
        validating: Some(watch::channel(Some(Some(v))).1),
        leader: watch::channel(true).1,
        shutdown: watch::channel(false).1,
        trusted: None,
        metrics: CertMetrics::default(),
    };
    (mgr, handle)
}

fn respond(tx: tower_test::mock::SendResponse<Response<Body>>, code: StatusCode, body: serde_json::Value) {
    tx.send_response(Response::builder().status(code).body(Body::from(serde_json::to_vec(&body).unwrap())).unwrap());
}

fn status(code: u16, reason: &str) -> serde_json::Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "code": code, "message": reason})
}

async fn body_of(req: Request<Body>) -> serde_json::Value {
    let bytes = req.into_body().collect_bytes().await.unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// A settled Secret of ours: its data and its ca.crt.
fn settled_secret(annotations: &[(&str, &str)]) -> (Secret, Vec<u8>) {
    let now = Timestamp::now();
    let ca = x509::make_ca(policy().ca_validity(now)).unwrap();
    let (crt, key) =
        x509::issue_leaf(&ca.pem, &ca.key_pem, &policy().names, policy().leaf_validity(now, &ca.validity)).unwrap();
    let data: BTreeMap<String, ByteString> = [
        (CA_CRT, ca.pem.as_bytes().to_vec()),
        (CA_KEY, ca.key_pem.into_bytes()),
        (TLS_CRT, crt.into_bytes()),
        (TLS_KEY, key.into_bytes()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), ByteString(v)))
    .collect();
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("lbc-tls".into()),
            namespace: Some("kube-system".into()),
            resource_version: Some("41".into()),
            annotations: Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
            ..Default::default()
        },
        type_: Some("kubernetes.io/tls".into()),
        data: Some(data),
        ..Default::default()
    };
    (secret, ca.pem.into_bytes())
}

#[tokio::test]
async fn a_missing_secret_is_created_with_a_ca_and_a_leaf_from_it() {
    let (mut mgr, mut api) = manager(None, mwc(&[("m1", None)]), vwc(&[("v1", None)]));
    let pass = tokio::spawn(async move { mgr.pass().await.map(|n| matches!(n, Next::Echo)) });
    let (req, tx) = api.next_request().await.unwrap();
    assert_eq!((req.method().as_str(), req.uri().path()), ("POST", "/api/v1/namespaces/kube-system/secrets"));
    let created: Secret = serde_json::from_value(body_of(req).await).unwrap();
    assert_eq!(created.metadata.name.as_deref(), Some("lbc-tls"));
    assert_eq!(created.type_.as_deref(), Some("kubernetes.io/tls"));
    let m = x509::read(&created.data.unwrap(), &BTreeMap::new());
    assert!(m.problems.is_empty(), "{:?}", m.problems);
    assert_eq!(m.observed.bundle.len(), 1);
    assert_eq!(m.observed.ca_key, CaKey::Of(m.observed.bundle[0].id.clone()));
    let Leaf::Present(leaf) = m.observed.leaf else { panic!("no leaf") };
    assert_eq!(leaf.issuer.as_ref(), Some(&m.observed.bundle[0].id), "signed by the CA");
    assert_eq!(leaf.names, policy().names);
    let life = leaf.validity.lifetime();
    assert_eq!(life, policy().leaf_lifetime + lbc_model::webhook_cert::BACKDATE);
    // Another replica created it first: not an error, the watch brings its Secret.
    respond(tx, StatusCode::CONFLICT, status(409, "AlreadyExists"));
    assert!(pass.await.unwrap().expect("AlreadyExists is no error"), "looks again when the watch answers");
}

#[tokio::test]
async fn stale_ca_bundles_get_one_strategic_patch_per_configuration() {
    let (secret, bundle) = settled_secret(&[]);
    let (mut mgr, mut api) = manager(
        Some(secret),
        mwc(&[("m-current", Some(&bundle)), ("m-missing", None)]),
        vwc(&[("v-foreign", Some(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))]),
    );
    let pass = tokio::spawn(async move { mgr.pass().await.map(|n| matches!(n, Next::At(_))) });
    let b64 = serde_json::to_value(ByteString(bundle.clone())).unwrap();
    for (path, hook, kind, name) in [
        (
            format!("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/{MWC}"),
            "m-missing",
            "MutatingWebhookConfiguration",
            MWC,
        ),
        (
            format!("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/{VWC}"),
            "v-foreign",
            "ValidatingWebhookConfiguration",
            VWC,
        ),
    ] {
        let Some((req, tx)) = api.next_request().await else {
            panic!("no PATCH; the pass ended with {:?}", pass.await.unwrap());
        };
        assert_eq!((req.method().as_str(), req.uri().path()), ("PATCH", path.as_str()));
        assert_eq!(req.headers()["content-type"], "application/strategic-merge-patch+json");
        assert!(req.uri().query().unwrap_or_default().contains("fieldManager=aws-lb-controller-webhook-certs"));
        let body = body_of(req).await;
        assert_eq!(
            body,
            json!({"webhooks": [{"name": hook, "clientConfig": {"caBundle": b64}}]}),
            "only the stale one"
        );
        respond(
            tx,
            StatusCode::OK,
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name}}),
        );
    }
    assert!(pass.await.unwrap().unwrap(), "then waits for the next deadline");
}

#[tokio::test]
async fn a_requested_rotation_replaces_with_compare_and_swap_and_drops_the_request() {
    let (secret, bundle) = settled_secret(&[(ROTATE_ANNOTATION, "leaf"), ("keep", "me")]);
    let old_leaf = secret.data.as_ref().unwrap()[TLS_CRT].clone();
    let (mut mgr, mut api) = manager(Some(secret), mwc(&[("m", Some(&bundle))]), vwc(&[("v", Some(&bundle))]));
    let pass = tokio::spawn(async move { mgr.pass().await.map(|n| matches!(n, Next::Echo)) });
    let (req, tx) = api.next_request().await.unwrap();
    assert_eq!((req.method().as_str(), req.uri().path()), ("PUT", "/api/v1/namespaces/kube-system/secrets/lbc-tls"));
    let sent: Secret = serde_json::from_value(body_of(req).await).unwrap();
    assert_eq!(sent.metadata.resource_version.as_deref(), Some("41"), "compare-and-swap on the version read");
    assert_eq!(sent.metadata.annotations, Some([("keep".to_string(), "me".to_string())].into()));
    let data = sent.data.unwrap();
    assert_eq!(data[CA_CRT].0, bundle, "a leaf rotation keeps the CA bundle");
    assert_ne!(data[TLS_CRT], old_leaf);
    // The Secret changed meanwhile: not an error, the next pass sees the new one.
    respond(tx, StatusCode::CONFLICT, status(409, "Conflict"));
    assert!(pass.await.unwrap().expect("Conflict is no error"));
}

#[test]
fn flags_of_the_controller_mode_are_checked_with_their_names() {
    let parse = |extra: &[&str]| {
        let args = Args::parse_from(
            ["aws-lb-controller", "--cluster-name=c", "--webhook-cert-mode=controller"].iter().chain(extra),
        );
        CertsConfig::from_args(&args).map_err(|e| e.to_string())
    };
    let ok = [
        "--webhook-cert-secret=lbc-tls",
        "--webhook-cert-secret-namespace=kube-system",
        "--webhook-cert-dns-names=lbc-webhook.kube-system.svc, lbc-webhook.kube-system",
    ];
    let cfg = parse(&ok).unwrap().expect("controller mode");
    assert_eq!(cfg.policy.names.len(), 2);
    assert_eq!((cfg.mutating, cfg.validating), (None, None));
    let files = Args::parse_from(["aws-lb-controller", "--cluster-name=c"]);
    assert!(CertsConfig::from_args(&files).unwrap().is_none(), "files mode by default");
    for (bad, needle) in [
        (&ok[1..], "--webhook-cert-secret"),
        (&[ok[0], ok[2]][..], "--webhook-cert-secret-namespace"),
        (&ok[..2], "--webhook-cert-dns-names"),
        (&[ok[0], ok[1], "--webhook-cert-dns-names=bad name!"][..], "\"bad name!\" is neither a DNS name"),
        (&[ok[0], ok[1], ok[2], "--webhook-cert-lifetime=5s"][..], "--webhook-cert-lifetime=5s is too short"),
        (
            &[ok[0], ok[1], ok[2], "--webhook-cert-lifetime=48h", "--webhook-cert-ca-lifetime=24h"][..],
            "cannot outlive its CA",
        ),
    ] {
        let e = parse(bad).err().unwrap_or_else(|| panic!("{bad:?} accepted"));
        assert!(e.contains(needle), "{bad:?}: {e}");
    }
}

#[test]
fn validity_windows_of_made_certificates_are_whole_seconds() {
    let v = Validity {
        not_before: Timestamp::from_second(1_800_000_000).unwrap(),
        not_after: Timestamp::from_second(1_900_000_000).unwrap(),
    };
    assert_eq!(x509::make_ca(v).unwrap().validity, v);
}
