//! TargetGroupBinding in instance mode on nodes without `spec.providerID` (issue 21): the real
//! controller resolves each node's InternalIP to the EC2 instance owning it in the VPC (the
//! emulator's instances, started with those fixed private IPs) and registers the instances on
//! the Service's NodePort; it follows node readiness, exclusion labels, deletion and new nodes,
//! warns about a node no instance owns, and deregisters everything when the binding goes.

use aws_sdk_elasticloadbalancingv2 as elbv2;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use lbc_e2e::controller::ControllerProc;
use lbc_e2e::emulator::{Emulator, writes};
use lbc_e2e::instances::{self as inst, Scene, clients};
use lbc_e2e::{Env, aws, eventually, kube_util, unique};
use lbc_model::crd::TargetGroupBinding;
use serde_json::json;
use std::collections::BTreeSet;

const SELECTOR_LABEL: &str = "lbc-e2e/instance-test";

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn instance_targets_without_provider_id_follow_the_nodes() {
    let Some(Scene { env, client, elb, aws: aws_clients, ns }) =
        Scene::new("instance_targets_without_provider_id_follow_the_nodes", "inst-tgb").await
    else {
        return;
    };
    let emu = Emulator::new(env.aws_endpoint());

    // Four instances with fixed private IPs in the first private subnet; nodes n1..n3 report the
    // first three IPs, n4 joins later with the fourth, "ghost" reports an IP no instance owns.
    let subnet = inst::private_subnet(&env, 0);
    let (mut ips, ids) = inst::run_instances(&aws_clients, &subnet, 4).await;
    // An address none of them owns (a terminated instance may hold it; the lookup skips those).
    let ghost_ip = loop {
        let ip = inst::random_ip(&aws_clients, &subnet).await;
        if !ips.contains(&ip) {
            break ip;
        }
    };
    ips.push(ghost_ip);
    let names: Vec<String> = (1..=4).map(|i| format!("{ns}-n{i}")).collect();
    let ghost = format!("{ns}-ghost");
    for (name, ip) in names.iter().zip(&ips).take(3) {
        inst::create_node(&client, name, *ip, &[(SELECTOR_LABEL, &ns)]).await;
    }
    inst::create_node(&client, &ghost, ips[4], &[(SELECTOR_LABEL, &ns)]).await;

    // A NodePort Service and an instance target group bound to it, selecting this test's nodes.
    let svc: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
    }))
    .unwrap();
    let svc = Api::<Service>::namespaced(client.clone(), &ns).create(&PostParams::default(), &svc).await.unwrap();
    let node_port = svc.spec.unwrap().ports.unwrap()[0].node_port.expect("the apiserver allocated a nodePort");
    let arn = inst::create_instance_target_group(&env, &elb, &unique("itg")).await;
    let tgb: TargetGroupBinding = serde_json::from_value(json!({
        "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"targetGroupARN": arn, "targetType": "instance", "serviceRef": {"name": "web", "port": 80},
                 "nodeSelector": {"matchLabels": {SELECTOR_LABEL: ns}}},
    }))
    .unwrap();
    let tgbs: Api<TargetGroupBinding> = Api::namespaced(client.clone(), &ns);
    tgbs.create(&PostParams::default(), &tgb).await.unwrap();

    let want = |idx: &[usize]| -> BTreeSet<String> { idx.iter().map(|i| format!("{}:{node_port}", ids[*i])).collect() };
    let wait = |what: &'static str, expected: BTreeSet<String>| {
        let (elb, arn) = (elb.clone(), arn.clone());
        async move {
            eventually(what, 60, || async {
                let got = aws::registered(&elb, &arn).await;
                (got == expected).then_some(())
            })
            .await
        }
    };

    let ctl = ControllerProc::start(&env, &ns, "lbc-e2e-leader", &[]);
    let started = std::time::Instant::now();
    wait("the 3 resolvable nodes' instances registered on the NodePort", want(&[0, 1, 2])).await;
    let first_sync = started.elapsed();

    // The ghost node: a Warning naming it, its IP and what was searched; the others registered.
    let events: Api<Event> = Api::namespaced(client.clone(), &ns);
    let note = eventually("a NodeInstanceNotFound warning", 30, || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items.into_iter().find(|e| e.reason.as_deref() == Some("NodeInstanceNotFound")).and_then(|e| e.note)
    })
    .await;
    for part in
        [ghost.clone(), ips[4].to_string(), format!("vpc-id={}", env.get("LBC_VPC_ID")), "private-ip-address".into()]
    {
        assert!(note.contains(&part), "the warning must name {part:?}: {note}");
    }

    // Node changes.
    inst::set_ready(&client, &names[0], false).await;
    wait("n1 NotReady: deregistered", want(&[1, 2])).await;
    inst::label(&client, &names[1], "node.kubernetes.io/exclude-from-external-load-balancers", "true").await;
    wait("n2 excluded by label: deregistered", want(&[2])).await;
    inst::delete_node(&client, &names[2]).await;
    inst::create_node(&client, &names[3], ips[3], &[(SELECTOR_LABEL, &ns)]).await;
    wait("n3 deleted, n4 added", want(&[3])).await;
    inst::set_ready(&client, &names[0], true).await;
    wait("n1 Ready again", want(&[0, 3])).await;

    // Settled: a reconcile that started after the last change finished; it wrote nothing.
    let mark = emu.mark().await;
    ctl.settled("targetGroupBinding", "the last node change", || kube_util::poke(&tgbs, "web")).await;
    let (calls, _) = emu.calls(mark, None).await;
    let wrote = writes(&calls, &ctl.access_key);
    assert!(wrote.is_empty(), "nothing changed, yet the controller wrote {wrote:?}");
    let status = tgbs.get("web").await.unwrap().status.expect("status");
    assert!(status.conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True"), "{status:?}");
    assert_eq!(status.registered_targets, Some(2), "{status:?}");

    // Warm restart: the checkpoint annotation stands for the last sync, so a new process with
    // nothing changed neither reads the group's registrations or tags nor writes; what it still
    // reads is shared by all bindings (the group batch for its VPC, the nodes' look-up).
    eventually("checkpoint annotation on the binding", 30, || async {
        let b = tgbs.get("web").await.ok()?;
        b.metadata.annotations?.contains_key(lbc_model::names::CHECKPOINT_ANNOTATION).then_some(())
    })
    .await;
    ctl.terminate();
    let mark = emu.mark().await;
    let ctl = ControllerProc::start(&env, &ns, "lbc-e2e-leader", &[]);
    eventually("controller ready", 30, || async { ctl.ready().await.then_some(()) }).await;
    eventually("a reconcile skipped on the checkpoint", 30, || async {
        (ctl.metric("awslbc_reconcile_skipped_checkpoint_total").await.unwrap_or(0.0) >= 1.0).then_some(())
    })
    .await;
    ctl.settled("targetGroupBinding", "the skipped reconcile", || kube_util::poke(&tgbs, "web")).await;
    let (calls, _) = emu.calls(mark, None).await;
    let per_binding: Vec<&str> = calls
        .iter()
        .filter(|c| c.access_key.as_deref() == Some(ctl.access_key.as_str()))
        .map(|c| c.operation.as_str())
        .filter(|op| !["DescribeTargetGroups", "DescribeInstances"].contains(op))
        .collect();
    assert!(per_binding.is_empty(), "a warm restart with nothing changed made per-binding calls: {per_binding:?}");

    // Deleting the binding deregisters every instance, then the finalizer lets go.
    tgbs.delete("web", &DeleteParams::default()).await.unwrap();
    eventually("binding deleted", 60, || async { tgbs.get_opt("web").await.ok()?.is_none().then_some(()) }).await;
    assert!(aws::registered(&elb, &arn).await.is_empty(), "instance targets left behind after deletion");
    println!("instance mode: first sync of 3 nodes (+1 unresolvable) took {first_sync:?}");

    ctl.terminate();
    inst::clean_up(&client, &aws_clients, names.iter().chain([&ghost]), &ids, &ns).await;
}

