#!/usr/bin/env python3
"""awsemu: moto's AWS emulator served in-process, plus what moto lacks for testing a load-balancer controller.

Adds (see README.md next to this file; listener certificate and rule fixes in listener_patches.py, ACM's
ListCertificates name summaries and pages in acm_patches.py):
  * ELBv2 targets keyed by (Id, Port) instead of Id only;
  * target health over time (initial -> healthy/unhealthy, draining for the deregistration delay), with
    policies per target / target group / global and forced states;
  * fault injection (error code, HTTP status, latency) by service + operation (+ target group, + target ID:
    the fault fires only on calls whose Targets include that ID, e.g. one poison target in a batch);
  * optional per-account token buckets (AWS-like throttling);
  * health measured by the e2e data plane (lbc-dataplane) answering DescribeTargetHealth, and read-only views of
    target groups and load balancers for it (dataplane_views.py);
  * a bounded log of every AWS call;
  * a JSON control API under /_awsemu/ (moto's own /moto-api/ stays reachable).

Run:  python awsemu.py --port 4566 [--host 127.0.0.1] [--verbose]   (port also from env AWSEMU_PORT)
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import logging
import os
import random
import re
import signal
import sys
import threading
import time
import urllib.parse
import uuid
from typing import Any

import acm_patches  # next to this file
import dataplane_views  # next to this file
import alb_target_patches  # next to this file
import lb_extras_patches  # next to this file
import jwt_patches  # next to this file
import listener_patches  # next to this file
import mtls_patches  # next to this file
import transform_patches  # next to this file
import quic_patches  # next to this file
import shield_patches  # next to this file
import wafregional_patches  # next to this file
import wafv2_patches  # next to this file

LOG = logging.getLogger("awsemu")

# --------------------------------------------------------------------------------------------------------------------
# Wrapper state (one lock for all of it)
# --------------------------------------------------------------------------------------------------------------------

HEALTH_STATES = ("healthy", "unhealthy", "initial", "draining", "unused", "unavailable")
DEFAULT_REASONS = {
    "initial": ("Elb.RegistrationInProgress", "Target registration is in progress"),
    "unhealthy": ("Target.FailedHealthChecks", "Health checks failed"),
    "draining": ("Target.DeregistrationInProgress", "Target deregistration is in progress"),
    "unused": ("Target.NotRegistered", "Target is not registered to the target group"),
    "unavailable": ("Target.HealthCheckDisabled", "Health checks are disabled"),
    "healthy": (None, None),
}
POLICY_FIELDS = ("initial_seconds", "then", "force", "reason", "description", "draining_seconds")
DEFAULT_GLOBAL_POLICY = {"initial_seconds": 2.0, "then": "healthy"}
DEFAULT_SETTINGS = {"time_scale": 0.01, "log_calls": False}
CALL_LOG_MAX = 200_000

# AWS-like per-account ELBv2 buckets used when token buckets are enabled without an explicit config.
DEFAULT_BUCKETS = [
    {"name": "elbv2-registration", "service": "elasticloadbalancing",
     "operations": ["RegisterTargets", "DeregisterTargets"], "rate": 10.0, "burst": 20},
    {"name": "elbv2-describe", "service": "elasticloadbalancing",
     "operations": "^Describe.*", "rate": 20.0, "burst": 40},
    {"name": "elbv2-mutating", "service": "elasticloadbalancing",
     "operations": ".*", "rate": 5.0, "burst": 10},
]


class ControlError(Exception):
    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class State:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.seq = 0  # monotonic across resets, so `since` pollers never go backwards
        self.calls: collections.deque = collections.deque(maxlen=CALL_LOG_MAX)
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.settings = dict(DEFAULT_SETTINGS)
            self.global_policy: dict[str, Any] = dict(DEFAULT_GLOBAL_POLICY)
            self.tg_policies: dict[str, dict[str, Any]] = {}
            self.target_policies: dict[tuple, dict[str, Any]] = {}
            self.faults: list[dict[str, Any]] = []
            self.fault_seq = 0
            self.buckets_enabled = False
            self.buckets: list[dict[str, Any]] = []
            self.calls.clear()

    # ---- health policies --------------------------------------------------------------------------------------------
    def policy_for(self, tg_arn: str, target_id: str, port: Any) -> dict[str, Any]:
        with self.lock:
            merged = dict(self.global_policy)
            merged.update(self.tg_policies.get(tg_arn, {}))
            for key in ((None, target_id, None), (None, target_id, port),
                        (tg_arn, target_id, None), (tg_arn, target_id, port)):
                merged.update(self.target_policies.get(key, {}))
            return merged

    def time_scale(self) -> float:
        with self.lock:
            return float(self.settings["time_scale"])


STATE = State()

# --------------------------------------------------------------------------------------------------------------------
# ELBv2 patches: (Id, Port) keyed targets and health over time
# --------------------------------------------------------------------------------------------------------------------

TG_LOCK = threading.RLock()


def _norm_port(port: Any) -> Any:
    if port is None or port == "":
        return None
    try:
        return int(port)
    except (TypeError, ValueError):
        return port


def _tkey(target_id: str, port: Any) -> str:
    # string key (not a tuple) so moto's /moto-api/data.json can still serialise FakeTargetGroup.targets
    return f"{target_id}|{'' if port is None else port}"


def _draining(tg: Any) -> dict[str, dict[str, Any]]:
    """A target group's draining targets (key -> entry with `until`, monotonic), expired ones dropped."""
    d = tg.__dict__.get("draining_targets")
    if d is None:
        d = tg.__dict__["draining_targets"] = collections.OrderedDict()
    now = time.monotonic()
    for k in [k for k, v in d.items() if v["until"] <= now]:
        del d[k]
    return d


