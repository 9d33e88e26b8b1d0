"""awsemu patches for ACM's ListCertificates, which certificate discovery reads:

  * each summary carries `SubjectAlternativeNameSummaries` (the first 100 names) and
    `HasAdditionalSubjectAlternativeNames`, as in AWS (moto 5.2.5 sent neither, so a client had to
    DescribeCertificate every certificate);
  * `MaxItems` / `NextToken` paginate (moto returned everything at once and no token).

Everything else (filters on status and key type, ISSUED vs PENDING_VALIDATION) is moto's: an imported certificate
is ISSUED at once; a requested one stays PENDING_VALIDATION for MOTO_ACM_VALIDATION_WAIT seconds (default 60), then
reads ISSUED.
"""

from __future__ import annotations

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
