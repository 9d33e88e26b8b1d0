//! What the node agent reads from a pod spec and writes to a pod status, as the kubelet does:
//! the server port, the readiness probe and its thresholds, the preStop hook, the grace period,
//! and the PodScheduled / PodReadyToStartContainers / Initialized / ContainersReady / Ready
//! conditions (Ready only when the containers are ready and every readiness gate is True).
//! Pure functions, unit-tested here; the I/O is in the parent module.

use k8s_openapi::api::core::v1::{Container, Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};
use std::time::Duration;

/// The server port when the container declares none.
pub const DEFAULT_PORT: u16 = 8080;
/// The kubelet's default `terminationGracePeriodSeconds`.
pub const DEFAULT_GRACE_SECONDS: i64 = 30;
/// The kubelet gives a container at least this long after its preStop hook before SIGKILL.
pub const MIN_GRACE_AFTER_PRESTOP: Duration = Duration::from_secs(2);

/// The path of a `tcpSocket` probe: connect only (see `prober`).
pub const TCP_PROBE: &str = "@tcp";

/// A readiness probe (`httpGet`, or `tcpSocket` with `path` = [`TCP_PROBE`]), durations unscaled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadinessProbe {
    pub path: String,
    pub port: u16,
    pub initial_delay: Duration,
    pub period: Duration,
    pub timeout: Duration,
    pub success_threshold: u32,
    pub failure_threshold: u32,
}

/// The first container: the one the agent runs as the pod's server.
pub fn main_container(pod: &Pod) -> Option<&Container> {
    pod.spec.as_ref()?.containers.first()
}

/// The port the server listens on: the container's first `containerPort`, else the readiness
/// probe's numeric port, else [`DEFAULT_PORT`].
pub fn server_port(c: &Container) -> u16 {
    if let Some(p) = c.ports.as_ref().and_then(|ps| ps.first()) {
        return p.container_port as u16;
    }
    let probe = c.readiness_probe.as_ref();
    let port = probe.and_then(|p| p.http_get.as_ref().map(|h| &h.port).or(p.tcp_socket.as_ref().map(|t| &t.port)));
    match port {
        Some(IntOrString::Int(p)) => *p as u16,
        _ => DEFAULT_PORT,
    }
}

/// The container's readiness probe; `Ok(None)` when it has none (ready once started, as the
/// kubelet does), an error for probe kinds the agent does not run.
pub fn readiness_probe(c: &Container) -> Result<Option<ReadinessProbe>, String> {
    let Some(p) = c.readiness_probe.as_ref() else { return Ok(None) };
    let (path, port) = match (&p.http_get, &p.tcp_socket) {
        (Some(h), _) => (h.path.clone().filter(|p| !p.is_empty()).unwrap_or_else(|| "/".into()), &h.port),
        (None, Some(t)) => (TCP_PROBE.to_string(), &t.port),
        (None, None) => {
            return Err(format!(
                "container {}: readinessProbe is neither httpGet nor tcpSocket; the node agent runs those only",
                c.name
            ));
        }
    };
    let port = match port {
        IntOrString::Int(p) => *p as u16,
        IntOrString::String(name) => c
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref() == Some(name))
            .map(|p| p.container_port as u16)
            .ok_or_else(|| {
                format!(
                    "container {}: readinessProbe port {name:?} names no containerPort; expected one of {:?}",
                    c.name,
                    c.ports.iter().flatten().filter_map(|p| p.name.clone()).collect::<Vec<_>>()
                )
            })?,
    };
    let secs = |v: Option<i32>, default: i32, min: i32| Duration::from_secs(v.unwrap_or(default).max(min) as u64);
    Ok(Some(ReadinessProbe {
        path,
        port,
        initial_delay: secs(p.initial_delay_seconds, 0, 0),
        period: secs(p.period_seconds, 10, 1),
        timeout: secs(p.timeout_seconds, 1, 1),
        success_threshold: p.success_threshold.unwrap_or(1).max(1) as u32,
        failure_threshold: p.failure_threshold.unwrap_or(3).max(1) as u32,
    }))
}

