#!/usr/bin/env python3
"""e2e/scripts/trust_store.py NAME: creates an ELBv2 trust store NAME in the e2e environment's AWS emulator the way
a user does in AWS (a CA bundle uploaded to S3, then CreateTrustStore naming it) and prints its ARN. The bundle is a
fresh self-signed CA (cryptography, in the emulator's venv). Run with the venv's python; reads LBC_AWS_ENDPOINT,
AWS_REGION and the AWS_* keys like e2e/pods."""

import datetime
import os
import sys

import boto3
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def ca_pem(name: str) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name} test CA")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM)


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: trust_store.py NAME")
    name = sys.argv[1]
    kw = {"endpoint_url": os.environ.get("LBC_AWS_ENDPOINT", "http://127.0.0.1:4566"),
          "region_name": os.environ.get("AWS_REGION", "us-east-1"),
          "aws_access_key_id": os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
          "aws_secret_access_key": os.environ.get("AWS_SECRET_ACCESS_KEY", "testing")}
    s3, elb = boto3.client("s3", **kw), boto3.client("elbv2", **kw)
    bucket = f"{name}-ca-bundle"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="ca.pem", Body=ca_pem(name))
    store = elb.create_trust_store(Name=name, CaCertificatesBundleS3Bucket=bucket, CaCertificatesBundleS3Key="ca.pem")
    print(store["TrustStores"][0]["TrustStoreArn"])


if __name__ == "__main__":
    main()