/// A Service → NLB and an Ingress → ALB in instance mode (issue 21, second slice), on nodes
/// without `providerID`: the controller builds target groups of type instance on the Services'
/// NodePorts, its bindings (targetType instance, nodeSelector from `target-node-labels`) register
/// the selected nodes' instances, and deleting the Service and the Ingress removes the target
/// groups.
#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn services_and_ingresses_in_instance_mode_register_the_nodes_on_the_node_port() {
    use k8s_openapi::api::networking::v1::Ingress;
    let Some(Scene { env, client, elb, aws: aws_clients, ns }) =
        Scene::new("services_and_ingresses_in_instance_mode_register_the_nodes_on_the_node_port", "inst-svc").await
    else {
        return;
    };

    // Three instances; nodes n1, n2 carry this test's label, n3 does not (target-node-labels
    // leaves it out even though its instance resolves).
    let subnet = inst::private_subnet(&env, 0);
    let (ips, ids) = inst::run_instances(&aws_clients, &subnet, 3).await;
    let names: Vec<String> = (1..=3).map(|i| format!("{ns}-n{i}")).collect();
    for (i, (name, ip)) in names.iter().zip(&ips).enumerate() {
        let labels: &[(&str, &str)] = if i < 2 { &[(SELECTOR_LABEL, &ns)] } else { &[] };
        inst::create_node(&client, name, *ip, labels).await;
    }
    let node_labels = format!("{SELECTOR_LABEL}={ns}");

    let services: Api<Service> = Api::namespaced(client.clone(), &ns);
    let nlb: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web-nlb", "namespace": ns, "annotations": {
            "service.beta.kubernetes.io/aws-load-balancer-type": "external",
            "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "instance",
            "service.beta.kubernetes.io/aws-load-balancer-target-node-labels": node_labels,
        }},
        "spec": {"type": "LoadBalancer", "selector": {"app": "web"},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]},
    }))
    .unwrap();
    let nlb = services.create(&PostParams::default(), &nlb).await.unwrap();
    let nlb_port =
        nlb.spec.clone().unwrap().ports.unwrap()[0].node_port.expect("a nodePort for the LoadBalancer Service");
    let backend: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web-alb", "namespace": ns},
        "spec": {"type": "NodePort", "selector": {"app": "web"},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]},
    }))
    .unwrap();
    let backend = services.create(&PostParams::default(), &backend).await.unwrap();
    let alb_port = backend.spec.unwrap().ports.unwrap()[0].node_port.expect("a nodePort");
    let ingresses: Api<Ingress> = Api::namespaced(client.clone(), &ns);
    let ing: Ingress = serde_json::from_value(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "web", "namespace": ns, "annotations": {
            "kubernetes.io/ingress.class": "alb",
            "alb.ingress.kubernetes.io/scheme": "internet-facing",
            "alb.ingress.kubernetes.io/target-type": "instance",
            "alb.ingress.kubernetes.io/target-node-labels": node_labels,
        }},
        "spec": {"rules": [{"http": {"paths": [{"path": "/", "pathType": "Prefix",
            "backend": {"service": {"name": "web-alb", "port": {"number": 80}}}}]}}]},
    }))
    .unwrap();
    ingresses.create(&PostParams::default(), &ing).await.unwrap();

    // A Service in instance mode without node ports: a precise Warning, nothing built.
    let mut no_ports = nlb.clone();
    no_ports.metadata = kube::api::ObjectMeta {
        name: Some("no-node-ports".into()),
        annotations: no_ports.metadata.annotations.clone(),
        ..Default::default()
    };
    let spec = no_ports.spec.as_mut().unwrap();
    spec.allocate_load_balancer_node_ports = Some(false);
    spec.cluster_ip = None;
    spec.cluster_ips = None;
    spec.ports.as_mut().unwrap()[0].node_port = None;
    services.create(&PostParams::default(), &no_ports).await.unwrap();

    let ctl = ControllerProc::start(&env, &ns, "lbc-e2e-inst-svc", &[]);
    let started = std::time::Instant::now();
    let want = |port: i32| -> BTreeSet<String> { ids[..2].iter().map(|id| format!("{id}:{port}")).collect() };
    let stacks = [("service.k8s.aws/stack", "NLB", nlb_port), ("ingress.k8s.aws/stack", "ALB", alb_port)];
    for (tag, what, port) in stacks {
        let stack = format!("{ns}/web{}", if what == "NLB" { "-nlb" } else { "" });
        let expected = want(port);
        let arn = eventually(what, 120, || async {
            let (_, tgs) = aws::stack_arns(&elb, tag, &stack).await;
            let [arn] = tgs.as_slice() else { return None };
            (aws::registered(&elb, arn).await == expected).then(|| arn.clone())
        })
        .await;
        let tg = elb.describe_target_groups().target_group_arns(&arn).send().await.unwrap();
        let tg = &tg.target_groups()[0];
        assert_eq!(tg.target_type().map(|t| t.as_str()), Some("instance"), "{what}: {tg:?}");
        assert_eq!(tg.port(), Some(port), "{what}: the target group's port is the NodePort");
        println!("instance mode {what}: n1, n2 registered on NodePort {port} after {:?}", started.elapsed());
    }

    let events: Api<Event> = Api::namespaced(client.clone(), &ns);
    let note = eventually("a FailedBuildModel warning on no-node-ports", 60, || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items
            .into_iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("no-node-ports"))
            .find(|e| e.reason.as_deref() == Some("FailedBuildModel"))
            .and_then(|e| e.note)
    })
    .await;
    assert!(
        note.contains("Service port 80 has no nodePort because spec.allocateLoadBalancerNodePorts is false"),
        "{note}"
    );
    let (lbs, tgs) = aws::stack_arns(&elb, "service.k8s.aws/stack", &format!("{ns}/no-node-ports")).await;
    assert!(lbs.is_empty() && tgs.is_empty(), "nothing built for no-node-ports: {lbs:?} {tgs:?}");
    services.delete("no-node-ports", &DeleteParams::default()).await.unwrap();

    // Deletion cleans up: the target groups (and load balancers) go.
    services.delete("web-nlb", &DeleteParams::default()).await.unwrap();
    ingresses.delete("web", &DeleteParams::default()).await.unwrap();
    for (tag, what, _) in stacks {
        let stack = format!("{ns}/web{}", if what == "NLB" { "-nlb" } else { "" });
        eventually(what, 120, || async {
            let (lbs, tgs) = aws::stack_arns(&elb, tag, &stack).await;
            (lbs.is_empty() && tgs.is_empty()).then_some(())
        })
        .await;
    }

    ctl.terminate();
    inst::clean_up(&client, &aws_clients, &names, &ids, &ns).await;
}

