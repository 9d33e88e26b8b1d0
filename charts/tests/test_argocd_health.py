"""The ArgoCD health check for TargetGroupBinding (docs/argocd/targetgroupbinding-health.lua), run by a real Lua 5.1
interpreter the way ArgoCD runs it (charts/tests/argocd-health/run.lua: the binding in the global `obj`, only the
libraries ArgoCD opens for a custom check, the returned table read as status and message), against bindings
captured from the controller (charts/tests/argocd-health/capture.py; fixtures/*.json) and variants derived from
them. docs/argocd.md must carry the same script in its argocd-cm snippet.

lua5.1 is Debian's `lua5.1` package (e2e/test-all installs it). Without it these tests are skipped, unless
LBC_E2E_REQUIRED=1 (CI): then they fail.
"""
import copy
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from test_chart import REPO

SCRIPT = REPO / "docs/argocd/targetgroupbinding-health.lua"
HERE = REPO / "charts/tests/argocd-health"
FIXTURES = HERE / "fixtures"
STATUSES = {"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}


@pytest.fixture(scope="session")
def lua():
    b = os.environ.get("LBC_LUA_BIN") or shutil.which("lua5.1")
    if not b:
        why = "lua5.1 is not installed: apt-get install lua5.1 (ArgoCD's gopher-lua implements Lua 5.1)"
        if os.environ.get("LBC_E2E_REQUIRED") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return b


def lua_literal(v):
    """A JSON value as a Lua expression, as ArgoCD hands objects to Lua: maps as tables keyed by strings, lists
    as arrays from 1, null as nil."""
    if v is None:
        return "nil"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + "".join(c if c.isascii() and c.isprintable() and c not in '"\\' else
                             "".join(f"\\{b}" for b in c.encode()) for c in v) + '"'
    if isinstance(v, list):
        return "{" + ", ".join(lua_literal(x) for x in v) + "}"
    return "{" + ", ".join(f"[{lua_literal(k)}] = {lua_literal(x)}" for k, x in v.items() if x is not None) + "}"


def health(lua, tmp_path, obj, script=SCRIPT):
    """(status, message) of `script` for `obj`; fails on a Lua error or a non-table result."""
    f = tmp_path / "object.lua"
    f.write_text("return " + lua_literal(obj) + "\n")
    p = subprocess.run([lua, HERE / "run.lua", script, f], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, f"the health script failed ({p.returncode}): {p.stderr}"
    status, message = p.stdout.split("\n", 1)
    assert status in STATUSES, f"ArgoCD would read {status!r} as Unknown ('invalid health status')"
    return status, message.rstrip("\n")


def fixture(name):
    return json.loads((FIXTURES / f"{name}.json").read_text())


def ready_condition(obj):
    return next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")


# ---------------------------------------------------------------------------------------------
# bindings captured from the controller

def test_fixtures_are_captured_objects():
    meta = json.loads((FIXTURES / "capture.json").read_text())
    assert meta["script"] == "charts/tests/argocd-health/capture.py" and meta["kube_apiserver"].startswith("v1.")
    names = sorted(p.stem for p in FIXTURES.glob("*.json") if p.stem != "capture")
    assert names == sorted(CAPTURED), names
    for name in names:
        obj = fixture(name)
        assert obj["kind"] == "TargetGroupBinding" and obj["apiVersion"] == "elbv2.k8s.aws/v1beta1", name
        # Written by the API server, not by hand.
        assert obj["metadata"]["uid"] and obj["metadata"]["resourceVersion"] and obj["metadata"]["creationTimestamp"]
        assert "managedFields" not in obj["metadata"], name


CAPTURED = {
    # state: (status, the message from the object's own fields)
    "ready": ("Healthy", lambda o: f"{ready_condition(o)['message']}; {o['status']['healthyTargets']} healthy in AWS"),
    "deregister-all-refused": ("Degraded", lambda o: f"DeregisterAllRefused: {ready_condition(o)['message']}"),
    "service-not-found": ("Degraded", lambda o: f"ServiceNotFound: {ready_condition(o)['message']}"),
    "target-group-not-found": ("Degraded", lambda o: f"TargetGroupNotFound: {ready_condition(o)['message']}"),
    "new": ("Progressing", lambda o: "Waiting for the controller to reconcile the binding (no status yet)"),
    "spec-changed": ("Progressing",
                     lambda o: "Waiting for the controller to reconcile generation 2 (status is for generation 1)"),
    "deleting": ("Progressing",
                 lambda o: "Being deleted: the controller deregisters the binding's targets, then removes its finalizer"),
}


@pytest.mark.parametrize("name", CAPTURED)
def test_captured_binding(lua, tmp_path, name):
    obj = fixture(name)
    want_status, want_message = CAPTURED[name]
    assert health(lua, tmp_path, obj) == (want_status, want_message(obj))


def test_captured_messages_are_the_controllers():
    """The fixtures hold what the controller writes today (so the expectations above test real messages)."""
    assert ready_condition(fixture("ready"))["message"] == "2 targets registered for 2 endpoints"
    assert fixture("ready")["status"]["healthyTargets"] == 2
    assert "Service argocd-health/missing" in ready_condition(fixture("service-not-found"))["message"]
    assert "targetgroup/argocd-gone-" in ready_condition(fixture("target-group-not-found"))["message"]
    assert "status" not in fixture("new")
    assert fixture("deleting")["metadata"]["finalizers"] == ["elbv2.k8s.aws/resources"]


# ---------------------------------------------------------------------------------------------
# variants of the captured objects

def variant(name, edit):
    obj = copy.deepcopy(fixture(name))
    edit(obj)
    return obj


def test_ready_unknown_is_progressing(lua, tmp_path):
    def unknown(o):
        c = ready_condition(o)
        c.update(status="Unknown", reason="Reconciling", message="first pass")
    assert health(lua, tmp_path, variant("ready", unknown)) == ("Progressing", "Ready is Unknown: Reconciling first pass")


def test_stale_ready_condition_is_progressing(lua, tmp_path):
    def stale(o):
        o["metadata"]["generation"] = 3
        o["status"]["observedGeneration"] = 3
        ready_condition(o)["observedGeneration"] = 2
    assert health(lua, tmp_path, variant("ready", stale)) == (
        "Progressing", "Waiting for the controller to reconcile generation 3 (Ready is for generation 2)")


def test_without_health_counts_the_message_is_the_conditions(lua, tmp_path):
    def no_counts(o):
        del o["status"]["healthyTargets"]
    obj = variant("ready", no_counts)
    assert health(lua, tmp_path, obj) == ("Healthy", ready_condition(obj)["message"])


def test_albc_status_without_conditions(lua, tmp_path):
    """ALBC writes only status.observedGeneration: reconciled is Healthy, behind is Progressing."""
    def albc(o):
        o["status"] = {"observedGeneration": o["metadata"]["generation"]}
    obj = variant("ready", albc)
    assert health(lua, tmp_path, obj) == ("Healthy", "Reconciled generation 1 (the controller writes no Ready condition)")
    obj["metadata"]["generation"] = 2
    assert health(lua, tmp_path, obj)[0] == "Progressing"


def test_numbers_as_strings(lua, tmp_path):
    """ArgoCD hands a json.Number to Lua as a string: generations compare as numbers all the same."""
    def strings(o):
        o["metadata"]["generation"] = str(o["metadata"]["generation"])
        o["status"]["observedGeneration"] = str(o["status"]["observedGeneration"])
    assert health(lua, tmp_path, variant("spec-changed", strings)) == (
        "Progressing", "Waiting for the controller to reconcile generation 2 (status is for generation 1)")


def test_empty_object_does_not_error(lua, tmp_path):
    assert health(lua, tmp_path, {"metadata": {}})[0] == "Progressing"


# ---------------------------------------------------------------------------------------------
# the harness and the docs

def test_the_harness_has_no_string_library(lua, tmp_path):
    """ArgoCD opens no string library for custom checks: a script using it must fail here, as there."""
    for line in ('local n = string.len("x")', 'local n = ("x"):upper()'):
        bad = tmp_path / "bad.lua"
        bad.write_text(line + "\n" + SCRIPT.read_text())
        f = tmp_path / "object.lua"
        f.write_text("return " + lua_literal(fixture("ready")) + "\n")
        p = subprocess.run([lua, HERE / "run.lua", bad, f], capture_output=True, text=True, timeout=30)
        assert p.returncode == 2, (line, p.stdout, p.stderr)


def test_argocd_cm_snippet_in_the_docs_is_the_script():
    text = (REPO / "docs/argocd.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    cms = [yaml.safe_load(b) for b in blocks if "resource.customizations.health.elbv2.k8s.aws_TargetGroupBinding" in b]
    assert len(cms) == 1, "docs/argocd.md: expected one argocd-cm snippet with the TargetGroupBinding health check"
    cm = cms[0]
    assert cm["kind"] == "ConfigMap" and cm["metadata"]["name"] == "argocd-cm"
    assert cm["data"]["resource.customizations.health.elbv2.k8s.aws_TargetGroupBinding"] == SCRIPT.read_text(), \
        "docs/argocd.md's argocd-cm snippet differs from docs/argocd/targetgroupbinding-health.lua"
