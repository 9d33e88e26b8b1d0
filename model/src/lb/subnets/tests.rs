use super::*;

const VPC: &str = "vpc-1";
const ANN: &str = "service.beta.kubernetes.io/aws-load-balancer-subnets";

fn subnet(id: &str, az: &str, tags: &[(&str, &str)]) -> Subnet {
    subnet_in(id, VPC, az, 250, tags)
}

fn subnet_in(id: &str, vpc: &str, az: &str, free: u32, tags: &[(&str, &str)]) -> Subnet {
    Subnet {
        id: id.into(),
        vpc_id: vpc.into(),
        availability_zone: az.into(),
        cidr: "10.0.0.0/24".into(),
        ipv6_cidrs: vec![],
        available_ips: free,
        tags: tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
    }
}

fn params(scheme: Scheme, min_azs: usize) -> SubnetParams<'static> {
    SubnetParams {
        cluster_name: "dev-meta",
        vpc_id: VPC,
        scheme,
        min_azs,
        cluster_tag_check: true,
        subnets_annotation: ANN,
        reachability_gate: true,
        reachability: None,
    }
}

fn ids(v: &[Subnet]) -> Vec<&str> {
    v.iter().map(|s| s.id.as_str()).collect()
}

const ELB: (&str, &str) = ("kubernetes.io/role/elb", "1");
const INTERNAL: (&str, &str) = ("kubernetes.io/role/internal-elb", "1");
const OURS: (&str, &str) = ("kubernetes.io/cluster/dev-meta", "owned");

/// (case name, subnets, scheme, minimum AZs, expected IDs or message fragments)
type Case = (&'static str, Vec<Subnet>, Scheme, usize, Vec<&'static str>);

#[test]
fn annotation_parsing() {
    assert_eq!(SubnetSelector::from_annotation(None), SubnetSelector::Discover);
    assert_eq!(SubnetSelector::from_annotation(Some(" , ")), SubnetSelector::Discover);
    assert_eq!(
        SubnetSelector::from_annotation(Some("subnet-a, public-a ,")),
        SubnetSelector::Explicit(vec!["subnet-a".into(), "public-a".into()])
    );
}

#[test]
fn discovery_selects_one_per_az() {
    // (name, subnets, scheme, min AZs, expected IDs)
    let cases: Vec<Case> = vec![
        (
            "role tag value 1 or empty, lowest ID per AZ",
            vec![subnet("subnet-b", "az-a", &[ELB]), subnet("subnet-a", "az-a", &[("kubernetes.io/role/elb", "")])],
            Scheme::InternetFacing,
            1,
            vec!["subnet-a"],
        ),
        (
            "cluster-tagged subnet beats a lower ID",
            vec![subnet("subnet-a", "az-a", &[ELB]), subnet("subnet-z", "az-a", &[ELB, OURS])],
            Scheme::InternetFacing,
            1,
            vec!["subnet-z"],
        ),
        (
            "our cluster tag with another cluster's tag is fine",
            vec![subnet("subnet-a", "az-a", &[ELB, OURS, ("kubernetes.io/cluster/other", "shared")])],
            Scheme::InternetFacing,
            1,
            vec!["subnet-a"],
        ),
        (
            "internal uses internal-elb, sorted by ID across AZs",
            vec![
                subnet("subnet-c", "az-b", &[INTERNAL]),
                subnet("subnet-a", "az-a", &[ELB]),
                subnet("subnet-b", "az-a", &[INTERNAL]),
            ],
            Scheme::Internal,
            2,
            vec!["subnet-b", "subnet-c"],
        ),
        (
            "too few free IPs skipped, next in AZ used",
            vec![subnet_in("subnet-a", VPC, "az-a", 7, &[ELB]), subnet_in("subnet-b", VPC, "az-a", 8, &[ELB])],
            Scheme::InternetFacing,
            1,
            vec!["subnet-b"],
        ),
        (
            "other VPC ignored",
            vec![subnet_in("subnet-a", "vpc-2", "az-a", 250, &[ELB]), subnet("subnet-b", "az-b", &[ELB])],
            Scheme::InternetFacing,
            1,
            vec!["subnet-b"],
        ),
    ];
    for (name, subnets, scheme, min, want) in cases {
        let got = resolve(&SubnetSelector::Discover, &params(scheme, min), &subnets)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(ids(&got), want, "{name}");
    }
}

