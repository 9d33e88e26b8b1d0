//! `lbc-dataplane fleet`: one data plane ([`super::run`]) per ALB of the emulator, for suites that
//! create load balancers as they go (the Gateway API conformance suite) and reach each by its DNS
//! name. Runs inside the VPC namespace, like `run`.
//!
//! Every poll it lists the load balancers (`GET /_awsemu/load-balancers`). An ALB (type
//! `application`) it does not serve yet gets the next free address of the pool (a /32 on the VPC
//! bridge) and a child `lbc-dataplane run` listening there; an ALB gone from the list has its child
//! stopped (SIGTERM, then SIGKILL after a grace period) and its address removed and freed. A child
//! that exits on its own is restarted on the next poll (later when it keeps exiting right after its
//! start). After every change the hosts file is rewritten (temporary file + rename): one
//! `ADDR DNS_NAME` line per served load balancer. On stop it stops every child, removes every
//! address it added and empties the hosts file. NLBs (and any other type) are not served: logged
//! once per load balancer.
//!
//! One thread: the children are processes. An address already on the bridge that the fleet did not
//! add (the router's, a VIP of a test's own `run`) is never handed out nor removed.

use super::wire::{self, Endpoint};
use super::{Tuning, log};
use crate::datapath::netns::{self, BRIDGE};
use anyhow::{Context, Result, ensure};
use ipnet::Ipv4Net;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How the fleet runs.
#[derive(Clone, Debug)]
pub struct FleetConfig {
    pub emulator: Endpoint,
    /// The addresses handed to the load balancers (network and broadcast addresses excluded).
    pub pool: Ipv4Net,
    pub hosts_file: PathBuf,
    /// Each child's status file (`<name>.json`), stdout (`<name>.log`) and stderr (`<name>.err`).
    pub status_dir: PathBuf,
    /// Passed on to every child; `poll()` is the fleet's own poll interval too.
    pub tuning: Tuning,
    /// The program run for each load balancer, with `run ...` (`lbc-dataplane` itself).
    pub program: PathBuf,
}

/// One load balancer of `GET /_awsemu/load-balancers`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct ListedLoadBalancer {
    pub load_balancer_arn: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub dns_name: String,
    pub state: String,
}

#[derive(Deserialize)]
struct LoadBalancerList {
    load_balancers: Vec<ListedLoadBalancer>,
}

/// How long a child is given to exit after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(3);
/// A child that exits sooner than this after its start counts as a quick exit (restart backoff).
const QUICK_EXIT: Duration = Duration::from_secs(5);
/// The longest wait before restarting a child that keeps exiting.
const MAX_RESTART_DELAY: Duration = Duration::from_secs(5);

// ------------------------------------------------------------------------------------------------
// Pure parts
// ------------------------------------------------------------------------------------------------

/// The pool's addresses and which load balancer holds each.
#[derive(Debug)]
pub struct Pool {
    net: Ipv4Net,
    /// Address → ARN of the load balancer it serves.
    used: BTreeMap<Ipv4Addr, String>,
    /// The last address handed out: the search for the next starts after it, so a freed address
    /// is handed out again only after the rest of the pool (a client that still has the old name
    /// resolved does not reach a new load balancer at once).
    last: Option<Ipv4Addr>,
}

impl Pool {
    /// A pool of `net`'s host addresses; `net` must be a network address with a prefix of /30 or shorter.
    pub fn new(net: Ipv4Net) -> Result<Self> {
        ensure!(net == net.trunc(), "--pool {net} has host bits set: expected its network address {}", net.trunc());
        ensure!(
            net.prefix_len() <= 30,
            "--pool {net} has no address left once its network and broadcast addresses are skipped: \
             expected a prefix of /30 or shorter"
        );
        Ok(Self { net, used: BTreeMap::new(), last: None })
    }

    fn first(&self) -> u32 {
        u32::from(self.net.network()) + 1
    }

    fn size(&self) -> u32 {
        u32::from(self.net.broadcast()) - self.first()
    }

