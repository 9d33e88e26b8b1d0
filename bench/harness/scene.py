"""One benchmark run on the local environment.

A Scene is the Kubernetes side of a run: a namespace, fake kwok nodes of its own, G Services and P pods (pod IPs
from 10.0.192.0/18 inside the VPC, given through the `lbc-e2e/pod-ip` annotation) and the watcher process. A Trial
is one controller against that scene: a private emulator with a VPC and G fresh IP target groups, G fresh
TargetGroupBindings, the controller process(es), and the scenario phases. Trials of one scene run one after the
other; each removes its bindings (finalizers stripped once its controller is stopped) before the next starts, so
no checkpoint annotation or finalizer of one controller is seen by the other.
"""
from __future__ import annotations

import concurrent.futures as cf
import ipaddress
import json
import math
import os
import signal
import subprocess
import sys
import time
from typing import Any

from harness import lbs
from harness.emulator import CallLog, by_op, first_call_time, free_port, http_get, http_json, start_emulator
from harness.flavors import REGION, Flavor, self_signed_cert
from harness.kube import Kube, KubeError
from harness.proc import Controller, Deadline, counter_sum, hist_delta_quantiles, proc_cpu, proc_status
from harness.stats import lat_summary, write_floor
from harness.watcher import GATE_PREFIX, GateEvents, SliceEvents

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# Pod CIDRs for the run's nodes, in this order: all inside the trial emulator's VPC (10.0.0.0/16, which has no
# subnets there); the first block is also outside the shared emulator's seeded subnets. Other nodes' podCIDRs
# (e2e/up's three) and kwok's own --cidr are skipped.
NODE_POOLS = ["10.0.192.0/18", "10.0.0.0/17", "10.0.128.0/18"]
KWOK_FALLBACK = "10.0.252.0/22"  # kwok's own --cidr (e2e/up): never hand it out
TARGET_PORT = 8080
SERVICE_PORT = 80
GATE_NS_LABEL = "elbv2.k8s.aws/pod-readiness-gate-inject"
HEALTH_INITIAL_S = 2.0           # emulator: a registered target reads `initial` this long, then `healthy`


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Bounded:
    """Waits bounded by a per-wait timeout and by the run's overall deadline."""

    def __init__(self, max_seconds: float):
        self.max_seconds = max_seconds
        self.t_end = time.time() + max_seconds
        self.ctrl: Controller | None = None

    def left(self, cap: float) -> float:
        rem = self.t_end - time.time()
        if rem <= 0:
            raise Deadline(f"--max-seconds {self.max_seconds} exceeded")
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


def parallel(fn, items, workers: int) -> None:
    """fn over items on a thread pool; the first error cancels what has not started and is raised."""
    ex = cf.ThreadPoolExecutor(workers)
    try:
        for f in [ex.submit(fn, i) for i in items]:
            f.result()
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


