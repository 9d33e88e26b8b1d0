"""Self-test of lb_extras_patches.py (PrivateLink enforcement, capacity reservation), through a running awsemu."""

import ipaddress

import pytest
from botocore.exceptions import ClientError

from test_awsemu import _nlb, aws, code_of, emu, reset  # noqa: F401 (fixtures)

FLAG = "EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic"


def test_private_link_enforcement_is_kept_and_reported(emu, aws):
    sg = aws.ec2.create_security_group(GroupName="emu-pl", Description="x", VpcId=aws.vpc)["GroupId"]
    bare, _ = _nlb(aws, "emu-pl-bare")
    assert FLAG not in bare, "no security groups: nothing reported"
    lb, _ = _nlb(aws, "emu-pl", SecurityGroups=[sg])
    arn = lb["LoadBalancerArn"]

    def flag():
        return aws.elb.describe_load_balancers(LoadBalancerArns=[arn])["LoadBalancers"][0].get(FLAG)

    assert flag() == "on", "AWS's default with security groups"
    out = aws.elb.set_security_groups(LoadBalancerArn=arn, SecurityGroups=[sg], **{FLAG: "off"})
    assert out[FLAG] == "off" and flag() == "off"
    aws.elb.set_security_groups(LoadBalancerArn=arn, SecurityGroups=[sg])
    assert flag() == "off", "not given: unchanged"


def test_capacity_reservation_modify_describe_reset(emu, aws):
    lb, _ = _nlb(aws, "emu-cap")
    arn = lb["LoadBalancerArn"]
    assert "MinimumLoadBalancerCapacity" not in aws.elb.describe_capacity_reservation(LoadBalancerArn=arn)
    out = aws.elb.modify_capacity_reservation(LoadBalancerArn=arn, MinimumLoadBalancerCapacity={"CapacityUnits": 1500})
    assert out["MinimumLoadBalancerCapacity"] == {"CapacityUnits": 1500}
    got = aws.elb.describe_capacity_reservation(LoadBalancerArn=arn)
    assert got["MinimumLoadBalancerCapacity"] == {"CapacityUnits": 1500}
    assert all(s["State"]["Code"] == "provisioned" for s in got["CapacityReservationState"])
    aws.elb.modify_capacity_reservation(LoadBalancerArn=arn, ResetCapacityReservation=True)
    assert "MinimumLoadBalancerCapacity" not in aws.elb.describe_capacity_reservation(LoadBalancerArn=arn)
    with pytest.raises(ClientError) as e:
        aws.elb.modify_capacity_reservation(LoadBalancerArn=arn)
    assert code_of(e) == "ValidationError"


def test_nlbs_report_prefix_for_ipv6_source_nat_off_and_albs_do_not(emu, aws):
    nlb, _ = _nlb(aws, "emu-nat")
    got = aws.elb.describe_load_balancers(LoadBalancerArns=[nlb["LoadBalancerArn"]])["LoadBalancers"][0]
    assert got.get("EnablePrefixForIpv6SourceNat") == "off", got
    subnets = [s["SubnetId"] for s in aws.ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [aws.vpc]}])["Subnets"]]
    alb = aws.elb.create_load_balancer(Name="emu-nat-alb", Subnets=subnets[:2], Type="application")["LoadBalancers"][0]
    assert "EnablePrefixForIpv6SourceNat" not in alb