    /// The next free address after the last one handed out (wrapping around), skipping `taken`
    /// (addresses on the bridge that the fleet did not add); `None` when every one is used.
    pub fn next_free(&self, taken: &BTreeSet<Ipv4Addr>) -> Option<Ipv4Addr> {
        let (first, size) = (self.first(), self.size());
        let start = self.last.map_or(0, |a| (u32::from(a) - first + 1) % size);
        (0..size)
            .map(|i| Ipv4Addr::from(first + (start + i) % size))
            .find(|a| !self.used.contains_key(a) && !taken.contains(a))
    }

    /// Marks `addr` as serving `arn`.
    pub fn take(&mut self, addr: Ipv4Addr, arn: &str) {
        self.used.insert(addr, arn.to_string());
        self.last = Some(addr);
    }

    /// Frees `addr` (its load balancer is gone).
    pub fn release(&mut self, addr: Ipv4Addr) {
        self.used.remove(&addr);
    }

    pub fn in_use(&self) -> usize {
        self.used.len()
    }

    pub fn capacity(&self) -> u32 {
        self.size()
    }
}

/// What to change for one listing of the load balancers.
#[derive(Debug, Default, PartialEq)]
pub struct Plan {
    /// ALBs listed and not served yet.
    pub start: Vec<ListedLoadBalancer>,
    /// Served load balancers (ARNs) no longer listed.
    pub stop: Vec<String>,
    /// Listed load balancers the fleet does not serve (not ALBs), not reported before.
    pub skip: Vec<ListedLoadBalancer>,
}

/// Diffs the listed load balancers against the `served` ones (ARNs); `reported` are the ARNs
/// already reported as skipped.
pub fn plan(listed: &[ListedLoadBalancer], served: &BTreeSet<String>, reported: &BTreeSet<String>) -> Plan {
    let listed_arns: BTreeSet<&str> = listed.iter().map(|l| l.load_balancer_arn.as_str()).collect();
    let mut p = Plan::default();
    for lb in listed {
        if lb.kind != "application" {
            if !reported.contains(&lb.load_balancer_arn) {
                p.skip.push(lb.clone());
            }
        } else if !served.contains(&lb.load_balancer_arn) {
            p.start.push(lb.clone());
        }
    }
    p.stop = served.iter().filter(|a| !listed_arns.contains(a.as_str())).cloned().collect();
    p
}

/// The hosts file: one `ADDR DNS_NAME` line per entry, by address. Entries whose DNS name is empty
/// or holds whitespace are left out (the engine logs them when it starts serving them).
pub fn render_hosts<'a>(entries: impl IntoIterator<Item = (Ipv4Addr, &'a str)>) -> String {
    let mut lines: Vec<(Ipv4Addr, &str)> = entries.into_iter().filter(|(_, dns)| valid_dns_name(dns)).collect();
    lines.sort();
    lines.iter().map(|(addr, dns)| format!("{addr} {dns}\n")).collect()
}

fn valid_dns_name(dns: &str) -> bool {
    !dns.is_empty() && !dns.chars().any(char::is_whitespace)
}

/// The file name stem of a load balancer's status and logs in the status directory: its name
/// (characters other than `[A-Za-z0-9._-]` replaced by `_`), or, when another served load
/// balancer uses that stem already (same name in another account or region), the name and the
/// ARN's last segment.
pub fn file_stem(name: &str, arn: &str, in_use: &BTreeSet<String>) -> String {
    let clean = |s: &str| -> String {
        s.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' }).collect()
    };
    let stem = clean(name);
    let stem = if stem.is_empty() || stem.starts_with('.') { format!("lb{stem}") } else { stem };
    if !in_use.contains(&stem) {
        return stem;
    }
    format!("{stem}-{}", clean(arn.rsplit('/').next().unwrap_or_default()))
}

/// How long to wait before restarting a child after its `quick_exits`-th exit in a row that came
/// soon after its start: the next poll for the first, then doubling from one poll interval up to
/// [`MAX_RESTART_DELAY`].
pub fn restart_delay(quick_exits: u32, poll: Duration) -> Duration {
    if quick_exits <= 1 {
        return Duration::ZERO;
    }
    poll.saturating_mul(1u32 << (quick_exits - 2).min(16)).min(MAX_RESTART_DELAY)
}

/// The arguments of the `run` child for one load balancer.
pub fn child_args(emulator: &Endpoint, arn: &str, addr: Ipv4Addr, status_file: &Path, tuning: &Tuning) -> Vec<String> {
    let mut args = vec![
        "run".to_string(),
        format!("--emulator={emulator}"),
        format!("--load-balancer-arn={arn}"),
        format!("--listen={addr}"),
        format!("--status-file={}", status_file.display()),
    ];
    args.extend(tuning.to_args());
    args
}