class Scene(Bounded):
    def __init__(self, opts, env: dict[str, str], run_id: str, out_dir: str, gates: bool = False,
                 pods: int | None = None, changes: int = 1):
        super().__init__(opts.max_seconds)
        self.o, self.env, self.id, self.out, self.gates = opts, env, run_id, out_dir, gates
        self.total = pods if pods is not None else opts.pods
        self.changes = changes   # scale-ups alive at once (the isolation phase adds a second one)
        os.makedirs(out_dir, exist_ok=True)
        self.kube = Kube(env)
        self.ns = f"lbc-bench-{run_id}"
        self.watcher: subprocess.Popen | None = None
        self.nodes: list[tuple[str, list[str]]] = []
        self.pods: dict[int, list[tuple[str, str]]] = {}   # set -> [(pod name, ip)]
        self.next_idx: dict[int, int] = {}
        self.node_of_ip: dict[str, tuple[str, list[str]]] = {}
        self.node_rr = 0
        self.info: dict[str, Any] = {}
        self.tgb_names = [f"tgb-{k:02d}" for k in range(opts.groups)]

    # ---- nodes and pods ------------------------------------------------------------------------------------------
    def make_nodes(self, total_pods: int) -> None:
        per = self.o.pods_per_node
        prefix = 32 - math.ceil(math.log2(per + 2))
        taken = [ipaddress.ip_network(KWOK_FALLBACK)] + [
            ipaddress.ip_network(c) for n in self.kube.req("GET", "/api/v1/nodes")["items"]
            for c in (n.get("spec") or {}).get("podCIDRs") or []]
        cidrs = [c for pool in NODE_POOLS for c in ipaddress.ip_network(pool).subnets(new_prefix=prefix)
                 if not any(c.overlaps(t) for t in taken)]
        need = math.ceil(total_pods / per)
        if need > len(cidrs):
            raise SystemExit(f"{total_pods} pods at {per} per node need {need} nodes; {NODE_POOLS} hold {len(cidrs)}"
                             f" free /{prefix} blocks (raise --pods-per-node)")
        zones = ["us-east-1a", "us-east-1b", "us-east-1c"]
        by_idx: dict[int, tuple[str, list[str]]] = {}

        def mk(i: int) -> None:
            cidr = cidrs[i]
            name = f"lbc-bench-{self.id}-{i:03d}"
            hosts = [str(h) for h in cidr.hosts()]
            self.kube.req("POST", "/api/v1/nodes", {
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name,
                             "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                             # ALBC looks a pod's ENI up by its IP only on Fargate nodes; without the label it
                             # wants spec.providerID (which these nodes, like RKE2's, lack). Ours ignores it.
                             "labels": {"lbc-bench/run": self.id, "kubernetes.io/hostname": name,
                                        "kubernetes.io/os": "linux", "type": "kwok",
                                        "eks.amazonaws.com/compute-type": "fargate",
                                        "topology.kubernetes.io/zone": zones[i % 3],
                                        "topology.kubernetes.io/region": REGION}},
                "spec": {"podCIDR": str(cidr), "podCIDRs": [str(cidr)]},
                "status": {"addresses": [{"type": "InternalIP", "address": hosts[0]},
                                         {"type": "Hostname", "address": name}]}})
            by_idx[i] = (name, hosts[1:per + 1])
        parallel(mk, range(need), self.o.workers)
        self.nodes = [by_idx[i] for i in range(need)]

        def ready() -> bool:
            items = self.kube.req("GET", f"/api/v1/nodes?labelSelector=lbc-bench%2Frun%3D{self.id}")["items"]
            return len(items) == need and all(
                any(c["type"] == "Ready" and c["status"] == "True"
                    for c in (n.get("status") or {}).get("conditions") or [])
                for n in items)
        self.until(f"{need} fake nodes Ready (kwok)", ready, 120 + need / 5, 0.5)
        log(f"{need} fake nodes (/{prefix} pod CIDRs from {NODE_POOLS[0]} on, {per} pods each)")

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
                raise RuntimeError(f"out of pod addresses on the {len(self.nodes)} nodes of {self.ns}")
            i = self.next_idx.get(k, 0)
            self.next_idx[k] = i + 1
            ip = free.pop(0)
            self.node_of_ip[ip] = (name, free)
            out.append((f"s{k:02d}-{i:05d}", ip, name))
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
            spec = {"nodeName": node, "automountServiceAccountToken": False, "enableServiceLinks": False,
                    "terminationGracePeriodSeconds": 30,
                    "containers": [{"name": "app", "image": "lbc-bench/app:1",
                                    "ports": [{"name": "http", "containerPort": TARGET_PORT}]}]}
            if self.gates:
                # what the pod webhook of either controller would inject (neither webhook is wired here)
                spec["readinessGates"] = [{"conditionType": GATE_PREFIX + self.tgb_names[k]}]
            self.kube.req("POST", f"/api/v1/namespaces/{self.ns}/pods", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": pod, "labels": {"app": f"bench-{k:02d}"}, "annotations": {"lbc-e2e/pod-ip": ip}},
                "spec": spec})
        parallel(mk, todo, self.o.workers)
        return {ip for _, _, ip, _ in todo}

    def delete_pods(self, k_n: dict[int, int]) -> set[str]:
        todo = []
        for k, n in k_n.items():
            for _ in range(n):
                todo.append(self.pods[k].pop())
        parallel(lambda pi: self.kube.req("DELETE", f"/api/v1/namespaces/{self.ns}/pods/{pi[0]}", ok404=True),
                 todo, self.o.workers)
        # addresses go back to the end of their node's free list: reused only after every fresh one (later
        # phases and trials, minutes after these pods are gone)
        for _, ip in todo:
            self.node_of_ip.pop(ip)[1].append(ip)
        return {ip for _, ip in todo}

    def wait_slices(self, want_ready: set[str], want_absent: set[str], timeout: float) -> None:
        def ok():
            self.slices.poll()
            r = self.slices.ready_ips()
            return want_ready <= r and not (want_absent & r)
        try:
            self.until("endpoints in EndpointSlices", ok, timeout, 0.5)
        except Deadline as e:
            raise Deadline(f"{e}: {len(want_ready - self.slices.ready_ips())} endpoints not ready yet") from None

    def wait_slices_present(self, ips: set[str], timeout: float) -> None:
        """Gated pods are not ready until a controller sets the gate: wait until they are listed at all."""
        def ok():
            self.slices.poll()
            return all(self.slices.state.get(ip, "gone") != "gone" for ip in ips)
        self.until("gated endpoints in EndpointSlices", ok, timeout, 0.5)

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

    # ---- lifecycle -----------------------------------------------------------------------------------------------
    def setup(self) -> None:
        o = self.o
        labels = {"lbc-bench/run": self.id}
        if self.gates:
            labels[GATE_NS_LABEL] = "enabled"
        self.kube.req("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": self.ns, "labels": labels}})
        self.until("ServiceAccount default (kube-controller-manager)",
                   lambda: self.kube.req("GET", f"/api/v1/namespaces/{self.ns}/serviceaccounts/default", ok404=True),
                   60)
        path = f"{self.out}/slices.jsonl"
        self.watcher = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "watcher.py"), self.ns, self.out, *(["--pods"] if self.gates else [])],
            stdin=subprocess.DEVNULL, stderr=open(f"{self.out}/watcher.log", "ab"), start_new_session=True)
        self.slices = SliceEvents(path)
        self.gate_events = GateEvents(f"{self.out}/pods.jsonl")

        def synced():
            self.slices.poll()
            return self.slices.synced
        self.until("EndpointSlice watcher", synced, 60)
        groups = o.groups
        self.per_set = {k: self.total // groups + (1 if k < self.total % groups else 0) for k in range(groups)}
        self.change = {k: max(1, math.ceil(n * o.change_pct / 100)) for k, n in self.per_set.items()}
        # room for the scale-up(s) plus one pod per group during a failover
        self.make_nodes(self.total + self.changes * sum(self.change.values()) + 2 * groups)
        for k in range(groups):
            self.kube.req("POST", f"/api/v1/namespaces/{self.ns}/services", {
                "apiVersion": "v1", "kind": "Service", "metadata": {"name": f"svc-{k:02d}"},
                "spec": {"selector": {"app": f"bench-{k:02d}"},
                         "ports": [{"name": "http", "port": SERVICE_PORT, "targetPort": "http", "protocol": "TCP"}]}})
        t0 = time.time()
        ips = self.create_pods(self.per_set)
        t1 = time.time()
        log(f"created {len(ips)} pods in {t1 - t0:.1f}s ({len(ips) / (t1 - t0):.0f}/s); waiting for kwok and "
            "the EndpointSlice controller")
        if self.gates:
            self.wait_slices_present(ips, 120 + len(ips) / 10)
        else:
            self.wait_slices(ips, set(), 120 + len(ips) / 10)
        log(f"all {len(ips)} endpoints in EndpointSlices after {time.time() - t0:.1f}s")
        self.info = {"pods_created_per_s": len(ips) / (t1 - t0), "pods_to_slices_s": time.time() - t0}

    def cleanup(self) -> None:
        k = self.kube
        # one immediate DELETE per pod, in parallel: a collection DELETE of tens of thousands of pods outlives the
        # request timeout, and once the nodes are gone nothing finishes pods left terminating
        names = [pod for k_ in self.pods for pod, _ in self.pods[k_]]
        try:
            parallel(lambda n: k.req("DELETE", f"/api/v1/namespaces/{self.ns}/pods/{n}?gracePeriodSeconds=0",
                                     ok404=True), names, self.o.workers)
        except Exception as e:  # noqa: BLE001
            log(f"cleanup: pods: {e}")
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
        t0 = time.time()
        while time.time() - t0 < 180:
            try:
                if k.req("GET", f"/api/v1/namespaces/{self.ns}", ok404=True) is None:
                    break
            except Exception:  # noqa: BLE001
                pass
            time.sleep(1)
        else:
            log(f"cleanup: namespace {self.ns} still terminating after 180 s (it finishes on its own)")
        log(f"scene {self.ns} cleaned up")


class Trial:
    """One controller flavor against a scene."""

    def __init__(self, scene: Scene, flavor: Flavor, tag: str, watch_ns: str):
        self.s, self.f, self.o = scene, flavor, scene.o
        self.tag = tag
        self.out = os.path.join(scene.out, tag)
        os.makedirs(self.out, exist_ok=True)
        self.watch_ns = watch_ns
        self.lease_id = f"lbc-bench-{tag}"
        self.emu: subprocess.Popen | None = None
        self.ctrl: Controller | None = None
        self.standby: Controller | None = None
        self.stopped: list[Controller] = []
        self.tgs: list[str] = []
        self.calls = CallLog("")
        self.faulted: set[int] = set()
        self.lb_paths: dict[str, tuple[str, dict]] = {}   # S7: kind -> (collection path, manifest)
        self.lb_class = ""
        self.result: dict[str, Any] = {"flavor": flavor.name, "run": scene.id, "pods": scene.total,
                                       "groups": self.o.groups}
        self.marks: list[tuple[float, str]] = []   # phase boundaries, for the plots
        self.result["dir"] = self.out

    # ---- helpers -------------------------------------------------------------------------------------------------
    def mark(self, what: str) -> None:
        self.marks.append((time.time(), what))

    def until(self, what, fn, timeout, interval=0.2) -> None:
        self.s.ctrl = self.ctrl
        self.s.until(what, fn, timeout, interval)

    def desired(self, skip: set[int] = frozenset()) -> dict[str, set[str]]:
        return {self.tgs[k]: {f"{ip}:{TARGET_PORT}" for _, ip in self.s.pods.get(k, [])}
                for k in range(self.o.groups) if k not in skip}

    def converged(self, skip: set[int] = frozenset()) -> bool:
        self.calls.poll()
        return all(self.calls.registered.get(tg, set()) == want for tg, want in self.desired(skip).items())

    def start_emulator(self) -> None:
        self.emu, self.emu_url = start_emulator(self.s.env["LBC_VENV"], REPO, self.out,
                                                not self.o.emulator_no_serialize)
        self.s.until("AWS emulator", lambda: http_get(f"{self.emu_url}/_awsemu/healthz", 1)[0] == 200, 60)
        self.calls = CallLog(self.emu_url)
        import boto3
        from botocore.config import Config
        kw = dict(endpoint_url=self.emu_url, region_name=REGION, aws_access_key_id="testing",
                  aws_secret_access_key="testing", config=Config(retries={"total_max_attempts": 1}))
        self.ec2 = boto3.client("ec2", **kw)
        self.elb = boto3.client("elbv2", **kw)
        self.vpc = self.ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        http_json("POST", f"{self.emu_url}/_awsemu/health-policy",
                  {"scope": "global", "initial_seconds": HEALTH_INITIAL_S, "then": "healthy"})
        for k in range(self.o.groups):
            self.tgs.append(self.elb.create_target_group(
                Name=f"bench-{self.s.id}-{self.tag[:6]}-{k:02d}"[:32], Protocol="TCP", Port=TARGET_PORT,
                VpcId=self.vpc, TargetType="ip", HealthCheckIntervalSeconds=10)["TargetGroups"][0]["TargetGroupArn"])
        log(f"[{self.tag}] emulator {self.emu_url} (pid {self.emu.pid}): VPC {self.vpc}, {len(self.tgs)} target groups")

    def create_bindings(self) -> None:
        for k in range(self.o.groups):
            self.s.kube.req("POST", f"/apis/elbv2.k8s.aws/v1beta1/namespaces/{self.s.ns}/targetgroupbindings", {
                "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
                "metadata": {"name": self.s.tgb_names[k]},
                "spec": {"serviceRef": {"name": f"svc-{k:02d}", "port": SERVICE_PORT},
                         "targetGroupARN": self.tgs[k], "targetType": "ip"}})

    def start_controller(self, tag: str) -> Controller:
        env = dict(os.environ)
        env.update({"KUBECONFIG": self.s.env["KUBECONFIG"], "AWS_ACCESS_KEY_ID": "testing",
                    "AWS_SECRET_ACCESS_KEY": "testing", "AWS_EC2_METADATA_DISABLED": "true",
                    "AWS_REGION": REGION, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
        mp, hp = free_port(), free_port()
        args = self.f.args(vpc=self.vpc, emu_url=self.emu_url, lease_ns=self.s.ns, lease_id=self.lease_id,
                           watch_ns=self.watch_ns, cert_dir=self.cert_dir, metrics_port=mp, health_port=hp)
        return Controller(self.f.binary, args, env, f"{self.out}/controller-{tag}.log", mp, hp)

    # ---- S1 cold start ---------------------------------------------------------------------------------------
    def phase_cold(self) -> None:
        seq0 = self.calls.last_seq()
        self.mark("cold start")
        c = self.ctrl = self.start_controller("cold")
        t_ready = c.wait("/readyz", c.ready, self.s.left(self.o.phase_timeout))
        t_lead = c.wait("leadership", lambda: self.f.is_leader(c.metrics()), self.s.left(self.o.phase_timeout))
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
        reg_floor = write_floor(len(v) for v in desired.values())
        mem = proc_status(c.p.pid)
        self.result["cold_start"] = {
            "to_ready_s": t_ready - c.t_start, "to_leader_s": t_lead - c.t_start,
            "to_converged_s": t_conv - c.t_start, "detected_after_s": t_detect - c.t_start,
            "targets": sum(len(v) for v in desired.values()),
            "calls": by_op(conv_calls), "calls_total": len(conv_calls),
            "register_calls": sum(1 for x in conv_calls if x["operation"] == "RegisterTargets"),
            "register_floor": reg_floor,
            "read_floor": len(self.tgs) + math.ceil(len(self.tgs) / 20) + 1,
            "targets_per_register_call": [x["targets"] for x in conv_calls if x["operation"] == "RegisterTargets"],
            "calls_after_converged_in_settle": by_op(late_calls),
            "emulator_busy_s": sum(x["duration_ms"] for x in conv_calls) / 1000,
            "tgb_writes": self.s.tgb_writes(c.t_start, time.time()),
            "client_throttle_wait_s": cold_wait,
            "controller_cpu_s": cpu,
            "rss_after_bytes": mem.get("VmRSS", 0), "hwm_bytes": mem.get("VmHWM", 0),
        }
        r = self.result["cold_start"]
        log(f"[{self.tag}] cold start: ready {r['to_ready_s']:.2f}s, leader {r['to_leader_s']:.2f}s, converged "
            f"{r['to_converged_s']:.2f}s; {r['calls_total']} AWS calls {r['calls']} (register floor {reg_floor}); "
            f"CPU {cpu:.2f}s; RSS {mem.get('VmRSS', 0) >> 20} MiB, peak {mem.get('VmHWM', 0) >> 20} MiB")

    # ---- S2 scale up / down (S5 and S4 reuse it) -------------------------------------------------------------
    def phase_change(self, kind: str, change: dict[int, int], key: str | None = None,
                     skip: set[int] = frozenset()) -> dict[str, Any]:
        c = self.ctrl
        m0 = c.metrics()
        cpu0 = proc_cpu(c.p.pid)
        seq0 = self.calls.last_seq()
        t0 = time.time()
        self.mark(key or kind)
        if kind == "scale_up":
            ips = self.s.create_pods(change)
            op, states, metric = "RegisterTargets", ("ready",), "awslbc_endpoint_to_register_seconds"
        else:
            ips = self.s.delete_pods(change)
            op, states, metric = "DeregisterTargets", ("terminating", "notready", "gone"), \
                "awslbc_terminating_to_deregister_seconds"
        t_issued = time.time()
        self.until(f"{key or kind}: every change in the target groups", lambda: self.converged(skip),
                   self.o.phase_timeout, 0.1)
        t_conv_seen = time.time()
        time.sleep(self.o.settle)
        self.calls.poll()
        self.s.slices.poll()
        calls = self.calls.between(seq0)
        first = first_call_time(calls, op)
        skip_ids = {f"{ip}:{TARGET_PORT}" for k in skip for _, ip in self.s.pods.get(k, [])}
        lats, missing_obs, samples = [], 0, []
        for ip in ips:
            tid = f"{ip}:{TARGET_PORT}"
            if tid in skip_ids:
                continue
            t_obs = self.s.slices.first_time(ip, states, t0 - 1)
            t_call = first.get(tid)
            if t_obs is None or t_call is None:
                missing_obs += 1
                continue
            lats.append(t_call - t_obs)
            samples.append((t_obs, t_call - t_obs))
        writes = [x for x in calls if x["operation"] == op and x["outcome"] == "ok"]
        t_last = max((x["time"] for x in writes), default=t_conv_seen)
        m1 = c.metrics()
        res = {
            "changed_targets": len(ips), "pods_issued_in_s": t_issued - t0,
            "first_to_last_call_s": t_last - t0,
            "latency": lat_summary(lats), "latency_unmatched": missing_obs,
            "latencies_s": sorted(lats),
            "negative_latencies": sum(1 for x in lats if x < 0),
            "calls": by_op(calls), "write_calls": len(writes),
            "write_floor": write_floor(n for k, n in change.items() if k not in skip),
            "targets_per_write_call": [x["targets"] for x in writes],
            "tgb_writes": self.s.tgb_writes(t0, time.time()),
            "controller_histogram": hist_delta_quantiles(m0, m1, metric),
            "client_throttle_wait_s": counter_sum(m1, "aws_api_client_throttle_wait_seconds_sum")
            - counter_sum(m0, "aws_api_client_throttle_wait_seconds_sum"),
            "controller_cpu_s": proc_cpu(c.p.pid) - cpu0,
        }
        self.result[key or kind] = res
        lat = res["latency"]
        log(f"[{self.tag}] {key or kind}: {len(ips)} targets; endpoint->{op} p50 {lat['p50_ms']:.0f} ms, "
            f"p99 {lat['p99_ms']:.0f} ms, max {lat['max_ms']:.0f} ms (n={lat['n']}, unmatched {missing_obs}); "
            f"{len(writes)} {op} calls (floor {res['write_floor']}); all calls {res['calls']}; "
            f"TGB writes {res['tgb_writes']}")
        return res

    # ---- S6 memory -------------------------------------------------------------------------------------------
    def phase_memory(self) -> None:
        c = self.ctrl
        time.sleep(self.o.settle)
        m = proc_status(c.p.pid)
        met = c.metrics()
        self.result["memory"] = {
            "steady_rss_bytes": m.get("VmRSS", 0), "peak_hwm_bytes": m.get("VmHWM", 0),
            "steady_rss_mib": m.get("VmRSS", 0) / 2**20, "peak_hwm_mib": m.get("VmHWM", 0) / 2**20,
            "sampled_rss_max_bytes": c.rss_max, "cpu_total_s": proc_cpu(c.p.pid),
            "cache_objects": {k.split('"')[1]: v for k, v in met.items() if k.startswith("awslbc_cache_objects{")}}
        log(f"[{self.tag}] memory: steady RSS {m.get('VmRSS', 0) / 2**20:.1f} MiB, peak (VmHWM) "
            f"{m.get('VmHWM', 0) / 2**20:.1f} MiB, CPU {self.result['memory']['cpu_total_s']:.1f}s")

    # ---- S5 isolation ----------------------------------------------------------------------------------------
    def phase_isolation(self) -> None:
        """Target group 0 answers AccessDenied to every write while every group scales up; the others' latency."""
        if self.o.groups < 2:
            return
        bad = 0
        http_json("POST", f"{self.emu_url}/_awsemu/faults", {
            "service": "elasticloadbalancing", "operation": ["RegisterTargets", "DeregisterTargets"],
            "target_group_arn": self.tgs[bad], "code": "AccessDenied", "http_status": 403,
            "message": f"bench: no elasticloadbalancing:RegisterTargets on {self.tgs[bad]}"})
        self.faulted = {bad}
        change = dict(self.s.change)
        res = self.phase_change("scale_up", change, key="isolation", skip={bad})
        res["failed_group_calls"] = sum(1 for x in self.calls.between(0) if x["target_group_arn"] == self.tgs[bad]
                                        and x["outcome"] != "ok")
        http_json("DELETE", f"{self.emu_url}/_awsemu/faults")
        self.faulted = set()
        # put the scene back (the faulted group catches up once the fault is gone)
        self.s.delete_pods(change)
        self.until("isolation: scene restored", self.converged, self.o.phase_timeout, 0.2)

    # ---- S4 restart and failover -----------------------------------------------------------------------------
    def phase_failover(self) -> None:
        """A second replica waits; SIGKILL the leader, add one pod per group at once; time until AWS has them."""
        self.standby = sb = self.start_controller("standby")
        sb.wait("standby /readyz", sb.ready, self.s.left(self.o.phase_timeout))
        time.sleep(self.o.settle)
        seq0 = self.calls.last_seq()
        self.mark("failover")
        t_kill = time.time()
        self.ctrl.stop(sig=signal.SIGKILL)
        self.stopped.append(self.ctrl)
        self.ctrl = sb
        self.standby = None
        change = {k: 1 for k in range(self.o.groups)}
        ips = self.s.create_pods(change)
        t_lead = sb.wait("standby leadership", lambda: self.f.is_leader(sb.metrics()),
                         self.s.left(self.o.phase_timeout), 0.1)
        self.until("failover: change in the target groups", self.converged, self.o.phase_timeout, 0.1)
        first = first_call_time(self.calls.between(seq0), "RegisterTargets")
        t_aws = max(first[f"{ip}:{TARGET_PORT}"] for ip in ips)
        window_end = t_kill + self.o.failover_window
        while time.time() < window_end:
            time.sleep(0.5)
        self.calls.poll()
        calls = [x for x in self.calls.between(seq0) if x["received"] <= window_end]
        self.result["failover"] = {
            "kill_to_leader_s": t_lead - t_kill, "kill_to_change_in_aws_s": t_aws - t_kill,
            "window_s": self.o.failover_window, "calls": by_op(calls), "calls_total": len(calls),
            "tgb_writes": self.s.tgb_writes(t_kill, window_end)}
        r = self.result["failover"]
        log(f"[{self.tag}] failover: SIGKILL -> new leader {r['kill_to_leader_s']:.1f}s, -> change in AWS "
            f"{r['kill_to_change_in_aws_s']:.1f}s; {r['calls_total']} AWS calls in {self.o.failover_window:.0f}s "
            f"{r['calls']}")
        self.s.delete_pods(change)
        self.until("failover: scene restored", self.converged, self.o.phase_timeout, 0.2)

    def phase_restart(self) -> None:
        """SIGTERM, start again: time to ready and leader, AWS calls in the window after ready."""
        c = self.ctrl
        exit_s = c.stop()
        self.stopped.append(c)
        seq0 = self.calls.last_seq()
        self.mark("warm restart")
        c = self.ctrl = self.start_controller("warm")
        t_ready = c.wait("/readyz after restart", c.ready, self.s.left(self.o.phase_timeout))
        t_lead = c.wait("leadership after restart", lambda: self.f.is_leader(c.metrics()),
                        self.s.left(self.o.phase_timeout), 0.1)
        window_end = t_ready + self.o.restart_window
        while time.time() < window_end:
            time.sleep(0.5)
        self.calls.poll()
        calls = [x for x in self.calls.between(seq0) if x["received"] <= window_end]
        mem = proc_status(c.p.pid)
        self.result["warm_restart"] = {
            "sigterm_to_exit_s": exit_s, "to_ready_s": t_ready - c.t_start, "to_leader_s": t_lead - c.t_start,
            "window_s": self.o.restart_window, "calls": by_op(calls), "calls_total": len(calls),
            "tgb_writes": self.s.tgb_writes(c.t_start, window_end),
            "peak_hwm_bytes": mem.get("VmHWM", 0), "peak_hwm_mib": mem.get("VmHWM", 0) / 2**20,
            "rss_bytes": mem.get("VmRSS", 0)}
        r = self.result["warm_restart"]
        log(f"[{self.tag}] warm restart: exit {exit_s:.2f}s, ready {r['to_ready_s']:.2f}s, leader "
            f"{r['to_leader_s']:.2f}s; {r['calls_total']} AWS calls in {self.o.restart_window:.0f}s after ready "
            f"{r['calls']}")
        if not self.converged():
            raise RuntimeError("target groups no longer match the pods after the warm restart")

    # ---- S7 Service -> NLB, Ingress -> ALB (harness/lbs.py) ------------------------------------------------------
    def phase_lbs(self) -> None:
        """Creates the NLB Service, then the ALB Ingress, then deletes them in the same order; one at a time, each
        step waits for the previous one to finish, so every call window holds one load balancer's calls."""
        if self.o.groups < 2:
            raise RuntimeError(f"S7 needs --groups >= 2 (set {lbs.NLB_SET} behind the NLB, set {lbs.ALB_SET} behind "
                               f"the ALB); got --groups {self.o.groups}")
        k, ns = self.s.kube, self.s.ns
        sets = {"nlb": lbs.NLB_SET, "alb": lbs.ALB_SET}
        ips = {kind: [ip for _, ip in self.s.pods.get(n, [])] for kind, n in sets.items()}
        net = lbs.seed_network(self.ec2, self.vpc, ips["nlb"] + ips["alb"])
        self.lb_class = ns
        try:
            k.req("POST", "/apis/networking.k8s.io/v1/ingressclasses", lbs.ingress_class(ns))
        except KubeError as e:
            if e.status != 409:
                raise
        self.lb_paths = {
            "nlb": (f"/api/v1/namespaces/{ns}/services",
                    lbs.nlb_service(f"bench-{lbs.NLB_SET:02d}", SERVICE_PORT, "http")),
            "alb": (f"/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses",
                    lbs.alb_ingress(ns, f"svc-{lbs.ALB_SET:02d}", SERVICE_PORT))}
        exclude = set(self.tgs)
        out: dict[str, Any] = {"network": net}
        for kind, (base, body) in self.lb_paths.items():
            want = {f"{ip}:{TARGET_PORT}" for ip in ips[kind]}
            path = f"{base}/{body['metadata']['name']}"
            seq0 = self.calls.last_seq()
            self.mark(f"S7 {kind} create")
            t0 = time.time()
            k.req("POST", base, body)
            st: dict[str, Any] = {}

            def ready() -> bool:
                self.calls.poll()
                if "host" not in st:
                    h = lbs.hostname_of(k.req("GET", path, ok404=True))
                    if h:
                        st["host"], st["hostname"] = time.time(), h
                if "reg" not in st:
                    r = lbs.all_registered_at(self.calls.between(seq0), want, exclude)
                    if r:
                        st["reg"] = r
                return "host" in st and "reg" in st
            self.until(f"S7 {kind}: hostname in the status of {path} and its {len(want)} pod IPs registered in a new "
                       "target group", ready, self.o.phase_timeout, 0.1)
            t_done = max(st["host"], st["reg"][0])
            calls, t_quiet = self.lbs_quiet(seq0, t_done, exclude)
            after = lbs.call_counts([x for x in calls if x["received"] > t_done])
            res = {"to_hostname_s": st["host"] - t0, "to_registered_s": st["reg"][0] - t0, "to_ready_s": t_done - t0,
                   "hostname": st["hostname"], "target_group": st["reg"][1], "targets": len(want),
                   **lbs.call_counts([x for x in calls if x["received"] <= t_done]),
                   "to_quiet_s": t_quiet - t0, "calls_after_ready": after["calls"],
                   "calls_quiet_total": len(calls),
                   "calls_quiet_mutating": sum(1 for x in calls if lbs.is_mutating(x["operation"]))}
            out[kind] = res
            log(f"[{self.tag}] S7 {kind}: hostname {res['to_hostname_s']:.2f}s, {len(want)} targets registered "
                f"{res['to_registered_s']:.2f}s; {res['calls_total']} AWS calls ({res['calls_mutating']} mutating) "
                f"{res['calls']}; until quiet ({res['to_quiet_s']:.1f}s) {len(calls)}, after ready {after['calls']}")
        for kind, (base, body) in self.lb_paths.items():
            path = f"{base}/{body['metadata']['name']}"
            seq0 = self.calls.last_seq()
            self.mark(f"S7 {kind} delete")
            t0 = time.time()
            k.req("DELETE", path)
            st = {}

            def gone() -> bool:
                self.calls.poll()
                if "lb" not in st:
                    t = lbs.first_ok(self.calls.between(seq0), "DeleteLoadBalancer")
                    if t is not None:
                        st["lb"] = t
                if "gone" not in st and k.req("GET", path, ok404=True) is None:
                    st["gone"] = time.time()
                return "lb" in st and "gone" in st
            self.until(f"S7 {kind}: DeleteLoadBalancer and {path} gone (finalizer removed)", gone,
                       self.o.phase_timeout, 0.1)
            t_done = max(st["lb"], st["gone"])
            calls, t_quiet = self.lbs_quiet(seq0, t_done, exclude)
            after = lbs.call_counts([x for x in calls if x["received"] > t_done])
            d = {"to_delete_lb_s": st["lb"] - t0, "to_gone_s": st["gone"] - t0,
                 **lbs.call_counts([x for x in calls if x["received"] <= t_done]),
                 "to_quiet_s": t_quiet - t0, "calls_after_gone": after["calls"], "calls_quiet_total": len(calls),
                 "calls_quiet_mutating": sum(1 for x in calls if lbs.is_mutating(x["operation"]))}
            out[kind]["delete"] = d
            log(f"[{self.tag}] S7 {kind} delete: DeleteLoadBalancer {d['to_delete_lb_s']:.2f}s, object gone "
                f"{d['to_gone_s']:.2f}s; {d['calls_total']} AWS calls ({d['calls_mutating']} mutating) {d['calls']}; "
                f"until quiet ({d['to_quiet_s']:.1f}s) {len(calls)}, after gone {after['calls']}")
        self.result["lbs"] = out

    def lbs_quiet(self, seq0: int, t_done: float, exclude: set[str], cap: float = 60) -> tuple[list[dict], float]:
        """Waits until no AWS call has arrived for --settle seconds after t_done (at most `cap` seconds after it);
        returns the calls since seq0 and the arrival time of the last one (or t_done). Calls naming the scene's own
        target groups (the bindings' periodic work, not S7's) are left out."""
        while True:
            self.calls.poll()
            calls = lbs.without_groups(self.calls.between(seq0), exclude)
            last = max([t_done, *(x["received"] for x in calls)])
            if time.time() - last >= self.o.settle:
                return calls, last
            if time.time() - t_done > cap:
                log(f"[{self.tag}] S7: AWS calls still arriving {cap:.0f}s after the object was done; counted so far")
                return calls, last
            if self.ctrl and not self.ctrl.alive():
                raise RuntimeError(f"controller exited (rc {self.ctrl.p.returncode}); see {self.ctrl.log_path}")
            time.sleep(0.2)

    # ---- S3 readiness gates (a gated scene) ------------------------------------------------------------------
    def gate_latencies(self, ips: set[str], seq_from: int, timeout: float) -> dict[str, Any]:
        """AWS healthy (first RegisterTargets answered + the emulator's `initial` time) -> gate condition True."""
        ev = self.s.gate_events

        def all_true():
            ev.poll()
            return ips <= ev.true_at.keys()
        self.until("readiness gates True", all_true, timeout, 0.2)
        reg = {}
        for x in self.calls.between(seq_from):
            if x["operation"] == "RegisterTargets" and x["outcome"] == "ok":
                for t in x.get("target_ids") or []:
                    reg.setdefault(t.split(":")[0], x["time"])
        lats, timeline = [], []
        for ip in ips:
            healthy = reg[ip] + HEALTH_INITIAL_S
            lats.append(ev.true_at[ip] - healthy)
            timeline.append((healthy, ev.true_at[ip]))
        out = lat_summary(lats)
        out["latencies_s"] = sorted(lats)
        out["timeline"] = sorted(timeline)
        return out

    def phase_gates(self) -> None:
        seq0 = self.calls.last_seq()
        self.mark("gates: initial pods")
        c = self.ctrl = self.start_controller("gates")
        all_ips = {ip for k in self.s.pods for _, ip in self.s.pods[k]}
        self.until("gated targets registered", self.converged, self.o.phase_timeout, 0.1)
        first = self.gate_latencies(all_ips, seq0, self.o.phase_timeout)
        seq1 = self.calls.last_seq()
        self.mark("gates: added pods")
        ips = self.s.create_pods(self.s.change)
        self.until("added gated targets registered", self.converged, self.o.phase_timeout, 0.1)
        added = self.gate_latencies(ips, seq1, self.o.phase_timeout)
        calls = self.calls.between(seq0)
        self.result["gates"] = {"initial": first, "added": added, "calls": by_op(calls),
                                "describe_health_calls": sum(1 for x in calls
                                                             if x["operation"] == "DescribeTargetHealth"),
                                "controller_cpu_s": proc_cpu(c.p.pid)}
        log(f"[{self.tag}] gates: AWS healthy -> gate True, initial pods p50 {first['p50_ms']:.0f} ms p99 "
            f"{first['p99_ms']:.0f} ms; added pods p50 {added['p50_ms']:.0f} ms p99 {added['p99_ms']:.0f} ms; "
            f"{self.result['gates']['describe_health_calls']} DescribeTargetHealth calls")

    # ---- verification and cleanup ----------------------------------------------------------------------------
    def verify(self) -> None:
        """Reads every target group through the API (after all counting) and compares with the pods."""
        bad = 0
        for tg, want in self.desired().items():
            d = self.elb.describe_target_health(TargetGroupArn=tg)["TargetHealthDescriptions"]
            have = {f"{x['Target']['Id']}:{x['Target']['Port']}" for x in d
                    if x["TargetHealth"]["State"] not in ("draining", "unused")}
            bad += len(have ^ want)
        self.result["verify_mismatched_targets"] = bad
        log(f"[{self.tag}] verify (DescribeTargetHealth): {bad} mismatched targets")

    def run(self, phases: list[str]) -> dict[str, Any]:
        """Runs the named phases in order: cold, scale, memory, failover, isolation, restart, gates, lbs."""
        try:
            self.result["load_before"] = os.getloadavg()
            if not self.f.binary or not os.access(self.f.binary, os.X_OK):
                raise RuntimeError(f"{self.f.name}: no executable controller binary at {self.f.binary!r}")
            st = os.stat(self.f.binary)
            self.result["binary"] = {"path": self.f.binary, "mtime": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(
                st.st_mtime)), "size": st.st_size, "args": self.f.extra}
            self.s.ctrl = None   # the scene's waits must not watch the previous trial's controller
            self.cert_dir = self_signed_cert(self.s.out)
            self.start_emulator()
            self.create_bindings()
            for ph in phases:
                if ph == "cold":
                    self.phase_cold()
                elif ph == "scale":
                    self.phase_change("scale_up", self.s.change)
                    self.phase_change("scale_down", self.s.change)
                elif ph == "memory":
                    self.phase_memory()
                elif ph == "failover":
                    self.phase_failover()
                elif ph == "isolation":
                    self.phase_isolation()
                elif ph == "restart":
                    self.phase_restart()
                elif ph == "gates":
                    self.phase_gates()
                elif ph == "lbs":
                    self.phase_lbs()
            if "gates" not in phases:
                self.verify()
            self.result["ok"] = True
        except Exception as e:  # noqa: BLE001 - any failure: record it, clean up, go on
            self.result["ok"] = False
            self.result["error"] = f"{type(e).__name__}: {e}"
            log(f"[{self.tag}] failed: {type(e).__name__}: {e}")
        finally:
            self.result["load_after"] = os.getloadavg()
            self.result["setup"] = self.s.info
            self.result["marks"] = self.marks
            self.result["memory_samples"] = [s for c in [*self.stopped, self.ctrl] if c for s in c.samples]
            try:
                with open(f"{self.out}/summary.json", "w") as f:
                    json.dump(self.result, f, indent=1, default=str)
            finally:
                self.cleanup()
        return self.result

    def cleanup(self) -> None:
        """Stops the controller(s), then removes the bindings (finalizers stripped) and the emulator."""
        k = self.s.kube
        base = f"/apis/elbv2.k8s.aws/v1beta1/namespaces/{self.s.ns}/targetgroupbindings"
        for c in (self.standby, self.ctrl):
            if c:
                c.stop()
        # S7's objects (left over when the phase failed): their finalizers would hold the namespace
        for kind, (coll, body) in self.lb_paths.items():
            try:
                path = f"{coll}/{body['metadata']['name']}"
                k.merge_patch(path, {"metadata": {"finalizers": None}}, ok404=True)
                k.req("DELETE", path, ok404=True)
            except Exception as e:  # noqa: BLE001
                log(f"[{self.tag}] cleanup: S7 {kind}: {e}")
        if self.lb_class:
            try:
                k.req("DELETE", f"/apis/networking.k8s.io/v1/ingressclasses/{self.lb_class}", ok404=True)
            except Exception as e:  # noqa: BLE001
                log(f"[{self.tag}] cleanup: IngressClass {self.lb_class}: {e}")
        try:
            for t in (k.req("GET", base, ok404=True) or {}).get("items", []):
                k.merge_patch(f"{base}/{t['metadata']['name']}", {"metadata": {"finalizers": None}}, ok404=True)
            k.req("DELETE", base, ok404=True)
            t0 = time.time()
            while time.time() - t0 < 60 and (k.req("GET", base, ok404=True) or {}).get("items"):
                time.sleep(0.5)
        except Exception as e:  # noqa: BLE001
            log(f"[{self.tag}] cleanup: bindings: {e}")
        self.s.ctrl = None
        if self.emu and self.emu.poll() is None:
            try:
                self.calls.poll()
                with open(f"{self.out}/calls.json", "w") as f:
                    json.dump(self.calls.calls, f)
            except Exception as e:  # noqa: BLE001
                log(f"[{self.tag}] cleanup: call log: {e}")
            self.emu.terminate()
            try:
                self.emu.wait(10)
            except subprocess.TimeoutExpired:
                self.emu.kill()
