"""Self-test of wafv2_patches.py through awsemu: a new association replaces the old one."""

import pytest
from botocore.exceptions import ClientError

from test_awsemu import client, ctl, emu, reset  # noqa: F401 (fixtures)

LB = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/web/1"


def _acl(waf, name):
    return waf.create_web_acl(Name=name, Scope="REGIONAL", DefaultAction={"Allow": {}}, VisibilityConfig={
        "SampledRequestsEnabled": False, "CloudWatchMetricsEnabled": False, "MetricName": name})["Summary"]["ARN"]


def test_associate_replaces_and_disassociate_removes(emu, reset):  # noqa: F811
    waf = client(emu, "wafv2")
    a, b = _acl(waf, "a"), _acl(waf, "b")
    assert "WebACL" not in waf.get_web_acl_for_resource(ResourceArn=LB)
    waf.associate_web_acl(WebACLArn=a, ResourceArn=LB)
    assert waf.get_web_acl_for_resource(ResourceArn=LB)["WebACL"]["ARN"] == a
    waf.associate_web_acl(WebACLArn=b, ResourceArn=LB)
    assert waf.get_web_acl_for_resource(ResourceArn=LB)["WebACL"]["ARN"] == b
    with pytest.raises(ClientError) as e:
        waf.associate_web_acl(WebACLArn=a.replace("/a/", "/nope/"), ResourceArn=LB)
    assert e.value.response["Error"]["Code"] == "WAFNonexistentItemException"
    assert waf.get_web_acl_for_resource(ResourceArn=LB)["WebACL"]["ARN"] == b, "a failed call changes nothing"
    waf.disassociate_web_acl(ResourceArn=LB)
    assert "WebACL" not in waf.get_web_acl_for_resource(ResourceArn=LB)
    ops = [c["operation"] for c in ctl(emu, "GET", "calls")[1]["calls"]]
    assert "AssociateWebACL" in ops and "GetWebACLForResource" in ops, ops
