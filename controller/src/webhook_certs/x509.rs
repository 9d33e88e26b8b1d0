//! The certificates of the controller-managed mode: reading the Secret into the facts
//! [`lbc_model::webhook_cert::plan`] decides on (x509-parser), and making CAs and serving
//! certificates (rcgen, ECDSA P-256 keys from aws-lc-rs).

use base64::Engine;
use jiff::Timestamp;
use k8s_openapi::ByteString;
use lbc_model::webhook_cert::{Ca, CaKey, CertId, Leaf, LeafCert, Observed, ROTATE_ANNOTATION, Validity, parse_rotate};
use lbc_webhook::{ServingPair, fingerprint, validity_of};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    PublicKeyData,
};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::collections::{BTreeMap, BTreeSet};
use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

pub const CA_CRT: &str = "ca.crt";
pub const CA_KEY: &str = "ca.key";
pub const TLS_CRT: &str = "tls.crt";
pub const TLS_KEY: &str = "tls.key";

/// The Secret's material, parsed: the facts to plan on and the PEM to write back.
#[derive(Clone, Debug)]
pub struct Material {
    pub observed: Observed,
    /// PEM of each bundle CA, by id (re-encoded from DER).
    pub ca_pems: BTreeMap<CertId, String>,
    /// `ca.key` as found (PEM), when it is the key of a bundle CA.
    pub ca_key_pem: Option<String>,
    /// `tls.crt`, `tls.key` as found, when they form a pair.
    pub leaf_pems: Option<(Vec<u8>, Vec<u8>)>,
    /// What could not be read, one line each (for the log).
    pub problems: Vec<String>,
}

impl Material {
    /// No Secret yet.
    pub fn empty() -> Self {
        Self {
            observed: Observed::empty(),
            ca_pems: BTreeMap::new(),
            ca_key_pem: None,
            leaf_pems: None,
            problems: Vec::new(),
        }
    }
}

