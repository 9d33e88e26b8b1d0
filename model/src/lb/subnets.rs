//! Which subnets a load balancer goes into: an explicit list (annotation), tag filters
//! (IngressClassParams), or auto-discovery by the well-known role and cluster tags.
//!
//! Discovery follows ALBC (`pkg/networking/subnet_resolver.go`, `docs/deploy/subnet_discovery.md`):
//!
//! 1. Candidates: subnets of the cluster VPC tagged `kubernetes.io/role/elb` (internet-facing) or
//!    `kubernetes.io/role/internal-elb` (internal) with value `1` or empty; or, when tag filters
//!    are given, the subnets matching every filter instead.
//! 2. Filters: a subnet carrying any `kubernetes.io/cluster/*` tag is dropped unless one of them
//!    is `kubernetes.io/cluster/<our cluster>` (ALBC checks the key only, not the value); a
//!    subnet with fewer than 8 free addresses is dropped.
//! 3. One subnet per availability zone: the one tagged for our cluster first, then the lowest
//!    subnet ID. The result is sorted by subnet ID.
//!
//! When no subnet of the VPC carries the scheme's role tag, ALBC ≥ 2.12.1 (gate
//! `SubnetDiscoveryByReachability`, on by default) classifies the VPC's subnets by their route
//! table instead: public when it routes to an internet gateway (`igw-…`), the explicitly associated
//! table first, the VPC's main table otherwise ([`needs_reachability`], [`reachability`]); steps 2
//! and 3 apply to those candidates the same way.
//!
//! Not done here: ALBC rejects mixing AZ/local-zone/outpost subnets, which needs data the
//! controller does not fetch yet.
//!
//! Subnet problems are the most common reason a load balancer never appears (a cluster tag of
//! `meta-dev` for a cluster called `dev-meta` fails silently in ALBC), so a failure here explains
//! itself: every subnet seen with the tags that matter, why each was dropped, and the near misses.

use super::{Scheme, Subnet, SubnetMapping};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Role tag for internet-facing load balancers.
pub const ROLE_ELB_TAG: &str = "kubernetes.io/role/elb";
/// Role tag for internal load balancers.
pub const ROLE_INTERNAL_ELB_TAG: &str = "kubernetes.io/role/internal-elb";
/// Prefix of the cluster tag, `kubernetes.io/cluster/<cluster-name>`.
pub const CLUSTER_TAG_PREFIX: &str = "kubernetes.io/cluster/";
/// Subnets with fewer free addresses are skipped by discovery (ELB needs 8 per subnet).
pub const MIN_FREE_IPS: u32 = 8;
/// How many subnets and near misses a discovery error lists before summarising the rest.
pub const MAX_LISTED: usize = 20;

/// The role tag discovery looks for, per scheme.
pub fn role_tag(scheme: Scheme) -> &'static str {
    match scheme {
        Scheme::InternetFacing => ROLE_ELB_TAG,
        Scheme::Internal => ROLE_INTERNAL_ELB_TAG,
    }
}

/// `kubernetes.io/cluster/<name>`.
pub fn cluster_tag(cluster_name: &str) -> String {
    format!("{CLUSTER_TAG_PREFIX}{cluster_name}")
}

/// How the user asked for subnets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubnetSelector {
    /// `…-subnets` annotation: entries starting with `subnet-` are IDs, the others `Name` tags.
    Explicit(Vec<String>),
    /// IngressClassParams `subnets.tags`: tag key → accepted values (any value when empty).
    Tags(BTreeMap<String, Vec<String>>),
    /// Role-tag auto-discovery.
    Discover,
}

impl SubnetSelector {
    /// Parses the comma-separated subnets annotation; absent or blank means auto-discovery.
    pub fn from_annotation(value: Option<&str>) -> Self {
        let entries: Vec<String> =
            value.unwrap_or("").split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect();
        if entries.is_empty() { SubnetSelector::Discover } else { SubnetSelector::Explicit(entries) }
    }
}

/// A route table of the cluster VPC, as reachability discovery reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RouteTable {
    pub id: String,
    /// The VPC's main route table: subnets without an explicit association use it.
    pub main: bool,
    /// Subnets explicitly associated with it.
    pub subnet_ids: Vec<String>,
    /// Gateway IDs of its routes; one starting `igw` makes its subnets public.
    pub gateway_ids: Vec<String>,
}

