"""A private AWS emulator per run (e2e/emulator/awsemu.py on a free port) and its call log."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import urllib.error
import urllib.request
from typing import Any


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


def http_json(method: str, url: str, body: Any = None, timeout: float = 10) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        raw = r.read()
    return json.loads(raw) if raw else None


def start_emulator(venv: str, repo: str, out_dir: str, serialize: bool = True) -> tuple[subprocess.Popen, str]:
    port = free_port()
    cmd = [os.path.join(venv, "bin", "python"), os.path.join(repo, "e2e/emulator/awsemu.py"),
           "--host", "127.0.0.1", "--port", str(port)]
    if not serialize:
        cmd.append("--no-serialize")
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=open(f"{out_dir}/awsemu.log", "ab"),
                         stderr=subprocess.STDOUT, start_new_session=True)
    return p, f"http://127.0.0.1:{port}"


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
    """Calls counted by operation; failed ones as `Operation!ErrorCode`."""
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