/// Backend security-group rules for instance targets (issue 21 item 3): a controller posing as a
/// test-only cluster, with backend rules and the backend security group on; two instances whose
/// ENIs carry a fresh group tagged for that cluster, and nodes reporting their IPs. A Service in
/// instance mode opens its NodePort on that group to the backend group (the rule the fast tests
/// expect), and deleting the Service revokes it. A hand-made rule on the group and every rule of
/// the shared e2e node group stay as they were. Clean-up runs also when an assertion fails.
#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn instance_targets_open_the_node_port_on_the_nodes_security_group_and_revoke_it() {
    use futures::FutureExt;
    use lbc_aws::net::{Networking, SecurityGroupQuery};
    use lbc_model::lb::backend_rules::RULE_DESCRIPTION;
    use lbc_model::lb::backend_sg::lookup_tags;
    use lbc_model::lb::{IngressRule, RuleSource};
    let test = "instance_targets_open_the_node_port_on_the_nodes_security_group_and_revoke_it";
    let Some(Scene { env, client, elb, aws: aws_clients, ns }) = Scene::new(test, "inst-sg").await else { return };
    let net = aws::networking(&env).await;
    // A cluster name of its own: the controller manages rules only on groups tagged for it.
    let cluster = format!("isg-{}", ns.rsplit('-').next().unwrap_or("x"));
    let vpc = env.get("LBC_VPC_ID").to_string();
    let node_sg = inst::create_cluster_security_group(&net, &vpc, &unique("lbc-e2e-inst-nodes"), &cluster).await;
    let shared_sg = env.get("LBC_NODE_SECURITY_GROUP_ID").to_string();
    let shared_before = inst::ingress_rules(&net, &shared_sg).await;
    // A rule someone added by hand on the nodes' group: never touched.
    let manual = IngressRule {
        protocol: "tcp".into(),
        from_port: 22,
        to_port: 22,
        source: RuleSource::Cidr("10.99.0.0/16".into()),
        description: Some(format!("e2e manual {ns}")),
    };
    net.authorize_ingress(&node_sg, std::slice::from_ref(&manual)).await.expect("authorize the manual rule");
    let manual = format!("tcp:22-22:10.99.0.0/16:e2e manual {ns}");

    let subnet = env.get("LBC_PRIVATE_SUBNET_IDS").split(',').next().expect("a private subnet").to_string();
    let (ips, ids) = inst::run_instances_in(&aws_clients, &subnet, 2, std::slice::from_ref(&node_sg)).await;
    let names: Vec<String> = (1..=2).map(|i| format!("{ns}-n{i}")).collect();
    for (name, ip) in names.iter().zip(&ips) {
        inst::create_node(&client, name, *ip, &[(SELECTOR_LABEL, &ns)]).await;
    }
    let ctl = ControllerProc::start(
        &env,
        &ns,
        "lbc-e2e-inst-sg",
        &[
            &format!("--cluster-name={cluster}"),
            "--enable-backend-security-group=true",
            "--enable-backend-security-group-rules=true",
        ],
    );
    let services: Api<Service> = Api::namespaced(client.clone(), &ns);

    let body = async {
        let svc: Service = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": ns, "annotations": {
                "service.beta.kubernetes.io/aws-load-balancer-type": "external",
                "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "instance",
                "service.beta.kubernetes.io/aws-load-balancer-target-node-labels": format!("{SELECTOR_LABEL}={ns}"),
                // The subnets carry the e2e cluster's tag, not this one's: name them.
                "service.beta.kubernetes.io/aws-load-balancer-subnets": "lbc-e2e-private-a,lbc-e2e-private-b",
            }},
            "spec": {"type": "LoadBalancer", "selector": {"app": "web"},
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]},
        }))
        .unwrap();
        let svc = services.create(&PostParams::default(), &svc).await.expect("create Service web");
        let node_port = svc.spec.unwrap().ports.unwrap()[0].node_port.expect("a nodePort for the LoadBalancer Service");

        // The backend group the controller created for this cluster, attached to the NLB.
        let backend = eventually("the backend security group of the test cluster", 120, || async {
            let q = SecurityGroupQuery::Tags { vpc_id: Some(vpc.clone()), tags: lookup_tags(&cluster) };
            let groups = net.security_groups(&q).await.ok()?;
            let [g] = groups.as_slice() else { return None };
            Some(g.id.clone())
        })
        .await;
        let lb = eventually("the NLB of web", 120, || async {
            let (lbs, _) = aws::stack_arns(&elb, "service.k8s.aws/stack", &format!("{ns}/web")).await;
            lbs.into_iter().next()
        })
        .await;
        let d = elb.describe_load_balancers().load_balancer_arns(&lb).send().await.unwrap();
        let lb_groups = d.load_balancers()[0].security_groups().to_vec();
        assert!(lb_groups.contains(&backend), "the NLB carries backend group {backend}: {lb_groups:?}");

        // The NodePort, TCP, from the backend group, with the shared-rule description; nothing else.
        let ours = format!("tcp:{node_port}-{node_port}:{backend}:{RULE_DESCRIPTION}");
        let want = BTreeSet::from([manual.clone(), ours.clone()]);
        let got = eventually("the NodePort rule on the nodes' group", 120, || async {
            let r = inst::ingress_rules(&net, &node_sg).await;
            r.contains(&ours).then_some(r)
        })
        .await;
        assert_eq!(got, want, "nodes' group {node_sg}: the NodePort rule from the backend group and the manual rule");
        assert_eq!(inst::ingress_rules(&net, &shared_sg).await, shared_before, "the shared node group {shared_sg}");

        // The Service goes: its rule is revoked, the manual rule stays.
        services.delete("web", &DeleteParams::default()).await.expect("delete Service web");
        let got = eventually("the NodePort rule revoked", 120, || async {
            let r = inst::ingress_rules(&net, &node_sg).await;
            (!r.contains(&ours)).then_some(r)
        })
        .await;
        assert_eq!(got, BTreeSet::from([manual.clone()]), "nodes' group {node_sg} after the Service's deletion");
        eventually("Service web gone", 120, || async { services.get_opt("web").await.ok()?.is_none().then_some(()) })
            .await;
        assert_eq!(inst::ingress_rules(&net, &shared_sg).await, shared_before, "the shared node group {shared_sg}");
        // The backend group goes once no rule names it (EC2 refuses to delete it before: the
        // emulator too), on the release's next look (every 10 s).
        eventually("the backend group deleted", 60, || async {
            let q = SecurityGroupQuery::Tags { vpc_id: Some(vpc.clone()), tags: lookup_tags(&cluster) };
            net.security_groups(&q).await.ok()?.is_empty().then_some(())
        })
        .await;
    };
    let outcome = std::panic::AssertUnwindSafe(body).catch_unwind().await;

    // Clean-up, also after a failed assertion: the Service through the still-running controller
    // (load balancer, backend group, finalizer), then the nodes, instances, group and namespace.
    if services.delete("web", &DeleteParams::default()).await.is_ok() {
        let gone = || async { services.get_opt("web").await.ok()?.is_none().then_some(()) };
        for _ in 0..120 {
            if gone().await.is_some() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        }
    }
    ctl.terminate();
    inst::clean_up(&client, &aws_clients, &names, &ids, &ns).await;
    inst::delete_security_group(&net, &node_sg).await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// The AWS adapters of instance mode against the emulator: the batched private-IP lookup (one
