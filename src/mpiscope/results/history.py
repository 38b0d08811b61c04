"""Run-to-run drift, learnt from the earlier runs of a configuration (docs/statistics.md, "Runs").

The launches of one run follow each other within seconds and share a state of the machine that
changes more slowly (measured here: the next run's estimate fell inside the launch-level interval
62-74 % of the time instead of ~85 %). Earlier runs of the same configuration in the same runs
directory are the level above launches: at the end of a run, each point's run-to-run variance is
estimated from this run's and those runs' launch-level estimates, kept in run.json (`drift`), and
every reader widens the point's interval by it (`results.launches.with_drift`). The
configuration of a launch lives here, the statistics in `results.launches`, and which stored runs
are earlier runs in `store.history`.
"""
from __future__ import annotations

import hashlib
from dataclasses import replace
import json
from collections.abc import Mapping
from typing import Any, Callable, Hashable, Sequence

from mpiscope.records.model import Context, Point
from mpiscope.records.run import RunView
from mpiscope.results.control import control_shift, run_control
from mpiscope.results.launches import LaunchPoint, aggregate, drift_between_runs
from mpiscope.results.points import Drift, drifts_kept
from mpiscope.results.policy import POLICY
from mpiscope.util.errors import UsageError

# Engine options that change how long or how precisely a point is sampled, not what is measured.
_SAMPLING_OPTIONS = {"sizes", "sizes_bytes", "units", "reps", "min_reps", "stop_identical", "max_reps", "ci_target",
                     "max_time_s", "warmup", "warmup_bytes", "timeout_s", "timeout_extends", "max_memory_bytes", "raw", "check",
                     "benchmarks", "npmin", "points"}
# Environment the launcher sets per launch without changing what is measured.
_INCIDENTAL_ENV = {"OMPI_MCA_initial_wdir"}

PointKey = tuple[str, tuple, tuple[tuple[str, Hashable], ...]]  # (configuration digest, point key, series)


