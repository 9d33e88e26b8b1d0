"""One PNG per scenario: latency CDFs, AWS calls over time and controller memory over time, one line per flavor."""
from __future__ import annotations

import json
import os

from harness.stats import cdf

# scenario -> (phase marks it covers, [(label, result path of a latency list)])
SCENARIO_PLOTS = {
    "S1": (["cold start"], []),
    "S2": (["scale_up", "scale_down"], [("scale-up: endpoint ready -> RegisterTargets", "scale_up.latencies_s"),
                                       ("scale-down: terminating -> DeregisterTargets", "scale_down.latencies_s")]),
    "S3": (["gates: initial pods", "gates: added pods"], [("initial pods: AWS healthy -> gate True",
                                                          "gates.initial.latencies_s"),
                                                         ("added pods: AWS healthy -> gate True",
                                                          "gates.added.latencies_s")]),
    "S4": (["failover", "warm restart"], []),
    "S5": (["isolation"], [("isolation: healthy groups, endpoint -> RegisterTargets", "isolation.latencies_s"),
                           ("S2 scale-up (reference)", "scale_up.latencies_s")]),
    "S6": ([], []),
    "S7": (["S7 nlb create", "S7 alb create", "S7 nlb delete", "S7 alb delete"], []),
}


def _dig(r, path):
    for p in path.split("."):
        r = r.get(p) if isinstance(r, dict) else None
    return r


def _window(trial: dict, marks: list[str]) -> tuple[float, float] | None:
    """From the first of `marks` to the next mark after the last of them (or the end of the samples)."""
    ms = trial.get("marks") or []
    times = [t for t, name in ms if name in marks]
    if not marks:
        samples = trial.get("memory_samples") or []
        return (samples[0][0], samples[-1][0]) if samples else None
    if not times:
        return None
    last = max(times)
    later = [t for t, _ in ms if t > last]
    end = min(later) if later else max([s[0] for s in trial.get("memory_samples") or [[last + 60]]])
    return min(times), end


def _legend(ax) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)


def plot_scenario(scenario: str, trials: dict[str, dict], out_path: str) -> bool:
    """trials: flavor -> one trial result (with `dir`, its output directory). Returns whether a PNG was written."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    marks, lat_paths = SCENARIO_PLOTS[scenario]
    panels = len(lat_paths) + 2
    fig, axes = plt.subplots(1, panels, figsize=(4.2 * panels, 3.4), dpi=80)
    drew = False
    for i, (label, path) in enumerate(lat_paths):
        ax = axes[i]
        for flavor, t in trials.items():
            xs = _dig(t, path) or []
            if xs:
                x, y = cdf(xs)
                ax.step(x, y, where="post", label=flavor)
                drew = True
        ax.set_title(label, fontsize=8)
        ax.set_xlabel("seconds")
        ax.set_ylabel("fraction of targets")
        _legend(ax)
    ax_calls, ax_mem = axes[-2], axes[-1]
    for flavor, t in trials.items():
        w = _window(t, marks)
        if not w:
            continue
        t0, t1 = w
        try:
            with open(os.path.join(t["dir"], "calls.json")) as f:
                calls = [c for c in json.load(f) if t0 <= c["received"] <= t1]
        except (OSError, ValueError, KeyError):
            calls = []
        if calls:
            line, = ax_calls.step([c["received"] - t0 for c in calls], range(1, len(calls) + 1), where="post",
                                  label=flavor)
            drew = True
            # the phase boundaries inside the window (e.g. S7's create/delete steps), in the flavor's colour
            for tm, name in t.get("marks") or []:
                if name in marks and t0 < tm <= t1:
                    ax_calls.axvline(tm - t0, color=line.get_color(), linestyle=":", linewidth=0.8)
        mem = [(s[0] - t0, s[1] / 2**20) for s in t.get("memory_samples") or [] if t0 <= s[0] <= t1]
        if mem:
            ax_mem.plot([m[0] for m in mem], [m[1] for m in mem], label=flavor)
            drew = True
    ax_calls.set_title("AWS calls (cumulative)", fontsize=8)
    ax_calls.set_xlabel("seconds from phase start")
    _legend(ax_calls)
    ax_mem.set_title("controller RSS (MiB)", fontsize=8)
    ax_mem.set_xlabel("seconds from phase start")
    _legend(ax_mem)
    fig.suptitle(scenario, fontsize=9)
    fig.tight_layout()
    if drew:
        fig.savefig(out_path)
    plt.close(fig)
    return drew