def test_customer_owned_and_ipam_pools_are_kept_and_ip_pools_modified(emu, aws):
    subnets = [s["SubnetId"] for s in aws.ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [aws.vpc]}])["Subnets"]]
    alb = aws.elb.create_load_balancer(Name="emu-pools", Subnets=subnets[:2], Type="application",
                                       CustomerOwnedIpv4Pool="ipv4pool-coip-0123",
                                       IpamPools={"Ipv4IpamPoolId": "ipam-pool-0abc"})["LoadBalancers"][0]
    arn = alb["LoadBalancerArn"]

    def described():
        return aws.elb.describe_load_balancers(LoadBalancerArns=[arn])["LoadBalancers"][0]

    assert alb["CustomerOwnedIpv4Pool"] == "ipv4pool-coip-0123" and alb["IpamPools"] == {"Ipv4IpamPoolId": "ipam-pool-0abc"}
    assert described()["CustomerOwnedIpv4Pool"] == "ipv4pool-coip-0123"
    out = aws.elb.modify_ip_pools(LoadBalancerArn=arn, IpamPools={"Ipv4IpamPoolId": "ipam-pool-0def"})
    assert out["IpamPools"] == {"Ipv4IpamPoolId": "ipam-pool-0def"} == described()["IpamPools"]
    aws.elb.modify_ip_pools(LoadBalancerArn=arn, RemoveIpamPools=["ipv4"])
    assert "IpamPools" not in described()
    for bad in [{"Name": "emu-pools-bad", "CustomerOwnedIpv4Pool": "coip-0123"},
                {"Name": "emu-pools-bad2", "IpamPools": {"Ipv4IpamPoolId": "pool-1"}},
                {"Name": "emu-pools-nlb", "Type": "network", "IpamPools": {"Ipv4IpamPoolId": "ipam-pool-1"}}]:
        with pytest.raises(ClientError) as e:
            aws.elb.create_load_balancer(Subnets=subnets[:2], **{"Type": "application", **bad})
        assert code_of(e) == "ValidationError", bad
    nlb, _ = _nlb(aws, "emu-pools-nlb2")
    with pytest.raises(ClientError) as e:
        aws.elb.modify_ip_pools(LoadBalancerArn=nlb["LoadBalancerArn"], IpamPools={"Ipv4IpamPoolId": "ipam-pool-1"})
    assert code_of(e) == "ValidationError"



def _dualstack_subnets(aws):
    """Two subnets of a VPC of their own, each with a /64 of the VPC's IPv6 block, and one without."""
    vpc = aws.ec2.create_vpc(CidrBlock="10.77.0.0/16", AmazonProvidedIpv6CidrBlock=True)["Vpc"]["VpcId"]
    block = aws.ec2.describe_vpcs(VpcIds=[vpc])["Vpcs"][0]["Ipv6CidrBlockAssociationSet"][0]["Ipv6CidrBlock"]
    sixty_fours = ipaddress.ip_network(block).subnets(new_prefix=64)
    out = []
    for i, az in enumerate(["us-east-1a", "us-east-1b"]):
        cidr = str(next(sixty_fours))
        s = aws.ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.77.{i}.0/24", AvailabilityZone=az, Ipv6CidrBlock=cidr)
        out.append((s["Subnet"]["SubnetId"], cidr))
    plain = aws.ec2.create_subnet(VpcId=vpc, CidrBlock="10.77.9.0/24", AvailabilityZone="us-east-1c")["Subnet"]
    return out, plain["SubnetId"]