def configuration_digest(run: RunView, ctx: Context, factors: Mapping[str, Any] | None = None) -> str:
    """A short digest of what makes one launch's points comparable with another's: the hosts and
    placement, the library and engine, the tuning variables, the options that change what is
    measured, and what a sweep or study varied (the run's `factors`, read from its run.json unless
    given: a caller digesting every launch of a run reads it once, not once a launch)."""
    described: dict[str, Any] = dict(
        factors=run.meta().factors if factors is None else factors, hosts=sorted(ctx.hosts), library=ctx.mpi_library_version, engine=ctx.engine_version,
        world=ctx.world_size, by_host=ctx.ranks_by_host, order=ctx.order, oversubscribed=ctx.oversubscribed,
        binding=[(r.cpus if r.bound else None, r.bound) for r in ctx.ranks],
        env={k: v for k, v in ctx.env.items() if k not in _INCIDENTAL_ENV},
        options={k: v for k, v in ctx.options.items() if k not in _SAMPLING_OPTIONS})
    if ctx.simulation:  # runs on two simulated platforms are two configurations
        described["platform"] = simulated_platform(ctx)
    text = json.dumps(described, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def configurations(run: RunView) -> frozenset[str]:
    """The configuration digests of a run's launches (`configuration_digest`), one for a run of
    one configuration; none for a run without a context."""
    contexts = [rec for rec in run.records() if isinstance(rec, Context)]
    factors = run.meta().factors if contexts else None
    return frozenset(configuration_digest(run, rec, factors) for rec in contexts)


def same_configuration(base: Sequence[RunView], cand: Sequence[RunView]) -> bool:
    """Whether every run of both sides measured one and the same configuration: the identity a
    drift is learnt within, between whose runs only the machine can move the MPI pingpong."""
    found = {configurations(run) for run in (*base, *cand)}
    return len(found) == 1 and len(next(iter(found))) == 1


def simulated_platform(ctx: Context) -> Any:
    """What a simulated launch's figures depend on beyond the engine: its platform's XML by
    digest and every --cfg smpirun was given (the context's `simulation`), the platform's
    description or path only where an older context lacks the digest; None for a real run."""
    sim = ctx.simulation
    if not sim:
        return None
    if sim.get("digest"):
        return {"digest": sim["digest"], "cfg": list(sim.get("cfg") or ())}
    return {"platform": sim.get("platform")}


def run_platforms(run: RunView) -> str:
    """The simulated platforms of a run's launches (`simulated_platform`), as one comparable
    text; "" for a real run."""
    found = {json.dumps(simulated_platform(rec), sort_keys=True) for rec in run.records() if isinstance(rec, Context)
             and rec.simulation}
    return "; ".join(sorted(found))


def platform_label(run: RunView) -> str:
    """The simulated platform of a run as a reader knows it: its description (or file) and its
    digest; "" for a real run."""
    ctx = next((rec for rec in run.records() if isinstance(rec, Context) and rec.simulation), None)
    if ctx is None:
        return ""
    sim = ctx.simulation or {}
    return f"{sim.get('platform') or 'a platform file'}" + (f" (digest {sim['digest']})" if sim.get("digest") else "")


def one_platform(runs: Sequence[RunView], side: str) -> str:
    """The simulated platform the runs of one side of a comparison share ("" for real runs);
    UsageError when they were simulated on different ones: their launches are no one sample."""
    found = {run.id: run_platforms(run) for run in runs}
    if len(set(found.values())) > 1:
        a, b = list(dict.fromkeys(found.values()))[:2]
        ra, rb = (next(i for i, v in found.items() if v == x) for x in (a, b))
        raise UsageError(f"the {side}'s runs {ra} and {rb} were simulated on different platforms (or --cfg "
                         f"options): compare them as baseline and candidate, not as one side")
    return next(iter(found.values()), "")


def launch_points(run: RunView) -> dict[PointKey, LaunchPoint]:
    """The run's points over its launches, each under its configuration (a launch's points take the
    configuration of the context record before them)."""
    groups: dict[str, list[Point]] = {}
    current = None  # points before any context record: their configuration is unknown, they match nothing
    factors = None  # run.json read at the first context only (a drift learnt reads every earlier run's)
    for rec in run.records():
        if isinstance(rec, Context):
            factors = run.meta().factors if factors is None else factors
            current = configuration_digest(run, rec, factors)
        elif isinstance(rec, Point) and current is not None:
            groups.setdefault(current, []).append(rec)
    return {(s, lp.key, lp.config): lp for s, recs in groups.items() for lp in aggregate(recs)}


def _why_not(mine: LaunchPoint, other: LaunchPoint) -> str:
    """Why an earlier run's point is not learnt from ("" when it is)."""
    if other.launches < 2:
        return ""  # silently: a run of one launch cannot tell its launch effect from the run's
    if other.disturbed:
        return f"disturbed launches ({other.disturbed[0]})"
    ratio = other.median / mine.median
    if max(ratio, 1 / ratio) > POLICY.state_ratio:
        return (f"another state of the machine: {other.median:.3g} us against {mine.median:.3g} us "
                f"(more than {POLICY.state_ratio:g}x apart)")
    return ""


def learn(mine: Mapping[Any, LaunchPoint], others: Sequence[tuple[str, Mapping[Any, LaunchPoint]]],
          shifted: Mapping[str, str] | Callable[[str], str] | None = None) -> dict[Any, Drift]:
    """Each point's drift from this run's points `mine` and earlier runs' (id, points), newest
    first: at most POLICY.history_runs runs a point, leaving out (with the reason) runs with disturbed
    launches, runs in another state of the machine (`_why_not`) and the runs `shifted` names (id ->
    why, a mapping or a function: their machine-state control moved against this run's,
    `shifted_runs`); None-free: points with too few runs are left out. An earlier run's points
    are looked up only while a point still needs runs, so lazy mappings (`Earlier`) are read only
    as far back as the points reach."""
    moved = shifted.get if isinstance(shifted, Mapping) else (shifted or (lambda _: ""))
    out = {}
    for k, lp in mine.items():
        if lp.launches < 2 or lp.disturbed:
            continue
        used: list[LaunchPoint] = []
        ids: list[str] = []
        left: list[tuple[str, str]] = []
        for run_id, points in others:
            if len(used) >= POLICY.history_runs:
                break
            other = points.get(k)
            if other is None or other.launches < 2:
                continue
            why = moved(run_id) or _why_not(lp, other)
            if why:
                left.append((run_id, why))
            else:
                used.append(other)
                ids.append(run_id)
        drift = drift_between_runs([lp, *used])
        if drift is not None:
            out[k] = replace(drift, sources=tuple(ids), left_out=tuple(left))
    return out


class _Points(Mapping):
    """An earlier run's launch-level points (`launch_points`), read on first use and kept."""

    def __init__(self, run: RunView) -> None:
        self.run, self._points = run, None

    def _read(self) -> dict[PointKey, LaunchPoint]:
        if self._points is None:
            self._points = launch_points(self.run)
        return self._points

    def __getitem__(self, key: Any) -> LaunchPoint:
        return self._read()[key]

    def __iter__(self):
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


class Earlier:
    """The earlier runs a run learns its drift from (`store.history.drift_sources`, newest first),
    each read on first use and kept: a run learns its drift again after every auto launch while
    its earlier runs stay as they were, and a long history (nightly runs) is read only as far
    back as the points need (at most POLICY.history_runs used a point)."""

    def __init__(self, runs: Sequence[RunView]) -> None:
        self.runs = list(runs)
        self._points = [(r.id, _Points(r)) for r in self.runs]
        self._controls: dict[str, Any] = {}
        self._configs: dict[str, frozenset[str]] = {}

    def why_shifted(self, mine: Any, mine_configs: frozenset[str], other: RunView) -> str:
        """Why `other` met another state of the machine than the run whose control is `mine` and
        whose configurations are `mine_configs` ("" when the controls agree, or one has none)."""
        if other.id not in self._controls:
            self._controls[other.id] = run_control(other.records(), other.id)
            self._configs[other.id] = configurations(other)
        same = len(mine_configs) == 1 and self._configs[other.id] == mine_configs  # `same_configuration`
        shift = control_shift(mine, self._controls[other.id], same_config=same)
        return shift.text if shift is not None and shift.shifted else ""

    def learn(self, run: RunView) -> dict[str, Any]:
        """`run`'s drift as run.json keeps it (`learn_drift`)."""
        if not self.runs:
            return {"runs": [], "points": []}
        mine, mine_configs = run_control(run.records(), run.id), configurations(run)
        by_id = {r.id: r for r in self.runs}
        shifted: dict[str, str] = {}

        def moved(run_id: str) -> str:
            if run_id not in shifted:
                shifted[run_id] = self.why_shifted(mine, mine_configs, by_id[run_id])
            return shifted[run_id]

        learnt = learn(launch_points(run), self._points, moved)
        used = [r.id for r in self.runs if any(r.id in d.sources for d in learnt.values())]  # newest first
        points = []
        for k, drift in learnt.items():
            _, (benchmark, size, ranks, variant), config = k
            points.append({"benchmark": benchmark, "size": size, "ranks": ranks, "variant": variant,
                           "config": [list(c) for c in config], "var": drift.var, "runs": drift.runs,
                           "levels": [list(level) for level in drift.levels], "from": list(drift.sources),
                           "left_out": [list(x) for x in drift.left_out]})
        other_state = [[i, why] for i in by_id if (why := shifted.get(i))]
        return {"runs": used, "points": points, "other_state": other_state}


def learn_drift(run: RunView, others: Sequence[RunView]) -> dict[str, Any]:
    """Each point's run-to-run drift from this run and `others`, earlier runs of its configuration
    (store.history.drift_sources chooses them, newest first), that measured it in two launches or
    more, as kept in run.json's `drift`: the runs used and, per point, its variance, run count, the
    runs it came from and those left out with the reason. Points with too few such runs are left
    out (the prior drift stands for theirs). `other_state` names, with the reason, the earlier runs
    reached whose machine-state control moved against this run's: this run's figures may differ
    from theirs beyond its intervals, and its output says so (report.warnings). A run that learns
    again after each launch keeps one `Earlier` instead."""
    return Earlier(others).learn(run)


def drift_scope(history: str, base: Sequence[RunView], cand: Sequence[RunView],
                resolve: Callable[[str], Sequence[RunView]]) -> dict[tuple, Drift]:
    """The drift from run to run a comparison of one run a side uses, by (point key,
    configuration): "auto" the one either run keeps (learnt from more runs), "none" none (the
    prior stands in), else learnt now from the runs `history` names (`resolve`) and the baseline."""
    if len(base) != 1 or len(cand) != 1 or history == "none":
        return {}
    if history == "auto":
        drift: dict[tuple, Drift] = {}
        for run in (base[0], cand[0]):
            for key, d in drifts_kept(run.meta().extra).items():
                if key not in drift or d.runs > drift[key].runs:
                    drift[key] = d
        return drift
    def points(run: RunView) -> dict[tuple, LaunchPoint]:
        return {(lp.key, lp.config): lp for lp in aggregate(run.records())}
    # a drift is learnt on the baseline's simulated platform only (a real run's is "")
    runs = [r for r in resolve(history) if r.id not in (base[0].id, cand[0].id)
            and run_platforms(r) == run_platforms(base[0])]
    return learn(points(base[0]), [(r.id, points(r)) for r in runs], shifted_runs(base[0], runs))


def shifted_runs(run: RunView, others: Sequence[RunView]) -> dict[str, str]:
    """The runs of `others` whose machine-state control moved against `run`'s (results.control;
    its MPI pingpong too where both are one configuration), each with the reason: a drift learnt
    across a switch of the machine's state would be that switch's, not the configuration's."""
    earlier, mine, configs = Earlier(others), run_control(run.records(), run.id), configurations(run)
    return {other.id: why for other in others if (why := earlier.why_shifted(mine, configs, other))}
