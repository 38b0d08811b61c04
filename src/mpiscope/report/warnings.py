"""Everything about a run that makes its numbers less trustworthy, as sentences: oversubscription,
points that did not converge, invalid samples, data errors, time-outs, skips, damaged files."""
from __future__ import annotations

from collections import defaultdict
from typing import Sequence, TypeVar

from mpiscope.records import Point, RecordFile, Skip, Timeout
from mpiscope.store import Run
from mpiscope.units import human_size

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


def run_warnings(run: Run, recs: RecordFile | None = None) -> list[str]:
    """One sentence per problem, most serious first."""
    meta = run.meta()
    recs = recs if recs is not None else run.records()
    ctx, points, timeouts = recs.context, recs.points, recs.timeouts
    out: list[str] = []
    if meta.status != "ok":
        out.append(f"the run ended with status '{meta.status}'" + (f": {meta.error}" if meta.error else ""))
    # execute words time-outs too; the records below say the same with the size
    out += [w for w in meta.warnings if not (timeouts and "watchdog" in w)]
    if any(c.oversubscribed for c in recs.contexts) and not any("cores" in w for w in meta.warnings):
        out.append("some host ran more ranks than it has cores: timings are not trustworthy")
    if timeouts:
        out.append(f"{len(timeouts)} point(s) did not finish within the engine's watchdog limit (a deadlock "
                   f"or a lost message): {_where(timeouts)}")
    for what, bad in _by_benchmark([p for p in points if p.check_errors]).items():
        out.append(f"{what}: received data was wrong (--check) at {_sizes(bad)}")
    unconverged = [p for p in points if p.stopped_early]
    if unconverged:
        reasons = sorted({p.stop_reason for p in unconverged})
        out.append(f"{len(unconverged)} of {len(points)} points did not converge (stopped by "
                   f"{', '.join(reasons)}): {_where(unconverged)}")
    invalid = [p for p in points if p.invalid > 0]
    if invalid:
        out.append(f"{sum(p.invalid for p in invalid)} samples in {len(invalid)} points were invalid (a rank "
                   f"started late) and were left out: {_where(invalid)}")
    for reason in dict.fromkeys(s.reason for s in recs.skips):
        out.append(f"skipped ({reason}): {_where([s for s in recs.skips if s.reason == reason])}")
    out += list(recs.problems)
    if ctx and not recs.ends and meta.status == "ok":
        out.append("the records have no end line: the engine's output was cut short")
    return out
