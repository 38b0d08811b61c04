"""Runs lined up as series (docs/history.md): each run read once into its launch-level estimates
by point and configuration, what its context records (the facts a change is explained by), and
its machine-state control; then, per point and platform, the runs in time order.

A series is a point (benchmark, size, ranks, variant, a study's series) on one **platform**: the
configuration identity the drift is learnt under (`results.history.configuration_digest`: hosts,
placement, options that change what is measured, a sweep's factors, the simulated platform) with
the library's vendor and build in place of its version string, and without the engine version and
the environment's tuning variables. Those three are what a nightly job changes and a user wants
to see named beside a change ("MPIR_CVAR_CH4_CMA_ENABLE=0 appeared in the environment"); every
other part of the identity starts a series of its own, and an imported tool's output (its tool in
the options) is a platform of its own."""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import PurePath
from typing import Any, Hashable, Iterable, Mapping, Sequence

import numpy as np

from mpiscope.records.model import Context, Point
from mpiscope.records.run import RunView
from mpiscope.results.control import RunControl, run_control
from mpiscope.results.history import configuration_digest
from mpiscope.results.launches import LaunchPoint, aggregate, log_se
from mpiscope.results.points import disturbed_of, launch_of
from mpiscope.results.policy import POLICY

PointKey = tuple[str, int, int, "str | None"]
SeriesKey = tuple[str, PointKey, tuple[tuple[str, Hashable], ...]]  # (platform, point key, tag configuration)


@dataclass(frozen=True, slots=True)
class Obs:
    """One run's launch-level estimate of one point: the geometric mean of its launch medians, the
    95 % interval over its launches alone (one launch: that launch's own), the log standard error
    read off it, and the cause when most launches were disturbed ("machine busy")."""
    median: float
    low: float
    high: float
    se: float
    launches: int
    busy: str = ""
    configuration: str = ""  # the drift's configuration digest: which facts describe the run
    imported: bool = False


@dataclass
class RunSummary:
    """What a history keeps of a run: no record, only its estimates, facts and control."""
    id: str
    started: str  # ISO 8601, UTC
    points: dict[SeriesKey, Obs] = field(default_factory=dict)
    facts: dict[str, dict[str, str]] = field(default_factory=dict)  # configuration digest -> facts
    platforms: dict[str, str] = field(default_factory=dict)  # platform digest -> its label
    control: RunControl | None = None

    @property
    def date(self) -> str:
        return self.started[:10]


class _Once:
    """A run whose run.json is read once (the identity reads it for every context record)."""

    def __init__(self, run: RunView):
        self.run, self.id = run, run.id

    @cached_property
    def _meta(self) -> Any:
        return self.run.meta()

    def meta(self) -> Any:
        return self._meta

    def records(self) -> Any:
        return self.run.records()


def _first_line(text: str) -> str:
    return " ".join(text.strip().splitlines()[0].split()) if text.strip() else ""


def library_build(meta: Any, ctx: Context) -> str:
    """The library as a series names it: its vendor and where it is installed (run.json's `mpi`),
    else the first word of its version string (an import's label)."""
    mpi = getattr(meta, "mpi", None)
    line = _first_line(ctx.mpi_library_version)
    vendor = getattr(mpi, "vendor", None) or ("Open MPI" if line.startswith("Open MPI") else line.split(" ")[0])
    return f"{vendor} {getattr(mpi, 'prefix', '') or ''}".strip()


def platform_digest(run: RunView, ctx: Context) -> str:
    """The configuration identity without what a series may change along it (module docstring)."""
    return configuration_digest(run, replace(ctx, env={}, engine_version="",
                                             mpi_library_version=library_build(run.meta(), ctx)))


def platform_label(meta: Any, ctx: Context) -> str:
    """'MPICH on vm, 2 ranks' / 'OSU Micro-Benchmarks 7.4 (imported)': a series' platform for people."""
    tool = ctx.options.get("tool") if isinstance(ctx.options, Mapping) else None
    if tool:
        return f"{tool} (imported)"
    build = library_build(meta, ctx)
    vendor = "Open MPI" if build.startswith("Open MPI") else build.split(" ")[0] or "MPI"
    sim = ctx.simulation or {}
    where = f"simulated {PurePath(str(sim.get('platform', ''))).name}" if sim else ",".join(ctx.hosts) or "?"
    return f"{vendor} on {where}, {ctx.world_size} ranks"


