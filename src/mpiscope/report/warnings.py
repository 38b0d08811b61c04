"""Everything about a run that makes its numbers less trustworthy, as sentences: oversubscription,
points slowed past the watchdog's limit, disturbed launches, launches measured in another state of
the machine than the run's others, points that did not converge, invalid
samples, points still wider than the target when the budget ran out, data errors, time-outs, skips,
damaged files. The HTML report lists them; the terminal prints them as one block after the run
(`print_warnings`)."""
from __future__ import annotations

import re
from collections import defaultdict
from typing import Sequence, TypeVar

from rich.console import Console
from rich.markup import escape

from mpiscope.records import Context, Point, RecordFile, Skip, Timeout
from mpiscope.results.control import run_control
from mpiscope.results.disturbance import disturbed
from mpiscope.results.view import Judged, launch_causes, results_of
from mpiscope.store.runs import Run, RunMeta
from mpiscope.util.units import human_size

R = TypeVar("R", Point, Skip, Timeout)


def _sizes(recs: Sequence[Point | Skip | Timeout], most: int = 6) -> str:
    sizes = [human_size(r.size) for r in recs]
    return ", ".join(sizes[:most]) + (f" and {len(sizes) - most} more" if len(sizes) > most else "")


def _by_benchmark(recs: Sequence[R]) -> dict[str, list[R]]:
    out: dict[str, list[R]] = defaultdict(list)
    for r in recs:
        variant = f" {r.variant}" if r.variant else ""
        out[f"{r.benchmark}{variant} on {r.ranks} rank{'s' if r.ranks != 1 else ''}"].append(r)
    return out


def _where(recs: Sequence[Point | Skip | Timeout]) -> str:
    return "; ".join(f"{what} at {_sizes(rs)}" for what, rs in _by_benchmark(recs).items())


# Disturbed points named per launch before "and N more".
DISTURBED_SHOWN = 2


LAUNCH_LINES = 3  # launches told one line each; more are told in one line, naming the worst


def _named(hits: Sequence[tuple[Point, str]]) -> str:
    """The first disturbed points of a launch with their causes, and how many more."""
    named = "; ".join(f"{p.benchmark} {human_size(p.size)}: {cause}" for p, cause in hits[:DISTURBED_SHOWN])
    return named + (f"; and {len(hits) - DISTURBED_SHOWN} more" if len(hits) > DISTURBED_SHOWN else "")


def disturbed_launches(recs: RecordFile, judged: Judged | None = None) -> list[str]:
    """A sentence per launch with disturbed points (results.disturbance): how many, and the
    first causes, beside what disturbed the launch as a whole (its end record's counters). Every
    record is kept; the estimate leaves the disturbed points out. `judged`: the causes the
    results layer found (`Results.judged`), else worked out here."""
    by_launch: dict[int, list[tuple[Point, str]]] = defaultdict(list)
    counts: dict[int, int] = defaultdict(int)
    ctx: Context | None = None
    found = zip(judged.points, judged.causes) if judged is not None else iter(())  # in the records' order
    for rec in recs:
        if isinstance(rec, Context):
            ctx = rec
        elif isinstance(rec, Point):
            point, cause = next(found, (None, ""))
            if rec.imported is not None:
                continue
            launch = rec.tag.get("launch", 0)
            launch = launch if isinstance(launch, int) else 0
            counts[launch] += 1
            if point is not rec:  # records the results were not built from: judged here
                cause = disturbed(rec, ctx)
            if cause:
                by_launch[launch].append((rec, cause))
    whole = {launch: cause for launch, cause in (judged.launches if judged is not None else launch_causes(recs)).items()
             if cause}
    said_of = sorted({*by_launch, *whole})
    if len(said_of) > LAUNCH_LINES:  # one line for them all, naming the worst launch
        worst = max(said_of, key=lambda k: (k in whole, len(by_launch.get(k, ())) / max(counts[k], 1)))
        hits = by_launch.get(worst, [])
        return [f"disturbed points in {len(by_launch)} of {len(counts)} launches "
                f"({sum(map(len, by_launch.values()))} of {sum(counts.values())} (point, launch) pairs; kept and "
                f"left out of the estimate); the worst, launch {worst}"
                + (f" (as a whole: {whole[worst]})" if worst in whole else "")
                + f": {len(hits)} of {counts[worst]} points ({_named(hits)}); every launch's: "
                  "mpiscope export RUN --per-launch (columns disturbed, launch_disturbed)"]
    out = []
    for launch in said_of:
        hits = by_launch.get(launch, [])
        said = f"launch {launch}" + (f" (as a whole: {whole[launch]})" if launch in whole else "")
        if not hits:
            out.append(f"{said}: none of its {counts[launch]} points disturbed")
            continue
        out.append(f"{said}: {len(hits)} of {counts[launch]} points disturbed ({_named(hits)}); they are "
                   f"kept and left out of the estimate")
    return out


