//! TargetGroupBinding `spec.iamRoleArnToAssume`: ELBv2 clients that act as a role of another
//! account (a target group shared across accounts), as ALBC does for ip targets.
//!
//! One client per (role, external ID), built on first use and kept while it is used: its keys
//! come from `sts:AssumeRole` signed with the controller's own credentials, sent through the
//! [`CallRunner`] like every other call (throttled, timed out, counted as service `STS`), and
//! the SDK's identity cache reuses them until shortly before they expire.
//!
//! The roles are chosen by whoever writes TargetGroupBindings (and, for the webhook, by whoever
//! can reach its port), so the cache is bounded ([`RoleCacheLimits`]): a client unused for
//! `idle` is dropped, and when `max_entries` clients are held the least recently used one makes
//! room. Written by hand (a map plus a last-use stamp, eviction by a linear scan) rather than with
//! an LRU crate: none is in the dependency tree, and with at most a few hundred entries, touched
//! only when a client is built, the scan costs microseconds.

use crate::call::{CallRunner, Service};
use crate::config::Clients;
use crate::elbv2::{ElbV2, SdkElbV2};
use crate::error::AwsError;
use aws_credential_types::Credentials;
use aws_credential_types::provider::{self, ProvideCredentials, SharedCredentialsProvider, error::CredentialsError};
use lbc_model::crd::RoleToAssume;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Session name of our AssumeRole calls: CloudTrail in the target group's account shows who acted.
pub const SESSION_NAME: &str = "aws-lb-controller";

/// ELBv2 clients by the role they act as.
pub trait ElbV2ByRole: Send + Sync {
    /// The client whose calls are signed with keys of `role` (`None`: the controller's own).
    fn client(&self, role: Option<&RoleToAssume>) -> Arc<dyn ElbV2>;

    /// Clients of assumed roles held right now (for metrics; 0 where nothing is cached).
    fn cached_roles(&self) -> usize {
        0
    }
}

/// Bounds of a per-role client cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoleCacheLimits {
    /// Clients held at most; the least recently used one makes room for a new role.
    pub max_entries: usize,
    /// A client unused for this long is dropped (its keys with it).
    pub idle: Duration,
}

impl RoleCacheLimits {
    /// The reconcilers': roles of the bindings in the cluster, each used at every reconcile of its
    /// binding (default every 10 h, on every change of the binding's endpoints in between).
    pub const RECONCILERS: Self = Self { max_entries: 1024, idle: Duration::from_secs(12 * 3600) };
    /// The webhook's: a role is needed for the few admissions of one binding, and the roles are
    /// whatever the requests name, so few clients are kept, briefly.
    pub const WEBHOOK: Self = Self { max_entries: 64, idle: Duration::from_secs(10 * 60) };
}

/// A map bounded by [`RoleCacheLimits`]: entries stamped with their last use.
#[derive(Debug)]
pub struct BoundedCache<K, V> {
    limits: RoleCacheLimits,
    entries: HashMap<K, (V, Instant)>,
    evicted: u64,
}

impl<K: Hash + Eq + Clone, V: Clone> BoundedCache<K, V> {
    pub fn new(limits: RoleCacheLimits) -> Self {
        Self { limits, entries: HashMap::new(), evicted: 0 }
    }

