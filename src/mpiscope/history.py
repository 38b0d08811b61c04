"""Run-to-run drift, learnt from the earlier runs of a configuration (docs/statistics.md, "Runs").

The launches of one run follow each other within seconds and share a state of the machine that
changes more slowly (measured here: the next run's estimate fell inside the launch-level interval
62-74 % of the time instead of ~85 %). Earlier runs of the same configuration in the same runs
directory are the level above launches: at the end of a run, each point's run-to-run variance is
estimated from this run's and those runs' launch-level estimates, kept in run.json (`drift`), and
every reader widens the point's interval by it (`analysis.launches.widened`). The store and
the setting of a launch live here; the statistics in `analysis.launches`.
"""
from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta, timezone
from typing import Any, Hashable

from mpiscope.analysis.launches import LaunchPoint, aggregate, drift_between_runs
from mpiscope.records import Context, Point
from mpiscope.store import Run, list_runs

# The earlier runs a point's drift is learnt from: the latest HISTORY_RUNS of its configuration,
# started at most HISTORY_DAYS before this run (older runs may describe another machine state:
# a kernel, a firmware, a neighbour that changed).
HISTORY_RUNS = 10
HISTORY_DAYS = 7
# Engine options that change how long or how precisely a point is sampled, not what is measured.
_SAMPLING_OPTIONS = {"sizes", "sizes_bytes", "units", "reps", "min_reps", "max_reps", "ci_target", "max_time_s",
                     "warmup", "warmup_bytes", "timeout_s", "max_memory_bytes", "raw", "check", "benchmarks",
                     "npmin", "points"}
# Environment the launcher sets per launch without changing what is measured.
_INCIDENTAL_ENV = {"OMPI_MCA_initial_wdir"}

PointKey = tuple[str, tuple, tuple[tuple[str, Hashable], ...]]  # (setting, point key, configuration)


def setting(run: Run, ctx: Context) -> str:
    """A short digest of what makes one launch's points comparable with another's: the hosts and
    placement, the library and engine, the tuning variables, the options that change what is
    measured, and what a sweep or study varied."""
    meta = run.meta()
    described: dict[str, Any] = dict(
        factors=meta.factors, hosts=sorted(ctx.hosts), library=ctx.mpi_library_version, engine=ctx.engine_version,
        world=ctx.world_size, by_host=ctx.ranks_by_host, order=ctx.order, oversubscribed=ctx.oversubscribed,
        binding=[(r.cpus if r.bound else None, r.bound) for r in ctx.ranks],
        env={k: v for k, v in ctx.env.items() if k not in _INCIDENTAL_ENV},
        options={k: v for k, v in ctx.options.items() if k not in _SAMPLING_OPTIONS})
    text = json.dumps(described, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def launch_points(run: Run) -> dict[PointKey, LaunchPoint]:
    """The run's points over its launches, each under its setting (a launch's points take the
    setting of the context record before them)."""
    groups: dict[str, list[Point]] = {}
    current = None  # points before any context record: their setting is unknown, they match nothing
    for rec in run.records():
        if isinstance(rec, Context):
            current = setting(run, rec)
        elif isinstance(rec, Point) and current is not None:
            groups.setdefault(current, []).append(rec)
    return {(s, lp.key, lp.config): lp for s, recs in groups.items() for lp in aggregate(recs)}


def _started(run: Run) -> datetime | None:
    try:
        return datetime.strptime(run.meta().started, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def _same_run_setting(a: Any, b: Any) -> bool:
    """What run.json says without reading records: host, library and factors (a cheap first sieve;
    each launch's setting decides)."""
    def lib(m: Any) -> tuple:
        return tuple(getattr(m.mpi, k, None) for k in ("vendor", "version", "prefix"))
    return a.host == b.host and lib(a) == lib(b) and a.factors == b.factors


def earlier_runs(run: Run) -> list[Run]:
    """The finished runs beside `run` started before it and at most HISTORY_DAYS earlier, newest
    first."""
    start = _started(run)
    if start is None:
        return []
    mine = run.meta()
    out = []
    for other in reversed(list_runs(run.path.parent)):
        if other.id == run.id:
            continue
        when = _started(other)
        meta = other.meta()
        if when is None or when >= start or meta.status != "ok" or not _same_run_setting(meta, mine):
            continue
        if start - when > timedelta(days=HISTORY_DAYS):
            continue
        out.append(other)
    return sorted(out, key=_started, reverse=True)


def learn_drift(run: Run) -> dict[str, Any]:
    """Each point's run-to-run drift from this run and the latest HISTORY_RUNS earlier runs of its
    setting that measured it in two launches or more, as kept in run.json's `drift`: the runs
    used and, per point, its variance and run count. Points with too few such runs are left out
    (their interval covers this run's launches only)."""
    mine = {k: lp for k, lp in launch_points(run).items() if lp.launches >= 2}
    seen: dict[PointKey, list[LaunchPoint]] = {k: [] for k in mine}
    used: list[str] = []
    for other in earlier_runs(run):
        if all(len(v) >= HISTORY_RUNS for v in seen.values()):
            break
        found = False
        for k, lp in launch_points(other).items():
            if k in seen and lp.launches >= 2 and len(seen[k]) < HISTORY_RUNS:
                seen[k].append(lp)
                found = True
        if found:
            used.append(other.id)
    points = []
    for k, lp in mine.items():
        drift = drift_between_runs([lp, *seen[k]])
        if drift is not None:
            _, (benchmark, size, ranks, variant), config = k
            points.append({"benchmark": benchmark, "size": size, "ranks": ranks, "variant": variant,
                           "config": [list(c) for c in config], "var": drift.var, "runs": drift.runs,
                           "levels": [list(level) for level in drift.levels]})
    return {"runs": used, "points": points}
