"""Chart defaults a security review passes, and the GitOps pieces (issue 31, items 5 and 6), rendered with helm:

- Secrets: no cluster-wide `get` by default; `get` only in the namespaces of oidcSecrets (optionally by name);
- priorityClassName system-cluster-critical by default;
- one scrape: the pod's prometheus.io annotations only while no ServiceMonitor scrapes it;
- Kubernetes < 1.30 (no webhook matchConditions): the Service and Ingress webhooks fail open unless told otherwise;
- the optional NetworkPolicy: only the API server reaches the webhook port, only Prometheus the metrics port;
- the CRDs survive `helm uninstall` and ArgoCD deletes/prunes;
- doctor as an ArgoCD PostSync hook (opt-in): the helm test's pod, its ServiceAccount and RBAC deleted after the
  run whatever the result; the doctor's pods never selected by the controller's Services, PDB or NetworkPolicy.
Against the e2e API server (e2e/up): a server-side dry run of the new objects, and a real `helm test` and a real
`helm install` whose doctor pod fails, after which the doctor's ServiceAccount and RBAC must be gone.
"""
import json
import re
import secrets
import subprocess
import sys
import time

import pytest
import yaml

from test_chart import (BASE_VALUES, CHART, MATRIX, by_kind, deep_merge, e2e, helm, kubectl, one, render,  # noqa: F401
                        rule_map, run)


def pod_spec(docs):
    return one(docs, "Deployment")["spec"]["template"]["spec"]


def pod_meta(docs):
    return one(docs, "Deployment")["spec"]["template"]["metadata"]


def hooks_of(docs):
    return {w["name"]: w for d in docs if d["kind"].endswith("WebhookConfiguration") for w in d["webhooks"]}


READ = {"get", "list", "watch"}


def secret_reads(docs, exclude_named_in=None):
    """{(kind, namespace): [(resourceNames or None, read verbs)]} of every rule that lets the controller read Secrets.
    With exclude_named_in=NS, rules on named Secrets of NS (the chart's own, e.g. the webhook certificate's) are
    left out: only access to Secrets the chart does not name counts."""
    out = {}
    for d in docs:
        if d["kind"] not in ("Role", "ClusterRole") or d["metadata"]["name"].endswith("-doctor"):
            continue
        ns = d["metadata"].get("namespace")
        for r in d["rules"]:
            verbs = set(r["verbs"]) & READ
            if "secrets" not in r["resources"] or not verbs:
                continue
            if exclude_named_in and ns == exclude_named_in and r.get("resourceNames"):
                continue
            out.setdefault((d["kind"], ns), []).append((r.get("resourceNames"), verbs))
    return out


# ---------------------------------------------------------------------------------------------
# Secrets

def test_no_secret_access_by_default(helm, tmp_path):
    docs = render(helm, tmp_path, {})
    assert secret_reads(docs, exclude_named_in="kube-system") == {}
    # Nothing cluster-wide at all, named or not.
    assert not [k for k in secret_reads(docs) if k[0] == "ClusterRole"]


def test_all_secrets_only_when_asked(helm, tmp_path):
    docs = render(helm, tmp_path, {"clusterSecretsPermissions": {"allowAllSecrets": True}})
    assert secret_reads(docs, exclude_named_in="kube-system") == {("ClusterRole", None): [(None, {"get"})]}


def test_gateway_certificate_secrets_only_when_asked(helm, tmp_path):
    gate = {"controllerConfig": {"featureGates": {"ALBGatewayAPI": True}}}
    docs = render(helm, tmp_path, gate)
    assert secret_reads(docs, exclude_named_in="kube-system") == {}
    args = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert not [a for a in args if a.startswith("--enable-gateway-certificate-secrets")], args
    docs = render(helm, tmp_path, {**gate, "gateway": {"certificateSecrets": True}})
    assert secret_reads(docs, exclude_named_in="kube-system") == {("ClusterRole", None): [(None, {"list", "watch"})]}
    args = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--enable-gateway-certificate-secrets=true" in args
    # Without the gate, the setting is refused, not ignored.
    p = render(helm, tmp_path, {"gateway": {"certificateSecrets": True}}, check=False)
    assert p.returncode != 0 and "needs the Gateway controller" in p.stderr, p.stderr


