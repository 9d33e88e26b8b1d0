#!/usr/bin/env python3
"""Pod helper for the e2e environment (run through e2e/pods, which picks the venv's python).

Pods of a "set" NAME are named NAME-<index>, carry the label lbc-e2e/set=NAME and are bound to the fake
nodes round-robin by index (spec.nodeName; no scheduler). The helper plays the CNI's IPAM, like Cilium in
ENI mode: it picks a VPC address from the node's spec.podCIDR, creates an ENI for it in the AWS emulator
and only then creates the pod with the annotation lbc-e2e/pod-ip, which the kwok stages report as
status.podIP. So the ENI exists before the controller can see the pod's endpoint.

  create  NS NAME --replicas N [--labels k=v,..] [--port 8080] [--port-name http] [--image IMG]
                  [--protocol TCP|UDP] [--annotations k=v,..]
                  [--namespace-labels k=v,..] [--terminate-seconds S] [--readiness-gates G,..]
                  [--no-wait] [--wait-ready]
  scale   NS NAME --replicas N        add pods after the highest index / delete the highest indices
  delete  NS NAME                     delete every pod of the set (and, once gone, their ENIs)
  roll    NS NAME                     maxSurge=1, maxUnavailable=0: new pod, wait Ready, delete an old one
  ips     NS NAME [--all]             pod IPs, one a line (--all: terminating pods too)
  status  NS NAME                     name, IP, node, phase, Ready, terminating
  set-ready NS POD true|false         the container readiness the fake kubelet reports
  service NS NAME --port 80 --target-port 8080 [--selector k=v,..] [--type ClusterIP] [--port-name http]
                  [--annotations k=v,..]
  sync-enis NS NAME                   reconcile the set's ENIs with its pods (normally automatic)
"""
from __future__ import annotations

import argparse
import fcntl
import ipaddress
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kubeapi import RUN_DIR, ApiError, Kube, load_env, wait_for  # noqa: E402

SET_LABEL = "lbc-e2e/set"
ANN_TEMPLATE = "lbc-e2e/template"
ANN_POD_IP = "lbc-e2e/pod-ip"
ANN_READY = "lbc-e2e/containers-ready"
ANN_TERMINATE = "lbc-e2e/terminate-seconds"
NODE_ANN_SUBNET = "lbc-e2e/subnet-id"
NODE_ANN_SG = "lbc-e2e/security-group-id"
FAKE_NODE_ANN = ("kwok.x-k8s.io/node", "fake")
# The helper hands out addresses from the upper half of each node's pod CIDR; kwok's own pool (pods created
# without the helper, e.g. by kubectl) starts at the bottom, so the two rarely meet.
HELPER_IP_OFFSET = 512
DEFAULT_IMAGE = "lbc-e2e/fake-app:1"  # never pulled: kwok runs no containers


def log(msg: str) -> None:
    print(f"[pods] {msg}", file=sys.stderr, flush=True)


