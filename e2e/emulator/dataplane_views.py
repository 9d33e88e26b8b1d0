"""awsemu views for the e2e data plane (lbc-dataplane): what a load balancer's listeners, rules and target groups
look like, read from moto's models, and the health states the data plane measured.

The data plane follows what the controller created through these views instead of the AWS API, so the
controller's call counts in the call log stay its own. Times are Unix seconds (float): the data plane runs on the
same machine and compares them with its own clock.
"""

from __future__ import annotations

import hashlib
from typing import Any

from transform_patches import _CONFIG as _REWRITE_CONFIG  # next to this file: transform type -> its config key

MEASURED_STATES = ("initial", "healthy", "unhealthy", "unavailable")


class ViewError(Exception):
    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def backend_for(arn: str) -> Any:
    """The ELBv2 backend that owns `arn` (arn:aws:elasticloadbalancing:REGION:ACCOUNT:...)."""
    from moto.elbv2.models import elbv2_backends
    parts = arn.split(":")
    if len(parts) < 6 or parts[2] != "elasticloadbalancing":
        raise ViewError(f"{arn!r} is not an ELBv2 ARN (arn:aws:elasticloadbalancing:REGION:ACCOUNT:...)")
    return elbv2_backends[parts[4]][parts[3]]


def _int(v: Any, default: int | None = None) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


def health_check_view(tg: Any) -> dict[str, Any]:
    port = tg.health_check_port or "traffic-port"
    return {
        "enabled": str(tg.health_check_enabled).lower() != "false",
        "protocol": (tg.health_check_protocol or tg.protocol or "TCP").upper(),
        "port": port if port == "traffic-port" else _int(port, port),
        "path": tg.health_check_path,
        "interval_seconds": _int(tg.health_check_interval_seconds, 30),
        "timeout_seconds": _int(tg.health_check_timeout_seconds, 10),
        "healthy_threshold": _int(tg.healthy_threshold_count, 5),
        "unhealthy_threshold": _int(tg.unhealthy_threshold_count, 2),
        "matcher": (getattr(tg, "matcher", None) or {}).get("HttpCode"),
    }


def target_group_view(tg: Any, draining: dict[str, dict[str, Any]], now_unix: float, now_mono: float,
                      time_scale: float) -> dict[str, Any]:
    """`draining` is the target group's live draining map (expired entries already dropped)."""
    registered = [{"id": e["Id"], "port": e["Port"], "availability_zone": e.get("AvailabilityZone"),
                   "registered_at": e.get("registered_unix"), "measured": e.get("measured")}
                  for e in tg.targets.values()]
    drain = [{"id": e["Id"], "port": e["Port"], "registered_at": e.get("registered_unix"),
              "deregistered_at": e.get("deregistered_unix"), "drain_until": now_unix + (e["until"] - now_mono)}
             for e in draining.values()]
    return {
        "target_group_arn": tg.arn, "name": tg.name, "protocol": tg.protocol, "port": _int(tg.port, tg.port),
        "target_type": tg.target_type, "health_check": health_check_view(tg),
        "deregistration_delay_seconds": _int(tg.attributes.get("deregistration_delay.timeout_seconds"), 300),
        "time_scale": time_scale, "measured": bool(tg.__dict__.get("emu_measured")),
        "targets": registered, "draining": drain,
    }


def _condition(c: dict[str, Any]) -> dict[str, Any]:
    field = c.get("Field")
    config_key = {"path-pattern": "PathPatternConfig", "host-header": "HostHeaderConfig",
                  "http-header": "HttpHeaderConfig", "http-request-method": "HttpRequestMethodConfig",
                  "query-string": "QueryStringConfig", "source-ip": "SourceIpConfig"}.get(field)
    cfg = c.get(config_key) or {} if config_key else {}
    out: dict[str, Any] = {"field": field, "values": list(cfg.get("Values") or c.get("Values") or [])}
    if cfg.get("RegexValues"):
        out["regex_values"] = list(cfg["RegexValues"])
    if field == "http-header":
        out["header_name"] = cfg.get("HttpHeaderName")
    if field == "query-string":
        out["values"] = [{"key": kv.get("Key"), "value": kv.get("Value")} for kv in cfg.get("Values") or []]
    return out


