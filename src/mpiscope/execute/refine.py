"""mpptest's adaptive refinement of protocol switches (`mpiscope run --find-switches`, and the
default run within its budget), as further parts of the same run: detect switches in the run's
pingpong points at the launch level (only switches every launch shows), measure more sizes inside
every bracket wider than the tolerance (and its two ends again, so that a launch-to-launch offset
cannot fake a break) in as many launches as the run's first part, repeat."""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable

from mpiscope.results.launches import launch_of
from mpiscope.analysis.measured import select
from mpiscope.analysis.policy import ANALYSIS
from mpiscope.records.measured import Measured
from mpiscope.analysis.switches import find_switches, sizes_to_refine
from mpiscope.util.console import err, warn
from mpiscope.util.errors import UsageError
from mpiscope.execute.part import Outcome, Target
from mpiscope.plan.describe import Description
from mpiscope.plan.engine import Plan, Planned
from mpiscope.plan.repetition import AUTO_BUDGET_S, MAX_LAUNCHES, MIN_LAUNCHES
from mpiscope.execute.session import Measurement, Session, Steps
from mpiscope.store.runs import Run

TOLERANCE = ANALYSIS.refine_tolerance  # each switch located within 5 % of its size
MAX_ROUNDS = 6     # at most this many rounds, each in as many launches as the first part
# The default run's refinement locates a switch within DEFAULT_TOLERANCE (docs/models.md, "The
# constants"). Its rounds start while they have spent less than REFINE_SHARE of the run's budget;
# the launches that follow count them as spent (the first round alone often outlasts the budget
# on a loaded machine, so a share counted from the run's start would leave no refinement at all).
DEFAULT_TOLERANCE = ANALYSIS.refine_default_tolerance
REFINE_SHARE = 0.4
REFINEMENT = "refinement"  # run.json: rounds, tolerance and how the refinement ended
MIN_SIZES = ANALYSIS.min_sizes_for_switches


def check_refinable(plan: Plan, planned: Planned) -> None:
    """Before anything is launched: the first part measures pingpong at enough sizes."""
    sizes = {e.size for e in planned.points if e.benchmark == "pingpong" and not e.skip}
    if "pingpong" not in plan.benchmarks:
        raise UsageError("--find-switches refines pingpong: add it, e.g. -b pingpong")
    if len(sizes) < MIN_SIZES:
        raise UsageError(f"--find-switches needs at least {MIN_SIZES} pingpong sizes to start from: "
                         "e.g. --sizes 1:64K")


def pingpong_points(run: Run, ranks: int) -> list[Measured]:
    """The run's pingpong points over their launches, one per size and configuration."""
    return select(run.records().records, "pingpong", ranks)


def main_launches(run: Run, ranks: int) -> int:
    """How many launches measured the run's own pingpong points (refinement rounds aside)."""
    return len({launch_of(p) for p in run.records().points if p.benchmark == "pingpong"
                and p.ranks == ranks and "refinement_round" not in p.tag}) or 1


def refinement(session: Session, target: Target) -> Callable[[Run], Outcome]:
    """The --find-switches rounds as what `Session.run` measures after a run's own launches, while
    it still owns the run."""
    return lambda run: refine_run(session, target, run)


