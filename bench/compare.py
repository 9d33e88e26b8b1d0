#!/usr/bin/env python3
"""Our controller beside the upstream AWS Load Balancer Controller (ALBC), on the same local environment.

    e2e/up && source e2e/.run/env
    cargo build --release -p aws-lb-controller
    /work/shared/peers/build-albc.sh          # or any ALBC binary: --albc-bin / LBC_ALBC_BIN
    bench/compare --pods 1000 --groups 10 --runs 3

Per repetition: one scene (namespace, kwok nodes labelled as Fargate for ALBC's ENI lookup, Services, pods, the
watcher), then one trial per controller against it, one after the other: ours, ALBC at its defaults, ALBC tuned
for large clusters (--tuned-runs). Each trial has its own emulator, fresh target groups and fresh bindings; both
controllers watch only the scene's namespace (--watch-all: every namespace, their default; on a shared test
cluster that counts other scenes' pods in their memory) and run with leader election on (their default). The
gated scenario (S3) gets a scene of its own per trial (its pods must not carry another controller's gate
conditions).

Scenarios: S1 cold start, S2 scale up/down by --change-pct, S3 readiness gates, S4 leader failover (SIGKILL)
and warm restart, S5 isolation (one target group answering AccessDenied), S6 memory and CPU, S7 a Service ->
NLB and an Ingress -> ALB created and deleted over the pods of sets 0 and 1 (harness/lbs.py; needs --groups >= 2).
Prints one table (scenario, metric, medians per controller, ratio ALBC / ours: above 1 means ours is lower,
i.e. better for every metric here), writes results JSON and one PNG per scenario under --out.
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
from harness.flavors import Flavor, albc_tuned_args  # noqa: E402
from harness.scene import Scene, Trial, log  # noqa: E402
from harness.stats import comparison_rows, table  # noqa: E402

ALBC_CACHED = os.path.expanduser("~/.cache/aws-lb-controller/albc-225f4456/controller")
ALL = ["S1", "S2", "S3", "S4", "S5", "S6", "S7"]
FLAVORS = ["ours", "albc", "albc-tuned"]
SCENARIO_KEYS = {"S1": "cold_start", "S2": "scale_up", "S3": "gates", "S4": "failover", "S5": "isolation",
                 "S6": "memory", "S7": "lbs"}

METRICS = [
    ("S1 cold start", "to /readyz (s)", "cold_start.to_ready_s"),
    ("S1 cold start", "to converged (s)", "cold_start.to_converged_s"),
    ("S1 cold start", "AWS calls", "cold_start.calls_total"),
    ("S1 cold start", "RegisterTargets calls", "cold_start.register_calls"),
    ("S1 cold start", "RegisterTargets floor", "cold_start.register_floor"),
    ("S1 cold start", "controller CPU (s)", "cold_start.controller_cpu_s"),
    ("S2 scale up", "endpoint->Register p50 (ms)", "scale_up.latency.p50_ms"),
    ("S2 scale up", "endpoint->Register p99 (ms)", "scale_up.latency.p99_ms"),
    ("S2 scale up", "endpoint->Register max (ms)", "scale_up.latency.max_ms"),
    ("S2 scale up", "RegisterTargets calls", "scale_up.write_calls"),
    ("S2 scale up", "call floor", "scale_up.write_floor"),
    ("S2 scale down", "terminating->Deregister p50 (ms)", "scale_down.latency.p50_ms"),
    ("S2 scale down", "terminating->Deregister p99 (ms)", "scale_down.latency.p99_ms"),
    ("S2 scale down", "terminating->Deregister max (ms)", "scale_down.latency.max_ms"),
    ("S2 scale down", "DeregisterTargets calls", "scale_down.write_calls"),
    ("S2 scale down", "call floor", "scale_down.write_floor"),
    ("S3 gates", "initial: healthy->gate p50 (ms)", "gates.initial.p50_ms"),
    ("S3 gates", "initial: healthy->gate p99 (ms)", "gates.initial.p99_ms"),
    ("S3 gates", "added: healthy->gate p50 (ms)", "gates.added.p50_ms"),
    ("S3 gates", "added: healthy->gate p99 (ms)", "gates.added.p99_ms"),
    ("S3 gates", "DescribeTargetHealth calls", "gates.describe_health_calls"),
    ("S4 failover", "SIGKILL -> new leader (s)", "failover.kill_to_leader_s"),
    ("S4 failover", "SIGKILL -> change in AWS (s)", "failover.kill_to_change_in_aws_s"),
    ("S4 failover", "AWS calls in window", "failover.calls_total"),
    ("S4 warm restart", "to /readyz (s)", "warm_restart.to_ready_s"),
    ("S4 warm restart", "to leader (s)", "warm_restart.to_leader_s"),
    ("S4 warm restart", "AWS calls in window", "warm_restart.calls_total"),
    ("S5 isolation", "others: endpoint->Register p99 (ms)", "isolation.latency.p99_ms"),
    ("S5 isolation", "others: RegisterTargets calls", "isolation.write_calls"),
    ("S5 isolation", "failed calls to the denied group", "isolation.failed_group_calls"),
    ("S6 memory", "peak VmHWM (MiB)", "memory.peak_hwm_mib"),
    ("S6 memory", "steady VmRSS (MiB)", "memory.steady_rss_mib"),
    ("S6 memory", "CPU seconds, whole trial", "memory.cpu_total_s"),
    *[row for kind, name in (("nlb", "S7 Service->NLB"), ("alb", "S7 Ingress->ALB")) for row in (
        (name, "create->hostname (s)", f"lbs.{kind}.to_hostname_s"),
        (name, "create->targets registered (s)", f"lbs.{kind}.to_registered_s"),
        (name, "AWS calls to ready", f"lbs.{kind}.calls_total"),
        (name, "mutating calls to ready", f"lbs.{kind}.calls_mutating"),
        (name, "AWS calls until quiet", f"lbs.{kind}.calls_quiet_total"),
        (name, "delete->DeleteLoadBalancer (s)", f"lbs.{kind}.delete.to_delete_lb_s"),
        (name, "delete->object gone (s)", f"lbs.{kind}.delete.to_gone_s"),
        (name, "AWS calls to gone", f"lbs.{kind}.delete.calls_total"),
        (name, "mutating calls to gone", f"lbs.{kind}.delete.calls_mutating"),
        (name, "AWS calls until quiet (delete)", f"lbs.{kind}.delete.calls_quiet_total"))],
]


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    add_common(p, max_seconds=3600)
    p.add_argument("--tuned-runs", type=int, default=1, help="repetitions that also run ALBC tuned (0: none)")
    p.add_argument("--scenarios", default="", help=f"comma-separated subset of {','.join(ALL)} (default: all; "
                   "S7 needs --groups >= 2 and is left out of the default below that)")
    p.add_argument("--albc-bin", default=os.environ.get("LBC_ALBC_BIN") or ALBC_CACHED,
                   help="ALBC binary (default $LBC_ALBC_BIN, else build-albc.sh's cache); missing: ours only")
    p.add_argument("--gate-pods", type=int, default=0, help="pods of the S3 scene (default --pods)")
    p.add_argument("--watch-all", action="store_true",
                   help="both controllers watch every namespace (default: only the scene's, --watch-namespace)")
    p.add_argument("--flavors", default="ours,albc,albc-tuned",
                   help="which columns to run (e.g. albc,albc-tuned now, ours later; join with `report`)")
    o = p.parse_args(argv)
    explicit = bool(o.scenarios.strip())
    o.scenarios = [s.strip().upper() for s in o.scenarios.split(",") if s.strip()] if explicit else list(ALL)
    if "S7" in o.scenarios and o.groups < 2:
        if explicit:
            p.error(f"--scenarios S7 needs --groups >= 2 (set 0 behind the NLB, set 1 behind the ALB); got "
                    f"--groups {o.groups}")
        o.scenarios.remove("S7")
    o.flavors = [f.strip() for f in o.flavors.split(",") if f.strip()]
    if not o.flavors or set(o.flavors) - set(FLAVORS):
        p.error(f"--flavors: {o.flavors} is not a non-empty subset of {FLAVORS}")
    bad = [s for s in o.scenarios if s not in ALL]
    if bad:
        p.error(f"--scenarios: unknown {bad}; known {ALL}")
    return o


def main_phases(scenarios: list[str]) -> list[str]:
    """The phases of the shared scene, in order (cold start always: every other phase needs it)."""
    out = ["cold"]
    if "S2" in scenarios or "S5" in scenarios:
        out.append("scale")
    if "S6" in scenarios or "S2" in scenarios:
        out.append("memory")
    if "S5" in scenarios:
        out.append("isolation")
    if "S4" in scenarios:
        out += ["failover", "restart"]
    if "S7" in scenarios:
        out.append("lbs")
    return out


def main() -> None:
    if sys.argv[1:2] == ["report"]:
        join_reports(sys.argv[2:])
        return
    o = parse(sys.argv[1:])
    env = checked_env()
    skipped = ""
    by_name = {"ours": Flavor("ours", "ours", o.binary)}
    if o.albc_bin and os.access(o.albc_bin, os.X_OK):
        by_name["albc"] = Flavor("albc", "albc", o.albc_bin)
        by_name["albc-tuned"] = Flavor("albc-tuned", "albc", o.albc_bin, albc_tuned_args(o.groups))
    elif {"albc", "albc-tuned"} & set(o.flavors):
        skipped = (f"ALBC column skipped: no executable ALBC binary at {o.albc_bin!r} (set --albc-bin or "
                   "LBC_ALBC_BIN, or build it with the peers' build-albc.sh)")
        log(skipped)
    # in the order given: a binary still being built can come last
    flavors = [by_name[n] for n in o.flavors if n in by_name and n != "albc-tuned"]
    tuned = by_name.get("albc-tuned") if "albc-tuned" in o.flavors else None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    root = os.path.join(o.out, f"compare-{stamp}-p{o.pods}-g{o.groups}")
    os.makedirs(root, exist_ok=True)
    log(f"compare: {o.pods} pods, {o.groups} groups, {o.runs} run(s), scenarios {','.join(o.scenarios)}; "
        f"{', '.join(f.name for f in flavors)}{' (+ albc-tuned in ' + str(o.tuned_runs) + ' run(s))' if tuned else ''}"
        f"; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; results {root}")
    names = {f.name for f in flavors}
    trials: dict[str, list[dict]] = {n: [] for n in FLAVORS if n in names}
    if tuned and o.tuned_runs > 0:
        trials[tuned.name] = []
    phases = main_phases(o.scenarios)
    for i in range(o.runs):
        these = flavors + ([tuned] if tuned and i < o.tuned_runs else [])
        if not these:
            break
        run_id = f"{stamp[-6:]}{i}"
        try:
            scene = Scene(o, env, run_id, os.path.join(root, f"r{i}"), changes=2 if "S5" in o.scenarios else 1)
            try:
                scene.setup()
                for f in these:
                    log(f"---- run {i + 1}/{o.runs}: {f.name}")
                    watch = "" if o.watch_all else scene.ns
                    trials[f.name].append(Trial(scene, f, f.name, watch_ns=watch).run(phases))
            finally:
                scene.cleanup()
            if "S3" in o.scenarios:
                for j, f in enumerate(these):
                    log(f"---- run {i + 1}/{o.runs}: {f.name}, readiness gates")
                    gs = Scene(o, env, f"{run_id}g{j}", os.path.join(root, f"r{i}-gates-{f.name}"), gates=True,
                               pods=o.gate_pods or o.pods)
                    try:
                        gs.setup()
                        watch = "" if o.watch_all else gs.ns
                        merge_gates(trials[f.name], i, Trial(gs, f, f.name, watch_ns=watch).run(["gates"]))
                    finally:
                        gs.cleanup()
        except KeyboardInterrupt:
            log("interrupted (cleaned up)")
            raise SystemExit(130)
        except Exception as e:  # noqa: BLE001 - a failed setup: say so, go on with the next repetition
            log(f"run {i + 1} failed: {type(e).__name__}: {e}")
    report(o, root, trials, skipped)


def merge_gates(runs: list[dict], i: int, gated: dict) -> None:
    """The gated trial's figures join the same repetition's main trial (one result per flavor and run)."""
    if len(runs) > i:
        runs[i]["gates"] = gated.get("gates")
        runs[i]["gates_trial"] = {k: gated.get(k) for k in ("ok", "error", "dir", "load_before", "load_after")}
        runs[i]["ok_gates"] = gated.get("ok")
    else:
        runs.append(gated)


def join_reports(paths: list[str]) -> None:
    """`bench/compare report A/compare.json B/compare.json ...`: one table over the trials of several invocations
    of the same size (e.g. ALBC measured once, ours measured again after a change)."""
    if not paths:
        raise SystemExit("usage: bench/compare report COMPARE_JSON...")
    docs = []
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        if "flavor" in d:   # one trial's summary.json (e.g. of an invocation that did not finish)
            d = {"pods": d["pods"], "groups": d["groups"], "trials": {d["flavor"]: [d]},
                 "scenarios": [s for s, key in SCENARIO_KEYS.items() if key in d]}
        docs.append(d)
    sizes = {(d["pods"], d["groups"]) for d in docs}
    if len(sizes) != 1:
        raise SystemExit(f"report: the files measure different sizes {sorted(sizes)}; join one size at a time")
    trials: dict[str, list[dict]] = {n: [] for n in FLAVORS}
    for d in docs:
        for name, runs in d["trials"].items():
            trials.setdefault(name, []).extend(runs)
    trials = {n: r for n, r in trials.items() if r}
    scen = sorted({s for d in docs for s in d["scenarios"]})
    o = argparse.Namespace(pods=docs[0]["pods"], groups=docs[0]["groups"], scenarios=scen)
    root = os.path.dirname(os.path.abspath(paths[-1]))
    report(o, os.path.join(root, "joined"), trials, "; ".join(d["skipped"] for d in docs if d.get("skipped")))


def report(o, root: str, trials: dict[str, list[dict]], skipped: str) -> None:
    os.makedirs(root, exist_ok=True)
    ok = {name: [r for r in runs if r.get("ok")] for name, runs in trials.items()}
    metrics = [m for m in METRICS if m[0][:2] in o.scenarios]
    rows = comparison_rows(metrics, ok)
    header = ["scenario", "metric", *[f"{n} (n={len(ok[n])})" for n in ok], "ratio albc/ours"]
    print()
    print(f"== {o.pods} pods, {o.groups} groups: medians; ratio = ALBC / ours (> 1: ours lower = better) ==")
    print(table([[s, m, *rest] for s, m, *rest in rows], header))
    loads = [r.get("load_before", [None])[0] for runs in trials.values() for r in runs if r.get("load_before")]
    if loads:
        print(f"  load average (1 min) at trial starts: {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} CPUs")
    failed = [(n, r.get("error")) for n, runs in trials.items() for r in runs if not r.get("ok")]
    for n, err in failed:
        print(f"  FAILED {n}: {err}")
    if skipped:
        print(f"  {skipped}")
    pngs = []
    try:
        from harness.plots import SCENARIO_PLOTS, plot_scenario
        for s in o.scenarios:
            if s in SCENARIO_PLOTS:
                first = {n: runs[0] for n, runs in ok.items() if runs}
                path = os.path.join(root, f"{s}.png")
                if plot_scenario(s, first, path):
                    pngs.append(path)
    except ImportError as e:
        print(f"  plots skipped: {e} (e2e/scripts/venv.sh installs matplotlib)")
    out = {"pods": o.pods, "groups": o.groups, "scenarios": o.scenarios, "skipped": skipped,
           "table": {"header": header, "rows": rows}, "trials": trials, "plots": pngs}
    path = os.path.join(root, "compare.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, default=str)
    print(f"  results: {path}" + (f"; plots: {', '.join(os.path.basename(p) for p in pngs)}" if pngs else ""))
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