def switched_launches(recs: RecordFile, judged: Judged | None = None) -> list[str]:
    """A sentence naming the launches whose machine-state control moved from the run's level
    (results.control): another state of the machine, which the run's interval mixes in.
    `judged`: the run's control as the results layer read it (`Results.judged`), else read here."""
    rc = judged.control if judged is not None else run_control(recs.records)
    switched = sorted(rc.switched().items()) if rc is not None else []
    if not switched:
        return []
    named = "; ".join(f"launch {launch}: {cause}" for (_, launch), cause in switched)
    return [f"{len(switched)} of {len(rc.launches)} launches ran in another state of the machine than the "
            f"run's others ({named}): their points stay in this run's estimate and widen its interval "
            f"(`history` leaves them out of the run's level); runs "
            f"measured in one state, or interleaved (run --vs), compare cleanly"]


def other_state(meta: RunMeta) -> list[str]:
    """The earlier runs of this configuration measured in another state of the machine than this
    one (their control moved against its own: results.history.learn_drift keeps them), said once:
    this run's figures may differ from theirs beyond its intervals, and no drift was learnt from them."""
    kept = meta.extra.get("drift") if isinstance(meta.extra, dict) else None
    found = kept.get("other_state") if isinstance(kept, dict) else None
    runs = [(str(x[0]), str(x[1])) for x in found if isinstance(x, list) and len(x) == 2] \
        if isinstance(found, list) else []
    if not runs:
        return []
    (first, why), more = runs[0], len(runs) - 1
    named = f"run {first}" + (f" and {more} more" if more else "")
    return [f"this run measured the machine in another state than {len(runs)} earlier run(s) of this "
            f"configuration ({named}: {why}): its figures may differ from theirs beyond its intervals, which "
            f"hold within one state; compare runs of one state, or measure configurations interleaved (run --vs)"]


def machine_history(meta: RunMeta) -> list[str]:
    """The machine's history of its control (store.machine) that this run could not read (no
    state it did not meet could be told) or could not add to; either way the file was left as it
    was."""
    kept = meta.extra.get("machine_states") if isinstance(meta.extra, dict) else None
    error = kept.get("error") if isinstance(kept, dict) else None
    if not isinstance(error, str) or not error:
        return []
    if "unmet" in kept:  # read and used, not written
        return [f"the machine's history of its control was read but not written ({error})"]
    return [f"the machine's history of its control was not used ({error}): a state of the machine this run "
            f"did not meet could not be told"]


def slowed_points(points: Sequence[Point]) -> list[str]:
    """Points that ran past the watchdog's limit while they still progressed (docs/reliability.md):
    a busy machine slowed them; they are measured, not hung. Whether their samples are kept in
    the estimate is the disturbance rule's to say, like any point's."""
    slowed = [p for p in points if p.watchdog_extensions]
    if not slowed:
        return []
    worst = max(slowed, key=lambda p: p.elapsed_s / (p.watchdog_limit_s or p.elapsed_s or 1))
    return [f"{len(slowed)} point(s) ran past the engine's watchdog limit while still progressing: slowed by "
            f"a busy machine, not hung (measured; the disturbance fields say by what), the most "
            f"{worst.benchmark} {human_size(worst.size)} ({worst.elapsed_s:.1f} s against a limit of "
            f"{worst.watchdog_limit_s or 0:.1f} s): {_where(slowed)}"]


# why auto launches stopped (plan.schedule.next_launch), after the count the planner had then
_WHY = re.compile(r"\d+ point\(s\) still wider than the target (?:after (?P<cap>\d+) launches|(?P<other>.*))$")


