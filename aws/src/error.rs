//! AWS errors, classified by what the controller should do about them.

use aws_credential_types::provider::error::CredentialsError;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use std::fmt;

/// What kind of failure a call met.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// AWS (or our emulator) said `Throttling`/`RequestLimitExceeded`: slow down and retry.
    Throttled,
    /// The resource does not exist (e.g. a target group deleted out of band).
    NotFound,
    /// IAM denied the call: the policy lacks an action.
    AccessDenied,
    /// Credentials missing, expired or rejected.
    Credentials,
    /// The request itself is wrong (bad target, validation error, a referenced subnet, security
    /// group or certificate that does not exist, a quota): retrying will not help.
    Invalid,
    /// A resource with that name (or rule, or listener port) already exists: find and adopt it.
    AlreadyExists,
    /// Still referenced by something else (a target group by a listener, a security group by a
    /// network interface of a load balancer being deleted): retry later, not at once.
    InUse,
    /// 5xx, timeouts, connection failures: retry.
    Transient,
    /// The write was not sent: this replica does not hold the leader lease (or lost it while the
    /// call waited). Not a failure of AWS nor of the object: the new leader takes over.
    NotLeader,
    Other,
}

impl ErrorKind {
    /// Metric label and Warning-event reason suffix.
    pub const ALL: [ErrorKind; 10] = [
        Self::Throttled,
        Self::NotFound,
        Self::AccessDenied,
        Self::Credentials,
        Self::Invalid,
        Self::AlreadyExists,
        Self::InUse,
        Self::Transient,
        Self::NotLeader,
        Self::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Throttled => "throttled",
            Self::NotFound => "not_found",
            Self::AccessDenied => "access_denied",
            Self::Credentials => "credentials",
            Self::Invalid => "invalid_request",
            Self::AlreadyExists => "already_exists",
            Self::InUse => "in_use",
            Self::Transient => "transient",
            Self::NotLeader => "not_leader",
            Self::Other => "other",
        }
    }

    /// Worth retrying at once (within [`crate::call::CallRunner`]'s bounded retries).
    pub fn is_retryable(self) -> bool {
        matches!(self, Self::Throttled | Self::Transient)
    }

    /// Worth retrying after a while (requeue the reconcile): also true for [`Self::InUse`], which
    /// clears once the referencing resource is gone (e.g. a deleted load balancer's ENIs).
    pub fn retry_later(self) -> bool {
        matches!(self, Self::Throttled | Self::Transient | Self::InUse)
    }

    /// Classifies an AWS error code (and HTTP status when there is no code).
    pub fn from_code(code: Option<&str>, status: Option<u16>) -> Self {
        match code.unwrap_or_default() {
            "Throttling"
            | "ThrottlingException"
            | "RequestLimitExceeded"
            | "TooManyRequestsException"
            | "RequestThrottled"
            | "SlowDown" => Self::Throttled,
            "TargetGroupNotFound"
            | "LoadBalancerNotFound"
            | "ListenerNotFound"
            | "RuleNotFound"
            | "InvalidVpcID.NotFound"
            | "InvalidGroup.NotFound"
            | "InvalidSubnetID.NotFound"
            | "InvalidNetworkInterfaceID.NotFound"
            | "InvalidPermission.NotFound"
            // ACM: a certificate deleted between ListCertificates and DescribeCertificate.
            | "ResourceNotFoundException"
            // Route 53: a validation record already deleted.
            | "NoSuchHostedZone"
            | "WAFNonexistentItemException" => Self::NotFound,
            "DuplicateLoadBalancerName"
            | "DuplicateTargetGroupName"
            | "DuplicateListener"
            | "PriorityInUse"
            | "InvalidGroup.Duplicate"
            | "InvalidPermission.Duplicate" => Self::AlreadyExists,
            // ACM: a certificate a load balancer still uses.
            "ResourceInUse"
            | "ResourceInUseException"
            | "DependencyViolation"
            | "InvalidGroup.InUse"
            | "InvalidNetworkInterface.InUse" => Self::InUse,
            "AccessDenied" | "AccessDeniedException" | "UnauthorizedOperation" => Self::AccessDenied,
            "ExpiredToken"
            | "ExpiredTokenException"
            | "InvalidClientTokenId"
            | "UnrecognizedClientException"
            | "AuthFailure"
            | "SignatureDoesNotMatch"
            | "MissingAuthenticationToken"
            | "InvalidAccessKeyId" => Self::Credentials,
            "InvalidTarget"
            | "ValidationError"
            | "InvalidParameterValue"
            | "InvalidParameterCombination"
            | "InvalidConfigurationRequest"
            | "TooManyTargets"
            | "TooManyRegistrationsForTargetId"
            // ELBv2: the request names something that does not exist or does not fit.
            | "SubnetNotFound"
            | "InvalidSubnet"
            | "InvalidSecurityGroup"
            | "InvalidScheme"
            | "CertificateNotFound"
            // A listener naming a trust store that does not exist (DescribeTrustStores' own answer
            // is read as "not found" by `LoadBalancers::trust_store_arns`).
            | "TrustStoreNotFound"
            | "AllocationIdNotFound"
            | "AvailabilityZoneNotSupported"
            | "IncompatibleProtocols"
            | "UnsupportedProtocol"
            | "SSLPolicyNotFound"
            | "ALPNPolicyNotSupported"
            | "InvalidLoadBalancerAction"
            | "OperationNotPermitted"
            | "DuplicateTagKeys"
            | "TooManyTags"
            | "TooManyLoadBalancers"
            | "TooManyListeners"
            | "TooManyTargetGroups"
            | "TooManyActions"
            | "TooManyCertificates"
            | "TooManyUniqueTargetGroupsPerLoadBalancer"
            | "TargetGroupAssociationLimit"
            // EC2
            | "InvalidParameter"
            | "MissingParameter"
            | "InvalidFilter"
            | "InvalidID"
            | "InvalidGroupId.Malformed"
            | "InvalidSubnetID.Malformed"
            | "InvalidNetworkInterfaceId.Malformed"
            | "InvalidPermission.Malformed"
            | "RulesPerSecurityGroupLimitExceeded"
            | "SecurityGroupLimitExceeded"
            // ACM
            | "ValidationException"
            | "InvalidArnException"
            | "InvalidParameterException"
            | "InvalidArgsException"
            // WAFv2
            | "WAFInvalidParameterException"
            | "WAFInvalidOperationException"
            | "WAFLimitsExceededException" => Self::Invalid,
            "ServiceUnavailable"
            | "InternalFailure"
            | "InternalError"
            | "Unavailable"
            | "HealthUnavailable"
            | "WAFInternalErrorException"
            // WAFv2 cannot see a load balancer created moments ago yet: retried like ALBC does.
            | "WAFUnavailableEntityException" => Self::Transient,
            "" => match status {
                Some(s) if s >= 500 => Self::Transient,
                Some(429) => Self::Throttled,
                _ => Self::Other,
            },
            _ => match status {
                Some(s) if s >= 500 => Self::Transient,
                _ => Self::Other,
            },
        }
    }
}

