"""awsemu patch for WAFv2's AssociateWebACL: as in AWS, associating a resource that already has a web ACL
replaces that association (moto 5.2.5 added the resource to the new ACL and left it on the old one, so
GetWebACLForResource kept answering with the old ACL).
"""

from __future__ import annotations

from typing import Any


def install() -> None:
    from moto.wafv2.models import WAFV2Backend

    original = WAFV2Backend.associate_web_acl

    def associate_web_acl(self: Any, web_acl_arn: str, resource_arn: str) -> None:
        if web_acl_arn in self.wacls:  # an unknown ACL keeps moto's error and changes nothing
            for acl in self.wacls.values():
                while resource_arn in acl.associated_resources:
                    acl.associated_resources.remove(resource_arn)
        original(self, web_acl_arn, resource_arn)

    WAFV2Backend.associate_web_acl = associate_web_acl
