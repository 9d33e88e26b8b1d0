"""The webhook certificate in the chart, mode by mode (docs/webhooks.md):

    $HOME/.cache/aws-lb-controller/venv/bin/python -m pytest charts/tests/test_webhook_certs.py

- `helm template` twice with the same values gives the same bytes, in every mode (ArgoCD renders with
  `helm template`: nothing may be generated or looked up at render time);
- controller-managed (default): an empty Secret, no caBundle, the controller's flags naming that Secret, the
  Service's names and both configurations, and RBAC for exactly those objects;
- webhookTLS: the Secret and caBundle from the values; cert-manager: selfSigned Issuer -> root CA Certificate
  -> CA Issuer -> serving Certificate, caBundle injected from the root (or from the serving certificate with
  certManager.issuerRef);
- against the e2e API server: the controller, running under the chart's ServiceAccount and RBAC with the
  chart's certificate flags, fills the Secret and both caBundles and rolls a CA in, with nothing forbidden;
  `kubectl auth can-i` shows the rules are not broader.
"""

import base64
import json
import secrets
import subprocess
import urllib.request
from pathlib import Path

import pytest
import yaml

from test_chart import (BASE_VALUES, CHART, KUBE_VERSION, by_kind, controller_bin, deep_merge, e2e,  # noqa: F401
                        eventually, free_port, helm, kubectl, one, render, run)

FULL = "lbc-aws-lb-controller"  # fullname of release `lbc`
CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIBCA==\n-----END CERTIFICATE-----\n"
MODES = {
    "controller": {},
    "files": {"webhookTLS": {"caCert": CA_PEM, "cert": "cert-pem", "key": "key-pem"}},
    "cert-manager": {"enableCertManager": True, "certManager": {"rootCert": {"duration": "26280h"}}},
    "cert-manager-issuer": {"enableCertManager": True,
                            "certManager": {"issuerRef": {"kind": "ClusterIssuer", "name": "corp-ca"}}},
}
CONFIG_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def template_text(helm, tmp_path, values):
    f = tmp_path / f"values-{secrets.token_hex(3)}.yaml"
    f.write_text(yaml.safe_dump(deep_merge(BASE_VALUES, values)))
    return run([helm, "template", "lbc", CHART, "--kube-version", KUBE_VERSION, "-n", "kube-system",
                "--include-crds", "-f", f]).stdout


def hooks(docs):
    return [w for d in docs if d["kind"] in CONFIG_KINDS for w in d["webhooks"]]


def container(docs):
    return one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]


def cert_flags(args):
    prefixes = ("--webhook-cert", "--mutating-webhook-configuration", "--validating-webhook-configuration")
    return [a for a in args if a.startswith(prefixes)]


def rules_of(role):
    return [{k: r[k] for k in ("apiGroups", "resources", "resourceNames", "verbs") if k in r} for r in role["rules"]]


# ---------------------------------------------------------------------------------------------
# rendering


@pytest.mark.parametrize("mode", MODES)
def test_template_twice_is_identical(helm, tmp_path, mode):
    first = template_text(helm, tmp_path, MODES[mode])
    assert first == template_text(helm, tmp_path, MODES[mode]), f"{mode}: two renders of the same values differ"
    assert "lookup" not in (CHART / "templates/webhook.yaml").read_text()


def test_albc_values_file_renders_identically(helm, tmp_path):
    values = yaml.safe_load((Path(__file__).with_name("albc-values.yaml")).read_text())
    values = deep_merge(values, {"image": {"repository": "harbor.example/aws-lb-controller", "tag": "1"}})
    assert template_text(helm, tmp_path, values) == template_text(helm, tmp_path, values)


