//! Tags of the account's other load balancers and target groups, remembered between observations.
//!
//! Finding a stack's resources by tag means listing every load balancer / target group of the account
//! and reading their tags (DescribeTags, 20 ARNs per call). With many stacks, or an account shared with
//! other teams, most of those tags belong to resources that are not the stack's and do not change: a
//! resource whose remembered tags did not match the query within [`FOREIGN_TTL`] is not asked about
//! again. Resources whose remembered tags do match are always read fresh, so the tags the diff sees on
//! our own resources are never stale; a new ARN is always read.
//!
//! The price: a resource that someone re-tags *into* a stack is found up to [`FOREIGN_TTL`] later.

use lbc_model::lb::Tags;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a resource seen not to match may be skipped.
pub const FOREIGN_TTL: Duration = Duration::from_secs(300);

#[derive(Default)]
pub struct TagCache {
    seen: Mutex<HashMap<String, (Tags, Instant)>>,
}

impl TagCache {
    /// Which of `listed` (every ARN of one kind the account holds now) must be read to answer a query
    /// for `want`. Forgets ARNs of that kind that are gone (`kind`: a fragment of the ARN,
    /// `:loadbalancer/` or `:targetgroup/`).
    pub fn to_read(&self, kind: &str, listed: &[String], want: &Tags, now: Instant) -> Vec<String> {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let live: std::collections::HashSet<&str> = listed.iter().map(String::as_str).collect();
        seen.retain(|arn, _| !arn.contains(kind) || live.contains(arn.as_str()));
        listed
            .iter()
            .filter(|arn| match seen.get(*arn) {
                Some((tags, at)) => super::tags_match(tags, want) || now.duration_since(*at) >= FOREIGN_TTL,
                None => true,
            })
            .cloned()
            .collect()
    }

    /// Remembers tags just read.
    pub fn remember<'a>(&self, read: impl IntoIterator<Item = (&'a String, &'a Tags)>, now: Instant) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        for (arn, tags) in read {
            seen.insert(arn.clone(), (tags.clone(), now));
        }
    }

    /// Our own tag writes: keeps the remembered tags in step so a re-tagged resource is not skipped.
    pub fn forget(&self, arn: &str) {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).remove(arn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(stack: &str) -> Tags {
        Tags::from([("elbv2.k8s.aws/cluster".to_string(), "c".to_string()), ("stack".to_string(), stack.to_string())])
    }

    fn arns(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    const LB: &str = ":loadbalancer/";

    #[test]
    fn new_arns_are_read_and_foreign_ones_skipped_until_the_ttl() {
        let c = TagCache::default();
        let t0 = Instant::now();
        let listed = arns(&["a:loadbalancer/1", "a:loadbalancer/2", "a:loadbalancer/3"]);
        assert_eq!(c.to_read(LB, &listed, &tags("x"), t0), listed, "nothing known yet: read all");
        let (one, two, three) = (tags("x"), tags("y"), Tags::new());
        c.remember([(&listed[0], &one), (&listed[1], &two), (&listed[2], &three)], t0);
        // Ours (matching) is read fresh every time; the others are skipped.
        assert_eq!(c.to_read(LB, &listed, &tags("x"), t0 + Duration::from_secs(1)), arns(&["a:loadbalancer/1"]));
        // Another stack's query skips ours and reads its own.
        assert_eq!(c.to_read(LB, &listed, &tags("y"), t0 + Duration::from_secs(1)), arns(&["a:loadbalancer/2"]));
        // After the TTL everything not matching is read again.
        assert_eq!(c.to_read(LB, &listed, &tags("x"), t0 + FOREIGN_TTL), listed);
    }

    #[test]
    fn a_new_arn_is_read_even_when_others_are_known() {
        let c = TagCache::default();
        let t0 = Instant::now();
        let old = arns(&["a:loadbalancer/1"]);
        let other = tags("y");
        c.remember([(&old[0], &other)], t0);
        let listed = arns(&["a:loadbalancer/1", "a:loadbalancer/9"]);
        assert_eq!(c.to_read(LB, &listed, &tags("x"), t0), arns(&["a:loadbalancer/9"]));
    }

    #[test]
    fn gone_arns_are_forgotten_per_kind_and_forget_forces_a_read() {
        let c = TagCache::default();
        let t0 = Instant::now();
        let (lb, tg) = (String::from("a:loadbalancer/1"), String::from("a:targetgroup/1"));
        let other = tags("y");
        c.remember([(&lb, &other), (&tg, &other)], t0);
        // Listing load balancers (none left) forgets the load balancer, not the target group.
        assert!(c.to_read(LB, &[], &tags("x"), t0).is_empty());
        assert_eq!(c.seen.lock().unwrap().len(), 1);
        assert!(c.to_read(":targetgroup/", std::slice::from_ref(&tg), &tags("x"), t0).is_empty());
        c.forget(&tg);
        assert_eq!(c.to_read(":targetgroup/", std::slice::from_ref(&tg), &tags("x"), t0), vec![tg]);
    }
}
