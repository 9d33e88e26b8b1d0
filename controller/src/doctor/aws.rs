//! What doctor reads from AWS: the credential source end to end, the VPC and its subnets, and one
//! read-only try of every IAM action. All through the controller's adapters and one CallRunner
//! whose write gate is always shut: a write can never leave this process.

use super::DoctorArgs;
use super::kube::Cluster;
use crate::args::{Args, CredentialsSource};
use lbc_aws::call::{CallRunner, CallTimeouts, WriteGate};
use lbc_aws::config::{ClientSettings, Endpoints, build_clients};
use lbc_aws::credentials::CredentialSource;
use lbc_aws::doctor::{ProbeTarget, Probes};
use lbc_aws::ec2::{Ec2, SdkEc2};
use lbc_aws::elbv2::{DESCRIBE_TAGS_MAX_ARNS, ElbV2, SdkElbV2};
use lbc_aws::net::{Networking, SdkNetworking, SubnetQuery};
use lbc_aws::throttle::Throttler;
use lbc_model::doctor::not_run::Blocker;
use lbc_model::doctor::{Verdict, cluster_tag, credentials, permissions, subnets, tenancy};
use lbc_model::net::VpcCidrs;
use lbc_model::vpc::VpcSource;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::time::Instant;

pub struct AwsReport {
    pub verdicts: Vec<Verdict>,
    pub vpc: Option<VpcCidrs>,
    /// Tags of the target groups the bindings name ([`Cluster::bound_target_groups`]); `None` when
    /// they could not be read.
    pub target_group_tags: Option<BTreeMap<String, lbc_model::lb::Tags>>,
    /// What the checks left out could not get (`lbc_model::doctor::not_run`).
    pub blockers: Vec<Blocker>,
}

fn setup_fail(object: &str, found: String, fix: &str) -> AwsReport {
    AwsReport {
        blockers: vec![Blocker::aws_setup(object, &found)],
        verdicts: vec![Verdict::fail("credentials", object, found, "a usable configuration", fix)],
        vpc: None,
        target_group_tags: None,
    }
}

