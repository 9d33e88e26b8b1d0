"""The watcher process (its timestamps must not wait on the benchmark's own threads) and readers of its output.

    python bench/harness/watcher.py NAMESPACE OUT_DIR [--pods]

Writes, in OUT_DIR, one JSON line per change:
- slices.jsonl: an endpoint address's aggregated state, {"t", "ip", "svc", "s": ready|terminating|notready|gone};
- tgbs.jsonl: every TargetGroupBinding event (each MODIFIED is one write by the controller);
- pods.jsonl (with --pods): a pod's readiness-gate conditions turning True, {"t", "pod", "ip", "gate"}.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                    "e2e", "scripts"))
from harness.kube import Kube, watch_loop  # noqa: E402

GATE_PREFIX = "target-health.elbv2.k8s.aws/"


def ep_state(ep: dict) -> str:
    c = ep.get("conditions") or {}
    if c.get("ready", True) is True:   # nil ready means ready (API doc)
        return "ready"
    return "terminating" if c.get("terminating") else "notready"


class SliceState:
    """Aggregates endpoint states over slices (an IP can sit in several while they are rewritten)."""

    def __init__(self):
        self.slices: dict[str, dict[str, str]] = {}   # slice name -> {ip: state}
        self.svc_of: dict[str, str] = {}
        self.where: dict[str, set[str]] = {}          # ip -> slices holding it
        self.last: dict[str, str] = {}                # ip -> last emitted state

    def aggregate(self, ip: str) -> str:
        states = {self.slices[s][ip] for s in self.where.get(ip, ()) if ip in self.slices.get(s, {})}
        for s in ("ready", "terminating", "notready"):
            if s in states:
                return s
        return "gone"

    def apply(self, name: str, obj: dict | None, t: float) -> list[dict]:
        old = self.slices.pop(name, {})
        new: dict[str, str] = {}
        if obj is not None:
            self.svc_of[name] = (obj["metadata"].get("labels") or {}).get("kubernetes.io/service-name", "")
            for ep in obj.get("endpoints") or []:
                for a in ep.get("addresses") or []:
                    new[a] = ep_state(ep)
            self.slices[name] = new
        for ip in old.keys() - new.keys():
            self.where.get(ip, set()).discard(name)
        for ip in new:
            self.where.setdefault(ip, set()).add(name)
        out = []
        for ip in old.keys() | new.keys():
            s = self.aggregate(ip)
            if self.last.get(ip) != s:
                self.last[ip] = s
                out.append({"t": t, "ip": ip, "svc": self.svc_of.get(name, ""), "s": s})
        return out


def true_gates(pod: dict) -> set[str]:
    return {c["type"] for c in (pod.get("status") or {}).get("conditions") or []
            if c.get("type", "").startswith(GATE_PREFIX) and c.get("status") == "True"}


def follow(kube: Kube, base: str, on_event, name_of=lambda o: o["metadata"]["name"]) -> None:
    """List `base`, replay the list as ADDED events, then watch it forever (relists replay again)."""
    def relist() -> str:
        lst = kube.req("GET", base)
        t = time.time()
        for o in lst["items"]:
            on_event("ADDED", o, t)
        return lst["metadata"]["resourceVersion"]
    watch_loop(kube, base, relist, on_event)


def main(ns: str, out_dir: str, pods: bool) -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                    "e2e", "scripts"))
    from kubeapi import load_env
    env = load_env()
    lock = threading.Lock()

    def writer(name: str):
        f = open(os.path.join(out_dir, name), "a", buffering=1)

        def write(lines: list[dict]) -> None:
            if lines:
                with lock:
                    f.write("\n".join(json.dumps(x) for x in lines) + "\n")
        return write

    w_tgb = writer("tgbs.jsonl")

    def tgb_event(typ: str, obj: dict, t: float) -> None:
        md, st = obj.get("metadata") or {}, obj.get("status") or {}
        cp = (md.get("annotations") or {}).get("elbv2.k8s.aws/checkpoint")
        w_tgb([{"t": t, "type": typ, "name": md.get("name"), "rv": md.get("resourceVersion"),
                "checkpoint": cp[-8:] if cp else None, "registered": st.get("registeredTargets"),
                "finalizers": len(md.get("finalizers") or [])}])

    threading.Thread(target=follow, daemon=True, args=(
        Kube(env), f"/apis/elbv2.k8s.aws/v1beta1/namespaces/{ns}/targetgroupbindings", tgb_event)).start()

    if pods:
        w_pod = writer("pods.jsonl")
        seen: dict[str, set[str]] = {}

        def pod_event(typ: str, obj: dict, t: float) -> None:
            name = obj["metadata"]["name"]
            if typ == "DELETED":
                seen.pop(name, None)
                return
            now = true_gates(obj)
            new = now - seen.get(name, set())
            seen[name] = now
            ip = (obj.get("metadata", {}).get("annotations") or {}).get("lbc-e2e/pod-ip", "")
            w_pod([{"t": t, "pod": name, "ip": ip, "gate": g} for g in sorted(new)])
        threading.Thread(target=follow, daemon=True, args=(
            Kube(env), f"/api/v1/namespaces/{ns}/pods", pod_event)).start()

    w_slice = writer("slices.jsonl")
    state = SliceState()
    kube = Kube(env)
    base = f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"

    def relist() -> str:
        lst = kube.req("GET", base)
        t = time.time()
        seen = set()
        for s in lst["items"]:
            seen.add(s["metadata"]["name"])
            w_slice(state.apply(s["metadata"]["name"], s, t))
        for name in list(state.slices):
            if name not in seen:
                w_slice(state.apply(name, None, t))
        return lst["metadata"]["resourceVersion"]

    def on_event(typ: str, obj: dict, t: float) -> None:
        w_slice(state.apply(obj["metadata"]["name"], None if typ == "DELETED" else obj, t))

    rv = relist()
    w_slice([{"t": time.time(), "synced": True}])
    watch_loop(kube, base, relist, on_event, rv)


class JsonlTail:
    """Reads a growing JSON-lines file, a chunk per poll()."""

    def __init__(self, path: str):
        self.path, self.pos, self.buf = path, 0, ""

    def read_new(self) -> list[dict]:
        try:
            with open(self.path) as f:
                f.seek(self.pos)
                chunk = f.read()
                self.pos = f.tell()
        except FileNotFoundError:
            return []
        self.buf += chunk
        *lines, self.buf = self.buf.split("\n")
        return [json.loads(x) for x in lines if x]


class SliceEvents(JsonlTail):
    """First time each IP reached each state, from slices.jsonl."""

    def __init__(self, path: str):
        super().__init__(path)
        self.synced = False
        self.state: dict[str, str] = {}
        self.times: dict[str, dict[str, list[float]]] = {}   # ip -> state -> every time it entered it

    def poll(self) -> None:
        for e in self.read_new():
            if e.get("synced"):
                self.synced = True
                continue
            self.state[e["ip"]] = e["s"]
            # all entries, not the first: an address is reused by a later pod (later phase or trial)
            self.times.setdefault(e["ip"], {}).setdefault(e["s"], []).append(e["t"])

    def ready_ips(self) -> set[str]:
        return {ip for ip, s in self.state.items() if s == "ready"}

    def first_time(self, ip: str, states: tuple[str, ...], after: float) -> float | None:
        ts = [t for s, tl in self.times.get(ip, {}).items() if s in states for t in tl if t >= after]
        return min(ts) if ts else None


class GateEvents(JsonlTail):
    """Pod IP -> first time its readiness gate read True, from pods.jsonl."""

    def __init__(self, path: str):
        super().__init__(path)
        self.true_at: dict[str, float] = {}

    def poll(self) -> None:
        for e in self.read_new():
            self.true_at.setdefault(e["ip"], e["t"])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], "--pods" in sys.argv[3:])