def launcher_arguments(meta: Any) -> str:
    """The launcher and its own arguments: run.json's launcher command before the engine."""
    command = list(getattr(meta, "launcher_command", None) or [])
    engine = list(getattr(meta, "engine_command", None) or [])
    if engine and engine[0] in command:
        command = command[:command.index(engine[0])]
    if command:
        command[0] = PurePath(command[0]).name
    return " ".join(command)


def context_facts(meta: Any, ctx: Context) -> dict[str, str]:
    """Everything a run records about what it ran on and with, by name: what a change point's
    runs are compared in (`differences`)."""
    mpi = getattr(meta, "mpi", None)
    facts = {"MPI library": _first_line(ctx.mpi_library_version),
             "MPI library version": str(getattr(mpi, "version", "") or ""),
             "MPI library prefix": str(getattr(mpi, "prefix", "") or ""),
             "MPI standard": ctx.mpi_version, "engine": ctx.engine_version,
             "mpiscope": str(getattr(meta, "mpiscope_version", "") or ""),
             "launcher": launcher_arguments(meta), "hosts": ",".join(ctx.hosts),
             "cores online": "" if ctx.cores_online is None else str(ctx.cores_online),
             "binding": " ".join(",".join(map(str, r.cpus)) or "-" for r in ctx.ranks if r.bound),
             "timer": str(ctx.timer.get("source", "")) if isinstance(ctx.timer, Mapping) else "",
             "thread level": str((ctx.thread_level or {}).get("provided", "") or ""),
             "simulated platform": str((ctx.simulation or {}).get("platform", "") or "")}
    for host in ctx.host_facts:  # a kernel, CPU or governor changed on one host of several is named with it
        on = f" on {host.host}" if len(ctx.host_facts) > 1 else ""
        facts |= {f"kernel{on}": host.kernel or "", f"CPU model{on}": host.cpu_model or "",
                  f"CPU governor{on}": host.governor or ""}
    clocks = [r.cpu_mhz for r in ctx.ranks if r.cpu_mhz]
    if clocks or ctx.cpu_mhz:
        # to 100 MHz: the reading moves by a few MHz from launch to launch
        facts["CPU clock"] = f"{100 * round(float(np.median(clocks or [ctx.cpu_mhz])) / 100):g} MHz"
    for k, v in (getattr(meta, "launcher_env", None) or {}).items():
        facts[f"env {k}"] = str(v)
    for k, v in ctx.env.items():
        facts[f"env {k}"] = str(v)
    return {k: v for k, v in facts.items() if v != ""}


_KEYS: dict[SeriesKey, SeriesKey] = {}  # one key object per series, however many runs hold it


def _shared(key: SeriesKey) -> SeriesKey:
    return _KEYS.setdefault(key, key)


def _obs(lp: LaunchPoint, configuration: str) -> Obs:
    low, high = lp.launch_ci
    se = log_se(lp)
    if not math.isfinite(se) and low and high and low > 0:  # one launch: its own interval
        se = math.log(high / low) / (2 * POLICY.z95)
    imported = any(p.imported is not None for p in lp.points)
    return Obs(lp.median, float(low or math.nan), float(high or math.nan), se, lp.launches, lp.busy,
               sys.intern(configuration), imported)


def summarize(run: RunView, started: str | None = None) -> RunSummary:
    """One run read once: its points' estimates under their platform and configuration, the facts
    of each configuration, and its control (`started`: when it started, else run.json's).
    Nothing of its records is kept."""
    view = _Once(run)
    meta = view.meta()
    out = RunSummary(run.id, started if started is not None else str(getattr(meta, "started", "") or ""))
    groups: dict[tuple[str, str], list[Point]] = {}
    current: tuple[str, str] | None = None
    records = view.records()
    for rec in records:
        if isinstance(rec, Context):
            full, plat = configuration_digest(view, rec), platform_digest(view, rec)
            current = (plat, full)
            if full not in out.facts:
                out.facts[full] = context_facts(meta, rec)
                out.platforms[plat] = platform_label(meta, rec)
        elif isinstance(rec, Point) and current is not None:
            groups.setdefault(current, []).append(rec)
    out.control = run_control(records, run.id)
    # a launch whose machine-state control moved off its run's level measured another state of
    # the machine: left out of the run's estimate as a disturbed launch is (most of them: busy)
    switched = out.control.switched() if out.control is not None else {}

    def cause(p: Point) -> str:
        return switched.get((run.id, launch_of(p)), "") or disturbed_of(p)
    for (plat, full), recs in groups.items():
        for lp in aggregate(recs, cause if switched else disturbed_of):
            out.points[_shared((plat, lp.key, lp.config))] = _obs(lp, full)
    return out


