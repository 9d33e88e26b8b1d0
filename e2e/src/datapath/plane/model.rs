//! What the data plane knows, without I/O: the emulator's views of a load balancer and its target
//! groups, each target's registration (with the propagation delay applied), its measured health
//! (thresholds as AWS counts them), and which target a new connection goes to.
//!
//! Times are Unix seconds (f64), the clock of the emulator's views, which runs on the same machine.

use super::transform::TransformView;
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

/// An action as the view sends it.
#[derive(Deserialize)]
struct RawAction {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    target_groups: Option<Vec<ForwardTo>>,
    #[serde(default)]
    status_code: Option<u16>,
    #[serde(default)]
    content_type: Option<String>,
    #[serde(default)]
    message_body: Option<String>,
    /// The other kinds' AWS fields, as sent (`{"RedirectConfig": {...}}`).
    #[serde(default)]
    config: Option<serde_json::Value>,
}

/// A listener action. A redirect's config is parsed when the view is read: a malformed one does
/// not fail the whole view, it is kept as the error (logged once per listener change, answered 500).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(from = "RawAction")]
pub struct ActionView {
    pub kind: String,
    pub target_groups: Option<Vec<ForwardTo>>,
    /// fixed-response
    pub status_code: Option<u16>,
    pub content_type: Option<String>,
    pub message_body: Option<String>,
    /// redirect: the parsed `RedirectConfig`, or what is wrong with it.
    pub redirect: Option<Result<Redirect, String>>,
}

impl From<RawAction> for ActionView {
    fn from(a: RawAction) -> Self {
        let redirect = (a.kind == "redirect").then(|| Redirect::from_config(a.config.as_ref()));
        Self {
            kind: a.kind,
            target_groups: a.target_groups,
            status_code: a.status_code,
            content_type: a.content_type,
            message_body: a.message_body,
            redirect,
        }
    }
}

/// A reserved keyword of a redirect's URI components (AWS RedirectActionConfig: "You can reuse URI
/// components using the following reserved keywords").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keyword {
    Protocol,
    Host,
    Port,
    /// The request's path without its leading "/".
    Path,
    Query,
}

impl Keyword {
    const ALL: [Keyword; 5] = [Self::Protocol, Self::Host, Self::Port, Self::Path, Self::Query];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Protocol => "#{protocol}",
            Self::Host => "#{host}",
            Self::Port => "#{port}",
            Self::Path => "#{path}",
            Self::Query => "#{query}",
        }
    }
}

/// A piece of a redirect's host, path or query template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Keyword(Keyword),
}

/// A host, path or query of a redirect: text and reserved keywords.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template(pub Vec<Piece>);

impl Template {
    /// Splits `value` (component `field` of a RedirectConfig) into text and the keywords
    /// `allowed` there; any other `#{...}` is an error naming it.
    fn parse(field: &str, value: &str, allowed: &[Keyword]) -> Result<Self, String> {
        let mut pieces = Vec::new();
        let mut rest = value;
        while let Some(at) = rest.find("#{") {
            if at > 0 {
                pieces.push(Piece::Text(rest[..at].to_string()));
            }
            let end = rest[at..].find('}').map(|e| at + e + 1).ok_or_else(|| {
                format!("RedirectConfig {field} {value:?}: `#{{` without a closing `}}`: expected a reserved keyword")
            })?;
            let word = &rest[at..end];
            let allowed_names = || allowed.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ");
            match Keyword::ALL.into_iter().find(|k| k.as_str() == word) {
                Some(k) if allowed.contains(&k) => pieces.push(Piece::Keyword(k)),
                Some(_) => {
                    return Err(format!(
                        "RedirectConfig {field} {value:?} uses {word}: AWS allows only {} in the {field}",
                        allowed_names()
                    ));
                }
                None => {
                    return Err(format!(
                        "RedirectConfig {field} {value:?} uses {word}: not a reserved keyword; expected one of {}",
                        allowed_names()
                    ));
                }
            }
            rest = &rest[end..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_string()));
        }
        Ok(Self(pieces))
    }

    /// The template with each keyword replaced by `value(keyword)`.
    pub fn expand(&self, value: impl Fn(Keyword) -> String) -> String {
        self.0
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.clone(),
                Piece::Keyword(k) => value(*k),
            })
            .collect()
    }
}

