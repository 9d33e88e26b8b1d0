//! Which pod IPs still need an EC2 `DescribeNetworkInterfaces` call to find their ENI, and how
//! long an answer stays good. Pure planning: the controller runs the calls and records results.
//!
//! Cascade, cheapest first:
//! 1. [`EniIndex`] (CiliumNode objects, kept live by the watch): no AWS call at all. This is the
//!    path for every Cilium ENI-mode pod, including IPs inside delegated `/28` prefixes, which
//!    the EC2 address filter below would not find.
//! 2. [`EniCache`]: earlier EC2 answers, positive for [`ENI_CACHE_TTL`] (10 minutes, ALBC's
//!    `defaultPodENIInfoCacheTTL`), negative ("no ENI has this IP") for [`ENI_NEGATIVE_TTL`].
//! 3. `DescribeNetworkInterfaces` with filters `vpc-id` and `addresses.private-ip-address`
//!    (IPv4) or `ipv6-addresses.ipv6-address` (IPv6), at most [`DESCRIBE_ENI_IP_CHUNK`] = 199 IPs
//!    per call: EC2 accepts up to 200 filter values per request and the `vpc-id` filter takes one
//!    (ALBC `pkg/networking/pod_eni_info_resolver.go`, `describeNetworkInterfacesFiltersLimit - 1`).
//!
//! ALBC keys its cache by pod (namespace/name + UID); this one keys by IP, since the IP is what
//! the ENI holds. An IP moved to another ENI within the TTL is answered stale by the cache, which
//! is why a CiliumNode answer (live) is preferred over it.

use crate::cilium::{EniIndex, EniLookup};
use crate::lb::NetworkInterface;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// IP values per `DescribeNetworkInterfaces` call (200 filter values, one used by `vpc-id`).
pub const DESCRIBE_ENI_IP_CHUNK: usize = 199;
/// How long an EC2 answer "IP → ENI" is trusted (ALBC: 10 minutes).
pub const ENI_CACHE_TTL: Duration = Duration::from_secs(10 * 60);
/// How long "EC2 knows no ENI with this IP" is trusted before asking again.
pub const ENI_NEGATIVE_TTL: Duration = Duration::from_secs(60);

/// The `DescribeNetworkInterfaces` filter that matches an address family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IpFilter {
    Ipv4,
    Ipv6,
}

impl IpFilter {
    pub fn of(ip: &IpAddr) -> Self {
        if ip.is_ipv4() { IpFilter::Ipv4 } else { IpFilter::Ipv6 }
    }

    /// EC2 filter name.
    pub fn name(self) -> &'static str {
        match self {
            IpFilter::Ipv4 => "addresses.private-ip-address",
            IpFilter::Ipv6 => "ipv6-addresses.ipv6-address",
        }
    }
}

/// One `DescribeNetworkInterfaces` call (plus the caller's `vpc-id` filter).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescribeByIp {
    pub filter: IpFilter,
    /// Sorted, at most [`DESCRIBE_ENI_IP_CHUNK`].
    pub ips: Vec<IpAddr>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct CacheEntry {
    eni: Option<NetworkInterface>,
    at: Instant,
}

/// What the cache says about one IP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheHit<'a> {
    Eni(&'a NetworkInterface),
    /// EC2 was asked recently and no ENI has this IP.
    Absent,
    Miss,
}

/// EC2 answers by IP, with expiry. Plain data: the caller owns it and passes `now`.
#[derive(Clone, Debug)]
pub struct EniCache {
    entries: BTreeMap<IpAddr, CacheEntry>,
    ttl: Duration,
    negative_ttl: Duration,
}

impl Default for EniCache {
    fn default() -> Self {
        Self::new(ENI_CACHE_TTL, ENI_NEGATIVE_TTL)
    }
}

impl EniCache {
    pub fn new(ttl: Duration, negative_ttl: Duration) -> Self {
        Self { entries: BTreeMap::new(), ttl, negative_ttl }
    }

    fn is_fresh(&self, entry: &CacheEntry, now: Instant) -> bool {
        let ttl = if entry.eni.is_some() { self.ttl } else { self.negative_ttl };
        now.saturating_duration_since(entry.at) < ttl
    }