/// Whether discovery classifies subnets by route table: role-tag discovery (no explicit list, no
/// tag filters), the gate on, and not one subnet of the cluster VPC carries the scheme's role tag
/// with a value discovery accepts (`1` or empty: ALBC's tag filter, before any other check).
pub fn needs_reachability(selector: &SubnetSelector, params: &SubnetParams<'_>, subnets: &[Subnet]) -> bool {
    let role = role_tag(params.scheme);
    params.reachability_gate
        && matches!(selector, SubnetSelector::Discover)
        && !has_usable_role_tag(subnets, params.vpc_id, role)
}

/// Whether a subnet of `vpc_id` carries `role` with a value discovery accepts (`1` or empty).
pub fn has_usable_role_tag(subnets: &[Subnet], vpc_id: &str, role: &str) -> bool {
    subnets.iter().any(|s| s.vpc_id == vpc_id && s.tags.get(role).is_some_and(|v| role_value_ok(v)))
}

/// Per subnet: public (true) when its route table routes to an internet gateway. A subnet without
/// an explicit association uses the main table; a VPC without a main table (AWS always has one)
/// is an error naming the VPC.
pub fn reachability<'s>(
    vpc_id: &str,
    subnet_ids: impl IntoIterator<Item = &'s str>,
    tables: &[RouteTable],
) -> Result<BTreeMap<String, bool>, String> {
    let public = |t: &RouteTable| t.gateway_ids.iter().any(|g| g.starts_with("igw"));
    let main = tables.iter().find(|t| t.main);
    let mut out = BTreeMap::new();
    for id in subnet_ids {
        let table = tables.iter().find(|t| t.subnet_ids.iter().any(|s| s == id)).or(main).ok_or_else(|| {
            format!(
                "subnet {id} has no route table of its own and VPC {vpc_id} reports no main route table \
                 (DescribeRouteTables): cannot tell whether it is public; tag the subnets with {ROLE_ELB_TAG} or \
                 {ROLE_INTERNAL_ELB_TAG}"
            )
        })?;
        out.insert(id.to_string(), public(table));
    }
    Ok(out)
}

/// The context subnets are resolved in.
#[derive(Clone, Debug)]
pub struct SubnetParams<'a> {
    /// `--cluster-name`.
    pub cluster_name: &'a str,
    /// The cluster VPC (`--aws-vpc-id`).
    pub vpc_id: &'a str,
    pub scheme: Scheme,
    /// Minimum number of availability zones: 2 for an ALB, 1 for an NLB.
    pub min_azs: usize,
    /// ALBC feature gate `SubnetsClusterTagCheck` (default on).
    pub cluster_tag_check: bool,
    /// The annotation users set to bypass discovery, named in hints.
    pub subnets_annotation: &'a str,
    /// ALBC feature gate `SubnetDiscoveryByReachability` (default on).
    pub reachability_gate: bool,
    /// Public (true) / private per subnet of the VPC, from [`reachability`]: given when
    /// [`needs_reachability`] said so, and then discovery picks by it instead of the role tag.
    pub reachability: Option<&'a BTreeMap<String, bool>>,
}

/// Resolves the selector against the subnets the controller listed.
///
/// `subnets` should hold every subnet of the cluster VPC, plus, for an explicit selection, the
/// subnets described by ID (which may live elsewhere). Subnets of other VPCs that carry a role
/// tag are welcome too: discovery ignores them but names them in its error as a near miss.
/// Returns the chosen subnets: named ones in the order the annotation (or params) lists them,
/// as ALBC v3.5 resolves them; discovered ones sorted by ID.
pub fn resolve(
    selector: &SubnetSelector,
    params: &SubnetParams<'_>,
    subnets: &[Subnet],
) -> Result<Vec<Subnet>, SubnetError> {
    match selector {
        SubnetSelector::Explicit(entries) => resolve_explicit(entries, params, subnets).map_err(SubnetError::Selection),
        SubnetSelector::Tags(filters) => {
            discover(Candidates::Tags(filters), params, subnets).map_err(SubnetError::Discovery)
        }
        SubnetSelector::Discover => discover(Candidates::Role, params, subnets).map_err(SubnetError::Discovery),
    }
}

