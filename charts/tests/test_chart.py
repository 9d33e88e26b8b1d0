"""Tests of the Helm chart, the Grafana dashboard and the alerts (docs/iam-policy.json: test_iam_policy.py).

    $HOME/.cache/aws-lb-controller/venv/bin/python -m pytest charts/tests

- helm (pinned, built from the Go module proxy by charts/scripts/helm.sh): lint and template over
  a matrix of values;
- against the e2e environment (e2e/up): server-side dry-run of every rendered manifest, then the
  real controller binary run under the chart's ServiceAccount and RBAC (a TokenRequest token),
  which must reconcile bindings with no `forbidden`; `kubectl auth can-i` shows the role is not
  broader; every metric the dashboard and the alerts query is in that controller's /metrics.

Without e2e/.run/env (or $LBC_E2E_ENV) the apiserver tests are skipped, unless LBC_E2E_REQUIRED=1
(CI): then they fail. The controller is built with cargo, or taken from $LBC_CONTROLLER_BIN.
"""

import json
import os
import re
import secrets
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts/aws-lb-controller"
KUBE_VERSION = os.environ.get("LBC_KUBE_VERSION", "1.34.0")  # the e2e apiserver's version
BASE_VALUES = {"clusterName": "e2e-cluster", "region": "us-east-1", "vpcId": "vpc-0123456789abcdef0"}

MATRIX = {
    "defaults": {},
    "cert-manager": {"enableCertManager": True},
    "cert-manager-issuer": {"enableCertManager": True,
                            "certManager": {"issuerRef": {"kind": "ClusterIssuer", "name": "corp-ca"}}},
    "no-service-mutator": {"enableServiceMutatorWebhook": False},
    "given-backend-sg": {"backendSecurityGroup": "sg-0123456789abcdef0"},
    "no-backend-sg": {"enableBackendSecurityGroup": False},
    "ingress-defaults": {"defaultSSLPolicy": "ELBSecurityPolicy-TLS13-1-2-2021-06", "defaultTargetType": "ip"},
    "credentials-secret": {"awsCredentials": {"source": "secret", "secretName": "aws-creds",
                                              "sessionTokenKey": "aws_session_token"}},
    "credentials-file": {"awsCredentials": {"source": "file", "secretName": "aws-creds-file", "profile": "lbc"}},
    "credentials-vault": {"awsCredentials": {"source": "vault", "vault": {
        "address": "https://vault.example:8200", "authRole": "aws-load-balancer-controller", "secretsRole": "lbc",
        "roleArn": "arn:aws:iam::123456789012:role/lbc", "caBundleConfigMap": "vault-ca"}}},
    "monitoring": {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}},
    "tracing": {"tracing": {"otlpEndpoint": "http://tempo.monitoring:4318", "serviceName": "lbc-prod",
                            "samplingRatio": 0.25}},
    "ingress-class": {"ingressClass": "alb-internal", "ingressClassConfig": {"default": True},
                      "ingressClassParams": {"name": "internal", "spec": {
                          "scheme": "internal", "namespaceSelector": {"matchLabels": {"team": "a"}}}},
                      "disableIngressClassAnnotation": True, "disableIngressGroupNameAnnotation": True},
    "no-ingress-class": {"createIngressClassResource": False, "ingressClassParams": {"create": False}},
    "custom": {"replicaCount": 1, "priorityClassName": "system-cluster-critical", "watchNamespace": "apps",
               "extraArgs": {"sync-period": "5m"}, "env": {"RUST_BACKTRACE": "1"},
               "nodeSelector": {"node-role.kubernetes.io/control-plane": "true"},
               "tolerations": [{"key": "node.cloudprovider.kubernetes.io/uninitialized", "operator": "Exists",
                                "effect": "NoSchedule"}],
               "podMutatorWebhookConfig": {"objectSelector": {"matchLabels": {"lbc-gates": "on"}}},
               "serviceAccount": {"annotations": {"example.com/owner": "platform"}}},
}

# Kinds whose CRDs the e2e apiserver does not have (Prometheus Operator, cert-manager): left out of
# the server dry-run; their fields are checked in test_template instead.
NO_CRD_GROUPS = ("monitoring.coreos.com/", "cert-manager.io/")

# Metrics the dashboard queries although the controller does not export them yet. Each entry must
# say why; test_queried_metrics_exist fails once an entry is exported (then remove it here).
PENDING_METRICS: set[str] = set()


# ---------------------------------------------------------------------------------------------
# helpers


