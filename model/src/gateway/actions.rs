//! The action of an ALB rule built from an HTTPRoute rule, as ALBC builds it
//! (`routeutils.BuildRuleRoutingAction`): a weighted forward to the rule's target groups, a
//! redirect from a `RequestRedirect` filter, a fixed 500 when no backend resolved (the spec:
//! "requests that would have been sent to an invalid backend MUST receive a 500"), and the
//! listener's fixed 404 for requests no rule matches.
//!
//! ALB redirects answer 301 or 302 only: a `RequestRedirect` asking for 303, 307 or 308 is
//! refused with the reason (ALBC sends `HTTP_307`, which the ELB API refuses: AWS's
//! `RedirectActionConfig.StatusCode` takes `HTTP_301` or `HTTP_302`).

use crate::lb::{Action, TargetGroupRef, WeightedTargetGroup};

/// A `RequestRedirect` filter, as the route wrote it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RedirectFilter {
    pub scheme: Option<String>,
    pub hostname: Option<String>,
    pub port: Option<i32>,
    /// `path.replaceFullPath`.
    pub full_path: Option<String>,
    /// `path.replacePrefixMatch`.
    pub prefix_path: Option<String>,
    /// Default 302 (the CRD's).
    pub status_code: Option<i32>,
}

/// The fixed response a listener gives when no rule matches.
pub fn listener_default() -> Action {
    Action::FixedResponse { status_code: "404".into(), content_type: Some("text/plain".into()), message_body: None }
}

/// The fixed response of a rule none of whose backends resolved.
pub fn no_backend() -> Action {
    Action::FixedResponse { status_code: "500".into(), content_type: Some("text/plain".into()), message_body: None }
}

/// A weighted forward to `target_groups` (name, weight); the rule answers 500 when there is none,
/// or when every weight is 0 (the spec: a backend of weight 0 gets no requests). One group of
/// weight 1 is written without a weight, the form the ELB adapter reads AWS's answer in (AWS
/// reports weight 1 for it), so a resync compares equal.
pub fn forward(target_groups: &[(String, u32)]) -> Action {
    if target_groups.iter().all(|(_, w)| *w == 0) {
        return no_backend();
    }
    let single = target_groups.len() == 1;
    Action::Forward {
        target_groups: target_groups
            .iter()
            .map(|(name, weight)| WeightedTargetGroup {
                target_group: TargetGroupRef::Name(name.clone()),
                weight: (!(single && *weight == 1)).then_some(*weight),
            })
            .collect(),
        stickiness_seconds: None,
    }
}

