//! Randomized: from any observed state of our resources, applying the plan reaches a state with
//! nothing left to do, and every step is one AWS would accept at that point (the simulator
//! panics otherwise: target group in use, security group attached, duplicate names…).

use super::testkit::*;
use super::*;
use crate::lb::{HealthCheckPort, MtlsMode, Stack, TgIpAddressType};

fn pick<'a, T>(rng: &mut fastrand::Rng, items: &'a [T]) -> &'a T {
    &items[rng.usize(..items.len())]
}

fn subset<T: Clone>(rng: &mut fastrand::Rng, items: &[T]) -> Vec<T> {
    items.iter().filter(|_| rng.bool()).cloned().collect()
}

fn random_attrs(rng: &mut fastrand::Rng, keys: &[&str]) -> Attributes {
    subset(rng, keys).into_iter().map(|k| (k.to_string(), pick(rng, &["true", "false", "60"]).to_string())).collect()
}

fn random_tags(rng: &mut fastrand::Rng) -> Tags {
    let mut t = tags(&[("service.k8s.aws/stack", "ns/svc")]);
    for k in subset(rng, &["team", "env", "cost"]) {
        t.insert(k.to_string(), pick(rng, &["a", "b"]).to_string());
    }
    t
}

fn random_tg(rng: &mut fastrand::Rng) -> TargetGroup {
    let port = *pick(rng, &[80u16, 443, 8080]);
    let protocol = *pick(rng, &[Protocol::Tcp, Protocol::Udp]);
    let ipv6 = rng.u8(..8) == 0;
    // Deterministic names over the immutable properties, as the naming module does.
    let name = format!("tg-{}-{port}{}", protocol.as_aws(), if ipv6 { "-6" } else { "" });
    let mut hc = health_check();
    hc.interval_seconds = *pick(rng, &[10, 30]);
    hc.port = *pick(rng, &[HealthCheckPort::TrafficPort, HealthCheckPort::Port(10254)]);
    TargetGroup {
        name,
        protocol,
        protocol_version: None,
        port,
        target_type: "ip".into(),
        ip_address_type: if ipv6 { TgIpAddressType::Ipv6 } else { TgIpAddressType::Ipv4 },
        vpc_id: "vpc-1".into(),
        health_check: hc,
        attributes: random_attrs(rng, &["deregistration_delay.timeout_seconds", "preserve_client_ip.enabled"]),
        tags: random_tags(rng),
        target_control_port: None,
    }
}

fn random_mtls(rng: &mut fastrand::Rng) -> MutualAuthentication {
    let mode = *pick(rng, &MtlsMode::ALL);
    let verify = mode == MtlsMode::Verify;
    MutualAuthentication {
        mode,
        trust_store_arn: verify.then(|| pick(rng, &["arn:ts/a", "arn:ts/b"]).to_string()),
        ignore_client_certificate_expiry: if verify { rng.bool().then(|| rng.bool()) } else { None },
        advertise_trust_store_ca_names: if verify { rng.bool().then(|| rng.bool()) } else { None },
    }
}

fn random_listener(rng: &mut fastrand::Rng, port: u16, tgs: &[TargetGroup]) -> Listener {
    let tls = rng.bool();
    let certs = ["arn:cert/a", "arn:cert/b", "arn:cert/c"];
    let mut l = listener(port, &pick(rng, tgs).name);
    l.tags = random_tags(rng);
    l.attributes = random_attrs(rng, &["tcp.idle_timeout.seconds"]);
    if tls {
        l.protocol = Protocol::Tls;
        let n = rng.usize(1..=certs.len());
        let mut c: Vec<String> = certs.iter().map(|s| s.to_string()).collect();
        rng.shuffle(&mut c);
        l.certificates = c.into_iter().take(n).collect();
        l.ssl_policy = rng.bool().then(|| pick(rng, &["p1", "p2"]).to_string());
        l.alpn_policy = rng.bool().then(|| pick(rng, &["HTTP2Preferred", "None"]).to_string());
        l.mutual_authentication = rng.bool().then(|| random_mtls(rng));
    }
    l
}