def run(cmd, env=None, input=None, check=True, timeout=300):
    p = subprocess.run([str(c) for c in cmd], env=env, input=input, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def deep_merge(a, b):
    out = dict(a)
    for k, v in b.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


@pytest.fixture(scope="session")
def helm():
    return run([REPO / "charts/scripts/helm.sh"], timeout=1800).stdout.strip()


def render(helm, tmp_path, overrides, release="lbc", namespace="kube-system", check=True, tests=False):
    """The chart's manifests; with tests=True also its `helm test` hooks (templates/tests/)."""
    values = tmp_path / f"values-{secrets.token_hex(3)}.yaml"
    values.write_text(yaml.safe_dump(deep_merge(BASE_VALUES, overrides)))
    p = run([helm, "template", release, CHART, "--kube-version", KUBE_VERSION, "-n", namespace,
             "--include-crds", "-f", values] + ([] if tests else ["--skip-tests"]), check=check)
    if not check:
        return p
    return [d for d in yaml.safe_load_all(p.stdout) if d]


def by_kind(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def one(docs, kind):
    found = by_kind(docs, kind)
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


def emulator(e2e, path, body):
    req = urllib.request.Request(f"{e2e['LBC_AWS_ENDPOINT']}/_awsemu/{path}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req, timeout=10).read())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def eventually(what, timeout, probe, every=1.0):
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        try:
            last = probe()
            if last:
                return last
        except Exception as e:  # noqa: BLE001 - report the last error on timeout
            last = e
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")


# ---------------------------------------------------------------------------------------------
# helm lint / template


@pytest.mark.parametrize("case", MATRIX)
def test_lint(helm, tmp_path, case):
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(deep_merge(BASE_VALUES, MATRIX[case])))
    run([helm, "lint", "--strict", "--kube-version", KUBE_VERSION, CHART, "-f", values])


def webhook_names(docs):
    return {w["name"] for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
            for d in by_kind(docs, kind) for w in d["webhooks"]}


@pytest.mark.parametrize("case", MATRIX)
def test_template(helm, tmp_path, case):
    docs = render(helm, tmp_path, MATRIX[case])
    dep = one(docs, "Deployment")
    pod = dep["spec"]["template"]["spec"]
    c = pod["containers"][0]
    args, env = c["args"], {e["name"]: e for e in c.get("env", [])}

    # Always: identity, leader election, ports, probes, hardened pod, downward API.
    assert "--cluster-name=e2e-cluster" in args and "--aws-region=us-east-1" in args
    assert "--enable-leader-election=true" in args and "--leader-election-namespace=kube-system" in args
    assert {p["containerPort"] for p in c["ports"]} == {8080, 9443, 61779}
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz" and c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["securityContext"]["readOnlyRootFilesystem"] and pod["securityContext"]["runAsNonRoot"]
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    assert {d["metadata"]["name"] for d in by_kind(docs, "CustomResourceDefinition")} == {
        "albtargetcontrolconfigs.elbv2.k8s.aws", "ingressclassparams.elbv2.k8s.aws",
        "targetgroupbindings.elbv2.k8s.aws"}
    dash = one(docs, "ConfigMap")
    assert dash["metadata"]["labels"]["grafana_dashboard"] == "1"
    json.loads(dash["data"]["aws-lb-controller.json"])

    # Webhooks: pods Ignore + namespace opt-in; TGB mutate + validate; certificates.
    mut = one(docs, "MutatingWebhookConfiguration")
    hooks = {w["name"]: w for d in docs if d["kind"].endswith("WebhookConfiguration") for w in d["webhooks"]}
    mpod = hooks["mpod.elbv2.k8s.aws"]
    assert mpod["failurePolicy"] == "Ignore"
    assert mpod["namespaceSelector"]["matchExpressions"] == [
        {"key": "elbv2.k8s.aws/pod-readiness-gate-inject", "operator": "In", "values": ["enabled"]}]
    assert {"mtargetgroupbinding.elbv2.k8s.aws", "vtargetgroupbinding.elbv2.k8s.aws"} <= set(hooks)
    quic = hooks["quicid.elbv2.k8s.aws"]
    assert quic["failurePolicy"] == "Fail" and quic["clientConfig"]["service"]["path"] == "/mutate-v1-pod-server-id"
    assert quic["namespaceSelector"]["matchExpressions"] == [
        {"key": "elbv2.k8s.aws/quic-server-id-inject", "operator": "In", "values": ["enabled"]}]
    assert quic["objectSelector"] == mpod["objectSelector"], "the controller's own pods are never mutated"
    # The ALB target control agent: ALBC's two webhooks and selectors (the gate decides in the controller).
    by_ns, by_pod = hooks["alb-target-control.namespace.elbv2.k8s.aws"], hooks["alb-target-control.object.elbv2.k8s.aws"]
    assert by_ns["failurePolicy"] == by_pod["failurePolicy"] == "Fail"
    assert by_ns["clientConfig"]["service"]["path"] == "/mutate-alb-target-control-namespace-v1-pod"
    assert by_pod["clientConfig"]["service"]["path"] == "/mutate-alb-target-control-object-v1-pod"
    assert by_ns["namespaceSelector"]["matchExpressions"] == [
        {"key": "elbv2.k8s.aws/alb-target-control-agent-injection", "operator": "In", "values": ["enabled"]}]
    assert by_pod["namespaceSelector"]["matchExpressions"] == [
        {"key": "elbv2.k8s.aws/alb-target-control-agent-injection", "operator": "DoesNotExist"}]
    not_self = mpod["objectSelector"]["matchExpressions"][0]
    assert by_ns["objectSelector"]["matchExpressions"] == [{
        "key": "elbv2.k8s.aws/alb-target-control-agent-inject", "operator": "NotIn", "values": ["false"]}, not_self]
    assert by_pod["objectSelector"]["matchExpressions"] == [{
        "key": "elbv2.k8s.aws/alb-target-control-agent-inject", "operator": "In", "values": ["true"]}, not_self]
    assert by_ns["rules"][0]["operations"] == ["CREATE"]
    paths = {w["clientConfig"]["service"]["path"] for w in hooks.values()}
    assert {"/mutate-v1-pod", "/mutate-elbv2-k8s-aws-v1beta1-targetgroupbinding",
            "/validate-elbv2-k8s-aws-v1beta1-targetgroupbinding"} <= paths
    # Kubernetes >= 1.30: metadata-only TGB updates (finalizer) and non-LoadBalancer Services skip the webhook;
    # label changes still reach the validating one (stack labels of another namespace are refused).
    assert hooks["mtargetgroupbinding.elbv2.k8s.aws"]["matchConditions"][0]["name"] == "spec-changed"
    vtgb = hooks["vtargetgroupbinding.elbv2.k8s.aws"]["matchConditions"][0]
    assert vtgb["name"] == "spec-or-labels-changed" and "labels" in vtgb["expression"]
    if "mservice.elbv2.k8s.aws" in hooks:
        assert hooks["mservice.elbv2.k8s.aws"]["matchConditions"][0]["name"] == "load-balancer-only"
    # Certificates (modes in detail: test_webhook_certs.py): nothing generated at render time, so no caBundle.
    assert all("caBundle" not in w["clientConfig"] for w in hooks.values())
    cert_manager = MATRIX[case].get("enableCertManager", False)
    if cert_manager:
        issuer_ref = MATRIX[case]["certManager"]["issuerRef"] if "certManager" in MATRIX[case] else None
        inject = "serving-cert" if issuer_ref else "root-ca"
        assert mut["metadata"]["annotations"]["cert-manager.io/inject-ca-from"].endswith(f"-{inject}")
        assert len(by_kind(docs, "Issuer")) == (0 if issuer_ref else 2)
        assert len(by_kind(docs, "Certificate")) == (1 if issuer_ref else 2)
        assert not by_kind(docs, "Secret")
    else:
        # The controller fills its Secret: rendered empty.
        tls = one(docs, "Secret")
        assert tls["metadata"]["name"].endswith("-webhook-tls") and "data" not in tls
        assert "--webhook-cert-mode=controller" in args
        assert not by_kind(docs, "Certificate")

    # Ingress webhooks (ALBC's names, paths and Fail policy): only Ingresses that may be ours, only on
    # spec or annotation changes; the chart's own IngressClassParams is never sent to the webhook.
    ving, vicp = hooks["vingress.elbv2.k8s.aws"], hooks["vingressclassparams.elbv2.k8s.aws"]
    assert ving["clientConfig"]["service"]["path"] == "/validate-networking-v1-ingress"
    assert vicp["clientConfig"]["service"]["path"] == "/validate-elbv2-k8s-aws-v1beta1-ingressclassparams"
    for h, res in ((ving, "ingresses"), (vicp, "ingressclassparams")):
        assert h["failurePolicy"] == "Fail" and h["matchPolicy"] == "Equivalent"
        assert h["rules"][0]["resources"] == [res] and h["rules"][0]["operations"] == ["CREATE", "UPDATE"]
    assert [c["name"] for c in ving["matchConditions"]] == ["may-be-ours", "spec-or-annotations-changed"]
    ingress_class = MATRIX[case].get("ingressClass", "alb")
    assert f"== '{ingress_class}'" in ving["matchConditions"][0]["expression"]
    assert {"key": "app.kubernetes.io/name", "operator": "NotIn", "values": ["aws-lb-controller"]} in \
        vicp["objectSelector"]["matchExpressions"]
    assert f"--ingress-class={ingress_class}" in args
    # Booleans render only when set (null: the controller's default).
    for flag, value in (("disable-ingress-class-annotation", "disableIngressClassAnnotation"),
                        ("disable-ingress-group-name-annotation", "disableIngressGroupNameAnnotation"),
                        ("enable-backend-security-group", "enableBackendSecurityGroup")):
        want = [f"--{flag}={str(MATRIX[case][value]).lower()}"] if value in MATRIX[case] else []
        assert [a for a in args if a.startswith(f"--{flag}=")] == want
    classes, params = by_kind(docs, "IngressClass"), by_kind(docs, "IngressClassParams")
    if case == "no-ingress-class":
        assert not classes and not params
    else:
        (cls,), (icp,) = classes, params
        assert cls["metadata"]["name"] == ingress_class and cls["spec"]["controller"] == "ingress.k8s.aws/alb"
        want_params = MATRIX[case].get("ingressClassParams", {}).get("name") or ingress_class
        assert icp["metadata"]["name"] == want_params
        assert cls["spec"]["parameters"] == {"apiGroup": "elbv2.k8s.aws", "kind": "IngressClassParams",
                                             "name": want_params}
        assert icp["metadata"]["labels"]["app.kubernetes.io/name"] == "aws-lb-controller"
        assert icp["spec"] == MATRIX[case].get("ingressClassParams", {}).get("spec", {})
        default = cls["metadata"].get("annotations", {}).get("ingressclass.kubernetes.io/is-default-class")
        assert default == ("true" if case == "ingress-class" else None)

    # Case-specific values.
    assert ("mservice.elbv2.k8s.aws" in hooks) == MATRIX[case].get("enableServiceMutatorWebhook", True)
    creds = MATRIX[case].get("awsCredentials", {}).get("source", "default")
    if creds == "secret":
        assert env["AWS_ACCESS_KEY_ID"]["valueFrom"]["secretKeyRef"] == {"name": "aws-creds", "key": "aws_access_key_id"}
        assert env["AWS_SESSION_TOKEN"]["valueFrom"]["secretKeyRef"]["key"] == "aws_session_token"
    args = pod["containers"][0]["args"]
    vols = {v["name"]: v for v in pod["volumes"]}
    for value, flag in (("defaultSSLPolicy", "--default-ssl-policy"), ("defaultTargetType", "--default-target-type")):
        want = [f"{flag}={MATRIX[case][value]}"] if value in MATRIX[case] else []
        assert [a for a in args if a.startswith(f"{flag}=")] == want
    given = MATRIX[case].get("backendSecurityGroup")
    assert [a for a in args if a.startswith("--backend-security-group=")] == ([f"--backend-security-group={given}"] if given else [])
    if creds == "file":
        assert {"--aws-credentials-source=file", "--aws-credentials-file=/etc/aws-lb-controller/aws/credentials",
                "--aws-credentials-profile=lbc"} <= set(args)
        assert vols["aws-credentials"]["secret"]["secretName"] == "aws-creds-file"
    elif creds == "vault":
        assert {"--aws-credentials-source=vault", "--vault-address=https://vault.example:8200",
                "--vault-auth-role=aws-load-balancer-controller", "--vault-secrets-role=lbc",
                "--vault-token-path=/var/run/secrets/vault/token", "--vault-ttl=15m",
                "--vault-role-arn=arn:aws:iam::123456789012:role/lbc",
                "--vault-ca-bundle=/etc/aws-lb-controller/vault-ca/ca.crt"} <= set(args)
        token = vols["vault-token"]["projected"]["sources"][0]["serviceAccountToken"]
        assert token == {"path": "token", "audience": "vault", "expirationSeconds": 3600}
        assert vols["vault-ca"]["configMap"]["name"] == "vault-ca"
        assert "--vault-insecure-http=true" not in args, "plain HTTP to Vault only when asked for"
    if creds != "secret":
        assert not {"AWS_ACCESS_KEY_ID", "AWS_SHARED_CREDENTIALS_FILE"} & set(env)
    if creds not in ("file", "vault"):
        assert not any(a.startswith(("--aws-credentials-source", "--vault-")) for a in args)
    otlp = [a for a in args if a.startswith("--otlp-")]
    if case == "tracing":
        assert otlp == ["--otlp-endpoint=http://tempo.monitoring:4318", "--otlp-service-name=lbc-prod",
                        "--otlp-sampling-ratio=0.25"]
    else:
        assert otlp == [], "tracing is off unless tracing.otlpEndpoint is set"
    monitoring = case == "monitoring"
    assert len(by_kind(docs, "ServiceMonitor")) == len(by_kind(docs, "PrometheusRule")) == int(monitoring)
    if monitoring:
        alerts = {r["alert"] for g in one(docs, "PrometheusRule")["spec"]["groups"] for r in g["rules"]}
        assert alerts == {"AWSLBCReconcileErrorsRising", "AWSLBCThrottlingSustained", "AWSLBCLeaderAbsent",
                          "AWSLBCDeregisterAllRefused", "AWSLBCPodIPsOutsideVPC", "AWSLBCRegistrationLatencyHigh",
                          "AWSLBCCredentialsExpiring"}
        assert one(docs, "ServiceMonitor")["spec"]["endpoints"][0]["port"] == "metrics"
    if case == "custom":
        assert not by_kind(docs, "PodDisruptionBudget")  # one replica
        assert pod["priorityClassName"] == "system-cluster-critical"
        assert "--watch-namespace=apps" in args and "--sync-period=5m" in args
        assert env["RUST_BACKTRACE"]["value"] == "1" and pod["tolerations"][0]["operator"] == "Exists"
        assert mpod["objectSelector"]["matchLabels"] == {"lbc-gates": "on"}
        assert ving["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "apps"}}
    else:
        assert "namespaceSelector" not in ving
        assert one(docs, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1
        assert dep["spec"]["replicas"] == 2
        assert pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    # The controller's own pods and Services are never sent to its webhooks.
    assert {"key": "app.kubernetes.io/name", "operator": "NotIn", "values": ["aws-lb-controller"]} in \
        mpod["objectSelector"]["matchExpressions"]


# Exactly what the code calls (see the comments in templates/rbac.yaml). Adding a verb here means
# the code started calling it: say where in the template's comment.
EXPECTED_CLUSTER_RULES = {
    ("elbv2.k8s.aws", "targetgroupbindings"): {"list", "watch", "patch", "create", "delete"},
    ("elbv2.k8s.aws", "targetgroupbindings/status"): {"patch"},
    ("", "services"): {"list", "watch", "patch"},
    ("", "services/status"): {"patch"},
    ("", "pods"): {"list", "watch"},
    ("", "nodes"): {"list", "watch"},
    ("discovery.k8s.io", "endpointslices"): {"list", "watch"},
    ("networking.k8s.io", "ingresses"): {"list", "watch", "patch"},
    ("networking.k8s.io", "ingresses/status"): {"patch"},
    ("networking.k8s.io", "ingressclasses"): {"list", "watch"},
    ("elbv2.k8s.aws", "ingressclassparams"): {"list", "watch"},
    ("elbv2.k8s.aws", "albtargetcontrolconfigs"): {"list", "watch"},
    ("", "namespaces"): {"list", "watch"},
    ("", "pods/status"): {"patch"},
    ("", "configmaps"): {"get", "create", "update", "delete"},
    ("cilium.io", "ciliumnodes"): {"list", "watch"},
    ("events.k8s.io", "events"): {"create", "patch"},
    # The start-up check for Gateways of ALBC's classes left alone.
    ("gateway.networking.k8s.io", "gatewayclasses"): {"list"},
    ("gateway.networking.k8s.io", "gateways"): {"list"},
    # The controller-managed webhook certificate: caBundle of the chart's two configurations.
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", ("lbc-aws-lb-controller-webhook",)):
        {"list", "watch", "patch"},
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations", ("lbc-aws-lb-controller-webhook",)):
        {"list", "watch", "patch"},
}


GATEWAY_RULES = {
    ("gateway.networking.k8s.io", "gatewayclasses"): {"list", "watch"},
    ("gateway.networking.k8s.io", "gateways"): {"list", "watch", "patch"},
    ("gateway.networking.k8s.io", "httproutes"): {"list", "watch"},
    ("gateway.networking.k8s.io", "grpcroutes"): {"list", "watch"},
    ("gateway.networking.k8s.io", "referencegrants"): {"list", "watch"},
    ("gateway.networking.k8s.io", "gatewayclasses/status"): {"patch"},
    ("gateway.networking.k8s.io", "gateways/status"): {"patch"},
    ("gateway.networking.k8s.io", "httproutes/status"): {"patch"},
    ("gateway.networking.k8s.io", "grpcroutes/status"): {"patch"},
}


def rule_map(role):
    out = {}
    for r in role["rules"]:
        for g in r["apiGroups"]:
            for res in r["resources"]:
                key = (g, res) + ((tuple(r["resourceNames"]),) if r.get("resourceNames") else ())
                out.setdefault(key, set()).update(r["verbs"])
    return out


@pytest.mark.parametrize("gate", [True, "true"])
def test_gateway_rules_come_with_the_gate_only(helm, tmp_path, gate):
    on = render(helm, tmp_path, {"controllerConfig": {"featureGates": {"ALBGatewayAPI": gate}}})
    assert rule_map(one(on, "ClusterRole")) == {**EXPECTED_CLUSTER_RULES, **GATEWAY_RULES}
    dep = one(on, "Deployment")
    assert "--feature-gates=ALBGatewayAPI=true" in dep["spec"]["template"]["spec"]["containers"][0]["args"]
    off = render(helm, tmp_path, {"controllerConfig": {"featureGates": {"ALBGatewayAPI": False}}})
    assert rule_map(one(off, "ClusterRole")) == EXPECTED_CLUSTER_RULES


def test_rbac_rules_exact_and_commented(helm, tmp_path):
    docs = render(helm, tmp_path, {})
    assert rule_map(one(docs, "ClusterRole")) == EXPECTED_CLUSTER_RULES
    roles = {d["metadata"]["name"]: rule_map(d) for d in by_kind(docs, "Role")}
    assert roles == {
        "lbc-aws-lb-controller-leader-election": {
            ("coordination.k8s.io", "leases"): {"create"},
            ("coordination.k8s.io", "leases", ("aws-load-balancer-controller-leader",)): {"get", "update"}},
        # The controller-managed webhook certificate's Secret (rendered empty by the chart: no create).
        "lbc-aws-lb-controller-webhook-cert": {
            ("", "secrets", ("lbc-aws-lb-controller-webhook-tls",)): {"list", "watch", "update"}}}
    lines = (CHART / "templates/rbac.yaml").read_text().splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("- apiGroups:"):
            assert lines[i - 1].strip().startswith("#"), f"rbac.yaml:{i + 1}: rule without a comment saying why"


@pytest.mark.parametrize("overrides, message", [
    ({"clusterName": ""}, "clusterName is required"),
    ({"region": ""}, "region is required"),
    ({"vpcId": ""}, "vpcId is required (or vpcTags"),
    ({"vpcId": None, "vpcTags": {}}, "vpcId is required (or vpcTags"),
    ({"awsCredentials": {"source": "irsa"}}, "awsCredentials.source must be default, secret, file or vault"),
    ({"awsCredentials": {"source": "vault", "vault": {"address": "https://v:8200", "authRole": "a"}}},
     "awsCredentials.vault.secretsRole is required"),
    ({"awsCredentials": {"source": "secret"}}, "awsCredentials.secretName is required"),
    ({"webhookTLS": {"cert": "x"}}, "webhookTLS: set caCert, cert and key together"),
    ({"tracing": {"otlpEndpoint": "tempo:4318"}}, "tracing.otlpEndpoint=tempo:4318 is not an http(s) URL"),
    ({"tracing": {"otlpEndpoint": "http://t:4318", "samplingRatio": 1.5}}, "tracing.samplingRatio=1.5 is out of range"),
    ({"tracing": {"otlpEndpoint": "http://t:4318", "samplingRatio": "all"}}, "tracing.samplingRatio=all is not a number"),
    ({"tracing": {"otlpEndpoint": "http://t:4318", "serviceName": ""}}, "tracing.serviceName is empty"),
])
def test_bad_values_fail_with_a_message(helm, tmp_path, overrides, message):
    p = render(helm, tmp_path, overrides, check=False)
    assert p.returncode != 0 and message in p.stderr, p.stderr


# ---------------------------------------------------------------------------------------------
# the `helm test` hook: aws-lb-controller doctor (templates/tests/doctor.yaml)

HOOK_KINDS = ["ClusterRole", "ClusterRoleBinding", "Pod", "Role", "RoleBinding", "ServiceAccount"]
READ_VERBS = {"get", "list", "watch"}


def doctor_hook(helm, tmp_path, overrides):
    """The rendered test hook's objects, and the Deployment rendered from the same values."""
    docs = render(helm, tmp_path, overrides, tests=True)
    hooks = [d for d in docs if d["metadata"].get("annotations", {}).get("helm.sh/hook") == "test"]
    return hooks, one(docs, "Deployment")


def doctor_args(helm, tmp_path, overrides):
    hooks, _ = doctor_hook(helm, tmp_path, overrides)
    return one(hooks, "Pod")["spec"]["containers"][0]["args"]


# Exactly what doctor calls (controller/src/doctor/kube.rs): one list per kind it inspects, named
# gets, and `create` on pods for its one server-side dry-run. Nothing else may write.
EXPECTED_DOCTOR_RULES = {
    ("elbv2.k8s.aws", "targetgroupbindings"): {"list"},
    ("elbv2.k8s.aws", "ingressclassparams"): {"list"},
    ("", "services"): {"list"},
    ("", "pods"): {"list", "create"},
    ("", "nodes"): {"list"},
    ("", "namespaces"): {"list"},
    ("discovery.k8s.io", "endpointslices"): {"list"},
    ("networking.k8s.io", "ingresses"): {"list"},
    ("networking.k8s.io", "ingressclasses"): {"list"},
    ("apps", "deployments"): {"list"},
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations",
     ("lbc-aws-lb-controller-webhook", "aws-load-balancer-webhook")): {"get"},
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations", ("lbc-aws-lb-controller-webhook",)): {"get"},
    ("apiextensions.k8s.io", "customresourcedefinitions",
     ("albtargetcontrolconfigs.elbv2.k8s.aws", "ingressclassparams.elbv2.k8s.aws",
      "targetgroupbindings.elbv2.k8s.aws")): {"get"},
}


@pytest.mark.parametrize("case", MATRIX)
def test_doctor_hook_runs_the_deployments_command(helm, tmp_path, case):
    hooks, dep = doctor_hook(helm, tmp_path, MATRIX[case])
    assert sorted(d["kind"] for d in hooks) == HOOK_KINDS
    pod = one(hooks, "Pod")
    ann = pod["metadata"]["annotations"]
    assert ann["helm.sh/hook"] == "test" and ann["helm.sh/hook-delete-policy"] == "before-hook-creation"
    # The ServiceAccount and its RBAC exist before the Pod and only until the test ends, passed or failed.
    for d in hooks:
        if d["kind"] != "Pod":
            a = d["metadata"]["annotations"]
            assert a["helm.sh/hook-weight"] == "-1", d["metadata"]
            assert a["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded,hook-failed", d["metadata"]
    spec, dspec = pod["spec"], dep["spec"]["template"]["spec"]
    c, dc = spec["containers"][0], dspec["containers"][0]
    # The Deployment's flags, then the subcommand and the chart's webhook configuration name.
    assert c["args"] == dc["args"] + ["doctor", "--webhook-configuration=lbc-aws-lb-controller-webhook"]
    # The Deployment's image and credential wiring (env, Secret/file/Vault volumes), nothing of its webhook.
    assert (c["image"], c["imagePullPolicy"]) == (dc["image"], dc["imagePullPolicy"])
    assert c["env"] == dc["env"] and c.get("envFrom") == dc.get("envFrom")
    assert c.get("volumeMounts", []) == [m for m in dc["volumeMounts"] if m["name"] != "webhook-cert"]
    assert spec.get("volumes", []) == [v for v in dspec["volumes"] if v["name"] != "webhook-cert"]
    assert c["securityContext"] == dc["securityContext"] and spec["securityContext"] == dspec["securityContext"]
    assert spec.get("tolerations") == dspec.get("tolerations") and spec.get("nodeSelector") == dspec.get("nodeSelector")
    # Its own ServiceAccount, not the controller's (whose RBAC writes).
    sa = one(hooks, "ServiceAccount")["metadata"]["name"]
    assert spec["serviceAccountName"] == sa == "lbc-aws-lb-controller-doctor" != dspec["serviceAccountName"]
    assert spec["restartPolicy"] == "Never"
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        assert one(hooks, kind)["subjects"] == [{"kind": "ServiceAccount", "name": sa, "namespace": "kube-system"}]


def test_doctor_hook_rbac_is_read_only_plus_the_dry_run_create(helm, tmp_path):
    hooks, _ = doctor_hook(helm, tmp_path, {})
    rules = rule_map(one(hooks, "ClusterRole"))
    assert rules == EXPECTED_DOCTOR_RULES
    assert {k: v - READ_VERBS for k, v in rules.items() if v - READ_VERBS} == {("", "pods"): {"create"}}
    role = one(hooks, "Role")
    assert role["metadata"]["namespace"] == "kube-system"
    assert rule_map(role) == {("", "configmaps", ("cilium-config",)): {"get"}}
    lines = (CHART / "templates/_doctor.tpl").read_text().splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("- apiGroups:"):
            assert lines[i - 1].strip().startswith("#"), f"_doctor.tpl:{i + 1}: rule without a comment saying why"


def test_doctor_hook_can_be_disabled(helm, tmp_path):
    hooks, _ = doctor_hook(helm, tmp_path, {"doctor": {"helmTest": {"enabled": False}}})
    assert hooks == []


def test_doctor_hook_vault_auth_role(helm, tmp_path):
    vault = deep_merge(MATRIX["credentials-vault"], {"doctor": {"helmTest": {"vaultAuthRole": "lbc-doctor"}}})
    hooks, dep = doctor_hook(helm, tmp_path, vault)
    args = one(hooks, "Pod")["spec"]["containers"][0]["args"]
    dargs = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--vault-auth-role=lbc-doctor" in args and "--vault-auth-role=aws-load-balancer-controller" in dargs
    assert [a for a in args if not a.startswith("--vault-auth-role=")][:-2] == \
        [a for a in dargs if not a.startswith("--vault-auth-role=")]


def test_vault_insecure_http_is_rendered_only_when_asked_for(helm, tmp_path):
    lab = deep_merge(MATRIX["credentials-vault"],
                     {"awsCredentials": {"vault": {"address": "http://bao.lab:8200", "insecureHttp": True}}})
    hooks, dep = doctor_hook(helm, tmp_path, lab)
    for args in (dep["spec"]["template"]["spec"]["containers"][0]["args"],
                 one(hooks, "Pod")["spec"]["containers"][0]["args"]):
        assert {"--vault-address=http://bao.lab:8200", "--vault-insecure-http=true"} <= set(args), args


# ---------------------------------------------------------------------------------------------
# generated files


def cargo_metadata(deps):
    args = ["cargo", "metadata", "--format-version", "1"] + ([] if deps else ["--no-deps"])
    return json.loads(run(args + ["--manifest-path", REPO / "Cargo.toml"]).stdout)


@pytest.fixture(scope="session")
def controller_bin():
    if os.environ.get("LBC_CONTROLLER_BIN"):  # a binary built elsewhere
        return Path(os.environ["LBC_CONTROLLER_BIN"])
    run(["cargo", "build", "-q", "-p", "aws-lb-controller", "--manifest-path", REPO / "Cargo.toml"], timeout=3600)
    return Path(cargo_metadata(False)["target_directory"]) / "debug/aws-lb-controller"


def test_crds_match_the_rust_types(controller_bin):
    committed = (CHART / "crds/crds.yaml").read_text()
    assert run([controller_bin, "crd"]).stdout == committed, \
        "charts/aws-lb-controller/crds/crds.yaml drifted: regenerate with `aws-lb-controller crd`"


@pytest.mark.parametrize("case", MATRIX)
def test_rendered_args_are_known_to_the_binary(helm, tmp_path, controller_bin, case):
    # clap parses left to right: an unknown flag or a bad value before --help is an error.
    args = one(render(helm, tmp_path, MATRIX[case]), "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    p = run([controller_bin, *args, "--help"], check=False)
    assert p.returncode == 0, f"the controller rejects the chart's flags: {p.stderr}"


def test_dashboard_is_generated():
    gen = run([sys.executable, REPO / "charts/scripts/dashboard.py"]).stdout
    assert gen == (CHART / "dashboards/aws-lb-controller.json").read_text(), \
        "dashboard drifted: run python3 charts/scripts/dashboard.py --write"


# ---------------------------------------------------------------------------------------------
# the e2e apiserver


@pytest.fixture(scope="session")
def e2e():
    """The e2e environment's variables (e2e/.run/env), with a reachable apiserver."""
    required = os.environ.get("LBC_E2E_REQUIRED") == "1"
    env_file = Path(os.environ.get("LBC_E2E_ENV", REPO / "e2e/.run/env"))
    why = None
    if not env_file.exists():
        why = "e2e environment not running (no e2e/.run/env; start it with e2e/up)"
    else:
        dump = run(["bash", "-c", f"set -a; source '{env_file}'; env -0"]).stdout
        env = dict(kv.split("=", 1) for kv in dump.split("\0") if "=" in kv)
        env["KUBECTL"] = f"{env['LBC_BIN_DIR']}/kubectl"
        if run([env["KUBECTL"], "get", "--raw", "/readyz"], env=env, check=False).returncode != 0:
            why = "e2e apiserver not answering /readyz (run e2e/up)"
    if why:
        if required:
            pytest.fail(f"LBC_E2E_REQUIRED=1 but {why}")
        pytest.skip(f"apiserver tests skipped: {why}")
    return env


def kubectl(e2e, *args, **kw):
    return run([e2e["KUBECTL"], *args], env=e2e, **kw)


@pytest.fixture(scope="module")
def dry_run_ns(e2e):
    ns = f"lbc-chart-dry-{secrets.token_hex(3)}"
    kubectl(e2e, "create", "namespace", ns)
    yield ns
    kubectl(e2e, "delete", "namespace", ns, "--wait=false", check=False)


@pytest.mark.parametrize("case", MATRIX)
def test_server_dry_run(helm, tmp_path, e2e, dry_run_ns, case):
    docs = render(helm, tmp_path, MATRIX[case], release=f"dry-{case}", namespace=dry_run_ns, tests=True)
    # The test hook's Pod is left out: admission refuses a Pod whose ServiceAccount does not exist yet, and a
    # dry run creates none (Helm creates it first, as a hook of lower weight).
    docs = [d for d in docs if not d["apiVersion"].startswith(NO_CRD_GROUPS) and d["kind"] != "Pod"]
    kubectl(e2e, "apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump_all(docs))


class Scenario:
    """The controller, running under the chart's ServiceAccount and RBAC, reconciling two bindings."""


@pytest.fixture(scope="module")
def scenario(helm, tmp_path_factory, e2e, controller_bin):
    import boto3

    s, tmp = Scenario(), tmp_path_factory.mktemp("rbac")
    suffix = secrets.token_hex(3)
    s.ns, release = f"lbc-chart-rbac-{suffix}", f"rbac-{suffix}"
    elb = boto3.client("elbv2", endpoint_url=e2e["LBC_AWS_ENDPOINT"], region_name=e2e["AWS_REGION"],
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    arns, proc, cluster_names = {}, None, []
    try:
        kubectl(e2e, "create", "namespace", s.ns)
        docs = render(helm, tmp, {}, release=release, namespace=s.ns)
        rbac = [d for d in docs if d["kind"] in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
                                                 "RoleBinding")]
        cluster_names = [d["metadata"]["name"] for d in rbac if d["kind"].startswith("Cluster")]
        kubectl(e2e, "apply", "-f", "-", input=yaml.safe_dump_all(rbac))
        sa = one(rbac, "ServiceAccount")["metadata"]["name"]

        token = kubectl(e2e, "create", "token", sa, "-n", s.ns, "--duration=2h").stdout.strip()
        s.kubeconfig = tmp / "sa.kubeconfig"
        s.kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "sa",
            "clusters": [{"name": "e2e", "cluster": {"server": e2e["LBC_KUBE_SERVER"],
                                                     "certificate-authority": e2e["LBC_KUBE_CA_FILE"]}}],
            "users": [{"name": "sa", "user": {"token": token}}],
            "contexts": [{"name": "sa", "context": {"cluster": "e2e", "user": "sa", "namespace": s.ns}}]}))

        gate = "target-health.elbv2.k8s.aws/web"
        pods = REPO / "e2e/pods"
        create = [pods, "create", s.ns, "web", "--replicas", "2", "--port", "8080", "--readiness-gates", gate]
        for attempt in range(20):
            p = run(create, env=e2e, check=False)
            # Other suites (benchmarks) briefly add fake nodes the pod helper cannot place pods on.
            if p.returncode == 0 or "no lbc-e2e/subnet-id annotation" not in p.stderr + p.stdout or attempt == 19:
                break
            run([pods, "delete", s.ns, "web"], env=e2e, check=False)
            time.sleep(10)
        assert p.returncode == 0, f"e2e/pods create failed:\n{p.stdout}\n{p.stderr}"
        run([pods, "service", s.ns, "web", "--port", "80", "--target-port", "8080"], env=e2e)
        ips = run([pods, "ips", s.ns, "web"], env=e2e).stdout.split()
        want = {f"{ip}:8080" for ip in ips}
        assert len(want) == 2, ips

        for name in ("web", "web-mc"):
            tg = elb.create_target_group(Name=f"chart-{name}-{suffix}", Protocol="TCP", Port=8080,
                                         VpcId=e2e["LBC_VPC_ID"], TargetType="ip", HealthCheckIntervalSeconds=5,
                                         HealthCheckTimeoutSeconds=4)
            arns[name] = tg["TargetGroups"][0]["TargetGroupArn"]
            emulator(e2e, "health-policy", {"scope": "target_group", "target_group_arn": arns[name],
                                            "initial_seconds": 1.0, "then": "healthy"})
        # Throttle the first 1 + 3 retries (--aws-max-retries default) of one registration (an
        # operation this test never calls): the throttling, retry and reconcile-error series then
        # have samples (empty families are not in /metrics), and the controller must recover.
        emulator(e2e, "faults", {"service": "elasticloadbalancing", "operation": "RegisterTargets",
                                 "target_group_arn": arns["web"], "code": "Throttling", "message": "Rate exceeded",
                                 "count": 4})
        bindings = [{"apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
                     "metadata": {"name": name, "namespace": s.ns},
                     "spec": {"targetGroupARN": arns[name], "targetType": "ip",
                              "serviceRef": {"name": "web", "port": 80},
                              **({"multiClusterTargetGroup": True} if name == "web-mc" else {})}}
                    for name in arns]
        kubectl(e2e, "apply", "-f", "-", input=yaml.safe_dump_all(bindings))

        metrics_port, health_port, webhook_port = free_port(), free_port(), free_port()
        s.log_path = tmp / "controller.log"
        certs = tmp / "certs"
        certs.mkdir()
        run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
             "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", certs / "tls.key", "-out", certs / "tls.crt"])
        creds_file = tmp / "aws-credentials"
        creds_file.write_text("[default]\naws_access_key_id = testing\naws_secret_access_key = testing\n")
        env = {**e2e, "KUBECONFIG": str(s.kubeconfig)}
        endpoint = e2e["LBC_AWS_ENDPOINT"]
        with open(s.log_path, "w") as log:
            proc = subprocess.Popen([
                controller_bin, f"--cluster-name={e2e['LBC_CLUSTER_NAME']}", "--aws-region=us-east-1",
                f"--aws-vpc-id={e2e['LBC_VPC_ID']}",
                f"--aws-api-endpoints=Elastic Load Balancing v2={endpoint},EC2={endpoint},ACM={endpoint},WAFV2={endpoint}",
                f"--watch-namespace={s.ns}", f"--leader-election-namespace={s.ns}",
                f"--metrics-bind-addr=127.0.0.1:{metrics_port}", f"--health-probe-bind-addr=127.0.0.1:{health_port}",
                "--webhook-bind-host=127.0.0.1", f"--webhook-bind-port={webhook_port}", f"--webhook-cert-dir={certs}",
                f"--kubeconfig={s.kubeconfig}", "--targetgroupbinding-requeue-duration=1s",
                # the refreshing file source (as the chart's `file` mode runs it): its metrics are queried
                "--aws-credentials-source=file", f"--aws-credentials-file={creds_file}",
                # debug: event publishing failures are logged at debug level
                "--log-level=info,aws_lb_controller=debug,lbc_aws=debug",
            ], env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

        def registered(arn):
            out = elb.describe_target_health(TargetGroupArn=arn)["TargetHealthDescriptions"]
            return {f"{d['Target']['Id']}:{d['Target']['Port']}" for d in out
                    if d["TargetHealth"]["State"] not in ("draining", "unused")}

        def get(*what):
            return json.loads(kubectl(e2e, "get", *what, "-n", s.ns, "-o", "json").stdout)

        def ready(name):
            conds = get("targetgroupbinding", name).get("status", {}).get("conditions", [])
            return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)

        def alive():
            assert proc.poll() is None, f"controller exited {proc.returncode}:\n{s.log_path.read_text()[-3000:]}"
            return True

        for name, arn in arns.items():
            eventually(f"{name} targets registered", 90, lambda: alive() and registered(arn) == want)
            eventually(f"{name} Ready=True", 60, lambda: alive() and ready(name))
        eventually("readiness gates True", 60, lambda: all(
            any(c["type"] == gate and c["status"] == "True" for c in p["status"].get("conditions", []))
            for p in get("pods", "-l", "lbc-e2e/set=web")["items"]))
        eventually("multi-cluster ConfigMap written", 30, lambda: get("configmap", "aws-lbc-targets-web-mc"))
        eventually("Events published", 30, lambda: any(
            ev.get("reason") == "SuccessfullyReconciled" for ev in get("events.events.k8s.io")["items"]))

        # Both pods not ready while their endpoints live: the plan to deregister everything is refused.
        for pod in ("web-0", "web-1"):
            run([pods, "set-ready", s.ns, pod, "false"], env=e2e)
        eventually("deregister-all refused", 60, lambda: alive() and any(
            c["type"] == "Ready" and c["status"] == "False" and c.get("reason") == "DeregisterAllRefused"
            for c in get("targetgroupbinding", "web").get("status", {}).get("conditions", [])))
        assert registered(arns["web"]), "the last targets must be kept while endpoints live"
        for pod in ("web-0", "web-1"):
            run([pods, "set-ready", s.ns, pod, "true"], env=e2e)
        eventually("web Ready=True again", 60, lambda: alive() and ready("web") and registered(arns["web"]) == want)

        # Deletion: finalizer cleanup deregisters, deletes the ConfigMap and removes the finalizer.
        kubectl(e2e, "delete", "targetgroupbinding", "web-mc", "-n", s.ns, "--wait=false")
        eventually("web-mc deleted", 60, lambda: alive() and not kubectl(
            e2e, "get", "targetgroupbinding", "web-mc", "-n", s.ns, "--ignore-not-found", "-o", "name").stdout.strip())
        assert registered(arns["web-mc"]) == set()
        assert not kubectl(e2e, "get", "configmap", "aws-lbc-targets-web-mc", "-n", s.ns, "--ignore-not-found",
                           "-o", "name").stdout.strip()

        # Service controller under the same RBAC: a type-LoadBalancer Service gets its finalizer, an NLB, a
        # TargetGroupBinding it owns and status.loadBalancer; deleting it releases everything.
        kubectl(e2e, "apply", "-f", "-", input=yaml.safe_dump({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web-nlb", "namespace": s.ns, "annotations": {
                "service.beta.kubernetes.io/aws-load-balancer-type": "external",
                "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip"}},
            "spec": {"type": "LoadBalancer", "selector": {"lbc-e2e/set": "web"},
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}}))
        eventually("NLB hostname in the Service status", 90, lambda: alive() and get("service", "web-nlb").get(
            "status", {}).get("loadBalancer", {}).get("ingress"))
        owned = [t for t in get("targetgroupbindings")["items"]
                 if any(o["kind"] == "Service" for o in t["metadata"].get("ownerReferences", []))]
        assert len(owned) == 1, owned
        kubectl(e2e, "delete", "service", "web-nlb", "-n", s.ns, "--wait=false")
        eventually("NLB Service deleted", 90, lambda: alive() and not kubectl(
            e2e, "get", "service", "web-nlb", "-n", s.ns, "--ignore-not-found", "-o", "name").stdout.strip())

        # Ingress controller under the same RBAC: finalizer, ALB, owned bindings, status.loadBalancer, cleanup.
        kubectl(e2e, "apply", "-f", "-", input=yaml.safe_dump({
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "web-alb", "namespace": s.ns, "annotations": {
                "kubernetes.io/ingress.class": "alb", "alb.ingress.kubernetes.io/target-type": "ip"}},
            "spec": {"rules": [{"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {
                "service": {"name": "web", "port": {"number": 80}}}}]}}]}}))
        eventually("ALB hostname in the Ingress status", 90, lambda: alive() and get("ingress", "web-alb").get(
            "status", {}).get("loadBalancer", {}).get("ingress"))
        assert "ingress.k8s.aws/resources" in get("ingress", "web-alb")["metadata"].get("finalizers", [])
        # An implicit group's bindings carry ALBC's stack labels (a group may span namespaces: no owner).
        owned = [t for t in get("targetgroupbindings")["items"]
                 if t["metadata"].get("labels", {}).get("ingress.k8s.aws/stack-name") == "web-alb"]
        assert len(owned) == 1, [t["metadata"] for t in get("targetgroupbindings")["items"]]
        kubectl(e2e, "delete", "ingress", "web-alb", "-n", s.ns, "--wait=false")
        eventually("Ingress deleted", 90, lambda: alive() and not kubectl(
            e2e, "get", "ingress", "web-alb", "-n", s.ns, "--ignore-not-found", "-o", "name").stdout.strip())
        assert "forbidden" not in s.log_path.read_text().lower(), "an API call was forbidden under the chart's RBAC"

        # Admission requests as the API server sends them (one admitted, one denied, one malformed), so the
        # dashboard's webhook series have samples.
        tls = ssl.create_default_context(cafile=str(certs / "tls.crt"))

        def review(path, obj, kind, resource=""):
            body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
                "uid": secrets.token_hex(8), "kind": kind, "operation": "CREATE",
                "resource": {"group": kind.get("group"), "version": "v1", "resource": resource},
                "namespace": s.ns, "userInfo": {}, "object": obj}} if obj is not None else {"garbage": True}
            req = urllib.request.Request(f"https://127.0.0.1:{webhook_port}{path}", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
            try:
                return json.loads(urllib.request.urlopen(req, context=tls, timeout=10).read())
            except urllib.error.HTTPError as e:
                return {"status": e.code}

        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": s.ns},
               "spec": {"containers": [{"name": "c", "image": "x"}]}}
        assert review("/mutate-v1-pod", pod, {"group": "", "version": "v1", "kind": "Pod"}, "pods")["response"]["allowed"]
        bad_ing = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                   "metadata": {"name": "i", "namespace": s.ns, "annotations": {
                       "kubernetes.io/ingress.class": "alb", "alb.ingress.kubernetes.io/scheme": "sideways"}},
                   "spec": {}}
        denied = review("/validate-networking-v1-ingress", bad_ing,
                        {"group": "networking.k8s.io", "version": "v1", "kind": "Ingress"}, "ingresses")
        assert denied["response"]["allowed"] is False, denied
        review("/mutate-v1-pod", None, {})

        # A credentials file that stops parsing: the refresh fails (counted by reason), the keys read before stay
        # in use, and the next good file is picked up.
        metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
        good = creds_file.read_text()
        creds_file.write_text("[default]\naws_access_key_id = \n")
        eventually("credential refresh failure counted", 30, lambda: alive() and 'reason="file_invalid"' in
                   urllib.request.urlopen(metrics_url, timeout=10).read().decode())
        creds_file.write_text(good)

        s.metrics = urllib.request.urlopen(metrics_url, timeout=10).read().decode()
        assert urllib.request.urlopen(f"http://127.0.0.1:{health_port}/readyz", timeout=10).status == 200
        assert re.search(r"^awslbc_leader 1$", s.metrics, re.M), "not leader under the chart's Lease Role"
        proc.send_signal(signal.SIGTERM)  # graceful: releases the Lease (get + update)
        proc.wait(timeout=30)
        s.log = s.log_path.read_text()
        yield s
    finally:
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait()
        kubectl(e2e, "delete", "namespace", s.ns, "--wait=false", check=False)
        for name in cluster_names:
            kubectl(e2e, "delete", "clusterrole,clusterrolebinding", name, "--ignore-not-found", check=False)
        for arn in arns.values():
            try:
                elb.delete_target_group(TargetGroupArn=arn)
            except Exception:  # noqa: BLE001 - best-effort cleanup
                pass


