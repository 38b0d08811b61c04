"""The headline that opens the default run's terminal output: the answers to the default
questions, each with its 95 % interval over launches. Latency at 8 B (pingpong), the peak
ping-pong and streaming (bw) bandwidth, the protocol switch, and each collective at its smallest
and largest size. Bandwidths in MB/s (10^6 bytes per second, as the engine and OSU report them).

It reads launch-level estimates through `Estimate` (today `results.launches.LaunchPoint`, made by
`headline_of`'s caller), so the results layer can hand it its own estimates unchanged."""
from __future__ import annotations

from typing import Iterable, Mapping, Protocol, Sequence

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


def _time(e: Estimate) -> str:
    if getattr(e, "evidence", ""):  # an interval that informs nothing is named, never printed
        return f"{_num(e.median)} us ({e.evidence})"
    ci = f" [{_num(e.ci_low)}-{_num(e.ci_high)}]" if e.ci_low is not None and e.ci_high is not None else \
        " (no interval)"
    return f"{_num(e.median)} us{ci}"


def _rate(e: Estimate, bytes_per_op: float) -> str:
    """MB/s at the estimate; the interval from the time's (the slower bound gives the lower rate)."""
    mbps = bytes_per_op / e.median
    if getattr(e, "evidence", ""):
        return f"{_num(mbps)} MB/s ({e.evidence})"
    if e.ci_low and e.ci_high:
        return f"{_num(mbps)} MB/s [{_num(bytes_per_op / e.ci_high)}-{_num(bytes_per_op / e.ci_low)}]"
    return f"{_num(mbps)} MB/s (no interval)"


def _of(estimates: Sequence[Estimate], benchmark: str) -> list[Estimate]:
    return sorted((e for e in estimates if e.benchmark == benchmark and not getattr(e, "variant", None)),
                  key=lambda e: e.size)


def _latency(estimates: Sequence[Estimate]) -> list[str]:
    sized = [e for e in _of(estimates, "pingpong") if e.size > 0]
    if not sized:
        return []
    e = min(sized, key=lambda e: (abs(e.size - LATENCY_SIZE), e.size))
    return [f"latency ({human_size(e.size)}, pingpong, half round trip): {_time(e)}"]


def _peak(estimates: Sequence[Estimate], benchmark: str, what: str, bytes_of) -> list[str]:
    sized = [(e, bytes_of(e)) for e in _of(estimates, benchmark) if e.size > 0 and e.median > 0]
    sized = [(e, b) for e, b in sized if b]
    if not sized:
        return []
    e, b = max(sized, key=lambda eb: eb[1] / eb[0].median)
    return [f"peak {what} bandwidth ({benchmark}): {_rate(e, b)} at {human_size(e.size)}"]


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


def _collectives(estimates: Sequence[Estimate], collectives: Iterable[str]) -> list[str]:
    out = []
    for name in collectives:
        pts = _of(estimates, name)
        if not pts:
            continue
        ends = [pts[0]] if len(pts) == 1 else [pts[0], pts[-1]]
        out.append(f"{name} on {pts[0].ranks} ranks: "
                   + ", ".join(f"{human_size(e.size)} {_time(e)}" for e in ends))
    return out


def headline_of(estimates: Sequence[Estimate], bytes_per_op, switches: Sequence[tuple],
                collectives: Iterable[str], limits: Mapping[str, str] | None = None) -> list[str]:
    """The headline's lines. `bytes_per_op(e)` is the bytes one operation of the estimate's point
    moves (the engine's `bytes_per_op`; None: no bandwidth); `switches` the confirmed protocol
    switches as (size, bracket) or (size, bracket, burst); `limits` the library's protocol limits (NAME -> value), each
    named beside the switch whose bracket holds it."""
    return [*_latency(estimates),
            *_peak(estimates, "pingpong", "ping-pong", bytes_per_op),
            *_peak(estimates, "bw", "streaming", bytes_per_op),
            *(_switch(switches, limits or {}) if _of(estimates, "pingpong") else []),
            *_collectives(estimates, collectives)]


def on_target(estimates: Sequence, target: float) -> str:
    """How many launch-level points reached the launch target (`results.launches.launches_needed`,
    the rule auto launches stop by), the default plan's measure of what its budget bought."""
    from mpiscope.results.launches import launches_needed
    if not estimates:
        return ""
    on = sum(launches_needed(e, target) <= e.launches for e in estimates)
    return (f"evidence: {on} of {len(estimates)} points ({on / len(estimates):.0%}) reached the target "
            f"(95 % interval within +-{target:.0%}), from {max(e.launches for e in estimates)} launches at most")


def print_headline(console: Console, lines: Sequence[str], full_hint: str) -> None:
    """The lines under a title, then where the full table is."""
    if not lines:
        return
    console.print("[bold]What this run found[/] (95 % intervals over launches in brackets):", highlight=False)
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
                 target: float | None = None, estimates: Sequence | None = None) -> list[str]:
    """The headline of a run's records: its launch-level `estimates` as the results layer gives
    them (`results.view.Results.points`: (point, evidence flag) pairs, the drift or prior in the
    interval), else `results.launches.aggregate` of the records; the confirmed switches of
    pingpong's model, with the library's `limits` that stand there; with a launch `target`, last,
    how many points reached it (`on_target`)."""
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
                        limits)
    evidence = on_target(estimates, target) if target is not None else ""
    return lines + [evidence] if lines and evidence else lines
