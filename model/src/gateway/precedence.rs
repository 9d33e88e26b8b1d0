//! The order of an ALB listener's rules built from HTTPRoutes and GRPCRoutes: one rule per
//! (route, rule, match, hostname), priorities 1, 2, … in this order, as ALBC assigns them (so a
//! Gateway ALBC built is adopted without one ModifyRule or SetRulePriorities).
//!
//! The key, most significant first (ALBC's `compareRulePrecedenceUnified`, which follows the
//! spec's `HTTPRouteSpec.rules` precedence and fills in what the spec leaves open):
//! 1. hostname: a concrete one before the catch-all (no host condition), an exact one before a
//!    wildcard, then more dots, then more characters;
//! 2. match type: exact, prefix, regular expression, none (HTTP path; gRPC method);
//! 3. match length (HTTP path; gRPC service), then the gRPC method's length;
//! 4. an HTTP method match; more header matches; more query-parameter matches;
//! 5. the older route, then `namespace/name`, then rule and match index in the route, then the
//!    hostname's text.

use std::cmp::Ordering;

/// How a match selects the path (HTTP) or method (gRPC); greater is more specific.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MatchType {
    None,
    RegularExpression,
    PathPrefix,
    Exact,
}

/// One ALB rule to be, with what orders it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleKey {
    /// The one hostname of this rule's host condition; empty: none (every host).
    pub hostname: String,
    pub match_type: MatchType,
    /// HTTP: the path's length; gRPC: the service's.
    pub primary_len: usize,
    /// gRPC: the method's length; HTTP: 0.
    pub secondary_len: usize,
    pub has_method: bool,
    pub headers: usize,
    pub query_params: usize,
    /// The route's `metadata.creationTimestamp`, in seconds.
    pub created: i64,
    /// `namespace/name` of the route.
    pub route: String,
    pub rule_index: usize,
    /// `usize::MAX` for a rule without matches.
    pub match_index: usize,
}

/// The hostnames a route's rules are split into: one rule per hostname, or one catch-all.
pub fn split_hostnames(hostnames: &[String]) -> Vec<String> {
    if hostnames.is_empty() { vec![String::new()] } else { hostnames.to_vec() }
}

/// Which of two hostnames is the more specific (`Less`: `a`).
pub fn hostname_order(a: &str, b: &str) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        _ => {}
    }
    let (wa, wb) = (a.starts_with("*."), b.starts_with("*."));
    wa.cmp(&wb).then_with(|| b.matches('.').count().cmp(&a.matches('.').count())).then_with(|| b.len().cmp(&a.len()))
}