/// DescribeInstances, VPC and instance state filtered) and instance-target writes keyed by
/// (instance id, port).
#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn instance_lookup_and_instance_target_writes_against_the_emulator() {
    use lbc_aws::elbv2::{ElbV2, SdkElbV2};
    use lbc_aws::instances::{InstanceLookup, SdkInstanceLookup};
    use lbc_model::nodes::InstanceTarget;
    use lbc_model::target::HealthState;

    let Some(env) = Env::require("instance_lookup_and_instance_target_writes_against_the_emulator") else { return };
    let emu = Emulator::new(env.aws_endpoint());
    let aws_clients = clients(&env).await;
    let runner = lbc_aws::call::CallRunner::new(
        lbc_aws::throttle::Throttler::new(lbc_model::throttle::default_rules()),
        lbc_aws::metrics::AwsMetrics::default(),
        0,
    );
    let lookup = SdkInstanceLookup::new(aws_clients.ec2.clone(), runner.clone());
    let vpc = env.get("LBC_VPC_ID");
    let subnet = inst::private_subnet(&env, 1);
    let (mut ips, ids) = inst::run_instances(&aws_clients, &subnet, 3).await;
    ips.push(loop {
        let ip = inst::random_ip(&aws_clients, &subnet).await;
        if !ips.contains(&ip) {
            break ip;
        }
    });
    let asked: Vec<std::net::IpAddr> = ips.iter().map(|ip| (*ip).into()).collect();

    let mark = emu.mark().await;
    let found = lookup.instances_by_private_ip(vpc, &asked).await.unwrap();
    let want: std::collections::BTreeMap<std::net::IpAddr, String> =
        asked.iter().take(3).copied().zip(ids.iter().cloned()).collect();
    let found_ids: std::collections::BTreeMap<std::net::IpAddr, String> =
        found.iter().map(|(ip, i)| (*ip, i.id.clone())).collect();
    assert_eq!(found_ids, want, "the three instances by their IPs; the fourth IP is owned by none");
    // What the cross-check compares: the subnet's zone and an EC2 IP name for the address.
    let zone = subnet_zone(&aws_clients, &subnet).await;
    for (ip, i) in &found {
        assert_eq!(i.zone.as_deref(), Some(zone.as_str()), "{ip}: Placement.AvailabilityZone is the subnet's: {i:?}");
        let dns = i.private_dns_name.as_deref().unwrap_or_default();
        let label = format!("ip-{}", ip.to_string().replace('.', "-"));
        assert_eq!(lbc_model::nodes::ec2_host_label(dns), Some(label.as_str()), "{ip}: PrivateDnsName {dns:?}");
    }
    let (calls, _) = emu.calls(mark, None).await;
    let describes = calls.iter().filter(|c| c.operation == "DescribeInstances").count();
    assert_eq!(describes, 1, "one call for four IPs: {calls:?}");

    let elsewhere = lookup.instances_by_private_ip("vpc-00000000000000000", &asked).await.unwrap();
    assert!(elsewhere.is_empty(), "the VPC filter applies: {elsewhere:?}");
    inst::terminate(&aws_clients, &ids[2..]).await;
    let after = lookup.instances_by_private_ip(vpc, &asked).await.unwrap();
    assert_eq!(after.len(), 2, "a terminated instance owns no IP: {after:?}");

    let elb = SdkElbV2::new(aws_clients.elbv2.clone(), runner.clone());
    let arn = inst::create_instance_target_group(&env, &aws::elbv2(&env).await, &unique("itg")).await;
    let targets =
        [InstanceTarget::new(&ids[0], 30080), InstanceTarget::new(&ids[1], 30080), InstanceTarget::new(&ids[1], 30081)];
    elb.write_instance_targets(&arn, &targets, true).await.unwrap();
    let mut got = elb.describe_instance_targets(&arn).await.unwrap();
    got.sort_by(|a, b| a.0.cmp(&b.0));
    let mut sorted = targets.to_vec();
    sorted.sort();
    assert_eq!(
        got.iter().map(|(t, _)| t.clone()).collect::<Vec<_>>(),
        sorted,
        "the same instance on two ports is two targets"
    );
    elb.write_instance_targets(&arn, &targets[..1], false).await.unwrap();
    let got = elb.describe_instance_targets(&arn).await.unwrap();
    let drained: Vec<_> = got.iter().filter(|(_, h)| h.state.is_draining()).map(|(t, _)| t.clone()).collect();
    assert_eq!(drained, targets[..1], "the deregistered target drains: {got:?}");
    assert!(got.iter().all(|(_, h)| h.state != HealthState::Unavailable), "{got:?}");
    elb.write_instance_targets(&arn, &targets[1..], false).await.unwrap();
    inst::terminate(&aws_clients, &ids).await;
}