/// The IPv4 addresses of `ip -j -4 addr show dev br0`, with their prefix lengths.
pub fn parse_addresses(json: &str) -> Result<Vec<(Ipv4Addr, u8)>> {
    let v: serde_json::Value = serde_json::from_str(json).context("parsing `ip -j addr` output")?;
    let mut out = Vec::new();
    for link in v.as_array().map(Vec::as_slice).unwrap_or_default() {
        for info in link["addr_info"].as_array().map(Vec::as_slice).unwrap_or_default() {
            let Some(local) = info["local"].as_str() else { continue };
            let addr: Ipv4Addr =
                local.parse().with_context(|| format!("`ip -j addr` address {local:?}: expected an IPv4 address"))?;
            out.push((addr, info["prefixlen"].as_u64().unwrap_or(32).min(32) as u8));
        }
    }
    Ok(out)
}

// ------------------------------------------------------------------------------------------------
// The engine
// ------------------------------------------------------------------------------------------------

/// A load balancer the fleet serves.
struct Served {
    lb: ListedLoadBalancer,
    addr: Ipv4Addr,
    stem: String,
    child: Option<Child>,
    started_at: Instant,
    /// Exits in a row that came soon after a start.
    quick_exits: u32,
    /// When the child may be (re)started.
    start_at: Instant,
}

struct Fleet {
    cfg: FleetConfig,
    pool: Pool,
    /// By ARN.
    served: BTreeMap<String, Served>,
    /// Load balancers reported as not served (by ARN), so each is logged once.
    skipped: BTreeSet<String>,
    /// Messages logged once until their condition clears (key: what and which ARN or address).
    warned: BTreeSet<String>,
    failing_since: Option<Instant>,
}

/// Runs the fleet until `stop` is set (SIGTERM/SIGINT), then stops every child, removes every
/// address it added and empties the hosts file. Fails only when it cannot start (a bad pool, no
/// bridge: not inside the VPC namespace, an unwritable hosts file or status directory).
pub fn run(cfg: FleetConfig, stop: Arc<AtomicBool>) -> Result<()> {
    let pool = Pool::new(cfg.pool)?;
    ensure!(
        !in_the_machines_namespace(),
        "lbc-dataplane fleet is in the machine's own network namespace (the one of pid 1): expected to run \
         inside the VPC namespace (ip netns exec VPC lbc-dataplane fleet ...); the host must get no address of the VPC"
    );
    std::fs::create_dir_all(&cfg.status_dir)
        .with_context(|| format!("creating the status directory {}", cfg.status_dir.display()))?;
    let on_bridge = bridge_addresses().with_context(|| {
        format!(
            "reading the addresses of {BRIDGE}: expected to run inside the VPC namespace \
             (ip netns exec VPC lbc-dataplane fleet ...), which has bridge {BRIDGE}"
        )
    })?;
    let subnets: Vec<Ipv4Net> = on_bridge
        .iter()
        .filter(|(_, p)| *p < 32)
        .filter_map(|(a, p)| Ipv4Net::new(*a, *p).ok().map(|n| n.trunc()))
        .collect();
    log(format_args!(
        "fleet start pool={} ({} addresses) bridge={BRIDGE} subnets={subnets:?} emulator={} hosts_file={} status_dir={} \
         child_flags={:?}",
        cfg.pool,
        pool.capacity(),
        cfg.emulator,
        cfg.hosts_file.display(),
        cfg.status_dir.display(),
        cfg.tuning.to_args()
    ));
    if !subnets.iter().any(|n| n.contains(&cfg.pool)) {
        log(format_args!(
            "note: pool {} is outside the bridge's subnets {subnets:?}: clients reach it through their default route",
            cfg.pool
        ));
    }
    write_hosts(&cfg.hosts_file, "")?;
    let mut fleet = Fleet {
        cfg,
        pool,
        served: BTreeMap::new(),
        skipped: BTreeSet::new(),
        warned: BTreeSet::new(),
        failing_since: None,
    };
    while !stop.load(Ordering::SeqCst) {
        let started = Instant::now();
        fleet.poll_once();
        let poll = fleet.cfg.tuning.poll();
        while !stop.load(Ordering::SeqCst) && started.elapsed() < poll {
            std::thread::sleep(poll.saturating_sub(started.elapsed()).min(Duration::from_millis(20)));
        }
    }
    fleet.shutdown();
    Ok(())
}