def _action(data: dict[str, Any]) -> dict[str, Any]:
    kind = data.get("Type")
    out: dict[str, Any] = {"type": kind, "order": _int(data.get("Order"))}
    if kind == "forward":
        groups = (data.get("ForwardConfig") or {}).get("TargetGroups") or []
        if groups:
            out["target_groups"] = [{"arn": g["TargetGroupArn"], "weight": _int(g.get("Weight"), 1)} for g in groups]
        else:
            out["target_groups"] = [{"arn": data.get("TargetGroupArn"), "weight": 1}]
    elif kind == "fixed-response":
        cfg = data.get("FixedResponseConfig") or {}
        out.update(status_code=_int(cfg.get("StatusCode"), 200), content_type=cfg.get("ContentType"),
                   message_body=cfg.get("MessageBody"))
    else:
        out["config"] = {k: v for k, v in data.items() if k not in ("Type", "Order")}
    return out


def _transforms(rule: Any) -> list[dict[str, Any]]:
    """A rule's transforms as transform_patches.py stores them (`rule.transforms`, the API's shapes), in the view's
    shape: `[{"type", "rewrites": [{"regex", "replace"}]}]`; none: []."""
    out = []
    for t in getattr(rule, "transforms", None) or []:
        kind = t.get("Type")
        rewrites = (t.get(_REWRITE_CONFIG.get(kind, "")) or {}).get("Rewrites") or []
        out.append({"type": kind, "rewrites": [{"regex": r.get("Regex"), "replace": r.get("Replace")}
                                               for r in rewrites]})
    return out


def load_balancer_view(lb: Any) -> dict[str, Any]:
    listeners = []
    for lst in lb.listeners.values():
        rules = []
        for rule in lst.rules.values():
            if rule.is_default:
                continue
            rules.append({"arn": rule.arn, "priority": _int(rule.priority),
                          "conditions": [_condition(c) for c in rule.conditions or []],
                          "transforms": _transforms(rule),
                          "actions": sorted((_action(a.data) for a in rule.actions), key=lambda a: a["order"] or 0)})
        rules.sort(key=lambda r: r["priority"] if r["priority"] is not None else 1 << 30)
        listeners.append({"arn": lst.arn, "protocol": lst.protocol, "port": _int(lst.port),
                          "default_actions": sorted((_action(a.data) for a in lst.default_actions),
                                                    key=lambda a: a["order"] or 0),
                          "rules": rules, "certificates": listener_certificates(lst),
                          "ssl_policy": getattr(lst, "ssl_policy", None)})
    listeners.sort(key=lambda x: x["port"] or 0)
    return {"load_balancer_arn": lb.arn, "name": lb.name, "type": lb.type, "scheme": lb.scheme,
            "dns_name": lb.dns_name, "listeners": listeners}


def listener_certificates(lst: Any) -> list[dict[str, Any]]:
    """The listener's default certificate (is_default) first, then its certificate list (AddListenerCertificates),
    as listener_patches.py keeps them: `certificate` is the default, `certificates` = [default] + the list.
    `fingerprint` (SHA-256 of the PEM, null when the ARN is in neither ACM nor IAM) changes on a re-import to the
    same ARN, so the data plane knows to fetch the certificate again."""
    default = lst.certificate or (lst.certificates[0] if lst.certificates else None)
    listed = list(lst.certificates or [])
    extras = listed[1:] if listed[:1] == [default] else listed
    out = [{"certificate_arn": default, "is_default": True}] if default else []
    seen: set[str] = set()
    for arn in extras:
        if arn not in seen:
            seen.add(arn)
            out.append({"certificate_arn": arn, "is_default": False})
    for c in out:
        try:
            found = _certificate(c["certificate_arn"])
        except ViewError:
            found = None
        c["fingerprint"] = hashlib.sha256(found[0].encode()).hexdigest() if found else None
    return out