def install_elbv2_patches() -> None:
    from moto.elbv2 import models as m

    class EmuHealthStatus:
        """Same attributes as moto's FakeHealthStatus (what the serializer reads), plus AvailabilityZone."""

        def __init__(self, target_id, port, health_port, status, reason=None, description=None, az=None,
                     quic=None):
            self.instance_id, self.port, self.health_check_port = target_id, port, health_port
            self.status, self.reason, self.description = status, reason, description
            self.availability_zone, self.quic_server_id = az, quic

        @property
        def target(self) -> dict[str, Any]:
            out: dict[str, Any] = {"Id": self.instance_id, "Port": self.port}
            if self.availability_zone:
                out["AvailabilityZone"] = self.availability_zone
            if self.quic_server_id:
                out["QuicServerId"] = self.quic_server_id
            return out

        @property
        def target_health(self) -> dict[str, Any]:
            return {"State": self.status, "Reason": self.reason, "Description": self.description}

    def _drain_seconds(tg: Any, target_id: str, port: Any) -> float:
        pol = STATE.policy_for(tg.arn, target_id, port)
        if pol.get("draining_seconds") is not None:
            return float(pol["draining_seconds"])
        try:
            attr = float(tg.attributes.get("deregistration_delay.timeout_seconds", 300))
        except (TypeError, ValueError):
            attr = 300.0
        return attr * STATE.time_scale()

    def register(self: Any, targets: list[dict[str, Any]]) -> None:
        with TG_LOCK:
            for t in targets:
                inst = self.ec2_backend.get_instance_by_id(t["Id"])
                if inst and inst.state != "running":
                    raise m.TargetNotRunning(instance_id=t["Id"])
            draining = _draining(self)
            now = time.monotonic()
            for t in targets:
                port = _norm_port(t.get("Port", self.port))
                key = _tkey(t["Id"], port)
                if key in self.targets:  # already registered: AWS treats this as a no-op
                    if t.get("AvailabilityZone"):
                        self.targets[key]["AvailabilityZone"] = t["AvailabilityZone"]
                    continue
                draining.pop(key, None)  # re-registering cancels draining and restarts at `initial`
                self.targets[key] = {"Id": t["Id"], "Port": port, "AvailabilityZone": t.get("AvailabilityZone"),
                                     "QuicServerId": t.get("QuicServerId"),
                                     "registered_at": now, "registered_unix": time.time()}
                self.deregistered_targets.pop(key, None)

    def deregister(self: Any, targets: list[dict[str, Any]]) -> None:
        with TG_LOCK:
            draining = _draining(self)
            keys = []
            for t in targets:
                key = _tkey(t["Id"], _norm_port(t.get("Port", self.port)))
                if key not in self.targets and key not in draining:
                    raise m.InvalidTargetError()  # moto's (and our) answer for a target never registered
                keys.append(key)
            now = time.monotonic()
            for key in keys:
                entry = self.targets.pop(key, None)
                if entry is None:
                    continue  # already draining: keep its timer
                draining[key] = dict(entry, until=now + _drain_seconds(self, entry["Id"], entry["Port"]),
                                     deregistered_unix=time.time())

    def deregister_terminated_instances(self: Any, instance_ids: list[str]) -> None:
        with TG_LOCK:
            draining = _draining(self)
            now = time.monotonic()
            for key in [k for k, v in self.targets.items() if v["Id"] in instance_ids]:
                entry = self.targets.pop(key)
                draining[key] = dict(entry, until=now + _drain_seconds(self, entry["Id"], entry["Port"]),
                                     deregistered_unix=time.time())

    def _status_registered(tg: Any, entry: dict[str, Any], ec2_backend: Any) -> Any:
        pol = STATE.policy_for(tg.arn, entry["Id"], entry["Port"])
        az = entry.get("AvailabilityZone")

        def mk(state: str, reason: Any = None, desc: Any = None) -> Any:
            d_reason, d_desc = DEFAULT_REASONS.get(state, (None, None))
            return EmuHealthStatus(entry["Id"], entry["Port"], tg.health_check_port, state,
                                   reason if reason is not None else d_reason,
                                   desc if desc is not None else d_desc, az, entry.get("QuicServerId"))

        if pol.get("force"):
            return mk(pol["force"], pol.get("reason"), pol.get("description"))
        if str(entry["Id"]).startswith("i-"):
            inst = ec2_backend.get_instance_by_id(entry["Id"])
            if inst and inst.state == "stopped":
                return mk("unused", "Target.InvalidState", "Target is in the stopped state")
        measured = entry.get("measured")
        if measured:  # a data plane health-checks this target for real
            return mk(measured["state"], measured.get("reason"), measured.get("description"))
        if tg.__dict__.get("emu_measured"):  # measured target group, this target not checked yet
            return mk("initial")
        if time.monotonic() - entry["registered_at"] < float(pol.get("initial_seconds") or 0):
            return mk("initial")
        return mk(pol.get("then") or "healthy", pol.get("reason"), pol.get("description"))

    def _status_draining(tg: Any, entry: dict[str, Any]) -> Any:
        r, d = DEFAULT_REASONS["draining"]
        return EmuHealthStatus(entry["Id"], entry["Port"], tg.health_check_port, "draining", r, d,
                               entry.get("AvailabilityZone"), entry.get("QuicServerId"))

    def statuses_for(tg: Any, requested: list[dict[str, Any]] | None, ec2_backend: Any) -> list[Any]:
        with TG_LOCK:
            draining = _draining(tg)
            if not requested:
                return ([_status_registered(tg, e, ec2_backend) for e in tg.targets.values()]
                        + [_status_draining(tg, e) for e in draining.values()])
            out = []
            for t in requested:
                if "Port" in t and t["Port"] is not None:
                    port = _norm_port(t["Port"])
                    key = _tkey(t["Id"], port)
                    if key in tg.targets:
                        out.append(_status_registered(tg, tg.targets[key], ec2_backend))
                        continue
                    if key in draining:
                        out.append(_status_draining(tg, draining[key]))
                        continue
                else:  # no Port given: every registration of that Id
                    port = _norm_port(tg.port)
                    found = ([_status_registered(tg, e, ec2_backend) for e in tg.targets.values() if e["Id"] == t["Id"]]
                             + [_status_draining(tg, e) for e in draining.values() if e["Id"] == t["Id"]])
                    if found:
                        out.extend(found)
                        continue
                r, d = DEFAULT_REASONS["unused"]
                out.append(EmuHealthStatus(t["Id"], port, tg.health_check_port, "unused", r, d,
                                           t.get("AvailabilityZone")))
            return out

    def health_for(self: Any, target: dict[str, Any], ec2_backend: Any) -> Any:
        return statuses_for(self, [target], ec2_backend)[0]

    def describe_target_health(self: Any, target_group_arn: str, targets: list[dict[str, Any]]) -> list[Any]:
        tg = self.target_groups.get(target_group_arn)
        if tg is None:
            raise m.TargetGroupNotFoundError()
        return statuses_for(tg, targets, self.ec2_backend)

    m.FakeTargetGroup.register = register
    m.FakeTargetGroup.deregister = deregister
    m.FakeTargetGroup.deregister_terminated_instances = deregister_terminated_instances
    m.FakeTargetGroup.health_for = health_for
    m.ELBv2Backend.describe_target_health = describe_target_health