/// How long the preStop hook runs: `lifecycle.preStop.sleep.seconds`, or an exec hook that is a
/// sleep (`sleep N`, `sh -c "sleep N"`). `Err` for hooks the agent cannot run.
pub fn pre_stop(c: &Container) -> Result<Option<Duration>, String> {
    let Some(h) = c.lifecycle.as_ref().and_then(|l| l.pre_stop.as_ref()) else { return Ok(None) };
    if let Some(s) = &h.sleep {
        return Ok(Some(Duration::from_secs(s.seconds.max(0) as u64)));
    }
    if let Some(cmd) = h.exec.as_ref().and_then(|e| e.command.as_ref()) {
        let words: Vec<&str> = match cmd.as_slice() {
            [sh, flag, script] if sh.ends_with("sh") && flag == "-c" => script.split_whitespace().collect(),
            _ => cmd.iter().map(String::as_str).collect(),
        };
        if let [sleep, n] = words.as_slice()
            && sleep.rsplit('/').next() == Some("sleep")
            && let Ok(secs) = n.parse::<f64>()
            && secs >= 0.0
        {
            return Ok(Some(Duration::from_secs_f64(secs)));
        }
        return Err(format!(
            "container {}: preStop exec {cmd:?} is not a sleep; the node agent runs `sleep N` (or `sh -c \"sleep N\"`) \
             and lifecycle.preStop.sleep only",
            c.name
        ));
    }
    Err(format!("container {}: preStop is neither exec (sleep) nor sleep; the node agent runs those only", c.name))
}

/// The grace period the kubelet honours on deletion: `deletionGracePeriodSeconds`, else the
/// spec's `terminationGracePeriodSeconds`, else 30 s.
pub fn grace_period(pod: &Pod) -> Duration {
    let s = pod
        .metadata
        .deletion_grace_period_seconds
        .or_else(|| pod.spec.as_ref().and_then(|s| s.termination_grace_period_seconds))
        .unwrap_or(DEFAULT_GRACE_SECONDS);
    Duration::from_secs(s.max(0) as u64)
}

/// How long after SIGTERM the kubelet waits before SIGKILL: the grace period less the time the
/// preStop hook took, and at least [`MIN_GRACE_AFTER_PRESTOP`] when a hook ran.
pub fn term_to_kill(grace: Duration, pre_stop_took: Option<Duration>) -> Duration {
    match pre_stop_took {
        None => grace,
        Some(took) => grace.saturating_sub(took).max(MIN_GRACE_AFTER_PRESTOP),
    }
}

/// Consecutive probe results against the thresholds; starts not ready (as the kubelet).
#[derive(Debug)]
pub struct ProbeCounter {
    success_threshold: u32,
    failure_threshold: u32,
    successes: u32,
    failures: u32,
    ready: bool,
}

impl ProbeCounter {
    pub fn new(p: &ReadinessProbe) -> Self {
        Self {
            success_threshold: p.success_threshold,
            failure_threshold: p.failure_threshold,
            successes: 0,
            failures: 0,
            ready: false,
        }
    }

    /// Records one probe result; returns the new readiness when it changed.
    pub fn observe(&mut self, ok: bool) -> Option<bool> {
        if ok {
            self.successes += 1;
            self.failures = 0;
            if !self.ready && self.successes >= self.success_threshold {
                self.ready = true;
                return Some(true);
            }
        } else {
            self.failures += 1;
            self.successes = 0;
            if self.ready && self.failures >= self.failure_threshold {
                self.ready = false;
                return Some(false);
            }
        }
        None
    }
}

/// `(status, reason, message)` of one condition.
type Cond = (bool, Option<String>, Option<String>);

/// The Ready condition from container readiness and the readiness gates: True only when the
/// containers are ready and every `spec.readinessGates[].conditionType` condition is True.
pub fn ready_condition(pod: &Pod, containers_ready: bool, container: &str) -> Cond {
    if !containers_ready {
        return (
            false,
            Some("ContainersNotReady".into()),
            Some(format!("containers with unready status: [{container}]")),
        );
    }
    let conds = pod.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or_default();
    let mut missing = Vec::new();
    for g in pod.spec.as_ref().and_then(|s| s.readiness_gates.as_deref()).unwrap_or_default() {
        match conds.iter().find(|c| c.type_ == g.condition_type) {
            None => missing
                .push(format!("corresponding condition of pod readiness gate {:?} does not exist.", g.condition_type)),
            Some(c) if c.status != "True" => missing.push(format!(
                "the status of pod readiness gate {:?} is not \"True\", but {}",
                g.condition_type, c.status
            )),
            Some(_) => {}
        }
    }
    if missing.is_empty() {
        (true, None, None)
    } else {
        (false, Some("ReadinessGatesNotReady".into()), Some(missing.join(", ")))
    }
}

fn condition(pod: &Pod, type_: &str) -> Option<PodCondition> {
    pod.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == type_).cloned()
}

/// One condition for a strategic-merge status patch; keeps `lastTransitionTime` when the status
/// does not change.
fn condition_json(pod: &Pod, type_: &str, (ok, reason, message): Cond, now: &Value) -> Value {
    let status = if ok { "True" } else { "False" };
    let old = condition(pod, type_);
    let since = match &old {
        Some(c) if c.status == status => c.last_transition_time.as_ref().map(|t| json!(t)).unwrap_or(now.clone()),
        _ => now.clone(),
    };
    let mut c = json!({"type": type_, "status": status, "lastTransitionTime": since, "lastProbeTime": null});
    // Null removes a stale reason/message from the merged condition.
    c["reason"] = reason.map(Value::String).unwrap_or(Value::Null);
    c["message"] = message.map(Value::String).unwrap_or(Value::Null);
    c
}

