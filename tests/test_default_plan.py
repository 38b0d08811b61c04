"""The default run's plan (issue 28 point 6): pair sizes in steps of 4x, refined around switches
within the budget, and refinement launches that do not use up the auto launches of other points."""
from __future__ import annotations

from mpiscope.execute.planner import groups
from mpiscope.plan.describe import Description
from mpiscope.plan.engine import DEFAULT_COLLECTIVE_SIZES, DEFAULT_PAIR_SIZES, DEFAULT_SIZES
from mpiscope.plan.schedule import own_launches
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