# --------------------------------------------------------------------------------------------------------------------
# ELBv2 load balancer / listener patches and EC2 security group patches (what moto 5.2.5 gets wrong for us)
# --------------------------------------------------------------------------------------------------------------------

LB_ARN_KIND = {"network": "net", "gateway": "gwy"}
DESCRIBE_TAGS_MAX = 20
_LB_TYPE = threading.local()


def install_lb_patches() -> None:
    from moto.elbv2 import exceptions as x
    from moto.elbv2 import models as m
    from moto.elbv2 import utils as u

    # 1. NLB (and GWLB) ARNs: loadbalancer/net/NAME/ID, not app/ (listener ARNs derive from them).
    def make_arn(account_id: str, name: str, lb_id: str, region_name: str) -> str:
        arn = u.make_arn_for_load_balancer(account_id=account_id, name=name, lb_id=lb_id, region_name=region_name)
        kind = LB_ARN_KIND.get(getattr(_LB_TYPE, "value", None) or "")
        return arn.replace(":loadbalancer/app/", f":loadbalancer/{kind}/") if kind else arn

    m.make_arn_for_load_balancer = make_arn

    def _subnet_ids(self: Any, subnet_ids: list[str], mappings: list[dict[str, Any]] | None) -> list[str]:
        return sorted(list(subnet_ids or []) + [mp["SubnetId"] for mp in mappings or []])

    orig_create_lb = m.ELBv2Backend.create_load_balancer

    # 2. CreateLoadBalancer: same name + same settings answers the existing one, else DuplicateLoadBalancerName;
    #    dualstack-without-public-ipv4 accepted; subnet mappings (EIP, private IPv4, IPv6) kept for Describe.
    def create_load_balancer(self: Any, name: str, security_groups: list[str], subnet_ids: list[str],
                             subnet_mappings: list[dict[str, str]] | None = None, scheme: str = "internet-facing",
                             loadbalancer_type: str | None = None, ip_address_type: str = "ipv4",
                             tags: list[dict[str, str]] | None = None) -> Any:
        for lb in self.load_balancers.values():
            if lb.name != name:
                continue
            same = (lb.type == (loadbalancer_type or "application")
                    and (lb.scheme or "internet-facing") == (scheme or "internet-facing")
                    and sorted(s.id for s in lb.subnets) == _subnet_ids(self, subnet_ids, subnet_mappings))
            if same:
                return lb
            raise x.DuplicateLoadBalancerName()
        wanted_ip_type = ip_address_type or "ipv4"
        _LB_TYPE.value = loadbalancer_type
        try:
            lb = orig_create_lb(self, name, security_groups, subnet_ids, subnet_mappings=subnet_mappings,
                                scheme=scheme, loadbalancer_type=loadbalancer_type,
                                ip_address_type="dualstack" if wanted_ip_type.startswith("dualstack") else
                                wanted_ip_type, tags=tags)
        finally:
            _LB_TYPE.value = None
        lb.ip_address_type = wanted_ip_type
        lb.__dict__["emu_mappings"] = {mp["SubnetId"]: mp for mp in subnet_mappings or []}
        return lb

    m.ELBv2Backend.create_load_balancer = create_load_balancer

    def availability_zones(self: Any) -> list[Any]:
        out = []
        for subnet in self.subnets:
            az = m.AvailabilityZone(subnet)
            mp = self.__dict__.get("emu_mappings", {}).get(subnet.id) or {}
            addr = {k: mp[k] for k in ("AllocationId", "PrivateIPv4Address", "IPv6Address") if mp.get(k)}
            if addr:
                az.load_balancer_addresses = [addr]
            if mp.get("SourceNatIpv6Prefix"):
                az.source_nat_ipv6_prefixes = [mp["SourceNatIpv6Prefix"]]
            out.append(az)
        return out

    m.FakeLoadBalancer.availability_zones = property(availability_zones)

    orig_set_subnets = m.ELBv2Backend.set_subnets

    def set_subnets(self: Any, arn: str, subnets: list[str], subnet_mappings: list[dict[str, Any]]) -> Any:
        out = orig_set_subnets(self, arn, subnets, subnet_mappings)
        self.load_balancers[arn].__dict__["emu_mappings"] = {mp["SubnetId"]: mp for mp in subnet_mappings or []}
        return out

    m.ELBv2Backend.set_subnets = set_subnets

    # 3. SetIpAddressType: dualstack-without-public-ipv4 too.
    orig_set_ip = m.ELBv2Backend.set_ip_address_type

    def set_ip_address_type(self: Any, arn: str, ip_type: str) -> None:
        if ip_type != "dualstack-without-public-ipv4":
            return orig_set_ip(self, arn, ip_type)
        balancer = self.load_balancers.get(arn)
        if balancer is None:
            raise x.LoadBalancerNotFoundError()
        balancer.ip_address_type = ip_type
        return None

    m.ELBv2Backend.set_ip_address_type = set_ip_address_type

    # 4. CreateListener: a second listener on the same port is DuplicateListener (moto compares the port with
    #    listener ARNs, so its own check never fires).
    orig_create_listener = m.ELBv2Backend.create_listener

    def create_listener(self: Any, load_balancer_arn: str, protocol: str, port: str, *args: Any, **kw: Any) -> Any:
        balancer = self.load_balancers.get(load_balancer_arn)
        if balancer is not None and any(str(l.port) == str(port) for l in balancer.listeners.values()):
            raise x.DuplicateListenerError()
        return orig_create_listener(self, load_balancer_arn, protocol, port, *args, **kw)

    m.ELBv2Backend.create_listener = create_listener

    # 5. DescribeTags: at most 20 ARNs; an unknown ARN fails the call with its kind's NotFound (moto answers {}).
    def describe_tags(self: Any, resource_arns: list[str]) -> dict[str, dict[str, str]]:
        if len(resource_arns) > DESCRIBE_TAGS_MAX:
            raise x.ValidationError(f"1 validation error detected: Value at 'resourceArns' failed to "
                            f"satisfy constraint: Member must have length less than or equal to {DESCRIBE_TAGS_MAX}")
        listeners = {a for lb in self.load_balancers.values() for a in lb.listeners}
        for arn in resource_arns:
            if ":loadbalancer/" in arn and arn not in self.load_balancers:
                raise x.LoadBalancerNotFoundError()
            if ":targetgroup/" in arn and arn not in self.target_groups:
                raise x.TargetGroupNotFoundError()
            if ":listener/" in arn and arn not in listeners:
                raise x.ListenerNotFoundError()
        return {arn: self.tagging_service.get_tag_dict_for_resource(arn) for arn in resource_arns}

    m.ELBv2Backend.describe_tags = describe_tags


