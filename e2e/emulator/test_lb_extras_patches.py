"""Self-test of lb_extras_patches.py (PrivateLink enforcement, capacity reservation), through a running awsemu."""

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
