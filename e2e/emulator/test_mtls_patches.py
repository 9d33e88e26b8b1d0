"""Self-test of mtls_patches.py (trust stores and listener mutual TLS), through a running awsemu."""

import pytest
from botocore.exceptions import ClientError

from test_awsemu import _nlb, aws, client, code_of, emu, reset  # noqa: F401 (fixtures)

PEM = b"-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"


def _trust_store(emu, aws, name, body=PEM):
    s3 = client(emu, "s3")
    s3.create_bucket(Bucket=f"{name}-ca")
    s3.put_object(Bucket=f"{name}-ca", Key="ca.pem", Body=body)
    return aws.elb.create_trust_store(Name=name, CaCertificatesBundleS3Bucket=f"{name}-ca",
                                      CaCertificatesBundleS3Key="ca.pem")["TrustStores"][0]


def _https_alb(emu, aws, name):
    cert = client(emu, "acm").request_certificate(DomainName=f"{name}.example.com")["CertificateArn"]
    lb, _ = _nlb(aws, name, Type="application", Scheme="internet-facing")
    return lb["LoadBalancerArn"], cert


def test_trust_stores_come_from_a_bundle_in_s3_and_are_found_by_name_or_arn(emu, aws):
    ts = _trust_store(emu, aws, "ts-one", PEM + PEM)
    assert (ts["Name"], ts["Status"], ts["NumberOfCaCertificates"]) == ("ts-one", "ACTIVE", 2)
    assert ":truststore/ts-one/" in ts["TrustStoreArn"]
    by_name = aws.elb.describe_trust_stores(Names=["ts-one"])["TrustStores"]
    by_arn = aws.elb.describe_trust_stores(TrustStoreArns=[ts["TrustStoreArn"]])["TrustStores"]
    assert [t["TrustStoreArn"] for t in by_name + by_arn] == [ts["TrustStoreArn"]] * 2
    for kw in ({"Names": ["ts-one", "nope"]}, {"TrustStoreArns": [ts["TrustStoreArn"] + "0"]}):
        with pytest.raises(ClientError) as e:
            aws.elb.describe_trust_stores(**kw)
        assert code_of(e) == "TrustStoreNotFound", kw
    with pytest.raises(ClientError) as e:
        aws.elb.create_trust_store(Name="ts-one", CaCertificatesBundleS3Bucket="ts-one-ca",
                                   CaCertificatesBundleS3Key="ca.pem")
    assert code_of(e) == "DuplicateTrustStoreName"
    with pytest.raises(ClientError) as e:
        aws.elb.create_trust_store(Name="ts-missing", CaCertificatesBundleS3Bucket="ts-one-ca",
                                   CaCertificatesBundleS3Key="absent.pem")
    assert code_of(e) == "CaCertificatesBundleNotFound"
    with pytest.raises(ClientError) as e:
        _trust_store(emu, aws, "ts-empty", b"not a certificate")
    assert code_of(e) == "InvalidCaCertificatesBundle"


def test_https_listeners_take_verify_passthrough_and_off_as_aws_checks_them(emu, aws):
    ts = _trust_store(emu, aws, "ts-listen")["TrustStoreArn"]
    lb, cert = _https_alb(emu, aws, "emu-mtls")
    tg = aws.tg("emu-mtls")
    fwd = [{"Type": "forward", "TargetGroupArn": tg}]
    verify = {"Mode": "verify", "TrustStoreArn": ts}
    created = aws.elb.create_listener(LoadBalancerArn=lb, Port=443, Protocol="HTTPS",
                                      Certificates=[{"CertificateArn": cert}], DefaultActions=fwd,
                                      MutualAuthentication=verify)["Listeners"][0]
    arn = created["ListenerArn"]
    want = {"Mode": "verify", "TrustStoreArn": ts, "IgnoreClientCertificateExpiry": False,
            "TrustStoreAssociationStatus": "active", "AdvertiseTrustStoreCaNames": "off"}
    assert created["MutualAuthentication"] == want

    def described():
        return aws.elb.describe_listeners(ListenerArns=[arn])["Listeners"][0].get("MutualAuthentication")

    assert described() == want
    # ModifyListener without it keeps it; with it replaces it.
    aws.elb.modify_listener(ListenerArn=arn, SslPolicy="ELBSecurityPolicy-2016-08")
    assert described() == want
    aws.elb.modify_listener(ListenerArn=arn, MutualAuthentication={"Mode": "passthrough"})
    assert described() == {"Mode": "passthrough"}
    with pytest.raises(ClientError) as e:
        aws.elb.modify_listener(ListenerArn=arn, MutualAuthentication={"Mode": "verify"})
    assert code_of(e) == "ValidationError"
    bad = [
        ({"Mode": "Verify", "TrustStoreArn": ts}, "ValidationError"),
        ({"Mode": "passthrough", "TrustStoreArn": ts}, "ValidationError"),
        ({"Mode": "off", "IgnoreClientCertificateExpiry": True}, "ValidationError"),
        ({"Mode": "verify", "TrustStoreArn": ts + "0"}, "TrustStoreNotFound"),
        ({"Mode": "verify", "TrustStoreArn": ts, "AdvertiseTrustStoreCaNames": "yes"}, "ValidationError"),
    ]
    for ma, code in bad:
        with pytest.raises(ClientError) as e:
            aws.elb.modify_listener(ListenerArn=arn, MutualAuthentication=ma)
        assert code_of(e) == code, ma
        assert described() == {"Mode": "passthrough"}, "a refused change changes nothing"
    aws.elb.modify_listener(ListenerArn=arn, MutualAuthentication={**verify, "IgnoreClientCertificateExpiry": True,
                                                                   "AdvertiseTrustStoreCaNames": "on"})
    assert described() == {**want, "IgnoreClientCertificateExpiry": True, "AdvertiseTrustStoreCaNames": "on"}
    # The store is in use; off frees it.
    with pytest.raises(ClientError) as e:
        aws.elb.delete_trust_store(TrustStoreArn=ts)
    assert code_of(e) == "TrustStoreInUse"
    aws.elb.modify_listener(ListenerArn=arn, MutualAuthentication={"Mode": "off"})
    assert described() == {"Mode": "off"}
    aws.elb.delete_trust_store(TrustStoreArn=ts)
    # Another HTTPS listener never set reports off; an HTTP listener reports nothing and refuses a mode.
    other = aws.elb.create_listener(LoadBalancerArn=lb, Port=8443, Protocol="HTTPS",
                                    Certificates=[{"CertificateArn": cert}], DefaultActions=fwd)["Listeners"][0]
    assert other["MutualAuthentication"] == {"Mode": "off"}
    with pytest.raises(ClientError) as e:
        aws.elb.create_listener(LoadBalancerArn=lb, Port=80, Protocol="HTTP", DefaultActions=fwd,
                                MutualAuthentication={"Mode": "passthrough"})
    assert code_of(e) == "InvalidConfigurationRequest"
    http = aws.elb.create_listener(LoadBalancerArn=lb, Port=80, Protocol="HTTP", DefaultActions=fwd)["Listeners"][0]
    assert "MutualAuthentication" not in http