def install_ec2_patches() -> None:
    from moto.ec2 import exceptions as x
    from moto.ec2.models.security_groups import SecurityGroupBackend
    from moto.elbv2.models import elbv2_backends

    # DeleteSecurityGroup: DependencyViolation while a network interface or a load balancer uses the group,
    # or while a rule of another group names it as its source, as EC2 does (moto deletes it and leaves the
    # referencing rule behind, which then cannot be revoked: InvalidGroup.NotFound).
    orig_delete = SecurityGroupBackend.delete_security_group

    def delete_security_group(self: Any, name: str | None = None, group_id: str | None = None) -> None:
        if group_id:
            users = [e.id for e in getattr(self, "enis", {}).values()
                     if any(getattr(g, "id", g) == group_id for g in e.group_set)]
            try:
                lbs = elbv2_backends[self.account_id][self.region_name].load_balancers.values()
                users += [lb.name for lb in lbs if group_id in (lb.security_groups or [])]
            except KeyError:
                pass
            for groups in self.groups.values():
                for g in groups.values():
                    if g.id != group_id and any((r.source_group or {}).get("GroupId") == group_id
                                                for r in list(g.ingress_rules) + list(g.egress_rules)):
                        users.append(g.id)
            if users:
                raise x.DependencyViolationError(f"resource {group_id} has a dependent object")
        return orig_delete(self, name=name, group_id=group_id)

    SecurityGroupBackend.delete_security_group = delete_security_group


# --------------------------------------------------------------------------------------------------------------------
# Request inspection and AWS-shaped errors
# --------------------------------------------------------------------------------------------------------------------

CRED_RE = re.compile(r"Credential=[^/,\s]+/[^/]+/([^/]+)/([^/]+)/aws4_request")
XMLNS = {
    "elasticloadbalancing": "http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/",
    "sts": "https://sts.amazonaws.com/doc/2011-06-15/",
    "iam": "https://iam.amazonaws.com/doc/2010-05-08/",
}
UNSIGNED_STS = {"AssumeRoleWithWebIdentity", "AssumeRoleWithSAML"}


def default_status(code: str) -> int:
    c = code.lower()
    if c in ("serviceunavailable", "requestlimitexceeded", "slowdown"):
        return 503
    if c.startswith("internal"):
        return 500
    return 400


# Route 53 (REST) operations the controller calls, by method and path, for the call log.
_ROUTE53_OPS = [
    ("GET", re.compile(r"^/2013-04-01/hostedzone/?$"), "ListHostedZones"),
    ("POST", re.compile(r"^/2013-04-01/hostedzone/?$"), "CreateHostedZone"),
    ("GET", re.compile(r"^/2013-04-01/hostedzone/[^/]+/rrset/?$"), "ListResourceRecordSets"),
    ("POST", re.compile(r"^/2013-04-01/hostedzone/[^/]+/rrset/?$"), "ChangeResourceRecordSets"),
]


def _rest_operation(service: str, method: str, path: str) -> str | None:
    if service != "route53":
        return None
    return next((op for m, pattern, op in _ROUTE53_OPS if m == method and pattern.match(path)), None)


