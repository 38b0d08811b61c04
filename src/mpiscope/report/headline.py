"""The headline that opens the default run's terminal output: the answers to the default
questions, each with its 95 % interval over this run's launches (what more launches narrow).
Latency at 8 B (pingpong), the peak ping-pong and streaming (bw) bandwidth, the protocol switch,
and each collective at its smallest and largest size. Bandwidths in MB/s (10^6 bytes per second,
as the engine and OSU report them). Then, apart, what another run may see (the drift from run to
run, learnt or the stated prior, which no launch of this run narrows), and what the figures rest
on: how many points are within the launch target by the intervals printed, how many are wider
and how many more launches would narrow them, and which rest on fewer launches than asked.

It reads launch-level estimates through `Estimate` (today `results.launches.LaunchPoint`, made by
`headline_of`'s caller), so the results layer can hand it its own estimates unchanged."""
from __future__ import annotations

from collections import defaultdict
from typing import Collection, Iterable, Mapping, Protocol, Sequence

import numpy as np
from rich.console import Console
from rich.markup import escape

from mpiscope.analysis.limits import settings_at
from mpiscope.util.units import human_size

LATENCY_SIZE = 8  # bytes: the latency OSU and IMB users quote


class Estimate(Protocol):
    """What the headline reads of a point's launch-level estimate (µs)."""
    benchmark: str
    size: int
    ranks: int
    median: float
    ci_low: float | None
    ci_high: float | None

    @property
    def launches(self) -> int: ...


def _num(x: float) -> str:
    return f"{x:,.0f}" if 1000 <= abs(x) < 1e6 else f"{x:.3g}"


def _interval(e: Estimate) -> tuple[float | None, float | None]:
    """The interval over this run's launches alone (a LaunchPoint's `launch_ci`), else the one given."""
    return getattr(e, "launch_ci", (e.ci_low, e.ci_high))


def _short(e: Estimate, asked: int) -> bool:
    """Whether the figure rests on fewer launches than the run asked of every point (disturbed
    launches left out, later launches skipped); a refinement round's sizes were asked of its
    own launches only."""
    points = getattr(e, "points", ())
    refined = bool(points) and all("refinement_round" in (p.tag or {}) for p in points)
    return e.launches < asked and not refined


def _few(e: Estimate, asked: int) -> str:
    """Named when the figure rests on fewer launches than the run asked for."""
    return f" (from {e.launches} launch{'es' if e.launches > 1 else ''} of {asked})" if _short(e, asked) else ""


def _time(e: Estimate, asked: int = 0) -> str:
    if getattr(e, "evidence", ""):  # an interval that informs nothing is named, never printed
        return f"{_num(e.median)} us ({e.evidence}){_few(e, asked)}"
    low, high = _interval(e)
    ci = f" [{_num(low)}-{_num(high)}]" if low is not None and high is not None else " (no interval)"
    return f"{_num(e.median)} us{ci}{_few(e, asked)}"


def _rate(e: Estimate, bytes_per_op: float, asked: int = 0) -> str:
    """MB/s at the estimate; the interval from the time's (the slower bound gives the lower rate)."""
    mbps = bytes_per_op / e.median
    if getattr(e, "evidence", ""):
        return f"{_num(mbps)} MB/s ({e.evidence}){_few(e, asked)}"
    low, high = _interval(e)
    if low and high:
        return f"{_num(mbps)} MB/s [{_num(bytes_per_op / high)}-{_num(bytes_per_op / low)}]{_few(e, asked)}"
    return f"{_num(mbps)} MB/s (no interval){_few(e, asked)}"


def _of(estimates: Sequence[Estimate], benchmark: str) -> list[Estimate]:
    return sorted((e for e in estimates if e.benchmark == benchmark and not getattr(e, "variant", None)),
                  key=lambda e: e.size)


def _latency(estimates: Sequence[Estimate], asked: int = 0) -> list[str]:
    sized = [e for e in _of(estimates, "pingpong") if e.size > 0]
    if not sized:
        return []
    e = min(sized, key=lambda e: (abs(e.size - LATENCY_SIZE), e.size))
    return [f"latency ({human_size(e.size)}, pingpong, half round trip): {_time(e, asked)}"]


def _peak(estimates: Sequence[Estimate], benchmark: str, what: str, bytes_of, asked: int = 0) -> list[str]:
    sized = [(e, bytes_of(e)) for e in _of(estimates, benchmark) if e.size > 0 and e.median > 0]
    sized = [(e, b) for e, b in sized if b]
    if not sized:
        return []
    e, b = max(sized, key=lambda eb: eb[1] / eb[0].median)
    return [f"peak {what} bandwidth ({benchmark}): {_rate(e, b, asked)} at {human_size(e.size)}"]


