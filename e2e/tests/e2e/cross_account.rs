//! TargetGroupBinding `spec.iamRoleArnToAssume` / `spec.assumeRoleExternalId`: a target group of
//! another AWS account, reached through sts:AssumeRole. The emulator keeps accounts apart the way
//! AWS does (keys from AssumeRole of a role in account 222222222222 act in that account; the
//! controller's own keys cannot see its target groups), so registering there proves the role
//! was used, and the call log tells which keys signed each call.

use aws_credential_types::Credentials;
use aws_credential_types::provider::SharedCredentialsProvider;
use aws_sdk_elasticloadbalancingv2 as elbv2;
use kube::api::{Api, DeleteParams, PostParams};
use lbc_aws::config::{ClientSettings, Endpoints, build_clients};
use lbc_e2e::fixture::TgbScene;
use lbc_e2e::{aws, eventually, unique};
use lbc_model::crd::{TargetGroupBinding, TargetGroupBindingSpec};

const ROLE: &str = "arn:aws:iam::222222222222:role/lbc-e2e-shared-targets";
const EXTERNAL_ID: &str = "lbc-e2e-7f3a";

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn binding_with_a_role_registers_into_the_other_accounts_target_group() {
    let Some(f) = TgbScene::setup("cross_account", 3, false).await else { return };

    // The other account, as its owner would set it up: a VPC and an IP target group.
    let (other, owner_key) = owner_clients(&f.env).await;
    let vpc = other.ec2.create_vpc().cidr_block("10.0.0.0/16").send().await.expect("CreateVpc in the other account");
    let tg = other
        .elbv2
        .create_target_group()
        .name(unique("xacct"))
        .protocol(elbv2::types::ProtocolEnum::Tcp)
        .port(8080)
        .vpc_id(vpc.vpc().and_then(|v| v.vpc_id()).expect("vpc id"))
        .target_type(elbv2::types::TargetTypeEnum::Ip)
        .send()
        .await
        .expect("CreateTargetGroup in the other account");
    let xarn = tg.target_groups()[0].target_group_arn().expect("arn").to_string();
    assert!(xarn.contains(":222222222222:"), "{xarn}");
    f.emu.tg_health(&xarn, 1.0, "healthy").await;
    // Not visible to the controller's account: only the role can reach it.
    let own_view = f.elb.describe_target_groups().target_group_arns(&xarn).send().await;
    assert!(own_view.is_err(), "the target group must not be visible from the controller's account");

    let tgbs: Api<TargetGroupBinding> = Api::namespaced(f.client.clone(), &f.ns);
    let mut binding = TargetGroupBinding::new(
        "web-xacct",
        TargetGroupBindingSpec {
            iam_role_arn_to_assume: Some(ROLE.into()),
            assume_role_external_id: Some(EXTERNAL_ID.into()),
            ..f_binding_spec(&xarn)
        },
    );
    binding.metadata.namespace = Some(f.ns.clone());
    tgbs.create(&PostParams::default(), &binding).await.expect("create cross-account binding");

    let since = f.emu.mark().await;
    let ctl = f.controller(&[]);
    let want = f.expected("web");
    f.wait_targets("own-account binding registered", &want).await;
    eventually("the other account's target group holds the pods", 60, || async {
        (aws::registered(&other.elbv2, &xarn).await == want).then_some(())
    })
    .await;

    // Which keys signed the calls on the other account's target group: only keys from
    // sts:AssumeRole of ROLE with EXTERNAL_ID, never the controller's own.
    let sessions = f.emu.sts_sessions_with_external_ids().await;
    let (calls, _) = f.emu.calls(since, Some(&xarn)).await;
    let ours: Vec<_> = calls.iter().filter(|c| c.access_key.as_deref() != Some(owner_key.as_str())).collect();
    assert!(ours.iter().any(|c| c.operation == "RegisterTargets"), "{ours:?}");
    for c in &ours {
        let key = c.access_key.as_deref().unwrap_or_default();
        assert_ne!(key, ctl.access_key, "{} on {xarn} was signed with the controller's own key", c.operation);
        assert_eq!(
            sessions.get(key),
            Some(&(ROLE.to_string(), Some(EXTERNAL_ID.to_string()))),
            "{} on {xarn} signed with {key}, which is no AssumeRole session of {ROLE} with external ID {EXTERNAL_ID}",
            c.operation
        );
    }
    // The own-account binding kept the controller's identity.
    let (own_calls, _) = f.emu.calls(since, Some(&f.arn)).await;
    assert!(
        own_calls.iter().any(|c| c.operation == "RegisterTargets" && c.access_key.as_deref() == Some(&ctl.access_key)),
        "{own_calls:?}"
    );
    // One AssumeRole, reused (the keys are cached until they near expiry).
    let (sts, _) = f.emu.calls(since, None).await;
    let assumed =
        sts.iter().filter(|c| c.operation == "AssumeRole" && c.access_key.as_deref() == Some(&ctl.access_key));
    assert_eq!(assumed.count(), 1, "AssumeRole calls by the controller");

    // Deleting the binding deregisters from the other account, again as the role.
    tgbs.delete("web-xacct", &DeleteParams::default()).await.expect("delete binding");
    eventually("deregistered from the other account's target group", 60, || async {
        aws::registered(&other.elbv2, &xarn).await.is_empty().then_some(())
    })
    .await;
    assert_eq!(aws::registered(&f.elb, &f.arn).await, want, "the own-account binding is untouched");
    drop(ctl);
    f.cleanup().await;
}

fn f_binding_spec(arn: &str) -> TargetGroupBindingSpec {
    TargetGroupBindingSpec {
        target_group_arn: Some(arn.into()),
        target_type: Some(lbc_model::crd::TargetType::Ip),
        service_ref: lbc_model::crd::ServiceReference {
            name: "web".into(),
            port: k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(80),
        },
        ..Default::default()
    }
}

/// SDK clients on the emulator signed as the other account's owner (ROLE assumed by the
/// harness), and the access key ID they sign with (to tell the owner's calls from ours).
async fn owner_clients(env: &lbc_e2e::Env) -> (lbc_aws::config::Clients, String) {
    let settings = |creds: Credentials| ClientSettings {
        region: env.get("AWS_REGION").to_string(),
        endpoints: Endpoints::all(env.aws_endpoint()),
        credentials: Some(SharedCredentialsProvider::new(creds)),
    };
    let harness =
        build_clients(&settings(Credentials::new(aws::HARNESS_ACCESS_KEY, "testing", None, None, "e2e"))).await;
    let out = harness
        .sts
        .assume_role()
        .role_arn(ROLE)
        .external_id(EXTERNAL_ID)
        .role_session_name("lbc-e2e-owner")
        .send()
        .await
        .expect("AssumeRole by the harness");
    let c = out.credentials().expect("credentials");
    let clients = build_clients(&settings(Credentials::new(
        c.access_key_id(),
        c.secret_access_key(),
        Some(c.session_token().to_string()),
        None,
        "e2e-assumed",
    )))
    .await;
    (clients, c.access_key_id().to_string())
}
