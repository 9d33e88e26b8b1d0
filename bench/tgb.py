#!/usr/bin/env python3
"""TargetGroupBinding benchmark: the controller's hot path on the local e2e environment.

    e2e/up && source e2e/.run/env
    cargo build --release -p aws-lb-controller
    $LBC_VENV/bin/python bench/tgb.py --pods 1000 --groups 10 [--runs 3]

Per run, from nothing: a private AWS emulator (its own port; the shared one on 4566 is left alone), a VPC and
G IP target groups in it, a namespace with G Services, P pods spread over fake kwok nodes of our own (pod CIDRs
carved from 10.0.192.0/18 inside the VPC, pod IPs given through the `lbc-e2e/pod-ip` annotation), and G
TargetGroupBindings. Then, with the release controller binary:

  1. cold start: controller started with everything present -> every target group holds every pod IP
     (from the emulator's call log); AWS calls vs the floor sum(ceil(targets/batch)) + reads;
  2. scale up each set by --change-pct: per-target latency from the endpoint turning ready in an EndpointSlice
     (our own watch, in a separate process) to the RegisterTargets call naming it (emulator arrival time);
     the controller's own histogram; write calls vs sum(ceil(added/batch));
  3. scale down the same pods: endpoint turning terminating -> DeregisterTargets naming it; same figures;
  4. peak (VmHWM) and steady (VmRSS) memory of the controller process, CPU seconds per phase;
  5. warm restart: SIGTERM, start again, time to /readyz and to leadership, AWS calls in the 30 s after ready.

Medians over runs of several invocations: `bench/tgb.py report bench/results/*-p10000-g10-r*/summary.json`.

Everything binds 127.0.0.1. Everything the run creates (namespace, nodes, target groups, emulator, controller,
watcher) is removed at the end, also on error or Ctrl-C. Results: printed, plus bench/results/<run>/ (summary
JSON, call log, controller logs). Every wait is bounded (--phase-timeout, --max-seconds).
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import http.client
import ipaddress
import json
import math
import os
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "e2e", "scripts"))
from kubeapi import load_env  # noqa: E402

NODE_POOL = "10.0.192.0/18"      # inside the VPC, outside the seeded subnets
KWOK_FALLBACK = "10.0.252.0/22"  # kwok's own --cidr (e2e/up): never hand it out
TARGET_PORT = 8080
SERVICE_PORT = 80
BATCH = 200
CLUSTER = "lbc-bench"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Deadline(Exception):
    pass


# ----------------------------------------------------------------------------------------------------------------
# Kubernetes: a small client with one persistent TLS connection per thread
# ----------------------------------------------------------------------------------------------------------------

class KubeError(Exception):
    def __init__(self, status: int, body: bytes, method: str, path: str):
        self.status = status
        super().__init__(f"{method} {path} -> {status}: {body[:300]!r}")


class Kube:
    def __init__(self, env: dict[str, str]):
        u = urllib.parse.urlparse(env["LBC_KUBE_SERVER"])
        self.host, self.port = u.hostname, u.port or 443
        self.token = env["LBC_ADMIN_TOKEN"]
        self.ctx = ssl.create_default_context(cafile=env["LBC_KUBE_CA_FILE"])
        self.local = threading.local()

    def connect(self, timeout: float = 60) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def headers(self, ctype: str | None = None) -> dict[str, str]:
        h = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if ctype:
            h["Content-Type"] = ctype
        return h

    def req(self, method: str, path: str, body: Any = None, ctype: str = "application/json",
            ok404: bool = False) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        for attempt in range(5):
            c = getattr(self.local, "c", None)
            if c is None:
                c = self.local.c = self.connect()
            try:
                c.request(method, path, body=data, headers=self.headers(ctype if data is not None else None))
                r = c.getresponse()
                raw = r.read()
            except (http.client.HTTPException, OSError):
                c.close()
                self.local.c = None
                if attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))
                continue
            if r.status == 404 and ok404:
                return None
            if r.status == 429 or r.status >= 500:
                time.sleep(0.2 * (attempt + 1))
                continue
            if r.status >= 400:
                raise KubeError(r.status, raw, method, path)
            return json.loads(raw) if raw else None
        raise KubeError(599, b"retries exhausted", method, path)


# ----------------------------------------------------------------------------------------------------------------
# EndpointSlice watcher (separate process: its timestamps must not wait on this process's threads)
# ----------------------------------------------------------------------------------------------------------------

def watch_main(ns: str, out_path: str) -> None:
    """Writes one JSON line per change of an endpoint address's aggregated state in namespace `ns`:
    {"t": unix, "ip": ..., "svc": ..., "s": "ready"|"terminating"|"notready"|"gone"}."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    env = load_env()
    kube = Kube(env)
    out = open(out_path, "a", buffering=1)
    slices: dict[str, dict[str, str]] = {}   # slice name -> {ip: state}
    svc_of: dict[str, str] = {}              # slice name -> service
    where: dict[str, set[str]] = {}          # ip -> slices holding it
    last: dict[str, str] = {}                # ip -> last emitted state
    base = f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"

    def ep_state(ep: dict) -> str:
        c = ep.get("conditions") or {}
        if c.get("ready", True) is True:   # nil ready means ready (API doc)
            return "ready"
        return "terminating" if c.get("terminating") else "notready"

    def aggregate(ip: str) -> str:
        states = {slices[s][ip] for s in where.get(ip, ()) if ip in slices.get(s, {})}
        for s in ("ready", "terminating", "notready"):
            if s in states:
                return s
        return "gone"

    def apply(name: str, obj: dict | None, t: float) -> None:
        old = slices.pop(name, {})
        new: dict[str, str] = {}
        if obj is not None:
            svc_of[name] = (obj["metadata"].get("labels") or {}).get("kubernetes.io/service-name", "")
            for ep in obj.get("endpoints") or []:
                for a in ep.get("addresses") or []:
                    new[a] = ep_state(ep)
            slices[name] = new
        for ip in old.keys() - new.keys():
            where.get(ip, set()).discard(name)
        for ip in new:
            where.setdefault(ip, set()).add(name)
        lines = []
        for ip in old.keys() | new.keys():
            s = aggregate(ip)
            if last.get(ip) != s:
                last[ip] = s
                lines.append(json.dumps({"t": t, "ip": ip, "svc": svc_of.get(name, ""), "s": s}))
        if lines:
            out.write("\n".join(lines) + "\n")

    def relist() -> str:
        lst = kube.req("GET", base)
        t = time.time()
        seen = set()
        for s in lst["items"]:
            seen.add(s["metadata"]["name"])
            apply(s["metadata"]["name"], s, t)
        for name in list(slices):
            if name not in seen:
                apply(name, None, t)
        return lst["metadata"]["resourceVersion"]

    def on_event(typ: str, obj: dict, t: float) -> None:
        if typ in ("ADDED", "MODIFIED"):
            apply(obj["metadata"]["name"], obj, t)
        elif typ == "DELETED":
            apply(obj["metadata"]["name"], None, t)

    # TargetGroupBinding writes (each MODIFIED event is one effective write by the controller: status,
    # checkpoint annotation, finalizer), to count Kubernetes writes per change.
    tgb_out = open(out_path.replace("slices.jsonl", "tgbs.jsonl"), "a", buffering=1)

    def tgb_relist() -> str:
        lst = kube.req("GET", f"/apis/elbv2.k8s.aws/v1beta1/namespaces/{ns}/targetgroupbindings")
        return lst["metadata"]["resourceVersion"]

    def tgb_event(typ: str, obj: dict, t: float) -> None:
        md, st = obj.get("metadata") or {}, obj.get("status") or {}
        cp = (md.get("annotations") or {}).get("elbv2.k8s.aws/checkpoint")
        tgb_out.write(json.dumps({"t": t, "type": typ, "name": md.get("name"), "rv": md.get("resourceVersion"),
                                  "checkpoint": cp[-8:] if cp else None,
                                  "registered": st.get("registeredTargets"),
                                  "finalizers": len(md.get("finalizers") or [])}) + "\n")

    threading.Thread(target=watch_loop, daemon=True,
                     args=(Kube(env), f"/apis/elbv2.k8s.aws/v1beta1/namespaces/{ns}/targetgroupbindings",
                           tgb_relist, tgb_event)).start()
    rv = relist()
    out.write(json.dumps({"t": time.time(), "synced": True}) + "\n")
    watch_loop(kube, base, relist, on_event, rv)