def _switch(switches: Sequence[tuple], limits: Mapping[str, str]) -> list[str]:
    """A line per switch (size, bracket[, burst]); a burst is a rate limiter's, not the library's."""
    if not switches:
        return ["protocol switch (pingpong): none found"]
    out = []
    for size, (lo, hi), *burst in switches:
        where = f"~{human_size(int(round(size)))} (between the measured {human_size(lo)} and {human_size(hi)})"
        if burst and burst[0]:
            out.append(f"burst of a rate limiter (not a protocol switch) (pingpong): {where}: the samples "
                       f"above it split into fast and slow")
            continue
        tied = settings_at((lo, hi), limits)  # where the library says which setting it is
        out.append(f"protocol switch (pingpong): {where}" + (f"; this build's {', '.join(tied)}" if tied else ""))
    return out


def _collectives(estimates: Sequence[Estimate], collectives: Iterable[str], asked: int = 0) -> list[str]:
    out = []
    for name in collectives:
        pts = _of(estimates, name)
        if not pts:
            continue
        ends = [pts[0]] if len(pts) == 1 else [pts[0], pts[-1]]
        out.append(f"{name} on {pts[0].ranks} ranks: "
                   + ", ".join(f"{human_size(e.size)} {_time(e, asked)}" for e in ends))
    return out


def headline_of(estimates: Sequence[Estimate], bytes_per_op, switches: Sequence[tuple],
                collectives: Iterable[str], limits: Mapping[str, str] | None = None, asked: int = 0) -> list[str]:
    """The headline's lines. `bytes_per_op(e)` is the bytes one operation of the estimate's point
    moves (the engine's `bytes_per_op`; None: no bandwidth); `switches` the confirmed protocol
    switches as (size, bracket) or (size, bracket, burst); `limits` the library's protocol limits (NAME -> value), each
    named beside the switch whose bracket holds it; a figure from fewer launches than `asked` says so."""
    return [*_latency(estimates, asked),
            *_peak(estimates, "pingpong", "ping-pong", bytes_per_op, asked),
            *_peak(estimates, "bw", "streaming", bytes_per_op, asked),
            *(_switch(switches, limits or {}) if _of(estimates, "pingpong") else []),
            *_collectives(estimates, collectives, asked)]


def _sizes(points: Sequence) -> str:
    """'bw 512 B-4 MiB (4 sizes), pingpong 8 B' for points grouped by benchmark."""
    by: dict[str, list[int]] = defaultdict(list)
    for e in points:
        by[e.benchmark].append(e.size)
    return ", ".join(f"{b} {human_size(min(s))}" if len(s) == 1 else
                     f"{b} {human_size(min(s))}-{human_size(max(s))} ({len(s)} sizes)"
                     for b, s in ((b, sorted(s)) for b, s in by.items()))


def on_target(estimates: Sequence, target: float, asked: int = 0, left_out: Collection[tuple] = ()) -> str:
    """What the figures rest on, by the intervals printed (each point's interval over this run's
    launches, `LaunchPoint.launch_ci`, which the launch target applies to): the points within the
    target, those wider (and about how many more launches would narrow them: `launches_needed`),
    those without an interval, on a busy machine or shorter than the clocks agree (the clock
    synchronisation's bound the only cause); they add up to every point. Then the points
    measured in fewer launches than `asked` (the run's first round), named, and which of them
    (point keys `left_out`) the first round left out of its later launches as still disturbed."""
    from mpiscope.results.disturbance import CLOCK_ERROR_SHARE
    from mpiscope.results.evidence import clock_bound, wider as wider_than
    from mpiscope.results.launches import launches_needed
    if not estimates:
        return ""
    busy = [e for e in estimates if getattr(e, "busy", "")]
    rest = [e for e in estimates if not getattr(e, "busy", "")]
    within = [e for e in rest if e.launch_half_width_rel <= target]
    wider = wider_than(estimates, target)
    bare = [e for e in rest if not np.isfinite(e.launch_half_width_rel)]
    counts = [f"{len(within)} within the target (this run's 95 % interval within +-{target * 100:g}%)"]
    if wider:
        more = sorted(max(launches_needed(e, target) - e.launches, 1) for e in wider)
        counts.append(f"{len(wider)} wider: about {more[len(more) // 2]} more launches would bring them within it "
                      f"(median; {more[-1]} for the widest)")
    if bare:
        counts.append(f"{len(bare)} without an interval")
    clocked = [e for e in busy if clock_bound(e)]
    if len(busy) > len(clocked):
        counts.append(f"{len(busy) - len(clocked)} on a busy machine (no usable interval; more launches on it "
                      f"would not narrow one)")
    if clocked:
        counts.append(f"{len(clocked)} shorter than the ranks' clocks agree (clock-sync error beyond "
                      f"{CLOCK_ERROR_SHARE:g} x one event in most launches; no usable interval)")
    least, most = min(e.launches for e in estimates), max(e.launches for e in estimates)
    launches = f"{most} launch{'es' if most > 1 else ''}" if least == most else f"{least}-{most} launches"
    line = f"evidence: {len(estimates)} points from {launches}: " + "; ".join(counts)
    few = [e for e in estimates if _short(e, asked)]
    if few:
        line += f". Fewer launches than the {asked} asked: {len(few)} point(s), {_sizes(few)}"
        busy = [e for e in few if getattr(e, "point", e).key in left_out]  # plan.schedule.first_round_todo
        if busy:
            which = "all" if len(busy) == len(few) else f"{len(busy)} of them, {_sizes(busy)},"
            line += f" ({which} left out of the first round's later launches while the machine still disturbed them)"
    return line


