"""Self-test of wafregional_patches.py through awsemu: WAF Classic web ACLs and their load balancer associations."""

import pytest
from botocore.exceptions import ClientError

from test_awsemu import aws, client, ctl, emu, reset  # noqa: F401 (fixtures)
from test_shield_patches import _alb


def _acl(waf, name):
    token = waf.get_change_token()["ChangeToken"]
    return waf.create_web_acl(Name=name, MetricName=name, DefaultAction={"Type": "ALLOW"},
                              ChangeToken=token)["WebACL"]["WebACLId"]


def code_of(e):
    return e.value.response["Error"]["Code"]


def test_associate_replaces_disassociate_removes_unknowns_refused(emu, reset, aws):  # noqa: F811
    waf = client(emu, "waf-regional")
    lb = _alb(aws, "classic")
    a, b = _acl(waf, "a"), _acl(waf, "b")
    assert sorted(x["Name"] for x in waf.list_web_acls()["WebACLs"]) == ["a", "b"]
    assert "WebACLSummary" not in waf.get_web_acl_for_resource(ResourceArn=lb)
    waf.associate_web_acl(WebACLId=a, ResourceArn=lb)
    assert waf.get_web_acl_for_resource(ResourceArn=lb)["WebACLSummary"] == {"WebACLId": a, "Name": "a"}
    waf.associate_web_acl(WebACLId=b, ResourceArn=lb)
    assert waf.get_web_acl_for_resource(ResourceArn=lb)["WebACLSummary"]["WebACLId"] == b

    with pytest.raises(ClientError) as e:
        waf.associate_web_acl(WebACLId="nope", ResourceArn=lb)
    assert code_of(e) == "WAFNonexistentItemException"
    assert waf.get_web_acl_for_resource(ResourceArn=lb)["WebACLSummary"]["WebACLId"] == b, "changes nothing"
    with pytest.raises(ClientError) as e:
        waf.get_web_acl_for_resource(ResourceArn=lb.replace("/classic/", "/gone/"))
    assert code_of(e) == "WAFNonexistentItemException"
    with pytest.raises(ClientError) as e:
        waf.delete_web_acl(WebACLId=b, ChangeToken=waf.get_change_token()["ChangeToken"])
    assert code_of(e) == "WAFNonEmptyEntityException"

    waf.disassociate_web_acl(ResourceArn=lb)
    assert "WebACLSummary" not in waf.get_web_acl_for_resource(ResourceArn=lb)
    waf.delete_web_acl(WebACLId=b, ChangeToken=waf.get_change_token()["ChangeToken"])
    assert [x["Name"] for x in waf.list_web_acls()["WebACLs"]] == ["a"]
    calls = [c for c in ctl(emu, "GET", "calls")[1]["calls"] if c["service"] == "waf-regional"]
    assert {"AssociateWebACL", "GetWebACLForResource", "DisassociateWebACL"} <= {c["operation"] for c in calls}


def test_reset_forgets_web_acls(emu, reset, aws):  # noqa: F811
    waf = client(emu, "waf-regional")
    _acl(waf, "x")
    assert ctl(emu, "POST", "reset")[0] == 200
    assert waf.list_web_acls()["WebACLs"] == []
