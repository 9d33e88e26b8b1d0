//! Read-only probes for `aws-lb-controller doctor`: STS GetCallerIdentity and one harmless try of
//! every IAM action the controller needs (see `lbc_model::doctor::permissions`). Every call goes
//! through the [`CallRunner`] (throttled, counted, timed); EC2 writes carry `DryRun=true` and are
//! labelled `DryRun<Operation>` so the runner treats them as reads.

use crate::call::{CallRunner, Service};
use crate::config::Clients;
use crate::error::{AwsError, ErrorKind};
use lbc_model::doctor::permissions::Outcome;
use std::sync::Arc;

/// Who the keys belong to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallerIdentity {
    pub arn: String,
    pub account: String,
}

/// What the probes need to know of the cluster.
#[derive(Clone, Debug)]
pub struct ProbeTarget {
    pub region: String,
    pub account: String,
    pub vpc_id: String,
    pub cluster_name: String,
}

pub struct Probes {
    clients: Clients,
    runner: Arc<CallRunner>,
}

/// Runs one SDK call through the runner as `$name`, mapping its error.
macro_rules! run {
    ($self:ident, $service:expr, $name:literal, $call:expr) => {
        $self
            .runner
            .run($service, $name, || async {
                $call.await.map_err(|err| $crate::error::AwsError::from_sdk($service.label(), $name, err))
            })
            .await
    };
}

// Declared after `run!` so the probes of each service can use it.
mod acm;
mod ec2;
mod elbv2;
mod route53;
mod shield;
mod waf_regional;
mod wafv2;

/// Maps one probe's result: a read that answered, or failed only because the made-up resource
/// does not exist, was authorised; a DryRun is allowed only on `DryRunOperation`.
fn outcome<T>(r: Result<T, AwsError>, dry_run: bool) -> Outcome {
    match r {
        Ok(_) => Outcome::Allowed,
        Err(e) if e.code.as_deref() == Some("DryRunOperation") => Outcome::Allowed,
        Err(e) if e.kind == ErrorKind::AccessDenied => {
            Outcome::Denied(format!("{}: {}", e.code.as_deref().unwrap_or("AccessDenied"), e.message))
        }
        Err(e) if !dry_run && matches!(e.kind, ErrorKind::NotFound | ErrorKind::Invalid) => Outcome::Allowed,
        Err(e) => Outcome::Error(e.to_string()),
    }
}

impl Probes {
    pub fn new(clients: Clients, runner: Arc<CallRunner>) -> Self {
        Self { clients, runner }
    }

    pub async fn caller_identity(&self) -> Result<CallerIdentity, AwsError> {
        let sts: &aws_sdk_sts::Client = &self.clients.sts;
        let out = run!(self, Service::Sts, "GetCallerIdentity", sts.get_caller_identity().send())?;
        Ok(CallerIdentity {
            arn: out.arn().unwrap_or_default().to_string(),
            account: out.account().unwrap_or_default().to_string(),
        })
    }

    /// Tries `action` (`service:Operation`) without changing anything.
    pub async fn probe(&self, action: &str, t: &ProbeTarget) -> Outcome {
        let (service, op) = action.split_once(':').unwrap_or(("", action));
        match service {
            "elasticloadbalancing" => self.elbv2(op, t).await,
            "ec2" => self.ec2(op, t).await,
            "acm" => self.acm(op, t).await,
            "wafv2" => self.wafv2(op, t).await,
            "waf-regional" => self.waf_regional(op, t).await,
            "shield" => self.shield(op, t).await,
            "route53" => self.route53(op).await,
            // Trying it needs one of the user's roles; doctor has no binding's role to try.
            "sts" => Outcome::Unverifiable(format!(
                "sts:{op} can only be tried with a role of yours; it is used only by TargetGroupBindings with \
                 spec.iamRoleArnToAssume (the role's trust policy must allow the controller's identity)"
            )),
            _ => Outcome::Unverifiable(format!("no probe for service {service}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(kind: ErrorKind, code: &str) -> Result<(), AwsError> {
        let mut e = AwsError::new(kind, "ec2", "X", "msg");
        e.code = Some(code.into());
        Err(e)
    }

    #[test]
    fn outcomes() {
        assert_eq!(outcome(Ok::<(), AwsError>(()), false), Outcome::Allowed);
        assert_eq!(outcome(err(ErrorKind::Other, "DryRunOperation"), true), Outcome::Allowed);
        assert!(
            matches!(outcome(err(ErrorKind::AccessDenied, "UnauthorizedOperation"), true), Outcome::Denied(m) if m.contains("UnauthorizedOperation"))
        );
        assert_eq!(outcome(err(ErrorKind::NotFound, "TargetGroupNotFound"), false), Outcome::Allowed);
        assert!(matches!(outcome(err(ErrorKind::NotFound, "InvalidGroup.NotFound"), true), Outcome::Error(_)));
        assert!(matches!(outcome(err(ErrorKind::Transient, "InternalError"), false), Outcome::Error(_)));
    }
}
