"""What to measure: a plan (benchmarks, ranks, engine options) and the points the engine
makes of it. The engine is the only interpreter of a plan: `mpiscope-engine --plan` checks
the options and lists the points before anything is launched, and `--points` measures a
chosen subset of them. Python only chooses and passes options; it never expands sizes.

A run is one or more parts: a plan with the environment, launcher arguments, placement and
tag (the study's series, the part's number) its records carry."""
from __future__ import annotations

import json
import math
import re
import subprocess
from dataclasses import dataclass, field, replace
from difflib import get_close_matches
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from mpiscope.util.errors import MpiscopeError, UsageError
from mpiscope.mpi.build import standalone
from mpiscope.launchers.placement import Placement
from mpiscope.records.model import AtPoint
from mpiscope.util.typed import ShapeError, load

DEFAULT_BENCHMARKS = ("pingpong", "bw")
DEFAULT_SIZES = "1:4M"
# The default run's pair sizes (no -b, no --sizes): steps of 4x from 8 B (the latency OSU users
# quote) to 2 MiB, then 4 MiB (where bw peaks), 1 B the smallest; half the sizes of 1:4M, so the
# budget buys launches, and the run refines around the switches it finds (execute/refine.py).
DEFAULT_PAIR_SIZES = "1,8:2M:*4,4M"
# The default run's second part, on every local core (nccl-tests' core set plus barrier).
DEFAULT_COLLECTIVES = ("barrier", "bcast", "reduce", "allreduce", "allgather", "alltoall")
# 4 B: one float, the smallest reduction; steps of 16x, so the budget goes to fewer points
DEFAULT_COLLECTIVE_SIZES = "4,64,1K,16K,256K,1M"
STARTUP_S = 5.0  # launcher start-up and engine set-up, a generous guess
POINT_CAP_FLOOR_S = 0.01
# With --reps a point takes as long as its samples take: Python's limit (a last resort above
# the engine's own watchdog, which scales with the previous point) is this per phase.
FIXED_REPS_PHASE_S = 600.0


@dataclass(frozen=True)
class Benchmark:
    """One row of the engine's registry (`--list --json`)."""
    name: str
    family: str
    summary: str = ""
    min_ranks: int = 1
    even_ranks: bool = False
    sizeless: bool = False
    pair_only: bool = False  # only ranks 0 and 1 talk: extra ranks only steal cores
    available: bool = True   # False: this build's MPI lacks a call the row needs
    unavailable: str | None = None  # why, as the engine says (its points are skips)


@dataclass(frozen=True)
class PlanPoint(AtPoint):
    """One entry of the engine's plan: a point it will measure, or skip for a known reason."""
    id: int
    benchmark: str
    size: int
    ranks: int
    family: str = ""
    variant: str | None = None
    sizeless: bool = False
    phases: int = 1
    skip: str | None = None


@dataclass(frozen=True)
class Planned:
    """The engine's plan of a Plan on its ranks: the points in measuring order, and what bounds
    the time of each (its cap per phase, or a fixed number of samples, or the watchdog's limit)."""
    points: tuple[PlanPoint, ...]
    sizes_bytes: tuple[int, ...] = ()
    max_time_s: float = 1.0
    reps: int | None = None
    timeout_s: float | None = None

    def bound_s(self, entries: Sequence[PlanPoint] | None = None) -> float:
        """Sampling time of `entries` (default: all) if every phase runs to its limit."""
        per_phase = self.timeout_s or (FIXED_REPS_PHASE_S if self.reps else self.max_time_s)
        return sum(e.phases for e in (self.points if entries is None else entries)) * per_phase

    def wall_limit_s(self, entries: Sequence[PlanPoint]) -> float:
        """Python's own limit for one launch of `entries`, above the engine's watchdog, for
        hangs the engine cannot see: every phase at its limit three times over, plus start-up."""
        return 3 * self.bound_s(entries) + 60 + 2 * len(entries)


