"""Self-test of acm_patches.py (name summaries, pagination) and ACM through awsemu (routing, call log)."""

import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from test_awsemu import client, ctl, emu, reset  # noqa: F401 (fixtures)


def _pem(names):
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
            .sign(key, hashes.SHA256()))
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
