"""Self-test of acm_patches.py (name summaries, pagination) and ACM through awsemu (routing, call log)."""

import datetime
import time

import pytest
from botocore.exceptions import ClientError

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from test_awsemu import client, ctl, emu, reset  # noqa: F401 (fixtures)


def _pem(names, issuer=None):
    """(certificate PEM, key PEM) for `names`: self-signed, or signed by `issuer`, a pair _pem returned."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    issuer_name, signer = (subject, key) if issuer is None else (
        x509.load_pem_x509_certificate(issuer[0]).subject, serialization.load_pem_private_key(issuer[1], None))
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
            .sign(signer, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def _import(acm, names):
    cert, key = _pem(names)
    return acm.import_certificate(Certificate=cert, PrivateKey=key)["CertificateArn"]


ALL_KEY_TYPES = ["RSA_1024", "RSA_2048", "RSA_3072", "RSA_4096", "EC_prime256v1", "EC_secp384r1", "EC_secp521r1"]


def test_list_certificates_has_name_summaries_and_pages(emu):
    acm = client(emu, "acm")
    wild = _import(acm, ["*.example.test", "example.test"])
    many = _import(acm, ["big.test"] + [f"n{i}.big.test" for i in range(120)])
    pending = acm.request_certificate(DomainName="pending.test")["CertificateArn"]
    ctl(emu, "DELETE", "calls")

    def page(**kw):
        return acm.list_certificates(CertificateStatuses=["ISSUED"], Includes={"keyTypes": ALL_KEY_TYPES}, **kw)

    out = page()
    by_arn = {c["CertificateArn"]: c for c in out["CertificateSummaryList"]}
    assert set(by_arn) == {wild, many}, "ISSUED only: the requested certificate waits for validation"
    assert pending not in by_arn
    assert by_arn[wild]["DomainName"] == "*.example.test"
    assert by_arn[wild]["SubjectAlternativeNameSummaries"] == ["*.example.test", "example.test"]
    assert by_arn[wild]["HasAdditionalSubjectAlternativeNames"] is False
    assert len(by_arn[many]["SubjectAlternativeNameSummaries"]) == 100
    assert by_arn[many]["HasAdditionalSubjectAlternativeNames"] is True
    assert by_arn[wild]["Type"] == "IMPORTED" and by_arn[wild]["KeyAlgorithm"] == "EC_prime256v1"
    assert "NextToken" not in out

    first = page(MaxItems=1)
    second = page(MaxItems=1, NextToken=first["NextToken"])
    assert "NextToken" not in second
    listed = [c["CertificateArn"] for c in first["CertificateSummaryList"] + second["CertificateSummaryList"]]
    assert listed == sorted([wild, many])

    # The full list of names is DescribeCertificate's.
    assert len(acm.describe_certificate(CertificateArn=many)["Certificate"]["SubjectAlternativeNames"]) == 121

    # Routed by the credential scope and logged like every AWS call.
    _, log = ctl(emu, "GET", "calls?service=acm")
    assert [c["operation"] for c in log["calls"]] == ["ListCertificates"] * 3 + ["DescribeCertificate"]


def test_a_requested_certificate_is_issued_once_its_dns_record_exists(emu):
    acm, r53 = client(emu, "acm"), client(emu, "route53")
    arn = acm.request_certificate(DomainName="www.issue.test", SubjectAlternativeNames=["www.issue.test"],
                                  ValidationMethod="DNS")["CertificateArn"]
    time.sleep(2.5)
    assert acm.describe_certificate(CertificateArn=arn)["Certificate"]["Status"] == "PENDING_VALIDATION", "no record"
    zone = r53.create_hosted_zone(Name="issue.test", CallerReference="z1")["HostedZone"]["Id"]
    rr = acm.describe_certificate(CertificateArn=arn)["Certificate"]["DomainValidationOptions"][0]["ResourceRecord"]
    r53.change_resource_record_sets(HostedZoneId=zone, ChangeBatch={"Changes": [{"Action": "CREATE", "ResourceRecordSet": {
        "Name": rr["Name"], "Type": rr["Type"], "TTL": 60, "ResourceRecords": [{"Value": rr["Value"]}]}}]})
    assert acm.describe_certificate(CertificateArn=arn)["Certificate"]["Status"] == "ISSUED"
    private = acm.request_certificate(DomainName="p.issue.test",
                                      CertificateAuthorityArn="arn:aws:acm-pca:us-east-1:123456789012:certificate-authority/x")
    assert acm.describe_certificate(CertificateArn=private["CertificateArn"])["Certificate"]["Status"] == "ISSUED"


def test_a_certificate_a_listener_uses_is_not_deleted(emu):
    acm, elb, ec2 = client(emu, "acm"), client(emu, "elbv2"), client(emu, "ec2")
    cert = acm.request_certificate(DomainName="used.test")["CertificateArn"]
    vpc = ec2.describe_vpcs()["Vpcs"][0]["VpcId"]
    subnets = [s["SubnetId"] for s in ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["Subnets"]][:2]
    lb = elb.create_load_balancer(Name="emu-acm-inuse", Subnets=subnets)["LoadBalancers"][0]["LoadBalancerArn"]
    listener = elb.create_listener(LoadBalancerArn=lb, Protocol="HTTPS", Port=443, Certificates=[{"CertificateArn": cert}],
                                   DefaultActions=[{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "200"}}])
    with pytest.raises(ClientError) as e:
        acm.delete_certificate(CertificateArn=cert)
    assert e.value.response["Error"]["Code"] == "ResourceInUseException"
    elb.delete_listener(ListenerArn=listener["Listeners"][0]["ListenerArn"])
    acm.delete_certificate(CertificateArn=cert)


def test_reimport_keeps_the_tags_and_refuses_new_ones(emu):
    acm = client(emu, "acm")
    cert, key = _pem(["a.example.com"])
    arn = acm.import_certificate(Certificate=cert, PrivateKey=key,
                                 Tags=[{"Key": "elbv2.k8s.aws/cluster", "Value": "c1"}])["CertificateArn"]
    cert2, key2 = _pem(["b.example.com"])
    assert acm.import_certificate(Certificate=cert2, PrivateKey=key2, CertificateArn=arn)["CertificateArn"] == arn
    assert acm.describe_certificate(CertificateArn=arn)["Certificate"]["DomainName"] == "b.example.com"
    assert acm.list_tags_for_certificate(CertificateArn=arn)["Tags"] == [{"Key": "elbv2.k8s.aws/cluster", "Value": "c1"}]
    with pytest.raises(ClientError) as e:
        acm.import_certificate(Certificate=cert, PrivateKey=key, CertificateArn=arn, Tags=[{"Key": "k", "Value": "v"}])
    assert e.value.response["Error"]["Code"] == "ValidationException"