/// Subnets as load balancer subnet mappings (no fixed addresses), sorted by subnet ID.
pub fn to_mappings(subnets: &[Subnet]) -> Vec<SubnetMapping> {
    let mut out: Vec<SubnetMapping> = subnets.iter().map(|s| SubnetMapping::plain(&s.id)).collect();
    out.sort();
    out
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SubnetError {
    #[error("{0}")]
    Selection(SelectionError),
    #[error("{0}")]
    Discovery(Box<DiscoveryError>),
}

// ---------------------------------------------------------------------------------------------
// Explicit selection
// ---------------------------------------------------------------------------------------------

/// One thing wrong with an explicit subnet list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SelectionProblem {
    /// No subnet with this ID was found.
    UnknownId(String),
    /// No subnet of the cluster VPC has this `Name` tag; `elsewhere` lists matches in other VPCs.
    NameNotFound { name: String, elsewhere: Vec<(String, String)> },
    /// Several subnets of the cluster VPC share this `Name` tag.
    NameAmbiguous { name: String, ids: Vec<String> },
    /// The subnet is not in the cluster VPC.
    OtherVpc { id: String, vpc_id: String },
    /// Two or more selected subnets are in the same AZ (a load balancer takes one per AZ).
    SameAz { az: String, ids: Vec<String> },
    /// Fewer AZs than the load balancer type needs.
    TooFewAzs { found: usize, min: usize },
}

impl fmt::Display for SelectionProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SelectionProblem::UnknownId(id) => {
                write!(f, "subnet {id} does not exist (or is not visible to the controller's credentials)")
            }
            SelectionProblem::NameNotFound { name, elsewhere } if elsewhere.is_empty() => {
                write!(f, "no subnet in the cluster VPC has the Name tag {name:?}")
            }
            SelectionProblem::NameNotFound { name, elsewhere } => {
                let list: Vec<String> = elsewhere.iter().map(|(id, vpc)| format!("{id} in {vpc}")).collect();
                write!(
                    f,
                    "no subnet in the cluster VPC has the Name tag {name:?} (found only in other VPCs: {})",
                    list.join(", ")
                )
            }
            SelectionProblem::NameAmbiguous { name, ids } => {
                write!(
                    f,
                    "the Name tag {name:?} matches {} subnets ({}); use subnet IDs instead",
                    ids.len(),
                    ids.join(", ")
                )
            }
            SelectionProblem::OtherVpc { id, vpc_id } => write!(f, "subnet {id} is in {vpc_id}, not the cluster VPC"),
            SelectionProblem::SameAz { az, ids } => {
                write!(
                    f,
                    "subnets {} are all in {az}; a load balancer takes one subnet per availability zone",
                    ids.join(", ")
                )
            }
            SelectionProblem::TooFewAzs { found, min } => {
                write!(f, "the subnets cover {found} availability zone(s); this load balancer needs at least {min}")
            }
        }
    }
}

/// Everything wrong with an explicit subnet list, reported at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectionError {
    pub annotation: String,
    pub vpc_id: String,
    pub entries: Vec<String>,
    pub problems: Vec<SelectionProblem>,
}

impl std::error::Error for SelectionError {}

impl fmt::Display for SelectionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid subnets in {} [{}] (cluster VPC {}): ",
            self.annotation,
            self.entries.join(", "),
            self.vpc_id
        )?;
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

