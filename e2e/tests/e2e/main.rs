//! The end-to-end suite: one test binary, one module per area (build and link once, not once per
//! file). The tests are #[ignore]d and need the local environment (e2e/up); e2e/scripts/e2e-suite.sh
//! runs them one module at a time, as e2e/test-all does: tests of a module may run side by side,
//! tests of different modules never do.

mod adoption;
mod albc_metrics;
mod apiserver_restart;
mod attack_ownership;
mod attack_tenancy;
mod aws_adapter;
mod aws_lb_adapter;
mod backend_rules;
mod chart_on_node;
mod conformance;
mod credential_chain;
mod cross_account;
mod doctor;
mod environment;
mod fencing;
mod gateway_api;
mod guards;
mod image;
mod ingress_alb;
mod instance_targets;
mod prometheus;
mod real_node;
mod service_nlb;
mod targetgroupbinding;
mod tracing;
mod vault_credentials;
mod webhook_certs;
mod webhook_overload;
mod webhooks;
mod zero_downtime;
