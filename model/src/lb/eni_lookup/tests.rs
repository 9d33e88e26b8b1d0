use super::*;
use serde_json::json;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn eni(id: &str, ips: &[&str]) -> NetworkInterface {
    NetworkInterface {
        id: id.into(),
        subnet_id: "subnet-1".into(),
        private_ips: ips.iter().map(|s| ip(s)).collect(),
        security_groups: vec!["sg-1".into()],
    }
}

fn cilium_index() -> EniIndex {
    let node = json!({"metadata": {"name": "a"}, "status": {"eni": {"enis": {"eni-c": {
        "ip": "10.0.1.4", "addresses": ["10.0.1.5"], "prefixes": ["10.0.2.16/28"], "security-groups": ["sg-1"]}}}}});
    EniIndex::build([&node], [])
}

#[test]
fn cilium_hits_need_no_call() {
    let now = Instant::now();
    let plan =
        plan_eni_lookups([ip("10.0.1.5"), ip("10.0.2.20"), ip("10.0.1.5")], &cilium_index(), &EniCache::default(), now);
    assert_eq!(plan.resolved.len(), 2);
    assert!(plan.resolved.values().all(|e| e == "eni-c"));
    assert!(plan.is_complete());
}

#[test]
fn unknown_ips_are_chunked_by_family() {
    let now = Instant::now();
    let v4: Vec<IpAddr> = (0..450u32).map(|i| IpAddr::from(std::net::Ipv4Addr::from(0x0a05_0000 + i))).collect();
    let v6 = [ip("2600:1f18::2"), ip("2600:1f18::1")];
    let plan = plan_eni_lookups(
        v4.iter().copied().chain(v6).chain([ip("10.0.1.4")]),
        &cilium_index(),
        &EniCache::default(),
        now,
    );
    let sizes: Vec<(IpFilter, usize)> = plan.calls.iter().map(|c| (c.filter, c.ips.len())).collect();
    assert_eq!(sizes, vec![(IpFilter::Ipv4, 199), (IpFilter::Ipv4, 199), (IpFilter::Ipv4, 52), (IpFilter::Ipv6, 2)]);
    assert_eq!(plan.calls[3].ips, vec![ip("2600:1f18::1"), ip("2600:1f18::2")]);
    assert_eq!(IpFilter::Ipv6.name(), "ipv6-addresses.ipv6-address");
    assert_eq!(plan.asked().len(), 452);
    assert_eq!(plan.resolved.len(), 1);
    assert!(!plan.is_complete());
}

#[test]
fn cache_answers_until_it_expires() {
    let t0 = Instant::now();
    let index = EniIndex::new();
    let mut cache = EniCache::default();
    let asked = [ip("10.0.7.1"), ip("10.42.0.9")];
    // EC2 found 10.0.7.1 on eni-e (which also holds 10.0.7.2); nothing holds the overlay IP.
    cache.record(&asked, &[eni("eni-e", &["10.0.7.1", "10.0.7.2"])], t0);
    assert_eq!(cache.len(), 3);

    let t1 = t0 + Duration::from_secs(30);
    let plan = plan_eni_lookups([ip("10.0.7.1"), ip("10.0.7.2"), ip("10.42.0.9")], &index, &cache, t1);
    assert_eq!(plan.resolved.keys().copied().collect::<Vec<_>>(), vec![ip("10.0.7.1"), ip("10.0.7.2")]);
    assert_eq!(plan.absent, vec![ip("10.42.0.9")]);
    assert!(plan.calls.is_empty() && !plan.is_complete());
    assert_eq!(resolve(ip("10.0.7.2"), &index, &cache, t1).unwrap().id, "eni-e");

    // The negative answer expires first and is asked again.
    let t2 = t0 + ENI_NEGATIVE_TTL;
    let plan = plan_eni_lookups([ip("10.0.7.1"), ip("10.42.0.9")], &index, &cache, t2);
    assert_eq!(plan.asked(), vec![ip("10.42.0.9")]);

    // After the TTL everything is asked again, and expire() drops it all.
    let t3 = t0 + ENI_CACHE_TTL;
    let plan = plan_eni_lookups([ip("10.0.7.1")], &index, &cache, t3);
    assert_eq!(plan.asked(), vec![ip("10.0.7.1")]);
    assert_eq!(resolve(ip("10.0.7.1"), &index, &cache, t3), None);
    assert_eq!(cache.expire(t2), 1);
    assert_eq!(cache.expire(t3), 2);
    assert!(cache.is_empty());
}

#[test]
fn ambiguous_cilium_answer_asks_ec2() {
    let a = json!({"status": {"eni": {"enis": {"eni-a": {"addresses": ["10.0.1.5"]}}}}});
    let b = json!({"status": {"eni": {"enis": {"eni-b": {"addresses": ["10.0.1.5"]}}}}});
    let index = EniIndex::build([&a, &b], []);
    let now = Instant::now();
    let mut cache = EniCache::default();
    assert_eq!(plan_eni_lookups([ip("10.0.1.5")], &index, &cache, now).asked(), vec![ip("10.0.1.5")]);
    cache.record(&[ip("10.0.1.5")], &[eni("eni-b", &["10.0.1.5"])], now);
    let plan = plan_eni_lookups([ip("10.0.1.5")], &index, &cache, now);
    assert_eq!(plan.resolved[&ip("10.0.1.5")], "eni-b");
    assert_eq!(resolve(ip("10.0.1.5"), &index, &cache, now).unwrap().id, "eni-b");
}

#[test]
fn fresh_interfaces_feed_the_index_once_per_eni() {
    let t0 = Instant::now();
    let mut cache = EniCache::default();
    cache.record(&[ip("10.0.7.1")], &[eni("eni-e", &["10.0.7.1", "10.0.7.2"])], t0);
    let later = t0 + Duration::from_secs(5);
    cache.record(&[ip("10.0.7.3")], &[eni("eni-e", &["10.0.7.1", "10.0.7.3"])], later);
    let fresh = cache.fresh_interfaces(later);
    assert_eq!(fresh.len(), 1);
    assert_eq!(fresh[0].private_ips, vec![ip("10.0.7.1"), ip("10.0.7.3")]);
    let mut index = EniIndex::new();
    fresh.into_iter().for_each(|e| index.add_ec2(e));
    assert_eq!(index.eni_of(ip("10.0.7.3")).unwrap().id, "eni-e");
    assert!(cache.fresh_interfaces(t0 + ENI_CACHE_TTL + Duration::from_secs(5)).is_empty());
}