/// A failed AWS call, with enough context to act on it from a log line alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AwsError {
    pub kind: ErrorKind,
    pub service: &'static str,
    pub operation: &'static str,
    pub code: Option<String>,
    pub message: String,
    /// HTTP status of the response that carried the error; `None` when no response came (timeout,
    /// unreachable endpoint, refused before sending, or an error made up by a fake).
    pub status: Option<u16>,
}

impl std::error::Error for AwsError {}

impl AwsError {
    /// A write refused by the leader fence before it was sent.
    pub fn not_leader(service: &'static str, operation: &'static str) -> Self {
        Self {
            kind: ErrorKind::NotLeader,
            service,
            operation,
            code: None,
            message: "not sent: this replica does not hold the leader lease".into(),
            status: None,
        }
    }

    /// An attempt that got no answer within `limit`: transient, like a 5xx.
    pub fn timed_out(service: &'static str, operation: &'static str, limit: std::time::Duration) -> Self {
        Self {
            kind: ErrorKind::Transient,
            service,
            operation,
            code: Some("ClientTimeout".into()),
            message: format!(
                "no answer within {limit:?} (attempt timeout --aws-api-attempt-timeout, bounded by \
                 --aws-api-operation-timeout); the call was abandoned and will be retried"
            ),
            status: None,
        }
    }

