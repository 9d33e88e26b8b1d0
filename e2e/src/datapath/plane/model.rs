//! What the data plane knows, without I/O: the emulator's views of a load balancer and its target
//! groups, each target's registration (with the propagation delay applied), its measured health
//! (thresholds as AWS counts them), and which target a new connection goes to.
//!
//! Times are Unix seconds (f64), the clock of the emulator's views, which runs on the same machine.

use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct HealthCheckView {
    #[serde(default = "yes")]
    pub enabled: bool,
    pub protocol: String,
    /// A port number or `"traffic-port"`.
    pub port: serde_json::Value,
    pub path: Option<String>,
    pub interval_seconds: f64,
    pub timeout_seconds: f64,
    pub healthy_threshold: u32,
    pub unhealthy_threshold: u32,
    pub matcher: Option<String>,
}

fn yes() -> bool {
    true
}

#[derive(Clone, Debug, Deserialize)]
pub struct RegisteredView {
    pub id: String,
    pub port: u16,
    pub registered_at: Option<f64>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct DrainingView {
    pub id: String,
    pub port: u16,
    pub registered_at: Option<f64>,
    pub deregistered_at: Option<f64>,
    pub drain_until: f64,
}

#[derive(Clone, Debug, Deserialize)]
pub struct TargetGroupView {
    pub target_group_arn: String,
    pub name: String,
    pub health_check: HealthCheckView,
    pub deregistration_delay_seconds: f64,
    pub time_scale: f64,
    pub targets: Vec<RegisteredView>,
    pub draining: Vec<DrainingView>,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct ForwardTo {
    pub arn: String,
    #[serde(default)]
    pub weight: Option<u32>,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct ActionView {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub target_groups: Option<Vec<ForwardTo>>,
    /// fixed-response
    #[serde(default)]
    pub status_code: Option<u16>,
    #[serde(default)]
    pub content_type: Option<String>,
    #[serde(default)]
    pub message_body: Option<String>,
}

impl ActionView {
    /// A forward action's target groups with weights.
    pub fn groups(&self) -> Vec<(String, u32)> {
        self.target_groups
            .as_ref()
            .map(|g| g.iter().map(|t| (t.arn.clone(), t.weight.unwrap_or(1))).collect())
            .unwrap_or_default()
    }
}

/// A listener rule's condition (`values` are strings, or `{key, value}` for query-string).
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct ConditionView {
    pub field: String,
    #[serde(default)]
    pub values: Vec<serde_json::Value>,
    #[serde(default)]
    pub header_name: Option<String>,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct RuleView {
    pub priority: Option<i64>,
    pub conditions: Vec<ConditionView>,
    pub actions: Vec<ActionView>,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct ListenerView {
    pub protocol: String,
    pub port: u16,
    pub default_actions: Vec<ActionView>,
    #[serde(default)]
    pub rules: Vec<RuleView>,
}

impl ListenerView {
    /// The target groups of the first forward default action, with weights (what an NLB listener does).
    pub fn forward_groups(&self) -> Vec<(String, u32)> {
        self.default_actions.iter().find(|a| a.kind == "forward").map(ActionView::groups).unwrap_or_default()
    }

    /// Every target group the listener may forward to (default actions and rules).
    pub fn all_groups(&self) -> Vec<String> {
        self.default_actions
            .iter()
            .chain(self.rules.iter().flat_map(|r| r.actions.iter()))
            .flat_map(|a| a.groups().into_iter().map(|(arn, _)| arn))
            .collect()
    }

    /// Whether requests are forwarded one by one (ALB) rather than connections (NLB).
    pub fn is_http(&self) -> bool {
        matches!(self.protocol.as_str(), "HTTP" | "HTTPS")
    }
}

#[derive(Clone, Debug, Deserialize)]
pub struct LoadBalancerView {
    pub load_balancer_arn: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub listeners: Vec<ListenerView>,
}

/// Whether HTTP status `code` matches a target group's matcher (`"200"`, `"200-299"`,
/// `"200,202,300-399"`); without a matcher, 200-399 (the NLB default for HTTP checks).
pub fn matcher_accepts(matcher: Option<&str>, code: u16) -> bool {
    let spec = matcher.filter(|m| !m.trim().is_empty()).unwrap_or("200-399");
    spec.split(',').map(str::trim).any(|part| match part.split_once('-') {
        Some((lo, hi)) => match (lo.trim().parse::<u16>(), hi.trim().parse::<u16>()) {
            (Ok(lo), Ok(hi)) => (lo..=hi).contains(&code),
            _ => false,
        },
        None => part.parse::<u16>() == Ok(code),
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Health {
    Initial,
    Healthy,
    Unhealthy,
    /// Health checks disabled: routed like healthy, reported `unavailable`.
    Unavailable,
}

impl Health {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Initial => "initial",
            Self::Healthy => "healthy",
            Self::Unhealthy => "unhealthy",
            Self::Unavailable => "unavailable",
        }
    }
}

/// Why one health check failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckFailure {
    Timeout,
    Code(u16),
    Connect(String),
}

impl CheckFailure {
    /// AWS's reason code and description for an unhealthy target failing this way.
    pub fn reason(&self) -> (&'static str, String) {
        match self {
            Self::Timeout => ("Target.Timeout", "Request timed out".into()),
            Self::Code(c) => ("Target.ResponseCodeMismatch", format!("Health checks failed with these codes: [{c}]")),
            Self::Connect(e) => ("Target.FailedHealthChecks", format!("Health checks failed: {e}")),
        }
    }
}

/// Consecutive check results against the thresholds: `initial` until `healthy_threshold`
/// successes (healthy) or `unhealthy_threshold` failures (unhealthy) in a row; a healthy target
/// turns unhealthy after `unhealthy_threshold` failures in a row, and back after
/// `healthy_threshold` successes.
#[derive(Clone, Debug)]
pub struct HealthTrack {
    pub state: Health,
    successes: u32,
    failures: u32,
    pub last_failure: Option<CheckFailure>,
    pub checks: u64,
}

impl Default for HealthTrack {
    fn default() -> Self {
        Self { state: Health::Initial, successes: 0, failures: 0, last_failure: None, checks: 0 }
    }
}

impl HealthTrack {
    /// Records one check; returns whether the state changed.
    pub fn record(
        &mut self,
        result: Result<(), CheckFailure>,
        healthy_threshold: u32,
        unhealthy_threshold: u32,
    ) -> bool {
        let before = self.state;
        self.checks += 1;
        match result {
            Ok(()) => {
                self.failures = 0;
                self.successes += 1;
                if self.state != Health::Healthy && self.successes >= healthy_threshold.max(1) {
                    self.state = Health::Healthy;
                }
            }
            Err(f) => {
                self.successes = 0;
                self.failures += 1;
                self.last_failure = Some(f);
                if self.state != Health::Unhealthy && self.failures >= unhealthy_threshold.max(1) {
                    self.state = Health::Unhealthy;
                }
            }
        }
        self.state != before
    }

    /// (state, reason, description) as pushed to the emulator.
    pub fn report(&self) -> (&'static str, Option<&'static str>, Option<String>) {
        match self.state {
            Health::Initial => {
                ("initial", Some("Elb.InitialHealthChecking"), Some("Initial health checks in progress".into()))
            }
            Health::Healthy => ("healthy", None, None),
            Health::Unavailable => {
                ("unavailable", Some("Target.HealthCheckDisabled"), Some("Health checks are disabled".into()))
            }
            Health::Unhealthy => {
                let (r, d) = self
                    .last_failure
                    .as_ref()
                    .map(CheckFailure::reason)
                    .unwrap_or(("Target.FailedHealthChecks", "Health checks failed".into()));
                ("unhealthy", Some(r), Some(d))
            }
        }
    }
}

/// A target of a target group: `(target group ARN, IP, port)`.
pub type TargetKey = (String, String, u16);

/// One target as the data plane sees it.
#[derive(Clone, Debug)]
pub struct Target {
    pub registered_at: f64,
    /// When the registration reached the data plane (registered_at + propagation delay): health
    /// checks start, and the target may get connections once healthy.
    pub effective_at: f64,
    pub deregistered_at: Option<f64>,
    /// When the deregistration reached the data plane: no new connections from then on.
    pub stop_routing_at: Option<f64>,
    /// When the deregistration delay ends: open connections are closed.
    pub drain_until: Option<f64>,
    pub health: HealthTrack,
    /// Bumped on each new registration of the same key, so a health checker of an older one stops.
    pub generation: u64,
    pub health_checks_enabled: bool,
    /// Connections ever routed to this target / open now / closed by the data plane at drain end.
    pub opened: u64,
    pub active: u64,
    pub drain_closed: u64,
}

impl Target {
    fn new(registered_at: f64, propagation: f64, generation: u64, health_checks_enabled: bool) -> Self {
        Self {
            registered_at,
            effective_at: registered_at + propagation,
            deregistered_at: None,
            stop_routing_at: None,
            drain_until: None,
            health: HealthTrack {
                state: if health_checks_enabled { Health::Initial } else { Health::Unavailable },
                ..HealthTrack::default()
            },
            generation,
            health_checks_enabled,
            opened: 0,
            active: 0,
            drain_closed: 0,
        }
    }

    /// Registered, propagated, deregistration not propagated yet.
    pub fn routable(&self, now: f64) -> bool {
        now >= self.effective_at && self.stop_routing_at.is_none_or(|t| now < t)
    }

    /// Health checks run from the registration's arrival until the deregistration's.
    pub fn checked(&self, now: f64) -> bool {
        self.health_checks_enabled && self.routable(now)
    }

    pub fn is_deregistered(&self) -> bool {
        self.deregistered_at.is_some()
    }

    /// The deregistration delay is over: open connections are to be closed.
    pub fn drain_over(&self, now: f64) -> bool {
        self.drain_until.is_some_and(|t| now >= t)
    }
}

/// Every target the data plane knows, of all its target groups.
#[derive(Debug, Default)]
pub struct Targets {
    pub map: BTreeMap<TargetKey, Target>,
    next_generation: u64,
}

/// How long a registration and a deregistration take to reach the data plane (seconds, already
/// time-scaled). Real NLBs take far longer to start sending to a new target (AWS: "a few minutes
/// for the registration process to complete and health checks to start") than to stop sending new
/// connections to a deregistered one; the two are separate so a test can show what that asymmetry
/// does to a rollout that does not wait for the load balancer.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Propagation {
    pub registration: f64,
    pub deregistration: f64,
}

impl Propagation {
    /// The same delay both ways.
    pub fn both(seconds: f64) -> Self {
        Self { registration: seconds, deregistration: seconds }
    }
}

/// What [`Targets::apply_view`] changed, for the log.
#[derive(Debug, Default, PartialEq)]
pub struct ViewChanges {
    pub registered: Vec<TargetKey>,
    pub deregistered: Vec<TargetKey>,
}

impl Targets {
    /// Applies a target group's view at `now`; `propagation` (seconds, already time-scaled) delays
    /// registrations and deregistrations, each by its own delay.
    pub fn apply_view(&mut self, v: &TargetGroupView, now: f64, propagation: Propagation) -> ViewChanges {
        let tg = &v.target_group_arn;
        let mut changes = ViewChanges::default();
        let mut seen = std::collections::BTreeSet::new();
        for r in &v.targets {
            let key = (tg.clone(), r.id.clone(), r.port);
            seen.insert(key.clone());
            let at = r.registered_at.unwrap_or(now);
            let same = self.map.get(&key).is_some_and(|t| !t.is_deregistered() && (t.registered_at - at).abs() < 1e-3);
            if !same {
                self.next_generation += 1;
                let mut t = Target::new(at, propagation.registration, self.next_generation, v.health_check.enabled);
                if let Some(old) = self.map.get(&key) {
                    // A re-registration: connections still open stay counted on the target.
                    (t.opened, t.active, t.drain_closed) = (old.opened, old.active, old.drain_closed);
                }
                self.map.insert(key.clone(), t);
                changes.registered.push(key);
            } else if let Some(t) = self.map.get_mut(&key) {
                t.health_checks_enabled = v.health_check.enabled;
            }
        }
        for d in &v.draining {
            let key = (tg.clone(), d.id.clone(), d.port);
            seen.insert(key.clone());
            let at = d.deregistered_at.unwrap_or(now);
            match self.map.get_mut(&key) {
                Some(t) if !t.is_deregistered() => {
                    t.deregistered_at = Some(at);
                    t.stop_routing_at = Some(at + propagation.deregistration);
                    t.drain_until = Some(d.drain_until.max(at + propagation.deregistration));
                    changes.deregistered.push(key);
                }
                Some(t) => t.drain_until = Some(d.drain_until.max(t.stop_routing_at.unwrap_or(at))),
                None => {
                    // Deregistered before this data plane saw it: nothing is routed there.
                    self.next_generation += 1;
                    let mut t = Target::new(d.registered_at.unwrap_or(at), 0.0, self.next_generation, false);
                    (t.deregistered_at, t.stop_routing_at, t.drain_until) = (Some(at), Some(at), Some(d.drain_until));
                    self.map.insert(key, t);
                }
            }
        }
        // Gone from both lists: deregistered and drained already (or the group was emptied).
        for (key, t) in self.map.iter_mut().filter(|(k, _)| &k.0 == tg && !seen.contains(*k)) {
            if !t.is_deregistered() {
                changes.deregistered.push(key.clone());
                t.deregistered_at = Some(now);
            }
            t.stop_routing_at = Some(t.stop_routing_at.unwrap_or(now).min(now));
            t.drain_until = Some(t.drain_until.unwrap_or(now).min(now));
        }
        changes
    }

    /// Drops deregistered targets whose drain is over and that hold no connection.
    pub fn forget_drained(&mut self, now: f64) {
        self.map.retain(|_, t| !(t.is_deregistered() && t.drain_over(now) && t.active == 0));
    }

    /// Drops every target of groups not in `groups` (the listeners no longer forward to them).
    pub fn retain_groups(&mut self, groups: &std::collections::BTreeSet<String>) {
        self.map.retain(|k, _| groups.contains(&k.0));
    }

    /// The target a new connection to target group `tg` goes to: round robin (`turn`) over the
    /// routable healthy targets; when none is healthy, over all routable ones (fail open, as AWS
    /// documents); `None` when nothing is registered.
    pub fn pick(&self, tg: &str, now: f64, turn: usize) -> Option<TargetKey> {
        let routable: Vec<(&TargetKey, &Target)> =
            self.map.iter().filter(|(k, t)| k.0 == tg && t.routable(now)).collect();
        let healthy: Vec<&TargetKey> = routable
            .iter()
            .filter(|(_, t)| matches!(t.health.state, Health::Healthy | Health::Unavailable))
            .map(|(k, _)| *k)
            .collect();
        let pool: Vec<&TargetKey> =
            if healthy.is_empty() { routable.iter().map(|(k, _)| *k).collect() } else { healthy };
        if pool.is_empty() {
            return None;
        }
        Some(pool[turn % pool.len()].clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(targets: &[(&str, f64)], draining: &[(&str, f64, f64)]) -> TargetGroupView {
        TargetGroupView {
            target_group_arn: "tg".into(),
            name: "tg".into(),
            health_check: HealthCheckView {
                enabled: true,
                protocol: "HTTP".into(),
                port: "traffic-port".into(),
                path: Some("/healthz".into()),
                interval_seconds: 10.0,
                timeout_seconds: 5.0,
                healthy_threshold: 3,
                unhealthy_threshold: 2,
                matcher: None,
            },
            deregistration_delay_seconds: 300.0,
            time_scale: 0.01,
            targets: targets
                .iter()
                .map(|(id, at)| RegisteredView { id: id.to_string(), port: 80, registered_at: Some(*at) })
                .collect(),
            draining: draining
                .iter()
                .map(|(id, at, until)| DrainingView {
                    id: id.to_string(),
                    port: 80,
                    registered_at: Some(0.0),
                    deregistered_at: Some(*at),
                    drain_until: *until,
                })
                .collect(),
        }
    }

    fn key(id: &str) -> TargetKey {
        ("tg".into(), id.into(), 80)
    }

    fn set_health(ts: &mut Targets, id: &str, h: Health) {
        ts.map.get_mut(&key(id)).unwrap().health.state = h;
    }

    #[test]
    fn matchers_follow_aws_syntax() {
        assert!(matcher_accepts(None, 302) && !matcher_accepts(None, 404));
        assert!(matcher_accepts(Some("200"), 200) && !matcher_accepts(Some("200"), 204));
        assert!(matcher_accepts(Some("200,202,300-399"), 202) && matcher_accepts(Some("200,202,300-399"), 301));
        assert!(!matcher_accepts(Some("200-299"), 503));
    }

    #[test]
    fn thresholds_count_consecutive_results() {
        let mut h = HealthTrack::default();
        assert!(!h.record(Ok(()), 3, 2));
        assert!(!h.record(Ok(()), 3, 2));
        assert!(h.record(Ok(()), 3, 2));
        assert_eq!(h.state, Health::Healthy);
        // one failure, then success: the failure streak restarts
        assert!(!h.record(Err(CheckFailure::Timeout), 3, 2));
        assert!(!h.record(Ok(()), 3, 2));
        assert!(!h.record(Err(CheckFailure::Code(503)), 3, 2));
        assert!(h.record(Err(CheckFailure::Code(503)), 3, 2));
        assert_eq!(
            h.report(),
            (
                "unhealthy",
                Some("Target.ResponseCodeMismatch"),
                Some("Health checks failed with these codes: [503]".into())
            )
        );
        // back to healthy only after the healthy threshold
        assert!(!h.record(Ok(()), 3, 2) && !h.record(Ok(()), 3, 2));
        assert!(h.record(Ok(()), 3, 2));
        // a new target failing goes initial -> unhealthy
        let mut n = HealthTrack::default();
        n.record(Err(CheckFailure::Timeout), 3, 2);
        assert_eq!(n.state, Health::Initial);
        n.record(Err(CheckFailure::Timeout), 3, 2);
        assert_eq!(n.report().1, Some("Target.Timeout"));
    }

    #[test]
    fn registrations_and_deregistrations_propagate_with_the_delay() {
        let mut ts = Targets::default();
        let ch = ts.apply_view(&view(&[("a", 100.0), ("b", 100.0)], &[]), 100.05, Propagation::both(0.2));
        assert_eq!(ch.registered, vec![key("a"), key("b")]);
        assert!(!ts.map[&key("a")].routable(100.1), "routable before the propagation delay");
        assert!(ts.map[&key("a")].routable(100.2));
        // the same view again changes nothing
        assert_eq!(
            ts.apply_view(&view(&[("a", 100.0), ("b", 100.0)], &[]), 100.3, Propagation::both(0.2)),
            ViewChanges::default()
        );
        // a deregistered: no new connections once propagated; drain until the view's end
        let ch = ts.apply_view(&view(&[("b", 100.0)], &[("a", 101.0, 104.0)]), 101.05, Propagation::both(0.2));
        assert_eq!(ch.deregistered, vec![key("a")]);
        let a = &ts.map[&key("a")];
        assert!(a.routable(101.1) && !a.routable(101.2));
        assert!(!a.drain_over(103.9) && a.drain_over(104.0));
        ts.forget_drained(104.1);
        assert!(!ts.map.contains_key(&key("a")));
        // re-registration of b restarts its health at initial with a new generation
        set_health(&mut ts, "b", Health::Healthy);
        let gen_before = ts.map[&key("b")].generation;
        ts.apply_view(&view(&[("b", 105.0)], &[]), 105.0, Propagation::both(0.2));
        assert_eq!(ts.map[&key("b")].health.state, Health::Initial);
        assert!(ts.map[&key("b")].generation > gen_before);
        // vanished from both lists (drain expired between polls): cut at once
        ts.apply_view(&view(&[], &[]), 106.0, Propagation::both(0.2));
        assert!(!ts.map[&key("b")].routable(106.0) && ts.map[&key("b")].drain_over(106.0));
    }

    #[test]
    fn slow_registration_and_fast_deregistration_leave_nothing_to_route_to() {
        // A rollout that does not wait for the load balancer: the old target is deregistered right
        // after the new one is registered. The new one is not routable until its (slow)
        // registration completes, the old one stops at once: for that gap nothing is routable,
        // and failing open does not help, since it only covers targets whose registration completed.
        let p = Propagation { registration: 3.0, deregistration: 0.5 };
        let mut ts = Targets::default();
        ts.apply_view(&view(&[("old", 0.0)], &[]), 0.0, p);
        set_health(&mut ts, "old", Health::Healthy);
        ts.apply_view(&view(&[("old", 0.0), ("new", 10.0)], &[]), 10.0, p);
        ts.apply_view(&view(&[("new", 10.0)], &[("old", 10.2, 20.0)]), 10.2, p);
        assert_eq!(ts.pick("tg", 10.5, 0).map(|k| k.1), Some("old".into()), "old still routed before 0.5 s");
        assert_eq!(ts.pick("tg", 10.8, 0), None, "the old target stopped and the new one is still registering");
        assert!(!ts.map[&key("new")].checked(12.9) && ts.map[&key("new")].checked(13.0));
        // Registration complete, health checks not passed yet: all targets unhealthy or initial, fail open.
        assert_eq!(ts.pick("tg", 13.0, 0).map(|k| k.1), Some("new".into()));
    }

    #[test]
    fn picks_round_robin_over_healthy_and_fails_open() {
        let mut ts = Targets::default();
        ts.apply_view(&view(&[("a", 0.0), ("b", 0.0), ("c", 0.0)], &[]), 0.0, Propagation::default());
        set_health(&mut ts, "a", Health::Healthy);
        set_health(&mut ts, "b", Health::Unhealthy);
        set_health(&mut ts, "c", Health::Healthy);
        let picks: Vec<String> = (0..4).map(|i| ts.pick("tg", 1.0, i).unwrap().1).collect();
        assert_eq!(picks, ["a", "c", "a", "c"]);
        // none healthy: all registered targets
        set_health(&mut ts, "a", Health::Unhealthy);
        set_health(&mut ts, "c", Health::Initial);
        let picks: Vec<String> = (0..3).map(|i| ts.pick("tg", 1.0, i).unwrap().1).collect();
        assert_eq!(picks, ["a", "b", "c"]);
        // a deregistered target is never picked, even failing open
        ts.apply_view(&view(&[("b", 0.0), ("c", 0.0)], &[("a", 1.0, 5.0)]), 1.0, Propagation::default());
        assert!((0..4).all(|i| ts.pick("tg", 1.5, i).unwrap().1 != "a"));
        assert_eq!(ts.pick("other", 1.5, 0), None);
    }
}
