"""awsemu patches for load balancer settings moto 5 does not keep:

  * SetSecurityGroups' EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic (on/off) is stored and reported by
    SetSecurityGroups and DescribeLoadBalancers, "on" by default for a load balancer with security groups, absent
    without (as ELBv2 does); moto ignored it;
  * DescribeLoadBalancers reports EnablePrefixForIpv6SourceNat "off" for NLBs, as ELBv2 does (moto omitted it);
  * ModifyCapacityReservation (missing in moto) stores MinimumLoadBalancerCapacity.CapacityUnits or resets it;
    DescribeCapacityReservation reports it (moto answered a fixed "provisioned" without capacity).
"""

from __future__ import annotations

from typing import Any

FIELD = "enforce_security_group_inbound_rules_on_private_link_traffic"


def install() -> None:
    from moto.core.responses import ActionResult
    from moto.elbv2 import exceptions as x
    from moto.elbv2 import models as m
    from moto.elbv2 import responses as r

    def lb(backend: Any, arn: str) -> Any:
        found = backend.load_balancers.get(arn)
        if found is None:
            raise x.LoadBalancerNotFoundError()
        return found

    orig_init = m.FakeLoadBalancer.__init__

    def init(self: Any, *args: Any, **kw: Any) -> None:
        orig_init(self, *args, **kw)
        setattr(self, FIELD, "on" if self.security_groups else None)
        self.capacity_units = None
        # ELBv2 reports EnablePrefixForIpv6SourceNat ("off" unless set) on every NLB; moto omits it, so a
        # controller that compares it (ALBC) sent a no-op SetSubnets on every NLB pass.
        if getattr(self, "type", None) == "network":
            self.enable_prefix_for_ipv6_source_nat = getattr(self, "enable_prefix_for_ipv6_source_nat", None) or "off"

    m.FakeLoadBalancer.__init__ = init

    def set_security_groups(self: Any) -> ActionResult:
        arn = self._get_param("LoadBalancerArn")
        groups = self._get_param("SecurityGroups", [])
        enforce = self._get_param("EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic")
        if enforce not in (None, "on", "off"):
            raise x.ELBClientError("ValidationError", f"EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic "
                                                      f"must be on or off, not {enforce}")
        self.elbv2_backend.set_security_groups(arn, groups)
        balancer = lb(self.elbv2_backend, arn)
        if enforce is not None:
            setattr(balancer, FIELD, enforce)
        elif getattr(balancer, FIELD, None) is None and groups:
            setattr(balancer, FIELD, "on")
        result = {"SecurityGroupIds": groups, "EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic":
                  getattr(balancer, FIELD, None)}
        return ActionResult(result)

    r.ELBV2Response.set_security_groups = set_security_groups

    def state(balancer: Any) -> list[dict[str, Any]]:
        zones = [getattr(z, "name", None) or getattr(z, "zone_name", None) for z in balancer.availability_zones]
        return [{"AvailabilityZone": z, "State": {"Code": "provisioned"}} for z in zones if z]

    def describe_capacity_reservation(self: Any) -> ActionResult:
        balancer = lb(self.elbv2_backend, self._get_param("LoadBalancerArn"))
        result: dict[str, Any] = {"CapacityReservationState": state(balancer), "DecreaseRequestsRemaining": 3}
        if balancer.capacity_units:
            result["MinimumLoadBalancerCapacity"] = {"CapacityUnits": balancer.capacity_units}
        return ActionResult(result)

    def modify_capacity_reservation(self: Any) -> ActionResult:
        balancer = lb(self.elbv2_backend, self._get_param("LoadBalancerArn"))
        units = self._get_param("MinimumLoadBalancerCapacity.CapacityUnits")
        if units is None:
            units = (self._get_param("MinimumLoadBalancerCapacity") or {}).get("CapacityUnits")
        reset = str(self._get_param("ResetCapacityReservation", "false")).lower() == "true"
        if reset == (units is not None):
            raise x.ELBClientError("ValidationError",
                                   "give exactly one of MinimumLoadBalancerCapacity and ResetCapacityReservation")
        balancer.capacity_units = None if reset else int(units)
        return describe_capacity_reservation(self)

    r.ELBV2Response.describe_capacity_reservation = describe_capacity_reservation
    r.ELBV2Response.modify_capacity_reservation = modify_capacity_reservation
