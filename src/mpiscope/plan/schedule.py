"""Which launches a run makes (docs/statistics.md).

The launch is the unit of evidence: one launch's samples say how precisely it measured, not
where the next launch's median will fall. So every part of a run is measured in several
launches, each in its own shuffled order of sizes and benchmarks. With `--launches auto` (the
default) a first round of MIN_LAUNCHES launches estimates the variance within and between
launches; then, while the run's time budget allows, one more launch at a time measures only the
points whose launch-level interval is still wider than the target, with the engine's per-launch
sampling target chosen from the variance components (Kalibera and Jones: samples within a
launch only pay while the within-launch error is not swamped by the between-launch one; and
launches only pay while the between-launch error is not swamped by the drift from run to run
learnt from earlier runs)."""
from __future__ import annotations

import random
from dataclasses import replace
from typing import Mapping, Sequence

from mpiscope.plan.engine import Part, PlanPoint, engine_plan
from mpiscope.records import Context, Point
from mpiscope.plan.repetition import AUTO_BUDGET_S, MAX_LAUNCHES, LaunchPolicy
from mpiscope.results.launches import (Drift, LaunchPoint, aggregate, drift_dominates, engine_ci_target,
                                       launch_of, launches_needed, simulated_tolerance_us)
from mpiscope.results.points import disturbed_of, tag_configuration
from mpiscope.results.policy import POLICY


def shuffled(entries: Sequence[PlanPoint], rng: random.Random) -> tuple[int, ...]:
    """Plan ids in a random order: sizes and benchmarks shuffled within each group of ranks
    (--npmin), and the groups in a random order (each group is one communicator)."""
    groups: dict[int, list[int]] = {}
    for e in entries:
        groups.setdefault(e.ranks, []).append(e.id)
    order = list(groups.values())
    rng.shuffle(order)
    for ids in order:
        rng.shuffle(ids)
    return tuple(i for ids in order for i in ids)


def launch_parts(parts: Sequence[Part], engine, launches: int, first: int = 0,
                 rng: random.Random | None = None, numbered: bool = False) -> list[Part]:
    """`launches` launches of every part, numbered from `first`, each in its own order; launch by
    launch (all parts of launch k before launch k+1) so that a part's launches are spread in
    time. One launch of parts never launched before is the plan as it is, in plan order (numbered
    launch 0 when `numbered`: a simulation's first round, which a second launch may follow)."""
    if launches == 1 and first == 0:
        return [replace(p, tag={**p.tag, "launch": 0}) for p in parts] if numbered else list(parts)
    rng = rng or random.Random()
    out = []
    for k in range(first, first + launches):
        for part in parts:
            entries = part.entries(engine_plan(engine, part.plan))
            out.append(replace(part, tag={**part.tag, "launch": k}, points=shuffled(entries, rng)))
    return out


def launch_count(records) -> int:
    """The launches a run has made so far (the highest launch number + 1)."""
    return 1 + max((launch_of(r) for r in records if isinstance(r, Point)), default=-1)


def own_launches(records) -> int:
    """The launches of the run's own parts: a refinement round measures its sizes in launches of
    its own, which do not use up the auto launches of every other point."""
    return len({launch_of(r) for r in records if isinstance(r, Point) and "refinement_round" not in r.tag})


def _among(entry: PlanPoint, part: Part, points: set) -> bool:
    """Whether a plan entry of `part` is one of `points`, (point key, configuration) pairs as the
    results layer keys them (a record's configuration may say more than the part's tag: its rank
    order)."""
    cfg = set(tag_configuration(part.tag))
    return any(key == entry.key and cfg <= set(c) for key, c in points)


def _next_parts(first_round: Sequence[Part], engine, short: set, launch: int, ci_target: float | None,
                rng: random.Random) -> list[Part]:
    """One more launch of each part of the first round, measuring only the `short` points."""
    out = []
    for part in first_round:
        entries = [e for e in part.entries(engine_plan(engine, part.plan)) if _among(e, part, short)]
        if not entries:
            continue
        plan = part.plan
        if ci_target is not None and "--reps" not in plan.options:
            plan = plan.with_options("--ci-target", f"{ci_target:.3g}")
        tag = {k: v for k, v in part.tag.items() if k != "part"}
        out.append(replace(part, plan=plan, tag={**tag, "launch": launch}, points=shuffled(entries, rng)))
    return out