/// The redirect an ALB sends for `f`. Unset parts keep the request's (`#{host}`, `#{path}`, …):
/// the port of a scheme change without a port is that scheme's (80, 443), as the spec asks.
pub fn redirect(f: &RedirectFilter) -> Result<Action, String> {
    let code = f.status_code.unwrap_or(302);
    if !matches!(code, 301 | 302) {
        return Err(format!(
            "RequestRedirect statusCode {code}: an ALB redirect answers 301 or 302 only; use one of them"
        ));
    }
    let protocol = match f.scheme.as_deref().map(str::to_ascii_uppercase) {
        None => None,
        Some(p) if p == "HTTP" || p == "HTTPS" => Some(p),
        Some(p) => return Err(format!("RequestRedirect scheme {p:?}: expected http or https")),
    };
    let port = f.port.map(|p| p.to_string()).or_else(|| match protocol.as_deref() {
        Some("HTTP") => Some("80".into()),
        Some("HTTPS") => Some("443".into()),
        _ => None,
    });
    if f.prefix_path.is_some() {
        return Err(
            "RequestRedirect path.replacePrefixMatch: not supported on an ALB redirect yet; use replaceFullPath".into(),
        );
    }
    if let Some(p) = f.full_path.as_deref().filter(|p| p.contains(['*', '?'])) {
        return Err(format!("RequestRedirect path.replaceFullPath {p:?}: an ALB redirect path cannot hold `*` or `?`"));
    }
    Ok(Action::Redirect {
        protocol,
        host: f.hostname.clone(),
        port,
        path: f.full_path.clone(),
        query: None,
        status_code: format!("HTTP_{code}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redirect_of(f: RedirectFilter) -> (Option<String>, Option<String>, Option<String>, Option<String>, String) {
        match redirect(&f).unwrap() {
            Action::Redirect { protocol, host, port, path, status_code, .. } => {
                (protocol, host, port, path, status_code)
            }
            other => panic!("{other:?}"),
        }
    }

    /// The suite's HTTPRouteRedirectHostAndStatus and HTTPRoutePortRedirect cases, and scheme
    /// changes with their default ports.
    #[test]
    fn redirects_as_the_spec_and_albc_build_them() {
        let s = |v: &str| Some(v.to_string());
        let host = RedirectFilter { hostname: s("example.org"), ..Default::default() };
        assert_eq!(redirect_of(host.clone()), (None, s("example.org"), None, None, "HTTP_302".into()));
        let moved = RedirectFilter { status_code: Some(301), ..host };
        assert_eq!(redirect_of(moved).4, "HTTP_301");
        let port = RedirectFilter { port: Some(8083), ..Default::default() };
        assert_eq!(redirect_of(port).2, s("8083"));
        let https = RedirectFilter { scheme: s("https"), ..Default::default() };
        assert_eq!(redirect_of(https), (s("HTTPS"), None, s("443"), None, "HTTP_302".into()));
        let http_port = RedirectFilter { scheme: s("http"), port: Some(8080), ..Default::default() };
        assert_eq!(redirect_of(http_port).2, s("8080"));
        let path = RedirectFilter { full_path: s("/new"), ..Default::default() };
        assert_eq!(redirect_of(path).3, s("/new"));
    }

    #[test]
    fn redirects_an_alb_cannot_send_are_refused_with_the_reason() {
        let s = |v: &str| Some(v.to_string());
        let cases = [
            (RedirectFilter { status_code: Some(307), ..Default::default() }, "301 or 302"),
            (RedirectFilter { status_code: Some(308), ..Default::default() }, "301 or 302"),
            (RedirectFilter { scheme: s("ftp"), ..Default::default() }, "\"FTP\""),
            (RedirectFilter { prefix_path: s("/v2"), ..Default::default() }, "replacePrefixMatch"),
            (RedirectFilter { full_path: s("/a*"), ..Default::default() }, "`*` or `?`"),
        ];
        for (f, want) in cases {
            let e = redirect(&f).unwrap_err();
            assert!(e.contains(want), "{f:?}: {e}");
        }
    }

    #[test]
    fn forwards_and_fixed_responses() {
        let a = forward(&[("k8s-a".into(), 1), ("k8s-b".into(), 0)]);
        let Action::Forward { target_groups, stickiness_seconds: None } = &a else { panic!("{a:?}") };
        assert_eq!(target_groups.len(), 2);
        assert_eq!(target_groups[1].weight, Some(0), "weight 0 kept: no traffic, as the spec says");
        assert_eq!(forward(&[]), no_backend());
        assert_eq!(forward(&[("k8s-a".into(), 0), ("k8s-b".into(), 0)]), no_backend(), "all weights 0: 500");
        // One group of weight 1 in the form AWS's answer is read in; any other weight as written.
        let one = |w| match forward(&[("k8s-a".into(), w)]) {
            Action::Forward { target_groups, .. } => target_groups[0].weight,
            other => panic!("{other:?}"),
        };
        assert_eq!((one(1), one(5)), (None, Some(5)));
        let Action::FixedResponse { status_code, .. } = no_backend() else { panic!() };
        assert_eq!(status_code, "500");
        let Action::FixedResponse { status_code, content_type, .. } = listener_default() else { panic!() };
        assert_eq!((status_code.as_str(), content_type.as_deref()), ("404", Some("text/plain")));
    }
}