#[test]
fn cluster_tag_check_can_be_disabled() {
    let subnets = vec![subnet("subnet-a", "az-a", &[ELB, ("kubernetes.io/cluster/other", "owned")])];
    let mut p = params(Scheme::InternetFacing, 1);
    assert!(resolve(&SubnetSelector::Discover, &p, &subnets).is_err());
    p.cluster_tag_check = false;
    assert_eq!(ids(&resolve(&SubnetSelector::Discover, &p, &subnets).unwrap()), vec!["subnet-a"]);
}

#[test]
fn tag_filters_replace_the_role_tag() {
    let subnets = vec![
        subnet("subnet-a", "az-a", &[("tier", "edge")]),
        subnet("subnet-b", "az-b", &[("tier", "edge"), ELB]),
        subnet("subnet-c", "az-c", &[ELB]),
        subnet("subnet-d", "az-d", &[("tier", "core")]),
    ];
    let filters: BTreeMap<String, Vec<String>> = [("tier".to_string(), vec!["edge".to_string()])].into();
    let got = resolve(&SubnetSelector::Tags(filters.clone()), &params(Scheme::Internal, 2), &subnets).unwrap();
    assert_eq!(ids(&got), vec!["subnet-a", "subnet-b"]);
    let err = resolve(&SubnetSelector::Tags(filters), &params(Scheme::Internal, 3), &subnets).unwrap_err().to_string();
    assert!(err.contains("expected: tags tier=edge"), "{err}");
    assert!(
        err.contains("subnet-d az-d free=250 [tier=core] -> dropped: tag filter tier: value \"core\" not in [edge]"),
        "{err}"
    );
}

/// Discovery failures, asserted on the rendered message: each must say what is wrong.
#[test]
fn discovery_errors_explain_themselves() {
    // (name, subnets, scheme, min AZs, fragments the message must contain)
    let cases: Vec<Case> = vec![
        (
            "dev-meta vs meta-dev",
            vec![
                subnet("subnet-a", "az-a", &[ELB, ("kubernetes.io/cluster/meta-dev", "owned"), ("Name", "pub-a")]),
                subnet("subnet-b", "az-b", &[ELB, ("kubernetes.io/cluster/meta-dev", "owned")]),
            ],
            Scheme::InternetFacing,
            2,
            vec![
                "subnet discovery for an internet-facing load balancer in vpc-1 found 0 usable availability zone(s), needs 2",
                "expected: tag kubernetes.io/role/elb = \"1\" or \"\"; no kubernetes.io/cluster/* tag, or kubernetes.io/cluster/dev-meta (owned or shared)",
                "subnets in vpc-1 (2):",
                "subnet-a az-a free=250 [Name=pub-a, kubernetes.io/cluster/meta-dev=owned, kubernetes.io/role/elb=1] -> dropped: tagged for other cluster(s) \"meta-dev\" and not for ours",
                "subnet-a: tagged kubernetes.io/cluster/meta-dev, which looks like our cluster name \"dev-meta\" (same words in a different order); --cluster-name must match the tag exactly",
                "subnet-b: tagged kubernetes.io/cluster/meta-dev",
                "fix: tag subnets in at least 2 availability zone(s) as expected, or list them in the service.beta.kubernetes.io/aws-load-balancer-subnets annotation",
            ],
        ),
        (
            "case difference and small typo",
            vec![
                subnet("subnet-a", "az-a", &[ELB, ("kubernetes.io/cluster/Dev-Meta", "owned")]),
                subnet("subnet-b", "az-b", &[ELB, ("kubernetes.io/cluster/dev-mata", "shared")]),
                subnet("subnet-c", "az-c", &[ELB, ("kubernetes.io/cluster/payments", "shared")]),
            ],
            Scheme::InternetFacing,
            1,
            vec![
                "subnet-a: tagged kubernetes.io/cluster/Dev-Meta, which looks like our cluster name \"dev-meta\" (differs only in letter case)",
                "subnet-b: tagged kubernetes.io/cluster/dev-mata, which looks like our cluster name \"dev-meta\" (1 character(s) apart)",
                "subnet-c az-c free=250 [kubernetes.io/cluster/payments=shared, kubernetes.io/role/elb=1] -> dropped: tagged for other cluster(s) \"payments\"",
            ],
        ),
        (
            "role tag for the other scheme",
            vec![subnet("subnet-a", "az-a", &[INTERNAL])],
            Scheme::InternetFacing,
            1,
            vec![
                "subnet-a az-a free=250 [kubernetes.io/role/internal-elb=1] -> dropped: no kubernetes.io/role/elb tag",
                "subnet-a: has kubernetes.io/role/internal-elb, the tag for internal load balancers; this one is internet-facing and needs kubernetes.io/role/elb",
            ],
        ),
        (
            "role tag with a wrong value, misspelt key",
            vec![
                subnet("subnet-a", "az-a", &[("kubernetes.io/role/elb", "true")]),
                subnet("subnet-b", "az-b", &[("kubernetes.io/role/elb ", "1")]),
            ],
            Scheme::InternetFacing,
            1,
            vec![
                "subnet-a az-a free=250 [kubernetes.io/role/elb=true] -> dropped: role tag value \"true\" (discovery accepts \"1\" or \"\")",
                "subnet-a: kubernetes.io/role/elb = \"true\"; discovery accepts only \"1\" or \"\"",
                "subnet-b: tag key \"kubernetes.io/role/elb \" looks like \"kubernetes.io/role/elb\" but does not match it exactly",
            ],
        ),
        (
            "subnets tagged in another VPC",
            vec![subnet_in("subnet-x", "vpc-9", "az-a", 250, &[ELB]), subnet("subnet-a", "az-a", &[])],
            Scheme::InternetFacing,
            1,
            vec![
                "subnet-a az-a free=250 [no relevant tags] -> dropped: no kubernetes.io/role/elb tag",
                "subnet-x: has kubernetes.io/role/elb but is in vpc-9, not the cluster VPC vpc-1 (check --aws-vpc-id)",
            ],
        ),
        (
            "ALB needs two AZs; one chosen, one full, one loser in the same AZ",
            vec![
                subnet("subnet-a", "az-a", &[ELB]),
                subnet("subnet-b", "az-a", &[ELB]),
                subnet_in("subnet-c", VPC, "az-b", 3, &[ELB]),
            ],
            Scheme::InternetFacing,
            2,
            vec![
                "found 1 usable availability zone(s), needs 2 (chose subnet-a)",
                "subnet-a az-a free=250 [kubernetes.io/role/elb=1] -> chosen",
                "subnet-b az-a free=250 [kubernetes.io/role/elb=1] -> dropped: subnet-a preferred in the same AZ",
                "subnet-c az-b free=3 [kubernetes.io/role/elb=1] -> dropped: only 3 free IP address(es), needs 8",
            ],
        ),
        (
            "empty VPC",
            vec![],
            Scheme::Internal,
            1,
            vec!["no subnets seen in vpc-1.", "kubernetes.io/role/internal-elb"],
        ),
    ];
    for (name, subnets, scheme, min, fragments) in cases {
        let err = resolve(&SubnetSelector::Discover, &params(scheme, min), &subnets).expect_err(name).to_string();
        for frag in fragments {
            assert!(err.contains(frag), "{name}: missing {frag:?} in:\n{err}");
        }
    }
}

