//! Backend security-group rules end to end: TargetGroupBinding `spec.networking` becomes ingress
//! rules on the security group of the pods' ENIs (the node security group the pod helper attaches,
//! tagged `kubernetes.io/cluster/<cluster>`), aggregated across bindings, revoked when no binding
//! needs them, foreign rules untouched, ambiguous ENIs reported.
//!
//! One test function on purpose: the node security group is shared, and the controller manages
//! every rule carrying `elbv2.k8s.aws/targetGroupBinding=shared` on it (as ALBC does). The other
//! suites' controllers run with the rules off (`ControllerProc::start`) so they do not fight.

use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use lbc_e2e::controller::ControllerProc;
use lbc_e2e::{Env, aws, eventually, kube_util, unique};
use lbc_model::crd::TargetGroupBinding;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::process::Command;

const OURS: &str = "elbv2.k8s.aws/targetGroupBinding=shared";

/// Runs a Python snippet against the emulator's EC2 (boto3 from the e2e venv) with `ec2` bound;
/// the snippet prints one JSON value.
fn ec2(env: &Env, script: &str) -> Value {
    let py = format!("{}/bin/python", env.get("LBC_VENV"));
    let prelude = "import boto3, json, os\n\
        ec2 = boto3.client('ec2', endpoint_url=os.environ['LBC_AWS_ENDPOINT'], region_name=os.environ['AWS_REGION'])\n";
    let out = Command::new(py).arg("-c").arg(format!("{prelude}{script}")).envs(env.vars()).output().expect("python");
    assert!(out.status.success(), "python failed: {}\n{script}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

fn create_sg(env: &Env, name: &str) -> String {
    let v = ec2(
        env,
        &format!(
            "g = ec2.create_security_group(GroupName='{name}', Description='lbc e2e', VpcId='{}')\n\
             print(json.dumps(g['GroupId']))",
            env.get("LBC_VPC_ID")
        ),
    );
    v.as_str().expect("group id").to_string()
}

/// Ingress rules of a group as `proto:from-to:source:description`.
fn rules(env: &Env, sg: &str) -> BTreeSet<String> {
    let v = ec2(
        env,
        &format!(
            "g = ec2.describe_security_groups(GroupIds=['{sg}'])['SecurityGroups'][0]\n\
             out = []\n\
             for p in g.get('IpPermissions', []):\n\
             \x20   for r in p.get('UserIdGroupPairs', []):\n\
             \x20       out.append(f\"{{p['IpProtocol']}}:{{p.get('FromPort')}}-{{p.get('ToPort')}}:{{r['GroupId']}}:{{r.get('Description', '')}}\")\n\
             \x20   for r in p.get('IpRanges', []):\n\
             \x20       out.append(f\"{{p['IpProtocol']}}:{{p.get('FromPort')}}-{{p.get('ToPort')}}:{{r['CidrIp']}}:{{r.get('Description', '')}}\")\n\
             print(json.dumps(out))"
        ),
    );
    v.as_array().expect("rules").iter().filter_map(|r| r.as_str().map(str::to_string)).collect()
}

fn ours(source: &str) -> String {
    format!("tcp:8080-8080:{source}:{OURS}")
}

/// `port`: a number, or a containerPort name resolved through the pods (`pods.py` names 8080 "http").
async fn bind(client: &Client, env: &Env, ns: &str, name: &str, from_sg: &str, port: Value) {
    let elb = aws::elbv2(env).await;
    let arn = aws::create_ip_target_group(env, &elb, &unique("tg"), 8080).await;
    let tgb: TargetGroupBinding = serde_json::from_value(json!({
        "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "targetGroupARN": arn, "targetType": "ip",
            "serviceRef": {"name": name, "port": 80},
            "networking": {"ingress": [{
                "from": [{"securityGroup": {"groupID": from_sg}}],
                "ports": [{"protocol": "TCP", "port": port}]
            }]}
        }
    }))
    .expect("binding");
    Api::<TargetGroupBinding>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &tgb)
        .await
        .expect("create binding");
}