def inspect_request(environ: dict[str, Any], raw: bytes) -> dict[str, Any]:
    auth = environ.get("HTTP_AUTHORIZATION", "")
    mt = CRED_RE.search(auth)
    region, service = (mt.group(1), mt.group(2).lower()) if mt else ("", "")
    ctype = environ.get("CONTENT_TYPE", "")
    amz_target = environ.get("HTTP_X_AMZ_TARGET", "")
    form: dict[str, list[str]] = {}
    if raw and "json" not in ctype:
        form = urllib.parse.parse_qs(raw.decode("utf-8", "replace"), keep_blank_values=True)
    if not form and environ.get("QUERY_STRING"):
        form = urllib.parse.parse_qs(environ["QUERY_STRING"], keep_blank_values=True)
    operation = (form.get("Action") or [""])[0]
    protocol = "query"
    if amz_target:
        protocol = "json"
        operation = operation or amz_target.rsplit(".", 1)[-1]
    elif not operation:
        protocol = "rest"
        method, path = environ.get("REQUEST_METHOD", ""), environ.get("PATH_INFO", "")
        operation = _rest_operation(service, method, path) or f"{method} {path}"
    if not service and operation in UNSIGNED_STS:
        service = "sts"
    version = (form.get("Version") or [""])[0]
    target_ids = _target_ids(form)
    return {
        "service": service, "region": region, "operation": operation, "protocol": protocol,
        "version": version, "target_group_arn": (form.get("TargetGroupArn") or [None])[0],
        "targets": len(target_ids) if target_ids else None,
        "target_ids": target_ids or None,
    }


def _target_ids(form: dict[str, list[str]]) -> list[str]:
    """`Targets.member.N.Id` (+ `.Port`) of a query-protocol call as `Id:Port` (`Id` when no port), in N order."""
    ids: dict[int, str] = {}
    for k, v in form.items():
        if k.startswith("Targets.member.") and k.endswith(".Id"):
            try:
                n = int(k[len("Targets.member."):-len(".Id")])
            except ValueError:
                continue
            port = (form.get(f"Targets.member.{n}.Port") or [""])[0]
            ids[n] = f"{v[0]}:{port}" if port else v[0]
    return [ids[n] for n in sorted(ids)]


def error_response(req: dict[str, Any], code: str, message: str, status: int) -> tuple[int, list, bytes]:
    rid = str(uuid.uuid4())
    msg = (message.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))
    if req["protocol"] == "json":
        body = json.dumps({"__type": code, "message": message}).encode()
        return status, [("Content-Type", "application/x-amz-json-1.1"), ("x-amzn-RequestId", rid),
                        ("x-amzn-ErrorType", code)], body
    if req["service"] == "ec2":
        body = (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>{code}</Code>"
                f"<Message>{msg}</Message></Error></Errors><RequestID>{rid}</RequestID></Response>")
    else:
        ns = XMLNS.get(req["service"], "")
        if req["service"] == "elasticloadbalancing" and req["version"] == "2012-06-01":
            ns = "http://elasticloadbalancing.amazonaws.com/doc/2012-06-01/"
        kind = "Receiver" if status >= 500 else "Sender"
        xmlns = f' xmlns="{ns}"' if ns else ""
        body = (f"<ErrorResponse{xmlns}><Error><Type>{kind}</Type><Code>{code}</Code><Message>{msg}</Message>"
                f"</Error><RequestId>{rid}</RequestId></ErrorResponse>")
    return status, [("Content-Type", "text/xml"), ("x-amzn-RequestId", rid)], body.encode()


CODE_RE = re.compile(rb"<Code>([^<]+)</Code>")
JSON_TYPE_RE = re.compile(rb'"__type"\s*:\s*"([^"]+)"')


def access_key_of(environ: dict[str, Any]) -> str | None:
    """The access key ID a SigV4-signed request was signed with (never the secret: it is not sent)."""
    m = re.search(r"Credential=([^/,\s]+)/", environ.get("HTTP_AUTHORIZATION", ""))
    return m.group(1) if m else None


def error_code_of(status: int, headers: list, body: bytes) -> str | None:
    if status < 400:
        return None
    for k, v in headers:
        if k.lower() == "x-amzn-errortype":
            return v.split(":")[0]
    mt = CODE_RE.search(body) or JSON_TYPE_RE.search(body)
    if mt:
        return mt.group(1).decode("utf-8", "replace").split("#")[-1]
    return f"HTTP{status}"


# --------------------------------------------------------------------------------------------------------------------
# Faults and token buckets
# --------------------------------------------------------------------------------------------------------------------

def _matches_ops(spec: Any, operation: str) -> bool:
    if spec is None or spec == "*":
        return True
    if isinstance(spec, list):
        return operation in spec
    return re.fullmatch(spec, operation) is not None


def _has_target(target_ids: list[str] | None, wanted: str) -> bool:
    """Whether a call's targets (`Id:Port` or `Id`) include `wanted`, given as `Id` (any port) or `Id:Port`."""
    return any(t == wanted or t.rsplit(":", 1)[0] == wanted for t in target_ids or [])


def pick_faults(req: dict[str, Any]) -> tuple[float, dict[str, Any] | None]:
    """Returns (latency_ms, error rule or None); consumes counts of the rules that fire."""
    latency, err = 0.0, None
    with STATE.lock:
        for rule in STATE.faults:
            if rule.get("service") not in (None, "*", req["service"]):
                continue
            if not _matches_ops(rule.get("operation"), req["operation"]):
                continue
            if rule.get("target_group_arn") and rule["target_group_arn"] != req["target_group_arn"]:
                continue
            if rule.get("target_id") and not _has_target(req.get("target_ids"), rule["target_id"]):
                continue
            if rule.get("remaining") is not None and rule["remaining"] <= 0:
                continue
            if rule.get("rate") is not None and random.random() >= float(rule["rate"]):
                continue
            if rule.get("remaining") is not None:
                rule["remaining"] -= 1
            rule["hits"] += 1
            latency += float(rule.get("latency_ms") or 0)
            if rule.get("code"):
                err = rule
                break
    return latency, err


