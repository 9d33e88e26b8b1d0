"""awsemu patches for the jwt-validation rule action, which moto 5 refuses as an unknown action type.

  * CreateRule, ModifyRule, CreateListener and ModifyListener accept `Type: jwt-validation` with a
    JwtValidationConfig, checked as the ELBv2 API reference documents it: Issuer and JwksEndpoint required, at most
    256 characters each, JwksEndpoint a full https:// URL; at most 10 AdditionalClaims, each with a Format of
    single-string / string-array / space-separated-values, a Name other than exp, iss, nbf and iat, and 1 to 10
    Values of at most 256 characters (no spaces for space-separated-values). A violation is a ValidationError.
  * JWT validation is for HTTPS listeners only: on any other listener the call is refused with
    InvalidConfigurationRequest (the message is ours; AWS's wording is not documented).
  * Stored and described as sent (moto's response shapes already carry JwtValidationConfig).
"""

from __future__ import annotations

from typing import Any

_FORMATS = ("single-string", "string-array", "space-separated-values")
_DEFAULT_CLAIMS = ("exp", "iss", "nbf", "iat")
_MAX = 256


def _problem(cfg: Any) -> str | None:
    """Why AWS would refuse this JwtValidationConfig, or None."""
    if not isinstance(cfg, dict):
        return "A JwtValidationConfig must be specified for a jwt-validation action"
    issuer, jwks = cfg.get("Issuer") or "", cfg.get("JwksEndpoint") or ""
    if not issuer or not jwks:
        return "Issuer and JwksEndpoint are required in JwtValidationConfig"
    if len(issuer) > _MAX or len(jwks) > _MAX:
        return f"Issuer and JwksEndpoint can be at most {_MAX} characters"
    host = jwks[len("https://"):].split("/")[0] if jwks.startswith("https://") else ""
    if not host:
        return f"JwksEndpoint '{jwks}' must be a full URL with the https protocol, the domain and the path"
    claims = cfg.get("AdditionalClaims") or []
    if len(claims) > 10:
        return "At most 10 additional claims can be specified"
    for c in claims:
        name, fmt, values = c.get("Name") or "", c.get("Format"), c.get("Values") or []
        if fmt not in _FORMATS:
            return f"Additional claim '{name}' has an invalid Format '{fmt}'"
        if not name or name in _DEFAULT_CLAIMS:
            return f"Additional claim name '{name}' is not allowed"
        if not 1 <= len(values) <= 10:
            return f"Additional claim '{name}' must have between 1 and 10 values"
        for v in values:
            if len(v) > _MAX:
                return f"Additional claim '{name}' values can be at most {_MAX} characters"
            if fmt == "space-separated-values" and " " in v:
                return f"Additional claim '{name}' values cannot contain spaces with the space-separated-values format"
    return None


def _has_jwt(actions: list[dict[str, Any]] | None) -> bool:
    return any(a.get("Type") == "jwt-validation" for a in actions or [])


def install() -> None:
    from moto.elbv2 import exceptions as x
    from moto.elbv2 import models as m

    def https_only(protocol: str | None) -> None:
        if (protocol or "").upper() != "HTTPS":
            raise x.ELBClientError("InvalidConfigurationRequest",
                                   f"A jwt-validation action is supported on HTTPS listeners only, not {protocol}")

    orig_validate = m.ELBv2Backend._validate_actions

    def validate_actions(self: Any, actions: list[Any]) -> None:
        for a in actions:
            if a.type == "jwt-validation" and (problem := _problem(a.data.get("JwtValidationConfig"))):
                raise x.ELBClientError("ValidationError", problem)
        orig_validate(self, [a for a in actions if a.type != "jwt-validation"])

    m.ELBv2Backend._validate_actions = validate_actions

    def listener_of(self: Any, arn: str) -> Any:
        found = self.describe_listeners(None, [arn])
        if not found:
            raise x.ListenerNotFoundError()
        return found[0]

    orig_create_rule = m.ELBv2Backend.create_rule

    def create_rule(self: Any, listener_arn: str, conditions: list[dict[str, Any]], priority: int,
                    actions: list[dict[str, Any]], tags: list[dict[str, str]] | None = None) -> Any:
        if _has_jwt(actions):
            https_only(listener_of(self, listener_arn).protocol)
        return orig_create_rule(self, listener_arn, conditions, priority, actions, tags)

    m.ELBv2Backend.create_rule = create_rule

    orig_modify_rule = m.ELBv2Backend.modify_rule

    def modify_rule(self: Any, rule_arn: str, conditions: list[dict[str, Any]], actions: list[dict[str, Any]]) -> Any:
        if _has_jwt(actions):
            rules = self.describe_rules(listener_arn=None, rule_arns=[rule_arn])
            if not rules:
                raise x.RuleNotFoundError()
            https_only(listener_of(self, rules[0].listener_arn).protocol)
        return orig_modify_rule(self, rule_arn, conditions, actions)

    m.ELBv2Backend.modify_rule = modify_rule

    orig_create_listener = m.ELBv2Backend.create_listener

    def create_listener(self: Any, load_balancer_arn: str, protocol: str, port: str, ssl_policy: str,
                        certificate: str | None, actions: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Any:
        if _has_jwt(actions):
            https_only(protocol)
        return orig_create_listener(self, load_balancer_arn, protocol, port, ssl_policy, certificate, actions,
                                    *args, **kwargs)

    m.ELBv2Backend.create_listener = create_listener

    orig_modify_listener = m.ELBv2Backend.modify_listener

    def modify_listener(self: Any, arn: str, port: str | None = None, protocol: str | None = None,
                        ssl_policy: str | None = None, certificates: list[dict[str, Any]] | None = None,
                        actions: list[dict[str, Any]] | None = None) -> Any:
        if _has_jwt(actions):
            https_only(protocol or listener_of(self, arn).protocol)
            validate_actions(self, [m.FakeAction(a) for a in actions or []])
        return orig_modify_listener(self, arn, port, protocol, ssl_policy, certificates, actions)

    m.ELBv2Backend.modify_listener = modify_listener
