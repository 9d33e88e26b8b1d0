#!/usr/bin/env python3
"""e2e/scripts/untagged_vpc.py NAME: creates, in the e2e environment's AWS emulator, a VPC whose subnets carry no
role tag, the way many accounts are built: an internet gateway, two public subnets (a route table sending 0.0.0.0/0
to the gateway) and two private ones (the VPC's main route table, local routes only), in two zones. Prints
{"vpc_id", "public": [subnet IDs], "private": [subnet IDs]} as JSON: subnet discovery by reachability (ALBC's gate
SubnetDiscoveryByReachability) must pick the public pair for internet-facing load balancers and the private pair for
internal ones. Run with the venv's python; reads LBC_AWS_ENDPOINT, AWS_REGION and the AWS_* keys like e2e/pods."""

import json
import os
import sys

import boto3


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: untagged_vpc.py NAME")
    name = sys.argv[1]
    region = os.environ.get("AWS_REGION", "us-east-1")
    ec2 = boto3.client("ec2", endpoint_url=os.environ.get("LBC_AWS_ENDPOINT", "http://127.0.0.1:4566"),
                       region_name=region,
                       aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
                       aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"))
    # The cluster VPC's CIDR again (AWS allows overlapping VPCs): the environment's pod IPs stay inside it.
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16", TagSpecifications=[
        {"ResourceType": "vpc", "Tags": [{"Key": "Name", "Value": name}]}])["Vpc"]["VpcId"]
    igw = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=vpc)
    out = {"vpc_id": vpc, "public": [], "private": []}
    for kind, third in (("public", 240), ("private", 242)):
        for i, zone in enumerate(("a", "b")):
            sub = ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{third + i}.0/24", AvailabilityZone=f"{region}{zone}",
                                    TagSpecifications=[{"ResourceType": "subnet",
                                                        "Tags": [{"Key": "Name", "Value": f"{name}-{kind}-{zone}"}]}])
            out[kind].append(sub["Subnet"]["SubnetId"])
    table = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=table, DestinationCidrBlock="0.0.0.0/0", GatewayId=igw)
    for sub in out["public"]:
        ec2.associate_route_table(RouteTableId=table, SubnetId=sub)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
