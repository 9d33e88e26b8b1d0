//! Ingress → desired ALB, with the upstream AWS Load Balancer Controller's (ALBC) class selection,
//! annotations, IngressClassParams precedence and IngressGroup rules.
//!
//! The controller calls, in order:
//! 1. [`select()`] — is this Ingress ours, and with which IngressClassParams;
//! 2. `parse_annotations` — every `alb.ingress.kubernetes.io/*` annotation → `IngressSettings`
//!    (all invalid values at once; unsupported and unknown keys listed), and
//!    `parse_service_annotations` for each backend Service (its values win);
//! 3. `apply_params` — IngressClassParams fields override the annotations they replace;
//! 4. [`group_of`], [`members`], [`conflicts`] — IngressGroup identity and finalizer, member
//!    order, and the exclusive-annotation conflicts that fail a whole group.
//!
//! Still to come: merging listen ports / certificates / listener attributes per port, the ordered
//! rules (path conversion, `use-annotation`, conditions, priorities), then the `lb::Stack`.

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
