//! Which certificate an HTTPS listener presents, without I/O: what selection needs from each
//! certificate (names, key, signature hash, validity) and the choice for a ClientHello, as the
//! Elastic Load Balancing User Guide ("SSL certificates for your Application Load Balancer")
//! documents it:
//!
//! * "Default certificate": "the default certificate is used only if a client connects without
//!   using the Server Name Indication (SNI) protocol to specify a hostname or if there are no
//!   matching certificates in the certificate list."
//! * "Certificate list": "If the hostname provided by a client matches a single certificate in the
//!   certificate list, the load balancer selects this certificate. If a hostname provided by a
//!   client matches multiple certificates in the certificate list, the load balancer selects the
//!   best certificate that the client can support. Certificate selection is based on the following
//!   criteria in the following order: Public key algorithm (prefer ECDSA over RSA); Expiration
//!   (prefer not expired); Hashing algorithm (prefer SHA over MD5). If there are multiple SHA
//!   certificates, prefer the highest SHA number; Key length (prefer the largest); Validity
//!   period."
//!
//! "Validity period" is read as the most recent `notBefore` (the newest certificate); the list's
//! order breaks what is still tied. A certificate's names are its DNS subject alternative names,
//! its subject CN only when it has none; `*.` covers exactly one leftmost label ("can protect only
//! one subdomain level", not the apex), case-insensitively.

use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};
use x509_parser::public_key::PublicKey;

/// A certificate's public key algorithm, in AWS's order of preference (ECDSA over RSA).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum KeyKind {
    Other,
    Rsa,
    Ecdsa,
}

/// What selection needs from one certificate of a listener.
#[derive(Clone, Debug, PartialEq)]
pub struct CertInfo {
    /// DNS names, lowercase (`*.example.com` for a wildcard).
    pub names: Vec<String>,
    pub key: KeyKind,
    /// RSA modulus / EC field size in bits.
    pub key_bits: u32,
    /// The signature's hash: 0 unknown (e.g. RSASSA-PSS, Ed25519), 1 MD5, 2 SHA-1, 3 SHA-224,
    /// 4 SHA-256, 5 SHA-384, 6 SHA-512 ("prefer the highest SHA number").
    pub hash: u8,
    /// Unix seconds.
    pub not_before: i64,
    pub not_after: i64,
}