    /// The same error, noting that retries stopped at the operation timeout.
    pub fn gave_up_after(mut self, spent: std::time::Duration) -> Self {
        self.message = format!("{} (gave up retrying after {spent:.1?}: --aws-api-operation-timeout)", self.message);
        self
    }
}

/// The code of an [`ErrorKind::AccessDenied`] this controller made itself: the strict tenancy mode
/// refused the call before it was sent (`crate::elbv2_refused`).
pub const REFUSED_BY_TENANCY_POLICY: &str = "RefusedByTenancyPolicy";

impl fmt::Display for AwsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} failed", self.service, self.operation)?;
        if let Some(code) = &self.code {
            write!(f, " ({code})")?;
        }
        write!(f, ": {}", self.message)?;
        let hint = match self.kind {
            // AWS's denial, not a refusal of ours before any call (the strict tenancy mode's).
            ErrorKind::AccessDenied if self.code.as_deref() != Some(REFUSED_BY_TENANCY_POLICY) => {
                " — the controller's IAM policy lacks this action; compare it with docs/iam-policy.json"
            }
            ErrorKind::Credentials => {
                " — AWS credentials are missing, expired or wrong; check the controller's credential source (flag --aws-credentials-source) and its logs"
            }
            ErrorKind::Throttled => " — AWS is rate-limiting this account; the controller slows down and retries",
            _ => "",
        };
        f.write_str(hint)
    }
}

impl AwsError {
    pub fn new(kind: ErrorKind, service: &'static str, operation: &'static str, message: impl Into<String>) -> Self {
        Self { kind, service, operation, code: None, message: message.into(), status: None }
    }

    /// Classifies an SDK error.
    pub fn from_sdk<E, R>(service: &'static str, operation: &'static str, err: SdkError<E, R>) -> Self
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
        R: fmt::Debug + HttpStatus,
    {
        let mut status = None;
        let (kind, code, message) = match &err {
            SdkError::ServiceError(se) => {
                let http = se.raw().status_code();
                status = Some(http);
                let code = se.err().code().map(str::to_string);
                let msg = se.err().message().map(str::to_string).unwrap_or_else(|| format!("HTTP {http}"));
                (ErrorKind::from_code(code.as_deref(), Some(http)), code, msg)
            }
            SdkError::TimeoutError(_) => (ErrorKind::Transient, None, "request timed out".to_string()),
            SdkError::DispatchFailure(d) => {
                let msg = format!("could not reach the endpoint: {}", source_chain(&err));
                let kind = if credentials_failed(std::error::Error::source(&err)) {
                    ErrorKind::Credentials
                } else if d.is_io() || d.is_timeout() {
                    ErrorKind::Transient
                } else {
                    ErrorKind::Other
                };
                (kind, None, msg)
            }
            SdkError::ConstructionFailure(_) => {
                let kind = if credentials_failed(std::error::Error::source(&err)) {
                    ErrorKind::Credentials
                } else {
                    ErrorKind::Other
                };
                (kind, None, source_chain(&err))
            }
            SdkError::ResponseError(r) => {
                let http = r.raw().status_code();
                status = Some(http);
                (
                    ErrorKind::from_code(None, Some(http)),
                    None,
                    format!("unreadable response (HTTP {http}): {}", source_chain(&err)),
                )
            }
            _ => (ErrorKind::Other, None, source_chain(&err)),
        };
        Self { kind, service, operation, code, message, status }
    }
}