/// Which of two rules comes first (`Less`: `a`, the lower priority number).
pub fn compare(a: &RuleKey, b: &RuleKey) -> Ordering {
    hostname_order(&a.hostname, &b.hostname)
        .then_with(|| b.match_type.cmp(&a.match_type))
        .then_with(|| b.primary_len.cmp(&a.primary_len))
        .then_with(|| b.secondary_len.cmp(&a.secondary_len))
        .then_with(|| b.has_method.cmp(&a.has_method))
        .then_with(|| b.headers.cmp(&a.headers))
        .then_with(|| b.query_params.cmp(&a.query_params))
        .then_with(|| a.created.cmp(&b.created))
        .then_with(|| a.route.cmp(&b.route))
        .then_with(|| a.rule_index.cmp(&b.rule_index))
        .then_with(|| a.match_index.cmp(&b.match_index))
        .then_with(|| a.hostname.cmp(&b.hostname))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `keys` in priority order, as [`crate::gateway::alb_rules`] sorts them.
    fn order(mut keys: Vec<RuleKey>) -> Vec<RuleKey> {
        keys.sort_by(compare);
        keys
    }

    fn key(route: &str, rule: usize, match_type: MatchType, path: &str) -> RuleKey {
        RuleKey {
            hostname: String::new(),
            match_type,
            primary_len: path.len(),
            secondary_len: 0,
            has_method: false,
            headers: 0,
            query_params: 0,
            created: 100,
            route: route.into(),
            rule_index: rule,
            match_index: 0,
        }
    }

    /// The suite's HTTPRoutePathMatchOrder route: exact paths first, longest first, then
    /// prefixes, longest first.
    #[test]
    fn exact_then_longer_prefixes() {
        use MatchType::*;
        let r = "infra/path-matching-order";
        let keys = vec![
            key(r, 0, Exact, "/match"),
            key(r, 1, Exact, "/match/exact"),
            key(r, 2, Exact, "/match/exact/one"),
            key(r, 3, PathPrefix, "/match/"),
            key(r, 4, PathPrefix, "/match/prefix/"),
            key(r, 5, PathPrefix, "/match/prefix/one"),
        ];
        let rules: Vec<usize> = order(keys).iter().map(|k| k.rule_index).collect();
        assert_eq!(rules, [2, 1, 0, 5, 4, 3]);
    }

    #[test]
    fn each_criterion_in_turn() {
        use MatchType::*;
        let base = key("a/r", 0, PathPrefix, "/x");
        let with = |f: &dyn Fn(&mut RuleKey)| {
            let mut k = base.clone();
            f(&mut k);
            k
        };
        // (more specific, less specific): the first must come first, whatever the input order.
        let pairs: Vec<(RuleKey, RuleKey)> = vec![
            (with(&|k| k.hostname = "*.example.com".into()), base.clone()),
            (with(&|k| k.hostname = "a.example.com".into()), with(&|k| k.hostname = "*.example.com".into())),
            (with(&|k| k.hostname = "*.a.example.com".into()), with(&|k| k.hostname = "*.example.com".into())),
            (with(&|k| k.hostname = "a.b.io".into()), with(&|k| k.hostname = "longer-name.io".into())),
            (with(&|k| k.hostname = "abc.io".into()), with(&|k| k.hostname = "ab.io".into())),
            (with(&|k| k.match_type = Exact), base.clone()),
            (base.clone(), with(&|k| k.match_type = RegularExpression)),
            (with(&|k| k.match_type = RegularExpression), with(&|k| k.match_type = None)),
            (with(&|k| k.primary_len = 9), base.clone()),
            (with(&|k| k.secondary_len = 4), base.clone()),
            (with(&|k| k.has_method = true), base.clone()),
            (with(&|k| k.headers = 2), with(&|k| k.headers = 1)),
            (with(&|k| k.query_params = 1), base.clone()),
            (with(&|k| k.created = 50), base.clone()),
            (with(&|k| k.route = "a/q".into()), base.clone()),
            (base.clone(), with(&|k| k.rule_index = 1)),
            (base.clone(), with(&|k| k.match_index = usize::MAX)),
            (with(&|k| k.hostname = "a.io".into()), with(&|k| k.hostname = "b.io".into())),
            // Hostname outranks everything below it.
            (with(&|k| k.hostname = "a.io".into()), with(&|k| k.match_type = Exact)),
            (
                with(&|k| k.match_type = Exact),
                with(&|k| {
                    k.primary_len = 50;
                    k.headers = 5;
                }),
            ),
        ];
        for (first, second) in pairs {
            assert_eq!(compare(&first, &second), Ordering::Less, "{first:?}\nbefore\n{second:?}");
            assert_eq!(compare(&second, &first), Ordering::Greater);
            assert_eq!(order(vec![second.clone(), first.clone()]), vec![first, second]);
        }
        assert_eq!(compare(&base, &base), Ordering::Equal);
    }

    fn any_key() -> impl proptest::strategy::Strategy<Value = RuleKey> {
        use proptest::prelude::*;
        let host = prop::sample::select(vec!["", "a.io", "b.io", "*.a.io", "*.x.a.io", "long-name.io", "*.io"]);
        let kind = prop::sample::select(vec![
            MatchType::None,
            MatchType::RegularExpression,
            MatchType::PathPrefix,
            MatchType::Exact,
        ]);
        (host, kind, 0..4usize, 0..3usize, any::<bool>(), 0..3usize, 0..3usize, 0..3i64, 0..3usize, 0..3usize).prop_map(
            |(h, m, p, s, method, hd, q, c, rule, mi)| RuleKey {
                hostname: h.to_string(),
                match_type: m,
                primary_len: p,
                secondary_len: s,
                has_method: method,
                headers: hd,
                query_params: q,
                created: c,
                route: format!("ns/r{}", c % 2),
                rule_index: rule,
                match_index: mi,
            },
        )
    }

    proptest::proptest! {
        /// A total order (what `sort_by` needs): antisymmetric and transitive, so the
        /// priorities never depend on the order the routes were listed in.
        #[test]
        fn compare_is_a_total_order(a in any_key(), b in any_key(), c in any_key()) {
            proptest::prop_assert_eq!(compare(&a, &b), compare(&b, &a).reverse());
            if compare(&a, &b) != Ordering::Greater && compare(&b, &c) != Ordering::Greater {
                proptest::prop_assert_ne!(compare(&a, &c), Ordering::Greater);
            }
            let fwd = order(vec![a.clone(), b.clone(), c.clone()]);
            proptest::prop_assert_eq!(fwd, order(vec![c, b, a]));
        }
    }

    #[test]
    fn a_route_without_hostnames_is_one_catch_all() {
        assert_eq!(split_hostnames(&[]), vec![String::new()]);
        let h = vec!["a.io".to_string(), "*.b.io".to_string()];
        assert_eq!(split_hostnames(&h), h);
    }
}