def refine_run(session: Session, target: Target, run: Run, tolerance: float = TOLERANCE,
               deadline: float | None = None, most_launches: int | None = None, say: bool = True) -> Outcome:
    """Refinement rounds into `run`, each measured in as many launches as the run's pingpong (at
    most `most_launches`); the records of round k carry `"refinement_round": k`. Only switches
    that every launch shows are refined. With a `deadline` (time.monotonic()) no round starts that
    the last one's length says would end after it. Returns how the last round ended (ok when there
    was nothing to refine). `say`: a line per round and one at the end (the default run keeps its
    terminal for the headline; run.json's `refinement` says how it ended)."""
    first = run.meta().parts[0]
    pts = pingpong_points(run, first.plan.ranks)
    launches = min(main_launches(run, first.plan.ranks), most_launches or MAX_LAUNCHES)
    outcome = Outcome(status="ok")
    status, rounds, last_s = f"not within {tolerance:.0%} after {MAX_ROUNDS} rounds", 0, 0.0
    for round_no in range(1, MAX_ROUNDS + 2):
        try:
            report = find_switches(pts)
        except ValueError:  # too few pingpong sizes measured (a failed point): nothing to refine
            status = "too few sizes to find switches"
            break
        todo = sizes_to_refine(report, {p.size for p in pts}, tolerance)
        if not todo:
            status = "located"
            break
        if round_no > MAX_ROUNDS:
            break
        if deadline is not None and time.monotonic() + last_s > deadline:
            status = f"not within {tolerance:.0%} when its share of the time budget was spent"
            break
        began = time.monotonic()
        plan = replace(first.plan, benchmarks=("pingpong",), sizes=",".join(map(str, todo)), units=None)
        dropped = f" ({len(report.unconfirmed)} break(s) not shown by every launch left alone)" \
            if report.unconfirmed else ""
        if say:
            err.print(f"refinement round {round_no}: {len(todo)} sizes around "
                      f"{len(report.switches)} suspected switch(es){dropped}, in {launches} launch(es): "
                      f"{', '.join(map(str, todo))}")
        tag = {k: v for k, v in first.tag.items() if k not in ("part", "launch")}
        part = replace(first, plan=plan, tag={**tag, "refinement_round": round_no}, points=None)
        outcome = session.add_part(run, target, part, launches=launches)
        rounds, last_s = round_no, time.monotonic() - began
        if outcome.status != "ok":
            warn(f"refinement round {round_no} ended {outcome.status}: {outcome.error}; the switches are "
                 f"located as far as measured")
            status = f"stopped: round {round_no} {outcome.status}"
            break
        pts = pingpong_points(run, first.plan.ranks)
    meta = run.meta()
    run.update(extra={**meta.extra, REFINEMENT: {"rounds": rounds, "tolerance": tolerance, "status": status,
                                                 "launches_per_round": launches}})
    if rounds and say:
        err.print(f"refinement: {rounds} more round(s) of {launches} launch(es) into run {run.id}; "
                  f"switches {status}")
    return outcome


def measure_run(session: Session, m: Measurement, d: Description) -> tuple[Run, Outcome]:
    """`m` measured as `d` asks, alone (`_refinements`)."""
    between, then = _refinements(session, m, d)
    return session.run(m, between=between, then=then)


def run_steps(session: Session, m: Measurement, d: Description, linger: bool = False) -> Steps:
    """`m` measured as `d` asks, launch by launch (beside other runs: execute/interleave.py;
    `linger`: waiting for the session's second stage, `Session.steps`)."""
    between, then = _refinements(session, m, d)
    return session.steps(m, between=between, then=then, linger=linger)


def _refinements(session: Session, m: Measurement, d: Description
                 ) -> tuple[Callable[[Run], Outcome] | None, Callable[[Run], Outcome] | None]:
    """What `d` refines, as `Session.steps` takes it: the default run refines its switches to
    DEFAULT_TOLERANCE between its first round and the launches that follow, in REFINE_SHARE of the
    budget and rounds of MIN_LAUNCHES launches (enough to confirm a switch in each); --find-switches
    refines after the run to TOLERANCE, in as many launches as the run's, taking the time it needs."""
    between = None
    if d.default_plan and not d.find_switches:
        budget = m.policy.budget_s or AUTO_BUDGET_S

        def refine_first(run: Run) -> Outcome:
            return refine_run(session, m.target, run, DEFAULT_TOLERANCE, time.monotonic() + REFINE_SHARE * budget,
                              most_launches=MIN_LAUNCHES, say=False)
        between = refine_first
    return between, refinement(session, m.target) if d.find_switches else None