def test_oidc_secrets_only_in_their_namespaces(helm, tmp_path):
    docs = render(helm, tmp_path, {"oidcSecrets": {"namespaces": ["shop", "auth", "shop"],
                                                   "secretNames": ["oidc-client"]}})
    want = [(["oidc-client"], {"get"})]
    assert secret_reads(docs, exclude_named_in="kube-system") == {("Role", "shop"): want, ("Role", "auth"): want}
    sa = one(docs, "ServiceAccount")["metadata"]
    bindings = [b for b in by_kind(docs, "RoleBinding") if b["roleRef"]["name"].endswith("-oidc-secrets")]
    assert sorted(b["metadata"]["namespace"] for b in bindings) == ["auth", "shop"]
    for b in bindings:
        assert b["subjects"] == [{"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}]
    # Without names: any Secret of those namespaces, still `get` only.
    docs = render(helm, tmp_path, {"oidcSecrets": {"namespaces": ["shop"]}})
    assert secret_reads(docs, exclude_named_in="kube-system") == {("Role", "shop"): [(None, {"get"})]}


# ---------------------------------------------------------------------------------------------
# priority, scraping

def test_priority_class_by_default(helm, tmp_path):
    assert pod_spec(render(helm, tmp_path, {}))["priorityClassName"] == "system-cluster-critical"
    assert "priorityClassName" not in pod_spec(render(helm, tmp_path, {"priorityClassName": ""}))


def test_one_scrape_path(helm, tmp_path):
    docs = render(helm, tmp_path, {"podAnnotations": {"team": "net"}})
    assert pod_meta(docs)["annotations"] == {"prometheus.io/scrape": "true", "prometheus.io/port": "8080", "team": "net"}
    assert not by_kind(docs, "ServiceMonitor")
    docs = render(helm, tmp_path, deep_merge(MATRIX["monitoring"], {"podAnnotations": {"team": "net"}}))
    assert pod_meta(docs)["annotations"] == {"team": "net"}
    assert one(docs, "ServiceMonitor")["spec"]["endpoints"][0]["port"] == "metrics"
    assert "annotations" not in pod_meta(render(helm, tmp_path, MATRIX["monitoring"]))


def test_pod_annotations_win_over_the_scrape_defaults(helm, tmp_path):
    docs = render(helm, tmp_path, {"podAnnotations": {"prometheus.io/scrape": "false"}})
    assert pod_meta(docs)["annotations"]["prometheus.io/scrape"] == "false"


# ---------------------------------------------------------------------------------------------
# webhooks without matchConditions (Kubernetes < 1.30)

def render_at(helm, tmp_path, overrides, kube_version):
    values = tmp_path / f"values-{secrets.token_hex(3)}.yaml"
    values.write_text(yaml.safe_dump(deep_merge(BASE_VALUES, overrides)))
    out = run([helm, "template", "lbc", CHART, "--kube-version", kube_version, "-n", "kube-system", "-f", values]).stdout
    return [d for d in yaml.safe_load_all(out) if d]


SHARED_KINDS = ("mservice.elbv2.k8s.aws", "vingress.elbv2.k8s.aws")
OWN_KINDS = ("mtargetgroupbinding.elbv2.k8s.aws", "vtargetgroupbinding.elbv2.k8s.aws",
             "vingressclassparams.elbv2.k8s.aws")


def test_before_1_30_service_and_ingress_webhooks_fail_open(helm, tmp_path):
    hooks = hooks_of(render_at(helm, tmp_path, {}, "1.29.0"))
    for name in SHARED_KINDS:
        # Nothing narrows them to our objects on such an API server...
        assert "matchConditions" not in hooks[name], name
        # ...so a controller outage must not refuse every Service or Ingress of the cluster.
        assert hooks[name]["failurePolicy"] == "Ignore", name
    for name in OWN_KINDS:
        assert hooks[name]["failurePolicy"] == "Fail", name
    assert hooks["mpod.elbv2.k8s.aws"]["failurePolicy"] == "Ignore"


def test_from_1_30_matchconditions_keep_fail(helm, tmp_path):
    hooks = hooks_of(render_at(helm, tmp_path, {}, "1.30.0"))
    assert [c["name"] for c in hooks["mservice.elbv2.k8s.aws"]["matchConditions"]] == ["load-balancer-only"]
    assert [c["name"] for c in hooks["vingress.elbv2.k8s.aws"]["matchConditions"]] == [
        "may-be-ours", "spec-or-annotations-changed"]
    for name in SHARED_KINDS + OWN_KINDS:
        assert hooks[name]["failurePolicy"] == "Fail", name


def test_explicit_failure_policies_are_kept_at_any_version(helm, tmp_path):
    values = {"serviceMutatorWebhookConfig": {"failurePolicy": "Fail"},
              "webhookConfig": {"ingressValdationFailurePolicy": "Fail"}}
    for version in ("1.29.0", "1.34.0"):
        hooks = hooks_of(render_at(helm, tmp_path, values, version))
        assert [hooks[n]["failurePolicy"] for n in SHARED_KINDS] == ["Fail", "Fail"], version
    # webhookConfig.failurePolicy still governs the Ingress webhook where matchConditions exist.
    hooks = hooks_of(render_at(helm, tmp_path, {"webhookConfig": {"failurePolicy": "Ignore"}}, "1.34.0"))
    assert hooks["vingress.elbv2.k8s.aws"]["failurePolicy"] == "Ignore"
    assert hooks["mservice.elbv2.k8s.aws"]["failurePolicy"] == "Fail"


# ---------------------------------------------------------------------------------------------
# NetworkPolicy

NP = {"networkPolicy": {"enabled": True, "apiServerCIDRs": ["10.0.1.10/32", "10.0.2.10/32"],
                        "metrics": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                                    "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}}}


def test_no_network_policy_by_default(helm, tmp_path):
    assert not by_kind(render(helm, tmp_path, {}), "NetworkPolicy")


def test_network_policy_lets_only_the_api_server_and_prometheus_in(helm, tmp_path):
    docs = render(helm, tmp_path, NP)
    np = one(docs, "NetworkPolicy")["spec"]
    assert np["podSelector"] == one(docs, "Deployment")["spec"]["selector"]
    assert np["policyTypes"] == ["Ingress"]
    webhook, metrics = np["ingress"]
    assert webhook == {"from": [{"ipBlock": {"cidr": "10.0.1.10/32"}}, {"ipBlock": {"cidr": "10.0.2.10/32"}}],
                       "ports": [{"protocol": "TCP", "port": 9443}]}
    assert metrics == {"from": [{"namespaceSelector": NP["networkPolicy"]["metrics"]["namespaceSelector"],
                                 "podSelector": NP["networkPolicy"]["metrics"]["podSelector"]}],
                       "ports": [{"protocol": "TCP", "port": 8080}]}
    # The ports are the pod's: the webhook Service's targetPort and the metrics container port.
    ports = {p["name"]: p["containerPort"] for p in pod_spec(docs)["containers"][0]["ports"]}
    assert (ports["webhook"], ports["metrics"]) == (9443, 8080)


def test_network_policy_follows_the_ports(helm, tmp_path):
    docs = render(helm, tmp_path, deep_merge(NP, {"webhookBindPort": 10250, "metricsBindAddr": ":9090"}))
    webhook, metrics = one(docs, "NetworkPolicy")["spec"]["ingress"]
    assert webhook["ports"] == [{"protocol": "TCP", "port": 10250}]
    assert metrics["ports"] == [{"protocol": "TCP", "port": 9090}]


def test_network_policy_without_metrics_selectors_admits_no_scraper(helm, tmp_path):
    values = {"networkPolicy": {"enabled": True, "apiServerCIDRs": ["10.0.1.10/32"]}}
    np = one(render(helm, tmp_path, values), "NetworkPolicy")["spec"]
    assert [r["ports"][0]["port"] for r in np["ingress"]] == [9443]
    extra = {"from": [{"ipBlock": {"cidr": "10.9.0.0/16"}}], "ports": [{"protocol": "TCP", "port": 8080}]}
    np = one(render(helm, tmp_path, deep_merge(values, {"networkPolicy": {"extraIngress": [extra]}})),
             "NetworkPolicy")["spec"]
    assert np["ingress"][-1] == extra


@pytest.mark.parametrize("overrides, message", [
    ({"networkPolicy": {"enabled": True}}, "networkPolicy.apiServerCIDRs is empty with networkPolicy.enabled=true"),
    ({"networkPolicy": {"enabled": True, "apiServerCIDRs": ["10.0.1.10"]}},
     'networkPolicy.apiServerCIDRs: "10.0.1.10" is not a CIDR; expected an address with a prefix length'),
    (deep_merge(NP, {"hostNetwork": True}), "networkPolicy.enabled=true with hostNetwork=true"),
])
def test_network_policy_bad_values_fail_with_a_message(helm, tmp_path, overrides, message):
    p = render(helm, tmp_path, overrides, check=False)
    assert p.returncode != 0 and message in p.stderr, p.stderr


# ---------------------------------------------------------------------------------------------
# CRDs

def test_crds_are_kept_by_helm_and_argocd(helm, tmp_path):
    crds = by_kind(render(helm, tmp_path, {}), "CustomResourceDefinition")
    assert len(crds) == 3
    for crd in crds:
        a = crd["metadata"]["annotations"]
        assert a["helm.sh/resource-policy"] == "keep"
        assert set(a["argocd.argoproj.io/sync-options"].split(",")) == {"Delete=false", "Prune=false"}


# ---------------------------------------------------------------------------------------------
# doctor: helm test and the ArgoCD PostSync hook

def doctor_objects(docs, hook_key, hook_value):
    return [d for d in docs if hook_value in d["metadata"].get("annotations", {}).get(hook_key, "").split(",")]


def test_post_sync_is_off_by_default(helm, tmp_path):
    docs = render(helm, tmp_path, {}, tests=True)
    assert not doctor_objects(docs, "argocd.argoproj.io/hook", "PostSync") and not by_kind(docs, "Job")


@pytest.mark.parametrize("case", ["defaults", "credentials-vault", "credentials-file", "custom"])
def test_post_sync_job_runs_the_helm_tests_pod(helm, tmp_path, case):
    docs = render(helm, tmp_path, deep_merge(MATRIX[case], {"doctor": {"postSync": {"enabled": True}}}), tests=True)
    post = doctor_objects(docs, "argocd.argoproj.io/hook", "PostSync")
    test = doctor_objects(docs, "helm.sh/hook", "test")
    job = one(post, "Job")
    # The same pod as `helm test` (same command, image, credentials, ServiceAccount), run once.
    assert job["spec"]["template"]["spec"] == one(test, "Pod")["spec"]
    assert job["spec"]["backoffLimit"] == 0 and job["spec"]["activeDeadlineSeconds"] == 300
    assert job["spec"]["template"]["spec"]["containers"][0]["args"][-2] == "doctor"
    # The same ServiceAccount and RBAC, as hooks of their own.
    strip = lambda d: {k: v for k, v in d.items() if k != "metadata"} | {"name": d["metadata"]["name"]}  # noqa: E731
    assert sorted(map(json.dumps, map(strip, [d for d in post if d["kind"] != "Job"]))) == \
        sorted(map(json.dumps, map(strip, [d for d in test if d["kind"] != "Pod"])))


def test_post_sync_hook_lifetimes(helm, tmp_path):
    docs = render(helm, tmp_path, {"doctor": {"postSync": {"enabled": True}}})
    post = doctor_objects(docs, "argocd.argoproj.io/hook", "PostSync")
    assert sorted(d["kind"] for d in post) == sorted(
        ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Job"])
    for d in post:
        a = d["metadata"]["annotations"]
        # Plain Helm runs the same objects after install and upgrade (ArgoCD ignores helm.sh/hook when it has its own).
        assert a["helm.sh/hook"] == "post-install,post-upgrade"
        if d["kind"] == "Job":
            # After the RBAC (a later wave), kept until the next sync for its logs.
            assert a["argocd.argoproj.io/sync-wave"] == "0" and a["helm.sh/hook-weight"] == "0"
            assert a["argocd.argoproj.io/hook-delete-policy"] == "BeforeHookCreation"
            assert a["helm.sh/hook-delete-policy"] == "before-hook-creation"
        else:
            # The RBAC that can create pods: gone when the sync ends, succeeded or failed.
            assert a["argocd.argoproj.io/sync-wave"] == "-1" and a["helm.sh/hook-weight"] == "-1"
            assert set(a["argocd.argoproj.io/hook-delete-policy"].split(",")) == {
                "BeforeHookCreation", "HookSucceeded", "HookFailed"}
            assert set(a["helm.sh/hook-delete-policy"].split(",")) == {
                "before-hook-creation", "hook-succeeded", "hook-failed"}


def test_helm_test_rbac_is_deleted_whatever_the_result(helm, tmp_path):
    docs = render(helm, tmp_path, {}, tests=True)
    for d in doctor_objects(docs, "helm.sh/hook", "test"):
        if d["kind"] != "Pod":
            assert set(d["metadata"]["annotations"]["helm.sh/hook-delete-policy"].split(",")) == {
                "before-hook-creation", "hook-succeeded", "hook-failed"}, d["metadata"]


def selects(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


def test_doctor_pods_are_not_the_controllers(helm, tmp_path):
    """The controller's Services, PDB and NetworkPolicy select name + instance: the doctor's pods must not match,
    or the webhook Service would send admission requests to a pod that serves none."""
    docs = render(helm, tmp_path, deep_merge(NP, {"doctor": {"postSync": {"enabled": True}}}), tests=True)
    doctor_pods = [one(docs, "Pod")["metadata"]["labels"], one(docs, "Job")["spec"]["template"]["metadata"]["labels"]]
    selectors = [s["spec"]["selector"] for s in by_kind(docs, "Service")]
    selectors += [one(docs, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"],
                  one(docs, "NetworkPolicy")["spec"]["podSelector"]["matchLabels"]]
    controller = pod_meta(docs)["labels"]
    for sel in selectors:
        assert selects(sel, controller), sel
        for labels in doctor_pods:
            assert not selects(sel, labels), (sel, labels)


# ---------------------------------------------------------------------------------------------
# against the e2e API server

def test_server_dry_run_of_the_new_objects(helm, tmp_path, e2e):
    ns = f"lbc-defaults-dry-{secrets.token_hex(3)}"
    kubectl(e2e, "create", "namespace", ns)
    try:
        values = deep_merge(NP, {"doctor": {"postSync": {"enabled": True}},
                                 "oidcSecrets": {"namespaces": [ns], "secretNames": ["oidc"]}})
        docs = render(helm, tmp_path, values, release="dry", namespace=ns)
        wanted = [d for d in docs if d["kind"] in ("NetworkPolicy", "Role", "RoleBinding", "ServiceAccount",
                                                     "ClusterRole", "ClusterRoleBinding", "Deployment")
                  and d["metadata"].get("namespace", ns) == ns]
        # The Job's pod names the doctor's ServiceAccount, which a dry run does not create: apply it for real first.
        sa = next(d for d in docs if d["kind"] == "ServiceAccount" and d["metadata"]["name"].endswith("-doctor"))
        kubectl(e2e, "apply", "-f", "-", input=yaml.safe_dump(sa))
        job = one(docs, "Job")
        kubectl(e2e, "apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump_all(wanted + [job]))
    finally:
        kubectl(e2e, "delete", "namespace", ns, "--wait=false", check=False)


def helm_release(helm, tmp_path, e2e, ns, release, values, *args, background=False):
    """`helm install|upgrade|test` against the e2e API server. The post-renderer keeps only the controller's
    ServiceAccount of the release's own manifests (no webhook configuration may gate the shared cluster); Helm 3
    does not post-render hooks, so the doctor's hooks reach the API server exactly as the chart renders them."""
    post = tmp_path / "only-serviceaccounts"
    post.write_text(f"#!{sys.executable}\n"
                    "import sys, yaml\n"
                    "docs = [d for d in yaml.safe_load_all(sys.stdin) if d and d['kind'] == 'ServiceAccount']\n"
                    "sys.stdout.write(yaml.safe_dump_all(docs))\n")
    post.chmod(0o755)
    vf = tmp_path / f"values-{secrets.token_hex(3)}.yaml"
    vf.write_text(yaml.safe_dump(deep_merge(BASE_VALUES, values)))
    cmd = [helm, *args, "-n", ns, "-f", vf, "--post-renderer", post] if args[0] in ("install", "upgrade") else \
        [helm, *args, "-n", ns]
    if background:
        return subprocess.Popen([str(c) for c in cmd], env=e2e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
    return run(cmd, env=e2e, check=False)


def fail_pod(e2e, ns, select, timeout=90):
    """Plays the kubelet: the first pod matching `select` (kubectl -l) reports phase Failed. The pod itself never
    runs: its nodeSelector matches no node."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        names = kubectl(e2e, "get", "pods", "-n", ns, "-l", select, "-o", "name").stdout.split()
        if names:
            kubectl(e2e, "patch", names[0], "-n", ns, "--subresource=status", "--type=merge",
                    "-p", json.dumps({"status": {"phase": "Failed", "reason": "Error",
                                                 "message": "doctor: 1 check failed (injected by the test)"}}))
            return names[0]
        time.sleep(1)
    raise AssertionError(f"no pod matching {select} in {ns} after {timeout}s")


def doctor_rbac_left(e2e, ns, name):
    """The doctor's ServiceAccount and RBAC objects still present."""
    left = []
    for kind, where in (("serviceaccount", ns), ("clusterrole", None), ("clusterrolebinding", None),
                        ("role", "kube-system"), ("rolebinding", "kube-system")):
        args = ["get", kind, name, "--ignore-not-found", "-o", "name"] + (["-n", where] if where else [])
        if kubectl(e2e, *args).stdout.strip():
            left.append(kind)
    return left


def test_failed_doctor_runs_leave_no_rbac(helm, tmp_path, e2e):
    """A real `helm test`, then a real `helm upgrade` with the PostSync Job as a post-upgrade hook, each with its
    doctor pod failing: afterwards the doctor's ServiceAccount, ClusterRole(Binding) and Role(Binding) are gone
    and the pod (or Job) that failed is kept for its log."""
    suffix = secrets.token_hex(3)
    ns, release = f"lbc-hooks-{suffix}", f"hooks-{suffix}"
    name = f"{release}-aws-lb-controller-doctor"
    values = {"nodeSelector": {"lbc-e2e/no-such-node": "true"}}
    kubectl(e2e, "create", "namespace", ns)
    try:
        p = helm_release(helm, tmp_path, e2e, ns, release, values, "install", release, CHART, "--skip-crds")
        assert p.returncode == 0, p.stdout + p.stderr

        test = helm_release(helm, tmp_path, e2e, ns, release, values, "test", release, "--timeout", "120s",
                            background=True)
        pod = fail_pod(e2e, ns, "app.kubernetes.io/component=doctor")
        out, _ = test.communicate(timeout=150)
        assert test.returncode != 0 and "failed" in out, out
        assert doctor_rbac_left(e2e, ns, name) == [], f"helm test failed and left the doctor's RBAC:\n{out}"
        assert kubectl(e2e, "get", pod, "-n", ns, "-o", "jsonpath={.status.phase}").stdout == "Failed"

        upgrade = helm_release(helm, tmp_path, e2e, ns, release, deep_merge(values, {"doctor": {"postSync": {
            "enabled": True, "activeDeadlineSeconds": 120}}}), "upgrade", release, CHART, "--skip-crds",
            "--timeout", "150s", background=True)
        fail_pod(e2e, ns, f"job-name={name}")
        out, _ = upgrade.communicate(timeout=180)
        assert upgrade.returncode != 0 and "post-upgrade" in out, out
        assert doctor_rbac_left(e2e, ns, name) == [], f"the failed post-upgrade hook left the doctor's RBAC:\n{out}"
        conditions = json.loads(kubectl(e2e, "get", "job", name, "-n", ns, "-o", "json").stdout)["status"]["conditions"]
        assert any(c["type"] == "Failed" and c["status"] == "True" for c in conditions), conditions
    finally:
        helm_release(helm, tmp_path, e2e, ns, release, {}, "uninstall", release, "--no-hooks", "--wait=false")
        kubectl(e2e, "delete", "namespace", ns, "--wait=false", check=False)
        for kind, where in (("clusterrole", None), ("clusterrolebinding", None), ("role", "kube-system"),
                            ("rolebinding", "kube-system")):
            kubectl(e2e, "delete", kind, name, "--ignore-not-found", *(["-n", where] if where else []), check=False)


# ---------------------------------------------------------------------------------------------
# the ArgoCD Application of docs/install.md

def test_install_docs_application_fits_the_chart(helm, tmp_path):
    text = (CHART.parents[1] / "docs/install.md").read_text()
    apps = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "kind: Application" in b]
    assert len(apps) == 1, "docs/install.md: expected one ArgoCD Application"
    app = apps[0]
    assert app["apiVersion"] == "argoproj.io/v1alpha1" and app["spec"]["destination"]["namespace"] == "kube-system"
    assert (CHART.parents[1] / app["spec"]["source"]["path"] / "Chart.yaml").exists()
    assert "RespectIgnoreDifferences=true" in app["spec"]["syncPolicy"]["syncOptions"]
    ignored = {(d["group"], d["kind"]): d["jqPathExpressions"] for d in app["spec"]["ignoreDifferences"]}
    # Every webhook configuration the chart renders, and the field the cluster writes in them.
    docs = render(helm, tmp_path, {}, release=app["spec"]["source"]["helm"]["releaseName"])
    kinds = {("admissionregistration.k8s.io", d["kind"]) for d in docs if d["kind"].endswith("WebhookConfiguration")}
    assert set(ignored) == kinds == {("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
                                     ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration")}
    assert all(v == [".webhooks[]?.clientConfig.caBundle"] for v in ignored.values())
    assert all("clientConfig" in w for d in docs if d["kind"].endswith("WebhookConfiguration") for w in d["webhooks"])


# --------------------------------------------------------------------------------------------------------------------
# watchNamespace confines every webhook that acts for the controller's objects to that namespace

def webhooks_by_name(docs):
    return {w["name"]: w for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
            for w in one(docs, kind)["webhooks"]}


def test_watch_namespace_confines_the_service_and_binding_webhooks(helm, tmp_path):
    only = {"matchLabels": {"kubernetes.io/metadata.name": "apps"}}
    hooks = webhooks_by_name(render(helm, tmp_path, {"watchNamespace": "apps"}))
    # A Service elsewhere given our class would be reconciled by nobody; bindings elsewhere are not ours to
    # default or to block while we are down.
    for name in ("mservice.elbv2.k8s.aws", "mtargetgroupbinding.elbv2.k8s.aws", "vtargetgroupbinding.elbv2.k8s.aws",
                 "vingress.elbv2.k8s.aws"):
        assert hooks[name]["namespaceSelector"] == only, name
    # Without watchNamespace: no namespace restriction on them.
    hooks = webhooks_by_name(render(helm, tmp_path, {}))
    for name in ("mservice.elbv2.k8s.aws", "mtargetgroupbinding.elbv2.k8s.aws", "vtargetgroupbinding.elbv2.k8s.aws"):
        assert "namespaceSelector" not in hooks[name], name


def test_watch_namespace_keeps_the_service_webhooks_own_namespace_selectors(helm, tmp_path):
    mine = [{"key": "team", "operator": "In", "values": ["a"]}]
    hooks = webhooks_by_name(render(helm, tmp_path, {
        "watchNamespace": "apps", "serviceMutatorWebhookConfig": {"namespaceSelectors": mine}}))
    assert hooks["mservice.elbv2.k8s.aws"]["namespaceSelector"] == {
        "matchExpressions": mine, "matchLabels": {"kubernetes.io/metadata.name": "apps"}}
    hooks = webhooks_by_name(render(helm, tmp_path, {"serviceMutatorWebhookConfig": {"namespaceSelectors": mine}}))
    assert hooks["mservice.elbv2.k8s.aws"]["namespaceSelector"] == {"matchExpressions": mine}