/// Logs `line` unless `key` was logged already (and not cleared since).
fn warn_once(warned: &mut BTreeSet<String>, key: String, line: std::fmt::Arguments<'_>) {
    if warned.insert(key) {
        log(line);
    }
}

impl Fleet {
    fn poll_once(&mut self) {
        self.reap_exited();
        let mut changed = false;
        let listed = match self.list() {
            Ok(l) => {
                if self.failing_since.take().is_some() {
                    log(format_args!("emulator reachable again"));
                }
                l
            }
            Err(e) => {
                if self.failing_since.is_none() {
                    log(format_args!("listing the load balancers failed (keeping what is served): {e:#}"));
                    self.failing_since = Some(Instant::now());
                }
                self.spawn_due();
                return;
            }
        };
        let served: BTreeSet<String> = self.served.keys().cloned().collect();
        let p = plan(&listed, &served, &self.skipped);
        for lb in &p.skip {
            log(format_args!(
                "skip lb={} type={} arn={}: the fleet serves ALBs (type application) only",
                lb.name, lb.kind, lb.load_balancer_arn
            ));
            self.skipped.insert(lb.load_balancer_arn.clone());
        }
        let listed_arns: BTreeSet<&str> = listed.iter().map(|l| l.load_balancer_arn.as_str()).collect();
        self.skipped.retain(|a| listed_arns.contains(a.as_str()));
        // Warnings about a load balancer end with it.
        self.warned.retain(|k| match k.split_once(' ') {
            Some(("full" | "add" | "spawn", arn)) => listed_arns.contains(arn),
            _ => true,
        });
        for arn in &p.stop {
            self.stop_one(arn);
            changed = true;
        }
        for lb in listed.iter().filter(|l| l.kind == "application") {
            if let Some(s) = self.served.get_mut(&lb.load_balancer_arn)
                && s.lb.dns_name != lb.dns_name
            {
                log(format_args!("lb={} dns_name {} -> {}", lb.name, s.lb.dns_name, lb.dns_name));
                s.lb = lb.clone();
                changed = true;
            }
        }
        if !p.start.is_empty() {
            changed |= self.start_new(&p.start);
        }
        self.spawn_due();
        if changed {
            self.rewrite_hosts();
        }
    }

    fn list(&self) -> Result<Vec<ListedLoadBalancer>> {
        let v = wire::get_json(&self.cfg.emulator, "/_awsemu/load-balancers")?;
        let list: LoadBalancerList = serde_json::from_value(v).context(
            "parsing /_awsemu/load-balancers: expected {\"load_balancers\": [{\"load_balancer_arn\", \"name\", \
             \"type\", \"dns_name\", \"state\"}]}",
        )?;
        Ok(list.load_balancers)
    }

    /// Notes the children that exited on their own (restarted by [`Fleet::spawn_due`]; the address
    /// stays with the load balancer).
    fn reap_exited(&mut self) {
        let poll = self.cfg.tuning.poll();
        for s in self.served.values_mut() {
            let Some(child) = s.child.as_mut() else { continue };
            let status = match child.try_wait() {
                Ok(None) => continue,
                Ok(Some(status)) => status.to_string(),
                Err(e) => format!("unknown ({e})"),
            };
            let pid = child.id();
            s.child = None;
            let ran = s.started_at.elapsed();
            s.quick_exits = if ran < QUICK_EXIT { s.quick_exits + 1 } else { 1 };
            let delay = restart_delay(s.quick_exits, poll);
            s.start_at = Instant::now() + delay;
            log(format_args!(
                "child exited lb={} pid={pid} after_ms={} status={status}: restarting in {} ms (see {}.err)",
                s.lb.name,
                ran.as_millis(),
                delay.as_millis(),
                self.cfg.status_dir.join(&s.stem).display()
            ));
        }
    }

