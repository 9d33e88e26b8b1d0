"""awsemu patches for listener rule transforms, which moto 5 ignores (CreateRule and ModifyRule drop `Transforms`).

  * CreateRule and ModifyRule accept `Transforms`, checked as the ELBv2 API reference and the ALB guide document them:
    type host-header-rewrite or url-rewrite with its own config (HostHeaderRewriteConfig / UrlRewriteConfig) and not
    the other's, at most one transform of each type per rule, at least one rewrite, each Regex 1..1024 characters
    without the features ALB regexes lack (lookaround, backreferences, atomic groups, Unicode classes) and each Replace
    at most 1024 characters. A violation is a ValidationError.
  * ModifyRule without Transforms keeps the rule's; ResetTransforms=true removes them; both at once is a
    ValidationError (our reading: the two ask for opposite things).
  * The default rule takes no transform (InvalidConfigurationRequest).
  * Stored and described as sent, CreateRule's and ModifyRule's answers included.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from listener_patches import _UNSUPPORTED_REGEX  # next to this file: the regex features ALB lacks

_CONFIG = {"host-header-rewrite": "HostHeaderRewriteConfig", "url-rewrite": "UrlRewriteConfig"}
_MAX = 1024
# The transforms of the request being answered, for the backend calls below it (the emulator serves one request
# at a time per thread).
_request = threading.local()


def _truthy(v: Any) -> bool:
    return v is True or str(v).lower() == "true"


def _problem(transforms: list[dict[str, Any]]) -> str | None:
    """Why AWS would refuse these transforms, or None."""
    seen: set[str] = set()
    for t in transforms:
        kind = t.get("Type")
        if kind not in _CONFIG:
            return f"Transform type '{kind}' is not valid"
        if kind in seen:
            return f"A rule can have only one {kind} transform"
        seen.add(kind)
        other = [k for k in _CONFIG.values() if k != _CONFIG[kind] and t.get(k)]
        if other:
            return f"{other[0]} cannot be specified for a {kind} transform"
        rewrites = (t.get(_CONFIG[kind]) or {}).get("Rewrites") or []
        if not rewrites:
            return f"A {kind} transform needs at least one rewrite"
        for rw in rewrites:
            regex, replace = rw.get("Regex") or "", rw.get("Replace")
            if replace is None:
                return "Replace is required in a rewrite"
            if not regex or len(regex) > _MAX or len(replace) > _MAX:
                return f"Regex must be 1 to {_MAX} characters and Replace at most {_MAX}"
            try:
                re.compile(regex)
            except re.error as e:
                return f"The regex '{regex}' is invalid: {e}"
            if _UNSUPPORTED_REGEX.search(regex):
                return f"The regex '{regex}' uses a feature that is not supported"
    return None


def install() -> None:
    from moto.elbv2 import exceptions as x
    from moto.elbv2 import models as m
    from moto.elbv2 import responses as r

    def checked(transforms: Any) -> list[dict[str, Any]]:
        transforms = list(transforms or [])
        if (problem := _problem(transforms)) is not None:
            raise x.ELBClientError("ValidationError", problem)
        return transforms

    orig_create_answer = r.ELBV2Response.create_rule

    def create_rule_answer(self: Any) -> Any:
        _request.create = checked(self._get_params().get("Transforms"))
        try:
            return orig_create_answer(self)
        finally:
            _request.create = None

    orig_create = m.ELBv2Backend.create_rule

    def create_rule(self: Any, *args: Any, **kwargs: Any) -> Any:
        rule = orig_create(self, *args, **kwargs)
        rule.transforms = getattr(_request, "create", None) or []
        return rule

    orig_modify_answer = r.ELBV2Response.modify_rule

    def modify_rule_answer(self: Any) -> Any:
        params = self._get_params()
        given, reset = params.get("Transforms"), _truthy(params.get("ResetTransforms"))
        if given and reset:
            raise x.ELBClientError("ValidationError", "Transforms and ResetTransforms cannot be specified together")
        _request.modify = (checked(given) if given else None, reset)
        try:
            return orig_modify_answer(self)
        finally:
            _request.modify = None

    orig_modify = m.ELBv2Backend.modify_rule

    def modify_rule(self: Any, rule_arn: str, conditions: list[dict[str, Any]], actions: list[dict[str, Any]]) -> Any:
        given, reset = getattr(_request, "modify", None) or (None, False)
        found = self.describe_rules(listener_arn=None, rule_arns=[rule_arn])
        if given and found and getattr(found[0], "is_default", False):
            raise x.ELBClientError("InvalidConfigurationRequest", "A default rule cannot have transforms")
        rule = orig_modify(self, rule_arn, conditions, actions)
        if given is not None:
            rule.transforms = given
        elif reset:
            rule.transforms = []
        return rule

    r.ELBV2Response.create_rule = create_rule_answer
    r.ELBV2Response.modify_rule = modify_rule_answer
    m.ELBv2Backend.create_rule = create_rule
    m.ELBv2Backend.modify_rule = modify_rule
