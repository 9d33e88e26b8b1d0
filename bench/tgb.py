#!/usr/bin/env python3
"""TargetGroupBinding benchmark: the controller's hot path on the local e2e environment (our controller alone;
bench/compare runs the same harness for ours beside ALBC).

    e2e/up && source e2e/.run/env
    cargo build --release -p aws-lb-controller
    $LBC_VENV/bin/python bench/tgb.py --pods 1000 --groups 10 [--runs 3]

Per run, from nothing: a private AWS emulator (its own port; the shared one on 4566 is left alone), a VPC and
G IP target groups in it, a namespace with G Services, P pods spread over fake kwok nodes of our own (pod CIDRs
carved from 10.0.192.0/18 inside the VPC, pod IPs given through the `lbc-e2e/pod-ip` annotation), and G
TargetGroupBindings. Then, with the release controller binary (--watch-namespace the run's namespace):

  1. cold start: controller started with everything present -> every target group holds every pod IP
     (from the emulator's call log); AWS calls vs the floor sum(ceil(targets/batch)) + reads;
  2. scale up each set by --change-pct: per-target latency from the endpoint turning ready in an EndpointSlice
     (our own watch, in a separate process) to the RegisterTargets call naming it (emulator arrival time);
     the controller's own histogram; write calls vs sum(ceil(added/batch));
  3. scale down the same pods: endpoint turning terminating -> DeregisterTargets naming it; same figures;
  4. peak (VmHWM) and steady (VmRSS) memory of the controller process, CPU seconds per phase;
  5. warm restart: SIGTERM, start again, time to /readyz and to leadership, AWS calls in the 30 s after ready.

Medians over runs of several invocations: `bench/tgb.py report bench/results/*-p10000-g10-r*/*/summary.json`.

Everything binds 127.0.0.1. Everything the run creates (namespace, nodes, target groups, emulator, controller,
watcher) is removed at the end, also on error or Ctrl-C. Results: printed, plus bench/results/<run>/ (summary
JSON, call log, controller logs). Every wait is bounded (--phase-timeout, --max-seconds).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness.cli import add_common, checked_env  # noqa: E402
from harness.flavors import Flavor  # noqa: E402
from harness.scene import Scene, Trial, log  # noqa: E402
from harness.stats import median_of  # noqa: E402


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
    if len(sys.argv) >= 2 and sys.argv[1] == "report":
        report(sys.argv[2:])
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    add_common(p, max_seconds=1800)
    p.add_argument("--controller-arg", action="append", default=[], help="extra controller flag (repeatable)")
    o = p.parse_args()
    env = checked_env(o.binary)

    stamp = time.strftime("%Y%m%d-%H%M%S")
    log(f"benchmark: {o.pods} pods, {o.groups} target groups, change {o.change_pct:g}%, {o.runs} run(s); "
        f"binary {o.binary}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    results = []
    for i in range(o.runs):
        run_id = f"{stamp[-6:]}{i}"
        out = os.path.join(o.out, f"{stamp}-p{o.pods}-g{o.groups}-r{i}")
        log(f"---- run {i + 1}/{o.runs} ({run_id}) -> {out}")
        scene = Scene(o, env, run_id, out)
        try:
            try:
                scene.setup()
                trial = Trial(scene, Flavor("ours", "ours", o.binary, o.controller_arg), "ours", watch_ns=scene.ns)
                results.append(trial.run(["cold", "scale", "memory", "restart"]))
            except KeyboardInterrupt:
                log("interrupted (cleaned up)")
                raise SystemExit(130)
            except Exception as e:  # noqa: BLE001 - setup failed: record it, go on with the next run
                log(f"run {run_id} failed in setup: {type(e).__name__}: {e}")
                results.append({"run": run_id, "ok": False, "error": f"{type(e).__name__}: {e}"})
        finally:
            scene.cleanup()
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
