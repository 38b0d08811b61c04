"""The default run's plan (issue 28 point 6): pair sizes in steps of 4x, refined around switches
within the budget, a first round of more, lighter launches, and refinement launches that do not
use up the auto launches of other points."""
from __future__ import annotations

import pytest

from mpiscope.execute.planner import groups
from mpiscope.plan.describe import Description
from mpiscope.plan.engine import DEFAULT_COLLECTIVE_SIZES, DEFAULT_PAIR_SIZES, DEFAULT_SIZES
from mpiscope.plan.schedule import own_launches
from mpiscope.results.policy import POLICY
from mpiscope_test_fixtures.synthetic import launch_point


def test_only_the_default_run_measures_the_sparse_pair_sizes():
    pairs, collectives = groups(Description())
    assert Description().default_plan
    assert (pairs.sizes, collectives.sizes) == (DEFAULT_PAIR_SIZES, DEFAULT_COLLECTIVE_SIZES)
    (asked,) = groups(Description(benchmarks=("pingpong",)))      # -b: the sizes it always had
    assert asked.sizes == DEFAULT_SIZES and not Description(benchmarks=("pingpong",)).default_plan
    given = Description(sizes="1:64K")                               # --sizes: the user's, for both parts
    assert [g.sizes for g in groups(given)] == ["1:64K", "1:64K"] and not given.default_plan


def test_refinement_rounds_do_not_use_up_the_auto_launches():
    own = [launch_point(1.0, k, size=8) for k in range(3)]
    rounds = [launch_point(1.0, k, size=12000, refinement_round=1 + (k - 3) // 3) for k in range(3, 12)]
    assert own_launches(own + rounds) == 3
    assert own_launches(own + [launch_point(1.0, 3, size=8)]) == 4


@pytest.mark.slow
def test_the_default_run_spends_its_first_round_on_launches(mpiscope_home, embedded_mpi, monkeypatch):
    from mpiscope.execute.planner import measurement
    monkeypatch.delenv("MPISCOPE_LAUNCHES", raising=False)
    m = measurement(Description())
    assert m.policy.auto and m.policy.first_round == POLICY.default_plan_launches
    assert m.policy.then_s == POLICY.default_plan_then_s     # its auto launches' own time
    assert [p.plan.max_time_s for p in m.parts] == [POLICY.default_plan_max_time_s] * 2
    ci = ["--ci-target", repr(POLICY.default_plan_ci_target)]
    assert all(" ".join(ci) in " ".join(p.plan.options) for p in m.parts)
    chosen = measurement(Description(max_time=0.3))        # the user's sampling: the usual first round
    assert chosen.policy.first_round == POLICY.min_launches and chosen.policy.then_s is None
    assert [p.plan.max_time_s for p in chosen.parts] == [0.3, 0.3]
    fixed = measurement(Description(launches=2))            # fixed launches are the user's
    assert fixed.policy.first_round == 2


def test_more_launches_go_first_to_the_points_nearest_the_target():
    """Auto launches within what is left of the budget: a point one launch from the target goes
    before one that needs dozens more (a busy machine's wide point), whatever their order; what
    does not fit waits, and nothing fits when no room is left."""
    from dataclasses import replace as with_
    from mpiscope.plan.schedule import affordable
    from mpiscope.results.launches import aggregate, launches_needed

    def at(size: int, spread: float, elapsed: float) -> list:
        medians = [1.0 + spread * (-1) ** k * (k % 3) for k in range(5)]
        return [with_(launch_point(m, k, within=0.002, size=size), elapsed_s=elapsed) for k, m in enumerate(medians)]
    wide, near = aggregate(at(1 << 20, 0.4, 0.1)), aggregate(at(8, 0.03, 0.01))
    (w,), (n,) = wide, near
    target = POLICY.launch_target
    assert launches_needed(n, target) - n.launches < launches_needed(w, target) - w.launches
    assert affordable([w, n], room_s=1.0, overhead_s=0.5, parts=1, target=target) == [n, w]
    assert affordable([w, n], room_s=0.55, overhead_s=0.5, parts=1, target=target) == [n]
    assert affordable([w, n], room_s=0.4, overhead_s=0.5, parts=1, target=target) == []
