//! Which security group of a target's ENI receives the rules.

use crate::lb::subnets::{CLUSTER_TAG_PREFIX, cluster_tag};
use crate::lb::{NetworkInterface, Tags};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Why an ENI has no single security group to receive rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EniSgError {
    NoSecurityGroups {
        eni: String,
    },
    /// Several groups and the tags of these were not described.
    Undescribed {
        eni: String,
        missing: Vec<String>,
    },
    /// Several groups and not exactly one carries the cluster tag (and required tags).
    NotExactlyOne {
        eni: String,
        cluster_tag: String,
        required_tags: Tags,
        groups: Vec<(String, Tags)>,
        matching: Vec<String>,
    },
}

impl std::error::Error for EniSgError {}

impl fmt::Display for EniSgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EniSgError::NoSecurityGroups { eni } => {
                write!(f, "ENI {eni} has no security groups, so no ingress rules can be added for its pods")
            }
            EniSgError::Undescribed { eni, missing } => write!(
                f,
                "ENI {eni} has several security groups and the tags of {} could not be read \
                 (deleted, or ec2:DescribeSecurityGroups denied?)",
                missing.join(", ")
            ),
            EniSgError::NotExactlyOne { eni, cluster_tag, required_tags, groups, matching } => {
                let extra: Vec<String> = required_tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let wanted = if extra.is_empty() {
                    format!("tag key {cluster_tag}")
                } else {
                    format!("tag key {cluster_tag} and tags {}", extra.join(", "))
                };
                write!(
                    f,
                    "ENI {eni} has {} security groups; exactly one must carry {wanted} to receive the load balancer's ingress rules, found {}",
                    groups.len(),
                    matching.len()
                )?;
                if !matching.is_empty() {
                    write!(f, " ({})", matching.join(", "))?;
                }
                let shown: Vec<String> =
                    groups.iter().map(|(id, tags)| format!("{id} [{}]", relevant(tags, required_tags))).collect();
                write!(f, ": {}. ", shown.join(", "))?;
                if matching.is_empty() {
                    write!(f, "Fix: tag exactly one of them {cluster_tag}=owned (or =shared)")?;
                    let others: BTreeSet<&str> = groups
                        .iter()
                        .flat_map(|(_, t)| t.keys())
                        .map(String::as_str)
                        .filter(|k| k.starts_with(CLUSTER_TAG_PREFIX) && *k != cluster_tag)
                        .collect();
                    if !others.is_empty() {
                        let names: Vec<&str> = others.iter().map(|k| &k[CLUSTER_TAG_PREFIX.len()..]).collect();
                        write!(
                            f,
                            ", or check --cluster-name: the groups are tagged for cluster {} but the controller runs as {}",
                            names.join(", "),
                            &cluster_tag[CLUSTER_TAG_PREFIX.len()..]
                        )?;
                    }
                    if !extra.is_empty() {
                        write!(f, ", and give it {}", extra.join(", "))?;
                    }
                    write!(f, ".")
                } else {
                    write!(f, "Fix: keep the tags on only one of {}.", matching.join(", "))
                }
            }
        }
    }
}

/// The tags worth showing in an error: cluster tags, required tags, `Name`.
fn relevant(tags: &Tags, required: &Tags) -> String {
    let shown: Vec<String> = tags
        .iter()
        .filter(|(k, _)| k.starts_with(CLUSTER_TAG_PREFIX) || required.contains_key(*k) || *k == "Name")
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if shown.is_empty() { "no cluster tag".to_string() } else { shown.join(", ") }
}

/// The security group of `eni` that receives the rules (see the module docs).
/// `tags` maps security-group ID → tags; needed only when the ENI has several groups.
pub fn endpoint_security_group(
    eni: &NetworkInterface,
    tags: &BTreeMap<String, Tags>,
    cluster_name: &str,
    required_tags: &Tags,
) -> Result<String, EniSgError> {
    let groups: BTreeSet<&String> = eni.security_groups.iter().collect();
    match groups.len() {
        0 => return Err(EniSgError::NoSecurityGroups { eni: eni.id.clone() }),
        1 => return Ok(groups.into_iter().next().cloned().unwrap_or_default()),
        _ => {}
    }
    let missing: Vec<String> = groups.iter().filter(|g| !tags.contains_key(**g)).map(|g| g.to_string()).collect();
    if !missing.is_empty() {
        return Err(EniSgError::Undescribed { eni: eni.id.clone(), missing });
    }
    let cluster_tag = cluster_tag(cluster_name);
    let described: Vec<(String, Tags)> = groups.iter().map(|g| ((*g).clone(), tags[*g].clone())).collect();
    let matching: Vec<String> = described
        .iter()
        .filter(|(_, t)| t.contains_key(&cluster_tag) && required_tags.iter().all(|(k, v)| t.get(k) == Some(v)))
        .map(|(g, _)| g.clone())
        .collect();
    if let [one] = matching.as_slice() {
        return Ok(one.clone());
    }
    Err(EniSgError::NotExactlyOne {
        eni: eni.id.clone(),
        cluster_tag,
        required_tags: required_tags.clone(),
        groups: described,
        matching,
    })
}