/// What the agent knows about the running container.
#[derive(Clone, Debug)]
pub struct Running {
    pub pod_ip: String,
    pub host_ip: String,
    pub started_at: Time,
    pub container_id: String,
    pub ready: bool,
}

/// The status patch (strategic merge: conditions merge by type, so conditions other writers own,
/// such as readiness gates, are kept) for a running pod.
pub fn status_patch(pod: &Pod, run: &Running) -> Value {
    let now = json!(Time(jiff::Timestamp::now()));
    let c = main_container(pod);
    let name = c.map(|c| c.name.clone()).unwrap_or_default();
    let image = c.and_then(|c| c.image.clone()).unwrap_or_default();
    let started = json!(run.started_at);
    let ok: Cond = (true, None, None);
    let containers = if run.ready {
        ok.clone()
    } else {
        (false, Some("ContainersNotReady".into()), Some(format!("containers with unready status: [{name}]")))
    };
    json!({"status": {
        "phase": "Running",
        "hostIP": run.host_ip, "hostIPs": [{"ip": run.host_ip}],
        "podIP": run.pod_ip, "podIPs": [{"ip": run.pod_ip}],
        "startTime": pod.status.as_ref().and_then(|s| s.start_time.as_ref()).map(|t| json!(t)).unwrap_or(started.clone()),
        "conditions": [
            condition_json(pod, "PodReadyToStartContainers", ok.clone(), &now),
            condition_json(pod, "Initialized", ok.clone(), &now),
            condition_json(pod, "PodScheduled", ok, &now),
            condition_json(pod, "ContainersReady", containers, &now),
            condition_json(pod, "Ready", ready_condition(pod, run.ready, &name), &now),
        ],
        "containerStatuses": [{
            "name": name, "image": image, "imageID": format!("lbc-e2e://{image}"),
            "containerID": run.container_id, "ready": run.ready, "started": true, "restartCount": 0,
            "state": {"running": {"startedAt": started}},
        }],
    }})
}

