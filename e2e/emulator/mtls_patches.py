"""awsemu patches for ELBv2 mutual TLS, which moto 5.2.5 lacks entirely (no trust store API; CreateListener and
ModifyListener drop MutualAuthentication, DescribeListeners never reports it). Behaviour follows the ELBv2 API
reference (CreateTrustStore, DescribeTrustStores, DeleteTrustStore, MutualAuthenticationAttributes); what is ours:

  * CreateTrustStore reads the CA bundle from moto's S3 (CaCertificatesBundleS3Bucket/Key): a missing object is
    CaCertificatesBundleNotFound, a bundle without a PEM certificate InvalidCaCertificatesBundle, a name in use
    DuplicateTrustStoreName. The trust store is ACTIVE at once (AWS: CREATING for a moment). Revocations are not
    modelled.
  * DescribeTrustStores filters by Names or TrustStoreArns; one unknown name or ARN fails the call with
    TrustStoreNotFound, as AWS does. DeleteTrustStore of a store a listener uses is TrustStoreInUse.
  * CreateListener/ModifyListener take MutualAuthentication on HTTPS listeners only (another protocol with a mode
    other than off is InvalidConfigurationRequest); Mode is off, passthrough or verify (else ValidationError);
    verify needs TrustStoreArn of an existing store (TrustStoreNotFound), the other modes take neither
    TrustStoreArn, IgnoreClientCertificateExpiry nor AdvertiseTrustStoreCaNames (ValidationError). ModifyListener
    without MutualAuthentication keeps the listener's; a switch away from HTTPS drops it.
  * DescribeListeners/CreateListener/ModifyListener report MutualAuthentication on every HTTPS listener: Mode off
    when never set; for verify also IgnoreClientCertificateExpiry (default false), AdvertiseTrustStoreCaNames
    (default off) and TrustStoreAssociationStatus active.
"""

from __future__ import annotations

import re
from typing import Any

MODES = ("off", "passthrough", "verify")
_PEM_CERT = re.compile(rb"-----BEGIN CERTIFICATE-----")


def _truthy(v: Any) -> bool:
    return v is True or str(v).lower() == "true"


