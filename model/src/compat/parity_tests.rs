use super::*;
use crate::annotations::refusals::{INGRESS, Refused as Refusal, SERVICE};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The workspace root: `tests` entries are relative to it.
fn root() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).to_path_buf()
}

/// `fn <name>(` declared on `line` (`pub`, `pub(crate)`, `async` allowed).
fn declares(line: &str, name: &str) -> bool {
    let mut t = line.trim_start();
    for prefix in ["pub(crate) ", "pub ", "async "] {
        t = t.strip_prefix(prefix).unwrap_or(t);
    }
    t.strip_prefix("fn ").and_then(|rest| rest.strip_prefix(name)).is_some_and(|rest| rest.starts_with('('))
}

/// `source` has a test function `name`: within the 3 lines above its `fn` line, and with only
/// attributes or comments between, `#[test]`, `#[tokio::test…]` or a `proptest!` block opening.
fn has_test(source: &str, name: &str) -> bool {
    let lines: Vec<&str> = source.lines().collect();
    lines.iter().enumerate().any(|(i, line)| {
        declares(line, name)
            && lines[i.saturating_sub(3)..i]
                .iter()
                .rev()
                .map(|l| l.trim())
                .take_while(|l| l.starts_with("#[") || l.starts_with("//") || l.starts_with("proptest!"))
                .any(|l| l.starts_with("#[test]") || l.starts_with("#[tokio::test") || l.starts_with("proptest!"))
    })
}

/// Each of `tests` (`<file>::<test function>`) exists; else a problem naming `what`.
fn check_tests<'a>(
    what: &str,
    tests: &[&'a str],
    sources: &mut BTreeMap<&'a str, Option<String>>,
    problems: &mut Vec<String>,
) {
    for t in tests {
        let Some((file, name)) = t.split_once("::") else {
            problems.push(format!("{what}: {t:?} is not <file>::<test function>"));
            continue;
        };
        let source = sources.entry(file).or_insert_with(|| std::fs::read_to_string(root().join(file)).ok());
        let found = |src: &str| match file.ends_with(".py") {
            true => name.starts_with("test_") && src.lines().any(|l| l.starts_with(&format!("def {name}("))),
            false => has_test(src, name),
        };
        match source {
            None => problems.push(format!("{what}: {file} does not exist")),
            Some(src) if !found(src) => problems.push(format!("{what}: no test fn {name} in {file}")),
            Some(_) => {}
        }
    }
}

/// Every supported row names at least one test, every named test exists, and no row is missing.
#[test]
fn supported_rows_name_tests_that_exist_and_none_is_missing() {
    let mut sources: BTreeMap<&str, Option<String>> = BTreeMap::new();
    let mut problems = Vec::new();
    for r in PARITY {
        let what = format!("{:?} {}", r.kind, r.key);
        if r.status == Status::Missing {
            problems.push(format!("{what}: MISSING, neither applied nor refused"));
        }
        if r.status.is_supported() && r.tests.is_empty() {
            problems.push(format!("{what}: {} but names no test", r.status.label()));
        }
        check_tests(&what, r.tests, &mut sources, &mut problems);
    }
    for p in &problems {
        eprintln!("parity: {p}");
    }
    assert!(problems.is_empty(), "{} problem(s) in the parity table:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn the_test_finder_needs_the_attribute_above_the_fn() {
    let src = "#[test]\nfn a() {}\n\nfn b() {}\n#[tokio::test]\n#[ignore = \"e2e\"]\nasync fn c() {}\n\
               proptest! {\n    #[test]\n    fn d(x in 0..1) {}\n}\n#[test]\n/// Doc.\nfn ab() {}\n\
               proptest! {\n    fn e() {}\n}\n#[test]\nfn f_not_g() {}\n";
    let cases = [("a", true), ("b", false), ("c", true), ("d", true), ("ab", true), ("e", true), ("f", false)];
    for (name, want) in cases {
        assert_eq!(has_test(src, name), want, "{name}");
    }
}

/// The refusal that covers `key` in `table`: exact, or the family `key` starts with.
fn refusal_of<'a>(table: &'a [Refusal], key: &str) -> Option<&'a Refusal> {
    table.iter().find(|r| if r.family { key.starts_with(r.suffix) } else { key == r.suffix })
}

