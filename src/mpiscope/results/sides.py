"""Two sides of stored runs compared point by point: the one path of `mpiscope compare`
(api.compare) and of the report's comparison (report/comparison.py), so both give the same
verdicts. Every launch of every run on a side is one observation of a point."""
from __future__ import annotations

from typing import Callable, Sequence

from mpiscope.results.compare import PointChange, compare_runs
from mpiscope.results.control import control_shift, side_control
from mpiscope.results.history import drift_scope
from mpiscope.results.launches import PRIOR_DRIFT
from mpiscope.records.run import RunView


def compare_sides(base: Sequence[RunView], cand: Sequence[RunView], alpha: float, min_change: float,
                  history: str = "auto", resolve: Callable[[str], Sequence[RunView]] | None = None) -> list[PointChange]:
    """The common points of `base` and `cand` with their verdicts, sorted by benchmark, variant and
    size; with one run a side the drift from run to run joins the test as `history` says
    (results.history.drift_scope; `resolve` reads the runs a `history` of run ids names); where
    the sides' machine-state controls differ, no verdict that the move could explain
    (results.control)."""
    drift = drift_scope(history, base, cand, resolve or (lambda ref: []))
    shift = control_shift(side_control([(r.id, r.records()) for r in base]),
                          side_control([(r.id, r.records()) for r in cand]))
    return compare_runs([r.records().points for r in base], [r.records().points for r in cand],
                        alpha, min_change, drift, PRIOR_DRIFT, shift)