def take_token(req: dict[str, Any]) -> dict[str, Any] | None:
    """Returns the bucket that had no token (call must be throttled), else None."""
    with STATE.lock:
        if not STATE.buckets_enabled:
            return None
        now = time.monotonic()
        for b in STATE.buckets:
            if b["service"] not in ("*", req["service"]) or not _matches_ops(b["operations"], req["operation"]):
                continue
            b["tokens"] = min(float(b["burst"]), b["tokens"] + (now - b["last"]) * float(b["rate"]))
            b["last"] = now
            if b["tokens"] >= 1.0:
                b["tokens"] -= 1.0
                return None
            b["throttled"] += 1
            return b
        return None


def make_bucket(spec: dict[str, Any]) -> dict[str, Any]:
    if "rate" not in spec or "burst" not in spec:
        raise ControlError("bucket needs rate and burst")
    ops = spec.get("operations", ".*")
    if isinstance(ops, str):
        re.compile(ops)
    elif not isinstance(ops, list):
        raise ControlError("operations must be a list or a regex string")
    service = spec.get("service", "elasticloadbalancing")
    code = spec.get("code") or ("RequestLimitExceeded" if service == "ec2" else "Throttling")
    return {
        "name": spec.get("name") or f"bucket-{len(STATE.buckets) + 1}", "service": service, "operations": ops,
        "rate": float(spec["rate"]), "burst": float(spec["burst"]), "code": code,
        "http_status": int(spec.get("http_status") or default_status(code)),
        "message": spec.get("message") or ("Request limit exceeded." if code == "RequestLimitExceeded"
                                           else "Rate exceeded"),
        "tokens": float(spec["burst"]), "last": time.monotonic(), "throttled": 0,
    }


# --------------------------------------------------------------------------------------------------------------------
# Control API
# --------------------------------------------------------------------------------------------------------------------

def _check_state(value: Any, field: str, allowed: tuple) -> None:
    if value is not None and value not in allowed:
        raise ControlError(f"{field} must be one of {', '.join(allowed)}")


def _dataplane_control(method: str, path: str, q: dict[str, str], body: dict[str, Any]) -> tuple[int, Any]:
    """The data plane's views (dataplane_views.py): list the load balancers, describe a target group / load balancer,
    read a listener certificate with its key, push measured health."""
    want = "POST" if path == "measured-health" else "GET"
    if method != want:
        raise ControlError(f"use {want} /_awsemu/{path}", 405)
    if path == "load-balancers":
        return 200, {"load_balancers": dataplane_views.load_balancers_view()}
    if path == "certificate":
        if not q.get("certificate_arn"):
            raise ControlError("/_awsemu/certificate needs certificate_arn")
        try:
            return 200, dataplane_views.certificate_view(q["certificate_arn"])
        except dataplane_views.ViewError as e:
            raise ControlError(str(e), e.status) from e
    arn = (body if want == "POST" else q).get("target_group_arn" if path != "load-balancer" else "load_balancer_arn")
    if not arn:
        raise ControlError(f"/_awsemu/{path} needs " +
                           ("load_balancer_arn" if path == "load-balancer" else "target_group_arn"))
    try:
        backend = dataplane_views.backend_for(arn)
        if path == "load-balancer":
            lb = backend.load_balancers.get(arn)
            if lb is None:
                raise ControlError(f"load balancer {arn} not found", 404)
            return 200, dataplane_views.load_balancer_view(lb)
        with TG_LOCK:
            tg = backend.target_groups.get(arn)
            if tg is None:
                raise ControlError(f"target group {arn} not found", 404)
            if path == "target-group":
                return 200, dataplane_views.target_group_view(tg, _draining(tg), time.time(), time.monotonic(),
                                                              STATE.time_scale())
            return 200, dataplane_views.apply_measured(tg, body.get("targets"),
                                                       lambda i, p: _tkey(i, _norm_port(p)))
    except dataplane_views.ViewError as e:
        raise ControlError(str(e), e.status) from e


