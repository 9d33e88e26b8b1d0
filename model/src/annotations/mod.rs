//! Reading annotation values in ALBC's formats, collecting every problem instead of stopping at
//! the first. One mechanism for every annotation family: Service (`service.beta.kubernetes.io/…`)
//! and Ingress (`alb.ingress.kubernetes.io/…`) parsers both read through [`Reader`], and the
//! field parsers both need (health checks, tags, capacity, success codes) live in [`fields`].
//!
//! Formats (ALBC `pkg/annotations/parser.go`): a stringList is comma-separated, each item trimmed,
//! empty items dropped; a stringMap is a stringList of `key=value` items (split at the first `=`,
//! the key must be non-empty, the value may be empty); a boolean is what Go's `strconv.ParseBool`
//! accepts (`true`, `false`, `1`, `0`, `t`, `f`, `TRUE`, `True`, …); integers are decimal.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

pub mod fields;
pub mod refusals;

/// One invalid annotation value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("annotation {key}: value {value:?} is not valid; expected {expected}")]
pub struct AnnotationError {
    /// Full annotation key.
    pub key: String,
    /// The value found on the Service.
    pub value: String,
    /// What would have been accepted.
    pub expected: String,
}

/// Every invalid annotation of a Service (never empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnnotationErrors(pub Vec<AnnotationError>);

impl fmt::Display for AnnotationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.len() > 1 {
            write!(f, "{} invalid annotations: ", self.0.len())?;
        }
        let parts: Vec<String> = self.0.iter().map(|e| e.to_string()).collect();
        f.write_str(&parts.join("; "))
    }
}

impl std::error::Error for AnnotationErrors {}

/// A known annotation (or value) the controller does not act on (yet); reported as a Warning,
/// and, when it [fails closed](refusals::Refusal::FailClosed), keeping its stack as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported {
    pub key: String,
    pub reason: String,
    pub refusal: refusals::Refusal,
}

impl Unsupported {
    /// Not applied; the rest is deployed without it.
    pub fn degrade(key: impl Into<String>, reason: impl Into<String>) -> Self {
        Self { key: key.into(), reason: reason.into(), refusal: refusals::Refusal::Degrade }
    }

    pub fn fails_closed(&self) -> bool {
        self.refusal == refusals::Refusal::FailClosed
    }

    /// The Warning text for an annotation deployed without (admission and reconcile say the same).
    pub fn note(&self) -> String {
        format!("annotation {} is not applied: {}", self.key, self.reason)
    }
}

/// Reads annotations by suffix under one prefix, remembering which keys were looked at (so the
/// rest can be reported as unknown) and every error.
pub(crate) struct Reader<'a> {
    annotations: &'a BTreeMap<String, String>,
    prefix: &'static str,
    pub(crate) seen: BTreeSet<String>,
    pub(crate) errors: Vec<AnnotationError>,
}

/// Go's `strconv.ParseBool`.
pub(crate) fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// ALBC's stringList split.
pub(crate) fn split_list(raw: &str) -> Vec<String> {
    raw.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

/// ALBC's stringMap split; `None` when an item has no `=` or an empty key. As ALBC: a backslash
/// takes the next character literally (`\,` is a comma inside a value), a comma ends an item only
/// when an `=` follows somewhere after it (else it stays in the value), and keys and values are
/// trimmed (`team = web` is `team`→`web`). Empty items are skipped.
pub(crate) fn split_map(raw: &str) -> Option<BTreeMap<String, String>> {
    let mut items = Vec::new();
    let mut current = String::new();
    let mut chars = raw.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, next)) => current.push(next),
                None => current.push(c),
            },
            ',' if raw[i + 1..].contains('=') => items.push(std::mem::take(&mut current)),
            ',' if raw[i + 1..].trim().is_empty() => {}
            ',' => {
                // A comma and then text without any `=`: ALBC splits it off as an item of its own,
                // which has no `=`, so the map is refused.
                items.push(std::mem::take(&mut current));
                items.push(raw[i + 1..].to_string());
                break;
            }
            _ => current.push(c),
        }
    }
    items.push(current);
    let mut out = BTreeMap::new();
    for item in items.iter().map(|x| x.trim()).filter(|x| !x.is_empty()) {
        let (k, v) = item.split_once('=')?;
        let k = k.trim();
        if k.is_empty() {
            return None;
        }
        out.insert(k.to_string(), v.trim().to_string());
    }
    Some(out)
}