/// The availability zone of `subnet_id`.
async fn subnet_zone(aws: &lbc_aws::config::Clients, subnet_id: &str) -> String {
    let out = aws.ec2.describe_subnets().subnet_ids(subnet_id).send().await.expect("DescribeSubnets");
    out.subnets()[0].availability_zone().expect("the subnet's zone").to_string()
}

/// The cross-check of issue 21 end to end: two nodes without providerID report the IPs of two
/// instances in the same subnet; one carries the subnet's zone as its
/// `topology.kubernetes.io/zone` label, the other another zone. Only the first is registered,
/// a `NodeInstanceMismatch` Warning names the other node, its IP, its instance, the zone seen and
/// the zone expected; correcting the label registers it.
#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn a_node_whose_zone_disagrees_with_its_instance_is_left_out_and_warned_about() {
    let Some(Scene { env, client, elb, aws: aws_clients, ns }) =
        Scene::new("a_node_whose_zone_disagrees_with_its_instance_is_left_out_and_warned_about", "inst-zone").await
    else {
        return;
    };

    let subnet = inst::private_subnet(&env, 0);
    let zone = subnet_zone(&aws_clients, &subnet).await;
    // Another zone of the same region: the last letter moved on.
    let wrong = format!("{}{}", &zone[..zone.len() - 1], if zone.ends_with('a') { 'b' } else { 'a' });
    let (ips, ids) = inst::run_instances(&aws_clients, &subnet, 2).await;
    let names: Vec<String> = (1..=2).map(|i| format!("{ns}-n{i}")).collect();
    let zone_label = lbc_model::nodes::ZONE_LABEL;
    inst::create_node(&client, &names[0], ips[0], &[(SELECTOR_LABEL, &ns), (zone_label, &zone)]).await;
    inst::create_node(&client, &names[1], ips[1], &[(SELECTOR_LABEL, &ns), (zone_label, &wrong)]).await;

    let (node_port, arn) = inst::service_and_binding(&env, &client, &elb, &ns, SELECTOR_LABEL, json!({})).await;
    let tgbs: Api<TargetGroupBinding> = Api::namespaced(client.clone(), &ns);

    let ctl = ControllerProc::start(&env, &ns, "lbc-e2e-inst-zone", &[]);
    let want = |idx: &[usize]| -> BTreeSet<String> { idx.iter().map(|i| format!("{}:{node_port}", ids[*i])).collect() };
    let first = want(&[0]);
    eventually("n1 registered, n2 left out", 60, || async {
        (aws::registered(&elb, &arn).await == first).then_some(())
    })
    .await;
    let events: Api<Event> = Api::namespaced(client.clone(), &ns);
    let note = eventually("a NodeInstanceMismatch warning", 30, || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items.into_iter().find(|e| e.reason.as_deref() == Some("NodeInstanceMismatch")).and_then(|e| e.note)
    })
    .await;
    for part in [
        format!("node {} (InternalIP {}) resolved to instance {}", names[1], ips[1], ids[1]),
        format!("label {zone_label}={wrong}, but the instance is in availability zone {zone}"),
        "Fix:".to_string(),
    ] {
        assert!(note.contains(&part), "the warning must say {part:?}: {note}");
    }
    assert!(!note.contains(&format!("node {} ", names[0])), "n1 agrees with its instance: {note}");
    assert_eq!(aws::registered(&elb, &arn).await, first, "n2 still left out after the Warning");

    inst::label(&client, &names[1], zone_label, &zone).await;
    let both = want(&[0, 1]);
    eventually("n2's label corrected: registered", 60, || async {
        (aws::registered(&elb, &arn).await == both).then_some(())
    })
    .await;

    tgbs.delete("web", &DeleteParams::default()).await.unwrap();
    eventually("binding deleted", 60, || async { tgbs.get_opt("web").await.ok()?.is_none().then_some(()) }).await;
    ctl.terminate();
    inst::clean_up(&client, &aws_clients, &names, &ids, &ns).await;
}