def launch_again(first_round: Sequence[Part], engine, points: set, launch: int, rng: random.Random) -> list[Part]:
    """One more launch (number `launch`) of the first round's parts, measuring only `points`
    ((point key, configuration) pairs as the results layer keys them), each part's points in a
    shuffled order: a block of `run --vs`'s second stage."""
    return _next_parts(first_round, engine, points, launch, None, rng)


def launch_overhead_s(records, elapsed_s: float) -> float:
    """What one launch costs beyond its points' sampling (start-up, set-up, warm-up): the run's
    time so far less its points' sampling, over the launches it made (a context record each; a
    part narrowed to nothing made none, and counting it understated the cost)."""
    records = list(records)
    sampled = sum(p.elapsed_s for p in records if isinstance(p, Point))
    launches = sum(isinstance(r, Context) for r in records)
    return max(0.0, elapsed_s - sampled) / max(1, launches)


def _point_s(lp: LaunchPoint) -> float:
    """What one more launch of a point should take: its mean time per launch so far."""
    return sum(p.elapsed_s for p in lp.points) / max(1, len(lp.points))


def affordable(short: Sequence[LaunchPoint], room_s: float, overhead_s: float, parts: int,
               target: float) -> list[LaunchPoint]:
    """The points of `short` that one more launch measures within `room_s`, nearest the target
    first (the fewest launches still needed, then the cheapest): a launch spent on points a
    launch or two from the target puts them on it, while one spent on a point that needs dozens
    more (a busy machine's 1 MiB collectives) moves none. Points that do not fit wait."""
    order = sorted(short, key=lambda lp: (launches_needed(lp, target) - lp.launches, _point_s(lp)))
    chosen, cost = [], overhead_s * parts
    for lp in order:
        if cost + _point_s(lp) <= room_s:
            chosen.append(lp)
            cost += _point_s(lp)
    return chosen


def still_busy(lp: LaunchPoint) -> bool:
    """A point whose launches were mostly disturbed ("machine busy") and whose latest launch was
    disturbed too: the machine is still busy, so its next launch would be disturbed again and
    leave the point without a usable interval, however many are made. Under four busy processes
    on two cores such points took the auto launches' time and came out as busy as before; once a
    launch of the point comes out clean, the machine has calmed and it gets launches again."""
    if not lp.busy or not lp.points:
        return False
    return bool(disturbed_of(max(lp.points, key=launch_of)))


# run.json's extra: the points first_round_todo left out of a launch, [benchmark, size, ranks, variant, launch]
LEFT_OUT = "first_round_left_out"


def left_out_points(extra: Mapping) -> set[tuple]:
    """The point keys a run's first round left out of a launch (`LEFT_OUT`); a damaged entry is none."""
    found = set()
    kept = extra.get(LEFT_OUT) if isinstance(extra, Mapping) else None
    for x in kept if isinstance(kept, list) else []:
        if isinstance(x, list) and len(x) == 5 and all(isinstance(v, (str, int, type(None))) for v in x):
            found.add(tuple(x[:4]))
    return found


def first_round_todo(records, parts: Sequence[Part], engine, policy: LaunchPolicy
                     ) -> list[list[PlanPoint]] | None:
    """What a launch of an auto run's first round beyond its first MIN_LAUNCHES measures: each
    part's points but those the machine still disturbs (`still_busy`; None when none is, or
    before). Under four busy processes on two cores most points of the default run were
    disturbed in every launch, each ran to its time cap, and the run's last first-round launches
    bought them nothing; a point that came out clean in the latest launch is measured on."""
    if not policy.auto or policy.simulated or launch_count(records) < POLICY.min_launches:
        return None
    busy = {(lp.key, lp.config) for lp in aggregate(records) if still_busy(lp)}
    if not busy:
        return None
    return [[e for e in part.entries(engine_plan(engine, part.plan)) if not _among(e, part, busy)] for part in parts]