def watch_loop(kube: Kube, base: str, relist, on_event, rv: str | None = None) -> None:
    """Follows `base` forever from `rv` (relisting on expiry), calling on_event(type, object, time)."""
    if rv is None:
        rv = relist()
    while True:
        conn = kube.connect(timeout=330)
        try:
            conn.request("GET", f"{base}?watch=1&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion={rv}",
                         headers=kube.headers())
            r = conn.getresponse()
            if r.status != 200:
                r.read()
                rv = relist()
                continue
            while True:
                line = r.readline()
                if not line:
                    break
                t = time.time()
                ev = json.loads(line)
                typ, obj = ev.get("type"), ev.get("object") or {}
                if typ == "ERROR":
                    rv = relist()
                    break
                rv = obj.get("metadata", {}).get("resourceVersion", rv)
                if typ != "BOOKMARK":
                    on_event(typ, obj, t)
        except (OSError, http.client.HTTPException, ValueError):
            time.sleep(0.5)
        finally:
            conn.close()


class SliceEvents:
    """Reads the watcher's output as it grows: first time each IP reached each state."""

    def __init__(self, path: str):
        self.path = path
        self.pos = 0
        self.synced = False
        self.state: dict[str, str] = {}
        self.first: dict[str, dict[str, float]] = {}   # ip -> state -> first time
        self.buf = ""

    def poll(self) -> None:
        try:
            with open(self.path) as f:
                f.seek(self.pos)
                chunk = f.read()
                self.pos = f.tell()
        except FileNotFoundError:
            return
        self.buf += chunk
        *lines, self.buf = self.buf.split("\n")
        for line in lines:
            if not line:
                continue
            e = json.loads(line)
            if e.get("synced"):
                self.synced = True
                continue
            self.state[e["ip"]] = e["s"]
            self.first.setdefault(e["ip"], {}).setdefault(e["s"], e["t"])

    def ready_ips(self) -> set[str]:
        return {ip for ip, s in self.state.items() if s == "ready"}

    def first_time(self, ip: str, states: tuple[str, ...], after: float) -> float | None:
        ts = [t for s, t in self.first.get(ip, {}).items() if s in states and t >= after]
        return min(ts) if ts else None


# ----------------------------------------------------------------------------------------------------------------
# AWS emulator (private instance) and its call log
# ----------------------------------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url: str, timeout: float = 10) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (urllib.error.URLError, OSError):
        return 0, b""


class CallLog:
    def __init__(self, url: str):
        self.url = url
        self.since = 0
        self.calls: list[dict] = []
        self.registered: dict[str, set[str]] = {}   # TG ARN -> target ids as per successful calls

    def poll(self) -> None:
        st, raw = http_get(f"{self.url}/_awsemu/calls?since={self.since}", timeout=30)
        if st != 200:
            return
        out = json.loads(raw)
        for c in out["calls"]:
            self.calls.append(c)
            if c["outcome"] == "ok" and c.get("target_ids"):
                s = self.registered.setdefault(c["target_group_arn"], set())
                if c["operation"] == "RegisterTargets":
                    s.update(c["target_ids"])
                elif c["operation"] == "DeregisterTargets":
                    s.difference_update(c["target_ids"])
        if out["calls"]:
            self.since = out["calls"][-1]["seq"]

    def last_seq(self) -> int:
        self.poll()
        return self.since

    def between(self, seq_from: int, seq_to: int | None = None) -> list[dict]:
        return [c for c in self.calls if c["seq"] > seq_from and (seq_to is None or c["seq"] <= seq_to)]