@dataclass(frozen=True)
class Series:
    """One point on one platform: the runs that measured it, oldest first."""
    key: SeriesKey
    runs: tuple[RunSummary, ...]

    @cached_property
    def obs(self) -> list[Obs]:
        return [r.points[self.key] for r in self.runs]

    def facts(self, i: int) -> dict[str, str]:
        return self.runs[i].facts.get(self.obs[i].configuration, {})


def line_up(runs: Sequence[RunSummary]) -> list[Series]:
    """Every series of `runs` (given oldest first), sorted by platform, benchmark, variant, size."""
    members: dict[SeriesKey, list[RunSummary]] = {}
    for run in runs:
        for key in run.points:
            members.setdefault(key, []).append(run)
    order = sorted(members, key=lambda k: (k[0], k[1][0], k[1][3] or "", k[1][1], k[1][2], str(k[2])))
    return [Series(k, tuple(members[k])) for k in order]


def differences(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """What differs between two runs' facts, in words: 'MPIR_CVAR_X=0 appeared in the
    environment', 'MPI library version 5.0.2 -> 5.0.3'."""
    out = []
    for name in sorted(set(before) | set(after), key=lambda n: (n.startswith("env "), n)):
        a, b = before.get(name), after.get(name)
        if a == b:
            continue
        if name.startswith("env "):
            var = name[4:]
            out.append(f"{var}={b} appeared in the environment" if a is None else
                       f"{var}={a} left the environment" if b is None else f"{var}={a} -> {var}={b} in the environment")
        else:
            out.append(f"{name} {b} (was not recorded)" if a is None else
                       f"{name} no longer recorded (was {a})" if b is None else f"{name} {a} -> {b}")
    return out


def steady_facts(before: Sequence[Mapping[str, str]], after: Sequence[Mapping[str, str]]) -> tuple[list[str], int]:
    """The facts that differ between the last run before a change and the first after it and are
    the same on every run of each side (a CPU clock that wanders from run to run is no
    explanation); and how many other facts differ between those two runs but vary within a side."""
    last, first = before[-1], after[0]
    names = [n for n in set(last) | set(first) if last.get(n) != first.get(n)]
    steady = [n for n in names if all(f.get(n) == last.get(n) for f in before)
              and all(f.get(n) == first.get(n) for f in after)]
    return steady, len(names) - len(steady)


def persistent_differences(before: Sequence[Mapping[str, str]], after: Sequence[Mapping[str, str]]
                           ) -> tuple[list[str], int]:
    """What changed with a change and stayed so (`steady_facts`), in words, and how many other
    facts differ but vary within a side."""
    steady, varying = steady_facts(before, after)
    last, first = before[-1], after[0]
    return (differences({k: last[k] for k in steady if k in last}, {k: first[k] for k in steady if k in first}),
            varying)


def time_order(runs: Iterable[RunSummary]) -> list[RunSummary]:
    return sorted(runs, key=lambda r: (r.started, r.id))


def to_json(s: RunSummary) -> dict[str, Any]:
    """A summary as JSON (the history's cache of runs already read)."""
    from mpiscope.records.model import to_json as record_json
    control = [[rid, launch, record_json(c)] for (rid, launch), c in s.control.launches.items()] if s.control else []
    return {"id": s.id, "started": s.started, "facts": s.facts, "platforms": s.platforms, "control": control,
            "points": [[plat, list(key), [list(c) for c in config], list(obs.__getattribute__(f) for f in Obs.__slots__)]
                       for (plat, key, config), obs in s.points.items()]}


def from_json(d: Mapping[str, Any]) -> RunSummary:
    """The summary `to_json` wrote; ValueError (or KeyError, TypeError) when it is not one."""
    from mpiscope.records.model import parse_record
    control = {(str(rid), int(launch)): parse_record(rec) for rid, launch, rec in d["control"]}
    points = {}
    for plat, key, config, values in d["points"]:
        values[:4] = [math.nan if v is None else v for v in values[:4]]  # JSON has no NaN: null
        values[6] = sys.intern(values[6])
        points[_shared((str(plat), (str(key[0]), int(key[1]), int(key[2]), key[3]),
                        tuple((str(k), v) for k, v in config)))] = Obs(*values)
    return RunSummary(str(d["id"]), str(d["started"]), points, {str(k): dict(v) for k, v in d["facts"].items()},
                      dict(d["platforms"]), RunControl(control) if control else None)