/// Why EC2 refused a batch of ingress rules because of the rules themselves, so the rest of the
/// batch is worth sending without the culprits ([`AwsError::rule_rejection`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleRejection {
    /// A rule names a source security group that does not exist (`InvalidGroup.NotFound` naming
    /// a group other than the one being changed): every rule from that source is refused.
    SourceGroupNotFound(String),
    /// A rule EC2 cannot accept as written (`InvalidPermission.Malformed`,
    /// `InvalidParameterValue`, a malformed group ID, ...). Which one is not said: split.
    Malformed,
    /// The group holds as many rules as its quota allows (`RulesPerSecurityGroupLimitExceeded`).
    QuotaExceeded,
}

impl RuleRejection {
    /// What the operator does about it (for the problem reported on the binding).
    pub fn fix(&self) -> &'static str {
        match self {
            Self::SourceGroupNotFound(_) => {
                "correct securityGroup.groupID in spec.networking or create that group in the VPC"
            }
            Self::Malformed => "correct the peer (ipBlock.cidr, securityGroup.groupID) and ports in spec.networking",
            Self::QuotaExceeded => {
                "the shared security group is full: remove rules (awslbc_backend_sg_rules shows each namespace's \
                 share), keep restricted rules on (no --disable-restricted-sg-rules), or raise the account's \
                 rules-per-security-group quota"
            }
        }
    }
}

impl AwsError {
    /// Whether this error from `AuthorizeSecurityGroupIngress` on `group_id` blames the rules sent
    /// (split the batch and send the others) rather than the group, the caller or AWS (stop and
    /// retry the pass later). A missing `group_id` itself is not the rules' fault.
    pub fn rule_rejection(&self, group_id: &str) -> Option<RuleRejection> {
        match self.code.as_deref()? {
            "InvalidGroup.NotFound" => {
                let named = quoted_group_ids(&self.message);
                named.into_iter().find(|g| g != group_id).map(RuleRejection::SourceGroupNotFound)
            }
            "RulesPerSecurityGroupLimitExceeded" => Some(RuleRejection::QuotaExceeded),
            "InvalidPermission.Malformed"
            | "InvalidParameterValue"
            | "InvalidParameter"
            | "InvalidGroupId.Malformed"
            | "InvalidParameterCombination" => Some(RuleRejection::Malformed),
            _ => None,
        }
    }
}

/// Security-group IDs (`sg-...`) quoted in an EC2 message ("The security group 'sg-0abc' does not
/// exist").
fn quoted_group_ids(message: &str) -> Vec<String> {
    message
        .split(['\'', '"'])
        .skip(1)
        .step_by(2)
        .filter(|s| s.starts_with("sg-") && s[3..].chars().all(|c| c.is_ascii_alphanumeric()) && s.len() > 3)
        .map(str::to_string)
        .collect()
}

/// HTTP status of a raw response (implemented for the SDK's response type).
pub trait HttpStatus {
    fn status_code(&self) -> u16;
}

impl HttpStatus for aws_smithy_runtime_api::http::Response {
    fn status_code(&self) -> u16 {
        self.status().as_u16()
    }
}

