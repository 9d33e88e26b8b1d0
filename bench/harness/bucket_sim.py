"""A model of scale-up registration against one shared write bucket, to know what is possible.

RegisterTargets names one target group, and every group of the account draws on one client-side
bucket (ALBC's default, also ours: 4 calls/s, burst 20). When pods of G groups turn ready over a
spread of T seconds, no controller can beat the bucket: this model says how close a policy gets.

Policies:
- ``greedy`` is what the controller did before pacing: a group's reconcile starts after the debounce, waits its
  turn for a token (first come, first served) and plans again after the wait, so the call carries
  every target that arrived meanwhile;
- ``paced`` also holds a group's next write until ``active / (rate + tokens / horizon)`` seconds
  after its last one (``active``: groups that wrote within the horizon), so the burst is spread
  over ``horizon`` seconds instead of spent at once on small calls;
- ``adaptive`` paces only while at most half the burst of groups are writing (``2 * active <= burst``),
  else it is greedy (with more groups each gets one token per round anyway and holding back only adds
  latency), and scales the hold by how far the bucket has drained: none while it is full. This is what
  the controller does since pacing landed (``model/src/pacing.rs``).

Run ``python -m bench.harness.bucket_sim`` for the table in docs/benchmarks.md.
"""
from __future__ import annotations

import heapq
import random
import statistics
from dataclasses import dataclass

from .stats import pct

ARRIVE, ASK, GRANT, SEND, DONE = range(5)


@dataclass(frozen=True)
class Scenario:
    groups: int
    targets: int
    spread_s: float
    rate: float = 4.0
    burst: int = 20
    debounce_s: float = 0.05
    call_s: float = 0.03


@dataclass(frozen=True)
class Outcome:
    calls: int
    latencies: list[float]

    @property
    def p50(self) -> float:
        return pct(self.latencies, 0.5)

    @property
    def p99(self) -> float:
        return pct(self.latencies, 0.99)


class _Bucket:
    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst, self.tokens, self.at = rate, burst, float(burst), 0.0

    def level(self, now: float) -> float:
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        return self.tokens

    def next_token_in(self, now: float) -> float:
        return max((1.0 - self.level(now)) / self.rate, 1e-4)


def simulate(sc: Scenario, policy: str = "greedy", horizon_s: float = 2.0, seed: int = 1) -> Outcome:
    """Every target arrives once, uniformly over the spread, in a random group; returns the calls
    made and each target's latency from arrival to the end of the call that carried it."""
    if policy not in ("greedy", "paced", "adaptive"):
        raise ValueError(f"unknown policy {policy!r}; expected 'greedy', 'paced' or 'adaptive'")
    rnd = random.Random(seed)
    events: list[tuple[float, int, int, int]] = []  # (time, kind, seq, group)
    seq = 0

    def at(t: float, kind: int, g: int) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (t, kind, seq, g))

    for _ in range(sc.targets):
        at(rnd.uniform(0, sc.spread_s), ARRIVE, rnd.randrange(sc.groups))
    bucket = _Bucket(sc.rate, sc.burst)
    pending: list[list[float]] = [[] for _ in range(sc.groups)]
    busy = [False] * sc.groups
    last_write = [float("-inf")] * sc.groups
    waiting: list[int] = []
    calls, latencies = 0, []

    def start(now: float, g: int) -> None:
        busy[g] = True
        t = now + sc.debounce_s
        if policy in ("paced", "adaptive"):
            active = max(1, sum(1 for x in range(sc.groups) if x == g or last_write[x] > now - horizon_s))
            level = bucket.level(now)
            if policy == "paced":
                t = max(t, last_write[g] + active / (sc.rate + level / horizon_s))
            elif 2 * active <= sc.burst:
                share = active / (sc.rate + max(level, 0.0) / horizon_s)
                t = max(t, last_write[g] + share * (1.0 - max(level, 0.0) / sc.burst))
        at(t, ASK, g)

    while events:
        now, kind, _, g = heapq.heappop(events)
        if kind == ARRIVE:
            pending[g].append(now)
            if not busy[g]:
                start(now, g)
        elif kind == ASK:
            waiting.append(g)
            at(now, GRANT, -1)
        elif kind == GRANT:
            while waiting and bucket.level(now) >= 1.0 - 1e-9:
                bucket.tokens -= 1.0
                at(now, SEND, waiting.pop(0))
            if waiting:
                at(now + bucket.next_token_in(now), GRANT, -1)
        elif kind == SEND:
            calls += 1
            last_write[g] = now
            latencies += [now + sc.call_s - a for a in pending[g]]
            pending[g] = []
            at(now + sc.call_s, DONE, g)
        elif kind == DONE:
            busy[g] = False
            if pending[g]:
                start(now, g)
    return Outcome(calls, latencies)


def median_outcome(sc: Scenario, policy: str, horizon_s: float = 2.0, seeds: int = 3) -> tuple[float, float, float]:
    runs = [simulate(sc, policy, horizon_s, seed) for seed in range(seeds)]
    return (statistics.median(r.calls for r in runs), statistics.median(r.p50 for r in runs),
            statistics.median(r.p99 for r in runs))


def main() -> None:
    print("| groups | targets | spread | floor | greedy: calls, p50 / p99 | paced (2 s): calls, p50 / p99 "
          "| adaptive: calls, p50 / p99 |")
    print("|---|---|---|---|---|---|---|")
    for groups, targets in ((1, 100), (10, 100), (10, 1000), (20, 1000), (50, 5000)):
        for spread in (0.9, 3.6, 8.3):
            sc = Scenario(groups, targets, spread)
            floor = groups * -(-targets // groups // 200)
            g = median_outcome(sc, "greedy")
            p = median_outcome(sc, "paced")
            a = median_outcome(sc, "adaptive")
            print(f"| {groups} | {targets} | {spread} s | {floor} | {g[0]:.0f}, {g[1]:.2f} / {g[2]:.2f} s "
                  f"| {p[0]:.0f}, {p[1]:.2f} / {p[2]:.2f} s | {a[0]:.0f}, {a[1]:.2f} / {a[2]:.2f} s |")


if __name__ == "__main__":
    main()