    pub fn get(&self, ip: IpAddr, now: Instant) -> CacheHit<'_> {
        match self.entries.get(&ip) {
            Some(e) if self.is_fresh(e, now) => e.eni.as_ref().map_or(CacheHit::Absent, CacheHit::Eni),
            _ => CacheHit::Miss,
        }
    }

    /// Records the answer to calls for `asked`: every address of every ENI found is cached
    /// (a node's ENI serves many pods), and each asked IP on none of them is cached as absent.
    pub fn record(&mut self, asked: &[IpAddr], found: &[NetworkInterface], now: Instant) {
        for eni in found {
            for ip in &eni.private_ips {
                self.entries.insert(*ip, CacheEntry { eni: Some(eni.clone()), at: now });
            }
        }
        let covered: BTreeSet<&IpAddr> = found.iter().flat_map(|e| &e.private_ips).collect();
        for ip in asked.iter().filter(|ip| !covered.contains(ip)) {
            self.entries.insert(*ip, CacheEntry { eni: None, at: now });
        }
    }

    /// Drops expired entries; returns how many.
    pub fn expire(&mut self, now: Instant) -> usize {
        let before = self.entries.len();
        let (ttl, negative_ttl) = (self.ttl, self.negative_ttl);
        self.entries.retain(|_, e| {
            let limit = if e.eni.is_some() { ttl } else { negative_ttl };
            now.saturating_duration_since(e.at) < limit
        });
        before - self.entries.len()
    }

    /// The fresh ENIs, newest record of each, e.g. to feed [`EniIndex::add_ec2`].
    pub fn fresh_interfaces(&self, now: Instant) -> Vec<&NetworkInterface> {
        let mut newest: BTreeMap<&str, (Instant, &NetworkInterface)> = BTreeMap::new();
        for entry in self.entries.values().filter(|e| self.is_fresh(e, now)) {
            if let Some(eni) = &entry.eni {
                let slot = newest.entry(eni.id.as_str()).or_insert((entry.at, eni));
                if entry.at > slot.0 {
                    *slot = (entry.at, eni);
                }
            }
        }
        newest.into_values().map(|(_, eni)| eni).collect()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The outcome of planning: what is known and what to ask.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LookupPlan {
    /// IP → ENI ID, answered without a call.
    pub resolved: BTreeMap<IpAddr, String>,
    /// EC2 recently said no ENI holds these (overlay IPs, or another VPC): not asked again yet.
    pub absent: Vec<IpAddr>,
    pub calls: Vec<DescribeByIp>,
}

impl LookupPlan {
    /// Every IP has an ENI without further calls.
    pub fn is_complete(&self) -> bool {
        self.absent.is_empty() && self.calls.is_empty()
    }

    /// Every IP asked for, across calls.
    pub fn asked(&self) -> Vec<IpAddr> {
        self.calls.iter().flat_map(|c| c.ips.iter().copied()).collect()
    }
}

/// Plans the lookups for `ips` (duplicates are fine).
pub fn plan_eni_lookups(
    ips: impl IntoIterator<Item = IpAddr>,
    index: &EniIndex,
    cache: &EniCache,
    now: Instant,
) -> LookupPlan {
    let mut plan = LookupPlan::default();
    let mut ask: BTreeMap<IpFilter, BTreeSet<IpAddr>> = BTreeMap::new();
    for ip in ips.into_iter().collect::<BTreeSet<_>>() {
        if let EniLookup::Found(eni, _) = index.lookup(ip) {
            plan.resolved.insert(ip, eni.id.clone());
            continue;
        }
        match cache.get(ip, now) {
            CacheHit::Eni(eni) => {
                plan.resolved.insert(ip, eni.id.clone());
            }
            CacheHit::Absent => plan.absent.push(ip),
            CacheHit::Miss => {
                ask.entry(IpFilter::of(&ip)).or_default().insert(ip);
            }
        }
    }
    for (filter, ips) in ask {
        let ips: Vec<IpAddr> = ips.into_iter().collect();
        plan.calls.extend(ips.chunks(DESCRIBE_ENI_IP_CHUNK).map(|c| DescribeByIp { filter, ips: c.to_vec() }));
    }
    plan
}

/// The ENI of `ip` from the index (CiliumNodes first) or a fresh cache entry.
pub fn resolve<'a>(ip: IpAddr, index: &'a EniIndex, cache: &'a EniCache, now: Instant) -> Option<&'a NetworkInterface> {
    index.eni_of(ip).or(match cache.get(ip, now) {
        CacheHit::Eni(eni) => Some(eni),
        _ => None,
    })
}

#[cfg(test)]
mod tests;
