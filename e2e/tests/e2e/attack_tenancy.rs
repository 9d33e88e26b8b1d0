//! The strict tenancy mode against a tenant (docs/security.md): what the policy does not grant to the
//! tenant's namespace never reaches AWS. The attacker acts only through its own ServiceAccount token
//! (real RBAC through the API server, `lbc_e2e::tenant`); the emulator's call log and STS sessions are
//! the proof.

use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams, PostParams};
use lbc_e2e::fixture::TgbScene;
use lbc_e2e::tenant::{PolicyFile, Tenant};
use lbc_e2e::unique;
use lbc_model::crd::TargetGroupBinding;

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn strict_mode_never_assumes_a_role_the_tenants_namespace_is_not_granted() {
    let Some(f) = TgbScene::setup("attack_tenancy_role", 2, false).await else { return };
    let tenant = Tenant::join(&f.client, &f.env, &f.ns).await;
    // A role under the path the IAM policy allows, in an account that trusts the controller: the
    // confused-deputy target. Granted to another team only.
    let role = format!("arn:aws:iam::222222222222:role/aws-lb-controller/{}", unique("victim"));
    let victim_tg =
        format!("arn:aws:elasticloadbalancing:us-east-1:222222222222:targetgroup/{}/0123456789abcdef", unique("v"));
    // The namespace's own target group (made by the test, without ownership tags) is granted to it.
    let policy = serde_json::json!({
        "assumeRoles": [{"namespaces": ["team-granted"], "roleArns": ["arn:aws:iam::222222222222:role/aws-lb-controller/*"]}],
        "targetGroups": [{"namespaces": [&f.ns], "arns": [&f.arn]}],
    });
    let policy_file = PolicyFile::new(&f.ns, &policy);

    // The tenant binds its own Service to the victim's target group through the role.
    let steal: TargetGroupBinding = serde_json::from_value(serde_json::json!({
        "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
        "metadata": {"name": "steal", "namespace": &f.ns},
        "spec": {"targetGroupARN": &victim_tg, "targetType": "ip", "iamRoleArnToAssume": &role,
                 "serviceRef": {"name": "web", "port": 80}},
    }))
    .unwrap();
    Api::<TargetGroupBinding>::namespaced(tenant.client.clone(), &f.ns)
        .create(&PostParams::default(), &steal)
        .await
        .expect("the tenant may create bindings in its own namespace");

    let mark = f.emu.mark().await;
    let file_flag = policy_file.flag();
    let ctl = f.controller(&["--tenancy-mode=strict", &file_flag]);
    // The controller reconciled: the namespace's own binding is registered...
    f.wait_targets("the tenant's binding to its own target group registered", &f.expected("web")).await;
    // ...and the stolen one was refused, said on the binding.
    let events: Api<Event> = Api::namespaced(f.client.clone(), &f.ns);
    let warnings = || async {
        let lp = ListParams::default().fields("involvedObject.name=steal");
        let list = events.list(&lp).await.map(|l| l.items).unwrap_or_default();
        list.into_iter().filter(|e| e.type_.as_deref() == Some("Warning")).filter_map(|e| e.message).collect::<Vec<_>>()
    };
    let mut refusal = None;
    for _ in 0..120 {
        refusal = warnings().await.into_iter().find(|m| m.contains("tenancy.policy.assumeRoles"));
        if refusal.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    let Some(refusal) = refusal else {
        let seen = warnings().await;
        let log = ctl.log_text();
        let lines: Vec<&str> = log.lines().filter(|l| l.contains("steal")).take(30).collect();
        panic!(
            "no Warning on binding steal naming the tenancy policy; its Warnings: {seen:?}\ncontroller log:\n{}",
            lines.join("\n")
        );
    };
    assert!(refusal.contains(&role) && refusal.contains(&format!("{}/steal", f.ns)), "{refusal}");
    assert!(!refusal.contains("IAM policy"), "a tenancy refusal, not an IAM problem: {refusal}");

    // Nothing reached AWS as that role, nor the victim's target group.
    let sessions = f.emu.sts_sessions().await;
    assert!(!sessions.values().any(|r| *r == role), "the controller assumed {role}: {sessions:?}");
    let (calls, _) = f.emu.calls(mark, Some(&victim_tg)).await;
    assert!(calls.is_empty(), "calls on the victim's target group: {calls:?}");
    eprintln!("[attack] strict mode refused the role on binding steal: {refusal}");

    ctl.terminate();
    f.cleanup().await;
}