    /// The value of `key` at `now`, made with `make` when absent or idle too long. Making room drops
    /// every idle entry first, then (still full) the least recently used one.
    pub fn get_or_insert_with(&mut self, key: &K, now: Instant, make: impl FnOnce() -> V) -> V {
        let idle = self.limits.idle;
        let fresh = |used: Instant| now.saturating_duration_since(used) < idle;
        if let Some((v, used)) = self.entries.get_mut(key)
            && fresh(*used)
        {
            *used = now;
            return v.clone();
        }
        self.entries.remove(key);
        let before = self.entries.len();
        self.entries.retain(|_, (_, used)| fresh(*used));
        self.evicted += (before - self.entries.len()) as u64;
        while self.entries.len() >= self.limits.max_entries.max(1) {
            let Some(oldest) = self.entries.iter().min_by_key(|(_, (_, used))| *used).map(|(k, _)| k.clone()) else {
                break;
            };
            self.entries.remove(&oldest);
            self.evicted += 1;
        }
        let v = make();
        self.entries.insert(key.clone(), (v.clone(), now));
        v
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries dropped so far (idle or to make room).
    pub fn evicted(&self) -> u64 {
        self.evicted
    }
}

/// [`ElbV2ByRole`] over the AWS SDK.
pub struct SdkElbV2ByRole {
    own: Arc<dyn ElbV2>,
    clients: Arc<Clients>,
    runner: Arc<CallRunner>,
    by_role: Mutex<BoundedCache<RoleToAssume, Arc<dyn ElbV2>>>,
}

impl SdkElbV2ByRole {
    /// Clients whose calls (`AssumeRole` included) go through `runner`, its throttle budget and
    /// metrics; at most `limits` of them are kept.
    pub fn new(own: Arc<dyn ElbV2>, clients: Arc<Clients>, runner: Arc<CallRunner>, limits: RoleCacheLimits) -> Self {
        Self { own, clients, runner, by_role: Mutex::new(BoundedCache::new(limits)) }
    }
}

impl ElbV2ByRole for SdkElbV2ByRole {
    fn client(&self, role: Option<&RoleToAssume>) -> Arc<dyn ElbV2> {
        let Some(role) = role else { return self.own.clone() };
        let mut by_role = self.by_role.lock().expect("role clients");
        by_role.get_or_insert_with(role, Instant::now(), || {
            let keys =
                AssumedRoleKeys { sts: self.clients.sts.clone(), runner: self.runner.clone(), role: role.clone() };
            let client = self.clients.elbv2_with(SharedCredentialsProvider::new(keys));
            Arc::new(SdkElbV2::new(client, self.runner.clone()))
        })
    }

    fn cached_roles(&self) -> usize {
        self.by_role.lock().expect("role clients").len()
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

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: RoleCacheLimits = RoleCacheLimits { max_entries: 3, idle: Duration::from_secs(60) };

    #[test]
    fn keeps_at_most_max_entries_dropping_the_least_recently_used() {
        let mut c = BoundedCache::new(LIMITS);
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut made = 0;
        let mut get = |c: &mut BoundedCache<&str, u32>, k: &'static str, s: u64| {
            c.get_or_insert_with(&k, at(s), || {
                made += 1;
                made
            })
        };
        assert_eq!(get(&mut c, "a", 0), 1);
        assert_eq!(get(&mut c, "b", 1), 2);
        assert_eq!(get(&mut c, "c", 2), 3);
        // "a" used again: "b" is now the least recently used.
        assert_eq!(get(&mut c, "a", 3), 1, "a cached value is reused");
        assert_eq!(get(&mut c, "d", 4), 4);
        assert_eq!(c.len(), 3);
        assert_eq!(c.evicted(), 1);
        assert_eq!(get(&mut c, "a", 5), 1, "a stayed");
        assert_eq!(get(&mut c, "c", 5), 3, "c stayed");
        assert_eq!(get(&mut c, "b", 6), 5, "b was dropped and is made again");
        assert_eq!(c.len(), 3);
    }

    #[test]
    fn idle_entries_are_made_again_and_swept_on_insert() {
        let mut c = BoundedCache::new(LIMITS);
        let t0 = Instant::now();
        c.get_or_insert_with(&"a", t0, || 1);
        c.get_or_insert_with(&"b", t0 + Duration::from_secs(30), || 2);
        // 60 s after its last use "a" is idle: made again, not reused.
        assert_eq!(c.get_or_insert_with(&"a", t0 + Duration::from_secs(60), || 3), 3);
        // 100 s: "b" (last used at 30 s) is idle and swept when "c" is inserted.
        c.get_or_insert_with(&"c", t0 + Duration::from_secs(100), || 4);
        assert_eq!(c.len(), 2, "a and c");
        assert_eq!(c.evicted(), 1);
    }

    #[test]
    fn a_flood_of_distinct_keys_stays_bounded() {
        let mut c = BoundedCache::new(LIMITS);
        let t0 = Instant::now();
        for i in 0..10_000u32 {
            c.get_or_insert_with(&i, t0 + Duration::from_millis(u64::from(i)), || i);
            assert!(c.len() <= LIMITS.max_entries);
        }
        assert_eq!(c.evicted(), 10_000 - 3);
    }
}
