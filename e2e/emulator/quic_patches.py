"""awsemu patches for QUIC on Network Load Balancers (moto 5.2.5 knows neither protocol):

  * CreateTargetGroup accepts QUIC and TCP_QUIC (made as UDP / TCP_UDP groups, whose defaults AWS gives them
    too: health checks TCP on the traffic port, source_ip stickiness), and CreateListener accepts them on a
    network load balancer only, forwarding to a target group of the same protocol (AWS: "the protocol of the
    target group must match the listener's");
  * RegisterTargets on a QUIC or TCP_QUIC group needs a QuicServerId per target, `0x` and 16 lowercase hex
    digits, and refuses one on any other group (AWS API reference, TargetDescription.QuicServerId); a
    registered target's server ID cannot change ("deregister the target and then provide a new server ID");
    a server ID held by another target of the group is refused (AWS: unique at the listener level; checked per
    target group here, which every listener forwarding to one group shares). The ID is kept with the
    registration and returned by DescribeTargetHealth (awsemu.py).
Error codes (ValidationError, InvalidTarget, InvalidConfigurationRequest) are ours where AWS documents none.
"""

from __future__ import annotations

import re
from typing import Any

QUIC = ("QUIC", "TCP_QUIC")
_BASE = {"QUIC": "UDP", "TCP_QUIC": "TCP_UDP"}
_SERVER_ID = re.compile(r"0x[0-9a-f]{16}")


def install() -> None:
    from moto.elbv2 import exceptions as x
    from moto.elbv2 import models as m

    orig_create_tg = m.ELBv2Backend.create_target_group

    def create_target_group(self: Any, name: str, **kwargs: Any) -> Any:
        protocol = kwargs.get("protocol")
        if protocol not in QUIC:
            return orig_create_tg(self, name, **kwargs)
        tg = orig_create_tg(self, name, **dict(kwargs, protocol=_BASE[protocol]))
        tg.protocol = protocol
        return tg

    m.ELBv2Backend.create_target_group = create_target_group

    orig_create_listener = m.ELBv2Backend.create_listener

    def create_listener(self: Any, load_balancer_arn: str, protocol: str, port: str, *args: Any, **kwargs: Any) -> Any:
        if protocol not in QUIC:
            return orig_create_listener(self, load_balancer_arn, protocol, port, *args, **kwargs)
        balancer = self.load_balancers.get(load_balancer_arn)
        if balancer is not None and balancer.type != "network":
            raise x.ELBClientError("UnsupportedProtocol", f"Protocol '{protocol}' is not supported")
        actions = args[3] if len(args) > 3 else kwargs.get("actions") or []
        for action in actions:
            arns = [action.get("TargetGroupArn")] + [
                t.get("TargetGroupArn") for t in (action.get("ForwardConfig") or {}).get("TargetGroups") or []]
            for arn in filter(None, arns):
                tg = self.target_groups.get(arn)
                if tg is not None and tg.protocol != protocol:
                    raise x.ELBClientError(
                        "InvalidConfigurationRequest",
                        f"The protocol of target group '{arn}' ({tg.protocol}) must be {protocol}, the listener's")
        listener = orig_create_listener(self, load_balancer_arn, _BASE[protocol], port, *args, **kwargs)
        listener.protocol = protocol
        return listener

    m.ELBv2Backend.create_listener = create_listener

    orig_register = m.FakeTargetGroup.register

    def register(self: Any, targets: list[dict[str, Any]]) -> None:
        quic = self.protocol in QUIC
        held = {e.get("QuicServerId"): (e["Id"], e["Port"]) for e in self.targets.values() if e.get("QuicServerId")}
        for t in targets:
            sid = t.get("QuicServerId")
            if not quic and sid:
                raise x.ELBClientError("ValidationError",
                                       f"QuicServerId is only valid for QUIC and TCP_QUIC target groups ({t['Id']})")
            if not quic:
                continue
            if not sid:
                raise x.ELBClientError("ValidationError",
                                       f"A QuicServerId is required for target '{t['Id']}' of a {self.protocol} "
                                       "target group")
            if not _SERVER_ID.fullmatch(sid):
                raise x.ELBClientError("ValidationError",
                                       f"QuicServerId '{sid}' must be 0x followed by 16 lowercase hexadecimal "
                                       "characters")
            port = int(t.get("Port") or self.port)
            for e in self.targets.values():
                if (e["Id"], e["Port"]) == (t["Id"], port) and e.get("QuicServerId") != sid:
                    raise x.ELBClientError("InvalidTarget",
                                           f"Target '{t['Id']}:{port}' is registered with server ID "
                                           f"{e.get('QuicServerId')}; deregister it before registering it with {sid}")
            if sid in held and held[sid] != (t["Id"], port):
                raise x.ELBClientError("InvalidTarget",
                                       f"Server ID {sid} is already used by target '{held[sid][0]}:{held[sid][1]}'")
        orig_register(self, targets)

    m.FakeTargetGroup.register = register
