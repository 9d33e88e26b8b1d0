//! Every decision aws-lb-controller makes, as pure functions over plain data.
//!
//! Nothing here performs I/O, spawns tasks or talks to Kubernetes or AWS: the controller feeds
//! snapshots in and carries the returned decisions out. That keeps the rules testable in
//! microseconds and gives a newcomer one place to read what the controller does and why.
//!
//! - [`crd`]: the `elbv2.k8s.aws/v1beta1` TargetGroupBinding type (drop-in compatible with ALBC).
//! - [`names`]: the labels, annotations, finalizers and condition types shared with ALBC.
//! - [`target`]: a target (ip, port) and its AWS health.
//! - [`endpoints`]: EndpointSlices + pods + nodes → desired targets.
//! - [`plan`]: desired vs registered → register/deregister batches, with the refuse-to-wipe guard.
//! - [`binding`]: the binding reconciler's other decisions: gate conditions and patches, its Ready
//!   status, the deletion set, the multi-cluster owned set, when to sync again, which bindings an
//!   event wakes.
//! - [`readiness`]: target health → pod readiness-gate condition, and how often to poll health.
//! - [`net`]: VPC CIDR checks (overlay pod IPs).
//! - [`checkpoint`]: the hash that lets a restarted controller skip work already in sync, and when
//!   a sync writes it and its status back.
//! - [`lb`]: load balancers, listeners, target groups and security groups as plain data; ALBC's
//!   deterministic names ([`lb::naming`]) and tracking tags ([`lb::tags`]).
//! - [`service`]: Service (`type: LoadBalancer`) → desired NLB stack: selection, annotations, build.
//! - [`ingress`]: Ingress → desired ALB: class selection, annotations, IngressGroups and rules.
//! - [`gateway`]: Gateway API: listeners accepted or conflicted, route attachment by parentRefs,
//!   allowedRoutes and hostnames, ReferenceGrants; the conditions and reasons of the spec.
//! - [`throttle`]: client-side AWS API rate limits (`--aws-api-throttle`).
//! - [`lease`]: leader election: when to take the Lease, how long leadership lasts after a renewal.
//! - [`cilium`]: pod IP → ENI from CiliumNode objects (ENI IPAM mode), merged with EC2 results.
//! - [`tg_ownership`]: whether a binding may write to a target group, from its cluster/stack tags.
//! - [`doctor`]: the checks of `aws-lb-controller doctor`, observed data → ok/warn/fail verdicts.
//! - [`poison`]: isolating the one target AWS refuses, so the rest of its batch goes through.
//! - [`nodes`]: instance targets: node eligibility, node → instance, the instance-target diff.
//! - [`compat`]: ALBC's feature gates and the ALBC flags without an equivalent here, and what each means.
//! - [`text`]: cutting messages to a size limit at a character boundary.
//! - [`webhook_cert`]: the controller-managed webhook CA and serving certificate: when to issue,
//!   rotate and retire, which pair a replica serves, when a caBundle needs a patch.

pub mod admission;
pub mod annotations;
pub mod binding;
pub mod checkpoint;
pub mod cilium;
pub mod compat;
pub mod crd;
pub mod digest;
pub mod doctor;
pub mod drain;
pub mod endpoints;
pub mod gateway;
pub mod ingress;
pub mod lb;
pub mod lease;
pub mod names;
pub mod net;
pub mod nodes;
pub mod pacing;
pub mod plan;
pub mod pod;
pub mod poison;
pub mod readiness;
pub mod service;
pub mod target;
pub mod tenancy;
pub mod text;
pub mod tg_ownership;
pub mod throttle;
pub mod vpc;
pub mod webhook_cert;
pub mod wire;
