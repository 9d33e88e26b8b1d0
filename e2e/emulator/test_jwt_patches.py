"""Self-test of jwt_patches.py (the jwt-validation rule action), through a running awsemu."""

import pytest
from botocore.exceptions import ClientError

from test_awsemu import _nlb, aws, client, code_of, emu, reset  # noqa: F401 (fixtures)

JWT = {"Issuer": "https://idp.example.com", "JwksEndpoint": "https://idp.example.com/.well-known/jwks.json",
       "AdditionalClaims": [{"Format": "space-separated-values", "Name": "scope", "Values": ["read", "write"]}]}


def _listeners(emu, aws, name):
    """(target group ARN, HTTPS listener ARN, HTTP listener ARN) of a new ALB."""
    cert = client(emu, "acm").request_certificate(DomainName=f"{name}.example.com")["CertificateArn"]
    lb, _ = _nlb(aws, name, Type="application", Scheme="internet-facing")
    tg = aws.tg(f"{name}-tg")
    forward = [{"Type": "forward", "TargetGroupArn": tg}]
    https = aws.elb.create_listener(LoadBalancerArn=lb["LoadBalancerArn"], Port=443, Protocol="HTTPS",
                                    Certificates=[{"CertificateArn": cert}], DefaultActions=forward)
    http = aws.elb.create_listener(LoadBalancerArn=lb["LoadBalancerArn"], Port=80, Protocol="HTTP",
                                   DefaultActions=forward)
    return tg, https["Listeners"][0]["ListenerArn"], http["Listeners"][0]["ListenerArn"]


def test_jwt_validation_rules_on_https_listeners_are_kept_as_sent(emu, aws):
    tg, https, http = _listeners(emu, aws, "emu-jwt")
    actions = [{"Type": "jwt-validation", "Order": 1, "JwtValidationConfig": JWT},
               {"Type": "forward", "Order": 2, "TargetGroupArn": tg}]
    path = [{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/api/*"]}}]
    rule = aws.elb.create_rule(ListenerArn=https, Priority=1, Conditions=path, Actions=actions)["Rules"][0]
    got = aws.elb.describe_rules(RuleArns=[rule["RuleArn"]])["Rules"][0]["Actions"]
    assert [a["Type"] for a in sorted(got, key=lambda a: a["Order"])] == ["jwt-validation", "forward"]
    assert got[0]["JwtValidationConfig"] == JWT
    changed = dict(JWT, AdditionalClaims=[{"Format": "string-array", "Name": "groups", "Values": ["ops"]}])
    aws.elb.modify_rule(RuleArn=rule["RuleArn"], Actions=[dict(actions[0], JwtValidationConfig=changed), actions[1]])
    got = aws.elb.describe_rules(RuleArns=[rule["RuleArn"]])["Rules"][0]["Actions"]
    assert got[0]["JwtValidationConfig"] == changed
    # As a listener's default action too.
    aws.elb.modify_listener(ListenerArn=https, DefaultActions=actions)
    default = aws.elb.describe_listeners(ListenerArns=[https])["Listeners"][0]["DefaultActions"]
    assert default[0]["Type"] == "jwt-validation" and default[0]["JwtValidationConfig"] == JWT

    # Not on HTTP listeners.
    with pytest.raises(ClientError) as e:
        aws.elb.create_rule(ListenerArn=http, Priority=1, Conditions=path, Actions=actions)
    assert code_of(e) == "InvalidConfigurationRequest"
    with pytest.raises(ClientError) as e:
        aws.elb.modify_listener(ListenerArn=http, DefaultActions=actions)
    assert code_of(e) == "InvalidConfigurationRequest"


@pytest.mark.parametrize("cfg", [
    dict(JWT, Issuer=""),
    dict(JWT, JwksEndpoint=""),
    dict(JWT, JwksEndpoint="http://idp.example.com/jwks"),
    dict(JWT, JwksEndpoint="https:///jwks"),
    dict(JWT, Issuer="i" * 257),
    dict(JWT, AdditionalClaims=[{"Format": "json", "Name": "a", "Values": ["x"]}]),
    dict(JWT, AdditionalClaims=[{"Format": "single-string", "Name": "exp", "Values": ["1"]}]),
    dict(JWT, AdditionalClaims=[{"Format": "string-array", "Name": "a", "Values": []}]),
    dict(JWT, AdditionalClaims=[{"Format": "string-array", "Name": "a", "Values": ["v"] * 11}]),
    dict(JWT, AdditionalClaims=[{"Format": "space-separated-values", "Name": "a", "Values": ["a b"]}]),
    dict(JWT, AdditionalClaims=[{"Format": "single-string", "Name": f"c{i}", "Values": ["v"]} for i in range(11)]),
])
def test_bad_jwt_validation_configs_are_refused(emu, aws, cfg):
    tg, https, _ = _listeners(emu, aws, "emu-jwt-bad")
    actions = [{"Type": "jwt-validation", "Order": 1, "JwtValidationConfig": cfg},
               {"Type": "forward", "Order": 2, "TargetGroupArn": tg}]
    with pytest.raises(ClientError) as e:
        aws.elb.create_rule(ListenerArn=https, Priority=1, Actions=actions,
                            Conditions=[{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/x"]}}])
    assert code_of(e) == "ValidationError", cfg
