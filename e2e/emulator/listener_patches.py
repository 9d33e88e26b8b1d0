"""awsemu patches for listener certificates and listener rules, where moto 5 differs from ELBv2.

Certificates (moto keeps `listener.certificates` = [default] + attached SNI certificates):
  * Create/Describe/ModifyListener answer the default certificate only (moto lists all of them);
  * ModifyListener replaces the default certificate and keeps the SNI ones (moto replaced the whole list), and
    accepts TLS/UDP/TCP_UDP listeners (moto answered UnsupportedProtocol for anything but HTTP/HTTPS/TCP);
  * AddListenerCertificates refuses unknown certificates and ignores ones already attached;
    RemoveListenerCertificates never removes the default certificate.
Rules:
  * AWS never returns an authenticate-oidc ClientSecret; CreateRule needs one, ModifyRule needs one or
    UseExistingClientSecret=true (moto stored and echoed whatever it got);
  * DescribeTags on an unknown rule ARN is RuleNotFound;
  * SetRulePriorities checks the listener's priorities as they are after the whole call, as AWS documents ("no
    priority conflicts in the new order"): shifting rules up by one in one call is accepted (moto compared every
    new priority with the current ones and refused any shift with PriorityInUse);
  * host-header, path-pattern and http-header conditions accept RegexValues (moto required Values and failed with
    a KeyError): exactly one of Values / RegexValues, each regex at most 128 characters, valid, and without the
    features ALB regexes lack (lookaround, backreferences, atomic groups, Unicode classes); an http-header
    condition still needs its HttpHeaderName (at most 40 characters). Stored and described as sent.
"""

from __future__ import annotations

import re
from typing import Any

# Constructs ALB rule regexes do not support (AWS "Condition types for listener rules").
_UNSUPPORTED_REGEX = re.compile(r"\(\?<?[=!]|\(\?>|\\[1-9]|\\[pP]\{|[*+?}]\+")


def _truthy(v: Any) -> bool:
    return v is True or str(v).lower() == "true"


