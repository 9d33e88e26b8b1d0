//! The controller-managed webhook certificate (`--webhook-cert-mode=controller`) against the real
//! API server: two controller processes (one leader) on fixed webhook ports, webhook
//! configurations created without caBundle (the mutating one calls replica A, the validating one
//! replica B, so every TargetGroupBinding request goes through both), and a client calling the
//! webhooks through the API server all along (dry-run TargetGroupBindings and pods in an
//! opted-in namespace) while
//!
//! (a) the serving certificate is rotated (annotation `leaf`): the CA bundle does not change;
//! (b) the CA is rotated (annotation `ca`): new CA added, caBundle patched, leaf switched, old CA retired;
//! (c) the controllers are replaced by new ones that find a Secret as the old chart wrote it
//!     (`ca.crt`, `tls.crt`, `tls.key` from openssl, RSA keys, no `ca.key`, caBundle = that CA).
//!
//! Asserted: 0 failed admission requests from the moment the webhooks first answer, and both
//! replicas serving each new leaf within a bound. Measured: the time from the Secret's change (as
//! this test sees it) to both replicas serving it.

use k8s_openapi::api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration};
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use lbc_e2e::controller::ControllerProc;
use lbc_e2e::webhook::webhook;
use lbc_e2e::{Env, aws, eventually, kube_util, unique};
use lbc_model::crd::TargetGroupBinding;
use lbc_model::webhook_cert::ROTATE_ANNOTATION;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{Mutex, RwLock};

const GATE: &str = "target-health.elbv2.k8s.aws/web";
/// Both replicas must serve a new leaf this soon after the Secret changed.
const SWAP_BOUND: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------------------------
// Which certificate a replica serves: a TLS handshake that accepts any certificate.

#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The leaf (DER) the webhook server on `port` presents, if it completes a handshake.
async fn served(port: u16) -> Option<Vec<u8>> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let cfg = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .ok()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    let name = ServerName::try_from("127.0.0.1").ok()?;
    let tls = tokio::time::timeout(
        Duration::from_secs(2),
        tokio_rustls::TlsConnector::from(Arc::new(cfg)).connect(name, tcp),
    )
    .await
    .ok()?
    .ok()?;
    Some(tls.get_ref().1.peer_certificates()?.first()?.to_vec())
}

fn ders(pem: &[u8]) -> Vec<Vec<u8>> {
    CertificateDer::pem_slice_iter(pem).filter_map(Result::ok).map(|d| d.to_vec()).collect()
}