    /// Gives each new ALB an address on the bridge; returns whether any was added.
    fn start_new(&mut self, new: &[ListedLoadBalancer]) -> bool {
        let on_bridge = match bridge_addresses() {
            Ok(a) => a,
            Err(e) => {
                warn_once(
                    &mut self.warned,
                    "bridge".into(),
                    format_args!("reading the addresses of {BRIDGE} failed: {e:#}"),
                );
                return false;
            }
        };
        self.warned.remove("bridge");
        let ours: BTreeSet<Ipv4Addr> = self.served.values().map(|s| s.addr).collect();
        let taken: BTreeSet<Ipv4Addr> =
            on_bridge.iter().map(|(a, _)| *a).filter(|a| !ours.contains(a) && self.cfg.pool.contains(a)).collect();
        for a in &taken {
            warn_once(
                &mut self.warned,
                format!("foreign {a}"),
                format_args!("pool address {a} is on {BRIDGE} already, not added by the fleet: not handed out"),
            );
        }
        let mut added = false;
        for lb in new {
            let arn = &lb.load_balancer_arn;
            let Some(addr) = self.pool.next_free(&taken) else {
                let (cap, used) = (self.pool.capacity(), self.pool.in_use());
                warn_once(
                    &mut self.warned,
                    format!("full {arn}"),
                    format_args!(
                        "no free address in pool {} for lb={} ({used} served, {} on {BRIDGE} already, {cap} in the \
                         pool): expected a larger --pool; waiting for a load balancer to go",
                        self.cfg.pool,
                        lb.name,
                        taken.len()
                    ),
                );
                continue;
            };
            if let Err(e) = netns::ip(&["addr", "add", &format!("{addr}/32"), "dev", BRIDGE]) {
                warn_once(
                    &mut self.warned,
                    format!("add {arn}"),
                    format_args!("adding {addr}/32 to {BRIDGE} for lb={} failed (retrying): {e:#}", lb.name),
                );
                continue;
            }
            self.pool.take(addr, arn);
            self.warned.remove(&format!("full {arn}"));
            self.warned.remove(&format!("add {arn}"));
            let stems: BTreeSet<String> = self.served.values().map(|s| s.stem.clone()).collect();
            let stem = file_stem(&lb.name, arn, &stems);
            if !valid_dns_name(&lb.dns_name) {
                log(format_args!(
                    "lb={} dns_name {:?} is not a host name: left out of the hosts file",
                    lb.name, lb.dns_name
                ));
            }
            log(format_args!(
                "serve lb={} arn={arn} state={} addr={addr} dns_name={} files={}.{{json,log,err}}",
                lb.name,
                lb.state,
                lb.dns_name,
                self.cfg.status_dir.join(&stem).display()
            ));
            let now = Instant::now();
            self.served.insert(
                arn.clone(),
                Served { lb: lb.clone(), addr, stem, child: None, started_at: now, quick_exits: 0, start_at: now },
            );
            added = true;
        }
        added
    }

    /// Starts the children that are due: new load balancers and restarts.
    fn spawn_due(&mut self) {
        let now = Instant::now();
        let due: Vec<String> = self
            .served
            .iter()
            .filter(|(_, s)| s.child.is_none() && s.start_at <= now)
            .map(|(arn, _)| arn.clone())
            .collect();
        for arn in due {
            let Some(s) = self.served.get(&arn) else { continue };
            match spawn_child(&self.cfg, s) {
                Ok(child) => {
                    log(format_args!("started lb={} addr={} pid={}", s.lb.name, s.addr, child.id()));
                    self.warned.remove(&format!("spawn {arn}"));
                    if let Some(s) = self.served.get_mut(&arn) {
                        s.child = Some(child);
                        s.started_at = Instant::now();
                    }
                }
                Err(e) => {
                    let (name, poll) = (s.lb.name.clone(), self.cfg.tuning.poll());
                    warn_once(
                        &mut self.warned,
                        format!("spawn {arn}"),
                        format_args!("starting the data plane of lb={name} failed (retrying): {e:#}"),
                    );
                    if let Some(s) = self.served.get_mut(&arn) {
                        s.quick_exits += 1;
                        s.start_at = Instant::now() + restart_delay(s.quick_exits, poll).max(poll);
                    }
                }
            }
        }
    }