def test_chart_rbac_is_sufficient(scenario):
    bad = [line for line in scenario.log.splitlines() if re.search(r"forbidden|\b403\b", line, re.I)]
    assert not bad, "API calls refused under the chart's RBAC:\n" + "\n".join(bad[:20])
    assert "released the leader lease" in scenario.log


def can_i(scenario, e2e, verb, resource, ns=None, subresource=None):
    args = ["--kubeconfig", scenario.kubeconfig, "auth", "can-i", verb, resource]
    args += ["-n", ns or scenario.ns] if ns != "" else ["-A"]
    if subresource:
        args.append(f"--subresource={subresource}")
    return run([e2e["KUBECTL"], *args], env=e2e, check=False).stdout.strip() == "yes"


TGB = "targetgroupbindings.elbv2.k8s.aws"
LEASE = "leases.coordination.k8s.io"


def test_chart_rbac_is_not_broader(scenario, e2e):
    allowed = [("list", TGB, ""), ("patch", TGB, None), ("patch", TGB, None, "status"), ("watch", "pods", ""),
               ("list", "endpointslices.discovery.k8s.io", ""), ("patch", "pods", None, "status"),
               ("create", "configmaps", None), ("create", "events.events.k8s.io", None),
               ("create", TGB, None), ("delete", TGB, None), ("patch", "services", None),
               ("patch", "services", None, "status"), ("watch", "ingresses.networking.k8s.io", ""),
               ("patch", "ingresses.networking.k8s.io", None), ("patch", "ingresses.networking.k8s.io", None, "status"),
               ("patch", "services", None, "status"), ("watch", "ingressclasses.networking.k8s.io", ""),
               ("list", "ingressclassparams.elbv2.k8s.aws", ""), ("watch", "namespaces", ""),
               ("get", f"{LEASE}/aws-load-balancer-controller-leader", None), ("create", LEASE, None)]
    # ciliumnodes.cilium.io: the e2e cluster has no Cilium CRD, so `can-i` cannot resolve it; the
    # rendered rule is checked in test_rbac_rules (EXPECTED_CLUSTER_RULES).
    # Secrets: not even `get` by default (clusterSecretsPermissions.allowAllSecrets: false).
    denied = [("delete", "pods", None), ("create", "pods", None), ("patch", "pods", None), ("update", "pods", None),
              ("get", "secrets", None), ("list", "secrets", ""), ("list", "secrets", None), ("watch", "secrets", None),
              ("create", "secrets", None), ("update", "secrets", None), ("patch", "secrets", None),
              ("create", "pods", None, "exec"), ("get", "nodes", None, "proxy"), ("patch", "nodes", None),
              ("update", TGB, None), ("update", "services", None), ("update", "ingresses.networking.k8s.io", None),
              ("delete", "ingresses.networking.k8s.io", None), ("create", "ingresses.networking.k8s.io", None),
              ("delete", "services", None), ("create", "services", None), ("list", "configmaps", None), ("delete", "endpointslices.discovery.k8s.io", None),
              ("create", "events", None), ("create", "ingressclasses.networking.k8s.io", ""),
              ("patch", "ingressclassparams.elbv2.k8s.aws", ""), ("patch", "namespaces", ""),
              ("get", f"{LEASE}/some-other-lease", None),
              ("update", f"{LEASE}/some-other-lease", None), ("delete", f"{LEASE}/aws-load-balancer-controller-leader", None),
              ("create", LEASE, "default"), ("create", "serviceaccounts", None, "token"),
              ("create", "clusterroles.rbac.authorization.k8s.io", None), ("impersonate", "serviceaccounts", None),
              ("*", "*", None)]
    wrong = [f"{c} should be allowed" for c in allowed if not can_i(scenario, e2e, *c)]
    wrong += [f"{c} should be denied" for c in denied if can_i(scenario, e2e, *c)]
    assert not wrong, "\n".join(wrong)