/// One certificate as PEM, 64 columns, LF.
pub fn pem_of(der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

/// The CA ids of a PEM bundle (a webhook's caBundle); blocks that are not certificates are skipped.
pub fn bundle_ids(pem: &[u8]) -> Vec<CertId> {
    CertificateDer::pem_slice_iter(pem).filter_map(Result::ok).map(|der| fingerprint(&der)).collect()
}

fn read_validity(cert: &X509Certificate<'_>) -> Result<Validity, String> {
    let at = |t: x509_parser::time::ASN1Time| {
        Timestamp::from_second(t.timestamp()).map_err(|e| format!("validity out of range: {e}"))
    };
    Ok(Validity { not_before: at(cert.validity().not_before)?, not_after: at(cert.validity().not_after)? })
}

/// Reads the Secret's `data` and annotations.
pub fn read(data: &BTreeMap<String, ByteString>, annotations: &BTreeMap<String, String>) -> Material {
    let mut m = Material::empty();
    let get = |k: &str| data.get(k).map(|b| b.0.as_slice()).filter(|b| !b.is_empty());

    // ca.crt: the CA certificates, in order, once each.
    let mut ders: Vec<(CertId, Vec<u8>)> = Vec::new();
    for (i, block) in CertificateDer::pem_slice_iter(get(CA_CRT).unwrap_or_default()).enumerate() {
        let der = match block {
            Ok(d) => d.to_vec(),
            Err(e) => {
                m.problems.push(format!("{CA_CRT}: block {} is not a PEM certificate ({e}); left out", i + 1));
                continue;
            }
        };
        let id = fingerprint(&der);
        if ders.iter().any(|(d, _)| d == &id) {
            continue;
        }
        match X509Certificate::from_der(&der) {
            Ok((_, cert)) if cert.is_ca() => match read_validity(&cert) {
                Ok(validity) => {
                    m.observed.bundle.push(Ca { id: id.clone(), validity });
                    m.ca_pems.insert(id.clone(), pem_of(&der));
                    ders.push((id, der));
                }
                Err(e) => m.problems.push(format!("{CA_CRT}: certificate {id}: {e}; left out")),
            },
            Ok(_) => m.problems.push(format!("{CA_CRT}: certificate {id} is not a CA (basicConstraints); left out")),
            Err(e) => m.problems.push(format!("{CA_CRT}: certificate {} does not parse: {e}; left out", i + 1)),
        }
    }
    let cas: Vec<(CertId, X509Certificate<'_>)> =
        ders.iter().filter_map(|(id, der)| X509Certificate::from_der(der).ok().map(|(_, c)| (id.clone(), c))).collect();

    // ca.key: the current CA is the bundle CA with its public key.
    m.observed.ca_key = match get(CA_KEY).map(String::from_utf8_lossy) {
        None => CaKey::Missing,
        Some(pem) => match KeyPair::from_pem(&pem) {
            Err(e) => CaKey::Unmatched(format!("{CA_KEY} is not a PKCS#8 private key: {e}")),
            Ok(key) => {
                let spki = key.subject_public_key_info();
                match cas.iter().find(|(_, c)| c.public_key().raw == spki.as_slice()) {
                    Some((id, _)) => {
                        m.ca_key_pem = Some(pem.into_owned());
                        CaKey::Of(id.clone())
                    }
                    None => CaKey::Unmatched(format!("{CA_KEY} is the key of no certificate in {CA_CRT}")),
                }
            }
        },
    };

    // tls.crt + tls.key: a pair (key matching), its names and the bundle CA that signed it.
    m.observed.leaf = match (get(TLS_CRT), get(TLS_KEY)) {
        (None, None) => Leaf::Missing,
        (None, Some(_)) => Leaf::Unusable(format!("{TLS_KEY} without {TLS_CRT}")),
        (Some(_), None) => Leaf::Unusable(format!("{TLS_CRT} without {TLS_KEY}")),
        (Some(crt), Some(key)) => match leaf_facts(crt, key, &cas) {
            Ok(leaf) => {
                m.leaf_pems = Some((crt.to_vec(), key.to_vec()));
                Leaf::Present(leaf)
            }
            Err(e) => Leaf::Unusable(e),
        },
    };
    m.observed.request = annotations.get(ROTATE_ANNOTATION).map(|v| parse_rotate(v));
    m
}

fn leaf_facts(crt: &[u8], key: &[u8], cas: &[(CertId, X509Certificate<'_>)]) -> Result<LeafCert, String> {
    let pair = ServingPair::from_pem(crt, key)?;
    let der = CertificateDer::pem_slice_iter(crt)
        .next()
        .and_then(Result::ok)
        .ok_or_else(|| format!("{TLS_CRT} holds no certificate"))?;
    let (_, cert) = X509Certificate::from_der(&der).map_err(|e| format!("{TLS_CRT} does not parse: {e}"))?;
    let mut names = BTreeSet::new();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for n in &san.value.general_names {
            match n {
                GeneralName::DNSName(d) => {
                    names.insert(d.to_string());
                }
                GeneralName::IPAddress(ip) => {
                    let ip = match ip.len() {
                        4 => <[u8; 4]>::try_from(*ip).map(std::net::IpAddr::from).ok(),
                        16 => <[u8; 16]>::try_from(*ip).map(std::net::IpAddr::from).ok(),
                        _ => None,
                    };
                    names.extend(ip.map(|ip| ip.to_string()));
                }
                _ => {}
            }
        }
    }
    let issuer = cas
        .iter()
        .find(|(_, ca)| {
            ca.subject().as_raw() == cert.issuer().as_raw() && cert.verify_signature(Some(ca.public_key())).is_ok()
        })
        .map(|(id, _)| id.clone());
    Ok(LeafCert { id: pair.fingerprint().to_string(), validity: pair.validity(), names, issuer })
}

fn offset(t: Timestamp) -> Result<time::OffsetDateTime, String> {
    time::OffsetDateTime::from_unix_timestamp(t.as_second()).map_err(|e| format!("time {t} out of range: {e}"))
}

/// A CA made here.
#[derive(Clone, Debug)]
pub struct NewCa {
    pub id: CertId,
    pub pem: String,
    pub key_pem: String,
    pub validity: Validity,
}

/// Makes a CA valid for `validity` (named after its start, so every generation has its own subject).
pub fn make_ca(validity: Validity) -> Result<NewCa, String> {
    let key = KeyPair::generate().map_err(|e| format!("generating a CA key: {e}"))?;
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::OrganizationName, "aws-lb-controller");
    params
        .distinguished_name
        .push(DnType::CommonName, format!("aws-lb-controller webhook CA {}", validity.not_before.as_second()));
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    params.not_before = offset(validity.not_before)?;
    params.not_after = offset(validity.not_after)?;
    let cert = params.self_signed(&key).map_err(|e| format!("signing the CA: {e}"))?;
    // As written (whole seconds).
    let validity = validity_of(cert.der())?;
    Ok(NewCa { id: fingerprint(cert.der()), pem: cert.pem(), key_pem: key.serialize_pem(), validity })
}

/// Issues a serving certificate for `names` from the CA (`ca_pem`, `ca_key_pem`); returns its
/// PEM and its key's PEM.
pub fn issue_leaf(
    ca_pem: &str,
    ca_key_pem: &str,
    names: &BTreeSet<String>,
    validity: Validity,
) -> Result<(String, String), String> {
    let ca_key = KeyPair::from_pem(ca_key_pem).map_err(|e| format!("reading the CA key: {e}"))?;
    let issuer = Issuer::from_ca_cert_pem(ca_pem, ca_key).map_err(|e| format!("reading the CA certificate: {e}"))?;
    let key = KeyPair::generate().map_err(|e| format!("generating a serving key: {e}"))?;
    let mut params = CertificateParams::new(names.iter().cloned().collect::<Vec<_>>())
        .map_err(|e| format!("serving certificate names {names:?}: {e}"))?;
    if let Some(first) = names.iter().next() {
        params.distinguished_name.push(DnType::CommonName, first.clone());
    }
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    params.not_before = offset(validity.not_before)?;
    params.not_after = offset(validity.not_after)?;
    let cert = params.signed_by(&key, &issuer).map_err(|e| format!("signing the serving certificate: {e}"))?;
    Ok((cert.pem(), key.serialize_pem()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::SignedDuration;

    /// Secret data from (key, PEM text) pairs.
    fn secret_data(entries: &[(&str, &str)]) -> BTreeMap<String, ByteString> {
        entries.iter().map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec()))).collect()
    }

    fn names() -> BTreeSet<String> {
        ["lbc-webhook.kube-system.svc".to_string(), "127.0.0.1".to_string()].into()
    }

    fn window(from_mins: i64, to_mins: i64) -> Validity {
        let now = Timestamp::now();
        Validity {
            not_before: now + SignedDuration::from_mins(from_mins),
            not_after: now + SignedDuration::from_mins(to_mins),
        }
    }

    #[test]
    fn made_material_reads_back_as_made() {
        let ca = make_ca(window(-5, 600)).unwrap();
        let (crt, key) = issue_leaf(&ca.pem, &ca.key_pem, &names(), window(-5, 60)).unwrap();
        let data = secret_data(&[(CA_CRT, &ca.pem), (CA_KEY, &ca.key_pem), (TLS_CRT, &crt), (TLS_KEY, &key)]);
        let m = read(&data, &BTreeMap::new());
        assert!(m.problems.is_empty(), "{:?}", m.problems);
        assert_eq!(m.observed.bundle, vec![Ca { id: ca.id.clone(), validity: ca.validity }]);
        assert_eq!(m.observed.ca_key, CaKey::Of(ca.id.clone()));
        let Leaf::Present(leaf) = &m.observed.leaf else { panic!("{:?}", m.observed.leaf) };
        assert_eq!(leaf.issuer.as_ref(), Some(&ca.id), "the leaf is verified as signed by the CA");
        assert_eq!(leaf.names, names(), "DNS names and IP addresses");
        assert_eq!(m.ca_pems[&ca.id], ca.pem, "PEM re-encoded byte for byte");
        assert_eq!(m.observed.request, None);
    }

    #[test]
    fn a_leaf_of_another_ca_with_the_same_subject_is_not_from_the_bundle() {
        // Two CAs made in the same second share their subject: the signature decides.
        let v = window(-5, 600);
        let (a, b) = (make_ca(v).unwrap(), make_ca(v).unwrap());
        let (crt, key) = issue_leaf(&b.pem, &b.key_pem, &names(), window(-5, 60)).unwrap();
        let data = secret_data(&[(CA_CRT, &a.pem), (CA_KEY, &b.key_pem), (TLS_CRT, &crt), (TLS_KEY, &key)]);
        let m = read(&data, &BTreeMap::new());
        let Leaf::Present(leaf) = &m.observed.leaf else { panic!("{:?}", m.observed.leaf) };
        assert_eq!(leaf.issuer, None);
        assert_eq!(m.observed.ca_key, CaKey::Unmatched("ca.key is the key of no certificate in ca.crt".into()));
    }

    #[test]
    fn unreadable_parts_are_named() {
        let ca = make_ca(window(-5, 600)).unwrap();
        let (crt, _) = issue_leaf(&ca.pem, &ca.key_pem, &names(), window(-5, 60)).unwrap();
        let (_, other_key) = issue_leaf(&ca.pem, &ca.key_pem, &names(), window(-5, 60)).unwrap();
        // The leaf is no CA: left out of the bundle, with a reason.
        let bundle = format!("{}{crt}", ca.pem);
        let data = secret_data(&[(CA_CRT, &bundle), (CA_KEY, "not a key"), (TLS_CRT, &crt), (TLS_KEY, &other_key)]);
        let annotations = [(ROTATE_ANNOTATION.to_string(), "soon".to_string())].into();
        let m = read(&data, &annotations);
        assert_eq!(m.observed.bundle.len(), 1);
        assert!(m.problems.iter().any(|p| p.contains("is not a CA")), "{:?}", m.problems);
        assert!(matches!(&m.observed.ca_key, CaKey::Unmatched(why) if why.contains("not a PKCS#8 private key")));
        assert!(matches!(&m.observed.leaf, Leaf::Unusable(why) if why.contains("do not work together")));
        assert!(matches!(&m.observed.request, Some(Err(why)) if why.contains("\"soon\"")));
        let only_key = secret_data(&[(TLS_KEY, "k")]);
        assert_eq!(read(&only_key, &BTreeMap::new()).observed.leaf, Leaf::Unusable("tls.key without tls.crt".into()));
    }

    #[test]
    fn bundle_ids_name_each_certificate() {
        let (a, b) = (make_ca(window(-5, 600)).unwrap(), make_ca(window(-5, 600)).unwrap());
        let bundle = format!("{}{}", a.pem, b.pem);
        assert_eq!(bundle_ids(bundle.as_bytes()), vec![a.id.clone(), b.id.clone()]);
        assert_eq!(bundle_ids(b"garbage"), Vec::<CertId>::new());
    }
}
