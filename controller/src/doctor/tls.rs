//! Does a webhook's caBundle verify the certificate it serves? One HTTPS request that trusts only
//! the caBundle: any HTTP answer means the handshake (chain and host name) passed.

use k8s_openapi::api::admissionregistration::v1::WebhookClientConfig;
use lbc_model::doctor::webhooks::Tls;
use std::time::Duration;

/// The webhook's address as written, and the outcome.
pub async fn verify(cc: &WebhookClientConfig) -> (String, Tls) {
    let (url, target) = match (&cc.url, &cc.service) {
        (Some(u), _) => (u.clone(), u.clone()),
        (None, Some(s)) => {
            let port = s.port.unwrap_or(443);
            let path = s.path.clone().unwrap_or_default();
            (
                format!("https://{}.{}.svc:{port}{path}", s.name, s.namespace),
                format!("service {}/{}:{port}{path}", s.namespace, s.name),
            )
        }
        (None, None) => {
            return ("(no url or service)".into(), Tls::Unreachable("clientConfig names no endpoint".into()));
        }
    };
    let Some(ca) = cc.ca_bundle.as_ref().filter(|b| !b.0.is_empty()) else { return (target, Tls::NoCaBundle) };
    (target, handshake(&url, &ca.0).await)
}

async fn handshake(url: &str, ca_pem: &[u8]) -> Tls {
    let certs = match reqwest::Certificate::from_pem_bundle(ca_pem) {
        Ok(c) if !c.is_empty() => c,
        Ok(_) => return Tls::Rejected("the caBundle holds no PEM certificate".into()),
        Err(e) => return Tls::Rejected(format!("the caBundle does not parse as PEM: {e}")),
    };
    let mut b = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .timeout(Duration::from_secs(5))
        .no_proxy();
    for c in certs {
        b = b.add_root_certificate(c);
    }
    let client = match b.build() {
        Ok(c) => c,
        Err(e) => return Tls::Rejected(format!("the caBundle is not usable: {e}")),
    };
    match client.get(url).send().await {
        Ok(_) => Tls::Verified,
        Err(e) => {
            let chain = error_chain(&e);
            if chain.contains("certificate") || chain.contains("UnknownIssuer") || chain.contains("NotValidForName") {
                Tls::Rejected(chain)
            } else {
                Tls::Unreachable(chain)
            }
        }
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut src = e.source();
    while let Some(s) = src {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        src = s.source();
    }
    parts.join(": ")
}
