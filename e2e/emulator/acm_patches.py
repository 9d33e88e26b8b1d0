"""awsemu patches for ACM's ListCertificates, which certificate discovery reads:

  * each summary carries `SubjectAlternativeNameSummaries` (the first 100 names) and
    `HasAdditionalSubjectAlternativeNames`, as in AWS (moto 5.2.5 sent neither, so a client had to
    DescribeCertificate every certificate);
  * `MaxItems` / `NextToken` paginate (moto returned everything at once and no token).

  * a requested (AMAZON_ISSUED) certificate turns ISSUED only once the DNS validation record of each of its names
    (the CNAME DescribeCertificate gives) is in a Route 53 hosted zone of the account, and
    AWSEMU_ACM_VALIDATION_SECONDS (default 2) have passed since the request, as ACM validates by DNS; moto issued
    every request after MOTO_ACM_VALIDATION_WAIT seconds whether or not anyone could prove the domain;
  * DeleteCertificate of a certificate a listener uses: ResourceInUseException (AWS: "the certificate is in use by
    another AWS resource"); moto deleted it.

  * ImportCertificate of an existing ARN (a re-import) keeps the certificate's tags and refuses new ones, as AWS
    does ("you cannot apply tags when reimporting a certificate"); moto made a new bundle without any tags.

Everything else (filters on status and key type) is moto's: an imported certificate is ISSUED at once, a private
one (CertificateAuthorityArn) too.
"""

from __future__ import annotations

import os
from typing import Any

SAN_SUMMARY_MAX = 100


def install() -> None:
    from moto.acm.exceptions import AWSValidationException
    from moto.acm.responses import AWSCertificateManagerResponse
    from moto.core.responses import ActionResult

    def list_certificates(self: Any) -> ActionResult:
        statuses = self._get_param("CertificateStatuses")
        includes = self._get_param("Includes")
        max_items = int(self._get_param("MaxItems") or 1000)
        if not 1 <= max_items <= 1000:
            raise AWSValidationException("MaxItems must be between 1 and 1000")
        token = self._get_param("NextToken")
        try:
            start = int(token) if token else 0
        except ValueError:
            raise AWSValidationException(f"Invalid NextToken {token!r}") from None
        bundles = sorted(self.acm_backend.list_certificates(statuses, includes), key=lambda b: b.arn)
        summaries = []
        for bundle in bundles[start:start + max_items]:
            cert = bundle.describe()["Certificate"]
            sans = cert.pop("SubjectAlternativeNames", None) or []
            cert["InUse"] = bool(cert.pop("InUseBy", []))
            cert["Exported"] = bundle.cert_options["Export"] == "ENABLED"
            cert["SubjectAlternativeNameSummaries"] = sans[:SAN_SUMMARY_MAX]
            cert["HasAdditionalSubjectAlternativeNames"] = len(sans) > SAN_SUMMARY_MAX
            summaries.append(cert)
        result: dict[str, Any] = {"CertificateSummaryList": summaries}
        if start + max_items < len(bundles):
            result["NextToken"] = str(start + max_items)
        return ActionResult(result=result)

    AWSCertificateManagerResponse.list_certificates = list_certificates

    from moto.acm import models as acm_models
    from moto.core.exceptions import JsonRESTError
    from moto.core.utils import utcnow

    wait = float(os.environ.get("AWSEMU_ACM_VALIDATION_SECONDS", "2"))
    orig_check = acm_models.CertBundle.check

    def validated(bundle: Any) -> bool:
        from moto.route53.models import route53_backends
        zones = [z for backend in route53_backends[bundle.arn.split(":")[4]].values() for z in backend.zones.values()]
        def value(v: Any) -> str:  # moto keeps a record's values as strings or as {"Value": …}
            return (v.get("Value", "") if isinstance(v, dict) else str(v)).rstrip(".").lower()

        records = {(r.name.rstrip(".").lower(), (r.type or "").upper(), tuple(value(v) for v in r.records))
                   for z in zones for r in z.rrsets}
        options = bundle.describe()["Certificate"].get("DomainValidationOptions") or []
        for o in options:
            rr = o["ResourceRecord"]
            want = (rr["Name"].rstrip(".").lower(), rr["Type"], (rr["Value"].rstrip(".").lower(),))
            if want not in records:
                return False
        return bool(options)

    def check(self: Any) -> None:
        if self.type == "AMAZON_ISSUED" and self.status == "PENDING_VALIDATION":
            age = (utcnow() - self.created_at).total_seconds()
            if age >= wait and validated(self):
                self.status = "ISSUED"
            return
        orig_check(self)

    acm_models.CertBundle.check = check

    orig_delete = acm_models.AWSCertificateManagerBackend.delete_certificate

    def delete_certificate(self: Any, arn: str) -> None:
        from moto.elbv2.models import elbv2_backends
        backend = elbv2_backends[self.account_id][self.region_name]
        for lb in backend.load_balancers.values():
            for listener in lb.listeners.values():
                if arn == listener.certificate or arn in (listener.certificates or []):
                    raise JsonRESTError("ResourceInUseException",
                                        f"Certificate {arn} is in use by {lb.arn}")
        orig_delete(self, arn)

    acm_models.AWSCertificateManagerBackend.delete_certificate = delete_certificate

    orig_import = acm_models.AWSCertificateManagerBackend.import_certificate

    def import_certificate(self: Any, certificate: bytes, private_key: bytes, chain: bytes | None, arn: str | None,
                           tags: list[dict[str, str]]) -> str:
        if arn is None or arn not in self._certificates:
            return orig_import(self, certificate, private_key, chain, arn, tags)
        if tags:
            raise AWSValidationException("Tags cannot be applied when reimporting a certificate")
        kept = dict(self._certificates[arn].tags)
        out = orig_import(self, certificate, private_key, chain, arn, tags)
        self._certificates[arn].tags.update(kept)
        return out

    acm_models.AWSCertificateManagerBackend.import_certificate = import_certificate
