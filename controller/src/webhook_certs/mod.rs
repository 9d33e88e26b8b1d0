//! The controller-managed webhook certificate (`--webhook-cert-mode=controller`, the chart's
//! default): the controller keeps its own CA and serving certificate in one Secret and patches the
//! `caBundle` of its own webhook configurations, so nothing generated is rendered by the chart.
//!
//! - Every replica watches that one Secret (a watch on its name) and serves its pair as soon as it
//!   changes ([`lbc_webhook::ServingCert`]); a replica with no valid pair is not ready.
//! - The leader alone writes (through the gated client, [`crate::kube_gate`]): it creates the
//!   Secret when missing, carries out [`lbc_model::webhook_cert::plan`] (new CA, new leaf, CAs
//!   retired, rotation annotation removed) with a compare-and-swap replace, and sets `caBundle`
//!   of every webhook of the two configurations whose `caBundle` differs from the Secret's
//!   `ca.crt` (a `helm upgrade` or ArgoCD sync that drops it gets it back within a watch event).
//!
//! Certificates are read and made in [`x509`]; the decisions are in `lbc_model::webhook_cert`.

pub mod x509;

use crate::admin::Health;
use crate::args::{Args, WebhookCertMode};
use crate::metrics::Metrics;
use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use lbc_model::webhook_cert::{
    CaKey, CertId, Plan, Policy, ROTATE_ANNOTATION, all_trust, needs_ca_bundle, next_bundle, plan,
};
use lbc_webhook::{ServingCert, ServingPair};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use serde::de::DeserializeOwned;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::time::Duration;
use tokio::sync::watch;
use tracing::{debug, info, warn};
use x509::{CA_CRT, CA_KEY, TLS_CRT, TLS_KEY};

/// A look at everything at least this often, even with no event (a missed watch event, a clock
/// that jumped).
const RESYNC: SignedDuration = SignedDuration::from_mins(5);
/// After a write, how long to wait for the watch to bring it back before looking again.
const WRITE_ECHO: Duration = Duration::from_secs(5);
/// How often a replica offers the Secret's pair again (a pair not valid yet when it arrived).
const REOFFER: Duration = Duration::from_secs(10);
/// The field manager of the caBundle patches.
const FIELD_MANAGER: &str = "aws-lb-controller-webhook-certs";

/// Settings of the controller-managed mode (from the `--webhook-cert-*` flags).
#[derive(Clone, Debug)]
pub struct CertsConfig {
    pub namespace: String,
    pub secret: String,
    pub mutating: Option<String>,
    pub validating: Option<String>,
    pub policy: Policy,
}