def control(method: str, path: str, query: dict[str, list[str]], body: dict[str, Any],
            reset_moto: Any) -> tuple[int, Any]:
    q = {k: v[-1] for k, v in query.items()}
    if path == "healthz":
        return 200, {"status": "ok"}

    if path == "calls":
        if method == "DELETE":
            with STATE.lock:
                STATE.calls.clear()
            return 200, {"status": "ok"}
        since = int(q.get("since", 0))
        with STATE.lock:
            last = STATE.seq
            out = [c for c in STATE.calls if c["seq"] > since
                   and ("operation" not in q or c["operation"] == q["operation"])
                   and ("service" not in q or c["service"] == q["service"])
                   and ("outcome" not in q or c["outcome"] == q["outcome"])
                   and ("target_group_arn" not in q or c["target_group_arn"] == q["target_group_arn"])]
        if "limit" in q:
            out = out[: int(q["limit"])]
        return 200, {"calls": out, "last_seq": last}

    if path == "sts-sessions" and method == "GET":
        # Who holds which temporary keys: tests check that the keys a client signed with came from sts:AssumeRole
        # of a given role (e.g. through Vault's AWS engine). Key IDs only, never secrets or session tokens.
        from moto.sts.models import sts_backends
        out = []
        for _account, regions in list(sts_backends.items()):
            for _region, backend in list(regions.items()):
                out += [{"access_key_id": r.access_key_id, "role_arn": r.role_arn, "session_name": r.session_name,
                         "external_id": getattr(r, "external_id", None),
                         "expiration": r.expiration.isoformat()} for r in backend.assumed_roles]
        return 200, {"sessions": out}

    if path == "health-policy":
        if method == "GET":
            with STATE.lock:
                return 200, {"global": STATE.global_policy, "target_group": STATE.tg_policies,
                             "target": [dict(p, target_group_arn=k[0], id=k[1], port=k[2])
                                        for k, p in STATE.target_policies.items()]}
        if method == "DELETE":
            with STATE.lock:
                STATE.global_policy = dict(DEFAULT_GLOBAL_POLICY)
                STATE.tg_policies.clear()
                STATE.target_policies.clear()
            return 200, {"status": "ok"}
        scope = body.get("scope", "global")
        _check_state(body.get("then"), "then", ("healthy", "unhealthy", "unavailable", "unused"))
        _check_state(body.get("force"), "force", HEALTH_STATES)
        for f in ("initial_seconds", "draining_seconds"):
            if body.get(f) is not None and float(body[f]) < 0:
                raise ControlError(f"{f} must be >= 0")
        with STATE.lock:
            if scope == "global":
                pol = STATE.global_policy
            elif scope == "target_group":
                if not body.get("target_group_arn"):
                    raise ControlError("scope target_group needs target_group_arn")
                pol = STATE.tg_policies.setdefault(body["target_group_arn"], {})
            elif scope == "target":
                if not body.get("id"):
                    raise ControlError("scope target needs id")
                key = (body.get("target_group_arn"), body["id"], _norm_port(body.get("port")))
                pol = STATE.target_policies.setdefault(key, {})
            else:
                raise ControlError("scope must be global, target_group or target")
            if body.get("clear"):
                pol.clear()
                if scope == "global":
                    pol.update(DEFAULT_GLOBAL_POLICY)
            for f in POLICY_FIELDS:
                if f in body:
                    if body[f] is None:
                        pol.pop(f, None)
                    else:
                        pol[f] = float(body[f]) if f.endswith("_seconds") else body[f]
            return 200, {"scope": scope, "policy": dict(pol)}

    if path == "settings":
        with STATE.lock:
            if method == "POST":
                if "time_scale" in body:
                    ts = float(body["time_scale"])
                    if ts < 0:
                        raise ControlError("time_scale must be >= 0")
                    STATE.settings["time_scale"] = ts
                if "log_calls" in body:
                    STATE.settings["log_calls"] = bool(body["log_calls"])
            return 200, dict(STATE.settings)

    if path == "faults" or path.startswith("faults/"):
        with STATE.lock:
            if method == "GET":
                return 200, {"faults": STATE.faults}
            if method == "DELETE":
                if path == "faults":
                    STATE.faults.clear()
                else:
                    fid = path.split("/", 1)[1]
                    STATE.faults = [f for f in STATE.faults if f["id"] != fid]
                return 200, {"status": "ok"}
            if method != "POST" or path != "faults":
                raise ControlError("use POST /_awsemu/faults", 405)
            if not body.get("code") and not body.get("latency_ms"):
                raise ControlError("a fault needs code and/or latency_ms")
            op = body.get("operation")
            if op is not None and not isinstance(op, list) and op != "*":
                re.compile(op)
            if body.get("rate") is not None and not 0 <= float(body["rate"]) <= 1:
                raise ControlError("rate must be within 0..1")
            STATE.fault_seq += 1
            code = body.get("code")
            rule = {
                "id": f"f{STATE.fault_seq}", "service": body.get("service"), "operation": op,
                "target_group_arn": body.get("target_group_arn"), "target_id": body.get("target_id"), "code": code,
                "http_status": int(body.get("http_status") or (default_status(code) if code else 200)),
                "message": body.get("message") or ("Rate exceeded" if code == "Throttling" else
                                                   f"Injected fault {code}" if code else None),
                "count": body.get("count"), "remaining": body.get("count"), "rate": body.get("rate"),
                "latency_ms": float(body.get("latency_ms") or 0), "hits": 0,
            }
            STATE.faults.append(rule)
            return 200, {"id": rule["id"], "fault": rule}

    if path == "token-buckets":
        with STATE.lock:
            if method == "POST":
                if not body.get("enabled"):
                    STATE.buckets_enabled = False
                    STATE.buckets = []
                else:
                    specs = body.get("buckets") or DEFAULT_BUCKETS
                    STATE.buckets = []
                    for spec in specs:
                        STATE.buckets.append(make_bucket(spec))
                    STATE.buckets_enabled = True
            return 200, {"enabled": STATE.buckets_enabled,
                         "buckets": [{k: v for k, v in b.items() if k != "last"} for b in STATE.buckets]}

    if path in ("target-group", "load-balancer", "load-balancers", "measured-health", "certificate"):
        return _dataplane_control(method, path, q, body)

    if path == "reset" and method == "POST":
        reset_moto()
        STATE.reset()
        return 200, {"status": "ok"}

    raise ControlError(f"unknown control endpoint {method} /_awsemu/{path}", 404)


# --------------------------------------------------------------------------------------------------------------------
# WSGI application
# --------------------------------------------------------------------------------------------------------------------

def _status_line(code: int) -> str:
    from werkzeug.http import HTTP_STATUS_CODES
    return f"{code} {HTTP_STATUS_CODES.get(code, 'Unknown')}"