#[test]
fn discovery_error_is_bounded() {
    let subnets: Vec<Subnet> = (0..50).map(|i| subnet(&format!("subnet-{i:03}"), "az-a", &[INTERNAL])).collect();
    let err = resolve(&SubnetSelector::Discover, &params(Scheme::InternetFacing, 1), &subnets).unwrap_err().to_string();
    assert!(err.contains("subnets in vpc-1 (50):"), "{err}");
    assert!(err.contains("subnet-019"), "{err}");
    assert!(!err.contains("subnet-020 "), "{err}");
    assert!(err.contains("… and 30 more"), "{err}");
    assert!(err.lines().count() < 2 * MAX_LISTED + 10, "{err}");
}

#[test]
fn explicit_selection() {
    let subnets = vec![
        subnet("subnet-a", "az-a", &[("Name", "pub-a")]),
        subnet("subnet-b", "az-b", &[("Name", "pub-b")]),
        subnet("subnet-c", "az-b", &[("Name", "pub-dup")]),
        subnet("subnet-d", "az-c", &[("Name", "pub-dup")]),
        subnet_in("subnet-x", "vpc-9", "az-a", 250, &[("Name", "far")]),
    ];
    let sel = |v: &[&str]| SubnetSelector::Explicit(v.iter().map(|s| s.to_string()).collect());
    // IDs and names mix; no discovery rules apply (no role tags needed).
    // In the annotation's order, as ALBC v3.5 keeps it (EIPs pair with them by position).
    let got = resolve(&sel(&["pub-b", "subnet-a", "subnet-b"]), &params(Scheme::InternetFacing, 2), &subnets).unwrap();
    assert_eq!(ids(&got), vec!["subnet-b", "subnet-a"], "named twice: once, where first named");

    // (name, entries, min AZs, the full message)
    let prefix = "invalid subnets in service.beta.kubernetes.io/aws-load-balancer-subnets";
    let cases: Vec<(&str, Vec<&str>, usize, String)> = vec![
        (
            "unknown ID",
            vec!["subnet-a", "subnet-zz"],
            1,
            format!(
                "{prefix} [subnet-a, subnet-zz] (cluster VPC vpc-1): subnet subnet-zz does not exist (or is not visible to the controller's credentials)"
            ),
        ),
        (
            "name matches nothing",
            vec!["pub-q"],
            1,
            format!("{prefix} [pub-q] (cluster VPC vpc-1): no subnet in the cluster VPC has the Name tag \"pub-q\""),
        ),
        (
            "name only in another VPC",
            vec!["far"],
            1,
            format!(
                "{prefix} [far] (cluster VPC vpc-1): no subnet in the cluster VPC has the Name tag \"far\" (found only in other VPCs: subnet-x in vpc-9)"
            ),
        ),
        (
            "name matches two",
            vec!["pub-dup"],
            1,
            format!(
                "{prefix} [pub-dup] (cluster VPC vpc-1): the Name tag \"pub-dup\" matches 2 subnets (subnet-c, subnet-d); use subnet IDs instead"
            ),
        ),
        (
            "same AZ",
            vec!["subnet-b", "subnet-c"],
            1,
            format!(
                "{prefix} [subnet-b, subnet-c] (cluster VPC vpc-1): subnets subnet-b, subnet-c are all in az-b; a load balancer takes one subnet per availability zone"
            ),
        ),
        (
            "other VPC by ID",
            vec!["subnet-x"],
            1,
            format!("{prefix} [subnet-x] (cluster VPC vpc-1): subnet subnet-x is in vpc-9, not the cluster VPC"),
        ),
        (
            "too few AZs for an ALB",
            vec!["subnet-a"],
            2,
            format!(
                "{prefix} [subnet-a] (cluster VPC vpc-1): the subnets cover 1 availability zone(s); this load balancer needs at least 2"
            ),
        ),
        (
            "several problems at once",
            vec!["subnet-zz", "pub-q"],
            1,
            format!(
                "{prefix} [subnet-zz, pub-q] (cluster VPC vpc-1): subnet subnet-zz does not exist (or is not visible to the controller's credentials); no subnet in the cluster VPC has the Name tag \"pub-q\""
            ),
        ),
    ];
    for (name, entries, min, want) in cases {
        let err = resolve(&sel(&entries), &params(Scheme::InternetFacing, min), &subnets).expect_err(name);
        assert!(matches!(err, SubnetError::Selection(_)), "{name}");
        assert_eq!(err.to_string(), want, "{name}");
    }
}

