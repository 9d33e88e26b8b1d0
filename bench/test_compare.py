"""Tests of bench/compare's argument handling and phase planning (no environment needed)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
from harness.flavors import Flavor, albc_tuned_args  # noqa: E402


def test_phases_follow_scenarios():
    assert compare.main_phases(["S1"]) == ["cold"]
    assert compare.main_phases(["S1", "S2"]) == ["cold", "scale", "memory"]
    assert compare.main_phases(["S5"]) == ["cold", "scale", "isolation"]
    assert compare.main_phases(compare.ALL) == ["cold", "scale", "memory", "isolation", "failover", "restart"]


def test_unknown_scenario_is_refused(capsys):
    with pytest.raises(SystemExit):
        compare.parse(["--scenarios", "S1,S9"])
    assert "unknown ['S9']" in capsys.readouterr().err
    assert compare.parse(["--scenarios", "s1, s2"]).scenarios == ["S1", "S2"]


def test_tuned_albc_has_more_workers_and_bounded_backoff():
    assert "--targetgroupbinding-max-concurrent-reconciles=50" in albc_tuned_args(50)
    assert "--targetgroupbinding-max-concurrent-reconciles=6" in albc_tuned_args(2)
    assert "--targetgroupbinding-max-exponential-backoff-delay=10s" in albc_tuned_args(10)


def test_flavor_args_point_every_service_at_the_emulator():
    kw = dict(vpc="vpc-1", emu_url="http://127.0.0.1:9", lease_ns="ns", lease_id="id", watch_ns="",
              cert_dir="/c", metrics_port=1, health_port=2)
    ours = Flavor("ours", "ours", "/bin/true").args(**kw)
    albc = Flavor("albc", "albc", "/bin/true", ["--x"]).args(**kw)
    assert "--webhook-bind-host=127.0.0.1" in ours and not any(a.startswith("--watch-namespace") for a in ours)
    ep = next(a for a in albc if a.startswith("--aws-api-endpoints="))
    assert ep.count("=http://127.0.0.1:9") == 8 and albc[-1] == "--x"
    assert "--metrics-bind-addr=127.0.0.1:1" in albc and "--health-probe-bind-addr=127.0.0.1:2" in albc
    assert Flavor("albc", "albc", "").is_leader({'leader_election_master_status{name="x"}': 1.0})
    assert not Flavor("ours", "ours", "").is_leader({"awslbc_leader": 0.0})