/// Waits until the source has keys or reports its first error (no need to sit out the timeout
/// on a sealed Vault).
async fn first_answer(source: &CredentialSource, timeout: Duration) -> Result<Option<SystemTime>, String> {
    let deadline = Instant::now() + timeout;
    loop {
        let st = source.state();
        if st.is_ready() {
            return Ok(st.expires_at);
        }
        if let Some(e) = st.last_error {
            return Err(e.message);
        }
        if Instant::now() > deadline {
            return Err(format!("no keys and no error after {timeout:?}: {}", st.summary()));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn origin(args: &Args) -> String {
    match args.aws_credentials_source {
        CredentialsSource::Vault => format!(
            "Vault {} auth role {:?}, {}/{}/{}",
            args.vault_address,
            args.vault_auth_role,
            args.vault_secrets_mount,
            lbc_aws::credentials::vault::CredentialType::from(args.vault_credential_type).as_str(),
            args.vault_secrets_role
        ),
        CredentialsSource::File => {
            format!("file {} profile {}", args.aws_credentials_file, args.aws_credentials_profile)
        }
        CredentialsSource::Default => {
            let profile = std::env::var("AWS_SHARED_CREDENTIALS_FILE")
                .map(std::path::PathBuf::from)
                .ok()
                .or_else(|| std::env::var("HOME").ok().map(|h| std::path::Path::new(&h).join(".aws/credentials")));
            format!(
                "SDK default chain: {}",
                credentials::default_chain_source(&|k| std::env::var(k).ok(), profile.is_some_and(|p| p.exists()))
            )
        }
    }
}

pub async fn gather(args: &Args, d: &DoctorArgs, cluster: Option<&Cluster>) -> AwsReport {
    if args.aws_region.is_empty() {
        return setup_fail(
            "--aws-region",
            "empty".into(),
            "pass --aws-region (or AWS_REGION): the instance metadata service is never consulted",
        );
    }
    let endpoints = match Endpoints::parse(&args.aws_api_endpoints) {
        Ok(e) => e,
        Err(e) => return setup_fail("--aws-api-endpoints", e.to_string(), "fix the flag"),
    };
    let rules = match lbc_model::throttle::parse_rules(&args.aws_api_throttle) {
        Ok(r) => r,
        Err(e) => return setup_fail("--aws-api-throttle", e.to_string(), "fix the flag"),
    };
    let mut verdicts = Vec::new();
    let mut blockers = Vec::new();
    let metrics = crate::metrics::Metrics::new();
    let source = match crate::credentials::start_source(args, lbc_aws::credentials::CredentialMetrics::default()) {
        Ok(s) => s,
        Err(e) => return setup_fail("--aws-credentials-source", format!("{e:#}"), "set the flags the message names"),
    };
    let source_error = match &source {
        Some(s) => first_answer(s, d.credentials_timeout).await.err(),
        None => None,
    };
    let expires_at = source.as_ref().and_then(|s| s.state().expires_at);
    // Doctor never writes: the gate refuses every mutating call before it is sent.
    let never: WriteGate = Arc::new(|| None);
    let runner = CallRunner::with(
        Throttler::new(rules),
        metrics.aws.clone(),
        args.aws_max_retries.min(1),
        CallTimeouts { attempt: args.aws_api_attempt_timeout, operation: args.aws_api_operation_timeout },
        Some(never),
    );
    let clients = build_clients(&ClientSettings {
        region: args.aws_region.clone(),
        endpoints,
        credentials: source.as_ref().map(|s| s.provider()),
    })
    .await;
    let ec2 = SdkEc2::new(clients.ec2.clone(), runner.clone());
    let elb = SdkElbV2::new(clients.elbv2.clone(), runner.clone());
    let net = SdkNetworking::new(clients.ec2.clone(), runner.clone());
    let probes = Probes::new(clients, runner);

    let caller = if source_error.is_some() {
        Err("skipped: the source gave no keys".to_string())
    } else {
        probes.caller_identity().await.map_err(|e| e.to_string())
    };
    match (&source_error, &caller) {
        (Some(e), _) => blockers.push(Blocker::credentials(e)),
        (None, Err(e)) => blockers.push(Blocker::credentials(format!("sts:GetCallerIdentity failed: {e}"))),
        (None, Ok(_)) => {}
    }
    let now = SystemTime::now();
    verdicts.push(credentials::check(&credentials::Observed {
        source: format!("{:?}", args.aws_credentials_source).to_lowercase(),
        origin: origin(args),
        source_error,
        expires_in: expires_at.map(|t| match t.duration_since(now) {
            Ok(d) => d.as_secs() as i64,
            Err(e) => -(e.duration().as_secs() as i64),
        }),
        caller: caller.as_ref().map(|c| c.arn.clone()).map_err(Clone::clone),
    }));
    let Ok(identity) = caller else { return AwsReport { verdicts, vpc: None, blockers, target_group_tags: None } };
    let bound = cluster.map(Cluster::bound_target_groups).unwrap_or_default();
    let target_group_tags = bound_target_group_tags(&elb, &bound, &mut verdicts).await;

    // The VPC as the controller finds it: the ID, or the one VPC carrying the tags.
    let found = async {
        let source = VpcSource::from_flags(&args.aws_vpc_id, &args.aws_vpc_tags)?;
        let ids = match &source {
            VpcSource::Id(_) => Vec::new(),
            VpcSource::Tags(t) => ec2.vpcs_with_tags(t).await.map_err(|e| format!("DescribeVpcs by tags: {e}"))?,
        };
        source.pick(&ids)
    };
    let vpc_id = match found.await {
        Ok(id) => id,
        Err(why) => {
            let seen = match (args.aws_vpc_id.as_str(), args.aws_vpc_tags.as_str()) {
                ("", "") => "neither --aws-vpc-id nor --aws-vpc-tags".to_string(),
                ("", tags) => format!("--aws-vpc-tags={tags}"),
                (id, _) => format!("--aws-vpc-id={id}"),
            };
            verdicts.push(Verdict::fail("cluster-tag", "the cluster's VPC", seen, "exactly one VPC", why.clone()));
            blockers.push(Blocker::no_vpc_id(&why));
            return AwsReport { verdicts, vpc: None, blockers, target_group_tags };
        }
    };
    let args = &Args { aws_vpc_id: vpc_id, ..args.clone() };
    let vpc = match ec2
        .vpc_cidrs(&args.aws_vpc_id)
        .await
        .map_err(|e| e.to_string())
        .and_then(|c| VpcCidrs::parse(&c).map_err(|e| e.to_string()))
    {
        Ok(v) => Some(v),
        Err(e) => {
            blockers.push(Blocker::vpc_cidrs(&args.aws_vpc_id, &e));
            verdicts.push(Verdict::fail(
                "cluster-tag",
                format!("VPC {}", args.aws_vpc_id),
                format!("DescribeVpcs: {e}"),
                "the VPC exists in this region and account",
                "check --aws-vpc-id and --aws-region",
            ));
            None
        }
    };
    match net.subnets(&SubnetQuery::Vpc(args.aws_vpc_id.clone())).await {
        Ok(list) => {
            verdicts.extend(cluster_tag::check(&args.cluster_name, &args.aws_vpc_id, &list));
            let demand = cluster.map(|c| c.demand).unwrap_or_default();
            let public = route_table_reachability(args, &net, &list, &mut verdicts).await;
            verdicts.extend(subnets::check(&args.cluster_name, &args.aws_vpc_id, &list, demand, public.as_ref()));
        }
        Err(e) => {
            blockers.push(Blocker::subnets(&args.aws_vpc_id, format!("DescribeSubnets: {e}")));
            verdicts.push(Verdict::fail(
                "cluster-tag",
                format!("subnets of VPC {}", args.aws_vpc_id),
                format!("DescribeSubnets: {e}"),
                "the VPC's subnets",
                "allow ec2:DescribeSubnets (docs/iam-policy.json)",
            ))
        }
    }

    match permissions::actions(permissions::POLICY) {
        Ok(actions) => {
            let target = ProbeTarget {
                region: args.aws_region.clone(),
                account: identity.account.clone(),
                vpc_id: args.aws_vpc_id.clone(),
                cluster_name: args.cluster_name.clone(),
            };
            let mut results = Vec::new();
            for a in actions {
                let o = probes.probe(&a, &target).await;
                results.push((a, o));
            }
            verdicts.extend(permissions::check(&results));
        }
        Err(e) => {
            verdicts.push(Verdict::fail("permissions", "docs/iam-policy.json", e, "a valid policy", "report a bug"))
        }
    }
    AwsReport { verdicts, vpc, blockers, target_group_tags }
}

/// The tags of the bound target groups, for the tenancy check: one DescribeTags per 20 ARNs, one
/// by one when a batch fails (AWS fails a whole batch for one missing group; a missing group is
/// the controller's to report). `None`, with a warning, when they cannot be read.
async fn bound_target_group_tags(
    elb: &SdkElbV2,
    arns: &[String],
    verdicts: &mut Vec<Verdict>,
) -> Option<BTreeMap<String, lbc_model::lb::Tags>> {
    let mut out = BTreeMap::new();
    for chunk in arns.chunks(DESCRIBE_TAGS_MAX_ARNS) {
        if let Ok(tags) = elb.target_groups_tags(chunk).await {
            out.extend(tags);
            continue;
        }
        for arn in chunk {
            match elb.target_group_tags(arn).await {
                Ok(Some(tags)) => drop(out.insert(arn.clone(), tags)),
                Ok(None) => {}
                Err(e) => {
                    verdicts.push(Verdict::warn(
                        tenancy::CHECK,
                        format!("target group {arn}"),
                        format!("DescribeTags: {e}"),
                        "the tags of every bound target group",
                        "allow elasticloadbalancing:DescribeTags (docs/iam-policy.json)",
                    ));
                    return None;
                }
            }
        }
    }
    Some(out)
}

/// Public/private per subnet by route table, read only when discovery would classify subnets that
/// way: the gate `SubnetDiscoveryByReachability` on (ALBC's default) and a role without any usable
/// tag in the VPC. A failed read is a Warning and the check falls back to tags.
async fn route_table_reachability(
    args: &Args,
    net: &dyn Networking,
    subnets: &[lbc_model::lb::Subnet],
    verdicts: &mut Vec<Verdict>,
) -> Option<std::collections::BTreeMap<String, bool>> {
    use lbc_model::lb::subnets::{ROLE_ELB_TAG, ROLE_INTERNAL_ELB_TAG, has_usable_role_tag, reachability};
    let gate = lbc_model::compat::parse_key_bools("--feature-gates", &args.feature_gates)
        .map(|g| lbc_model::compat::assess_gates(&g).0.subnet_discovery_by_reachability)
        .unwrap_or(true);
    let untagged = |role: &str| !has_usable_role_tag(subnets, &args.aws_vpc_id, role);
    if !gate || !(untagged(ROLE_ELB_TAG) || untagged(ROLE_INTERNAL_ELB_TAG)) {
        return None;
    }
    let read = match net.route_tables(&args.aws_vpc_id).await {
        Ok(tables) => reachability(&args.aws_vpc_id, subnets.iter().map(|s| s.id.as_str()), &tables),
        Err(e) => Err(format!("DescribeRouteTables: {e}")),
    };
    read.map_err(|why| {
        verdicts.push(Verdict::warn(
            subnets::CHECK,
            format!("route tables of VPC {}", args.aws_vpc_id),
            why,
            "the VPC's route tables, to classify untagged subnets as discovery does",
            "allow ec2:DescribeRouteTables (docs/iam-policy.json), or tag the subnets with their role",
        ))
    })
    .ok()
}