/// A redirect's protocol: `HTTP`, `HTTPS` or `#{protocol}` (the request's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedirectProtocol {
    Http,
    Https,
    Keep,
}

/// A redirect's port: a number or `#{port}` (the listener's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedirectPort {
    Number(u16),
    Keep,
}

/// A redirect action (AWS RedirectActionConfig), checked as the API documents it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redirect {
    pub protocol: RedirectProtocol,
    pub host: Template,
    pub port: RedirectPort,
    /// Starts with "/".
    pub path: Template,
    pub query: Template,
    /// 301 (`HTTP_301`) or 302 (`HTTP_302`).
    pub status: u16,
}

impl Redirect {
    /// Parses the view's `config` of a redirect action: `{"RedirectConfig": {"Protocol", "Host",
    /// "Port", "Path", "Query", "StatusCode"}}` (AWS RedirectActionConfig; an omitted component
    /// keeps the request's: `#{protocol}`, `#{host}`, `#{port}`, `/#{path}`, `#{query}`).
    pub fn from_config(config: Option<&serde_json::Value>) -> Result<Self, String> {
        const FIELDS: [&str; 6] = ["Protocol", "Host", "Port", "Path", "Query", "StatusCode"];
        let shown = config.map_or_else(|| "none".to_string(), |c| c.to_string());
        let rc = config.and_then(|c| c.get("RedirectConfig")).and_then(|r| r.as_object()).ok_or_else(|| {
            format!(
                "redirect action config {shown}: no RedirectConfig object; expected {{\"RedirectConfig\": \
                 {{\"StatusCode\": \"HTTP_301\"|\"HTTP_302\", ...}}}}"
            )
        })?;
        if let Some(k) = rc.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(format!("RedirectConfig field {k:?} is unknown: expected one of {}", FIELDS.join(", ")));
        }
        // Strings as the API sends them; a number is taken for Port only.
        let field = |name: &str| -> Result<Option<String>, String> {
            match rc.get(name) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
                Some(serde_json::Value::Number(n)) if name == "Port" => Ok(Some(n.to_string())),
                Some(other) => Err(format!("RedirectConfig {name} is {other}: expected a string")),
            }
        };
        let bounded = |name: &str, value: &str, min: usize| -> Result<(), String> {
            let n = value.chars().count();
            if n < min || n > 128 {
                return Err(format!(
                    "RedirectConfig {name} {value:?} has {n} characters: expected {min} to 128 (AWS length constraints)"
                ));
            }
            Ok(())
        };
        let status = match field("StatusCode")?.as_deref() {
            Some("HTTP_301") => 301,
            Some("HTTP_302") => 302,
            other => return Err(format!("RedirectConfig StatusCode {other:?}: expected \"HTTP_301\" or \"HTTP_302\"")),
        };
        let protocol = match field("Protocol")?.as_deref() {
            None | Some("#{protocol}") => RedirectProtocol::Keep,
            Some("HTTP") => RedirectProtocol::Http,
            Some("HTTPS") => RedirectProtocol::Https,
            Some(other) => {
                return Err(format!(
                    "RedirectConfig Protocol {other:?}: expected \"HTTP\", \"HTTPS\" or \"#{{protocol}}\""
                ));
            }
        };
        let port = match field("Port")?.as_deref() {
            None | Some("#{port}") => RedirectPort::Keep,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n >= 1 => RedirectPort::Number(n),
                _ => {
                    return Err(format!(
                        "RedirectConfig Port {p:?}: expected a number from 1 to 65535 or \"#{{port}}\""
                    ));
                }
            },
        };
        let host = match field("Host")? {
            None => Template(vec![Piece::Keyword(Keyword::Host)]),
            Some(h) => {
                bounded("Host", &h, 1)?;
                Template::parse("Host", &h, &[Keyword::Host])?
            }
        };
        let path = match field("Path")? {
            None => Template(vec![Piece::Text("/".into()), Piece::Keyword(Keyword::Path)]),
            Some(p) => {
                bounded("Path", &p, 1)?;
                if !p.starts_with('/') {
                    return Err(format!("RedirectConfig Path {p:?}: expected an absolute path, starting with \"/\""));
                }
                Template::parse("Path", &p, &[Keyword::Host, Keyword::Path, Keyword::Port])?
            }
        };
        let query = match field("Query")? {
            None => Template(vec![Piece::Keyword(Keyword::Query)]),
            Some(q) => {
                bounded("Query", &q, 0)?;
                Template::parse("Query", &q, &Keyword::ALL)?
            }
        };
        let r = Self { protocol, host, port, path, query, status };
        if r.loops() {
            return Err(format!(
                "RedirectConfig {}: keeps the protocol, host, port and path of the request, a redirect loop; \
                 expected at least one of them changed (AWS RedirectActionConfig)",
                serde_json::Value::Object(rc.clone())
            ));
        }
        Ok(r)
    }

    /// Whether the redirect keeps protocol, host, port and path as they are (AWS: "You must modify at
    /// least one of the following components to avoid a redirect loop: protocol, hostname, port, or path").
    fn loops(&self) -> bool {
        self.protocol == RedirectProtocol::Keep
            && self.port == RedirectPort::Keep
            && self.host.0 == [Piece::Keyword(Keyword::Host)]
            && self.path.0 == [Piece::Text("/".into()), Piece::Keyword(Keyword::Path)]
    }
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
    /// host-header, path-pattern, http-header: `RegexValues` instead of `Values` ([`super::pattern`]).
    #[serde(default)]
    pub regex_values: Vec<String>,
    #[serde(default)]
    pub header_name: Option<String>,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct RuleView {
    pub priority: Option<i64>,
    pub conditions: Vec<ConditionView>,
    pub actions: Vec<ActionView>,
    /// Applied to what a forward action sends ([`super::transform`]).
    #[serde(default)]
    pub transforms: Vec<TransformView>,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct ListenerView {
    pub protocol: String,
    pub port: u16,
    pub default_actions: Vec<ActionView>,
    #[serde(default)]
    pub rules: Vec<RuleView>,
    /// HTTPS/TLS: the default certificate first, then the certificate list.
    #[serde(default)]
    pub certificates: Vec<ListenerCertView>,
    /// Not modelled: the data plane speaks TLS 1.2 and 1.3 with rustls' defaults whatever it is.
    #[serde(default)]
    pub ssl_policy: Option<String>,
}

/// One certificate of a listener, as the view lists it.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct ListenerCertView {
    pub certificate_arn: String,
    pub is_default: bool,
    /// Changes when the certificate is imported again under the same ARN; None when the emulator
    /// has no such certificate.
    #[serde(default)]
    pub fingerprint: Option<String>,
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

    /// What the data plane cannot do with this HTTP listener's actions (each answered 500 when a
    /// request reaches it), for the log: one line per action, naming the rule.
    pub fn problems(&self) -> Vec<String> {
        let actions =
            self.default_actions.iter().map(|a| ("default action".to_string(), a)).chain(self.rules.iter().flat_map(
                |r| r.actions.iter().map(|a| (format!("rule priority {}", r.priority.unwrap_or_default()), a)),
            ));
        actions
            .filter_map(|(place, a)| {
                let why = match (a.kind.as_str(), &a.redirect) {
                    ("forward" | "fixed-response", _) => return None,
                    ("redirect", Some(Ok(r))) => match r.check_listener(&self.protocol) {
                        Ok(()) => return None,
                        Err(e) => e,
                    },
                    ("redirect", Some(Err(e))) => e.clone(),
                    (other, _) => format!("action {other} is not supported by lbc-dataplane"),
                };
                Some(format!("listener port={} {place}: {why}", self.port))
            })
            .collect()
    }
}

