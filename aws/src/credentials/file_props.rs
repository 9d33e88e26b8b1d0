//! Property tests of the shared-credentials file parser: any text parses or fails with a message
//! that never echoes a value, and a rendered profile comes back field for field.

use super::file::{Parsed, parse};
use proptest::prelude::*;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn secret() -> impl Strategy<Value = String> {
    "[A-Za-z0-9/+]{20,40}"
}

/// A profile as a file would spell it, with the expected parse.
#[derive(Clone, Debug)]
struct Profile {
    name: String,
    lines: Vec<String>,
    parsed: Parsed,
}

fn key(canonical: &'static str) -> impl Strategy<Value = String> {
    // Keys are case-insensitive and may be padded.
    (any::<bool>(), "[ \t]{0,2}", "[ \t]{0,2}").prop_map(move |(upper, a, b)| {
        let k = if upper { canonical.to_ascii_uppercase() } else { canonical.to_string() };
        format!("{a}{k}{b}")
    })
}

fn profile(name: String) -> impl Strategy<Value = Profile> {
    let token_key = prop_oneof![Just("aws_session_token"), Just("aws_security_token")];
    let expiry_key = prop_oneof![Just("expiration"), Just("aws_expiration"), Just("x_security_token_expires")];
    (
        (key("aws_access_key_id"), secret()),
        (key("aws_secret_access_key"), secret()),
        proptest::option::of((token_key.prop_flat_map(key), secret())),
        proptest::option::of((expiry_key.prop_flat_map(key), 0i64..4_000_000_000)),
        any::<bool>(),
        proptest::collection::vec(
            prop_oneof![Just("# comment"), Just("; note"), Just(""), Just("region = eu-west-1")],
            0..3,
        ),
    )
        .prop_map(move |((ka, a), (ks, s), token, expiry, profile_word, extra)| {
            let header = if profile_word { format!("[profile {name}]") } else { format!("[ {name} ]") };
            let mut lines = vec![header, format!("{ka}= {a}"), format!("{ks} =  {s}")];
            if let Some((k, t)) = &token {
                lines.push(format!("{k}={t}"));
            }
            if let Some((k, secs)) = &expiry {
                lines.push(format!("{k} = {}", jiff::Timestamp::from_second(*secs).unwrap()));
            }
            lines.extend(extra.into_iter().map(str::to_string));
            let parsed = Parsed {
                access_key_id: a,
                secret_access_key: s,
                session_token: token.map(|(_, t)| t),
                expiration: expiry.map(|(_, secs)| UNIX_EPOCH + Duration::from_secs(secs as u64)),
            };
            Profile { name: name.clone(), lines, parsed }
        })
}

proptest! {
    #[test]
    fn rendered_profiles_round_trip(
        want in profile("lbc".into()),
        others in proptest::collection::vec(profile("other".into()), 0..2),
        first in any::<bool>(),
    ) {
        let mut text: Vec<String> = others.iter().flat_map(|p| p.lines.clone()).collect();
        if first {
            text.splice(0..0, want.lines.clone());
        } else {
            text.extend(want.lines.clone());
        }
        let got = parse(&text.join("\n"), &want.name).map_err(TestCaseError::fail)?;
        prop_assert_eq!(got, want.parsed);
    }

    #[test]
    fn any_text_parses_or_says_what_is_missing(
        p in profile("lbc".into()),
        cut in any::<prop::sample::Index>(),
        noise in proptest::collection::vec(prop_oneof![Just("[".to_string()), Just("=".to_string()), Just("\n".to_string()), any::<String>()], 0..4),
        wanted in prop_oneof![Just("lbc".to_string()), "[a-z]{1,5}"],
    ) {
        let full = p.lines.join("\n");
        let mut text: String = full.chars().take(cut.index(full.chars().count() + 1)).collect();
        text.extend(noise.iter().map(String::as_str));
        match parse(&text, &wanted) {
            Ok(got) => {
                prop_assert!(!got.access_key_id.is_empty() && !got.secret_access_key.is_empty());
                prop_assert!(got.expiration.is_none_or(|e| e >= SystemTime::UNIX_EPOCH));
            }
            Err(message) => {
                prop_assert!(!message.is_empty());
                let secrets = [Some(&p.parsed.access_key_id), Some(&p.parsed.secret_access_key), p.parsed.session_token.as_ref()];
                for s in secrets.into_iter().flatten() {
                    prop_assert!(!message.contains(s.as_str()), "the message echoes a key: {}", message);
                }
            }
        }
    }
}