@dataclass(frozen=True)
class Plan:
    """What one engine launch measures: the benchmarks, on how many ranks, at which sizes,
    under what time cap per point, with which other engine options (spelled as the engine
    spells them; the engine checks them all)."""
    benchmarks: tuple[str, ...]
    ranks: int
    sizes: str | None = None         # --sizes, the engine's size expression; None: its default
    units: str | None = None         # --units bytes|words
    max_time_s: float | None = None  # --max-time; None: the engine's default
    options: tuple[str, ...] = ()

    def engine_args(self, points: Sequence[int] | None = None) -> list[str]:
        """The engine's argv after its path: options, the selected points, the benchmarks."""
        args = ["--sizes", self.sizes] if self.sizes is not None else []
        if self.units is not None:
            args += ["--units", self.units]
        if self.max_time_s is not None:
            args += ["--max-time", f"{self.max_time_s:g}"]
        args += self.options
        if points is not None:
            args += ["--points", compress(points)]  # in the order given: the engine measures them so
        return args + list(self.benchmarks)

    def with_options(self, *more: str) -> "Plan":
        return replace(self, options=(*self.options, *more))


def compress(ids: Iterable[int]) -> str:
    """0,1,2,3,7 -> '0-3,7': the engine's --points grammar, short; the order is kept (the
    engine measures the points in the order listed)."""
    out: list[str] = []
    run: list[int] = []
    for i in dict.fromkeys(ids):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [i]
    if run:
        out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ",".join(out)


# -- asking the engine ------------------------------------------------------------------------

