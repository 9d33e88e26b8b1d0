"""Self-test of quic_patches.py through a running awsemu: QUIC groups and listeners, server IDs on targets."""

import pytest
from botocore.exceptions import ClientError

from test_awsemu import _nlb, aws, code_of, emu, reset  # noqa: F401 (fixtures)

A, B = "0x0123456789abcdef", "0x0000000000000001"


def _group(aws, name, protocol):  # noqa: F811
    return aws.elb.create_target_group(Name=name, Protocol=protocol, Port=443, VpcId=aws.vpc,
                                       TargetType="ip")["TargetGroups"][0]


def test_quic_groups_and_listeners(emu, aws):  # noqa: F811
    for protocol in ("QUIC", "TCP_QUIC"):
        tg = _group(aws, f"emu-{protocol.lower().replace('_', '-')}", protocol)
        assert tg["Protocol"] == protocol and tg["HealthCheckProtocol"] == "TCP"
        lb, _ = _nlb(aws, f"emu-nlb-{protocol.lower().replace('_', '-')}")
        forward = [{"Type": "forward", "TargetGroupArn": tg["TargetGroupArn"]}]
        listener = aws.elb.create_listener(LoadBalancerArn=lb["LoadBalancerArn"], Protocol=protocol, Port=443,
                                           DefaultActions=forward)["Listeners"][0]
        assert listener["Protocol"] == protocol
    udp = _group(aws, "emu-udp", "UDP")
    lb, subnets = _nlb(aws, "emu-nlb-mismatch")
    with pytest.raises(ClientError) as e:
        aws.elb.create_listener(LoadBalancerArn=lb["LoadBalancerArn"], Protocol="QUIC", Port=443,
                                DefaultActions=[{"Type": "forward", "TargetGroupArn": udp["TargetGroupArn"]}])
    assert code_of(e) == "InvalidConfigurationRequest"
    alb = aws.elb.create_load_balancer(Name="emu-alb-quic", Subnets=subnets)["LoadBalancers"][0]
    with pytest.raises(ClientError) as e:
        aws.elb.create_listener(LoadBalancerArn=alb["LoadBalancerArn"], Protocol="QUIC", Port=443,
                                DefaultActions=[{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "200"}}])
    assert code_of(e) == "UnsupportedProtocol"


def test_quic_targets_carry_their_server_id(emu, aws):  # noqa: F811
    tg = _group(aws, "emu-quic-targets", "QUIC")["TargetGroupArn"]
    reg = aws.elb.register_targets
    for bad, code in [({"Id": "10.0.1.5", "Port": 443}, "ValidationError"),
                      ({"Id": "10.0.1.5", "Port": 443, "QuicServerId": "0x0123"}, "ValidationError"),
                      ({"Id": "10.0.1.5", "Port": 443, "QuicServerId": A.upper().replace("0X", "0x")},
                       "ValidationError")]:
        with pytest.raises(ClientError) as e:
            reg(TargetGroupArn=tg, Targets=[bad])
        assert code_of(e) == code, bad
    reg(TargetGroupArn=tg, Targets=[{"Id": "10.0.1.5", "Port": 443, "QuicServerId": A}])
    reg(TargetGroupArn=tg, Targets=[{"Id": "10.0.1.5", "Port": 443, "QuicServerId": A}])  # the same: a no-op
    got = aws.elb.describe_target_health(TargetGroupArn=tg)["TargetHealthDescriptions"]
    assert [d["Target"]["QuicServerId"] for d in got] == [A]
    with pytest.raises(ClientError) as e:  # a registered target's server ID does not change
        reg(TargetGroupArn=tg, Targets=[{"Id": "10.0.1.5", "Port": 443, "QuicServerId": B}])
    assert code_of(e) == "InvalidTarget"
    with pytest.raises(ClientError) as e:  # one server ID, one target
        reg(TargetGroupArn=tg, Targets=[{"Id": "10.0.1.6", "Port": 443, "QuicServerId": A}])
    assert code_of(e) == "InvalidTarget"
    udp = _group(aws, "emu-udp-targets", "UDP")["TargetGroupArn"]
    with pytest.raises(ClientError) as e:
        reg(TargetGroupArn=udp, Targets=[{"Id": "10.0.1.5", "Port": 443, "QuicServerId": A}])
    assert code_of(e) == "ValidationError"