/// A multi-cluster target group in instance mode (issue 21): another cluster's instance,
/// registered straight in the emulator, shares the group. The binding registers its two nodes'
/// instances, records them in ConfigMap `aws-lbc-targets-web`, deregisters only its own when a
/// node goes NotReady and when the binding is deleted; the other cluster's instance stays.
#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn a_multi_cluster_instance_binding_leaves_another_clusters_instance_alone() {
    use k8s_openapi::api::core::v1::ConfigMap;
    let Some(Scene { env, client, elb, aws: aws_clients, ns }) =
        Scene::new("a_multi_cluster_instance_binding_leaves_another_clusters_instance_alone", "inst-multi").await
    else {
        return;
    };

    // Three instances: n1 and n2 are this cluster's nodes, the third is another cluster's.
    let subnet = inst::private_subnet(&env, 0);
    let (ips, ids) = inst::run_instances(&aws_clients, &subnet, 3).await;
    let names: Vec<String> = (1..=2).map(|i| format!("{ns}-n{i}")).collect();
    for (name, ip) in names.iter().zip(&ips) {
        inst::create_node(&client, name, *ip, &[(SELECTOR_LABEL, &ns)]).await;
    }
    let extra = json!({"multiClusterTargetGroup": true});
    let (node_port, arn) = inst::service_and_binding(&env, &client, &elb, &ns, SELECTOR_LABEL, extra).await;
    let foreign = elbv2::types::TargetDescription::builder().id(&ids[2]).port(node_port).build();
    elb.register_targets().target_group_arn(&arn).targets(foreign).send().await.expect("RegisterTargets (foreign)");
    let tgbs: Api<TargetGroupBinding> = Api::namespaced(client.clone(), &ns);
    let want = |idx: &[usize]| -> BTreeSet<String> { idx.iter().map(|i| format!("{}:{node_port}", ids[*i])).collect() };
    let wait = |what: &'static str, expected: BTreeSet<String>| {
        let (elb, arn) = (elb.clone(), arn.clone());
        async move { eventually(what, 60, || async { (aws::registered(&elb, &arn).await == expected).then_some(()) }).await }
    };

    let ctl = ControllerProc::start(&env, &ns, "lbc-e2e-inst-multi", &[]);
    wait("n1, n2 registered beside the other cluster's instance", want(&[0, 1, 2])).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let recorded = |expected: String| {
        let cms = cms.clone();
        async move {
            eventually("the owned set recorded", 30, || async {
                let cm = cms.get_opt("aws-lbc-targets-web").await.ok()??;
                let got = cm.data?.remove("targets")?;
                (got == expected).then_some(())
            })
            .await
        }
    };
    let mut ours = [format!("{}:{node_port}", ids[0]), format!("{}:{node_port}", ids[1])];
    ours.sort();
    recorded(ours.join(",")).await;

    inst::set_ready(&client, &names[0], false).await;
    wait("n1 NotReady: only it deregistered", want(&[1, 2])).await;
    recorded(format!("{}:{node_port}", ids[1])).await;

    tgbs.delete("web", &DeleteParams::default()).await.unwrap();
    eventually("binding deleted", 60, || async { tgbs.get_opt("web").await.ok()?.is_none().then_some(()) }).await;
    assert_eq!(aws::registered(&elb, &arn).await, want(&[2]), "the other cluster's instance survives the deletion");
    assert!(cms.get_opt("aws-lbc-targets-web").await.unwrap().is_none(), "the owned-set ConfigMap is deleted");

    ctl.terminate();
    inst::clean_up(&client, &aws_clients, &names, &ids, &ns).await;
}

