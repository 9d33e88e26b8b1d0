//! Ingress → desired ALB, with the upstream AWS Load Balancer Controller's (ALBC) class selection,
//! annotations, IngressClassParams precedence and IngressGroup rules.
//!
//! The controller calls, in order:
//! 1. [`select()`] — is this Ingress ours, and with which IngressClassParams;
//! 2. `parse_annotations` — every `alb.ingress.kubernetes.io/*` annotation → `IngressSettings`
//!    (all invalid values at once; unsupported and unknown keys listed), and
//!    `parse_service_annotations` for each backend Service (its values win);
//! 3. `apply_params` — IngressClassParams fields override the annotations they replace;
//! 4. [`membership`] — member, frozen (holds a group finalizer but its class or params are gone:
//!    the group is kept as it is) or out; [`group_of`], [`members`], [`conflicts`] — IngressGroup
//!    identity and finalizer, member order, and the exclusive-annotation conflicts that fail a
//!    whole group; after planning, [`replacement_veto`] refuses a replacement of a shared load
//!    balancer that members of another namespace did not ask for;
//! 5. [`certificate_discovery_hosts`] per member (the controller lists ACM's certificates and
//!    [`certificates::discover`] picks those covering the hosts), then [`plan_group`]:
//!    [`merge`](merge::merge) the listeners port by port ([`merge`] module), build every
//!    listener's rules, default actions and priorities ([`rules`], [`backends`], `optimize`), and
//!    list the target groups to create, one per (Ingress, Service, port) ([`plan`]).
//!
//!    Then [`oidc::secrets_needed`] names the Secrets whose client credentials the controller
//!    reads into `BuildContext::oidc_credentials` ([`oidc::credentials_from_secret`]).
//! 6. [`build_group_stack`] — the plan + resolved subnets and security groups → the desired ALB
//!    [`IngressStack`] (load balancer, frontend SG, listeners with rules, target groups,
//!    TargetGroupBindings), ALBC's names and tags ([`build`]).

pub mod actions;
mod annotation_fields;
pub mod annotations;
pub mod backends;
pub mod build;
pub mod certificates;
pub mod created_certificates;
pub mod frontend_nlb;
pub mod group;
pub mod jwt;
pub mod keys;
pub mod membership;
pub mod merge;
pub mod mtls;
pub mod oidc;
mod optimize;
pub mod params;
pub mod plan;
pub mod replacement;
pub mod rules;
pub mod select;
mod snapshot;
pub mod tenancy;
pub mod transforms;

pub use annotation_fields::valid_group_name;
pub use annotations::{BackendSettings, IngressSettings, parse_annotations, parse_service_annotations};
#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod test_fixtures;

pub use crate::lb::build::{BuildContext, BuildError, OidcCredentials, TargetGroupBindingTemplate};
pub use backends::{ServiceView, Services};
pub use build::{IngressStack, build_group_stack, context_needs};
pub use certificates::{AcmCertificate, NoCertificate};
pub use group::{Candidate, Conflict, GroupId, conflicts, group_of, members};
pub use membership::{Membership, membership};
pub use merge::{
    GroupError, IngressKey, ListenerConfig, Member, MergeConfig, Merged, certificate_discovery_hosts, listen_ports,
};
pub use params::apply_params;
pub use plan::{GroupPlan, TargetGroupBackend, TargetGroupKey, plan_group};
pub use replacement::{ReplacementVeto, replacement_veto};
pub use rules::{ListenerRules, Rule};
pub use select::{ClassView, SelectConfig, Selection, select};
pub use snapshot::ClassSnapshot;