    /// Stops the child of a load balancer gone from the emulator, removes and frees its address.
    fn stop_one(&mut self, arn: &str) {
        let Some(s) = self.served.remove(arn) else { return };
        if let Some(c) = &s.child {
            netns::signal(c.id() as i32, "TERM");
        }
        self.retire(s, Instant::now() + STOP_GRACE, " (gone from the emulator)");
    }

    /// Waits for a child sent SIGTERM (killed at `deadline`), then removes and frees its address.
    fn retire(&mut self, mut s: Served, deadline: Instant, why: &str) {
        let status = s.child.as_mut().map(|c| wait_or_kill(c, deadline));
        self.remove_address(s.addr);
        log(format_args!(
            "stopped lb={} addr={}{why} child_status={}",
            s.lb.name,
            s.addr,
            status.unwrap_or_else(|| "not running".into())
        ));
    }

    fn remove_address(&mut self, addr: Ipv4Addr) {
        let cidr = format!("{addr}/32");
        match netns::ip(&["addr", "del", &cidr, "dev", BRIDGE]) {
            Ok(_) => self.pool.release(addr),
            // Gone already (removed by hand): free all the same; still there: kept out of the pool.
            Err(e) => match bridge_addresses() {
                Ok(on) if !on.iter().any(|(a, _)| *a == addr) => self.pool.release(addr),
                _ => log(format_args!("removing {cidr} from {BRIDGE} failed (not handed out again): {e:#}")),
            },
        }
    }

    fn rewrite_hosts(&mut self) {
        let text = render_hosts(self.served.values().map(|s| (s.addr, s.lb.dns_name.as_str())));
        match write_hosts(&self.cfg.hosts_file, &text) {
            Ok(()) => {
                self.warned.remove("hosts");
                log(format_args!("hosts file={} entries={}", self.cfg.hosts_file.display(), text.lines().count()));
            }
            Err(e) => warn_once(&mut self.warned, "hosts".into(), format_args!("writing the hosts file failed: {e:#}")),
        }
    }

    /// Stops every child (SIGTERM to all, then waits), removes every address, empties the hosts file.
    fn shutdown(&mut self) {
        log(format_args!("fleet stopping: {} load balancer(s) served", self.served.len()));
        for s in self.served.values() {
            if let Some(c) = &s.child {
                netns::signal(c.id() as i32, "TERM");
            }
        }
        let deadline = Instant::now() + STOP_GRACE;
        let served = std::mem::take(&mut self.served);
        for (_, s) in served {
            self.retire(s, deadline, "");
        }
        self.rewrite_hosts();
        log(format_args!("fleet stopped"));
    }
}

/// Whether this process shares pid 1's network namespace (unknown, e.g. unreadable: no).
fn in_the_machines_namespace() -> bool {
    match (std::fs::read_link("/proc/self/ns/net"), std::fs::read_link("/proc/1/ns/net")) {
        (Ok(own), Ok(init)) => own == init,
        _ => false,
    }
}

/// The addresses on the bridge of the current namespace.
fn bridge_addresses() -> Result<Vec<(Ipv4Addr, u8)>> {
    parse_addresses(&netns::ip(&["-j", "-4", "addr", "show", "dev", BRIDGE])?)
}

fn append(path: &Path) -> Result<File> {
    OpenOptions::new().create(true).append(true).open(path).with_context(|| format!("opening {}", path.display()))
}

fn spawn_child(cfg: &FleetConfig, s: &Served) -> Result<Child> {
    let with = |ext: &str| cfg.status_dir.join(format!("{}.{ext}", s.stem));
    let args = child_args(&cfg.emulator, &s.lb.load_balancer_arn, s.addr, &with("json"), &cfg.tuning);
    Command::new(&cfg.program)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(append(&with("log"))?)
        .stderr(append(&with("err"))?)
        .spawn()
        .with_context(|| format!("running {} {}", cfg.program.display(), args.join(" ")))
}

/// Waits for `child` until `deadline`, then SIGKILLs it; its exit status, for the log.
fn wait_or_kill(child: &mut Child, deadline: Instant) -> String {
    let show = |r: std::io::Result<ExitStatus>| r.map_or_else(|e| format!("unknown ({e})"), |s| s.to_string());
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.to_string(),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                return format!("{} (SIGKILL after {} ms)", show(child.wait()), STOP_GRACE.as_millis());
            }
            Err(e) => return format!("unknown ({e})"),
        }
    }
}

