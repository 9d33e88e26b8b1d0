"""awsemu patches for target groups of type `alb` (an Application Load Balancer behind a Network Load
Balancer, the frontend NLB of an Ingress); moto 5.2.5 registers any ID there. AWS documents, and so we refuse:

  * the target is an Application Load Balancer, by ARN, in the target group's VPC ("The specified target
    does not exist, is not in the same VPC as the target group": InvalidTarget);
  * the ALB has a listener on the target's port ("the ALB must have a listener on the provided target port");
  * one ALB per target group: a group of type alb holds a single target (ours: InvalidTarget, where AWS gives
    the limit without naming an error code).
"""

from __future__ import annotations

from typing import Any


def install() -> None:
    from moto.elbv2 import exceptions as x
    from moto.elbv2 import models as m

    orig_register = m.FakeTargetGroup.register

    def register(self: Any, targets: list[dict[str, Any]]) -> None:
        if getattr(self, "target_type", None) != "alb":
            return orig_register(self, targets)
        backend = m.elbv2_backends[self.account_id][self.region_name]
        held = {e["Id"] for e in self.targets.values()}
        for t in targets:
            lb = backend.load_balancers.get(t["Id"])
            if lb is None or lb.type != "application" or lb.vpc_id != self.vpc_id:
                raise x.ELBClientError(
                    "InvalidTarget",
                    f"The specified target {t['Id']} is not an Application Load Balancer in VPC {self.vpc_id}")
            port = int(t.get("Port") or self.port)
            if not any(int(listener.port) == port for listener in lb.listeners.values()):
                raise x.ELBClientError(
                    "InvalidTarget", f"Application Load Balancer {t['Id']} has no listener on port {port}")
            if held - {t["Id"]} or len({u["Id"] for u in targets}) > 1:
                raise x.ELBClientError(
                    "InvalidTarget",
                    f"Target group {self.arn} of type alb already has a load balancer registered; deregister it first")
        return orig_register(self, targets)

    m.FakeTargetGroup.register = register
