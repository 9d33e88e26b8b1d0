//! Which VPC the controller works in: `--aws-vpc-id`, or the one VPC whose tags match every pair
//! of `--aws-vpc-tags` (ALBC's lookup, one DescribeVpcs with a `tag:<key>` filter per pair). With
//! neither the start is refused: ALBC would ask the instance metadata service, which this
//! controller never consults (RKE2 pods without IMDS access, no IRSA), and without a VPC subnet
//! discovery finds nothing and `spec.networking` rules cannot find the pods' ENIs.

use std::collections::BTreeMap;

/// Where the VPC ID comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VpcSource {
    Id(String),
    /// Tag key → value, all of which the VPC must carry.
    Tags(BTreeMap<String, String>),
}

const FIX: &str = "set --aws-vpc-id=vpc-… (Helm value vpcId), or --aws-vpc-tags=key=value,… (Helm value vpcTags) \
                   naming exactly one VPC by its tags; the instance metadata service is never consulted";

impl VpcSource {
    /// From the flags' values; the ID wins when both are given (as in ALBC: see [`ignored_tags`]).
    pub fn from_flags(id: &str, tags: &str) -> Result<VpcSource, String> {
        let id = id.trim();
        if !id.is_empty() {
            return if id.starts_with("vpc-") {
                Ok(VpcSource::Id(id.to_string()))
            } else {
                Err(format!("--aws-vpc-id={id:?} is not a VPC ID (vpc-…); {FIX}"))
            };
        }
        let tags = parse_tags(tags)?;
        if tags.is_empty() {
            return Err(format!("--aws-vpc-id is required: the VPC of the cluster is not known; {FIX}"));
        }
        Ok(VpcSource::Tags(tags))
    }

    /// The VPC among `found` (the IDs DescribeVpcs returned for the tags): exactly one, or why not.
    pub fn pick(&self, found: &[String]) -> Result<String, String> {
        let tags = match self {
            VpcSource::Id(id) => return Ok(id.clone()),
            VpcSource::Tags(t) => show(t),
        };
        match found {
            [one] => Ok(one.clone()),
            [] => Err(format!("--aws-vpc-tags={tags}: no VPC in this region carries all these tags; {FIX}")),
            many => Err(format!(
                "--aws-vpc-tags={tags}: {} VPCs carry all these tags ({}), one is needed: add a tag only the cluster's \
                 VPC has, or set --aws-vpc-id",
                many.len(),
                many.join(", ")
            )),
        }
    }
}

/// The warning for tags given beside an ID: they are not used.
pub fn ignored_tags(id: &str, tags: &str) -> Option<String> {
    (!id.trim().is_empty() && !tags.trim().is_empty())
        .then(|| format!("--aws-vpc-tags={tags} has no effect: --aws-vpc-id={id} names the VPC"))
}

/// `key=value,key2=value2` (Go's `StringToString` flag form); an empty string is no tags.
fn parse_tags(raw: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for pair in raw.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                if out.insert(k.trim().to_string(), v.trim().to_string()).is_some() {
                    return Err(format!("--aws-vpc-tags={raw}: tag {:?} is given twice", k.trim()));
                }
            }
            _ => return Err(format!("--aws-vpc-tags={raw}: {pair:?} is not key=value")),
        }
    }
    Ok(out)
}

fn show(tags: &BTreeMap<String, String>) -> String {
    tags.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(pairs: &[(&str, &str)]) -> VpcSource {
        VpcSource::Tags(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    #[test]
    fn the_flags_give_an_id_tags_or_a_refusal_with_the_fix() {
        assert_eq!(VpcSource::from_flags("vpc-1", ""), Ok(VpcSource::Id("vpc-1".into())));
        assert_eq!(VpcSource::from_flags(" vpc-1 ", "Name=prod"), Ok(VpcSource::Id("vpc-1".into())), "the ID wins");
        assert_eq!(VpcSource::from_flags("", "Name=prod, env = prod"), Ok(tags(&[("Name", "prod"), ("env", "prod")])));
        assert_eq!(VpcSource::from_flags("", "team="), Ok(tags(&[("team", "")])), "an empty value is a value");
        for (id, t, want) in [
            ("", "", "--aws-vpc-id is required"),
            ("  ", " , ", "--aws-vpc-id is required"),
            ("subnet-1", "", "is not a VPC ID"),
            ("", "Name", "\"Name\" is not key=value"),
            ("", "=prod", "\"=prod\" is not key=value"),
            ("", "a=1,a=2", "tag \"a\" is given twice"),
        ] {
            let e = VpcSource::from_flags(id, t).expect_err(t);
            assert!(e.contains(want), "{id:?} {t:?}: {e}");
        }
        let e = VpcSource::from_flags("", "").unwrap_err();
        assert!(e.contains("--aws-vpc-tags") && e.contains("vpcId") && e.contains("metadata"), "names every fix: {e}");
    }

    #[test]
    fn exactly_one_vpc_must_match_the_tags() {
        let t = tags(&[("Name", "prod"), ("env", "prod")]);
        assert_eq!(t.pick(&["vpc-1".into()]), Ok("vpc-1".into()));
        let none = t.pick(&[]).unwrap_err();
        assert!(none.contains("Name=prod,env=prod") && none.contains("no VPC"), "{none}");
        let two = t.pick(&["vpc-1".into(), "vpc-2".into()]).unwrap_err();
        assert!(two.contains("2 VPCs") && two.contains("vpc-1, vpc-2"), "{two}");
        assert_eq!(VpcSource::Id("vpc-9".into()).pick(&[]), Ok("vpc-9".into()), "an ID is not looked up");
    }

    #[test]
    fn tags_beside_an_id_are_reported() {
        assert!(ignored_tags("vpc-1", "env=prod").is_some_and(|w| w.contains("has no effect")));
        assert_eq!(ignored_tags("vpc-1", ""), None);
        assert_eq!(ignored_tags("", "env=prod"), None);
    }
}