/// Per-operation counts of `ctl`'s calls in the emulator's log after `mark` that arrived by
/// `until` (Unix seconds): from controller start to convergence, not the periodic syncs after it.
async fn calls_by_operation(
    emu: &Emulator,
    mark: u64,
    ctl: &ControllerProc,
    until: f64,
) -> (std::collections::BTreeMap<String, u64>, Vec<lbc_e2e::emulator::Call>) {
    let (calls, _) = emu.calls(mark, None).await;
    let mine: Vec<_> = calls
        .into_iter()
        .filter(|c| c.access_key.as_deref() == Some(ctl.access_key.as_str()))
        .filter(|c| c.received <= until)
        .collect();
    let mut by_op = std::collections::BTreeMap::new();
    for c in &mine {
        *by_op.entry(c.operation.clone()).or_insert(0u64) += 1;
    }
    (by_op, mine)
}

fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock after 1970").as_secs_f64()
}

/// Benchmark (issue 21), not a timed assertion: cold start of a TargetGroupBinding in instance
/// mode over 100 nodes without `providerID`, each reporting the private IP of an emulator instance.
/// Measures controller start → all 100 instance ids registered on the NodePort (DescribeTargetHealth
/// polled every 0.2 s) and the controller's AWS calls by operation over that window, against a floor:
/// DescribeInstances ⌈100/200⌉ = 1 (one batched private-IP lookup), RegisterTargets ⌈100/200⌉ = 1,
/// plus the binding's fixed reads, i.e. what a 1-node cold start of the same binding needs (measured
/// first in this test, with its own controller, target group and binding). Asserts only the
/// deterministic parts: every node registered exactly once, DescribeInstances and RegisterTargets at
/// their floors. Prints `BENCH instance_cold_start ...` (docs/benchmarks.md).
#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn instance_mode_cold_start_at_100_nodes_benchmark() {
    const NODES: usize = 100;
    const BATCH: usize = 200; // IPs per DescribeInstances, targets per RegisterTargets
    let Some(Scene { env, client, elb, aws: aws_clients, ns }) =
        Scene::new("instance_mode_cold_start_at_100_nodes_benchmark", "inst-bench").await
    else {
        return;
    };
    let emu = Emulator::new(env.aws_endpoint());

    // 1 + NODES instances with fixed private IPs, spread over the private subnets (the emulator
    // never frees an address, so repeated runs need the room).
    let subnets: Vec<String> = env.get("LBC_PRIVATE_SUBNET_IDS").split(',').map(str::to_string).collect();
    let (mut ips, mut ids) = (Vec::new(), Vec::new());
    for i in 0..=NODES {
        let (ip, id) = inst::run_instance(&aws_clients, &subnets[i % subnets.len()]).await;
        ips.push(ip);
        ids.push(id);
    }

    let svc: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
    }))
    .unwrap();
    let svc = Api::<Service>::namespaced(client.clone(), &ns).create(&PostParams::default(), &svc).await.unwrap();
    let node_port = svc.spec.unwrap().ports.unwrap()[0].node_port.expect("the apiserver allocated a nodePort");
    let tgbs: Api<TargetGroupBinding> = Api::namespaced(client.clone(), &ns);
    let binding = |name: &str, arn: &str, selector: &str| -> TargetGroupBinding {
        serde_json::from_value(json!({
            "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"targetGroupARN": arn, "targetType": "instance", "serviceRef": {"name": "web", "port": 80},
                     "nodeSelector": {"matchLabels": {SELECTOR_LABEL: selector}}},
        }))
        .unwrap()
    };
    let want =
        |idx: std::ops::Range<usize>| -> BTreeSet<String> { idx.map(|i| format!("{}:{node_port}", ids[i])).collect() };
    // Start → every expected target registered, polled at 0.2 s (`eventually`); returns the
    // elapsed time and the Unix time of convergence.
    let cold_start = |lease: &'static str, arn: String, expected: BTreeSet<String>| {
        let (env, elb, emu, ns) = (&env, elb.clone(), emu.clone(), ns.clone());
        async move {
            let mark = emu.mark().await;
            let ctl = ControllerProc::start(env, &ns, lease, &[]);
            let started = std::time::Instant::now();
            let what = format!("{} instance targets registered on the NodePort of {arn}", expected.len());
            eventually(&what, 180, || async { (aws::registered(&elb, &arn).await == expected).then_some(()) }).await;
            let elapsed = started.elapsed();
            let converged_at = unix_now();
            let (by_op, calls) = calls_by_operation(&emu, mark, &ctl, converged_at).await;
            (ctl, elapsed, by_op, calls)
        }
    };

    // The fixed reads: a 1-node cold start of the same kind of binding.
    let one = format!("{ns}-one");
    inst::create_node(&client, &one, ips[0], &[(SELECTOR_LABEL, &one)]).await;
    let arn_one = inst::create_instance_target_group(&env, &elb, &unique("itg1")).await;
    tgbs.create(&PostParams::default(), &binding("one", &arn_one, &one)).await.unwrap();
    let (ctl, one_s, one_calls, _) = cold_start("lbc-e2e-bench-one", arn_one.clone(), want(0..1)).await;
    tgbs.delete("one", &DeleteParams::default()).await.unwrap();
    eventually("binding one deleted", 60, || async { tgbs.get_opt("one").await.ok()?.is_none().then_some(()) }).await;
    ctl.terminate();

    // The benchmark: NODES nodes, all present before the controller starts.
    let names: Vec<String> = (1..=NODES).map(|i| format!("{ns}-n{i}")).collect();
    for (name, ip) in names.iter().zip(&ips[1..]) {
        inst::create_node(&client, name, *ip, &[(SELECTOR_LABEL, &ns)]).await;
    }
    let arn = inst::create_instance_target_group(&env, &elb, &unique("itg")).await;
    tgbs.create(&PostParams::default(), &binding("bench", &arn, &ns)).await.unwrap();
    let (ctl, elapsed, by_op, calls) = cold_start("lbc-e2e-bench-100", arn.clone(), want(1..NODES + 1)).await;

    // Floor: the 1-node run's fixed reads, with the two batched operations at ⌈NODES/200⌉.
    let mut floor = one_calls.clone();
    floor.insert("DescribeInstances".into(), NODES.div_ceil(BATCH) as u64);
    floor.insert("RegisterTargets".into(), NODES.div_ceil(BATCH) as u64);
    let fmt = |m: &std::collections::BTreeMap<String, u64>| {
        format!("{{{}}}", m.iter().map(|(k, v)| format!("{k}:{v}")).collect::<Vec<_>>().join(","))
    };
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let line = format!(
        "BENCH instance_cold_start nodes={NODES} converged_s={:.2} calls={} floor={} \
         (floor = 1-node cold start {} in {:.2}s, DescribeInstances and RegisterTargets at ceil({NODES}/{BATCH}); \
         loadavg {})",
        elapsed.as_secs_f64(),
        fmt(&by_op),
        fmt(&floor),
        fmt(&one_calls),
        one_s.as_secs_f64(),
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    );
    println!("{line}");
    eprintln!("{line}");

    // Deterministic parts only.
    let registered: u64 = calls.iter().filter(|c| c.operation == "RegisterTargets").filter_map(|c| c.targets).sum();
    assert_eq!(
        registered,
        NODES as u64,
        "binding bench: RegisterTargets carried {registered} targets in all, expected each of the {NODES} nodes' \
         instances once ({:?}); log {}",
        calls.iter().filter(|c| c.operation == "RegisterTargets").collect::<Vec<_>>(),
        ctl.log.display()
    );
    let all = elb.describe_target_health().target_group_arn(&arn).send().await.expect("DescribeTargetHealth");
    assert_eq!(
        all.target_health_descriptions().len(),
        NODES,
        "target group {arn}: {} targets, expected one per node ({NODES})",
        all.target_health_descriptions().len()
    );
    for op in ["DescribeInstances", "RegisterTargets"] {
        let got = by_op.get(op).copied().unwrap_or(0);
        assert_eq!(
            got,
            floor[op],
            "{op}: {got} calls from start to convergence over {NODES} nodes, floor {} (batches of {BATCH}); \
             log {}",
            floor[op],
            ctl.log.display()
        );
    }

    tgbs.delete("bench", &DeleteParams::default()).await.unwrap();
    eventually("binding bench deleted", 60, || async { tgbs.get_opt("bench").await.ok()?.is_none().then_some(()) })
        .await;
    ctl.terminate();
    inst::clean_up(&client, &aws_clients, names.iter().chain([&one]), &ids, &ns).await;
}
