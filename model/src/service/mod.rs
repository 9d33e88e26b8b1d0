//! Service (`type: LoadBalancer`) → desired NLB stack, with the upstream AWS Load Balancer
//! Controller's (ALBC) selection rules, annotations, defaults and names.
//!
//! The controller calls, in order:
//! 1. [`membership()`] (over [`select()`]) — is this Service ours, and with which target type;
//!    or frozen (it holds our finalizer but the controller's `--load-balancer-class` changed);
//! 2. [`parse_annotations`] — every annotation → [`NlbSettings`] (all invalid values at once;
//!    [`NlbSettings::warnings`] lists what is ignored);
//! 3. [`build_stack`] — Service + settings + resolved context → [`ServiceStack`] (load balancer,
//!    listeners, target groups, frontend security group, TargetGroupBindings);
//! 4. [`classify_changes`] — before deploying over an existing stack, which changes replace the
//!    load balancer or a target group, or cannot be applied at all (announce them first).

pub mod actions;
pub(crate) mod annotation_fields;
pub mod annotations;
pub mod build;
mod build_network;
mod build_targets;
pub mod changes;
pub mod keys;
pub mod membership;
pub mod select;

#[cfg(test)]
pub(crate) mod fuzz_tests;

pub use crate::annotations::{AnnotationError, AnnotationErrors};
pub use annotations::{
    BackendProtocol, HealthCheckPortSetting, HealthCheckSettings, NlbSettings, SecurityGroupSelector, SubnetSelector,
    Unsupported, parse_annotations,
};
pub use build::{BuildContext, BuildError, ExistingLoadBalancer, ServiceStack, build_stack, context_needs};
pub use changes::{Change, ChangeKind, classify_changes};
pub use membership::{Membership, membership};
pub use select::{DEFAULT_LOAD_BALANCER_CLASS, SelectConfig, Selection, select};
