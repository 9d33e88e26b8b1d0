//! Ingress → desired ALB, with the upstream AWS Load Balancer Controller's (ALBC) class selection,
//! annotations, IngressClassParams precedence and IngressGroup rules.
//!
//! The controller calls, in order:
//! 1. [`select()`] — is this Ingress ours, and with which IngressClassParams;
//! 2. `parse_annotations` — every `alb.ingress.kubernetes.io/*` annotation → `IngressSettings`
//!    (all invalid values at once; unsupported and unknown keys listed), and
//!    `parse_service_annotations` for each backend Service (its values win);
//! 3. `apply_params` — IngressClassParams fields override the annotations they replace;
//! 4. `build_groups` — the Ingresses of one IngressGroup → ordered members, merged settings
//!    (exclusive-annotation conflicts fail the group) and per listener port the ordered rules.
//!
//! The final `lb::Stack` (listeners, target groups, names) is built from a group in a later step.

pub mod actions;
mod annotation_fields;
pub mod annotations;
pub mod group;
pub mod keys;
pub mod params;
pub mod select;

pub use annotation_fields::valid_group_name;
pub use annotations::{BackendSettings, IngressSettings, parse_annotations, parse_service_annotations};
#[cfg(test)]
mod fuzz_tests;

pub use group::{Candidate, Conflict, GroupId, conflicts, group_of, members};
pub use params::apply_params;
pub use select::{ClassView, SelectConfig, Selection, select};