#[test]
fn near_name_heuristics() {
    assert_eq!(similar_name("meta-dev", "dev-meta").as_deref(), Some("same words in a different order"));
    assert_eq!(similar_name("DEV-META", "dev-meta").as_deref(), Some("differs only in letter case"));
    assert_eq!(similar_name("dev-meta2", "dev-meta").as_deref(), Some("1 character(s) apart"));
    assert_eq!(similar_name("dev-meta-cluster-east", "dev-meta").as_deref(), Some("one contains the other"));
    assert_eq!(similar_name("payments", "dev-meta"), None);
    assert_eq!(similar_name("dev-meta", "dev-meta"), None);
    assert_eq!(edit_distance("kitten", "sitting"), 3);
    assert_eq!(near_tag_key("kubernetes.io/role/internal_elb"), Some(ROLE_INTERNAL_ELB_TAG));
    assert_eq!(near_tag_key("Kubernetes.io/Cluster/dev-meta"), Some("kubernetes.io/cluster/<cluster-name>"));
    assert_eq!(near_tag_key("team"), None);
}

#[test]
fn mappings_are_sorted() {
    let m = to_mappings(&[subnet("subnet-b", "az-b", &[]), subnet("subnet-a", "az-a", &[])]);
    assert_eq!(m.iter().map(|m| m.subnet_id.as_str()).collect::<Vec<_>>(), vec!["subnet-a", "subnet-b"]);
}

fn table(id: &str, main: bool, subnets: &[&str], gateways: &[&str]) -> RouteTable {
    RouteTable {
        id: id.into(),
        main,
        subnet_ids: subnets.iter().map(|s| s.to_string()).collect(),
        gateway_ids: gateways.iter().map(|s| s.to_string()).collect(),
    }
}

