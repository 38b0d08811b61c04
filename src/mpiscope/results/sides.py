"""Two sides of stored runs compared point by point: the one path of `mpiscope compare`
(api.compare) and of the report's comparison (report/comparison.py), so both give the same
verdicts. Every launch of every run on a side is one observation of a point."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

from mpiscope.results.compare import PointChange, compare_runs
from mpiscope.results.control import control_shift, side_control
from mpiscope.results.history import drift_scope, run_platforms, same_configuration
from mpiscope.results.launches import PRIOR_DRIFT
from mpiscope.results.policy import POLICY, Policy
from mpiscope.results.verdict import INCONCLUSIVE, two_look_alpha
from mpiscope.records.run import RunView

# In an interleaved run's mark (run.json extra["interleave"]): the session's second stage, if it
# had one, {"first": blocks before its look, "second": blocks after} (execute/interleave.py).
STAGES = "stages"


def compare_sides(base: Sequence[RunView], cand: Sequence[RunView], alpha: float, min_change: float,
                  history: str = "auto", resolve: Callable[[str], Sequence[RunView]] | None = None,
                  policy: Policy = POLICY) -> list[PointChange]:
    """The common points of `base` and `cand` with their verdicts, sorted by benchmark, variant and
    size; with one run a side the drift from run to run joins the test as `history` says
    (results.history.drift_scope; `resolve` reads the runs a `history` of run ids names); where
    the sides' machine-state controls differ, no verdict that the move could explain
    (results.control; its MPI pingpong too where both sides are one configuration, `policy`'s
    switch allowing). Two runs of one interleaved session are compared by block instead, with
    neither drift nor control shift (results.compare.compare_runs), and where the session looked
    at them once before a second stage, at the level of each of its two looks (`two_look_alpha`)."""
    blocks = interleaved_blocks(base, cand)
    if blocks is not None:
        stages = [run.meta().extra["interleave"].get(STAGES) for run in (base[0], cand[0])]
        if not all(isinstance(st, dict) and isinstance(st.get("first"), int) and isinstance(st.get("second"), int)
                   for st in stages):
            return compare_runs([base[0].records().points], [cand[0].records().points], alpha, min_change,
                                blocks=blocks)
        first, second = stages[0]["first"], stages[0]["second"]
        level = two_look_alpha(alpha, first, first + second)
        changes = compare_runs([base[0].records().points], [cand[0].records().points], level, min_change,
                               blocks=blocks)
        return [replace(pc, stages=(first, second), look_alpha=level) for pc in changes]
    drift = drift_scope(history, base, cand, resolve or (lambda ref: []))
    shift = control_shift(side_control([(r.id, r.records()) for r in base]),
                          side_control([(r.id, r.records()) for r in cand]), policy,
                          same_configuration(base, cand), states=True)
    # simulated sides repeat their figures: no stated prior drift, only one learnt from runs that differ
    simulated = all(run_platforms(r) for r in (*base, *cand))
    return compare_runs([r.records().points for r in base], [r.records().points for r in cand],
                        alpha, min_change, drift, None if simulated else PRIOR_DRIFT, shift)


def interleaved_blocks(base: Sequence[RunView], cand: Sequence[RunView]
                       ) -> tuple[dict[int, int], dict[int, int]] | None:
    """Each side's block of each launch when the sides are one run each of the same interleaved
    session (run.json extra["interleave"], execute/interleave.py), else None."""
    if len(base) != 1 or len(cand) != 1:
        return None
    marks = [run.meta().extra.get("interleave") for run in (base[0], cand[0])]
    if not all(isinstance(m, dict) and m.get("session") for m in marks) or marks[0]["session"] != marks[1]["session"]:
        return None
    def blocks(mark: dict) -> dict[int, int]:
        return {launch: step["block"] for step in mark.get("steps", ())
                if isinstance(step, dict) and isinstance(step.get("block"), int)
                for launch in step.get("launches", ()) if isinstance(launch, int)}
    return blocks(marks[0]), blocks(marks[1])


def undecided(base: RunView, cand: RunView, alpha: float, min_change: float, more: int) -> set[tuple]:
    """The points of two runs of one interleaved session whose comparison at `alpha` is
    inconclusive but would be decided at the variance observed (`launches_needed`) within the
    blocks it has and `more`, as (point key, configuration) pairs: what a second stage measures."""
    def has(pc: PointChange) -> int:  # the blocks (or launches a side) the comparison rests on
        return pc.blocks or min(pc.base_launches, pc.cand_launches)
    return {((pc.benchmark, pc.size, pc.ranks, pc.variant), pc.config)
            for pc in compare_sides([base], [cand], alpha, min_change)
            if pc.verdict == INCONCLUSIVE and pc.launches_needed is not None and pc.launches_needed <= has(pc) + more}
