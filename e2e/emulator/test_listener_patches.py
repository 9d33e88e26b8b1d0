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


def _alb_http_listener(aws, lb_name, tg_name):
    """(target group ARN, listener ARN) of a new ALB's HTTP:80 listener forwarding to a new target group."""
    lb, _ = _nlb(aws, lb_name, Type="application", Scheme="internet-facing")
    tg = aws.tg(tg_name)
    listener = aws.elb.create_listener(LoadBalancerArn=lb["LoadBalancerArn"], Port=80, Protocol="HTTP",
                                       DefaultActions=[{"Type": "forward", "TargetGroupArn": tg}])
    return tg, listener["Listeners"][0]["ListenerArn"]


def test_rules_hide_the_oidc_secret_and_rule_tags(emu, aws):
    tg, listener = _alb_http_listener(aws, "emu-alb-rules", "emu-rules")
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


def test_regex_host_and_path_conditions(emu, aws):
    tg, listener = _alb_http_listener(aws, "emu-alb-regex", "emu-regex")
    forward = [{"Type": "forward", "TargetGroupArn": tg}]
    regex = [{"Field": "host-header", "HostHeaderConfig": {"RegexValues": ["^[a-z]+\\.example$"]}},
             {"Field": "path-pattern", "PathPatternConfig": {"RegexValues": ["^/v[0-9]+/.*$", "^/api$"]}}]
    rule = aws.elb.create_rule(ListenerArn=listener, Priority=1, Conditions=regex, Actions=forward)["Rules"][0]

    def conditions():
        d = aws.elb.describe_rules(RuleArns=[rule["RuleArn"]])["Rules"][0]["Conditions"]
        return {c["Field"]: c.get("HostHeaderConfig") or c.get("PathPatternConfig") for c in d}

    got = conditions()
    assert got["host-header"]["RegexValues"] == ["^[a-z]+\\.example$"] and not got["host-header"].get("Values")
    assert got["path-pattern"]["RegexValues"] == ["^/v[0-9]+/.*$", "^/api$"]
    aws.elb.modify_rule(RuleArn=rule["RuleArn"],
                        Conditions=[{"Field": "path-pattern", "PathPatternConfig": {"RegexValues": ["^/w$"]}}])
    assert conditions() == {"path-pattern": {"RegexValues": ["^/w$"]}}
    bad = [
        {"Values": ["/a"], "RegexValues": ["^/a$"]},
        {"RegexValues": ["^/(unclosed$"]},
        {"RegexValues": ["^/(?=ahead)$"]},
        {"RegexValues": ["^/" + "a" * 127 + "$"]},
        {"RegexValues": []},
    ]
    for cfg in bad:
        with pytest.raises(ClientError) as e:
            aws.elb.create_rule(ListenerArn=listener, Priority=2, Actions=forward,
                                Conditions=[{"Field": "path-pattern", "PathPatternConfig": cfg}])
        assert code_of(e) == "ValidationError", cfg
    # Plain values still behave as before.
    aws.elb.create_rule(ListenerArn=listener, Priority=2, Actions=forward,
                        Conditions=[{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/b/*"]}}])


def test_regex_http_header_conditions(emu, aws):
    tg, listener = _alb_http_listener(aws, "emu-alb-hdr-regex", "emu-hdr-regex")
    forward = [{"Type": "forward", "TargetGroupArn": tg}]
    header = {"HttpHeaderName": "User-Agent", "RegexValues": ["^curl/[0-9.]+$"]}
    rule = aws.elb.create_rule(ListenerArn=listener, Priority=1, Actions=forward,
                               Conditions=[{"Field": "http-header", "HttpHeaderConfig": header}])["Rules"][0]
    got = aws.elb.describe_rules(RuleArns=[rule["RuleArn"]])["Rules"][0]["Conditions"][0]["HttpHeaderConfig"]
    assert got["HttpHeaderName"] == "User-Agent" and got["RegexValues"] == ["^curl/[0-9.]+$"]
    assert not got.get("Values")
    bad = [
        {"HttpHeaderName": "X-A", "Values": ["a"], "RegexValues": ["^a$"]},
        {"RegexValues": ["^a$"]},
        {"HttpHeaderName": "X-" + "a" * 39, "RegexValues": ["^a$"]},
        {"HttpHeaderName": "X-A", "RegexValues": ["^(?=a)"]},
        {"HttpHeaderName": "X-A", "RegexValues": []},
    ]
    for cfg in bad:
        with pytest.raises(ClientError) as e:
            aws.elb.create_rule(ListenerArn=listener, Priority=2, Actions=forward,
                                Conditions=[{"Field": "http-header", "HttpHeaderConfig": cfg}])
        assert code_of(e) == "ValidationError", cfg
    # Plain header values still behave as before.
    aws.elb.create_rule(ListenerArn=listener, Priority=2, Actions=forward,
                        Conditions=[{"Field": "http-header",
                                     "HttpHeaderConfig": {"HttpHeaderName": "X-Env", "Values": ["canary"]}}])


def test_set_rule_priorities_checks_the_order_after_the_call(emu, aws):
    tg, listener = _alb_http_listener(aws, "emu-alb-prio", "emu-prio")
    forward = [{"Type": "forward", "TargetGroupArn": tg}]

    def rule(p):
        cond = [{"Field": "path-pattern", "PathPatternConfig": {"Values": [f"/{p}"]}}]
        return aws.elb.create_rule(ListenerArn=listener, Priority=p, Conditions=cond, Actions=forward)["Rules"][0][
            "RuleArn"]

    def order():
        rules = aws.elb.describe_rules(ListenerArn=listener)["Rules"]
        return {r["RuleArn"]: r["Priority"] for r in rules if not r["IsDefault"]}

    r2, r3, r4 = rule(2), rule(3), rule(4)
    # Shift 2 and 3 up by one in one call: 2 is free once 2 moves to 1 (AWS judges the new order).
    aws.elb.set_rule_priorities(RulePriorities=[{"RuleArn": r2, "Priority": 1}, {"RuleArn": r3, "Priority": 2}])
    assert order() == {r2: "1", r3: "2", r4: "4"}
    # A swap in one call is a new order without conflicts too.
    aws.elb.set_rule_priorities(RulePriorities=[{"RuleArn": r2, "Priority": 2}, {"RuleArn": r3, "Priority": 1}])
    assert order() == {r2: "2", r3: "1", r4: "4"}
    # Onto a rule that keeps its priority: refused, nothing moved.
    with pytest.raises(ClientError) as e:
        aws.elb.set_rule_priorities(RulePriorities=[{"RuleArn": r2, "Priority": 3}, {"RuleArn": r3, "Priority": 4}])
    assert code_of(e) == "PriorityInUse"
    assert order() == {r2: "2", r3: "1", r4: "4"}
    with pytest.raises(ClientError) as e:
        aws.elb.set_rule_priorities(RulePriorities=[{"RuleArn": r2, "Priority": 7}, {"RuleArn": r3, "Priority": 7}])
    assert code_of(e) == "ValidationError"  # "Priority '7' was provided multiple times"