impl CertsConfig {
    /// `None` in the files mode; an error naming the flag when a setting cannot work.
    pub fn from_args(args: &Args) -> anyhow::Result<Option<Self>> {
        if args.webhook_cert_mode != WebhookCertMode::Controller {
            return Ok(None);
        }
        let need = |v: &str, flag: &str, example: &str| {
            if v.trim().is_empty() {
                anyhow::bail!("--webhook-cert-mode=controller needs {flag}: {example}");
            }
            Ok(v.trim().to_string())
        };
        let secret = need(
            &args.webhook_cert_secret,
            "--webhook-cert-secret",
            "the Secret that holds the webhook CA and serving certificate, e.g. --webhook-cert-secret=aws-lb-controller-tls",
        )?;
        let namespace = need(
            &args.webhook_cert_secret_namespace,
            "--webhook-cert-secret-namespace (or POD_NAMESPACE)",
            "the namespace of that Secret, e.g. kube-system",
        )?;
        let names: BTreeSet<String> =
            args.webhook_cert_dns_names.split(',').map(str::trim).filter(|n| !n.is_empty()).map(String::from).collect();
        if names.is_empty() {
            anyhow::bail!(
                "--webhook-cert-mode=controller needs --webhook-cert-dns-names: the webhook Service's DNS names, e.g. \
                 aws-lb-controller-webhook.kube-system.svc"
            );
        }
        if let Some(bad) = names.iter().find(|n| !is_host_name(n)) {
            anyhow::bail!(
                "--webhook-cert-dns-names: {bad:?} is neither a DNS name nor an IP address; expected names like \
                 aws-lb-controller-webhook.kube-system.svc"
            );
        }
        let lifetime = |d: Duration, flag: &str| -> anyhow::Result<SignedDuration> {
            if d < Duration::from_secs(10) {
                anyhow::bail!("{flag}={d:?} is too short: expected at least 10s (defaults: 87600h CA, 8760h serving)");
            }
            Ok(SignedDuration::try_from(d)?)
        };
        let ca_lifetime = lifetime(args.webhook_cert_ca_lifetime, "--webhook-cert-ca-lifetime")?;
        let leaf_lifetime = lifetime(args.webhook_cert_lifetime, "--webhook-cert-lifetime")?;
        if leaf_lifetime > ca_lifetime {
            anyhow::bail!(
                "--webhook-cert-lifetime={:?} is longer than --webhook-cert-ca-lifetime={:?}: a serving certificate \
                 cannot outlive its CA; expected a CA lifetime several times the serving lifetime (defaults: 87600h, \
                 8760h)",
                args.webhook_cert_lifetime,
                args.webhook_cert_ca_lifetime
            );
        }
        let opt = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
        Ok(Some(Self {
            namespace,
            secret,
            mutating: opt(&args.mutating_webhook_configuration),
            validating: opt(&args.validating_webhook_configuration),
            policy: Policy {
                ca_lifetime,
                leaf_lifetime,
                settle: SignedDuration::try_from(args.webhook_cert_settle)?,
                retire_after: SignedDuration::try_from(args.webhook_cert_retire_after)?,
                names,
            },
        }))
    }
}

/// A DNS name (RFC 1123 labels) or an IP address: what a serving certificate may name.
fn is_host_name(n: &str) -> bool {
    let label = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    n.parse::<std::net::IpAddr>().is_ok() || (n.len() <= 253 && n.split('.').all(label))
}

/// Metrics of the webhook certificate.
#[derive(Clone, Default)]
pub struct CertMetrics {
    /// notAfter of the pair in service (0: none).
    pub expiry: Gauge,
    pub issued: Family<KindLabel, Counter>,
    pub ca_bundle_patches: Counter,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    /// `ca` or `serving`.
    pub kind: &'static str,
}

impl CertMetrics {
    fn register(&self, r: &mut prometheus_client::registry::Registry) {
        let r = r.sub_registry_with_prefix("awslbc_webhook_certificate");
        r.register(
            "expiry_timestamp_seconds",
            "notAfter of the webhook serving certificate this replica serves (0: none)",
            self.expiry.clone(),
        );
        r.register("issued", "Certificates issued by the leader, by kind (ca, serving)", self.issued.clone());
        r.register(
            "ca_bundle_patches",
            "caBundle patches of the controller's webhook configurations (outside rotations: something resets them)",
            self.ca_bundle_patches.clone(),
        );
    }
}

/// Starts the Secret watch and the replica's serving task (every replica) and the manager (acts
/// only while leading). `reader`: the ungated client; `writer`: the leader-gated one.
#[allow(clippy::too_many_arguments)]
pub fn start(
    cfg: CertsConfig,
    reader: &Client,
    writer: &Client,
    leader: watch::Receiver<bool>,
    serving: ServingCert,
    health: &Health,
    metrics: &Metrics,
    shutdown: watch::Receiver<bool>,
) {
    let m = CertMetrics::default();
    metrics.with_registry(|r| m.register(r));
    let (secret, task) = watch_one(Api::<Secret>::namespaced(reader.clone(), &cfg.namespace), &cfg.secret);
    health.supervise("webhook certificate Secret watch", tokio::spawn(task));
    let what = format!("{}/{}", cfg.namespace, cfg.secret);
    health.supervise(
        "webhook certificate loader",
        tokio::spawn(serve_from_secret(secret.clone(), serving, what, m.clone())),
    );
    let mutating = cfg.mutating.as_ref().map(|name| {
        let (rx, task) = watch_one(Api::<MutatingWebhookConfiguration>::all(reader.clone()), name);
        health.supervise("MutatingWebhookConfiguration watch", tokio::spawn(task));
        rx
    });
    let validating = cfg.validating.as_ref().map(|name| {
        let (rx, task) = watch_one(Api::<ValidatingWebhookConfiguration>::all(reader.clone()), name);
        health.supervise("ValidatingWebhookConfiguration watch", tokio::spawn(task));
        rx
    });
    let manager = Manager {
        secrets: Api::namespaced(writer.clone(), &cfg.namespace),
        mwcs: Api::all(writer.clone()),
        vwcs: Api::all(writer.clone()),
        cfg,
        secret,
        mutating,
        validating,
        leader,
        shutdown,
        trusted: None,
        metrics: m,
    };
    health.supervise("webhook certificate manager", tokio::spawn(manager.run()));
}

