#!/usr/bin/env python3
"""Seed the AWS emulator with the e2e network: one VPC, three public and three private subnets, a node
security group. Idempotent: the VPC is found by its tag Name=lbc-e2e; nothing is created twice.

Prints shell `export` lines (LBC_VPC_ID, LBC_VPC_CIDR, LBC_PUBLIC_SUBNET_IDS, LBC_PRIVATE_SUBNET_IDS,
LBC_NODE_SECURITY_GROUP_ID) on stdout, and with --json a JSON document instead (used by e2e/up).

Endpoint: LBC_AWS_ENDPOINT (default http://127.0.0.1:4566); region AWS_REGION (default us-east-1);
cluster name LBC_CLUSTER_NAME (default e2e-cluster).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys

import boto3

VPC_NAME = "lbc-e2e"
VPC_CIDR = "10.0.0.0/16"
AZS = ["a", "b", "c"]
PUBLIC_CIDRS = ["10.0.0.0/19", "10.0.32.0/19", "10.0.64.0/19"]
PRIVATE_CIDRS = ["10.0.96.0/19", "10.0.128.0/19", "10.0.160.0/19"]


def ec2_client(endpoint: str, region: str):
    return boto3.client(
        "ec2",
        endpoint_url=endpoint,
        region_name=region,
        aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
        aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"),
    )


def tag_spec(kind: str, tags: dict[str, str]) -> list[dict]:
    return [{"ResourceType": kind, "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]


def find_one(items: list[dict], what: str) -> dict | None:
    if len(items) > 1:
        sys.exit(f"seed_aws: more than one {what} found, reset the emulator (POST /_awsemu/reset)")
    return items[0] if items else None


def seed(ec2, region: str, cluster: str) -> dict:
    cluster_tag = f"kubernetes.io/cluster/{cluster}"
    vpc = find_one(ec2.describe_vpcs(Filters=[{"Name": "tag:Name", "Values": [VPC_NAME]}])["Vpcs"], "VPC")
    if vpc is None:
        vpc = ec2.create_vpc(CidrBlock=VPC_CIDR, TagSpecifications=tag_spec("vpc", {"Name": VPC_NAME}))["Vpc"]
    vpc_id = vpc["VpcId"]

    existing = {s["CidrBlock"]: s for s in
                ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Subnets"]}

    def subnet(cidr: str, az: str, name: str, role_tag: str) -> dict:
        s = existing.get(cidr)
        if s is None:
            s = ec2.create_subnet(
                VpcId=vpc_id, CidrBlock=cidr, AvailabilityZone=az,
                TagSpecifications=tag_spec("subnet", {"Name": name, cluster_tag: "owned", role_tag: "1"}),
            )["Subnet"]
        return {"id": s["SubnetId"], "cidr": cidr, "az": az, "name": name}

    public = [subnet(c, f"{region}{z}", f"lbc-e2e-public-{z}", "kubernetes.io/role/elb")
              for c, z in zip(PUBLIC_CIDRS, AZS)]
    private = [subnet(c, f"{region}{z}", f"lbc-e2e-private-{z}", "kubernetes.io/role/internal-elb")
               for c, z in zip(PRIVATE_CIDRS, AZS)]

    sg_name = "lbc-e2e-nodes"
    sg = find_one(ec2.describe_security_groups(Filters=[
        {"Name": "vpc-id", "Values": [vpc_id]}, {"Name": "group-name", "Values": [sg_name]}])["SecurityGroups"],
        "node security group")
    if sg is None:
        sg_id = ec2.create_security_group(
            GroupName=sg_name, Description="lbc-e2e fake nodes and pod ENIs", VpcId=vpc_id,
            TagSpecifications=tag_spec("security-group", {"Name": sg_name, cluster_tag: "owned"}),
        )["GroupId"]
    else:
        sg_id = sg["GroupId"]

    return {"vpc_id": vpc_id, "vpc_cidr": VPC_CIDR, "cluster_name": cluster, "region": region,
            "public_subnets": public, "private_subnets": private, "node_security_group_id": sg_id}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="print JSON instead of export lines")
    args = p.parse_args()
    endpoint = os.environ.get("LBC_AWS_ENDPOINT", "http://127.0.0.1:4566")
    region = os.environ.get("AWS_REGION", "us-east-1")
    cluster = os.environ.get("LBC_CLUSTER_NAME", "e2e-cluster")
    out = seed(ec2_client(endpoint, region), region, cluster)
    if args.json:
        print(json.dumps(out, indent=1))
        return
    env = {
        "LBC_VPC_ID": out["vpc_id"],
        "LBC_VPC_CIDR": out["vpc_cidr"],
        "LBC_PUBLIC_SUBNET_IDS": ",".join(s["id"] for s in out["public_subnets"]),
        "LBC_PRIVATE_SUBNET_IDS": ",".join(s["id"] for s in out["private_subnets"]),
        "LBC_NODE_SECURITY_GROUP_ID": out["node_security_group_id"],
    }
    for k, v in env.items():
        print(f"export {k}={shlex.quote(v)}")


if __name__ == "__main__":
    main()
