"""Tests of bench/compare's argument handling and phase planning (no environment needed)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
from harness import lbs  # noqa: E402
from harness.flavors import Flavor, albc_tuned_args  # noqa: E402


def test_phases_follow_scenarios():
    assert compare.main_phases(["S1"]) == ["cold"]
    assert compare.main_phases(["S1", "S2"]) == ["cold", "scale", "memory"]
    assert compare.main_phases(["S5"]) == ["cold", "scale", "isolation"]
    assert compare.main_phases(["S7"]) == ["cold", "lbs"]
    assert compare.main_phases(compare.ALL) == ["cold", "scale", "memory", "isolation", "failover", "restart", "lbs"]


def test_unknown_scenario_is_refused(capsys):
    with pytest.raises(SystemExit):
        compare.parse(["--scenarios", "S1,S9"])
    assert "unknown ['S9']" in capsys.readouterr().err
    assert compare.parse(["--scenarios", "s1, s2"]).scenarios == ["S1", "S2"]
    assert compare.parse([]).scenarios == compare.ALL
    # S7 needs two sets of pods: left out of the default with one group, refused when asked for
    assert compare.parse(["--groups", "1"]).scenarios == [s for s in compare.ALL if s != "S7"]
    with pytest.raises(SystemExit):
        compare.parse(["--groups", "1", "--scenarios", "S7"])
    assert "S7 needs --groups >= 2" in capsys.readouterr().err


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


def call(seq, op, tg=None, ids=None, outcome="ok", t=None):
    return {"seq": seq, "operation": op, "target_group_arn": tg, "target_ids": ids, "outcome": outcome,
            "error_code": None if outcome == "ok" else "Throttling", "time": t if t is not None else float(seq),
            "received": float(seq)}


def test_s7_registration_is_complete_in_one_new_group_only():
    want = {"10.0.0.1:8080", "10.0.0.2:8080"}
    calls = [call(1, "RegisterTargets", "tg-old", ["10.0.0.1:8080", "10.0.0.2:8080"]),   # a scene group: excluded
             call(2, "RegisterTargets", "tg-a", ["10.0.0.1:8080"]),
             call(3, "RegisterTargets", "tg-b", ["10.0.0.2:8080"]),                      # split over two groups
             call(4, "RegisterTargets", "tg-a", ["10.0.0.2:8080"], outcome="error"),    # failed: not held
             call(5, "DeregisterTargets", "tg-a", ["10.0.0.1:8080"]),
             call(6, "RegisterTargets", "tg-a", ["10.0.0.2:8080"], t=6.5)]
    assert lbs.all_registered_at(calls, want, {"tg-old"}) is None
    calls.append(call(7, "RegisterTargets", "tg-a", ["10.0.0.1:8080"], t=7.25))
    assert lbs.all_registered_at(calls, want, {"tg-old"}) == (7.25, "tg-a")
    assert lbs.all_registered_at(calls, want, set()) == (1.0, "tg-old")
    assert lbs.all_registered_at(calls, set(), set()) is None


def test_s7_counts_mutating_calls_and_failures():
    calls = [call(1, "DescribeLoadBalancers"), call(2, "CreateLoadBalancer"), call(3, "AddTags"),
             call(4, "CreateListener", outcome="error"), call(5, "GetSecurityGroupsForVpc"),
             call(6, "ListTagsForResource")]
    c = lbs.call_counts(calls)
    assert c["calls_total"] == 6 and c["calls_mutating"] == 3
    assert c["calls"] == {"AddTags": 1, "CreateListener!Throttling": 1, "CreateLoadBalancer": 1,
                          "DescribeLoadBalancers": 1, "GetSecurityGroupsForVpc": 1, "ListTagsForResource": 1}
    assert lbs.first_ok([call(1, "DeleteLoadBalancer", outcome="error"), call(2, "DeleteLoadBalancer", t=2.5)],
                        "DeleteLoadBalancer") == 2.5
    assert lbs.first_ok([call(1, "DeleteTargetGroup")], "DeleteLoadBalancer") is None


def test_s7_hostname_from_status():
    assert lbs.hostname_of(None) is None
    assert lbs.hostname_of({"status": {"loadBalancer": {}}}) is None
    assert lbs.hostname_of({"status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}}) is None
    assert lbs.hostname_of({"status": {"loadBalancer": {"ingress": [{"hostname": "a.elb.amazonaws.com"}]}}}) \
        == "a.elb.amazonaws.com"


def test_s7_manifests_are_the_drop_in_ones():
    svc = lbs.nlb_service("bench-00", 80, "http")
    assert svc["spec"]["type"] == "LoadBalancer" and svc["spec"]["loadBalancerClass"] == "service.k8s.aws/nlb"
    assert svc["metadata"]["annotations"] == {"service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip"}
    ing = lbs.alb_ingress("cls", "svc-01", 80)
    assert ing["metadata"]["annotations"] == {"alb.ingress.kubernetes.io/target-type": "ip"}
    assert ing["spec"]["ingressClassName"] == "cls"
    assert lbs.ingress_class("cls")["spec"]["controller"] == "ingress.k8s.aws/alb"
    assert compare.parse(["--scenarios", "S7"]).scenarios == ["S7"]
    assert any(m[2] == "lbs.alb.delete.to_gone_s" for m in compare.METRICS)


def test_s7_leaves_out_the_scene_groups_calls():
    calls = [call(1, "DescribeTargetHealth", "tg-old"), call(2, "DescribeLoadBalancers"),
             call(3, "RegisterTargets", "tg-new", ["10.0.0.1:8080"])]
    assert [c["seq"] for c in lbs.without_groups(calls, {"tg-old"})] == [2, 3]