/// ALBC's fallback: only when no subnet of the VPC has the scheme's role tag, only for plain
/// discovery, only with the gate on.
#[test]
fn reachability_is_needed_only_without_any_role_tag() {
    let untagged = vec![subnet_in("subnet-a", VPC, "az-a", 100, &[]), subnet_in("subnet-b", VPC, "az-b", 100, &[OURS])];
    let p = params(Scheme::InternetFacing, 2);
    assert!(needs_reachability(&SubnetSelector::Discover, &p, &untagged));
    let mut tagged = untagged.clone();
    tagged.push(subnet_in("subnet-c", VPC, "az-c", 100, &[("kubernetes.io/role/elb", "0")]));
    assert!(needs_reachability(&SubnetSelector::Discover, &p, &tagged), "a value discovery refuses counts as none");
    tagged.push(subnet_in("subnet-d", VPC, "az-c", 100, &[ELB]));
    assert!(!needs_reachability(&SubnetSelector::Discover, &p, &tagged), "one usable role tag: tags decide");
    assert!(needs_reachability(&SubnetSelector::Discover, &params(Scheme::Internal, 2), &tagged), "per scheme");
    assert!(!needs_reachability(&SubnetSelector::Explicit(vec!["subnet-a".into()]), &p, &untagged));
    assert!(!needs_reachability(&SubnetSelector::Tags(BTreeMap::new()), &p, &untagged));
    let off = SubnetParams { reachability_gate: false, ..p };
    assert!(!needs_reachability(&SubnetSelector::Discover, &off, &untagged), "gate off");
}

/// A subnet's own table first, the main table otherwise; `igw-` routes make it public; no main
/// table for an unassociated subnet is an error naming the VPC.
#[test]
fn reachability_follows_the_subnets_route_table() {
    let tables = vec![
        table("rtb-main", true, &[], &["local"]),
        table("rtb-pub", false, &["subnet-a", "subnet-b"], &["local", "igw-1"]),
        table("rtb-nat", false, &["subnet-c"], &["local", "nat-1"]),
    ];
    let got = reachability(VPC, ["subnet-a", "subnet-b", "subnet-c", "subnet-d"], &tables).unwrap();
    let want: BTreeMap<String, bool> =
        [("subnet-a", true), ("subnet-b", true), ("subnet-c", false), ("subnet-d", false)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
    assert_eq!(got, want);
    let public_main = vec![table("rtb-main", true, &[], &["igw-9"])];
    assert!(reachability(VPC, ["subnet-x"], &public_main).unwrap()["subnet-x"], "the main table's route");
    let err = reachability(VPC, ["subnet-x"], &[table("rtb-1", false, &["subnet-y"], &[])]).unwrap_err();
    assert!(err.contains("subnet-x") && err.contains(VPC) && err.contains("main route table"), "{err}");
}

/// Candidates by route table: public subnets for internet-facing, private for internal; the
/// cluster-tag and free-address filters and one per AZ apply as with tags; a failure says why
/// each subnet was passed over.
#[test]
fn discovery_by_reachability_picks_by_scheme() {
    let subnets = vec![
        subnet_in("subnet-a", VPC, "az-a", 100, &[]),
        subnet_in("subnet-b", VPC, "az-b", 100, &[]),
        subnet_in("subnet-c", VPC, "az-a", 100, &[]),
        subnet_in("subnet-d", VPC, "az-b", 100, &[]),
        subnet_in("subnet-e", VPC, "az-c", 100, &[("kubernetes.io/cluster/other", "shared")]),
        subnet_in("subnet-f", VPC, "az-c", 3, &[]),
    ];
    let public: BTreeMap<String, bool> =
        [("subnet-a", true), ("subnet-b", true), ("subnet-c", false), ("subnet-d", false), ("subnet-e", true)]
            .into_iter()
            .chain([("subnet-f", false)])
            .map(|(k, v)| (k.to_string(), v))
            .collect();
    let with = |scheme| SubnetParams { reachability: Some(&public), ..params(scheme, 2) };
    let facing = resolve(&SubnetSelector::Discover, &with(Scheme::InternetFacing), &subnets).unwrap();
    assert_eq!(ids(&facing), ["subnet-a", "subnet-b"], "subnet-e is another cluster's");
    let internal = resolve(&SubnetSelector::Discover, &with(Scheme::Internal), &subnets).unwrap();
    assert_eq!(ids(&internal), ["subnet-c", "subnet-d"], "subnet-f has too few addresses");

    let only_private: Vec<Subnet> =
        subnets.iter().filter(|s| ["subnet-c", "subnet-d"].contains(&s.id.as_str())).cloned().collect();
    let err = resolve(&SubnetSelector::Discover, &with(Scheme::InternetFacing), &only_private).unwrap_err().to_string();
    assert!(err.contains("by its route table this one is private") && err.contains("needs a public subnet"), "{err}");
}