async fn wait_rules(env: &Env, sg: &str, what: &str, ok: impl Fn(&BTreeSet<String>) -> bool) -> BTreeSet<String> {
    eventually(what, 60, || async {
        let r = rules(env, sg);
        ok(&r).then_some(r)
    })
    .await
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn networking_rules_are_aggregated_revoked_and_problems_reported() {
    let Some(env) = Env::require("backend_rules") else { return };
    let client = kube_util::client(&env).await;
    let ns = unique("backend-rules");
    let node_sg = env.get("LBC_NODE_SECURITY_GROUP_ID").to_string();
    let (sg_a, sg_b) = (create_sg(&env, &unique("lbc-e2e-src-a")), create_sg(&env, &unique("lbc-e2e-src-b")));
    // A rule someone added by hand: never touched.
    let foreign = format!("tcp:22-22:10.99.0.0/16:e2e manual {ns}");
    ec2(
        &env,
        &format!(
            "perm = {{'IpProtocol': 'tcp', 'FromPort': 22, 'ToPort': 22, 'IpRanges': [{{'CidrIp': '10.99.0.0/16'}}]}}\n\
             try:\n\
             \x20   ec2.revoke_security_group_ingress(GroupId='{node_sg}', IpPermissions=[perm])\n\
             except Exception:\n\
             \x20   pass\n\
             perm['IpRanges'][0]['Description'] = 'e2e manual {ns}'\n\
             ec2.authorize_security_group_ingress(GroupId='{node_sg}', IpPermissions=[perm])\n\
             print('null')"
        ),
    );
    for set in ["web", "api"] {
        env.pods(&["create", &ns, set, "--replicas", "2", "--port", "8080"]);
        env.pods(&["service", &ns, set, "--port", "80", "--target-port", "8080"]);
    }
    let ctl = ControllerProc::start(&env, &ns, "lbc-e2e-leader", &["--enable-backend-security-group-rules=true"]);

    // One binding: the node SG admits its source on the target port, with our description. Its port
    // is the pods' named containerPort.
    bind(&client, &env, &ns, "web", &sg_a, json!("http")).await;
    wait_rules(&env, &node_sg, "rule from source A", |r| r.contains(&ours(&sg_a))).await;

    // A second binding on the same SG: the union.
    bind(&client, &env, &ns, "api", &sg_b, json!(8080)).await;
    let r = wait_rules(&env, &node_sg, "rules from A and B", |r| r.contains(&ours(&sg_a)) && r.contains(&ours(&sg_b)))
        .await;
    assert!(r.contains(&foreign), "{r:?}");

    // Delete one binding: its rule goes, the other stays, the foreign one is untouched.
    let tgbs: Api<TargetGroupBinding> = Api::namespaced(client.clone(), &ns);
    tgbs.delete("api", &DeleteParams::default()).await.expect("delete api");
    let r = wait_rules(&env, &node_sg, "rule from B revoked", |r| !r.contains(&ours(&sg_b))).await;
    assert!(r.contains(&ours(&sg_a)) && r.contains(&foreign), "{r:?}");
    let changes = ctl.metric("awslbc_backend_sg_rule_changes_total{action=\"revoke\"}").await;
    assert!(changes.unwrap_or(0.0) >= 1.0, "revoke counted: {changes:?}");

    // An ENI with two security groups, neither tagged for the cluster: a precise Warning.
    env.pods(&["create", &ns, "multi", "--replicas", "1", "--port", "8080"]);
    env.pods(&["service", &ns, "multi", "--port", "80", "--target-port", "8080"]);
    let (sg_c, sg_d) = (create_sg(&env, &unique("lbc-e2e-eni-c")), create_sg(&env, &unique("lbc-e2e-eni-d")));
    let eni = ec2(
        &env,
        &format!(
            "n = ec2.describe_network_interfaces(Filters=[{{'Name': 'tag:lbc-e2e/set', 'Values': ['{ns}/multi']}}])\
             ['NetworkInterfaces'][0]['NetworkInterfaceId']\n\
             ec2.modify_network_interface_attribute(NetworkInterfaceId=n, Groups=['{sg_c}', '{sg_d}'])\n\
             print(json.dumps(n))"
        ),
    );
    let eni = eni.as_str().expect("eni id").to_string();
    bind(&client, &env, &ns, "multi", &sg_a, json!(8080)).await;
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), &ns);
    let note = eventually("BackendSecurityGroupRules warning on binding multi", 60, || async {
        let list = events.list(&Default::default()).await.ok()?;
        list.items
            .into_iter()
            .find(|e| {
                e.reason.as_deref() == Some("BackendSecurityGroupRules")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("multi")
            })
            .and_then(|e| e.note)
    })
    .await;
    let cluster_tag = format!("kubernetes.io/cluster/{}", env.get("LBC_CLUSTER_NAME"));
    for needle in [eni.as_str(), sg_c.as_str(), sg_d.as_str(), cluster_tag.as_str(), "Fix"] {
        assert!(note.contains(needle), "event note lacks {needle:?}: {note}");
    }
    let problems = ctl.metric("awslbc_backend_sg_rule_problems").await;
    assert!(problems.unwrap_or(0.0) >= 1.0, "problem gauge: {problems:?}");
    // Knowledge is incomplete: nothing is revoked meanwhile, the other rules stay.
    let r = rules(&env, &node_sg);
    assert!(r.contains(&ours(&sg_a)) && r.contains(&foreign), "{r:?}");

    // Every binding gone: our rules are garbage-collected, the foreign rule stays.
    for name in ["web", "multi"] {
        tgbs.delete(name, &DeleteParams::default()).await.expect("delete binding");
    }
    let r = wait_rules(&env, &node_sg, "our rules revoked", |r| !r.contains(&ours(&sg_a))).await;
    assert!(r.contains(&foreign), "{r:?}");

    ctl.terminate();
    ec2(
        &env,
        &format!(
            "ec2.revoke_security_group_ingress(GroupId='{node_sg}', IpPermissions=[{{'IpProtocol': 'tcp', \
             'FromPort': 22, 'ToPort': 22, 'IpRanges': [{{'CidrIp': '10.99.0.0/16'}}]}}])\nprint('null')"
        ),
    );
    kube_util::delete_namespace(&client, &ns).await;
}