class App:
    def __init__(self, serialize: bool = True) -> None:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
        self.moto = DomainDispatcherApplication(create_backend_app)
        self.moto_lock = threading.Lock() if serialize else None

    def _reset_moto(self) -> None:
        from moto.moto_api._internal.models import moto_api_backend
        wafregional_patches.reset()
        if self.moto_lock:
            with self.moto_lock:
                moto_api_backend.reset()
        else:
            moto_api_backend.reset()

    def _call_moto(self, environ: dict[str, Any]) -> tuple[int, list, bytes]:
        captured: dict[str, Any] = {}

        def sr(status: str, headers: list, exc_info: Any = None) -> Any:
            captured["status"], captured["headers"] = status, headers
            return lambda data: None

        def run() -> bytes:
            it = self.moto(environ, sr)
            try:
                return b"".join(it)
            finally:
                if hasattr(it, "close"):
                    it.close()

        if self.moto_lock:
            with self.moto_lock:
                body = run()
        else:
            body = run()
        return int(captured["status"].split()[0]), captured["headers"], body

    @staticmethod
    def _read_body(environ: dict[str, Any]) -> bytes:
        stream = environ["wsgi.input"]
        try:
            n = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            n = 0
        if n > 0:
            raw = stream.read(n)
        elif environ.get("wsgi.input_terminated"):
            raw = stream.read()
        else:
            raw = b""
        environ["wsgi.input"] = io.BytesIO(raw)
        environ["CONTENT_LENGTH"] = str(len(raw))
        environ.pop("HTTP_TRANSFER_ENCODING", None)
        return raw

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        raw = self._read_body(environ)
        if path.startswith("/_awsemu/") or path == "/_awsemu":
            return self._control(environ, start_response, path, raw)
        if path.startswith("/moto-api"):
            status, headers, body = self._call_moto(environ)
            start_response(_status_line(status), headers)
            return [body]
        return self._aws(environ, start_response, raw)

    def _control(self, environ: dict[str, Any], start_response: Any, path: str, raw: bytes) -> Any:
        method = environ.get("REQUEST_METHOD", "GET")
        sub = path[len("/_awsemu/"):].strip("/")
        try:
            body = json.loads(raw) if raw.strip() else {}
            if not isinstance(body, dict):
                raise ControlError("body must be a JSON object")
            status, out = control(method, sub, urllib.parse.parse_qs(environ.get("QUERY_STRING", "")), body,
                                  self._reset_moto)
        except ControlError as e:
            status, out = e.status, {"error": str(e)}
        except (ValueError, TypeError, re.error) as e:
            status, out = 400, {"error": f"bad request: {e}"}
        if method != "GET" or status >= 400:
            LOG.info("control %s /_awsemu/%s -> %d %s", method, sub, status,
                     json.dumps(body)[:200] if raw.strip() and status < 400 else out.get("error", ""))
        data = json.dumps(out).encode()
        start_response(_status_line(status), [("Content-Type", "application/json"),
                                              ("Content-Length", str(len(data)))])
        return [data]

    def _aws(self, environ: dict[str, Any], start_response: Any, raw: bytes) -> Any:
        t0 = time.monotonic()
        received = time.time()
        req = inspect_request(environ, raw)
        injected = None
        bucket = take_token(req)
        latency_ms, rule = (0.0, None) if bucket else pick_faults(req)
        if latency_ms > 0:
            time.sleep(latency_ms / 1000.0)
        if bucket:
            injected = "token-bucket"
            status, headers, body = error_response(req, bucket["code"], bucket["message"], bucket["http_status"])
        elif rule:
            injected = "fault"
            status, headers, body = error_response(req, rule["code"], rule["message"], rule["http_status"])
        elif req["service"] == "waf-regional":
            # Not in moto: emulated whole by wafregional_patches (WAF Classic for load balancers).
            status, headers, body = wafregional_patches.handle(environ.get("HTTP_X_AMZ_TARGET", ""), raw,
                                                               req["region"])
        else:
            status, headers, body = self._call_moto(environ)
        duration_ms = (time.monotonic() - t0) * 1000.0
        code = error_code_of(status, headers, body)
        with STATE.lock:
            STATE.seq += 1
            rec = {
                "seq": STATE.seq, "time": time.time(), "service": req["service"], "operation": req["operation"],
                "target_group_arn": req["target_group_arn"], "targets": req["targets"],
                "target_ids": req["target_ids"], "received": received,
                "outcome": "ok" if status < 400 else "error", "error_code": code, "http_status": status,
                "duration_ms": round(duration_ms, 3), "injected": injected,
                "access_key": access_key_of(environ),
                # Set by the real node's forwarder (e2e/node/forward.py): the pod that made the call.
                "forwarded_for": environ.get("HTTP_X_FORWARDED_FOR"),
            }
            STATE.calls.append(rec)
            verbose = STATE.settings["log_calls"]
        if verbose or injected or status >= 500:
            LOG.info("%d %s:%s -> %d %s%s %.1fms", rec["seq"], req["service"], req["operation"], status,
                     code or "", f" [{injected}]" if injected else "", duration_ms)
        headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
        headers.append(("Content-Length", str(len(body))))
        start_response(_status_line(status), headers)
        return [body]


# --------------------------------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="moto + fault injection / target health control")
    p.add_argument("--host", default=os.environ.get("AWSEMU_HOST", "127.0.0.1"))
    p.add_argument("--port", type=int, default=int(os.environ.get("AWSEMU_PORT", "4566")),
                   help="0 picks a free port (printed on stderr)")
    p.add_argument("--verbose", "-v", action="store_true", help="log every AWS call")
    p.add_argument("--no-serialize", action="store_true",
                   help="let moto handle calls concurrently (default: one moto call at a time)")
    args = p.parse_args(argv)

    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="awsemu %(asctime)s %(message)s",
                        datefmt="%H:%M:%S")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)

    import moto
    from werkzeug.serving import make_server
    from moto.moto_server.werkzeug_app import MotoRequestHandler

    install_elbv2_patches()
    install_lb_patches()
    listener_patches.install()
    jwt_patches.install()
    transform_patches.install()
    mtls_patches.install()
    lb_extras_patches.install()
    acm_patches.install()
    wafv2_patches.install()
    shield_patches.install()
    quic_patches.install()
    alb_target_patches.install()
    install_ec2_patches()
    app = App(serialize=not args.no_serialize)
    STATE.settings["log_calls"] = args.verbose
    DEFAULT_SETTINGS["log_calls"] = args.verbose
    server = make_server(args.host, args.port, app, threaded=True, request_handler=MotoRequestHandler)
    os.environ.setdefault("MOTO_PORT", str(server.server_port))  # moto builds self-referencing URLs from it

    def stop(signum: int, frame: Any) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    LOG.info("listening on http://%s:%d (moto %s, pid %d)", args.host, server.server_port,
             getattr(moto, "__version__", "?"), os.getpid())
    try:
        server.serve_forever()
    finally:
        server.server_close()
        LOG.info("stopped")


if __name__ == "__main__":
    main()
