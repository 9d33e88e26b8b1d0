"""The bucket model's invariants: every target carried once, never more calls than tokens, and the
bounds the docs quote (one group is not throttled; many groups wait a full round of the bucket)."""
import pytest

from .bucket_sim import Scenario, simulate


@pytest.mark.parametrize("policy", ["greedy", "paced", "adaptive"])
@pytest.mark.parametrize("groups,targets,spread", [(1, 100, 0.9), (10, 1000, 3.6), (50, 500, 8.3)])
def test_every_target_is_carried_once_and_calls_never_exceed_the_tokens(policy, groups, targets, spread):
    sc = Scenario(groups, targets, spread)
    out = simulate(sc, policy)
    assert len(out.latencies) == targets
    assert min(out.latencies) >= sc.call_s - 1e-9
    # The last call ends no later than spread + max latency; tokens available until then bound the calls.
    end = spread + max(out.latencies)
    assert out.calls <= sc.burst + sc.rate * end + 1e-9
    assert out.calls >= -(-targets // 200)


def test_one_group_is_sent_within_a_few_debounces():
    out = simulate(Scenario(1, 100, 3.6), "greedy")
    assert out.p99 < 0.5, out.p99


def test_many_groups_with_long_arrivals_wait_one_round_of_the_bucket():
    sc = Scenario(10, 1000, 8.3)
    out = simulate(sc, "greedy")
    round_s = sc.groups / sc.rate
    assert 0.8 * round_s <= out.p99 <= 1.1 * round_s, (out.p99, round_s)


def test_pacing_spreads_a_short_burst_over_fewer_calls():
    sc = Scenario(10, 1000, 0.9)
    greedy, paced = simulate(sc, "greedy"), simulate(sc, "paced")
    assert paced.calls < greedy.calls
    assert paced.p99 < greedy.p99


def test_adaptive_paces_few_groups_and_leaves_many_alone():
    few = Scenario(10, 100, 0.9)
    adaptive, greedy = simulate(few, "adaptive"), simulate(few, "greedy")
    assert adaptive.p99 < greedy.p99 and adaptive.calls < greedy.calls
    # 50 groups: more than half the burst write at once, so no group is held (pacing alone would add ~1.6 s to p99).
    many = Scenario(50, 5000, 3.6)
    assert simulate(many, "adaptive").p99 <= simulate(many, "greedy").p99 + 0.05
    assert simulate(many, "paced").p99 > simulate(many, "greedy").p99 + 1.0


def test_an_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="unknown policy 'fifo'"):
        simulate(Scenario(1, 1, 1.0), "fifo")