fn resolve_explicit(
    entries: &[String],
    params: &SubnetParams<'_>,
    subnets: &[Subnet],
) -> Result<Vec<Subnet>, SelectionError> {
    let mut problems = Vec::new();
    let mut chosen: BTreeMap<String, Subnet> = BTreeMap::new();
    // The annotation's order (ALBC v3.5 keeps it: EIPs and source-NAT prefixes pair by position).
    let mut order: Vec<String> = Vec::new();
    for entry in entries {
        if entry.starts_with("subnet-") {
            match subnets.iter().find(|s| &s.id == entry) {
                None => problems.push(SelectionProblem::UnknownId(entry.clone())),
                Some(s) if s.vpc_id != params.vpc_id => {
                    problems.push(SelectionProblem::OtherVpc { id: s.id.clone(), vpc_id: s.vpc_id.clone() })
                }
                Some(s) => {
                    if chosen.insert(s.id.clone(), s.clone()).is_none() {
                        order.push(s.id.clone());
                    }
                }
            }
            continue;
        }
        let named = |s: &&Subnet| s.tags.get("Name").is_some_and(|n| n == entry);
        let in_vpc: Vec<&Subnet> = subnets.iter().filter(|s| s.vpc_id == params.vpc_id).filter(named).collect();
        match in_vpc.as_slice() {
            [] => {
                let elsewhere = subnets
                    .iter()
                    .filter(|s| s.vpc_id != params.vpc_id)
                    .filter(named)
                    .map(|s| (s.id.clone(), s.vpc_id.clone()))
                    .collect();
                problems.push(SelectionProblem::NameNotFound { name: entry.clone(), elsewhere });
            }
            [one] => {
                if chosen.insert(one.id.clone(), (*one).clone()).is_none() {
                    order.push(one.id.clone());
                }
            }
            many => {
                let mut ids: Vec<String> = many.iter().map(|s| s.id.clone()).collect();
                ids.sort();
                problems.push(SelectionProblem::NameAmbiguous { name: entry.clone(), ids });
            }
        }
    }
    let mut by_az: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for s in chosen.values() {
        by_az.entry(s.availability_zone.as_str()).or_default().push(s.id.clone());
    }
    for (az, ids) in &by_az {
        if ids.len() > 1 {
            problems.push(SelectionProblem::SameAz { az: az.to_string(), ids: ids.clone() });
        }
    }
    if problems.is_empty() && by_az.len() < params.min_azs {
        problems.push(SelectionProblem::TooFewAzs { found: by_az.len(), min: params.min_azs });
    }
    if problems.is_empty() {
        Ok(order.iter().filter_map(|id| chosen.remove(id)).collect())
    } else {
        Err(SelectionError {
            annotation: params.subnets_annotation.to_string(),
            vpc_id: params.vpc_id.to_string(),
            entries: entries.to_vec(),
            problems,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Discovery
// ---------------------------------------------------------------------------------------------

enum Candidates<'a> {
    Role,
    Tags(&'a BTreeMap<String, Vec<String>>),
}

/// Why discovery passed over a subnet of the cluster VPC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// No role tag for this scheme (tag filters: a filter did not match, named here).
    NotCandidate(String),
    /// The role tag has a value other than `1` or empty.
    RoleValue(String),
    /// Tagged for other clusters and not for ours.
    OtherCluster(Vec<String>),
    /// Fewer than [`MIN_FREE_IPS`] free addresses.
    FewIps(u32),
    /// Another subnet was preferred in the same AZ.
    AzTaken { chosen: String },
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DropReason::NotCandidate(why) => f.write_str(why),
            DropReason::RoleValue(v) => write!(f, "role tag value {v:?} (discovery accepts \"1\" or \"\")"),
            DropReason::OtherCluster(names) => {
                let names: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
                write!(f, "tagged for other cluster(s) {} and not for ours", names.join(", "))
            }
            DropReason::FewIps(n) => write!(f, "only {n} free IP address(es), needs {MIN_FREE_IPS}"),
            DropReason::AzTaken { chosen } => write!(f, "{chosen} preferred in the same AZ"),
        }
    }
}

/// One subnet of the cluster VPC as discovery saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubnetReport {
    pub id: String,
    pub availability_zone: String,
    pub available_ips: u32,
    /// The tags that matter: Name, role and cluster tags, tag-filter keys.
    pub tags: Vec<(String, String)>,
    /// `None`: chosen.
    pub dropped: Option<DropReason>,
}

/// Something that was almost right.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NearMiss {
    pub subnet_id: String,
    pub explanation: String,
}

/// Discovery found subnets in too few availability zones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiscoveryError {
    pub scheme: Scheme,
    pub vpc_id: String,
    pub cluster_name: String,
    pub min_azs: usize,
    /// Tag filters used instead of the role tag (rendered `key=v1|v2`), when any.
    pub tag_filters: Vec<String>,
    pub cluster_tag_check: bool,
    pub subnets_annotation: String,
    /// Chosen subnets (fewer AZs than `min_azs`).
    pub chosen: Vec<String>,
    /// Every subnet of the cluster VPC, sorted by ID.
    pub seen: Vec<SubnetReport>,
    pub near_misses: Vec<NearMiss>,
}