fn table_of(kind: Kind) -> &'static [Refusal] {
    match kind {
        Kind::ServiceAnnotation => SERVICE,
        Kind::IngressAnnotation => INGRESS,
        Kind::IngressClassParamsField => &[],
    }
}

/// Refused on a Service, but a pod annotation that the pod webhook applies: supported.
const REFUSED_BUT_SUPPORTED: &[(Kind, &str)] =
    &[(Kind::ServiceAnnotation, crate::service::keys::QUIC_ENABLED_CONTAINERS)];

/// Refused rows are the refusal tables' keys, with their reasons; every refusal has its rows.
#[test]
fn refused_rows_are_exactly_the_refusals() {
    let mut problems = Vec::new();
    for r in PARITY {
        let refusal = refusal_of(table_of(r.kind), r.key);
        let excepted = REFUSED_BUT_SUPPORTED.contains(&(r.kind, r.key));
        match (r.status, refusal) {
            (Status::Refused, None) => {
                problems.push(format!("{:?} {}: refused, but not in refusals.rs", r.kind, r.key))
            }
            (Status::Refused, Some(f)) if f.reason != r.note => {
                problems.push(format!("{:?} {}: note {:?}, refusals.rs says {:?}", r.kind, r.key, r.note, f.reason))
            }
            (Status::Supported | Status::SupportedParseOnly, Some(_)) if !excepted => {
                problems.push(format!("{:?} {}: {}, but refusals.rs refuses it", r.kind, r.key, r.status.label()))
            }
            (_, None) if excepted => problems.push(format!("{:?} {}: no longer refused on a Service", r.kind, r.key)),
            _ => {}
        }
    }
    for (kind, table) in [(Kind::ServiceAnnotation, SERVICE), (Kind::IngressAnnotation, INGRESS)] {
        for f in table {
            let covered: Vec<&Row> =
                rows(kind).filter(|r| refusal_of(table, r.key).is_some_and(|g| std::ptr::eq(g, f))).collect();
            if REFUSED_BUT_SUPPORTED.contains(&(kind, f.suffix)) {
                if covered.is_empty() || covered.iter().any(|r| r.status != Status::Supported) {
                    problems.push(format!("{kind:?} {}: the pod annotation's row must be supported", f.suffix));
                }
            } else if covered.is_empty() || covered.iter().any(|r| r.status != Status::Refused) {
                problems.push(format!("{kind:?} {} (refusals.rs) has no refused row of its own", f.suffix));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_key_is_listed_twice() {
    let mut seen = BTreeSet::new();
    let twice: Vec<String> =
        PARITY.iter().filter(|r| !seen.insert((r.kind, r.key))).map(|r| format!("{:?} {}", r.kind, r.key)).collect();
    assert!(twice.is_empty(), "listed twice: {twice:?}");
}

/// What was counted in ALBC v3.5 (see the module's documentation); a key added to or dropped from
/// the table changes these on purpose.
#[test]
fn every_albc_key_counted_has_its_row() {
    let count = |k: Kind| rows(k).count();
    assert_eq!(count(Kind::ServiceAnnotation), 47 + 1 + 2, "SvcLBSuffix*, the QUIC pod annotation, 2 built in code");
    assert_eq!(count(Kind::IngressAnnotation), 69 + 3, "IngressSuffix*, actions/conditions/transforms");
    assert_eq!(count(Kind::IngressClassParamsField), 20, "IngressClassParamsSpec's fields");
    for r in PARITY {
        assert!(!r.key.is_empty() && !r.key.contains(' '), "{r:?}");
        assert!(!r.note.contains('\n'), "{r:?}");
    }
}

/// A concrete key for a family row.
fn sample(kind: Kind, key: &str) -> String {
    let listener = if kind == Kind::ServiceAnnotation { "TCP-80" } else { "HTTP-80" };
    let key = key
        .replace("${Protocol}-${Port}", listener)
        .replace("${Port}", "80")
        .replace("${service-name}.${service-port}", "web.80");
    let key =
        ["${action-name}", "${conditions-name}", "${transforms-name}"].iter().fold(key, |k, p| k.replace(p, "web"));
    assert!(!key.contains("${"), "no sample for the placeholder of {key}");
    key
}

/// Every annotation row that is not missing is read by our parser: not reported as unknown
/// (an invalid value is an error naming it, which counts as read); refused rows are reported as
/// refused.
#[test]
fn annotation_rows_are_read_by_our_parsers() {
    let mut problems = Vec::new();
    for r in PARITY.iter().filter(|r| r.kind != Kind::IngressClassParamsField && r.status != Status::Missing) {
        let key = sample(r.kind, r.key);
        let (full, parsed) = match r.kind {
            Kind::ServiceAnnotation => {
                let full = crate::service::keys::full_key(&key);
                let map = BTreeMap::from([(full.clone(), "x".to_string())]);
                let parsed = crate::service::parse_annotations(&map).map(|s| (s.unknown, s.unsupported));
                (full, parsed)
            }
            _ => {
                let full = crate::ingress::keys::full_key(&key);
                let map = BTreeMap::from([(full.clone(), "x".to_string())]);
                let parsed = crate::ingress::parse_annotations(&map, "shop").map(|s| (s.unknown, s.unsupported));
                (full, parsed)
            }
        };
        match parsed {
            Ok((unknown, _)) if unknown.contains(&full) => problems.push(format!("{full}: reported as unknown")),
            Ok((_, unsupported)) if r.status == Status::Refused && !unsupported.iter().any(|u| u.key == full) => {
                problems.push(format!("{full}: a refused row, but not reported as refused"))
            }
            Ok(_) => {}
            Err(e) if !e.0.iter().any(|e| e.key == full) => problems.push(format!("{full}: errors name others: {e}")),
            Err(_) => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every IngressClassParams row that is not missing is a field of our spec type: it survives a
/// round trip (serde drops what the type does not have).
#[test]
fn params_rows_are_fields_of_our_spec() {
    let given = serde_json::json!({
        "loadBalancerName": "shop", "certificateArn": ["arn:c"], "namespaceSelector": {"matchLabels": {"a": "b"}},
        "group": {"name": "g"}, "scheme": "internal", "inboundCIDRs": ["10.0.0.0/8"], "sslPolicy": "P",
        "sslRedirectPort": "443", "subnets": {"ids": ["subnet-1"]}, "ipAddressType": "ipv4",
        "tags": [{"key": "k", "value": "v"}], "targetType": "ip",
        "loadBalancerAttributes": [{"key": "k", "value": "v"}],
        "listeners": [{"protocol": "HTTPS", "port": 443, "listenerAttributes": [{"key": "k", "value": "v"}]}],
        "minimumLoadBalancerCapacity": {"capacityUnits": 1}, "ipamConfiguration": {"ipv4IPAMPoolId": "ipam-pool-1"},
        "PrefixListsIDs": ["pl-1"], "prefixListsIDs": ["pl-2"], "wafv2AclArn": "arn:w", "wafv2AclName": "w",
    });
    let fields: BTreeSet<&str> = rows(Kind::IngressClassParamsField).map(|r| r.key).collect();
    let keys: BTreeSet<&str> = given.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, fields, "this test's object has one value per row");
    let spec: crate::crd::IngressClassParamsSpec = serde_json::from_value(given).expect("ALBC's fields");
    let back = serde_json::to_value(&spec).unwrap();
    for r in rows(Kind::IngressClassParamsField).filter(|r| r.status != Status::Missing) {
        assert!(back.get(r.key).is_some(), "spec.{} is dropped: {back}", r.key);
    }
}

/// `docs/parity.md` is [`render`]'s output; `LBC_WRITE_PARITY=1` writes it instead.
#[test]
fn docs_page_matches_the_table() {
    let path = root().join("docs/parity.md");
    let want = render();
    if std::env::var("LBC_WRITE_PARITY").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &want).expect("write docs/parity.md");
        return;
    }
    let got = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        got == want,
        "docs/parity.md differs from the table in model/src/compat/parity.rs; regenerate it with \
         LBC_WRITE_PARITY=1 cargo test -p lbc-model --lib compat::parity"
    );
}

#[test]
fn render_counts_and_escapes() {
    let page = render();
    assert!(page.contains("model/src/compat/parity.rs") && page.contains("LBC_WRITE_PARITY=1"));
    for kind in Kind::ALL {
        assert!(page.contains(&format!("## {}", kind.title())), "{kind:?}");
    }
    let supported = rows(Kind::IngressClassParamsField).filter(|r| r.status.is_supported()).count();
    assert!(page.contains(&format!("{supported} of 20 supported")), "{page}");
    assert_eq!(cell("a|b\nc"), "a\\|b c");
}

/// The gate rows are ALBC's gates in order; each honoured gate names a test of its effect (or is
/// listed as parse-only, with none), each gate at ALBC's default shows that behaviour, and every
/// cited test exists.
#[test]
fn every_gate_has_its_row_and_its_tests_exist() {
    use crate::compat::parity_gates::{FEATURE_ABSENT, GATE_TESTS, PARSE_ONLY, status};
    use crate::compat::{GATES, Here};
    let names: Vec<&str> = GATE_TESTS.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, GATES.iter().map(|g| g.name).collect::<Vec<_>>(), "GATE_TESTS follows GATES");
    let (mut sources, mut problems) = (BTreeMap::new(), Vec::new());
    for (g, (_, tests)) in GATES.iter().zip(GATE_TESTS) {
        let what = format!("gate {}", g.name);
        let at_default =
            matches!(g.here, Here::Fixed(v, _) if v == g.albc_default && !FEATURE_ABSENT.contains(&g.name));
        let parse_only = PARSE_ONLY.contains(&g.name);
        if parse_only && (g.here != Here::Honoured || !tests.is_empty()) {
            problems.push(format!("{what}: listed as parse-only, but {} with tests {tests:?}", status(g)));
        }
        let honoured = matches!(g.here, Here::Honoured | Here::OptIn(_));
        if (honoured && !parse_only || at_default) && tests.is_empty() {
            problems.push(format!("{what}: {} but names no test", status(g)));
        }
        check_tests(&what, tests, &mut sources, &mut problems);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The flag rows are ALBC's 60 bound flags, each once; every ALBC-only flag and alias has its row
/// (at ALBC's default value); each honoured flag names a test of its effect (or is listed as
/// parse-only, with none); every cited test exists.
#[test]
fn every_flag_has_its_row_and_its_tests_exist() {
    use crate::compat::ALBC_ONLY_FLAGS;
    use crate::compat::parity_flags::{ALIASES, FLAGS, FlagStatus, PARSE_ONLY, status};
    let names: BTreeSet<&str> = FLAGS.iter().map(|f| f.name).collect();
    assert_eq!((names.len(), FLAGS.len()), (60, 60), "60 distinct flags");
    let (mut sources, mut problems) = (BTreeMap::new(), Vec::new());
    for f in ALBC_ONLY_FLAGS {
        match FLAGS.iter().find(|r| r.name == f.name) {
            None => problems.push(format!("ALBC-only flag --{} has no row", f.name)),
            Some(r) if r.example != f.albc_default => {
                problems.push(format!("--{}: example {:?}, ALBC's default {:?}", f.name, r.example, f.albc_default))
            }
            Some(_) => {}
        }
    }
    for (albc, _) in ALIASES {
        if !names.contains(albc) {
            problems.push(format!("alias --{albc} has no row"));
        }
    }
    for f in FLAGS {
        let what = format!("flag --{}", f.name);
        let parse_only = PARSE_ONLY.contains(&f.name);
        if parse_only && (status(f.name) != FlagStatus::Honoured || !f.tests.is_empty()) {
            problems.push(format!("{what}: listed as parse-only, but {:?} with tests {:?}", status(f.name), f.tests));
        }
        if !parse_only && f.tests.is_empty() {
            problems.push(format!("{what}: {:?} but names no test", status(f.name)));
        }
        check_tests(&what, f.tests, &mut sources, &mut problems);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
