//! TargetGroupBinding `spec.iamRoleArnToAssume`: ELBv2 clients that act as a role of another
//! account (a target group shared across accounts), as ALBC does for ip targets.
//!
//! One client per (role, external ID), built on first use and kept: its keys come from
//! `sts:AssumeRole` signed with the controller's own credentials, sent through the
//! [`CallRunner`] like every other call (throttled, timed out, counted as service `STS`), and
//! the SDK's identity cache reuses them until shortly before they expire.

use crate::call::{CallRunner, Service};
use crate::config::Clients;
use crate::elbv2::{ElbV2, SdkElbV2};
use crate::error::AwsError;
use aws_credential_types::Credentials;
use aws_credential_types::provider::{self, ProvideCredentials, SharedCredentialsProvider, error::CredentialsError};
use lbc_model::crd::RoleToAssume;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Session name of our AssumeRole calls: CloudTrail in the target group's account shows who acted.
pub const SESSION_NAME: &str = "aws-lb-controller";

/// ELBv2 clients by the role they act as.
pub trait ElbV2ByRole: Send + Sync {
    /// The client whose calls are signed with keys of `role` (`None`: the controller's own).
    fn client(&self, role: Option<&RoleToAssume>) -> Arc<dyn ElbV2>;
}

/// [`ElbV2ByRole`] over the AWS SDK.
pub struct SdkElbV2ByRole {
    own: Arc<dyn ElbV2>,
    clients: Arc<Clients>,
    runner: Arc<CallRunner>,
    by_role: Mutex<HashMap<RoleToAssume, Arc<dyn ElbV2>>>,
}

impl SdkElbV2ByRole {
    pub fn new(own: Arc<dyn ElbV2>, clients: Arc<Clients>, runner: Arc<CallRunner>) -> Self {
        Self { own, clients, runner, by_role: Mutex::default() }
    }
}

impl ElbV2ByRole for SdkElbV2ByRole {
    fn client(&self, role: Option<&RoleToAssume>) -> Arc<dyn ElbV2> {
        let Some(role) = role else { return self.own.clone() };
        let mut by_role = self.by_role.lock().expect("role clients");
        by_role
            .entry(role.clone())
            .or_insert_with(|| {
                let keys =
                    AssumedRoleKeys { sts: self.clients.sts.clone(), runner: self.runner.clone(), role: role.clone() };
                let client = self.clients.elbv2_with(SharedCredentialsProvider::new(keys));
                Arc::new(SdkElbV2::new(client, self.runner.clone()))
            })
            .clone()
    }
}

/// Keys of one role from `sts:AssumeRole`, asked for whenever the identity cache needs them.
struct AssumedRoleKeys {
    sts: aws_sdk_sts::Client,
    runner: Arc<CallRunner>,
    role: RoleToAssume,
}

impl std::fmt::Debug for AssumedRoleKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AssumedRoleKeys").field("role", &self.role).finish_non_exhaustive()
    }
}

impl AssumedRoleKeys {
    async fn assume(&self) -> provider::Result {
        let out = self
            .runner
            .run(Service::Sts, "AssumeRole", || async {
                self.sts
                    .assume_role()
                    .role_arn(&self.role.role_arn)
                    .set_external_id(self.role.external_id.clone())
                    .role_session_name(SESSION_NAME)
                    .send()
                    .await
                    .map_err(|e| AwsError::from_sdk(Service::Sts.label(), "AssumeRole", e))
            })
            .await
            .map_err(|e| CredentialsError::provider_error(refused(&self.role, &e)))?;
        let c = out.credentials().ok_or_else(|| {
            CredentialsError::invalid_configuration(format!(
                "sts:AssumeRole of {} answered without credentials",
                self.role.role_arn
            ))
        })?;
        let expiry = std::time::SystemTime::try_from(*c.expiration()).ok();
        Ok(Credentials::new(
            c.access_key_id(),
            c.secret_access_key(),
            Some(c.session_token().to_string()),
            expiry,
            "AssumeRole",
        ))
    }
}

/// Why a role could not be assumed, with what the operator checks.
fn refused(role: &RoleToAssume, e: &AwsError) -> String {
    let ext = role.external_id.as_deref().map_or("no external ID".to_string(), |x| format!("external ID {x:?}"));
    format!(
        "could not assume role {} ({ext}; spec.iamRoleArnToAssume / spec.assumeRoleExternalId of the \
         TargetGroupBinding): {e}. Fix: the role's trust policy must allow sts:AssumeRole by the controller's identity \
         with this external ID, and the controller's identity needs sts:AssumeRole on it",
        role.role_arn
    )
}

impl ProvideCredentials for AssumedRoleKeys {
    fn provide_credentials<'a>(&'a self) -> provider::future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        provider::future::ProvideCredentials::new(self.assume())
    }
}