impl std::error::Error for DiscoveryError {}

impl fmt::Display for DiscoveryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let role = role_tag(self.scheme);
        write!(
            f,
            "subnet discovery for an {} load balancer in {} found {} usable availability zone(s), needs {}",
            self.scheme.as_aws(),
            self.vpc_id,
            self.chosen.len(),
            self.min_azs
        )?;
        if !self.chosen.is_empty() {
            write!(f, " (chose {})", self.chosen.join(", "))?;
        }
        f.write_str(".\nexpected: ")?;
        if self.tag_filters.is_empty() {
            write!(f, "tag {role} = \"1\" or \"\"")?;
        } else {
            write!(f, "tags {}", self.tag_filters.join(", "))?;
        }
        if self.cluster_tag_check {
            write!(
                f,
                "; no kubernetes.io/cluster/* tag, or {} (owned or shared) if the subnet has any",
                cluster_tag(&self.cluster_name)
            )?;
        }
        writeln!(f, "; at least {MIN_FREE_IPS} free IP addresses; one subnet per availability zone.")?;
        if self.seen.is_empty() {
            writeln!(f, "no subnets seen in {}.", self.vpc_id)?;
        } else {
            writeln!(f, "subnets in {} ({}):", self.vpc_id, self.seen.len())?;
            for r in self.seen.iter().take(MAX_LISTED) {
                let tags: Vec<String> = r.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let tags = if tags.is_empty() { "no relevant tags".to_string() } else { tags.join(", ") };
                let verdict = match &r.dropped {
                    None => "chosen".to_string(),
                    Some(why) => format!("dropped: {why}"),
                };
                writeln!(f, "  {} {} free={} [{}] -> {}", r.id, r.availability_zone, r.available_ips, tags, verdict)?;
            }
            if self.seen.len() > MAX_LISTED {
                writeln!(f, "  … and {} more", self.seen.len() - MAX_LISTED)?;
            }
        }
        if !self.near_misses.is_empty() {
            f.write_str("near misses:\n")?;
            for m in self.near_misses.iter().take(MAX_LISTED) {
                writeln!(f, "  {}: {}", m.subnet_id, m.explanation)?;
            }
            if self.near_misses.len() > MAX_LISTED {
                writeln!(f, "  … and {} more", self.near_misses.len() - MAX_LISTED)?;
            }
        }
        write!(
            f,
            "fix: tag subnets in at least {} availability zone(s) as expected, or list them in the {} annotation",
            self.min_azs, self.subnets_annotation
        )
    }
}

fn role_value_ok(v: &str) -> bool {
    v.is_empty() || v == "1"
}

/// The `kubernetes.io/cluster/*` names on a subnet.
fn cluster_names(s: &Subnet) -> Vec<String> {
    s.tags.keys().filter_map(|k| k.strip_prefix(CLUSTER_TAG_PREFIX)).map(str::to_string).collect()
}