def budget_warning(meta: RunMeta, points: Sequence) -> list[str]:
    """The points still wider than the target when auto launches stopped (run.json's
    launch_policy says why), counted on the final launch-level `points` by
    the evidence line's rule (`results.evidence.wider`): the planner's own count at the stop
    left busy points in, drift-dominated ones out and refinement to come, so it is not repeated."""
    from mpiscope.results.evidence import wider
    from mpiscope.results.policy import POLICY
    policy = meta.extra.get("launch_policy") or {}
    why = _WHY.match(policy.get("stopped", "")) if isinstance(policy.get("stopped"), str) else None
    if why is None:
        return []
    target = float(policy.get("target", POLICY.launch_target))
    n = len(wider(points, target))
    if not n:  # refinement brought them within it: nothing left to warn of
        return []
    if why["cap"]:  # the run's own launches: a point may rest on more (refinement) or fewer
        stop = f"at their cap of {why['cap']} launches of the run's own plan (refinement launches are extra)"
    else:
        stop = why["other"] if why["other"].startswith("when") else f"as the points {why['other']}"
    return [f"{n} point(s) still wider than the target (this run's 95 % interval within +-{target * 100:g}%): "
            f"auto launches stopped {stop}; a larger --time-budget or --launches N would narrow them"]


def run_warnings(run: Run, recs: RecordFile | None = None, launch_points: Sequence | None = None,
                 judged: Judged | None = None) -> list[str]:
    """One sentence per problem, most serious first (`launch_points`: the run's launch-level
    points as the results layer gives them, else worked out here; `judged`: what the results
    layer found of the run, `meta_warnings`)."""
    if launch_points is None:
        launch_points = [e.point for e in results_of([run]).points(run.id).values()]
    return meta_warnings(run.meta(), recs if recs is not None else run.records(), launch_points, judged)


def print_warnings(console: Console, meta: RunMeta, recs: RecordFile, judged: Judged | None = None, *,
                   launch_points: Sequence) -> None:
    """The one warnings block that ends a run's terminal output (nothing when all is well;
    `launch_points`: the launch-level points the headline counted, `meta_warnings`)."""
    for w in meta_warnings(meta, recs, launch_points, judged):
        console.print(f"[yellow]warning:[/] {escape(w)}", highlight=False, soft_wrap=True)


def meta_warnings(meta: RunMeta, recs: RecordFile, launch_points: Sequence, judged: Judged | None = None
                  ) -> list[str]:
    """`run_warnings` of a run's run.json and records (`launch_points`: its launch-level points
    as the results layer gives them; `judged`: what disturbed its points and launches, and its
    control, as the results layer found them; else worked out here)."""
    ctx, points, timeouts = recs.context, recs.points, recs.timeouts
    out: list[str] = []
    if meta.status != "ok":
        out.append(f"the run ended with status '{meta.status}'" + (f": {meta.error}" if meta.error else ""))
    # execute words time-outs too; the records below say the same with the size
    out += [w for w in meta.warnings if not (timeouts and "watchdog" in w)]
    if any(c.oversubscribed for c in recs.contexts) and not any("cores" in w for w in meta.warnings):
        out.append("some host ran more ranks than it has cores: timings are not trustworthy")
    hung = [t for t in timeouts if t.hung]  # the others, stopped while progressing, run.json's warnings tell
    if hung:
        out.append(f"{len(hung)} point(s) did not finish within the engine's watchdog limit (a deadlock "
                   f"or a lost message): {_where(hung)}")
    out += slowed_points(points)
    for what, bad in _by_benchmark([p for p in points if p.check_errors]).items():
        out.append(f"{what}: received data was wrong (--check) at {_sizes(bad)}")
    out += disturbed_launches(recs, judged)
    out += switched_launches(recs, judged)
    out += other_state(meta)
    out += machine_history(meta)
    unconverged = [p for p in points if p.stopped_early]
    if unconverged:
        reasons = sorted({p.stop_reason for p in unconverged})
        launches = {p.tag.get("launch") for p in points if isinstance(p.tag, dict)}
        if len(launches) > 1:  # each launch's own target; the figure is the interval over launches
            out.append(f"{len(unconverged)} of {len(points)} (point, launch) measurements did not converge within "
                       f"their launch (stopped by {', '.join(reasons)}); the figures are the intervals over "
                       f"{len(launches)} launches: {_where(unconverged)}")
        else:
            out.append(f"{len(unconverged)} of {len(points)} points did not converge (stopped by "
                       f"{', '.join(reasons)}): {_where(unconverged)}")
    invalid = [p for p in points if p.invalid > 0]
    if invalid:
        out.append(f"{sum(p.invalid for p in invalid)} samples in {len(invalid)} points were invalid (a rank "
                   f"started late) and were left out: {_where(invalid)}")
    out += budget_warning(meta, launch_points)
    for reason in dict.fromkeys(s.reason for s in recs.skips):
        out.append(f"skipped ({reason}): {_where([s for s in recs.skips if s.reason == reason])}")
    out += list(recs.problems)
    if ctx and not recs.ends and meta.status == "ok":
        out.append("the records have no end line: the engine's output was cut short")
    return out