def test_ipv6_source_nat_is_checked_kept_and_reported(emu, aws):
    [(a, a_cidr), (b, b_cidr)], plain = _dualstack_subnets(aws)
    inside_a = str(next(ipaddress.ip_network(a_cidr).subnets(new_prefix=80)))
    inside_b = str(next(ipaddress.ip_network(b_cidr).subnets(new_prefix=80)))

    def create(name, nat, mappings, ip_type="dualstack"):
        return aws.elb.create_load_balancer(Name=name, Type="network", Scheme="internal", IpAddressType=ip_type,
                                            SubnetMappings=mappings, EnablePrefixForIpv6SourceNat=nat)

    lb = create("emu-snat", "on", [{"SubnetId": a, "SourceNatIpv6Prefix": inside_a},
                                   {"SubnetId": b, "SourceNatIpv6Prefix": "auto_assigned"}])["LoadBalancers"][0]
    arn = lb["LoadBalancerArn"]

    def described():
        return aws.elb.describe_load_balancers(LoadBalancerArns=[arn])["LoadBalancers"][0]

    got = described()
    assert got["EnablePrefixForIpv6SourceNat"] == "on"
    zones = {z["SubnetId"]: z.get("SourceNatIpv6Prefixes") for z in got["AvailabilityZones"]}
    assert zones[a] == [inside_a]
    picked = ipaddress.ip_network(zones[b][0])
    assert picked.prefixlen == 80 and picked.subnet_of(ipaddress.ip_network(b_cidr)), zones
    assert described()["AvailabilityZones"] == got["AvailabilityZones"], "AWS's pick is stable"
    # SetSubnets keeps the flag unless given, and checks prefixes against it.
    aws.elb.set_subnets(LoadBalancerArn=arn, SubnetMappings=[{"SubnetId": a}, {"SubnetId": b}])
    assert described()["EnablePrefixForIpv6SourceNat"] == "on"
    aws.elb.set_subnets(LoadBalancerArn=arn, SubnetMappings=[{"SubnetId": a}, {"SubnetId": b}],
                        EnablePrefixForIpv6SourceNat="off")
    got = described()
    assert got["EnablePrefixForIpv6SourceNat"] == "off"
    assert all(not z.get("SourceNatIpv6Prefixes") for z in got["AvailabilityZones"])
    refused = {
        "a prefix with source NAT off": lambda: aws.elb.set_subnets(
            LoadBalancerArn=arn, SubnetMappings=[{"SubnetId": a, "SourceNatIpv6Prefix": inside_a}, {"SubnetId": b}]),
        "not dualstack": lambda: create("emu-snat-v4", "on", [{"SubnetId": a}, {"SubnetId": b}], ip_type="ipv4"),
        "a /64": lambda: create("emu-snat-64", "on", [{"SubnetId": a, "SourceNatIpv6Prefix": a_cidr}, {"SubnetId": b}]),
        "another subnet's prefix": lambda: create("emu-snat-out", "on", [{"SubnetId": a, "SourceNatIpv6Prefix": inside_b},
                                                                        {"SubnetId": b}]),
        "a subnet without IPv6": lambda: create("emu-snat-plain", "on", [{"SubnetId": a}, {"SubnetId": plain}]),
        "an ALB": lambda: aws.elb.create_load_balancer(Name="emu-snat-alb", Type="application",
                                                       IpAddressType="dualstack", Subnets=[a, b],
                                                       EnablePrefixForIpv6SourceNat="on"),
    }
    for what, call in refused.items():
        with pytest.raises(ClientError) as e:
            call()
        assert code_of(e) == "ValidationError", what


def test_target_control_port_is_checked_kept_and_reported(emu, aws):
    def create(name, port, protocol="HTTP"):
        return aws.elb.create_target_group(Name=name, Protocol=protocol, Port=8080, VpcId=aws.vpc, TargetType="ip",
                                           **({"TargetControlPort": port} if port is not None else {}))

    tg = create("emu-tcp", 3000)["TargetGroups"][0]
    got = aws.elb.describe_target_groups(TargetGroupArns=[tg["TargetGroupArn"]])["TargetGroups"][0]
    assert got["TargetControlPort"] == 3000
    plain = create("emu-tcp-none", None)["TargetGroups"][0]
    assert "TargetControlPort" not in aws.elb.describe_target_groups(
        TargetGroupArns=[plain["TargetGroupArn"]])["TargetGroups"][0]
    for what, call, code in (
        ("another port, same name", lambda: create("emu-tcp", 3001), "DuplicateTargetGroupName"),
        ("a TCP group", lambda: create("emu-tcp-nlb", 3000, protocol="TCP"), "ValidationError"),
    ):
        with pytest.raises(ClientError) as e:
            call()
        assert code_of(e) == code, what
