"""A run that met two states of the machine says so in what another run may read (issue 44): the
interval with the drift from run to run also covers the estimate of the launches whose
machine-state control switched (results.launches.with_other_state), so a next run measured in
that state falls inside it; a point the switch did not move keeps its interval; where covering
both states is wider than 2x the point reads "two machine states" with both figures instead of
an interval. Synthetic records with a control per launch."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mpiscope.records.model import Context, Control, ControlFigure, End
from mpiscope.report.headline import run_to_run
from mpiscope.results.launches import PRIOR_DRIFT, aggregate, with_drift, with_other_state
from mpiscope.results.view import results_of
from mpiscope_test_fixtures.synthetic import launch_point, stored_run

FAST, SLOW = 0.07, 0.27  # the cache-line handoff's two states here, us one way


def figure(rng, median: float, spread: float = 0.02) -> ControlFigure:
    samples = tuple(float(median * math.exp(spread * rng.standard_normal())) for _ in range(5))
    return ControlFigure(float(np.median(samples)), min(samples), max(samples), samples)


def run_records(rng, handoffs: list[float], moves: dict[int, float]) -> list:
    """Launches of pingpong at 8 B and 64 KiB, each with a control whose handoff is `handoffs[k]`;
    in the launches whose handoff is SLOW each size takes `moves[size]` times as long."""
    out: list = []
    for k, handoff in enumerate(handoffs):
        out.append(Context(world_size=2, env={}, tag={"launch": k}))
        out.append(Control(reps=5, ranks=(0, 1), compute_us=figure(rng, 52.0), copy_us=figure(rng, 100.0),
                           handoff_us=figure(rng, handoff), mpi_pingpong_us=figure(rng, 1.2), tag={"launch": k}))
        for size, t in ((8, 1.2), (65536, 12.0)):
            move = moves[size] if handoff == SLOW else 1.0
            out.append(launch_point(t * move * math.exp(0.02 * rng.standard_normal()), k, 0.01, size))
        out.append(End(points=2, tag={"launch": k}))
    return out


def rows(run) -> dict:
    frame = results_of([run]).frame
    return {int(r["size"]): r for _, r in frame.iterrows()}


def test_the_interval_covers_the_state_the_run_met_and_the_next_run_in_it(tmp_path):
    """Launches 2 and 7 of 10 in the slow state, where 64 KiB takes 1.5x: its interval reaches the
    slow launches' estimate, and a next run wholly in the slow state reads inside it (it did not
    with the drift alone); 8 B, which the switch does not move, keeps the interval it had, but for
    its own small shift."""
    rng = np.random.default_rng(3)
    first = stored_run(tmp_path, run_records(rng, [FAST, FAST, SLOW, *[FAST] * 4, SLOW, FAST, FAST], {8: 1.0, 65536: 1.5}))
    nxt = stored_run(tmp_path / "next", run_records(rng, [SLOW] * 6, {8: 1.0, 65536: 1.5}))
    r, n = rows(first), rows(nxt)
    assert r[65536]["state_switched_launches"] == 2
    assert r[65536]["other_state_us"] == pytest.approx(18.0, rel=0.05)
    assert r[65536]["time_ci_low_us"] <= n[65536]["time_median_us"] <= r[65536]["time_ci_high_us"]
    assert r[65536]["evidence"] == ""
    lp = r[65536]["point"]
    drift_only = with_drift(next(p for p in aggregate(lp.points) if p.size == 65536), PRIOR_DRIFT)
    assert not drift_only.ci_low <= n[65536]["time_median_us"] <= drift_only.ci_high  # the drift alone missed it
    plain = with_drift(next(p for p in aggregate(r[8]["point"].points) if p.size == 8), PRIOR_DRIFT)
    assert (r[8]["time_ci_low_us"], r[8]["time_ci_high_us"]) == pytest.approx((plain.ci_low, plain.ci_high), rel=0.02)
    assert r[65536]["time_ci_high_us"] / r[65536]["time_ci_low_us"] > 1.3 * drift_only.ci_high / drift_only.ci_low


def test_two_states_wider_than_twice_read_both_figures_not_an_interval(tmp_path):
    rng = np.random.default_rng(4)
    run = stored_run(tmp_path, run_records(rng, [FAST, SLOW, *[FAST] * 6, SLOW, FAST], {8: 1.0, 65536: 3.0}))
    r = rows(run)[65536]
    assert r["evidence"].startswith("two machine states: ") and "us, and 36" in r["evidence"]
    assert r["evidence"].endswith("another run may read either")
    line = run_to_run([e.point for e in results_of([run]).points(run.id).values()])
    assert "for 2 by the other state of the machine" in line  # 8 B widened by its own small shift and "1 of them read two states, no interval" in line


def test_no_switch_or_all_switched_leaves_the_interval():
    rng = np.random.default_rng(5)
    recs = [p for p in run_records(rng, [FAST] * 5, {8: 1.0, 65536: 1.0}) if hasattr(p, "size")]
    lp = with_drift(next(p for p in aggregate(recs) if p.size == 8), PRIOR_DRIFT)
    assert with_other_state(lp, [False] * 5) is lp
    assert with_other_state(lp, [True] * 5) is lp
    assert with_other_state(lp, [True, False]) is lp  # flags that do not name each launch
    one_launch_drift_free = next(p for p in aggregate(recs) if p.size == 8)
    assert with_other_state(one_launch_drift_free, [True, False, False, False, False]) is one_launch_drift_free