impl Redirect {
    /// A redirect the listener of `protocol` cannot send (AWS RedirectActionConfig: "You can
    /// redirect HTTP to HTTP, HTTP to HTTPS, and HTTPS to HTTPS. You can't redirect HTTPS to HTTP").
    pub fn check_listener(&self, protocol: &str) -> Result<(), String> {
        if protocol == "HTTPS" && self.protocol == RedirectProtocol::Http {
            return Err("redirect of an HTTPS listener to HTTP: AWS does not redirect HTTPS to HTTP; \
                        expected Protocol HTTPS or #{protocol}"
                .into());
        }
        Ok(())
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
    use serde_json::json;

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

    fn redirect(config: serde_json::Value) -> Result<Redirect, String> {
        Redirect::from_config(Some(&json!({ "RedirectConfig": config })))
    }

    fn text(t: &str) -> Piece {
        Piece::Text(t.into())
    }

    // AWS RedirectActionConfig: "Any components that you do not modify retain their original
    // values"; the defaults #{protocol}, #{host}, #{port}, /#{path}, #{query} are those values.
    #[test]
    fn redirect_components_default_to_the_requests() {
        let r = redirect(json!({"Protocol": "HTTPS", "StatusCode": "HTTP_301"})).unwrap();
        assert_eq!(
            r,
            Redirect {
                protocol: RedirectProtocol::Https,
                host: Template(vec![Piece::Keyword(Keyword::Host)]),
                port: RedirectPort::Keep,
                path: Template(vec![text("/"), Piece::Keyword(Keyword::Path)]),
                query: Template(vec![Piece::Keyword(Keyword::Query)]),
                status: 301,
            }
        );
        // null as absent; the port as a string (the API's type) or a number
        let r = redirect(json!({"Port": 8443, "Host": null, "StatusCode": "HTTP_302"})).unwrap();
        assert_eq!((r.port, r.status), (RedirectPort::Number(8443), 302));
    }

    // AWS RedirectActionConfig StatusCode: "Valid Values: HTTP_301 | HTTP_302", "Required: Yes".
    #[test]
    fn redirect_status_codes_are_301_or_302_and_required() {
        for bad in [json!({"Protocol": "HTTPS"}), json!({"Protocol": "HTTPS", "StatusCode": "HTTP_307"})] {
            let e = redirect(bad).unwrap_err();
            assert!(e.contains("StatusCode") && e.contains("HTTP_301"), "{e}");
        }
        let e = redirect(json!({"Protocol": "HTTPS", "StatusCode": 301})).unwrap_err();
        assert!(e.contains("StatusCode is 301: expected a string"), "{e}");
    }

    // AWS RedirectActionConfig Protocol: "You can specify HTTP, HTTPS, or #{protocol}"; Port: "You
    // can specify a value from 1 to 65535 or #{port}".
    #[test]
    fn redirect_protocols_and_ports_are_the_documented_values() {
        let ok = |p: &str, port: &str| redirect(json!({"Protocol": p, "Port": port, "StatusCode": "HTTP_301"}));
        assert_eq!(ok("HTTP", "80").unwrap().protocol, RedirectProtocol::Http);
        assert_eq!(ok("#{protocol}", "8080").unwrap().protocol, RedirectProtocol::Keep);
        assert_eq!(ok("HTTPS", "#{port}").unwrap().port, RedirectPort::Keep);
        let e = ok("ftp", "80").unwrap_err();
        assert!(e.contains("Protocol \"ftp\"") && e.contains("\"HTTPS\""), "{e}");
        for bad in ["0", "65536", "http", "#{host}"] {
            let e = ok("HTTPS", bad).unwrap_err();
            assert!(e.contains(&format!("Port {bad:?}")) && e.contains("1 to 65535"), "{e}");
        }
    }

    // AWS RedirectActionConfig: "The hostname can contain #{host}"; "The path can contain #{host},
    // #{path}, and #{port}"; Query: "You can specify any of the reserved keywords".
    #[test]
    fn redirect_keywords_are_allowed_where_aws_allows_them() {
        let r = redirect(json!({"Host": "example.#{host}", "Path": "/#{host}/#{port}/#{path}",
                                "Query": "#{query}&from=#{protocol}", "StatusCode": "HTTP_301"}))
        .unwrap();
        assert_eq!(r.host, Template(vec![text("example."), Piece::Keyword(Keyword::Host)]));
        assert_eq!(r.path.0.len(), 6);
        assert_eq!(r.query.0[2], Piece::Keyword(Keyword::Protocol));
        let cases = [
            (json!({"Host": "#{path}.example.com"}), "uses #{path}: AWS allows only #{host} in the Host"),
            (json!({"Path": "/#{query}"}), "uses #{query}: AWS allows only #{host}, #{path}, #{port} in the Path"),
            (json!({"Host": "#{hostname}"}), "uses #{hostname}: not a reserved keyword"),
            (json!({"Path": "/a#{path"}), "without a closing"),
        ];
        for (mut cfg, want) in cases {
            cfg["StatusCode"] = json!("HTTP_301");
            let e = redirect(cfg.clone()).unwrap_err();
            assert!(e.contains(want), "{cfg}: {e}");
        }
    }

    // AWS RedirectActionConfig Path: "The absolute path, starting with the leading "/"", length
    // 1-128; Host: length 1-128; Query: length 0-128.
    #[test]
    fn redirect_paths_are_absolute_and_components_bounded() {
        let e = redirect(json!({"Path": "new", "StatusCode": "HTTP_301"})).unwrap_err();
        assert!(e.contains("Path \"new\"") && e.contains("starting with \"/\""), "{e}");
        let e = redirect(json!({"Host": "a".repeat(129), "StatusCode": "HTTP_301"})).unwrap_err();
        assert!(e.contains("129 characters: expected 1 to 128"), "{e}");
        let e = redirect(json!({"Host": "", "StatusCode": "HTTP_301"})).unwrap_err();
        assert!(e.contains("0 characters: expected 1 to 128"), "{e}");
        let r = redirect(json!({"Host": "x.example.com", "Query": "", "StatusCode": "HTTP_301"})).unwrap();
        assert_eq!(r.query, Template(vec![]));
    }

    // AWS RedirectActionConfig: "You must modify at least one of the following components to avoid
    // a redirect loop: protocol, hostname, port, or path" (the query alone is not enough).
    #[test]
    fn redirects_that_change_nothing_are_loops() {
        for cfg in
            [json!({"StatusCode": "HTTP_301"}), json!({"Query": "a=1", "Path": "/#{path}", "StatusCode": "HTTP_302"})]
        {
            let e = redirect(cfg.clone()).unwrap_err();
            assert!(e.contains("redirect loop"), "{cfg}: {e}");
        }
        assert!(redirect(json!({"Path": "/new/#{path}", "StatusCode": "HTTP_301"})).is_ok());
    }

    #[test]
    fn redirect_configs_are_checked_whole() {
        let e = Redirect::from_config(None).unwrap_err();
        assert!(e.contains("no RedirectConfig object"), "{e}");
        let e = Redirect::from_config(Some(&json!({"TargetGroupArn": "x"}))).unwrap_err();
        assert!(e.contains("{\"TargetGroupArn\":\"x\"}"), "{e}");
        let e = redirect(json!({"StatusCode": "HTTP_301", "Protocol": "HTTPS", "Fragment": "x"})).unwrap_err();
        assert!(
            e.contains("\"Fragment\" is unknown: expected one of Protocol, Host, Port, Path, Query, StatusCode"),
            "{e}"
        );
    }

    // A bad redirect does not fail the view: it is kept as the action's error, and the listener
    // reports it (with the HTTPS-to-HTTP rule of AWS RedirectActionConfig Protocol: "You can't
    // redirect HTTPS to HTTP") and any kind the data plane does not do.
    #[test]
    fn listener_views_keep_bad_actions_as_problems() {
        let l: ListenerView = serde_json::from_value(json!({
            "protocol": "HTTPS", "port": 443,
            "default_actions": [{"type": "redirect", "order": 1,
                                 "config": {"RedirectConfig": {"Protocol": "HTTP", "StatusCode": "HTTP_301"}}}],
            "rules": [
                {"priority": 5, "conditions": [], "actions": [{"type": "redirect", "order": null,
                                                              "config": {"RedirectConfig": {"StatusCode": "HTTP_999"}}}]},
                {"priority": 6, "conditions": [], "actions": [{"type": "authenticate-oidc", "config": {}}]},
                {"priority": 7, "conditions": [], "actions": [{"type": "fixed-response", "status_code": 200}]},
            ],
        }))
        .unwrap();
        assert!(matches!(&l.default_actions[0].redirect, Some(Ok(r)) if r.protocol == RedirectProtocol::Http));
        assert!(matches!(&l.rules[0].actions[0].redirect, Some(Err(e)) if e.contains("HTTP_999")));
        assert_eq!(l.rules[2].actions[0].redirect, None);
        let problems = l.problems();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].starts_with("listener port=443 default action: redirect of an HTTPS listener to HTTP"));
        assert!(problems[1].starts_with("listener port=443 rule priority 5: RedirectConfig StatusCode"));
        assert_eq!(
            problems[2],
            "listener port=443 rule priority 6: action authenticate-oidc is not supported by lbc-dataplane"
        );
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
