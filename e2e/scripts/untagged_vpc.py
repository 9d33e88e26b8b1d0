#!/usr/bin/env python3
"""e2e/scripts/untagged_vpc.py NAME [--ipv6]: creates, in the e2e environment's AWS emulator, a VPC whose subnets carry no
role tag, the way many accounts are built: an internet gateway, two public subnets (a route table sending 0.0.0.0/0
to the gateway) and two private ones (the VPC's main route table, local routes only), in two zones. Prints
{"vpc_id", "public": [subnet IDs], "private": [subnet IDs]} as JSON: subnet discovery by reachability (ALBC's gate
SubnetDiscoveryByReachability) must pick the public pair for internet-facing load balancers and the private pair for
internal ones. With --ipv6 the VPC has an IPv6 block and each subnet a /64 of it, printed as "ipv6": {subnet ID:
CIDR}. Run with the venv's python; reads LBC_AWS_ENDPOINT, AWS_REGION and the AWS_* keys like e2e/pods."""

import ipaddress
import json
import os
import sys

import boto3


def main() -> None:
    if len(sys.argv) not in (2, 3) or sys.argv[2:] not in ([], ["--ipv6"]):
        sys.exit("usage: untagged_vpc.py NAME [--ipv6]")
    name, ipv6 = sys.argv[1], sys.argv[2:] == ["--ipv6"]
    region = os.environ.get("AWS_REGION", "us-east-1")
    ec2 = boto3.client("ec2", endpoint_url=os.environ.get("LBC_AWS_ENDPOINT", "http://127.0.0.1:4566"),
                       region_name=region,
                       aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
                       aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"))
    # The cluster VPC's CIDR again (AWS allows overlapping VPCs): the environment's pod IPs stay inside it.
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16", AmazonProvidedIpv6CidrBlock=ipv6, TagSpecifications=[
        {"ResourceType": "vpc", "Tags": [{"Key": "Name", "Value": name}]}])["Vpc"]["VpcId"]
    blocks = ec2.describe_vpcs(VpcIds=[vpc])["Vpcs"][0].get("Ipv6CidrBlockAssociationSet") or []
    sixty_fours = ipaddress.ip_network(blocks[0]["Ipv6CidrBlock"]).subnets(new_prefix=64) if ipv6 else None
    igw = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=vpc)
    out = {"vpc_id": vpc, "public": [], "private": [], **({"ipv6": {}} if ipv6 else {})}
    for kind, third in (("public", 240), ("private", 242)):
        for i, zone in enumerate(("a", "b")):
            v6 = {"Ipv6CidrBlock": str(next(sixty_fours))} if sixty_fours else {}
            sub = ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{third + i}.0/24", AvailabilityZone=f"{region}{zone}",
                                    TagSpecifications=[{"ResourceType": "subnet",
                                                        "Tags": [{"Key": "Name", "Value": f"{name}-{kind}-{zone}"}]}],
                                    **v6)
            out[kind].append(sub["Subnet"]["SubnetId"])
            if v6:
                out["ipv6"][sub["Subnet"]["SubnetId"]] = v6["Ipv6CidrBlock"]
    table = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=table, DestinationCidrBlock="0.0.0.0/0", GatewayId=igw)
    for sub in out["public"]:
        ec2.associate_route_table(RouteTableId=table, SubnetId=sub)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
