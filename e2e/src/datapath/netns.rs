//! A VPC you can send packets through, built from network namespaces: one namespace stands for
//! the VPC (a bridge `br0` holding the "router" address and any load-balancer VIPs) and each pod
//! gets a namespace of its own with `eth0` on a veth to that bridge. Nothing is ever added to the
//! machine's own namespace: the veths are created inside the VPC namespace and the host keeps no
//! route to the VPC CIDR ([`check_host_has_no_route`]).
//!
//! Names: the VPC is `lbcv-<tag>-<owner pid>`, its pods `lbcp-<tag>-<owner pid>_<pod>`. A
//! [`Vpc`] created here owns the namespaces: dropping it (also while a test panics) kills every
//! process inside them and deletes them. [`sweep_leftovers`] (run by [`Vpc::create`]) removes the
//! namespaces of owners that are no longer alive, so a crashed run never blocks the next one and a
//! concurrent test's VPC is never touched.

use anyhow::{Context, Result, bail, ensure};
use ipnet::Ipv4Net;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::Command;

const VPC_PREFIX: &str = "lbcv-";
const POD_PREFIX: &str = "lbcp-";
/// The VPC namespace's bridge: the router address and the load balancers' VIPs (/32s) are on it.
pub const BRIDGE: &str = "br0";

