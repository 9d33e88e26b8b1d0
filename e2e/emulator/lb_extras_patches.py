"""awsemu patches for load balancer settings moto 5 does not keep:

  * SetSecurityGroups' EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic (on/off) is stored and reported by
    SetSecurityGroups and DescribeLoadBalancers, "on" by default for a load balancer with security groups, absent
    without (as ELBv2 does); moto ignored it;
  * DescribeLoadBalancers reports EnablePrefixForIpv6SourceNat "off" for NLBs, as ELBv2 does (moto omitted it);
  * ModifyCapacityReservation (missing in moto) stores MinimumLoadBalancerCapacity.CapacityUnits or resets it;
    DescribeCapacityReservation reports it (moto answered a fixed "provisioned" without capacity);
  * CreateLoadBalancer's CustomerOwnedIpv4Pool and IpamPools.Ipv4IpamPoolId (moto dropped both) are checked against
    AWS's ID patterns (ipv4pool-coip-..., ipam-pool-...), refused for anything but an ALB, kept and reported by
    DescribeLoadBalancers; ModifyIpPools (missing in moto) sets or removes the IPv4 IPAM pool. Whether the pool
    exists in IPAM or on an Outpost is not checked (the emulator has neither).
"""

from __future__ import annotations

import re
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

    def pool_id(value: Any, prefix: str, what: str) -> str:
        if not isinstance(value, str) or not re.fullmatch(rf"{prefix}[a-zA-Z0-9]+", value):
            raise x.ELBClientError("ValidationError", f"{what} {value!r} does not match ^({prefix})[a-zA-Z0-9]+$")
        return value

    orig_create = r.ELBV2Response.create_load_balancer

    def create_load_balancer(self: Any) -> ActionResult:
        params = self._get_params()
        coip, ipam = params.get("CustomerOwnedIpv4Pool"), (params.get("IpamPools") or {}).get("Ipv4IpamPoolId")
        if coip is not None or ipam is not None:
            if params.get("Type", "application") != "application":
                raise x.ELBClientError("ValidationError",
                                       "CustomerOwnedIpv4Pool and IpamPools are supported for Application Load "
                                       "Balancers only")
            if coip is not None:
                pool_id(coip, "ipv4pool-coip-", "CustomerOwnedIpv4Pool")
            if ipam is not None:
                pool_id(ipam, "ipam-pool-", "Ipv4IpamPoolId")
        result = orig_create(self)
        balancer = next(b for b in self.elbv2_backend.load_balancers.values() if b.name == params.get("Name"))
        if coip is not None:
            balancer.customer_owned_ipv4_pool = coip
        if ipam is not None:
            balancer.ipam_pools = {"Ipv4IpamPoolId": ipam}
        return result

    def modify_ip_pools(self: Any) -> ActionResult:
        balancer = lb(self.elbv2_backend, self._get_param("LoadBalancerArn"))
        if getattr(balancer, "type", None) != "application":
            raise x.ELBClientError("ValidationError", "IPAM pools are supported for Application Load Balancers only")
        pools = self._get_param("IpamPools") or {}
        remove = self._get_param("RemoveIpamPools") or []
        if any(v != "ipv4" for v in remove):
            raise x.ELBClientError("ValidationError", f"RemoveIpamPools accepts only ipv4, not {remove}")
        if "ipv4" in remove and pools.get("Ipv4IpamPoolId"):
            raise x.ELBClientError("ValidationError", "give either IpamPools or RemoveIpamPools for ipv4, not both")
        if pools.get("Ipv4IpamPoolId") is not None:
            balancer.ipam_pools = {"Ipv4IpamPoolId": pool_id(pools["Ipv4IpamPoolId"], "ipam-pool-", "Ipv4IpamPoolId")}
        elif "ipv4" in remove:
            balancer.ipam_pools = None
        return ActionResult({"IpamPools": getattr(balancer, "ipam_pools", None)} if getattr(balancer, "ipam_pools", None)
                            else {})

    r.ELBV2Response.create_load_balancer = create_load_balancer
    r.ELBV2Response.modify_ip_pools = modify_ip_pools