def install() -> None:
    from moto.elbv2 import exceptions as x
    from moto.elbv2 import models as m
    from moto.elbv2 import responses as r

    def default_only(data: list[str]) -> list[dict[str, str]] | None:
        return [{"CertificateArn": data[0]}] if data else None

    for op in ("CreateListener", "DescribeListeners", "ModifyListener"):
        r.ELBV2Response.RESPONSE_KEY_PATH_TO_TRANSFORMER[f"{op}Output.Listeners.Listener.Certificates"] = default_only

    orig_modify_listener = m.ELBv2Backend.modify_listener

    def modify_listener(self: Any, arn: str, port: str | None = None, protocol: str | None = None,
                        ssl_policy: str | None = None, certificates: list[dict[str, Any]] | None = None,
                        actions: list[dict[str, Any]] | None = None) -> Any:
        listener = self.describe_listeners(None, [arn])[0]
        wanted = (protocol or listener.protocol).upper()
        default = certificates[0]["CertificateArn"] if certificates else None
        if default and not self._certificate_exists(certificate_arn=default):
            raise x.ELBClientError("CertificateNotFound", f"Certificate '{default}' not found")
        if wanted in ("HTTPS", "TLS") and not default and not listener.certificates:
            raise x.ELBClientError("InvalidConfigurationRequest",
                              f"You must provide exactly one certificate if the listener protocol is {wanted}.")
        extras = listener.certificates[1:]
        # moto handles port, SSL policy and actions; protocol and certificates are ours.
        orig_modify_listener(self, arn, port, None, ssl_policy, [], actions)
        listener.protocol = wanted
        if wanted not in ("HTTPS", "TLS"):
            listener.certificate, listener.certificates = None, []
        elif default:
            listener.certificate, listener.certificates = default, [default] + extras
        return listener

    m.ELBv2Backend.modify_listener = modify_listener

    orig_add_certs = m.ELBv2Backend.add_listener_certificates

    def add_listener_certificates(self: Any, arn: str, certificates: list[dict[str, Any]]) -> list[str]:
        listener = self.describe_listeners(None, [arn])[0]
        new = []
        for c in certificates:
            cert = c["CertificateArn"]
            if not self._certificate_exists(certificate_arn=cert):
                raise x.ELBClientError("CertificateNotFound", f"Certificate '{cert}' not found")
            if cert not in listener.certificates[1:] and cert not in (n["CertificateArn"] for n in new):
                new.append(c)
        return orig_add_certs(self, arn, new)

    m.ELBv2Backend.add_listener_certificates = add_listener_certificates

    def remove_listener_certificates(self: Any, arn: str, certificates: list[dict[str, Any]]) -> None:
        listener = self.describe_listeners(None, [arn])[0]
        gone = {c["CertificateArn"] for c in certificates}
        listener.certificates = listener.certificates[:1] + [c for c in listener.certificates[1:] if c not in gone]

    m.ELBv2Backend.remove_listener_certificates = remove_listener_certificates

    def oidc_configs(actions: list[Any]) -> list[dict[str, Any]]:
        out = []
        for a in actions:
            data = a.data if hasattr(a, "data") else a
            if data.get("Type") == "authenticate-oidc" and isinstance(data.get("AuthenticateOidcConfig"), dict):
                out.append(data["AuthenticateOidcConfig"])
        return out

    def forget_secrets(rule: Any) -> Any:
        for cfg in oidc_configs(rule.actions):
            cfg.pop("ClientSecret", None)
            cfg.pop("UseExistingClientSecret", None)
        return rule

    orig_create_rule = m.ELBv2Backend.create_rule

    def create_rule(self: Any, listener_arn: str, conditions: list[dict[str, Any]], priority: int,
                    actions: list[dict[str, Any]], tags: list[dict[str, str]] | None = None) -> Any:
        if any(not cfg.get("ClientSecret") for cfg in oidc_configs(actions)):
            raise x.ELBClientError("ValidationError", "A client secret must be specified for an authenticate-oidc action "
                                                 "when creating a rule")
        return forget_secrets(orig_create_rule(self, listener_arn, conditions, priority, actions, tags))

    m.ELBv2Backend.create_rule = create_rule

    orig_modify_rule = m.ELBv2Backend.modify_rule

    def modify_rule(self: Any, rule_arn: str, conditions: list[dict[str, Any]], actions: list[dict[str, Any]]) -> Any:
        for cfg in oidc_configs(actions or []):
            if not cfg.get("ClientSecret") and not _truthy(cfg.get("UseExistingClientSecret")):
                raise x.ELBClientError("ValidationError", "Specify a client secret or set UseExistingClientSecret to true")
        return forget_secrets(orig_modify_rule(self, rule_arn, conditions, actions))

    m.ELBv2Backend.modify_rule = modify_rule

    def regex_or_values(field: str, config_key: str) -> Any:
        orig = getattr(m.ELBv2Backend, f"_validate_{field.replace('-', '_')}_condition")

        def validate(self: Any, condition: dict[str, Any]) -> None:
            cfg = condition.get(config_key)
            if not isinstance(cfg, dict) or "RegexValues" not in cfg:
                return orig(self, condition)
            if cfg.get("Values"):
                raise x.InvalidConditionValueError(
                    f"You cannot specify both Values and RegexValues in '{config_key}'")
            if config_key == "HttpHeaderConfig":
                name = cfg.get("HttpHeaderName") or ""
                if not name:
                    raise x.InvalidConditionValueError("A 'HttpHeaderName' must be specified with 'http-header'")
                if len(name) > 40:
                    raise x.InvalidConditionValueError("The 'HttpHeaderName' value is too long; the limit is '40'")
            regexes = cfg.get("RegexValues") or []
            if not regexes:
                raise x.InvalidConditionValueError("A condition value must be specified")
            for v in regexes:
                if len(v) > 128:
                    raise x.InvalidConditionValueError(f"The '{field}' regex value is too long; the limit is '128'")
                try:
                    re.compile(v)
                except re.error as e:
                    raise x.InvalidConditionValueError(f"The '{field}' regex value '{v}' is invalid: {e}")
                if _UNSUPPORTED_REGEX.search(v):
                    raise x.InvalidConditionValueError(
                        f"The '{field}' regex value '{v}' uses a feature that is not supported")

        return validate

    m.ELBv2Backend._validate_host_header_condition = regex_or_values("host-header", "HostHeaderConfig")
    m.ELBv2Backend._validate_path_pattern_condition = regex_or_values("path-pattern", "PathPatternConfig")
    m.ELBv2Backend._validate_http_header_condition = regex_or_values("http-header", "HttpHeaderConfig")

    def set_rule_priorities(self: Any, rule_priorities: list[dict[str, Any]]) -> list[Any]:
        wanted: dict[str, Any] = {}  # priorities kept as moto parsed them
        for rp in rule_priorities:
            if rp["RuleArn"] in wanted or str(rp["Priority"]) in {str(v) for v in wanted.values()}:
                raise x.DuplicatePriorityError(rp["Priority"])
            wanted[rp["RuleArn"]] = rp["Priority"]
        rules = []
        for arn in wanted:
            found = self.describe_rules(listener_arn=None, rule_arns=[arn])
            if not found:
                raise x.RuleNotFoundError()
            rules.append(found[0])
        for rule in rules:  # the order after the call: rules not named keep their priority
            listener = self.describe_listeners(None, [rule.listener_arn])[0]
            for other in listener.rules.values():
                if other.arn not in wanted and str(other.priority) == str(wanted[rule.arn]):
                    raise x.PriorityInUseError()
        for rule in rules:
            rule.priority = wanted[rule.arn]
        return rules

    m.ELBv2Backend.set_rule_priorities = set_rule_priorities

    orig_describe_tags = m.ELBv2Backend.describe_tags

    def describe_tags(self: Any, resource_arns: list[str]) -> dict[str, dict[str, str]]:
        rules = {rule.arn for lb in self.load_balancers.values() for lst in lb.listeners.values()
                 for rule in lst.rules.values()}
        if any(":listener-rule/" in a and a not in rules for a in resource_arns):
            raise x.RuleNotFoundError("One or more rules not found")
        return orig_describe_tags(self, resource_arns)

    m.ELBv2Backend.describe_tags = describe_tags
