#!/usr/bin/env python3
"""Cluster part of e2e/up: create or update the fake nodes (one per private subnet / AZ), wait until kwok
reports them Ready and kube-controller-manager has created the default ServiceAccount; print the
environment lines that depend on the AWS seed (LBC_VPC_*, LBC_*_SUBNET_IDS, LBC_NODE_SECURITY_GROUP_ID,
LBC_NODES).

Usage: setup_cluster.py AWS_SEED_JSON   (output of seed_aws.py --json; needs LBC_KUBE_* in the environment)
"""
from __future__ import annotations

import ipaddress
import json
import os
import shlex
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kubeapi import ApiError, Kube, wait_for  # noqa: E402

NODE_PREFIX = "lbc-e2e-node-"


def node_manifest(subnet: dict, seed: dict) -> dict:
    net = ipaddress.ip_network(subnet["cidr"])
    # Pods get VPC addresses, as with Cilium in ENI mode: the node's pod range is the second /22 of its subnet;
    # the node's own address is .10 of the subnet.
    pod_cidr = str(list(net.subnets(new_prefix=22))[1])
    node_ip = str(net[10])
    suffix = subnet["az"][-1]
    name = NODE_PREFIX + suffix
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {
                "kwok.x-k8s.io/node": "fake",
                "node.alpha.kubernetes.io/ttl": "0",
                "lbc-e2e/subnet-id": subnet["id"],
                "lbc-e2e/security-group-id": seed["node_security_group_id"],
            },
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": subnet["az"],
                "topology.kubernetes.io/region": seed["region"],
                "node.kubernetes.io/instance-type": "m5.large",
                "type": "kwok",
            },
        },
        # No spec.providerID (RKE2 nodes often have none) and no taints.
        "spec": {"podCIDR": pod_cidr, "podCIDRs": [pod_cidr]},
        "status": {"addresses": [{"type": "InternalIP", "address": node_ip},
                                 {"type": "Hostname", "address": name}]},
    }


def ensure_node(kube: Kube, want: dict) -> None:
    name = want["metadata"]["name"]
    have = kube.get_or_none(f"/api/v1/nodes/{name}")
    if have is None:
        try:
            kube.create("/api/v1/nodes", want)  # a Node keeps the status given at creation (like kubelet's)
            return
        except ApiError as e:
            if e.status != 409:
                raise
            have = kube.get(f"/api/v1/nodes/{name}")
    if have["spec"].get("podCIDR") != want["spec"]["podCIDR"]:
        raise SystemExit(f"node {name} has podCIDR {have['spec'].get('podCIDR')}, want {want['spec']['podCIDR']}:"
                         " run e2e/down && e2e/up")
    md = have["metadata"]
    if any(md.get("annotations", {}).get(k) != v for k, v in want["metadata"]["annotations"].items()) or \
            any(md.get("labels", {}).get(k) != v for k, v in want["metadata"]["labels"].items()):
        kube.merge_patch(f"/api/v1/nodes/{name}", {"metadata": {"annotations": want["metadata"]["annotations"],
                                                                "labels": want["metadata"]["labels"]}})


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    with open(sys.argv[1]) as f:
        seed = json.load(f)
    kube = Kube.from_env(dict(os.environ))
    manifests = [node_manifest(s, seed) for s in seed["private_subnets"]]
    for m in manifests:
        ensure_node(kube, m)
    names = [m["metadata"]["name"] for m in manifests]

    def nodes_ready():
        items = {n["metadata"]["name"]: n for n in kube.get("/api/v1/nodes")["items"]}
        return all(any(c["type"] == "Ready" and c["status"] == "True"
                       for c in items.get(n, {}).get("status", {}).get("conditions") or []) for n in names)
    wait_for(f"nodes {names} Ready (kwok)", nodes_ready, 90)

    wait_for("ServiceAccount default/default (kube-controller-manager)",
             lambda: kube.get_or_none("/api/v1/namespaces/default/serviceaccounts/default"), 90)

    env = {
        "LBC_VPC_ID": seed["vpc_id"],
        "LBC_VPC_CIDR": seed["vpc_cidr"],
        "LBC_PUBLIC_SUBNET_IDS": ",".join(s["id"] for s in seed["public_subnets"]),
        "LBC_PRIVATE_SUBNET_IDS": ",".join(s["id"] for s in seed["private_subnets"]),
        "LBC_NODE_SECURITY_GROUP_ID": seed["node_security_group_id"],
        "LBC_NODES": ",".join(names),
    }
    for k, v in env.items():
        print(f"export {k}={shlex.quote(v)}")


if __name__ == "__main__":
    main()
