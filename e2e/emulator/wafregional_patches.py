"""WAF Classic for load balancers (WAF Regional's JSON API, `AWSWAF_Regional_20161128`), which moto 5.2.5 does
not have: the whole service is ours, the part a load balancer controller and its tests use, shaped as AWS
documents it:

  * GetChangeToken; CreateWebACL (Name, MetricName, DefaultAction, ChangeToken), ListWebACLs, DeleteWebACL
    (refused while the ACL is associated: WAFNonEmptyEntityException);
  * GetWebACLForResource (an empty answer for a resource without a web ACL), AssociateWebACL (replaces an
    existing association), DisassociateWebACL; an unknown web ACL or load balancer is WAFNonexistentItemException.

Load balancers are looked up in moto's ELBv2 backend of the request's account and region.
"""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

TARGET_PREFIX = "AWSWAF_Regional_20161128."
_LOCK = threading.Lock()
_ACLS: dict[str, dict[str, Any]] = {}  # web ACL ID -> {Name, MetricName, DefaultAction, region}
_ASSOCIATIONS: dict[str, str] = {}  # resource ARN -> web ACL ID


class WafError(Exception):
    def __init__(self, code: str, message: str, status: int = 400):
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


def reset() -> None:
    with _LOCK:
        _ACLS.clear()
        _ASSOCIATIONS.clear()


def _load_balancer_exists(arn: str, region: str) -> bool:
    from moto.elbv2.models import elbv2_backends
    account = arn.split(":")[4] if arn.count(":") >= 5 else ""
    try:
        return arn in elbv2_backends[account][region].load_balancers
    except KeyError:
        return False


def _need(params: dict[str, Any], *keys: str) -> None:
    missing = [k for k in keys if not params.get(k)]
    if missing:
        raise WafError("ValidationException", f"missing required parameter(s): {', '.join(missing)}")


def _acl(acl_id: str) -> dict[str, Any]:
    acl = _ACLS.get(acl_id)
    if acl is None:
        raise WafError("WAFNonexistentItemException", f"The referenced item does not exist: web ACL {acl_id}")
    return acl


def call(operation: str, params: dict[str, Any], region: str) -> dict[str, Any]:
    with _LOCK:
        if operation == "GetChangeToken":
            return {"ChangeToken": str(uuid.uuid4())}
        if operation == "CreateWebACL":
            _need(params, "Name", "MetricName", "DefaultAction", "ChangeToken")
            acl_id = str(uuid.uuid4())
            _ACLS[acl_id] = {"Name": params["Name"], "MetricName": params["MetricName"],
                             "DefaultAction": params["DefaultAction"], "region": region}
            acl = {"WebACLId": acl_id, "Name": params["Name"], "MetricName": params["MetricName"],
                   "DefaultAction": params["DefaultAction"], "Rules": [],
                   "WebACLArn": f"arn:aws:waf-regional:{region}:123456789012:webacl/{acl_id}"}
            return {"WebACL": acl, "ChangeToken": params["ChangeToken"]}
        if operation == "ListWebACLs":
            return {"WebACLs": [{"WebACLId": i, "Name": a["Name"]} for i, a in _ACLS.items() if a["region"] == region]}
        if operation == "DeleteWebACL":
            _need(params, "WebACLId", "ChangeToken")
            _acl(params["WebACLId"])
            if params["WebACLId"] in _ASSOCIATIONS.values():
                raise WafError("WAFNonEmptyEntityException", "The web ACL is still associated with a resource")
            del _ACLS[params["WebACLId"]]
            return {"ChangeToken": params["ChangeToken"]}
        if operation in ("GetWebACLForResource", "AssociateWebACL", "DisassociateWebACL"):
            _need(params, "ResourceArn")
            arn = params["ResourceArn"]
            if not _load_balancer_exists(arn, region):
                raise WafError("WAFNonexistentItemException", f"The referenced item does not exist: {arn}")
            if operation == "GetWebACLForResource":
                acl_id = _ASSOCIATIONS.get(arn)
                if acl_id is None:
                    return {}
                return {"WebACLSummary": {"WebACLId": acl_id, "Name": _ACLS[acl_id]["Name"]}}
            if operation == "AssociateWebACL":
                _need(params, "WebACLId")
                _acl(params["WebACLId"])
                _ASSOCIATIONS[arn] = params["WebACLId"]
                return {}
            _ASSOCIATIONS.pop(arn, None)
            return {}
    raise WafError("InvalidAction", f"WAF Regional operation {operation} is not emulated", 400)


def handle(target: str, raw: bytes, region: str) -> tuple[int, list, bytes]:
    """One WAF Regional request (its X-Amz-Target and JSON body) -> (status, headers, body)."""
    rid = str(uuid.uuid4())
    headers = [("Content-Type", "application/x-amz-json-1.1"), ("x-amzn-RequestId", rid)]
    try:
        if not target.startswith(TARGET_PREFIX):
            raise WafError("UnknownOperationException", f"unknown target {target!r}")
        params = json.loads(raw or b"{}")
        out = call(target[len(TARGET_PREFIX):], params, region)
        return 200, headers, json.dumps(out).encode()
    except WafError as e:
        body = json.dumps({"__type": e.code, "message": e.message}).encode()
        return e.status, headers + [("x-amzn-ErrorType", e.code)], body
    except ValueError as e:
        body = json.dumps({"__type": "SerializationException", "message": str(e)}).encode()
        return 400, headers, body
