//! AWS side effects of aws-lb-controller: ELBv2, EC2 and ACM behind traits so the controller can be
//! tested against an in-memory fake, with every call throttled client-side, retried within a
//! bound, counted and timed ([`call`]).
//!
//! - [`elbv2`]: target groups, targets, target health.
//! - [`assume_role`]: ELBv2 clients acting as another account's role (cross-account bindings).
//! - [`ec2`]: VPC lookups.
//! - [`instances`]: node → EC2 instance by private IP (cached), instance-target writes.
//! - [`lb`]: load balancers, listeners, target groups (Service → NLB, Ingress → ALB).
//! - [`acm`]: ISSUED ACM certificates and their names (Ingress certificate discovery).
//! - [`error`]: SDK errors classified into what the controller acts on.
//! - [`throttle`]: token buckets with adaptive slow-down on `Throttling`.
//! - [`call`]: the wrapper every call goes through; [`metrics`]: what it records.
//! - [`backoff`]: the one retry backoff (AWS calls, credential refreshes, the controller).
//! - [`config`]: building SDK clients (region, endpoint overrides, credentials).
//! - [`net`]: subnets, security groups, network interfaces.
//! - [`doctor`]: read-only probes of `aws-lb-controller doctor` (caller identity, IAM actions).
//! - [`waf`]: WAFv2 web ACL associations of load balancers; [`waf_classic`]: WAF Classic ones.
//! - [`shield`]: Shield Advanced protections of load balancers.
//! - [`fake`], [`fake_lb`], [`fake_net`], [`fake_acm`], [`fake_waf`], [`fake_shield`], [`fake_instances`]:
//!   in-memory ELBv2/EC2/ACM/WAF/Shield for unit tests (WAFv2 behaviour itself is tested against the emulator:
//!   e2e/tests/e2e/ingress_alb.rs).

pub mod acm;
pub mod acm_requests;
pub mod assume_role;
pub mod backoff;
pub mod call;
pub mod config;
pub mod credentials;
pub mod doctor;
pub mod ec2;
pub mod elbv2;
pub mod elbv2_refused;
pub mod error;
#[cfg(any(test, feature = "fake"))]
pub mod fake;
#[cfg(any(test, feature = "fake"))]
pub mod fake_acm;
#[cfg(any(test, feature = "fake"))]
pub mod fake_instances;
#[cfg(any(test, feature = "fake"))]
pub mod fake_lb;
#[cfg(any(test, feature = "fake"))]
pub mod fake_log;
#[cfg(any(test, feature = "fake"))]
pub mod fake_net;
#[cfg(any(test, feature = "fake"))]
pub mod fake_shield;
#[cfg(test)]
mod fake_tests;
#[cfg(any(test, feature = "fake"))]
pub mod fake_waf;
pub mod instances;
pub mod lb;
pub mod metrics;
pub mod net;
pub mod route53;
pub mod shield;
pub mod throttle;
pub mod waf;
pub mod waf_classic;

pub use error::AwsError;
