//! Listener rule transforms: what a forwarded request looks like to its target once the rule's
//! `host-header-rewrite` and `url-rewrite` transforms are applied.
//!
//! From AWS's text (Elastic Load Balancing User Guide, "Transforms for listener rules"; API
//! `RewriteConfig`):
//! - `host-header-rewrite` "uses a regular expression to match a pattern in the host header and then
//!   replaces it with a replacement string"; `url-rewrite` does so "in the request URL", which is
//!   its path and query string ("you can't modify the protocol or port of the URL");
//! - "Rewriting a request does not change the routing decision made when evaluating the rule
//!   conditions": the conditions see the request as the client sent it;
//! - "If there is no pattern match, the original request is sent to the target"; "If there is a
//!   pattern match but the transform fails, we return an HTTP 500 error";
//! - Replace may name capture groups ("for example, $1 and $2"); one transform of each type per
//!   rule, none on the default rule (the emulator refuses the rest).
//!
//! Our assumptions, where that text is silent:
//! - the first match of the regex is replaced (the examples' regexes are anchored: one match);
//! - `$N` (all the digits that follow the `$`) is group N, `$0` the whole match; any other `$` is
//!   literal; a `$N` the regex has no group N for fails the transform (500 when the regex matches),
//!   a group that exists but took no part in the match is empty (`(/)?`);
//! - several rewrites of one transform apply in order, each to the previous one's result;
//! - the result fails the transform (500) when it cannot be sent: a URL that does not start with
//!   `/` or has a character outside visible ASCII (or `#`), a host that is empty or has a
//!   character a URI host and port cannot have;
//! - a request without a `Host` header (HTTP/1.0) gets no host rewrite;
//! - transforms apply to `forward` actions only (redirects and fixed responses answer from the
//!   request as sent), before a target is picked (a failing transform is a 500 even when no target
//!   is registered); the `X-Forwarded-*` headers the data plane adds are the same either way.

use super::http::Request;
use super::model::{ListenerView, RuleView};
use super::pattern::compiled;
use serde::Deserialize;
use std::borrow::Cow;

/// A rule transform as the view sends it.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct TransformView {
    /// `host-header-rewrite` or `url-rewrite`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub rewrites: Vec<RewriteView>,
}

/// One `RewriteConfig`: the regex and its AWS replacement string (`$1` for group 1).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct RewriteView {
    pub regex: String,
    pub replace: String,
}

/// An AWS replacement string in the `regex` crate's syntax (`$N` → `${N}`, where the crate would
/// read `$1abc` as a group named `1abc`; any other `$` → `$$`, a literal `$`), with the highest
/// group number it names.
fn replacement(aws: &str) -> (String, Option<usize>) {
    let (mut out, mut highest) = (String::with_capacity(aws.len() + 8), None::<usize>);
    let mut rest = aws;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            out.push_str("$$");
        } else {
            let n = after[..digits].parse::<usize>().unwrap_or(usize::MAX);
            highest = highest.max(Some(n));
            out.push_str(&format!("${{{}}}", &after[..digits]));
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    (out, highest)
}

/// `input` with the first match of `rw.regex` replaced; `Ok(None)` without a match.
pub fn rewrite(rw: &RewriteView, input: &str) -> Result<Option<String>, String> {
    let re = compiled(&rw.regex)?;
    let Some(caps) = re.captures(input) else { return Ok(None) };
    let (template, highest) = replacement(&rw.replace);
    if let Some(n) = highest.filter(|n| *n >= re.captures_len()) {
        return Err(format!(
            "rewrite {:?} -> {:?}: ${n} names a group the regex does not have ({} group(s))",
            rw.regex,
            rw.replace,
            re.captures_len() - 1
        ));
    }
    let whole = caps.get(0).map_or(0..0, |m| m.range());
    let mut out = input[..whole.start].to_string();
    caps.expand(&template, &mut out);
    out.push_str(&input[whole.end..]);
    Ok(Some(out))
}

/// The rewrites of one transform applied in turn; `Ok(None)` when none matched.
fn rewrite_all(rewrites: &[RewriteView], input: &str) -> Result<Option<String>, String> {
    let mut value: Option<String> = None;
    for rw in rewrites {
        if let Some(next) = rewrite(rw, value.as_deref().unwrap_or(input))? {
            value = Some(next);
        }
    }
    Ok(value)
}

/// Whether a rewritten URL can go on a request line: origin form, visible ASCII, no fragment.
fn check_url(url: &str) -> Result<(), String> {
    if url.starts_with('/') && url.bytes().all(|b| b.is_ascii_graphic() && b != b'#') {
        return Ok(());
    }
    Err(format!(
        "url-rewrite result {url:?} is not a path and query to send: expected \"/\" first, then visible ASCII without \"#\""
    ))
}

/// Whether a rewritten Host header is a URI host (and port): reg-name, IPv4 or `[IPv6]` characters.
fn check_host(host: &str) -> Result<(), String> {
    let allowed = |b: u8| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=%:[]".contains(&b);
    if !host.is_empty() && host.bytes().all(allowed) {
        return Ok(());
    }
    Err(format!("host-header-rewrite result {host:?} is not a host to send (RFC 3986 host and port characters)"))
}

/// The request the target receives: `req` with `transforms` (the matched rule's) applied; the
/// error (answered 500) when a transform matches but fails.
pub fn apply<'r>(transforms: &[TransformView], req: &'r Request) -> Result<Cow<'r, Request>, String> {
    let mut out = Cow::Borrowed(req);
    for t in transforms {
        match t.kind.as_str() {
            "host-header-rewrite" => {
                let Some(host) = req.header("host") else { continue };
                if let Some(new) = rewrite_all(&t.rewrites, host)? {
                    check_host(&new)?;
                    if let Some(h) = out.to_mut().headers.iter_mut().find(|(k, _)| k == "host") {
                        h.1 = new;
                    }
                }
            }
            "url-rewrite" => {
                if let Some(new) = rewrite_all(&t.rewrites, &req.target)? {
                    check_url(&new)?;
                    out.to_mut().target = new;
                }
            }
            other => return Err(format!("transform {other} is not supported by lbc-dataplane")),
        }
    }
    Ok(out)
}

/// What the data plane cannot evaluate in this HTTP listener's rules, for the log (once per
/// listener change): condition regexes the `regex` crate does not compile (the condition never
/// matches), transforms it cannot apply (a request forwarded through them is answered 500).
pub fn problems(l: &ListenerView) -> Vec<String> {
    let mut out = Vec::new();
    for r in &l.rules {
        let place =
            |what: String| format!("listener port={} rule priority {}: {what}", l.port, r.priority.unwrap_or(0));
        for c in &r.conditions {
            for e in c.regex_values.iter().filter_map(|v| compiled(v).err()) {
                out.push(place(format!("{} condition {e}: the condition never matches", c.field)));
            }
        }
        out.extend(transform_problems(r).into_iter().map(|e| place(format!("{e} (answered 500)"))));
    }
    out
}

fn transform_problems(r: &RuleView) -> Vec<String> {
    let mut out = Vec::new();
    for t in &r.transforms {
        if !matches!(t.kind.as_str(), "host-header-rewrite" | "url-rewrite") {
            out.push(format!("transform {} is not supported by lbc-dataplane", t.kind));
            continue;
        }
        out.extend(t.rewrites.iter().filter_map(|rw| compiled(&rw.regex).err().map(|e| format!("{} {e}", t.kind))));
    }
    out
}

#[cfg(test)]
#[path = "transform_tests.rs"]
mod tests;
