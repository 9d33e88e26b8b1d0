"""S7: a Service of type LoadBalancer -> NLB and an Ingress -> ALB, created and deleted, one after the other.

The same manifests for both controllers (drop-in): over the scene's existing pods, Service `lb-nlb` selects set 0
(`service.k8s.aws/nlb` class, IP targets) and Ingress `lb-alb` (IngressClass with controller
`ingress.k8s.aws/alb`, IP targets) sends `/` to set 1's Service. The trial's emulator first gets what load balancer
creation needs: three subnets covering the VPC, one per AZ, tagged for the cluster and both ELB roles; one security
group tagged for the cluster; one ENI per pod IP of sets 0 and 1 (both controllers find a pod's ENI by its IP to
open the backend security-group rules).

Per object: creation -> hostname in its status (polled every 0.1 s), creation -> the RegisterTargets call after
which one new target group (not the scene's) holds every pod IP of the set (emulator call log), AWS calls until
both; then deletion -> the DeleteLoadBalancer call and -> the object gone (finalizer removed), AWS calls until both.
"""
from __future__ import annotations

import time
from typing import Any

from harness.flavors import CLUSTER, REGION

NLB_SET, ALB_SET = 0, 1
NLB_NAME, ALB_NAME = "lb-nlb", "lb-alb"
SUBNETS = [("10.0.192.0/18", "a"), ("10.0.128.0/18", "b"), ("10.0.0.0/17", "c")]   # covers the VPC and pod pools
READ_PREFIXES = ("Describe", "Get", "List")


def hostname_of(obj: dict | None) -> str | None:
    """status.loadBalancer.ingress[0].hostname of a Service or an Ingress (None: none yet)."""
    ing = (((obj or {}).get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    return ((ing[0] or {}).get("hostname") or None) if ing else None


def is_mutating(op: str) -> bool:
    return not op.startswith(READ_PREFIXES)


def call_counts(calls: list[dict]) -> dict[str, Any]:
    """Total and mutating (not Describe*/Get*/List*) calls, failed ones included, and calls by operation."""
    by: dict[str, int] = {}
    for c in calls:
        key = c["operation"] + ("" if c["outcome"] == "ok" else f"!{c['error_code']}")
        by[key] = by.get(key, 0) + 1
    return {"calls_total": len(calls), "calls_mutating": sum(1 for c in calls if is_mutating(c["operation"])),
            "calls": dict(sorted(by.items()))}


def all_registered_at(calls: list[dict], want: set[str], exclude: set[str]) -> tuple[float, str] | None:
    """(answer time, target group ARN) of the first successful Register/DeregisterTargets call after which one
    target group outside `exclude` holds every target of `want` (`ip:port`); None if none does yet. `calls` in
    log order, from the group's creation on (earlier registrations are not known)."""
    held: dict[str, set[str]] = {}
    if not want:
        return None
    for c in calls:
        tg = c.get("target_group_arn")
        if c["outcome"] != "ok" or not tg or tg in exclude or not c.get("target_ids"):
            continue
        s = held.setdefault(tg, set())
        if c["operation"] == "RegisterTargets":
            s.update(c["target_ids"])
        elif c["operation"] == "DeregisterTargets":
            s.difference_update(c["target_ids"])
        else:
            continue
        if want <= s:
            return c["time"], tg
    return None


def without_groups(calls: list[dict], groups: set[str]) -> list[dict]:
    """The calls that do not name one of `groups` (e.g. the scene's bindings' own target groups)."""
    return [c for c in calls if c.get("target_group_arn") not in groups]


def first_ok(calls: list[dict], op: str) -> float | None:
    """Answer time of the first successful `op` call."""
    return next((c["time"] for c in calls if c["operation"] == op and c["outcome"] == "ok"), None)


def nlb_service(selector_app: str, port: int, target_port: str) -> dict:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": NLB_NAME, "annotations": {
                "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip"}},
            "spec": {"type": "LoadBalancer", "loadBalancerClass": "service.k8s.aws/nlb",
                     "selector": {"app": selector_app},
                     "ports": [{"name": "http", "port": port, "targetPort": target_port, "protocol": "TCP"}]}}


def ingress_class(name: str) -> dict:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": name},
            "spec": {"controller": "ingress.k8s.aws/alb"}}


def alb_ingress(class_name: str, service: str, port: int) -> dict:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": ALB_NAME, "annotations": {"alb.ingress.kubernetes.io/target-type": "ip"}},
            "spec": {"ingressClassName": class_name, "rules": [{"http": {"paths": [
                {"path": "/", "pathType": "Prefix",
                 "backend": {"service": {"name": service, "port": {"number": port}}}}]}}]}}


def seed_network(ec2, vpc: str, pod_ips: list[str]) -> dict[str, Any]:
    """Subnets (cluster and role tags, one per AZ), a cluster-tagged security group, one ENI per pod IP."""
    cluster_tag = f"kubernetes.io/cluster/{CLUSTER}"

    def tags(kind: str, kv: dict[str, str]) -> list[dict]:
        return [{"ResourceType": kind, "Tags": [{"Key": k, "Value": v} for k, v in kv.items()]}]
    subnets = []
    for cidr, az in SUBNETS:
        s = ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZone=f"{REGION}{az}", TagSpecifications=tags(
            "subnet", {"Name": f"lbc-bench-{az}", cluster_tag: "owned", "kubernetes.io/role/elb": "1",
                       "kubernetes.io/role/internal-elb": "1"}))["Subnet"]
        subnets.append((s["SubnetId"], cidr))
    sg = ec2.create_security_group(GroupName="lbc-bench-pods", Description="lbc-bench pod ENIs", VpcId=vpc,
                                   TagSpecifications=tags("security-group", {cluster_tag: "owned"}))["GroupId"]
    import ipaddress
    nets = [(sid, ipaddress.ip_network(c)) for sid, c in subnets]
    t0 = time.time()
    for ip in pod_ips:
        sid = next(s for s, n in nets if ipaddress.ip_address(ip) in n)
        ec2.create_network_interface(SubnetId=sid, PrivateIpAddress=ip, Groups=[sg], Description=f"lbc-bench pod {ip}")
    return {"subnets": [s for s, _ in subnets], "security_group": sg, "enis": len(pod_ips),
            "enis_s": time.time() - t0}
