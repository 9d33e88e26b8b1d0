"""Self-test of alb_target_patches.py through a running awsemu: what a target group of type alb accepts."""

import pytest
from botocore.exceptions import ClientError

from test_awsemu import _nlb, aws, code_of, emu, reset  # noqa: F401 (fixtures)


def test_an_alb_group_holds_one_alb_listening_on_the_port(emu, aws):  # noqa: F811
    tg = aws.elb.create_target_group(Name="emu-alb-tg", Protocol="TCP", Port=80, VpcId=aws.vpc,
                                     TargetType="alb")["TargetGroups"][0]["TargetGroupArn"]
    nlb, subnets = _nlb(aws, "emu-nlb-front")
    alb = aws.elb.create_load_balancer(Name="emu-alb-back", Subnets=subnets)["LoadBalancers"][0]["LoadBalancerArn"]
    other = aws.elb.create_load_balancer(Name="emu-alb-other", Subnets=subnets)["LoadBalancers"][0]["LoadBalancerArn"]
    fixed = [{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "200"}}]
    for lb in (alb, other):
        aws.elb.create_listener(LoadBalancerArn=lb, Protocol="HTTP", Port=80, DefaultActions=fixed)
    refused = [
        [{"Id": "10.0.0.1", "Port": 80}],  # not a load balancer
        [{"Id": nlb["LoadBalancerArn"], "Port": 80}],  # not an application load balancer
        [{"Id": alb, "Port": 8080}],  # no listener there
        [{"Id": alb, "Port": 80}, {"Id": other, "Port": 80}],  # two ALBs at once
    ]
    for targets in refused:
        with pytest.raises(ClientError) as e:
            aws.elb.register_targets(TargetGroupArn=tg, Targets=targets)
        assert code_of(e) == "InvalidTarget", targets
    aws.elb.register_targets(TargetGroupArn=tg, Targets=[{"Id": alb, "Port": 80}])
    health = aws.elb.describe_target_health(TargetGroupArn=tg)["TargetHealthDescriptions"]
    assert [(h["Target"]["Id"], h["Target"]["Port"]) for h in health] == [(alb, 80)]
    with pytest.raises(ClientError) as e:
        aws.elb.register_targets(TargetGroupArn=tg, Targets=[{"Id": other, "Port": 80}])
    assert code_of(e) == "InvalidTarget", "one ALB per group"
    aws.elb.deregister_targets(TargetGroupArn=tg, Targets=[{"Id": alb, "Port": 80}])
    aws.elb.register_targets(TargetGroupArn=tg, Targets=[{"Id": other, "Port": 80}])