fn key(secret: &Secret, k: &str) -> Vec<u8> {
    secret.data.as_ref().and_then(|d| d.get(k)).map(|b| b.0.clone()).unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// The admission load: dry-run TargetGroupBindings (mutated by A: vpcID filled; validated by B)
// and dry-run pods (mutated by A: the readiness gate of binding `web`), all the time.

struct Load {
    tgb_ok: AtomicU64,
    pod_ok: AtomicU64,
    failures: Mutex<Vec<String>>,
    /// Held (read) around each request: taking it for writing waits for requests in flight.
    gate: RwLock<()>,
    stop: AtomicBool,
}

impl Load {
    fn start(client: kube::Client, ns: &str, probe_arn: &str) -> Arc<Self> {
        let load = Arc::new(Load {
            tgb_ok: AtomicU64::new(0),
            pod_ok: AtomicU64::new(0),
            failures: Mutex::new(Vec::new()),
            gate: RwLock::new(()),
            stop: AtomicBool::new(false),
        });
        let tgbs: Api<TargetGroupBinding> = Api::namespaced(client.clone(), ns);
        let pods: Api<Pod> = Api::namespaced(client, ns);
        let dry = PostParams { dry_run: true, ..Default::default() };
        let tgb: TargetGroupBinding = serde_json::from_value(json!({
            "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding", "metadata": {"name": "probe"},
            "spec": {"serviceRef": {"name": "web", "port": 80}, "targetGroupARN": probe_arn}}))
        .unwrap();
        let pod: Pod = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "probe"}]}}))
        .unwrap();
        let l = load.clone();
        let d = dry.clone();
        tokio::spawn(async move {
            while !l.stop.load(Ordering::Relaxed) {
                let outcome = {
                    let _g = l.gate.read().await;
                    match tgbs.create(&d, &tgb).await {
                        Ok(b) if b.spec.vpc_id.is_some() => Ok(()),
                        Ok(_) => {
                            Err("TargetGroupBinding admitted without vpcID: the mutating webhook did not run".into())
                        }
                        Err(e) => Err(format!("TargetGroupBinding: {e}")),
                    }
                };
                l.record(outcome, &l.tgb_ok).await;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        let l = load.clone();
        tokio::spawn(async move {
            while !l.stop.load(Ordering::Relaxed) {
                let outcome = {
                    let _g = l.gate.read().await;
                    match pods.create(&dry, &pod).await {
                        Ok(p)
                            if p.spec
                                .as_ref()
                                .and_then(|s| s.readiness_gates.as_ref())
                                .is_some_and(|g| g.iter().any(|g| g.condition_type == GATE)) =>
                        {
                            Ok(())
                        }
                        Ok(_) => Err("pod admitted without the readiness gate: the pod webhook did not run".into()),
                        Err(e) => Err(format!("pod: {e}")),
                    }
                };
                l.record(outcome, &l.pod_ok).await;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        load
    }

    async fn record(&self, outcome: Result<(), String>, ok: &AtomicU64) {
        match outcome {
            Ok(()) => {
                ok.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => self.failures.lock().await.push(format!("{:?}: {e}", Instant::now())),
        }
    }

    /// Fails the test with every failed request so far.
    async fn assert_none_failed(&self, phase: &str) {
        let failures = self.failures.lock().await;
        assert!(failures.is_empty(), "{phase}: {} failed admission requests:\n{}", failures.len(), failures.join("\n"));
    }

    fn counts(&self) -> (u64, u64) {
        (self.tgb_ok.load(Ordering::Relaxed), self.pod_ok.load(Ordering::Relaxed))
    }

    /// Waits until both kinds have succeeded once more than now.
    async fn both_answer(&self, what: &str) {
        let (t0, p0) = self.counts();
        eventually(what, 60, || async {
            let (t, p) = self.counts();
            (t > t0 && p > p0).then_some(())
        })
        .await;
    }
}

// ---------------------------------------------------------------------------------------------

struct Scene {
    env: Env,
    client: kube::Client,
    ns: String,
    secret_name: String,
    lease: String,
    ports: [u16; 2],
    mwc: String,
    vwc: String,
}

impl Scene {
    fn secrets(&self) -> Api<Secret> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    /// One controller replica on `port`, managing the certificate.
    fn replica(&self, port: u16, secret: &str) -> ControllerProc {
        let flags = [
            format!("--webhook-bind-port={port}"),
            "--webhook-cert-mode=controller".into(),
            format!("--webhook-cert-secret={secret}"),
            format!("--webhook-cert-secret-namespace={}", self.ns),
            "--webhook-cert-dns-names=127.0.0.1".into(),
            format!("--mutating-webhook-configuration={}", self.mwc),
            format!("--validating-webhook-configuration={}", self.vwc),
            "--webhook-cert-settle=3s".into(),
            "--webhook-cert-retire-after=4s".into(),
        ];
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        ControllerProc::start(&self.env, &self.ns, &self.lease, &flags)
    }

    async fn secret(&self) -> Option<Secret> {
        self.secrets().get_opt(&self.secret_name).await.ok().flatten()
    }

    /// The caBundle of every webhook of both configurations.
    async fn ca_bundles(&self) -> Vec<Option<Vec<u8>>> {
        let mwcs: Api<MutatingWebhookConfiguration> = Api::all(self.client.clone());
        let vwcs: Api<ValidatingWebhookConfiguration> = Api::all(self.client.clone());
        let mut out = Vec::new();
        if let Ok(m) = mwcs.get(&self.mwc).await {
            out.extend(m.webhooks.unwrap_or_default().into_iter().map(|w| w.client_config.ca_bundle.map(|b| b.0)));
        }
        if let Ok(v) = vwcs.get(&self.vwc).await {
            out.extend(v.webhooks.unwrap_or_default().into_iter().map(|w| w.client_config.ca_bundle.map(|b| b.0)));
        }
        out
    }

    /// Waits until every webhook's caBundle is exactly `bundle`.
    async fn bundles_are(&self, bundle: &[u8], what: &str) {
        eventually(what, 30, || async {
            let all = self.ca_bundles().await;
            (all.len() == 3 && all.iter().all(|b| b.as_deref() == Some(bundle))).then_some(())
        })
        .await;
    }

    async fn annotate(&self, value: &str) {
        let patch = Patch::Merge(json!({"metadata": {"annotations": {ROTATE_ANNOTATION: value}}}));
        self.secrets().patch(&self.secret_name, &PatchParams::default(), &patch).await.unwrap();
    }

    /// Waits for a leaf other than `old` in the Secret, then for both replicas to serve it; returns
    /// the new Secret and the time from seeing the change to both serving it.
    async fn next_leaf(&self, old: &[u8], what: &str) -> (Secret, Duration) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let (secret, seen) = loop {
            if let Some(s) = self.secret().await
                && key(&s, "tls.crt") != old
            {
                break (s, Instant::now());
            }
            assert!(Instant::now() < deadline, "{what}: no new serving certificate in the Secret after 60s");
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        let want = ders(&key(&secret, "tls.crt")).remove(0);
        loop {
            let (a, b) = tokio::join!(served(self.ports[0]), served(self.ports[1]));
            if a.as_ref() == Some(&want) && b.as_ref() == Some(&want) {
                break;
            }
            assert!(
                seen.elapsed() < SWAP_BOUND * 4,
                "{what}: replicas not serving the new leaf after {:?}",
                seen.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let took = seen.elapsed();
        eprintln!("MEASURE {what}: Secret changed → both replicas serving the new leaf in {took:?}");
        (secret, took)
    }
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn controller_managed_certificates_rotate_without_failed_admissions() {
    let Some(env) = Env::require("controller_managed_certificates_rotate_without_failed_admissions") else { return };
    let client = kube_util::client(&env).await;
    let elb = aws::elbv2(&env).await;
    let id = unique("whc");
    let free = || std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let scene = Scene {
        env: env.clone(),
        client: client.clone(),
        ns: id.clone(),
        secret_name: format!("{id}-tls"),
        lease: format!("{id}-leader"),
        ports: [free(), free()],
        mwc: format!("{id}-mutating"),
        vwc: format!("{id}-validating"),
    };
    kube_util::namespace(
        &client,
        &scene.ns,
        &[("elbv2.k8s.aws/pod-readiness-gate-inject", "enabled"), ("lbc-e2e/webhook-test", &id)],
    )
    .await;
    env.pods(&["service", &scene.ns, "web", "--port", "80", "--target-port", "8080"]);
    let bound_arn = aws::create_ip_target_group(&env, &elb, &unique("whc-tg"), 8080).await;
    let probe_arn = aws::create_ip_target_group(&env, &elb, &unique("whc-probe"), 8080).await;

    // Two replicas, one lease: the leader creates the Secret.
    let mut a = scene.replica(scene.ports[0], &scene.secret_name);
    let mut b = scene.replica(scene.ports[1], &scene.secret_name);

    // Configurations without caBundle, as the chart renders them: mutating → A, validating → B.
    let hook = |name: &str, port: u16, path: &str, res: (&str, &str, &str)| {
        let mut w = webhook(name, port, path, "", &id, "Fail", res);
        w["clientConfig"].as_object_mut().unwrap().remove("caBundle");
        w
    };
    let tgb_res = ("elbv2.k8s.aws", "v1beta1", "targetgroupbindings");
    let mwc = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": scene.mwc},
        "webhooks": [hook("mpod.elbv2.k8s.aws", scene.ports[0], "/mutate-v1-pod", ("", "v1", "pods")),
                     hook("mtargetgroupbinding.elbv2.k8s.aws", scene.ports[0], "/mutate-elbv2-k8s-aws-v1beta1-targetgroupbinding", tgb_res)]});
    let vwc = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": scene.vwc},
        "webhooks": [hook("vtargetgroupbinding.elbv2.k8s.aws", scene.ports[1], "/validate-elbv2-k8s-aws-v1beta1-targetgroupbinding", tgb_res)]});
    let mwcs: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let vwcs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    mwcs.create(&PostParams::default(), &serde_json::from_value(mwc).unwrap()).await.unwrap();
    vwcs.create(&PostParams::default(), &serde_json::from_value(vwc).unwrap()).await.unwrap();

    // The leader writes the Secret and the caBundles; both replicas become ready serving its leaf.
    let secret = eventually("the leader creates the Secret", 60, || scene.secret()).await;
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    for k in ["ca.crt", "ca.key", "tls.crt", "tls.key"] {
        assert!(!key(&secret, k).is_empty(), "{k} missing from the created Secret");
    }
    let bundle0 = key(&secret, "ca.crt");
    assert_eq!(ders(&bundle0).len(), 1, "one CA");
    scene.bundles_are(&bundle0, "caBundle patched into every webhook").await;
    eventually("both replicas ready", 60, || async { (a.ready().await && b.ready().await).then_some(()) }).await;
    // A third replica, started once the Lease is held (so it never leads), whose Secret never
    // appears: never ready, and its /readyz says why.
    let c = scene.replica(free(), &format!("{id}-absent"));
    let readyz = eventually("the replica without a Secret says why it is not ready", 60, || async {
        let r = reqwest::get(format!("http://127.0.0.1:{}/readyz", c.health_port)).await.ok()?;
        let (status, body) = (r.status().as_u16(), r.text().await.ok()?);
        body.contains("webhook").then_some((status, body))
    })
    .await;
    assert_eq!(readyz, (503, "not serving webhooks: no webhook serving certificate yet".to_string()));
    c.kill();

    // A binding (whose gate the pod webhook injects), then the load.
    eventually("binding created through the webhooks", 60, || async {
        let t: Api<TargetGroupBinding> = Api::namespaced(client.clone(), &scene.ns);
        let b: TargetGroupBinding = serde_json::from_value(json!({
            "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding", "metadata": {"name": "web"},
            "spec": {"serviceRef": {"name": "web", "port": 80}, "targetGroupARN": bound_arn}}))
        .unwrap();
        t.create(&PostParams::default(), &b).await.ok()
    })
    .await;
    // Both caches hold the binding before failures count (the pod webhook of A injects its gate).
    let warmup = Load::start(client.clone(), &scene.ns, &probe_arn);
    warmup.both_answer("first admissions through both replicas").await;
    warmup.stop.store(true, Ordering::Relaxed);
    let _ = warmup.gate.write().await;
    let load = Load::start(client.clone(), &scene.ns, &probe_arn);
    load.both_answer("admissions through both replicas").await;
    let mut swaps = Vec::new();

    // (a) Serving certificate rotated: same CA, the caBundles untouched.
    scene.annotate("leaf").await;
    let (secret, took) = scene.next_leaf(&key(&secret, "tls.crt"), "(a) leaf rotation").await;
    swaps.push(took);
    assert_eq!(key(&secret, "ca.crt"), bundle0, "a leaf rotation keeps the CA bundle");
    assert!(
        !secret.metadata.annotations.clone().unwrap_or_default().contains_key(ROTATE_ANNOTATION),
        "request removed"
    );
    load.both_answer("admissions after the leaf rotation").await;
    load.assert_none_failed("(a) leaf rotation").await;
    assert!(scene.ca_bundles().await.iter().all(|b| b.as_deref() == Some(bundle0.as_slice())));

    // (b) CA rotated: the new CA joins the bundle (current first), is patched in, then the leaf from
    // it is served, then the old CA leaves.
    scene.annotate("ca").await;
    let both = eventually("a second CA in the bundle", 30, || async {
        let s = scene.secret().await?;
        (ders(&key(&s, "ca.crt")).len() == 2).then(|| key(&s, "ca.crt"))
    })
    .await;
    assert_eq!(ders(&both)[1], ders(&bundle0)[0], "the old CA stays, after the new one");
    scene.bundles_are(&both, "both CAs in every caBundle").await;
    let (_, took) = scene.next_leaf(&key(&secret, "tls.crt"), "(b) CA rotation").await;
    swaps.push(took);
    let new_ca = ders(&both).remove(0);
    let only_new = eventually("the old CA retired", 30, || async {
        let s = scene.secret().await?;
        let ca = key(&s, "ca.crt");
        (ders(&ca) == vec![new_ca.clone()]).then_some(ca)
    })
    .await;
    scene.bundles_are(&only_new, "the old CA out of every caBundle").await;
    load.both_answer("admissions after the CA rotation").await;
    load.assert_none_failed("(b) CA rotation").await;

    // (c) Controllers replaced; they find the old chart's Secret (no ca.key), trusted by the caBundles.
    let helm = helm_style_secret(&env, &id);
    let helm_crt = helm.iter().find(|(k, _)| *k == "tls.crt").unwrap().1.clone();
    {
        let _paused = load.gate.write().await;
        a.kill();
        b.kill();
        let mut s = scene.secret().await.unwrap();
        s.metadata.managed_fields = None;
        s.metadata.annotations = None;
        s.data = Some(helm.iter().map(|(k, v)| (k.to_string(), k8s_openapi::ByteString(v.clone()))).collect());
        scene.secrets().replace(&scene.secret_name, &PostParams::default(), &s).await.unwrap();
        let h = helm.iter().find(|(k, _)| *k == "ca.crt").unwrap().1.clone();
        let b64 = serde_json::to_value(k8s_openapi::ByteString(h.clone())).unwrap();
        let set = |names: &[&str]| json!({"webhooks": names.iter().map(|n| json!({"name": n, "clientConfig": {"caBundle": b64}})).collect::<Vec<_>>()});
        mwcs.patch(
            &scene.mwc,
            &PatchParams::default(),
            &Patch::Strategic(set(&["mpod.elbv2.k8s.aws", "mtargetgroupbinding.elbv2.k8s.aws"])),
        )
        .await
        .unwrap();
        vwcs.patch(&scene.vwc, &PatchParams::default(), &Patch::Strategic(set(&["vtargetgroupbinding.elbv2.k8s.aws"])))
            .await
            .unwrap();
        scene.bundles_are(&h, "the chart's CA in the caBundles").await;
        let helm_leaf = ders(&helm_crt).remove(0);
        // New replicas serve the chart's leaf (trusted by the chart's caBundle) as soon as they are
        // ready. The killed leader did not release its Lease: the new leader takes it only after
        // the lease duration (6 s), so the switch to a leaf of ours comes after that plus the
        // settle time, with the load running again.
        a = scene.replica(scene.ports[0], &scene.secret_name);
        b = scene.replica(scene.ports[1], &scene.secret_name);
        eventually("new replicas ready with the chart's certificate", 60, || async {
            (a.ready().await && b.ready().await).then_some(())
        })
        .await;
        let (sa, sb) = tokio::join!(served(scene.ports[0]), served(scene.ports[1]));
        assert_eq!((sa.as_ref(), sb.as_ref()), (Some(&helm_leaf), Some(&helm_leaf)), "the chart's leaf served first");
    }
    load.both_answer("admissions with the chart's certificate").await;
    eventually("our CA beside the chart's, the chart's leaf still in service", 30, || async {
        let s = scene.secret().await?;
        (ders(&key(&s, "ca.crt")).len() == 2 && !key(&s, "ca.key").is_empty() && key(&s, "tls.crt") == helm_crt)
            .then_some(())
    })
    .await;
    let (secret, took) = scene.next_leaf(&helm_crt, "(c) upgrade from the chart's Secret").await;
    swaps.push(took);
    let ours = ders(&key(&secret, "ca.crt")).remove(0);
    let final_bundle = eventually("the chart's CA retired", 30, || async {
        let s = scene.secret().await?;
        let ca = key(&s, "ca.crt");
        (ders(&ca) == vec![ours.clone()]).then_some(ca)
    })
    .await;
    scene.bundles_are(&final_bundle, "only our CA in the caBundles").await;
    load.both_answer("admissions after the upgrade").await;

    // Each replica exports the notAfter of what it serves; the leader counts what it issued.
    let not_after = key(&scene.secret().await.unwrap(), "tls.crt");
    let want = not_after_of(&not_after);
    for p in [&a, &b] {
        let served = eventually("the served certificate's expiry in /metrics", 30, || async {
            p.metric("awslbc_webhook_certificate_expiry_timestamp_seconds ").await.filter(|v| *v > 0.0)
        })
        .await;
        assert_eq!(served as i64, want, "{}", p.log.display());
    }
    let mut issued = 0.0;
    for p in [&a, &b] {
        issued += p.metric("awslbc_webhook_certificate_issued_total{kind=\"serving\"} ").await.unwrap_or(0.0);
    }
    assert!(issued >= 1.0, "the leader counts the serving certificate it issued");

    load.stop.store(true, Ordering::Relaxed);
    let _ = load.gate.write().await;
    let (tgb_ok, pod_ok) = load.counts();
    let failures = load.failures.lock().await.clone();
    eprintln!(
        "MEASURE admission requests: {tgb_ok} TargetGroupBinding + {pod_ok} pod admitted, {} failed; swaps {swaps:?}",
        failures.len()
    );
    assert!(failures.is_empty(), "{} failed admission requests:\n{}", failures.len(), failures.join("\n"));
    assert!(tgb_ok > 50 && pod_ok > 50, "too few requests to mean anything: {tgb_ok} / {pod_ok}");
    for (i, took) in swaps.iter().enumerate() {
        assert!(
            *took < SWAP_BOUND,
            "swap {i}: both replicas serving the new leaf took {took:?} (bound {SWAP_BOUND:?})"
        );
    }

    let _ = mwcs.delete(&scene.mwc, &DeleteParams::default()).await;
    let _ = vwcs.delete(&scene.vwc, &DeleteParams::default()).await;
    drop((a, b));
    let t: Api<TargetGroupBinding> = Api::namespaced(client.clone(), &scene.ns);
    let _ = t.patch("web", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": null}}))).await;
    kube_util::delete_namespace(&client, &scene.ns).await;
    for arn in [bound_arn, probe_arn] {
        let _ = elb.delete_target_group().target_group_arn(arn).send().await;
    }
}

/// notAfter (Unix seconds) of the first certificate of a PEM chain.
fn not_after_of(pem: &[u8]) -> i64 {
    let der = ders(pem).remove(0);
    let (_, cert) = x509_parser::parse_x509_certificate(&der).expect("X.509");
    cert.validity().not_after.timestamp()
}

/// A Secret as the old chart (or ALBC's) rendered it: an RSA CA and an RSA leaf for 127.0.0.1
/// (PKCS#1 key, as Helm's genSignedCert writes it), from openssl; no `ca.key`.
fn helm_style_secret(env: &Env, id: &str) -> Vec<(&'static str, Vec<u8>)> {
    let dir = env.run_dir().join(format!("{id}-helm-certs"));
    std::fs::create_dir_all(&dir).unwrap();
    let p = |f: &str| dir.join(f).to_string_lossy().into_owned();
    let run = |args: &[&str]| {
        let out = std::process::Command::new("openssl").args(args).output().expect("openssl");
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    std::fs::write(dir.join("ext"), "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n").unwrap();
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "3650",
        "-subj",
        "/CN=aws-lb-controller-ca",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,digitalSignature",
        "-keyout",
        &p("ca.key"),
        "-out",
        &p("ca.crt"),
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        &p("leaf.key"),
        "-out",
        &p("leaf.csr"),
    ]);
    run(&[
        "x509",
        "-req",
        "-in",
        &p("leaf.csr"),
        "-CA",
        &p("ca.crt"),
        "-CAkey",
        &p("ca.key"),
        "-CAcreateserial",
        "-days",
        "3650",
        "-extfile",
        &p("ext"),
        "-out",
        &p("tls.crt"),
    ]);
    run(&["rsa", "-in", &p("leaf.key"), "-traditional", "-out", &p("tls.key")]);
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
    let out = vec![("ca.crt", read("ca.crt")), ("tls.crt", read("tls.crt")), ("tls.key", read("tls.key"))];
    assert!(String::from_utf8_lossy(&out[2].1).contains("BEGIN RSA PRIVATE KEY"), "PKCS#1, as Helm writes it");
    let _ = std::fs::remove_dir_all(dir);
    out
}
