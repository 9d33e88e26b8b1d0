//! Pod IP → ENI from Cilium's own bookkeeping, so ENI mode needs no `spec.providerID` and, for
//! most pods, no EC2 call at all.
//!
//! In ENI IPAM mode the cilium-operator records every ENI of a node in the `cilium.io/v2`
//! CiliumNode object (`pkg/aws/eni/types`, CRD `ciliumnodes.cilium.io`):
//!
//! - `status.eni.enis`: map ENI ID → `{id, ip (primary), addresses[] (secondary IPs),
//!   prefixes[] (delegated /28s), security-groups[], subnet{id, cidr}, vpc{id, primary-cidr,
//!   cidrs[]}, availability-zone, mac, number, description, tags}`;
//! - `spec.ipam.pool` (allocatable) and `status.ipam.used` (allocated): map IP →
//!   `{owner, resource}`, where `resource` is the ENI ID in ENI mode.
//!
//! The object is read as a `serde_json::Value` (no Cilium crate, no schema coupling) and every
//! field is optional: a missing or odd field drops that datum, never the node, never a panic.
//!
//! [`EniIndex`] merges many nodes with EC2 `DescribeNetworkInterfaces` results and answers
//! [`EniIndex::eni_of`]. Lookup order, first unambiguous answer wins:
//! 1. an address listed on a CiliumNode ENI (`ip` / `addresses`) — live, kept fresh by the operator;
//! 2. an address on an ENI EC2 returned (cached by the caller, see [`crate::lb::eni_lookup`]);
//! 3. a delegated prefix on a CiliumNode ENI containing the IP (longest prefix first);
//! 4. an IPAM pool/used entry naming an ENI of the same node.
//!
//! An IP claimed by two different ENIs at the same step (a stale CiliumNode of a replaced node,
//! for example) is ambiguous at that step and the next one decides; if none does,
//! [`EniIndex::lookup`] says [`EniLookup::Ambiguous`] and the caller should ask EC2.

use crate::lb::NetworkInterface;
use ipnet::IpNet;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

/// The ENIs one CiliumNode reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CiliumNodeEnis {
    /// `metadata.name` (the Kubernetes node name); empty when absent.
    pub node: String,
    /// Sorted by ENI ID; `private_ips` holds the primary and secondary addresses, sorted.
    pub interfaces: Vec<NetworkInterface>,
    /// Delegated prefixes (ENI ID, prefix), normalised to their network address.
    pub prefixes: Vec<(String, IpNet)>,
    /// IPAM entries whose `resource` names one of `interfaces` (IP, ENI ID).
    pub ipam: Vec<(IpAddr, String)>,
}

/// Reads the ENI status of a CiliumNode. Never fails: unusable parts are skipped.
pub fn parse_cilium_node(obj: &Value) -> CiliumNodeEnis {
    let node = str_at(obj, &["metadata", "name"]).unwrap_or_default().to_string();
    let mut interfaces = BTreeMap::new();
    let mut prefixes = BTreeSet::new();
    for (key, eni) in entries(at(obj, &["status", "eni", "enis"])) {
        let id = eni.get("id").and_then(Value::as_str).filter(|s| !s.trim().is_empty()).unwrap_or(key).trim();
        if id.is_empty() || interfaces.contains_key(id) {
            continue;
        }
        let mut ips: BTreeSet<IpAddr> = eni.get("ip").and_then(Value::as_str).and_then(parse_ip).into_iter().collect();
        ips.extend(strings(eni.get("addresses")).filter_map(parse_ip));
        prefixes.extend(strings(eni.get("prefixes")).filter_map(parse_prefix).map(|p| (id.to_string(), p)));
        let security_groups: BTreeSet<String> =
            strings(eni.get("security-groups")).map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect();
        interfaces.insert(
            id.to_string(),
            NetworkInterface {
                id: id.to_string(),
                subnet_id: str_at(eni, &["subnet", "id"]).unwrap_or_default().trim().to_string(),
                private_ips: ips.into_iter().collect(),
                security_groups: security_groups.into_iter().collect(),
            },
        );
    }
    let mut ipam = BTreeSet::new();
    for path in [["spec", "ipam", "pool"], ["status", "ipam", "used"]] {
        for (ip, entry) in entries(at(obj, &path)) {
            let Some(ip) = parse_ip(ip) else { continue };
            let resource = entry.get("resource").and_then(Value::as_str).map(str::trim).unwrap_or_default();
            if interfaces.contains_key(resource) {
                ipam.insert((ip, resource.to_string()));
            }
        }
    }
    CiliumNodeEnis {
        node,
        interfaces: interfaces.into_values().collect(),
        prefixes: prefixes.into_iter().collect(),
        ipam: ipam.into_iter().collect(),
    }
}

fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(v, path).and_then(Value::as_str)
}

/// Key/value pairs of a JSON object; an array is accepted too (key = the element's `id`).
fn entries(v: Option<&Value>) -> Vec<(&str, &Value)> {
    match v {
        Some(Value::Object(m)) => m.iter().map(|(k, v)| (k.as_str(), v)).collect(),
        Some(Value::Array(a)) => a.iter().map(|v| (v.get("id").and_then(Value::as_str).unwrap_or(""), v)).collect(),
        _ => Vec::new(),
    }
}

fn strings(v: Option<&Value>) -> impl Iterator<Item = &str> {
    v.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
}

fn parse_ip(s: &str) -> Option<IpAddr> {
    s.trim().parse().ok()
}

