"""Self-test of transform_patches.py (listener rule transforms), through a running awsemu."""

import pytest
from botocore.exceptions import ClientError

from test_awsemu import _nlb, aws, client, code_of, emu, reset  # noqa: F401 (fixtures)

HOST = {"Type": "host-header-rewrite",
        "HostHeaderRewriteConfig": {"Rewrites": [{"Regex": "^shop\\.example\\.com$", "Replace": "shop.internal"}]}}
URL = {"Type": "url-rewrite", "UrlRewriteConfig": {"Rewrites": [{"Regex": "^/api/(.*)$", "Replace": "/$1"}]}}
PATH = [{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/api/*"]}}]


def _listener(aws, name):
    """(target group ARN, HTTP listener ARN) of a new ALB."""
    lb, _ = _nlb(aws, name, Type="application", Scheme="internet-facing")
    tg = aws.tg(f"{name}-tg")
    listener = aws.elb.create_listener(LoadBalancerArn=lb["LoadBalancerArn"], Port=80, Protocol="HTTP",
                                       DefaultActions=[{"Type": "forward", "TargetGroupArn": tg}])
    return tg, listener["Listeners"][0]["ListenerArn"]


def test_transforms_are_kept_changed_kept_and_reset(emu, aws):
    tg, listener = _listener(aws, "emu-xf")
    forward = [{"Type": "forward", "TargetGroupArn": tg}]
    created = aws.elb.create_rule(ListenerArn=listener, Priority=1, Conditions=PATH, Actions=forward,
                                  Transforms=[HOST, URL])["Rules"][0]
    assert created["Transforms"] == [HOST, URL], "CreateRule's answer carries them"

    def described():
        return aws.elb.describe_rules(RuleArns=[created["RuleArn"]])["Rules"][0].get("Transforms") or []

    assert described() == [HOST, URL]
    aws.elb.modify_rule(RuleArn=created["RuleArn"], Conditions=PATH, Actions=forward, Transforms=[URL])
    assert described() == [URL]
    aws.elb.modify_rule(RuleArn=created["RuleArn"], Conditions=PATH, Actions=forward)
    assert described() == [URL], "kept when ModifyRule does not name them"
    aws.elb.modify_rule(RuleArn=created["RuleArn"], Conditions=PATH, Actions=forward, ResetTransforms=True)
    assert described() == []
    with pytest.raises(ClientError) as e:
        aws.elb.modify_rule(RuleArn=created["RuleArn"], Conditions=PATH, Actions=forward, Transforms=[URL],
                            ResetTransforms=True)
    assert code_of(e) == "ValidationError"
    plain = aws.elb.create_rule(ListenerArn=listener, Priority=2, Actions=forward,
                                Conditions=[{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/b"]}}])
    assert not plain["Rules"][0].get("Transforms")


@pytest.mark.parametrize("transforms", [
    [URL, URL],
    [{"Type": "path-rewrite", "UrlRewriteConfig": URL["UrlRewriteConfig"]}],
    [{"Type": "url-rewrite"}],
    [{"Type": "url-rewrite", "UrlRewriteConfig": {"Rewrites": []}}],
    [dict(URL, HostHeaderRewriteConfig=HOST["HostHeaderRewriteConfig"])],
    [{"Type": "url-rewrite", "UrlRewriteConfig": {"Rewrites": [{"Regex": "^/(?=a)", "Replace": "/"}]}}],
    [{"Type": "url-rewrite", "UrlRewriteConfig": {"Rewrites": [{"Regex": "a" * 1025, "Replace": "/"}]}}],
    [{"Type": "url-rewrite", "UrlRewriteConfig": {"Rewrites": [{"Regex": "^/a$", "Replace": "b" * 1025}]}}],
])
def test_bad_transforms_are_refused(emu, aws, transforms):
    tg, listener = _listener(aws, "emu-xf-bad")
    with pytest.raises(ClientError) as e:
        aws.elb.create_rule(ListenerArn=listener, Priority=1, Conditions=PATH, Transforms=transforms,
                            Actions=[{"Type": "forward", "TargetGroupArn": tg}])
    assert code_of(e) == "ValidationError", transforms
