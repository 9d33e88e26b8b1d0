//! Property tests of what the Vault source reads from Vault/OpenBao answers (login, renewal,
//! AWS secrets engine read), served by a canned HTTP server on 127.0.0.1: garbled answers never
//! panic, every failure has a message that never echoes a token or key, and complete answers come
//! back field for field.

use super::*;
use axum::body::Bytes;
use axum::http::StatusCode;
use proptest::prelude::*;
use std::sync::Mutex;

/// A canned answer server, one per test thread (proptest runs the cases of a test in order).
struct Canned {
    rt: tokio::runtime::Runtime,
    answer: Arc<Mutex<(u16, Vec<u8>)>>,
    api: Api,
    jwt: String,
}

const JWT_PAYLOAD: &str = r#"{"aud":["vault"],"sub":"system:serviceaccount:kube-system:lbc"}"#;

impl Canned {
    fn new() -> Self {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let answer = Arc::new(Mutex::new((200, Vec::new())));
        let served = answer.clone();
        let app = axum::Router::new().fallback(move || {
            let (status, body) = served.lock().unwrap().clone();
            async move { (StatusCode::from_u16(status).unwrap(), Bytes::from(body)) }
        });
        let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        rt.spawn(async move { axum::serve(listener, app).await });
        let b = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let jwt = format!("{}.{}.{}", b(r#"{"alg":"RS256"}"#), b(JWT_PAYLOAD), "c2lnbmF0dXJlLXNlY3JldC1wcm9wcw");
        let token_path = std::env::temp_dir().join(format!("lbc-vault-props-{}-{addr}", std::process::id()));
        std::fs::write(&token_path, &jwt).unwrap();
        let mut cfg = VaultConfig::new(format!("http://{addr}"), "lbc", "lbc");
        cfg.token_path = token_path;
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        Self { rt, answer, api: Api { http, cfg: Arc::new(cfg) }, jwt }
    }

    fn serve(&self, status: u16, body: Vec<u8>) {
        *self.answer.lock().unwrap() = (status, body);
    }

    fn token(&self) -> Token {
        let secret = Secret("hvs.props-token-secret".into());
        Token {
            secret,
            ttl: Duration::from_secs(60),
            renewable: true,
            obtained: Instant::now(),
            increment: Duration::from_secs(60),
            capped: false,
        }
    }
}

thread_local! {
    static CANNED: Canned = Canned::new();
}

/// Values that must never show in an error message.
fn secret() -> impl Strategy<Value = String> {
    "[A-Za-z0-9/+]{24,40}"
}

fn junk() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
        // Vault's own error texts, which select the message.
        prop_oneof![
            Just("Vault is sealed"),
            Just("permission denied"),
            Just("invalid role name"),
            Just("no handler for route"),
            Just("invalid audience (aud) claim")
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z_]{1,8}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn status() -> impl Strategy<Value = u16> {
    prop_oneof![6 => Just(200u16), 1 => Just(204), 1 => prop_oneof![Just(400u16), Just(403), Just(404), Just(429), Just(500), Just(503)]]
}

/// A JSON body from `base`, with some fields swapped for junk (or `errors` added), or not JSON.
fn garble(base: Value, paths: &'static [&'static str]) -> impl Strategy<Value = Vec<u8>> {
    let swap = proptest::collection::vec((proptest::sample::select(paths), junk()), 0..3);
    let errors = proptest::option::weighted(
        0.2,
        proptest::collection::vec(prop_oneof!["\\PC{0,500}", junk().prop_map(|v| v.to_string())], 0..3),
    );
    (swap, errors, proptest::option::weighted(0.05, any::<Vec<u8>>())).prop_map(move |(swap, errors, raw)| {
        if let Some(raw) = raw {
            return raw;
        }
        let mut v = base.clone();
        for (p, j) in swap {
            if let Some(n) = v.pointer_mut(p) {
                *n = j;
            }
        }
        if let (Some(e), Some(m)) = (errors, v.as_object_mut()) {
            m.insert("errors".into(), e.into());
        }
        serde_json::to_vec(&v).unwrap()
    })
}

fn check_error(e: &CredentialError, secrets: &[&str]) -> Result<(), TestCaseError> {
    prop_assert!(!e.message.trim().is_empty());
    for s in secrets {
        prop_assert!(!e.message.contains(s), "the message echoes a secret: {}", e.message);
    }
    Ok(())
}

fn positive(v: &Value) -> Option<u64> {
    v.as_u64().filter(|&s| s > 0)
}

fn text(v: &Value) -> Option<&str> {
    v.as_str().filter(|s| !s.is_empty())
}

const READ_PATHS: &[&str] =
    &["/lease_duration", "/data", "/data/access_key", "/data/secret_key", "/data/security_token", "/data/ttl", ""];
const LOGIN_PATHS: &[&str] = &["/auth", "/auth/client_token", "/auth/lease_duration", "/auth/renewable", ""];

fn read_case() -> impl Strategy<Value = (Value, u16, Vec<u8>, [String; 3])> {
    (secret(), secret(), secret(), any::<u64>(), any::<Option<u32>>(), status()).prop_flat_map(|(a, s, t, lease, ttl, status)| {
        let base = json!({"lease_duration": lease % 7200, "data": {"access_key": a, "secret_key": s, "security_token": t, "ttl": ttl}});
        (Just(base.clone()), Just(status), garble(base, READ_PATHS), Just([a, s, t]))
    })
}

fn login_case() -> impl Strategy<Value = (String, u16, Vec<u8>)> {
    (secret(), 0u64..100_000, any::<bool>(), status()).prop_flat_map(|(token, lease, renewable, status)| {
        let base = json!({"auth": {"client_token": token, "lease_duration": lease, "renewable": renewable}});
        let plain = serde_json::to_vec(&base).unwrap();
        (Just(token), Just(status), prop_oneof![Just(plain), garble(base, LOGIN_PATHS)])
    })
}

proptest! {
    #[test]
    fn secrets_engine_reads((_, status, body, keys) in read_case()) {
        let sent: Option<Value> = serde_json::from_slice(&body).ok();
        let got = CANNED.with(|c| {
            c.serve(status, body.clone());
            c.rt.block_on(c.api.read(&c.token()))
        });
        match got {
            Ok(f) => {
                let v = sent.expect("a JSON body");
                prop_assert!((200..300).contains(&status));
                prop_assert_eq!(Some(f.creds.access_key_id()), text(&v["data"]["access_key"]));
                prop_assert_eq!(Some(f.creds.secret_access_key()), text(&v["data"]["secret_key"]));
                prop_assert_eq!(f.creds.session_token(), text(&v["data"]["security_token"]));
                let lease = positive(&v["lease_duration"]).or_else(|| positive(&v["data"]["ttl"])).map(Duration::from_secs);
                prop_assert_eq!(Some(f.lease), lease.or(Some(Duration::from_secs(15 * 60))));
            }
            Err(e) => {
                let complete = sent.as_ref().is_some_and(|v| text(&v["data"]["access_key"]).is_some() && text(&v["data"]["secret_key"]).is_some());
                prop_assert!(status != 200 || !complete, "a complete answer was refused: {}", e.message);
                check_error(&e, &[keys[0].as_str(), keys[1].as_str(), keys[2].as_str()])?;
            }
        }
    }

    #[test]
    fn logins((token, status, body) in login_case()) {
        let sent: Option<Value> = serde_json::from_slice(&body).ok();
        let (got, jwt) = CANNED.with(|c| {
            c.serve(status, body.clone());
            (c.rt.block_on(c.api.login()), c.jwt.clone())
        });
        match got {
            Ok(t) => {
                let v = sent.expect("a JSON body");
                prop_assert_eq!(Some(t.secret.0.as_str()), text(&v["auth"]["client_token"]));
                prop_assert_eq!(t.ttl, Duration::from_secs(v["auth"]["lease_duration"].as_u64().unwrap_or(0)));
                prop_assert_eq!(t.renewable, v["auth"]["renewable"].as_bool().unwrap_or(false));
            }
            Err(e) => {
                let complete = sent.as_ref().is_some_and(|v| text(&v["auth"]["client_token"]).is_some());
                prop_assert!(status != 200 || !complete, "a complete login answer was refused: {}", e.message);
                check_error(&e, &[token.as_str(), jwt.rsplit('.').next().unwrap()])?;
            }
        }
    }

    #[test]
    fn renewals(lease in any::<u64>(), renewable in any::<bool>(), status in status(), body in proptest::option::weighted(0.3, garble(json!({"auth": {"lease_duration": 1, "renewable": true}}), LOGIN_PATHS))) {
        let body = body.unwrap_or_else(|| serde_json::to_vec(&json!({"auth": {"lease_duration": lease, "renewable": renewable}})).unwrap());
        let sent: Option<Value> = serde_json::from_slice(&body).ok();
        let got = CANNED.with(|c| {
            c.serve(status, body.clone());
            c.rt.block_on(c.api.renew(&c.token()))
        });
        match got {
            Ok((ttl, r)) => {
                let v = sent.expect("a JSON body");
                prop_assert_eq!(Some(ttl), v["auth"]["lease_duration"].as_u64().map(Duration::from_secs));
                prop_assert_eq!(r, v["auth"]["renewable"].as_bool().unwrap_or(false));
            }
            Err(e) => check_error(&e, &["hvs.props-token-secret"])?,
        }
    }

    #[test]
    fn token_claims(ns in proptest::option::of("[a-z0-9-]{1,20}"), name in proptest::option::of("[a-z0-9-]{1,20}"), aud in proptest::collection::vec("[a-z.]{1,10}", 0..3), junk in junk(), cut in any::<prop::sample::Index>()) {
        let b = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let mut payload = json!({"aud": aud, "extra": junk});
        if let (Some(ns), Some(n)) = (&ns, &name) {
            payload["sub"] = format!("system:serviceaccount:{ns}:{n}").into();
        }
        let jwt = format!("e30.{}.sig", b(&payload.to_string()));
        let c = Claims::parse(&jwt);
        prop_assert_eq!(&c.audiences, &aud);
        if ns.is_some() && name.is_some() {
            prop_assert_eq!((c.namespace, c.name), (ns, name));
        }
        // Any prefix of a token (or garbage) parses to something, never a panic.
        let _ = Claims::parse(&jwt[..cut.index(jwt.len() + 1)]);
    }
}
