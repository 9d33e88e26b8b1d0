"""Tests of the harness's pure figures (run by e2e/test-all's pytest step)."""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.stats import (cdf, comparison_rows, fmt, lat_summary, median_of, pct, ratio,  # noqa: E402
                           table, write_floor)
from harness.watcher import SliceEvents, SliceState, ep_state, true_gates  # noqa: E402


def test_pct_is_nearest_rank():
    xs = [float(i) for i in range(1, 101)]
    assert pct(xs, 0.5) == 50.0
    assert pct(xs, 0.99) == 99.0
    assert pct(xs, 1.0) == 100.0
    assert pct([3.0, 1.0, 2.0], 0.0) == 1.0
    assert math.isnan(pct([], 0.5))


def test_lat_summary_in_ms():
    s = lat_summary([0.1, 0.2, 0.3, 0.4])
    assert s["n"] == 4 and s["p50_ms"] == 200.0 and s["max_ms"] == 400.0
    assert math.isnan(lat_summary([])["p99_ms"])


def test_write_floor_is_per_group_batches():
    assert write_floor([1000, 1000]) == 10
    assert write_floor([201, 1, 0]) == 3
    assert write_floor([]) == 0
    assert write_floor([5000] * 50) == 1250
    assert write_floor([250], batch=100) == 3


def test_median_of_skips_missing_and_nan():
    runs = [{"a": {"b": 1}}, {"a": {"b": 3}}, {"a": {"b": float("nan")}}, {"a": {}}, {"a": {"b": True}}]
    assert median_of(runs, "a.b") == 2
    assert median_of(runs, "a.c") is None


def test_ratio_direction_and_zero():
    assert ratio(2.0, 6.0) == 3.0          # ALBC 3x ours: ours better
    assert ratio(0.0, 0.0) is None
    assert math.isinf(ratio(0.0, 5.0))
    assert ratio(None, 1.0) is None


def test_fmt():
    assert fmt(None) == "-"
    assert fmt(1.23456) == "1.235"
    assert fmt(123456.0) == "1.23e+05"
    assert fmt(1234.4) == "1234"
    assert fmt(0.0) == "0"


def test_comparison_rows_and_table():
    cols = {"ours": [{"m": {"x": 1.0}}, {"m": {"x": 3.0}}], "albc": [{"m": {"x": 4.0}}]}
    rows = comparison_rows([("S1", "x (s)", "m.x"), ("S1", "absent", "m.y")], cols)
    assert rows == [["S1", "x (s)", "2", "4", "2"]]
    out = table(rows, ["scenario", "metric", "ours", "albc", "ratio"]).splitlines()
    assert out[0].split() == ["scenario", "metric", "ours", "albc", "ratio"]
    assert set(out[1]) <= {"-", " "}
    assert out[2].split() == ["S1", "x", "(s)", "2", "4", "2"]
    assert len({len(line) for line in out}) == 1   # aligned columns


def test_cdf():
    assert cdf([3.0, 1.0]) == ([1.0, 3.0], [0.5, 1.0])


def test_endpoint_states_aggregate_over_slices():
    assert ep_state({}) == "ready"
    assert ep_state({"conditions": {"ready": False, "terminating": True}}) == "terminating"
    assert ep_state({"conditions": {"ready": False}}) == "notready"
    st = SliceState()
    sl = lambda eps: {"metadata": {"labels": {"kubernetes.io/service-name": "s"}}, "endpoints": eps}  # noqa: E731
    out = st.apply("a", sl([{"addresses": ["10.0.0.1"]}]), 1.0)
    assert out == [{"t": 1.0, "ip": "10.0.0.1", "svc": "s", "s": "ready"}]
    # the address moves to slice b while a still lists it as terminating: still ready overall
    assert st.apply("b", sl([{"addresses": ["10.0.0.1"]}]), 2.0) == []
    assert st.apply("a", sl([{"addresses": ["10.0.0.1"], "conditions": {"ready": False, "terminating": True}}]),
                    3.0) == []
    assert st.apply("b", None, 4.0)[0]["s"] == "terminating"
    assert st.apply("a", None, 5.0)[0]["s"] == "gone"


def test_true_gates_only_target_health_conditions():
    pod = {"status": {"conditions": [
        {"type": "Ready", "status": "True"},
        {"type": "target-health.elbv2.k8s.aws/tgb-00", "status": "True"},
        {"type": "target-health.elbv2.k8s.aws/tgb-01", "status": "False"}]}}
    assert true_gates(pod) == {"target-health.elbv2.k8s.aws/tgb-00"}


def test_slice_events_see_a_reused_address_again(tmp_path):
    p = tmp_path / "slices.jsonl"
    p.write_text("\n".join([
        '{"t": 1.0, "synced": true}',
        '{"t": 2.0, "ip": "10.0.0.1", "svc": "s", "s": "ready"}',
        '{"t": 3.0, "ip": "10.0.0.1", "svc": "s", "s": "gone"}',
        '{"t": 9.0, "ip": "10.0.0.1", "svc": "s", "s": "ready"}', ""]))
    ev = SliceEvents(str(p))
    ev.poll()
    assert ev.synced and ev.ready_ips() == {"10.0.0.1"}
    assert ev.first_time("10.0.0.1", ("ready",), 0) == 2.0
    assert ev.first_time("10.0.0.1", ("ready",), 5.0) == 9.0      # the later pod holding the same address
    assert ev.first_time("10.0.0.1", ("terminating", "gone"), 2.5) == 3.0
    assert ev.first_time("10.0.0.2", ("ready",), 0) is None