def parse_kv(s: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in (s or "").split(","):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise SystemExit(f"expected k=v, got {part!r}")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def cond(pod: dict, ctype: str) -> str | None:
    for c in pod.get("status", {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c.get("status")
    return None


def is_ready(pod: dict) -> bool:
    return cond(pod, "Ready") == "True"


def terminating(pod: dict) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def pod_ip(pod: dict) -> str | None:
    return pod.get("status", {}).get("podIP")


class Helper:
    def __init__(self) -> None:
        self.env = load_env()
        self.kube = Kube.from_env(self.env)
        self._ec2 = None
        self._nodes: list[dict] | None = None

    # -- AWS -----------------------------------------------------------------------------------------------------
    @property
    def ec2(self):
        if self._ec2 is None:
            import boto3
            self._ec2 = boto3.client(
                "ec2", endpoint_url=self.env.get("LBC_AWS_ENDPOINT", "http://127.0.0.1:4566"),
                region_name=self.env.get("AWS_REGION", "us-east-1"),
                aws_access_key_id=self.env.get("AWS_ACCESS_KEY_ID", "testing"),
                aws_secret_access_key=self.env.get("AWS_SECRET_ACCESS_KEY", "testing"))
        return self._ec2

    @staticmethod
    def _tags(eni: dict) -> dict[str, str]:
        return {t["Key"]: t["Value"] for t in eni.get("TagSet") or []}

    def ensure_eni(self, ns: str, set_name: str, pod: str, ip: str, node: dict) -> str:
        """One ENI per pod IP, the IP as its *primary* address. Real Cilium ENI mode puts pod IPs on a node's
        ENIs as secondary addresses, but moto's DescribeNetworkInterfaces filter addresses.private-ip-address
        only matches primary addresses, and the controller finds a pod's ENI through that filter."""
        key = f"{ns}/{pod}"
        for eni in self.ec2.describe_network_interfaces(
                Filters=[{"Name": "addresses.private-ip-address", "Values": [ip]}])["NetworkInterfaces"]:
            if self._tags(eni).get("lbc-e2e/pod") == key:
                return eni["NetworkInterfaceId"]
            log(f"deleting stale ENI {eni['NetworkInterfaceId']} holding {ip}")
            self.ec2.delete_network_interface(NetworkInterfaceId=eni["NetworkInterfaceId"])
        ann = node["metadata"].get("annotations", {})
        subnet = ann.get(NODE_ANN_SUBNET)
        if not subnet:
            raise SystemExit(f"node {node['metadata']['name']} has no {NODE_ANN_SUBNET} annotation; run e2e/up")
        kwargs = {}
        if ann.get(NODE_ANN_SG):
            kwargs["Groups"] = [ann[NODE_ANN_SG]]
        tags = {"Name": f"lbc-e2e pod {key}", "lbc-e2e/pod": key, "lbc-e2e/set": f"{ns}/{set_name}",
                "lbc-e2e/node": node["metadata"]["name"]}
        eni = self.ec2.create_network_interface(
            SubnetId=subnet, PrivateIpAddress=ip, Description=f"lbc-e2e pod {key}",
            TagSpecifications=[{"ResourceType": "network-interface",
                                "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}], **kwargs)
        return eni["NetworkInterface"]["NetworkInterfaceId"]

    def set_enis(self, ns: str, set_name: str) -> list[dict]:
        return self.ec2.describe_network_interfaces(
            Filters=[{"Name": "tag:lbc-e2e/set", "Values": [f"{ns}/{set_name}"]}])["NetworkInterfaces"]

    def sync_enis(self, ns: str, set_name: str) -> None:
        want = {}
        for p in self.set_pods(ns, set_name):
            ip = pod_ip(p) or p["metadata"].get("annotations", {}).get(ANN_POD_IP)
            if ip:
                want[f"{ns}/{p['metadata']['name']}"] = (ip, p)
        have = set()
        for eni in self.set_enis(ns, set_name):
            key = self._tags(eni).get("lbc-e2e/pod")
            if key in want and want[key][0] == eni.get("PrivateIpAddress"):
                have.add(key)
            else:
                log(f"deleting ENI {eni['NetworkInterfaceId']} ({key} {eni.get('PrivateIpAddress')})")
                self.ec2.delete_network_interface(NetworkInterfaceId=eni["NetworkInterfaceId"])
        for key, (ip, p) in want.items():
            if key not in have:
                self.ensure_eni(ns, set_name, p["metadata"]["name"], ip, self.node(p["spec"]["nodeName"]))

    # -- Kubernetes ----------------------------------------------------------------------------------------------
    def nodes(self) -> list[dict]:
        if self._nodes is None:
            items = self.kube.get("/api/v1/nodes")["items"]
            k, v = FAKE_NODE_ANN
            # Only the environment's own nodes (they carry their subnet): benchmarks add bare kwok nodes.
            self._nodes = sorted((n for n in items if n["metadata"].get("annotations", {}).get(k) == v
                                  and NODE_ANN_SUBNET in n["metadata"].get("annotations", {})),
                                 key=lambda n: n["metadata"]["name"])
            if not self._nodes:
                raise SystemExit("no fake nodes found; run e2e/up")
        return self._nodes

    def node(self, name: str) -> dict:
        for n in self.nodes():
            if n["metadata"]["name"] == name:
                return n
        return self.kube.get(f"/api/v1/nodes/{name}")

    def set_pods(self, ns: str, set_name: str, include_terminating: bool = True) -> list[dict]:
        items = self.kube.get(f"/api/v1/namespaces/{ns}/pods", labelSelector=f"{SET_LABEL}={set_name}")["items"]
        items = [p for p in items if include_terminating or not terminating(p)]
        return sorted(items, key=lambda p: self.index_of(p, set_name))

    @staticmethod
    def index_of(pod: dict, set_name: str) -> int:
        suffix = pod["metadata"]["name"][len(set_name) + 1:]
        return int(suffix) if suffix.isdigit() else -1

    def alloc_ip(self, node: dict) -> str:
        """Next free address of the node's pod CIDR (upper half), monotonic per node so addresses are not
        reused soon after a pod goes away. A lock file serialises concurrent helpers."""
        name = node["metadata"]["name"]
        cidr = node["spec"].get("podCIDR") or (node["spec"].get("podCIDRs") or [None])[0]
        if not cidr:
            raise SystemExit(f"node {name} has no spec.podCIDR")
        net = ipaddress.ip_network(cidr)
        lo, hi = (HELPER_IP_OFFSET + 10, net.num_addresses - 2) if net.num_addresses >= 2 * HELPER_IP_OFFSET \
            else (net.num_addresses // 2, net.num_addresses - 2)
        os.makedirs(os.path.join(RUN_DIR, "ipam"), exist_ok=True)
        path = os.path.join(RUN_DIR, "ipam", name)
        with open(path, "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.seek(0)
            last = int(f.read().strip() or lo - 1)
            if not lo - 1 <= last <= hi:
                last = lo - 1
            pods = self.kube.get("/api/v1/pods", fieldSelector=f"spec.nodeName={name}")["items"]
            used = {pod_ip(p) for p in pods} | {p["metadata"].get("annotations", {}).get(ANN_POD_IP) for p in pods}
            size = hi - lo + 1
            for step in range(1, size + 1):
                off = lo + (last - lo + step) % size
                ip = str(net[off])
                if ip not in used:
                    f.seek(0)
                    f.truncate()
                    f.write(str(off))
                    return ip
        raise SystemExit(f"no free pod address left on node {name} ({cidr})")

    def create_pod(self, ns: str, set_name: str, index: int, tmpl: dict) -> dict:
        nodes = self.nodes()
        node = nodes[index % len(nodes)]
        name = f"{set_name}-{index}"
        ip = self.alloc_ip(node)
        self.ensure_eni(ns, set_name, name, ip, node)
        container: dict = {"name": "app", "image": tmpl.get("image") or DEFAULT_IMAGE}
        if tmpl.get("port"):
            port = {"containerPort": int(tmpl["port"]), "protocol": tmpl.get("protocol") or "TCP"}
            if tmpl.get("port_name"):
                port["name"] = tmpl["port_name"]
            container["ports"] = [port]
        annotations = {**tmpl.get("annotations", {}), ANN_TEMPLATE: json.dumps(tmpl, sort_keys=True), ANN_POD_IP: ip}
        if tmpl.get("terminate_seconds") is not None:
            annotations[ANN_TERMINATE] = str(tmpl["terminate_seconds"])
        body = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns,
                         "labels": {**tmpl.get("labels", {}), SET_LABEL: set_name},
                         "annotations": annotations},
            "spec": {"nodeName": node["metadata"]["name"], "containers": [container],
                     **({"readinessGates": [{"conditionType": g} for g in tmpl["readiness_gates"]]}
                        if tmpl.get("readiness_gates") else {}),
                     "automountServiceAccountToken": False, "enableServiceLinks": False,
                     "terminationGracePeriodSeconds": int(tmpl.get("grace_seconds", 30))},
        }
        deadline = time.monotonic() + 60
        while True:
            try:
                pod = self.kube.create(f"/api/v1/namespaces/{ns}/pods", body)
                log(f"created {ns}/{name} on {node['metadata']['name']} ip {ip}")
                return pod
            except ApiError as e:
                # A fresh namespace has no "default" ServiceAccount until kube-controller-manager creates it.
                if "service account" in str(e) and time.monotonic() < deadline:
                    time.sleep(0.5)
                    continue
                self.sync_enis(ns, set_name)  # drop the ENI made for this pod
                raise SystemExit(str(e))

    def template_of(self, ns: str, set_name: str) -> dict:
        pods = self.set_pods(ns, set_name)
        if not pods:
            raise SystemExit(f"no pods in set {ns}/{set_name}; use `create` first")
        return json.loads(pods[-1]["metadata"]["annotations"][ANN_TEMPLATE])

    def wait_ips(self, ns: str, names: list[str], timeout: float) -> None:
        def ok():
            got = {p["metadata"]["name"]: p for p in self.kube.get(f"/api/v1/namespaces/{ns}/pods")["items"]}
            return all(n in got and pod_ip(got[n]) for n in names)
        wait_for(f"pod IPs of {names} (is kwok running? see e2e/.run/logs/kwok.log)", ok, timeout)

    def wait_ready(self, ns: str, name: str, timeout: float) -> None:
        def ok():
            p = self.kube.get_or_none(f"/api/v1/namespaces/{ns}/pods/{name}")
            return p is not None and is_ready(p)

        def describe():
            p = self.kube.get_or_none(f"/api/v1/namespaces/{ns}/pods/{name}") or {}
            return json.dumps({"readinessGates": p.get("spec", {}).get("readinessGates"),
                               "conditions": p.get("status", {}).get("conditions")})
        wait_for(f"{ns}/{name} Ready", ok, timeout, describe=describe)

    def wait_gone(self, ns: str, names: list[str], timeout: float) -> None:
        def ok():
            got = {p["metadata"]["name"] for p in self.kube.get(f"/api/v1/namespaces/{ns}/pods")["items"]}
            return not (set(names) & got)
        wait_for(f"pods {names} to go away", ok, timeout)

    def delete_pod(self, ns: str, name: str) -> None:
        self.kube.delete(f"/api/v1/namespaces/{ns}/pods/{name}")
        log(f"deleted {ns}/{name}")


# -- commands ----------------------------------------------------------------------------------------------------

def cmd_create(h: Helper, a) -> None:
    h.kube.ensure_namespace(a.namespace, parse_kv(a.namespace_labels))
    tmpl = {"labels": parse_kv(a.labels) or {"app": a.name}, "port": a.port, "port_name": a.port_name,
            "image": a.image, "grace_seconds": a.grace_seconds}
    if a.protocol != "TCP":
        tmpl["protocol"] = a.protocol
    if a.annotations:
        tmpl["annotations"] = parse_kv(a.annotations)
    if a.readiness_gates:
        tmpl["readiness_gates"] = [g.strip() for g in a.readiness_gates.split(",") if g.strip()]
    if a.terminate_seconds is not None:
        tmpl["terminate_seconds"] = a.terminate_seconds
    existing = {p["metadata"]["name"] for p in h.set_pods(a.namespace, a.name)}
    names = []
    for i in range(a.replicas):
        name = f"{a.name}-{i}"
        if name not in existing:
            h.create_pod(a.namespace, a.name, i, tmpl)
        names.append(name)
    finish(h, a, names)


def finish(h: Helper, a, names: list[str]) -> None:
    if not names or a.no_wait:
        return
    h.wait_ips(a.namespace, names, a.timeout)
    if a.wait_ready:
        for n in names:
            h.wait_ready(a.namespace, n, a.timeout)
    pods = {p["metadata"]["name"]: p for p in h.set_pods(a.namespace, a.name)}
    for n in names:
        p = pods[n]
        print(f"{a.namespace}/{n} {pod_ip(p)} {p['spec']['nodeName']}")


def cmd_scale(h: Helper, a) -> None:
    tmpl = h.template_of(a.namespace, a.name)
    all_pods = h.set_pods(a.namespace, a.name)
    live = [p for p in all_pods if not terminating(p)]
    if len(live) < a.replicas:
        nxt = max(h.index_of(p, a.name) for p in all_pods) + 1
        names = []
        for i in range(nxt, nxt + a.replicas - len(live)):
            h.create_pod(a.namespace, a.name, i, tmpl)
            names.append(f"{a.name}-{i}")
        finish(h, a, names)
    elif len(live) > a.replicas:
        victims = [p["metadata"]["name"] for p in live[a.replicas:]]
        for n in reversed(victims):
            h.delete_pod(a.namespace, n)
        if not a.no_wait:
            h.wait_gone(a.namespace, victims, a.timeout)
            h.sync_enis(a.namespace, a.name)


def cmd_delete(h: Helper, a) -> None:
    names = [p["metadata"]["name"] for p in h.set_pods(a.namespace, a.name)]
    for n in names:
        h.delete_pod(a.namespace, n)
    if not a.no_wait:
        h.wait_gone(a.namespace, names, a.timeout)
        h.sync_enis(a.namespace, a.name)


def cmd_roll(h: Helper, a) -> None:
    tmpl = h.template_of(a.namespace, a.name)
    all_pods = h.set_pods(a.namespace, a.name)
    old = [p["metadata"]["name"] for p in all_pods if not terminating(p)]
    nxt = max(h.index_of(p, a.name) for p in all_pods) + 1
    for victim in old:
        name = f"{a.name}-{nxt}"
        h.create_pod(a.namespace, a.name, nxt, tmpl)
        nxt += 1
        h.wait_ips(a.namespace, [name], a.timeout)
        h.wait_ready(a.namespace, name, a.timeout)
        log(f"{a.namespace}/{name} Ready")
        h.delete_pod(a.namespace, victim)
    if not a.no_wait:
        h.wait_gone(a.namespace, old, a.timeout)
        h.sync_enis(a.namespace, a.name)
    for p in h.set_pods(a.namespace, a.name, include_terminating=False):
        print(f"{a.namespace}/{p['metadata']['name']} {pod_ip(p)} {p['spec']['nodeName']}")


def cmd_ips(h: Helper, a) -> None:
    for p in h.set_pods(a.namespace, a.name, include_terminating=a.all):
        if pod_ip(p):
            print(pod_ip(p))


def cmd_status(h: Helper, a) -> None:
    for p in h.set_pods(a.namespace, a.name):
        print(f"{p['metadata']['name']} {pod_ip(p) or '-'} {p['spec'].get('nodeName')} "
              f"{p.get('status', {}).get('phase')} ready={cond(p, 'Ready')} "
              f"containersReady={cond(p, 'ContainersReady')} terminating={terminating(p)}")


def cmd_set_ready(h: Helper, a) -> None:
    want = {"true": "True", "false": "False"}[a.value]
    h.kube.merge_patch(f"/api/v1/namespaces/{a.namespace}/pods/{a.pod}",
                       {"metadata": {"annotations": {ANN_READY: a.value}}})
    if not a.no_wait:
        def ok():
            p = h.kube.get(f"/api/v1/namespaces/{a.namespace}/pods/{a.pod}")
            return cond(p, "ContainersReady") == want
        wait_for(f"{a.namespace}/{a.pod} ContainersReady={want}", ok, a.timeout)


def cmd_service(h: Helper, a) -> None:
    h.kube.ensure_namespace(a.namespace)
    target = int(a.target_port) if str(a.target_port).isdigit() else a.target_port
    port = {"name": a.port_name, "port": a.port, "targetPort": target, "protocol": "TCP"}
    svc = {"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": a.name, "namespace": a.namespace, "annotations": parse_kv(a.annotations)},
           "spec": {"type": a.type, "selector": parse_kv(a.selector) or {"app": a.name}, "ports": [port]}}
    path = f"/api/v1/namespaces/{a.namespace}/services"
    try:
        out = h.kube.create(path, svc)
    except ApiError as e:
        if e.status != 409:
            raise SystemExit(str(e))
        out = h.kube.merge_patch(f"{path}/{a.name}", {"metadata": svc["metadata"], "spec": svc["spec"]})
    print(f"{a.namespace}/{a.name} {out['spec'].get('clusterIP')}")


def cmd_sync_enis(h: Helper, a) -> None:
    h.sync_enis(a.namespace, a.name)
    for eni in h.set_enis(a.namespace, a.name):
        print(f"{eni['NetworkInterfaceId']} {eni.get('PrivateIpAddress')} {h._tags(eni).get('lbc-e2e/pod')}")


def main() -> None:
    p = argparse.ArgumentParser(prog="e2e/pods", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    sub = p.add_subparsers(dest="cmd", required=True)

    def waitopts(sp, wait_ready=True):
        sp.add_argument("--no-wait", action="store_true", help="do not wait for IPs / pods to go away")
        if wait_ready:
            sp.add_argument("--wait-ready", action="store_true", help="also wait for the Ready condition")
        sp.add_argument("--timeout", type=float, default=120.0, help="seconds (default 120)")

    sp = sub.add_parser("create")
    sp.add_argument("namespace")
    sp.add_argument("name")
    sp.add_argument("--replicas", type=int, required=True)
    sp.add_argument("--labels", help="pod labels k=v,.. (default app=NAME)")
    sp.add_argument("--port", type=int, default=8080)
    sp.add_argument("--port-name", default="http")
    sp.add_argument("--protocol", default="TCP", choices=["TCP", "UDP"], help="the container port's protocol")
    sp.add_argument("--annotations", help="pod annotations k=v,.. (the container is named app)")
    sp.add_argument("--image", default=DEFAULT_IMAGE)
    sp.add_argument("--namespace-labels", help="labels to put on the namespace k=v,..")
    sp.add_argument("--grace-seconds", type=int, default=30, help="terminationGracePeriodSeconds")
    sp.add_argument("--readiness-gates", help="spec.readinessGates condition types, comma-separated (what the "
                    "controller's pod webhook would inject, for tests without the webhook)")
    sp.add_argument("--terminate-seconds", type=float,
                    help="how long a deleted pod stays terminating (kwok stage; default 3, capped by grace)")
    waitopts(sp)
    sp.set_defaults(fn=cmd_create)

    sp = sub.add_parser("scale")
    sp.add_argument("namespace")
    sp.add_argument("name")
    sp.add_argument("--replicas", type=int, required=True)
    waitopts(sp)
    sp.set_defaults(fn=cmd_scale)

    sp = sub.add_parser("delete")
    sp.add_argument("namespace")
    sp.add_argument("name")
    waitopts(sp, wait_ready=False)
    sp.set_defaults(fn=cmd_delete)

    sp = sub.add_parser("roll")
    sp.add_argument("namespace")
    sp.add_argument("name")
    waitopts(sp, wait_ready=False)
    sp.set_defaults(fn=cmd_roll)

    sp = sub.add_parser("ips")
    sp.add_argument("namespace")
    sp.add_argument("name")
    sp.add_argument("--all", action="store_true", help="include terminating pods")
    sp.set_defaults(fn=cmd_ips)

    sp = sub.add_parser("status")
    sp.add_argument("namespace")
    sp.add_argument("name")
    sp.set_defaults(fn=cmd_status)

    sp = sub.add_parser("set-ready")
    sp.add_argument("namespace")
    sp.add_argument("pod")
    sp.add_argument("value", choices=["true", "false"])
    sp.add_argument("--no-wait", action="store_true")
    sp.add_argument("--timeout", type=float, default=30.0)
    sp.set_defaults(fn=cmd_set_ready)

    sp = sub.add_parser("service")
    sp.add_argument("namespace")
    sp.add_argument("name")
    sp.add_argument("--port", type=int, default=80)
    sp.add_argument("--target-port", default="8080", help="number or container port name")
    sp.add_argument("--port-name", default="http")
    sp.add_argument("--selector", help="k=v,.. (default app=NAME)")
    sp.add_argument("--type", default="ClusterIP", choices=["ClusterIP", "NodePort", "LoadBalancer"])
    sp.add_argument("--annotations", help="k=v,..")
    sp.set_defaults(fn=cmd_service)

    sp = sub.add_parser("sync-enis")
    sp.add_argument("namespace")
    sp.add_argument("name")
    sp.set_defaults(fn=cmd_sync_enis)

    a = p.parse_args()
    a.fn(Helper(), a)


if __name__ == "__main__":
    main()
