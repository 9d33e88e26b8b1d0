"""Flags and start-up checks shared by bench/tgb.py and bench/compare."""
from __future__ import annotations

import argparse
import os
import signal

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def default_binary() -> str:
    """Our release build: $CARGO_TARGET_DIR, ./target, or the CI cache."""
    for d in [os.environ.get("CARGO_TARGET_DIR", ""), os.path.join(REPO, "target"),
              os.path.expanduser("~/.cache/aws-lb-controller/target")]:
        p = os.path.join(d, "release", "aws-lb-controller")
        if d and os.path.exists(p):
            return p
    return ""


def add_common(p: argparse.ArgumentParser, max_seconds: float) -> None:
    p.add_argument("--pods", type=int, default=1000, help="pods in total, spread evenly over the groups")
    p.add_argument("--groups", type=int, default=10, help="Services = TargetGroupBindings = target groups")
    p.add_argument("--runs", type=int, default=1, help="repetitions (each from nothing); medians are printed")
    p.add_argument("--change-pct", type=float, default=10, help="scale-up/-down size per set, in percent")
    p.add_argument("--pods-per-node", type=int, default=100)
    p.add_argument("--workers", type=int, default=8, help="parallel API requests when creating/deleting pods")
    p.add_argument("--binary", default=default_binary(), help="our controller (default: the release build)")
    p.add_argument("--emulator-no-serialize", action="store_true", help="let moto serve calls concurrently")
    p.add_argument("--settle", type=float, default=3, help="seconds to wait for late calls after each phase")
    p.add_argument("--restart-window", type=float, default=30, help="seconds of AWS calls counted after a restart")
    p.add_argument("--failover-window", type=float, default=60, help="seconds of AWS calls counted after a kill")
    p.add_argument("--phase-timeout", type=float, default=300)
    p.add_argument("--max-seconds", type=float, default=max_seconds, help="bound of one scene, setup included")
    p.add_argument("--out", default=os.path.join(REPO, "bench", "results"))


def checked_env(binary: str | None = None) -> dict[str, str]:
    """The local environment's settings (e2e/.run/env), or a precise exit; SIGTERM then cleans up like Ctrl-C."""
    import sys
    sys.path.insert(0, os.path.join(REPO, "e2e", "scripts"))
    from kubeapi import load_env
    if binary is not None and not os.path.exists(binary):
        raise SystemExit(f"our controller binary not found at {binary!r}: cargo build --release -p aws-lb-controller"
                         " (or --binary PATH)")
    env = load_env()
    for key in ("LBC_KUBE_SERVER", "LBC_ADMIN_TOKEN", "LBC_KUBE_CA_FILE", "LBC_VENV", "KUBECONFIG"):
        if not env.get(key):
            raise SystemExit(f"{key} missing: run e2e/up and source e2e/.run/env")
    os.environ["KUBECONFIG"] = env["KUBECONFIG"]
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    return env