fn parse_prefix(s: &str) -> Option<IpNet> {
    let s = s.trim();
    s.parse::<IpNet>().ok().or_else(|| s.parse::<IpAddr>().ok().map(IpNet::from)).map(|n| n.trunc())
}

/// Where an answer of [`EniIndex`] came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EniSource {
    /// An address listed on a CiliumNode ENI.
    CiliumAddress,
    /// An address on an ENI EC2 described.
    Ec2,
    /// A delegated prefix on a CiliumNode ENI.
    CiliumPrefix,
    /// A CiliumNode IPAM pool/used entry.
    CiliumIpam,
}

/// The answer for one IP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EniLookup<'a> {
    Found(&'a NetworkInterface, EniSource),
    /// Claimed by several ENIs and no later step decided; ask EC2.
    Ambiguous,
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Claim {
    One(String),
    Conflict,
}

fn claim<K: Ord>(map: &mut BTreeMap<K, Claim>, key: K, eni: &str) {
    match map.get(&key) {
        None => {
            map.insert(key, Claim::One(eni.to_string()));
        }
        Some(Claim::One(existing)) if existing != eni => {
            map.insert(key, Claim::Conflict);
        }
        Some(_) => {}
    }
}

fn decide<'a>(
    claim: Option<&Claim>,
    enis: &'a BTreeMap<String, NetworkInterface>,
    ambiguous: &mut bool,
) -> Option<&'a NetworkInterface> {
    match claim {
        Some(Claim::One(id)) => enis.get(id),
        Some(Claim::Conflict) => {
            *ambiguous = true;
            None
        }
        None => None,
    }
}

/// Pod IP → ENI over many CiliumNodes and EC2 results. Build it, then query it.
#[derive(Clone, Debug, Default)]
pub struct EniIndex {
    cilium_enis: BTreeMap<String, NetworkInterface>,
    ec2_enis: BTreeMap<String, NetworkInterface>,
    cilium_addresses: BTreeMap<IpAddr, Claim>,
    ec2_addresses: BTreeMap<IpAddr, Claim>,
    prefixes: BTreeMap<IpNet, Claim>,
    prefix_lens: BTreeSet<u8>,
    ipam: BTreeMap<IpAddr, Claim>,
}

impl EniIndex {
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds an index from CiliumNode objects and EC2 results in one go.
    pub fn build<'a>(
        nodes: impl IntoIterator<Item = &'a Value>,
        ec2: impl IntoIterator<Item = &'a NetworkInterface>,
    ) -> Self {
        let mut index = Self::new();
        for node in nodes {
            index.add_cilium_node(&parse_cilium_node(node));
        }
        for eni in ec2 {
            index.add_ec2(eni);
        }
        index
    }

    pub fn add_cilium_node(&mut self, node: &CiliumNodeEnis) {
        for eni in &node.interfaces {
            for ip in &eni.private_ips {
                claim(&mut self.cilium_addresses, *ip, &eni.id);
            }
            self.cilium_enis.entry(eni.id.clone()).or_insert_with(|| eni.clone());
        }
        for (eni, prefix) in &node.prefixes {
            self.prefix_lens.insert(prefix.prefix_len());
            claim(&mut self.prefixes, *prefix, eni);
        }
        for (ip, eni) in &node.ipam {
            claim(&mut self.ipam, *ip, eni);
        }
    }

    /// Adds an ENI as EC2 described it (a later description of the same ENI replaces it).
    pub fn add_ec2(&mut self, eni: &NetworkInterface) {
        if eni.id.is_empty() {
            return;
        }
        for ip in &eni.private_ips {
            claim(&mut self.ec2_addresses, *ip, &eni.id);
        }
        self.ec2_enis.insert(eni.id.clone(), eni.clone());
    }

    /// The ENI holding `ip`, when exactly one is known to.
    pub fn eni_of(&self, ip: IpAddr) -> Option<&NetworkInterface> {
        match self.lookup(ip) {
            EniLookup::Found(eni, _) => Some(eni),
            _ => None,
        }
    }

    /// Like [`eni_of`](Self::eni_of), with where the answer came from or why there is none.
    pub fn lookup(&self, ip: IpAddr) -> EniLookup<'_> {
        let mut ambiguous = false;
        if let Some(eni) = decide(self.cilium_addresses.get(&ip), &self.cilium_enis, &mut ambiguous) {
            return EniLookup::Found(eni, EniSource::CiliumAddress);
        }
        if let Some(eni) = decide(self.ec2_addresses.get(&ip), &self.ec2_enis, &mut ambiguous) {
            return EniLookup::Found(eni, EniSource::Ec2);
        }
        for len in self.prefix_lens.iter().rev() {
            let Ok(net) = IpNet::new(ip, *len) else { continue };
            if let Some(eni) = decide(self.prefixes.get(&net.trunc()), &self.cilium_enis, &mut ambiguous) {
                return EniLookup::Found(eni, EniSource::CiliumPrefix);
            }
        }
        if let Some(eni) = decide(self.ipam.get(&ip), &self.cilium_enis, &mut ambiguous) {
            return EniLookup::Found(eni, EniSource::CiliumIpam);
        }
        if ambiguous { EniLookup::Ambiguous } else { EniLookup::Unknown }
    }

    /// Every ENI known, CiliumNode records first then EC2 ones not also on a CiliumNode.
    pub fn interfaces(&self) -> impl Iterator<Item = &NetworkInterface> {
        self.cilium_enis.values().chain(self.ec2_enis.values().filter(|e| !self.cilium_enis.contains_key(&e.id)))
    }
}

#[cfg(test)]
mod tests;