/// Whether a credential provider failed: the SDK hands its `CredentialsError` (from the default
/// chain, our Vault/file providers, or the assumed role's) over as the source of a dispatch or
/// construction failure, possibly wrapped; found by type anywhere in the chain of sources.
fn credentials_failed(source: Option<&(dyn std::error::Error + 'static)>) -> bool {
    std::iter::successors(source, |c| c.source()).any(|c| c.is::<CredentialsError>())
}

fn source_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_rejections_blame_the_rules_not_the_group() {
        let e = |code: &str, msg: &str| AwsError {
            kind: ErrorKind::from_code(Some(code), Some(400)),
            service: "ec2",
            operation: "AuthorizeSecurityGroupIngress",
            code: Some(code.into()),
            message: msg.into(),
            status: Some(400),
        };
        let cases = [
            (
                e("InvalidGroup.NotFound", "The security group 'sg-0peer' does not exist"),
                Some(RuleRejection::SourceGroupNotFound("sg-0peer".into())),
            ),
            // The group being changed is gone: not the rules' fault.
            (e("InvalidGroup.NotFound", "The security group 'sg-0node' does not exist"), None),
            (e("InvalidGroup.NotFound", "The security group does not exist"), None),
            (e("InvalidPermission.Malformed", "Unsupported IP protocol \"tcpx\""), Some(RuleRejection::Malformed)),
            (e("InvalidParameterValue", "CIDR block 10.0.0.0/99 is malformed"), Some(RuleRejection::Malformed)),
            (
                e(
                    "RulesPerSecurityGroupLimitExceeded",
                    "The maximum number of rules per security group has been reached.",
                ),
                Some(RuleRejection::QuotaExceeded),
            ),
            (e("RequestLimitExceeded", "slow down"), None),
            (e("UnauthorizedOperation", "no"), None),
        ];
        for (err, want) in cases {
            assert_eq!(err.rule_rejection("sg-0node"), want, "{err}");
        }
        assert!(RuleRejection::QuotaExceeded.fix().contains("awslbc_backend_sg_rules"));
    }

    #[test]
    fn classification_table() {
        use ErrorKind::*;
        let cases = [
            (Some("Throttling"), Some(400), Throttled),
            (Some("RequestLimitExceeded"), Some(503), Throttled),
            (Some("TargetGroupNotFound"), Some(400), NotFound),
            (Some("UnauthorizedOperation"), Some(403), AccessDenied),
            (Some("AccessDenied"), Some(403), AccessDenied),
            (Some("ExpiredToken"), Some(403), Credentials),
            (Some("InvalidClientTokenId"), Some(403), Credentials),
            (Some("InvalidTarget"), Some(400), Invalid),
            (Some("ValidationError"), Some(400), Invalid),
            (Some("ServiceUnavailable"), Some(503), Transient),
            (Some("LoadBalancerNotFound"), Some(400), NotFound),
            (Some("ListenerNotFound"), Some(400), NotFound),
            (Some("InvalidPermission.NotFound"), Some(400), NotFound),
            (Some("DuplicateLoadBalancerName"), Some(400), AlreadyExists),
            (Some("DuplicateTargetGroupName"), Some(400), AlreadyExists),
            (Some("DuplicateListener"), Some(400), AlreadyExists),
            (Some("InvalidGroup.Duplicate"), Some(400), AlreadyExists),
            (Some("InvalidPermission.Duplicate"), Some(400), AlreadyExists),
            (Some("ResourceInUse"), Some(400), InUse),
            (Some("DependencyViolation"), Some(400), InUse),
            (Some("SubnetNotFound"), Some(400), Invalid),
            (Some("CertificateNotFound"), Some(400), Invalid),
            (Some("TooManyTags"), Some(400), Invalid),
            (Some("InvalidParameterValue"), Some(400), Invalid),
            (Some("SomethingNew"), Some(502), Transient),
            (Some("SomethingNew"), Some(400), Other),
            (None, Some(500), Transient),
            (None, Some(429), Throttled),
            (None, None, Other),
        ];
        for (code, status, want) in cases {
            assert_eq!(ErrorKind::from_code(code, status), want, "{code:?} {status:?}");
        }
        assert!(Throttled.is_retryable() && Transient.is_retryable());
        assert!(!Invalid.is_retryable() && !AccessDenied.is_retryable() && !NotFound.is_retryable());
        assert!(!InUse.is_retryable() && InUse.retry_later() && Throttled.retry_later());
        assert!(!AlreadyExists.retry_later() && !Invalid.retry_later() && !NotFound.retry_later());
    }

    /// Credential failures are recognised by the provider's error type, with the same kind and
    /// message as when they were recognised by the word "credential" in the message; other
    /// dispatch and construction failures keep theirs.
    #[test]
    fn credential_failures_are_classified_by_type() {
        use aws_credential_types::provider::error::CredentialsError as C;
        use aws_smithy_runtime_api::client::result::ConnectorError;
        use aws_smithy_runtime_api::http::Response;
        type E = aws_sdk_sts::operation::get_caller_identity::GetCallerIdentityError;

        #[derive(Debug)]
        struct Wrapped(C);
        impl fmt::Display for Wrapped {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("resolving the identity failed")
            }
        }
        impl std::error::Error for Wrapped {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        #[derive(Debug)]
        struct Plain(&'static str);
        impl fmt::Display for Plain {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.0)
            }
        }
        impl std::error::Error for Plain {}

        let vault = || C::provider_error("no valid AWS credentials from vault: sealed");
        let dispatch = |e: Box<dyn std::error::Error + Send + Sync>| {
            SdkError::<E, Response>::dispatch_failure(ConnectorError::other(e, None))
        };
        use ErrorKind::*;
        let cases: Vec<(&str, SdkError<E, Response>, ErrorKind, &str)> = vec![
            (
                "our provider failed",
                dispatch(vault().into()),
                Credentials,
                "could not reach the endpoint: dispatch failure: other: an error occurred while loading credentials: \
                 no valid AWS credentials from vault: sealed",
            ),
            (
                "no provider in the default chain",
                dispatch(C::not_loaded("no providers in chain provided credentials").into()),
                Credentials,
                "could not reach the endpoint: dispatch failure: other: the credential provider was not enabled: \
                 no providers in chain provided credentials",
            ),
            (
                "provider timed out",
                dispatch(C::provider_timed_out(std::time::Duration::from_secs(5)).into()),
                Credentials,
                "could not reach the endpoint: dispatch failure: other: credentials provider timed out after 5 seconds",
            ),
            (
                "provider misconfigured",
                dispatch(C::invalid_configuration("role_arn is empty").into()),
                Credentials,
                "could not reach the endpoint: dispatch failure: other: the credentials provider was not properly \
                 configured: role_arn is empty",
            ),
            (
                "wrapped one level deeper",
                dispatch(Box::new(Wrapped(vault()))),
                Credentials,
                "could not reach the endpoint: dispatch failure: other: resolving the identity failed: \
                 an error occurred while loading credentials: no valid AWS credentials from vault: sealed",
            ),
            (
                "before the request was built",
                SdkError::construction_failure(vault()),
                Credentials,
                "failed to construct request: an error occurred while loading credentials: \
                 no valid AWS credentials from vault: sealed",
            ),
            (
                "connection refused",
                SdkError::dispatch_failure(ConnectorError::io(Box::new(Plain("connection refused")))),
                Transient,
                "could not reach the endpoint: dispatch failure: io error: connection refused",
            ),
            (
                "identity cache timed out (not a provider error)",
                dispatch(Box::new(Plain("identity resolver timed out after 5s"))),
                Other,
                "could not reach the endpoint: dispatch failure: other: identity resolver timed out after 5s",
            ),
            (
                "bad request parameters",
                SdkError::construction_failure(Plain("invalid region")),
                Other,
                "failed to construct request: invalid region",
            ),
        ];
        for (what, err, kind, message) in cases {
            let e = AwsError::from_sdk("sts", "GetCallerIdentity", err);
            assert_eq!((e.kind, e.message.as_str()), (kind, message), "{what}");
            // The rule this replaced: the word "credential" anywhere in the message.
            let by_word = e.message.contains("credential");
            assert_eq!(by_word, kind == Credentials, "{what}: the classification changed for an existing case");
        }
    }

    #[test]
    fn messages_say_what_to_do() {
        let e = AwsError {
            kind: ErrorKind::AccessDenied,
            service: "elasticloadbalancing",
            operation: "RegisterTargets",
            code: Some("AccessDenied".into()),
            message: "User is not authorized".into(),
            status: Some(403),
        };
        let s = e.to_string();
        assert!(s.starts_with("elasticloadbalancing RegisterTargets failed (AccessDenied): User is not authorized"));
        assert!(s.contains("docs/iam-policy.json"));
    }
}
