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
    exists in IPAM or on an Outpost is not checked (the emulator has neither);
  * EnablePrefixForIpv6SourceNat (CreateLoadBalancer, SetSubnets) and SubnetMappings' SourceNatIpv6Prefix (moto
    dropped both) are checked as ELBv2 documents them: Network Load Balancers only, dualstack only, every subnet
    with an IPv6 CIDR block, a prefix only with source NAT on, each prefix a /80 inside its subnet's IPv6 CIDR
    blocks or auto_assigned (the emulator then picks a /80 of the subnet); DescribeLoadBalancers reports the flag
    and each zone's SourceNatIpv6Prefixes;
  * CreateTargetGroup's TargetControlPort (the ALB target optimizer's port; moto dropped it) is checked (1-65535,
    HTTP/HTTPS target groups only), kept and reported by DescribeTargetGroups; the same name with another port is
    DuplicateTargetGroupName (as moto answers any second create of a name).
"""

from __future__ import annotations

import ipaddress
import random
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

    def source_nat(backend: Any, lb_type: str, ip_type: str, on: str, mappings: list[dict[str, Any]]) -> None:
        """Checks the source NAT settings; replaces auto_assigned in `mappings` with the prefix picked."""
        prefixes = [mp for mp in mappings if mp.get("SourceNatIpv6Prefix")]
        if on is None and not prefixes:
            return
        if lb_type != "network":
            raise x.ELBClientError("ValidationError", "EnablePrefixForIpv6SourceNat and SourceNatIpv6Prefix are "
                                                      "supported for Network Load Balancers only")
        if on not in ("on", "off"):
            raise x.ELBClientError("ValidationError", f"EnablePrefixForIpv6SourceNat must be on or off, not {on}")
        if on == "on" and not ip_type.startswith("dualstack"):
            raise x.ELBClientError("ValidationError", "IPv6 source NAT needs the dualstack IP address type")
        if prefixes and on != "on":
            raise x.ELBClientError("ValidationError", "SourceNatIpv6Prefix needs EnablePrefixForIpv6SourceNat on")
        if on != "on":
            return
        for mp in mappings:
            subnet = backend.ec2_backend.get_subnet(mp["SubnetId"])
            blocks = [ipaddress.ip_network(a["ipv6CidrBlock"]) for a in subnet.ipv6_cidr_block_associations.values()]
            if not blocks:
                raise x.ELBClientError("ValidationError", f"subnet {subnet.id} has no IPv6 CIDR block: IPv6 source "
                                                          f"NAT needs one in every subnet")
            want = mp.get("SourceNatIpv6Prefix")
            if want is None:
                continue
            if want == "auto_assigned":
                base = int(blocks[0].network_address) + (random.randrange(1, 1 << 16) << 48)
                mp["SourceNatIpv6Prefix"] = f"{ipaddress.IPv6Address(base)}/80"
                continue
            try:
                net = ipaddress.ip_network(want, strict=False)
            except ValueError:
                net = None
            if net is None or net.version != 6 or net.prefixlen != 80 or not any(net.subnet_of(b) for b in blocks):
                raise x.ELBClientError("ValidationError", f"SourceNatIpv6Prefix {want} must be a /80 inside subnet "
                                                          f"{subnet.id}'s IPv6 CIDR blocks, or auto_assigned")

    def mappings_of(params: dict[str, Any]) -> list[dict[str, Any]]:
        return params.get("SubnetMappings") or []

    orig_set_subnets = r.ELBV2Response.set_subnets

    def set_subnets(self: Any) -> ActionResult:
        params = self._get_params()
        balancer = lb(self.elbv2_backend, params.get("LoadBalancerArn"))
        on = params.get("EnablePrefixForIpv6SourceNat")
        effective = on if on is not None else getattr(balancer, "enable_prefix_for_ipv6_source_nat", None)
        source_nat(self.elbv2_backend, balancer.type, balancer.ip_address_type, effective, mappings_of(params))
        result = orig_set_subnets(self)
        if on is not None:
            balancer.enable_prefix_for_ipv6_source_nat = on
        return result

    r.ELBV2Response.set_subnets = set_subnets

    orig_create = r.ELBV2Response.create_load_balancer

    def create_load_balancer(self: Any) -> ActionResult:
        params = self._get_params()
        nat = params.get("EnablePrefixForIpv6SourceNat")
        source_nat(self.elbv2_backend, params.get("Type", "application"), params.get("IpAddressType", "ipv4"), nat,
                   mappings_of(params))
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
        if nat is not None:
            balancer.enable_prefix_for_ipv6_source_nat = nat
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

    orig_create_tg = r.ELBV2Response.create_target_group

    def create_target_group(self: Any) -> ActionResult:
        params = self._get_params()
        port = params.get("TargetControlPort")
        if port is not None:
            if not str(port).isdigit() or not 1 <= int(port) <= 65535:
                raise x.ELBClientError("ValidationError", f"TargetControlPort {port} is not a port from 1 to 65535")
            if params.get("Protocol") not in ("HTTP", "HTTPS"):
                raise x.ELBClientError("ValidationError", "TargetControlPort is for HTTP and HTTPS target groups of "
                                                          "Application Load Balancers only")
        existing = next((g for g in self.elbv2_backend.target_groups.values() if g.name == params.get("Name")), None)
        if existing is not None and getattr(existing, "target_control_port", None) != (int(port) if port else None):
            raise x.DuplicateTargetGroupName()
        result = orig_create_tg(self)
        group = next(g for g in self.elbv2_backend.target_groups.values() if g.name == params.get("Name"))
        group.target_control_port = int(port) if port is not None else None
        return result

    r.ELBV2Response.create_target_group = create_target_group
    r.ELBV2Response.modify_ip_pools = modify_ip_pools
