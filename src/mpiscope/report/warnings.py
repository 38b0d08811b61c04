"""Everything about a run that makes its numbers less trustworthy, as sentences: oversubscription,
points that did not converge, invalid samples, data errors, time-outs, skips, damaged files."""
from __future__ import annotations

from collections import defaultdict

from mpiscope.sizes import human_size
from mpiscope.store import Records, Run


def _sizes(recs: list[dict], most: int = 6) -> str:
    sizes = [human_size(int(r.get("size", 0))) for r in recs]
    return ", ".join(sizes[:most]) + (f" and {len(sizes) - most} more" if len(sizes) > most else "")


def _by_benchmark(recs: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for r in recs:
        ranks = r.get("ranks")
        out[f"{r.get('benchmark', '?')}" + (f" on {ranks} rank{'s' if ranks != 1 else ''}" if ranks else "")].append(r)
    return out


def run_warnings(run: Run, recs: Records | None = None) -> list[str]:
    """One sentence per problem, most serious first."""
    meta = run.meta()
    recs = recs if recs is not None else run.records()
    ctx = recs.context or {}
    points = recs.of_type("point")
    out: list[str] = []
    if meta.get("status") not in ("ok", None):
        out.append(f"the run ended with status '{meta.get('status')}'" +
                   (f": {meta['error']}" if meta.get("error") else ""))
    timeouts = recs.of_type("timeout")
    # execute.py words time-outs too; the records below say the same with the size
    out += [w for w in meta.get("warnings") or [] if not (timeouts and "watchdog" in w)]
    if ctx.get("oversubscribed") and not any("cores" in w for w in meta.get("warnings") or []):
        out.append("some host ran more ranks than it has cores: timings are not trustworthy")
    if timeouts:
        parts = [f"{what} at {_sizes(ts)}" for what, ts in _by_benchmark(timeouts).items()]
        out.append(f"{len(timeouts)} point(s) did not finish within the engine's watchdog limit (a deadlock "
                   f"or a lost message): {'; '.join(parts)}")
    for what, bad in _by_benchmark([p for p in points if (p.get("check") or {}).get("errors")]).items():
        out.append(f"{what}: received data was wrong (--check) at {_sizes(bad)}")
    unconverged = [p for p in points if p.get("converged") is False]
    if unconverged:
        parts = [f"{what} at {_sizes(rs)}" for what, rs in _by_benchmark(unconverged).items()]
        reasons = sorted({str(p.get("stop_reason")) for p in unconverged})
        out.append(f"{len(unconverged)} of {len(points)} points did not converge (stopped by "
                   f"{', '.join(reasons)}): {'; '.join(parts)}")
    invalid = [p for p in points if (p.get("invalid") or 0) > 0]
    if invalid:
        total = sum(int(p["invalid"]) for p in invalid)
        parts = [f"{what} at {_sizes(rs)}" for what, rs in _by_benchmark(invalid).items()]
        out.append(f"{total} samples in {len(invalid)} points were invalid (a rank started late) and were "
                   f"left out: {'; '.join(parts)}")
    reasons: dict[str, list[dict]] = defaultdict(list)
    for s in recs.of_type("skip"):
        reasons[str(s.get("reason", "no reason given"))].append(s)
    for reason, skips in reasons.items():
        parts = [f"{what} at {_sizes(rs)}" for what, rs in _by_benchmark(skips).items()]
        out.append(f"skipped ({reason}): {'; '.join(parts)}")
    out += list(recs.problems)
    if ctx and not recs.of_type("end") and meta.get("status") == "ok":
        out.append("the records have no end line: the engine's output was cut short")
    return out