impl CertInfo {
    /// Reads a DER certificate.
    pub fn from_der(der: &[u8]) -> Result<Self, String> {
        let (_, cert) = X509Certificate::from_der(der).map_err(|e| format!("not an X.509 certificate: {e}"))?;
        let san = cert.subject_alternative_name().map_err(|e| format!("bad subjectAltName extension: {e}"))?;
        let mut names: Vec<String> = san
            .map(|s| {
                s.value
                    .general_names
                    .iter()
                    .filter_map(|n| match n {
                        GeneralName::DNSName(d) => Some(d.to_ascii_lowercase()),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        if names.is_empty() {
            names.extend(
                cert.subject().iter_common_name().filter_map(|cn| cn.as_str().ok()).map(str::to_ascii_lowercase),
            );
        }
        let spki = cert.public_key();
        let key = match spki.algorithm.algorithm.to_id_string().as_str() {
            "1.2.840.10045.2.1" => KeyKind::Ecdsa,
            "1.2.840.113549.1.1.1" => KeyKind::Rsa,
            _ => KeyKind::Other,
        };
        let key_bits = match spki.parsed() {
            Ok(PublicKey::RSA(rsa)) => significant_bits(rsa.modulus),
            // P-521 coordinates take 66 bytes.
            Ok(p @ PublicKey::EC(_)) => match p.key_size() {
                528 => 521,
                n => n as u32,
            },
            Ok(p) => p.key_size() as u32,
            Err(_) => 0,
        };
        Ok(Self {
            names,
            key,
            key_bits,
            hash: hash_rank(&cert.signature_algorithm.algorithm.to_id_string()),
            not_before: cert.validity().not_before.timestamp(),
            not_after: cert.validity().not_after.timestamp(),
        })
    }

    /// Whether `host` (lowercase, no trailing dot) is one of the certificate's names.
    pub fn covers(&self, host: &str) -> bool {
        self.names.iter().any(|n| name_matches(n, host))
    }
}

fn significant_bits(big_endian: &[u8]) -> u32 {
    let digits = big_endian.iter().skip_while(|b| **b == 0).collect::<Vec<_>>();
    digits.first().map_or(0, |first| digits.len() as u32 * 8 - first.leading_zeros())
}

/// The hash of a signature algorithm OID (RFC 3279, 4055, 5758), ranked as [`CertInfo::hash`].
fn hash_rank(oid: &str) -> u8 {
    match oid {
        "1.2.840.113549.1.1.4" => 1,
        "1.2.840.113549.1.1.5" | "1.2.840.10045.4.1" => 2,
        "1.2.840.113549.1.1.14" | "1.2.840.10045.4.3.1" => 3,
        "1.2.840.113549.1.1.11" | "1.2.840.10045.4.3.2" => 4,
        "1.2.840.113549.1.1.12" | "1.2.840.10045.4.3.3" => 5,
        "1.2.840.113549.1.1.13" | "1.2.840.10045.4.3.4" => 6,
        _ => 0,
    }
}

/// A certificate name against a host name, both lowercase: equal, or `*.rest` with `host` one
/// label followed by `.rest`.
pub fn name_matches(name: &str, host: &str) -> bool {
    match name.strip_prefix("*.") {
        Some(rest) => {
            host.split_once('.').is_some_and(|(label, tail)| !label.is_empty() && tail == rest && !rest.is_empty())
        }
        None => name == host,
    }
}

/// One certificate of the listener: the default one (`CreateListener`/`ModifyListener`) or one
/// of its certificate list (`AddListenerCertificates`).
#[derive(Clone, Debug, PartialEq)]
pub struct Listed {
    pub info: CertInfo,
    pub is_default: bool,
}

/// The index of the certificate to present to a client that sent `sni` (if any) at Unix time
/// `now`; `supported(i)` says whether the client can use certificate `i` (its signature schemes).
/// None only without a default certificate.
pub fn select(certs: &[Listed], sni: Option<&str>, now: i64, supported: impl Fn(usize) -> bool) -> Option<usize> {
    let default = certs.iter().position(|c| c.is_default);
    let Some(host) = sni.map(|h| h.trim_end_matches('.').to_ascii_lowercase()) else { return default };
    certs
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.is_default && c.info.covers(&host))
        .max_by_key(|(i, c)| {
            let c = &c.info;
            // The later in the list, the smaller: the first listed wins a tie.
            (supported(*i), c.key, c.not_after >= now, c.hash, c.key_bits, c.not_before, std::cmp::Reverse(*i))
        })
        .map(|(i, _)| i)
        .or(default)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert(names: &[&str], key: KeyKind, key_bits: u32, hash: u8, not_before: i64, not_after: i64) -> CertInfo {
        CertInfo { names: names.iter().map(|n| n.to_string()).collect(), key, key_bits, hash, not_before, not_after }
    }

    fn listed(info: CertInfo) -> Listed {
        Listed { info, is_default: false }
    }

    fn default(info: CertInfo) -> Listed {
        Listed { info, is_default: true }
    }

    fn rsa(names: &[&str]) -> CertInfo {
        cert(names, KeyKind::Rsa, 2048, 4, 100, 10_000)
    }

    const NOW: i64 = 1_000;

    fn pick(certs: &[Listed], sni: Option<&str>) -> Option<usize> {
        select(certs, sni, NOW, |_| true)
    }

    // AWS "SSL certificates" page: "*.example.com protects corp.example.com, and images.example.com,
    // but it cannot protect test.login.example.com. Also note that *.example.com protects only the
    // subdomains of example.com, it does not protect the bare or apex domain (example.com)."
    #[test]
    fn wildcards_cover_one_leftmost_label() {
        assert!(name_matches("*.example.com", "corp.example.com"));
        assert!(name_matches("*.example.com", "images.example.com"));
        assert!(!name_matches("*.example.com", "test.login.example.com"));
        assert!(!name_matches("*.example.com", "example.com"));
        assert!(!name_matches("*.example.com", ".example.com"));
        assert!(!name_matches("*.", "a."));
        assert!(name_matches("a.example.com", "a.example.com") && !name_matches("a.example.com", "b.example.com"));
        // Names compare lowercase: select() lowercases the SNI, CertInfo its names.
        let certs = [default(rsa(&["d.example.com"])), listed(rsa(&["a.example.com"]))];
        assert_eq!(pick(&certs, Some("A.Example.COM.")), Some(1));
    }

    // "the default certificate is used only if a client connects without using the Server Name
    // Indication (SNI) protocol to specify a hostname or if there are no matching certificates in
    // the certificate list."
    #[test]
    fn the_default_without_sni_or_without_a_match_in_the_list() {
        let certs =
            [default(rsa(&["d.example.com"])), listed(rsa(&["a.example.com"])), listed(rsa(&["*.b.example.com"]))];
        assert_eq!(pick(&certs, None), Some(0));
        assert_eq!(pick(&certs, Some("other.example.com")), Some(0));
        assert_eq!(pick(&certs, Some("x.y.b.example.com")), Some(0));
        // The default covering the name changes nothing: the list is searched, then the default.
        assert_eq!(pick(&certs, Some("d.example.com")), Some(0));
        let no_default = [listed(rsa(&["a.example.com"]))];
        assert_eq!(pick(&no_default, None), None);
        assert_eq!(pick(&no_default, Some("a.example.com")), Some(0));
    }

    // "If the hostname provided by a client matches a single certificate in the certificate list,
    // the load balancer selects this certificate."
    #[test]
    fn a_single_match_in_the_list_is_selected() {
        let certs =
            [default(rsa(&["a.example.com"])), listed(rsa(&["a.example.com"])), listed(rsa(&["*.b.example.com"]))];
        assert_eq!(pick(&certs, Some("a.example.com")), Some(1));
        assert_eq!(pick(&certs, Some("x.b.example.com")), Some(2));
        // Even a worse one than the default: the default is not in the certificate list.
        let weak = cert(&["a.example.com"], KeyKind::Rsa, 1024, 1, 0, 10);
        let certs = [default(cert(&["a.example.com"], KeyKind::Ecdsa, 384, 6, 500, 10_000)), listed(weak)];
        assert_eq!(pick(&certs, Some("a.example.com")), Some(1));
    }

    // "the load balancer selects the best certificate that the client can support."
    #[test]
    fn the_client_must_support_the_certificate() {
        let ec = cert(&["a.example.com"], KeyKind::Ecdsa, 256, 4, 100, 10_000);
        let certs = [default(rsa(&["d"])), listed(ec), listed(rsa(&["a.example.com"]))];
        assert_eq!(select(&certs, Some("a.example.com"), NOW, |_| true), Some(1));
        assert_eq!(select(&certs, Some("a.example.com"), NOW, |i| i != 1), Some(2), "an RSA-only client");
        // None supported: still the best match (the handshake fails as it would on AWS).
        assert_eq!(select(&certs, Some("a.example.com"), NOW, |_| false), Some(1));
    }

    // "Public key algorithm (prefer ECDSA over RSA)", before everything else.
    #[test]
    fn ecdsa_before_rsa() {
        let big_rsa = cert(&["*.example.com"], KeyKind::Rsa, 4096, 6, 900, 10_000);
        let ec = cert(&["a.example.com"], KeyKind::Ecdsa, 256, 2, 100, 10_000);
        let certs = [default(rsa(&["d"])), listed(big_rsa), listed(ec)];
        assert_eq!(pick(&certs, Some("a.example.com")), Some(2));
    }

    // "Expiration (prefer not expired)", before the hash and the key length.
    #[test]
    fn unexpired_before_expired() {
        let expired = cert(&["a.example.com"], KeyKind::Rsa, 4096, 6, 10, NOW - 1);
        let valid = cert(&["a.example.com"], KeyKind::Rsa, 2048, 2, 10, NOW + 1);
        let certs = [default(rsa(&["d"])), listed(expired), listed(valid)];
        assert_eq!(pick(&certs, Some("a.example.com")), Some(2));
    }

    // "Hashing algorithm (prefer SHA over MD5). If there are multiple SHA certificates, prefer the
    // highest SHA number", before the key length.
    #[test]
    fn the_strongest_hash_before_the_key_length() {
        let md5 = cert(&["a.example.com"], KeyKind::Rsa, 4096, 1, 100, 10_000);
        let sha1 = cert(&["a.example.com"], KeyKind::Rsa, 4096, 2, 100, 10_000);
        let sha384 = cert(&["a.example.com"], KeyKind::Rsa, 2048, 5, 100, 10_000);
        let certs = [default(rsa(&["d"])), listed(md5.clone()), listed(sha1.clone())];
        assert_eq!(pick(&certs, Some("a.example.com")), Some(2));
        let certs = [default(rsa(&["d"])), listed(md5), listed(sha384), listed(sha1)];
        assert_eq!(pick(&certs, Some("a.example.com")), Some(2));
        assert_eq!(hash_rank("1.2.840.113549.1.1.4"), 1);
        assert_eq!(hash_rank("1.2.840.10045.4.3.4"), 6);
    }

    // "Key length (prefer the largest)", then "Validity period" (the newest), then list order.
    #[test]
    fn the_longest_key_then_the_newest_then_the_first_listed() {
        let short = cert(&["a.example.com"], KeyKind::Rsa, 2048, 4, 900, 10_000);
        let long = cert(&["a.example.com"], KeyKind::Rsa, 3072, 4, 100, 10_000);
        let certs = [default(rsa(&["d"])), listed(short.clone()), listed(long)];
        assert_eq!(pick(&certs, Some("a.example.com")), Some(2));
        let old = cert(&["a.example.com"], KeyKind::Rsa, 2048, 4, 100, 10_000);
        let certs = [default(rsa(&["d"])), listed(old.clone()), listed(short.clone())];
        assert_eq!(pick(&certs, Some("a.example.com")), Some(2));
        let certs = [default(rsa(&["d"])), listed(short.clone()), listed(short)];
        assert_eq!(pick(&certs, Some("a.example.com")), Some(1));
    }

    #[test]
    fn certificates_are_read_from_der() {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384).unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["A.example.com".into(), "*.b.example.com".into()]).unwrap();
        params.distinguished_name.push(rcgen::DnType::CommonName, "ignored.example.com");
        let der = params.self_signed(&key).unwrap().der().to_vec();
        let info = CertInfo::from_der(&der).unwrap();
        assert_eq!(info.names, ["a.example.com", "*.b.example.com"], "SANs, lowercase; not the CN");
        assert_eq!((info.key, info.key_bits, info.hash), (KeyKind::Ecdsa, 384, 5));
        assert!(info.not_before < info.not_after);
        // The CN only without DNS names.
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_RSA_SHA256).unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(rcgen::DnType::CommonName, "CN.example.com");
        let info = CertInfo::from_der(params.self_signed(&key).unwrap().der()).unwrap();
        assert_eq!(info.names, ["cn.example.com"]);
        assert_eq!((info.key, info.key_bits, info.hash), (KeyKind::Rsa, 2048, 4));
        assert!(CertInfo::from_der(b"junk").unwrap_err().contains("not an X.509 certificate"));
        assert_eq!(significant_bits(&[0, 0x80, 0]), 16);
        assert_eq!(significant_bits(&[0x01, 0]), 9);
    }
}