fn relevant_tags(s: &Subnet, extra: &BTreeSet<&str>) -> Vec<(String, String)> {
    s.tags
        .iter()
        .filter(|(k, _)| {
            k.as_str() == "Name"
                || k.starts_with("kubernetes.io/role/")
                || k.starts_with(CLUSTER_TAG_PREFIX)
                || extra.contains(k.as_str())
                || near_tag_key(k).is_some()
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn discover(
    cands: Candidates<'_>,
    params: &SubnetParams<'_>,
    subnets: &[Subnet],
) -> Result<Vec<Subnet>, Box<DiscoveryError>> {
    let role = role_tag(params.scheme);
    let other_role = role_tag(match params.scheme {
        Scheme::Internal => Scheme::InternetFacing,
        Scheme::InternetFacing => Scheme::Internal,
    });
    let ours = cluster_tag(params.cluster_name);
    let filter_keys: BTreeSet<&str> = match &cands {
        Candidates::Tags(f) => f.keys().map(String::as_str).collect(),
        Candidates::Role => BTreeSet::new(),
    };

    let mut in_vpc: Vec<&Subnet> = subnets.iter().filter(|s| s.vpc_id == params.vpc_id).collect();
    in_vpc.sort_by(|a, b| a.id.cmp(&b.id));

    let mut reports: BTreeMap<String, SubnetReport> = BTreeMap::new();
    let mut near_misses = Vec::new();
    let mut survivors: Vec<&Subnet> = Vec::new();
    for s in &in_vpc {
        let mut drop = None;
        match &cands {
            Candidates::Role => match (params.reachability, s.tags.get(role)) {
                (Some(public), _) => {
                    let want = params.scheme == Scheme::InternetFacing;
                    match public.get(&s.id) {
                        Some(p) if *p == want => {}
                        Some(p) => {
                            drop = Some(DropReason::NotCandidate(format!(
                                "no subnet has {role}; by its route table this one is {} and a {} load balancer \
                                 needs a {} subnet",
                                if *p { "public (routes to an internet gateway)" } else { "private" },
                                params.scheme.as_aws(),
                                if want { "public" } else { "private" }
                            )))
                        }
                        None => drop = Some(DropReason::NotCandidate("no route table read for it".into())),
                    }
                }
                (None, None) => drop = Some(DropReason::NotCandidate(format!("no {role} tag"))),
                (None, Some(v)) if !role_value_ok(v) => drop = Some(DropReason::RoleValue(v.clone())),
                (None, Some(_)) => {}
            },
            Candidates::Tags(filters) => {
                for (k, values) in filters.iter() {
                    let ok = s.tags.get(k).is_some_and(|v| values.is_empty() || values.contains(v));
                    if !ok {
                        let why = match s.tags.get(k) {
                            None => format!("tag filter {k} not present"),
                            Some(v) => format!("tag filter {k}: value {v:?} not in [{}]", values.join(", ")),
                        };
                        drop = Some(DropReason::NotCandidate(why));
                        break;
                    }
                }
            }
        }
        let names = cluster_names(s);
        if drop.is_none() && params.cluster_tag_check && !names.is_empty() && !s.tags.contains_key(&ours) {
            drop = Some(DropReason::OtherCluster(names.clone()));
        }
        if drop.is_none() && s.available_ips < MIN_FREE_IPS {
            drop = Some(DropReason::FewIps(s.available_ips));
        }
        // Near misses: only worth mentioning for subnets that were not usable.
        if drop.is_some() {
            if !s.tags.contains_key(&ours) {
                for n in &names {
                    if let Some(how) = similar_name(n, params.cluster_name) {
                        near_misses.push(NearMiss {
                            subnet_id: s.id.clone(),
                            explanation: format!(
                                "tagged {CLUSTER_TAG_PREFIX}{n}, which looks like our cluster name {:?} ({how}); \
                                 --cluster-name must match the tag exactly",
                                params.cluster_name
                            ),
                        });
                    }
                }
            }
            if matches!(cands, Candidates::Role) {
                if !s.tags.contains_key(role) && s.tags.contains_key(other_role) {
                    near_misses.push(NearMiss {
                        subnet_id: s.id.clone(),
                        explanation: format!(
                            "has {other_role}, the tag for {} load balancers; this one is {} and needs {role}",
                            if other_role == ROLE_ELB_TAG { "internet-facing" } else { "internal" },
                            params.scheme.as_aws()
                        ),
                    });
                }
                if let Some(v) = s.tags.get(role).filter(|v| !role_value_ok(v)) {
                    near_misses.push(NearMiss {
                        subnet_id: s.id.clone(),
                        explanation: format!("{role} = {v:?}; discovery accepts only \"1\" or \"\""),
                    });
                }
            }
            for k in s.tags.keys() {
                if let Some(meant) = near_tag_key(k) {
                    near_misses.push(NearMiss {
                        subnet_id: s.id.clone(),
                        explanation: format!("tag key {k:?} looks like {meant:?} but does not match it exactly"),
                    });
                }
            }
        }
        if drop.is_none() {
            survivors.push(s);
        }
        reports.insert(
            s.id.clone(),
            SubnetReport {
                id: s.id.clone(),
                availability_zone: s.availability_zone.clone(),
                available_ips: s.available_ips,
                tags: relevant_tags(s, &filter_keys),
                dropped: drop,
            },
        );
    }

    // One per AZ: tagged for our cluster first, then the lowest ID.
    let mut by_az: BTreeMap<&str, Vec<&Subnet>> = BTreeMap::new();
    for s in survivors {
        by_az.entry(s.availability_zone.as_str()).or_default().push(s);
    }
    let mut chosen: Vec<Subnet> = Vec::new();
    for group in by_az.values_mut() {
        group.sort_by(|a, b| (!a.tags.contains_key(&ours), &a.id).cmp(&(!b.tags.contains_key(&ours), &b.id)));
        let winner = group[0];
        for loser in &group[1..] {
            if let Some(r) = reports.get_mut(&loser.id) {
                r.dropped = Some(DropReason::AzTaken { chosen: winner.id.clone() });
            }
        }
        chosen.push(winner.clone());
    }
    chosen.sort_by(|a, b| a.id.cmp(&b.id));
    if chosen.len() >= params.min_azs.max(1) {
        return Ok(chosen);
    }

    if matches!(cands, Candidates::Role) {
        let mut elsewhere: Vec<&Subnet> =
            subnets.iter().filter(|s| s.vpc_id != params.vpc_id && s.tags.contains_key(role)).collect();
        elsewhere.sort_by(|a, b| a.id.cmp(&b.id));
        for s in elsewhere {
            near_misses.push(NearMiss {
                subnet_id: s.id.clone(),
                explanation: format!(
                    "has {role} but is in {}, not the cluster VPC {} (check --aws-vpc-id)",
                    s.vpc_id, params.vpc_id
                ),
            });
        }
    }
    let tag_filters = match &cands {
        Candidates::Role => Vec::new(),
        Candidates::Tags(f) => f
            .iter()
            .map(|(k, v)| if v.is_empty() { format!("{k}=*") } else { format!("{k}={}", v.join("|")) })
            .collect(),
    };
    Err(Box::new(DiscoveryError {
        scheme: params.scheme,
        vpc_id: params.vpc_id.to_string(),
        cluster_name: params.cluster_name.to_string(),
        min_azs: params.min_azs.max(1),
        tag_filters,
        cluster_tag_check: params.cluster_tag_check,
        subnets_annotation: params.subnets_annotation.to_string(),
        chosen: chosen.into_iter().map(|s| s.id).collect(),
        seen: reports.into_values().collect(),
        near_misses,
    }))
}

/// A tag key that is almost one of the well-known ones (case, stray spaces, a typo).
fn near_tag_key(key: &str) -> Option<&'static str> {
    if key.starts_with(CLUSTER_TAG_PREFIX) || key == ROLE_ELB_TAG || key == ROLE_INTERNAL_ELB_TAG {
        return None;
    }
    for known in [ROLE_ELB_TAG, ROLE_INTERNAL_ELB_TAG] {
        if key.trim().eq_ignore_ascii_case(known) || edit_distance(key, known) <= 2 {
            return Some(known);
        }
    }
    let lower = key.trim().to_ascii_lowercase();
    if lower.starts_with(CLUSTER_TAG_PREFIX)
        || lower.starts_with("kubernetes.io/clusters/")
        || lower.starts_with("kubernetes.io/cluster:")
    {
        return Some("kubernetes.io/cluster/<cluster-name>");
    }
    None
}

/// How `theirs` resembles `ours`, if it does enough to be a likely mistake.
fn similar_name(theirs: &str, ours: &str) -> Option<String> {
    if theirs == ours {
        return None;
    }
    if theirs.eq_ignore_ascii_case(ours) {
        return Some("differs only in letter case".into());
    }
    if theirs.trim() == ours.trim() {
        return Some("differs only in surrounding whitespace".into());
    }
    let parts = |s: &str| {
        let mut p: Vec<String> =
            s.to_ascii_lowercase().split(['-', '_', '.', ' ']).filter(|p| !p.is_empty()).map(str::to_string).collect();
        p.sort();
        p
    };
    if parts(theirs) == parts(ours) {
        return Some("same words in a different order".into());
    }
    let d = edit_distance(&theirs.to_ascii_lowercase(), &ours.to_ascii_lowercase());
    if d <= 2.max(ours.len() / 5) {
        return Some(format!("{d} character(s) apart"));
    }
    let (t, o) = (theirs.to_ascii_lowercase(), ours.to_ascii_lowercase());
    if o.len() >= 4 && (t.contains(&o) || (t.len() >= 4 && o.contains(&t))) {
        return Some("one contains the other".into());
    }
    None
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests;