def test_controller_mode_renders_no_certificate_material(helm, tmp_path):
    docs = render(helm, tmp_path, {})
    (secret,) = by_kind(docs, "Secret")
    assert secret["metadata"]["name"] == f"{FULL}-webhook-tls" and secret["type"] == "Opaque"
    assert not {"data", "stringData"} & set(secret), "the controller fills the Secret, the chart renders it empty"
    assert all("caBundle" not in w["clientConfig"] for w in hooks(docs)), "caBundle is set in the cluster"
    assert all("annotations" not in d["metadata"] for d in docs if d["kind"] in CONFIG_KINDS)
    assert not [d for d in docs if d["apiVersion"].startswith("cert-manager.io/")]

    c = container(docs)
    svc = f"{FULL}-webhook"
    assert svc in {d["metadata"]["name"] for d in by_kind(docs, "Service")}
    names = [svc, f"{svc}.kube-system", f"{svc}.kube-system.svc", f"{svc}.kube-system.svc.cluster.local"]
    configs = {d["metadata"]["name"] for d in docs if d["kind"] in CONFIG_KINDS}
    assert configs == {f"{FULL}-webhook"}
    assert cert_flags(c["args"]) == [
        "--webhook-cert-mode=controller", f"--webhook-cert-secret={FULL}-webhook-tls",
        "--webhook-cert-secret-namespace=kube-system", f"--webhook-cert-dns-names={','.join(names)}",
        f"--mutating-webhook-configuration={FULL}-webhook", f"--validating-webhook-configuration={FULL}-webhook"]
    assert "webhook-cert" not in {m["name"] for m in c.get("volumeMounts", [])}
    assert not [v for v in one(docs, "Deployment")["spec"]["template"]["spec"].get("volumes", [])
                if v["name"] == "webhook-cert"]

    # RBAC: the Secret by name (no create: the chart renders it), the two configurations by name.
    role = next(d for d in by_kind(docs, "Role") if d["metadata"]["name"] == f"{FULL}-webhook-cert")
    assert rules_of(role) == [{"apiGroups": [""], "resources": ["secrets"],
                               "resourceNames": [f"{FULL}-webhook-tls"], "verbs": ["list", "watch", "update"]}]
    binding = next(d for d in by_kind(docs, "RoleBinding") if d["metadata"]["name"] == f"{FULL}-webhook-cert")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": FULL, "namespace": "kube-system"}]
    cluster = [r for r in rules_of(one(docs, "ClusterRole")) if r["apiGroups"] == ["admissionregistration.k8s.io"]]
    assert cluster == [{"apiGroups": ["admissionregistration.k8s.io"],
                        "resources": ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
                        "resourceNames": [f"{FULL}-webhook"], "verbs": ["list", "watch", "patch"]}]
    creates = [r for d in by_kind(docs, "Role") + by_kind(docs, "ClusterRole") for r in d["rules"]
               if "secrets" in r["resources"] and "create" in r["verbs"]]
    assert not creates, "no Secret create for the controller"


def test_files_mode_renders_the_given_certificate(helm, tmp_path):
    docs = render(helm, tmp_path, MODES["files"])
    secret = one(docs, "Secret")
    assert secret["metadata"]["name"] == f"{FULL}-tls" and secret["type"] == "kubernetes.io/tls"
    b64 = {k: base64.b64encode(v.encode()).decode() for k, v in
           (("ca.crt", CA_PEM), ("tls.crt", "cert-pem"), ("tls.key", "key-pem"))}
    assert secret["data"] == b64
    assert {w["clientConfig"].get("caBundle") for w in hooks(docs)} == {b64["ca.crt"]}
    c = container(docs)
    assert cert_flags(c["args"]) == ["--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs"]
    vols = {v["name"]: v for v in one(docs, "Deployment")["spec"]["template"]["spec"]["volumes"]}
    assert vols["webhook-cert"]["secret"]["secretName"] == f"{FULL}-tls"
    assert not [d for d in by_kind(docs, "Role") if d["metadata"]["name"].endswith("-webhook-cert")]
    assert not [r for r in one(docs, "ClusterRole")["rules"] if "admissionregistration.k8s.io" in r["apiGroups"]]


