"""Self-test of listener_patches.py (listener certificates and rules), through a running awsemu."""

import pytest
from botocore.exceptions import ClientError

from test_awsemu import _nlb, aws, client, code_of, emu, reset  # noqa: F401 (fixtures)


def _certs(emu, n):
    acm = client(emu, "acm")
    return [acm.request_certificate(DomainName=f"c{i}.example.com")["CertificateArn"] for i in range(n)]


def test_listener_certificates_default_and_sni(emu, aws):
    a, b, c = _certs(emu, 3)
    lb, _ = _nlb(aws, "emu-tls")
    tg = aws.elb.create_target_group(Name="emu-tls", Protocol="TCP", Port=80, VpcId=aws.vpc,
                                     TargetType="ip")["TargetGroups"][0]["TargetGroupArn"]
    created = aws.elb.create_listener(LoadBalancerArn=lb["LoadBalancerArn"], Port=443, Protocol="TLS",
                                      Certificates=[{"CertificateArn": a}],
                                      DefaultActions=[{"Type": "forward", "TargetGroupArn": tg}])["Listeners"][0]
    arn = created["ListenerArn"]
    aws.elb.add_listener_certificates(ListenerArn=arn, Certificates=[{"CertificateArn": b}, {"CertificateArn": b}])
    with pytest.raises(ClientError) as e:
        aws.elb.add_listener_certificates(ListenerArn=arn, Certificates=[{"CertificateArn": a[:-4] + "0000"}])
    assert code_of(e) == "CertificateNotFound"

    def listed():
        d = aws.elb.describe_listener_certificates(ListenerArn=arn)["Certificates"]
        return [(x["CertificateArn"], x["IsDefault"]) for x in d]

    def described():
        return aws.elb.describe_listeners(ListenerArns=[arn])["Listeners"][0]

    assert listed() == [(a, True), (b, False)]
    assert described()["Certificates"] == [{"CertificateArn": a}], "DescribeListeners: the default only"
    # ModifyListener on a TLS listener swaps the default and keeps the SNI certificates.
    aws.elb.modify_listener(ListenerArn=arn, Protocol="TLS", Port=443, Certificates=[{"CertificateArn": c}])
    assert listed() == [(c, True), (b, False)]
    aws.elb.remove_listener_certificates(ListenerArn=arn, Certificates=[{"CertificateArn": b}, {"CertificateArn": c}])
    assert listed() == [(c, True)], "the default certificate is never removed"
    aws.elb.modify_listener(ListenerArn=arn, Protocol="TCP", Port=443)
    assert described().get("Certificates") is None and listed() == []


OIDC = {"Issuer": "https://idp.example", "AuthorizationEndpoint": "https://idp.example/auth",
        "TokenEndpoint": "https://idp.example/token", "UserInfoEndpoint": "https://idp.example/userinfo",
        "ClientId": "app"}


def test_rules_hide_the_oidc_secret_and_rule_tags(emu, aws):
    lb, subnets = _nlb(aws, "emu-alb-rules", Type="application", Scheme="internet-facing")
    tg = aws.tg("emu-rules")
    listener = aws.elb.create_listener(LoadBalancerArn=lb["LoadBalancerArn"], Port=80, Protocol="HTTP",
                                       DefaultActions=[{"Type": "forward", "TargetGroupArn": tg}]
                                       )["Listeners"][0]["ListenerArn"]
    forward = {"Type": "forward", "TargetGroupArn": tg, "Order": 2}
    cond = [{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/a"]}}]
    with pytest.raises(ClientError) as e:
        aws.elb.create_rule(ListenerArn=listener, Priority=1, Conditions=cond,
                            Actions=[{"Type": "authenticate-oidc", "Order": 1, "AuthenticateOidcConfig": OIDC}, forward])
    assert code_of(e) == "ValidationError"
    with_secret = dict(OIDC, ClientSecret="s3cret")
    rule = aws.elb.create_rule(ListenerArn=listener, Priority=1, Conditions=cond, Tags=[{"Key": "k", "Value": "v"}],
                               Actions=[{"Type": "authenticate-oidc", "Order": 1,
                                         "AuthenticateOidcConfig": with_secret}, forward])["Rules"][0]
    d = aws.elb.describe_rules(RuleArns=[rule["RuleArn"]])["Rules"][0]
    cfg = [a for a in d["Actions"] if a["Type"] == "authenticate-oidc"][0]["AuthenticateOidcConfig"]
    assert "ClientSecret" not in cfg and cfg["ClientId"] == "app"
    with pytest.raises(ClientError) as e:
        aws.elb.modify_rule(RuleArn=rule["RuleArn"], Conditions=cond,
                            Actions=[{"Type": "authenticate-oidc", "Order": 1, "AuthenticateOidcConfig": OIDC}, forward])
    assert code_of(e) == "ValidationError"
    keep = dict(OIDC, UseExistingClientSecret=True, ClientId="app2")
    aws.elb.modify_rule(RuleArn=rule["RuleArn"], Conditions=cond,
                        Actions=[{"Type": "authenticate-oidc", "Order": 1, "AuthenticateOidcConfig": keep}, forward])
    d = aws.elb.describe_rules(RuleArns=[rule["RuleArn"]])["Rules"][0]
    cfg = [a for a in d["Actions"] if a["Type"] == "authenticate-oidc"][0]["AuthenticateOidcConfig"]
    assert cfg["ClientId"] == "app2" and "UseExistingClientSecret" not in cfg and "ClientSecret" not in cfg
    tags = aws.elb.describe_tags(ResourceArns=[rule["RuleArn"]])["TagDescriptions"][0]["Tags"]
    assert tags == [{"Key": "k", "Value": "v"}]
    aws.elb.delete_rule(RuleArn=rule["RuleArn"])
    with pytest.raises(ClientError) as e:
        aws.elb.describe_tags(ResourceArns=[rule["RuleArn"]])
    assert code_of(e) == "RuleNotFound"
