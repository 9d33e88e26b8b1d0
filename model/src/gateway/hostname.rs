//! Hostnames of listeners and routes: the intersection that decides whether a route attaches to
//! a listener and for which hostnames it routes there (`HTTPRouteSpec.hostnames`, `Listener.hostname`).
//!
//! A wildcard `*.example.com` is a suffix match of one or more labels: it matches `foo.example.com`
//! and `foo.bar.example.com`, never `example.com`. Hostnames are compared without regard to case.

/// `host` without its wildcard label: `Some("example.com")` for `*.example.com`.
fn wildcard_suffix(host: &str) -> Option<&str> {
    host.strip_prefix("*.")
}

/// `name` (exact, or a wildcard standing for the names under its suffix) lies under the wildcard
/// whose suffix is `suffix`: it ends with `.<suffix>` after at least one more label.
fn under(name: &str, suffix: &str) -> bool {
    let name = wildcard_suffix(name).unwrap_or(name);
    name.strip_suffix(suffix).and_then(|head| head.strip_suffix('.')).is_some_and(|label| !label.is_empty())
}

/// The hostnames a listener of `listener` hostname and a route naming `route` have in common:
/// the more specific of the two, or `None` when they have none.
pub fn intersect(listener: Option<&str>, route: &str) -> Option<String> {
    let route = route.to_ascii_lowercase();
    let Some(listener) = listener.map(str::to_ascii_lowercase) else { return Some(route) };
    if listener == route {
        return Some(route);
    }
    match (wildcard_suffix(&listener), wildcard_suffix(&route)) {
        // `*.example.com` and `foo.example.com`: the route's exact name.
        (Some(l), None) if under(&route, l) => Some(route),
        // `foo.example.com` and `*.example.com`: the listener's exact name.
        (None, Some(r)) if under(&listener, r) => Some(listener),
        // Two wildcards: the narrower one, when it lies under the other.
        (Some(l), Some(_)) if under(&route, l) => Some(route),
        (Some(_), Some(r)) if under(&listener, r) => Some(listener),
        _ => None,
    }
}

/// What a route's `hostnames` become on a listener: `Some(vec![])` when neither side restricts
/// (every host), `Some(names)` with the intersections (sorted, without duplicates), `None` when
/// the route has hostnames and none intersects the listener's.
pub fn on_listener(listener: Option<&str>, route: &[String]) -> Option<Vec<String>> {
    if route.is_empty() {
        return Some(listener.map(|l| vec![l.to_ascii_lowercase()]).unwrap_or_default());
    }
    let mut out: Vec<String> = route.iter().filter_map(|r| intersect(listener, r)).collect();
    out.sort();
    out.dedup();
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec's examples (`HTTPRouteSpec.hostnames`) and the conformance suite's
    /// `httproute-hostname-intersection.yaml`.
    #[test]
    fn intersection_table() {
        let cases: &[(Option<&str>, &str, Option<&str>)] = &[
            (None, "foo.example.com", Some("foo.example.com")),
            (None, "*.example.com", Some("*.example.com")),
            (Some("test.example.com"), "test.example.com", Some("test.example.com")),
            (Some("test.example.com"), "*.example.com", Some("test.example.com")),
            (Some("test.example.com"), "Test.Example.com", Some("test.example.com")),
            (Some("test.example.com"), "other.example.com", None),
            (Some("*.example.com"), "*.example.com", Some("*.example.com")),
            (Some("*.example.com"), "test.example.com", Some("test.example.com")),
            (Some("*.example.com"), "foo.test.example.com", Some("foo.test.example.com")),
            (Some("*.example.com"), "example.com", None),
            (Some("*.example.com"), "test.example.net", None),
            (Some("*.example.com"), "fooexample.com", None),
            (Some("*.example.com"), "*.foo.example.com", Some("*.foo.example.com")),
            (Some("*.foo.example.com"), "*.example.com", Some("*.foo.example.com")),
            (Some("very.specific.com"), "*.specific.com", Some("very.specific.com")),
            (Some("*.wildcard.io"), "*.nonmatchingwildcard.io", None),
            (Some("*.anotherwildcard.io"), "*.anotherwildcard.io", Some("*.anotherwildcard.io")),
            (Some("*.wildcard.io"), "wildcard.io", None),
            (Some("foo.example.com"), "*.foo.example.com", None),
        ];
        for (listener, route, want) in cases {
            assert_eq!(intersect(*listener, route).as_deref(), *want, "listener {listener:?}, route {route:?}");
        }
    }

    #[test]
    fn a_route_without_hostnames_takes_the_listeners() {
        assert_eq!(on_listener(None, &[]), Some(vec![]));
        assert_eq!(on_listener(Some("a.example.com"), &[]), Some(vec!["a.example.com".to_string()]));
        let route = vec!["x.example.com".to_string(), "*.example.com".to_string(), "y.other.io".to_string()];
        assert_eq!(on_listener(Some("x.example.com"), &route), Some(vec!["x.example.com".to_string()]));
        assert_eq!(
            on_listener(Some("*.example.com"), &route),
            Some(vec!["*.example.com".to_string(), "x.example.com".to_string()])
        );
        assert_eq!(on_listener(Some("z.net"), &route), None);
    }
}
