"""`table` of a large records file takes time in proportion to it, whatever the file holds
(issue 47): a point whose launches are mostly disturbed finds its commonest cause in one pass,
and a file that repeats one run judges each end record on running sums, not on every point of
its launch again. Work is counted, not timed: timings on a shared machine prove nothing."""
from __future__ import annotations

import numpy as np
import pytest

from mpiscope.records import Context, End, Point, Stats
from mpiscope.results import disturbance
from mpiscope.results.disturbance import Tally, launch_disturbed
from mpiscope.results.launches import _best_split, _second_cuts, launch_summary
from mpiscope.results.policy import POLICY
from mpiscope.results.view import launch_causes
from mpiscope_test_fixtures.synthetic import launch_point

CTX = Context(world_size=2, cores_online=2)


class Cause(str):
    """A cause that counts how often it is compared (str.count compares every item with ==)."""
    compared = 0

    def __eq__(self, other: object) -> bool:
        Cause.compared += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def test_the_commonest_cause_of_a_busy_point_is_found_in_one_pass():
    n = 3000
    points = [launch_point(1.0 + 0.001 * k, k) for k in range(n)]
    causes = {id(p): Cause("switches" if k % 3 else "steal") for k, p in enumerate(points)}
    Cause.compared = 0
    lp = launch_summary(points, disturbed=lambda p: causes[id(p)])
    assert lp.busy == "switches" and len(lp.disturbed) == n
    assert Cause.compared < 10 * n  # a quadratic count compares about n * n / 2 times
    order = ["steal", "switches", "switches", "steal"]  # a tie: the first launch's cause
    assert launch_summary(points[:4], disturbed=lambda p: order[p.tag["launch"]]).busy == "steal"


def _point(launch: int, size: int, invalid: int = 0) -> Point:
    return Point("pingpong", size, 2, Stats(n=100, median=1.0), invalid=invalid, warmup=10, tag={"launch": launch})


def test_a_file_repeating_one_run_sums_each_point_once(monkeypatch):
    """Every end record of launch 0 is judged on all of launch 0's points read so far (as
    before), and each point is added to the sums once: the work grows with the file."""
    added = []
    real_add = Tally.add
    monkeypatch.setattr(disturbance.Tally, "add", lambda self, p: (added.append(p), real_add(self, p)))
    copies, sizes = 300, 8
    records: list = []
    for _ in range(copies):
        records.append(CTX)
        records += [_point(0, s, invalid=s % 3) for s in range(sizes)]
        records.append(End(points=sizes, elapsed_s=1.0, disturbance={"nivcsw": [600, 1]}))
    causes = launch_causes(records)
    assert len(added) == copies * sizes
    points = [r for r in records if isinstance(r, Point)]
    assert causes == {0: launch_disturbed(records[-1], CTX, points)}


@pytest.mark.parametrize("nivcsw", [0, 5000])
def test_a_tally_judges_a_launch_as_its_points_do(nivcsw):
    points = [_point(0, s, invalid=s) for s in range(5)]
    end = End(points=5, elapsed_s=1.0, disturbance={"nivcsw": [nivcsw, 0]})
    assert launch_disturbed(end, CTX, Tally.of(points)) == launch_disturbed(end, CTX, points)
    assert disturbance.launch_counters(end, CTX, Tally.of(points)) == disturbance.launch_counters(end, CTX, points)


def _exhaustive_split(x: np.ndarray) -> list[int]:
    """The sizes of the three-level split of least within-level sum of squares, every pair of cuts
    tried in (first, second) order: what `_best_split` must find."""
    m, n = POLICY.mode_min_launches, len(x)
    best, sizes = np.inf, []
    for i in range(m, n - 2 * m + 1):
        for j in range(i + m, n - m + 1):
            total = sum(float(((p - p.mean()) ** 2).sum()) for p in (x[:i], x[i:j], x[j:]))
            if total < best - 1e-12:
                best, sizes = total, [i, j - i, n - j]
    return sizes


@pytest.mark.parametrize("seed", range(40))
def test_three_levels_are_the_split_an_exhaustive_search_finds(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 40))
    levels = rng.choice([0.0, 0.4, 1.1], n) if seed % 2 else np.round(rng.standard_normal(n), 1)
    x = np.sort(levels + 0.01 * rng.standard_normal(n))
    assert [len(p) for p in _best_split(x, 3)] == _exhaustive_split(x)


def test_the_three_level_split_tries_pairs_in_proportion_to_the_launches():
    """The best second cut never moves left as the first moves right, so each first cut needs
    only the second cuts its neighbours allow: about L log L pairs, not L^2 / 2."""
    tried = 0
    n = 20_000
    x = np.sort(np.random.default_rng(1).choice([0.0, 0.3, 0.9], n) + 0.01 * np.arange(n) / n)

    def cost(i: np.ndarray, j: np.ndarray) -> np.ndarray:
        nonlocal tried
        tried += len(i)
        return (x[j - 1] - x[i]) ** 2 - j  # any cost whose least second cut moves right with the first
    first = np.arange(POLICY.mode_min_launches, n - 2 * POLICY.mode_min_launches + 1)
    second, _ = _second_cuts(first, n - POLICY.mode_min_launches, cost)
    assert (np.diff(second) >= 0).all()
    assert tried < 20 * n  # trying every pair is about 200,000,000