impl<'a> Reader<'a> {
    /// A reader of the annotations under `prefix` (without the trailing `/`).
    pub(crate) fn new(annotations: &'a BTreeMap<String, String>, prefix: &'static str) -> Self {
        Self { annotations, prefix, seen: BTreeSet::new(), errors: Vec::new() }
    }

    /// The full key of a suffix under this reader's prefix.
    pub(crate) fn key(&self, suffix: &str) -> String {
        format!("{}/{suffix}", self.prefix)
    }

    /// Full keys and values under this prefix whose suffix starts with `family` (e.g.
    /// `actions.`), with the rest of the suffix; all of them count as read.
    pub(crate) fn family(&mut self, family: &str) -> Vec<(String, &'a str, &'a str)> {
        let prefix = format!("{}/{family}", self.prefix);
        let found: Vec<(String, &'a str, &'a str)> = self
            .annotations
            .iter()
            .filter_map(|(k, v)| k.strip_prefix(&prefix).map(|rest| (k.clone(), rest, v.as_str())))
            .collect();
        self.seen.extend(found.iter().map(|(k, _, _)| k.clone()));
        found
    }

    /// Keys under this prefix whose suffix satisfies `family` and that nothing read: typos.
    pub(crate) fn unknown(&self, family: impl Fn(&str) -> bool) -> Vec<String> {
        let prefix = format!("{}/", self.prefix);
        self.annotations
            .keys()
            .filter(|k| k.strip_prefix(&prefix).is_some_and(&family))
            .filter(|k| !self.seen.contains(*k))
            .cloned()
            .collect()
    }

    /// Errors collected so far, as the `Result` parsers return.
    pub(crate) fn finish<T>(self, value: T) -> Result<T, AnnotationErrors> {
        if self.errors.is_empty() { Ok(value) } else { Err(AnnotationErrors(self.errors)) }
    }

