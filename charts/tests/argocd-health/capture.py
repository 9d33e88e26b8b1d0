#!/usr/bin/env python3
"""Captures the TargetGroupBinding fixtures of test_argocd_health.py from a real run: the controller binary
against the local environment (e2e/up: kube-apiserver, kwok pods, the AWS emulator), each binding brought into
the state its fixture shows, then read back with `kubectl get -o json` (managedFields left out: ArgoCD's health
check never reads them). Nothing in a fixture is written by hand.

    LBC_E2E_PORT_OFFSET=100 e2e/up
    cargo build -p aws-lb-controller
    ~/.cache/aws-lb-controller/venv/bin/python charts/tests/argocd-health/capture.py [--binary PATH]

States, in namespace `argocd-health` (fixed names, so the messages are stable between captures):
  ready                   two pods behind Service web, Ready=True once both targets are healthy in AWS
  deregister-all-refused  the same binding after both pods turned unready: the controller refuses to
                          deregister every target while endpoints still exist (Ready=False)
  service-not-found       a binding naming Service `missing` (Ready=False, ServiceNotFound)
  target-group-not-found  a binding naming a target group deleted before the binding was created
                          (Ready=False, TargetGroupNotFound)
  new                     a binding created while the controller is stopped (no status yet)
  spec-changed            a Ready binding whose spec changed while the controller is stopped
                          (metadata.generation 2, status for generation 1)
  deleting                a Ready binding deleted while the controller is stopped (deletionTimestamp set,
                          the finalizer still there)
Writes charts/tests/argocd-health/fixtures/<state>.json and capture.json (when, from which commit and binary).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
FIXTURES = HERE / "fixtures"
NS = "argocd-health"


def log(msg):
    print(f"[capture] {msg}", file=sys.stderr, flush=True)


def load_env():
    env_file = Path(os.environ.get("LBC_E2E_ENV", REPO / "e2e/.run/env"))
    if not env_file.exists():
        sys.exit(f"no {env_file}: start the local environment first (LBC_E2E_PORT_OFFSET=100 e2e/up)")
    dump = subprocess.run(["bash", "-c", f"set -a; source '{env_file}'; env -0"], capture_output=True, text=True,
                          check=True).stdout
    return dict(kv.split("=", 1) for kv in dump.split("\0") if "=" in kv)


class Env:
    def __init__(self):
        self.vars = load_env()
        self.kubectl_bin = f"{self.vars['LBC_BIN_DIR']}/kubectl"

    def run(self, *cmd, input=None, check=True):
        p = subprocess.run([str(c) for c in cmd], env=self.vars, input=input, capture_output=True, text=True,
                           timeout=120)
        if check and p.returncode != 0:
            raise SystemExit(f"{' '.join(map(str, cmd))} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
        return p.stdout

    def kubectl(self, *args, **kw):
        return self.run(self.kubectl_bin, *args, **kw)

    def pods(self, *args):
        return self.run(REPO / "e2e/pods", *args)

    def binding(self, name):
        out = self.kubectl("get", "targetgroupbinding", name, "-n", NS, "-o", "json", "--ignore-not-found")
        return json.loads(out) if out.strip() else None

    def emulator(self, path, body):
        req = urllib.request.Request(f"{self.vars['LBC_AWS_ENDPOINT']}/_awsemu/{path}", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        return json.loads(urllib.request.urlopen(req, timeout=10).read())


def eventually(what, timeout, probe):
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(1)
    raise SystemExit(f"timed out after {timeout}s waiting for {what}; last: {last!r}")


def ready(tgb, status="True", reason=None):
    for c in (tgb or {}).get("status", {}).get("conditions", []):
        if c["type"] == "Ready" and c["status"] == status and (reason is None or c.get("reason") == reason):
            return True
    return False


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Controller:
    """The controller binary watching NS only, with file credentials and a self-signed webhook certificate."""

    def __init__(self, env: Env, binary: Path, work: Path):
        self.env, self.binary, self.work, self.proc = env, binary, work, None
        certs = work / "certs"
        certs.mkdir(exist_ok=True)
        env.run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", certs / "tls.key", "-out", certs / "tls.crt")
        (work / "aws-credentials").write_text("[default]\naws_access_key_id = testing\naws_secret_access_key = testing\n")

    def start(self):
        v, endpoint = self.env.vars, self.env.vars["LBC_AWS_ENDPOINT"]
        self.log = open(self.work / "controller.log", "a")
        self.proc = subprocess.Popen([
            self.binary, f"--cluster-name={v['LBC_CLUSTER_NAME']}", f"--aws-region={v['AWS_REGION']}",
            f"--aws-vpc-id={v['LBC_VPC_ID']}",
            f"--aws-api-endpoints=Elastic Load Balancing v2={endpoint},EC2={endpoint},ACM={endpoint},WAFV2={endpoint}",
            f"--watch-namespace={NS}", f"--leader-election-namespace={NS}",
            f"--metrics-bind-addr=127.0.0.1:{free_port()}", f"--health-probe-bind-addr=127.0.0.1:{free_port()}",
            "--webhook-bind-host=127.0.0.1", f"--webhook-bind-port={free_port()}",
            f"--webhook-cert-dir={self.work / 'certs'}", f"--kubeconfig={v['KUBECONFIG']}",
            "--targetgroupbinding-requeue-duration=1s",
            "--aws-credentials-source=file", f"--aws-credentials-file={self.work / 'aws-credentials'}",
        ], env=v, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def alive(self):
        if self.proc.poll() is not None:
            raise SystemExit(f"controller exited {self.proc.returncode}: see {self.work / 'controller.log'}")
        return True

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self.proc = None


def binding_doc(name, arn, service="web"):
    return {"apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"targetGroupARN": arn, "targetType": "ip", "serviceRef": {"name": service, "port": 80}}}


def save(env: Env, state, name):
    obj = env.binding(name)
    obj["metadata"].pop("managedFields", None)
    (FIXTURES / f"{state}.json").write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")
    log(f"saved {state}: {json.dumps(obj.get('status'))}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    target = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache/aws-lb-controller/target"))
    ap.add_argument("--binary", type=Path,
                    default=Path(os.environ.get("LBC_CONTROLLER_BIN", target / "debug/aws-lb-controller")))
    a = ap.parse_args()
    if not a.binary.exists():
        sys.exit(f"{a.binary} not found: cargo build -p aws-lb-controller, or pass --binary")
    import boto3

    env = Env()
    elb = boto3.client("elbv2", endpoint_url=env.vars["LBC_AWS_ENDPOINT"], region_name=env.vars["AWS_REGION"],
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    work = Path(tempfile.mkdtemp(prefix="argocd-health-"))
    ctl = Controller(env, a.binary, work)
    suffix, arns = secrets.token_hex(3), {}
    FIXTURES.mkdir(exist_ok=True)
    try:
        env.kubectl("delete", "namespace", NS, "--ignore-not-found", "--wait=true", "--timeout=120s")
        env.kubectl("create", "namespace", NS)
        env.pods("create", NS, "web", "--replicas", "2", "--port", "8080")
        env.pods("service", NS, "web", "--port", "80", "--target-port", "8080")
        for name in ("ready", "missing-svc", "gone", "new", "changed", "deleting"):
            tg = elb.create_target_group(Name=f"argocd-{name}-{suffix}", Protocol="TCP", Port=8080,
                                         VpcId=env.vars["LBC_VPC_ID"], TargetType="ip",
                                         HealthCheckIntervalSeconds=5, HealthCheckTimeoutSeconds=4)
            arns[name] = tg["TargetGroups"][0]["TargetGroupArn"]
            env.emulator("health-policy", {"scope": "target_group", "target_group_arn": arns[name],
                                           "initial_seconds": 1.0, "then": "healthy"})
        gone = arns.pop("gone")
        elb.delete_target_group(TargetGroupArn=gone)

        docs = [binding_doc("web", arns["ready"]), binding_doc("missing-service", arns["missing-svc"], "missing"),
                binding_doc("missing-target-group", gone), binding_doc("changed", arns["changed"]),
                binding_doc("deleting", arns["deleting"])]
        env.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
        ctl.start()

        def healthy(name, want=2):
            t = env.binding(name)
            return ctl.alive() and ready(t) and t["status"].get("healthyTargets") == want and t

        for name in ("web", "changed", "deleting"):
            eventually(f"{name} Ready=True with 2 healthy targets", 120, lambda: healthy(name))
        save(env, "ready", "web")
        eventually("missing-service ServiceNotFound", 60,
                   lambda: ctl.alive() and ready(env.binding("missing-service"), "False", "ServiceNotFound"))
        save(env, "service-not-found", "missing-service")
        eventually("missing-target-group TargetGroupNotFound", 60,
                   lambda: ctl.alive() and ready(env.binding("missing-target-group"), "False", "TargetGroupNotFound"))
        save(env, "target-group-not-found", "missing-target-group")

        for pod in ("web-0", "web-1"):
            env.pods("set-ready", NS, pod, "false")
        eventually("web DeregisterAllRefused", 60,
                   lambda: ctl.alive() and ready(env.binding("web"), "False", "DeregisterAllRefused"))
        save(env, "deregister-all-refused", "web")
        for pod in ("web-0", "web-1"):
            env.pods("set-ready", NS, pod, "true")
        eventually("web Ready=True again", 60, lambda: healthy("web"))

        # With the controller stopped: a new binding, a spec change, a deletion.
        ctl.stop()
        env.kubectl("apply", "-f", "-", input=json.dumps(binding_doc("new", arns["new"])))
        env.kubectl("patch", "targetgroupbinding", "changed", "-n", NS, "--type=merge",
                    "-p", json.dumps({"spec": {"ipAddressType": "ipv4"}}))
        env.kubectl("delete", "targetgroupbinding", "deleting", "-n", NS, "--wait=false")
        time.sleep(2)
        save(env, "new", "new")
        changed = env.binding("changed")
        assert changed["metadata"]["generation"] == 2 and changed["status"]["observedGeneration"] == 1, changed
        save(env, "spec-changed", "changed")
        deleting = env.binding("deleting")
        assert deleting["metadata"].get("deletionTimestamp") and deleting["metadata"].get("finalizers"), deleting
        save(env, "deleting", "deleting")

        revision = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                                  text=True).stdout.strip()
        version = json.loads(env.kubectl("version", "-o", "json"))["serverVersion"]["gitVersion"]
        (FIXTURES / "capture.json").write_text(json.dumps({
            "captured_at": datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat(),
            "repository_head": revision,
            "controller_version": subprocess.run([a.binary, "--version"], capture_output=True, text=True).stdout.strip(),
            "controller_binary_mtime": datetime.datetime.fromtimestamp(
                a.binary.stat().st_mtime, datetime.timezone.utc).replace(microsecond=0).isoformat(),
            "kube_apiserver": version, "script": "charts/tests/argocd-health/capture.py"}, indent=2) + "\n")

        # Clean up with the controller running, so finalizers deregister and go.
        ctl.start()
        env.kubectl("delete", "targetgroupbindings", "--all", "-n", NS, "--wait=true", "--timeout=120s")
    finally:
        ctl.stop()
        env.run(REPO / "e2e/pods", "delete", NS, "web", check=False)
        env.kubectl("delete", "namespace", NS, "--wait=false", "--ignore-not-found", check=False)
        for arn in arns.values():
            try:
                elb.delete_target_group(TargetGroupArn=arn)
            except Exception as e:  # noqa: BLE001 - best-effort cleanup; report and go on
                log(f"could not delete {arn}: {e}")
    log(f"fixtures in {FIXTURES}; controller log in {work / 'controller.log'}")


if __name__ == "__main__":
    main()