def _ask(engine: Path, args: list[str], what: str) -> Any:
    try:
        done = subprocess.run([*standalone(engine), *args], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise MpiscopeError(f"{engine} {what} did not answer ({e}): rebuild the engine") from e
    if done.returncode == 2:
        msg = done.stderr.strip().splitlines()
        raise UsageError((msg[-1] if msg else "the engine refused the options").removeprefix(
            "mpiscope-engine: error: "))
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError as e:
        raise MpiscopeError(f"{engine} {what} did not answer with JSON ({e}): rebuild the engine") from e


@lru_cache(maxsize=None)
def registry(engine: Path) -> tuple[Benchmark, ...]:
    """The engine's benchmark registry (`--list --json`), the one source of benchmark names."""
    rows = _ask(engine, ["--list", "--json"], "--list --json")
    try:
        return tuple(load(Benchmark, r, "the engine's registry") for r in rows)
    except (ShapeError, TypeError) as e:
        raise MpiscopeError(f"{engine} --list --json: {e}: rebuild the engine") from e


def families(engine: Path) -> dict[str, tuple[Benchmark, ...]]:
    """The engine's families, each with its rows, in registry order."""
    out: dict[str, list[Benchmark]] = {}
    for b in registry(engine):
        out.setdefault(b.family, []).append(b)
    return {f: tuple(rows) for f, rows in out.items()}


@dataclass(frozen=True)
class FamilyAvailability:
    """What an engine build can run of one family: its rows, how many its MPI allows, and why not."""
    family: str
    benchmarks: int
    available: int
    reasons: tuple[str, ...]


def availability(engine: Path) -> list[FamilyAvailability]:
    """Per family of the engine, in registry order, what this build of it can run."""
    return [FamilyAvailability(f, len(rows), sum(b.available for b in rows),
                               tuple(sorted({b.unavailable for b in rows if b.unavailable})))
            for f, rows in families(engine).items()]


def expand_benchmarks(engine: Path, names: Iterable[str]) -> tuple[str, ...]:
    """Benchmark and family names as benchmark names, each once, in the order given: a family
    (that is no benchmark's name) stands for its rows in the engine's registry order, as the
    engine itself reads it. An unknown name is a UsageError with the nearest names."""
    rows = {b.name for b in registry(engine)}
    groups = families(engine)
    out: list[str] = []
    for name in names:
        if name in rows:
            out.append(name)
        elif name in groups:
            out += [b.name for b in groups[name]]
        else:
            close = get_close_matches(name, sorted(rows | set(groups)), n=2)
            hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
            raise UsageError(f"unknown benchmark or family '{name}': {hint}`mpiscope bench list` shows all of them")
    return tuple(dict.fromkeys(out))


_RANGE_TYPO = re.compile(r"\s*(\d+[KMG]?B?)\s*-\s*(\d+[KMG]?B?)\s*", re.IGNORECASE)


def range_typo(expr: str) -> str | None:
    """The problem with a size expression that writes a range A-B (the engine reads '-B' as a
    suffix): the range it meant, A:B; None when there is no such term."""
    for term in expr.split(","):
        typo = _RANGE_TYPO.fullmatch(term)
        if typo:
            return f"'{term.strip()}' is no size: a range is written A:B, did you mean '{typo[1]}:{typo[2]}'?"
    return None


@lru_cache(maxsize=256)
def engine_plan(engine: Path, plan: Plan) -> Planned:
    """The points the engine makes of `plan`, in measuring order; the engine's own one-line
    error (a UsageError) when an option, a size or the rank count does not fit."""
    known = {b.name for b in registry(engine)}
    for name in plan.benchmarks:
        if name not in known:
            close = get_close_matches(name, sorted(known), n=2)
            hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
            raise UsageError(f"unknown benchmark '{name}': {hint}`mpiscope bench list` shows all of them")
    typo = range_typo(plan.sizes or "")
    if typo:
        raise UsageError(typo)
    data = _ask(engine, ["--plan", "--ranks", str(plan.ranks), *plan.engine_args()], "--plan")
    try:
        return load(Planned, data, "the engine's plan")
    except (ShapeError, TypeError) as e:
        raise MpiscopeError(f"{engine} --plan: {e}: rebuild the engine") from e


def expand_sizes(engine: Path, expr: str, units: str | None = None) -> list[int]:
    """A size expression as the engine expands it, in bytes (for commands that name sizes but
    measure nothing, such as `mpiscope predict`)."""
    one_rank = next(b.name for b in registry(engine) if b.min_ranks == 1)  # any row: the sizes are the plan's
    return list(engine_plan(engine, Plan((one_rank,), 1, expr, units)).sizes_bytes)


def progression(text: str) -> str:
    """'2,4,...,1024' (the progression its two terms before '...' start, up to the term after it)
    as the engine's size expression: a ratio of 2 or more is geometric (2:1024:*2), any other pair
    steps by the difference (2,3,...,6 is 2:6:+1); the terms before and after stay as they are."""
    head, _, tail = text.partition("...")
    a_b = [t for t in head.split(",") if t.strip()]
    end = [t for t in tail.split(",") if t.strip()]
    try:
        a, b, c = int(a_b[-2]), int(a_b[-1]), int(end[0])
        lead = [str(int(t)) for t in a_b[:-2]]
    except (ValueError, IndexError):
        raise UsageError(f"'{text}': write two terms, '...', and the last, e.g. 2,4,...,1024") from None
    if a < 1 or b <= a or c < b:
        raise UsageError(f"'{text}': the terms must grow, e.g. 2,4,...,1024 or 2,3,...,16")
    step = f"*{b // a}" if b % a == 0 else f"+{b - a}"
    return ",".join([*lead, f"{a}:{c}:{step}", *(t.strip() for t in end)])


def expand_counts(text: str, expand: Callable[[str], list[int]]) -> list[int]:
    """Counts of at least 1 (rank counts) in the engine's size grammar (2:1024, 3,5,7), or the
    progression form 2,4,...,1024, as `expand` (an engine's expand_sizes) reads them; sorted,
    each once."""
    try:
        counts = expand(progression(text) if "..." in text else text)
    except UsageError as e:
        raise UsageError(str(e) if str(e).startswith("'") else f"'{text}': {e}") from None
    if not counts or min(counts) < 1:
        raise UsageError(f"'{text}': rank counts must be at least 1")
    return sorted(set(counts))


def make_plan(engine: Path, benchmarks: Sequence[str], ranks: int, *, sizes: str | None = None,
              units: str | None = None, ci_target: float | None = None, max_time: float | None = None,
              reps: int | None = None, check: bool = False, raw: bool = False,
              engine_options: Sequence[str] = ()) -> tuple[Plan, Planned]:
    """A plan from what a user asks for, checked by the engine; with its points."""
    if not benchmarks:
        raise UsageError("no benchmark given: name one or more with -b, e.g. -b pingpong,bw")
    if ranks < 1:
        raise UsageError(f"-n/--ranks must be at least 1, got {ranks}")
    options: list[str] = []
    for flag, value in (("--ci-target", ci_target), ("--reps", reps)):
        if value is not None:
            options += [flag, repr(value)]
    options += ["--check"] * check + ["--raw"] * raw + list(engine_options)
    plan = Plan(expand_benchmarks(engine, benchmarks), ranks, sizes, units,
                float(max_time) if max_time is not None else None, tuple(options))
    return plan, engine_plan(engine, plan)


def default_ranks(benchmarks: Sequence[str], engine: Path, cores: int) -> int:
    """Two ranks for pair benchmarks (more would only steal cores), else every core, at least 2."""
    rows = {b.name: b for b in registry(engine)}
    names = [n for n in benchmarks if n in rows or n in families(engine)]  # make_plan names the unknown ones
    pairs = all(rows[b].pair_only for b in expand_benchmarks(engine, names))
    return 2 if pairs else max(2, cores)


def idle_ranks_note(engine: Path, plan: Plan) -> str | None:
    """A plan on more than two ranks whose pair benchmarks use ranks 0 and 1 only: said once,
    because the other ranks then wait (and, on few cores, take cores from the pair)."""
    rows = {b.name: b for b in registry(engine)}
    pairs = [b for b in plan.benchmarks if b in rows and rows[b].pair_only]
    if plan.ranks <= 2 or not pairs:
        return None
    idle = "rank 2 waits" if plan.ranks == 3 else f"ranks 2-{plan.ranks - 1} wait"
    return (f"{', '.join(pairs)} {'uses' if len(pairs) == 1 else 'use'} ranks 0 and 1 only; {idle} "
            f"(-n 2 measures the pair alone)")


def order_options(order: str | None) -> list[str]:
    """The engine's --order: block, cyclic, or launch ranks in their new order (0,2,1,3);
    the engine checks it against the ranks."""
    return [] if order is None else ["--order", order.replace(" ", "")]


# -- parts ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Part:
    """One plan of a run with what its launches need: the ranks' environment, extra launcher
    arguments, placement, and the tag its records carry (a study's series; `part` its number)."""
    plan: Plan
    env: dict[str, str] = field(default_factory=dict)
    launcher_args: tuple[str, ...] = ()
    placement: Placement = field(default_factory=Placement)
    tag: dict[str, Any] = field(default_factory=dict)
    points: tuple[int, ...] | None = None  # plan ids in measuring order (a launch's shuffle); None: all, in plan order

    def entries(self, planned: Planned) -> list[PlanPoint]:
        """The plan entries this part measures, in its measuring order."""
        if self.points is None:
            return list(planned.points)
        by_id = {e.id: e for e in planned.points}
        return [by_id[i] for i in self.points if i in by_id]


def spread_budget(plans: Sequence[tuple[Plan, Planned]], seconds: float | None) -> list[Plan]:
    """A time budget (mpiscope's own notion, for one or several plans) as the engine's cap per
    point and phase: each phase the same share; a plan with its own --max-time keeps it."""
    if seconds is None:
        return [p for p, _ in plans]
    if not (seconds > 0 and math.isfinite(seconds)):
        raise UsageError(f"--time-budget must be a positive number of seconds, got {seconds}")
    phases = sum(e.phases for _, planned in plans for e in planned.points)
    cap = max(POINT_CAP_FLOOR_S, seconds / max(1, phases))
    return [p if p.max_time_s is not None else replace(p, max_time_s=cap) for p, _ in plans]