def by_op(calls: list[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in calls:
        key = c["operation"] + ("" if c["outcome"] == "ok" else f"!{c['error_code']}")
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


def first_call_time(calls: list[dict], op: str) -> dict[str, float]:
    """target id -> arrival time of the first successful `op` call naming it."""
    out: dict[str, float] = {}
    for c in calls:
        if c["operation"] == op and c["outcome"] == "ok":
            for t in c.get("target_ids") or []:
                out.setdefault(t, c["received"])
    return out


# ----------------------------------------------------------------------------------------------------------------
# Controller process
# ----------------------------------------------------------------------------------------------------------------

def proc_status(pid: int) -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM"):
                    out[k] = int(v.split()[0]) * 1024
    except OSError:
        pass
    return out


def proc_cpu(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


class Controller:
    def __init__(self, binary: str, args: list[str], env: dict[str, str], log_path: str):
        self.metrics_port, self.health_port = free_port(), free_port()
        self.log_path = log_path
        self.logf = open(log_path, "ab")
        self.t_start = time.time()
        self.p = subprocess.Popen(
            [binary, *args, f"--metrics-bind-addr=127.0.0.1:{self.metrics_port}",
             f"--health-probe-bind-addr=127.0.0.1:{self.health_port}"],
            env=env, stdin=subprocess.DEVNULL, stdout=self.logf, stderr=subprocess.STDOUT)
        self.rss_max = 0
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.25):
            self.rss_max = max(self.rss_max, proc_status(self.p.pid).get("VmRSS", 0))

    def alive(self) -> bool:
        return self.p.poll() is None

    def ready(self) -> bool:
        return http_get(f"http://127.0.0.1:{self.health_port}/readyz", timeout=2)[0] == 200

    def metrics(self) -> dict[str, float]:
        st, raw = http_get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10)
        out: dict[str, float] = {}
        if st != 200:
            return out
        for line in raw.decode().splitlines():
            if not line or line.startswith("#"):
                continue
            k, _, v = line.rpartition(" ")
            try:
                out[k] = float(v)
            except ValueError:
                pass
        return out

    def wait(self, what: str, fn, timeout: float, interval: float = 0.05) -> float:
        t0 = time.time()
        while not fn():
            if not self.alive():
                raise RuntimeError(f"controller exited (rc {self.p.returncode}) waiting for {what}; see {self.log_path}")
            if time.time() - t0 > timeout:
                raise Deadline(f"timeout after {timeout:.0f}s waiting for {what}")
            time.sleep(interval)
        return time.time()

    def stop(self, timeout: float = 20) -> float:
        """SIGTERM, wait; SIGKILL after `timeout`. Returns seconds to exit."""
        t0 = time.time()
        if self.alive():
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(5)
        self._stop.set()
        self.logf.close()
        return time.time() - t0


def hist(metrics: dict[str, float], name: str) -> tuple[list[tuple[float, float]], float, float]:
    """Cumulative buckets [(le, count)], count, sum of a histogram from parsed /metrics."""
    buckets = []
    for k, v in metrics.items():
        if k.startswith(name + "_bucket{"):
            le = k.split('le="', 1)[1].split('"', 1)[0]
            buckets.append((math.inf if le == "+Inf" else float(le), v))
    buckets.sort()
    return buckets, metrics.get(name + "_count", 0.0), metrics.get(name + "_sum", 0.0)


def hist_delta_quantiles(before: dict, after: dict, name: str) -> dict[str, Any]:
    b0, c0, s0 = hist(before, name)
    b1, c1, s1 = hist(after, name)
    n = c1 - c0
    if n <= 0:
        return {"observations": 0}
    d0 = dict(b0)
    cum = [(le, v - d0.get(le, 0.0)) for le, v in b1]

    def q(p: float) -> float:
        for le, v in cum:
            if v >= p * n:
                return le
        return math.inf
    return {"observations": int(n), "mean_s": (s1 - s0) / n, "p50_le_s": q(0.5), "p99_le_s": q(0.99)}


def counter_sum(metrics: dict[str, float], prefix: str) -> float:
    return sum(v for k, v in metrics.items() if k.startswith(prefix))


# ----------------------------------------------------------------------------------------------------------------
# Statistics
# ----------------------------------------------------------------------------------------------------------------

def pct(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(p * len(s)) - 1))]


def lat_summary(xs: list[float]) -> dict[str, float]:
    return {"n": len(xs), "p50_ms": pct(xs, 0.5) * 1000, "p90_ms": pct(xs, 0.9) * 1000,
            "p99_ms": pct(xs, 0.99) * 1000, "max_ms": (max(xs) if xs else float("nan")) * 1000}


# ----------------------------------------------------------------------------------------------------------------
# One benchmark run
# ----------------------------------------------------------------------------------------------------------------