/// Whether the pod's status already says what [`status_patch`] would write for readiness (so the
/// agent patches only on change).
pub fn readiness_current(pod: &Pod, containers_ready: bool) -> bool {
    let name = main_container(pod).map(|c| c.name.clone()).unwrap_or_default();
    let is = |t: &str, want: bool| condition(pod, t).is_some_and(|c| c.status == if want { "True" } else { "False" });
    let container_ready = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first())
        .is_some_and(|c| c.ready == containers_ready);
    container_ready
        && is("ContainersReady", containers_ready)
        && is("Ready", ready_condition(pod, containers_ready, &name).0)
        && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        ContainerPort, ExecAction, HTTPGetAction, Lifecycle, LifecycleHandler, PodReadinessGate, PodSpec, PodStatus,
        Probe, SleepAction, TCPSocketAction,
    };

    fn container() -> Container {
        Container { name: "web".into(), image: Some("podserver".into()), ..Default::default() }
    }

    fn pod(gates: &[&str], conds: &[(&str, &str)]) -> Pod {
        Pod {
            spec: Some(PodSpec {
                containers: vec![container()],
                readiness_gates: Some(
                    gates.iter().map(|g| PodReadinessGate { condition_type: g.to_string() }).collect(),
                ),
                ..Default::default()
            }),
            status: Some(PodStatus {
                conditions: Some(
                    conds
                        .iter()
                        .map(|(t, s)| PodCondition {
                            type_: t.to_string(),
                            status: s.to_string(),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn ready_needs_containers_and_every_gate_true() {
        let gate = "target-health.elbv2.k8s.aws/tg";
        assert!(ready_condition(&pod(&[], &[]), true, "web").0);
        assert_eq!(ready_condition(&pod(&[], &[]), false, "web").1.as_deref(), Some("ContainersNotReady"));
        let (ok, reason, msg) = ready_condition(&pod(&[gate], &[]), true, "web");
        assert!(!ok);
        assert_eq!(reason.as_deref(), Some("ReadinessGatesNotReady"));
        assert!(msg.unwrap().contains("does not exist"));
        assert!(!ready_condition(&pod(&[gate], &[(gate, "False")]), true, "web").0);
        assert!(ready_condition(&pod(&[gate], &[(gate, "True")]), true, "web").0);
        assert!(!ready_condition(&pod(&[gate, "other"], &[(gate, "True")]), true, "web").0);
    }

    #[test]
    fn probe_from_spec_with_named_port_and_defaults() {
        let mut c = container();
        c.ports = Some(vec![ContainerPort { name: Some("http".into()), container_port: 9090, ..Default::default() }]);
        c.readiness_probe = Some(Probe {
            http_get: Some(HTTPGetAction {
                path: Some("/healthz".into()),
                port: IntOrString::String("http".into()),
                ..Default::default()
            }),
            period_seconds: Some(2),
            ..Default::default()
        });
        let p = readiness_probe(&c).unwrap().unwrap();
        assert_eq!(
            (p.port, p.path.as_str(), p.period, p.timeout),
            (9090, "/healthz", Duration::from_secs(2), Duration::from_secs(1))
        );
        assert_eq!((p.success_threshold, p.failure_threshold), (1, 3));
        assert_eq!(server_port(&c), 9090);
        c.readiness_probe.as_mut().unwrap().http_get.as_mut().unwrap().port = IntOrString::String("nope".into());
        assert!(readiness_probe(&c).unwrap_err().contains("\"nope\""));
        assert_eq!(readiness_probe(&container()), Ok(None));
        let mut tcp = container();
        tcp.readiness_probe = Some(Probe {
            tcp_socket: Some(TCPSocketAction { port: IntOrString::Int(7000), ..Default::default() }),
            ..Default::default()
        });
        let p = readiness_probe(&tcp).unwrap().unwrap();
        assert_eq!((p.path.as_str(), p.port, server_port(&tcp)), (TCP_PROBE, 7000, 7000));
        assert_eq!(server_port(&container()), DEFAULT_PORT);
    }

    #[test]
    fn pre_stop_sleep_forms() {
        let with = |h: LifecycleHandler| {
            let mut c = container();
            c.lifecycle = Some(Lifecycle { pre_stop: Some(h), ..Default::default() });
            pre_stop(&c)
        };
        let exec = |cmd: &[&str]| LifecycleHandler {
            exec: Some(ExecAction { command: Some(cmd.iter().map(|s| s.to_string()).collect()) }),
            ..Default::default()
        };
        let s = |n| Ok(Some(Duration::from_secs(n)));
        assert_eq!(with(LifecycleHandler { sleep: Some(SleepAction { seconds: 5 }), ..Default::default() }), s(5));
        assert_eq!(with(exec(&["sleep", "7"])), s(7));
        assert_eq!(with(exec(&["/bin/sh", "-c", "sleep 3"])), s(3));
        assert!(with(exec(&["nginx", "-s", "quit"])).unwrap_err().contains("not a sleep"));
        assert_eq!(pre_stop(&container()), Ok(None));
    }

    #[test]
    fn sigkill_waits_the_rest_of_the_grace_period() {
        let s = Duration::from_secs;
        assert_eq!(term_to_kill(s(30), None), s(30));
        assert_eq!(term_to_kill(s(30), Some(s(10))), s(20));
        assert_eq!(term_to_kill(s(5), Some(s(10))), MIN_GRACE_AFTER_PRESTOP);
    }

    #[test]
    fn probe_thresholds() {
        let p = ReadinessProbe {
            path: "/".into(),
            port: 1,
            initial_delay: Duration::ZERO,
            period: Duration::from_secs(1),
            timeout: Duration::from_secs(1),
            success_threshold: 2,
            failure_threshold: 3,
        };
        let mut c = ProbeCounter::new(&p);
        assert_eq!(c.observe(true), None);
        assert_eq!(c.observe(true), Some(true));
        assert_eq!(c.observe(false), None);
        assert_eq!(c.observe(false), None);
        assert_eq!(c.observe(true), None, "a success resets the failure count");
        assert_eq!(c.observe(false), None);
        assert_eq!(c.observe(false), None);
        assert_eq!(c.observe(false), Some(false));
    }

    #[test]
    fn status_patch_keeps_transition_time_and_reports_gates() {
        let gate = "target-health.elbv2.k8s.aws/tg";
        let mut p = pod(&[gate], &[("ContainersReady", "True")]);
        let then = Time("2026-01-01T00:00:00Z".parse().unwrap());
        p.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].last_transition_time = Some(then.clone());
        let run = Running {
            pod_ip: "10.0.104.5".into(),
            host_ip: "10.0.96.11".into(),
            started_at: then,
            container_id: "lbc://1".into(),
            ready: true,
        };
        let v = status_patch(&p, &run);
        let conds = v["status"]["conditions"].as_array().unwrap();
        let get = |t: &str| conds.iter().find(|c| c["type"] == t).unwrap().clone();
        assert_eq!(get("ContainersReady")["lastTransitionTime"], "2026-01-01T00:00:00Z");
        assert_eq!(get("Ready")["status"], "False");
        assert_eq!(get("Ready")["reason"], "ReadinessGatesNotReady");
        assert_eq!(v["status"]["podIPs"][0]["ip"], "10.0.104.5");
        assert!(!readiness_current(&p, true));
    }
}