def install() -> None:
    from moto.core.responses import ActionResult, EmptyResult
    from moto.elbv2 import exceptions as x
    from moto.elbv2 import models as m
    from moto.elbv2 import responses as r

    def stores(backend: Any) -> dict[str, dict[str, Any]]:
        if not hasattr(backend, "trust_stores"):
            backend.trust_stores = {}
        return backend.trust_stores

    def not_found() -> Exception:
        return x.ELBClientError("TrustStoreNotFound", "One or more trust stores not found")

    def bundle(backend: Any, bucket: str | None, key: str | None) -> bytes:
        from moto.s3.models import s3_backends
        try:
            obj = s3_backends[backend.account_id]["aws"].get_object(bucket, key)
        except Exception:  # noqa: BLE001 (moto raises its own MissingBucket/MissingKey)
            obj = None
        if obj is None:
            raise x.ELBClientError("CaCertificatesBundleNotFound",
                                   f"The CA certificates bundle s3://{bucket}/{key} was not found")
        return bytes(obj.value)

    def create_trust_store(self: Any) -> Any:
        backend = self.elbv2_backend
        name = self._get_param("Name")
        if any(s["Name"] == name for s in stores(backend).values()):
            raise x.ELBClientError("DuplicateTrustStoreName", f"A trust store with the name '{name}' already exists")
        pem = bundle(backend, self._get_param("CaCertificatesBundleS3Bucket"), self._get_param("CaCertificatesBundleS3Key"))
        count = len(_PEM_CERT.findall(pem))
        if count == 0:
            raise x.ELBClientError("InvalidCaCertificatesBundle", "The CA certificates bundle has no certificate")
        arn = (f"arn:aws:elasticloadbalancing:{backend.region_name}:{backend.account_id}:truststore/{name}/"
               f"{len(stores(backend)) + 1:016x}")
        store = {"Name": name, "TrustStoreArn": arn, "Status": "ACTIVE", "NumberOfCaCertificates": count,
                 "TotalRevokedEntries": 0}
        stores(backend)[arn] = store
        return ActionResult({"TrustStores": [store]})

    def describe_trust_stores(self: Any) -> Any:
        everything = list(stores(self.elbv2_backend).values())
        names = self._get_param("Names", [])
        arns = self._get_param("TrustStoreArns", [])
        found = everything
        if names:
            found = [s for s in everything if s["Name"] in names]
            if len(found) != len(set(names)):
                raise not_found()
        if arns:
            found = [s for s in found if s["TrustStoreArn"] in arns]
            if len(found) != len(set(arns)):
                raise not_found()
        return ActionResult({"TrustStores": found})

    def delete_trust_store(self: Any) -> Any:
        backend = self.elbv2_backend
        arn = self._get_param("TrustStoreArn")
        if arn not in stores(backend):
            raise not_found()
        for lb in backend.load_balancers.values():
            for listener in lb.listeners.values():
                ma = getattr(listener, "mutual_authentication", None) or {}
                if ma.get("TrustStoreArn") == arn:
                    raise x.ELBClientError("TrustStoreInUse", f"Trust store '{arn}' is in use by {listener.arn}")
        del stores(backend)[arn]
        return EmptyResult()

    r.ELBV2Response.create_trust_store = create_trust_store
    r.ELBV2Response.describe_trust_stores = describe_trust_stores
    r.ELBV2Response.delete_trust_store = delete_trust_store

    def checked(backend: Any, protocol: str, ma: dict[str, Any]) -> dict[str, Any]:
        """The stored MutualAuthentication for a request's, or the error AWS answers."""
        mode = ma.get("Mode", "off")
        if mode not in MODES:
            raise x.ELBClientError("ValidationError", f"Mutual authentication mode '{mode}' is not valid")
        if protocol != "HTTPS" and mode != "off":
            raise x.ELBClientError("InvalidConfigurationRequest",
                                   f"Mutual authentication is not supported for {protocol} listeners")
        verify_only = ("TrustStoreArn", "IgnoreClientCertificateExpiry", "AdvertiseTrustStoreCaNames")
        if mode != "verify":
            given = [k for k in verify_only if ma.get(k) not in (None, "")]
            if given:
                raise x.ELBClientError("ValidationError", f"{', '.join(given)} can only be set in verify mode")
            return {"Mode": mode}
        arn = ma.get("TrustStoreArn")
        if not arn:
            raise x.ELBClientError("ValidationError", "A trust store is required in verify mode")
        if arn not in stores(backend):
            raise x.ELBClientError("TrustStoreNotFound", f"Trust store '{arn}' not found")
        advertise = ma.get("AdvertiseTrustStoreCaNames") or "off"
        if advertise not in ("on", "off"):
            raise x.ELBClientError("ValidationError", f"AdvertiseTrustStoreCaNames '{advertise}' is not valid")
        return {"Mode": "verify", "TrustStoreArn": arn,
                "IgnoreClientCertificateExpiry": _truthy(ma.get("IgnoreClientCertificateExpiry", False)),
                "TrustStoreAssociationStatus": "active", "AdvertiseTrustStoreCaNames": advertise}

    def listener_on(backend: Any, lb_arn: str, port: Any) -> Any:
        lb = backend.load_balancers.get(lb_arn)
        return next((l for l in lb.listeners.values() if str(l.port) == str(port)), None) if lb else None

    orig_create = r.ELBV2Response.create_listener

    def create_listener(self: Any) -> Any:
        params = self._get_params()
        protocol = (params.get("Protocol") or "").upper()
        wanted = params.get("MutualAuthentication")
        stored = checked(self.elbv2_backend, protocol, wanted) if wanted else None
        result = orig_create(self)
        listener = listener_on(self.elbv2_backend, params.get("LoadBalancerArn"), params.get("Port"))
        if listener is not None:
            listener.mutual_authentication = stored
        return result

    orig_modify = r.ELBV2Response.modify_listener

    def modify_listener(self: Any) -> Any:
        params = self._get_params()
        backend = self.elbv2_backend
        listener = backend.describe_listeners(None, [params.get("ListenerArn")])[0]
        protocol = (params.get("Protocol") or listener.protocol).upper()
        wanted = params.get("MutualAuthentication")
        stored = checked(backend, protocol, wanted) if wanted else getattr(listener, "mutual_authentication", None)
        result = orig_modify(self)
        listener.mutual_authentication = stored if listener.protocol == "HTTPS" else None
        return result

    r.ELBV2Response.create_listener = create_listener
    r.ELBV2Response.modify_listener = modify_listener

    # What DescribeListeners (and the Create/Modify answers) serialize: HTTPS listeners always carry it.
    def mutual_authentication(self: Any) -> dict[str, Any] | None:
        if self.protocol != "HTTPS":
            return None
        return self.__dict__.get("_mutual_authentication") or {"Mode": "off"}

    def set_mutual_authentication(self: Any, value: dict[str, Any] | None) -> None:
        self.__dict__["_mutual_authentication"] = value

    m.FakeListener.mutual_authentication = property(mutual_authentication, set_mutual_authentication)
