//! Zero-downtime rollouts measured on a real data path: pods are HTTP servers in network
//! namespaces of a test VPC (lbc_e2e::datapath). Needs root.

pub mod agent;
pub mod dataplane;
pub mod netns_basics;
pub mod scenarios;