/// Writes `text` to `path` through a temporary file of the same directory and a rename, so a
/// reader sees the old or the new file, never part of one.
fn write_hosts(path: &Path, text: &str) -> Result<()> {
    let name = path.file_name().with_context(|| format!("hosts file {}: expected a file path", path.display()))?;
    let tmp = path.with_file_name(format!(".{}.tmp", name.to_string_lossy()));
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn lb(name: &str, kind: &str) -> ListedLoadBalancer {
        ListedLoadBalancer {
            load_balancer_arn: format!("arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/{name}/1"),
            name: name.into(),
            kind: kind.into(),
            dns_name: format!("{name}-1.us-east-1.elb.amazonaws.com"),
            state: "active".into(),
        }
    }

    fn ip(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    #[test]
    fn the_pool_skips_network_broadcast_and_taken_addresses_and_moves_on() {
        let mut pool = Pool::new("10.0.254.0/29".parse().unwrap()).unwrap();
        assert_eq!(pool.capacity(), 6);
        let none = BTreeSet::new();
        assert_eq!(pool.next_free(&none), Some(ip("10.0.254.1")), "the network address is skipped");
        // An address on the bridge already (not the fleet's) is never handed out.
        let taken = BTreeSet::from([ip("10.0.254.1")]);
        assert_eq!(pool.next_free(&taken), Some(ip("10.0.254.2")));
        for (i, a) in ["10.0.254.2", "10.0.254.3", "10.0.254.4", "10.0.254.5", "10.0.254.6"].iter().enumerate() {
            assert_eq!(pool.next_free(&taken), Some(ip(a)));
            pool.take(ip(a), &format!("lb{i}"));
        }
        assert_eq!(pool.next_free(&taken), None, "10.0.254.7 is the broadcast address");
        assert_eq!(pool.in_use(), 5);
        // A freed address comes back only after the others: the search goes on after the last one.
        pool.release(ip("10.0.254.3"));
        assert_eq!(pool.next_free(&none), Some(ip("10.0.254.1")));
        pool.take(ip("10.0.254.1"), "lb5");
        assert_eq!(pool.next_free(&none), Some(ip("10.0.254.3")), "wraps around to the freed one");
    }

    #[test]
    fn pools_must_be_networks_with_room() {
        let e = Pool::new("10.0.254.5/24".parse().unwrap()).unwrap_err().to_string();
        assert!(e.contains("10.0.254.5/24") && e.contains("10.0.254.0/24"), "{e}");
        let e = Pool::new("10.0.254.0/31".parse().unwrap()).unwrap_err().to_string();
        assert!(e.contains("/30 or shorter"), "{e}");
        assert_eq!(Pool::new("10.0.254.0/30".parse().unwrap()).unwrap().capacity(), 2);
    }

    #[test]
    fn the_plan_starts_new_albs_stops_gone_ones_and_reports_nlbs_once() {
        let (a, b, n) = (lb("a", "application"), lb("b", "application"), lb("n", "network"));
        let served = BTreeSet::from([a.load_balancer_arn.clone(), "arn:gone".to_string()]);
        let p = plan(&[a.clone(), b.clone(), n.clone()], &served, &BTreeSet::new());
        assert_eq!(p, Plan { start: vec![b.clone()], stop: vec!["arn:gone".into()], skip: vec![n.clone()] });
        let reported = BTreeSet::from([n.load_balancer_arn.clone()]);
        let served = BTreeSet::from([a.load_balancer_arn.clone(), b.load_balancer_arn.clone()]);
        assert_eq!(plan(&[a, b, n], &served, &reported), Plan::default(), "nothing new: nothing to do");
    }

    #[test]
    fn hosts_files_have_one_line_per_load_balancer_by_address() {
        let text = render_hosts([
            (ip("10.0.254.10"), "b.elb.amazonaws.com"),
            (ip("10.0.254.9"), "a.elb.amazonaws.com"),
            (ip("10.0.254.11"), ""),
            (ip("10.0.254.12"), "bad name"),
        ]);
        assert_eq!(text, "10.0.254.9 a.elb.amazonaws.com\n10.0.254.10 b.elb.amazonaws.com\n");
        assert_eq!(render_hosts([]), "");
    }

    #[test]
    fn hosts_files_are_replaced_whole() {
        let dir = std::env::temp_dir().join(format!("lbc-fleet-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("hosts");
        write_hosts(&path, "10.0.254.1 a\n").unwrap();
        write_hosts(&path, "10.0.254.2 b\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "10.0.254.2 b\n");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temporary file left");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn file_stems_are_names_made_unique() {
        let none = BTreeSet::new();
        assert_eq!(file_stem("gw-abc", "arn:x/app/gw-abc/50dc", &none), "gw-abc");
        let used = BTreeSet::from(["gw-abc".to_string()]);
        assert_eq!(file_stem("gw-abc", "arn:x/app/gw-abc/50dc", &used), "gw-abc-50dc");
        assert_eq!(file_stem("a/b", "arn", &none), "a_b");
        assert_eq!(file_stem("..", "arn", &none), "lb..");
    }

    #[test]
    fn restarts_wait_longer_while_a_child_keeps_exiting() {
        let poll = Duration::from_millis(100);
        assert_eq!(restart_delay(1, poll), Duration::ZERO, "the first exit: restarted on the next poll");
        assert_eq!(restart_delay(2, poll), poll);
        assert_eq!(restart_delay(3, poll), poll * 2);
        assert_eq!(restart_delay(40, poll), MAX_RESTART_DELAY);
    }

    #[derive(Parser)]
    struct RunArgs {
        #[arg(long)]
        emulator: Endpoint,
        #[arg(long)]
        load_balancer_arn: String,
        #[arg(long)]
        listen: Ipv4Addr,
        #[arg(long)]
        status_file: PathBuf,
        #[command(flatten)]
        tuning: Tuning,
    }

    #[test]
    fn children_get_the_fleets_tuning_flags() {
        // The child's first argument, `run`, stands for the program name here.
        let parse =
            |args: &[&str]| RunArgs::try_parse_from(std::iter::once("run").chain(args.iter().copied())).unwrap();
        let base = ["--emulator", "unix:/tmp/e.sock", "--load-balancer-arn", "a", "--listen", "10.0.0.1"];
        let mut with_tuning = base.to_vec();
        with_tuning.extend(["--status-file", "/s", "--poll-ms", "250", "--propagation-seconds", "0.5"]);
        with_tuning.extend(["--registration-propagation-seconds", "12.25", "--request-timeout-ms", "7000"]);
        let tuning = parse(&with_tuning).tuning;
        let args = child_args(
            &"unix:/tmp/e.sock".parse().unwrap(),
            "arn:x",
            ip("10.0.254.1"),
            Path::new("/d/a.json"),
            &tuning,
        );
        assert_eq!(args[0], "run");
        let child = RunArgs::try_parse_from(&args).unwrap();
        assert_eq!(child.tuning, tuning, "{args:?}");
        assert_eq!((child.load_balancer_arn.as_str(), child.listen), ("arn:x", ip("10.0.254.1")));
        assert_eq!(child.status_file, Path::new("/d/a.json"));
        assert_eq!(child.emulator.to_string(), "unix:/tmp/e.sock");
        let cfg = tuning.config(child.emulator, child.load_balancer_arn, child.listen.into(), None);
        assert_eq!((cfg.registration_propagation_seconds, cfg.poll), (0.5, Duration::from_millis(250)));
        // Defaults pass through as defaults.
        let defaults = parse(&[&base[..], &["--status-file", "/s"]].concat()).tuning;
        let args = child_args(&"127.0.0.1:4566".parse().unwrap(), "a", ip("10.0.254.1"), Path::new("/s"), &defaults);
        assert_eq!(RunArgs::try_parse_from(&args).unwrap().tuning, defaults);
    }

    #[test]
    fn bridge_addresses_parse_from_ip_json() {
        let json = r#"[{"ifindex":2,"ifname":"br0","addr_info":[
            {"family":"inet","local":"10.0.0.1","prefixlen":16},
            {"family":"inet","local":"10.0.254.1","prefixlen":32}]}]"#;
        assert_eq!(parse_addresses(json).unwrap(), vec![(ip("10.0.0.1"), 16), (ip("10.0.254.1"), 32)]);
        assert_eq!(parse_addresses("[]").unwrap(), vec![]);
        assert!(parse_addresses("nope").is_err());
    }
}