/// One named object as last seen: `None` until the first list has answered, then whether it exists.
type Seen<K> = Option<Option<K>>;

/// Watches the object `name` (a watch with a `metadata.name` field selector: RBAC may limit it to
/// that name).
fn watch_one<K>(api: Api<K>, name: &str) -> (watch::Receiver<Seen<K>>, impl Future<Output = ()> + Send + 'static)
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default,
{
    let (tx, rx) = watch::channel(None);
    let cfg = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let name = name.to_string();
    let task = async move {
        let mut events = std::pin::pin!(watcher(api, cfg).default_backoff());
        let mut listing: Option<K> = None;
        while let Some(event) = events.next().await {
            match event {
                Ok(watcher::Event::Init) => listing = None,
                Ok(watcher::Event::InitApply(o)) => listing = Some(o),
                Ok(watcher::Event::InitDone) => {
                    tx.send_replace(Some(listing.take()));
                }
                Ok(watcher::Event::Apply(o)) => {
                    tx.send_replace(Some(Some(o)));
                }
                Ok(watcher::Event::Delete(_)) => {
                    tx.send_replace(Some(None));
                }
                Err(e) => {
                    warn!(object = %name, kind = %K::kind(&K::DynamicType::default()), error = %e, "watch failed; retrying")
                }
            }
        }
    };
    (rx, task)
}

fn data_of(secret: &Secret) -> BTreeMap<String, ByteString> {
    secret.data.clone().unwrap_or_default()
}

/// Every replica: serves the Secret's pair as soon as it changes (and looks again every
/// [`REOFFER`], for a pair that was not valid yet when it arrived).
async fn serve_from_secret(
    mut secret: watch::Receiver<Seen<Secret>>,
    serving: ServingCert,
    what: String,
    m: CertMetrics,
) {
    let mut reoffer = tokio::time::interval(REOFFER);
    let mut last_problem: Option<String> = None;
    loop {
        tokio::select! {
            changed = secret.changed() => if changed.is_err() { return },
            _ = reoffer.tick() => {}
        }
        let Some(seen) = secret.borrow_and_update().clone() else { continue };
        let data = seen.as_ref().map(data_of).unwrap_or_default();
        let pair = match (data.get(TLS_CRT), data.get(TLS_KEY)) {
            (Some(c), Some(k)) => ServingPair::from_pem(&c.0, &k.0).map(Some),
            _ => Ok(None),
        };
        lbc_webhook::metrics::count_certificate_read(matches!(pair, Ok(Some(_))));
        let pair = match pair {
            Ok(p) => p,
            Err(e) => {
                if last_problem.as_ref() != Some(&e) {
                    warn!(secret = %what, error = %e, "webhook serving pair in the Secret is unusable; keeping the pair in service while it is valid");
                    last_problem = Some(e);
                }
                None
            }
        };
        let before = serving.current().map(|p| p.fingerprint().to_string());
        let decision = serving.offer(pair, Timestamp::now());
        let now_serving = serving.current();
        if now_serving.as_ref().map(|p| p.fingerprint().to_string()) != before {
            match &now_serving {
                Some(p) => info!(
                    secret = %what,
                    fingerprint = %p.fingerprint(),
                    not_after = %p.validity().not_after,
                    "serving the webhook certificate from the Secret"
                ),
                None => warn!(secret = %what, ?decision, "no valid webhook serving certificate: not ready"),
            }
        }
        m.expiry.set(now_serving.map_or(0, |p| p.validity().not_after.as_second()));
    }
}

/// The leader's side.
struct Manager {
    cfg: CertsConfig,
    secrets: Api<Secret>,
    mwcs: Api<MutatingWebhookConfiguration>,
    vwcs: Api<ValidatingWebhookConfiguration>,
    secret: watch::Receiver<Seen<Secret>>,
    mutating: Option<watch::Receiver<Seen<MutatingWebhookConfiguration>>>,
    validating: Option<watch::Receiver<Seen<ValidatingWebhookConfiguration>>>,
    leader: watch::Receiver<bool>,
    shutdown: watch::Receiver<bool>,
    /// The current CA and since when every webhook of our configurations has trusted it (as seen here).
    trusted: Option<(CertId, Timestamp)>,
    metrics: CertMetrics,
}

/// What a pass asks for next.
enum Next {
    /// Nothing due before then (or an event).
    At(Timestamp),
    /// A write went out: look again when the watch brings it back.
    Echo,
}

/// A webhook of one of our configurations: which configuration, its name, its caBundle.
struct Hook {
    config: Config,
    name: String,
    ca_bundle: Option<Vec<u8>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Config {
    Mutating,
    Validating,
}

impl Manager {
    async fn run(mut self) {
        loop {
            if *self.shutdown.borrow() {
                return;
            }
            if !*self.leader.borrow_and_update() {
                // Not leading: forget what was seen of the trust (a later term sees it afresh).
                self.trusted = None;
                tokio::select! {
                    _ = self.leader.wait_for(|l| *l) => {}
                    _ = self.shutdown.wait_for(|s| *s) => return,
                }
                continue;
            }
            let next = match self.pass().await {
                Ok(next) => next,
                Err(e) if crate::kube_gate::is_not_leader(&e) => {
                    debug!("webhook certificate pass: no longer leading");
                    Next::At(Timestamp::now())
                }
                Err(e) => {
                    warn!(error = %e, "webhook certificate pass failed; retrying in 5s");
                    Next::At(Timestamp::now() + SignedDuration::from_secs(5))
                }
            };
            self.wait(next).await;
        }
    }

    async fn wait(&mut self, next: Next) {
        let sleep = match next {
            Next::At(t) => Duration::try_from(t.duration_since(Timestamp::now())).unwrap_or_default(),
            Next::Echo => WRITE_ECHO,
        };
        tokio::select! {
            _ = self.secret.changed() => {}
            _ = changed_opt(self.mutating.as_mut()) => {}
            _ = changed_opt(self.validating.as_mut()) => {}
            _ = self.leader.changed() => {}
            _ = tokio::time::sleep(sleep) => {}
            _ = self.shutdown.wait_for(|s| *s) => {}
        }
    }

    /// One look: plan, write the Secret when needed, patch the caBundles.
    async fn pass(&mut self) -> Result<Next, kube::Error> {
        let now = Timestamp::from_second(Timestamp::now().as_second()).expect("now is in range");
        let later = Next::At(now + RESYNC);
        let Some(secret) = self.secret.borrow_and_update().clone() else {
            return Ok(later); // the first list has not answered: the watch wakes us
        };
        let Some(hooks) = self.hooks() else {
            return Ok(later);
        };
        let material = match &secret {
            Some(s) => x509::read(&data_of(s), &s.metadata.annotations.clone().unwrap_or_default()),
            None => x509::Material::empty(),
        };
        for p in &material.problems {
            debug!(secret = %self.cfg.secret, problem = %p, "webhook certificate Secret");
        }
        let current = match &material.observed.ca_key {
            CaKey::Of(id) => Some(id.clone()),
            _ => None,
        };
        let hook_cas: Vec<Vec<CertId>> =
            hooks.iter().map(|h| h.ca_bundle.as_deref().map(x509::bundle_ids).unwrap_or_default()).collect();
        self.trusted = match current {
            Some(id) if all_trust(hook_cas.iter().map(Vec::as_slice), &id) => match self.trusted.take() {
                Some((seen, since)) if seen == id => Some((seen, since)),
                _ => Some((id, now)),
            },
            _ => None,
        };
        let plan = plan(&material.observed, &self.cfg.policy, self.trusted.as_ref().map(|(_, t)| *t), now);
        if secret.is_none() || plan.writes() {
            self.write(secret.as_ref(), &material, &plan, now).await?;
            return Ok(Next::Echo);
        }
        if let Some(wait) = plan.wait {
            debug!(?wait, "webhook certificate: a leaf from the current CA waits for the caBundles");
        }
        let bundle = secret.as_ref().map(data_of).and_then(|d| d.get(CA_CRT).map(|b| b.0.clone())).unwrap_or_default();
        self.patch_ca_bundles(&hooks, &bundle).await?;
        Ok(plan.wake_at.filter(|w| *w < now + RESYNC).map_or(later, Next::At))
    }

    /// Every webhook of our configurations, once every configured one has been listed (None before).
    fn hooks(&mut self) -> Option<Vec<Hook>> {
        let mut out = Vec::new();
        let client_configs = |hooks: Vec<(String, WebhookClientConfig)>, config| {
            hooks.into_iter().map(move |(name, c)| Hook { config, name, ca_bundle: c.ca_bundle.map(|b| b.0) })
        };
        if let Some(rx) = &mut self.mutating {
            let hooks = rx.borrow_and_update().clone()?.and_then(|c| c.webhooks).unwrap_or_default();
            out.extend(client_configs(
                hooks.into_iter().map(|w| (w.name, w.client_config)).collect(),
                Config::Mutating,
            ));
        }
        if let Some(rx) = &mut self.validating {
            let hooks = rx.borrow_and_update().clone()?.and_then(|c| c.webhooks).unwrap_or_default();
            out.extend(client_configs(
                hooks.into_iter().map(|w| (w.name, w.client_config)).collect(),
                Config::Validating,
            ));
        }
        Some(out)
    }

    /// Carries out `plan` (creating the Secret when it does not exist).
    async fn write(
        &self,
        secret: Option<&Secret>,
        material: &x509::Material,
        plan: &Plan,
        now: Timestamp,
    ) -> Result<(), kube::Error> {
        let policy = &self.cfg.policy;
        let internal = |e: String| kube::Error::Service(e.into());
        let mut ca_pems = material.ca_pems.clone();
        let (current, ca_key_pem, ca_validity) = match (&plan.new_ca, &material.observed.ca_key, &material.ca_key_pem) {
            (None, CaKey::Of(id), Some(key)) => {
                let v = material.observed.bundle.iter().find(|c| &c.id == id).map(|c| c.validity);
                (id.clone(), key.clone(), v.ok_or_else(|| internal(format!("current CA {id} not in the bundle")))?)
            }
            _ => {
                let ca = x509::make_ca(policy.ca_validity(now)).map_err(internal)?;
                self.metrics.issued.get_or_create(&KindLabel { kind: "ca" }).inc();
                ca_pems.insert(ca.id.clone(), ca.pem);
                (ca.id, ca.key_pem, ca.validity)
            }
        };
        let (crt, key) = match (&plan.new_leaf, &material.leaf_pems) {
            (None, Some((c, k))) => (c.clone(), k.clone()),
            _ => {
                let (c, k) = x509::issue_leaf(
                    &ca_pems[&current],
                    &ca_key_pem,
                    &policy.names,
                    policy.leaf_validity(now, &ca_validity),
                )
                .map_err(internal)?;
                self.metrics.issued.get_or_create(&KindLabel { kind: "serving" }).inc();
                (c.into_bytes(), k.into_bytes())
            }
        };
        let ids: Vec<CertId> = material.observed.bundle.iter().map(|c| c.id.clone()).collect();
        let bundle: String = next_bundle(&ids, &current, &plan.retire).iter().map(|id| ca_pems[id].as_str()).collect();
        let data: BTreeMap<String, ByteString> = [
            (CA_CRT.to_string(), ByteString(bundle.into_bytes())),
            (CA_KEY.to_string(), ByteString(ca_key_pem.into_bytes())),
            (TLS_CRT.to_string(), ByteString(crt)),
            (TLS_KEY.to_string(), ByteString(key)),
        ]
        .into();
        info!(
            secret = %format!("{}/{}", self.cfg.namespace, self.cfg.secret),
            new_ca = ?plan.new_ca,
            new_serving_certificate = ?plan.new_leaf,
            retired_cas = ?plan.retire,
            current_ca = %current,
            "writing the webhook certificate Secret"
        );
        if let Some(Err(why)) = &material.observed.request {
            warn!(secret = %self.cfg.secret, "{why}");
        }
        let result = match secret {
            None => {
                let s = Secret {
                    metadata: ObjectMeta {
                        name: Some(self.cfg.secret.clone()),
                        namespace: Some(self.cfg.namespace.clone()),
                        labels: Some(
                            [
                                ("app.kubernetes.io/managed-by".to_string(), "aws-lb-controller".to_string()),
                                ("app.kubernetes.io/component".to_string(), "webhook-certificate".to_string()),
                            ]
                            .into(),
                        ),
                        ..Default::default()
                    },
                    type_: Some("kubernetes.io/tls".into()),
                    data: Some(data),
                    ..Default::default()
                };
                self.secrets.create(&PostParams::default(), &s).await.map(|_| ())
            }
            Some(existing) => {
                let mut s = existing.clone();
                s.metadata.managed_fields = None;
                if plan.clear_request
                    && let Some(a) = s.metadata.annotations.as_mut()
                {
                    a.remove(ROTATE_ANNOTATION);
                }
                s.data = Some(data);
                s.string_data = None;
                // resourceVersion in `s`: a compare-and-swap; a concurrent change makes it fail with 409.
                self.secrets.replace(&self.cfg.secret, &PostParams::default(), &s).await.map(|_| ())
            }
        };
        match result {
            Err(kube::Error::Api(s)) if s.code == 409 => {
                info!(secret = %self.cfg.secret, "the webhook certificate Secret changed meanwhile; looking again");
                Ok(())
            }
            other => other,
        }
    }

    /// Sets `caBundle` to the Secret's `ca.crt` on every webhook whose caBundle differs.
    async fn patch_ca_bundles(&self, hooks: &[Hook], bundle: &[u8]) -> Result<(), kube::Error> {
        for (config, name) in [(Config::Mutating, &self.cfg.mutating), (Config::Validating, &self.cfg.validating)] {
            let Some(name) = name else { continue };
            let stale: Vec<&Hook> = hooks
                .iter()
                .filter(|h| h.config == config && needs_ca_bundle(bundle, h.ca_bundle.as_deref()))
                .collect();
            if stale.is_empty() {
                continue;
            }
            let b64 = serde_json::to_value(ByteString(bundle.to_vec())).expect("bytes serialize");
            let webhooks: Vec<serde_json::Value> =
                stale.iter().map(|h| serde_json::json!({"name": h.name, "clientConfig": {"caBundle": b64}})).collect();
            // Strategic merge: webhooks are merged by name, only caBundle is sent.
            let patch = Patch::Strategic(serde_json::json!({ "webhooks": webhooks }));
            let params = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
            match config {
                Config::Mutating => self.mwcs.patch(name, &params, &patch).await.map(|_| ())?,
                Config::Validating => self.vwcs.patch(name, &params, &patch).await.map(|_| ())?,
            }
            self.metrics.ca_bundle_patches.inc();
            info!(
                configuration = %name,
                kind = ?config,
                webhooks = ?stale.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(),
                "set caBundle from the webhook certificate Secret"
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;

async fn changed_opt<T>(rx: Option<&mut watch::Receiver<T>>) {
    match rx {
        Some(rx) => {
            if rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending().await,
    }
}