# ---------------------------------------------------------------------------------------------
# metrics the dashboard and the alerts query


def queried_exprs(helm, tmp_path):
    dash = json.loads((CHART / "dashboards/aws-lb-controller.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    exprs += [v["query"]["query"] for v in dash["templating"]["list"] if isinstance(v.get("query"), dict)]
    docs = render(helm, tmp_path, MATRIX["monitoring"])
    exprs += [r["expr"] for g in one(docs, "PrometheusRule")["spec"]["groups"] for r in g["rules"]]
    return exprs


SUFFIXES = {"_total": ("counter",), "_bucket": ("histogram",), "_sum": ("histogram", "summary"),
            "_count": ("histogram", "summary"), "_created": ("counter", "histogram", "summary")}


def exported(name, types):
    if types.get(name) in ("gauge", "unknown", "info", "stateset"):
        return True
    return any(name.endswith(suf) and types.get(name[: -len(suf)]) in kinds for suf, kinds in SUFFIXES.items())


@pytest.fixture(scope="session")
def promql_check(controller_bin):
    """Our wrapper around an independent PromQL parser (e2e/src/bin/promql-check.rs): $LBC_PROMQL_CHECK (e2e/test-all
    sets it: the controller it tests is the production build, in a folder of its own), else beside the controller."""
    given = os.environ.get("LBC_PROMQL_CHECK")
    if given:
        assert Path(given).is_file(), f"LBC_PROMQL_CHECK={given} is not a file: build it (cargo build --workspace)"
        return Path(given)
    b = controller_bin.parent / "promql-check"
    if not b.exists():
        run(["cargo", "build", "-q", "-p", "lbc-e2e", "--bin", "promql-check", "--manifest-path", REPO / "Cargo.toml"],
            timeout=3600)
    return b


def as_promql(expr):
    """A dashboard query as Prometheus would receive it: Grafana's interval variables replaced and
    `label_values(selector, label)` (a Grafana function) reduced to its selector."""
    m = re.fullmatch(r"label_values\((.*),\s*\w+\)", expr.strip())
    if m:
        expr = m.group(1)
    return expr.replace("$__rate_interval", "5m").replace("$__interval", "1m")


def test_queries_are_valid_promql(helm, tmp_path, promql_check):
    exprs = [as_promql(e) for e in queried_exprs(helm, tmp_path)]
    assert len(exprs) > 30, exprs
    p = run([promql_check], input=json.dumps(exprs), check=False)
    assert p.returncode == 0, f"PromQL that does not parse:\n{p.stdout}{p.stderr}"
    # The checker must fail on broken PromQL, or this test proves nothing.
    p = run([promql_check], input=json.dumps(["sum(rate(awslbc_leader[5m])"]), check=False)
    assert p.returncode == 1 and "0:" in p.stdout, p.stdout + p.stderr


def test_queried_metrics_exist(helm, tmp_path, scenario):
    # Match `# TYPE` lines (a histogram's family name has no sample of its own). A labelled family
    # with no sample yet has no TYPE line either: the scenario touches every queried family.
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", scenario.metrics, re.M))
    assert types, scenario.metrics[:500]
    names, missing = set(), set()
    for e in queried_exprs(helm, tmp_path):
        found = set(re.findall(r"\b((?:awslbc|aws)_[a-z0-9_]+)\b", e))
        assert found, f"query uses none of the controller's metrics: {e}"
        names |= found
        missing |= {n for n in found if not exported(n, types) and n not in PENDING_METRICS}
    assert not missing, f"queried but not exported: {sorted(missing)}"
    now_exported = {n for n in PENDING_METRICS if exported(n, types)}
    assert not now_exported, f"exported now: remove from PENDING_METRICS: {sorted(now_exported)}"
    assert PENDING_METRICS <= names, "PENDING_METRICS lists a metric nothing queries"


@pytest.mark.parametrize("case", [*MATRIX, "albc-values"])
def test_doctor_hook_args_parse_in_the_binary(helm, tmp_path, controller_bin, case):
    """The test Pod's command parses: the controller's flags before `doctor`, doctor's after it
    (e2e/tests/e2e/doctor.rs runs it for real against the local environment)."""
    if case == "albc-values":
        values = yaml.safe_load((REPO / "charts/tests/albc-values.yaml").read_text())
        values.pop("image", None)
    else:
        values = MATRIX[case]
    args = doctor_args(helm, tmp_path, values)
    assert args[-2] == "doctor"
    p = run([controller_bin, *args, "--help"], check=False)
    assert p.returncode == 0 and "--webhook-configuration" in p.stdout, f"the binary rejects the hook's command: {p.stderr}"


def test_albc_values_file_args_parse_in_the_binary(helm, tmp_path, controller_bin):
    """A production values file written for ALBC's chart renders flags the controller accepts
    (ALBC-only flags included: they parse, and are judged at start-up, not by clap)."""
    values = yaml.safe_load((REPO / "charts/tests/albc-values.yaml").read_text())
    values.pop("image", None)  # the one key a user must change; the chart refuses ALBC's image
    args = one(render(helm, tmp_path, values), "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    p = run([controller_bin, *args, "--help"], check=False)
    assert p.returncode == 0, f"the controller rejects flags rendered from ALBC values: {p.stderr}"
