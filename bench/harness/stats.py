"""Pure figures: percentiles, call floors, medians over runs, ratios and the comparison table."""
from __future__ import annotations

import math
import statistics
from typing import Any, Iterable

BATCH = 200   # targets per RegisterTargets/DeregisterTargets call (the AWS maximum both controllers use)


def pct(xs: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..1); NaN for no samples."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(p * len(s)) - 1))]


def lat_summary(xs: list[float]) -> dict[str, float]:
    return {"n": len(xs), "p50_ms": pct(xs, 0.5) * 1000, "p90_ms": pct(xs, 0.9) * 1000,
            "p99_ms": pct(xs, 0.99) * 1000, "max_ms": (max(xs) if xs else float("nan")) * 1000}


def write_floor(changed_per_group: Iterable[int], batch: int = BATCH) -> int:
    """The fewest write calls that can carry the change: sum over groups of ceil(changed/batch)."""
    return sum(math.ceil(n / batch) for n in changed_per_group if n > 0)


def dig(r: Any, path: str) -> Any:
    for part in path.split("."):
        r = r.get(part) if isinstance(r, dict) else None
    return r


def number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return None if isinstance(v, float) and math.isnan(v) else float(v)


def median_of(results: list[dict], path: str) -> float | None:
    vals = [x for x in (number(dig(r, path)) for r in results) if x is not None]
    return statistics.median(vals) if vals else None


def ratio(ours: float | None, theirs: float | None) -> float | None:
    """ALBC / ours: above 1 means ours is lower (faster, fewer calls, less memory)."""
    if ours is None or theirs is None:
        return None
    if ours == 0:
        return None if theirs == 0 else math.inf
    return theirs / ours


def fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if math.isinf(v):
        return "inf"
    if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-2):
        return f"{v:.3g}"
    return f"{v:.4g}" if abs(v) < 1000 else f"{v:.0f}"


def table(rows: list[list[str]], header: list[str]) -> str:
    """A plain-text table, first column left-aligned, the others right-aligned."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    out = []
    for i, row in enumerate([header, *rows]):
        cells = [str(c).ljust(w) if j == 0 else str(c).rjust(w) for j, (c, w) in enumerate(zip(row, widths))]
        out.append("  ".join(cells).rstrip())
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def comparison_rows(metrics: list[tuple[str, str, str]], columns: dict[str, list[dict]],
                    base: str = "ours", other: str = "albc") -> list[list[str]]:
    """One row per (scenario, metric): the median of every column and the ratio other/base."""
    rows = []
    for scenario, label, path in metrics:
        meds = {c: median_of(runs, path) for c, runs in columns.items()}
        if all(v is None for v in meds.values()):
            continue
        rows.append([scenario, label, *[fmt(meds[c]) for c in columns],
                     fmt(ratio(meds.get(base), meds.get(other)))])
    return rows


def cdf(xs: list[float]) -> tuple[list[float], list[float]]:
    """Sorted values and their cumulative fractions, for a CDF plot."""
    s = sorted(xs)
    return s, [(i + 1) / len(s) for i in range(len(s))]