/// Runs `ip ARGS` (in the caller's namespace), failing with its stderr.
pub(crate) fn ip(args: &[&str]) -> Result<String> {
    let out = Command::new("ip").args(args).output().context("running `ip` (iproute2 is required)")?;
    ensure!(
        out.status.success(),
        "`ip {}` failed ({}): {}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn netns_list() -> Result<Vec<String>> {
    // `ip netns list` prints `name (id: N)` for namespaces with an id.
    Ok(ip(&["netns", "list"])?.lines().filter_map(|l| l.split_whitespace().next()).map(str::to_string).collect())
}

fn netns_exists(name: &str) -> bool {
    PathBuf::from("/var/run/netns").join(name).exists()
}

/// Kills every process in namespace `name` (SIGKILL) and deletes it; no-op when it is gone.
fn delete_netns(name: &str) -> Result<()> {
    if !netns_exists(name) {
        return Ok(());
    }
    for _ in 0..50 {
        let pids: Vec<i32> = ip(&["netns", "pids", name])
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if pids.is_empty() {
            break;
        }
        for pid in pids {
            signal(pid, "KILL");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    ip(&["netns", "delete", name]).map(|_| ()).or_else(|e| if netns_exists(name) { Err(e) } else { Ok(()) })
}

/// Sends `SIG` (e.g. "TERM") to `pid` with kill(1): this crate forbids unsafe code.
pub fn signal(pid: i32, sig: &str) -> bool {
    Command::new("kill").args([&format!("-{sig}"), &pid.to_string()]).output().is_ok_and(|o| o.status.success())
}

fn pid_alive(pid: u32) -> bool {
    PathBuf::from(format!("/proc/{pid}")).exists()
}

/// The owner pid in a VPC id `<tag>-<pid>`.
fn owner_pid(vpc_id: &str) -> Option<u32> {
    vpc_id.rsplit('-').next()?.parse().ok()
}

/// Deletes the VPC namespaces whose owner process is gone, and pod namespaces whose VPC is gone.
/// Returns the names deleted.
pub fn sweep_leftovers() -> Result<Vec<String>> {
    let all = netns_list()?;
    let mut gone = Vec::new();
    for name in &all {
        if let Some(id) = name.strip_prefix(VPC_PREFIX)
            && !owner_pid(id).is_some_and(pid_alive)
        {
            delete_netns(name)?;
            gone.push(name.clone());
        }
    }
    for name in &all {
        if let Some(rest) = name.strip_prefix(POD_PREFIX) {
            let vpc = format!("{VPC_PREFIX}{}", rest.split('_').next().unwrap_or_default());
            if !netns_exists(&vpc) || gone.contains(&vpc) {
                delete_netns(name)?;
                gone.push(name.clone());
            }
        }
    }
    Ok(gone)
}

/// Fails when the machine's own namespace has a route (of any table, other than the default
/// route) or an address overlapping `cidr`: the VPC must be reachable only from inside its
/// namespace, or a test could pass by talking to pods through the host.
pub fn check_host_has_no_route(cidr: Ipv4Net) -> Result<()> {
    let text = ip(&["-j", "-4", "route", "show", "table", "all"])?;
    let routes: Vec<serde_json::Value> = serde_json::from_str(&text).context("parsing `ip -j route` output")?;
    for r in &routes {
        let Some(dst) = r.get("dst").and_then(|d| d.as_str()) else { continue };
        if dst == "default" {
            continue;
        }
        let net: Ipv4Net = match dst.parse::<Ipv4Net>() {
            Ok(n) => n,
            Err(_) => match dst.parse::<Ipv4Addr>() {
                Ok(a) => Ipv4Net::from(a),
                Err(_) => continue,
            },
        };
        if net.prefix_len() > 0 && (cidr.contains(&net.network()) || net.contains(&cidr.network())) {
            bail!(
                "the machine's own network namespace has a route to {dst} ({r}), which overlaps the test VPC \
                 {cidr}; expected none (the VPC must be reachable only inside its namespace): remove it with \
                 `ip route del {dst}` and find what added it"
            );
        }
    }
    Ok(())
}

/// A network namespace standing for a VPC.
#[derive(Debug)]
pub struct Vpc {
    name: String,
    cidr: Ipv4Net,
    router: Ipv4Addr,
    owned: bool,
}

impl Vpc {
    /// Creates VPC namespace `lbcv-<tag>-<pid>` for `cidr` (e.g. "10.0.0.0/16"): bridge `br0` up
    /// with the router address (the CIDR's first host) and loopback up. Sweeps leftovers of dead
    /// runs first and checks the host has no route to `cidr`. `tag`: short, `[a-z0-9-]`.
    pub fn create(tag: &str, cidr: &str) -> Result<Self> {
        ensure!(
            !tag.is_empty()
                && tag.len() <= 24
                && tag.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "VPC tag {tag:?} is invalid: expected 1-24 characters of [a-z0-9-]"
        );
        let cidr: Ipv4Net = cidr.parse().with_context(|| format!("VPC CIDR {cidr:?} is not an IPv4 CIDR"))?;
        ensure!(cidr.prefix_len() <= 30, "VPC CIDR {cidr} is too small: expected a prefix of /30 or shorter");
        sweep_leftovers()?;
        check_host_has_no_route(cidr)?;
        let name = format!("{VPC_PREFIX}{tag}-{}", std::process::id());
        let router = cidr.hosts().next().context("VPC CIDR has no host")?;
        delete_netns(&name)?;
        ip(&["netns", "add", &name])?;
        // From here on, Drop tears down whatever was made.
        let vpc = Self { name, cidr, router, owned: true };
        let router_cidr = format!("{router}/{}", cidr.prefix_len());
        vpc.ip(&["link", "set", "lo", "up"])?;
        vpc.ip(&["link", "add", BRIDGE, "type", "bridge"])?;
        vpc.ip(&["addr", "add", &router_cidr, "dev", BRIDGE])?;
        vpc.ip(&["link", "set", BRIDGE, "up"])?;
        Ok(vpc)
    }

    /// A handle on an existing VPC namespace (made by another process, e.g. the test that runs a
    /// node agent): pods can be added; dropping it deletes nothing.
    pub fn attach(name: &str) -> Result<Self> {
        ensure!(
            name.starts_with(VPC_PREFIX) && netns_exists(name),
            "VPC namespace {name:?} not found: expected a namespace named {VPC_PREFIX}<tag>-<pid> made by Vpc::create"
        );
        let out = ip(&["-n", name, "-j", "-4", "addr", "show", "dev", BRIDGE])?;
        let v: serde_json::Value = serde_json::from_str(&out).context("parsing `ip -j addr` output")?;
        let info = v[0]["addr_info"]
            .as_array()
            .and_then(|a| a.iter().find(|i| i["prefixlen"].as_u64().is_some_and(|p| p < 32)))
            .with_context(|| format!("{name}: {BRIDGE} has no router address"))?;
        let router: Ipv4Addr = info["local"].as_str().unwrap_or_default().parse().context("router address")?;
        let cidr = Ipv4Net::new(router, info["prefixlen"].as_u64().unwrap_or(32) as u8)?.trunc();
        Ok(Self { name: name.to_string(), cidr, router, owned: false })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn cidr(&self) -> Ipv4Net {
        self.cidr
    }

    /// The VPC's own address on the bridge: the source of health checks and load.
    pub fn router(&self) -> Ipv4Addr {
        self.router
    }

    /// `/var/run/netns/NAME`, for processes that enter the namespace with setns(2).
    pub fn netns_path(&self) -> PathBuf {
        PathBuf::from("/var/run/netns").join(&self.name)
    }

    fn ip(&self, args: &[&str]) -> Result<String> {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// Adds `ip` (a /32, e.g. a load balancer's VIP) to the bridge.
    pub fn add_address(&self, ip: Ipv4Addr) -> Result<()> {
        self.ip(&["addr", "add", &format!("{ip}/32"), "dev", BRIDGE]).map(|_| ())
    }

    /// `program` run inside the VPC namespace (`ip netns exec`).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).arg(program);
        c
    }

    /// Adds pod `pod` (a DNS label) with `eth0` = `ip`/VPC prefix on a veth to the bridge and a
    /// default route via the router. Replaces a leftover namespace of the same pod.
    pub fn add_pod(&self, pod: &str, addr: Ipv4Addr) -> Result<PodNet> {
        ensure!(
            !pod.is_empty() && !pod.contains('_') && !pod.contains('/'),
            "pod name {pod:?} is invalid: expected a DNS label"
        );
        ensure!(
            self.cidr.contains(&addr) && addr != self.router,
            "pod {pod}: IP {addr} is not usable in VPC {} ({}): expected an address of the CIDR other than the router {}",
            self.name,
            self.cidr,
            self.router
        );
        let id = self.name.strip_prefix(VPC_PREFIX).unwrap_or(&self.name);
        let ns = format!("{POD_PREFIX}{id}_{pod}");
        delete_netns(&ns)?;
        ip(&["netns", "add", &ns])?;
        let pod_net = PodNet { ns, ip: addr, removed: false };
        // The VPC side of the veth, named within the VPC namespace only (15 characters at most).
        let veth = format!("v{:08x}", fastrand::u32(..));
        self.ip(&["link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &pod_net.ns])?;
        self.ip(&["link", "set", &veth, "master", BRIDGE, "up"])?;
        let p = |args: &[&str]| {
            let mut all = vec!["-n", pod_net.ns.as_str()];
            all.extend_from_slice(args);
            ip(&all)
        };
        p(&["link", "set", "lo", "up"])?;
        p(&["addr", "add", &format!("{addr}/{}", self.cidr.prefix_len()), "dev", "eth0"])?;
        p(&["link", "set", "eth0", "up"])?;
        p(&["route", "add", "default", "via", &self.router.to_string()])?;
        Ok(pod_net)
    }

    /// Names of this VPC's pod namespaces (made by any process).
    pub fn pod_namespaces(&self) -> Result<Vec<String>> {
        let id = self.name.strip_prefix(VPC_PREFIX).unwrap_or(&self.name);
        let prefix = format!("{POD_PREFIX}{id}_");
        Ok(netns_list()?.into_iter().filter(|n| n.starts_with(&prefix)).collect())
    }

    /// `GET http://addr/path` from inside the VPC namespace: (status, body).
    pub fn http_get(&self, addr: &str, path: &str) -> Result<(u16, String)> {
        let out = self
            .command("curl")
            .args(["-sS", "-m", "5", "-w", "\n%{http_code}", &format!("http://{addr}{path}")])
            .output()
            .context("running curl in the VPC namespace")?;
        ensure!(
            out.status.success(),
            "GET http://{addr}{path} from {} failed: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr).trim()
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let (body, code) = text.rsplit_once('\n').context("curl output without a status")?;
        Ok((code.trim().parse().context("curl status")?, body.to_string()))
    }

    /// Kills every process in this VPC's namespaces and deletes them (idempotent).
    pub fn teardown(&self) -> Result<()> {
        for ns in self.pod_namespaces()? {
            delete_netns(&ns)?;
        }
        delete_netns(&self.name)
    }
}

impl Drop for Vpc {
    fn drop(&mut self) {
        if self.owned
            && let Err(e) = self.teardown()
        {
            eprintln!("tearing down VPC namespace {}: {e:#}", self.name);
        }
    }
}

/// A pod's network namespace; deleted (its processes killed) on drop or by [`PodNet::remove`].
#[derive(Debug)]
pub struct PodNet {
    ns: String,
    ip: Ipv4Addr,
    removed: bool,
}

impl PodNet {
    pub fn ip(&self) -> Ipv4Addr {
        self.ip
    }

    pub fn netns(&self) -> &str {
        &self.ns
    }

    /// `program` run inside the pod's namespace.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns]).arg(program);
        c
    }

    /// Kills the processes left in the namespace and deletes it (with its veth).
    pub fn remove(mut self) -> Result<()> {
        self.removed = true;
        delete_netns(&self.ns)
    }
}

impl Drop for PodNet {
    fn drop(&mut self) {
        if !self.removed
            && let Err(e) = delete_netns(&self.ns)
        {
            eprintln!("deleting pod namespace {}: {e:#}", self.ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_pid_is_the_last_segment() {
        assert_eq!(owner_pid("zd-rollout-1234"), Some(1234));
        assert_eq!(owner_pid("abc"), None);
    }
}