def test_cert_manager_signs_the_serving_certificate_with_a_root_ca(helm, tmp_path):
    docs = render(helm, tmp_path, MODES["cert-manager"])
    issuers = {d["metadata"]["name"]: d["spec"] for d in by_kind(docs, "Issuer")}
    certs = {d["metadata"]["name"]: d["spec"] for d in by_kind(docs, "Certificate")}
    root, serving = certs[f"{FULL}-root-ca"], certs[f"{FULL}-serving-cert"]
    assert issuers[root["issuerRef"]["name"]] == {"selfSigned": {}}, "the root is self-signed"
    assert root["isCA"] is True and root["duration"] == "26280h"
    ca_issuer = issuers[serving["issuerRef"]["name"]]
    assert ca_issuer == {"ca": {"secretName": root["secretName"]}}, "the serving certificate comes from the root"
    assert serving["secretName"] == f"{FULL}-tls" and "isCA" not in serving
    assert serving["dnsNames"][-1] == f"{FULL}-webhook.kube-system.svc.cluster.local"
    # The caBundle is the root (renewals of the serving certificate do not change it).
    for d in docs:
        if d["kind"] in CONFIG_KINDS:
            assert d["metadata"]["annotations"] == {"cert-manager.io/inject-ca-from": f"kube-system/{FULL}-root-ca"}
    assert all("caBundle" not in w["clientConfig"] for w in hooks(docs))
    assert not by_kind(docs, "Secret"), "cert-manager writes the Secrets"
    assert cert_flags(container(docs)["args"]) == ["--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs"]

    docs = render(helm, tmp_path, MODES["cert-manager-issuer"])
    assert not by_kind(docs, "Issuer")
    (serving,) = by_kind(docs, "Certificate")
    assert serving["spec"]["issuerRef"] == {"kind": "ClusterIssuer", "name": "corp-ca"}
    for d in docs:
        if d["kind"] in CONFIG_KINDS:
            assert d["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == f"kube-system/{FULL}-serving-cert"


@pytest.mark.parametrize("mode", MODES)
def test_keep_tls_secret_changes_nothing(helm, tmp_path, mode):
    texts = {template_text(helm, tmp_path, deep_merge(MODES[mode], {"keepTLSSecret": keep})) for keep in (True, False)}
    assert len(texts) == 1


@pytest.mark.parametrize("overrides, message", [
    ({"webhookTLS": {"cert": "x"}}, "webhookTLS: set caCert, cert and key together"),
    (deep_merge(MODES["files"], {"enableCertManager": True}), "webhookTLS and enableCertManager are both set"),
])
def test_conflicting_certificate_values_fail_with_a_message(helm, tmp_path, overrides, message):
    p = render(helm, tmp_path, overrides, check=False)
    assert p.returncode != 0 and message in p.stderr, p.stderr


# ---------------------------------------------------------------------------------------------
# the controller under the chart's RBAC, against the e2e API server


def test_controller_mode_under_the_chart_rbac(helm, tmp_path, e2e, controller_bin):
    suffix = secrets.token_hex(3)
    ns, release = f"lbc-certs-{suffix}", f"certs-{suffix}"
    values = {"clusterName": e2e["LBC_CLUSTER_NAME"], "vpcId": e2e["LBC_VPC_ID"]}
    docs = render(helm, tmp_path, values, release=release, namespace=ns)
    full = f"{release}-aws-lb-controller"
    kinds = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Secret") + CONFIG_KINDS
    objects = [d for d in docs if d["kind"] in kinds]
    # The configurations keep their names (what RBAC names) but never send a request: nothing matches.
    for d in objects:
        if d["kind"] in CONFIG_KINDS:
            for w in d["webhooks"]:
                w["failurePolicy"] = "Ignore"
                w["namespaceSelector"] = {"matchLabels": {"lbc-chart-test/never": ns}}
    cluster_scoped = [(d["kind"], d["metadata"]["name"]) for d in objects if "namespace" not in d["metadata"]]
    proc, log = None, tmp_path / "controller.log"
    try:
        kubectl(e2e, "create", "namespace", ns)
        kubectl(e2e, "apply", "-f", "-", input=yaml.safe_dump_all(objects))
        token = kubectl(e2e, "create", "token", full, "-n", ns, "--duration=1h").stdout.strip()
        kubeconfig = tmp_path / "sa.kubeconfig"
        kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "sa",
            "clusters": [{"name": "e2e", "cluster": {"server": e2e["LBC_KUBE_SERVER"],
                                                     "certificate-authority": e2e["LBC_KUBE_CA_FILE"]}}],
            "users": [{"name": "sa", "user": {"token": token}}],
            "contexts": [{"name": "sa", "context": {"cluster": "e2e", "user": "sa", "namespace": ns}}]}))

        # The Deployment's own flags, ports moved to free local ones.
        local = ("--metrics-bind-addr=", "--health-probe-bind-addr=", "--webhook-bind-port=")
        args = [a for a in container(docs)["args"] if not a.startswith(local)]
        assert [a for a in args if a.startswith("--webhook-cert-mode")] == ["--webhook-cert-mode=controller"]
        health, endpoint = free_port(), e2e["LBC_AWS_ENDPOINT"]
        with open(log, "w") as out:
            proc = subprocess.Popen([
                controller_bin, *args, f"--kubeconfig={kubeconfig}", f"--watch-namespace={ns}",
                f"--metrics-bind-addr=127.0.0.1:{free_port()}", f"--health-probe-bind-addr=127.0.0.1:{health}",
                "--webhook-bind-host=127.0.0.1", f"--webhook-bind-port={free_port()}",
                f"--aws-api-endpoints=Elastic Load Balancing v2={endpoint},EC2={endpoint},ACM={endpoint},WAFV2={endpoint}",
            ], env=e2e, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

        def alive():
            assert proc.poll() is None, f"controller exited {proc.returncode}:\n{log.read_text()[-3000:]}"
            return True

        def secret_data():
            s = json.loads(kubectl(e2e, "get", "secret", f"{full}-webhook-tls", "-n", ns, "-o", "json").stdout)
            return {k: base64.b64decode(v) for k, v in (s.get("data") or {}).items()}

        def bundles():
            out = []
            for kind in CONFIG_KINDS:
                d = json.loads(kubectl(e2e, "get", kind, f"{full}-webhook", "-o", "json").stdout)
                out += [base64.b64decode(w["clientConfig"].get("caBundle", "")) for w in d["webhooks"]]
            return out

        data = eventually("the leader fills the Secret", 60, lambda: alive() and secret_data())
        assert set(data) == {"ca.crt", "ca.key", "tls.crt", "tls.key"}
        eventually("caBundle set in every webhook", 30, lambda: alive() and set(bundles()) == {data["ca.crt"]})
        eventually("ready: serving the Secret's pair", 30, lambda: alive() and urllib.request.urlopen(
            f"http://127.0.0.1:{health}/readyz", timeout=5).status == 200)
        # A CA rotation asked for: the new CA is written (update) and patched in beside the old one (patch).
        kubectl(e2e, "annotate", "secret", f"{full}-webhook-tls", "-n", ns, "elbv2.k8s.aws/webhook-cert-rotate=ca")
        two = eventually("a second CA in the Secret", 30, lambda: alive() and (
            lambda ca: ca if ca.count(b"BEGIN CERTIFICATE") == 2 else None)(secret_data()["ca.crt"]))
        eventually("both CAs in every caBundle", 30, lambda: alive() and set(bundles()) == {two})
        text = log.read_text()
        assert "forbidden" not in text.lower() and " 403" not in text, "an API call was forbidden:\n" + text[-3000:]

        def can_i(verb, resource, namespace=ns):
            where = ["-n", namespace] if namespace else []
            return kubectl(e2e, "--kubeconfig", kubeconfig, "auth", "can-i", verb, resource, *where,
                           check=False).stdout.strip() == "yes"

        mwc, vwc = "mutatingwebhookconfigurations", "validatingwebhookconfigurations"
        allowed = [("update", f"secrets/{full}-webhook-tls"), ("watch", f"secrets/{full}-webhook-tls"),
                   ("list", f"secrets/{full}-webhook-tls"), ("patch", f"{mwc}/{full}-webhook"),
                   ("patch", f"{vwc}/{full}-webhook"), ("watch", f"{vwc}/{full}-webhook")]
        denied = [("create", "secrets"), ("get", f"secrets/{full}-webhook-tls"), ("delete", f"secrets/{full}-webhook-tls"),
                  ("update", "secrets/other"), ("list", "secrets"), ("patch", f"{mwc}/other"), ("patch", mwc),
                  ("update", f"{mwc}/{full}-webhook"), ("delete", f"{vwc}/{full}-webhook"), ("create", vwc)]
        wrong = [f"{c} should be allowed" for c in allowed if not can_i(*c)]
        wrong += [f"{c} should be denied" for c in denied if can_i(*c)]
        wrong += ["update secrets in default should be denied"] if can_i("update", f"secrets/{full}-webhook-tls",
                                                                          "default") else []
        assert not wrong, "\n".join(wrong)
    finally:
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait()
        kubectl(e2e, "delete", "namespace", ns, "--wait=false", check=False)
        for kind, name in cluster_scoped:
            kubectl(e2e, "delete", kind, name, "--ignore-not-found", check=False)
