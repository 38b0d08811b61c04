"""Which (point, launch) was disturbed, and by what: a rule on the counters the engine records per
point and rank (`disturbance` in docs/engine.md). Every record is kept; a disturbed row only
carries its cause in the tidy table's `disturbed` column, for the estimate to leave out and the
warnings to name. The thresholds are the policy's (docs/statistics.md)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from mpiscope.records.model import Context, End, Point
from mpiscope.results.policy import POLICY

# The rule's thresholds, read off the policy (values and evidence: results.policy, "the
# disturbance rule", and docs/statistics.md).
SWITCH_SHARE = POLICY.switch_share
MIN_SWITCHES = POLICY.min_switches
STEAL_SHARE = POLICY.steal_share
INVALID_SHARE = POLICY.invalid_share
CLOCK_ERROR_SHARE = POLICY.clock_error_share
CLOCK_CAUSE = "clock-sync error"  # how `cause` names the clock bound, read by `clock_bound_only`


@dataclass  # not frozen: one is made per point and launch, and a frozen one costs 3 x as much
class Counters:
    """What the rule reads of one point of one launch: the worst rank's figures (None: the
    platform could not say)."""
    involuntary_switches: float | None
    events: int
    samples: int
    invalid: int
    steal_s: float | None = None
    elapsed_s: float = 0.0
    run_queue: float | None = None
    cores: int | None = None
    clock_error_share: float | None = None


_NONE: Mapping[str, Any] = {}  # no counters (shared: never changed)


def _worst(values: Sequence[Any] | None) -> float | None:
    if type(values) is list and values and set(map(type, values)) == {int}:  # most counters: the max in C
        return float(max(values))  # float() keeps the order of whole numbers: the same figure
    known = [float(v) for v in values or () if isinstance(v, (int, float)) and math.isfinite(v)]
    return max(known) if known else None


_WORST: dict[int, tuple[Mapping[str, Any], tuple[float | None, float | None, float | None]]] = {}
_WORST_MAX = 1 << 12


def _worst_of(d: Mapping[str, Any]) -> tuple[float | None, float | None, float | None]:
    """The worst rank's switches, steal and run queue of a record's counters, worked out once
    per counters object: records with equal counters share one (records.model), and records
    never change them. The object is kept beside its figures, so its id is not another's."""
    hit = _WORST.get(id(d))
    if hit is not None and hit[0] is d:
        return hit[1]
    if len(_WORST) >= _WORST_MAX:
        _WORST.clear()
    worst = (_worst(d.get("nivcsw")), _worst(d.get("steal_s")), _worst(d.get("run_queue")))
    _WORST[id(d)] = (d, worst)
    return worst


def counters(p: Point, ctx: Context | None) -> Counters:
    """The rule's view of a point record and the context of its launch."""
    switches, steal, queue = _worst_of(p.disturbance or _NONE)
    share = (p.clock_sync or _NONE).get("error_share")
    n = p.time_us.n
    return Counters(switches, n + p.invalid + p.warmup, n, p.invalid, steal, p.elapsed_s, queue,
                    ctx.cores_online if ctx else None, share if isinstance(share, (int, float)) else None)


def _load(c: Counters) -> str:
    if c.run_queue is None:
        return ""
    return f" (run queue {c.run_queue:g}" + (f" on {c.cores} cores)" if c.cores else ")")


def cause(c: Counters) -> str:
    """"" when nothing disturbed the point, else every cause found, most direct first, e.g.
    "involuntary context switches 412 in 1200 events (run queue 3 on 2 cores)"."""
    found = []
    sw = c.involuntary_switches
    if sw is not None and sw >= MIN_SWITCHES and c.events and sw / c.events > SWITCH_SHARE:
        found.append(f"involuntary context switches {sw:.0f} in {c.events} events{_load(c)}")
    if c.steal_s is not None and c.elapsed_s > 0 and c.cores:
        stolen = c.steal_s / (c.elapsed_s * c.cores)
        if stolen > STEAL_SHARE:
            found.append(f"CPU steal {stolen:.0%} of the host's time")
    total = c.samples + c.invalid
    if total and c.invalid / total > INVALID_SHARE:
        found.append(f"invalid samples {c.invalid / total:.0%} (a rank started late)")
    if c.clock_error_share is not None and c.clock_error_share > CLOCK_ERROR_SHARE:
        found.append(f"{CLOCK_CAUSE} {c.clock_error_share:.1f} x one event")
    return "; ".join(found)


def clock_bound_only(cause: str) -> bool:
    """Whether the clock synchronisation's error bound is the whole of `cause`: an event shorter
    than the ranks' clocks agree (a 4 B bcast's 0.14 us under a bound five times that on an
    idle machine), which no load need explain."""
    parts = [c for c in cause.split("; ") if c]
    return bool(parts) and all(c.startswith(CLOCK_CAUSE) for c in parts)


def disturbed(p: Point, ctx: Context | None) -> str:
    """The tidy table's `disturbed` cell of a point record: "" or its cause. Imported points
    carry no counters and are never disturbed by this rule, nor are simulated ones (`host_s`): a
    busy host slows the simulation, never its simulated times."""
    if p.host_s is not None or (ctx is not None and ctx.simulation):
        return ""
    return cause(counters(p, ctx))


@dataclass
class Tally:
    """The events of the points a launch measured, summed as its records are read: the end record
    of a launch is judged on them without walking its points again (a file that repeats one run
    holds many end records of one launch)."""
    events: int = 0
    samples: int = 0
    invalid: int = 0

    def add(self, p: Point) -> None:
        self.events += p.time_us.n + p.invalid + p.warmup
        self.samples += p.time_us.n
        self.invalid += p.invalid

    @classmethod
    def of(cls, points: Iterable[Point]) -> Tally:
        t = cls()
        for p in points:
            t.add(p)
        return t


def launch_counters(end: End, ctx: Context | None, points: Iterable[Point] | Tally) -> Counters:
    """The rule's view of a whole launch: its end record's counters (every rank's, from before
    the context record to the end) over the events of every point the launch measured."""
    d: Mapping[str, Any] = end.disturbance or {}
    t = points if isinstance(points, Tally) else Tally.of(points)
    return Counters(involuntary_switches=_worst(d.get("nivcsw")), events=t.events, samples=t.samples,
                    invalid=t.invalid, steal_s=_worst(d.get("steal_s")), elapsed_s=end.elapsed_s,
                    run_queue=_worst(d.get("run_queue")), cores=ctx.cores_online if ctx else None)


def launch_disturbed(end: End, ctx: Context | None, points: Iterable[Point] | Tally) -> str:
    """What disturbed a launch as a whole ("" when nothing did): the same rule as a point's
    (`cause`) on the end record's counters and the events of the launch's points (or their
    `Tally`); the switches outside the points (start-up, clock sync) count too. Shown beside the
    launch's per-point causes; the estimate leaves out disturbed points, not whole launches. A
    simulated launch keeps its counters but is never disturbed by them (`disturbed`)."""
    if ctx is not None and ctx.simulation:
        return ""
    return cause(launch_counters(end, ctx, points))