    /// Raw value of a full key.
    pub(crate) fn raw_key(&mut self, key: &str) -> Option<&'a str> {
        let v = self.annotations.get(key)?;
        self.seen.insert(key.to_string());
        Some(v.as_str())
    }

    pub(crate) fn raw(&mut self, suffix: &str) -> Option<&'a str> {
        let key = self.key(suffix);
        self.raw_key(&key)
    }

    pub(crate) fn fail(&mut self, key: impl Into<String>, value: impl Into<String>, expected: impl Into<String>) {
        self.errors.push(AnnotationError { key: key.into(), value: value.into(), expected: expected.into() });
    }

    pub(crate) fn string(&mut self, suffix: &str) -> Option<String> {
        self.raw(suffix).map(str::to_string)
    }

    pub(crate) fn bool(&mut self, suffix: &str) -> Option<bool> {
        let raw = self.raw(suffix)?;
        let v = parse_go_bool(raw);
        if v.is_none() {
            self.fail(self.key(suffix), raw, "\"true\" or \"false\"");
        }
        v
    }

    /// A decimal integer within `min..=max`.
    pub(crate) fn int(&mut self, suffix: &str, min: u32, max: u32) -> Option<u32> {
        let raw = self.raw(suffix)?;
        match raw.trim().parse::<u32>() {
            Ok(v) if (min..=max).contains(&v) => Some(v),
            _ => {
                self.fail(self.key(suffix), raw, format!("an integer from {min} to {max}"));
                None
            }
        }
    }

    pub(crate) fn list(&mut self, suffix: &str) -> Option<Vec<String>> {
        self.raw(suffix).map(split_list)
    }

    pub(crate) fn map_key(&mut self, key: &str) -> Option<BTreeMap<String, String>> {
        let raw = self.raw_key(key)?;
        let m = split_map(raw);
        if m.is_none() {
            self.fail(key, raw, "comma-separated key=value pairs with non-empty keys, e.g. \"k1=v1,k2=v2\"");
        }
        m
    }

    pub(crate) fn map(&mut self, suffix: &str) -> Option<BTreeMap<String, String>> {
        let key = self.key(suffix);
        self.map_key(&key)
    }

    /// One of a fixed set of words (exact match, as ALBC compares them).
    pub(crate) fn one_of(&mut self, suffix: &str, accepted: &[&str]) -> Option<&'a str> {
        let raw = self.raw(suffix)?;
        if accepted.contains(&raw) {
            Some(raw)
        } else {
            let words: Vec<String> = accepted.iter().map(|w| format!("\"{w}\"")).collect();
            self.fail(self.key(suffix), raw, format!("one of {}", words.join(", ")));
            None
        }
    }

    /// Every item of a list must satisfy `ok`; invalid items are reported together.
    pub(crate) fn checked_list<T>(
        &mut self,
        suffix: &str,
        expected: &str,
        ok: impl Fn(&str) -> Option<T>,
    ) -> Option<Vec<T>> {
        let raw = self.raw(suffix)?;
        let items = split_list(raw);
        let parsed: Vec<Option<T>> = items.iter().map(|s| ok(s)).collect();
        let bad: Vec<&str> = items.iter().zip(&parsed).filter(|(_, p)| p.is_none()).map(|(s, _)| s.as_str()).collect();
        if !bad.is_empty() {
            self.fail(self.key(suffix), raw, format!("{expected} (invalid: {})", bad.join(", ")));
            return None;
        }
        Some(parsed.into_iter().flatten().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_and_map_follow_albc() {
        assert_eq!(split_list(" a, b ,,c ,"), ["a", "b", "c"]);
        assert!(split_list(" , ").is_empty());
        let m = split_map("k1=v1, k2=a=b ,k3=").unwrap();
        assert_eq!(m["k1"], "v1");
        assert_eq!(m["k2"], "a=b");
        assert_eq!(m["k3"], "");
        assert_eq!(split_map("k1"), None);
        assert_eq!(split_map("=v"), None);
        assert_eq!(split_map(""), Some(BTreeMap::new()));
        // Spaces around `=` and escaped commas, as ALBC's parser reads them.
        let m = split_map("team = web , note=a\\,b,x=1,").unwrap();
        assert_eq!((m["team"].as_str(), m["note"].as_str(), m["x"].as_str()), ("web", "a,b", "1"));
        assert_eq!(split_map("k=v,w"), None, "text after a comma without = is an item without =");
        assert_eq!(split_map(" = v"), None);
    }

    #[test]
    fn go_bools() {
        for t in ["1", "t", "T", "true", "TRUE", "True"] {
            assert_eq!(parse_go_bool(t), Some(true), "{t}");
        }
        for f in ["0", "f", "F", "false", "FALSE", "False"] {
            assert_eq!(parse_go_bool(f), Some(false), "{f}");
        }
        for bad in ["yes", "on", "", " true", "tRUE"] {
            assert_eq!(parse_go_bool(bad), None, "{bad}");
        }
    }

    #[test]
    fn errors_render_key_value_and_expectation() {
        let e = AnnotationError { key: "k".into(), value: "v".into(), expected: "x".into() };
        assert_eq!(e.to_string(), "annotation k: value \"v\" is not valid; expected x");
        let all = AnnotationErrors(vec![e.clone(), e]);
        assert!(all.to_string().starts_with("2 invalid annotations: annotation k"));
    }
}