def samples_differ(lp: LaunchPoint) -> bool:
    """A simulated point whose samples differ, within a launch or between launches (beyond
    `simulated_tolerance_us`): the one kind a simulation launches again."""
    tol = simulated_tolerance_us(lp.median or 0.0)
    medians = lp.launch_medians
    return (max(medians) - min(medians) > tol if len(medians) > 1 else False) or any(
        (p.time_us.stddev or 0.0) > tol for p in lp.points)


def _simulated_next(lps: Sequence[LaunchPoint], records, first_round: Sequence[Part], engine, launched: int,
                    rng: random.Random) -> tuple[list[Part], str]:
    """One more launch of a simulation, for the points whose samples differ, or none and why."""
    differ = [lp for lp in lps if samples_differ(lp)]
    if not differ:
        return [], "simulated: every point's samples agree"
    if own_launches(records) >= POLICY.simulated_launches:
        return [], (f"simulated: {len(differ)} point(s) whose samples differ, measured in "
                    f"{POLICY.simulated_launches} launches")
    parts = _next_parts(first_round, engine, {(lp.key, lp.config) for lp in differ}, launched, None, rng)
    return parts, "" if parts else f"simulated: {len(differ)} point(s) whose samples differ match no part"


def next_launch(records, first_round: Sequence[Part], engine, policy: LaunchPolicy, spent_s: float,
                overhead_s: float, rng: random.Random, drift: Mapping[tuple, Drift] | None = None
                ) -> tuple[list[Part], str]:
    """The parts of one more launch (only the points whose launch-level interval is still wider
    than the target and not dominated by the `drift` from run to run, those nearest the target
    first as far as the budget allows: `affordable`; sampled per launch as the variance
    components advise), or none and why."""
    lps = aggregate(records)
    launched = launch_count(records)  # the next launch's number (refinement rounds took some)
    if policy.simulated:
        return _simulated_next(lps, records, first_round, engine, launched, rng)
    wide = [lp for lp in lps if launches_needed(lp, policy.target) > lp.launches]
    narrowable = [lp for lp in wide if not drift_dominates(lp, (drift or {}).get((lp.key, lp.config)))]
    short = [lp for lp in narrowable if not still_busy(lp)]
    if not short:
        return [], ("every point within the target" if not wide else
                    f"every point within the target but {len(wide)} that more launches cannot narrow: "
                    + ", ".join(f"{n} {why}" for n, why in ((len(wide) - len(narrowable), "by the drift from run to "
                                                              "run"), (len(narrowable), "on a busy machine")) if n))
    if own_launches(records) >= MAX_LAUNCHES:
        return [], f"{len(short)} point(s) still wider than the target after {MAX_LAUNCHES} launches"
    ci = engine_ci_target(lps, overhead_s)
    parts = _next_parts(first_round, engine, {(lp.key, lp.config) for lp in short}, launched, ci, rng)
    budget = policy.budget_s or AUTO_BUDGET_S
    if not parts:
        return [], f"{len(short)} point(s) still wider than the target match no part to launch again"
    # only points of the first round's parts can be launched again (not a refinement's sizes);
    # those that no number of launches up to the cap brings within the target wait until every
    # point that one can is there: launches for them would spend the budget and move none
    planned = [(e.key, set(tag_configuration(part.tag))) for part in parts for e in part.entries(
        engine_plan(engine, part.plan))]
    again = [lp for lp in short if any(key == lp.key and cfg <= set(lp.config) for key, cfg in planned)]
    reachable = [lp for lp in again if launches_needed(lp, policy.target) <= MAX_LAUNCHES]
    chosen = affordable(reachable or again, budget - spent_s, overhead_s, len(parts), policy.target)
    if not chosen:
        return [], f"{len(short)} point(s) still wider than the target when the time budget ({budget:.0f} s) ran out"
    return _next_parts(first_round, engine, {(lp.key, lp.config) for lp in chosen}, launched, ci, rng), ""
