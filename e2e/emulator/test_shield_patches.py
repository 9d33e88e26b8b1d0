"""Self-test of shield_patches.py through awsemu: the subscription state, protections only with a subscription."""

import pytest
from botocore.exceptions import ClientError

from test_awsemu import aws, client, ctl, emu, reset  # noqa: F401 (fixtures)


def _alb(aws, name):  # noqa: F811
    subnets = [s["SubnetId"] for s in aws.ec2.describe_subnets(
        Filters=[{"Name": "vpc-id", "Values": [aws.vpc]}])["Subnets"]][:2]
    return aws.elb.create_load_balancer(Name=name, Subnets=subnets)["LoadBalancers"][0]["LoadBalancerArn"]


def test_protections_need_an_active_subscription(emu, reset, aws):  # noqa: F811
    shield = client(emu, "shield")
    lb = _alb(aws, "shielded")
    assert shield.get_subscription_state()["SubscriptionState"] == "INACTIVE"
    with pytest.raises(ClientError) as e:
        shield.create_protection(Name="p", ResourceArn=lb)
    assert e.value.response["Error"]["Code"] == "ResourceNotFoundException"
    with pytest.raises(ClientError):
        shield.describe_protection(ResourceArn=lb)

    shield.create_subscription()
    assert shield.get_subscription_state()["SubscriptionState"] == "ACTIVE"
    pid = shield.create_protection(Name="managed by aws-load-balancer-controller", ResourceArn=lb)["ProtectionId"]
    got = shield.describe_protection(ResourceArn=lb)["Protection"]
    assert (got["Id"], got["Name"]) == (pid, "managed by aws-load-balancer-controller")
    shield.delete_protection(ProtectionId=pid)
    with pytest.raises(ClientError) as e:
        shield.describe_protection(ResourceArn=lb)
    assert e.value.response["Error"]["Code"] == "ResourceNotFoundException"

    shield.delete_subscription()
    assert shield.get_subscription_state()["SubscriptionState"] == "INACTIVE"
    ops = [c["operation"] for c in ctl(emu, "GET", "calls")[1]["calls"]]
    assert "GetSubscriptionState" in ops and "CreateProtection" in ops, ops
