"""A controller process: start, readiness, metrics, memory (VmRSS/VmHWM sampled) and CPU seconds."""
from __future__ import annotations

import math
import os
import signal
import subprocess
import threading
import time
from typing import Any

from harness.emulator import http_get


class Deadline(Exception):
    pass


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


def parse_metrics(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        k, _, v = line.rpartition(" ")
        try:
            out[k] = float(v)
        except ValueError:
            pass
    return out


class Controller:
    """One controller process; samples (time, VmRSS, CPU seconds) every 0.25 s for the plots."""

    def __init__(self, binary: str, args: list[str], env: dict[str, str], log_path: str,
                 metrics_port: int, health_port: int):
        self.metrics_port, self.health_port = metrics_port, health_port
        self.log_path = log_path
        self.logf = open(log_path, "ab")
        self.t_start = time.time()
        self.p = subprocess.Popen([binary, *args], env=env, stdin=subprocess.DEVNULL, stdout=self.logf,
                                  stderr=subprocess.STDOUT)
        self.rss_max = 0
        self.samples: list[tuple[float, int, float]] = []
        self._stop = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while not self._stop.wait(0.25):
            rss = proc_status(self.p.pid).get("VmRSS", 0)
            if not rss:
                continue
            self.rss_max = max(self.rss_max, rss)
            self.samples.append((time.time(), rss, proc_cpu(self.p.pid)))

    def alive(self) -> bool:
        return self.p.poll() is None

    def ready(self) -> bool:
        return http_get(f"http://127.0.0.1:{self.health_port}/readyz", timeout=2)[0] == 200

    def metrics(self) -> dict[str, float]:
        st, raw = http_get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10)
        return parse_metrics(raw.decode()) if st == 200 else {}

    def wait(self, what: str, fn, timeout: float, interval: float = 0.05) -> float:
        t0 = time.time()
        while not fn():
            if not self.alive():
                raise RuntimeError(f"controller exited (rc {self.p.returncode}) waiting for {what}; "
                                   f"see {self.log_path}")
            if time.time() - t0 > timeout:
                raise Deadline(f"timeout after {timeout:.0f}s waiting for {what}")
            time.sleep(interval)
        return time.time()

    def stop(self, timeout: float = 20, sig: int = signal.SIGTERM) -> float:
        """Signal (SIGTERM by default), wait; SIGKILL after `timeout`. Returns seconds to exit."""
        t0 = time.time()
        if self.alive():
            self.p.send_signal(sig)
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
