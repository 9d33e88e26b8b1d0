//! VPC address checks: a pod IP outside every VPC CIDR is an overlay address (Canal/Flannel
//! instead of Cilium ENI mode) that the load balancer cannot route to.

use ipnet::IpNet;
use std::fmt;
use std::net::IpAddr;

/// The CIDR blocks of a VPC (primary and secondary, IPv4 and IPv6).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VpcCidrs {
    blocks: Vec<IpNet>,
}

/// A CIDR string that does not parse.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid CIDR {value:?}: expected an address block like 10.0.0.0/16 or 2600:1f18::/56")]
pub struct InvalidCidr {
    pub value: String,
}

impl VpcCidrs {
    pub fn parse<S: AsRef<str>>(cidrs: impl IntoIterator<Item = S>) -> Result<Self, InvalidCidr> {
        let blocks = cidrs
            .into_iter()
            .map(|c| {
                let c = c.as_ref().trim();
                c.parse::<IpNet>().map_err(|_| InvalidCidr { value: c.to_string() })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { blocks })
    }

    pub fn contains(&self, ip: &IpAddr) -> bool {
        self.blocks.iter().any(|b| b.contains(ip))
    }

    /// The blocks as AWS writes them (`10.0.0.0/16`).
    pub fn to_strings(&self) -> Vec<String> {
        self.blocks.iter().map(|b| b.to_string()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }
}

impl fmt::Display for VpcCidrs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.blocks.iter().map(|b| b.to_string()).collect();
        f.write_str(&parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containment_v4_v6_and_secondary_blocks() {
        let v = VpcCidrs::parse(["10.0.0.0/16", "100.64.0.0/16", "2600:1f18::/56"]).unwrap();
        assert!(v.contains(&"10.0.200.7".parse().unwrap()));
        assert!(v.contains(&"100.64.3.3".parse().unwrap()), "secondary CIDR (Cilium ENI custom subnets)");
        assert!(v.contains(&"2600:1f18::9".parse().unwrap()));
        assert!(!v.contains(&"10.42.7.9".parse().unwrap()));
        assert!(
            !VpcCidrs::parse(["172.31.0.0/16"]).unwrap().contains(&"10.42.7.9".parse().unwrap()),
            "Canal overlay IP"
        );
        assert_eq!(v.to_string(), "10.0.0.0/16, 100.64.0.0/16, 2600:1f18::/56");
    }

    #[test]
    fn invalid_cidr_is_named() {
        let e = VpcCidrs::parse(["10.0.0.0/33"]).unwrap_err();
        assert!(e.to_string().contains("\"10.0.0.0/33\""));
    }
}