def run_to_run(estimates: Sequence) -> str:
    """What another run may see beyond this run's intervals: the intervals `show`, `export` and
    the report give, which add the drift from run to run (learnt from earlier runs, else the
    stated prior); no launch of this run narrows that part."""
    from mpiscope.results.evidence import UNMET, evidence
    drifted = [e for e in estimates if getattr(e, "drift", None) is not None and not getattr(e, "busy", "")
               and np.isfinite(e.half_width_rel)]
    drifts = [e.drift for e in drifted]
    if not drifts:
        return ""
    flags = {id(e): evidence(e) for e in drifted}  # a flagged estimate reads as its point
    shown = [e for e in drifted if not flags[id(e)]]  # the intervals `show` prints
    # results.states: measured in one state of the machine where it has shown another (the run
    # met one, or the point's launches in the other were left out)
    one_state = [e for e in drifted if flags[id(e)].startswith(UNMET)]
    told = sorted({e.unmet_state for e in one_state})
    unmet = (f"no interval for {len(one_state)} point(s) ({_sizes(one_state)}) measured in one state of the "
             f"machine only ({told[0]}" + (f"; {len(told) - 1} more such" if len(told) > 1 else "")
             + "): only a run that meets the other tells how far a point moves there") if one_state else ""
    if not shown:
        return f"another run may read another state: {unmet}" if unmet else ""
    half = float(np.median([e.half_width_rel for e in shown]))
    learnt = sum(not d.prior for d in drifts)
    source = ("the stated prior drift for every point (none is learnt before three runs of this configuration)"
              if not learnt else f"the drift learnt from earlier runs for {learnt} of {len(drifts)} points"
              + (", the stated prior for the others" if learnt < len(drifts) else ""))
    states = [e for e in drifted if getattr(e, "other_state", None) is not None]
    if states:
        two = sum(flags[id(e)].startswith("two machine states") for e in states)
        source += (f", and for {len(states)} by the other state of the machine this run's control saw in some "
                   f"launches" + (f" ({two} of them read two states, no interval)" if two else ""))
    return (f"another run may read within about +-{half:.0%} (median over the points with an interval; the "
            f"intervals `show` and `export` give): this run's interval widened by the drift from run to run, "
            f"{source}, which more launches of this run do not narrow" + (f"; {unmet}" if unmet else ""))


def print_headline(console: Console, lines: Sequence[str], full_hint: str) -> None:
    """The lines under a title, then where the full table is."""
    if not lines:
        return
    console.print("[bold]What this run found[/] (95 % intervals over this run's launches in brackets):",
                  highlight=False)
    for line in lines:
        console.print(f"  {escape(line)}", highlight=False, soft_wrap=True)
    console.print(escape(full_hint), highlight=False, soft_wrap=True)


class _Flagged:
    """A launch-level point with the results layer's evidence flag beside it."""

    def __init__(self, point: object, evidence: str) -> None:
        self._point, self.evidence = point, evidence

    def __getattr__(self, name: str) -> object:
        return getattr(self._point, name)


def run_headline(records: Sequence, collectives: Iterable[str], limits: Mapping[str, str] | None = None,
                 target: float | None = None, estimates: Sequence | None = None, asked: int = 0,
                 left_out: Collection[tuple] = ()) -> list[str]:
    """The headline of a run's records: its launch-level `estimates` as the results layer gives
    them (`results.view.Results.points`: (point, evidence flag) pairs, the drift or prior in the
    interval), else `results.launches.aggregate` of the records; each shown with its interval
    over the run's launches alone, flagged by that interval (`results.evidence.launch_evidence`);
    the confirmed switches of pingpong's model, with the library's `limits` that stand there;
    then what another run may see (`run_to_run`) and, with a launch `target`, what the figures
    rest on (`on_target`; `asked`: the launches the run asked of every point, `left_out` the points
    its first round left out of later launches)."""
    from mpiscope.results.evidence import launch_evidence
    from mpiscope.results.launches import aggregate
    from mpiscope.report.model import model_summary
    points = [e.point for e in estimates] if estimates is not None else aggregate(records)
    estimates = [_Flagged(lp, launch_evidence(lp)) for lp in points]
    try:
        report = model_summary(records).report
    except ValueError:  # several variants, no pingpong: no switch to tell
        report = None
    switches = [(sw.size, sw.bracket, sw.burst) for sw in report.switches] if report is not None else []
    lines = headline_of(estimates, lambda e: e.points[0].bytes_per_op if e.points else None, switches, collectives,
                        limits, asked)
    if not lines:
        return lines
    after = [run_to_run(estimates), on_target(estimates, target, asked, left_out) if target is not None else ""]
    return lines + [line for line in after if line]