fn random_stack(rng: &mut fastrand::Rng) -> Stack {
    let mut tgs: Vec<TargetGroup> = Vec::new();
    for _ in 0..rng.usize(1..4) {
        let t = random_tg(rng);
        if tgs.iter().all(|x| x.name != t.name) {
            tgs.push(t);
        }
    }
    let mut ports = subset(rng, &[80u16, 443, 8443, 9000]);
    if ports.is_empty() {
        ports.push(80);
    }
    let listeners = ports.iter().map(|p| random_listener(rng, *p, &tgs)).collect();
    let has_sg = rng.u8(..4) != 0;
    let mut sg_def = sg();
    sg_def.name = pick(rng, &["sg-name-1", "sg-name-2"]).to_string();
    sg_def.tags = random_tags(rng);
    sg_def.ingress =
        subset(rng, &[rule(80, "0.0.0.0/0"), rule(443, "0.0.0.0/0"), rule(443, "10.0.0.0/8"), rule(22, "1.2.3.4/32")]);
    if rng.bool()
        && let Some(r) = sg_def.ingress.first_mut()
    {
        r.description = Some("described".into());
    }
    let mut security_groups = Vec::new();
    if has_sg {
        security_groups.push(if rng.bool() { MANAGED_FRONTEND_SG.to_string() } else { sg_def.name.clone() });
    }
    if rng.u8(..4) == 0 {
        security_groups.push("sg-user".into());
    }
    let ip_address_type = *pick(rng, &[LbIpAddressType::Ipv4, LbIpAddressType::Dualstack]);
    let mut subnets = subset(rng, &[mapping("subnet-a"), mapping("subnet-b"), mapping("subnet-c")]);
    if subnets.is_empty() {
        subnets.push(mapping("subnet-a"));
    }
    let ipv6_source_nat = *pick(rng, &[None, Some(true), Some(false)]);
    if ipv6_source_nat == Some(true) {
        for (i, m) in subnets.iter_mut().enumerate() {
            m.source_nat_ipv6_prefix = match rng.u8(..3) {
                0 => None,
                1 => Some("auto_assigned".into()),
                _ => Some(format!("2600:1f18:0:{i}:{:x}::/80", rng.u8(..4))),
            };
        }
    }
    Stack {
        id: "ns/svc".into(),
        load_balancer: LoadBalancer {
            name: pick(rng, &["lb-1", "lb-2"]).to_string(),
            lb_type: *pick(rng, &[LbType::Network, LbType::Network, LbType::Application]),
            scheme: *pick(rng, &[Scheme::Internal, Scheme::InternetFacing]),
            ip_address_type,
            subnets,
            security_groups,
            attributes: random_attrs(
                rng,
                &[DELETION_PROTECTION, "load_balancing.cross_zone.enabled", "access_logs.s3.enabled"],
            )
            .into_iter()
            .filter(|(k, v)| !(k == DELETION_PROTECTION && v != "false"))
            .collect(),
            tags: random_tags(rng),
            customer_owned_ipv4_pool: None,
            ipv4_ipam_pool: rng.bool().then(|| format!("ipam-pool-{:04x}", rng.u16(..))),
            ipv6_source_nat,
        },
        frontend_security_group: has_sg.then_some(sg_def),
        target_groups: tgs,
        listeners,
    }
}

/// Drift AWS may show on its own or by hand: keys we never set, reserved tags, partial state.
fn drift(rng: &mut fastrand::Rng, o: &mut ObservedStack) {
    if let Some((lb, _)) = &mut o.load_balancer {
        if rng.bool() {
            lb.spec.attributes.insert("idle_timeout.timeout_seconds".into(), "60".into());
        }
        if rng.bool() {
            lb.spec.tags.insert("aws:cloudformation:stack-name".into(), "x".into());
        }
        if rng.u8(..4) == 0 {
            // Deletion protection switched on in the console.
            lb.spec.attributes.insert(DELETION_PROTECTION.into(), "true".into());
        }
    }
    for t in &mut o.target_groups {
        if rng.bool() {
            t.spec.attributes.insert("stickiness.enabled".into(), "false".into());
        }
    }
    if rng.u8(..6) == 0 {
        // A crash after creating target groups: load balancer and listeners missing.
        o.load_balancer = None;
        o.listeners.clear();
    }
    if rng.u8(..6) == 0 && !o.listeners.is_empty() {
        let i = rng.usize(..o.listeners.len());
        o.listeners.remove(i);
    }
}

#[test]
fn plans_converge_from_random_states() {
    let seed = std::env::var("LBC_DIFF_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_u64);
    let mut rng = fastrand::Rng::with_seed(seed);
    let opts = PlanOptions::default();
    let mut kinds = std::collections::HashSet::new();
    for case in 0..2000 {
        let before = random_stack(&mut rng);
        let desired = random_stack(&mut rng);
        let mut observed = materialize(&before);
        drift(&mut rng, &mut observed);

        let steps = plan(&desired, &observed, &opts).unwrap_or_else(|e| panic!("case {case} (seed {seed}): {e}"));
        for s in &steps {
            kinds.insert(std::mem::discriminant(s));
        }
        let mut sim = Sim::new(observed.clone());
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sim.apply_all(&steps)));
        if result.is_err() {
            panic!("case {case} (seed {seed}): AWS would reject the plan\n{:#?}\nfrom {observed:#?}", steps);
        }
        let again = plan(&desired, &sim.state, &opts).unwrap();
        assert!(again.is_empty(), "case {case} (seed {seed}): not converged after {steps:#?}\nleft: {again:#?}");
        assert!(sim.other_sgs.is_empty(), "case {case}: a replaced security group leaked");

        // Idempotent deletion from wherever we ended up.
        let mut del = Sim::new(sim.state.clone());
        del.apply_all(&plan_delete(&sim.state));
        assert_eq!(del.state, ObservedStack::default(), "case {case}");
    }
    // The generator reaches (almost) every step kind.
    assert!(kinds.len() >= 20, "only {} step kinds exercised", kinds.len());
}