class Run:
    def __init__(self, opts: argparse.Namespace, env: dict[str, str], run_id: str, out_dir: str):
        self.o = opts
        self.env = env
        self.id = run_id
        self.out = out_dir
        os.makedirs(out_dir, exist_ok=True)
        self.kube = Kube(env)
        self.ns = f"lbc-bench-{run_id}"
        self.node_label = f"lbc-bench/run={run_id}"
        self.t_end = time.time() + opts.max_seconds
        self.emu: subprocess.Popen | None = None
        self.watcher: subprocess.Popen | None = None
        self.ctrl: Controller | None = None
        self.tgs: list[str] = []
        self.nodes: list[tuple[str, list[str]]] = []   # (name, free IPs)
        self.pods: dict[int, list[tuple[str, str]]] = {}  # set -> [(pod name, ip)]
        self.next_idx: dict[int, int] = {}
        self.node_rr = 0
        self.result: dict[str, Any] = {"run": run_id, "pods": opts.pods, "groups": opts.groups}

    # ---- helpers -------------------------------------------------------------------------------------------------
    def left(self, cap: float) -> float:
        rem = self.t_end - time.time()
        if rem <= 0:
            raise Deadline(f"--max-seconds {self.o.max_seconds} exceeded")
        return min(cap, rem)

    def until(self, what: str, fn, timeout: float, interval: float = 0.2) -> None:
        timeout = self.left(timeout)
        t0 = time.time()
        while not fn():
            if self.ctrl and not self.ctrl.alive():
                raise RuntimeError(f"controller exited (rc {self.ctrl.p.returncode}); see {self.ctrl.log_path}")
            if time.time() - t0 > timeout:
                raise Deadline(f"timeout after {timeout:.0f}s waiting for {what}")
            time.sleep(interval)

    def parallel(self, fn, items, workers: int | None = None) -> None:
        """fn over items on a thread pool; the first error cancels what has not started and is raised."""
        ex = cf.ThreadPoolExecutor(workers or self.o.workers)
        try:
            for f in [ex.submit(fn, i) for i in items]:
                f.result()
        finally:
            ex.shutdown(wait=True, cancel_futures=True)

    # ---- setup ---------------------------------------------------------------------------------------------------
    def start_emulator(self) -> None:
        port = free_port()
        self.emu_url = f"http://127.0.0.1:{port}"
        cmd = [os.path.join(self.env["LBC_VENV"], "bin", "python"), os.path.join(REPO, "e2e/emulator/awsemu.py"),
               "--host", "127.0.0.1", "--port", str(port)]
        if self.o.emulator_no_serialize:
            cmd.append("--no-serialize")
        self.emu = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=open(f"{self.out}/awsemu.log", "ab"),
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.until("AWS emulator", lambda: http_get(f"{self.emu_url}/_awsemu/healthz", 1)[0] == 200, 60)
        self.calls = CallLog(self.emu_url)
        import boto3
        from botocore.config import Config
        kw = dict(endpoint_url=self.emu_url, region_name="us-east-1", aws_access_key_id="testing",
                  aws_secret_access_key="testing", config=Config(retries={"total_max_attempts": 1}))
        self.ec2 = boto3.client("ec2", **kw)
        self.elb = boto3.client("elbv2", **kw)
        self.vpc = self.ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        for k in range(self.o.groups):
            tg = self.elb.create_target_group(
                Name=f"bench-{self.id}-{k:02d}", Protocol="TCP", Port=TARGET_PORT, VpcId=self.vpc, TargetType="ip",
                HealthCheckIntervalSeconds=10)["TargetGroups"][0]["TargetGroupArn"]
            self.tgs.append(tg)
        log(f"emulator {self.emu_url} (pid {self.emu.pid}): VPC {self.vpc}, {len(self.tgs)} target groups")

    def start_watcher(self) -> None:
        path = f"{self.out}/slices.jsonl"
        self.watcher = subprocess.Popen([sys.executable, os.path.abspath(__file__), "_watch", self.ns, path],
                                        stdin=subprocess.DEVNULL, stderr=open(f"{self.out}/watcher.log", "ab"),
                                        start_new_session=True)
        self.slices = SliceEvents(path)

        def synced():
            self.slices.poll()
            return self.slices.synced
        self.until("EndpointSlice watcher", synced, 60)

    def make_nodes(self, total_pods: int) -> None:
        per = self.o.pods_per_node
        prefix = 32 - math.ceil(math.log2(per + 2))
        fallback = ipaddress.ip_network(KWOK_FALLBACK)
        cidrs = [c for c in ipaddress.ip_network(NODE_POOL).subnets(new_prefix=prefix) if not c.overlaps(fallback)]
        need = math.ceil(total_pods / per)
        if need > len(cidrs):
            raise SystemExit(f"{total_pods} pods at {per} per node need {need} nodes; {NODE_POOL} holds {len(cidrs)}"
                             " (raise --pods-per-node)")
        zones = ["us-east-1a", "us-east-1b", "us-east-1c"]

        def mk(i: int) -> None:
            cidr = cidrs[i]
            name = f"lbc-bench-{self.id}-{i:03d}"
            hosts = [str(h) for h in cidr.hosts()]
            self.kube.req("POST", "/api/v1/nodes", {
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name,
                             "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                             "labels": {"lbc-bench/run": self.id, "kubernetes.io/hostname": name,
                                        "kubernetes.io/os": "linux", "type": "kwok",
                                        "topology.kubernetes.io/zone": zones[i % 3],
                                        "topology.kubernetes.io/region": "us-east-1"}},
                "spec": {"podCIDR": str(cidr), "podCIDRs": [str(cidr)]},
                "status": {"addresses": [{"type": "InternalIP", "address": hosts[0]},
                                         {"type": "Hostname", "address": name}]}})
            self.nodes_by_idx[i] = (name, hosts[1:per + 1])
        self.nodes_by_idx: dict[int, tuple[str, list[str]]] = {}
        self.parallel(mk, range(need))
        self.nodes = [self.nodes_by_idx[i] for i in range(need)]

        def ready() -> bool:
            items = self.kube.req("GET", f"/api/v1/nodes?labelSelector=lbc-bench%2Frun%3D{self.id}")["items"]
            return len(items) == need and all(
                any(c["type"] == "Ready" and c["status"] == "True" for c in (n.get("status") or {}).get("conditions") or [])
                for n in items)
        self.until(f"{need} fake nodes Ready (kwok)", ready, 120, 0.5)
        log(f"{need} fake nodes (/{prefix} pod CIDRs from {NODE_POOL}, {per} pods each)")

    def alloc(self, k: int, n: int) -> list[tuple[str, str, str]]:
        """n new pods for set k: (pod name, ip, node)."""
        out = []
        for _ in range(n):
            for _ in range(len(self.nodes)):
                name, free = self.nodes[self.node_rr % len(self.nodes)]
                self.node_rr += 1
                if free:
                    break
            else:
                raise SystemExit("out of pod addresses")
            i = self.next_idx.get(k, 0)
            self.next_idx[k] = i + 1
            out.append((f"s{k:02d}-{i:05d}", free.pop(0), name))
        return out

    def create_pods(self, k_n: dict[int, int]) -> set[str]:
        todo = []
        for k, n in k_n.items():
            for pod, ip, node in self.alloc(k, n):
                todo.append((k, pod, ip, node))
                self.pods.setdefault(k, []).append((pod, ip))
        # interleave the sets so every target group changes at the same time
        todo.sort(key=lambda x: (int(x[1].rsplit("-", 1)[1]), x[0]))

        def mk(item):
            k, pod, ip, node = item
            self.kube.req("POST", f"/api/v1/namespaces/{self.ns}/pods", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": pod, "labels": {"app": f"bench-{k:02d}"}, "annotations": {"lbc-e2e/pod-ip": ip}},
                "spec": {"nodeName": node, "automountServiceAccountToken": False, "enableServiceLinks": False,
                         "terminationGracePeriodSeconds": 30,
                         "containers": [{"name": "app", "image": "lbc-bench/app:1",
                                         "ports": [{"name": "http", "containerPort": TARGET_PORT}]}]}})
        self.parallel(mk, todo)
        return {ip for _, _, ip, _ in todo}

    def delete_pods(self, k_n: dict[int, int]) -> set[str]:
        todo = []
        for k, n in k_n.items():
            for _ in range(n):
                todo.append(self.pods[k].pop())
        self.parallel(lambda pi: self.kube.req("DELETE", f"/api/v1/namespaces/{self.ns}/pods/{pi[0]}", ok404=True),
                      todo)
        return {ip for _, ip in todo}

    def desired(self) -> dict[str, set[str]]:
        return {self.tgs[k]: {f"{ip}:{TARGET_PORT}" for _, ip in self.pods.get(k, [])} for k in range(self.o.groups)}

    def wait_slices(self, want_ready: set[str], want_absent: set[str], timeout: float) -> None:
        def ok():
            self.slices.poll()
            r = self.slices.ready_ips()
            return want_ready <= r and not (want_absent & r)

        def missing():
            r = self.slices.ready_ips()
            return f"{len(want_ready - r)} endpoints not ready yet"
        try:
            self.until("endpoints in EndpointSlices", ok, timeout, 0.5)
        except Deadline as e:
            raise Deadline(f"{e}: {missing()}") from None

    def tgb_writes(self, t0: float, t1: float) -> int:
        """TargetGroupBinding updates (MODIFIED watch events) seen between t0 and t1."""
        n = 0
        try:
            with open(f"{self.out}/tgbs.jsonl") as f:
                for line in f:
                    e = json.loads(line)
                    n += e["type"] == "MODIFIED" and t0 <= e["t"] <= t1
        except (FileNotFoundError, ValueError):
            pass
        return n

    def converged(self) -> bool:
        self.calls.poll()
        for tg, want in self.desired().items():
            if self.calls.registered.get(tg, set()) != want:
                return False
        return True

    def setup(self) -> None:
        o = self.o
        self.start_emulator()
        self.kube.req("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": self.ns, "labels": {"lbc-bench/run": self.id}}})
        self.until("ServiceAccount default (kube-controller-manager)",
                   lambda: self.kube.req("GET", f"/api/v1/namespaces/{self.ns}/serviceaccounts/default", ok404=True),
                   60)
        self.start_watcher()
        per_set = {k: o.pods // o.groups + (1 if k < o.pods % o.groups else 0) for k in range(o.groups)}
        self.change = {k: max(1, math.ceil(n * o.change_pct / 100)) for k, n in per_set.items()}
        self.make_nodes(o.pods + sum(self.change.values()))
        for k in range(o.groups):
            self.kube.req("POST", f"/api/v1/namespaces/{self.ns}/services", {
                "apiVersion": "v1", "kind": "Service", "metadata": {"name": f"svc-{k:02d}"},
                "spec": {"selector": {"app": f"bench-{k:02d}"},
                         "ports": [{"name": "http", "port": SERVICE_PORT, "targetPort": "http", "protocol": "TCP"}]}})
        t0 = time.time()
        ips = self.create_pods(per_set)
        t1 = time.time()
        log(f"created {len(ips)} pods in {t1 - t0:.1f}s ({len(ips) / (t1 - t0):.0f}/s); waiting for kwok and "
            "the EndpointSlice controller")
        self.wait_slices(ips, set(), 120 + len(ips) / 10)
        log(f"all {len(ips)} endpoints ready in EndpointSlices after {time.time() - t0:.1f}s")
        self.result["setup"] = {"pods_created_per_s": len(ips) / (t1 - t0), "pods_to_slices_s": time.time() - t0}
        for k in range(o.groups):
            self.kube.req("POST", f"/apis/elbv2.k8s.aws/v1beta1/namespaces/{self.ns}/targetgroupbindings", {
                "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
                "metadata": {"name": f"tgb-{k:02d}"},
                "spec": {"serviceRef": {"name": f"svc-{k:02d}", "port": SERVICE_PORT},
                         "targetGroupARN": self.tgs[k], "targetType": "ip"}})

    def start_controller(self, tag: str) -> Controller:
        e = self.env
        ctl_env = dict(os.environ)
        ctl_env.update({"KUBECONFIG": e["KUBECONFIG"], "AWS_ACCESS_KEY_ID": "testing",
                        "AWS_SECRET_ACCESS_KEY": "testing", "AWS_EC2_METADATA_DISABLED": "true",
                        "AWS_REGION": "us-east-1", "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
        args = [f"--cluster-name={CLUSTER}", "--aws-region=us-east-1", f"--aws-vpc-id={self.vpc}",
                f"--aws-api-endpoints=Elastic Load Balancing v2={self.emu_url},EC2={self.emu_url},STS={self.emu_url}",
                f"--watch-namespace={self.ns}", f"--leader-election-namespace={self.ns}",
                "--leader-election-id=lbc-bench", *self.o.controller_arg]
        c = Controller(self.o.binary, args, ctl_env, f"{self.out}/controller-{tag}.log")
        self.ctrl = c
        return c

    # ---- phases --------------------------------------------------------------------------------------------------
    def phase_cold(self) -> None:
        seq0 = self.calls.last_seq()
        c = self.start_controller("cold")
        t_ready = c.wait("/readyz", c.ready, self.left(self.o.phase_timeout))
        t_lead = c.wait("leadership", lambda: c.metrics().get("awslbc_leader") == 1, self.left(self.o.phase_timeout))
        self.until("every target group holding every pod IP", self.converged, self.o.phase_timeout, 0.1)
        t_detect = time.time()
        calls = self.calls.between(seq0)
        writes = [x for x in calls if x["operation"] in ("RegisterTargets", "DeregisterTargets")]
        t_conv = max(x["time"] for x in writes if x["outcome"] == "ok")
        cpu = proc_cpu(c.p.pid)
        cold_wait = counter_sum(c.metrics(), "aws_api_client_throttle_wait_seconds_sum")
        time.sleep(self.o.settle)
        after = self.calls.between(seq0)
        conv_calls = [x for x in after if x["received"] <= t_conv]
        late_calls = [x for x in after if x["received"] > t_conv]
        desired = self.desired()
        reg_floor = sum(math.ceil(len(v) / BATCH) for v in desired.values())
        read_floor = len(self.tgs) + math.ceil(len(self.tgs) / 20) + 1
        mem = proc_status(c.p.pid)
        self.result["cold_start"] = {
            "to_ready_s": t_ready - c.t_start, "to_leader_s": t_lead - c.t_start,
            "to_converged_s": t_conv - c.t_start, "detected_after_s": t_detect - c.t_start,
            "targets": sum(len(v) for v in desired.values()),
            "calls": by_op(conv_calls), "calls_total": len(conv_calls),
            "register_calls": sum(1 for x in conv_calls if x["operation"] == "RegisterTargets"),
            "register_floor": reg_floor,
            "read_floor": read_floor,
            "targets_per_register_call": [x["targets"] for x in conv_calls if x["operation"] == "RegisterTargets"],
            "calls_after_converged_in_settle": by_op(late_calls),
            "emulator_busy_s": sum(x["duration_ms"] for x in conv_calls) / 1000,
            "tgb_writes": self.tgb_writes(c.t_start, time.time()),
            "client_throttle_wait_s": cold_wait,
            "controller_cpu_s": cpu,
            "rss_after_bytes": mem.get("VmRSS", 0), "hwm_bytes": mem.get("VmHWM", 0),
        }
        r = self.result["cold_start"]
        log(f"cold start: ready {r['to_ready_s']:.2f}s, leader {r['to_leader_s']:.2f}s, converged "
            f"{r['to_converged_s']:.2f}s; {r['calls_total']} AWS calls {r['calls']} (register floor {reg_floor}, "
            f"read floor {read_floor}); emulator busy {r['emulator_busy_s']:.2f}s; RSS {mem.get('VmRSS', 0) >> 20} MiB, "
            f"peak {mem.get('VmHWM', 0) >> 20} MiB")

    def phase_change(self, kind: str) -> None:
        c = self.ctrl
        m0 = c.metrics()
        cpu0 = proc_cpu(c.p.pid)
        seq0 = self.calls.last_seq()
        t0 = time.time()
        if kind == "scale_up":
            ips = self.create_pods(self.change)
            op, states, metric = "RegisterTargets", ("ready",), "awslbc_endpoint_to_register_seconds"
        else:
            ips = self.delete_pods(self.change)
            op, states, metric = "DeregisterTargets", ("terminating", "notready", "gone"), \
                "awslbc_terminating_to_deregister_seconds"
        t_issued = time.time()
        ids = {f"{ip}:{TARGET_PORT}" for ip in ips}
        self.until(f"{kind}: every change in the target groups", self.converged, self.o.phase_timeout, 0.1)
        t_conv_seen = time.time()
        time.sleep(self.o.settle)
        self.calls.poll()
        self.slices.poll()
        calls = self.calls.between(seq0)
        first = first_call_time(calls, op)
        lats, missing_obs = [], 0
        for ip in ips:
            t_obs = self.slices.first_time(ip, states, t0 - 1)
            t_call = first.get(f"{ip}:{TARGET_PORT}")
            if t_obs is None or t_call is None:
                missing_obs += 1
                continue
            lats.append(t_call - t_obs)
        writes = [x for x in calls if x["operation"] == op and x["outcome"] == "ok"]
        t_last = max((x["time"] for x in writes), default=t_conv_seen)
        floor = sum(math.ceil(n / BATCH) for n in self.change.values())
        m1 = c.metrics()
        res = {
            "changed_targets": len(ids), "pods_issued_in_s": t_issued - t0,
            "first_to_last_call_s": t_last - t0,
            "latency": lat_summary(lats), "latency_unmatched": missing_obs,
            "negative_latencies": sum(1 for x in lats if x < 0),
            "calls": by_op(calls), "write_calls": len(writes), "write_floor": floor,
            "targets_per_write_call": [x["targets"] for x in writes],
            "tgb_writes": self.tgb_writes(t0, time.time()),
            "controller_histogram": hist_delta_quantiles(m0, m1, metric),
            "client_throttle_wait_s": counter_sum(m1, "aws_api_client_throttle_wait_seconds_sum")
            - counter_sum(m0, "aws_api_client_throttle_wait_seconds_sum"),
            "controller_cpu_s": proc_cpu(c.p.pid) - cpu0,
        }
        self.result[kind] = res
        lat = res["latency"]
        log(f"{kind}: {len(ids)} targets; endpoint->{op} p50 {lat['p50_ms']:.0f} ms, p99 {lat['p99_ms']:.0f} ms, "
            f"max {lat['max_ms']:.0f} ms (n={lat['n']}, unmatched {missing_obs}); {len(writes)} {op} calls "
            f"(floor {floor}); all calls {res['calls']}; TGB writes {res['tgb_writes']}; client-side throttle wait "
            f"{res['client_throttle_wait_s']:.1f}s; "
            f"controller histogram {res['controller_histogram']}")

    def phase_memory(self) -> None:
        c = self.ctrl
        time.sleep(self.o.settle)
        m = proc_status(c.p.pid)
        met = c.metrics()
        self.result["memory"] = {"steady_rss_bytes": m.get("VmRSS", 0), "peak_hwm_bytes": m.get("VmHWM", 0),
                                 "sampled_rss_max_bytes": c.rss_max,
                                 "cache_objects": {k.split('"')[1]: v for k, v in met.items()
                                                   if k.startswith("awslbc_cache_objects{")}}
        log(f"memory: steady RSS {m.get('VmRSS', 0) / 2**20:.1f} MiB, peak (VmHWM) {m.get('VmHWM', 0) / 2**20:.1f} MiB")

    def phase_restart(self) -> None:
        c = self.ctrl
        m = c.metrics()
        self.result["aws_calls_by_controller_metric"] = {k: v for k, v in m.items() if k.startswith("aws_api_calls")}
        exit_s = c.stop()
        seq0 = self.calls.last_seq()
        c = self.start_controller("warm")
        t_ready = c.wait("/readyz after restart", c.ready, self.left(self.o.phase_timeout))
        t_lead = c.wait("leadership after restart", lambda: c.metrics().get("awslbc_leader") == 1,
                        self.left(self.o.phase_timeout), 0.1)
        window_end = t_ready + self.o.restart_window
        while time.time() < window_end:
            time.sleep(0.5)
        self.calls.poll()
        calls = [x for x in self.calls.between(seq0) if x["received"] <= window_end]
        met = c.metrics()
        mem = proc_status(c.p.pid)
        self.result["warm_restart"] = {
            "sigterm_to_exit_s": exit_s, "to_ready_s": t_ready - c.t_start, "to_leader_s": t_lead - c.t_start,
            "window_s": self.o.restart_window, "calls": by_op(calls), "calls_total": len(calls),
            "tgb_writes": self.tgb_writes(c.t_start, window_end),
            "skipped_checkpoint": counter_sum(met, "awslbc_reconcile_skipped_checkpoint"),
            "peak_hwm_bytes": mem.get("VmHWM", 0), "rss_bytes": mem.get("VmRSS", 0),
        }
        r = self.result["warm_restart"]
        log(f"warm restart: exit {exit_s:.2f}s, ready {r['to_ready_s']:.2f}s, leader {r['to_leader_s']:.2f}s; "
            f"{r['calls_total']} AWS calls in {self.o.restart_window:.0f}s after ready {r['calls']}; "
            f"checkpoint skips {r['skipped_checkpoint']:.0f}; peak RSS {mem.get('VmHWM', 0) / 2**20:.1f} MiB")
        if not self.converged():
            raise RuntimeError("target groups no longer match the pods after the warm restart")

    def verify(self) -> None:
        """Reads every target group through the API (after all counting) and compares with the pods."""
        bad = 0
        for tg, want in self.desired().items():
            d = self.elb.describe_target_health(TargetGroupArn=tg)["TargetHealthDescriptions"]
            have = {f"{x['Target']['Id']}:{x['Target']['Port']}" for x in d
                    if x["TargetHealth"]["State"] not in ("draining", "unused")}
            bad += len(have ^ want)
        self.result["verify_mismatched_targets"] = bad
        log(f"verify (DescribeTargetHealth): {bad} mismatched targets")

    # ---- cleanup -------------------------------------------------------------------------------------------------
    def cleanup(self) -> None:
        k = self.kube
        base = f"/apis/elbv2.k8s.aws/v1beta1/namespaces/{self.ns}/targetgroupbindings"
        try:
            if self.ctrl and self.ctrl.alive():
                try:
                    k.req("DELETE", base, ok404=True)
                    t0 = time.time()
                    while time.time() - t0 < 60 and (k.req("GET", base, ok404=True) or {}).get("items"):
                        time.sleep(0.5)
                except Exception as e:  # noqa: BLE001
                    log(f"cleanup: bindings: {e}")
            if self.ctrl:
                self.ctrl.stop()
            for t in (k.req("GET", base, ok404=True) or {}).get("items", []):
                k.req("PATCH", f"{base}/{t['metadata']['name']}", {"metadata": {"finalizers": None}},
                      ctype="application/merge-patch+json", ok404=True)
        except Exception as e:  # noqa: BLE001
            log(f"cleanup: controller/bindings: {e}")
        for what, fn in [
            ("pods", lambda: k.req("DELETE", f"/api/v1/namespaces/{self.ns}/pods?gracePeriodSeconds=0", ok404=True)),
            ("namespace", lambda: k.req("DELETE", f"/api/v1/namespaces/{self.ns}", ok404=True)),
            ("nodes", lambda: k.req("DELETE", f"/api/v1/nodes?labelSelector=lbc-bench%2Frun%3D{self.id}", ok404=True)),
        ]:
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                log(f"cleanup: {what}: {e}")
        if self.watcher and self.watcher.poll() is None:
            self.watcher.terminate()
            try:
                self.watcher.wait(5)
            except subprocess.TimeoutExpired:
                self.watcher.kill()
        if self.emu and self.emu.poll() is None:
            try:
                self.calls.poll()
                with open(f"{self.out}/calls.json", "w") as f:
                    json.dump(self.calls.calls, f)
                for tg in self.tgs:
                    self.elb.delete_target_group(TargetGroupArn=tg)
            except Exception as e:  # noqa: BLE001
                log(f"cleanup: target groups: {e}")
            self.emu.terminate()
            try:
                self.emu.wait(10)
            except subprocess.TimeoutExpired:
                self.emu.kill()
        # the namespace's pods are force-deleted above; wait (bounded) until the namespace is gone
        t0 = time.time()
        while time.time() - t0 < 120:
            try:
                if k.req("GET", f"/api/v1/namespaces/{self.ns}", ok404=True) is None:
                    break
            except Exception:  # noqa: BLE001
                pass
            time.sleep(1)
        else:
            log(f"cleanup: namespace {self.ns} still terminating after 120 s (it finishes on its own)")
        log("cleaned up")

    def run(self) -> dict[str, Any]:
        try:
            self.result["load_before"] = os.getloadavg()
            self.setup()
            self.phase_cold()
            self.phase_change("scale_up")
            self.phase_change("scale_down")
            self.phase_memory()
            self.phase_restart()
            self.verify()
            self.result["ok"] = True
        except Exception as e:  # noqa: BLE001 - any failure: record it, clean up, go on with the next run
            self.result["ok"] = False
            self.result["error"] = f"{type(e).__name__}: {e}"
            log(f"run {self.id} failed: {type(e).__name__}: {e}")
        finally:
            self.result["load_after"] = os.getloadavg()
            try:
                with open(f"{self.out}/summary.json", "w") as f:
                    json.dump(self.result, f, indent=1, default=str)
            finally:
                self.cleanup()
        return self.result


# ----------------------------------------------------------------------------------------------------------------
# main
# ----------------------------------------------------------------------------------------------------------------

def default_binary() -> str:
    for d in [os.environ.get("CARGO_TARGET_DIR", ""), os.path.join(REPO, "target"),
              os.path.expanduser("~/.cache/aws-lb-controller/target")]:
        p = os.path.join(d, "release", "aws-lb-controller")
        if d and os.path.exists(p):
            return p
    return ""


def median_of(results: list[dict], path: str) -> float | None:
    vals = []
    for r in results:
        v: Any = r
        for part in path.split("."):
            v = v.get(part) if isinstance(v, dict) else None
        if isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v)):
            vals.append(v)
    return statistics.median(vals) if vals else None


SUMMARY_ROWS = [
    ("cold start: to /readyz (s)", "cold_start.to_ready_s"),
    ("cold start: to leader (s)", "cold_start.to_leader_s"),
    ("cold start: to converged (s)", "cold_start.to_converged_s"),
    ("cold start: AWS calls", "cold_start.calls_total"),
    ("cold start: RegisterTargets calls", "cold_start.register_calls"),
    ("cold start: RegisterTargets floor", "cold_start.register_floor"),
    ("cold start: emulator busy (s)", "cold_start.emulator_busy_s"),
    ("cold start: controller CPU (s)", "cold_start.controller_cpu_s"),
    ("cold start: TargetGroupBinding writes", "cold_start.tgb_writes"),
    ("scale up: targets", "scale_up.changed_targets"),
    ("scale up: pods created over (s)", "scale_up.pods_issued_in_s"),
    ("scale up: endpoint->Register p50 (ms)", "scale_up.latency.p50_ms"),
    ("scale up: endpoint->Register p99 (ms)", "scale_up.latency.p99_ms"),
    ("scale up: endpoint->Register max (ms)", "scale_up.latency.max_ms"),
    ("scale up: RegisterTargets calls", "scale_up.write_calls"),
    ("scale up: floor", "scale_up.write_floor"),
    ("scale up: controller histogram p50 <= (s)", "scale_up.controller_histogram.p50_le_s"),
    ("scale up: controller histogram p99 <= (s)", "scale_up.controller_histogram.p99_le_s"),
    ("scale up: client-side throttle wait, sum (s)", "scale_up.client_throttle_wait_s"),
    ("scale up: controller CPU (s)", "scale_up.controller_cpu_s"),
    ("scale up: TargetGroupBinding writes", "scale_up.tgb_writes"),
    ("scale down: targets", "scale_down.changed_targets"),
    ("scale down: pods deleted over (s)", "scale_down.pods_issued_in_s"),
    ("scale down: terminating->Deregister p50 (ms)", "scale_down.latency.p50_ms"),
    ("scale down: terminating->Deregister p99 (ms)", "scale_down.latency.p99_ms"),
    ("scale down: terminating->Deregister max (ms)", "scale_down.latency.max_ms"),
    ("scale down: DeregisterTargets calls", "scale_down.write_calls"),
    ("scale down: floor", "scale_down.write_floor"),
    ("scale down: controller histogram p50 <= (s)", "scale_down.controller_histogram.p50_le_s"),
    ("scale down: controller histogram p99 <= (s)", "scale_down.controller_histogram.p99_le_s"),
    ("scale down: client-side throttle wait, sum (s)", "scale_down.client_throttle_wait_s"),
    ("scale down: TargetGroupBinding writes", "scale_down.tgb_writes"),
    ("memory: peak VmHWM (MiB)", "memory.peak_hwm_mib"),
    ("memory: steady VmRSS (MiB)", "memory.steady_rss_mib"),
    ("warm restart: SIGTERM to exit (s)", "warm_restart.sigterm_to_exit_s"),
    ("warm restart: to /readyz (s)", "warm_restart.to_ready_s"),
    ("warm restart: to leader (s)", "warm_restart.to_leader_s"),
    ("warm restart: AWS calls in window", "warm_restart.calls_total"),
    ("warm restart: TargetGroupBinding writes", "warm_restart.tgb_writes"),
    ("warm restart: peak VmHWM (MiB)", "warm_restart.peak_hwm_mib"),
]


def add_mib(r: dict) -> None:
    for src, dst in [("memory.peak_hwm_bytes", "peak_hwm_mib"), ("memory.steady_rss_bytes", "steady_rss_mib"),
                     ("warm_restart.peak_hwm_bytes", "peak_hwm_mib")]:
        a, b = src.split(".")
        if isinstance(r.get(a), dict) and b in r[a]:
            r[a][dst] = r[a][b] / 2**20


def print_medians(ok: list[dict], total: int, title: str) -> None:
    print()
    print(f"== {title}: medians of {len(ok)} successful run(s) of {total} ==")
    for label, path in SUMMARY_ROWS:
        v = median_of(ok, path)
        each = ", ".join(f"{median_of([r], path):.4g}" if median_of([r], path) is not None else "-" for r in ok)
        print(f"  {label:48s} {('%.4g' % v) if v is not None else '-':>10s}   [{each}]")


def report(paths: list[str]) -> None:
    """Medians over per-run summary.json files written by earlier invocations."""
    runs = []
    for p in paths:
        try:
            with open(p) as f:
                r = json.load(f)
        except (OSError, ValueError) as e:
            print(f"  skipped {p}: {e}")
            continue
        add_mib(r)
        runs.append(r)
    ok = [r for r in runs if r.get("ok")]
    sizes = sorted({(r.get("pods"), r.get("groups")) for r in ok})
    print_medians(ok, len(runs), ", ".join(f"{p} pods / {g} groups" for p, g in sizes) or "no runs")


def main() -> None:
    if len(sys.argv) >= 2 and sys.argv[1] == "_watch":
        watch_main(sys.argv[2], sys.argv[3])
        return
    if len(sys.argv) >= 2 and sys.argv[1] == "report":
        report(sys.argv[2:])
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--pods", type=int, default=1000, help="pods in total, spread evenly over the groups")
    p.add_argument("--groups", type=int, default=10, help="Services = TargetGroupBindings = target groups")
    p.add_argument("--runs", type=int, default=1, help="repetitions (each from nothing); medians are printed")
    p.add_argument("--change-pct", type=float, default=10, help="scale-up/-down size per set, in percent")
    p.add_argument("--pods-per-node", type=int, default=100)
    p.add_argument("--workers", type=int, default=8, help="parallel API requests when creating/deleting pods")
    p.add_argument("--binary", default=default_binary(), help="controller binary (default: the release build)")
    p.add_argument("--controller-arg", action="append", default=[], help="extra controller flag (repeatable)")
    p.add_argument("--emulator-no-serialize", action="store_true", help="let moto serve calls concurrently")
    p.add_argument("--settle", type=float, default=3, help="seconds to wait for late calls after each phase")
    p.add_argument("--restart-window", type=float, default=30, help="seconds of AWS calls counted after a restart")
    p.add_argument("--phase-timeout", type=float, default=300)
    p.add_argument("--max-seconds", type=float, default=1800, help="bound of one run, setup included")
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    o = p.parse_args()
    if not o.binary or not os.path.exists(o.binary):
        raise SystemExit("controller binary not found: cargo build --release -p aws-lb-controller (or --binary)")
    env = load_env()
    for key in ("LBC_KUBE_SERVER", "LBC_ADMIN_TOKEN", "LBC_KUBE_CA_FILE", "LBC_VENV", "KUBECONFIG"):
        if not env.get(key):
            raise SystemExit(f"{key} missing: run e2e/up and source e2e/.run/env")
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

    stamp = time.strftime("%Y%m%d-%H%M%S")
    log(f"benchmark: {o.pods} pods, {o.groups} target groups, change {o.change_pct:g}%, {o.runs} run(s); "
        f"binary {o.binary}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    results = []
    for i in range(o.runs):
        run_id = f"{stamp[-6:]}{i}"
        out = os.path.join(o.out, f"{stamp}-p{o.pods}-g{o.groups}-r{i}")
        log(f"---- run {i + 1}/{o.runs} ({run_id}) -> {out}")
        r = Run(o, env, run_id, out)
        try:
            results.append(r.run())
        except KeyboardInterrupt:
            log("interrupted (cleaned up)")
            raise SystemExit(130)
    for r in results:
        add_mib(r)
    ok = [r for r in results if r.get("ok")]
    print_medians(ok, len(results), f"{o.pods} pods, {o.groups} target groups")
    summary = {"pods": o.pods, "groups": o.groups, "runs": results,
               "medians": {path: median_of(ok, path) for _, path in SUMMARY_ROWS}}
    os.makedirs(o.out, exist_ok=True)
    path = os.path.join(o.out, f"{stamp}-p{o.pods}-g{o.groups}.json")
    with open(path, "w") as f:
        json.dump(summary, f, indent=1, default=str)
    print(f"  results: {path}")
    if len(ok) != len(results):
        sys.exit(1)


if __name__ == "__main__":
    main()