def _certificate(arn: str) -> tuple[str, str | None, str] | None:
    """(certificate PEM, chain PEM or None, private key PEM) of an ACM certificate or IAM server certificate, None
    when there is no such ARN; ViewError for an ARN of another service."""
    parts = arn.split(":")
    if len(parts) < 6 or parts[2] not in ("acm", "iam"):
        raise ViewError(f"{arn!r} is neither an ACM certificate ARN (arn:aws:acm:REGION:ACCOUNT:certificate/ID) "
                        "nor an IAM server certificate ARN (arn:aws:iam::ACCOUNT:server-certificate/NAME)")
    from moto.acm.models import AWS_ROOT_CA, acm_backends
    from moto.iam.models import iam_backends
    try:
        if parts[2] == "iam":
            cert = iam_backends[parts[4]][parts[1]].get_certificate_by_arn(arn)
            return (cert.cert_body, cert.cert_chain or None, cert.private_key) if cert else None
        bundle = acm_backends[parts[4]][parts[3]]._certificates.get(arn)
    except KeyError:  # a partition or region moto does not know
        return None
    if bundle is None:
        return None
    # moto appends its own "AWS root CA" to every chain (also to none): not part of what was imported.
    chain = bundle.chain.strip()
    if chain.endswith(AWS_ROOT_CA.strip()):
        chain = chain[:-len(AWS_ROOT_CA.strip())].strip()
    return bundle.cert.decode(), (chain.decode() + "\n") if chain else None, bundle.key.decode()


def certificate_view(arn: str) -> dict[str, Any]:
    """A listener certificate with its private key, for the data plane's TLS termination (HTTPS listeners)."""
    found = _certificate(arn)
    if found is None:
        where = "IAM server certificates" if arn.split(":")[2] == "iam" else "ACM"
        raise ViewError(f"certificate {arn} not found in {where} (account {arn.split(':')[4]})", 404)
    cert, chain, key = found
    return {"certificate_arn": arn, "certificate": cert, "certificate_chain": chain, "private_key": key}


def load_balancers_view() -> list[dict[str, Any]]:
    """Every ELBv2 load balancer of every account and region moto holds, sorted by ARN: what `lbc-dataplane fleet`
    serves. `state` is moto's code as it keeps it (`provisioning` until a DescribeLoadBalancers, then `active`):
    reading this view changes nothing."""
    from moto.elbv2.models import elbv2_backends
    out = []
    # Snapshots (list(...)): the control API does not take moto's lock, a call may add or delete one meanwhile.
    for regions in list(elbv2_backends.values()):
        for backend in list(regions.values()):
            for lb in list(backend.load_balancers.values()):
                out.append({"load_balancer_arn": lb.arn, "name": lb.name, "type": lb.type, "dns_name": lb.dns_name,
                            "state": lb.state})
    out.sort(key=lambda x: x["load_balancer_arn"])
    return out


def apply_measured(tg: Any, targets: list[Any], key_of: Any) -> dict[str, Any]:
    """Stores the measured health of registered targets. From the first push on, a registered target that has no
    measurement yet reads `initial`. A target no longer registered, or registered again since the data plane saw
    it (its `registered_at` differs), is returned as stale, not applied."""
    if not isinstance(targets, list):
        raise ViewError("targets must be a list of {id, port, state[, reason, description, registered_at]}")
    checked = []
    for t in targets:
        if not isinstance(t, dict) or not t.get("id") or t.get("state") not in MEASURED_STATES:
            raise ViewError(f"target {t!r}: needs id and state, one of {', '.join(MEASURED_STATES)}")
        checked.append(t)
    applied, stale = 0, []
    for t in checked:
        entry = tg.targets.get(key_of(t["id"], t.get("port", tg.port)))
        seen = t.get("registered_at")
        if entry is None or (seen is not None and abs(float(seen) - float(entry.get("registered_unix", 0))) > 1e-3):
            stale.append({"id": t["id"], "port": t.get("port")})
            continue
        entry["measured"] = {"state": t["state"], "reason": t.get("reason"), "description": t.get("description")}
        applied += 1
    tg.__dict__["emu_measured"] = True
    return {"applied": applied, "stale": stale}
